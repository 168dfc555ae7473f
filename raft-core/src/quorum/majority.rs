//! A plain majority configuration.

use std::collections::BTreeSet;
use std::fmt;
use std::ops::Deref;

use super::{AckedIndexer, VoteResult};

/// The largest configuration whose commit computation runs on a stack array;
/// larger ones (rare in practice) allocate.
const STACK_VOTERS: usize = 7;

/// A set of voter ids that decides by simple majority: more than half of the
/// members must agree.
///
/// Ported from etcd-io/raft quorum/majority.go (`MajorityConfig`, a map there;
/// an ordered set here so that iteration and printing are deterministic).
///
/// The set is a sorted vector rather than a B-tree: a configuration has a
/// handful of voters, so one small allocation (24 bytes for three) beats a
/// tree node sized for eleven (104 bytes), and a binary search over it
/// beats the tree's walk.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct MajorityConfig {
    /// Invariant: sorted ascending, no id twice.
    voters: Vec<u64>,
}

impl MajorityConfig {
    /// A configuration of the given voters.
    pub fn new(voters: BTreeSet<u64>) -> MajorityConfig {
        MajorityConfig {
            voters: voters.into_iter().collect(),
        }
    }

    /// The voter ids, in ascending order.
    pub fn ids(&self) -> &[u64] {
        &self.voters
    }

    /// The voter ids in ascending order.
    pub fn iter(&self) -> std::slice::Iter<'_, u64> {
        self.voters.iter()
    }

    /// Whether `id` is a voter.
    pub fn contains(&self, id: u64) -> bool {
        self.voters.binary_search(&id).is_ok()
    }

    /// Adds a voter; returns whether it was absent.
    pub fn insert(&mut self, id: u64) -> bool {
        match self.voters.binary_search(&id) {
            Ok(_) => false,
            Err(i) => {
                // Exactly one more: sets grow one voter at a time (conf
                // changes, restores), and each group keeps its set for good.
                self.voters.reserve_exact(1);
                self.voters.insert(i, id);
                true
            }
        }
    }

    /// Removes a voter; returns whether it was present.
    pub fn remove(&mut self, id: u64) -> bool {
        match self.voters.binary_search(&id) {
            Ok(i) => {
                self.voters.remove(i);
                if self.voters.is_empty() {
                    // An emptied half (a joint configuration left) keeps
                    // no allocation.
                    self.voters = Vec::new();
                }
                true
            }
            Err(_) => false,
        }
    }

    /// The number of voters.
    pub fn len(&self) -> usize {
        self.voters.len()
    }

    /// Whether there are no voters.
    pub fn is_empty(&self) -> bool {
        self.voters.is_empty()
    }

    /// Removes every voter (and frees the set's memory).
    pub fn clear(&mut self) {
        self.voters = Vec::new();
    }

    /// The voter ids as a sorted vector (etcd `Slice`).
    pub fn slice(&self) -> Vec<u64> {
        self.voters.clone()
    }

    /// The highest index acknowledged by a majority of the voters.
    ///
    /// Voters `l` knows nothing about count as having acknowledged index 0.
    /// An empty configuration returns `u64::MAX`, so that in a joint
    /// configuration an empty half never holds the other half back.
    ///
    /// Does not allocate for up to seven voters.
    ///
    /// Ported from etcd-io/raft quorum/majority.go (`CommittedIndex`).
    pub fn committed_index(&self, l: &impl AckedIndexer) -> u64 {
        let n = self.voters.len();
        match n {
            0 => return u64::MAX,
            // The common single-node case: the lone voter is the quorum.
            1 => {
                let id = *self.voters.first().expect("one voter");
                return l.acked_index(id).unwrap_or(0);
            }
            _ => {}
        }

        let mut stack = [0u64; STACK_VOTERS];
        let mut heap;
        let acked: &mut [u64] = if n <= STACK_VOTERS {
            &mut stack[..n]
        } else {
            heap = vec![0u64; n];
            &mut heap
        };
        for (slot, &id) in acked.iter_mut().zip(&self.voters) {
            *slot = l.acked_index(id).unwrap_or(0);
        }
        acked.sort_unstable();

        // Ascending order: the quorum (n/2 + 1 voters) has acknowledged at
        // least the value that many positions from the right end.
        acked[n - (n / 2 + 1)]
    }

    /// The outcome of a vote, given each voter's vote (`Some(true)` for yes,
    /// `Some(false)` for no, `None` when not yet voted).
    ///
    /// An empty configuration wins every vote, so that an empty half of a
    /// joint configuration behaves as if absent.
    ///
    /// Ported from etcd-io/raft quorum/majority.go (`VoteResult`).
    pub fn vote_result(&self, check: impl Fn(u64) -> Option<bool>) -> VoteResult {
        if self.voters.is_empty() {
            return VoteResult::Won;
        }
        let (mut yes, mut missing) = (0usize, 0usize);
        for &id in &self.voters {
            match check(id) {
                Some(true) => yes += 1,
                Some(false) => {}
                None => missing += 1,
            }
        }
        let quorum = self.voters.len() / 2 + 1;
        if yes >= quorum {
            VoteResult::Won
        } else if yes + missing >= quorum {
            VoteResult::Pending
        } else {
            VoteResult::Lost
        }
    }

    /// A multi-line picture of the acknowledged indexes, one line per voter
    /// in id order. Each line has a bar whose length ranks the voter's index
    /// among the others (`?` when nothing is known), the index and the id.
    ///
    /// The output is byte-for-byte etcd's, including its quirk that a voter
    /// tied with the one ranked just below it gets an empty bar.
    ///
    /// Ported from etcd-io/raft quorum/majority.go (`Describe`).
    pub fn describe(&self, l: &impl AckedIndexer) -> String {
        use std::fmt::Write as _;

        if self.voters.is_empty() {
            return "<empty majority quorum>".to_string();
        }
        struct Row {
            id: u64,
            index: u64,
            known: bool,
            bar: usize,
        }
        let n = self.voters.len();
        let mut rows: Vec<Row> = self
            .voters
            .iter()
            .map(|&id| {
                let acked = l.acked_index(id);
                Row {
                    id,
                    index: acked.unwrap_or(0),
                    known: acked.is_some(),
                    bar: 0,
                }
            })
            .collect();

        // Rank by index (ties broken by id); a row gets a bar as long as its
        // rank, unless its index equals that of the row ranked just below.
        rows.sort_by_key(|r| (r.index, r.id));
        for i in 1..rows.len() {
            if rows[i - 1].index < rows[i].index {
                rows[i].bar = i;
            }
        }
        rows.sort_by_key(|r| r.id);

        let mut out = String::new();
        out.push_str(&" ".repeat(n));
        out.push_str("    idx\n");
        for r in &rows {
            if r.known {
                out.push_str(&"x".repeat(r.bar));
                out.push('>');
                out.push_str(&" ".repeat(n - r.bar));
            } else {
                out.push('?');
                out.push_str(&" ".repeat(n));
            }
            let _ = writeln!(out, " {:>5}    (id={})", r.index, r.id);
        }
        out
    }
}

/// The voter ids, sorted ascending (a slice: every read-only set method a
/// caller needs, `contains(&id)`, `iter`, `len`, `first`, ...).
impl Deref for MajorityConfig {
    type Target = [u64];

    fn deref(&self) -> &[u64] {
        &self.voters
    }
}

impl From<BTreeSet<u64>> for MajorityConfig {
    fn from(voters: BTreeSet<u64>) -> MajorityConfig {
        MajorityConfig::new(voters)
    }
}

impl FromIterator<u64> for MajorityConfig {
    /// Duplicates are dropped and the ids sorted, as a set would.
    fn from_iter<I: IntoIterator<Item = u64>>(iter: I) -> MajorityConfig {
        let mut voters: Vec<u64> = iter.into_iter().collect();
        voters.sort_unstable();
        voters.dedup();
        voters.shrink_to_fit();
        MajorityConfig { voters }
    }
}

impl fmt::Debug for MajorityConfig {
    /// As the set it is: `{1, 2, 3}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.voters.iter()).finish()
    }
}

impl<'a> IntoIterator for &'a MajorityConfig {
    type Item = &'a u64;
    type IntoIter = std::slice::Iter<'a, u64>;

    fn into_iter(self) -> Self::IntoIter {
        self.voters.iter()
    }
}

impl fmt::Display for MajorityConfig {
    /// Formats as etcd does: the sorted ids in parentheses, e.g. `(1 2 3)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, id) in self.voters.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{id}")?;
        }
        f.write_str(")")
    }
}
