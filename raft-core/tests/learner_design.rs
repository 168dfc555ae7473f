//! The scenarios of etcd's learner design document (seeds 000, Chinese, and
//! 001, German: "etcd learner design", figures 1–13), played through the
//! public API only (`RawNode` over `MemoryStorage`, driven by the cluster
//! driver in `tests/common`).
//!
//! raftlet's defaults stay on throughout: pre-vote and check-quorum,
//! `promote_max_lag = 1000`, `max_learners = 1`. A member is added with a
//! conf change that every node applies once committed (the driver does
//! that); the new member's process starts from a storage whose `ConfState`
//! already lists the current voters and itself, as a host does when it
//! starts a member that `member add` announced.
//!
//! Quorum arithmetic used in the comments: a configuration of `n` voters
//! needs `n / 2 + 1` of them (see [`quorum`]); learners never count.

mod common;

use std::collections::BTreeSet;

use common::Cluster;
use raftlet::pb::{
    ConfChange, ConfChangeI, ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2,
    ConfState, EntryType, MessageType,
};
use raftlet::tracker::ProgressState;
use raftlet::{Config, Error, SnapshotStatus, StateRole};

/// raftlet's default election timeout in ticks (randomized in `[10, 20)`).
const ELECTION_TICK: usize = 10;
/// Enough ticks for every randomized election timer to fire many times.
const MANY_TICKS: usize = 10 * 2 * ELECTION_TICK;
/// Check-quorum deposes a leader that lost its quorum within this many
/// ticks (the first check may still see the peers as active).
const STEP_DOWN_TICKS: usize = 2 * ELECTION_TICK + 1;

// ----------------------------------------------------------------------
// Helpers
// ----------------------------------------------------------------------

/// The votes a configuration of `voters` voters needs.
fn quorum(voters: usize) -> usize {
    voters / 2 + 1
}

fn cc(change_type: ConfChangeType, node_id: u64) -> ConfChange {
    ConfChange {
        change_type,
        node_id,
        ..ConfChange::default()
    }
}

fn add_voter(id: u64) -> ConfChange {
    cc(ConfChangeType::ConfChangeAddNode, id)
}

fn add_learner(id: u64) -> ConfChange {
    cc(ConfChangeType::ConfChangeAddLearnerNode, id)
}

fn remove(id: u64) -> ConfChange {
    cc(ConfChangeType::ConfChangeRemoveNode, id)
}

fn v2(transition: ConfChangeTransition, changes: &[(ConfChangeType, u64)]) -> ConfChangeV2 {
    ConfChangeV2 {
        transition,
        changes: changes
            .iter()
            .map(|&(t, id)| ConfChangeSingle::new(t, id))
            .collect(),
        context: None,
    }
}

fn set(ids: &[u64]) -> BTreeSet<u64> {
    ids.iter().copied().collect()
}

/// `ConfState` of a new member: `voters` plus the `learners`.
fn conf_state(voters: &[u64], learners: &[u64]) -> ConfState {
    ConfState {
        voters: voters.to_vec(),
        learners: learners.to_vec(),
        ..ConfState::default()
    }
}

/// The configuration `id` runs with, as comparable sets:
/// (incoming voters, outgoing voters, learners, learners_next, auto_leave).
type Shape = (
    BTreeSet<u64>,
    BTreeSet<u64>,
    BTreeSet<u64>,
    BTreeSet<u64>,
    bool,
);

fn shape(c: &Cluster, id: u64) -> Shape {
    let cfg = c.tracker_config(id);
    (
        cfg.voters.incoming.iter().copied().collect(),
        cfg.voters.outgoing.iter().copied().collect(),
        cfg.learners.clone(),
        cfg.learners_next.clone(),
        cfg.auto_leave,
    )
}

fn simple_shape(voters: &[u64], learners: &[u64]) -> Shape {
    (set(voters), set(&[]), set(learners), set(&[]), false)
}

/// How many of `side` are voters of `id`'s configuration (incoming half).
fn voters_among(c: &Cluster, id: u64, side: &[u64]) -> usize {
    let cfg = c.tracker_config(id);
    side.iter()
        .filter(|n| cfg.voters.incoming.contains(**n))
        .count()
}

fn voter_count(c: &Cluster, id: u64) -> usize {
    c.tracker_config(id).voters.incoming.len()
}

/// Node 1 campaigns and wins; returns its term.
fn elect_1(c: &mut Cluster) -> u64 {
    c.campaign(1);
    assert_eq!(c.leader(), Some(1), "node 1 should win the first election");
    c.term(1)
}

/// Proposes `data` on `id` (stabilizing) and returns the index it got.
fn propose(c: &mut Cluster, id: u64, data: &str) -> u64 {
    c.propose(id, data.to_string())
        .unwrap_or_else(|e| panic!("proposal {data:?} on {id}: {e}"));
    c.last_index(id)
}

/// Proposes `data` on `leader` and asserts it is committed at once and
/// applied by exactly the running nodes `appliers` among `all`.
fn assert_commits(c: &mut Cluster, leader: u64, data: &str, appliers: &[u64], all: &[u64]) {
    let idx = propose(c, leader, data);
    assert!(
        c.committed(leader) >= idx,
        "{data:?} (index {idx}) should commit on leader {leader}, commit is {}",
        c.committed(leader)
    );
    for &id in all {
        let has = c.applied(id).iter().any(|d| d == data);
        assert_eq!(
            has,
            appliers.contains(&id),
            "node {id} applied {data:?}: {has}, expected appliers {appliers:?}"
        );
    }
}

/// Ticks every node `n` times; after every tick asserts that `leader` is
/// the only leader, in `term`, and that none of `voters` left `term`.
fn tick_assert_leader_kept(
    c: &mut Cluster,
    n: usize,
    leader: u64,
    term: u64,
    voters: &[u64],
    what: &str,
) {
    for i in 1..=n {
        c.tick_all();
        assert_eq!(
            c.leaders(),
            vec![leader],
            "{what}: tick {i}: node {leader} should still be the only leader"
        );
        for &v in voters {
            assert_eq!(
                c.term(v),
                term,
                "{what}: tick {i}: node {v} left term {term} (an election happened)"
            );
        }
    }
}

/// Ticks until no running node leads (at most `STEP_DOWN_TICKS`); returns
/// the ticks it took.
fn ticks_until_no_leader(c: &mut Cluster, what: &str) -> usize {
    c.tick_until(STEP_DOWN_TICKS, |c| c.leaders().is_empty())
        .unwrap_or_else(|| {
            panic!("{what}: the leader should step down within {STEP_DOWN_TICKS} ticks")
        })
}

/// Ticks `n` times asserting that no node leads, nobody's term changes (pre-
/// vote keeps them) and no commit index moves.
fn tick_assert_no_leader(c: &mut Cluster, n: usize, what: &str) {
    let ids: Vec<u64> = c
        .ids()
        .into_iter()
        .filter(|id| c.node(*id).running)
        .collect();
    let before: Vec<(u64, u64)> = ids
        .iter()
        .map(|&id| (c.term(id), c.committed(id)))
        .collect();
    for i in 1..=n {
        c.tick_all();
        assert!(
            c.leaders().is_empty(),
            "{what}: tick {i}: {:?} became leader without a quorum",
            c.leaders()
        );
    }
    let after: Vec<(u64, u64)> = ids
        .iter()
        .map(|&id| (c.term(id), c.committed(id)))
        .collect();
    assert_eq!(
        before, after,
        "{what}: (term, commit) of {ids:?} must not move without a quorum"
    );
}

// ----------------------------------------------------------------------
// Figure 1: a new member catching up overloads the leader's link
// ----------------------------------------------------------------------

const FIG01_ENTRIES: usize = 50_000;
const FIG01_BATCH: usize = 1_000;
/// The leader's uplink carries 32 KiB per tick.
const FIG01_BUDGET: u64 = 32 * 1024;

/// Flow control sized for `FIG01_BUDGET`: at most 4 appends of at most
/// 4 KiB of entries (and 8 KiB of payload) in flight to a peer, so the
/// appends waiting on the leader's link stay well under one tick's budget.
fn fig01_flow_control(c: &mut Config) {
    c.max_size_per_msg = 4 * 1024;
    c.max_inflight_msgs = 4;
    c.max_inflight_bytes = 8 * 1024;
}

/// Three voters (leader 1) with 50,000 small committed entries, then node
/// 4 added as a learner and started with an empty log; the leader's uplink
/// gets a budget of `FIG01_BUDGET` bytes per tick. Returns the cluster and
/// the leader's term.
fn fig01_setup(tweak: fn(&mut Config)) -> (Cluster, u64) {
    let mut c = Cluster::new(3, tweak);
    // The failure dump would print appends of thousands of entries; the
    // assertion messages say what went wrong.
    c.dump_on_panic = false;
    let term = elect_1(&mut c);
    for b in 0..FIG01_ENTRIES / FIG01_BATCH {
        let batch = (0..FIG01_BATCH).map(|i| format!("entry-{:010}", b * FIG01_BATCH + i));
        c.propose_batch(1, batch).expect("batch proposal");
    }
    // The empty entry of term 1, then the 50,000 entries.
    let last = c.last_index(1);
    assert_eq!(last, FIG01_ENTRIES as u64 + 1);
    for id in 1..=3 {
        assert_eq!(c.committed(id), last, "node {id} should have committed all");
    }
    c.propose_conf_change(1, add_learner(4))
        .expect("adding a learner");
    assert_eq!(shape(&c, 1), simple_shape(&[1, 2, 3], &[4]));
    c.add_node_with_conf_state(4, conf_state(&[1, 2, 3], &[4]));
    c.set_uplink_budget(1, FIG01_BUDGET);
    (c, term)
}

/// Figure 1 (seed 000 §1 / seed 001 §1, "a new member overloads the
/// leader"): a new, empty member must fetch 50,000 entries from the
/// leader, whose link carries only 32 KiB per tick. Added as a learner and
/// fed under flow control (`max_size_per_msg`, `max_inflight_msgs`,
/// `max_inflight_bytes`), the catch-up never holds the heartbeats back by
/// more than a tick: the leader keeps its role, no term changes at any tick,
/// client writes keep committing, and the learner ends with the full log.
///
/// etcd: TestLearnerLogReplication
/// etcd: TestMsgAppFlowControlFull
/// etcd: TestMsgAppFlowControlRecvHeartbeat
#[test]
fn fig01_new_member_catches_up_as_learner_without_election() {
    let (mut c, term) = fig01_setup(fig01_flow_control);
    let target = c.last_index(1);
    let changes_before = c.changes().len();
    let mut writes: Vec<(usize, u64)> = Vec::new();
    let mut caught_up = None;
    for t in 1..=1_000usize {
        if t % 5 == 0 {
            let idx = propose(&mut c, 1, &format!("write-during-catch-up-{t}"));
            writes.push((t, idx));
        }
        c.tick_all();
        assert_eq!(c.leaders(), vec![1], "tick {t}: node 1 must keep leading");
        for v in 1..=3 {
            assert_eq!(c.term(v), term, "tick {t}: node {v} left term {term}");
        }
        // Client writes stay available: each commits within two ticks even
        // though its appends share the saturated link.
        for &(at, idx) in &writes {
            if t >= at + 2 {
                assert!(
                    c.committed(1) >= idx,
                    "tick {t}: the write proposed at tick {at} (index {idx}) is not committed"
                );
            }
        }
        if c.applied_index(4) >= c.last_index(1) && c.applied_index(4) >= target {
            caught_up = Some(t);
            break;
        }
    }
    let ticks = caught_up.expect("the learner should catch up within 1,000 ticks");
    let stats = c.uplink_stats(1).expect("budgeted uplink").clone();
    eprintln!(
        "fig01: learner caught up {target}+ entries in {ticks} ticks; uplink sent {} bytes in \
         {} messages, {} delayed, max backlog {} bytes / {} messages, max waits {:?}",
        stats.bytes,
        stats.messages,
        stats.delayed,
        stats.max_backlog_bytes,
        stats.max_backlog_len,
        stats.max_wait
    );
    // The link really was the bottleneck: the catch-up took at least the
    // bytes it moved divided by the budget, and appends had to wait.
    assert!(stats.delayed > 0, "the budget never held a message back");
    assert!(
        ticks as u64 >= stats.bytes / FIG01_BUDGET,
        "{} bytes cannot cross a {FIG01_BUDGET} bytes/tick link in {ticks} ticks",
        stats.bytes
    );
    // Flow control bounds what waits on the link below one tick's budget,
    // so a heartbeat never waits more than one tick.
    assert!(
        stats.max_backlog_bytes < FIG01_BUDGET,
        "backlog reached {} bytes",
        stats.max_backlog_bytes
    );
    let hb_wait = stats.max_wait.get(&MessageType::MsgHeartbeat).copied();
    assert!(
        hb_wait.is_some_and(|w| w <= 1),
        "heartbeats waited up to {hb_wait:?} ticks"
    );
    // No role or term change anywhere, except the learner learning the
    // leader and its term once.
    let changes: Vec<_> = c.changes()[changes_before..].to_vec();
    assert!(
        changes
            .iter()
            .all(|ch| ch.id == 4 && ch.to.role == StateRole::Follower && ch.to.lead == 1),
        "unexpected state changes: {changes:?}"
    );
    // The learner holds the same state machine as the leader.
    assert_eq!(c.node(4).applied_data.len(), FIG01_ENTRIES + writes.len());
    assert_eq!(c.node(4).applied_data, c.node(1).applied_data);
    assert_eq!(shape(&c, 4), simple_shape(&[1, 2, 3], &[4]));
}

/// Figure 1, the hazard itself: with raftlet's default flow control
/// (1 MiB per append, 256 appends in flight) the leader puts ~1 MB of
/// entries for the new member on its 32 KiB/tick link at once; its
/// heartbeats to the voters queue behind it for longer than an election
/// timeout and the voters elect a new leader. This is the contrast that
/// shows the flow-control settings of the previous test are what keeps the
/// cluster stable.
///
/// etcd: TestMsgAppFlowControlFull
#[test]
fn fig01_coarse_flow_control_starves_heartbeats_into_an_election() {
    let (mut c, term) = fig01_setup(|_| {});
    let elected = c.tick_until(100, |c| (1..=3).any(|v| c.term(v) > term));
    let t = elected.expect("an election should follow the starved heartbeats");
    // When the voters' election timers fire, the leader's heartbeats to
    // them are still stuck behind the catch-up append on its link.
    let backlog = c.uplink_backlog(1);
    let head = backlog
        .first()
        .expect("the leader's link is still backed up");
    assert_eq!(
        (head.msg_type, head.to),
        (MessageType::MsgApp, 4),
        "tick {t}: the catch-up append to the learner heads the backlog"
    );
    assert!(
        head.entries.len() > 10_000,
        "one append carries most of the log ({} entries)",
        head.entries.len()
    );
    assert!(
        backlog
            .iter()
            .any(|m| m.msg_type == MessageType::MsgHeartbeat && m.to != 4),
        "tick {t}: heartbeats to the voters are stuck behind it"
    );
    assert!(
        c.applied_index(4) < c.last_index(1),
        "the learner had not caught up yet"
    );
    // The election ends with a new leader in a new term: node 1 is deposed
    // although nothing failed but its link.
    c.tick_until(MANY_TICKS, |c| {
        c.leader().is_some_and(|l| l != 1 && c.term(l) > term)
    })
    .expect("a new leader in a new term");
    assert_ne!(c.role(1), StateRole::Leader, "node 1 was deposed");
}

// ----------------------------------------------------------------------
// Figures 2–3: partitions of a 3-voter cluster (the baseline)
// ----------------------------------------------------------------------

/// Figure 2 (seed 000 §2 / seed 001 §2, "network partition"): the leader
/// stays on the side with an active quorum ({1,2} of 3 voters, quorum 2):
/// no election, commits continue on that side.
#[test]
fn fig02_partition_leaves_the_leader_with_a_quorum() {
    let mut c = Cluster::new(3, |_| {});
    let term = elect_1(&mut c);
    assert_eq!(quorum(voter_count(&c, 1)), 2);
    assert_eq!(voters_among(&c, 1, &[1, 2]), 2);
    c.split(&[1, 2], &[3]);
    tick_assert_leader_kept(&mut c, MANY_TICKS, 1, term, &[1, 2, 3], "1+2 | 3");
    assert_commits(&mut c, 1, "majority-side", &[1, 2], &[1, 2, 3]);
}

/// Figure 3 (seed 000 §2.1 / seed 001 §2.1, "leader isolation"): the
/// isolated leader (1 of 3 voters) loses its quorum and reverts to
/// follower through check-quorum; the other two (2 of 3) elect a leader in
/// a new term and keep committing.
///
/// etcd: TestLeaderElectionWithCheckQuorum
#[test]
fn fig03_isolated_leader_steps_down_and_the_majority_elects() {
    let mut c = Cluster::new(3, |_| {});
    let term = elect_1(&mut c);
    c.isolate(&[1]);
    assert_eq!(voters_among(&c, 1, &[1]), 1);
    c.tick_until(MANY_TICKS, |c| {
        c.role(1) != StateRole::Leader && c.leader().is_some_and(|l| l != 1)
    })
    .expect("the old leader steps down and the majority elects");
    let l = c.leader().unwrap();
    assert!(c.term(l) > term, "the new leader has a new term");
    assert_eq!(c.term(1), term, "pre-vote keeps the isolated node's term");
    assert_commits(&mut c, l, "new-leader", &[2, 3], &[1, 2, 3]);
}

// ----------------------------------------------------------------------
// Figures 4–6: partitions right after adding a fourth member
// ----------------------------------------------------------------------

/// Three voters with leader 1; node 4 is added (as a voter or a learner),
/// started and caught up. Returns the cluster and the leader's term.
fn three_plus_one(as_learner: bool) -> (Cluster, u64) {
    let mut c = Cluster::new(3, |_| {});
    let term = elect_1(&mut c);
    propose(&mut c, 1, "before-add");
    let (change, cs) = if as_learner {
        (add_learner(4), conf_state(&[1, 2, 3], &[4]))
    } else {
        (add_voter(4), conf_state(&[1, 2, 3, 4], &[]))
    };
    c.propose_conf_change(1, change).expect("adding node 4");
    c.add_node_with_conf_state(4, cs);
    let last = c.last_index(1);
    c.tick_until(50, |c| c.applied_index(4) >= last)
        .expect("node 4 should catch up");
    let expected = if as_learner {
        simple_shape(&[1, 2, 3], &[4])
    } else {
        simple_shape(&[1, 2, 3, 4], &[])
    };
    for id in 1..=4 {
        assert_eq!(shape(&c, id), expected, "configuration of node {id}");
    }
    assert_eq!(c.leader(), Some(1));
    assert_eq!(c.term(1), term);
    (c, term)
}

/// Figure 4 (seed 000 §2.2 / seed 001 §2.2, "split 3+1"): after a fourth
/// voter joins, a partition {1,2,4} | {3} leaves the leader's side with 3
/// of the 4 voters, exactly the quorum: no election, commits continue.
#[test]
fn fig04_split_3_plus_1_after_adding_a_voter_keeps_the_leader() {
    let (mut c, term) = three_plus_one(false);
    // 4 voters -> quorum 3; the leader's side holds 3 of them.
    assert_eq!(voter_count(&c, 1), 4);
    assert_eq!(quorum(4), 3);
    assert_eq!(voters_among(&c, 1, &[1, 2, 4]), 3);
    c.split(&[1, 2, 4], &[3]);
    tick_assert_leader_kept(&mut c, MANY_TICKS, 1, term, &[1, 2, 3, 4], "3+1 split");
    assert_commits(&mut c, 1, "after-3+1", &[1, 2, 4], &[1, 2, 3, 4]);
}

/// Figure 4 with the new member added as a learner: the voters stay
/// {1,2,3} (quorum 2), the leader's side {1,2} still holds it and the
/// learner on the leader's side keeps receiving the log.
///
/// etcd: TestLearnerLogReplication
#[test]
fn fig04_split_3_plus_1_after_adding_a_learner_keeps_the_leader() {
    let (mut c, term) = three_plus_one(true);
    // 3 voters -> quorum 2; the leader's side holds voters 1 and 2.
    assert_eq!(voter_count(&c, 1), 3);
    assert_eq!(quorum(3), 2);
    assert_eq!(voters_among(&c, 1, &[1, 2, 4]), 2);
    c.split(&[1, 2, 4], &[3]);
    tick_assert_leader_kept(&mut c, MANY_TICKS, 1, term, &[1, 2, 3], "3+1 split");
    assert_commits(&mut c, 1, "after-3+1", &[1, 2, 4], &[1, 2, 3, 4]);
}

/// Figure 5 (seed 000 §2.3 / seed 001 §2.3, "split 2+2"): after a fourth
/// voter joins, a partition {1,2} | {3,4} leaves each side with 2 of 4
/// voters, below the quorum of 3: check-quorum deposes the leader, neither
/// side can elect one (pre-vote keeps the terms), nothing commits until
/// the partition heals.
#[test]
fn fig05_split_2_plus_2_after_adding_a_voter_loses_the_leader() {
    let (mut c, term) = three_plus_one(false);
    // 4 voters -> quorum 3; each side holds only 2.
    assert_eq!(quorum(voter_count(&c, 1)), 3);
    assert_eq!(voters_among(&c, 1, &[1, 2]), 2);
    assert_eq!(voters_among(&c, 1, &[3, 4]), 2);
    c.split(&[1, 2], &[3, 4]);
    let commit = c.committed(1);
    let idx = propose(&mut c, 1, "during-2+2");
    assert!(
        c.committed(1) == commit && idx > commit,
        "2 acks of 4 voters must not commit"
    );
    let t = ticks_until_no_leader(&mut c, "2+2 split");
    assert!(t > 0, "the leader steps down on a check-quorum tick");
    assert_eq!(
        c.node_mut(1).rn.propose("refused".to_string()),
        Err(Error::ProposalDropped),
        "without a leader proposals are dropped"
    );
    tick_assert_no_leader(&mut c, MANY_TICKS, "2+2 split");
    for id in 1..=4 {
        assert_eq!(c.term(id), term, "pre-vote keeps node {id}'s term");
    }
    // Healing restores a quorum and a leader.
    c.heal();
    let leader_back = c.tick_until(MANY_TICKS, |c| c.leader().is_some());
    assert!(leader_back.is_some(), "a leader is elected after healing");
    let l = c.leader().unwrap();
    assert_commits(&mut c, l, "after-heal", &[1, 2, 3, 4], &[1, 2, 3, 4]);
}

/// Figure 5 with the new member added as a learner: {1,2} | {3,4} leaves
/// the leader's side with voters 1 and 2, the quorum of the 3 voters; the
/// leader stays and commits continue (the learner across the split misses
/// them).
#[test]
fn fig05_split_2_plus_2_after_adding_a_learner_keeps_the_leader() {
    let (mut c, term) = three_plus_one(true);
    // 3 voters -> quorum 2; the leader's side holds 2.
    assert_eq!(quorum(voter_count(&c, 1)), 2);
    assert_eq!(voters_among(&c, 1, &[1, 2]), 2);
    c.split(&[1, 2], &[3, 4]);
    tick_assert_leader_kept(&mut c, MANY_TICKS, 1, term, &[1, 2, 3], "2+2 split");
    assert_commits(&mut c, 1, "during-2+2", &[1, 2], &[1, 2, 3, 4]);
}

/// Figure 6 (seed 000 §2.4 / seed 001 §2.4, "quorum lost"): a partition
/// first cuts node 3 off a 3-voter cluster (2 of 3 up, quorum 2: fine);
/// then voter 4 is added while it cannot be reached. The change commits
/// under the old configuration, but the new one has 4 voters, quorum 3,
/// and only 2 reachable: the leader steps down and nothing commits.
///
/// etcd: TestAddNodeCheckQuorum
#[test]
fn fig06_partition_then_add_voter_loses_quorum() {
    let mut c = Cluster::new(3, |_| {});
    let term = elect_1(&mut c);
    c.isolate(&[3]);
    // 3 voters -> quorum 2; 1 and 2 are up.
    assert_eq!(quorum(voter_count(&c, 1)), 2);
    assert_commits(&mut c, 1, "while-3-is-away", &[1, 2], &[1, 2, 3]);
    // Node 4 is announced but its process is not reachable (never runs).
    c.propose_conf_change(1, add_voter(4))
        .expect("adding voter 4");
    for id in [1, 2] {
        assert_eq!(shape(&c, id), simple_shape(&[1, 2, 3, 4], &[]));
    }
    // 4 voters -> quorum 3; only 1 and 2 are reachable.
    assert_eq!(quorum(voter_count(&c, 1)), 3);
    assert_eq!(voters_among(&c, 1, &[1, 2]), 2);
    let commit = c.committed(1);
    let idx = propose(&mut c, 1, "after-add");
    assert!(
        idx > commit && c.committed(1) == commit,
        "2 of 4 cannot commit"
    );
    ticks_until_no_leader(&mut c, "quorum lost");
    tick_assert_no_leader(&mut c, MANY_TICKS, "quorum lost");
    assert_eq!(c.term(1), term, "pre-vote keeps the term");
}

/// Figure 6 with the new member added as a learner: adding it does not
/// change the quorum (2 of the 3 voters), so the partitioned cluster keeps
/// its leader and keeps committing.
#[test]
fn fig06_partition_then_add_learner_keeps_the_leader() {
    let mut c = Cluster::new(3, |_| {});
    let term = elect_1(&mut c);
    c.isolate(&[3]);
    c.propose_conf_change(1, add_learner(4))
        .expect("adding learner 4");
    for id in [1, 2] {
        assert_eq!(shape(&c, id), simple_shape(&[1, 2, 3], &[4]));
    }
    // Still 3 voters -> quorum 2, and 1 and 2 are up.
    assert_eq!(quorum(voter_count(&c, 1)), 2);
    assert_eq!(voters_among(&c, 1, &[1, 2]), 2);
    tick_assert_leader_kept(&mut c, MANY_TICKS, 1, term, &[1, 2, 3], "learner added");
    assert_commits(&mut c, 1, "after-learner-add", &[1, 2], &[1, 2, 3]);
}

// ----------------------------------------------------------------------
// Figures 7–9: adding a member whose process is not (yet) running
// ----------------------------------------------------------------------

/// Figure 7 (seed 000 §2.4 / seed 001 §2.4, "member add is two steps"):
/// adding a voter to a 1-node cluster raises the quorum to 2 before the
/// new process runs; the leader cannot commit and check-quorum deposes it.
/// Once the new member starts (step two), an election restores a leader
/// and the write stuck in between commits.
///
/// etcd: TestAddNodeCheckQuorum
#[test]
fn fig07_adding_a_voter_to_a_single_node_cluster_forces_an_election() {
    let mut c = Cluster::new(1, |_| {});
    let term = elect_1(&mut c);
    assert_commits(&mut c, 1, "solo", &[1], &[1]);
    // Step one: `member add`.
    c.propose_conf_change(1, add_voter(2))
        .expect("adding voter 2");
    assert_eq!(shape(&c, 1), simple_shape(&[1, 2], &[]));
    // 2 voters -> quorum 2; only node 1 runs.
    assert_eq!(quorum(voter_count(&c, 1)), 2);
    let idx = propose(&mut c, 1, "between-the-steps");
    assert!(c.committed(1) < idx, "1 ack of 2 voters cannot commit");
    ticks_until_no_leader(&mut c, "new voter not started");
    // Step two: the new member's process starts.
    c.add_node_with_conf_state(2, conf_state(&[1, 2], &[]));
    let t = c.tick_until(MANY_TICKS, |c| c.leader().is_some());
    assert!(t.is_some(), "an election restores a leader");
    // Node 2's log is empty, so only node 1 can win, in a new term.
    assert_eq!(c.leader(), Some(1));
    assert!(c.term(1) > term, "the leader came back through an election");
    c.tick_until(MANY_TICKS, |c| c.committed(2) >= idx)
        .expect("the write made between the steps commits");
    for id in [1, 2] {
        assert!(c.applied(id).contains(&"between-the-steps".to_string()));
    }
}

/// Figure 8 (seed 000 §3 / seed 001 §3, "misconfigured member"): the new
/// voter's address is wrong, so its process never runs. The 1-node cluster
/// loses its quorum for good, and the mistake cannot be undone: the
/// removal proposed right away never commits (it needs the missing
/// member's ack), and once the leader stepped down proposals are dropped.
///
/// etcd: TestAddNodeCheckQuorum
#[test]
fn fig08_misconfigured_voter_in_single_node_cluster_cannot_be_removed() {
    let mut c = Cluster::new(1, |_| {});
    let term = elect_1(&mut c);
    c.propose_conf_change(1, add_voter(2))
        .expect("adding voter 2");
    // The rollback while node 1 still leads: appended, never committed.
    let commit = c.committed(1);
    c.propose_conf_change(1, remove(2))
        .expect("the removal is appended");
    let rollback_idx = c.last_index(1);
    assert!(rollback_idx > commit && c.committed(1) == commit);
    ticks_until_no_leader(&mut c, "misconfigured voter");
    tick_assert_no_leader(&mut c, MANY_TICKS, "misconfigured voter");
    assert_eq!(shape(&c, 1), simple_shape(&[1, 2], &[]), "still 2 voters");
    assert_eq!(c.term(1), term, "pre-vote keeps the term");
    assert_eq!(
        c.node_mut(1).rn.propose_conf_change(remove(2)),
        Err(Error::ProposalDropped),
        "no leader: the rollback cannot even be proposed"
    );
}

/// Figures 7 and 8 with the new member added as a learner: the 1-node
/// cluster keeps its quorum of 1, the leader stays and commits, and the
/// mistaken learner is removed again.
///
/// etcd: TestAddLearner
/// etcd: TestRemoveLearner
#[test]
fn fig08_misconfigured_learner_in_single_node_cluster_is_reversible() {
    let mut c = Cluster::new(1, |_| {});
    let term = elect_1(&mut c);
    c.propose_conf_change(1, add_learner(2))
        .expect("adding learner 2");
    assert_eq!(shape(&c, 1), simple_shape(&[1], &[2]));
    // 1 voter -> quorum 1.
    assert_eq!(quorum(voter_count(&c, 1)), 1);
    tick_assert_leader_kept(&mut c, MANY_TICKS, 1, term, &[1], "learner not started");
    assert_commits(&mut c, 1, "with-dead-learner", &[1], &[1]);
    c.propose_conf_change(1, remove(2))
        .expect("removing the learner");
    assert_eq!(
        shape(&c, 1),
        simple_shape(&[1], &[]),
        "the mistake is undone"
    );
    tick_assert_leader_kept(&mut c, ELECTION_TICK, 1, term, &[1], "learner removed");
    assert_commits(&mut c, 1, "after-removal", &[1], &[1]);
}

/// Figure 9 (seed 000 §3 / seed 001 §3, "two members down"): a 3-voter
/// cluster has one failed member (2 of 3 up, quorum 2), then a voter with a
/// wrong address is added: the result is a 4-voter cluster with 2 members
/// down, quorum 3, only 2 votes: the leader steps down and the change
/// cannot be rolled back. (The figure's "4 members, 2 down" is the state
/// after the add: a cluster already down to 2 of 4 would have no leader to
/// add anything.)
///
/// etcd: TestAddNodeCheckQuorum
#[test]
fn fig09_unreachable_voter_added_with_one_member_down_loses_quorum() {
    let mut c = Cluster::new(3, |_| {});
    let term = elect_1(&mut c);
    c.stop(3);
    assert_commits(&mut c, 1, "one-down", &[1, 2], &[1, 2, 3]);
    c.propose_conf_change(1, add_voter(4))
        .expect("adding voter 4");
    for id in [1, 2] {
        assert_eq!(shape(&c, id), simple_shape(&[1, 2, 3, 4], &[]));
    }
    // 4 voters -> quorum 3; 3 and 4 are down, 2 votes remain.
    assert_eq!(quorum(voter_count(&c, 1)), 3);
    assert_eq!(voters_among(&c, 1, &[1, 2]), 2);
    let commit = c.committed(1);
    c.propose_conf_change(1, remove(4))
        .expect("the removal is appended");
    assert_eq!(c.committed(1), commit, "the rollback cannot commit");
    ticks_until_no_leader(&mut c, "two members down");
    tick_assert_no_leader(&mut c, MANY_TICKS, "two members down");
    assert_eq!(c.term(1), term);
    assert_eq!(shape(&c, 1), simple_shape(&[1, 2, 3, 4], &[]));
}

/// Figure 9 with the new member added as a learner: the voters stay
/// {1,2,3} with quorum 2 and 2 up; the leader stays, commits continue, and
/// removing the learner again succeeds.
///
/// etcd: TestRemoveLearner
#[test]
fn fig09_unreachable_learner_added_with_one_member_down_is_reversible() {
    let mut c = Cluster::new(3, |_| {});
    let term = elect_1(&mut c);
    c.stop(3);
    c.propose_conf_change(1, add_learner(4))
        .expect("adding learner 4");
    assert_eq!(shape(&c, 1), simple_shape(&[1, 2, 3], &[4]));
    assert_eq!(quorum(voter_count(&c, 1)), 2);
    tick_assert_leader_kept(&mut c, MANY_TICKS, 1, term, &[1, 2], "learner unreachable");
    assert_commits(&mut c, 1, "with-dead-learner", &[1, 2], &[1, 2, 3]);
    c.propose_conf_change(1, remove(4))
        .expect("removing the learner");
    for id in [1, 2] {
        assert_eq!(shape(&c, id), simple_shape(&[1, 2, 3], &[]));
    }
    assert_commits(&mut c, 1, "after-removal", &[1, 2], &[1, 2, 3]);
}

// ----------------------------------------------------------------------
// Figures 10–12: learner, promotion, promotion checks
// ----------------------------------------------------------------------

/// Figure 10 (seed 000 / seed 001 "Features in v3.4": `member add
/// --learner`): the learner receives every entry but its acknowledgement
/// does not count: with the leader and the learner cut off from the other
/// two voters, an entry reaches the learner yet stays uncommitted.
///
/// etcd: TestLearnerLogReplication
#[test]
fn fig10_learner_receives_the_log_but_does_not_count_in_the_quorum() {
    let (mut c, _term) = three_plus_one(true);
    assert_commits(&mut c, 1, "replicated", &[1, 2, 3, 4], &[1, 2, 3, 4]);
    assert_eq!(c.node(4).applied_data, c.node(1).applied_data);
    // {1,4} | {2,3}: one voter of three on the leader's side (quorum 2).
    c.split(&[1, 4], &[2, 3]);
    assert_eq!(voters_among(&c, 1, &[1, 4]), 1);
    let commit = c.committed(1);
    let idx = propose(&mut c, 1, "learner-only");
    assert_eq!(c.last_index(4), idx, "the learner stored the entry");
    assert_eq!(
        c.progress(1, 4).map(|p| p.matched),
        Some(idx),
        "and acknowledged it"
    );
    for _ in 0..3 {
        c.tick_all();
        assert_eq!(c.committed(1), commit, "a learner's ack must not commit");
    }
    c.heal();
    c.tick_until(MANY_TICKS, |c| c.committed(2) >= idx)
        .expect("commits once the voters are back");

    // With 3 voters a learner's ack could never tip a majority anyway
    // (1 voter + 1 learner is not 3 of 4 either). With 2 voters it could:
    // {1,3} would be 2 of 3 members, but it is only 1 of the 2 voters.
    let mut c = Cluster::new(2, |_| {});
    elect_1(&mut c);
    c.propose_conf_change(1, add_learner(3))
        .expect("adding learner 3");
    c.add_node_with_conf_state(3, conf_state(&[1, 2], &[3]));
    let last = c.last_index(1);
    c.tick_until(50, |c| c.applied_index(3) >= last)
        .expect("the learner catches up");
    c.split(&[1, 3], &[2]);
    assert_eq!(quorum(voter_count(&c, 1)), 2);
    assert_eq!(voters_among(&c, 1, &[1, 3]), 1);
    let commit = c.committed(1);
    let idx = propose(&mut c, 1, "learner-only-2");
    assert_eq!(c.progress(1, 3).map(|p| p.matched), Some(idx));
    assert_eq!(c.committed(1), commit, "a learner's ack must not commit");
}

/// Figure 11 (seed 000 / seed 001: `member promote`, "counts in the
/// quorum afterwards"): before the promotion, with voter 3 cut off and the
/// learner's acks lost, voters 1 and 2 still commit (2 of 3). After
/// promoting node 4 the same network cannot commit (2 of 4, quorum 3); the
/// entry commits exactly when node 4's acknowledgement gets through.
///
/// etcd: TestLearnerPromotion
#[test]
fn fig11_promoted_learner_counts_in_the_quorum() {
    let (mut c, _term) = three_plus_one(true);
    c.isolate(&[3]);
    c.block(4, 1);
    assert_eq!(quorum(voter_count(&c, 1)), 2);
    assert_commits(&mut c, 1, "before-promotion", &[1, 2, 4], &[1, 2, 3, 4]);
    c.heal();
    c.tick_all_n(2);
    c.propose_conf_change(1, add_voter(4))
        .expect("the caught-up learner is promoted");
    for id in 1..=4 {
        assert_eq!(shape(&c, id), simple_shape(&[1, 2, 3, 4], &[]), "node {id}");
    }
    // Two of the four voters away: 3 isolated, 4's acks lost.
    c.isolate(&[3]);
    c.block(4, 1);
    assert_eq!(quorum(voter_count(&c, 1)), 3);
    let commit = c.committed(1);
    let idx = propose(&mut c, 1, "needs-node-4");
    assert_eq!(c.last_index(4), idx, "node 4 has the entry");
    assert_eq!(c.committed(1), commit, "2 acks of 4 voters do not commit");
    // Node 4's acks get through again (3 stays away): 1, 2 and 4 = 3.
    c.heal();
    c.isolate(&[3]);
    c.tick_until(3, |c| c.committed(1) >= idx)
        .expect("node 4's ack completes the quorum");
    assert!(c.applied(2).contains(&"needs-node-4".to_string()));
}

/// Figure 12 (seed 000 / seed 001: the leader validates `member promote`):
/// a learner that was never heard from recently is refused, then one that
/// is catching up over a slow link is refused while it lags more than
/// `promote_max_lag` (the error carries the lag the leader sees), and the
/// promotion is accepted as soon as the lag is within the limit.
///
/// raftlet: the promotion check lives in the core (`Error::PromotionNotReady`);
/// etcd does it in etcdserver and its raft accepts any AddNode.
#[test]
fn fig12_promotion_refused_while_the_learner_lags() {
    let mut c = Cluster::new(3, |cfg| {
        cfg.max_size_per_msg = 2 * 1024;
        cfg.max_inflight_msgs = 2;
    });
    elect_1(&mut c);
    for b in 0..3 {
        c.propose_batch(1, (0..1_000).map(|i| format!("entry-{b}-{i:06}")))
            .expect("batch");
    }
    c.propose_conf_change(1, add_learner(4))
        .expect("adding learner 4");
    let last = c.last_index(1);
    let max_lag = c.node(1).config.promote_max_lag;
    assert_eq!(max_lag, 1000, "raftlet's default");

    // The learner's process is not running yet: after a check-quorum round
    // the leader no longer counts it as recently active.
    c.tick_until(STEP_DOWN_TICKS, |c| {
        c.progress(1, 4).is_some_and(|p| !p.recent_active)
    })
    .expect("check-quorum clears recent_active");
    assert_eq!(
        c.node_mut(1).rn.propose_conf_change(add_voter(4)),
        Err(Error::PromotionNotReady {
            id: 4,
            lag: last,
            pending_snapshot: false,
            recent_active: false,
        })
    );

    // It starts; the leader's link carries 4 KiB per tick (~3000 entries
    // take several ticks). Try to promote after every tick.
    c.add_node_with_conf_state(4, conf_state(&[1, 2, 3], &[4]));
    c.set_uplink_budget(1, 4 * 1024);
    let mut refused_partially_caught_up = 0;
    let mut accepted_at = None;
    for t in 1..=200 {
        c.tick_all();
        let pr = c.progress(1, 4).expect("leader tracks node 4");
        let lag = last - pr.matched;
        let ready = pr.recent_active && pr.state != ProgressState::Snapshot && lag <= max_lag;
        let before = c.last_index(1);
        let r = c.node_mut(1).rn.propose_conf_change(add_voter(4));
        if ready {
            assert_eq!(r, Ok(()), "tick {t}: lag {lag} is within {max_lag}");
            accepted_at = Some((t, lag));
            break;
        }
        assert_eq!(
            r,
            Err(Error::PromotionNotReady {
                id: 4,
                lag,
                pending_snapshot: pr.state == ProgressState::Snapshot,
                recent_active: pr.recent_active,
            }),
            "tick {t}"
        );
        assert_eq!(
            c.last_index(1),
            before,
            "a refused promotion appends nothing"
        );
        if pr.matched > 0 && lag > max_lag {
            refused_partially_caught_up += 1;
        }
    }
    let (t, lag) = accepted_at.expect("the promotion is accepted once caught up");
    eprintln!("fig12: promotion accepted at tick {t} with lag {lag}");
    assert!(
        refused_partially_caught_up > 0,
        "a learner that has caught up only partly (lag > {max_lag}) was refused"
    );
    c.stabilize();
    c.clear_uplink_budget(1);
    c.tick_until(MANY_TICKS, |c| c.applied_index(4) >= c.last_index(1))
        .expect("the new voter catches up");
    for id in 1..=4 {
        assert_eq!(shape(&c, id), simple_shape(&[1, 2, 3, 4], &[]), "node {id}");
    }
}

/// Figure 12, the snapshot case (seed 000 / seed 001: "if the learner has
/// not finished receiving its snapshot, the promotion is refused"): the
/// leader's log is compacted, so the learner needs a snapshot; while it is
/// in flight (here: lost until the host reports the failure) the promotion
/// is refused with `pending_snapshot`, although the lag is within
/// `promote_max_lag`. Once the snapshot is installed it is accepted.
///
/// etcd: TestSendingSnapshotSetPendingSnapshot
/// etcd: TestLearnerReceiveSnapshot
///
/// raftlet: promotion checks are in the core (`Error::PromotionNotReady`).
#[test]
fn fig12_promotion_refused_while_the_snapshot_is_pending() {
    let mut c = Cluster::new(3, |_| {});
    elect_1(&mut c);
    c.propose_batch(1, (0..200).map(|i| format!("entry-{i:04}")))
        .expect("batch");
    c.propose_conf_change(1, add_learner(4))
        .expect("adding learner 4");
    // The snapshot includes the learner in its configuration.
    c.compact(1);
    let last = c.last_index(1);
    c.set_filter(Some(Box::new(|m| {
        !(m.msg_type == MessageType::MsgSnap && m.to == 4)
    })));
    c.add_node_with_conf_state(4, conf_state(&[1, 2, 3], &[4]));
    c.tick_until(5, |c| {
        c.progress(1, 4)
            .is_some_and(|p| p.state == ProgressState::Snapshot)
    })
    .expect("the leader starts sending a snapshot");
    let pr = c.progress(1, 4).unwrap();
    let lag = last - pr.matched;
    assert!(lag <= 1000, "the lag alone ({lag}) would not refuse");
    assert_eq!(
        c.node_mut(1).rn.propose_conf_change(add_voter(4)),
        Err(Error::PromotionNotReady {
            id: 4,
            lag,
            pending_snapshot: true,
            recent_active: true,
        })
    );
    assert_eq!(c.applied_index(4), 0, "the snapshot did not arrive");
    // The host learns the send failed; the leader retries and it arrives.
    c.set_filter(None);
    c.node_mut(1).rn.report_snapshot(4, SnapshotStatus::Failure);
    c.tick_until(MANY_TICKS, |c| {
        c.applied_index(4) >= last
            && c.progress(1, 4)
                .is_some_and(|p| p.state == ProgressState::Replicate)
    })
    .expect("the learner installs the snapshot");
    c.propose_conf_change(1, add_voter(4))
        .expect("promotion after the snapshot");
    for id in 1..=4 {
        assert_eq!(shape(&c, id), simple_shape(&[1, 2, 3, 4], &[]), "node {id}");
    }
}

// ----------------------------------------------------------------------
// Figure 13: what a learner may not do, and reads through the leader
// ----------------------------------------------------------------------

/// Figure 13 (seed 000 / seed 001: "a learner only serves as a standby"):
/// leadership cannot be transferred to a learner; a learner whose election
/// timer fires many times does not campaign (while an isolated voter does);
/// and a linearizable read on the learner is served through the leader.
///
/// etcd: TestLearnerElectionTimeout
/// etcd: TestLearnerCampaign
/// etcd: TestReadOnlyWithLearner
#[test]
fn fig13_learner_cannot_lead_or_campaign_but_reads_through_the_leader() {
    let (mut c, term) = three_plus_one(true);
    // raftlet: transferring to a learner is refused with an error (etcd
    // ignores the request).
    let r = c.node_mut(1).rn.transfer_leader(4);
    assert!(
        matches!(r, Err(Error::TransferRefused(_))),
        "transfer to a learner: {r:?}"
    );
    assert_eq!(c.raw(1).basic_status().lead_transferee, 0);
    tick_assert_leader_kept(
        &mut c,
        ELECTION_TICK,
        1,
        term,
        &[1, 2, 3],
        "refused transfer",
    );

    // Cut off the learner and voter 3 from everyone.
    let mark = c.wire_mark();
    let ticks_before = c.ticks_of(4);
    c.isolate(&[3]);
    c.isolate(&[4]);
    for i in 1..=MANY_TICKS {
        c.tick_all();
        assert_eq!(
            c.role(4),
            StateRole::Follower,
            "tick {i}: the learner campaigned"
        );
        assert_eq!(c.term(4), term, "tick {i}: the learner's term moved");
    }
    assert!(c.ticks_of(4) - ticks_before >= (10 * 2 * ELECTION_TICK) as u64);
    let from_4: Vec<_> = c
        .wire_since(mark)
        .iter()
        .filter(|w| {
            w.msg.from == 4
                && matches!(
                    w.msg.msg_type,
                    MessageType::MsgPreVote | MessageType::MsgVote
                )
        })
        .map(|w| w.describe())
        .collect();
    assert!(from_4.is_empty(), "the learner asked for votes: {from_4:?}");
    assert!(
        c.changes_of(3)
            .iter()
            .any(|ch| ch.to.role == StateRole::PreCandidate),
        "the same ticks make an isolated voter campaign"
    );

    // Reads: the learner asks the leader for a read index. (etcd v3.4's
    // server makes learners refuse client reads; that is a server policy.
    // The design's proposed "strong consistency" learner, and raft itself,
    // forward ReadIndex to the leader.)
    c.heal();
    c.tick_until(MANY_TICKS, |c| {
        c.leader() == Some(1) && c.obs(4).lead == 1 && c.obs(3).lead == 1
    })
    .expect("everyone follows node 1 again");
    let w = propose(&mut c, 1, "last-write");
    assert!(c.committed(1) >= w);
    let mark = c.wire_mark();
    c.read_index(4, "learner-read")
        .expect("read_index on the learner");
    let rs = c.read_states_of(4);
    assert_eq!(rs.len(), 1, "one read state: {rs:?}");
    assert_eq!(&rs[0].request_ctx[..], b"learner-read");
    assert!(
        rs[0].index >= w,
        "read index {} must cover the last write {w}",
        rs[0].index
    );
    let hops = c.wire_tuples_since(mark, |w| {
        matches!(
            w.msg.msg_type,
            MessageType::MsgReadIndex | MessageType::MsgReadIndexResp
        )
    });
    assert_eq!(
        hops.iter().map(|h| (h.0, h.1, h.2)).collect::<Vec<_>>(),
        vec![
            (4, 1, MessageType::MsgReadIndex),
            (1, 4, MessageType::MsgReadIndexResp)
        ],
        "the read goes through the leader"
    );
    assert!(
        c.applied_index(4) >= rs[0].index,
        "the learner can serve it"
    );
}

// ----------------------------------------------------------------------
// Joint consensus
// ----------------------------------------------------------------------

/// Replaces the leader of a 3-voter cluster with one V2 change (add 4,
/// remove 1) that enters and automatically leaves a joint configuration.
/// Every configuration the leader went through had a quorum that
/// committed: C_old {1,2,3} (2 of 3), the joint one ({2,3,4} and {1,2,3}:
/// 2 of each; the leave-joint entry commits in it) and C_new {2,3,4}, where
/// the removed leader stepped down and a new one commits without it.
///
/// etcd: TestRawNodeJointAutoLeave
/// etcd: confchange_v2_replace_leader.txt
#[test]
fn joint_consensus_replaces_the_leader_with_auto_leave() {
    let mut c = Cluster::new(3, |_| {});
    elect_1(&mut c);
    assert_commits(&mut c, 1, "c-old", &[1, 2, 3], &[1, 2, 3]);
    // The new member's log starts empty in the old configuration.
    c.add_node_with_conf_state(4, conf_state(&[1, 2, 3], &[]));
    let cc = v2(
        ConfChangeTransition::ConfChangeTransitionAuto,
        &[
            (ConfChangeType::ConfChangeAddNode, 4),
            (ConfChangeType::ConfChangeRemoveNode, 1),
        ],
    );
    let cc_index = c.last_index(1) + 1;
    c.node_mut(1)
        .rn
        .propose_conf_change(cc)
        .expect("the replacement is proposed");
    // Watch the leader's configuration and commit index round by round.
    let mut seen: Vec<(Shape, u64)> = vec![(shape(&c, 1), c.committed(1))];
    for _ in 0..10_000 {
        if !c.stabilize_round() {
            break;
        }
        let now = (shape(&c, 1), c.committed(1));
        if seen.last() != Some(&now) {
            seen.push(now);
        }
    }
    let c_old = simple_shape(&[1, 2, 3], &[]);
    let joint: Shape = (set(&[2, 3, 4]), set(&[1, 2, 3]), set(&[]), set(&[]), true);
    let c_new = simple_shape(&[2, 3, 4], &[]);
    let configs: Vec<&Shape> = seen.iter().map(|(s, _)| s).fold(Vec::new(), |mut v, s| {
        if v.last() != Some(&s) {
            v.push(s);
        }
        v
    });
    assert_eq!(
        configs,
        vec![&c_old, &joint, &c_new],
        "configurations of node 1"
    );
    // Quorums: C_old 2 of 3; joint 2 of {2,3,4} and 2 of {1,2,3}.
    let joint_commit = seen
        .iter()
        .filter(|(s, _)| *s == joint)
        .map(|(_, ci)| *ci)
        .max()
        .unwrap();
    assert!(
        joint_commit > cc_index,
        "the leave-joint entry after {cc_index} commits under the joint config (saw {joint_commit})"
    );
    let leave = c
        .node(2)
        .applied_entries
        .iter()
        .find(|e| e.index == cc_index + 1)
        .cloned()
        .expect("entry after the change");
    assert_eq!(leave.entry_type, EntryType::EntryConfChangeV2);
    assert!(
        ConfChangeI::from_entry(&leave)
            .unwrap()
            .as_v2()
            .leave_joint(),
        "the leader appended the automatic leave-joint entry"
    );
    // The removed leader stepped down; C_new elects a leader and commits.
    assert_ne!(c.role(1), StateRole::Leader, "removed leader steps down");
    c.tick_until(MANY_TICKS, |c| c.leader().is_some_and(|l| l != 1))
        .expect("C_new elects a leader");
    let l = c.leader().unwrap();
    assert!([2, 3, 4].contains(&l));
    assert_commits(&mut c, l, "c-new", &[2, 3, 4], &[1, 2, 3, 4]);
    let expected = conf_state(&[2, 3, 4], &[]);
    for id in [2, 3, 4] {
        let cs = c.node(id).conf_state.clone().expect("conf state");
        assert_eq!(cs.equivalent(&expected), Ok(()), "final ConfState of {id}");
        assert_eq!(shape(&c, id), c_new);
    }
}

/// Demotes voter 3 of a 3-voter cluster to a learner through an explicit
/// joint configuration: while joint it sits in `learners_next` (still a
/// voter of the outgoing half), commits need both halves (with voter 2 cut
/// off, {1,3} is a majority of {1,2,3} but not of {1,2}: nothing commits),
/// and after leaving it is a learner that keeps receiving the log but is no
/// longer needed for a commit.
///
/// etcd: joint_learners_next.txt
/// etcd: TestLeaderTransferDemoteNode
#[test]
fn joint_consensus_demotes_a_voter_through_learners_next() {
    let mut c = Cluster::new(3, |_| {});
    elect_1(&mut c);
    assert_commits(&mut c, 1, "c-old", &[1, 2, 3], &[1, 2, 3]);
    let cc = v2(
        ConfChangeTransition::ConfChangeTransitionJointExplicit,
        &[(ConfChangeType::ConfChangeAddLearnerNode, 3)],
    );
    c.propose_conf_change(1, cc)
        .expect("the demotion is proposed");
    let joint: Shape = (set(&[1, 2]), set(&[1, 2, 3]), set(&[]), set(&[3]), false);
    for id in 1..=3 {
        assert_eq!(shape(&c, id), joint, "joint configuration of node {id}");
    }
    // Joint: 2 of {1,2} and 2 of {1,2,3}.
    assert_commits(&mut c, 1, "joint", &[1, 2, 3], &[1, 2, 3]);
    c.isolate(&[2]);
    let commit = c.committed(1);
    let idx = propose(&mut c, 1, "joint-without-2");
    assert_eq!(c.last_index(3), idx, "node 3 acknowledged it");
    assert_eq!(c.committed(1), commit, "the incoming half {{1,2}} lacks 2");
    c.heal();
    c.tick_until(3, |c| c.committed(1) >= idx)
        .expect("commits with 2 back");
    // Leave the joint configuration explicitly.
    c.propose_conf_change(1, ConfChangeV2::default())
        .expect("leaving joint");
    for id in 1..=3 {
        assert_eq!(shape(&c, id), simple_shape(&[1, 2], &[3]), "node {id}");
        let cs = c.node(id).conf_state.clone().unwrap();
        assert_eq!(cs.equivalent(&conf_state(&[1, 2], &[3])), Ok(()));
    }
    assert_commits(&mut c, 1, "c-new", &[1, 2, 3], &[1, 2, 3]);
    // The learner is not needed for a commit any more.
    c.isolate(&[3]);
    assert_commits(&mut c, 1, "without-learner", &[1, 2], &[1, 2, 3]);
}

// ----------------------------------------------------------------------
// max_learners and conf-change validation
// ----------------------------------------------------------------------

/// `max_learners` (default 1, as etcd server's limit of one learner):
/// a second learner is refused with `TooManyLearners` and nothing is
/// appended, whether added alone, two at once, or by demoting a voter while
/// a learner exists; raising the limit admits it.
///
/// raftlet: etcd server enforces the limit; raftlet's core does.
#[test]
fn max_learners_refuses_a_second_learner() {
    let mut c = Cluster::new(3, |_| {});
    elect_1(&mut c);
    let before = c.last_index(1);
    let two = v2(
        ConfChangeTransition::ConfChangeTransitionAuto,
        &[
            (ConfChangeType::ConfChangeAddLearnerNode, 4),
            (ConfChangeType::ConfChangeAddLearnerNode, 5),
        ],
    );
    assert_eq!(
        c.node_mut(1).rn.propose_conf_change(two),
        Err(Error::TooManyLearners)
    );
    assert_eq!(c.last_index(1), before, "nothing appended");
    c.propose_conf_change(1, add_learner(4))
        .expect("the first learner");
    let before = c.last_index(1);
    assert_eq!(
        c.node_mut(1).rn.propose_conf_change(add_learner(5)),
        Err(Error::TooManyLearners)
    );
    let demote = v2(
        ConfChangeTransition::ConfChangeTransitionJointImplicit,
        &[(ConfChangeType::ConfChangeAddLearnerNode, 3)],
    );
    assert_eq!(
        c.node_mut(1).rn.propose_conf_change(demote),
        Err(Error::TooManyLearners)
    );
    c.stabilize();
    assert_eq!(c.last_index(1), before, "nothing appended");
    assert_eq!(shape(&c, 1), simple_shape(&[1, 2, 3], &[4]));

    let mut c = Cluster::new(3, |cfg| cfg.max_learners = 2);
    elect_1(&mut c);
    c.propose_conf_change(1, add_learner(4)).expect("learner 4");
    c.propose_conf_change(1, add_learner(5)).expect("learner 5");
    assert_eq!(shape(&c, 1), simple_shape(&[1, 2, 3], &[4, 5]));
}

/// A second conf change while one is not yet applied is refused.
///
/// etcd: TestRawNodeProposeAndConfChange
/// etcd: TestNewLeaderPendingConfig
///
/// raftlet: a refused local conf change returns
/// `Err(ConfChangeRefused)` and appends nothing (etcd appends an empty
/// entry instead).
#[test]
fn conf_change_refused_while_another_is_pending() {
    let mut c = Cluster::new(3, |_| {});
    elect_1(&mut c);
    let before = c.last_index(1);
    c.node_mut(1)
        .rn
        .propose_conf_change(add_learner(4))
        .expect("the first change");
    let r = c.node_mut(1).rn.propose_conf_change(remove(3));
    assert!(
        matches!(&r, Err(Error::ConfChangeRefused(m)) if m.contains("unapplied")),
        "second pending change: {r:?}"
    );
    c.stabilize();
    assert_eq!(c.last_index(1), before + 1, "only the first was appended");
    assert_eq!(shape(&c, 1), simple_shape(&[1, 2, 3], &[4]));
    // Once applied, the next change is accepted.
    c.propose_conf_change(1, remove(4)).expect("next change");
    assert_eq!(shape(&c, 1), simple_shape(&[1, 2, 3], &[]));
}

/// While joint, only the empty change that leaves is accepted.
///
/// etcd: TestRawNodeProposeAndConfChange
///
/// raftlet: refused with `Err(ConfChangeRefused)`, nothing appended.
#[test]
fn conf_change_refused_while_joint() {
    let mut c = Cluster::new(3, |_| {});
    elect_1(&mut c);
    let enter = v2(
        ConfChangeTransition::ConfChangeTransitionJointExplicit,
        &[(ConfChangeType::ConfChangeRemoveNode, 3)],
    );
    c.propose_conf_change(1, enter).expect("entering joint");
    let joint: Shape = (set(&[1, 2]), set(&[1, 2, 3]), set(&[]), set(&[]), false);
    assert_eq!(shape(&c, 1), joint);
    let before = c.last_index(1);
    for change in [
        ConfChangeI::from(add_learner(4)),
        ConfChangeI::from(v2(
            ConfChangeTransition::ConfChangeTransitionAuto,
            &[(ConfChangeType::ConfChangeAddNode, 4)],
        )),
    ] {
        let r = c.node_mut(1).rn.propose_conf_change(change);
        assert!(
            matches!(&r, Err(Error::ConfChangeRefused(m)) if m.contains("joint")),
            "change while joint: {r:?}"
        );
    }
    c.stabilize();
    assert_eq!(c.last_index(1), before, "nothing appended");
    c.propose_conf_change(1, ConfChangeV2::default())
        .expect("leaving joint");
    assert_eq!(shape(&c, 1), simple_shape(&[1, 2], &[]));
}

/// An empty V2 change (leave joint) outside a joint configuration is
/// refused locally; forwarded from a follower it becomes an empty normal
/// entry, as in etcd.
///
/// etcd: TestRawNodeProposeAndConfChange
///
/// raftlet: the local refusal is `Err(ConfChangeRefused)` with nothing
/// appended (etcd appends an empty entry); the forwarded case keeps etcd's
/// behaviour.
#[test]
fn empty_conf_change_v2_refused_outside_joint() {
    let mut c = Cluster::new(3, |_| {});
    elect_1(&mut c);
    let before = c.last_index(1);
    let r = c
        .node_mut(1)
        .rn
        .propose_conf_change(ConfChangeV2::default());
    assert!(
        matches!(&r, Err(Error::ConfChangeRefused(m)) if m.contains("not in joint")),
        "empty V2 outside joint: {r:?}"
    );
    c.stabilize();
    assert_eq!(c.last_index(1), before, "nothing appended");
    // Proposed on a follower, it is forwarded and neutralized.
    c.propose_conf_change(2, ConfChangeV2::default())
        .expect("forwarded");
    assert_eq!(c.last_index(1), before + 1);
    let e = c
        .stored_entries(1)
        .into_iter()
        .find(|e| e.index == before + 1)
        .unwrap();
    assert_eq!(e.entry_type, EntryType::EntryNormal);
    assert!(e.data().is_empty(), "replaced by an empty entry");
    assert_eq!(shape(&c, 1), simple_shape(&[1, 2, 3], &[]));
}
