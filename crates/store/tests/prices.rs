//! The price book's versions and `audit --recompute`, on both backends: the configuration makes
//! versions and never edits one, an operator's version survives a restart with the same
//! configuration, rows written before versions are attributed to a reconstructed one, and every
//! charge re-derives from its recorded quantity, version, multiplier and bound — until the
//! operator (or an intruder) edits an amount.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{stores, stores_with_urls, tamper, unique};
use std::sync::Arc;
use tollgate_billing::{Amount, Decimal, PriceBook, Tariff, Usage};
use tollgate_store::{
    ChargeMemo, ChargeRow, JournalEntry, JournalWriter, PriceGroup, PriceSync, Store, StoreError,
    new_id,
};

fn tokens(price: &str) -> Tariff {
    Tariff::Tokens {
        per_million_tokens: price.parse().unwrap(),
    }
}

fn book(model: &str, tariff: Tariff) -> PriceBook {
    PriceBook::from_iter([(model.to_owned(), tariff)])
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn writer() -> JournalWriter {
    JournalWriter {
        owner: format!("test-{}", unique()),
        lease_ttl_ms: 10_000,
        grant: |_, _, _| None,
    }
}

/// A charge of `amount` for `usage` of `model` at `version`, bounded by `bound`.
fn charge(
    account: &str,
    model: &str,
    usage: &Usage,
    amount: Amount,
    version: Option<i64>,
    bound: Option<Amount>,
    group: Option<&PriceGroup>,
) -> ChargeRow {
    ChargeRow {
        hold_id: new_id("hold"),
        account_id: account.to_owned(),
        lease_id: None,
        amount,
        from_lease: Amount::ZERO,
        memo: ChargeMemo {
            model: model.to_owned(),
            quantity: Some(serde_json::to_string(usage).unwrap()),
            price_version: version,
            bound,
            price_group: group.map(|g| Arc::new(g.clone())),
            ..ChargeMemo::default()
        },
    }
}

async fn ledger_id(store: &Store, account: &str, hold: &str) -> String {
    store
        .ledger(account)
        .await
        .unwrap()
        .into_iter()
        .find(|e| e.hold_id.as_deref() == Some(hold))
        .map(|e| e.id)
        .unwrap()
}

#[tokio::test]
async fn the_configuration_makes_versions_and_an_operators_version_stays() {
    for store in stores().await {
        let model = format!("m-{}", unique());
        let first = store
            .sync_config_prices(&book(&model, tokens("0.02")), now())
            .await
            .unwrap();
        assert_eq!(
            first,
            [PriceSync::First {
                model: model.clone(),
                attributed: 0
            }]
        );
        // The same configuration again: nothing.
        let again = store
            .sync_config_prices(&book(&model, tokens("0.020")), now())
            .await
            .unwrap();
        assert!(again.is_empty(), "{again:?}");
        // A changed configuration: a new version, in effect now.
        let changed = store
            .sync_config_prices(&book(&model, tokens("0.03")), now())
            .await
            .unwrap();
        assert_eq!(
            changed,
            [PriceSync::Changed {
                model: model.clone(),
                version: 2
            }]
        );
        // An operator's version, then a restart with the configuration as it was.
        let set = store
            .add_price_version(&model, &tokens("0.05"), now(), "cli", Some("cli:ops"))
            .await
            .unwrap();
        assert_eq!(set.version, 3);
        let restart = store
            .sync_config_prices(&book(&model, tokens("0.03")), now())
            .await
            .unwrap();
        assert_eq!(
            restart,
            [PriceSync::OperatorKept {
                model: model.clone(),
                current: 3
            }]
        );
        // A scheduled version takes effect at its time and not before.
        let later = now() + 3_600_000;
        store
            .add_price_version(&model, &tokens("0.07"), later, "admin", None)
            .await
            .unwrap();
        let schedule = store.price_schedule().await.unwrap();
        assert_eq!(schedule.at(&model, now()).unwrap().version, 3);
        assert_eq!(schedule.at(&model, later).unwrap().version, 4);
        let history = store.price_versions(Some(&model)).await.unwrap();
        assert_eq!(
            history
                .iter()
                .map(|p| p.source.as_str())
                .collect::<Vec<_>>(),
            ["config", "config", "cli", "admin"]
        );
        assert!(history.iter().all(|p| !p.reconstructed));

        // What a version may not be: another meter, a negative price, a time past.
        let refused = [
            store
                .add_price_version(
                    &model,
                    &Tariff::Characters {
                        per_million_characters: Decimal::ONE,
                    },
                    now(),
                    "cli",
                    None,
                )
                .await,
            store
                .add_price_version(&model, &tokens("-1"), now(), "cli", None)
                .await,
            store
                .add_price_version(&model, &tokens("1"), now() - 3_600_000, "cli", None)
                .await,
        ];
        for r in refused {
            assert!(matches!(r, Err(StoreError::InvalidPrice(_))), "{r:?}");
        }
        assert_eq!(store.price_versions(Some(&model)).await.unwrap().len(), 4);
    }
}

#[tokio::test]
async fn charges_re_derive_from_their_version_and_an_edited_amount_does_not() {
    for (store, url) in stores_with_urls().await {
        let model = format!("m-{}", unique());
        let legacy = format!("legacy-{}", unique());
        let (account, _) = store
            .create_account(&format!("a-{}", unique()), "10".parse().unwrap())
            .await
            .unwrap();
        let w = writer();
        // A row written before price versions: no version, and its model's first version is
        // then reconstructed from the configuration and named on it.
        let old = charge(
            &account.id,
            &legacy,
            &Usage::Tokens(1_000),
            Amount::from_nanos(20_000),
            None,
            None,
            None,
        );
        store
            .write_journal(&w, vec![JournalEntry::Charge(old.clone())])
            .await
            .unwrap();
        let synced = store
            .sync_config_prices(
                &PriceBook::from_iter([
                    (model.clone(), tokens("1")),
                    (legacy.clone(), tokens("0.02")),
                ]),
                now(),
            )
            .await
            .unwrap();
        assert!(synced.contains(&PriceSync::First {
            model: legacy.clone(),
            attributed: 1
        }));
        assert!(store.price_versions(Some(&legacy)).await.unwrap()[0].reconstructed);

        // Version 1 at 1 per million tokens, then version 2 at 3.
        let v2 = store
            .add_price_version(&model, &tokens("3"), now(), "cli", None)
            .await
            .unwrap();
        let gold = PriceGroup {
            name: "gold".into(),
            multiplier: "0.5".parse().unwrap(),
            models: Default::default(),
        };
        let rows = [
            // 1 token at v1 (1 per million): 1,000 nanos.
            charge(
                &account.id,
                &model,
                &Usage::Tokens(1),
                Amount::from_nanos(1_000),
                Some(1),
                Some(Amount::from_nanos(2_000)),
                None,
            ),
            // at v2 in the gold group: 3 per million × 0.5 = 1,500 nanos.
            charge(
                &account.id,
                &model,
                &Usage::Tokens(1),
                Amount::from_nanos(1_500),
                Some(v2.version),
                Some(Amount::from_nanos(9_000)),
                Some(&gold),
            ),
            // a lying upstream's 10⁹ tokens, cut at the bound.
            charge(
                &account.id,
                &model,
                &Usage::Tokens(1_000_000_000),
                Amount::from_nanos(4_000),
                Some(1),
                Some(Amount::from_nanos(4_000)),
                None,
            ),
        ];
        store
            .write_journal(
                &w,
                rows.iter()
                    .cloned()
                    .map(JournalEntry::Charge)
                    .collect::<Vec<_>>(),
            )
            .await
            .unwrap();
        let mine = |report: &tollgate_store::RecomputeReport| -> Vec<String> {
            report
                .violations
                .iter()
                .filter(|v| v.subject.contains(&account.id))
                .map(|v| format!("{}: {}", v.subject, v.detail))
                .collect()
        };
        let clean = store.recompute().await.unwrap();
        assert!(mine(&clean).is_empty(), "{:?}", mine(&clean));
        assert!(clean.recomputed >= 4, "{clean:?}");

        // The operator (or an intruder) takes one nano-unit more from the gold charge.
        let edited = ledger_id(&store, &account.id, &rows[1].hold_id).await;
        tamper(
            &url,
            &format!("UPDATE ledger SET amount_nanos = amount_nanos - 1 WHERE id = '{edited}'"),
        )
        .await;
        let report = store.recompute().await.unwrap();
        let found = mine(&report);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains(&edited), "{found:?}");
        assert!(
            found[0].contains("charged 0.000001501") && found[0].contains("0.0000015"),
            "{found:?}"
        );
        // Put it back: the PostgreSQL database is shared with the other tests' audits.
        tamper(
            &url,
            &format!("UPDATE ledger SET amount_nanos = amount_nanos + 1 WHERE id = '{edited}'"),
        )
        .await;
        assert!(mine(&store.recompute().await.unwrap()).is_empty());
    }
}
