//! A host helper for a process holding many groups: [`MultiNode`] ticks
//! only the groups that are awake, keeps one node-level liveness clock per
//! peer node (instead of one heartbeat per group), wakes the groups whose
//! quiesced leader's node fell silent, and batches the messages of all
//! groups bound for one node into one [`frame`].
//!
//! It does no I/O: the host persists each group's Ready, hands the
//! messages to [`Outbox::send`], ships the frames of
//! [`MultiNode::take_frames`] and feeds the frames it receives to
//! [`MultiNode::receive`]. See docs/architecture.md "Quiescence".
//!
//! ```
//! use raftlet::multi::MultiNode;
//! use raftlet::pb::ConfState;
//! use raftlet::{Config, MemoryStorage, RawNode};
//!
//! // One node (id 1) holding 100 single-voter groups.
//! let mut host = MultiNode::new(1, 10, 1);
//! for g in 0..100 {
//!     let mut c = Config::new(1);
//!     c.quiesce = true;
//!     c.seed = g + 1;
//!     let s = MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1]))?;
//!     host.add_group(g, RawNode::new(&c, s)?)?;
//!     host.with_group(g, |n, _| n.campaign()).unwrap()?;
//! }
//! // The host's loop: tick, then handle the Readies of the groups that
//! // have one (persist, send, apply, advance).
//! for _ in 0..30 {
//!     host.tick();
//!     for g in host.take_ready_groups() {
//!         host.with_group(g, |n, out| {
//!             while n.has_ready() {
//!                 let mut rd = n.ready();
//!                 let s = n.store().clone();
//!                 s.wl().append(&rd.entries)?;
//!                 if let Some(hs) = rd.hard_state {
//!                     s.wl().set_hard_state(hs);
//!                 }
//!                 out.send(rd.take_all_messages());
//!                 n.advance(rd);
//!             }
//!             Ok::<(), raftlet::Error>(())
//!         });
//!     }
//! }
//! // Every group elected itself, committed, and fell asleep: a tick now
//! // touches none of them.
//! assert_eq!(host.awake_len(), 0);
//! # Ok::<(), raftlet::Error>(())
//! ```

pub mod frame;

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;

use crate::pb::Message;
use crate::storage::Storage;
use crate::RawNode;
use frame::{FrameBuilder, FrameError};

/// Where a slot is not in the awake list.
const ASLEEP: usize = usize::MAX;

struct Slot<S: Storage> {
    group: u64,
    node: RawNode<S>,
    /// Position in `MultiNode::awake`, or [`ASLEEP`].
    awake_pos: usize,
    /// In `MultiNode::ready` already.
    queued: bool,
}

/// What this node knows of a peer node's liveness.
#[derive(Debug, Clone, Copy)]
struct Peer {
    /// The tick at which the last frame from it arrived.
    last_heard: u64,
    /// Silent for an election timeout: the groups it led were woken.
    lost: bool,
}

/// The outbound frames of one group's Ready handling (see
/// [`MultiNode::with_group`]).
pub struct Outbox<'a> {
    from: u64,
    group: u64,
    frames: &'a mut BTreeMap<u64, FrameBuilder>,
}

impl Outbox<'_> {
    /// Queues `msgs` (of this group) in the frame of each one's
    /// destination node.
    pub fn send(&mut self, msgs: impl IntoIterator<Item = Message>) {
        for m in msgs {
            self.frames
                .entry(m.to)
                .or_insert_with(|| FrameBuilder::new(self.from))
                .push(self.group, &m);
        }
    }
}

/// Counters of a [`MultiNode`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MultiStats {
    /// Groups ticked, summed over all ticks.
    pub group_ticks: u64,
    /// Messages stepped into groups.
    pub stepped: u64,
    /// Messages a group refused (see [`RawNode::step`]), or addressed to a
    /// group this node does not hold.
    pub refused: u64,
    /// Frames refused by the decoder.
    pub bad_frames: u64,
    /// Groups woken because their leader's node fell silent.
    pub woken_by_liveness: u64,
}

/// Many groups of one node, ticked only while awake (module docs).
pub struct MultiNode<S: Storage> {
    id: u64,
    election_tick: u64,
    heartbeat_tick: u64,
    now: u64,
    slots: Vec<Slot<S>>,
    by_group: HashMap<u64, usize>,
    /// Slots that are not quiesced (or have work left): the tick sweep.
    awake: Vec<usize>,
    /// Slots that may have a Ready.
    ready: Vec<usize>,
    peers: BTreeMap<u64, Peer>,
    out: BTreeMap<u64, FrameBuilder>,
    stats: MultiStats,
}

impl<S: Storage> MultiNode<S> {
    /// A host for node `id` whose groups all use `election_tick` and
    /// `heartbeat_tick` (the node-level liveness runs on them: a node-level
    /// heartbeat to every peer every `heartbeat_tick` ticks, a peer lost
    /// after `election_tick` ticks of silence).
    ///
    /// # Panics
    /// If `heartbeat_tick` is 0 or not below `election_tick`.
    pub fn new(id: u64, election_tick: usize, heartbeat_tick: usize) -> MultiNode<S> {
        assert!(
            heartbeat_tick > 0 && heartbeat_tick < election_tick,
            "heartbeat_tick must be in [1, election_tick)"
        );
        MultiNode {
            id,
            election_tick: election_tick as u64,
            heartbeat_tick: heartbeat_tick as u64,
            now: 0,
            slots: Vec::new(),
            by_group: HashMap::new(),
            awake: Vec::new(),
            ready: Vec::new(),
            peers: BTreeMap::new(),
            out: BTreeMap::new(),
            stats: MultiStats::default(),
        }
    }

    /// Adds group `group` with its node (created with this node's id and
    /// the same ticks).
    ///
    /// # Errors
    /// [`crate::Error::InvalidState`] when `group` is already held (the
    /// node passed is dropped; the held one is untouched).
    pub fn add_group(&mut self, group: u64, node: RawNode<S>) -> crate::Result<()> {
        if self.by_group.contains_key(&group) {
            return Err(crate::Error::InvalidState(format!(
                "group {group} is already held"
            )));
        }
        let ix = self.slots.len();
        self.slots.push(Slot {
            group,
            node,
            awake_pos: ASLEEP,
            queued: false,
        });
        self.by_group.insert(group, ix);
        self.refresh(ix);
        Ok(())
    }

    /// Reserves room for `additional` more groups (a host that knows how
    /// many groups it holds avoids the slack of a growing vector).
    pub fn reserve(&mut self, additional: usize) {
        self.slots.reserve_exact(additional);
        self.by_group.reserve(additional);
    }

    /// Registers peer node `node` for node-level liveness (peers are also
    /// registered by the first frame to or from them).
    pub fn add_peer(&mut self, node: u64) {
        let now = self.now;
        if node != self.id {
            self.peers.entry(node).or_insert(Peer {
                last_heard: now,
                lost: false,
            });
        }
    }

    /// One tick: ticks every awake group and notes those with a Ready;
    /// drops quiesced groups from the sweep; queues node-level heartbeats;
    /// wakes the groups whose leader's node has been silent for an
    /// election timeout. Quiesced groups are not touched.
    pub fn tick(&mut self) {
        self.now += 1;
        let mut i = 0;
        while i < self.awake.len() {
            let ix = self.awake[i];
            let slot = &mut self.slots[ix];
            slot.node.tick();
            if slot.node.has_ready() {
                if !slot.queued {
                    slot.queued = true;
                    self.ready.push(ix);
                }
                i += 1;
            } else if slot.node.is_quiesced() && !slot.queued {
                self.sleep(ix);
            } else {
                i += 1;
            }
        }
        self.stats.group_ticks += self.awake.len() as u64;
        if self.awake.capacity() > 4 * self.awake.len().max(64) {
            // Most groups fell asleep: give the sweep list's slack back.
            self.awake.shrink_to(2 * self.awake.len().max(64));
        }
        if self.now % self.heartbeat_tick == 0 {
            for &p in self.peers.keys() {
                self.out
                    .entry(p)
                    .or_insert_with(|| FrameBuilder::new(self.id));
            }
        }
        self.check_liveness();
    }

    fn check_liveness(&mut self) {
        let (now, et) = (self.now, self.election_tick);
        let mut lost = Vec::new();
        for (&id, p) in self.peers.iter_mut() {
            if !p.lost && now.saturating_sub(p.last_heard) >= et {
                p.lost = true;
                lost.push(id);
            }
        }
        if lost.is_empty() {
            return;
        }
        // A rare event: one pass over every group (not per tick). Awake
        // followers of the lost node are told too: one woken by a peer's
        // message had its election clock stopped while it slept.
        for ix in 0..self.slots.len() {
            let n = &mut self.slots[ix].node;
            let ss = n.basic_status().soft_state;
            if ss.raft_state == crate::StateRole::Follower && lost.contains(&ss.leader_id) {
                if n.is_quiesced() {
                    self.stats.woken_by_liveness += 1;
                }
                n.wake_leader_lost();
                self.refresh(ix);
            }
        }
    }

    /// Decodes a frame from a peer node, records that node as alive, and
    /// steps each message into its group (waking it). Returns the number
    /// of messages stepped. The node is the one the frame's header names:
    /// a host whose transport knows the sender checks that they agree
    /// ([`frame::decode`] gives the header) before passing the frame on.
    ///
    /// # Errors
    /// [`FrameError`] for a malformed frame: nothing is stepped then, and
    /// the sender is not counted alive.
    pub fn receive(&mut self, data: &Bytes) -> Result<usize, FrameError> {
        let f = match frame::decode(data) {
            Ok(f) => f,
            Err(e) => {
                self.stats.bad_frames += 1;
                return Err(e);
            }
        };
        if f.from != self.id {
            let now = self.now;
            let p = self.peers.entry(f.from).or_insert(Peer {
                last_heard: now,
                lost: false,
            });
            p.last_heard = now;
            p.lost = false;
        }
        let mut n = 0;
        for (group, m) in f.items {
            let Some(&ix) = self.by_group.get(&group) else {
                self.stats.refused += 1;
                continue;
            };
            if self.slots[ix].node.step(m).is_err() {
                self.stats.refused += 1;
            } else {
                n += 1;
            }
            self.refresh(ix);
        }
        self.stats.stepped += n as u64;
        Ok(n)
    }

    /// Runs `f` on group `group`'s node, with an [`Outbox`] for its
    /// messages, then puts the group back in the sweep if it woke (a
    /// proposal, a read) or takes it out if it quiesced. `None` if the
    /// group is not held.
    pub fn with_group<R>(
        &mut self,
        group: u64,
        f: impl FnOnce(&mut RawNode<S>, &mut Outbox<'_>) -> R,
    ) -> Option<R> {
        let ix = *self.by_group.get(&group)?;
        let mut out = Outbox {
            from: self.id,
            group,
            frames: &mut self.out,
        };
        let r = f(&mut self.slots[ix].node, &mut out);
        self.refresh(ix);
        Some(r)
    }

    /// The groups that may have a Ready since the last call (each once).
    /// Handle each with [`MultiNode::with_group`].
    pub fn take_ready_groups(&mut self) -> Vec<u64> {
        let mut v = Vec::with_capacity(self.ready.len());
        for ix in self.ready.drain(..) {
            let s = &mut self.slots[ix];
            s.queued = false;
            v.push(s.group);
        }
        v
    }

    /// The frames to send, one per destination node (empty ones are
    /// node-level heartbeats).
    pub fn take_frames(&mut self) -> Vec<(u64, Vec<u8>)> {
        let out = std::mem::take(&mut self.out);
        out.into_iter().map(|(to, f)| (to, f.finish())).collect()
    }

    /// The number of groups held.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no group is held.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The number of groups the tick sweep visits.
    pub fn awake_len(&self) -> usize {
        self.awake.len()
    }

    /// Whether group `group` is in the tick sweep.
    pub fn is_awake(&self, group: u64) -> bool {
        self.by_group
            .get(&group)
            .is_some_and(|&ix| self.slots[ix].awake_pos != ASLEEP)
    }

    /// The counters.
    pub fn stats(&self) -> MultiStats {
        self.stats
    }

    /// This node's ticks so far.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Re-files slot `ix` after anything touched its node.
    fn refresh(&mut self, ix: usize) {
        let s = &mut self.slots[ix];
        let has_ready = s.node.has_ready();
        if has_ready && !s.queued {
            s.queued = true;
            self.ready.push(ix);
        }
        let asleep = s.node.is_quiesced() && !has_ready && !s.queued;
        if asleep {
            if s.awake_pos != ASLEEP {
                self.sleep(ix);
            }
        } else if s.awake_pos == ASLEEP {
            s.awake_pos = self.awake.len();
            self.awake.push(ix);
        }
    }

    /// Takes slot `ix` out of the sweep (swap-remove, O(1)).
    fn sleep(&mut self, ix: usize) {
        let pos = self.slots[ix].awake_pos;
        debug_assert!(pos != ASLEEP);
        self.awake.swap_remove(pos);
        if let Some(&moved) = self.awake.get(pos) {
            self.slots[moved].awake_pos = pos;
        }
        self.slots[ix].awake_pos = ASLEEP;
    }
}
