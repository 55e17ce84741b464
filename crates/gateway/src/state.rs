//! What every request shares.

use crate::catalog::Catalog;
use crate::config::SpeechConfig;
use crate::limits::Limits;
use crate::metrics::Metrics;
use std::sync::atomic::{AtomicBool, Ordering};
use tollgate_store::Store;
use tollgate_upstream::HttpClient;

/// The gateway's shared state.
#[derive(Debug)]
pub struct State {
    /// Keys, balances, ledger.
    pub store: Store,
    /// Models and channels.
    pub catalog: Catalog,
    /// The shared upstream client.
    pub http: HttpClient,
    /// Counters and histograms for `/metrics`.
    pub metrics: Metrics,
    /// Body limits by endpoint.
    pub limits: Limits,
    /// Speech synthesis settings.
    pub speech: SpeechConfig,
    draining: AtomicBool,
}

impl State {
    /// Assembles the state.
    pub fn new(store: Store, catalog: Catalog, http: HttpClient, limits: Limits) -> State {
        State {
            store,
            catalog,
            http,
            metrics: Metrics::default(),
            limits,
            speech: SpeechConfig::default(),
            draining: AtomicBool::new(false),
        }
    }

    /// Replaces the speech settings.
    pub fn with_speech(mut self, speech: SpeechConfig) -> State {
        self.speech = speech;
        self
    }

    /// Marks the gateway as shutting down: `/readyz` fails so load balancers stop sending.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether shutdown has begun.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }
}
