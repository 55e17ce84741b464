//! The clip model family, its series and their limits (docs/api.md §2.7, §8, §9 rule 2).
//!
//! docs/api.md §2.7: the families `clipgen-cn-*` (China edition) and `clipgen-intl-*` (international
//! edition) take the same parameters; `-fast` (faster) and `-mini` (cheaper) variants exist;
//! model ids end in a version and a date code, e.g. `clipgen-cn-2.0-260128`,
//! `clipgen-intl-2.5-fast-260301`, `clipgen-cn-2.5-mini-260301`. The version names the series
//! (docs/api.md §9 rule 2), and the series sets the limits:
//!
//! | Series | `duration` (s) | Reference videos | Reference seconds in total |
//! |---|---|---|---|
//! | 2.0 | 4 to 15 | at most 3 | at most 15 |
//! | 2.5 | 4 to 30 | at most 10 | at most 30 |
//!
//! and, for both: `resolution` one of [`RESOLUTIONS`] (default [`DEFAULT_RESOLUTION`]), `ratio`
//! one of [`RATIOS`] (default [`DEFAULT_RATIO`]), at most [`MAX_REFERENCE_IMAGES`] reference
//! images.

use std::fmt;
use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

/// docs/api.md §2.7 content rule 2: at most 30 reference images.
pub const MAX_REFERENCE_IMAGES: u32 = 30;

/// docs/api.md §2.7: the accepted `resolution` values.
pub const RESOLUTIONS: [&str; 2] = ["480p", "720p"];

/// docs/api.md §2.7: `resolution` defaults to `720p`.
pub const DEFAULT_RESOLUTION: &str = "720p";

/// docs/api.md §2.7: the accepted `ratio` values.
pub const RATIOS: [&str; 7] = ["16:9", "9:16", "1:1", "4:3", "3:4", "21:9", "adaptive"];

/// docs/api.md §2.7: `ratio` defaults to `adaptive` (adapts to the input media).
pub const DEFAULT_RATIO: &str = "adaptive";

/// docs/api.md §2.7: `generate_audio` defaults to `true`.
pub const DEFAULT_GENERATE_AUDIO: bool = true;

/// The duration in seconds when the request gives neither `duration` nor `frames`: 5 s, the
/// vendor's default (wire-formats §5.1 examples; docs/api.md §2.7 gives no default). The gateway sends
/// it explicitly upstream ([`CreateTaskRequest::for_upstream`](crate::CreateTaskRequest::for_upstream)),
/// so the hold and the generated clip agree.
pub const DEFAULT_DURATION: u32 = 5;

/// wire-formats §5.1: `duration: -1` lets the model choose the length (1.5-pro and 2.x).
pub const DURATION_MODEL_CHOOSES: i64 = -1;

/// The largest inline image accepted (`tollgate_media_url`, which checks it).
pub use tollgate_media_url::MAX_INLINE_IMAGE_BYTES;

/// A series of the clip model family (docs/api.md §9 rule 2: "series 2.0 and 2.5 of the clip family").
///
/// Serialized as its version, `"2.0"` or `"2.5"`.
///
/// ```
/// use tollgate_clip_tasks::series::{series, ClipSeries};
///
/// assert_eq!(series("clipgen-cn-2.0-260128"), Some(ClipSeries::V2_0));
/// assert_eq!(series("clipgen-intl-2.5-fast-260301"), Some(ClipSeries::V2_5));
/// assert_eq!(ClipSeries::V2_0.duration_range(), 4..=15);
/// assert_eq!(ClipSeries::V2_5.max_reference_videos(), 10);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ClipSeries {
    /// Series 2.0.
    #[serde(rename = "2.0")]
    V2_0,
    /// Series 2.5.
    #[serde(rename = "2.5")]
    V2_5,
}

impl ClipSeries {
    /// Both series.
    pub const ALL: [ClipSeries; 2] = [ClipSeries::V2_0, ClipSeries::V2_5];

    /// The series named by its version, `"2.0"` or `"2.5"` (also `"2-0"` and `"2-5"`).
    pub fn from_version(version: &str) -> Option<ClipSeries> {
        match version {
            "2.0" | "2-0" => Some(ClipSeries::V2_0),
            "2.5" | "2-5" => Some(ClipSeries::V2_5),
            _ => None,
        }
    }

    /// The version text, `"2.0"` or `"2.5"`.
    pub const fn version(self) -> &'static str {
        match self {
            ClipSeries::V2_0 => "2.0",
            ClipSeries::V2_5 => "2.5",
        }
    }

    /// docs/api.md §2.7 and §8: the `duration` range in seconds, 4 to 15 (2.0) or 4 to 30 (2.5).
    pub const fn duration_range(self) -> RangeInclusive<u32> {
        match self {
            ClipSeries::V2_0 => 4..=15,
            ClipSeries::V2_5 => 4..=30,
        }
    }

    /// docs/api.md §2.7 content rule 3: at most 3 (2.0) or 10 (2.5) reference videos.
    pub const fn max_reference_videos(self) -> u32 {
        match self {
            ClipSeries::V2_0 => 3,
            ClipSeries::V2_5 => 10,
        }
    }

    /// docs/api.md §2.7 content rule 3 and §8 rule 5: reference videos last at most 15 s (2.0) or 30 s
    /// (2.5) in total; this is also the extra reference length held at submission.
    pub const fn max_reference_seconds(self) -> u32 {
        match self {
            ClipSeries::V2_0 => 15,
            ClipSeries::V2_5 => 30,
        }
    }
}

impl fmt::Display for ClipSeries {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.version())
    }
}

/// The series of a model id: the first `-`-separated token that is a series version, `2.0` or
/// `2.5`, or the vendor's spelling as two tokens `2-0` / `2-5` (`doubao-seedance-2-0-260128`).
///
/// This accepts any id that names a series, so that a catalog may map other public names onto
/// the family; [`ModelId::parse`] reads the `clipgen-*` ids of docs/api.md §2.7 strictly. A date code
/// (`260128`) or another version (`1.5`, `1-5`) is not a series.
///
/// ```
/// use tollgate_clip_tasks::series::{series, ClipSeries};
///
/// assert_eq!(series("clipgen-cn-2.5-mini-260301"), Some(ClipSeries::V2_5));
/// assert_eq!(series("doubao-seedance-2-0-fast-260128"), Some(ClipSeries::V2_0));
/// assert_eq!(series("doubao-seedance-1-5-pro-251215"), None);
/// assert_eq!(series("clipgen-cn-3.0-260128"), None);
/// ```
pub fn series(model: &str) -> Option<ClipSeries> {
    let tokens: Vec<&str> = model.split('-').collect();
    for (i, token) in tokens.iter().enumerate() {
        if let found @ Some(_) = dotted_version(token) {
            return found;
        }
        if *token == "2"
            && let Some(next) = tokens.get(i + 1)
        {
            match *next {
                "0" => return Some(ClipSeries::V2_0),
                "5" => return Some(ClipSeries::V2_5),
                _ => {}
            }
        }
    }
    None
}

fn dotted_version(token: &str) -> Option<ClipSeries> {
    match token {
        "2.0" => Some(ClipSeries::V2_0),
        "2.5" => Some(ClipSeries::V2_5),
        _ => None,
    }
}

/// The edition of a `clipgen-*` model (docs/api.md §2.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Edition {
    /// `clipgen-cn-*`, the China edition.
    Cn,
    /// `clipgen-intl-*`, the international edition.
    Intl,
}

/// The variant of a `clipgen-*` model (docs/api.md §2.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    /// No suffix.
    Standard,
    /// `-fast`: faster.
    Fast,
    /// `-mini`: cheaper.
    Mini,
}

/// A `clipgen-*` model id read strictly (docs/api.md §2.7):
/// `clipgen-{cn|intl}-{2.0|2.5}[-fast|-mini]-{date code}`, the date code being six digits.
///
/// ```
/// use tollgate_clip_tasks::series::{ClipSeries, Edition, ModelId, Variant};
///
/// let id = ModelId::parse("clipgen-intl-2.5-fast-260301").unwrap();
/// assert_eq!(
///     (id.edition, id.series, id.variant, id.date_code.as_str()),
///     (Edition::Intl, ClipSeries::V2_5, Variant::Fast, "260301")
/// );
/// assert_eq!(ModelId::parse("clipgen-cn-2.0"), None); // no date code
/// assert_eq!(ModelId::parse("clipgen-eu-2.0-260128"), None);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ModelId {
    /// `cn` or `intl`.
    pub edition: Edition,
    /// 2.0 or 2.5.
    pub series: ClipSeries,
    /// Standard, `-fast` or `-mini`.
    pub variant: Variant,
    /// The date code at the end, e.g. `260128`.
    pub date_code: String,
}

impl ModelId {
    /// Reads a `clipgen-*` id; `None` when it does not have that exact shape.
    pub fn parse(model: &str) -> Option<ModelId> {
        let mut tokens = model.split('-');
        if tokens.next()? != "clipgen" {
            return None;
        }
        let edition = match tokens.next()? {
            "cn" => Edition::Cn,
            "intl" => Edition::Intl,
            _ => return None,
        };
        let series = dotted_version(tokens.next()?)?;
        let mut next = tokens.next()?;
        let variant = match next {
            "fast" => Variant::Fast,
            "mini" => Variant::Mini,
            _ => Variant::Standard,
        };
        if variant != Variant::Standard {
            next = tokens.next()?;
        }
        if next.len() != 6 || !next.bytes().all(|b| b.is_ascii_digit()) || tokens.next().is_some() {
            return None;
        }
        Some(ModelId {
            edition,
            series,
            variant,
            date_code: next.to_owned(),
        })
    }
}
