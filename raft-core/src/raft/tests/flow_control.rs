//! Ported etcd tests: flow_control.
//!
//! The in-flight window of a replicating follower: filled by appends,
//! freed by acknowledgements, probed through by heartbeat responses, and
//! bounded in bytes by `max_inflight_bytes`. Ported from etcd-io/raft
//! raft_flow_control_test.go (v3.6), plus raftlet tests of the byte limit.

use bytes::Bytes;

use super::*;
use crate::tracker::ProgressState;

/// A leader of term 1 over nodes 1 and 2 (etcd's setup in these tests),
/// with node 2 forced into replicate state.
fn leader_replicating_to_2(c: &Config) -> TestRaft {
    let mut r = new_test_raft_with_config(c, new_test_storage(&[1, 2], &[]));
    r.become_candidate();
    r.become_leader();
    r.trk.get_mut(2).unwrap().become_replicate();
    r
}

fn propose_somedata(r: &mut TestRaft) {
    r.step(prop(1, 1, b"somedata")).unwrap();
}

fn paused(r: &TestRaft, id: u64) -> bool {
    r.trk.get(id).unwrap().is_paused()
}

/// etcd: TestMsgAppFlowControlFull
///
/// Appends fill the window until it is full; then nothing more is sent.
#[test]
fn test_msg_app_flow_control_full() {
    let mut r = leader_replicating_to_2(&new_test_config(1, 5, 1));

    // Fill the window: one append per proposal.
    for i in 0..r.trk.max_inflight {
        propose_somedata(&mut r);
        let ms = r.read_messages();
        assert_eq!(ms.len(), 1, "#{i}");
        assert_eq!(ms[0].msg_type, MessageType::MsgApp, "#{i}");
    }

    // The window is full: the follower is paused...
    assert!(paused(&r, 2));

    // ...and further proposals send nothing.
    for i in 0..10 {
        propose_somedata(&mut r);
        let ms = r.read_messages();
        assert!(ms.is_empty(), "#{i}: {ms:?}");
    }
}

/// etcd: TestMsgAppFlowControlMoveForward
///
/// An acknowledgement frees every in-flight append up to its index; stale
/// acknowledgements free nothing.
#[test]
fn test_msg_app_flow_control_move_forward() {
    let mut r = leader_replicating_to_2(&new_test_config(1, 5, 1));

    // Fill the window.
    for _ in 0..r.trk.max_inflight {
        propose_somedata(&mut r);
        r.read_messages();
    }

    // Entry 1 is the leader's empty entry, 2 the first proposal: start at 2.
    for tt in 2..r.trk.max_inflight as u64 {
        // Move the window forward.
        let mut ack = msg(MessageType::MsgAppResp, 2, 1);
        ack.index = tt;
        r.step(ack).unwrap();
        r.read_messages();

        // Fill it again with one append.
        propose_somedata(&mut r);
        let ms = r.read_messages();
        assert_eq!(ms.len(), 1, "#{tt}");
        assert_eq!(ms[0].msg_type, MessageType::MsgApp, "#{tt}");

        // The window is full again.
        assert!(paused(&r, 2), "#{tt}");

        // Stale acknowledgements change nothing.
        for i in 0..tt {
            let mut ack = msg(MessageType::MsgAppResp, 2, 1);
            ack.index = i;
            r.step(ack).unwrap();
            assert!(paused(&r, 2), "#{tt}.{i}");
        }
    }
}

/// etcd: TestMsgAppFlowControlRecvHeartbeat
///
/// With a full window, each heartbeat response lets one empty append out
/// (so that a window of lost appends cannot stall replication forever).
#[test]
fn test_msg_app_flow_control_recv_heartbeat() {
    let mut r = leader_replicating_to_2(&new_test_config(1, 5, 1));

    // Fill the window.
    for _ in 0..r.trk.max_inflight {
        propose_somedata(&mut r);
        r.read_messages();
    }

    for tt in 1..5 {
        // Each heartbeat response lifts the pause, sends an empty append,
        // and pauses again.
        for i in 0..tt {
            assert!(paused(&r, 2), "#{tt}.{i}");
            r.step(msg(MessageType::MsgHeartbeatResp, 2, 1)).unwrap();
            let ms = r.read_messages();
            assert_eq!(ms.len(), 1, "#{tt}.{i}");
            assert_eq!(ms[0].msg_type, MessageType::MsgApp, "#{tt}.{i}");
            assert!(ms[0].entries.is_empty(), "#{tt}.{i}");
        }

        // Without heartbeat responses, nothing more goes out.
        for i in 0..10 {
            assert!(paused(&r, 2), "#{tt}.{i}");
            propose_somedata(&mut r);
            let ms = r.read_messages();
            assert!(ms.is_empty(), "#{tt}.{i}: {ms:?}");
        }

        // Drop the pending messages.
        r.step(msg(MessageType::MsgHeartbeatResp, 2, 1)).unwrap();
        r.read_messages();
    }
}

/// max_inflight_bytes bounds the payload in flight: once the bytes sent and
/// not yet acknowledged reach the limit, the follower is paused even though
/// the message window has room, and an acknowledgement that frees bytes
/// resumes the flow.
#[test]
fn test_max_inflight_bytes_limits_inflight_payload() {
    let mut c = new_test_config(1, 5, 1);
    c.max_inflight_msgs = 100;
    c.max_size_per_msg = 1000;
    c.max_inflight_bytes = 2500;
    let mut r = new_test_raft_with_config(&c, new_test_storage(&[1, 2], &[]));
    r.become_candidate();
    r.become_leader();
    r.read_messages();
    // Node 2 acknowledges the empty entry and starts replicating.
    let mut ack = msg(MessageType::MsgAppResp, 2, 1);
    ack.index = 1;
    r.step(ack).unwrap();
    r.read_messages();
    assert_eq!(r.trk.get(2).unwrap().state, ProgressState::Replicate);

    let blob = Bytes::from(vec![b'a'; 1000]);
    let propose = |r: &mut TestRaft| {
        let mut m = msg(MessageType::MsgProp, 1, 1);
        m.entries = vec![Entry {
            data: Some(blob.clone()),
            ..Entry::default()
        }];
        r.step(m).unwrap();
        r.read_messages()
    };

    // 1000 and 2000 bytes in flight: still room.
    for i in 1..=2u64 {
        let ms = propose(&mut r);
        assert_eq!(ms.len(), 1, "#{i}");
        assert_eq!(ms[0].entries.len(), 1, "#{i}");
        let ins = &r.trk.get(2).unwrap().inflights;
        assert_eq!((ins.count() as u64, ins.bytes()), (i, i * 1000), "#{i}");
        assert!(!paused(&r, 2), "#{i}");
    }
    // 3000 bytes reach the 2500-byte limit: full after 3 of 100 messages.
    let ms = propose(&mut r);
    assert_eq!(ms.len(), 1);
    let pr = r.trk.get(2).unwrap();
    assert_eq!((pr.inflights.count(), pr.inflights.bytes()), (3, 3000));
    assert!(pr.inflights.full());
    assert!(paused(&r, 2));

    // Further proposals wait.
    for i in 0..3 {
        let ms = propose(&mut r);
        assert!(ms.is_empty(), "#{i}: {ms:?}");
    }
    let last = r.raft_log.last_index();
    assert_eq!(last, 7);

    // Acknowledging entry 2 frees its 1000 bytes: 2000 in flight, below the
    // limit, so the next entry goes out, and the window is full again.
    let mut ack = msg(MessageType::MsgAppResp, 2, 1);
    ack.index = 2;
    r.step(ack).unwrap();
    let ms: Vec<Message> = r
        .read_messages()
        .into_iter()
        .filter(|m| !m.entries.is_empty())
        .collect();
    assert_eq!(ms.len(), 1, "{ms:?}");
    assert_eq!(ms[0].entries.len(), 1);
    assert_eq!(ms[0].entries[0].index, 5);
    let pr = r.trk.get(2).unwrap();
    assert_eq!((pr.inflights.count(), pr.inflights.bytes()), (3, 3000));
    assert!(paused(&r, 2));

    // Acknowledging everything sent frees the whole window, and the rest of
    // the backlog (entries 6 and 7) follows.
    let mut ack = msg(MessageType::MsgAppResp, 2, 1);
    ack.index = 5;
    r.step(ack).unwrap();
    let sent: Vec<u64> = r
        .read_messages()
        .iter()
        .flat_map(|m| m.entries.iter().map(|e| e.index))
        .collect();
    assert_eq!(sent, vec![6, 7]);
    assert_eq!(r.trk.get(2).unwrap().inflights.bytes(), 2000);
    assert!(!paused(&r, 2));
}

/// Without a byte limit (max_inflight_bytes 0), only the message count
/// bounds the window, whatever the payload.
#[test]
fn test_max_inflight_bytes_zero_is_unlimited() {
    let mut c = new_test_config(1, 5, 1);
    c.max_inflight_msgs = 4;
    c.max_inflight_bytes = 0;
    let mut r = leader_replicating_to_2(&c);
    r.read_messages();
    // Entry 1 (empty) has not been sent yet: the first proposal carries it.
    let big = Bytes::from(vec![b'z'; 1 << 20]);
    for i in 0..4 {
        let mut m = msg(MessageType::MsgProp, 1, 1);
        m.entries = vec![Entry {
            data: Some(big.clone()),
            ..Entry::default()
        }];
        r.step(m).unwrap();
        assert_eq!(r.read_messages().len(), 1, "#{i}");
        // Paused only once the fourth message fills the count.
        assert_eq!(paused(&r, 2), i == 3, "#{i}");
    }
    assert_eq!(r.trk.get(2).unwrap().inflights.bytes(), 4 << 20);
}

/// max_committed_size_per_ready paginates committed entries: each Ready
/// hands out at most that many bytes of entries to apply (at least one
/// entry), and no further page comes until the host reports the handed-out
/// entries applied. (etcd's TestCommitPagination covers the basic case
/// through a Node; this drives a RawNode and separates append from apply.)
#[test]
fn test_max_committed_size_per_ready_paginates_committed_entries() {
    let s = new_test_storage(&[1], &[]);
    let mut c = new_test_config(1, 10, 1);
    c.max_committed_size_per_ready = 2048;
    let mut rn = crate::raw_node::RawNode::new(&c, s.clone()).unwrap();
    rn.campaign().unwrap();
    // Become leader and apply the empty entry.
    while rn.has_ready() {
        let rd = rn.ready();
        s.wl().append(&rd.entries).unwrap();
        rn.advance(rd);
    }
    assert_eq!(rn.raft().state, crate::raft::StateRole::Leader);
    assert_eq!(rn.raft().raft_log.applied, 1);

    let blob = Bytes::from(vec![b'a'; 1000]);
    for i in 0..5 {
        rn.propose(blob.clone())
            .unwrap_or_else(|e| panic!("#{i}: {e}"));
    }
    // First the five entries are appended; they commit once durable.
    let rd = rn.ready();
    assert_eq!(rd.entries.len(), 5);
    assert!(rd.committed_entries.is_empty());
    s.wl().append(&rd.entries).unwrap();
    rn.advance(rd);

    // Two 1000-byte entries fit in 2048 bytes, three do not.
    let rd = rn.ready();
    let got: Vec<u64> = rd.committed_entries.iter().map(|e| e.index).collect();
    assert_eq!(got, vec![2, 3]);
    assert!(crate::log::ents_size(&rd.committed_entries) <= 2048);
    assert_eq!(rn.raft().raft_log.committed, 6);
    // Persisted but not yet applied: no further page.
    rn.advance_append(rd);
    assert!(
        !rn.has_ready(),
        "a page came before the last one was applied"
    );
    let rd = rn.ready();
    assert!(rd.committed_entries.is_empty());
    rn.advance_append(rd);

    // Applied: the next pages follow.
    rn.advance_apply();
    let rd = rn.ready();
    let got: Vec<u64> = rd.committed_entries.iter().map(|e| e.index).collect();
    assert_eq!(got, vec![4, 5]);
    rn.advance(rd);
    let rd = rn.ready();
    let got: Vec<u64> = rd.committed_entries.iter().map(|e| e.index).collect();
    assert_eq!(got, vec![6]);
    rn.advance(rd);
    assert!(!rn.has_ready());
    assert_eq!(rn.raft().raft_log.applied, 6);

    // An entry larger than the page still goes out, alone.
    let large = Bytes::from(vec![b'b'; 5000]);
    rn.propose(large).unwrap();
    rn.propose(blob).unwrap();
    let rd = rn.ready();
    s.wl().append(&rd.entries).unwrap();
    rn.advance(rd);
    let rd = rn.ready();
    let got: Vec<u64> = rd.committed_entries.iter().map(|e| e.index).collect();
    assert_eq!(got, vec![7]);
    rn.advance(rd);
    let rd = rn.ready();
    let got: Vec<u64> = rd.committed_entries.iter().map(|e| e.index).collect();
    assert_eq!(got, vec![8]);
    rn.advance(rd);
}

/// max_size_per_msg = 0 means one entry per append; committed entries then
/// come one per Ready (max_committed_size_per_ready defaults to it), and
/// the node keeps working.
#[test]
fn test_max_size_per_msg_zero_sends_one_entry_at_a_time() {
    let s = new_test_storage(&[1, 2], &[]);
    let mut c = new_test_config(1, 10, 1);
    c.max_size_per_msg = 0;
    let mut rn = crate::raw_node::RawNode::new(&c, s.clone()).unwrap();
    rn.campaign().unwrap();
    let rd = rn.ready();
    s.wl().append(&rd.entries).unwrap();
    rn.advance(rd);
    rn.step(msg_term(MessageType::MsgVoteResp, 2, 1, 1))
        .unwrap();
    assert_eq!(rn.raft().state, crate::raft::StateRole::Leader);
    rn.propose(&b"a"[..]).unwrap();
    rn.propose(&b"b"[..]).unwrap();

    // Node 2 is probed with the first entry only; once it acknowledges,
    // the rest follow one entry per append.
    let mut sent = Vec::new();
    let mut applied = Vec::new();
    for _ in 0..20 {
        if !rn.has_ready() {
            break;
        }
        let rd = rn.ready();
        s.wl().append(&rd.entries).unwrap();
        assert!(
            rd.committed_entries.len() <= 1,
            "{:?}",
            rd.committed_entries
        );
        applied.extend(rd.committed_entries.iter().map(|e| e.index));
        let mut acks = Vec::new();
        for m in &rd.messages {
            if m.msg_type == MessageType::MsgApp {
                assert!(m.entries.len() <= 1, "{m:?}");
                sent.extend(m.entries.iter().map(|e| e.index));
                if let Some(e) = m.entries.last() {
                    let mut ack = msg_term(MessageType::MsgAppResp, 2, 1, 1);
                    ack.index = e.index;
                    acks.push(ack);
                }
            }
        }
        rn.advance(rd);
        for a in acks {
            rn.step(a).unwrap();
        }
    }
    assert_eq!(sent, vec![1, 2, 3]);
    assert_eq!(applied, vec![1, 2, 3]);
}
