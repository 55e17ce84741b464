//! Customer statements (docs/architecture.md, "The chained ledger"): an account's ledger rows
//! over a period, each with its link in the account's chain, followed to a signed checkpoint —
//! a self-contained JSON document that [`verify`] (and `docs/verify_statement.py`) checks
//! without the database. An edited, dropped or reordered row breaks the chain; a rewritten
//! chain does not reach the signed head.

use crate::chain::{GENESIS, LedgerLine, read_lines};
use crate::checkpoint::Checkpoint;
use crate::{Store, StoreError, now_millis};
use serde::{Deserialize, Serialize};
use tollgate_billing::Amount;

/// The statement format's name.
pub const FORMAT: &str = "tollgate-statement-v1";

/// A statement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Statement {
    /// [`FORMAT`].
    pub format: String,
    /// The account.
    pub account_id: String,
    /// Its name.
    pub account_name: String,
    /// The period, Unix milliseconds: rows with `from <= created_at < until`.
    pub from: i64,
    /// The period's end (exclusive).
    pub until: i64,
    /// When it was made.
    pub generated_at: i64,
    /// The link before the first row (empty: the first row starts the account's chain).
    pub prev: String,
    /// The balance before the first row.
    pub opening_balance: Amount,
    /// The balance after the last row of the period.
    pub closing_balance: Amount,
    /// The rows: the period's, then those after it up to the checkpoint's head.
    pub rows: Vec<StatementRow>,
    /// The signed checkpoint the chain is followed to (`None`: none was made yet).
    pub checkpoint: Option<Checkpoint>,
}

/// One row of a statement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatementRow {
    /// Every hashed column.
    #[serde(flatten)]
    pub line: LedgerLine,
    /// `amount_nanos` as a decimal string.
    pub amount: Amount,
    /// The row's link.
    pub hash: String,
    /// In the period (else: a row after it, there to reach the checkpoint).
    pub in_period: bool,
}

/// What [`verify`] established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Rows of the period.
    pub rows: usize,
    /// The checkpoint the chain reached, and its key's id.
    pub checkpoint: Option<(String, String)>,
}

/// Checks `statement` alone: every row links to the one before (the first to `prev`), numbers
/// follow each other, balances follow from amounts, each `amount` is its `amount_nanos`, and —
/// when there is a checkpoint — its signature verifies (by one of `trusted` public keys when
/// given) and the chain reaches the head it signed for the account. The first failure, in
/// words.
pub fn verify(statement: &Statement, trusted: Option<&[String]>) -> Result<Verified, String> {
    if statement.format != FORMAT {
        return Err(format!("not a {FORMAT} document: {:?}", statement.format));
    }
    let mut prev = statement.prev.clone();
    let mut balance = statement.opening_balance.nanos();
    let mut last_seq: Option<i64> = None;
    let mut closing = None;
    for (i, row) in statement.rows.iter().enumerate() {
        let line = &row.line;
        let at = format!("row {} ({}, seq {})", i + 1, line.id, line.seq);
        if line.account_id != statement.account_id {
            return Err(format!("{at}: belongs to {}", line.account_id));
        }
        if let Some(last) = last_seq
            && line.seq != last + 1
        {
            return Err(format!(
                "{at}: seq {} follows {last} — a row is missing or out of order",
                line.seq
            ));
        }
        if row.amount.nanos() != line.amount_nanos {
            return Err(format!(
                "{at}: amount {} is not amount_nanos {}",
                row.amount, line.amount_nanos
            ));
        }
        balance = balance
            .checked_add(line.amount_nanos)
            .ok_or_else(|| format!("{at}: the balance overflows"))?;
        if balance != line.balance_after_nanos {
            return Err(format!(
                "{at}: the balance after it should be {} but the row says {}",
                Amount::from_nanos(balance),
                Amount::from_nanos(line.balance_after_nanos)
            ));
        }
        let hash = line.hash(&prev);
        if hash != row.hash {
            return Err(format!(
                "{at}: its columns and the link before it hash to {hash}, not {} — edited, or a row before it was dropped or moved",
                row.hash
            ));
        }
        if row.in_period {
            closing = Some(balance);
        }
        prev = hash;
        last_seq = Some(line.seq);
    }
    if let Some(closing) = closing
        && closing != statement.closing_balance.nanos()
    {
        return Err(format!(
            "the closing balance {} is not the last row's {}",
            statement.closing_balance,
            Amount::from_nanos(closing)
        ));
    }
    let rows = statement.rows.iter().filter(|r| r.in_period).count();
    let Some(checkpoint) = &statement.checkpoint else {
        return Ok(Verified {
            rows,
            checkpoint: None,
        });
    };
    checkpoint.verify()?;
    if let Some(keys) = trusted
        && !keys
            .iter()
            .any(|k| k.eq_ignore_ascii_case(&checkpoint.public_key) || *k == checkpoint.key_id)
    {
        return Err(format!(
            "checkpoint {} is signed by key {}, which is not one you trust",
            checkpoint.id, checkpoint.key_id
        ));
    }
    let Some((seq, signed)) = checkpoint.heads.get(&statement.account_id) else {
        return Err(format!(
            "checkpoint {} signed no head for account {}",
            checkpoint.id, statement.account_id
        ));
    };
    match statement.rows.iter().find(|r| r.line.seq == *seq) {
        Some(row) if row.hash == *signed => Ok(Verified {
            rows,
            checkpoint: Some((checkpoint.id.clone(), checkpoint.key_id.clone())),
        }),
        Some(row) => Err(format!(
            "checkpoint {} signed seq {seq} as {signed}, but the chain reaches {} there — the ledger was rewritten",
            checkpoint.id, row.hash
        )),
        None if statement.rows.is_empty() && *signed == statement.prev => Ok(Verified {
            rows,
            checkpoint: Some((checkpoint.id.clone(), checkpoint.key_id.clone())),
        }),
        None => Err(format!(
            "checkpoint {} signed seq {seq}, which the statement does not reach",
            checkpoint.id
        )),
    }
}

impl Store {
    /// The statement of `account` (an id or name) for `from <= created_at < until`, followed
    /// to the first checkpoint that covers its last row; `sign` makes one now when none does.
    pub async fn statement(
        &self,
        account: &str,
        from: i64,
        until: i64,
        sign: Option<&ed25519_dalek::SigningKey>,
    ) -> Result<Statement, StoreError> {
        let found = self.find_account(account).await?;
        let mut conn = self.pool().acquire().await?;
        // The period's places in the chain, found by time (the `ledger_account` index).
        let (first, last, last_at): (Option<i64>, Option<i64>, Option<i64>) = sqlx::query_as(
            "SELECT MIN(seq), MAX(seq), MAX(created_at) FROM ledger
             WHERE account_id = $1 AND created_at >= $2 AND created_at < $3
                 AND hash IS NOT NULL",
        )
        .bind(&found.id)
        .bind(from)
        .bind(until)
        .fetch_one(&mut *conn)
        .await?;
        // The chained row before the period: its link and balance open the statement.
        let before: (Option<i64>,) = match first {
            Some(first) => sqlx::query_as(
                "SELECT MAX(seq) FROM ledger
                 WHERE account_id = $1 AND seq < $2 AND hash IS NOT NULL",
            )
            .bind(&found.id)
            .bind(first),
            None => sqlx::query_as(
                "SELECT MAX(seq) FROM ledger
                 WHERE account_id = $1 AND created_at < $2 AND hash IS NOT NULL",
            )
            .bind(&found.id)
            .bind(from),
        }
        .fetch_one(&mut *conn)
        .await?;
        let previous = match before.0 {
            Some(seq) => read_lines(&mut conn, &found.id, seq, seq, 1).await?.pop(),
            None => None,
        };
        drop(conn);
        // The first checkpoint that signed this account at or after the period's last row (or
        // the row before an empty period).
        let last_seq = last.or(before.0);
        let mut checkpoint = None;
        let mut since = last_at
            .or(previous.as_ref().map(|(l, _)| l.created_at))
            .unwrap_or(from);
        while let Some(c) = self.checkpoint_after(since).await? {
            let covers = c
                .heads
                .get(&found.id)
                .is_some_and(|(seq, _)| last_seq.is_none_or(|s| *seq >= s));
            if covers {
                checkpoint = Some(c);
                break;
            }
            since = c.created_at + 1;
        }
        if checkpoint.is_none()
            && let Some(key) = sign
        {
            checkpoint = Some(self.make_checkpoint(key).await?);
        }
        // The period's rows, then those after it up to the checkpoint's head.
        let head_seq = checkpoint
            .as_ref()
            .and_then(|c| c.heads.get(&found.id))
            .map(|(seq, _)| *seq);
        let start = first.unwrap_or(before.0.map_or(i64::MIN, |b| b.saturating_add(1)));
        let lines = match last.max(head_seq) {
            Some(end) => {
                let mut conn = self.pool().acquire().await?;
                read_lines(&mut conn, &found.id, start, end, i64::MAX).await?
            }
            None => Vec::new(),
        };
        let opening = match (&previous, lines.first()) {
            (Some((l, _)), _) => l.balance_after_nanos,
            (None, Some((l, _))) => l.balance_after_nanos - l.amount_nanos,
            (None, None) => found.balance.nanos(),
        };
        let prev = previous
            .and_then(|(_, h)| h)
            .unwrap_or_else(|| GENESIS.to_owned());
        Ok(assemble(
            found, from, until, prev, opening, lines, last, checkpoint,
        ))
    }
}

/// The statement of `lines` (the period's, up to `period_end`, then those up to the
/// checkpoint's head).
#[allow(clippy::too_many_arguments)]
fn assemble(
    account: crate::Account,
    from: i64,
    until: i64,
    prev: String,
    opening: i64,
    lines: Vec<(LedgerLine, Option<String>)>,
    period_end: Option<i64>,
    checkpoint: Option<Checkpoint>,
) -> Statement {
    let mut closing = opening;
    let rows: Vec<StatementRow> = lines
        .into_iter()
        .map(|(line, hash)| {
            let in_period = period_end.is_some_and(|end| line.seq <= end)
                && line.created_at >= from
                && line.created_at < until;
            if in_period {
                closing = line.balance_after_nanos;
            }
            StatementRow {
                amount: Amount::from_nanos(line.amount_nanos),
                hash: hash.unwrap_or_default(),
                in_period,
                line,
            }
        })
        .collect();
    Statement {
        format: FORMAT.into(),
        account_id: account.id,
        account_name: account.name,
        from,
        until,
        generated_at: now_millis(),
        prev,
        opening_balance: Amount::from_nanos(opening),
        closing_balance: Amount::from_nanos(closing),
        rows,
        checkpoint,
    }
}
