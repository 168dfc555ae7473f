//! The learner lifecycle beyond etcd (etcd's learner design, "features
//! proposed for future releases"): learner-first membership, automatic
//! promotion by the leader, standby learners that replace a failed voter,
//! and read-only learners with weak and strong reads.

mod common;

use common::Cluster;
use raftlet::pb::{ConfChange, ConfChangeType, MessageType};
use raftlet::{Config, Error, MembershipEvent, NotPromotable, StateRole};

const ELECTION: usize = 10;

fn voters_of(c: &Cluster, id: u64) -> Vec<u64> {
    c.raw(id).status().config.voters.ids().into_iter().collect()
}

fn learners_of(c: &Cluster, id: u64) -> Vec<u64> {
    c.raw(id).status().config.learners.iter().copied().collect()
}

fn promotions(c: &Cluster) -> Vec<MembershipEvent> {
    c.membership_events.iter().map(|(_, _, e)| *e).collect()
}

/// A 5-voter cluster with node 1 leading.
fn five_voters(tweak: impl Fn(&mut Config) + 'static) -> Cluster {
    let mut c = Cluster::new(5, tweak);
    c.campaign(1);
    assert_eq!(c.leader(), Some(1));
    c
}

/// With auto_promote on, a learner joining a 5-voter cluster that holds
/// 50,000 entries (compacted at 40,000, so it catches up by snapshot) is
/// promoted exactly once, only after it is within the threshold; the leader
/// keeps its role and the term never changes while it catches up (checked
/// at every tick).
#[test]
fn auto_promotion_of_a_learner_that_catches_up_by_snapshot() {
    let mut c = five_voters(|cfg| cfg.auto_promote = true);
    for batch in 0..50 {
        let data: Vec<Vec<u8>> = (0..1000)
            .map(|i| format!("{}", batch * 1000 + i).into_bytes())
            .collect();
        c.propose_batch(1, data).expect("propose");
    }
    assert!(c.committed(1) >= 50_000);
    for id in 1..=5 {
        c.compact_to(id, 40_001);
    }
    let term = c.term(1);
    c.add_node(6);
    c.node_mut(1)
        .rn
        .add_member(6, "node-6:2380")
        .expect("add member");
    c.stabilize();
    assert_eq!(learners_of(&c, 1), vec![6], "learner first");
    assert!(!voters_of(&c, 1).contains(&6));

    let max_lag = c.node(1).config.promote_max_lag;
    let mut ticks = 0;
    let mut promoted_at = None;
    while promoted_at.is_none() {
        // The leader's view of the learner before this tick.
        let st = c.raw(1).status();
        let before = st.learners.iter().find(|l| l.id == 6).cloned();
        let events = c.membership_events.len();
        c.tick_all();
        ticks += 1;
        assert_eq!(c.leader(), Some(1), "tick {ticks}: the leader changed");
        assert_eq!(c.term(1), term, "tick {ticks}: the term changed");
        if c.membership_events.len() > events {
            let before = before.expect("6 was a learner");
            assert!(
                before.lag <= max_lag,
                "promoted while {} entries behind",
                before.lag
            );
            assert_ne!(before.state, raftlet::tracker::ProgressState::Snapshot);
            promoted_at = Some(ticks);
        }
        assert!(ticks < 100 * ELECTION, "never promoted");
    }
    assert!(
        c.node(6).storage.rl().snapshot_ref().metadata.index >= 40_000,
        "the learner caught up by snapshot"
    );
    // The promotion applies; nothing more is proposed.
    c.tick_all_n(5 * ELECTION);
    assert_eq!(voters_of(&c, 1), vec![1, 2, 3, 4, 5, 6]);
    assert!(learners_of(&c, 1).is_empty());
    assert_eq!(c.term(1), term);
    assert_eq!(
        promotions(&c),
        vec![MembershipEvent::PromotionProposed {
            id: 6,
            index: match promotions(&c)[0] {
                MembershipEvent::PromotionProposed { index, .. } => index,
                other => panic!("{other:?}"),
            }
        }]
    );
}

/// Three voters and learner 4, with `tweak` on every node; the learner has
/// caught up. It starts from an empty storage and gets the configuration
/// from the leader's snapshot, as a new member does.
fn three_and_learner(tweak: impl Fn(&mut Config) + 'static) -> Cluster {
    let mut c = Cluster::new(3, tweak);
    c.campaign(1);
    c.propose(1, "init").expect("propose");
    for id in 1..=3 {
        let applied = c.applied_index(id);
        c.compact_to(id, applied + 1);
    }
    c.add_node(4);
    c.node_mut(1).rn.add_member(4, "").expect("add member");
    c.stabilize();
    c.tick_all_n(2);
    assert_eq!(learners_of(&c, 1), vec![4]);
    assert_eq!(
        learners_of(&c, 4),
        vec![4],
        "the learner knows its configuration"
    );
    c
}

/// A learner that answers heartbeats but does not receive appends falls
/// behind; it is never auto-promoted, and the status says why.
#[test]
fn a_lagging_learner_is_never_auto_promoted() {
    let mut c = three_and_learner(|cfg| {
        cfg.auto_promote = true;
        cfg.promote_max_lag = 100;
    });
    c.set_filter(Some(Box::new(|m| {
        !(m.to == 4 && m.msg_type == MessageType::MsgApp)
    })));
    for i in 0..300 {
        c.propose(1, format!("w{i}")).expect("propose");
    }
    c.tick_all_n(20 * ELECTION);
    assert!(promotions(&c).is_empty(), "{:?}", promotions(&c));
    assert_eq!(learners_of(&c, 1), vec![4]);
    let st = c.raw(1).status();
    assert!(
        matches!(
            st.learners[0].not_promotable,
            Some(NotPromotable::Lagging { max: 100, .. })
        ),
        "{:?}",
        st.learners
    );
}

/// A learner that needs a snapshot which never arrives stays in snapshot
/// state; it is never auto-promoted.
#[test]
fn a_learner_in_snapshot_state_is_never_auto_promoted() {
    let mut c = Cluster::new(3, |cfg| cfg.auto_promote = true);
    c.campaign(1);
    for i in 0..50 {
        c.propose(1, format!("w{i}")).expect("propose");
    }
    for id in 1..=3 {
        let applied = c.applied_index(id);
        c.compact_to(id, applied + 1);
    }
    c.add_node(4);
    c.set_filter(Some(Box::new(|m| m.msg_type != MessageType::MsgSnap)));
    c.node_mut(1).rn.add_member(4, "").expect("add member");
    c.stabilize();
    c.tick_all_n(20 * ELECTION);
    assert!(promotions(&c).is_empty());
    let st = c.raw(1).status();
    assert_eq!(st.learners.len(), 1);
    assert_eq!(
        st.learners[0].not_promotable,
        Some(NotPromotable::InSnapshot)
    );
    // Once the snapshot gets through it catches up and is promoted.
    c.set_filter(None);
    c.node_mut(1)
        .rn
        .report_snapshot(4, raftlet::SnapshotStatus::Failure);
    c.tick_all_n(20 * ELECTION);
    assert_eq!(voters_of(&c, 1), vec![1, 2, 3, 4]);
}

/// A caught-up learner that stopped answering is never auto-promoted.
#[test]
fn a_learner_that_stopped_responding_is_never_auto_promoted() {
    let mut c = three_and_learner(|cfg| cfg.auto_promote = false);
    c.stop(4);
    c.node_mut(1).rn.set_auto_promote(true).expect("on");
    c.tick_all_n(20 * ELECTION);
    assert!(promotions(&c).is_empty());
    let st = c.raw(1).status();
    assert!(
        matches!(
            st.learners[0].not_promotable,
            Some(NotPromotable::NotActiveLongEnough {
                active_rounds: 0,
                ..
            })
        ),
        "{:?}",
        st.learners
    );
}

/// Turning auto_promote off before the learner qualifies stops it; turning
/// it on again promotes it.
#[test]
fn turning_auto_promote_off_midway_stops_it() {
    let mut c = three_and_learner(|cfg| {
        cfg.auto_promote = true;
        cfg.promote_min_active_rounds = 3;
    });
    c.tick_all_n(ELECTION);
    c.node_mut(1).rn.set_auto_promote(false).expect("off");
    c.tick_all_n(20 * ELECTION);
    assert!(promotions(&c).is_empty());
    assert_eq!(
        c.raw(1).status().learners[0].not_promotable,
        None,
        "it would qualify"
    );
    c.node_mut(1).rn.set_auto_promote(true).expect("on");
    c.tick_all_n(2 * ELECTION);
    assert_eq!(promotions(&c).len(), 1);
    c.tick_all_n(ELECTION);
    assert_eq!(voters_of(&c, 1), vec![1, 2, 3, 4]);
}

/// Whether every voter set of `id`'s configuration has a majority of
/// running members.
fn live_quorum(c: &Cluster, id: u64) -> bool {
    let cfg = c.raw(id).status().config;
    let live = |set: &[u64]| {
        set.is_empty() || set.iter().filter(|v| c.node(**v).running).count() > set.len() / 2
    };
    live(cfg.voters.incoming.ids()) && live(cfg.voters.outgoing.ids())
}

fn standby_config(cfg: &mut Config) {
    cfg.standby_promotion = true;
}

/// 3 voters + 1 standby; one voter dies: within the documented bound
/// ((standby_dead_rounds + 2) election timeouts) the standby is a voter and
/// the dead node a learner, and every configuration on the way has a live
/// quorum.
#[test]
fn a_standby_replaces_a_failed_voter() {
    let mut c = three_and_learner(standby_config);
    c.tick_all_n(5 * ELECTION);
    assert!(promotions(&c).is_empty(), "nothing to replace");
    c.stop(3);
    let dead_rounds = c.node(1).config.standby_dead_rounds as usize;
    let bound = (dead_rounds + 2) * ELECTION;
    let mut ticks = 0;
    while voters_of(&c, 1) != vec![1, 2, 4] {
        c.tick_all();
        ticks += 1;
        assert_eq!(c.leader(), Some(1));
        assert!(
            live_quorum(&c, 1),
            "tick {ticks}: {:?}",
            c.raw(1).status().config
        );
        assert!(ticks <= bound, "not replaced within {bound} ticks");
    }
    c.tick_all_n(2 * ELECTION);
    assert_eq!(voters_of(&c, 1), vec![1, 2, 4]);
    assert_eq!(learners_of(&c, 1), vec![3]);
    assert_eq!(
        promotions(&c)
            .iter()
            .map(|e| match e {
                MembershipEvent::StandbySwapProposed {
                    promoted, demoted, ..
                } => (*promoted, *demoted),
                other => panic!("{other:?}"),
            })
            .collect::<Vec<_>>(),
        vec![(4, 3)]
    );
    // The cluster keeps committing with its three live voters.
    c.propose(1, "after").expect("propose");
    assert!(c.applied(2).contains(&"after".to_string()));

    // The demoted voter comes back as a learner; when another voter fails
    // it is the standby that replaces it.
    c.restart(3);
    c.tick_all_n(5 * ELECTION);
    assert_eq!(learners_of(&c, 1), vec![3]);
    c.stop(2);
    c.tick_all_n((dead_rounds + 4) * ELECTION);
    assert_eq!(voters_of(&c, 1), vec![1, 3, 4]);
    assert_eq!(learners_of(&c, 1), vec![2]);
}

/// Two of three voters die: no quorum, nothing is promoted, and nothing
/// breaks when they return.
#[test]
fn no_standby_promotion_without_quorum() {
    let mut c = three_and_learner(standby_config);
    c.tick_all_n(5 * ELECTION);
    c.stop(2);
    c.stop(3);
    c.tick_all_n(10 * ELECTION);
    assert!(promotions(&c).is_empty());
    assert_eq!(voters_of(&c, 1), vec![1, 2, 3]);
    c.restart(2);
    c.restart(3);
    c.tick_all_n(10 * ELECTION);
    assert!(c.leader().is_some());
    let l = c.leader().expect("leader");
    assert_eq!(voters_of(&c, l), vec![1, 2, 3]);
    assert!(promotions(&c).is_empty());
    c.propose(l, "back").expect("propose");
    assert!(c.applied(3).contains(&"back".to_string()));
}

/// A voter that comes and goes every two election timeouts is never
/// swapped out (it is never silent for standby_dead_rounds rounds in a
/// row): no promotion storm.
#[test]
fn a_flapping_voter_causes_no_promotion_storm() {
    let mut c = three_and_learner(standby_config);
    c.tick_all_n(5 * ELECTION);
    for _ in 0..8 {
        c.stop(3);
        c.tick_all_n(2 * ELECTION);
        c.restart(3);
        c.tick_all_n(2 * ELECTION);
    }
    assert!(promotions(&c).is_empty(), "{:?}", promotions(&c));
    assert_eq!(voters_of(&c, 1), vec![1, 2, 3]);
}

/// etcd's learner design, figures 8 and 9: a member added with a wrong
/// address never answers. Added as a learner (learner-first, the default)
/// the quorum size never changes, writes keep committing, and removing it
/// succeeds. Added as a voter (learner_first off) it joins the quorum.
#[test]
fn a_member_with_a_wrong_address_never_changes_the_quorum() {
    let mut c = Cluster::new(3, |_| {});
    c.campaign(1);
    // Node 4 does not exist: every message to it is lost.
    c.node_mut(1)
        .rn
        .add_member(4, "wrong-host:2380")
        .expect("add member");
    c.stabilize();
    assert_eq!(voters_of(&c, 1), vec![1, 2, 3]);
    assert_eq!(learners_of(&c, 1), vec![4]);
    c.stop(3);
    c.propose(1, "still commits").expect("propose");
    assert!(c.applied(2).contains(&"still commits".to_string()));
    c.propose_conf_change(
        1,
        ConfChange {
            change_type: ConfChangeType::ConfChangeRemoveNode,
            node_id: 4,
            ..ConfChange::default()
        },
    )
    .expect("remove");
    assert!(learners_of(&c, 1).is_empty());
    assert_eq!(voters_of(&c, 1), vec![1, 2, 3]);

    // The contrast: as a voter the unreachable member counts in the quorum.
    let mut c = Cluster::new(3, |cfg| cfg.learner_first = false);
    c.campaign(1);
    c.node_mut(1)
        .rn
        .add_member(4, "wrong-host:2380")
        .expect("add");
    c.stabilize();
    assert_eq!(voters_of(&c, 1), vec![1, 2, 3, 4]);
    // Adding an existing member is refused.
    assert!(matches!(
        c.node_mut(1).rn.add_member(2, ""),
        Err(Error::ConfChangeRefused(_))
    ));
}

/// A weak read on a learner reports the applied index it is served at
/// (stale while the learner lags); a strong read goes through the leader
/// and its index covers every write acknowledged before it began.
#[test]
fn learner_reads_weak_and_strong() {
    let mut c = three_and_learner(|cfg| {
        if cfg.id == 4 {
            cfg.learner_forwards_proposals = false;
        }
    });
    c.propose(1, "a").expect("propose");
    let a_index = c.applied_index(1);
    assert_eq!(c.raw(4).read_local().applied, a_index);

    // The learner stops receiving appends; writes go on.
    c.set_filter(Some(Box::new(|m| {
        !(m.to == 4 && m.msg_type == MessageType::MsgApp)
    })));
    c.propose(1, "b").expect("propose");
    let b_index = c.applied_index(1);
    let weak = c.raw(4).read_local();
    assert_eq!(weak.applied, a_index, "a weak read is stale, and says so");
    assert!(weak.applied < b_index);

    // A strong read: forwarded to the leader, answered with an index that
    // covers "b", acknowledged before the read began.
    c.set_filter(None);
    c.read_index(4, "r1").expect("read index");
    let rs = c.read_states_of(4);
    assert_eq!(rs.len(), 1);
    assert!(rs[0].index >= b_index, "{rs:?}");
    c.tick_all_n(2);
    assert!(c.applied_index(4) >= rs[0].index);
    assert!(c.applied(4).contains(&"b".to_string()));

    // A read-only learner refuses writes instead of forwarding them.
    assert_eq!(
        c.node_mut(4).rn.propose(b"w".to_vec()),
        Err(Error::ProposalDropped)
    );
    assert_eq!(
        c.raw(4).basic_status().soft_state.raft_state,
        StateRole::Follower
    );
}

/// A member added but never started is "recently active" at first (the
/// grace check-quorum gives a new peer), but it has answered nothing: even
/// with a single round required and a short log (its lag is within the
/// threshold), it is never auto-promoted.
#[test]
fn a_learner_that_never_started_is_never_auto_promoted() {
    let mut c = Cluster::new(3, |cfg| {
        cfg.auto_promote = true;
        cfg.promote_min_active_rounds = 1;
    });
    c.campaign(1);
    c.node_mut(1)
        .rn
        .add_member(4, "never-started")
        .expect("add member");
    c.stabilize();
    c.tick_all_n(10 * ELECTION);
    assert!(promotions(&c).is_empty(), "{:?}", promotions(&c));
    assert_eq!(voters_of(&c, 1), vec![1, 2, 3]);
    assert_eq!(learners_of(&c, 1), vec![4]);
}
