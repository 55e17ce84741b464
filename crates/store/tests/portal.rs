//! The portal's people and sessions (`tollgate_store::portal`) on SQLite and, when
//! `TOLLGATE_TEST_POSTGRES_URL` is set, on PostgreSQL: a session read in one query with its
//! person, ended by idleness, sign-out, a new password and the person's removal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{stores, unique};
use tollgate_billing::Amount;
use tollgate_store::AdminChange;

fn change(target: &str) -> AdminChange {
    AdminChange {
        actor: "cli:test".into(),
        action: "person.invite".into(),
        target: target.into(),
        before: None,
        after: None,
        request_id: None,
    }
}

#[tokio::test]
async fn a_session_is_its_person_until_it_ends() {
    for store in stores().await {
        let (account, _) = store
            .create_account(&format!("people-{}", unique()), Amount::ZERO)
            .await
            .unwrap();
        let email = format!("Ada-{}@Example.com", unique());
        let far = i64::MAX / 2;
        let (person, invite) = store
            .invite_person(&account.id, &email, "Ada", far, &change(&email))
            .await
            .unwrap();
        assert_eq!(person.email, email.to_lowercase());
        let accepted = store
            .accept_invite(&invite, "$argon2id$hash")
            .await
            .unwrap()
            .unwrap();
        assert!(accepted.active);
        let by_email = store.person_credentials(&email).await.unwrap().unwrap();
        let by_id = store
            .person_credentials_by_id(&person.id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(by_email, by_id);
        assert_eq!(by_id.password_hash.as_deref(), Some("$argon2id$hash"));

        // Opened, then read back as it was opened, with its person.
        let (token, opened) = store
            .open_portal_session(&accepted, far, Some("192.0.2.1"))
            .await
            .unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let read = store
            .portal_session(&token, now, 60_000)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(read, opened);
        assert_eq!(read.person.account_id, account.id);
        // Idle too long, or a wrong token: none.
        assert!(
            store
                .portal_session(&token, now + 120_000, 60_000)
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            store
                .portal_session("nope", now, 60_000)
                .await
                .unwrap()
                .is_none()
        );
        // Signed out: none.
        store.close_portal_session(&token).await.unwrap();
        assert!(
            store
                .portal_session(&token, now, 60_000)
                .await
                .unwrap()
                .is_none()
        );
        // Removed: a session opened before is none.
        let (token, _) = store
            .open_portal_session(&accepted, far, None)
            .await
            .unwrap();
        store
            .remove_person(&person.id, &change(&person.id))
            .await
            .unwrap();
        assert!(
            store
                .portal_session(&token, now, 60_000)
                .await
                .unwrap()
                .is_none()
        );
        assert!(
            store
                .person_credentials_by_id(&person.id)
                .await
                .unwrap()
                .is_none()
        );
    }
}
