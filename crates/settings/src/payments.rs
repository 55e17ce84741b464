//! `[payments.stripe]` read and checked, with its secrets from the environment
//! (docs/operations.md, "Payments"): what the gateway needs to start a top-up and to believe a
//! webhook, in the form it uses them. Made once at start; a gateway without the table has none.

use crate::config::{ConfigError, StripeConfig};
use rust_decimal::Decimal;
use std::time::Duration;
use tollgate_billing::Amount;
use tollgate_stripe::{Currency, WebhookSecret};

/// Stripe, ready to use.
#[derive(Clone)]
pub struct StripeSettings {
    /// Its API, without a trailing slash.
    pub base_url: String,
    /// The secret key, sent as `Authorization: Bearer`.
    secret_key: String,
    /// The endpoint's signing secrets (more than one while rolling).
    pub webhook_secrets: Vec<WebhookSecret>,
    /// What customers pay in.
    pub currency: Currency,
    /// Balance units one unit of the currency buys.
    pub rate: Decimal,
    /// The least and most of one top-up, in minor units.
    pub min_minor: i64,
    /// …
    pub max_minor: i64,
    /// The most automatic top-ups may charge an account in a day, in minor units (0: none).
    pub max_automatic_minor: i64,
    /// The line on Stripe's page.
    pub product_name: String,
    /// Signature tolerance, seconds.
    pub tolerance_seconds: i64,
    /// Each call's limit.
    pub timeout: Duration,
    /// How often automatic top-ups are looked for.
    pub automatic_every: Duration,
}

impl std::fmt::Debug for StripeSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeSettings")
            .field("base_url", &self.base_url)
            .field("currency", &self.currency)
            .field("rate", &self.rate)
            .finish_non_exhaustive()
    }
}

fn invalid(what: impl std::fmt::Display) -> ConfigError {
    ConfigError::Invalid(format!("[payments.stripe] {what}"))
}

impl StripeSettings {
    /// Checks `config` and reads its secrets with `env`; `base_url` must pass the one address
    /// rule with `trusted_hosts`.
    ///
    /// `base_url = "sim"` is the simulator this process started (`sim_base_url`), as for
    /// channels: the zero-setup way to try top-ups. It passes the address rule only with its
    /// loopback address listed, as any provider on the operator's network.
    pub fn from_config(
        config: &StripeConfig,
        env: &dyn Fn(&str) -> Option<String>,
        trusted_hosts: &[String],
        sim_base_url: Option<&str>,
    ) -> Result<StripeSettings, ConfigError> {
        let base_url = match (config.base_url.as_str(), sim_base_url) {
            ("sim", Some(sim)) => sim.to_owned(),
            ("sim", None) => {
                return Err(invalid(
                    "base_url \"sim\": the simulator is not running ([simulator] enabled)",
                ));
            }
            (url, _) => url.trim_end_matches('/').to_owned(),
        };
        crate::outbound::check_url(&base_url, trusted_hosts).map_err(|e| {
            invalid(format!(
                "base_url {base_url:?}: {e} (list a provider on the operator's network in [outbound] trusted_hosts)"
            ))
        })?;
        let secret_key = env(&config.secret_key_env)
            .map(|k| k.trim().to_owned())
            .filter(|k| !k.is_empty())
            .ok_or_else(|| {
                invalid(format!(
                    "secret_key_env: the variable {} is not set",
                    config.secret_key_env
                ))
            })?;
        let mut webhook_secrets = Vec::new();
        for name in config.webhook_secret_env.names() {
            let value = env(name).ok_or_else(|| {
                invalid(format!(
                    "webhook_secret_env: the variable {name} is not set"
                ))
            })?;
            webhook_secrets.push(
                value
                    .parse::<WebhookSecret>()
                    .map_err(|e| invalid(format!("webhook_secret_env {name}: {e}")))?,
            );
        }
        if webhook_secrets.is_empty() {
            return Err(invalid("webhook_secret_env names no variable"));
        }
        let currency: Currency = config
            .currency
            .parse()
            .map_err(|e| invalid(format!("currency: {e}")))?;
        if config.units_per_currency_unit <= Decimal::ZERO {
            return Err(invalid("units_per_currency_unit must be above zero"));
        }
        let minor = |name: &str, amount: Decimal| {
            currency
                .to_minor(amount)
                .map_err(|e| invalid(format!("{name}: {e}")))
        };
        let min_minor = minor("min_amount", config.min_amount)?;
        let max_minor = minor("max_amount", config.max_amount)?;
        if min_minor > max_minor {
            return Err(invalid("min_amount is above max_amount"));
        }
        let max_automatic_minor = if config.max_automatic_per_day.is_zero() {
            0
        } else {
            minor("max_automatic_per_day", config.max_automatic_per_day)?
        };
        let settings = StripeSettings {
            base_url,
            secret_key,
            webhook_secrets,
            rate: config.units_per_currency_unit,
            min_minor,
            max_minor,
            max_automatic_minor,
            product_name: config.product_name.clone(),
            tolerance_seconds: i64::try_from(config.signature_tolerance_seconds.max(1))
                .unwrap_or(i64::MAX),
            timeout: Duration::from_secs(config.timeout_seconds.max(1)),
            automatic_every: Duration::from_secs(config.automatic_check_seconds.max(1)),
            currency,
        };
        // The largest top-up must buy a balance that can be stored.
        settings
            .units(max_minor)
            .map_err(|e| invalid(format!("max_amount × units_per_currency_unit: {e}")))?;
        Ok(settings)
    }

    /// The secret key, for the `Authorization` header only.
    pub fn secret_key(&self) -> &str {
        &self.secret_key
    }

    /// The balance `minor` units of the currency buy at the configured rate, rounded down to
    /// the nano-unit.
    pub fn units(&self, minor: i64) -> Result<Amount, String> {
        let nanos = self
            .currency
            .from_minor(minor)
            .checked_mul(self.rate)
            .and_then(|d| d.checked_mul(Decimal::from(1_000_000_000_i64)))
            .map(|d| d.floor())
            .ok_or_else(|| "too large".to_owned())?;
        i64::try_from(nanos)
            .map(Amount::from_nanos)
            .map_err(|_| "too large".to_owned())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config::KeyEnv;

    fn env(name: &str) -> Option<String> {
        match name {
            "SK" => Some("sk_test_123".into()),
            "WH" => Some("whsec_0123456789abcdefghij".into()),
            "WH2" => Some("whsec_abcdefghij0123456789".into()),
            "BAD" => Some("not-a-secret".into()),
            _ => None,
        }
    }

    fn config() -> StripeConfig {
        StripeConfig {
            secret_key_env: "SK".into(),
            webhook_secret_env: KeyEnv::Pool(vec!["WH".into(), "WH2".into()]),
            units_per_currency_unit: "2.5".parse().unwrap(),
            ..StripeConfig::default()
        }
    }

    #[test]
    fn read_and_checked() {
        let s = StripeSettings::from_config(&config(), &env, &[], None).unwrap();
        assert_eq!(s.webhook_secrets.len(), 2);
        assert_eq!(s.min_minor, 500);
        assert_eq!(s.max_minor, 50_000);
        assert_eq!(s.units(1999).unwrap(), "49.975".parse().unwrap());
        assert!(!format!("{s:?}").contains("sk_test"));
        let refused = |c: StripeConfig| StripeSettings::from_config(&c, &env, &[], None).is_err();
        assert!(refused(StripeConfig {
            base_url: "http://127.0.0.1:9".into(),
            ..config()
        }));
        assert!(
            StripeSettings::from_config(
                &StripeConfig {
                    base_url: "http://127.0.0.1:9".into(),
                    ..config()
                },
                &env,
                &["127.0.0.1".into()],
                None
            )
            .is_ok()
        );
        assert!(refused(StripeConfig {
            secret_key_env: "MISSING".into(),
            ..config()
        }));
        assert!(refused(StripeConfig {
            webhook_secret_env: KeyEnv::One("BAD".into()),
            ..config()
        }));
        assert!(refused(StripeConfig {
            min_amount: "600".parse().unwrap(),
            ..config()
        }));
        assert!(refused(StripeConfig {
            min_amount: "0.001".parse().unwrap(),
            ..config()
        }));
        assert!(refused(StripeConfig {
            currency: "kwd".into(),
            ..config()
        }));
        assert!(refused(StripeConfig {
            units_per_currency_unit: Decimal::ZERO,
            ..config()
        }));
    }
}
