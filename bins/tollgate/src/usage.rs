//! `tollgate usage`: the usage log (`docs/decisions.md`, "The usage log"), listed or totalled,
//! as a table, JSON or CSV.

use crate::cli::{Common, UsageArgs, load_config, open_store};
use serde_json::{Value, json};
use tollgate_gateway::clock::{format_rfc3339, parse_rfc3339};
use tollgate_gateway::routes::POLICY_ENDPOINTS;
use tollgate_store::{Store, UsageFilter, UsageGroup, UsageRecord, UsageSummary};

pub async fn run(common: &Common, args: UsageArgs) -> Result<(), String> {
    let config = load_config(common)?;
    let store = open_store(&config, false).await?;
    let result = execute(&store, args).await;
    store.close().await;
    result
}

async fn execute(store: &Store, args: UsageArgs) -> Result<(), String> {
    let group = args
        .group_by
        .as_deref()
        .map(|g| {
            UsageGroup::parse(g).ok_or_else(|| {
                format!("--group-by: {g:?} is not one of day, hour, model, key, endpoint, account")
            })
        })
        .transpose()?;
    if let Some(endpoint) = &args.endpoint
        && !POLICY_ENDPOINTS.contains(&endpoint.as_str())
    {
        return Err(format!(
            "--endpoint: {endpoint:?} is not one of {}",
            POLICY_ENDPOINTS.join(", ")
        ));
    }
    let account_id = match &args.account {
        Some(account) => Some(
            store
                .find_account(account)
                .await
                .map_err(|e| format!("--account: {e}"))?
                .id,
        ),
        None => None,
    };
    let filter = UsageFilter {
        account_id,
        key_id: args.key.clone(),
        model: args.model.clone(),
        endpoint: args.endpoint.clone(),
        since: args
            .since
            .as_deref()
            .map(|t| parse_time("--since", t))
            .transpose()?,
        until: args
            .until
            .as_deref()
            .map(|t| parse_time("--until", t))
            .transpose()?,
    };
    let format = Format::of(&args);
    match group {
        Some(group) => {
            let rows = store
                .usage_summary(&filter, group)
                .await
                .map_err(|e| e.to_string())?;
            print_summary(group, &rows, format);
        }
        None => {
            let records = store
                .usage_records(&filter, args.limit, None)
                .await
                .map_err(|e| e.to_string())?;
            print_records(&records, format);
        }
    }
    Ok(())
}

/// An RFC 3339 time, or a UTC date standing for its midnight.
fn parse_time(flag: &str, text: &str) -> Result<i64, String> {
    let text = text.trim();
    let full = if text.len() == 10 {
        format!("{text}T00:00:00Z")
    } else {
        text.to_owned()
    };
    parse_rfc3339(&full).map_err(|_| {
        format!(
            "{flag}: {text:?} is not an RFC 3339 time (2026-11-24T08:00:00Z) or a date (2026-11-24)"
        )
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Table,
    Json,
    Csv,
}

impl Format {
    fn of(args: &UsageArgs) -> Format {
        if args.json {
            Format::Json
        } else if args.csv {
            Format::Csv
        } else {
            Format::Table
        }
    }
}

const RECORD_COLUMNS: &[&str] = &[
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

fn record_cells(r: &UsageRecord) -> Vec<String> {
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

fn print_records(records: &[UsageRecord], format: Format) {
    match format {
        Format::Json => {
            let rows: Vec<Value> = records
                .iter()
                .map(|r| {
                    let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
                    v["time"] = json!(format_rfc3339(r.created_at));
                    v
                })
                .collect();
            println!("{}", json!({ "records": rows }));
        }
        Format::Csv => {
            println!("{}", RECORD_COLUMNS.join(","));
            for r in records {
                println!("{}", csv_line(&record_cells(r)));
            }
        }
        Format::Table => {
            // The columns an operator scans; --json and --csv carry all of them.
            let shown = [0, 2, 5, 6, 8, 10, 9, 11, 13];
            let rows: Vec<Vec<String>> = records
                .iter()
                .map(|r| {
                    let cells = record_cells(r);
                    shown.iter().map(|&i| cells[i].clone()).collect()
                })
                .collect();
            let header: Vec<&str> = shown.iter().map(|&i| RECORD_COLUMNS[i]).collect();
            print_table(&header, &rows);
            if records.is_empty() {
                println!("(no usage records match)");
            }
        }
    }
}

fn summary_cells(group: UsageGroup, s: &UsageSummary) -> Vec<String> {
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

const SUMMARY_COLUMNS: &[&str] = &["group", "meter", "requests", "errors", "units", "charge"];

fn print_summary(group: UsageGroup, rows: &[UsageSummary], format: Format) {
    let cells: Vec<Vec<String>> = rows.iter().map(|s| summary_cells(group, s)).collect();
    match format {
        Format::Json => {
            let rows: Vec<Value> = rows
                .iter()
                .zip(&cells)
                .map(|(s, c)| {
                    json!({
                        "group": c[0], "meter": s.meter, "requests": s.requests,
                        "errors": s.errors, "units": s.units, "charge": s.charge,
                    })
                })
                .collect();
            println!("{}", json!({ "rows": rows }));
        }
        Format::Csv => {
            println!("{}", SUMMARY_COLUMNS.join(","));
            for c in &cells {
                println!("{}", csv_line(c));
            }
        }
        Format::Table => {
            print_table(SUMMARY_COLUMNS, &cells);
            if rows.is_empty() {
                println!("(no usage records match)");
            }
        }
    }
}

/// One CSV line (RFC 4180): a field with a comma, quote or line break is quoted, its quotes
/// doubled.
fn csv_line(cells: &[String]) -> String {
    cells
        .iter()
        .map(|c| {
            if c.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", c.replace('"', "\"\""))
            } else {
                c.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", padded.join("  ").trim_end());
    };
    line(header.iter().map(|h| (*h).to_owned()).collect());
    for row in rows {
        line(row.clone());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_what_needs_quoting() {
        let cells = vec!["a".to_owned(), "b,c".to_owned(), "say \"hi\"".to_owned()];
        assert_eq!(csv_line(&cells), "a,\"b,c\",\"say \"\"hi\"\"\"");
    }

    #[test]
    fn times_are_rfc3339_or_a_date() {
        assert_eq!(parse_time("--since", "1970-01-02").unwrap(), 86_400_000);
        assert_eq!(
            parse_time("--since", "1970-01-01T00:00:01Z").unwrap(),
            1_000
        );
        assert!(parse_time("--since", "yesterday").is_err());
    }
}
