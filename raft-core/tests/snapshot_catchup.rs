//! Snapshot catch-up through the public API only: `RawNode` over
//! `MemoryStorage`, driven by a small in-file cluster that plays the host
//! (persist each Ready, send messages, apply committed entries into a toy
//! state machine, snapshot and compact the log, report snapshot delivery).
//!
//! TEST-PLAN section 5 / issue "Raft core II": a follower behind the
//! compacted log is caught up by snapshot then appends; a failed snapshot is
//! retried; a node restarts from a storage holding a snapshot and entries;
//! and the acceptance scenario (a new node joins a 3-voter cluster whose log
//! was compacted at 10,000 entries, with the leader never losing its role).
//!
//! Every node runs with `Config::new(id)`, raftlet's defaults: pre-vote and
//! check-quorum on. Each test asserts so at its start (and again for nodes
//! it adds or restarts).

use std::collections::{BTreeMap, HashSet, VecDeque};

use bytes::Bytes;
use raftlet::pb::{
    ConfChange, ConfChangeI, ConfChangeType, ConfState, EntryType, Message, MessageType,
};
use raftlet::{Config, MemoryStorage, RawNode, SnapshotStatus, StateRole, Storage};

/// The toy state machine: a running FNV-1a hash of every applied payload
/// and the number of payloads applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StateMachine {
    hash: u64,
    count: u64,
}

impl Default for StateMachine {
    fn default() -> Self {
        StateMachine {
            hash: 0xcbf2_9ce4_8422_2325,
            count: 0,
        }
    }
}

impl StateMachine {
    fn apply(&mut self, data: &[u8]) {
        for b in data {
            self.hash ^= u64::from(*b);
            self.hash = self.hash.wrapping_mul(0x0100_0000_01b3);
        }
        // Separate payloads, so "ab","c" and "a","bc" differ.
        self.hash ^= 0xff;
        self.hash = self.hash.wrapping_mul(0x0100_0000_01b3);
        self.count += 1;
    }

    /// The snapshot payload: hash then count, big endian.
    fn encode(&self) -> Bytes {
        let mut v = Vec::with_capacity(16);
        v.extend_from_slice(&self.hash.to_be_bytes());
        v.extend_from_slice(&self.count.to_be_bytes());
        Bytes::from(v)
    }

    fn decode(data: &[u8]) -> StateMachine {
        assert_eq!(data.len(), 16, "snapshot data must carry the state machine");
        StateMachine {
            hash: u64::from_be_bytes(data[..8].try_into().unwrap()),
            count: u64::from_be_bytes(data[8..].try_into().unwrap()),
        }
    }
}

/// One host: the node, its storage and its state machine.
struct Node {
    rn: RawNode<MemoryStorage>,
    /// The configuration the node was built with.
    config: Config,
    storage: MemoryStorage,
    sm: StateMachine,
    /// The last index applied to `sm` (entries or snapshot).
    applied: u64,
    /// The configuration as of `applied`.
    conf_state: ConfState,
    /// The index of the last snapshot this host created or installed.
    snap_index: u64,
    /// Snapshots received from the leader and installed.
    snapshots_installed: usize,
    /// Snapshots this host created from its own state machine.
    snapshots_created: usize,
}

impl Node {
    fn new(config: &Config, storage: MemoryStorage) -> Node {
        let rn = RawNode::new(config, storage.clone()).expect("valid node");
        Node {
            rn,
            config: config.clone(),
            storage,
            sm: StateMachine::default(),
            applied: 0,
            conf_state: ConfState::default(),
            snap_index: 0,
            snapshots_installed: 0,
            snapshots_created: 0,
        }
    }
}

/// A synchronous cluster of hosts that deliver messages in order.
struct Cluster {
    nodes: BTreeMap<u64, Node>,
    /// Messages in flight.
    queue: VecDeque<Message>,
    /// Hosts that are down: not ticked, and messages to or from them are lost.
    down: HashSet<u64>,
    /// The next this many MsgSnap are lost, and their sender is told the
    /// send failed.
    snap_failures: usize,
    /// MsgSnap delivered (and reported finished), by recipient.
    snaps_delivered: BTreeMap<u64, usize>,
    /// MsgSnap lost (and reported failed), by recipient.
    snaps_failed: BTreeMap<u64, usize>,
    /// The host creates a snapshot and compacts its log once it applied this
    /// many entries past its last snapshot.
    compact_every: u64,
    /// When set, (leader, term) that must hold at every step.
    stable_leader: Option<(u64, u64)>,
}

impl Cluster {
    fn new(compact_every: u64) -> Cluster {
        Cluster {
            nodes: BTreeMap::new(),
            queue: VecDeque::new(),
            down: HashSet::new(),
            snap_failures: 0,
            snaps_delivered: BTreeMap::new(),
            snaps_failed: BTreeMap::new(),
            compact_every,
            stable_leader: None,
        }
    }

    /// A cluster of bootstrapped voters 1..=n with the default config
    /// (pre-vote and check-quorum on), where node 1 has been elected.
    fn bootstrapped(n: u64, compact_every: u64) -> Cluster {
        let mut c = Cluster::new(compact_every);
        let voters: Vec<u64> = (1..=n).collect();
        for id in 1..=n {
            let mut node = Node::new(&Config::new(id), MemoryStorage::new());
            node.rn.bootstrap(&voters, &[]).expect("bootstrap");
            c.nodes.insert(id, node);
        }
        c.settle();
        c.nodes.get_mut(&1).unwrap().rn.campaign().unwrap();
        c.settle();
        assert_eq!(c.role(1), StateRole::Leader);
        c
    }

    /// Adds a node with an empty storage that joins an existing cluster.
    fn add_empty_node(&mut self, id: u64) {
        self.nodes
            .insert(id, Node::new(&Config::new(id), MemoryStorage::new()));
    }

    /// Asserts that every host runs with pre-vote and check-quorum on, as
    /// `Config::new` (raftlet's defaults) sets them.
    fn assert_pre_vote_and_check_quorum(&self) {
        let defaults = Config::default();
        assert!(
            defaults.pre_vote && defaults.check_quorum,
            "raftlet's defaults turn pre-vote and check-quorum on"
        );
        for (id, n) in &self.nodes {
            assert_eq!(n.config.id, *id);
            assert!(n.config.pre_vote, "node {id}: pre-vote off");
            assert!(n.config.check_quorum, "node {id}: check-quorum off");
            assert_eq!(
                n.config,
                Config {
                    id: *id,
                    applied: n.config.applied,
                    ..Config::default()
                },
                "node {id} runs with the default config"
            );
        }
    }

    fn node(&self, id: u64) -> &Node {
        &self.nodes[&id]
    }

    fn node_mut(&mut self, id: u64) -> &mut Node {
        self.nodes.get_mut(&id).unwrap()
    }

    fn role(&self, id: u64) -> StateRole {
        self.node(id).rn.basic_status().soft_state.raft_state
    }

    fn term(&self, id: u64) -> u64 {
        self.node(id).rn.basic_status().hard_state.term
    }

    fn commit(&self, id: u64) -> u64 {
        self.node(id).rn.basic_status().hard_state.commit
    }

    fn last_index(&self, id: u64) -> u64 {
        self.node(id).storage.last_index().unwrap()
    }

    /// Fails the test if the watched leader lost its role or term.
    fn check_leader(&self) {
        if let Some((id, term)) = self.stable_leader {
            let st = self.node(id).rn.basic_status();
            assert_eq!(
                (st.soft_state.raft_state, st.hard_state.term),
                (StateRole::Leader, term),
                "node {id} lost its leadership"
            );
        }
    }

    /// Handles every Ready of `id` as a host would; messages go to the queue.
    fn handle_ready(&mut self, id: u64) {
        let compact_every = self.compact_every;
        let node = self.nodes.get_mut(&id).unwrap();
        while node.rn.has_ready() {
            let rd = node.rn.ready();
            if let Some(snap) = &rd.snapshot {
                node.storage
                    .wl()
                    .apply_snapshot(snap.clone())
                    .expect("apply snapshot");
                node.sm = StateMachine::decode(snap.data());
                node.applied = snap.metadata.index;
                node.conf_state = snap.metadata.conf_state.clone();
                node.snap_index = snap.metadata.index;
                node.snapshots_installed += 1;
            }
            node.storage.wl().append(&rd.entries).expect("append");
            if let Some(hs) = rd.hard_state {
                node.storage.wl().set_hard_state(hs);
            }
            // Synchronous writes: everything may be sent now.
            self.queue.extend(rd.messages.iter().cloned());
            self.queue.extend(rd.persisted_messages.iter().cloned());
            for e in &rd.committed_entries {
                assert_eq!(e.index, node.applied + 1, "entries applied in order");
                match e.entry_type {
                    EntryType::EntryNormal => {
                        if !e.data().is_empty() {
                            node.sm.apply(e.data());
                        }
                    }
                    EntryType::EntryConfChange | EntryType::EntryConfChangeV2 => {
                        let cc = ConfChangeI::from_entry(e).expect("decodable conf change");
                        node.conf_state = node.rn.apply_conf_change(&cc).expect("valid change");
                    }
                    _ => panic!("unexpected entry type {:?}", e.entry_type),
                }
                node.applied = e.index;
            }
            node.rn.advance(rd);
            if node.applied >= node.snap_index + compact_every {
                let applied = node.applied;
                let mut st = node.storage.wl();
                st.create_snapshot(
                    applied,
                    Some(node.conf_state.clone()),
                    Some(node.sm.encode()),
                )
                .expect("create snapshot");
                st.compact(applied).expect("compact");
                node.snap_index = applied;
                node.snapshots_created += 1;
            }
        }
    }

    /// Delivers messages and handles Readies until nothing moves.
    fn settle(&mut self) {
        for round in 0.. {
            // A message ping-pong that never ends is a bug, not a hang.
            assert!(round < 10_000, "the cluster does not settle");
            let ids: Vec<u64> = self.nodes.keys().copied().collect();
            for id in ids {
                if !self.down.contains(&id) {
                    self.handle_ready(id);
                }
            }
            self.check_leader();
            if self.queue.is_empty() {
                break;
            }
            while let Some(m) = self.queue.pop_front() {
                self.deliver(m);
                self.check_leader();
            }
        }
    }

    fn deliver(&mut self, m: Message) {
        let (from, to) = (m.from, m.to);
        if self.down.contains(&from) || self.down.contains(&to) || !self.nodes.contains_key(&to) {
            return;
        }
        let is_snap = m.msg_type == MessageType::MsgSnap;
        if is_snap && self.snap_failures > 0 {
            self.snap_failures -= 1;
            *self.snaps_failed.entry(to).or_default() += 1;
            self.node_mut(from)
                .rn
                .report_snapshot(to, SnapshotStatus::Failure);
            return;
        }
        // Errors (e.g. a response from a peer no longer known) are dropped
        // messages, as a host would.
        let _ = self.node_mut(to).rn.step(m);
        if is_snap {
            *self.snaps_delivered.entry(to).or_default() += 1;
            self.node_mut(from)
                .rn
                .report_snapshot(to, SnapshotStatus::Finish);
        }
    }

    /// Ticks every running host once, then settles.
    fn tick(&mut self) {
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        for id in ids {
            if !self.down.contains(&id) {
                self.node_mut(id).rn.tick();
            }
        }
        self.settle();
    }

    /// Proposes `n` payloads on `leader`, `batch` per proposal, ticking
    /// between proposals so heartbeats keep flowing.
    fn propose_many(&mut self, leader: u64, n: u64, batch: u64) {
        let mut done = 0;
        while done < n {
            let k = batch.min(n - done);
            let start = self.node(leader).sm.count + done;
            let payloads: Vec<Bytes> = (0..k)
                .map(|i| Bytes::from(format!("v{}", start + i)))
                .collect();
            self.node_mut(leader)
                .rn
                .propose_batch(payloads)
                .expect("proposal accepted");
            done += k;
            self.settle();
            self.tick();
        }
    }

    /// Proposes a conf change on `leader` and settles until every running
    /// host applied it.
    fn change_conf(&mut self, leader: u64, t: ConfChangeType, node_id: u64) {
        let cc = ConfChange {
            change_type: t,
            node_id,
            ..ConfChange::default()
        };
        self.node_mut(leader)
            .rn
            .propose_conf_change(cc)
            .expect("conf change accepted");
        self.settle();
        let idx = self.commit(leader);
        for (id, n) in &self.nodes {
            if !self.down.contains(id) && n.conf_state.voters.contains(id) {
                assert!(n.applied >= idx, "node {id} applied the change");
            }
        }
    }

    /// Ticks until `done` holds (at most `max` ticks).
    fn tick_until(&mut self, max: usize, what: &str, done: impl Fn(&Cluster) -> bool) {
        for _ in 0..max {
            if done(self) {
                return;
            }
            self.tick();
        }
        assert!(done(self), "gave up waiting for {what}");
    }

    /// Asserts that the running hosts agree: same applied index and state
    /// machine, and (through their storages) the same last index.
    fn assert_converged(&self, ids: &[u64]) {
        let want = self.node(ids[0]);
        for id in ids {
            let n = self.node(*id);
            assert_eq!(n.applied, want.applied, "node {id} applied index");
            assert_eq!(n.sm, want.sm, "node {id} state machine");
            assert_eq!(
                self.last_index(*id),
                self.last_index(ids[0]),
                "node {id} last index"
            );
            assert_eq!(self.commit(*id), self.commit(ids[0]), "node {id} commit");
        }
    }
}

/// A follower that missed entries the leader compacted away is caught up
/// by a snapshot and then by appends, with the default config (pre-vote
/// and check-quorum on); nobody changes term.
#[test]
fn follower_catches_up_by_snapshot_then_appends() {
    let mut c = Cluster::bootstrapped(3, 100);
    c.assert_pre_vote_and_check_quorum();
    let term = c.term(1);
    c.stable_leader = Some((1, term));

    c.down.insert(3);
    c.propose_many(1, 350, 10);
    assert!(c.node(1).snapshots_created >= 3);
    let first = c.node(1).storage.first_index().unwrap();
    assert!(
        first > c.node(3).applied + 1,
        "the leader compacted what node 3 lacks"
    );

    c.down.remove(&3);
    c.tick_until(50, "node 3 to catch up", |c| {
        c.node(3).applied == c.node(1).applied
    });
    assert_eq!(c.snaps_delivered.get(&3), Some(&1));
    assert_eq!(c.node(3).snapshots_installed, 1);
    assert!(c.node(3).snap_index >= first - 1);
    c.assert_converged(&[1, 2, 3]);

    // From now on, appends: no more snapshots.
    c.propose_many(1, 30, 3);
    c.tick();
    assert_eq!(c.snaps_delivered.get(&3), Some(&1));
    assert_eq!(c.node(3).snapshots_installed, 1);
    c.assert_converged(&[1, 2, 3]);
    assert_eq!(c.node(1).sm.count, 380);
    for id in 1..=3 {
        assert_eq!(c.term(id), term, "node {id} term");
    }
}

/// A snapshot send that the host reports failed sends the peer back to
/// probing; the leader retries, and the retry catches the peer up.
#[test]
fn failed_snapshot_is_retried() {
    let mut c = Cluster::bootstrapped(3, 50);
    c.assert_pre_vote_and_check_quorum();
    let term = c.term(1);
    c.stable_leader = Some((1, term));

    c.down.insert(3);
    c.propose_many(1, 120, 10);
    c.down.remove(&3);
    c.snap_failures = 1;

    // The first snapshot is lost and reported failed.
    c.tick_until(20, "a snapshot send", |c| c.snaps_failed.contains_key(&3));
    assert_eq!(c.snaps_failed.get(&3), Some(&1));
    assert_eq!(c.node(3).snapshots_installed, 0);
    let pr = c.node(1).rn.status().progress[&3].clone();
    assert_ne!(
        pr.state,
        raftlet::tracker::ProgressState::Snapshot,
        "the failure ends the snapshot wait: {pr}"
    );
    assert_eq!(pr.pending_snapshot, 0);

    // The retry goes through.
    c.tick_until(50, "node 3 to catch up", |c| {
        c.node(3).applied == c.node(1).applied
    });
    assert_eq!(c.snaps_delivered.get(&3), Some(&1));
    assert_eq!(c.node(3).snapshots_installed, 1);
    let pr = c.node(1).rn.status().progress[&3].clone();
    assert_eq!(pr.state, raftlet::tracker::ProgressState::Replicate, "{pr}");
    c.propose_many(1, 5, 1);
    c.assert_converged(&[1, 2, 3]);
}

/// A node restarted from a storage that holds a snapshot plus entries
/// keeps its commit index and configuration, and rebuilds the same state
/// machine from the snapshot data and the entries after it.
#[test]
fn restart_from_snapshot_and_entries() {
    let mut c = Cluster::bootstrapped(3, 100);
    c.assert_pre_vote_and_check_quorum();
    let term = c.term(1);
    c.stable_leader = Some((1, term));
    c.propose_many(1, 260, 10);
    c.assert_converged(&[1, 2, 3]);

    // Node 2's storage: a snapshot, then entries up to the commit index.
    let (storage, snap_index, commit, before_sm, before_cs) = {
        let n = c.node(2);
        let st = n.storage.clone();
        let snap = st.snapshot(0, 0).unwrap();
        assert_eq!(snap.metadata.index, n.snap_index);
        assert!(snap.metadata.index > 0);
        assert!(
            st.last_index().unwrap() > snap.metadata.index,
            "entries after the snapshot"
        );
        (
            st,
            snap.metadata.index,
            c.commit(2),
            n.sm,
            n.conf_state.clone(),
        )
    };
    assert_eq!(storage.initial_state().unwrap().hard_state.commit, commit);

    // Restart node 2: a new RawNode over the same storage, its state
    // machine rebuilt from the snapshot (applied = snapshot index).
    let mut cfg = Config::new(2);
    cfg.applied = snap_index;
    let mut node = Node::new(&cfg, storage.clone());
    let snap = storage.snapshot(0, 0).unwrap();
    node.sm = StateMachine::decode(snap.data());
    node.applied = snap_index;
    node.snap_index = snap_index;
    node.conf_state = snap.metadata.conf_state.clone();
    assert_eq!(node.conf_state, before_cs);

    let st = node.rn.status();
    assert_eq!(st.basic.hard_state.commit, commit);
    assert_eq!(st.basic.hard_state.term, term);
    assert_eq!(st.basic.applied, snap_index);
    assert_eq!(st.basic.soft_state.raft_state, StateRole::Follower);
    let voters: Vec<u64> = st.config.voters.ids().into_iter().collect();
    assert_eq!(voters, vec![1, 2, 3]);

    // The first Ready hands back exactly the entries after the snapshot,
    // up to the commit index, and nothing to persist.
    let rd = node.rn.ready();
    assert!(rd.hard_state.is_none());
    assert!(rd.entries.is_empty());
    assert!(rd.snapshot.is_none());
    let idx: Vec<u64> = rd.committed_entries.iter().map(|e| e.index).collect();
    assert_eq!(idx, (snap_index + 1..=commit).collect::<Vec<_>>());
    // Replaying them rebuilds the state machine as it was.
    for e in &rd.committed_entries {
        if e.entry_type == EntryType::EntryNormal && !e.data().is_empty() {
            node.sm.apply(e.data());
        }
        node.applied = e.index;
    }
    node.rn.advance(rd);
    assert!(!node.rn.has_ready());
    assert_eq!(node.sm, before_sm, "the restarted state machine matches");
    c.nodes.insert(2, node);
    c.assert_pre_vote_and_check_quorum();

    // The restarted node keeps following the same leader.
    c.propose_many(1, 20, 5);
    c.assert_converged(&[1, 2, 3]);
    assert_eq!(c.term(2), term);
}

/// The acceptance scenario: three voters compact their log at 10,000
/// entries; a fourth node, added as a learner through a conf change, joins
/// with an empty log, is caught up by snapshot then appends, and ends with
/// the leader's last index and the same state machine. The leader keeps its
/// role and term at every step.
#[test]
fn new_node_joins_compacted_cluster() {
    const COMPACT: u64 = 10_000;
    let mut c = Cluster::bootstrapped(3, COMPACT);
    c.assert_pre_vote_and_check_quorum();
    let term = c.term(1);
    c.stable_leader = Some((1, term));

    c.propose_many(1, 5_000, 100);

    // The learner is added, but its host only starts later.
    c.add_empty_node(4);
    c.assert_pre_vote_and_check_quorum();
    c.down.insert(4);
    c.change_conf(1, ConfChangeType::ConfChangeAddLearnerNode, 4);
    assert_eq!(c.node(1).conf_state.learners, vec![4]);

    // Enough entries for every host to snapshot and compact after the
    // change (so their snapshots carry the learner).
    c.propose_many(1, 5_100, 100);
    for id in 1..=3 {
        let n = c.node(id);
        assert_eq!(n.snapshots_created, 1, "node {id} compacted once");
        assert!(n.snap_index >= COMPACT);
        let snap = n.storage.snapshot(0, 0).unwrap();
        assert_eq!(snap.metadata.conf_state.learners, vec![4]);
        assert!(n.storage.first_index().unwrap() > COMPACT);
    }

    // The new host starts.
    c.down.remove(&4);
    c.tick_until(100, "node 4 to catch up", |c| {
        c.last_index(4) == c.last_index(1) && c.node(4).applied == c.node(1).applied
    });
    assert_eq!(c.snaps_delivered.get(&4), Some(&1));
    assert_eq!(c.node(4).snapshots_installed, 1);
    assert!(c.node(4).snap_index >= COMPACT);

    // More traffic reaches it by appends.
    c.propose_many(1, 300, 100);
    c.tick();
    assert_eq!(c.node(4).snapshots_installed, 1);
    assert_eq!(c.snaps_delivered.get(&4), Some(&1));
    c.assert_converged(&[1, 2, 3, 4]);
    assert_eq!(c.node(4).sm.count, 10_400);
    assert_eq!(c.node(4).conf_state, c.node(1).conf_state);
    assert_eq!(c.role(4), StateRole::Follower);
    for id in 1..=4 {
        assert_eq!(c.term(id), term, "node {id} term");
    }
}
