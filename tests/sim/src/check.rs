//! The safety invariants and the run-wide history they are checked
//! against.
//!
//! The [`Checker`] records what the whole run has seen (the leader of every
//! term, every persisted log position, every committed entry, the applied
//! payload sequence) and reports a [`Violation`] the moment a new
//! observation contradicts it. The simulator feeds it after every
//! operation on a node.

use std::collections::BTreeMap;

use bytes::Bytes;
use raftlet::pb::{Entry, EntryType};

/// The invariants the simulator checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Invariant {
    /// At most one leader per term, over the whole run.
    LeaderPerTerm,
    /// Log matching: two logs holding an entry with the same index and term
    /// are identical up to it (checked on persisted storage).
    LogMatching,
    /// A committed entry is never lost or changed: every later application
    /// (and every leader of a later term) has the same entry at its index.
    CommittedChanged,
    /// The applied payload sequences of all nodes are prefixes of one
    /// another, and entries are applied in index order without gaps.
    AppliedPrefix,
    /// A ReadIndex answer is at least the index of every write acknowledged
    /// before the read was issued, and the state the read is served from
    /// (once the node, a learner too, applied up to that index) holds
    /// every such write.
    StaleRead,
    /// Every entry a leader commits is persisted on a quorum of the voters
    /// of its configuration (learners never count).
    CommitWithoutVoterQuorum,
    /// A learner (or non-member) never campaigns or leads.
    LearnerCampaigned,
    /// A learner the leader promotes by itself (`Config::auto_promote`, or
    /// a standby swap) was, when the leader proposed it, within
    /// `promote_max_lag` entries of the leader's log and not in snapshot
    /// state.
    PromotionThreshold,
    /// A standby swap demotes a voter and promotes a learner (as the
    /// leader saw them when it proposed it): the number of voters stays.
    StandbySwap,
    /// A weak read (`RawNode::read_local`) reports the applied index the
    /// host's state machine has reached, at most the commit index.
    LocalRead,
    /// Every node that applies the conf change at an index ends in the same
    /// configuration (or refuses it alike).
    ConfigAgreement,
    /// After the faults stop, a leader is elected and a proposal commits
    /// within the stated bound.
    Liveness,
    /// With quiescence, a voter that follows a leader whose node it has
    /// not heard from (no message, no node-level heartbeat) for two
    /// election timeouts of its own clock has campaigned: the host's
    /// detection delay (one election timeout) plus one election timeout,
    /// the check-quorum bound of a group that never slept.
    ElectionDelayed,
    /// `Ready::messages` (which may leave before the Ready is persisted)
    /// holds only messages whose safety needs nothing not yet durable: while
    /// the node's term or vote is not one its host acknowledged durable,
    /// only pre-vote requests, heartbeat responses and term-less forwards.
    ReadyContract,
    /// The host could not follow the Ready contract (a storage write was
    /// refused, a conf-change entry did not decode, a restart failed), or a
    /// node refused a message its peer sent as local, malformed or
    /// unreadable.
    HostContract,
    /// With disk storage: a node restarted after a crash from a store that
    /// does not hold a write its host was told was durable (a term or
    /// vote, a snapshot, its last entry), or whose store failed to reopen.
    DurableWriteLost,
    /// raftlet panicked.
    Panic,
}

impl Invariant {
    /// A short kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Invariant::LeaderPerTerm => "leader-per-term",
            Invariant::LogMatching => "log-matching",
            Invariant::CommittedChanged => "committed-changed",
            Invariant::AppliedPrefix => "applied-prefix",
            Invariant::StaleRead => "stale-read",
            Invariant::CommitWithoutVoterQuorum => "commit-without-voter-quorum",
            Invariant::LearnerCampaigned => "learner-campaigned",
            Invariant::PromotionThreshold => "promotion-threshold",
            Invariant::StandbySwap => "standby-swap",
            Invariant::LocalRead => "local-read",
            Invariant::ConfigAgreement => "config-agreement",
            Invariant::Liveness => "liveness",
            Invariant::ElectionDelayed => "election-delayed",
            Invariant::ReadyContract => "ready-contract",
            Invariant::HostContract => "host-contract",
            Invariant::DurableWriteLost => "durable-write-lost",
            Invariant::Panic => "panic",
        }
    }
}

/// A broken invariant: which one, when, and what was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The invariant.
    pub invariant: Invariant,
    /// The simulated time (in units) when it was detected.
    pub time: u64,
    /// What was seen.
    pub detail: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{}] at t={}: {}",
            self.invariant.name(),
            self.time,
            self.detail
        )
    }
}

/// The identity of an entry's content: its type and payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Content {
    /// The entry type.
    pub entry_type: EntryType,
    /// The payload.
    pub data: Bytes,
}

impl Content {
    /// The content of `e`.
    pub fn of(e: &Entry) -> Content {
        Content {
            entry_type: e.entry_type,
            data: e.data.clone().unwrap_or_default(),
        }
    }
}

/// What is known about a committed index.
#[derive(Debug, Clone)]
struct Committed {
    term: u64,
    content: Content,
    /// An upper bound on the term in which the entry was committed: every
    /// leader of this term or later must hold the entry.
    commit_term: u64,
    /// Who first saw it committed, for messages.
    witness: String,
}

/// The run-wide history. See the module docs.
#[derive(Debug, Default)]
pub struct Checker {
    /// The simulated time, for violations.
    pub now: u64,
    leaders: BTreeMap<u64, u64>,
    /// Log positions ever persisted: (index, term) -> (previous term, content).
    positions: BTreeMap<(u64, u64), (u64, Content, u64)>,
    committed: BTreeMap<u64, Committed>,
    /// The applied payload sequence every state machine must be a prefix of.
    canonical: Vec<Bytes>,
    /// The highest index applied anywhere so far.
    pub max_applied: u64,
    /// The highest conf-change index applied anywhere so far.
    pub max_conf_applied: u64,
    /// The outcome of applying the conf change at each index: the
    /// configuration it led to, or the refusal.
    conf_outcomes: BTreeMap<u64, (Result<raftlet::pb::ConfState, String>, u64)>,
}

impl Checker {
    fn fail(&self, invariant: Invariant, detail: String) -> Result<(), Violation> {
        Err(Violation {
            invariant,
            time: self.now,
            detail,
        })
    }

    /// Node `id` is leader in `term`.
    pub fn leader(&mut self, term: u64, id: u64) -> Result<(), Violation> {
        match self.leaders.get(&term) {
            Some(&other) if other != id => self.fail(
                Invariant::LeaderPerTerm,
                format!("nodes {other} and {id} both led term {term}"),
            ),
            Some(_) => Ok(()),
            None => {
                self.leaders.insert(term, id);
                Ok(())
            }
        }
    }

    /// The number of terms that had a leader.
    pub fn leader_terms(&self) -> usize {
        self.leaders.len()
    }

    /// Node `id` persisted `e`, whose predecessor in its log has term
    /// `prev_term`. Checks log matching against every position persisted
    /// anywhere before: an (index, term) pair determines its content and
    /// its predecessor's term, hence (by induction) the whole log up to it.
    /// Also checks that an entry of a term after the one in which its index
    /// was committed matches the committed entry (leader completeness).
    pub fn persisted(&mut self, id: u64, e: &Entry, prev_term: u64) -> Result<(), Violation> {
        let c = Content::of(e);
        match self.positions.get(&(e.index, e.term)) {
            Some((pt, pc, who)) => {
                if *pt != prev_term || *pc != c {
                    return self.fail(
                        Invariant::LogMatching,
                        format!(
                            "node {id} persisted {} after term {prev_term}, but node {who} \
                             persisted {}/{} {:?} after term {pt}",
                            raftlet::describe::describe_entry(e),
                            e.term,
                            e.index,
                            pc.entry_type
                        ),
                    );
                }
            }
            None => {
                self.positions
                    .insert((e.index, e.term), (prev_term, c.clone(), id));
            }
        }
        if let Some(k) = self.committed.get(&e.index) {
            let differs = k.term != e.term || k.content != c;
            if differs && (e.term > k.commit_term || e.term == k.term) {
                return self.fail(
                    Invariant::CommittedChanged,
                    format!(
                        "node {id} persisted {} but {}/{} was committed by term {} (seen by {})",
                        raftlet::describe::describe_entry(e),
                        k.term,
                        e.index,
                        k.commit_term,
                        k.witness
                    ),
                );
            }
        }
        Ok(())
    }

    /// A leader in `term` sends `e` in an append. A leader of a term at or
    /// after the one in which an index was committed holds the committed
    /// entry there.
    pub fn sent(&self, from: u64, term: u64, e: &Entry) -> Result<(), Violation> {
        if let Some(k) = self.committed.get(&e.index) {
            if term >= k.commit_term && (k.term != e.term || k.content != Content::of(e)) {
                return self.fail(
                    Invariant::CommittedChanged,
                    format!(
                        "leader {from} of term {term} sends {} but {}/{} was committed by term {} \
                         (seen by {})",
                        raftlet::describe::describe_entry(e),
                        k.term,
                        e.index,
                        k.commit_term,
                        k.witness
                    ),
                );
            }
        }
        Ok(())
    }

    /// `e` is known committed, in term `commit_term` or earlier; `witness`
    /// says who saw it. The first sighting is recorded; later ones must
    /// agree.
    pub fn committed(
        &mut self,
        e: &Entry,
        commit_term: u64,
        witness: &str,
    ) -> Result<(), Violation> {
        let c = Content::of(e);
        match self.committed.get_mut(&e.index) {
            Some(k) => {
                if k.term != e.term || k.content != c {
                    let detail = format!(
                        "{witness} has {} committed, but {}/{} was committed before (seen by {})",
                        raftlet::describe::describe_entry(e),
                        k.term,
                        e.index,
                        k.witness
                    );
                    return self.fail(Invariant::CommittedChanged, detail);
                }
                k.commit_term = k.commit_term.min(commit_term);
            }
            None => {
                self.committed.insert(
                    e.index,
                    Committed {
                        term: e.term,
                        content: c,
                        commit_term,
                        witness: witness.to_string(),
                    },
                );
            }
        }
        Ok(())
    }

    /// A snapshot at (`index`, `term`) was persisted by `id`: it covers
    /// committed entries only, so it agrees with what is known committed.
    pub fn snapshot(&self, id: u64, index: u64, term: u64) -> Result<(), Violation> {
        if let Some(k) = self.committed.get(&index) {
            if k.term != term {
                return self.fail(
                    Invariant::CommittedChanged,
                    format!(
                        "node {id} persisted a snapshot at {term}/{index}, but {}/{index} was committed (seen by {})",
                        k.term, k.witness
                    ),
                );
            }
        }
        Ok(())
    }

    /// Node `id` put `data` at position `pos` of its state machine.
    pub fn applied_payload(&mut self, id: u64, pos: usize, data: &Bytes) -> Result<(), Violation> {
        if pos < self.canonical.len() {
            if self.canonical[pos] != *data {
                return self.fail(
                    Invariant::AppliedPrefix,
                    format!(
                        "node {id} applied {:?} as payload #{pos}, another node applied {:?}",
                        String::from_utf8_lossy(data),
                        String::from_utf8_lossy(&self.canonical[pos])
                    ),
                );
            }
        } else if pos == self.canonical.len() {
            self.canonical.push(data.clone());
        } else {
            return self.fail(
                Invariant::AppliedPrefix,
                format!(
                    "node {id} applied payload #{pos} with only {} known",
                    self.canonical.len()
                ),
            );
        }
        Ok(())
    }

    /// Node `id` replaced its state machine with `sm` (restart or snapshot).
    pub fn restored_state(&mut self, id: u64, sm: &[Bytes]) -> Result<(), Violation> {
        for (i, d) in sm.iter().enumerate() {
            self.applied_payload(id, i, d)?;
        }
        Ok(())
    }

    /// Node `id` applied the conf change at `index` with `outcome`: the
    /// same as every node before it.
    pub fn conf_applied(
        &mut self,
        id: u64,
        index: u64,
        outcome: Result<raftlet::pb::ConfState, String>,
    ) -> Result<(), Violation> {
        match self.conf_outcomes.get(&index) {
            None => {
                self.conf_outcomes.insert(index, (outcome, id));
                Ok(())
            }
            Some((first, who)) => {
                let same = match (first, &outcome) {
                    (Ok(a), Ok(b)) => a.equivalent(b).is_ok(),
                    (Err(_), Err(_)) => true,
                    _ => false,
                };
                if same {
                    return Ok(());
                }
                self.fail(
                    Invariant::ConfigAgreement,
                    format!(
                        "node {id} applied the conf change at {index} with outcome {outcome:?}, \
                         node {who} with {first:?}"
                    ),
                )
            }
        }
    }

    /// The number of distinct payloads applied so far.
    pub fn payloads_applied(&self) -> usize {
        self.canonical.len()
    }
}

/// Checks log matching pairwise on two persisted logs (each a slice of
/// consecutive entries): wherever both hold an entry with the same index
/// and term, all the entries they both hold up to it are identical.
/// Returns a description of the first mismatch.
pub fn logs_match(a: &[Entry], b: &[Entry]) -> Result<(), String> {
    let (Some(fa), Some(fb)) = (a.first(), b.first()) else {
        return Ok(());
    };
    let lo = fa.index.max(fb.index);
    let hi = (fa.index + a.len() as u64).min(fb.index + b.len() as u64);
    if lo >= hi {
        return Ok(());
    }
    let at = |s: &[Entry], first: u64, i: u64| s[(i - first) as usize].clone();
    // The highest common index with equal terms.
    let mut top = None;
    for i in (lo..hi).rev() {
        if at(a, fa.index, i).term == at(b, fb.index, i).term {
            top = Some(i);
            break;
        }
    }
    let Some(top) = top else { return Ok(()) };
    for i in lo..=top {
        let (x, y) = (at(a, fa.index, i), at(b, fb.index, i));
        if x != y {
            return Err(format!(
                "both logs hold term {} at index {top}, but differ at {i}: {:?} vs {:?}",
                at(a, fa.index, top).term,
                x,
                y
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ent(term: u64, index: u64, d: &str) -> Entry {
        Entry::new(term, index, d.as_bytes().to_vec())
    }

    #[test]
    fn log_matching_detects_divergence_below_a_common_entry() {
        let a = vec![ent(1, 1, "a"), ent(1, 2, "b"), ent(2, 3, "c")];
        let b = vec![ent(1, 1, "a"), ent(1, 2, "X"), ent(2, 3, "c")];
        assert!(logs_match(&a, &b).is_err());
        let c = vec![ent(1, 2, "b"), ent(3, 3, "z")];
        assert!(logs_match(&a, &c).is_ok());
    }

    #[test]
    fn positions_and_commits() {
        let mut k = Checker::default();
        k.persisted(1, &ent(1, 1, "a"), 0).unwrap();
        assert_eq!(
            k.persisted(2, &ent(1, 1, "b"), 0).unwrap_err().invariant,
            Invariant::LogMatching
        );
        k.committed(&ent(1, 1, "a"), 1, "n1").unwrap();
        // A stale leader's entry of an older term is fine...
        k.committed(&ent(3, 2, "x"), 4, "n1").unwrap();
        k.persisted(3, &ent(2, 2, "y"), 1).unwrap();
        // ...one of a later term than the commit is not.
        assert_eq!(
            k.persisted(3, &ent(5, 2, "y"), 1).unwrap_err().invariant,
            Invariant::CommittedChanged
        );
        assert!(k.sent(1, 4, &ent(2, 2, "y")).is_err());
        assert!(k.sent(1, 3, &ent(2, 2, "y")).is_ok());
    }
}
