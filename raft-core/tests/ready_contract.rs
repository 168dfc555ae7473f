//! The Ready contract, tested with a host that takes every freedom the
//! contract gives: it sends `messages` the moment it takes a Ready, keeps
//! writes in flight while it steps messages and takes more Readies, and a
//! crash loses every write that was not yet durable.
//!
//! The scenarios are the log divergence and the lost committed entry that a
//! contract letting vote requests leave before the candidate's term and vote
//! were durable allowed. Each fails against such a contract and passes
//! against raftlet's.

use std::collections::{BTreeMap, VecDeque};

use raftlet::pb::{ConfState, EntryType, Message, MessageType};
use raftlet::{Config, MemoryStorage, RawNode, Ready, StateRole};

/// One node and its host. The node's storage is its disk: what the host has
/// written there is durable, and a write in flight is a Ready held in
/// `pending` until the disk lets it land.
struct Host {
    cfg: Config,
    disk: MemoryStorage,
    node: Option<RawNode<MemoryStorage>>,
    /// While set, writes stay in flight (a slow or stalled disk).
    stalled: bool,
    /// Readies taken whose writes are not durable yet, oldest first.
    pending: VecDeque<Ready>,
}

impl Host {
    fn node(&mut self) -> &mut RawNode<MemoryStorage> {
        self.node.as_mut().expect("node is running")
    }

    /// Takes every Ready the node has, sending `messages` at once; lets the
    /// writes in flight land (unless stalled), then sends their
    /// `persisted_messages`, applies and advances. Returns what was sent
    /// and what was applied (index, term, data).
    fn pump(&mut self, sent: &mut Vec<Message>, applied: &mut Vec<(u64, u64, Vec<u8>)>) {
        let Some(node) = self.node.as_mut() else {
            return;
        };
        loop {
            while node.has_ready() {
                let mut rd = node.ready();
                sent.append(&mut rd.messages);
                self.pending.push_back(rd);
            }
            if self.stalled || self.pending.is_empty() {
                return;
            }
            while let Some(mut rd) = self.pending.pop_front() {
                {
                    let mut w = self.disk.wl();
                    if let Some(snap) = &rd.snapshot {
                        w.apply_snapshot(snap.clone()).expect("snapshot");
                    }
                    w.append(&rd.entries).expect("append");
                    if let Some(hs) = rd.hard_state {
                        w.set_hard_state(hs);
                    }
                }
                sent.append(&mut rd.persisted_messages);
                for e in &rd.committed_entries {
                    if e.entry_type == EntryType::EntryNormal {
                        applied.push((e.index, e.term, e.data().to_vec()));
                    }
                }
                node.advance(rd);
            }
        }
    }

    /// Loses the node and every write not yet durable.
    fn crash(&mut self) {
        self.node = None;
        self.pending.clear();
    }

    /// Restarts from what the disk holds.
    fn restart(&mut self) {
        self.stalled = false;
        self.node = Some(RawNode::new(&self.cfg, self.disk.clone()).expect("restart"));
    }
}

/// Three voters, a network that delivers whatever the filter lets through,
/// and the history of every entry each node applied.
struct Cluster {
    hosts: BTreeMap<u64, Host>,
    /// Messages sent and not delivered yet.
    wire: Vec<Message>,
    /// Whether a message may be delivered now; others stay on the wire.
    hold: Box<dyn Fn(&Message) -> bool>,
    /// Whether a message is lost.
    lose: Box<dyn Fn(&Message) -> bool>,
    /// Every (index, term, data) applied, by node, over all incarnations.
    applied: BTreeMap<u64, Vec<(u64, u64, Vec<u8>)>>,
}

impl Cluster {
    fn new(config: impl Fn(u64) -> Config) -> Cluster {
        let mut hosts = BTreeMap::new();
        for id in 1..=3 {
            let disk = MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1, 2, 3]))
                .expect("storage");
            let cfg = config(id);
            let node = RawNode::new(&cfg, disk.clone()).expect("node");
            hosts.insert(
                id,
                Host {
                    cfg,
                    disk,
                    node: Some(node),
                    stalled: false,
                    pending: VecDeque::new(),
                },
            );
        }
        Cluster {
            hosts,
            wire: Vec::new(),
            hold: Box::new(|_| false),
            lose: Box::new(|_| false),
            applied: BTreeMap::new(),
        }
    }

    fn host(&mut self, id: u64) -> &mut Host {
        self.hosts.get_mut(&id).expect("host")
    }

    /// Runs hosts and delivers messages until nothing moves.
    fn stabilize(&mut self) {
        for _ in 0..200 {
            let mut sent = Vec::new();
            for (id, h) in self.hosts.iter_mut() {
                h.pump(&mut sent, self.applied.entry(*id).or_default());
            }
            self.wire.extend(sent);
            let (deliver, keep): (Vec<Message>, Vec<Message>) = std::mem::take(&mut self.wire)
                .into_iter()
                .partition(|m| !(self.hold)(m));
            self.wire = keep;
            if deliver.is_empty() {
                return;
            }
            for m in deliver {
                if (self.lose)(&m) {
                    continue;
                }
                if let Some(node) = self.hosts.get_mut(&m.to).and_then(|h| h.node.as_mut()) {
                    let _ = node.step(m);
                }
            }
        }
        panic!("the cluster did not settle");
    }

    fn role(&mut self, id: u64) -> StateRole {
        self.host(id).node().basic_status().soft_state.raft_state
    }

    /// Every pair of nodes applied the same entry at every index both
    /// applied (Raft's state machine safety).
    fn assert_applied_agree(&self) {
        let mut by_index: BTreeMap<u64, (u64, u64, Vec<u8>)> = BTreeMap::new();
        for (id, hist) in &self.applied {
            for (index, term, data) in hist {
                match by_index.get(index) {
                    Some((other, t, d)) => assert!(
                        (t, d) == (term, data),
                        "node {id} applied ({term}, {:?}) at index {index}, node {other} ({t}, {:?})",
                        String::from_utf8_lossy(data),
                        String::from_utf8_lossy(d)
                    ),
                    None => {
                        by_index.insert(*index, (*id, *term, data.clone()));
                    }
                }
            }
        }
    }

    fn applied_data(&self, id: u64) -> Vec<Vec<u8>> {
        self.applied[&id]
            .iter()
            .filter(|(_, _, d)| !d.is_empty())
            .map(|(_, _, d)| d.clone())
            .collect()
    }
}

fn etcd_defaults(id: u64) -> Config {
    let mut c = Config::new(id);
    c.pre_vote = false;
    c.check_quorum = false;
    c
}

fn raftlet_defaults(id: u64) -> Config {
    Config::new(id)
}

/// Node 1 campaigns while its disk is stalled: its term-1 hard state is in
/// flight. If its vote requests could leave before that write lands, nodes 2
/// and 3 would elect it; as leader it would send "X" at index 2 to node 2
/// only, crash with nothing durable, restart at term 0, win term 1 again
/// with node 3 (which voted for it in term 1 already) and propose "Y" at
/// index 2, term 1. Node 2 would see no conflict (same index and term), keep
/// "X", and apply it while the others apply "Y". Against raftlet's contract
/// node 1's vote requests wait for its write, so it is never elected before
/// the crash, and after it wins the first election of term 1 cleanly.
fn vote_before_durable_term_cannot_split_the_log(config: fn(u64) -> Config) {
    let mut c = Cluster::new(config);
    // Node 3 hears node 1's elections but none of its appends.
    c.lose = Box::new(|m| {
        m.from == 1
            && m.to == 3
            && matches!(m.msg_type, MessageType::MsgApp | MessageType::MsgHeartbeat)
    });
    c.host(1).stalled = true;
    c.host(1).node().campaign().expect("campaign");
    c.stabilize();
    if c.role(1) == StateRole::Leader {
        c.host(1).node().propose(b"X".to_vec()).expect("propose X");
        c.stabilize();
    }
    // Node 1 crashes before anything it wrote lands, and restarts; it
    // campaigns while node 2 does not hear it (node 2's refusal would reach
    // it first and, with pre-vote, send it to a later term).
    c.host(1).crash();
    c.host(1).restart();
    c.lose = Box::new(|m| (m.from, m.to) == (1, 2) || (m.from, m.to) == (2, 1));
    c.host(1).node().campaign().expect("campaign again");
    c.stabilize();
    assert_eq!(c.role(1), StateRole::Leader);
    // Heal; a heartbeat makes the leader probe node 2 again.
    c.lose = Box::new(|_| false);
    c.host(1).node().tick();
    c.stabilize();
    c.host(1).node().propose(b"Y".to_vec()).expect("propose Y");
    c.stabilize();

    c.assert_applied_agree();
    for id in 1..=3 {
        assert_eq!(c.applied_data(id), vec![b"Y".to_vec()], "node {id}");
    }
}

/// etcd's defaults (no pre-vote, no check-quorum).
#[test]
fn vote_before_durable_term_cannot_split_the_log_etcd_defaults() {
    vote_before_durable_term_cannot_split_the_log(etcd_defaults);
}

/// raftlet's defaults (pre-vote and check-quorum on).
#[test]
fn vote_before_durable_term_cannot_split_the_log_raftlet_defaults() {
    vote_before_durable_term_cannot_split_the_log(raftlet_defaults);
}

/// Leader 2 commits "E" at index 2 with node 3; node 1 received it but its
/// disk is stalled. Leader 2 is cut off, and node 1 campaigns in term 2
/// claiming a log that holds "E", which it has not made durable. If that
/// request could leave before the write, node 3 would grant it; node 1
/// crashes, losing "E" and term 2, restarts in term 1, campaigns in term 2
/// again, and node 3's grant (delayed on the wire) would make it leader with
/// a log without "E": its first append would overwrite the committed "E" on
/// node 3. (With pre-vote on, the restarted node's pre-vote is refused
/// first, so this variant needs etcd's defaults.)
#[test]
fn vote_granted_to_a_lost_log_cannot_overwrite_a_committed_entry() {
    let mut c = Cluster::new(etcd_defaults);
    c.host(2).node().campaign().expect("campaign");
    c.stabilize();
    assert_eq!(c.role(2), StateRole::Leader);
    c.host(1).stalled = true;
    c.host(2).node().propose(b"E".to_vec()).expect("propose E");
    c.stabilize();
    assert_eq!(c.applied_data(2), vec![b"E".to_vec()], "E is committed");
    // Cut node 2 off; hold node 3's vote answers to node 1 on the wire.
    c.lose = Box::new(|m| m.from == 2 || m.to == 2);
    c.hold = Box::new(|m| m.from == 3 && m.to == 1 && m.msg_type == MessageType::MsgVoteResp);
    c.host(1).node().campaign().expect("campaign");
    c.stabilize();
    c.host(1).crash();
    c.host(1).restart();
    c.host(1).node().campaign().expect("campaign again");
    c.stabilize();
    // Now deliver what was held.
    c.hold = Box::new(|_| false);
    c.stabilize();
    if c.role(1) == StateRole::Leader {
        let _ = c.host(1).node().propose(b"F".to_vec());
        c.stabilize();
    }
    // Node 3 still holds the committed "E" at index 2, and nobody applied
    // anything else there.
    let disk = c.host(3).disk.rl();
    let e = disk.entries_ref().iter().find(|e| e.index == 2).cloned();
    drop(disk);
    assert_eq!(
        e.as_ref().map(|e| e.data().to_vec()),
        Some(b"E".to_vec()),
        "committed entry on node 3: {e:?}"
    );
    c.assert_applied_agree();
}

/// The write of one Ready need not be atomic: a crash after its entries
/// landed and before its hard state did leaves entries of a term the hard
/// state does not know (here term 2 against term 0). The node restarts from
/// it, answers a pre-vote without sending a term-0 message (every peer would
/// refuse it as malformed), and campaigns in a term no lower than its log's.
#[test]
fn a_torn_write_of_entries_without_their_hard_state_restarts_safely() {
    use raftlet::pb::Entry;
    let disk =
        MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1, 2, 3])).expect("storage");
    disk.wl()
        .append(&[
            Entry::new(1, 1, b"a".to_vec()),
            Entry::new(2, 2, b"b".to_vec()),
        ])
        .expect("append");
    let mut node = RawNode::new(&etcd_defaults(1), disk.clone()).expect("restart");
    assert_eq!(node.basic_status().hard_state.term, 0);

    // A pre-vote from a peer with a shorter log is refused silently.
    let mut pv = Message::new(MessageType::MsgPreVote, 2, 1);
    pv.term = 1;
    node.step(pv).expect("pre-vote");
    if node.has_ready() {
        let rd = node.ready();
        assert!(
            rd.messages
                .iter()
                .chain(&rd.persisted_messages)
                .all(|m| m.term != 0),
            "{rd:?}"
        );
        node.advance(rd);
    }

    // Its campaign is for term 2, the last term of its log, not term 1
    // (leading term 1 would append entries of term 1 after one of term 2).
    node.campaign().expect("campaign");
    assert_eq!(node.basic_status().hard_state.term, 2);
    let rd = node.ready();
    assert!(rd
        .persisted_messages
        .iter()
        .all(|m| m.msg_type == MessageType::MsgVote && m.term == 2 && m.log_term == 2));
}

/// A crash after a Ready's snapshot landed and before its hard state did
/// leaves a stored commit below the snapshot: the node restarts with the
/// snapshot's index committed instead of refusing to start.
#[test]
fn a_torn_write_of_a_snapshot_without_its_hard_state_restarts_safely() {
    use raftlet::pb::{HardState, Snapshot, SnapshotMetadata};
    let disk =
        MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1, 2, 3])).expect("storage");
    disk.wl().set_hard_state(HardState {
        term: 1,
        vote: 0,
        commit: 0,
    });
    disk.wl()
        .apply_snapshot(Snapshot {
            data: None,
            metadata: SnapshotMetadata {
                conf_state: ConfState::from_voters(vec![1, 2, 3]),
                index: 5,
                term: 3,
            },
        })
        .expect("snapshot");
    disk.wl().set_hard_state(HardState {
        term: 1,
        vote: 0,
        commit: 0,
    });
    let mut node = RawNode::new(&etcd_defaults(1), disk).expect("restart");
    assert_eq!(node.basic_status().hard_state.commit, 5);
    node.campaign().expect("campaign");
    assert_eq!(node.basic_status().hard_state.term, 3);
}

/// A host may apply committed entries before their Ready's write lands,
/// and may snapshot what it applied (`create_snapshot` keeps the log; the
/// compaction after it is the host's to write). A crash before the hard
/// state that commits those entries was written leaves a snapshot above
/// the stored commit, with the log not compacted up to it. The node
/// restarts with the snapshot's index committed and the host's applied
/// index at the snapshot, instead of refusing to start ("applied must not
/// be greater than the stored commit index"), and hands out only what
/// comes after the snapshot.
#[test]
fn a_snapshot_above_the_stored_commit_restarts_with_it_committed() {
    use raftlet::pb::{Entry, HardState};
    let disk =
        MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1, 2, 3])).expect("storage");
    let ents: Vec<Entry> = (1..=10)
        .map(|i| Entry {
            term: 1,
            index: i,
            data: Some(vec![i as u8].into()),
            ..Entry::default()
        })
        .collect();
    disk.wl().append(&ents).expect("append");
    disk.wl().set_hard_state(HardState {
        term: 1,
        vote: 1,
        commit: 4,
    });
    // The host applied up to 8 (handed out before the write of the hard
    // state committing them landed) and snapshotted it; no compaction.
    disk.wl()
        .create_snapshot(8, None, Some(b"state at 8".to_vec().into()))
        .expect("snapshot");
    let mut cfg = etcd_defaults(1);
    cfg.applied = 8;
    let mut node = RawNode::new(&cfg, disk.clone()).expect("restart from the snapshot");
    assert_eq!(node.basic_status().hard_state.commit, 8);
    assert_eq!(node.basic_status().applied, 8);
    // Nothing at or below the snapshot is handed out again.
    while node.has_ready() {
        let rd = node.ready();
        assert!(
            rd.committed_entries.iter().all(|e| e.index > 8),
            "{:?}",
            rd.committed_entries
        );
        if let Some(hs) = rd.hard_state {
            disk.wl().set_hard_state(hs);
        }
        node.advance(rd);
    }
    // A host that restores nothing and replays the log (applied 0) still
    // gets every entry from the first one.
    let mut node = RawNode::new(&etcd_defaults(1), disk).expect("restart replaying");
    let rd = node.ready();
    let got: Vec<u64> = rd.committed_entries.iter().map(|e| e.index).collect();
    assert_eq!(got, (1..=8).collect::<Vec<_>>());
}
