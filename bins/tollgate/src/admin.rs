//! `tollgate admin …`: admin API tokens and the admin audit log.

use crate::cli::{
    AdminCommand, AlertsCommand, ChannelsCommand, Common, TasksCommand, TokenCommand,
};
use crate::common::{load_config, open_store};
use serde_json::json;
use tollgate_admin::ops::{self, Actor};
use tollgate_admin::views;
use tollgate_journal::clock::format_rfc3339;
use tollgate_settings::catalog::Catalog;
use tollgate_store::{Store, TaskState};

pub async fn run(common: &Common, command: AdminCommand) -> Result<(), String> {
    let config = load_config(common)?;
    // Creating the first token may come before anything else on a new machine.
    let may_create = matches!(command, AdminCommand::Token(TokenCommand::Create { .. }));
    let store = open_store(&config, may_create).await?;
    let result = execute(&store, command).await;
    store.close().await;
    result
}

async fn execute(store: &Store, command: AdminCommand) -> Result<(), String> {
    match command {
        AdminCommand::Token(TokenCommand::Create { name, read_only }) => {
            let (_, secret) = ops::create_admin_token(store, &Actor::cli(), &name, read_only)
                .await
                .map_err(|e| e.message)?;
            println!("{secret}");
        }
        AdminCommand::Token(TokenCommand::List { json }) => {
            let tokens = store.admin_tokens().await.map_err(|e| e.to_string())?;
            if json {
                println!("{}", serde_json::json!(tokens));
            } else {
                println!(
                    "{:<24} {:<30} {:<14} {:<10} CREATED",
                    "NAME", "ID", "PREFIX", "ACCESS"
                );
                for t in tokens {
                    let access = if t.revoked {
                        "revoked"
                    } else if t.read_only {
                        "read-only"
                    } else {
                        "full"
                    };
                    println!(
                        "{:<24} {:<30} {:<14} {:<10} {}",
                        t.name,
                        t.id,
                        t.prefix,
                        access,
                        format_rfc3339(t.created_at)
                    );
                }
            }
        }
        AdminCommand::Token(TokenCommand::Revoke { token }) => {
            let t = ops::revoke_admin_token(store, &Actor::cli(), &token)
                .await
                .map_err(|e| e.message)?;
            println!("{}: revoked", t.name);
        }
        AdminCommand::Changes {
            target,
            limit,
            json,
        } => {
            let changes = store
                .admin_changes(target.as_deref(), limit, None)
                .await
                .map_err(|e| e.to_string())?;
            if json {
                println!("{}", serde_json::json!({ "changes": changes }));
            } else {
                for c in changes {
                    println!(
                        "{}  {:<20} {:<18} {}",
                        format_rfc3339(c.created_at),
                        c.change.actor,
                        c.change.action,
                        c.change.target
                    );
                }
            }
        }
    }
    Ok(())
}

pub async fn tasks(common: &Common, command: TasksCommand) -> Result<(), String> {
    let config = load_config(common)?;
    let store = open_store(&config, false).await?;
    let result = execute_tasks(&config, &store, command).await;
    store.close().await;
    result
}

async fn execute_tasks(
    config: &tollgate_settings::Config,
    store: &Store,
    command: TasksCommand,
) -> Result<(), String> {
    match command {
        TasksCommand::List {
            account,
            state,
            limit,
            json,
        } => {
            let account = match account {
                Some(a) => Some(store.find_account(&a).await.map_err(|e| e.to_string())?.id),
                None => None,
            };
            let state = state
                .map(|s| {
                    serde_json::from_value::<TaskState>(json!(s)).map_err(|_| {
                        format!(
                            "--state: {s:?} is not submitting, queued, running, succeeded or failed"
                        )
                    })
                })
                .transpose()?;
            let tasks = store
                .admin_tasks(account.as_deref(), state, limit, None)
                .await
                .map_err(|e| e.to_string())?;
            if json {
                let list: Vec<_> = tasks.iter().map(views::task).collect();
                println!("{}", json!({ "tasks": list }));
            } else {
                println!(
                    "{:<22} {:<34} {:<28} {:<10} {:>4}  ACCOUNT",
                    "CREATED", "ID", "MODEL", "STATE", "%"
                );
                for t in tasks {
                    println!(
                        "{:<22} {:<34} {:<28} {:<10} {:>4}  {}",
                        format_rfc3339(t.created_at),
                        t.id,
                        t.model,
                        t.state.as_str(),
                        t.progress,
                        t.account_id
                    );
                }
            }
        }
        TasksCommand::Show { id } => {
            let task = store
                .task(&id)
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("no task {id:?}"))?;
            let history = store.task_events(&id).await.map_err(|e| e.to_string())?;
            let view = views::TaskView {
                history: Some(history),
                ..views::task(&task)
            };
            println!("{}", views::json(&view));
        }
        TasksCommand::Cancel { id } => {
            // The task's channel, when this configuration can reach it (not the simulator that
            // lives inside a running gateway).
            let catalog = Catalog::from_config(config, None, |var| std::env::var(var).ok()).ok();
            let http =
                tollgate_upstream::HttpClient::new(&tollgate_upstream::ClientConfig::default())
                    .ok();
            let task = store.task(&id).await.map_err(|e| e.to_string())?;
            let channel = task
                .as_ref()
                .and_then(|t| catalog.as_ref()?.channel(&t.channel).cloned());
            let upstream = match (&http, &channel) {
                (Some(http), Some(channel)) => Some((http, &channel.endpoint)),
                _ => None,
            };
            let task = ops::cancel_task(store, &Actor::cli(), &id, upstream)
                .await
                .map_err(|e| e.to_string())?;
            println!(
                "{}: cancelled and refunded ({})",
                task.id,
                task.state.as_str()
            );
        }
    }
    Ok(())
}

pub async fn channels(common: &Common, command: ChannelsCommand) -> Result<(), String> {
    let config = load_config(common)?;
    let store = open_store(&config, false).await?;
    let known: Vec<&str> = config.channels.iter().map(|c| c.name.as_str()).collect();
    let result = match command {
        ChannelsCommand::List => match store.disabled_channels().await {
            Ok(off) => {
                for name in &known {
                    let state = if off.iter().any(|o| o == name) {
                        "off"
                    } else {
                        "on"
                    };
                    println!("{name:<24} {state}");
                }
                Ok(())
            }
            Err(e) => Err(e.to_string()),
        },
        ChannelsCommand::Disable { name } => switch(&store, &known, &name, true).await,
        ChannelsCommand::Enable { name } => switch(&store, &known, &name, false).await,
    };
    store.close().await;
    result
}

/// `tollgate alerts …`: the admin API's alert events and deliveries, on the database.
pub async fn alerts(common: &Common, command: AlertsCommand) -> Result<(), String> {
    let config = load_config(common)?;
    let store = open_store(&config, false).await?;
    let result = execute_alerts(&store, command).await;
    store.close().await;
    result
}

async fn execute_alerts(store: &Store, command: AlertsCommand) -> Result<(), String> {
    use tollgate_admin::alerts;
    match command {
        AlertsCommand::Events { rule, limit, json } => {
            let page = alerts::events(store, rule.as_deref(), limit)
                .await
                .map_err(|e| e.to_string())?;
            if json {
                println!("{}", views::json(&page));
                return Ok(());
            }
            println!(
                "{:<26} {:<15} {:<20} {:<40} SUMMARY",
                "CREATED", "TYPE", "RULE", "SUBJECT"
            );
            for e in &page.data {
                println!(
                    "{:<26} {:<15} {:<20} {:<40} {}",
                    e.created_at, e.event_type, e.rule, e.subject, e.summary
                );
            }
        }
        AlertsCommand::Deliveries {
            rule,
            state,
            limit,
            json,
        } => {
            let page = alerts::deliveries(store, rule.as_deref(), state.as_deref(), limit)
                .await
                .map_err(|e| e.for_cli())?;
            if json {
                println!("{}", views::json(&page));
                return Ok(());
            }
            println!(
                "{:<26} {:<34} {:<20} {:<10} ATTEMPTS",
                "CREATED", "ID", "RULE", "STATE"
            );
            for d in &page.data {
                println!(
                    "{:<26} {:<34} {:<20} {:<10} {}",
                    d.created_at, d.id, d.rule, d.state, d.attempts
                );
            }
        }
        AlertsCommand::Show { id } => {
            let one = alerts::one(store, &id).await.map_err(|e| e.to_string())?;
            println!("{}", views::json(&one));
        }
        AlertsCommand::Redeliver { id } => {
            alerts::redeliver(store, &Actor::cli(), &id)
                .await
                .map_err(|e| e.to_string())?;
            println!("{id}: due now (a running gateway posts it within a second)");
        }
    }
    Ok(())
}

async fn switch(store: &Store, known: &[&str], name: &str, disabled: bool) -> Result<(), String> {
    ops::set_channel_disabled(store, &Actor::cli(), known, name, disabled)
        .await
        .map_err(|e| e.to_string())?;
    println!(
        "{name}: {} (running gateways follow within {} s)",
        if disabled { "off" } else { "on" },
        tollgate_settings::channels::SWITCHES_EVERY.as_secs()
    );
    Ok(())
}
