//! `POST /v1/redemptions`: a redemption code redeemed for the calling key's account
//! (docs/api.md, "Redemption codes"; docs/decisions.md, "Redemption codes").
//!
//! The adversary is a client guessing codes. A code has 130 random bits, so guessing cannot
//! succeed; what the limit stops is a client writing to the database without end. Each attempt
//! is counted against the account and the address before the code is looked up (so twenty at
//! once cannot all slip under the limit), and given back unless no batch holds the code (a
//! used, revoked or expired code is a real one, not a guess). A typo — a code
//! whose check symbols do not match — is answered without counting or looking it up.

use http::StatusCode;
use std::net::IpAddr;
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_exchange::route_doc::{About, json_body, r};
use tollgate_request::context::RequestCtx;
use tollgate_store::{Attempt, AttemptLimit, NotRedeemed, Principal, Redeemer, RedemptionCode};

/// The request: one code, as the person typed it.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RedeemRequest {
    code: String,
}

pub async fn redeem(
    ctx: RequestCtx,
    principal: Principal,
    request: http::Request<hyper::body::Incoming>,
) -> Result<http::Response<ResponseBody>, ApiError> {
    // 1. The code, read and checked for typos.
    let (parts, body) = request.into_parts();
    let raw = body::read_limited(&parts.headers, body, ctx.body_bounds()).await?;
    let asked: RedeemRequest = body::decode_json(&raw)?;
    let code = RedemptionCode::parse(&asked.code).map_err(|typo| {
        ApiError::new(ErrorKind::InvalidRequest, typo.to_string())
            .param("code")
            .code("invalid_redemption_code")
    })?;

    // 2. The attempt, counted before it is tried.
    let account_scope = format!("code:account:{}", principal.account_id);
    let address_scope = ctx.client.map(|ip| format!("code:address:{}", address(ip)));
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
    let window_start = match store
        .count_attempt(&scopes, window_ms, now)
        .await
        .map_err(|e| ApiError::internal("counting a redemption attempt", e))?
    {
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
            tracing::warn!(account = %principal.account_id, client = ?ctx.client,
                "redemption attempts over the limit for {whose}");
            let seconds = u64::try_from((retry_after_ms + 999) / 1_000).unwrap_or(1);
            return Err(ApiError::new(
                ErrorKind::RateLimited,
                format!("Too many wrong redemption codes from {whose}; try again in {seconds} s"),
            )
            .code("too_many_redemption_attempts")
            .retry_after(seconds));
        }
    };

    // 3. Redeemed: claimed and credited in one transaction.
    let client = ctx.client.map(|ip| ip.to_string());
    let redeemer = Redeemer {
        account_id: &principal.account_id,
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
            tracing::info!(account = %principal.account_id, batch = %redeemed.batch_id,
                amount = %redeemed.amount, "a redemption code was redeemed");
            Ok(body::json_response(StatusCode::CREATED, &redeemed))
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

/// The address an attempt is counted against: an IPv4 address, or an IPv6 client's /64 (one
/// host is handed a whole /64 and may pick any address in it).
fn address(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}

/// `POST /v1/redemptions`, in the OpenAPI document.
pub fn about() -> About {
    About::new(
        "Redeem a redemption code for this key's account: its amount is added to the balance",
        "billing",
        serde_json::json!({"201": {"description": "Redeemed", "content": {"application/json":
            {"schema": r("CodeRedeemed")}}}}),
    )
    .body(json_body(serde_json::json!({
        "type": "object", "required": ["code"], "additionalProperties": false,
        "properties": {"code": {"type": "string", "minLength": 1, "maxLength": 200,
            "description": "The code as printed: 28 letters and digits, dashes and spaces ignored"}},
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ipv6_client_is_counted_by_its_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1"
            .parse()
            .unwrap_or(IpAddr::from([0; 4]));
        let b: IpAddr = "2001:db8:1:2:bbbb::9"
            .parse()
            .unwrap_or(IpAddr::from([0; 4]));
        assert_eq!(address(a), address(b));
        assert_eq!(address(a), "2001:db8:1:2::/64");
        let mapped: IpAddr = "::ffff:198.51.100.7"
            .parse()
            .unwrap_or(IpAddr::from([0; 4]));
        assert_eq!(address(mapped), "198.51.100.7");
    }
}
