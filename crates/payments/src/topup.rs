//! A top-up a person starts in the portal (docs/decisions.md, "Payments"): the amount checked
//! against the configured range, a payment recorded with the balance it buys, then a Checkout
//! Session asked of the provider, where the person pays. Nothing is credited here: only the
//! provider's signed word that it was paid ([`crate::webhook`]) credits.

use crate::provider;
use rust_decimal::Decimal;
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_request::State;
use tollgate_settings::payments::StripeSettings;
use tollgate_store::{NewPayment, Payment, PaymentStatus};
use tollgate_stripe::request::CheckoutRequest;

/// Who asks, and where the provider sends them back to.
#[derive(Debug, Clone, Copy)]
pub struct Payer<'a> {
    /// The account topped up.
    pub account_id: &'a str,
    /// The portal person.
    pub person_id: &'a str,
    /// Their email, to prefill the provider's page.
    pub email: &'a str,
    /// The gateway's origin as the person reached it (`https://gw.example.com`).
    pub origin: &'a str,
}

/// The provider's settings, or the answer that there is none.
pub fn configured(state: &State) -> Result<&StripeSettings, ApiError> {
    state.payments.as_deref().ok_or_else(|| {
        ApiError::new(
            ErrorKind::NotFound,
            "Top-ups are not offered here: the operator has not configured a payment provider",
        )
        .code("payments_not_configured")
    })
}

/// `amount` (in the currency's major unit) in minor units, within the configured range.
pub fn checked_amount(stripe: &StripeSettings, amount: Decimal) -> Result<i64, ApiError> {
    let refuse = |why: String| {
        ApiError::new(ErrorKind::InvalidRequest, why)
            .param("amount")
            .code("invalid_amount")
    };
    let minor = stripe
        .currency
        .to_minor(amount)
        .map_err(|e| refuse(format!("amount: {e}")))?;
    if !(stripe.min_minor..=stripe.max_minor).contains(&minor) {
        return Err(refuse(format!(
            "amount must be from {} to {} {}",
            stripe.currency.from_minor(stripe.min_minor),
            stripe.currency.from_minor(stripe.max_minor),
            stripe.currency
        )));
    }
    Ok(minor)
}

/// Starts a top-up of `amount` for `payer`: the payment, open, with the provider's page to
/// send the person to (`checkout_url`). `save_card` keeps the card for automatic top-ups.
pub async fn start(
    state: &State,
    payer: Payer<'_>,
    amount: Decimal,
    save_card: bool,
) -> Result<Payment, ApiError> {
    // 1. The amount, and the balance it buys at the configured rate.
    let stripe = configured(state)?;
    let minor = checked_amount(stripe, amount)?;
    let units = stripe
        .units(minor)
        .map_err(|e| ApiError::internal("pricing a top-up", e))?;

    // 2. The payment, recorded before the provider is asked, so every event can find it.
    let store = &state.store;
    let payment = store
        .create_payment(&NewPayment {
            account_id: payer.account_id,
            provider: "stripe",
            automatic: false,
            person_id: Some(payer.person_id),
            currency: stripe.currency.code(),
            amount_minor: minor,
            amount: units,
        })
        .await
        .map_err(|e| ApiError::internal("recording a payment", e))?;

    // 3. The provider's checkout, for the account's customer once there is one.
    let customer = store
        .payment_method(payer.account_id)
        .await
        .map_err(|e| ApiError::internal("reading the account's customer", e))?
        .map(|(customer, _)| customer);
    let success_url = format!("{}/portal/#topups?paid={}", payer.origin, payment.id);
    let cancel_url = format!("{}/portal/#topups?cancelled={}", payer.origin, payment.id);
    let asked = CheckoutRequest {
        payment_id: &payment.id,
        account_id: payer.account_id,
        amount_minor: minor,
        currency: &stripe.currency,
        product_name: &stripe.product_name,
        success_url: &success_url,
        cancel_url: &cancel_url,
        customer: customer.as_deref(),
        customer_email: Some(payer.email),
        save_card: save_card && stripe.max_automatic_minor > 0,
    };
    let session = provider::create_checkout(state, stripe, &asked).await;
    let session = match session {
        // The page the person is sent to passes the address rule: never a `javascript:` URL
        // or an internal address from a provider that lies.
        Ok(session) => match session.url.clone() {
            Some(url) if state.outbound.check(&url).is_ok() => (session, url),
            _ => {
                let why = "the checkout has no page to pay on that may be opened";
                return Err(failed(state, &payment, why).await);
            }
        },
        Err(e) => return Err(failed(state, &payment, &e.to_string()).await),
    };
    let (session, url) = session;
    store
        .payment_started(
            &payment.id,
            Some((&session.id, &url)),
            session.payment_intent.as_deref(),
        )
        .await
        .map_err(|e| ApiError::internal("recording a checkout", e))?;
    Ok(Payment {
        checkout_id: Some(session.id),
        checkout_url: Some(url),
        intent_id: session.payment_intent,
        ..payment
    })
}

/// Marks `payment` failed with `why` and answers 502 in words a person can act on.
async fn failed(state: &State, payment: &Payment, why: &str) -> ApiError {
    tracing::warn!(payment = %payment.id, error = why, "a top-up could not start");
    if let Err(e) = state
        .store
        .payment_not_made(&payment.id, PaymentStatus::Failed, Some(why))
        .await
    {
        tracing::error!(payment = %payment.id, error = %e, "a failed top-up could not be recorded");
    }
    ApiError::new(
        ErrorKind::UpstreamFailed,
        format!("The payment provider could not start the top-up: {why}"),
    )
    .code("payment_provider_failed")
}
