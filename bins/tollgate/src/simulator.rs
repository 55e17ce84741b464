//! The simulated vendors, in-process (`[simulator] enabled`) or on their own (`tollgate sim`):
//! the cargo feature `sim`, on by default so that `cargo run --release` works with nothing else.
//! A production build can leave it out (`--no-default-features`): the simulator links LAME (an
//! LGPL mp3 encoder) statically, which a gateway serving real upstreams has no use for
//! (`docs/decisions.md`, "The simulator as a cargo feature").

use crate::cli::SimArgs;
use tollgate_settings::Config;

#[cfg(feature = "sim")]
pub use tollgate_sim::SimHandle as Handle;

/// Starts the in-process simulator when the configuration asks for it.
#[cfg(feature = "sim")]
pub async fn start(config: &Config) -> Result<Option<Handle>, String> {
    if !config.simulator.enabled {
        return Ok(None);
    }
    let addr: std::net::SocketAddr = config
        .simulator
        .listen
        .parse()
        .map_err(|e| format!("simulator listen address: {e}"))?;
    let handle = tollgate_sim::start(
        addr,
        tollgate_sim::KnobSettings {
            latency_ms: config.simulator.latency_ms,
            ..Default::default()
        },
    )
    .await
    .map_err(|e| format!("cannot start the simulator on {addr}: {e}"))?;
    tracing::info!(url = %handle.base_url(), "in-process simulator started; channels with base_url = \"sim\" use it");
    Ok(Some(handle))
}

/// `tollgate sim`: the simulated vendors on their own, until SIGTERM or Ctrl-C.
#[cfg(feature = "sim")]
pub async fn run(args: SimArgs) -> Result<(), String> {
    let addr: std::net::SocketAddr = args
        .listen
        .parse()
        .map_err(|e| format!("listen address {:?}: {e}", args.listen))?;
    let handle = tollgate_sim::start(
        addr,
        tollgate_sim::KnobSettings {
            latency_ms: args.latency_ms,
            ..Default::default()
        },
    )
    .await
    .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    eprintln!("simulator listening on {}", handle.base_url());
    tollgate_gateway::server::shutdown_signal().await;
    handle.shutdown().await;
    Ok(())
}

/// What a build without the simulator says when asked for it.
#[cfg(not(feature = "sim"))]
const LEFT_OUT: &str = "this tollgate was built without the simulator (cargo feature `sim`): \
     set [simulator] enabled = false and point the channels at real upstreams";

/// No simulator in this build: nothing to stop.
#[cfg(not(feature = "sim"))]
pub struct Handle;

#[cfg(not(feature = "sim"))]
impl Handle {
    /// Never called: no handle is ever made.
    pub fn base_url(&self) -> String {
        String::new()
    }

    /// Nothing to stop.
    pub async fn shutdown(self) {}
}

/// Refuses a configuration that asks for the simulator.
#[cfg(not(feature = "sim"))]
pub async fn start(config: &Config) -> Result<Option<Handle>, String> {
    if config.simulator.enabled {
        return Err(LEFT_OUT.into());
    }
    Ok(None)
}

/// Says the simulator is not in this build.
#[cfg(not(feature = "sim"))]
pub async fn run(_args: SimArgs) -> Result<(), String> {
    Err(LEFT_OUT.into())
}
