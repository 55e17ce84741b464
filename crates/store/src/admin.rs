//! What the operator's side needs of the database (`docs/decisions.md`, "The admin API"): admin
//! tokens, the admin audit log, idempotent credits, channel switches, and the paged listings the
//! admin API and the console read (accounts, ledger rows, open holds, tasks of any account).

use crate::accounts::{ACCOUNT_COLUMNS, AccountRow, account_from_row};
use crate::changes::insert_change;
use crate::holds::LedgerEntry;
use crate::ids::{hash_secret, new_id};
use crate::tasks::{TASK_COLUMNS, TaskState, task_from_row};
use crate::{Account, Store, StoreError, Task, now_millis};
use serde::Serialize;
use tollgate_billing::Amount;

/// An admin token as listings show it (never the secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AdminToken {
    /// `adm_…`
    pub id: String,
    /// Unique, chosen by the operator; the audit log's `actor`.
    pub name: String,
    /// The first characters of the secret.
    pub prefix: String,
    /// A read-only token may call only `GET` routes.
    pub read_only: bool,
    /// A revoked token is refused.
    pub revoked: bool,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// A change to record in the admin audit log.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AdminChange {
    /// Who: `token:NAME` for the API, `cli:USER` for the command line.
    pub actor: String,
    /// What, as `resource.verb` (`account.create`, `account.credit`, `key.revoke`, …).
    pub action: String,
    /// On what: an id or name.
    pub target: String,
    /// The state before (JSON), where there was one.
    pub before: Option<serde_json::Value>,
    /// The state after (JSON).
    pub after: Option<serde_json::Value>,
    /// The admin request's id, for an API change.
    pub request_id: Option<String>,
}

/// A recorded change, as the log lists it: the change, its id and its time.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "AdminChange"))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AdminChangeRecord {
    /// `aud_…` (time-ordered: the paging cursor).
    pub id: String,
    /// Unix milliseconds.
    pub created_at: i64,
    /// What was changed, by whom.
    #[serde(flatten)]
    pub change: AdminChange,
}

/// What an idempotent credit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credited {
    /// The account after the credit (after the *first* one, for a replay: read now).
    pub account: Account,
    /// The credit's ledger row.
    pub ledger_id: String,
    /// True when the idempotency key had been used: nothing was credited this time.
    pub replayed: bool,
}

/// An open hold, as the admin API lists it.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "Hold"))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpenHold {
    /// `hold_…`
    pub id: String,
    /// Whose.
    pub account_id: String,
    /// The key that placed it.
    pub key_id: Option<String>,
    /// For which model.
    pub model: String,
    /// How much.
    pub amount: Amount,
    /// The request that placed it.
    pub request_id: Option<String>,
    /// The task it pays for.
    pub task_id: Option<String>,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// The condition of a page after the cursor `before` (the last id of the previous page; ids
/// are time-ordered, so newest first is `id DESC`), as placeholder `$n`.
fn after_cursor(before: Option<&str>, n: usize) -> String {
    before
        .map(|_| format!(" AND id < ${n}"))
        .unwrap_or_default()
}

fn parse_json(text: Option<String>) -> Option<serde_json::Value> {
    text.and_then(|t| serde_json::from_str(&t).ok())
}

/// The longest reason, search text or idempotency key the admin side stores.
pub const MAX_ADMIN_TEXT: usize = 500;

impl Store {
    /// Creates an admin token and returns it with its secret, `tga-` + 48 hex digits (shown
    /// once: only its hash is kept).
    pub async fn create_admin_token(
        &self,
        name: &str,
        read_only: bool,
    ) -> Result<(AdminToken, String), StoreError> {
        let name = name.trim();
        if name.is_empty() || name.len() > 100 {
            return Err(StoreError::InvalidName(
                "an admin token needs a name of 1 to 100 characters".into(),
            ));
        }
        let secret = crate::ids::new_secret_with("tga");
        let token = AdminToken {
            id: new_id("adm"),
            name: name.to_owned(),
            prefix: secret.chars().take(12).collect(),
            read_only,
            revoked: false,
            created_at: now_millis(),
        };
        let done = sqlx::query(
            "INSERT INTO admin_tokens (id, name, secret_hash, prefix, read_only, revoked, created_at)
             VALUES ($1, $2, $3, $4, $5, 0, $6) ON CONFLICT (name) DO NOTHING",
        )
        .bind(&token.id)
        .bind(&token.name)
        .bind(hash_secret(&secret))
        .bind(&token.prefix)
        .bind(i64::from(read_only))
        .bind(token.created_at)
        .execute(self.writer())
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::AlreadyExists(format!("admin token {name:?}")));
        }
        Ok((token, secret))
    }

    /// The live admin token whose secret this is; `None` for anything else (an API key
    /// included: the two live in different tables).
    pub async fn admin_token(&self, secret: &str) -> Result<Option<AdminToken>, StoreError> {
        let row: Option<(String, String, String, i64, i64, i64)> = sqlx::query_as(
            "SELECT id, name, prefix, read_only, revoked, created_at FROM admin_tokens
             WHERE secret_hash = $1 AND revoked = 0",
        )
        .bind(hash_secret(secret))
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(token_from_row))
    }

    /// Every admin token, oldest first.
    pub async fn admin_tokens(&self) -> Result<Vec<AdminToken>, StoreError> {
        let rows: Vec<(String, String, String, i64, i64, i64)> = sqlx::query_as(
            "SELECT id, name, prefix, read_only, revoked, created_at FROM admin_tokens
             ORDER BY created_at, id",
        )
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().map(token_from_row).collect())
    }

    /// Revokes an admin token (by id or name) for good.
    pub async fn revoke_admin_token(&self, id_or_name: &str) -> Result<AdminToken, StoreError> {
        let row: Option<(String, String, String, i64, i64, i64)> = sqlx::query_as(
            "UPDATE admin_tokens SET revoked = 1 WHERE id = $1 OR name = $1
             RETURNING id, name, prefix, read_only, revoked, created_at",
        )
        .bind(id_or_name)
        .fetch_optional(self.writer())
        .await?;
        row.map(token_from_row)
            .ok_or_else(|| StoreError::NotFound(format!("admin token {id_or_name:?}")))
    }

    /// Records a change in the admin audit log.
    pub async fn record_admin_change(&self, change: &AdminChange) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        insert_change(&mut tx, change).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The admin audit log, newest first: at most `limit` records, only those about `target`
    /// when given, after the cursor `before`.
    pub async fn admin_changes(
        &self,
        target: Option<&str>,
        limit: u32,
        before: Option<&str>,
    ) -> Result<Vec<AdminChangeRecord>, StoreError> {
        let mut sql = String::from(
            "SELECT id, created_at, actor, action, target, before_json, after_json, request_id
             FROM admin_audit WHERE ($1 = '' OR target = $1)",
        );
        sql.push_str(&after_cursor(before, 2));
        sql.push_str(&format!(" ORDER BY id DESC LIMIT {}", limit.clamp(1, 1000)));
        let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(target.unwrap_or_default());
        if let Some(before) = before {
            query = query.bind(before);
        }
        type Row = (
            String,
            i64,
            String,
            String,
            String,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        let rows: Vec<Row> = query.fetch_all(self.pool()).await?;
        Ok(rows
            .into_iter()
            .map(
                |(id, created_at, actor, action, target, before, after, request_id)| {
                    AdminChangeRecord {
                        id,
                        created_at,
                        change: AdminChange {
                            actor,
                            action,
                            target,
                            before: parse_json(before),
                            after: parse_json(after),
                            request_id,
                        },
                    }
                },
            )
            .collect())
    }

    /// Credits (or, negative, corrects) an account once per idempotency key: the key, the
    /// ledger row, the balance and the audit record are written in one transaction, so a
    /// retried payment webhook finds the first credit instead of making a second.
    ///
    /// A correction takes only what the account has available unless `allow_negative`; money
    /// the replicas have leased is recalled first ([`Store::recalling`]).
    ///
    /// `idempotency` is `(key, fingerprint)`; the fingerprint (account, amount, reason) must
    /// match the first use, or the credit is refused as a conflict. `None`: no key.
    pub async fn credit_once(
        &self,
        account_id: &str,
        amount: Amount,
        reason: &str,
        allow_negative: bool,
        idempotency: Option<(&str, &str)>,
        audit: &AdminChange,
    ) -> Result<Credited, StoreError> {
        if let Some((key, fingerprint)) = idempotency
            && let Some(replayed) = self.replay_credit(key, fingerprint).await?
        {
            return Ok(replayed);
        }
        self.recalling(account_id, || {
            Box::pin(self.credit_once_now(
                account_id,
                amount,
                reason,
                allow_negative,
                idempotency,
                audit,
            ))
        })
        .await
    }

    async fn credit_once_now(
        &self,
        account_id: &str,
        amount: Amount,
        reason: &str,
        allow_negative: bool,
        idempotency: Option<(&str, &str)>,
        audit: &AdminChange,
    ) -> Result<Credited, StoreError> {
        let mut tx = self.write_tx().await?;
        let crate::accounts::CreditRow {
            account, ledger_id, ..
        } = crate::accounts::credit_in(
            &mut tx,
            account_id,
            amount,
            crate::LedgerKind::Credit,
            Some(reason),
            allow_negative,
        )
        .await?;
        if let Some((key, fingerprint)) = idempotency {
            let claimed = sqlx::query(
                "INSERT INTO admin_idempotency (key, fingerprint, ledger_id, created_at)
                 VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO NOTHING",
            )
            .bind(key)
            .bind(fingerprint)
            .bind(&ledger_id)
            .bind(now_millis())
            .execute(&mut *tx)
            .await?;
            if claimed.rows_affected() == 0 {
                // A concurrent request with the same key won the race: undo ours, answer theirs.
                drop(tx);
                return self
                    .replay_credit(key, fingerprint)
                    .await?
                    .ok_or_else(|| StoreError::Corrupt(format!("idempotency key {key:?}")));
            }
        }
        let mut audit = audit.clone();
        audit.after = Some(serde_json::json!({
            "balance": account.balance.to_string(),
            "amount": amount.to_string(),
            "reason": reason,
            "ledger_id": ledger_id,
        }));
        insert_change(&mut tx, &audit).await?;
        tx.commit().await?;
        Ok(Credited {
            account,
            ledger_id,
            replayed: false,
        })
    }

    async fn replay_credit(
        &self,
        key: &str,
        fingerprint: &str,
    ) -> Result<Option<Credited>, StoreError> {
        let row: Option<(String, String)> =
            sqlx::query_as("SELECT fingerprint, ledger_id FROM admin_idempotency WHERE key = $1")
                .bind(key)
                .fetch_optional(self.pool())
                .await?;
        let Some((first, ledger_id)) = row else {
            return Ok(None);
        };
        if first != fingerprint {
            return Err(StoreError::AlreadyExists(format!(
                "idempotency key {key:?} was used for another credit"
            )));
        }
        let (account_id,): (String,) =
            sqlx::query_as("SELECT account_id FROM ledger WHERE id = $1")
                .bind(&ledger_id)
                .fetch_one(self.pool())
                .await?;
        Ok(Some(Credited {
            account: self.find_account(&account_id).await?,
            ledger_id,
            replayed: true,
        }))
    }

    /// Accounts newest first, `limit` of them after the cursor `before` (an account id),
    /// those whose name contains `search` (or whose id is it) when given; and how many match.
    pub async fn accounts_page(
        &self,
        search: Option<&str>,
        limit: u32,
        before: Option<&str>,
    ) -> Result<(i64, Vec<Account>), StoreError> {
        let pattern = search.map(like_pattern).unwrap_or_else(|| "%".into());
        let exact = search.unwrap_or_default();
        let filter = "WHERE (name LIKE $1 ESCAPE '\\' OR id = $2)";
        let (total,): (i64,) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*) FROM accounts {filter}"
        )))
        .bind(&pattern)
        .bind(exact)
        .fetch_one(self.pool())
        .await?;
        let mut sql = format!("SELECT {ACCOUNT_COLUMNS} FROM accounts {filter}");
        sql.push_str(&after_cursor(before, 3));
        sql.push_str(&format!(" ORDER BY id DESC LIMIT {}", limit.clamp(1, 1000)));
        let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(pattern)
            .bind(exact);
        if let Some(before) = before {
            query = query.bind(before);
        }
        let rows: Vec<AccountRow> = query.fetch_all(self.pool()).await?;
        Ok((total, rows.into_iter().map(account_from_row).collect()))
    }

    /// The account's ledger rows, newest first, `limit` after the cursor `before`.
    pub async fn ledger_page(
        &self,
        account_id: &str,
        limit: u32,
        before: Option<&str>,
    ) -> Result<Vec<LedgerEntry>, StoreError> {
        let mut sql = format!(
            "SELECT {} FROM ledger WHERE account_id = $1",
            crate::holds::LEDGER_COLUMNS
        );
        sql.push_str(&after_cursor(before, 2));
        sql.push_str(&format!(" ORDER BY id DESC LIMIT {}", limit.clamp(1, 1000)));
        let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(account_id);
        if let Some(before) = before {
            query = query.bind(before);
        }
        let rows = query.fetch_all(self.pool()).await?;
        rows.into_iter()
            .map(crate::holds::ledger_from_row)
            .collect()
    }

    /// Open holds (of one account, when given), oldest first, at most `limit`.
    pub async fn open_holds(
        &self,
        account_id: Option<&str>,
        limit: u32,
    ) -> Result<Vec<OpenHold>, StoreError> {
        type Row = (
            String,
            String,
            Option<String>,
            String,
            i64,
            Option<String>,
            Option<String>,
            i64,
        );
        let rows: Vec<Row> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT id, account_id, key_id, model, amount_nanos, request_id, task_id, created_at
             FROM holds WHERE state = 'open' AND ($1 = '' OR account_id = $1)
             ORDER BY created_at, id LIMIT {}",
            limit.clamp(1, 1000)
        )))
        .bind(account_id.unwrap_or_default())
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(
                |(id, account_id, key_id, model, amount, request_id, task_id, created_at)| {
                    OpenHold {
                        id,
                        account_id,
                        key_id,
                        model,
                        amount: Amount::from_nanos(amount),
                        request_id,
                        task_id,
                        created_at,
                    }
                },
            )
            .collect())
    }

    /// How many open holds there are (of one account, when given) and what they hold together.
    pub async fn open_holds_count(
        &self,
        account_id: Option<&str>,
    ) -> Result<(i64, Amount), StoreError> {
        let (count, sum): (i64, i64) = sqlx::query_as(
            "SELECT COUNT(*), CAST(COALESCE(SUM(amount_nanos), 0) AS BIGINT) FROM holds
             WHERE state = 'open' AND ($1 = '' OR account_id = $1)",
        )
        .bind(account_id.unwrap_or_default())
        .fetch_one(self.pool())
        .await?;
        Ok((count, Amount::from_nanos(sum)))
    }

    /// How many video tasks are in flight (submitting, queued or running), of every account.
    pub async fn tasks_in_flight(&self) -> Result<i64, StoreError> {
        let (count,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM tasks WHERE status IN ('submitting', 'queued', 'running')",
        )
        .fetch_one(self.pool())
        .await?;
        Ok(count)
    }

    /// Tasks of every account (or one), newest first, in one state when given, `limit` after
    /// the cursor `before` (a task id is not time-ordered: the cursor is `created_at:id`).
    pub async fn admin_tasks(
        &self,
        account_id: Option<&str>,
        state: Option<TaskState>,
        limit: u32,
        before: Option<(i64, &str)>,
    ) -> Result<Vec<Task>, StoreError> {
        let mut sql = format!(
            "SELECT {TASK_COLUMNS} FROM tasks WHERE ($1 = '' OR account_id = $1) AND ($2 = '' OR status = $2)"
        );
        if before.is_some() {
            sql.push_str(" AND (created_at < $3 OR (created_at = $3 AND id < $4))");
        }
        sql.push_str(&format!(
            " ORDER BY created_at DESC, id DESC LIMIT {}",
            limit.clamp(1, 1000)
        ));
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(account_id.unwrap_or_default())
            .bind(state.map(TaskState::as_str).unwrap_or_default());
        if let Some((at, id)) = before {
            query = query.bind(at).bind(id);
        }
        let rows = query.fetch_all(self.pool()).await?;
        rows.iter().map(task_from_row).collect()
    }

    /// Switches a channel off (or back on) for every replica sharing the database.
    pub async fn set_channel_disabled(&self, name: &str, disabled: bool) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO channel_switches (name, disabled, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (name) DO UPDATE SET disabled = $2, updated_at = $3",
        )
        .bind(name)
        .bind(i64::from(disabled))
        .bind(now_millis())
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// The channels switched off.
    pub async fn disabled_channels(&self) -> Result<Vec<String>, StoreError> {
        let rows: Vec<(String,)> =
            sqlx::query_as("SELECT name FROM channel_switches WHERE disabled = 1 ORDER BY name")
                .fetch_all(self.pool())
                .await?;
        Ok(rows.into_iter().map(|(n,)| n).collect())
    }
}

fn token_from_row(
    (id, name, prefix, read_only, revoked, created_at): (String, String, String, i64, i64, i64),
) -> AdminToken {
    AdminToken {
        id,
        name,
        prefix,
        read_only: read_only != 0,
        revoked: revoked != 0,
        created_at,
    }
}

/// `%text%` for `LIKE … ESCAPE '\'`, with the text's own wildcards escaped.
fn like_pattern(text: &str) -> String {
    let mut pattern = String::from("%");
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(like_pattern("a_b%"), "%a\\_b\\%%");
        assert_eq!(like_pattern(""), "%%");
    }
}
