//! Seed scenarios (TEST-PLAN section 4): check-quorum, pre-vote and
//! disruption, driven end to end through the public API with the
//! [`common::Cluster`] driver.
//!
//! Seed 004 studies an etcd leader isolated in a minority with check-quorum
//! and pre-vote on; seed 002 (etcd 3.4 notes) motivates pre-vote with a
//! flapping member and a restarted member. Each scenario is also run with
//! the feature off where that shows what the feature buys.
//!
//! Every assertion message says what went wrong; on failure the cluster
//! prints its timeline (role/term changes, network events) and the tail of
//! the wire log.

mod common;

use common::{Cluster, StateChange};
use raftlet::pb::MessageType;
use raftlet::StateRole;

/// The election timeout used everywhere (raftlet's default, etcd's test value).
const ET: u64 = 10;

fn is_vote_request(t: MessageType) -> bool {
    t == MessageType::MsgVote || t == MessageType::MsgPreVote
}

/// The clocks of `id`'s changes into `role` (optionally only after `after`).
fn entered(changes: &[StateChange], id: u64, role: StateRole, after: u64) -> Vec<u64> {
    changes
        .iter()
        .filter(|ch| ch.id == id && ch.to.role == role && ch.from.role != role && ch.clock >= after)
        .map(|ch| ch.clock)
        .collect()
}

/// The distinct clocks at which `from` sent `t` (delivered or not) in
/// `[lo, hi]`: one per campaign round.
fn rounds_of(c: &Cluster, from: u64, t: MessageType, lo: u64, hi: u64) -> Vec<u64> {
    let mut v: Vec<u64> = c
        .wire()
        .iter()
        .filter(|w| w.msg.from == from && w.msg.msg_type == t && w.clock >= lo && w.clock <= hi)
        .map(|w| w.clock)
        .collect();
    v.dedup();
    v
}

// ---------------------------------------------------------------------------
// The 2|3 split of seed 004, shared by the seed-004 tests and the issue's
// acceptance test.
// ---------------------------------------------------------------------------

/// What one run of the 2|3 split measured. The cluster is kept so that a
/// failing assertion prints its timeline.
struct SplitRun {
    c: Cluster,
    /// The term in which s1 led before the split.
    old_term: u64,
    /// The clock at which s1 became leader (its check-quorum rounds fall on
    /// `lead_at + k * ET`).
    lead_at: u64,
    /// The clock after which the split took effect.
    split_at: u64,
    /// The clock at which s1 stopped being leader, if it did during the
    /// partition.
    stepdown_at: Option<u64>,
    /// `(clock, term of s1, term of s2)` after every tick of the partition.
    minority_terms: Vec<(u64, u64, u64)>,
    /// The leader of the 3 side at the end of the partition and its term.
    majority_leader: Option<(u64, u64)>,
    /// The clock after which the network healed.
    heal_at: u64,
    /// Wire-log marks at the split and at the heal.
    wire_at_split: usize,
    wire_at_heal: usize,
    /// The payloads committed before the split and during the partition.
    expected: Vec<String>,
}

impl SplitRun {
    /// The first check-quorum round of s1 whose window lies entirely after
    /// the split. A round at clock R checks the heartbeat responses received
    /// since the previous round at R - ET (that round runs before the
    /// heartbeat of its tick, whose responses arrive in the same tick), so
    /// the window holds pre-split responses as long as R - ET <= split_at.
    fn first_blind_round(&self) -> u64 {
        let mut r = self.lead_at + ET;
        while r <= self.split_at + ET {
            r += ET;
        }
        r
    }
}

/// 5 voters, s1 leads; after `offset` ticks past its first check-quorum
/// round the network splits {1,2} | {3,4,5} for `partition_ticks`, then
/// heals for `recovery_ticks`. Proposals: two before the split, one on the
/// stale leader s1 right after the split (it can never commit), two on the
/// majority's leader once it exists.
fn split_2_3(pre_vote: bool, offset: u64, partition_ticks: u64, recovery_ticks: u64) -> SplitRun {
    let mut c = Cluster::new(5, move |cfg| {
        cfg.check_quorum = true;
        cfg.pre_vote = pre_vote;
        cfg.election_tick = ET as usize;
        cfg.heartbeat_tick = 1;
    });
    c.campaign(1);
    assert_eq!(c.leader(), Some(1), "s1 should win the initial election");
    let lead_at = c.now();
    let old_term = c.term(1);
    for p in ["before-1", "before-2"] {
        c.propose(1, p).expect("proposal before the split");
    }
    for id in 1..=5 {
        assert_eq!(
            c.applied(id),
            ["before-1", "before-2"],
            "s{id} before the split"
        );
    }

    // Run past the first check-quorum round (which must not step down).
    c.tick_all_n((ET + offset) as usize);
    assert_eq!(c.leader(), Some(1), "s1 must still lead before the split");
    assert_eq!(c.term(1), old_term, "no election before the split");

    c.split(&[1, 2], &[3, 4, 5]);
    let split_at = c.now();
    let wire_at_split = c.wire_mark();
    // A proposal on the stale leader: replicated to s2 only, never committed.
    c.propose(1, "lost-on-minority")
        .expect("s1 still leads right after the split and accepts proposals");

    let mut stepdown_at = None;
    let mut minority_terms = Vec::new();
    let mut proposed_on_majority = false;
    let mut expected: Vec<String> = vec!["before-1".into(), "before-2".into()];
    for _ in 0..partition_ticks {
        c.tick_all();
        minority_terms.push((c.now(), c.term(1), c.term(2)));
        if stepdown_at.is_none() && c.role(1) != StateRole::Leader {
            stepdown_at = Some(c.now());
            c.note("s1 no longer leads");
        }
        if !proposed_on_majority {
            if let Some(l) = c.leaders().into_iter().find(|l| *l >= 3) {
                for p in ["during-1", "during-2"] {
                    c.propose(l, p)
                        .expect("the majority's leader accepts proposals");
                    expected.push(p.into());
                }
                proposed_on_majority = true;
            }
        }
    }
    let majority_leader = c
        .leaders()
        .into_iter()
        .find(|l| *l >= 3)
        .map(|l| (l, c.term(l)));

    c.heal();
    let heal_at = c.now();
    let wire_at_heal = c.wire_mark();
    c.tick_all_n(recovery_ticks as usize);
    SplitRun {
        c,
        old_term,
        lead_at,
        split_at,
        stepdown_at,
        minority_terms,
        majority_leader,
        heal_at,
        wire_at_split,
        wire_at_heal,
        expected,
    }
}

/// Assertions common to both pre-vote settings: s1 steps down at its first
/// blind check-quorum round (at most two election timeouts after the
/// split), and the 3 side elects a leader in a newer term.
fn assert_stepdown_and_majority_leader(r: &SplitRun) {
    let stepdown = r
        .stepdown_at
        .expect("s1 must step down while it cannot reach a quorum");
    let expected = r.first_blind_round();
    assert_eq!(
        stepdown, expected,
        "s1 must step down exactly at its first check-quorum round that sees fewer than a \
         quorum active (became leader at {}, split at {}, rounds every {ET} ticks)",
        r.lead_at, r.split_at
    );
    let after_split = stepdown - r.split_at;
    assert!(
        after_split > ET && after_split <= 2 * ET,
        "s1 stepped down {after_split} ticks after the split; check-quorum allows (ET, 2*ET] = \
         ({ET}, {}]",
        2 * ET
    );
    // s1 steps down into a follower of its own term, knowing no leader.
    let ch =
        r.c.changes_of(1)
            .into_iter()
            .find(|ch| ch.clock == stepdown && ch.from.role == StateRole::Leader)
            .expect("s1's step-down is in the timeline");
    assert_eq!(ch.to.role, StateRole::Follower, "s1 steps down to follower");
    assert_eq!(
        ch.to.term, r.old_term,
        "stepping down does not change s1's term"
    );
    assert_eq!(ch.to.lead, 0, "s1 forgets itself as leader");

    let (ml, mt) = r
        .majority_leader
        .expect("the 3 side must elect a leader during the partition");
    assert!(
        mt > r.old_term,
        "the new leader's term {mt} must be newer than {}",
        r.old_term
    );
    assert!(
        entered(r.c.changes(), ml, StateRole::Leader, r.split_at + 1)
            .iter()
            .any(|t| *t <= r.heal_at),
        "s{ml} was elected during the partition"
    );
}

// ---------------------------------------------------------------------------
// Seed 004
// ---------------------------------------------------------------------------

/// etcd: TestLeaderStepdownWhenQuorumLost
///
/// Seed 004, scripts checkquorum.txt and prevote_checkquorum.txt: 5 voters
/// with check-quorum and pre-vote; the leader s1 and s2 are cut off from
/// s3, s4 and s5. s1 steps down at its first check-quorum round that sees
/// fewer than a quorum active (at most two election timeouts after the
/// split), the 3 side elects a leader through pre-vote then vote, the 2 side
/// pre-votes without ever raising its term, and after healing s1 and s2
/// rejoin without an election and catch up.
#[test]
fn seed_004_isolated_leader_steps_down_and_rejoins() {
    // Split 3 ticks after a check-quorum round: the next round still sees
    // the pre-split responses, the one after that does not.
    let r = split_2_3(true, 3, 8 * ET, 4 * ET);
    let c = &r.c;
    assert_stepdown_and_majority_leader(&r);
    let (ml, mt) = r.majority_leader.unwrap();
    assert_eq!(
        mt,
        r.old_term + 1,
        "pre-vote: the 3 side elects in the very next term"
    );

    // The 3 side: pre-vote, then vote, then leader.
    let path: Vec<(StateRole, u64)> = c
        .changes_of(ml)
        .iter()
        .filter(|ch| ch.clock > r.split_at && ch.from.role != ch.to.role)
        .map(|ch| (ch.to.role, ch.to.term))
        .collect();
    assert_eq!(
        path.first().copied(),
        Some((StateRole::PreCandidate, r.old_term)),
        "s{ml} first pre-campaigns in its old term: {path:?}"
    );
    assert!(
        path.contains(&(StateRole::Candidate, r.old_term + 1))
            && path.contains(&(StateRole::Leader, r.old_term + 1)),
        "s{ml} goes PreCandidate -> Candidate -> Leader: {path:?}"
    );
    let during = c.wire_tuples_since(r.wire_at_split, |w| {
        w.msg.from == ml && is_vote_request(w.msg.msg_type) && w.delivered
    });
    let first_vote = during.iter().position(|t| t.2 == MessageType::MsgVote);
    let first_pre = during.iter().position(|t| t.2 == MessageType::MsgPreVote);
    assert!(
        matches!((first_pre, first_vote), (Some(p), Some(v)) if p < v),
        "on the wire s{ml}'s MsgPreVote precedes its MsgVote: {during:?}"
    );

    // The 2 side: both pre-campaign (repeatedly), nobody raises its term.
    for id in [1, 2] {
        let pre = entered(c.changes(), id, StateRole::PreCandidate, r.split_at);
        assert!(
            pre.iter().any(|t| *t <= r.heal_at),
            "s{id} must pre-campaign while partitioned"
        );
        assert!(
            entered(c.changes(), id, StateRole::Candidate, r.split_at).is_empty(),
            "s{id} must never become a candidate (that would raise its term)"
        );
    }
    let rounds = rounds_of(c, 2, MessageType::MsgPreVote, r.split_at, r.heal_at);
    assert!(
        rounds.len() >= 2,
        "s2 keeps timing out while partitioned: {rounds:?}"
    );
    for &(t, t1, t2) in &r.minority_terms {
        assert!(
            t1 == r.old_term && t2 == r.old_term,
            "at t={t} the minority raised its term (s1 {t1}, s2 {t2}, was {})",
            r.old_term
        );
    }
    assert!(
        c.wire_since(r.wire_at_split)[..r.wire_at_heal - r.wire_at_split]
            .iter()
            .all(|w| !(w.msg.from <= 2 && w.msg.msg_type == MessageType::MsgVote)),
        "no MsgVote from the minority during the partition"
    );

    // After healing: no election, same leader, same term; everyone caught up.
    assert_eq!(c.leader(), Some(ml), "s{ml} keeps leading after the heal");
    let after_heal: Vec<StateChange> = c
        .changes()
        .iter()
        .filter(|ch| ch.clock > r.heal_at)
        .copied()
        .collect();
    assert!(
        after_heal
            .iter()
            .all(|ch| ch.to.role != StateRole::Candidate),
        "no node campaigns (in a raised term) after the heal: {after_heal:?}"
    );
    assert!(
        after_heal.iter().all(|ch| ch.id != ml),
        "the majority's leader keeps its role and term after the heal: {after_heal:?}"
    );
    assert!(
        c.wire_since(r.wire_at_heal)
            .iter()
            .all(|w| w.msg.msg_type != MessageType::MsgVote),
        "no MsgVote after the heal"
    );
    for id in 1..=5 {
        assert_eq!(c.term(id), mt, "s{id} ends in the majority's term");
        assert_eq!(c.obs(id).lead, ml, "s{id} follows s{ml}");
        assert_eq!(
            c.applied(id),
            r.expected,
            "s{id} applied everything committed"
        );
    }
    // The stale leader's proposal was overwritten, never applied anywhere.
    for id in 1..=5 {
        assert!(
            !c.applied(id).iter().any(|d| d == "lost-on-minority"),
            "s{id} applied an entry that never reached a quorum"
        );
        assert!(
            !c.stored_entries(id)
                .iter()
                .any(|e| e.data() == b"lost-on-minority"),
            "s{id} still stores the stale leader's uncommitted entry"
        );
    }
}

/// etcd: TestLeaderStepdownWhenQuorumLost
///
/// The step-down bound of seed 004 for every position of the split inside
/// the leader's check-quorum period: always the first blind round, always
/// within (ET, 2*ET] ticks of the split.
#[test]
fn seed_004_step_down_bound_for_every_split_offset() {
    for offset in 0..ET {
        let r = split_2_3(true, offset, 2 * ET + 1, 0);
        assert_eq!(
            r.stepdown_at,
            Some(r.first_blind_round()),
            "split {offset} ticks after a check-quorum round"
        );
        let d = r.stepdown_at.unwrap() - r.split_at;
        assert!(
            d > ET && d <= 2 * ET,
            "offset {offset}: stepped down after {d} ticks"
        );
        if offset == 0 {
            // A split right after a round: the worst case, exactly 2*ET.
            assert_eq!(d, 2 * ET, "a split aligned with a round costs two timeouts");
        }
    }
}

/// etcd: TestDisruptiveFollower
///
/// Seed 004 with pre-vote off (check-quorum still on): the 2 side keeps
/// campaigning in ever higher terms while partitioned, and after the heal
/// its inflated term deposes the majority's healthy leader and raises the
/// cluster's term. Together with
/// `seed_004_isolated_leader_steps_down_and_rejoins` this shows what
/// pre-vote buys.
#[test]
fn seed_004_without_pre_vote_shows_disruption() {
    let r = split_2_3(false, 3, 8 * ET, 6 * ET);
    let c = &r.c;
    assert_stepdown_and_majority_leader(&r);
    let (ml, mt) = r.majority_leader.unwrap();

    // Term inflation on the 2 side.
    let (_, t1, t2) = *r.minority_terms.last().unwrap();
    assert!(
        t1.max(t2) >= r.old_term + 3,
        "without pre-vote the minority's terms grow while partitioned (s1 {t1}, s2 {t2}, \
         started at {})",
        r.old_term
    );
    assert!(
        t1.max(t2) > mt,
        "the minority's term {} overtakes the majority's {mt}",
        t1.max(t2)
    );
    assert!(
        r.minority_terms
            .windows(2)
            .all(|w| w[0].1 <= w[1].1 && w[0].2 <= w[1].2),
        "terms never go down"
    );
    let candidates: usize = [1, 2]
        .iter()
        .map(|id| entered(c.changes(), *id, StateRole::Candidate, r.split_at).len())
        .sum();
    assert!(candidates >= 2, "the minority campaigns in raised terms");

    // Disruption after the heal: the majority's leader is deposed.
    let deposed = c
        .changes_of(ml)
        .into_iter()
        .find(|ch| ch.clock > r.heal_at && ch.from.role == StateRole::Leader);
    let deposed = deposed
        .unwrap_or_else(|| panic!("without pre-vote the rejoining minority must depose s{ml}"));
    assert!(
        deposed.to.term > mt,
        "s{ml} is deposed by a higher term ({} > {mt})",
        deposed.to.term
    );
    // The cluster recovers under a new leader in a term above the inflated one.
    let nl = c
        .leader()
        .expect("the cluster elects a new leader after the disruption");
    assert!(
        c.term(nl) > mt,
        "the cluster's term rose from {mt} to {}",
        c.term(nl)
    );
    assert!(
        nl >= 3,
        "only a node of the 3 side has the entries to win (got s{nl})"
    );
    for id in 1..=5 {
        assert_eq!(c.term(id), c.term(nl), "s{id} ends in the new term");
        assert_eq!(
            c.applied(id),
            r.expected,
            "s{id} applied everything committed"
        );
    }
}

// ---------------------------------------------------------------------------
// The issue's acceptance criteria
// ---------------------------------------------------------------------------

/// etcd: TestLeaderStepdownWhenQuorumLost
///
/// The issue's acceptance, verbatim: a 5-node cluster split 2|3 with the
/// leader on the 2 side. The old leader steps down within one election
/// timeout of check-quorum detection (detection is possible once a full
/// election timeout has passed since the split) and the 3 side elects a new
/// leader; after the heal, the isolated follower that kept timing out (s2)
/// rejoins without raising the cluster's term or unseating the leader. With
/// pre-vote off the same run shows the disruption.
#[test]
fn issue_acceptance_split_2_3() {
    // Several split positions; the acceptance must hold for each.
    for offset in [0, 5, 9] {
        let r = split_2_3(true, offset, 6 * ET, 3 * ET);
        let c = &r.c;
        let detect = r.split_at + ET;
        let stepdown = r.stepdown_at.expect("the old leader steps down");
        assert!(
            stepdown > detect && stepdown <= detect + ET,
            "offset {offset}: step-down at {stepdown}, detection possible from {detect}: \
             must be within one election timeout of it"
        );
        assert_eq!(
            stepdown,
            r.first_blind_round(),
            "offset {offset}: the step-down happens at the detecting check-quorum round itself"
        );
        let (ml, mt) = r.majority_leader.expect("the 3 side elects a new leader");
        assert!(ml >= 3, "the new leader is on the 3 side");
        let rounds = rounds_of(c, 2, MessageType::MsgPreVote, r.split_at, r.heal_at);
        assert!(
            rounds.len() >= 2,
            "offset {offset}: s2 kept timing out: {rounds:?}"
        );
        assert_eq!(
            c.leader(),
            Some(ml),
            "offset {offset}: the leader is not unseated"
        );
        for id in 1..=5 {
            assert_eq!(
                c.term(id),
                mt,
                "offset {offset}: s{id}: the cluster's term is not raised"
            );
        }
        assert!(
            c.changes_of(ml).iter().all(|ch| ch.clock <= r.heal_at),
            "offset {offset}: s{ml} kept role and term after the heal"
        );
        assert_eq!(c.applied(2), r.expected, "offset {offset}: s2 caught up");
    }

    // Pre-vote off: the same split disrupts the cluster after the heal.
    let r = split_2_3(false, 5, 6 * ET, 6 * ET);
    let (ml, mt) = r.majority_leader.expect("the 3 side elects a new leader");
    assert!(
        r.c.changes_of(ml)
            .iter()
            .any(|ch| ch.clock > r.heal_at && ch.from.role == StateRole::Leader),
        "without pre-vote s{ml} is unseated after the heal"
    );
    let nl = r.c.leader().expect("a leader after recovery");
    assert!(
        r.c.term(nl) > mt,
        "without pre-vote the cluster's term rises above {mt}"
    );
}

// ---------------------------------------------------------------------------
// Seed 002
// ---------------------------------------------------------------------------

/// Runs `cycles` of: s3 loses its link for 2.5 election timeouts, then gets
/// it back for one. In even cycles s3 is cut off from everyone and two
/// entries are committed meanwhile (its log falls behind, so its pre-votes
/// would be refused on the log). In odd cycles only the s1-s3 link fails and
/// nothing is proposed: s3's log is up to date and its pre-votes reach s2,
/// so only s2's check-quorum lease stops them (prevote_checkquorum.txt).
/// Returns the cluster, the initial term, and the payloads proposed.
fn flapping(pre_vote: bool, cycles: usize) -> (Cluster, u64, Vec<String>) {
    let mut c = Cluster::new(3, move |cfg| {
        cfg.check_quorum = true;
        cfg.pre_vote = pre_vote;
    });
    c.campaign(1);
    assert_eq!(c.leader(), Some(1), "s1 wins the initial election");
    let term = c.term(1);
    let mut proposed = Vec::new();
    for cycle in 0..cycles {
        if cycle % 2 == 0 {
            c.isolate(&[3]);
        } else {
            c.cut(1, 3);
        }
        for i in 0..(5 * ET / 2) {
            c.tick_all();
            if i == 3 && cycle % 2 == 0 {
                for k in 0..2 {
                    let p = format!("cycle{cycle}-{k}");
                    if let Some(l) = c.leader() {
                        if c.propose(l, p.clone()).is_ok() {
                            proposed.push(p);
                        }
                    }
                }
            }
        }
        c.heal();
        c.tick_all_n(ET as usize);
    }
    // Give a disrupted cluster time to settle before the final checks.
    c.tick_all_n(4 * ET as usize);
    (c, term, proposed)
}

/// etcd: TestDisruptiveFollowerPreVote
///
/// Seed 002 (prevote.txt, prevote_checkquorum.txt): a member that keeps
/// losing and regaining its link (cut for 2.5 election timeouts, back for
/// 1, five times) times out and pre-campaigns while cut off, but never
/// deposes the healthy leader: leader and term are unchanged at the end,
/// and the member applied every entry committed while it was away.
#[test]
fn seed_002_flapping_member_does_not_depose_leader() {
    let (c, term, proposed) = flapping(true, 5);
    assert_eq!(
        proposed.len(),
        6,
        "every proposal was accepted by the leader"
    );
    let pre = entered(c.changes(), 3, StateRole::PreCandidate, 0);
    assert!(
        pre.len() >= 5,
        "s3 times out and pre-campaigns in every cut: {} times",
        pre.len()
    );
    assert!(
        entered(c.changes(), 3, StateRole::Candidate, 0).is_empty(),
        "s3 never raises its term"
    );
    // In the partial cuts s3's pre-votes did reach s2, which (in its lease)
    // did not grant them.
    assert!(
        c.wire().iter().any(|w| w.delivered
            && w.msg.from == 3
            && w.msg.to == 2
            && w.msg.msg_type == MessageType::MsgPreVote),
        "s3's pre-votes reached s2 during the partial cuts"
    );
    assert!(
        !c.wire().iter().any(|w| w.msg.to == 3
            && w.msg.msg_type == MessageType::MsgPreVoteResp
            && !w.msg.reject),
        "no pre-vote was granted to s3"
    );
    assert_eq!(c.leader(), Some(1), "s1 still leads");
    assert!(
        c.changes_of(1)
            .iter()
            .all(|ch| ch.from.role != StateRole::Leader),
        "s1 never left the leader role"
    );
    for id in 1..=3 {
        assert_eq!(c.term(id), term, "s{id} is still in term {term}");
        assert_eq!(c.applied(id), proposed, "s{id} applied everything");
    }
}

/// etcd: TestDisruptiveFollower
///
/// The flapping member of seed 002 with pre-vote off: it raises its term
/// while cut off and deposes the leader when it comes back, which is what
/// `seed_002_flapping_member_does_not_depose_leader` shows pre-vote prevents.
#[test]
fn seed_002_flapping_member_without_pre_vote_deposes_leader() {
    let (c, term, proposed) = flapping(false, 5);
    assert!(
        !entered(c.changes(), 3, StateRole::Candidate, 0).is_empty(),
        "s3 campaigns in raised terms while cut off"
    );
    assert!(
        c.changes_of(1)
            .iter()
            .any(|ch| ch.from.role == StateRole::Leader),
        "s1 is deposed at least once"
    );
    let l = c.leader().expect("the cluster recovers a leader");
    assert!(c.term(l) > term, "the cluster's term rose above {term}");
    for id in 1..=3 {
        assert_eq!(c.applied(id), proposed, "s{id} applied everything accepted");
    }
}

/// etcd: no direct counterpart (seed 002: etcd 3.4 stopped fast-forwarding
/// the election clock of a restarted member; compare TestDisruptiveFollower)
///
/// Seed 002: a member restarted from its storage (a new RawNode over the
/// same MemoryStorage) keeps its term, vote and log, and waits a full
/// election timeout (at least `election_tick` ticks, less than twice that)
/// before it campaigns on its own; told to campaign it does so at once, and
/// with pre-vote and check-quorum that does not disturb the leader.
#[test]
fn seed_002_restarted_member_waits_an_election_timeout() {
    let mut c = Cluster::new(3, |_| {});
    c.campaign(1);
    for p in ["a", "b", "c"] {
        c.propose(1, p).expect("proposal");
    }
    c.tick_all_n(3);
    let term = c.term(1);
    let hs = c.hard_state(2);
    let stored = c.stored_entries(2);

    // Restart s2 cut off from everyone, so nothing resets its clock; try
    // several seeds to cover several randomized timeouts.
    c.isolate(&[2]);
    let mut waits = Vec::new();
    for seed in 1..=20u64 {
        c.restart_with(2, |cfg| cfg.seed = seed);
        assert_eq!(
            c.role(2),
            StateRole::Follower,
            "seed {seed}: restarts as follower"
        );
        assert_eq!(
            c.hard_state(2),
            hs,
            "seed {seed}: term, vote and commit survive"
        );
        assert_eq!(c.stored_entries(2), stored, "seed {seed}: the log survives");
        assert_eq!(
            c.applied(2),
            ["a", "b", "c"],
            "seed {seed}: nothing applied twice"
        );
        let mark = c.wire_mark();
        let mut waited = 0;
        while c.role(2) == StateRole::Follower {
            c.tick(2);
            waited += 1;
            assert!(waited < 2 * ET, "seed {seed}: s2 never campaigned");
        }
        assert!(
            waited >= ET,
            "seed {seed}: restarted s2 campaigned after {waited} ticks, before a full election \
             timeout ({ET})"
        );
        let first = c
            .wire_since(mark)
            .iter()
            .find(|w| w.msg.from == 2 && is_vote_request(w.msg.msg_type))
            .expect("the campaign shows on the wire");
        assert_eq!(
            first.msg.msg_type,
            MessageType::MsgPreVote,
            "seed {seed}: pre-vote first"
        );
        assert_eq!(
            first.clock,
            c.now(),
            "seed {seed}: no vote request before the timeout"
        );
        assert_eq!(
            c.term(2),
            term,
            "seed {seed}: a pre-vote does not raise the term"
        );
        waits.push(waited);
    }
    waits.sort_unstable();
    waits.dedup();
    assert!(
        waits.len() >= 3,
        "the seeds covered several timeouts: {waits:?}"
    );

    // Unless told to: right after a restart, campaign() starts at once, and
    // the leader (whose followers are in their lease) is not disturbed.
    c.heal();
    c.tick_all_n(2);
    assert_eq!(c.role(2), StateRole::Follower, "s2 rejoined as follower");
    c.restart(2);
    let mark = c.wire_mark();
    let ticks = c.ticks_of(2);
    let at = c.now();
    c.campaign(2);
    assert_eq!(c.ticks_of(2), ticks, "no tick needed");
    let first = c
        .changes_of(2)
        .into_iter()
        .find(|ch| ch.clock == at && ch.to.role != StateRole::Follower)
        .expect("campaign() makes s2 campaign at once");
    assert_eq!(
        (first.to.role, first.to.term),
        (StateRole::PreCandidate, term),
        "campaign() starts a pre-vote at once"
    );
    assert!(
        c.wire_since(mark)
            .iter()
            .any(|w| w.msg.from == 2 && w.msg.msg_type == MessageType::MsgPreVote && w.delivered),
        "s2's pre-votes reached its peers"
    );
    assert_eq!(
        c.leader(),
        Some(1),
        "the peers in their lease ignored the pre-vote"
    );
    assert_eq!(
        c.role(2),
        StateRole::PreCandidate,
        "s2 is left pre-campaigning"
    );
    c.tick_all();
    assert_eq!(
        c.role(2),
        StateRole::Follower,
        "the next heartbeat brings s2 back"
    );
    assert_eq!(c.obs(2).lead, 1);
    for id in 1..=3 {
        assert_eq!(c.term(id), term, "s{id}: the term is unchanged");
    }
}

// ---------------------------------------------------------------------------
// Public-API ports of etcd tests and scripts
// ---------------------------------------------------------------------------

/// etcd: TestLeaderElectionWithCheckQuorum
///
/// With check-quorum (pre-vote off, as in etcd's test), a follower that has
/// not heard from the leader for an election timeout grants its vote even
/// though the leader is alive, while the leader itself, still in its lease,
/// ignores the request; the candidate wins and the old leader steps down.
#[test]
fn test_leader_election_with_check_quorum_public_api() {
    let mut c = Cluster::new(3, |cfg| {
        cfg.check_quorum = true;
        cfg.pre_vote = false;
    });
    c.campaign(1);
    assert_eq!(c.role(1), StateRole::Leader);
    assert_eq!(c.role(3), StateRole::Follower);

    // The leader runs one check-quorum period without its heartbeats
    // getting through: the followers were active in the window (they
    // acknowledged its first entry), so it keeps leading.
    c.isolate(&[1]);
    c.tick_n(1, ET as usize);
    assert_eq!(
        c.role(1),
        StateRole::Leader,
        "quorum was active in the first window"
    );
    c.heal();

    // s2's lease runs out (tick_quiesced advances the election clock
    // without campaigning, standing in for etcd's direct ticks with a
    // larger randomized timeout).
    for _ in 0..ET {
        c.node_mut(2).rn.tick_quiesced();
    }
    let mark = c.wire_mark();
    c.campaign(3);
    assert_eq!(
        c.role(1),
        StateRole::Follower,
        "the old leader stepped down"
    );
    assert_eq!(c.role(3), StateRole::Leader, "s3 won with s2's vote");
    assert_eq!(c.term(3), 2);
    let resp = c.wire_tuples_since(mark, |w| w.msg.msg_type == MessageType::MsgVoteResp);
    assert_eq!(
        resp,
        [(2, 3, MessageType::MsgVoteResp, 2)],
        "only s2 answered; s1 ignored the vote inside its lease"
    );
    let vote_reject = c
        .wire_since(mark)
        .iter()
        .any(|w| w.msg.msg_type == MessageType::MsgVoteResp && w.msg.reject);
    assert!(!vote_reject, "nobody rejected: s1 ignored the request");
}

/// etcd: testdata/single_node.txt
///
/// A single voter elects itself and commits its empty entry on its own,
/// through three Readies (the candidate's hard state, the leader's entry,
/// the commit); with pre-vote it gets there by ticking alone.
#[test]
fn single_node_elects_itself_and_commits() {
    let mut c = Cluster::new_at_index(1, 3, |cfg| cfg.pre_vote = false);
    c.campaign(1);
    assert_eq!(c.role(1), StateRole::Leader);
    assert_eq!(c.term(1), 1);
    let rds = c.readies_of(1);
    assert_eq!(rds.len(), 3, "three Readies as in the script: {rds:?}");
    assert!(rds[0].must_sync);
    assert_eq!(rds[0].soft_state, Some((0, StateRole::Candidate)));
    let hs = rds[0].hard_state.expect("the candidate's hard state");
    assert_eq!((hs.term, hs.vote, hs.commit), (1, 1, 3));
    assert!(rds[0].entries.is_empty() && rds[0].committed.is_empty());
    assert!(rds[1].must_sync);
    assert_eq!(rds[1].soft_state, Some((1, StateRole::Leader)));
    assert_eq!(rds[1].entries, [(1, 4)], "the leader's empty entry");
    assert!(!rds[2].must_sync);
    assert_eq!(rds[2].hard_state.map(|h| h.commit), Some(4));
    assert_eq!(rds[2].committed, [(1, 4)]);
    assert!(c.wire().is_empty(), "a single node sends nothing");
    c.propose(1, "x").expect("proposal");
    assert_eq!(c.applied(1), ["x"]);
    assert_eq!(c.applied_index(1), 5);

    // With pre-vote and no campaign(): ticking alone elects it, passing
    // through PreCandidate (term 0) and Candidate (term 1).
    let mut c = Cluster::new_at_index(1, 3, |_| {});
    let took = c
        .tick_until(2 * ET as usize, |c| c.role(1) == StateRole::Leader)
        .expect("the single node elects itself");
    assert!(
        (ET as usize..2 * ET as usize).contains(&took),
        "after {took} ticks"
    );
    let path: Vec<(StateRole, u64)> = c
        .changes_of(1)
        .iter()
        .map(|ch| (ch.to.role, ch.to.term))
        .collect();
    assert_eq!(
        path,
        [
            (StateRole::PreCandidate, 0),
            (StateRole::Candidate, 1),
            (StateRole::Leader, 1)
        ]
    );
    assert_eq!(c.committed(1), 4);
    c.propose(1, "y").expect("proposal");
    assert_eq!(c.applied(1), ["y"]);
}

/// etcd: testdata/campaign.txt
///
/// Three voters; s1 campaigns. With pre-vote (the brief's variant, as in
/// prevote.txt): MsgPreVote to both peers, their grants, MsgVote to both,
/// their grants, then the leader's empty entry replicated and committed.
/// Without pre-vote, the wire matches campaign.txt line for line.
#[test]
fn campaign_three_nodes() {
    use raftlet::pb::MessageType as M;
    let mut c = Cluster::new_at_index(3, 2, |_| {});
    c.campaign(1);
    let seen = c.wire_tuples_since(0, |_| true);
    assert_eq!(
        seen,
        [
            (1, 2, M::MsgPreVote, 1),
            (1, 3, M::MsgPreVote, 1),
            (2, 1, M::MsgPreVoteResp, 1),
            (3, 1, M::MsgPreVoteResp, 1),
            (1, 2, M::MsgVote, 1),
            (1, 3, M::MsgVote, 1),
            (2, 1, M::MsgVoteResp, 1),
            (3, 1, M::MsgVoteResp, 1),
            (1, 2, M::MsgApp, 1),
            (1, 3, M::MsgApp, 1),
            (2, 1, M::MsgAppResp, 1),
            (3, 1, M::MsgAppResp, 1),
            (1, 2, M::MsgApp, 1),
            (1, 3, M::MsgApp, 1),
            (2, 1, M::MsgAppResp, 1),
            (3, 1, M::MsgAppResp, 1),
        ],
        "message types on the wire, in order"
    );
    assert!(c.wire().iter().all(|w| w.delivered && !w.msg.reject));
    // Pre-votes ask for the next term without raising the candidate's.
    let pv = &c.wire()[0].msg;
    assert_eq!(
        (pv.log_term, pv.index),
        (1, 2),
        "the pre-vote carries the last entry"
    );
    assert_eq!(
        c.changes_of(1)
            .iter()
            .map(|ch| (ch.to.role, ch.to.term))
            .collect::<Vec<_>>(),
        [
            (StateRole::PreCandidate, 0),
            (StateRole::Candidate, 1),
            (StateRole::Leader, 1)
        ]
    );
    for id in 1..=3 {
        assert_eq!(
            c.committed(id),
            3,
            "s{id} committed the leader's empty entry"
        );
        let last = c.node(id).applied_entries.last().expect("applied");
        assert_eq!((last.term, last.index, last.data()), (1, 3, &b""[..]));
    }

    // Without pre-vote: campaign.txt verbatim.
    let mut c = Cluster::new_at_index(3, 2, |cfg| cfg.pre_vote = false);
    c.campaign(1);
    let lines: Vec<String> = c.wire().iter().map(|w| w.describe()).collect();
    assert_eq!(
        lines,
        [
            "1->2 MsgVote Term:1 Log:1/2",
            "1->3 MsgVote Term:1 Log:1/2",
            "2->1 MsgVoteResp Term:1 Log:0/0",
            "3->1 MsgVoteResp Term:1 Log:0/0",
            "1->2 MsgApp Term:1 Log:1/2 Commit:2 Entries:[1/3 EntryNormal \"\"]",
            "1->3 MsgApp Term:1 Log:1/2 Commit:2 Entries:[1/3 EntryNormal \"\"]",
            "2->1 MsgAppResp Term:1 Log:0/3",
            "3->1 MsgAppResp Term:1 Log:0/3",
            "1->2 MsgApp Term:1 Log:1/3 Commit:3",
            "1->3 MsgApp Term:1 Log:1/3 Commit:3",
            "2->1 MsgAppResp Term:1 Log:0/3",
            "3->1 MsgAppResp Term:1 Log:0/3",
        ]
    );
    for id in 1..=3 {
        assert_eq!(c.committed(id), 3);
    }
}
