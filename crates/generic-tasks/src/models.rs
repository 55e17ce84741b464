//! The per-model parameter table of docs/api.md §2.8, as data.
//!
//! | Model | Duration (s), default | Resolution (default first) | `aspect_ratio` | `seed` | `negative_prompt` | `sound`, `watermark` | `video_url` |
//! |---|---|---|---|---|---|---|---|
//! | `imagine-video` | 1–15, 5 | `default` | `16:9`, `9:16`, `1:1` | yes | yes | no | no |
//! | `horse-1.1-t2v` | 3–15, 5 | `1080P`, `720P` | `16:9`, `9:16`, `1:1` | yes | yes | no | no |
//! | `wave-2-7-video` | 2–15, 5 | `720p` | `16:9` | no | no | no | yes |
//! | `wave-3-0-video` | 2–30, 5 | `480p` | `16:9`, `auto` | no | no | yes | yes |
//! | `omni` | 4 (fixed), 4 | `720p` | `16:9` | no | no | no | no |
//! | `sora-2` | 4, 8 or 12, 4 | `720p` | `9:16`, `16:9` (720×1280, 1280×720) | no | no | no | no |
//! | `sora-2-pro` | 4, 8 or 12, 4 | `720p`, `1024p` | `9:16`, `16:9` at 720p; `4:7`, `7:4` at 1024p | no | no | no | no |
//!
//! docs/api.md §2.8 gives the duration ranges, the default resolutions and which optional parameters each
//! model takes; the rest is not shown there and is decided here:
//!
//! - **Default durations.** A request without `duration` (or `seconds`) asks for
//!   [`ModelSpec::default_duration`]: 5 seconds, a length every ranged model accepts, and 4 for
//!   `omni`, its only length.
//! - **`resolution: "default"`** (`imagine-video`) is not a size: it means "the model's own
//!   choice". [`MODEL_DEFAULT`] is the only value accepted for that model; an upstream adapter
//!   sends no `resolution` when it sees it.
//! - **`horse-1.1-t2v` resolutions.** "default 1080P" implies another size; `720P` is offered as
//!   well. All resolutions and aspect ratios match case-insensitively (`1080p` is `1080P`, `AUTO`
//!   is `auto`) and are normalised to the table's spelling.
//! - **Aspect ratios of `imagine-video` and `horse-1.1-t2v`.** docs/api.md §2.8 says only that they take
//!   `aspect_ratio`; the accepted values are the three common ones, `16:9`, `9:16` and `1:1`, so
//!   that a value no model offers is refused before a hold is placed (DESIGN §7) rather than by
//!   the upstream afterwards. An empty [`ModelSpec::aspect_ratios`] would mean "any value".
//! - **`sora-2`, `sora-2-pro`** are not in docs/api.md §2.8: they are the models of the
//!   `openai-videos` channel format (a Sora-style vendor, wire-formats §7.2), in this table so
//!   that every video API validates them the same way. They make only the sizes and lengths
//!   that vendor makes ([`ModelSpec::sizes`], [`ModelSpec::durations`]); `1792x1024` is
//!   `1024p` at `7:4`. The defaults are the vendor's: 4 seconds, 720×1280.
//! - **`video_url`.** docs/api.md §2.8: "some models also return `video_url`". The `wave-*` models do
//!   ([`ModelSpec::returns_video_url`]); for them the completed task record carries the link in
//!   both `url` and `video_url`.

use std::ops::RangeInclusive;

/// The resolution value meaning "the model's own choice" (docs/api.md §2.8: `imagine-video`'s resolution
/// is "default").
pub const MODEL_DEFAULT: &str = "default";

/// Which optional parameters of docs/api.md §2.8 a model takes. A parameter it does not take is refused
/// with [`Rule::UnsupportedParameter`](crate::Rule::UnsupportedParameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Supports {
    /// `seed`.
    pub seed: bool,
    /// `negative_prompt`.
    pub negative_prompt: bool,
    /// `sound`.
    pub sound: bool,
    /// `watermark`.
    pub watermark: bool,
    /// `aspect_ratio`.
    pub aspect_ratio: bool,
}

/// One row of the per-model table (docs/api.md §2.8).
///
/// ```
/// use tollgate_generic_tasks::models::spec;
///
/// let wave = spec("wave-3-0-video").ok_or("unknown model")?;
/// assert_eq!(wave.duration, 2..=30);
/// assert_eq!(wave.resolution("480P"), Some("480p"));
/// assert_eq!(wave.aspect_ratio("AUTO"), Some("auto"));
/// assert_eq!(wave.aspect_ratio("9:16"), None);
/// assert!(wave.supports.sound && wave.supports.watermark && !wave.supports.seed);
/// assert!(wave.returns_video_url);
/// # Ok::<(), &'static str>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelSpec {
    /// The model id, as in the create request's `model`.
    pub id: &'static str,
    /// The accepted durations in whole seconds, both ends included.
    pub duration: RangeInclusive<u32>,
    /// The only durations accepted, where the model makes a few lengths rather than every
    /// whole second of [`duration`](Self::duration) (empty: every one).
    pub durations: &'static [u32],
    /// The duration of a request that gives none; within [`duration`](Self::duration).
    pub default_duration: u32,
    /// The resolution of a request that gives none; one of [`resolutions`](Self::resolutions).
    pub default_resolution: &'static str,
    /// The accepted resolutions, in the table's spelling.
    pub resolutions: &'static [&'static str],
    /// The accepted aspect ratios, in the table's spelling; empty means any value is passed on.
    pub aspect_ratios: &'static [&'static str],
    /// The only (resolution, aspect ratio) pairs accepted, where the model makes a few sizes
    /// rather than every resolution at every ratio (empty: every pair). A request with a
    /// resolution and no ratio gets the first pair's ratio of that resolution.
    pub sizes: &'static [(&'static str, &'static str)],
    /// Which optional parameters the model takes.
    pub supports: Supports,
    /// Whether a completed task also carries `video_url` besides `url`.
    pub returns_video_url: bool,
}

impl ModelSpec {
    /// Whether the model has a single fixed duration (`omni`).
    pub fn is_fixed_duration(&self) -> bool {
        self.duration.start() == self.duration.end()
    }

    /// The accepted resolution matching `asked` case-insensitively, in the table's spelling.
    pub fn resolution(&self, asked: &str) -> Option<&'static str> {
        find(self.resolutions, asked)
    }

    /// The accepted aspect ratio matching `asked` case-insensitively, in the table's spelling;
    /// `None` when the model does not take it. When the list is empty, any value is accepted and
    /// this returns `None` too: see [`accepts_any_aspect_ratio`](Self::accepts_any_aspect_ratio).
    pub fn aspect_ratio(&self, asked: &str) -> Option<&'static str> {
        if self.supports.aspect_ratio {
            find(self.aspect_ratios, asked)
        } else {
            None
        }
    }

    /// Every (resolution, aspect ratio) the model makes: its [`sizes`](Self::sizes), or each
    /// resolution at each listed ratio.
    pub fn size_pairs(&self) -> Vec<(&'static str, &'static str)> {
        if !self.sizes.is_empty() {
            return self.sizes.to_vec();
        }
        self.resolutions
            .iter()
            .flat_map(|r| self.aspect_ratios.iter().map(move |q| (*r, *q)))
            .collect()
    }

    /// Whether the model takes `aspect_ratio` with any value (an empty list).
    pub fn accepts_any_aspect_ratio(&self) -> bool {
        self.supports.aspect_ratio && self.aspect_ratios.is_empty()
    }
}

fn find(values: &'static [&'static str], asked: &str) -> Option<&'static str> {
    values
        .iter()
        .copied()
        .find(|value| value.eq_ignore_ascii_case(asked))
}

/// The common aspect ratios offered by the models that take any `aspect_ratio` (decided here; see
/// the module documentation).
const COMMON_RATIOS: &[&str] = &["16:9", "9:16", "1:1"];

/// The five models of docs/api.md §2.8, in the table's order, and the Sora-style two.
pub const MODELS: &[ModelSpec] = &[
    ModelSpec {
        id: "imagine-video",
        duration: 1..=15,
        durations: &[],
        default_duration: 5,
        default_resolution: MODEL_DEFAULT,
        resolutions: &[MODEL_DEFAULT],
        aspect_ratios: COMMON_RATIOS,
        sizes: &[],
        supports: Supports {
            seed: true,
            negative_prompt: true,
            sound: false,
            watermark: false,
            aspect_ratio: true,
        },
        returns_video_url: false,
    },
    ModelSpec {
        id: "horse-1.1-t2v",
        duration: 3..=15,
        durations: &[],
        default_duration: 5,
        default_resolution: "1080P",
        resolutions: &["1080P", "720P"],
        aspect_ratios: COMMON_RATIOS,
        sizes: &[],
        supports: Supports {
            seed: true,
            negative_prompt: true,
            sound: false,
            watermark: false,
            aspect_ratio: true,
        },
        returns_video_url: false,
    },
    ModelSpec {
        id: "wave-2-7-video",
        duration: 2..=15,
        durations: &[],
        default_duration: 5,
        default_resolution: "720p",
        resolutions: &["720p"],
        aspect_ratios: &["16:9"],
        sizes: &[],
        supports: Supports {
            seed: false,
            negative_prompt: false,
            sound: false,
            watermark: false,
            aspect_ratio: true,
        },
        returns_video_url: true,
    },
    ModelSpec {
        id: "wave-3-0-video",
        duration: 2..=30,
        durations: &[],
        default_duration: 5,
        default_resolution: "480p",
        resolutions: &["480p"],
        aspect_ratios: &["16:9", "auto"],
        sizes: &[],
        supports: Supports {
            seed: false,
            negative_prompt: false,
            sound: true,
            watermark: true,
            aspect_ratio: true,
        },
        returns_video_url: true,
    },
    ModelSpec {
        id: "omni",
        duration: 4..=4,
        durations: &[],
        default_duration: 4,
        default_resolution: "720p",
        resolutions: &["720p"],
        aspect_ratios: &["16:9"],
        sizes: &[],
        supports: Supports {
            seed: false,
            negative_prompt: false,
            sound: false,
            watermark: false,
            aspect_ratio: true,
        },
        returns_video_url: false,
    },
    ModelSpec {
        id: "sora-2",
        duration: 4..=12,
        durations: SORA_SECONDS,
        default_duration: 4,
        default_resolution: "720p",
        resolutions: &["720p"],
        aspect_ratios: &["9:16", "16:9"],
        sizes: &[("720p", "9:16"), ("720p", "16:9")],
        supports: SORA_SUPPORTS,
        returns_video_url: false,
    },
    ModelSpec {
        id: "sora-2-pro",
        duration: 4..=12,
        durations: SORA_SECONDS,
        default_duration: 4,
        default_resolution: "720p",
        resolutions: &["720p", "1024p"],
        aspect_ratios: &["9:16", "16:9", "4:7", "7:4"],
        sizes: &[
            ("720p", "9:16"),
            ("720p", "16:9"),
            ("1024p", "4:7"),
            ("1024p", "7:4"),
        ],
        supports: SORA_SUPPORTS,
        returns_video_url: false,
    },
];

/// The lengths a Sora-style model makes (wire-formats §7.2).
const SORA_SECONDS: &[u32] = &[4, 8, 12];

/// What a Sora-style model takes besides its size and length: nothing.
const SORA_SUPPORTS: Supports = Supports {
    seed: false,
    negative_prompt: false,
    sound: false,
    watermark: false,
    aspect_ratio: true,
};

/// The row of `model` (an exact, case-sensitive id), or `None` for a model not in the table.
///
/// ```
/// use tollgate_generic_tasks::models::spec;
///
/// assert_eq!(spec("omni").map(|s| s.duration.clone()), Some(4..=4));
/// assert!(spec("OMNI").is_none());
/// assert!(spec("clipgen-cn-2.0").is_none());
/// ```
pub fn spec(model: &str) -> Option<&'static ModelSpec> {
    MODELS.iter().find(|spec| spec.id == model)
}
