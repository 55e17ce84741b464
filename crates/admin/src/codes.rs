//! Redemption codes, the operator's side (docs/operations.md, "Redemption codes"): issue a
//! batch, list batches, report one (issued, redeemed, by whom, when), revoke one. The CLI
//! (`tollgate codes …`) and the admin API (`/admin/v1/code-batches`) both run these, so a batch
//! is validated and recorded in the admin audit log the same way whichever door it came in by.

use crate::ops::{Actor, OpError, parse_amount, parse_time, short_text};
use schemars::JsonSchema;
use serde::Serialize;
use tollgate_store::{CodeBatch, CodeRedemption, MAX_CODE_BATCH, NewCodeBatch, Store};

/// A batch just issued, with its codes: the only time they are shown.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct IssuedBatch {
    /// The batch.
    pub batch: CodeBatch,
    /// Its codes in order (the report's `number` is a code's place here, from 1), each as it is
    /// typed: seven groups of four.
    pub codes: Vec<String>,
}

/// A batch and what became of its codes.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BatchReport {
    /// The batch, with its counts.
    pub batch: CodeBatch,
    /// Its redeemed codes, in the order they were redeemed.
    pub redemptions: Vec<CodeRedemption>,
}

/// What the operator asks for.
#[derive(Debug, Clone, Default, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewBatch {
    /// What each code adds to the balance that redeems it (a decimal, above 0).
    pub amount: String,
    /// How many codes (1 to 100,000).
    pub count: u64,
    /// When the codes stop redeeming: an RFC 3339 time, a date (its midnight, UTC), or a span
    /// from now (`30d`, `12h`). None: never.
    #[serde(default)]
    pub expires: Option<String>,
    /// A name for the batch (default: `codes`).
    #[serde(default)]
    pub name: Option<String>,
}

/// Issues a batch of codes.
pub async fn issue(store: &Store, actor: &Actor, asked: &NewBatch) -> Result<IssuedBatch, OpError> {
    let amount = parse_amount("amount", &asked.amount)?;
    if !amount.is_positive() {
        return Err(OpError::invalid(
            "amount",
            "a code must add something: the amount must be above 0",
        ));
    }
    let count = u32::try_from(asked.count)
        .ok()
        .filter(|n| (1..=MAX_CODE_BATCH).contains(n))
        .ok_or_else(|| {
            OpError::invalid(
                "count",
                format!(
                    "a batch holds 1 to {MAX_CODE_BATCH} codes, not {}",
                    asked.count
                ),
            )
        })?;
    let now = tollgate_journal::clock::now_millis();
    let expires_at = asked
        .expires
        .as_deref()
        .map(|text| parse_expiry(text, now))
        .transpose()?;
    let name = short_text("name", asked.name.as_deref().unwrap_or("codes"), "a name")?;
    let (batch, codes) = store
        .create_code_batch(
            &NewCodeBatch {
                name: &name,
                amount,
                count,
                expires_at,
            },
            &actor.change("codes.create", "codes"),
        )
        .await?;
    Ok(IssuedBatch {
        codes: codes.iter().map(|c| c.display()).collect(),
        batch,
    })
}

/// Every batch, newest first.
pub async fn batches(store: &Store) -> Result<Vec<CodeBatch>, OpError> {
    Ok(store.code_batches().await?)
}

/// One batch, and who redeemed which of its codes when.
pub async fn report(store: &Store, id: &str) -> Result<BatchReport, OpError> {
    let (batch, redemptions) = store.code_batch(id).await?;
    Ok(BatchReport { batch, redemptions })
}

/// Revokes a batch: its codes not yet redeemed stop redeeming.
pub async fn revoke(store: &Store, actor: &Actor, id: &str) -> Result<CodeBatch, OpError> {
    Ok(store
        .revoke_code_batch(id, &actor.change("codes.revoke", id))
        .await?)
}

/// When a batch expires: an RFC 3339 time or a date, or a span from `now` (`30d`, `12h`,
/// `90m`), as Unix milliseconds; it must be in the future.
fn parse_expiry(text: &str, now: i64) -> Result<i64, OpError> {
    let text = text.trim();
    let span = text
        .strip_suffix('d')
        .map(|n| (n, 86_400_000))
        .or_else(|| text.strip_suffix('h').map(|n| (n, 3_600_000)))
        .or_else(|| text.strip_suffix('m').map(|n| (n, 60_000)));
    let at = match span {
        Some((n, unit)) => {
            let n: i64 = n.parse().map_err(|_| {
                OpError::invalid(
                    "expires",
                    format!("{text:?} is not a span such as 30d, 12h or 90m"),
                )
            })?;
            n.checked_mul(unit)
                .and_then(|ms| now.checked_add(ms))
                .ok_or_else(|| OpError::invalid("expires", format!("{text:?} is too far")))?
        }
        None => parse_time("expires", text)?,
    };
    if at <= now {
        return Err(OpError::invalid(
            "expires",
            format!("{text:?} is not in the future"),
        ));
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_a_time_or_a_span_ahead() {
        let now = 1_000_000;
        assert_eq!(parse_expiry("2d", now).unwrap(), now + 2 * 86_400_000);
        assert_eq!(parse_expiry("12h", now).unwrap(), now + 12 * 3_600_000);
        assert_eq!(parse_expiry("1970-01-02", now).unwrap(), 86_400_000);
        for wrong in [
            "0d",
            "-1d",
            "soon",
            "1970-01-01T00:00:00Z",
            "99999999999999999d",
        ] {
            let e = parse_expiry(wrong, now).unwrap_err();
            assert_eq!(e.field, Some("expires"), "{wrong}");
        }
    }
}
