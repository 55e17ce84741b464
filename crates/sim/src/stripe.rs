//! A simulated Stripe, as far as a top-up needs it (docs/decisions.md, "Payments"; Stripe's API
//! reference): the same form bodies and objects as `tollgate-stripe`, and signed webhook
//! deliveries with Stripe's retries and, on a knob, duplicates — so the whole flow, money
//! included, is tested here.
//!
//! * `POST /v1/checkout/sessions` (a Bearer `sk_…` key; `Idempotency-Key` honoured): an open
//!   session whose `url` is the simulator's own checkout page, `GET /checkout/{id}`;
//! * `POST /checkout/{id}/pay` (the page's button; `card=4000000000000002` is declined): the
//!   session completes, a customer, card, PaymentIntent and charge are made, and
//!   `checkout.session.completed` and `payment_intent.succeeded` are delivered; the browser is
//!   sent to the session's `success_url`;
//! * `GET /v1/checkout/sessions/{id}`; `POST /v1/checkout/sessions/{id}/expire`:
//!   `checkout.session.expired`;
//! * `POST /v1/payment_intents` (off-session, confirmed at once): `payment_intent.succeeded`,
//!   or, for a customer whose card the knob declines, 402 `card_declined` and
//!   `payment_intent.payment_failed`; `GET /v1/payment_intents/{id}`;
//! * `POST /v1/refunds` (`payment_intent`, `amount`): `charge.refunded` with the running total;
//! * `POST /v1/webhook_endpoints` (`url`): where events go; the answer's `secret` signs them
//!   ([`WEBHOOK_SECRET`]);
//! * for tests: `POST /_sim/stripe/disputes` (`payment_intent`, `amount`) opens a chargeback,
//!   `POST /_sim/stripe/disputes/{id}/close` (`status`) closes it, `PUT /_sim/stripe` sets
//!   the delivery knobs ([`StripeKnobs`]: also off-session calls lost on the way in or their
//!   answers on the way out), `GET /_sim/stripe/deliveries` lists every attempt,
//!   `GET /_sim/stripe/payment_intents` every PaymentIntent made.
//!
//! A delivery that is not answered 2xx is tried again after 50 ms, doubling, up to
//! [`StripeKnobs::attempts`] times (Stripe's schedule is hours; the shape is the same).

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tollgate_stripe::object::{
    ApiError, Charge, CheckoutSession, Dispute, ErrorDetail, PaymentIntent,
};
use tollgate_stripe::{Event, WebhookSecret, signature};

/// The signing secret of every webhook endpoint of the simulated Stripe.
pub const WEBHOOK_SECRET: &str = "whsec_tollgate_simulator_0123456789abcdef";
/// The card number the checkout page declines (Stripe's test card of a generic decline).
pub const DECLINED_CARD: &str = "4000000000000002";

/// How events are delivered (`PUT /_sim/stripe`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StripeKnobs {
    /// Each event is delivered this many more times after it was accepted (a redelivery).
    pub duplicates: u32,
    /// Attempts per delivery before it is given up.
    pub attempts: u32,
    /// Off-session payments of these customers are declined.
    pub decline_customers: Vec<String>,
    /// Answer every new Checkout Session with this as its page (a provider that lies: a
    /// `javascript:` URL, an internal address).
    pub checkout_url: Option<String>,
    /// Hold events back until released (`POST /_sim/stripe/release`, which turns this off),
    /// then deliver them in reverse order.
    pub hold_events: bool,
    /// Off-session payments of these customers never reach the provider, one call for each
    /// time a customer is listed: 503, nothing made, nothing kept under the idempotency key.
    #[serde(default)]
    pub lose_off_session: Vec<String>,
    /// Off-session payments of these customers are made, but their answer is lost on the way
    /// back, one call for each time a customer is listed: 503, while the idempotency key keeps
    /// the real answer, as Stripe's does.
    #[serde(default)]
    pub drop_off_session_answers: Vec<String>,
}

impl Default for StripeKnobs {
    fn default() -> StripeKnobs {
        StripeKnobs {
            duplicates: 0,
            attempts: 6,
            decline_customers: Vec::new(),
            checkout_url: None,
            hold_events: false,
            lose_off_session: Vec::new(),
            drop_off_session_answers: Vec::new(),
        }
    }
}

/// One delivery attempt, as `GET /_sim/stripe/deliveries` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// The event.
    pub event: String,
    /// Its type.
    pub kind: String,
    /// The receiver's status, 0 when it did not answer.
    pub status: u16,
}

/// An answer of the simulated Stripe.
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Bytes,
    pub location: Option<String>,
}

impl Answer {
    fn json<T: Serialize>(status: u16, value: &T) -> Answer {
        Answer {
            status,
            content_type: "application/json",
            body: Bytes::from(serde_json::to_vec(value).unwrap_or_default()),
            location: None,
        }
    }

    fn error(status: u16, kind: &str, code: Option<&str>, message: &str) -> Answer {
        Answer::json(
            status,
            &ApiError {
                error: ErrorDetail {
                    kind: kind.to_owned(),
                    code: code.map(str::to_owned),
                    message: Some(message.to_owned()),
                },
            },
        )
    }
}

#[derive(Debug, Clone)]
struct Session {
    object: CheckoutSession,
    success_url: String,
    cancel_url: String,
    intent_metadata: BTreeMap<String, String>,
    email: Option<String>,
}

#[derive(Debug, Default)]
struct Books {
    knobs: StripeKnobs,
    sessions: BTreeMap<String, Session>,
    intents: BTreeMap<String, PaymentIntent>,
    charges: BTreeMap<String, Charge>,
    disputes: BTreeMap<String, Dispute>,
    /// Idempotency keys and the answer they gave.
    idempotent: BTreeMap<String, (u16, Bytes)>,
    endpoints: Vec<String>,
    held: Vec<Event>,
    attempts: Vec<Attempt>,
    next: u64,
    /// This simulator's start, in base 36: the ids' first part.
    run: String,
}

impl Books {
    /// A new id: Stripe's are unique across its accounts and time, so a simulator's must not
    /// repeat another run's in a shared database either.
    fn id(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}_sim{}{:06}", self.run, self.next)
    }
}

/// The simulated Stripe's state.
#[derive(Debug, Clone)]
pub(crate) struct Stripe {
    base_url: String,
    books: Arc<Mutex<Books>>,
}

fn form(body: &[u8]) -> BTreeMap<String, String> {
    form_urlencoded::parse(body).into_owned().collect()
}

/// The entries of `form` under `prefix[…]`, by the key in brackets.
fn nested(form: &BTreeMap<String, String>, prefix: &str) -> BTreeMap<String, String> {
    form.iter()
        .filter_map(|(k, v)| {
            let key = k
                .strip_prefix(prefix)?
                .strip_prefix('[')?
                .strip_suffix(']')?;
            (!key.contains('[')).then(|| (key.to_owned(), v.clone()))
        })
        .collect()
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl Stripe {
    pub(crate) fn new(base_url: String) -> Stripe {
        Stripe {
            base_url,
            books: Arc::new(Mutex::new(Books {
                run: run_tag(),
                ..Books::default()
            })),
        }
    }

    fn books(&self) -> std::sync::MutexGuard<'_, Books> {
        match self.books.lock() {
            Ok(books) => books,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Whether this module answers `path`.
    pub(crate) fn serves(path: &str) -> bool {
        path.starts_with("/v1/checkout/")
            || path.starts_with("/v1/payment_intents")
            || path == "/v1/refunds"
            || path == "/v1/webhook_endpoints"
            || path.starts_with("/checkout/")
            || path.starts_with("/_sim/stripe")
    }

    /// Answers one request.
    pub(crate) fn handle(
        &self,
        method: &http::Method,
        path: &str,
        headers: &http::HeaderMap,
        body: &[u8],
    ) -> Answer {
        let api = path.starts_with("/v1/");
        if api {
            let key = headers
                .get(http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or_default();
            if !(key.starts_with("sk_") || key.starts_with("rk_")) {
                return Answer::error(
                    401,
                    "invalid_request_error",
                    None,
                    "Invalid API Key provided",
                );
            }
        }
        let idempotency = headers
            .get("idempotency-key")
            .and_then(|v| v.to_str().ok())
            .filter(|_| *method == http::Method::POST && api)
            .map(|k| format!("{path} {k}"));
        // An off-session payment's customer, for the knobs that lose its call or its answer.
        let off_session = (*method == http::Method::POST && path == "/v1/payment_intents")
            .then(|| form(body).get("customer").cloned().unwrap_or_default());
        if let Some(customer) = &off_session
            && take(&mut self.books().knobs.lose_off_session, customer)
        {
            return Answer::error(503, "api_error", None, "The request never arrived");
        }
        if let Some(key) = &idempotency
            && let Some((status, body)) = self.books().idempotent.get(key).cloned()
        {
            return Answer {
                status,
                content_type: "application/json",
                body,
                location: None,
            };
        }
        let fields = form(body);
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let answer = match (method.as_str(), segments.as_slice()) {
            ("POST", ["v1", "checkout", "sessions"]) => self.create_session(&fields),
            ("POST", ["v1", "checkout", "sessions", id, "expire"]) => self.expire(id),
            ("GET", ["v1", "checkout", "sessions", id]) => match self.books().sessions.get(*id) {
                Some(session) => Answer::json(200, &session.object),
                None => Answer::error(
                    404,
                    "invalid_request_error",
                    Some("resource_missing"),
                    &format!("No such checkout.session: '{id}'"),
                ),
            },
            ("GET", ["checkout", id]) => self.page(id),
            ("POST", ["checkout", id, "pay"]) => self.pay(id, &fields),
            ("POST", ["v1", "payment_intents"]) => self.off_session(&fields),
            ("GET", ["v1", "payment_intents", id]) => match self.books().intents.get(*id) {
                Some(intent) => Answer::json(200, intent),
                None => Answer::error(
                    404,
                    "invalid_request_error",
                    Some("resource_missing"),
                    &format!("No such payment_intent: '{id}'"),
                ),
            },
            ("POST", ["v1", "refunds"]) => self.refund(&fields),
            ("POST", ["v1", "webhook_endpoints"]) => {
                let url = fields.get("url").cloned().unwrap_or_default();
                let mut books = self.books();
                let id = books.id("we");
                books.endpoints.push(url.clone());
                Answer::json(
                    200,
                    &serde_json::json!({"id": id, "object": "webhook_endpoint", "url": url,
                        "status": "enabled", "secret": WEBHOOK_SECRET}),
                )
            }
            ("POST", ["_sim", "stripe", "disputes"]) => self.open_dispute(&fields),
            ("POST", ["_sim", "stripe", "disputes", id, "close"]) => {
                self.close_dispute(id, &fields)
            }
            ("POST", ["_sim", "stripe", "release"]) => {
                let held = {
                    let mut books = self.books();
                    books.knobs.hold_events = false;
                    std::mem::take(&mut books.held)
                };
                // Newest first, each delivered (to every endpoint) before the next.
                let this = self.clone();
                tokio::spawn(async move {
                    for event in held.into_iter().rev() {
                        this.deliver_now(event).await;
                    }
                });
                Answer::json(200, &serde_json::json!({}))
            }
            ("PUT", ["_sim", "stripe"]) => match serde_json::from_slice::<StripeKnobs>(body) {
                Ok(knobs) => {
                    self.books().knobs = knobs.clone();
                    Answer::json(200, &knobs)
                }
                Err(e) => Answer::error(400, "invalid_request_error", None, &e.to_string()),
            },
            ("GET", ["_sim", "stripe", "deliveries"]) => Answer::json(200, &self.books().attempts),
            ("GET", ["_sim", "stripe", "payment_intents"]) => {
                let intents: Vec<PaymentIntent> = self.books().intents.values().cloned().collect();
                Answer::json(200, &intents)
            }
            _ => Answer::error(
                404,
                "invalid_request_error",
                None,
                &format!("Unrecognized request URL ({method}: {path})"),
            ),
        };
        if let Some(key) = idempotency {
            self.books()
                .idempotent
                .insert(key, (answer.status, answer.body.clone()));
        }
        if let Some(customer) = &off_session
            && take(&mut self.books().knobs.drop_off_session_answers, customer)
        {
            return Answer::error(503, "api_error", None, "The answer was lost");
        }
        answer
    }

    fn create_session(&self, fields: &BTreeMap<String, String>) -> Answer {
        let missing = |name: &str| {
            Answer::error(
                400,
                "invalid_request_error",
                Some("parameter_missing"),
                &format!("Missing required param: {name}."),
            )
        };
        if fields.get("mode").map(String::as_str) != Some("payment") {
            return missing("mode");
        }
        let Some(amount) = fields
            .get("line_items[0][price_data][unit_amount]")
            .and_then(|a| a.parse::<i64>().ok())
            .filter(|a| *a > 0)
        else {
            return missing("line_items[0][price_data][unit_amount]");
        };
        let quantity = fields
            .get("line_items[0][quantity]")
            .and_then(|q| q.parse::<i64>().ok())
            .unwrap_or(1);
        let Some(currency) = fields.get("line_items[0][price_data][currency]") else {
            return missing("line_items[0][price_data][currency]");
        };
        let (Some(success_url), Some(cancel_url)) =
            (fields.get("success_url"), fields.get("cancel_url"))
        else {
            return missing("success_url");
        };
        let mut books = self.books();
        let id = books.id("cs_test");
        let object = CheckoutSession {
            id: id.clone(),
            url: Some(
                books
                    .knobs
                    .checkout_url
                    .clone()
                    .unwrap_or_else(|| format!("{}/checkout/{id}", self.base_url)),
            ),
            amount_total: Some(amount * quantity),
            currency: Some(currency.to_ascii_lowercase()),
            client_reference_id: fields.get("client_reference_id").cloned(),
            customer: fields.get("customer").cloned(),
            metadata: nested(fields, "metadata"),
            payment_intent: None,
            payment_status: "unpaid".into(),
            status: Some("open".into()),
        };
        books.sessions.insert(
            id,
            Session {
                object: object.clone(),
                success_url: success_url.clone(),
                cancel_url: cancel_url.clone(),
                intent_metadata: nested(fields, "payment_intent_data[metadata]"),
                email: fields.get("customer_email").cloned(),
            },
        );
        Answer::json(200, &object)
    }

    fn page(&self, id: &str) -> Answer {
        let books = self.books();
        let Some(session) = books.sessions.get(id) else {
            return Answer::error(404, "invalid_request_error", None, "No such checkout");
        };
        let amount = session.object.amount_total.unwrap_or(0);
        let currency = session.object.currency.clone().unwrap_or_default();
        let state = session.object.status.clone().unwrap_or_default();
        let email = session.email.clone().unwrap_or_default();
        let html = format!(
            "<!doctype html><html><head><meta charset=utf-8><title>Simulated checkout</title>\
             <meta name=viewport content=\"width=device-width\"></head><body>\
             <h1>Simulated checkout</h1><p id=amount>{amount} {currency} (minor units)</p>\
             <p id=state>{state}</p><p id=email>{email}</p>\
             <form method=post action=\"/checkout/{id}/pay\">\
             <label>Card <input name=card id=card value=4242424242424242></label>\
             <button id=pay type=submit>Pay</button></form>\
             <p><a id=cancel href=\"{cancel}\">Cancel</a></p></body></html>",
            amount = amount,
            currency = escape(&currency),
            state = escape(&state),
            email = escape(&email),
            id = escape(id),
            cancel = escape(&session.cancel_url),
        );
        Answer {
            status: 200,
            content_type: "text/html; charset=utf-8",
            body: Bytes::from(html),
            location: None,
        }
    }

    fn pay(&self, id: &str, fields: &BTreeMap<String, String>) -> Answer {
        let mut events = Vec::new();
        let location = {
            let mut books = self.books();
            let Some(session) = books.sessions.get(id).cloned() else {
                return Answer::error(404, "invalid_request_error", None, "No such checkout");
            };
            if session.object.status.as_deref() != Some("open") {
                return Answer::error(400, "invalid_request_error", None, "This checkout is over");
            }
            if fields.get("card").map(String::as_str) == Some(DECLINED_CARD) {
                return Answer {
                    status: 402,
                    content_type: "text/html; charset=utf-8",
                    body: Bytes::from_static(b"<p id=declined>Your card was declined.</p>"),
                    location: None,
                };
            }
            let customer = match &session.object.customer {
                Some(customer) => customer.clone(),
                None => books.id("cus"),
            };
            let card = books.id("pm");
            let intent_id = books.id("pi");
            let charge_id = books.id("ch");
            let amount = session.object.amount_total.unwrap_or(0);
            let currency = session.object.currency.clone().unwrap_or_default();
            let intent = PaymentIntent {
                id: intent_id.clone(),
                amount,
                amount_received: Some(amount),
                currency: currency.clone(),
                customer: Some(customer.clone()),
                payment_method: Some(card),
                metadata: session.intent_metadata.clone(),
                status: "succeeded".into(),
                last_payment_error: None,
            };
            books.charges.insert(
                charge_id.clone(),
                Charge {
                    id: charge_id,
                    amount,
                    amount_refunded: 0,
                    currency,
                    payment_intent: Some(intent_id.clone()),
                },
            );
            books.intents.insert(intent_id.clone(), intent.clone());
            let mut object = session.object.clone();
            object.status = Some("complete".into());
            object.payment_status = "paid".into();
            object.payment_intent = Some(intent_id);
            object.customer = Some(customer);
            object.url = None;
            if let Some(stored) = books.sessions.get_mut(id) {
                stored.object = object.clone();
            }
            events.push(event(&mut books, "checkout.session.completed", &object));
            events.push(event(&mut books, "payment_intent.succeeded", &intent));
            session.success_url
        };
        for e in events {
            self.deliver(e);
        }
        Answer {
            status: 303,
            content_type: "text/plain",
            body: Bytes::new(),
            location: Some(location),
        }
    }

    fn expire(&self, id: &str) -> Answer {
        let (object, e) = {
            let mut books = self.books();
            let Some(session) = books.sessions.get_mut(id) else {
                return Answer::error(404, "invalid_request_error", None, "No such checkout");
            };
            if session.object.status.as_deref() != Some("open") {
                return Answer::error(
                    400,
                    "invalid_request_error",
                    None,
                    "Only an open session can expire",
                );
            }
            session.object.status = Some("expired".into());
            session.object.url = None;
            let object = session.object.clone();
            let e = event(&mut books, "checkout.session.expired", &object);
            (object, e)
        };
        self.deliver(e);
        Answer::json(200, &object)
    }

    fn off_session(&self, fields: &BTreeMap<String, String>) -> Answer {
        let (answer, e) = {
            let mut books = self.books();
            let (Some(amount), Some(currency), Some(customer)) = (
                fields.get("amount").and_then(|a| a.parse::<i64>().ok()),
                fields.get("currency"),
                fields.get("customer"),
            ) else {
                return Answer::error(
                    400,
                    "invalid_request_error",
                    Some("parameter_missing"),
                    "amount, currency and customer are required",
                );
            };
            let id = books.id("pi");
            let declined = books.knobs.decline_customers.contains(customer);
            let mut intent = PaymentIntent {
                id: id.clone(),
                amount,
                amount_received: (!declined).then_some(amount),
                currency: currency.clone(),
                customer: Some(customer.clone()),
                payment_method: fields.get("payment_method").cloned(),
                metadata: nested(fields, "metadata"),
                status: "succeeded".into(),
                last_payment_error: None,
            };
            if declined {
                let error = ErrorDetail {
                    kind: "card_error".into(),
                    code: Some("card_declined".into()),
                    message: Some("Your card was declined.".into()),
                };
                intent.status = "requires_payment_method".into();
                intent.last_payment_error = Some(error.clone());
                books.intents.insert(id, intent.clone());
                let e = event(&mut books, "payment_intent.payment_failed", &intent);
                (Answer::json(402, &ApiError { error }), e)
            } else {
                let charge_id = books.id("ch");
                books.charges.insert(
                    charge_id.clone(),
                    Charge {
                        id: charge_id,
                        amount,
                        amount_refunded: 0,
                        currency: currency.clone(),
                        payment_intent: Some(id.clone()),
                    },
                );
                books.intents.insert(id, intent.clone());
                let e = event(&mut books, "payment_intent.succeeded", &intent);
                (Answer::json(200, &intent), e)
            }
        };
        self.deliver(e);
        answer
    }

    fn refund(&self, fields: &BTreeMap<String, String>) -> Answer {
        let (answer, e) = {
            let mut books = self.books();
            let intent = fields.get("payment_intent").cloned().unwrap_or_default();
            let Some(charge) = books
                .charges
                .values_mut()
                .find(|c| c.payment_intent.as_deref() == Some(intent.as_str()))
            else {
                return Answer::error(
                    404,
                    "invalid_request_error",
                    Some("resource_missing"),
                    "No such payment_intent",
                );
            };
            let left = charge.amount - charge.amount_refunded;
            let amount = fields
                .get("amount")
                .and_then(|a| a.parse::<i64>().ok())
                .unwrap_or(left);
            if amount <= 0 || amount > left {
                return Answer::error(
                    400,
                    "invalid_request_error",
                    Some("amount_too_large"),
                    "Refund amount is greater than unrefunded amount on charge",
                );
            }
            charge.amount_refunded += amount;
            let charge = charge.clone();
            let id = books.id("re");
            let e = event(&mut books, "charge.refunded", &charge);
            (
                Answer::json(
                    200,
                    &serde_json::json!({"id": id, "object": "refund", "amount": amount,
                        "charge": charge.id, "payment_intent": intent, "status": "succeeded"}),
                ),
                e,
            )
        };
        self.deliver(e);
        answer
    }

    fn open_dispute(&self, fields: &BTreeMap<String, String>) -> Answer {
        let (dispute, e) = {
            let mut books = self.books();
            let intent = fields.get("payment_intent").cloned().unwrap_or_default();
            let Some(charge) = books
                .charges
                .values()
                .find(|c| c.payment_intent.as_deref() == Some(intent.as_str()))
                .cloned()
            else {
                return Answer::error(404, "invalid_request_error", None, "No such payment_intent");
            };
            let id = books.id("dp");
            let dispute = Dispute {
                id: id.clone(),
                amount: fields
                    .get("amount")
                    .and_then(|a| a.parse().ok())
                    .unwrap_or(charge.amount),
                currency: charge.currency,
                charge: Some(charge.id),
                payment_intent: Some(intent),
                status: "needs_response".into(),
            };
            books.disputes.insert(id, dispute.clone());
            let e = event(&mut books, "charge.dispute.created", &dispute);
            (dispute, e)
        };
        self.deliver(e);
        Answer::json(200, &dispute)
    }

    fn close_dispute(&self, id: &str, fields: &BTreeMap<String, String>) -> Answer {
        let (dispute, e) = {
            let mut books = self.books();
            let Some(dispute) = books.disputes.get_mut(id) else {
                return Answer::error(404, "invalid_request_error", None, "No such dispute");
            };
            dispute.status = fields
                .get("status")
                .cloned()
                .unwrap_or_else(|| "lost".into());
            let dispute = dispute.clone();
            let e = event(&mut books, "charge.dispute.closed", &dispute);
            (dispute, e)
        };
        self.deliver(e);
        Answer::json(200, &dispute)
    }

    /// Sends `event` to every endpoint in a task of its own (or holds it back, on the knob).
    fn deliver(&self, event: Event) {
        {
            let mut books = self.books();
            if books.knobs.hold_events {
                books.held.push(event);
                return;
            }
        }
        let this = self.clone();
        tokio::spawn(async move { this.deliver_now(event).await });
    }

    /// Sends `event` to every endpoint at once, signed: each tried again until answered 2xx,
    /// then delivered again as often as the knob says.
    async fn deliver_now(&self, event: Event) {
        let (endpoints, knobs) = {
            let books = self.books();
            (books.endpoints.clone(), books.knobs.clone())
        };
        let Ok(body) = serde_json::to_vec(&event) else {
            return;
        };
        let body = Bytes::from(body);
        let mut sends = Vec::new();
        for url in endpoints {
            let books = self.books.clone();
            let body = body.clone();
            let (id, kind) = (event.id.clone(), event.kind.clone());
            let knobs = knobs.clone();
            sends.push(tokio::spawn(async move {
                let mut accepted = 0;
                let mut pause = Duration::from_millis(50);
                for _ in 0..knobs.attempts.max(1) {
                    let status = post(&url, &body).await;
                    if let Ok(mut books) = books.lock() {
                        books.attempts.push(Attempt {
                            event: id.clone(),
                            kind: kind.clone(),
                            status,
                        });
                    }
                    if (200..300).contains(&status) {
                        accepted += 1;
                        if accepted > knobs.duplicates {
                            break;
                        }
                        continue;
                    }
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                }
            }));
        }
        for send in sends {
            let _ = send.await;
        }
    }
}

/// An event about `object`, its id new.
fn event<T: Serialize>(books: &mut Books, kind: &str, object: &T) -> Event {
    Event {
        id: books.id("evt"),
        kind: kind.to_owned(),
        created: now(),
        livemode: false,
        data: tollgate_stripe::event::EventData {
            object: serde_json::to_value(object).unwrap_or_default(),
        },
    }
}

/// Posts one delivery, signed now; the receiver's status, 0 without one.
async fn post(url: &str, body: &Bytes) -> u16 {
    use http_body_util::{BodyExt, Full};
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    let Ok(secret) = WEBHOOK_SECRET.parse::<WebhookSecret>() else {
        return 0;
    };
    let Ok(request) = http::Request::post(url)
        .header(
            http::header::CONTENT_TYPE,
            "application/json; charset=utf-8",
        )
        .header(
            "stripe-signature",
            signature::header(&[&secret], now(), body),
        )
        .header(
            http::header::USER_AGENT,
            "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
        )
        .body(Full::new(body.clone()))
    else {
        return 0;
    };
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let sent = tokio::time::timeout(Duration::from_secs(10), async {
        let response = client.request(request).await.ok()?;
        let status = response.status().as_u16();
        let _ = response.into_body().collect().await;
        Some(status)
    })
    .await;
    sent.ok().flatten().unwrap_or(0)
}

/// The nanoseconds since the epoch in base 36.
fn run_tag() -> String {
    let mut n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let mut tag = Vec::new();
    while n > 0 {
        tag.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[(n % 36) as usize]);
        n /= 36;
    }
    tag.reverse();
    String::from_utf8(tag).unwrap_or_default()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Takes one listing of `customer` from a knob's list: whether there was one.
fn take(listed: &mut Vec<String>, customer: &str) -> bool {
    match listed.iter().position(|c| c == customer) {
        Some(at) => {
            listed.remove(at);
            true
        }
        None => false,
    }
}
