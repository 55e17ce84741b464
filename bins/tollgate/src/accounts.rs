//! `tollgate accounts …`: the people of an account who sign in to the customer portal
//! (docs/operations.md, "The customer portal"), the operations of `tollgate_admin::people` run
//! on the database.

use crate::cli::AccountsCommand;
use crate::common::{load_config, open_store};
use tollgate_admin::ops::Actor;
use tollgate_admin::people::{self, NewPerson};
use tollgate_admin::views;
use tollgate_journal::clock::format_rfc3339;

pub async fn run(common: &crate::cli::Common, command: AccountsCommand) -> Result<(), String> {
    let config = load_config(common)?;
    let store = open_store(&config, false).await?;
    let result = async {
        match command {
            AccountsCommand::Invite {
                account,
                email,
                name,
                json,
            } => {
                // Where customers reach the gateway: `[portal] public_url`, or this machine's
                // listen address (say so: a link to 127.0.0.1 reaches no customer).
                let base = match &config.portal.public_url {
                    Some(url) => url.clone(),
                    None => {
                        eprintln!(
                            "note: [portal] public_url is not set; the link uses the listen \
                             address {}",
                            config.listen
                        );
                        format!("http://{}", config.listen)
                    }
                };
                let invited = people::invite(
                    &store,
                    &Actor::cli(),
                    &account,
                    &NewPerson { email, name },
                    &base,
                    &config.portal,
                )
                .await
                .map_err(|e| e.for_cli())?;
                if json {
                    println!("{}", views::json(&invited));
                } else {
                    println!("{}", invited.invite_url);
                    eprintln!(
                        "{} ({}) may set a password with this link once, until {}",
                        invited.person.email,
                        invited.person.id,
                        format_rfc3339(invited.expires_at)
                    );
                }
                Ok(())
            }
            AccountsCommand::People { account, json } => {
                let found = people::people(&store, &account)
                    .await
                    .map_err(|e| e.for_cli())?;
                if json {
                    println!("{}", views::json(&views::List { data: found }));
                    return Ok(());
                }
                println!(
                    "{:<30} {:<36} {:<8} {:<5} CREATED",
                    "ID", "EMAIL", "ACTIVE", "TOTP"
                );
                for p in &found {
                    println!(
                        "{:<30} {:<36} {:<8} {:<5} {}",
                        p.id,
                        p.email,
                        if p.active { "yes" } else { "invited" },
                        if p.totp { "on" } else { "off" },
                        format_rfc3339(p.created_at)
                    );
                }
                Ok(())
            }
            AccountsCommand::RemovePerson { person } => {
                people::remove(&store, &Actor::cli(), &person)
                    .await
                    .map_err(|e| e.for_cli())?;
                println!("{person}: removed; their sessions have ended");
                Ok(())
            }
        }
    }
    .await;
    store.close().await;
    result
}
