//! # tollgate-images
//!
//! The OpenAI Images API (`/v1/images/generations`, `/v1/images/edits`,
//! `/v1/images/variations`; docs/api.md §2.13),
//! sans-IO: what the OpenAI SDKs' `client.images` sends and reads.
//!
//! - [`request`]: [`ImageRequest`], the body of a generation (JSON) or the text fields of an
//!   edit's form, checked into [`Checked`] against the rules of the model's [`Family`]; an
//!   unknown field is refused by name, as OpenAI does.
//! - [`family`]: [`Family`], one row per kind of image model (its sizes, qualities, largest
//!   `n`, streaming, `response_format`) — the facts a check needs, in one table.
//! - [`size`]: [`Size`], `WIDTHxHEIGHT`.
//! - [`words`]: the values its fields take ([`Quality`], [`OutputFormat`], …).
//! - [`response`]: [`ImagesResponse`] and its [`ImageUsage`]; the stream's events
//!   ([`StreamEvent`]: `image_generation.partial_image`, `…completed`, and the edits' twins).
//!
//! What an image costs is `tollgate-metering`'s (`image`); which bytes are an image,
//! `tollgate-probe`'s.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod family;
pub mod request;
pub mod response;
pub mod size;
pub mod words;

pub use family::{Family, InputRule, Operation, Pricing};
pub use request::{Checked, FieldError, ImageRequest, Rule};
pub use response::{Image, ImageUsage, ImagesResponse, StreamEvent};
pub use size::Size;
pub use words::{
    Background, InputFidelity, Moderation, OutputFormat, Quality, ResponseFormat, Style,
};
