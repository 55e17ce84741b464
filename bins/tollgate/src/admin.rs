//! `tollgate admin …`: admin API tokens and the admin audit log.

use crate::cli::{AdminCommand, Common, TokenCommand, load_config, open_store};
use tollgate_gateway::clock::format_rfc3339;
use tollgate_store::Store;

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
            let (_, secret) = store
                .create_admin_token(&name, read_only)
                .await
                .map_err(|e| e.to_string())?;
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
            let t = store
                .revoke_admin_token(&token)
                .await
                .map_err(|e| e.to_string())?;
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
                        c.actor,
                        c.action,
                        c.target
                    );
                }
            }
        }
    }
    Ok(())
}
