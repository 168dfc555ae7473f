//! Arbitrary message sequences stepped into a 3-node cluster never panic.
//!
//! The input is a small program. Its first byte picks the configuration
//! (pre-vote, check-quorum, lease reads, small messages, a learner); then
//! each operation byte either injects a message decoded from the next
//! bytes (length-prefixed, raftpb encoding, stepped into the node its `to`
//! names), or drives the cluster as a host would: tick, handle a Ready
//! (persist, send, apply, advance), deliver a message between nodes,
//! propose, campaign, read, transfer, change membership, compact. The
//! cluster is drained at the end.
#![no_main]

use std::collections::VecDeque;

use libfuzzer_sys::fuzz_target;
use raftlet::pb::{
    ConfChangeI, ConfChangeSingle, ConfChangeType, ConfChangeV2, ConfState, Decode, EntryType,
    Message,
};
use raftlet::{Config, MemoryStorage, RawNode, ReadOnlyOption, SnapshotStatus};

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*b)
    }

    fn bytes(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
}

struct Node {
    rn: RawNode<MemoryStorage>,
    storage: MemoryStorage,
    applied: u64,
    /// A host whose storage refused a write stops (as a real host would):
    /// its storage no longer matches what the node believes is durable.
    dead: bool,
}

struct Cluster {
    nodes: Vec<Node>,
    queue: VecDeque<Message>,
}

impl Cluster {
    fn new(flags: u8) -> Option<Cluster> {
        let learner = flags & 16 != 0;
        let cs = ConfState {
            voters: if learner { vec![1, 2] } else { vec![1, 2, 3] },
            learners: if learner { vec![3] } else { vec![] },
            ..ConfState::default()
        };
        let mut nodes = Vec::new();
        for id in 1..=3u64 {
            let mut c = Config::new(id);
            // A fixed seed: seed 0 would draw from the OS, and an input
            // must replay the same run to reproduce a crash.
            c.seed = id;
            c.pre_vote = flags & 1 != 0;
            c.check_quorum = flags & 2 != 0;
            if c.check_quorum && flags & 4 != 0 {
                c.read_only_option = ReadOnlyOption::LeaseBased;
            }
            if flags & 8 != 0 {
                c.max_size_per_msg = 0;
                c.max_inflight_msgs = 1;
            }
            c.max_learners = 2;
            let storage = MemoryStorage::new_with_conf_state(cs.clone()).ok()?;
            let rn = RawNode::new(&c, storage.clone()).ok()?;
            nodes.push(Node {
                rn,
                storage,
                applied: 0,
                dead: false,
            });
        }
        Some(Cluster {
            nodes,
            queue: VecDeque::new(),
        })
    }

    /// The node `b` names, unless its host stopped.
    fn node(&mut self, b: u8) -> Option<&mut Node> {
        let n = &mut self.nodes[(b % 3) as usize];
        (!n.dead).then_some(n)
    }

    /// Handles one Ready of node `i` as a host does. Returns whether there
    /// was one.
    fn ready(&mut self, i: usize) -> bool {
        let n = &mut self.nodes[i];
        if n.dead || !n.rn.has_ready() {
            return false;
        }
        let rd = n.rn.ready();
        {
            let mut s = n.storage.wl();
            if let Some(snap) = &rd.snapshot {
                if s.apply_snapshot(snap.clone()).is_err() {
                    n.dead = true;
                    return true;
                }
            }
            if s.append(&rd.entries).is_err() {
                n.dead = true;
                return true;
            }
            if let Some(hs) = rd.hard_state {
                s.set_hard_state(hs);
            }
        }
        self.queue.extend(rd.messages.iter().cloned());
        self.queue.extend(rd.persisted_messages.iter().cloned());
        if let Some(snap) = &rd.snapshot {
            n.applied = snap.metadata.index;
        }
        for e in &rd.committed_entries {
            if matches!(
                e.entry_type,
                EntryType::EntryConfChange | EntryType::EntryConfChangeV2
            ) {
                if let Ok(cc) = ConfChangeI::from_entry(e) {
                    if let Ok(cs) = n.rn.apply_conf_change(&cc) {
                        // An applied configuration is always valid.
                        n.storage
                            .wl()
                            .set_conf_state(cs)
                            .expect("applied configuration refused by the storage");
                    }
                }
            }
            n.applied = e.index;
        }
        n.rn.advance(rd);
        true
    }

    fn deliver(&mut self) -> bool {
        let Some(m) = self.queue.pop_front() else {
            return false;
        };
        if (1..=3).contains(&m.to) && !self.nodes[(m.to - 1) as usize].dead {
            let is_snap = m.msg_type == raftlet::pb::MessageType::MsgSnap;
            let (from, to) = (m.from, m.to);
            let _ = self.nodes[(to - 1) as usize].rn.step(m);
            if is_snap && (1..=3).contains(&from) {
                self.nodes[(from - 1) as usize]
                    .rn
                    .report_snapshot(to, SnapshotStatus::Finish);
            }
        }
        true
    }

    fn drain(&mut self) {
        for _ in 0..64 {
            let mut busy = false;
            for i in 0..3 {
                busy |= self.ready(i);
            }
            while self.deliver() {
                busy = true;
            }
            if !busy {
                break;
            }
        }
    }
}

fn conf_change(inp: &mut Input<'_>) -> ConfChangeV2 {
    let n = inp.byte().unwrap_or(0) % 3;
    let mut cc = ConfChangeV2::default();
    for _ in 0..n {
        let t = inp.byte().unwrap_or(0);
        let id = inp.byte().unwrap_or(0) % 5;
        cc.changes.push(ConfChangeSingle::new(
            ConfChangeType((t % 4) as i32),
            u64::from(id),
        ));
    }
    cc.transition = raftlet::pb::ConfChangeTransition((inp.byte().unwrap_or(0) % 3) as i32);
    cc
}

fuzz_target!(|data: &[u8]| {
    let mut inp = Input(data);
    let Some(flags) = inp.byte() else { return };
    let Some(mut c) = Cluster::new(flags) else {
        return;
    };
    let mut ops = 0;
    while let Some(op) = inp.byte() {
        ops += 1;
        if ops > 2000 {
            break;
        }
        let arg = inp.byte().unwrap_or(0);
        match op % 12 {
            0 | 1 => {
                // Inject a message: a length, then its encoding.
                let len = usize::from(arg);
                let bytes = inp.bytes(len);
                if let Ok(mut m) = Message::decode(bytes) {
                    let to = m.to % 3 + 1;
                    m.to = to;
                    if let Some(n) = c.node((to - 1) as u8) {
                        let _ = n.rn.step(m);
                    }
                }
            }
            2 => {
                if let Some(n) = c.node(arg) {
                    n.rn.tick();
                }
            }
            3 => {
                let i = (arg % 3) as usize;
                c.ready(i);
            }
            4 => {
                c.deliver();
            }
            5 => {
                if let Some(n) = c.node(arg) {
                    let _ = n.rn.propose(vec![arg]);
                }
            }
            6 => {
                if let Some(n) = c.node(arg) {
                    let _ = n.rn.campaign();
                }
            }
            7 => {
                if let Some(n) = c.node(arg) {
                    let _ = n.rn.read_index(vec![arg, 1]);
                }
            }
            8 => {
                let target = u64::from(inp.byte().unwrap_or(0) % 5);
                if let Some(n) = c.node(arg) {
                    let _ = n.rn.transfer_leader(target);
                }
            }
            9 => {
                let cc = conf_change(&mut inp);
                if let Some(n) = c.node(arg) {
                    let _ = n.rn.propose_conf_change(cc);
                }
            }
            10 => {
                let Some(n) = c.node(arg) else { continue };
                let applied = n.applied;
                let mut s = n.storage.wl();
                if s.create_snapshot(applied, None, Some(vec![arg].into()))
                    .is_ok()
                {
                    let _ = s.compact(applied);
                }
            }
            _ => {
                let Some(n) = c.node(arg) else { continue };
                match arg % 4 {
                    0 => {
                        let _ = n.rn.forget_leader();
                    }
                    1 => n.rn.report_unreachable(u64::from(arg % 4)),
                    2 => {
                        n.rn.report_snapshot(u64::from(arg % 4), SnapshotStatus::Failure)
                    }
                    _ => {
                        let _ = n.rn.status();
                        n.rn.tick_quiesced();
                    }
                }
            }
        }
    }
    c.drain();
});
