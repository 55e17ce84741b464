//! Live voice sessions' money (docs/decisions.md, "Live voice sessions"): a session is a
//! durable hold that grows in steps as it spends, and every response is a charge.
//!
//! A session row names the hold of the response in progress. Settling a response closes that
//! hold with its charge and places the next response's hold in the same transaction
//! ([`Store::settle_response`]), so no instant leaves the session's money unheld and every
//! response is one ledger row on a hold of its own (`tollgate audit` holds one charge to a
//! hold). Growing ([`Store::grow_session_hold`]) takes more of the balance under the same
//! conditional update every hold is placed with.
//!
//! The gateway journals, with every step and a heartbeat, what the response in progress
//! delivered as far as it measured it (`unsettled_nanos`). A session whose heartbeat stops (its
//! replica killed, or paused past the staleness) is settled from that by the sweeper
//! ([`Store::sweep_sessions`]). Every write of the session's replica is fenced by the hold's
//! state: once the sweeper closed it, a replica back from a pause finds it closed, charges
//! nothing more and hangs up.

use crate::holds::{Closed, Hold, HoldRequest, Settlement, place_hold, release_hold, settle_hold};
use crate::ids::new_id;
use crate::usage::{UsageRecord, write_usage};
use crate::{Store, StoreError, now_millis};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use tollgate_billing::Amount;

/// The seal of what a session's replica journals for the sweeper (docs/decisions.md, "Live
/// voice sessions"): an HMAC-SHA-256 of the session, its hold and the amount journaled, keyed
/// from the operator's ledger signing key — which every replica holds and the database does
/// not. Someone who can write the database but not read the key cannot raise what the
/// sweeper charges: a journal whose seal does not verify is charged nothing (the hold
/// released, the reason written). Without a signing key, journals are not sealed.
#[derive(Clone)]
pub struct JournalSeal {
    key: [u8; 32],
}

impl std::fmt::Debug for JournalSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JournalSeal(..)")
    }
}

impl JournalSeal {
    /// The seal keyed from the ledger's signing key (its own key, derived: the signing key
    /// itself signs checkpoints only).
    pub fn from_signing_key(key: &ed25519_dalek::SigningKey) -> JournalSeal {
        let mut derive = Sha256::new();
        derive.update(b"tollgate live-session journal seal v1\0");
        derive.update(key.to_bytes());
        JournalSeal {
            key: derive.finalize().into(),
        }
    }

    /// The seal of `unsettled` journaled for `session` on `hold`, in hex.
    fn seal(&self, session: &str, hold: &str, unsettled: i64) -> Option<String> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key).ok()?;
        mac.update(session.as_bytes());
        mac.update(b"\0");
        mac.update(hold.as_bytes());
        mac.update(b"\0");
        mac.update(&unsettled.to_be_bytes());
        Some(hex::encode(mac.finalize().into_bytes()))
    }
}

/// What opening a session asks of the store.
#[derive(Debug, Clone)]
pub struct SessionOpening {
    /// The account that pays.
    pub account_id: String,
    /// The key that was presented.
    pub key_id: String,
    /// The public model.
    pub model: String,
    /// The request that opened the session (the upgrade's).
    pub request_id: String,
    /// The first step: what must be held before the vendor is called.
    pub first_step: Amount,
    /// The endpoint its usage records are under (`realtime`, `live`).
    pub endpoint: String,
}

/// An opened session: its id and the hold of its first response.
#[derive(Debug, Clone)]
pub struct OpenedSession {
    /// `ses_…`
    pub id: String,
    /// The hold the first response is charged on.
    pub hold: Hold,
}

/// What a step of a session's hold came to.
#[derive(Debug)]
pub enum Step {
    /// Held: the hold now reserves this much (a grown hold's whole amount, or the next
    /// response's new hold).
    Held(Hold),
    /// The balance (or a disabled account) refused the step; the reason.
    Refused(StoreError),
    /// The session was closed elsewhere (the sweeper, after its heartbeat stopped): nothing
    /// more is charged or held by this replica.
    Fenced,
}

/// What a response's settlement came to.
#[derive(Debug)]
pub struct ResponseSettled {
    /// Whether this call charged the response (else the session was closed elsewhere).
    pub charged: bool,
    /// The next response's hold, or why there is none.
    pub next: Step,
}

/// An open session as the console lists it.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "Session"))]
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct OpenSession {
    /// `ses_…`
    pub id: String,
    /// The account that pays.
    pub account_id: String,
    /// The key that opened it.
    pub key_id: Option<String>,
    /// The public model.
    pub model: String,
    /// The hold of the response in progress.
    pub hold_id: Option<String>,
    /// Responses charged so far.
    pub responses: i64,
    /// What they were charged together.
    pub charged: Amount,
    /// Unix milliseconds.
    pub created_at: i64,
    /// The last heartbeat, Unix milliseconds.
    pub heartbeat_at: i64,
}

impl Store {
    /// Opens a session: holds `first_step` of the balance and writes the session row, in one
    /// transaction. Refused like any hold ([`StoreError::InsufficientBalance`],
    /// [`StoreError::Disabled`]).
    pub async fn open_session(
        &self,
        opening: &SessionOpening,
    ) -> Result<OpenedSession, StoreError> {
        let id = new_id("ses");
        let request = HoldRequest::new(&opening.account_id, &opening.model, opening.first_step)
            .key(&opening.key_id)
            .request(&opening.request_id);
        let mut tx = self.write_tx().await?;
        let Some(hold) = place_session_hold(&mut tx, &request, &id).await? else {
            drop(tx);
            return Err(self.refusal(&request).await);
        };
        let now = now_millis();
        sqlx::query(
            "INSERT INTO sessions (id, account_id, key_id, model, request_id, hold_id, state, unsettled_nanos,
                                   responses, charged_nanos, created_at, heartbeat_at, endpoint)
             VALUES ($1, $2, $3, $4, $5, $6, 'open', 0, 0, 0, $7, $7, $8)",
        )
        .bind(&id)
        .bind(&opening.account_id)
        .bind(&opening.key_id)
        .bind(&opening.model)
        .bind(&opening.request_id)
        .bind(&hold.id)
        .bind(now)
        .bind(&opening.endpoint)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(OpenedSession { id, hold })
    }

    /// Seals the session journals of this store with `seal` from now on (once: the gateway
    /// sets it at start from `[ledger] signing_key_file`).
    pub fn seal_session_journals(&self, seal: JournalSeal) {
        let _ = self.session_seal.set(seal);
    }

    /// `unsettled` as journaled, and its seal when journals are sealed.
    fn sealed(&self, session: &str, hold: &Hold, unsettled: Amount) -> (i64, Option<String>) {
        let unsettled = unsettled.nanos().max(0);
        let seal = self
            .session_seal
            .get()
            .and_then(|seal| seal.seal(session, &hold.id, unsettled));
        (unsettled, seal)
    }

    /// Grows the hold of the response in progress by `by`, journaling `unsettled` (what that
    /// response delivered, priced as measured) with it.
    pub async fn grow_session_hold(
        &self,
        session: &str,
        hold: &Hold,
        by: Amount,
        unsettled: Amount,
    ) -> Result<Step, StoreError> {
        if by.is_negative() {
            return Err(StoreError::InvalidAmount("a hold cannot shrink".into()));
        }
        let mut tx = self.write_tx().await?;
        let (unsettled, seal) = self.sealed(session, hold, unsettled);
        if !heartbeat(&mut tx, session, &hold.id, unsettled, seal).await? {
            return Ok(Step::Fenced);
        }
        let grown = sqlx::query(
            "UPDATE accounts SET held_nanos = held_nanos + $1
             WHERE id = $2 AND disabled = 0 AND balance_nanos - held_nanos - leased_nanos >= $1",
        )
        .bind(by.nanos())
        .bind(&hold.account_id)
        .execute(&mut *tx)
        .await?;
        if grown.rows_affected() == 0 {
            // The heartbeat is worth keeping even when the step is refused.
            tx.commit().await?;
            let request = HoldRequest::new(&hold.account_id, "", by);
            return Ok(Step::Refused(self.refusal(&request).await));
        }
        let (amount,): (i64,) = sqlx::query_as(
            "UPDATE holds SET amount_nanos = amount_nanos + $1 WHERE id = $2 AND state = 'open'
             RETURNING amount_nanos",
        )
        .bind(by.nanos())
        .bind(&hold.id)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Step::Held(Hold {
            amount: Amount::from_nanos(amount),
            ..hold.clone()
        }))
    }

    /// The session's heartbeat, with what the response in progress delivered as measured.
    /// False when the session was closed elsewhere (the sweeper): the fence.
    pub async fn journal_session(
        &self,
        session: &str,
        hold: &Hold,
        unsettled: Amount,
    ) -> Result<bool, StoreError> {
        let mut tx = self.write_tx().await?;
        let (unsettled, seal) = self.sealed(session, hold, unsettled);
        let open = heartbeat(&mut tx, session, &hold.id, unsettled, seal).await?;
        tx.commit().await?;
        Ok(open)
    }

    /// Charges a response on its hold and places the next response's hold of `next`, in one
    /// transaction: the response's ledger row and usage record, and the session's next step.
    /// The charge stands when the next step is refused (the session then ends).
    pub async fn settle_response(
        &self,
        session: &str,
        hold: &Hold,
        settlement: Settlement,
        usage: Option<UsageRecord>,
        next: Amount,
    ) -> Result<ResponseSettled, StoreError> {
        let mut tx = self.write_tx().await?;
        let actual = settlement.actual;
        if settle_hold(&mut tx, &hold.id, settlement).await? == Closed::Already {
            return Ok(ResponseSettled {
                charged: false,
                next: Step::Fenced,
            });
        }
        if let Some(mut usage) = usage {
            usage.hold_id = Some(hold.id.clone());
            write_usage(&mut *tx, &[&usage]).await?;
        }
        let (model, key_id, request_id): (String, Option<String>, Option<String>) =
            sqlx::query_as("SELECT model, key_id, request_id FROM sessions WHERE id = $1")
                .bind(session)
                .fetch_one(&mut *tx)
                .await?;
        let mut request = HoldRequest::new(&hold.account_id, &model, next);
        request.key_id = key_id;
        request.request_id = request_id;
        let placed = place_session_hold(&mut tx, &request, session).await?;
        sqlx::query(
            "UPDATE sessions SET hold_id = $1, unsettled_nanos = 0, responses = responses + 1,
                                 charged_nanos = charged_nanos + $2, heartbeat_at = $3
             WHERE id = $4",
        )
        .bind(placed.as_ref().map(|h| h.id.clone()))
        .bind(actual.nanos())
        .bind(now_millis())
        .bind(session)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        let next = match placed {
            Some(hold) => Step::Held(hold),
            None => Step::Refused(self.refusal(&request).await),
        };
        Ok(ResponseSettled {
            charged: true,
            next,
        })
    }

    /// Ends a session: the response in progress charged by `last` (or its hold released when
    /// `None`), the session's own usage record written, and the row closed with `reason`.
    /// False when the session was closed elsewhere first.
    pub async fn close_session(
        &self,
        session: &str,
        hold: Option<&Hold>,
        last: Option<(Settlement, Option<UsageRecord>)>,
        summary: Option<UsageRecord>,
        reason: &str,
    ) -> Result<bool, StoreError> {
        let mut tx = self.write_tx().await?;
        let closed = sqlx::query(
            "UPDATE sessions SET state = 'closed', closed_at = $1, close_reason = $2, hold_id = NULL,
                                 unsettled_nanos = 0
             WHERE id = $3 AND state = 'open'",
        )
        .bind(now_millis())
        .bind(reason)
        .bind(session)
        .execute(&mut *tx)
        .await?;
        if closed.rows_affected() == 0 {
            return Ok(false);
        }
        if let Some(hold) = hold {
            match last {
                Some((settlement, usage)) => {
                    let actual = settlement.actual;
                    if settle_hold(&mut tx, &hold.id, settlement).await? == Closed::Now {
                        if let Some(mut usage) = usage {
                            usage.hold_id = Some(hold.id.clone());
                            write_usage(&mut *tx, &[&usage]).await?;
                        }
                        sqlx::query(
                            "UPDATE sessions SET responses = responses + 1, charged_nanos = charged_nanos + $1
                             WHERE id = $2",
                        )
                        .bind(actual.nanos())
                        .bind(session)
                        .execute(&mut *tx)
                        .await?;
                    }
                }
                None => {
                    release_hold(&mut tx, &hold.id, reason).await?;
                }
            }
        }
        if let Some(summary) = summary {
            write_usage(&mut *tx, &[&summary]).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Settles the sessions whose heartbeat is older than `stale` (their replica was killed or
    /// paused): the response in progress charged what was journaled of it, never more than
    /// its hold, the rest released, the session closed. Returns how many it closed.
    pub async fn sweep_sessions(&self, stale: std::time::Duration) -> Result<u64, StoreError> {
        let cutoff =
            now_millis().saturating_sub(i64::try_from(stale.as_millis()).unwrap_or(i64::MAX));
        type Stale = (
            String,
            Option<String>,
            i64,
            String,
            Option<String>,
            String,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        let rows: Vec<Stale> = sqlx::query_as(
            "SELECT id, hold_id, unsettled_nanos, account_id, key_id, model, request_id, journal_mac, endpoint
             FROM sessions WHERE state = 'open' AND heartbeat_at < $1",
        )
        .bind(cutoff)
        .fetch_all(self.pool())
        .await?;
        let mut swept = 0;
        for (id, hold_id, unsettled, account_id, key_id, model, request_id, mac, endpoint) in rows {
            // A sealed journal is believed only as sealed: a figure written past the seal (by
            // someone who can write the database, not read the signing key) charges nothing.
            let forged = unsettled > 0
                && self.session_seal.get().is_some_and(|seal| {
                    let hold = hold_id.as_deref().unwrap_or_default();
                    mac.is_none() || seal.seal(&id, hold, unsettled) != mac
                });
            // The session's usage records, as its own replica would have written them.
            let record = |kind: &'static str| {
                // A session of a release before its endpoint was kept: OpenAI Realtime's.
                let endpoint = match endpoint.as_deref() {
                    Some("live") => "live",
                    _ => "realtime",
                };
                let mut record = UsageRecord::new(kind, account_id.clone(), endpoint);
                record.key_id.clone_from(&key_id);
                record.model = Some(model.clone());
                record.request_id.clone_from(&request_id);
                record.status = 200;
                record
            };
            let mut tx = self.write_tx().await?;
            let closed = sqlx::query(
                "UPDATE sessions SET state = 'closed', closed_at = $1, close_reason = $2, hold_id = NULL,
                                     unsettled_nanos = 0
                 WHERE id = $3 AND state = 'open' AND heartbeat_at < $4",
            )
            .bind(now_millis())
            .bind("swept: the session's replica stopped")
            .bind(&id)
            .bind(cutoff)
            .execute(&mut *tx)
            .await?;
            if closed.rows_affected() == 0 {
                continue;
            }
            if let Some(hold_id) = hold_id {
                let held: Option<(i64,)> = sqlx::query_as(
                    "SELECT amount_nanos FROM holds WHERE id = $1 AND state = 'open'",
                )
                .bind(&hold_id)
                .fetch_optional(&mut *tx)
                .await?;
                if let Some((held,)) = held {
                    let charge = Amount::from_nanos(unsettled.clamp(0, held));
                    if forged {
                        tracing::error!(session = %id, "a swept session's journal does not verify against its seal: nothing charged");
                        release_hold(
                            &mut tx,
                            &hold_id,
                            "swept: the journal's seal did not verify; nothing charged",
                        )
                        .await?;
                    } else if charge.is_zero() {
                        release_hold(&mut tx, &hold_id, "swept: nothing delivered").await?;
                    } else {
                        let note = "swept: the session's replica stopped; charged what it journaled as delivered";
                        let settlement = Settlement::new(charge).estimated().note(note).priced_at(
                            None,
                            Amount::from_nanos(held),
                            "the session's hold",
                        );
                        settle_hold(&mut tx, &hold_id, settlement).await?;
                        let mut response = record("response");
                        response.charge = charge;
                        response.hold = Amount::from_nanos(held);
                        response.estimated = true;
                        response.note = Some(note.into());
                        response.hold_id = Some(hold_id.clone());
                        write_usage(&mut *tx, &[&response]).await?;
                        sqlx::query(
                            "UPDATE sessions SET responses = responses + 1, charged_nanos = charged_nanos + $1
                             WHERE id = $2",
                        )
                        .bind(charge.nanos())
                        .bind(&id)
                        .execute(&mut *tx)
                        .await?;
                    }
                }
            }
            let mut summary = record("session");
            summary.note = Some(if forged {
                format!(
                    "session {id}: swept, its replica stopped; its journal's seal did not verify: nothing charged"
                )
            } else {
                format!("session {id}: swept, its replica stopped")
            });
            write_usage(&mut *tx, &[&summary]).await?;
            tx.commit().await?;
            tracing::warn!(session = %id, "swept a session whose replica stopped");
            swept += 1;
        }
        Ok(swept)
    }

    /// The open sessions (of `account_id`, when given), newest first, at most `limit`.
    pub async fn open_sessions(
        &self,
        account_id: Option<&str>,
        limit: i64,
    ) -> Result<Vec<OpenSession>, StoreError> {
        type Row = (
            String,
            String,
            Option<String>,
            String,
            Option<String>,
            i64,
            i64,
            i64,
            i64,
        );
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT id, account_id, key_id, model, hold_id, responses, charged_nanos, created_at, heartbeat_at
             FROM sessions WHERE state = 'open' AND ($1 = '' OR account_id = $1)
             ORDER BY created_at DESC, id DESC LIMIT $2",
        )
        .bind(account_id.unwrap_or_default())
        .bind(limit)
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| OpenSession {
                id: r.0,
                account_id: r.1,
                key_id: r.2,
                model: r.3,
                hold_id: r.4,
                responses: r.5,
                charged: Amount::from_nanos(r.6),
                created_at: r.7,
                heartbeat_at: r.8,
            })
            .collect())
    }
}

/// Places a hold of the session, marked as its own so that no sweep of orphaned request holds
/// takes it for one.
async fn place_session_hold(
    tx: &mut sqlx::AnyConnection,
    request: &HoldRequest,
    session: &str,
) -> Result<Option<Hold>, StoreError> {
    let Some(hold) = place_hold(tx, request).await? else {
        return Ok(None);
    };
    sqlx::query("UPDATE holds SET session_id = $1 WHERE id = $2")
        .bind(session)
        .bind(&hold.id)
        .execute(&mut *tx)
        .await?;
    Ok(Some(hold))
}

/// The session's heartbeat, fenced: true when `hold` is still its open hold.
async fn heartbeat(
    tx: &mut sqlx::AnyConnection,
    session: &str,
    hold: &str,
    unsettled: i64,
    seal: Option<String>,
) -> Result<bool, StoreError> {
    let beat = sqlx::query(
        "UPDATE sessions SET heartbeat_at = $1, unsettled_nanos = $2, journal_mac = $5
         WHERE id = $3 AND state = 'open' AND hold_id = $4",
    )
    .bind(now_millis())
    .bind(unsettled)
    .bind(session)
    .bind(hold)
    .bind(seal)
    .execute(&mut *tx)
    .await?;
    Ok(beat.rows_affected() == 1)
}
