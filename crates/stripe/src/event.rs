//! Webhook events (Stripe's "Event object"), read into what happened to the money
//! (docs/decisions.md, "Payments"). An event is parsed only after its signature passed
//! (`crate::signature`); what it says is then checked by the receiver against the payment it
//! names, which the gateway created.

use crate::object::{Charge, CheckoutSession, Dispute, PaymentIntent};
use crate::request::PAYMENT_KEY;
use serde::{Deserialize, Serialize};

/// One event, as delivered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// `evt_…`: the same on every retry of a delivery.
    pub id: String,
    /// `checkout.session.completed`, `charge.refunded`, …
    #[serde(rename = "type")]
    pub kind: String,
    /// Unix seconds.
    pub created: i64,
    /// Live or test mode.
    #[serde(default)]
    pub livemode: bool,
    /// The object it is about.
    pub data: EventData,
}

/// `data` of an event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventData {
    /// The object, as it was when the event happened.
    pub object: serde_json::Value,
}

/// Money received for one of the gateway's payments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paid {
    /// The gateway's payment id (`pay_…`), from the metadata it set.
    pub payment_id: String,
    /// What was received, in minor units.
    pub amount_minor: i64,
    /// Lower case.
    pub currency: String,
    /// `pi_…`
    pub payment_intent: Option<String>,
    /// `cus_…`
    pub customer: Option<String>,
    /// `pm_…` (PaymentIntent events only).
    pub payment_method: Option<String>,
}

/// What an event means for the money.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Happened {
    /// A payment succeeded: `checkout.session.completed` paid,
    /// `checkout.session.async_payment_succeeded`, `payment_intent.succeeded`. Checkout sends
    /// both a session's event and its PaymentIntent's; they name one payment.
    Paid(Paid),
    /// A Checkout Session ended unpaid (`checkout.session.expired`,
    /// `checkout.session.async_payment_failed`): its payment id.
    Unpaid(String),
    /// An off-session payment failed (`payment_intent.payment_failed`).
    Failed(PaymentIntent),
    /// `charge.refunded`: the running total refunded.
    Refunded(Charge),
    /// `charge.dispute.created`: money taken back by the customer's bank.
    DisputeOpened(Dispute),
    /// `charge.dispute.closed`: `won` gives the money back.
    DisputeClosed(Dispute),
    /// Not about money the gateway tracks (another type, a session paid later, an object
    /// without the gateway's metadata).
    Nothing,
}

/// Why an event could not be read.
#[derive(Debug, thiserror::Error)]
#[error("the {kind} event's object is not what Stripe sends: {source}")]
pub struct EventError {
    kind: String,
    source: serde_json::Error,
}

impl Event {
    /// Reads a delivery's body.
    pub fn parse(body: &[u8]) -> Result<Event, serde_json::Error> {
        serde_json::from_slice(body)
    }

    fn object<T: serde::de::DeserializeOwned>(&self) -> Result<T, EventError> {
        serde_json::from_value(self.data.object.clone()).map_err(|source| EventError {
            kind: self.kind.clone(),
            source,
        })
    }

    /// What the event means for the money.
    pub fn happened(&self) -> Result<Happened, EventError> {
        Ok(match self.kind.as_str() {
            "checkout.session.completed" | "checkout.session.async_payment_succeeded" => {
                let session: CheckoutSession = self.object()?;
                match (session.payment_status.as_str(), paid_session(&session)) {
                    ("paid", Some(paid)) => Happened::Paid(paid),
                    _ => Happened::Nothing,
                }
            }
            "checkout.session.expired" | "checkout.session.async_payment_failed" => {
                let session: CheckoutSession = self.object()?;
                match payment_id(&session.metadata).or(session.client_reference_id) {
                    Some(id) => Happened::Unpaid(id),
                    None => Happened::Nothing,
                }
            }
            "payment_intent.succeeded" => {
                let intent: PaymentIntent = self.object()?;
                match payment_id(&intent.metadata) {
                    Some(payment_id) => Happened::Paid(Paid {
                        payment_id,
                        amount_minor: intent.amount_received.unwrap_or(intent.amount),
                        currency: intent.currency,
                        payment_intent: Some(intent.id),
                        customer: intent.customer,
                        payment_method: intent.payment_method,
                    }),
                    None => Happened::Nothing,
                }
            }
            "payment_intent.payment_failed" => {
                let intent: PaymentIntent = self.object()?;
                if payment_id(&intent.metadata).is_some() {
                    Happened::Failed(intent)
                } else {
                    Happened::Nothing
                }
            }
            "charge.refunded" => Happened::Refunded(self.object()?),
            "charge.dispute.created" => Happened::DisputeOpened(self.object()?),
            "charge.dispute.closed" => Happened::DisputeClosed(self.object()?),
            _ => Happened::Nothing,
        })
    }
}

/// The gateway's payment id in an object's metadata.
pub fn payment_id(metadata: &std::collections::BTreeMap<String, String>) -> Option<String> {
    metadata.get(PAYMENT_KEY).cloned()
}

fn paid_session(session: &CheckoutSession) -> Option<Paid> {
    Some(Paid {
        payment_id: payment_id(&session.metadata).or(session.client_reference_id.clone())?,
        amount_minor: session.amount_total?,
        currency: session.currency.clone()?,
        payment_intent: session.payment_intent.clone(),
        customer: session.customer.clone(),
        payment_method: None,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn checkout_completed_paid_and_unpaid() {
        let body = br#"{"id":"evt_1","object":"event","type":"checkout.session.completed",
            "created":1,"livemode":false,"api_version":"2025-01-27","data":{"object":{
            "id":"cs_1","object":"checkout.session","amount_total":2500,"currency":"usd",
            "client_reference_id":"pay_1","customer":"cus_1","metadata":{"tollgate_payment":"pay_1"},
            "payment_intent":"pi_1","payment_status":"paid","status":"complete","extra":[1]}}}"#;
        let event = Event::parse(body).unwrap();
        let Happened::Paid(paid) = event.happened().unwrap() else {
            panic!("not paid")
        };
        assert_eq!(paid.payment_id, "pay_1");
        assert_eq!(paid.amount_minor, 2500);
        assert_eq!(paid.payment_intent.as_deref(), Some("pi_1"));
        let unpaid = String::from_utf8_lossy(body).replace("\"paid\"", "\"unpaid\"");
        let event = Event::parse(unpaid.as_bytes()).unwrap();
        assert_eq!(event.happened().unwrap(), Happened::Nothing);
    }

    #[test]
    fn others_and_malformed() {
        let other = br#"{"id":"evt_2","type":"customer.created","created":1,"data":{"object":{}}}"#;
        assert_eq!(
            Event::parse(other).unwrap().happened().unwrap(),
            Happened::Nothing
        );
        let broken = br#"{"id":"evt_3","type":"charge.refunded","created":1,"data":{"object":{"id":"ch_1"}}}"#;
        assert!(Event::parse(broken).unwrap().happened().is_err());
        let foreign =
            br#"{"id":"evt_4","type":"payment_intent.succeeded","created":1,"data":{"object":
            {"id":"pi_9","amount":100,"currency":"usd","status":"succeeded","metadata":{}}}}"#;
        assert_eq!(
            Event::parse(foreign).unwrap().happened().unwrap(),
            Happened::Nothing
        );
    }
}
