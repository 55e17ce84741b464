//! The portal's JSON API under `/portal/v1` (docs/api.md, "The customer portal"): one function
//! per route of [`crate::routes::PORTAL_ROUTES`], each handed a [`Visit`] — the request's
//! context and, on a session's route, the session, its CSRF token already checked on a write.
//! Every route reads and writes the session's account only.

use crate::auth::{self, CSRF_HEADER, Door};
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use serde::Deserialize;
use serde_json::json;
use tollgate_billing::Amount;
use tollgate_exchange::body::{self, ResponseBody};
use tollgate_exchange::errors::{ApiError, ErrorKind};
use tollgate_exchange::route_doc::{About, json_body, ok, query_as};
use tollgate_request::codes::too_many;
use tollgate_request::context::RequestCtx;
use tollgate_store::{
    AccessPolicy, AdminChange, Attempt, AttemptLimit, PolicyHolder, PortalSession, UsageFilter,
    Viewer,
};

/// What a route answers.
pub(crate) type Answer = Result<Response<ResponseBody>, ApiError>;

/// The largest body a portal route reads: a few fields.
const MAX_BODY: usize = 16 << 10;
/// Keys an account may hold before the portal makes no more (the operator may).
const MAX_KEYS: usize = 100;
/// Ledger rows a page holds at most.
const MAX_ROWS: u32 = 200;

/// One request to the portal: its context, and its session on a session's route.
#[derive(Debug)]
pub struct Visit {
    /// The request's context.
    pub ctx: RequestCtx,
    /// The signed-in session (`Door::Session` routes only).
    pub session: Option<PortalSession>,
    /// The session's cookie token.
    token: Option<String>,
    /// The one segment the route's path names (`{id}`), `""` when it names none.
    pub param: String,
    /// The client reached the gateway over TLS: cookies are `Secure`.
    https: bool,
}

impl Visit {
    /// Admits a request by its route's door: a session's route needs a live session, and a
    /// write on it the session's CSRF token. Writes take JSON only, so that a plain form on
    /// another site cannot post one (it would need a CORS preflight the portal never grants).
    pub async fn begin(
        ctx: RequestCtx,
        request: &Request<Incoming>,
        door: Door,
    ) -> Result<Visit, ApiError> {
        let https = ctx.origin(request.headers()).is_https();
        let write = request.method() != Method::GET;
        if write {
            body::require_json(request.headers())?;
        }
        let mut visit = Visit {
            ctx,
            session: None,
            token: None,
            param: String::new(),
            https,
        };
        if door == Door::Open {
            return Ok(visit);
        }
        let signed_out = || {
            ApiError::new(
                ErrorKind::MissingCredential,
                "Not signed in, or the session has ended",
            )
            .code("signed_out")
        };
        let token = auth::session_cookie(request.headers()).ok_or_else(signed_out)?;
        let settings = &visit.ctx.state.portal;
        let idle_ms =
            i64::try_from(settings.idle_minutes.saturating_mul(60_000)).unwrap_or(i64::MAX);
        let session = visit
            .ctx
            .state
            .store
            .portal_session(&token, tollgate_journal::clock::now_millis(), idle_ms)
            .await
            .map_err(|e| ApiError::internal("reading the portal session", e))?
            .ok_or_else(signed_out)?;
        if write {
            let sent = request
                .headers()
                .get(CSRF_HEADER)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            if !auth::same_secret(sent, &session.csrf) {
                return Err(ApiError::new(
                    ErrorKind::Forbidden,
                    format!("A change needs the session's {CSRF_HEADER} header"),
                )
                .code("csrf_token_missing"));
            }
        }
        visit.session = Some(session);
        visit.token = Some(token);
        Ok(visit)
    }

    /// The session (a session's route only).
    pub(crate) fn session(&self) -> Result<&PortalSession, ApiError> {
        self.session
            .as_ref()
            .ok_or_else(|| ApiError::new(ErrorKind::MissingCredential, "Not signed in"))
    }

    /// The session's account.
    pub(crate) fn account_id(&self) -> Result<&str, ApiError> {
        Ok(&self.session()?.person.account_id)
    }

    pub(crate) fn store(&self) -> &tollgate_store::Store {
        &self.ctx.state.store
    }

    /// The request's JSON body.
    pub(crate) async fn read<T: serde::de::DeserializeOwned>(
        &self,
        request: Request<Incoming>,
    ) -> Result<T, ApiError> {
        let (parts, incoming) = request.into_parts();
        let bounds = body::Bounds {
            limit: MAX_BODY,
            pace: self.ctx.body_pace(),
        };
        let bytes = body::read_limited(&parts.headers, incoming, bounds).await?;
        body::decode_json(&bytes)
    }

    /// The sign-in limits of `email` from this client: per person and per address.
    fn sign_in_scopes(&self, email: &str) -> (String, Option<String>) {
        (
            format!("sign-in:person:{}", email.trim().to_lowercase()),
            self.ctx.client.map(|ip| {
                format!(
                    "sign-in:address:{}",
                    tollgate_request::auth::client_scope(ip)
                )
            }),
        )
    }

    /// The sign-in limits over `person` and `address` (scopes of [`Visit::sign_in_scopes`]).
    fn sign_in_limits<'a>(
        &self,
        person: &'a str,
        address: Option<&'a str>,
    ) -> Vec<AttemptLimit<'a>> {
        let settings = &self.ctx.state.portal;
        let mut limits = vec![AttemptLimit {
            scope: person,
            limit: settings.sign_ins_per_person,
        }];
        if let Some(address) = address {
            limits.push(AttemptLimit {
                scope: address,
                limit: settings.sign_ins_per_address,
            });
        }
        limits
    }

    /// Counts a sign-in attempt (or an invitation accepted) before it is checked: the window
    /// it was counted in, or a 429.
    async fn count_sign_in(&self, limits: &[AttemptLimit<'_>]) -> Result<i64, ApiError> {
        let settings = &self.ctx.state.portal;
        let window_ms = i64::try_from(settings.sign_in_window_seconds.saturating_mul(1_000))
            .unwrap_or(i64::MAX);
        let counted = self
            .store()
            .count_attempt(limits, window_ms, tollgate_journal::clock::now_millis())
            .await
            .map_err(|e| ApiError::internal("counting a sign-in", e))?;
        match counted {
            Attempt::Allowed { window_start } => Ok(window_start),
            Attempt::Refused {
                scope,
                retry_after_ms,
            } => {
                let whose = if scope == 0 {
                    "this person"
                } else {
                    "this address"
                };
                tracing::warn!(client = ?self.ctx.client, "portal sign-ins over the limit for {whose}");
                Err(too_many(
                    &format!("Too many failed sign-ins for {whose}"),
                    "too_many_sign_ins",
                    retry_after_ms,
                ))
            }
        }
    }
}

/// A JSON answer.
pub(crate) fn answer(status: StatusCode, value: &impl serde::Serialize) -> Answer {
    Ok(body::json_response(status, value))
}

/// An answer that sets (or clears) the session cookie.
fn with_cookie(mut response: Response<ResponseBody>, cookie: &str) -> Response<ResponseBody> {
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The body of `POST /portal/v1/invitations/accept`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Acceptance {
    token: String,
    password: String,
}

/// `POST /portal/v1/invitations/accept`: sets the invited person's password.
pub async fn accept_invitation(visit: Visit, request: Request<Incoming>) -> Answer {
    let asked: Acceptance = visit.read(request).await?;
    // Hashing costs tens of milliseconds of CPU: counted against the address like a sign-in.
    let (_, address) = visit.sign_in_scopes("");
    let limits: Vec<AttemptLimit<'_>> = address
        .iter()
        .map(|scope| AttemptLimit {
            scope,
            limit: visit.ctx.state.portal.sign_ins_per_address,
        })
        .collect();
    let window = visit.count_sign_in(&limits).await?;
    if let Some(rule) = auth::password_rule(&asked.password, "") {
        return Err(ApiError::new(ErrorKind::InvalidRequest, rule)
            .param("password")
            .code("weak_password"));
    }
    let password = asked.password;
    let hash = tokio::task::spawn_blocking(move || auth::hash_password(&password))
        .await
        .map_err(|e| ApiError::internal("hashing a password", e))?
        .map_err(|e| ApiError::internal("hashing a password", e))?;
    let accepted = visit
        .store()
        .accept_invite(asked.token.trim(), &hash)
        .await
        .map_err(|e| ApiError::internal("accepting an invitation", e))?;
    let Some(person) = accepted else {
        return Err(ApiError::new(
            ErrorKind::NotFound,
            "This invitation link has been used or has expired; ask for a new one",
        )
        .param("token")
        .code("invitation_invalid"));
    };
    let _ = visit.store().give_back_attempt(&limits, window).await;
    answer(
        StatusCode::OK,
        &json!({"email": person.email, "name": person.name}),
    )
}

/// The body of `POST /portal/v1/sessions`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SignIn {
    email: String,
    password: String,
    /// A TOTP code, when the person has TOTP on.
    #[serde(default)]
    code: Option<String>,
    /// Or one of their recovery codes.
    #[serde(default)]
    recovery_code: Option<String>,
}

/// `POST /portal/v1/sessions`: signs in, with a new session (never one the client brought).
pub async fn sign_in(visit: Visit, request: Request<Incoming>) -> Answer {
    let asked: SignIn = visit.read(request).await?;
    let (person_scope, address_scope) = visit.sign_in_scopes(&asked.email);
    let limits = visit.sign_in_limits(&person_scope, address_scope.as_deref());
    let window = visit.count_sign_in(&limits).await?;
    let found = visit
        .store()
        .person_credentials(&asked.email)
        .await
        .map_err(|e| ApiError::internal("reading a person", e))?;
    let hash = found
        .as_ref()
        .and_then(|c| c.password_hash.clone())
        .unwrap_or_else(|| auth::NOBODY.clone());
    let password = asked.password.clone();
    let right = tokio::task::spawn_blocking(move || auth::verify_password(&hash, &password))
        .await
        .map_err(|e| ApiError::internal("checking a password", e))?;
    let wrong = || {
        ApiError::new(ErrorKind::InvalidCredential, "Wrong email or password")
            .code("wrong_credentials")
    };
    let Some(credentials) = found.filter(|c| right && c.password_hash.is_some()) else {
        return Err(wrong());
    };
    let person = &credentials.person;
    if person.totp {
        let secret = credentials.totp_secret.as_deref().unwrap_or_default();
        let now = u64::try_from(tollgate_journal::clock::unix_now()).unwrap_or(0);
        let second = match (&asked.code, &asked.recovery_code) {
            (Some(code), _) => match auth::totp_step(secret, code, now) {
                Some(step) => visit
                    .store()
                    .take_totp_step(&person.id, step)
                    .await
                    .map_err(|e| ApiError::internal("checking a code", e))?,
                None => false,
            },
            (None, Some(recovery)) => visit
                .store()
                .use_recovery_code(&person.id, &auth::normalize_recovery(recovery))
                .await
                .map_err(|e| ApiError::internal("checking a recovery code", e))?,
            (None, None) => {
                // The password was right: not a failure, but not a session either.
                let _ = visit.store().give_back_attempt(&limits, window).await;
                return Err(ApiError::new(
                    ErrorKind::InvalidCredential,
                    "Enter the code from your authenticator app (or a recovery code)",
                )
                .param("code")
                .code("totp_required"));
            }
        };
        if !second {
            return Err(
                ApiError::new(ErrorKind::InvalidCredential, "Wrong or already used code")
                    .param("code")
                    .code("wrong_code"),
            );
        }
    }
    let _ = visit.store().give_back_attempt(&limits, window).await;
    let settings = &visit.ctx.state.portal;
    let lifetime_ms =
        i64::try_from(settings.session_hours.saturating_mul(3_600_000)).unwrap_or(i64::MAX);
    let client = visit.ctx.client.map(|ip| ip.to_string());
    let (token, session) = visit
        .store()
        .open_portal_session(
            person,
            tollgate_journal::clock::now_millis().saturating_add(lifetime_ms),
            client.as_deref(),
        )
        .await
        .map_err(|e| ApiError::internal("opening a session", e))?;
    tracing::info!(person = %person.id, account = %person.account_id, "portal sign-in");
    let response = body::json_response(StatusCode::CREATED, &session_view(&session));
    let cookie = auth::set_cookie(&token, settings.session_hours * 3_600, visit.https);
    Ok(with_cookie(response, &cookie))
}

fn session_view(session: &PortalSession) -> serde_json::Value {
    json!({
        "person": session.person,
        "csrf_token": session.csrf,
        "expires_at": session.expires_at,
    })
}

/// `GET /portal/v1/session`: who is signed in, and the CSRF token writes carry.
pub async fn session(visit: Visit, _: Request<Incoming>) -> Answer {
    let session = visit.session()?;
    let mut response = body::json_response(StatusCode::OK, &session_view(session));
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// `DELETE /portal/v1/session`: signs out.
pub async fn sign_out(visit: Visit, _: Request<Incoming>) -> Answer {
    if let Some(token) = &visit.token {
        visit
            .store()
            .close_portal_session(token)
            .await
            .map_err(|e| ApiError::internal("closing a session", e))?;
    }
    let response = body::json_response(StatusCode::OK, &json!({"signed_out": true}));
    Ok(with_cookie(response, &auth::clear_cookie(visit.https)))
}

/// `GET /portal/v1/account`: the account's balance in plain words.
pub async fn account(visit: Visit, _: Request<Incoming>) -> Answer {
    let account = visit
        .store()
        .find_account(visit.account_id()?)
        .await
        .map_err(|e| ApiError::internal("reading the account", e))?;
    answer(
        StatusCode::OK,
        &json!({
            "name": account.name,
            "balance": account.balance,
            "held": account.held,
            "leased": account.leased,
            "available": account.available(),
            "disabled": account.disabled,
        }),
    )
}

/// `GET /portal/v1/ledger?limit=&before=`: the account's ledger rows, newest first.
pub async fn ledger(visit: Visit, request: Request<Incoming>) -> Answer {
    let (limit, before) = page(request.uri().query());
    let rows = visit
        .store()
        .ledger_page(visit.account_id()?, limit, before.as_deref())
        .await
        .map_err(|e| ApiError::internal("reading the ledger", e))?;
    let next = (rows.len() == limit as usize)
        .then(|| rows.last().map(|r| r.id.clone()))
        .flatten();
    answer(StatusCode::OK, &json!({"data": rows, "next_cursor": next}))
}

/// The body of `POST /portal/v1/redemptions`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Redemption {
    code: String,
}

/// `POST /portal/v1/redemptions`: a code redeemed for the session's account.
pub async fn redeem(visit: Visit, request: Request<Incoming>) -> Answer {
    let asked: Redemption = visit.read(request).await?;
    let redeemed =
        tollgate_request::codes::redeem(&visit.ctx, visit.account_id()?, &asked.code).await?;
    answer(StatusCode::CREATED, &redeemed)
}

/// `POST /portal/v1/totp`: a new TOTP secret to enter in an authenticator app; TOTP is on
/// once a code of it is confirmed.
pub async fn begin_totp(visit: Visit, _: Request<Incoming>) -> Answer {
    let person = &visit.session()?.person;
    if person.totp {
        return Err(ApiError::new(ErrorKind::Conflict, "TOTP is already on").code("totp_on"));
    }
    let secret = auth::new_totp_secret();
    visit
        .store()
        .begin_totp(&person.id, &secret)
        .await
        .map_err(|e| ApiError::internal("starting TOTP", e))?;
    answer(
        StatusCode::OK,
        &json!({
            "secret": secret,
            "otpauth_uri": auth::otpauth_uri(&secret, "tollgate", &person.email),
        }),
    )
}

/// The body of `POST /portal/v1/totp/confirm`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Confirmation {
    code: String,
}

/// `POST /portal/v1/totp/confirm`: TOTP on, with recovery codes shown once.
pub async fn confirm_totp(visit: Visit, request: Request<Incoming>) -> Answer {
    let person_id = visit.session()?.person.id.clone();
    let asked: Confirmation = visit.read(request).await?;
    let credentials = visit
        .store()
        .person_credentials_by_id(&person_id)
        .await
        .map_err(|e| ApiError::internal("reading a person", e))?
        .ok_or_else(|| ApiError::new(ErrorKind::MissingCredential, "Not signed in"))?;
    if credentials.person.totp {
        return Err(ApiError::new(ErrorKind::Conflict, "TOTP is already on").code("totp_on"));
    }
    let Some(secret) = credentials.totp_secret else {
        return Err(
            ApiError::new(ErrorKind::Conflict, "Start with POST /portal/v1/totp")
                .code("totp_not_started"),
        );
    };
    let now = u64::try_from(tollgate_journal::clock::unix_now()).unwrap_or(0);
    let Some(step) = auth::totp_step(&secret, &asked.code, now) else {
        return Err(ApiError::new(
            ErrorKind::InvalidRequest,
            "That code is not the app's code now; check the phone's clock and try the next one",
        )
        .param("code")
        .code("wrong_code"));
    };
    let codes = auth::new_recovery_codes();
    let kept: Vec<String> = codes.iter().map(|c| auth::normalize_recovery(c)).collect();
    visit
        .store()
        .enable_totp(&person_id, step, &kept)
        .await
        .map_err(|e| ApiError::internal("turning TOTP on", e))?;
    answer(
        StatusCode::OK,
        &json!({"totp": true, "recovery_codes": codes}),
    )
}

/// The actor of a change a person makes, for the admin audit log: `portal:EMAIL`.
pub(crate) fn actor_change(
    visit: &Visit,
    action: &str,
    target: &str,
) -> Result<AdminChange, ApiError> {
    Ok(AdminChange {
        actor: format!("portal:{}", visit.session()?.person.email),
        action: action.to_owned(),
        target: target.to_owned(),
        before: None,
        after: None,
        request_id: Some(visit.ctx.request_id.clone()),
    })
}

/// `GET /portal/v1/keys`: the account's keys (their prefixes, never their secrets).
pub async fn keys(visit: Visit, _: Request<Incoming>) -> Answer {
    let keys = visit
        .store()
        .account_keys(visit.account_id()?)
        .await
        .map_err(|e| ApiError::internal("reading keys", e))?;
    answer(StatusCode::OK, &json!({"data": keys}))
}

/// The limits a person may put on a new key: each narrows what the account may do, never
/// widens it (no price group, no network the account's policy does not already allow).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyLimits {
    /// Models the key may call (public names or globs).
    #[serde(default)]
    models: Option<Vec<String>>,
    /// Billable requests per minute.
    #[serde(default)]
    rpm: Option<u64>,
    /// Money per UTC day (a decimal string).
    #[serde(default)]
    daily_budget: Option<String>,
    /// Money per UTC month.
    #[serde(default)]
    monthly_budget: Option<String>,
    /// When the key stops working (Unix milliseconds).
    #[serde(default)]
    expires_at: Option<i64>,
}

/// The body of `POST /portal/v1/keys`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewKey {
    name: String,
    #[serde(default)]
    limits: KeyLimits,
}

/// A new key's policy from `limits`, checked against the account's own: a model the account
/// may not call, or a limit above the account's, is refused naming the field.
fn key_policy(limits: KeyLimits, account: &AccessPolicy) -> Result<AccessPolicy, ApiError> {
    let invalid = |field: &str, message: String| {
        ApiError::new(ErrorKind::InvalidRequest, message)
            .param(format!("limits.{field}"))
            .code("invalid_value")
    };
    let amount = |field: &str, text: Option<String>| -> Result<Option<Amount>, ApiError> {
        text.map(|t| {
            t.trim()
                .parse::<Amount>()
                .ok()
                .filter(|a| a.is_positive())
                .ok_or_else(|| invalid(field, format!("{t:?} is not an amount above 0")))
        })
        .transpose()
    };
    let daily_budget = amount("daily_budget", limits.daily_budget)?;
    let monthly_budget = amount("monthly_budget", limits.monthly_budget)?;
    let above = |field: &str, mine: Option<Amount>, theirs: Option<Amount>| match (mine, theirs) {
        (Some(m), Some(t)) if m > t => Err(invalid(
            field,
            format!("{m} is more than the account's own {field} of {t}"),
        )),
        _ => Ok(()),
    };
    above("daily_budget", daily_budget, account.daily_budget)?;
    above("monthly_budget", monthly_budget, account.monthly_budget)?;
    if let (Some(rpm), Some(theirs)) = (limits.rpm, account.rpm)
        && rpm > theirs
    {
        return Err(invalid(
            "rpm",
            format!("{rpm} is more than the account's own {theirs}"),
        ));
    }
    if limits.rpm == Some(0) {
        return Err(invalid(
            "rpm",
            "a limit of 0 would refuse every request".into(),
        ));
    }
    if let Some(models) = &limits.models {
        if models.is_empty() || models.iter().any(|m| m.trim().is_empty() || m.len() > 200) {
            return Err(invalid("models", "list model names or globs".into()));
        }
        if let Some(allowed) = &account.models
            && let Some(outside) = models
                .iter()
                .find(|m| !allowed.iter().any(|a| tollgate_store::glob_matches(a, m)))
        {
            return Err(invalid(
                "models",
                format!("the account may not call {outside:?}"),
            ));
        }
    }
    if let Some(at) = limits.expires_at
        && at <= tollgate_journal::clock::now_millis()
    {
        return Err(invalid("expires_at", "must be in the future".into()));
    }
    Ok(AccessPolicy {
        models: limits.models,
        rpm: limits.rpm,
        daily_budget,
        monthly_budget,
        expires_at: limits.expires_at,
        ..AccessPolicy::default()
    })
}

/// `POST /portal/v1/keys`: a new key of the account, its secret in this answer only, with
/// limits inside the account's policy.
pub async fn create_key(visit: Visit, request: Request<Incoming>) -> Answer {
    let asked: NewKey = visit.read(request).await?;
    let name = asked.name.trim();
    if name.is_empty() || name.len() > 200 {
        return Err(ApiError::new(
            ErrorKind::InvalidRequest,
            "a key needs a name of up to 200 bytes",
        )
        .param("name")
        .code("invalid_value"));
    }
    let account_id = visit.account_id()?.to_owned();
    let store = visit.store();
    let account_policy = store
        .policy(&PolicyHolder::Account(account_id.clone()))
        .await
        .map_err(|e| ApiError::internal("reading the account's policy", e))?;
    let policy = key_policy(asked.limits, &account_policy)?;
    let live = store
        .account_keys(&account_id)
        .await
        .map_err(|e| ApiError::internal("reading keys", e))?
        .iter()
        .filter(|k| !k.revoked)
        .count();
    if live >= MAX_KEYS {
        return Err(ApiError::new(
            ErrorKind::Conflict,
            format!("An account has at most {MAX_KEYS} keys made in the portal; revoke one first"),
        )
        .code("too_many_keys"));
    }
    let key = store
        .create_key(&account_id, name)
        .await
        .map_err(|e| ApiError::internal("creating a key", e))?;
    if policy != AccessPolicy::default() {
        store
            .set_policy(&PolicyHolder::Key(key.id.clone()), &policy)
            .await
            .map_err(|e| ApiError::internal("setting the key's limits", e))?;
    }
    let mut change = actor_change(&visit, "key.create", &key.id)?;
    change.after = Some(json!({"account": account_id, "name": name, "policy": policy}));
    store
        .record_admin_change(&change)
        .await
        .map_err(|e| ApiError::internal("recording the change", e))?;
    let mut response = body::json_response(
        StatusCode::CREATED,
        &json!({"id": key.id, "name": name, "secret": key.secret, "policy": policy}),
    );
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// `POST /portal/v1/keys/{id}/revoke`: one of the account's keys refused for good. Another
/// account's key is as unknown as a key that does not exist.
pub async fn revoke_key(visit: Visit, _: Request<Incoming>) -> Answer {
    let account_id = visit.account_id()?;
    let store = visit.store();
    let keys = store
        .account_keys(account_id)
        .await
        .map_err(|e| ApiError::internal("reading keys", e))?;
    if !keys.iter().any(|k| k.id == visit.param) {
        return Err(
            ApiError::new(ErrorKind::NotFound, "No such key in this account")
                .param("id")
                .code("key_not_found"),
        );
    }
    store
        .revoke_key(&visit.param)
        .await
        .map_err(|e| ApiError::internal("revoking a key", e))?;
    visit.ctx.state.keys.clear();
    store
        .record_admin_change(&actor_change(&visit, "key.revoke", &visit.param)?)
        .await
        .map_err(|e| ApiError::internal("recording the change", e))?;
    answer(StatusCode::OK, &json!({"id": visit.param, "revoked": true}))
}

/// `GET /portal/v1/usage?limit=&before=`: the account's usage records, newest first.
pub async fn usage(visit: Visit, request: Request<Incoming>) -> Answer {
    let (limit, before) = page(request.uri().query());
    let filter = UsageFilter {
        account_id: Some(visit.account_id()?.to_owned()),
        ..UsageFilter::default()
    };
    let records = visit
        .store()
        .usage_records(&filter, limit, before.as_deref())
        .await
        .map_err(|e| ApiError::internal("reading usage", e))?;
    let next = (records.len() == limit as usize)
        .then(|| records.last().map(|r| r.id.clone()))
        .flatten();
    // Which upstream channel served a request is the operator's business, not the customer's.
    let data: Vec<serde_json::Value> = records
        .iter()
        .map(|r| {
            let mut row = serde_json::to_value(r).unwrap_or_default();
            if let Some(fields) = row.as_object_mut() {
                fields.remove("channel");
                fields.remove("upstream_ms");
            }
            row
        })
        .collect();
    answer(StatusCode::OK, &json!({"data": data, "next_cursor": next}))
}

/// `GET /portal/v1/charges/{request_id}`: what one of the account's requests was charged, and
/// why (as `GET /v1/charges/{id}` answers a key; here any key of the account).
pub async fn charges(visit: Visit, _: Request<Incoming>) -> Answer {
    let viewer = Viewer {
        account_id: Some(visit.account_id()?),
        key_id: None,
    };
    let found = visit
        .store()
        .explain(&visit.param, viewer)
        .await
        .map_err(|e| ApiError::internal("reading the request's charges", e))?
        .ok_or_else(|| {
            ApiError::new(ErrorKind::NotFound, "No such request of this account")
                .param("request_id")
                .code("request_not_found")
        })?;
    answer(
        StatusCode::OK,
        &json!({"request_id": visit.param, "charged": found.charged(), "data": found.charges}),
    )
}

/// `GET /portal/v1/statement?from=&until=`: the account's statement (Unix milliseconds; the
/// whole history to now by default), as `tollgate statement` writes it, to check offline.
pub async fn statement(visit: Visit, request: Request<Incoming>) -> Answer {
    let query = request.uri().query().unwrap_or_default();
    let millis = |name: &str| -> Result<Option<i64>, ApiError> {
        tollgate_request::auth::query_param(query, name)
            .filter(|v| !v.is_empty())
            .map(|v| {
                v.parse::<i64>().map_err(|_| {
                    ApiError::new(
                        ErrorKind::InvalidRequest,
                        format!("{name} is Unix milliseconds"),
                    )
                    .param(name.to_owned())
                    .code("invalid_value")
                })
            })
            .transpose()
    };
    let from = millis("from")?.unwrap_or(0);
    let until = millis("until")?.unwrap_or_else(|| tollgate_journal::clock::now_millis() + 1);
    let store = visit.store().clone();
    let plan = store
        .statement_plan(visit.account_id()?, from, until, None, None)
        .await
        .map_err(|e| ApiError::internal("making the statement", e))?;
    let around = plan
        .json_around_rows()
        .map_err(|e| ApiError::internal("writing the statement", e))?;
    let (sender, body) = body::channel_body();
    tokio::spawn(write_statement(store, plan, around, sender));
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"statement.json\""),
    );
    Ok(response)
}

/// Writes `plan`'s statement to `sender`: the JSON before its rows, the rows a page at a time
/// (never the whole statement in memory, however many years it covers), the JSON after.
async fn write_statement(
    store: tollgate_store::Store,
    plan: tollgate_store::statement::StatementPlan,
    (before, after): (String, String),
    sender: body::BodySender,
) {
    if sender.send(Ok(before.into())).await.is_err() {
        return;
    }
    let mut read = None;
    let mut first = true;
    loop {
        let page = match store.statement_rows(&plan, &mut read).await {
            Ok(page) if page.is_empty() => break,
            Ok(page) => page,
            Err(e) => {
                // The head is sent: the error can only cut the body short.
                tracing::warn!(error = %e, account = %plan.head.account_id, "a statement was cut short");
                let _ = sender.send(Err(std::io::Error::other(e.to_string()))).await;
                return;
            }
        };
        let mut chunk = Vec::new();
        for row in &page {
            if !std::mem::take(&mut first) {
                chunk.push(b',');
            }
            if let Err(e) = serde_json::to_writer(&mut chunk, row) {
                let _ = sender.send(Err(std::io::Error::other(e))).await;
                return;
            }
        }
        if sender.send(Ok(chunk.into())).await.is_err() {
            return; // the person left
        }
    }
    let _ = sender.send(Ok(after.into())).await;
}

/// A page's size and cursor from a query.
pub(crate) fn page(query: Option<&str>) -> (u32, Option<String>) {
    let query = query.unwrap_or_default();
    let limit = tollgate_request::auth::query_param(query, "limit")
        .and_then(|l| l.parse::<u32>().ok())
        .unwrap_or(50)
        .clamp(1, MAX_ROWS);
    let before = tollgate_request::auth::query_param(query, "before").filter(|b| !b.is_empty());
    (limit, before)
}

// ---- the OpenAPI document ----

pub(crate) fn about(summary: &'static str, answers: serde_json::Value) -> About {
    About::new(summary, "portal", answers)
}

pub(crate) fn object() -> serde_json::Value {
    ok(json!({"type": "object"}))
}

pub(crate) fn body_of(properties: serde_json::Value, required: &[&str]) -> serde_json::Value {
    json_body(json!({"type": "object", "additionalProperties": false,
        "required": required, "properties": properties}))
}

pub fn about_accept() -> About {
    about("Accept an invitation: set the password", object()).body(body_of(
        json!({"token": {"type": "string"}, "password": {"type": "string", "minLength": 10, "maxLength": 256}}),
        &["token", "password"],
    ))
}

pub fn about_sign_in() -> About {
    about(
        "Sign in: a new session cookie (tollgate_portal) and its CSRF token",
        json!({"201": {"description": "Signed in", "content": {"application/json": {"schema": {"type": "object"}}}}}),
    )
    .body(body_of(
        json!({"email": {"type": "string"}, "password": {"type": "string"},
               "code": {"type": "string", "description": "A TOTP code, when TOTP is on"},
               "recovery_code": {"type": "string"}}),
        &["email", "password"],
    ))
}

pub fn about_session() -> About {
    about(
        "Who is signed in, and the CSRF token writes carry (x-csrf-token)",
        object(),
    )
}

pub fn about_sign_out() -> About {
    about("Sign out", object())
}

pub fn about_account() -> About {
    about(
        "The account's balance, held, leased and available",
        object(),
    )
}

pub fn about_ledger() -> About {
    paged("The account's ledger rows, newest first")
}

pub fn about_redeem() -> About {
    about(
        "Redeem a code for the account",
        json!({"201": {"description": "Redeemed", "content": {"application/json": {"schema": {"type": "object"}}}}}),
    )
    .body(body_of(json!({"code": {"type": "string"}}), &["code"]))
}

pub fn about_begin_totp() -> About {
    about("Start TOTP: a secret and its otpauth URI", object())
}

pub fn about_confirm_totp() -> About {
    about(
        "Turn TOTP on with a code of the new secret: recovery codes, shown once",
        object(),
    )
    .body(body_of(json!({"code": {"type": "string"}}), &["code"]))
}

pub(crate) fn paged(summary: &'static str) -> About {
    paged_of(summary, object())
}

/// A paged route whose answers are `answers`.
pub(crate) fn paged_of(summary: &'static str, answers: serde_json::Value) -> About {
    about(summary, answers)
        .parameter(query_as(
            "limit",
            "Rows, 1 to 200 (default 50)",
            json!({"type": "integer", "minimum": 1, "maximum": 200}),
        ))
        .parameter(query_as(
            "before",
            "The previous page's next_cursor",
            json!({"type": "string"}),
        ))
}

pub(crate) fn id_param(description: &str) -> serde_json::Value {
    tollgate_exchange::route_doc::path_param("id", description)
}

pub fn about_keys() -> About {
    about("The account's keys (prefixes only)", object())
}

pub fn about_create_key() -> About {
    about(
        "A new key of the account, its secret in this answer only, with limits inside the account's policy",
        json!({"201": {"description": "Created", "content": {"application/json": {"schema": {"type": "object"}}}}}),
    )
    .body(body_of(
        json!({"name": {"type": "string", "minLength": 1, "maxLength": 200},
               "limits": {"type": "object", "additionalProperties": false, "properties": {
                   "models": {"type": "array", "items": {"type": "string"}},
                   "rpm": {"type": "integer", "minimum": 1},
                   "daily_budget": {"type": "string"}, "monthly_budget": {"type": "string"},
                   "expires_at": {"type": "integer"}}}}),
        &["name"],
    ))
}

pub fn about_revoke_key() -> About {
    about("Revoke one of the account's keys for good", object())
        .parameter(id_param("The key's id (key_…)"))
}

pub fn about_usage() -> About {
    paged("The account's usage records, newest first")
}

pub fn about_charges() -> About {
    about(
        "What one of the account's requests was charged, and why",
        object(),
    )
    .parameter(id_param("The request's id (its x-request-id)"))
}

pub fn about_statement() -> About {
    about("The account's statement, chained to the last signed checkpoint; check it offline with tollgate verify or docs/verify_statement.py", object())
        .parameter(query_as("from", "Unix milliseconds (default: the beginning)", json!({"type": "integer"})))
        .parameter(query_as("until", "Unix milliseconds (default: now)", json!({"type": "integer"})))
}
