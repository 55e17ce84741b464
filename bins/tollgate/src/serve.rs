//! `tollgate serve`.

use crate::cli::{Common, ServeArgs};
use crate::common::load_config;
use std::net::SocketAddr;
use std::time::Duration;
use tollgate_gateway::{Background, Gateway, Parts, Reloader, server};
use tollgate_settings::Config;
use tollgate_settings::media::MediaLinks;
use tollgate_store::Store;

/// How often request holds left in the database by versions before the ledger engine are
/// looked for, and how old they must be. Requests now hold in memory, on leases that expire
/// within seconds of a crash.
const STALE_SWEEP_EVERY: Duration = Duration::from_secs(300);
const STALE_HOLD_AGE: Duration = Duration::from_secs(3600);

pub async fn serve(common: &Common, args: ServeArgs) -> Result<(), String> {
    let mut config = load_config(common)?;
    if let Some(listen) = &args.listen {
        config.listen = listen.clone();
    }
    let traces = init_telemetry(&config)?;
    tracing::info!(version = env!("CARGO_PKG_VERSION"), "tollgate starting");

    let store = Store::connect(&config.database_url).await.map_err(|e| {
        format!(
            "database {}: {e}",
            crate::common::redact_url(&config.database_url)
        )
    })?;
    let sim = crate::simulator::start(&config).await?;
    let media = MediaLinks::load(&config.media, &store)
        .await
        .map_err(|e| format!("media link key: {e}"))?;
    let env = |var: &str| std::env::var(var).ok();
    let sim_base_url = sim.as_ref().map(|s| s.base_url());
    let state = tollgate_gateway::build(
        &config,
        Parts {
            store: store.clone(),
            sim_base_url: sim_base_url.as_deref(),
            env: &env,
            media,
        },
    )
    .map_err(|e| e.to_string())?;
    tollgate_gateway::build::load_prices(&state)
        .await
        .map_err(|e| format!("price versions: {e}"))?;
    tokio::task::spawn_blocking(tollgate_metering::tokens::warm_up);
    let sweeper = tokio::spawn(sweep_stale_holds(store.clone()));
    let background = Background::start(&state, &config);
    // The same file read the same way, on SIGHUP and POST /admin/v1/config/reload.
    let reloader = {
        let source = common.config.as_ref().map_or_else(
            || "the embedded default".to_owned(),
            |p| p.display().to_string(),
        );
        let (common, listen) = (common.clone(), args.listen.clone());
        let load = move || {
            let mut config = load_config(&common)?;
            if let Some(listen) = &listen {
                config.listen = listen.clone();
            }
            Ok(config)
        };
        Reloader::new(
            state.clone(),
            config.clone(),
            source,
            Box::new(load),
            sim_base_url,
            Box::new(env),
        )
    };
    // The TLS listener, when `[tls]` asks for one; its certificate is read again on reload.
    let (tls, reloader) = match &config.tls {
        Some(tls) => {
            let (listener, certs) = server::TlsListener::bind(tls)?;
            let bound = listener.listener.local_addr().map_err(|e| e.to_string())?;
            tracing::info!(addr = %bound, "tollgate listening with TLS");
            eprintln!("tollgate listening on https://{bound}");
            (Some(listener), reloader.with_tls(certs))
        }
        None => (None, reloader),
    };
    let reloader = std::sync::Arc::new(reloader);
    let hangups = tokio::spawn(reloader.clone().on_sighup());

    let addr: SocketAddr = config
        .listen
        .parse()
        .map_err(|e| format!("listen address {:?}: {e}", config.listen))?;
    let listener = server::listen(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    tracing::info!(addr = %bound, database = %crate::common::redact_url(&config.database_url), "tollgate listening");
    eprintln!("tollgate listening on http://{bound}");
    warn_when_exposed(&config, bound);
    raise_open_file_limit(&config);

    server::serve(
        listener,
        tls,
        // The request path and, beside it, the operator's side and the customer's
        // (docs/architecture.md).
        {
            let gateway = Gateway::new(state.clone(), &tollgate_gateway::routes::TABLE)
                .with_operator_side(std::sync::Arc::new(tollgate_admin::Admin::new(
                    Some(reloader),
                    &tollgate_gateway::routes::TABLE.specs(),
                )));
            if config.portal.enabled {
                gateway.with_customer_side(std::sync::Arc::new(tollgate_portal::Portal))
            } else {
                gateway
            }
        },
        server::shutdown_signal(),
        Duration::from_secs(config.shutdown_grace_seconds),
    )
    .await;

    sweeper.abort();
    hangups.abort();
    background.stop();
    // Give the leases back and write the last charges: a clean stop leaves nothing reserved —
    // within the grace period, so that a database that takes no writes cannot hold the stop.
    state
        .ledger
        .shutdown(Duration::from_secs(config.shutdown_grace_seconds.max(1)))
        .await;
    if let Some(sim) = sim {
        sim.shutdown().await;
    }
    // Closing waits for connections in use: one stuck on an unreachable database must not hold
    // the stop (issue 42 item 10).
    if tokio::time::timeout(
        Duration::from_secs(config.shutdown_grace_seconds.max(1)),
        store.close(),
    )
    .await
    .is_err()
    {
        tracing::error!("the database connections did not close within the grace period");
    }
    if let Some(traces) = traces {
        // The last batch, on a thread of its own: the SDK's shutdown blocks.
        let _ = tokio::task::spawn_blocking(move || traces.shutdown()).await;
    }
    tracing::info!("tollgate stopped");
    Ok(())
}

/// What a gateway that listens beyond loopback should have set, said once at start
/// (`docs/operations.md`, "Running"): `[media] public_base_url` (otherwise links to videos are
/// built from each request's `Host`), and `[server] admin_networks` (otherwise the admin API,
/// the console, `/metrics` and `/openapi.json` answer any network); and, as information, that
/// with no `[server] trusted_proxies` each peer is taken as the client.
fn warn_when_exposed(config: &Config, bound: SocketAddr) {
    if bound.ip().is_loopback() {
        return;
    }
    let follows_host = config.media.mode == tollgate_settings::config::MediaMode::Signed
        && config.media.public_base_url.is_none();
    if follows_host {
        tracing::warn!(
            addr = %bound,
            "listening beyond loopback without [media] public_base_url: links to finished videos are built from each request's Host header; set public_base_url to the address clients use"
        );
    }
    if config.server.trusted_proxies.is_empty() {
        tracing::info!(
            addr = %bound,
            "listening beyond loopback with no [server] trusted_proxies: each connection's peer is taken as the client; behind a load balancer or proxy, list it, or every client shares its cap per source (max_connections_per_source) and its address in key policies"
        );
    }
    if config.server.admin_networks.is_empty() {
        tracing::warn!(
            addr = %bound,
            "listening beyond loopback without [server] admin_networks: the admin API and console (admin token needed), /metrics and /openapi.json answer any network; list the operators' networks"
        );
    }
}

/// Raises the soft limit on open files to the hard one, as Go's runtime does: the usual soft
/// limit (1024) is far below `max_connections`, and a gateway out of descriptors cannot accept
/// the connection that would make an idle one give way. Says so when even the hard limit leaves
/// too little room (`docs/operations.md`, "Running").
fn raise_open_file_limit(config: &Config) {
    let limit = match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => limit,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read or raise the open-file limit");
            return;
        }
    };
    let server = &config.server;
    // Client connections, an upstream connection for each busy one, and room for the
    // database, spool files and the simulator.
    let wanted = 2 * (server.max_connections + server.reserved_connections) as u64 + 256;
    if limit < wanted {
        tracing::warn!(
            limit,
            wanted,
            "the open-file limit is below what [server] max_connections may need: raise it (ulimit -n, LimitNOFILE=) or lower max_connections"
        );
    } else {
        tracing::debug!(limit, "open-file limit");
    }
}

/// Releases holds left by a replica that died, deletes the drawn images whose links lapsed
/// (`tollgate_store::media`) and the attempt counts of windows a day old
/// (`tollgate_store::throttle`), every [`STALE_SWEEP_EVERY`], for the gateway's life.
async fn sweep_stale_holds(store: Store) {
    let mut tick = tokio::time::interval(STALE_SWEEP_EVERY);
    loop {
        tick.tick().await;
        match store.release_stale_holds(STALE_HOLD_AGE).await {
            Ok(0) => {}
            Ok(n) => tracing::warn!(released = n, "released stale holds"),
            Err(e) => tracing::warn!(error = %e, "stale-hold sweep failed"),
        }
        match store.prune_media(tollgate_journal::clock::unix_now()).await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(pruned = n, "drawn images past their links' expiry"),
            Err(e) => tracing::warn!(error = %e, "pruning drawn images failed"),
        }
        let day_ago = tollgate_journal::clock::now_millis() - 86_400_000;
        if let Err(e) = store.prune_attempts(day_ago).await {
            tracing::warn!(error = %e, "pruning attempt counts failed");
        }
    }
}

/// The log on stderr, as `[log]` says.
pub fn init_logging(config: &Config) {
    install_subscriber(config, None);
}

/// The log, and traces when `[tracing]` or the `OTEL_*` variables ask for them
/// (`crate::telemetry`): the tracer provider to shut down at exit, so that the last batch is
/// sent.
fn init_telemetry(
    config: &Config,
) -> Result<Option<opentelemetry_sdk::trace::SdkTracerProvider>, String> {
    let export = crate::telemetry::resolve(&config.tracing, &|var| std::env::var(var).ok())
        .map_err(|e| format!("traces: {e}"))?;
    let provider = export
        .map(|export| crate::telemetry::provider(export, tokio::runtime::Handle::current()))
        .transpose()?;
    install_subscriber(config, provider.as_ref());
    Ok(provider)
}

/// One subscriber: the log filtered by `[log] filter` (or `RUST_LOG`), and — with a tracer
/// provider — the gateway's spans for OpenTelemetry, filtered apart so that a quiet log keeps
/// its traces.
fn install_subscriber(
    config: &Config,
    traces: Option<&opentelemetry_sdk::trace::SdkTracerProvider>,
) {
    use opentelemetry::trace::TracerProvider;
    use tracing_subscriber::{EnvFilter, Layer, layer::SubscriberExt, util::SubscriberInitExt};
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.log.filter));
    let log = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let log = if config.log.format == "json" {
        log.json().boxed()
    } else {
        log.boxed()
    };
    let traces = traces.map(|provider| {
        tollgate_gateway::trace::set_exporting();
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("tollgate"))
            .with_filter(EnvFilter::new(
                "tollgate_gateway=info,tollgate_gateway::relay=debug",
            ))
    });
    let _ = tracing_subscriber::registry()
        .with(log.with_filter(filter))
        .with(traces)
        .try_init();
}
