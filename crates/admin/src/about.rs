//! What the OpenAPI document says of each admin operation (docs/operations.md, "The admin API"):
//! one function per operation, which its row of [`crate::routes::ADMIN_ROUTES`] carries beside
//! its handler, so an operation and its description are one unit. Schemas are named here and
//! derived in `crate::openapi`.

use serde_json::{Value, json};
use tollgate_exchange::route_doc::{
    About, described, json_body, ok, path_param, query, query_as, r, text,
};

/// An admin operation: tagged `admin`, its parameters as given.
fn admin(summary: &'static str, answers: Value, parameters: Vec<Value>) -> About {
    parameters
        .into_iter()
        .fold(About::new(summary, "admin", answers), About::parameter)
}

/// A list: `{"data": [item, …]}`.
fn data(item: &str) -> Value {
    ok(
        json!({"type": "object", "required": ["data"], "properties": {
            "data": {"type": "array", "items": r(item)},
        }}),
    )
}

fn created(schema: Value, description: &str) -> Value {
    json!({"201": described(schema, description)})
}

fn object() -> Value {
    ok(json!({"type": "object"}))
}

fn account() -> Value {
    path_param("id", "Its id or name")
}

fn key() -> Value {
    path_param("id", "The key's id")
}

fn task() -> Value {
    path_param("id", "The task's id")
}

fn channel() -> Value {
    path_param("name", "The channel's name")
}

fn limit() -> Value {
    query_as(
        "limit",
        "Page size, 1 to 1000 (default 50).",
        json!({"type": "integer", "minimum": 1, "maximum": 1000}),
    )
}

fn before() -> Value {
    query("before", "The `next_cursor` of the previous page.")
}

/// The usage log's filters.
fn usage_filters() -> Vec<Value> {
    vec![
        query(
            "account",
            "An account's id or name, or one of its keys' ids.",
        ),
        query("key", "A key's id."),
        query("model", "A public model."),
        query_as(
            "endpoint",
            "An endpoint name.",
            json!({"type": "string", "enum": tollgate_request::policy::ENDPOINTS}),
        ),
        query("since", "From this time: RFC 3339 or a UTC date."),
        query("until", "Before this time: RFC 3339 or a UTC date."),
    ]
}

pub fn list_accounts() -> About {
    admin(
        "List accounts, newest first, searched by name",
        ok(r("AccountPage")),
        vec![
            query("search", "Part of a name, or an exact id"),
            limit(),
            before(),
        ],
    )
}

pub fn create_account() -> About {
    admin(
        "Create an account and its first key",
        created(r("CreatedAccount"), "Created"),
        vec![],
    )
    .body(json_body(r("NewAccount")))
}

pub fn account_detail() -> About {
    admin(
        "An account with its keys, usage by model and policy",
        ok(r("AccountDetail")),
        vec![account()],
    )
}

pub fn disable_account() -> About {
    admin(
        "Disable an account (all its keys)",
        ok(r("Account")),
        vec![account()],
    )
}

pub fn enable_account() -> About {
    admin("Enable an account", ok(r("Account")), vec![account()])
}

pub fn credit() -> About {
    admin(
        "Credit (or, negative, correct) an account; once per Idempotency-Key",
        json!({
            "201": described(r("Credited"), "Credited"),
            "200": described(r("Credited"), "Already credited under this Idempotency-Key"),
        }),
        vec![
            account(),
            json!({
                "name": "Idempotency-Key",
                "in": "header",
                "required": false,
                "schema": {"type": "string", "minLength": 1, "maxLength": 500},
                "description": "A payment's id: a retried webhook does not credit twice.",
            }),
        ],
    )
    .body(json_body(r("NewCredit")))
}

pub fn account_keys() -> About {
    admin("The account's keys", data("Key"), vec![account()])
}

pub fn add_key() -> About {
    admin(
        "Add a key (its secret is shown once)",
        created(r("NewKey"), "Created"),
        vec![account()],
    )
    .body(json!({"required": false, "content": {"application/json": {"schema": r("KeyName")}}}))
}

pub fn ledger() -> About {
    admin(
        "The account's ledger, newest first",
        ok(r("LedgerRowPage")),
        vec![account(), limit(), before()],
    )
}

pub fn statement() -> About {
    admin(
        "The account's statement: its ledger rows over the period, chained to the last signed checkpoint (`tollgate verify` checks it offline)",
        ok(json!({"type": "object", "required": ["format", "account_id", "rows"]})),
        vec![
            account(),
            query("from", "The period's start, Unix milliseconds"),
            query(
                "until",
                "The period's end (exclusive), Unix milliseconds; now when left out",
            ),
        ],
    )
}

pub fn account_policy() -> About {
    admin(
        "The account's access policy",
        ok(r("Policy")),
        vec![path_param("id", "The account's id or name")],
    )
}

pub fn set_account_policy() -> About {
    admin(
        "Set fields of the policy (the others stay)",
        ok(r("Policy")),
        vec![path_param("id", "The account's id or name")],
    )
    .body(json_body(r("PolicyEdit")))
}

pub fn clear_account_policy() -> About {
    admin(
        "Remove the policy",
        ok(r("Policy")),
        vec![path_param("id", "The account's id or name")],
    )
}

pub fn key_policy() -> About {
    admin("A key's access policy", ok(r("Policy")), vec![key()])
}

pub fn set_key_policy() -> About {
    admin("Set fields of a key's policy", ok(r("Policy")), vec![key()])
        .body(json_body(r("PolicyEdit")))
}

pub fn clear_key_policy() -> About {
    admin("Remove a key's policy", ok(r("Policy")), vec![key()])
}

pub fn revoke_key() -> About {
    admin("Revoke a key for good", ok(r("KeyState")), vec![key()])
}

pub fn enable_key() -> About {
    admin(
        "Enable a disabled (not revoked) key",
        ok(r("KeyState")),
        vec![key()],
    )
}

pub fn rotate_key() -> About {
    admin(
        "Replace a key (same label and policy); the old one is revoked",
        created(r("NewKey"), "The new key"),
        vec![key()],
    )
}

pub fn groups() -> About {
    admin("Price groups", data("Group"), vec![])
}

pub fn set_group() -> About {
    admin(
        "Create or change a price group",
        ok(r("Group")),
        vec![path_param("name", "The group's name")],
    )
    .body(json_body(r("GroupEdit")))
}

pub fn prices() -> About {
    admin(
        "Every model's price versions and the one in effect",
        data("ModelPrices"),
        vec![],
    )
}

pub fn price_history() -> About {
    admin(
        "A model's price versions and the one in effect",
        ok(r("ModelPrices")),
        vec![path_param("name", "The public model")],
    )
}

pub fn set_price() -> About {
    admin(
        "Add a price version (versions are never edited)",
        created(r("PriceVersion"), "Created"),
        vec![path_param("name", "The public model")],
    )
    .body(json_body(r("PriceEdit")))
}

pub fn request_charges() -> About {
    admin(
        "What a request was charged, explained; `disagree` lists charges whose arithmetic does not re-derive",
        ok(r("RequestCharges")),
        vec![path_param("id", "The request's id (x-request-id)")],
    )
}

pub fn usage() -> About {
    let mut parameters = usage_filters();
    parameters.extend([limit(), before()]);
    admin(
        "The usage log, newest first",
        ok(r("UsageRecordPage")),
        parameters,
    )
}

pub fn usage_summary() -> About {
    let mut parameters = usage_filters();
    parameters.push(query_as(
        "group_by",
        "default day",
        json!({"type": "string", "enum": ["day", "hour", "model", "key", "endpoint", "account", "status"]}),
    ));
    admin(
        "Usage totals per time bucket, model, key, endpoint, account or status",
        ok(r("UsageSummary")),
        parameters,
    )
}

pub fn usage_csv() -> About {
    admin(
        "The usage log as CSV, streamed",
        json!({"200": {"description": "CSV with a header row", "content": {"text/csv": text()}}}),
        usage_filters(),
    )
}

pub fn holds() -> About {
    admin(
        "Open holds (video tasks)",
        data("Hold"),
        vec![query("account", "An account's id or name"), limit()],
    )
}

pub fn sessions() -> About {
    admin(
        "Open live voice sessions, newest first: who pays, the model, the responses charged and the last heartbeat (docs/api.md §2.11); `stale_after_seconds`: a heartbeat older than this is the sweeper's",
        ok(
            json!({"type": "object", "required": ["data", "stale_after_seconds"], "properties": {
                "data": {"type": "array", "items": r("Session")},
                "stale_after_seconds": {"type": "integer", "minimum": 0},
            }}),
        ),
        vec![query("account", "An account's id or name"), limit()],
    )
}

pub fn leases() -> About {
    admin(
        "Open credit leases of the running replicas",
        data("Lease"),
        vec![],
    )
}

pub fn audit() -> About {
    admin(
        "Check every money invariant",
        ok(r("AuditReport")),
        vec![query_as(
            "recompute",
            "Also re-derive every charge from its quantity and price version",
            json!({"type": "string", "enum": ["true", "false"]}),
        )],
    )
}

pub fn tasks() -> About {
    admin(
        "Video tasks of every account, newest first",
        ok(r("AdminTaskPage")),
        vec![
            query("account", "An account's id or name"),
            query_as(
                "state",
                "A state",
                json!({"type": "string", "enum": ["submitting", "queued", "running", "succeeded", "failed"]}),
            ),
            limit(),
            before(),
        ],
    )
}

pub fn task_detail() -> About {
    admin(
        "A task with its poll history",
        ok(r("AdminTask")),
        vec![task()],
    )
}

pub fn cancel_task() -> About {
    admin(
        "Cancel a live task and refund it",
        ok(r("AdminTask")),
        vec![task()],
    )
}

pub fn channels() -> About {
    admin(
        "Channel health: success rate, latency percentiles, in flight, circuit",
        data("Channel"),
        vec![],
    )
}

pub fn disable_channel() -> About {
    admin(
        "Switch a channel off (every replica)",
        object(),
        vec![channel()],
    )
}

pub fn enable_channel() -> About {
    admin("Switch a channel back on", object(), vec![channel()])
}

pub fn models() -> About {
    admin(
        "Models, aliases, channels and prices as configured",
        data("CatalogModel"),
        vec![],
    )
}

pub fn config() -> About {
    admin(
        "The reloadable settings in force: their generation, since when, where they are read from, and the last reload refused",
        ok(r("ConfigStatus")),
        vec![],
    )
}

pub fn reload_config() -> About {
    admin(
        "Read the configuration file again and apply its channels, models, aliases, prices, [limits] and [speech] without a restart (requests in flight finish on the settings they started with); refused whole, naming why, when the file does not read, does not fit together or changes a setting only a restart can change",
        ok(r("Reloaded")),
        vec![],
    )
}

pub fn changes() -> About {
    admin(
        "The admin audit log: who changed what, before and after",
        ok(r("AdminChangePage")),
        vec![query("target", "An id or name"), limit(), before()],
    )
}

pub fn overview() -> About {
    admin(
        "What the console's overview shows",
        ok(r("Overview")),
        vec![query_as(
            "hours",
            "1 to 2160 (default 24)",
            json!({"type": "integer", "minimum": 1, "maximum": 2160}),
        )],
    )
}

pub fn alerts() -> About {
    admin(
        "Alert rules in force (the configuration's and the admin API's) and the subjects each fires on",
        data("AlertRuleInForce"),
        vec![],
    )
}

pub fn put_alert() -> About {
    admin(
        "Add an alert rule, or replace one added here; checked as the configuration's are (its secret_env must be set on this replica)",
        created(r("AlertRuleInForce"), "Added"),
        vec![],
    )
    .body(json_body(r("AlertRule")))
}

pub fn delete_alert() -> About {
    admin(
        "Remove an alert rule added through the admin API",
        object(),
        vec![path_param("name", "The rule's name")],
    )
}

pub fn alert_events() -> About {
    admin(
        "Alert events, newest first",
        data("AlertEvent"),
        vec![query("rule", "A rule's name"), limit()],
    )
}

pub fn alert_deliveries() -> About {
    admin(
        "Webhook deliveries of alert events, newest first",
        data("AlertDelivery"),
        vec![
            query("rule", "A rule's name"),
            query_as(
                "state",
                "pending, delivered or failed",
                json!({"type": "string", "enum": ["pending", "delivered", "failed"]}),
            ),
            limit(),
        ],
    )
}

pub fn alert_delivery() -> About {
    admin(
        "A delivery with every attempt: when, by which replica, the answer's status and body",
        ok(r("AlertDelivery")),
        vec![path_param("id", "The delivery's id (its webhook-id)")],
    )
}

pub fn redeliver() -> About {
    admin(
        "Post a delivery again now, under the same webhook-id",
        ok(r("AlertDelivery")),
        vec![path_param("id", "The delivery's id (its webhook-id)")],
    )
}

fn batch() -> Value {
    path_param("id", "The batch's id (`cbt_…`)")
}

pub fn code_batches() -> About {
    admin(
        "Batches of redemption codes, newest first",
        data("CodeBatch"),
        vec![],
    )
}

pub fn issue_codes() -> About {
    admin(
        "Issue a batch of redemption codes; the codes are in this answer and nowhere else",
        created(r("IssuedBatch"), "Issued"),
        vec![],
    )
    .body(json_body(r("NewBatch")))
}

pub fn code_batch() -> About {
    admin(
        "A batch of codes: issued, redeemed, by whom and when",
        ok(r("BatchReport")),
        vec![batch()],
    )
}

pub fn revoke_codes() -> About {
    admin(
        "Revoke a batch: its codes not yet redeemed redeem nothing",
        ok(r("CodeBatch")),
        vec![batch()],
    )
}

pub fn payments() -> About {
    admin(
        "Payments through the payment provider, newest first: top-ups people started and automatic ones, with their refunds and chargebacks",
        ok(r("PaymentPage")),
        vec![
            query("account", "Only this account's (its id or name)."),
            limit(),
            before(),
        ],
    )
}

pub fn payment() -> About {
    admin(
        "One payment",
        ok(r("Payment")),
        vec![path_param("id", "The payment's id (`pay_…`)")],
    )
}

pub fn people() -> About {
    admin(
        "The account's people: who signs in to the customer portal",
        data("Person"),
        vec![account()],
    )
}

pub fn invite() -> About {
    admin(
        "Invite a person to the customer portal: a one-time link (in this answer only) that sets their password",
        created(r("Invited"), "Invited"),
        vec![account()],
    )
    .body(json_body(r("NewPerson")))
}

pub fn remove_person() -> About {
    admin(
        "Remove a person: their sessions end and they can no longer sign in",
        object(),
        vec![path_param("id", "The person's id (per_…)")],
    )
}
