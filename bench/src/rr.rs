//! [`BenchNode`] for raft-rs (crate `raft` 0.7) over its MemStorage, with
//! the codec this binary was built with (feature `rr-prost`: prost, whose
//! payloads are `Vec<u8>`; `rr-protobuf`: raft-rs's default rust-protobuf 2
//! codec, whose payloads are `Bytes`). raft-rs's MemStorage builds snapshots on demand without
//! data; a thin wrapper returns the snapshot the host took instead (as
//! raftlet's and etcd's MemoryStorage do), so that B6 ships the same image.

use bytes::Bytes;
use raft::eraftpb::{
    ConfChange, ConfChangeType, ConfState, Entry, EntryType, Message, MessageType, Snapshot,
};
use raft::storage::MemStorage;
use raft::{Config, GetEntriesContext, RaftState, RawNode, StateRole, Storage};

use crate::node::{Applied, BenchNode, Kind, Opts, Wire};

#[cfg(all(feature = "rr-prost", feature = "rr-protobuf"))]
compile_error!("build the bench with one raft-rs codec: rr-prost or rr-protobuf");

/// The codec's name, as the JSON lines report it (`impl`).
#[cfg(feature = "rr-prost")]
pub const IMPL: &str = "raft-rs-prost";
/// The codec's name, as the JSON lines report it (`impl`).
#[cfg(feature = "rr-protobuf")]
pub const IMPL: &str = "raft-rs-protobuf";

/// Encoding and decoding through the codec of the build. Decoding copies
/// the payloads out of the receive buffer with both codecs (prost decodes
/// into `Vec<u8>`; rust-protobuf parsing a `&[u8]` copies into `Bytes`).
#[cfg(feature = "rr-prost")]
pub mod wire {
    /// A fresh owned payload, as the codec's entries hold it.
    pub fn payload(d: &[u8]) -> Vec<u8> {
        d.to_vec()
    }
    pub fn encode<M: prost::Message>(m: &M) -> Vec<u8> {
        m.encode_to_vec()
    }
    pub fn encode_into<M: prost::Message>(m: &M, buf: &mut Vec<u8>) {
        m.encode(buf).expect("encode");
    }
    pub fn encoded_len<M: prost::Message>(m: &M) -> usize {
        m.encoded_len()
    }
    pub fn decode<M: prost::Message + Default>(b: &[u8]) -> M {
        M::decode(b).expect("decode")
    }
    /// prost's `Vec<u8>` payloads cannot share the buffer: a copy.
    pub fn decode_shared<M: prost::Message + Default>(b: &bytes::Bytes) -> M {
        M::decode(&b[..]).expect("decode")
    }
}

/// Encoding and decoding through the codec of the build (see above).
#[cfg(feature = "rr-protobuf")]
pub mod wire {
    /// A fresh owned payload, as the codec's entries hold it.
    pub fn payload(d: &[u8]) -> bytes::Bytes {
        bytes::Bytes::from(d.to_vec())
    }
    pub fn encode<M: protobuf::Message>(m: &M) -> Vec<u8> {
        m.write_to_bytes().expect("encode")
    }
    pub fn encode_into<M: protobuf::Message>(m: &M, buf: &mut Vec<u8>) {
        m.write_to_vec(buf).expect("encode");
    }
    pub fn encoded_len<M: protobuf::Message>(m: &M) -> usize {
        m.compute_size() as usize
    }
    pub fn decode<M: protobuf::Message>(b: &[u8]) -> M {
        M::parse_from_bytes(b).expect("decode")
    }
    /// The payloads share `b` (rust-protobuf's `Bytes` support).
    pub fn decode_shared<M: protobuf::Message>(b: &bytes::Bytes) -> M {
        M::parse_from_carllerche_bytes(b).expect("decode")
    }
}

pub struct Store {
    pub mem: MemStorage,
    pub snap: Option<Snapshot>,
}

impl Storage for Store {
    fn initial_state(&self) -> raft::Result<RaftState> {
        self.mem.initial_state()
    }
    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        self.mem.entries(low, high, max_size, context)
    }
    fn term(&self, idx: u64) -> raft::Result<u64> {
        if let Some(s) = &self.snap {
            let m = s.get_metadata();
            if m.index == idx {
                return Ok(m.term);
            }
        }
        self.mem.term(idx)
    }
    fn first_index(&self) -> raft::Result<u64> {
        self.mem.first_index()
    }
    fn last_index(&self) -> raft::Result<u64> {
        self.mem.last_index()
    }
    fn snapshot(&self, request_index: u64, to: u64) -> raft::Result<Snapshot> {
        match &self.snap {
            Some(s) => Ok(s.clone()),
            None => self.mem.snapshot(request_index, to),
        }
    }
}

pub struct RaftRs {
    node: RawNode<Store>,
    /// The configuration, kept out of line (see rl.rs).
    cs: Option<Box<ConfState>>,
}

fn kind(t: MessageType) -> Kind {
    match t {
        MessageType::MsgHeartbeat => Kind::Heartbeat,
        MessageType::MsgAppend => Kind::Append,
        MessageType::MsgSnapshot => Kind::Snapshot,
        _ => Kind::Other,
    }
}

fn logger() -> slog::Logger {
    slog::Logger::root(slog::Discard, slog::o!())
}

impl RaftRs {
    fn handle_committed(&mut self, ents: &[Entry], app: &mut Applied) {
        for e in ents {
            match e.get_entry_type() {
                EntryType::EntryNormal => {
                    let n = e.data.len() as u64;
                    if n > 0 {
                        app.entries += 1;
                        app.bytes += n;
                    }
                }
                EntryType::EntryConfChange => {
                    let cc = wire::decode::<ConfChange>(&e.data[..]);
                    let cs = self.node.apply_conf_change(&cc).expect("apply conf change");
                    self.node.mut_store().mem.wl().set_conf_state(cs.clone());
                    self.cs = Some(Box::new(cs));
                }
                EntryType::EntryConfChangeV2 => {
                    let cc = wire::decode::<raft::eraftpb::ConfChangeV2>(&e.data[..]);
                    let cs = self.node.apply_conf_change(&cc).expect("apply conf change");
                    self.node.mut_store().mem.wl().set_conf_state(cs.clone());
                    self.cs = Some(Box::new(cs));
                }
            }
            app.index = e.index;
        }
    }

    fn send(&self, msgs: &[Message], out: &mut Vec<Wire>) {
        let from = self.node.raft.id;
        for m in msgs {
            out.push(Wire {
                from,
                to: m.to,
                kind: kind(m.get_msg_type()),
                data: Bytes::from(wire::encode(m)),
            });
        }
    }
}

impl BenchNode for RaftRs {
    fn create(id: u64, voters: &[u64], opts: &Opts) -> Self {
        let mem = if voters.is_empty() {
            MemStorage::new()
        } else {
            MemStorage::new_with_conf_state(ConfState::from((voters.to_vec(), vec![])))
        };
        let cfg = Config {
            id,
            election_tick: opts.election_tick,
            heartbeat_tick: opts.heartbeat_tick,
            max_size_per_msg: opts.max_size_per_msg,
            max_committed_size_per_ready: opts.max_size_per_msg,
            max_inflight_msgs: opts.max_inflight_msgs,
            check_quorum: true,
            pre_vote: true,
            ..Config::default()
        };
        let node = RawNode::new(&cfg, Store { mem, snap: None }, &logger()).expect("raft-rs node");
        RaftRs { node, cs: None }
    }

    fn campaign(&mut self) {
        self.node.campaign().expect("campaign");
    }

    fn propose(&mut self, data: &[u8]) {
        // A fresh payload: raft-rs takes it as an owned Vec<u8>.
        self.node.propose(vec![], data.to_vec()).expect("propose");
    }

    fn propose_batch(&mut self, data: &[u8], n: usize) {
        let mut m = Message::default();
        m.set_msg_type(MessageType::MsgPropose);
        m.from = self.node.raft.id;
        m.entries = (0..n)
            .map(|_| Entry {
                data: wire::payload(data),
                ..Entry::default()
            })
            .collect();
        // RawNode::step refuses local messages; Raft::step takes MsgPropose.
        self.node.raft.step(m).expect("propose batch");
    }

    fn propose_add_learner(&mut self, id: u64) {
        let mut cc = ConfChange::default();
        cc.set_change_type(ConfChangeType::AddLearnerNode);
        cc.node_id = id;
        self.node
            .propose_conf_change(vec![], cc)
            .expect("add learner");
    }

    fn read_index(&mut self, ctx: u64) {
        self.node.read_index(ctx.to_le_bytes().to_vec());
    }

    fn tick(&mut self) {
        self.node.tick();
    }

    fn step(&mut self, data: &Bytes) {
        let _ = self.node.step(wire::decode::<Message>(&data[..]));
    }

    fn has_ready(&self) -> bool {
        self.node.has_ready()
    }

    fn cycle(&mut self, out: &mut Vec<Wire>, app: &mut Applied) {
        let mut rd = self.node.ready();
        if !rd.messages().is_empty() {
            self.send(rd.messages(), out);
        }
        if !rd.snapshot().is_empty() {
            let snap = rd.snapshot().clone();
            app.index = snap.get_metadata().index;
            app.snapshots += 1;
            self.cs = Some(Box::new(snap.get_metadata().get_conf_state().clone()));
            self.node
                .mut_store()
                .mem
                .wl()
                .apply_snapshot(snap)
                .expect("apply snapshot");
        }
        let committed = rd.take_committed_entries();
        self.handle_committed(&committed, app);
        if !rd.entries().is_empty() {
            self.node
                .mut_store()
                .mem
                .wl()
                .append(rd.entries())
                .expect("append");
        }
        if let Some(hs) = rd.hs() {
            self.node.mut_store().mem.wl().set_hardstate(hs.clone());
        }
        app.reads += rd.read_states().len() as u64;
        if !rd.persisted_messages().is_empty() {
            self.send(rd.persisted_messages(), out);
        }
        let mut light = self.node.advance(rd);
        if let Some(commit) = light.commit_index() {
            self.node.mut_store().mem.wl().mut_hard_state().commit = commit;
        }
        self.send(light.messages(), out);
        let committed = light.take_committed_entries();
        self.handle_committed(&committed, app);
        self.node.advance_apply();
    }

    fn snapshot_and_compact(&mut self, index: u64, data: Option<Bytes>) {
        let term = self.node.store().term(index).expect("term");
        let mut snap = Snapshot {
            data: data.map(|d| wire::payload(&d)).unwrap_or_default(),
            ..Snapshot::default()
        };
        let meta = snap.mut_metadata();
        meta.index = index;
        meta.term = term;
        meta.set_conf_state(self.cs.as_deref().cloned().unwrap_or_else(|| {
            self.node
                .store()
                .mem
                .initial_state()
                .expect("state")
                .conf_state
        }));
        let store = self.node.mut_store();
        store.mem.wl().compact(index).expect("compact");
        store.snap = Some(snap);
    }

    fn compact(&mut self, index: u64) {
        self.node
            .mut_store()
            .mem
            .wl()
            .compact(index)
            .expect("compact");
    }

    fn last_index(&self) -> u64 {
        self.node.store().last_index().expect("last index")
    }

    fn is_leader(&self) -> bool {
        self.node.raft.state == StateRole::Leader
    }

    fn encode_heartbeat(from: u64, to: u64, term: u64) -> Bytes {
        let mut m = Message::default();
        m.set_msg_type(MessageType::MsgHeartbeat);
        m.from = from;
        m.to = to;
        m.term = term;
        Bytes::from(wire::encode(&m))
    }
}
