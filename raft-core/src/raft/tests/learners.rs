//! Ported etcd tests: learners and membership changes.
//!
//! Three kinds of tests live here:
//! - ports of etcd's raft_test.go / node_test.go tests, on the [`Network`]
//!   harness or on a single [`RawNode`];
//! - ports of etcd's scripted interaction tests (`testdata/confchange_*.txt`,
//!   `campaign_learner_must_vote.txt`), driven by [`Env`], a small
//!   RawNode-based re-creation of etcd's `rafttest.InteractionEnv`: each
//!   node persists its Ready into a `MemoryStorage`, applies committed
//!   entries (conf changes through `apply_conf_change`) and records a
//!   snapshot of what it applied, which is what it sends to peers that need
//!   one, exactly as etcd's environment does;
//! - raftlet's own learner rules (promotion readiness, `max_learners`,
//!   refused local conf changes, transfers to learners, step-down on removal,
//!   demotion through `learners_next`).

use std::collections::{BTreeMap, BTreeSet};

use super::{
    msg, msg_term, new_test_config, new_test_raft, new_test_raft_with_config, new_test_storage,
    next_ents, peer, prop, Network, TestRaft,
};
use crate::config::Config;
use crate::errors::Error;
use crate::pb::{
    ConfChange, ConfChangeI, ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2,
    ConfState, Entry, EntryType, HardState, Message, MessageType, Snapshot,
};
use crate::raft::{Raft, SoftState, StateRole, INVALID_ID};
use crate::raw_node::RawNode;
use crate::storage::MemoryStorage;
use crate::tracker::ProgressState;

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

const ADD: ConfChangeType = ConfChangeType::ConfChangeAddNode;
const ADD_LEARNER: ConfChangeType = ConfChangeType::ConfChangeAddLearnerNode;
const REMOVE: ConfChangeType = ConfChangeType::ConfChangeRemoveNode;

const AUTO: ConfChangeTransition = ConfChangeTransition::ConfChangeTransitionAuto;
const IMPLICIT: ConfChangeTransition = ConfChangeTransition::ConfChangeTransitionJointImplicit;
const EXPLICIT: ConfChangeTransition = ConfChangeTransition::ConfChangeTransitionJointExplicit;

/// A V1 conf change.
fn cc1(change_type: ConfChangeType, node_id: u64) -> ConfChange {
    ConfChange {
        change_type,
        node_id,
        ..ConfChange::default()
    }
}

/// A V2 conf change.
fn cc2(transition: ConfChangeTransition, changes: &[(ConfChangeType, u64)]) -> ConfChangeV2 {
    ConfChangeV2 {
        transition,
        changes: changes
            .iter()
            .map(|(t, id)| ConfChangeSingle::new(*t, *id))
            .collect(),
        context: None,
    }
}

/// The empty V2 change that leaves a joint configuration.
fn leave_joint() -> ConfChangeV2 {
    ConfChangeV2::default()
}

/// A log entry carrying `cc` (index and term left for the leader to fill in).
fn cc_entry(cc: impl Into<ConfChangeI>) -> Entry {
    let (entry_type, data) = cc.into().to_entry_parts();
    Entry {
        entry_type,
        data: Some(data),
        ..Entry::default()
    }
}

/// A proposal of `cc` from `from` to `to`.
fn prop_cc(from: u64, to: u64, cc: impl Into<ConfChangeI>) -> Message {
    let mut m = msg(MessageType::MsgProp, from, to);
    m.entries = vec![cc_entry(cc)];
    m
}

/// A configuration as a `ConfState` literal.
fn conf(voters: &[u64], outgoing: &[u64], learners: &[u64], next: &[u64], auto: bool) -> ConfState {
    ConfState {
        voters: voters.to_vec(),
        voters_outgoing: outgoing.to_vec(),
        learners: learners.to_vec(),
        learners_next: next.to_vec(),
        auto_leave: auto,
    }
}

/// A simple (non-joint) configuration.
fn simple(voters: &[u64], learners: &[u64]) -> ConfState {
    conf(voters, &[], learners, &[], false)
}

/// The entries of `r`'s log from `lo` on.
fn log_from(r: &TestRaft, lo: u64) -> Vec<Entry> {
    r.raft_log.entries(lo, u64::MAX).expect("entries")
}

/// Applies every conf change among `ents` to `r`.
fn apply_conf_changes(r: &mut TestRaft, ents: &[Entry]) {
    for e in ents {
        if e.is_conf_change() {
            let cc = ConfChangeI::from_entry(e).expect("decodes");
            r.apply_conf_change(&cc.as_v2()).expect("applies");
        }
    }
}

/// Takes `r`'s messages and delivers them (and what they cause) in `nt`.
fn flush(nt: &mut Network, id: u64) {
    let msgs = nt.peer_mut(id).read_messages();
    nt.send(msgs);
}

/// A leader of a one-voter cluster whose log is committed and applied.
fn single_voter_leader(f: &dyn Fn(&mut Config)) -> TestRaft {
    let mut c = new_test_config(1, 10, 1);
    f(&mut c);
    let mut r = new_test_raft_with_config(&c, new_test_storage(&[1], &[]));
    r.become_candidate();
    r.become_leader();
    next_ents(&mut r);
    assert_eq!(r.raft_log.applied, r.raft_log.last_index());
    r
}

/// Handles one Ready of a single RawNode: persists it, applies committed
/// entries (conf changes included) and advances. Returns the committed
/// entries with the configuration each conf change produced.
fn handle_ready(
    rn: &mut RawNode<MemoryStorage>,
    s: &MemoryStorage,
) -> Vec<(Entry, Option<ConfState>)> {
    let rd = rn.ready();
    {
        let mut w = s.wl();
        if let Some(snap) = &rd.snapshot {
            w.apply_snapshot(snap.clone()).expect("apply snapshot");
        }
        w.append(&rd.entries).expect("append");
        if let Some(hs) = rd.hard_state {
            w.set_hard_state(hs);
        }
    }
    let mut out = Vec::new();
    for e in &rd.committed_entries {
        let cs = match e.entry_type {
            EntryType::EntryConfChange | EntryType::EntryConfChangeV2 => {
                let cc = ConfChangeI::from_entry(e).expect("decodes");
                Some(rn.apply_conf_change(&cc).expect("applies"))
            }
            _ => None,
        };
        out.push((e.clone(), cs));
    }
    rn.advance(rd);
    out
}

/// A single-voter RawNode that has campaigned and become leader.
fn single_raw_node_leader(learners: &[u64]) -> (RawNode<MemoryStorage>, MemoryStorage) {
    let s = new_test_storage(&[1], learners);
    let mut rn = RawNode::new(&new_test_config(1, 10, 1), s.clone()).expect("raw node");
    rn.campaign().expect("campaign");
    for _ in 0..10 {
        handle_ready(&mut rn, &s);
        if rn.raft().state == StateRole::Leader && !rn.has_ready() {
            break;
        }
    }
    assert_eq!(rn.raft().state, StateRole::Leader);
    (rn, s)
}

// ---------------------------------------------------------------------------
// Env: a RawNode-based re-creation of etcd's interaction environment
// ---------------------------------------------------------------------------

/// One node of an [`Env`].
struct EnvNode {
    rn: RawNode<MemoryStorage>,
    store: MemoryStorage,
}

/// What one Ready of an [`Env`] node held.
#[derive(Debug, Default)]
struct ReadyInfo {
    soft_state: Option<SoftState>,
    hard_state: Option<HardState>,
    entries: Vec<Entry>,
    committed_entries: Vec<Entry>,
    snapshot: Option<Snapshot>,
    messages: Vec<Message>,
}

/// A scripted environment of RawNodes (etcd `rafttest.InteractionEnv`,
/// with synchronous storage writes). Messages wait in `in_flight` until
/// delivered; every message ever sent is also kept in `sent`, and every
/// error a delivery returned in `step_errors`.
struct Env {
    nodes: BTreeMap<u64, EnvNode>,
    in_flight: Vec<Message>,
    sent: Vec<Message>,
    step_errors: Vec<(Message, Error)>,
}

/// etcd's `raftConfigStub` (election 3, heartbeat 1, unlimited sizes, no
/// pre-vote or check-quorum, no step-down on removal).
fn env_config(id: u64) -> Config {
    Config {
        id,
        seed: super::fixed_seed(id),
        election_tick: 3,
        heartbeat_tick: 1,
        max_size_per_msg: u64::MAX,
        max_inflight_msgs: 256,
        pre_vote: false,
        check_quorum: false,
        // raftlet: step_down_on_removal defaults to true; etcd's scripts
        // default to false and opt in with step-down-on-removal=true.
        step_down_on_removal: false,
        ..Config::default()
    }
}

/// The bootstrap of `add-nodes`: voters, learners and the snapshot index.
type Boot<'a> = Option<(&'a [u64], &'a [u64], u64)>;

impl Env {
    fn new() -> Env {
        Env {
            nodes: BTreeMap::new(),
            in_flight: Vec::new(),
            sent: Vec::new(),
            step_errors: Vec::new(),
        }
    }

    /// etcd `add-nodes n [voters=(..) learners=(..) index=i]`: new nodes with
    /// consecutive ids; with a bootstrap, each starts from a snapshot at
    /// `index` (term 1) holding that configuration, otherwise empty.
    fn add_nodes(&mut self, n: usize, boot: Boot<'_>, tweak: &dyn Fn(&mut Config)) {
        for _ in 0..n {
            let id = self.nodes.len() as u64 + 1;
            let store = MemoryStorage::new();
            let mut c = env_config(id);
            if let Some((voters, learners, index)) = boot {
                let mut snap = Snapshot::default();
                snap.metadata.index = index;
                snap.metadata.term = 1;
                snap.metadata.conf_state = simple(voters, learners);
                store.wl().apply_snapshot(snap).expect("bootstrap snapshot");
                c.applied = index;
            }
            tweak(&mut c);
            let rn = RawNode::new(&c, store.clone()).expect("raw node");
            self.nodes.insert(id, EnvNode { rn, store });
        }
    }

    fn raft(&self, id: u64) -> &Raft<MemoryStorage> {
        self.nodes[&id].rn.raft()
    }

    fn conf_state(&self, id: u64) -> ConfState {
        self.raft(id).trk.conf_state()
    }

    /// Whether `id` is a voter (of either half) in its own configuration
    /// (etcd's `raft-state` "Voter"/"Non-Voter").
    fn is_voter(&self, id: u64) -> bool {
        self.raft(id).trk.config.voters.contains(id)
    }

    fn rn(&mut self, id: u64) -> &mut RawNode<MemoryStorage> {
        &mut self.nodes.get_mut(&id).expect("node").rn
    }

    fn campaign(&mut self, id: u64) {
        self.rn(id).campaign().expect("campaign");
    }

    fn propose(&mut self, id: u64, data: &'static [u8]) -> crate::Result<()> {
        self.rn(id).propose(data)
    }

    fn propose_cc(&mut self, id: u64, cc: impl Into<ConfChangeI>) -> crate::Result<()> {
        self.rn(id).propose_conf_change(cc)
    }

    /// etcd `tick-heartbeat`: ticks `id` for one heartbeat interval.
    fn tick_heartbeat(&mut self, id: u64) {
        let n = self.raft(id).heartbeat_timeout;
        for _ in 0..n {
            self.rn(id).tick();
        }
    }

    /// etcd `process-ready`: persists, applies (recording a snapshot of the
    /// applied state after each entry), queues the messages and advances.
    fn process_ready(&mut self, id: u64) -> ReadyInfo {
        let node = self.nodes.get_mut(&id).expect("node");
        let rd = node.rn.ready();
        {
            let mut w = node.store.wl();
            if let Some(snap) = &rd.snapshot {
                w.apply_snapshot(snap.clone()).expect("apply snapshot");
            }
            w.append(&rd.entries).expect("append");
            if let Some(hs) = rd.hard_state {
                w.set_hard_state(hs);
            }
        }
        for e in &rd.committed_entries {
            let cs = match e.entry_type {
                EntryType::EntryConfChange | EntryType::EntryConfChangeV2 => {
                    let cc = ConfChangeI::from_entry(e).expect("decodes");
                    Some(
                        node.rn
                            .apply_conf_change(&cc)
                            .unwrap_or_else(|err| panic!("{id} cannot apply {e:?}: {err}")),
                    )
                }
                _ => None,
            };
            // The state machine's history: what this node sends as a
            // snapshot is what it applied last (etcd's snapOverrideStorage).
            node.store
                .wl()
                .create_snapshot(e.index, cs, None)
                .expect("record applied state");
        }
        let mut messages = rd.messages.clone();
        messages.extend(rd.persisted_messages.iter().cloned());
        let info = ReadyInfo {
            soft_state: rd.soft_state,
            hard_state: rd.hard_state,
            entries: rd.entries.clone(),
            committed_entries: rd.committed_entries.clone(),
            snapshot: rd.snapshot.clone(),
            messages: messages.clone(),
        };
        node.rn.advance(rd);
        self.sent.extend(messages.iter().cloned());
        self.in_flight.extend(messages);
        info
    }

    /// etcd `deliver-msgs`: steps every queued message to `id`, in order.
    fn deliver(&mut self, id: u64) {
        let (mine, rest): (Vec<Message>, Vec<Message>) = std::mem::take(&mut self.in_flight)
            .into_iter()
            .partition(|m| m.to == id);
        self.in_flight = rest;
        for m in mine {
            if let Err(e) = self.rn(id).step(m.clone()) {
                self.step_errors.push((m, e));
            }
        }
    }

    /// Restarts `id` from its storage (hard state, and the configuration of
    /// the last applied state), as a host does after a crash.
    fn restart(&mut self, id: u64) {
        let node = self.nodes.remove(&id).expect("node");
        let mut c = env_config(id);
        c.applied = node.store.rl().snapshot_ref().metadata.index;
        let rn = RawNode::new(&c, node.store.clone()).expect("restart");
        self.nodes.insert(
            id,
            EnvNode {
                rn,
                store: node.store,
            },
        );
    }

    /// etcd `deliver-msgs drop=(id)`: drops every queued message to `id`.
    fn drop_msgs_to(&mut self, id: u64) {
        self.in_flight.retain(|m| m.to != id);
    }

    /// etcd `stabilize [ids]`: handles Readies and delivers messages among
    /// `ids` (all nodes when empty) until nothing is left to do.
    fn stabilize(&mut self, ids: &[u64]) {
        let ids: Vec<u64> = if ids.is_empty() {
            self.nodes.keys().copied().collect()
        } else {
            ids.to_vec()
        };
        for _ in 0..1000 {
            let mut done = true;
            for &id in &ids {
                if self.nodes[&id].rn.has_ready() {
                    self.process_ready(id);
                    done = false;
                }
            }
            for &id in &ids {
                if self.in_flight.iter().any(|m| m.to == id) {
                    self.deliver(id);
                    done = false;
                }
            }
            if done {
                return;
            }
        }
        panic!("stabilize did not converge");
    }

    /// The messages sent from index `since` of `sent` on that match `f`.
    fn sent_since(&self, since: usize, f: impl Fn(&Message) -> bool) -> Vec<Message> {
        self.sent[since..]
            .iter()
            .filter(|m| f(m))
            .cloned()
            .collect()
    }

    /// The entry at `index` in `id`'s log.
    fn entry(&self, id: u64, index: u64) -> Entry {
        let ents = self
            .raft(id)
            .raft_log
            .slice(index, index + 1, u64::MAX)
            .expect("entry");
        ents[0].clone()
    }
}

/// Asserts that `e` carries a V2 conf change equal to `want`.
fn assert_cc_v2(e: &Entry, want: &ConfChangeV2) {
    assert_eq!(e.entry_type, EntryType::EntryConfChangeV2, "{e:?}");
    let got = ConfChangeI::from_entry(e).expect("decodes");
    assert_eq!(got, ConfChangeI::V2(want.clone()));
}

/// The one MsgSnap sent to `to`, with its snapshot.
fn only_snapshot_to(env: &Env, to: u64) -> Snapshot {
    let snaps = env.sent_since(0, |m| m.msg_type == MessageType::MsgSnap && m.to == to);
    assert_eq!(snaps.len(), 1, "snapshots sent to {to}: {snaps:?}");
    *snaps[0].snapshot.clone().expect("snapshot")
}

// ---------------------------------------------------------------------------
// etcd raft_test.go
// ---------------------------------------------------------------------------

/// etcd: TestLearnerElectionTimeout
#[test]
fn test_learner_election_timeout() {
    let mut n1 = new_test_raft(1, 10, 1, new_test_storage(&[1], &[2]));
    let mut n2 = new_test_raft(2, 10, 1, new_test_storage(&[1], &[2]));
    n1.become_follower(1, INVALID_ID);
    n2.become_follower(1, INVALID_ID);

    // A learner does not campaign, however long it waits.
    n2.randomized_election_timeout = n2.election_timeout;
    for _ in 0..n2.election_timeout {
        n2.tick();
    }
    assert_eq!(n2.state, StateRole::Follower);
    assert_eq!(n2.term, 1);
    assert!(n2.read_messages().is_empty());
}

/// etcd: TestLearnerPromotion
#[test]
fn test_learner_promotion() {
    let mut n1 = new_test_raft(1, 10, 1, new_test_storage(&[1], &[2]));
    let mut n2 = new_test_raft(2, 10, 1, new_test_storage(&[1], &[2]));
    n1.become_follower(1, INVALID_ID);
    n2.become_follower(1, INVALID_ID);
    let mut nt = Network::new(vec![peer(n1), peer(n2)]);
    assert_ne!(nt.peer(1).state, StateRole::Leader);

    // n1 is the only voter: it wins its election alone.
    let n1 = nt.peer_mut(1);
    n1.randomized_election_timeout = n1.election_timeout;
    for _ in 0..n1.election_timeout {
        n1.tick();
    }
    n1.advance_messages_after_append();
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(2).state, StateRole::Follower);

    nt.send(vec![msg(MessageType::MsgBeat, 1, 1)]);

    let promote = cc1(ADD, 2).as_v2();
    nt.peer_mut(1)
        .apply_conf_change(&promote)
        .expect("promote on n1");
    nt.peer_mut(2)
        .apply_conf_change(&promote)
        .expect("promote on n2");
    assert!(!nt.peer(2).is_learner);

    // Now a voter, n2 campaigns when its election timeout elapses, and wins.
    let n2 = nt.peer_mut(2);
    n2.randomized_election_timeout = n2.election_timeout;
    for _ in 0..n2.election_timeout {
        n2.tick();
    }
    n2.advance_messages_after_append();
    nt.send(vec![msg(MessageType::MsgBeat, 2, 2)]);

    assert_eq!(nt.peer(1).state, StateRole::Follower);
    assert_eq!(nt.peer(2).state, StateRole::Leader);
}

/// etcd: TestLearnerCanVote
#[test]
fn test_learner_can_vote() {
    let mut n2 = new_test_raft(2, 10, 1, new_test_storage(&[1], &[2]));
    n2.become_follower(1, INVALID_ID);
    assert!(n2.is_learner);

    let mut m = msg_term(MessageType::MsgVote, 1, 2, 2);
    m.log_term = 11;
    m.index = 11;
    n2.step(m).expect("step");

    let msgs = n2.read_messages();
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!(msgs[0].msg_type, MessageType::MsgVoteResp);
    assert!(
        !msgs[0].reject,
        "a learner must grant a vote it is asked for"
    );
}

/// etcd: TestLearnerLogReplication
#[test]
fn test_learner_log_replication() {
    let n1 = new_test_raft(1, 10, 1, new_test_storage(&[1], &[2]));
    let n2 = new_test_raft(2, 10, 1, new_test_storage(&[1], &[2]));
    let mut nt = Network::new(vec![peer(n1), peer(n2)]);
    nt.peer_mut(1).become_follower(1, INVALID_ID);
    nt.peer_mut(2).become_follower(1, INVALID_ID);

    let n1 = nt.peer_mut(1);
    n1.randomized_election_timeout = n1.election_timeout;
    for _ in 0..n1.election_timeout {
        n1.tick();
    }
    n1.advance_messages_after_append();
    nt.send(vec![msg(MessageType::MsgBeat, 1, 1)]);

    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert!(nt.peer(2).is_learner);

    nt.send(vec![prop(1, 1, b"somedata")]);

    let next_committed = 2;
    assert_eq!(nt.peer(1).raft_log.committed, next_committed);
    assert_eq!(nt.peer(2).raft_log.committed, next_committed);
    assert_eq!(nt.peer(1).trk.get(2).unwrap().matched, next_committed);
}

/// etcd: TestLearnerCampaign
#[test]
fn test_learner_campaign() {
    let mut n1 = new_test_raft(1, 10, 1, new_test_storage(&[1], &[]));
    n1.apply_conf_change(&cc1(ADD_LEARNER, 2).as_v2())
        .expect("add learner");
    let mut n2 = new_test_raft(2, 10, 1, new_test_storage(&[1], &[]));
    n2.apply_conf_change(&cc1(ADD_LEARNER, 2).as_v2())
        .expect("add learner");
    let mut nt = Network::new(vec![peer(n1), peer(n2)]);

    nt.send(vec![msg(MessageType::MsgHup, 2, 2)]);
    assert!(nt.peer(2).is_learner);
    assert_eq!(nt.peer(2).state, StateRole::Follower);

    nt.send(vec![msg(MessageType::MsgHup, 1, 1)]);
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(1).lead, 1);

    // A transfer check on the leader would refuse a learner target, but the
    // target may have been demoted after the check: a learner that gets a
    // MsgTimeoutNow must ignore it.
    nt.send(vec![msg(MessageType::MsgTimeoutNow, 1, 2)]);
    assert_eq!(nt.peer(2).state, StateRole::Follower);
    assert_eq!(nt.peer(1).state, StateRole::Leader);
}

/// etcd: TestAddLearner
///
/// raftlet: a node that does not lead keeps no progress, so the learner
/// marks are read from the configuration (etcd reads them from the
/// progress, which says the same).
#[test]
fn test_add_learner() {
    let mut r = new_test_raft(1, 10, 1, new_test_storage(&[1], &[]));
    let learner = |r: &Raft<MemoryStorage>, id: u64| r.trk.config.learners.contains(&id);
    // Add a learner.
    r.apply_conf_change(&cc1(ADD_LEARNER, 2).as_v2()).unwrap();
    assert!(!r.is_learner);
    assert_eq!(r.trk.learner_nodes(), vec![2]);
    assert!(learner(&r, 2));

    // Promote it.
    r.apply_conf_change(&cc1(ADD, 2).as_v2()).unwrap();
    assert!(!learner(&r, 2));

    // Demote this node.
    r.apply_conf_change(&cc1(ADD_LEARNER, 1).as_v2()).unwrap();
    assert!(learner(&r, 1));
    assert!(r.is_learner);

    // Promote it again.
    r.apply_conf_change(&cc1(ADD, 1).as_v2()).unwrap();
    assert!(!learner(&r, 1));
    assert!(!r.is_learner);
    assert!(r.trk.progress.is_empty(), "a follower keeps no progress");
}

/// raftlet: only a leader tracks its peers' progress. A follower or a
/// candidate keeps none, whatever its configuration changes (an idle
/// follower's group pays for no progress); a new leader starts a fresh one
/// for every member, learners marked, and drops it when it steps down.
#[test]
fn test_progress_is_kept_only_while_leading() {
    let mut r = new_test_raft(1, 10, 1, new_test_storage(&[1, 2, 3], &[]));
    assert!(r.trk.progress.is_empty());
    r.apply_conf_change(&cc1(ADD_LEARNER, 4).as_v2()).unwrap();
    assert!(r.trk.progress.is_empty());
    assert!(r.trk.is_member(4) && !r.trk.is_member(5));
    r.become_candidate();
    assert!(r.trk.progress.is_empty());

    let before = r.raft_log.last_index();
    r.become_leader();
    assert_eq!(r.raft_log.last_index(), before + 1);
    let ids: Vec<u64> = r.trk.progress.keys().copied().collect();
    assert_eq!(ids, vec![1, 2, 3, 4]);
    for (&id, pr) in r.trk.progress.iter() {
        assert_eq!(pr.is_learner, id == 4, "{id}");
        if id == 1 {
            // Its own new entry counts once it is durable.
            assert_eq!((pr.matched, pr.state), (before, ProgressState::Replicate));
        } else {
            assert_eq!((pr.matched, pr.next), (0, before + 1), "{id}");
            assert_eq!(pr.state, ProgressState::Probe, "{id}");
        }
    }

    // The leader's own changes keep its progress in step.
    r.apply_conf_change(&cc1(REMOVE, 4).as_v2()).unwrap();
    let ids: Vec<u64> = r.trk.progress.keys().copied().collect();
    assert_eq!(ids, vec![1, 2, 3]);

    let term = r.term;
    r.become_follower(term + 1, 2);
    assert!(r.trk.progress.is_empty());
    assert!(r.promotable());
}

/// etcd: TestRemoveLearner
#[test]
fn test_remove_learner() {
    let mut r = new_test_raft(1, 10, 1, new_test_storage(&[1], &[2]));
    r.apply_conf_change(&cc1(REMOVE, 2).as_v2()).unwrap();
    assert_eq!(r.trk.voter_nodes(), vec![1]);
    assert!(r.trk.learner_nodes().is_empty());

    // raftlet: removing the last voter is an error that leaves the
    // configuration alone (etcd panics).
    let before = r.trk.config.clone();
    let err = r.apply_conf_change(&cc1(REMOVE, 1).as_v2()).unwrap_err();
    assert!(matches!(err, Error::ConfChangeRefused(_)), "{err:?}");
    assert_eq!(r.trk.config, before);
    assert_eq!(r.trk.voter_nodes(), vec![1]);
}

/// etcd: TestStepConfig
#[test]
fn test_step_config() {
    // Two voters, one of which never answers: nothing commits.
    let mut r = new_test_raft(1, 10, 1, new_test_storage(&[1, 2], &[]));
    r.become_candidate();
    r.become_leader();
    let index = r.raft_log.last_index();
    let mut m = msg(MessageType::MsgProp, 1, 1);
    // raftlet: etcd proposes an entry without data (AddNode of node 0);
    // raftlet refuses node 0 at propose time, so this adds node 3.
    m.entries = vec![cc_entry(cc1(ADD, 3))];
    r.step(m).expect("a conf change is accepted");
    assert_eq!(r.raft_log.last_index(), index + 1);
    assert_eq!(r.pending_conf_index, index + 1);
}

/// etcd: TestStepIgnoreConfig
#[test]
fn test_step_ignore_config() {
    let mut r = new_test_raft(1, 10, 1, new_test_storage(&[1, 2], &[]));
    r.become_candidate();
    r.become_leader();
    let cc = || {
        let mut m = msg(MessageType::MsgProp, 1, 1);
        // raftlet: a valid change (etcd's has no data: AddNode of node 0,
        // which raftlet refuses at propose time).
        m.entries = vec![cc_entry(cc1(ADD, 3))];
        m
    };
    r.step(cc()).expect("first conf change");
    let index = r.raft_log.last_index();
    let pending_conf_index = r.pending_conf_index;

    // raftlet: a second local conf change while one is pending is refused
    // with ConfChangeRefused and appends nothing (etcd appends an empty
    // normal entry instead).
    let err = r.step(cc()).unwrap_err();
    assert!(matches!(err, Error::ConfChangeRefused(_)), "{err:?}");
    assert_eq!(r.raft_log.last_index(), index);
    assert_eq!(r.pending_conf_index, pending_conf_index);

    // A forwarded one (its proposer is node 2) keeps etcd's behaviour: it
    // becomes an empty normal entry.
    let mut fwd = cc();
    fwd.from = 2;
    r.step(fwd).expect("a forwarded proposal is not refused");
    let want = vec![Entry {
        entry_type: EntryType::EntryNormal,
        term: 1,
        index: 3,
        data: None,
    }];
    assert_eq!(log_from(&r, index + 1), want);
    assert_eq!(r.pending_conf_index, pending_conf_index);
}

/// etcd: TestNewLeaderPendingConfig
#[test]
fn test_new_leader_pending_config() {
    let tests = [(false, 0), (true, 1)];
    for (i, (add_entry, wpending_index)) in tests.into_iter().enumerate() {
        let mut r = new_test_raft(1, 10, 1, new_test_storage(&[1, 2], &[]));
        if add_entry {
            assert!(r.append_entry(vec![Entry::default()]));
        }
        r.become_candidate();
        r.become_leader();
        assert_eq!(r.pending_conf_index, wpending_index, "#{i}");
    }
}

/// etcd: TestAddNode
#[test]
fn test_add_node() {
    let mut r = new_test_raft(1, 10, 1, new_test_storage(&[1], &[]));
    r.apply_conf_change(&cc1(ADD, 2).as_v2()).unwrap();
    assert_eq!(r.trk.voter_nodes(), vec![1, 2]);
}

/// etcd: TestAddNodeCheckQuorum
#[test]
fn test_add_node_check_quorum() {
    let mut r = new_test_raft(1, 10, 1, new_test_storage(&[1], &[]));
    r.check_quorum = true;
    r.become_candidate();
    r.become_leader();
    for _ in 0..r.election_timeout - 1 {
        r.tick();
    }
    r.apply_conf_change(&cc1(ADD, 2).as_v2()).unwrap();

    // This tick reaches the election timeout and runs the quorum check: the
    // new node counts as active, so the leader stays.
    r.tick();
    assert_eq!(r.state, StateRole::Leader);

    // A whole election timeout without hearing from node 2: step down.
    for _ in 0..r.election_timeout {
        r.tick();
    }
    assert_eq!(r.state, StateRole::Follower);
}

/// etcd: TestRemoveNode
#[test]
fn test_remove_node() {
    let mut r = new_test_raft(1, 10, 1, new_test_storage(&[1, 2], &[]));
    r.apply_conf_change(&cc1(REMOVE, 2).as_v2()).unwrap();
    assert_eq!(r.trk.voter_nodes(), vec![1]);

    // raftlet: removing the remaining voter is an error, not a panic.
    let err = r.apply_conf_change(&cc1(REMOVE, 1).as_v2()).unwrap_err();
    assert!(matches!(err, Error::ConfChangeRefused(_)), "{err:?}");
    assert_eq!(r.trk.voter_nodes(), vec![1]);
}

/// etcd: TestPromotable
#[test]
fn test_promotable() {
    let tests: [(&[u64], bool); 4] = [
        (&[1], true),
        (&[1, 2, 3], true),
        (&[], false),
        (&[2, 3], false),
    ];
    for (i, (peers, wp)) in tests.into_iter().enumerate() {
        let r = new_test_raft(1, 5, 1, new_test_storage(peers, &[]));
        assert_eq!(r.promotable(), wp, "#{i}");
    }
}

/// etcd: TestRaftNodes
#[test]
fn test_raft_nodes() {
    let tests: [(&[u64], &[u64]); 2] = [(&[1, 2, 3], &[1, 2, 3]), (&[3, 2, 1], &[1, 2, 3])];
    for (i, (ids, wids)) in tests.into_iter().enumerate() {
        let r = new_test_raft(1, 10, 1, new_test_storage(ids, &[]));
        assert_eq!(r.trk.voter_nodes(), wids.to_vec(), "#{i}");
    }
}

/// etcd: TestCommitAfterRemoveNode
#[test]
fn test_commit_after_remove_node() {
    let mut r = new_test_raft(1, 5, 1, new_test_storage(&[1, 2], &[]));
    r.become_candidate();
    r.become_leader();

    // Start removing node 2.
    let cc = cc1(REMOVE, 2);
    let mut m = msg(MessageType::MsgProp, INVALID_ID, INVALID_ID);
    m.entries = vec![cc_entry(cc.clone())];
    r.step(m).expect("propose removal");

    // Nothing commits without node 2.
    assert!(next_ents(&mut r).is_empty());
    let cc_index = r.raft_log.last_index();

    // Another proposal while the removal is pending.
    let mut m = msg(MessageType::MsgProp, INVALID_ID, INVALID_ID);
    m.entries = vec![Entry {
        data: Some(bytes::Bytes::from_static(b"hello")),
        ..Entry::default()
    }];
    r.step(m).expect("propose hello");

    // Node 2 acknowledges the removal, which commits it.
    let mut ack = msg(MessageType::MsgAppResp, 2, 1);
    ack.index = cc_index;
    r.step(ack).expect("ack");
    let ents = next_ents(&mut r);
    assert_eq!(ents.len(), 2, "{ents:?}");
    assert_eq!(ents[0].entry_type, EntryType::EntryNormal);
    assert!(ents[0].data.is_none());
    assert_eq!(ents[1].entry_type, EntryType::EntryConfChange);

    // Applying it shrinks the quorum to node 1 alone: "hello" commits.
    r.apply_conf_change(&cc.as_v2()).expect("apply removal");
    let ents = next_ents(&mut r);
    assert_eq!(ents.len(), 1, "{ents:?}");
    assert_eq!(ents[0].entry_type, EntryType::EntryNormal);
    assert_eq!(ents[0].data(), b"hello");
}

/// Shared body of etcd's TestConfChangeCheckBeforeCampaign and its V2 twin:
/// a node with a committed but unapplied conf change must not campaign,
/// neither on timeout nor when asked to by a leader transfer.
fn check_conf_change_before_campaign(v2: bool) {
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);
    assert_eq!(nt.peer(1).state, StateRole::Leader);

    // Start removing node 2.
    let cc = cc1(REMOVE, 2);
    let ci = if v2 {
        ConfChangeI::V2(cc.as_v2())
    } else {
        ConfChangeI::V1(cc)
    };
    nt.send(vec![prop_cc(1, 1, ci)]);
    assert!(nt.peer(2).raft_log.committed > nt.peer(2).raft_log.applied);

    // n2's election timeout elapses: it does not campaign, the change is
    // committed but not applied.
    let n2 = nt.peer_mut(2);
    for _ in 0..n2.randomized_election_timeout {
        n2.tick();
    }
    assert_eq!(nt.peer(2).state, StateRole::Follower);

    // Nor does it when the leader hands it leadership.
    nt.send(vec![msg(MessageType::MsgTransferLeader, 2, 1)]);
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(2).state, StateRole::Follower);

    // Let the transfer time out.
    let n1 = nt.peer_mut(1);
    for _ in 0..n1.election_timeout {
        n1.tick();
    }
    assert_eq!(nt.peer(1).lead_transferee, INVALID_ID);

    // Once n2 has applied its log, the transfer goes through.
    next_ents(nt.peer_mut(2));
    nt.send(vec![msg(MessageType::MsgTransferLeader, 2, 1)]);
    assert_eq!(nt.peer(1).state, StateRole::Follower);
    assert_eq!(nt.peer(2).state, StateRole::Leader);

    // And n1, once it has applied too, campaigns on timeout.
    next_ents(nt.peer_mut(1));
    let n1 = nt.peer_mut(1);
    for _ in 0..n1.randomized_election_timeout {
        n1.tick();
    }
    assert_eq!(nt.peer(1).state, StateRole::Candidate);
}

/// etcd: TestConfChangeCheckBeforeCampaign
#[test]
fn test_conf_change_check_before_campaign() {
    check_conf_change_before_campaign(false);
}

/// etcd: TestConfChangeV2CheckBeforeCampaign
#[test]
fn test_conf_change_v2_check_before_campaign() {
    check_conf_change_before_campaign(true);
}

// ---------------------------------------------------------------------------
// etcd node_test.go, through a RawNode
// ---------------------------------------------------------------------------

/// etcd: TestNodeProposeAddLearnerNode
#[test]
fn test_node_propose_add_learner_node() {
    let (mut rn, s) = single_raw_node_leader(&[]);
    let cc = cc1(ADD_LEARNER, 2);
    rn.propose_conf_change(cc.clone()).expect("propose");
    let mut applied = None;
    for _ in 0..10 {
        for (e, cs) in handle_ready(&mut rn, &s) {
            if let Some(cs) = cs {
                assert_eq!(e.entry_type, EntryType::EntryConfChange);
                applied = Some(cs);
            }
        }
        if applied.is_some() {
            break;
        }
    }
    let cs = applied.expect("the conf change applied");
    // The new member is a learner; the voters are unchanged.
    assert_eq!(cs.learners, vec![2], "{cs:?}");
    assert_eq!(cs.voters, vec![1], "{cs:?}");
    assert!(rn.raft().trk.get(2).unwrap().is_learner);
}

/// etcd: TestNodeProposeConfig
#[test]
fn test_node_propose_config() {
    let (mut rn, s) = single_raw_node_leader(&[]);
    let cc = cc1(ADD, 1);
    let (_, ccdata) = ConfChangeI::V1(cc.clone()).to_entry_parts();
    let last = rn.raft().raft_log.last_index();
    rn.propose_conf_change(cc).expect("propose");

    // The proposal reaches the log as one entry carrying exactly the change.
    let rd = rn.ready();
    assert_eq!(rd.entries.len(), 1, "{:?}", rd.entries);
    assert_eq!(rd.entries[0].index, last + 1);
    assert_eq!(rd.entries[0].entry_type, EntryType::EntryConfChange);
    assert_eq!(rd.entries[0].data(), &ccdata[..]);
    s.wl().append(&rd.entries).unwrap();
    rn.advance(rd);
}

/// etcd: TestNodeProposeAddDuplicateNode
#[test]
fn test_node_propose_add_duplicate_node() {
    let s = new_test_storage(&[1], &[]);
    let mut rn = RawNode::new(&new_test_config(1, 10, 1), s.clone()).expect("raw node");
    rn.campaign().expect("campaign");
    let mut all_committed = Vec::new();
    let mut run_until_applied = |rn: &mut RawNode<MemoryStorage>| {
        for _ in 0..10 {
            let mut applied = false;
            for (e, cs) in handle_ready(rn, &s) {
                applied |= cs.is_some();
                all_committed.push(e);
            }
            if applied {
                return;
            }
        }
        panic!("no conf change applied");
    };

    // Become leader.
    for _ in 0..10 {
        if rn.raft().state == StateRole::Leader {
            break;
        }
        let rd = rn.ready();
        s.wl().append(&rd.entries).unwrap();
        rn.advance(rd);
    }
    assert_eq!(rn.raft().state, StateRole::Leader);

    let cc1_ = cc1(ADD, 1);
    let (_, ccdata1) = ConfChangeI::V1(cc1_.clone()).to_entry_parts();
    rn.propose_conf_change(cc1_.clone()).expect("add 1");
    run_until_applied(&mut rn);

    // Adding the same node again is harmless.
    rn.propose_conf_change(cc1_).expect("add 1 again");
    run_until_applied(&mut rn);

    // And a new node joins fine.
    let cc2_ = cc1(ADD, 2);
    let (_, ccdata2) = ConfChangeI::V1(cc2_.clone()).to_entry_parts();
    rn.propose_conf_change(cc2_).expect("add 2");
    run_until_applied(&mut rn);

    assert_eq!(all_committed.len(), 4, "{all_committed:?}");
    assert_eq!(all_committed[1].data(), &ccdata1[..]);
    assert_eq!(all_committed[3].data(), &ccdata2[..]);
    assert_eq!(rn.raft().trk.voter_nodes(), vec![1, 2]);
}

// ---------------------------------------------------------------------------
// etcd testdata/*.txt scripts
// ---------------------------------------------------------------------------

/// etcd: testdata/campaign_learner_must_vote.txt
///
/// A learner that does not know yet it was promoted must still vote when a
/// candidate (which knows) asks it, or the group could lose availability.
#[test]
fn campaign_learner_must_vote() {
    let mut env = Env::new();
    env.add_nodes(3, Some((&[1, 2], &[3], 2)), &|_| {});
    env.campaign(1);
    env.stabilize(&[]);
    assert_eq!(env.raft(1).state, StateRole::Leader);

    // n1 promotes n3; n1 and n2 commit and apply it, n3 gets nothing.
    env.propose_cc(1, cc2(AUTO, &[(ADD, 3)]))
        .expect("promote n3");
    env.stabilize(&[1, 2]);
    for id in [1, 2] {
        assert_eq!(env.conf_state(id), simple(&[1, 2, 3], &[]), "n{id}");
    }
    assert_eq!(env.conf_state(3), simple(&[1, 2], &[3]));
    assert!(env.raft(3).is_learner);
    env.drop_msgs_to(3);

    // n1 is gone; n2 campaigns and asks n1 and n3 for votes.
    env.campaign(2);
    let since = env.sent.len();
    let rd = env.process_ready(2);
    assert_eq!(rd.hard_state.map(|hs| (hs.term, hs.vote)), Some((2, 2)));
    let votes = env.sent_since(since, |m| m.msg_type == MessageType::MsgVote);
    let targets: Vec<u64> = votes.iter().map(|m| m.to).collect();
    assert_eq!(targets, vec![1, 3]);
    assert!(votes
        .iter()
        .all(|m| m.term == 2 && m.log_term == 1 && m.index == 4));

    // n3, still a learner in its own eyes, grants the vote.
    let since = env.sent.len();
    env.stabilize(&[3]);
    let resps = env.sent_since(since, |m| m.msg_type == MessageType::MsgVoteResp);
    assert_eq!(resps.len(), 1, "{resps:?}");
    assert_eq!((resps[0].from, resps[0].to, resps[0].term), (3, 2, 2));
    assert!(!resps[0].reject);
    assert_eq!(env.raft(3).vote, 2);

    // That is a quorum of (1 2 3): n2 leads and catches n3 up, which learns
    // it is a voter.
    env.stabilize(&[2, 3]);
    assert_eq!(env.raft(2).state, StateRole::Leader);
    assert_eq!(env.raft(2).term, 2);
    assert_eq!(env.raft(2).raft_log.committed, 5);
    assert_eq!(env.raft(3).raft_log.committed, 5);
    assert_eq!(env.raft(3).lead, 2);
    assert_eq!(env.conf_state(3), simple(&[1, 2, 3], &[]));
    assert!(!env.raft(3).is_learner);
}

/// The common start of the `*_add_single*` scripts: n1 alone leads, then
/// proposes `cc` (adding n2) and an empty n2 joins the environment.
fn add_single_start(cc: impl Into<ConfChangeI>) -> Env {
    let mut env = Env::new();
    env.add_nodes(1, Some((&[1], &[], 2)), &|_| {});
    env.campaign(1);
    let rd = env.process_ready(1);
    assert_eq!(
        rd.hard_state.map(|hs| (hs.term, hs.vote, hs.commit)),
        Some((1, 1, 2))
    );
    assert_eq!(env.raft(1).state, StateRole::Leader);
    env.propose_cc(1, cc).expect("propose");
    env.add_nodes(1, None, &|_| {});
    env
}

/// Checks how n1 caught up the empty n2 in the `*_add_single*` scripts: a
/// probe at index 3 rejected with hint 0, then a snapshot at index 4.
fn assert_caught_up_by_snapshot(env: &Env, want: &ConfState) {
    let rejects = env.sent_since(0, |m| {
        m.msg_type == MessageType::MsgAppResp && m.from == 2 && m.reject
    });
    assert_eq!(rejects.len(), 1, "{rejects:?}");
    assert_eq!((rejects[0].index, rejects[0].reject_hint), (3, 0));
    let snap = only_snapshot_to(env, 2);
    assert_eq!((snap.metadata.index, snap.metadata.term), (4, 1));
    assert_eq!(&snap.metadata.conf_state, want);
    let pr = env.raft(1).trk.get(2).expect("progress of n2");
    assert_eq!(pr.matched, 4);
    assert_eq!(pr.state, ProgressState::Replicate);
    assert_eq!(env.raft(2).raft_log.committed, 4);
    assert_eq!((env.raft(2).term, env.raft(2).lead), (1, 1));
}

/// etcd: testdata/confchange_v1_add_single.txt
#[test]
fn confchange_v1_add_single() {
    let mut env = add_single_start(cc1(ADD, 2));
    env.stabilize(&[]);

    // n1 committed the change alone and switched to (1 2). It is a V1
    // entry, which nodes that predate V2 understand.
    let e = env.entry(1, 4);
    assert_eq!((e.term, e.entry_type), (1, EntryType::EntryConfChange));
    assert_eq!(
        ConfChangeI::from_entry(&e).unwrap(),
        ConfChangeI::V1(cc1(ADD, 2))
    );
    let want = simple(&[1, 2], &[]);
    assert_eq!(env.conf_state(1), want);
    assert_caught_up_by_snapshot(&env, &want);
    assert_eq!(env.conf_state(2), want);
}

/// etcd: testdata/confchange_v2_add_single_auto.txt
#[test]
fn confchange_v2_add_single_auto() {
    let cc = cc2(AUTO, &[(ADD, 2)]);
    let mut env = add_single_start(cc.clone());
    env.stabilize(&[]);

    // A single change under the automatic transition skips joint consensus.
    assert_cc_v2(&env.entry(1, 4), &cc);
    let want = simple(&[1, 2], &[]);
    assert_eq!(env.conf_state(1), want);
    assert_caught_up_by_snapshot(&env, &want);
    assert_eq!(env.conf_state(2), want);
    assert_eq!(env.raft(1).raft_log.last_index(), 4);
}

/// etcd: testdata/confchange_v2_add_single_explicit.txt
#[test]
fn confchange_v2_add_single_explicit() {
    let cc = cc2(EXPLICIT, &[(ADD, 2)]);
    let mut env = add_single_start(cc.clone());
    env.stabilize(&[1, 2]);

    // Both nodes are in the joint configuration, which stays: the snapshot
    // that carried it to n2 does not ask to leave it automatically.
    assert_cc_v2(&env.entry(1, 4), &cc);
    let joint = conf(&[1, 2], &[1], &[], &[], false);
    assert_eq!(env.conf_state(1), joint);
    assert_caught_up_by_snapshot(&env, &joint);
    assert_eq!(env.conf_state(2), joint);
    assert_eq!(env.raft(1).raft_log.last_index(), 4);

    // No other change while joint.
    // raftlet: refused with ConfChangeRefused, nothing appended (etcd
    // appends an empty entry at index 5).
    let err = env
        .propose_cc(1, cc2(AUTO, &[(ADD, 3), (ADD, 4), (ADD, 5)]))
        .unwrap_err();
    assert!(matches!(err, Error::ConfChangeRefused(_)), "{err:?}");
    assert_eq!(env.raft(1).raft_log.last_index(), 4);

    // Leaving the joint configuration explicitly works (index 5 here, 6 in
    // etcd's script because of the empty entry above).
    env.propose_cc(1, leave_joint()).expect("leave joint");
    env.stabilize(&[]);
    assert_cc_v2(&env.entry(1, 5), &leave_joint());
    let want = simple(&[1, 2], &[]);
    for id in [1, 2] {
        assert_eq!(env.conf_state(id), want, "n{id}");
        assert_eq!(env.raft(id).raft_log.committed, 5, "n{id}");
    }

    // Leaving again is refused: the configuration is not joint.
    // raftlet: refused locally, nothing appended (etcd appends an empty
    // entry at index 7).
    let err = env.propose_cc(1, leave_joint()).unwrap_err();
    assert!(matches!(err, Error::ConfChangeRefused(_)), "{err:?}");
    assert_eq!(env.raft(1).raft_log.last_index(), 5);

    // The same proposal forwarded by n2 keeps etcd's behaviour: the leader
    // appends an empty normal entry in its place, which commits.
    env.propose_cc(2, leave_joint()).expect("forwarded");
    env.stabilize(&[]);
    let e = env.entry(1, 6);
    assert_eq!((e.entry_type, e.data()), (EntryType::EntryNormal, &b""[..]));
    for id in [1, 2] {
        assert_eq!(env.raft(id).raft_log.committed, 6, "n{id}");
        assert_eq!(env.conf_state(id), want, "n{id}");
    }
}

/// etcd: testdata/confchange_v2_add_double_auto.txt
#[test]
fn confchange_v2_add_double_auto() {
    let mut env = Env::new();
    env.add_nodes(1, Some((&[1], &[], 2)), &|_| {});
    env.campaign(1);
    env.process_ready(1);
    let cc = cc2(AUTO, &[(ADD, 2), (ADD, 3)]);
    env.propose_cc(1, cc.clone()).expect("add n2 and n3");
    env.add_nodes(2, None, &|_| {});

    // n1 appends the change...
    let rd = env.process_ready(1);
    assert_eq!(rd.entries.len(), 2);
    assert_cc_v2(&rd.entries[1], &cc);
    // ...commits and applies it: two additions need joint consensus, left
    // automatically, so n1 proposes the leave at once.
    let rd = env.process_ready(1);
    assert_eq!(rd.committed_entries.len(), 2);
    assert_eq!(env.conf_state(1), conf(&[1, 2, 3], &[1], &[], &[], true));
    assert_eq!(env.raft(1).raft_log.last_index(), 5);
    assert_cc_v2(&env.entry(1, 5), &leave_joint());

    // n1 probes n2 and n3.
    env.stabilize(&[1]);

    // n2 needs a snapshot, which carries the joint configuration (auto leave
    // set); then it gets the leave entry, and both end in (1 2 3).
    env.stabilize(&[1, 2]);
    let snap = only_snapshot_to(&env, 2);
    assert_eq!(snap.metadata.index, 4);
    assert_eq!(
        snap.metadata.conf_state,
        conf(&[1, 2, 3], &[1], &[], &[], true)
    );
    let want = simple(&[1, 2, 3], &[]);
    for id in [1, 2] {
        assert_eq!(env.conf_state(id), want, "n{id}");
        assert_eq!(env.raft(id).raft_log.committed, 5, "n{id}");
    }

    // n3 gets a snapshot of the final configuration.
    env.stabilize(&[1, 3]);
    let snap = only_snapshot_to(&env, 3);
    assert_eq!(snap.metadata.index, 5);
    assert_eq!(snap.metadata.conf_state, want);
    assert_eq!(env.conf_state(3), want);

    // Nothing else happens.
    let since = env.sent.len();
    env.stabilize(&[]);
    assert_eq!(env.sent.len(), since);

    // Now remove two nodes: this time the joint configuration needs a
    // quorum of (1 2 3) to commit.
    let rm = cc2(AUTO, &[(REMOVE, 2), (REMOVE, 3)]);
    env.propose_cc(1, rm.clone()).expect("remove n2 and n3");
    env.stabilize(&[1]);
    assert_cc_v2(&env.entry(1, 6), &rm);
    env.stabilize(&[2, 3]);

    // More proposals while the removal is under way. Regression: they must
    // not make the leader propose leaving the same joint configuration
    // twice.
    env.propose(1, b"foo").unwrap();
    env.propose(1, b"bar").unwrap();
    env.stabilize(&[1]);
    assert_eq!(env.conf_state(1), conf(&[1], &[1, 2, 3], &[], &[], true));
    assert_eq!(env.raft(1).raft_log.committed, 6);
    assert_eq!(env.raft(1).raft_log.last_index(), 9);
    assert_eq!(env.entry(1, 7).data(), b"foo");
    assert_eq!(env.entry(1, 8).data(), b"bar");
    assert_cc_v2(&env.entry(1, 9), &leave_joint());

    // n2 and n3 enter the joint configuration and acknowledge the leave.
    env.stabilize(&[2, 3]);
    for id in [2, 3] {
        assert_eq!(env.conf_state(id), conf(&[1], &[1, 2, 3], &[], &[], true));
    }

    // Everyone leaves. n1 no longer knows n2 and n3 and refuses their late
    // responses.
    env.stabilize(&[]);
    for id in [1, 2, 3] {
        assert_eq!(env.conf_state(id), simple(&[1], &[]), "n{id}");
        assert_eq!(env.raft(id).raft_log.committed, 9, "n{id}");
    }
    assert_eq!(env.raft(1).raft_log.last_index(), 9);
    assert!(!env.step_errors.is_empty());
    for (m, e) in &env.step_errors {
        assert_eq!(m.to, 1);
        assert!([2, 3].contains(&m.from));
        assert_eq!(m.msg_type, MessageType::MsgAppResp);
        assert_eq!(*e, Error::StepPeerNotFound);
    }
}

/// etcd: testdata/confchange_v2_add_double_implicit.txt
#[test]
fn confchange_v2_add_double_implicit() {
    let cc = cc2(IMPLICIT, &[(ADD, 2)]);
    let mut env = add_single_start(cc.clone());
    env.stabilize(&[1, 2]);

    // A single change, but joint consensus was asked for (left
    // automatically): the snapshot to n2 carries the joint configuration
    // with auto leave, and the leave follows at index 5.
    assert_cc_v2(&env.entry(1, 4), &cc);
    let snap = only_snapshot_to(&env, 2);
    assert_eq!(snap.metadata.index, 4);
    assert_eq!(
        snap.metadata.conf_state,
        conf(&[1, 2], &[1], &[], &[], true)
    );
    assert_cc_v2(&env.entry(1, 5), &leave_joint());
    for id in [1, 2] {
        assert_eq!(env.conf_state(id), simple(&[1, 2], &[]), "n{id}");
        assert_eq!(env.raft(id).raft_log.committed, 5, "n{id}");
    }
}

/// The common start of the `*_replace_leader*` scripts: n1 leads (1 2 3),
/// an empty n4 joins, and n1 proposes "remove 1, add 4" explicitly joint;
/// everyone enters the joint configuration.
fn replace_leader_start(step_down: bool) -> Env {
    let mut env = Env::new();
    env.add_nodes(3, Some((&[1, 2, 3], &[], 2)), &|c| {
        c.step_down_on_removal = step_down
    });
    env.campaign(1);
    env.stabilize(&[]);
    assert_eq!(env.raft(1).state, StateRole::Leader);
    env.add_nodes(1, None, &|c| c.step_down_on_removal = step_down);

    let cc = cc2(EXPLICIT, &[(REMOVE, 1), (ADD, 4)]);
    env.propose_cc(1, cc.clone()).expect("replace n1 by n4");
    env.stabilize(&[]);
    assert_cc_v2(&env.entry(1, 4), &cc);
    let joint = conf(&[2, 3, 4], &[1, 2, 3], &[], &[], false);
    for id in 1..=4 {
        assert_eq!(env.conf_state(id), joint, "n{id}");
        assert_eq!(env.raft(id).raft_log.committed, 4, "n{id}");
        assert!(env.is_voter(id), "n{id}");
    }
    let snap = only_snapshot_to(&env, 4);
    assert_eq!(
        (snap.metadata.index, &snap.metadata.conf_state),
        (4, &joint)
    );
    // Still leading: it is a voter of the outgoing half.
    assert_eq!(env.raft(1).state, StateRole::Leader);
    env
}

/// etcd: testdata/confchange_v2_replace_leader.txt
#[test]
fn confchange_v2_replace_leader() {
    let mut env = replace_leader_start(false);

    // Hand leadership to n4 while joint: it is up to date, so MsgTimeoutNow
    // goes out at once.
    env.rn(1).transfer_leader(4).expect("transfer");
    assert_eq!(env.raft(1).lead_transferee, 4);
    assert_eq!(env.raft(1).state, StateRole::Leader);
    let since = env.sent.len();
    env.stabilize(&[]);
    let tn = env.sent_since(since, |m| m.msg_type == MessageType::MsgTimeoutNow);
    assert_eq!(tn.len(), 1);
    assert_eq!((tn[0].from, tn[0].to), (1, 4));
    // n4 asked every voter of both halves, n1 included.
    let mut asked: Vec<u64> = env
        .sent_since(since, |m| m.msg_type == MessageType::MsgVote)
        .iter()
        .map(|m| m.to)
        .collect();
    asked.sort_unstable();
    assert_eq!(asked, vec![1, 2, 3]);
    assert_eq!(env.raft(4).state, StateRole::Leader);
    assert_eq!(env.raft(4).term, 2);
    for id in 1..=3 {
        assert_eq!(env.raft(id).state, StateRole::Follower, "n{id}");
        assert_eq!((env.raft(id).term, env.raft(id).lead), (2, 4), "n{id}");
        assert_eq!(env.raft(id).raft_log.committed, 5, "n{id}");
    }

    // n4 leaves the joint configuration.
    env.step_errors.clear();
    env.propose_cc(4, leave_joint()).expect("leave joint");
    env.stabilize(&[]);
    assert_cc_v2(&env.entry(4, 6), &leave_joint());
    for id in 1..=4 {
        assert_eq!(env.conf_state(id), simple(&[2, 3, 4], &[]), "n{id}");
        assert_eq!(env.raft(id).raft_log.committed, 6, "n{id}");
    }
    // n4 refuses n1's late response: n1 is no longer a member.
    assert_eq!(env.step_errors.len(), 1, "{:?}", env.step_errors);
    let (m, e) = &env.step_errors[0];
    assert_eq!((m.from, m.to, m.msg_type), (1, 4, MessageType::MsgAppResp));
    assert_eq!(*e, Error::StepPeerNotFound);

    // n1 is out, and cannot campaign.
    assert!(!env.is_voter(1));
    assert_eq!(env.raft(1).state, StateRole::Follower);
    env.campaign(1);
    assert_eq!(env.raft(1).state, StateRole::Follower);
    assert_eq!(env.raft(1).term, 2);
    assert!(!env.rn(1).has_ready());
}

/// etcd: testdata/confchange_v2_replace_leader_stepdown.txt
#[test]
fn confchange_v2_replace_leader_stepdown() {
    let mut env = replace_leader_start(true);

    // n4 proposes the leave; it is forwarded to n1, which accepts it (a
    // valid change) and appends it at index 5.
    env.propose_cc(4, leave_joint()).expect("leave joint");
    let since = env.sent.len();
    env.stabilize(&[]);
    let fwd = env.sent_since(since, |m| m.msg_type == MessageType::MsgProp);
    assert_eq!(fwd.len(), 1);
    assert_eq!((fwd[0].from, fwd[0].to), (4, 1));
    assert_cc_v2(&env.entry(1, 5), &leave_joint());
    for id in 1..=4 {
        assert_eq!(env.conf_state(id), simple(&[2, 3, 4], &[]), "n{id}");
        assert_eq!(env.raft(id).raft_log.committed, 5, "n{id}");
    }

    // n1 applied its removal and stepped down.
    assert_eq!(env.raft(1).state, StateRole::Follower);
    assert_eq!((env.raft(1).term, env.raft(1).lead), (1, INVALID_ID));
    assert!(!env.is_voter(1));
    for id in 2..=4 {
        assert_eq!(env.raft(id).state, StateRole::Follower, "n{id}");
        assert_eq!(env.raft(id).lead, 1, "n{id}");
    }

    // n1 cannot campaign.
    env.campaign(1);
    assert_eq!(env.raft(1).state, StateRole::Follower);
    assert_eq!(env.raft(1).term, 1);

    // n2 campaigns, asking only the voters of the new configuration.
    env.campaign(2);
    let since = env.sent.len();
    env.stabilize(&[]);
    let mut asked: Vec<u64> = env
        .sent_since(since, |m| m.msg_type == MessageType::MsgVote)
        .iter()
        .map(|m| m.to)
        .collect();
    asked.sort_unstable();
    assert_eq!(asked, vec![3, 4]);
    assert_eq!(env.raft(2).state, StateRole::Leader);
    assert_eq!(env.raft(2).term, 2);
    for id in [3, 4] {
        assert_eq!((env.raft(id).term, env.raft(id).lead), (2, 2), "n{id}");
    }
    assert_eq!((env.raft(1).term, env.raft(1).lead), (1, INVALID_ID));
}

/// The common part of the `confchange_v1_remove_leader*` scripts, up to n1
/// applying its own removal. Returns the environment.
fn remove_leader_start(step_down: bool) -> Env {
    let mut env = Env::new();
    env.add_nodes(3, Some((&[1, 2, 3], &[], 2)), &|c| {
        c.step_down_on_removal = step_down
    });
    env.campaign(1);
    env.stabilize(&[]);
    assert_eq!(env.raft(1).state, StateRole::Leader);

    // Start removing n1, and propose an entry that goes out with it.
    env.propose_cc(1, cc1(REMOVE, 1)).expect("remove n1");
    assert_eq!(env.raft(1).state, StateRole::Leader);
    assert!(env.is_voter(1));
    env.propose(1, b"foo").unwrap();
    let rd = env.process_ready(1);
    assert_eq!(rd.entries.len(), 2);
    assert_eq!(rd.entries[0].entry_type, EntryType::EntryConfChange);
    assert_eq!(rd.entries[1].data(), b"foo");
    // raftlet: a RawNode coalesces the appends of proposals made between
    // two Readies, so each follower gets one MsgApp carrying both entries
    // (etcd sends one per proposal: (2,3) (3,3) (2,4) (3,4)).
    let apps: Vec<(u64, u64, usize)> = rd
        .messages
        .iter()
        .filter(|m| m.msg_type == MessageType::MsgApp)
        .map(|m| (m.to, m.index, m.entries.len()))
        .collect();
    assert_eq!(apps, vec![(2, 3, 2), (3, 3, 2)]);

    // n2 acknowledges both.
    env.stabilize(&[2]);

    // Another entry, then n1 commits and applies its removal. It still has
    // the uncommitted "bar" and sends it out.
    env.propose(1, b"bar").unwrap();
    env.stabilize(&[1]);
    assert_eq!(env.raft(1).raft_log.committed, 5);
    assert_eq!(env.raft(1).raft_log.last_index(), 6);
    assert_eq!(env.conf_state(1), simple(&[2, 3], &[]));
    assert!(!env.is_voter(1));
    let bar: Vec<u64> = env
        .sent_since(0, |m| {
            m.msg_type == MessageType::MsgApp
                && m.entries.first().is_some_and(|e| e.data() == b"bar")
        })
        .iter()
        .map(|m| m.to)
        .collect();
    assert_eq!(bar, vec![2, 3]);
    env
}

/// etcd: testdata/confchange_v1_remove_leader.txt
#[test]
fn confchange_v1_remove_leader() {
    let mut env = remove_leader_start(false);
    // Without step-down, n1 keeps leading although it is not a member.
    assert_eq!(env.raft(1).state, StateRole::Leader);
    assert_eq!(env.raft(1).lead, 1);

    // n2 answers, n3 does not yet: "bar" needs a quorum of (2 3), and n1
    // no longer counts itself.
    env.stabilize(&[2]);
    assert_eq!(env.conf_state(2), simple(&[2, 3], &[]));
    assert_eq!(env.raft(2).raft_log.committed, 5);
    env.stabilize(&[1]);
    assert_eq!(env.raft(1).raft_log.committed, 5);

    // Once n3 answers, everything commits.
    env.stabilize(&[]);
    for id in 1..=3 {
        assert_eq!(env.raft(id).raft_log.committed, 6, "n{id}");
        assert_eq!(env.conf_state(id), simple(&[2, 3], &[]), "n{id}");
    }

    // But n1 drops every proposal...
    assert_eq!(env.propose(1, b"baz"), Err(Error::ProposalDropped));
    // ...while it keeps heartbeating, so no one else takes over.
    env.tick_heartbeat(1);
    let since = env.sent.len();
    env.stabilize(&[]);
    let hb: Vec<u64> = env
        .sent_since(since, |m| m.msg_type == MessageType::MsgHeartbeat)
        .iter()
        .map(|m| m.to)
        .collect();
    assert_eq!(hb, vec![2, 3]);
    assert_eq!(env.raft(1).state, StateRole::Leader);
    assert!(!env.is_voter(1));
    for id in [2, 3] {
        assert_eq!(env.raft(id).state, StateRole::Follower, "n{id}");
        assert_eq!((env.raft(id).term, env.raft(id).lead), (1, 1), "n{id}");
        assert!(env.is_voter(id));
    }
}

/// etcd: testdata/confchange_v1_remove_leader_stepdown.txt
#[test]
fn confchange_v1_remove_leader_stepdown() {
    let mut env = remove_leader_start(true);
    // With step-down, n1 became a follower without a leader.
    assert_eq!(env.raft(1).state, StateRole::Follower);
    assert_eq!((env.raft(1).term, env.raft(1).lead), (1, INVALID_ID));
    for id in [2, 3] {
        assert_eq!(env.raft(id).lead, 1, "n{id}");
    }

    // n2 answers; the old leader ignores the answers, so "bar" never
    // commits, even once n3 answers too.
    env.stabilize(&[2]);
    env.stabilize(&[1]);
    env.stabilize(&[]);
    for id in 1..=3 {
        assert_eq!(env.raft(id).raft_log.committed, 5, "n{id}");
        assert_eq!(env.raft(id).raft_log.last_index(), 6, "n{id}");
        assert_eq!(env.conf_state(id), simple(&[2, 3], &[]), "n{id}");
    }
    assert_eq!(env.raft(1).state, StateRole::Follower);

    // n1 can neither propose nor campaign.
    assert_eq!(env.propose(1, b"baz"), Err(Error::ProposalDropped));
    env.campaign(1);
    assert_eq!(env.raft(1).state, StateRole::Follower);
    assert_eq!(env.raft(1).term, 1);
}

/// etcd: testdata/confchange_disable_validation.txt
#[test]
fn confchange_disable_validation() {
    let mut env = Env::new();
    env.add_nodes(1, Some((&[1], &[], 2)), &|c| {
        c.max_committed_size_per_ready = 1;
        c.disable_conf_change_validation = true;
        // raftlet: the learner limit applies even without validation.
        c.max_learners = 2;
    });
    env.campaign(1);
    env.stabilize(&[]);

    // A dummy entry, then a conf change.
    env.propose(1, b"foo").unwrap();
    let cc = cc2(EXPLICIT, &[(ADD_LEARNER, 2), (ADD_LEARNER, 3)]);
    env.propose_cc(1, cc.clone()).expect("add learners");

    // Both are appended.
    let rd = env.process_ready(1);
    assert_eq!(rd.entries.len(), 2);
    assert_eq!(rd.entries[0].data(), b"foo");
    assert_cc_v2(&rd.entries[1], &cc);

    // Both commit, but only the dummy entry is applied (one entry per Ready).
    let rd = env.process_ready(1);
    assert_eq!(rd.hard_state.map(|hs| hs.commit), Some(5));
    assert_eq!(rd.committed_entries.len(), 1);
    assert_eq!(rd.committed_entries[0].data(), b"foo");
    assert_eq!(env.raft(1).raft_log.applied, 4);

    // A leave-joint proposal would be refused twice over: a conf change is
    // pending, and the configuration is not joint yet. Without validation
    // it goes in.
    env.propose_cc(1, leave_joint()).expect("not validated");
    assert_eq!(env.raft(1).raft_log.last_index(), 6);

    // Both changes apply in turn.
    env.stabilize(&[]);
    assert_eq!(env.raft(1).raft_log.committed, 6);
    assert_eq!(env.raft(1).raft_log.applied, 6);
    assert_eq!(env.conf_state(1), simple(&[1], &[2, 3]));
}

// ---------------------------------------------------------------------------
// raftlet's learner rules
// ---------------------------------------------------------------------------

/// A network of voter 1 (leading) and learner 2, caught up.
fn leader_with_learner(f: &dyn Fn(&mut Config)) -> (Network, MemoryStorage) {
    let s1 = new_test_storage(&[1], &[2]);
    let mut c1 = new_test_config(1, 10, 1);
    f(&mut c1);
    let n1 = new_test_raft_with_config(&c1, s1.clone());
    let mut c2 = new_test_config(2, 10, 1);
    f(&mut c2);
    let n2 = new_test_raft_with_config(&c2, new_test_storage(&[1], &[2]));
    let mut nt = Network::new(vec![peer(n1), peer(n2)]);
    nt.campaign(1);
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert!(nt.peer(2).is_learner);
    let last = nt.peer(1).raft_log.last_index();
    assert_eq!(nt.peer(1).trk.get(2).unwrap().matched, last);
    (nt, s1)
}

/// The proposal that promotes learner `id`, made on node 1.
fn promote(id: u64) -> Message {
    prop_cc(1, 1, cc1(ADD, id))
}

/// Proposes the promotion of 2 on n1 and expects it to be refused with
/// `want`, without anything appended.
fn assert_promotion_refused(nt: &mut Network, want: Error) {
    let r = nt.peer_mut(1);
    let (last, pending) = (r.raft_log.last_index(), r.pending_conf_index);
    assert_eq!(r.step(promote(2)), Err(want));
    assert_eq!(r.raft_log.last_index(), last);
    assert_eq!(r.pending_conf_index, pending);
    assert!(r.trk.config.learners.contains(&2));
}

/// Proposes the promotion of 2 on n1, expects it accepted, and applies it on
/// both nodes.
fn assert_promotion_accepted(nt: &mut Network) {
    let r = nt.peer_mut(1);
    let last = r.raft_log.last_index();
    r.step(promote(2)).expect("promotion accepted");
    assert_eq!(r.raft_log.last_index(), last + 1);
    assert_eq!(r.pending_conf_index, last + 1);
    flush(nt, 1);
    for id in [1, 2] {
        let r = nt.peer_mut(id);
        assert_eq!(r.raft_log.committed, last + 1, "n{id}");
        let ents = next_ents(r);
        apply_conf_changes(r, &ents);
        assert_eq!(r.trk.voter_nodes(), vec![1, 2], "n{id}");
        assert!(r.trk.learner_nodes().is_empty(), "n{id}");
    }
    assert!(!nt.peer(2).is_learner);
    assert!(nt.peer(2).promotable());
}

/// raftlet: promoting a learner that lags more than `promote_max_lag`
/// entries is refused with PromotionNotReady; once caught up it is
/// accepted.
#[test]
fn learner_promotion_refused_while_lagging() {
    let (mut nt, _) = leader_with_learner(&|c| c.promote_max_lag = 2);
    nt.isolate(2);
    for _ in 0..3 {
        nt.propose(1, b"x");
    }
    assert_eq!(nt.peer(1).raft_log.last_index(), 4);
    assert_eq!(nt.peer(1).trk.get(2).unwrap().matched, 1);
    assert_promotion_refused(
        &mut nt,
        Error::PromotionNotReady {
            id: 2,
            lag: 3,
            pending_snapshot: false,
            recent_active: true,
        },
    );

    // Heal; a heartbeat round catches the learner up.
    nt.recover();
    nt.send(vec![msg(MessageType::MsgBeat, 1, 1)]);
    assert_eq!(nt.peer(1).trk.get(2).unwrap().matched, 4);
    assert_promotion_accepted(&mut nt);
}

/// raftlet: a lag of exactly `promote_max_lag` is acceptable.
#[test]
fn learner_promotion_accepted_at_max_lag() {
    let (mut nt, _) = leader_with_learner(&|c| c.promote_max_lag = 3);
    nt.isolate(2);
    for _ in 0..3 {
        nt.propose(1, b"x");
    }
    let r = nt.peer_mut(1);
    let last = r.raft_log.last_index();
    assert_eq!(last - r.trk.get(2).unwrap().matched, 3);
    r.step(promote(2)).expect("lag == promote_max_lag is fine");
    assert_eq!(r.raft_log.last_index(), last + 1);
}

/// raftlet: promotion is refused while the leader is sending the learner a
/// snapshot (its progress is in Snapshot state), even with little lag.
#[test]
fn learner_promotion_refused_while_snapshot_pending() {
    let (mut nt, s1) = leader_with_learner(&|_| {});
    nt.isolate(2);
    for _ in 0..3 {
        nt.propose(1, b"x");
    }
    // n1 persists, snapshots and compacts its log past the learner's match.
    {
        let r = nt.peer_mut(1);
        next_ents(r);
        let idx = r.raft_log.applied;
        assert_eq!(idx, 4);
        let cs = r.trk.conf_state();
        let mut w = s1.wl();
        w.create_snapshot(idx, Some(cs), None).unwrap();
        w.compact(idx).unwrap();
    }
    // The learner answers again, so n1 sends it a snapshot; the snapshot is
    // lost on the way.
    nt.recover();
    nt.ignore(MessageType::MsgSnap);
    nt.send(vec![msg(MessageType::MsgBeat, 1, 1)]);
    let pr = nt.peer(1).trk.get(2).unwrap();
    assert_eq!(pr.state, ProgressState::Snapshot);
    assert_eq!(pr.pending_snapshot, 4);
    assert_promotion_refused(
        &mut nt,
        Error::PromotionNotReady {
            id: 2,
            lag: 3,
            pending_snapshot: true,
            recent_active: true,
        },
    );

    // The snapshot failed; the next heartbeat round sends it again, and it
    // arrives this time.
    nt.recover();
    let mut failed = msg(MessageType::MsgSnapStatus, 2, 1);
    failed.reject = true;
    nt.send(vec![failed]);
    nt.send(vec![msg(MessageType::MsgBeat, 1, 1)]);
    let pr = nt.peer(1).trk.get(2).unwrap();
    assert_eq!(pr.state, ProgressState::Replicate);
    assert_eq!(pr.matched, 4);
    assert_eq!(nt.peer(2).raft_log.committed, 4);
    // The snapshot's configuration keeps it a learner.
    assert!(nt.peer(2).is_learner);
    assert_eq!(nt.peer(2).trk.learner_nodes(), vec![2]);

    // The promotion goes in now. (The learner holds no entries to apply: its
    // log starts at the snapshot, so only the new entry matters.)
    let r = nt.peer_mut(1);
    let last = r.raft_log.last_index();
    r.step(promote(2)).expect("promotion accepted");
    assert_eq!(r.raft_log.last_index(), last + 1);
    flush(&mut nt, 1);
    assert_eq!(nt.peer(2).raft_log.committed, last + 1);
}

/// raftlet: promotion is refused while the leader has not heard from the
/// learner within the last check-quorum round.
#[test]
fn learner_promotion_refused_while_inactive() {
    let (mut nt, _) = leader_with_learner(&|c| c.check_quorum = true);
    nt.isolate(2);
    let et = nt.peer(1).election_timeout;
    for _ in 0..et {
        nt.peer_mut(1).tick();
        flush(&mut nt, 1);
    }
    // The leader stays (the learner is not part of the quorum) but marked
    // the learner inactive.
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert!(!nt.peer(1).trk.get(2).unwrap().recent_active);
    assert_promotion_refused(
        &mut nt,
        Error::PromotionNotReady {
            id: 2,
            lag: 0,
            pending_snapshot: false,
            recent_active: false,
        },
    );

    // The learner answers a heartbeat: it is active again.
    nt.recover();
    nt.send(vec![msg(MessageType::MsgBeat, 1, 1)]);
    assert!(nt.peer(1).trk.get(2).unwrap().recent_active);
    assert_promotion_accepted(&mut nt);
}

/// raftlet: a new leader has not heard from the learner yet; promotion
/// waits for its first answer.
#[test]
fn learner_promotion_refused_by_new_leader_until_learner_answers() {
    let (mut nt, _) = leader_with_learner(&|_| {});
    // n1 is re-elected in a new term; drop its appends so the learner
    // cannot answer.
    nt.ignore(MessageType::MsgApp);
    nt.peer_mut(1).become_follower(1, INVALID_ID);
    nt.campaign(1);
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(1).term, 2);
    // Apply n1's log, so that no conf change counts as pending.
    next_ents(nt.peer_mut(1));
    let pr = nt.peer(1).trk.get(2).unwrap();
    assert!(!pr.recent_active);
    let lag = nt.peer(1).raft_log.last_index() - pr.matched;
    assert_promotion_refused(
        &mut nt,
        Error::PromotionNotReady {
            id: 2,
            lag,
            pending_snapshot: false,
            recent_active: false,
        },
    );
    nt.recover();
    nt.send(vec![msg(MessageType::MsgBeat, 1, 1)]);
    assert!(nt.peer(1).trk.get(2).unwrap().recent_active);
    assert_promotion_accepted(&mut nt);
}

/// raftlet: adding a learner beyond `max_learners` is refused with
/// TooManyLearners and appends nothing; raising the limit allows it.
#[test]
fn max_learners_limits_add_learner() {
    let mut r = new_test_raft(1, 10, 1, new_test_storage(&[1], &[2]));
    assert_eq!(r.max_learners, 1);
    r.become_candidate();
    r.become_leader();
    next_ents(&mut r);
    let (last, pending) = (r.raft_log.last_index(), r.pending_conf_index);

    // One learner is the default limit.
    let err = r.step(prop_cc(1, 1, cc1(ADD_LEARNER, 3))).unwrap_err();
    assert_eq!(err, Error::TooManyLearners);
    assert_eq!(r.raft_log.last_index(), last);
    assert_eq!(r.pending_conf_index, pending);
    // Two at once in a V2 change too.
    let err = r
        .step(prop_cc(
            1,
            1,
            cc2(AUTO, &[(ADD_LEARNER, 3), (ADD_LEARNER, 4)]),
        ))
        .unwrap_err();
    assert_eq!(err, Error::TooManyLearners);
    // Demoting a voter counts as adding a learner.
    let mut r3 = new_test_raft(1, 10, 1, new_test_storage(&[1, 2, 3], &[4]));
    r3.become_candidate();
    r3.become_leader();
    let err = r3
        .step(prop_cc(1, 1, cc2(EXPLICIT, &[(ADD_LEARNER, 3)])))
        .unwrap_err();
    assert_eq!(err, Error::TooManyLearners);
    assert_eq!(r.raft_log.last_index(), last);

    // Re-adding the existing learner does not grow the count.
    r.step(prop_cc(1, 1, cc1(ADD_LEARNER, 2)))
        .expect("same learner again");
    assert_eq!(r.raft_log.last_index(), last + 1);
    let ents = next_ents(&mut r);
    apply_conf_changes(&mut r, &ents);
    assert_eq!(r.trk.learner_nodes(), vec![2]);

    // Replacing the learner keeps the count at one.
    let last = r.raft_log.last_index();
    r.step(prop_cc(1, 1, cc2(AUTO, &[(REMOVE, 2), (ADD_LEARNER, 3)])))
        .expect("swap learners");
    assert_eq!(r.raft_log.last_index(), last + 1);
    let ents = next_ents(&mut r);
    apply_conf_changes(&mut r, &ents);
    assert_eq!(r.trk.conf_state(), conf(&[1], &[1], &[3], &[], true));
    r.step(prop_cc(1, 1, leave_joint())).expect("leave joint");
    let ents = next_ents(&mut r);
    apply_conf_changes(&mut r, &ents);
    assert_eq!(r.trk.conf_state(), simple(&[1], &[3]));

    // A higher limit lets another one in.
    r.max_learners = 2;
    let last = r.raft_log.last_index();
    r.step(prop_cc(1, 1, cc1(ADD_LEARNER, 4)))
        .expect("room for a second learner");
    assert_eq!(r.raft_log.last_index(), last + 1);
    let ents = next_ents(&mut r);
    apply_conf_changes(&mut r, &ents);
    assert_eq!(r.trk.learner_nodes(), vec![3, 4]);
}

/// raftlet: the learner limit through the RawNode API.
#[test]
fn max_learners_refusal_through_raw_node() {
    let (mut rn, _s) = single_raw_node_leader(&[2]);
    let last = rn.raft().raft_log.last_index();
    assert_eq!(
        rn.propose_conf_change(cc1(ADD_LEARNER, 3)),
        Err(Error::TooManyLearners)
    );
    assert_eq!(rn.raft().raft_log.last_index(), last);
    assert!(!rn.has_ready());
}

/// raftlet: a conf change proposed locally that fails etcd's validation
/// (one pending at a time; leave joint first; empty V2 only when joint) is
/// refused with ConfChangeRefused and nothing is appended.
#[test]
fn refused_local_conf_change_appends_nothing() {
    let refused = |r: &mut TestRaft, m: Message| {
        let (last, pending) = (r.raft_log.last_index(), r.pending_conf_index);
        let err = r.step(m).unwrap_err();
        assert!(matches!(err, Error::ConfChangeRefused(_)), "{err:?}");
        assert_eq!(r.raft_log.last_index(), last);
        assert_eq!(r.pending_conf_index, pending);
        assert!(r
            .raft_log
            .next_unstable_ents()
            .iter()
            .all(|e| e.index <= last));
    };

    // One conf change at a time.
    let mut r = single_voter_leader(&|_| {});
    r.step(prop_cc(1, 1, cc1(ADD, 2))).expect("first");
    refused(&mut r, prop_cc(1, 1, cc1(ADD, 3)));
    // A batch holding a refused change is refused whole.
    let mut batch = prop(1, 1, b"data");
    batch.entries.push(cc_entry(cc1(ADD, 3)));
    refused(&mut r, batch);
    // A proposal with from == 0 is local too.
    refused(&mut r, prop_cc(INVALID_ID, INVALID_ID, cc1(ADD, 3)));
    // Normal proposals still go in.
    r.step(prop(1, 1, b"data")).expect("normal proposal");

    // No change but the leave while joint.
    let mut r = single_voter_leader(&|_| {});
    r.apply_conf_change(&cc2(EXPLICIT, &[(ADD, 2)])).unwrap();
    assert!(!r.trk.config.voters.outgoing.is_empty());
    refused(&mut r, prop_cc(1, 1, cc2(AUTO, &[(ADD, 3)])));
    refused(&mut r, prop_cc(1, 1, cc1(ADD, 3)));
    r.step(prop_cc(1, 1, leave_joint())).expect("leave joint");

    // No leave outside a joint configuration.
    let mut r = single_voter_leader(&|_| {});
    refused(&mut r, prop_cc(1, 1, leave_joint()));
}

/// raftlet: `disable_conf_change_validation` lets the proposals that
/// validation refuses into the log.
#[test]
fn disable_conf_change_validation_lets_them_through() {
    let accepted = |r: &mut TestRaft, m: Message| {
        let last = r.raft_log.last_index();
        r.step(m).expect("not validated");
        assert_eq!(r.raft_log.last_index(), last + 1);
        assert_eq!(r.pending_conf_index, last + 1);
        let e = log_from(r, last + 1).remove(0);
        assert_ne!(e.entry_type, EntryType::EntryNormal);
    };
    let no_validation = |c: &mut Config| c.disable_conf_change_validation = true;

    let mut r = single_voter_leader(&no_validation);
    r.step(prop_cc(1, 1, cc1(ADD, 2))).expect("first");
    accepted(&mut r, prop_cc(1, 1, cc1(ADD, 3)));

    let mut r = single_voter_leader(&no_validation);
    r.apply_conf_change(&cc2(EXPLICIT, &[(ADD, 2)])).unwrap();
    accepted(&mut r, prop_cc(1, 1, cc2(AUTO, &[(ADD, 3)])));

    let mut r = single_voter_leader(&no_validation);
    accepted(&mut r, prop_cc(1, 1, leave_joint()));

    // The learner rules still hold.
    let mut r = single_voter_leader(&no_validation);
    let err = r
        .step(prop_cc(
            1,
            1,
            cc2(AUTO, &[(ADD_LEARNER, 2), (ADD_LEARNER, 3)]),
        ))
        .unwrap_err();
    assert_eq!(err, Error::TooManyLearners);
}

/// raftlet: a learner never campaigns: not on election timeouts, not on
/// MsgHup, not on MsgTimeoutNow (with or without pre-vote).
#[test]
fn learner_never_campaigns() {
    for pre_vote in [false, true] {
        let mut c = new_test_config(2, 10, 1);
        c.pre_vote = pre_vote;
        c.check_quorum = pre_vote;
        let mut r = new_test_raft_with_config(&c, new_test_storage(&[1], &[2]));
        assert!(r.is_learner);
        assert!(!r.promotable());

        for _ in 0..10 * r.election_timeout {
            r.tick();
        }
        r.step(msg(MessageType::MsgHup, 2, 2)).unwrap();
        assert_eq!(r.state, StateRole::Follower, "pre_vote {pre_vote}");
        assert_eq!(r.term, 0);
        assert!(r.read_messages().is_empty());

        // It follows a leader, which asks it to campaign at once.
        r.step(msg_term(MessageType::MsgHeartbeat, 1, 2, 1))
            .unwrap();
        assert_eq!((r.term, r.lead), (1, 1));
        r.read_messages();
        r.step(msg_term(MessageType::MsgTimeoutNow, 1, 2, 1))
            .unwrap();
        assert_eq!(r.state, StateRole::Follower, "pre_vote {pre_vote}");
        assert_eq!((r.term, r.vote), (1, INVALID_ID));
        assert!(r.read_messages().is_empty());
    }

    // Through the RawNode API, too.
    let s = new_test_storage(&[1], &[2]);
    let mut rn = RawNode::new(&new_test_config(2, 10, 1), s).unwrap();
    rn.campaign().unwrap();
    for _ in 0..100 {
        rn.tick();
    }
    assert_eq!(rn.raft().state, StateRole::Follower);
    let rd = rn.ready();
    assert!(rd.messages.is_empty() && rd.persisted_messages.is_empty());
}

/// raftlet: a leader refuses to transfer leadership to a learner (or to a
/// non-member) with TransferRefused and sends nothing.
#[test]
fn learner_cannot_be_transfer_target() {
    let mut r = new_test_raft(1, 10, 1, new_test_storage(&[1], &[2]));
    r.become_candidate();
    r.become_leader();
    r.read_messages();

    for target in [2, 3] {
        let err = r
            .step(msg(MessageType::MsgTransferLeader, target, 1))
            .unwrap_err();
        assert!(matches!(err, Error::TransferRefused(_)), "{err:?}");
        assert_eq!(r.lead_transferee, INVALID_ID);
        assert_eq!(r.state, StateRole::Leader);
        assert!(r.read_messages().is_empty());
    }

    // Through the RawNode API.
    let (mut rn, _s) = single_raw_node_leader(&[2]);
    let err = rn.transfer_leader(2).unwrap_err();
    assert!(matches!(err, Error::TransferRefused(_)), "{err:?}");
    assert_eq!(rn.raft().lead_transferee, INVALID_ID);
    assert_eq!(rn.basic_status().lead_transferee, INVALID_ID);
}

/// raftlet: `step_down_on_removal` decides whether a leader that applies its
/// own removal (or demotion) steps down or keeps leading.
#[test]
fn step_down_on_removal_true_and_false() {
    let changes = [cc1(REMOVE, 1), cc1(ADD_LEARNER, 1)];
    for cc in changes {
        for step_down in [true, false] {
            let mut c = new_test_config(1, 10, 1);
            c.step_down_on_removal = step_down;
            let mut r = new_test_raft_with_config(&c, new_test_storage(&[1, 2], &[]));
            r.become_candidate();
            r.become_leader();
            r.apply_conf_change(&cc.as_v2()).unwrap();
            assert_eq!(r.trk.voter_nodes(), vec![2]);
            assert!(!r.promotable());
            assert_eq!(r.term, 1);
            let ctx = format!("{cc:?} step_down {step_down}");
            if step_down {
                assert_eq!(r.state, StateRole::Follower, "{ctx}");
                assert_eq!(r.lead, INVALID_ID, "{ctx}");
            } else {
                assert_eq!(r.state, StateRole::Leader, "{ctx}");
                assert_eq!(r.lead, 1, "{ctx}");
            }
            if cc.change_type == REMOVE && !step_down {
                // A removed leader accepts no proposals.
                assert_eq!(r.step(prop(1, 1, b"x")), Err(Error::ProposalDropped));
            }
            if cc.change_type == ADD_LEARNER {
                assert!(r.is_learner, "{ctx}");
            }
        }
    }
}

/// raftlet: Status and the tracker mark learners.
#[test]
fn status_marks_learners() {
    let (rn, _s) = single_raw_node_leader(&[2]);
    let st = rn.status();
    assert!(st.progress[&2].is_learner);
    assert!(!st.progress[&1].is_learner);
    assert_eq!(st.config.learners, BTreeSet::from([2]));
    assert_eq!(rn.raft().trk.learner_nodes(), vec![2]);
    assert_eq!(rn.raft().trk.voter_nodes(), vec![1]);
    let json = st.to_json();
    assert!(json.contains("\"2\":{\"match\":0"), "{json}");
    assert!(json.contains("\"isLearner\":true"), "{json}");
    assert!(json.contains("\"learners\":[\"2\"]"), "{json}");

    // The learner knows it is one, though it reports no progress.
    let rn2 = RawNode::new(&new_test_config(2, 10, 1), new_test_storage(&[1], &[2])).unwrap();
    let st2 = rn2.status();
    assert!(st2.progress.is_empty());
    assert_eq!(st2.config.learners, BTreeSet::from([2]));
    assert!(rn2.raft().is_learner);
}

/// raftlet: demoting a voter through a joint V2 change stages it in
/// `learners_next` (it still votes in the outgoing half) and makes it a
/// learner when the joint configuration is left.
#[test]
fn demotion_through_learners_next() {
    for transition in [EXPLICIT, IMPLICIT] {
        let mut env = Env::new();
        env.add_nodes(3, Some((&[1, 2, 3], &[], 2)), &|_| {});
        env.campaign(1);
        env.stabilize(&[]);
        env.propose_cc(1, cc2(transition, &[(ADD_LEARNER, 3)]))
            .expect("demote n3");

        if transition == EXPLICIT {
            env.stabilize(&[]);
            let joint = conf(&[1, 2], &[1, 2, 3], &[], &[3], false);
            for id in 1..=3 {
                assert_eq!(env.conf_state(id), joint, "n{id}");
            }
            // Staged, not yet a learner: n3 still votes in the outgoing half.
            assert!(!env.raft(1).trk.get(3).unwrap().is_learner);
            assert!(!env.raft(3).is_learner);
            assert!(env.is_voter(3));
            // A restart rebuilds the staged demotion from storage.
            env.restart(3);
            assert_eq!(env.conf_state(3), joint);
            assert!(!env.raft(3).is_learner);
            env.propose_cc(1, leave_joint()).expect("leave joint");
        }
        env.stabilize(&[]);

        let want = simple(&[1, 2], &[3]);
        for id in 1..=3 {
            assert_eq!(env.conf_state(id), want, "{transition:?} n{id}");
        }
        assert!(env.raft(1).trk.get(3).unwrap().is_learner);
        assert!(env.raft(3).is_learner);
        assert!(!env.is_voter(3));

        // The new learner still gets the log, and cannot campaign.
        env.propose(1, b"after").unwrap();
        env.stabilize(&[]);
        let committed = env.raft(1).raft_log.committed;
        assert_eq!(env.raft(3).raft_log.committed, committed);
        env.campaign(3);
        assert_eq!(env.raft(3).state, StateRole::Follower);
        assert!(!env.rn(3).has_ready());
    }
}

/// raftlet: a refused local batch leaves `pending_conf_index` alone. A batch
/// of two conf changes is refused whole (the second sees the first as
/// pending, as in etcd); since nothing was appended, the next conf change
/// must not be blocked by the refused one.
#[test]
fn refused_batch_does_not_leave_a_pending_conf_change() {
    let mut r = single_voter_leader(&|_| {});
    let (last, pending) = (r.raft_log.last_index(), r.pending_conf_index);
    let mut batch = prop_cc(1, 1, cc1(ADD, 2));
    batch.entries.push(cc_entry(cc1(ADD, 3)));
    let err = r.step(batch).unwrap_err();
    assert!(matches!(err, Error::ConfChangeRefused(_)), "{err:?}");
    assert_eq!(r.raft_log.last_index(), last);
    assert_eq!(r.pending_conf_index, pending);

    // A change proposed on its own goes in.
    r.step(prop_cc(1, 1, cc1(ADD, 2)))
        .expect("no conf change is pending");
    assert_eq!(r.raft_log.last_index(), last + 1);
    assert_eq!(r.pending_conf_index, last + 1);

    // Same with a refusal from the learner rules.
    let mut r = single_voter_leader(&|_| {});
    let pending = r.pending_conf_index;
    let mut batch = prop_cc(1, 1, cc1(ADD, 2));
    batch
        .entries
        .push(cc_entry(cc2(AUTO, &[(ADD_LEARNER, 3), (ADD_LEARNER, 4)])));
    assert!(r.step(batch).is_err());
    assert_eq!(r.pending_conf_index, pending);
}

/// raftlet: a learner grants pre-votes as it grants votes (etcd does not
/// look at the voter's role either).
#[test]
fn learner_grants_pre_vote() {
    let mut c = new_test_config(2, 10, 1);
    c.pre_vote = true;
    let mut n2 = new_test_raft_with_config(&c, new_test_storage(&[1], &[2]));
    n2.become_follower(1, INVALID_ID);
    let mut m = msg_term(MessageType::MsgPreVote, 1, 2, 2);
    m.log_term = 1;
    m.index = 1;
    n2.step(m).expect("step");
    let msgs = n2.read_messages();
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!(msgs[0].msg_type, MessageType::MsgPreVoteResp);
    assert!(!msgs[0].reject);
    // A pre-vote changes neither term nor vote.
    assert_eq!((n2.term, n2.vote), (1, INVALID_ID));
}

/// raftlet: a learner's acknowledgement never counts towards the commit
/// quorum.
#[test]
fn learner_ack_does_not_commit() {
    let mut r = new_test_raft(1, 10, 1, new_test_storage(&[1, 2], &[3]));
    r.become_candidate();
    r.become_leader();
    r.step(prop(1, 1, b"x")).unwrap();
    r.read_messages();
    let last = r.raft_log.last_index();
    let ack = |from: u64| {
        let mut m = msg_term(MessageType::MsgAppResp, from, 1, 1);
        m.index = last;
        m
    };
    // Leader and learner together are two of three members, but only one
    // of the two voters.
    r.step(ack(3)).unwrap();
    assert_eq!(r.trk.get(3).unwrap().matched, last);
    assert_eq!(r.raft_log.committed, 0);
    r.step(ack(2)).unwrap();
    assert_eq!(r.raft_log.committed, last);
}
