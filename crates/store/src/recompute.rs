//! `tollgate audit --recompute` (docs/architecture.md, "Prices"): every charge re-derived from
//! what its ledger row records — the quantity, the price version, the price group's multiplier,
//! the bound — by the one rule a settlement charges by (`Tariff::charge_within`), and compared
//! with what was taken.

use crate::audit::Violation;
use crate::{Store, StoreError};
use serde::Serialize;
use std::collections::HashSet;
use tollgate_billing::explain::Derivation;
use tollgate_billing::{Amount, Decimal, PriceSchedule, Tariff, Usage};

/// Ledger rows read per page.
const PAGE: i64 = 5_000;

/// The most mismatches listed (the count says how many there were in all).
const LISTED: usize = 100;

/// What re-deriving the charges found.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RecomputeReport {
    /// Charge rows read.
    pub charges: u64,
    /// Re-derived to the nano-unit.
    pub recomputed: u64,
    /// Written before price versions and not attributed to one (their model has left the
    /// configuration): nothing to re-derive them from.
    pub unversioned: u64,
    /// Priced at a version reconstructed at the upgrade that did not re-derive them: the price
    /// they were charged at is not known for certain, so they are listed but not violations.
    pub unverifiable: u64,
    /// Charges that do not re-derive (rule `charge_recomputes`), or whose version or quantity
    /// cannot be read.
    pub violations: Vec<Violation>,
    /// How many violations there were (only the first are listed).
    pub violation_count: u64,
}

/// A charge row as `recompute` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedCharge {
    /// The row.
    pub id: String,
    /// Its account.
    pub account_id: String,
    /// The public model.
    pub model: Option<String>,
    /// The metered quantity (JSON of `tollgate_billing::Usage`).
    pub quantity: Option<String>,
    /// The price version.
    pub price_version: Option<i64>,
    /// The price group's multiplier (`None`: list prices).
    pub price_multiplier: Option<String>,
    /// The most it could be.
    pub bound_nanos: Option<i64>,
    /// What the account could not pay of it (the operator's loss).
    pub loss_nanos: i64,
    /// What was taken (negative).
    pub amount_nanos: i64,
}

/// What one charge re-derives to, before what the account could not pay; or why it cannot be
/// (the arithmetic is [`Derivation::of`], the one an explanation shows).
pub fn rederive(row: &RecordedCharge, tariff: &Tariff) -> Result<Amount, String> {
    let quantity = row.quantity.as_deref().ok_or("no quantity recorded")?;
    let usage: Usage = serde_json::from_str(quantity)
        .map_err(|e| format!("the quantity {quantity:?} is not a usage: {e}"))?;
    let multiplier = match row.price_multiplier.as_deref() {
        None => Decimal::ONE,
        Some(m) => m
            .parse::<Decimal>()
            .map_err(|e| format!("the multiplier {m:?} is not a decimal: {e}"))?,
    };
    Derivation::of(
        tariff,
        multiplier,
        &usage,
        row.bound_nanos.map(Amount::from_nanos),
    )
    .map(|derived| derived.charge)
    .map_err(|e| format!("{quantity} × {multiplier} cannot be priced: {e}"))
}

impl Store {
    /// Re-derives every charge of the ledger ([`rederive`]) at the price version it names.
    pub async fn recompute(&self) -> Result<RecomputeReport, StoreError> {
        let versions = self.price_versions(None).await?;
        let schedule = PriceSchedule::from_versions(versions.iter().map(|p| p.as_version()));
        let reconstructed: HashSet<(&str, i64)> = versions
            .iter()
            .filter(|p| p.reconstructed)
            .map(|p| (p.model.as_str(), p.version))
            .collect();
        let mut report = RecomputeReport::default();
        let mut after = String::new();
        loop {
            type Row = (
                String,
                String,
                Option<String>,
                Option<String>,
                Option<i64>,
                Option<String>,
                Option<i64>,
                i64,
                i64,
            );
            let rows: Vec<Row> = sqlx::query_as(
                "SELECT id, account_id, model, quantity, price_version, price_multiplier, bound_nanos,
                     loss_nanos, amount_nanos
                 FROM ledger WHERE kind = 'charge' AND id > $1 ORDER BY id LIMIT $2",
            )
            .bind(&after)
            .bind(PAGE)
            .fetch_all(self.pool())
            .await?;
            let page: Vec<RecordedCharge> = rows
                .into_iter()
                .map(
                    |(
                        id,
                        account_id,
                        model,
                        quantity,
                        price_version,
                        price_multiplier,
                        bound_nanos,
                        loss_nanos,
                        amount_nanos,
                    )| {
                        RecordedCharge {
                            id,
                            account_id,
                            model,
                            quantity,
                            price_version,
                            price_multiplier,
                            bound_nanos,
                            loss_nanos,
                            amount_nanos,
                        }
                    },
                )
                .collect();
            let Some(last) = page.last() else { break };
            after.clone_from(&last.id);
            for row in &page {
                report.charges += 1;
                let (Some(model), Some(version)) = (row.model.as_deref(), row.price_version) else {
                    report.unversioned += 1;
                    continue;
                };
                let found = match schedule.version(model, version) {
                    None => Err(format!("no price version {model}@{version}")),
                    Some(v) => rederive(row, &v.tariff),
                };
                let taken = row.amount_nanos.saturating_neg();
                let detail = match found {
                    Ok(derived) if derived.nanos().saturating_sub(row.loss_nanos) == taken => {
                        report.recomputed += 1;
                        continue;
                    }
                    Ok(derived) => format!(
                        "charged {} but {} at {model}@{version}{} re-derives to {derived}{}",
                        Amount::from_nanos(taken),
                        row.quantity.as_deref().unwrap_or("?"),
                        row.price_multiplier
                            .as_deref()
                            .map(|m| format!(" × {m}"))
                            .unwrap_or_default(),
                        if row.loss_nanos > 0 {
                            format!(
                                " less the operator's loss {}",
                                Amount::from_nanos(row.loss_nanos)
                            )
                        } else {
                            String::new()
                        },
                    ),
                    Err(why) => why,
                };
                if reconstructed.contains(&(model, version)) {
                    report.unverifiable += 1;
                    continue;
                }
                report.violation_count += 1;
                if report.violations.len() < LISTED {
                    report.violations.push(Violation {
                        rule: "charge_recomputes",
                        subject: format!("{} ({})", row.id, row.account_id),
                        detail,
                    });
                }
            }
        }
        Ok(report)
    }
}
