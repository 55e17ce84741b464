//! The usage log's hourly rollup (`docs/decisions.md`, "The usage log"): `usage_hourly` holds,
//! per hour, account, key, model, endpoint, status and meter, the records' count, errors, units
//! and charge, so that a report over weeks reads hundreds of sums instead of millions of
//! records.
//!
//! An hour is rolled up once it ended [`SETTLE`] ago — a record is written within seconds of
//! the time it carries (the ledger journal's batches; a finished task's own transaction), so
//! by then its hour is complete — in one transaction with the watermark
//! (`settings.usage_rolled_until`), advanced by compare-and-swap so that two replicas never
//! sum an hour twice. Reports read whole rolled-up hours from the rollup and everything else
//! (the period's ragged edges, the hours not rolled up yet) from the records: the two never
//! overlap.

use crate::{Store, StoreError, now_millis};

/// `SUM(units)` with each record's units capped at `usage::MAX_UNITS` (`u32::MAX`) — also for
/// records written before the cap, so that no sum overflows (SQLite fails the query, PostgreSQL
/// the cast). The rollup sums with it, and so does a report over the log's unrolled edges.
pub(crate) const SUM_UNITS: &str =
    "SUM(CASE WHEN units > 4294967295 THEN 4294967295 ELSE units END)";

/// An hour, in milliseconds.
pub const HOUR: i64 = 3_600_000;
/// How long after its end an hour is rolled up.
pub const SETTLE: i64 = HOUR;
/// The most hours one call rolls up (a first run over a long log catches up call by call).
const HOURS_PER_CALL: i64 = 24 * 7;
const WATERMARK: &str = "usage_rolled_until";

/// Where a report over `[since, until)` reads from: the records over up to two ragged ranges,
/// the rollup over the whole hours between (when there are any, and they are rolled up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Ranges read from `usage_log`: (since, until), `None` for open ends.
    pub raw: Vec<(Option<i64>, Option<i64>)>,
    /// The range read from `usage_hourly`.
    pub rolled: Option<(i64, i64)>,
}

/// Splits `[since, until)` between the rollup (whole hours before `rolled_until`) and the
/// records (the rest).
pub(crate) fn plan(since: Option<i64>, until: Option<i64>, rolled_until: Option<i64>) -> Plan {
    let whole_records = Plan {
        raw: vec![(since, until)],
        rolled: None,
    };
    let Some(rolled_until) = rolled_until else {
        return whole_records;
    };
    // The first whole hour at or after `since`, and the end of the last whole hour before
    // `until` that is rolled up.
    let first = since.map_or(i64::MIN, |s| {
        s.div_euclid(HOUR)
            .saturating_add(i64::from(s.rem_euclid(HOUR) != 0))
            .saturating_mul(HOUR)
    });
    let last = until.map_or(rolled_until, |u| {
        u.div_euclid(HOUR).saturating_mul(HOUR).min(rolled_until)
    });
    if first >= last {
        return whole_records;
    }
    let mut raw = Vec::new();
    if since.is_some_and(|s| s < first) {
        raw.push((since, Some(first)));
    }
    if until.is_none_or(|u| u > last) {
        raw.push((Some(last), until));
    }
    // The rollup has no rows before the first hour it summed: an open start reads it all.
    Plan {
        raw,
        rolled: Some((if since.is_none() { i64::MIN } else { first }, last)),
    }
}

impl Store {
    /// Where the rollup ends (Unix ms, an hour's start): the hours before it are summed in
    /// `usage_hourly`. `None` before the first rollup.
    pub async fn usage_rolled_until(&self) -> Result<Option<i64>, StoreError> {
        let row: Option<(String,)> = sqlx::query_as("SELECT value FROM settings WHERE name = $1")
            .bind(WATERMARK)
            .fetch_optional(self.pool())
            .await?;
        row.map(|(v,)| {
            v.parse()
                .map_err(|_| StoreError::Corrupt(format!("{WATERMARK} {v:?}")))
        })
        .transpose()
    }

    /// Rolls up the hours that ended at least [`SETTLE`] before `now` and are not rolled up
    /// yet, at most a week of them. Returns how many hours it summed; 0 when there was nothing
    /// to do or another replica did it first.
    pub async fn roll_up_usage(&self, now: i64) -> Result<u64, StoreError> {
        let ready_until = (now - SETTLE).div_euclid(HOUR) * HOUR;
        let start = match self.usage_rolled_until().await? {
            Some(at) => at,
            None => {
                // The first run starts at the oldest record's hour (or now, on an empty log).
                let (oldest,): (Option<i64>,) =
                    sqlx::query_as("SELECT MIN(created_at) FROM usage_log")
                        .fetch_one(self.pool())
                        .await?;
                let start = oldest.map_or(ready_until, |t| t.div_euclid(HOUR) * HOUR);
                sqlx::query(
                    "INSERT INTO settings (name, value, created_at) VALUES ($1, $2, $3)
                     ON CONFLICT (name) DO NOTHING",
                )
                .bind(WATERMARK)
                .bind(start.to_string())
                .bind(now_millis())
                .execute(self.writer())
                .await?;
                match self.usage_rolled_until().await? {
                    Some(at) => at,
                    None => return Ok(0),
                }
            }
        };
        let end = ready_until.min(start.saturating_add(HOURS_PER_CALL * HOUR));
        if end <= start {
            return Ok(0);
        }
        let mut tx = self.write_tx().await?;
        // Claim the range first: a replica that lost the race changes nothing.
        let claimed = sqlx::query("UPDATE settings SET value = $1 WHERE name = $2 AND value = $3")
            .bind(end.to_string())
            .bind(WATERMARK)
            .bind(start.to_string())
            .execute(&mut *tx)
            .await?;
        if claimed.rows_affected() != 1 {
            return Ok(0);
        }
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO usage_hourly (hour, account_id, key_id, model, endpoint, status, meter,
                                       requests, errors, units, charge_nanos)
             SELECT (created_at / 3600000) * 3600000, account_id, COALESCE(key_id, ''),
                    COALESCE(model, ''), endpoint, status, COALESCE(meter, ''), COUNT(*),
                    SUM(CASE WHEN status >= 400 THEN 1 ELSE 0 END), {}, SUM(charge_nanos)
             FROM usage_log WHERE created_at >= $1 AND created_at < $2
             GROUP BY (created_at / 3600000) * 3600000, account_id, COALESCE(key_id, ''),
                      COALESCE(model, ''), endpoint, status, COALESCE(meter, '')",
            SUM_UNITS
        )))
        .bind(start)
        .bind(end)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(u64::try_from((end - start) / HOUR).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = HOUR;

    #[test]
    fn without_a_rollup_everything_is_read_from_the_records() {
        assert_eq!(
            plan(Some(5), Some(10 * H), None).raw,
            vec![(Some(5), Some(10 * H))]
        );
    }

    #[test]
    fn whole_rolled_hours_from_the_rollup_edges_from_the_records() {
        let p = plan(Some(H + 5), Some(9 * H + 7), Some(6 * H));
        assert_eq!(p.rolled, Some((2 * H, 6 * H)));
        assert_eq!(
            p.raw,
            vec![(Some(H + 5), Some(2 * H)), (Some(6 * H), Some(9 * H + 7))]
        );
        // Aligned edges read nothing raw before; an open end reads the rest raw.
        let p = plan(Some(2 * H), None, Some(6 * H));
        assert_eq!(p.rolled, Some((2 * H, 6 * H)));
        assert_eq!(p.raw, vec![(Some(6 * H), None)]);
        // An open start reads the whole rollup.
        let p = plan(None, Some(3 * H), Some(6 * H));
        assert_eq!(p.rolled, Some((i64::MIN, 3 * H)));
        assert!(p.raw.is_empty());
        // Nothing whole in range: all raw.
        let p = plan(Some(H + 1), Some(2 * H - 1), Some(6 * H));
        assert_eq!(p.rolled, None);
    }
}
