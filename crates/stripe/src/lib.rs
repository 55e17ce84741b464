//! # tollgate-stripe
//!
//! Stripe's wire format, as far as topping up a balance needs it (docs/decisions.md,
//! "Payments"), sans-IO: the gateway and the simulator do the HTTP, this crate says what goes
//! in it and what comes out.
//!
//! * [`request`]: the form bodies of a Checkout Session (a person pays on Stripe's page) and an
//!   off-session PaymentIntent (an automatic top-up on the saved card);
//! * [`object`]: what Stripe answers with;
//! * [`event`]: a webhook event read into what happened to the money ([`event::Happened`]);
//! * [`signature`]: `Stripe-Signature`, verified with the time passed in;
//! * [`money`]: currencies and their minor units.

pub mod event;
pub mod money;
pub mod object;
pub mod request;
pub mod signature;

pub use event::{Event, Happened, Paid};
pub use money::{Currency, MoneyError};
pub use signature::{SignatureError, WebhookSecret};
