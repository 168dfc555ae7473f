//! Tests of the quorum rules, ported from etcd-io/raft `quorum/` (the
//! datadriven files under `testdata/` become the tables below, and
//! `quick_test.go` becomes a proptest).
//!
//! Like etcd's harness, every table case is also checked against
//! alternative computations that must agree: a naive reference, the majority
//! joined with an empty or an identical majority, lowered indexes that must
//! not change the result, and the two halves of a joint configuration
//! swapped.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use proptest::collection::{btree_map, btree_set};
use proptest::prelude::*;

use super::VoteResult::{Lost, Pending, Won};
use super::{index_string, AckedIndexer, JointConfig, MajorityConfig, VoteResult};

/// etcd's `_` in the tables: nothing is known about this voter. The tables
/// never use 0 as a real index, so 0 can stand for "unknown".
const U: u64 = 0;

/// One `committed` case of etcd's datadriven files.
#[derive(Debug)]
struct CommitCase {
    /// The majority (the incoming half when joint).
    cfg: &'static [u64],
    /// The outgoing half: `None` tests the majority alone; `Some(&[])` is
    /// etcd's `cfgj=zero`, a joint configuration with an empty half.
    cfgj: Option<&'static [u64]>,
    /// Acknowledged indexes, one per distinct voter in order of first
    /// appearance in `cfg` then `cfgj` ([`U`] for unknown).
    idx: &'static [u64],
    /// The expected committed index.
    want: u64,
    /// The expected `describe` output (a leading newline is ignored).
    describe: &'static str,
}

/// One `vote` case of etcd's datadriven files.
#[derive(Debug)]
struct VoteCase {
    cfg: &'static [u64],
    cfgj: Option<&'static [u64]>,
    /// One character per distinct voter (same order as [`CommitCase::idx`]):
    /// `y` yes, `n` no, `_` not voted.
    votes: &'static str,
    want: VoteResult,
}

fn vote(
    cfg: &'static [u64],
    cfgj: Option<&'static [u64]>,
    votes: &'static str,
    want: VoteResult,
) -> VoteCase {
    VoteCase {
        cfg,
        cfgj,
        votes,
        want,
    }
}

fn majority(ids: &[u64]) -> MajorityConfig {
    ids.iter().copied().collect()
}

fn joint(incoming: &[u64], outgoing: &[u64]) -> JointConfig {
    JointConfig {
        incoming: majority(incoming),
        outgoing: majority(outgoing),
    }
}

/// Hands out `vals` to the distinct ids of `cfg` then `cfgj`, in order of
/// first appearance, leaving out zeros (unknown).
fn assign(cfg: &[u64], cfgj: &[u64], vals: &[u64]) -> BTreeMap<u64, u64> {
    let mut seen = BTreeSet::new();
    let mut vals = vals.iter();
    let mut out = BTreeMap::new();
    for &id in cfg.iter().chain(cfgj) {
        if !seen.insert(id) {
            continue;
        }
        let v = *vals.next().expect("fewer values than voters");
        if v != 0 {
            out.insert(id, v);
        }
    }
    assert!(vals.next().is_none(), "more values than voters");
    out
}

/// The reference answer: every voter's acknowledged index (0 when unknown),
/// sorted from highest to lowest; the quorum-th of them is acknowledged by a
/// quorum.
fn naive_committed(c: &MajorityConfig, l: &impl AckedIndexer) -> u64 {
    if c.is_empty() {
        return u64::MAX;
    }
    let mut acked: Vec<u64> = c.iter().map(|&id| l.acked_index(id).unwrap_or(0)).collect();
    acked.sort_unstable_by(|a, b| b.cmp(a));
    let quorum = c.len() / 2 + 1;
    acked[quorum - 1]
}

fn check_majority_commit(case: &CommitCase) {
    assert!(case.cfgj.is_none());
    let c = majority(case.cfg);
    let l = assign(case.cfg, &[], case.idx);
    let got = c.committed_index(&l);
    assert_eq!(got, case.want, "{case:?}");
    assert_eq!(naive_committed(&c, &l), got, "naive reference: {case:?}");
    assert_eq!(
        joint(case.cfg, &[]).committed_index(&l),
        got,
        "zero-joint: {case:?}"
    );
    assert_eq!(
        joint(case.cfg, case.cfg).committed_index(&l),
        got,
        "self-joint: {case:?}"
    );
    // Lowering the index of a voter that is already below the committed
    // index cannot change the result.
    for &id in c.iter() {
        let acked = l.get(&id).copied().unwrap_or(0);
        if got > acked && acked > 0 {
            for lowered in [acked - 1, 0] {
                let mut l2 = l.clone();
                l2.insert(id, lowered);
                assert_eq!(c.committed_index(&l2), got, "{id}->{lowered}: {case:?}");
            }
        }
    }
}

fn check_joint_commit(case: &CommitCase) {
    let cfgj = case.cfgj.expect("joint case");
    let l = assign(case.cfg, cfgj, case.idx);
    let got = joint(case.cfg, cfgj).committed_index(&l);
    assert_eq!(got, case.want, "{case:?}");
    assert_eq!(
        joint(cfgj, case.cfg).committed_index(&l),
        got,
        "symmetry: {case:?}"
    );
}

fn check_vote(case: &VoteCase) {
    let vals: Vec<u64> = case
        .votes
        .chars()
        .map(|c| match c {
            '_' => 0,
            'n' => 1,
            'y' => 2,
            _ => panic!("bad vote {c:?}"),
        })
        .collect();
    let votes = assign(case.cfg, case.cfgj.unwrap_or(&[]), &vals);
    let check = |id: u64| votes.get(&id).map(|&v| v == 2);
    let got = match case.cfgj {
        None => majority(case.cfg).vote_result(check),
        Some(cfgj) => {
            let got = joint(case.cfg, cfgj).vote_result(check);
            let swapped = joint(cfgj, case.cfg).vote_result(check);
            assert_eq!(swapped, got, "symmetry: {case:?}");
            got
        }
    };
    assert_eq!(got, case.want, "{case:?}");
}

/// etcd: quorum/testdata/majority_commit.txt
const MAJORITY_COMMIT: &[CommitCase] = &[
    // An empty majority commits everything (u64::MAX), so that it is neutral as
    // the unused half of a joint configuration.
    CommitCase {
        cfg: &[],
        cfgj: None,
        idx: &[],
        want: u64::MAX,
        describe: "<empty majority quorum>",
    },
    // One voter, nothing acknowledged yet: nothing is committed.
    CommitCase {
        cfg: &[1],
        cfgj: None,
        idx: &[U],
        want: 0,
        describe: r"
     idx
?      0    (id=1)
",
    },
    // One voter: its acknowledged index is the committed index.
    CommitCase {
        cfg: &[1],
        cfgj: None,
        idx: &[12],
        want: 12,
        describe: r"
     idx
>     12    (id=1)
",
    },
    // Two voters, nothing known.
    CommitCase {
        cfg: &[1, 2],
        cfgj: None,
        idx: &[U, U],
        want: 0,
        describe: r"
      idx
?       0    (id=1)
?       0    (id=2)
",
    },
    // Two voters need both: 12 is acked by one only, so nothing is committed.
    CommitCase {
        cfg: &[1, 2],
        cfgj: None,
        idx: &[12, U],
        want: 0,
        describe: r"
      idx
x>     12    (id=1)
?       0    (id=2)
",
    },
    // Both known: the smaller of the two is committed.
    CommitCase {
        cfg: &[1, 2],
        cfgj: None,
        idx: &[12, 5],
        want: 5,
        describe: r"
      idx
x>     12    (id=1)
>       5    (id=2)
",
    },
    // Three voters, nothing known.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: None,
        idx: &[U, U, U],
        want: 0,
        describe: r"
       idx
?        0    (id=1)
?        0    (id=2)
?        0    (id=3)
",
    },
    // One ack out of three is not a quorum.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: None,
        idx: &[12, U, U],
        want: 0,
        describe: r"
       idx
xx>     12    (id=1)
?        0    (id=2)
?        0    (id=3)
",
    },
    // Two acks: the lower of them (5) is on a quorum; voter 3 could still raise it.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: None,
        idx: &[12, 5, U],
        want: 5,
        describe: r"
       idx
xx>     12    (id=1)
x>       5    (id=2)
?        0    (id=3)
",
    },
    // Voter 3 reports 6, which raises the quorum index to 6.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: None,
        idx: &[12, 5, 6],
        want: 6,
        describe: r"
       idx
xx>     12    (id=1)
>        5    (id=2)
x>       6    (id=3)
",
    },
    // Voter 3 reports 4, below 5: the result stays 5.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: None,
        idx: &[12, 5, 4],
        want: 5,
        describe: r"
       idx
xx>     12    (id=1)
x>       5    (id=2)
>        4    (id=3)
",
    },
    // Two voters at 5; the third cannot push the result beyond 5.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: None,
        idx: &[5, 5, U],
        want: 5,
        describe: r"
       idx
x>       5    (id=1)
>        5    (id=2)
?        0    (id=3)
",
    },
    // ...and indeed a high index from voter 3 leaves it at 5.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: None,
        idx: &[5, 5, 12],
        want: 5,
        describe: r"
       idx
>        5    (id=1)
>        5    (id=2)
xx>     12    (id=3)
",
    },
    // Everything known: the median (101) is committed.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: None,
        idx: &[100, 101, 103],
        want: 101,
        describe: r"
       idx
>      100    (id=1)
x>     101    (id=2)
xx>    103    (id=3)
",
    },
    // Five voters: 103 is acked by three (2, 3, 4), so it is committed even with
    // voter 5 unknown.
    CommitCase {
        cfg: &[1, 2, 3, 4, 5],
        cfgj: None,
        idx: &[101, 104, 103, 103, U],
        want: 103,
        describe: r"
         idx
x>       101    (id=1)
xxxx>    104    (id=2)
xx>      103    (id=3)
>        103    (id=4)
?          0    (id=5)
",
    },
    // Only two voters are at 103 or above, so the quorum index is 102 (acked by
    // 2, 3 and 4).
    CommitCase {
        cfg: &[1, 2, 3, 4, 5],
        cfgj: None,
        idx: &[101, 102, 103, 103, U],
        want: 102,
        describe: r"
         idx
x>       101    (id=1)
xx>      102    (id=2)
xxx>     103    (id=3)
>        103    (id=4)
?          0    (id=5)
",
    },
];

/// etcd: quorum/testdata/joint_commit.txt
const JOINT_COMMIT: &[CommitCase] = &[
    // A majority joint with an empty majority behaves like the majority alone
    // (etcd's `cfgj=zero`, which forces the joint code path).
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[]),
        idx: &[100, 101, 99],
        want: 100,
        describe: r"
       idx
x>     100    (id=1)
xx>    101    (id=2)
>       99    (id=3)
",
    },
    // Two disjoint single-voter halves, nothing known.
    CommitCase {
        cfg: &[1],
        cfgj: Some(&[2]),
        idx: &[U, U],
        want: 0,
        describe: r"
      idx
?       0    (id=1)
?       0    (id=2)
",
    },
    // Voter 1 acked 100 but the other half (voter 2) is unknown: nothing committed.
    CommitCase {
        cfg: &[1],
        cfgj: Some(&[2]),
        idx: &[100, U],
        want: 0,
        describe: r"
      idx
x>    100    (id=1)
?       0    (id=2)
",
    },
    // Both halves known: the lower of the two (13) is committed.
    CommitCase {
        cfg: &[1],
        cfgj: Some(&[2]),
        idx: &[13, 100],
        want: 13,
        describe: r"
      idx
>      13    (id=1)
x>    100    (id=2)
",
    },
    // Both halves are the same single voter, unknown.
    CommitCase {
        cfg: &[1],
        cfgj: Some(&[1]),
        idx: &[U],
        want: 0,
        describe: r"
     idx
?      0    (id=1)
",
    },
    // Both halves are the same single voter, which acked 100.
    CommitCase {
        cfg: &[1],
        cfgj: Some(&[1]),
        idx: &[100],
        want: 100,
        describe: r"
     idx
>    100    (id=1)
",
    },
    // Halves (1 3) and (2), nothing known.
    CommitCase {
        cfg: &[1, 3],
        cfgj: Some(&[2]),
        idx: &[U, U, U],
        want: 0,
        describe: r"
       idx
?        0    (id=1)
?        0    (id=2)
?        0    (id=3)
",
    },
    // Only voter 1 known: neither half has a quorum.
    CommitCase {
        cfg: &[1, 3],
        cfgj: Some(&[2]),
        idx: &[100, U, U],
        want: 0,
        describe: r"
       idx
xx>    100    (id=1)
?        0    (id=2)
?        0    (id=3)
",
    },
    // Voter 2 acks 50, settling the (2) half at 50; the (1 3) half still needs 3.
    CommitCase {
        cfg: &[1, 3],
        cfgj: Some(&[2]),
        idx: &[100, U, 50],
        want: 0,
        describe: r"
       idx
xx>    100    (id=1)
x>      50    (id=2)
?        0    (id=3)
",
    },
    // Voter 3 acks 45: the (1 3) half commits 45, the lower of both halves.
    CommitCase {
        cfg: &[1, 3],
        cfgj: Some(&[2]),
        idx: &[100, 45, 50],
        want: 45,
        describe: r"
       idx
xx>    100    (id=1)
x>      50    (id=2)
>       45    (id=3)
",
    },
    // Halves (1 2) and (2), nothing known.
    CommitCase {
        cfg: &[1, 2],
        cfgj: Some(&[2]),
        idx: &[U, U],
        want: 0,
        describe: r"
      idx
?       0    (id=1)
?       0    (id=2)
",
    },
    // Only voter 1 acked.
    CommitCase {
        cfg: &[1, 2],
        cfgj: Some(&[2]),
        idx: &[100, U],
        want: 0,
        describe: r"
      idx
x>    100    (id=1)
?       0    (id=2)
",
    },
    // Only voter 2 acked: the (2) half commits 100, the (1 2) half nothing.
    CommitCase {
        cfg: &[1, 2],
        cfgj: Some(&[2]),
        idx: &[U, 100],
        want: 0,
        describe: r"
      idx
?       0    (id=1)
x>    100    (id=2)
",
    },
    // Both known: the (1 2) half limits the result to 50.
    CommitCase {
        cfg: &[1, 2],
        cfgj: Some(&[2]),
        idx: &[50, 100],
        want: 50,
        describe: r"
      idx
>      50    (id=1)
x>    100    (id=2)
",
    },
    // Swapped indexes: again 50.
    CommitCase {
        cfg: &[1, 2],
        cfgj: Some(&[2]),
        idx: &[100, 50],
        want: 50,
        describe: r"
      idx
x>    100    (id=1)
>      50    (id=2)
",
    },
    // Disjoint halves (1 2) and (3 4): one ack is not enough.
    CommitCase {
        cfg: &[1, 2],
        cfgj: Some(&[3, 4]),
        idx: &[50, U, U, U],
        want: 0,
        describe: r"
        idx
xxx>     50    (id=1)
?         0    (id=2)
?         0    (id=3)
?         0    (id=4)
",
    },
    // One ack in each half is still not a quorum of either.
    CommitCase {
        cfg: &[1, 2],
        cfgj: Some(&[3, 4]),
        idx: &[50, U, 49, U],
        want: 0,
        describe: r"
        idx
xxx>     50    (id=1)
?         0    (id=2)
xx>      49    (id=3)
?         0    (id=4)
",
    },
    // The (1 2) half commits 48; the (3 4) half still waits for voter 4.
    CommitCase {
        cfg: &[1, 2],
        cfgj: Some(&[3, 4]),
        idx: &[50, 48, 49, U],
        want: 0,
        describe: r"
        idx
xxx>     50    (id=1)
x>       48    (id=2)
xx>      49    (id=3)
?         0    (id=4)
",
    },
    // All known: (1 2) commits 48, (3 4) commits 47, so 47.
    CommitCase {
        cfg: &[1, 2],
        cfgj: Some(&[3, 4]),
        idx: &[50, 48, 49, 47],
        want: 47,
        describe: r"
        idx
xxx>     50    (id=1)
x>       48    (id=2)
xx>      49    (id=3)
>        47    (id=4)
",
    },
    // Overlapping halves (1 2) and (2 3), nothing known.
    CommitCase {
        cfg: &[1, 2],
        cfgj: Some(&[2, 3]),
        idx: &[U, U, U],
        want: 0,
        describe: r"
       idx
?        0    (id=1)
?        0    (id=2)
?        0    (id=3)
",
    },
    // Only voter 1 acked.
    CommitCase {
        cfg: &[1, 2],
        cfgj: Some(&[2, 3]),
        idx: &[100, U, U],
        want: 0,
        describe: r"
       idx
xx>    100    (id=1)
?        0    (id=2)
?        0    (id=3)
",
    },
    // Only the shared voter 2 acked.
    CommitCase {
        cfg: &[1, 2],
        cfgj: Some(&[2, 3]),
        idx: &[U, 100, U],
        want: 0,
        describe: r"
       idx
?        0    (id=1)
xx>    100    (id=2)
?        0    (id=3)
",
    },
    // Voters 2 and 3 acked: the (2 3) half commits 99, but (1 2) waits for 1.
    CommitCase {
        cfg: &[1, 2],
        cfgj: Some(&[2, 3]),
        idx: &[U, 100, 99],
        want: 0,
        describe: r"
       idx
?        0    (id=1)
xx>    100    (id=2)
x>      99    (id=3)
",
    },
    // All known: (1 2) commits 100, (2 3) commits 99, so 99.
    CommitCase {
        cfg: &[1, 2],
        cfgj: Some(&[2, 3]),
        idx: &[101, 100, 99],
        want: 99,
        describe: r"
       idx
xx>    101    (id=1)
x>     100    (id=2)
>       99    (id=3)
",
    },
    // Identical halves (1 2), nothing known.
    CommitCase {
        cfg: &[1, 2],
        cfgj: Some(&[1, 2]),
        idx: &[U, U],
        want: 0,
        describe: r"
      idx
?       0    (id=1)
?       0    (id=2)
",
    },
    // Only voter 2 acked.
    CommitCase {
        cfg: &[1, 2],
        cfgj: Some(&[1, 2]),
        idx: &[U, 40],
        want: 0,
        describe: r"
      idx
?       0    (id=1)
x>     40    (id=2)
",
    },
    // Both acked: the lower (40) is committed.
    CommitCase {
        cfg: &[1, 2],
        cfgj: Some(&[1, 2]),
        idx: &[41, 40],
        want: 40,
        describe: r"
      idx
x>     41    (id=1)
>      40    (id=2)
",
    },
    // Disjoint three-voter halves, nothing known.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[4, 5, 6]),
        idx: &[U, U, U, U, U, U],
        want: 0,
        describe: r"
          idx
?           0    (id=1)
?           0    (id=2)
?           0    (id=3)
?           0    (id=4)
?           0    (id=5)
?           0    (id=6)
",
    },
    // A single ack in the first half.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[4, 5, 6]),
        idx: &[100, U, U, U, U, U],
        want: 0,
        describe: r"
          idx
xxxxx>    100    (id=1)
?           0    (id=2)
?           0    (id=3)
?           0    (id=4)
?           0    (id=5)
?           0    (id=6)
",
    },
    // One ack in each half.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[4, 5, 6]),
        idx: &[100, U, U, 90, U, U],
        want: 0,
        describe: r"
          idx
xxxxx>    100    (id=1)
?           0    (id=2)
?           0    (id=3)
xxxx>      90    (id=4)
?           0    (id=5)
?           0    (id=6)
",
    },
    // Two acks in the first half (it commits 99); the second half has none.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[4, 5, 6]),
        idx: &[100, 99, U, U, U, U],
        want: 0,
        describe: r"
          idx
xxxxx>    100    (id=1)
xxxx>      99    (id=2)
?           0    (id=3)
?           0    (id=4)
?           0    (id=5)
?           0    (id=6)
",
    },
    // First half commits 90 (of 99 and 90), second 95 (of 97 and 95): 90 wins.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[4, 5, 6]),
        idx: &[U, 99, 90, 97, 95, U],
        want: 90,
        describe: r"
          idx
?           0    (id=1)
xxxxx>     99    (id=2)
xx>        90    (id=3)
xxxx>      97    (id=4)
xxx>       95    (id=5)
?           0    (id=6)
",
    },
    // Voter 1 acks 92: the first half now commits 92, below the second's 95.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[4, 5, 6]),
        idx: &[92, 99, 90, 97, 95, U],
        want: 92,
        describe: r"
          idx
xx>        92    (id=1)
xxxxx>     99    (id=2)
x>         90    (id=3)
xxxx>      97    (id=4)
xxx>       95    (id=5)
?           0    (id=6)
",
    },
    // Voter 6 acks 77: the second half still commits 95, so the result stays 92.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[4, 5, 6]),
        idx: &[92, 99, 90, 97, 95, 77],
        want: 92,
        describe: r"
          idx
xx>        92    (id=1)
xxxxx>     99    (id=2)
x>         90    (id=3)
xxxx>      97    (id=4)
xxx>       95    (id=5)
>          77    (id=6)
",
    },
    // Halves (1 2 3) and (1 4 5) sharing voter 1, nothing known.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[1, 4, 5]),
        idx: &[U, U, U, U, U],
        want: 0,
        describe: r"
         idx
?          0    (id=1)
?          0    (id=2)
?          0    (id=3)
?          0    (id=4)
?          0    (id=5)
",
    },
    // Only the shared voter acked.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[1, 4, 5]),
        idx: &[100, U, U, U, U],
        want: 0,
        describe: r"
         idx
xxxx>    100    (id=1)
?          0    (id=2)
?          0    (id=3)
?          0    (id=4)
?          0    (id=5)
",
    },
    // Voters 1 and 2 give the first half 100; the second half has one ack.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[1, 4, 5]),
        idx: &[100, 101, U, U, U],
        want: 0,
        describe: r"
         idx
xxx>     100    (id=1)
xxxx>    101    (id=2)
?          0    (id=3)
?          0    (id=4)
?          0    (id=5)
",
    },
    // Voter 3 as well; the second half still has only voter 1.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[1, 4, 5]),
        idx: &[100, 101, 100, U, U],
        want: 0,
        describe: r"
         idx
xx>      100    (id=1)
xxxx>    101    (id=2)
>        100    (id=3)
?          0    (id=4)
?          0    (id=5)
",
    },
    // Second half commits 98 (of 99 and 98), but the first half has one ack.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[1, 4, 5]),
        idx: &[U, 100, U, 99, 98],
        want: 0,
        describe: r"
         idx
?          0    (id=1)
xxxx>    100    (id=2)
?          0    (id=3)
xxx>      99    (id=4)
xx>       98    (id=5)
",
    },
    // First half commits 99, second half 98: the result is 98.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[1, 4, 5]),
        idx: &[U, 100, 99, 99, 98],
        want: 98,
        describe: r"
         idx
?          0    (id=1)
xxxx>    100    (id=2)
xx>       99    (id=3)
>         99    (id=4)
x>        98    (id=5)
",
    },
    // Voter 1 acks a low index; both halves keep their quorum indexes.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[1, 4, 5]),
        idx: &[1, 100, 99, 99, 98],
        want: 98,
        describe: r"
         idx
>          1    (id=1)
xxxx>    100    (id=2)
xx>       99    (id=3)
>         99    (id=4)
x>        98    (id=5)
",
    },
    // Voter 1 at 100: first half commits 100, second 99 (1 and 4): 99.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[1, 4, 5]),
        idx: &[100, 100, 99, 99, 98],
        want: 99,
        describe: r"
         idx
xxx>     100    (id=1)
>        100    (id=2)
x>        99    (id=3)
>         99    (id=4)
>         98    (id=5)
",
    },
    // Halves (1 2 3) and (2 3 4) sharing 2 and 3, nothing known.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[2, 3, 4]),
        idx: &[U, U, U, U],
        want: 0,
        describe: r"
        idx
?         0    (id=1)
?         0    (id=2)
?         0    (id=3)
?         0    (id=4)
",
    },
    // Voters 2 and 3 form a quorum of both halves: 99 is committed.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[2, 3, 4]),
        idx: &[U, 100, 99, U],
        want: 99,
        describe: r"
        idx
?         0    (id=1)
xxx>    100    (id=2)
xx>      99    (id=3)
?         0    (id=4)
",
    },
    // Voter 1 at 98 changes nothing.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[2, 3, 4]),
        idx: &[98, 100, 99, U],
        want: 99,
        describe: r"
        idx
x>       98    (id=1)
xxx>    100    (id=2)
xx>      99    (id=3)
?         0    (id=4)
",
    },
    // Voter 1 at 100 makes the first half commit 100; the second still 99.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[2, 3, 4]),
        idx: &[100, 100, 99, U],
        want: 99,
        describe: r"
        idx
xx>     100    (id=1)
>       100    (id=2)
x>       99    (id=3)
?         0    (id=4)
",
    },
    // Voter 4 at 98 leaves the second half at 99.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[2, 3, 4]),
        idx: &[100, 100, 99, 98],
        want: 99,
        describe: r"
        idx
xx>     100    (id=1)
>       100    (id=2)
x>       99    (id=3)
>        98    (id=4)
",
    },
    // Voters 1 and 4 alone: neither half has a quorum.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[2, 3, 4]),
        idx: &[100, U, U, 101],
        want: 0,
        describe: r"
        idx
xx>     100    (id=1)
?         0    (id=2)
?         0    (id=3)
xxx>    101    (id=4)
",
    },
    // Voter 2 at 99 completes both quorums at 99.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[2, 3, 4]),
        idx: &[100, 99, U, 101],
        want: 99,
        describe: r"
        idx
xx>     100    (id=1)
x>       99    (id=2)
?         0    (id=3)
xxx>    101    (id=4)
",
    },
    // Identical three-voter halves: the lower of the two known acks.
    CommitCase {
        cfg: &[1, 2, 3],
        cfgj: Some(&[1, 2, 3]),
        idx: &[50, 45, U],
        want: 45,
        describe: r"
       idx
xx>     50    (id=1)
x>      45    (id=2)
?        0    (id=3)
",
    },
];

/// etcd: quorum/testdata/majority_commit.txt
#[test]
fn majority_commit() {
    for case in MAJORITY_COMMIT {
        check_majority_commit(case);
    }
}

/// etcd: quorum/testdata/joint_commit.txt
#[test]
fn joint_commit() {
    for case in JOINT_COMMIT {
        check_joint_commit(case);
    }
}

/// etcd: quorum/testdata/majority_vote.txt
#[test]
fn majority_vote() {
    let cases = [
        // An empty configuration wins every vote.
        vote(&[], None, "", Won),
        // One voter, not yet voted.
        vote(&[1], None, "_", Pending),
        // One voter, voted no.
        vote(&[1], None, "n", Lost),
        // One voter, voted yes.
        vote(&[123], None, "y", Won),
        // Two voters, no votes yet.
        vote(&[4, 8], None, "__", Pending),
        // Two voters: a single no loses.
        vote(&[4, 8], None, "n_", Lost),
        // Two voters: one yes is not enough yet.
        vote(&[4, 8], None, "y_", Pending),
        // Two voters: a no loses even with a yes.
        vote(&[4, 8], None, "ny", Lost),
        // Two voters: both yes wins.
        vote(&[4, 8], None, "yy", Won),
        // Three voters, no votes yet.
        vote(&[2, 4, 7], None, "___", Pending),
        // One no: two yes can still win.
        vote(&[2, 4, 7], None, "n__", Pending),
        // One yes: one more is needed.
        vote(&[2, 4, 7], None, "y__", Pending),
        // Two no: lost.
        vote(&[2, 4, 7], None, "nn_", Lost),
        // One yes, one no: the third decides.
        vote(&[2, 4, 7], None, "yn_", Pending),
        // Two yes: won.
        vote(&[2, 4, 7], None, "yy_", Won),
        // Two yes win despite a no.
        vote(&[2, 4, 7], None, "yyn", Won),
        // Two no lose despite a yes.
        vote(&[2, 4, 7], None, "nyn", Lost),
        // Seven voters, three yes: one more would win.
        vote(&[1, 2, 3, 4, 5, 6, 7], None, "yyny___", Pending),
        // Three yes, two no, two missing: still open.
        vote(&[1, 2, 3, 4, 5, 6, 7], None, "_yy_nyn", Pending),
        // Four yes: won.
        vote(&[1, 2, 3, 4, 5, 6, 7], None, "yyny_ny", Won),
        // Three yes, three no, one missing: still open.
        vote(&[1, 2, 3, 4, 5, 6, 7], None, "yy_nynn", Pending),
        // Four no: lost.
        vote(&[1, 2, 3, 4, 5, 6, 7], None, "yynynnn", Lost),
    ];
    for case in &cases {
        check_vote(case);
    }
}

/// etcd: quorum/testdata/joint_vote.txt
#[test]
fn joint_vote() {
    let cases = [
        // Both halves empty: won (not a configuration used in practice).
        vote(&[], Some(&[]), "", Won),
        // A single voter joint with the empty half: pending.
        vote(&[1], Some(&[]), "_", Pending),
        // ...yes wins.
        vote(&[1], Some(&[]), "y", Won),
        // ...no loses.
        vote(&[1], Some(&[]), "n", Lost),
        // The same single voter in both halves: pending.
        vote(&[1], Some(&[1]), "_", Pending),
        // ...yes wins.
        vote(&[1], Some(&[1]), "y", Won),
        // ...no loses.
        vote(&[1], Some(&[1]), "n", Lost),
        // Disjoint single voters (1) and (2), no votes.
        vote(&[1], Some(&[2]), "__", Pending),
        // Only half (1) has won.
        vote(&[1], Some(&[2]), "y_", Pending),
        // Both halves won.
        vote(&[1], Some(&[2]), "yy", Won),
        // Half (2) lost, so the whole vote is lost.
        vote(&[1], Some(&[2]), "yn", Lost),
        // Half (1) lost.
        vote(&[1], Some(&[2]), "n_", Lost),
        // Both halves lost.
        vote(&[1], Some(&[2]), "nn", Lost),
        // Half (1) lost although (2) won.
        vote(&[1], Some(&[2]), "ny", Lost),
        // Disjoint halves (1 2) and (3 4), no votes.
        vote(&[1, 2], Some(&[3, 4]), "____", Pending),
        // One yes in the first half.
        vote(&[1, 2], Some(&[3, 4]), "y___", Pending),
        // First half won, second has no votes.
        vote(&[1, 2], Some(&[3, 4]), "yy__", Pending),
        // A no in the second half loses it (two voters need both).
        vote(&[1, 2], Some(&[3, 4]), "yyn_", Lost),
        // Second half lost twice over.
        vote(&[1, 2], Some(&[3, 4]), "yynn", Lost),
        // Second half lost despite one yes.
        vote(&[1, 2], Some(&[3, 4]), "yyyn", Lost),
        // All yes: both halves won.
        vote(&[1, 2], Some(&[3, 4]), "yyyy", Won),
        // Overlapping halves (1 2) and (2 3), no votes.
        vote(&[1, 2], Some(&[2, 3]), "___", Pending),
        // The shared voter says no: both halves lost.
        vote(&[1, 2], Some(&[2, 3]), "_n_", Lost),
        // First half won, second half waits for voter 3.
        vote(&[1, 2], Some(&[2, 3]), "yy_", Pending),
        // Voter 3 says no: the second half lost.
        vote(&[1, 2], Some(&[2, 3]), "yyn", Lost),
        // All yes: won.
        vote(&[1, 2], Some(&[2, 3]), "yyy", Won),
        // Identical halves (1 2), no votes.
        vote(&[1, 2], Some(&[1, 2]), "__", Pending),
        // One yes: pending in both.
        vote(&[1, 2], Some(&[1, 2]), "y_", Pending),
        // A no loses both halves.
        vote(&[1, 2], Some(&[1, 2]), "yn", Lost),
        // A no with one missing: lost.
        vote(&[1, 2], Some(&[1, 2]), "n_", Lost),
        // All no: lost.
        vote(&[1, 2], Some(&[1, 2]), "nn", Lost),
        // Overlapping halves (1 2 3) and (2 3 4), no votes.
        vote(&[1, 2, 3], Some(&[2, 3, 4]), "____", Pending),
        // One no from a shared voter: both halves still open.
        vote(&[1, 2, 3], Some(&[2, 3, 4]), "_n__", Pending),
        // Both shared voters say no: both halves lost.
        vote(&[1, 2, 3], Some(&[2, 3, 4]), "_nn_", Lost),
        // Both shared voters say yes: both halves won.
        vote(&[1, 2, 3], Some(&[2, 3, 4]), "_yy_", Won),
        // First half won (1, 2); second half has one yes of the two it needs.
        vote(&[1, 2, 3], Some(&[2, 3, 4]), "yy__", Pending),
        // A no from 3: the first half won, the second is still open.
        vote(&[1, 2, 3], Some(&[2, 3, 4]), "yyn_", Pending),
        // Voter 4 says no too: the second half lost.
        vote(&[1, 2, 3], Some(&[2, 3, 4]), "yynn", Lost),
        // Voter 4 says yes: the second half won as well.
        vote(&[1, 2, 3], Some(&[2, 3, 4]), "yyny", Won),
    ];
    for case in &cases {
        check_vote(case);
    }
}

/// etcd: TestDataDriven (quorum) — etcd has no separate TestDescribe; the
/// `Describe` pictures are part of the `committed` output in
/// testdata/majority_commit.txt and testdata/joint_commit.txt, checked here
/// for every case of both tables, together with etcd's printing of the
/// committed index (`∞` for the empty configuration).
#[test]
fn test_describe() {
    let expected = |case: &CommitCase| {
        let d = case.describe;
        d.strip_prefix('\n').unwrap_or(d).to_string()
    };
    for case in MAJORITY_COMMIT {
        let c = majority(case.cfg);
        let l = assign(case.cfg, &[], case.idx);
        assert_eq!(c.describe(&l), expected(case), "{case:?}");
    }
    for case in JOINT_COMMIT {
        let cfgj = case.cfgj.expect("joint case");
        let l = assign(case.cfg, cfgj, case.idx);
        assert_eq!(
            joint(case.cfg, cfgj).describe(&l),
            expected(case),
            "{case:?}"
        );
    }

    // The empty configuration: etcd's file shows `<empty majority quorum>∞`,
    // the picture followed by the index.
    let empty = MajorityConfig::default();
    let l = BTreeMap::new();
    let shown = format!(
        "{}{}",
        empty.describe(&l),
        index_string(empty.committed_index(&l))
    );
    assert_eq!(shown, "<empty majority quorum>∞");
    assert_eq!(index_string(12), "12");
}

/// etcd: MajorityConfig.String / JointConfig.String
#[test]
fn test_display() {
    assert_eq!(majority(&[]).to_string(), "()");
    assert_eq!(majority(&[3, 1, 2]).to_string(), "(1 2 3)");
    assert_eq!(joint(&[1, 2, 3], &[]).to_string(), "(1 2 3)");
    assert_eq!(joint(&[1, 2, 3], &[4, 5]).to_string(), "(1 2 3)&&(4 5)");
    assert_eq!(Won.to_string(), "VoteWon");
    assert_eq!(Lost.to_string(), "VoteLost");
    assert_eq!(Pending.to_string(), "VotePending");
}

/// The small helpers of [`JointConfig`] and [`MajorityConfig`].
#[test]
fn test_joint_helpers() {
    let mut j = joint(&[1, 2], &[2, 3]);
    assert_eq!(j.ids(), BTreeSet::from([1, 2, 3]));
    assert!(j.contains(3) && j.contains(1) && !j.contains(4));
    assert!(!j.is_singleton());
    assert!(JointConfig::new(BTreeSet::from([7])).is_singleton());
    assert!(!joint(&[7], &[7]).is_singleton());
    assert_eq!(j.incoming.slice(), vec![1, 2]);
    j.clear();
    assert_eq!(j, JointConfig::default());

    let mut m = MajorityConfig::default();
    assert!(m.insert(5) && m.insert(4) && !m.insert(5));
    assert_eq!((m.len(), m.slice()), (2, vec![4, 5]));
    assert!(m.remove(5) && !m.remove(5));
    assert!(m.contains(4) && !m.is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]

    /// etcd: TestQuick — `committed_index` agrees with the naive reference
    /// on random configurations (up to 11 voters, so both the stack and the
    /// heap path run) and random acknowledged indexes, some voters unknown.
    #[test]
    fn test_quick(
        voters in btree_set(0u64..24, 0..12),
        acked in btree_map(0u64..24, 0u64..12, 0..12),
    ) {
        let c = MajorityConfig::new(voters);
        let got = c.committed_index(&acked);
        prop_assert_eq!(got, naive_committed(&c, &acked));
        let hashed: HashMap<u64, u64> = acked.into_iter().collect();
        prop_assert_eq!(c.committed_index(&hashed), got);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The sorted-vector set behaves as the `BTreeSet` it replaced: the
    /// same answers to insert, remove and contains, the same ids in the
    /// same order, the same `Debug` text, whatever the operations.
    #[test]
    fn majority_config_is_a_set(ops in proptest::collection::vec((any::<bool>(), 0u64..12), 0..40)) {
        let mut c = MajorityConfig::default();
        let mut want = BTreeSet::new();
        for (add, id) in ops {
            if add {
                prop_assert_eq!(c.insert(id), want.insert(id));
            } else {
                prop_assert_eq!(c.remove(id), want.remove(&id));
            }
            for probe in 0..12 {
                prop_assert_eq!(c.contains(probe), want.contains(&probe));
            }
            let ids: Vec<u64> = want.iter().copied().collect();
            prop_assert_eq!(c.ids(), ids.as_slice());
            prop_assert_eq!(c.len(), want.len());
            prop_assert_eq!(format!("{c:?}"), format!("{want:?}"));
            prop_assert_eq!(&c, &MajorityConfig::new(want.clone()));
            prop_assert_eq!(&c, &want.iter().rev().chain(want.iter()).copied().collect::<MajorityConfig>());
        }
    }
}
