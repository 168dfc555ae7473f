//! Linearizable reads (ReadIndex, safe and lease-based) and leadership
//! transfer, ported from etcd-io/raft raft_test.go and node_test.go, plus
//! the forget_leader*.txt interaction scripts.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use bytes::Bytes;

use super::*;
use crate::config::ReadOnlyOption;
use crate::errors::Error;
use crate::pb::{ConfChange, ConfChangeSingle, ConfChangeType, ConfChangeV2};
use crate::raft::ReadState;
use crate::raw_node::RawNode;

// ---------------------------------------------------------------------------
// Local helpers
// ---------------------------------------------------------------------------

/// A MsgReadIndex carrying `ctx` as its single entry.
fn read_msg(from: u64, to: u64, ctx: &'static [u8]) -> Message {
    let mut m = msg(MessageType::MsgReadIndex, from, to);
    m.entries = vec![Entry {
        data: Some(Bytes::from_static(ctx)),
        ..Entry::default()
    }];
    m
}

/// A proposal of one empty entry (etcd `Entries: []pb.Entry{{}}`).
fn empty_prop(from: u64, to: u64) -> Message {
    let mut m = msg(MessageType::MsgProp, from, to);
    m.entries = vec![Entry::default()];
    m
}

fn read_state(index: u64, ctx: &'static [u8]) -> ReadState {
    ReadState {
        index,
        request_ctx: Bytes::from_static(ctx),
    }
}

/// etcd test `checkLeaderTransferState`.
#[track_caller]
fn check_leader_transfer_state(r: &TestRaft, state: StateRole, lead: u64) {
    assert_eq!(r.state, state, "state of {}", r.id);
    assert_eq!(r.lead, lead, "lead of {}", r.id);
    assert_eq!(r.lead_transferee, INVALID_ID, "lead_transferee of {}", r.id);
}

const INVALID_ID: u64 = crate::raft::INVALID_ID;

/// Ticks node `id` once and delivers whatever it sends.
fn tick_and_send(nt: &mut Network, id: u64) {
    nt.peer_mut(id).tick();
    let msgs = nt.peer_mut(id).read_messages();
    nt.send(msgs);
}

/// A 3-voter (plus optional learners) network built from explicit nodes
/// with the given config tweak.
fn network_of(voters: &[u64], learners: &[u64], f: &dyn Fn(&mut Config)) -> Network {
    let mut peers = Vec::new();
    for id in voters.iter().chain(learners.iter()) {
        let mut c = new_test_config(*id, 10, 1);
        f(&mut c);
        let r = new_test_raft_with_config(&c, new_test_storage(voters, learners));
        peers.push(peer(r));
    }
    Network::new(peers)
}

// ---------------------------------------------------------------------------
// ReadIndex
// ---------------------------------------------------------------------------

/// etcd: TestReadOnlyOptionSafe
#[test]
fn test_read_only_option_safe() {
    let a = new_test_raft(1, 10, 1, new_test_storage(&[1, 2, 3], &[]));
    let b = new_test_raft(2, 10, 1, new_test_storage(&[1, 2, 3], &[]));
    let c = new_test_raft(3, 10, 1, new_test_storage(&[1, 2, 3], &[]));
    let mut nt = Network::new(vec![peer(a), peer(b), peer(c)]);
    let et = nt.peer(2).election_timeout;
    nt.peer_mut(2).randomized_election_timeout = et + 1;
    for _ in 0..et {
        nt.peer_mut(2).tick();
    }
    nt.campaign(1);
    assert_eq!(nt.peer(1).state, StateRole::Leader);

    let tests: [(u64, usize, u64, &'static [u8]); 6] = [
        (1, 10, 11, b"ctx1"),
        (2, 10, 21, b"ctx2"),
        (3, 10, 31, b"ctx3"),
        (1, 10, 41, b"ctx4"),
        (2, 10, 51, b"ctx5"),
        (3, 10, 61, b"ctx6"),
    ];
    for (i, (id, proposals, wri, wctx)) in tests.into_iter().enumerate() {
        for _ in 0..proposals {
            nt.send(vec![empty_prop(1, 1)]);
        }
        nt.send(vec![read_msg(id, id, wctx)]);
        let r = nt.peer_mut(id);
        assert!(!r.read_states.is_empty(), "#{i}: no read state");
        assert_eq!(r.read_states[0], read_state(wri, wctx), "#{i}");
        r.read_states.clear();
    }
}

/// etcd: TestReadOnlyWithLearner
#[test]
fn test_read_only_with_learner() {
    let s = new_test_storage(&[1], &[2]);
    let a = new_test_raft(1, 10, 1, s);
    let b = new_test_raft(2, 10, 1, new_test_storage(&[1], &[2]));
    let mut nt = Network::new(vec![peer(a), peer(b)]);
    let et = nt.peer(2).election_timeout;
    nt.peer_mut(2).randomized_election_timeout = et + 1;
    for _ in 0..et {
        nt.peer_mut(2).tick();
    }
    nt.campaign(1);
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert!(nt.peer(2).is_learner);

    let tests: [(u64, usize, u64, &'static [u8]); 4] = [
        (1, 10, 11, b"ctx1"),
        (2, 10, 21, b"ctx2"),
        (1, 10, 31, b"ctx3"),
        (2, 10, 41, b"ctx4"),
    ];
    for (i, (id, proposals, wri, wctx)) in tests.into_iter().enumerate() {
        for _ in 0..proposals {
            nt.send(vec![empty_prop(1, 1)]);
            next_ents(nt.peer_mut(1)); // append the entries on the leader
        }
        nt.send(vec![read_msg(id, id, wctx)]);
        let r = nt.peer_mut(id);
        assert!(!r.read_states.is_empty(), "#{i}: no read state");
        assert_eq!(r.read_states[0], read_state(wri, wctx), "#{i}");
        r.read_states.clear();
    }
}

/// etcd: TestReadOnlyOptionLease
#[test]
fn test_read_only_option_lease() {
    let lease = |c: &mut Config| {
        c.read_only_option = ReadOnlyOption::LeaseBased;
        c.check_quorum = true;
    };
    let mut nt = network_of(&[1, 2, 3], &[], &lease);
    for id in 1..=3 {
        assert_eq!(nt.peer(id).read_only_option, ReadOnlyOption::LeaseBased);
        assert!(nt.peer(id).check_quorum);
    }
    let et = nt.peer(2).election_timeout;
    nt.peer_mut(2).randomized_election_timeout = et + 1;
    for _ in 0..et {
        nt.peer_mut(2).tick();
    }
    nt.campaign(1);
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    // raftlet: a lease counts from the send time of a heartbeat round a
    // quorum acknowledged (etcd's leader serves lease reads before it heard
    // from anyone in its term); one heartbeat round establishes it.
    nt.peer_mut(1).tick();
    let msgs = nt.peer_mut(1).read_messages();
    nt.send(msgs);
    assert!(nt.peer(1).lease_valid());

    let tests: [(u64, usize, u64, &'static [u8]); 6] = [
        (1, 10, 11, b"ctx1"),
        (2, 10, 21, b"ctx2"),
        (3, 10, 31, b"ctx3"),
        (1, 10, 41, b"ctx4"),
        (2, 10, 51, b"ctx5"),
        (3, 10, 61, b"ctx6"),
    ];
    for (i, (id, proposals, wri, wctx)) in tests.into_iter().enumerate() {
        for _ in 0..proposals {
            nt.send(vec![empty_prop(1, 1)]);
        }
        // A lease-based read needs no heartbeat round: drop heartbeats to
        // show the leader answers from its lease alone.
        nt.ignore(MessageType::MsgHeartbeat);
        nt.send(vec![read_msg(id, id, wctx)]);
        nt.recover();
        let r = nt.peer_mut(id);
        assert!(!r.read_states.is_empty(), "#{i}: no read state");
        assert_eq!(r.read_states[0], read_state(wri, wctx), "#{i}");
        r.read_states.clear();
    }
}

/// raftlet: a lease-based read with no lease (no heartbeat round was
/// acknowledged yet, the lease ran out, or a transfer began) is confirmed by
/// a heartbeat round, as a safe read is; it is never answered from the
/// leader's state alone.
#[test]
fn lease_reads_without_a_lease_wait_for_a_heartbeat_round() {
    let lease = |c: &mut Config| {
        c.read_only_option = ReadOnlyOption::LeaseBased;
        c.check_quorum = true;
    };
    let mut nt = network_of(&[1, 2, 3], &[], &lease);
    nt.campaign(1);
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert!(!nt.peer(1).lease_valid(), "no round acknowledged yet");
    let read = |nt: &mut Network, ctx: &'static [u8]| {
        nt.ignore(MessageType::MsgHeartbeat);
        nt.send(vec![read_msg(1, 1, ctx)]);
        nt.recover();
        std::mem::take(&mut nt.peer_mut(1).read_states)
    };
    assert!(read(&mut nt, b"a").is_empty(), "answered without a lease");
    // Once heartbeats pass, a round confirms it (and gives a lease).
    nt.peer_mut(1).tick();
    let msgs = nt.peer_mut(1).read_messages();
    nt.send(msgs);
    let released = std::mem::take(&mut nt.peer_mut(1).read_states);
    assert_eq!(released.len(), 1);
    assert_eq!(&released[0].request_ctx[..], b"a");
    assert!(nt.peer(1).lease_valid());
    assert_eq!(read(&mut nt, b"b").len(), 1, "answered from the lease");
    // Without acknowledgements the lease runs out after half an election
    // timeout of the leader's ticks.
    nt.isolate(1);
    let et = nt.peer(1).election_timeout;
    for _ in 0..et / 2 {
        nt.peer_mut(1).tick();
        let msgs = nt.peer_mut(1).read_messages();
        nt.send(msgs);
    }
    assert!(!nt.peer(1).lease_valid(), "the lease outlived its length");
    assert!(read(&mut nt, b"c").is_empty());
    nt.recover();
    nt.peer_mut(1).tick();
    let msgs = nt.peer_mut(1).read_messages();
    nt.send(msgs);
    assert!(nt.peer(1).lease_valid());
    // A leadership transfer revokes the lease for the rest of the term.
    nt.ignore(MessageType::MsgTimeoutNow);
    nt.send(vec![Message::new(MessageType::MsgTransferLeader, 2, 1)]);
    assert!(!nt.peer(1).lease_valid(), "the lease survived a transfer");
}

/// raftlet: under lease-based reads, a node restarted from a term it was in
/// refuses votes for its first election timeout: it may have acknowledged
/// a lease round just before it stopped. A node that never was in a term
/// votes at once.
#[test]
fn lease_a_restarted_follower_refuses_votes_for_an_election_timeout() {
    let lease = |c: &mut Config| {
        c.read_only_option = ReadOnlyOption::LeaseBased;
        c.check_quorum = true;
    };
    let storage =
        MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1, 2, 3])).expect("storage");
    storage.wl().set_hard_state(HardState {
        term: 2,
        vote: 0,
        commit: 0,
    });
    let mut c = new_test_config(2, 10, 1);
    lease(&mut c);
    let mut r = Raft::new(&c, storage).expect("restart");
    let mut vote = Message::new(MessageType::MsgVote, 3, 2);
    vote.term = 3;
    r.step(vote.clone()).expect("vote");
    assert_eq!(r.term, 2, "a vote inside the restart lease moved the term");
    for _ in 0..r.election_timeout {
        r.tick();
    }
    r.step(vote).expect("vote");
    assert_eq!((r.term, r.vote), (3, 3));

    let mut fresh = new_test_raft(2, 10, 1, new_test_storage(&[1, 2, 3], &[]));
    fresh.read_only_option = ReadOnlyOption::LeaseBased;
    let mut v = Message::new(MessageType::MsgVote, 3, 2);
    v.term = 1;
    fresh.step(v).expect("vote");
    assert_eq!((fresh.term, fresh.vote), (1, 3));
}

/// etcd: TestReadOnlyForNewLeader
#[test]
fn test_read_only_for_new_leader() {
    // (id, committed, applied, compact_index)
    let node_configs = [(1u64, 1u64, 1u64, 0u64), (2, 2, 2, 2), (3, 2, 2, 2)];
    let mut peers = Vec::new();
    for (id, committed, applied, compact_index) in node_configs {
        let storage = new_test_storage(&[1, 2, 3], &[]);
        storage
            .wl()
            .append(&[ent(1, 1), ent(1, 2)])
            .expect("append");
        storage.wl().set_hard_state(HardState {
            term: 1,
            vote: 0,
            commit: committed,
        });
        if compact_index != 0 {
            storage.wl().compact(compact_index).expect("compact");
        }
        let mut c = new_test_config(id, 10, 1);
        c.applied = applied;
        peers.push(peer(new_test_raft_with_config(&c, storage)));
    }
    let mut nt = Network::new(peers);

    // Without appends, the new leader cannot commit an entry of its term.
    nt.ignore(MessageType::MsgApp);
    nt.campaign(1);
    assert_eq!(nt.peer(1).state, StateRole::Leader);

    // The read is held, not answered and not dropped.
    let windex = 4;
    let wctx: &'static [u8] = b"ctx";
    nt.send(vec![read_msg(1, 1, wctx)]);
    assert!(nt.peer(1).read_states.is_empty());
    assert_eq!(nt.peer(1).read_only.waiting_len(), 1);

    nt.recover();

    // Make the leader commit an entry of its term.
    let ht = nt.peer(1).heartbeat_timeout;
    for _ in 0..ht {
        nt.peer_mut(1).tick();
    }
    nt.send(vec![empty_prop(1, 1)]);
    let sm = nt.peer(1);
    assert_eq!(sm.raft_log.committed, 4);
    let last_log_term =
        crate::log::RaftLog::<crate::storage::MemoryStorage>::zero_term_on_out_of_bounds(
            sm.raft_log.term(sm.raft_log.committed),
        );
    assert_eq!(last_log_term, sm.term);

    // The postponed read was answered once the leader committed in its term.
    assert_eq!(sm.read_states, vec![read_state(windex, wctx)]);
    assert!(sm.read_only.no_waiting());

    // New reads are served at once.
    nt.send(vec![read_msg(1, 1, wctx)]);
    let sm = nt.peer(1);
    assert_eq!(sm.read_states.len(), 2);
    assert_eq!(sm.read_states[1], read_state(windex, wctx));
}

/// etcd: TestReadOnlyDuplicateRequest (etcd#20418)
///
/// Two reads with the same context issued at different times, the second
/// after a write was committed: each gets its own answer, the second one's
/// index covers the write, and the heartbeat responses of the first round
/// never release the second read.
#[test]
fn test_read_only_duplicate_request() {
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);
    let ctx: &'static [u8] = b"dup";

    // Delivers heartbeats to the followers and returns their responses
    // without handing them to the leader yet.
    fn heartbeat_round(nt: &mut Network) -> Vec<Message> {
        let hbs = nt.peer_mut(1).read_messages();
        assert_eq!(hbs.len(), 2, "{hbs:?}");
        let mut resps = Vec::new();
        for hb in hbs {
            assert_eq!(hb.msg_type, MessageType::MsgHeartbeat);
            // raftlet: the round carries the leader's sequence number, not
            // the request context.
            assert_ne!(hb.context(), b"dup");
            let to = hb.to;
            nt.peer_mut(to).step(hb).expect("heartbeat");
            let out = nt.peer_mut(to).read_messages();
            resps.extend(
                out.into_iter()
                    .filter(|m| m.msg_type == MessageType::MsgHeartbeatResp),
            );
        }
        assert_eq!(resps.len(), 2);
        resps
    }

    // First read, at the current commit index; its acknowledgements are held.
    nt.peer_mut(1).step(read_msg(1, 1, ctx)).expect("read 1");
    let first_index = nt.peer(1).raft_log.committed;
    let resp1 = heartbeat_round(&mut nt);
    assert!(nt.peer(1).read_states.is_empty());

    // A write is proposed and acknowledged (committed on the leader).
    nt.propose(1, b"write");
    let w = nt.peer(1).raft_log.last_index();
    assert_eq!(nt.peer(1).raft_log.committed, w);
    assert!(w > first_index);

    // The same context again, after the write.
    nt.peer_mut(1).step(read_msg(1, 1, ctx)).expect("read 2");
    let resp2 = heartbeat_round(&mut nt);
    assert!(nt.peer(1).read_states.is_empty());
    assert_eq!(nt.peer(1).read_only.pending_len(), 2);

    // The (late) responses of the first round answer the first read only.
    for m in resp1 {
        nt.peer_mut(1).step(m).expect("resp 1");
    }
    let rs = std::mem::take(&mut nt.peer_mut(1).read_states);
    assert_eq!(rs, vec![read_state(first_index, ctx)]);
    assert_eq!(nt.peer(1).read_only.pending_len(), 1);

    // The second round answers the second read, at an index covering the write.
    for m in resp2 {
        nt.peer_mut(1).step(m).expect("resp 2");
    }
    let rs = std::mem::take(&mut nt.peer_mut(1).read_states);
    assert_eq!(rs.len(), 1);
    assert!(rs[0].index >= w, "read after write at {w} got {:?}", rs[0]);
    assert_eq!(rs[0].request_ctx, Bytes::from_static(ctx));
    assert_eq!(nt.peer(1).read_only.pending_len(), 0);

    // Both duplicates pending, and only the newer round acknowledged: a
    // newer acknowledgement covers older reads, and each read still gets its
    // own answer with its own index.
    nt.peer_mut(1).step(read_msg(1, 1, ctx)).expect("read 3");
    let third_index = nt.peer(1).raft_log.committed;
    let _stale = heartbeat_round(&mut nt);
    nt.propose(1, b"write 2");
    let w2 = nt.peer(1).raft_log.last_index();
    assert_eq!(nt.peer(1).raft_log.committed, w2);
    nt.peer_mut(1).step(read_msg(1, 1, ctx)).expect("read 4");
    let resp4 = heartbeat_round(&mut nt);
    for m in resp4 {
        nt.peer_mut(1).step(m).expect("resp 4");
    }
    let rs = std::mem::take(&mut nt.peer_mut(1).read_states);
    assert_eq!(rs, vec![read_state(third_index, ctx), read_state(w2, ctx)]);
    assert_eq!(nt.peer(1).read_only.pending_len(), 0);
}

/// etcd#20418, the stale-leader form: acknowledgements of an old read round,
/// replayed late on a leader that has since been partitioned and replaced,
/// answer only the read they confirmed, never a newer read that reuses its
/// context.
#[test]
fn test_stale_leader_replayed_acks_do_not_release_duplicate_read() {
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);
    nt.propose(1, b"a");
    let ctx: &'static [u8] = b"dup";

    // Round 1: the followers acknowledge, but the answers are delayed.
    nt.peer_mut(1).step(read_msg(1, 1, ctx)).expect("read 1");
    let first_index = nt.peer(1).raft_log.committed;
    let hbs = nt.peer_mut(1).read_messages();
    let mut delayed = Vec::new();
    for hb in hbs {
        let to = hb.to;
        nt.peer_mut(to).step(hb).expect("heartbeat");
        delayed.extend(
            nt.peer_mut(to)
                .read_messages()
                .into_iter()
                .filter(|m| m.msg_type == MessageType::MsgHeartbeatResp),
        );
    }
    assert_eq!(delayed.len(), 2);

    // 1 is cut off; 2 takes over and commits a newer write.
    nt.isolate(1);
    nt.campaign(2);
    assert_eq!(nt.peer(2).state, StateRole::Leader);
    nt.propose(2, b"b");
    let w = nt.peer(2).raft_log.committed;
    assert_eq!(w, nt.peer(2).raft_log.last_index());
    assert_eq!(nt.peer(1).state, StateRole::Leader, "1 does not know yet");

    // The host retries the read with the same context on the stale leader.
    nt.send(vec![read_msg(1, 1, ctx)]);
    assert!(nt.peer(1).read_states.is_empty());
    assert_eq!(nt.peer(1).read_only.pending_len(), 2);

    // The delayed acknowledgements answer the first read only.
    for m in delayed {
        nt.peer_mut(1).step(m).expect("delayed ack");
    }
    assert_eq!(nt.peer(1).read_states, vec![read_state(first_index, ctx)]);
    assert!(first_index < w);
    assert_eq!(nt.peer(1).read_only.pending_len(), 1);
    nt.peer_mut(1).read_states.clear();

    // Nothing the stale leader does on its own answers the retry.
    let et = nt.peer(1).election_timeout;
    for _ in 0..(2 * et) {
        tick_and_send(&mut nt, 1);
        assert!(nt.peer(1).read_states.is_empty());
    }
    // Healed, it learns of the new term and steps down; the retry is gone.
    nt.recover();
    tick_and_send(&mut nt, 2);
    assert_eq!(nt.peer(1).state, StateRole::Follower);
    assert_eq!(nt.peer(1).lead, 2);
    assert!(nt.peer(1).read_states.is_empty());
    assert_eq!(nt.peer(1).read_only.pending_len(), 0);
}

/// etcd: TestRaftFreesReadOnlyMem
#[test]
fn test_raft_frees_read_only_mem() {
    let mut sm = new_test_raft(1, 5, 1, new_test_storage(&[1, 2], &[]));
    sm.become_candidate();
    sm.become_leader();
    let li = sm.raft_log.last_index();
    sm.raft_log.commit_to(li);

    let ctx: &'static [u8] = b"ctx";

    // The leader starts a read for follower 2 with a heartbeat round.
    sm.step(read_msg(2, 0, ctx)).expect("read");
    let msgs = sm.read_messages();
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!(msgs[0].msg_type, MessageType::MsgHeartbeat);
    // raftlet: the heartbeat carries the leader's round sequence number,
    // not the request context.
    assert!(msgs[0].context.is_some());
    assert_ne!(msgs[0].context(), ctx);
    assert_eq!(sm.read_only.pending_len(), 1);

    // One follower's acknowledgement is a quorum of two: the read is
    // answered and forgotten.
    let mut resp = msg(MessageType::MsgHeartbeatResp, 2, 1);
    resp.context = msgs[0].context.clone();
    sm.step(resp).expect("resp");
    assert_eq!(sm.read_only.pending_len(), 0);
    let out = sm.read_messages();
    let answers: Vec<&Message> = out
        .iter()
        .filter(|m| m.msg_type == MessageType::MsgReadIndexResp)
        .collect();
    assert_eq!(answers.len(), 1, "{out:?}");
    assert_eq!(answers[0].to, 2);
    assert_eq!(answers[0].index, li);
    assert_eq!(answers[0].entries[0].data.as_deref(), Some(ctx));

    // A second acknowledgement of the same round finds nothing to release.
    let mut resp = msg(MessageType::MsgHeartbeatResp, 2, 1);
    resp.context = msgs[0].context.clone();
    sm.step(resp).expect("resp");
    assert_eq!(sm.read_only.pending_len(), 0);
    assert!(!sm
        .read_messages()
        .iter()
        .any(|m| m.msg_type == MessageType::MsgReadIndexResp));
}

/// etcd: TestNodeReadIndexToOldLeader
#[test]
fn test_node_read_index_to_old_leader() {
    let r1 = new_test_raft(1, 10, 1, new_test_storage(&[1, 2, 3], &[]));
    let r2 = new_test_raft(2, 10, 1, new_test_storage(&[1, 2, 3], &[]));
    let r3 = new_test_raft(3, 10, 1, new_test_storage(&[1, 2, 3], &[]));
    let mut nt = Network::new(vec![peer(r1), peer(r2), peer(r3)]);

    nt.campaign(1);

    let test_entries = vec![Entry {
        data: Some(Bytes::from_static(b"testdata")),
        ..Entry::default()
    }];
    let read = |from: u64, to: u64| {
        let mut m = msg(MessageType::MsgReadIndex, from, to);
        m.entries = test_entries.clone();
        m
    };

    // A follower forwards the read to the leader without setting a term.
    nt.peer_mut(2).step(read(2, 2)).expect("read on 2");
    assert_eq!(nt.peer(2).msgs.len(), 1);
    let read_indx_msg1 = read(2, 1);
    assert_eq!(nt.peer(2).msgs[0], read_indx_msg1);

    nt.peer_mut(3).step(read(3, 3)).expect("read on 3");
    assert_eq!(nt.peer(3).msgs.len(), 1);
    let read_indx_msg2 = read(3, 1);
    assert_eq!(nt.peer(3).msgs[0], read_indx_msg2);

    // Elect 3.
    nt.campaign(3);
    assert_eq!(nt.peer(3).state, StateRole::Leader);
    assert_eq!(nt.peer(1).state, StateRole::Follower);

    // The old leader forwards the reads it receives late to the new leader.
    nt.peer_mut(1).step(read_indx_msg1).expect("forward 1");
    nt.peer_mut(1).step(read_indx_msg2).expect("forward 2");
    let r1 = nt.peer(1);
    assert_eq!(r1.msgs.len(), 2);
    assert_eq!(r1.msgs[0], read(2, 3));
    assert_eq!(r1.msgs[1], read(3, 3));
}

/// Issue acceptance: a leader cut off from the others never answers a read,
/// neither while it still believes it leads nor after it steps down, nor
/// once it rejoins under a new leader.
#[test]
fn test_read_on_partitioned_old_leader_never_answered() {
    let cq = |c: &mut Config| c.check_quorum = true;
    let mut nt = network_of(&[1, 2, 3], &[], &cq);
    nt.campaign(1);
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    nt.propose(1, b"before");

    nt.isolate(1);
    nt.send(vec![read_msg(1, 1, b"stale")]);
    assert!(nt.peer(1).read_states.is_empty());
    assert_eq!(nt.peer(1).read_only.pending_len(), 1);

    // Run the whole cluster for a while: heartbeats from 1 are lost, 1
    // steps down at its check-quorum, and 2 or 3 takes over.
    let et = nt.peer(1).election_timeout;
    let mut stepped_down = false;
    for _ in 0..(4 * et) {
        for id in 1..=3 {
            tick_and_send(&mut nt, id);
        }
        assert!(
            nt.peer(1).read_states.is_empty(),
            "isolated leader answered a read"
        );
        if nt.peer(1).state != StateRole::Leader {
            stepped_down = true;
        }
    }
    assert!(stepped_down, "isolated leader never stepped down");
    assert_eq!(nt.peer(1).read_only.pending_len(), 0);
    let new_leader = if nt.peer(2).state == StateRole::Leader {
        2
    } else {
        3
    };
    assert_eq!(nt.peer(new_leader).state, StateRole::Leader);
    nt.propose(new_leader, b"after");

    // Healing the partition does not resurrect the old read.
    nt.recover();
    for _ in 0..(2 * et) {
        for id in 1..=3 {
            tick_and_send(&mut nt, id);
        }
        assert!(
            nt.peer(1).read_states.is_empty(),
            "old read answered after healing"
        );
    }
    assert_eq!(nt.peer(1).lead, nt.peer(2).lead);
    assert_ne!(nt.peer(1).lead, 1);
}

/// Issue acceptance: a read issued after a write was acknowledged returns an
/// index at least the write's, from the leader, from a follower, and from a
/// new leader that had not yet learned the write was committed.
#[test]
fn test_read_after_acknowledged_write() {
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);

    // The write reaches 2 and 3, but the news that it committed does not.
    let w = nt.peer(1).raft_log.last_index() + 1;
    nt.msg_hook = Some(Box::new(move |m: &Message| {
        !(m.from == 1
            && matches!(m.msg_type, MessageType::MsgApp | MessageType::MsgHeartbeat)
            && m.commit >= w)
    }));
    nt.propose(1, b"write");
    assert_eq!(nt.peer(1).raft_log.last_index(), w);
    assert_eq!(nt.peer(1).raft_log.committed, w, "write not acknowledged");
    assert!(nt.peer(2).raft_log.committed < w);
    assert!(nt.peer(3).raft_log.committed < w);

    nt.msg_hook = None;

    // Hand leadership to 2 while it still thinks the write is uncommitted.
    let w_commit_on_2 = nt.peer(2).raft_log.committed;
    assert!(w_commit_on_2 < w);
    nt.ignore(MessageType::MsgApp);
    nt.send(vec![msg(MessageType::MsgTransferLeader, 2, 1)]);
    assert_eq!(nt.peer(2).state, StateRole::Leader);
    assert!(nt.peer(2).raft_log.committed < w);
    // A heartbeat tells 3 who leads (appends are still lost).
    let ht = nt.peer(2).heartbeat_timeout;
    for _ in 0..ht {
        tick_and_send(&mut nt, 2);
    }
    assert_eq!(nt.peer(3).lead, 2);
    assert!(nt.peer(2).raft_log.committed < w);

    // Reads on the new leader, locally and from a follower, wait...
    nt.send(vec![read_msg(2, 2, b"new-leader")]);
    nt.send(vec![read_msg(3, 3, b"new-leader-via-3")]);
    assert!(nt.peer(2).read_states.is_empty());
    assert!(nt.peer(3).read_states.is_empty());
    assert_eq!(nt.peer(2).read_only.waiting_len(), 2);

    // ... and are answered once it committed an entry of its term.
    nt.recover();
    for _ in 0..ht {
        tick_and_send(&mut nt, 2);
    }
    assert!(nt.peer(2).raft_log.committed > w);
    let rs = std::mem::take(&mut nt.peer_mut(2).read_states);
    assert_eq!(rs.len(), 1);
    assert!(rs[0].index >= w, "{rs:?}");
    assert_eq!(rs[0].request_ctx, Bytes::from_static(b"new-leader"));
    let rs = std::mem::take(&mut nt.peer_mut(3).read_states);
    assert_eq!(rs.len(), 1);
    assert!(rs[0].index >= w, "{rs:?}");
    assert_eq!(rs[0].request_ctx, Bytes::from_static(b"new-leader-via-3"));

    // A write on the new leader that its followers don't know is committed:
    // reads on the leader and through both followers cover it.
    let w2 = nt.peer(2).raft_log.last_index() + 1;
    nt.msg_hook = Some(Box::new(move |m: &Message| {
        !(m.from == 2 && m.msg_type == MessageType::MsgApp && m.commit >= w2)
    }));
    nt.propose(2, b"write 2");
    assert_eq!(nt.peer(2).raft_log.committed, w2, "write not acknowledged");
    assert!(nt.peer(1).raft_log.committed < w2);
    assert!(nt.peer(3).raft_log.committed < w2);
    for (id, ctx) in [(2, &b"on-leader"[..]), (1, b"via-1"), (3, b"via-3")] {
        nt.send(vec![read_msg(id, id, ctx)]);
        let rs = std::mem::take(&mut nt.peer_mut(id).read_states);
        assert_eq!(rs.len(), 1, "read on {id}");
        assert!(rs[0].index >= w2, "read on {id}: {rs:?}");
        assert_eq!(rs[0].request_ctx, Bytes::copy_from_slice(ctx));
    }
}

/// Issue acceptance: lease-based reads need check_quorum.
#[test]
fn test_lease_based_reads_require_check_quorum() {
    let mut c = new_test_config(1, 10, 1);
    c.read_only_option = ReadOnlyOption::LeaseBased;
    c.check_quorum = false;
    let err = c.validate().unwrap_err();
    assert!(
        matches!(&err, Error::ConfigInvalid(s) if s.contains("check_quorum")),
        "{err:?}"
    );
    assert!(Raft::new(&c, new_test_storage(&[1], &[])).is_err());
    assert!(RawNode::new(&c, new_test_storage(&[1], &[])).is_err());

    c.check_quorum = true;
    c.validate().expect("lease-based reads with check_quorum");
    c.read_only_option = ReadOnlyOption::Safe;
    c.check_quorum = false;
    c.validate().expect("safe reads without check_quorum");
}

/// Issue acceptance: a learner's read goes through the leader (MsgReadIndex
/// out, MsgReadIndexResp back) and appears as a ReadState on the learner;
/// the learner's own heartbeat acknowledgement does not count as a vote.
#[test]
fn test_learner_read_index_served_through_leader() {
    let mut nt = network_of(&[1, 2, 3], &[4], &|_| {});
    nt.campaign(1);
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert!(nt.peer(4).is_learner);
    nt.propose(1, b"x");
    let committed = nt.peer(1).raft_log.committed;
    assert_eq!(nt.peer(4).lead, 1);

    let seen: Rc<RefCell<Vec<(MessageType, u64, u64)>>> = Rc::default();
    let log = Rc::clone(&seen);
    nt.msg_hook = Some(Box::new(move |m: &Message| {
        log.borrow_mut().push((m.msg_type, m.from, m.to));
        true
    }));
    nt.send(vec![read_msg(4, 4, b"learner")]);
    let seen_now = seen.borrow().clone();
    assert!(
        seen_now.contains(&(MessageType::MsgReadIndex, 4, 1)),
        "{seen_now:?}"
    );
    assert!(
        seen_now.contains(&(MessageType::MsgReadIndexResp, 1, 4)),
        "{seen_now:?}"
    );
    assert_eq!(
        nt.peer(4).read_states,
        vec![read_state(committed, b"learner")]
    );
    assert!(nt.peer(1).read_states.is_empty());
    nt.peer_mut(4).read_states.clear();

    // Only the learner acknowledges the round: no quorum, no answer.
    nt.msg_hook = None;
    nt.drop(2, 1, 1.0);
    nt.drop(3, 1, 1.0);
    nt.send(vec![read_msg(4, 4, b"learner-2")]);
    assert!(nt.peer(4).read_states.is_empty());
    assert_eq!(nt.peer(1).read_only.pending_len(), 1);
    // One voter's acknowledgement completes the quorum.
    nt.recover();
    tick_and_send(&mut nt, 1);
    assert_eq!(
        nt.peer(4).read_states,
        vec![read_state(committed, b"learner-2")]
    );
}

/// Issue acceptance (raftlet): a ReadIndex with no leader to serve it is
/// refused with NoLeader, on a follower and on a candidate, both on the
/// state machine and through RawNode.
#[test]
fn test_read_index_without_leader() {
    let mut r = new_test_raft(2, 10, 1, new_test_storage(&[1, 2, 3], &[]));
    assert_eq!(r.lead, INVALID_ID);
    // raftlet: etcd drops the request silently; raftlet reports it.
    assert_eq!(r.step(read_msg(2, 2, b"ctx")), Err(Error::NoLeader));
    assert!(r.read_messages().is_empty());

    r.become_candidate();
    assert_eq!(r.step(read_msg(2, 2, b"ctx")), Err(Error::NoLeader));
    r.become_pre_candidate();
    assert_eq!(r.step(read_msg(2, 2, b"ctx")), Err(Error::NoLeader));

    let mut rn = RawNode::new(
        &new_test_config(1, 10, 1),
        new_test_storage(&[1, 2, 3], &[]),
    )
    .expect("raw node");
    assert_eq!(rn.read_index(&b"ctx"[..]), Err(Error::NoLeader));
    assert!(!rn.has_ready());

    // A follower that forgot its leader refuses too.
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);
    nt.peer_mut(2)
        .step(msg(MessageType::MsgForgetLeader, 0, 0))
        .expect("forget");
    assert_eq!(
        nt.peer_mut(2).step(read_msg(2, 2, b"ctx")),
        Err(Error::NoLeader)
    );
}

// ---------------------------------------------------------------------------
// Leader transfer
// ---------------------------------------------------------------------------

/// etcd: TestLeaderTransferToUpToDateNode
#[test]
fn test_leader_transfer_to_up_to_date_node() {
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);
    assert_eq!(nt.peer(1).lead, 1);

    // Transfer leadership to 2.
    nt.send(vec![msg(MessageType::MsgTransferLeader, 2, 1)]);
    check_leader_transfer_state(nt.peer(1), StateRole::Follower, 2);

    // After some replication, transfer it back to 1.
    nt.send(vec![empty_prop(1, 1)]);
    nt.send(vec![msg(MessageType::MsgTransferLeader, 1, 2)]);
    check_leader_transfer_state(nt.peer(1), StateRole::Leader, 1);
}

/// etcd: TestLeaderTransferToUpToDateNodeFromFollower
#[test]
fn test_leader_transfer_to_up_to_date_node_from_follower() {
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);
    assert_eq!(nt.peer(1).lead, 1);

    // The request goes to the follower, which forwards it to the leader.
    nt.send(vec![msg(MessageType::MsgTransferLeader, 2, 2)]);
    check_leader_transfer_state(nt.peer(1), StateRole::Follower, 2);

    nt.send(vec![empty_prop(1, 1)]);
    nt.send(vec![msg(MessageType::MsgTransferLeader, 1, 1)]);
    check_leader_transfer_state(nt.peer(1), StateRole::Leader, 1);
}

/// etcd: TestLeaderTransferWithCheckQuorum
#[test]
fn test_leader_transfer_with_check_quorum() {
    let mut nt = Network::new(vec![None, None, None]);
    for i in 1..=3u64 {
        let r = nt.peer_mut(i);
        r.check_quorum = true;
        r.randomized_election_timeout = r.election_timeout + i as u32;
    }
    // Let 2's election timer expire so that it can vote for 1.
    let et = nt.peer(2).election_timeout;
    for _ in 0..et {
        nt.peer_mut(2).tick();
    }
    nt.campaign(1);
    assert_eq!(nt.peer(1).state, StateRole::Leader);

    // 2 and 3 heard from the leader just now (inside its lease); the
    // transfer still works.
    nt.send(vec![msg(MessageType::MsgTransferLeader, 2, 1)]);
    check_leader_transfer_state(nt.peer(1), StateRole::Follower, 2);

    nt.send(vec![empty_prop(1, 1)]);
    nt.send(vec![msg(MessageType::MsgTransferLeader, 1, 2)]);
    check_leader_transfer_state(nt.peer(1), StateRole::Leader, 1);
}

/// A transfer under pre-vote and check-quorum: the transferee skips the
/// pre-vote round and its vote request overrides the others' leader lease.
#[test]
fn test_leader_transfer_with_pre_vote_and_check_quorum() {
    let mut nt = network_of(&[1, 2, 3], &[], &|c| {
        c.pre_vote = true;
        c.check_quorum = true;
    });
    nt.campaign(1);
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    nt.propose(1, b"x");
    let term = nt.peer(1).term;

    let seen: Rc<RefCell<Vec<MessageType>>> = Rc::default();
    let log = Rc::clone(&seen);
    nt.msg_hook = Some(Box::new(move |m: &Message| {
        log.borrow_mut().push(m.msg_type);
        true
    }));
    nt.send(vec![msg(MessageType::MsgTransferLeader, 3, 1)]);
    check_leader_transfer_state(nt.peer(1), StateRole::Follower, 3);
    assert_eq!(nt.peer(3).state, StateRole::Leader);
    assert_eq!(nt.peer(3).term, term + 1);
    assert_eq!(nt.peer(2).lead, 3);
    let seen = seen.borrow();
    assert!(seen.contains(&MessageType::MsgTimeoutNow));
    assert!(seen.contains(&MessageType::MsgVote));
    assert!(!seen.contains(&MessageType::MsgPreVote), "{seen:?}");
}

/// etcd: TestLeaderTransferToSlowFollower
#[test]
fn test_leader_transfer_to_slow_follower() {
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);

    nt.isolate(3);
    nt.send(vec![empty_prop(1, 1)]);

    nt.recover();
    assert_eq!(nt.peer(1).trk.progress[&3].matched, 1);

    // Transfer to 3 while it lacks an entry: the leader catches it up first.
    nt.send(vec![msg(MessageType::MsgTransferLeader, 3, 1)]);
    check_leader_transfer_state(nt.peer(1), StateRole::Follower, 3);
}

/// etcd: TestLeaderTransferAfterSnapshot
#[test]
fn test_leader_transfer_after_snapshot() {
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);

    nt.isolate(3);
    nt.send(vec![empty_prop(1, 1)]);
    next_ents(nt.peer_mut(1));
    let applied = nt.peer(1).raft_log.applied;
    let cs = ConfState {
        voters: nt.peer(1).trk.voter_nodes(),
        ..ConfState::default()
    };
    let s1 = nt.storage[&1].clone();
    s1.wl()
        .create_snapshot(applied, Some(cs), None)
        .expect("snapshot");
    s1.wl().compact(applied).expect("compact");

    nt.recover();
    assert_eq!(nt.peer(1).trk.progress[&3].matched, 1);

    // Hold 3's acknowledgement of the snapshot until it is applied.
    let filtered: Rc<RefCell<Option<Message>>> = Rc::default();
    let slot = Rc::clone(&filtered);
    nt.msg_hook = Some(Box::new(move |m: &Message| {
        if m.msg_type != MessageType::MsgAppResp || m.from != 3 || m.reject {
            return true;
        }
        *slot.borrow_mut() = Some(m.clone());
        false
    }));
    // Transfer to 3 while it needs a snapshot.
    nt.send(vec![msg(MessageType::MsgTransferLeader, 3, 1)]);
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    let held = filtered
        .borrow_mut()
        .take()
        .expect("3 acknowledged the snapshot");

    // Apply the snapshot on 3 and let the acknowledgement through.
    let follower = nt.peer_mut(3);
    let snap_index = follower
        .raft_log
        .next_unstable_snapshot()
        .expect("pending snapshot")
        .metadata
        .index;
    follower.persist();
    follower.applied_to(snap_index, 0);
    nt.msg_hook = None;
    nt.send(vec![held]);

    check_leader_transfer_state(nt.peer(1), StateRole::Follower, 3);
}

/// etcd: TestLeaderTransferToSelf
#[test]
fn test_leader_transfer_to_self() {
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);

    // Transferring to the leader itself does nothing.
    nt.send(vec![msg(MessageType::MsgTransferLeader, 1, 1)]);
    check_leader_transfer_state(nt.peer(1), StateRole::Leader, 1);
}

/// etcd: TestLeaderTransferToNonExistingNode
#[test]
fn test_leader_transfer_to_non_existing_node() {
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);

    // raftlet: refused with TransferRefused (etcd ignores it silently).
    let res = nt
        .peer_mut(1)
        .step(msg(MessageType::MsgTransferLeader, 4, 1));
    assert!(matches!(res, Err(Error::TransferRefused(_))), "{res:?}");
    assert!(nt.peer_mut(1).read_messages().is_empty());
    check_leader_transfer_state(nt.peer(1), StateRole::Leader, 1);
    assert_eq!(nt.peer(1).election_elapsed, 0);
}

/// etcd: TestLeaderTransferTimeout
#[test]
fn test_leader_transfer_timeout() {
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);

    nt.isolate(3);

    // Transfer to the isolated node and wait for the timeout.
    nt.send(vec![msg(MessageType::MsgTransferLeader, 3, 1)]);
    assert_eq!(nt.peer(1).lead_transferee, 3);

    let (ht, et) = (nt.peer(1).heartbeat_timeout, nt.peer(1).election_timeout);
    for _ in 0..ht {
        nt.peer_mut(1).tick();
    }
    assert_eq!(nt.peer(1).lead_transferee, 3);

    for _ in 0..(et - ht) {
        nt.peer_mut(1).tick();
    }
    check_leader_transfer_state(nt.peer(1), StateRole::Leader, 1);
}

/// etcd: TestLeaderTransferIgnoreProposal
#[test]
fn test_leader_transfer_ignore_proposal() {
    let s = new_test_storage(&[1, 2, 3], &[]);
    let r = new_test_raft(1, 10, 1, s);
    let mut nt = Network::new(vec![peer(r), None, None]);
    nt.campaign(1);

    nt.isolate(3);

    next_ents(nt.peer_mut(1)); // handle the empty entry

    // Leave a transfer pending, then propose.
    nt.send(vec![msg(MessageType::MsgTransferLeader, 3, 1)]);
    assert_eq!(nt.peer(1).lead_transferee, 3);

    nt.send(vec![empty_prop(1, 1)]);
    let res = nt.peer_mut(1).step(empty_prop(1, 1));
    assert_eq!(res, Err(Error::ProposalDropped));

    assert_eq!(nt.peer(1).trk.progress[&1].matched, 1);
}

/// Issue acceptance: proposals are refused only while the transfer is under
/// way; once it is aborted at the election timeout they are accepted again.
#[test]
fn test_leader_transfer_aborted_resumes_proposals() {
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);
    nt.isolate(3);

    nt.send(vec![msg(MessageType::MsgTransferLeader, 3, 1)]);
    assert_eq!(nt.peer(1).lead_transferee, 3);
    let last = nt.peer(1).raft_log.last_index();
    assert_eq!(
        nt.peer_mut(1).step(empty_prop(1, 1)),
        Err(Error::ProposalDropped)
    );
    assert_eq!(nt.peer(1).raft_log.last_index(), last);

    let et = nt.peer(1).election_timeout;
    for _ in 0..(et - 1) {
        tick_and_send(&mut nt, 1);
    }
    // Still pending one tick before the timeout.
    assert_eq!(nt.peer(1).lead_transferee, 3);
    tick_and_send(&mut nt, 1);
    check_leader_transfer_state(nt.peer(1), StateRole::Leader, 1);

    nt.send(vec![empty_prop(1, 1)]);
    assert_eq!(nt.peer(1).raft_log.last_index(), last + 1);
    assert_eq!(nt.peer(1).raft_log.committed, last + 1);
}

/// etcd: TestLeaderTransferReceiveHigherTermVote
#[test]
fn test_leader_transfer_receive_higher_term_vote() {
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);

    nt.isolate(3);

    nt.send(vec![msg(MessageType::MsgTransferLeader, 3, 1)]);
    assert_eq!(nt.peer(1).lead_transferee, 3);

    let mut hup = msg(MessageType::MsgHup, 2, 2);
    hup.index = 1;
    hup.term = 2;
    nt.send(vec![hup]);

    check_leader_transfer_state(nt.peer(1), StateRole::Follower, 2);
}

/// etcd: TestLeaderTransferRemoveNode
#[test]
fn test_leader_transfer_remove_node() {
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);

    nt.ignore(MessageType::MsgTimeoutNow);

    // The transferee is removed while the transfer is under way.
    nt.send(vec![msg(MessageType::MsgTransferLeader, 3, 1)]);
    assert_eq!(nt.peer(1).lead_transferee, 3);

    let cc = ConfChange {
        change_type: ConfChangeType::ConfChangeRemoveNode,
        node_id: 3,
        ..ConfChange::default()
    };
    nt.peer_mut(1)
        .apply_conf_change(&cc.as_v2())
        .expect("remove 3");

    check_leader_transfer_state(nt.peer(1), StateRole::Leader, 1);
}

/// etcd: TestLeaderTransferDemoteNode
#[test]
fn test_leader_transfer_demote_node() {
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);

    nt.ignore(MessageType::MsgTimeoutNow);

    // The transferee is demoted while the transfer is under way.
    nt.send(vec![msg(MessageType::MsgTransferLeader, 3, 1)]);
    assert_eq!(nt.peer(1).lead_transferee, 3);

    let cc = ConfChangeV2 {
        changes: vec![
            ConfChangeSingle::new(ConfChangeType::ConfChangeRemoveNode, 3),
            ConfChangeSingle::new(ConfChangeType::ConfChangeAddLearnerNode, 3),
        ],
        ..ConfChangeV2::default()
    };
    nt.peer_mut(1).apply_conf_change(&cc).expect("demote 3");
    // In the joint configuration 3 still votes (outgoing half).
    assert_eq!(nt.peer(1).lead_transferee, 3);

    // Leave the joint configuration.
    nt.peer_mut(1)
        .apply_conf_change(&ConfChangeV2::default())
        .expect("leave joint");
    check_leader_transfer_state(nt.peer(1), StateRole::Leader, 1);
}

/// etcd: TestLeaderTransferBack
#[test]
fn test_leader_transfer_back() {
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);

    nt.isolate(3);

    nt.send(vec![msg(MessageType::MsgTransferLeader, 3, 1)]);
    assert_eq!(nt.peer(1).lead_transferee, 3);

    // Transfer back to self while the first one is pending.
    nt.send(vec![msg(MessageType::MsgTransferLeader, 1, 1)]);
    check_leader_transfer_state(nt.peer(1), StateRole::Leader, 1);
}

/// etcd: TestLeaderTransferSecondTransferToAnotherNode
#[test]
fn test_leader_transfer_second_transfer_to_another_node() {
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);

    nt.isolate(3);

    nt.send(vec![msg(MessageType::MsgTransferLeader, 3, 1)]);
    assert_eq!(nt.peer(1).lead_transferee, 3);

    // A transfer to another node replaces the pending one.
    nt.send(vec![msg(MessageType::MsgTransferLeader, 2, 1)]);
    check_leader_transfer_state(nt.peer(1), StateRole::Follower, 2);
}

/// etcd: TestLeaderTransferSecondTransferToSameNode
#[test]
fn test_leader_transfer_second_transfer_to_same_node() {
    let mut nt = Network::new(vec![None, None, None]);
    nt.campaign(1);

    nt.isolate(3);

    nt.send(vec![msg(MessageType::MsgTransferLeader, 3, 1)]);
    assert_eq!(nt.peer(1).lead_transferee, 3);

    let (ht, et) = (nt.peer(1).heartbeat_timeout, nt.peer(1).election_timeout);
    for _ in 0..ht {
        nt.peer_mut(1).tick();
    }
    // A second request for the same node does not extend the deadline.
    nt.send(vec![msg(MessageType::MsgTransferLeader, 3, 1)]);

    for _ in 0..(et - ht) {
        nt.peer_mut(1).tick();
    }
    check_leader_transfer_state(nt.peer(1), StateRole::Leader, 1);
}

/// etcd: TestTransferNonMember
#[test]
fn test_transfer_non_member() {
    let mut r = new_test_raft(1, 5, 1, new_test_storage(&[2, 3, 4], &[]));
    let _ = r.step(msg(MessageType::MsgTimeoutNow, 2, 1));

    let _ = r.step(msg(MessageType::MsgVoteResp, 2, 1));
    let _ = r.step(msg(MessageType::MsgVoteResp, 3, 1));
    assert_eq!(r.state, StateRole::Follower);
    assert_eq!(r.term, 0);
}

/// Issue acceptance (raftlet): a learner can never be the target of a
/// transfer; the leader refuses it and stays leader.
#[test]
fn test_leader_transfer_to_learner_refused() {
    let mut nt = network_of(&[1, 2, 3], &[4], &|_| {});
    nt.campaign(1);
    nt.propose(1, b"x");
    assert_eq!(nt.peer(1).state, StateRole::Leader);
    assert_eq!(
        nt.peer(1).trk.progress[&4].matched,
        nt.peer(1).raft_log.last_index()
    );

    // raftlet: an explicit refusal (etcd ignores it).
    let res = nt
        .peer_mut(1)
        .step(msg(MessageType::MsgTransferLeader, 4, 1));
    assert!(matches!(res, Err(Error::TransferRefused(_))), "{res:?}");
    assert!(nt.peer_mut(1).read_messages().is_empty());
    check_leader_transfer_state(nt.peer(1), StateRole::Leader, 1);

    // The same when the request is forwarded by a follower.
    nt.send(vec![msg(MessageType::MsgTransferLeader, 4, 2)]);
    check_leader_transfer_state(nt.peer(1), StateRole::Leader, 1);
    assert_eq!(nt.peer(4).state, StateRole::Follower);
    assert_eq!(nt.peer(4).term, nt.peer(1).term);
}

/// Issue acceptance (raftlet): a transfer asked of a node that knows no
/// leader is refused.
#[test]
fn test_leader_transfer_without_leader_refused() {
    let mut r = new_test_raft(2, 10, 1, new_test_storage(&[1, 2, 3], &[]));
    let res = r.step(msg(MessageType::MsgTransferLeader, 3, 2));
    assert!(matches!(res, Err(Error::TransferRefused(_))), "{res:?}");
    assert!(r.read_messages().is_empty());

    r.become_candidate();
    let res = r.step(msg(MessageType::MsgTransferLeader, 3, 2));
    assert!(matches!(res, Err(Error::TransferRefused(_))), "{res:?}");

    let mut rn = RawNode::new(
        &new_test_config(1, 10, 1),
        new_test_storage(&[1, 2, 3], &[]),
    )
    .expect("raw node");
    let res = rn.transfer_leader(2);
    assert!(matches!(res, Err(Error::TransferRefused(_))), "{res:?}");
}

// ---------------------------------------------------------------------------
// forget_leader*.txt
// ---------------------------------------------------------------------------

/// A small stand-in for etcd's interaction environment: nodes start from a
/// snapshot at index 10 (term 1), with election tick 3 and heartbeat tick 1,
/// and messages wait in per-node mailboxes until delivered.
struct Env {
    nodes: BTreeMap<u64, TestRaft>,
    inbox: BTreeMap<u64, Vec<Message>>,
}

impl Env {
    /// etcd `add-nodes n voters=(..) learners=(..) index=10 ...`.
    fn new(n: u64, voters: &[u64], learners: &[u64], f: &dyn Fn(&mut Config)) -> Env {
        let mut nodes = BTreeMap::new();
        for id in 1..=n {
            let s = crate::storage::MemoryStorage::new();
            let mut snap = test_snapshot(10, 1, voters);
            snap.metadata.conf_state.learners = learners.to_vec();
            s.wl().apply_snapshot(snap).expect("snapshot");
            let mut c = new_test_config(id, 3, 1);
            f(&mut c);
            nodes.insert(id, new_test_raft_with_config(&c, s));
        }
        Env {
            nodes,
            inbox: BTreeMap::new(),
        }
    }

    fn node(&self, id: u64) -> &TestRaft {
        &self.nodes[&id]
    }

    fn node_mut(&mut self, id: u64) -> &mut TestRaft {
        self.nodes.get_mut(&id).expect("node")
    }

    /// `raft-state` for one node: (role, term, lead).
    fn state(&self, id: u64) -> (StateRole, u64, u64) {
        let r = self.node(id);
        (r.state, r.term, r.lead)
    }

    fn campaign(&mut self, id: u64) {
        self.node_mut(id)
            .step(msg(MessageType::MsgHup, id, id))
            .expect("campaign");
    }

    fn forget_leader(&mut self, id: u64) {
        self.node_mut(id)
            .step(msg(MessageType::MsgForgetLeader, 0, 0))
            .expect("forget leader");
    }

    fn tick(&mut self, id: u64) {
        self.node_mut(id).tick();
    }

    fn propose(&mut self, id: u64, data: &'static [u8]) {
        self.node_mut(id).step(prop(id, id, data)).expect("propose");
    }

    /// `process-ready id`: persists, applies, and posts the messages.
    fn process_ready(&mut self, id: u64) -> Vec<Message> {
        let r = self.node_mut(id);
        next_ents(r);
        let msgs = std::mem::take(&mut r.msgs);
        for m in &msgs {
            self.inbox.entry(m.to).or_default().push(m.clone());
        }
        msgs
    }

    /// `deliver-msgs id`: steps every message waiting for `id`.
    fn deliver(&mut self, id: u64) -> usize {
        let msgs = self.inbox.remove(&id).unwrap_or_default();
        let n = msgs.len();
        for m in msgs {
            let _ = self.node_mut(id).step(m);
        }
        n
    }

    /// `stabilize ids...`: processes and delivers among `ids` until quiet.
    fn stabilize(&mut self, ids: &[u64]) {
        loop {
            let mut active = false;
            for &id in ids {
                active |= !self.process_ready(id).is_empty();
            }
            for &id in ids {
                active |= self.deliver(id) > 0;
            }
            if !active {
                break;
            }
        }
    }

    fn stabilize_all(&mut self) {
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        self.stabilize(&ids);
    }

    fn waiting(&self, id: u64) -> &[Message] {
        self.inbox.get(&id).map_or(&[], Vec::as_slice)
    }
}

use StateRole::{Candidate, Follower, Leader, PreCandidate};

/// etcd: testdata/forget_leader.txt
#[test]
fn forget_leader() {
    let mut env = Env::new(4, &[1, 2, 3], &[4], &|_| {});
    env.campaign(1);
    env.stabilize_all();
    assert!(env.node(4).is_learner);

    // A no-op on the leader.
    env.forget_leader(1);
    assert_eq!(env.state(1), (Leader, 1, 1));
    for id in 2..=4 {
        assert_eq!(env.state(id), (Follower, 1, 1));
    }

    // A follower forgets its leader but keeps its term; doing it twice is a no-op.
    env.forget_leader(2);
    assert_eq!(env.state(1), (Leader, 1, 1));
    assert_eq!(env.state(2), (Follower, 1, 0));
    assert_eq!(env.state(3), (Follower, 1, 1));
    assert_eq!(env.state(4), (Follower, 1, 1));
    env.forget_leader(2);
    assert_eq!(env.state(2), (Follower, 1, 0));
    assert_eq!(env.state(3), (Follower, 1, 1));

    // Learners can forget too.
    env.forget_leader(4);
    assert_eq!(env.state(4), (Follower, 1, 0));
    assert_eq!(env.state(1), (Leader, 1, 1));

    // A heartbeat brings them back.
    env.tick(1);
    let hbs = env.process_ready(1);
    assert_eq!(hbs.len(), 3);
    for hb in &hbs {
        assert_eq!(hb.msg_type, MessageType::MsgHeartbeat);
        assert_eq!(hb.commit, 11);
    }
    env.stabilize_all();
    assert_eq!(env.state(1), (Leader, 1, 1));
    for id in 2..=4 {
        assert_eq!(env.state(id), (Follower, 1, 1));
    }

    // A no-op on candidates.
    env.campaign(3);
    assert_eq!(env.state(3), (Candidate, 2, 0));
    env.forget_leader(3);
    assert_eq!(env.state(1), (Leader, 1, 1));
    assert_eq!(env.state(2), (Follower, 1, 1));
    assert_eq!(env.state(3), (Candidate, 2, 0));
    assert_eq!(env.state(4), (Follower, 1, 1));

    env.stabilize_all();
    assert_eq!(env.state(1), (Follower, 2, 3));
    assert_eq!(env.state(2), (Follower, 2, 3));
    assert_eq!(env.state(3), (Leader, 2, 3));
    assert_eq!(env.state(4), (Follower, 2, 3));

    // Forgetting the leader does not touch the election timer: forgetting
    // one tick before it fires, the follower still campaigns on that tick.
    env.node_mut(2).randomized_election_timeout = 3;
    env.tick(2);
    env.tick(2);
    env.forget_leader(2);
    assert_eq!(env.state(2), (Follower, 2, 0));
    assert_eq!(env.node(2).election_elapsed, 2);
    env.tick(2);
    assert_eq!(env.state(2), (Candidate, 3, 0));
    let votes = env.process_ready(2);
    assert_eq!(votes.len(), 2);
    for v in &votes {
        assert_eq!(v.msg_type, MessageType::MsgVote);
        assert_eq!((v.term, v.log_term, v.index), (3, 2, 12));
    }

    env.stabilize_all();
    assert_eq!(env.state(1), (Follower, 3, 2));
    assert_eq!(env.state(2), (Leader, 3, 2));
    assert_eq!(env.state(3), (Follower, 3, 2));
    assert_eq!(env.state(4), (Follower, 3, 2));
}

/// etcd: testdata/forget_leader_prevote_checkquorum.txt
#[test]
fn forget_leader_prevote_checkquorum() {
    let mut env = Env::new(3, &[1, 2, 3], &[], &|c| {
        c.pre_vote = true;
        c.check_quorum = true;
    });
    env.campaign(1);
    env.stabilize_all();
    assert_eq!(env.state(1), (Leader, 1, 1));

    // 3 campaigns; 1 and 2 heard from the leader recently and ignore it.
    env.campaign(3);
    assert_eq!(env.state(3), (PreCandidate, 1, 0));
    env.stabilize(&[3]);
    for to in [1, 2] {
        let w = env.waiting(to);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].msg_type, MessageType::MsgPreVote);
        assert_eq!((w[0].term, w[0].log_term, w[0].index), (2, 1, 11));
    }
    assert_eq!(env.deliver(1), 1);
    assert_eq!(env.deliver(2), 1);
    for id in [1, 2] {
        assert!(
            env.node(id).msgs.is_empty(),
            "{id} answered a pre-vote in lease"
        );
        assert!(env.node(id).msgs_after_append.is_empty());
    }
    assert_eq!(env.state(3), (PreCandidate, 1, 0));

    // 1 asserts its leadership over 3 again.
    env.tick(1);
    env.stabilize_all();
    assert_eq!(env.state(1), (Leader, 1, 1));
    assert_eq!(env.state(2), (Follower, 1, 1));
    assert_eq!(env.state(3), (Follower, 1, 1));

    // Once 2 forgets the leader, 3 gets its pre-vote despite 2 having
    // heard from the leader recently, and wins the election.
    env.forget_leader(2);
    assert_eq!(env.state(1), (Leader, 1, 1));
    assert_eq!(env.state(2), (Follower, 1, 0));
    assert_eq!(env.state(3), (Follower, 1, 1));

    env.campaign(3);
    assert_eq!(env.state(3), (PreCandidate, 1, 0));
    env.stabilize(&[3]);
    env.stabilize(&[2]);
    let w = env.waiting(3);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].msg_type, MessageType::MsgPreVoteResp);
    assert_eq!((w[0].from, w[0].term, w[0].reject), (2, 2, false));
    // A granted pre-vote changes neither the term nor the vote of 2.
    assert_eq!(env.state(2), (Follower, 1, 0));
    assert_eq!(env.node(2).vote, 1);

    env.stabilize(&[3]);
    assert_eq!(env.state(3), (Candidate, 2, 0));
    assert_eq!(env.node(3).vote, 3);

    env.stabilize_all();
    assert_eq!(env.state(1), (Follower, 2, 3));
    assert_eq!(env.state(2), (Follower, 2, 3));
    assert_eq!(env.state(3), (Leader, 2, 3));

    // Forgetting the leader still won't grant pre-votes to a node that is
    // not up to date. Replicate a proposal to 2 only.
    env.propose(3, b"prop_1");
    env.stabilize(&[3]);
    assert_eq!(env.node(3).raft_log.last_entry_id().index, 13);
    env.stabilize(&[2]);
    assert_eq!(env.node(2).raft_log.last_index(), 13);
    assert_eq!(env.node(2).raft_log.term(13), Ok(2));
    env.forget_leader(2);
    assert_eq!(env.state(2), (Follower, 2, 0));

    // 1 is behind.
    let log1: Vec<(u64, u64)> = env
        .node(1)
        .raft_log
        .all_entries()
        .iter()
        .map(|e| (e.term, e.index))
        .collect();
    assert_eq!(log1, vec![(1, 11), (2, 12)]);

    env.campaign(1);
    assert_eq!(env.state(1), (PreCandidate, 2, 0));
    let pv = env.process_ready(1);
    assert_eq!(pv.len(), 2);
    for m in &pv {
        assert_eq!(m.msg_type, MessageType::MsgPreVote);
        assert_eq!((m.term, m.log_term, m.index), (3, 2, 12));
    }

    env.stabilize(&[2]);
    let resp = env
        .waiting(1)
        .iter()
        .find(|m| m.msg_type == MessageType::MsgPreVoteResp && m.from == 2)
        .expect("2 answered the pre-vote")
        .clone();
    assert!(resp.reject);
    assert_eq!(resp.term, 2);
    assert_eq!(env.state(2), (Follower, 2, 0));

    env.stabilize_all();
    assert_eq!(env.state(1), (Follower, 2, 3));
    assert_eq!(env.state(2), (Follower, 2, 3));
    assert_eq!(env.state(3), (Leader, 2, 3));
}

/// etcd: testdata/forget_leader_read_only_lease_based.txt
#[test]
fn forget_leader_read_only_lease_based() {
    let mut env = Env::new(3, &[1, 2, 3], &[], &|c| {
        c.check_quorum = true;
        c.read_only_option = ReadOnlyOption::LeaseBased;
    });
    env.campaign(1);
    env.stabilize_all();

    // Forgetting the leader is refused under lease-based reads (it would
    // let the follower vote inside the leader's lease).
    env.forget_leader(2);
    assert_eq!(env.state(1), (Leader, 1, 1));
    assert_eq!(env.state(2), (Follower, 1, 1));
    assert_eq!(env.state(3), (Follower, 1, 1));
}
