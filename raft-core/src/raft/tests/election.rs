//! Ported etcd tests: election.
//!
//! Elections, terms and pre-vote (TEST-PLAN section 2) and check-quorum and
//! disruption (section 4), from etcd's raft_test.go.

use std::panic::{catch_unwind, AssertUnwindSafe};

use bytes::Bytes;

use super::{
    black_hole, ent, ents_with_config, msg, msg_term, new_test_config, new_test_raft,
    new_test_raft_with_config, new_test_storage, pre_vote_config, voted_with_config, Network,
    TestRaft,
};
use crate::config::Config;
use crate::pb::{ConfChangeSingle, ConfChangeType, ConfChangeV2, Entry, Message, MessageType};
use crate::raft::{StateRole, INVALID_ID};

/// etcd test `takeMessagesAfterAppend`: the messages held back until the
/// current append is durable, taken without delivering them.
fn take_messages_after_append(r: &mut TestRaft) -> Vec<Message> {
    std::mem::take(&mut r.msgs_after_append)
}

/// etcd test `stepOrSend`: steps the messages addressed to `r`, queues the rest.
fn step_or_send(r: &mut TestRaft, msgs: Vec<Message>) {
    for m in msgs {
        if m.to == r.id {
            r.step(m).expect("step");
        } else {
            r.msgs.push(m);
        }
    }
}

/// The state etcd's `ltoa` prints for a log: last index, applied, applying
/// and every entry. Logs built from storage only have applied = applying = 0.
fn assert_log(r: &TestRaft, want: &[Entry], ctx: &str) {
    assert_eq!(
        r.raft_log.last_index(),
        want.len() as u64,
        "{ctx}: last index"
    );
    assert_eq!(r.raft_log.applied, 0, "{ctx}: applied");
    assert_eq!(r.raft_log.applying, 0, "{ctx}: applying");
    assert_eq!(r.raft_log.all_entries(), want, "{ctx}: entries");
}

/// A normal entry with a payload.
fn data_ent(term: u64, index: u64, data: &'static [u8]) -> Entry {
    Entry {
        data: Some(Bytes::from_static(data)),
        ..ent(term, index)
    }
}

/// A single-change conf change, as etcd's `ConfChange{..}.AsV2()`.
fn conf_change(t: ConfChangeType, id: u64) -> ConfChangeV2 {
    ConfChangeV2 {
        changes: vec![ConfChangeSingle::new(t, id)],
        ..ConfChangeV2::default()
    }
}

/// A node of a 1..=3 cluster with etcd's test defaults.
fn node3(id: u64, election: usize) -> TestRaft {
    new_test_raft(id, election, 1, new_test_storage(&[1, 2, 3], &[]))
}

/// A node of a 1..=3 cluster with check-quorum on.
fn node3_check_quorum(id: u64) -> TestRaft {
    let mut r = node3(id, 10);
    r.check_quorum = true;
    r
}

/// A node of a 1..=3 cluster that was a follower in term 1 (etcd tests
/// `becomeFollower(1, None)` before building the network).
fn node3_term1(id: u64) -> TestRaft {
    let mut r = node3(id, 10);
    r.become_follower(1, INVALID_ID);
    r
}

fn cfg_fn(pre_vote: bool) -> Option<&'static dyn Fn(&mut Config)> {
    if pre_vote {
        Some(&pre_vote_config)
    } else {
        None
    }
}

fn run_leader_election(pre_vote: bool) {
    let cfg = cfg_fn(pre_vote);
    // Without pre-vote a failed election leaves a candidate in term 1; with
    // it, the node stays a pre-candidate and its term does not move.
    let (cand_state, cand_term) = if pre_vote {
        (StateRole::PreCandidate, 0)
    } else {
        (StateRole::Candidate, 1)
    };
    let tests: Vec<(Network, StateRole, u64)> = vec![
        (
            Network::new_with_config(cfg, vec![None, None, None]),
            StateRole::Leader,
            1,
        ),
        (
            Network::new_with_config(cfg, vec![None, None, black_hole()]),
            StateRole::Leader,
            1,
        ),
        (
            Network::new_with_config(cfg, vec![None, black_hole(), black_hole()]),
            cand_state,
            cand_term,
        ),
        (
            Network::new_with_config(cfg, vec![None, black_hole(), black_hole(), None]),
            cand_state,
            cand_term,
        ),
        (
            Network::new_with_config(cfg, vec![None, black_hole(), black_hole(), None, None]),
            StateRole::Leader,
            1,
        ),
        // Three voters have longer logs in the same term: they answer with
        // rejections (instead of ignoring the request), and the election is lost.
        (
            Network::new_with_config(
                cfg,
                vec![
                    None,
                    super::peer(ents_with_config(cfg, &[1])),
                    super::peer(ents_with_config(cfg, &[1])),
                    super::peer(ents_with_config(cfg, &[1, 1])),
                    None,
                ],
            ),
            StateRole::Follower,
            1,
        ),
    ];
    for (i, (mut nt, state, term)) in tests.into_iter().enumerate() {
        nt.campaign(1);
        let sm = nt.peer(1);
        assert_eq!(sm.state, state, "#{i}");
        assert_eq!(sm.term, term, "#{i}");
    }
}

/// etcd: TestLeaderElection
#[test]
fn test_leader_election() {
    run_leader_election(false);
}

/// etcd: TestLeaderElectionPreVote
#[test]
fn test_leader_election_pre_vote() {
    run_leader_election(true);
}

/// Every node of a cluster can campaign and win in turn, so elections work
/// from a non-pristine state too.
fn run_leader_cycle(pre_vote: bool) {
    let mut n = Network::new_with_config(cfg_fn(pre_vote), vec![None, None, None]);
    for campaigner in 1..=3u64 {
        n.campaign(campaigner);
        for id in 1..=3u64 {
            let sm = n.peer(id);
            let want = if id == campaigner {
                StateRole::Leader
            } else {
                StateRole::Follower
            };
            assert_eq!(
                sm.state, want,
                "pre_vote={pre_vote}: campaigner {campaigner}, node {id}"
            );
        }
    }
}

/// etcd: TestLeaderCycle
#[test]
fn test_leader_cycle() {
    run_leader_cycle(false);
}

/// etcd: TestLeaderCyclePreVote
#[test]
fn test_leader_cycle_pre_vote() {
    run_leader_cycle(true);
}

/// A newly elected leader whose log lacks the highest-term entries
/// overwrites them on the followers with its own lower-term ones.
fn run_leader_election_overwrite_newer_logs(pre_vote: bool) {
    let cfg = cfg_fn(pre_vote);
    // Node 1 won term 1 and replicated one entry to node 2 only; node 3 won
    // term 2 (with the votes of 4 and 5) and wrote an entry nobody got.
    let mut n = Network::new_with_config(
        cfg,
        vec![
            super::peer(ents_with_config(cfg, &[1])),
            super::peer(ents_with_config(cfg, &[1])),
            super::peer(ents_with_config(cfg, &[2])),
            super::peer(voted_with_config(cfg, 3, 2)),
            super::peer(voted_with_config(cfg, 3, 2)),
        ],
    );

    // A quorum knows of term 2: node 1 loses, but learns the term.
    n.campaign(1);
    assert_eq!(n.peer(1).state, StateRole::Follower);
    assert_eq!(n.peer(1).term, 2);

    // In term 3 it wins.
    n.campaign(1);
    assert_eq!(n.peer(1).state, StateRole::Leader);
    assert_eq!(n.peer(1).term, 3);

    // Everyone now has term 1 at index 1 and term 3 at index 2.
    for id in 1..=5u64 {
        let entries = n.peer(id).raft_log.all_entries();
        assert_eq!(entries.len(), 2, "node {id}");
        assert_eq!(entries[0].term, 1, "node {id}");
        assert_eq!(entries[1].term, 3, "node {id}");
    }
}

/// etcd: TestLeaderElectionOverwriteNewerLogs
#[test]
fn test_leader_election_overwrite_newer_logs() {
    run_leader_election_overwrite_newer_logs(false);
}

/// etcd: TestLeaderElectionOverwriteNewerLogsPreVote
#[test]
fn test_leader_election_overwrite_newer_logs_pre_vote() {
    run_leader_election_overwrite_newer_logs(true);
}

const ALL_STATES: [StateRole; 4] = [
    StateRole::Follower,
    StateRole::Candidate,
    StateRole::Leader,
    StateRole::PreCandidate,
];

/// A (pre-)vote request of a higher term with an up-to-date log is granted
/// in every role.
fn run_vote_from_any_state(vt: MessageType) {
    for st in ALL_STATES {
        let mut r = node3(1, 10);
        r.term = 1;
        match st {
            StateRole::Follower => {
                let term = r.term;
                r.become_follower(term, 3);
            }
            StateRole::PreCandidate => r.become_pre_candidate(),
            StateRole::Candidate => r.become_candidate(),
            StateRole::Leader => {
                r.become_candidate();
                r.become_leader();
            }
        }
        // The transitions above may have raised the term.
        let orig_term = r.term;
        let new_term = r.term + 1;

        let mut m = msg_term(vt, 2, 1, new_term);
        m.log_term = new_term;
        m.index = 42;
        r.step(m).unwrap_or_else(|e| panic!("{vt:?},{st}: {e}"));
        let msgs = r.read_messages();
        assert_eq!(msgs.len(), 1, "{vt:?},{st}: {msgs:?}");
        assert_eq!(msgs[0].msg_type, vt.vote_response().unwrap(), "{vt:?},{st}");
        assert!(!msgs[0].reject, "{vt:?},{st}");

        if vt == MessageType::MsgVote {
            // A real vote moves us to the new term as a follower.
            assert_eq!(r.state, StateRole::Follower, "{vt:?},{st}");
            assert_eq!(r.term, new_term, "{vt:?},{st}");
            assert_eq!(r.vote, 2, "{vt:?},{st}");
        } else {
            // A pre-vote changes nothing.
            assert_eq!(r.state, st, "{vt:?},{st}");
            assert_eq!(r.term, orig_term, "{vt:?},{st}");
            // Followers and pre-candidates have not voted; candidates and
            // leaders voted for themselves.
            assert!(
                r.vote == INVALID_ID || r.vote == 1,
                "{vt:?},{st}: vote {}",
                r.vote
            );
        }
    }
}

/// etcd: TestVoteFromAnyState
#[test]
fn test_vote_from_any_state() {
    run_vote_from_any_state(MessageType::MsgVote);
}

/// etcd: TestPreVoteFromAnyState
#[test]
fn test_pre_vote_from_any_state() {
    run_vote_from_any_state(MessageType::MsgPreVote);
}

/// etcd: TestDuelingCandidates
#[test]
fn test_dueling_candidates() {
    let mut nt = Network::new(vec![
        super::peer(node3(1, 10)),
        super::peer(node3(2, 10)),
        super::peer(node3(3, 10)),
    ]);
    nt.cut(1, 3);

    nt.campaign(1);
    nt.campaign(3);

    // 1 wins with the votes of 1 and 2.
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    // 3 has its own vote and 2's rejection: still campaigning.
    assert_eq!(nt.peer(3).state, StateRole::Candidate);

    nt.recover();

    // 3 campaigns in a higher term and disrupts leader 1, but 1 and 2 both
    // reject it since its log is behind: everyone ends a follower.
    nt.campaign(3);
    assert_eq!(nt.peer(3).state, StateRole::Follower);

    let tests = [
        (1u64, StateRole::Follower, 2u64, 1u64),
        (2, StateRole::Follower, 2, 1),
        (3, StateRole::Follower, 2, 0),
    ];
    for (i, (id, state, term, last_index)) in tests.into_iter().enumerate() {
        let sm = nt.peer(id);
        assert_eq!(sm.state, state, "#{i}");
        assert_eq!(sm.term, term, "#{i}");
        assert_eq!(sm.raft_log.last_index(), last_index, "#{i}");
    }
}

/// etcd: TestDuelingPreCandidates
#[test]
fn test_dueling_pre_candidates() {
    let mk = |id| {
        let mut c = new_test_config(id, 10, 1);
        c.pre_vote = true;
        new_test_raft_with_config(&c, new_test_storage(&[1, 2, 3], &[]))
    };
    let mut nt = Network::new(vec![
        super::peer(mk(1)),
        super::peer(mk(2)),
        super::peer(mk(3)),
    ]);
    nt.cut(1, 3);

    nt.campaign(1);
    nt.campaign(3);

    // 1 wins with the votes of 1 and 2.
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    // 3's pre-vote is rejected by 2: it returns to follower.
    assert_eq!(nt.peer(3).state, StateRole::Follower);

    nt.recover();

    // With pre-vote, 3 campaigning again does not disrupt the leader.
    nt.campaign(3);

    let tests = [
        (1u64, StateRole::Leader, 1u64, 1u64),
        (2, StateRole::Follower, 1, 1),
        (3, StateRole::Follower, 1, 0),
    ];
    for (i, (id, state, term, last_index)) in tests.into_iter().enumerate() {
        let sm = nt.peer(id);
        assert_eq!(sm.state, state, "#{i}");
        assert_eq!(sm.term, term, "#{i}");
        assert_eq!(sm.raft_log.last_index(), last_index, "#{i}");
    }
}

/// etcd: TestCandidateConcede
#[test]
fn test_candidate_concede() {
    let mut tt = Network::new(vec![None, None, None]);
    tt.isolate(1);

    tt.campaign(1);
    tt.campaign(3);

    // Heal the partition and have 3 heartbeat.
    tt.recover();
    tt.send(vec![msg(MessageType::MsgBeat, 3, 3)]);

    // A proposal on 3 sends an append to 1, and a heartbeat spreads the commit.
    let data: &'static [u8] = b"force follower";
    tt.propose(3, data);
    tt.send(vec![msg(MessageType::MsgBeat, 3, 3)]);

    let a = tt.peer(1);
    assert_eq!(a.state, StateRole::Follower);
    assert_eq!(a.term, 1);

    let want = [ent(1, 1), data_ent(1, 2, data)];
    for id in 1..=3u64 {
        assert_log(tt.peer(id), &want, &format!("node {id}"));
    }
}

/// etcd: TestSingleNodeCandidate
#[test]
fn test_single_node_candidate() {
    let mut tt = Network::new(vec![None]);
    tt.campaign(1);
    assert_eq!(tt.peer(1).state, StateRole::Leader);
}

/// etcd: TestSingleNodePreCandidate
#[test]
fn test_single_node_pre_candidate() {
    let mut tt = Network::new_with_config(Some(&pre_vote_config), vec![None]);
    tt.campaign(1);
    assert_eq!(tt.peer(1).state, StateRole::Leader);
}

/// etcd: TestOldMessages
#[test]
fn test_old_messages() {
    let mut tt = Network::new(vec![None, None, None]);
    // Node 1 leads in term 3.
    tt.campaign(1);
    tt.campaign(2);
    tt.campaign(1);
    // An append from the leader of term 2 must be ignored.
    let mut m = msg_term(MessageType::MsgApp, 2, 1, 2);
    m.entries = vec![ent(2, 3)];
    tt.send(vec![m]);
    // Commit a new entry.
    tt.propose(1, b"somedata");

    let want = [ent(1, 1), ent(2, 2), ent(3, 3), data_ent(3, 4, b"somedata")];
    for id in 1..=3u64 {
        assert_log(tt.peer(id), &want, &format!("node {id}"));
    }
}

/// etcd: TestPastElectionTimeout
#[test]
fn test_past_election_timeout() {
    // (elapsed ticks, probability of being past the timeout, round to 0.1)
    let tests = [
        (5u32, 0.0f64, false),
        (10, 0.1, true),
        (13, 0.4, true),
        (15, 0.6, true),
        (18, 0.9, true),
        (20, 1.0, false),
    ];
    for (i, (elapse, wprob, round)) in tests.into_iter().enumerate() {
        let mut sm = new_test_raft(1, 10, 1, new_test_storage(&[1], &[]));
        sm.election_elapsed = elapse;
        let mut c = 0;
        for _ in 0..10000 {
            sm.reset_randomized_election_timeout();
            if sm.past_election_timeout() {
                c += 1;
            }
        }
        let mut got = c as f64 / 10000.0;
        if round {
            got = (got * 10.0 + 0.5).floor() / 10.0;
        }
        assert_eq!(got, wprob, "#{i}");
    }
}

/// etcd: TestStepIgnoreOldTermMsg
#[test]
fn test_step_ignore_old_term_msg() {
    // raftlet: the role's step function cannot be swapped for a spy, so the
    // test checks that none of its effects happen: a follower stepping an
    // append would take its sender as leader, reset its election timer,
    // append and answer.
    let mut sm = new_test_raft(1, 10, 1, new_test_storage(&[1], &[]));
    sm.term = 2;
    sm.election_elapsed = 3;
    let mut m = msg_term(MessageType::MsgApp, 2, 1, sm.term - 1);
    m.entries = vec![ent(1, 1)];
    m.commit = 1;
    sm.step(m).expect("step");
    assert_eq!(sm.state, StateRole::Follower);
    assert_eq!(sm.term, 2);
    assert_eq!(sm.lead, INVALID_ID);
    assert_eq!(sm.election_elapsed, 3);
    assert_eq!(sm.raft_log.last_index(), 0);
    assert_eq!(sm.raft_log.committed, 0);
    assert!(sm.read_messages().is_empty());
}

fn run_recv_msg_vote(msg_type: MessageType) {
    // (state, index, log term, voted for, want reject)
    let tests = [
        (StateRole::Follower, 0u64, 0u64, INVALID_ID, true),
        (StateRole::Follower, 0, 1, INVALID_ID, true),
        (StateRole::Follower, 0, 2, INVALID_ID, true),
        (StateRole::Follower, 0, 3, INVALID_ID, false),
        (StateRole::Follower, 1, 0, INVALID_ID, true),
        (StateRole::Follower, 1, 1, INVALID_ID, true),
        (StateRole::Follower, 1, 2, INVALID_ID, true),
        (StateRole::Follower, 1, 3, INVALID_ID, false),
        (StateRole::Follower, 2, 0, INVALID_ID, true),
        (StateRole::Follower, 2, 1, INVALID_ID, true),
        (StateRole::Follower, 2, 2, INVALID_ID, false),
        (StateRole::Follower, 2, 3, INVALID_ID, false),
        (StateRole::Follower, 3, 0, INVALID_ID, true),
        (StateRole::Follower, 3, 1, INVALID_ID, true),
        (StateRole::Follower, 3, 2, INVALID_ID, false),
        (StateRole::Follower, 3, 3, INVALID_ID, false),
        (StateRole::Follower, 3, 2, 2, false),
        (StateRole::Follower, 3, 2, 1, true),
        (StateRole::Leader, 3, 3, 1, true),
        (StateRole::PreCandidate, 3, 3, 1, true),
        (StateRole::Candidate, 3, 3, 1, true),
    ];
    for (i, (state, index, log_term, vote_for, wreject)) in tests.into_iter().enumerate() {
        // etcd swaps in a log holding entries of term 2 at indexes 1 and 2;
        // building the node over such a storage gives the same log.
        let s = new_test_storage(&[1], &[]);
        s.wl().append(&[ent(2, 1), ent(2, 2)]).expect("append");
        let mut sm = new_test_raft(1, 10, 1, s);
        sm.state = state;
        sm.vote = vote_for;
        // Both sides are in the same term: only the logs and the vote differ.
        let term = sm.raft_log.last_entry_id().term.max(log_term);
        sm.term = term;
        let mut m = msg_term(msg_type, 2, 0, term);
        m.index = index;
        m.log_term = log_term;
        let _ = sm.step(m);

        let msgs = sm.read_messages();
        assert_eq!(msgs.len(), 1, "#{i}: {msgs:?}");
        assert_eq!(msgs[0].msg_type, msg_type.vote_response().unwrap(), "#{i}");
        assert_eq!(msgs[0].reject, wreject, "#{i}");
    }
}

/// etcd: TestRecvMsgVote
#[test]
fn test_recv_msg_vote() {
    run_recv_msg_vote(MessageType::MsgVote);
}

/// etcd: TestRecvMsgPreVote
#[test]
fn test_recv_msg_pre_vote() {
    run_recv_msg_vote(MessageType::MsgPreVote);
}

/// etcd: TestStateTransition
#[test]
fn test_state_transition() {
    use StateRole::{Candidate, Follower, Leader, PreCandidate};
    // (from, to, allowed, want term, want lead)
    let tests = [
        (Follower, Follower, true, 1u64, INVALID_ID),
        (Follower, PreCandidate, true, 0, INVALID_ID),
        (Follower, Candidate, true, 1, INVALID_ID),
        (Follower, Leader, false, 0, INVALID_ID),
        (PreCandidate, Follower, true, 0, INVALID_ID),
        (PreCandidate, PreCandidate, true, 0, INVALID_ID),
        (PreCandidate, Candidate, true, 1, INVALID_ID),
        (PreCandidate, Leader, true, 0, 1),
        (Candidate, Follower, true, 0, INVALID_ID),
        (Candidate, PreCandidate, true, 0, INVALID_ID),
        (Candidate, Candidate, true, 1, INVALID_ID),
        (Candidate, Leader, true, 0, 1),
        (Leader, Follower, true, 1, INVALID_ID),
        (Leader, PreCandidate, false, 0, INVALID_ID),
        (Leader, Candidate, false, 1, INVALID_ID),
        (Leader, Leader, true, 0, 1),
    ];
    for (i, (from, to, wallow, wterm, wlead)) in tests.into_iter().enumerate() {
        let mut sm = new_test_raft(1, 10, 1, new_test_storage(&[1], &[]));
        sm.state = from;
        // An invalid transition panics, as in etcd.
        let res = catch_unwind(AssertUnwindSafe(|| {
            match to {
                Follower => sm.become_follower(wterm, wlead),
                PreCandidate => sm.become_pre_candidate(),
                Candidate => sm.become_candidate(),
                Leader => sm.become_leader(),
            }
            (sm.term, sm.lead)
        }));
        match res {
            Ok((term, lead)) => {
                assert!(wallow, "#{i}: {from} -> {to} should have panicked");
                assert_eq!(term, wterm, "#{i}");
                assert_eq!(lead, wlead, "#{i}");
            }
            Err(_) => assert!(!wallow, "#{i}: {from} -> {to} should be allowed"),
        }
    }
}

/// etcd: TestAllServerStepdown
#[test]
fn test_all_server_stepdown() {
    // (state, want state, want term, want last index)
    let tests = [
        (StateRole::Follower, StateRole::Follower, 3u64, 0u64),
        (StateRole::PreCandidate, StateRole::Follower, 3, 0),
        (StateRole::Candidate, StateRole::Follower, 3, 0),
        (StateRole::Leader, StateRole::Follower, 3, 1),
    ];
    let tmsg_types = [MessageType::MsgVote, MessageType::MsgApp];
    let tterm = 3;
    for (i, (state, wstate, wterm, windex)) in tests.into_iter().enumerate() {
        let mut sm = node3(1, 10);
        match state {
            StateRole::Follower => sm.become_follower(1, INVALID_ID),
            StateRole::PreCandidate => sm.become_pre_candidate(),
            StateRole::Candidate => sm.become_candidate(),
            StateRole::Leader => {
                sm.become_candidate();
                sm.become_leader();
            }
        }
        for (j, t) in tmsg_types.into_iter().enumerate() {
            let mut m = msg_term(t, 2, 0, tterm);
            m.log_term = tterm;
            let _ = sm.step(m);

            assert_eq!(sm.state, wstate, "#{i}.{j}");
            assert_eq!(sm.term, wterm, "#{i}.{j}");
            assert_eq!(sm.raft_log.last_index(), windex, "#{i}.{j}");
            assert_eq!(sm.raft_log.all_entries().len() as u64, windex, "#{i}.{j}");
            let wlead = if t == MessageType::MsgVote {
                INVALID_ID
            } else {
                2
            };
            assert_eq!(sm.lead, wlead, "#{i}.{j}");
        }
    }
}

/// A candidate that hears a heartbeat or append from the leader of its
/// term steps down and adopts the leader's term.
fn run_candidate_reset_term(mt: MessageType) {
    let mut nt = Network::new(vec![
        super::peer(node3(1, 10)),
        super::peer(node3(2, 10)),
        super::peer(node3(3, 10)),
    ]);

    nt.campaign(1);
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(2).state, StateRole::Follower);
    assert_eq!(nt.peer(3).state, StateRole::Follower);

    // Isolate 3 and raise the term of the others.
    nt.isolate(3);
    nt.campaign(2);
    nt.campaign(1);
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(2).state, StateRole::Follower);

    // The isolated node 3 times out and campaigns.
    let c = nt.peer_mut(3);
    c.reset_randomized_election_timeout();
    for _ in 0..c.randomized_election_timeout {
        c.tick();
    }
    c.advance_messages_after_append();
    assert_eq!(c.state, StateRole::Candidate);

    nt.recover();

    // The leader's message makes the candidate a follower in its term.
    let a_term = nt.peer(1).term;
    nt.send(vec![msg_term(mt, 1, 3, a_term)]);
    assert_eq!(nt.peer(3).state, StateRole::Follower);
    assert_eq!(nt.peer(3).term, a_term);
}

/// etcd: TestCandidateResetTermMsgHeartbeat
#[test]
fn test_candidate_reset_term_msg_heartbeat() {
    run_candidate_reset_term(MessageType::MsgHeartbeat);
}

/// etcd: TestCandidateResetTermMsgApp
#[test]
fn test_candidate_reset_term_msg_app() {
    run_candidate_reset_term(MessageType::MsgApp);
}

/// A (pre-)candidate's self-vote that is delivered after it learned it
/// lost the election is ignored.
fn run_candidate_self_vote_after_lost_election(pre_vote: bool) {
    let mut sm = node3(1, 5);
    sm.pre_vote = pre_vote;

    // Node 1 campaigns.
    sm.step(msg(MessageType::MsgHup, 1, 1)).expect("hup");
    let steps = take_messages_after_append(&mut sm);

    // Before its self-vote is durable, it learns that 2 won the election.
    let term = sm.term;
    sm.step(msg_term(MessageType::MsgHeartbeat, 2, 1, term))
        .expect("heartbeat");
    assert_eq!(sm.state, StateRole::Follower);

    // Delivering the self-vote now changes nothing...
    step_or_send(&mut sm, steps);
    assert_eq!(sm.state, StateRole::Follower);

    // ...and it is not counted.
    let (granted, _, _) = sm.trk.tally_votes();
    assert_eq!(granted, 0);
}

/// etcd: TestCandidateSelfVoteAfterLostElection
#[test]
fn test_candidate_self_vote_after_lost_election() {
    run_candidate_self_vote_after_lost_election(false);
}

/// etcd: TestCandidateSelfVoteAfterLostElectionPreVote
#[test]
fn test_candidate_self_vote_after_lost_election_pre_vote() {
    run_candidate_self_vote_after_lost_election(true);
}

/// etcd: TestCandidateDeliversPreCandidateSelfVoteAfterBecomingCandidate
#[test]
fn test_candidate_delivers_pre_candidate_self_vote_after_becoming_candidate() {
    let mut sm = node3(1, 5);
    sm.pre_vote = true;

    // Node 1 starts a pre-vote round.
    sm.step(msg(MessageType::MsgHup, 1, 1)).expect("hup");
    assert_eq!(sm.state, StateRole::PreCandidate);
    let steps = take_messages_after_append(&mut sm);

    // Both peers grant the pre-vote (for term + 1) before the self-vote is
    // durable: node 1 becomes a candidate.
    let term = sm.term;
    sm.step(msg_term(MessageType::MsgPreVoteResp, 2, 1, term + 1))
        .expect("pre-vote resp");
    sm.step(msg_term(MessageType::MsgPreVoteResp, 3, 1, term + 1))
        .expect("pre-vote resp");
    assert_eq!(sm.state, StateRole::Candidate);

    // The late pre-vote self-vote does not change that...
    step_or_send(&mut sm, steps);
    assert_eq!(sm.state, StateRole::Candidate);

    let steps = take_messages_after_append(&mut sm);

    // ...and is not counted as a vote.
    let (granted, _, _) = sm.trk.tally_votes();
    assert_eq!(granted, 0);

    // One vote from 2 is not a quorum.
    let term = sm.term;
    sm.step(msg_term(MessageType::MsgVoteResp, 2, 1, term))
        .expect("vote resp");
    assert_eq!(sm.state, StateRole::Candidate);

    // With the (real) self-vote it is.
    step_or_send(&mut sm, steps);
    assert_eq!(sm.state, StateRole::Leader);
}

/// etcd: TestLeaderStepdownWhenQuorumActive
#[test]
fn test_leader_stepdown_when_quorum_active() {
    let mut sm = node3(1, 5);
    sm.check_quorum = true;
    sm.become_candidate();
    sm.become_leader();

    for _ in 0..=sm.election_timeout {
        let term = sm.term;
        sm.step(msg_term(MessageType::MsgHeartbeatResp, 2, 0, term))
            .expect("heartbeat resp");
        sm.tick();
    }
    assert_eq!(sm.state, StateRole::Leader);
}

/// etcd: TestLeaderStepdownWhenQuorumLost
#[test]
fn test_leader_stepdown_when_quorum_lost() {
    let mut sm = node3(1, 5);
    sm.check_quorum = true;
    sm.become_candidate();
    sm.become_leader();

    for _ in 0..=sm.election_timeout {
        sm.tick();
    }
    assert_eq!(sm.state, StateRole::Follower);
}

/// etcd: TestLeaderSupersedingWithCheckQuorum
#[test]
fn test_leader_superseding_with_check_quorum() {
    let mut nt = Network::new(vec![
        super::peer(node3_check_quorum(1)),
        super::peer(node3_check_quorum(2)),
        super::peer(node3_check_quorum(3)),
    ]);
    let b = nt.peer_mut(2);
    b.randomized_election_timeout = b.election_timeout + 1;
    for _ in 0..b.election_timeout {
        b.tick();
    }
    nt.campaign(1);

    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(3).state, StateRole::Follower);

    nt.campaign(3);
    // 2 ignored 3's request: it heard from the leader within its election timeout.
    assert_eq!(nt.peer(3).state, StateRole::Candidate);

    // Once 2's election timeout has elapsed, 3 can win.
    let b = nt.peer_mut(2);
    for _ in 0..b.election_timeout {
        b.tick();
    }
    nt.campaign(3);
    assert_eq!(nt.peer(3).state, StateRole::Leader);
}

/// etcd: TestLeaderElectionWithCheckQuorum
#[test]
fn test_leader_election_with_check_quorum() {
    let mut nt = Network::new(vec![
        super::peer(node3_check_quorum(1)),
        super::peer(node3_check_quorum(2)),
        super::peer(node3_check_quorum(3)),
    ]);
    let set_timeouts = |nt: &mut Network| {
        let a = nt.peer_mut(1);
        a.randomized_election_timeout = a.election_timeout + 1;
        let b = nt.peer_mut(2);
        b.randomized_election_timeout = b.election_timeout + 2;
    };
    set_timeouts(&mut nt);

    // Right after start, votes are granted without waiting for a timeout.
    nt.campaign(1);
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(3).state, StateRole::Follower);

    // The role changes redrew the timeouts: set them again.
    set_timeouts(&mut nt);
    for id in [1, 2] {
        let r = nt.peer_mut(id);
        for _ in 0..r.election_timeout {
            r.tick();
        }
    }
    nt.campaign(3);

    assert_eq!(nt.peer(1).state, StateRole::Follower);
    assert_eq!(nt.peer(3).state, StateRole::Leader);
}

/// A candidate of a higher term can disrupt a leader that still holds its
/// lease; the leader steps down into the candidate's term.
///
/// etcd: TestFreeStuckCandidateWithCheckQuorum
#[test]
fn test_free_stuck_candidate_with_check_quorum() {
    let mut nt = Network::new(vec![
        super::peer(node3_check_quorum(1)),
        super::peer(node3_check_quorum(2)),
        super::peer(node3_check_quorum(3)),
    ]);
    let b = nt.peer_mut(2);
    b.randomized_election_timeout = b.election_timeout + 1;
    for _ in 0..b.election_timeout {
        b.tick();
    }
    nt.campaign(1);

    nt.isolate(1);
    nt.campaign(3);

    assert_eq!(nt.peer(2).state, StateRole::Follower);
    assert_eq!(nt.peer(3).state, StateRole::Candidate);
    assert_eq!(nt.peer(3).term, nt.peer(2).term + 1);

    // Campaign again, for good measure.
    nt.campaign(3);

    assert_eq!(nt.peer(2).state, StateRole::Follower);
    assert_eq!(nt.peer(3).state, StateRole::Candidate);
    assert_eq!(nt.peer(3).term, nt.peer(2).term + 2);

    nt.recover();
    let a_term = nt.peer(1).term;
    nt.send(vec![msg_term(MessageType::MsgHeartbeat, 1, 3, a_term)]);

    // 3's answer disrupts the leader, which frees the stuck candidate.
    assert_eq!(nt.peer(1).state, StateRole::Follower);
    assert_eq!(nt.peer(3).term, nt.peer(1).term);

    // This time 3 wins.
    nt.campaign(3);
    assert_eq!(nt.peer(3).state, StateRole::Leader);
}

/// etcd: TestNonPromotableVoterWithCheckQuorum
#[test]
fn test_non_promotable_voter_with_check_quorum() {
    let mut a = new_test_raft(1, 10, 1, new_test_storage(&[1, 2], &[]));
    let mut b = new_test_raft(2, 10, 1, new_test_storage(&[1], &[]));
    a.check_quorum = true;
    b.check_quorum = true;

    let mut nt = Network::new(vec![super::peer(a), super::peer(b)]);
    let b = nt.peer_mut(2);
    b.randomized_election_timeout = b.election_timeout + 1;
    // The network gave 2 a place in the configuration: remove it again so
    // that it cannot campaign.
    b.apply_conf_change(&conf_change(ConfChangeType::ConfChangeRemoveNode, 2))
        .expect("remove 2");
    assert!(!b.promotable());

    for _ in 0..b.election_timeout {
        b.tick();
    }
    nt.campaign(1);

    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(2).state, StateRole::Follower);
    assert_eq!(nt.peer(2).lead, 1);
}

/// An isolated follower (or one whose leader's messages are late) times
/// out and campaigns in a higher term; its answer to the leader's late
/// heartbeat makes the leader step down.
///
/// etcd: TestDisruptiveFollower
#[test]
fn test_disruptive_follower() {
    let mk = |id| {
        let mut r = node3_term1(id);
        r.check_quorum = true;
        r
    };
    let mut nt = Network::new(vec![
        super::peer(mk(1)),
        super::peer(mk(2)),
        super::peer(mk(3)),
    ]);

    nt.campaign(1);
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(2).state, StateRole::Follower);
    assert_eq!(nt.peer(3).state, StateRole::Follower);

    // Ticks pass on 3 without anything from the leader (as when a host
    // advances ticks for an election on restart, or messages are slow).
    let n3 = nt.peer_mut(3);
    n3.randomized_election_timeout = n3.election_timeout + 2;
    for _ in 0..n3.randomized_election_timeout - 1 {
        n3.tick();
    }
    // The last tick elapses before a heartbeat arrives: 3 campaigns.
    n3.tick();

    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(2).state, StateRole::Follower);
    assert_eq!(nt.peer(3).state, StateRole::Candidate);
    assert_eq!(nt.peer(1).term, 2);
    assert_eq!(nt.peer(2).term, 2);
    assert_eq!(nt.peer(3).term, 3);

    // The late heartbeat of the leader reaches candidate 3 (its vote
    // requests are still queued); 3 answers in its higher term and the
    // leader steps down, so that a later election can free 3.
    let term = nt.peer(1).term;
    nt.send(vec![msg_term(MessageType::MsgHeartbeat, 1, 3, term)]);

    assert_eq!(nt.peer(1).state, StateRole::Follower);
    assert_eq!(nt.peer(2).state, StateRole::Follower);
    assert_eq!(nt.peer(3).state, StateRole::Candidate);
    assert_eq!(nt.peer(1).term, 3);
    assert_eq!(nt.peer(2).term, 2);
    assert_eq!(nt.peer(3).term, 3);
}

/// With pre-vote, an isolated follower with a shorter log stays a
/// pre-candidate and the leader's late heartbeat does not make it step down.
///
/// etcd: TestDisruptiveFollowerPreVote
#[test]
fn test_disruptive_follower_pre_vote() {
    let mk = |id| {
        let mut r = node3_term1(id);
        r.check_quorum = true;
        r
    };
    let mut nt = Network::new(vec![
        super::peer(mk(1)),
        super::peer(mk(2)),
        super::peer(mk(3)),
    ]);

    nt.campaign(1);
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(2).state, StateRole::Follower);
    assert_eq!(nt.peer(3).state, StateRole::Follower);

    nt.isolate(3);
    nt.propose(1, b"somedata");
    nt.propose(1, b"somedata");
    nt.propose(1, b"somedata");
    for id in 1..=3 {
        nt.peer_mut(id).pre_vote = true;
    }
    nt.recover();
    nt.campaign(3);

    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(2).state, StateRole::Follower);
    assert_eq!(nt.peer(3).state, StateRole::PreCandidate);
    assert_eq!(nt.peer(1).term, 2);
    assert_eq!(nt.peer(2).term, 2);
    assert_eq!(nt.peer(3).term, 2);

    // The late heartbeat does not depose the leader.
    let term = nt.peer(1).term;
    nt.send(vec![msg_term(MessageType::MsgHeartbeat, 1, 3, term)]);
    assert_eq!(nt.peer(1).state, StateRole::Leader);
}

/// A leader that is told to campaign stays leader in its term.
fn run_campaign_while_leader(pre_vote: bool) {
    let mut c = new_test_config(1, 5, 1);
    c.pre_vote = pre_vote;
    let mut r = new_test_raft_with_config(&c, new_test_storage(&[1], &[]));
    assert_eq!(r.state, StateRole::Follower);
    // Step a MsgHup rather than calling campaign: the role check comes first.
    r.step(msg(MessageType::MsgHup, 1, 1)).expect("hup");
    r.advance_messages_after_append();
    assert_eq!(r.state, StateRole::Leader);

    let term = r.term;
    r.step(msg(MessageType::MsgHup, 1, 1)).expect("hup");
    r.advance_messages_after_append();
    assert_eq!(r.state, StateRole::Leader);
    assert_eq!(r.term, term);
}

/// etcd: TestCampaignWhileLeader
#[test]
fn test_campaign_while_leader() {
    run_campaign_while_leader(false);
}

/// etcd: TestPreCampaignWhileLeader
#[test]
fn test_pre_campaign_while_leader() {
    run_campaign_while_leader(true);
}

/// A node that was partitioned away (and fell behind) rejoins as the
/// leader is partitioned away; with pre-vote the cluster must still elect
/// a leader.
///
/// etcd: TestNodeWithSmallerTermCanCompleteElection
#[test]
fn test_node_with_smaller_term_can_complete_election() {
    let mk = |id| {
        let mut r = node3_term1(id);
        r.pre_vote = true;
        r
    };
    let mut nt = Network::new(vec![
        super::peer(mk(1)),
        super::peer(mk(2)),
        super::peer(mk(3)),
    ]);
    // Partition node 3 away.
    nt.cut(1, 3);
    nt.cut(2, 3);

    nt.campaign(1);
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(2).state, StateRole::Follower);

    nt.campaign(3);
    assert_eq!(nt.peer(3).state, StateRole::PreCandidate);

    nt.campaign(2);

    assert_eq!(nt.peer(1).term, 3);
    assert_eq!(nt.peer(2).term, 3);
    assert_eq!(nt.peer(3).term, 1);

    assert_eq!(nt.peer(1).state, StateRole::Follower);
    assert_eq!(nt.peer(2).state, StateRole::Leader);
    assert_eq!(nt.peer(3).state, StateRole::PreCandidate);

    // Bring 3 back and cut off the leader 2, as if it crashed.
    nt.recover();
    nt.cut(2, 1);
    nt.cut(2, 3);

    nt.campaign(3);
    nt.campaign(1);

    assert!(
        nt.peer(1).state == StateRole::Leader || nt.peer(3).state == StateRole::Leader,
        "no leader: 1 is {}, 3 is {}",
        nt.peer(1).state,
        nt.peer(3).state
    );
}

/// After a split vote, the next round elects a leader.
///
/// etcd: TestPreVoteWithSplitVote
#[test]
fn test_pre_vote_with_split_vote() {
    let mk = |id| {
        let mut r = node3_term1(id);
        r.pre_vote = true;
        r
    };
    let mut nt = Network::new(vec![
        super::peer(mk(1)),
        super::peer(mk(2)),
        super::peer(mk(3)),
    ]);
    nt.campaign(1);

    // The leader goes away; both followers campaign at once.
    nt.isolate(1);
    nt.send(vec![
        msg(MessageType::MsgHup, 2, 2),
        msg(MessageType::MsgHup, 3, 3),
    ]);

    assert_eq!(nt.peer(2).term, 3);
    assert_eq!(nt.peer(3).term, 3);
    assert_eq!(nt.peer(2).state, StateRole::Candidate);
    assert_eq!(nt.peer(3).state, StateRole::Candidate);

    // Node 2 times out first.
    nt.campaign(2);

    assert_eq!(nt.peer(2).term, 4);
    assert_eq!(nt.peer(3).term, 4);
    assert_eq!(nt.peer(2).state, StateRole::Leader);
    assert_eq!(nt.peer(3).state, StateRole::Follower);
}

/// A pre-candidate still checks quorum correctly.
///
/// etcd: TestPreVoteWithCheckQuorum
#[test]
fn test_pre_vote_with_check_quorum() {
    let mk = |id| {
        let mut r = node3_term1(id);
        r.pre_vote = true;
        r.check_quorum = true;
        r
    };
    let mut nt = Network::new(vec![
        super::peer(mk(1)),
        super::peer(mk(2)),
        super::peer(mk(3)),
    ]);
    nt.campaign(1);

    // Isolate the leader; 2 and 3 still believe in it.
    nt.isolate(1);

    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(2).state, StateRole::Follower);
    assert_eq!(nt.peer(3).state, StateRole::Follower);

    // 2 ignores 3's pre-vote (its leader is recent); then 2 campaigns.
    nt.campaign(3);
    nt.campaign(2);

    assert!(
        nt.peer(2).state == StateRole::Leader || nt.peer(3).state == StateRole::Follower,
        "2 is {}, 3 is {}",
        nt.peer(2).state,
        nt.peer(3).state
    );
}

/// A cluster in the middle of a rolling restart that turns pre-vote on:
/// 1 leads in term 2, 2 follows in term 2, 3 was partitioned without
/// pre-vote and is a candidate in term 4 with a shorter log. Pre-vote is
/// then turned on for 3 and the partition healed.
///
/// etcd: newPreVoteMigrationCluster
fn new_pre_vote_migration_cluster() -> Network {
    let mut n1 = node3_term1(1);
    let mut n2 = node3_term1(2);
    let n3 = node3_term1(3);
    n1.pre_vote = true;
    n2.pre_vote = true;
    // 3 runs without pre-vote for now, like a replica not yet upgraded.

    let mut nt = Network::new(vec![super::peer(n1), super::peer(n2), super::peer(n3)]);
    nt.campaign(1);

    // Partition 3 away.
    nt.isolate(3);
    nt.propose(1, b"some data");
    nt.campaign(3);
    nt.campaign(3);

    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(2).state, StateRole::Follower);
    assert_eq!(nt.peer(3).state, StateRole::Candidate);
    assert_eq!(nt.peer(1).term, 2);
    assert_eq!(nt.peer(2).term, 2);
    assert_eq!(nt.peer(3).term, 4);

    // Upgrade 3 and heal the partition.
    nt.peer_mut(3).pre_vote = true;
    nt.recover();
    nt
}

/// etcd: TestPreVoteMigrationCanCompleteElection
#[test]
fn test_pre_vote_migration_can_complete_election() {
    let mut nt = new_pre_vote_migration_cluster();

    // The leader goes away.
    nt.isolate(1);

    // Both 2 and 3 campaign.
    nt.campaign(3);
    nt.campaign(2);

    assert_eq!(nt.peer(2).state, StateRole::Follower);
    assert_eq!(nt.peer(3).state, StateRole::PreCandidate);

    nt.campaign(3);
    nt.campaign(2);

    assert!(
        nt.peer(2).state == StateRole::Leader || nt.peer(3).state == StateRole::Follower,
        "2 is {}, 3 is {}",
        nt.peer(2).state,
        nt.peer(3).state
    );
}

/// etcd: TestPreVoteMigrationWithFreeStuckPreCandidate
#[test]
fn test_pre_vote_migration_with_free_stuck_pre_candidate() {
    let mut nt = new_pre_vote_migration_cluster();

    nt.campaign(3);

    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(2).state, StateRole::Follower);
    assert_eq!(nt.peer(3).state, StateRole::PreCandidate);

    // Pre-vote again, for good measure.
    nt.campaign(3);

    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(nt.peer(2).state, StateRole::Follower);
    assert_eq!(nt.peer(3).state, StateRole::PreCandidate);

    let term = nt.peer(1).term;
    nt.send(vec![msg_term(MessageType::MsgHeartbeat, 1, 3, term)]);

    // 3's answer in its higher term disrupts the leader, freeing 3.
    assert_eq!(nt.peer(1).state, StateRole::Follower);
    assert_eq!(nt.peer(3).term, nt.peer(1).term);
}
