//! The part of the log not yet known to be in stable storage (etcd
//! `log_unstable.go`).

use crate::pb::{Entry, Snapshot};
use crate::types::EntryId;

/// Entries and possibly a snapshot that the host has not yet written to its
/// [`Storage`](crate::Storage).
///
/// It plays two roles. It holds new entries and an incoming snapshot until
/// they are handed to the host for persistence; and it keeps holding them
/// while the write is in progress, so the log still sees them, until the host
/// reports them stable. Then they are dropped from here.
///
/// `entries[i]` sits at log index `offset + i`. `offset` may be at or below
/// the last index in storage: the next write then truncates the stored log
/// before persisting these entries.
#[derive(Clone, Debug, Default, PartialEq)]
// `repr(C)`: laid out as written, next to what `RawNode::has_ready` reads
// in `RaftLog` (see `Raft`).
#[repr(C)]
pub(crate) struct Unstable {
    /// The incoming snapshot, if any.
    pub snapshot: Option<Box<Snapshot>>,
    /// The entries not yet written to storage.
    pub entries: Vec<Entry>,
    /// The log index of `entries[0]`.
    pub offset: u64,
    /// The entries below this index (from `offset` on) are being written to
    /// storage. Exclusive like `offset`; always `offset <= offset_in_progress`.
    pub offset_in_progress: u64,
    /// Whether the snapshot is being written to storage.
    pub snapshot_in_progress: bool,
}

/// The shrinking policy: give memory back when less than 1/`LEN_MULTIPLE` of
/// the capacity is used, but never below `MIN_CAPACITY` slots.
const LEN_MULTIPLE: usize = 2;
const MIN_CAPACITY: usize = 64;

impl Unstable {
    /// An empty unstable log whose first entry will sit at `offset`.
    pub fn new(offset: u64) -> Unstable {
        Unstable {
            offset,
            offset_in_progress: offset,
            ..Unstable::default()
        }
    }

    /// The index of the first entry after the snapshot, if there is a snapshot.
    // Ported from etcd-io/raft log_unstable.go (maybeFirstIndex).
    pub fn maybe_first_index(&self) -> Option<u64> {
        self.snapshot.as_ref().map(|s| s.metadata.index + 1)
    }

    /// The index of the last entry, or of the snapshot when there are no
    /// entries; `None` when empty.
    // Ported from etcd-io/raft log_unstable.go (maybeLastIndex).
    pub fn maybe_last_index(&self) -> Option<u64> {
        if !self.entries.is_empty() {
            return Some(self.offset + self.entries.len() as u64 - 1);
        }
        self.snapshot.as_ref().map(|s| s.metadata.index)
    }

    /// The term of the entry at `i`, if this holds it (as an entry or as the
    /// snapshot's last entry).
    // Ported from etcd-io/raft log_unstable.go (maybeTerm).
    pub fn maybe_term(&self, i: u64) -> Option<u64> {
        if i < self.offset {
            return self
                .snapshot
                .as_ref()
                .filter(|s| s.metadata.index == i)
                .map(|s| s.metadata.term);
        }
        // At or past offset only the entries count: the snapshot sits at
        // offset - 1.
        self.entries.get((i - self.offset) as usize).map(|e| e.term)
    }

    /// The entries not yet handed over for writing.
    // Ported from etcd-io/raft log_unstable.go (nextEntries).
    pub fn next_entries(&self) -> &[Entry] {
        let in_progress = (self.offset_in_progress - self.offset) as usize;
        &self.entries[in_progress..]
    }

    /// The snapshot, if it was not yet handed over for writing.
    // Ported from etcd-io/raft log_unstable.go (nextSnapshot).
    pub fn next_snapshot(&self) -> Option<&Snapshot> {
        if self.snapshot_in_progress {
            return None;
        }
        self.snapshot.as_deref()
    }

    /// Marks every entry and the snapshot, if any, as being written. They are
    /// no longer returned by [`Unstable::next_entries`] and
    /// [`Unstable::next_snapshot`]; what is added later is.
    // Ported from etcd-io/raft log_unstable.go (acceptInProgress).
    pub fn accept_in_progress(&mut self) {
        if let Some(last) = self.entries.last() {
            self.offset_in_progress = last.index + 1;
        }
        if self.snapshot.is_some() {
            self.snapshot_in_progress = true;
        }
    }

    /// Drops the entries up to and including `id`, which the host wrote to
    /// storage. Ignored when `id` is not an entry held here (it may have been
    /// replaced while the write was in flight, or match the snapshot).
    // Ported from etcd-io/raft log_unstable.go (stableTo).
    pub fn stable_to(&mut self, id: EntryId) {
        // The index must be one of the entries (not the snapshot), and the
        // term must match (else the entry was replaced meanwhile).
        if id.index < self.offset || self.maybe_term(id.index) != Some(id.term) {
            return;
        }
        let num = (id.index + 1 - self.offset) as usize;
        self.entries.drain(..num);
        self.offset = id.index + 1;
        self.offset_in_progress = self.offset_in_progress.max(self.offset);
        self.shrink_entries_array();
    }

    /// Releases spare capacity once most of it is unused. Drained entries are
    /// already dropped (with their data), so only the slots are at stake; a
    /// small buffer is kept so steady-state appends do not reallocate.
    // Ported from etcd-io/raft log_unstable.go (shrinkEntriesArray).
    fn shrink_entries_array(&mut self) {
        let len = self.entries.len();
        let cap = self.entries.capacity();
        if cap > MIN_CAPACITY && len * LEN_MULTIPLE < cap {
            self.entries.shrink_to(len.max(MIN_CAPACITY));
        }
    }

    /// Frees the entry buffer when no entry is unstable (an idle,
    /// quiesced group).
    pub fn shrink_idle(&mut self) {
        if self.entries.is_empty() {
            self.entries = Vec::new();
        }
    }

    /// Forgets the snapshot at index `i` once the host wrote it to storage.
    // Ported from etcd-io/raft log_unstable.go (stableSnapTo).
    pub fn stable_snap_to(&mut self, i: u64) {
        if self
            .snapshot
            .as_ref()
            .is_some_and(|s| s.metadata.index == i)
        {
            self.snapshot = None;
            self.snapshot_in_progress = false;
        }
    }

    /// Replaces the contents with snapshot `s`: no entries, and the next entry
    /// follows the snapshot.
    // Ported from etcd-io/raft log_unstable.go (restore).
    pub fn restore(&mut self, s: Snapshot) {
        self.offset = s.metadata.index + 1;
        self.offset_in_progress = self.offset;
        self.entries.clear();
        self.snapshot = Some(Box::new(s));
        self.snapshot_in_progress = false;
    }

    /// Appends `ents` (consecutive), first dropping the entries held from
    /// the index of `ents[0]` on.
    // Ported from etcd-io/raft log_unstable.go (truncateAndAppend).
    pub fn truncate_and_append(&mut self, ents: &[Entry]) {
        if let Some(head) = ents.first() {
            self.splice_in(head.index, ents.iter().cloned());
        }
    }

    /// [`Unstable::truncate_and_append`] that moves the payloads out of
    /// `ents` (leaving `None` behind) instead of cloning them: a payload
    /// changes hands without touching its reference count.
    pub(crate) fn truncate_and_append_taken(&mut self, ents: &mut [Entry]) {
        if let Some(head) = ents.first() {
            let from = head.index;
            // Field by field, not `mem::take`: that built a default entry
            // on the stack and read the moved one back across the stores
            // (a stalled load per entry, a twentieth of B1batch's time).
            self.splice_in(
                from,
                ents.iter_mut().map(|e| Entry {
                    entry_type: e.entry_type,
                    term: e.term,
                    index: e.index,
                    data: e.data.take(),
                }),
            );
        }
    }

    /// Drops the entries held from index `from` on, then appends `ents`,
    /// whose first entry has index `from`.
    fn splice_in(&mut self, from: u64, ents: impl ExactSizeIterator<Item = Entry>) {
        if from == self.offset + self.entries.len() as u64 {
            // Right after the last entry: plain append.
        } else if from <= self.offset {
            // Everything held is replaced; the log restarts at `from`.
            self.entries.clear();
            self.offset = from;
            self.offset_in_progress = from;
        } else {
            // Keep [offset, from), then append.
            self.must_check_out_of_bounds(self.offset, from);
            self.entries.truncate((from - self.offset) as usize);
            // Only the kept entries may still be in progress.
            self.offset_in_progress = self.offset_in_progress.min(from);
        }
        self.entries.extend(ents);
    }

    /// The entries with indexes in `[lo, hi)`, which must all be held here.
    ///
    /// # Panics
    /// If the range is inverted or not held: a bug in the caller.
    // Ported from etcd-io/raft log_unstable.go (slice).
    pub fn slice(&self, lo: u64, hi: u64) -> &[Entry] {
        self.must_check_out_of_bounds(lo, hi);
        &self.entries[(lo - self.offset) as usize..(hi - self.offset) as usize]
    }

    /// Checks `offset <= lo <= hi <= offset + len(entries)`.
    fn must_check_out_of_bounds(&self, lo: u64, hi: u64) {
        assert!(lo <= hi, "invalid unstable.slice {lo} > {hi}");
        let upper = self.offset + self.entries.len() as u64;
        assert!(
            lo >= self.offset && hi <= upper,
            "unstable.slice[{lo},{hi}) out of bound [{},{upper}]",
            self.offset
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::SnapshotMetadata;
    use crate::types::test_util::ents;

    fn snap(index: u64, term: u64) -> Option<Box<Snapshot>> {
        Some(Box::new(Snapshot {
            data: None,
            metadata: SnapshotMetadata {
                index,
                term,
                ..SnapshotMetadata::default()
            },
        }))
    }

    fn unstable(entries: Vec<Entry>, offset: u64, snapshot: Option<Box<Snapshot>>) -> Unstable {
        Unstable {
            entries,
            offset,
            snapshot,
            ..Unstable::default()
        }
    }

    /// etcd: TestUnstableMaybeFirstIndex
    #[test]
    fn test_unstable_maybe_first_index() {
        let cases = [
            // No snapshot.
            (ents(5, &[1]), 5, None, None),
            (vec![], 0, None, None),
            // A snapshot.
            (ents(5, &[1]), 5, snap(4, 1), Some(5)),
            (vec![], 5, snap(4, 1), Some(5)),
        ];
        for (i, (entries, offset, s, want)) in cases.into_iter().enumerate() {
            let u = unstable(entries, offset, s);
            assert_eq!(u.maybe_first_index(), want, "#{i}");
        }
    }

    /// etcd: TestMaybeLastIndex
    #[test]
    fn test_maybe_last_index() {
        let cases = [
            // The last entry.
            (ents(5, &[1]), 5, None, Some(5)),
            (ents(5, &[1]), 5, snap(4, 1), Some(5)),
            // The snapshot.
            (vec![], 5, snap(4, 1), Some(4)),
            // Empty.
            (vec![], 0, None, None),
        ];
        for (i, (entries, offset, s, want)) in cases.into_iter().enumerate() {
            let u = unstable(entries, offset, s);
            assert_eq!(u.maybe_last_index(), want, "#{i}");
        }
    }

    /// etcd: TestUnstableMaybeTerm
    #[test]
    fn test_unstable_maybe_term() {
        let cases = [
            // From the entries.
            (ents(5, &[1]), 5, None, 5, Some(1)),
            (ents(5, &[1]), 5, None, 6, None),
            (ents(5, &[1]), 5, None, 4, None),
            (ents(5, &[1]), 5, snap(4, 1), 5, Some(1)),
            (ents(5, &[1]), 5, snap(4, 1), 6, None),
            // From the snapshot.
            (ents(5, &[1]), 5, snap(4, 1), 4, Some(1)),
            (ents(5, &[1]), 5, snap(4, 1), 3, None),
            (vec![], 5, snap(4, 1), 5, None),
            (vec![], 5, snap(4, 1), 4, Some(1)),
            (vec![], 0, None, 5, None),
        ];
        for (i, (entries, offset, s, index, want)) in cases.into_iter().enumerate() {
            let u = unstable(entries, offset, s);
            assert_eq!(u.maybe_term(index), want, "#{i}");
        }
    }

    /// etcd: TestUnstableRestore
    #[test]
    fn test_unstable_restore() {
        let mut u = Unstable {
            entries: ents(5, &[1]),
            offset: 5,
            offset_in_progress: 6,
            snapshot: snap(4, 1),
            snapshot_in_progress: true,
        };
        let s = *snap(6, 2).unwrap();
        u.restore(s.clone());
        assert_eq!(u.offset, 7);
        assert_eq!(u.offset_in_progress, 7);
        assert!(u.entries.is_empty());
        assert_eq!(u.snapshot, Some(Box::new(s)));
        assert!(!u.snapshot_in_progress);
    }

    /// etcd: TestUnstableNextEntries
    #[test]
    fn test_unstable_next_entries() {
        let cases = [
            // Nothing in progress.
            (ents(5, &[1, 1]), 5, 5, ents(5, &[1, 1])),
            // Partly in progress.
            (ents(5, &[1, 1]), 5, 6, ents(6, &[1])),
            // All in progress.
            (ents(5, &[1, 1]), 5, 7, vec![]),
        ];
        for (i, (entries, offset, in_progress, want)) in cases.into_iter().enumerate() {
            let u = Unstable {
                entries,
                offset,
                offset_in_progress: in_progress,
                ..Unstable::default()
            };
            assert_eq!(u.next_entries(), &want[..], "#{i}");
        }
    }

    /// etcd: TestUnstableNextSnapshot
    #[test]
    fn test_unstable_next_snapshot() {
        let s = snap(4, 1);
        let cases = [
            // No snapshot.
            (None, false, None),
            // A snapshot not in progress.
            (s.clone(), false, s.clone()),
            // A snapshot in progress.
            (s.clone(), true, None),
        ];
        for (i, (snapshot, in_progress, want)) in cases.into_iter().enumerate() {
            let u = Unstable {
                snapshot,
                snapshot_in_progress: in_progress,
                ..Unstable::default()
            };
            assert_eq!(u.next_snapshot(), want.as_deref(), "#{i}");
        }
    }

    /// etcd: TestUnstableAcceptInProgress
    #[test]
    fn test_unstable_accept_in_progress() {
        // (entries, snapshot, offset_in_progress, snapshot_in_progress,
        //  want offset_in_progress, want snapshot_in_progress)
        let cases = [
            (vec![], None, 5, false, 5, false),        // no entries
            (ents(5, &[1]), None, 5, false, 6, false), // entries not in progress
            (ents(5, &[1, 1]), None, 5, false, 7, false),
            (ents(5, &[1, 1]), None, 6, false, 7, false), // first entry in progress
            (ents(5, &[1, 1]), None, 7, false, 7, false), // both in progress
            // With a snapshot not yet in progress.
            (vec![], snap(4, 1), 5, false, 5, true),
            (ents(5, &[1]), snap(4, 1), 5, false, 6, true),
            (ents(5, &[1, 1]), snap(4, 1), 5, false, 7, true),
            (ents(5, &[1, 1]), snap(4, 1), 6, false, 7, true),
            (ents(5, &[1, 1]), snap(4, 1), 7, false, 7, true),
            // With a snapshot already in progress.
            (vec![], snap(4, 1), 5, true, 5, true),
            (ents(5, &[1]), snap(4, 1), 5, true, 6, true),
            (ents(5, &[1, 1]), snap(4, 1), 5, true, 7, true),
            (ents(5, &[1, 1]), snap(4, 1), 6, true, 7, true),
            (ents(5, &[1, 1]), snap(4, 1), 7, true, 7, true),
        ];
        for (i, (entries, snapshot, oip, sip, woip, wsip)) in cases.into_iter().enumerate() {
            let mut u = Unstable {
                entries,
                snapshot,
                offset_in_progress: oip,
                snapshot_in_progress: sip,
                ..Unstable::default()
            };
            u.accept_in_progress();
            assert_eq!(u.offset_in_progress, woip, "#{i}");
            assert_eq!(u.snapshot_in_progress, wsip, "#{i}");
        }
    }

    /// etcd: TestUnstableStableTo
    #[test]
    fn test_unstable_stable_to() {
        // (entries, offset, offset_in_progress, snapshot, index, term,
        //  want offset, want offset_in_progress, want len)
        let cases = [
            (vec![], 0, 0, None, 5, 1, 0, 0, 0),
            // Stable up to the first entry.
            (ents(5, &[1]), 5, 6, None, 5, 1, 6, 6, 0),
            (ents(5, &[1, 1]), 5, 6, None, 5, 1, 6, 6, 1),
            // ... with more in progress.
            (ents(5, &[1, 1]), 5, 7, None, 5, 1, 6, 7, 1),
            // Term mismatch.
            (ents(6, &[2]), 6, 7, None, 6, 1, 6, 7, 1),
            // An old entry.
            (ents(5, &[1]), 5, 6, None, 4, 1, 5, 6, 1),
            (ents(5, &[1]), 5, 6, None, 4, 2, 5, 6, 1),
            // With a snapshot.
            (ents(5, &[1]), 5, 6, snap(4, 1), 5, 1, 6, 6, 0),
            (ents(5, &[1, 1]), 5, 6, snap(4, 1), 5, 1, 6, 6, 1),
            (ents(5, &[1, 1]), 5, 7, snap(4, 1), 5, 1, 6, 7, 1),
            (ents(6, &[2]), 6, 7, snap(5, 1), 6, 1, 6, 7, 1),
            // Stable up to the snapshot: ignored.
            (ents(5, &[1]), 5, 6, snap(4, 1), 4, 1, 5, 6, 1),
            (ents(5, &[2]), 5, 6, snap(4, 2), 4, 1, 5, 6, 1),
        ];
        for (i, c) in cases.into_iter().enumerate() {
            let (entries, offset, oip, snapshot, index, term, woff, woip, wlen) = c;
            let mut u = Unstable {
                entries,
                offset,
                offset_in_progress: oip,
                snapshot,
                snapshot_in_progress: false,
            };
            u.stable_to(EntryId { term, index });
            assert_eq!(u.offset, woff, "#{i}");
            assert_eq!(u.offset_in_progress, woip, "#{i}");
            assert_eq!(u.entries.len(), wlen, "#{i}");
        }
    }

    /// etcd: TestUnstableTruncateAndAppend
    #[test]
    fn test_unstable_truncate_and_append() {
        // (entries, offset, offset_in_progress, to append,
        //  want offset, want offset_in_progress, want entries)
        let cases = [
            // Append at the end.
            (
                ents(5, &[1]),
                5,
                5,
                ents(6, &[1, 1]),
                5,
                5,
                ents(5, &[1, 1, 1]),
            ),
            (
                ents(5, &[1]),
                5,
                6,
                ents(6, &[1, 1]),
                5,
                6,
                ents(5, &[1, 1, 1]),
            ),
            // Replace everything.
            (
                ents(5, &[1]),
                5,
                5,
                ents(5, &[2, 2]),
                5,
                5,
                ents(5, &[2, 2]),
            ),
            (
                ents(5, &[1]),
                5,
                5,
                ents(4, &[2, 2, 2]),
                4,
                4,
                ents(4, &[2, 2, 2]),
            ),
            (
                ents(5, &[1]),
                5,
                6,
                ents(5, &[2, 2]),
                5,
                5,
                ents(5, &[2, 2]),
            ),
            // Truncate, then append.
            (
                ents(5, &[1, 1, 1]),
                5,
                5,
                ents(6, &[2]),
                5,
                5,
                ents(5, &[1, 2]),
            ),
            (
                ents(5, &[1, 1, 1]),
                5,
                5,
                ents(7, &[2, 2]),
                5,
                5,
                ents(5, &[1, 1, 2, 2]),
            ),
            (
                ents(5, &[1, 1, 1]),
                5,
                6,
                ents(6, &[2]),
                5,
                6,
                ents(5, &[1, 2]),
            ),
            (
                ents(5, &[1, 1, 1]),
                5,
                7,
                ents(6, &[2]),
                5,
                6,
                ents(5, &[1, 2]),
            ),
        ];
        for (i, c) in cases.into_iter().enumerate() {
            let (entries, offset, oip, append, woff, woip, want) = c;
            let mut u = Unstable {
                entries,
                offset,
                offset_in_progress: oip,
                ..Unstable::default()
            };
            u.truncate_and_append(&append);
            assert_eq!(u.offset, woff, "#{i}");
            assert_eq!(u.offset_in_progress, woip, "#{i}");
            assert_eq!(u.entries, want, "#{i}");
        }
    }

    /// raftlet: stabilising a large batch gives most of the spare capacity
    /// back, while a small buffer is kept for reuse.
    #[test]
    fn test_unstable_shrinks_after_stable_to() {
        let mut u = Unstable::new(1);
        let terms = vec![1; 1000];
        u.truncate_and_append(&ents(1, &terms));
        u.accept_in_progress();
        u.stable_to(EntryId {
            term: 1,
            index: 990,
        });
        assert_eq!(u.entries.len(), 10);
        assert_eq!(u.offset, 991);
        assert!(u.entries.capacity() <= 2 * MIN_CAPACITY);
        assert_eq!(u.slice(995, 1001), &ents(995, &[1; 6])[..]);
    }
}
