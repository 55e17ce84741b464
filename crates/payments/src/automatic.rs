//! Automatic top-ups (docs/decisions.md, "Payments"): one pass over the accounts whose
//! available balance fell below their threshold, each charged off-session on the card saved at
//! an earlier top-up. Run by the gateway's background work on every replica; the store lets
//! one automatic payment per account be open at a time, so two replicas passing at once charge
//! once, and counts the day's automatic payments against the account's cap and the operator's.
//!
//! Nothing is credited here either: the provider's `payment_intent.succeeded` event is (the
//! answer to the call says the same, but only a signed event credits, so there is one path).
//! A declined card marks the payment failed and pauses the account's automatic top-up until a
//! person sets it again; an unreachable provider leaves the payment open for its event.

use crate::provider;
use tollgate_request::State;
use tollgate_store::{NewPayment, PaymentStatus};
use tollgate_stripe::request::OffSessionRequest;

/// What one pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    /// Off-session payments asked of the provider.
    pub started: u32,
    /// Declined or refused by the provider.
    pub declined: u32,
}

/// One pass at `now` (Unix milliseconds).
pub async fn top_up_due(state: &State, now: i64) -> Result<Pass, tollgate_store::StoreError> {
    let mut pass = Pass::default();
    let Some(stripe) = state.payments.as_deref() else {
        return Ok(pass);
    };
    if stripe.max_automatic_minor == 0 {
        return Ok(pass);
    }
    for (topup, customer, card) in state.store.auto_topups_due(now).await? {
        // The operator's cap bounds whatever the person set.
        let amount_minor = topup.amount_minor;
        if amount_minor > stripe.max_minor
            || amount_minor < stripe.min_minor
            || topup.daily_cap_minor > stripe.max_automatic_minor
        {
            tracing::warn!(account = %topup.account_id, "an automatic top-up outside the configured limits is skipped");
            continue;
        }
        let Ok(units) = stripe.units(amount_minor) else {
            continue;
        };
        let payment = match state
            .store
            .create_payment(&NewPayment {
                account_id: &topup.account_id,
                provider: "stripe",
                automatic: true,
                person_id: None,
                currency: stripe.currency.code(),
                amount_minor,
                amount: units,
            })
            .await
        {
            Ok(payment) => payment,
            // Another replica started it.
            Err(tollgate_store::StoreError::AlreadyExists(_)) => continue,
            Err(e) => return Err(e),
        };
        let asked = OffSessionRequest {
            payment_id: &payment.id,
            account_id: &topup.account_id,
            amount_minor,
            currency: &stripe.currency,
            customer: &customer,
            payment_method: &card,
            description: &stripe.product_name,
        };
        pass.started += 1;
        match provider::create_off_session(state, stripe, &asked).await {
            Ok(intent) => {
                state
                    .store
                    .payment_started(&payment.id, None, Some(&intent.id))
                    .await?;
                tracing::info!(account = %topup.account_id, payment = %payment.id,
                    status = %intent.status, "an automatic top-up was charged");
            }
            Err(e) if e.is_transient() => {
                tracing::warn!(account = %topup.account_id, payment = %payment.id, error = %e,
                    "an automatic top-up's charge got no answer; its event will settle it");
            }
            Err(e) => {
                pass.declined += 1;
                tracing::warn!(account = %topup.account_id, payment = %payment.id, error = %e,
                    "an automatic top-up was declined; the account's automatic top-up is paused");
                state
                    .store
                    .payment_not_made(&payment.id, PaymentStatus::Failed, Some(&e.to_string()))
                    .await?;
            }
        }
    }
    Ok(pass)
}
