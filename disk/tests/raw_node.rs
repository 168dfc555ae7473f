//! A 3-node raftlet cluster in one process, each node's log in a DiskStore:
//! it elects a leader, replicates, snapshots and compacts, catches a lagging
//! node up by snapshot, and after the whole cluster crashes (every handle
//! dropped, the stores reopened) each node comes back with its log, its
//! hard state and its snapshot, and the cluster goes on. A second test
//! power-cuts single nodes on the fault-injecting filesystem (unsynced
//! writes lost, tails torn) and checks that no committed entry is lost.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use common::{decode_state, encode_state, view, View};
use raftlet::pb::{ConfState, EntryType, Message, MessageType};
use raftlet::{Config, RawNode, SnapshotStatus, StateRole, Storage};
use raftlet_disk::{CrashMode, DiskGroup, DiskStore, FaultFs, FileSystem, Options, StdFs};

const GROUP: u64 = 1;

/// One node: its RawNode over a DiskStore group, and the host's state
/// machine (the applied payloads).
struct Host {
    node: RawNode<DiskGroup>,
    group: DiskGroup,
    applied: Vec<Bytes>,
    applied_index: u64,
}

struct Node {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    host: Option<Host>,
}

struct Cluster {
    nodes: BTreeMap<u64, Node>,
    isolated: BTreeSet<u64>,
    /// Compact each log once it holds more than this many applied entries.
    compact_after: u64,
}

fn opts() -> Options {
    Options {
        segment_size: 32 << 10,
        rewrite_max_bytes: 8 << 10,
        direct_min_bytes: 1024,
        read_cache_bytes: 4 << 10,
    }
}

impl Cluster {
    fn new(fss: Vec<(Arc<dyn FileSystem>, PathBuf)>) -> Cluster {
        let ids: Vec<u64> = (1..=fss.len() as u64).collect();
        let mut nodes = BTreeMap::new();
        for (id, (fs, dir)) in ids.iter().copied().zip(fss) {
            let store = DiskStore::open_with(fs.clone(), &dir, opts()).unwrap();
            store
                .group(GROUP)
                .set_conf_state(&ConfState::from_voters(ids.clone()))
                .unwrap();
            drop(store);
            nodes.insert(
                id,
                Node {
                    fs,
                    dir,
                    host: None,
                },
            );
        }
        let mut c = Cluster {
            nodes,
            isolated: BTreeSet::new(),
            compact_after: 40,
        };
        for id in ids {
            c.start(id);
        }
        c
    }

    /// Opens node `id`'s store and starts its RawNode from it: the state
    /// machine comes back from the snapshot, and the node hands out the
    /// committed entries after it again.
    fn start(&mut self, id: u64) {
        let n = self.nodes.get_mut(&id).unwrap();
        let store = DiskStore::open_with(n.fs.clone(), &n.dir, opts()).unwrap();
        let group = store.group(GROUP);
        let snap = group.snapshot(0, 0).unwrap();
        let mut cfg = Config::new(id);
        cfg.applied = snap.metadata.index;
        let node = RawNode::new(&cfg, group.clone()).unwrap();
        n.host = Some(Host {
            node,
            group,
            applied: decode_state(snap.data()),
            applied_index: snap.metadata.index,
        });
    }

    /// Drops node `id`'s RawNode and store, as a crash does.
    fn stop(&mut self, id: u64) {
        self.nodes.get_mut(&id).unwrap().host = None;
    }

    fn host(&mut self, id: u64) -> &mut Host {
        self.nodes.get_mut(&id).unwrap().host.as_mut().unwrap()
    }

    fn running(&self) -> Vec<u64> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.host.is_some())
            .map(|(&id, _)| id)
            .collect()
    }

    /// Runs every node's Ready loop until no message is in flight. A node
    /// whose store fails (its power was cut) is stopped.
    fn settle(&mut self) {
        for _ in 0..1000 {
            let mut mailbox: Vec<Message> = Vec::new();
            for id in self.running() {
                let compact_after = self.compact_after;
                let h = self.host(id);
                if !h.node.has_ready() {
                    continue;
                }
                let rd = h.node.ready();
                mailbox.extend(rd.messages.iter().cloned());
                // 1. Persist: snapshot, entries, hard state, one record.
                if let Err(e) = h.group.persist_ready(&rd) {
                    assert!(e.is_fatal() || e.os_error().is_some(), "node {id}: {e}");
                    self.stop(id);
                    continue;
                }
                // 2. The persisted messages may go now.
                mailbox.extend(rd.persisted_messages.iter().cloned());
                // 3. Apply.
                if let Some(snap) = &rd.snapshot {
                    h.applied = decode_state(snap.data());
                    h.applied_index = snap.metadata.index;
                }
                for e in &rd.committed_entries {
                    if e.entry_type == EntryType::EntryNormal && !e.data().is_empty() {
                        h.applied.push(e.data.clone().unwrap());
                    }
                    h.applied_index = e.index;
                }
                h.node.advance(rd);
                // Snapshot the state machine and compact now and then.
                let first = h.group.first_index().unwrap();
                // (A crash between snapshot and compaction leaves a
                // snapshot past the compaction point.)
                if h.applied_index > first + compact_after
                    && h.applied_index > h.group.snapshot_index()
                {
                    let at = h.applied_index;
                    let data = encode_state(&h.applied);
                    let r = h
                        .group
                        .create_snapshot(at, None, Some(data))
                        .and_then(|_| h.group.compact(at));
                    if let Err(e) = r {
                        assert!(e.is_fatal() || e.os_error().is_some(), "node {id}: {e}");
                        self.stop(id);
                    }
                }
            }
            if mailbox.is_empty() {
                return;
            }
            for m in mailbox {
                let (from, to) = (m.from, m.to);
                let snap = m.msg_type == MessageType::MsgSnap;
                let mut delivered = false;
                if !self.isolated.contains(&from) && !self.isolated.contains(&to) {
                    if let Some(Some(h)) = self.nodes.get_mut(&to).map(|n| n.host.as_mut()) {
                        let _ = h.node.step(m);
                        delivered = true;
                    }
                }
                if snap {
                    // The transport reports how a snapshot's delivery went,
                    // as etcd's does: a leader that compacted past a
                    // snapshot in flight waits for the report before it
                    // sends a newer one.
                    let status = if delivered {
                        SnapshotStatus::Finish
                    } else {
                        SnapshotStatus::Failure
                    };
                    if let Some(Some(h)) = self.nodes.get_mut(&from).map(|n| n.host.as_mut()) {
                        h.node.report_snapshot(to, status);
                    }
                }
            }
        }
        panic!("the cluster did not settle");
    }

    fn tick(&mut self, n: usize) {
        for _ in 0..n {
            for id in self.running() {
                self.host(id).node.tick();
            }
            self.settle();
        }
    }

    fn leader(&self) -> Option<u64> {
        self.nodes
            .iter()
            .filter(|(id, _)| !self.isolated.contains(id))
            .filter_map(|(&id, n)| n.host.as_ref().map(|h| (id, h)))
            .find(|(_, h)| h.node.basic_status().soft_state.raft_state == StateRole::Leader)
            .map(|(id, _)| id)
    }

    fn elect(&mut self) -> u64 {
        for _ in 0..300 {
            if let Some(l) = self.leader() {
                return l;
            }
            self.tick(1);
        }
        let states: Vec<String> = self
            .nodes
            .iter()
            .map(|(id, n)| match &n.host {
                Some(h) => format!("{id}: {:?}", h.node.basic_status()),
                None => format!("{id}: stopped"),
            })
            .collect();
        panic!("no leader: {states:#?}");
    }

    /// Proposes `data` at the leader until it is applied there; each
    /// attempt carries its number (`data#n`), which it returns with the one
    /// that was applied. An earlier attempt may commit too.
    fn commit(&mut self, data: String) -> (Vec<String>, String) {
        let mut tried = Vec::new();
        for n in 0..20 {
            let l = self.elect();
            let data = format!("{data}#{n}");
            tried.push(data.clone());
            if self.host(l).node.propose(data.clone().into_bytes()).is_ok() {
                self.settle();
                // (The leader may have lost its power meanwhile.)
                let applied_there = self.nodes[&l]
                    .host
                    .as_ref()
                    .is_some_and(|h| h.applied.iter().any(|a| a[..] == *data.as_bytes()));
                if applied_there {
                    return (tried, data);
                }
            }
            self.tick(3);
        }
        panic!("{data} was not committed");
    }

    fn applied(&mut self, id: u64) -> Vec<Bytes> {
        self.host(id).applied.clone()
    }
}

fn real_nodes(tmp: &tempfile::TempDir) -> Vec<(Arc<dyn FileSystem>, PathBuf)> {
    (1..=3)
        .map(|i| {
            let fs: Arc<dyn FileSystem> = Arc::new(StdFs);
            (fs, tmp.path().join(format!("node{i}")))
        })
        .collect()
}

#[test]
fn a_cluster_on_disk_stores_restarts_with_its_logs() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = Cluster::new(real_nodes(&tmp));
    c.elect();
    for i in 0..60 {
        c.commit(format!("put a={i}"));
    }
    // Node 3 falls behind while the others move on and compact past it,
    // so it must catch up from a snapshot read back from the leader's file.
    let leader = c.elect();
    let lagger = (1..=3).find(|&i| i != leader).unwrap();
    c.isolated.insert(lagger);
    for i in 0..120 {
        c.commit(format!("put b={i}"));
    }
    c.isolated.clear();
    c.tick(30);
    c.commit("put c=0".into());
    c.tick(5);
    let want = c.applied(leader);
    assert_eq!(want.len(), 181);
    for id in 1..=3 {
        assert_eq!(c.applied(id), want, "node {id}");
        assert!(
            c.host(id).group.first_index().unwrap() > 100,
            "node {id} compacted"
        );
    }
    assert!(
        c.host(lagger).group.snapshot(0, 0).unwrap().metadata.index > 60,
        "the lagging node took a snapshot"
    );

    // The whole cluster crashes: every handle dropped, stores reopened.
    let before: Vec<(View, raftlet::pb::HardState)> = (1..=3)
        .map(|id| {
            let g = c.host(id).group.clone();
            (view(&g), g.hard_state())
        })
        .collect();
    for id in 1..=3 {
        c.stop(id);
    }
    for (i, (v, hs)) in before.iter().enumerate() {
        let id = i as u64 + 1;
        let n = &c.nodes[&id];
        let store = DiskStore::open_with(n.fs.clone(), &n.dir, opts()).unwrap();
        let g = store.group(GROUP);
        assert_eq!(&view(&g), v, "node {id}: log not back");
        assert_eq!(&g.hard_state(), hs, "node {id}");
        assert!(v.last >= 181, "node {id}: {} entries", v.last);
    }
    for id in 1..=3 {
        c.start(id);
    }
    c.tick(5);
    for i in 0..10 {
        c.commit(format!("put d={i}"));
    }
    c.tick(5);
    let l = c.elect();
    let after = c.applied(l);
    assert_eq!(after.len(), 191);
    assert_eq!(&after[..181], &want[..]);
    for id in 1..=3 {
        assert_eq!(c.applied(id), after, "node {id} after the restart");
    }
}

/// Power cuts of single nodes at random points of their writes: the node
/// restarts from what was durable, and no entry a leader applied is lost
/// or changed on any node.
#[test]
fn power_cuts_of_single_nodes_lose_no_committed_entry() {
    let mut restarts = 0;
    for seed in 0..6 {
        restarts += power_cuts(seed);
    }
    assert!(restarts > 10, "only {restarts} power cuts happened");
}

/// One run of [`power_cuts_of_single_nodes_lose_no_committed_entry`];
/// returns how many times a node lost its power.
fn power_cuts(seed: u64) -> usize {
    let fss: Vec<FaultFs> = (0..3).map(|_| FaultFs::new()).collect();
    let mut c = Cluster::new(
        fss.iter()
            .map(|f| {
                let fs: Arc<dyn FileSystem> = Arc::new(f.clone());
                (fs, PathBuf::from("/node"))
            })
            .collect(),
    );
    c.compact_after = 25;
    let mut rng: u64 = 0x1234_5678_9ABC_DEF1 ^ (seed << 32);
    let mut restarts = 0;
    let mut proposed: BTreeSet<String> = BTreeSet::new();
    let mut committed: Vec<String> = Vec::new();
    for round in 0..80 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        if round % 4 == 3 {
            // Cut the power of one node a few operations from now.
            let victim = 1 + rng % 3;
            fss[(victim - 1) as usize].power_off_after(rng % 7);
        }
        let (tried, done) = c.commit(format!("put r={round}"));
        proposed.extend(tried);
        committed.push(done);
        for (i, fs) in fss.iter().enumerate() {
            let id = i as u64 + 1;
            // One power cut at a time: a cut that did not happen yet is off.
            fs.clear_faults();
            if fs.is_powered_off() || c.nodes[&id].host.is_none() {
                restarts += 1;
                c.stop(id);
                fs.crash(CrashMode::Torn { seed: rng });
                c.start(id);
            }
        }
    }
    c.tick(30);
    let (tried, done) = c.commit("put last".into());
    proposed.extend(tried);
    committed.push(done);
    c.tick(10);
    let l = c.elect();
    let want = c.applied(l);
    let mut seen = BTreeSet::new();
    for b in &want {
        let s = String::from_utf8_lossy(b).into_owned();
        assert!(proposed.contains(&s), "{s} was never proposed");
        assert!(seen.insert(s.clone()), "{s} applied twice");
    }
    for e in &committed {
        assert!(seen.contains(e), "committed {e} lost");
    }
    for id in 1..=3 {
        assert_eq!(c.applied(id), want, "seed {seed}: node {id}");
    }
    restarts
}
