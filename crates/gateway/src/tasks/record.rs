//! What a task is, as data: its pricing snapshot, what an upstream record says of it, and the
//! pieces of its row a client sees — pure, so that the format translations (`translate::clip`,
//! `translate::video`) and the task machinery (`tasks`, `tasks::worker`) share them without
//! either importing the other.

use serde::{Deserialize, Serialize};
use tollgate_billing::{Amount, Tariff, Usage};
use tollgate_metering::{Basis, Bound};
use tollgate_store::{Outcome, PriceGroup, Settlement, Task, TaskState};

/// What a valid task request asks to be held for, before any price applies: the format
/// translations (`translate::clip`, `translate::video`) work it out, and `tasks::submit` prices it
/// at the caller's tariff and version into the task's [`Pricing`].
#[derive(Debug, Clone, PartialEq)]
pub struct Quote {
    /// The usage held for.
    pub estimate: Usage,
    /// The seconds asked for (clip: the seconds held for).
    pub duration_seconds: u32,
    /// The resolution asked for, or the default.
    pub resolution: String,
    /// The aspect ratio asked for, or the default (`None`: the model's own choice).
    pub ratio: Option<String>,
    /// Clip, reference-video tier: the reference seconds held for (the series' maximum).
    pub reference_seconds: Option<u32>,
}

impl Quote {
    /// The size the task makes, (width, height): its resolution at its ratio; `None` where the
    /// model chooses either. A tariff priced by size prices the task at this size
    /// (`tollgate_billing::Usage::VideoSecondsAtSize`).
    pub fn size(&self) -> Option<(u32, u32)> {
        let ratio = self.ratio.as_deref()?;
        tollgate_openai_videos::Size::from_resolution(&self.resolution, ratio)
            .map(|s| (s.width, s.height))
    }
}

/// What is priced at submit and kept on the task row, so that a price change later never
/// reprices a task in flight (DESIGN §5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    /// The model's tariff when the task was submitted.
    pub tariff: Tariff,
    /// The usage held for.
    pub estimate: Usage,
    /// The seconds asked for (clip: the seconds held for).
    pub duration_seconds: u32,
    /// The resolution asked for, or the default.
    pub resolution: String,
    /// The aspect ratio asked for, or the default (`None`: the model's own choice).
    pub ratio: Option<String>,
    /// Clip, reference-video tier: the reference seconds held for (the series' maximum; rows of
    /// earlier versions may say a measured length).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_seconds: Option<u32>,
    /// The price group `tariff` is scaled for (`None`: list prices), for the ledger row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_group: Option<PriceGroup>,
    /// The version of the model's price `tariff` is (`None` on rows of earlier releases).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_version: Option<i64>,
}

impl Pricing {
    /// The snapshot of `quote` at `tariff` (the caller's, scaled for `price_group`) of price
    /// version `price_version`.
    pub fn snapshot(
        quote: Quote,
        tariff: Tariff,
        price_group: Option<PriceGroup>,
        price_version: Option<i64>,
    ) -> Pricing {
        Pricing {
            tariff,
            estimate: quote.estimate,
            duration_seconds: quote.duration_seconds,
            resolution: quote.resolution,
            ratio: quote.ratio,
            reference_seconds: quote.reference_seconds,
            price_group,
            price_version,
        }
    }

    /// The price of `usage` at the submit-time tariff.
    pub fn charge(&self, usage: &Usage) -> Result<Amount, tollgate_billing::BillingError> {
        self.tariff.charge(usage)
    }

    /// Reads the snapshot of a task row.
    pub fn of(task: &Task) -> Result<Pricing, serde_json::Error> {
        serde_json::from_value(task.pricing.clone())
    }
}

/// What one poll of the upstream found.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    /// Still going.
    Live {
        /// Queued or running.
        state: TaskState,
        /// The upstream's own word.
        word: String,
        /// 0–100.
        progress: i64,
    },
    /// Finished with a result, billed at `usage`.
    Succeeded {
        /// What the row keeps (the upstream record, its video URL, the finish time).
        result: serde_json::Value,
        /// What to charge.
        usage: Usage,
        /// Whether the usage is the upstream's own figure.
        basis: Basis,
        /// The upstream's own word.
        word: String,
    },
    /// Failed, cancelled or expired: refunded in full.
    Failed {
        /// `{code, message}`.
        error: serde_json::Value,
        /// The upstream's own word (`failed`, `cancelled`, `expired`).
        word: String,
    },
}

impl Observation {
    /// The terminal outcome to record, priced at the task's snapshot, when there is one.
    pub fn outcome(&self, pricing: &Pricing) -> Option<Outcome> {
        match self {
            Observation::Live { .. } => None,
            Observation::Failed { error, .. } => Some(Outcome::Failed {
                error: error.clone(),
            }),
            Observation::Succeeded {
                result,
                usage,
                basis,
                ..
            } => {
                // Bounded settlement (`docs/decisions.md`): the hold is priced from what was
                // asked — the seconds, the resolution, the reference tier's maximum — so no
                // honest upstream figure exceeds it; more is charged at the hold, as an anomaly.
                let held = pricing.charge(&pricing.estimate).unwrap_or(Amount::ZERO);
                let quantity = serde_json::to_string(usage).unwrap_or_default();
                let bound = Bound::measured(held);
                let (actual, anomaly) = bound.charge(&pricing.tariff, usage, &quantity);
                let mut settlement = Settlement::new(actual)
                    .quantity(quantity)
                    .price_group(pricing.price_group.clone())
                    .priced_at(pricing.price_version, bound.amount, "what was asked")
                    .measured(basis.measured);
                if let Some(anomaly) = anomaly {
                    tracing::warn!(anomaly, "task settlement capped");
                    settlement = settlement.anomaly(anomaly);
                }
                if basis.estimated {
                    settlement = settlement.estimated();
                }
                if let Some(note) = &basis.note {
                    settlement = settlement.note(note.clone());
                }
                Some(Outcome::Succeeded {
                    result: result.clone(),
                    settlement: Box::new(settlement),
                })
            }
        }
    }
}

/// The `code` and `message` of a failed row's error.
pub fn error_parts(task: &Task) -> (String, String) {
    let text = |name: &str| {
        task.error
            .as_ref()
            .and_then(|e| e.get(name))
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_owned()
    };
    (text("code"), text("message"))
}

/// Unix seconds of a row's Unix milliseconds.
pub fn unix_seconds(millis: i64) -> i64 {
    millis.div_euclid(1000)
}

/// What a succeeded task's row keeps in `result`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// The upstream's final record, as it sent it.
    pub record: serde_json::Value,
    /// The upstream's link to the video.
    pub video_url: String,
    /// When the gateway saw it finish, Unix seconds (links expire relative to it).
    pub finished_at: i64,
}
