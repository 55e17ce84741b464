//! `tollgate codes …`: batches of redemption codes (docs/operations.md, "Redemption codes"),
//! the operations of `tollgate_admin::codes` run on the database.

use crate::cli::CodesCommand;
use crate::common::{load_config, open_store};
use std::io::Write as _;
use std::path::Path;
use tollgate_admin::codes::{self, NewBatch};
use tollgate_admin::ops::Actor;
use tollgate_admin::views;
use tollgate_journal::clock::format_rfc3339;
use tollgate_store::{CodeBatch, Store};

pub async fn run(common: &crate::cli::Common, command: CodesCommand) -> Result<(), String> {
    let config = load_config(common)?;
    let store = open_store(&config, false).await?;
    let result = execute(&store, command).await;
    store.close().await;
    result
}

async fn execute(store: &Store, command: CodesCommand) -> Result<(), String> {
    match command {
        CodesCommand::Create {
            amount,
            count,
            expires,
            name,
            out,
            json,
        } => {
            // The file first: codes made but not written anywhere would be lost for good.
            let mut file = create_private(&out)?;
            let asked = NewBatch {
                amount,
                count,
                expires,
                name,
            };
            let issued = match codes::issue(store, &Actor::cli(), &asked).await {
                Ok(issued) => issued,
                Err(e) => {
                    let _ = std::fs::remove_file(&out);
                    return Err(e.for_cli());
                }
            };
            let mut text = String::with_capacity(issued.codes.len() * 35);
            for code in &issued.codes {
                text.push_str(code);
                text.push('\n');
            }
            file.write_all(text.as_bytes())
                .and_then(|()| file.sync_all())
                .map_err(|e| {
                    format!(
                        "{}: {e}; batch {} was issued: revoke it (tollgate codes revoke {})",
                        out.display(),
                        issued.batch.id,
                        issued.batch.id
                    )
                })?;
            if json {
                println!("{}", views::json(&issued.batch));
            } else {
                print_batch(&issued.batch);
            }
            eprintln!(
                "wrote {} codes to {} (line N is code N of the batch's report); they are shown \
                 nowhere else",
                issued.codes.len(),
                out.display()
            );
        }
        CodesCommand::List { json } => {
            let batches = codes::batches(store).await.map_err(|e| e.for_cli())?;
            if json {
                println!("{}", views::json(&views::List { data: batches }));
                return Ok(());
            }
            println!(
                "{:<32} {:<20} {:>14} {:>9} {:>9} {:<22} STATE",
                "ID", "NAME", "AMOUNT", "ISSUED", "REDEEMED", "EXPIRES"
            );
            for b in &batches {
                println!(
                    "{:<32} {:<20} {:>14} {:>9} {:>9} {:<22} {}",
                    b.id,
                    b.name,
                    b.amount.to_string(),
                    b.count,
                    b.redeemed,
                    b.expires_at.map_or("never".into(), format_rfc3339),
                    state(b)
                );
            }
        }
        CodesCommand::Show { batch, json } => {
            let report = codes::report(store, &batch)
                .await
                .map_err(|e| e.for_cli())?;
            if json {
                println!("{}", views::json(&report));
                return Ok(());
            }
            print_batch(&report.batch);
            println!();
            println!(
                "{:>6} {:<26} {:<30} {:<30} ADDRESS",
                "CODE", "REDEEMED", "ACCOUNT", "LEDGER ROW"
            );
            for r in &report.redemptions {
                println!(
                    "{:>6} {:<26} {:<30} {:<30} {}",
                    r.number,
                    format_rfc3339(r.redeemed_at),
                    r.account_id,
                    r.ledger_id,
                    r.address.as_deref().unwrap_or("-")
                );
            }
        }
        CodesCommand::Revoke { batch } => {
            let revoked = codes::revoke(store, &Actor::cli(), &batch)
                .await
                .map_err(|e| e.for_cli())?;
            println!(
                "{}: revoked; {} of {} codes were redeemed and stay credited",
                revoked.id, revoked.redeemed, revoked.count
            );
        }
    }
    Ok(())
}

fn state(b: &CodeBatch) -> &'static str {
    if b.revoked_at.is_some() {
        "revoked"
    } else if b
        .expires_at
        .is_some_and(|at| at <= tollgate_journal::clock::now_millis())
    {
        "expired"
    } else {
        "live"
    }
}

fn print_batch(b: &CodeBatch) {
    println!("batch       {}", b.id);
    println!("name        {}", b.name);
    println!("amount      {} a code", b.amount);
    println!(
        "issued      {} by {} at {}",
        b.count,
        b.created_by,
        format_rfc3339(b.created_at)
    );
    println!("redeemed    {}", b.redeemed);
    println!(
        "expires     {}",
        b.expires_at.map_or("never".into(), format_rfc3339)
    );
    println!("state       {}", state(b));
}

/// A new file only its owner can read: codes are bearer money.
fn create_private(path: &Path) -> Result<std::fs::File, String> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path).map_err(|e| {
        format!(
            "{}: {e} (an existing file is never overwritten)",
            path.display()
        )
    })
}
