//! # tollgate-billing
//!
//! Money, the price book and the meters of tollgate's billing rules (docs/api.md §8, DESIGN §4). Sans-IO:
//! pure computation, no runtime, no storage.
//!
//! - [`money`]: an [`Amount`] is an exact count of nano-units (10⁻⁹ of the operator's currency)
//!   in an `i64`, written as a decimal string (`"0.999874"`). Never a float.
//! - [`meter`]: a [`Usage`] is what a request consumed, one kind per billing rule, and the
//!   counting rules themselves: [`speech_characters`] (rule 1, CJK counting 2), [`audio_seconds`]
//!   (rule 2, rounded up), [`video_seconds`] (rule 6, rounded up, minimum 1).
//! - [`video`]: the clip-format token estimate held at submission (rules 4–5):
//!   [`clip_frame_size`], [`clip_token_estimate`], [`clip_token_estimate_with_reference`],
//!   [`clip_submission_usage`].
//! - [`explain`]: an [`Explanation`] of one charge, and how its quantity was [`Measure`]d.
//! - [`price_list`]: public price lists (LiteLLM's, models.dev's) read exactly, and the tariff
//!   they give a model on its meter (`tollgate prices import`).
//! - [`tariff`]: a [`Tariff`] prices one meter; [`Tariff::charge`] computes a charge exactly and
//!   rounds it **up** to the nano-unit once.
//! - [`price_book`]: the [`PriceBook`] maps each public model to its tariff.
//! - [`versions`]: a [`PriceSchedule`] holds each model's [`PriceVersion`]s over time; a charge
//!   names the version it was priced at.
//!
//! ## The rules (docs/api.md §8)
//!
//! 1. Speech synthesis: by character count; each Chinese, Japanese or Korean character counts 2.
//! 2. Recognition: by audio duration in seconds, rounded up.
//! 3. Embeddings: by input tokens.
//! 4. Clip-format video: by the upstream's `usage.completion_tokens`; an estimate is held on
//!    submission and settled on completion.
//! 5. Clip-format price tiers: Standard at the main unit price; a submitted reference video at
//!    about 60 % of it per token, with the reference video's seconds counted, and an extra hold for
//!    the series' maximum reference length.
//! 6. Generic video: seconds generated times the unit price, rounded up, minimum 1 second.
//! 7. Native generation: thinking tokens count as output tokens.
//!
//! Holds, settlement and refunds are ledger operations of the store; this crate computes the
//! amounts they move.
//!
//! ```
//! use tollgate_billing::{Amount, PriceBook, Tariff, Usage, speech_characters};
//!
//! let mut book = PriceBook::new();
//! book.insert("speech-2.8-hd", Tariff::Characters { per_million_characters: "100".parse()? });
//!
//! let usage = Usage::Characters(speech_characters("你好, world"));
//! assert_eq!(usage, Usage::Characters(11));
//! assert_eq!(book.charge("speech-2.8-hd", &usage)?, "0.0011".parse::<Amount>()?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod exact;
pub mod explain;
pub mod meter;
pub mod money;
pub mod price_book;
pub mod price_list;
#[cfg(feature = "schema")]
mod schema;
pub mod tariff;
pub mod token_class;
pub mod versions;
pub mod video;

pub use error::BillingError;
pub use explain::{Explanation, Measure};
pub use meter::{
    ClipTier, ImageTier, Meter, Usage, audio_seconds, is_cjk, speech_characters, video_seconds,
    whole_seconds_rounded_up,
};
pub use money::{Amount, MoneyError, Total};
pub use price_book::PriceBook;
pub use rust_decimal::Decimal;
pub use tariff::{DEFAULT_REFERENCE_VIDEO_RATIO, Tariff};
pub use token_class::{TokenClass, TokenClasses};
pub use versions::{PriceSchedule, PriceVersion};
pub use video::{
    ClipSeries, FrameSize, clip_frame_size, clip_max_reference_seconds, clip_submission_usage,
    clip_token_estimate, clip_token_estimate_with_reference,
};
