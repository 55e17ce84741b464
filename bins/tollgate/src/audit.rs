//! `tollgate audit`: the money invariants of DESIGN §4, checked against the database.

use crate::cli::{AuditArgs, Common};
use crate::common::{load_config, open_store};
use tollgate_settings::ledger_keys;

pub async fn run(common: &Common, args: AuditArgs) -> Result<(), String> {
    let config = load_config(common)?;
    let store = open_store(&config, false).await?;
    // Checkpoints are believed only when signed by the operator's keys, if it has any; those
    // published outside the database are believed beside the table's.
    let checkpoints = ledger_keys::audited_checkpoints(&config.ledger)?;
    let report = store.audit_with(&checkpoints).await;
    // Every charge re-derived, unless asked for the quick check: a price version whose tariff
    // was edited shows only so.
    let recompute = match (&report, args.quick) {
        (Ok(_), false) => Some(store.recompute().await),
        _ => None,
    };
    store.close().await;
    let mut report = report.map_err(|e| format!("audit: {e}"))?;
    let recompute = recompute
        .transpose()
        .map_err(|e| format!("audit --recompute: {e}"))?;
    // The charges that do not re-derive are violations like any other.
    if let Some(r) = &recompute {
        report.violations.extend(r.violations.iter().cloned());
    }
    if args.json {
        let mut value = serde_json::to_value(&report).map_err(|e| e.to_string())?;
        if let Some(recompute) = &recompute {
            value["recompute"] = serde_json::to_value(recompute).map_err(|e| e.to_string())?;
        }
        println!("{value}");
    } else {
        println!(
            "checked {} account(s), {} ledger row(s), {} hold(s), {} lease(s), {} task(s)",
            report.accounts, report.ledger_rows, report.holds, report.leases, report.tasks
        );
        println!(
            "credited {} − charged {} = balances {}",
            report.total_credited, report.total_charged, report.total_balance
        );
        println!(
            "anomalies (capped settlements, short charges, corrections beyond what was available): {}",
            report.anomalies
        );
        println!(
            "the operator's loss (what short charges could not take): {}",
            report.operator_losses
        );
        for account in &report.negative_accounts {
            println!("below zero (covered by recorded overdraws): {account}");
        }
        println!(
            "chained ledger rows: {}; checked against checkpoint: {}",
            report.chained_rows,
            report.checkpoint.as_deref().unwrap_or("none yet")
        );
        if let Some(r) = &recompute {
            println!(
                "recomputed {} of {} charge(s) to the nano-unit; {} written before price versions, {} at a reconstructed version that differs (not verifiable)",
                r.recomputed, r.charges, r.unversioned, r.unverifiable
            );
        }
        for v in &report.violations {
            println!("VIOLATION {}: {}: {}", v.rule, v.subject, v.detail);
        }
        if recompute
            .as_ref()
            .is_some_and(|r| r.violation_count > r.violations.len() as u64)
        {
            println!("(only the first charges that do not re-derive are listed)");
        }
        if report.violations.is_empty() {
            println!("ok: every invariant holds");
        }
    }
    if report.violations.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} invariant violation(s)",
            report.violations.len()
        ))
    }
}
