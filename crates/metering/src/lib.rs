//! # tollgate-metering
//!
//! How tollgate measures what it charges when the upstream's own figure is missing or covers
//! only part of the work (DESIGN §4, docs/api.md §8): sans-IO, the rules only. The gateway feeds
//! it what it measured — bytes the client's connection took, seconds it probed in a file, the
//! text it relayed, the figure the upstream reported — and it answers with a quantity and the
//! [`Basis`] the ledger row records. Nothing here reads a clock, a socket or the ledger, so
//! every rule is tested alone, against a model where one fits.
//!
//! - [`basis`]: [`Basis`], and the one fallback rule (the upstream's figure, else the local
//!   count, marked estimated);
//! - [`bound`]: the most a settlement may charge, whatever the upstream reports;
//! - [`StreamEnd`]: how a metered stream ended;
//! - [`speech`]: a synthesis stream's characters — whole, a departed client's share, a cut
//!   stream's nominal rate;
//! - [`recognition`]: a recognition stream's seconds;
//! - [`prompt`]: a text-generation prompt's estimate for its hold (counted and measured);
//! - [`text`]: a text-generation answer's tokens;
//! - [`session`]: a live voice session's meter — what it relayed each way, and the bound by
//!   token class of each response;
//! - [`image`]: an image call's hold and bound by token class, from the images it relayed,
//!   decoded, and the vendor's published tables;
//! - [`tokens`]: the local token counts (`cl100k_base`) that hold and back up the upstream's.

#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod basis;
pub mod bound;
pub mod image;
pub mod prompt;
pub mod recognition;
pub mod session;
pub mod speech;
pub mod text;
pub mod tokens;

pub use basis::{Basis, Capped, Measure};
pub use bound::Bound;

/// A request whose body is larger than this is measured — its texts counted, its inline media
/// decoded and probed — on the blocking pool, not on a runtime thread. Everything measured came
/// in the body, so the body's size, which the gateway read itself, bounds the work; a count of
/// one field or another would let the client put the bulk where it is not counted.
pub const MEASURE_ON_BLOCKING_POOL: usize = 64 << 10;

/// How a metered stream ended, as the rules need to know it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEnd {
    /// The upstream finished and the client took everything.
    Complete,
    /// The client went away before the end.
    ClientGone,
    /// The upstream failed or cut the stream; why, for the ledger row's note.
    Cut(String),
}
