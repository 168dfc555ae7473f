//! Ported etcd tests: replication.
//!
//! Log replication, commit rules, proposals (local, forwarded and dropped),
//! the handling of appends and heartbeats on both sides, progress tracking
//! and the append pagination of `max_size_per_msg`. Ported from etcd-io/raft
//! raft_test.go and node_test.go (v3.6).

use std::cell::Cell;
use std::rc::Rc;

use bytes::Bytes;

use super::*;
use crate::errors::Error;
use crate::log::{ents_size, payloads_size};
use crate::pb::{ConfChange, ConfChangeType};
use crate::raft::{StateRole, INVALID_ID};
use crate::raw_node::RawNode;
use crate::tracker::ProgressState;

/// A MsgProp from `from` to `to` carrying one entry with `data`.
fn prop_data(from: u64, to: u64, data: Bytes) -> Message {
    let mut m = msg(MessageType::MsgProp, from, to);
    m.entries = vec![Entry {
        data: Some(data),
        ..Entry::default()
    }];
    m
}

/// An entry with only a payload (what a proposal carries).
fn data_entry(data: &'static [u8]) -> Entry {
    Entry {
        data: Some(Bytes::from_static(data)),
        ..Entry::default()
    }
}

/// The parts of a log that etcd's `ltoa` prints: last index, applied,
/// applying and every entry.
fn log_summary(r: &TestRaft) -> (u64, u64, u64, Vec<Entry>) {
    (
        r.raft_log.last_index(),
        r.raft_log.applied,
        r.raft_log.applying,
        r.raft_log.all_entries(),
    )
}

/// Takes the messages of `r` and checks there is exactly one.
fn expect_one_message(r: &mut TestRaft) -> Message {
    let mut msgs = r.read_messages();
    assert_eq!(msgs.len(), 1, "expected one message, got {msgs:?}");
    msgs.remove(0)
}

/// A leader of term 1 in a cluster of `voters`, built from empty storage.
fn new_leader(voters: &[u64]) -> TestRaft {
    let mut r = new_test_raft(1, 10, 1, new_test_storage(voters, &[]));
    r.become_candidate();
    r.become_leader();
    r
}

/// etcd: TestLogReplication
#[test]
fn test_log_replication() {
    let somedata = || prop(1, 1, b"somedata");
    let cases: Vec<(Vec<Message>, u64)> = vec![
        (vec![somedata()], 2),
        (
            vec![
                somedata(),
                // Node 2 takes over, then gets a proposal (from node 1's
                // address) as the new leader.
                msg(MessageType::MsgHup, 1, 2),
                prop(1, 2, b"somedata"),
            ],
            4,
        ),
    ];
    for (i, (msgs, wcommitted)) in cases.into_iter().enumerate() {
        let mut nt = Network::new(vec![None, None, None]);
        nt.campaign(1);
        for m in &msgs {
            nt.send(vec![m.clone()]);
        }
        let props: Vec<&Message> = msgs
            .iter()
            .filter(|m| m.msg_type == MessageType::MsgProp)
            .collect();
        for id in 1..=3 {
            let sm = nt.peer_mut(id);
            assert_eq!(sm.raft_log.committed, wcommitted, "#{i}.{id}");
            let ents: Vec<Entry> = next_ents(sm)
                .into_iter()
                .filter(|e| e.data.is_some())
                .collect();
            assert_eq!(ents.len(), props.len(), "#{i}.{id}");
            for (k, m) in props.iter().enumerate() {
                assert_eq!(m.entries[0].data, ents[k].data, "#{i}.{id}.{k}");
            }
        }
    }
}

/// etcd: TestSingleNodeCommit
#[test]
fn test_single_node_commit() {
    let r = new_test_raft(1, 10, 1, new_test_storage(&[1], &[]));
    let mut nt = Network::new(vec![peer(r)]);
    nt.campaign(1);
    nt.propose(1, b"some data");
    nt.propose(1, b"some data");
    assert_eq!(nt.peer(1).raft_log.committed, 3);
}

/// etcd: TestCannotCommitWithoutNewTermEntry
///
/// Entries of an earlier term are not committed by counting replicas: a new
/// leader commits them only with an entry of its own term.
#[test]
fn test_cannot_commit_without_new_term_entry() {
    let mut nt = Network::new(vec![None, None, None, None, None]);
    nt.campaign(1);

    // Node 1 reaches only node 2: its proposals cannot commit.
    nt.cut(1, 3);
    nt.cut(1, 4);
    nt.cut(1, 5);
    nt.propose(1, b"some data");
    nt.propose(1, b"some data");
    assert_eq!(nt.peer(1).raft_log.committed, 1);

    nt.recover();
    // Keep the new leader's empty entry from being replicated.
    nt.ignore(MessageType::MsgApp);

    // Node 2 wins term 2; the entries of term 1 must stay uncommitted.
    nt.campaign(2);
    assert_eq!(nt.peer(2).raft_log.committed, 1);

    nt.recover();
    // A heartbeat gets the followers answering again.
    nt.send(vec![msg(MessageType::MsgBeat, 2, 2)]);
    // An entry of the current term commits everything before it.
    nt.propose(2, b"some data");
    assert_eq!(nt.peer(2).raft_log.committed, 5);
}

/// etcd: TestCommitWithoutNewTermEntry
///
/// A new leader commits the earlier term's entries through the empty entry
/// it appends on election.
#[test]
fn test_commit_without_new_term_entry() {
    let mut nt = Network::new(vec![None, None, None, None, None]);
    nt.campaign(1);

    nt.cut(1, 3);
    nt.cut(1, 4);
    nt.cut(1, 5);
    nt.propose(1, b"some data");
    nt.propose(1, b"some data");
    assert_eq!(nt.peer(1).raft_log.committed, 1);

    nt.recover();
    // Node 2 is elected in term 2; its empty entry commits all four.
    nt.campaign(2);
    assert_eq!(nt.peer(1).raft_log.committed, 4);
}

/// etcd: TestProposal
#[test]
fn test_proposal() {
    type Build = fn() -> Network;
    let cases: [(Build, bool); 5] = [
        (|| Network::new(vec![None, None, None]), true),
        (|| Network::new(vec![None, None, black_hole()]), true),
        (
            || Network::new(vec![None, black_hole(), black_hole()]),
            false,
        ),
        (
            || Network::new(vec![None, black_hole(), black_hole(), None]),
            false,
        ),
        (
            || Network::new(vec![None, black_hole(), black_hole(), None, None]),
            true,
        ),
    ];
    for (j, (build, success)) in cases.into_iter().enumerate() {
        let mut nt = build();
        nt.campaign(1);
        // Without a quorum node 1 stays a candidate and drops the proposal
        // (the network swallows the error etcd's test recovers from).
        nt.propose(1, b"somedata");

        let want_ents = if success {
            vec![
                ent(1, 1),
                Entry {
                    term: 1,
                    index: 2,
                    data: Some(Bytes::from_static(b"somedata")),
                    ..Entry::default()
                },
            ]
        } else {
            Vec::new()
        };
        let want = (want_ents.len() as u64, 0, 0, want_ents);
        for (id, p) in &nt.peers {
            if let Peer::Raft(sm) = p {
                assert_eq!(log_summary(sm), want, "#{j}, peer {id}");
            }
        }
        assert_eq!(nt.peer(1).term, 1, "#{j}");
    }
}

/// etcd: TestProposalByProxy
#[test]
fn test_proposal_by_proxy() {
    type Build = fn() -> Network;
    let cases: [Build; 2] = [
        || Network::new(vec![None, None, None]),
        || Network::new(vec![None, None, black_hole()]),
    ];
    for (j, build) in cases.into_iter().enumerate() {
        let mut nt = build();
        nt.campaign(1);
        // Proposed on a follower, forwarded to the leader.
        nt.propose(2, b"somedata");

        let want_ents = vec![
            ent(1, 1),
            Entry {
                term: 1,
                index: 2,
                data: Some(Bytes::from_static(b"somedata")),
                ..Entry::default()
            },
        ];
        let want = (2, 0, 0, want_ents);
        for (id, p) in &nt.peers {
            if let Peer::Raft(sm) = p {
                assert_eq!(log_summary(sm), want, "#{j}.{id}");
            }
        }
        assert_eq!(nt.peer(1).term, 1, "#{j}");
    }
}

/// etcd: TestCommit
#[test]
fn test_commit() {
    // (matches of nodes 1.., log terms from index 1, node term, want commit)
    let cases: Vec<(Vec<u64>, Vec<u64>, u64, u64)> = vec![
        // Single node.
        (vec![1], vec![1], 1, 1),
        (vec![1], vec![1], 2, 0),
        (vec![2], vec![1, 2], 2, 2),
        (vec![1], vec![2], 2, 1),
        // Odd cluster.
        (vec![2, 1, 1], vec![1, 2], 1, 1),
        (vec![2, 1, 1], vec![1, 1], 2, 0),
        (vec![2, 1, 2], vec![1, 2], 2, 2),
        (vec![2, 1, 2], vec![1, 1], 2, 0),
        // Even cluster.
        (vec![2, 1, 1, 1], vec![1, 2], 1, 1),
        (vec![2, 1, 1, 1], vec![1, 1], 2, 0),
        (vec![2, 1, 1, 2], vec![1, 2], 1, 1),
        (vec![2, 1, 1, 2], vec![1, 1], 2, 0),
        (vec![2, 1, 2, 2], vec![1, 2], 2, 2),
        (vec![2, 1, 2, 2], vec![1, 1], 2, 0),
    ];
    for (i, (matches, terms, sm_term, w)) in cases.into_iter().enumerate() {
        let storage = new_test_storage(&[1], &[]);
        storage
            .wl()
            .append(&ents_with_terms(&terms))
            .expect("append");
        storage.wl().set_hard_state(HardState {
            term: sm_term,
            ..HardState::default()
        });
        let mut sm = new_test_raft(1, 10, 2, storage);
        for id in 2..=matches.len() as u64 {
            let cc = ConfChange {
                change_type: ConfChangeType::ConfChangeAddNode,
                node_id: id,
                ..ConfChange::default()
            };
            sm.apply_conf_change(&cc.as_v2()).expect("add node");
        }
        // raftlet: only a leader tracks progress (etcd sets it on a
        // follower here); start tracking as `become_leader` would.
        sm.trk.track_members(sm.raft_log.last_index() + 1);
        for (j, m) in matches.iter().enumerate() {
            let id = j as u64 + 1;
            let pr = sm.trk.get_mut(id).expect("progress");
            pr.matched = *m;
            pr.next = *m + 1;
        }
        sm.maybe_commit();
        assert_eq!(sm.raft_log.committed, w, "#{i}");
    }
}

/// etcd: TestHandleMsgApp
///
/// Reference: section 5.3. A follower rejects an append whose previous
/// entry it lacks; otherwise it replaces any conflicting suffix, appends the
/// new entries and commits up to min(leader commit, last new entry).
#[test]
fn test_handle_msg_app() {
    fn app(term: u64, log_term: u64, index: u64, commit: u64, ents: &[(u64, u64)]) -> Message {
        let mut m = msg_term(MessageType::MsgApp, 0, 0, term);
        m.log_term = log_term;
        m.index = index;
        m.commit = commit;
        m.entries = ents.iter().map(|&(t, i)| ent(t, i)).collect();
        m
    }
    // (message, want last index, want commit, want reject)
    let cases = [
        // The previous entry does not match, or does not exist.
        (app(2, 3, 2, 3, &[]), 2, 0, true),
        (app(2, 3, 3, 3, &[]), 2, 0, true),
        // Appends, truncating conflicts.
        (app(2, 1, 1, 1, &[]), 2, 1, false),
        (app(2, 0, 0, 1, &[(2, 1)]), 1, 1, false),
        (app(2, 2, 2, 3, &[(2, 3), (2, 4)]), 4, 3, false),
        (app(2, 2, 2, 4, &[(2, 3)]), 3, 3, false),
        (app(2, 1, 1, 4, &[(2, 2)]), 2, 2, false),
        // Commit up to the last new entry, never beyond.
        (app(1, 1, 1, 3, &[]), 2, 1, false),
        (app(1, 1, 1, 3, &[(2, 2)]), 2, 2, false),
        (app(2, 2, 2, 3, &[]), 2, 2, false),
        (app(2, 2, 2, 4, &[]), 2, 2, false),
    ];
    for (i, (m, w_index, w_commit, w_reject)) in cases.into_iter().enumerate() {
        let storage = new_test_storage(&[1], &[]);
        storage
            .wl()
            .append(&ents_with_terms(&[1, 2]))
            .expect("append");
        let mut sm = new_test_raft(1, 10, 1, storage);
        sm.become_follower(2, INVALID_ID);

        sm.handle_append_entries(m);
        assert_eq!(sm.raft_log.last_index(), w_index, "#{i}");
        assert_eq!(sm.raft_log.committed, w_commit, "#{i}");
        let msgs = sm.read_messages();
        assert_eq!(msgs.len(), 1, "#{i}");
        assert_eq!(msgs[0].msg_type, MessageType::MsgAppResp, "#{i}");
        assert_eq!(msgs[0].reject, w_reject, "#{i}");
    }
}

/// etcd: TestHandleHeartbeat
///
/// A follower commits up to the commit index of a heartbeat, never lowering it.
#[test]
fn test_handle_heartbeat() {
    let commit = 2;
    let hb = |c: u64| {
        let mut m = msg_term(MessageType::MsgHeartbeat, 2, 1, 2);
        m.commit = c;
        m
    };
    let cases = [(hb(commit + 1), commit + 1), (hb(commit - 1), commit)];
    for (i, (m, w_commit)) in cases.into_iter().enumerate() {
        let storage = new_test_storage(&[1, 2], &[]);
        storage
            .wl()
            .append(&ents_with_terms(&[1, 2, 3]))
            .expect("append");
        let mut sm = new_test_raft(1, 5, 1, storage);
        sm.become_follower(2, 2);
        sm.raft_log.commit_to(commit);
        sm.handle_heartbeat(m);
        assert_eq!(sm.raft_log.committed, w_commit, "#{i}");
        let msgs = sm.read_messages();
        assert_eq!(msgs.len(), 1, "#{i}");
        assert_eq!(msgs[0].msg_type, MessageType::MsgHeartbeatResp, "#{i}");
    }
}

/// etcd: TestHandleHeartbeatResp
///
/// A heartbeat response from a follower that is behind makes the leader
/// resend entries, until the follower acknowledges them.
#[test]
fn test_handle_heartbeat_resp() {
    let storage = new_test_storage(&[1, 2], &[]);
    storage
        .wl()
        .append(&ents_with_terms(&[1, 2, 3]))
        .expect("append");
    let mut sm = new_test_raft(1, 5, 1, storage);
    sm.become_candidate();
    sm.become_leader();
    let last = sm.raft_log.last_index();
    sm.raft_log.commit_to(last);

    // The follower is behind: the leader resends.
    sm.step(msg(MessageType::MsgHeartbeatResp, 2, 0)).unwrap();
    let msgs = sm.read_messages();
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].msg_type, MessageType::MsgApp);

    // And again on the next heartbeat response.
    sm.step(msg(MessageType::MsgHeartbeatResp, 2, 0)).unwrap();
    let msgs = sm.read_messages();
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].msg_type, MessageType::MsgApp);

    // Once the follower acknowledged everything, heartbeats send nothing more.
    let mut ack = msg(MessageType::MsgAppResp, 2, 0);
    ack.index = msgs[0].index + msgs[0].entries.len() as u64;
    sm.step(ack).unwrap();
    sm.read_messages();

    sm.step(msg(MessageType::MsgHeartbeatResp, 2, 0)).unwrap();
    assert!(sm.read_messages().is_empty());
}

/// etcd: TestMsgAppRespWaitReset
///
/// An append response releases the follower's probe pause, so a new
/// proposal goes to it at once while a follower still being probed waits.
#[test]
fn test_msg_app_resp_wait_reset() {
    let s = new_test_storage(&[1, 2, 3], &[]);
    let mut sm = new_test_raft(1, 5, 1, s);
    sm.become_candidate();
    sm.become_leader();

    // Persist the leader's empty entry (and take its self-acknowledgement).
    next_ents(&mut sm);

    // Node 2 acknowledges it: entry 1 commits.
    let mut ack = msg(MessageType::MsgAppResp, 2, 0);
    ack.index = 1;
    sm.step(ack).unwrap();
    assert_eq!(sm.raft_log.committed, 1);

    // Drop the appends that carry the new commit index.
    sm.read_messages();

    // A new entry is proposed.
    let mut p = msg(MessageType::MsgProp, 1, 0);
    p.entries = vec![Entry::default()];
    sm.step(p).unwrap();

    // Only node 2 gets it: node 3 has not answered its probe yet.
    let msgs = sm.read_messages();
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].msg_type, MessageType::MsgApp);
    assert_eq!(msgs[0].to, 2);
    assert_eq!(msgs[0].entries.len(), 1);
    assert_eq!(msgs[0].entries[0].index, 2);

    // Node 3 acknowledges entry 1: its pause ends and entry 2 follows.
    let mut ack = msg(MessageType::MsgAppResp, 3, 0);
    ack.index = 1;
    sm.step(ack).unwrap();
    let msgs = sm.read_messages();
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].msg_type, MessageType::MsgApp);
    assert_eq!(msgs[0].to, 3);
    assert_eq!(msgs[0].entries.len(), 1);
    assert_eq!(msgs[0].entries[0].index, 2);
}

/// etcd: TestLeaderMsgAppSelfAckAfterTermChange
///
/// A leader's self-acknowledgement that is delivered after it stepped down
/// carries the old term and is ignored.
#[test]
fn test_leader_msg_app_self_ack_after_term_change() {
    let mut sm = new_test_raft(1, 5, 1, new_test_storage(&[1, 2, 3], &[]));
    sm.become_candidate();
    sm.become_leader();

    // A write is proposed; its self-acknowledgement waits for persistence.
    sm.step(prop(1, 1, b"somedata")).unwrap();
    let steps = std::mem::take(&mut sm.msgs_after_append);

    // Node 2 leads a newer term.
    let term = sm.term + 1;
    sm.step(msg_term(MessageType::MsgHeartbeat, 2, 1, term))
        .unwrap();
    assert_eq!(sm.state, StateRole::Follower);

    // The old self-acknowledgement arrives: it is of an older term.
    for m in steps {
        if m.to == sm.id {
            sm.step(m).unwrap();
        } else {
            sm.msgs.push(m);
        }
    }
    assert_eq!(sm.state, StateRole::Follower);
}

/// A leader's own append acknowledgement, stepped once its write is
/// durable (`step_persisted`, the path the Ready loop takes), counts toward
/// the commit like a follower's; one that arrives after the leader stepped
/// down within the same term (check-quorum) counts for nothing.
#[test]
fn test_persisted_self_ack_counts_only_while_leading() {
    // A single voter: its own acknowledgement alone commits.
    let mut sm = new_test_raft(1, 10, 1, new_test_storage(&[1], &[]));
    sm.become_candidate();
    sm.become_leader();
    let steps = std::mem::take(&mut sm.msgs_after_append);
    for m in steps {
        sm.step_persisted(m);
    }
    let committed = sm.raft_log.committed;
    assert_eq!(committed, sm.raft_log.last_index());
    sm.step(prop(1, 1, b"x")).unwrap();
    let steps = std::mem::take(&mut sm.msgs_after_append);
    assert_eq!(steps.len(), 1);
    assert_eq!(sm.raft_log.committed, committed);
    for m in steps {
        sm.step_persisted(m);
    }
    assert_eq!(sm.raft_log.committed, committed + 1);
    assert_eq!(sm.trk.get(1).unwrap().matched, committed + 1);

    // Three voters, node 2 acknowledged everything: the leader's own
    // acknowledgement would complete a quorum for its new entry.
    let mut sm = new_test_raft(1, 10, 1, new_test_storage(&[1, 2, 3], &[]));
    sm.become_candidate();
    sm.become_leader();
    for m in std::mem::take(&mut sm.msgs_after_append) {
        sm.step_persisted(m);
    }
    sm.step(prop(1, 1, b"x")).unwrap();
    let last = sm.raft_log.last_index();
    let mut ack = msg_term(MessageType::MsgAppResp, 2, 1, sm.term);
    ack.index = last;
    sm.step(ack).unwrap();
    let committed = sm.raft_log.committed;
    assert!(committed < last);
    let steps = std::mem::take(&mut sm.msgs_after_append);
    // It steps down in the same term before the write is durable.
    let term = sm.term;
    sm.become_follower(term, INVALID_ID);
    for m in steps {
        sm.step_persisted(m);
    }
    assert_eq!(sm.state, StateRole::Follower);
    assert_eq!(sm.term, term);
    assert_eq!(sm.raft_log.committed, committed);
}

/// etcd: TestLeaderAppResp
#[test]
fn test_leader_app_resp() {
    // Before the responses, node 2's progress is match = 0, next = 3.
    // (index, reject, want match, want next, want messages, want message
    // index, want message commit)
    let cases = [
        // A stale rejection: nothing changes, nothing is sent.
        (3, true, 0, 3, 0, 0, 0),
        // A rejection: next goes back and a probe is sent; nothing commits.
        (2, true, 0, 2, 1, 1, 0),
        // An acceptance: the leader commits and tells everyone.
        (2, false, 2, 4, 2, 2, 2),
        // The follower (probed at 0) acknowledges 0, which is its match: it
        // moves to replicate and gets every entry (1 to 3) at once.
        (0, false, 0, 4, 1, 0, 0),
    ];
    for (i, &(index, reject, wmatch, wnext, wmsg_num, windex, wcommitted)) in
        cases.iter().enumerate()
    {
        // The node leads term 1 over a log of term 1, so it can commit.
        let storage = new_test_storage(&[1, 2, 3], &[]);
        storage
            .wl()
            .append(&ents_with_terms(&[1, 1]))
            .expect("append");
        let mut sm = new_test_raft(1, 10, 1, storage);
        sm.become_candidate();
        sm.become_leader();
        sm.read_messages();
        let mut m = msg_term(MessageType::MsgAppResp, 2, 0, sm.term);
        m.index = index;
        m.reject = reject;
        m.reject_hint = index;
        sm.step(m).unwrap();

        let p = sm.trk.get(2).expect("progress");
        assert_eq!(p.matched, wmatch, "#{i}");
        assert_eq!(p.next, wnext, "#{i}");

        let msgs = sm.read_messages();
        assert_eq!(msgs.len(), wmsg_num, "#{i}");
        for m in &msgs {
            assert_eq!(m.index, windex, "#{i}: {m:?}");
            assert_eq!(m.commit, wcommitted, "#{i}: {m:?}");
        }
    }
}

/// etcd: TestBcastBeat
///
/// A heartbeat carries no log position and no entries, and its commit index
/// is at most what the follower is known to hold.
#[test]
fn test_bcast_beat() {
    let offset = 1000;
    // A log that starts after a snapshot at 1000.
    let storage = MemoryStorage::new();
    storage
        .wl()
        .apply_snapshot(test_snapshot(offset, 1, &[1, 2, 3]))
        .expect("snapshot");
    let mut sm = new_test_raft(1, 10, 1, storage);
    sm.term = 1;

    sm.become_candidate();
    sm.become_leader();
    for i in 0..10 {
        assert!(sm.append_entry(vec![ent(0, i + 1)]), "entry dropped");
    }
    sm.advance_messages_after_append();

    // Node 2 is slow, node 3 is up to date.
    let last = sm.raft_log.last_index();
    {
        let pr = sm.trk.get_mut(2).unwrap();
        pr.matched = 5;
        pr.next = 6;
    }
    {
        let pr = sm.trk.get_mut(3).unwrap();
        pr.matched = last;
        pr.next = last + 1;
    }

    sm.step(msg(MessageType::MsgBeat, 0, 0)).unwrap();
    let msgs = sm.read_messages();
    assert_eq!(msgs.len(), 2);

    let committed = sm.raft_log.committed;
    let mut want_commit: BTreeMap<u64, u64> = [
        (2, committed.min(sm.trk.get(2).unwrap().matched)),
        (3, committed.min(sm.trk.get(3).unwrap().matched)),
    ]
    .into_iter()
    .collect();
    for (i, m) in msgs.iter().enumerate() {
        assert_eq!(m.msg_type, MessageType::MsgHeartbeat, "#{i}");
        assert_eq!(m.index, 0, "#{i}");
        assert_eq!(m.log_term, 0, "#{i}");
        let commit = want_commit
            .remove(&m.to)
            .expect("one heartbeat per follower");
        assert_eq!(m.commit, commit, "#{i}");
        assert!(m.entries.is_empty(), "#{i}");
    }
}

/// etcd: TestRecvMsgBeat
///
/// Only a leader answers MsgBeat, with heartbeats.
#[test]
fn test_recv_msg_beat() {
    let cases = [
        (StateRole::Leader, 2),
        // Candidates and followers ignore it.
        (StateRole::Candidate, 0),
        (StateRole::Follower, 0),
    ];
    for (i, &(state, w_msg)) in cases.iter().enumerate() {
        let storage = new_test_storage(&[1, 2, 3], &[]);
        storage
            .wl()
            .append(&ents_with_terms(&[1, 1]))
            .expect("append");
        let mut sm = new_test_raft(1, 10, 1, storage);
        sm.term = 1;
        // The step function follows the role, as etcd's `sm.step` does.
        sm.state = state;
        if state == StateRole::Leader {
            // raftlet: a leader tracks its peers (`become_leader` starts it).
            sm.trk.track_members(sm.raft_log.last_index() + 1);
        }
        sm.step(msg(MessageType::MsgBeat, 1, 1)).unwrap();

        let msgs = sm.read_messages();
        assert_eq!(msgs.len(), w_msg, "#{i}");
        for m in &msgs {
            assert_eq!(m.msg_type, MessageType::MsgHeartbeat, "#{i}");
        }
    }
}

/// etcd: TestLeaderIncreaseNext
///
/// In replicate state the leader sends optimistically and moves next past
/// what it sent; in probe state next stays.
#[test]
fn test_leader_increase_next() {
    let previous_ents = ents_with_terms(&[1, 2, 3]);
    let cases = [
        // The previous entries, the empty entry and the proposal, plus one.
        (
            ProgressState::Replicate,
            2,
            previous_ents.len() as u64 + 1 + 1 + 1,
        ),
        (ProgressState::Probe, 2, 2),
    ];
    for (i, &(state, next, wnext)) in cases.iter().enumerate() {
        let mut sm = new_test_raft(1, 10, 1, new_test_storage(&[1, 2], &[]));
        sm.raft_log.append(&previous_ents);
        sm.become_candidate();
        sm.become_leader();
        {
            let pr = sm.trk.get_mut(2).unwrap();
            pr.state = state;
            pr.next = next;
        }
        sm.step(prop(1, 1, b"somedata")).unwrap();
        assert_eq!(sm.trk.get(2).unwrap().next, wnext, "#{i}");
    }
}

/// etcd: TestSendAppendForProgressProbe
///
/// A probed follower gets one append, then nothing until a heartbeat
/// response lifts the pause.
#[test]
fn test_send_append_for_progress_probe() {
    let mut r = new_leader(&[1, 2]);
    r.read_messages();
    r.trk.get_mut(2).unwrap().become_probe();

    // Each round ends with a heartbeat.
    for round in 0..3 {
        if round == 0 {
            // Only the first append goes out; then the follower is paused
            // until it answers.
            assert!(r.append_entry(vec![data_entry(b"somedata")]));
            r.send_append(2);
            let msgs = r.read_messages();
            assert_eq!(msgs.len(), 1, "round {round}");
            assert_eq!(msgs[0].index, 0, "round {round}");
        }

        assert!(r.trk.get(2).unwrap().msg_app_flow_paused, "round {round}");
        for _ in 0..10 {
            assert!(r.append_entry(vec![data_entry(b"somedata")]));
            r.send_append(2);
            assert!(r.read_messages().is_empty(), "round {round}");
        }

        // A heartbeat does not lift the pause by itself.
        for _ in 0..r.heartbeat_timeout {
            r.step(msg(MessageType::MsgBeat, 1, 1)).unwrap();
        }
        assert!(r.trk.get(2).unwrap().msg_app_flow_paused, "round {round}");

        let msgs = r.read_messages();
        assert_eq!(msgs.len(), 1, "round {round}");
        assert_eq!(msgs[0].msg_type, MessageType::MsgHeartbeat, "round {round}");
    }

    // A heartbeat response lets one more probe out.
    r.step(msg(MessageType::MsgHeartbeatResp, 2, 1)).unwrap();
    let msgs = r.read_messages();
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].index, 0);
    assert!(r.trk.get(2).unwrap().msg_app_flow_paused);
}

/// etcd: TestSendAppendForProgressReplicate
#[test]
fn test_send_append_for_progress_replicate() {
    let mut r = new_leader(&[1, 2]);
    r.read_messages();
    r.trk.get_mut(2).unwrap().become_replicate();

    // In replicate state every new entry goes out at once.
    for i in 0..10 {
        assert!(r.append_entry(vec![data_entry(b"somedata")]));
        r.send_append(2);
        let msgs = r.read_messages();
        assert_eq!(msgs.len(), 1, "#{i}");
    }
}

/// etcd: TestRecvMsgUnreachable
#[test]
fn test_recv_msg_unreachable() {
    let s = new_test_storage(&[1, 2], &[]);
    s.wl().append(&ents_with_terms(&[1, 2, 3])).expect("append");
    let mut r = new_test_raft(1, 10, 1, s);
    r.become_candidate();
    r.become_leader();
    r.read_messages();
    // Node 2 replicates optimistically.
    {
        let pr = r.trk.get_mut(2).unwrap();
        pr.matched = 3;
        pr.become_replicate();
        pr.next = 6;
    }

    r.step(msg(MessageType::MsgUnreachable, 2, 1)).unwrap();

    let pr = r.trk.get(2).unwrap();
    assert_eq!(pr.state, ProgressState::Probe);
    assert_eq!(pr.next, pr.matched + 1);
}

/// etcd: TestFastLogRejection
///
/// The rejection hint lets the leader skip a whole conflicting term per
/// round trip, on either side.
#[test]
fn test_fast_log_rejection() {
    struct Case {
        leader_log: &'static [u64],
        follower_log: &'static [u64],
        /// The follower's storage is compacted up to here (0: not at all).
        follower_compact: u64,
        reject_hint_term: u64,
        reject_hint_index: u64,
        next_append_term: u64,
        next_append_index: u64,
    }
    let cases = [
        // The leader finds the conflict quickly: it first appends at
        // (index 7, term 4), then at (3, 2).
        Case {
            leader_log: &[1, 2, 2, 4, 4, 4, 4],
            follower_log: &[1, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3],
            follower_compact: 0,
            reject_hint_term: 3,
            reject_hint_index: 7,
            next_append_term: 2,
            next_append_index: 3,
        },
        // Likewise: (8, 5), then (4, 3).
        Case {
            leader_log: &[1, 2, 2, 3, 4, 4, 4, 5],
            follower_log: &[1, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3],
            follower_compact: 0,
            reject_hint_term: 3,
            reject_hint_index: 8,
            next_append_term: 3,
            next_append_index: 4,
        },
        // The follower finds the conflict quickly: (4, 1), then (1, 1).
        Case {
            leader_log: &[1, 1, 1, 1],
            follower_log: &[1, 2, 2, 4],
            follower_compact: 0,
            reject_hint_term: 1,
            reject_hint_index: 1,
            next_append_term: 1,
            next_append_index: 1,
        },
        // As above, with a longer uncommitted tail on the leader: (6, 1),
        // then (1, 1).
        Case {
            leader_log: &[1, 1, 1, 1, 1, 1],
            follower_log: &[1, 2, 2, 4],
            follower_compact: 0,
            reject_hint_term: 1,
            reject_hint_index: 1,
            next_append_term: 1,
            next_append_index: 1,
        },
        // As above, with a longer tail on the follower: (4, 1), then (1, 1).
        Case {
            leader_log: &[1, 1, 1, 1],
            follower_log: &[1, 2, 2, 4, 4, 4],
            follower_compact: 0,
            reject_hint_term: 1,
            reject_hint_index: 1,
            next_append_term: 1,
            next_append_index: 1,
        },
        // No conflict, the follower is just behind: (5, 5), then (4, 4).
        Case {
            leader_log: &[1, 1, 1, 4, 5],
            follower_log: &[1, 1, 1, 4],
            follower_compact: 0,
            reject_hint_term: 4,
            reject_hint_index: 4,
            next_append_term: 4,
            next_append_index: 4,
        },
        // The example in the leader's rejection handling.
        Case {
            leader_log: &[2, 5, 5, 5, 5, 5, 5, 5, 5],
            follower_log: &[2, 4, 4, 4, 4, 4],
            follower_compact: 0,
            reject_hint_term: 4,
            reject_hint_index: 6,
            next_append_term: 2,
            next_append_index: 1,
        },
        // The example in the follower's rejection handling.
        Case {
            leader_log: &[2, 2, 2, 2, 2],
            follower_log: &[2, 4, 4, 4, 4, 4, 4, 4],
            follower_compact: 0,
            reject_hint_term: 2,
            reject_hint_index: 1,
            next_append_term: 2,
            next_append_index: 1,
        },
        // A stale append (index 3, term 3) reaches a follower that compacted
        // past 3: it rejects at 3 with an unknown term (0), and the leader
        // steps back by one, to (2, 1).
        Case {
            leader_log: &[1, 1, 3],
            follower_log: &[1, 1, 3, 3, 3],
            follower_compact: 5,
            reject_hint_term: 0,
            reject_hint_index: 3,
            next_append_term: 1,
            next_append_index: 2,
        },
    ];
    for (i, c) in cases.iter().enumerate() {
        let leader_log = ents_with_terms(c.leader_log);
        let last = leader_log.last().unwrap().clone();
        let s1 = new_test_storage(&[1, 2, 3], &[]);
        s1.wl().append(&leader_log).expect("append");
        s1.wl().set_hard_state(HardState {
            term: last.term - 1,
            vote: 0,
            commit: last.index,
        });
        let mut n1 = new_test_raft(1, 10, 1, s1);
        // Campaigning raises the term to the last entry's.
        n1.become_candidate();
        n1.become_leader();

        let s2 = new_test_storage(&[1, 2, 3], &[]);
        s2.wl()
            .append(&ents_with_terms(c.follower_log))
            .expect("append");
        s2.wl().set_hard_state(HardState {
            term: last.term,
            vote: 1,
            commit: 0,
        });
        let mut n2 = new_test_raft(2, 10, 1, s2.clone());
        if c.follower_compact != 0 {
            // Not a realistic state (the commit index is still 0): it
            // exercises the edge case should it ever arise.
            s2.wl().compact(c.follower_compact).expect("compact");
        }

        n2.step(msg(MessageType::MsgHeartbeat, 1, 2)).unwrap();
        let msgs = n2.read_messages();
        assert_eq!(msgs.len(), 1, "#{i}: one message from peer 2");
        assert_eq!(msgs[0].msg_type, MessageType::MsgHeartbeatResp, "#{i}");

        n1.step(msgs[0].clone()).unwrap();
        let msgs = n1.read_messages();
        assert_eq!(msgs.len(), 1, "#{i}: one message from peer 1");
        assert_eq!(msgs[0].msg_type, MessageType::MsgApp, "#{i}");

        n2.step(msgs[0].clone()).unwrap();
        let msgs = n2.read_messages();
        assert_eq!(msgs.len(), 1, "#{i}: one message from peer 2");
        assert_eq!(msgs[0].msg_type, MessageType::MsgAppResp, "#{i}");
        assert!(msgs[0].reject, "#{i}: expected a rejection");
        assert_eq!(msgs[0].log_term, c.reject_hint_term, "#{i}: hint term");
        assert_eq!(msgs[0].reject_hint, c.reject_hint_index, "#{i}: hint index");

        n1.step(msgs[0].clone()).unwrap();
        let msgs = n1.read_messages();
        assert!(!msgs.is_empty(), "#{i}: no append after the rejection");
        assert_eq!(msgs[0].log_term, c.next_append_term, "#{i}");
        assert_eq!(msgs[0].index, c.next_append_index, "#{i}");
    }
}

/// etcd: TestLogReplicationWithReorderedMessage
///
/// A late rejection whose hint is below the match index does not move the
/// leader back below what the follower acknowledged.
#[test]
fn test_log_replication_with_reordered_message() {
    let mut r1 = new_leader(&[1, 2]);
    r1.read_messages();
    r1.trk.get_mut(2).unwrap().become_replicate();

    let mut r2 = new_test_raft(2, 10, 1, new_test_storage(&[1, 2], &[]));

    // r1 sends two appends to r2.
    assert!(r1.append_entry(vec![data_entry(b"somedata")]));
    r1.send_append(2);
    let req1 = expect_one_message(&mut r1);
    assert!(r1.append_entry(vec![data_entry(b"somedata")]));
    r1.send_append(2);
    let req2 = expect_one_message(&mut r1);

    // The second arrives first: r2 rejects it.
    r2.step(req2).unwrap();
    let resp2 = expect_one_message(&mut r2);
    assert!(resp2.reject);
    assert_eq!(resp2.reject_hint, 0);
    assert_eq!(resp2.index, 2);

    // Then the first: r2 accepts it, and r1 records the match.
    r2.step(req1).unwrap();
    let m = expect_one_message(&mut r2);
    assert!(!m.reject);
    assert_eq!(m.index, 2);
    r1.step(m).unwrap();
    expect_one_message(&mut r1);
    assert_eq!(r1.trk.get(2).unwrap().matched, 2);

    // A transient network failure: r1 probes r2.
    r1.step(msg(MessageType::MsgUnreachable, 2, 1)).unwrap();
    assert_eq!(r1.trk.get(2).unwrap().state, ProgressState::Probe);

    // The delayed rejection arrives; its hint is below the match.
    r1.step(resp2).unwrap();
    let m = expect_one_message(&mut r1);
    // r1 resumes from the match, not from the hint.
    assert_eq!(m.index, r1.trk.get(2).unwrap().matched);
}

/// etcd: TestUncommittedEntryLimit
#[test]
fn test_uncommitted_entry_limit() {
    // Many entries, so that a size miscounted per entry would show: either
    // proposals dropped too early, or a non-zero final tally.
    const MAX_ENTRIES: usize = 1024;
    let test_entry = data_entry(b"testdata");
    let max_entry_size = MAX_ENTRIES as u64 * test_entry.payload_size();

    assert_eq!(Entry::default().payload_size(), 0);

    let mut cfg = new_test_config(1, 5, 1);
    cfg.max_uncommitted_entries_size = max_entry_size;
    // Room enough that flow control does not interfere.
    cfg.max_inflight_msgs = 2 * 1024;
    let mut r = new_test_raft_with_config(&cfg, new_test_storage(&[1, 2, 3], &[]));
    r.become_candidate();
    r.become_leader();
    assert_eq!(r.uncommitted_size, 0);

    // Both followers replicate; the log is committed to its tail.
    const NUM_FOLLOWERS: usize = 2;
    r.trk.get_mut(2).unwrap().become_replicate();
    r.trk.get_mut(3).unwrap().become_replicate();
    r.uncommitted_size = 0;

    // Proposals up to the limit are appended.
    let prop_msg = || {
        let mut m = msg(MessageType::MsgProp, 1, 1);
        m.entries = vec![test_entry.clone()];
        m
    };
    let mut prop_ents = Vec::with_capacity(MAX_ENTRIES);
    for i in 0..MAX_ENTRIES {
        assert_eq!(r.step(prop_msg()), Ok(()), "#{i}");
        prop_ents.push(test_entry.clone());
    }

    // One more is refused.
    assert_eq!(r.step(prop_msg()), Err(Error::ProposalDropped));

    // As if the entries were committed: their size is returned.
    let ms = r.read_messages();
    assert_eq!(ms.len(), MAX_ENTRIES * NUM_FOLLOWERS);
    r.reduce_uncommitted_size(payloads_size(&prop_ents));
    assert_eq!(r.uncommitted_size, 0);

    // A single large proposal is accepted though it overshoots the limit:
    // the budget was not exhausted before it.
    let prop_ents = vec![test_entry.clone(); 2 * MAX_ENTRIES];
    let mut large = msg(MessageType::MsgProp, 1, 1);
    large.entries = prop_ents.clone();
    assert_eq!(r.step(large), Ok(()));

    // Then the budget is exhausted again.
    assert_eq!(r.step(prop_msg()), Err(Error::ProposalDropped));

    // An entry without payload is always accepted (the leader's empty entry
    // and the automatic leave of a joint configuration rely on it).
    let mut empty = msg(MessageType::MsgProp, 1, 1);
    empty.entries = vec![Entry::default()];
    assert_eq!(r.step(empty), Ok(()));

    let ms = r.read_messages();
    assert_eq!(ms.len(), 2 * NUM_FOLLOWERS);
    r.reduce_uncommitted_size(payloads_size(&prop_ents));
    assert_eq!(r.uncommitted_size, 0);
}

/// etcd: TestDisableProposalForwarding
///
/// A follower forwards proposals to the leader unless forwarding is
/// disabled; then the proposal is dropped with an error.
#[test]
fn test_disable_proposal_forwarding() {
    let r1 = new_test_raft(1, 10, 1, new_test_storage(&[1, 2, 3], &[]));
    let r2 = new_test_raft(2, 10, 1, new_test_storage(&[1, 2, 3], &[]));
    let mut cfg3 = new_test_config(3, 10, 1);
    cfg3.disable_proposal_forwarding = true;
    let r3 = new_test_raft_with_config(&cfg3, new_test_storage(&[1, 2, 3], &[]));
    let mut nt = Network::new(vec![peer(r1), peer(r2), peer(r3)]);

    nt.campaign(1);

    // Node 2 forwards.
    let r2 = nt.peer_mut(2);
    assert_eq!(r2.step(prop(2, 2, b"testdata")), Ok(()));
    assert_eq!(r2.msgs.len(), 1);
    assert_eq!(r2.msgs[0].msg_type, MessageType::MsgProp);
    assert_eq!(r2.msgs[0].to, 1);

    // Node 3 does not, and says so.
    let r3 = nt.peer_mut(3);
    assert_eq!(
        r3.step(prop(3, 3, b"testdata")),
        Err(Error::ProposalDropped)
    );
    assert!(r3.msgs.is_empty());
}

/// etcd: TestNodeProposeWaitDropped
///
/// A proposal that cannot be accepted is reported to the caller at once
/// (raftlet's synchronous counterpart of etcd's Node.Propose returning
/// ErrProposalDropped): with no leader, and when the leader drops it.
#[test]
fn test_node_propose_wait_dropped() {
    // No leader is known: the proposal is dropped.
    let mut rn = RawNode::new(
        &new_test_config(1, 10, 1),
        new_test_storage(&[1, 2, 3], &[]),
    )
    .unwrap();
    assert_eq!(
        rn.propose(&b"test_dropping"[..]),
        Err(Error::ProposalDropped)
    );
    let rd = rn.ready();
    assert!(rd.entries.is_empty(), "{:?}", rd.entries);
    assert!(rd.messages.is_empty(), "{:?}", rd.messages);
    rn.advance(rd);

    // A single node that is not campaigning knows no leader either.
    let mut rn = RawNode::new(&new_test_config(1, 10, 1), new_test_storage(&[1], &[])).unwrap();
    assert_eq!(
        rn.propose(&b"test_dropping"[..]),
        Err(Error::ProposalDropped)
    );
    assert!(!rn.has_ready());

    // Once it leads, the leader's refusal (here: the uncommitted budget is
    // used up) also reaches the caller.
    let mut cfg = new_test_config(1, 10, 1);
    cfg.max_uncommitted_entries_size = 10;
    let s = new_test_storage(&[1], &[]);
    let mut rn = RawNode::new(&cfg, s.clone()).unwrap();
    rn.campaign().unwrap();
    while rn.raft().state != StateRole::Leader || rn.has_ready() {
        let rd = rn.ready();
        s.wl().append(&rd.entries).unwrap();
        rn.advance(rd);
    }
    assert_eq!(rn.propose(&b"accepted"[..]), Ok(()));
    let last = rn.raft().raft_log.last_index();
    assert_eq!(
        rn.propose(&b"test_dropping"[..]),
        Err(Error::ProposalDropped)
    );
    assert_eq!(rn.raft().raft_log.last_index(), last);
    let rd = rn.ready();
    assert!(
        rd.entries.iter().all(|e| e.data() != b"test_dropping"),
        "{:?}",
        rd.entries
    );
}

/// etcd: TestProgressLeader
#[test]
fn test_progress_leader() {
    let mut r = new_leader(&[1, 2]);
    r.trk.get_mut(2).unwrap().become_replicate();

    // Five proposals join the leader's empty entry in the unstable log.
    for i in 0..5 {
        assert_eq!(r.step(prop(1, 1, b"foo")), Ok(()), "#{i}");
    }

    // The leader's own progress moves only once the entries are durable.
    assert_eq!(r.trk.get(1).unwrap().matched, 0);

    let ents = r.raft_log.next_unstable_ents();
    assert_eq!(ents.len(), 6);
    assert!(ents[0].data().is_empty());
    assert_eq!(ents[5].data(), b"foo");

    r.advance_messages_after_append();

    let pr = r.trk.get(1).unwrap();
    assert_eq!(pr.matched, 6);
    assert_eq!(pr.next, 7);
}

/// etcd: TestProgressResumeByHeartbeatResp
///
/// Sending heartbeats keeps a paused follower paused; its heartbeat
/// response lifts the pause.
#[test]
fn test_progress_resume_by_heartbeat_resp() {
    let mut r = new_test_raft(1, 5, 1, new_test_storage(&[1, 2], &[]));
    r.become_candidate();
    r.become_leader();

    r.trk.get_mut(2).unwrap().msg_app_flow_paused = true;

    r.step(msg(MessageType::MsgBeat, 1, 1)).unwrap();
    assert!(r.trk.get(2).unwrap().msg_app_flow_paused);

    r.trk.get_mut(2).unwrap().become_replicate();
    assert!(!r.trk.get(2).unwrap().msg_app_flow_paused);
    r.trk.get_mut(2).unwrap().msg_app_flow_paused = true;
    r.step(msg(MessageType::MsgHeartbeatResp, 2, 1)).unwrap();
    assert!(!r.trk.get(2).unwrap().msg_app_flow_paused);
}

/// etcd: TestProgressPaused
///
/// A probed follower gets one append for several proposals.
#[test]
fn test_progress_paused() {
    let mut r = new_test_raft(1, 5, 1, new_test_storage(&[1, 2], &[]));
    r.become_candidate();
    r.become_leader();
    for _ in 0..3 {
        r.step(prop(1, 1, b"somedata")).unwrap();
    }
    let ms = r.read_messages();
    assert_eq!(ms.len(), 1);
}

/// etcd: TestProgressFlowControl
///
/// Appends respect max_size_per_msg, max_inflight_msgs and
/// max_inflight_bytes together.
#[test]
fn test_progress_flow_control() {
    let mut cfg = new_test_config(1, 5, 1);
    cfg.max_inflight_msgs = 3;
    cfg.max_size_per_msg = 2048;
    // A little over max_inflight_msgs * max_size_per_msg.
    cfg.max_inflight_bytes = 9000;
    let mut r = new_test_raft_with_config(&cfg, new_test_storage(&[1, 2], &[]));
    r.become_candidate();
    r.become_leader();

    // Forget the messages of the election.
    r.read_messages();

    // Propose while node 2 is probed.
    r.trk.get_mut(2).unwrap().become_probe();
    let blob = Bytes::from(vec![b'a'; 1000]);
    let large = Bytes::from(vec![b'b'; 5000]);
    for i in 0..22 {
        // A few large entries in the middle.
        let data = if (10..16).contains(&i) {
            large.clone()
        } else {
            blob.clone()
        };
        r.step(prop_data(1, 1, data)).unwrap();
    }

    let ms = r.read_messages();
    // One probe: the empty entry of the election and the first proposal.
    assert_eq!(ms.len(), 1);
    assert_eq!(ms[0].msg_type, MessageType::MsgApp);
    assert_eq!(ms[0].entries.len(), 2);
    assert!(ms[0].entries[0].data().is_empty());
    assert_eq!(ms[0].entries[1].data().len(), 1000);

    // Acknowledges `index` and checks the appends sent in return: one per
    // element of `exp_entries`, with that many entries. Returns the last
    // index sent.
    let mut ack_and_verify = |index: u64, exp_entries: &[usize]| -> u64 {
        let mut ack = msg(MessageType::MsgAppResp, 2, 1);
        ack.index = index;
        r.step(ack).unwrap();
        let ms = r.read_messages();
        assert_eq!(ms.len(), exp_entries.len(), "ack {index}: {ms:?}");
        for (i, m) in ms.iter().enumerate() {
            assert_eq!(m.msg_type, MessageType::MsgApp, "ack {index} #{i}");
            assert_eq!(m.entries.len(), exp_entries[i], "ack {index} #{i}");
        }
        match ms.last().and_then(|m| m.entries.last()) {
            Some(e) => e.index,
            None => index,
        }
    };

    // The acknowledgement moves node 2 to replicate: three appends at once.
    let index = ack_and_verify(ms[0].entries[1].index, &[2, 2, 2]);
    // Acknowledged together, three more; the third holds one large entry.
    let index = ack_and_verify(index, &[2, 1, 1]);
    // Large entries, one per append; two appends fill max_inflight_bytes.
    let index = ack_and_verify(index, &[1, 1]);
    let index = ack_and_verify(index, &[1, 1]);
    // Small entries again.
    let index = ack_and_verify(index, &[1, 2, 2]);
    ack_and_verify(index, &[2]);
}

/// etcd: TestAppendPagination
///
/// With max_size_per_msg, no append carries more payload than the limit,
/// and batched entries do fill appends (more than half the limit).
#[test]
fn test_append_pagination() {
    const MAX_SIZE_PER_MSG: u64 = 2048;
    let mut nt = Network::new_with_config(
        Some(&|c: &mut Config| c.max_size_per_msg = MAX_SIZE_PER_MSG),
        vec![None, None, None],
    );

    let seen_full_message = Rc::new(Cell::new(false));
    let seen = seen_full_message.clone();
    nt.msg_hook = Some(Box::new(move |m: &Message| {
        if m.msg_type == MessageType::MsgApp {
            let size = payloads_size(&m.entries);
            assert!(
                size <= MAX_SIZE_PER_MSG,
                "sent an append of {size} bytes: {m:?}"
            );
            if size > MAX_SIZE_PER_MSG / 2 {
                seen.set(true);
            }
        }
        true
    }));

    nt.campaign(1);

    // Propose while node 1 is cut off, so that the entries pile up and go
    // out in batches.
    nt.isolate(1);
    let blob = Bytes::from(vec![b'a'; 1000]);
    for _ in 0..5 {
        nt.send(vec![prop_data(1, 1, blob.clone())]);
    }
    nt.recover();

    // A heartbeat wakes everyone up and the entries flow.
    nt.send(vec![msg(MessageType::MsgBeat, 1, 1)]);
    assert!(
        seen_full_message.get(),
        "no append above half the limit: the test does not test anything"
    );
    // And everything did arrive.
    for id in 1..=3 {
        assert_eq!(nt.peer(id).raft_log.last_index(), 6, "peer {id}");
    }
}

/// max_size_per_msg splits a backlog into several appends, each within the
/// limit (counted in encoded bytes; a single larger entry still goes alone),
/// and together they carry every entry, in order. The backlog is read from
/// the unstable log, from storage, or across the two.
#[test]
fn test_max_size_per_msg_splits_appends() {
    // After how many proposals the leader's log is persisted (None: never).
    for persist_after in [None, Some(1), Some(2), Some(3), Some(7)] {
        let mut cfg = new_test_config(1, 5, 1);
        cfg.max_size_per_msg = 2048;
        let mut r = new_test_raft_with_config(&cfg, new_test_storage(&[1, 2], &[]));
        r.become_candidate();
        r.become_leader();
        r.read_messages();

        // Node 2 is probed: the first proposal goes out (with the empty
        // entry), the next ones wait.
        let blob = Bytes::from(vec![b'a'; 1000]);
        for i in 0..7 {
            r.step(prop_data(1, 1, blob.clone())).unwrap();
            if persist_after == Some(i + 1) {
                r.persist();
            }
        }
        let ms = r.read_messages();
        assert_eq!(ms.len(), 1, "{persist_after:?}");
        assert_eq!(ms[0].entries.len(), 2, "{persist_after:?}");

        // The acknowledgement lets the backlog (entries 3 to 8) go, in
        // appends of two 1000-byte entries (three would exceed 2048 bytes).
        let mut ack = msg(MessageType::MsgAppResp, 2, 1);
        ack.index = 2;
        r.step(ack).unwrap();
        let ms = r.read_messages();
        assert_eq!(ms.len(), 3, "{persist_after:?}: {ms:?}");
        let mut next = 3;
        for m in &ms {
            assert_eq!(m.msg_type, MessageType::MsgApp);
            assert_eq!(m.entries.len(), 2, "{persist_after:?}: {m:?}");
            assert!(ents_size(&m.entries) <= 2048, "{persist_after:?}: {m:?}");
            assert_eq!(
                m.index,
                next - 1,
                "{persist_after:?}: appends follow each other"
            );
            for e in &m.entries {
                assert_eq!(e.index, next, "{persist_after:?}");
                next += 1;
            }
        }
        assert_eq!(next, r.raft_log.last_index() + 1, "{persist_after:?}");

        // An entry larger than the limit still goes out, alone.
        let large = Bytes::from(vec![b'b'; 5000]);
        r.step(prop_data(1, 1, large)).unwrap();
        r.step(prop_data(1, 1, blob)).unwrap();
        let ms = r.read_messages();
        assert_eq!(ms.len(), 2, "{persist_after:?}: {ms:?}");
        assert_eq!(ms[0].entries.len(), 1);
        assert_eq!(ms[0].entries[0].data().len(), 5000);
        assert_eq!(ms[1].entries.len(), 1);
        assert_eq!(ms[1].entries[0].data().len(), 1000);
    }
}

/// A conf-change entry proposing `change_type` for `node_id`.
fn conf_change_entry(change_type: ConfChangeType, node_id: u64) -> Entry {
    let cc = ConfChange {
        change_type,
        node_id,
        ..ConfChange::default()
    };
    let (entry_type, data) = crate::pb::ConfChangeI::V1(cc).to_entry_parts();
    Entry {
        entry_type,
        data: Some(data),
        ..Entry::default()
    }
}

/// A local proposal that is refused leaves no trace: a batch of two conf
/// changes fails on the second (one is already pending), nothing is
/// appended, and a conf change proposed afterwards is judged as if the
/// batch had never been proposed. The same holds for a conf change dropped
/// by the uncommitted-size budget.
#[test]
fn test_refused_local_conf_change_leaves_no_pending_conf() {
    let mut cfg = new_test_config(1, 10, 1);
    cfg.max_uncommitted_entries_size = 64;
    let mut r = new_test_raft_with_config(&cfg, new_test_storage(&[1, 2, 3], &[]));
    r.become_candidate();
    r.become_leader();
    next_ents(&mut r);
    r.read_messages();
    let pending = r.pending_conf_index;
    let last = r.raft_log.last_index();

    // raftlet: a locally proposed conf change that fails validation is
    // refused with an error and nothing is appended (etcd would append the
    // second change of the batch as an empty entry).
    let mut m = msg(MessageType::MsgProp, 1, 1);
    m.entries = vec![
        conf_change_entry(ConfChangeType::ConfChangeAddNode, 4),
        conf_change_entry(ConfChangeType::ConfChangeAddNode, 5),
    ];
    assert!(matches!(r.step(m), Err(Error::ConfChangeRefused(_))));
    assert_eq!(r.raft_log.last_index(), last);
    assert_eq!(
        r.pending_conf_index, pending,
        "a refused batch left a pending conf change"
    );

    // raftlet: a conf change dropped for lack of uncommitted budget leaves
    // no pending conf change (etcd records it as pending although it was
    // not appended).
    r.step(prop_data(1, 1, Bytes::from(vec![b'x'; 64])))
        .unwrap();
    let last = r.raft_log.last_index();
    let mut m = msg(MessageType::MsgProp, 1, 1);
    m.entries = vec![conf_change_entry(ConfChangeType::ConfChangeAddNode, 4)];
    assert_eq!(r.step(m), Err(Error::ProposalDropped));
    assert_eq!(r.raft_log.last_index(), last);
    assert_eq!(
        r.pending_conf_index, pending,
        "a dropped conf change left a pending conf change"
    );
    r.reduce_uncommitted_size(64);

    // A single conf change is accepted and becomes the pending one.
    let mut m = msg(MessageType::MsgProp, 1, 1);
    m.entries = vec![conf_change_entry(ConfChangeType::ConfChangeAddNode, 4)];
    assert_eq!(r.step(m), Ok(()));
    assert_eq!(r.raft_log.last_index(), last + 1);
    assert_eq!(r.pending_conf_index, last + 1);
}
