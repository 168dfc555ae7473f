//! Ported etcd tests: raw_node (rawnode_test.go and node_test.go), plus
//! raftlet's own tests of the Ready cycle: asynchronous application,
//! persisted messages, must_sync and bootstrap.
//!
//! etcd's `Node` runs a goroutine around a `RawNode`; raftlet has no `Node`.
//! The node_test.go tests that check behaviour a `RawNode` host can see are
//! adapted to `RawNode`; those that only test Go channels, goroutines and
//! contexts (TestNodeStepUnblock, TestNodeStop) have no counterpart.

use std::cell::Cell;
use std::rc::Rc;

use bytes::Bytes;

use super::{
    ent, msg, msg_term, new_test_config, new_test_raft, new_test_raft_with_config,
    new_test_storage, Network,
};
use crate::config::Config;
use crate::errors::{Error, Result};
use crate::log::ents_size;
use crate::pb::{
    ConfChange, ConfChangeI, ConfChangeSingle, ConfChangeTransition, ConfChangeType, ConfChangeV2,
    ConfState, Entry, EntryType, HardState, Message, MessageType, Snapshot, SnapshotMetadata,
};
use crate::quorum::{JointConfig, MajorityConfig};
use crate::raft::{ReadState, SoftState, StateRole};
use crate::storage::{MemoryStorage, RaftState, Storage};
use crate::tracker::Config as TrackerConfig;
use crate::{RawNode, Ready};

type TestRawNode = RawNode<MemoryStorage>;

/// etcd `newTestRawNode`.
fn new_test_raw_node(id: u64, election: usize, heartbeat: usize, s: MemoryStorage) -> TestRawNode {
    RawNode::new(&new_test_config(id, election, heartbeat), s).expect("valid raw node")
}

/// A comparable copy of every field of a Ready (etcd compares whole Ready
/// structs; raftlet's Ready has a private sequence number).
#[derive(Debug, Default, PartialEq)]
struct ReadyView {
    soft_state: Option<SoftState>,
    hard_state: Option<HardState>,
    read_states: Vec<ReadState>,
    entries: Vec<Entry>,
    snapshot: Option<Snapshot>,
    committed_entries: Vec<Entry>,
    messages: Vec<Message>,
    persisted_messages: Vec<Message>,
    must_sync: bool,
}

fn view(rd: &Ready) -> ReadyView {
    ReadyView {
        soft_state: rd.soft_state,
        hard_state: rd.hard_state,
        read_states: rd.read_states.clone(),
        entries: rd.entries.clone(),
        snapshot: rd.snapshot.clone(),
        committed_entries: rd.committed_entries.clone(),
        messages: rd.messages.clone(),
        persisted_messages: rd.persisted_messages.clone(),
        must_sync: rd.must_sync,
    }
}

/// What etcd's tests do with a Ready's entries: `storage.Append(rd.Entries)`.
fn append(s: &MemoryStorage, rd: &Ready) {
    s.wl().append(&rd.entries).expect("append");
}

/// Whether the Ready names `id` as leader.
fn leads(rd: &Ready, id: u64) -> bool {
    rd.soft_state.is_some_and(|ss| ss.leader_id == id)
}

/// Handles Readies like a synchronous host (persist, apply conf changes,
/// advance) until there is none; returns every committed entry handed out.
fn stabilize(rn: &mut TestRawNode, s: &MemoryStorage) -> Vec<Entry> {
    let mut applied = Vec::new();
    let mut rounds = 0;
    while rn.has_ready() {
        rounds += 1;
        assert!(rounds < 100, "no quiescence after 100 Readies");
        let rd = rn.ready();
        if let Some(snap) = &rd.snapshot {
            s.wl().apply_snapshot(snap.clone()).expect("apply snapshot");
        }
        append(s, &rd);
        if let Some(hs) = rd.hard_state {
            s.wl().set_hard_state(hs);
        }
        for e in &rd.committed_entries {
            if e.entry_type != EntryType::EntryNormal {
                let cc = ConfChangeI::from_entry(e).expect("conf change entry");
                rn.apply_conf_change(&cc).expect("apply conf change");
            }
        }
        applied.extend(rd.committed_entries.iter().cloned());
        rn.advance(rd);
    }
    applied
}

/// A single-voter node that has campaigned, won, and applied its empty entry.
fn new_single_leader(c: &Config) -> (TestRawNode, MemoryStorage) {
    let s = new_test_storage(&[1], &[]);
    let mut rn = RawNode::new(c, s.clone()).expect("valid raw node");
    rn.campaign().expect("campaign");
    stabilize(&mut rn, &s);
    assert_eq!(rn.raft().state, StateRole::Leader);
    assert_eq!(rn.raft().raft_log.applied, 1);
    (rn, s)
}

/// A leader of voters 1..=n (n is 2 or 3): it campaigns, and peer 2 votes
/// for it.
fn new_multi_leader(c: &Config, n: u64) -> (TestRawNode, MemoryStorage) {
    let voters: Vec<u64> = (1..=n).collect();
    let s = new_test_storage(&voters, &[]);
    let mut rn = RawNode::new(c, s.clone()).expect("valid raw node");
    rn.campaign().expect("campaign");
    let rd = rn.ready();
    s.wl()
        .set_hard_state(rd.hard_state.expect("vote to persist"));
    rn.advance(rd);
    let term = rn.raft().term;
    rn.step(msg_term(MessageType::MsgVoteResp, 2, 1, term))
        .expect("vote response");
    assert_eq!(rn.raft().state, StateRole::Leader);
    (rn, s)
}

fn data_entry(term: u64, index: u64, data: &'static str) -> Entry {
    Entry::new(term, index, Bytes::from_static(data.as_bytes()))
}

/// Every message type of raftpb, by number.
fn all_message_types() -> Vec<MessageType> {
    let ts: Vec<MessageType> = (0..)
        .map(MessageType)
        .take_while(|t| t.name().is_some())
        .collect();
    assert_eq!(ts.len(), 24, "raftpb has 24 message types");
    ts
}

/// etcd: TestRawNodeStep
#[test]
fn test_raw_node_step() {
    for t in all_message_types() {
        let s = MemoryStorage::new();
        s.wl().set_hard_state(HardState {
            term: 1,
            vote: 0,
            commit: 1,
        });
        s.wl().append(&[ent(1, 1)]).expect("append");
        s.wl()
            .apply_snapshot(Snapshot {
                data: None,
                metadata: SnapshotMetadata {
                    conf_state: ConfState::from_voters([1]),
                    index: 1,
                    term: 1,
                },
            })
            .expect("apply snapshot");
        // Non-local messages with zero fields (vote requests, appends, ...)
        // must be handled without tripping an assertion.
        let mut rn = new_test_raw_node(1, 10, 1, s);
        let res = rn.step(Message::new(t, 0, 0));
        if t.is_local() || crate::raw_node::sent_by_peer(t) {
            // raftlet: a message a peer sends in its own name always
            // carries its term; one without a term is refused as local
            // (etcd would process it as if it were a local message).
            assert_eq!(res, Err(Error::StepLocalMsg), "{t}");
        } else if t.is_response() {
            // raftlet: from 0 is never a peer, so every response is refused
            // (etcd exempts only its local storage threads).
            assert_eq!(res, Err(Error::StepPeerNotFound), "{t}");
        } else {
            assert!(
                !matches!(res, Err(Error::StepLocalMsg | Error::StepPeerNotFound)),
                "{t}: {res:?}"
            );
        }
    }
}

/// Responses are refused from nodes that are not in the configuration, and
/// accepted from members.
///
/// etcd: TestRawNodeStep (ErrStepPeerNotFound)
#[test]
fn test_raw_node_step_peer_not_found() {
    for t in all_message_types() {
        if !t.is_response() || t.is_local() {
            continue;
        }
        let mut rn = new_test_raw_node(1, 10, 1, new_test_storage(&[1, 2], &[]));
        let mut m = msg_term(t, 3, 1, 1);
        m.index = 1;
        assert_eq!(rn.step(m.clone()), Err(Error::StepPeerNotFound), "{t}");
        m.from = 2;
        let res = rn.step(m);
        assert!(
            !matches!(res, Err(Error::StepPeerNotFound)),
            "{t} from a member: {res:?}"
        );
    }
}

/// etcd: TestNodeStep (adapted: etcd's Node routes proposals and network
/// messages to two channels and drops local types; on a RawNode, local
/// types from the network are refused without any effect, and every other
/// type reaches the state machine).
#[test]
fn test_node_step() {
    let mut c = new_test_config(1, 10, 1);
    c.check_quorum = true;
    let (mut rn, s) = new_multi_leader(&c, 3);
    stabilize(&mut rn, &s);
    let last = rn.raft().raft_log.last_index();
    for t in all_message_types() {
        if !t.is_local() {
            continue;
        }
        let m = msg_term(t, 2, 1, 1);
        assert_eq!(rn.step(m), Err(Error::StepLocalMsg), "{t}");
        assert_eq!(rn.raft().state, StateRole::Leader, "{t}");
        assert_eq!(rn.raft().term, 1, "{t}");
        assert!(!rn.has_ready(), "{t} had an effect");
    }
    assert_eq!(rn.raft().raft_log.last_index(), last);
    // The same local messages have effects when raft generates them itself:
    // a heartbeat round, and a check-quorum that finds no active peer.
    rn.raft_mut()
        .step(msg(MessageType::MsgBeat, 1, 1))
        .expect("beat");
    assert!(rn.has_ready());
    rn.raft_mut()
        .step(msg(MessageType::MsgCheckQuorum, 1, 1))
        .expect("check quorum");
    assert_eq!(rn.raft().state, StateRole::Follower);

    // A proposal forwarded from a peer goes through the proposal path.
    let (mut rn, s) = new_multi_leader(&new_test_config(1, 10, 1), 3);
    stabilize(&mut rn, &s);
    let last = rn.raft().raft_log.last_index();
    let mut m = msg(MessageType::MsgProp, 2, 1);
    m.entries = vec![data_entry(0, 0, "somedata")];
    rn.step(m).expect("forwarded proposal");
    assert_eq!(rn.raft().raft_log.last_index(), last + 1);
    let rd = rn.ready();
    assert_eq!(rd.entries.len(), 1);
    assert_eq!(rd.entries[0].data(), b"somedata");
}

/// etcd: TestRawNodeProposeAndConfChange
#[test]
fn test_raw_node_propose_and_conf_change() {
    const EXPLICIT: ConfChangeTransition = ConfChangeTransition::ConfChangeTransitionJointExplicit;
    const IMPLICIT: ConfChangeTransition = ConfChangeTransition::ConfChangeTransitionJointImplicit;
    const ADD: ConfChangeType = ConfChangeType::ConfChangeAddNode;
    const ADD_LEARNER: ConfChangeType = ConfChangeType::ConfChangeAddLearnerNode;
    let v2 = |changes: Vec<(ConfChangeType, u64)>, transition| {
        ConfChangeI::V2(ConfChangeV2 {
            transition,
            changes: changes
                .into_iter()
                .map(|(t, id)| ConfChangeSingle::new(t, id))
                .collect(),
            context: None,
        })
    };
    let cs = |voters: &[u64], outgoing: &[u64], learners: &[u64], next: &[u64], auto| ConfState {
        voters: voters.to_vec(),
        voters_outgoing: outgoing.to_vec(),
        learners: learners.to_vec(),
        learners_next: next.to_vec(),
        auto_leave: auto,
    };
    let auto = ConfChangeTransition::ConfChangeTransitionAuto;
    let tests: Vec<(ConfChangeI, ConfState, Option<ConfState>)> = vec![
        // A V1 change.
        (
            ConfChangeI::V1(ConfChange {
                change_type: ADD,
                node_id: 2,
                ..ConfChange::default()
            }),
            cs(&[1, 2], &[], &[], &[], false),
            None,
        ),
        // The same as V2: no joint configuration needed.
        (
            v2(vec![(ADD, 2)], auto),
            cs(&[1, 2], &[], &[], &[], false),
            None,
        ),
        // Adding a learner instead.
        (
            v2(vec![(ADD_LEARNER, 2)], auto),
            cs(&[1], &[], &[2], &[], false),
            None,
        ),
        // Joint consensus on request, left explicitly.
        (
            v2(vec![(ADD_LEARNER, 2)], EXPLICIT),
            cs(&[1], &[1], &[2], &[], false),
            Some(cs(&[1], &[], &[2], &[], false)),
        ),
        // Joint consensus on request, left automatically.
        (
            v2(vec![(ADD_LEARNER, 2)], IMPLICIT),
            cs(&[1], &[1], &[2], &[], true),
            Some(cs(&[1], &[], &[2], &[], false)),
        ),
        // Add a voter and demote n1: joint consensus is required and n1 waits
        // in learners_next.
        (
            v2(vec![(ADD, 2), (ADD_LEARNER, 1), (ADD_LEARNER, 3)], auto),
            cs(&[2], &[1], &[3], &[1], true),
            Some(cs(&[2], &[], &[1, 3], &[], false)),
        ),
        // Ditto, explicit.
        (
            v2(vec![(ADD, 2), (ADD_LEARNER, 1), (ADD_LEARNER, 3)], EXPLICIT),
            cs(&[2], &[1], &[3], &[1], false),
            Some(cs(&[2], &[], &[1, 3], &[], false)),
        ),
        // Ditto, implicit.
        (
            v2(vec![(ADD, 2), (ADD_LEARNER, 1), (ADD_LEARNER, 3)], IMPLICIT),
            cs(&[2], &[1], &[3], &[1], true),
            Some(cs(&[2], &[], &[1, 3], &[], false)),
        ),
    ];

    for (i, (cc, exp, exp2)) in tests.into_iter().enumerate() {
        let s = new_test_storage(&[1], &[]);
        let mut c = new_test_config(1, 10, 1);
        // raftlet: the demotion cases end with two learners; the default
        // Config::max_learners (1) would refuse them.
        c.max_learners = 2;
        let mut rn = RawNode::new(&c, s.clone()).expect("raw node");
        rn.campaign().expect("campaign");
        let mut proposed = false;
        let (ccty, ccdata) = cc.to_entry_parts();
        // Propose the change, and wait until it applies.
        let mut got: Option<ConfState> = None;
        let mut rounds = 0;
        while got.is_none() {
            rounds += 1;
            assert!(rounds < 20, "#{i}: conf change never applied");
            let rd = rn.ready();
            append(&s, &rd);
            for e in &rd.committed_entries {
                if e.entry_type != EntryType::EntryNormal {
                    let cc = ConfChangeI::from_entry(e).expect("decode");
                    got = Some(rn.apply_conf_change(&cc).expect("apply"));
                }
            }
            let lead = leads(&rd, 1);
            rn.advance(rd);
            // Once leader, propose a command and the change.
            if !proposed && lead {
                rn.propose("somedata").expect("propose");
                rn.propose_conf_change(cc.clone())
                    .expect("propose conf change");
                proposed = true;
            }
        }

        // The storage's last two entries are the command and the change,
        // down to the bytes.
        let last = s.last_index().expect("last index");
        let ents = s.entries(last - 1, last + 1, u64::MAX).expect("entries");
        assert_eq!(ents.len(), 2, "#{i}");
        assert_eq!(ents[0].data(), b"somedata", "#{i}");
        assert_eq!(ents[1].entry_type, ccty, "#{i}");
        assert_eq!(ents[1].data.as_ref(), Some(&ccdata), "#{i}");
        assert_eq!(got.as_ref(), Some(&exp), "#{i}");

        // An auto-leaving joint change appended the leave entry when it was
        // applied (at advance); it is not in storage yet.
        let (auto_leave, joint) = cc.as_v2().enter_joint();
        let plus_one = u64::from(joint && auto_leave);
        assert_eq!(rn.raft().pending_conf_index, last + plus_one, "#{i}");

        // Move along. A simple change is done; a joint one is left either
        // automatically or by an explicit empty change.
        let mut rd = rn.ready();
        let mut context = None;
        if !exp.auto_leave {
            assert!(rd.entries.is_empty(), "#{i}");
            rn.advance(rd);
            if exp2.is_none() {
                continue;
            }
            context = Some(Bytes::from_static(b"manual"));
            rn.propose_conf_change(ConfChangeV2 {
                context: context.clone(),
                ..ConfChangeV2::default()
            })
            .expect("leave joint");
            rd = rn.ready();
        }
        assert_eq!(rd.entries.len(), 1, "#{i}");
        assert_eq!(
            rd.entries[0].entry_type,
            EntryType::EntryConfChangeV2,
            "#{i}"
        );
        let leave = ConfChangeI::from_entry(&rd.entries[0]).expect("decode");
        assert_eq!(
            leave,
            ConfChangeI::V2(ConfChangeV2 {
                context,
                ..ConfChangeV2::default()
            }),
            "#{i}"
        );
        // Pretend it applied: with the joint quorum it would not commit on
        // one node.
        let got2 = rn.apply_conf_change(&leave).expect("apply leave");
        assert_eq!(Some(got2), exp2, "#{i}");
        rn.advance(rd);
    }
}

/// etcd: TestRawNodeJointAutoLeave
#[test]
fn test_raw_node_joint_auto_leave() {
    let test_cc = ConfChangeV2 {
        transition: ConfChangeTransition::ConfChangeTransitionJointImplicit,
        changes: vec![ConfChangeSingle::new(
            ConfChangeType::ConfChangeAddLearnerNode,
            2,
        )],
        context: None,
    };
    let exp_cs = ConfState {
        voters: vec![1],
        voters_outgoing: vec![1],
        learners: vec![2],
        auto_leave: true,
        ..ConfState::default()
    };
    let exp2_cs = ConfState {
        voters: vec![1],
        learners: vec![2],
        ..ConfState::default()
    };
    let s = new_test_storage(&[1], &[]);
    let mut rn = new_test_raw_node(1, 10, 1, s.clone());
    rn.campaign().expect("campaign");
    let mut proposed = false;
    let (_, ccdata) = ConfChangeI::V2(test_cc.clone()).to_entry_parts();
    let mut got = None;
    let mut rounds = 0;
    while got.is_none() {
        rounds += 1;
        assert!(rounds < 20, "conf change never applied");
        let rd = rn.ready();
        append(&s, &rd);
        for e in &rd.committed_entries {
            if e.entry_type == EntryType::EntryConfChangeV2 {
                let cc = ConfChangeI::from_entry(e).expect("decode");
                // Make the leader step down before it applies the change.
                let term = rn.raft().term + 1;
                // raftlet: a peer message claiming to come from this node
                // itself is refused, so a higher-term vote request from
                // another node deposes the leader (etcd's test uses a
                // heartbeat response "from" the leader itself).
                rn.raft_mut()
                    .step(msg_term(MessageType::MsgHeartbeatResp, 2, 1, term))
                    .expect("step");
                got = Some(rn.apply_conf_change(&cc).expect("apply"));
            }
        }
        let lead = leads(&rd, 1);
        rn.advance(rd);
        if !proposed && lead {
            rn.propose("somedata").expect("propose");
            rn.propose_conf_change(test_cc.clone()).expect("propose cc");
            proposed = true;
        }
    }
    let last = s.last_index().expect("last index");
    let ents = s.entries(last - 1, last + 1, u64::MAX).expect("entries");
    assert_eq!(ents.len(), 2);
    assert_eq!(ents[0].data(), b"somedata");
    assert_eq!(ents[1].entry_type, EntryType::EntryConfChangeV2);
    assert_eq!(ents[1].data.as_ref(), Some(&ccdata));
    assert_eq!(got, Some(exp_cs));
    assert_eq!(rn.raft().pending_conf_index, 0);

    // A follower does not leave the joint configuration.
    // raftlet: no readyWithoutAccept; the Ready is taken and advanced.
    let rd = rn.ready();
    assert!(rd.entries.is_empty());
    rn.advance(rd);

    // Leader again: it leaves automatically once it applied its entries.
    rn.campaign().expect("campaign");
    let mut rd = rn.ready();
    for _ in 0..3 {
        append(&s, &rd);
        rn.advance(rd);
        rd = rn.ready();
    }
    append(&s, &rd);
    assert_eq!(rd.entries.len(), 1);
    assert_eq!(rd.entries[0].entry_type, EntryType::EntryConfChangeV2);
    let cc = ConfChangeI::from_entry(&rd.entries[0]).expect("decode");
    assert_eq!(cc, ConfChangeI::V2(ConfChangeV2::default()));
    let got2 = rn.apply_conf_change(&cc).expect("apply");
    assert_eq!(got2, exp2_cs);
}

/// etcd: TestRawNodeProposeAddDuplicateNode
#[test]
fn test_raw_node_propose_add_duplicate_node() {
    let s = new_test_storage(&[1], &[]);
    let mut rn = new_test_raw_node(1, 10, 1, s.clone());
    let rd = rn.ready();
    append(&s, &rd);
    rn.advance(rd);
    rn.campaign().expect("campaign");
    loop {
        let rd = rn.ready();
        append(&s, &rd);
        let lead = leads(&rd, 1);
        rn.advance(rd);
        if lead {
            break;
        }
    }
    let propose_and_apply = |rn: &mut TestRawNode, cc: &ConfChange| -> Result<()> {
        let res = rn.propose_conf_change(cc.clone());
        let rd = rn.ready();
        append(&s, &rd);
        for e in &rd.committed_entries {
            if e.entry_type == EntryType::EntryConfChange {
                let cc = ConfChangeI::from_entry(e).expect("decode");
                rn.apply_conf_change(&cc).expect("apply");
            }
        }
        rn.advance(rd);
        res
    };
    let cc1 = ConfChange {
        change_type: ConfChangeType::ConfChangeAddNode,
        node_id: 1,
        ..ConfChange::default()
    };
    let (_, ccdata1) = ConfChangeI::V1(cc1.clone()).to_entry_parts();
    propose_and_apply(&mut rn, &cc1).expect("first add");
    // The same change again, while the first is not applied yet.
    // raftlet: refused with ConfChangeRefused, nothing appended (etcd
    // appends an empty entry in its place).
    let last = rn.raft().raft_log.last_index();
    let res = propose_and_apply(&mut rn, &cc1);
    assert!(matches!(res, Err(Error::ConfChangeRefused(_))), "{res:?}");
    assert_eq!(rn.raft().raft_log.last_index(), last);
    // Adding a new node still works.
    let cc2 = ConfChange {
        change_type: ConfChangeType::ConfChangeAddNode,
        node_id: 2,
        ..ConfChange::default()
    };
    let (_, ccdata2) = ConfChangeI::V1(cc2.clone()).to_entry_parts();
    propose_and_apply(&mut rn, &cc2).expect("add 2");

    let last = s.last_index().expect("last index");
    let ents = s.entries(last - 1, last + 1, u64::MAX).expect("entries");
    assert_eq!(ents.len(), 2);
    assert_eq!(ents[0].data.as_ref(), Some(&ccdata1));
    assert_eq!(ents[1].data.as_ref(), Some(&ccdata2));
    // ... and it applies.
    stabilize(&mut rn, &s);
    assert_eq!(rn.raft().trk.conf_state(), ConfState::from_voters([1, 2]));
}

/// etcd: TestNodeProposeAddDuplicateNode (adapted: each change is applied
/// before the next is proposed, so the duplicate is a valid no-op change).
#[test]
fn test_node_propose_add_duplicate_node() {
    let (mut rn, s) = new_single_leader(&new_test_config(1, 10, 1));
    let mut all = vec![ent(1, 1)];
    let cc1 = ConfChange {
        change_type: ConfChangeType::ConfChangeAddNode,
        node_id: 1,
        ..ConfChange::default()
    };
    let cc2 = ConfChange {
        change_type: ConfChangeType::ConfChangeAddNode,
        node_id: 2,
        ..ConfChange::default()
    };
    let (_, ccdata1) = ConfChangeI::V1(cc1.clone()).to_entry_parts();
    let (_, ccdata2) = ConfChangeI::V1(cc2.clone()).to_entry_parts();
    for cc in [&cc1, &cc1, &cc2] {
        rn.propose_conf_change(cc.clone()).expect("propose");
        let applied = stabilize(&mut rn, &s);
        assert_eq!(applied.len(), 1);
        all.extend(applied);
    }
    assert_eq!(all.len(), 4);
    assert_eq!(all[1].data.as_ref(), Some(&ccdata1));
    assert_eq!(all[2].data.as_ref(), Some(&ccdata1));
    assert_eq!(all[3].data.as_ref(), Some(&ccdata2));
    assert_eq!(rn.raft().trk.conf_state(), ConfState::from_voters([1, 2]));
}

/// etcd: TestRawNodeReadIndex (adapted: etcd swaps the step function to
/// catch the MsgReadIndex; here the single-voter leader answers it, and a
/// follower forwards it to its leader).
#[test]
fn test_raw_node_read_index() {
    let wrs = vec![ReadState {
        index: 1,
        request_ctx: Bytes::from_static(b"somedata"),
    }];
    let s = new_test_storage(&[1], &[]);
    let mut rn = new_test_raw_node(1, 10, 1, s.clone());
    rn.raft_mut().read_states = wrs.clone();
    // The read states come out in a Ready.
    assert!(rn.has_ready());
    let rd = rn.ready();
    assert_eq!(rd.read_states, wrs);
    append(&s, &rd);
    rn.advance(rd);
    // ... once.
    assert!(rn.raft().read_states.is_empty());
    assert!(!rn.has_ready());

    let ctx = Bytes::from_static(b"somedata2");
    rn.campaign().expect("campaign");
    loop {
        let rd = rn.ready();
        append(&s, &rd);
        let lead = leads(&rd, 1);
        rn.advance(rd);
        if lead {
            rn.read_index(ctx.clone()).expect("read index");
            break;
        }
    }
    let committed = rn.raft().raft_log.committed;
    let rd = rn.ready();
    assert_eq!(
        rd.read_states,
        vec![ReadState {
            index: committed,
            request_ctx: ctx.clone(),
        }]
    );
    rn.advance(rd);

    // A follower with a leader forwards the request, ctx in its entry.
    let mut f = new_test_raw_node(2, 10, 1, new_test_storage(&[1, 2], &[]));
    f.step(msg_term(MessageType::MsgHeartbeat, 1, 2, 1))
        .expect("heartbeat");
    f.read_index(ctx.clone()).expect("read index");
    let rd = f.ready();
    let reads: Vec<&Message> = rd
        .messages
        .iter()
        .filter(|m| m.msg_type == MessageType::MsgReadIndex)
        .collect();
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0].to, 1);
    assert_eq!(reads[0].entries.len(), 1);
    assert_eq!(reads[0].entries[0].data.as_ref(), Some(&ctx));
    // raftlet: without a leader the request fails (etcd drops it silently).
    let mut f = new_test_raw_node(2, 10, 1, new_test_storage(&[1, 2], &[]));
    assert_eq!(f.read_index(ctx), Err(Error::NoLeader));
}

/// raftlet regression (found by the Go interop tests): a peer's
/// MsgReadIndex or MsgTransferLeader that this node cannot serve is
/// dropped and `step` returns Ok, as etcd's `RawNode.Step` returns nil;
/// the local `read_index` and `transfer_leader` still report the refusal.
#[test]
fn test_raw_node_step_drops_peer_requests_it_cannot_serve() {
    let mut f = new_test_raw_node(1, 10, 1, new_test_storage(&[1, 2, 3], &[]));
    let mut read = msg(MessageType::MsgReadIndex, 2, 1);
    read.entries.push(data_entry(0, 0, "ctx"));
    assert_eq!(
        f.step(read),
        Ok(()),
        "read forwarded to a node without leader"
    );
    let transfer = msg(MessageType::MsgTransferLeader, 3, 1);
    assert_eq!(
        f.step(transfer),
        Ok(()),
        "transfer forwarded to a node without leader"
    );
    assert!(!f.has_ready(), "nothing is sent or changed");
    assert_eq!(f.read_index(&b"ctx"[..]), Err(Error::NoLeader));
    assert!(matches!(
        f.transfer_leader(2),
        Err(Error::TransferRefused(_))
    ));

    // A leader refuses a forwarded transfer to a stranger silently too.
    let (mut l, _s) = new_multi_leader(&new_test_config(1, 10, 1), 3);
    assert_eq!(l.step(msg(MessageType::MsgTransferLeader, 4, 1)), Ok(()));
    assert_eq!(l.raft().lead_transferee, 0);
    assert!(matches!(
        l.transfer_leader(4),
        Err(Error::TransferRefused(_))
    ));
}

/// etcd: TestRawNodeStart
#[test]
fn test_raw_node_start() {
    let entries = vec![ent(1, 2), data_entry(1, 3, "foo")];
    let want = ReadyView {
        soft_state: None,
        hard_state: Some(HardState {
            term: 1,
            commit: 3,
            vote: 1,
        }),
        // Emitted and checked in an earlier Ready.
        entries: vec![],
        committed_entries: entries.clone(),
        // Only applying, nothing to append.
        must_sync: false,
        ..ReadyView::default()
    };

    // Bootstrap the way etcd's test does (and CockroachDB): a snapshot at
    // index 1 holds the initial configuration, so the log starts at 2.
    let storage = MemoryStorage::new();
    assert_eq!(storage.first_index(), Ok(1));
    let hs_cs: RaftState = storage.initial_state().expect("initial state");
    assert!(hs_cs.hard_state.is_empty());
    assert!(hs_cs.conf_state.voters.is_empty());
    storage
        .wl()
        .apply_snapshot(Snapshot {
            data: None,
            metadata: SnapshotMetadata {
                conf_state: ConfState::from_voters([1]),
                index: 1,
                term: 0,
            },
        })
        .expect("bootstrap snapshot");
    assert_eq!(storage.first_index(), Ok(2));

    let mut rn = new_test_raw_node(1, 10, 1, storage.clone());
    assert!(!rn.has_ready());
    rn.campaign().expect("campaign");
    let rd = rn.ready();
    append(&storage, &rd);
    rn.advance(rd);
    rn.propose("foo").expect("propose");
    assert!(rn.has_ready());

    let rd = rn.ready();
    assert_eq!(rd.entries, entries);
    append(&storage, &rd);
    rn.advance(rd);

    assert!(rn.has_ready());
    let rd = rn.ready();
    assert!(rd.entries.is_empty());
    assert!(!rd.must_sync);
    let mut got = view(&rd);
    rn.advance(rd);
    got.soft_state = None;
    assert_eq!(got, want);
    assert!(!rn.has_ready());
}

/// etcd: TestNodeStart (adapted: etcd's StartNode is RawNode::bootstrap).
#[test]
fn test_node_start() {
    let cc = ConfChangeI::V1(ConfChange {
        change_type: ConfChangeType::ConfChangeAddNode,
        node_id: 1,
        ..ConfChange::default()
    });
    let (ccty, ccdata) = cc.to_entry_parts();
    let cc_entry = Entry {
        entry_type: ccty,
        term: 1,
        index: 1,
        data: Some(ccdata),
    };
    let wants = [
        ReadyView {
            hard_state: Some(HardState {
                term: 1,
                commit: 1,
                vote: 0,
            }),
            entries: vec![cc_entry.clone()],
            committed_entries: vec![cc_entry],
            must_sync: true,
            ..ReadyView::default()
        },
        ReadyView {
            hard_state: Some(HardState {
                term: 2,
                commit: 2,
                vote: 1,
            }),
            entries: vec![data_entry(2, 3, "foo")],
            committed_entries: vec![ent(2, 2)],
            must_sync: true,
            ..ReadyView::default()
        },
        ReadyView {
            hard_state: Some(HardState {
                term: 2,
                commit: 3,
                vote: 1,
            }),
            entries: vec![],
            committed_entries: vec![data_entry(2, 3, "foo")],
            must_sync: false,
            ..ReadyView::default()
        },
    ];
    // etcd's Config literal: no size limit, 256 inflight, pre-vote and
    // check-quorum off (Go zero values).
    let storage = MemoryStorage::new();
    let mut rn = new_test_raw_node(1, 10, 1, storage.clone());
    rn.bootstrap(&[1], &[]).expect("bootstrap");

    let rd = rn.ready();
    assert_eq!(view(&rd), wants[0]);
    append(&storage, &rd);
    rn.advance(rd);

    rn.campaign().expect("campaign");
    // Persist the vote, then append the empty entry.
    for _ in 0..2 {
        let rd = rn.ready();
        append(&storage, &rd);
        rn.advance(rd);
    }

    rn.propose("foo").expect("propose");
    let mut rd = rn.ready();
    rd.soft_state = None;
    assert_eq!(view(&rd), wants[1]);
    append(&storage, &rd);
    rn.advance(rd);

    let rd = rn.ready();
    assert_eq!(view(&rd), wants[2]);
    append(&storage, &rd);
    rn.advance(rd);
    assert!(!rn.has_ready());
}

/// etcd: TestRawNodeRestart
#[test]
fn test_raw_node_restart() {
    let entries = vec![ent(1, 1), data_entry(1, 2, "foo")];
    let st = HardState {
        term: 1,
        vote: 0,
        commit: 1,
    };
    let want = ReadyView {
        // The hard state did not change.
        hard_state: None,
        // Committed up to the stored commit index.
        committed_entries: entries[..1].to_vec(),
        must_sync: false,
        ..ReadyView::default()
    };
    let storage = new_test_storage(&[1], &[]);
    storage.wl().set_hard_state(st);
    storage.wl().append(&entries).expect("append");
    let mut rn = new_test_raw_node(1, 10, 1, storage);
    let rd = rn.ready();
    assert_eq!(view(&rd), want);
    rn.advance(rd);
    assert!(!rn.has_ready());
}

/// etcd: TestNodeRestart (the storage holds no configuration here).
#[test]
fn test_node_restart() {
    let entries = vec![ent(1, 1), data_entry(1, 2, "foo")];
    let st = HardState {
        term: 1,
        vote: 0,
        commit: 1,
    };
    let want = ReadyView {
        hard_state: None,
        committed_entries: entries[..1].to_vec(),
        must_sync: false,
        ..ReadyView::default()
    };
    let storage = MemoryStorage::new();
    storage.wl().set_hard_state(st);
    storage.wl().append(&entries).expect("append");
    let mut rn = new_test_raw_node(1, 10, 1, storage);
    let rd = rn.ready();
    assert_eq!(view(&rd), want);
    rn.advance(rd);
    assert!(!rn.has_ready());
}

fn restart_from_snapshot_storage() -> (MemoryStorage, Vec<Entry>) {
    let snap = Snapshot {
        data: None,
        metadata: SnapshotMetadata {
            conf_state: ConfState::from_voters([1, 2]),
            index: 2,
            term: 1,
        },
    };
    let entries = vec![data_entry(1, 3, "foo")];
    let s = MemoryStorage::new();
    s.wl().set_hard_state(HardState {
        term: 1,
        vote: 0,
        commit: 3,
    });
    s.wl().apply_snapshot(snap).expect("apply snapshot");
    s.wl().append(&entries).expect("append");
    (s, entries)
}

/// etcd: TestRawNodeRestartFromSnapshot
#[test]
fn test_raw_node_restart_from_snapshot() {
    let (s, entries) = restart_from_snapshot_storage();
    let want = ReadyView {
        hard_state: None,
        committed_entries: entries,
        must_sync: false,
        ..ReadyView::default()
    };
    let mut rn = new_test_raw_node(1, 10, 1, s);
    let rd = rn.ready();
    assert_eq!(view(&rd), want);
    rn.advance(rd);
    assert!(!rn.has_ready());
}

/// etcd: TestNodeRestartFromSnapshot
#[test]
fn test_node_restart_from_snapshot() {
    let (s, entries) = restart_from_snapshot_storage();
    let mut rn = new_test_raw_node(1, 10, 1, s);
    assert_eq!(rn.raft().raft_log.applied, 2);
    let rd = rn.ready();
    assert!(rd.hard_state.is_none());
    assert!(!rd.must_sync);
    assert_eq!(rd.committed_entries, entries);
    rn.advance(rd);
    assert_eq!(rn.raft().raft_log.applied, 3);
    assert!(!rn.has_ready());
}

/// etcd: TestRawNodeStatus
#[test]
fn test_raw_node_status() {
    let s = new_test_storage(&[1], &[]);
    let mut rn = new_test_raw_node(1, 10, 1, s.clone());
    assert!(rn.status().progress.is_empty());
    rn.campaign().expect("campaign");
    let rd = rn.ready();
    append(&s, &rd);
    rn.advance(rd);
    let status = rn.status();
    assert_eq!(status.basic.soft_state.leader_id, 1);
    assert_eq!(status.basic.soft_state.raft_state, StateRole::Leader);
    assert_eq!(status.progress.get(&1), rn.raft().trk.progress.get(&1));
    let exp_cfg = TrackerConfig {
        voters: JointConfig {
            incoming: MajorityConfig::new([1].into()),
            outgoing: MajorityConfig::default(),
        },
        ..TrackerConfig::default()
    };
    assert_eq!(status.config, exp_cfg);
    assert_eq!(rn.basic_status(), status.basic);
}

/// Status::to_json keeps the shape of etcd's Status.MarshalJSON (hex ids,
/// etcd role names), plus the configuration.
///
/// etcd: TestRawNodeStatus (Status.MarshalJSON)
#[test]
fn test_raw_node_status_json() {
    // A follower: no progress; ids in hex.
    let rn = new_test_raw_node(26, 10, 1, new_test_storage(&[26, 27], &[28]));
    let j = rn.status().to_json();
    assert_eq!(
        j,
        "{\"id\":\"1a\",\"term\":0,\"vote\":\"0\",\"commit\":0,\"lead\":\"0\",\
         \"raftState\":\"StateFollower\",\"applied\":0,\"progress\":{},\
         \"leadtransferee\":\"0\",\"voters\":[\"1a\",\"1b\"],\"votersOutgoing\":[],\
         \"learners\":[\"1c\"],\"learnersNext\":[]}"
    );
    serde_json::from_str::<serde_json::Value>(&j).expect("valid JSON");

    // A leader: its progress map.
    let (rn, _s) = new_single_leader(&new_test_config(1, 10, 1));
    let j = rn.status().to_json();
    assert_eq!(
        j,
        "{\"id\":\"1\",\"term\":1,\"vote\":\"1\",\"commit\":1,\"lead\":\"1\",\
         \"raftState\":\"StateLeader\",\"applied\":1,\
         \"progress\":{\"1\":{\"match\":1,\"next\":2,\"state\":\"StateReplicate\",\"isLearner\":false}},\
         \"leadtransferee\":\"0\",\"voters\":[\"1\"],\"votersOutgoing\":[],\
         \"learners\":[],\"learnersNext\":[]}"
    );

    // A leader of three with a learner, in a joint configuration.
    let mut c = new_test_config(1, 10, 1);
    c.max_learners = 2;
    let (mut rn, s) = new_multi_leader(&c, 3);
    stabilize(&mut rn, &s);
    rn.propose_conf_change(ConfChangeV2 {
        transition: ConfChangeTransition::ConfChangeTransitionJointExplicit,
        changes: vec![
            ConfChangeSingle::new(ConfChangeType::ConfChangeAddLearnerNode, 3),
            ConfChangeSingle::new(ConfChangeType::ConfChangeAddLearnerNode, 11),
        ],
        context: None,
    })
    .expect("propose");
    let rd = rn.ready();
    let e = rd.entries.last().expect("conf change entry").clone();
    rn.advance(rd);
    rn.apply_conf_change(&ConfChangeI::from_entry(&e).expect("decode"))
        .expect("apply");
    let st = rn.status();
    let v: serde_json::Value = serde_json::from_str(&st.to_json()).expect("valid JSON");
    assert_eq!(v["raftState"], "StateLeader");
    assert_eq!(v["voters"], serde_json::json!(["1", "2"]));
    assert_eq!(v["votersOutgoing"], serde_json::json!(["1", "2", "3"]));
    assert_eq!(v["learners"], serde_json::json!(["b"]));
    assert_eq!(v["learnersNext"], serde_json::json!(["3"]));
    let prs = v["progress"].as_object().expect("progress object");
    assert_eq!(prs.len(), 4);
    for (id, pr) in &st.progress {
        let jp = &prs[&format!("{id:x}")];
        assert_eq!(jp["match"], pr.matched);
        assert_eq!(jp["next"], pr.next);
        assert_eq!(jp["state"], pr.state.to_string());
        assert_eq!(jp["isLearner"], pr.is_learner);
    }
    assert_eq!(prs["b"]["isLearner"], true);
}

/// A storage that ignores the size limit of `entries` (etcd test
/// `ignoreSizeHintMemStorage`).
#[derive(Clone)]
struct IgnoreSizeHintMemStorage(MemoryStorage);

impl Storage for IgnoreSizeHintMemStorage {
    fn initial_state(&self) -> Result<RaftState> {
        self.0.initial_state()
    }
    fn entries(&self, low: u64, high: u64, _max_size: u64) -> Result<Vec<Entry>> {
        self.0.entries(low, high, u64::MAX)
    }
    fn term(&self, idx: u64) -> Result<u64> {
        self.0.term(idx)
    }
    fn first_index(&self) -> Result<u64> {
        self.0.first_index()
    }
    fn last_index(&self) -> Result<u64> {
        self.0.last_index()
    }
    fn snapshot(&self, request_index: u64, to: u64) -> Result<Snapshot> {
        self.0.snapshot(request_index, to)
    }
}

/// Ten committed entries of "a" in a storage that ignores size hints, and
/// a config whose max_size_per_msg excludes the tenth from the first batch.
fn pagination_after_restart_setup() -> (IgnoreSizeHintMemStorage, Config) {
    let s = new_test_storage(&[1], &[]);
    s.wl().set_hard_state(HardState {
        term: 1,
        vote: 1,
        commit: 10,
    });
    let ents: Vec<Entry> = (1..=10).map(|i| data_entry(1, i, "a")).collect();
    s.wl().append(&ents).expect("append");
    let size = ents_size(&ents);
    let mut cfg = new_test_config(1, 10, 1);
    // The limit suggests the last committed entry is not in the first
    // batch, but the storage returns it anyway.
    cfg.max_size_per_msg = size - ents_size(&ents[9..]) - 1;
    (IgnoreSizeHintMemStorage(s), cfg)
}

/// etcd: TestRawNodeCommitPaginationAfterRestart
#[test]
fn test_raw_node_commit_pagination_after_restart() {
    let (s, cfg) = pagination_after_restart_setup();
    s.0.wl()
        .append(&[data_entry(1, 11, "boom")])
        .expect("append");
    let mut rn = RawNode::new(&cfg, s).expect("raw node");
    let mut highest_applied = 0;
    let mut rounds = 0;
    while highest_applied != 11 {
        rounds += 1;
        assert!(rounds < 20, "never applied index 11");
        let rd = rn.ready();
        let n = rd.committed_entries.len();
        assert!(n > 0, "stopped applying entries at index {highest_applied}");
        let next = rd.committed_entries[0].index;
        assert!(
            highest_applied == 0 || highest_applied + 1 == next,
            "applying index {next} after index {highest_applied} leaves a gap"
        );
        highest_applied = rd.committed_entries[n - 1].index;
        rn.advance(rd);
        let mut hb = msg_term(MessageType::MsgHeartbeat, 2, 1, 1);
        hb.commit = 11;
        // Node 2 is not a member, but heartbeats are not checked.
        rn.step(hb).expect("heartbeat");
    }
}

/// etcd: TestNodeCommitPaginationAfterRestart
#[test]
fn test_node_commit_pagination_after_restart() {
    let (s, cfg) = pagination_after_restart_setup();
    let mut rn = RawNode::new(&cfg, s).expect("raw node");
    let rd = rn.ready();
    if let Some(hs) = rd.hard_state {
        assert!(
            hs.commit >= 10,
            "hard state regressed: commit 10 -> {}",
            hs.commit
        );
    }
    // Whatever the batch, it starts at 1 and the rest follows.
    assert_eq!(rd.committed_entries[0].index, 1);
    let mut last = rd.committed_entries.last().expect("entries").index;
    rn.advance(rd);
    while last < 10 {
        let rd = rn.ready();
        assert_eq!(rd.committed_entries[0].index, last + 1);
        last = rd.committed_entries.last().expect("entries").index;
        rn.advance(rd);
    }
    assert_eq!(last, 10);
    assert_eq!(rn.raft().raft_log.committed, 10);
}

/// etcd: TestRawNodeBoundedLogGrowthWithPartition
#[test]
fn test_raw_node_bounded_log_growth_with_partition() {
    const MAX_ENTRIES: u64 = 16;
    let data: &'static [u8] = b"testdata";
    let max_entry_size = MAX_ENTRIES * data.len() as u64;
    let s = new_test_storage(&[1], &[]);
    let mut cfg = new_test_config(1, 10, 1);
    cfg.max_uncommitted_entries_size = max_entry_size;
    let mut rn = RawNode::new(&cfg, s.clone()).expect("raw node");

    // Become leader and apply the empty entry.
    rn.campaign().expect("campaign");
    loop {
        let rd = rn.ready();
        append(&s, &rd);
        let done = !rd.committed_entries.is_empty();
        rn.advance(rd);
        if done {
            break;
        }
    }

    // A partition: nothing commits while proposals keep coming (no Ready
    // is handled). The uncommitted tail stays within the limit.
    let mut accepted = 0;
    for _ in 0..1024 {
        match rn.propose(data) {
            Ok(()) => accepted += 1,
            Err(e) => assert_eq!(e, Error::ProposalDropped),
        }
    }
    assert_eq!(accepted, MAX_ENTRIES);
    assert_eq!(rn.raft().uncommitted_size, max_entry_size);

    // Recovery: the tail disappears as entries commit and are handed out.
    let rd = rn.ready();
    assert_eq!(rd.entries.len() as u64, MAX_ENTRIES);
    append(&s, &rd);
    rn.advance(rd);
    // Appended (and committed), not yet handed out for applying.
    assert_eq!(rn.raft().uncommitted_size, max_entry_size);

    let rd = rn.ready();
    assert!(rd.entries.is_empty());
    assert_eq!(rd.committed_entries.len() as u64, MAX_ENTRIES);
    rn.advance(rd);
    assert_eq!(rn.raft().uncommitted_size, 0);
}

/// etcd: TestRawNodeConsumeReady (adapted: raftlet has no
/// readyWithoutAccept; Ready() takes the messages, and Advance() keeps the
/// ones generated since).
#[test]
fn test_raw_node_consume_ready() {
    let s = new_test_storage(&[1], &[]);
    let mut rn = new_test_raw_node(1, 3, 1, s);
    let m1 = Message {
        context: Some(Bytes::from_static(b"foo")),
        ..Message::default()
    };
    let m2 = Message {
        context: Some(Bytes::from_static(b"bar")),
        ..Message::default()
    };

    rn.raft_mut().msgs.push(m1.clone());
    assert!(rn.has_ready());
    let rd = rn.ready();
    assert!(rn.raft().msgs.is_empty());
    assert_eq!(rd.messages, vec![m1]);

    rn.raft_mut().msgs.push(m2.clone());
    rn.advance(rd);
    assert_eq!(rn.raft().msgs, vec![m2]);
}

/// raftlet: a second Ready may be taken before the first is advanced
/// (etcd's synchronous mode panics); nothing is handed out twice, and
/// advancing the later Ready covers the earlier one.
#[test]
fn test_raw_node_ready_twice_before_advance() {
    // raftlet: etcd panics ("two accepted Ready structs without call to
    // Advance"); raftlet allows it and keeps a record per Ready.
    let (mut rn, s) = new_single_leader(&new_test_config(1, 10, 1));
    rn.propose("a").expect("propose");
    let rd1 = rn.ready();
    assert_eq!(rd1.entries.len(), 1);
    let idx = rd1.entries[0].index;
    // Nothing new: the second Ready is empty and hands out nothing again.
    assert!(!rn.has_ready());
    let rd2 = rn.ready();
    assert!(rd2.is_empty(), "{rd2:?}");
    assert!(rd2.number() > rd1.number());
    rn.propose("b").expect("propose");
    let rd3 = rn.ready();
    assert_eq!(rd3.entries.len(), 1);
    assert_eq!(rd3.entries[0].index, idx + 1);
    // The self-acknowledgements wait for the writes: nothing commits yet.
    assert_eq!(rn.raft().raft_log.committed, idx - 1);
    s.wl().append(&rd1.entries).expect("append");
    s.wl().append(&rd3.entries).expect("append");
    // Advancing the last Ready makes the earlier ones durable too.
    rn.advance(rd3);
    assert_eq!(rn.raft().raft_log.committed, idx + 1);
    let rd4 = rn.ready();
    assert_eq!(
        rd4.committed_entries
            .iter()
            .map(|e| e.index)
            .collect::<Vec<_>>(),
        vec![idx, idx + 1]
    );
    rn.advance(rd4);
    // Late advances of older Readies are harmless.
    rn.advance(rd1);
    rn.advance(rd2);
    assert_eq!(rn.raft().raft_log.applied, idx + 1);
    assert!(!rn.has_ready());
}

/// etcd: TestNodeTick
#[test]
fn test_node_tick() {
    let mut rn = new_test_raw_node(1, 10, 1, new_test_storage(&[1], &[]));
    let elapsed = rn.raft().election_elapsed;
    rn.tick();
    assert_eq!(rn.raft().election_elapsed, elapsed + 1);
}

/// etcd: TestNodeAdvance
#[test]
fn test_node_advance() {
    let storage = new_test_storage(&[1], &[]);
    let mut rn = new_test_raw_node(1, 10, 1, storage.clone());
    rn.campaign().expect("campaign");
    // Persist the vote, then append the empty entry.
    for _ in 0..2 {
        let rd = rn.ready();
        append(&storage, &rd);
        rn.advance(rd);
    }
    rn.propose("foo").expect("propose");
    let rd = rn.ready();
    append(&storage, &rd);
    rn.advance(rd);
    assert!(rn.has_ready(), "expected a Ready after advance");
}

/// etcd: TestSoftStateEqual
#[test]
fn test_soft_state_equal() {
    let tests = [
        (SoftState::default(), true),
        (
            SoftState {
                leader_id: 1,
                ..SoftState::default()
            },
            false,
        ),
        (
            SoftState {
                raft_state: StateRole::Leader,
                ..SoftState::default()
            },
            false,
        ),
    ];
    for (i, (st, we)) in tests.iter().enumerate() {
        assert_eq!(*st == SoftState::default(), *we, "#{i}");
    }
}

/// etcd: TestIsHardStateEqual
#[test]
fn test_is_hard_state_equal() {
    let hs = |term, vote, commit| HardState { term, vote, commit };
    let tests = [
        (hs(0, 0, 0), true),
        (hs(0, 1, 0), false),
        (hs(0, 0, 1), false),
        (hs(1, 0, 0), false),
    ];
    for (i, (h, we)) in tests.iter().enumerate() {
        assert_eq!(*h == HardState::default(), *we, "#{i}");
        assert_eq!(h.is_empty(), *we, "#{i}");
    }
}

/// etcd: TestAppendPagination
#[test]
fn test_append_pagination() {
    const MAX_SIZE_PER_MSG: u64 = 2048;
    let f = |c: &mut Config| c.max_size_per_msg = MAX_SIZE_PER_MSG;
    let mut n = Network::new_with_config(Some(&f), vec![None, None, None]);
    let seen_full = Rc::new(Cell::new(false));
    let seen = seen_full.clone();
    // No append may exceed the limit, and some must be more than half full.
    n.msg_hook = Some(Box::new(move |m: &Message| {
        if m.msg_type == MessageType::MsgApp {
            let size: u64 = m.entries.iter().map(Entry::payload_size).sum();
            assert!(size <= MAX_SIZE_PER_MSG, "sent MsgApp of {size} bytes");
            if size > MAX_SIZE_PER_MSG / 2 {
                seen.set(true);
            }
        }
        true
    }));
    n.campaign(1);
    // Partition while proposing, so entries pile up and go out in batches.
    n.isolate(1);
    let blob = Bytes::from(vec![b'a'; 1000]);
    for _ in 0..5 {
        let mut m = msg(MessageType::MsgProp, 1, 1);
        m.entries = vec![Entry {
            data: Some(blob.clone()),
            ..Entry::default()
        }];
        n.send(vec![m]);
    }
    n.recover();
    // A heartbeat wakes everyone up and the appends flow.
    n.send(vec![msg(MessageType::MsgBeat, 1, 1)]);
    assert!(
        seen_full.get(),
        "no append was more than half the maximum size"
    );
    let last = n.peer(1).raft_log.last_index();
    for id in 2..=3 {
        assert_eq!(n.peer(id).raft_log.last_index(), last, "peer {id}");
    }
}

/// etcd: TestCommitPagination
#[test]
fn test_commit_pagination() {
    let s = new_test_storage(&[1], &[]);
    let mut cfg = new_test_config(1, 10, 1);
    cfg.max_committed_size_per_ready = 2048;
    let mut rn = RawNode::new(&cfg, s.clone()).expect("raw node");
    rn.campaign().expect("campaign");
    // Persist the vote, append the empty entry, apply it.
    for _ in 0..2 {
        let rd = rn.ready();
        append(&s, &rd);
        rn.advance(rd);
    }
    let rd = rn.ready();
    assert_eq!(rd.committed_entries.len(), 1);
    append(&s, &rd);
    rn.advance(rd);

    let blob = Bytes::from(vec![b'a'; 1000]);
    for i in 0..3 {
        rn.propose(blob.clone())
            .unwrap_or_else(|e| panic!("#{i}: {e}"));
    }
    // The three proposals are appended first...
    let rd = rn.ready();
    assert_eq!(rd.entries.len(), 3);
    append(&s, &rd);
    rn.advance(rd);
    // ... and commit in two batches.
    let rd = rn.ready();
    assert_eq!(rd.committed_entries.len(), 2);
    append(&s, &rd);
    rn.advance(rd);
    let rd = rn.ready();
    assert_eq!(rd.committed_entries.len(), 1);
    append(&s, &rd);
    rn.advance(rd);
    assert!(!rn.has_ready());
}

/// etcd: TestCommitPaginationWithAsyncStorageWrites (adapted to raftlet's
/// asynchronous application: advance_append, then advance_apply_to).
#[test]
fn test_commit_pagination_with_async_application() {
    let mut cfg = new_test_config(1, 10, 1);
    cfg.max_committed_size_per_ready = 2048;
    let (mut rn, s) = new_single_leader(&cfg);
    let blob = Bytes::from(vec![b'a'; 1024]);

    // Propose and append the first entry.
    rn.propose(blob.clone()).expect("propose");
    let rd = rn.ready();
    assert_eq!(rd.entries.len(), 1);
    let i1 = rd.entries[0].index;
    append(&s, &rd);
    rn.advance_append(rd);

    // Append the second entry; the first is handed out, not applied yet.
    rn.propose(blob.clone()).expect("propose");
    let rd = rn.ready();
    assert_eq!(rd.entries.len(), 1);
    assert_eq!(rd.committed_entries.len(), 1);
    assert_eq!(rd.committed_entries[0].index, i1);
    append(&s, &rd);
    rn.advance_append(rd);

    // Append the third; the second is handed out, which uses up the budget.
    rn.propose(blob.clone()).expect("propose");
    let rd = rn.ready();
    assert_eq!(rd.entries.len(), 1);
    assert_eq!(rd.committed_entries.len(), 1);
    assert_eq!(rd.committed_entries[0].index, i1 + 1);
    append(&s, &rd);
    rn.advance_append(rd);

    // The third is committed but not handed out until the first one's
    // application frees budget.
    assert_eq!(rn.raft().raft_log.committed, i1 + 2);
    while rn.has_ready() {
        let rd = rn.ready();
        assert!(
            rd.committed_entries.is_empty(),
            "{:?}",
            rd.committed_entries
        );
        rn.advance_append(rd);
    }
    rn.advance_apply_to(i1);
    assert_eq!(rn.raft().raft_log.applied, i1);
    let rd = rn.ready();
    assert_eq!(rd.committed_entries.len(), 1);
    assert_eq!(rd.committed_entries[0].index, i1 + 2);
    rn.advance_append(rd);

    rn.advance_apply_to(i1 + 2);
    assert_eq!(rn.raft().raft_log.applied, i1 + 2);
    assert_eq!(rn.basic_status().applied, i1 + 2);
    assert!(!rn.has_ready());
}

/// raftlet: with advance_append and advance_apply_to in several steps,
/// every committed entry is handed out exactly once, in order, across
/// Readies, whether or not the earlier ones are applied yet.
#[test]
fn test_raw_node_async_apply_hands_out_once() {
    let (mut rn, s) = new_single_leader(&new_test_config(1, 10, 1));
    let first = rn.raft().raft_log.last_index() + 1;
    let mut handed_out: Vec<u64> = Vec::new();
    let take = |rn: &mut TestRawNode| -> Vec<u64> {
        let rd = rn.ready();
        append(&s, &rd);
        let idx: Vec<u64> = rd.committed_entries.iter().map(|e| e.index).collect();
        rn.advance_append(rd);
        idx
    };

    rn.propose_batch(["a", "b", "c", "d", "e"])
        .expect("propose");
    // Appended: the leader's own acknowledgement is stepped at advance_append.
    assert!(take(&mut rn).is_empty());
    assert_eq!(rn.raft().raft_log.committed, first + 4);
    // Handed out, not applied.
    let got = take(&mut rn);
    assert_eq!(got, (first..first + 5).collect::<Vec<_>>());
    handed_out.extend(&got);
    assert_eq!(rn.raft().raft_log.applied, first - 1);

    // More proposals while the host is applying.
    rn.propose("f").expect("propose");
    let got = take(&mut rn);
    assert!(got.is_empty(), "handed out again: {got:?}");
    // Apply part of the first batch.
    rn.advance_apply_to(first + 1);
    assert_eq!(rn.raft().raft_log.applied, first + 1);
    let got = take(&mut rn);
    assert_eq!(got, vec![first + 5]);
    handed_out.extend(&got);
    rn.advance_apply_to(first + 3);
    assert_eq!(rn.raft().raft_log.applied, first + 3);
    assert!(!rn.has_ready());
    // Applying beyond what was handed out is capped.
    rn.advance_apply_to(first + 100);
    assert_eq!(rn.raft().raft_log.applied, first + 5);
    // Going backwards is a no-op.
    rn.advance_apply_to(first);
    assert_eq!(rn.raft().raft_log.applied, first + 5);
    assert!(!rn.has_ready());

    assert_eq!(handed_out, (first..=first + 5).collect::<Vec<_>>());
}

/// raftlet: the messages to send after persisting are the append and vote
/// responses; everything else may go at once.
#[test]
fn test_raw_node_persisted_messages() {
    let s = new_test_storage(&[1, 2, 3], &[]);
    let mut rn = new_test_raw_node(2, 10, 1, s.clone());
    // An append from the leader: the response waits for the write.
    let mut app = msg_term(MessageType::MsgApp, 1, 2, 1);
    app.entries = vec![data_entry(1, 1, "x")];
    rn.step(app).expect("append");
    let rd = rn.ready();
    assert_eq!(rd.entries.len(), 1);
    assert!(rd.messages.is_empty(), "{:?}", rd.messages);
    assert_eq!(rd.persisted_messages.len(), 1);
    let r = &rd.persisted_messages[0];
    assert_eq!((r.msg_type, r.to, r.index), (MessageType::MsgAppResp, 1, 1));
    append(&s, &rd);
    rn.advance(rd);

    // A heartbeat's response goes at once.
    rn.step(msg_term(MessageType::MsgHeartbeat, 1, 2, 1))
        .expect("heartbeat");
    let rd = rn.ready();
    assert!(rd.persisted_messages.is_empty());
    assert_eq!(rd.messages.len(), 1);
    assert_eq!(rd.messages[0].msg_type, MessageType::MsgHeartbeatResp);
    append(&s, &rd);
    rn.advance(rd);

    // A vote in a new term: the response waits for the hard state.
    let mut vote = msg_term(MessageType::MsgVote, 3, 2, 2);
    vote.index = 1;
    vote.log_term = 1;
    rn.step(vote).expect("vote");
    let rd = rn.ready();
    assert!(rd.messages.is_empty());
    assert_eq!(rd.persisted_messages.len(), 1);
    let r = &rd.persisted_messages[0];
    assert_eq!(
        (r.msg_type, r.to, r.reject),
        (MessageType::MsgVoteResp, 3, false)
    );
    assert_eq!(rd.hard_state.map(|hs| hs.vote), Some(3));
    append(&s, &rd);
    rn.advance(rd);

    // A pre-vote response too.
    let mut pre = msg_term(MessageType::MsgPreVote, 3, 2, 3);
    pre.index = 1;
    pre.log_term = 1;
    rn.step(pre).expect("pre-vote");
    let rd = rn.ready();
    assert!(rd.messages.is_empty());
    assert_eq!(rd.persisted_messages.len(), 1);
    assert_eq!(
        rd.persisted_messages[0].msg_type,
        MessageType::MsgPreVoteResp
    );
    append(&s, &rd);
    rn.advance(rd);

    // raftlet: a candidate's vote requests wait for its term and vote to
    // be durable (etcd sends them at once in its asynchronous mode); its
    // own vote is not sent.
    rn.campaign().expect("campaign");
    let rd = rn.ready();
    assert!(rd.messages.is_empty(), "{:?}", rd.messages);
    let mut to: Vec<u64> = rd
        .persisted_messages
        .iter()
        .inspect(|m| assert_eq!(m.msg_type, MessageType::MsgVote))
        .map(|m| m.to)
        .collect();
    to.sort_unstable();
    assert_eq!(to, vec![1, 3]);
}

/// raftlet: while a node's term or vote is not durable, every message but
/// pre-vote requests, heartbeat responses and term-less forwards waits for
/// the write, also when the host has several Readies in flight; once the
/// host reports the write durable, messages of that term go at once again.
#[test]
fn test_raw_node_messages_wait_for_durable_term() {
    let s = new_test_storage(&[1, 2, 3], &[]);
    let mut rn = new_test_raw_node(2, 10, 1, s.clone());
    let types = |ms: &[Message]| ms.iter().map(|m| m.msg_type).collect::<Vec<_>>();
    // A heartbeat of term 1 moves us to term 1, not yet durable. Its
    // response may go at once; a transfer request forwarded to the leader
    // in that term waits, also in the next Ready taken before the first is
    // durable (pipelined). A forwarded read carries no term: it goes at once.
    rn.step(msg_term(MessageType::MsgHeartbeat, 1, 2, 1))
        .expect("heartbeat");
    let rd1 = rn.ready();
    assert_eq!(rd1.hard_state.map(|hs| hs.term), Some(1));
    assert_eq!(types(&rd1.messages), vec![MessageType::MsgHeartbeatResp]);
    assert!(rd1.persisted_messages.is_empty());
    rn.transfer_leader(3).expect("transfer");
    rn.read_index(Bytes::from_static(b"r")).expect("read");
    let rd2 = rn.ready();
    assert!(rd2.hard_state.is_none());
    assert_eq!(types(&rd2.messages), vec![MessageType::MsgReadIndex]);
    assert_eq!(
        types(&rd2.persisted_messages),
        vec![MessageType::MsgTransferLeader]
    );
    // Ready 1 durable: term 1 is durable, so the next forward goes at once.
    append(&s, &rd1);
    rn.advance_append(rd1);
    rn.transfer_leader(3).expect("transfer");
    let rd3 = rn.ready();
    assert!(rd3.persisted_messages.is_empty());
    assert_eq!(types(&rd3.messages), vec![MessageType::MsgTransferLeader]);
    append(&s, &rd2);
    rn.advance_append(rd2);
    append(&s, &rd3);
    rn.advance_append(rd3);

    // A pre-candidate's pre-vote requests go at once even though nothing of
    // its campaign is durable; they change no durable state anywhere.
    let mut p = new_test_raw_node(1, 10, 1, new_test_storage(&[1, 2, 3], &[]));
    p.raft_mut().pre_vote = true;
    p.campaign().expect("campaign");
    let rd = p.ready();
    assert!(rd.persisted_messages.is_empty());
    assert!(rd
        .messages
        .iter()
        .all(|m| m.msg_type == MessageType::MsgPreVote));
    assert_eq!(rd.messages.len(), 2);
}

/// raftlet: must_sync is true exactly when the Ready holds entries or
/// changes the term or the vote (etcd `MustSync`).
#[test]
fn test_raw_node_must_sync() {
    let s = new_test_storage(&[1, 2, 3], &[]);
    let mut rn = new_test_raw_node(2, 10, 1, s.clone());
    let check = |rn: &mut TestRawNode, m: Message, want: bool, what: &str| {
        rn.step(m).expect(what);
        let rd = rn.ready();
        assert_eq!(rd.must_sync, want, "{what}: {:?}", view(&rd));
        append(&s, &rd);
        rn.advance(rd);
    };
    // A term change alone (no vote).
    check(
        &mut rn,
        msg_term(MessageType::MsgHeartbeat, 1, 2, 1),
        true,
        "term",
    );
    // New entries.
    let mut app = msg_term(MessageType::MsgApp, 1, 2, 1);
    app.entries = vec![data_entry(1, 1, "x")];
    check(&mut rn, app, true, "entries");
    // A commit change alone.
    let mut hb = msg_term(MessageType::MsgHeartbeat, 1, 2, 1);
    hb.commit = 1;
    check(&mut rn, hb, false, "commit");
    assert_eq!(rn.raft().raft_log.committed, 1);
    // Messages only.
    check(
        &mut rn,
        msg_term(MessageType::MsgHeartbeat, 1, 2, 1),
        false,
        "messages",
    );
    // A higher term without leader: term changes, vote stays 0.
    check(
        &mut rn,
        msg_term(MessageType::MsgHeartbeatResp, 3, 2, 5),
        true,
        "term 5",
    );
    assert_eq!(rn.raft().vote, 0);
    // A vote in the same term: only the vote changes.
    let mut vote = msg_term(MessageType::MsgVote, 3, 2, 5);
    vote.index = 1;
    vote.log_term = 1;
    check(&mut rn, vote, true, "vote");
    assert_eq!((rn.raft().term, rn.raft().vote), (5, 3));
    assert!(!rn.has_ready());
}

/// raftlet: bootstrap refuses a storage that is not empty, an empty voter
/// list, and a second bootstrap.
#[test]
fn test_raw_node_bootstrap_errors() {
    // Entries in storage.
    let s = MemoryStorage::new();
    s.wl().append(&[ent(1, 1)]).expect("append");
    let mut rn = new_test_raw_node(1, 10, 1, s);
    assert!(matches!(
        rn.bootstrap(&[1], &[]),
        Err(Error::InvalidState(_))
    ));

    // A snapshot in storage.
    let (s, _) = restart_from_snapshot_storage();
    let mut rn = new_test_raw_node(1, 10, 1, s);
    assert!(matches!(
        rn.bootstrap(&[1], &[]),
        Err(Error::InvalidState(_))
    ));

    // No voters.
    let mut rn = new_test_raw_node(1, 10, 1, MemoryStorage::new());
    assert!(matches!(
        rn.bootstrap(&[], &[2]),
        Err(Error::InvalidState(_))
    ));
    assert!(!rn.has_ready());

    // Twice: the first bootstrap's entries are not persisted yet.
    rn.bootstrap(&[1, 2, 3], &[4]).expect("bootstrap");
    assert!(matches!(
        rn.bootstrap(&[1], &[]),
        Err(Error::InvalidState(_))
    ));
    let rd = rn.ready();
    assert_eq!(rd.entries.len(), 4);
    assert_eq!(rd.committed_entries.len(), 4);
    assert_eq!(
        rd.hard_state,
        Some(HardState {
            term: 1,
            vote: 0,
            commit: 4
        })
    );
    assert!(rd.must_sync);
    let want = ConfState {
        voters: vec![1, 2, 3],
        learners: vec![4],
        ..ConfState::default()
    };
    assert_eq!(rn.raft().trk.conf_state(), want);
    // The host applies the bootstrap entries again, as it would any
    // committed conf change: a no-op.
    for e in &rd.committed_entries {
        let cc = ConfChangeI::from_entry(e).expect("decode");
        rn.apply_conf_change(&cc).expect("apply again");
    }
    rn.advance(rd);
    assert_eq!(rn.raft().trk.conf_state(), want);
    assert_eq!(rn.raft().raft_log.applied, 4);
}

/// raftlet: the leader's own acknowledgement of its entries is stepped at
/// advance, after the host persisted them; until then they do not commit.
#[test]
fn test_raw_node_leader_commits_after_advance() {
    // One voter: nothing commits before advance.
    let (mut rn, s) = new_single_leader(&new_test_config(1, 10, 1));
    rn.propose("x").expect("propose");
    let rd = rn.ready();
    let idx = rd.entries[0].index;
    assert!(rd.committed_entries.is_empty());
    assert!(rd.hard_state.is_none());
    assert_eq!(rn.raft().raft_log.committed, idx - 1);
    append(&s, &rd);
    rn.advance_append(rd);
    assert_eq!(rn.raft().raft_log.committed, idx);

    // Three voters: one follower's acknowledgement is not a quorum without
    // the leader's own.
    let (mut rn, s) = new_multi_leader(&new_test_config(1, 10, 1), 3);
    stabilize(&mut rn, &s);
    for id in [2, 3] {
        let mut r = msg_term(MessageType::MsgAppResp, id, 1, 1);
        r.index = rn.raft().raft_log.last_index();
        rn.step(r).expect("ack");
    }
    stabilize(&mut rn, &s);
    rn.propose("y").expect("propose");
    let rd = rn.ready();
    let idx = rd.entries[0].index;
    let mut ack = msg_term(MessageType::MsgAppResp, 2, 1, 1);
    ack.index = idx;
    rn.step(ack).expect("ack");
    assert_eq!(rn.raft().raft_log.committed, idx - 1);
    append(&s, &rd);
    rn.advance(rd);
    assert_eq!(rn.raft().raft_log.committed, idx);
    let rd = rn.ready();
    assert_eq!(rd.hard_state.map(|hs| hs.commit), Some(idx));
    assert_eq!(rd.committed_entries.last().map(|e| e.index), Some(idx));
}

/// etcd: TestNodePropose (adapted: etcd swaps the step function to catch
/// the MsgProp; here the proposal shows up in the leader's next Ready).
#[test]
fn test_node_propose() {
    let (mut rn, _s) = new_single_leader(&new_test_config(1, 10, 1));
    let last = rn.raft().raft_log.last_index();
    rn.propose("somedata").expect("propose");
    let rd = rn.ready();
    assert_eq!(rd.entries, vec![data_entry(1, last + 1, "somedata")]);
}

/// etcd: TestNodeProposeConfig (adapted as TestNodePropose).
#[test]
fn test_node_propose_config() {
    let (mut rn, _s) = new_single_leader(&new_test_config(1, 10, 1));
    let cc = ConfChangeI::V1(ConfChange {
        change_type: ConfChangeType::ConfChangeAddNode,
        node_id: 1,
        ..ConfChange::default()
    });
    let (ty, data) = cc.to_entry_parts();
    rn.propose_conf_change(cc).expect("propose");
    let rd = rn.ready();
    assert_eq!(rd.entries.len(), 1);
    assert_eq!(rd.entries[0].entry_type, ty);
    assert_eq!(rd.entries[0].data.as_ref(), Some(&data));
}

/// etcd: TestBlockProposal (adapted: etcd's Node blocks a proposal until a
/// leader is known; a RawNode refuses it at once).
#[test]
fn test_block_proposal() {
    let s = new_test_storage(&[1], &[]);
    let mut rn = new_test_raw_node(1, 10, 1, s.clone());
    assert_eq!(rn.propose("somedata"), Err(Error::ProposalDropped));
    rn.campaign().expect("campaign");
    let rd = rn.ready();
    append(&s, &rd);
    rn.advance(rd);
    rn.propose("somedata").expect("propose with a leader");
}

/// etcd: TestNodeProposeWaitDropped (adapted: a dropped proposal returns
/// ProposalDropped to the caller at once; here it is dropped because a
/// leader transfer is under way).
#[test]
fn test_node_propose_wait_dropped() {
    let (mut rn, s) = new_multi_leader(&new_test_config(1, 10, 1), 3);
    stabilize(&mut rn, &s);
    rn.transfer_leader(2).expect("transfer");
    assert_eq!(rn.raft().lead_transferee, 2);
    let last = rn.raft().raft_log.last_index();
    assert_eq!(rn.propose("test_dropping"), Err(Error::ProposalDropped));
    assert_eq!(rn.raft().raft_log.last_index(), last);
    let rd = rn.ready();
    assert!(rd.entries.is_empty());
    assert!(rd
        .messages
        .iter()
        .flat_map(|m| m.entries.iter())
        .all(|e| e.data() != b"test_dropping"));
}

/// etcd: TestNodeProposeAddLearnerNode
#[test]
fn test_node_propose_add_learner_node() {
    let (mut rn, s) = new_single_leader(&new_test_config(1, 10, 1));
    rn.propose_conf_change(ConfChange {
        change_type: ConfChangeType::ConfChangeAddLearnerNode,
        node_id: 2,
        ..ConfChange::default()
    })
    .expect("propose");
    let mut applied = 0;
    for _ in 0..5 {
        let rd = rn.ready();
        append(&s, &rd);
        for e in &rd.committed_entries {
            if e.entry_type != EntryType::EntryConfChange {
                continue;
            }
            let cc = ConfChangeI::from_entry(e).expect("decode");
            let state = rn.apply_conf_change(&cc).expect("apply");
            assert_eq!(state.learners, vec![2], "{state:?}");
            assert_eq!(state.voters, vec![1], "{state:?}");
            applied += 1;
        }
        rn.advance(rd);
    }
    assert_eq!(applied, 1);
}

/// etcd: TestDisableProposalForwarding
#[test]
fn test_disable_proposal_forwarding() {
    let r1 = new_test_raft(1, 10, 1, new_test_storage(&[1, 2, 3], &[]));
    let r2 = new_test_raft(2, 10, 1, new_test_storage(&[1, 2, 3], &[]));
    let mut c3 = new_test_config(3, 10, 1);
    c3.disable_proposal_forwarding = true;
    let r3 = new_test_raft_with_config(&c3, new_test_storage(&[1, 2, 3], &[]));
    let mut nt = Network::new(vec![super::peer(r1), super::peer(r2), super::peer(r3)]);
    nt.campaign(1);

    let prop = |id| {
        let mut m = msg(MessageType::MsgProp, id, id);
        m.entries = vec![Entry {
            data: Some(Bytes::from_static(b"testdata")),
            ..Entry::default()
        }];
        m
    };
    // Forwarding on: the follower forwards.
    nt.peer_mut(2).step(prop(2)).expect("forward");
    assert_eq!(nt.peer(2).msgs.len(), 1);
    // Forwarding off: dropped, with an error.
    assert_eq!(nt.peer_mut(3).step(prop(3)), Err(Error::ProposalDropped));
    assert!(nt.peer(3).msgs.is_empty());
}

/// etcd: TestNodeReadIndexToOldLeader
#[test]
fn test_node_read_index_to_old_leader() {
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);
    let entries = vec![Entry {
        data: Some(Bytes::from_static(b"testdata")),
        ..Entry::default()
    }];
    let read = |from, to| {
        let mut m = msg(MessageType::MsgReadIndex, from, to);
        m.entries = entries.clone();
        m
    };
    // A follower forwards to the leader, without a term.
    nt.peer_mut(2).step(read(2, 2)).expect("forward");
    assert_eq!(nt.peer(2).msgs, vec![read(2, 1)]);
    nt.peer_mut(3).step(read(3, 3)).expect("forward");
    assert_eq!(nt.peer(3).msgs, vec![read(3, 1)]);

    // Elect node 3; node 1 is now a follower.
    nt.peer_mut(2).msgs.clear();
    nt.peer_mut(3).msgs.clear();
    nt.campaign(3);
    assert_eq!(nt.peer(1).lead, 3);

    // The old leader forwards the requests it receives to the new one.
    nt.peer_mut(1).step(read(2, 1)).expect("forward");
    nt.peer_mut(1).step(read(3, 1)).expect("forward");
    assert_eq!(nt.peer(1).msgs, vec![read(2, 3), read(3, 3)]);
}

/// raftlet: with two Readies out, advancing the first reports only its own
/// committed entries (and earlier ones) applied, not the second's.
#[test]
fn test_raw_node_advance_applies_only_its_ready() {
    let (mut rn, s) = new_single_leader(&new_test_config(1, 10, 1));
    rn.propose("a").expect("propose");
    let rd = rn.ready();
    append(&s, &rd);
    rn.advance_append(rd);
    // rd1 hands out "a".
    let rd1 = rn.ready();
    let a = rd1.committed_entries.last().expect("a").index;
    rn.propose("b").expect("propose");
    let rd = rn.ready();
    append(&s, &rd);
    rn.advance_append(rd);
    // rd2 hands out "b"; the host has applied neither.
    let rd2 = rn.ready();
    let b = rd2.committed_entries.last().expect("b").index;
    assert_eq!(b, a + 1);
    rn.advance(rd1);
    assert_eq!(rn.raft().raft_log.applied, a);
    rn.advance(rd2);
    assert_eq!(rn.raft().raft_log.applied, b);
}

/// A snapshot message from leader 1 at `index`/`term` for voters 1 and 2.
fn snap_msg(to: u64, index: u64, term: u64) -> Message {
    let mut m = msg_term(MessageType::MsgSnap, 1, to, term);
    m.snapshot = Some(Box::new(Snapshot {
        data: Some(Bytes::from_static(b"state")),
        metadata: SnapshotMetadata {
            conf_state: ConfState::from_voters([1, 2]),
            index,
            term,
        },
    }));
    m
}

/// raftlet: a follower restores a snapshot through the Ready cycle: the
/// Ready carries the snapshot and no committed entries, the response waits
/// for the write, and applied moves to the snapshot at advance.
#[test]
fn test_raw_node_snapshot_ready() {
    let s = new_test_storage(&[1, 2], &[]);
    let mut rn = new_test_raw_node(2, 10, 1, s.clone());
    rn.step(snap_msg(2, 5, 1)).expect("snapshot");
    let rd = rn.ready();
    let snap = rd.snapshot.clone().expect("snapshot in Ready");
    assert_eq!((snap.metadata.index, snap.metadata.term), (5, 1));
    assert!(rd.entries.is_empty());
    assert!(rd.committed_entries.is_empty());
    assert_eq!(rd.hard_state.map(|hs| hs.commit), Some(5));
    assert!(rd.messages.is_empty());
    assert_eq!(rd.persisted_messages.len(), 1);
    let r = &rd.persisted_messages[0];
    assert_eq!((r.msg_type, r.to, r.index), (MessageType::MsgAppResp, 1, 5));
    s.wl().apply_snapshot(snap).expect("apply snapshot");
    rn.advance(rd);
    assert_eq!(rn.raft().raft_log.applied, 5);
    assert!(!rn.has_ready());

    // Entries after the snapshot are handed out from index 6.
    let mut app = msg_term(MessageType::MsgApp, 1, 2, 1);
    app.index = 5;
    app.log_term = 1;
    app.commit = 6;
    app.entries = vec![data_entry(1, 6, "x")];
    rn.step(app).expect("append");
    let rd = rn.ready();
    assert_eq!(rd.entries, vec![data_entry(1, 6, "x")]);
    assert_eq!(rd.committed_entries, vec![data_entry(1, 6, "x")]);
}

/// raftlet: a snapshot that arrives while committed entries are handed out
/// but not yet applied (asynchronous application) is refused: a conf
/// change among those entries would otherwise be applied on top of the
/// snapshot's configuration. Once the host reports them applied, the
/// snapshot (sent again) is restored, and entries after it are handed out.
#[test]
fn test_raw_node_snapshot_while_applying() {
    let s = new_test_storage(&[1, 2], &[]);
    let mut c = new_test_config(2, 10, 1);
    c.max_committed_size_per_ready = 2048;
    let mut rn = RawNode::new(&c, s.clone()).expect("raw node");
    // One committed entry that uses up the whole budget.
    let big = Entry::new(1, 1, Bytes::from(vec![b'a'; 2048]));
    let mut app = msg_term(MessageType::MsgApp, 1, 2, 1);
    app.entries = vec![big.clone()];
    app.commit = 1;
    rn.step(app).expect("append");
    let rd = rn.ready();
    assert_eq!(rd.committed_entries, vec![big]);
    append(&s, &rd);
    rn.advance_append(rd);

    // The host is still applying index 1 when a snapshot at 5 arrives:
    // refused, and the leader is told how far the log is committed.
    rn.step(snap_msg(2, 5, 1)).expect("snapshot");
    let rd = rn.ready();
    assert!(rd.snapshot.is_none(), "snapshot restored while applying");
    let resp: Vec<_> = rd
        .persisted_messages
        .iter()
        .filter(|m| m.msg_type == MessageType::MsgAppResp)
        .map(|m| m.index)
        .collect();
    assert_eq!(resp, vec![1]);
    rn.advance_append(rd);
    assert_eq!(rn.raft().raft_log.applied, 0);

    // The host finishes applying; the leader sends the snapshot again.
    rn.advance_apply_to(1);
    assert_eq!(rn.raft().raft_log.applied, 1);
    rn.step(snap_msg(2, 5, 1)).expect("snapshot");
    let rd = rn.ready();
    let snap = rd.snapshot.clone().expect("snapshot in Ready");
    s.wl().apply_snapshot(snap).expect("apply snapshot");
    rn.advance(rd);
    assert_eq!(rn.raft().raft_log.applied, 5);

    // New entries are handed out: the budget is whole again.
    let mut app = msg_term(MessageType::MsgApp, 1, 2, 1);
    app.index = 5;
    app.log_term = 1;
    app.commit = 6;
    app.entries = vec![data_entry(1, 6, "x")];
    rn.step(app).expect("append");
    let rd = rn.ready();
    assert_eq!(rd.entries, vec![data_entry(1, 6, "x")]);
    assert_eq!(rd.committed_entries, vec![data_entry(1, 6, "x")]);
    append(&s, &rd);
    rn.advance(rd);
    assert_eq!(rn.raft().raft_log.applied, 6);
}

/// raftlet: with asynchronous application, a conf change handed out but
/// not reported applied still blocks the next one; reporting it applied
/// with advance_apply_to unblocks it.
#[test]
fn test_raw_node_async_apply_pending_conf_change() {
    let (mut rn, s) = new_single_leader(&new_test_config(1, 10, 1));
    let add = |id| ConfChange {
        change_type: ConfChangeType::ConfChangeAddNode,
        node_id: id,
        ..ConfChange::default()
    };
    rn.propose("a").expect("propose");
    rn.propose_conf_change(add(2)).expect("propose");
    let rd = rn.ready();
    append(&s, &rd);
    rn.advance_append(rd);
    let rd = rn.ready();
    assert_eq!(rd.committed_entries.len(), 2);
    let (a, cc) = (&rd.committed_entries[0], &rd.committed_entries[1]);
    assert_eq!(cc.entry_type, EntryType::EntryConfChange);
    let (a, cc_index, cc) = (a.index, cc.index, cc.clone());
    rn.advance_append(rd);
    // Only "a" is applied: the conf change is still pending.
    rn.advance_apply_to(a);
    assert!(matches!(
        rn.propose_conf_change(add(3)),
        Err(Error::ConfChangeRefused(_))
    ));
    // Now it is applied.
    rn.apply_conf_change(&ConfChangeI::from_entry(&cc).expect("decode"))
        .expect("apply");
    rn.advance_apply_to(cc_index);
    rn.propose_conf_change(add(3)).expect("propose after apply");
}

/// `Ready::take_all_messages` hands out `messages` and then
/// `persisted_messages`, in their order, and leaves both empty: on a real
/// leader's Ready, and on one where both lists hold messages.
#[test]
fn take_all_messages_sends_messages_then_persisted_messages() {
    let (mut rn, s) = new_multi_leader(&new_test_config(1, 10, 1), 3);
    rn.propose(Bytes::from_static(b"x")).expect("propose");
    let mut rd = rn.ready();
    let mut want = rd.messages.clone();
    want.extend(rd.persisted_messages.iter().cloned());
    assert!(!want.is_empty(), "the leader's Ready sends its appends");
    append(&s, &rd);
    assert_eq!(rd.take_all_messages(), want);
    assert!(rd.messages.is_empty() && rd.persisted_messages.is_empty());
    assert!(rd.take_all_messages().is_empty(), "taken once");
    rn.advance(rd);

    let mut rd = Ready::default();
    let now = [
        msg_term(MessageType::MsgApp, 1, 2, 2),
        msg_term(MessageType::MsgHeartbeat, 1, 3, 2),
    ];
    let after = [msg_term(MessageType::MsgVoteResp, 1, 2, 2)];
    rd.messages = now.to_vec();
    rd.persisted_messages = after.to_vec();
    assert_eq!(rd.take_all_messages(), [&now[..], &after[..]].concat());
    assert!(rd.is_empty());
}
