//! [`BenchNode`] for raftlet's RawNode over its MemoryStorage.

use bytes::Bytes;
use raftlet::pb::{
    ConfChange, ConfChangeI, ConfChangeType, ConfState, Decode, Encode, Entry, EntryType, Message,
    MessageType,
};
use raftlet::{Config, MemoryStorage, RawNode, StateRole, Storage};

use crate::node::{Applied, BenchNode, Kind, Opts, Wire};

pub struct Raftlet {
    node: RawNode<MemoryStorage>,
    storage: MemoryStorage,
    /// The configuration, once a conf change or snapshot set it (kept out
    /// of line so that an idle group's footprint is the library's own).
    cs: Option<Box<ConfState>>,
    /// Decode received messages without copying their payloads.
    zero_copy: bool,
}

fn kind(t: MessageType) -> Kind {
    match t {
        MessageType::MsgHeartbeat => Kind::Heartbeat,
        MessageType::MsgApp => Kind::Append,
        MessageType::MsgSnap => Kind::Snapshot,
        _ => Kind::Other,
    }
}

/// Encodes messages for the wire, as raft-rs's `encode_to_vec`: one
/// exact-size buffer per message.
fn push_wire<'a>(from: u64, msgs: impl Iterator<Item = &'a Message>, out: &mut Vec<Wire>) {
    for m in msgs {
        out.push(Wire {
            from,
            to: m.to,
            kind: kind(m.msg_type),
            data: Bytes::from(m.encode_to_vec()),
        });
    }
}

impl Raftlet {
    /// Applies committed entries: counts the normal ones, applies conf
    /// changes.
    fn handle_committed(&mut self, ents: &[Entry], app: &mut Applied) {
        for e in ents {
            match e.entry_type {
                EntryType::EntryNormal => {
                    let n = e.data().len() as u64;
                    if n > 0 {
                        app.entries += 1;
                        app.bytes += n;
                    }
                }
                _ => {
                    let cc = ConfChangeI::from_entry(e).expect("conf change");
                    self.cs = Some(Box::new(
                        self.node.apply_conf_change(&cc).expect("apply conf change"),
                    ));
                }
            }
            app.index = e.index;
        }
    }
}

impl BenchNode for Raftlet {
    fn create(id: u64, voters: &[u64], opts: &Opts) -> Self {
        let storage = if voters.is_empty() {
            MemoryStorage::new()
        } else {
            MemoryStorage::new_with_conf_state(ConfState::from_voters(voters.to_vec()))
                .expect("valid bench configuration")
        };
        let mut cfg = Config::new(id);
        cfg.election_tick = opts.election_tick;
        cfg.heartbeat_tick = opts.heartbeat_tick;
        cfg.max_size_per_msg = opts.max_size_per_msg;
        cfg.max_committed_size_per_ready = opts.max_size_per_msg;
        cfg.max_inflight_msgs = opts.max_inflight_msgs;
        cfg.coalesce_appends = opts.coalesce;
        cfg.check_quorum = true;
        cfg.pre_vote = true;
        cfg.read_only_option = raftlet::ReadOnlyOption::Safe;
        cfg.max_uncommitted_entries_size = 0;
        cfg.max_inflight_bytes = 0;
        // A fixed seed (0 would draw from the OS), so runs are repeatable.
        cfg.seed = id;
        let node = RawNode::new(&cfg, storage.clone()).expect("raftlet node");
        Raftlet {
            node,
            storage,
            cs: None,
            zero_copy: opts.zero_copy,
        }
    }

    fn campaign(&mut self) {
        self.node.campaign().expect("campaign");
    }

    fn propose(&mut self, data: &[u8]) {
        // A fresh payload, as raft-rs's owned Vec<u8>: copied the way
        // raftlet copies a host's bytes (copy_payload).
        self.node
            .propose(raftlet::copy_payload(data))
            .expect("propose");
    }

    fn propose_batch(&mut self, data: &[u8], n: usize) {
        self.node
            .propose_batch((0..n).map(|_| raftlet::copy_payload(data)))
            .expect("propose batch");
    }

    fn propose_add_learner(&mut self, id: u64) {
        self.node
            .propose_conf_change(ConfChange {
                change_type: ConfChangeType::ConfChangeAddLearnerNode,
                node_id: id,
                ..ConfChange::default()
            })
            .expect("add learner");
    }

    fn read_index(&mut self, ctx: u64) {
        self.node
            .read_index(Bytes::copy_from_slice(&ctx.to_le_bytes()))
            .expect("read index");
    }

    fn tick(&mut self) {
        self.node.tick();
    }

    fn step(&mut self, data: &Bytes) {
        let m = if self.zero_copy {
            Message::decode_bytes(data)
        } else {
            Message::decode(data)
        }
        .expect("decode");
        let _ = self.node.step(m);
    }

    fn has_ready(&self) -> bool {
        self.node.has_ready()
    }

    fn cycle(&mut self, out: &mut Vec<Wire>, app: &mut Applied) {
        let mut rd = self.node.ready();
        {
            let mut s = self.storage.wl();
            if let Some(snap) = &rd.snapshot {
                s.apply_snapshot(snap.clone()).expect("apply snapshot");
                app.index = snap.metadata.index;
                app.snapshots += 1;
                self.cs = Some(Box::new(snap.metadata.conf_state.clone()));
            }
            if !rd.entries.is_empty() {
                // Taken, not cloned: nothing else here needs them.
                s.append_owned(&mut rd.entries).expect("append");
            }
            if let Some(hs) = rd.hard_state {
                s.set_hard_state(hs);
            }
        }
        let from = self.node.id();
        push_wire(
            from,
            rd.messages.iter().chain(rd.persisted_messages.iter()),
            out,
        );
        app.reads += rd.read_states.len() as u64;
        self.handle_committed(&rd.committed_entries, app);
        // As raft-rs's advance: the write's acknowledgement hands out what
        // it committed (a single voter's proposal, a leader's entries its
        // own acknowledgement completes) in the same cycle.
        let light = self.node.advance_light(rd);
        if let Some(commit) = light.commit_index() {
            self.storage.wl().commit_to(commit).expect("commit");
        }
        push_wire(from, light.messages().iter(), out);
        self.handle_committed(light.committed_entries(), app);
        self.node.advance_apply_light(light);
    }

    fn snapshot_and_compact(&mut self, index: u64, data: Option<Bytes>) {
        let mut s = self.storage.wl();
        s.create_snapshot(index, self.cs.as_deref().cloned(), data)
            .expect("create snapshot");
        s.compact(index).expect("compact");
    }

    fn compact(&mut self, index: u64) {
        self.storage.wl().compact(index).expect("compact");
    }

    fn last_index(&self) -> u64 {
        Storage::last_index(&self.storage).expect("last index")
    }

    fn is_leader(&self) -> bool {
        self.node.basic_status().soft_state.raft_state == StateRole::Leader
    }

    fn encode_heartbeat(from: u64, to: u64, term: u64) -> Bytes {
        let mut m = Message::new(MessageType::MsgHeartbeat, from, to);
        m.term = term;
        Bytes::from(m.encode_to_vec())
    }
}
