//! raftlet-bench-d1: synced log writes per second (D1), raftlet-disk side by
//! side with the storage engines it was chosen over. One run prints one
//! JSON line (the format of bench/):
//!
//! ```text
//! raftlet-bench-d1 <raftlet-disk|raft-engine|redb|fjall|raw-fsync|disk-only> groups=G batch=N [size=128]
//!     [rounds=R | budget=ENTRIES] [max_seconds=5] [dir=D]
//! ```
//!
//! A round: every group appends `batch` entries of `size` bytes and saves
//! its hard state, and the round is made durable with ONE sync for all
//! groups (group commit: one WriteBatch, LogBatch or transaction). A
//! "write" is one group's synced append, so `writes_per_s` = groups x
//! rounds per second; etcd's WAL (bench/d1/go) syncs once per group
//! instead. Entries are raftpb-encoded in every implementation, since a
//! Raft host stores what it sends.

use std::path::{Path, PathBuf};
use std::time::Instant;

use raftlet::pb::{Encode, Entry, HardState};

/// One storage engine under test.
trait Log {
    /// Persists one round durably: for every group, its entries and hard
    /// state.
    fn round(&mut self, groups: &[(u64, Vec<Entry>, HardState)]);

    /// Work done before the round's clock starts (only `disk-only` has
    /// any: it encodes the round there).
    fn prepare(&mut self, _groups: &[(u64, Vec<Entry>, HardState)]) {}
}

/// The store and one batch, emptied with `clear` and reused every round as
/// a host's Ready loop would (it keeps its buffers, as etcd's WAL keeps its
/// encoder's and raw-fsync its own).
struct RaftletDisk(raftlet_disk::DiskStore, raftlet_disk::WriteBatch);

impl Log for RaftletDisk {
    fn round(&mut self, groups: &[(u64, Vec<Entry>, HardState)]) {
        let b = &mut self.1;
        b.clear();
        for (g, ents, hs) in groups {
            b.append(*g, ents).unwrap();
            b.set_hard_state(*g, hs);
        }
        self.0.write(b).unwrap();
    }
}

#[derive(Clone)]
struct EngineMsg;

impl raft_engine::MessageExt for EngineMsg {
    type Entry = raft_proto::eraftpb::Entry;

    fn index(e: &Self::Entry) -> u64 {
        e.get_index()
    }
}

struct RaftEngine(raft_engine::Engine);

impl Log for RaftEngine {
    fn round(&mut self, groups: &[(u64, Vec<Entry>, HardState)]) {
        let mut b = raft_engine::LogBatch::default();
        for (g, ents, hs) in groups {
            // raft-engine takes rust-protobuf 2 messages: convert.
            let es: Vec<raft_proto::eraftpb::Entry> = ents
                .iter()
                .map(|e| {
                    let mut x = raft_proto::eraftpb::Entry::default();
                    x.set_term(e.term);
                    x.set_index(e.index);
                    x.set_data(e.data().to_vec().into());
                    x
                })
                .collect();
            b.add_entries::<EngineMsg>(*g, &es).unwrap();
            let mut h = raft_proto::eraftpb::HardState::default();
            h.set_term(hs.term);
            h.set_vote(hs.vote);
            h.set_commit(hs.commit);
            b.put_message(*g, b"hs".to_vec(), &h).unwrap();
        }
        self.0.write(&mut b, true).unwrap();
    }
}

const REDB_LOG: redb::TableDefinition<(u64, u64), &[u8]> = redb::TableDefinition::new("log");

struct Redb(redb::Database);

impl Log for Redb {
    fn round(&mut self, groups: &[(u64, Vec<Entry>, HardState)]) {
        // One table keyed by (group, index); index 0 holds the hard state.
        // The default durability (Immediate) syncs on commit.
        let txn = self.0.begin_write().unwrap();
        {
            let mut t = txn.open_table(REDB_LOG).unwrap();
            let mut buf = Vec::new();
            for (g, ents, hs) in groups {
                for e in ents {
                    buf.clear();
                    e.encode(&mut buf);
                    t.insert((*g, e.index), buf.as_slice()).unwrap();
                }
                buf.clear();
                hs.encode(&mut buf);
                t.insert((*g, 0), buf.as_slice()).unwrap();
            }
        }
        txn.commit().unwrap();
    }
}

struct Fjall {
    db: fjall::Database,
    log: fjall::Keyspace,
}

impl Log for Fjall {
    fn round(&mut self, groups: &[(u64, Vec<Entry>, HardState)]) {
        // One keyspace keyed by group and index (big-endian, so a group's
        // entries sort together); index 0 holds the hard state.
        let mut b = self
            .db
            .batch()
            .durability(Some(fjall::PersistMode::SyncData));
        for (g, ents, hs) in groups {
            for e in ents {
                b.insert(&self.log, key(*g, e.index), e.encode_to_vec());
            }
            b.insert(&self.log, key(*g, 0), hs.encode_to_vec());
        }
        b.commit().unwrap();
    }
}

/// The disk's ceiling: the round's entries and hard states written at the
/// end of one file and fdatasync'ed, with no format, index or recovery at
/// all. The file's first 64 MiB are written with zeros (and synced) before
/// the run, so that a sync there writes data only: into blocks that are
/// merely fallocated, the first write also changes the block map, and the
/// sync commits the filesystem journal with it (see docs/bench-d1.md).
/// Rounds of 1 MiB or more are written with `O_DIRECT`, as raftlet-disk
/// writes records that large: filling fresh page-cache pages costs more
/// than the disk's write of them here.
///
/// `disk-only` is the same file and writes with the round's bytes encoded
/// and laid out before the clock starts: what the disk alone takes to
/// write and sync them, which no log writing those bytes can beat.
struct RawFsync {
    /// `disk-only`: the round is encoded in [`Log::prepare`].
    pre_encoded: bool,
    file: std::fs::File,
    /// The same file opened with `O_DIRECT`, for rounds of 1 MiB or more.
    direct: std::fs::File,
    off: u64,
    buf: Vec<u8>,
    /// Rounds written direct go through here, padded to whole blocks.
    aligned: Vec<u8>,
}

/// Rounds of at least this many bytes are written past the page cache, as
/// raftlet-disk writes records of that size (its `direct_min_bytes`).
const RAW_DIRECT_MIN: usize = 1 << 20;

impl RawFsync {
    /// Encodes the round into `buf` and, for a direct write, lays it out
    /// in whole blocks in `aligned`.
    fn encode(&mut self, groups: &[(u64, Vec<Entry>, HardState)]) {
        self.buf.clear();
        for (_, ents, hs) in groups {
            for e in ents {
                e.encode(&mut self.buf);
            }
            hs.encode(&mut self.buf);
        }
        if self.buf.len() >= RAW_DIRECT_MIN {
            // Whole 4 KiB blocks from an aligned address, at an aligned
            // offset: the round is padded with zeros to a block boundary,
            // which a format-free ceiling may waste.
            let len = self.buf.len().div_ceil(4096) * 4096;
            if self.aligned.len() < len + 4096 {
                self.aligned = vec![0u8; len + 4096];
            }
            let at = self.aligned.as_ptr().align_offset(4096);
            let block = &mut self.aligned[at..at + len];
            block[..self.buf.len()].copy_from_slice(&self.buf);
            block[self.buf.len()..].fill(0);
        }
    }
}

impl Log for RawFsync {
    fn prepare(&mut self, groups: &[(u64, Vec<Entry>, HardState)]) {
        if self.pre_encoded {
            self.encode(groups);
        }
    }

    fn round(&mut self, groups: &[(u64, Vec<Entry>, HardState)]) {
        use std::os::unix::fs::FileExt;
        if !self.pre_encoded {
            self.encode(groups);
        }
        if self.buf.len() < RAW_DIRECT_MIN {
            self.file.write_all_at(&self.buf, self.off).unwrap();
            self.off += self.buf.len() as u64;
        } else {
            let len = self.buf.len().div_ceil(4096) * 4096;
            let at = self.aligned.as_ptr().align_offset(4096);
            self.off = self.off.div_ceil(4096) * 4096;
            self.direct
                .write_all_at(&self.aligned[at..at + len], self.off)
                .unwrap();
            self.off += len as u64;
        }
        self.file.sync_data().unwrap();
    }
}

fn key(g: u64, i: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(16);
    k.extend_from_slice(&g.to_be_bytes());
    k.extend_from_slice(&i.to_be_bytes());
    k
}

fn open(imp: &str, dir: &Path) -> Box<dyn Log> {
    match imp {
        "raftlet-disk" => Box::new(RaftletDisk(
            raftlet_disk::DiskStore::open(dir).unwrap(),
            raftlet_disk::WriteBatch::new(),
        )),
        "raft-engine" => {
            let cfg = raft_engine::Config {
                dir: dir.to_string_lossy().into_owned(),
                ..Default::default()
            };
            Box::new(RaftEngine(raft_engine::Engine::open(cfg).unwrap()))
        }
        "redb" => {
            std::fs::create_dir_all(dir).unwrap();
            Box::new(Redb(redb::Database::create(dir.join("log.redb")).unwrap()))
        }
        "fjall" => {
            let db = fjall::Database::builder(dir).open().unwrap();
            let log = db
                .keyspace("log", fjall::KeyspaceCreateOptions::default)
                .unwrap();
            Box::new(Fjall { db, log })
        }
        "raw-fsync" | "disk-only" => {
            std::fs::create_dir_all(dir).unwrap();
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(dir.join("raw"))
                .unwrap();
            // Preallocated as raftlet-disk and etcd preallocate (fallocate),
            // then written with zeros: the best case for the sync.
            fs4_allocate(&file, 64 << 20);
            {
                use std::os::unix::fs::FileExt;
                let zeros = vec![0u8; 1 << 20];
                for i in 0..64u64 {
                    file.write_all_at(&zeros, i << 20).unwrap();
                }
            }
            file.sync_all().unwrap();
            let direct = {
                use std::os::unix::fs::OpenOptionsExt;
                std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_DIRECT)
                    .open(dir.join("raw"))
                    .unwrap()
            };
            Box::new(RawFsync {
                pre_encoded: imp == "disk-only",
                file,
                direct,
                off: 0,
                buf: Vec::new(),
                aligned: Vec::new(),
            })
        }
        _ => panic!("unknown implementation {imp}"),
    }
}

fn fs4_allocate(file: &std::fs::File, len: u64) {
    fs4::FileExt::allocate(file, len).unwrap();
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some(imp) = argv.first() else {
        eprintln!("usage: raftlet-bench-d1 <raftlet-disk|raft-engine|redb|fjall|raw-fsync|disk-only> groups=G batch=N [size=128] [rounds=R] [budget=2000000] [dir=D]");
        std::process::exit(2);
    };
    let mut kv = std::collections::HashMap::new();
    for a in &argv[1..] {
        let (k, v) = a.split_once('=').expect("key=value");
        kv.insert(k.to_string(), v.to_string());
    }
    let u = |k: &str, d: u64| kv.get(k).map_or(d, |v| v.parse().expect(k));
    let groups = u("groups", 1);
    let batch = u("batch", 1);
    let size = u("size", 128) as usize;
    let rounds = match u("rounds", 0) {
        0 => (u("budget", 2_000_000) / (groups * batch)).clamp(3, 5000),
        r => r,
    };
    let tmp;
    let dir: PathBuf = match kv.get("dir") {
        Some(d) => PathBuf::from(d),
        None => {
            tmp = std::env::temp_dir().join(format!("d1-{imp}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&tmp);
            tmp.clone()
        }
    };
    let mut log = open(imp, &dir);
    // Distinct pseudo-random payloads, so that compression (raft-engine
    // compresses batches over 8 KiB) gains nothing a real log would not
    // give it; 4,096 of them, more than a batch and than LZ4's window.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let pool: Vec<bytes::Bytes> = (0..4096)
        .map(|_| {
            let v: Vec<u8> = (0..size)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            bytes::Bytes::from(v)
        })
        .collect();
    let mut pick = 0usize;
    let mut next = vec![0u64; groups as usize];
    let mut round = Vec::with_capacity(groups as usize);
    // Stop early once `max_seconds` have passed (after at least 3 rounds):
    // a row of 1,000 separately synced logs would otherwise run for minutes.
    let max_secs = u("max_seconds", 5) as f64;
    let start = Instant::now();
    let mut done = 0u64;
    // Each round's time, for its median: a stall of the shared disk moves
    // the mean (writes_per_s) far more than the median.
    let mut times = Vec::with_capacity(rounds as usize);
    for _ in 0..rounds {
        if done >= 3 && start.elapsed().as_secs_f64() > max_secs {
            break;
        }
        done += 1;
        round.clear();
        for g in 0..groups {
            let n = &mut next[g as usize];
            let ents: Vec<Entry> = (0..batch)
                .map(|_| {
                    *n += 1;
                    pick = (pick + 1) % pool.len();
                    Entry::new(1, *n, pool[pick].clone())
                })
                .collect();
            let hs = HardState {
                term: 1,
                vote: 1,
                commit: *n,
            };
            round.push((g + 1, ents, hs));
        }
        log.prepare(&round);
        let t = Instant::now();
        log.round(&round);
        times.push(t.elapsed().as_secs_f64());
    }
    // disk-only counts the timed writes alone: its encoding, done before
    // the clock of each round, is no part of what it measures.
    let secs = if imp == "disk-only" {
        times.iter().sum()
    } else {
        start.elapsed().as_secs_f64()
    };
    if std::env::var_os("D1_ROUND_TIMES").is_some() {
        let ms: Vec<String> = times.iter().map(|t| format!("{:.1}", t * 1e3)).collect();
        eprintln!("round ms: {}", ms.join(" "));
    }
    times.sort_by(f64::total_cmp);
    let p50 = times[times.len() / 2];
    drop(log);
    if !kv.contains_key("dir") {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let rounds = done;
    let writes = (rounds * groups) as f64;
    let entries = writes * batch as f64;
    println!(
        "{{\"workload\":\"d1\",\"impl\":\"{imp}\",\"params\":{{\"groups\":\"{groups}\",\"batch\":\"{batch}\",\"size\":\"{size}\",\"rounds\":\"{rounds}\"}},\
         \"metrics\":{{\"writes_per_s\":{:.4},\"writes_per_s_p50\":{:.4},\"round_p50_us\":{:.1},\"syncs_per_s\":{:.4},\"entries_per_s\":{:.4},\"mb_per_s\":{:.4},\"seconds\":{secs:.4}}}}}",
        writes / secs,
        groups as f64 / p50,
        p50 * 1e6,
        rounds as f64 / secs,
        entries / secs,
        entries * size as f64 / secs / 1e6,
    );
}
