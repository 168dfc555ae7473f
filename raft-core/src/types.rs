//! Small value types shared by the log and the state machine (etcd `types.go`):
//! [`EntryId`] names one log entry, [`LogSlice`] is a run of entries as a
//! leader of some term sees them.

use crate::pb::Entry;

/// The identity of a log entry: the term of the leader that created it and
/// its position in the log.
///
/// A leader creates at most one entry per index in its term, and there is at
/// most one leader per term, so `(term, index)` names an entry uniquely.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct EntryId {
    /// The term of the leader that created the entry.
    pub term: u64,
    /// The entry's position in the log.
    pub index: u64,
}

impl EntryId {
    /// The id of `entry`.
    // Ported from etcd-io/raft types.go (pbEntryID).
    pub fn from_entry(entry: &Entry) -> EntryId {
        EntryId {
            term: entry.term,
            index: entry.index,
        }
    }
}

/// A contiguous run of log entries, seen from the log of the leader at `term`.
///
/// `term` is the leader's term, not necessarily the term of the entries: a
/// leader's log holds entries of its own term and of older ones. Two slices
/// with the same `term` never disagree about an entry at the same index.
///
/// A well-formed slice satisfies (see [`LogSlice::valid`]):
/// 1. `entries[i].index == prev.index + 1 + i` (no gaps),
/// 2. `prev.term <= entries[0].term` and terms never decrease along the slice,
/// 3. no entry has a term above `term`.
///
/// Code that builds a slice from untrusted input (a message, storage, a test
/// table) must check it with [`LogSlice::valid`]; everything else may assume
/// the properties hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LogSlice {
    /// The term of the leader whose log contains these entries.
    pub term: u64,
    /// The entry just before the first of `entries`.
    pub prev: EntryId,
    /// The entries, consecutive and starting at `prev.index + 1`.
    pub entries: Vec<Entry>,
}

impl LogSlice {
    /// The index of the last entry, or `prev.index` when there are none.
    // Ported from etcd-io/raft types.go (logSlice.lastIndex).
    pub fn last_index(&self) -> u64 {
        self.prev.index + self.entries.len() as u64
    }

    /// The id of the last entry, or `prev` when there are none.
    // Ported from etcd-io/raft types.go (logSlice.lastEntryID).
    #[cfg(test)]
    pub fn last_entry_id(&self) -> EntryId {
        self.entries.last().map_or(self.prev, EntryId::from_entry)
    }

    /// Checks that the slice is well formed (see the type's documentation);
    /// the error describes the first violation found.
    // Ported from etcd-io/raft types.go (logSlice.valid).
    #[cfg(test)]
    pub fn valid(&self) -> std::result::Result<(), String> {
        let mut prev = self.prev;
        for e in &self.entries {
            let id = EntryId::from_entry(e);
            // checked_add: an index of u64::MAX cannot be followed by anything.
            if id.term < prev.term || prev.index.checked_add(1) != Some(id.index) {
                return Err(format!(
                    "leader term {}: entries {prev:?} and {id:?} not consistent",
                    self.term
                ));
            }
            prev = id;
        }
        if self.term < prev.term {
            return Err(format!(
                "leader term {}: entry {prev:?} has a newer term",
                self.term
            ));
        }
        Ok(())
    }
}

/// Test helpers for building entry tables like etcd's `index(i).terms(...)`.
#[cfg(test)]
pub(crate) mod test_util {
    use crate::pb::Entry;

    /// Entries at consecutive indexes starting at `first`, with the given
    /// terms and no data (etcd `index(first).terms(terms...)`).
    pub(crate) fn ents(first: u64, terms: &[u64]) -> Vec<Entry> {
        terms
            .iter()
            .zip(first..)
            .map(|(&term, index)| Entry {
                term,
                index,
                ..Entry::default()
            })
            .collect()
    }

    /// Entries at consecutive indexes starting at `first`, whose terms run
    /// through `[from, to)` (etcd `index(first).termRange(from, to)`).
    pub(crate) fn ents_term_range(first: u64, from: u64, to: u64) -> Vec<Entry> {
        (from..to)
            .zip(first..)
            .map(|(term, index)| Entry {
                term,
                index,
                ..Entry::default()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(index: u64, term: u64) -> EntryId {
        EntryId { term, index }
    }

    fn e(index: u64, term: u64) -> Entry {
        Entry {
            term,
            index,
            ..Entry::default()
        }
    }

    /// etcd: TestEntryID
    #[test]
    fn test_entry_id() {
        assert_eq!(id(10, 5), id(10, 5));
        assert_ne!(id(10, 4), id(10, 5));
        assert_ne!(id(9, 5), id(10, 5));

        let cases = [
            (Entry::default(), id(0, 0)),
            (Entry::new(1, 2, &b"data"[..]), id(2, 1)),
            (e(123, 10), id(123, 10)),
        ];
        for (entry, want) in cases {
            assert_eq!(EntryId::from_entry(&entry), want);
        }
    }

    /// etcd: TestLogSlice
    #[test]
    fn test_log_slice() {
        struct Case {
            term: u64,
            prev: EntryId,
            entries: Vec<Entry>,
            not_ok: bool,
            last: EntryId,
        }
        let ok = |term, prev, entries, last| Case {
            term,
            prev,
            entries,
            not_ok: false,
            last,
        };
        let bad = |term, prev, entries| Case {
            term,
            prev,
            entries,
            not_ok: true,
            last: EntryId::default(),
        };
        let cases = vec![
            // The empty slice at the very start of the log.
            ok(0, id(0, 0), vec![], id(0, 0)),
            // An empty slice with a prev: valid only when term >= prev.term.
            bad(0, id(123, 10), vec![]),
            bad(9, id(123, 10), vec![]),
            ok(10, id(123, 10), vec![], id(123, 10)),
            ok(11, id(123, 10), vec![], id(123, 10)),
            // One entry.
            bad(0, id(0, 0), vec![e(1, 1)]),
            ok(1, id(0, 0), vec![e(1, 1)], id(1, 1)),
            ok(2, id(0, 0), vec![e(1, 1)], id(1, 1)),
            // Several entries.
            bad(2, id(0, 0), vec![e(2, 1), e(3, 1), e(4, 2)]),
            bad(1, id(1, 1), vec![e(2, 1), e(3, 1), e(4, 2)]),
            ok(2, id(1, 1), vec![e(2, 1), e(3, 1), e(4, 2)], id(4, 2)),
            // The first entry does not follow prev.
            bad(10, id(123, 5), vec![e(111, 5)]),
            bad(10, id(123, 5), vec![e(124, 4)]),
            bad(10, id(123, 5), vec![e(234, 6)]),
            ok(10, id(123, 5), vec![e(124, 6)], id(124, 6)),
            // Entries that do not follow each other.
            bad(10, id(12, 2), vec![e(13, 2), e(12, 2)]),
            bad(10, id(12, 2), vec![e(13, 2), e(15, 2)]),
            bad(10, id(12, 2), vec![e(13, 2), e(14, 1)]),
            ok(10, id(12, 2), vec![e(13, 2), e(14, 3)], id(14, 3)),
            // raftlet: an index overflow is invalid, not a panic.
            bad(10, id(u64::MAX, 2), vec![e(0, 2)]),
        ];
        for (i, c) in cases.into_iter().enumerate() {
            let s = LogSlice {
                term: c.term,
                prev: c.prev,
                entries: c.entries,
            };
            assert_eq!(s.valid().is_err(), c.not_ok, "#{i}: {:?}", s.valid());
            if !c.not_ok {
                let last = s.last_entry_id();
                assert_eq!(last, c.last, "#{i}");
                assert_eq!(s.last_index(), last.index, "#{i}");
            }
        }
    }
}
