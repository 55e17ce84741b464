//! The objects Stripe answers with and sends in events, as far as a top-up reads them
//! (Stripe's API reference: Checkout Session, PaymentIntent, Charge, Dispute, Error). Unknown
//! fields are ignored, as Stripe adds fields without a new API version; the simulator writes the
//! same types.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `checkout.session`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckoutSession {
    /// `cs_…`
    pub id: String,
    /// Stripe's page where the person pays (while the session is open).
    #[serde(default)]
    pub url: Option<String>,
    /// What is due, in minor units.
    #[serde(default)]
    pub amount_total: Option<i64>,
    /// Lower case.
    #[serde(default)]
    pub currency: Option<String>,
    /// The gateway's payment id.
    #[serde(default)]
    pub client_reference_id: Option<String>,
    /// `cus_…`, once Checkout made or used one.
    #[serde(default)]
    pub customer: Option<String>,
    /// What the gateway set.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// `pi_…`, once there is one.
    #[serde(default)]
    pub payment_intent: Option<String>,
    /// `paid`, `unpaid` or `no_payment_required`.
    pub payment_status: String,
    /// `open`, `complete` or `expired`.
    #[serde(default)]
    pub status: Option<String>,
}

/// `payment_intent`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentIntent {
    /// `pi_…`
    pub id: String,
    /// What is charged, in minor units.
    pub amount: i64,
    /// What was received, once it succeeded.
    #[serde(default)]
    pub amount_received: Option<i64>,
    /// Lower case.
    pub currency: String,
    /// `cus_…`
    #[serde(default)]
    pub customer: Option<String>,
    /// `pm_…`: the card, which an off-session top-up charges again.
    #[serde(default)]
    pub payment_method: Option<String>,
    /// What the gateway set.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// `succeeded`, `requires_payment_method`, `requires_action`, `processing`, …
    pub status: String,
    /// Why the last attempt failed.
    #[serde(default)]
    pub last_payment_error: Option<ErrorDetail>,
}

/// `charge`, as `charge.refunded` sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Charge {
    /// `ch_…`
    pub id: String,
    /// What was charged, in minor units.
    pub amount: i64,
    /// Everything refunded so far, in minor units: a running total, so a receiver that takes
    /// the largest it has seen is right whatever order the events come in.
    pub amount_refunded: i64,
    /// Lower case.
    pub currency: String,
    /// `pi_…`
    #[serde(default)]
    pub payment_intent: Option<String>,
}

/// `dispute`: a chargeback the customer's bank opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dispute {
    /// `dp_…`
    pub id: String,
    /// What is disputed, in minor units.
    pub amount: i64,
    /// Lower case.
    pub currency: String,
    /// `ch_…`
    #[serde(default)]
    pub charge: Option<String>,
    /// `pi_…`
    #[serde(default)]
    pub payment_intent: Option<String>,
    /// `needs_response`, `under_review`, `won`, `lost`, …
    pub status: String,
}

/// Stripe's error body: `{"error": {…}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// One error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// `card_error`, `invalid_request_error`, `api_error`, …
    #[serde(rename = "type")]
    pub kind: String,
    /// `card_declined`, `authentication_required`, …
    #[serde(default)]
    pub code: Option<String>,
    /// For people.
    #[serde(default)]
    pub message: Option<String>,
}
