//! The `base_resp` envelope of the vendor format and its status codes (wire-formats §3.2, §3.4).
//!
//! Every `t2a_v2` response, and every frame of a stream, carries
//! `"base_resp": {"status_code": 0, "status_msg": "success"}`. Status code 0 is success; any other
//! code is an error. wire-formats §3.2: the upstream usually sends errors with HTTP 200 and a
//! non-zero code, so a client must always check the code. This service answers with an honest
//! HTTP status instead, see [`http_status`].
//!
//! ```
//! use tollgate_vendor_audio::base_resp::{codes, http_status, BaseResp};
//!
//! let ok: BaseResp = serde_json::from_str(r#"{"status_code":0,"status_msg":"success"}"#)?;
//! assert!(ok.is_success());
//!
//! let limited = BaseResp::error(codes::RATE_LIMIT, "rate limit exceeded");
//! assert!(!limited.is_success());
//! assert_eq!(http_status(limited.status_code), 429);
//! assert_eq!(
//!     serde_json::to_string(&limited)?,
//!     r#"{"status_code":1002,"status_msg":"rate limit exceeded"}"#
//! );
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde::{Deserialize, Serialize};

use crate::error::FieldError;

/// The `base_resp` object: a status code and a message.
///
/// `status_msg` may be missing on the wire; it then decodes as an empty string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BaseResp {
    /// 0 on success, otherwise one of [`codes`] (or a code this crate does not know).
    pub status_code: i64,
    /// A message, `"success"` on success; may be empty.
    #[serde(default)]
    pub status_msg: String,
}

impl BaseResp {
    /// The success envelope: `{"status_code": 0, "status_msg": "success"}`.
    pub fn success() -> Self {
        Self {
            status_code: codes::SUCCESS,
            status_msg: "success".to_owned(),
        }
    }

    /// An error envelope with the given code and message.
    pub fn error(code: i64, msg: impl Into<String>) -> Self {
        Self {
            status_code: code,
            status_msg: msg.into(),
        }
    }

    /// Whether the code is [`codes::SUCCESS`] (0).
    pub fn is_success(&self) -> bool {
        self.status_code == codes::SUCCESS
    }

    /// The HTTP status that honestly reports this envelope, see [`http_status`].
    pub fn http_status(&self) -> u16 {
        http_status(self.status_code)
    }
}

/// A validation error is answered as [`codes::INVALID_PARAMETERS`] (2013) with the error's message.
///
/// ```
/// use tollgate_vendor_audio::base_resp::{codes, BaseResp};
/// use tollgate_vendor_audio::{FieldError, Rule};
///
/// let err = FieldError::new("text", Rule::Required, "'text' is required and must not be empty");
/// let resp = BaseResp::from(&err);
/// assert_eq!(resp.status_code, codes::INVALID_PARAMETERS);
/// assert_eq!(resp.status_msg, "'text' is required and must not be empty");
/// assert_eq!(resp.http_status(), 400);
/// ```
impl From<&FieldError> for BaseResp {
    fn from(err: &FieldError) -> Self {
        Self::error(codes::INVALID_PARAMETERS, err.message.clone())
    }
}

/// The `base_resp.status_code` values (wire-formats §3.4).
///
/// The evidence for each code is given as in the reference: **C** confirmed from official
/// documentation or SDK code, **G** from gateways or third-party code only.
pub mod codes {
    /// Success (C).
    pub const SUCCESS: i64 = 0;
    /// Unknown error; retry (C).
    pub const UNKNOWN: i64 = 1000;
    /// Request timeout; retry (C).
    pub const TIMEOUT: i64 = 1001;
    /// Rate limit (RPM); retry later (C).
    pub const RATE_LIMIT: i64 = 1002;
    /// Not authorized: the key does not match the group, or a wrong auth header (C).
    pub const AUTH: i64 = 1004;
    /// Insufficient balance (C).
    pub const INSUFFICIENT_BALANCE: i64 = 1008;
    /// Internal service error (G).
    pub const INTERNAL: i64 = 1013;
    /// Internal error; retry (C).
    pub const INTERNAL_RETRY: i64 = 1024;
    /// The input content was flagged as sensitive (G).
    pub const INPUT_SENSITIVE: i64 = 1026;
    /// The output content was flagged as sensitive (G).
    pub const OUTPUT_SENSITIVE: i64 = 1027;
    /// Quota exhausted (token plan) (G).
    pub const QUOTA_EXHAUSTED: i64 = 1028;
    /// Quota exhausted (token plan), the second code the official CLI treats so (G).
    pub const PLAN_QUOTA_EXHAUSTED: i64 = 1030;
    /// System error (G).
    pub const SYSTEM_ERROR: i64 = 1033;
    /// Rate limit on tokens per minute (TPM) (C).
    pub const TPM_RATE_LIMIT: i64 = 1039;
    /// Connection (concurrency) limit (G).
    pub const CONNECTION_LIMIT: i64 = 1041;
    /// Invisible or illegal characters make up more than 10% of the text (C).
    pub const INVISIBLE_CHARACTERS: i64 = 1042;
    /// Voice clone: the ASR similarity check failed (G).
    pub const CLONE_ASR_SIMILARITY: i64 = 1043;
    /// Voice clone: the clone-prompt similarity check failed (G).
    pub const CLONE_PROMPT_SIMILARITY: i64 = 1044;
    /// Invalid parameters (C).
    pub const INVALID_PARAMETERS: i64 = 2013;
    /// The voice sample is too short or too long (G).
    pub const VOICE_SAMPLE_DURATION: i64 = 2037;
    /// No voice-clone permission: the account is not verified (G).
    pub const NO_CLONE_PERMISSION: i64 = 2038;
    /// The clone `voice_id` already exists (G).
    pub const DUPLICATE_VOICE_ID: i64 = 2039;
    /// No access to this `voice_id` (G).
    pub const VOICE_ACCESS_DENIED: i64 = 2042;
    /// Rate-growth limit (G).
    pub const RATE_GROWTH_LIMIT: i64 = 2045;
    /// The prompt audio is too long (G).
    pub const PROMPT_AUDIO_TOO_LONG: i64 = 2048;
    /// Invalid API key (G).
    pub const INVALID_API_KEY: i64 = 2049;
    /// Usage limit exceeded (G).
    pub const USAGE_LIMIT_EXCEEDED: i64 = 2056;
    /// The model is not available on the current token plan (G).
    pub const MODEL_NOT_ON_PLAN: i64 = 2061;
    /// Invalid samples or `voice_id` (G).
    pub const INVALID_SAMPLES_OR_VOICE_ID: i64 = 20132;

    /// Every known code with its meaning, in the order of wire-formats §3.4.
    pub const ALL: &[(i64, &str)] = &[
        (SUCCESS, "success"),
        (UNKNOWN, "unknown error"),
        (TIMEOUT, "request timeout"),
        (RATE_LIMIT, "rate limit exceeded"),
        (AUTH, "not authorized"),
        (INSUFFICIENT_BALANCE, "insufficient balance"),
        (INTERNAL, "internal service error"),
        (INTERNAL_RETRY, "internal error"),
        (INPUT_SENSITIVE, "input content flagged as sensitive"),
        (OUTPUT_SENSITIVE, "output content flagged as sensitive"),
        (QUOTA_EXHAUSTED, "quota exhausted"),
        (PLAN_QUOTA_EXHAUSTED, "quota exhausted"),
        (SYSTEM_ERROR, "system error"),
        (TPM_RATE_LIMIT, "token rate limit exceeded"),
        (CONNECTION_LIMIT, "connection limit exceeded"),
        (
            INVISIBLE_CHARACTERS,
            "too many invisible or illegal characters",
        ),
        (
            CLONE_ASR_SIMILARITY,
            "voice clone ASR similarity check failed",
        ),
        (
            CLONE_PROMPT_SIMILARITY,
            "voice clone prompt similarity check failed",
        ),
        (INVALID_PARAMETERS, "invalid parameters"),
        (VOICE_SAMPLE_DURATION, "voice sample too short or too long"),
        (NO_CLONE_PERMISSION, "no voice clone permission"),
        (DUPLICATE_VOICE_ID, "duplicate voice_id"),
        (VOICE_ACCESS_DENIED, "no access to this voice_id"),
        (RATE_GROWTH_LIMIT, "rate growth limit exceeded"),
        (PROMPT_AUDIO_TOO_LONG, "prompt audio too long"),
        (INVALID_API_KEY, "invalid API key"),
        (USAGE_LIMIT_EXCEEDED, "usage limit exceeded"),
        (MODEL_NOT_ON_PLAN, "model not available on the current plan"),
        (INVALID_SAMPLES_OR_VOICE_ID, "invalid samples or voice_id"),
    ];

    /// The meaning of a known code, e.g. `"invalid parameters"` for 2013.
    ///
    /// ```
    /// use tollgate_vendor_audio::base_resp::codes;
    ///
    /// assert_eq!(codes::meaning(codes::INSUFFICIENT_BALANCE), Some("insufficient balance"));
    /// assert_eq!(codes::meaning(4242), None);
    /// ```
    pub fn meaning(code: i64) -> Option<&'static str> {
        ALL.iter()
            .find(|&&(known, _)| known == code)
            .map(|&(_, meaning)| meaning)
    }
}

/// An honest HTTP status for a `base_resp.status_code`, following the mapping suggested in
/// wire-formats §3.4.
///
/// | Codes | Status |
/// |---|---|
/// | 0 | 200 |
/// | 1002, 1039, 1041, 2045 (rate limits) | 429 |
/// | 1004, 2049 (authentication) | 401 |
/// | 1008, 1028, 1030, 2056 (balance or quota exhausted; `insufficient_quota`) | 429 |
/// | 2013, 1042, 20132 (invalid parameters) | 400 |
/// | 1026, 1027 (content filter) | 400 |
/// | 1043, 1044, 2037, 2048 (voice-clone input rejected) | 400 |
/// | 2038, 2042, 2061 (no permission for the voice, clone or model) | 403 |
/// | 2039 (duplicate voice id) | 409 |
/// | 1001 (timeout) | 504 |
/// | 1013, 1024, 1033 (internal or system error) | 500 |
/// | 1000 (unknown error) and every other non-zero code | 502 |
///
/// ```
/// use tollgate_vendor_audio::base_resp::http_status;
///
/// assert_eq!(http_status(0), 200);
/// assert_eq!(http_status(2049), 401);
/// assert_eq!(http_status(1001), 504);
/// assert_eq!(http_status(-7), 502);
/// ```
pub fn http_status(code: i64) -> u16 {
    use codes::*;
    match code {
        SUCCESS => 200,
        RATE_LIMIT | TPM_RATE_LIMIT | CONNECTION_LIMIT | RATE_GROWTH_LIMIT => 429,
        AUTH | INVALID_API_KEY => 401,
        INSUFFICIENT_BALANCE | QUOTA_EXHAUSTED | PLAN_QUOTA_EXHAUSTED | USAGE_LIMIT_EXCEEDED => 429,
        INVALID_PARAMETERS | INVISIBLE_CHARACTERS | INVALID_SAMPLES_OR_VOICE_ID => 400,
        INPUT_SENSITIVE | OUTPUT_SENSITIVE => 400,
        CLONE_ASR_SIMILARITY
        | CLONE_PROMPT_SIMILARITY
        | VOICE_SAMPLE_DURATION
        | PROMPT_AUDIO_TOO_LONG => 400,
        NO_CLONE_PERMISSION | VOICE_ACCESS_DENIED | MODEL_NOT_ON_PLAN => 403,
        DUPLICATE_VOICE_ID => 409,
        TIMEOUT => 504,
        INTERNAL | INTERNAL_RETRY | SYSTEM_ERROR => 500,
        _ => 502,
    }
}
