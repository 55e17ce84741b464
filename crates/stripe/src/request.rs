//! What the gateway asks of Stripe, as the form bodies its API takes
//! (`application/x-www-form-urlencoded`, nested keys in brackets): a Checkout Session for a
//! top-up a person pays on Stripe's page, and an off-session PaymentIntent for an automatic
//! top-up charged to the card saved at the first (docs/decisions.md, "Payments").
//!
//! Both carry the gateway's payment id three ways — `client_reference_id`, `metadata` and the
//! PaymentIntent's `metadata` — so every event about the money names it, and an `Idempotency-Key`
//! (the same id) makes a retried creation the same object at Stripe.

use crate::money::Currency;

/// The metadata key that names the gateway's payment (`pay_…`) on every Stripe object of it.
pub const PAYMENT_KEY: &str = "tollgate_payment";
/// The metadata key that names the account, for the operator reading Stripe's dashboard.
pub const ACCOUNT_KEY: &str = "tollgate_account";

/// A Checkout Session in `payment` mode for one line: the top-up.
#[derive(Debug, Clone)]
pub struct CheckoutRequest<'a> {
    /// The gateway's payment id (`pay_…`).
    pub payment_id: &'a str,
    /// The account topped up.
    pub account_id: &'a str,
    /// What is paid, in the currency's minor units.
    pub amount_minor: i64,
    /// The currency.
    pub currency: &'a Currency,
    /// The line's name on Stripe's page and the receipt.
    pub product_name: &'a str,
    /// Where Stripe sends the person after paying.
    pub success_url: &'a str,
    /// Where Stripe sends the person who gives up.
    pub cancel_url: &'a str,
    /// The account's Stripe customer, once there is one.
    pub customer: Option<&'a str>,
    /// The person's email, to prefill (only without a customer).
    pub customer_email: Option<&'a str>,
    /// Keep the card for automatic top-ups (`setup_future_usage=off_session`).
    pub save_card: bool,
}

impl CheckoutRequest<'_> {
    /// The form body of `POST /v1/checkout/sessions`.
    pub fn form(&self) -> String {
        let amount = self.amount_minor.to_string();
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("mode", "payment")
            .append_pair("line_items[0][quantity]", "1")
            .append_pair("line_items[0][price_data][currency]", self.currency.code())
            .append_pair("line_items[0][price_data][unit_amount]", &amount)
            .append_pair(
                "line_items[0][price_data][product_data][name]",
                self.product_name,
            )
            .append_pair("success_url", self.success_url)
            .append_pair("cancel_url", self.cancel_url)
            .append_pair("client_reference_id", self.payment_id);
        for prefix in ["metadata", "payment_intent_data[metadata]"] {
            form.append_pair(&format!("{prefix}[{PAYMENT_KEY}]"), self.payment_id)
                .append_pair(&format!("{prefix}[{ACCOUNT_KEY}]"), self.account_id);
        }
        match self.customer {
            Some(customer) => {
                form.append_pair("customer", customer);
            }
            None => {
                form.append_pair("customer_creation", "always");
                if let Some(email) = self.customer_email {
                    form.append_pair("customer_email", email);
                }
            }
        }
        if self.save_card {
            form.append_pair("payment_intent_data[setup_future_usage]", "off_session");
        }
        form.finish()
    }
}

/// An off-session PaymentIntent, confirmed at once, on the customer's saved card.
#[derive(Debug, Clone)]
pub struct OffSessionRequest<'a> {
    /// The gateway's payment id (`pay_…`).
    pub payment_id: &'a str,
    /// The account topped up.
    pub account_id: &'a str,
    /// What is charged, in minor units.
    pub amount_minor: i64,
    /// The currency.
    pub currency: &'a Currency,
    /// The account's Stripe customer.
    pub customer: &'a str,
    /// The card saved at the first top-up.
    pub payment_method: &'a str,
    /// On the customer's statement and receipt.
    pub description: &'a str,
}

impl OffSessionRequest<'_> {
    /// The form body of `POST /v1/payment_intents`.
    pub fn form(&self) -> String {
        let amount = self.amount_minor.to_string();
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("amount", &amount)
            .append_pair("currency", self.currency.code())
            .append_pair("customer", self.customer)
            .append_pair("payment_method", self.payment_method)
            .append_pair("off_session", "true")
            .append_pair("confirm", "true")
            .append_pair("description", self.description)
            .append_pair(&format!("metadata[{PAYMENT_KEY}]"), self.payment_id)
            .append_pair(&format!("metadata[{ACCOUNT_KEY}]"), self.account_id);
        form.finish()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn pairs(form: &str) -> Vec<(String, String)> {
        form_urlencoded::parse(form.as_bytes())
            .into_owned()
            .collect()
    }

    #[test]
    fn checkout_form_reads_back() {
        let usd: Currency = "usd".parse().unwrap();
        let form = CheckoutRequest {
            payment_id: "pay_1",
            account_id: "acct&=[x]",
            amount_minor: 2500,
            currency: &usd,
            product_name: "Balance top-up",
            success_url: "https://gw.example/portal/#topups?paid=pay_1",
            cancel_url: "https://gw.example/portal/#topups",
            customer: None,
            customer_email: Some("a+b@example.com"),
            save_card: true,
        }
        .form();
        let got = pairs(&form);
        let get = |k: &str| got.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("line_items[0][price_data][unit_amount]"), Some("2500"));
        assert_eq!(get("metadata[tollgate_account]"), Some("acct&=[x]"));
        assert_eq!(
            get("payment_intent_data[metadata][tollgate_payment]"),
            Some("pay_1")
        );
        assert_eq!(get("customer_email"), Some("a+b@example.com"));
        assert_eq!(get("customer_creation"), Some("always"));
        assert_eq!(
            get("payment_intent_data[setup_future_usage]"),
            Some("off_session")
        );
        assert_eq!(
            get("success_url"),
            Some("https://gw.example/portal/#topups?paid=pay_1")
        );
        assert!(!form.contains("acct&=[x]"), "values are encoded");
    }

    #[test]
    fn off_session_form() {
        let jpy: Currency = "jpy".parse().unwrap();
        let form = OffSessionRequest {
            payment_id: "pay_2",
            account_id: "acct_1",
            amount_minor: 500,
            currency: &jpy,
            customer: "cus_1",
            payment_method: "pm_1",
            description: "Automatic top-up",
        }
        .form();
        let got = pairs(&form);
        assert!(got.contains(&("off_session".into(), "true".into())));
        assert!(got.contains(&("confirm".into(), "true".into())));
        assert!(got.contains(&("metadata[tollgate_payment]".into(), "pay_2".into())));
        assert!(got.contains(&("amount".into(), "500".into())));
    }
}
