//! # tollgate-upstream
//!
//! The HTTP side of tollgate: one shared client ([`HttpClient`]: hyper-util's pooled client over
//! rustls, HTTP/1.1 and HTTP/2, with connect, first-byte and idle-stream timeouts) and one adapter
//! per vendor format that speaks exactly what the vendor speaks (`reference/wire-formats.md`).
//!
//! This crate knows the protocol crates and `tollgate-sse`; it knows nothing of keys, balances or
//! the gateway. An adapter takes a typed request and an [`Endpoint`] (base URL and credential)
//! and returns a typed response or an [`UpstreamError`] that says whether anything reached the
//! upstream — which is what decides failover (DESIGN §6).
//!
//! Formats: `openai-embeddings` ([`embeddings`]), `t2a` ([`t2a`]), `stt` ([`stt`]), and the
//! video task formats `ark` and `generic-video` ([`tasks`]), and native text generation `genai`
//! ([`genai`]).

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod client;
pub mod embeddings;
mod error;
pub mod genai;
pub mod multipart;
pub mod resolve;
pub mod stt;
pub mod t2a;
pub mod tasks;

pub use client::{Body, ClientConfig, Endpoint, HttpClient, Timeouts, body_stream, full_body};
pub use error::{Phase, UpstreamError};
pub use resolve::{AddressGuard, Resolver};
