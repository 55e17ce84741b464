//! `tollgate policy …`: access policies of accounts and keys (`docs/decisions.md`, "Access
//! policies").

use crate::cli::{Common, GroupsCommand, PolicyCommand};
use crate::common::{load_config, open_store};
use serde_json::json;
use std::collections::BTreeMap;
use tollgate_admin::ops::{self, Actor, PolicyEdit};
use tollgate_admin::views;
use tollgate_journal::clock::format_rfc3339;
use tollgate_store::{AccessPolicy, Cidr, PolicyHolder, Store};

pub async fn run(common: &Common, command: PolicyCommand) -> Result<(), String> {
    let config = load_config(common)?;
    let store = open_store(&config, false).await?;
    let result = execute(&store, command).await;
    store.close().await;
    result
}

async fn execute(store: &Store, command: PolicyCommand) -> Result<(), String> {
    match command {
        PolicyCommand::Show { target, json } => {
            let holder = store
                .policy_holder(&target)
                .await
                .map_err(|e| e.to_string())?;
            let policy = store.policy(&holder).await.map_err(|e| e.to_string())?;
            if json {
                println!("{}", views::json(&views::policy(&holder, &policy)));
            } else {
                print_policy(&holder, &policy);
            }
        }
        PolicyCommand::Set {
            target,
            models,
            endpoints,
            expires,
            ips,
            group,
            rpm,
            per_minute,
            concurrency,
            streams,
            daily_budget,
            monthly_budget,
            tasks_in_flight,
        } => {
            let edit = PolicyEdit {
                models: models.as_deref().map(split_list),
                endpoints: endpoints.as_deref().map(split_list),
                expires,
                ips: ips.as_deref().map(split_list),
                group,
                rpm,
                per_minute: parse_per_minute(&per_minute)?,
                concurrency,
                streams,
                daily_budget,
                monthly_budget,
                tasks_in_flight,
            };
            let (holder, policy) = ops::set_policy(store, &Actor::cli(), &target, Some(&edit))
                .await
                .map_err(|e| e.for_cli())?;
            print_policy(&holder, &policy);
        }
        PolicyCommand::Clear { target } => {
            let (holder, _) = ops::set_policy(store, &Actor::cli(), &target, None)
                .await
                .map_err(|e| e.for_cli())?;
            println!("{}: no policy", holder_name(&holder));
        }
    }
    Ok(())
}

fn holder_name(holder: &PolicyHolder) -> String {
    match holder {
        PolicyHolder::Account(id) => format!("account {id}"),
        PolicyHolder::Key(id) => format!("key {id}"),
    }
}

/// `--per-minute METER=N` (the meters are checked with the rest of the policy).
fn parse_per_minute(items: &[String]) -> Result<Option<BTreeMap<String, u64>>, String> {
    if items.is_empty() {
        return Ok(None);
    }
    let mut out = BTreeMap::new();
    for item in items {
        let (meter, n) = item
            .split_once('=')
            .ok_or_else(|| format!("--per-minute: {item:?} is not METER=N (e.g. tokens=100000)"))?;
        let n: u64 = n
            .trim()
            .parse()
            .map_err(|_| format!("--per-minute: {n:?} is not a whole number"))?;
        out.insert(meter.trim().to_owned(), n);
    }
    Ok(Some(out))
}

fn print_policy(holder: &PolicyHolder, p: &AccessPolicy) {
    let list = |v: Option<Vec<String>>| v.map_or("any".to_owned(), |v| v.join(","));
    println!("{}", holder_name(holder));
    println!("models      {}", list(p.models.clone()));
    println!("endpoints   {}", list(p.endpoints.clone()));
    println!(
        "expires     {}",
        p.expires_at.map_or("never".to_owned(), format_rfc3339)
    );
    let networks = p
        .networks
        .as_ref()
        .map(|n| n.iter().map(Cidr::to_string).collect());
    println!("ips         {}", list(networks));
    println!(
        "group       {}",
        p.group.as_deref().unwrap_or("none (list prices)")
    );
    let none = || "none".to_owned();
    println!("rpm         {}", p.rpm.map_or_else(none, |n| n.to_string()));
    let per_minute = p.per_minute.as_ref().map(|m| {
        m.iter()
            .map(|(meter, n)| format!("{meter}={n}"))
            .collect::<Vec<_>>()
            .join(",")
    });
    println!("per-minute  {}", per_minute.unwrap_or_else(none));
    println!(
        "concurrency {}",
        p.concurrency.map_or_else(none, |n| n.to_string())
    );
    println!(
        "streams     {}",
        p.streams.map_or_else(none, |n| n.to_string())
    );
    println!(
        "daily       {}",
        p.daily_budget.map_or_else(none, |a| a.to_string())
    );
    println!(
        "monthly     {}",
        p.monthly_budget.map_or_else(none, |a| a.to_string())
    );
    println!(
        "tasks       {}",
        p.tasks_in_flight.map_or_else(none, |n| n.to_string())
    );
}

pub async fn groups(common: &Common, command: GroupsCommand) -> Result<(), String> {
    let config = load_config(common)?;
    let store = open_store(&config, false).await?;
    let result = execute_groups(&store, command).await;
    store.close().await;
    result
}

async fn execute_groups(store: &Store, command: GroupsCommand) -> Result<(), String> {
    match command {
        GroupsCommand::List { json } => {
            let groups = store.price_groups().await.map_err(|e| e.to_string())?;
            if json {
                let list: Vec<_> = groups
                    .iter()
                    .map(|g| {
                        let models: BTreeMap<&String, String> =
                            g.models.iter().map(|(k, v)| (k, v.to_string())).collect();
                        let mut v = json!({"name": g.name, "multiplier": g.multiplier.to_string()});
                        if !models.is_empty() {
                            v["models"] = json!(models);
                        }
                        v
                    })
                    .collect();
                println!("{}", serde_json::Value::Array(list));
            } else {
                println!("{:<24} MULTIPLIER", "GROUP");
                for g in groups {
                    println!("{}", group_line(&g));
                }
            }
        }
        GroupsCommand::Set {
            name,
            multiplier,
            models,
            drop_models,
        } => {
            let mut overrides = Vec::new();
            for item in &models {
                let (model, m) = item.split_once('=').ok_or_else(|| {
                    format!("--model: {item:?} is not MODEL=X (e.g. gen-2.5-pro=0.5)")
                })?;
                overrides.push((model.to_owned(), m.to_owned()));
            }
            let group = ops::set_group(
                store,
                &Actor::cli(),
                &name,
                multiplier.as_deref(),
                &overrides,
                &drop_models,
            )
            .await
            .map_err(|e| e.for_cli())?;
            let mut line = format!("{name}: prices × {}", group.multiplier.normalize());
            for (model, m) in &group.models {
                line.push_str(&format!("; {model} × {m}"));
            }
            println!("{line}");
        }
    }
    Ok(())
}

/// A comma-separated list (blanks are dropped when the policy is checked).
fn split_list(text: &str) -> Vec<String> {
    text.split(',').map(str::to_owned).collect()
}

/// A group as `groups list` prints it: name, multiplier, then any model's own.
fn group_line(g: &tollgate_store::PriceGroup) -> String {
    let mut line = format!("{:<24} {}", g.name, g.multiplier);
    for (model, m) in &g.models {
        line.push_str(&format!("  {model}={m}"));
    }
    line
}
