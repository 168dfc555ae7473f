//! Unit tests of the state machine, ported from etcd-io/raft's
//! raft_test.go, raft_paper_test.go, raft_flow_control_test.go,
//! raft_snap_test.go and rawnode_test.go. Each test names its etcd
//! counterpart in a `/// etcd: TestXxx` line.
//!
//! The harness mirrors etcd's: a [`Network`] of state machines that
//! delivers messages synchronously, with drop, cut, isolate and ignore.
//! Tests build nodes with etcd's test defaults (pre-vote and check-quorum
//! off unless a test turns them on), so the ported tables keep their meaning.

#![allow(dead_code, reason = "harness helpers are shared by many test files")]

use std::collections::{BTreeMap, HashMap, HashSet};

use super::{Raft, SplitMix64, StateRole};
use crate::config::Config;
use crate::pb::{ConfState, Entry, HardState, Message, MessageType, Snapshot};
use crate::storage::MemoryStorage;

mod election;
mod flow_control;
mod learners;
mod paper;
mod raw_node;
mod reads_transfer;
mod replication;
mod snapshot;

/// A state machine as etcd tests construct them.
pub(crate) type TestRaft = Raft<MemoryStorage>;

/// A fixed election-timeout seed for node `id`: the one raftlet derived
/// from the id when `seed` 0 still meant that (it now draws from the OS).
pub(crate) fn fixed_seed(id: u64) -> u64 {
    id.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5851_f42d_4c95_7f2d
}

/// etcd's `newTestConfig`: no message size limit, 256 inflight, and
/// pre-vote and check-quorum off (etcd's defaults), with a fixed seed
/// derived from the id so that a test replays the same timeouts.
pub(crate) fn new_test_config(id: u64, election: usize, heartbeat: usize) -> Config {
    Config {
        id,
        seed: fixed_seed(id),
        election_tick: election,
        heartbeat_tick: heartbeat,
        max_size_per_msg: u64::MAX,
        max_inflight_msgs: 256,
        pre_vote: false,
        check_quorum: false,
        ..Config::default()
    }
}

/// etcd's `newTestMemoryStorage(withPeers(..), withLearners(..))`.
pub(crate) fn new_test_storage(voters: &[u64], learners: &[u64]) -> MemoryStorage {
    let s = MemoryStorage::new();
    s.wl()
        .set_conf_state(ConfState {
            voters: voters.to_vec(),
            learners: learners.to_vec(),
            ..ConfState::default()
        })
        .expect("valid test configuration");
    s
}

/// etcd's `newTestRaft`.
pub(crate) fn new_test_raft(
    id: u64,
    election: usize,
    heartbeat: usize,
    storage: MemoryStorage,
) -> TestRaft {
    Raft::new(&new_test_config(id, election, heartbeat), storage).expect("valid test raft")
}

/// A raft built from an explicit config.
pub(crate) fn new_test_raft_with_config(c: &Config, storage: MemoryStorage) -> TestRaft {
    Raft::new(c, storage).expect("valid test raft")
}

impl Raft<MemoryStorage> {
    /// Delivers messages to self and takes everything to send (etcd test
    /// `readMessages`): self-addressed acknowledgements are stepped at once,
    /// as if every write were durable immediately.
    pub(crate) fn read_messages(&mut self) -> Vec<Message> {
        self.flush_deferred_appends();
        self.advance_messages_after_append();
        std::mem::take(&mut self.msgs)
    }

    /// etcd test `advanceMessagesAfterAppend`.
    pub(crate) fn advance_messages_after_append(&mut self) {
        loop {
            let msgs = std::mem::take(&mut self.msgs_after_append);
            if msgs.is_empty() {
                break;
            }
            for m in msgs {
                if m.to == self.id {
                    let _ = self.step(m);
                } else {
                    self.msgs.push(m);
                }
            }
        }
    }

    /// Persists the unstable log into the node's storage (etcd tests do this
    /// through `nextEnts`, `storage.Append`, `stableTo`).
    pub(crate) fn persist(&mut self) {
        if let Some(snap) = self.raft_log.next_unstable_snapshot().cloned() {
            let idx = snap.metadata.index;
            let _ = self.raft_log.store.wl().apply_snapshot(snap);
            self.raft_log.stable_snap_to(idx);
        }
        let ents = self.raft_log.next_unstable_ents().to_vec();
        if let Some(last) = ents.last() {
            self.raft_log.store.wl().append(&ents).expect("append");
            self.raft_log
                .stable_to(crate::types::EntryId::from_entry(last));
        }
        self.raft_log.accept_unstable();
    }

    /// The role, for brevity in assertions.
    pub(crate) fn role(&self) -> StateRole {
        self.state
    }
}

/// etcd test `nextEnts`: persists, runs post-append steps, returns the
/// committed entries and marks them applied.
pub(crate) fn next_ents(r: &mut TestRaft) -> Vec<Entry> {
    r.persist();
    r.advance_messages_after_append();
    let ents = r.raft_log.next_committed_ents(true);
    let committed = r.raft_log.committed;
    r.raft_log.applied_to(committed, 0);
    ents
}

/// A message with the given type, sender, receiver.
pub(crate) fn msg(t: MessageType, from: u64, to: u64) -> Message {
    Message::new(t, from, to)
}

/// A message with a term.
pub(crate) fn msg_term(t: MessageType, from: u64, to: u64, term: u64) -> Message {
    let mut m = Message::new(t, from, to);
    m.term = term;
    m
}

/// A proposal of `data` from `from` to `to`.
pub(crate) fn prop(from: u64, to: u64, data: &'static [u8]) -> Message {
    let mut m = Message::new(MessageType::MsgProp, from, to);
    m.entries = vec![Entry {
        data: Some(bytes::Bytes::from_static(data)),
        ..Entry::default()
    }];
    m
}

/// Entries with the given terms at indexes 1, 2, ...
pub(crate) fn ents_with_terms(terms: &[u64]) -> Vec<Entry> {
    terms
        .iter()
        .enumerate()
        .map(|(i, t)| Entry {
            term: *t,
            index: i as u64 + 1,
            ..Entry::default()
        })
        .collect()
}

/// An entry with only term and index set.
pub(crate) fn ent(term: u64, index: u64) -> Entry {
    Entry {
        term,
        index,
        ..Entry::default()
    }
}

/// etcd test `entsWithConfig`: a node of a 1..=n cluster whose log holds
/// entries of the given terms, in the last term.
pub(crate) fn ents_with_config(f: Option<&dyn Fn(&mut Config)>, terms: &[u64]) -> TestRaft {
    let storage = MemoryStorage::new();
    storage
        .wl()
        .append(&ents_with_terms(terms))
        .expect("append");
    let mut c = new_test_config(1, 5, 1);
    if let Some(f) = f {
        f(&mut c);
    }
    let mut r = new_test_raft_with_config(&c, storage);
    let term = terms.last().copied().unwrap_or(0);
    r.reset(term);
    r
}

/// etcd test `votedWithConfig`: a node that voted for `vote` in `term`
/// and has an empty log.
pub(crate) fn voted_with_config(f: Option<&dyn Fn(&mut Config)>, vote: u64, term: u64) -> TestRaft {
    let storage = MemoryStorage::new();
    storage.wl().set_hard_state(HardState {
        term,
        vote,
        commit: 0,
    });
    let mut c = new_test_config(1, 5, 1);
    if let Some(f) = f {
        f(&mut c);
    }
    let mut r = new_test_raft_with_config(&c, storage);
    r.reset(term);
    r
}

/// Turns pre-vote on (etcd `preVoteConfig`).
pub(crate) fn pre_vote_config(c: &mut Config) {
    c.pre_vote = true;
}

/// A member of a test network.
pub(crate) enum Peer {
    /// A real node.
    Raft(Box<TestRaft>),
    /// Swallows every message (etcd `blackHole`).
    BlackHole,
}

impl Peer {
    fn step(&mut self, m: Message) {
        if let Peer::Raft(r) = self {
            let _ = r.step(m);
        }
    }

    fn read_messages(&mut self) -> Vec<Message> {
        match self {
            Peer::Raft(r) => r.read_messages(),
            Peer::BlackHole => Vec::new(),
        }
    }
}

/// Decides whether the network delivers a message.
pub(crate) type MsgHook = Box<dyn Fn(&Message) -> bool>;

/// A synchronous in-memory network of test nodes (etcd test `network`).
pub(crate) struct Network {
    pub peers: BTreeMap<u64, Peer>,
    pub storage: BTreeMap<u64, MemoryStorage>,
    dropm: HashMap<(u64, u64), f64>,
    ignorem: HashSet<MessageType>,
    /// Called for each message sent; returns whether to deliver it.
    pub msg_hook: Option<MsgHook>,
    rng: SplitMix64,
}

impl Network {
    /// etcd `newNetwork`: `None` entries become fresh nodes of a 1..=n
    /// cluster; given nodes get ids 1..=n and a tracker for the cluster.
    pub(crate) fn new(peers: Vec<Option<Peer>>) -> Network {
        Network::new_with_config(None, peers)
    }

    /// etcd `newNetworkWithConfig`.
    pub(crate) fn new_with_config(
        f: Option<&dyn Fn(&mut Config)>,
        peers: Vec<Option<Peer>>,
    ) -> Network {
        let size = peers.len();
        let ids: Vec<u64> = (1..=size as u64).collect();
        let mut npeers = BTreeMap::new();
        let mut nstorage = BTreeMap::new();
        for (j, p) in peers.into_iter().enumerate() {
            let id = ids[j];
            match p {
                None => {
                    let s = new_test_storage(&ids, &[]);
                    nstorage.insert(id, s.clone());
                    let mut c = new_test_config(id, 10, 1);
                    if let Some(f) = f {
                        f(&mut c);
                    }
                    let r = new_test_raft_with_config(&c, s);
                    npeers.insert(id, Peer::Raft(Box::new(r)));
                }
                Some(Peer::Raft(mut r)) => {
                    let learners: HashSet<u64> = r.trk.config.learners.iter().copied().collect();
                    r.id = id;
                    let mut cfg = crate::tracker::Config::default();
                    let mut prs = crate::tracker::ProgressMap::default();
                    for pid in &ids {
                        let mut pr = crate::tracker::Progress::new(
                            0,
                            r.trk.max_inflight,
                            r.trk.max_inflight_bytes,
                        );
                        if learners.contains(pid) {
                            pr.is_learner = true;
                            cfg.learners.insert(*pid);
                        } else {
                            cfg.voters.incoming.insert(*pid);
                        }
                        prs.insert(*pid, pr);
                    }
                    r.trk.apply_conf(cfg, prs);
                    r.is_learner = learners.contains(&id);
                    let term = r.term;
                    r.reset(term);
                    npeers.insert(id, Peer::Raft(r));
                }
                Some(Peer::BlackHole) => {
                    npeers.insert(id, Peer::BlackHole);
                }
            }
        }
        Network {
            peers: npeers,
            storage: nstorage,
            dropm: HashMap::new(),
            ignorem: HashSet::new(),
            msg_hook: None,
            rng: SplitMix64::new(0x5eed),
        }
    }

    /// Delivers messages and everything they cause, until quiet (etcd `send`).
    pub(crate) fn send(&mut self, msgs: Vec<Message>) {
        let mut queue: std::collections::VecDeque<Message> = msgs.into();
        while let Some(m) = queue.pop_front() {
            let to = m.to;
            let Some(p) = self.peers.get_mut(&to) else {
                continue;
            };
            p.step(m);
            let out = p.read_messages();
            let out = self.filter(out);
            queue.extend(out);
        }
    }

    /// Drops a fraction `perc` of the messages from `from` to `to`.
    pub(crate) fn drop(&mut self, from: u64, to: u64, perc: f64) {
        self.dropm.insert((from, to), perc);
    }

    /// Drops every message between `one` and `other`.
    pub(crate) fn cut(&mut self, one: u64, other: u64) {
        self.drop(one, other, 2.0);
        self.drop(other, one, 2.0);
    }

    /// Drops every message to and from `id`.
    pub(crate) fn isolate(&mut self, id: u64) {
        let ids: Vec<u64> = self.peers.keys().copied().collect();
        for nid in ids {
            if nid != id {
                self.drop(id, nid, 1.0);
                self.drop(nid, id, 1.0);
            }
        }
    }

    /// Drops every message of type `t`.
    pub(crate) fn ignore(&mut self, t: MessageType) {
        self.ignorem.insert(t);
    }

    /// Heals every drop and ignore.
    pub(crate) fn recover(&mut self) {
        self.dropm.clear();
        self.ignorem.clear();
    }

    fn filter(&mut self, msgs: Vec<Message>) -> Vec<Message> {
        let mut out = Vec::with_capacity(msgs.len());
        for m in msgs {
            if self.ignorem.contains(&m.msg_type) {
                continue;
            }
            assert!(m.msg_type != MessageType::MsgHup, "unexpected MsgHup");
            let perc = self.dropm.get(&(m.from, m.to)).copied().unwrap_or(0.0);
            let n = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            if n < perc {
                continue;
            }
            if let Some(h) = &self.msg_hook {
                if !h(&m) {
                    continue;
                }
            }
            out.push(m);
        }
        out
    }

    /// The node with id `id`.
    pub(crate) fn peer(&self, id: u64) -> &TestRaft {
        match self.peers.get(&id) {
            Some(Peer::Raft(r)) => r,
            _ => panic!("peer {id} is not a raft node"),
        }
    }

    /// The node with id `id`, mutably.
    pub(crate) fn peer_mut(&mut self, id: u64) -> &mut TestRaft {
        match self.peers.get_mut(&id) {
            Some(Peer::Raft(r)) => r,
            _ => panic!("peer {id} is not a raft node"),
        }
    }

    /// Makes `id` campaign (a local MsgHup) and delivers the results.
    pub(crate) fn campaign(&mut self, id: u64) {
        self.send(vec![msg(MessageType::MsgHup, id, id)]);
    }

    /// Proposes `data` on `id` and delivers the results.
    pub(crate) fn propose(&mut self, id: u64, data: &'static [u8]) {
        self.send(vec![prop(id, id, data)]);
    }
}

/// A snapshot at index/term with the given voters.
pub(crate) fn test_snapshot(index: u64, term: u64, voters: &[u64]) -> Snapshot {
    let mut s = Snapshot::default();
    s.metadata.index = index;
    s.metadata.term = term;
    s.metadata.conf_state.voters = voters.to_vec();
    s
}

/// Wraps a node for a network.
pub(crate) fn peer(r: TestRaft) -> Option<Peer> {
    Some(Peer::Raft(Box::new(r)))
}

/// A black hole for a network.
pub(crate) fn black_hole() -> Option<Peer> {
    Some(Peer::BlackHole)
}
