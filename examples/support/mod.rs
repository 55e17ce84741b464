//! What the benchmark examples share: the simulator and a gateway started in this process, with
//! a funded key.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;
use tollgate_gateway::{Gateway, Parts, server};
use tollgate_request::State;
use tollgate_settings::Config;
use tollgate_sim::{KnobSettings, SimHandle};

/// A running simulator and gateway.
pub struct Stack {
    pub sim: SimHandle,
    /// `http://127.0.0.1:PORT` of the gateway.
    pub gateway: String,
    /// A key with a large balance.
    pub key: String,
    pub state: Arc<State>,
    dir: std::path::PathBuf,
}

impl Drop for Stack {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts the simulator with `knobs` and a gateway on the embedded default configuration, its
/// store on `database_url` (a temporary SQLite file when `None`).
pub async fn start(knobs: KnobSettings, database_url: Option<String>) -> Stack {
    let sim = tollgate_sim::start("127.0.0.1:0".parse().unwrap(), knobs)
        .await
        .unwrap();
    let config = Config::embedded_default().unwrap();
    let dir = std::env::temp_dir().join(format!("tollgate-bench-{}", std::process::id()));
    let url = database_url.unwrap_or_else(|| format!("sqlite://{}/bench.db", dir.display()));
    let store = tollgate_store::Store::connect(&url).await.unwrap();
    let name = format!(
        "bench-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    );
    let (_, key) = store
        .create_account(&name, "1000".parse().unwrap())
        .await
        .unwrap();
    let state = tollgate_gateway::build(
        &config,
        Parts {
            store,
            sim_base_url: Some(&sim.base_url()),
            env: &|_| None,
            media: tollgate_settings::media::MediaLinks::new(&config.media, &[7u8; 32]),
        },
    )
    .unwrap();
    // The video-task pollers and sweeper, as `tollgate serve` runs them.
    std::mem::forget(tollgate_gateway::tasks::worker::spawn(&state));
    tollgate_metering::tokens::warm_up();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let gateway = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(server::serve(
        listener,
        None,
        Gateway::new(state.clone(), &tollgate_gateway::routes::TABLE).with_operator_side(
            std::sync::Arc::new(tollgate_admin::Admin::new(
                None,
                &tollgate_gateway::routes::TABLE.specs(),
            )),
        ),
        std::future::pending(),
        Duration::from_secs(1),
    ));
    Stack {
        sim,
        gateway,
        key: key.secret,
        state,
        dir,
    }
}
