//! Ported etcd tests: snapshot.
//!
//! From etcd-io/raft v3.6 raft_snap_test.go, the snapshot tests of
//! raft_test.go and TestNodeRestartFromSnapshot (node_test.go, driven here
//! through RawNode), plus raftlet checks of the snapshot paths listed in
//! TEST-PLAN section 5 (temporarily unavailable snapshots, unreachable
//! peers, inactive peers, out-of-band snapshots).
//!
//! Both modes: every test here runs twice, as `test_xxx` with etcd's test
//! defaults (pre-vote and check-quorum off) and as
//! `test_xxx_pre_vote_check_quorum` with raftlet's defaults (both on),
//! except `test_snapshot_held_after_check_quorum_marks_peer_inactive`, which
//! is about check-quorum and runs with the defaults only.

use std::cell::Cell;
use std::rc::Rc;

use bytes::Bytes;

use super::*;
use crate::errors::Result;
use crate::pb::{ConfState, Entry, HardState, Message, MessageType, Snapshot};
use crate::raw_node::{RawNode, SnapshotStatus};
use crate::storage::{RaftState, Storage};
use crate::tracker::ProgressState;

/// The two configurations the tests here run under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// etcd's test defaults (`new_test_config`): pre-vote and check-quorum off.
    Etcd,
    /// raftlet's defaults (`Config::default()`): pre-vote and check-quorum on.
    Defaults,
}

impl Mode {
    /// Sets pre-vote and check-quorum as the mode says.
    fn apply(self, c: &mut Config) {
        match self {
            Mode::Etcd => {
                c.pre_vote = false;
                c.check_quorum = false;
            }
            Mode::Defaults => {
                let d = Config::default();
                c.pre_vote = d.pre_vote;
                c.check_quorum = d.check_quorum;
                assert!(
                    c.pre_vote && c.check_quorum,
                    "raftlet's defaults turn pre-vote and check-quorum on"
                );
            }
        }
    }

    /// Whether pre-vote and check-quorum are on.
    fn on(self) -> bool {
        self == Mode::Defaults
    }

    /// `new_test_config` under this mode.
    fn config(self, id: u64, election: usize, heartbeat: usize) -> Config {
        let mut c = new_test_config(id, election, heartbeat);
        self.apply(&mut c);
        c
    }

    /// `new_test_raft` under this mode.
    fn raft(self, id: u64, election: usize, heartbeat: usize, storage: MemoryStorage) -> TestRaft {
        let r = new_test_raft_with_config(&self.config(id, election, heartbeat), storage);
        self.check(&r);
        r
    }

    /// Asserts that a node runs in this mode.
    fn check<S: Storage>(self, r: &Raft<S>) {
        assert_eq!(
            (r.pre_vote, r.check_quorum),
            (self.on(), self.on()),
            "node {} not in mode {self:?}",
            r.id
        );
    }
}

/// etcd `testingSnap`: a snapshot at index 11, term 11, voters {1, 2}.
fn testing_snap() -> Snapshot {
    test_snapshot(11, 11, &[1, 2])
}

/// A snapshot at index 11, term 11 with the given configuration.
fn snap_with_conf(cs: ConfState) -> Snapshot {
    let mut s = Snapshot::default();
    s.metadata.index = 11;
    s.metadata.term = 11;
    s.metadata.conf_state = cs;
    s
}

/// etcd `mustTerm`.
fn must_term(r: &TestRaft, i: u64) -> u64 {
    r.raft_log.term(i).expect("term must be known")
}

/// A proposal of `data` from the node itself.
fn local_prop(id: u64, data: &'static [u8]) -> Message {
    prop(id, id, data)
}

/// etcd `mustAppendEntry`.
fn must_append_entry(r: &mut TestRaft, data: &'static [u8]) {
    let e = Entry {
        data: Some(Bytes::from_static(data)),
        ..Entry::default()
    };
    assert!(r.append_entry(vec![e]), "entry unexpectedly dropped");
}

/// A leader over a node restored from `testing_snap` (as etcd's tests, it
/// keeps its own term, 1): its log is empty past index 11 except for the
/// empty entry at 12 that it appended on election.
fn leader_from_testing_snap(mode: Mode, storage_peers: &[u64]) -> TestRaft {
    let mut sm = mode.raft(1, 10, 1, new_test_storage(storage_peers, &[]));
    assert!(sm.restore(testing_snap()));
    sm.become_candidate();
    sm.become_leader();
    sm
}

/// Peer 2 rejects a probe at the leader's first index: it needs entries the
/// leader compacted, so only a snapshot helps.
fn sending_snapshot_set_pending_snapshot(mode: Mode) {
    let mut sm = leader_from_testing_snap(mode, &[1]);

    let first = sm.raft_log.first_index();
    sm.trk.get_mut(2).unwrap().next = first;

    let mut m = msg(MessageType::MsgAppResp, 2, 1);
    m.index = first - 1;
    m.reject = true;
    sm.step(m).unwrap();
    let pr = sm.trk.get(2).unwrap();
    assert_eq!(pr.pending_snapshot, 11);
    assert_eq!(pr.state, ProgressState::Snapshot);
}

/// etcd: TestSendingSnapshotSetPendingSnapshot
#[test]
fn test_sending_snapshot_set_pending_snapshot() {
    sending_snapshot_set_pending_snapshot(Mode::Etcd);
}

/// etcd: TestSendingSnapshotSetPendingSnapshot, with pre-vote and
/// check-quorum on.
#[test]
fn test_sending_snapshot_set_pending_snapshot_pre_vote_check_quorum() {
    sending_snapshot_set_pending_snapshot(Mode::Defaults);
}

/// A proposal sends nothing to a peer waiting for a snapshot.
fn pending_snapshot_pause_replication(mode: Mode) {
    let mut sm = leader_from_testing_snap(mode, &[1, 2]);
    sm.trk.get_mut(2).unwrap().become_snapshot(11);

    sm.step(local_prop(1, b"somedata")).unwrap();
    let msgs = sm.read_messages();
    assert!(msgs.is_empty(), "unexpected messages {msgs:?}");
}

/// etcd: TestPendingSnapshotPauseReplication
#[test]
fn test_pending_snapshot_pause_replication() {
    pending_snapshot_pause_replication(Mode::Etcd);
}

/// etcd: TestPendingSnapshotPauseReplication, with pre-vote and
/// check-quorum on.
#[test]
fn test_pending_snapshot_pause_replication_pre_vote_check_quorum() {
    pending_snapshot_pause_replication(Mode::Defaults);
}

/// A failed snapshot sends the peer back to probing, paused, from where it
/// was.
fn snapshot_failure(mode: Mode) {
    let mut sm = leader_from_testing_snap(mode, &[1, 2]);
    {
        let pr = sm.trk.get_mut(2).unwrap();
        pr.next = 1;
        pr.become_snapshot(11);
    }

    let mut m = msg(MessageType::MsgSnapStatus, 2, 1);
    m.reject = true;
    sm.step(m).unwrap();
    let pr = sm.trk.get(2).unwrap();
    assert_eq!(pr.pending_snapshot, 0);
    assert_eq!(pr.next, 1);
    assert!(pr.msg_app_flow_paused);
    assert_eq!(pr.state, ProgressState::Probe);
}

/// etcd: TestSnapshotFailure
#[test]
fn test_snapshot_failure() {
    snapshot_failure(Mode::Etcd);
}

/// etcd: TestSnapshotFailure, with pre-vote and check-quorum on.
#[test]
fn test_snapshot_failure_pre_vote_check_quorum() {
    snapshot_failure(Mode::Defaults);
}

/// A delivered snapshot sends the peer to probing, paused, past the
/// snapshot.
fn snapshot_succeed(mode: Mode) {
    let mut sm = leader_from_testing_snap(mode, &[1, 2]);
    {
        let pr = sm.trk.get_mut(2).unwrap();
        pr.next = 1;
        pr.become_snapshot(11);
    }

    let m = msg(MessageType::MsgSnapStatus, 2, 1);
    sm.step(m).unwrap();
    let pr = sm.trk.get(2).unwrap();
    assert_eq!(pr.pending_snapshot, 0);
    assert_eq!(pr.next, 12);
    assert!(pr.msg_app_flow_paused);
    assert_eq!(pr.state, ProgressState::Probe);
}

/// etcd: TestSnapshotSucceed
#[test]
fn test_snapshot_succeed() {
    snapshot_succeed(Mode::Etcd);
}

/// etcd: TestSnapshotSucceed, with pre-vote and check-quorum on.
#[test]
fn test_snapshot_succeed_pre_vote_check_quorum() {
    snapshot_succeed(Mode::Defaults);
}

/// An acknowledgement at or past the pending snapshot's index ends the
/// snapshot wait.
fn snapshot_abort(mode: Mode) {
    let mut sm = leader_from_testing_snap(mode, &[1, 2]);
    {
        let pr = sm.trk.get_mut(2).unwrap();
        pr.next = 1;
        pr.become_snapshot(11);
    }

    let mut m = msg(MessageType::MsgAppResp, 2, 1);
    m.index = 11;
    sm.step(m).unwrap();
    let pr = sm.trk.get(2).unwrap();
    assert_eq!(pr.pending_snapshot, 0);
    assert_eq!(pr.state, ProgressState::Replicate);
    // Replicating again, the leader sent its empty entry at 12 right away
    // and optimistically moved next past it.
    assert_eq!(pr.next, 13);
    assert_eq!(pr.inflights.count(), 1);
}

/// etcd: TestSnapshotAbort
#[test]
fn test_snapshot_abort() {
    snapshot_abort(Mode::Etcd);
}

/// etcd: TestSnapshotAbort, with pre-vote and check-quorum on.
#[test]
fn test_snapshot_abort_pre_vote_check_quorum() {
    snapshot_abort(Mode::Defaults);
}

/// `send_append` sends nothing to a peer waiting for a snapshot.
fn send_append_for_progress_snapshot(mode: Mode) {
    let mut r = mode.raft(1, 10, 1, new_test_storage(&[1, 2], &[]));
    r.become_candidate();
    r.become_leader();
    r.read_messages();
    r.trk.get_mut(2).unwrap().become_snapshot(10);

    for i in 0..10 {
        must_append_entry(&mut r, b"somedata");
        r.send_append(2);
        let msgs = r.read_messages();
        assert!(msgs.is_empty(), "#{i}: unexpected messages {msgs:?}");
    }
}

/// etcd: TestSendAppendForProgressSnapshot
#[test]
fn test_send_append_for_progress_snapshot() {
    send_append_for_progress_snapshot(Mode::Etcd);
}

/// etcd: TestSendAppendForProgressSnapshot, with pre-vote and check-quorum
/// on.
#[test]
fn test_send_append_for_progress_snapshot_pre_vote_check_quorum() {
    send_append_for_progress_snapshot(Mode::Defaults);
}

/// Restoring a snapshot resets the log and the configuration; a node with
/// an unapplied snapshot does not campaign (nor pre-campaign).
fn restore(mode: Mode) {
    let s = test_snapshot(11, 11, &[1, 2, 3]);
    let mut sm = mode.raft(1, 10, 1, new_test_storage(&[1, 2], &[]));
    assert!(sm.restore(s.clone()));

    assert_eq!(sm.raft_log.last_index(), s.metadata.index);
    assert_eq!(must_term(&sm, s.metadata.index), s.metadata.term);
    assert_eq!(sm.trk.voter_nodes(), s.metadata.conf_state.voters);

    assert!(!sm.restore(s));
    // The snapshot is not applied yet: the node must not campaign.
    for _ in 0..sm.randomized_election_timeout {
        sm.tick();
    }
    assert_eq!(sm.state, StateRole::Follower);
    assert!(sm.read_messages().is_empty(), "no (pre-)vote requests");
}

/// etcd: TestRestore
#[test]
fn test_restore() {
    restore(Mode::Etcd);
}

/// etcd: TestRestore, with pre-vote and check-quorum on.
#[test]
fn test_restore_pre_vote_check_quorum() {
    restore(Mode::Defaults);
}

/// A restored configuration keeps voters and learners apart.
fn restore_with_learner(mode: Mode) {
    let s = snap_with_conf(ConfState {
        voters: vec![1, 2],
        learners: vec![3],
        ..ConfState::default()
    });
    let mut sm = mode.raft(3, 8, 2, new_test_storage(&[1, 2], &[3]));
    assert!(sm.restore(s.clone()));

    assert_eq!(sm.raft_log.last_index(), s.metadata.index);
    assert_eq!(must_term(&sm, s.metadata.index), s.metadata.term);

    assert_eq!(
        sm.trk.voter_nodes().len(),
        s.metadata.conf_state.voters.len()
    );
    assert_eq!(
        sm.trk.learner_nodes().len(),
        s.metadata.conf_state.learners.len()
    );
    // raftlet: a follower keeps no progress; the configuration says who
    // is a learner (etcd reads the progress, which says the same).
    for n in &s.metadata.conf_state.voters {
        assert!(sm.trk.config.voters.contains(*n), "voter {n}");
        assert!(!sm.trk.config.learners.contains(n), "voter {n}");
    }
    for n in &s.metadata.conf_state.learners {
        assert!(sm.trk.config.learners.contains(n), "learner {n}");
    }

    assert!(!sm.restore(s));
}

/// etcd: TestRestoreWithLearner
#[test]
fn test_restore_with_learner() {
    restore_with_learner(Mode::Etcd);
}

/// etcd: TestRestoreWithLearner, with pre-vote and check-quorum on.
#[test]
fn test_restore_with_learner_pre_vote_check_quorum() {
    restore_with_learner(Mode::Defaults);
}

/// A restored joint configuration keeps both halves.
fn restore_with_voters_outgoing(mode: Mode) {
    let s = snap_with_conf(ConfState {
        voters: vec![2, 3, 4],
        voters_outgoing: vec![1, 2, 3],
        ..ConfState::default()
    });
    let mut sm = mode.raft(1, 10, 1, new_test_storage(&[1, 2], &[]));
    assert!(sm.restore(s.clone()));

    assert_eq!(sm.raft_log.last_index(), s.metadata.index);
    assert_eq!(must_term(&sm, s.metadata.index), s.metadata.term);
    assert_eq!(sm.trk.voter_nodes(), vec![1, 2, 3, 4]);

    assert!(!sm.restore(s));
    // The snapshot is not applied yet: the node must not campaign.
    for _ in 0..sm.randomized_election_timeout {
        sm.tick();
    }
    assert_eq!(sm.state, StateRole::Follower);
    assert!(sm.read_messages().is_empty(), "no (pre-)vote requests");
}

/// etcd: TestRestoreWithVotersOutgoing
#[test]
fn test_restore_with_voters_outgoing() {
    restore_with_voters_outgoing(Mode::Etcd);
}

/// etcd: TestRestoreWithVotersOutgoing, with pre-vote and check-quorum on.
#[test]
fn test_restore_with_voters_outgoing_pre_vote_check_quorum() {
    restore_with_voters_outgoing(Mode::Defaults);
}

/// A voter restored from a snapshot that lists it as a learner becomes one.
fn restore_voter_to_learner(mode: Mode) {
    let s = snap_with_conf(ConfState {
        voters: vec![1, 2],
        learners: vec![3],
        ..ConfState::default()
    });
    let mut sm = mode.raft(3, 10, 1, new_test_storage(&[1, 2, 3], &[]));
    assert!(!sm.is_learner);
    assert!(sm.restore(s));
    // Not checked by etcd, but what the restore is for.
    assert!(sm.is_learner);
}

/// etcd: TestRestoreVoterToLearner
#[test]
fn test_restore_voter_to_learner() {
    restore_voter_to_learner(Mode::Etcd);
}

/// etcd: TestRestoreVoterToLearner, with pre-vote and check-quorum on.
#[test]
fn test_restore_voter_to_learner_pre_vote_check_quorum() {
    restore_voter_to_learner(Mode::Defaults);
}

/// A learner restored from a snapshot that lists it as a voter becomes one.
fn restore_learner_promotion(mode: Mode) {
    let s = test_snapshot(11, 11, &[1, 2, 3]);
    let mut sm = mode.raft(3, 10, 1, new_test_storage(&[1, 2], &[3]));
    assert!(sm.is_learner);
    assert!(sm.restore(s));
    assert!(!sm.is_learner);
}

/// etcd: TestRestoreLearnerPromotion
#[test]
fn test_restore_learner_promotion() {
    restore_learner_promotion(Mode::Etcd);
}

/// etcd: TestRestoreLearnerPromotion, with pre-vote and check-quorum on.
#[test]
fn test_restore_learner_promotion_pre_vote_check_quorum() {
    restore_learner_promotion(Mode::Defaults);
}

/// A learner with an empty log is caught up (by snapshot) by a leader whose
/// log is compacted.
fn learner_receive_snapshot(mode: Mode) {
    // Give node 1 a compacted log and a snapshot, both in its storage.
    let s = snap_with_conf(ConfState {
        voters: vec![1],
        learners: vec![2],
        ..ConfState::default()
    });
    let store = new_test_storage(&[1], &[2]);
    let mut n1 = mode.raft(1, 10, 1, store.clone());
    let n2 = mode.raft(2, 10, 1, new_test_storage(&[1], &[2]));

    assert!(n1.restore(s));
    let snap = n1.raft_log.next_unstable_snapshot().cloned().unwrap();
    store.wl().apply_snapshot(snap.clone()).unwrap();
    // etcd `appliedSnap`.
    n1.raft_log.stable_snap_to(snap.metadata.index);
    n1.applied_to(snap.metadata.index, 0);

    let mut nt = Network::new(vec![peer(n1), peer(n2)]);

    let n1 = nt.peer_mut(1);
    n1.randomized_election_timeout = n1.election_timeout;
    for _ in 0..n1.election_timeout {
        n1.tick();
    }

    nt.send(vec![msg(MessageType::MsgBeat, 1, 1)]);

    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(1).raft_log.committed, 12);
    assert_eq!(nt.peer(2).raft_log.committed, nt.peer(1).raft_log.committed);
    mode.check(nt.peer(1));
    mode.check(nt.peer(2));
}

/// etcd: TestLearnerReceiveSnapshot
#[test]
fn test_learner_receive_snapshot() {
    learner_receive_snapshot(Mode::Etcd);
}

/// etcd: TestLearnerReceiveSnapshot, with pre-vote and check-quorum on.
#[test]
fn test_learner_receive_snapshot_pre_vote_check_quorum() {
    learner_receive_snapshot(Mode::Defaults);
}

/// A snapshot not newer than the commit index is ignored; one covered by
/// the log is ignored too but moves the commit index up to it.
fn restore_ignore_snapshot(mode: Mode) {
    let previous = ents_with_terms(&[1, 1, 1]);
    let commit = 1;
    let mut sm = mode.raft(1, 10, 1, new_test_storage(&[1, 2], &[]));
    sm.raft_log.append(&previous);
    sm.raft_log.commit_to(commit);

    let mut s = test_snapshot(commit, 1, &[1, 2]);

    // Not newer than the commit index: ignored.
    assert!(!sm.restore(s.clone()));
    assert_eq!(sm.raft_log.committed, commit);

    // Already in the log: ignored, but the commit index moves up to it.
    s.metadata.index = commit + 1;
    assert!(!sm.restore(s));
    assert_eq!(sm.raft_log.committed, commit + 1);
    // The log was kept.
    assert_eq!(sm.raft_log.last_index(), 3);
}

/// etcd: TestRestoreIgnoreSnapshot
#[test]
fn test_restore_ignore_snapshot() {
    restore_ignore_snapshot(Mode::Etcd);
}

/// etcd: TestRestoreIgnoreSnapshot, with pre-vote and check-quorum on.
#[test]
fn test_restore_ignore_snapshot_pre_vote_check_quorum() {
    restore_ignore_snapshot(Mode::Defaults);
}

/// A peer that needs compacted entries gets the snapshot.
fn provide_snap(mode: Mode) {
    let mut sm = leader_from_testing_snap(mode, &[1]);

    let first = sm.raft_log.first_index();
    sm.trk.get_mut(2).unwrap().next = first;
    let mut m = msg(MessageType::MsgAppResp, 2, 1);
    m.index = first - 1;
    m.reject = true;
    sm.step(m).unwrap();

    let msgs = sm.read_messages();
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!(msgs[0].msg_type, MessageType::MsgSnap);
    assert_eq!(msgs[0].to, 2);
    assert_eq!(msgs[0].snapshot.as_ref().unwrap().metadata.index, 11);
}

/// etcd: TestProvideSnap
#[test]
fn test_provide_snap() {
    provide_snap(Mode::Etcd);
}

/// etcd: TestProvideSnap, with pre-vote and check-quorum on.
#[test]
fn test_provide_snap_pre_vote_check_quorum() {
    provide_snap(Mode::Defaults);
}

/// A peer that needs a snapshot but has not been heard from gets none.
fn ignore_providing_snap(mode: Mode) {
    let mut sm = leader_from_testing_snap(mode, &[1]);

    let first = sm.raft_log.first_index();
    {
        let pr = sm.trk.get_mut(2).unwrap();
        pr.next = first - 1;
        pr.recent_active = false;
    }

    sm.step(local_prop(1, b"somedata")).unwrap();
    let msgs = sm.read_messages();
    assert!(msgs.is_empty(), "unexpected messages {msgs:?}");
}

/// etcd: TestIgnoreProvidingSnap
#[test]
fn test_ignore_providing_snap() {
    ignore_providing_snap(Mode::Etcd);
}

/// etcd: TestIgnoreProvidingSnap, with pre-vote and check-quorum on.
#[test]
fn test_ignore_providing_snap_pre_vote_check_quorum() {
    ignore_providing_snap(Mode::Defaults);
}

/// A follower restores a snapshot from the leader and acknowledges it.
fn restore_from_snap_msg(mode: Mode) {
    let mut m = msg_term(MessageType::MsgSnap, 1, 2, 2);
    m.snapshot = Some(Box::new(testing_snap()));

    let mut sm = mode.raft(2, 10, 1, new_test_storage(&[1, 2], &[]));
    sm.step(m).unwrap();

    assert_eq!(sm.lead, 1);
    // Beyond etcd's check: the snapshot was restored and acknowledged.
    assert_eq!(sm.term, 2);
    assert_eq!(sm.raft_log.last_index(), 11);
    assert_eq!(sm.raft_log.committed, 11);
    let msgs = sm.read_messages();
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!(msgs[0].msg_type, MessageType::MsgAppResp);
    assert_eq!(msgs[0].to, 1);
    assert_eq!(msgs[0].index, 11);
    assert!(!msgs[0].reject);
}

/// etcd: TestRestoreFromSnapMsg
#[test]
fn test_restore_from_snap_msg() {
    restore_from_snap_msg(Mode::Etcd);
}

/// etcd: TestRestoreFromSnapMsg, with pre-vote and check-quorum on.
#[test]
fn test_restore_from_snap_msg_pre_vote_check_quorum() {
    restore_from_snap_msg(Mode::Defaults);
}

/// A node that missed entries the leader compacted is caught up by the
/// snapshot, then by appends.
fn slow_node_restore(mode: Mode) {
    let tweak = move |c: &mut Config| mode.apply(c);
    let mut nt = Network::new_with_config(Some(&tweak), vec![None, None, None]);
    for id in 1..=3 {
        mode.check(nt.peer(id));
    }
    nt.campaign(1);
    assert_eq!(nt.peer(1).state, StateRole::Leader);

    nt.isolate(3);
    for _ in 0..=100 {
        nt.send(vec![prop(1, 1, b"")]);
    }
    let applied = {
        let lead = nt.peer_mut(1);
        next_ents(lead);
        lead.raft_log.applied
    };
    let voters = nt.peer(1).trk.voter_nodes();
    let st = nt.storage[&1].clone();
    st.wl()
        .create_snapshot(applied, Some(ConfState::from_voters(voters)), None)
        .unwrap();
    st.wl().compact(applied).unwrap();

    nt.recover();
    // Node 3 counts as active only once the leader hears from it: send
    // heartbeats until it has.
    let mut rounds = 0;
    while !nt.peer(1).trk.get(3).unwrap().recent_active {
        nt.send(vec![msg(MessageType::MsgBeat, 1, 1)]);
        rounds += 1;
        assert!(rounds < 100, "node 3 never became active");
    }

    // Sends the snapshot.
    nt.send(vec![prop(1, 1, b"")]);
    // Commits once more.
    nt.send(vec![prop(1, 1, b"")]);
    assert_eq!(nt.peer(3).raft_log.committed, nt.peer(1).raft_log.committed);
    assert!(nt.peer(3).raft_log.committed > applied);
    // The same leader and term throughout.
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(3).term, nt.peer(1).term);
}

/// etcd: TestSlowNodeRestore
#[test]
fn test_slow_node_restore() {
    slow_node_restore(Mode::Etcd);
}

/// etcd: TestSlowNodeRestore, with pre-vote and check-quorum on.
#[test]
fn test_slow_node_restore_pre_vote_check_quorum() {
    slow_node_restore(Mode::Defaults);
}

/// A node restarted over a storage holding a snapshot and a committed entry
/// keeps its commit index and hands the entry out once, with nothing to
/// persist.
fn node_restart_from_snapshot(mode: Mode) {
    let snap = test_snapshot(2, 1, &[1, 2]);
    let entries = vec![Entry::new(1, 3, Bytes::from_static(b"foo"))];
    let st = HardState {
        term: 1,
        vote: 0,
        commit: 3,
    };

    let s = MemoryStorage::new();
    s.wl().set_hard_state(st);
    s.wl().apply_snapshot(snap).unwrap();
    s.wl().append(&entries).unwrap();
    let mut rn = RawNode::new(&mode.config(1, 10, 1), s).unwrap();
    mode.check(rn.raft());
    // Beyond etcd's check: the restored commit index and configuration.
    assert_eq!(rn.raft().raft_log.committed, 3);
    assert_eq!(rn.raft().trk.voter_nodes(), vec![1, 2]);

    let rd = rn.ready();
    // Nothing changed relative to what is persisted: no hard state, and
    // nothing to sync.
    assert_eq!(rd.hard_state, None);
    assert_eq!(rd.soft_state, None);
    assert_eq!(rd.committed_entries, entries);
    assert!(!rd.must_sync);
    assert!(rd.entries.is_empty());
    assert!(rd.snapshot.is_none());
    assert!(rd.messages.is_empty());
    assert!(rd.persisted_messages.is_empty());
    assert!(rd.read_states.is_empty());
    rn.advance(rd);
    assert!(!rn.has_ready());
}

/// etcd: TestNodeRestartFromSnapshot (node_test.go; here through RawNode,
/// as etcd's TestRawNodeRestartFromSnapshot)
#[test]
fn test_node_restart_from_snapshot() {
    node_restart_from_snapshot(Mode::Etcd);
}

/// etcd: TestNodeRestartFromSnapshot, with pre-vote and check-quorum on.
#[test]
fn test_node_restart_from_snapshot_pre_vote_check_quorum() {
    node_restart_from_snapshot(Mode::Defaults);
}

/// A MemoryStorage that counts the calls to [`Storage::snapshot`].
#[derive(Clone)]
struct CountingStorage {
    inner: MemoryStorage,
    snapshot_calls: Rc<Cell<usize>>,
}

impl Storage for CountingStorage {
    fn initial_state(&self) -> Result<RaftState> {
        self.inner.initial_state()
    }
    fn entries(&self, low: u64, high: u64, max_size: u64) -> Result<Vec<Entry>> {
        self.inner.entries(low, high, max_size)
    }
    fn term(&self, idx: u64) -> Result<u64> {
        self.inner.term(idx)
    }
    fn first_index(&self) -> Result<u64> {
        self.inner.first_index()
    }
    fn last_index(&self) -> Result<u64> {
        self.inner.last_index()
    }
    fn snapshot(&self, request_index: u64, to: u64) -> Result<Snapshot> {
        self.snapshot_calls.set(self.snapshot_calls.get() + 1);
        self.inner.snapshot(request_index, to)
    }
}

/// Takes what a node over any storage has to send, stepping its own
/// acknowledgements first (the generic twin of `read_messages`).
fn take_msgs<S: Storage>(r: &mut Raft<S>) -> Vec<Message> {
    loop {
        let after = std::mem::take(&mut r.msgs_after_append);
        if after.is_empty() {
            break;
        }
        for m in after {
            if m.to == r.id {
                r.step(m).unwrap();
            } else {
                r.msgs.push(m);
            }
        }
    }
    std::mem::take(&mut r.msgs)
}

/// A leader whose storage holds the snapshot at 11 (voters 1
/// and 2), with peer 2 behind the compacted log; returns it with the
/// snapshot-call counter.
fn leader_with_stored_snapshot(
    mode: Mode,
) -> (Raft<CountingStorage>, MemoryStorage, Rc<Cell<usize>>) {
    let inner = MemoryStorage::new();
    inner.wl().apply_snapshot(testing_snap()).unwrap();
    let calls = Rc::new(Cell::new(0));
    let storage = CountingStorage {
        inner: inner.clone(),
        snapshot_calls: calls.clone(),
    };
    let mut r = Raft::new(&mode.config(1, 10, 1), storage).unwrap();
    mode.check(&r);
    r.become_candidate();
    r.become_leader();
    take_msgs(&mut r);
    (r, inner, calls)
}

/// A rejection from peer 2 of an append at `index` in `term`, hinting an
/// empty log.
fn reject_from_2(index: u64, term: u64) -> Message {
    let mut m = msg_term(MessageType::MsgAppResp, 2, 1, term);
    m.index = index;
    m.reject = true;
    m
}

/// raftlet (TEST-PLAN 5): when Storage::snapshot reports
/// SnapshotTemporarilyUnavailable the leader neither panics nor retries at
/// once; the next heartbeat response or append response from the peer
/// triggers another try, which sends the snapshot.
fn snapshot_temporarily_unavailable_retried_later(mode: Mode) {
    for via_heartbeat in [true, false] {
        let ctx = format!("mode={mode:?} via_heartbeat={via_heartbeat}");
        let (mut r, inner, calls) = leader_with_stored_snapshot(mode);
        inner.wl().trigger_snap_unavailable();
        let term = r.term;

        // Peer 2 has an empty log: it rejects the first probe.
        let next = r.trk.get(2).unwrap().next;
        r.step(reject_from_2(next - 1, term)).unwrap();
        assert_eq!(calls.get(), 1, "{ctx}: exactly one snapshot request");
        let msgs = take_msgs(&mut r);
        assert!(
            msgs.iter().all(|m| m.msg_type != MessageType::MsgSnap),
            "{ctx}: no snapshot while it is unavailable: {msgs:?}"
        );
        let pr = r.trk.get(2).unwrap();
        assert_eq!(pr.state, ProgressState::Probe, "{ctx}");
        assert_eq!(pr.pending_snapshot, 0, "{ctx}");

        // Ticks alone (heartbeats going out) do not ask again. A full
        // election timeout of them: with check-quorum on, that is one
        // check-quorum round, which peer 2's rejection above lets the
        // leader survive, and which marks peer 2 inactive again (a second
        // silent round would depose the leader of this two-voter cluster).
        for _ in 0..r.election_timeout {
            r.tick();
        }
        assert_eq!(calls.get(), 1, "{ctx}: no retry without news from the peer");
        let msgs = take_msgs(&mut r);
        assert!(
            msgs.iter().all(|m| m.msg_type == MessageType::MsgHeartbeat),
            "{ctx}: {msgs:?}"
        );
        assert!(!msgs.is_empty(), "{ctx}");
        assert_eq!(r.state, StateRole::Leader, "{ctx}");
        assert_eq!(
            r.trk.get(2).unwrap().recent_active,
            !mode.on(),
            "{ctx}: only a check-quorum round marks peer 2 inactive"
        );

        // News from the peer (which also marks it active again): the leader
        // tries again and succeeds.
        let m = if via_heartbeat {
            msg_term(MessageType::MsgHeartbeatResp, 2, 1, term)
        } else {
            let next = r.trk.get(2).unwrap().next;
            reject_from_2(next - 1, term)
        };
        r.step(m).unwrap();
        assert_eq!(calls.get(), 2, "{ctx}");
        let msgs = take_msgs(&mut r);
        let snaps: Vec<_> = msgs
            .iter()
            .filter(|m| m.msg_type == MessageType::MsgSnap)
            .collect();
        assert_eq!(snaps.len(), 1, "{ctx}: {msgs:?}");
        assert_eq!(snaps[0].to, 2, "{ctx}");
        assert_eq!(
            snaps[0].snapshot.as_ref().unwrap().metadata.index,
            11,
            "{ctx}"
        );
        let pr = r.trk.get(2).unwrap();
        assert_eq!(pr.state, ProgressState::Snapshot, "{ctx}");
        assert_eq!(pr.pending_snapshot, 11, "{ctx}");
        assert_eq!(r.state, StateRole::Leader, "{ctx}");
    }
}

/// raftlet: SnapshotTemporarilyUnavailable leads to a later retry.
#[test]
fn test_snapshot_temporarily_unavailable_retried_later() {
    snapshot_temporarily_unavailable_retried_later(Mode::Etcd);
}

/// raftlet: SnapshotTemporarilyUnavailable leads to a later retry, with
/// pre-vote and check-quorum on.
#[test]
fn test_snapshot_temporarily_unavailable_retried_later_pre_vote_check_quorum() {
    snapshot_temporarily_unavailable_retried_later(Mode::Defaults);
}

/// raftlet (TEST-PLAN 5): a peer waiting for a snapshot gets no MsgApp,
/// whatever wakes the leader up (proposals, commits, heartbeat responses,
/// heartbeat ticks); it still gets heartbeats.
fn peer_in_snapshot_state_gets_no_msg_app(mode: Mode) {
    let mut r = mode.raft(1, 10, 1, new_test_storage(&[1, 2, 3], &[]));
    r.become_candidate();
    r.become_leader();
    r.read_messages();
    // Peer 3 replicates normally; peer 2 waits for a snapshot.
    let mut ack = msg(MessageType::MsgAppResp, 3, 1);
    ack.index = r.raft_log.last_index();
    ack.term = r.term;
    r.step(ack).unwrap();
    r.trk.get_mut(2).unwrap().become_snapshot(1);
    r.read_messages();

    // Two and a half election timeouts of ticks: with check-quorum on, two
    // check-quorum rounds pass, each marking the peers inactive. Both peers
    // answer every round (3 acknowledges appends, 2 answers heartbeats), so
    // the leader keeps its role, and peer 2 is active again whenever it
    // matters; it stays waiting for its snapshot throughout.
    let rounds = 2 * r.election_timeout + r.election_timeout / 2;
    let mut to_2 = Vec::new();
    for i in 0..rounds {
        r.step(local_prop(1, b"data")).unwrap();
        to_2.extend(r.read_messages().into_iter().filter(|m| m.to == 2));
        let mut ack = msg(MessageType::MsgAppResp, 3, 1);
        ack.index = r.raft_log.last_index();
        ack.term = r.term;
        r.step(ack).unwrap();
        assert_eq!(r.raft_log.committed, r.raft_log.last_index(), "#{i}");
        r.step(msg_term(MessageType::MsgHeartbeatResp, 2, 1, r.term))
            .unwrap();
        r.tick();
        to_2.extend(r.read_messages().into_iter().filter(|m| m.to == 2));
        assert_eq!(r.state, StateRole::Leader, "#{i}");
        let pr = r.trk.get(2).unwrap();
        assert_eq!(pr.state, ProgressState::Snapshot, "#{i}");
        assert_eq!(pr.pending_snapshot, 1, "#{i}");
    }
    assert!(
        to_2.iter().all(|m| m.msg_type == MessageType::MsgHeartbeat),
        "{to_2:?}"
    );
    assert!(!to_2.is_empty(), "heartbeats still flow");
}

/// raftlet: a peer in Snapshot state gets no MsgApp.
#[test]
fn test_peer_in_snapshot_state_gets_no_msg_app() {
    peer_in_snapshot_state_gets_no_msg_app(Mode::Etcd);
}

/// raftlet: a peer in Snapshot state gets no MsgApp, with pre-vote and
/// check-quorum on.
#[test]
fn test_peer_in_snapshot_state_gets_no_msg_app_pre_vote_check_quorum() {
    peer_in_snapshot_state_gets_no_msg_app(Mode::Defaults);
}

/// raftlet (TEST-PLAN 5): while a snapshot is in flight, the peer may catch
/// up by other means (an older snapshot applied out of band, or appends).
/// An acknowledgement that reconnects it to the leader's log ends the wait
/// and replication resumes, even below the pending snapshot's index; an
/// acknowledgement that does not reconnect it leaves it waiting.
fn snapshot_superseded_by_ack_within_log(mode: Mode) {
    // The leader's storage: a snapshot at 11, entries 12..=15 of term 11.
    let storage = MemoryStorage::new();
    storage.wl().apply_snapshot(testing_snap()).unwrap();
    let ents: Vec<Entry> = (12..=15).map(|i| ent(11, i)).collect();
    storage.wl().append(&ents).unwrap();
    storage.wl().set_hard_state(HardState {
        term: 11,
        vote: 0,
        commit: 15,
    });
    let mut r = mode.raft(1, 10, 1, storage);
    r.become_candidate();
    r.become_leader();
    r.read_messages();
    assert_eq!(r.raft_log.first_index(), 12);
    assert_eq!(r.raft_log.last_index(), 16);

    // A (newer) snapshot at 16 is in flight to peer 2.
    r.trk.get_mut(2).unwrap().become_snapshot(16);

    // An old acknowledgement below the log: still waiting.
    let mut m = msg(MessageType::MsgAppResp, 2, 1);
    m.index = 5;
    m.term = r.term;
    r.step(m).unwrap();
    let pr = r.trk.get(2).unwrap();
    assert_eq!(pr.state, ProgressState::Snapshot);
    assert_eq!(pr.pending_snapshot, 16);
    assert_eq!(pr.matched, 5);
    assert!(r.read_messages().is_empty());

    // The peer applied the older snapshot at 11 (out of band): the leader
    // can feed it from its log, starting at 12.
    let mut m = msg(MessageType::MsgAppResp, 2, 1);
    m.index = 11;
    m.term = r.term;
    r.step(m).unwrap();
    let pr = r.trk.get(2).unwrap();
    assert_eq!(pr.state, ProgressState::Replicate);
    assert_eq!(pr.pending_snapshot, 0);
    assert_eq!(pr.matched, 11);
    assert_eq!(pr.next, 17);
    let msgs = r.read_messages();
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!(msgs[0].msg_type, MessageType::MsgApp);
    assert_eq!(msgs[0].index, 11);
    assert_eq!(msgs[0].log_term, 11);
    let idx: Vec<u64> = msgs[0].entries.iter().map(|e| e.index).collect();
    assert_eq!(idx, vec![12, 13, 14, 15, 16]);
}

/// raftlet: an in-flight snapshot superseded by an acknowledgement within
/// the leader's log.
#[test]
fn test_snapshot_superseded_by_ack_within_log() {
    snapshot_superseded_by_ack_within_log(Mode::Etcd);
}

/// raftlet: an in-flight snapshot superseded by an acknowledgement within
/// the leader's log, with pre-vote and check-quorum on.
#[test]
fn test_snapshot_superseded_by_ack_within_log_pre_vote_check_quorum() {
    snapshot_superseded_by_ack_within_log(Mode::Defaults);
}

/// raftlet (TEST-PLAN 5): reporting a peer unreachable sends a replicating
/// peer back to probing; a peer probing or waiting for a snapshot is left
/// alone (etcd's MsgUnreachable); a failed snapshot sends it to probing.
fn report_unreachable_replicate_to_probe(mode: Mode) {
    let mut rn = RawNode::new(&mode.config(1, 10, 1), new_test_storage(&[1, 2], &[])).unwrap();
    mode.check(rn.raft());
    rn.raft_mut().become_candidate();
    rn.raft_mut().become_leader();
    let last = rn.raft().raft_log.last_index();
    let term = rn.raft().term;

    let mut ack = msg_term(MessageType::MsgAppResp, 2, 1, term);
    ack.index = last;
    rn.step(ack).unwrap();
    rn.raft_mut().step(local_prop(1, b"a")).unwrap();
    rn.raft_mut().step(local_prop(1, b"b")).unwrap();
    // raftlet: a RawNode coalesces the two proposals' appends until the
    // next flush; send them one by one as etcd would.
    rn.raft_mut().flush_deferred_appends();
    {
        let pr = rn.raft().trk.get(2).unwrap();
        assert_eq!(pr.state, ProgressState::Replicate);
        assert_eq!(pr.next, last + 3, "two appends in flight");
    }

    rn.report_unreachable(2);
    let pr = rn.raft().trk.get(2).unwrap();
    assert_eq!(pr.state, ProgressState::Probe);
    assert_eq!(pr.next, last + 1, "probing resumes after the match");
    assert_eq!(pr.matched, last);

    // Already probing: unchanged.
    let before = pr.clone();
    rn.report_unreachable(2);
    assert_eq!(rn.raft().trk.get(2).unwrap(), &before);

    // Waiting for a snapshot: unchanged.
    rn.raft_mut().trk.get_mut(2).unwrap().become_snapshot(last);
    let before = rn.raft().trk.get(2).unwrap().clone();
    rn.report_unreachable(2);
    assert_eq!(rn.raft().trk.get(2).unwrap(), &before);

    // report_snapshot(Failure) ends the wait: probe from the match.
    rn.report_snapshot(2, SnapshotStatus::Failure);
    let pr = rn.raft().trk.get(2).unwrap();
    assert_eq!(pr.state, ProgressState::Probe);
    assert_eq!(pr.next, last + 1);
    assert!(pr.msg_app_flow_paused);
    assert_eq!(rn.raft().state, StateRole::Leader);
}

/// raftlet: report_unreachable and report_snapshot(Failure).
#[test]
fn test_report_unreachable_replicate_to_probe() {
    report_unreachable_replicate_to_probe(Mode::Etcd);
}

/// raftlet: report_unreachable and report_snapshot(Failure), with pre-vote
/// and check-quorum on.
#[test]
fn test_report_unreachable_replicate_to_probe_pre_vote_check_quorum() {
    report_unreachable_replicate_to_probe(Mode::Defaults);
}

/// raftlet (TEST-PLAN 5): a snapshot is not sent to a peer that has not
/// been heard from recently; once it answers (a heartbeat response), the
/// snapshot goes out.
fn snapshot_not_sent_to_inactive_peer(mode: Mode) {
    let mut sm = leader_from_testing_snap(mode, &[1]);
    let first = sm.raft_log.first_index();
    {
        let pr = sm.trk.get_mut(2).unwrap();
        pr.next = first - 1;
        pr.recent_active = false;
    }

    // Proposals and heartbeat ticks do not send it. Fewer ticks than an
    // election timeout: with check-quorum on, a round in which peer 2 stays
    // silent would (rightly) depose the leader of this two-voter cluster.
    let ticks = 3;
    assert!(ticks < sm.election_timeout);
    for _ in 0..ticks {
        sm.step(local_prop(1, b"somedata")).unwrap();
        sm.tick();
    }
    let msgs = sm.read_messages();
    assert!(
        msgs.iter().all(|m| m.msg_type == MessageType::MsgHeartbeat),
        "{msgs:?}"
    );
    assert!(!msgs.is_empty());
    let pr = sm.trk.get(2).unwrap();
    assert_eq!(pr.state, ProgressState::Probe);
    assert!(!pr.recent_active);
    assert_eq!(sm.state, StateRole::Leader);

    // The peer answers a heartbeat: now it is active and gets the snapshot.
    sm.step(msg_term(MessageType::MsgHeartbeatResp, 2, 1, sm.term))
        .unwrap();
    let msgs = sm.read_messages();
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!(msgs[0].msg_type, MessageType::MsgSnap);
    assert_eq!(msgs[0].to, 2);
    let pr = sm.trk.get(2).unwrap();
    assert_eq!(pr.state, ProgressState::Snapshot);
    assert_eq!(pr.pending_snapshot, 11);
}

/// raftlet: no snapshot to an inactive peer until it answers.
#[test]
fn test_snapshot_not_sent_to_inactive_peer() {
    snapshot_not_sent_to_inactive_peer(Mode::Etcd);
}

/// raftlet: no snapshot to an inactive peer until it answers, with pre-vote
/// and check-quorum on.
#[test]
fn test_snapshot_not_sent_to_inactive_peer_pre_vote_check_quorum() {
    snapshot_not_sent_to_inactive_peer(Mode::Defaults);
}

/// raftlet (TEST-PLAN 5): with check-quorum, each round marks peers
/// inactive; a peer that needs a snapshot after such a round gets none
/// until it is heard from again (here: its rejection of a probe). Runs with
/// raftlet's defaults only (pre-vote and check-quorum on): without
/// check-quorum there are no rounds.
#[test]
fn test_snapshot_held_after_check_quorum_marks_peer_inactive() {
    let storage = new_test_storage(&[1], &[]);
    let mut sm = Mode::Defaults.raft(1, 10, 1, storage);
    assert!(sm.restore(test_snapshot(11, 11, &[1, 2, 3])));
    sm.persist();
    sm.become_candidate();
    sm.become_leader();
    sm.read_messages();

    // Peers 2 and 3 answer; peer 2 is behind the compacted log.
    for id in [2, 3] {
        sm.step(msg_term(MessageType::MsgHeartbeatResp, id, 1, sm.term))
            .unwrap();
    }
    sm.read_messages();
    // A check-quorum round: the quorum was active, peers are marked inactive.
    for _ in 0..sm.election_timeout {
        sm.tick();
    }
    assert_eq!(sm.state, StateRole::Leader);
    assert!(!sm.trk.get(2).unwrap().recent_active);
    sm.read_messages();

    // Peer 2 is found to be behind the compacted log while inactive.
    let pr = sm.trk.get_mut(2).unwrap();
    pr.become_probe();
    pr.next = 11;
    pr.matched = 0;
    pr.recent_active = false;
    sm.step(local_prop(1, b"x")).unwrap();
    let msgs = sm.read_messages();
    assert!(
        msgs.iter().all(|m| m.to != 2),
        "inactive peer 2 got {msgs:?}"
    );
    // Its rejection of the probe is news from it: the snapshot goes out.
    let mut m = msg_term(MessageType::MsgAppResp, 2, 1, sm.term);
    m.index = 10;
    m.reject = true;
    sm.step(m).unwrap();
    let msgs = sm.read_messages();
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!(msgs[0].msg_type, MessageType::MsgSnap);
}
