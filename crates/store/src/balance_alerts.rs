//! Balance alerts a customer sets in the portal (docs/decisions.md, "Balance alerts a customer
//! sets"): below a threshold of its own account's balance, a signed webhook to a URL the person
//! gave, and a banner on the portal's pages.
//!
//! Each is judged as an operator's `balance_below` rule is (`tollgate-alerting`), under its own
//! id as the rule's name: its level per account in `alert_levels`, its events and deliveries in
//! the same tables. [`Store::balance_alerts_to_judge`] is one query for all of them: only the
//! alerts whose account is below the threshold, or that are firing and may have come back.

use crate::alerts::AlertLevel;
use crate::{Store, StoreError, new_id, now_millis};
use serde::Serialize;
use sqlx::Row as _;
use tollgate_billing::Amount;

/// The most balance alerts one account may have.
pub const MAX_BALANCE_ALERTS: i64 = 5;

/// A balance alert as its account's people see it (its secret is shown once, when it is made).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BalanceAlert {
    /// `bal_…`: also the name its events carry as `rule`.
    pub id: String,
    pub account_id: String,
    /// It fires when the account's balance falls below this.
    pub threshold: Amount,
    /// Where its events are posted; `None`: the portal's banner only.
    pub webhook_url: Option<String>,
    /// `standard` (signed, Standard Webhooks) or `slack`.
    pub format: String,
    /// The portal person who set it (`portal:EMAIL`).
    pub created_by: String,
    pub created_at: i64,
    /// Its `whsec_…` signing secret (never serialized).
    #[serde(skip)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    pub secret: Option<String>,
}

/// A balance alert as written; the store gives it an id and a time.
#[derive(Debug, Clone)]
pub struct NewBalanceAlert<'a> {
    pub account_id: &'a str,
    pub threshold: Amount,
    pub webhook_url: Option<&'a str>,
    pub format: &'a str,
    pub secret: Option<&'a str>,
    pub created_by: &'a str,
}

/// A balance alert to judge now: its account's name and balance, and its stored level there.
#[derive(Debug, Clone)]
pub struct BalanceAlertToJudge {
    pub alert: BalanceAlert,
    pub account_name: String,
    pub balance: Amount,
    pub level: Option<AlertLevel>,
}

const COLUMNS: &str = "b.id, b.account_id, b.threshold_nanos, b.webhook_url, b.format, b.secret, \
     b.created_by, b.created_at";

fn alert_from_row(row: &sqlx::any::AnyRow) -> Result<BalanceAlert, StoreError> {
    Ok(BalanceAlert {
        id: row.try_get("id")?,
        account_id: row.try_get("account_id")?,
        threshold: Amount::from_nanos(row.try_get("threshold_nanos")?),
        webhook_url: row.try_get("webhook_url")?,
        format: row.try_get("format")?,
        secret: row.try_get("secret")?,
        created_by: row.try_get("created_by")?,
        created_at: row.try_get("created_at")?,
    })
}

impl Store {
    /// Adds a balance alert to its account; `None` when the account has
    /// [`MAX_BALANCE_ALERTS`] already (counted behind the account's row lock on PostgreSQL,
    /// so two people adding at once cannot pass it).
    pub async fn create_balance_alert(
        &self,
        new: &NewBalanceAlert<'_>,
    ) -> Result<Option<BalanceAlert>, StoreError> {
        let mut tx = self.write_tx().await?;
        let lock = match self.backend() {
            crate::Backend::Postgres => " FOR UPDATE",
            crate::Backend::Sqlite => "",
        };
        let found = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT id FROM accounts WHERE id = $1{lock}"
        )))
        .bind(new.account_id)
        .fetch_optional(&mut *tx)
        .await?;
        if found.is_none() {
            return Err(StoreError::NotFound(format!(
                "account {:?}",
                new.account_id
            )));
        }
        let (count,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM balance_alerts WHERE account_id = $1")
                .bind(new.account_id)
                .fetch_one(&mut *tx)
                .await?;
        if count >= MAX_BALANCE_ALERTS {
            return Ok(None);
        }
        let alert = BalanceAlert {
            id: new_id("bal"),
            account_id: new.account_id.to_owned(),
            threshold: new.threshold,
            webhook_url: new.webhook_url.map(str::to_owned),
            format: new.format.to_owned(),
            created_by: new.created_by.to_owned(),
            created_at: now_millis(),
            secret: new.secret.map(str::to_owned),
        };
        sqlx::query(
            "INSERT INTO balance_alerts (id, account_id, threshold_nanos, webhook_url, format,
                 secret, created_by, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(&alert.id)
        .bind(&alert.account_id)
        .bind(alert.threshold.nanos())
        .bind(alert.webhook_url.as_deref())
        .bind(&alert.format)
        .bind(alert.secret.as_deref())
        .bind(&alert.created_by)
        .bind(alert.created_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(alert))
    }

    /// An account's balance alerts, oldest first.
    pub async fn balance_alerts(&self, account_id: &str) -> Result<Vec<BalanceAlert>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM balance_alerts b WHERE b.account_id = $1
             ORDER BY b.created_at, b.id"
        )))
        .bind(account_id)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(alert_from_row).collect()
    }

    /// Deletes one of `account_id`'s balance alerts, with its levels and the deliveries not yet
    /// made (its events stay, as history); false if the account has none of that id.
    pub async fn delete_balance_alert(
        &self,
        account_id: &str,
        id: &str,
    ) -> Result<bool, StoreError> {
        let mut tx = self.write_tx().await?;
        let deleted = sqlx::query("DELETE FROM balance_alerts WHERE id = $1 AND account_id = $2")
            .bind(id)
            .bind(account_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if deleted == 0 {
            return Ok(false);
        }
        sqlx::query("DELETE FROM alert_levels WHERE rule = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM alert_deliveries WHERE rule = $1 AND state = 'pending'")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// The balance alerts with a webhook that may change level now, in one query: those whose
    /// account is below the threshold, and those firing (which may have come back).
    pub async fn balance_alerts_to_judge(&self) -> Result<Vec<BalanceAlertToJudge>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS}, a.name AS account_name, a.balance_nanos, l.level, l.episode
             FROM balance_alerts b
             JOIN accounts a ON a.id = b.account_id
             LEFT JOIN alert_levels l ON l.rule = b.id AND l.subject = 'account:' || b.account_id
             WHERE b.webhook_url IS NOT NULL
               AND (a.balance_nanos < b.threshold_nanos OR l.level > 0)
             ORDER BY b.id"
        )))
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|row| {
                let level: Option<i64> = row.try_get("level")?;
                let episode: Option<i64> = row.try_get("episode")?;
                Ok(BalanceAlertToJudge {
                    alert: alert_from_row(row)?,
                    account_name: row.try_get("account_name")?,
                    balance: Amount::from_nanos(row.try_get("balance_nanos")?),
                    level: level.map(|level| AlertLevel {
                        level,
                        episode: episode.unwrap_or(0),
                    }),
                })
            })
            .collect()
    }
}
