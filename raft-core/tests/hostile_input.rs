//! Hostile input is refused at the door: every peer message, proposal,
//! configuration or bootstrap that could overflow a term or index, poison
//! the log or change the quorum is refused with a typed error before
//! anything in the node changes (docs/architecture.md, "Refusals").
//!
//! Each test names the input, asserts the error, and asserts that the
//! node's term, log (last index, committed), configuration and progress did
//! not move: its status is the same, the storage holds the same, and it has
//! nothing new to hand out (no Ready).

use raftlet::pb::{
    ConfChange, ConfChangeI, ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2,
    ConfState, Entry, EntryType, HardState, Message, MessageType, Snapshot, SnapshotMetadata,
};
use raftlet::{
    Config, Error, MemoryStorage, RaftState, RawNode, StateRole, Storage, MAX_TERM_OR_INDEX,
};

/// Values "near u64::MAX" every numeric field is tried with: the largest
/// values, and the first one above the bound.
const HUGE: [u64; 3] = [u64::MAX, u64::MAX - 1, MAX_TERM_OR_INDEX + 1];

/// A node and the host around it: persists each Ready into the storage,
/// applies committed entries (conf changes through `apply_conf_change`,
/// logging refusals and treating them as no-ops, as the rustdoc of
/// `apply_conf_change` tells hosts to) and advances.
struct Host {
    rn: RawNode<MemoryStorage>,
    storage: MemoryStorage,
    /// Normal entries applied, with data.
    applied: Vec<Entry>,
    /// Conf changes refused on apply, with their index.
    refused_on_apply: Vec<(u64, Error)>,
}

impl Host {
    fn new(id: u64, voters: &[u64]) -> Host {
        let storage = MemoryStorage::new_with_conf_state(ConfState::from_voters(voters.to_vec()))
            .expect("valid configuration");
        Host::on(id, storage)
    }

    fn on(id: u64, storage: MemoryStorage) -> Host {
        let rn = RawNode::new(&Config::new(id), storage.clone()).expect("valid node");
        Host {
            rn,
            storage,
            applied: Vec::new(),
            refused_on_apply: Vec::new(),
        }
    }

    /// Handles every Ready; returns the messages the node sent.
    fn drain(&mut self) -> Vec<Message> {
        let mut out = Vec::new();
        while self.rn.has_ready() {
            let rd = self.rn.ready();
            {
                let mut s = self.storage.wl();
                if let Some(snap) = &rd.snapshot {
                    s.apply_snapshot(snap.clone()).expect("apply snapshot");
                }
                s.append(&rd.entries).expect("append");
                if let Some(hs) = rd.hard_state {
                    s.set_hard_state(hs);
                }
            }
            out.extend(rd.messages.iter().cloned());
            out.extend(rd.persisted_messages.iter().cloned());
            for e in &rd.committed_entries {
                match e.entry_type {
                    EntryType::EntryConfChange | EntryType::EntryConfChangeV2 => {
                        let res = ConfChangeI::from_entry(e)
                            .map_err(Error::from)
                            .and_then(|cc| self.rn.apply_conf_change(&cc));
                        match res {
                            Ok(cs) => self
                                .storage
                                .wl()
                                .set_conf_state(cs)
                                .expect("an applied configuration is valid"),
                            // Log and go on: the entry is a no-op.
                            Err(err) => self.refused_on_apply.push((e.index, err)),
                        }
                    }
                    _ => {
                        if !e.data().is_empty() {
                            self.applied.push(e.clone());
                        }
                    }
                }
            }
            self.rn.advance(rd);
        }
        out
    }

    /// Everything observable about the node and its storage.
    fn seen(&self) -> Seen {
        let st = self.rn.status();
        Seen {
            status: st.to_json(),
            hard_state: st.basic.hard_state,
            voters: st.config.voters.ids(),
            stored_last: self.last_index(),
            stored_state: self.storage.initial_state().expect("initial state"),
        }
    }

    fn term(&self) -> u64 {
        self.rn.basic_status().hard_state.term
    }

    fn committed(&self) -> u64 {
        self.rn.basic_status().hard_state.commit
    }

    fn last_index(&self) -> u64 {
        self.storage.last_index().expect("last index")
    }

    /// Steps `m`, expecting a refusal `want` accepts, and checks that
    /// nothing moved.
    fn refuse(&mut self, m: Message, want: fn(&Error) -> bool) {
        assert!(!self.rn.has_ready(), "drain before stepping");
        let before = self.seen();
        let desc = format!("{m:?}");
        match self.rn.step(m) {
            Err(e) => assert!(want(&e), "{desc}: unexpected error {e:?}"),
            Ok(()) => panic!("{desc} was accepted"),
        }
        self.assert_unchanged(&before, &desc);
    }

    fn assert_unchanged(&self, before: &Seen, what: &str) {
        assert!(
            !self.rn.has_ready(),
            "{what}: the node has something to hand out"
        );
        assert_eq!(&self.seen(), before, "{what}: the node changed");
    }
}

#[derive(Debug, PartialEq)]
struct Seen {
    status: String,
    hard_state: HardState,
    voters: std::collections::BTreeSet<u64>,
    stored_last: u64,
    stored_state: RaftState,
}

fn invalid_message(e: &Error) -> bool {
    matches!(e, Error::InvalidMessage(_))
}

fn conf_change_refused(e: &Error) -> bool {
    matches!(e, Error::ConfChangeRefused(_))
}

fn msg(t: MessageType, from: u64, to: u64, term: u64) -> Message {
    let mut m = Message::new(t, from, to);
    m.term = term;
    m
}

/// Node 1 of (1 2 3), following leader 2 at term 5 with entries 1..=3 of
/// term 5, committed to 2.
fn follower() -> Host {
    let mut h = Host::new(1, &[1, 2, 3]);
    let mut app = msg(MessageType::MsgApp, 2, 1, 5);
    app.entries = (1..=3).map(|i| Entry::new(5, i, vec![i as u8])).collect();
    app.commit = 2;
    h.rn.step(app).expect("append from the leader");
    h.drain();
    let st = h.rn.basic_status();
    assert_eq!(
        (
            st.hard_state.term,
            st.soft_state.leader_id,
            st.hard_state.commit
        ),
        (5, 2, 2)
    );
    assert_eq!(h.last_index(), 3);
    h
}

/// Node 1 of (1 2 3), elected leader with the votes of node 2, its empty
/// entry acknowledged by 2 and committed.
fn leader() -> Host {
    let mut h = Host::new(1, &[1, 2, 3]);
    h.rn.campaign().expect("campaign");
    for _ in 0..4 {
        for m in h.drain() {
            let resp = match m.msg_type {
                MessageType::MsgPreVote if m.to == 2 => MessageType::MsgPreVoteResp,
                MessageType::MsgVote if m.to == 2 => MessageType::MsgVoteResp,
                MessageType::MsgApp if m.to == 2 => {
                    let mut r = msg(MessageType::MsgAppResp, 2, 1, m.term);
                    r.index = m.index + m.entries.len() as u64;
                    h.rn.step(r).expect("append response");
                    continue;
                }
                _ => continue,
            };
            h.rn.step(msg(resp, 2, 1, m.term)).expect("vote");
        }
    }
    h.drain();
    let st = h.rn.basic_status();
    assert_eq!(st.soft_state.raft_state, StateRole::Leader);
    assert_eq!((st.hard_state.term, st.hard_state.commit), (1, 1));
    h
}

/// The types a peer can send over the network (everything but the local
/// ones).
fn network_types() -> impl Iterator<Item = MessageType> {
    MessageType::ALL.iter().copied().filter(|t| !t.is_local())
}

// ---------------------------------------------------------------------------
// Terms
// ---------------------------------------------------------------------------

/// Why: a message with term u64::MAX was accepted; the next campaign
/// wrapped the term to 0 (release) or panicked (debug), so the term went
/// backwards and a 3-node cluster stayed leaderless. Every message type a
/// peer can send is refused with such a term, by a follower and by a
/// leader, and the node's term, log and configuration stay put.
#[test]
fn term_near_u64_max_in_every_peer_message_is_refused() {
    for mut h in [follower(), leader()] {
        for t in network_types() {
            for term in HUGE {
                let mut m = msg(t, 2, 1, term);
                if t == MessageType::MsgProp {
                    m.entries.push(Entry::new(0, 0, b"p".to_vec()));
                }
                h.refuse(m, invalid_message);
            }
        }
        // The node still works.
        let term = h.term();
        if h.rn.basic_status().soft_state.raft_state == StateRole::Leader {
            let last = h.last_index();
            h.rn.propose(b"still leading".to_vec()).expect("propose");
            h.drain();
            assert_eq!(h.last_index(), last + 1);
        } else {
            // A campaign raises the term by one once the pre-vote round
            // is granted.
            h.rn.campaign().expect("campaign");
            h.drain();
            h.rn.step(msg(MessageType::MsgPreVoteResp, 2, 1, term + 1))
                .expect("pre-vote granted");
            h.drain();
            assert_eq!(h.term(), term + 1);
        }
    }
}

/// Why: the bound itself must be usable without overflow, and a node that
/// reaches it must stop rather than wrap: a heartbeat at term
/// MAX_TERM_OR_INDEX is accepted, after which `campaign` is refused with
/// InvalidState and election timeouts do not campaign either, so the term
/// never goes past the bound or back to 0.
#[test]
fn a_node_at_the_term_bound_never_wraps() {
    let mut h = follower();
    h.rn.step(msg(MessageType::MsgHeartbeat, 2, 1, MAX_TERM_OR_INDEX))
        .expect("the bound itself is accepted");
    h.drain();
    assert_eq!(h.term(), MAX_TERM_OR_INDEX);
    assert!(matches!(h.rn.campaign(), Err(Error::InvalidState(_))));
    for _ in 0..100 {
        h.rn.tick();
        h.drain();
        assert_eq!(h.term(), MAX_TERM_OR_INDEX);
        assert_eq!(
            h.rn.basic_status().soft_state.raft_state,
            StateRole::Follower
        );
    }
    // Its log still follows the leader.
    let mut app = msg(MessageType::MsgApp, 2, 1, MAX_TERM_OR_INDEX);
    app.index = 3;
    app.log_term = 5;
    app.entries = vec![Entry::new(MAX_TERM_OR_INDEX, 4, b"x".to_vec())];
    app.commit = 4;
    h.rn.step(app).expect("append at the bound");
    h.drain();
    assert_eq!((h.last_index(), h.committed()), (4, 4));
}

// ---------------------------------------------------------------------------
// Indexes
// ---------------------------------------------------------------------------

/// Why: indexes, log terms and commit indexes near u64::MAX in an append
/// would overflow the log's and the follower's arithmetic (`index + 1`,
/// `prev + len`). Each field of MsgApp, and each entry's index and term, is
/// refused above the bound.
#[test]
fn msg_app_with_huge_index_commit_or_log_term_is_refused() {
    let mut h = follower();
    type Set = fn(&mut Message, u64);
    let fields: [(&str, Set); 6] = [
        ("index", |m, v| m.index = v),
        ("log_term", |m, v| m.log_term = v),
        ("commit", |m, v| m.commit = v),
        ("reject_hint", |m, v| m.reject_hint = v),
        ("entry index", |m, v| m.entries[0].index = v),
        ("entry term", |m, v| m.entries[0].term = v),
    ];
    for (name, set) in fields {
        for v in HUGE {
            let mut m = msg(MessageType::MsgApp, 2, 1, 5);
            m.index = 3;
            m.log_term = 5;
            m.entries = vec![Entry::new(5, 4, b"x".to_vec())];
            set(&mut m, v);
            let before = h.seen();
            let r = h.rn.step(m);
            assert!(
                matches!(r, Err(Error::InvalidMessage(ref s)) if !s.is_empty()),
                "{name} {v}: {r:?}"
            );
            h.assert_unchanged(&before, name);
        }
    }
    assert_eq!((h.last_index(), h.committed()), (3, 2));
}

/// Why: a MsgAppResp at index u64::MAX overflowed Progress::maybe_update
/// (`next = index + 1`), and a rejection's hint overflowed the probe
/// arithmetic. The leader refuses both, and every peer's progress stays
/// as it was (the status holds it).
#[test]
fn msg_app_resp_with_huge_index_or_hint_is_refused() {
    let mut h = leader();
    for v in HUGE {
        let mut ack = msg(MessageType::MsgAppResp, 2, 1, 1);
        ack.index = v;
        h.refuse(ack, invalid_message);

        let mut reject = msg(MessageType::MsgAppResp, 3, 1, 1);
        reject.reject = true;
        reject.index = 1;
        reject.reject_hint = v;
        h.refuse(reject.clone(), invalid_message);
        reject.reject_hint = 0;
        reject.log_term = v;
        h.refuse(reject, invalid_message);

        let mut hb = msg(MessageType::MsgHeartbeatResp, 3, 1, 1);
        hb.commit = v;
        h.refuse(hb, invalid_message);
    }
    // At the bound the leader's arithmetic does not overflow either (a
    // peer claiming that much is lying, but it cannot crash the leader).
    let mut ack = msg(MessageType::MsgAppResp, 2, 1, 1);
    ack.index = MAX_TERM_OR_INDEX;
    h.rn.step(ack).expect("the bound itself is accepted");
    h.drain();
    assert_eq!(h.committed(), 1);
    h.rn.propose(b"after".to_vec())
        .expect("the leader still works");
    h.drain();
}

/// Why: a heartbeat's commit index near u64::MAX must not reach the log.
#[test]
fn msg_heartbeat_with_huge_commit_is_refused() {
    let mut h = follower();
    for v in HUGE {
        let mut m = msg(MessageType::MsgHeartbeat, 2, 1, 5);
        m.commit = v;
        h.refuse(m, invalid_message);
    }
    assert_eq!(h.committed(), 2);
}

/// Why: a MsgSnap at index u64::MAX overflowed Unstable::restore
/// (`offset = index + 1`). Snapshot indexes and terms above the bound are
/// refused, and so is a snapshot whose configuration names an id that
/// cannot be a member (it would install a phantom voter).
#[test]
fn msg_snap_with_huge_metadata_or_reserved_ids_is_refused() {
    let mut h = follower();
    let snap = |index: u64, term: u64, voters: Vec<u64>| {
        let mut m = msg(MessageType::MsgSnap, 2, 1, 5);
        m.snapshot = Some(Box::new(Snapshot {
            data: Some(b"state".to_vec().into()),
            metadata: SnapshotMetadata {
                conf_state: ConfState::from_voters(voters),
                index,
                term,
            },
        }));
        m
    };
    for v in HUGE {
        h.refuse(snap(v, 5, vec![1, 2, 3]), invalid_message);
        h.refuse(snap(10, v, vec![1, 2, 3]), invalid_message);
    }
    for id in [0, u64::MAX, u64::MAX - 1] {
        h.refuse(snap(10, 5, vec![1, 2, id]), invalid_message);
    }
    // A snapshot at the bound itself is restored without overflow; the
    // node then cannot campaign (its new leader's first entry would pass
    // the bound) but does not crash or wrap.
    h.rn.step(snap(MAX_TERM_OR_INDEX, 5, vec![1, 2, 3]))
        .expect("the bound itself is accepted");
    h.drain();
    assert_eq!(h.last_index(), MAX_TERM_OR_INDEX);
    assert!(matches!(h.rn.campaign(), Err(Error::InvalidState(_))));
    for _ in 0..100 {
        h.rn.tick();
        h.drain();
    }
    assert_eq!(h.term(), 5);
}

// ---------------------------------------------------------------------------
// Message types and senders
// ---------------------------------------------------------------------------

/// Why: messages of a type raftpb does not name were accepted by step (and
/// by the C `raftlet_message_decode_header`). The decoder keeps unknown
/// enum values (proto2 enums are open), so step refuses them.
#[test]
fn unknown_message_types_are_refused() {
    for mut h in [follower(), leader()] {
        for t in [24, 25, 100, i32::MAX, -1, i32::MIN] {
            let m = msg(MessageType(t), 2, 1, 5);
            h.refuse(m, invalid_message);
        }
    }
}

/// Why: a message peers send in their own name from id 0 (no node) or
/// from etcd's reserved ids would make a follower take that id as its
/// leader or count its vote.
#[test]
fn peer_messages_from_ids_that_cannot_be_members_are_refused() {
    let mut h = follower();
    for from in [0, u64::MAX, u64::MAX - 1] {
        for t in [
            MessageType::MsgApp,
            MessageType::MsgHeartbeat,
            MessageType::MsgVote,
            MessageType::MsgPreVote,
            MessageType::MsgTimeoutNow,
        ] {
            let m = msg(t, from, 1, 9);
            h.refuse(m, |e| {
                matches!(e, Error::InvalidMessage(_) | Error::StepLocalMsg)
            });
        }
    }
    assert_eq!(h.rn.basic_status().soft_state.leader_id, 2);
}

// ---------------------------------------------------------------------------
// Conf changes at propose time
// ---------------------------------------------------------------------------

fn v1(t: i32, id: u64) -> ConfChangeI {
    ConfChangeI::V1(ConfChange {
        change_type: ConfChangeType(t),
        node_id: id,
        ..ConfChange::default()
    })
}

fn v2(transition: i32, changes: &[(i32, u64)]) -> ConfChangeI {
    ConfChangeI::V2(ConfChangeV2 {
        transition: ConfChangeTransition(transition),
        changes: changes
            .iter()
            .map(|&(t, id)| ConfChangeSingle::new(ConfChangeType(t), id))
            .collect(),
        context: None,
    })
}

/// Proposes `cc` and checks the refusal appended nothing, on any node.
fn refuse_proposal(h: &mut Host, cc: ConfChangeI) {
    assert!(!h.rn.has_ready());
    let before = h.seen();
    let desc = format!("{cc:?}");
    let r = h.rn.propose_conf_change(cc);
    assert!(
        matches!(r, Err(Error::ConfChangeRefused(_))),
        "{desc}: {r:?}"
    );
    h.assert_unchanged(&before, &desc);
}

/// Why: a ConfChange of unknown type was accepted at propose time,
/// committed on every node, and then failed to apply everywhere: one bad
/// proposal poisoned the whole cluster's log. Refused on the leader and on
/// a follower (before forwarding), V1 and V2, nothing appended.
#[test]
fn unknown_conf_change_types_are_refused_at_propose() {
    for mut h in [leader(), follower()] {
        for t in [4, 5, 100, -1, i32::MAX] {
            refuse_proposal(&mut h, v1(t, 4));
            refuse_proposal(&mut h, v2(0, &[(t, 4)]));
            refuse_proposal(&mut h, v2(1, &[(3, 4), (t, 5)]));
        }
        // An unknown transition is refused too (etcd panics applying it).
        for tr in [3, 7, -1] {
            refuse_proposal(&mut h, v2(tr, &[(3, 4)]));
        }
    }
}

/// Why: AddNode with the reserved id u64::MAX added a phantom voter and
/// changed the quorum (3 of 4 instead of 2 of 3). Ids 0, u64::MAX and
/// u64::MAX - 1 are refused in every change type, V1 and V2.
#[test]
fn reserved_node_ids_are_refused_at_propose() {
    for mut h in [leader(), follower()] {
        for id in [0, u64::MAX, u64::MAX - 1] {
            for t in 0..4 {
                refuse_proposal(&mut h, v1(t, id));
                refuse_proposal(&mut h, v2(0, &[(t, id)]));
            }
            refuse_proposal(&mut h, v2(2, &[(3, 4), (0, id)]));
        }
    }
    // The leader still accepts a good change.
    let mut h = leader();
    h.rn.propose_conf_change(v1(3, 4))
        .expect("adding learner 4 is fine");
}

/// Why: a follower that is an etcd node forwards whatever its host
/// proposes; the raftlet leader must not append it as a conf change. As
/// with every refused forwarded change, it becomes an empty normal entry.
#[test]
fn a_forwarded_unknown_conf_change_becomes_an_empty_entry() {
    let mut h = leader();
    let last = h.last_index();
    for cc in [v1(9, 4), v1(0, u64::MAX)] {
        let (entry_type, data) = cc.to_entry_parts();
        let mut m = msg(MessageType::MsgProp, 2, 1, 0);
        m.entries.push(Entry {
            entry_type,
            data: Some(data),
            ..Entry::default()
        });
        h.rn.step(m).expect("a forwarded proposal is not refused");
    }
    h.drain();
    let ents = h
        .storage
        .entries(last + 1, last + 3, u64::MAX)
        .expect("appended");
    assert_eq!(ents.len(), 2);
    for e in ents {
        assert_eq!(e.entry_type, EntryType::EntryNormal, "{e:?}");
        assert!(e.data().is_empty());
    }
}

// ---------------------------------------------------------------------------
// Configurations in the storage
// ---------------------------------------------------------------------------

/// Why: MemoryStorage::set_conf_state accepted voter 0 and a voter that is
/// also a learner, so a node started from it had a configuration no
/// membership change can produce. Refused, and the configuration held is
/// kept.
#[test]
fn set_conf_state_refuses_invalid_configurations() {
    let s = MemoryStorage::new_with_conf_state(ConfState::from_voters([1, 2, 3])).unwrap();
    let bad = [
        ConfState::from_voters([0]),
        ConfState::from_voters([1, 0]),
        ConfState::from_voters([1, u64::MAX]),
        ConfState::from_voters([1, u64::MAX - 1]),
        ConfState::from_voters([1, 1]),
        ConfState {
            voters: vec![1],
            learners: vec![1],
            ..ConfState::default()
        },
        ConfState {
            voters: vec![1, 2],
            learners: vec![u64::MAX],
            ..ConfState::default()
        },
        ConfState {
            voters: vec![1, 2],
            voters_outgoing: vec![1, 2, 3],
            learners: vec![3],
            ..ConfState::default()
        },
    ];
    for cs in bad {
        let r = s.wl().set_conf_state(cs.clone());
        assert!(
            matches!(r, Err(Error::ConfChangeRefused(_))),
            "{cs:?}: {r:?}"
        );
        assert!(MemoryStorage::new_with_conf_state(cs.clone()).is_err());
        let snap = Snapshot {
            data: None,
            metadata: SnapshotMetadata {
                conf_state: cs.clone(),
                index: 10,
                term: 1,
            },
        };
        assert!(s.wl().apply_snapshot(snap).is_err(), "{cs:?}");
        assert_eq!(
            s.initial_state().unwrap().conf_state,
            ConfState::from_voters([1, 2, 3])
        );
        assert_eq!(s.last_index().unwrap(), 0);
    }
}

/// A storage whose initial state the test chooses freely (MemoryStorage
/// refuses to hold what these tests need to start from).
struct Forged {
    inner: MemoryStorage,
    state: RaftState,
}

impl Storage for Forged {
    fn initial_state(&self) -> raftlet::Result<RaftState> {
        Ok(self.state.clone())
    }
    fn entries(&self, lo: u64, hi: u64, max: u64) -> raftlet::Result<Vec<Entry>> {
        self.inner.entries(lo, hi, max)
    }
    fn term(&self, i: u64) -> raftlet::Result<u64> {
        self.inner.term(i)
    }
    fn first_index(&self) -> raftlet::Result<u64> {
        self.inner.first_index()
    }
    fn last_index(&self) -> raftlet::Result<u64> {
        self.inner.last_index()
    }
    fn snapshot(&self, i: u64, to: u64) -> raftlet::Result<Snapshot> {
        self.inner.snapshot(i, to)
    }
}

/// Why: a storage written by a host that accepted hostile input (or a
/// corrupt one) would start a node beyond the bound, and its first campaign
/// would overflow. RawNode::new refuses a hard state term or a log above
/// the bound, and a stored configuration naming an id that cannot be a
/// member, with InvalidState.
#[test]
fn raw_node_new_refuses_a_storage_beyond_the_bound() {
    let cs = ConfState::from_voters([1, 2, 3]);
    let invalid_state = |s: MemoryStorage, state: RaftState| {
        let r = RawNode::new(&Config::new(1), Forged { inner: s, state });
        assert!(matches!(r, Err(Error::InvalidState(_))), "{:?}", r.err());
    };
    // The hard state's term.
    for term in HUGE {
        let state = RaftState {
            hard_state: HardState {
                term,
                vote: 0,
                commit: 0,
            },
            conf_state: cs.clone(),
        };
        invalid_state(MemoryStorage::new(), state);
    }
    // An entry's term.
    let s = MemoryStorage::new();
    s.wl().append(&[Entry::new(u64::MAX, 1, vec![])]).unwrap();
    invalid_state(
        s,
        RaftState {
            hard_state: HardState::default(),
            conf_state: cs.clone(),
        },
    );
    // The log's last index (a snapshot past the bound).
    let s = MemoryStorage::new();
    s.wl()
        .apply_snapshot(Snapshot {
            data: None,
            metadata: SnapshotMetadata {
                conf_state: cs.clone(),
                index: MAX_TERM_OR_INDEX + 1,
                term: 1,
            },
        })
        .unwrap();
    invalid_state(
        s.clone(),
        RaftState {
            hard_state: HardState::default(),
            conf_state: cs.clone(),
        },
    );
    // MemoryStorage itself is refused the same way.
    let r = RawNode::new(&Config::new(1), s);
    assert!(matches!(r, Err(Error::InvalidState(_))));
    // A configuration with a phantom voter.
    invalid_state(
        MemoryStorage::new(),
        RaftState {
            hard_state: HardState::default(),
            conf_state: ConfState::from_voters([1, 2, u64::MAX]),
        },
    );
    // At the bound the node starts (and cannot campaign).
    let state = RaftState {
        hard_state: HardState {
            term: MAX_TERM_OR_INDEX,
            vote: 0,
            commit: 0,
        },
        conf_state: cs,
    };
    let mut rn = RawNode::new(
        &Config::new(1),
        Forged {
            inner: MemoryStorage::new(),
            state,
        },
    )
    .expect("the bound itself is accepted");
    assert!(matches!(rn.campaign(), Err(Error::InvalidState(_))));
}

// ---------------------------------------------------------------------------
// Bootstrap
// ---------------------------------------------------------------------------

/// Why: a refused bootstrap (voter id 0) still handed out an entry and a
/// hard state, and a retry then failed with "nonempty Storage"; {1,0} was
/// accepted (leaving voters {1}) while {0,1} was refused (but still left
/// voters {1}). Every bad membership is refused with nothing left behind,
/// and a corrected retry succeeds.
#[test]
fn refused_bootstrap_leaves_no_trace_and_a_retry_succeeds() {
    let mut h = Host::on(1, MemoryStorage::new());
    let before = h.seen();
    let bad: [(&[u64], &[u64]); 7] = [
        (&[1, 0], &[]),
        (&[0, 1], &[]),
        (&[1], &[1]),
        (&[1, u64::MAX], &[]),
        (&[1], &[u64::MAX - 1]),
        (&[1, 1], &[]),
        (&[1], &[2, 2]),
    ];
    for (voters, learners) in bad {
        let r = h.rn.bootstrap(voters, learners);
        assert!(
            matches!(r, Err(Error::ConfChangeRefused(_))),
            "{voters:?} {learners:?}: {r:?}"
        );
        h.assert_unchanged(&before, &format!("bootstrap {voters:?} {learners:?}"));
    }
    assert!(matches!(
        h.rn.bootstrap(&[], &[2]),
        Err(Error::InvalidState(_))
    ));
    h.assert_unchanged(&before, "bootstrap without voters");

    h.rn.bootstrap(&[1], &[2])
        .expect("a corrected retry succeeds");
    h.drain();
    let st = h.rn.status();
    assert_eq!(st.config.voters.ids().into_iter().collect::<Vec<_>>(), [1]);
    assert_eq!(st.config.learners.iter().copied().collect::<Vec<_>>(), [2]);
    assert_eq!((h.term(), h.committed(), h.last_index()), (1, 2, 2));
    assert!(h.refused_on_apply.is_empty());
}

// ---------------------------------------------------------------------------
// A committed conf change no node can apply
// ---------------------------------------------------------------------------

/// Why: an etcd leader does not validate conf changes, so a change of an
/// unknown type (or naming u64::MAX, or with an unknown transition) can be
/// committed. The follower's apply_conf_change must return a typed error
/// and leave the configuration unchanged, and the node must not wedge: it
/// applies later entries, campaigns once the leader goes quiet, and leads.
#[test]
fn a_committed_unappliable_conf_change_does_not_wedge_the_follower() {
    let mut h = follower();
    let conf_before = h.rn.status().config;
    // The etcd leader 2 appends three poisoned conf changes and a normal
    // entry, and commits them all.
    let poison = [v1(7, 4), v1(0, u64::MAX), v2(5, &[(3, 4)])];
    let mut app = msg(MessageType::MsgApp, 2, 1, 5);
    app.index = 3;
    app.log_term = 5;
    for (i, cc) in poison.iter().enumerate() {
        let (entry_type, data) = cc.to_entry_parts();
        app.entries.push(Entry {
            entry_type,
            term: 5,
            index: 4 + i as u64,
            data: Some(data),
        });
    }
    app.entries.push(Entry::new(5, 7, b"later".to_vec()));
    app.commit = 7;
    h.rn.step(app).expect("the leader's append");
    h.drain();

    let refused: Vec<u64> = h.refused_on_apply.iter().map(|(i, _)| *i).collect();
    assert_eq!(refused, [4, 5, 6]);
    for (_, e) in &h.refused_on_apply {
        assert!(conf_change_refused(e), "{e:?}");
    }
    assert_eq!(h.rn.status().config, conf_before, "configuration unchanged");
    assert_eq!(h.rn.basic_status().applied, 7);
    assert_eq!(
        h.applied.last().map(|e| e.data().to_vec()),
        Some(b"later".to_vec())
    );

    // Later entries keep applying.
    let mut app = msg(MessageType::MsgApp, 2, 1, 5);
    app.index = 7;
    app.log_term = 5;
    app.entries = vec![Entry::new(5, 8, b"more".to_vec())];
    app.commit = 8;
    h.rn.step(app).expect("append");
    h.drain();
    assert_eq!(
        h.applied.last().map(|e| e.data().to_vec()),
        Some(b"more".to_vec())
    );

    // The leader goes quiet: the follower campaigns on its own (a node
    // with an unapplied conf change would not), wins and leads.
    let mut campaigned = false;
    for _ in 0..100 {
        h.rn.tick();
        for m in h.drain() {
            let resp = match m.msg_type {
                MessageType::MsgPreVote if m.to == 3 => MessageType::MsgPreVoteResp,
                MessageType::MsgVote if m.to == 3 => MessageType::MsgVoteResp,
                _ => continue,
            };
            campaigned = true;
            h.rn.step(msg(resp, 3, 1, m.term)).expect("vote");
        }
        if h.rn.basic_status().soft_state.raft_state == StateRole::Leader {
            break;
        }
    }
    h.drain();
    assert!(campaigned, "the follower never campaigned");
    assert_eq!(h.rn.basic_status().soft_state.raft_state, StateRole::Leader);
    assert_eq!(h.term(), 6);
    h.rn.propose(b"as leader".to_vec())
        .expect("the new leader proposes");
    h.drain();
    assert_eq!(h.last_index(), 10);
}

/// Why: the input kept as fuzz/seeds/step_arbitrary/regression-term-past-bound,
/// found by the `step_arbitrary` fuzz target within seconds when step's
/// message check is disabled: the first operation steps a MsgReadIndexResp
/// of term u64::MAX - 2 from node 1 into node 3 of a fresh cluster, which
/// took node 3's term past the bound (and its next campaign past
/// u64::MAX). With the check, the message is refused and node 3 can still
/// campaign.
#[test]
fn fuzz_regression_read_index_resp_past_the_term_bound() {
    let mut h = Host::new(3, &[1, 2, 3]);
    let mut m = msg(MessageType::MsgReadIndexResp, 1, 3, u64::MAX - 2);
    m.index = 0;
    h.refuse(m, invalid_message);
    assert_eq!(h.term(), 0);
    h.rn.campaign().expect("campaign");
    h.drain();
    // Pre-vote is on by default: the campaign starts at term 0.
    assert_eq!(
        h.rn.basic_status().soft_state.raft_state,
        StateRole::PreCandidate
    );
    assert_eq!(h.term(), 0);
}
