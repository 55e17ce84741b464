//! `tollgate usage`: the usage log (`docs/decisions.md`, "The usage log"), listed or totalled,
//! as a table, JSON or CSV.

use crate::cli::{Common, UsageArgs};
use crate::common::{load_config, open_store};
use serde_json::json;
use tollgate_admin::ops::UsageQuery;
use tollgate_admin::views::{
    self, RECORD_COLUMNS, SUMMARY_COLUMNS, csv_line, record_cells, summary_cells,
};
use tollgate_store::{Store, UsageGroup, UsageRecord, UsageSummary};

pub async fn run(common: &Common, args: UsageArgs) -> Result<(), String> {
    let config = load_config(common)?;
    let store = open_store(&config, false).await?;
    let result = execute(&store, args).await;
    store.close().await;
    result
}

async fn execute(store: &Store, args: UsageArgs) -> Result<(), String> {
    let query = UsageQuery {
        account: args.account.clone(),
        key: args.key.clone(),
        model: args.model.clone(),
        endpoint: args.endpoint.clone(),
        since: args.since.clone(),
        until: args.until.clone(),
        group_by: args.group_by.clone(),
    };
    let (filter, group) = query.filter(store).await.map_err(|e| e.for_cli())?;
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

fn print_records(records: &[UsageRecord], format: Format) {
    match format {
        Format::Json => {
            let rows: Vec<_> = records.iter().map(views::usage_record).collect();
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

fn print_summary(group: UsageGroup, rows: &[UsageSummary], format: Format) {
    let cells: Vec<Vec<String>> = rows.iter().map(|s| summary_cells(group, s)).collect();
    match format {
        Format::Json => {
            let rows: Vec<_> = rows.iter().map(|s| views::summary(group, s)).collect();
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
