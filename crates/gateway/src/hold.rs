//! A placed hold (DESIGN §2 step 8): settled to the actual cost — bounded by what the gateway can
//! justify — or released, exactly once by construction: the engine closes the hold synchronously
//! on settle, release or drop (`tollgate_journal::ledger`). Placing one — the model rule,
//! the price, admission — is [`crate::admission`]; what runs under a hold (a stream's pump, a
//! relay) needs only this.

use std::sync::Arc;
use tollgate_billing::{Amount, Tariff, Usage};
use tollgate_exchange::errors::ApiError;
use tollgate_journal::ledger::{ChargeMemo, Hold};
use tollgate_journal::usage::{Explained, Recorder};
use tollgate_metering::{Basis, Bound, Capped};
use tollgate_request::admission::Admission;
use tollgate_request::quotas::Admitted;
use tollgate_request::state::State;
use tollgate_settings::catalog::ModelEntry;
use tollgate_store::{PriceGroup, Principal};

/// What every hold — a request's in memory, a task's with its row — starts from: the model
/// rule passed, the caller's tariff, the estimate priced at it, and the caller's per-minute
/// units and budgets admitted at that price (`docs/architecture.md`, "The request path").
#[derive(Debug)]
pub struct Priced {
    /// The model's tariff as this caller pays it.
    pub tariff: Tariff,
    /// The caller's price group as priced, for the ledger row.
    pub price_group: Option<Arc<PriceGroup>>,
    /// The version of the model's price it is (docs/architecture.md, "Prices").
    pub price_version: Option<i64>,
    /// The estimate's price: what is to be held.
    pub amount: Amount,
    /// What the estimate took of the caller's per-minute units and budgets.
    pub spend: Option<Admitted>,
}

/// Whose hold it is: the caller's key, the request, its usage record and what admission holds
/// for it.
#[derive(Debug)]
pub struct Holder {
    /// The caller's key, for the ledger row.
    pub key_id: String,
    /// The request's id, for the ledger row.
    pub request_id: String,
    /// The request's usage record, written with the charge.
    pub usage: Option<Recorder>,
    /// What admission holds for the request, kept as long as the hold.
    pub admission: Admission,
}

/// An open hold that must be settled or released.
#[derive(Debug)]
pub struct HeldCharge {
    state: Arc<State>,
    hold: Option<Hold>,
    entry: Arc<ModelEntry>,
    /// The model's tariff as this caller pays it: times its price group's multiplier.
    tariff: Tariff,
    /// The caller's price group, for the ledger row.
    price_group: Option<Arc<PriceGroup>>,
    /// The version of the model's price `tariff` is, for the ledger row.
    price_version: Option<i64>,
    key_id: String,
    request_id: String,
    /// The most a settlement may charge, and why (`tollgate_metering::bound`).
    bound: Bound,
    /// The request's usage record, written with the charge (or, released, when the last of
    /// the request lets go of it).
    usage: Option<Recorder>,
    /// What admission holds for the request (its concurrency slot among it): kept as long as
    /// the hold, so a stream keeps its slot to its last frame (held for its drop).
    _admission: Admission,
    /// What the hold took of the caller's per-minute units and budgets: trued up by the
    /// settlement, given back if there is none.
    spend: Option<Admitted>,
    /// An anomaly the work found before settling (a vendor's claim cut class by class), for
    /// the ledger row.
    anomaly: Option<String>,
}

impl HeldCharge {
    /// The hold the ledger placed for `priced` of `entry`, for `holder` (`crate::admission::place_hold`
    /// places it). A settlement may charge up to `tollgate_metering::bound::HOLD_MULTIPLE` × the
    /// hold unless [`HeldCharge::bounded_by_estimate`] says the estimate is exact.
    pub fn new(
        state: Arc<State>,
        hold: Hold,
        entry: Arc<ModelEntry>,
        priced: Priced,
        holder: Holder,
    ) -> HeldCharge {
        HeldCharge {
            state,
            bound: Bound::of_hold(priced.amount),
            hold: Some(hold),
            entry,
            tariff: priced.tariff,
            price_group: priced.price_group,
            price_version: priced.price_version,
            key_id: holder.key_id,
            request_id: holder.request_id,
            usage: holder.usage,
            _admission: holder.admission,
            spend: priced.spend,
            anomaly: None,
        }
    }

    /// Declares the estimate the locally known quantity (text length, probed duration, requested
    /// duration): the upstream's figure is charged up to it and no further.
    pub fn bounded_by_estimate(mut self) -> HeldCharge {
        self.bound = Bound::measured(self.amount());
        self
    }

    /// Declares `usage` the most the request can justify (a locally known quantity with a
    /// tolerance): the upstream's figure is charged up to its price and no further.
    pub fn bounded_by(mut self, usage: &Usage) -> HeldCharge {
        if let Some(bound) = Bound::measured_usage(&self.tariff, usage, self.amount()) {
            self.bound = bound;
        }
        self
    }

    /// Declares `usage` exactly the most the request can justify, even below the hold (an image
    /// call that delivered fewer images than it held for): the upstream's figure is charged up
    /// to its price and no further.
    pub fn bounded_exactly(mut self, usage: &Usage) -> HeldCharge {
        if let Ok(amount) = self.tariff.charge(usage) {
            self.bound = Bound::measured(amount);
        }
        self
    }

    /// Joins `admitted` (another quota the request was admitted by: an image call's images) to
    /// the hold's: settled with it (kept), or given back with it when the hold is released.
    pub fn absorb(mut self, admitted: Option<Admitted>) -> HeldCharge {
        if let Some(admitted) = admitted {
            match &mut self.spend {
                Some(spend) => spend.absorb(admitted),
                None => self.spend = Some(admitted),
            }
        }
        self
    }

    /// Notes `anomaly` (a vendor's claim the caller already cut to what was relayed), recorded
    /// with the settlement as a cut by the bound is.
    pub fn with_anomaly(mut self, anomaly: Option<String>) -> HeldCharge {
        self.anomaly = anomaly.or(self.anomaly.take());
        self
    }

    /// The request's usage record, for what the work under the hold learns (the channel).
    pub fn usage(&self) -> Option<&Recorder> {
        self.usage.as_ref()
    }

    /// What is held.
    pub fn amount(&self) -> Amount {
        self.hold.as_ref().map_or(Amount::ZERO, Hold::amount)
    }

    /// Settles with a charge already cut to its bound (`tollgate_metering::Capped`): at most
    /// the bound's price (`bounded_exactly`), with the anomaly of the cut.
    pub async fn settle_within(self, capped: Capped) -> Result<Amount, ApiError> {
        self.bounded_exactly(&capped.bound)
            .with_anomaly(capped.anomaly)
            .settle(&capped.usage, capped.basis)
            .await
    }

    /// Charges `usage` at the model's price — at most the bound, the excess refused and recorded
    /// as an anomaly — releases the rest, and waits until the ledger row is durable. The hold is
    /// closed before the first await. Returns the charge.
    pub async fn settle(mut self, usage: &Usage, basis: Basis) -> Result<Amount, ApiError> {
        let Some(hold) = self.hold.take() else {
            return Ok(Amount::ZERO);
        };
        let quantity = serde_json::to_string(usage).unwrap_or_default();
        let (actual, anomaly) = self.bound.charge(&self.tariff, usage, &quantity);
        let anomaly = anomaly.or(self.anomaly.take());
        if let Some(anomaly) = &anomaly {
            tracing::warn!(model = %self.entry.public, hold = %hold.id(), anomaly, "settlement capped");
            self.state.metrics.settlement_anomaly(&self.entry.public);
        }
        let record = self.usage.as_ref().and_then(|recorder| {
            let how = Explained {
                estimated: basis.estimated,
                note: basis.note.as_deref().or(anomaly.as_deref()),
                measured: basis.measured,
                bound_basis: self.bound.basis,
            };
            recorder.settled(hold.id(), usage, &quantity, actual, &how)
        });
        let memo = ChargeMemo {
            model: self.entry.public.clone(),
            quantity: Some(quantity),
            key_id: Some(self.key_id.clone()),
            request_id: Some(self.request_id.clone()),
            estimated: basis.estimated,
            note: basis.note,
            anomaly,
            price_group: self.price_group.clone(),
            price_version: self.price_version,
            bound: Some(self.bound.amount),
        };
        if let Some(spend) = self.spend.take() {
            spend.settle(usage, actual);
        }
        self.state.metrics.charged(
            self.price_group.as_ref().map(|g| g.name.as_str()),
            actual.nanos(),
        );
        let durable = hold.settle(actual, memo, record);
        self.state.metrics.hold_closed("settled");
        crate::trace::record_charge(usage, actual);
        if !durable.wait().await {
            return Err(ApiError::internal(
                "recording the charge",
                "the ledger writer stopped",
            ));
        }
        Ok(actual)
    }

    /// Returns the whole hold to the balance.
    pub fn release(mut self, reason: &str) {
        if let Some(hold) = self.hold.take() {
            tracing::debug!(hold = %hold.id(), reason, "hold released");
            hold.release();
            self.state.metrics.hold_closed("released");
        }
    }
}

impl Drop for HeldCharge {
    fn drop(&mut self) {
        // The engine releases a dropped hold synchronously; only the count is ours.
        if self.hold.take().is_some() {
            self.state.metrics.hold_closed("released");
        }
    }
}

/// A stream's final event with what the stream was charged (docs/api.md §8.1): `event` — a JSON
/// object, or an SSE frame whose data is one — gains `"tollgate":{"charge":"…"}` as its last
/// field, spliced in so the rest stays byte for byte as the encoder wrote it. Unchanged when
/// nothing was charged (or the settlement failed).
pub fn with_charge(event: &str, charged: Option<Amount>) -> String {
    match (charged, event.rfind('}')) {
        (Some(amount), Some(end)) => {
            let empty = event[..end].trim_end().ends_with('{');
            format!(
                "{}{}\"tollgate\":{{\"charge\":\"{amount}\"}}{}",
                &event[..end],
                if empty { "" } else { "," },
                &event[end..]
            )
        }
        _ => event.to_owned(),
    }
}

/// `model`'s tariff as `principal` pays it — the list tariff scaled by its price group's
/// multiplier for that model (`docs/decisions.md`, "Price groups") — and the group as priced
/// (its name and that one multiplier, for the ledger row); the list tariff without a group.
pub fn priced(
    principal: &Principal,
    model: &str,
    list: &Tariff,
) -> Result<(Tariff, Option<Arc<PriceGroup>>), ApiError> {
    let Some(group) = &principal.price_group else {
        return Ok((list.clone(), None));
    };
    let tariff = list
        .scaled(group.multiplier_for(model))
        .map_err(|e| ApiError::internal("pricing the request in its price group", e))?;
    // The common case (no model of its own) shares the group; an override is its own.
    let as_priced = if group.models.contains_key(model) {
        Arc::new(group.for_model(model))
    } else {
        group.clone()
    };
    Ok((tariff, Some(as_priced)))
}

#[cfg(test)]
mod tests {
    use super::with_charge;
    use tollgate_billing::Amount;

    #[test]
    fn the_charge_is_the_final_events_last_field_and_nothing_else_moves() {
        let charged = Some(Amount::from_nanos(660_000));
        assert_eq!(
            with_charge(
                r#"{"type":"speech.audio.done","usage":{"input_tokens":11}}"#,
                charged
            ),
            r#"{"type":"speech.audio.done","usage":{"input_tokens":11},"tollgate":{"charge":"0.00066"}}"#
        );
        assert_eq!(
            with_charge("event: response.completed\ndata: {\"a\":1}\n\n", charged),
            "event: response.completed\ndata: {\"a\":1,\"tollgate\":{\"charge\":\"0.00066\"}}\n\n"
        );
        assert_eq!(
            with_charge("{}", charged),
            r#"{"tollgate":{"charge":"0.00066"}}"#
        );
        assert_eq!(with_charge(r#"{"a":1}"#, None), r#"{"a":1}"#);
    }
}
