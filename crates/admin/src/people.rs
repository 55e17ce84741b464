//! The people of an account who sign in to the customer portal (docs/operations.md, "The
//! customer portal"), the operator's side: invite (a one-time link), list, remove. The CLI
//! (`tollgate accounts invite|people|remove-person`) and the admin API
//! (`/admin/v1/accounts/{id}/people`, `/admin/v1/people/{id}`) both run these.

use crate::ops::{Actor, OpError, short_text};
use schemars::JsonSchema;
use serde::Serialize;
use tollgate_settings::config::PortalConfig;
use tollgate_store::{Person, Store};

/// A person invited, with their link: the only time it is shown.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Invited {
    /// The person.
    pub person: Person,
    /// The one-time link that sets their password (`…/portal#/invite/TOKEN`; the token is in
    /// the fragment, so no server or proxy log sees it).
    pub invite_url: String,
    /// When the link stops working (Unix milliseconds).
    pub expires_at: i64,
}

/// What the operator asks for.
#[derive(Debug, Clone, Default, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewPerson {
    /// How they sign in.
    pub email: String,
    /// Their name (default: the email's part before `@`).
    #[serde(default)]
    pub name: Option<String>,
}

/// Invites a person to `account` (id or name), or invites again one already there (a new
/// password). `base_url` is where customers reach the gateway.
pub async fn invite(
    store: &Store,
    actor: &Actor,
    account: &str,
    asked: &NewPerson,
    base_url: &str,
    portal: &PortalConfig,
) -> Result<Invited, OpError> {
    let email = asked.email.trim();
    let plausible = email.len() <= 254
        && email.split_once('@').is_some_and(|(user, host)| {
            !user.is_empty() && host.contains('.') && !host.starts_with('.')
        })
        && !email
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || "<>\"'".contains(c));
    if !plausible {
        return Err(OpError::invalid(
            "email",
            format!("{email:?} is not an email address"),
        ));
    }
    let default_name = email.split('@').next().unwrap_or(email).to_owned();
    let name = short_text(
        "name",
        asked.name.as_deref().unwrap_or(&default_name),
        "a name",
    )?;
    let found = store.find_account(account).await?;
    let hours = i64::try_from(portal.invite_hours).unwrap_or(72);
    let expires_at = tollgate_journal::clock::now_millis().saturating_add(hours * 3_600_000);
    let (person, token) = store
        .invite_person(
            &found.id,
            email,
            &name,
            expires_at,
            &actor.change("portal.invite", &found.id),
        )
        .await?;
    Ok(Invited {
        person,
        invite_url: format!("{}/portal#/invite/{token}", base_url.trim_end_matches('/')),
        expires_at,
    })
}

/// An account's people.
pub async fn people(store: &Store, account: &str) -> Result<Vec<Person>, OpError> {
    let found = store.find_account(account).await?;
    Ok(store.account_people(&found.id).await?)
}

/// Removes a person: their sessions end, they can no longer sign in.
pub async fn remove(store: &Store, actor: &Actor, person: &str) -> Result<(), OpError> {
    Ok(store
        .remove_person(person, &actor.change("portal.remove", person))
        .await?)
}
