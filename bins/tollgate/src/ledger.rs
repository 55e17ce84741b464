//! `tollgate ledger keygen|checkpoint`, `tollgate statement`, `tollgate verify`: the chained
//! ledger as an operator and a customer use it (docs/architecture.md, "The chained ledger").

use crate::cli::{Common, LedgerCommand};
use crate::common::{load_config, open_store};
use std::io::Write;
use std::path::{Path, PathBuf};
use tollgate_journal::clock::{format_rfc3339, now_millis, parse_rfc3339};
use tollgate_settings::ledger_keys;
use tollgate_store::checkpoint;
use tollgate_store::statement::{self, Statement};

pub async fn run(common: &Common, command: LedgerCommand) -> Result<(), String> {
    match command {
        LedgerCommand::Keygen { out } => keygen(&out),
        LedgerCommand::Checkpoint => {
            let config = load_config(common)?;
            let key = ledger_keys::signing_key(&config.ledger)?.ok_or(
                "no signing key: set [ledger] signing_key_file or TOLLGATE_LEDGER_KEY_FILE (make one with `tollgate ledger keygen`)",
            )?;
            let store = open_store(&config, false).await?;
            let log = ledger_keys::published_log(&config.ledger);
            let made = store.make_checkpoint(&key, log.as_ref()).await;
            store.close().await;
            let made = made.map_err(|e| e.to_string())?;
            println!(
                "checkpoint {} of {} chain head(s), signed by key {}",
                made.id,
                made.heads.len(),
                made.key_id
            );
            Ok(())
        }
    }
}

fn keygen(out: &Path) -> Result<(), String> {
    let key = checkpoint::generate_key();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(out).map_err(|e| {
        format!(
            "{}: {e} (an existing key is never overwritten)",
            out.display()
        )
    })?;
    file.write_all(checkpoint::key_file_text(&key).as_bytes())
        .map_err(|e| format!("{}: {e}", out.display()))?;
    let public = key.verifying_key();
    println!("key id      {}", checkpoint::key_id(&public));
    println!("public key  {}", checkpoint::public_key_hex(&public));
    eprintln!(
        "wrote {}: keep it secret and backed up; set [ledger] signing_key_file to it",
        out.display()
    );
    Ok(())
}

pub async fn statement(
    common: &Common,
    account: &str,
    from: Option<&str>,
    until: Option<&str>,
    out: Option<PathBuf>,
) -> Result<(), String> {
    let time = |flag: &str, t: &str| {
        parse_rfc3339(t).map_err(|_| {
            format!("--{flag}: {t:?} is not an RFC 3339 time such as 2027-01-31T00:00:00Z")
        })
    };
    let from = from.map(|t| time("from", t)).transpose()?.unwrap_or(0);
    let until = until
        .map(|t| time("until", t))
        .transpose()?
        .unwrap_or_else(|| now_millis() + 1);
    let config = load_config(common)?;
    let key = ledger_keys::signing_key(&config.ledger)?;
    let store = open_store(&config, false).await?;
    let log = ledger_keys::published_log(&config.ledger);
    let made = store
        .statement(account, from, until, key.as_ref(), log.as_ref())
        .await;
    store.close().await;
    let made = made.map_err(|e| e.to_string())?;
    let text = serde_json::to_string_pretty(&made).map_err(|e| e.to_string())?;
    match out {
        Some(path) => {
            // A new file only, never through a link: an existing path (a symlink someone put
            // where the statement goes, say) is refused, not followed (issue 42).
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options.open(&path).map_err(|e| {
                format!(
                    "{}: {e} (a statement is written to a new file only; an existing one, or a link, is never followed or overwritten)",
                    path.display()
                )
            })?;
            file.write_all((text + "\n").as_bytes())
                .map_err(|e| format!("{}: {e}", path.display()))?;
            eprintln!(
                "{}: {} row(s) of {} from {} until {}{}",
                path.display(),
                made.rows.iter().filter(|r| r.in_period).count(),
                made.account_name,
                format_rfc3339(made.from),
                format_rfc3339(made.until),
                if made.checkpoint.is_none() {
                    " — no checkpoint covers it yet: set a signing key to make one"
                } else {
                    ""
                }
            );
        }
        None => println!("{text}"),
    }
    Ok(())
}

pub fn verify(file: &Path, keys: &[String]) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let made: Statement = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a statement: {e}", file.display()))?;
    // Only a key stands for a key: its 16-digit id names it for people, and anyone can make a
    // key whose id they chose the first digits of.
    for key in keys {
        checkpoint::parse_public_key(key).map_err(|e| {
            format!("--key {key:?}: {e}: pass the operator's public key (64 hex digits, /.well-known/tollgate-ledger-keys), not its id")
        })?;
    }
    let trusted = (!keys.is_empty()).then_some(keys);
    let verified = statement::verify(&made, trusted).map_err(|e| format!("NOT VERIFIED: {e}"))?;
    match verified.checkpoint {
        Some((id, key)) => println!(
            "verified: {} row(s) of {}, chained to checkpoint {id} signed by key {key}{}",
            verified.rows,
            made.account_name,
            if trusted.is_none() {
                " (pass --key to require the operator's published key)"
            } else {
                ""
            }
        ),
        None => println!(
            "verified: {} row(s) of {} chain together, but no signed checkpoint covers them",
            verified.rows, made.account_name
        ),
    }
    Ok(())
}
