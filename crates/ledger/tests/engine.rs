//! The engine against a model of the database, over random interleavings of holds,
//! settlements (up to twice the hold), releases, credits, delayed answers, time, lease expiry,
//! crashes, a replica paused past its lease while the other spends, and operators' corrections
//! recalling leases — two replicas sharing accounts. The model's charges are fenced as the
//! store's are (`tollgate_store`'s `pay`): a lease pays only while it is open and its writer's,
//! the rest comes from what is available, the remainder is lost. After every step: the
//! database's books balance, no lease is negative, no account is overdrawn or leased beyond its
//! balance, each hold closes exactly once, and each engine agrees with the database about its
//! leases. At the end every lease comes back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};
use tollgate_billing::Amount;
use tollgate_ledger::{
    Charge, CreditAnswer, CreditRequest, Engine, HoldId, HoldOutcome, LeaseCommand, LeaseId,
    Policy, Refusal, RenewAnswer, Ticket, grant,
};

const ACCOUNTS: [&str; 2] = ["acct_a", "acct_b"];

/// What the SQL writer does, on integers.
#[derive(Debug, Default)]
struct Db {
    balance: BTreeMap<String, i64>,
    leased: BTreeMap<String, i64>,
    /// Open leases: account, amount, expiry, owner (a replica's incarnation).
    leases: BTreeMap<String, (String, i64, u64, u64)>,
    disabled: BTreeMap<String, bool>,
    credited: BTreeMap<String, i64>,
    charged: BTreeMap<String, i64>,
    /// What charges could not take: the operator's loss.
    lost: BTreeMap<String, i64>,
    next: u64,
}

impl Db {
    fn available(&self, account: &str) -> i64 {
        self.balance[account] - self.leased[account]
    }

    fn credit_request(
        &mut self,
        req: &CreditRequest,
        owner: u64,
        now: u64,
        ttl: u64,
    ) -> CreditAnswer {
        if self.disabled[&req.account] {
            return CreditAnswer::Refused(Refusal::Disabled);
        }
        let available = Amount::from_nanos(self.available(&req.account));
        let Some(granted) = grant(available, req.need, req.want) else {
            return CreditAnswer::Refused(Refusal::Insufficient {
                available,
                requested: req.need,
            });
        };
        let id = match &req.lease {
            Some(LeaseId(id)) if self.leases.get(id).is_some_and(|l| l.3 == owner) => id.clone(),
            _ => {
                self.next += 1;
                let id = format!("lease_{}", self.next);
                self.leases
                    .insert(id.clone(), (req.account.clone(), 0, 0, owner));
                id
            }
        };
        let lease = self.leases.get_mut(&id).unwrap();
        lease.1 += granted.nanos();
        lease.2 = now + ttl;
        *self.leased.get_mut(&req.account).unwrap() += granted.nanos();
        CreditAnswer::Granted {
            lease: LeaseId(id),
            granted,
            expires_at: now + ttl,
        }
    }

    /// The fenced charge (`tollgate_store`'s `pay`): the lease's share only from a lease that
    /// is open and the writer's, the rest from what is available, the remainder lost.
    fn charge(&mut self, c: &Charge, owner: u64) {
        let amount = c.amount.nanos();
        // What no lease or hold reserves, before this charge's lease pays its part.
        let free = self.available(&c.account).max(0);
        let mut taken = 0;
        if let Some(LeaseId(id)) = &c.lease
            && let Some(lease) = self.leases.get_mut(id)
            && lease.3 == owner
        {
            taken = c.from_lease.nanos().min(lease.1).min(amount);
            lease.1 -= taken;
            *self.leased.get_mut(&c.account).unwrap() -= taken;
        }
        let given = (amount - taken).min(free);
        let charged = taken + given;
        *self.balance.get_mut(&c.account).unwrap() -= charged;
        *self.charged.get_mut(&c.account).unwrap() += charged;
        *self.lost.get_mut(&c.account).unwrap() += amount - charged;
    }

    fn shrink(&mut self, id: &str, by: i64) {
        if let Some(lease) = self.leases.get_mut(id) {
            let by = by.clamp(0, lease.1);
            lease.1 -= by;
            *self.leased.get_mut(&lease.0).unwrap() -= by;
        }
    }

    fn close(&mut self, id: &str) {
        if let Some((account, amount, _, _)) = self.leases.remove(id) {
            *self.leased.get_mut(&account).unwrap() -= amount;
        }
    }

    fn renew(&mut self, account: &str, id: &str, now: u64, ttl: u64) -> RenewAnswer {
        if self.disabled[account] {
            self.close(id);
            return RenewAnswer::Disabled;
        }
        match self.leases.get_mut(id) {
            Some(lease) => {
                lease.2 = now + ttl;
                RenewAnswer::Renewed {
                    expires_at: now + ttl,
                }
            }
            None => RenewAnswer::Lost,
        }
    }

    fn expire(&mut self, now: u64) {
        let expired: Vec<String> = self
            .leases
            .iter()
            .filter(|(_, l)| l.2 <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            self.close(&id);
        }
    }
}

/// One replica: its engine and the driver's bookkeeping.
struct Replica {
    /// Its name on its leases: a new one after each crash.
    owner: u64,
    engine: Engine,
    open: Vec<(HoldId, i64)>,
    waiting: HashMap<Ticket, ()>,
    /// Credit requests sent, with the answer the database gave, not yet delivered.
    in_flight: Vec<(CreditRequest, CreditAnswer)>,
}

impl Replica {
    fn new(owner: u64) -> Replica {
        Replica {
            owner,
            engine: Engine::new(Policy::default()),
            open: Vec::new(),
            waiting: HashMap::new(),
            in_flight: Vec::new(),
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Hold {
        replica: usize,
        account: usize,
        nanos: i64,
    },
    /// Settle the n-th open hold at `quarters`/4 of what it holds (up to twice the hold, as
    /// the gateway's bound allows).
    Settle {
        replica: usize,
        n: usize,
        quarters: i64,
    },
    Release {
        replica: usize,
        n: usize,
    },
    /// Close an already closed hold again: must be refused.
    Twice {
        replica: usize,
    },
    Deliver {
        replica: usize,
    },
    Advance {
        ms: u64,
    },
    Credit {
        account: usize,
        nanos: i64,
    },
    Disable {
        account: usize,
        disabled: bool,
    },
    Crash {
        replica: usize,
    },
    /// The replica stops (SIGSTOP, a VM freeze) while time passes for everyone else: the
    /// others tick, the database sweeps its leases.
    Pause {
        replica: usize,
        ms: u64,
    },
    /// An operator's correction recalls the account's leases.
    Recall {
        account: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..2usize, 0..2usize, 1..400i64).prop_map(|(replica, account, nanos)| Op::Hold { replica, account, nanos }),
        4 => (0..2usize, 0..8usize, 0..=8i64).prop_map(|(replica, n, quarters)| Op::Settle { replica, n, quarters }),
        2 => (0..2usize, 0..8usize).prop_map(|(replica, n)| Op::Release { replica, n }),
        1 => (0..2usize).prop_map(|replica| Op::Twice { replica }),
        4 => (0..2usize).prop_map(|replica| Op::Deliver { replica }),
        3 => (1..3_000u64).prop_map(|ms| Op::Advance { ms }),
        1 => (0..2usize, 1..2_000i64).prop_map(|(account, nanos)| Op::Credit { account, nanos }),
        1 => (0..2usize, any::<bool>()).prop_map(|(account, disabled)| Op::Disable { account, disabled }),
        1 => (0..2usize).prop_map(|replica| Op::Crash { replica }),
        1 => (0..2usize, 10_000..40_000u64).prop_map(|(replica, ms)| Op::Pause { replica, ms }),
        1 => (0..2usize).prop_map(|account| Op::Recall { account }),
    ]
}

struct World {
    db: Db,
    replicas: Vec<Replica>,
    now: u64,
    closed: Vec<(usize, HoldId)>,
    ttl: u64,
    incarnations: u64,
}

impl World {
    fn new() -> World {
        let mut db = Db::default();
        for a in ACCOUNTS {
            db.balance.insert(a.into(), 3_000);
            db.credited.insert(a.into(), 3_000);
            db.charged.insert(a.into(), 0);
            db.leased.insert(a.into(), 0);
            db.lost.insert(a.into(), 0);
            db.disabled.insert(a.into(), false);
        }
        World {
            db,
            replicas: vec![Replica::new(0), Replica::new(1)],
            now: 1_000_000,
            closed: Vec::new(),
            ttl: Policy::default().lease_ttl_ms,
            incarnations: 2,
        }
    }

    fn send(&mut self, r: usize, request: CreditRequest) {
        let owner = self.replicas[r].owner;
        let answer = self.db.credit_request(&request, owner, self.now, self.ttl);
        self.replicas[r].in_flight.push((request, answer));
    }

    fn resolve(&mut self, r: usize, resolved: Vec<(Ticket, Result<HoldId, Refusal>)>) {
        for (ticket, result) in resolved {
            assert!(
                self.replicas[r].waiting.remove(&ticket).is_some(),
                "unknown ticket"
            );
            if let Ok(hold) = result {
                self.replicas[r].open.push((hold, 0));
            }
        }
    }

    fn tick(&mut self) {
        self.tick_but(None);
    }

    /// Every replica ticks but `paused`; the database sweeps.
    fn tick_but(&mut self, paused: Option<usize>) {
        for r in 0..self.replicas.len() {
            if Some(r) == paused {
                continue;
            }
            let (commands, resolved) = self.replicas[r].engine.tick(self.now);
            self.resolve(r, resolved);
            self.run(r, commands);
        }
        self.db.expire(self.now);
    }

    fn run(&mut self, r: usize, commands: Vec<LeaseCommand>) {
        {
            for command in commands {
                match command {
                    LeaseCommand::Renew { account, lease } => {
                        let answer = self.db.renew(&account, &lease.0, self.now, self.ttl);
                        self.replicas[r]
                            .engine
                            .renewed(&account, &lease, answer, self.now);
                    }
                    LeaseCommand::Return { lease, .. } => self.db.close(&lease.0),
                    LeaseCommand::Credit(request) => self.send(r, request),
                    LeaseCommand::Shrink { lease, by, .. } => self.db.shrink(&lease.0, by.nanos()),
                }
            }
        }
    }

    fn apply(&mut self, op: Op) {
        match op {
            Op::Hold {
                replica,
                account,
                nanos,
            } => {
                let outcome = self.replicas[replica].engine.hold(
                    ACCOUNTS[account],
                    Amount::from_nanos(nanos),
                    self.now,
                );
                match outcome {
                    HoldOutcome::Placed { hold, top_up } => {
                        self.replicas[replica].open.push((hold, nanos));
                        if let Some(request) = top_up {
                            self.send(replica, request);
                        }
                    }
                    HoldOutcome::Pending { ticket, request } => {
                        self.replicas[replica].waiting.insert(ticket, ());
                        if let Some(request) = request {
                            self.send(replica, request);
                        }
                    }
                    HoldOutcome::Refused(_) => {}
                }
            }
            Op::Settle {
                replica,
                n,
                quarters,
            } => {
                let rep = &mut self.replicas[replica];
                if rep.open.is_empty() {
                    return;
                }
                let (hold, _) = rep.open.remove(n % rep.open.len());
                let held = rep.engine.held(hold).expect("an open hold has an amount");
                let amount = Amount::from_nanos(held.nanos() * quarters / 4);
                let charge = rep
                    .engine
                    .settle(hold, amount, self.now)
                    .expect("an open hold settles");
                assert_eq!(charge.amount, amount);
                assert!(charge.from_lease <= charge.amount);
                let owner = rep.owner;
                self.db.charge(&charge, owner);
                self.closed.push((replica, hold));
            }
            Op::Release { replica, n } => {
                let rep = &mut self.replicas[replica];
                if rep.open.is_empty() {
                    return;
                }
                let (hold, _) = rep.open.remove(n % rep.open.len());
                rep.engine
                    .release(hold, self.now)
                    .expect("an open hold releases");
                self.closed.push((replica, hold));
            }
            Op::Twice { replica } => {
                if let Some((r, hold)) = self.closed.iter().rev().find(|(r, _)| *r == replica) {
                    let engine = &mut self.replicas[*r].engine;
                    assert!(engine.settle(*hold, Amount::ZERO, self.now).is_err());
                    assert!(engine.release(*hold, self.now).is_err());
                }
            }
            Op::Deliver { replica } => {
                let rep = &mut self.replicas[replica];
                if rep.in_flight.is_empty() {
                    return;
                }
                let (request, answer) = rep.in_flight.remove(0);
                let (resolved, commands) = rep.engine.credit_answered(&request, answer, self.now);
                self.resolve(replica, resolved);
                self.run(replica, commands);
            }
            Op::Advance { ms } => {
                self.now += ms;
                self.tick();
            }
            Op::Credit { account, nanos } => {
                *self.db.balance.get_mut(ACCOUNTS[account]).unwrap() += nanos;
                *self.db.credited.get_mut(ACCOUNTS[account]).unwrap() += nanos;
            }
            Op::Disable { account, disabled } => {
                self.db.disabled.insert(ACCOUNTS[account].into(), disabled);
            }
            Op::Crash { replica } => {
                // Its holds die with it, uncharged; its leases stay in the database until they
                // expire.
                self.replicas[replica] = Replica::new(self.incarnations);
                self.incarnations += 1;
                self.closed.retain(|(r, _)| *r != replica);
            }
            Op::Pause { replica, ms } => {
                // Time passes in steps for everyone else; the paused one sees it all at once.
                let mut left = ms;
                while left > 0 {
                    let step = left.min(1_000);
                    self.now += step;
                    left -= step;
                    self.tick_but(Some(replica));
                }
            }
            Op::Recall { account } => {
                let account = ACCOUNTS[account];
                let recalled: Vec<(String, u64)> = self
                    .db
                    .leases
                    .iter()
                    .filter(|(_, l)| l.0 == account)
                    .map(|(id, l)| (id.clone(), l.3))
                    .collect();
                for (id, owner) in recalled {
                    if let Some(r) = self.replicas.iter().position(|r| r.owner == owner) {
                        let command = self.replicas[r].engine.recall(account, &LeaseId(id));
                        self.run(r, vec![command]);
                    }
                }
            }
        }
    }

    fn check(&self) {
        for a in ACCOUNTS {
            let leases: i64 = self
                .db
                .leases
                .values()
                .filter(|l| l.0 == a)
                .map(|l| l.1)
                .sum();
            assert_eq!(
                self.db.leased[a], leases,
                "leased = sum of open leases ({a})"
            );
            assert!(
                self.db.leases.values().all(|l| l.1 >= 0),
                "no lease below zero"
            );
            assert_eq!(
                self.db.balance[a],
                self.db.credited[a] - self.db.charged[a],
                "balance = credits − charges ({a})"
            );
            assert!(self.db.lost[a] >= 0, "a loss is never negative");
            assert!(
                self.db.balance[a] >= 0,
                "{a} overdrawn: {}",
                self.db.balance[a]
            );
            assert!(
                self.db.available(a) >= 0,
                "{a} leased more than it has: {} > {}; {:?}",
                self.db.leased[a],
                self.db.balance[a],
                self.db
            );
            for rep in &self.replicas {
                let view = rep.engine.account(a);
                assert!(
                    !view.reserved.is_negative(),
                    "reserved below zero: {view:?}"
                );
                if let Some((LeaseId(id), remaining)) = &view.lease {
                    let undelivered: i64 = rep
                        .in_flight
                        .iter()
                        .filter_map(|(_, answer)| match answer {
                            CreditAnswer::Granted { lease, granted, .. } if &lease.0 == id => {
                                Some(granted.nanos())
                            }
                            _ => None,
                        })
                        .sum();
                    if let Some((_, amount, _, _)) = self.db.leases.get(id) {
                        assert_eq!(
                            remaining.nanos() + undelivered,
                            *amount,
                            "engine and database agree on {id}"
                        );
                    }
                    assert!(view.reserved <= *remaining, "reserved within the lease");
                }
            }
        }
    }

    /// Closes everything, delivers every answer, lets time pass: every lease comes back.
    fn drain(&mut self) {
        for r in 0..self.replicas.len() {
            while !self.replicas[r].in_flight.is_empty() {
                self.apply(Op::Deliver { replica: r });
            }
            while !self.replicas[r].open.is_empty() {
                self.apply(Op::Release { replica: r, n: 0 });
            }
        }
        for _ in 0..20 {
            self.apply(Op::Advance { ms: 1_000 });
            for r in 0..self.replicas.len() {
                while !self.replicas[r].in_flight.is_empty() {
                    self.apply(Op::Deliver { replica: r });
                }
                while !self.replicas[r].open.is_empty() {
                    self.apply(Op::Release { replica: r, n: 0 });
                }
            }
        }
        self.check();
        for a in ACCOUNTS {
            assert_eq!(self.db.leased[a], 0, "every lease came back ({a})");
        }
        for rep in &self.replicas {
            assert_eq!(rep.engine.open_holds(), 0);
            assert!(rep.engine.leases().is_empty());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn money_is_conserved_and_never_overdrawn(ops in prop::collection::vec(op(), 1..200)) {
        let mut world = World::new();
        for op in ops {
            world.apply(op);
            world.check();
        }
        world.drain();
    }
}

#[test]
fn a_top_up_in_flight_does_not_hold_up_requests_the_lease_covers() {
    let mut engine = Engine::new(Policy::default());
    let now = 1_000;
    let HoldOutcome::Pending {
        request: Some(first),
        ..
    } = engine.hold("a", Amount::from_nanos(100), now)
    else {
        panic!("the first hold asks for credit");
    };
    // Granted: 8 holds' worth.
    let (resolved, _) = engine.credit_answered(
        &first,
        CreditAnswer::Granted {
            lease: LeaseId("l".into()),
            granted: first.want,
            expires_at: now + 15_000,
        },
        now,
    );
    assert!(resolved[0].1.is_ok());
    // Spending down the lease asks for a top-up ahead of need…
    let mut top_up = None;
    for _ in 0..6 {
        match engine.hold("a", Amount::from_nanos(100), now) {
            HoldOutcome::Placed {
                top_up: Some(r), ..
            } => top_up = Some(r),
            HoldOutcome::Placed { .. } => {}
            other => panic!("{other:?}"),
        }
    }
    assert!(top_up.is_some(), "no top-up was asked for");
    // …and while it is in flight, what the lease still covers is served at once.
    assert!(matches!(
        engine.hold("a", Amount::from_nanos(100), now),
        HoldOutcome::Placed { top_up: None, .. }
    ));
    // Beyond it, a hold waits for the top-up's answer.
    assert!(matches!(
        engine.hold("a", Amount::from_nanos(100), now),
        HoldOutcome::Pending { request: None, .. }
    ));
}

#[test]
fn a_burst_larger_than_the_grant_waits_for_a_follow_up_instead_of_failing() {
    let mut engine = Engine::new(Policy::default());
    let now = 1_000;
    let HoldOutcome::Pending {
        request: Some(first),
        ..
    } = engine.hold("a", Amount::from_nanos(100), now)
    else {
        panic!("the first hold asks for credit");
    };
    // 63 more arrive while it is in flight: they queue.
    for _ in 0..63 {
        assert!(matches!(
            engine.hold("a", Amount::from_nanos(100), now),
            HoldOutcome::Pending { request: None, .. }
        ));
    }
    // The grant covers eight of them; the rest wait on one follow-up for what they need.
    let (resolved, follow_up) = engine.credit_answered(
        &first,
        CreditAnswer::Granted {
            lease: LeaseId("l".into()),
            granted: first.want,
            expires_at: now + 15_000,
        },
        now,
    );
    assert_eq!(resolved.len(), 8);
    assert!(resolved.iter().all(|(_, r)| r.is_ok()));
    let [LeaseCommand::Credit(follow_up)] = &follow_up[..] else {
        panic!("one follow-up request: {follow_up:?}");
    };
    assert_eq!(follow_up.need, Amount::from_nanos(56 * 100));
    let (resolved, none) = engine.credit_answered(
        follow_up,
        CreditAnswer::Granted {
            lease: LeaseId("l".into()),
            granted: follow_up.want,
            expires_at: now + 15_000,
        },
        now,
    );
    assert_eq!(resolved.len(), 56);
    assert!(resolved.iter().all(|(_, r)| r.is_ok()));
    assert!(none.is_empty());
    assert_eq!(engine.open_holds(), 64);
}

/// The stalled replica (SIGSTOP past its lease's life while another spends the account): its
/// late charge takes only what is left, the rest is recorded lost — never an overdraft.
#[test]
fn a_replica_paused_past_its_lease_cannot_spend_the_money_twice() {
    let mut world = World::new();
    let account = 1;
    world.apply(Op::Hold {
        replica: 0,
        account,
        nanos: 300,
    });
    world.apply(Op::Deliver { replica: 0 });
    assert_eq!(world.replicas[0].open.len(), 1, "the hold was placed");
    // Replica 0 stops for 20 s; its lease expires and is swept meanwhile.
    world.apply(Op::Pause {
        replica: 0,
        ms: 20_000,
    });
    // Replica 1 spends the whole balance (3,000) in holds of 300, settled in full.
    for _ in 0..12 {
        world.apply(Op::Hold {
            replica: 1,
            account,
            nanos: 300,
        });
        world.apply(Op::Deliver { replica: 1 });
        world.apply(Op::Settle {
            replica: 1,
            n: 0,
            quarters: 4,
        });
        world.check();
    }
    assert_eq!(world.db.balance[ACCOUNTS[account]], 0, "spent to zero");
    // Replica 0 resumes and settles its hold: the fence refuses its lease; nothing is left.
    world.apply(Op::Settle {
        replica: 0,
        n: 0,
        quarters: 4,
    });
    world.check();
    assert_eq!(world.db.balance[ACCOUNTS[account]], 0);
    assert_eq!(
        world.db.lost[ACCOUNTS[account]], 300,
        "the late charge is lost"
    );
    world.drain();
}

/// A recalled lease gives back what its holds do not reserve, at once, and keeps exactly its
/// holds' reservation.
#[test]
fn a_recalled_lease_gives_back_its_unreserved_part() {
    let mut world = World::new();
    world.apply(Op::Hold {
        replica: 0,
        account: 0,
        nanos: 100,
    });
    world.apply(Op::Deliver { replica: 0 });
    let leased = world.db.leased[ACCOUNTS[0]];
    assert_eq!(leased, 800, "eight holds' worth");
    world.apply(Op::Recall { account: 0 });
    world.check();
    assert_eq!(
        world.db.leased[ACCOUNTS[0]], 100,
        "only the open hold stays leased"
    );
    world.apply(Op::Settle {
        replica: 0,
        n: 0,
        quarters: 4,
    });
    world.check();
    assert_eq!(world.db.balance[ACCOUNTS[0]], 2_900);
    world.drain();
}
