//! The live sessions open on this replica (docs/decisions.md, "Live voice sessions"): how many
//! (for `/metrics` and the drain), each key's slots against `[realtime] max_sessions_per_key`,
//! and the signal that tells every session the replica is draining, so that each ends — its
//! response in progress charged, its hold released — within the drain deadline.

use crate::slots::{KeySlot, KeySlots};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, watch};

/// The live sessions of this replica.
#[derive(Debug)]
pub struct LiveSessions {
    counts: Arc<Counts>,
    per_key: KeySlots,
    drain: watch::Sender<bool>,
}

#[derive(Debug, Default)]
struct Counts {
    open: AtomicU64,
    opened: AtomicU64,
    ended: Notify,
}

/// One session's place: counted while it lives, its key's slot held. Dropped when it ends.
#[derive(Debug)]
pub struct LiveSlot {
    counts: Arc<Counts>,
    _key: KeySlot,
    drain: watch::Receiver<bool>,
}

impl Default for LiveSessions {
    fn default() -> LiveSessions {
        LiveSessions {
            counts: Arc::default(),
            per_key: KeySlots::default(),
            drain: watch::channel(false).0,
        }
    }
}

impl LiveSessions {
    /// A place for a session of `key`, or `None` when the key has `max` open already.
    pub fn enter(&self, key: &str, max: usize) -> Option<LiveSlot> {
        let slot = self.per_key.admit(key, max)?;
        self.counts.open.fetch_add(1, Ordering::SeqCst);
        self.counts.opened.fetch_add(1, Ordering::Relaxed);
        Some(LiveSlot {
            counts: self.counts.clone(),
            _key: slot,
            drain: self.drain.subscribe(),
        })
    }

    /// Sessions open now.
    pub fn open(&self) -> u64 {
        self.counts.open.load(Ordering::SeqCst)
    }

    /// Sessions opened since start.
    pub fn opened(&self) -> u64 {
        self.counts.opened.load(Ordering::Relaxed)
    }

    /// Tells every session, open or opening, that the replica drains.
    pub fn drain(&self) {
        self.drain.send_replace(true);
    }

    /// Waits until every session has ended, at most `within`; false when some outlived it.
    pub async fn ended(&self, within: Duration) -> bool {
        let counts = self.counts.clone();
        tokio::time::timeout(within, async move {
            loop {
                let notified = counts.ended.notified();
                if counts.open.load(Ordering::SeqCst) == 0 {
                    return;
                }
                notified.await;
            }
        })
        .await
        .is_ok()
    }
}

impl LiveSlot {
    /// The drain signal: true once the replica drains (`wait_for(|d| *d)` to wait for it).
    pub fn drain_signal(&self) -> watch::Receiver<bool> {
        self.drain.clone()
    }
}

impl Drop for LiveSlot {
    fn drop(&mut self) {
        self.counts.open.fetch_sub(1, Ordering::SeqCst);
        self.counts.ended.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sessions_are_counted_capped_per_key_and_told_to_drain() {
        let live = LiveSessions::default();
        let a = live.enter("k", 2).unwrap();
        let b = live.enter("k", 2).unwrap();
        assert!(
            live.enter("k", 2).is_none(),
            "a third of one key is refused"
        );
        let c = live.enter("other", 2).unwrap();
        assert_eq!((live.open(), live.opened()), (3, 3));
        let mut told = a.drain_signal();
        live.drain();
        assert!(told.wait_for(|d| *d).await.is_ok());
        drop((a, b));
        assert!(
            !live.ended(Duration::from_millis(10)).await,
            "one is still open"
        );
        drop(c);
        assert!(live.ended(Duration::from_millis(10)).await);
        assert!(live.enter("k", 2).is_some(), "the slots came back");
    }
}
