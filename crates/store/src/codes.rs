//! Redemption codes (docs/decisions.md, "Redemption codes"): the operator issues a batch of
//! codes, each worth the batch's amount; an account redeems one, once, and its balance rises by
//! a ledger row of kind `redemption` whose note names the batch.
//!
//! A code is 26 random symbols of Crockford's base-32 alphabet (130 bits) and two check
//! symbols, written in seven groups of four: `7KQ2-M9XD-…`. It is read whatever its case,
//! spaces and dashes, with `O` as `0` and `I`, `L` as `1`, so it can be typed from paper; the
//! check symbols tell a typo from a guess. Only its SHA-256 is stored. A code is claimed by the
//! one `UPDATE` that finds it unredeemed, in the transaction that credits it, so two replicas
//! redeeming it at once credit it once: the second waits on the row and finds it taken.

use crate::holds::LedgerKind;
use crate::ids::{hash_secret, new_id};
use crate::{AdminChange, Store, StoreError, now_millis};
use rand::RngCore;
use serde::Serialize;
use sha2::{Digest, Sha256};
use tollgate_billing::Amount;

/// Crockford's base-32 alphabet: no `I`, `L`, `O` or `U`.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// Random symbols in a code (5 bits each: 130 bits).
const RANDOM_SYMBOLS: usize = 26;
/// Symbols in a code, with the two check symbols.
pub const CODE_SYMBOLS: usize = RANDOM_SYMBOLS + 2;
/// The most codes one batch may hold.
pub const MAX_BATCH: u32 = 100_000;

/// Why text is not a redemption code: a typo, never a guess that could have been right.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodeTypo {
    /// Not 28 symbols once spaces and dashes are dropped.
    #[error(
        "a redemption code has {CODE_SYMBOLS} letters and digits (dashes and spaces aside); this has {0}"
    )]
    Length(usize),
    /// A character outside the alphabet.
    #[error("a redemption code has no {0:?}: only digits and the letters A to Z without U")]
    Symbol(char),
    /// The check symbols do not match: a character was mistyped.
    #[error("this redemption code has a mistyped character (its last two do not check)")]
    Check,
}

/// A redemption code in its canonical form: 28 symbols, no dashes.
#[derive(Clone, PartialEq, Eq)]
pub struct RedemptionCode(String);

impl std::fmt::Debug for RedemptionCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A code is a bearer secret: never in a log line.
        f.write_str("RedemptionCode(…)")
    }
}

impl RedemptionCode {
    /// A new random code.
    pub fn generate() -> RedemptionCode {
        let mut random = [0u8; RANDOM_SYMBOLS];
        rand::rng().fill_bytes(&mut random);
        let mut symbols: Vec<u8> = random
            .iter()
            .map(|b| ALPHABET[usize::from(b & 31)])
            .collect();
        symbols.extend_from_slice(&check(&symbols));
        RedemptionCode(symbols.into_iter().map(char::from).collect())
    }

    /// Reads a code as a person typed it.
    pub fn parse(text: &str) -> Result<RedemptionCode, CodeTypo> {
        let mut symbols = Vec::with_capacity(CODE_SYMBOLS);
        for c in text.chars() {
            let symbol = match c.to_ascii_uppercase() {
                '-' | ' ' | '\t' => continue,
                'O' => b'0',
                'I' | 'L' => b'1',
                c if c.is_ascii() && ALPHABET.contains(&(c as u8)) => c as u8,
                c => return Err(CodeTypo::Symbol(c)),
            };
            symbols.push(symbol);
            if symbols.len() > CODE_SYMBOLS {
                return Err(CodeTypo::Length(
                    text.chars().filter(|c| !"- \t".contains(*c)).count(),
                ));
            }
        }
        if symbols.len() != CODE_SYMBOLS {
            return Err(CodeTypo::Length(symbols.len()));
        }
        if symbols[RANDOM_SYMBOLS..] != check(&symbols[..RANDOM_SYMBOLS]) {
            return Err(CodeTypo::Check);
        }
        Ok(RedemptionCode(
            symbols.into_iter().map(char::from).collect(),
        ))
    }

    /// As it is handed out: seven groups of four joined by dashes.
    pub fn display(&self) -> String {
        let mut out = String::with_capacity(CODE_SYMBOLS + 6);
        for (i, c) in self.0.chars().enumerate() {
            if i > 0 && i % 4 == 0 {
                out.push('-');
            }
            out.push(c);
        }
        out
    }

    /// What the database keeps of it.
    fn hash(&self) -> String {
        hash_secret(&self.0)
    }
}

/// The two check symbols of 26 random ones: the first 10 bits of their SHA-256.
fn check(symbols: &[u8]) -> [u8; 2] {
    let digest = Sha256::new()
        .chain_update(b"tollgate-code-v1\n")
        .chain_update(symbols)
        .finalize();
    [
        ALPHABET[usize::from(digest[0] >> 3)],
        ALPHABET[usize::from(((digest[0] & 7) << 2) | (digest[1] >> 6))],
    ]
}

/// A batch of codes, as the operator sees it.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodeBatch {
    /// `cbt_…`
    pub id: String,
    /// The operator's name for it.
    pub name: String,
    /// What each code adds to a balance.
    pub amount: Amount,
    /// How many codes it holds.
    pub count: u32,
    /// How many have been redeemed.
    pub redeemed: u32,
    /// Unix milliseconds.
    pub created_at: i64,
    /// Who issued it (`cli:USER`, `token:NAME`).
    pub created_by: String,
    /// After this (Unix milliseconds) its codes redeem nothing; `None`: never.
    pub expires_at: Option<i64>,
    /// When the operator revoked it (Unix milliseconds): its unredeemed codes redeem nothing.
    pub revoked_at: Option<i64>,
}

/// One redeemed code of a batch.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodeRedemption {
    /// Its line in the file the batch was written to (1 for the first code).
    pub number: u32,
    /// The account it credited.
    pub account_id: String,
    /// The ledger row (`led_…`, kind `redemption`).
    pub ledger_id: String,
    /// The request that redeemed it.
    pub request_id: Option<String>,
    /// The address it came from, when known.
    pub address: Option<String>,
    /// Unix milliseconds.
    pub redeemed_at: i64,
}

/// What redeeming a code did: the client API's answer (`POST /v1/redemptions`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CodeRedeemed {
    /// `tollgate.redemption`.
    pub object: &'static str,
    /// What it added.
    pub amount: Amount,
    /// The account's balance after it.
    pub balance: Amount,
    /// The batch the code was of.
    pub batch_id: String,
    /// The ledger row.
    pub ledger_id: String,
}

/// Why a well-formed code redeemed nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotRedeemed {
    /// No batch holds it.
    #[error("no such redemption code")]
    Unknown,
    /// It was redeemed before.
    #[error("this redemption code has already been redeemed")]
    Used,
    /// Its batch was revoked.
    #[error("this redemption code was withdrawn by the operator")]
    Revoked,
    /// Its batch expired.
    #[error("this redemption code has expired")]
    Expired,
}

/// A new batch, as the operator asks for it.
#[derive(Debug, Clone)]
pub struct NewCodeBatch<'a> {
    /// Its name.
    pub name: &'a str,
    /// What each code adds (positive).
    pub amount: Amount,
    /// How many codes (1 to [`MAX_BATCH`]).
    pub count: u32,
    /// When its codes stop redeeming (Unix milliseconds).
    pub expires_at: Option<i64>,
}

/// Who redeems a code, and from where.
#[derive(Debug, Clone, Copy)]
pub struct Redeemer<'a> {
    /// The account credited.
    pub account_id: &'a str,
    /// The request redeeming it.
    pub request_id: Option<&'a str>,
    /// The client's address.
    pub address: Option<&'a str>,
}

/// The columns a [`CodeBatch`] is read from.
const BATCH_COLUMNS: &str = "b.id, b.name, b.amount_nanos, b.count, b.created_at, b.created_by, \
    b.expires_at, b.revoked_at, \
    (SELECT COUNT(*) FROM codes c WHERE c.batch_id = b.id AND c.redeemed_at IS NOT NULL)";

type BatchRow = (
    String,
    String,
    i64,
    i64,
    i64,
    String,
    Option<i64>,
    Option<i64>,
    i64,
);

fn batch_from_row(r: BatchRow) -> CodeBatch {
    CodeBatch {
        id: r.0,
        name: r.1,
        amount: Amount::from_nanos(r.2),
        count: u32::try_from(r.3).unwrap_or(u32::MAX),
        created_at: r.4,
        created_by: r.5,
        expires_at: r.6,
        revoked_at: r.7,
        redeemed: u32::try_from(r.8).unwrap_or(u32::MAX),
    }
}

/// Codes inserted per statement when a batch is issued.
const INSERT_ROWS: usize = 500;

impl Store {
    /// Issues a batch: its row, and a row per code holding only the code's hash. Answers the
    /// codes themselves, in order, once; nothing can show them again.
    pub async fn create_code_batch(
        &self,
        new: &NewCodeBatch<'_>,
        audit: &AdminChange,
    ) -> Result<(CodeBatch, Vec<RedemptionCode>), StoreError> {
        if !new.amount.is_positive() {
            return Err(StoreError::InvalidAmount(
                "a code must add a positive amount".into(),
            ));
        }
        if new.count == 0 || new.count > MAX_BATCH {
            return Err(StoreError::InvalidAmount(format!(
                "a batch holds 1 to {MAX_BATCH} codes"
            )));
        }
        let now = now_millis();
        let batch = CodeBatch {
            id: new_id("cbt"),
            name: new.name.to_owned(),
            amount: new.amount,
            count: new.count,
            redeemed: 0,
            created_at: now,
            created_by: audit.actor.clone(),
            expires_at: new.expires_at,
            revoked_at: None,
        };
        let codes: Vec<RedemptionCode> =
            (0..new.count).map(|_| RedemptionCode::generate()).collect();
        let mut tx = self.write_tx().await?;
        sqlx::query(
            "INSERT INTO code_batches (id, name, amount_nanos, count, created_at, created_by,
                 expires_at, revoked_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, NULL)",
        )
        .bind(&batch.id)
        .bind(&batch.name)
        .bind(batch.amount.nanos())
        .bind(i64::from(batch.count))
        .bind(now)
        .bind(&batch.created_by)
        .bind(batch.expires_at)
        .execute(&mut *tx)
        .await?;
        for (chunk_index, chunk) in codes.chunks(INSERT_ROWS).enumerate() {
            let mut sql = String::from("INSERT INTO codes (hash, batch_id, number) VALUES ");
            for i in 0..chunk.len() {
                if i > 0 {
                    sql.push_str(", ");
                }
                let p = i * 3;
                sql.push_str(&format!("(${}, ${}, ${})", p + 1, p + 2, p + 3));
            }
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for (i, code) in chunk.iter().enumerate() {
                let number = chunk_index * INSERT_ROWS + i + 1;
                query = query
                    .bind(code.hash())
                    .bind(&batch.id)
                    .bind(i64::try_from(number).unwrap_or(i64::MAX));
            }
            query.execute(&mut *tx).await?;
        }
        let mut audit = audit.clone();
        audit.after = Some(serde_json::json!({
            "name": batch.name,
            "amount": batch.amount.to_string(),
            "count": batch.count,
            "expires_at": batch.expires_at,
        }));
        crate::changes::insert_change(&mut tx, &audit).await?;
        tx.commit().await?;
        Ok((batch, codes))
    }

    /// Redeems `code` for the redeemer's account: claims it and credits the batch's amount, in
    /// one transaction.
    pub async fn redeem_code(
        &self,
        code: &RedemptionCode,
        by: Redeemer<'_>,
    ) -> Result<Result<CodeRedeemed, NotRedeemed>, StoreError> {
        let hash = code.hash();
        let now = now_millis();
        let mut tx = self.write_tx().await?;
        let claimed: Option<(String, i64, String)> = sqlx::query_as(
            "UPDATE codes SET redeemed_at = $1, account_id = $2, request_id = $3, address = $4
             WHERE hash = $5 AND redeemed_at IS NULL AND batch_id IN
                 (SELECT id FROM code_batches
                  WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $1))
             RETURNING batch_id, number, hash",
        )
        .bind(now)
        .bind(by.account_id)
        .bind(by.request_id)
        .bind(by.address)
        .bind(&hash)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((batch_id, number, _)) = claimed else {
            drop(tx);
            return Ok(Err(self.why_not_redeemed(&hash, now).await?));
        };
        let (name, amount): (String, i64) =
            sqlx::query_as("SELECT name, amount_nanos FROM code_batches WHERE id = $1")
                .bind(&batch_id)
                .fetch_one(&mut *tx)
                .await?;
        let amount = Amount::from_nanos(amount);
        let note = format!("code {number} of batch {batch_id} ({name})");
        let crate::accounts::CreditRow {
            account, ledger_id, ..
        } = crate::accounts::credit_in(
            &mut tx,
            by.account_id,
            amount,
            LedgerKind::Redemption,
            Some(&note),
            false,
        )
        .await?;
        sqlx::query("UPDATE codes SET ledger_id = $1 WHERE hash = $2")
            .bind(&ledger_id)
            .bind(&hash)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Ok(CodeRedeemed {
            object: "tollgate.redemption",
            amount,
            balance: account.balance,
            batch_id,
            ledger_id,
        }))
    }

    /// Why the code hashed `hash` could not be claimed.
    async fn why_not_redeemed(&self, hash: &str, now: i64) -> Result<NotRedeemed, StoreError> {
        let row: Option<(Option<i64>, Option<i64>, Option<i64>)> = sqlx::query_as(
            "SELECT c.redeemed_at, b.revoked_at, b.expires_at
             FROM codes c JOIN code_batches b ON b.id = c.batch_id WHERE c.hash = $1",
        )
        .bind(hash)
        .fetch_optional(self.pool())
        .await?;
        Ok(match row {
            None => NotRedeemed::Unknown,
            Some((Some(_), _, _)) => NotRedeemed::Used,
            Some((None, Some(_), _)) => NotRedeemed::Revoked,
            Some((None, None, Some(expires_at))) if expires_at <= now => NotRedeemed::Expired,
            // Claimed by another request between the UPDATE and this read.
            Some((None, None, _)) => NotRedeemed::Used,
        })
    }

    /// Every batch, newest first.
    pub async fn code_batches(&self) -> Result<Vec<CodeBatch>, StoreError> {
        let rows: Vec<BatchRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {BATCH_COLUMNS} FROM code_batches b ORDER BY b.created_at DESC, b.id DESC"
        )))
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().map(batch_from_row).collect())
    }

    /// One batch and its redeemed codes, in the order they were redeemed.
    pub async fn code_batch(
        &self,
        id: &str,
    ) -> Result<(CodeBatch, Vec<CodeRedemption>), StoreError> {
        let row: Option<BatchRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {BATCH_COLUMNS} FROM code_batches b WHERE b.id = $1"
        )))
        .bind(id)
        .fetch_optional(self.pool())
        .await?;
        let batch = row
            .map(batch_from_row)
            .ok_or_else(|| StoreError::NotFound(format!("code batch {id:?}")))?;
        type Row = (
            i64,
            String,
            Option<String>,
            Option<String>,
            Option<String>,
            i64,
        );
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT number, account_id, ledger_id, request_id, address, redeemed_at FROM codes
             WHERE batch_id = $1 AND redeemed_at IS NOT NULL ORDER BY redeemed_at, number",
        )
        .bind(id)
        .fetch_all(self.pool())
        .await?;
        let redemptions = rows
            .into_iter()
            .map(|r| CodeRedemption {
                number: u32::try_from(r.0).unwrap_or(u32::MAX),
                account_id: r.1,
                ledger_id: r.2.unwrap_or_default(),
                request_id: r.3,
                address: r.4,
                redeemed_at: r.5,
            })
            .collect();
        Ok((batch, redemptions))
    }

    /// Revokes a batch: its codes not yet redeemed redeem nothing from now on. What was
    /// redeemed stays credited (a correction takes it back, if it must).
    pub async fn revoke_code_batch(
        &self,
        id: &str,
        audit: &AdminChange,
    ) -> Result<CodeBatch, StoreError> {
        let mut tx = self.write_tx().await?;
        let done = sqlx::query(
            "UPDATE code_batches SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL",
        )
        .bind(now_millis())
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 1 {
            crate::changes::insert_change(&mut tx, audit).await?;
        }
        tx.commit().await?;
        let (batch, _) = self.code_batch(id).await?;
        Ok(batch)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_code_reads_back_however_it_is_typed() {
        let code = RedemptionCode::generate();
        let shown = code.display();
        assert_eq!(shown.len(), CODE_SYMBOLS + 6);
        assert_eq!(RedemptionCode::parse(&shown).unwrap(), code);
        let sloppy = shown
            .to_lowercase()
            .replace('-', " ")
            .replace('0', "o")
            .replace('1', "l");
        assert_eq!(RedemptionCode::parse(&sloppy).unwrap(), code);
    }

    #[test]
    fn a_typo_is_told_from_a_guess() {
        let code = RedemptionCode::generate();
        let shown = code.display();
        // Every single-symbol substitution is caught by the check or lands on another code
        // whose check happens to match (1 in 1,024); count the ones caught.
        let mut caught = 0;
        let mut tried = 0;
        for (i, c) in shown.char_indices().filter(|(_, c)| *c != '-') {
            for &other in ALPHABET {
                if char::from(other) == c {
                    continue;
                }
                let mut typed = shown.clone();
                typed.replace_range(i..=i, &char::from(other).to_string());
                tried += 1;
                if RedemptionCode::parse(&typed) == Err(CodeTypo::Check) {
                    caught += 1;
                }
            }
        }
        assert!(caught * 100 >= tried * 97, "{caught} of {tried}");
        assert_eq!(
            RedemptionCode::parse("ABCD"),
            Err(CodeTypo::Length(4)),
            "too short"
        );
        assert_eq!(
            RedemptionCode::parse(&format!("{shown}X")),
            Err(CodeTypo::Length(CODE_SYMBOLS + 1))
        );
        assert_eq!(
            RedemptionCode::parse(&shown.replacen(|c: char| c != '-', "U", 1)),
            Err(CodeTypo::Symbol('U'))
        );
    }

    #[test]
    fn codes_differ_and_keep_their_entropy() {
        let codes: std::collections::HashSet<String> = (0..1000)
            .map(|_| RedemptionCode::generate().display())
            .collect();
        assert_eq!(codes.len(), 1000);
        // Every symbol of the alphabet appears in the random part.
        let seen: std::collections::HashSet<char> = codes
            .iter()
            .flat_map(|c| c.chars().filter(|c| *c != '-').take(RANDOM_SYMBOLS))
            .collect();
        assert_eq!(seen.len(), 32);
    }

    #[test]
    fn a_code_is_not_in_its_debug_form() {
        let code = RedemptionCode::generate();
        assert!(!format!("{code:?}").contains(&code.display()[..4]));
    }
}
