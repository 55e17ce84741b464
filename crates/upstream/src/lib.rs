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
//! Each modality has a seam — a trait every channel format of the modality implements
//! ([`speech::Synthesizer`], [`recognition::Recognizer`], [`embeddings::Embedder`],
//! [`genai::TextGenerator`], [`tasks::VideoTasks`]) — so that a model may list channels of
//! different formats and the gateway calls them alike.
//!
//! Formats: `openai-embeddings` ([`embeddings`]); speech `t2a` ([`t2a`]) and `openai-speech`
//! ([`openai_speech`]); recognition `stt` ([`stt`]) and `openai-transcription`
//! ([`openai_transcription`]); the video task formats `ark` and `generic-video` ([`tasks`]);
//! native text generation `genai` ([`genai`]). [`registry`] is the one table of them: a format's
//! name, modality and adapter.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod client;
pub mod common;
pub mod embeddings;
pub mod error;
pub mod genai;
pub mod multipart;
pub mod openai_speech;
pub mod openai_transcription;
pub mod recognition;
pub mod registry;
pub mod resolve;
pub mod speech;
pub mod stt;
pub mod t2a;
pub mod tasks;

pub use client::{Body, ClientConfig, Endpoint, HttpClient, Timeouts, body_stream, full_body};
pub use common::Answer;
pub use error::{Phase, UpstreamError};
pub use resolve::{AddressGuard, Resolver};
