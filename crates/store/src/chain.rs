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
//! The same encoding is computed by PostgreSQL's `tollgate_ledger_hash_v1` (`crate::schema`),
//! by `tollgate verify`, and by `docs/verify_statement.py`.

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

impl LedgerLine {
    /// The row's fields as text, in [`LINE_COLUMNS`] order.
    fn fields(&self) -> [Option<String>; 23] {
        let int = |v: i64| Some(v.to_string());
        [
            Some(self.id.clone()),
            Some(self.account_id.clone()),
            int(self.seq),
            Some(self.kind.clone()),
            int(self.amount_nanos),
            int(self.balance_after_nanos),
            self.model.clone(),
            self.quantity.clone(),
            self.hold_id.clone(),
            self.task_id.clone(),
            self.key_id.clone(),
            self.request_id.clone(),
            self.lease_id.clone(),
            int(self.estimated),
            self.note.clone(),
            self.anomaly.clone(),
            self.price_group.clone(),
            self.price_multiplier.clone(),
            self.price_version.map(|v| v.to_string()),
            self.bound_nanos.map(|v| v.to_string()),
            int(self.loss_nanos),
            int(self.overdraw_nanos),
            int(self.created_at),
        ]
    }

    /// The canonical encoding of the row after `prev`.
    pub fn encode(&self, prev: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(512);
        out.extend_from_slice(b"tollgate-ledger-v1\n");
        out.extend_from_slice(prev.as_bytes());
        out.push(b'\n');
        for field in self.fields() {
            match field {
                Some(value) => {
                    out.extend_from_slice(value.len().to_string().as_bytes());
                    out.push(b':');
                    out.extend_from_slice(value.as_bytes());
                    out.push(b',');
                }
                None => out.extend_from_slice(b"~,"),
            }
        }
        out
    }

    /// The row's hash after `prev`: lowercase hex SHA-256 of [`LedgerLine::encode`].
    pub fn hash(&self, prev: &str) -> String {
        hex::encode(Sha256::digest(self.encode(prev)))
    }
}

/// A [`LedgerLine`] read from the row of [`LINE_COLUMNS`] (then `hash`).
pub(crate) type LineRow = (
    String,
    String,
    i64,
    String,
    i64,
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
    Option<String>,
    Option<String>,
);

/// The rest of a row of [`LINE_COLUMNS`] after [`LineRow`], and its hash.
pub(crate) type LineRowTail = (
    String,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<i64>,
    i64,
    i64,
    i64,
    Option<String>,
);

/// Reads the lines of `account_id` with `seq` in `from..=until` (chained rows only), in
/// chain order, at most `limit` of them, each with its stored hash. Two queries (a row of 24
/// columns is more than a tuple can take), joined by id.
pub(crate) async fn read_lines(
    db: &mut sqlx::AnyConnection,
    account_id: &str,
    from: i64,
    until: i64,
    limit: i64,
) -> Result<Vec<(LedgerLine, Option<String>)>, crate::StoreError> {
    let head: Vec<LineRow> = sqlx::query_as(
        "SELECT id, account_id, seq, kind, amount_nanos, balance_after_nanos, model, quantity,
             hold_id, task_id, key_id, request_id, lease_id, estimated, note, anomaly
         FROM ledger WHERE account_id = $1 AND seq >= $2 AND seq <= $3 AND hash IS NOT NULL
         ORDER BY seq LIMIT $4",
    )
    .bind(account_id)
    .bind(from)
    .bind(until)
    .bind(limit)
    .fetch_all(&mut *db)
    .await?;
    let tail: Vec<LineRowTail> = sqlx::query_as(
        "SELECT id, price_group, price_multiplier, price_version, bound_nanos, loss_nanos,
             overdraw_nanos, created_at, hash
         FROM ledger WHERE account_id = $1 AND seq >= $2 AND seq <= $3 AND hash IS NOT NULL
         ORDER BY seq LIMIT $4",
    )
    .bind(account_id)
    .bind(from)
    .bind(until)
    .bind(limit)
    .fetch_all(&mut *db)
    .await?;
    Ok(head
        .into_iter()
        .zip(tail)
        .filter(|(h, t)| h.0 == t.0)
        .map(|(h, t)| {
            let line = LedgerLine {
                id: h.0,
                account_id: h.1,
                seq: h.2,
                kind: h.3,
                amount_nanos: h.4,
                balance_after_nanos: h.5,
                model: h.6,
                quantity: h.7,
                hold_id: h.8,
                task_id: h.9,
                key_id: h.10,
                request_id: h.11,
                lease_id: h.12,
                estimated: h.13,
                note: h.14,
                anomaly: h.15,
                price_group: t.1,
                price_multiplier: t.2,
                price_version: t.3,
                bound_nanos: t.4,
                loss_nanos: t.5,
                overdraw_nanos: t.6,
                created_at: t.7,
            };
            (line, t.8)
        })
        .collect())
}

/// Appends `line` to its account's chain inside the caller's transaction, after `prev` (the
/// account row's `ledger_head`, read under the row's lock; `None`: the chain starts here): the
/// row is inserted with its hash, and the head moves on to it. Returns the hash.
pub(crate) async fn append(
    tx: &mut sqlx::AnyConnection,
    line: &LedgerLine,
    prev: Option<&str>,
) -> Result<String, crate::StoreError> {
    let hash = line.hash(prev.unwrap_or(GENESIS));
    sqlx::query(
        "INSERT INTO ledger (id, account_id, seq, kind, amount_nanos, balance_after_nanos, model,
             quantity, hold_id, task_id, key_id, request_id, lease_id, estimated, note, anomaly,
             price_group, price_multiplier, price_version, bound_nanos, loss_nanos,
             overdraw_nanos, created_at, hash)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
                 $19, $20, $21, $22, $23, $24)",
    )
    .bind(&line.id)
    .bind(&line.account_id)
    .bind(line.seq)
    .bind(&line.kind)
    .bind(line.amount_nanos)
    .bind(line.balance_after_nanos)
    .bind(line.model.clone())
    .bind(line.quantity.clone())
    .bind(line.hold_id.clone())
    .bind(line.task_id.clone())
    .bind(line.key_id.clone())
    .bind(line.request_id.clone())
    .bind(line.lease_id.clone())
    .bind(line.estimated)
    .bind(line.note.clone())
    .bind(line.anomaly.clone())
    .bind(line.price_group.clone())
    .bind(line.price_multiplier.clone())
    .bind(line.price_version)
    .bind(line.bound_nanos)
    .bind(line.loss_nanos)
    .bind(line.overdraw_nanos)
    .bind(line.created_at)
    .bind(&hash)
    .execute(&mut *tx)
    .await?;
    sqlx::query("UPDATE accounts SET ledger_head = $1 WHERE id = $2")
        .bind(&hash)
        .bind(&line.account_id)
        .execute(&mut *tx)
        .await?;
    Ok(hash)
}

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

/// Rows read at a time when the audit walks a chain: an account of millions of rows is walked
/// in bounded memory.
const WALK_PAGE: i64 = 10_000;

/// The chain checks of `tollgate audit` (docs/decisions.md, "What the audit checks"), inside
/// its snapshot; returns the chained rows read and the checkpoint checked:
///
/// - `ledger_chain`: each account's chained rows, in `seq` order, link from the first to the
///   last (the first broken link is named);
/// - `ledger_head`: `accounts.ledger_head` is the last link;
/// - `checkpoint_signature`: the newest checkpoint signed by a `trusted` key (any key when
///   `None`) verifies;
/// - `checkpoint_heads`: every chain still passes through the head that checkpoint signed.
pub(crate) async fn audit_chains(
    db: &mut sqlx::AnyConnection,
    trusted: Option<&[String]>,
    flag: &mut impl FnMut(&'static str, &str, String),
) -> Result<(u64, Option<String>), crate::StoreError> {
    let accounts: Vec<(String, String, Option<String>)> =
        sqlx::query_as("SELECT id, name, ledger_head FROM accounts ORDER BY id")
            .fetch_all(&mut *db)
            .await?;
    let checkpoint = crate::checkpoint::newest_first(db)
        .await?
        .into_iter()
        .find(|c| {
            trusted.is_none_or(|keys| keys.iter().any(|k| *k == c.key_id || *k == c.public_key))
        });
    if let Some(c) = &checkpoint
        && let Err(why) = c.verify()
    {
        flag("checkpoint_signature", &c.id, why);
    }
    let mut chained = 0u64;
    for (id, name, head) in &accounts {
        let subject = format!("{name} ({id})");
        let signed = checkpoint.as_ref().and_then(|c| c.heads.get(id));
        // The link at the checkpoint's seq: recomputed while the chain holds, stored after.
        let mut at_signed: Option<String> = None;
        let (mut prev, mut last_seq, mut broken) = (GENESIS.to_owned(), None, None);
        let mut from = i64::MIN;
        loop {
            let lines = read_lines(db, id, from, i64::MAX, WALK_PAGE).await?;
            chained += lines.len() as u64;
            for (line, stored) in &lines {
                if broken.is_none() {
                    match step(&prev, last_seq, line, stored.as_deref()) {
                        Ok(link) => {
                            prev = link;
                            last_seq = Some(line.seq);
                        }
                        Err(b) => broken = Some(b),
                    }
                }
                if signed.is_some_and(|(seq, _)| *seq == line.seq) {
                    at_signed = if broken.is_none() {
                        Some(prev.clone())
                    } else {
                        stored.clone()
                    };
                }
            }
            match lines.last() {
                Some((last, _)) if lines.len() as i64 == WALK_PAGE => from = last.seq + 1,
                _ => break,
            }
        }
        match broken {
            Some(broken) => flag(
                "ledger_chain",
                &subject,
                format!("row {} (seq {}): {}", broken.id, broken.seq, broken.why),
            ),
            None if last_seq.is_none() && head.is_none() => {}
            None if head.as_deref() != Some(prev.as_str()) => flag(
                "ledger_head",
                &subject,
                format!(
                    "the account's head is {} but its chain ends at {prev}: its last row was dropped, or the head edited",
                    head.as_deref().unwrap_or("none")
                ),
            ),
            None => {}
        }
        if let (Some(c), Some((seq, signed))) = (&checkpoint, signed)
            && at_signed.as_deref() != Some(signed.as_str())
        {
            flag(
                "checkpoint_heads",
                &subject,
                format!(
                    "checkpoint {} signed seq {seq} with hash {signed}; the chain no longer passes through it (rewritten or cut)",
                    c.id
                ),
            );
        }
    }
    Ok((chained, checkpoint.map(|c| c.id)))
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
            balance_after_nanos: 100 + amount,
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
