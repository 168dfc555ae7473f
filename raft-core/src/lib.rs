//! raftlet: a synchronous Raft consensus core with the behaviour of etcd
//! raft v3.6 — pre-vote, check-quorum, learners with safe promotion, joint
//! consensus, flow control, snapshot catch-up, ReadIndex and lease reads,
//! and leader transfer — speaking etcd's `raftpb` wire format.
//!
//! The library does no I/O, starts no threads and reads no clock. The host
//! drives a [`RawNode`]: it calls [`RawNode::tick`] on a timer, feeds peer
//! messages to [`RawNode::step`], proposes with [`RawNode::propose`], and
//! processes the [`Ready`] batches the node hands back.
//!
//! # The Ready loop
//!
//! Whenever [`RawNode::has_ready`] is true, take a [`Ready`] and handle it
//! in this order:
//!
//! 1. **Persist** `snapshot` (if any), then append `entries`, then store
//!    `hard_state` (if any). Sync the write when `must_sync` is set.
//! 2. **Send** `messages` at any time, even before or while persisting, and
//!    `persisted_messages` only once the write of this Ready and of every
//!    earlier one is durable.
//!    A host that sends only after the write can take both in one list
//!    with [`Ready::take_all_messages`] (etcd's `Ready.Messages`).
//! 3. **Apply** `committed_entries` in order to the state machine. For a
//!    conf-change entry, call [`RawNode::apply_conf_change`].
//! 4. **Advance**: pass the Ready back with [`RawNode::advance`]. Only then
//!    does the node count its own durable acknowledgements and hand out
//!    the next batch. Hosts that apply asynchronously call
//!    [`RawNode::advance_append`] after step 1 and
//!    [`RawNode::advance_apply_to`] as entries are applied.
//!
//! ## The contract
//!
//! A message leaves through `messages` only if its safety needs nothing
//! that is not yet durable: a leader's appends, snapshots, heartbeats and
//! read-index answers sent while its term and vote were already durable
//! (persisted by a Ready the host reported with [`RawNode::advance`],
//! [`RawNode::advance_append`] or [`RawNode::on_persist_ready`]); and
//! pre-vote requests, heartbeat responses and forwarded proposals and
//! reads, which need nothing durable at all. Everything else is in
//! `persisted_messages`: vote requests (a candidate whose term and vote
//! could be lost could win the same term again after a crash, with another
//! log), vote and pre-vote answers, append answers (they vouch for
//! entries), and every other message sent while the node's term or vote
//! was not yet durable. The host may keep several Readies in flight (take
//! the next before the last is durable) provided their writes become
//! durable in the order the Readies were taken and it reports each once
//! durable, in that order; it may step messages, tick and propose
//! meanwhile. The write of one Ready need not be atomic: a crash may keep
//! any prefix of snapshot, entries and hard state, and the node restarts
//! safely from it. The node counts its own append acknowledgement and vote
//! only once the host reports the write durable. `tests/sim` runs hosts
//! that take each of these freedoms, and crashes that lose every write not
//! yet synced.
//!
//! ## One cycle per proposal: the light Ready
//!
//! Instead of [`RawNode::advance_append`], a host may report a Ready's
//! write durable with [`RawNode::advance_light`], which hands out at once
//! what the write made available (raft-rs's `LightReady`): the entries it
//! committed (a single voter's proposal; a leader's entries its own
//! acknowledgement completes), messages that may leave at once, and the new
//! commit index. Apply the Ready's own committed entries, then the light
//! Ready's, then call [`RawNode::advance_apply`] (or
//! [`RawNode::advance_apply_light`]). The one obligation it adds: persist
//! [`LightReady::commit_index`] as the hard state's commit (no sync needed)
//! before any state applied from those entries becomes durable (a state
//! machine flushed to disk, a snapshot taken at the applied index). A
//! restart whose [`Config::applied`] is beyond the stored commit index is
//! refused. Only entries the node knows to be durable are handed out, and
//! messages only while its term and vote are durable; the commit index
//! reported never exceeds the durable log. `tests/sim` runs hosts that take
//! light Readies on half of its seeds, losing their commit index in
//! crashes.
//!
//! A single-voter cluster shows the whole loop:
//!
//! ```
//! use raftlet::pb::{ConfState, EntryType};
//! use raftlet::{Config, MemoryStorage, RawNode, StateRole};
//!
//! // A storage shared by the node and the host (a cheap handle).
//! let storage = MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1]))?;
//! let mut node = RawNode::new(&Config::new(1), storage.clone())?;
//!
//! // The host's state machine: here, just the applied payloads.
//! let mut applied: Vec<Vec<u8>> = Vec::new();
//!
//! // Run the Ready loop until the node has nothing left to do.
//! fn drain(
//!     node: &mut RawNode<MemoryStorage>,
//!     storage: &MemoryStorage,
//!     applied: &mut Vec<Vec<u8>>,
//! ) -> raftlet::Result<()> {
//!     while node.has_ready() {
//!         let rd = node.ready();
//!         // 1. Persist.
//!         {
//!             let mut s = storage.wl();
//!             if let Some(snap) = &rd.snapshot {
//!                 s.apply_snapshot(snap.clone())?;
//!             }
//!             s.append(&rd.entries)?;
//!             if let Some(hs) = rd.hard_state {
//!                 s.set_hard_state(hs);
//!             }
//!         }
//!         // 2. Send: a single voter has no peers, so nothing goes out.
//!         assert!(rd.messages.is_empty() && rd.persisted_messages.is_empty());
//!         // 3. Apply.
//!         for e in &rd.committed_entries {
//!             if e.entry_type == EntryType::EntryNormal && !e.data().is_empty() {
//!                 applied.push(e.data().to_vec());
//!             }
//!         }
//!         // 4. Advance.
//!         node.advance(rd);
//!     }
//!     Ok(())
//! }
//!
//! node.campaign()?;
//! drain(&mut node, &storage, &mut applied)?;
//! assert_eq!(node.basic_status().soft_state.raft_state, StateRole::Leader);
//!
//! node.propose(b"x=1".to_vec())?;
//! node.propose(b"y=2".to_vec())?;
//! drain(&mut node, &storage, &mut applied)?;
//! assert_eq!(applied, vec![b"x=1".to_vec(), b"y=2".to_vec()]);
//! # Ok::<(), raftlet::Error>(())
//! ```
//!
//! # Clusters
//!
//! In a real cluster each node has its own storage and the host delivers
//! `messages` to their `to` peers over its transport (encode them with
//! [`pb::Encode`]; decode on arrival with [`pb::Decode`]). A new cluster is
//! started either by giving every node a storage that already holds the
//! initial [`pb::ConfState`] (as above), or with [`RawNode::bootstrap`].
//!
//! Election timeouts are drawn from `[election_tick, 2 * election_tick)`
//! with a seed from the OS ([`Config::seed`] 0, the default); set a seed
//! to replay a run.
//!
//! ## Starting as etcd nodes start
//!
//! etcd's own test environments (and hosts that mix raftlet and etcd raft
//! nodes) start every member from a snapshot at index 1, term 1, that
//! holds the initial configuration, with `applied` at 1: all members then
//! share the same log base and the first leader's entries start at
//! index 2. raftlet starts from such a storage as etcd does:
//!
//! ```
//! use raftlet::pb::{ConfState, Snapshot, SnapshotMetadata};
//! use raftlet::{Config, MemoryStorage, RawNode, StateRole, Storage as _};
//!
//! let storage = MemoryStorage::new();
//! storage.wl().apply_snapshot(Snapshot {
//!     metadata: SnapshotMetadata {
//!         conf_state: ConfState::from_voters(vec![1]), // every member, on every node
//!         index: 1,
//!         term: 1,
//!     },
//!     ..Snapshot::default()
//! })?;
//! let mut config = Config::new(1);
//! config.applied = 1;
//! let mut node = RawNode::new(&config, storage.clone())?;
//! node.campaign()?;
//! while node.has_ready() {
//!     let rd = node.ready();
//!     storage.wl().append(&rd.entries)?;
//!     if let Some(hs) = rd.hard_state {
//!         storage.wl().set_hard_state(hs);
//!     }
//!     node.advance(rd);
//! }
//! assert_eq!(node.basic_status().soft_state.raft_state, StateRole::Leader);
//! assert_eq!(storage.last_index()?, 2, "the leader's first entry follows the snapshot");
//! # Ok::<(), raftlet::Error>(())
//! ```
//!
//! # Learners
//!
//! A learner receives every entry and snapshot but never counts towards
//! commit, elections or check-quorum, and never campaigns. Add new members
//! as learners (`ConfChangeAddLearnerNode`), let them catch up, then
//! promote them with `ConfChangeAddNode`: the leader refuses the promotion
//! with [`Error::PromotionNotReady`] until the learner is within
//! [`Config::promote_max_lag`] entries.
#![deny(missing_docs)]

pub mod confchange;
mod config;
pub mod describe;
mod errors;
mod log;
mod log_unstable;
pub mod logging;
pub mod multi;
mod payload;
pub mod pb;
pub mod quorum;
mod raft;
mod raw_node;
mod status;
mod storage;
pub mod tracker;
mod types;
pub mod validate;

pub use config::{Config, ReadOnlyOption};
pub use errors::{Error, Result, StorageError};
pub use payload::{copy_payload, payload_from_vec, MAX_INLINE_PAYLOAD};
#[cfg(feature = "bug-injection")]
pub use raft::Bugs;
pub use raft::{MembershipEvent, NotPromotable, ReadState, SoftState, StateRole, INVALID_ID};
pub use raw_node::{LightReady, LocalRead, RawNode, Ready, SnapshotStatus};
pub use status::{BasicStatus, LearnerStatus, Status};
pub use storage::{MemoryStorage, MemoryStorageCore, RaftState, Storage};
pub use validate::MAX_TERM_OR_INDEX;
