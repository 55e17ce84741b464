//! Payments (docs/decisions.md, "Payments"): top-ups an account pays through a payment provider,
//! and what happens to them afterwards.
//!
//! A payment is a row the gateway writes *before* it asks the provider for anything: its
//! account, its price in the currency's minor units and the balance it buys, fixed then by the
//! configured rate. The provider's webhook events name it (the gateway set its id in their
//! metadata); what they say is checked against it, so a payment is credited only for what the
//! gateway asked, once:
//!
//! * **paid** ([`Store::credit_payment`]): one conditional `UPDATE … WHERE status <> 'paid'` in
//!   the transaction that writes its ledger row (kind `payment`), so a webhook delivered twice,
//!   the session's and the PaymentIntent's events for one payment, and two replicas receiving
//!   one event at once credit it once;
//! * **refunded** ([`Store::refund_payment`]): the provider's running total refunded, applied
//!   by compare-and-swap on `refunded_minor`, so events in any order debit the difference once,
//!   as a ledger row of kind `refund`;
//! * **disputed** ([`Store::dispute_payment`]): a chargeback debits when it opens (or closes
//!   lost, if that comes first) and credits back when it closes won.
//!
//! A refund or chargeback takes what it debits from the account's available money first (the
//! replicas' leases recalled as an operator's correction recalls them); what is left takes the
//! balance below zero, said in the row's anomaly and its `overdraw_nanos`: never silently, and
//! the account spends nothing more until it is topped up again.

use crate::holds::LedgerKind;
use crate::ids::new_id;
use crate::{Store, StoreError, now_millis};
use serde::Serialize;
use sqlx::Row as _;
use tollgate_billing::Amount;

/// The throttle scope (`crate::throttle`) webhook deliveries refused for their signature are
/// counted in, per minute, across replicas: what the `payment_signature_failures` alert reads.
pub const SIGNATURE_FAILURES: &str = "payments:stripe:signature-failures";

/// Where a payment is.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PaymentStatus {
    /// Asked for, not paid yet.
    Open,
    /// Paid and credited.
    Paid,
    /// The checkout expired or the payment method failed: nothing was credited.
    Unpaid,
    /// The provider refused to start it (or an automatic top-up was declined).
    Failed,
}

impl PaymentStatus {
    fn as_str(self) -> &'static str {
        match self {
            PaymentStatus::Open => "open",
            PaymentStatus::Paid => "paid",
            PaymentStatus::Unpaid => "unpaid",
            PaymentStatus::Failed => "failed",
        }
    }

    fn parse(text: &str) -> Result<PaymentStatus, StoreError> {
        Ok(match text {
            "open" => PaymentStatus::Open,
            "paid" => PaymentStatus::Paid,
            "unpaid" => PaymentStatus::Unpaid,
            "failed" => PaymentStatus::Failed,
            other => return Err(StoreError::Corrupt(format!("payment status {other:?}"))),
        })
    }
}

/// One payment.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Payment {
    /// `pay_…`
    pub id: String,
    /// The account it tops up.
    pub account_id: String,
    /// `stripe`.
    pub provider: String,
    /// An automatic top-up (below the account's threshold), not one a person started.
    pub automatic: bool,
    /// The portal person who started it.
    pub person_id: Option<String>,
    /// Lower case (`usd`).
    pub currency: String,
    /// Its price in the currency's minor units (cents).
    pub amount_minor: i64,
    /// The balance it buys.
    pub amount: Amount,
    /// Where it is.
    pub status: PaymentStatus,
    /// The provider's checkout (`cs_…`).
    pub checkout_id: Option<String>,
    /// The provider's page where it is paid, while open.
    pub checkout_url: Option<String>,
    /// The provider's payment (`pi_…`), once known.
    pub intent_id: Option<String>,
    /// Its credit (`led_…`, kind `payment`), once paid.
    pub ledger_id: Option<String>,
    /// Refunded so far, in minor units.
    pub refunded_minor: i64,
    /// A chargeback: `open`, `won` or `lost`.
    pub dispute: Option<String>,
    /// Why it failed, in the provider's words.
    pub failure: Option<String>,
    /// Unix milliseconds.
    pub created_at: i64,
    /// When it was credited (Unix milliseconds).
    pub paid_at: Option<i64>,
}

const PAYMENT_COLUMNS: &str = "id, account_id, provider, automatic, person_id, currency, \
    amount_minor, amount_nanos, status, checkout_id, checkout_url, intent_id, ledger_id, \
    refunded_minor, dispute, failure, created_at, paid_at";

fn payment_from_row(row: &sqlx::any::AnyRow) -> Result<Payment, StoreError> {
    let automatic: i64 = row.try_get(3)?;
    let status: String = row.try_get(8)?;
    Ok(Payment {
        id: row.try_get(0)?,
        account_id: row.try_get(1)?,
        provider: row.try_get(2)?,
        automatic: automatic != 0,
        person_id: row.try_get(4)?,
        currency: row.try_get(5)?,
        amount_minor: row.try_get(6)?,
        amount: Amount::from_nanos(row.try_get(7)?),
        status: PaymentStatus::parse(&status)?,
        checkout_id: row.try_get(9)?,
        checkout_url: row.try_get(10)?,
        intent_id: row.try_get(11)?,
        ledger_id: row.try_get(12)?,
        refunded_minor: row.try_get(13)?,
        dispute: row.try_get(14)?,
        failure: row.try_get(15)?,
        created_at: row.try_get(16)?,
        paid_at: row.try_get(17)?,
    })
}

/// A payment about to be asked of the provider.
#[derive(Debug, Clone)]
pub struct NewPayment<'a> {
    /// The account it tops up.
    pub account_id: &'a str,
    /// `stripe`.
    pub provider: &'a str,
    /// Started by the automatic top-up.
    pub automatic: bool,
    /// The portal person who started it.
    pub person_id: Option<&'a str>,
    /// Lower case.
    pub currency: &'a str,
    /// Its price in minor units.
    pub amount_minor: i64,
    /// The balance it buys.
    pub amount: Amount,
}

/// What the provider says was received.
#[derive(Debug, Clone)]
pub struct Received<'a> {
    /// The gateway's payment id, from the metadata it set.
    pub payment_id: &'a str,
    /// In minor units.
    pub amount_minor: i64,
    /// Lower case.
    pub currency: &'a str,
    /// The provider's payment (`pi_…`).
    pub intent_id: Option<&'a str>,
    /// The provider's customer (`cus_…`).
    pub customer_id: Option<&'a str>,
    /// The saved card (`pm_…`), for automatic top-ups.
    pub payment_method: Option<&'a str>,
}

/// What a money event did.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PaymentChange {
    /// The payment.
    pub payment_id: String,
    /// The account.
    pub account_id: String,
    /// The ledger row written (`led_…`).
    pub ledger_id: String,
    /// Its signed amount.
    pub amount: Amount,
    /// The balance after it.
    pub balance: Amount,
    /// What a refund or chargeback took beyond the money available: money spent already.
    pub overdraw: Amount,
}

/// Why a money event changed nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotApplied {
    /// It was applied before (a redelivery, the other event of one payment): nothing to do.
    #[error("already applied")]
    Already,
    /// No payment of the gateway's has that id or provider payment: not one of ours, or (a
    /// refund before its payment's event) not yet known — the provider delivers it again.
    #[error("no payment {0} is known (yet)")]
    Unknown(String),
    /// A refund or chargeback of a payment not credited yet: delivered again later.
    #[error("payment {0} is not credited yet")]
    NotYetPaid(String),
    /// What the provider says does not match what the gateway asked: refused, never credited.
    #[error("payment {payment_id}: {detail}")]
    Mismatch {
        /// The payment.
        payment_id: String,
        /// What differs.
        detail: String,
    },
}

/// The cause of a reversal row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DisputeStatus {
    /// Opened (the bank took the money).
    Open,
    /// Closed in the merchant's favour (the money came back).
    Won,
    /// Closed in the customer's favour.
    Lost,
}

/// An account's automatic top-up: below `threshold` available, `amount_minor` is charged to
/// the saved card, at most `daily_cap_minor` a day (UTC).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AutoTopup {
    /// The account.
    pub account_id: String,
    /// Top up when the available balance falls below this.
    pub threshold: Amount,
    /// What each top-up charges, in minor units.
    pub amount_minor: i64,
    /// The most charged in a day (UTC), in minor units.
    pub daily_cap_minor: i64,
    /// On.
    pub enabled: bool,
    /// Why it stopped by itself (a declined card), until set again.
    pub paused: Option<String>,
    /// Unix milliseconds.
    pub updated_at: i64,
    /// Who set it (`portal:EMAIL`, `token:NAME`).
    pub updated_by: String,
}

/// The balance units `part` of `whole` minor units buy, of a payment that bought `nanos` for
/// `whole`: rounded down, so that the parts of a payment add up to no more than it, and all of
/// it to exactly it.
fn share(nanos: i64, part: i64, whole: i64) -> i64 {
    if whole <= 0 {
        return 0;
    }
    let share = i128::from(nanos) * i128::from(part.clamp(0, whole)) / i128::from(whole);
    i64::try_from(share).unwrap_or(nanos)
}

impl Store {
    /// Records a payment about to be asked of the provider (status `open`). An automatic one is
    /// refused with [`StoreError::AlreadyExists`] while another of the account's is open.
    pub async fn create_payment(&self, new: &NewPayment<'_>) -> Result<Payment, StoreError> {
        if new.amount_minor <= 0 || new.amount <= Amount::ZERO {
            return Err(StoreError::InvalidAmount("a payment of nothing".to_owned()));
        }
        let id = new_id("pay");
        let now = now_millis();
        let done = sqlx::query(
            "INSERT INTO payments (id, account_id, provider, automatic, person_id, currency,
                amount_minor, amount_nanos, status, created_at)
             SELECT $1, id, $2, $3, $4, $5, $6, $7, 'open', $8 FROM accounts WHERE id = $9",
        )
        .bind(&id)
        .bind(new.provider)
        .bind(i64::from(new.automatic))
        .bind(new.person_id)
        .bind(new.currency)
        .bind(new.amount_minor)
        .bind(new.amount.nanos())
        .bind(now)
        .bind(new.account_id)
        .execute(self.pool())
        .await;
        match done {
            Ok(done) if done.rows_affected() == 0 => Err(StoreError::NotFound(format!(
                "account {:?}",
                new.account_id
            ))),
            Ok(_) => Ok(Payment {
                id,
                account_id: new.account_id.to_owned(),
                provider: new.provider.to_owned(),
                automatic: new.automatic,
                person_id: new.person_id.map(str::to_owned),
                currency: new.currency.to_owned(),
                amount_minor: new.amount_minor,
                amount: new.amount,
                status: PaymentStatus::Open,
                checkout_id: None,
                checkout_url: None,
                intent_id: None,
                ledger_id: None,
                refunded_minor: 0,
                dispute: None,
                failure: None,
                created_at: now,
                paid_at: None,
            }),
            Err(sqlx::Error::Database(d)) if d.is_unique_violation() => Err(
                StoreError::AlreadyExists("an automatic top-up of this account is open".into()),
            ),
            Err(e) => Err(e.into()),
        }
    }

    /// One payment.
    pub async fn payment(&self, id: &str) -> Result<Payment, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {PAYMENT_COLUMNS} FROM payments WHERE id = $1"
        )))
        .bind(id)
        .fetch_optional(self.pool())
        .await?;
        match row {
            Some(row) => payment_from_row(&row),
            None => Err(StoreError::NotFound(format!("payment {id:?}"))),
        }
    }

    /// Payments newest first, of one account or of all, at most `limit`, older than the
    /// payment `before` when given.
    pub async fn payments(
        &self,
        account_id: Option<&str>,
        before: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Payment>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {PAYMENT_COLUMNS} FROM payments
             WHERE ($1 IS NULL OR account_id = $1) AND ($2 IS NULL OR id < $2)
             ORDER BY id DESC LIMIT $3"
        )))
        .bind(account_id)
        .bind(before)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(payment_from_row).collect()
    }

    /// Automatic payments still open with no answer from the provider (no `pi_…` known), made
    /// before `before` (Unix ms), oldest first: the calls that may never have reached it
    /// (`tollgate_payments::automatic`, which asks again or gives up).
    pub async fn unanswered_automatic_payments(
        &self,
        before: i64,
    ) -> Result<Vec<Payment>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {PAYMENT_COLUMNS} FROM payments
             WHERE automatic = 1 AND status = 'open' AND intent_id IS NULL AND created_at < $1
             ORDER BY created_at LIMIT 100"
        )))
        .bind(before)
        .fetch_all(self.pool())
        .await?;
        rows.iter().map(payment_from_row).collect()
    }

    /// The provider answered: the checkout where the payment is made, or its payment (an
    /// automatic top-up's PaymentIntent).
    pub async fn payment_started(
        &self,
        id: &str,
        checkout: Option<(&str, &str)>,
        intent_id: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE payments SET checkout_id = COALESCE($1, checkout_id),
                checkout_url = COALESCE($2, checkout_url), intent_id = COALESCE(intent_id, $3)
             WHERE id = $4",
        )
        .bind(checkout.map(|c| c.0))
        .bind(checkout.map(|c| c.1))
        .bind(intent_id)
        .bind(id)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The payment ended unpaid (`Unpaid`: the checkout expired, the payment method failed) or
    /// could not start (`Failed`, with the provider's words). A payment credited already stays
    /// paid; an automatic one that failed pauses the account's automatic top-up.
    pub async fn payment_not_made(
        &self,
        id: &str,
        status: PaymentStatus,
        why: Option<&str>,
    ) -> Result<bool, StoreError> {
        let mut tx = self.write_tx().await?;
        let changed: Option<(String, i64)> = sqlx::query_as(
            "UPDATE payments SET status = $1, failure = COALESCE($2, failure), checkout_url = NULL
             WHERE id = $3 AND status = 'open' RETURNING account_id, automatic",
        )
        .bind(status.as_str())
        .bind(why)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((account_id, 1)) = &changed {
            sqlx::query(
                "UPDATE auto_topups SET paused = $1, updated_at = $2 WHERE account_id = $3",
            )
            .bind(format!(
                "automatic top-up {id} was not paid: {}",
                why.unwrap_or("the payment failed")
            ))
            .bind(now_millis())
            .bind(account_id)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(changed.is_some())
    }

    /// Credits a payment the provider says was received, once. The amount and currency must be
    /// the payment's; the credit is the balance fixed when it was made.
    pub async fn credit_payment(
        &self,
        received: &Received<'_>,
    ) -> Result<Result<PaymentChange, NotApplied>, StoreError> {
        let id = received.payment_id;
        let mut tx = self.write_tx().await?;
        let Some(payment) = locked_payment(&mut tx, id).await? else {
            return Ok(Err(NotApplied::Unknown(id.to_owned())));
        };
        if received.amount_minor != payment.amount_minor
            || !received.currency.eq_ignore_ascii_case(&payment.currency)
        {
            return Ok(Err(NotApplied::Mismatch {
                payment_id: id.to_owned(),
                detail: format!(
                    "the provider says {} {} was received; the payment asked {} {}",
                    received.amount_minor,
                    received.currency,
                    payment.amount_minor,
                    payment.currency
                ),
            }));
        }
        if let (Some(known), Some(said)) = (&payment.intent_id, received.intent_id)
            && known != said
        {
            return Ok(Err(NotApplied::Mismatch {
                payment_id: id.to_owned(),
                detail: format!("the provider's payment is {said}, the payment's is {known}"),
            }));
        }
        if let Some(said) = received.intent_id {
            let other: Option<(String,)> =
                sqlx::query_as("SELECT id FROM payments WHERE intent_id = $1 AND id <> $2")
                    .bind(said)
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await?;
            if let Some((other,)) = other {
                return Ok(Err(NotApplied::Mismatch {
                    payment_id: id.to_owned(),
                    detail: format!("the provider's payment {said} is already payment {other}'s"),
                }));
            }
        }
        remember_card(&mut tx, &payment, received).await?;
        if payment.status == PaymentStatus::Paid {
            tx.commit().await?;
            return Ok(Err(NotApplied::Already));
        }
        let note = format!(
            "payment {id} ({} {} minor units through {}{})",
            payment.amount_minor,
            payment.currency,
            payment.provider,
            received
                .intent_id
                .map(|pi| format!(", {pi}"))
                .unwrap_or_default()
        );
        let crate::accounts::CreditRow {
            account, ledger_id, ..
        } = crate::accounts::credit_in(
            &mut tx,
            &payment.account_id,
            payment.amount,
            LedgerKind::Payment,
            Some(&note),
            false,
        )
        .await?;
        let claimed = sqlx::query(
            "UPDATE payments SET status = 'paid', ledger_id = $1, paid_at = $2, checkout_url = NULL,
                intent_id = COALESCE(intent_id, $3)
             WHERE id = $4 AND status <> 'paid'",
        )
        .bind(&ledger_id)
        .bind(now_millis())
        .bind(received.intent_id)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if claimed.rows_affected() == 0 {
            // Credited by another transaction since the read (SQLite without the row lock):
            // this one's ledger row goes with the rollback.
            return Ok(Err(NotApplied::Already));
        }
        tx.commit().await?;
        Ok(Ok(PaymentChange {
            payment_id: id.to_owned(),
            account_id: payment.account_id,
            ledger_id,
            amount: payment.amount,
            balance: account.balance,
            overdraw: Amount::ZERO,
        }))
    }

    /// The payment whose provider payment is `intent_id`.
    async fn payment_by_intent(&self, intent_id: &str) -> Result<Option<Payment>, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {PAYMENT_COLUMNS} FROM payments WHERE intent_id = $1"
        )))
        .bind(intent_id)
        .fetch_optional(self.pool())
        .await?;
        row.as_ref().map(payment_from_row).transpose()
    }

    /// A refund: `refunded_minor` is the provider's running total refunded of the payment
    /// `intent_id` (charge `charge_id`). Debits what it adds to the total recorded, once.
    pub async fn refund_payment(
        &self,
        intent_id: &str,
        charge_id: &str,
        refunded_minor: i64,
        currency: &str,
    ) -> Result<Result<PaymentChange, NotApplied>, StoreError> {
        let Some(payment) = self.payment_by_intent(intent_id).await? else {
            return Ok(Err(NotApplied::Unknown(intent_id.to_owned())));
        };
        if !currency.eq_ignore_ascii_case(&payment.currency)
            || !(0..=payment.amount_minor).contains(&refunded_minor)
        {
            return Ok(Err(NotApplied::Mismatch {
                payment_id: payment.id.clone(),
                detail: format!(
                    "a refund total of {refunded_minor} {currency} of a payment of {} {}",
                    payment.amount_minor, payment.currency
                ),
            }));
        }
        self.reverse(
            &payment,
            Reversing::Refund {
                charge_id,
                refunded_minor,
            },
        )
        .await
    }

    /// A chargeback of the payment `intent_id`, as the provider reports it: opened (`Open`:
    /// the bank took `amount_minor`), or closed (`Won`: it came back; `Lost`). Each step
    /// applies once, in whatever order the events come.
    pub async fn dispute_payment(
        &self,
        intent_id: &str,
        dispute_id: &str,
        amount_minor: i64,
        currency: &str,
        status: DisputeStatus,
    ) -> Result<Result<PaymentChange, NotApplied>, StoreError> {
        let Some(payment) = self.payment_by_intent(intent_id).await? else {
            return Ok(Err(NotApplied::Unknown(intent_id.to_owned())));
        };
        if !currency.eq_ignore_ascii_case(&payment.currency)
            || !(1..=payment.amount_minor).contains(&amount_minor)
        {
            return Ok(Err(NotApplied::Mismatch {
                payment_id: payment.id.clone(),
                detail: format!(
                    "a chargeback of {amount_minor} {currency} of a payment of {} {}",
                    payment.amount_minor, payment.currency
                ),
            }));
        }
        self.reverse(
            &payment,
            Reversing::Dispute {
                dispute_id,
                amount_minor,
                status,
            },
        )
        .await
    }

    /// Applies a refund or chargeback step, taking only what is available first (with the
    /// account's leases recalled, as an operator's correction recalls them,
    /// [`Store::recalling`]), then, if that is not enough, all of it, below zero (the rule in
    /// this module's head).
    async fn reverse(
        &self,
        payment: &Payment,
        what: Reversing<'_>,
    ) -> Result<Result<PaymentChange, NotApplied>, StoreError> {
        let first = self
            .recalling(&payment.account_id, || {
                Box::pin(self.reverse_once(&payment.id, what, false))
            })
            .await;
        match first {
            Err(StoreError::NotAvailable { .. }) => {
                self.reverse_once(&payment.id, what, true).await
            }
            other => other,
        }
    }

    async fn reverse_once(
        &self,
        payment_id: &str,
        what: Reversing<'_>,
        allow_negative: bool,
    ) -> Result<Result<PaymentChange, NotApplied>, StoreError> {
        let mut tx = self.write_tx().await?;
        let payment = locked_payment(&mut tx, payment_id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("payment {payment_id:?}")))?;
        if payment.status != PaymentStatus::Paid {
            return Ok(Err(NotApplied::NotYetPaid(payment.id)));
        }
        let done = match what {
            Reversing::Refund {
                charge_id,
                refunded_minor,
            } => refund_in(&mut tx, &payment, charge_id, refunded_minor, allow_negative).await?,
            Reversing::Dispute {
                dispute_id,
                amount_minor,
                status,
            } => {
                dispute_in(
                    &mut tx,
                    &payment,
                    dispute_id,
                    amount_minor,
                    status,
                    allow_negative,
                )
                .await?
            }
        };
        tx.commit().await?;
        Ok(done)
    }

    /// Counts `count` webhook deliveries refused for their signature, in the minute of `now`
    /// (Unix ms), for the `payment_signature_failures` alert.
    pub async fn count_signature_failures(&self, count: u64, now: i64) -> Result<(), StoreError> {
        let window_start = now - now.rem_euclid(60_000);
        sqlx::query(
            "INSERT INTO throttle_counts (scope, window_start, count) VALUES ($1, $2, $3)
             ON CONFLICT (scope, window_start)
             DO UPDATE SET count = throttle_counts.count + $3",
        )
        .bind(SIGNATURE_FAILURES)
        .bind(window_start)
        .bind(i64::try_from(count).unwrap_or(i64::MAX))
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// Webhook deliveries refused for their signature in the minutes from `since` (Unix ms).
    pub async fn signature_failures_since(&self, since: i64) -> Result<u64, StoreError> {
        let (count,): (i64,) = sqlx::query_as(
            "SELECT CAST(COALESCE(SUM(count), 0) AS BIGINT) FROM throttle_counts
             WHERE scope = $1 AND window_start >= $2",
        )
        .bind(SIGNATURE_FAILURES)
        .bind(since - since.rem_euclid(60_000))
        .fetch_one(self.pool())
        .await?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    /// Refunds and chargebacks since `since` (Unix ms) that took money already spent (an
    /// overdraw recorded on their ledger row): ledger id, account, payment, cause, amount,
    /// overdraw, balance after, oldest first.
    pub async fn refunds_after_spend(
        &self,
        since: i64,
    ) -> Result<Vec<(String, String, String, String, Amount, Amount, Amount)>, StoreError> {
        type Row = (String, String, String, String, i64, i64, i64);
        let rows: Vec<Row> = sqlx::query_as(
            // From the reversals (few, indexed by time) to their rows by primary key: never a
            // scan of the ledger.
            "SELECT l.id, l.account_id, r.payment_id, r.cause, l.amount_nanos, l.overdraw_nanos,
                l.balance_after_nanos
             FROM payment_reversals r JOIN ledger l ON l.id = r.ledger_id
             WHERE r.created_at >= $1 AND l.kind = 'refund' AND l.overdraw_nanos > 0
             ORDER BY r.created_at, l.id",
        )
        .bind(since)
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(|(id, account, payment, cause, amount, overdraw, balance)| {
                (
                    id,
                    account,
                    payment,
                    cause,
                    Amount::from_nanos(amount),
                    Amount::from_nanos(overdraw),
                    Amount::from_nanos(balance),
                )
            })
            .collect())
    }

    /// Sets an account's automatic top-up (clearing a pause).
    pub async fn set_auto_topup(&self, topup: &AutoTopup) -> Result<AutoTopup, StoreError> {
        let now = now_millis();
        let done = sqlx::query(
            "INSERT INTO auto_topups (account_id, threshold_nanos, amount_minor, daily_cap_minor,
                enabled, paused, updated_at, updated_by)
             SELECT id, $1, $2, $3, $4, NULL, $5, $6 FROM accounts WHERE id = $7
             ON CONFLICT (account_id) DO UPDATE SET threshold_nanos = $1, amount_minor = $2,
                daily_cap_minor = $3, enabled = $4, paused = NULL, updated_at = $5,
                updated_by = $6",
        )
        .bind(topup.threshold.nanos())
        .bind(topup.amount_minor)
        .bind(topup.daily_cap_minor)
        .bind(i64::from(topup.enabled))
        .bind(now)
        .bind(&topup.updated_by)
        .bind(&topup.account_id)
        .execute(self.pool())
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!(
                "account {:?}",
                topup.account_id
            )));
        }
        self.auto_topup(&topup.account_id)
            .await?
            .ok_or_else(|| StoreError::Corrupt("an automatic top-up just written".into()))
    }

    /// An account's automatic top-up, if it has one.
    pub async fn auto_topup(&self, account_id: &str) -> Result<Option<AutoTopup>, StoreError> {
        type Row = (String, i64, i64, i64, i64, Option<String>, i64, String);
        let row: Option<Row> = sqlx::query_as(
            "SELECT account_id, threshold_nanos, amount_minor, daily_cap_minor, enabled, paused,
                updated_at, updated_by FROM auto_topups WHERE account_id = $1",
        )
        .bind(account_id)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.map(
            |(account_id, threshold, amount_minor, daily_cap_minor, enabled, paused, at, by)| {
                AutoTopup {
                    account_id,
                    threshold: Amount::from_nanos(threshold),
                    amount_minor,
                    daily_cap_minor,
                    enabled: enabled != 0,
                    paused,
                    updated_at: at,
                    updated_by: by,
                }
            },
        ))
    }

    /// The provider's customer and saved card of an account, once a payment left them.
    pub async fn payment_method(
        &self,
        account_id: &str,
    ) -> Result<Option<(String, Option<String>)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT customer_id, payment_method FROM payment_methods WHERE account_id = $1",
        )
        .bind(account_id)
        .fetch_optional(self.pool())
        .await?)
    }

    /// Accounts due an automatic top-up at `now` (Unix ms): on, not paused, a card saved, the
    /// available balance below the threshold, none open, and today's (UTC) automatic top-ups
    /// plus one more within the daily cap. With each, its top-up and card.
    pub async fn auto_topups_due(
        &self,
        now: i64,
    ) -> Result<Vec<(AutoTopup, String, String)>, StoreError> {
        let day_start = now - now.rem_euclid(86_400_000);
        type Row = (String, i64, i64, i64, i64, i64, String, String, String);
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT t.account_id, t.threshold_nanos, t.amount_minor, t.daily_cap_minor, t.enabled,
                t.updated_at, t.updated_by, m.customer_id, m.payment_method
             FROM auto_topups t
             JOIN accounts a ON a.id = t.account_id
             JOIN payment_methods m ON m.account_id = t.account_id
             WHERE t.enabled = 1 AND t.paused IS NULL AND m.payment_method IS NOT NULL
               AND a.disabled = 0
               AND a.balance_nanos - a.held_nanos - a.leased_nanos < t.threshold_nanos
               AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.account_id = t.account_id
                   AND p.automatic = 1 AND p.status = 'open')
               AND t.amount_minor + (SELECT CAST(COALESCE(SUM(p.amount_minor), 0) AS BIGINT) FROM payments p
                   WHERE p.account_id = t.account_id AND p.automatic = 1
                     AND p.status IN ('open', 'paid') AND p.created_at >= $1)
                   <= t.daily_cap_minor
             ORDER BY t.account_id",
        )
        .bind(day_start)
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(
                |(account_id, threshold, amount_minor, cap, enabled, at, by, customer, card)| {
                    (
                        AutoTopup {
                            account_id,
                            threshold: Amount::from_nanos(threshold),
                            amount_minor,
                            daily_cap_minor: cap,
                            enabled: enabled != 0,
                            paused: None,
                            updated_at: at,
                            updated_by: by,
                        },
                        customer,
                        card,
                    )
                },
            )
            .collect())
    }
}

/// A refund or chargeback step, as the provider reported it.
#[derive(Debug, Clone, Copy)]
enum Reversing<'a> {
    /// `refunded_minor` refunded in all, of charge `charge_id`.
    Refund {
        charge_id: &'a str,
        refunded_minor: i64,
    },
    /// Chargeback `dispute_id` of `amount_minor`, now `status`.
    Dispute {
        dispute_id: &'a str,
        amount_minor: i64,
        status: DisputeStatus,
    },
}

/// A refund total applied to `payment` (locked): what it adds to the total recorded, debited
/// once (the compare-and-swap on `refunded_minor`).
async fn refund_in(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    payment: &Payment,
    charge_id: &str,
    refunded_minor: i64,
    allow_negative: bool,
) -> Result<Result<PaymentChange, NotApplied>, StoreError> {
    let before = payment.refunded_minor;
    if refunded_minor <= before {
        return Ok(Err(NotApplied::Already));
    }
    let whole = payment.amount.nanos();
    let nanos = share(whole, refunded_minor, payment.amount_minor)
        - share(whole, before, payment.amount_minor);
    let swapped = sqlx::query(
        "UPDATE payments SET refunded_minor = $1 WHERE id = $2 AND refunded_minor = $3",
    )
    .bind(refunded_minor)
    .bind(&payment.id)
    .bind(before)
    .execute(&mut **tx)
    .await?;
    if swapped.rows_affected() == 0 {
        return Err(StoreError::Raced(format!(
            "payment {}'s refunds changed meanwhile; deliver again",
            payment.id
        )));
    }
    let note = format!(
        "refund of payment {} ({charge_id}): {refunded_minor} of {} {} minor units refunded in all",
        payment.id, payment.amount_minor, payment.currency
    );
    let row = ReversalRow {
        cause: "refund",
        reference: charge_id,
        minor: refunded_minor - before,
        signed_nanos: -nanos,
    };
    row.write(tx, payment, &note, allow_negative).await.map(Ok)
}

/// A chargeback step applied to `payment` (locked), by the transitions of its `dispute`
/// column: none → open or lost debits, open → won credits back what the opening took; every
/// other step was applied before.
async fn dispute_in(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    payment: &Payment,
    dispute_id: &str,
    amount_minor: i64,
    status: DisputeStatus,
    allow_negative: bool,
) -> Result<Result<PaymentChange, NotApplied>, StoreError> {
    let was = payment.dispute.as_deref();
    let (next, debit) = match (was, status) {
        (None, DisputeStatus::Open) => ("open", true),
        (None, DisputeStatus::Lost) => ("lost", true),
        (None, DisputeStatus::Won) => ("won", false),
        (Some("open"), DisputeStatus::Won) => ("won", false),
        (Some("open"), DisputeStatus::Lost) => ("lost", false),
        _ => return Ok(Err(NotApplied::Already)),
    };
    let swapped = sqlx::query(
        "UPDATE payments SET dispute = $1 WHERE id = $2 AND COALESCE(dispute, '') = $3",
    )
    .bind(next)
    .bind(&payment.id)
    .bind(was.unwrap_or(""))
    .execute(&mut **tx)
    .await?;
    if swapped.rows_affected() == 0 {
        return Err(StoreError::Raced(format!(
            "payment {}'s chargeback changed meanwhile; deliver again",
            payment.id
        )));
    }
    let whole = payment.amount.nanos();
    let row = if debit {
        // Never more than the refunds left of it.
        let refunded = share(whole, payment.refunded_minor, payment.amount_minor);
        ReversalRow {
            cause: "dispute",
            reference: dispute_id,
            minor: amount_minor,
            signed_nanos: -share(whole, amount_minor, payment.amount_minor).min(whole - refunded),
        }
    } else if was == Some("open") {
        // What the opening took, given back.
        let (taken,): (i64,) = sqlx::query_as(
            "SELECT CAST(COALESCE(SUM(amount_nanos), 0) AS BIGINT) FROM payment_reversals
             WHERE payment_id = $1 AND cause = 'dispute'",
        )
        .bind(&payment.id)
        .fetch_one(&mut **tx)
        .await?;
        ReversalRow {
            cause: "dispute_won",
            reference: dispute_id,
            minor: amount_minor,
            signed_nanos: taken,
        }
    } else {
        // Closed won before its opening was seen: nothing was taken, nothing comes back.
        return Ok(Err(NotApplied::Already));
    };
    if row.signed_nanos == 0 {
        return Ok(Err(NotApplied::Already));
    }
    let note = if row.signed_nanos < 0 {
        format!(
            "chargeback {dispute_id} of payment {}: {amount_minor} {} minor units",
            payment.id, payment.currency
        )
    } else {
        format!("chargeback {dispute_id} of payment {} won", payment.id)
    };
    let allow_negative = allow_negative && row.signed_nanos < 0;
    row.write(tx, payment, &note, allow_negative).await.map(Ok)
}

/// One refund or chargeback row about to be written: its ledger row and the reversal that
/// names it.
#[derive(Debug, Clone, Copy)]
struct ReversalRow<'a> {
    /// `refund`, `dispute`, `dispute_won`.
    cause: &'static str,
    /// The provider's charge or dispute.
    reference: &'a str,
    /// What it is about, in minor units.
    minor: i64,
    /// Negative: a debit (kind `refund`); positive: a chargeback won back (kind `payment`).
    signed_nanos: i64,
}

impl ReversalRow<'_> {
    async fn write(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        payment: &Payment,
        note: &str,
        allow_negative: bool,
    ) -> Result<PaymentChange, StoreError> {
        let amount = Amount::from_nanos(self.signed_nanos);
        let kind = if self.signed_nanos < 0 {
            LedgerKind::Refund
        } else {
            LedgerKind::Payment
        };
        let credited = crate::accounts::credit_in(
            tx,
            &payment.account_id,
            amount,
            kind,
            Some(note),
            allow_negative,
        )
        .await?;
        sqlx::query(
            "INSERT INTO payment_reversals (ledger_id, payment_id, cause, reference, amount_minor,
                amount_nanos, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&credited.ledger_id)
        .bind(&payment.id)
        .bind(self.cause)
        .bind(self.reference)
        .bind(self.minor)
        .bind(-self.signed_nanos)
        .bind(now_millis())
        .execute(&mut **tx)
        .await?;
        Ok(PaymentChange {
            payment_id: payment.id.clone(),
            account_id: payment.account_id.clone(),
            ledger_id: credited.ledger_id,
            amount,
            balance: credited.account.balance,
            overdraw: credited.overdraw,
        })
    }
}

/// The payment `id`, locked for the transaction (`FOR UPDATE` on PostgreSQL; SQLite's write
/// transaction already holds the database).
async fn locked_payment(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    id: &str,
) -> Result<Option<Payment>, StoreError> {
    let lock = if tx.backend_name() == "PostgreSQL" {
        " FOR UPDATE"
    } else {
        ""
    };
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {PAYMENT_COLUMNS} FROM payments WHERE id = $1{lock}"
    )))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?;
    row.as_ref().map(payment_from_row).transpose()
}

/// Keeps the provider's customer and card an event named for the account, for its automatic
/// top-ups: a later card replaces an earlier one.
async fn remember_card(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    payment: &Payment,
    received: &Received<'_>,
) -> Result<(), StoreError> {
    let Some(customer) = received.customer_id else {
        return Ok(());
    };
    sqlx::query(
        "INSERT INTO payment_methods (account_id, provider, customer_id, payment_method, updated_at)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (account_id) DO UPDATE SET provider = $2, customer_id = $3,
            payment_method = COALESCE($4, payment_methods.payment_method), updated_at = $5",
    )
    .bind(&payment.account_id)
    .bind(&payment.provider)
    .bind(customer)
    .bind(received.payment_method)
    .bind(now_millis())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn shares_add_up_to_the_whole() {
        let nanos = 1_000_000_007;
        let mut sum = 0;
        let mut before = 0;
        for total in [1, 2, 3, 500, 999, 1000] {
            sum += share(nanos, total, 1000) - share(nanos, before, 1000);
            before = total;
        }
        assert_eq!(sum, nanos);
        assert_eq!(share(nanos, 2000, 1000), nanos);
        assert_eq!(share(nanos, 1, 0), 0);
    }
}
