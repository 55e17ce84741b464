//! How a charge's quantity came about (DESIGN §4): the upstream's own figure, or the local
//! count when it reported none. Pure, below everything that settles a charge — the gateway's hold
//! (`charge`), its stream meters, its task records — so that each names it without importing
//! the others.

pub use tollgate_billing::Measure;

/// How a settlement came about, for the ledger row and the charge's explanation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Basis {
    /// The usage came from the local count, not from the upstream.
    pub estimated: bool,
    /// Why, when it is not the ordinary case.
    pub note: Option<String>,
    /// How the quantity was measured (docs/architecture.md, "Explanations").
    pub measured: Measure,
}

impl Basis {
    /// DESIGN §4: the upstream's own usage figure settles the charge; the local count is the
    /// fallback, marked estimated, when the upstream reported none; `local` was measured as
    /// `how` (a count, a probe).
    pub fn reported_or_local(reported: Option<u64>, local: u64, how: Measure) -> (u64, Basis) {
        match reported {
            Some(quantity) => (quantity, Basis::default()),
            None => (local, Basis::local("upstream reported no usage", how)),
        }
    }

    /// A settlement on the gateway's own count, which is the quantity itself (not an estimate
    /// of a figure the vendor failed to report): pictures relayed, each decoded (`note`).
    pub fn counted(note: impl Into<String>) -> Basis {
        Basis {
            estimated: false,
            note: Some(note.into()),
            measured: Measure::LocalCount,
        }
    }

    /// A settlement on the gateway's own figure, measured as `how`, for the reason `note`.
    pub fn local(note: impl Into<String>, how: Measure) -> Basis {
        Basis {
            estimated: true,
            note: Some(note.into()),
            measured: how,
        }
    }
}

/// A charge already cut to the bound of what was relayed (`ResponseBound::cap`,
/// [`crate::image::PictureCall::charge`]): what is charged, how it was measured, the bound
/// priced — the most the request may be charged — and the anomaly naming what was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capped {
    /// What is charged.
    pub usage: tollgate_billing::Usage,
    /// How it was measured.
    pub basis: Basis,
    /// The most the request may be charged: what was relayed, priced.
    pub bound: tollgate_billing::Usage,
    /// What was cut, if anything.
    pub anomaly: Option<String>,
}
