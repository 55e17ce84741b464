//! Windowed quotas in the database (`docs/decisions.md`, "Rate limits and spend caps"): per
//! holder, quota and window, the units all replicas have taken. A replica takes a slice with
//! [`Store::take_quota_slice`] and admits requests from it in memory (`tollgate_ledger::quota`).

use crate::{Backend, Store, StoreError, as_bigint, now_millis};
use tollgate_ledger::quota::{SliceAsk, slice_grant};

impl Store {
    /// Takes a slice of `holder`'s `quota` in the window `ask.window_start`: what
    /// [`slice_grant`] allows, plus the units `ask.owed` whatever the limit. Returns the units
    /// granted and what all replicas have taken in the window since. One short transaction.
    pub async fn take_quota_slice(
        &self,
        holder: &str,
        quota: &str,
        ask: &SliceAsk,
    ) -> Result<(u64, u64), StoreError> {
        let now = now_millis();
        let window = as_bigint(ask.window_start);
        let mut tx = self.write_tx().await?;
        sqlx::query(
            "INSERT INTO quota_windows (holder, quota, window_start, taken, updated_at)
             VALUES ($1, $2, $3, 0, $4) ON CONFLICT (holder, quota, window_start) DO NOTHING",
        )
        .bind(holder)
        .bind(quota)
        .bind(window)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let lock = match self.backend() {
            Backend::Postgres => " FOR UPDATE",
            Backend::Sqlite => "",
        };
        let (taken,): (i64,) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT taken FROM quota_windows WHERE holder = $1 AND quota = $2 AND window_start = $3{lock}"
        )))
        .bind(holder)
        .bind(quota)
        .bind(window)
        .fetch_one(&mut *tx)
        .await?;
        let taken = u64::try_from(taken).unwrap_or(0);
        let granted = slice_grant(taken, ask);
        let after = taken.saturating_add(granted).saturating_add(ask.owed);
        sqlx::query(
            "UPDATE quota_windows SET taken = $1, updated_at = $2
             WHERE holder = $3 AND quota = $4 AND window_start = $5",
        )
        .bind(as_bigint(after))
        .bind(now)
        .bind(holder)
        .bind(quota)
        .bind(window)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok((granted, after))
    }

    /// Deletes quota windows that started before `before` (Unix ms). Returns how many.
    pub async fn prune_quota_windows(&self, before: i64) -> Result<u64, StoreError> {
        Ok(
            sqlx::query("DELETE FROM quota_windows WHERE window_start < $1")
                .bind(before)
                .execute(self.writer())
                .await?
                .rows_affected(),
        )
    }
}
