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
        let all = read_lines(&mut conn, &found.id, i64::MIN, i64::MAX, i64::MAX).await?;
        drop(conn);
        let first = all
            .iter()
            .position(|(l, _)| l.created_at >= from && l.created_at < until);
        let last = all
            .iter()
            .rposition(|(l, _)| l.created_at >= from && l.created_at < until);
        let (first, last) = match (first, last) {
            (Some(f), Some(l)) => (f, l),
            // No row in the period: the statement is the link at its start.
            _ => {
                let before = all.iter().rposition(|(l, _)| l.created_at < from);
                let at = before.map_or(0, |b| b + 1);
                (at, at.wrapping_sub(1))
            }
        };
        let prev = first
            .checked_sub(1)
            .and_then(|i| all.get(i))
            .and_then(|(_, h)| h.clone())
            .unwrap_or_else(|| GENESIS.to_owned());
        let opening = match first.checked_sub(1).and_then(|i| all.get(i)) {
            Some((l, _)) => l.balance_after_nanos,
            None => all.get(first).map_or(found.balance.nanos(), |(l, _)| {
                l.balance_after_nanos - l.amount_nanos
            }),
        };
        let last_seq = all.get(last).map(|(l, _)| l.seq);
        // The first checkpoint that signed this account at or after the last row.
        let mut checkpoint = None;
        let mut since = all.get(last).map_or(from, |(l, _)| l.created_at);
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
            // Rows written since the first read, up to the new head.
            let mut conn = self.pool().acquire().await?;
            let more = read_lines(&mut conn, &found.id, i64::MIN, i64::MAX, i64::MAX).await?;
            return Ok(assemble(
                found, from, until, prev, opening, more, first, last, checkpoint,
            ));
        }
        Ok(assemble(
            found, from, until, prev, opening, all, first, last, checkpoint,
        ))
    }
}

#[allow(clippy::too_many_arguments)]
fn assemble(
    account: crate::Account,
    from: i64,
    until: i64,
    prev: String,
    opening: i64,
    all: Vec<(LedgerLine, Option<String>)>,
    first: usize,
    last: usize,
    checkpoint: Option<Checkpoint>,
) -> Statement {
    let head_seq = checkpoint
        .as_ref()
        .and_then(|c| c.heads.get(&account.id))
        .map(|(seq, _)| *seq);
    let period_end = all.get(last).map(|(l, _)| l.seq);
    let mut closing = opening;
    let rows: Vec<StatementRow> = all
        .into_iter()
        .skip(first)
        .filter(|(l, _)| {
            period_end.is_some_and(|end| l.seq <= end) || head_seq.is_some_and(|h| l.seq <= h)
        })
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
