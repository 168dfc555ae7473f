//! Regression tests for core bugs found by the deterministic simulator
//! (`tests/sim`) and the fuzzers (`fuzz/`), written against the public API.

use raftlet::pb::{ConfState, Entry, Message, MessageType};
use raftlet::{Config, Error, MemoryStorage, RawNode};

fn follower(id: u64) -> RawNode<MemoryStorage> {
    let storage =
        MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1, 2, 3])).unwrap();
    RawNode::new(&Config::new(id), storage).expect("valid node")
}

/// Found by the `step` fuzz target: a message claiming to come from the
/// node itself (here a heartbeat from 2 to 2) made the follower take itself
/// as its leader, and its next proposal was then "forwarded" to itself: a
/// message-to-self panic in debug builds, a forwarding loop through the
/// host in release builds (etcd panics there too). A node never receives
/// messages it sent in its own name, so `step` refuses them; forwarded
/// requests, which keep the requester in `from`, still pass.
#[test]
fn a_message_from_the_node_itself_is_refused() {
    let mut rn = follower(2);
    for t in [
        MessageType::MsgHeartbeat,
        MessageType::MsgApp,
        MessageType::MsgSnap,
        MessageType::MsgVote,
        MessageType::MsgPreVote,
        MessageType::MsgTimeoutNow,
        MessageType::MsgAppResp,
        MessageType::MsgHeartbeatResp,
    ] {
        let mut m = Message::new(t, 2, 2);
        m.term = 1;
        assert_eq!(rn.step(m), Err(Error::StepLocalMsg), "{t:?}");
    }
    let st = rn.basic_status();
    assert_eq!(st.soft_state.leader_id, 0);
    assert_eq!(st.hard_state.term, 0);
    // With no leader known, a proposal is dropped rather than sent anywhere.
    assert_eq!(rn.propose(b"p".to_vec()), Err(Error::ProposalDropped));
    assert!(!rn.has_ready());

    // Messages from peers are still taken.
    let mut hb = Message::new(MessageType::MsgHeartbeat, 1, 2);
    hb.term = 1;
    assert_eq!(rn.step(hb), Ok(()));
    assert_eq!(rn.basic_status().soft_state.leader_id, 1);
    assert_eq!(rn.propose(b"p".to_vec()), Ok(()));
    let rd = rn.ready();
    assert!(rd.messages.iter().all(|m| m.to == 1), "{:?}", rd.messages);
    rn.advance(rd);

    // A read this node forwarded, sent back to it by a peer that took it
    // for the leader, keeps this node in `from`: it is forwarded again.
    let mut read = Message::new(MessageType::MsgReadIndex, 2, 2);
    read.entries.push(Entry::new(0, 0, b"r".to_vec()));
    assert_eq!(rn.step(read), Ok(()));
    let rd = rn.ready();
    assert_eq!(rd.messages.len(), 1);
    assert_eq!((rd.messages[0].from, rd.messages[0].to), (2, 1));
}

/// Found by the simulator (seed 19190, a host that applies asynchronously):
/// committed entries handed out for applying and then superseded by a
/// snapshot before the host reported them applied kept their bytes in the
/// applying budget for good. With a small budget (here one entry per
/// Ready) the node never handed out another committed entry: the
/// restarted leader of that run stopped applying, its uncommitted budget
/// never drained, and every later proposal was dropped. (Since the fix
/// below, such a snapshot waits for the handed-out entries; the budget is
/// released either way.)
#[test]
fn committed_entries_superseded_by_a_snapshot_release_the_apply_budget() {
    let storage =
        MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1, 2, 3])).unwrap();
    let mut c = Config::new(2);
    c.max_size_per_msg = 0; // one committed entry per Ready
    let mut rn = RawNode::new(&c, storage.clone()).expect("valid node");

    // Persists a Ready and reports it durable, without applying anything
    // (the host applies asynchronously); returns the committed indexes.
    let persist = |rn: &mut RawNode<MemoryStorage>| -> Vec<u64> {
        let rd = rn.ready();
        {
            let mut s = storage.wl();
            if let Some(snap) = &rd.snapshot {
                s.apply_snapshot(snap.clone()).expect("newer snapshot");
            }
            s.append(&rd.entries).expect("contiguous");
            if let Some(hs) = rd.hard_state {
                s.set_hard_state(hs);
            }
        }
        let committed = rd.committed_entries.iter().map(|e| e.index).collect();
        rn.advance_append(rd);
        committed
    };

    // The leader (1) replicates and commits entries 1..=3.
    let mut app = Message::new(MessageType::MsgApp, 1, 2);
    app.term = 1;
    app.commit = 3;
    app.entries = (1..=3).map(|i| Entry::new(1, i, b"x".to_vec())).collect();
    rn.step(app).unwrap();
    assert_eq!(persist(&mut rn), vec![1], "one committed entry per Ready");
    // The host has not applied entry 1 yet when a snapshot at 10 arrives.
    let mut snap = Message::new(MessageType::MsgSnap, 1, 2);
    snap.term = 1;
    let snapshot = Some(raftlet::pb::Snapshot {
        data: None,
        metadata: raftlet::pb::SnapshotMetadata {
            conf_state: ConfState::from_voters(vec![1, 2, 3]),
            index: 10,
            term: 1,
        },
    });
    snap.snapshot = snapshot.map(Box::new);
    rn.step(snap.clone()).unwrap();
    while rn.has_ready() {
        persist(&mut rn);
    }
    // The host applies entry 1; the leader sends the snapshot again, and
    // the host applies it.
    rn.advance_apply_to(1);
    rn.step(snap).unwrap();
    while rn.has_ready() {
        persist(&mut rn);
    }
    rn.advance_apply_to(10);
    assert_eq!(rn.basic_status().applied, 10);

    // New entries after the snapshot commit, and are handed out to apply.
    let mut app = Message::new(MessageType::MsgApp, 1, 2);
    app.term = 1;
    app.index = 10;
    app.log_term = 1;
    app.commit = 12;
    app.entries = (11..=12).map(|i| Entry::new(1, i, b"y".to_vec())).collect();
    rn.step(app).unwrap();
    let mut handed = Vec::new();
    for _ in 0..10 {
        if !rn.has_ready() {
            break;
        }
        let got = persist(&mut rn);
        if let Some(&last) = got.last() {
            rn.advance_apply_to(last);
        }
        handed.extend(got);
    }
    assert_eq!(handed, vec![11, 12]);
    assert_eq!(rn.basic_status().applied, 12);
}

/// Found by the `step` fuzz target: a (pre-)vote request without a term
/// reached `step`. A term of 0 marks a node's own local messages, so the
/// request skipped the term check, was answered, and the answer was sent
/// without a term (an assertion in debug builds; etcd panics there). An
/// append with term 0 likewise bypassed the stale-term check and could
/// rewrite a follower's uncommitted log. Peers always send these types with
/// their term, so `step` refuses them without one.
#[test]
fn peer_messages_without_a_term_are_refused() {
    let mut rn = follower(2);
    // A leader in term 2 gives the follower an uncommitted entry.
    let mut app = Message::new(MessageType::MsgApp, 1, 2);
    app.term = 2;
    app.entries = vec![Entry::new(2, 1, b"a".to_vec())];
    rn.step(app).unwrap();
    let rd = rn.ready();
    rn.advance(rd);

    for t in [
        MessageType::MsgApp,
        MessageType::MsgAppResp,
        MessageType::MsgVote,
        MessageType::MsgVoteResp,
        MessageType::MsgPreVote,
        MessageType::MsgPreVoteResp,
        MessageType::MsgSnap,
        MessageType::MsgHeartbeat,
        MessageType::MsgHeartbeatResp,
        MessageType::MsgTimeoutNow,
        MessageType::MsgReadIndexResp,
    ] {
        let mut m = Message::new(t, 3, 2);
        if t == MessageType::MsgApp {
            m.entries = vec![Entry::new(0, 1, b"evil".to_vec())];
        }
        assert_eq!(rn.step(m), Err(Error::StepLocalMsg), "{t:?}");
    }
    assert!(!rn.has_ready(), "nothing answered, nothing appended");
    let st = rn.basic_status();
    assert_eq!((st.hard_state.term, st.soft_state.leader_id), (2, 1));

    // Forwarded proposals and reads travel without a term, as they must.
    let mut prop = Message::new(MessageType::MsgProp, 3, 2);
    prop.entries = vec![Entry::new(0, 0, b"p".to_vec())];
    assert_eq!(rn.step(prop), Ok(()));
    let mut read = Message::new(MessageType::MsgReadIndex, 3, 2);
    read.entries = vec![Entry::new(0, 0, b"r".to_vec())];
    assert_eq!(rn.step(read), Ok(()));
}

/// Found by the simulator (seed 13348, a host that applies asynchronously):
/// a follower restored a snapshot (switching to the snapshot's
/// configuration) while committed entries it had handed out were not yet
/// applied. The host then applied a conf change among them, as it must, and
/// `apply_conf_change` applied it on top of the snapshot's configuration:
/// the node ended in a configuration no other node had (a joint one that
/// refused every later change). A follower now refuses a snapshot until
/// the entries it handed out are applied; the leader sends it again.
#[test]
fn a_snapshot_waits_for_handed_out_entries_to_be_applied() {
    use raftlet::pb::{ConfChange, ConfChangeI, ConfChangeType, Snapshot, SnapshotMetadata};
    let storage =
        MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1, 2, 3])).unwrap();
    let mut rn = RawNode::new(&Config::new(2), storage.clone()).expect("valid node");
    let persist = |rn: &mut RawNode<MemoryStorage>| -> (Vec<Entry>, Option<Snapshot>) {
        let rd = rn.ready();
        {
            let mut s = storage.wl();
            if let Some(snap) = &rd.snapshot {
                s.apply_snapshot(snap.clone()).expect("newer snapshot");
            }
            s.append(&rd.entries).expect("contiguous");
            if let Some(hs) = rd.hard_state {
                s.set_hard_state(hs);
            }
        }
        let out = (rd.committed_entries.clone(), rd.snapshot.clone());
        rn.advance_append(rd);
        out
    };

    // Entry 2 adds learner 4; both entries commit.
    let (t, data) = ConfChangeI::V1(ConfChange {
        change_type: ConfChangeType::ConfChangeAddLearnerNode,
        node_id: 4,
        ..ConfChange::default()
    })
    .to_entry_parts();
    let mut app = Message::new(MessageType::MsgApp, 1, 2);
    app.term = 1;
    app.commit = 2;
    app.entries = vec![
        Entry::new(1, 1, b"a".to_vec()),
        Entry {
            entry_type: t,
            term: 1,
            index: 2,
            data: Some(data),
        },
    ];
    rn.step(app).unwrap();
    let (to_apply, _) = persist(&mut rn);
    assert_eq!(to_apply.len(), 2, "both handed out, not applied yet");

    // Meanwhile the cluster removed 4 and added 5; a snapshot at 10 says so.
    let snap = Snapshot {
        data: None,
        metadata: SnapshotMetadata {
            conf_state: ConfState {
                voters: vec![1, 2, 3],
                learners: vec![5],
                ..ConfState::default()
            },
            index: 10,
            term: 1,
        },
    };
    let mut msg = Message::new(MessageType::MsgSnap, 1, 2);
    msg.term = 1;
    msg.snapshot = Some(Box::new(snap.clone()));
    rn.step(msg.clone()).unwrap();
    let (_, restored) = persist(&mut rn);
    assert!(
        restored.is_none(),
        "refused while entries are being applied"
    );

    // The host applies what it was handed, conf change included.
    for e in &to_apply {
        if e.entry_type != raftlet::pb::EntryType::EntryNormal {
            rn.apply_conf_change(&ConfChangeI::from_entry(e).unwrap())
                .unwrap();
        }
    }
    rn.advance_apply_to(2);
    assert_eq!(
        rn.status()
            .config
            .learners
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        vec![4]
    );

    // The leader sends the snapshot again: now it is restored.
    rn.step(msg).unwrap();
    let (_, restored) = persist(&mut rn);
    assert_eq!(restored.map(|s| s.metadata.index), Some(10));
    let cfg = rn.status().config;
    assert_eq!(cfg.learners.iter().copied().collect::<Vec<_>>(), vec![5]);
    assert_eq!(cfg.voters.incoming.len(), 3);
    assert!(cfg.voters.outgoing.is_empty());
}

/// Found by the simulator's pipelined host (a crash tore a Ready's write):
/// a follower's write of a snapshot landed, the hard state written after it
/// did not. The Ready contract allows exactly that (a crash may leave any
/// prefix of snapshot, entries, hard state), but the node refused to
/// restart: the stored commit index was below the snapshot's. A snapshot
/// holds committed state only, so the restarted node takes its index as
/// committed, and keeps the stored term and vote.
#[test]
fn a_node_restarts_from_a_snapshot_whose_hard_state_was_lost() {
    use raftlet::pb::{HardState, Snapshot, SnapshotMetadata};
    let storage =
        MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1, 2, 3])).unwrap();
    let mut rn = RawNode::new(&Config::new(2), storage.clone()).expect("valid node");

    // Entries 1-3 from the leader of term 1, 2 committed: durable.
    let mut app = Message::new(MessageType::MsgApp, 1, 2);
    app.term = 1;
    app.commit = 2;
    app.entries = (1..=3).map(|i| Entry::new(1, i, b"a".to_vec())).collect();
    rn.step(app).unwrap();
    let rd = rn.ready();
    storage.wl().append(&rd.entries).unwrap();
    storage
        .wl()
        .set_hard_state(rd.hard_state.expect("term and commit"));
    rn.advance(rd);
    assert_eq!(
        *storage.rl().hard_state(),
        HardState {
            term: 1,
            vote: 0,
            commit: 2
        }
    );

    // The leader of term 2 sends a snapshot at 10.
    let mut msg = Message::new(MessageType::MsgSnap, 3, 2);
    msg.term = 2;
    msg.snapshot = Some(Box::new(Snapshot {
        data: None,
        metadata: SnapshotMetadata {
            conf_state: ConfState::from_voters(vec![1, 2, 3]),
            index: 10,
            term: 2,
        },
    }));
    rn.step(msg).unwrap();
    let rd = rn.ready();
    let snap = rd.snapshot.clone().expect("snapshot to persist");
    assert_eq!(rd.hard_state.map(|hs| (hs.term, hs.commit)), Some((2, 10)));
    // The crash: the snapshot landed, the hard state did not.
    storage.wl().apply_snapshot(snap).unwrap();
    drop(rd);
    drop(rn);

    let mut c = Config::new(2);
    c.applied = 10;
    let mut rn = RawNode::new(&c, storage.clone()).expect("restarts from the torn write");
    let st = rn.basic_status();
    assert_eq!(
        (st.hard_state.term, st.hard_state.commit, st.applied),
        (1, 10, 10)
    );
    // It follows the leader of term 2 from the snapshot on.
    let mut app = Message::new(MessageType::MsgApp, 3, 2);
    app.term = 2;
    app.index = 10;
    app.log_term = 2;
    app.commit = 11;
    app.entries = vec![Entry::new(2, 11, b"b".to_vec())];
    rn.step(app).unwrap();
    let rd = rn.ready();
    assert_eq!(rd.entries.len(), 1);
    assert_eq!(
        rd.committed_entries
            .iter()
            .map(|e| e.index)
            .collect::<Vec<_>>(),
        vec![11]
    );
    let resp: Vec<_> = rd
        .persisted_messages
        .iter()
        .filter(|m| m.msg_type == MessageType::MsgAppResp)
        .collect();
    assert_eq!(resp.len(), 1);
    assert!(!resp[0].reject);
    assert_eq!(resp[0].index, 11);

    // A stored commit past the log is still refused.
    let bad = MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1, 2, 3])).unwrap();
    bad.wl().append(&[Entry::new(1, 1, b"a".to_vec())]).unwrap();
    bad.wl().set_hard_state(HardState {
        term: 1,
        vote: 0,
        commit: 5,
    });
    assert!(matches!(
        RawNode::new(&Config::new(2), bad),
        Err(Error::InvalidState(_))
    ));
}
