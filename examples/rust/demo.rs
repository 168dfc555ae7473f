//! A 3-node raftlet cluster in one process: it elects a leader, replicates
//! proposals, loses its leader to a partition, elects a new one, and takes
//! the old leader back without disruption. Prints a readable timeline and
//! exits non-zero if any step does not happen as described.
//!
//! Run with `make demo`.

use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

use raftlet::pb::{ConfState, EntryType, Message};
use raftlet::{Config, MemoryStorage, RawNode, StateRole};

/// One node: the library's RawNode plus the host's state machine.
struct Host {
    node: RawNode<MemoryStorage>,
    storage: MemoryStorage,
    applied: Vec<String>,
}

struct Cluster {
    hosts: BTreeMap<u64, Host>,
    /// Nodes cut off from everyone else.
    isolated: BTreeSet<u64>,
    tick: u64,
}

impl Cluster {
    fn new(ids: &[u64]) -> Cluster {
        let mut hosts = BTreeMap::new();
        for &id in ids {
            let storage = MemoryStorage::new_with_conf_state(ConfState::from_voters(ids.to_vec()))
                .expect("valid configuration");
            let node = RawNode::new(&Config::new(id), storage.clone()).expect("valid config");
            hosts.insert(
                id,
                Host {
                    node,
                    storage,
                    applied: Vec::new(),
                },
            );
        }
        Cluster {
            hosts,
            isolated: BTreeSet::new(),
            tick: 0,
        }
    }

    fn log(&self, what: impl AsRef<str>) {
        println!("[tick {:>3}] {}", self.tick, what.as_ref());
    }

    /// Runs the Ready loop of every node until no message is in flight.
    fn settle(&mut self) {
        loop {
            let mut mailbox: Vec<Message> = Vec::new();
            let ids: Vec<u64> = self.hosts.keys().copied().collect();
            for id in &ids {
                let host = self.hosts.get_mut(id).expect("host");
                if !host.node.has_ready() {
                    continue;
                }
                let rd = host.node.ready();
                if let Some(ss) = rd.soft_state {
                    let who = if ss.leader_id == 0 {
                        "nobody".to_string()
                    } else {
                        ss.leader_id.to_string()
                    };
                    println!(
                        "[tick {:>3}] node {id}: now {:?}, leader {who}",
                        self.tick, ss.raft_state
                    );
                }
                // 1. Persist the snapshot, entries and hard state.
                {
                    let mut s = host.storage.wl();
                    if let Some(snap) = &rd.snapshot {
                        s.apply_snapshot(snap.clone()).expect("apply snapshot");
                    }
                    s.append(&rd.entries).expect("append");
                    if let Some(hs) = rd.hard_state {
                        s.set_hard_state(hs);
                    }
                }
                // 2. Send messages (the persisted ones only after the write).
                mailbox.extend(rd.messages.iter().cloned());
                mailbox.extend(rd.persisted_messages.iter().cloned());
                // 3. Apply committed entries.
                for e in &rd.committed_entries {
                    if e.entry_type == EntryType::EntryNormal && !e.data().is_empty() {
                        host.applied
                            .push(String::from_utf8_lossy(e.data()).into_owned());
                    }
                }
                host.node.advance(rd);
            }
            if mailbox.is_empty() {
                break;
            }
            for m in mailbox {
                if self.isolated.contains(&m.from) || self.isolated.contains(&m.to) {
                    continue;
                }
                if let Some(h) = self.hosts.get_mut(&m.to) {
                    let _ = h.node.step(m);
                }
            }
        }
    }

    fn tick_all(&mut self, n: u64) {
        for _ in 0..n {
            self.tick += 1;
            for h in self.hosts.values_mut() {
                h.node.tick();
            }
            self.settle();
        }
    }

    fn leader(&self) -> Option<u64> {
        self.hosts
            .iter()
            .filter(|(id, _)| !self.isolated.contains(id))
            .find(|(_, h)| h.node.basic_status().soft_state.raft_state == StateRole::Leader)
            .map(|(id, _)| *id)
    }

    fn term_of(&self, id: u64) -> u64 {
        self.hosts[&id].node.basic_status().hard_state.term
    }

    fn wait_for_leader(&mut self, max_ticks: u64) -> Option<u64> {
        for _ in 0..max_ticks {
            if let Some(l) = self.leader() {
                return Some(l);
            }
            self.tick_all(1);
        }
        self.leader()
    }
}

fn run() -> Result<(), String> {
    let mut c = Cluster::new(&[1, 2, 3]);
    c.log("three nodes start as followers; the first election timeout elects a leader");
    let leader = c
        .wait_for_leader(100)
        .ok_or("no leader elected within 100 ticks")?;
    c.log(format!(
        "leader is node {leader} at term {}",
        c.term_of(leader)
    ));

    for i in 1..=5 {
        let data = format!("put x={i}");
        c.hosts
            .get_mut(&leader)
            .expect("leader")
            .node
            .propose(data.clone().into_bytes())
            .map_err(|e| format!("proposal refused: {e}"))?;
        c.settle();
        c.log(format!("proposed and committed {data:?}"));
    }
    for (id, h) in &c.hosts {
        if h.applied.len() != 5 {
            return Err(format!(
                "node {id} applied {} entries, expected 5",
                h.applied.len()
            ));
        }
    }
    c.log("all three nodes applied the same five entries");

    c.isolated.insert(leader);
    c.log(format!(
        "partition: node {leader} is cut off from the others"
    ));
    let old_term = c.term_of(leader);
    let new_leader = c
        .wait_for_leader(100)
        .ok_or("the majority did not elect a new leader")?;
    c.log(format!(
        "the majority elected node {new_leader} at term {}",
        c.term_of(new_leader)
    ));
    // Check-quorum: the isolated leader notices it lost its quorum.
    c.tick_all(25);
    let old_role = c.hosts[&leader].node.basic_status().soft_state.raft_state;
    c.log(format!(
        "isolated node {leader} is now {old_role:?} (check-quorum made it step down), still at term {}",
        c.term_of(leader)
    ));
    if old_role == StateRole::Leader {
        return Err("the isolated leader did not step down".into());
    }
    if c.term_of(leader) != old_term {
        return Err("pre-vote failed: the isolated node raised its term".into());
    }

    c.hosts
        .get_mut(&new_leader)
        .expect("leader")
        .node
        .propose(b"put y=1".to_vec())
        .map_err(|e| format!("proposal refused: {e}"))?;
    c.settle();
    c.log("the new leader committed \"put y=1\" with the remaining majority");

    c.isolated.clear();
    c.log(format!("the partition heals; node {leader} rejoins"));
    let term_before = c.term_of(new_leader);
    c.tick_all(30);
    if c.leader() != Some(new_leader) || c.term_of(new_leader) != term_before {
        return Err("the rejoining node disrupted the leader".into());
    }
    if c.hosts[&leader].applied != c.hosts[&new_leader].applied {
        return Err("the rejoined node did not catch up".into());
    }
    c.log(format!(
        "node {new_leader} still leads at term {term_before}; node {leader} caught up: {:?}",
        c.hosts[&leader].applied
    ));
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => {
            println!("demo finished: every step happened as described");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("demo failed: {e}");
            ExitCode::FAILURE
        }
    }
}
