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
//! Three parts:
//!
//! - [`seams`]: one trait per modality, with the neutral types it speaks, that every channel
//!   format of the modality implements ([`seams::speech::Synthesizer`],
//!   [`seams::recognition::Recognizer`], [`seams::embeddings::Embedder`],
//!   [`seams::genai::TextGenerator`], [`seams::tasks::VideoTasks`]) — so that a model
//!   may list channels of different formats and the gateway calls them alike;
//! - [`adapters`]: one file per channel format — `openai-embeddings`, speech `t2a` and
//!   `openai-speech`, recognition `stt` and `openai-transcription`, the video task formats `ark`
//!   and `generic-video`, native text generation `genai`;
//! - [`common`]: what every adapter shares — the client, the error, multipart uploads, the
//!   resolver with its SSRF guard, refusals and `Retry-After`.
//!
//! [`formats`] names the formats and what each serves, with nothing to import (the gateway's
//! configuration and catalog hold a [`formats::Format`]); [`registry`] gives each its adapter, by
//! an exhaustive match.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod adapters;
pub mod common;
pub mod formats;
pub mod registry;
pub mod seams;

// The seams and the shared parts under the names they always had (`tollgate_upstream::seams::speech`,
// `::error`, …).
pub use common::{client, error, multipart, resolve};
pub use seams::{embeddings, genai, recognition, speech, tasks};

pub use client::{Body, ClientConfig, Endpoint, HttpClient, Timeouts, body_stream, full_body};
pub use common::Answer;
pub use error::{Phase, UpstreamError};
pub use resolve::{AddressGuard, Resolver};
