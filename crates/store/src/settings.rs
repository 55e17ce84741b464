//! Values every replica must agree on, kept in the `settings` table.

use crate::{Store, StoreError, now_millis};
use rand::RngCore;

impl Store {
    /// The secret named `name`: 32 random bytes, hex-encoded, made by whichever replica asks
    /// first and read by every other one — so a media link signed by one replica is accepted by
    /// all of them, and survives restarts.
    pub async fn shared_secret(&self, name: &str) -> Result<String, StoreError> {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        // Insert-if-absent, written so both engines take it; the loser of a race reads the
        // winner's value below.
        sqlx::query(
            "INSERT INTO settings (name, value, created_at)
             SELECT $1, $2, $3 WHERE NOT EXISTS (SELECT 1 FROM settings WHERE name = $1)",
        )
        .bind(name)
        .bind(hex::encode(bytes))
        .bind(now_millis())
        .execute(self.writer())
        .await
        .or_else(|e| match e {
            // Two replicas inserting at once: one wins on the primary key.
            sqlx::Error::Database(d) if d.is_unique_violation() => {
                Ok(sqlx::any::AnyQueryResult::default())
            }
            e => Err(e),
        })?;
        let (value,): (String,) = sqlx::query_as("SELECT value FROM settings WHERE name = $1")
            .bind(name)
            .fetch_one(self.writer())
            .await?;
        Ok(value)
    }
}
