//! The price book's versions (docs/architecture.md, "Prices"; docs/decisions.md, "Versioned
//! prices"). A version is a row that is never updated: the configuration, the CLI and the
//! admin API add versions. Every charge names the version it was priced at.

use crate::{Backend, Store, StoreError, now_millis};
use tollgate_billing::{PriceBook, PriceSchedule, PriceVersion, Tariff};

/// Who makes a version.
pub const SOURCES: [&str; 3] = ["config", "cli", "admin"];

/// One stored version of one model's price.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StoredPrice {
    /// The public model.
    pub model: String,
    /// Counts the model's versions from 1.
    pub version: i64,
    /// The list tariff.
    pub tariff: Tariff,
    /// From when it prices requests, Unix milliseconds.
    pub effective_from: i64,
    /// When it was made, Unix milliseconds.
    pub created_at: i64,
    /// `config`, `cli` or `admin`.
    pub source: String,
    /// Who made it (the admin token's or the CLI user's name), when known.
    pub actor: Option<String>,
    /// Rebuilt from the configuration at the upgrade that introduced versions, for the rows
    /// written before: those rows' prices at the time are not known for certain.
    pub reconstructed: bool,
}

impl StoredPrice {
    /// The version as the pricing rules use it.
    pub fn as_version(&self) -> PriceVersion {
        PriceVersion {
            model: self.model.clone(),
            version: self.version,
            effective_from: self.effective_from,
            tariff: self.tariff.clone(),
        }
    }

    /// Of `versions` (one model's or many), each model's version in effect at `now` — by
    /// `PriceSchedule::at`, the rule requests are priced by — in model order.
    pub fn in_effect(versions: &[StoredPrice], now: i64) -> Vec<&StoredPrice> {
        let schedule = PriceSchedule::from_versions(versions.iter().map(StoredPrice::as_version));
        schedule
            .models()
            .filter_map(|m| schedule.at(m, now))
            .filter_map(|v| {
                versions
                    .iter()
                    .find(|p| p.model == v.model && p.version == v.version)
            })
            .collect()
    }
}

/// What reading the configuration's prices did to one model's versions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PriceSync {
    /// The model's first version. `attributed`: ledger rows of earlier releases now named
    /// with it (then the version is marked reconstructed).
    First {
        /// The model.
        model: String,
        /// The rows attributed to it.
        attributed: u64,
    },
    /// The configuration's price changed since it was last read: a new version, effective now.
    Changed {
        /// The model.
        model: String,
        /// The new version.
        version: i64,
    },
    /// The configuration is as it was last read, but an operator set another price since
    /// (`tollgate prices set`, the admin API): the operator's version stays.
    OperatorKept {
        /// The model.
        model: String,
        /// The version in effect.
        current: i64,
    },
}

type PriceRow = (String, i64, String, i64, i64, String, Option<String>, i64);

const COLUMNS: &str =
    "model, version, tariff, effective_from, created_at, source, actor, reconstructed";

fn from_row(row: PriceRow) -> Result<StoredPrice, StoreError> {
    let (model, version, tariff, effective_from, created_at, source, actor, reconstructed) = row;
    let tariff = serde_json::from_str(&tariff).map_err(|e| {
        StoreError::Corrupt(format!("price version {model}@{version}: {e}: {tariff}"))
    })?;
    Ok(StoredPrice {
        model,
        version,
        tariff,
        effective_from,
        created_at,
        source,
        actor,
        reconstructed: reconstructed != 0,
    })
}

impl Store {
    /// Every version of `model` (or of every model), by model and version.
    pub async fn price_versions(
        &self,
        model: Option<&str>,
    ) -> Result<Vec<StoredPrice>, StoreError> {
        let rows: Vec<PriceRow> = match model {
            Some(model) => {
                sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {COLUMNS} FROM price_versions WHERE model = $1 ORDER BY version"
                )))
                .bind(model)
                .fetch_all(self.pool())
                .await?
            }
            None => {
                sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {COLUMNS} FROM price_versions ORDER BY model, version"
                )))
                .fetch_all(self.pool())
                .await?
            }
        };
        rows.into_iter().map(from_row).collect()
    }

    /// Every version of every model, as the pricing rules use them.
    pub async fn price_schedule(&self) -> Result<PriceSchedule, StoreError> {
        Ok(PriceSchedule::from_versions(
            self.price_versions(None)
                .await?
                .iter()
                .map(StoredPrice::as_version),
        ))
    }

    /// Adds a version of `model`'s price, effective from `effective_from` (Unix milliseconds;
    /// not before now). A version never changes a model's meter, and no price is negative
    /// ([`StoreError::InvalidPrice`]).
    pub async fn add_price_version(
        &self,
        model: &str,
        tariff: &Tariff,
        effective_from: i64,
        source: &str,
        actor: Option<&str>,
    ) -> Result<StoredPrice, StoreError> {
        let now = now_millis();
        if effective_from < now - CLOCK_SKEW_MS {
            return Err(StoreError::InvalidPrice(format!(
                "effective_from is in the past: a version prices requests from when it is made or later ({} ms ago)",
                now - effective_from
            )));
        }
        let effective_from = effective_from.max(now);
        tariff
            .validate()
            .map_err(|e| StoreError::InvalidPrice(e.to_string()))?;
        // Two operators at once: the second insert meets the first's primary key; try again.
        for _ in 0..5 {
            let mut tx = self.write_tx().await?;
            let last: Option<PriceRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM price_versions WHERE model = $1
                 ORDER BY version DESC LIMIT 1"
            )))
            .bind(model)
            .fetch_optional(&mut *tx)
            .await?;
            let last = last.map(from_row).transpose()?;
            if let Some(last) = &last
                && last.tariff.meter() != tariff.meter()
            {
                return Err(StoreError::InvalidPrice(format!(
                    "{model} is metered in {}, not {}: a price version cannot change the meter",
                    last.tariff.meter(),
                    tariff.meter()
                )));
            }
            let version = last.as_ref().map_or(1, |l| l.version + 1);
            let stored = StoredPrice {
                model: model.to_owned(),
                version,
                tariff: tariff.clone(),
                effective_from,
                created_at: now,
                source: source.to_owned(),
                actor: actor.map(str::to_owned),
                reconstructed: false,
            };
            match insert(&mut tx, &stored).await {
                Ok(()) => {
                    tx.commit().await?;
                    return Ok(stored);
                }
                Err(StoreError::Database(sqlx::Error::Database(d))) if d.is_unique_violation() => {
                    continue;
                }
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::AlreadyExists(format!(
            "a version of {model}'s price: others were being added at the same time; try again"
        )))
    }

    /// Reads the configuration's prices into the versions, at a gateway's start
    /// (docs/decisions.md, "Versioned prices"):
    ///
    /// - a model without a version gets its first, effective from the beginning; ledger rows and
    ///   usage records of earlier releases that charged the model are attributed to it, and it
    ///   is then marked reconstructed;
    /// - a configuration whose price differs from the last version the configuration made adds
    ///   a version, effective now;
    /// - a configuration as it was last read leaves an operator's later version in effect.
    ///
    /// Replicas starting together on PostgreSQL take turns (an advisory lock).
    pub async fn sync_config_prices(
        &self,
        book: &PriceBook,
        now: i64,
    ) -> Result<Vec<PriceSync>, StoreError> {
        let mut tx = self.write_tx().await?;
        if self.backend() == Backend::Postgres {
            sqlx::query("SELECT pg_advisory_xact_lock(7373110002)")
                .execute(&mut *tx)
                .await?;
        }
        let rows: Vec<PriceRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM price_versions ORDER BY model, version"
        )))
        .fetch_all(&mut *tx)
        .await?;
        let stored = rows
            .into_iter()
            .map(from_row)
            .collect::<Result<Vec<_>, _>>()?;
        let schedule = PriceSchedule::from_versions(stored.iter().map(StoredPrice::as_version));
        let mut events = Vec::new();
        for (model, tariff) in book.iter() {
            let mine: Vec<&StoredPrice> = stored.iter().filter(|p| p.model == model).collect();
            let Some(last) = mine.last() else {
                let attributed = sqlx::query(
                    "UPDATE ledger SET price_version = 1
                     WHERE model = $1 AND kind = 'charge' AND price_version IS NULL",
                )
                .bind(model)
                .execute(&mut *tx)
                .await?
                .rows_affected();
                sqlx::query(
                    "UPDATE usage_log SET price_version = 1
                     WHERE model = $1 AND price_version IS NULL AND charge_nanos <> 0",
                )
                .bind(model)
                .execute(&mut *tx)
                .await?;
                let first = StoredPrice {
                    model: model.to_owned(),
                    version: 1,
                    tariff: tariff.clone(),
                    effective_from: 0,
                    created_at: now,
                    source: "config".into(),
                    actor: None,
                    reconstructed: attributed > 0,
                };
                insert(&mut tx, &first).await?;
                events.push(PriceSync::First {
                    model: model.to_owned(),
                    attributed,
                });
                continue;
            };
            let from_config = mine.iter().rev().find(|p| p.source == "config");
            let current = schedule.at(model, now);
            if from_config.is_some_and(|p| p.tariff == *tariff) {
                if let Some(current) = current
                    && current.tariff != *tariff
                {
                    events.push(PriceSync::OperatorKept {
                        model: model.to_owned(),
                        current: current.version,
                    });
                }
                continue;
            }
            if current.is_some_and(|c| c.tariff == *tariff) {
                continue;
            }
            if last.tariff.meter() != tariff.meter() {
                return Err(StoreError::InvalidPrice(format!(
                    "the configuration meters {model} in {}, its price versions in {}: a price version cannot change the meter",
                    tariff.meter(),
                    last.tariff.meter()
                )));
            }
            let next = StoredPrice {
                model: model.to_owned(),
                version: last.version + 1,
                tariff: tariff.clone(),
                effective_from: now,
                created_at: now,
                source: "config".into(),
                actor: None,
                reconstructed: false,
            };
            insert(&mut tx, &next).await?;
            events.push(PriceSync::Changed {
                model: model.to_owned(),
                version: next.version,
            });
        }
        tx.commit().await?;
        Ok(events)
    }
}

/// How far in the past a new version's `effective_from` may be (two clocks that disagree a
/// little); it is then moved to now.
const CLOCK_SKEW_MS: i64 = 60_000;

async fn insert(tx: &mut sqlx::AnyConnection, price: &StoredPrice) -> Result<(), StoreError> {
    let tariff = serde_json::to_string(&price.tariff)
        .map_err(|e| StoreError::InvalidPrice(e.to_string()))?;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO price_versions ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
    )))
    .bind(&price.model)
    .bind(price.version)
    .bind(tariff)
    .bind(price.effective_from)
    .bind(price.created_at)
    .bind(&price.source)
    .bind(price.actor.clone())
    .bind(i64::from(price.reconstructed))
    .execute(&mut *tx)
    .await?;
    Ok(())
}
