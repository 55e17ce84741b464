//! The access policies' rules (`docs/decisions.md`, "Access policies") as pure functions of the
//! caller's principal and what the request asks: expiry, endpoint, network and model. Admission
//! (`tollgate_gateway::admission`) and the hold (`tollgate_gateway::charge`) ask them; `/metrics` names their refusals.

use std::net::IpAddr;
use tollgate_exchange::errors::{ApiError, ErrorKind, Family};
use tollgate_store::Principal;

/// The endpoint names an access policy's `endpoints` list may use (`docs/decisions.md`,
/// "Access policies"): one per billed endpoint family, covering its task reads too. Every row
/// of the route table names one of these or none, and each is named by some row (a test of
/// `tollgate_gateway::routes` checks both).
pub const ENDPOINTS: &[&str] = &[
    "embeddings",
    "speech",
    "t2a",
    "transcriptions",
    "images",
    "realtime",
    "live",
    "speech_to_text",
    "clip_tasks",
    "video_generations",
    "videos",
    "native",
    "chat",
    "responses",
];

/// The access policies' rules that need no model: expiry (401, like an unknown key: the key no
/// longer works), then the endpoint and the client's network (403).
pub fn admit(
    principal: &Principal,
    endpoint: Option<&str>,
    client: Option<IpAddr>,
    family: Family,
    now: i64,
) -> Result<(), ApiError> {
    let policies = &principal.policies;
    // Expiry first, over both layers: a key that no longer works says so, whatever else.
    if policies.iter().any(|p| p.expired(now)) {
        return Err(refused(
            "expired",
            ErrorKind::InvalidCredential,
            match family {
                Family::Google => "API key expired. Please renew the API key.",
                _ => "This API key has expired",
            }
            .to_owned(),
        ));
    }
    if let Some(endpoint) = endpoint
        && !policies.iter().all(|p| p.admits_endpoint(endpoint))
    {
        return Err(refused(
            "endpoint",
            ErrorKind::Forbidden,
            format!("This API key may not call the {endpoint} endpoint"),
        ));
    }
    if !policies.iter().all(|p| p.admits_client(client)) {
        let from = client.map_or_else(|| "an unknown address".to_owned(), |ip| ip.to_string());
        return Err(refused(
            "network",
            ErrorKind::Forbidden,
            format!("This API key may not be used from {from}"),
        ));
    }
    Ok(())
}

/// The model rule of the access policies: `model` is the public name, aliases resolved.
pub fn admit_model(principal: &Principal, model: &str) -> Result<(), ApiError> {
    if may_use_model(principal, model) {
        return Ok(());
    }
    let mut e = refused(
        "model",
        ErrorKind::Forbidden,
        format!("This API key may not use the model '{model}'"),
    );
    e.param = Some("model".into());
    Err(e)
}

/// Whether the key's policies allow `model` (what a model listing shows it).
pub fn may_use_model(principal: &Principal, model: &str) -> bool {
    principal.policies.iter().all(|p| p.admits_model(model))
}

/// Each access-policy rule: its name on `/metrics`, and the code its refusals carry.
const POLICY_RULES: [(&str, &str); 4] = [
    ("expired", "api_key_expired"),
    ("endpoint", "endpoint_not_allowed"),
    ("network", "network_not_allowed"),
    ("model", "model_not_allowed"),
];

/// The access-policy rule behind an error, for `/metrics`; `None` for any other error.
pub fn policy_rule(e: &ApiError) -> Option<&'static str> {
    let code = e.code.as_deref()?;
    POLICY_RULES
        .iter()
        .find(|(_, c)| *c == code)
        .map(|(rule, _)| *rule)
}

fn refused(rule: &str, kind: ErrorKind, message: String) -> ApiError {
    let code = POLICY_RULES
        .iter()
        .find(|(r, _)| *r == rule)
        .map_or("access_denied", |(_, code)| code);
    ApiError::new(kind, message).code(code)
}
