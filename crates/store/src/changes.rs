//! The admin audit log's writer: a change (`AdminChange`: who, what, on which target, before and
//! after) written in the transaction that makes it, by every part of the store that changes
//! what an operator may review (`admin_audit`; `docs/operations.md`, "The admin audit log").

use crate::ids::new_id;
use crate::{AdminChange, StoreError, now_millis};

/// Writes `change` in `tx`.
pub(crate) async fn insert_change(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    change: &AdminChange,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO admin_audit (id, created_at, actor, action, target, before_json, after_json, request_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(new_id("aud"))
    .bind(now_millis())
    .bind(&change.actor)
    .bind(&change.action)
    .bind(&change.target)
    .bind(change.before.as_ref().map(ToString::to_string))
    .bind(change.after.as_ref().map(ToString::to_string))
    .bind(change.request_id.clone())
    .execute(&mut **tx)
    .await?;
    Ok(())
}
