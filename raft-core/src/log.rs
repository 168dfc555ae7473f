//! The Raft log: the stable part read through [`Storage`] plus the
//! [`Unstable`] tail, with the commit and apply cursors (etcd `log.go`), and
//! the entry-size helpers of etcd `util.go`.

use crate::errors::{Error, Result, StorageError};
use crate::log_unstable::Unstable;
use crate::pb::{Encode, Entry, Snapshot};
use crate::storage::Storage;
use crate::types::{EntryId, LogSlice};

/// The size limit that means "no limit".
pub(crate) const NO_LIMIT: u64 = u64::MAX;

/// The encoded size of one entry, as etcd's `Entry.Size()`.
fn entry_size(e: &Entry) -> u64 {
    e.encoded_len() as u64
}

/// The total encoded size of `ents`.
// Ported from etcd-io/raft util.go (entsSize).
pub(crate) fn ents_size(ents: &[Entry]) -> u64 {
    ents.iter().map(entry_size).sum()
}

/// The total payload size of `ents` (their data only; etcd `payloadsSize`).
// Ported from etcd-io/raft util.go (payloadsSize).
pub(crate) fn payloads_size(ents: &[Entry]) -> u64 {
    ents.iter().map(Entry::payload_size).sum()
}

/// The length of the longest prefix of `ents` whose encoded size is at most
/// `max_size`, except that it is at least 1 when `ents` is not empty.
pub(crate) fn size_limited_len(ents: &[Entry], max_size: u64) -> usize {
    if max_size == NO_LIMIT || ents.len() <= 1 {
        return ents.len();
    }
    // Most calls take everything (a leader's appends and a Ready's
    // committed entries are far below the 1 MiB limits): settle those with
    // an upper bound of the encoded size, a few instructions per entry,
    // before computing exact sizes.
    if ents_size_upper_bound(ents) <= max_size {
        return ents.len();
    }
    let mut size = entry_size(&ents[0]);
    for (i, e) in ents.iter().enumerate().skip(1) {
        size = size.saturating_add(entry_size(e));
        if size > max_size {
            return i;
        }
    }
    ents.len()
}

/// An upper bound of [`ents_size`]: each entry's type, term and index
/// fields are at most as long as the longest of their kind in `ents`, and
/// a payload's length prefix at most ten bytes (+ one byte of tag each).
fn ents_size_upper_bound(ents: &[Entry]) -> u64 {
    let (mut data, mut max_term, mut max_index, mut max_type) = (0u64, 0u64, 0u64, 0u64);
    for e in ents {
        data = data.saturating_add(e.data.as_ref().map_or(0, |d| d.len() as u64));
        max_term = max_term.max(e.term);
        max_index = max_index.max(e.index);
        max_type = max_type.max(e.entry_type.0 as i64 as u64);
    }
    let one = Entry {
        entry_type: crate::pb::EntryType(max_type as i64 as i32),
        term: max_term,
        index: max_index,
        data: None,
    };
    // 1 tag + 10 length bytes for a payload that may be present.
    let per_entry = entry_size(&one) + 11;
    data.saturating_add(per_entry.saturating_mul(ents.len() as u64))
}

/// Truncates `ents` to its longest prefix of at most `max_size` encoded
/// bytes, keeping at least the first entry.
// Ported from etcd-io/raft util.go (limitSize).
#[cfg(test)]
pub(crate) fn limit_size(ents: &mut Vec<Entry>, max_size: u64) {
    let n = size_limited_len(ents, max_size);
    ents.truncate(n);
}

/// The log of one node.
///
/// Indexes, lowest to highest:
/// `first_index - 1 <= applied <= applying <= committed <= last_index`.
/// Entries below `unstable.offset` are read from `store`; the rest (and an
/// incoming snapshot) live in `unstable` until the host reports them stable.
// `repr(C)`: what `RawNode::has_ready` reads comes first (see `Raft`).
#[repr(C)]
pub(crate) struct RaftLog<S: Storage> {
    /// The entries and snapshot not yet known to be stable.
    pub unstable: Unstable,
    /// The highest index known to be stored on a quorum.
    pub committed: u64,
    /// The highest index handed to the host for applying (some of those may
    /// still be being applied). Invariant: `applied <= applying <= committed`.
    pub applying: u64,
    /// The highest index the host reports applied. Invariant:
    /// `applied <= committed`.
    pub applied: u64,
    /// Whether handing out entries for applying waits for progress to be
    /// reported, because of `max_applying_ents_size`.
    applying_ents_paused: bool,
    /// The most bytes of entries handed for applying but not yet reported
    /// applied (also the page size of scans over unapplied entries).
    pub(crate) max_applying_ents_size: u64,
    /// The bytes of entries handed for applying but not yet reported applied.
    applying_ents_size: u64,
    /// The stable entries since the last snapshot.
    pub store: S,
}

impl<S: Storage> std::fmt::Debug for RaftLog<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "committed={}, applied={}, applying={}, unstable.offset={}, \
             unstable.offsetInProgress={}, len(unstable.Entries)={}",
            self.committed,
            self.applied,
            self.applying,
            self.unstable.offset,
            self.unstable.offset_in_progress,
            self.unstable.entries.len()
        )
    }
}

impl<S: Storage> RaftLog<S> {
    /// A log over `store`, committed and applied up to the storage's first
    /// index - 1 (the snapshot). At most `max_applying_ents_size` bytes of
    /// entries are out for applying at once (`u64::MAX`: no limit).
    ///
    /// # Errors
    /// The storage's errors.
    // Ported from etcd-io/raft log.go (newLogWithSize).
    pub fn new(store: S, max_applying_ents_size: u64) -> Result<Self> {
        let first_index = store.first_index()?;
        let last_index = store.last_index()?;
        // The snapshot held was taken of applied entries: they are
        // committed, whatever the stored commit index says (it may lag:
        // see `Storage::snapshot_index`). Applied stays where the log
        // starts, as in etcd: the host says where its state machine is
        // (`Config::applied`).
        let snapshot_index = store.snapshot_index()?;
        if snapshot_index > last_index.max(first_index - 1) {
            return Err(Error::InvalidState(format!(
                "the storage's snapshot at {snapshot_index} is past its log [{first_index}, {last_index}]"
            )));
        }
        Ok(RaftLog {
            store,
            unstable: Unstable::new(last_index + 1),
            committed: (first_index - 1).max(snapshot_index),
            applying: first_index - 1,
            applied: first_index - 1,
            max_applying_ents_size,
            applying_ents_size: 0,
            applying_ents_paused: false,
        })
    }

    /// Appends the slice `a` from a leader if the log holds `a.prev`,
    /// replacing any conflicting suffix, and commits up to `committed`
    /// (bounded by the slice's end). Returns the slice's last index, or `None`
    /// if `a.prev` does not match.
    ///
    /// # Panics
    /// If `a` conflicts with a committed entry: a safety violation.
    // Ported from etcd-io/raft log.go (maybeAppend).
    pub fn maybe_append(&mut self, mut a: LogSlice, committed: u64) -> Option<u64> {
        if !self.match_term(a.prev) {
            return None;
        }
        let last_new = a.last_index();
        let ci = self.find_conflict(&a.entries);
        if ci != 0 {
            assert!(
                ci > self.committed,
                "entry {ci} conflict with committed entry [committed({})]",
                self.committed
            );
            let offset = a.prev.index + 1;
            let start = ci - offset;
            assert!(
                start <= a.entries.len() as u64,
                "index, {start}, is out of range [{}]",
                a.entries.len()
            );
            self.append_taken(&mut a.entries[start as usize..]);
        }
        self.commit_to(committed.min(last_new));
        Some(last_new)
    }

    /// Appends `ents` to the unstable tail, truncating the log at
    /// `ents[0].index` first. Returns the new last index.
    ///
    /// # Panics
    /// If that would truncate committed entries.
    // Ported from etcd-io/raft log.go (append).
    pub fn append(&mut self, ents: &[Entry]) -> u64 {
        if let Some(head) = ents.first() {
            self.check_append_after(head.index);
            self.unstable.truncate_and_append(ents);
        }
        self.last_index()
    }

    /// [`RaftLog::append`] that moves the entries out of `ents` (leaving
    /// `None` payloads behind) instead of cloning them.
    pub(crate) fn append_taken(&mut self, ents: &mut [Entry]) -> u64 {
        if let Some(head) = ents.first() {
            self.check_append_after(head.index);
            self.unstable.truncate_and_append_taken(ents);
        }
        self.last_index()
    }

    /// Panics unless entries from index `head` on may be replaced: none of
    /// them is committed.
    fn check_append_after(&self, head: u64) {
        let after = head.saturating_sub(1);
        assert!(
            after >= self.committed,
            "after({after}) is out of range [committed({})]",
            self.committed
        );
    }

    /// The index of the first entry of `ents` (consecutive) that is not in the
    /// log: either it conflicts with an entry there (same index, another term)
    /// or it is past the end. 0 when the log holds all of `ents`.
    // Ported from etcd-io/raft log.go (findConflict).
    pub fn find_conflict(&self, ents: &[Entry]) -> u64 {
        ents.iter()
            .map(EntryId::from_entry)
            .find(|id| !self.match_term(*id))
            .map_or(0, |id| id.index)
    }

    /// A guess of where this log stops matching another one, knowing only
    /// that the other log has an entry of `term` at `index`: the largest
    /// index `<= index` whose term is `<= term` or unknown (compacted or not
    /// yet stored). Returns that index and its term (0 when unknown).
    ///
    /// Leaders and followers use it to skip over a conflicting run of
    /// entries after a rejected append.
    // Ported from etcd-io/raft log.go (findConflictByTerm).
    pub fn find_conflict_by_term(&self, index: u64, term: u64) -> (u64, u64) {
        for i in (1..=index).rev() {
            match self.term(i) {
                // Unknown: maybe a match.
                Err(_) => return (i, 0),
                Ok(t) if t <= term => return (i, t),
                Ok(_) => {}
            }
        }
        (0, 0)
    }

    /// The unstable entries not yet handed to the host for writing.
    pub fn next_unstable_ents(&self) -> &[Entry] {
        self.unstable.next_entries()
    }

    /// Whether there are unstable entries not yet handed over for writing.
    pub fn has_next_unstable_ents(&self) -> bool {
        !self.next_unstable_ents().is_empty()
    }

    /// The committed entries to hand to the host for applying next: after
    /// `applying`, within the applying-size budget, and only stable ones
    /// unless `allow_unstable`. Empty while a snapshot is pending.
    ///
    /// # Panics
    /// If the storage fails to return entries that must be there.
    // Ported from etcd-io/raft log.go (nextCommittedEnts).
    #[cfg(test)]
    pub fn next_committed_ents(&self, allow_unstable: bool) -> Vec<Entry> {
        let mut out = Vec::new();
        self.next_committed_ents_into(allow_unstable, &mut out)
            .expect("a test storage that reads");
        out
    }

    /// Like [`RaftLog::next_committed_ents`], appending to `out`.
    ///
    /// # Errors
    /// The storage's error when it fails to read the entries (etcd
    /// panics): `out` is left as it was. `RawNode` then hands out none
    /// until its next message or acting tick.
    pub fn next_committed_ents_into(
        &self,
        allow_unstable: bool,
        out: &mut Vec<Entry>,
    ) -> Result<()> {
        if self.applying_ents_paused || self.has_next_or_in_progress_snapshot() {
            // Out of budget, or a snapshot goes first.
            return Ok(());
        }
        let lo = self.applying + 1;
        let hi = self.max_appliable_index(allow_unstable) + 1;
        if lo >= hi {
            return Ok(());
        }
        let max_size = self
            .max_applying_ents_size
            .checked_sub(self.applying_ents_size)
            .filter(|&s| s > 0)
            .unwrap_or_else(|| {
                panic!(
                    "applying entry size ({}-{}) not positive",
                    self.max_applying_ents_size, self.applying_ents_size
                )
            });
        let start = out.len();
        if let Err(e) = self.slice_into(lo, hi, max_size, out) {
            out.truncate(start);
            return Err(e);
        }
        Ok(())
    }

    /// Whether [`RaftLog::next_committed_ents`] would return entries (without
    /// reading them).
    // Ported from etcd-io/raft log.go (hasNextCommittedEnts).
    pub fn has_next_committed_ents(&self, allow_unstable: bool) -> bool {
        if self.applying_ents_paused || self.has_next_or_in_progress_snapshot() {
            // With a snapshot pending, entries wait: it is applied first.
            return false;
        }
        self.applying < self.max_appliable_index(allow_unstable)
    }

    /// The highest committed index that may be applied: `committed`, capped
    /// at the last stable index unless `allow_unstable`.
    // Ported from etcd-io/raft log.go (maxAppliableIndex).
    pub fn max_appliable_index(&self, allow_unstable: bool) -> u64 {
        if allow_unstable {
            self.committed
        } else {
            self.committed.min(self.unstable.offset - 1)
        }
    }

    /// The unstable snapshot, if not yet handed to the host for writing.
    pub fn next_unstable_snapshot(&self) -> Option<&Snapshot> {
        self.unstable.next_snapshot()
    }

    /// Whether there is an unstable snapshot not yet handed over for writing.
    pub fn has_next_unstable_snapshot(&self) -> bool {
        self.unstable.next_snapshot().is_some()
    }

    /// Whether there is an unstable snapshot, handed over for writing or not.
    pub fn has_next_or_in_progress_snapshot(&self) -> bool {
        self.unstable.snapshot.is_some()
    }

    /// The most recent snapshot: the unstable one if any, else the
    /// storage's, asked for with the hints `request_index` and `to` (see
    /// [`Storage::snapshot`]).
    ///
    /// # Errors
    /// The storage's errors, notably
    /// [`StorageError::SnapshotTemporarilyUnavailable`].
    // Ported from etcd-io/raft log.go (snapshot).
    pub fn snapshot(&self, request_index: u64, to: u64) -> Result<Snapshot> {
        match &self.unstable.snapshot {
            Some(s) => Ok((**s).clone()),
            None => self.store.snapshot(request_index, to),
        }
    }

    /// The index of the first entry that may be read.
    ///
    /// # Panics
    /// If the storage fails.
    // Ported from etcd-io/raft log.go (firstIndex).
    pub fn first_index(&self) -> u64 {
        if let Some(i) = self.unstable.maybe_first_index() {
            return i;
        }
        match self.store.first_index() {
            Ok(i) => i,
            Err(e) => panic!("storage failed to report its first index: {e}"),
        }
    }

    /// The index of the last entry.
    ///
    /// # Panics
    /// If the storage fails.
    // Ported from etcd-io/raft log.go (lastIndex).
    pub fn last_index(&self) -> u64 {
        if let Some(i) = self.unstable.maybe_last_index() {
            return i;
        }
        match self.store.last_index() {
            Ok(i) => i,
            Err(e) => panic!("storage failed to report its last index: {e}"),
        }
    }

    /// Raises the commit index to `tocommit` (never lowers it).
    ///
    /// # Panics
    /// If `tocommit` is past the last index: the log was corrupted,
    /// truncated or lost.
    // Ported from etcd-io/raft log.go (commitTo).
    pub fn commit_to(&mut self, tocommit: u64) {
        if self.committed < tocommit {
            let last = self.last_index();
            assert!(
                tocommit <= last,
                "tocommit({tocommit}) is out of range [lastIndex({last})]. \
                 Was the raft log corrupted, truncated, or lost?"
            );
            self.committed = tocommit;
        }
    }

    /// Records that the host applied up to `i`, releasing `size` bytes of
    /// the applying budget.
    ///
    /// # Panics
    /// If `i` is below `applied` or above `committed`.
    // Ported from etcd-io/raft log.go (appliedTo).
    pub fn applied_to(&mut self, i: u64, size: u64) {
        assert!(
            i <= self.committed && i >= self.applied,
            "applied({i}) is out of range [prevApplied({}), committed({})]",
            self.applied,
            self.committed
        );
        self.applied = i;
        self.applying = self.applying.max(i);
        // Saturating: wrong accounting must not underflow.
        self.applying_ents_size = self.applying_ents_size.saturating_sub(size);
        self.applying_ents_paused = self.applying_ents_size >= self.max_applying_ents_size;
    }

    /// Records that entries up to `i`, of `size` bytes, were handed to the
    /// host for applying, and pauses handing out more when the budget is
    /// used up or the last batch was cut short by it.
    ///
    /// # Panics
    /// If `i` is above `committed`.
    // Ported from etcd-io/raft log.go (acceptApplying).
    pub fn accept_applying(&mut self, i: u64, size: u64, allow_unstable: bool) {
        assert!(
            i <= self.committed,
            "applying({i}) is out of range [prevApplying({}), committed({})]",
            self.applying,
            self.committed
        );
        self.applying = i;
        self.applying_ents_size = self.applying_ents_size.saturating_add(size);
        // Pause when the budget is used up, or when the batch stopped short
        // of what could be applied: then the next entry would not fit.
        self.applying_ents_paused = self.applying_ents_size >= self.max_applying_ents_size
            || i < self.max_appliable_index(allow_unstable);
    }

    /// Records that the entries up to `id` are stable (see
    /// [`Unstable::stable_to`]).
    pub fn stable_to(&mut self, id: EntryId) {
        self.unstable.stable_to(id);
    }

    /// Records that the snapshot at `i` is stable.
    pub fn stable_snap_to(&mut self, i: u64) {
        self.unstable.stable_snap_to(i);
    }

    /// Marks the current unstable entries and snapshot as handed to the host
    /// for writing, so they are not handed out again.
    pub fn accept_unstable(&mut self) {
        self.unstable.accept_in_progress();
    }

    /// The id of the last entry.
    ///
    /// # Panics
    /// If the storage cannot report the last entry's term.
    // Ported from etcd-io/raft log.go (lastEntryID).
    pub fn last_entry_id(&self) -> EntryId {
        let index = self.last_index();
        match self.term(index) {
            Ok(term) => EntryId { term, index },
            Err(e) => panic!("unexpected error when getting the last term at {index}: {e}"),
        }
    }

    /// The term of the entry at `i`, for `i` in
    /// `[first_index() - 1, last_index()]`.
    ///
    /// # Errors
    /// [`StorageError::Compacted`] below that range,
    /// [`StorageError::Unavailable`] above it, and any other storage error.
    // Ported from etcd-io/raft log.go (term).
    pub fn term(&self, i: u64) -> Result<u64> {
        // The unstable tail first: a hit there is always in range, and it
        // spares a storage read.
        if let Some(t) = self.unstable.maybe_term(i) {
            return Ok(t);
        }
        // Below the unstable entries, with no unstable snapshot, the log's
        // range is the storage's own: a storage that checks that range
        // itself (`Storage::checks_range`) answers in one read. (An
        // unstable snapshot moves the log's first index above the
        // storage's; at and past the unstable offset the storage may still
        // hold entries the log replaced.)
        if self.unstable.snapshot.is_none() && i < self.unstable.offset && self.store.checks_range()
        {
            return self.store.term(i);
        }
        // Past the end first: with unstable entries the last index is the
        // log's own, while the first index is a storage read. (Both cannot
        // hold: the first index is at most one past the last.)
        if i > self.last_index() {
            return Err(StorageError::Unavailable.into());
        }
        // The entry just before the first one keeps its term for matching.
        if i.saturating_add(1) < self.first_index() {
            return Err(StorageError::Compacted.into());
        }
        self.store.term(i)
    }

    /// The entries from `i` to the end, at most `max_size` bytes but at least
    /// one (empty when `i` is past the end).
    ///
    /// # Errors
    /// [`StorageError::Compacted`] if `i` was compacted; other storage errors.
    // Ported from etcd-io/raft log.go (entries).
    pub fn entries(&self, i: u64, max_size: u64) -> Result<Vec<Entry>> {
        let last = self.last_index();
        if i > last {
            return Ok(Vec::new());
        }
        self.slice(i, last + 1, max_size)
    }

    /// Every entry in the log.
    ///
    /// # Panics
    /// If the storage fails other than by a racing compaction (retried).
    // Ported from etcd-io/raft log.go (allEntries).
    #[cfg(test)]
    pub fn all_entries(&self) -> Vec<Entry> {
        loop {
            match self.entries(self.first_index(), NO_LIMIT) {
                Ok(ents) => return ents,
                // The host compacted meanwhile: try again.
                Err(Error::Store(StorageError::Compacted)) => continue,
                Err(e) => panic!("unexpected error when reading all entries: {e}"),
            }
        }
    }

    /// Whether a log ending at `their` is at least as up to date as this one:
    /// a later last term wins; with equal last terms, the longer log wins.
    // Ported from etcd-io/raft log.go (isUpToDate).
    pub fn is_up_to_date(&self, their: EntryId) -> bool {
        let our = self.last_entry_id();
        their.term > our.term || (their.term == our.term && their.index >= our.index)
    }

    /// Whether the log holds the entry `id` (an entry at `id.index` of term
    /// `id.term`).
    // Ported from etcd-io/raft log.go (matchTerm).
    pub fn match_term(&self, id: EntryId) -> bool {
        self.term(id.index).is_ok_and(|t| t == id.term)
    }

    /// Commits up to `at` if that raises the commit index and the log holds
    /// `at`. Returns whether it did.
    // Ported from etcd-io/raft log.go (maybeCommit).
    pub fn maybe_commit(&mut self, at: EntryId) -> bool {
        // A term of 0 never matches: a leader campaigned at term 1 at least.
        if at.term != 0 && at.index > self.committed && self.match_term(at) {
            self.commit_to(at.index);
            return true;
        }
        false
    }

    /// Replaces the log with snapshot `s`, which becomes committed.
    // Ported from etcd-io/raft log.go (restore).
    pub fn restore(&mut self, s: Snapshot) {
        self.committed = s.metadata.index;
        self.unstable.restore(s);
    }

    /// Calls `f` with the entries in `[lo, hi)`, in consecutive pages of at
    /// most `page_size` bytes each (a page holds at least one entry). Stops
    /// at the first error `f` returns and returns it.
    ///
    /// # Errors
    /// The error of `f`, or of reading the entries (the range must exist;
    /// some pages may have been passed to `f` already).
    // Ported from etcd-io/raft log.go (scan).
    pub fn scan(
        &self,
        mut lo: u64,
        hi: u64,
        page_size: u64,
        mut f: impl FnMut(&[Entry]) -> Result<()>,
    ) -> Result<()> {
        while lo < hi {
            let ents = self.slice(lo, hi, page_size)?;
            if ents.is_empty() {
                return Err(StorageError::Other(format!("got 0 entries in [{lo}, {hi})")).into());
            }
            f(&ents)?;
            lo += ents.len() as u64;
        }
        Ok(())
    }

    /// The entries in `[lo, hi)`, at most `max_size` bytes but at least one
    /// when the range is not empty.
    ///
    /// # Errors
    /// [`StorageError::Compacted`] if `lo` was compacted; other storage
    /// errors (etcd panics when the storage lacks entries it must hold).
    ///
    /// # Panics
    /// If `lo > hi` or `hi` is past the end of the log: a bug in the caller.
    // Ported from etcd-io/raft log.go (slice).
    pub fn slice(&self, lo: u64, hi: u64, max_size: u64) -> Result<Vec<Entry>> {
        let mut out = Vec::new();
        self.slice_into(lo, hi, max_size, &mut out)?;
        Ok(out)
    }

    /// Like [`RaftLog::slice`], appending to `out` (so callers can reuse
    /// a buffer). On error `out` may hold a prefix of the range.
    pub fn slice_into(&self, lo: u64, hi: u64, max_size: u64, out: &mut Vec<Entry>) -> Result<()> {
        // Stable entries, with no unstable snapshot: the log's range there
        // is the storage's own (as in `term`), so a storage that checks its
        // range answers in one read. Its errors go the checked way below,
        // which reports (or panics on) them as it always did.
        if lo < hi
            && hi <= self.unstable.offset
            && self.unstable.snapshot.is_none()
            && self.store.checks_range()
            && self.store.entries_into(lo, hi, max_size, out).is_ok()
        {
            return Ok(());
        }
        self.must_check_out_of_bounds(lo, hi)?;
        if lo == hi {
            return Ok(());
        }
        let offset = self.unstable.offset;
        if lo >= offset {
            let ents = self.unstable.slice(lo, hi);
            out.extend_from_slice(&ents[..size_limited_len(ents, max_size)]);
            return Ok(());
        }

        let cut = hi.min(offset);
        let start = out.len();
        self.store.entries_into(lo, cut, max_size, out)?;
        if hi <= offset {
            return Ok(());
        }
        // Fewer entries than asked: the size limit was reached.
        if ((out.len() - start) as u64) < cut - lo {
            return Ok(());
        }
        let unstable = self.unstable.slice(offset, hi);
        if max_size == NO_LIMIT {
            out.extend_from_slice(unstable);
            return Ok(());
        }
        // Measure what storage returned, then fit as much of the unstable
        // part as the rest of the budget allows.
        let size = ents_size(&out[start..]);
        if size >= max_size {
            return Ok(());
        }
        let n = size_limited_len(unstable, max_size - size);
        // size_limited_len keeps one entry even if it does not fit; here
        // the stable part already satisfies "at least one", so drop it.
        if n == 1 && size + entry_size(&unstable[0]) > max_size {
            return Ok(());
        }
        out.extend_from_slice(&unstable[..n]);
        Ok(())
    }

    /// Checks `first_index <= lo <= hi <= last_index + 1`.
    ///
    /// # Errors
    /// [`StorageError::Compacted`] if `lo` is below the first index.
    ///
    /// # Panics
    /// If `lo > hi` or `hi` is past the end.
    // Ported from etcd-io/raft log.go (mustCheckOutOfBounds).
    fn must_check_out_of_bounds(&self, lo: u64, hi: u64) -> Result<()> {
        assert!(lo <= hi, "invalid slice {lo} > {hi}");
        let fi = self.first_index();
        if lo < fi {
            return Err(StorageError::Compacted.into());
        }
        let last = self.last_index();
        assert!(
            hi <= last + 1,
            "slice[{lo},{hi}) out of bound [{fi},{last}]"
        );
        Ok(())
    }

    /// The term in `r`, or 0 if the index was compacted or is past the end.
    ///
    /// # Panics
    /// On any other error.
    // Ported from etcd-io/raft log.go (zeroTermOnOutOfBounds).
    pub fn zero_term_on_out_of_bounds(r: Result<u64>) -> u64 {
        match r {
            Ok(t) => t,
            Err(Error::Store(StorageError::Compacted | StorageError::Unavailable)) => 0,
            Err(e) => panic!("unexpected error ({e})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::panic::{catch_unwind, AssertUnwindSafe};

    use super::*;
    use crate::pb::SnapshotMetadata;
    use crate::storage::MemoryStorage;
    use crate::types::test_util::{ents, ents_term_range};

    fn new_log(store: MemoryStorage) -> RaftLog<MemoryStorage> {
        RaftLog::new(store, NO_LIMIT).unwrap()
    }

    fn snap(index: u64, term: u64) -> Snapshot {
        Snapshot {
            data: None,
            metadata: SnapshotMetadata {
                index,
                term,
                ..SnapshotMetadata::default()
            },
        }
    }

    fn id(term: u64, index: u64) -> EntryId {
        EntryId { term, index }
    }

    fn store_err<T>(e: StorageError) -> Result<T> {
        Err(Error::Store(e))
    }

    /// Runs `f`, returning whether it panicked.
    fn panics(f: impl FnOnce()) -> bool {
        catch_unwind(AssertUnwindSafe(f)).is_err()
    }

    /// etcd: TestFindConflict
    #[test]
    fn test_find_conflict() {
        let previous = ents(1, &[1, 2, 3]);
        let cases = [
            // No conflict, nothing given.
            (vec![], 0),
            // No conflict.
            (ents(1, &[1, 2, 3]), 0),
            (ents(2, &[2, 3]), 0),
            (ents(3, &[3]), 0),
            // No conflict, but new entries.
            (ents(1, &[1, 2, 3, 4, 4]), 4),
            (ents(2, &[2, 3, 4, 5]), 4),
            (ents(3, &[3, 4, 4]), 4),
            (ents(4, &[4, 4]), 4),
            // Conflicts with existing entries.
            (ents(1, &[4, 4]), 1),
            (ents(2, &[1, 4, 4]), 2),
            (ents(3, &[1, 2, 4, 4]), 3),
        ];
        for (i, (input, want)) in cases.into_iter().enumerate() {
            let mut log = new_log(MemoryStorage::new());
            log.append(&previous);
            assert_eq!(log.find_conflict(&input), want, "#{i}");
        }
    }

    /// etcd: TestFindConflictByTerm
    #[test]
    fn test_find_conflict_by_term() {
        let from_one = ents(0, &[0, 2, 2, 5, 5, 5]);
        let compacted = ents(10, &[3, 3, 3, 4, 4, 4]);
        // (log, where ents[0] is the snapshot; index; term; want index)
        let cases = [
            // The log starts at index 1.
            (&from_one, 100, 2, 100), // Unavailable
            (&from_one, 5, 6, 5),
            (&from_one, 5, 5, 5),
            (&from_one, 5, 4, 2),
            (&from_one, 5, 2, 2),
            (&from_one, 5, 1, 0),
            (&from_one, 1, 2, 1),
            (&from_one, 1, 1, 0),
            (&from_one, 0, 0, 0),
            // A log with compacted entries.
            (&compacted, 30, 3, 30), // Unavailable
            (&compacted, 14, 9, 14),
            (&compacted, 14, 4, 14),
            (&compacted, 14, 3, 12),
            (&compacted, 14, 2, 9),
            (&compacted, 11, 5, 11),
            (&compacted, 10, 5, 10),
            (&compacted, 10, 3, 10),
            (&compacted, 10, 2, 9),
            (&compacted, 9, 2, 9), // Compacted
            (&compacted, 4, 2, 4), // Compacted
            (&compacted, 0, 0, 0), // Compacted
        ];
        for (i, (log_ents, index, term, want)) in cases.into_iter().enumerate() {
            let st = MemoryStorage::new();
            // Applying the empty snapshot (index 0) is refused as out of
            // date, as in etcd; the log then simply starts at 1.
            let _ = st
                .wl()
                .apply_snapshot(snap(log_ents[0].index, log_ents[0].term));
            let mut l = new_log(st);
            l.append(&log_ents[1..]);

            let (gi, gt) = l.find_conflict_by_term(index, term);
            assert_eq!(gi, want, "#{i}");
            let want_term = RaftLog::<MemoryStorage>::zero_term_on_out_of_bounds(l.term(gi));
            assert_eq!(gt, want_term, "#{i}");
        }
    }

    /// etcd: TestIsUpToDate
    #[test]
    fn test_is_up_to_date() {
        let mut log = new_log(MemoryStorage::new());
        log.append(&ents(1, &[1, 2, 3]));
        let last = log.last_index();
        let cases = [
            // A greater term wins whatever the index.
            (last - 1, 4, true),
            (last, 4, true),
            (last + 1, 4, true),
            // A smaller term loses whatever the index.
            (last - 1, 2, false),
            (last, 2, false),
            (last + 1, 2, false),
            // The same term: an equal or larger index wins.
            (last - 1, 3, false),
            (last, 3, true),
            (last + 1, 3, true),
        ];
        for (i, (index, term, want)) in cases.into_iter().enumerate() {
            assert_eq!(log.is_up_to_date(id(term, index)), want, "#{i}");
        }
    }

    /// etcd: TestAppend
    #[test]
    fn test_append() {
        // (to append, want last index, want entries, want unstable offset)
        let cases = [
            (vec![], 2, ents(1, &[1, 2]), 3),
            (ents(3, &[2]), 3, ents(1, &[1, 2, 2]), 3),
            // Conflicts with index 1.
            (ents(1, &[2]), 1, ents(1, &[2]), 1),
            // Conflicts with index 2.
            (ents(2, &[3, 3]), 3, ents(1, &[1, 3, 3]), 2),
        ];
        for (i, (input, windex, wents, wunstable)) in cases.into_iter().enumerate() {
            let storage = MemoryStorage::new();
            storage.wl().append(&ents(1, &[1, 2])).unwrap();
            let mut log = new_log(storage);
            assert_eq!(log.append(&input), windex, "#{i}");
            assert_eq!(log.entries(1, NO_LIMIT), Ok(wents), "#{i}");
            assert_eq!(log.unstable.offset, wunstable, "#{i}");
        }
    }

    /// etcd: TestLogMaybeAppend
    ///
    /// If the log holds the slice's prev, conflicting entries and all that
    /// follow are replaced and new entries appended; otherwise nothing
    /// happens.
    #[test]
    fn test_log_maybe_append() {
        let previous = ents(1, &[1, 2, 3]);
        let (last_index, last_term, commit) = (3u64, 3u64, 1u64);
        struct Case {
            prev: EntryId,
            committed: u64,
            ents: Vec<Entry>,
            wlasti: Option<u64>,
            wcommit: u64,
            wpanic: bool,
        }
        let c = |prev, committed, ents, wlasti, wcommit| Case {
            prev,
            committed,
            ents,
            wlasti,
            wcommit,
            wpanic: false,
        };
        let cases = vec![
            // No match: another term.
            c(
                id(last_term - 1, last_index),
                last_index,
                ents(last_index + 1, &[4]),
                None,
                commit,
            ),
            // No match: past the end.
            c(
                id(last_term, last_index + 1),
                last_index,
                ents(last_index + 2, &[4]),
                None,
                commit,
            ),
            // Match with the last entry.
            c(
                id(last_term, last_index),
                last_index,
                vec![],
                Some(last_index),
                last_index,
            ),
            // Commit no higher than the slice's end.
            c(
                id(last_term, last_index),
                last_index + 1,
                vec![],
                Some(last_index),
                last_index,
            ),
            // Commit up to the given commit.
            c(
                id(last_term, last_index),
                last_index - 1,
                vec![],
                Some(last_index),
                last_index - 1,
            ),
            // The commit never decreases.
            c(
                id(last_term, last_index),
                0,
                vec![],
                Some(last_index),
                commit,
            ),
            c(id(0, 0), last_index, vec![], Some(0), commit),
            c(
                id(last_term, last_index),
                last_index,
                ents(last_index + 1, &[4]),
                Some(last_index + 1),
                last_index,
            ),
            c(
                id(last_term, last_index),
                last_index + 1,
                ents(last_index + 1, &[4]),
                Some(last_index + 1),
                last_index + 1,
            ),
            c(
                id(last_term, last_index),
                last_index + 2,
                ents(last_index + 1, &[4]),
                Some(last_index + 1),
                last_index + 1,
            ),
            c(
                id(last_term, last_index),
                last_index + 2,
                ents(last_index + 1, &[4, 4]),
                Some(last_index + 2),
                last_index + 2,
            ),
            // Match with an entry in the middle.
            c(
                id(last_term - 1, last_index - 1),
                last_index,
                ents(last_index, &[4]),
                Some(last_index),
                last_index,
            ),
            c(
                id(last_term - 2, last_index - 2),
                last_index,
                ents(last_index - 1, &[4]),
                Some(last_index - 1),
                last_index - 1,
            ),
            // Conflicts with a committed entry.
            Case {
                wpanic: true,
                ..c(
                    id(last_term - 3, last_index - 3),
                    last_index,
                    ents(last_index - 2, &[4]),
                    Some(last_index - 2),
                    last_index - 2,
                )
            },
            c(
                id(last_term - 2, last_index - 2),
                last_index,
                ents(last_index - 1, &[4, 4]),
                Some(last_index),
                last_index,
            ),
        ];
        for (i, tt) in cases.into_iter().enumerate() {
            // A leader term high enough for every slice to be valid.
            let app = LogSlice {
                term: 100,
                prev: tt.prev,
                entries: tt.ents.clone(),
            };
            assert_eq!(app.valid(), Ok(()), "#{i}");

            let mut log = new_log(MemoryStorage::new());
            log.append(&previous);
            log.committed = commit;

            let mut got = None;
            let panicked = panics(|| got = log.maybe_append(app, tt.committed));
            assert_eq!(panicked, tt.wpanic, "#{i}");
            if panicked {
                continue;
            }
            assert_eq!(got, tt.wlasti, "#{i}");
            assert_eq!(log.committed, tt.wcommit, "#{i}");
            if got.is_some() && !tt.ents.is_empty() {
                let last = log.last_index();
                let g = log
                    .slice(last - tt.ents.len() as u64 + 1, last + 1, NO_LIMIT)
                    .unwrap();
                assert_eq!(g, tt.ents, "#{i}");
            }
        }
    }

    /// etcd: TestCompactionSideEffects
    ///
    /// The log keeps working after the storage is compacted under it.
    #[test]
    fn test_compaction_side_effects() {
        // 1000 entries: 750 stable, 250 unstable.
        let (last_index, unstable_index) = (1000u64, 750u64);
        let storage = MemoryStorage::new();
        storage
            .wl()
            .append(&ents_term_range(1, 1, unstable_index + 1))
            .unwrap();
        let mut log = new_log(storage.clone());
        log.append(&ents_term_range(
            unstable_index + 1,
            unstable_index + 1,
            last_index + 1,
        ));

        assert!(log.maybe_commit(log.last_entry_id()));
        log.applied_to(log.committed, 0);

        let offset = 500;
        storage.wl().compact(offset).unwrap();
        assert_eq!(log.last_index(), last_index);

        for j in offset..=log.last_index() {
            assert_eq!(log.term(j), Ok(j));
            assert!(log.match_term(id(j, j)));
        }

        let unstable = log.next_unstable_ents();
        assert_eq!(unstable.len(), 250);
        assert_eq!(unstable[0].index, 751);

        let prev = log.last_index();
        log.append(&ents(prev + 1, &[prev + 1]));
        assert_eq!(log.last_index(), prev + 1);

        let got = log.entries(log.last_index(), NO_LIMIT).unwrap();
        assert_eq!(got.len(), 1);
    }

    /// The log of the apply tests: snapshot at 3 (term 1), entry 4 stable,
    /// entries 5 and 6 unstable, committed up to 5.
    fn apply_test_log(max_size: u64) -> RaftLog<MemoryStorage> {
        let all = ents(4, &[1, 1, 1]);
        let storage = MemoryStorage::new();
        storage.wl().apply_snapshot(snap(3, 1)).unwrap();
        storage.wl().append(&all[..1]).unwrap();
        let mut log = RaftLog::new(storage, max_size).unwrap();
        log.append(&all);
        log.stable_to(id(1, 4));
        log.maybe_commit(id(1, 5));
        log
    }

    /// (applied, applying, allow_unstable, paused, snapshot, want entries)
    /// for the next-committed tables; the wanted entries are indexes in
    /// `[from, to)`.
    type NextCase = (u64, u64, bool, bool, bool, (u64, u64));

    const NEXT_CASES: [NextCase; 14] = [
        (3, 3, true, false, false, (4, 6)),
        (3, 4, true, false, false, (5, 6)),
        (3, 5, true, false, false, (0, 0)),
        (4, 4, true, false, false, (5, 6)),
        (4, 5, true, false, false, (0, 0)),
        (5, 5, true, false, false, (0, 0)),
        // Unstable entries not allowed.
        (3, 3, false, false, false, (4, 5)),
        (3, 4, false, false, false, (0, 0)),
        (3, 5, false, false, false, (0, 0)),
        (4, 4, false, false, false, (0, 0)),
        (4, 5, false, false, false, (0, 0)),
        (5, 5, false, false, false, (0, 0)),
        // Paused.
        (3, 3, true, true, false, (0, 0)),
        // A snapshot pending.
        (3, 3, true, false, true, (0, 0)),
    ];

    fn next_case_log(c: &NextCase) -> RaftLog<MemoryStorage> {
        let &(applied, applying, allow_unstable, paused, with_snap, _) = c;
        let mut log = apply_test_log(NO_LIMIT);
        log.applied_to(applied, 0);
        log.accept_applying(applying, 0, allow_unstable);
        log.applying_ents_paused = paused;
        if with_snap {
            log.restore(snap(4, 1));
        }
        log
    }

    /// etcd: TestHasNextCommittedEnts
    #[test]
    fn test_has_next_committed_ents() {
        for (i, c) in NEXT_CASES.iter().enumerate() {
            let log = next_case_log(c);
            let (from, to) = c.5;
            assert_eq!(log.has_next_committed_ents(c.2), from < to, "#{i}");
        }
    }

    /// etcd: TestNextCommittedEnts
    #[test]
    fn test_next_committed_ents() {
        for (i, c) in NEXT_CASES.iter().enumerate() {
            let log = next_case_log(c);
            let (from, to) = c.5;
            let want: Vec<Entry> = ents(4, &[1, 1, 1])
                .into_iter()
                .filter(|e| (from..to).contains(&e.index))
                .collect();
            assert_eq!(log.next_committed_ents(c.2), want, "#{i}");
        }
    }

    /// etcd: TestAcceptApplying
    #[test]
    fn test_accept_applying() {
        let max = 100;
        // (index, allow_unstable, size, want paused)
        let cases = [
            (3, true, max - 1, true),
            (3, true, max, true),
            (3, true, max + 1, true),
            (4, true, max - 1, true),
            (4, true, max, true),
            (4, true, max + 1, true),
            (5, true, max - 1, false),
            (5, true, max, true),
            (5, true, max + 1, true),
            // Unstable entries not allowed.
            (3, false, max - 1, true),
            (3, false, max, true),
            (3, false, max + 1, true),
            (4, false, max - 1, false),
            (4, false, max, true),
            (4, false, max + 1, true),
            (5, false, max - 1, false),
            (5, false, max, true),
            (5, false, max + 1, true),
        ];
        for (i, (index, allow_unstable, size, wpaused)) in cases.into_iter().enumerate() {
            let mut log = apply_test_log(max);
            log.applied_to(3, 0);
            log.accept_applying(index, size, allow_unstable);
            assert_eq!(log.applying_ents_paused, wpaused, "#{i}");
        }
    }

    /// etcd: TestAppliedTo
    #[test]
    fn test_applied_to() {
        let (max, overshoot) = (100, 5);
        // (index, size, want applying size, want paused)
        let cases = [
            // Apply some of the entries being applied (applying = 5).
            (4, overshoot - 1, max + 1, true),
            (4, overshoot, max, true),
            (4, overshoot + 1, max - 1, false),
            // Apply all of them.
            (5, overshoot - 1, max + 1, true),
            (5, overshoot, max, true),
            (5, overshoot + 1, max - 1, false),
            // Release every outstanding byte.
            (4, max + overshoot, 0, false),
            // Release more than outstanding: no underflow.
            (4, max + overshoot + 1, 0, false),
        ];
        for (i, (index, size, wsize, wpaused)) in cases.into_iter().enumerate() {
            let mut log = apply_test_log(max);
            log.applied_to(3, 0);
            log.accept_applying(5, max + overshoot, false);

            log.applied_to(index, size);
            assert_eq!(log.applied, index, "#{i}");
            assert_eq!(log.applying, 5, "#{i}");
            assert_eq!(log.applying_ents_size, wsize, "#{i}");
            assert_eq!(log.applying_ents_paused, wpaused, "#{i}");
        }
    }

    /// etcd: TestNextUnstableEnts
    #[test]
    fn test_next_unstable_ents() {
        let previous = ents(1, &[1, 2]);
        // (first unstable index, want entries)
        let cases = [(3, vec![]), (1, previous.clone())];
        for (i, (unstable, want)) in cases.into_iter().enumerate() {
            let split = (unstable - 1) as usize;
            let storage = MemoryStorage::new();
            storage.wl().append(&previous[..split]).unwrap();
            let mut log = new_log(storage);
            log.append(&previous[split..]);

            let got = log.next_unstable_ents().to_vec();
            if let Some(last) = got.last() {
                log.stable_to(EntryId::from_entry(last));
            }
            assert_eq!(got, want, "#{i}");
            assert_eq!(log.unstable.offset, 3, "#{i}");
        }
    }

    /// etcd: TestCommitTo
    #[test]
    fn test_commit_to() {
        // (commit to, want commit, want panic)
        let cases = [
            (3, 3, false),
            (1, 2, false), // never decreases
            (4, 0, true),  // past the end
        ];
        for (i, (to, want, wpanic)) in cases.into_iter().enumerate() {
            let mut log = new_log(MemoryStorage::new());
            log.append(&ents(1, &[1, 2, 3]));
            log.committed = 2;
            assert_eq!(panics(|| log.commit_to(to)), wpanic, "#{i}");
            if !wpanic {
                assert_eq!(log.committed, want, "#{i}");
            }
        }
    }

    /// etcd: TestStableTo
    #[test]
    fn test_stable_to() {
        // (index, term, want unstable offset)
        let cases = [
            (1, 1, 2),
            (2, 2, 3),
            (2, 1, 1), // wrong term
            (3, 1, 1), // wrong index
        ];
        for (i, (index, term, want)) in cases.into_iter().enumerate() {
            let mut log = new_log(MemoryStorage::new());
            log.append(&ents(1, &[1, 2]));
            log.stable_to(id(term, index));
            assert_eq!(log.unstable.offset, want, "#{i}");
        }
    }

    /// etcd: TestStableToWithSnap
    #[test]
    fn test_stable_to_with_snap() {
        let (si, st) = (5u64, 2u64);
        // (index, term, new entries, want unstable offset)
        let cases = [
            (si + 1, st, vec![], si + 1),
            (si, st, vec![], si + 1),
            (si - 1, st, vec![], si + 1),
            (si + 1, st + 1, vec![], si + 1),
            (si, st + 1, vec![], si + 1),
            (si - 1, st + 1, vec![], si + 1),
            (si + 1, st, ents(si + 1, &[st]), si + 2),
            (si, st, ents(si + 1, &[st]), si + 1),
            (si - 1, st, ents(si + 1, &[st]), si + 1),
            (si + 1, st + 1, ents(si + 1, &[st]), si + 1),
            (si, st + 1, ents(si + 1, &[st]), si + 1),
            (si - 1, st + 1, ents(si + 1, &[st]), si + 1),
        ];
        for (i, (index, term, new_ents, want)) in cases.into_iter().enumerate() {
            let s = MemoryStorage::new();
            s.wl().apply_snapshot(snap(si, st)).unwrap();
            let mut log = new_log(s);
            log.append(&new_ents);
            log.stable_to(id(term, index));
            assert_eq!(log.unstable.offset, want, "#{i}");
        }
    }

    /// etcd: TestCompaction
    ///
    /// The number of entries left is right after each compaction.
    #[test]
    fn test_compaction() {
        // (last index, compactions, entries left after each (None: refused))
        type Case = (u64, &'static [u64], &'static [Option<usize>]);
        let cases: [Case; 3] = [
            // Past the end.
            (1000, &[1001], &[None]),
            (
                1000,
                &[300, 500, 800, 900],
                &[Some(700), Some(500), Some(200), Some(100)],
            ),
            // Below the first index.
            (1000, &[300, 299], &[Some(700), None]),
        ];
        for (i, (last, compactions, left)) in cases.into_iter().enumerate() {
            let storage = MemoryStorage::new();
            storage
                .wl()
                .append(&ents_term_range(1, 1, last + 1))
                .unwrap();
            let mut log = new_log(storage.clone());
            // A no-op in etcd too: term 0 never matches.
            log.maybe_commit(id(0, last));
            log.applied_to(log.committed, 0);
            for (j, (&c, &want)) in compactions.iter().zip(left).enumerate() {
                let res = storage.wl().compact(c);
                match want {
                    None => assert!(res.is_err(), "#{i}.{j}"),
                    Some(n) => {
                        assert_eq!(res, Ok(()), "#{i}.{j}");
                        assert_eq!(log.all_entries().len(), n, "#{i}.{j}");
                    }
                }
            }
        }
    }

    /// etcd: TestLogRestore
    #[test]
    fn test_log_restore() {
        let (index, term) = (1000, 1000);
        let storage = MemoryStorage::new();
        storage.wl().apply_snapshot(snap(index, term)).unwrap();
        let log = new_log(storage);

        assert!(log.all_entries().is_empty());
        assert_eq!(log.first_index(), index + 1);
        assert_eq!(log.committed, index);
        assert_eq!(log.unstable.offset, index + 1);
        assert_eq!(log.term(index), Ok(term));
    }

    /// etcd: TestIsOutOfBounds
    #[test]
    fn test_is_out_of_bounds() {
        let (offset, num) = (100u64, 100u64);
        let storage = MemoryStorage::new();
        storage.wl().apply_snapshot(snap(offset, 0)).unwrap();
        let mut log = new_log(storage);
        log.append(&ents_term_range(offset + 1, offset + 1, offset + num + 1));

        let first = offset + 1;
        // (lo, hi, want panic, want Compacted)
        let cases = [
            (first - 2, first + 1, false, true),
            (first - 1, first + 1, false, true),
            (first, first, false, false),
            (first + num / 2, first + num / 2, false, false),
            (first + num - 1, first + num - 1, false, false),
            (first + num, first + num, false, false),
            (first + num, first + num + 1, true, false),
            (first + num + 1, first + num + 1, true, false),
        ];
        for (i, (lo, hi, wpanic, wcompacted)) in cases.into_iter().enumerate() {
            let mut res = Ok(());
            assert_eq!(
                panics(|| res = log.must_check_out_of_bounds(lo, hi)),
                wpanic,
                "#{i}"
            );
            if !wpanic {
                let want = if wcompacted {
                    store_err(StorageError::Compacted)
                } else {
                    Ok(())
                };
                assert_eq!(res, want, "#{i}");
            }
        }
    }

    /// etcd: TestTerm
    #[test]
    fn test_term() {
        let (offset, num) = (100u64, 100u64);
        let storage = MemoryStorage::new();
        storage.wl().apply_snapshot(snap(offset, 1)).unwrap();
        let mut log = new_log(storage);
        log.append(&ents_term_range(offset + 1, 1, num));

        let cases = [
            (offset - 1, store_err(StorageError::Compacted)),
            (offset, Ok(1)),
            (offset + num / 2, Ok(num / 2)),
            (offset + num - 1, Ok(num - 1)),
            (offset + num, store_err(StorageError::Unavailable)),
        ];
        for (i, (index, want)) in cases.into_iter().enumerate() {
            assert_eq!(log.term(index), want, "#{i}");
        }
    }

    /// A MemoryStorage that does not say it checks its ranges, so that the
    /// log checks them with `first_index` and `last_index` first.
    struct Unchecked(MemoryStorage);

    impl Storage for Unchecked {
        fn initial_state(&self) -> Result<crate::storage::RaftState> {
            self.0.initial_state()
        }
        fn entries(&self, low: u64, high: u64, max_size: u64) -> Result<Vec<Entry>> {
            self.0.entries(low, high, max_size)
        }
        fn term(&self, idx: u64) -> Result<u64> {
            self.0.term(idx)
        }
        fn first_index(&self) -> Result<u64> {
            self.0.first_index()
        }
        fn last_index(&self) -> Result<u64> {
            self.0.last_index()
        }
        fn snapshot(&self, request_index: u64, to: u64) -> Result<Snapshot> {
            self.0.snapshot(request_index, to)
        }
    }

    /// Why: `term` and `slice` ask a storage that checks its own ranges
    /// directly, skipping the log's range checks; they must answer exactly
    /// as the checked paths do in every state of the log: entries only stable,
    /// compacted ones, unstable entries that replace stale stored ones (a
    /// follower's truncation not yet written), an unstable snapshot above
    /// the storage's log, and an empty log.
    #[test]
    fn range_fast_paths_match_the_checked_paths() {
        // Builds the same log over both storages (stored with `build`,
        // then each change of `changes` made: a snapshot restored, entries
        // appended) and compares every index from 0 to past the end.
        type Change = (Option<Snapshot>, Vec<Entry>);
        let compare = |what: &str, build: &dyn Fn(&MemoryStorage), changes: Vec<Change>| {
            let (a, b) = (MemoryStorage::new(), MemoryStorage::new());
            build(&a);
            build(&b);
            let mut fast = RaftLog::new(a, NO_LIMIT).unwrap();
            let mut checked = RaftLog::new(Unchecked(b), NO_LIMIT).unwrap();
            assert!(fast.store.checks_range() && !checked.store.checks_range());
            for (snap, ents) in changes {
                if let Some(s) = snap {
                    fast.restore(s.clone());
                    checked.restore(s);
                }
                fast.append(&ents);
                checked.append(&ents);
            }
            let end = fast.last_index().max(checked.last_index()) + 3;
            for i in 0..=end {
                assert_eq!(fast.term(i), checked.term(i), "{what}: term({i})");
            }
            // Every range a slice may ask for (past the end panics on both
            // paths), without a size limit and with two.
            let last = checked.last_index();
            assert_eq!(fast.last_index(), last, "{what}");
            for lo in 0..=last + 1 {
                for hi in lo..=last + 1 {
                    for max in [NO_LIMIT, 0, 100] {
                        assert_eq!(
                            fast.slice(lo, hi, max),
                            checked.slice(lo, hi, max),
                            "{what}: slice({lo}, {hi}, {max})"
                        );
                    }
                }
            }
        };
        let stable = |s: &MemoryStorage| s.wl().append(&ents_term_range(1, 1, 20)).unwrap();
        let compacted = |s: &MemoryStorage| {
            s.wl().apply_snapshot(snap(10, 2)).unwrap();
            s.wl().append(&ents_term_range(11, 2, 20)).unwrap();
            s.wl().compact(14).unwrap();
        };
        compare("stable entries", &stable, vec![]);
        compare("compacted", &compacted, vec![]);
        compare("empty", &|_| {}, vec![]);
        compare(
            "unstable tail",
            &stable,
            vec![(None, ents_term_range(20, 25, 29))],
        );
        // Stored entries 12..19 replaced by unstable ones of a later term.
        let replace = vec![(None, ents_term_range(12, 30, 33))];
        compare("replaced stored entries", &stable, replace);
        let replace = vec![(None, ents_term_range(16, 30, 33))];
        compare("replaced after compaction", &compacted, replace);
        compare(
            "unstable snapshot",
            &compacted,
            vec![(Some(snap(30, 40)), vec![])],
        );
        let both = vec![(Some(snap(25, 40)), ents_term_range(26, 40, 43))];
        compare("unstable snapshot and entries", &stable, both);
    }

    /// etcd: TestTermWithUnstableSnapshot
    #[test]
    fn test_term_with_unstable_snapshot() {
        let storage_snap = 100u64;
        let unstable_snap = storage_snap + 5;
        let storage = MemoryStorage::new();
        storage.wl().apply_snapshot(snap(storage_snap, 1)).unwrap();
        let mut log = new_log(storage);
        log.restore(snap(unstable_snap, 1));

        let cases = [
            // Not from the storage.
            (storage_snap, store_err(StorageError::Compacted)),
            // Not from the gap between storage and the unstable snapshot.
            (storage_snap + 1, store_err(StorageError::Compacted)),
            (unstable_snap - 1, store_err(StorageError::Compacted)),
            // The unstable snapshot's index.
            (unstable_snap, Ok(1)),
            // Nothing past the unstable snapshot.
            (unstable_snap + 1, store_err(StorageError::Unavailable)),
        ];
        for (i, (index, want)) in cases.into_iter().enumerate() {
            assert_eq!(log.term(index), want, "#{i}");
        }
    }

    /// etcd: TestSlice
    #[test]
    fn test_slice() {
        let (offset, num) = (100u64, 100u64);
        let last = offset + num;
        let half = offset + num / 2;
        let halfe = Entry {
            index: half,
            term: half,
            ..Entry::default()
        };
        let hs = entry_size(&halfe);
        let range = |from: u64, to: u64| ents_term_range(from, from, to);

        let storage = MemoryStorage::new();
        storage.wl().apply_snapshot(snap(offset, 0)).unwrap();
        storage.wl().append(&range(offset + 1, half)).unwrap();
        let mut log = new_log(storage);
        log.append(&range(half, last));

        // Short names keep the table readable.
        let (o, h, l, n) = (offset, half, last, NO_LIMIT);
        // (lo, hi, limit, want entries in [from, to); None means a panic)
        let cases = [
            // Compacted.
            (o - 1, o + 1, n, Some((0, 0))),
            (o, o + 1, n, Some((0, 0))),
            // Panics.
            (h, h - 1, n, None), // inverted
            (l, l + 1, n, None), // past the end
            // No limit.
            (o + 1, o + 1, n, Some((0, 0))),
            (o + 1, h - 1, n, Some((o + 1, h - 1))),
            (o + 1, h, n, Some((o + 1, h))),
            (o + 1, h + 1, n, Some((o + 1, h + 1))),
            (o + 1, l, n, Some((o + 1, l))),
            (h - 1, h, n, Some((h - 1, h))),
            (h - 1, h + 1, n, Some((h - 1, h + 1))),
            (h - 1, l, n, Some((h - 1, l))),
            (h, h + 1, n, Some((h, h + 1))),
            (h, l, n, Some((h, l))),
            (l - 1, l, n, Some((l - 1, l))),
            // At least one entry.
            (o + 1, l, 0, Some((o + 1, o + 2))),
            (h - 1, h + 1, 0, Some((h - 1, h))),
            (h, l, 0, Some((h, h + 1))),
            (h + 1, l, 0, Some((h + 1, h + 2))),
            // A low limit.
            (o + 1, l, hs - 1, Some((o + 1, o + 2))),
            (h - 1, h + 1, hs - 1, Some((h - 1, h))),
            (h, l, hs - 1, Some((h, h + 1))),
            // Room for exactly one.
            (o + 1, l, hs, Some((o + 1, o + 2))),
            (h - 1, h + 1, hs, Some((h - 1, h))),
            (h, l, hs, Some((h, h + 1))),
            // Not enough for two.
            (o + 1, l, hs + 1, Some((o + 1, o + 2))),
            (h - 1, h + 1, hs + 1, Some((h - 1, h))),
            (h, l, hs + 1, Some((h, h + 1))),
            // Enough for two.
            (o + 1, l, hs * 2, Some((o + 1, o + 3))),
            (h - 2, h + 1, hs * 2, Some((h - 2, h))),
            (h - 1, h + 1, hs * 2, Some((h - 1, h + 1))),
            (h, l, hs * 2, Some((h, h + 2))),
            // Not enough for three.
            (h - 2, h + 1, hs * 3 - 1, Some((h - 2, h))),
            // Enough for three.
            (h - 1, h + 2, hs * 3, Some((h - 1, h + 2))),
        ];
        for (i, (lo, hi, lim, want)) in cases.into_iter().enumerate() {
            let mut got = Ok(vec![]);
            let panicked = panics(|| got = log.slice(lo, hi, lim));
            let Some((from, to)) = want else {
                assert!(panicked, "#{i}: want a panic");
                continue;
            };
            assert!(!panicked, "#{i}");
            if lo <= offset {
                assert_eq!(got, store_err(StorageError::Compacted), "#{i}");
            } else {
                assert_eq!(got, Ok(range(from, to)), "#{i}");
            }
        }
    }

    /// etcd: TestScan
    #[test]
    fn test_scan() {
        let (offset, num) = (47u64, 20u64);
        let last = offset + num;
        let half = offset + num / 2;
        let range = |from: u64, to: u64| ents_term_range(from, from, to);
        let entry_size = ents_size(&range(half, half + 1));

        let storage = MemoryStorage::new();
        storage.wl().apply_snapshot(snap(offset, 0)).unwrap();
        storage.wl().append(&range(offset + 1, half)).unwrap();
        let mut log = new_log(storage);
        log.append(&range(half, last));

        // scan() returns what slice() does, on every input.
        for page in [0, 1, 10, 100, entry_size, entry_size + 1] {
            for lo in offset + 1..last {
                for hi in lo..=last {
                    let mut got = Vec::new();
                    log.scan(lo, hi, page, |e| {
                        assert!(e.len() == 1 || ents_size(e) <= page);
                        got.extend_from_slice(e);
                        Ok(())
                    })
                    .unwrap();
                    let want = log.slice(lo, hi, NO_LIMIT).unwrap();
                    assert_eq!(got, want, "scan and slice differ on [{lo}, {hi}) @ {page}");
                }
            }
        }

        // The callback's error stops the scan and is returned.
        let stop = Error::InvalidState("stop".into());
        let mut iters = 0;
        let res = log.scan(offset + 1, half, 0, |_| {
            iters += 1;
            if iters == 2 {
                return Err(stop.clone());
            }
            Ok(())
        });
        assert_eq!(res, Err(stop));
        assert_eq!(iters, 2);

        // Pages are filled up to the limit, not one entry each (the range
        // has an even length for this).
        log.scan(offset + 1, offset + 11, entry_size * 2, |e| {
            assert_eq!(e.len(), 2);
            assert_eq!(ents_size(e), entry_size * 2);
            Ok(())
        })
        .unwrap();
    }

    /// etcd: TestLimitSize
    #[test]
    fn test_limit_size() {
        let all = ents(4, &[4, 5, 6]);
        let (s0, s1, s2) = (
            entry_size(&all[0]),
            entry_size(&all[1]),
            entry_size(&all[2]),
        );
        let cases = [
            (NO_LIMIT, 3),
            // Even with no room, the first entry is kept.
            (0, 1),
            // Room for two.
            (s0 + s1, 2),
            (s0 + s1 + s2 / 2, 2),
            (s0 + s1 + s2 - 1, 2),
            // Room for all.
            (s0 + s1 + s2, 3),
        ];
        for (i, (max, want)) in cases.into_iter().enumerate() {
            let mut got = all.clone();
            limit_size(&mut got, max);
            assert_eq!(got, all[..want], "#{i}");
            assert!(got.len() == 1 || ents_size(&got) <= max, "#{i}");
        }
        let mut empty = Vec::new();
        limit_size(&mut empty, 0);
        assert!(empty.is_empty());
    }

    /// The shortcut of `size_limited_len` rests on this bound: never below
    /// the exact size, whatever the fields (negative types take ten
    /// bytes, absent payloads none), and `size_limited_len` agrees with the
    /// exact prefix computation on both sides of it.
    #[test]
    fn test_ents_size_upper_bound() {
        let mut rng = crate::raft::SplitMix64::new(7);
        for round in 0..2000 {
            let n = 1 + (rng.next_u64() % 20) as usize;
            let ents: Vec<Entry> = (0..n)
                .map(|i| {
                    let r = rng.next_u64();
                    Entry {
                        entry_type: crate::pb::EntryType(match r % 4 {
                            0 => -1,
                            1 => 2,
                            _ => 0,
                        }),
                        term: r >> (r % 64),
                        index: ((r >> 7) >> (r % 57)) + i as u64,
                        data: (r % 3 != 0).then(|| vec![0u8; (r % 300) as usize].into()),
                    }
                })
                .collect();
            let exact = ents_size(&ents);
            assert!(ents_size_upper_bound(&ents) >= exact, "round {round}");
            for max in [
                0,
                exact / 3,
                exact / 2,
                exact - 1,
                exact,
                exact + 1,
                NO_LIMIT - 1,
            ] {
                let mut want = 1;
                while want < n && ents_size(&ents[..=want]) <= max {
                    want += 1;
                }
                assert_eq!(
                    size_limited_len(&ents, max),
                    want,
                    "round {round} max {max}"
                );
            }
        }
    }

    /// etcd: TestPayloadSizeOfEmptyEntry (util_test.go), with payloads_size.
    #[test]
    fn test_payloads_size() {
        assert_eq!(Entry::default().payload_size(), 0);
        let e = vec![Entry::new(1, 1, &b"abc"[..]), Entry::default()];
        assert_eq!(payloads_size(&e), 3);
    }
}
