//! A deterministic cluster driver for integration tests, built only on the
//! public API (`RawNode<MemoryStorage>`, `Config`, `raftlet::pb`).
//!
//! Use it from an integration test with `mod common;` and
//! `use common::Cluster;`.
//!
//! # Model
//!
//! * Nodes have ids `1..=n`. Each one owns a [`MemoryStorage`] (its "disk")
//!   and a recorded state machine (the data of every applied entry).
//! * Time is logical. [`Cluster::tick_all`] ticks every running node once,
//!   [`Cluster::tick`] one node; both then [`Cluster::stabilize`] the
//!   cluster. The network is infinitely fast compared with a tick: every
//!   message produced in a tick is delivered (or dropped) before the next.
//! * [`Cluster::stabilize`] runs rounds until nothing is left to do: every
//!   running node with a Ready handles it (in id order), then every queued
//!   message is delivered in the order it was sent. Handling a Ready means,
//!   as a host must: persist the snapshot, entries and hard state; queue
//!   `messages` and then `persisted_messages` (the write is already
//!   durable); apply the committed entries (conf changes go through
//!   `RawNode::apply_conf_change`, and the resulting `ConfState` is saved in
//!   the storage); then `advance`.
//! * The network drops a message when its `(from, to)` pair is blocked
//!   ([`Cluster::isolate`], [`Cluster::split`], [`Cluster::cut`],
//!   [`Cluster::block`]; [`Cluster::heal`] unblocks everything), when either
//!   end is stopped ([`Cluster::stop`]), when the recipient is unknown, or
//!   when the optional [`Cluster::set_filter`] hook refuses it. Blocking is
//!   checked at delivery time.
//! * Optionally a node's outgoing link has a byte budget per tick
//!   ([`Cluster::set_uplink_budget`]): its messages beyond the budget wait,
//!   in order, for the next ticks instead of being delivered at once.
//! * Everything observable is recorded: the **timeline** (role, term and
//!   leader changes of every node, network events, notes), the **wire log**
//!   (every message handed to the network, delivered or dropped, in order)
//!   and the **ready log** (a summary of every Ready handled).
//!
//! # Defaults
//!
//! Node configs start from `Config::new(id)`, i.e. raftlet's defaults:
//! **pre-vote and check-quorum ON**, `election_tick = 10`,
//! `heartbeat_tick = 1`, and a fixed seed derived from the id
//! ([`fixed_seed`], so runs are deterministic; raftlet's own default, seed
//! 0, draws one from the OS). Turn features off in the tweak closure passed to
//! [`Cluster::new`]. The closure gets every node's config (look at `c.id` to
//! tweak one node only).
//!
//! # Failure output
//!
//! When a test panics while a `Cluster` is alive (any failed `assert!`), the
//! cluster's `Drop` prints the timeline and the tail of the wire log to
//! stderr; the test harness shows it with the failure. [`Cluster::dump`]
//! returns the same text for custom messages.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;

use bytes::Bytes;
use raftlet::describe::describe_message;
use raftlet::pb::Encode as _;
use raftlet::pb::{
    ConfChangeI, ConfState, Entry, EntryType, HardState, Message, MessageType, Snapshot,
    SnapshotMetadata,
};
use raftlet::tracker::Progress;
use raftlet::{Config, Error, MemoryStorage, RawNode, ReadState, Ready, StateRole, Storage as _};

/// How many stabilization rounds [`Cluster::stabilize`] runs before it
/// declares a livelock and panics.
const MAX_ROUNDS: usize = 10_000;

/// The observable state of one node: role, term and known leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Obs {
    /// The node's role.
    pub role: StateRole,
    /// The node's term.
    pub term: u64,
    /// The leader the node knows (0 for none).
    pub lead: u64,
}

impl std::fmt::Display for Obs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@t{}", self.role, self.term)?;
        if self.lead != 0 {
            write!(f, "(lead {})", self.lead)?;
        }
        Ok(())
    }
}

/// A change of a node's [`Obs`], stamped with the cluster clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateChange {
    /// The cluster clock (see [`Cluster::now`]) when the change was seen.
    pub clock: u64,
    /// The node.
    pub id: u64,
    /// The state before.
    pub from: Obs,
    /// The state after.
    pub to: Obs,
}

/// One message handed to the network.
#[derive(Debug, Clone)]
pub struct WireRecord {
    /// The cluster clock when it was delivered or dropped.
    pub clock: u64,
    /// The message.
    pub msg: Message,
    /// Whether the recipient stepped it (false: the network dropped it).
    pub delivered: bool,
}

impl WireRecord {
    /// etcd's one-line description, with a `DROPPED` marker when dropped.
    pub fn describe(&self) -> String {
        let d = describe_message(&self.msg);
        if self.delivered {
            d
        } else {
            format!("{d} DROPPED")
        }
    }
}

/// A summary of one Ready handled by the driver.
#[derive(Debug, Clone)]
pub struct ReadySummary {
    /// The cluster clock.
    pub clock: u64,
    /// The node.
    pub id: u64,
    /// `Ready::must_sync`.
    pub must_sync: bool,
    /// The soft state if it changed: (leader, role).
    pub soft_state: Option<(u64, StateRole)>,
    /// The hard state if it changed.
    pub hard_state: Option<HardState>,
    /// `(term, index)` of the entries to persist.
    pub entries: Vec<(u64, u64)>,
    /// `(term, index)` of the committed entries applied.
    pub committed: Vec<(u64, u64)>,
    /// The index of the snapshot applied, if any.
    pub snapshot: Option<u64>,
    /// `messages.len()` and `persisted_messages.len()`.
    pub messages: (usize, usize),
}

/// One node: its RawNode, its disk and its state machine.
pub struct Node {
    /// The node (replaced on [`Cluster::restart`]).
    pub rn: RawNode<MemoryStorage>,
    /// Its storage; survives restarts.
    pub storage: MemoryStorage,
    /// The config it was (re)started with.
    pub config: Config,
    /// Every committed entry applied, in order (all types).
    pub applied_entries: Vec<Entry>,
    /// The data of the applied normal entries with a payload (the "state
    /// machine"); replaced by the content of a snapshot when one is applied.
    pub applied_data: Vec<Bytes>,
    /// The last index applied.
    pub applied_index: u64,
    /// The configuration after the last conf change or snapshot applied.
    pub conf_state: Option<ConfState>,
    /// Ticks this node received.
    pub ticks: u64,
    /// Stopped nodes are neither ticked nor reached by messages.
    pub running: bool,
    last_obs: Obs,
}

/// Decides whether the network delivers a message (true) or drops it.
pub type Filter = Box<dyn FnMut(&Message) -> bool>;

/// A set of nodes connected by a controllable network. See the module docs.
pub struct Cluster {
    nodes: BTreeMap<u64, Node>,
    blocked: BTreeSet<(u64, u64)>,
    queue: VecDeque<Message>,
    filter: Option<Filter>,
    clock: u64,
    timeline: Vec<String>,
    changes: Vec<StateChange>,
    wire: Vec<WireRecord>,
    readies: Vec<ReadySummary>,
    tweak: Box<dyn Fn(&mut Config)>,
    /// Outgoing byte budgets per node (see [`Cluster::set_uplink_budget`]).
    uplinks: BTreeMap<u64, Uplink>,
    /// Every `ReadState` handed out in a Ready: (clock, node, read state).
    read_log: Vec<(u64, u64, ReadState)>,
    /// Every membership change a leader proposed by itself: (clock, leader, event).
    pub membership_events: Vec<(u64, u64, raftlet::MembershipEvent)>,
    /// Print the timeline and wire log when a test panics (default true).
    pub dump_on_panic: bool,
}

/// The election-timeout seed every node of a [`Cluster`] gets unless a
/// tweak sets another: the one raftlet derived from the id when `seed` 0
/// still meant that, so the timelines these scenarios were written against
/// stay the same run after run.
pub fn fixed_seed(id: u64) -> u64 {
    id.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5851_f42d_4c95_7f2d
}

fn obs_of(rn: &RawNode<MemoryStorage>) -> Obs {
    let s = rn.basic_status();
    Obs {
        role: s.soft_state.raft_state,
        term: s.hard_state.term,
        lead: s.soft_state.leader_id,
    }
}

/// Encodes a state machine (the list of applied payloads) as snapshot data:
/// a u32 big-endian length before each payload.
pub fn encode_state(data: &[Bytes]) -> Bytes {
    let mut out = Vec::new();
    for d in data {
        out.extend_from_slice(&(d.len() as u32).to_be_bytes());
        out.extend_from_slice(d);
    }
    Bytes::from(out)
}

/// Decodes what [`encode_state`] produced.
pub fn decode_state(mut b: &[u8]) -> Vec<Bytes> {
    let mut out = Vec::new();
    while b.len() >= 4 {
        let n = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
        out.push(Bytes::copy_from_slice(&b[4..4 + n]));
        b = &b[4 + n..];
    }
    out
}

impl Cluster {
    /// `n` voters with ids `1..=n` over empty logs whose storage reports the
    /// configuration `voters = 1..=n` (etcd `newTestMemoryStorage(withPeers)`):
    /// every node starts as a follower in term 0. `tweak` adjusts each node's
    /// config (raftlet defaults otherwise: pre-vote and check-quorum on).
    pub fn new(n: u64, tweak: impl Fn(&mut Config) + 'static) -> Cluster {
        Self::build(n, 0, Box::new(tweak))
    }

    /// Like [`Cluster::new`], but every storage starts from a snapshot at
    /// `index` (term 1) holding the configuration, as etcd's interaction
    /// scripts do with `add-nodes n voters=(..) index=<index>`.
    pub fn new_at_index(n: u64, index: u64, tweak: impl Fn(&mut Config) + 'static) -> Cluster {
        assert!(index > 0, "use Cluster::new for an empty log");
        Self::build(n, index, Box::new(tweak))
    }

    fn build(n: u64, index: u64, tweak: Box<dyn Fn(&mut Config)>) -> Cluster {
        let voters: Vec<u64> = (1..=n).collect();
        let mut c = Cluster {
            nodes: BTreeMap::new(),
            blocked: BTreeSet::new(),
            queue: VecDeque::new(),
            filter: None,
            clock: 0,
            timeline: Vec::new(),
            changes: Vec::new(),
            wire: Vec::new(),
            readies: Vec::new(),
            tweak,
            uplinks: BTreeMap::new(),
            read_log: Vec::new(),
            membership_events: Vec::new(),
            dump_on_panic: true,
        };
        for id in 1..=n {
            let storage = MemoryStorage::new();
            let cs = ConfState::from_voters(voters.clone());
            if index == 0 {
                storage
                    .initialize_with_conf_state(cs.clone())
                    .expect("valid configuration");
            } else {
                storage
                    .wl()
                    .apply_snapshot(Snapshot {
                        data: None,
                        metadata: SnapshotMetadata {
                            conf_state: cs.clone(),
                            index,
                            term: 1,
                        },
                    })
                    .expect("initial snapshot");
            }
            c.insert_node(id, storage, Some(cs));
        }
        c.timeline.push(format!(
            "t=   0 cluster of {n} voters{}",
            if index > 0 {
                format!(" from a snapshot at index {index}")
            } else {
                String::new()
            }
        ));
        c
    }

    fn insert_node(&mut self, id: u64, storage: MemoryStorage, cs: Option<ConfState>) {
        let mut config = Config::new(id);
        config.seed = fixed_seed(id);
        (self.tweak)(&mut config);
        let rn = RawNode::new(&config, storage.clone())
            .unwrap_or_else(|e| panic!("RawNode::new for node {id}: {e}"));
        let applied_index = rn.basic_status().applied;
        let last_obs = obs_of(&rn);
        self.nodes.insert(
            id,
            Node {
                rn,
                storage,
                config,
                applied_entries: Vec::new(),
                applied_data: Vec::new(),
                applied_index,
                conf_state: cs,
                ticks: 0,
                running: true,
                last_obs,
            },
        );
    }

    /// Adds a node with an empty storage and no configuration (a member
    /// about to be added by a conf change; the leader will send it a
    /// snapshot). Its config goes through the tweak closure.
    pub fn add_node(&mut self, id: u64) {
        assert!(!self.nodes.contains_key(&id), "node {id} already exists");
        self.insert_node(id, MemoryStorage::new(), None);
        self.note(format!("node {id} added (empty storage)"));
    }

    // ------------------------------------------------------------------
    // Accessors
    // ------------------------------------------------------------------

    /// The ids of all nodes (running or not), ascending.
    pub fn ids(&self) -> Vec<u64> {
        self.nodes.keys().copied().collect()
    }

    /// The node `id` (panics if unknown).
    pub fn node(&self, id: u64) -> &Node {
        self.nodes
            .get(&id)
            .unwrap_or_else(|| panic!("no node {id}"))
    }

    /// The node `id`, mutably. Call [`Cluster::stabilize`] after driving its
    /// RawNode directly.
    pub fn node_mut(&mut self, id: u64) -> &mut Node {
        self.nodes
            .get_mut(&id)
            .unwrap_or_else(|| panic!("no node {id}"))
    }

    /// The RawNode of `id`.
    pub fn raw(&self, id: u64) -> &RawNode<MemoryStorage> {
        &self.node(id).rn
    }

    /// The cluster clock: how many tick calls ([`Cluster::tick_all`] or
    /// [`Cluster::tick`]) happened so far.
    pub fn now(&self) -> u64 {
        self.clock
    }

    /// Role, term and leader of `id`.
    pub fn obs(&self, id: u64) -> Obs {
        obs_of(&self.node(id).rn)
    }

    /// The role of `id`.
    pub fn role(&self, id: u64) -> StateRole {
        self.obs(id).role
    }

    /// The term of `id`.
    pub fn term(&self, id: u64) -> u64 {
        self.obs(id).term
    }

    /// The hard state (term, vote, commit) of `id`.
    pub fn hard_state(&self, id: u64) -> HardState {
        self.node(id).rn.basic_status().hard_state
    }

    /// The commit index of `id`.
    pub fn committed(&self, id: u64) -> u64 {
        self.hard_state(id).commit
    }

    /// The running nodes that are in the Leader role, ascending.
    pub fn leaders(&self) -> Vec<u64> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.running && obs_of(&n.rn).role == StateRole::Leader)
            .map(|(id, _)| *id)
            .collect()
    }

    /// The running leader with the highest term (a stale leader cut off in a
    /// minority may still believe it leads; it is never preferred over a
    /// leader of a newer term). `None` when no node leads.
    pub fn leader(&self) -> Option<u64> {
        self.leaders().into_iter().max_by_key(|id| self.term(*id))
    }

    /// The data of the normal entries `id` applied, as (lossy) strings.
    pub fn applied(&self, id: u64) -> Vec<String> {
        self.node(id)
            .applied_data
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect()
    }

    /// The last index `id` applied.
    pub fn applied_index(&self, id: u64) -> u64 {
        self.node(id).applied_index
    }

    /// The number of ticks `id` received.
    pub fn ticks_of(&self, id: u64) -> u64 {
        self.node(id).ticks
    }

    /// Every state change seen so far, in order.
    pub fn changes(&self) -> &[StateChange] {
        &self.changes
    }

    /// The state changes of `id`.
    pub fn changes_of(&self, id: u64) -> Vec<StateChange> {
        self.changes
            .iter()
            .filter(|c| c.id == id)
            .copied()
            .collect()
    }

    /// The timeline, one line per event.
    pub fn timeline(&self) -> &[String] {
        &self.timeline
    }

    /// Every message handed to the network, in delivery order.
    pub fn wire(&self) -> &[WireRecord] {
        &self.wire
    }

    /// A position in the wire log, for [`Cluster::wire_since`].
    pub fn wire_mark(&self) -> usize {
        self.wire.len()
    }

    /// The wire records from `mark` on.
    pub fn wire_since(&self, mark: usize) -> &[WireRecord] {
        &self.wire[mark..]
    }

    /// Compact `(from, to, type, term)` tuples of the messages from `mark`
    /// on that satisfy `pred` (handy for `assert_eq!`).
    pub fn wire_tuples_since(
        &self,
        mark: usize,
        pred: impl Fn(&WireRecord) -> bool,
    ) -> Vec<(u64, u64, MessageType, u64)> {
        self.wire[mark..]
            .iter()
            .filter(|w| pred(w))
            .map(|w| (w.msg.from, w.msg.to, w.msg.msg_type, w.msg.term))
            .collect()
    }

    /// Every Ready handled, in order.
    pub fn readies(&self) -> &[ReadySummary] {
        &self.readies
    }

    /// The Readies of `id`.
    pub fn readies_of(&self, id: u64) -> Vec<ReadySummary> {
        self.readies
            .iter()
            .filter(|r| r.id == id)
            .cloned()
            .collect()
    }

    /// Appends a free-form line to the timeline (a marker for the reader).
    pub fn note(&mut self, what: impl AsRef<str>) {
        self.timeline
            .push(format!("t={:>4} -- {}", self.clock, what.as_ref()));
    }

    /// The timeline and the last `wire_tail` wire records, as text.
    pub fn dump(&self, wire_tail: usize) -> String {
        let mut s = String::from("=== timeline ===\n");
        for l in &self.timeline {
            let _ = writeln!(s, "{l}");
        }
        let _ = writeln!(s, "=== final state (clock {}) ===", self.clock);
        for (id, n) in &self.nodes {
            let hs = n.rn.basic_status().hard_state;
            let _ = writeln!(
                s,
                "s{id}: {} vote={} commit={} applied={} {}",
                obs_of(&n.rn),
                hs.vote,
                hs.commit,
                n.applied_index,
                if n.running { "" } else { "STOPPED" }
            );
        }
        let from = self.wire.len().saturating_sub(wire_tail);
        let _ = writeln!(
            s,
            "=== wire log: last {} of {} ===",
            self.wire.len() - from,
            self.wire.len()
        );
        for w in &self.wire[from..] {
            let _ = writeln!(s, "t={:>4} {}", w.clock, w.describe());
        }
        s
    }

    // ------------------------------------------------------------------
    // Network
    // ------------------------------------------------------------------

    /// Blocks messages from `from` to `to` (one direction).
    pub fn block(&mut self, from: u64, to: u64) {
        self.blocked.insert((from, to));
        self.note(format!("net: block {from}->{to}"));
    }

    /// Blocks both directions between `a` and `b`.
    pub fn cut(&mut self, a: u64, b: u64) {
        self.blocked.insert((a, b));
        self.blocked.insert((b, a));
        self.note(format!("net: cut {a}<->{b}"));
    }

    /// Cuts every node of `ids` from every node not in `ids` (nodes inside
    /// `ids` still reach each other).
    pub fn isolate(&mut self, ids: &[u64]) {
        let all = self.ids();
        for &a in ids {
            for &b in &all {
                if !ids.contains(&b) {
                    self.blocked.insert((a, b));
                    self.blocked.insert((b, a));
                }
            }
        }
        self.note(format!("net: isolate {ids:?}"));
    }

    /// Cuts every node of `a` from every node of `b` (both directions);
    /// nodes in neither side are not affected.
    pub fn split(&mut self, a: &[u64], b: &[u64]) {
        for &x in a {
            for &y in b {
                self.blocked.insert((x, y));
                self.blocked.insert((y, x));
            }
        }
        self.note(format!("net: split {a:?} | {b:?}"));
    }

    /// Unblocks every pair (the filter set with [`Cluster::set_filter`] stays).
    pub fn heal(&mut self) {
        self.blocked.clear();
        self.note("net: heal");
    }

    /// Whether messages from `from` to `to` are blocked.
    pub fn is_blocked(&self, from: u64, to: u64) -> bool {
        self.blocked.contains(&(from, to))
    }

    /// Installs (or with `None` removes) a hook deciding per message whether
    /// the network delivers it; it is consulted after the partition checks.
    pub fn set_filter(&mut self, f: Option<Filter>) {
        self.filter = f;
    }

    // ------------------------------------------------------------------
    // Driving
    // ------------------------------------------------------------------

    /// Ticks every running node once (in id order), then stabilizes.
    pub fn tick_all(&mut self) {
        self.clock += 1;
        for id in self.ids() {
            if self.nodes[&id].running {
                self.raw_tick(id);
            }
        }
        self.stabilize();
    }

    /// [`Cluster::tick_all`] `n` times.
    pub fn tick_all_n(&mut self, n: usize) {
        for _ in 0..n {
            self.tick_all();
        }
    }

    /// Ticks node `id` only (it must be running), then stabilizes.
    pub fn tick(&mut self, id: u64) {
        assert!(self.node(id).running, "node {id} is stopped");
        self.clock += 1;
        self.raw_tick(id);
        self.stabilize();
    }

    /// [`Cluster::tick`] `n` times.
    pub fn tick_n(&mut self, id: u64, n: usize) {
        for _ in 0..n {
            self.tick(id);
        }
    }

    /// Ticks every running node until `cond` holds, at most `max` times.
    /// Returns how many ticks it took, or `None` if `cond` never held.
    pub fn tick_until(
        &mut self,
        max: usize,
        mut cond: impl FnMut(&Cluster) -> bool,
    ) -> Option<usize> {
        for i in 0..=max {
            if cond(self) {
                return Some(i);
            }
            if i < max {
                self.tick_all();
            }
        }
        None
    }

    fn raw_tick(&mut self, id: u64) {
        let n = self.nodes.get_mut(&id).expect("node");
        n.ticks += 1;
        n.rn.tick();
        self.observe(id);
    }

    /// Makes `id` campaign (`RawNode::campaign`), then stabilizes.
    pub fn campaign(&mut self, id: u64) {
        self.note(format!("s{id} told to campaign"));
        let r = self.node_mut(id).rn.campaign();
        assert!(r.is_ok(), "campaign on {id}: {r:?}");
        self.observe(id);
        self.stabilize();
    }

    /// Proposes `data` on `id`, then stabilizes (so the entry is committed
    /// and applied if the cluster can).
    pub fn propose(&mut self, id: u64, data: impl Into<Bytes>) -> Result<(), Error> {
        let r = self.node_mut(id).rn.propose(data);
        self.observe(id);
        self.stabilize();
        r
    }

    /// Proposes a conf change on `id`, then stabilizes.
    pub fn propose_conf_change(
        &mut self,
        id: u64,
        cc: impl Into<ConfChangeI>,
    ) -> Result<(), Error> {
        let r = self.node_mut(id).rn.propose_conf_change(cc);
        self.observe(id);
        self.stabilize();
        r
    }

    /// Runs Ready handling and message delivery until no node has a Ready
    /// and no message is queued. Panics (with the timeline) after
    /// `MAX_ROUNDS` rounds.
    pub fn stabilize(&mut self) {
        for _ in 0..MAX_ROUNDS {
            let mut busy = false;
            for id in self.ids() {
                busy |= self.handle_ready(id);
            }
            busy |= self.deliver_all();
            if !busy {
                return;
            }
        }
        panic!("cluster did not stabilize after {MAX_ROUNDS} rounds");
    }

    /// Handles one Ready of `id` if it has one (see the module docs);
    /// queued messages are not delivered. Returns whether there was one.
    pub fn handle_ready(&mut self, id: u64) -> bool {
        let clock = self.clock;
        let n = self.nodes.get_mut(&id).expect("node");
        if !n.running || !n.rn.has_ready() {
            return false;
        }
        let rd: Ready = n.rn.ready();
        let mut notes = Vec::new();
        // 1. Persist.
        {
            let mut s = n.storage.wl();
            if let Some(snap) = &rd.snapshot {
                s.apply_snapshot(snap.clone())
                    .unwrap_or_else(|e| panic!("node {id}: apply_snapshot: {e}"));
            }
            s.append(&rd.entries)
                .unwrap_or_else(|e| panic!("node {id}: append: {e}"));
            if let Some(hs) = rd.hard_state {
                s.set_hard_state(hs);
            }
        }
        // 2. Send (the write above is durable, so both kinds go at once).
        self.queue.extend(rd.messages.iter().cloned());
        self.queue.extend(rd.persisted_messages.iter().cloned());
        // 3. Apply: the snapshot first, then the committed entries.
        if let Some(snap) = &rd.snapshot {
            n.applied_data = decode_state(snap.data());
            n.applied_index = snap.metadata.index;
            n.conf_state = Some(snap.metadata.conf_state.clone());
            notes.push(format!(
                "s{id} applied snapshot at index {} (term {})",
                snap.metadata.index, snap.metadata.term
            ));
        }
        for e in &rd.committed_entries {
            match e.entry_type {
                EntryType::EntryConfChange | EntryType::EntryConfChangeV2 => {
                    let cc = ConfChangeI::from_entry(e)
                        .unwrap_or_else(|err| panic!("node {id}: bad conf change entry: {err}"));
                    match n.rn.apply_conf_change(&cc) {
                        Ok(cs) => {
                            n.storage
                                .wl()
                                .set_conf_state(cs.clone())
                                .expect("an applied configuration is valid");
                            notes.push(format!(
                                "s{id} applied conf change at {}: {}",
                                e.index,
                                raftlet::describe::describe_conf_change(&cc)
                            ));
                            n.conf_state = Some(cs);
                        }
                        Err(err) => notes.push(format!(
                            "s{id} conf change at {} refused on apply: {err}",
                            e.index
                        )),
                    }
                }
                _ => {
                    if !e.data().is_empty() {
                        n.applied_data.push(e.data.clone().unwrap_or_default());
                    }
                }
            }
            n.applied_entries.push(e.clone());
            n.applied_index = e.index;
        }
        self.readies.push(ReadySummary {
            clock,
            id,
            must_sync: rd.must_sync,
            soft_state: rd.soft_state.map(|s| (s.leader_id, s.raft_state)),
            hard_state: rd.hard_state,
            entries: rd.entries.iter().map(|e| (e.term, e.index)).collect(),
            committed: rd
                .committed_entries
                .iter()
                .map(|e| (e.term, e.index))
                .collect(),
            snapshot: rd.snapshot.as_ref().map(|s| s.metadata.index),
            messages: (rd.messages.len(), rd.persisted_messages.len()),
        });
        for rs in &rd.read_states {
            self.read_log.push((clock, id, rs.clone()));
        }
        for ev in &rd.membership_events {
            self.membership_events.push((clock, id, *ev));
        }
        // 4. Advance (this may step our own vote or append acknowledgement).
        n.rn.advance(rd);
        for l in notes {
            self.note(l);
        }
        self.observe(id);
        true
    }

    /// Delivers (or drops) every queued message in order, including the
    /// ones queued while delivering. Returns whether any was queued or
    /// released by an uplink budget.
    pub fn deliver_all(&mut self) -> bool {
        // Messages held back by an uplink budget go first (a no-op when no
        // budget is set).
        let mut any = self.drain_uplinks();
        while let Some(m) = self.queue.pop_front() {
            any = true;
            self.deliver(m);
        }
        any
    }

    fn deliver(&mut self, m: Message) {
        // An uplink budget may hold the message back (never without one).
        if let Some(m) = self.throttle(m) {
            self.transmit(m);
        }
    }

    /// Delivers (or drops) `m` now, without looking at uplink budgets.
    fn transmit(&mut self, m: Message) {
        let clock = self.clock;
        let (from, to) = (m.from, m.to);
        let reachable = !self.blocked.contains(&(from, to))
            && self.nodes.get(&from).is_none_or(|n| n.running)
            && self.nodes.get(&to).is_some_and(|n| n.running);
        let pass = reachable && self.filter.as_mut().is_none_or(|f| f(&m));
        self.wire.push(WireRecord {
            clock,
            msg: m.clone(),
            delivered: pass,
        });
        if !pass {
            return;
        }
        let n = self.nodes.get_mut(&to).expect("checked");
        // Errors (e.g. a response from a peer no longer in the
        // configuration) are part of normal operation; they are noted.
        if let Err(e) = n.rn.step(m.clone()) {
            if !matches!(e, Error::StepPeerNotFound) {
                let line = format!("s{to} step error on {}: {e}", describe_message(&m));
                self.note(line);
            }
        }
        self.observe(to);
    }

    /// Records a change of `id`'s role, term or leader in the timeline.
    fn observe(&mut self, id: u64) {
        let n = self.nodes.get_mut(&id).expect("node");
        let now = obs_of(&n.rn);
        if now != n.last_obs {
            let ch = StateChange {
                clock: self.clock,
                id,
                from: n.last_obs,
                to: now,
            };
            n.last_obs = now;
            self.changes.push(ch);
            self.timeline.push(format!(
                "t={:>4} s{id}: {} -> {}",
                self.clock, ch.from, ch.to
            ));
        }
    }

    // ------------------------------------------------------------------
    // Node life cycle and storage
    // ------------------------------------------------------------------

    /// Stops `id`: it is no longer ticked, and messages to or from it are
    /// dropped. Its storage and state machine are kept.
    pub fn stop(&mut self, id: u64) {
        self.node_mut(id).running = false;
        self.note(format!("s{id} stopped"));
    }

    /// Restarts `id` from its storage: a new `RawNode` over the same
    /// `MemoryStorage`, with `Config::applied` set to what its state
    /// machine applied (so nothing is applied twice). The node runs again.
    pub fn restart(&mut self, id: u64) {
        self.restart_with(id, |_| {});
    }

    /// [`Cluster::restart`] with an extra config tweak (e.g. another seed).
    pub fn restart_with(&mut self, id: u64, tweak: impl Fn(&mut Config)) {
        let mut config = Config::new(id);
        config.seed = fixed_seed(id);
        (self.tweak)(&mut config);
        tweak(&mut config);
        let n = self.nodes.get_mut(&id).expect("node");
        config.applied = n.applied_index;
        n.rn = RawNode::new(&config, n.storage.clone())
            .unwrap_or_else(|e| panic!("restart of node {id}: {e}"));
        n.config = config;
        n.running = true;
        self.note(format!("s{id} restarted from its storage"));
        self.observe(id);
    }

    /// Takes a snapshot of `id`'s state machine at its applied index and
    /// compacts its log up to there (the snapshot data encodes the applied
    /// payloads; see [`encode_state`]).
    pub fn compact(&mut self, id: u64) {
        let n = self.nodes.get_mut(&id).expect("node");
        let idx = n.applied_index;
        let data = encode_state(&n.applied_data);
        let cs = n.conf_state.clone();
        let mut s = n.storage.wl();
        s.create_snapshot(idx, cs, Some(data))
            .unwrap_or_else(|e| panic!("node {id}: create_snapshot at {idx}: {e}"));
        s.compact(idx)
            .unwrap_or_else(|e| panic!("node {id}: compact at {idx}: {e}"));
        drop(s);
        self.note(format!("s{id} snapshotted and compacted at {idx}"));
    }

    /// The entries `id` holds in its storage.
    pub fn stored_entries(&self, id: u64) -> Vec<Entry> {
        self.node(id).storage.rl().entries_ref().to_vec()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.dump_on_panic && std::thread::panicking() {
            eprintln!("{}", self.dump(60));
        }
    }
}

// ----------------------------------------------------------------------
// Fine-grained driving, for ports of etcd's interaction scripts
// (testdata/*.txt), which step only some nodes at a time, deliver or drop
// only some of the queued messages, and hand messages around by hand.
// These additions do not change the behaviour of anything above.
// ----------------------------------------------------------------------

impl Cluster {
    /// A cluster without nodes; add them with
    /// [`Cluster::add_node_with_snapshot`] or [`Cluster::add_node`].
    pub fn new_empty(tweak: impl Fn(&mut Config) + 'static) -> Cluster {
        let mut c = Self::build(0, 0, Box::new(tweak));
        c.timeline.clear();
        c.timeline.push("t=   0 empty cluster".to_string());
        c
    }

    /// Adds node `id` whose storage starts from a snapshot at `index`
    /// (term 1) holding the configuration `voters` (etcd's
    /// `add-nodes 1 voters=(..) index=<index>`; nodes of one cluster may
    /// start at different indexes).
    pub fn add_node_with_snapshot(&mut self, id: u64, voters: &[u64], index: u64) {
        assert!(!self.nodes.contains_key(&id), "node {id} already exists");
        assert!(index > 0, "use add_node for an empty storage");
        let storage = MemoryStorage::new();
        let cs = ConfState::from_voters(voters.to_vec());
        storage
            .wl()
            .apply_snapshot(Snapshot {
                data: None,
                metadata: SnapshotMetadata {
                    conf_state: cs.clone(),
                    index,
                    term: 1,
                },
            })
            .expect("initial snapshot");
        self.insert_node(id, storage, Some(cs));
        self.note(format!(
            "node {id} added from a snapshot at index {index}, voters {voters:?}"
        ));
    }

    /// The messages queued on the network (sent, not yet delivered or
    /// dropped), in sending order.
    pub fn queued(&self) -> Vec<Message> {
        self.queue.iter().cloned().collect()
    }

    /// The queued messages addressed to `to`, in sending order.
    pub fn queued_to(&self, to: u64) -> Vec<Message> {
        self.queue.iter().filter(|m| m.to == to).cloned().collect()
    }

    /// Queues `m` as if its sender had handed it to the network (for hosts
    /// driven by hand, or a message built by the test).
    pub fn send(&mut self, m: Message) {
        self.queue.push_back(m);
    }

    /// Delivers, in sending order, the queued messages that satisfy `pred`
    /// (partitions, stopped nodes and the filter still apply); the others
    /// stay queued in their order. Nothing else runs: no Ready is handled.
    /// Returns the number of messages taken off the queue.
    pub fn deliver_where(&mut self, mut pred: impl FnMut(&Message) -> bool) -> usize {
        let (take, keep): (VecDeque<Message>, VecDeque<Message>) = std::mem::take(&mut self.queue)
            .into_iter()
            .partition(|m| pred(m));
        self.queue = keep;
        let n = take.len();
        for m in take {
            self.deliver(m);
        }
        n
    }

    /// Delivers the queued messages to each of `ids` in turn (all those to
    /// the first id, then to the second, ...), as etcd's `deliver-msgs`.
    /// Returns the number delivered.
    pub fn deliver_to(&mut self, ids: &[u64]) -> usize {
        ids.iter()
            .map(|&id| self.deliver_where(|m| m.to == id))
            .sum()
    }

    /// Drops the queued messages that satisfy `pred` (recorded in the wire
    /// log as dropped) and returns them.
    pub fn drop_where(&mut self, mut pred: impl FnMut(&Message) -> bool) -> Vec<Message> {
        let (take, keep): (VecDeque<Message>, VecDeque<Message>) = std::mem::take(&mut self.queue)
            .into_iter()
            .partition(|m| pred(m));
        self.queue = keep;
        let clock = self.clock;
        for m in &take {
            self.wire.push(WireRecord {
                clock,
                msg: m.clone(),
                delivered: false,
            });
        }
        take.into_iter().collect()
    }

    /// Drops the queued messages addressed to any of `ids` and returns them
    /// (etcd's `deliver-msgs drop=(..)`).
    pub fn drop_to(&mut self, ids: &[u64]) -> Vec<Message> {
        self.drop_where(|m| ids.contains(&m.to))
    }

    /// Like [`Cluster::stabilize`] restricted to `ids` (etcd's
    /// `stabilize <ids>`): repeatedly handles the Readies of `ids` and
    /// delivers the queued messages addressed to them, until neither has
    /// anything left. Messages to other nodes stay queued.
    pub fn stabilize_only(&mut self, ids: &[u64]) {
        for _ in 0..MAX_ROUNDS {
            let mut busy = false;
            for &id in ids {
                busy |= self.handle_ready(id);
            }
            busy |= self.deliver_to(ids) > 0;
            if !busy {
                return;
            }
        }
        panic!("nodes {ids:?} did not stabilize after {MAX_ROUNDS} rounds");
    }

    /// Ticks node `id` once without stabilizing (its Ready, if any, waits
    /// for [`Cluster::handle_ready`] or a stabilize call).
    pub fn tick_only(&mut self, id: u64) {
        assert!(self.node(id).running, "node {id} is stopped");
        self.clock += 1;
        self.raw_tick(id);
    }

    /// Records any change of role, term or leader of `id` in the timeline
    /// (call it after driving `node_mut(id).rn` directly).
    pub fn observe_node(&mut self, id: u64) {
        self.observe(id);
    }

    /// Compacts `id`'s log so that `first_index` becomes its first index
    /// (etcd's `compact <id> <first_index>`, whose storage always hands out
    /// a snapshot of the latest applied state): first takes a snapshot at
    /// the applied index if the storage holds none that recent, then drops
    /// the entries before `first_index`. `first_index - 1` must not exceed
    /// the applied index.
    pub fn compact_to(&mut self, id: u64, first_index: u64) {
        let n = self.nodes.get_mut(&id).expect("node");
        let idx = n.applied_index;
        assert!(
            first_index >= 1 && first_index - 1 <= idx,
            "node {id}: cannot compact to first index {first_index} past applied {idx}"
        );
        let data = encode_state(&n.applied_data);
        let cs = n.conf_state.clone();
        let mut s = n.storage.wl();
        if s.snapshot_ref().metadata.index < idx {
            s.create_snapshot(idx, cs, Some(data))
                .unwrap_or_else(|e| panic!("node {id}: create_snapshot at {idx}: {e}"));
        }
        s.compact(first_index - 1)
            .unwrap_or_else(|e| panic!("node {id}: compact at {}: {e}", first_index - 1));
        drop(s);
        self.note(format!(
            "s{id} snapshotted at {idx}, log compacted to first index {first_index}"
        ));
    }

    /// Makes `id`'s storage hold a snapshot of its state machine at its
    /// applied index, without compacting (etcd's interaction env always
    /// hands out the latest applied state as the snapshot). No-op when the
    /// storage's snapshot is already that recent.
    pub fn snapshot_applied(&mut self, id: u64) {
        let n = self.nodes.get_mut(&id).expect("node");
        let idx = n.applied_index;
        let data = encode_state(&n.applied_data);
        let cs = n.conf_state.clone();
        let mut s = n.storage.wl();
        if s.snapshot_ref().metadata.index < idx {
            s.create_snapshot(idx, cs, Some(data))
                .unwrap_or_else(|e| panic!("node {id}: create_snapshot at {idx}: {e}"));
        }
    }
}

// ----------------------------------------------------------------------
// Slow links, new members and round-by-round driving (learner design
// scenarios). These additions do not change the behaviour of anything
// above: without an uplink budget every message is delivered as before.
// ----------------------------------------------------------------------

/// Statistics of one node's budgeted uplink.
#[derive(Debug, Clone, Default)]
pub struct UplinkStats {
    /// Messages that went out (delivered or dropped by the network).
    pub messages: u64,
    /// Encoded bytes that went out.
    pub bytes: u64,
    /// Messages that had to wait for a later tick.
    pub delayed: u64,
    /// The largest backlog seen, in encoded bytes.
    pub max_backlog_bytes: u64,
    /// The largest backlog seen, in messages.
    pub max_backlog_len: usize,
    /// The most ticks a message of each type waited in the backlog.
    pub max_wait: BTreeMap<MessageType, u64>,
}

/// A node's outgoing link that carries at most `bytes_per_tick` encoded
/// bytes per tick (see [`Cluster::set_uplink_budget`]).
#[derive(Debug, Clone, Default)]
pub struct Uplink {
    /// The budget: encoded message bytes the link carries per tick.
    pub bytes_per_tick: u64,
    /// Bytes that may still go out at the current clock.
    credit: u64,
    /// The clock of the last refill.
    refilled_at: u64,
    /// Messages waiting for credit, with the clock they were sent at.
    backlog: VecDeque<(u64, Message)>,
    /// What went through the link so far.
    pub stats: UplinkStats,
}

impl Uplink {
    fn backlog_bytes(&self) -> u64 {
        self.backlog
            .iter()
            .map(|(_, m)| m.encoded_len() as u64)
            .sum()
    }
}

impl Cluster {
    /// Gives node `id`'s outgoing link (all its messages, to every peer) a
    /// budget of `bytes_per_tick` encoded bytes per tick, modelling a
    /// saturated network interface (learner design, figure 1).
    ///
    /// A message goes out when the link has credit for its encoded size
    /// (`Encode::encoded_len`) and nothing older is waiting; otherwise it
    /// joins a FIFO backlog. The credit is refilled to `bytes_per_tick` at
    /// every tick of the cluster clock; while a backlog waits, unused credit
    /// carries over, so a message larger than the budget goes out after
    /// enough ticks. The backlog is drained first in every delivery round.
    /// Messages wait in the backlog before the partition checks: the wire
    /// log records them when they finally go out.
    pub fn set_uplink_budget(&mut self, id: u64, bytes_per_tick: u64) {
        assert!(
            bytes_per_tick > 0,
            "a zero budget would never send anything"
        );
        let now = self.clock;
        let u = self.uplinks.entry(id).or_default();
        u.bytes_per_tick = bytes_per_tick;
        u.credit = bytes_per_tick;
        u.refilled_at = now;
        self.note(format!(
            "net: uplink of s{id} limited to {bytes_per_tick} bytes/tick"
        ));
    }

    /// Removes `id`'s uplink budget; its backlog goes back to the front of
    /// the network queue (in order) and is delivered by the next round.
    /// Returns the link's statistics.
    pub fn clear_uplink_budget(&mut self, id: u64) -> Option<UplinkStats> {
        let u = self.uplinks.remove(&id)?;
        for (_, m) in u.backlog.into_iter().rev() {
            self.queue.push_front(m);
        }
        self.note(format!("net: uplink of s{id} unlimited"));
        Some(u.stats)
    }

    /// The statistics of `id`'s budgeted uplink (`None` without a budget).
    pub fn uplink_stats(&self, id: u64) -> Option<&UplinkStats> {
        self.uplinks.get(&id).map(|u| &u.stats)
    }

    /// The messages waiting in `id`'s uplink backlog, oldest first.
    pub fn uplink_backlog(&self, id: u64) -> Vec<Message> {
        self.uplinks
            .get(&id)
            .map(|u| u.backlog.iter().map(|(_, m)| m.clone()).collect())
            .unwrap_or_default()
    }

    /// Refills the credit of every uplink whose last refill was at an
    /// earlier clock.
    fn refill_uplinks(&mut self) {
        let now = self.clock;
        for u in self.uplinks.values_mut() {
            if u.refilled_at != now {
                let ticks = now.saturating_sub(u.refilled_at).max(1);
                u.credit = if u.backlog.is_empty() {
                    u.bytes_per_tick
                } else {
                    u.credit
                        .saturating_add(u.bytes_per_tick.saturating_mul(ticks))
                };
                u.refilled_at = now;
            }
        }
    }

    /// Sends what the uplinks' credit allows from their backlogs. Returns
    /// whether anything went out.
    fn drain_uplinks(&mut self) -> bool {
        if self.uplinks.is_empty() {
            return false;
        }
        self.refill_uplinks();
        let now = self.clock;
        let mut out = Vec::new();
        for u in self.uplinks.values_mut() {
            while let Some((_, m)) = u.backlog.front() {
                let size = m.encoded_len() as u64;
                if size > u.credit {
                    break;
                }
                let (sent_at, m) = u.backlog.pop_front().expect("front exists");
                u.credit -= size;
                u.stats.messages += 1;
                u.stats.bytes += size;
                let w = u.stats.max_wait.entry(m.msg_type).or_insert(0);
                *w = (*w).max(now - sent_at);
                out.push(m);
            }
        }
        let any = !out.is_empty();
        for m in out {
            self.transmit(m);
        }
        any
    }

    /// Charges `m` to its sender's uplink budget: returns it when it may go
    /// out now, or keeps it in the backlog (returns `None`).
    fn throttle(&mut self, m: Message) -> Option<Message> {
        if !self.uplinks.contains_key(&m.from) {
            return Some(m);
        }
        self.refill_uplinks();
        let now = self.clock;
        let u = self.uplinks.get_mut(&m.from).expect("checked");
        let size = m.encoded_len() as u64;
        if u.backlog.is_empty() && size <= u.credit {
            u.credit -= size;
            u.stats.messages += 1;
            u.stats.bytes += size;
            u.stats.max_wait.entry(m.msg_type).or_insert(0);
            return Some(m);
        }
        u.stats.delayed += 1;
        u.backlog.push_back((now, m));
        u.stats.max_backlog_len = u.stats.max_backlog_len.max(u.backlog.len());
        let bytes = u.backlog_bytes();
        u.stats.max_backlog_bytes = u.stats.max_backlog_bytes.max(bytes);
        None
    }

    /// Adds node `id` as a new member whose storage is empty but already
    /// reports the configuration `cs` (typically the current voters plus
    /// `id` itself as a learner or voter, as a host does when it starts a
    /// member that `member add` announced). Its config goes through the
    /// tweak closure.
    pub fn add_node_with_conf_state(&mut self, id: u64, cs: ConfState) {
        assert!(!self.nodes.contains_key(&id), "node {id} already exists");
        let storage = MemoryStorage::new();
        storage
            .initialize_with_conf_state(cs.clone())
            .expect("valid configuration");
        self.note(format!(
            "node {id} added (empty log) with voters {:?} learners {:?}",
            cs.voters, cs.learners
        ));
        self.insert_node(id, storage, Some(cs));
    }

    /// Runs one stabilization round: every running node with a Ready
    /// handles it (in id order), then every queued message is delivered.
    /// Returns whether anything happened ([`Cluster::stabilize`] repeats
    /// this until nothing does); lets a test look at the cluster between
    /// rounds.
    pub fn stabilize_round(&mut self) -> bool {
        let mut busy = false;
        for id in self.ids() {
            busy |= self.handle_ready(id);
        }
        busy |= self.deliver_all();
        busy
    }

    /// Proposes several entries in one message on `id`
    /// (`RawNode::propose_batch`), then stabilizes.
    pub fn propose_batch<I, D>(&mut self, id: u64, batch: I) -> Result<(), Error>
    where
        I: IntoIterator<Item = D>,
        D: Into<Bytes>,
    {
        let r = self.node_mut(id).rn.propose_batch(batch);
        self.observe(id);
        self.stabilize();
        r
    }

    /// Asks `id` for a linearizable read (`RawNode::read_index`), then
    /// stabilizes. The answer shows up in [`Cluster::read_states_of`].
    pub fn read_index(&mut self, id: u64, ctx: impl Into<Bytes>) -> Result<(), Error> {
        let r = self.node_mut(id).rn.read_index(ctx);
        self.stabilize();
        r
    }

    /// The `ReadState`s that `id`'s Readies handed out so far, in order.
    pub fn read_states_of(&self, id: u64) -> Vec<ReadState> {
        self.read_log
            .iter()
            .filter(|(_, n, _)| *n == id)
            .map(|(_, _, rs)| rs.clone())
            .collect()
    }

    /// The last index in `id`'s storage (what it persisted).
    pub fn last_index(&self, id: u64) -> u64 {
        self.node(id)
            .storage
            .last_index()
            .unwrap_or_else(|e| panic!("node {id}: last_index: {e}"))
    }

    /// The configuration `id` runs with (voters, outgoing voters, learners,
    /// learners_next, auto_leave), from `RawNode::status`.
    pub fn tracker_config(&self, id: u64) -> raftlet::tracker::Config {
        self.node(id).rn.status().config
    }

    /// `leader`'s progress of `peer` (`None` when `leader` does not lead or
    /// does not track `peer`).
    pub fn progress(&self, leader: u64, peer: u64) -> Option<Progress> {
        self.node(leader).rn.status().progress.get(&peer).cloned()
    }
}
