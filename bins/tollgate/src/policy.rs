//! `tollgate policy …`: access policies of accounts and keys (`docs/decisions.md`, "Access
//! policies").

use crate::cli::{Common, GroupsCommand, PolicyCommand, load_config, open_store};
use serde_json::json;
use std::collections::BTreeMap;
use tollgate_billing::{Amount, Decimal, Meter};
use tollgate_gateway::clock::{format_rfc3339, parse_rfc3339};
use tollgate_gateway::routes::POLICY_ENDPOINTS;
use tollgate_store::{AccessPolicy, Cidr, PolicyChange, PolicyHolder, Store};

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
                println!("{}", policy_json(&holder, &policy));
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
            if let Some(group) = &group {
                // A key must never point at a group that prices nothing.
                store.price_group(group).await.map_err(|_| {
                    format!("--group: no price group {group:?}; make it with `groups set`")
                })?;
            }
            let change = PolicyChange {
                models: models.as_deref().map(parse_models).transpose()?,
                endpoints: endpoints.as_deref().map(parse_endpoints).transpose()?,
                expires_at: expires
                    .as_deref()
                    .map(|t| parse_rfc3339(t).map_err(|e| format!("--expires: {e}")))
                    .transpose()?,
                networks: ips.as_deref().map(parse_networks).transpose()?,
                group,
                rpm: rpm.map(|n| positive("--rpm", n)).transpose()?,
                per_minute: parse_per_minute(&per_minute)?,
                concurrency: concurrency
                    .map(|n| positive("--concurrency", u64::from(n)).map(|_| n))
                    .transpose()?,
                streams: streams
                    .map(|n| positive("--streams", u64::from(n)).map(|_| n))
                    .transpose()?,
                daily_budget: daily_budget
                    .as_deref()
                    .map(|a| parse_budget("--daily-budget", a))
                    .transpose()?,
                monthly_budget: monthly_budget
                    .as_deref()
                    .map(|a| parse_budget("--monthly-budget", a))
                    .transpose()?,
                tasks_in_flight: tasks_in_flight
                    .map(|n| positive("--tasks-in-flight", u64::from(n)).map(|_| n))
                    .transpose()?,
            };
            if change == PolicyChange::default() {
                return Err(
                    "nothing to set: pass --models, --endpoints, --expires, --ips, --group, --rpm, --per-minute, --concurrency, --streams, --daily-budget, --monthly-budget or --tasks-in-flight"
                        .into(),
                );
            }
            let holder = store
                .policy_holder(&target)
                .await
                .map_err(|e| e.to_string())?;
            let mut policy = store.policy(&holder).await.map_err(|e| e.to_string())?;
            policy.apply(&change);
            store
                .set_policy(&holder, &policy)
                .await
                .map_err(|e| e.to_string())?;
            print_policy(&holder, &policy);
        }
        PolicyCommand::Clear { target } => {
            let holder = store
                .policy_holder(&target)
                .await
                .map_err(|e| e.to_string())?;
            store
                .set_policy(&holder, &AccessPolicy::default())
                .await
                .map_err(|e| e.to_string())?;
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

fn policy_json(holder: &PolicyHolder, p: &AccessPolicy) -> serde_json::Value {
    let (kind, id) = match holder {
        PolicyHolder::Account(id) => ("account", id),
        PolicyHolder::Key(id) => ("key", id),
    };
    json!({
        kind: id,
        "models": p.models,
        "endpoints": p.endpoints,
        "expires_at": p.expires_at.map(format_rfc3339),
        "ips": p.networks,
        "group": p.group,
        "rpm": p.rpm,
        "per_minute": p.per_minute,
        "concurrency": p.concurrency,
        "streams": p.streams,
        "daily_budget": p.daily_budget,
        "monthly_budget": p.monthly_budget,
        "tasks_in_flight": p.tasks_in_flight,
    })
}

/// A limit of 0 would refuse everything; disabling a key is `keys disable`.
fn positive(flag: &str, n: u64) -> Result<u64, String> {
    if n == 0 {
        return Err(format!(
            "{flag}: must be at least 1 (to refuse every request, disable the key)"
        ));
    }
    Ok(n)
}

/// `--per-minute METER=N`, each meter one of the price book's.
fn parse_per_minute(items: &[String]) -> Result<Option<BTreeMap<String, u64>>, String> {
    if items.is_empty() {
        return Ok(None);
    }
    let mut out = BTreeMap::new();
    for item in items {
        let (meter, n) = item
            .split_once('=')
            .ok_or_else(|| format!("--per-minute: {item:?} is not METER=N (e.g. tokens=100000)"))?;
        let meter = meter.trim();
        let meters = Meter::ALL.map(Meter::as_str);
        if !meters.contains(&meter) {
            return Err(format!(
                "--per-minute: {meter:?} is not a meter; use one of {}",
                meters.join(", ")
            ));
        }
        let n: u64 = n
            .trim()
            .parse()
            .map_err(|_| format!("--per-minute: {n:?} is not a whole number"))?;
        out.insert(meter.to_owned(), positive("--per-minute", n)?);
    }
    Ok(Some(out))
}

fn parse_budget(flag: &str, text: &str) -> Result<Amount, String> {
    let amount: Amount = text
        .parse()
        .map_err(|e| format!("{flag}: {text:?} is not a decimal amount ({e})"))?;
    if !amount.is_positive() {
        return Err(format!("{flag}: must be above 0"));
    }
    Ok(amount)
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
            if multiplier.is_none() && models.is_empty() && drop_models.is_empty() {
                return Err("nothing to set: pass --multiplier, --model or --drop-model".into());
            }
            let parse = |flag: &str, text: &str| -> Result<Decimal, String> {
                text.trim().parse().map_err(|_| {
                    format!("{flag}: {text:?} is not a decimal number such as 0.8 or 1.5")
                })
            };
            let mut overrides = Vec::new();
            for item in &models {
                let (model, m) = item.split_once('=').ok_or_else(|| {
                    format!("--model: {item:?} is not MODEL=X (e.g. gen-2.5-pro=0.5)")
                })?;
                overrides.push((model.trim().to_owned(), parse("--model", m)?));
            }
            match multiplier.as_deref() {
                Some(m) => store
                    .set_price_group(&name, parse("--multiplier", m)?)
                    .await
                    .map_err(|e| e.to_string())?,
                None => {
                    store.price_group(&name).await.map_err(|_| {
                        format!("no price group {name:?}: create it with --multiplier")
                    })?;
                }
            }
            for (model, m) in overrides {
                store
                    .set_model_multiplier(&name, &model, Some(m))
                    .await
                    .map_err(|e| e.to_string())?;
            }
            for model in &drop_models {
                store
                    .set_model_multiplier(&name, model, None)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            let group = store.price_group(&name).await.map_err(|e| e.to_string())?;
            let mut line = format!("{name}: prices × {}", group.multiplier.normalize());
            for (model, m) in &group.models {
                line.push_str(&format!("; {model} × {m}"));
            }
            println!("{line}");
        }
    }
    Ok(())
}

/// A comma-separated list, trimmed, without empty items; at least one item.
fn split_list(flag: &str, text: &str) -> Result<Vec<String>, String> {
    let items: Vec<String> = text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    if items.is_empty() {
        return Err(format!(
            "--{flag} needs at least one item (`policy clear` removes a policy)"
        ));
    }
    Ok(items)
}

fn parse_models(text: &str) -> Result<Vec<String>, String> {
    split_list("models", text)
}

fn parse_endpoints(text: &str) -> Result<Vec<String>, String> {
    let endpoints = split_list("endpoints", text)?;
    if let Some(unknown) = endpoints
        .iter()
        .find(|e| !POLICY_ENDPOINTS.contains(&e.as_str()))
    {
        return Err(format!(
            "--endpoints: {unknown:?} is not an endpoint; use {}",
            POLICY_ENDPOINTS.join(", ")
        ));
    }
    Ok(endpoints)
}

fn parse_networks(text: &str) -> Result<Vec<Cidr>, String> {
    split_list("ips", text)?
        .iter()
        .map(|n| n.parse::<Cidr>().map_err(|e| format!("--ips: {e}")))
        .collect()
}

/// A group as `groups list` prints it: name, multiplier, then any model's own.
fn group_line(g: &tollgate_store::PriceGroup) -> String {
    let mut line = format!("{:<24} {}", g.name, g.multiplier);
    for (model, m) in &g.models {
        line.push_str(&format!("  {model}={m}"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_checked_before_anything_is_written() {
        assert_eq!(
            parse_models(" a , b*,, "),
            Ok(vec!["a".to_owned(), "b*".to_owned()])
        );
        assert!(parse_models(" , ").is_err());
        assert!(parse_endpoints("embeddings,speech").is_ok());
        assert!(parse_endpoints("embedding").is_err());
        assert!(parse_networks("10.0.0.0/8, 2001:db8::/32, 192.0.2.1").is_ok());
        assert!(parse_networks("10.0.0.0/40").is_err());
    }
}
