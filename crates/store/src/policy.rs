//! Access policies (`docs/decisions.md`, "Access policies"): what an account, and each of its
//! keys, may call and until when. A request must pass its account's policy and its key's — a
//! key's policy can only narrow its account's, never widen it.
//!
//! A policy is stored as a JSON document on the account or key row, read with the key on
//! authentication (from memory, like the key itself), so checking it costs no database read.

use crate::{Store, StoreError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::IpAddr;
use tollgate_billing::{Amount, Decimal};

/// What one account or key may do. An absent field does not restrict.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessPolicy {
    /// Public model names (after alias resolution) or globs (`*` any run of characters, `?` one
    /// character) the holder may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<String>>,
    /// Endpoint names (`embeddings`, `speech`, `t2a`, …: the gateway's route labels) the holder
    /// may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<Vec<String>>,
    /// Unix milliseconds after which the holder's requests are refused as an expired key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// Client networks (IPv4 and IPv6 CIDRs, or single addresses) requests may come from;
    /// parsed when the key is read, not per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub networks: Option<Vec<Cidr>>,
    /// The price group the holder pays in (a key's overrides its account's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Billable requests per minute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<u64>,
    /// Units per minute of a meter (`tokens`, `characters`, `audio_seconds`, `video_tokens`,
    /// `video_seconds`, `text_tokens`, `token_classes`), by meter name; and `images`, the
    /// images an image call asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_minute: Option<BTreeMap<String, u64>>,
    /// Billable requests in flight at once (a stream counts until its end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    /// Streamed answers open at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<u32>,
    /// Money per UTC day, on top of the balance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_budget: Option<Amount>,
    /// Money per UTC calendar month, on top of the balance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monthly_budget: Option<Amount>,
    /// Video tasks in flight at once (counted in the database: exact across replicas).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks_in_flight: Option<u32>,
}

/// A price group (tier): a name and the multiplier of every price its keys pay, with
/// multipliers of its own for single models (`docs/decisions.md`, "Price groups").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriceGroup {
    /// Its name.
    pub name: String,
    /// What every list price is multiplied by (1: list prices).
    pub multiplier: Decimal,
    /// Public models priced with a multiplier of their own instead.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<String, Decimal>,
}

impl PriceGroup {
    /// The multiplier of `model`'s prices (a public name, aliases resolved).
    pub fn multiplier_for(&self, model: &str) -> Decimal {
        self.models.get(model).copied().unwrap_or(self.multiplier)
    }

    /// The group as priced for `model`: its name and the one multiplier that applies (what a
    /// ledger row records, and a task snapshots).
    pub fn for_model(&self, model: &str) -> PriceGroup {
        PriceGroup {
            name: self.name.clone(),
            multiplier: self.multiplier_for(model),
            models: BTreeMap::new(),
        }
    }
}

impl AccessPolicy {
    /// Whether nothing is restricted.
    pub fn is_empty(&self) -> bool {
        self == &AccessPolicy::default()
    }

    /// Whether `model` (a public name, aliases already resolved) is allowed.
    pub fn admits_model(&self, model: &str) -> bool {
        self.models
            .as_ref()
            .is_none_or(|globs| globs.iter().any(|g| glob_matches(g, model)))
    }

    /// Whether the endpoint named `endpoint` is allowed.
    pub fn admits_endpoint(&self, endpoint: &str) -> bool {
        self.endpoints
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == endpoint))
    }

    /// Whether a request from `client` is allowed; an unknown client address passes only a
    /// policy that names no networks.
    pub fn admits_client(&self, client: Option<IpAddr>) -> bool {
        let Some(networks) = &self.networks else {
            return true;
        };
        let Some(client) = client else {
            return false;
        };
        networks.iter().any(|cidr| cidr.contains(client))
    }

    /// Whether the policy has expired at `now` (Unix milliseconds).
    pub fn expired(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|at| now >= at)
    }

    /// Sets every field the change sets and leaves the others (`tollgate policy clear` starts
    /// over).
    pub fn apply(&mut self, change: &PolicyChange) {
        if let Some(models) = &change.models {
            self.models = Some(models.clone());
        }
        if let Some(endpoints) = &change.endpoints {
            self.endpoints = Some(endpoints.clone());
        }
        if let Some(expires_at) = change.expires_at {
            self.expires_at = Some(expires_at);
        }
        if let Some(networks) = &change.networks {
            self.networks = Some(networks.clone());
        }
        if let Some(group) = &change.group {
            self.group = Some(group.clone());
        }
        if let Some(rpm) = change.rpm {
            self.rpm = Some(rpm);
        }
        if let Some(per_minute) = &change.per_minute {
            self.per_minute
                .get_or_insert_with(BTreeMap::new)
                .extend(per_minute.iter().map(|(k, v)| (k.clone(), *v)));
        }
        if let Some(concurrency) = change.concurrency {
            self.concurrency = Some(concurrency);
        }
        if let Some(streams) = change.streams {
            self.streams = Some(streams);
        }
        if let Some(budget) = change.daily_budget {
            self.daily_budget = Some(budget);
        }
        if let Some(budget) = change.monthly_budget {
            self.monthly_budget = Some(budget);
        }
        if let Some(tasks) = change.tasks_in_flight {
            self.tasks_in_flight = Some(tasks);
        }
    }

    /// Whether any rate limit, concurrency limit or spend cap is set (the holder is then in
    /// `Principal::limited_by`).
    pub fn limits_rate(&self) -> bool {
        self.rpm.is_some()
            || self.per_minute.as_ref().is_some_and(|m| !m.is_empty())
            || self.concurrency.is_some()
            || self.streams.is_some()
            || self.daily_budget.is_some()
            || self.monthly_budget.is_some()
            || self.tasks_in_flight.is_some()
    }

    pub(crate) fn from_column(column: Option<&str>) -> Result<AccessPolicy, StoreError> {
        match column {
            None | Some("") => Ok(AccessPolicy::default()),
            Some(json) => serde_json::from_str(json)
                .map_err(|e| StoreError::Corrupt(format!("a stored policy: {e}"))),
        }
    }

    pub(crate) fn to_column(&self) -> Result<Option<String>, StoreError> {
        if self.is_empty() {
            return Ok(None);
        }
        serde_json::to_string(self)
            .map(Some)
            .map_err(|e| StoreError::Corrupt(format!("a policy: {e}")))
    }
}

/// The fields `tollgate policy set` changes; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyChange {
    /// New allowed models.
    pub models: Option<Vec<String>>,
    /// New allowed endpoints.
    pub endpoints: Option<Vec<String>>,
    /// New expiry, Unix milliseconds.
    pub expires_at: Option<i64>,
    /// New allowed client networks.
    pub networks: Option<Vec<Cidr>>,
    /// New price group.
    pub group: Option<String>,
    /// New requests per minute.
    pub rpm: Option<u64>,
    /// Per-minute quotas to set, by meter (the others stay).
    pub per_minute: Option<BTreeMap<String, u64>>,
    /// New concurrency limit.
    pub concurrency: Option<u32>,
    /// New limit of open streams.
    pub streams: Option<u32>,
    /// New daily budget.
    pub daily_budget: Option<Amount>,
    /// New monthly budget.
    pub monthly_budget: Option<Amount>,
    /// New limit of video tasks in flight.
    pub tasks_in_flight: Option<u32>,
}

/// An IP network: an address and how many leading bits of it count (`10.0.0.0/8`,
/// `2001:db8::/32`); a bare address is the network of that address alone. Stored and shown as
/// it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// Whether `ip` is in the network. An IPv4 address written as IPv6 (`::ffff:10.0.0.1`, as
    /// a dual-stack listener reports it) is compared as IPv4.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => leading_bits_equal(
                u128::from(net.to_bits()) << 96,
                u128::from(ip.to_bits()) << 96,
                self.prefix,
            ),
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                leading_bits_equal(net.to_bits(), ip.to_bits(), self.prefix)
            }
            _ => false,
        }
    }
}

/// Whether the first `bits` bits of `a` and `b` agree (IPv4 addresses are shifted to the top).
fn leading_bits_equal(a: u128, b: u128, bits: u8) -> bool {
    match bits {
        0 => true,
        128.. => a == b,
        _ => (a ^ b) >> (128 - u32::from(bits)) == 0,
    }
}

impl std::str::FromStr for Cidr {
    type Err = String;

    fn from_str(s: &str) -> Result<Cidr, String> {
        let (addr, prefix) = match s.split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .trim()
            .parse()
            .map_err(|_| format!("{s:?} is not an IP address or CIDR network"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("{s:?}: the prefix length must be 0 to {max}"))?,
        };
        Ok(Cidr { addr, prefix })
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let full = if self.addr.is_ipv4() { 32 } else { 128 };
        if self.prefix == full {
            write!(f, "{}", self.addr)
        } else {
            write!(f, "{}/{}", self.addr, self.prefix)
        }
    }
}

impl TryFrom<String> for Cidr {
    type Error = String;

    fn try_from(text: String) -> Result<Cidr, String> {
        text.parse()
    }
}

impl From<Cidr> for String {
    fn from(cidr: Cidr) -> String {
        cidr.to_string()
    }
}

/// Whose policy: an account's, or one key's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyHolder {
    /// `acct_…`
    Account(String),
    /// `key_…`
    Key(String),
}

/// `*` matches any run of characters (also none), `?` exactly one; everything else itself.
pub fn glob_matches(glob: &str, text: &str) -> bool {
    let (g, t): (Vec<char>, Vec<char>) = (glob.chars().collect(), text.chars().collect());
    // The classic two-pointer walk with one backtrack point: linear in practice, never
    // exponential, whatever the number of stars.
    let (mut gi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match g.get(gi) {
            Some('*') => {
                star = Some((gi, ti));
                gi += 1;
            }
            Some(&c) if c == '?' || c == t[ti] => {
                gi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sg, st)) => {
                    gi = sg + 1;
                    ti = st + 1;
                    star = Some((sg, st + 1));
                }
                None => return false,
            },
        }
    }
    g[gi..].iter().all(|c| *c == '*')
}

impl Store {
    /// Finds whose policy `id_or_name` names: a key by its id (`key_…`), else an account by id
    /// or name.
    pub async fn policy_holder(&self, id_or_name: &str) -> Result<PolicyHolder, StoreError> {
        let key: Option<(String,)> = sqlx::query_as("SELECT id FROM api_keys WHERE id = $1")
            .bind(id_or_name)
            .fetch_optional(self.pool())
            .await?;
        if let Some((id,)) = key {
            return Ok(PolicyHolder::Key(id));
        }
        let account: Option<(String,)> =
            sqlx::query_as("SELECT id FROM accounts WHERE id = $1 OR name = $1 LIMIT 1")
                .bind(id_or_name)
                .fetch_optional(self.pool())
                .await?;
        account
            .map(|(id,)| PolicyHolder::Account(id))
            .ok_or_else(|| StoreError::NotFound(format!("account or key {id_or_name:?}")))
    }

    /// The policy of an account or key.
    pub async fn policy(&self, holder: &PolicyHolder) -> Result<AccessPolicy, StoreError> {
        let (sql, id) = match holder {
            PolicyHolder::Account(id) => ("SELECT policy FROM accounts WHERE id = $1", id),
            PolicyHolder::Key(id) => ("SELECT policy FROM api_keys WHERE id = $1", id),
        };
        let row: Option<(Option<String>,)> = sqlx::query_as(sql)
            .bind(id)
            .fetch_optional(self.pool())
            .await?;
        let (column,) = row.ok_or_else(|| StoreError::NotFound(format!("{holder:?}")))?;
        AccessPolicy::from_column(column.as_deref())
    }

    /// Replaces the policy of an account or key (an empty policy is stored as none). Replicas
    /// see it within the key lookup's freshness (about a second).
    pub async fn set_policy(
        &self,
        holder: &PolicyHolder,
        policy: &AccessPolicy,
    ) -> Result<(), StoreError> {
        let (sql, id) = match holder {
            PolicyHolder::Account(id) => ("UPDATE accounts SET policy = $1 WHERE id = $2", id),
            PolicyHolder::Key(id) => ("UPDATE api_keys SET policy = $1 WHERE id = $2", id),
        };
        let done = sqlx::query(sql)
            .bind(policy.to_column()?)
            .bind(id)
            .execute(self.writer())
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("{holder:?}")));
        }
        Ok(())
    }

    /// Creates a price group or changes its multiplier. Keys in it pay the new prices within
    /// the key lookup's freshness (about a second); video tasks keep the prices of their submit.
    pub async fn set_price_group(&self, name: &str, multiplier: Decimal) -> Result<(), StoreError> {
        if name.trim().is_empty() {
            return Err(StoreError::InvalidName("a price group needs a name".into()));
        }
        if multiplier < Decimal::ZERO {
            return Err(StoreError::InvalidAmount(format!(
                "a multiplier of {multiplier}: prices cannot be negative"
            )));
        }
        sqlx::query(
            "INSERT INTO price_groups (name, multiplier, created_at) VALUES ($1, $2, $3)
             ON CONFLICT (name) DO UPDATE SET multiplier = excluded.multiplier",
        )
        .bind(name)
        .bind(multiplier.normalize().to_string())
        .bind(crate::now_millis())
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// Sets (`Some`) or removes (`None`) the group's own multiplier for one public model.
    pub async fn set_model_multiplier(
        &self,
        group: &str,
        model: &str,
        multiplier: Option<Decimal>,
    ) -> Result<(), StoreError> {
        if multiplier.is_some_and(|m| m < Decimal::ZERO) {
            return Err(StoreError::InvalidAmount(format!(
                "a multiplier of {}: prices cannot be negative",
                multiplier.unwrap_or_default()
            )));
        }
        let mut tx = self.write_tx().await?;
        let current = self.price_group(group).await?;
        let mut models = current.models;
        match multiplier {
            Some(m) => {
                models.insert(model.to_owned(), m.normalize());
            }
            None => {
                models.remove(model);
            }
        }
        let column = if models.is_empty() {
            None
        } else {
            let text: BTreeMap<&String, String> =
                models.iter().map(|(k, v)| (k, v.to_string())).collect();
            Some(
                serde_json::to_string(&text)
                    .map_err(|e| StoreError::Corrupt(format!("price group {group}: {e}")))?,
            )
        };
        sqlx::query("UPDATE price_groups SET model_multipliers = $1 WHERE name = $2")
            .bind(column)
            .bind(group)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Every price group, by name.
    pub async fn price_groups(&self) -> Result<Vec<PriceGroup>, StoreError> {
        let rows: Vec<(String, String, Option<String>)> = sqlx::query_as(
            "SELECT name, multiplier, model_multipliers FROM price_groups ORDER BY name",
        )
        .fetch_all(self.pool())
        .await?;
        rows.into_iter()
            .map(|(name, multiplier, models)| group_of(name, &multiplier, models.as_deref()))
            .collect()
    }

    /// One price group; `NotFound` when there is none of that name.
    pub async fn price_group(&self, name: &str) -> Result<PriceGroup, StoreError> {
        let row: Option<(String, Option<String>)> = sqlx::query_as(
            "SELECT multiplier, model_multipliers FROM price_groups WHERE name = $1",
        )
        .bind(name)
        .fetch_optional(self.pool())
        .await?;
        let (multiplier, models) =
            row.ok_or_else(|| StoreError::NotFound(format!("price group {name:?}")))?;
        group_of(name.to_owned(), &multiplier, models.as_deref())
    }
}

fn group_of(
    name: String,
    multiplier: &str,
    models: Option<&str>,
) -> Result<PriceGroup, StoreError> {
    let corrupt = |what: &str, e: &dyn std::fmt::Display| {
        StoreError::Corrupt(format!("price group {name}: {what}: {e}"))
    };
    let multiplier = multiplier.parse().map_err(|e| corrupt("multiplier", &e))?;
    let models = match models {
        None | Some("") => BTreeMap::new(),
        Some(json) => {
            let text: BTreeMap<String, String> =
                serde_json::from_str(json).map_err(|e| corrupt("model multipliers", &e))?;
            let mut models = BTreeMap::new();
            for (model, m) in text {
                let m: Decimal = m.parse().map_err(|e| corrupt("model multiplier", &e))?;
                models.insert(model, m);
            }
            models
        }
    };
    Ok(PriceGroup {
        name,
        multiplier,
        models,
    })
}

/// The price group a principal pays in: its key's, else its account's.
pub(crate) fn group_name(policies: &[AccessPolicy]) -> Option<&str> {
    policies.iter().rev().find_map(|p| p.group.as_deref())
}

/// Reads the two stored policies of a principal: its account's, then its key's.
pub(crate) fn layers(
    account: Option<&str>,
    key: Option<&str>,
) -> Result<Vec<AccessPolicy>, StoreError> {
    [account, key]
        .into_iter()
        .map(AccessPolicy::from_column)
        .filter(|p| !matches!(p, Ok(p) if p.is_empty()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_names_and_families() {
        assert!(glob_matches(
            "text-embedding-3-small",
            "text-embedding-3-small"
        ));
        assert!(!glob_matches(
            "text-embedding-3-small",
            "text-embedding-3-large"
        ));
        assert!(glob_matches("text-embedding-*", "text-embedding-3-large"));
        assert!(glob_matches("*", ""));
        assert!(glob_matches("*-flash*", "gemini-2.5-flash-lite"));
        assert!(glob_matches("tts-?", "tts-1"));
        assert!(!glob_matches("tts-?", "tts-1-hd"));
        assert!(!glob_matches("", "x"));
        assert!(glob_matches("a*b*c", "aXXbYYc"));
        assert!(!glob_matches("a*b*c", "aXXbYY"));
        // No blow-up on many stars against a long miss.
        assert!(!glob_matches(&"*a".repeat(50), &"b".repeat(10_000)));
    }

    #[test]
    fn a_policy_admits_what_it_names_and_expires_at_its_time() {
        let p = AccessPolicy {
            models: Some(vec!["tts-*".into(), "whisper-1".into()]),
            endpoints: Some(vec!["speech".into()]),
            expires_at: Some(1_000),
            ..AccessPolicy::default()
        };
        assert!(p.admits_model("tts-1-hd") && p.admits_model("whisper-1"));
        assert!(!p.admits_model("text-embedding-3-small"));
        assert!(p.admits_endpoint("speech") && !p.admits_endpoint("embeddings"));
        assert!(!p.expired(999) && p.expired(1_000));
        let open = AccessPolicy::default();
        assert!(open.admits_model("x") && open.admits_endpoint("y") && !open.expired(i64::MAX));
    }

    #[test]
    fn networks_match_by_prefix_on_both_families() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let net = |s: &str| s.parse::<Cidr>().unwrap();
        assert!(net("10.0.0.0/8").contains(ip("10.200.1.2")));
        assert!(!net("10.0.0.0/8").contains(ip("11.0.0.1")));
        assert!(net("10.0.0.0/8").contains(ip("::ffff:10.1.2.3")));
        assert!(net("192.0.2.7").contains(ip("192.0.2.7")));
        assert!(!net("192.0.2.7").contains(ip("192.0.2.8")));
        assert!(net("0.0.0.0/0").contains(ip("203.0.113.9")));
        assert!(!net("0.0.0.0/0").contains(ip("2001:db8::1")));
        assert!(net("2001:db8::/32").contains(ip("2001:db8:ffff::1")));
        assert!(!net("2001:db8::/32").contains(ip("2001:db9::1")));
        assert!(net("::/0").contains(ip("::1")));
        for bad in [
            "10.0.0.0/33",
            "2001:db8::/129",
            "10.0.0/8",
            "x",
            "10.0.0.0/",
            "/8",
        ] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
        let p = AccessPolicy {
            networks: Some(vec![net("10.0.0.0/8"), net("2001:db8::/32")]),
            ..AccessPolicy::default()
        };
        assert!(p.admits_client(Some(ip("10.9.9.9"))));
        assert!(!p.admits_client(Some(ip("127.0.0.1"))));
        assert!(!p.admits_client(None));
        assert!(AccessPolicy::default().admits_client(None));
    }

    #[test]
    fn stored_policies_round_trip_and_empty_ones_are_dropped() {
        let p = AccessPolicy {
            models: Some(vec!["a".into()]),
            ..AccessPolicy::default()
        };
        let column = p.to_column().unwrap();
        assert_eq!(column.as_deref(), Some(r#"{"models":["a"]}"#));
        assert_eq!(AccessPolicy::default().to_column().unwrap(), None);
        let read = layers(None, column.as_deref()).unwrap();
        assert_eq!(read, vec![p]);
        assert!(layers(Some("{}"), None).unwrap().is_empty());
        assert!(layers(Some("not json"), None).is_err());
    }
}
