//! `tollgate audit`: the money invariants of DESIGN §4, checked against the database.

use crate::cli::{AuditArgs, Common};
use crate::common::{load_config, open_store};

pub async fn run(common: &Common, args: AuditArgs) -> Result<(), String> {
    let config = load_config(common)?;
    let store = open_store(&config, false).await?;
    let report = store.audit().await;
    store.close().await;
    let report = report.map_err(|e| format!("audit: {e}"))?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&report).map_err(|e| e.to_string())?
        );
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
        for v in &report.violations {
            println!("VIOLATION {}: {}: {}", v.rule, v.subject, v.detail);
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
