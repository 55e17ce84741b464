//! A hold as the request flow uses it (DESIGN §2 steps 5 and 8): placed before the upstream
//! call, then settled to the actual cost or released — exactly once, also when the handler
//! returns early, panics, or its future is dropped (the `Drop` guard releases it).

use crate::catalog::ModelEntry;
use crate::errors::{ApiError, ErrorKind};
use crate::state::State;
use std::sync::Arc;
use tollgate_billing::{Amount, Usage};
use tollgate_store::{Closed, Hold, HoldRequest, Principal, Settlement, StoreError};

/// An open hold that must be settled or released.
#[derive(Debug)]
pub struct HeldCharge {
    state: Arc<State>,
    hold: Option<Hold>,
    entry: Arc<ModelEntry>,
}

/// How a settlement came about, for the ledger row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Basis {
    /// The usage came from the local count, not from the upstream.
    pub estimated: bool,
    /// Why, when it is not the ordinary case.
    pub note: Option<String>,
}

impl Basis {
    /// DESIGN §4: the upstream's own usage figure settles the charge; the local count is the
    /// fallback, marked estimated, when the upstream reported none.
    pub fn reported_or_local(reported: Option<u64>, local: u64) -> (u64, Basis) {
        match reported {
            Some(quantity) => (quantity, Basis::default()),
            None => (
                local,
                Basis {
                    estimated: true,
                    note: Some("upstream reported no usage".into()),
                },
            ),
        }
    }
}

impl HeldCharge {
    /// Prices `estimate` with the model's tariff and holds that much of the caller's balance.
    /// A balance that does not cover it is a 429 `insufficient_quota`, before any upstream call.
    pub async fn place(
        state: &Arc<State>,
        principal: &Principal,
        entry: &Arc<ModelEntry>,
        estimate: &Usage,
        request_id: &str,
    ) -> Result<HeldCharge, ApiError> {
        let amount = entry
            .tariff
            .charge(estimate)
            .map_err(|e| ApiError::internal("pricing the request", e))?;
        let request = HoldRequest::new(&principal.account_id, &entry.public, amount)
            .key(&principal.key_id)
            .request(request_id);
        match state.store.hold(request).await {
            Ok(hold) => Ok(HeldCharge {
                state: state.clone(),
                hold: Some(hold),
                entry: entry.clone(),
            }),
            Err(e) => Err(hold_refused(e)),
        }
    }

    /// What is held.
    pub fn amount(&self) -> Amount {
        self.hold.as_ref().map_or(Amount::ZERO, |h| h.amount)
    }

    /// Charges `usage` at the model's price and releases the rest. Returns the charge.
    pub async fn settle(mut self, usage: &Usage, basis: Basis) -> Result<Amount, ApiError> {
        let Some(hold) = self.hold.take() else {
            return Ok(Amount::ZERO);
        };
        let actual = match self.entry.tariff.charge(usage) {
            Ok(a) => a,
            Err(e) => {
                // Never leave the hold open: fall back to what was held.
                tracing::error!(error = %e, "pricing the usage failed; charging the hold");
                hold.amount
            }
        };
        let mut settlement =
            Settlement::new(actual).quantity(serde_json::to_string(usage).unwrap_or_default());
        if basis.estimated {
            settlement = settlement.estimated();
        }
        if let Some(note) = basis.note {
            settlement = settlement.note(note);
        }
        match self.state.store.settle(&hold.id, settlement).await {
            Ok(Closed::Now) => {
                self.state.metrics.hold_closed("settled");
                Ok(actual)
            }
            Ok(Closed::Already) => {
                tracing::warn!(hold = %hold.id, "hold was already closed");
                Ok(Amount::ZERO)
            }
            Err(e) => {
                // The hold stays open; the stale-hold sweeper releases it later.
                tracing::error!(hold = %hold.id, error = %e, "settling failed");
                Err(ApiError::internal("recording the charge", e))
            }
        }
    }

    /// Returns the whole hold to the balance.
    pub async fn release(mut self, reason: &str) {
        if let Some(hold) = self.hold.take() {
            release(&self.state, &hold, reason).await;
        }
    }
}

/// How a hold the store refused reaches the client: a balance that does not cover it is a 429
/// `insufficient_quota` (before any upstream call), a disabled account 403.
pub fn hold_refused(e: StoreError) -> ApiError {
    match e {
        StoreError::InsufficientBalance {
            available,
            requested,
        } => ApiError::new(
            ErrorKind::InsufficientBalance,
            format!(
                "You exceeded your current quota: this request needs {requested} and the balance has {available} available. Please add credit to your account."
            ),
        )
        .code("insufficient_quota"),
        StoreError::Disabled(_) => ApiError::new(
            ErrorKind::Forbidden,
            "This API key or its account has been disabled",
        ),
        e => ApiError::internal("placing a hold on the balance", e),
    }
}

async fn release(state: &State, hold: &Hold, reason: &str) {
    match state.store.release(&hold.id, reason).await {
        Ok(Closed::Now) => state.metrics.hold_closed("released"),
        Ok(Closed::Already) => {}
        Err(e) => tracing::error!(hold = %hold.id, error = %e, "releasing failed"),
    }
}

impl Drop for HeldCharge {
    fn drop(&mut self) {
        let Some(hold) = self.hold.take() else {
            return;
        };
        let state = self.state.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    release(&state, &hold, "request ended before settlement").await;
                });
            }
            Err(_) => {
                tracing::error!(hold = %hold.id, "hold dropped outside a runtime; the sweeper will release it");
            }
        }
    }
}
