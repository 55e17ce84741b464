//! A webhook delivery (docs/decisions.md, "Payments"): verified, read, and applied to the
//! payment it names, once.
//!
//! 1. The signature: `Stripe-Signature` over the raw body, with one of the endpoint's secrets,
//!    within the tolerance of the gateway's clock (`tollgate_stripe::signature`). A failure is
//!    400 and changes nothing; it is counted for the alert, at most one write a second
//!    ([`write_refused`]).
//! 2. The event, read into what happened to the money (`tollgate_stripe::Happened`).
//! 3. The store's step for it, each applied once whatever the order and however often it is
//!    delivered (`tollgate_store::payments`).
//!
//! What Stripe is answered decides whether it delivers again: 2xx for an event applied, applied
//! before, or not about a payment of the gateway's; 400 for one that is forged or that claims
//! more than was asked (it shows as failing in the provider's dashboard, which is the point);
//! 503 when the database or the provider could not be reached, or a refund came before its
//! payment and the provider could not be asked about it — delivered again later.

use crate::provider::{self, ProviderError};
use http::HeaderMap;
use serde::Serialize;
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_request::State;
use tollgate_settings::payments::StripeSettings;
use tollgate_store::{DisputeStatus, NotApplied, PaymentChange, PaymentStatus, Received};
use tollgate_stripe::event::{Happened, Paid, payment_id};
use tollgate_stripe::{Event, signature};

/// What a delivery did, as the provider is answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Receipt {
    /// The event (`evt_…`).
    pub event: String,
    /// `credited`, `refunded`, `disputed`, `dispute_won`, `unpaid`, `already`, `ignored`.
    pub outcome: &'static str,
    /// The ledger row written, if one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ledger_id: Option<String>,
}

/// Receives one delivery: `body` exactly as sent, at `now` (Unix seconds).
pub async fn receive(
    state: &State,
    headers: &HeaderMap,
    body: &[u8],
    now: i64,
) -> Result<Receipt, ApiError> {
    // 1. The signature.
    let stripe = crate::topup::configured(state)?;
    let header = headers
        .get("stripe-signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let verified = signature::verify(
        header,
        body,
        &stripe.webhook_secrets,
        now,
        stripe.tolerance_seconds,
    );
    if let Err(e) = verified {
        let now_ms = now.saturating_mul(1_000);
        match state.refused_webhooks.add(now_ms) {
            Some(count) => {
                tracing::warn!(error = %e, count, "Stripe webhook deliveries were refused: their signature does not verify");
                write_refused(state, count, now_ms).await;
            }
            None => tracing::debug!(error = %e, "a Stripe webhook delivery was refused"),
        }
        return Err(ApiError::new(ErrorKind::InvalidRequest, e.to_string())
            .param("Stripe-Signature")
            .code("signature_invalid"));
    }

    // 2. The event.
    let event = Event::parse(body).map_err(|e| unreadable(e.to_string()))?;
    let happened = event.happened().map_err(|e| unreadable(e.to_string()))?;

    // 3. Its step.
    let applied = apply(state, stripe, &happened).await;
    let (outcome, change) = match applied {
        Ok(done) => done,
        Err(Refusal::Mismatch(detail)) => {
            tracing::error!(event = %event.id, kind = %event.kind, %detail,
                "a Stripe event does not match the payment it names: nothing credited");
            return Err(ApiError::new(ErrorKind::Conflict, detail).code("payment_mismatch"));
        }
        Err(Refusal::Later(why)) => {
            tracing::warn!(event = %event.id, kind = %event.kind, %why, "a Stripe event is left for its next delivery");
            return Err(ApiError::new(ErrorKind::Unavailable, why).code("try_again"));
        }
    };
    if let Some(change) = &change {
        let overdrawn = change.overdraw.is_positive();
        tracing::info!(event = %event.id, kind = %event.kind, outcome,
            payment = %change.payment_id, account = %change.account_id,
            amount = %change.amount, balance = %change.balance, "a Stripe event applied");
        if overdrawn {
            tracing::warn!(payment = %change.payment_id, account = %change.account_id,
                overdraw = %change.overdraw,
                "a refund or chargeback after the money was spent took the balance below what was available");
        }
    }
    Ok(Receipt {
        event: event.id,
        outcome,
        ledger_id: change.map(|c| c.ledger_id),
    })
}

/// Counts `count` refused deliveries in the database, across replicas, for the
/// `payment_signature_failures` alert. They are tallied in memory first
/// (`State::refused_webhooks`) and written at most once a second, so a forger's flood costs the
/// database one write a second, never one a request; a failed write is counted with the next.
pub async fn write_refused(state: &State, count: u64, now_ms: i64) {
    if let Err(e) = state.store.count_signature_failures(count, now_ms).await {
        state.refused_webhooks.restore(count);
        tracing::warn!(error = %e, count, "refused webhook deliveries could not be counted yet");
    }
}

/// Writes what is left of a burst of refused deliveries (the background's periodic flush).
pub async fn flush_refused(state: &State, now_ms: i64) {
    if let Some(count) = state.refused_webhooks.due(now_ms) {
        write_refused(state, count, now_ms).await;
    }
}

fn unreadable(why: String) -> ApiError {
    ApiError::new(ErrorKind::InvalidRequest, why).code("event_unreadable")
}

/// Why an event was not applied and should not be answered 2xx.
enum Refusal {
    /// It contradicts the payment it names.
    Mismatch(String),
    /// Not now: delivered again later.
    Later(String),
}

type Applied = Result<(&'static str, Option<PaymentChange>), Refusal>;

async fn apply(state: &State, stripe: &StripeSettings, happened: &Happened) -> Applied {
    let store = &state.store;
    match happened {
        Happened::Paid(paid) => credit(state, paid).await,
        Happened::Unpaid(payment_id) => {
            let ended = store
                .payment_not_made(payment_id, PaymentStatus::Unpaid, None)
                .await
                .map_err(later)?;
            Ok((if ended { "unpaid" } else { "already" }, None))
        }
        Happened::Failed(intent) => {
            let Some(id) = payment_id(&intent.metadata) else {
                return Ok(("ignored", None));
            };
            // On Checkout's page a declined card may be followed by another that pays: only an
            // automatic top-up's failure ends its payment.
            match store.payment(&id).await {
                Ok(payment) if payment.automatic => {}
                Ok(_) | Err(tollgate_store::StoreError::NotFound(_)) => {
                    return Ok(("ignored", None));
                }
                Err(e) => return Err(later(e)),
            }
            let why = intent
                .last_payment_error
                .as_ref()
                .and_then(|e| e.message.clone().or(e.code.clone()));
            let ended = store
                .payment_not_made(&id, PaymentStatus::Failed, why.as_deref())
                .await
                .map_err(later)?;
            Ok((if ended { "unpaid" } else { "already" }, None))
        }
        Happened::Refunded(charge) => {
            let Some(intent) = &charge.payment_intent else {
                return Ok(("ignored", None));
            };
            reversal(state, stripe, intent, "refunded", || {
                store.refund_payment(intent, &charge.id, charge.amount_refunded, &charge.currency)
            })
            .await
        }
        Happened::DisputeOpened(dispute) | Happened::DisputeClosed(dispute) => {
            let status = match (happened, dispute.status.as_str()) {
                (Happened::DisputeOpened(_), _) => DisputeStatus::Open,
                (_, "won") => DisputeStatus::Won,
                (_, "lost") => DisputeStatus::Lost,
                // warning_closed and the like: no money moved.
                _ => return Ok(("ignored", None)),
            };
            let Some(intent) = &dispute.payment_intent else {
                return Ok(("ignored", None));
            };
            let outcome = if status == DisputeStatus::Won {
                "dispute_won"
            } else {
                "disputed"
            };
            reversal(state, stripe, intent, outcome, || {
                store.dispute_payment(
                    intent,
                    &dispute.id,
                    dispute.amount,
                    &dispute.currency,
                    status,
                )
            })
            .await
        }
        Happened::Nothing => Ok(("ignored", None)),
    }
}

/// Credits a paid payment of the gateway's.
async fn credit(state: &State, paid: &Paid) -> Applied {
    let received = Received {
        payment_id: &paid.payment_id,
        amount_minor: paid.amount_minor,
        currency: &paid.currency,
        intent_id: paid.payment_intent.as_deref(),
        customer_id: paid.customer.as_deref(),
        payment_method: paid.payment_method.as_deref(),
    };
    match state.store.credit_payment(&received).await.map_err(later)? {
        Ok(change) => Ok(("credited", Some(change))),
        Err(NotApplied::Already) => Ok(("already", None)),
        // Metadata naming a payment this database never made: another system's, or a test
        // event. Not the gateway's money.
        Err(NotApplied::Unknown(_)) => Ok(("ignored", None)),
        Err(NotApplied::Mismatch { detail, .. }) => Err(Refusal::Mismatch(detail)),
        Err(NotApplied::NotYetPaid(why)) => Err(Refusal::Later(why)),
    }
}

/// A refund or chargeback step. One whose payment the gateway has not credited yet (its paid
/// event not delivered yet) is checked with the provider: a payment of the gateway's that
/// succeeded is credited now, then the step applied; one that is not the gateway's is ignored.
async fn reversal<F, Fut>(
    state: &State,
    stripe: &StripeSettings,
    intent: &str,
    outcome: &'static str,
    step: F,
) -> Applied
where
    F: Fn() -> Fut,
    Fut: std::future::Future<
            Output = Result<Result<PaymentChange, NotApplied>, tollgate_store::StoreError>,
        >,
{
    let mut reconciled = false;
    loop {
        match step().await.map_err(later)? {
            Ok(change) => return Ok((outcome, Some(change))),
            Err(NotApplied::Already) => return Ok(("already", None)),
            Err(NotApplied::Mismatch { detail, .. }) => return Err(Refusal::Mismatch(detail)),
            Err(NotApplied::Unknown(_) | NotApplied::NotYetPaid(_)) if !reconciled => {
                reconciled = true;
                match reconcile(state, stripe, intent).await? {
                    true => continue,
                    false => return Ok(("ignored", None)),
                }
            }
            Err(NotApplied::Unknown(_) | NotApplied::NotYetPaid(_)) => {
                return Err(Refusal::Later(format!(
                    "the payment of {intent} is not credited yet"
                )));
            }
        }
    }
}

/// Asks the provider about `intent`: whether it is a payment of the gateway's, credited now if
/// it succeeded.
async fn reconcile(state: &State, stripe: &StripeSettings, intent: &str) -> Result<bool, Refusal> {
    let found = match provider::payment_intent(state, stripe, intent).await {
        Ok(found) => found,
        Err(ProviderError::Refused { status: 404, .. }) => return Ok(false),
        Err(e) => return Err(Refusal::Later(e.to_string())),
    };
    let Some(id) = payment_id(&found.metadata) else {
        return Ok(false);
    };
    if found.status != "succeeded" {
        return Err(Refusal::Later(format!(
            "{intent} is {}, not succeeded",
            found.status
        )));
    }
    let paid = Paid {
        payment_id: id,
        amount_minor: found.amount_received.unwrap_or(found.amount),
        currency: found.currency,
        payment_intent: Some(found.id),
        customer: found.customer,
        payment_method: found.payment_method,
    };
    match credit(state, &paid).await? {
        ("ignored", _) => Ok(false),
        _ => Ok(true),
    }
}

fn later(e: tollgate_store::StoreError) -> Refusal {
    Refusal::Later(format!("the database: {e}"))
}
