//! A request's charges, explained (docs/architecture.md, "Explanations"): what its ledger rows
//! and usage records recorded, with the price version they name, re-derived by
//! `tollgate_billing::Explanation::derive`.

use crate::{Store, StoreError};
use std::collections::BTreeMap;
use tollgate_billing::{Amount, Explanation, Usage, explain};

/// Who may see a request's charges: everything (the operator), or one account's, or one key's.
#[derive(Debug, Clone, Copy, Default)]
pub struct Viewer<'a> {
    /// Only this account's charges.
    pub account_id: Option<&'a str>,
    /// Only this key's charges.
    pub key_id: Option<&'a str>,
}

/// What a request's id finds.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RequestCharges {
    /// The request's usage records (a task's creating request has two: its own, with the
    /// hold, and the task's, with the charge).
    pub records: u64,
    /// Its charges, explained, oldest first.
    pub charges: Vec<Explanation>,
    /// Charges whose arithmetic does not agree with what was taken (their ledger ids).
    pub disagree: Vec<String>,
}

impl RequestCharges {
    /// The accounts charged, in the order of their first charge: more than one when accounts'
    /// clients chose the same request id.
    pub fn accounts(&self) -> Vec<&str> {
        let mut accounts: Vec<&str> = Vec::new();
        for account in self.charges.iter().filter_map(|c| c.account_id.as_deref()) {
            if !accounts.contains(&account) {
                accounts.push(account);
            }
        }
        accounts
    }

    /// What `account` was charged under this request id.
    pub fn charged_to(&self, account: &str) -> Amount {
        Amount::from_nanos(
            self.charges
                .iter()
                .filter(|c| c.account_id.as_deref() == Some(account))
                .map(|c| c.charged.nanos())
                .fold(0i64, i64::saturating_add),
        )
    }

    /// What the request was charged in all.
    pub fn charged(&self) -> Amount {
        Amount::from_nanos(
            self.charges
                .iter()
                .map(|c| c.charged.nanos())
                .fold(0i64, i64::saturating_add),
        )
    }
}

type ChargeRow = (
    String,
    String,
    Option<String>,
    Option<String>,
    i64,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<String>,
    i64,
    i64,
    Option<String>,
    Option<String>,
);

const CHARGE_COLUMNS: &str = "id, account_id, request_id, task_id, created_at, model, quantity, \
    price_version, price_group, price_multiplier, bound_nanos, anomaly, loss_nanos, amount_nanos, \
    note, hold_id";

impl Store {
    /// The charges of request `request_id` that `viewer` may see, explained: `None` when the
    /// request left no usage record and no charge it may see.
    pub async fn explain(
        &self,
        request_id: &str,
        viewer: Viewer<'_>,
    ) -> Result<Option<RequestCharges>, StoreError> {
        let mut filter = String::new();
        let mut args = vec![request_id.to_owned()];
        for (column, value) in [("account_id", viewer.account_id), ("key_id", viewer.key_id)] {
            if let Some(value) = value {
                args.push(value.to_owned());
                filter.push_str(&format!(" AND {column} = ${}", args.len()));
            }
        }
        type RecordRow = (Option<String>, i64, Option<String>, Option<String>);
        let mut query = sqlx::query_as::<_, RecordRow>(sqlx::AssertSqlSafe(format!(
            "SELECT hold_id, hold_nanos, measured, bound_basis FROM usage_log
             WHERE request_id = $1{filter} ORDER BY created_at, id"
        )));
        for arg in &args {
            query = query.bind(arg.clone());
        }
        let records = query.fetch_all(self.pool()).await?;
        // The records of charges say how they were measured; the charges are found by their
        // holds, in one query.
        let facts: BTreeMap<&str, (i64, Option<&str>, Option<&str>)> = records
            .iter()
            .filter_map(|(hold_id, hold, measured, bound_basis)| {
                Some((
                    hold_id.as_deref()?,
                    (*hold, measured.as_deref(), bound_basis.as_deref()),
                ))
            })
            .collect();
        let mut query = sqlx::query_as::<_, ChargeRow>(sqlx::AssertSqlSafe(format!(
            "SELECT {CHARGE_COLUMNS} FROM ledger
             WHERE kind = 'charge' AND hold_id IN
                 (SELECT hold_id FROM usage_log WHERE request_id = $1{filter})
             ORDER BY created_at, id"
        )));
        for arg in &args {
            query = query.bind(arg.clone());
        }
        let mut rows = query.fetch_all(self.pool()).await?;
        if rows.is_empty() {
            // Records pruned after `[usage] retention_days`: the ledger keeps the charges.
            let mut query = sqlx::query_as::<_, ChargeRow>(sqlx::AssertSqlSafe(format!(
                "SELECT {CHARGE_COLUMNS} FROM ledger
                 WHERE request_id = $1 AND kind = 'charge'{filter} ORDER BY created_at, id"
            )));
            for arg in &args {
                query = query.bind(arg.clone());
            }
            rows = query.fetch_all(self.pool()).await?;
        }
        if records.is_empty() && rows.is_empty() {
            return Ok(None);
        }
        let versions = self.price_versions(None).await?;
        let mut found = RequestCharges {
            records: records.len() as u64,
            ..RequestCharges::default()
        };
        for row in rows {
            let (
                id,
                account_id,
                request_id,
                task_id,
                created_at,
                model,
                quantity,
                price_version,
                price_group,
                price_multiplier,
                bound_nanos,
                anomaly,
                loss_nanos,
                amount_nanos,
                note,
                hold_id,
            ) = row;
            let model = model.unwrap_or_default();
            let Some(quantity) = quantity
                .as_deref()
                .and_then(|q| serde_json::from_str::<Usage>(q).ok())
            else {
                found.disagree.push(id);
                continue;
            };
            let fact = hold_id.as_deref().and_then(|h| facts.get(h));
            let version = price_version
                .and_then(|v| versions.iter().find(|p| p.model == model && p.version == v));
            let mut explanation = Explanation {
                ledger_id: id.clone(),
                account_id: Some(account_id),
                request_id,
                task_id,
                charged_at: created_at,
                model,
                meter: quantity.meter(),
                quantity,
                units: quantity.in_words(),
                measured: fact
                    .and_then(|f| f.1)
                    .and_then(tollgate_billing::Measure::parse),
                note,
                price_version,
                price_reconstructed: version.is_some_and(|v| v.reconstructed),
                tariff: None,
                price_group,
                multiplier: price_multiplier.unwrap_or_else(|| "1".into()),
                exact: None,
                rounding: explain::ROUNDING.into(),
                priced: None,
                hold: fact.map(|f| Amount::from_nanos(f.0)),
                bound: bound_nanos.map(Amount::from_nanos),
                bound_basis: fact.and_then(|f| f.2.map(str::to_owned)),
                cut_by_bound: false,
                anomaly,
                loss: Amount::from_nanos(loss_nanos),
                charged: Amount::from_nanos(amount_nanos.saturating_neg()),
            };
            let agrees = version.is_some_and(|v| explanation.derive(&v.tariff));
            if !agrees && version.is_some() {
                found.disagree.push(id);
            }
            found.charges.push(explanation);
        }
        Ok(Some(found))
    }
}
