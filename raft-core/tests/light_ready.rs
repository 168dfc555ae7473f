//! `RawNode::advance_light`: the write's acknowledgement hands out what it
//! made available (raft-rs's `LightReady`), so that a proposal takes one
//! Ready cycle; and the commit-index contract that comes with it.

use raftlet::pb::{ConfState, EntryType, Message, MessageType};
use raftlet::{Config, LightReady, MemoryStorage, RawNode, Ready, StateRole, Storage};

fn node(id: u64, voters: &[u64]) -> (RawNode<MemoryStorage>, MemoryStorage) {
    let storage =
        MemoryStorage::new_with_conf_state(ConfState::from_voters(voters.to_vec())).expect("store");
    let rn = RawNode::new(&Config::new(id), storage.clone()).expect("node");
    (rn, storage)
}

/// Persists a Ready's snapshot, entries and hard state.
fn persist(storage: &MemoryStorage, rd: &Ready) {
    let mut s = storage.wl();
    if let Some(snap) = &rd.snapshot {
        s.apply_snapshot(snap.clone()).expect("snapshot");
    }
    s.append(&rd.entries).expect("append");
    if let Some(hs) = rd.hard_state {
        s.set_hard_state(hs);
    }
}

/// Persists a light Ready's commit index.
fn persist_commit(storage: &MemoryStorage, light: &LightReady) {
    if let Some(commit) = light.commit_index() {
        storage
            .wl()
            .commit_to(commit)
            .expect("commit within the log");
    }
}

/// Runs full Ready cycles until the node has none, returning the data of
/// the normal entries applied.
fn drain(rn: &mut RawNode<MemoryStorage>, storage: &MemoryStorage) -> Vec<Vec<u8>> {
    let mut applied = Vec::new();
    while rn.has_ready() {
        let rd = rn.ready();
        persist(storage, &rd);
        applied.extend(data_of(&rd.committed_entries));
        rn.advance(rd);
    }
    applied
}

fn data_of(ents: &[raftlet::pb::Entry]) -> Vec<Vec<u8>> {
    ents.iter()
        .filter(|e| e.entry_type == EntryType::EntryNormal && !e.data().is_empty())
        .map(|e| e.data().to_vec())
        .collect()
}

fn single_voter_leader() -> (RawNode<MemoryStorage>, MemoryStorage) {
    let (mut rn, storage) = node(1, &[1]);
    rn.campaign().expect("campaign");
    drain(&mut rn, &storage);
    assert_eq!(rn.basic_status().soft_state.raft_state, StateRole::Leader);
    (rn, storage)
}

#[test]
fn advance_light_hands_a_single_voters_proposal_out_in_one_cycle() {
    let (mut rn, storage) = single_voter_leader();
    for i in 0..10u8 {
        rn.propose(vec![i; 8]).expect("propose");
        assert!(rn.has_ready());
        let rd = rn.ready();
        assert_eq!(rd.entries.len(), 1);
        assert!(
            rd.committed_entries.is_empty(),
            "not committed before the write"
        );
        persist(&storage, &rd);
        let index = rd.entries[0].index;
        let mut light = rn.advance_light(rd);
        assert_eq!(light.commit_index(), Some(index));
        assert_eq!(data_of(light.committed_entries()), vec![vec![i; 8]]);
        assert!(light.messages().is_empty(), "a single voter sends nothing");
        persist_commit(&storage, &light);
        let ents = light.take_committed_entries();
        assert_eq!(ents.last().map(|e| e.index), Some(index));
        rn.advance_apply_light(light);
        assert!(!rn.has_ready(), "nothing is left for a second cycle");
        assert_eq!(rn.basic_status().applied, index);
        assert_eq!(storage.rl().hard_state().commit, index);
    }
}

#[test]
fn advance_light_hands_nothing_out_twice_and_the_next_ready_skips_the_commit() {
    let (mut rn, storage) = single_voter_leader();
    rn.propose(&b"a"[..]).expect("propose");
    let rd = rn.ready();
    persist(&storage, &rd);
    let light = rn.advance_light(rd);
    assert_eq!(data_of(light.committed_entries()), vec![b"a".to_vec()]);
    persist_commit(&storage, &light);
    // Not applied yet: what the light Ready handed out is not handed out
    // again by a Ready, which has nothing to report (the commit index
    // included: the host persisted it from the light Ready).
    assert!(!rn.has_ready());
    rn.propose(&b"b"[..]).expect("propose");
    let rd = rn.ready();
    assert!(rd.committed_entries.is_empty());
    assert!(
        rd.hard_state.is_none(),
        "the commit index was reported by the light Ready"
    );
    persist(&storage, &rd);
    let light2 = rn.advance_light(rd);
    assert_eq!(data_of(light2.committed_entries()), vec![b"b".to_vec()]);
    rn.advance_apply_light(light);
    rn.advance_apply_light(light2);
    assert_eq!(
        rn.basic_status().applied,
        rn.basic_status().hard_state.commit
    );
    assert!(!rn.has_ready());
}

#[test]
fn advance_light_leaves_entries_of_a_ready_not_yet_durable() {
    let (mut rn, storage) = single_voter_leader();
    rn.propose(&b"a"[..]).expect("propose");
    let rd1 = rn.ready();
    rn.propose(&b"b"[..]).expect("propose");
    let rd2 = rn.ready();
    persist(&storage, &rd1);
    // Only the first write is durable: "b" is not committed and not
    // handed out.
    let light = rn.advance_light(rd1);
    assert_eq!(data_of(light.committed_entries()), vec![b"a".to_vec()]);
    persist_commit(&storage, &light);
    rn.advance_apply_light(light);
    persist(&storage, &rd2);
    let light = rn.advance_light(rd2);
    assert_eq!(data_of(light.committed_entries()), vec![b"b".to_vec()]);
    rn.advance_apply_light(light);
    assert!(!rn.has_ready());
}

/// A 3-voter leader: the followers' acknowledgements commit, not its own
/// write; once they have, the light Ready of the leader's write has nothing
/// new, and a follower's light Ready hands out what its leader committed.
#[test]
fn advance_light_on_a_three_voter_cluster_matches_full_readies() {
    let ids = [1u64, 2, 3];
    let mut nodes: Vec<(RawNode<MemoryStorage>, MemoryStorage)> =
        ids.iter().map(|&id| node(id, &ids)).collect();
    let mut applied: Vec<Vec<Vec<u8>>> = vec![Vec::new(); 3];
    let mut inbox: Vec<Message> = Vec::new();
    nodes[0].0.campaign().expect("campaign");
    let mut proposals = 0u8;
    for round in 0..200 {
        if round % 10 == 5
            && proposals < 10
            && nodes[0].0.basic_status().soft_state.raft_state == StateRole::Leader
        {
            nodes[0].0.propose(vec![proposals; 4]).expect("propose");
            proposals += 1;
        }
        for (i, (rn, storage)) in nodes.iter_mut().enumerate() {
            while rn.has_ready() {
                let mut rd = rn.ready();
                persist(storage, &rd);
                applied[i].extend(data_of(&rd.committed_entries));
                inbox.extend(rd.take_all_messages());
                let mut light = rn.advance_light(rd);
                persist_commit(storage, &light);
                applied[i].extend(data_of(light.committed_entries()));
                inbox.extend(light.take_messages());
                rn.advance_apply_light(light);
            }
        }
        for m in std::mem::take(&mut inbox) {
            let to = m.to as usize - 1;
            let _ = nodes[to].0.step(m);
        }
    }
    assert_eq!(proposals, 10);
    let want: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; 4]).collect();
    for (i, a) in applied.iter().enumerate() {
        assert_eq!(a, &want, "node {} applied", i + 1);
        let (rn, storage) = &nodes[i];
        assert_eq!(
            rn.basic_status().applied,
            rn.basic_status().hard_state.commit
        );
        assert!(storage.rl().hard_state().commit <= rn.basic_status().hard_state.commit);
    }
}

/// The contract's other half: a host that applied (durably) entries whose
/// commit index it did not persist is refused a restart that claims them.
#[test]
fn a_restart_applied_beyond_the_stored_commit_is_refused() {
    let (mut rn, storage) = single_voter_leader();
    rn.propose(&b"a"[..]).expect("propose");
    let rd = rn.ready();
    persist(&storage, &rd);
    let light = rn.advance_light(rd);
    let index = light.committed_entries().last().expect("entry").index;
    assert!(storage.rl().hard_state().commit < index);
    // The host applied "a" but lost the commit index: claiming it applied
    // at a restart is refused, not trusted.
    let mut cfg = Config::new(1);
    cfg.applied = index;
    let err = RawNode::new(&cfg, storage.clone()).err().expect("refused");
    assert!(err.to_string().contains("stored commit index"), "{err}");
    // With the commit index persisted, the same restart is accepted.
    persist_commit(&storage, &light);
    let restarted = RawNode::new(&cfg, storage.clone()).expect("restart");
    assert_eq!(restarted.basic_status().applied, index);
}

/// A node whose term or vote is not durable keeps its messages for the
/// next Ready: a light Ready never lets out what must wait for a write.
#[test]
fn advance_light_keeps_messages_while_the_term_is_not_durable() {
    let ids = [1u64, 2, 3];
    let (mut rn, storage) = node(1, &ids);
    rn.campaign().expect("campaign");
    let rd = rn.ready();
    assert!(rd
        .messages
        .iter()
        .all(|m| m.msg_type == MessageType::MsgPreVote));
    // Before that Ready is acknowledged, a vote request of a later term
    // arrives: the node moves to that term and votes, neither durable yet.
    let term = rn.basic_status().hard_state.term;
    let m = Message {
        msg_type: MessageType::MsgVote,
        from: 3,
        to: 1,
        term: term + 5,
        ..Message::default()
    };
    rn.step(m).expect("step");
    assert_eq!(rn.basic_status().hard_state.vote, 3);
    persist(&storage, &rd);
    // The durable term is the old one: the vote response stays.
    let light = rn.advance_light(rd);
    assert!(light.messages().is_empty(), "{:?}", light.messages());
    assert!(rn.has_ready());
    let rd = rn.ready();
    assert!(rd.messages.is_empty());
    assert!(rd
        .persisted_messages
        .iter()
        .any(|m| m.msg_type == MessageType::MsgVoteResp && !m.reject));
    assert_eq!(
        rd.hard_state.map(|hs| (hs.term, hs.vote)),
        Some((term + 5, 3))
    );
}

/// A follower whose commit index already covers entries it received after
/// the Ready was taken: the light Ready reports the commit only up to what
/// is durable (a stored commit beyond the stored log would refuse a
/// restart), and the next Ready reports the rest with those entries.
#[test]
fn advance_light_caps_the_commit_index_at_the_durable_log() {
    let ids = [1u64, 2, 3];
    let (mut rn, storage) = node(2, &ids);
    let append = |index: u64, commit: u64| {
        let e = raftlet::pb::Entry {
            index,
            term: 1,
            data: Some(vec![index as u8].into()),
            ..Default::default()
        };
        Message {
            msg_type: MessageType::MsgApp,
            from: 1,
            to: 2,
            term: 1,
            index: index - 1,
            log_term: u64::from(index > 1),
            commit,
            entries: vec![e],
            ..Message::default()
        }
    };
    rn.step(append(1, 1)).expect("step");
    let rd1 = rn.ready();
    assert_eq!(rd1.entries.len(), 1);
    // Entry 2 and a commit covering it arrive before entry 1's write lands.
    rn.step(append(2, 2)).expect("step");
    assert_eq!(rn.basic_status().hard_state.commit, 2);
    persist(&storage, &rd1);
    let light = rn.advance_light(rd1);
    let stored_last = storage.last_index().expect("last index");
    assert_eq!(stored_last, 1);
    if let Some(c) = light.commit_index() {
        assert!(
            c <= stored_last,
            "commit {c} reported beyond the durable log"
        );
    }
    persist_commit(&storage, &light);
    assert!(storage.rl().hard_state().commit <= stored_last);
    // A crash now restarts cleanly.
    RawNode::new(&Config::new(2), storage.clone()).expect("restart");
    rn.advance_apply_light(light);
    let rd2 = rn.ready();
    assert_eq!(rd2.entries.last().map(|e| e.index), Some(2));
    assert_eq!(rd2.hard_state.map(|hs| hs.commit), Some(2));
}

/// Why: a snapshot that reaches a follower after a Ready was taken is not
/// durable when that Ready's write is acknowledged. The light Ready must
/// not report the snapshot's index as a commit to persist: the host would
/// store a commit beyond its stored log, and a crash before the
/// snapshot's own write lands would leave a node that refuses to restart
/// (the simulator's seed 7115 found it: a learner caught up by snapshot on
/// a pipelined host). The commit goes out in the snapshot's Ready, in its
/// hard state, written with the snapshot.
#[test]
fn advance_light_reports_no_commit_that_only_a_snapshot_not_yet_durable_covers() {
    let (mut rn, storage) = node(2, &[1, 2]);
    let mut hb = Message::new(MessageType::MsgHeartbeat, 1, 2);
    hb.term = 2;
    rn.step(hb).expect("heartbeat");
    let rd = rn.ready();
    persist(&storage, &rd);
    // Before that write is acknowledged, the leader's snapshot arrives.
    let mut snap = raftlet::pb::Snapshot::default();
    snap.metadata.index = 10;
    snap.metadata.term = 2;
    snap.metadata.conf_state = ConfState::from_voters(vec![1, 2]);
    let mut m = Message::new(MessageType::MsgSnap, 1, 2);
    m.term = 2;
    m.snapshot = Some(Box::new(snap));
    rn.step(m).expect("snapshot");
    let light = rn.advance_light(rd);
    assert_eq!(
        light.commit_index(),
        None,
        "a commit covered only by a snapshot not yet written"
    );
    persist_commit(&storage, &light);
    // A crash now, before the snapshot's write: the node restarts from
    // what its storage holds.
    RawNode::new(&Config::new(2), storage.clone()).expect("a restart from the stored state");
    // The snapshot's Ready carries the commit with it.
    let rd = rn.ready();
    assert_eq!(rd.snapshot.as_ref().map(|s| s.metadata.index), Some(10));
    assert_eq!(rd.hard_state.map(|hs| hs.commit), Some(10));
    persist(&storage, &rd);
    let light = rn.advance_light(rd);
    persist_commit(&storage, &light);
    RawNode::new(&Config::new(2), storage.clone()).expect("a restart after the snapshot");
    assert_eq!(
        storage.initial_state().expect("state").hard_state.commit,
        10
    );
}

/// Why: configurations take effect when applied. A configuration change
/// handed out (and so applied) before a commit index covering it is
/// durable lets a node restart with the configuration before it, while
/// the cluster moved on (seed 100979 of the simulator's adversarial
/// profile: a leader applied entering a joint configuration from a light
/// Ready, whose commit index is written unsynced, proposed leaving it,
/// lost the commit in a crash and, restarted, led under the configuration
/// two changes back). The light Ready withholds the change; the next Ready
/// hands it out with the hard state and `must_sync`, and once that Ready
/// is persisted the stored commit covers it.
#[test]
fn a_configuration_change_is_handed_out_with_a_durable_commit_covering_it() {
    use raftlet::pb::{ConfChange, ConfChangeType};
    let (mut rn, storage) = single_voter_leader();
    let cc = ConfChange {
        change_type: ConfChangeType::ConfChangeAddLearnerNode,
        node_id: 2,
        ..ConfChange::default()
    };
    rn.propose_conf_change(cc).expect("propose the change");
    let rd = rn.ready();
    assert_eq!(rd.entries.len(), 1);
    let index = rd.entries[0].index;
    persist(&storage, &rd);
    let light = rn.advance_light(rd);
    // Committed by the write's acknowledgement, but the commit index the
    // light Ready reports is written unsynced: the change waits.
    assert_eq!(light.commit_index(), Some(index));
    assert!(
        light.committed_entries().is_empty(),
        "a configuration change handed out with an unsynced commit"
    );
    // The host writes the light commit, unsynced, and a crash loses it:
    // the stored commit stays below the change.
    rn.advance_apply_light(light);
    assert!(storage.rl().hard_state().commit < index);
    assert!(rn.has_ready());
    let rd = rn.ready();
    assert_eq!(
        rd.committed_entries
            .iter()
            .map(|e| e.index)
            .collect::<Vec<_>>(),
        vec![index]
    );
    assert!(
        rd.must_sync,
        "the Ready that hands the change out is synced"
    );
    assert_eq!(rd.hard_state.map(|hs| hs.commit), Some(index));
    persist(&storage, &rd);
    assert_eq!(storage.rl().hard_state().commit, index);
    let cc = raftlet::pb::ConfChangeI::from_entry(&rd.committed_entries[0]).expect("decode");
    rn.advance(rd);
    rn.apply_conf_change(&cc).expect("apply");
    assert_eq!(rn.basic_status().applied, index);
    // A second change (the learner removed) waits for a synced commit
    // the same way.
    let cc2 = ConfChange {
        change_type: ConfChangeType::ConfChangeRemoveNode,
        node_id: 2,
        ..ConfChange::default()
    };
    rn.propose_conf_change(cc2)
        .expect("propose the second change");
    let rd = rn.ready();
    persist(&storage, &rd);
    let light = rn.advance_light(rd);
    assert!(light.committed_entries().is_empty());
    rn.advance_apply_light(light);
    let rd = rn.ready();
    assert!(rd.must_sync && rd.committed_entries.len() == 1);
    persist(&storage, &rd);
    rn.advance(rd);
}
