//! What the store's test files share: one store per available backend, and unique names.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use tollgate_store::Store;

/// A fresh SQLite store, and the PostgreSQL one when `TOLLGATE_TEST_POSTGRES_URL` is set.
pub async fn stores() -> Vec<Store> {
    let dir = std::env::temp_dir().join(format!(
        "tollgate-store-test-{}-{}",
        std::process::id(),
        unique()
    ));
    let mut stores = vec![
        Store::connect(&format!("sqlite://{}/t.db", dir.display()))
            .await
            .unwrap(),
    ];
    if let Ok(url) = std::env::var("TOLLGATE_TEST_POSTGRES_URL") {
        stores.push(Store::connect(&url).await.unwrap());
    }
    stores
}

/// A name no other test uses, even on a shared database.
pub fn unique() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{nanos}-{}", N.fetch_add(1, Ordering::Relaxed))
}

/// [`stores`] with their URLs, for a test that edits rows behind the store's back.
pub async fn stores_with_urls() -> Vec<(Store, String)> {
    let dir = std::env::temp_dir().join(format!(
        "tollgate-store-test-{}-{}",
        std::process::id(),
        unique()
    ));
    let sqlite = format!("sqlite://{}/t.db", dir.display());
    let mut stores = vec![(Store::connect(&sqlite).await.unwrap(), sqlite)];
    if let Ok(url) = std::env::var("TOLLGATE_TEST_POSTGRES_URL") {
        stores.push((Store::connect(&url).await.unwrap(), url));
    }
    stores
}

/// Runs `sql` on the database at `url` as an intruder would: not through the store.
pub async fn tamper(url: &str, sql: &str) {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(url).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
}
