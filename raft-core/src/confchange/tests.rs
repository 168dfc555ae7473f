//! Tests of configuration changes, ported from etcd-io/raft `confchange/`:
//! the datadriven scripts under `testdata/` become the scripts below, and
//! `quick_test.go` / `restore_test.go` become proptests.

use proptest::prelude::*;

use super::{describe, restore, Changer};
use crate::pb::{ConfChangeSingle, ConfChangeType, ConfState};
use crate::tracker::{describe_progress_map, Config, ProgressMap, ProgressTracker};

/// One command of a script, as in etcd's files: `cmd` is `simple`,
/// `enter-joint` (optionally `enter-joint autoleave=true`) or `leave-joint`;
/// `input` lists the changes (`v1` add voter, `l2` add learner, `r3` remove,
/// `u4` update); `want` is the resulting configuration and progress map
/// (etcd's `Config.String` and `ProgressMap.String`), or the error.
struct Step {
    cmd: &'static str,
    input: &'static str,
    want: &'static str,
}

fn step(cmd: &'static str, input: &'static str, want: &'static str) -> Step {
    Step { cmd, input, want }
}

/// Parses the change syntax of etcd's files (see [`Step`]).
fn parse_changes(input: &str) -> Vec<ConfChangeSingle> {
    input
        .split_whitespace()
        .map(|tok| {
            let change_type = match tok.as_bytes()[0] {
                b'v' => ConfChangeType::ConfChangeAddNode,
                b'l' => ConfChangeType::ConfChangeAddLearnerNode,
                b'r' => ConfChangeType::ConfChangeRemoveNode,
                b'u' => ConfChangeType::ConfChangeUpdateNode,
                _ => panic!("unknown change {tok:?}"),
            };
            let node_id = tok[1..].parse().expect("node id");
            ConfChangeSingle::new(change_type, node_id)
        })
        .collect()
}

/// Runs a script like etcd's harness: an empty tracker (10 messages in
/// flight) and a last index that grows by one after every command, failed
/// ones included.
fn run_script(steps: &[Step]) {
    let mut tracker = ProgressTracker::new(10, 0);
    for (last_index, s) in (0u64..).zip(steps) {
        let ccs = parse_changes(s.input);
        let changer = Changer {
            tracker: &tracker,
            last_index,
        };
        let result = match s.cmd {
            "simple" => changer.simple(&ccs),
            "enter-joint" => changer.enter_joint(false, &ccs),
            "enter-joint autoleave=true" => changer.enter_joint(true, &ccs),
            "enter-joint autoleave=false" => changer.enter_joint(false, &ccs),
            "leave-joint" => {
                assert!(ccs.is_empty(), "leave-joint takes no changes");
                changer.leave_joint()
            }
            other => panic!("unknown command {other:?}"),
        };
        let got = match result {
            Ok((cfg, trk)) => {
                tracker.apply_conf(cfg, trk);
                format!(
                    "{}\n{}",
                    tracker.config,
                    describe_progress_map(&tracker.progress)
                )
            }
            Err(err) => format!("{err}\n"),
        };
        let mut want = s.want.strip_prefix('\n').unwrap_or(s.want).to_string();
        if !want.ends_with('\n') {
            want.push('\n');
        }
        assert_eq!(got, want, "step {last_index}: {} {}", s.cmd, s.input);
    }
}

/// etcd: confchange/testdata/simple_safety.txt
#[test]
fn simple_safety() {
    run_script(&[
        // A learner alone leaves no voter.
        step("simple", "l1", "removed all voters"),
        // Bootstrap the first voter.
        step(
            "simple",
            "v1",
            r"
voters=(1)
1: StateProbe match=0 next=1
",
        ),
        // One voter and one learner at once are fine.
        step(
            "simple",
            "v2 l3",
            r"
voters=(1 2) learners=(3)
1: StateProbe match=0 next=1
2: StateProbe match=0 next=2
3: StateProbe match=0 next=2 learner
",
        ),
        // Swapping a voter changes two voters: needs joint consensus.
        step(
            "simple",
            "r1 v5",
            "more than one voter changed without entering joint config",
        ),
        // Removing both voters leaves none.
        step("simple", "r1 r2", "removed all voters"),
        // Adding two voters at once needs joint consensus.
        step(
            "simple",
            "v3 v4",
            "more than one voter changed without entering joint config",
        ),
        // Demoting one voter while adding another also changes two.
        step(
            "simple",
            "l1 v5",
            "more than one voter changed without entering joint config",
        ),
        // Demoting both voters leaves none.
        step("simple", "l1 l2", "removed all voters"),
        // Any number of learners may be added at once.
        step(
            "simple",
            "l2 l3 l4 l5",
            r"
voters=(1) learners=(2 3 4 5)
1: StateProbe match=0 next=1
2: StateProbe match=0 next=2 learner
3: StateProbe match=0 next=2 learner
4: StateProbe match=0 next=8 learner
5: StateProbe match=0 next=8 learner
",
        ),
        // The last voter cannot be removed.
        step("simple", "r1", "removed all voters"),
        // Any number of learners may be removed at once.
        step(
            "simple",
            "r2 r3 r4 r5",
            r"
voters=(1)
1: StateProbe match=0 next=1
",
        ),
    ]);
}

/// etcd: confchange/testdata/simple_idempotency.txt
#[test]
fn simple_idempotency() {
    run_script(&[
        // Bootstrap voter 1.
        step(
            "simple",
            "v1",
            r"
voters=(1)
1: StateProbe match=0 next=1
",
        ),
        // Adding it again changes nothing (its progress is kept).
        step(
            "simple",
            "v1",
            r"
voters=(1)
1: StateProbe match=0 next=1
",
        ),
        // Add voter 2.
        step(
            "simple",
            "v2",
            r"
voters=(1 2)
1: StateProbe match=0 next=1
2: StateProbe match=0 next=2
",
        ),
        // Demote 1; its progress is kept and marked learner.
        step(
            "simple",
            "l1",
            r"
voters=(2) learners=(1)
1: StateProbe match=0 next=1 learner
2: StateProbe match=0 next=2
",
        ),
        // Demoting it again changes nothing.
        step(
            "simple",
            "l1",
            r"
voters=(2) learners=(1)
1: StateProbe match=0 next=1 learner
2: StateProbe match=0 next=2
",
        ),
        // Remove 1 (a learner): its progress goes.
        step(
            "simple",
            "r1",
            r"
voters=(2)
2: StateProbe match=0 next=2
",
        ),
        // Removing it again changes nothing.
        step(
            "simple",
            "r1",
            r"
voters=(2)
2: StateProbe match=0 next=2
",
        ),
        // Add voter 3.
        step(
            "simple",
            "v3",
            r"
voters=(2 3)
2: StateProbe match=0 next=2
3: StateProbe match=0 next=7
",
        ),
        // Remove it.
        step(
            "simple",
            "r3",
            r"
voters=(2)
2: StateProbe match=0 next=2
",
        ),
        // Removing it again changes nothing.
        step(
            "simple",
            "r3",
            r"
voters=(2)
2: StateProbe match=0 next=2
",
        ),
        // Removing an unknown id changes nothing.
        step(
            "simple",
            "r4",
            r"
voters=(2)
2: StateProbe match=0 next=2
",
        ),
    ]);
}

/// etcd: confchange/testdata/simple_promote_demote.txt
#[test]
fn simple_promote_demote() {
    run_script(&[
        // Build three voters, one at a time.
        step(
            "simple",
            "v1",
            r"
voters=(1)
1: StateProbe match=0 next=1
",
        ),
        // The second.
        step(
            "simple",
            "v2",
            r"
voters=(1 2)
1: StateProbe match=0 next=1
2: StateProbe match=0 next=1
",
        ),
        // The third.
        step(
            "simple",
            "v3",
            r"
voters=(1 2 3)
1: StateProbe match=0 next=1
2: StateProbe match=0 next=1
3: StateProbe match=0 next=2
",
        ),
        // Demoting and re-promoting 1 in one go is a no-op (progress kept).
        step(
            "simple",
            "l1 v1",
            r"
voters=(1 2 3)
1: StateProbe match=0 next=1
2: StateProbe match=0 next=1
3: StateProbe match=0 next=2
",
        ),
        // Demote 2 to a learner.
        step(
            "simple",
            "l2",
            r"
voters=(1 3) learners=(2)
1: StateProbe match=0 next=1
2: StateProbe match=0 next=1 learner
3: StateProbe match=0 next=2
",
        ),
        // Promoting and demoting 2 in one go leaves it a learner.
        step(
            "simple",
            "v2 l2",
            r"
voters=(1 3) learners=(2)
1: StateProbe match=0 next=1
2: StateProbe match=0 next=1 learner
3: StateProbe match=0 next=2
",
        ),
        // Promote 2 back to a voter.
        step(
            "simple",
            "v2",
            r"
voters=(1 2 3)
1: StateProbe match=0 next=1
2: StateProbe match=0 next=1
3: StateProbe match=0 next=2
",
        ),
    ]);
}

/// etcd: confchange/testdata/joint_safety.txt
#[test]
fn joint_safety() {
    run_script(&[
        // Nothing to leave.
        step("leave-joint", "", "can't leave a non-joint config"),
        // An empty configuration cannot become joint...
        step("enter-joint", "", "can't make a zero-voter config joint"),
        // ...even with changes that would populate it.
        step("enter-joint", "v1", "can't make a zero-voter config joint"),
        // Bootstrap voter 1 (last index is 3 by now, so next=3).
        step(
            "simple",
            "v1",
            r"
voters=(1)
1: StateProbe match=0 next=3
",
        ),
        // Still nothing to leave.
        step("leave-joint", "", "can't leave a non-joint config"),
        // Entering joint without changes gives identical halves.
        step(
            "enter-joint",
            "",
            r"
voters=(1)&&(1)
1: StateProbe match=0 next=3
",
        ),
        // Entering twice is refused.
        step("enter-joint", "", "config is already joint"),
        // Leave it again.
        step(
            "leave-joint",
            "",
            r"
voters=(1)
1: StateProbe match=0 next=3
",
        ),
        // Nothing to leave any more.
        step("leave-joint", "", "can't leave a non-joint config"),
        // Enter joint while swapping 1 for 2 and 3 and adding learner 4; 1 keeps its
        // progress while it votes in the outgoing half.
        step(
            "enter-joint",
            "r1 v2 v3 l4",
            r"
voters=(2 3)&&(1) learners=(4)
1: StateProbe match=0 next=3
2: StateProbe match=0 next=9
3: StateProbe match=0 next=9
4: StateProbe match=0 next=9 learner
",
        ),
        // Entering twice is refused...
        step("enter-joint", "", "config is already joint"),
        // ...with changes too.
        step("enter-joint", "v12", "config is already joint"),
        // Simple changes are refused while joint.
        step(
            "simple",
            "l15",
            "can't apply simple config change in joint config",
        ),
        // Leaving drops 1, which is no longer a member.
        step(
            "leave-joint",
            "",
            r"
voters=(2 3) learners=(4)
2: StateProbe match=0 next=9
3: StateProbe match=0 next=9
4: StateProbe match=0 next=9 learner
",
        ),
        // Plain changes work again after leaving.
        step(
            "simple",
            "l9",
            r"
voters=(2 3) learners=(4 9)
2: StateProbe match=0 next=9
3: StateProbe match=0 next=9
4: StateProbe match=0 next=9 learner
9: StateProbe match=0 next=14 learner
",
        ),
    ]);
}

/// etcd: confchange/testdata/joint_idempotency.txt
#[test]
fn joint_idempotency() {
    run_script(&[
        // Bootstrap voter 1.
        step(
            "simple",
            "v1",
            r"
voters=(1)
1: StateProbe match=0 next=1
",
        ),
        // Repeated, redundant and unknown-id changes in one joint entry: 1 ends up a
        // staged learner (it still votes in the outgoing half), 2 a learner, 3 the
        // only incoming voter.
        step(
            "enter-joint",
            "r1 r2 r9 v2 v3 v4 v2 v3 v4 l2 l2 r4 r4 l1 l1",
            r"
voters=(3)&&(1) learners=(2) learners_next=(1)
1: StateProbe match=0 next=1
2: StateProbe match=0 next=1 learner
3: StateProbe match=0 next=1
",
        ),
        // Leaving turns the staged learner 1 into a learner.
        step(
            "leave-joint",
            "",
            r"
voters=(3) learners=(1 2)
1: StateProbe match=0 next=1 learner
2: StateProbe match=0 next=1 learner
3: StateProbe match=0 next=1
",
        ),
    ]);
}

/// etcd: confchange/testdata/joint_autoleave.txt
#[test]
fn joint_autoleave() {
    run_script(&[
        // Bootstrap voter 1.
        step(
            "simple",
            "v1",
            r"
voters=(1)
1: StateProbe match=0 next=1
",
        ),
        // autoleave=true is recorded in the configuration.
        step(
            "enter-joint autoleave=true",
            "v2 v3",
            r"
voters=(1 2 3)&&(1) autoleave
1: StateProbe match=0 next=1
2: StateProbe match=0 next=1
3: StateProbe match=0 next=1
",
        ),
        // Entering again is refused whatever the flag.
        step("enter-joint autoleave=false", "", "config is already joint"),
        // Leaving clears the flag.
        step(
            "leave-joint",
            "",
            r"
voters=(1 2 3)
1: StateProbe match=0 next=1
2: StateProbe match=0 next=1
3: StateProbe match=0 next=1
",
        ),
    ]);
}

/// etcd: confchange/testdata/joint_learners_next.txt
#[test]
fn joint_learners_next() {
    run_script(&[
        // Bootstrap voter 1.
        step(
            "simple",
            "v1",
            r"
voters=(1)
1: StateProbe match=0 next=1
",
        ),
        // Demoting 1 while joint stages it in learners_next: it still votes in the
        // outgoing half and keeps its progress (next=1 shows it was not recreated).
        step(
            "enter-joint",
            "v2 l1",
            r"
voters=(2)&&(1) learners_next=(1)
1: StateProbe match=0 next=1
2: StateProbe match=0 next=1
",
        ),
        // Leaving makes it a learner, still with its original progress.
        step(
            "leave-joint",
            "",
            r"
voters=(2) learners=(1)
1: StateProbe match=0 next=1 learner
2: StateProbe match=0 next=1
",
        ),
    ]);
}

/// etcd: confchange/testdata/update.txt
#[test]
fn update() {
    run_script(&[
        // Bootstrap voter 1.
        step(
            "simple",
            "v1",
            r"
voters=(1)
1: StateProbe match=0 next=1
",
        ),
        // An update next to an addition changes nothing by itself.
        step(
            "simple",
            "v2 u1",
            r"
voters=(1 2)
1: StateProbe match=0 next=1
2: StateProbe match=0 next=1
",
        ),
        // Updates alone (even of unknown ids) change nothing.
        step(
            "simple",
            "u1 u2 u3 u1 u2 u3",
            r"
voters=(1 2)
1: StateProbe match=0 next=1
2: StateProbe match=0 next=1
",
        ),
    ]);
}

/// etcd: confchange/testdata/zero.txt
#[test]
fn zero() {
    run_script(&[
        // Changes for node id 0 are skipped.
        step(
            "simple",
            "v1 r0 v0 l0",
            r"
voters=(1)
1: StateProbe match=0 next=1
",
        ),
    ]);
}

/// Changes of unknown type are refused; `describe` renders the script syntax.
#[test]
fn test_unknown_type_and_describe() {
    let mut tracker = ProgressTracker::new(10, 0);
    let ccs = parse_changes("v1 l2 r3 u4");
    assert_eq!(describe(&ccs), "v1 l2 r3 u4");
    assert_eq!(describe(&[]), "");
    let bad = [ConfChangeSingle::new(ConfChangeType(7), 5)];
    assert_eq!(describe(&bad), "?5");

    let (cfg, trk) = Changer {
        tracker: &tracker,
        last_index: 1,
    }
    .simple(&ccs[..1])
    .unwrap();
    tracker.apply_conf(cfg, trk);
    let changer = Changer {
        tracker: &tracker,
        last_index: 1,
    };
    assert_eq!(changer.simple(&bad).unwrap_err(), "unexpected conf type 7");
    assert_eq!(
        changer.enter_joint(true, &bad).unwrap_err(),
        "unexpected conf type 7"
    );
    // New progress: probing from the last index, active, not a learner.
    let pr = &tracker.progress[&1];
    assert_eq!(
        (pr.matched, pr.next, pr.recent_active, pr.is_learner),
        (0, 1, true, false)
    );
    assert_eq!(pr.inflights.cap(), 10);
}

/// Applies `ccs` one simple change at a time.
fn run_with_simple(tracker: &mut ProgressTracker, last_index: u64, ccs: &[ConfChangeSingle]) {
    for cc in ccs {
        let (cfg, trk) = Changer {
            tracker,
            last_index,
        }
        .simple(std::slice::from_ref(cc))
        .unwrap_or_else(|e| panic!("simple {}: {e}", describe(&[*cc])));
        tracker.apply_conf(cfg, trk);
    }
}

/// Applies `ccs` by entering and leaving a joint configuration, checking
/// on the way that the auto-leave flag changes nothing else.
fn run_with_joint(tracker: &mut ProgressTracker, last_index: u64, ccs: &[ConfChangeSingle]) {
    let changer = Changer {
        tracker,
        last_index,
    };
    let (cfg, trk) = changer.enter_joint(false, ccs).expect("enter joint");
    let (mut cfg_auto, trk_auto) = changer.enter_joint(true, ccs).expect("enter joint");
    assert!(cfg_auto.auto_leave);
    cfg_auto.auto_leave = false;
    assert_eq!((&cfg, &trk), (&cfg_auto, &trk_auto));

    tracker.apply_conf(cfg, trk);
    let joint = tracker.clone();
    let left = Changer {
        tracker: &joint,
        last_index,
    }
    .leave_joint()
    .expect("leave joint");
    // Leaving from the auto-leave variant gives the same result.
    let mut joint_auto = joint.clone();
    joint_auto.config.auto_leave = true;
    let left_auto = Changer {
        tracker: &joint_auto,
        last_index,
    }
    .leave_joint()
    .expect("leave joint");
    assert_eq!(left, left_auto);
    tracker.apply_conf(left.0, left.1);
}

fn change_type() -> impl Strategy<Value = ConfChangeType> {
    prop::sample::select(ConfChangeType::ALL.to_vec())
}

/// Initial voters: 1 (never touched afterwards, so no change can remove the
/// last voter) plus one to five additions among 1..=5.
fn initial_changes() -> impl Strategy<Value = Vec<ConfChangeSingle>> {
    prop::collection::vec(1u64..=5, 1..=5).prop_map(|ids| {
        std::iter::once(1)
            .chain(ids)
            .map(|id| ConfChangeSingle::new(ConfChangeType::ConfChangeAddNode, id))
            .collect()
    })
}

/// One to nine changes of any type for ids 2..=10.
fn conf_changes() -> impl Strategy<Value = Vec<ConfChangeSingle>> {
    prop::collection::vec((change_type(), 2u64..=10), 1..=9).prop_map(|ccs| {
        ccs.into_iter()
            .map(|(t, id)| ConfChangeSingle::new(t, id))
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// etcd: TestConfChangeQuick — applying changes one simple change at a
    /// time, or all at once through a joint configuration, ends in the same
    /// configuration and progress.
    #[test]
    fn test_conf_change_quick(setup in initial_changes(), ccs in conf_changes()) {
        let last_index = 10;
        let mut simple = ProgressTracker::new(10, 0);
        run_with_simple(&mut simple, last_index, &setup);
        let mut joint = simple.clone();

        run_with_simple(&mut simple, last_index, &ccs);
        run_with_joint(&mut joint, last_index, &ccs);
        prop_assert_eq!(&simple.config, &joint.config, "setup {}, changes {}", describe(&setup), describe(&ccs));
        prop_assert_eq!(&simple.progress, &joint.progress);
    }

    /// etcd: TestRestore (confchange) — restoring a random valid ConfState
    /// and reading it back gives the same ConfState.
    #[test]
    fn test_restore(cs in conf_state()) {
        check_restore(cs);
    }
}

/// A random valid ConfState (never the empty one), as etcd's
/// `rndConfChange`: 1-5 voters, 0-4 learners, 0-2 voters removed in the
/// outgoing half (some of them demoted to learners_next), some incoming
/// voters also in the outgoing half, all ids distinct where they must be.
fn conf_state() -> impl Strategy<Value = ConfState> {
    (1usize..=5, 0usize..5, 0usize..3)
        .prop_flat_map(|(n_voters, n_learners, n_removed)| {
            let ids: Vec<u64> = (1..=2 * (n_voters + n_learners + n_removed) as u64).collect();
            (
                Just((n_voters, n_learners, n_removed)),
                Just(ids).prop_shuffle(),
                0..=n_voters,
                0..=n_removed,
                any::<bool>(),
            )
        })
        .prop_map(
            |((n_voters, n_learners, n_removed), ids, retained, n_next, auto)| {
                let mut ids = ids.into_iter();
                let voters: Vec<u64> = ids.by_ref().take(n_voters).collect();
                let learners: Vec<u64> = ids.by_ref().take(n_learners).collect();
                let removed: Vec<u64> = ids.by_ref().take(n_removed).collect();
                let voters_outgoing: Vec<u64> =
                    voters[..retained].iter().chain(&removed).copied().collect();
                let learners_next = removed[..n_next].to_vec();
                ConfState {
                    auto_leave: !voters_outgoing.is_empty() && auto,
                    voters,
                    learners,
                    voters_outgoing,
                    learners_next,
                }
            },
        )
}

fn check_restore(mut cs: ConfState) {
    let tracker = ProgressTracker::new(20, 0);
    let (cfg, trk): (Config, ProgressMap) = restore(
        Changer {
            tracker: &tracker,
            last_index: 10,
        },
        &cs,
    )
    .unwrap_or_else(|e| panic!("restore {cs:?}: {e}"));
    let mut restored = tracker.clone();
    restored.apply_conf(cfg, trk);

    for ids in [
        &mut cs.voters,
        &mut cs.learners,
        &mut cs.voters_outgoing,
        &mut cs.learners_next,
    ] {
        ids.sort_unstable();
    }
    let cs2 = restored.conf_state();
    assert_eq!(cs, cs2);
    cs.equivalent(&cs2).unwrap();
    cs2.equivalent(&cs).unwrap();
}

/// etcd: TestRestore (confchange) — the fixed cases.
#[test]
fn test_restore_cases() {
    let cases = [
        ConfState::default(),
        ConfState::from_voters([1, 2, 3]),
        ConfState {
            voters: vec![1, 2, 3],
            learners: vec![4, 5, 6],
            ..ConfState::default()
        },
        ConfState {
            voters: vec![1, 2, 3],
            learners: vec![5],
            voters_outgoing: vec![1, 2, 4, 6],
            learners_next: vec![4],
            auto_leave: false,
        },
    ];
    for cs in cases {
        check_restore(cs);
    }

    // A member cannot be both voter and learner.
    let tracker = ProgressTracker::new(20, 0);
    let bad = ConfState {
        voters: vec![1],
        learners: vec![1],
        ..ConfState::default()
    };
    let changer = Changer {
        tracker: &tracker,
        last_index: 10,
    };
    assert_eq!(restore(changer, &bad).unwrap_err(), "removed all voters");
}
