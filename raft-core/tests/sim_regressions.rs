//! Regression tests for core bugs found by the deterministic simulator
//! (`tests/sim`) and the fuzzers (`fuzz/`), written against the public API.

use raftlet::pb::{ConfState, Entry, Message, MessageType};
use raftlet::{Config, Error, MemoryStorage, RawNode};

fn follower(id: u64) -> RawNode<MemoryStorage> {
    let storage = MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1, 2, 3]));
    RawNode::new(&Config::new(id), storage).expect("valid node")
}

/// Found by the `step` fuzz target: a message claiming to come from the
/// node itself (here a heartbeat from 2 to 2) made the follower take itself
/// as its leader, and its next proposal was then "forwarded" to itself: a
/// message-to-self panic in debug builds, a forwarding loop through the
/// host in release builds (etcd panics there too). A node never receives
/// its own messages over the network, so `step` refuses them.
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
        MessageType::MsgProp,
        MessageType::MsgReadIndex,
    ] {
        let mut m = Message::new(t, 2, 2);
        m.term = 1;
        if t == MessageType::MsgProp || t == MessageType::MsgReadIndex {
            m.entries.push(Entry::new(0, 0, b"x".to_vec()));
        }
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
}
