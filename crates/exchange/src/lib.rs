//! # tollgate-exchange
//!
//! One exchange with a client, as every route of the gateway and of the operator's side speaks
//! it (`docs/architecture.md`, "Crates by concern"):
//!
//! - what the client sends: a [`body`] read under its limit and pace, JSON decoded with errors
//!   that name the field;
//! - what it is answered: [`response`] bodies, and [`errors`] — one meaning rendered in the
//!   error shape of the endpoint's own vendor;
//! - how a route describes both in the OpenAPI document ([`route_doc`]);
//! - a relayed frame's one edit, a string [`splice`]d in place.
//!
//! It knows no configuration, no state and no request flow: those stand on it.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod body;
pub mod errors;
pub mod response;
pub mod route_doc;
pub mod splice;
