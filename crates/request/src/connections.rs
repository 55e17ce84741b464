//! Who is connected, and who gives way when the gateway is full (`docs/decisions.md`,
//! "Connection hygiene").
//!
//! A connection is **idle** while no request of it is in flight: just accepted and not yet
//! through its headers (a flood's sockets never get further), or a keep-alive connection
//! between requests. The gateway admits every new connection it can by closing the connection
//! that has been idle longest, so a flood of sockets that never send a request cannot keep real
//! clients out: it only ever displaces itself. Two caps decide:
//!
//! * **per source** (`max_connections_per_source`; an IPv4 address or an IPv6 /64, trusted
//!   proxies exempt): a source at its cap gets its own longest-idle connection closed for the
//!   new one, or, when all of its connections are busy, the new one is closed on accept;
//! * **in total** (`max_connections`, then `reserved_connections` for health checks): at the cap
//!   the longest-idle connection of all gives way; when every connection is busy the reserve
//!   takes the new one, and past the reserve it is closed on accept.
//!
//! [`Registry`] is the decision alone — no sockets, no clock (a counter orders idleness) — so it
//! is tested against a model; [`Connections`] wraps it for the accept loop, with a [`Ticket`]
//! per connection that tells the registry when requests start and end, and a signal that closes
//! a connection chosen to give way.

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use tokio::sync::oneshot;

/// A connection, as the registry knows it.
pub type ConnId = u64;

/// The caps admission applies (`[server]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Connections served in full (`max_connections`).
    pub full: usize,
    /// Connections past that which still answer `/healthz`, `/readyz`, `/metrics`.
    pub reserve: usize,
    /// Connections of one source (`max_connections_per_source`); 0: no cap.
    pub per_source: usize,
}

/// How an admitted connection is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Every route.
    Full,
    /// The operational routes only; everything else answers 503 (`Gateway::ops_only`).
    Reserve,
}

/// Which cap made a connection give way, or refused one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// The source's own cap.
    PerSource,
    /// `max_connections` and its reserve.
    Total,
}

impl Cap {
    /// The label in metrics.
    pub fn label(self) -> &'static str {
        match self {
            Cap::PerSource => "per_source",
            Cap::Total => "total",
        }
    }
}

/// What [`Registry::admit`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Admitted as `class`; the connections in `evicted` (all idle) gave way and are to be
    /// closed.
    Admitted {
        id: ConnId,
        class: Class,
        evicted: Vec<(ConnId, Cap)>,
    },
    /// Every connection that could have given way is busy: close the new one at once.
    Refused(Cap),
}

/// A source: an IPv4 address, or the /64 an IPv6 address is in (one host's usual share; a
/// cap per address would be no cap for a client holding a /64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Source(IpAddr);

impl Source {
    /// The source `peer` belongs to.
    pub fn of(peer: IpAddr) -> Source {
        match peer {
            IpAddr::V4(_) => Source(peer),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Source(IpAddr::V4(v4)),
                None => {
                    let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                    Source(IpAddr::V6(prefix.into()))
                }
            },
        }
    }
}

#[derive(Debug)]
struct Entry {
    source: Source,
    class: Class,
    /// Requests in flight.
    busy: u32,
    /// When it last became idle (a turn of the registry's counter), if it is idle.
    idle_since: u64,
}

#[derive(Debug, Default)]
struct SourceState {
    open: usize,
    /// Its idle connections, longest idle first.
    idle: BTreeSet<(u64, ConnId)>,
}

/// The admission decision and the state it needs: who is open, who is idle since when.
#[derive(Debug)]
pub struct Registry {
    caps: Caps,
    /// Ids and idle turns, from one counter.
    turn: u64,
    open: HashMap<ConnId, Entry>,
    /// Idle connections of each class, longest idle first.
    idle_full: BTreeSet<(u64, ConnId)>,
    idle_reserve: BTreeSet<(u64, ConnId)>,
    sources: HashMap<Source, SourceState>,
    full: usize,
    reserve: usize,
}

impl Registry {
    /// An empty registry under `caps`.
    pub fn new(caps: Caps) -> Registry {
        Registry {
            caps,
            turn: 0,
            open: HashMap::new(),
            idle_full: BTreeSet::new(),
            idle_reserve: BTreeSet::new(),
            sources: HashMap::new(),
            full: 0,
            reserve: 0,
        }
    }

    /// Decides on a connection from `peer`; `exempt` (a trusted proxy) is not held to the cap
    /// per source.
    pub fn admit(&mut self, peer: IpAddr, exempt: bool) -> Admission {
        let source = Source::of(peer);
        let mut evicted = Vec::new();
        let at_source_cap = !exempt
            && self.caps.per_source > 0
            && self.sources.get(&source).map_or(0, |s| s.open) >= self.caps.per_source;
        if at_source_cap {
            let Some(&(_, victim)) = self.sources.get(&source).and_then(|s| s.idle.first()) else {
                return Admission::Refused(Cap::PerSource);
            };
            self.remove(victim);
            evicted.push((victim, Cap::PerSource));
        }
        let class = if self.full < self.caps.full {
            Class::Full
        } else if let Some(&(_, victim)) = self.idle_full.first() {
            self.remove(victim);
            evicted.push((victim, Cap::Total));
            Class::Full
        } else if self.reserve < self.caps.reserve {
            Class::Reserve
        } else if let Some(&(_, victim)) = self.idle_reserve.first() {
            self.remove(victim);
            evicted.push((victim, Cap::Total));
            Class::Reserve
        } else {
            return Admission::Refused(Cap::Total);
        };
        self.turn += 1;
        let id = self.turn;
        match class {
            Class::Full => self.full += 1,
            Class::Reserve => self.reserve += 1,
        }
        self.open.insert(
            id,
            Entry {
                source,
                class,
                busy: 0,
                idle_since: id,
            },
        );
        let state = self.sources.entry(source).or_default();
        state.open += 1;
        state.idle.insert((id, id));
        self.idle_of(class).insert((id, id));
        Admission::Admitted { id, class, evicted }
    }

    /// A request of `id` started: it is not idle until every request of it has ended.
    pub fn request_started(&mut self, id: ConnId) {
        let Some(entry) = self.open.get_mut(&id) else {
            return;
        };
        entry.busy += 1;
        if entry.busy == 1 {
            let key = (entry.idle_since, id);
            let (source, class) = (entry.source, entry.class);
            self.idle_of(class).remove(&key);
            if let Some(state) = self.sources.get_mut(&source) {
                state.idle.remove(&key);
            }
        }
    }

    /// A request of `id` ended (its response was sent, or abandoned).
    pub fn request_ended(&mut self, id: ConnId) {
        self.turn += 1;
        let turn = self.turn;
        let Some(entry) = self.open.get_mut(&id) else {
            return;
        };
        entry.busy = entry.busy.saturating_sub(1);
        if entry.busy == 0 {
            entry.idle_since = turn;
            let (source, class) = (entry.source, entry.class);
            self.idle_of(class).insert((turn, id));
            if let Some(state) = self.sources.get_mut(&source) {
                state.idle.insert((turn, id));
            }
        }
    }

    /// `id` closed (or was told to, having given way: then this is a no-op).
    pub fn closed(&mut self, id: ConnId) {
        self.remove(id);
    }

    /// Connections open now, by class.
    pub fn open(&self) -> (usize, usize) {
        (self.full, self.reserve)
    }

    /// Idle connections now.
    pub fn idle(&self) -> usize {
        self.idle_full.len() + self.idle_reserve.len()
    }

    fn idle_of(&mut self, class: Class) -> &mut BTreeSet<(u64, ConnId)> {
        match class {
            Class::Full => &mut self.idle_full,
            Class::Reserve => &mut self.idle_reserve,
        }
    }

    fn remove(&mut self, id: ConnId) {
        let Some(entry) = self.open.remove(&id) else {
            return;
        };
        let key = (entry.idle_since, id);
        match entry.class {
            Class::Full => self.full -= 1,
            Class::Reserve => self.reserve -= 1,
        }
        self.idle_of(entry.class).remove(&key);
        if let Some(state) = self.sources.get_mut(&entry.source) {
            state.open -= 1;
            state.idle.remove(&key);
            if state.open == 0 {
                self.sources.remove(&entry.source);
            }
        }
    }
}

/// The registry shared by the accept loop and the connections, with the signal that closes a
/// connection chosen to give way.
#[derive(Debug)]
pub struct Connections {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    registry: Registry,
    give_way: HashMap<ConnId, oneshot::Sender<()>>,
}

/// An admitted connection.
#[derive(Debug)]
pub struct Admitted {
    /// Held for the connection's life (and by its requests); dropping the last one tells the
    /// registry it closed.
    pub ticket: Arc<Ticket>,
    /// How it is served.
    pub class: Class,
    /// Resolves when the connection is to close to make room for a newer one.
    pub give_way: oneshot::Receiver<()>,
    /// The connections that gave way for it, and why (for metrics).
    pub evicted: Vec<Cap>,
}

impl Connections {
    /// No connections yet, under `caps`.
    pub fn new(caps: Caps) -> Arc<Connections> {
        Arc::new(Connections {
            inner: Mutex::new(Inner {
                registry: Registry::new(caps),
                give_way: HashMap::new(),
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Admits a connection from `peer` (see [`Registry::admit`]), closing those that give way;
    /// `Err` names the cap that refused it.
    pub fn admit(self: &Arc<Self>, peer: IpAddr, exempt: bool) -> Result<Admitted, Cap> {
        let mut inner = self.lock();
        let (id, class, evicted) = match inner.registry.admit(peer, exempt) {
            Admission::Admitted { id, class, evicted } => (id, class, evicted),
            Admission::Refused(cap) => return Err(cap),
        };
        let mut caps = Vec::with_capacity(evicted.len());
        for (victim, cap) in evicted {
            if let Some(signal) = inner.give_way.remove(&victim) {
                let _ = signal.send(());
            }
            caps.push(cap);
        }
        let (tx, give_way) = oneshot::channel();
        inner.give_way.insert(id, tx);
        Ok(Admitted {
            ticket: Arc::new(Ticket {
                connections: self.clone(),
                id,
            }),
            class,
            give_way,
            evicted: caps,
        })
    }

    /// Idle connections now.
    pub fn idle(&self) -> usize {
        self.lock().registry.idle()
    }
}

/// One admitted connection's place in the registry.
#[derive(Debug)]
pub struct Ticket {
    connections: Arc<Connections>,
    id: ConnId,
}

impl Ticket {
    /// Marks a request of this connection in flight until the returned guard drops (with the
    /// response's body, see [`WhileBusy`]).
    pub fn request(self: &Arc<Self>) -> Busy {
        self.connections.lock().registry.request_started(self.id);
        Busy(self.clone())
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut inner = self.connections.lock();
        inner.registry.closed(self.id);
        inner.give_way.remove(&self.id);
    }
}

/// A request in flight on a connection; dropping it ends the request.
#[derive(Debug)]
pub struct Busy(Arc<Ticket>);

impl Drop for Busy {
    fn drop(&mut self) {
        let ticket = &self.0;
        ticket.connections.lock().registry.request_ended(ticket.id);
    }
}

pin_project_lite::pin_project! {
    /// A response body that keeps its request in flight until hyper has sent it (or dropped
    /// it): a connection streaming an answer is not idle.
    #[derive(Debug)]
    pub struct WhileBusy<B> {
        #[pin]
        body: B,
        busy: Busy,
    }
}

impl<B> WhileBusy<B> {
    /// `body`, with `busy` held until it is dropped.
    pub fn new(body: B, busy: Busy) -> WhileBusy<B> {
        WhileBusy { body, busy }
    }
}

impl<B: Body<Data = Bytes>> Body for WhileBusy<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.project().body.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;
    use std::net::Ipv4Addr;

    fn ip(n: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(127, 0, 0, n))
    }

    fn admitted(a: Admission) -> (ConnId, Class, Vec<(ConnId, Cap)>) {
        match a {
            Admission::Admitted { id, class, evicted } => (id, class, evicted),
            Admission::Refused(cap) => panic!("refused by {cap:?}"),
        }
    }

    #[test]
    fn at_the_total_cap_the_longest_idle_gives_way_and_busy_ones_never_do() {
        let mut r = Registry::new(Caps {
            full: 3,
            reserve: 1,
            per_source: 0,
        });
        let (a, _, _) = admitted(r.admit(ip(1), false));
        let (b, _, _) = admitted(r.admit(ip(1), false));
        let (c, _, _) = admitted(r.admit(ip(2), false));
        // a serves a request; b, then c, are idle longest.
        r.request_started(a);
        let (d, class, evicted) = admitted(r.admit(ip(3), false));
        assert_eq!((class, evicted), (Class::Full, vec![(b, Cap::Total)]));
        // c finishes a request: it is now idle more recently than d.
        r.request_started(c);
        r.request_ended(c);
        let (_, _, evicted) = admitted(r.admit(ip(3), false));
        assert_eq!(evicted, vec![(d, Cap::Total)]);
        // Everyone busy: the reserve, then a refusal.
        let open: Vec<ConnId> = r.open.keys().copied().collect();
        for id in open {
            if r.open[&id].busy == 0 {
                r.request_started(id);
            }
        }
        let (e, class, evicted) = admitted(r.admit(ip(4), false));
        assert_eq!((class, evicted), (Class::Reserve, vec![]));
        r.request_started(e);
        assert_eq!(r.admit(ip(4), false), Admission::Refused(Cap::Total));
        // A request ends: its connection may give way again.
        r.request_ended(a);
        let (_, class, evicted) = admitted(r.admit(ip(5), false));
        assert_eq!((class, evicted), (Class::Full, vec![(a, Cap::Total)]));
    }

    #[test]
    fn a_source_at_its_cap_displaces_only_itself() {
        let mut r = Registry::new(Caps {
            full: 100,
            reserve: 0,
            per_source: 2,
        });
        let (a, _, _) = admitted(r.admit(ip(1), false));
        let (b, _, _) = admitted(r.admit(ip(1), false));
        let (other, _, _) = admitted(r.admit(ip(2), false));
        let (_, _, evicted) = admitted(r.admit(ip(1), false));
        assert_eq!(evicted, vec![(a, Cap::PerSource)]);
        assert!(r.open.contains_key(&other));
        // All of its connections busy: refused, nobody else touched.
        let mine: Vec<ConnId> = r
            .open
            .iter()
            .filter(|(_, e)| e.source == Source::of(ip(1)))
            .map(|(id, _)| *id)
            .collect();
        for id in &mine {
            r.request_started(*id);
        }
        assert_eq!(r.admit(ip(1), false), Admission::Refused(Cap::PerSource));
        // A trusted proxy is not held to it.
        let (_, _, evicted) = admitted(r.admit(ip(1), true));
        assert_eq!(evicted, vec![]);
        assert!(r.open.contains_key(&b));
    }

    #[test]
    fn ipv6_sources_are_their_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(Source::of(a), Source::of(b));
        assert_ne!(Source::of(a), Source::of(c));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(Source::of(mapped), Source::of("10.0.0.1".parse().unwrap()));
    }

    /// What the model tracks of a connection.
    #[derive(Debug, Clone, Copy)]
    struct Model {
        source: u8,
        class: Class,
        busy: u32,
        idle_since: u64,
    }

    #[derive(Debug, Clone)]
    enum Op {
        Admit { source: u8, exempt: bool },
        Start(usize),
        End(usize),
        Close(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            // Source 3 is a trusted proxy.
            4 => (0u8..4).prop_map(|source| Op::Admit { source, exempt: source == 3 }),
            2 => (0usize..64).prop_map(Op::Start),
            2 => (0usize..64).prop_map(Op::End),
            1 => (0usize..64).prop_map(Op::Close),
        ]
    }

    /// The model's longest-idle connection among those `filter` keeps.
    fn longest_idle(
        model: &HashMap<ConnId, Model>,
        filter: &dyn Fn(&Model) -> bool,
    ) -> Option<ConnId> {
        model
            .iter()
            .filter(|(_, m)| m.busy == 0 && filter(m))
            .min_by_key(|(_, m)| m.idle_since)
            .map(|(id, _)| *id)
    }

    proptest! {
        /// Against a model: the caps always hold, only idle connections give way and always the
        /// longest idle one, and a refusal means nobody could have given way.
        #[test]
        fn admission_keeps_the_caps_and_displaces_only_the_longest_idle(
            full in 1usize..6,
            reserve in 0usize..3,
            per_source in 0usize..4,
            ops in prop::collection::vec(op(), 1..200),
        ) {
            let caps = Caps { full, reserve, per_source };
            let mut r = Registry::new(caps);
            let mut model: HashMap<ConnId, Model> = HashMap::new();
            let mut clock = 0u64;
            for op in ops {
                let ids: Vec<ConnId> = {
                    let mut ids: Vec<_> = model.keys().copied().collect();
                    ids.sort_unstable();
                    ids
                };
                match op {
                    Op::Admit { source, exempt } => {
                        let src_open = model.values().filter(|m| m.source == source).count();
                        match r.admit(ip(source), exempt) {
                            Admission::Refused(Cap::PerSource) => {
                                prop_assert!(!exempt && per_source > 0 && src_open >= per_source);
                                prop_assert_eq!(longest_idle(&model, &|m| m.source == source), None);
                            }
                            Admission::Refused(Cap::Total) => {
                                prop_assert_eq!(longest_idle(&model, &|_| true), None);
                            }
                            Admission::Admitted { id, class, evicted } => {
                                for (victim, cap) in &evicted {
                                    let expected = match cap {
                                        Cap::PerSource => longest_idle(&model, &|m| m.source == source),
                                        Cap::Total => {
                                            let class = model[victim].class;
                                            longest_idle(&model, &|m| m.class == class)
                                        }
                                    };
                                    prop_assert_eq!(Some(*victim), expected);
                                    model.remove(victim);
                                }
                                clock += 1;
                                model.insert(id, Model { source, class, busy: 0, idle_since: clock });
                            }
                        }
                    }
                    Op::Start(i) => {
                        if let Some(&id) = ids.get(i % ids.len().max(1)) {
                            r.request_started(id);
                            if let Some(m) = model.get_mut(&id) { m.busy += 1; }
                        }
                    }
                    Op::End(i) => {
                        clock += 1;
                        if let Some(&id) = ids.get(i % ids.len().max(1))
                            && model[&id].busy > 0
                        {
                            r.request_ended(id);
                            if let Some(m) = model.get_mut(&id) {
                                m.busy -= 1;
                                if m.busy == 0 { m.idle_since = clock; }
                            }
                        }
                    }
                    Op::Close(i) => {
                        if let Some(&id) = ids.get(i % ids.len().max(1)) {
                            r.closed(id);
                            model.remove(&id);
                        }
                    }
                }
                let full_open = model.values().filter(|m| m.class == Class::Full).count();
                let reserve_open = model.len() - full_open;
                prop_assert_eq!(r.open(), (full_open, reserve_open));
                prop_assert!(full_open <= full && reserve_open <= reserve);
                prop_assert_eq!(r.idle(), model.values().filter(|m| m.busy == 0).count());
                if per_source > 0 {
                    // The trusted proxy (3) may go past the cap; no other source does.
                    for source in 0u8..3 {
                        let open = model.values().filter(|m| m.source == source).count();
                        prop_assert!(open <= per_source);
                    }
                }
            }
        }
    }
}
