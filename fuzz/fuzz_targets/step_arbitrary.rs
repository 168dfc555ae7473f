//! Messages whose every numeric field is arbitrary, stepped into a small
//! cluster, never panic, and never move a node's term or commit index
//! backwards.
//!
//! The `step` target decodes messages from bytes, so its terms and
//! indexes are mostly small; this one builds each message field by field,
//! drawing every number from a mix of small values, values near the
//! node's own term and last index (so messages get past the term checks
//! and reach deep code), values around `MAX_TERM_OR_INDEX` and values
//! near `u64::MAX`. Message and entry types, senders, snapshot metadata
//! and configurations are drawn the same way, and so are the arguments of
//! proposals and conf changes.
//!
//! The first byte picks the cluster (one or three voters) and options
//! (pre-vote, check-quorum, small messages); each following operation
//! byte injects a hostile message, or drives the cluster as a host does
//! (tick, handle a Ready, deliver, propose, campaign, conf change,
//! compact). After every operation each live node is checked: its term
//! and commit index never decrease, and both stay within the bound.
#![no_main]

use std::collections::VecDeque;

use libfuzzer_sys::fuzz_target;
use raftlet::pb::{
    ConfChange, ConfChangeI, ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2,
    ConfState, Entry, EntryType, Message, MessageType, Snapshot, SnapshotMetadata,
};
use raftlet::{Config, MemoryStorage, RawNode, SnapshotStatus, MAX_TERM_OR_INDEX};

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }

    fn u64_raw(&mut self) -> u64 {
        let mut v = 0u64;
        for _ in 0..8 {
            v = (v << 8) | u64::from(self.byte());
        }
        v
    }

    /// An arbitrary number, biased towards the interesting ranges: small,
    /// near `near` (the node's term or last index), around the bound, near
    /// `u64::MAX`, or any 64-bit value.
    fn num(&mut self, near: u64) -> u64 {
        let sel = self.byte();
        let d = u64::from(self.byte() % 8);
        match sel % 8 {
            0 | 1 => d,
            2 | 3 => near.wrapping_add(d).wrapping_sub(3),
            4 => MAX_TERM_OR_INDEX.wrapping_add(d).wrapping_sub(3),
            5 => u64::MAX - d,
            6 => u64::from(self.byte()),
            _ => self.u64_raw(),
        }
    }

    /// A node id: usually a member, sometimes 0, a stranger or reserved.
    fn id(&mut self) -> u64 {
        match self.byte() % 16 {
            0 => 0,
            1 => u64::MAX,
            2 => u64::MAX - 1,
            3 => 4,
            b => u64::from(b % 3) + 1,
        }
    }

    fn small(&mut self, n: u8) -> usize {
        usize::from(self.byte() % n)
    }
}

struct Node {
    rn: RawNode<MemoryStorage>,
    storage: MemoryStorage,
    applied: u64,
    /// The highest term and commit index seen, for the monotonicity check.
    max_term: u64,
    max_commit: u64,
    /// A host whose storage refused a write stops, as a real host would.
    dead: bool,
}

impl Node {
    fn term(&self) -> u64 {
        self.rn.basic_status().hard_state.term
    }

    fn last_index(&self) -> u64 {
        use raftlet::Storage;
        self.storage.last_index().unwrap_or(0)
    }

    /// Term and commit never go backwards, and never past the bound.
    fn check(&mut self) {
        if self.dead {
            return;
        }
        let hs = self.rn.basic_status().hard_state;
        assert!(
            hs.term >= self.max_term,
            "term went back from {} to {}",
            self.max_term,
            hs.term
        );
        assert!(
            hs.commit >= self.max_commit,
            "commit went back from {} to {}",
            self.max_commit,
            hs.commit
        );
        assert!(
            hs.term <= MAX_TERM_OR_INDEX,
            "term {} past the bound",
            hs.term
        );
        assert!(
            hs.commit <= MAX_TERM_OR_INDEX,
            "commit {} past the bound",
            hs.commit
        );
        self.max_term = hs.term;
        self.max_commit = hs.commit;
    }
}

struct Cluster {
    nodes: Vec<Node>,
    queue: VecDeque<Message>,
}

impl Cluster {
    fn new(flags: u8) -> Cluster {
        let n = if flags & 1 != 0 { 1 } else { 3 };
        let cs = ConfState::from_voters((1..=n).collect::<Vec<u64>>());
        let nodes = (1..=n)
            .map(|id| {
                let mut c = Config::new(id);
                c.pre_vote = flags & 2 != 0;
                c.check_quorum = flags & 4 != 0;
                if flags & 8 != 0 {
                    c.max_size_per_msg = 0;
                    c.max_inflight_msgs = 1;
                }
                let storage = MemoryStorage::new_with_conf_state(cs.clone()).expect("valid");
                let rn = RawNode::new(&c, storage.clone()).expect("valid node");
                Node {
                    rn,
                    storage,
                    applied: 0,
                    max_term: 0,
                    max_commit: 0,
                    dead: false,
                }
            })
            .collect();
        Cluster {
            nodes,
            queue: VecDeque::new(),
        }
    }

    fn node(&mut self, b: u8) -> Option<&mut Node> {
        let len = self.nodes.len();
        let n = &mut self.nodes[usize::from(b) % len];
        (!n.dead).then_some(n)
    }

    fn check(&mut self) {
        for n in &mut self.nodes {
            n.check();
        }
    }

    /// Handles one Ready of node `i` as a host does.
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
                    // A refused change is a no-op, as the rustdoc of
                    // apply_conf_change tells hosts.
                    if let Ok(cs) = n.rn.apply_conf_change(&cc) {
                        n.storage
                            .wl()
                            .set_conf_state(cs)
                            .expect("an applied configuration is refused by the storage");
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
        let len = self.nodes.len() as u64;
        if (1..=len).contains(&m.to) && !self.nodes[(m.to - 1) as usize].dead {
            let is_snap = m.msg_type == MessageType::MsgSnap;
            let (from, to) = (m.from, m.to);
            let _ = self.nodes[(to - 1) as usize].rn.step(m);
            if is_snap && (1..=len).contains(&from) {
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
            for i in 0..self.nodes.len() {
                busy |= self.ready(i);
                self.check();
            }
            while self.deliver() {
                busy = true;
                self.check();
            }
            if !busy {
                break;
            }
        }
    }
}

fn entry(inp: &mut Input<'_>, term: u64, last: u64) -> Entry {
    let entry_type = match inp.byte() % 8 {
        0 => EntryType(i32::from(inp.byte() as i8)),
        1 => EntryType::EntryConfChange,
        2 => EntryType::EntryConfChangeV2,
        _ => EntryType::EntryNormal,
    };
    let data = match entry_type {
        EntryType::EntryConfChange => {
            let (t, id) = (inp.byte(), inp.id());
            ConfChangeI::V1(ConfChange {
                change_type: ConfChangeType(i32::from(t % 6)),
                node_id: id,
                ..ConfChange::default()
            })
            .to_entry_parts()
            .1
        }
        EntryType::EntryConfChangeV2 => ConfChangeI::V2(conf_change_v2(inp)).to_entry_parts().1,
        _ => vec![inp.byte()].into(),
    };
    Entry {
        entry_type,
        term: inp.num(term),
        index: inp.num(last),
        data: Some(data),
    }
}

fn conf_change_v2(inp: &mut Input<'_>) -> ConfChangeV2 {
    let n = inp.small(3);
    let changes = (0..n)
        .map(|_| {
            let t = ConfChangeType(i32::from(inp.byte() % 6));
            ConfChangeSingle::new(t, inp.id())
        })
        .collect();
    ConfChangeV2 {
        transition: ConfChangeTransition(i32::from(inp.byte() % 4)),
        changes,
        context: None,
    }
}

fn conf_state(inp: &mut Input<'_>) -> ConfState {
    let ids = |inp: &mut Input<'_>, max: u8| (0..inp.small(max)).map(|_| inp.id()).collect();
    ConfState {
        voters: ids(inp, 4),
        learners: ids(inp, 2),
        voters_outgoing: ids(inp, 2),
        learners_next: ids(inp, 2),
        auto_leave: inp.byte() & 1 != 0,
    }
}

/// A message with every field drawn from the input, relative to the
/// state of the node it is for.
fn hostile_message(inp: &mut Input<'_>, to: u64, term: u64, last: u64) -> Message {
    let msg_type = match inp.byte() % 32 {
        // Mostly the types peers send, sometimes local or unknown ones.
        b @ 0..=23 => MessageType(i32::from(b)),
        24..=27 => MessageType::ALL[usize::from(inp.byte()) % MessageType::ALL.len()],
        _ => MessageType(i32::from_le_bytes([inp.byte(), inp.byte(), 0, 0]) - 1000),
    };
    let mut m = Message::new(msg_type, inp.id(), to);
    m.term = inp.num(term);
    m.log_term = inp.num(term);
    m.index = inp.num(last);
    m.commit = inp.num(last);
    m.reject = inp.byte() & 1 != 0;
    m.reject_hint = inp.num(last);
    for _ in 0..inp.small(4) {
        m.entries.push(entry(inp, term, last));
    }
    if inp.byte().is_multiple_of(4) {
        m.snapshot = Some(Box::new(Snapshot {
            data: Some(vec![inp.byte()].into()),
            metadata: SnapshotMetadata {
                conf_state: conf_state(inp),
                index: inp.num(last),
                term: inp.num(term),
            },
        }));
    }
    if inp.byte().is_multiple_of(4) {
        m.context = Some(vec![inp.byte()].into());
    }
    m
}

fuzz_target!(|data: &[u8]| {
    let mut inp = Input(data);
    let flags = inp.byte();
    let mut c = Cluster::new(flags);
    let mut ops = 0;
    while !inp.0.is_empty() {
        ops += 1;
        if ops > 2000 {
            break;
        }
        let op = inp.byte();
        let arg = inp.byte();
        match op % 12 {
            0..=3 => {
                let len = c.nodes.len();
                let i = usize::from(arg) % len;
                if c.nodes[i].dead {
                    continue;
                }
                let (term, last) = (c.nodes[i].term(), c.nodes[i].last_index());
                let m = hostile_message(&mut inp, i as u64 + 1, term, last);
                let _ = c.nodes[i].rn.step(m);
            }
            4 => {
                if let Some(n) = c.node(arg) {
                    for _ in 0..(arg % 8) + 1 {
                        n.rn.tick();
                    }
                }
            }
            5 => {
                let i = usize::from(arg) % c.nodes.len();
                c.ready(i);
            }
            6 => {
                for _ in 0..(arg % 8) + 1 {
                    c.deliver();
                }
            }
            7 => {
                if let Some(n) = c.node(arg) {
                    let _ = n.rn.propose(vec![arg]);
                }
            }
            8 => {
                if let Some(n) = c.node(arg) {
                    let _ = n.rn.campaign();
                }
            }
            9 => {
                let cc = if inp.byte() & 1 == 0 {
                    let (t, id) = (inp.byte(), inp.id());
                    ConfChangeI::V1(ConfChange {
                        change_type: ConfChangeType(i32::from(t % 6) - 1),
                        node_id: id,
                        ..ConfChange::default()
                    })
                } else {
                    ConfChangeI::V2(conf_change_v2(&mut inp))
                };
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
                let target = inp.id();
                match arg % 4 {
                    0 => {
                        let _ = n.rn.transfer_leader(target);
                    }
                    1 => n.rn.report_unreachable(target),
                    2 => n.rn.report_snapshot(target, SnapshotStatus::Failure),
                    _ => {
                        let _ = n.rn.read_index(vec![arg]);
                        n.rn.advance_apply_to(inp.num(0));
                    }
                }
            }
        }
        c.check();
    }
    c.drain();
});
