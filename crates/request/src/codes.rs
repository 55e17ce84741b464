//! Redeeming a redemption code for an account (docs/decisions.md, "Redemption codes"), as both
//! doors do it: the client API (`POST /v1/redemptions`, with a key) and the customer portal
//! (with a session). One sequence, one set of refusals in the OpenAI shape.
//!
//! The adversary is a client guessing codes. A code has 130 random bits, so guessing cannot
//! succeed; what the limit stops is a client writing to the database without end. Each attempt
//! is counted against the account and the address before the code is looked up (so twenty at
//! once cannot all slip under the limit), and given back unless no batch holds the code (a
//! used, revoked or expired code is a real one, not a guess). A typo — a code whose check
//! symbols do not match — is answered without counting or looking it up.

use crate::context::RequestCtx;
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_store::{Attempt, AttemptLimit, CodeRedeemed, NotRedeemed, Redeemer, RedemptionCode};

/// Redeems `text`, as typed, for `account_id`.
pub async fn redeem(
    ctx: &RequestCtx,
    account_id: &str,
    text: &str,
) -> Result<CodeRedeemed, ApiError> {
    // 1. The code, checked for typos.
    let code = RedemptionCode::parse(text).map_err(|typo| {
        ApiError::new(ErrorKind::InvalidRequest, typo.to_string())
            .param("code")
            .code("invalid_redemption_code")
    })?;

    // 2. The attempt, counted before it is tried.
    let account_scope = format!("code:account:{account_id}");
    let address_scope = ctx
        .client
        .map(|ip| format!("code:address:{}", crate::auth::client_scope(ip)));
    let limits = ctx.state.codes;
    let mut scopes = vec![AttemptLimit {
        scope: &account_scope,
        limit: limits.guesses_per_account,
    }];
    if let Some(scope) = &address_scope {
        scopes.push(AttemptLimit {
            scope,
            limit: limits.guesses_per_address,
        });
    }
    let window_ms =
        i64::try_from(limits.guess_window_seconds.saturating_mul(1_000)).unwrap_or(i64::MAX);
    let store = &ctx.state.store;
    let now = tollgate_journal::clock::now_millis();
    let counted = store
        .count_attempt(&scopes, window_ms, now)
        .await
        .map_err(|e| ApiError::internal("counting a redemption attempt", e))?;
    let window_start = match counted {
        Attempt::Allowed { window_start } => window_start,
        Attempt::Refused {
            scope,
            retry_after_ms,
        } => {
            let whose = if scope == 0 {
                "this account"
            } else {
                "this address"
            };
            tracing::warn!(account = %account_id, client = ?ctx.client,
                "redemption attempts over the limit for {whose}");
            return Err(too_many(
                &format!("Too many wrong redemption codes from {whose}"),
                "too_many_redemption_attempts",
                retry_after_ms,
            ));
        }
    };

    // 3. Redeemed: claimed and credited in one transaction.
    let client = ctx.client.map(|ip| ip.to_string());
    let redeemer = Redeemer {
        account_id,
        request_id: Some(&ctx.request_id),
        address: client.as_deref(),
    };
    let outcome = store
        .redeem_code(&code, redeemer)
        .await
        .map_err(|e| ApiError::internal("redeeming a code", e))?;
    // Only a code no batch holds was a guess: any other outcome gives the attempt back.
    if !matches!(outcome, Err(NotRedeemed::Unknown)) {
        store
            .give_back_attempt(&scopes, window_start)
            .await
            .map_err(|e| ApiError::internal("counting a redemption attempt", e))?;
    }
    match outcome {
        Ok(redeemed) => {
            tracing::info!(account = %account_id, batch = %redeemed.batch_id,
                amount = %redeemed.amount, "a redemption code was redeemed");
            Ok(redeemed)
        }
        Err(why) => {
            let (kind, code) = match why {
                NotRedeemed::Unknown => (ErrorKind::NotFound, "redemption_code_not_found"),
                NotRedeemed::Used => (ErrorKind::Conflict, "redemption_code_used"),
                NotRedeemed::Revoked => (ErrorKind::Conflict, "redemption_code_revoked"),
                NotRedeemed::Expired => (ErrorKind::Conflict, "redemption_code_expired"),
            };
            Err(ApiError::new(kind, why.to_string())
                .param("code")
                .code(code))
        }
    }
}

/// A 429 saying when to come back (whole seconds, rounded up).
pub fn too_many(what: &str, code: &str, retry_after_ms: i64) -> ApiError {
    let seconds = u64::try_from((retry_after_ms + 999) / 1_000)
        .unwrap_or(1)
        .max(1);
    ApiError::new(
        ErrorKind::RateLimited,
        format!("{what}; try again in {seconds} s"),
    )
    .code(code)
    .retry_after(seconds)
}
