//! A hold as the request flow uses it (DESIGN §2 steps 5 and 8): priced by the model's tariff,
//! placed on the ledger engine before the upstream call, then settled to the actual cost —
//! bounded by what the gateway can justify — or released. Exactly once, by construction: the
//! engine closes the hold synchronously on settle, release or drop (`tollgate_gateway_core::ledger`).

use std::sync::Arc;
use tollgate_billing::{Amount, Tariff, Usage};
use tollgate_gateway_core::admission::Admission;
use tollgate_gateway_core::catalog::ModelEntry;
use tollgate_gateway_core::context::RequestCtx;
use tollgate_gateway_core::errors::{ApiError, ErrorKind};
use tollgate_gateway_core::ledger::{ChargeMemo, Hold};
use tollgate_gateway_core::prices::Price;
use tollgate_gateway_core::quotas::Admitted;
use tollgate_gateway_core::state::State;
use tollgate_gateway_core::usage::{Explained, Recorder};
use tollgate_ledger::Refusal;
use tollgate_metering::{Basis, Bound};
use tollgate_store::{PriceGroup, Principal};

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

impl Priced {
    /// Prices `estimate` of `model` (a public name) for the caller at `price` (the version in
    /// effect, `Prices::at`) and admits it against the caller's units and budgets, noting the model, the hold and the
    /// rate headers on the request's record. The model rule of the access policies comes first:
    /// no hold, so no upstream call, for a model the key may not use.
    pub async fn admit(
        ctx: &RequestCtx,
        principal: &Principal,
        model: &str,
        price: &Price,
        estimate: &Usage,
    ) -> Result<Priced, ApiError> {
        tracing::Span::current().record("gen_ai.request.model", model);
        ctx.note(|record| {
            record.model = Some(model.to_owned());
            record.price_version = price.version;
        });
        crate::admission::admit_model(principal, model)?;
        let (tariff, price_group) = priced(principal, model, &price.tariff)?;
        let amount = tariff
            .charge(estimate)
            .map_err(|e| ApiError::internal("pricing the request", e))?;
        ctx.note(|record| record.hold = amount);
        let spend = crate::admission::admit_spend(ctx, principal, estimate, amount).await?;
        Ok(Priced {
            tariff,
            price_group,
            price_version: price.version,
            amount,
            spend,
        })
    }
}

impl HeldCharge {
    /// Prices `estimate` with the model's tariff and holds that much of the caller's balance
    /// ([`Priced::admit`] first). A balance that does not cover it is a 429
    /// `insufficient_quota`, before any upstream call. A settlement may charge up to
    /// `tollgate_metering::bound::HOLD_MULTIPLE` × the hold unless [`HeldCharge::bounded_by_estimate`] says the
    /// estimate is exact.
    pub async fn place(
        ctx: &RequestCtx,
        principal: &Principal,
        entry: &Arc<ModelEntry>,
        estimate: &Usage,
    ) -> Result<HeldCharge, ApiError> {
        let price = ctx.state.prices.at(
            &entry.public,
            &entry.tariff,
            tollgate_gateway_core::clock::now_millis(),
        );
        let priced = Priced::admit(ctx, principal, &entry.public, &price, estimate).await?;
        let amount = priced.amount;
        let hold = ctx
            .state
            .ledger
            .hold(&principal.account_id, amount)
            .await
            .map_err(hold_refused)?;
        Ok(HeldCharge {
            state: ctx.state.clone(),
            hold: Some(hold),
            entry: entry.clone(),
            tariff: priced.tariff,
            price_group: priced.price_group,
            price_version: priced.price_version,
            key_id: principal.key_id.clone(),
            request_id: ctx.request_id.clone(),
            bound: Bound::of_hold(amount),
            usage: ctx.usage.clone(),
            _admission: ctx.admission.clone(),
            spend: priced.spend,
        })
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

    /// The request's usage record, for what the work under the hold learns (the channel).
    pub fn usage(&self) -> Option<&Recorder> {
        self.usage.as_ref()
    }

    /// What is held.
    pub fn amount(&self) -> Amount {
        self.hold.as_ref().map_or(Amount::ZERO, Hold::amount)
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

/// How a hold the ledger refused reaches the client: a balance that does not cover it is a 429
/// `insufficient_quota` (before any upstream call), a disabled account 403, and a database that
/// did not answer in time (a partition, an overloaded server) 503 with `Retry-After`: nothing
/// was held or sent upstream, and another replica may well serve it.
pub fn hold_refused(refusal: Refusal) -> ApiError {
    match refusal {
        Refusal::Insufficient {
            available,
            requested,
        } => insufficient(available, requested),
        Refusal::Disabled => disabled(),
        Refusal::Unavailable(why) => {
            tracing::warn!(reason = %why, "no credit: the ledger database did not answer");
            ApiError::new(
                ErrorKind::Unavailable,
                "The gateway could not reach its ledger database in time; nothing was charged. Retry shortly",
            )
            .retry_after(1)
        }
        other => ApiError::internal("placing a hold on the balance", other),
    }
}

/// The 429 for a balance that does not cover a hold.
pub fn insufficient(available: Amount, requested: Amount) -> ApiError {
    ApiError::new(
        ErrorKind::InsufficientBalance,
        format!(
            "You exceeded your current quota: this request needs {requested} and the balance has {available} available. Please add credit to your account."
        ),
    )
    .code("insufficient_quota")
}

/// The 403 for a disabled account or key.
pub fn disabled() -> ApiError {
    ApiError::new(
        ErrorKind::Forbidden,
        "This API key or its account has been disabled",
    )
}

/// How a hold the store refused (a video task's, placed with its row) reaches the client.
pub fn store_refused(e: tollgate_store::StoreError) -> ApiError {
    match e {
        tollgate_store::StoreError::InsufficientBalance {
            available,
            requested,
        } => insufficient(available, requested),
        tollgate_store::StoreError::Disabled(_) => disabled(),
        tollgate_store::StoreError::TooManyTasks { holder, limit } => ApiError::too_many(
            "video tasks in flight",
            holder,
            limit,
            "; retry when one finishes",
            10,
        ),
        e => ApiError::internal("placing a hold on the balance", e),
    }
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
