//! Calls to Stripe's API (docs/decisions.md, "Payments"): form bodies from `tollgate-stripe`,
//! the secret key as a bearer token, an `Idempotency-Key` on every creation (the gateway's
//! payment id, so a retried call is the same object), sent by the one address rule
//! (`tollgate_settings::outbound`) and read within a size limit.

use bytes::Bytes;
use http::{Method, Request, header};
use http_body_util::{BodyExt, Limited};
use serde::de::DeserializeOwned;
use tollgate_request::State;
use tollgate_settings::payments::StripeSettings;
use tollgate_stripe::object::{ApiError, CheckoutSession, ErrorDetail, PaymentIntent};
use tollgate_stripe::request::{CheckoutRequest, OffSessionRequest};

/// The most of an answer read: Stripe's objects are a few kilobytes.
const MAX_ANSWER: usize = 1 << 20;

/// Why a call did not give the object asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// The provider answered with an error: a declined card, a bad key, a bad request.
    #[error("the payment provider refused ({status}): {}", .error.message.as_deref().unwrap_or(&.error.kind))]
    Refused {
        /// Its status.
        status: u16,
        /// What it said.
        error: ErrorDetail,
    },
    /// No answer (refused by the address rule, a timeout, a connection that failed).
    #[error("the payment provider could not be reached: {0}")]
    Unreachable(String),
    /// An answer that is not the object asked for.
    #[error("the payment provider's answer could not be read: {0}")]
    Unreadable(String),
}

impl ProviderError {
    /// Worth trying again later (no answer, or the provider busy or failing) rather than final.
    pub fn is_transient(&self) -> bool {
        match self {
            ProviderError::Unreachable(_) => true,
            ProviderError::Refused { status, .. } => *status == 429 || *status >= 500,
            ProviderError::Unreadable(_) => false,
        }
    }
}

/// `POST /v1/checkout/sessions`.
pub async fn create_checkout(
    state: &State,
    stripe: &StripeSettings,
    checkout: &CheckoutRequest<'_>,
) -> Result<CheckoutSession, ProviderError> {
    let form = checkout.form();
    call(
        state,
        stripe,
        Method::POST,
        "/v1/checkout/sessions",
        Some((form, checkout.payment_id)),
    )
    .await
}

/// `POST /v1/payment_intents`, off-session and confirmed: an automatic top-up. A declined card
/// is [`ProviderError::Refused`] with Stripe's `card_error`.
pub async fn create_off_session(
    state: &State,
    stripe: &StripeSettings,
    intent: &OffSessionRequest<'_>,
) -> Result<PaymentIntent, ProviderError> {
    let form = intent.form();
    call(
        state,
        stripe,
        Method::POST,
        "/v1/payment_intents",
        Some((form, intent.payment_id)),
    )
    .await
}

/// `GET /v1/payment_intents/{id}`: the provider's own word on a payment an event names.
pub async fn payment_intent(
    state: &State,
    stripe: &StripeSettings,
    id: &str,
) -> Result<PaymentIntent, ProviderError> {
    if !id.starts_with("pi_") || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(ProviderError::Unreadable(format!(
            "{id:?} is not a PaymentIntent id"
        )));
    }
    call(
        state,
        stripe,
        Method::GET,
        &format!("/v1/payment_intents/{id}"),
        None,
    )
    .await
}

async fn call<T: DeserializeOwned>(
    state: &State,
    stripe: &StripeSettings,
    method: Method,
    path: &str,
    form: Option<(String, &str)>,
) -> Result<T, ProviderError> {
    let mut request = Request::builder()
        .method(method)
        .uri(format!("{}{path}", stripe.base_url))
        .header(
            header::AUTHORIZATION,
            format!("Bearer {}", stripe.secret_key()),
        )
        .header(
            header::USER_AGENT,
            concat!("tollgate/", env!("CARGO_PKG_VERSION")),
        );
    let body = match form {
        Some((form, idempotency_key)) => {
            request = request
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header("idempotency-key", idempotency_key);
            Bytes::from(form)
        }
        None => Bytes::new(),
    };
    let request = request
        .body(tollgate_upstream::full_body(body))
        .map_err(|e| ProviderError::Unreachable(format!("not sent: {e}")))?;
    let timeouts = tollgate_upstream::Timeouts {
        connect: stripe.timeout,
        first_byte: stripe.timeout,
        idle: stripe.timeout,
    };
    let response = state
        .outbound
        .send(request, &timeouts)
        .await
        .map_err(|e| ProviderError::Unreachable(e.to_string()))?;
    let status = response.status();
    let body = Limited::new(response.into_body(), MAX_ANSWER)
        .collect()
        .await
        .map_err(|e| ProviderError::Unreachable(format!("the answer broke off: {e}")))?
        .to_bytes();
    if status.is_success() {
        return serde_json::from_slice(&body).map_err(|e| ProviderError::Unreadable(e.to_string()));
    }
    match serde_json::from_slice::<ApiError>(&body) {
        Ok(refused) => Err(ProviderError::Refused {
            status: status.as_u16(),
            error: refused.error,
        }),
        Err(_) => Err(ProviderError::Unreadable(format!(
            "status {status} with a body that is not Stripe's error"
        ))),
    }
}
