//! Accounts and API keys.

use crate::ids::{hash_secret, new_id, new_secret};
use crate::policy::{AccessPolicy, PriceGroup};
use crate::wide_sum::{total, wide_sum};
use crate::{LedgerKind, Store, StoreError, now_millis};
use serde::Serialize;
use std::sync::Arc;
use tollgate_billing::{Amount, Total};

/// An account: the owner of a balance and of one or more keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Account {
    /// `acct_…`
    pub id: String,
    /// Unique, chosen by the operator.
    pub name: String,
    /// Credits minus captured charges; equals the sum of the ledger.
    pub balance: Amount,
    /// Sum of open holds (video tasks; requests are held in the replicas' leases).
    pub held: Amount,
    /// Sum of the replicas' open credit leases (DESIGN §4): credit reserved for requests that
    /// the ledger engines serve from memory.
    pub leased: Amount,
    /// A disabled account's keys are refused.
    pub disabled: bool,
    /// Unix milliseconds.
    pub created_at: i64,
}

impl Account {
    /// What the account may still hold or lease: balance minus open holds and leases.
    pub fn available(&self) -> Amount {
        Amount::from_nanos(
            self.balance
                .nanos()
                .saturating_sub(self.held.nanos())
                .saturating_sub(self.leased.nanos()),
        )
    }
}

/// A freshly created key. `secret` exists only here: the store keeps its hash.
#[derive(Debug, Clone)]
pub struct NewKey {
    /// `key_…`
    pub id: String,
    /// The bearer secret, `tg-…`. Show it once.
    pub secret: String,
}

/// Who a request is from, once its key is recognised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The key that was presented.
    pub key_id: String,
    /// The account it spends from.
    pub account_id: String,
    /// The account's name, for logs.
    pub account_name: String,
    /// The access policies the request must pass: the account's, then the key's (empty ones
    /// left out).
    pub policies: Vec<AccessPolicy>,
    /// The price group it pays in (its key's, else its account's); `None`: list prices.
    pub price_group: Option<Arc<PriceGroup>>,
    /// The holders whose rate limits and spend caps the request counts against — the
    /// account (`acct_…`) and the key (`key_…`), each with its policy — where a policy sets any.
    pub limited_by: LimitedBy,
}

/// The holders (account, key) whose limits a request counts against, each with its policy;
/// shared, so that a cached principal is cloned without copying them.
pub type LimitedBy = Arc<[(Arc<str>, AccessPolicy)]>;

/// Spending of one model, from the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModelUsage {
    /// Public model name.
    pub model: String,
    /// Number of charges.
    pub requests: i64,
    /// Sum of the charges.
    pub charged: Total,
}

/// What `tollgate keys show` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccountReport {
    /// The account itself.
    pub account: Account,
    /// Open holds right now.
    pub open_holds: i64,
    /// The account's keys: (id, prefix, disabled).
    pub keys: Vec<KeySummary>,
    /// Charges by model.
    pub usage: Vec<ModelUsage>,
    /// Number of ledger rows.
    pub ledger_rows: i64,
    /// Sum of the ledger; equal to `account.balance` unless the database was edited by hand.
    pub ledger_sum: Total,
}

/// A key as listings show it (never the secret).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "Key"))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeySummary {
    /// `key_…`
    pub id: String,
    /// The first characters of the secret.
    pub prefix: String,
    /// Whether the key is refused.
    pub disabled: bool,
    /// Whether the key was revoked (refused for good).
    pub revoked: bool,
    /// Its label.
    pub name: String,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// How long a correction waits for recalled leases to give money back before it is refused.
pub const RECALL_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// `api_keys.disabled` of a key revoked for good: unlike a disabled account, it is never
/// re-enabled (`docs/decisions.md`, "Access policies").
const KEY_REVOKED: i64 = 2;

pub(crate) type AccountRow = (String, String, i64, i64, i64, i64, i64);

/// The columns an [`AccountRow`] reads, in order.
pub(crate) const ACCOUNT_COLUMNS: &str =
    "id, name, balance_nanos, held_nanos, leased_nanos, disabled, created_at";

pub(crate) fn account_from_row(
    (id, name, balance, held, leased, disabled, created_at): AccountRow,
) -> Account {
    Account {
        id,
        name,
        balance: Amount::from_nanos(balance),
        held: Amount::from_nanos(held),
        leased: Amount::from_nanos(leased),
        disabled: disabled != 0,
        created_at,
    }
}

impl Store {
    /// Creates an account with an opening balance (one `credit` ledger row when it is not zero)
    /// and its first key.
    pub async fn create_account(
        &self,
        name: &str,
        opening_balance: Amount,
    ) -> Result<(Account, NewKey), StoreError> {
        if name.trim().is_empty() {
            return Err(StoreError::InvalidName(
                "an account needs a name that is not empty".into(),
            ));
        }
        if opening_balance.is_negative() {
            return Err(StoreError::InvalidAmount(
                "an opening balance cannot be negative".into(),
            ));
        }
        let mut tx = self.write_tx().await?;
        let taken: Option<(String,)> = sqlx::query_as("SELECT id FROM accounts WHERE name = $1")
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?;
        if taken.is_some() {
            return Err(StoreError::AlreadyExists(format!("account {name:?}")));
        }
        let now = now_millis();
        let id = new_id("acct");
        let opening = opening_balance != Amount::ZERO;
        sqlx::query(
            "INSERT INTO accounts (id, name, balance_nanos, held_nanos, disabled, created_at,
                 ledger_seq)
             VALUES ($1, $2, $3, 0, 0, $4, $5)",
        )
        .bind(&id)
        .bind(name)
        .bind(opening_balance.nanos())
        .bind(now)
        .bind(i64::from(opening))
        .execute(&mut *tx)
        .await?;
        if opening {
            let line = crate::chain::LedgerLine {
                id: new_id("led"),
                account_id: id.clone(),
                seq: 1,
                kind: "credit".into(),
                amount_nanos: opening_balance.nanos(),
                balance_after_nanos: opening_balance.nanos(),
                note: Some("opening balance".into()),
                created_at: now,
                ..crate::chain::LedgerLine::default()
            };
            crate::chain::append(&mut tx, &line, None).await?;
        }
        let key = insert_key(&mut tx, &id, name, now).await?;
        tx.commit().await?;
        let account = Account {
            id,
            name: name.to_owned(),
            balance: opening_balance,
            held: Amount::ZERO,
            leased: Amount::ZERO,
            disabled: false,
            created_at: now,
        };
        Ok((account, key))
    }

    /// Adds another key to an existing account.
    pub async fn create_key(&self, account_id: &str, name: &str) -> Result<NewKey, StoreError> {
        let mut tx = self.write_tx().await?;
        let key = insert_key(&mut tx, account_id, name, now_millis()).await?;
        tx.commit().await?;
        Ok(key)
    }

    /// Finds an account by its id (`acct_…`), by one of its keys' ids (`key_…`), or by name.
    pub async fn find_account(&self, id_or_name: &str) -> Result<Account, StoreError> {
        let row: Option<AccountRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {ACCOUNT_COLUMNS} FROM accounts
             WHERE id = $1 OR name = $1
                OR id = (SELECT account_id FROM api_keys WHERE id = $1)
             ORDER BY CASE WHEN id = $1 THEN 0 ELSE 1 END
             LIMIT 1"
        )))
        .bind(id_or_name)
        .fetch_optional(self.pool())
        .await?;
        row.map(account_from_row)
            .ok_or_else(|| StoreError::NotFound(format!("account {id_or_name:?}")))
    }

    /// Every account, oldest first.
    pub async fn list_accounts(&self) -> Result<Vec<Account>, StoreError> {
        let rows: Vec<AccountRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {ACCOUNT_COLUMNS} FROM accounts ORDER BY created_at, id"
        )))
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().map(account_from_row).collect())
    }

    /// Recognises a presented secret. `Ok(None)` for an unknown secret; `Revoked` for a key
    /// revoked for good; `Disabled` when the key or its account is disabled.
    pub async fn authenticate(&self, secret: &str) -> Result<Option<Principal>, StoreError> {
        self.principal_where("k.secret_hash", &hash_secret(secret))
            .await
    }

    /// The principal of the key `key_id` (what a client secret it minted stands for), judged
    /// as [`Store::authenticate`] judges a presented key.
    pub async fn principal_of_key(&self, key_id: &str) -> Result<Option<Principal>, StoreError> {
        self.principal_where("k.id", key_id).await
    }

    /// The principal of the key whose `column` (`k.secret_hash` or `k.id`) is `value`.
    async fn principal_where(
        &self,
        column: &'static str,
        value: &str,
    ) -> Result<Option<Principal>, StoreError> {
        type KeyRow = (
            String,
            String,
            String,
            i64,
            i64,
            Option<String>,
            Option<String>,
        );
        let row: Option<KeyRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT k.id, k.account_id, a.name, k.disabled, a.disabled, a.policy, k.policy
             FROM api_keys k JOIN accounts a ON a.id = k.account_id
             WHERE {column} = $1"
        )))
        .bind(value)
        .fetch_optional(self.pool())
        .await?;
        match row {
            None => Ok(None),
            // Revoked for good: the key no longer exists as a credential.
            Some((key_id, _, name, KEY_REVOKED, _, _, _)) => Err(StoreError::Revoked(format!(
                "key {key_id} of account {name}"
            ))),
            Some((key_id, _, name, key_disabled, account_disabled, _, _))
                if key_disabled != 0 || account_disabled != 0 =>
            {
                Err(StoreError::Disabled(format!(
                    "key {key_id} of account {name}"
                )))
            }
            Some((key_id, account_id, account_name, _, _, account_policy, key_policy)) => {
                let policies =
                    crate::policy::layers(account_policy.as_deref(), key_policy.as_deref())?;
                let price_group = match crate::policy::group_name(&policies) {
                    Some(name) => Some(Arc::new(self.price_group(name).await?)),
                    None => None,
                };
                let mut limited_by = Vec::new();
                for (holder, column) in [(&account_id, &account_policy), (&key_id, &key_policy)] {
                    let policy = AccessPolicy::from_column(column.as_deref())?;
                    if policy.limits_rate() {
                        limited_by.push((Arc::<str>::from(holder.as_str()), policy));
                    }
                }
                Ok(Some(Principal {
                    key_id,
                    account_id,
                    account_name,
                    policies,
                    price_group,
                    limited_by: limited_by.into(),
                }))
            }
        }
    }

    /// Adds `amount` to the balance (negative: a correction, which takes only what the
    /// account has available, recalling the replicas' leases first — see
    /// [`Store::recalling`]), with its ledger row.
    pub async fn credit(
        &self,
        account_id: &str,
        amount: Amount,
        note: Option<&str>,
    ) -> Result<Account, StoreError> {
        self.recalling(account_id, || {
            Box::pin(async move {
                let mut tx = self.write_tx().await?;
                let CreditRow { account, .. } =
                    credit_in(&mut tx, account_id, amount, LedgerKind::Credit, note, false).await?;
                tx.commit().await?;
                Ok(account)
            })
        })
        .await
    }

    /// Runs `attempt` — a correction in a transaction of its own — and, when it finds that
    /// the money it would take is leased by the replicas ([`StoreError::NotAvailable`]),
    /// recalls the account's open leases and tries again every 100 ms: each replica gives
    /// back what its requests do not hold at its next sweep (about a second), and until the
    /// correction lands no new lease may take what it needs. Past [`RECALL_WAIT`], or when
    /// even every lease would not cover it, the refusal stands (`docs/decisions.md`,
    /// "Corrections and leases").
    pub(crate) async fn recalling<'a, T>(
        &'a self,
        account_id: &'a str,
        mut attempt: impl FnMut() -> std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<T, StoreError>> + Send + 'a>,
        >,
    ) -> Result<T, StoreError> {
        let mut recall: Option<(i64, Amount)> = None;
        loop {
            let result = attempt().await;
            let (requested, available, held, leased) = match &result {
                Err(StoreError::NotAvailable {
                    requested,
                    available,
                    held,
                    leased,
                }) => (*requested, *available, *held, *leased),
                _ => {
                    if let Some((_, amount)) = recall {
                        self.end_recall(account_id, amount).await?;
                    }
                    return result;
                }
            };
            let recallable = available.nanos().max(0).saturating_add(leased.nanos());
            let now = now_millis();
            match recall {
                // Even every lease given back would not cover it: no point waiting.
                None if recallable < requested.nanos() => return result,
                None => {
                    let until = now
                        .saturating_add(i64::try_from(RECALL_WAIT.as_millis()).unwrap_or(i64::MAX));
                    self.start_recall(account_id, requested, until).await?;
                    tracing::info!(account = account_id, %requested, %available, %leased, %held,
                        "a correction recalls the account's leases");
                    recall = Some((until, requested));
                }
                Some((until, amount)) if now >= until => {
                    self.end_recall(account_id, amount).await?;
                    return result;
                }
                Some(_) => {}
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    async fn start_recall(
        &self,
        account_id: &str,
        amount: Amount,
        until: i64,
    ) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        sqlx::query(
            "UPDATE accounts SET recall_nanos = recall_nanos + $1, recall_until = $2 WHERE id = $3",
        )
        .bind(amount.nanos())
        .bind(until)
        .bind(account_id)
        .execute(&mut *tx)
        .await?;
        sqlx::query("UPDATE leases SET recall = 1 WHERE account_id = $1 AND state = 'open'")
            .bind(account_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn end_recall(&self, account_id: &str, amount: Amount) -> Result<(), StoreError> {
        let mut tx = self.write_tx().await?;
        sqlx::query(
            "UPDATE accounts SET recall_nanos = CASE WHEN recall_nanos > $1
                 THEN recall_nanos - $1 ELSE 0 END WHERE id = $2",
        )
        .bind(amount.nanos())
        .bind(account_id)
        .execute(&mut *tx)
        .await?;
        sqlx::query("UPDATE leases SET recall = 0 WHERE account_id = $1 AND state = 'open'")
            .bind(account_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Disables (or re-enables) an account and so all its keys.
    pub async fn set_disabled(&self, account_id: &str, disabled: bool) -> Result<(), StoreError> {
        let done = sqlx::query("UPDATE accounts SET disabled = $1 WHERE id = $2")
            .bind(i64::from(disabled))
            .bind(account_id)
            .execute(self.writer())
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("account {account_id:?}")));
        }
        Ok(())
    }

    /// Revokes a key for good: it is refused from now on (on every replica within the key
    /// lookup's freshness) and can never be enabled again. Returns its account's id.
    pub async fn revoke_key(&self, key_id: &str) -> Result<String, StoreError> {
        let row: Option<(String,)> =
            sqlx::query_as("UPDATE api_keys SET disabled = $1 WHERE id = $2 RETURNING account_id")
                .bind(KEY_REVOKED)
                .bind(key_id)
                .fetch_optional(self.writer())
                .await?;
        row.map(|(account,)| account)
            .ok_or_else(|| StoreError::NotFound(format!("key {key_id:?}")))
    }

    /// Replaces a key: a new key of the same account, label and policy, and the old one
    /// revoked, in one transaction (a leaked key is rotated without a moment of neither or
    /// both). Returns the account's id and the new key.
    pub async fn rotate_key(&self, key_id: &str) -> Result<(String, NewKey), StoreError> {
        let mut tx = self.write_tx().await?;
        let row: Option<(String, String, i64, Option<String>)> =
            sqlx::query_as("SELECT account_id, name, disabled, policy FROM api_keys WHERE id = $1")
                .bind(key_id)
                .fetch_optional(&mut *tx)
                .await?;
        let Some((account_id, name, disabled, policy)) = row else {
            return Err(StoreError::NotFound(format!("key {key_id:?}")));
        };
        if disabled == KEY_REVOKED {
            return Err(StoreError::Disabled(format!(
                "key {key_id} was revoked; add a new key instead"
            )));
        }
        let key = insert_key(&mut tx, &account_id, &name, now_millis()).await?;
        sqlx::query("UPDATE api_keys SET policy = $1 WHERE id = $2")
            .bind(policy)
            .bind(&key.id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE api_keys SET disabled = $1 WHERE id = $2")
            .bind(KEY_REVOKED)
            .bind(key_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok((account_id, key))
    }

    /// Enables a key that was not revoked (`Disabled` for a revoked one).
    pub async fn enable_key(&self, key_id: &str) -> Result<(), StoreError> {
        let state: Option<(i64,)> = sqlx::query_as("SELECT disabled FROM api_keys WHERE id = $1")
            .bind(key_id)
            .fetch_optional(self.pool())
            .await?;
        match state {
            None => Err(StoreError::NotFound(format!("key {key_id:?}"))),
            Some((KEY_REVOKED,)) => Err(StoreError::Disabled(format!(
                "key {key_id} was revoked and cannot be enabled again; add a new key"
            ))),
            Some(_) => {
                sqlx::query("UPDATE api_keys SET disabled = 0 WHERE id = $1 AND disabled <> $2")
                    .bind(key_id)
                    .bind(KEY_REVOKED)
                    .execute(self.writer())
                    .await?;
                Ok(())
            }
        }
    }

    /// The account's keys, oldest first.
    pub async fn account_keys(&self, account_id: &str) -> Result<Vec<KeySummary>, StoreError> {
        let keys: Vec<(String, String, i64, String, i64)> = sqlx::query_as(
            "SELECT id, prefix, disabled, name, created_at FROM api_keys WHERE account_id = $1
             ORDER BY created_at, id",
        )
        .bind(account_id)
        .fetch_all(self.pool())
        .await?;
        Ok(keys
            .into_iter()
            .map(|(id, prefix, disabled, name, created_at)| KeySummary {
                id,
                prefix,
                disabled: disabled != 0,
                revoked: disabled == KEY_REVOKED,
                name,
                created_at,
            })
            .collect())
    }

    /// Balance, holds, keys and usage by model of one account.
    pub async fn report(&self, account_id: &str) -> Result<AccountReport, StoreError> {
        let account = self.find_account(account_id).await?;
        let (open_holds,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM holds WHERE account_id = $1 AND state = 'open'")
                .bind(&account.id)
                .fetch_one(self.pool())
                .await?;
        let keys = self.account_keys(&account.id).await?;
        // Sums that overflow on neither database (`crate::wide_sum`); charge rows are
        // negative, negated once summed.
        let usage: Vec<(String, i64, i64, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT model, COUNT(*), {} FROM ledger
             WHERE account_id = $1 AND kind = 'charge' AND model IS NOT NULL
             GROUP BY model ORDER BY model",
            wide_sum("amount_nanos", "charged")
        )))
        .bind(&account.id)
        .fetch_all(self.pool())
        .await?;
        let (ledger_rows, sum_high, sum_low): (i64, i64, i64) =
            sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT COUNT(*), {} FROM ledger WHERE account_id = $1",
                wide_sum("amount_nanos", "sum")
            )))
            .bind(&account.id)
            .fetch_one(self.pool())
            .await?;
        Ok(AccountReport {
            account,
            open_holds,
            keys,
            usage: usage
                .into_iter()
                .map(|(model, requests, high, low)| ModelUsage {
                    model,
                    requests,
                    charged: Total::ZERO.minus(total(high, low)),
                })
                .collect(),
            ledger_rows,
            ledger_sum: total(sum_high, sum_low),
        })
    }
}

/// Adds `amount` to the balance inside the caller's transaction, with its ledger row (its
/// place in the account's chain included). A negative amount — an operator's correction —
/// may take only what the account has available (balance − held − leased,
/// [`Account::available`]): more is refused with [`StoreError::NotAvailable`] unless
/// `allow_negative`, and then the ledger row records how far it went beyond
/// (`overdraw_nanos`, said in `anomaly`), which is what `tollgate audit` accepts a negative
/// balance from.
/// What [`credit_in`] wrote: the account after it, its ledger row, and what a negative amount
/// took beyond what was available (`overdraw_nanos`).
#[derive(Debug)]
pub(crate) struct CreditRow {
    pub account: Account,
    pub ledger_id: String,
    pub overdraw: Amount,
}

pub(crate) async fn credit_in(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    account_id: &str,
    amount: Amount,
    kind: LedgerKind,
    note: Option<&str>,
    allow_negative: bool,
) -> Result<CreditRow, StoreError> {
    if amount == Amount::ZERO {
        return Err(StoreError::InvalidAmount("a credit of zero".into()));
    }
    // An operator's correction goes either way; a refund only takes away; the rest only add.
    let takes_away = match kind {
        LedgerKind::Credit => None,
        LedgerKind::Refund => Some(true),
        _ => Some(false),
    };
    if takes_away.is_some_and(|takes| takes != amount.is_negative()) {
        return Err(StoreError::InvalidAmount(format!(
            "a {} of {amount}: it only {}",
            kind.as_str(),
            if amount.is_negative() {
                "adds"
            } else {
                "takes away"
            }
        )));
    }
    let lock = if tx.backend_name() == "PostgreSQL" {
        " FOR UPDATE"
    } else {
        ""
    };
    let before: Option<AccountRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE id = $1{lock}"
    )))
    .bind(account_id)
    .fetch_optional(&mut **tx)
    .await?;
    let Some(before) = before.map(account_from_row) else {
        return Err(StoreError::NotFound(format!("account {account_id:?}")));
    };
    let (kind, overdraw) = if amount.is_negative() {
        let taken = amount.nanos().saturating_neg();
        let available = before.available().nanos().max(0);
        if taken > available && !allow_negative {
            return Err(StoreError::NotAvailable {
                available: before.available(),
                held: before.held,
                leased: before.leased,
                requested: Amount::from_nanos(taken),
            });
        }
        let kind = match kind {
            LedgerKind::Credit => "adjustment",
            other => other.as_str(),
        };
        (kind, taken.saturating_sub(available).max(0))
    } else {
        (kind.as_str(), 0)
    };
    let anomaly = (overdraw > 0).then(|| {
        let what = if kind == "refund" {
            "a refund or chargeback after the money was spent (docs/decisions.md, \"Payments\")"
        } else {
            "an operator's correction beyond what was available (allow_negative)"
        };
        format!(
            "{what}: {} of it came out of money held or leased, or took the balance below zero",
            Amount::from_nanos(overdraw)
        )
    });
    // The bound keeps the sum inside i64: SQLite would silently turn an overflow into a
    // float, PostgreSQL would fail the statement.
    let (bound_sql, bound) = if amount.is_negative() {
        ("balance_nanos >= $3", i64::MIN - amount.nanos())
    } else {
        ("balance_nanos <= $3", i64::MAX - amount.nanos())
    };
    let row: Option<(i64, i64, Option<String>)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "UPDATE accounts SET balance_nanos = balance_nanos + $1, ledger_seq = ledger_seq + 1
         WHERE id = $2 AND {bound_sql}
         RETURNING balance_nanos, ledger_seq, ledger_head"
    )))
    .bind(amount.nanos())
    .bind(account_id)
    .bind(bound)
    .fetch_optional(&mut **tx)
    .await?;
    let Some((balance, seq, head)) = row else {
        return Err(StoreError::InvalidAmount(format!(
            "crediting {amount} would take the balance beyond what can be stored"
        )));
    };
    let ledger_id = new_id("led");
    let line = crate::chain::LedgerLine {
        id: ledger_id.clone(),
        account_id: account_id.to_owned(),
        seq,
        kind: kind.to_owned(),
        amount_nanos: amount.nanos(),
        balance_after_nanos: balance,
        note: note.map(str::to_owned),
        anomaly,
        overdraw_nanos: overdraw,
        created_at: now_millis(),
        ..crate::chain::LedgerLine::default()
    };
    crate::chain::append(&mut *tx, &line, head.as_deref()).await?;
    let account = Account {
        balance: Amount::from_nanos(balance),
        ..before
    };
    Ok(CreditRow {
        account,
        ledger_id,
        overdraw: Amount::from_nanos(overdraw),
    })
}

async fn insert_key(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    account_id: &str,
    name: &str,
    now: i64,
) -> Result<NewKey, StoreError> {
    let secret = new_secret();
    let id = new_id("key");
    let prefix: String = secret.chars().take(10).collect();
    let done = sqlx::query(
        "INSERT INTO api_keys (id, account_id, name, secret_hash, prefix, disabled, created_at)
         SELECT $1, id, $2, $3, $4, 0, $5 FROM accounts WHERE id = $6",
    )
    .bind(&id)
    .bind(name)
    .bind(hash_secret(&secret))
    .bind(prefix)
    .bind(now)
    .bind(account_id)
    .execute(&mut **tx)
    .await?;
    if done.rows_affected() == 0 {
        return Err(StoreError::NotFound(format!("account {account_id:?}")));
    }
    Ok(NewKey { id, secret })
}
