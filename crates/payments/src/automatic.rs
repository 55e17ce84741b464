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
//!
//! A call that got no answer may never have reached the provider, and then no event ever
//! comes, while the open payment keeps the account's next automatic top-up waiting. So a
//! payment with no answer is asked again after [`ASK_AGAIN_AFTER_MS`] with the same
//! idempotency key (its id): the provider answers with the payment it made the first time, or
//! makes it now — never two. Past [`GIVE_UP_AFTER_MS`] (the provider keeps a key a day) it is
//! marked failed, which pauses the automatic top-up with the reason, for a person to see.

use crate::provider;
use tollgate_request::State;
use tollgate_settings::payments::StripeSettings;
use tollgate_store::{NewPayment, Payment, PaymentStatus};
use tollgate_stripe::request::OffSessionRequest;

/// What one pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    /// Off-session payments asked of the provider.
    pub started: u32,
    /// Declined or refused by the provider.
    pub declined: u32,
}

/// How long an automatic payment waits for the provider's answer before it is asked again.
pub const ASK_AGAIN_AFTER_MS: i64 = 5 * 60_000;
/// How long it is asked again: within the day the provider keeps an idempotency key.
pub const GIVE_UP_AFTER_MS: i64 = 23 * 3_600_000;

/// What becomes of an automatic payment the provider has not answered, made at `created_at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unanswered {
    /// Too recent: its answer or event may still come.
    Wait,
    /// Asked again with the same idempotency key.
    AskAgain,
    /// Failed: the key may have expired, so asking again could charge twice.
    GiveUp,
}

impl Unanswered {
    /// The step for a payment made at `created_at`, at `now` (Unix ms).
    pub fn at(created_at: i64, now: i64) -> Unanswered {
        let age = now.saturating_sub(created_at);
        if age >= GIVE_UP_AFTER_MS {
            Unanswered::GiveUp
        } else if age >= ASK_AGAIN_AFTER_MS {
            Unanswered::AskAgain
        } else {
            Unanswered::Wait
        }
    }
}

/// One pass at `now` (Unix milliseconds): the unanswered payments first (each blocks its
/// account's next), then the accounts due.
pub async fn top_up_due(state: &State, now: i64) -> Result<Pass, tollgate_store::StoreError> {
    let mut pass = Pass::default();
    let Some(stripe) = state.payments.as_deref() else {
        return Ok(pass);
    };
    if stripe.max_automatic_minor == 0 {
        return Ok(pass);
    }
    // Made at or before five minutes ago (the store's bound is exclusive).
    for payment in state
        .store
        .unanswered_automatic_payments(now - ASK_AGAIN_AFTER_MS + 1)
        .await?
    {
        ask_again(state, stripe, &payment, now, &mut pass).await?;
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
        charge(state, stripe, &payment, &asked, &mut pass).await?;
    }
    Ok(pass)
}

/// An unanswered payment asked again (or given up), as [`Unanswered::at`] says.
async fn ask_again(
    state: &State,
    stripe: &StripeSettings,
    payment: &Payment,
    now: i64,
    pass: &mut Pass,
) -> Result<(), tollgate_store::StoreError> {
    let card = state.store.payment_method(&payment.account_id).await?;
    let step = Unanswered::at(payment.created_at, now);
    let (customer, card) = match (step, card) {
        (Unanswered::Wait, _) => return Ok(()),
        (Unanswered::AskAgain, Some((customer, Some(card))))
            if payment.currency == stripe.currency.code() =>
        {
            (customer, card)
        }
        (step, _) => {
            let why = match step {
                Unanswered::GiveUp => "the payment provider never answered",
                _ => "its card or currency changed before the provider answered",
            };
            tracing::warn!(account = %payment.account_id, payment = %payment.id, why,
                "an automatic top-up is given up; the account's automatic top-up is paused");
            state
                .store
                .payment_not_made(&payment.id, PaymentStatus::Failed, Some(why))
                .await?;
            pass.declined += 1;
            return Ok(());
        }
    };
    tracing::info!(account = %payment.account_id, payment = %payment.id,
        "an automatic top-up with no answer is asked again, under the same idempotency key");
    let asked = OffSessionRequest {
        payment_id: &payment.id,
        account_id: &payment.account_id,
        amount_minor: payment.amount_minor,
        currency: &stripe.currency,
        customer: &customer,
        payment_method: &card,
        description: &stripe.product_name,
    };
    charge(state, stripe, payment, &asked, pass).await
}

/// Asks the provider for `asked` and records its answer: the payment started, still
/// unanswered, or declined (failed, the automatic top-up paused).
async fn charge(
    state: &State,
    stripe: &StripeSettings,
    payment: &Payment,
    asked: &OffSessionRequest<'_>,
    pass: &mut Pass,
) -> Result<(), tollgate_store::StoreError> {
    pass.started += 1;
    match provider::create_off_session(state, stripe, asked).await {
        Ok(intent) => {
            state
                .store
                .payment_started(&payment.id, None, Some(&intent.id))
                .await?;
            tracing::info!(account = %payment.account_id, payment = %payment.id,
                status = %intent.status, "an automatic top-up was charged");
        }
        Err(e) if e.is_transient() => {
            tracing::warn!(account = %payment.account_id, payment = %payment.id, error = %e,
                "an automatic top-up's charge got no answer; its event, or asking again, will settle it");
        }
        Err(e) => {
            pass.declined += 1;
            tracing::warn!(account = %payment.account_id, payment = %payment.id, error = %e,
                "an automatic top-up was declined; the account's automatic top-up is paused");
            state
                .store
                .payment_not_made(&payment.id, PaymentStatus::Failed, Some(&e.to_string()))
                .await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unanswered_payment_waits_then_is_asked_again_within_the_key_s_day() {
        let made = 1_000_000;
        assert_eq!(Unanswered::at(made, made), Unanswered::Wait);
        assert_eq!(
            Unanswered::at(made, made + ASK_AGAIN_AFTER_MS - 1),
            Unanswered::Wait
        );
        assert_eq!(
            Unanswered::at(made, made + ASK_AGAIN_AFTER_MS),
            Unanswered::AskAgain
        );
        assert_eq!(
            Unanswered::at(made, made + GIVE_UP_AFTER_MS - 1),
            Unanswered::AskAgain
        );
        assert_eq!(
            Unanswered::at(made, made + GIVE_UP_AFTER_MS),
            Unanswered::GiveUp
        );
        // A clock behind the row's: wait.
        assert_eq!(Unanswered::at(made, made - 60_000), Unanswered::Wait);
        // Within the day the provider keeps a key.
        assert!(Unanswered::at(made, made + 24 * 3_600_000 - 1) == Unanswered::GiveUp);
    }
}
