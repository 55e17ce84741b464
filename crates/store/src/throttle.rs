//! Attempts counted in the database, so that every replica counts the same ones
//! (docs/decisions.md, "Redemption codes"): a guessed redemption code, and whatever else a
//! client may try again and again. Each attempt is counted before it is tried, in fixed windows
//! per scope (`code:account:acct_…`, `code:address:198.51.100.7`), so that twenty attempts at
//! once cannot all slip under the limit; one that succeeds is given back, so the limit counts
//! failures.

use crate::{Store, StoreError};

/// A limit on attempts in one scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptLimit<'a> {
    /// What is counted: a kind and whose, `code:account:acct_…`.
    pub scope: &'a str,
    /// How many attempts a window allows.
    pub limit: u32,
}

/// What counting an attempt found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// Within every limit: try it, and [`Store::give_back_attempt`] when it succeeds.
    Allowed {
        /// The window it was counted in (Unix milliseconds).
        window_start: i64,
    },
    /// Over a limit: refused untried until the window ends.
    Refused {
        /// The scope whose limit was reached (index into the limits given).
        scope: usize,
        /// Milliseconds until the window ends.
        retry_after_ms: i64,
    },
}

impl Store {
    /// Counts an attempt against each of `limits` in the window of `window_ms` that `now`
    /// (Unix milliseconds) falls in.
    pub async fn count_attempt(
        &self,
        limits: &[AttemptLimit<'_>],
        window_ms: i64,
        now: i64,
    ) -> Result<Attempt, StoreError> {
        let window_ms = window_ms.max(1);
        let window_start = now - now.rem_euclid(window_ms);
        let mut tx = self.writer().begin().await?;
        let mut over = None;
        for (i, limit) in limits.iter().enumerate() {
            let (count,): (i64,) = sqlx::query_as(
                "INSERT INTO throttle_counts (scope, window_start, count) VALUES ($1, $2, 1)
                 ON CONFLICT (scope, window_start)
                 DO UPDATE SET count = throttle_counts.count + 1
                 RETURNING count",
            )
            .bind(limit.scope)
            .bind(window_start)
            .fetch_one(&mut *tx)
            .await?;
            if count > i64::from(limit.limit) && over.is_none() {
                over = Some(i);
            }
        }
        tx.commit().await?;
        Ok(match over {
            Some(scope) => Attempt::Refused {
                scope,
                retry_after_ms: window_start + window_ms - now,
            },
            None => Attempt::Allowed { window_start },
        })
    }

    /// Takes back an attempt [`Store::count_attempt`] allowed, once it succeeded.
    pub async fn give_back_attempt(
        &self,
        limits: &[AttemptLimit<'_>],
        window_start: i64,
    ) -> Result<(), StoreError> {
        let mut tx = self.writer().begin().await?;
        for limit in limits {
            sqlx::query(
                "UPDATE throttle_counts SET count = count - 1
                 WHERE scope = $1 AND window_start = $2 AND count > 0",
            )
            .bind(limit.scope)
            .bind(window_start)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Deletes the counts of windows that started before `before` (Unix milliseconds).
    pub async fn prune_attempts(&self, before: i64) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM throttle_counts WHERE window_start < $1")
            .bind(before)
            .execute(self.writer())
            .await?;
        Ok(done.rows_affected())
    }
}
