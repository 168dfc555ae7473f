//! Helpers shared by the store's tests.

#![allow(dead_code, reason = "each test file uses a different subset")]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use raftlet::pb::{ConfState, Entry, Snapshot, SnapshotMetadata};
use raftlet::{MemoryStorage, Storage};
use raftlet_disk::{DiskStore, FaultFs, Options};

/// The directory every FaultFs test uses.
pub fn dir() -> PathBuf {
    PathBuf::from("/data/store")
}

/// Small segments, so that tests cross segment boundaries; records of
/// 512 bytes or more are written direct (FaultFs takes direct writes), so
/// that both write paths meet in one segment; a read cache of 1 KiB, so
/// that reads come from it and from the files.
pub fn small() -> Options {
    Options {
        segment_size: 4096,
        rewrite_max_bytes: 2048,
        direct_min_bytes: 512,
        read_cache_bytes: 1024,
    }
}

/// Segments of 1 MiB: FaultFs keeps files in memory.
pub fn medium() -> Options {
    Options {
        segment_size: 1 << 20,
        rewrite_max_bytes: 256 << 10,
        ..Options::default()
    }
}

/// Opens the store in [`dir`] on `fs`.
pub fn open(fs: &FaultFs, opts: Options) -> raftlet_disk::Result<DiskStore> {
    DiskStore::open_with(Arc::new(fs.clone()), &dir(), opts)
}

/// A normal entry whose payload depends on its group, index and term, so
/// that a misplaced entry shows.
pub fn entry(group: u64, index: u64, term: u64) -> Entry {
    Entry::new(term, index, payload(group, index, term))
}

/// The payload of [`entry`].
pub fn payload(group: u64, index: u64, term: u64) -> Bytes {
    Bytes::from(format!(
        "g{group}-i{index}-t{term}-{}",
        "x".repeat((index % 7) as usize * 9)
    ))
}

/// Entries `from..from + n` of `term`.
pub fn entries(group: u64, from: u64, n: u64, term: u64) -> Vec<Entry> {
    (from..from + n).map(|i| entry(group, i, term)).collect()
}

/// A snapshot at `index`/`term` with data naming them.
pub fn snapshot(index: u64, term: u64, voters: &[u64]) -> Snapshot {
    Snapshot {
        data: Some(Bytes::from(format!("state at {index}/{term}"))),
        metadata: SnapshotMetadata {
            conf_state: ConfState::from_voters(voters.to_vec()),
            index,
            term,
        },
    }
}

/// Everything a [`Storage`] shows, for comparing two of them.
#[derive(Debug, PartialEq)]
pub struct View {
    pub state: raftlet::RaftState,
    pub first: u64,
    pub last: u64,
    pub first_term: u64,
    pub entries: Vec<Entry>,
    pub snapshot: Snapshot,
}

/// The [`View`] of `s`.
pub fn view(s: &impl Storage) -> View {
    let first = s.first_index().unwrap();
    let last = s.last_index().unwrap();
    let entries = if last >= first {
        s.entries(first, last + 1, u64::MAX).unwrap()
    } else {
        Vec::new()
    };
    View {
        state: s.initial_state().unwrap(),
        first,
        last,
        first_term: s.term(first - 1).unwrap(),
        entries,
        snapshot: s.snapshot(0, 0).unwrap(),
    }
}

/// The [`View`] of a model group.
pub fn model_view(m: &MemoryStorage) -> View {
    view(m)
}

/// Whether `path` is a segment file.
pub fn is_segment(name: &str) -> bool {
    name.ends_with(".log")
}

/// The segment files in [`dir`].
pub fn segments(fs: &FaultFs) -> Vec<String> {
    fs.files(&dir())
        .into_iter()
        .filter(|n| is_segment(n))
        .collect()
}

/// The path of `name` in [`dir`].
pub fn file(name: &str) -> PathBuf {
    dir().join(name)
}

/// The path of the last segment in `dir` on the real filesystem.
pub fn last_segment(dir: &Path) -> PathBuf {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| is_segment(n))
        .collect();
    names.sort();
    dir.join(names.last().unwrap())
}

/// A test state machine's snapshot: its applied payloads, one per line.
pub fn encode_state(applied: &[Bytes]) -> Bytes {
    let mut v = Vec::new();
    for a in applied {
        v.extend_from_slice(a);
        v.push(b'\n');
    }
    Bytes::from(v)
}

/// The payloads of a snapshot made by [`encode_state`].
pub fn decode_state(data: &[u8]) -> Vec<Bytes> {
    data.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(Bytes::copy_from_slice)
        .collect()
}
