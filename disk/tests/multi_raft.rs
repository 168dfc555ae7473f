//! Many Raft groups per process, one store per process, group commit: three
//! processes each host one member of each of three groups; every round a
//! process takes the Readies of all its groups and writes them in one batch
//! (`WriteBatch::add_ready` per group, one sync if any of them must sync),
//! as a multi-raft host does. The host takes the freedoms the Ready
//! contract gives: `Ready::messages` leave before the batch is written, and
//! committed entries are applied before it on some rounds. Its transport
//! reports every snapshot's delivery to the sender (`report_snapshot`), as
//! etcd's does. Power cuts hit a
//! whole process at a random point of its writes (every group on its store
//! loses its unsynced writes at once, and the last write may be torn); the
//! process restarts every group from the reopened store. No entry a leader
//! applied is lost or changed in any group, every restart succeeds, and
//! every member of every group ends with the same applied sequence.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use common::{decode_state, encode_state, open};
use raftlet::pb::{ConfState, EntryType, Message, MessageType};
use raftlet::{Config, RawNode, Ready, SnapshotStatus, StateRole, Storage};
use raftlet_disk::{CrashMode, DiskGroup, DiskStore, FaultFs, Options, WriteBatch};

const PROCESSES: u64 = 3;
const GROUPS: [u64; 3] = [7, 8, 9];

fn opts() -> Options {
    Options {
        segment_size: 16 << 10,
        rewrite_max_bytes: 4 << 10,
        // Larger records past the page cache, smaller ones through it.
        direct_min_bytes: 1024,
        read_cache_bytes: 8 << 10,
    }
}

/// A process's member of one group: its node and the host's state machine.
struct Member {
    node: RawNode<DiskGroup>,
    group: DiskGroup,
    applied: Vec<Bytes>,
    applied_index: u64,
}

impl Member {
    fn apply(&mut self, rd: &Ready) {
        if let Some(snap) = &rd.snapshot {
            self.applied = decode_state(snap.data());
            self.applied_index = snap.metadata.index;
        }
        for e in &rd.committed_entries {
            if e.index <= self.applied_index {
                continue;
            }
            if e.entry_type == EntryType::EntryNormal && !e.data().is_empty() {
                self.applied.push(e.data.clone().unwrap());
            }
            self.applied_index = e.index;
        }
    }
}

/// One process: its filesystem, and while it runs its store and members.
struct Process {
    fs: FaultFs,
    running: Option<(DiskStore, BTreeMap<u64, Member>)>,
}

/// A message in flight, with the group it belongs to.
type Mail = (u64, Message);

struct World {
    processes: BTreeMap<u64, Process>,
    seed: u64,
    rng: u64,
    power_cuts: usize,
    early_applies: usize,
    batches: usize,
    groups_per_batch: usize,
}

impl World {
    fn new(seed: u64) -> World {
        let voters: Vec<u64> = (1..=PROCESSES).collect();
        let mut processes = BTreeMap::new();
        for id in 1..=PROCESSES {
            let fs = FaultFs::new();
            let store = open(&fs, opts()).unwrap();
            for g in GROUPS {
                store
                    .group(g)
                    .set_conf_state(&ConfState::from_voters(voters.clone()))
                    .unwrap();
            }
            drop(store);
            processes.insert(id, Process { fs, running: None });
        }
        let mut w = World {
            processes,
            seed,
            rng: 0x9E37_79B9_7F4A_7C15 ^ (seed.wrapping_add(1) << 20),
            power_cuts: 0,
            early_applies: 0,
            batches: 0,
            groups_per_batch: 0,
        };
        for id in 1..=PROCESSES {
            w.start(id);
        }
        w
    }

    fn next(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    /// Reopens process `id`'s store and restarts each of its groups from
    /// it: the state machine from the group's snapshot, the rest handed
    /// out again as committed entries.
    fn start(&mut self, id: u64) {
        let p = self.processes.get_mut(&id).unwrap();
        let store =
            open(&p.fs, opts()).unwrap_or_else(|e| panic!("process {id} does not reopen: {e}"));
        let mut members = BTreeMap::new();
        for g in GROUPS {
            let group = store.group(g);
            let snap = group.snapshot(0, 0).unwrap();
            let mut cfg = Config::new(id);
            cfg.applied = snap.metadata.index;
            // Election timeouts drawn from the run's seed: a run is a
            // function of its seed.
            cfg.seed = (self.seed << 32) ^ (id << 24) ^ (g << 16) ^ (self.power_cuts as u64 + 1);
            let node = RawNode::new(&cfg, group.clone())
                .unwrap_or_else(|e| panic!("process {id}, group {g}: restart refused: {e}"));
            members.insert(
                g,
                Member {
                    node,
                    group,
                    applied: decode_state(snap.data()),
                    applied_index: snap.metadata.index,
                },
            );
        }
        p.running = Some((store, members));
    }

    /// Drops process `id` (its store and every member), as a crash does.
    fn stop(&mut self, id: u64) {
        self.processes.get_mut(&id).unwrap().running = None;
    }

    fn running(&self) -> Vec<u64> {
        self.processes
            .iter()
            .filter(|(_, p)| p.running.is_some())
            .map(|(&id, _)| id)
            .collect()
    }

    fn member(&mut self, id: u64, g: u64) -> Option<&mut Member> {
        self.processes
            .get_mut(&id)
            .and_then(|p| p.running.as_mut())
            .and_then(|(_, m)| m.get_mut(&g))
    }

    /// One Ready round of process `id`: the Readies of all its groups,
    /// written in one batch. Returns the messages to deliver.
    fn round(&mut self, id: u64) -> Vec<Mail> {
        let early = self.next() % 2 == 0;
        let mut mail = Vec::new();
        let p = self.processes.get_mut(&id).unwrap();
        let (store, members) = p.running.as_mut().unwrap();
        let mut readies: Vec<(u64, Ready)> = Vec::new();
        for (&g, m) in members.iter_mut() {
            if m.node.has_ready() {
                let rd = m.node.ready();
                // The messages that need nothing durable leave at once.
                mail.extend(rd.messages.iter().cloned().map(|msg| (g, msg)));
                if early {
                    // Committed entries are durable on a quorum: they may
                    // be applied before this process's write lands.
                    m.apply(&rd);
                }
                readies.push((g, rd));
            }
        }
        if readies.is_empty() {
            return mail;
        }
        let mut batch = WriteBatch::new();
        for (g, rd) in &readies {
            batch.add_ready(*g, rd).unwrap();
        }
        self.batches += 1;
        self.groups_per_batch += readies.len();
        if early {
            self.early_applies += 1;
        }
        if let Err(e) = store.write(&batch) {
            assert!(e.is_fatal() || e.os_error().is_some(), "process {id}: {e}");
            self.stop(id);
            return mail;
        }
        let mut failed = false;
        for (g, rd) in readies {
            let m = members.get_mut(&g).unwrap();
            mail.extend(rd.persisted_messages.iter().cloned().map(|msg| (g, msg)));
            m.apply(&rd);
            m.node.advance(rd);
            // Snapshot and compact now and then: the batch holds the
            // commit index covering what was applied.
            let first = m.group.first_index().unwrap();
            if m.applied_index > first + 12 && m.applied_index > m.group.snapshot_index() {
                let at = m.applied_index;
                let r = m
                    .group
                    .create_snapshot(at, None, Some(encode_state(&m.applied)))
                    .and_then(|_| m.group.compact(at));
                if let Err(e) = r {
                    assert!(e.is_fatal() || e.os_error().is_some(), "process {id}: {e}");
                    failed = true;
                    break;
                }
            }
        }
        if failed {
            self.stop(id);
        }
        mail
    }

    fn settle(&mut self) {
        let mut last = String::new();
        for _ in 0..2000 {
            let mut mail = Vec::new();
            for id in self.running() {
                mail.extend(self.round(id));
            }
            if mail.is_empty() {
                return;
            }
            last = mail
                .iter()
                .map(|(g, m)| format!("group {g}: {}", raftlet::describe::describe_message(m)))
                .collect::<Vec<_>>()
                .join("\n");
            for (g, m) in mail {
                let (from, to, snap) = (m.from, m.to, m.msg_type == MessageType::MsgSnap);
                let delivered = match self.member(to, g) {
                    Some(member) => {
                        let _ = member.node.step(m);
                        true
                    }
                    None => false,
                };
                if snap {
                    // The transport tells the sender how a snapshot's
                    // delivery went, as hosts must (etcd's ReportSnapshot):
                    // a leader that compacted past the snapshot while it
                    // was in flight waits for that report before it sends
                    // a newer one.
                    let status = if delivered {
                        SnapshotStatus::Finish
                    } else {
                        SnapshotStatus::Failure
                    };
                    if let Some(leader) = self.member(from, g) {
                        leader.node.report_snapshot(to, status);
                    }
                }
            }
        }
        // (A member that lost entries it had acknowledged is one way: its
        // leader takes its rejections as stale and resends forever.)
        panic!("the processes did not settle; the last messages:\n{last}");
    }

    fn tick(&mut self, n: usize) {
        for _ in 0..n {
            for id in self.running() {
                for g in GROUPS {
                    self.member(id, g).unwrap().node.tick();
                }
            }
            self.settle();
        }
    }

    fn leader(&mut self, g: u64) -> Option<u64> {
        (1..=PROCESSES).find(|&id| {
            self.member(id, g)
                .is_some_and(|m| m.node.basic_status().soft_state.raft_state == StateRole::Leader)
        })
    }

    /// Proposes `data` in group `g` until its leader applied it; returns
    /// every attempt (`data#n`) and the one applied.
    fn commit(&mut self, g: u64, data: &str) -> (Vec<String>, String) {
        let mut tried = Vec::new();
        let mut waited = 0;
        for n in 0..30 {
            // Elections may split: up to 300 ticks for a leader.
            let l = loop {
                match self.leader(g) {
                    Some(l) => break Some(l),
                    None if waited < 300 => {
                        waited += 1;
                        self.tick(1);
                    }
                    None => break None,
                }
            };
            let Some(l) = l else { break };
            let data = format!("{data}#{n}");
            tried.push(data.clone());
            let m = self.member(l, g).unwrap();
            if m.node.propose(data.clone().into_bytes()).is_ok() {
                self.settle();
                let applied = self
                    .member(l, g)
                    .is_some_and(|m| m.applied.iter().any(|a| a[..] == *data.as_bytes()));
                if applied {
                    return (tried, data);
                }
            }
            self.tick(3);
        }
        let states: Vec<String> = (1..=PROCESSES)
            .map(|id| match self.member(id, g) {
                Some(m) => format!(
                    "process {id}: {:?} applied {} log {}..={} {:?}",
                    m.node.basic_status(),
                    m.applied_index,
                    m.group.first_index().unwrap_or(0),
                    m.group.last_index().unwrap_or(0),
                    m.group.hard_state()
                ),
                None => format!("process {id}: down"),
            })
            .collect();
        panic!(
            "seed {}, group {g}: {data} was not committed:\n{}",
            self.seed,
            states.join("\n")
        );
    }

    /// Every member's applied sequence is a prefix of the longest one in
    /// its group: no two members applied different entries at a place.
    fn check_agreement(&mut self, seed: u64) {
        for g in GROUPS {
            let seqs: Vec<(u64, Vec<Bytes>)> = (1..=PROCESSES)
                .filter_map(|id| self.member(id, g).map(|m| (id, m.applied.clone())))
                .collect();
            let Some((lid, longest)) = seqs.iter().max_by_key(|(_, s)| s.len()).cloned() else {
                continue;
            };
            for (id, s) in &seqs {
                assert!(
                    longest.starts_with(s),
                    "seed {seed}, group {g}: process {id} applied {:?}, process {lid} {:?}",
                    s.iter()
                        .map(|b| String::from_utf8_lossy(b))
                        .collect::<Vec<_>>(),
                    longest
                        .iter()
                        .map(|b| String::from_utf8_lossy(b))
                        .collect::<Vec<_>>()
                );
            }
        }
    }

    /// Restarts every process whose power was cut (or whose store failed):
    /// what it had not synced is lost, the last write maybe torn.
    fn restart_the_cut(&mut self) {
        for id in 1..=PROCESSES {
            let p = &self.processes[&id];
            p.fs.clear_faults();
            if p.fs.is_powered_off() || p.running.is_none() {
                let seed = self.next();
                self.stop(id);
                self.processes[&id].fs.crash(CrashMode::Torn { seed });
                self.power_cuts += 1;
                self.start(id);
            }
        }
    }
}

/// The figures of one run, for the test's own checks.
struct Figures {
    power_cuts: usize,
    early_applies: usize,
    batches: usize,
    groups_per_batch: usize,
}

fn run(seed: u64) -> Figures {
    let mut w = World::new(seed);
    let mut proposed: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
    let mut committed: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for round in 0..60u64 {
        if round % 3 == 2 {
            // Cut one process's power a few file operations from now.
            let r = w.next();
            let victim = 1 + r % PROCESSES;
            w.processes[&victim].fs.power_off_after((r >> 8) % 9);
        }
        for g in GROUPS {
            let (tried, done) = w.commit(g, &format!("g{g} r{round}"));
            proposed.entry(g).or_default().extend(tried);
            committed.entry(g).or_default().push(done);
        }
        w.check_agreement(seed);
        w.restart_the_cut();
    }
    w.tick(30);
    for g in GROUPS {
        let (tried, done) = w.commit(g, &format!("g{g} last"));
        proposed.entry(g).or_default().extend(tried);
        committed.entry(g).or_default().push(done);
    }
    w.tick(10);
    for g in GROUPS {
        let l = w.leader(g).expect("a leader");
        let want = w.member(l, g).unwrap().applied.clone();
        let mut seen = BTreeSet::new();
        for b in &want {
            let s = String::from_utf8_lossy(b).into_owned();
            assert!(
                proposed[&g].contains(&s),
                "seed {seed}, group {g}: {s} was never proposed"
            );
            assert!(
                seen.insert(s.clone()),
                "seed {seed}, group {g}: {s} applied twice"
            );
        }
        for e in &committed[&g] {
            assert!(
                seen.contains(e),
                "seed {seed}, group {g}: committed {e} lost"
            );
        }
        for id in 1..=PROCESSES {
            let got = &w.member(id, g).unwrap().applied;
            assert_eq!(got, &want, "seed {seed}, group {g}: process {id}");
        }
    }
    Figures {
        power_cuts: w.power_cuts,
        early_applies: w.early_applies,
        batches: w.batches,
        groups_per_batch: w.groups_per_batch,
    }
}

#[test]
fn power_cuts_of_multi_raft_processes_lose_no_committed_entry() {
    let (mut cuts, mut early, mut batches, mut groups) = (0, 0, 0, 0);
    for seed in 0..20 {
        let f = run(seed);
        cuts += f.power_cuts;
        early += f.early_applies;
        batches += f.batches;
        groups += f.groups_per_batch;
    }
    assert!(cuts >= 40, "only {cuts} power cuts happened");
    assert!(early > 100, "only {early} batches applied early");
    // Group commit happened: batches carried more than one group on
    // average.
    assert!(
        groups > batches + batches / 4,
        "{groups} group writes in {batches} batches"
    );
}
