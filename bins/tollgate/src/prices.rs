//! `tollgate prices`: the price book's versions (docs/architecture.md, "Prices"); `tollgate
//! explain`: what a request was charged at them, and why ("Explanations").

use crate::cli::{Common, ImportArgs, PricesCommand};
use crate::common::{load_config, open_store};
use tollgate_admin::ops::{self, Actor};
use tollgate_billing::Tariff;
use tollgate_journal::clock::{format_rfc3339, now_millis, parse_rfc3339};
use tollgate_store::StoredPrice;

pub async fn run(common: &Common, command: PricesCommand) -> Result<(), String> {
    let config = load_config(common)?;
    let store = open_store(&config, false).await?;
    let result = match command {
        PricesCommand::List { json } => match store.price_versions(None).await {
            Ok(all) => print_versions(
                &StoredPrice::in_effect(&all, now_millis()),
                json,
                "no price versions yet: they are made when the gateway first starts",
            ),
            Err(e) => Err(e.to_string()),
        },
        PricesCommand::Show { model, json } => match store.price_versions(Some(&model)).await {
            Ok(all) => match StoredPrice::in_effect(&all, now_millis()).as_slice() {
                [] => Err(format!("{model}: no price version in effect")),
                current => print_versions(current, json, ""),
            },
            Err(e) => Err(e.to_string()),
        },
        PricesCommand::History { model, json } => match store.price_versions(Some(&model)).await {
            Ok(all) if all.is_empty() => Err(format!("{model}: no price versions")),
            Ok(all) => print_versions(&all.iter().collect::<Vec<_>>(), json, ""),
            Err(e) => Err(e.to_string()),
        },
        PricesCommand::Set {
            model,
            prices,
            from,
        } => set(&store, &config, &model, &prices, from.as_deref()).await,
        PricesCommand::Import(import) => import_list(&store, &config, &import).await,
    };
    store.close().await;
    result
}

async fn set(
    store: &tollgate_store::Store,
    config: &tollgate_settings::Config,
    model: &str,
    prices: &[String],
    from: Option<&str>,
) -> Result<(), String> {
    let effective_from = effective_from(from)?;
    let current = store
        .price_versions(Some(model))
        .await
        .map_err(|e| e.to_string())?
        .pop();
    let tariff = tariff_of(prices, current.as_ref().map(|c| &c.tariff))?;
    let known: Vec<&str> = config.models.keys().map(String::as_str).collect();
    let stored = ops::set_price(store, &Actor::cli(), &known, model, &tariff, effective_from)
        .await
        .map_err(|e| e.to_string())?;
    println!(
        "{model}: version {} from {} (running gateways follow within {} s)",
        stored.version,
        format_rfc3339(stored.effective_from),
        tollgate_settings::prices::PRICES_EVERY.as_secs()
    );
    Ok(())
}

/// `--from`: when a version takes effect (`None`: now).
fn effective_from(from: Option<&str>) -> Result<Option<i64>, String> {
    from.map(|t| {
        parse_rfc3339(t).map_err(|_| {
            format!("--from: {t:?} is not an RFC 3339 time such as 2027-01-31T00:00:00Z")
        })
    })
    .transpose()
}

/// `tollgate prices import`: each mapped model's price in effect against the list's, and, with
/// `--apply`, a new version for each that differs and does not rise past `--max-increase`
/// (unless `--force`). Fails when a mapping cannot be priced or, applying, one was held back.
async fn import_list(
    store: &tollgate_store::Store,
    config: &tollgate_settings::Config,
    import: &ImportArgs,
) -> Result<(), String> {
    let file = &import.file;
    use tollgate_billing::price_list::{Format, PriceList, largest_decrease, largest_increase};
    let format = import
        .format
        .as_deref()
        .map(|f| Format::parse(f).ok_or_else(|| format!("--format {f:?}: litellm or models.dev")))
        .transpose()?;
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let list = PriceList::parse(&text, format).map_err(|e| format!("{}: {e}", file.display()))?;
    let effective_from = effective_from(import.from.as_deref())?;
    let versions = store
        .price_versions(None)
        .await
        .map_err(|e| e.to_string())?;
    let in_effect = StoredPrice::in_effect(&versions, now_millis());
    let known: Vec<&str> = config.models.keys().map(String::as_str).collect();
    let limit = import.max_increase / rust_decimal::Decimal::from(100);
    let fall_limit = import.max_decrease / rust_decimal::Decimal::from(100);
    let (mut rows, mut failed, mut held) = (Vec::new(), 0, 0);
    for pair in &import.map {
        let Some((model, id)) = pair.split_once('=') else {
            return Err(format!("--map {pair:?}: write MODEL=ID"));
        };
        let (model, id) = (model.trim(), id.trim());
        let mut row = serde_json::json!({"model": model, "id": id});
        let Some(current) = in_effect.iter().find(|p| p.model == model) else {
            row["status"] = if known.contains(&model) {
                "no price version yet: start the gateway once".into()
            } else {
                "not a configured model".into()
            };
            failed += 1;
            rows.push(row);
            continue;
        };
        row["current"] = serde_json::to_value(&current.tariff).unwrap_or_default();
        row["current_version"] = current.version.into();
        let proposed = match list.tariff(id, &current.tariff) {
            Ok(proposed) => proposed,
            Err(why) => {
                row["status"] = why.to_string().into();
                failed += 1;
                rows.push(row);
                continue;
            }
        };
        row["listed"] = serde_json::to_value(&proposed).unwrap_or_default();
        let rise = largest_increase(&current.tariff, &proposed);
        // The largest change in percent, signed (`null`: a price rising from zero).
        row["change_percent"] = rise
            .map(|r| {
                let percent = (r * rust_decimal::Decimal::from(100))
                    .round_dp(2)
                    .normalize();
                if percent > rust_decimal::Decimal::ZERO {
                    format!("+{percent}")
                } else {
                    percent.to_string()
                }
            })
            .into();
        let fall = largest_decrease(&current.tariff, &proposed);
        row["status"] = if proposed == current.tariff {
            "unchanged".into()
        } else if !import.force && (fall >= rust_decimal::Decimal::ONE || fall > fall_limit) {
            // A price to zero, or halved at a stroke, charges every request less from then
            // on: an operator's decision, never a list's (issue 42).
            held += 1;
            if fall >= rust_decimal::Decimal::ONE {
                "held back: a price falls to zero (--force applies it)".into()
            } else {
                format!(
                    "held back: falls more than {}% (--force applies it)",
                    import.max_decrease
                )
                .into()
            }
        } else if !import.force && rise.is_none_or(|r| r > limit) {
            held += 1;
            format!(
                "held back: rises more than {}% (--force applies it)",
                import.max_increase
            )
            .into()
        } else if import.apply {
            let stored = ops::set_price(
                store,
                &Actor::cli(),
                &known,
                model,
                &proposed,
                effective_from,
            )
            .await
            .map_err(|e| format!("{model}: {e}"))?;
            row["version"] = stored.version.into();
            format!(
                "version {} from {}",
                stored.version,
                format_rfc3339(stored.effective_from)
            )
            .into()
        } else {
            "differs (--apply adds a version)".into()
        };
        rows.push(row);
    }
    if import.json {
        println!(
            "{}",
            serde_json::json!({"format": list.format.as_str(), "models": rows})
        );
    } else {
        println!("{} ({}):", file.display(), list.format.as_str());
        for row in &rows {
            let text = |v: &serde_json::Value| {
                if v.is_null() {
                    "—".to_owned()
                } else {
                    v.to_string()
                }
            };
            println!(
                "  {:<28} {:<32} {} → {}{}  {}",
                row["model"].as_str().unwrap_or_default(),
                row["id"].as_str().unwrap_or_default(),
                text(&row["current"]),
                text(&row["listed"]),
                match row["change_percent"].as_str() {
                    Some(p) if !row["listed"].is_null() => format!(" ({p}%)"),
                    None if !row["listed"].is_null() => " (from zero)".to_owned(),
                    _ => String::new(),
                },
                row["status"].as_str().unwrap_or_default(),
            );
        }
    }
    if failed > 0 || (import.apply && held > 0) {
        Err(format!(
            "{failed} mapping(s) could not be priced, {held} change(s) held back"
        ))
    } else {
        Ok(())
    }
}

/// A tariff from `NAME=DECIMAL` pairs, on `current`'s meter unless one says `meter=…`.
fn tariff_of(pairs: &[String], current: Option<&Tariff>) -> Result<Tariff, String> {
    let mut fields = serde_json::Map::new();
    if let Some(current) = current {
        fields.insert("meter".into(), current.meter().to_string().into());
    }
    // A price by size is written `per_second_by_size.1792x1024=0.50`; a version that names
    // none keeps the current version's, so that a new `per_second` does not drop them.
    let mut by_size = serde_json::Map::new();
    for pair in pairs {
        let (name, value) = pair.split_once('=').ok_or_else(|| {
            format!("{pair:?}: write NAME=DECIMAL, such as per_million_tokens=0.02")
        })?;
        match name.trim().strip_prefix("per_second_by_size.") {
            Some(size) => by_size.insert(size.to_owned(), value.trim().into()),
            None => fields.insert(name.trim().to_owned(), value.trim().into()),
        };
    }
    if by_size.is_empty()
        && let Some(Tariff::VideoSeconds {
            per_second_by_size, ..
        }) = current
    {
        by_size = per_second_by_size
            .iter()
            .map(|(size, price)| (size.clone(), price.to_string().into()))
            .collect();
    }
    if !by_size.is_empty() {
        fields.insert("per_second_by_size".into(), by_size.into());
    }
    serde_json::from_value(serde_json::Value::Object(fields))
        .map_err(|e| format!("the prices: {e}"))
}

fn print_versions(versions: &[&StoredPrice], json: bool, empty: &str) -> Result<(), String> {
    if json {
        let data: Vec<_> = versions
            .iter()
            .map(|p| tollgate_admin::views::price(p))
            .collect();
        println!("{}", serde_json::json!({ "data": data }));
        return Ok(());
    }
    if versions.is_empty() && !empty.is_empty() {
        println!("{empty}");
    }
    for p in versions {
        let tariff = serde_json::to_string(&p.tariff).map_err(|e| e.to_string())?;
        println!(
            "{:<28} v{:<3} from {}  {}  ({}{}{})",
            p.model,
            p.version,
            format_rfc3339(p.effective_from),
            tariff,
            p.source,
            p.actor
                .as_deref()
                .map(|a| format!(" {a}"))
                .unwrap_or_default(),
            if p.reconstructed {
                ", reconstructed at the upgrade"
            } else {
                ""
            },
        );
    }
    Ok(())
}

/// `tollgate explain REQUEST_ID`.
pub async fn explain(common: &Common, request_id: &str, json: bool) -> Result<(), String> {
    let config = load_config(common)?;
    let store = open_store(&config, false).await?;
    let found = store
        .explain(request_id, tollgate_store::Viewer::default())
        .await;
    store.close().await;
    let found = found
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no usage record or charge of a request {request_id:?}"))?;
    if json {
        println!(
            "{}",
            tollgate_admin::views::json(&tollgate_admin::views::request_charges(
                request_id, &found
            ))
        );
    } else {
        let accounts = found.accounts();
        if accounts.len() > 1 {
            // The id was the clients' own choice: these are different requests.
            println!(
                "request id {request_id} was used by {} accounts (a client may choose its own id): their charges are apart",
                accounts.len()
            );
            for account in &accounts {
                println!("  {account}: charged {}", found.charged_to(account));
            }
        } else {
            println!(
                "request {request_id}: charged {} in {} charge(s)",
                found.charged(),
                found.charges.len()
            );
        }
        for c in &found.charges {
            if accounts.len() > 1 {
                print!("\n[{}]", c.account_id.as_deref().unwrap_or("?"));
            }
            print!("{}", explanation_text(c));
        }
        if found.charges.is_empty() {
            println!("  nothing charged (refused, released, or a task still running)");
        }
    }
    if found.disagree.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} charge(s) do not re-derive from their price version: {}",
            found.disagree.len(),
            found.disagree.join(", ")
        ))
    }
}

/// One charge, in words, a line per step.
fn explanation_text(c: &tollgate_billing::Explanation) -> String {
    let or = |v: Option<String>| v.unwrap_or_else(|| "—".into());
    let mut out = format!(
        "\n{} at {} ({})\n",
        c.ledger_id,
        format_rfc3339(c.charged_at),
        c.task_id
            .as_deref()
            .map_or("request".to_owned(), |t| format!("task {t}"))
    );
    out.push_str(&format!(
        "  quantity    {} on {} — measured: {}{}\n",
        c.units,
        c.meter,
        c.measured.map_or("unknown (record pruned)", |m| m.as_str()),
        c.note
            .as_deref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default()
    ));
    out.push_str(&format!(
        "  price       {}@{} {}{}\n",
        c.model,
        or(c.price_version.map(|v| v.to_string())),
        or(c.tariff
            .as_ref()
            .and_then(|t| serde_json::to_string(t).ok())),
        if c.price_reconstructed {
            " (reconstructed at the upgrade)"
        } else {
            ""
        }
    ));
    out.push_str(&format!(
        "  group       {} × {}\n",
        c.price_group.as_deref().unwrap_or("list prices"),
        c.multiplier
    ));
    out.push_str(&format!(
        "  exact       {} → rounded {}: {}\n",
        or(c.exact.clone()),
        c.rounding,
        or(c.priced.map(|p| p.to_string()))
    ));
    out.push_str(&format!(
        "  hold        {}; bound {} ({}){}\n",
        or(c.hold.map(|h| h.to_string())),
        or(c.bound.map(|b| b.to_string())),
        c.bound_basis.as_deref().unwrap_or("—"),
        if c.cut_by_bound {
            " — the bound cut the price"
        } else {
            ""
        }
    ));
    if let Some(anomaly) = &c.anomaly {
        out.push_str(&format!("  anomaly     {anomaly}\n"));
    }
    if c.loss.is_positive() {
        out.push_str(&format!(
            "  loss        {} (the account could not pay it)\n",
            c.loss
        ));
    }
    out.push_str(&format!("  charged     {}\n", c.charged));
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_new_price_keeps_the_prices_by_size_it_does_not_name() {
        let current: Tariff = serde_json::from_str(
            r#"{"meter":"video_seconds","per_second":"0.30","per_second_by_size":{"1792x1024":"0.50"}}"#,
        )
        .unwrap();
        let pairs = |p: &[&str]| p.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let kept = tariff_of(&pairs(&["per_second=0.25"]), Some(&current)).unwrap();
        assert_eq!(
            serde_json::to_value(&kept).unwrap(),
            serde_json::json!({"meter": "video_seconds", "per_second": "0.25", "per_second_by_size": {"1792x1024": "0.50"}})
        );
        let named = tariff_of(
            &pairs(&["per_second=0.25", "per_second_by_size.1024x1792=0.45"]),
            Some(&current),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&named).unwrap()["per_second_by_size"],
            serde_json::json!({"1024x1792": "0.45"})
        );
        assert!(tariff_of(&pairs(&["per_second_by_size.big=1"]), Some(&current)).is_err());
    }
}
