//! The document's schemas (`components.schemas`): the shapes of docs/api.md (client endpoints)
//! and docs/operations.md (the admin API). Those of the wire types that derive their schema are
//! [`super::derived`]; the rest are still written here against the documents, and move there
//! type by type (docs/decisions.md, "The OpenAPI document").

use serde_json::{Map, Value, json};
use tollgate_gateway_core::route_doc::r;

/// An exact decimal amount of money: a string, never a float (docs/api.md §8).
pub(super) fn amount() -> Value {
    json!({
        "type": "string",
        "pattern": "^-?[0-9]+(\\.[0-9]+)?$",
        "description": "An exact decimal amount of money (never a float).",
    })
}

/// Every schema, by name: those derived from the wire types ([`super::derived`]) and those
/// written here.
pub(super) fn schemas() -> Map<String, Value> {
    let mut all = written();
    all.extend(super::derived::schemas());
    all
}

/// The schemas not derived yet, written against docs/api.md and docs/operations.md.
fn written() -> Map<String, Value> {
    let named = [
        ("Amount", amount()),
        (
            "OpenAiError",
            json!({
                "type": "object",
                "required": ["error"],
                "description": "The OpenAI-family error shape (also the admin API's).",
                "properties": {
                    "error": {
                        "type": "object",
                        "required": ["message", "type"],
                        "properties": {
                            "message": {"type": "string"},
                            "type": {"type": "string"},
                            "param": {"type": ["string", "null"]},
                            "code": {"type": ["string", "null"]},
                        },
                    },
                },
            }),
        ),
        (
            "ArkError",
            json!({
                "type": "object",
                "required": ["error"],
                "description": "The clip-task family's error shape: string codes such as `InvalidParameter.duration`.",
                "properties": {
                    "error": {
                        "type": "object",
                        "required": ["code", "message"],
                        "properties": {
                            "code": {"type": "string"},
                            "message": {"type": "string"},
                            "param": {"type": ["string", "null"]},
                            "type": {"type": ["string", "null"]},
                        },
                    },
                },
            }),
        ),
        (
            "GoogleError",
            json!({
                "type": "object",
                "required": ["error"],
                "description": "The native family's error shape (an RPC status).",
                "properties": {
                    "error": {
                        "type": "object",
                        "required": ["code", "message", "status"],
                        "properties": {
                            "code": {"type": "integer"},
                            "message": {"type": "string"},
                            "status": {"type": "string"},
                            "details": {"type": "array"},
                        },
                    },
                },
            }),
        ),
        (
            "T2aError",
            json!({
                "type": "object",
                "required": ["base_resp"],
                "description": "The t2a family's error shape: `base_resp.status_code` is not 0.",
                "properties": {"base_resp": r("BaseResp")},
            }),
        ),
        (
            "OpenAiOrGoogleError",
            json!({
                "description": "The OpenAI shape, or the native one when the key came in a native header (x-vendor-api-key, x-goog-api-key).",
                "anyOf": [r("OpenAiError"), r("GoogleError")],
            }),
        ),
        (
            "GoogleStreamError",
            json!({
                "description": "Without alt=sse the native stream is a JSON array, and so is its error (wire-formats §6.3).",
                "anyOf": [r("GoogleError"), {"type": "array", "items": r("GoogleError")}],
            }),
        ),
        (
            "ModelList",
            json!({
                "type": "object",
                "required": ["object", "data"],
                "properties": {"object": {"const": "list"}, "data": {"type": "array", "items": r("Model")}},
            }),
        ),
        (
            "Model",
            json!({
                "type": "object",
                "required": ["id", "object"],
                "properties": {
                    "id": {"type": "string"},
                    "object": {"const": "model"},
                    "created": {"type": "integer"},
                    "owned_by": {"type": "string"},
                },
            }),
        ),
        (
            "Account",
            json!({
                "type": "object",
                "required": ["id", "name", "balance", "held", "leased", "available", "disabled", "created_at"],
                "properties": {
                    "id": {"type": "string"},
                    "name": {"type": "string"},
                    "balance": amount(),
                    "held": amount(),
                    "leased": amount(),
                    "available": amount(),
                    "disabled": {"type": "boolean"},
                    "created_at": {"type": "integer", "description": "Unix milliseconds"},
                },
            }),
        ),
        (
            "AccountDetail",
            json!({
                "allOf": [
                    r("Account"),
                    {
                        "type": "object",
                        "required": ["keys", "usage", "policy", "open_holds"],
                        "properties": {
                            "open_holds": {"type": "integer"},
                            "keys": {"type": "array", "items": r("Key")},
                            "usage": {
                                "type": "array",
                                "description": "Totals per model and meter over the usage log's retention.",
                                "items": r("UsageTotal"),
                            },
                            "policy": r("Policy"),
                        },
                    },
                ],
            }),
        ),
        (
            "AccountPage",
            json!({
                "type": "object",
                "required": ["data", "total", "next_cursor"],
                "properties": {
                    "data": {"type": "array", "items": r("Account")},
                    "total": {"type": "integer"},
                    "next_cursor": {"type": ["string", "null"]},
                },
            }),
        ),
        (
            "NewAccount",
            json!({
                "type": "object",
                "required": ["name"],
                "additionalProperties": false,
                "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 500}, "balance": amount()},
            }),
        ),
        (
            "CreatedAccount",
            json!({
                "type": "object",
                "required": ["account", "key"],
                "properties": {"account": r("Account"), "key": r("NewKey")},
            }),
        ),
        (
            "NewKey",
            json!({
                "type": "object",
                "required": ["id", "secret"],
                "properties": {
                    "id": {"type": "string"},
                    "secret": {"type": "string", "description": "Shown once; only its hash is kept."},
                    "account_id": {"type": "string"},
                    "name": {"type": "string"},
                    "replaces": {"type": "string"},
                },
            }),
        ),
        (
            "Key",
            json!({
                "type": "object",
                "required": ["id", "prefix", "disabled", "revoked", "name", "created_at"],
                "properties": {
                    "id": {"type": "string"},
                    "prefix": {"type": "string"},
                    "disabled": {"type": "boolean"},
                    "revoked": {"type": "boolean"},
                    "name": {"type": "string"},
                    "created_at": {"type": "integer"},
                },
            }),
        ),
        (
            "NewCredit",
            json!({
                "type": "object",
                "required": ["amount", "reason"],
                "additionalProperties": false,
                "properties": {
                    "amount": amount(),
                    "reason": {"type": "string", "minLength": 1, "maxLength": 500},
                    "allow_negative": {"type": "boolean", "default": false},
                },
            }),
        ),
        (
            "Credited",
            json!({
                "type": "object",
                "required": ["ledger_id", "account", "replayed"],
                "properties": {
                    "ledger_id": {"type": "string"},
                    "account": r("Account"),
                    "replayed": {"type": "boolean"},
                },
            }),
        ),
        (
            "Policy",
            json!({
                "type": "object",
                "properties": {
                    "account": {"type": "string"},
                    "key": {"type": "string"},
                    "models": {"type": ["array", "null"], "items": {"type": "string"}},
                    "endpoints": {"type": ["array", "null"], "items": {"type": "string"}},
                    "expires_at": {"type": ["string", "null"]},
                    "ips": {"type": ["array", "null"], "items": {"type": "string"}},
                    "group": {"type": ["string", "null"]},
                    "rpm": {"type": ["integer", "null"]},
                    "per_minute": {"type": ["object", "null"], "additionalProperties": {"type": "integer"}},
                    "concurrency": {"type": ["integer", "null"]},
                    "streams": {"type": ["integer", "null"]},
                    "daily_budget": {"oneOf": [amount(), {"type": "null"}]},
                    "monthly_budget": {"oneOf": [amount(), {"type": "null"}]},
                    "tasks_in_flight": {"type": ["integer", "null"]},
                },
            }),
        ),
        (
            "PolicyEdit",
            json!({
                "type": "object",
                "additionalProperties": false,
                "minProperties": 1,
                "properties": {
                    "models": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    "endpoints": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "string",
                            // The access policies' endpoint names (`policy::ENDPOINTS`).
                            "enum": tollgate_gateway_core::policy::ENDPOINTS,
                        },
                    },
                    "expires": {"type": "string", "description": "RFC 3339"},
                    "ips": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    "group": {"type": "string"},
                    "rpm": {"type": "integer", "minimum": 1},
                    "per_minute": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 1}},
                    "concurrency": {"type": "integer", "minimum": 1},
                    "streams": {"type": "integer", "minimum": 1},
                    "daily_budget": amount(),
                    "monthly_budget": amount(),
                    "tasks_in_flight": {"type": "integer", "minimum": 1},
                },
            }),
        ),
        (
            "Group",
            json!({
                "type": "object",
                "required": ["name", "multiplier", "models"],
                "properties": {
                    "name": {"type": "string"},
                    "multiplier": {"type": "string"},
                    "models": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            }),
        ),
        (
            "GroupEdit",
            json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "multiplier": {"type": "string"},
                    "models": {"type": "object", "additionalProperties": {"type": "string"}},
                    "drop_models": {"type": "array", "items": {"type": "string"}},
                },
            }),
        ),
        (
            "Tariff",
            json!({
                "type": "object",
                "required": ["meter"],
                "description": "A model's list tariff (docs/configuration.md, `[models.NAME.price]`): its meter and its prices as decimal strings.",
                "properties": {
                    "meter": {"type": "string", "enum": ["characters", "audio_seconds", "tokens", "video_tokens", "video_seconds", "text_tokens"]},
                    "per_second_by_size": {
                        "type": "object",
                        "description": "video_seconds: the price per second of the sizes (WIDTHxHEIGHT) priced otherwise than per_second.",
                        "additionalProperties": {"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?$"},
                    },
                },
                "additionalProperties": {"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?$"},
            }),
        ),
        (
            "Explanation",
            json!({
                "type": "object",
                "description": "One charge, explained (docs/architecture.md, \"Explanations\"): the quantity and how it was measured, the price version and its tariff, the price group's multiplier, the exact product and its one rounding, the hold and the bound, and what the bound or the balance cut.",
                "required": ["ledger_id", "model", "meter", "quantity", "units", "multiplier", "rounding", "cut_by_bound", "loss", "charged", "charged_at"],
                "properties": {
                    "ledger_id": {"type": "string"},
                    "account_id": {"type": "string", "description": "The account charged: a request id may be a client's own, shared by several accounts' requests."},
                    "request_id": {"type": ["string", "null"]},
                    "task_id": {"type": ["string", "null"]},
                    "charged_at": {"type": "integer"},
                    "model": {"type": "string"},
                    "meter": {"type": "string"},
                    "quantity": {"type": "object"},
                    "units": {"type": "string"},
                    "measured": {"type": ["string", "null"], "enum": ["vendor", "local_count", "probe", "requested", "delivered_part", null]},
                    "note": {"type": ["string", "null"]},
                    "price_version": {"type": ["integer", "null"]},
                    "price_reconstructed": {"type": "boolean"},
                    "tariff": {"oneOf": [r("Tariff"), {"type": "null"}]},
                    "price_group": {"type": ["string", "null"]},
                    "multiplier": {"type": "string"},
                    "exact": {"type": ["string", "null"]},
                    "rounding": {"type": "string"},
                    "priced": {"oneOf": [amount(), {"type": "null"}]},
                    "hold": {"oneOf": [amount(), {"type": "null"}]},
                    "bound": {"oneOf": [amount(), {"type": "null"}]},
                    "bound_basis": {"type": ["string", "null"]},
                    "cut_by_bound": {"type": "boolean"},
                    "anomaly": {"type": ["string", "null"]},
                    "loss": amount(),
                    "charged": amount(),
                },
            }),
        ),
        (
            "RequestCharges",
            json!({
                "type": "object",
                "required": ["object", "request_id", "charged", "data"],
                "properties": {
                    "object": {"const": "tollgate.charges"},
                    "request_id": {"type": "string"},
                    "charged": amount(),
                    "accounts": {
                        "type": "array",
                        "description": "What each account was charged under this id (more than one when accounts' clients chose the same id).",
                        "items": {
                            "type": "object",
                            "required": ["account_id", "charged"],
                            "properties": {"account_id": {"type": "string"}, "charged": amount()},
                        },
                    },
                    "data": {"type": "array", "items": r("Explanation")},
                },
            }),
        ),
        (
            "PriceVersion",
            json!({
                "type": "object",
                "required": ["model", "version", "tariff", "effective_from", "created_at", "source", "reconstructed"],
                "properties": {
                    "model": {"type": "string"},
                    "version": {"type": "integer", "minimum": 1},
                    "tariff": r("Tariff"),
                    "effective_from": {"type": "integer", "description": "Unix milliseconds"},
                    "effective_from_time": {"type": "string"},
                    "created_at": {"type": "integer"},
                    "created_time": {"type": "string"},
                    "source": {"type": "string", "enum": ["config", "cli", "admin"]},
                    "actor": {"type": ["string", "null"]},
                    "reconstructed": {"type": "boolean"},
                },
            }),
        ),
        (
            "ModelPrices",
            json!({
                "type": "object",
                "required": ["model", "current", "versions"],
                "properties": {
                    "model": {"type": "string"},
                    "current": {"type": ["integer", "null"], "description": "The version in effect now"},
                    "versions": {"type": "array", "items": r("PriceVersion")},
                },
            }),
        ),
        (
            "PriceEdit",
            json!({
                "type": "object",
                "required": ["price"],
                "additionalProperties": false,
                "properties": {
                    "price": r("Tariff"),
                    "effective_from": {"type": "string", "description": "RFC 3339; now when left out, never in the past"},
                },
            }),
        ),
        (
            "UsageRecord",
            json!({
                "type": "object",
                "required": ["id", "created_at", "time", "kind", "account_id", "endpoint", "status", "charge"],
                "properties": {
                    "id": {"type": "string"},
                    "created_at": {"type": "integer"},
                    "time": {"type": "string"},
                    "kind": {"type": "string"},
                    "account_id": {"type": "string"},
                    "key_id": {"type": ["string", "null"]},
                    "endpoint": {"type": "string"},
                    "model": {"type": ["string", "null"]},
                    "channel": {"type": ["string", "null"]},
                    "status": {"type": "integer"},
                    "meter": {"type": ["string", "null"]},
                    "units": {"type": "integer"},
                    "charge": amount(),
                    "hold": amount(),
                    "latency_ms": {"type": "integer"},
                    "upstream_ms": {"type": ["integer", "null"]},
                    "request_id": {"type": ["string", "null"]},
                    "task_id": {"type": ["string", "null"]},
                    "estimated": {"type": "boolean"},
                    "note": {"type": ["string", "null"]},
                },
            }),
        ),
        (
            "UsagePage",
            json!({
                "type": "object",
                "required": ["data", "next_cursor"],
                "properties": {
                    "data": {"type": "array", "items": r("UsageRecord")},
                    "next_cursor": {"type": ["string", "null"]},
                },
            }),
        ),
        (
            "UsageTotal",
            json!({
                "type": "object",
                "required": ["group", "requests", "errors", "units", "charge"],
                "properties": {
                    "group": {"type": "string"},
                    "meter": {"type": ["string", "null"]},
                    "requests": {"type": "integer"},
                    "errors": {"type": "integer"},
                    "units": {"type": "integer"},
                    "charge": amount(),
                },
            }),
        ),
        (
            "UsageSummary",
            json!({
                "type": "object",
                "required": ["group_by", "data"],
                "properties": {
                    "group_by": {"type": "string"},
                    "data": {"type": "array", "items": r("UsageTotal")},
                },
            }),
        ),
        (
            "LedgerRow",
            json!({
                "type": "object",
                "required": ["id", "kind", "amount", "balance_after", "created_at"],
                "properties": {
                    "id": {"type": "string"},
                    "kind": {"type": "string", "enum": ["credit", "adjustment", "charge"]},
                    "amount": amount(),
                    "balance_after": amount(),
                    "model": {"type": ["string", "null"]},
                    "quantity": {"type": ["string", "null"]},
                    "request_id": {"type": ["string", "null"]},
                    "task_id": {"type": ["string", "null"]},
                    "note": {"type": ["string", "null"]},
                    "created_at": {"type": "integer"},
                    "time": {"type": "string"},
                },
            }),
        ),
        (
            "LedgerPage",
            json!({
                "type": "object",
                "required": ["data", "next_cursor"],
                "properties": {
                    "data": {"type": "array", "items": r("LedgerRow")},
                    "next_cursor": {"type": ["string", "null"]},
                },
            }),
        ),
        (
            "Hold",
            json!({
                "type": "object",
                "required": ["id", "account_id", "model", "amount", "created_at"],
                "properties": {
                    "id": {"type": "string"},
                    "account_id": {"type": "string"},
                    "key_id": {"type": ["string", "null"]},
                    "model": {"type": "string"},
                    "amount": amount(),
                    "request_id": {"type": ["string", "null"]},
                    "task_id": {"type": ["string", "null"]},
                    "created_at": {"type": "integer"},
                },
            }),
        ),
        (
            "Lease",
            json!({
                "type": "object",
                "required": ["id", "account_id", "owner", "remaining", "expires_at"],
                "properties": {
                    "id": {"type": "string"},
                    "account_id": {"type": "string"},
                    "owner": {"type": "string"},
                    "remaining": amount(),
                    "expires_at": {"type": "integer"},
                },
            }),
        ),
        (
            "AuditReport",
            json!({
                "type": "object",
                "description": "What `tollgate audit` checks: every money invariant, and each violation (docs/decisions.md, \"What the audit checks\"). `operator_losses` sums what charges could not take (late charges of a fenced replica, settlements above what was available); `negative_accounts` lists accounts below zero that recorded overdraws explain.",
                "required": [
                    "accounts",
                    "ledger_rows",
                    "holds",
                    "leases",
                    "tasks",
                    "total_balance",
                    "total_credited",
                    "total_charged",
                    "anomalies",
                    "operator_losses",
                    "negative_accounts",
                    "violations",
                ],
                "properties": {
                    "accounts": {"type": "integer"},
                    "ledger_rows": {"type": "integer"},
                    "holds": {"type": "integer"},
                    "leases": {"type": "integer"},
                    "tasks": {"type": "integer"},
                    "total_balance": amount(),
                    "total_credited": amount(),
                    "total_charged": amount(),
                    "anomalies": {"type": "integer"},
                    "operator_losses": amount(),
                    "negative_accounts": {"type": "array", "items": {"type": "string"}},
                    "violations": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["rule", "subject", "detail"],
                            "properties": {
                                "rule": {
                                    "type": "string",
                                    "description": "balance_is_ledger_sum, held_is_open_holds, one_charge_per_hold, charge_has_usage_record, usage_record_has_charge, balance_after_chain, negative_balance_explained, …",
                                },
                                "subject": {"type": "string"},
                                "detail": {"type": "string"},
                            },
                        },
                    },
                },
            }),
        ),
        (
            "AdminTask",
            json!({
                "type": "object",
                "required": ["id", "format", "account_id", "model", "state", "created_at"],
                "properties": {
                    "id": {"type": "string"},
                    "format": {"type": "string"},
                    "account_id": {"type": "string"},
                    "key_id": {"type": "string"},
                    "model": {"type": "string"},
                    "channel": {"type": "string"},
                    "state": {
                        "type": "string",
                        "enum": ["submitting", "queued", "running", "succeeded", "failed"],
                    },
                    "upstream_status": {"type": ["string", "null"]},
                    "progress": {"type": "integer"},
                    "hold_id": {"type": ["string", "null"]},
                    "created_at": {"type": "integer"},
                    "history": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["at", "state"],
                            "properties": {
                                "at": {"type": "integer"},
                                "state": {"type": "string"},
                                "upstream_status": {"type": ["string", "null"]},
                                "progress": {"type": ["integer", "null"]},
                                "detail": {"type": ["string", "null"]},
                            },
                        },
                    },
                },
            }),
        ),
        (
            "TaskPage",
            json!({
                "type": "object",
                "required": ["data", "next_cursor"],
                "properties": {
                    "data": {"type": "array", "items": r("AdminTask")},
                    "next_cursor": {"type": ["string", "null"]},
                },
            }),
        ),
        (
            "Channel",
            json!({
                "type": "object",
                "required": ["name", "successes", "failures", "circuit", "disabled", "in_flight"],
                "properties": {
                    "name": {"type": "string"},
                    "format": {"type": "string"},
                    "base_url": {"type": "string"},
                    "successes": {"type": "integer"},
                    "failures": {"type": "integer"},
                    "success_rate": {"type": ["number", "null"]},
                    "latency_ms": {
                        "type": "object",
                        "properties": {
                            "p50": {"type": ["integer", "null"]},
                            "p95": {"type": ["integer", "null"]},
                            "p99": {"type": ["integer", "null"]},
                        },
                    },
                    "circuit": {"type": "string", "enum": ["closed", "open", "half_open"]},
                    "failures_in_a_row": {"type": "integer"},
                    "disabled": {"type": "boolean"},
                    "in_flight": {"type": "integer"},
                    "max_concurrency": {"type": "integer"},
                },
            }),
        ),
        (
            "ConfigStatus",
            json!({
                "type": "object",
                "required": ["generation", "installed_at", "source", "reloads_refused", "last_refusal"],
                "properties": {
                    "generation": {"type": "integer"},
                    "installed_at": {"type": "string", "format": "date-time"},
                    "source": {"type": ["string", "null"], "description": "Where the configuration is read from; null for a gateway that cannot reload"},
                    "reloads_refused": {"type": "integer"},
                    "last_refusal": {
                        "type": ["object", "null"],
                        "required": ["at", "error"],
                        "properties": {
                            "at": {"type": "string", "format": "date-time"},
                            "error": {"type": "string"},
                        },
                    },
                },
            }),
        ),
        (
            "AlertRule",
            json!({
                "type": "object",
                "additionalProperties": false,
                "required": ["name", "when", "webhook_url"],
                "description": "An alert rule, as an [[alerts]] table of the configuration (docs/operations.md, \"Alerts\"). Which fields a rule takes depends on `when`; the others are refused by name.",
                "properties": {
                    "name": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"},
                    "when": {"type": "string", "enum": tollgate_alerts::rule::CONDITIONS},
                    "threshold": amount(),
                    "percents": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 1000}, "minItems": 1},
                    "factor": {"type": "string", "description": "A decimal, at least 1"},
                    "window_minutes": {"type": "integer", "minimum": 1, "maximum": 1440},
                    "baseline_hours": {"type": "integer", "minimum": 1, "maximum": 720},
                    "min_spend": amount(),
                    "rate": {"type": "string", "description": "A decimal from 0 to below 1"},
                    "min_tasks": {"type": "integer", "minimum": 0},
                    "channel": {"type": "string"},
                    "account": {"type": "string"},
                    "key": {"type": "string"},
                    "webhook_url": {"type": "string", "pattern": "^https?://"},
                    "secret_env": {"type": "string", "pattern": "^[A-Za-z0-9_]+$"},
                    "format": {"type": "string", "enum": ["standard", "slack"]},
                    "action": {"type": "string", "enum": ["disable", "throttle"]},
                    "throttle_rpm": {"type": "integer", "minimum": 1},
                },
            }),
        ),
        (
            "AlertRuleInForce",
            json!({
                "type": "object",
                "required": ["name", "source", "rule", "firing"],
                "properties": {
                    "name": {"type": "string"},
                    "source": {"type": "string", "enum": ["config", "admin"]},
                    "rule": r("AlertRule"),
                    "firing": {"type": "array", "items": {
                        "type": "object",
                        "required": ["subject", "level", "episode"],
                        "properties": {
                            "subject": {"type": "string"},
                            "level": {"type": "integer"},
                            "episode": {"type": "integer"},
                        },
                    }},
                },
            }),
        ),
        (
            "AlertEvent",
            json!({
                "type": "object",
                "required": ["id", "created_at", "rule", "subject", "type", "episode", "level", "summary", "facts", "action"],
                "properties": {
                    "id": {"type": "string"},
                    "created_at": {"type": "string", "format": "date-time"},
                    "rule": {"type": "string"},
                    "subject": {"type": "string"},
                    "type": {"type": "string", "enum": ["alert.fired", "alert.resolved"]},
                    "episode": {"type": "integer"},
                    "level": {"type": "integer"},
                    "summary": {"type": "string"},
                    "facts": {"type": "object"},
                    "action": {"type": ["string", "null"]},
                },
            }),
        ),
        (
            "AlertDelivery",
            json!({
                "type": "object",
                "required": ["id", "event_id", "rule", "url", "format", "state", "attempts", "next_attempt_at", "created_at", "delivered_at", "payload"],
                "properties": {
                    "id": {"type": "string", "description": "The webhook-id, the same on every attempt"},
                    "event_id": {"type": "string"},
                    "rule": {"type": "string"},
                    "url": {"type": "string"},
                    "format": {"type": "string", "enum": ["standard", "slack"]},
                    "state": {"type": "string", "enum": ["pending", "delivered", "failed"]},
                    "attempts": {"type": "integer"},
                    "next_attempt_at": {"type": ["string", "null"], "format": "date-time"},
                    "created_at": {"type": "string", "format": "date-time"},
                    "delivered_at": {"type": ["string", "null"], "format": "date-time"},
                    "payload": {"description": "What is posted"},
                    "history": {"type": "array", "items": {
                        "type": "object",
                        "required": ["attempt", "started_at", "duration_ms", "replica", "status", "answer", "error"],
                        "properties": {
                            "attempt": {"type": "integer"},
                            "started_at": {"type": "string", "format": "date-time"},
                            "duration_ms": {"type": "integer"},
                            "replica": {"type": "string"},
                            "status": {"type": ["integer", "null"]},
                            "answer": {"type": ["string", "null"], "description": "Always null: a receiver's body is not kept (its status and timing say what happened)"},
                            "error": {"type": ["string", "null"]},
                        },
                    }},
                },
            }),
        ),
        (
            "Reloaded",
            json!({
                "type": "object",
                "required": ["generation", "source", "changes"],
                "properties": {
                    "generation": {"type": "integer", "description": "The settings' generation in force: 1 at start, one more at each reload that changed something"},
                    "source": {"type": "string", "description": "Where the configuration was read from"},
                    "changes": {"type": "array", "items": {"type": "string"}, "description": "What changed, a line each (`channel \"a\": added`); empty when nothing did"},
                },
            }),
        ),
        (
            "CatalogModel",
            json!({
                "type": "object",
                "required": ["model", "kind", "channels", "price"],
                "properties": {
                    "model": {"type": "string"},
                    "kind": {"type": "string"},
                    "upstream_model": {"type": "string"},
                    "channels": {"type": "array", "items": {"type": "string"}},
                    "price": {"type": "object"},
                    "aliases": {"type": "array", "items": {"type": "string"}},
                },
            }),
        ),
        (
            "AdminChange",
            json!({
                "type": "object",
                "required": ["id", "created_at", "actor", "action", "target"],
                "properties": {
                    "id": {"type": "string"},
                    "created_at": {"type": "integer"},
                    "actor": {"type": "string"},
                    "action": {"type": "string"},
                    "target": {"type": "string"},
                    "before": {},
                    "after": {},
                    "request_id": {"type": ["string", "null"]},
                },
            }),
        ),
        (
            "Overview",
            json!({
                "type": "object",
                "required": [
                    "hours",
                    "bucket",
                    "over_time",
                    "by_model",
                    "by_status",
                    "requests",
                    "errors",
                    "open_holds",
                    "open_leases",
                    "tasks_in_flight",
                ],
                "properties": {
                    "hours": {"type": "integer"},
                    "bucket": {"type": "string"},
                    "over_time": {"type": "array", "items": r("UsageTotal")},
                    "by_model": {"type": "array", "items": r("UsageTotal")},
                    "by_status": {"type": "array", "items": r("UsageTotal")},
                    "requests": {"type": "integer"},
                    "errors": {"type": "integer"},
                    "open_holds": {
                        "type": "object",
                        "properties": {"count": {"type": "integer"}, "amount": amount()},
                    },
                    "open_leases": {
                        "type": "object",
                        "properties": {"count": {"type": "integer"}, "amount": amount()},
                    },
                    "tasks_in_flight": {"type": "integer"},
                },
            }),
        ),
    ];
    named
        .into_iter()
        .map(|(name, schema)| (name.to_owned(), schema))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn no_schema_is_both_derived_and_written() {
        let written = super::written();
        for name in super::super::derived::schemas().keys() {
            assert!(!written.contains_key(name), "{name} is derived and written");
        }
    }
}
