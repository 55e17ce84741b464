//! The chained ledger (docs/architecture.md, "The chained ledger"): every ledger row carries
//! `hash`, the SHA-256 of its columns and of the previous row's hash in its account's chain
//! (`seq` order), and `accounts.ledger_head` is the last. Editing, dropping or reordering a row
//! breaks every link after it; rewriting the whole chain does not match the last signed
//! checkpoint (`crate::checkpoint`).
//!
//! The canonical encoding (docs/decisions.md, "The chained ledger"), byte for byte:
//!
//! ```text
//! "tollgate-ledger-v1\n" PREV "\n" FIELD₁ FIELD₂ … FIELD₂₃
//! ```
//!
//! where `PREV` is the previous row's hash in lowercase hex (empty for an account's first
//! chained row) and each field, in [`LINE_COLUMNS`] order, is `LEN ":" VALUE ","` — `VALUE`
//! the column as text (integers in decimal), `LEN` its length in bytes — or `"~,"` for NULL.
//! The same encoding is computed by PostgreSQL's `tollgate_charge_batch_v4` (field by field with
//! `tollgate_chain_field_v1`) and `tollgate_ledger_hash_v1` (`crate::schema`),
//! by `tollgate verify`, and by `docs/verify_statement.py`.

use crate::sql::{Param, Statements as _};
use sha2::{Digest, Sha256};

/// What an account's first chained row links to.
pub const GENESIS: &str = "";

/// The hashed columns, in the order they are encoded.
pub const LINE_COLUMNS: &str = "id, account_id, seq, kind, amount_nanos, balance_after_nanos, \
    model, quantity, hold_id, task_id, key_id, request_id, lease_id, estimated, note, anomaly, \
    price_group, price_multiplier, price_version, bound_nanos, loss_nanos, overdraw_nanos, \
    created_at";

/// One ledger row as the chain hashes it: every column but `hash`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LedgerLine {
    pub id: String,
    pub account_id: String,
    pub seq: i64,
    pub kind: String,
    pub amount_nanos: i64,
    pub balance_after_nanos: i64,
    pub model: Option<String>,
    pub quantity: Option<String>,
    pub hold_id: Option<String>,
    pub task_id: Option<String>,
    pub key_id: Option<String>,
    pub request_id: Option<String>,
    pub lease_id: Option<String>,
    pub estimated: i64,
    pub note: Option<String>,
    pub anomaly: Option<String>,
    pub price_group: Option<String>,
    pub price_multiplier: Option<String>,
    pub price_version: Option<i64>,
    pub bound_nanos: Option<i64>,
    pub loss_nanos: i64,
    pub overdraw_nanos: i64,
    pub created_at: i64,
}

/// A ledger row's hashed columns, borrowed: what the journal hashes and inserts without
/// copying a row ([`LedgerLine::view`] is the same of an owned row).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LineRef<'a> {
    pub id: &'a str,
    pub account_id: &'a str,
    pub seq: i64,
    pub kind: &'a str,
    pub amount_nanos: i64,
    pub balance_after_nanos: i64,
    pub model: Option<&'a str>,
    pub quantity: Option<&'a str>,
    pub hold_id: Option<&'a str>,
    pub task_id: Option<&'a str>,
    pub key_id: Option<&'a str>,
    pub request_id: Option<&'a str>,
    pub lease_id: Option<&'a str>,
    pub estimated: i64,
    pub note: Option<&'a str>,
    pub anomaly: Option<&'a str>,
    pub price_group: Option<&'a str>,
    pub price_multiplier: Option<&'a str>,
    pub price_version: Option<i64>,
    pub bound_nanos: Option<i64>,
    pub loss_nanos: i64,
    pub overdraw_nanos: i64,
    pub created_at: i64,
}

/// How many columns [`LINE_COLUMNS`] names.
pub(crate) const LINE_WIDTH: usize = 23;

impl<'a> LineRef<'a> {
    /// The row's columns in [`LINE_COLUMNS`] order: the one list both the encoding and the
    /// INSERTs ([`append`], the journal's) follow.
    pub(crate) fn fields(&self) -> [Param<'a>; LINE_WIDTH] {
        [
            Param::Text(self.id),
            Param::Text(self.account_id),
            Param::Int(self.seq),
            Param::Text(self.kind),
            Param::Int(self.amount_nanos),
            Param::Int(self.balance_after_nanos),
            Param::OptText(self.model),
            Param::OptText(self.quantity),
            Param::OptText(self.hold_id),
            Param::OptText(self.task_id),
            Param::OptText(self.key_id),
            Param::OptText(self.request_id),
            Param::OptText(self.lease_id),
            Param::Int(self.estimated),
            Param::OptText(self.note),
            Param::OptText(self.anomaly),
            Param::OptText(self.price_group),
            Param::OptText(self.price_multiplier),
            Param::OptInt(self.price_version),
            Param::OptInt(self.bound_nanos),
            Param::Int(self.loss_nanos),
            Param::Int(self.overdraw_nanos),
            Param::Int(self.created_at),
        ]
    }

    /// The canonical encoding of the row after `prev`.
    pub(crate) fn encode(&self, prev: &str) -> Vec<u8> {
        // Numbers in decimal as `Display` writes them, by `itoa`: `write!` cost 7,000
        // instructions a row (`docs/benchmarks.md`, "Instructions per request").
        let mut number = itoa::Buffer::new();
        let mut length = itoa::Buffer::new();
        let mut out = Vec::with_capacity(512);
        out.extend_from_slice(b"tollgate-ledger-v1\n");
        out.extend_from_slice(prev.as_bytes());
        out.push(b'\n');
        for field in self.fields() {
            let value = match field {
                Param::Text(v) | Param::OptText(Some(v)) => v.as_bytes(),
                Param::Int(v) | Param::OptInt(Some(v)) => number.format(v).as_bytes(),
                Param::OptText(None) | Param::OptInt(None) => {
                    out.extend_from_slice(b"~,");
                    continue;
                }
            };
            out.extend_from_slice(length.format(value.len()).as_bytes());
            out.push(b':');
            out.extend_from_slice(value);
            out.push(b',');
        }
        out
    }

    /// The row's hash after `prev`: lowercase hex SHA-256 of [`LineRef::encode`].
    pub(crate) fn hash(&self, prev: &str) -> String {
        crate::ids::hex(&Sha256::digest(self.encode(prev)))
    }
}

impl LedgerLine {
    /// The row, borrowed.
    pub(crate) fn view(&self) -> LineRef<'_> {
        LineRef {
            id: &self.id,
            account_id: &self.account_id,
            seq: self.seq,
            kind: &self.kind,
            amount_nanos: self.amount_nanos,
            balance_after_nanos: self.balance_after_nanos,
            model: self.model.as_deref(),
            quantity: self.quantity.as_deref(),
            hold_id: self.hold_id.as_deref(),
            task_id: self.task_id.as_deref(),
            key_id: self.key_id.as_deref(),
            request_id: self.request_id.as_deref(),
            lease_id: self.lease_id.as_deref(),
            estimated: self.estimated,
            note: self.note.as_deref(),
            anomaly: self.anomaly.as_deref(),
            price_group: self.price_group.as_deref(),
            price_multiplier: self.price_multiplier.as_deref(),
            price_version: self.price_version,
            bound_nanos: self.bound_nanos,
            loss_nanos: self.loss_nanos,
            overdraw_nanos: self.overdraw_nanos,
            created_at: self.created_at,
        }
    }

    /// The canonical encoding of the row after `prev`.
    pub fn encode(&self, prev: &str) -> Vec<u8> {
        self.view().encode(prev)
    }

    /// The row's hash after `prev`: lowercase hex SHA-256 of [`LedgerLine::encode`].
    pub fn hash(&self, prev: &str) -> String {
        self.view().hash(prev)
    }

    /// The line of a row read as `SELECT {LINE_COLUMNS}, …`.
    fn from_row(row: &sqlx::any::AnyRow) -> Result<LedgerLine, sqlx::Error> {
        use sqlx::Row as _;
        Ok(LedgerLine {
            id: row.try_get(0)?,
            account_id: row.try_get(1)?,
            seq: row.try_get(2)?,
            kind: row.try_get(3)?,
            amount_nanos: row.try_get(4)?,
            balance_after_nanos: row.try_get(5)?,
            model: row.try_get(6)?,
            quantity: row.try_get(7)?,
            hold_id: row.try_get(8)?,
            task_id: row.try_get(9)?,
            key_id: row.try_get(10)?,
            request_id: row.try_get(11)?,
            lease_id: row.try_get(12)?,
            estimated: row.try_get(13)?,
            note: row.try_get(14)?,
            anomaly: row.try_get(15)?,
            price_group: row.try_get(16)?,
            price_multiplier: row.try_get(17)?,
            price_version: row.try_get(18)?,
            bound_nanos: row.try_get(19)?,
            loss_nanos: row.try_get(20)?,
            overdraw_nanos: row.try_get(21)?,
            created_at: row.try_get(22)?,
        })
    }
}

/// Reads the lines of `account_id` with `seq` in `from..=until` (chained rows only), in
/// chain order, at most `limit` of them, each with its stored hash.
pub(crate) async fn read_lines(
    db: &mut sqlx::AnyConnection,
    account_id: &str,
    from: i64,
    until: i64,
    limit: i64,
) -> Result<Vec<(LedgerLine, Option<String>)>, crate::StoreError> {
    use sqlx::Row as _;
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {LINE_COLUMNS}, hash
         FROM ledger WHERE account_id = $1 AND seq >= $2 AND seq <= $3 AND hash IS NOT NULL
         ORDER BY seq LIMIT $4"
    )))
    .bind(account_id)
    .bind(from)
    .bind(until)
    .bind(limit)
    .fetch_all(&mut *db)
    .await?;
    let mut lines = Vec::with_capacity(rows.len());
    for row in &rows {
        lines.push((LedgerLine::from_row(row)?, row.try_get(LINE_WIDTH)?));
    }
    Ok(lines)
}

/// Appends `line` to its account's chain inside the caller's transaction, after `prev` (the
/// account row's `ledger_head`, read under the row's lock; `None`: the chain starts here): the
/// row is inserted with its hash, and the head moves on to it. Returns the hash.
pub(crate) async fn append(
    tx: &mut sqlx::AnyConnection,
    line: &LedgerLine,
    prev: Option<&str>,
) -> Result<String, crate::StoreError> {
    let line = line.view();
    let hash = line.hash(prev.unwrap_or(GENESIS));
    let mut params = line.fields().to_vec();
    params.push(Param::Text(&hash));
    tx.execute(INSERT_LINES.one(), &params).await?;
    tx.execute(
        "UPDATE accounts SET ledger_head = $1 WHERE id = $2",
        &[Param::Text(&hash), Param::Text(line.account_id)],
    )
    .await?;
    Ok(hash)
}

/// The INSERT of ledger rows, each [`LineRef::fields`] then its `hash`, 256 rows a statement at
/// most (24 parameters a row).
pub(crate) static INSERT_LINES: crate::sql::Insert =
    crate::sql::Insert::new("ledger", &[LINE_COLUMNS, "hash"], LINE_WIDTH + 1, 256);

/// Where a chain breaks: the first row whose stored hash is not its recomputed one (an edited
/// row, a row dropped before it, two rows swapped), or a gap in `seq`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenLink {
    /// The row.
    pub id: String,
    /// Its place.
    pub seq: i64,
    /// What is wrong.
    pub why: String,
}

/// Walks `lines` (one account's, in `seq` order) from `prev`; the head it reaches, or the first
/// broken link.
pub fn walk<'a>(
    prev: &str,
    lines: impl IntoIterator<Item = (&'a LedgerLine, Option<&'a str>)>,
) -> Result<String, BrokenLink> {
    let mut prev = prev.to_owned();
    let mut last_seq: Option<i64> = None;
    for (line, stored) in lines {
        prev = step(&prev, last_seq, line, stored)?;
        last_seq = Some(line.seq);
    }
    Ok(prev)
}

/// One link: `line`, after the link `prev` at `last_seq`, must follow it in `seq` and store the
/// hash its columns and `prev` make. The link it makes.
pub fn step(
    prev: &str,
    last_seq: Option<i64>,
    line: &LedgerLine,
    stored: Option<&str>,
) -> Result<String, BrokenLink> {
    if let Some(last) = last_seq
        && line.seq != last + 1
    {
        return Err(BrokenLink {
            id: line.id.clone(),
            seq: line.seq,
            why: format!("seq {} follows {last}: a row is missing", line.seq),
        });
    }
    let hash = line.hash(prev);
    if stored != Some(hash.as_str()) {
        return Err(BrokenLink {
            id: line.id.clone(),
            seq: line.seq,
            why: format!(
                "its hash is {} but its columns and the previous link hash to {hash}: the row was edited, or one before it dropped or moved",
                stored.unwrap_or("missing")
            ),
        });
    }
    Ok(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(seq: i64, amount: i64) -> LedgerLine {
        LedgerLine {
            id: format!("led_{seq}"),
            account_id: "acct_1".into(),
            seq,
            kind: "charge".into(),
            amount_nanos: amount,
            balance_after_nanos: amount.wrapping_add(100),
            model: Some("tts-1".into()),
            quantity: Some(r#"{"characters":11}"#.into()),
            note: Some("你好".into()),
            created_at: 1_700_000_000_000,
            ..LedgerLine::default()
        }
    }

    #[test]
    fn the_encoding_is_length_prefixed_and_marks_null() {
        let text = String::from_utf8(line(1, -5).encode("ab")).unwrap();
        assert!(text.starts_with(
            "tollgate-ledger-v1\nab\n5:led_1,6:acct_1,1:1,6:charge,2:-5,2:95,5:tts-1,17:{"
        ));
        // "你好" is six bytes; absent columns are "~,".
        assert!(text.contains(",~,~,~,~,~,1:0,6:你好,~,"), "{text}");
        assert!(text.ends_with("1:0,1:0,13:1700000000000,"), "{text}");
    }

    /// The encoding as `format!` writes it: what every stored hash was made of before `itoa`.
    fn encoded_by_format(line: &LedgerLine, prev: &str) -> Vec<u8> {
        let mut out = format!("tollgate-ledger-v1\n{prev}\n");
        for field in line.view().fields() {
            match field {
                Param::Text(v) | Param::OptText(Some(v)) => out += &format!("{}:{v},", v.len()),
                Param::Int(v) | Param::OptInt(Some(v)) => {
                    out += &format!("{}:{v},", v.to_string().len())
                }
                Param::OptText(None) | Param::OptInt(None) => out += "~,",
            }
        }
        out.into_bytes()
    }

    #[test]
    fn numbers_are_encoded_as_display_writes_them() {
        for v in [i64::MIN, -1_000_000_007, -1, 0, 9, 10, 99, 100, i64::MAX] {
            let mut l = line(v, v);
            l.price_version = Some(v);
            l.note = Some("x".repeat(usize::try_from(v.unsigned_abs() % 1000).unwrap()));
            assert_eq!(l.encode("prev"), encoded_by_format(&l, "prev"), "{v}");
        }
    }

    #[test]
    fn every_kind_of_tampering_breaks_the_walk() {
        let lines: Vec<LedgerLine> = (1..=4).map(|s| line(s, -s)).collect();
        let mut hashes = Vec::new();
        let mut prev = GENESIS.to_owned();
        for l in &lines {
            prev = l.hash(&prev);
            hashes.push(prev.clone());
        }
        let pairs = |ls: &[LedgerLine], hs: &[String]| -> Result<String, BrokenLink> {
            walk(
                GENESIS,
                ls.iter()
                    .zip(hs.iter().map(|h| Some(h.as_str())))
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(pairs(&lines, &hashes), Ok(hashes[3].clone()));
        // Edited.
        let mut edited = lines.clone();
        edited[1].amount_nanos -= 1;
        assert_eq!(pairs(&edited, &hashes).unwrap_err().seq, 2);
        // Dropped.
        let (mut dropped, mut dropped_h) = (lines.clone(), hashes.clone());
        dropped.remove(2);
        dropped_h.remove(2);
        assert_eq!(pairs(&dropped, &dropped_h).unwrap_err().seq, 4);
        // Two amounts swapped.
        let mut swapped = lines.clone();
        let (a, b) = (swapped[0].amount_nanos, swapped[1].amount_nanos);
        swapped[0].amount_nanos = b;
        swapped[1].amount_nanos = a;
        assert_eq!(pairs(&swapped, &hashes).unwrap_err().seq, 1);
    }
}
