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

    /// A settlement on the gateway's own figure, measured as `how`, for the reason `note`.
    pub fn local(note: impl Into<String>, how: Measure) -> Basis {
        Basis {
            estimated: true,
            note: Some(note.into()),
            measured: how,
        }
    }
}
