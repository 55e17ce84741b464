//! Customer statements (docs/architecture.md, "The chained ledger"): an account's ledger rows
//! over a period, each with its link in the account's chain, followed to a signed checkpoint —
//! a self-contained JSON document that [`verify`] (and `docs/verify_statement.py`) checks
//! without the database. An edited, dropped or reordered row breaks the chain; a rewritten
//! chain does not reach the signed head.
//!
//! What a statement holds, in chain order: the row before the period (when the account has
//! one: it shows where the period starts), the period's rows, and the rows after it up to the
//! head a checkpoint signed. The checkpoint comes without the other accounts' heads: the
//! statement carries its own head's inclusion proof under the signed Merkle root
//! (`crate::checkpoint`, `crate::merkle`), so it discloses nothing about any other account.

use crate::chain::{GENESIS, LedgerLine, read_lines};
use crate::checkpoint::{Checkpoint, InclusionProof, PublishedLog};
use crate::{Store, StoreError, now_millis};
use serde::{Deserialize, Serialize};
use tollgate_billing::Amount;

/// The statement format's name.
pub const FORMAT: &str = "tollgate-statement-v2";

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
    /// The balance before the period's first row.
    pub opening_balance: Amount,
    /// The balance after the period's last row.
    pub closing_balance: Amount,
    /// The rows: the one before the period, the period's, then those after it up to the
    /// checkpoint's head.
    pub rows: Vec<StatementRow>,
    /// The signed checkpoint the chain is followed to, without the heads (`None`: none was
    /// made yet).
    pub checkpoint: Option<Checkpoint>,
    /// This account's head in the checkpoint, and the proof that its signed root covers it.
    #[serde(default)]
    pub proof: Option<InclusionProof>,
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
    /// In the period: `from <= created_at < until`, nothing else.
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
/// follow each other, balances follow from amounts, each `amount` is its `amount_nanos`; each
/// row is in the period exactly when its time is, the row before the period is there unless
/// the chain starts in it, and the opening and closing balances are the rows'. With a
/// checkpoint, its signature verifies (by one of `trusted` public keys when given: a key, never
/// a key id), the proof puts this account's head under its signed root, and the rows end at
/// that head. With `trusted` keys a statement without a checkpoint is refused: its rows could
/// be anyone's rewriting. The first failure, in words.
pub fn verify(statement: &Statement, trusted: Option<&[String]>) -> Result<Verified, String> {
    if statement.format != FORMAT {
        return Err(format!(
            "not a {FORMAT} document: {:?} (ask the operator for a new statement)",
            statement.format
        ));
    }
    if statement.from > statement.until {
        return Err(format!(
            "the period starts at {} after it ends at {}",
            statement.from, statement.until
        ));
    }
    let mut prev = statement.prev.clone();
    let mut balance: Option<i64> = None;
    let mut last_seq: Option<i64> = None;
    let (mut opening, mut closing) = (None, None);
    for (i, row) in statement.rows.iter().enumerate() {
        let line = &row.line;
        let at = format!("row {} ({}, seq {})", i + 1, line.id, line.seq);
        if line.account_id != statement.account_id {
            return Err(format!("{at}: belongs to {}", line.account_id));
        }
        match last_seq {
            Some(last) if line.seq != last + 1 => {
                return Err(format!(
                    "{at}: seq {} follows {last} — a row is missing or out of order",
                    line.seq
                ));
            }
            None if statement.prev == GENESIS && line.seq != 1 => {
                return Err(format!(
                    "{at}: the chain starts here (no link before it), but at seq {}",
                    line.seq
                ));
            }
            _ => {}
        }
        if row.amount.nanos() != line.amount_nanos {
            return Err(format!(
                "{at}: amount {} is not amount_nanos {}",
                row.amount, line.amount_nanos
            ));
        }
        let before = match balance {
            Some(b) => b,
            None => line
                .balance_after_nanos
                .checked_sub(line.amount_nanos)
                .ok_or_else(|| format!("{at}: the balance overflows"))?,
        };
        let after = before
            .checked_add(line.amount_nanos)
            .ok_or_else(|| format!("{at}: the balance overflows"))?;
        if after != line.balance_after_nanos {
            return Err(format!(
                "{at}: the balance after it should be {} but the row says {}",
                Amount::from_nanos(after),
                Amount::from_nanos(line.balance_after_nanos)
            ));
        }
        let in_period = statement.from <= line.created_at && line.created_at < statement.until;
        if row.in_period != in_period {
            return Err(format!(
                "{at}: marked {} the period, but its time {} is {}",
                if row.in_period { "in" } else { "outside" },
                line.created_at,
                if in_period { "in it" } else { "outside it" }
            ));
        }
        if i == 0 && statement.prev != GENESIS && in_period {
            return Err(format!(
                "{at}: the statement starts inside the period — the row before it is missing"
            ));
        }
        if in_period {
            opening.get_or_insert(before);
            closing = Some(after);
        }
        let hash = line.hash(&prev);
        if hash != row.hash {
            return Err(format!(
                "{at}: its columns and the link before it hash to {hash}, not {} — edited, or a row before it was dropped or moved",
                row.hash
            ));
        }
        prev = hash;
        balance = Some(after);
        last_seq = Some(line.seq);
    }
    // No row in the period: the balance after the rows before it, throughout.
    let quiet = statement
        .rows
        .iter()
        .take_while(|r| r.line.created_at < statement.from)
        .last()
        .map(|r| r.line.balance_after_nanos);
    let opening = opening.or(quiet);
    let closing = closing.or(quiet);
    for (name, said, found) in [
        ("opening", statement.opening_balance, opening),
        ("closing", statement.closing_balance, closing),
    ] {
        if let Some(found) = found
            && found != said.nanos()
        {
            return Err(format!(
                "the {name} balance {said} is not the rows' {}",
                Amount::from_nanos(found)
            ));
        }
    }
    let rows = statement.rows.iter().filter(|r| r.in_period).count();
    let Some(checkpoint) = &statement.checkpoint else {
        if trusted.is_some() {
            return Err(
                "no signed checkpoint covers the statement: its rows are not proven to be the operator's books".into(),
            );
        }
        return Ok(Verified {
            rows,
            checkpoint: None,
        });
    };
    if let Some(keys) = trusted
        && !checkpoint.signed_by(keys)
    {
        return Err(format!(
            "checkpoint {} is signed by key {}, which is not one you trust",
            checkpoint.id, checkpoint.public_key
        ));
    }
    if checkpoint.version != 2 {
        return Err(format!(
            "checkpoint {} is of version {}: a statement carries a version 2 checkpoint",
            checkpoint.id, checkpoint.version
        ));
    }
    checkpoint.verify()?;
    let Some(proof) = &statement.proof else {
        return Err(format!(
            "checkpoint {} comes without the proof of this account's head",
            checkpoint.id
        ));
    };
    if proof.account_id != statement.account_id {
        return Err(format!(
            "the proof is of account {}, not {}",
            proof.account_id, statement.account_id
        ));
    }
    if !checkpoint.includes(proof) {
        return Err(format!(
            "the proof does not put seq {} ({}) under the root checkpoint {} signed",
            proof.seq, proof.hash, checkpoint.id
        ));
    }
    let reached = match statement.rows.last() {
        Some(row) => row.line.seq == proof.seq && row.hash == proof.hash,
        None => statement.prev == proof.hash,
    };
    if !reached {
        return Err(format!(
            "checkpoint {} signed seq {} as {}, but the chain does not end there — the ledger was rewritten, or rows were cut",
            checkpoint.id, proof.seq, proof.hash
        ));
    }
    Ok(Verified {
        rows,
        checkpoint: Some((checkpoint.id.clone(), checkpoint.key_id.clone())),
    })
}

/// A statement before its rows: every other field (`head`, its `rows` empty), and which of the
/// account's chained rows it holds — `seq` from `first_seq` to `last_seq` (none when
/// `last_seq` is `None`). A writer sends [`StatementPlan::json_around_rows`]'s two halves around
/// the rows, read a page at a time ([`Store::statement_rows`]), so that a statement of years is
/// never held whole; [`Store::statement`] reads them all into one value.
#[derive(Debug, Clone)]
pub struct StatementPlan {
    pub head: Statement,
    pub first_seq: i64,
    pub last_seq: Option<i64>,
}

impl StatementPlan {
    /// The statement's JSON before its rows (ending `"rows":[`) and after them (starting `]`):
    /// with the rows' JSON between, comma-separated, the bytes of the whole statement
    /// serialized at once.
    pub fn json_around_rows(&self) -> Result<(String, String), serde_json::Error> {
        let whole = serde_json::to_string(&self.head)?;
        // No field before `rows` can hold an unescaped quote, so the first match is the field.
        let at = whole
            .find("\"rows\":[]")
            .ok_or_else(|| serde::ser::Error::custom("a statement without rows"))?;
        let open = at + "\"rows\":[".len();
        Ok((whole[..open].to_owned(), whole[open..].to_owned()))
    }
}

impl Store {
    /// The statement of `account` (an id or name) for `from <= created_at < until`, followed
    /// to the first version 2 checkpoint that covers its last row; `sign` makes one now when
    /// none does (appended to `log` too, and refused when the ledger contradicts an earlier
    /// one: `Store::make_checkpoint`). Every row in memory: [`Store::statement_plan`] and
    /// [`Store::statement_rows`] stream one instead.
    pub async fn statement(
        &self,
        account: &str,
        from: i64,
        until: i64,
        sign: Option<&ed25519_dalek::SigningKey>,
        log: Option<&PublishedLog>,
    ) -> Result<Statement, StoreError> {
        let plan = self.statement_plan(account, from, until, sign, log).await?;
        let mut statement = plan.head.clone();
        let mut read = None;
        loop {
            let page = self.statement_rows(&plan, &mut read).await?;
            if page.is_empty() {
                return Ok(statement);
            }
            statement.rows.extend(page);
        }
    }

    /// The next page of `plan`'s rows (at most [`STATEMENT_PAGE`]) after `read`, the last `seq`
    /// read (`None`: from the first), which it moves on; empty at the end.
    pub async fn statement_rows(
        &self,
        plan: &StatementPlan,
        read: &mut Option<i64>,
    ) -> Result<Vec<StatementRow>, StoreError> {
        let Some(last) = plan.last_seq else {
            return Ok(Vec::new());
        };
        let next = read.map_or(plan.first_seq, |seq| seq + 1);
        if next > last {
            return Ok(Vec::new());
        }
        let mut conn = self.pool().acquire().await?;
        let lines =
            read_lines(&mut conn, &plan.head.account_id, next, last, STATEMENT_PAGE).await?;
        drop(conn);
        *read = Some(lines.last().map_or(last, |(l, _)| l.seq));
        let (from, until) = (plan.head.from, plan.head.until);
        Ok(lines
            .into_iter()
            .map(|(line, hash)| StatementRow {
                amount: Amount::from_nanos(line.amount_nanos),
                hash: hash.unwrap_or_default(),
                in_period: from <= line.created_at && line.created_at < until,
                line,
            })
            .collect())
    }

    /// A statement's every field but its rows, and where they are (see [`StatementPlan`]).
    pub async fn statement_plan(
        &self,
        account: &str,
        from: i64,
        until: i64,
        sign: Option<&ed25519_dalek::SigningKey>,
        log: Option<&PublishedLog>,
    ) -> Result<StatementPlan, StoreError> {
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
        // The chained row before the period: the statement starts with it, so that a reader
        // sees where the period starts.
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
        // That row, and the link before it.
        let (before_line, prev) = match before.0 {
            Some(seq) => {
                let mut two = read_lines(&mut conn, &found.id, seq - 1, seq, 2).await?;
                let line = two.pop().map(|(l, _)| l);
                let prev = two.pop().and_then(|(_, hash)| hash);
                (line, prev)
            }
            None => (None, None),
        };
        // The period's first and last rows: its opening and closing balances.
        let mut one = async |seq: Option<i64>| -> Result<Option<LedgerLine>, StoreError> {
            Ok(match seq {
                Some(seq) => read_lines(&mut conn, &found.id, seq, seq, 1)
                    .await?
                    .pop()
                    .map(|(l, _)| l),
                None => None,
            })
        };
        let first_line = one(first).await?;
        drop(conn);
        // The first version 2 checkpoint that signed this account at or after the period's
        // last row (or the row before an empty period).
        let last_seq = last.or(before.0);
        let before_at = before_line.as_ref().map(|l| l.created_at);
        let mut checkpoint = None;
        let mut since = last_at.or(before_at).unwrap_or(from);
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
            checkpoint = Some(self.make_checkpoint(key, log).await?);
        }
        let proof = checkpoint.as_ref().and_then(|c| c.proof(&found.id));
        // The row before the period, the period's rows, then those after it up to the head.
        let head_seq = proof.as_ref().map(|p| p.seq);
        let first_seq = before.0.or(first).unwrap_or(1);
        let end = last.max(before.0).max(head_seq);
        let mut conn = self.pool().acquire().await?;
        // Before the period: the balance after the row before it; with none, what the first
        // row of the statement started from (or, with no rows at all, what the account has).
        let opening = match (&before_line, &first_line, end) {
            (Some(before), _, _) => before.balance_after_nanos,
            (None, Some(first), _) => first.balance_after_nanos - first.amount_nanos,
            (None, None, Some(end)) => read_lines(&mut conn, &found.id, first_seq, end, 1)
                .await?
                .first()
                .map_or(found.balance.nanos(), |(l, _)| {
                    l.balance_after_nanos - l.amount_nanos
                }),
            (None, None, None) => found.balance.nanos(),
        };
        // After it: the balance after its last row up to the head — found again now that the
        // head is known, since rows written meanwhile may fall in an open-ended period.
        let closing = match end {
            Some(end) => {
                let (last_in,): (Option<i64>,) = sqlx::query_as(
                    "SELECT MAX(seq) FROM ledger
                     WHERE account_id = $1 AND seq <= $2 AND created_at >= $3
                         AND created_at < $4 AND hash IS NOT NULL",
                )
                .bind(&found.id)
                .bind(end)
                .bind(from)
                .bind(until)
                .fetch_one(&mut *conn)
                .await?;
                match last_in {
                    Some(seq) => read_lines(&mut conn, &found.id, seq, seq, 1)
                        .await?
                        .pop()
                        .map_or(opening, |(l, _)| l.balance_after_nanos),
                    None => opening,
                }
            }
            None => opening,
        };
        drop(conn);
        Ok(StatementPlan {
            head: Statement {
                format: FORMAT.into(),
                account_id: found.id,
                account_name: found.name,
                from,
                until,
                generated_at: now_millis(),
                prev: prev.unwrap_or_else(|| GENESIS.to_owned()),
                opening_balance: Amount::from_nanos(opening),
                closing_balance: Amount::from_nanos(closing),
                rows: Vec::new(),
                checkpoint: checkpoint.map(|c| c.without_heads()),
                proof,
            },
            first_seq,
            last_seq: end,
        })
    }
}

/// The rows a statement reads at a time.
pub const STATEMENT_PAGE: i64 = 1000;
