//! What every command shares: the configuration in force and the database it names. Every
//! command may import this module; it imports none of them (`docs/architecture.md`).

use crate::cli::Common;
use tollgate_settings::Config;

/// The configuration in force: the file named by --config / TOLLGATE_CONFIG, or the default.
pub fn load_config(common: &Common) -> Result<Config, String> {
    let mut config = match &common.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            Config::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => Config::embedded_default().map_err(|e| format!("embedded default: {e}"))?,
    };
    if let Some(url) = &common.database_url {
        config.database_url = url.clone();
    }
    Ok(config)
}

/// `tollgate config check`: the configuration made into the settings a gateway serves on, the
/// one way `serve` and a reload make them (`tollgate_gateway::build::settings`), without a
/// database or a listener. Says what it would serve.
pub fn check_config(common: &Common) -> Result<(), String> {
    let config = load_config(common)?;
    // The simulator's address is known only once it listens; any will do for the check.
    let sim = config.simulator.enabled.then_some("http://127.0.0.1:1");
    let env = |var: &str| std::env::var(var).ok();
    let settings = tollgate_gateway::build::settings(&config, sim, &env, &|_| None)
        .map_err(|e| e.to_string())?;
    let source = common.config.as_ref().map_or_else(
        || "the embedded default".to_owned(),
        |p| p.display().to_string(),
    );
    println!(
        "{source}: valid — {} channels, {} models, {} client names",
        settings.catalog.channels().len(),
        settings.catalog.models().len(),
        settings.catalog.client_names().len()
    );
    Ok(())
}

/// A database URL as it may be printed: the password replaced by `***`.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// Opens the configured database for a command and says on stderr which one it is (stdout stays
/// the command's output). Only a command that creates something (`keys create`) may create the
/// database; the others refuse a missing SQLite file instead of reporting on an empty new one.
pub async fn open_store(
    config: &tollgate_settings::Config,
    may_create: bool,
) -> Result<tollgate_store::Store, String> {
    let url = redact_url(&config.database_url);
    eprintln!("database: {url}");
    let opened = if may_create {
        tollgate_store::Store::connect(&config.database_url).await
    } else {
        tollgate_store::Store::connect_existing(&config.database_url).await
    };
    opened.map_err(|e| match e {
        tollgate_store::StoreError::NotFound(what) => format!(
            "{what}: run this where `tollgate serve` runs, or pass --database-url \
             (TOLLGATE_DATABASE_URL) or --config"
        ),
        e => format!("database {url}: {e}"),
    })
}
