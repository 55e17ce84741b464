//! `tollgate keys …`

use crate::cli::{Common, KeysCommand};
use crate::common::{load_config, open_store};
use tollgate_admin::ops::{self, Actor, OpError};
use tollgate_admin::views;
use tollgate_store::{AccountReport, PolicyHolder, Store};

pub async fn run(common: &Common, command: KeysCommand) -> Result<(), String> {
    let config = load_config(common)?;
    let store = open_store(&config, matches!(command, KeysCommand::Create { .. })).await?;
    let result = execute(&store, command).await;
    store.close().await;
    result
}

async fn execute(store: &Store, command: KeysCommand) -> Result<(), String> {
    let actor = Actor::cli();
    let cli = |e: OpError| e.for_cli();
    match command {
        KeysCommand::Create { name, balance } => {
            let (_, key) = ops::create_account(store, &actor, &name, &balance)
                .await
                .map_err(plain)?;
            println!("{}", key.secret);
        }
        KeysCommand::List { json } => {
            let accounts = store.list_accounts().await.map_err(|e| e.to_string())?;
            if json {
                let list: Vec<_> = accounts.iter().map(views::account).collect();
                println!("{}", views::json(&list));
            } else {
                println!(
                    "{:<24} {:<26} {:>16} {:>14} {:>16}  STATUS",
                    "NAME", "ID", "BALANCE", "HELD", "AVAILABLE"
                );
                for a in accounts {
                    println!(
                        "{:<24} {:<26} {:>16} {:>14} {:>16}  {}",
                        a.name,
                        a.id,
                        a.balance.to_string(),
                        a.held.to_string(),
                        a.available().to_string(),
                        if a.disabled { "disabled" } else { "active" }
                    );
                }
            }
        }
        KeysCommand::Credit {
            account,
            amount,
            allow_negative,
            reason,
            idempotency_key,
        } => {
            let credited = ops::credit(
                store,
                &actor,
                &account,
                &amount,
                &reason,
                allow_negative,
                idempotency_key.as_deref(),
            )
            .await
            .map_err(cli)?;
            let a = &credited.account;
            if credited.replayed {
                println!(
                    "{}: balance {} (already credited under this idempotency key)",
                    a.name, a.balance
                );
            } else {
                println!("{}: balance {}", a.name, a.balance);
            }
        }
        KeysCommand::Show { account, json } => {
            let found = store
                .find_account(&account)
                .await
                .map_err(|e| e.to_string())?;
            let report = store.report(&found.id).await.map_err(|e| e.to_string())?;
            if json {
                println!("{}", views::json(&views::report(&report)));
            } else {
                print_report(&report);
            }
        }
        KeysCommand::Disable { account } => {
            let a = ops::set_account_disabled(store, &actor, &account, true)
                .await
                .map_err(plain)?;
            println!("{}: disabled", a.name);
        }
        KeysCommand::Enable { target } => match store.policy_holder(&target).await {
            Ok(PolicyHolder::Key(key)) => {
                ops::enable_key(store, &actor, &key).await.map_err(plain)?;
                println!("{key}: enabled");
            }
            Ok(PolicyHolder::Account(account)) => {
                let a = ops::set_account_disabled(store, &actor, &account, false)
                    .await
                    .map_err(plain)?;
                println!("{}: enabled", a.name);
            }
            Err(e) => return Err(e.to_string()),
        },
        KeysCommand::Add { account, name } => {
            let (_, key) = ops::add_key(store, &actor, &account, &name)
                .await
                .map_err(plain)?;
            println!("{}", key.secret);
        }
        KeysCommand::Revoke { key } => {
            ops::revoke_key(store, &actor, &key).await.map_err(plain)?;
            println!("{key}: revoked");
        }
        KeysCommand::Ledger {
            account,
            limit,
            json,
        } => {
            let found = store
                .find_account(&account)
                .await
                .map_err(|e| e.to_string())?;
            let rows = store
                .ledger_page(&found.id, limit, None)
                .await
                .map_err(|e| e.to_string())?;
            if json {
                let list: Vec<_> = rows.iter().map(views::ledger_entry).collect();
                println!("{}", serde_json::json!({ "rows": list }));
            } else {
                println!(
                    "{:<22} {:<10} {:>18} {:>18}  {:<28} NOTE",
                    "TIME", "KIND", "AMOUNT", "BALANCE AFTER", "MODEL"
                );
                for r in rows {
                    println!(
                        "{:<22} {:<10} {:>18} {:>18}  {:<28} {}",
                        tollgate_journal::clock::format_rfc3339(r.created_at),
                        r.kind.as_str(),
                        r.amount.to_string(),
                        r.balance_after.to_string(),
                        r.model.unwrap_or_default(),
                        r.note.or(r.quantity).unwrap_or_default()
                    );
                }
            }
        }
        KeysCommand::Rotate { key } => {
            let (_, new) = ops::rotate_key(store, &actor, &key).await.map_err(plain)?;
            println!("{}", new.secret);
        }
    }
    Ok(())
}

/// An error as the keys commands have always said it: the message alone (their inputs are
/// positional, not flags).
fn plain(e: OpError) -> String {
    e.message
}

fn print_report(r: &AccountReport) {
    let a = &r.account;
    println!("account     {} ({})", a.name, a.id);
    println!(
        "status      {}",
        if a.disabled { "disabled" } else { "active" }
    );
    println!("balance     {}", a.balance);
    println!("held        {} in {} open hold(s)", a.held, r.open_holds);
    println!(
        "leased      {} (credit the running gateways serve requests from)",
        a.leased
    );
    println!("available   {}", a.available());
    println!(
        "ledger      {} row(s), summing to {}",
        r.ledger_rows, r.ledger_sum
    );
    for k in &r.keys {
        println!(
            "key         {} {}… {}",
            k.id,
            k.prefix,
            if k.revoked {
                "revoked"
            } else if k.disabled {
                "disabled"
            } else {
                ""
            }
        );
    }
    if !r.usage.is_empty() {
        println!("usage by model:");
        for u in &r.usage {
            println!(
                "  {:<32} {:>8} request(s) {:>16}",
                u.model,
                u.requests,
                u.charged.to_string()
            );
        }
    }
}
