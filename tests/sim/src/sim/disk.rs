//! Disk storage ([`StorageKind::Disk`](crate::params::StorageKind)): every
//! node runs on a raftlet-disk store over its own [`FaultFs`].
//!
//! The node's `RawNode` reads from the store's group; the host writes each
//! Ready through the store's API, as the C, Python and Go hosts do:
//!
//! * a disciplined host calls `DiskGroup::persist_ready` (one record,
//!   synced when the Ready's `must_sync` asks for it);
//! * a pipelined host adds each Ready it takes to a `WriteBatch` and writes
//!   it at once without a sync (the record sits in the page cache: the
//!   write is in flight), and when the write's drawn latency has passed it
//!   calls `DiskStore::sync` if the Ready must be synced, which makes that
//!   write and every one issued before it durable. Several writes are in
//!   flight at a time; a sync may make later ones durable early, which the
//!   contract allows (a Ready holding a snapshot is synced when written:
//!   the store syncs snapshot files at once).
//!
//! The simulator's `MemoryStorage` for the node stays its model of what the
//! host was told is durable (what the commit checks count). A crash calls
//! [`FaultFs::crash`], which loses every unsynced write or, on a torn
//! crash, keeps a prefix of them and cuts the next at a sector boundary;
//! the node restarts by reopening the store (the real recovery code), is
//! checked to hold every write the host was told was durable
//! ([`Invariant::DurableWriteLost`]), and the model is rebuilt from what the
//! store recovered.

use std::path::Path;
use std::sync::Arc;

use raftlet::pb::HardState;
use raftlet::{MemoryStorage, Ready, Storage};
use raftlet_disk::{CrashMode, DiskGroup, DiskStore, FaultFs};

use super::{host_err, Res, Sim};
use crate::check::{Invariant, Violation};

/// The store's directory on each node's filesystem.
const DIR: &str = "raft";
/// The node's group in its store.
const GROUP: u64 = 1;

/// A node's disk: its filesystem, and the store open on it while the node
/// runs.
pub(super) struct Disk {
    fs: FaultFs,
    /// `None` while the node is down (the process and its handles died).
    pub(super) group: Option<DiskGroup>,
    /// What the host was told is durable.
    durable: Durable,
}

/// What a host was told is durable on its disk, as far as the node relies
/// on it after a restart: the term and vote, the snapshot, and the last
/// entry written (with the node's term when it was handed out: a later
/// term may replace it, see `raftlet_disk::ReadyWrites`).
#[derive(Debug, Clone, Copy, Default)]
struct Durable {
    vote: (u64, u64),
    snapshot: u64,
    entry: Option<(u64, u64, u64)>,
}

impl Durable {
    /// Takes in `rd`, handed out while the node was in `term`, durable now.
    /// `in_log(index, term)` says whether the node's log still holds an
    /// entry: one that a later Ready of the same term replaced (an entry of
    /// an older term that a follower handed out after moving to a new term,
    /// before the new leader's appends overwrote it) may be gone from the
    /// disk when that later write survives a crash, so the last entry of
    /// this Ready that the log still holds is what counts.
    fn record(&mut self, rd: &Ready, term: u64, in_log: impl Fn(u64, u64) -> bool) {
        if let Some(hs) = rd.hard_state {
            self.vote = (hs.term, hs.vote);
        }
        if let Some(s) = &rd.snapshot {
            // A restored snapshot replaces the whole log.
            self.snapshot = self.snapshot.max(s.metadata.index);
            self.entry = None;
        }
        if let Some(e) = rd.entries.iter().rev().find(|e| in_log(e.index, e.term)) {
            self.entry = Some((e.index, e.term, term));
        }
    }

    /// A write whose entries start at `first` was issued: if it lands, it
    /// replaces the log from `first` on, durable entries included (a
    /// follower's uncommitted tail that the leader's log does not hold,
    /// replaced by entries of an older term and a shorter log, which the
    /// "later term" test of `check` does not recognise). What must survive
    /// is the log below `first`: the entry before it (`term_before`, from
    /// the node's log; `None` when it holds none there) stands in for the
    /// durable entry.
    fn replaced_from(&mut self, first: u64, term_before: Option<u64>) {
        if let Some((index, _, handed_out_in)) = self.entry {
            if index >= first {
                self.entry = term_before.map(|t| (first - 1, t, handed_out_in));
            }
        }
    }

    /// What a freshly recovered store holds: all of it is durable now. Its
    /// last entry counts as handed out in the entry's own term: a leader
    /// of any later term (the node's term on disk included: seed 169 of
    /// the disk profile) may replace it, a leader of that term may not.
    fn of(g: &DiskGroup) -> Durable {
        let hs = g.hard_state();
        let last = g.last_index().unwrap_or(0);
        let entry = g
            .term(last)
            .ok()
            .filter(|_| last >= g.first_index().unwrap_or(1))
            .map(|t| (last, t, t));
        Durable {
            vote: (hs.term, hs.vote),
            snapshot: g.snapshot_index(),
            entry,
        }
    }

    /// The first durable write `g` (just reopened) does not hold.
    fn check(&self, g: &DiskGroup) -> Result<(), String> {
        let hs: HardState = g.hard_state();
        let (term, vote) = self.vote;
        if hs.term < term || (hs.term == term && vote != 0 && hs.vote != vote) {
            return Err(format!(
                "term {term} vote {vote} was durable, the store holds term {} vote {}",
                hs.term, hs.vote
            ));
        }
        if g.snapshot_index() < self.snapshot {
            return Err(format!(
                "the snapshot at {} was durable, the store holds the one at {}",
                self.snapshot,
                g.snapshot_index()
            ));
        }
        if let Some((index, t, handed_out_in)) = self.entry {
            // An entry of a later term at or below `index` means a later
            // write replaced this one (terms only grow along a log): an
            // entry of an older term that a follower handed out in a new
            // term, overwritten by that term's leader, and the overwrite
            // survived the crash.
            let last = g.last_index().unwrap_or(0);
            let replaced = g.term(index.min(last)).is_ok_and(|x| x > t);
            if handed_out_in == hs.term && !replaced {
                match g.term(index) {
                    Ok(x) if x == t => {}
                    Err(raftlet::Error::Store(raftlet::StorageError::Compacted)) => {}
                    other => {
                        return Err(format!(
                            "entry {t}/{index} was durable, the store has {other:?} there (log {}..={})",
                            g.first_index().unwrap_or(0),
                            g.last_index().unwrap_or(0)
                        ))
                    }
                }
            }
        }
        Ok(())
    }
}

impl Sim {
    /// Opens (or reopens, recovering it) the store on `fs`, with the seed's
    /// options and the planted bug, if it is one of the store's.
    fn open_store(&self, id: u64, fs: &FaultFs) -> Res<DiskGroup> {
        let opts = raftlet_disk::Options {
            segment_size: self.p.segment_size,
            rewrite_max_bytes: self.p.rewrite_max_bytes,
            direct_min_bytes: self.p.direct_min_bytes,
            read_cache_bytes: self.p.read_cache_bytes,
        };
        let store =
            DiskStore::open_with(Arc::new(fs.clone()), Path::new(DIR), opts).map_err(|e| {
                Violation {
                    invariant: Invariant::DurableWriteLost,
                    time: self.now,
                    detail: format!("node {id}: the store does not reopen: {e}"),
                }
            })?;
        plant_disk_bug(&store, self.opts.bug);
        Ok(store.group(GROUP))
    }

    /// A new node's disk: an empty store, seeded with `model`'s snapshot if
    /// it has one (a new member started from the leader's snapshot).
    pub(super) fn new_disk(&mut self, id: u64, model: &MemoryStorage) -> Res<Disk> {
        let fs = FaultFs::new();
        let group = self.open_store(id, &fs)?;
        let snap = model.rl().snapshot_ref().clone();
        if !snap.is_empty() {
            group
                .apply_snapshot(&snap)
                .map_err(|e| host_err(self.now, format!("seeding node {id}'s store: {e}")))?;
        }
        let durable = Durable::of(&group);
        Ok(Disk {
            fs,
            group: Some(group),
            durable,
        })
    }

    /// The group `id` runs on, if it has disk storage and is up.
    pub(super) fn disk_group(&self, id: u64) -> Option<DiskGroup> {
        self.nodes
            .get(&id)
            .and_then(|n| n.disk.as_ref())
            .and_then(|d| d.group.clone())
    }

    /// A disciplined host persists `rd` (handed out in `term`) through the
    /// store: one record, synced when `rd.must_sync`. Durable on return.
    pub(super) fn disk_persist_ready(&mut self, id: u64, rd: &Ready, term: u64) -> Res {
        let Some(g) = self.disk_group(id) else {
            return Ok(());
        };
        g.persist_ready(rd)
            .map_err(|e| host_err(self.now, format!("node {id}: persist_ready: {e}")))?;
        self.note_record_size(rd);
        self.note_durable(id, rd, term);
        Ok(())
    }

    /// Counts the Readies whose entries reach the sizes the store writes
    /// differently (see `Params::payload_big`).
    fn note_record_size(&mut self, rd: &Ready) {
        let bytes: usize = rd.entries.iter().map(|e| e.data().len()).sum();
        if bytes >= 256 << 10 {
            self.stats.op("disk-records-over-256k");
        }
        if bytes > 2 << 20 {
            self.stats.op("disk-records-over-2m");
        }
    }

    /// A pipelined host issues the write of `rd` without waiting for it:
    /// the record reaches the file (the page cache) now, unsynced unless it
    /// holds a snapshot.
    pub(super) fn disk_issue(&mut self, id: u64, rd: &Ready) -> Res {
        let Some(g) = self.disk_group(id) else {
            return Ok(());
        };
        if let Some(first) = rd.entries.first().map(|e| e.index) {
            let node = self.nodes.get_mut(&id).expect("present");
            let before = node
                .rn
                .as_ref()
                .and_then(|rn| rn.entry_term(first.saturating_sub(1)));
            if let Some(d) = node.disk.as_mut() {
                d.durable.replaced_from(first, before);
            }
        }
        let mut b = raftlet_disk::WriteBatch::new();
        b.add_ready(g.id(), rd)
            .map_err(|e| host_err(self.now, format!("node {id}: add_ready: {e}")))?;
        b.set_must_sync(false);
        g.store()
            .write(&b)
            .map_err(|e| host_err(self.now, format!("node {id}: write: {e}")))?;
        self.note_record_size(rd);
        self.stats.op("disk-writes-issued");
        Ok(())
    }

    /// A pipelined host's write of `rd` (handed out in `term`) completes:
    /// synced if it must be (with every write issued before it).
    pub(super) fn disk_land(&mut self, id: u64, rd: &Ready, term: u64) -> Res {
        let Some(g) = self.disk_group(id) else {
            return Ok(());
        };
        if rd.must_sync {
            g.store()
                .sync()
                .map_err(|e| host_err(self.now, format!("node {id}: sync: {e}")))?;
        }
        self.note_durable(id, rd, term);
        Ok(())
    }

    fn note_durable(&mut self, id: u64, rd: &Ready, term: u64) {
        let Some(node) = self.nodes.get_mut(&id) else {
            return;
        };
        let rn = node.rn.as_ref();
        if let Some(d) = node.disk.as_mut() {
            d.durable.record(rd, term, |i, t| {
                rn.is_none_or(|rn| rn.entry_term(i) == Some(t))
            });
        }
    }

    /// A crash cuts `id`'s power: its store's handles die, and the
    /// filesystem loses every unsynced write (or, on a torn crash, keeps a
    /// prefix of them and tears the next at a sector boundary).
    pub(super) fn disk_crash(&mut self, id: u64) {
        if self.nodes.get(&id).is_none_or(|n| n.disk.is_none()) {
            // (Memory storage draws nothing here: its seeds run as before.)
            return;
        }
        let torn = self.rng.chance(self.p.torn_crashes);
        let seed = self.rng.next_u64();
        let Some(d) = self.nodes.get_mut(&id).and_then(|n| n.disk.as_mut()) else {
            return;
        };
        d.group = None;
        let before = d.fs.stats();
        let mode = if torn {
            CrashMode::Torn { seed }
        } else {
            CrashMode::LoseUnsynced
        };
        d.fs.crash(mode);
        let after = d.fs.stats();
        let (lost, cut, kept) = (
            after.lost_writes - before.lost_writes,
            after.torn_writes - before.torn_writes,
            after.kept_writes - before.kept_writes,
        );
        self.stats.op(if torn {
            "disk-crashes-torn"
        } else {
            "disk-crashes-lose-unsynced"
        });
        self.tr(|| {
            format!(
                "n{id} disk: power cut ({}), of the unsynced writes {kept} kept, {cut} torn, {lost} lost",
                if torn { "torn" } else { "lose unsynced" }
            )
        });
    }

    /// Reopens `id`'s store after a crash (its recovery), checks that it
    /// holds every write the host was told was durable, and rebuilds the
    /// model storage from it. Returns the group to run the node on.
    pub(super) fn disk_reopen(&mut self, id: u64) -> Res<Option<DiskGroup>> {
        let Some(fs) = self
            .nodes
            .get(&id)
            .and_then(|n| n.disk.as_ref())
            .map(|d| d.fs.clone())
        else {
            return Ok(None);
        };
        let g = self.open_store(id, &fs)?;
        let durable = self.nodes[&id].disk.as_ref().expect("disk").durable;
        durable.check(&g).map_err(|what| Violation {
            invariant: Invariant::DurableWriteLost,
            time: self.now,
            detail: format!("node {id} restarted from a store that lost a durable write: {what}"),
        })?;
        // The model: exactly what the store recovered.
        let model = MemoryStorage::new();
        let snap = g
            .snapshot(0, id)
            .map_err(|e| host_err(self.now, format!("node {id}: reading the snapshot: {e}")))?;
        let first = g.first_index().unwrap_or(1);
        let last = g.last_index().unwrap_or(0);
        let from = if snap.metadata.index > 0 {
            model
                .wl()
                .apply_snapshot(snap.clone())
                .map_err(|e| host_err(self.now, format!("node {id}: model snapshot: {e}")))?;
            snap.metadata.index + 1
        } else {
            if !snap.metadata.conf_state.voters.is_empty() {
                model
                    .wl()
                    .set_conf_state(snap.metadata.conf_state.clone())
                    .map_err(|e| host_err(self.now, format!("node {id}: model conf: {e}")))?;
            }
            first
        };
        if from < first {
            return Err(host_err(
                self.now,
                format!(
                    "node {id}: the store's log starts at {first}, after its snapshot at {}",
                    snap.metadata.index
                ),
            ));
        }
        let ents = if from <= last {
            g.entries(from, last + 1, u64::MAX)
                .map_err(|e| host_err(self.now, format!("node {id}: reading the log: {e}")))?
        } else {
            Vec::new()
        };
        {
            let mut w = model.wl();
            w.append(&ents)
                .map_err(|e| host_err(self.now, format!("node {id}: model append: {e}")))?;
            w.set_hard_state(g.hard_state());
        }
        let snapshot = (snap.metadata.index > 0).then_some(&snap);
        self.check_persisted(id, &model, snapshot, &ents)?;
        self.stats.op("disk-reopens");
        self.tr(|| {
            format!(
                "n{id} disk: reopened, snapshot {} log {first}..={last} {}",
                snap.metadata.index,
                raftlet::describe::describe_hard_state(&g.hard_state())
            )
        });
        let node = self.nodes.get_mut(&id).expect("present");
        node.storage = model;
        let d = node.disk.as_mut().expect("disk");
        d.durable = Durable::of(&g);
        d.group = Some(g.clone());
        Ok(Some(g))
    }

    /// Sums the filesystem figures of every node with disk storage.
    pub(super) fn disk_figures(&mut self) {
        let mut sum = raftlet_disk::FaultStats::default();
        for n in self.nodes.values() {
            if let Some(d) = &n.disk {
                let s = d.fs.stats();
                sum.writes += s.writes;
                sum.direct_writes += s.direct_writes;
                sum.syncs += s.syncs;
                sum.dir_syncs += s.dir_syncs;
                sum.crashes += s.crashes;
                sum.lost_writes += s.lost_writes;
                sum.kept_writes += s.kept_writes;
                sum.torn_writes += s.torn_writes;
            }
        }
        if sum.writes == 0 {
            return;
        }
        self.stats.op("disk-seeds");
        self.stats.op_n("disk-fs-writes", sum.writes);
        self.stats.op_n("disk-fs-direct-writes", sum.direct_writes);
        self.stats.op_n("disk-fs-syncs", sum.syncs);
        self.stats.op_n("disk-fs-dir-syncs", sum.dir_syncs);
        self.stats.op_n("disk-fs-crashes", sum.crashes);
        self.stats.op_n("disk-fs-writes-lost", sum.lost_writes);
        self.stats.op_n("disk-fs-writes-torn", sum.torn_writes);
        self.stats.op_n("disk-fs-writes-kept", sum.kept_writes);
    }
}

#[cfg(feature = "bug-injection")]
fn plant_disk_bug(store: &DiskStore, bug: Option<crate::params::Bug>) {
    use crate::params::Bug;
    let bugs = raftlet_disk::DiskBugs {
        skip_sync: bug == Some(Bug::DiskSkipSync),
        skip_dir_sync: bug == Some(Bug::DiskSkipDirSync),
    };
    store.plant_bugs(bugs);
}

#[cfg(not(feature = "bug-injection"))]
fn plant_disk_bug(_store: &DiskStore, bug: Option<crate::params::Bug>) {
    if let Some(b) = bug.filter(|b| b.in_disk()) {
        panic!(
            "planting {} needs raftlet-sim's bug-injection feature (cargo ... --features bug-injection)",
            b.name()
        );
    }
}
