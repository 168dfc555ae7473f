//! The one interface the workloads drive: "a node" of either library.
//! Both implementations encode every outgoing message to bytes and decode
//! every incoming one, as a real transport would.

use bytes::Bytes;

/// What kind of message a wire frame carries (for B6's accounting).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Heartbeat,
    Append,
    Snapshot,
    Other,
}

/// One encoded message in flight.
pub struct Wire {
    pub from: u64,
    pub to: u64,
    pub kind: Kind,
    pub data: Bytes,
}

/// The host's state machine: what was applied.
#[derive(Default, Debug, Clone)]
pub struct Applied {
    /// Normal entries with a payload applied.
    pub entries: u64,
    /// Payload bytes applied.
    pub bytes: u64,
    /// The last applied index (including snapshots).
    pub index: u64,
    /// Read states received (ReadIndex answers).
    pub reads: u64,
    /// Snapshots installed.
    pub snapshots: u64,
}

/// The parameters shared by every implementation (the defaults of DESIGN §2,
/// set explicitly on every library so that they agree): election tick 10,
/// heartbeat tick 1, 1 MiB per message and per Ready of committed entries,
/// 256 inflight messages, check-quorum and pre-vote on, ReadIndex Safe, no
/// limit on uncommitted entries.
#[derive(Clone, Debug)]
pub struct Opts {
    pub election_tick: usize,
    pub heartbeat_tick: usize,
    pub max_size_per_msg: u64,
    pub max_inflight_msgs: usize,
    /// raftlet only: coalesce appends between Readies (its default).
    pub coalesce: bool,
    /// raftlet only: decode received messages with `decode_bytes` (entry
    /// payloads share the receive buffer) instead of copying them out.
    pub zero_copy: bool,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            election_tick: 10,
            heartbeat_tick: 1,
            max_size_per_msg: 1024 * 1024,
            max_inflight_msgs: 256,
            coalesce: true,
            zero_copy: false,
        }
    }
}

pub trait BenchNode: Sized {
    /// A node of a cluster whose storage starts with `voters` as its
    /// configuration; with no voters, an empty node that learns its
    /// configuration from a snapshot (a joining learner).
    fn create(id: u64, voters: &[u64], opts: &Opts) -> Self;
    fn campaign(&mut self);
    /// One proposal of a fresh copy of `data` (every implementation makes
    /// its own owned payload per proposal: one allocation and one copy).
    fn propose(&mut self, data: &[u8]);
    /// One proposal message carrying `n` entries, each a fresh copy of
    /// `data`.
    fn propose_batch(&mut self, data: &[u8], n: usize);
    fn propose_add_learner(&mut self, id: u64);
    fn read_index(&mut self, ctx: u64);
    fn tick(&mut self);
    /// Decodes and steps one message.
    fn step(&mut self, data: &Bytes);
    fn has_ready(&self) -> bool;
    /// One Ready cycle: persist (snapshot, entries, hard state), encode the
    /// messages into `out`, apply committed entries (conf changes too),
    /// advance.
    fn cycle(&mut self, out: &mut Vec<Wire>, app: &mut Applied);
    /// Takes a snapshot at `index` (with `data` as the state machine image)
    /// and compacts the log up to it.
    fn snapshot_and_compact(&mut self, index: u64, data: Option<Bytes>);
    /// Compacts the log up to `index` (no snapshot).
    fn compact(&mut self, index: u64);
    fn last_index(&self) -> u64;
    fn is_leader(&self) -> bool;
    /// An encoded heartbeat, as the leader `from` would send it.
    fn encode_heartbeat(from: u64, to: u64, term: u64) -> Bytes;
}
