//! Balance alerts a customer sets (`tollgate_store::balance_alerts`): at most five an account,
//! only its own account's deleted, and the one query the judge runs finds exactly the alerts
//! that may change level — on SQLite and, when `TOLLGATE_TEST_POSTGRES_URL` is set, on
//! PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{stores, unique};
use serde_json::json;
use tollgate_billing::Amount;
use tollgate_store::{AlertLevel, MAX_BALANCE_ALERTS, NewAlertEvent, NewBalanceAlert, Store};

fn units(n: i64) -> Amount {
    Amount::from_nanos(n * 1_000_000_000)
}

async fn alert(
    store: &Store,
    account_id: &str,
    threshold: i64,
    url: Option<&str>,
) -> Option<String> {
    store
        .create_balance_alert(&NewBalanceAlert {
            account_id,
            threshold: units(threshold),
            webhook_url: url,
            format: "standard",
            secret: url.map(|_| "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
            created_by: "portal:ada@example.com",
        })
        .await
        .unwrap()
        .map(|a| a.id)
}

/// The ids `balance_alerts_to_judge` finds among `ours`.
async fn to_judge(store: &Store, ours: &[&str]) -> Vec<String> {
    store
        .balance_alerts_to_judge()
        .await
        .unwrap()
        .into_iter()
        .map(|due| due.alert.id)
        .filter(|id| ours.contains(&id.as_str()))
        .collect()
}

#[tokio::test]
async fn at_most_five_an_account_each_deleted_only_by_its_own() {
    for store in stores().await {
        let (acme, _) = store
            .create_account(&format!("acme-{}", unique()), units(10))
            .await
            .unwrap();
        let (other, _) = store
            .create_account(&format!("other-{}", unique()), units(10))
            .await
            .unwrap();
        let mut ids = Vec::new();
        for n in 0..MAX_BALANCE_ALERTS {
            ids.push(alert(&store, &acme.id, n, None).await.unwrap());
        }
        assert_eq!(
            alert(&store, &acme.id, 1, None).await,
            None,
            "a sixth is refused"
        );
        assert!(
            alert(&store, &other.id, 1, None).await.is_some(),
            "another account's own five"
        );
        let mut listed: Vec<String> = store
            .balance_alerts(&acme.id)
            .await
            .unwrap()
            .into_iter()
            .map(|a| a.id)
            .collect();
        listed.sort();
        let mut made = ids.clone();
        made.sort();
        assert_eq!(listed, made);
        assert!(
            !store
                .delete_balance_alert(&other.id, &ids[0])
                .await
                .unwrap()
        );
        assert!(store.delete_balance_alert(&acme.id, &ids[0]).await.unwrap());
        assert!(!store.delete_balance_alert(&acme.id, &ids[0]).await.unwrap());
        assert_eq!(store.balance_alerts(&acme.id).await.unwrap().len(), 4);
        assert!(
            alert(&store, &acme.id, 1, None).await.is_some(),
            "room for one again"
        );
        assert!(
            store
                .create_balance_alert(&NewBalanceAlert {
                    account_id: "acc_nobody",
                    threshold: units(1),
                    webhook_url: None,
                    format: "standard",
                    secret: None,
                    created_by: "portal:x",
                })
                .await
                .is_err()
        );
    }
}

#[tokio::test]
async fn the_judge_reads_only_the_alerts_below_or_firing() {
    for store in stores().await {
        let (acme, _) = store
            .create_account(&format!("acme-{}", unique()), units(10))
            .await
            .unwrap();
        let hook = "https://hooks.example.com/x";
        let url = Some(hook);
        let above = alert(&store, &acme.id, 5, url).await.unwrap();
        let below = alert(&store, &acme.id, 20, url).await.unwrap();
        let banner_only = alert(&store, &acme.id, 50, None).await.unwrap();
        let ours = [above.as_str(), below.as_str(), banner_only.as_str()];
        assert_eq!(to_judge(&store, &ours).await, std::slice::from_ref(&below));

        // `below` fires; the balance rises above both: it is still read (to resolve).
        let subject = format!("account:{}", acme.id);
        let facts = json!({});
        let fired = NewAlertEvent {
            rule: &below,
            subject: &subject,
            from: None,
            to: AlertLevel {
                level: 1,
                episode: 1,
            },
            id: &format!("evt_{}", unique()),
            event_type: "alert.fired",
            summary: "below",
            facts: &facts,
            action: None,
            created_at: 1,
            url: hook,
            format: "standard",
            secret_env: None,
            secret: Some("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
            owner_account: Some(&acme.id),
            body: b"{}",
        };
        assert!(store.record_alert(&fired).await.unwrap());
        store.credit(&acme.id, units(100), None).await.unwrap();
        let due = store.balance_alerts_to_judge().await.unwrap();
        let mine: Vec<_> = due.iter().filter(|d| d.alert.id == below).collect();
        assert_eq!(mine.len(), 1);
        assert_eq!(
            mine[0].level,
            Some(AlertLevel {
                level: 1,
                episode: 1
            })
        );
        assert_eq!(mine[0].balance, units(110));
        assert_eq!(to_judge(&store, &ours).await, std::slice::from_ref(&below));

        // Its delivery carries the alert's secret and account.
        let delivery = store
            .lease_due_deliveries("test", 60_000, 1000)
            .await
            .unwrap()
            .into_iter()
            .find(|d| d.rule == below)
            .unwrap();
        assert_eq!(delivery.owner_account.as_deref(), Some(acme.id.as_str()));
        assert!(delivery.secret.as_deref().unwrap().starts_with("whsec_"));
        assert!(
            !serde_json::to_string(&delivery).unwrap().contains("whsec_"),
            "the admin API never shows a customer's secret"
        );

        // Deleted: its level and its pending delivery go with it.
        assert!(store.delete_balance_alert(&acme.id, &below).await.unwrap());
        assert!(store.alert_levels(&below).await.unwrap().is_empty());
        assert!(store.alert_delivery(&delivery.id).await.is_err());
        assert!(to_judge(&store, &ours).await.is_empty());
    }
}
