//! `tollgate keys …`

use crate::cli::{Common, KeysCommand, load_config, open_store};
use serde_json::json;
use tollgate_billing::Amount;
use tollgate_store::{Account, AccountReport, PolicyHolder, Store};

pub async fn run(common: &Common, command: KeysCommand) -> Result<(), String> {
    let config = load_config(common)?;
    let store = open_store(&config, matches!(command, KeysCommand::Create { .. })).await?;
    let result = execute(&store, command).await;
    store.close().await;
    result
}

async fn execute(store: &Store, command: KeysCommand) -> Result<(), String> {
    match command {
        KeysCommand::Create { name, balance } => {
            let balance = parse_amount(&balance)?;
            let (_, key) = store
                .create_account(&name, balance)
                .await
                .map_err(|e| e.to_string())?;
            println!("{}", key.secret);
        }
        KeysCommand::List { json } => {
            let accounts = store.list_accounts().await.map_err(|e| e.to_string())?;
            if json {
                let list: Vec<_> = accounts.iter().map(account_json).collect();
                println!("{}", serde_json::Value::Array(list));
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
        } => {
            let amount = parse_amount(&amount)?;
            let found = store
                .find_account(&account)
                .await
                .map_err(|e| e.to_string())?;
            // A correction that takes more than the balance is almost always a typo; checked
            // against the balance just read (a request settling meanwhile can still move it).
            let after = found.balance.checked_add(amount);
            if amount.is_negative() && !allow_negative && after.is_none_or(|b| b.is_negative()) {
                return Err(format!(
                    "{}: a credit of {amount} would leave the balance of {} below zero; \
                     pass --allow-negative to do it anyway",
                    found.name, found.balance
                ));
            }
            let after = store
                .credit(&found.id, amount, Some("credited from the command line"))
                .await
                .map_err(|e| e.to_string())?;
            println!("{}: balance {}", after.name, after.balance);
        }
        KeysCommand::Show { account, json } => {
            let found = store
                .find_account(&account)
                .await
                .map_err(|e| e.to_string())?;
            let report = store.report(&found.id).await.map_err(|e| e.to_string())?;
            if json {
                println!("{}", report_json(&report));
            } else {
                print_report(&report);
            }
        }
        KeysCommand::Disable { account } => {
            let found = store
                .find_account(&account)
                .await
                .map_err(|e| e.to_string())?;
            store
                .set_disabled(&found.id, true)
                .await
                .map_err(|e| e.to_string())?;
            println!("{}: disabled", found.name);
        }
        KeysCommand::Enable { target } => match store.policy_holder(&target).await {
            Ok(PolicyHolder::Key(key)) => {
                store.enable_key(&key).await.map_err(|e| e.to_string())?;
                println!("{key}: enabled");
            }
            Ok(PolicyHolder::Account(account)) => {
                let found = store
                    .find_account(&account)
                    .await
                    .map_err(|e| e.to_string())?;
                store
                    .set_disabled(&found.id, false)
                    .await
                    .map_err(|e| e.to_string())?;
                println!("{}: enabled", found.name);
            }
            Err(e) => return Err(e.to_string()),
        },
        KeysCommand::Add { account, name } => {
            let found = store
                .find_account(&account)
                .await
                .map_err(|e| e.to_string())?;
            let key = store
                .create_key(&found.id, &name)
                .await
                .map_err(|e| e.to_string())?;
            println!("{}", key.secret);
        }
        KeysCommand::Revoke { key } => {
            if !key.starts_with("key_") {
                return Err(format!(
                    "{key:?} is not a key id: revoke names one key (key_…, as `keys show` lists \
                     them); `keys disable` stops a whole account"
                ));
            }
            store.revoke_key(&key).await.map_err(|e| e.to_string())?;
            println!("{key}: revoked");
        }
    }
    Ok(())
}

fn parse_amount(text: &str) -> Result<Amount, String> {
    text.parse()
        .map_err(|e| format!("{text:?} is not an amount ({e}); write a decimal such as 1 or 0.25"))
}

fn account_json(a: &Account) -> serde_json::Value {
    json!({
        "id": a.id,
        "name": a.name,
        "balance": a.balance,
        "held": a.held,
        "leased": a.leased,
        "available": a.available(),
        "disabled": a.disabled,
        "created_at": a.created_at,
    })
}

fn report_json(r: &AccountReport) -> serde_json::Value {
    let mut v = account_json(&r.account);
    v["open_holds"] = json!(r.open_holds);
    v["keys"] = json!(r.keys);
    v["usage"] = json!(r.usage);
    v["ledger_rows"] = json!(r.ledger_rows);
    v["ledger_sum"] = json!(r.ledger_sum);
    v
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
