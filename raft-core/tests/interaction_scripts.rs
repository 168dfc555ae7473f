//! Ports of etcd raft's interaction scripts (testdata/*.txt) on the
//! replication path: probing and catching up, flow control, commit
//! propagation, snapshot catch-up, and asynchronous storage writes.
//!
//! Each test follows its script step by step with the public-API cluster
//! driver of `common/mod.rs`, configured like etcd's interaction
//! environment: election timeout 3 ticks, heartbeat 1 tick, unlimited
//! message size, a practically unlimited in-flight window, and pre-vote and
//! check-quorum off (raftlet's defaults have both on).

mod common;

use std::collections::{BTreeMap, VecDeque};

use common::Cluster;
use raftlet::pb::{Entry, EntryType, Message, MessageType};
use raftlet::tracker::{Progress, ProgressState};
use raftlet::{Config, Ready, StateRole};

// ----------------------------------------------------------------------
// Helpers
// ----------------------------------------------------------------------

/// etcd's interaction-environment config (`raftConfigStub`): election
/// timeout 3, heartbeat 1, no message size limit, an in-flight window
/// large enough never to fill, pre-vote and check-quorum off, and one
/// append per proposal (etcd does not coalesce appends; these scripts count
/// the messages and inflight slots that produces).
fn etcd_env(c: &mut Config) {
    c.coalesce_appends = false;
    c.election_tick = 3;
    c.heartbeat_tick = 1;
    c.max_size_per_msg = u64::MAX;
    c.max_inflight_msgs = i32::MAX as usize;
    c.pre_vote = false;
    c.check_quorum = false;
}

/// [`etcd_env`] with an in-flight window of `n` messages (etcd's
/// `add-nodes ... inflight=<n>`).
fn etcd_env_inflight(n: usize) -> impl Fn(&mut Config) {
    move |c| {
        etcd_env(c);
        c.max_inflight_msgs = n;
    }
}

/// Makes `id` campaign without running anything else (etcd's `campaign`).
fn campaign(c: &mut Cluster, id: u64) {
    c.node_mut(id).rn.campaign().expect("campaign");
    c.observe_node(id);
}

/// Proposes `data` on `id` without running anything else (etcd's `propose`).
fn propose(c: &mut Cluster, id: u64, data: &str) {
    c.node_mut(id)
        .rn
        .propose(data.as_bytes().to_vec())
        .unwrap_or_else(|e| panic!("propose on {id}: {e}"));
    c.observe_node(id);
}

/// The leader's view of `id`'s progress.
fn progress(c: &Cluster, leader: u64, id: u64) -> Progress {
    let st = c.raw(leader).status();
    assert_eq!(
        st.basic.soft_state.raft_state,
        StateRole::Leader,
        "{leader} is not the leader"
    );
    st.progress
        .get(&id)
        .cloned()
        .unwrap_or_else(|| panic!("leader {leader} has no progress for {id}"))
}

/// The leader's progress of every peer, one line each in etcd's format
/// (`<id>: <state> match=.. next=.. [paused] [pendingSnap=..] [inactive]
/// [inflight=..[full]]`).
fn status_lines(c: &Cluster, leader: u64) -> Vec<String> {
    c.raw(leader)
        .status()
        .progress
        .iter()
        .map(|(id, pr)| format!("{id}: {pr}"))
        .collect()
}

/// A compact, test-local description of a message, for assertions.
fn desc(m: &Message) -> String {
    let ents = || {
        m.entries
            .iter()
            .map(|e| format!("{}/{}", e.term, e.index))
            .collect::<Vec<_>>()
            .join(",")
    };
    let head = format!("{}->{}", m.from, m.to);
    match m.msg_type {
        MessageType::MsgApp => format!(
            "{head} App t{} prev={}/{} c{} [{}]",
            m.term,
            m.log_term,
            m.index,
            m.commit,
            ents()
        ),
        MessageType::MsgAppResp if m.reject => format!(
            "{head} AppResp t{} reject {} hint={}/{}",
            m.term, m.index, m.reject_hint, m.log_term
        ),
        MessageType::MsgAppResp => format!("{head} AppResp t{} {}", m.term, m.index),
        MessageType::MsgVote => format!("{head} Vote t{} last={}/{}", m.term, m.log_term, m.index),
        MessageType::MsgVoteResp => format!(
            "{head} VoteResp t{} {}",
            m.term,
            if m.reject { "reject" } else { "grant" }
        ),
        MessageType::MsgHeartbeat => format!("{head} HB t{} c{}", m.term, m.commit),
        MessageType::MsgHeartbeatResp => format!("{head} HBResp t{}", m.term),
        MessageType::MsgSnap => {
            let s = m.snapshot.as_deref().cloned().unwrap_or_default();
            format!(
                "{head} Snap t{} at {}/{} voters={:?}",
                m.term, s.metadata.term, s.metadata.index, s.metadata.conf_state.voters
            )
        }
        t => format!("{head} {t:?} t{}", m.term),
    }
}

fn descs(ms: &[Message]) -> Vec<String> {
    ms.iter().map(desc).collect()
}

/// The messages delivered (not dropped) since `mark`, described.
fn delivered_since(c: &Cluster, mark: usize) -> Vec<String> {
    c.wire_since(mark)
        .iter()
        .filter(|w| w.delivered)
        .map(|w| desc(&w.msg))
        .collect()
}

/// `id`'s stored log as `term/index data` strings.
fn log_of(c: &Cluster, id: u64) -> Vec<String> {
    c.stored_entries(id)
        .iter()
        .map(|e| {
            format!(
                "{}/{} {}",
                e.term,
                e.index,
                String::from_utf8_lossy(e.data())
            )
        })
        .collect()
}

/// Builds the expected log from index `first` on, as `(term, data)` pairs.
fn expect_log(first: u64, ents: &[(u64, &str)]) -> Vec<String> {
    ents.iter()
        .enumerate()
        .map(|(i, (t, d))| format!("{t}/{} {d}", first + i as u64))
        .collect()
}

// ----------------------------------------------------------------------
// probe_and_replicate
// ----------------------------------------------------------------------

/// etcd: testdata/probe_and_replicate.txt
///
/// Seven nodes are driven through six leadership changes into the log
/// shapes of figure 7 of the Raft paper (indexes shifted by 10, node 5 with
/// a longer uncommitted tail). Node 1 is then elected and catches every
/// follower up: each one rejects the first append with a hint, the leader
/// jumps straight to the right probe point (one round trip per follower),
/// conflicting suffixes are overwritten, and every follower ends in
/// Replicate at the leader's last index.
#[test]
fn probe_and_replicate() {
    const ALL: [u64; 7] = [1, 2, 3, 4, 5, 6, 7];
    let mut c = Cluster::new_at_index(7, 10, etcd_env);

    // Term 1: node 1 leads and two entries reach everyone.
    campaign(&mut c, 1);
    c.stabilize();
    propose(&mut c, 1, "prop_1_12");
    propose(&mut c, 1, "prop_1_13");
    c.stabilize();

    // Term 2: node 2 is elected by 5, 6 and 7; its entries reach only 7.
    campaign(&mut c, 2);
    c.stabilize_only(&[2]);
    c.stabilize_only(&[6]);
    c.stabilize_only(&[2, 5, 7]);
    assert_eq!(c.role(2), StateRole::Leader);
    propose(&mut c, 2, "prop_2_15");
    propose(&mut c, 2, "prop_2_16");
    c.stabilize_only(&[2, 7]);
    c.drop_to(&ALL);

    // Term 3: node 7 wins and keeps its four new entries to itself.
    campaign(&mut c, 7);
    c.stabilize_only(&[7]);
    c.stabilize_only(&[1, 2, 3, 4, 5, 6]);
    c.stabilize_only(&[7]);
    assert_eq!(c.role(7), StateRole::Leader);
    for d in ["prop_3_18", "prop_3_19", "prop_3_20", "prop_3_21"] {
        propose(&mut c, 7, d);
    }
    c.stabilize_only(&[7]);
    c.drop_to(&ALL);

    // Term 4: node 6 wins among 1..6; its first entry reaches 1..5, the
    // next two stay on 6.
    campaign(&mut c, 6);
    c.stabilize_only(&[1, 2, 3, 4, 5, 6]);
    assert_eq!(c.role(6), StateRole::Leader);
    propose(&mut c, 6, "prop_4_15");
    c.stabilize_only(&[1, 2, 4, 5, 6]);
    propose(&mut c, 6, "prop_4_16");
    propose(&mut c, 6, "prop_4_17");
    c.stabilize_only(&[6]);
    c.drop_to(&ALL);

    // Term 5: node 5 wins among 1, 2, 4, 5.
    campaign(&mut c, 5);
    c.stabilize_only(&[1, 2, 4, 5]);
    assert_eq!(c.role(5), StateRole::Leader);
    propose(&mut c, 5, "prop_5_17");
    c.stabilize_only(&[1, 2, 4, 5]);
    c.drop_to(&ALL);

    // Term 6: node 4 wins among 1, 2, 4, 5; later entries reach fewer nodes.
    campaign(&mut c, 4);
    c.stabilize_only(&[1, 2, 4, 5]);
    assert_eq!(c.role(4), StateRole::Leader);
    propose(&mut c, 4, "prop_6_19");
    c.stabilize_only(&[1, 2, 4]);
    propose(&mut c, 4, "prop_6_20");
    c.stabilize_only(&[1, 4]);
    propose(&mut c, 4, "prop_6_21");
    c.stabilize_only(&[4]);
    c.drop_to(&ALL);

    // Term 7: node 5 wins with 1, 3, 6, 7 and keeps its entries to itself.
    campaign(&mut c, 5);
    c.stabilize_only(&[5]);
    c.stabilize_only(&[1, 3, 6, 7]);
    c.stabilize_only(&[5]);
    assert_eq!(c.role(5), StateRole::Leader);
    assert_eq!(c.term(5), 7);
    for d in ["prop_7_20", "prop_7_21", "prop_7_22"] {
        propose(&mut c, 5, d);
    }
    c.stabilize_only(&[5]);
    c.drop_to(&ALL);

    // The logs now have the shapes of the paper's figure 7.
    let common3 = [(1, ""), (1, "prop_1_12"), (1, "prop_1_13")];
    let with = |tail: &[(u64, &'static str)]| {
        let mut v = common3.to_vec();
        v.extend_from_slice(tail);
        expect_log(11, &v)
    };
    let upto_19: [(u64, &str); 6] = [
        (4, ""),
        (4, "prop_4_15"),
        (5, ""),
        (5, "prop_5_17"),
        (6, ""),
        (6, "prop_6_19"),
    ];
    let mut n1 = upto_19.to_vec();
    n1.push((6, "prop_6_20"));
    assert_eq!(log_of(&c, 1), with(&n1));
    assert_eq!(log_of(&c, 2), with(&upto_19));
    assert_eq!(log_of(&c, 3), with(&[(4, "")]));
    let mut n4 = n1.clone();
    n4.push((6, "prop_6_21"));
    assert_eq!(log_of(&c, 4), with(&n4));
    let mut n5 = upto_19[..5].to_vec();
    n5.extend([
        (7, ""),
        (7, "prop_7_20"),
        (7, "prop_7_21"),
        (7, "prop_7_22"),
    ]);
    assert_eq!(log_of(&c, 5), with(&n5));
    assert_eq!(
        log_of(&c, 6),
        with(&[
            (4, ""),
            (4, "prop_4_15"),
            (4, "prop_4_16"),
            (4, "prop_4_17")
        ])
    );
    assert_eq!(
        log_of(&c, 7),
        with(&[
            (2, ""),
            (2, "prop_2_15"),
            (2, "prop_2_16"),
            (3, ""),
            (3, "prop_3_18"),
            (3, "prop_3_19"),
            (3, "prop_3_20"),
            (3, "prop_3_21"),
        ])
    );
    let commits: Vec<u64> = ALL.iter().map(|&id| c.committed(id)).collect();
    assert_eq!(commits, vec![18, 18, 14, 18, 18, 15, 13]);
    assert!(c.queued().is_empty());

    // Node 1 campaigns at term 8 with last entry 6/20.
    campaign(&mut c, 1);
    c.stabilize_only(&[1]);
    assert_eq!((c.role(1), c.term(1)), (StateRole::Candidate, 8));
    assert_eq!(
        descs(&c.queued()),
        (2..=7)
            .map(|to| format!("1->{to} Vote t8 last=6/20"))
            .collect::<Vec<_>>()
    );

    // 2, 3, 6 and 7 grant; 4 and 5 have longer logs and refuse.
    c.stabilize_only(&[2, 3, 4, 5, 6, 7]);
    for id in 2..=7 {
        assert_eq!(
            (c.role(id), c.term(id)),
            (StateRole::Follower, 8),
            "node {id}"
        );
    }
    assert_eq!(
        descs(&c.queued()),
        vec![
            "2->1 VoteResp t8 grant",
            "3->1 VoteResp t8 grant",
            "4->1 VoteResp t8 reject",
            "5->1 VoteResp t8 reject",
            "6->1 VoteResp t8 grant",
            "7->1 VoteResp t8 grant",
        ]
    );

    // Node 1 wins, appends its empty entry 8/21 and probes everyone
    // optimistically right after its own last entry.
    c.stabilize_only(&[1]);
    assert_eq!((c.role(1), c.term(1)), (StateRole::Leader, 8));
    assert_eq!(
        descs(&c.queued()),
        (2..=7)
            .map(|to| format!("1->{to} App t8 prev=6/20 c18 [8/21]"))
            .collect::<Vec<_>>()
    );
    for id in 2..=7 {
        assert_eq!(progress(&c, 1, id).state, ProgressState::Probe);
    }

    // Node 2 lacks 20: its hint (19, term 6) lets the leader resend from 20.
    let mark = c.wire_mark();
    c.stabilize_only(&[1, 2]);
    assert_eq!(
        delivered_since(&c, mark),
        vec![
            "1->2 App t8 prev=6/20 c18 [8/21]",
            "2->1 AppResp t8 reject 20 hint=19/6",
            "1->2 App t8 prev=6/19 c18 [6/20,8/21]",
            "2->1 AppResp t8 21",
        ]
    );

    // Node 3 stops at 4/14: the leader resends everything after 14 and 3
    // commits up to the leader's commit index 18.
    let mark = c.wire_mark();
    c.stabilize_only(&[1, 3]);
    assert_eq!(
        delivered_since(&c, mark),
        vec![
            "1->3 App t8 prev=6/20 c18 [8/21]",
            "3->1 AppResp t8 reject 20 hint=14/4",
            "1->3 App t8 prev=4/14 c18 [4/15,5/16,5/17,6/18,6/19,6/20,8/21]",
            "3->1 AppResp t8 21",
        ]
    );
    assert_eq!(c.committed(3), 18);
    assert_eq!(c.applied_index(3), 18);

    // Node 4 has 20 (its 6/21 conflicts and is replaced by 8/21), so it
    // accepts at once. With 1, 2, 3 and 4 at 21 the leader commits 21 and
    // tells the followers in Replicate (2, 3, 4); only 4 is delivered now.
    let mark = c.wire_mark();
    c.stabilize_only(&[1, 4]);
    assert_eq!(
        delivered_since(&c, mark),
        vec![
            "1->4 App t8 prev=6/20 c18 [8/21]",
            "4->1 AppResp t8 21",
            "1->4 App t8 prev=8/21 c21 []",
            "4->1 AppResp t8 21",
        ]
    );
    assert_eq!(c.committed(1), 21);
    assert_eq!(c.committed(4), 21);
    assert_eq!(
        descs(&c.queued())
            .into_iter()
            .filter(|d| d.starts_with("1->2") || d.starts_with("1->3"))
            .collect::<Vec<_>>(),
        vec![
            "1->2 App t8 prev=8/21 c21 []",
            "1->3 App t8 prev=8/21 c21 []"
        ]
    );

    // Node 5's tail has term 7 > 6: its hint is 18, the last index whose
    // term is at most 6, and its conflicting 7/19.. suffix is overwritten.
    let mark = c.wire_mark();
    c.stabilize_only(&[1, 5]);
    assert_eq!(
        delivered_since(&c, mark),
        vec![
            "1->5 App t8 prev=6/20 c18 [8/21]",
            "5->1 AppResp t8 reject 20 hint=18/6",
            "1->5 App t8 prev=6/18 c21 [6/19,6/20,8/21]",
            "5->1 AppResp t8 21",
        ]
    );
    assert_eq!(c.committed(5), 21);

    // Node 6 hints 17 (term 4); the leader's last index with term <= 4 at
    // or below 17 is 15, so it resends from 16.
    let mark = c.wire_mark();
    c.stabilize_only(&[1, 6]);
    assert_eq!(
        delivered_since(&c, mark),
        vec![
            "1->6 App t8 prev=6/20 c18 [8/21]",
            "6->1 AppResp t8 reject 20 hint=17/4",
            "1->6 App t8 prev=4/15 c21 [5/16,5/17,6/18,6/19,6/20,8/21]",
            "6->1 AppResp t8 21",
        ]
    );

    // Node 7 hints 20 (term 3); the leader's last entry with term <= 3 is
    // 13, so it resends everything from 14.
    let mark = c.wire_mark();
    c.stabilize_only(&[1, 7]);
    assert_eq!(
        delivered_since(&c, mark),
        vec![
            "1->7 App t8 prev=6/20 c18 [8/21]",
            "7->1 AppResp t8 reject 20 hint=20/3",
            "1->7 App t8 prev=1/13 c21 [4/14,4/15,5/16,5/17,6/18,6/19,6/20,8/21]",
            "7->1 AppResp t8 21",
        ]
    );

    // Every follower was caught up in one probe round trip and streams now.
    let leader_log = log_of(&c, 1);
    assert_eq!(leader_log.len(), 11);
    for id in 2..=7 {
        let pr = progress(&c, 1, id);
        assert_eq!(
            (pr.state, pr.matched, pr.next),
            (ProgressState::Replicate, 21, 22),
            "progress of {id}"
        );
        assert_eq!(log_of(&c, id), leader_log, "log of {id}");
    }
    for id in [5, 6, 7] {
        assert_eq!(c.committed(id), 21, "commit of {id}");
    }
}

// ----------------------------------------------------------------------
// replicate_pause
// ----------------------------------------------------------------------

/// etcd: testdata/replicate_pause.txt
///
/// With an in-flight window of 3, the append stream to a follower pauses
/// once three appends are unacknowledged, even when they were lost. A
/// heartbeat response unpauses it just enough to send one empty append;
/// the follower rejects it (gap), and the leader probes back and catches it
/// up (etcd PR 14633).
#[test]
fn replicate_pause() {
    let mut c = Cluster::new_at_index(3, 10, etcd_env_inflight(3));
    campaign(&mut c, 1);
    c.stabilize();

    // Three proposals, three appends to each follower: both windows fill.
    propose(&mut c, 1, "prop_1_12");
    propose(&mut c, 1, "prop_1_13");
    propose(&mut c, 1, "prop_1_14");
    c.handle_ready(1);
    assert_eq!(
        status_lines(&c, 1),
        vec![
            "1: StateReplicate match=14 next=15",
            "2: StateReplicate match=11 next=15 paused inflight=3[full]",
            "3: StateReplicate match=11 next=15 paused inflight=3[full]",
        ]
    );

    // 1 and 2 commit the entries; 3's window stays full.
    c.stabilize_only(&[1, 2]);
    assert_eq!(
        status_lines(&c, 1),
        vec![
            "1: StateReplicate match=14 next=15",
            "2: StateReplicate match=14 next=15",
            "3: StateReplicate match=11 next=15 paused inflight=3[full]",
        ]
    );
    assert_eq!(c.committed(1), 14);

    // The three appends to 3 are lost.
    let lost = c.drop_to(&[3]);
    assert_eq!(
        descs(&lost),
        vec![
            "1->3 App t1 prev=1/11 c11 [1/12]",
            "1->3 App t1 prev=1/12 c11 [1/13]",
            "1->3 App t1 prev=1/13 c11 [1/14]",
        ]
    );

    // Three more proposals fill 2's window again; nothing goes to 3.
    propose(&mut c, 1, "prop_1_15");
    propose(&mut c, 1, "prop_1_16");
    propose(&mut c, 1, "prop_1_17");
    assert_eq!(
        status_lines(&c, 1),
        vec![
            "1: StateReplicate match=14 next=15",
            "2: StateReplicate match=14 next=18 paused inflight=3[full]",
            "3: StateReplicate match=11 next=15 paused inflight=3[full]",
        ]
    );
    assert!(c.queued_to(3).is_empty());

    c.stabilize_only(&[1, 2]);
    assert_eq!(
        status_lines(&c, 1),
        vec![
            "1: StateReplicate match=17 next=18",
            "2: StateReplicate match=17 next=18",
            "3: StateReplicate match=11 next=15 paused inflight=3[full]",
        ]
    );
    assert!(c.queued_to(3).is_empty());

    // A heartbeat round: 3's heartbeat carries only the commit index it is
    // known to have (11).
    c.tick_only(1);
    c.handle_ready(1);
    assert_eq!(descs(&c.queued()), vec!["1->2 HB t1 c17", "1->3 HB t1 c11"]);
    c.stabilize_only(&[2, 3]);
    assert_eq!(descs(&c.queued()), vec!["2->1 HBResp t1", "3->1 HBResp t1"]);

    // 3's response unpauses its stream for one message: the window is still
    // full, so the leader sends an empty append after 14.
    c.stabilize_only(&[1]);
    assert_eq!(descs(&c.queued()), vec!["1->3 App t1 prev=1/14 c17 []"]);

    // 3 has only 11, so it rejects with hint 11.
    c.stabilize_only(&[3]);
    assert_eq!(
        descs(&c.queued()),
        vec!["3->1 AppResp t1 reject 14 hint=11/1"]
    );

    // The leader probes back from 12 and 3 catches up.
    c.stabilize();
    assert_eq!(
        status_lines(&c, 1),
        vec![
            "1: StateReplicate match=17 next=18",
            "2: StateReplicate match=17 next=18",
            "3: StateReplicate match=17 next=18",
        ]
    );
    assert_eq!(c.committed(3), 17);
    assert_eq!(c.applied(3), c.applied(1));
}

// ----------------------------------------------------------------------
// lagging_commit
// ----------------------------------------------------------------------

/// etcd: testdata/lagging_commit.txt
///
/// A follower that stored two entries but whose acknowledgements were lost
/// misses the commit notifications too. The next heartbeat carries only the
/// commit index the leader knows the follower can use (its match, 11), so it
/// takes the heartbeat response and one more append round trip before the
/// follower learns the entries are committed (etcd issue 138).
#[test]
fn lagging_commit() {
    let mut c = Cluster::new_at_index(3, 10, etcd_env);
    campaign(&mut c, 1);
    c.stabilize();

    propose(&mut c, 1, "data1");
    propose(&mut c, 1, "data2");
    c.handle_ready(1);

    // Both followers receive the two appends.
    let mark = c.wire_mark();
    assert_eq!(c.deliver_to(&[2, 3]), 4);
    assert_eq!(
        delivered_since(&c, mark),
        vec![
            "1->2 App t1 prev=1/11 c11 [1/12]",
            "1->2 App t1 prev=1/12 c11 [1/13]",
            "1->3 App t1 prev=1/11 c11 [1/12]",
            "1->3 App t1 prev=1/12 c11 [1/13]",
        ]
    );

    // 3 stores them, but its acknowledgements are lost.
    c.handle_ready(3);
    let lost = c.drop_to(&[1]);
    assert_eq!(
        descs(&lost),
        vec!["3->1 AppResp t1 12", "3->1 AppResp t1 13"]
    );

    // 1 and 2 commit 12 and 13; each commit step is announced to both
    // followers with an empty append.
    let mark = c.wire_mark();
    c.stabilize_only(&[1, 2]);
    assert_eq!(c.committed(1), 13);
    assert_eq!(c.committed(2), 13);
    assert_eq!(
        delivered_since(&c, mark),
        vec![
            "2->1 AppResp t1 12",
            "2->1 AppResp t1 13",
            "1->2 App t1 prev=1/13 c12 []",
            "1->2 App t1 prev=1/13 c13 []",
            "2->1 AppResp t1 13",
            "2->1 AppResp t1 13",
        ]
    );

    // The commit notifications to 3 are lost too.
    let lost = c.drop_to(&[3]);
    assert_eq!(
        descs(&lost),
        vec![
            "1->3 App t1 prev=1/13 c12 []",
            "1->3 App t1 prev=1/13 c13 []"
        ]
    );
    assert_eq!(
        status_lines(&c, 1),
        vec![
            "1: StateReplicate match=13 next=14",
            "2: StateReplicate match=13 next=14",
            "3: StateReplicate match=11 next=14 inflight=2",
        ]
    );
    assert_eq!(c.committed(3), 11);

    // At the next heartbeat the leader caps 3's commit at its match (11).
    c.tick_only(1);
    c.handle_ready(1);
    assert_eq!(descs(&c.queued()), vec!["1->2 HB t1 c13", "1->3 HB t1 c11"]);

    // 3 learns commit 13 only after the heartbeat response and one append.
    let mark = c.wire_mark();
    c.stabilize_only(&[1, 3]);
    assert_eq!(
        delivered_since(&c, mark),
        vec![
            "1->3 HB t1 c11",
            "3->1 HBResp t1",
            "1->3 App t1 prev=1/13 c13 []",
            "3->1 AppResp t1 13",
        ]
    );
    assert_eq!(c.committed(3), 13);
    assert_eq!(c.applied(3), vec!["data1", "data2"]);
    assert_eq!(progress(&c, 1, 3).matched, 13);
}

// ----------------------------------------------------------------------
// heartbeat_resp_recovers_from_probing
// ----------------------------------------------------------------------

/// etcd: testdata/heartbeat_resp_recovers_from_probing.txt
///
/// A fully caught-up follower reported unreachable drops to Probe. The
/// leader answers its next heartbeat response with an empty append, whose
/// acknowledgement puts it back in Replicate (it must not stay in Probe).
#[test]
fn heartbeat_resp_recovers_from_probing() {
    let mut c = Cluster::new_at_index(3, 10, etcd_env);
    campaign(&mut c, 1);
    c.stabilize();
    assert_eq!(
        status_lines(&c, 1),
        vec![
            "1: StateReplicate match=11 next=12",
            "2: StateReplicate match=11 next=12",
            "3: StateReplicate match=11 next=12",
        ]
    );

    c.node_mut(1).rn.report_unreachable(2);
    assert_eq!(
        status_lines(&c, 1),
        vec![
            "1: StateReplicate match=11 next=12",
            "2: StateProbe match=11 next=12",
            "3: StateReplicate match=11 next=12",
        ]
    );

    // Heartbeat -> response -> empty append to 2 only -> ack -> Replicate.
    c.tick_only(1);
    let mark = c.wire_mark();
    c.stabilize();
    assert_eq!(
        delivered_since(&c, mark),
        vec![
            "1->2 HB t1 c11",
            "1->3 HB t1 c11",
            "2->1 HBResp t1",
            "3->1 HBResp t1",
            "1->2 App t1 prev=1/11 c11 []",
            "2->1 AppResp t1 11",
        ]
    );
    assert_eq!(
        status_lines(&c, 1),
        vec![
            "1: StateReplicate match=11 next=12",
            "2: StateReplicate match=11 next=12",
            "3: StateReplicate match=11 next=12",
        ]
    );
}

// ----------------------------------------------------------------------
// slow_follower_after_compaction
// ----------------------------------------------------------------------

/// etcd: testdata/slow_follower_after_compaction.txt
///
/// A follower whose throttled appends were lost falls behind the leader's
/// compacted log. The leader's next attempt to send it entries finds them
/// compacted and sends a snapshot instead; the follower ends in Replicate
/// at the leader's last index (etcd-io/raft PR 31).
#[test]
fn slow_follower_after_compaction() {
    let mut c = Cluster::new_at_index(3, 10, etcd_env_inflight(2));
    campaign(&mut c, 1);
    c.stabilize();
    propose(&mut c, 1, "prop_1_12");
    propose(&mut c, 1, "prop_1_13");
    propose(&mut c, 1, "prop_1_14");
    c.stabilize();
    assert_eq!(
        status_lines(&c, 1),
        vec![
            "1: StateReplicate match=14 next=15",
            "2: StateReplicate match=14 next=15",
            "3: StateReplicate match=14 next=15",
        ]
    );

    // Four more entries commit between 1 and 2; 3's window fills after two.
    for d in ["prop_1_15", "prop_1_16", "prop_1_17", "prop_1_18"] {
        propose(&mut c, 1, d);
    }
    c.stabilize_only(&[1, 2]);
    assert_eq!(
        status_lines(&c, 1),
        vec![
            "1: StateReplicate match=18 next=19",
            "2: StateReplicate match=18 next=19",
            "3: StateReplicate match=14 next=17 paused inflight=2[full]",
        ]
    );

    // The two appends to 3 are lost.
    let lost = c.drop_to(&[3]);
    assert_eq!(
        descs(&lost),
        vec![
            "1->3 App t1 prev=1/14 c14 [1/15]",
            "1->3 App t1 prev=1/15 c14 [1/16]",
        ]
    );

    // The leader compacts its log so that 18 is its first index (its
    // snapshot is at its applied index, 18).
    c.compact_to(1, 18);
    assert_eq!(log_of(&c, 1), vec!["1/18 prop_1_18"]);

    // A heartbeat round: 3's response lets the leader retry, the entries
    // after 16 are gone, and a snapshot at 18 goes out instead.
    c.tick_only(1);
    let mark = c.wire_mark();
    c.stabilize();
    let to3: Vec<String> = delivered_since(&c, mark)
        .into_iter()
        .filter(|d| d.starts_with("1->3"))
        .collect();
    assert_eq!(
        to3,
        vec!["1->3 HB t1 c14", "1->3 Snap t1 at 1/18 voters=[1, 2, 3]"]
    );
    assert_eq!(
        status_lines(&c, 1),
        vec![
            "1: StateReplicate match=18 next=19",
            "2: StateReplicate match=18 next=19",
            "3: StateReplicate match=18 next=19",
        ]
    );
    assert_eq!(c.committed(3), 18);
    assert_eq!(c.applied(3), c.applied(1));
}

// ----------------------------------------------------------------------
// snapshot_succeed_via_app_resp
// ----------------------------------------------------------------------

/// etcd: testdata/snapshot_succeed_via_app_resp.txt
///
/// A snapshot at the leader's last (and committed) index catches a new,
/// empty follower up completely. The follower's append response to the
/// snapshot must move it straight back to Replicate, not leave it probing
/// until the next entry is committed (etcd PR 10308).
#[test]
fn snapshot_succeed_via_app_resp() {
    // Two nodes of a three-voter configuration; 3 does not exist yet.
    let mut c = Cluster::new_empty(etcd_env);
    c.add_node_with_snapshot(1, &[1, 2, 3], 10);
    c.add_node_with_snapshot(2, &[1, 2, 3], 10);
    campaign(&mut c, 1);
    c.stabilize();
    assert_eq!(c.committed(1), 11);

    // The leader compacts everything it has: its first index becomes 12.
    c.compact(1);
    c.drop_to(&[3]);
    assert!(c.queued().is_empty());
    assert_eq!(
        status_lines(&c, 1),
        vec![
            "1: StateReplicate match=11 next=12",
            "2: StateReplicate match=11 next=12",
            "3: StateProbe match=0 next=11 paused inactive",
        ]
    );

    // 3 appears with no state at all, not even a configuration.
    c.add_node(3);

    // A heartbeat round reaches 3 this time.
    c.tick_only(1);
    c.handle_ready(1);
    assert_eq!(descs(&c.queued()), vec!["1->2 HB t1 c11", "1->3 HB t1 c0"]);
    c.stabilize_only(&[3]);
    assert_eq!(c.obs(3).term, 1);
    assert_eq!(c.obs(3).lead, 1);
    assert_eq!(descs(&c.queued_to(1)), vec!["3->1 HBResp t1"]);

    // The leader needs entry 10 for 3, which is compacted: it sends its
    // snapshot at 11 and waits for the outcome.
    c.stabilize_only(&[1]);
    assert_eq!(
        descs(&c.queued_to(3)),
        vec!["1->3 Snap t1 at 1/11 voters=[1, 2, 3]"]
    );
    assert_eq!(
        status_lines(&c, 1),
        vec![
            "1: StateReplicate match=11 next=12",
            "2: StateReplicate match=11 next=12",
            "3: StateSnapshot match=0 next=12 paused pendingSnap=11",
        ]
    );

    // 3 applies the snapshot and acknowledges index 11.
    c.stabilize_only(&[3]);
    assert_eq!(c.committed(3), 11);
    assert_eq!(c.applied_index(3), 11);
    assert_eq!(descs(&c.queued_to(1)), vec!["3->1 AppResp t1 11"]);

    // That acknowledgement alone brings 3 back to Replicate.
    c.stabilize_only(&[1]);
    assert_eq!(
        status_lines(&c, 1),
        vec![
            "1: StateReplicate match=11 next=12",
            "2: StateReplicate match=11 next=12",
            "3: StateReplicate match=11 next=12",
        ]
    );
    assert!(c.queued_to(3).is_empty());

    // Only 2's pending heartbeat round is left.
    let mark = c.wire_mark();
    c.stabilize();
    assert_eq!(
        delivered_since(&c, mark),
        vec!["1->2 HB t1 c11", "2->1 HBResp t1"]
    );
}

// ----------------------------------------------------------------------
// snapshot_succeed_via_app_resp_behind
// ----------------------------------------------------------------------

/// etcd: testdata/snapshot_succeed_via_app_resp_behind.txt
///
/// A variant of snapshot_succeed_via_app_resp in which the snapshot that
/// lands (index 11, sent by hand) is behind the one the leader is waiting
/// for (PendingSnapshot 12). The follower's acknowledgement of 11 is still
/// enough to resume replication: the leader has every entry after 11.
#[test]
fn snapshot_succeed_via_app_resp_behind() {
    // 1 and 2 start at index 10, 3 at index 5, all with voters 1, 2, 3.
    let mut c = Cluster::new_empty(etcd_env);
    c.add_node_with_snapshot(1, &[1, 2, 3], 10);
    c.add_node_with_snapshot(2, &[1, 2, 3], 10);
    c.add_node_with_snapshot(3, &[1, 2, 3], 5);

    // 1 campaigns; 3 votes first, then 1 and 2 finish the election without
    // 3 hearing from the leader.
    campaign(&mut c, 1);
    c.handle_ready(1);
    c.stabilize_only(&[3]);
    c.stabilize_only(&[1, 2]);
    assert_eq!(
        (c.role(1), c.term(1), c.obs(1).lead),
        (StateRole::Leader, 1, 1)
    );
    assert_eq!(
        (c.role(2), c.term(2), c.obs(2).lead),
        (StateRole::Follower, 1, 1)
    );
    assert_eq!(
        (c.role(3), c.term(3), c.obs(3).lead),
        (StateRole::Follower, 1, 0)
    );
    assert_eq!(
        status_lines(&c, 1),
        vec![
            "1: StateReplicate match=11 next=12",
            "2: StateReplicate match=11 next=12",
            "3: StateProbe match=0 next=11 paused inactive",
        ]
    );
    assert!(c.stored_entries(3).is_empty());
    assert_eq!(c.node(3).storage.rl().snapshot_ref().metadata.index, 5);

    // A snapshot of the leader's state at 11 is sent to 3 by hand; this
    // does not move 3 to StateSnapshot. (etcd's test storage always hands
    // out the latest applied state as the snapshot; refresh ours likewise.)
    c.snapshot_applied(1);
    let snap = c.node(1).storage.rl().snapshot_ref().clone();
    assert_eq!((snap.metadata.index, snap.metadata.term), (11, 1));
    let mut m = Message::new(MessageType::MsgSnap, 1, 3);
    m.term = c.term(1);
    m.snapshot = Some(Box::new(snap));
    c.send(m);
    assert_eq!(progress(&c, 1, 3).state, ProgressState::Probe);

    // One more entry commits on 1 and 2: the leader's last index is 12.
    propose(&mut c, 1, "foo");
    c.stabilize_only(&[1, 2]);
    c.snapshot_applied(1);
    assert_eq!(
        status_lines(&c, 1),
        vec![
            "1: StateReplicate match=12 next=13",
            "2: StateReplicate match=12 next=13",
            "3: StateProbe match=0 next=11 paused inactive",
        ]
    );

    // 3 gets the leader's first append (after 10), which it cannot accept:
    // its log ends at 5.
    let mark = c.wire_mark();
    assert_eq!(
        c.deliver_where(|m| m.to == 3 && m.msg_type == MessageType::MsgApp),
        1
    );
    assert_eq!(
        delivered_since(&c, mark),
        vec!["1->3 App t1 prev=1/10 c10 [1/11]"]
    );
    c.handle_ready(3);
    assert_eq!(
        descs(&c.queued_to(1)),
        vec!["3->1 AppResp t1 reject 10 hint=5/1"]
    );

    // 3 then receives the snapshot at 11 and restores it, but its Ready
    // (and acknowledgement) waits.
    assert_eq!(c.deliver_to(&[3]), 1);
    assert_eq!(c.committed(3), 11);

    // The leader learns 3 needs entries before its first index (11): it
    // sends a snapshot of its current state (12) and waits for that one.
    c.stabilize_only(&[1]);
    assert_eq!(
        descs(&c.queued_to(3)),
        vec!["1->3 Snap t1 at 1/12 voters=[1, 2, 3]"]
    );
    assert_eq!(
        progress(&c, 1, 3).to_string(),
        "StateSnapshot match=0 next=13 paused pendingSnap=12"
    );

    // That second snapshot is dropped.
    let lost = c.drop_to(&[3]);
    assert_eq!(lost.len(), 1);

    // 3 persists the snapshot at 11 and acknowledges 11.
    c.stabilize_only(&[3]);
    assert_eq!(descs(&c.queued_to(1)), vec!["3->1 AppResp t1 11"]);
    assert_eq!(c.applied_index(3), 11);

    // The leader resumes replication from 12 although it waited for 12.
    c.stabilize_only(&[1]);
    assert_eq!(
        descs(&c.queued_to(3)),
        vec!["1->3 App t1 prev=1/11 c12 [1/12]"]
    );
    assert_eq!(
        status_lines(&c, 1),
        vec![
            "1: StateReplicate match=12 next=13",
            "2: StateReplicate match=12 next=13",
            "3: StateReplicate match=11 next=13 inflight=1",
        ]
    );

    // (Not in the script: let it settle; 3 catches up completely.)
    c.stabilize();
    assert_eq!(progress(&c, 1, 3).matched, 12);
    assert_eq!(c.committed(3), 12);
    assert_eq!(c.applied(3), vec!["foo"]);
}

// ----------------------------------------------------------------------
// Asynchronous storage writes
// ----------------------------------------------------------------------
//
// raftlet has no etcd-style storage messages (MsgStorageAppend and
// MsgStorageApply with their responses). A host that writes and applies
// asynchronously takes several Readies before reporting the first one
// persisted, and reports with `advance_append(ready)` (every earlier Ready
// counts as persisted too) and `advance_apply_to(index)`. The host below
// emulates etcd's append and apply threads with those calls.

/// What a Ready handed to the host contained, for assertions.
#[derive(Debug, Default)]
struct ReadyInfo {
    /// `term/index` of the entries to persist.
    entries: Vec<String>,
    /// `term/index` of the committed entries to apply.
    committed: Vec<String>,
    /// (term, vote, commit) when the hard state changed.
    hard_state: Option<(u64, u64, u64)>,
    /// The messages that may be sent at once.
    messages: Vec<String>,
    /// The messages held until the write is durable.
    persisted: Vec<String>,
}

/// A host that persists and applies asynchronously: each node has an
/// append queue (Readies handed out, not yet written), a list of Readies
/// written but not yet reported to the node, and an apply queue.
#[derive(Default)]
struct AsyncHost {
    to_write: BTreeMap<u64, VecDeque<Ready>>,
    to_report: BTreeMap<u64, VecDeque<Ready>>,
    to_apply: BTreeMap<u64, VecDeque<Vec<Entry>>>,
    /// `term/index` of every entry each node handed out to persist.
    handed_entries: BTreeMap<u64, Vec<(u64, u64)>>,
    /// Index of every committed entry each node handed out to apply.
    handed_committed: BTreeMap<u64, Vec<u64>>,
    /// `term/index data` of every entry each node applied, in order.
    applied: BTreeMap<u64, Vec<String>>,
}

fn ent_str(e: &Entry) -> String {
    format!("{}/{}", e.term, e.index)
}

impl AsyncHost {
    /// Takes `id`'s Ready if it has one (etcd's `process-ready` with
    /// asynchronous writes): sends its immediate messages, queues its write
    /// and its committed entries. Returns what it held.
    fn process_ready(&mut self, c: &mut Cluster, id: u64) -> Option<ReadyInfo> {
        if !c.node(id).rn.has_ready() {
            return None;
        }
        let mut rd = c.node_mut(id).rn.ready();
        let info = ReadyInfo {
            entries: rd.entries.iter().map(ent_str).collect(),
            committed: rd.committed_entries.iter().map(ent_str).collect(),
            hard_state: rd.hard_state.map(|h| (h.term, h.vote, h.commit)),
            messages: descs(&rd.messages),
            persisted: descs(&rd.persisted_messages),
        };
        self.handed_entries
            .entry(id)
            .or_default()
            .extend(rd.entries.iter().map(|e| (e.term, e.index)));
        let committed = std::mem::take(&mut rd.committed_entries);
        self.handed_committed
            .entry(id)
            .or_default()
            .extend(committed.iter().map(|e| e.index));
        for m in std::mem::take(&mut rd.messages) {
            c.send(m);
        }
        if !committed.is_empty() {
            self.to_apply.entry(id).or_default().push_back(committed);
        }
        self.to_write.entry(id).or_default().push_back(rd);
        c.observe_node(id);
        Some(info)
    }

    /// Writes `id`'s oldest pending Ready to its storage and sends the
    /// messages that waited for it, without reporting it to the node yet.
    /// Returns the messages sent, or `None` when nothing was pending.
    fn write(&mut self, c: &mut Cluster, id: u64) -> Option<Vec<String>> {
        let mut rd = self.to_write.get_mut(&id)?.pop_front()?;
        {
            let n = c.node(id);
            let mut s = n.storage.wl();
            if let Some(snap) = &rd.snapshot {
                s.apply_snapshot(snap.clone()).expect("apply_snapshot");
            }
            s.append(&rd.entries).expect("append");
            if let Some(hs) = rd.hard_state {
                s.set_hard_state(hs);
            }
        }
        let sent = std::mem::take(&mut rd.persisted_messages);
        let out = descs(&sent);
        for m in sent {
            c.send(m);
        }
        self.to_report.entry(id).or_default().push_back(rd);
        Some(out)
    }

    /// Reports every written Ready of `id` to the node, oldest first.
    fn report(&mut self, c: &mut Cluster, id: u64) {
        while let Some(rd) = self.to_report.get_mut(&id).and_then(|q| q.pop_front()) {
            c.node_mut(id).rn.advance_append(rd);
        }
        c.observe_node(id);
    }

    /// etcd's `process-append-thread`: writes the oldest pending Ready,
    /// sends what waited for it, and reports it at once.
    fn append_thread(&mut self, c: &mut Cluster, id: u64) -> Option<Vec<String>> {
        let out = self.write(c, id)?;
        self.report(c, id);
        Some(out)
    }

    /// Writes and reports every pending Ready of `id`.
    fn flush(&mut self, c: &mut Cluster, id: u64) {
        while self.append_thread(c, id).is_some() {}
    }

    /// etcd's `process-apply-thread`: applies the oldest batch of committed
    /// entries and reports it with `advance_apply_to`. Returns the batch.
    fn apply_thread(&mut self, c: &mut Cluster, id: u64) -> Option<Vec<String>> {
        let batch = self.to_apply.get_mut(&id)?.pop_front()?;
        let last = batch.last().expect("non-empty batch").index;
        for e in &batch {
            assert_eq!(e.entry_type, EntryType::EntryNormal);
            self.applied.entry(id).or_default().push(format!(
                "{}/{} {}",
                e.term,
                e.index,
                String::from_utf8_lossy(e.data())
            ));
        }
        let n = c.node_mut(id);
        n.rn.advance_apply_to(last);
        n.applied_index = last;
        Some(batch.iter().map(ent_str).collect())
    }

    /// etcd's `stabilize` with asynchronous writes, over `ids`: Readies,
    /// then deliveries, then append threads, then apply threads, until
    /// nothing is left to do.
    fn stabilize(&mut self, c: &mut Cluster, ids: &[u64]) {
        for _ in 0..1000 {
            let mut busy = false;
            for &id in ids {
                busy |= self.process_ready(c, id).is_some();
            }
            busy |= c.deliver_to(ids) > 0;
            for &id in ids {
                while self.append_thread(c, id).is_some() {
                    busy = true;
                }
            }
            for &id in ids {
                while self.apply_thread(c, id).is_some() {
                    busy = true;
                }
            }
            if !busy {
                return;
            }
        }
        panic!("async stabilize did not settle");
    }

    /// Checks that `id` handed out each entry to persist and each committed
    /// entry to apply once, in increasing index order, and applied exactly
    /// `expect` (after the initial snapshot).
    fn assert_once_in_order(&self, id: u64, expect: &[&str]) {
        let persisted: Vec<u64> = self.handed_entries[&id].iter().map(|e| e.1).collect();
        assert!(
            persisted.windows(2).all(|w| w[0] < w[1]),
            "node {id} handed out entries to persist twice or out of order: {persisted:?}"
        );
        let committed = &self.handed_committed[&id];
        assert!(
            committed.windows(2).all(|w| w[1] == w[0] + 1),
            "node {id} handed out committed entries twice, out of order or with gaps: {committed:?}"
        );
        assert_eq!(self.applied[&id], expect, "applied by {id}");
    }
}

/// etcd: testdata/async_storage_writes.txt
///
/// Writes and applies lag behind the Ready loop: each node hands out up to
/// two Readies before the first is persisted, and applies committed
/// entries later still. Every entry is handed out for persistence once and
/// every committed entry for application once, in order; the leader's own
/// acknowledgement of an entry counts only once its write is reported, and
/// commit advances exactly as the acknowledgements allow.
///
/// raftlet: etcd models the host's append and apply threads with
/// MsgStorageAppend/MsgStorageApply messages whose responses are stepped
/// back into the node. raftlet has none: the host reports writes with
/// `advance_append` (the node then counts its own acknowledgement at once,
/// where etcd delivers a self-addressed MsgAppResp later) and applies with
/// `advance_apply_to`. The test asserts the same outcomes through those calls.
#[test]
fn async_storage_writes() {
    const ALL: [u64; 3] = [1, 2, 3];
    let mut c = Cluster::new_at_index(3, 10, etcd_env);
    let mut h = AsyncHost::default();

    // Election and the leader's empty entry, with asynchronous writes.
    campaign(&mut c, 1);
    h.stabilize(&mut c, &ALL);
    assert_eq!((c.role(1), c.term(1)), (StateRole::Leader, 1));
    for id in ALL {
        assert_eq!(c.committed(id), 11, "commit of {id}");
        assert_eq!(c.raw(id).basic_status().applied, 11, "applied of {id}");
        assert_eq!(log_of(&c, id), vec!["1/11 "], "log of {id}");
    }
    let self_match = |c: &Cluster| progress(c, 1, 1).matched;

    // prop_1: the leader hands out 12 for writing and sends it.
    propose(&mut c, 1, "prop_1");
    let r = h.process_ready(&mut c, 1).expect("leader Ready");
    assert_eq!(r.entries, vec!["1/12"]);
    assert_eq!(
        r.messages,
        vec![
            "1->2 App t1 prev=1/11 c11 [1/12]",
            "1->3 App t1 prev=1/11 c11 [1/12]"
        ]
    );
    // raftlet: the leader's own acknowledgement is not a message; it waits
    // inside the node until the write is reported.
    assert!(r.persisted.is_empty());
    assert!(h.process_ready(&mut c, 2).is_none());
    assert!(h.process_ready(&mut c, 3).is_none());
    c.deliver_to(&ALL);
    for id in [2, 3] {
        let r = h.process_ready(&mut c, id).expect("follower Ready");
        assert_eq!(r.entries, vec!["1/12"]);
        // The acknowledgement leaves only once 12 is durable.
        assert_eq!(r.persisted, vec![format!("{id}->1 AppResp t1 12")]);
        assert!(r.messages.is_empty());
    }

    // prop_2 is handed out while 12 is still being written everywhere.
    propose(&mut c, 1, "prop_2");
    let r = h.process_ready(&mut c, 1).expect("leader Ready");
    assert_eq!(r.entries, vec!["1/13"]);
    assert!(r.committed.is_empty());
    c.deliver_to(&ALL);
    for id in [2, 3] {
        let r = h.process_ready(&mut c, id).expect("follower Ready");
        assert_eq!(r.entries, vec!["1/13"]);
    }
    assert_eq!(self_match(&c), 11, "leader counted an unwritten entry");
    assert_eq!(c.committed(1), 11);

    // The append threads finish the writes of 12.
    for id in ALL {
        h.append_thread(&mut c, id).expect("append work");
    }
    assert_eq!(self_match(&c), 12, "leader's own write of 12 reported");
    assert_eq!(c.committed(1), 11, "no follower acknowledgement yet");
    c.deliver_to(&ALL);
    assert_eq!(c.committed(1), 12);

    // prop_3: commit 12 goes out with the new entry; 12 is applied later.
    propose(&mut c, 1, "prop_3");
    let r = h.process_ready(&mut c, 1).expect("leader Ready");
    assert_eq!(r.hard_state, Some((1, 1, 12)));
    assert_eq!(r.entries, vec!["1/14"]);
    assert_eq!(r.committed, vec!["1/12"]);
    assert_eq!(
        r.messages,
        vec![
            "1->2 App t1 prev=1/13 c12 []",
            "1->3 App t1 prev=1/13 c12 []",
            "1->2 App t1 prev=1/13 c12 [1/14]",
            "1->3 App t1 prev=1/13 c12 [1/14]",
        ]
    );
    c.deliver_to(&ALL);
    for id in [2, 3] {
        let r = h.process_ready(&mut c, id).expect("follower Ready");
        assert_eq!(r.hard_state, Some((1, 1, 12)));
        assert_eq!(r.entries, vec!["1/14"]);
        assert_eq!(r.committed, vec!["1/12"]);
        assert_eq!(
            r.persisted,
            vec![
                format!("{id}->1 AppResp t1 13"),
                format!("{id}->1 AppResp t1 14")
            ]
        );
    }
    // Nothing is handed out twice while the work is pending.
    for id in ALL {
        assert!(h.process_ready(&mut c, id).is_none(), "node {id}");
    }

    // The writes of 13 finish; 12 is applied.
    for id in ALL {
        h.append_thread(&mut c, id).expect("append work");
    }
    assert_eq!(self_match(&c), 13);
    for id in ALL {
        assert_eq!(
            h.apply_thread(&mut c, id).expect("apply work"),
            vec!["1/12"]
        );
        assert_eq!(c.raw(id).basic_status().applied, 12);
    }
    c.deliver_to(&ALL);
    assert_eq!(c.committed(1), 13);

    // prop_4.
    propose(&mut c, 1, "prop_4");
    let r = h.process_ready(&mut c, 1).expect("leader Ready");
    assert_eq!(r.hard_state, Some((1, 1, 13)));
    assert_eq!(r.entries, vec!["1/15"]);
    assert_eq!(r.committed, vec!["1/13"]);
    c.deliver_to(&ALL);
    for id in [2, 3] {
        let r = h.process_ready(&mut c, id).expect("follower Ready");
        assert_eq!(r.entries, vec!["1/15"]);
        assert_eq!(r.committed, vec!["1/13"]);
    }

    // The writes of 14 finish; 13 is applied; acknowledgements of 14 commit it.
    for id in ALL {
        h.append_thread(&mut c, id).expect("append work");
    }
    assert_eq!(self_match(&c), 14);
    for id in ALL {
        assert_eq!(
            h.apply_thread(&mut c, id).expect("apply work"),
            vec!["1/13"]
        );
    }
    c.deliver_to(&ALL);
    assert_eq!(c.committed(1), 14);
    let r = h.process_ready(&mut c, 1).expect("leader Ready");
    assert_eq!(r.hard_state, Some((1, 1, 14)));
    assert!(r.entries.is_empty());
    assert_eq!(r.committed, vec!["1/14"]);
    c.deliver_to(&ALL);
    for id in [2, 3] {
        let r = h.process_ready(&mut c, id).expect("follower Ready");
        assert_eq!(r.committed, vec!["1/14"]);
        assert!(r.entries.is_empty());
    }

    // The writes of 15 finish; 14 is applied; 15 commits.
    for id in ALL {
        h.append_thread(&mut c, id).expect("append work");
    }
    assert_eq!(self_match(&c), 15);
    for id in ALL {
        assert_eq!(
            h.apply_thread(&mut c, id).expect("apply work"),
            vec!["1/14"]
        );
    }
    c.deliver_to(&ALL);
    assert_eq!(c.committed(1), 15);
    let r = h.process_ready(&mut c, 1).expect("leader Ready");
    assert_eq!(r.committed, vec!["1/15"]);
    c.deliver_to(&ALL);
    for id in [2, 3] {
        let r = h.process_ready(&mut c, id).expect("follower Ready");
        assert_eq!(r.committed, vec!["1/15"]);
    }

    // The followers' remaining writes and every apply thread drain; the
    // late reports change nothing.
    for id in [2, 3] {
        h.append_thread(&mut c, id).expect("append work");
    }
    for id in ALL {
        assert_eq!(
            h.apply_thread(&mut c, id).expect("apply work"),
            vec!["1/15"]
        );
    }
    c.deliver_to(&ALL);
    for id in ALL {
        assert!(h.process_ready(&mut c, id).is_none(), "node {id}");
    }
    h.stabilize(&mut c, &ALL);

    let applied = [
        "1/11 ",
        "1/12 prop_1",
        "1/13 prop_2",
        "1/14 prop_3",
        "1/15 prop_4",
    ];
    for id in ALL {
        assert_eq!(c.committed(id), 15, "commit of {id}");
        assert_eq!(c.raw(id).basic_status().applied, 15, "applied of {id}");
        assert_eq!(
            h.handed_entries[&id],
            vec![(1, 11), (1, 12), (1, 13), (1, 14), (1, 15)],
            "entries handed out by {id}"
        );
        assert_eq!(h.handed_committed[&id], vec![11, 12, 13, 14, 15]);
        h.assert_once_in_order(id, &applied);
        assert_eq!(log_of(&c, id).len(), 5);
    }
    assert_eq!(progress(&c, 1, 2).matched, 15);
    assert_eq!(progress(&c, 1, 3).matched, 15);
}

/// etcd: testdata/async_storage_writes_append_aba_race.txt
///
/// Node 1 is handed entry 12 three times, from leaders of terms 1, 2 and 3,
/// each replacing the previous one before its write was reported. When the
/// writes are finally reported, the stale reports (of 1/12 and 2/12) must
/// neither mark the newest 3/12 as stable nor acknowledge it: node 1
/// acknowledges each version only to the leader that sent it, after that
/// version's write, and ends with 3/12, which the term-3 leader commits.
///
/// raftlet: etcd's MsgStorageAppend/MsgStorageAppendResp round trips are
/// the host's `advance_append` calls here (see async_storage_writes).
#[test]
fn async_storage_writes_append_aba_race() {
    const ALL: [u64; 7] = [1, 2, 3, 4, 5, 6, 7];
    let mut c = Cluster::new_at_index(7, 10, etcd_env);
    let mut h = AsyncHost::default();

    // Step 1: node 2 leads term 1.
    campaign(&mut c, 2);
    h.stabilize(&mut c, &ALL);
    assert_eq!((c.role(2), c.term(2)), (StateRole::Leader, 1));

    // Step 2: 2's entry 1/12 reaches node 1 only.
    propose(&mut c, 2, "init_prop");
    let r = h.process_ready(&mut c, 2).expect("Ready");
    assert_eq!(r.entries, vec!["1/12"]);
    c.deliver_to(&[1]);
    c.drop_to(&[3, 4, 5, 6, 7]);

    // Step 3: node 1 starts writing 1/12; the acknowledgement waits.
    let r = h.process_ready(&mut c, 1).expect("Ready");
    assert_eq!(r.entries, vec!["1/12"]);
    assert_eq!(r.persisted, vec!["1->2 AppResp t1 12"]);
    assert!(c.queued().is_empty());

    // Step 4: node 3 is elected for term 2 by 4, 5 and 6.
    // (raftlet: the vote requests leave once 3's term and vote are durable.)
    campaign(&mut c, 3);
    h.process_ready(&mut c, 3).expect("Ready");
    h.append_thread(&mut c, 3).expect("append work");
    c.deliver_to(&[4, 5, 6]);
    for id in [4, 5, 6] {
        h.process_ready(&mut c, id).expect("Ready");
    }
    for id in [4, 5, 6] {
        h.append_thread(&mut c, id).expect("append work");
    }
    c.deliver_to(&[3]);
    assert_eq!((c.role(3), c.term(3)), (StateRole::Leader, 2));

    // Step 5: 3's entry 2/12 reaches node 1, replacing 1/12 while that
    // write is still in flight.
    let r = h.process_ready(&mut c, 3).expect("Ready");
    assert_eq!(r.entries, vec!["2/12"]);
    c.deliver_to(&[1]);
    c.drop_to(&[2, 4, 5, 6, 7]);
    let r = h.process_ready(&mut c, 1).expect("Ready");
    assert_eq!(r.hard_state, Some((2, 0, 11)));
    assert_eq!(r.entries, vec!["2/12"]);
    assert_eq!(
        r.persisted,
        vec!["1->3 VoteResp t2 reject", "1->3 AppResp t2 12"]
    );
    assert_eq!(c.obs(1).lead, 3);

    // Step 6: node 4 is elected for term 3 by 5, 6 and 7.
    campaign(&mut c, 4);
    h.process_ready(&mut c, 4).expect("Ready");
    h.append_thread(&mut c, 4).expect("append work");
    c.deliver_to(&[5, 6, 7]);
    for id in [5, 6, 7] {
        h.process_ready(&mut c, id).expect("Ready");
    }
    for id in [5, 6, 7] {
        h.append_thread(&mut c, id).expect("append work");
    }
    c.deliver_to(&[4]);
    assert_eq!((c.role(4), c.term(4)), (StateRole::Leader, 3));
    let r = h.process_ready(&mut c, 4).expect("Ready");
    assert_eq!(r.entries, vec!["3/12"]);

    // Step 7: node 1 misses 4's vote request and first append, learns of
    // term 3 from a heartbeat, then gets 3/12 (replacing 2/12, whose write
    // is in flight too).
    c.drop_to(&[1]);
    c.tick_only(4);
    let r = h.process_ready(&mut c, 4).expect("Ready");
    assert_eq!(r.messages.len(), 6);
    c.deliver_to(&[1]);
    let r = h.process_ready(&mut c, 1).expect("Ready");
    assert_eq!(r.hard_state, Some((3, 0, 11)));
    assert!(r.entries.is_empty());
    assert_eq!(r.messages, vec!["1->4 HBResp t3"]);
    assert_eq!(c.obs(1).lead, 4);
    c.deliver_to(&[4]);
    let r = h.process_ready(&mut c, 4).expect("Ready");
    assert_eq!(r.messages, vec!["4->1 App t3 prev=1/11 c11 [3/12]"]);
    c.deliver_to(&[1]);
    let r = h.process_ready(&mut c, 1).expect("Ready");
    assert_eq!(r.entries, vec!["3/12"]);
    assert_eq!(r.persisted, vec!["1->4 AppResp t3 12"]);

    // Step 8: the write of 1/12 completes and is reported. Only the
    // term-1 leader hears about it.
    assert_eq!(log_of(&c, 1), vec!["1/11 "]);
    let sent = h.append_thread(&mut c, 1).expect("append work");
    assert_eq!(sent, vec!["1->2 AppResp t1 12"]);
    assert_eq!(log_of(&c, 1), vec!["1/11 ", "1/12 init_prop"]);

    // Step 9: the write of 2/12 completes; only the term-2 leader hears.
    let sent = h.append_thread(&mut c, 1).expect("append work");
    assert_eq!(sent, vec!["1->3 VoteResp t2 reject", "1->3 AppResp t2 12"]);
    assert_eq!(log_of(&c, 1), vec!["1/11 ", "2/12 "]);

    // The term-3 hard state is written: nothing to acknowledge.
    let sent = h.append_thread(&mut c, 1).expect("append work");
    assert!(sent.is_empty());
    assert_eq!(log_of(&c, 1), vec!["1/11 ", "2/12 "]);
    // Node 1 has not acknowledged 3/12 to anyone: it is not durable yet.
    assert!(c
        .queued()
        .iter()
        .all(|m| !(m.from == 1 && m.msg_type == MessageType::MsgAppResp && m.term == 3)));
    assert!(!c.node(1).rn.has_ready());

    // The write of 3/12 completes; now (and only now) node 4 hears of it.
    let sent = h.append_thread(&mut c, 1).expect("append work");
    assert_eq!(sent, vec!["1->4 AppResp t3 12"]);
    assert_eq!(log_of(&c, 1), vec!["1/11 ", "3/12 "]);

    // (Not in the script: let everything settle.) The stale
    // acknowledgements reach 2 and 3, who are no longer leaders of the
    // current term; 4 commits 3/12 and every node applies 3/12, never
    // init_prop or 2/12.
    h.stabilize(&mut c, &ALL);
    assert_eq!(c.leader(), Some(4));
    for id in ALL {
        assert_eq!(c.committed(id), 12, "commit of {id}");
        assert_eq!(log_of(&c, id), vec!["1/11 ", "3/12 "], "log of {id}");
        assert_eq!(h.applied[&id].last().map(String::as_str), Some("3/12 "));
        assert!(h.applied[&id]
            .iter()
            .all(|e| e != "1/12 init_prop" && e != "2/12 "));
    }
}

/// etcd: testdata/async_storage_writes_append_aba_race.txt (the A-B-A
/// sequence described with it in etcd's rawnode.go newStorageAppendRespMsg)
///
/// Node 1 is handed 1/12, then 2/12, then 1/12 again (the term-1 leader
/// re-elected at term 3 resends its entry). The host writes all three
/// in order and sends their acknowledgements, but reports the first
/// writes to the node late, after the third version was handed out. The
/// late report of the first 1/12 must not mark the new 1/12 as stable:
/// the storage holds 2/12 until the third write lands, so the node would
/// read 2/12 back from storage, and as the next leader replicate that
/// entry to others (a log-matching violation).
#[test]
fn async_storage_writes_append_aba_race_same_entry() {
    const ALL: [u64; 7] = [1, 2, 3, 4, 5, 6, 7];
    let mut c = Cluster::new_at_index(7, 10, etcd_env);
    let mut h = AsyncHost::default();

    // Node 2 leads term 1; its 1/12 reaches node 1 only.
    campaign(&mut c, 2);
    h.stabilize(&mut c, &ALL);
    propose(&mut c, 2, "init_prop");
    h.process_ready(&mut c, 2).expect("Ready");
    c.deliver_to(&[1]);
    c.drop_to(&[3, 4, 5, 6, 7]);
    let a1 = h.process_ready(&mut c, 1).expect("Ready");
    assert_eq!(a1.entries, vec!["1/12"]);

    // Node 3 is elected for term 2 by 4, 5 and 6; node 2 hears the vote
    // request (and refuses: its log is longer).
    // (raftlet: the vote requests leave once 3's term and vote are durable.)
    campaign(&mut c, 3);
    h.process_ready(&mut c, 3).expect("Ready");
    h.flush(&mut c, 3);
    c.deliver_to(&[2, 4, 5, 6]);
    for id in [2, 4, 5, 6] {
        h.process_ready(&mut c, id).expect("Ready");
    }
    for id in [2, 4, 5, 6] {
        h.flush(&mut c, id);
    }
    c.deliver_to(&[3]);
    assert_eq!((c.role(3), c.term(3)), (StateRole::Leader, 2));
    assert_eq!(c.term(2), 2);

    // 3's 2/12 reaches node 1 only, replacing 1/12 while it is written.
    h.process_ready(&mut c, 3).expect("Ready");
    c.deliver_to(&[1]);
    c.drop_where(|_| true);
    let a2 = h.process_ready(&mut c, 1).expect("Ready");
    assert_eq!(a2.entries, vec!["2/12"]);

    // Node 2 is re-elected for term 3 by 4, 5 and 6 (its 1/12 beats their
    // 1/11).
    campaign(&mut c, 2);
    h.process_ready(&mut c, 2).expect("Ready");
    h.flush(&mut c, 2);
    c.deliver_to(&[4, 5, 6]);
    for id in [4, 5, 6] {
        h.process_ready(&mut c, id).expect("Ready");
    }
    for id in [4, 5, 6] {
        h.flush(&mut c, id);
    }
    c.deliver_to(&[2]);
    c.drop_where(|_| true);
    assert_eq!((c.role(2), c.term(2)), (StateRole::Leader, 3));

    // Its first append (after 1/12) reaches node 1, which has 2/12 there
    // and refuses, hinting 11.
    let r = h.process_ready(&mut c, 2).expect("Ready");
    assert!(r
        .messages
        .contains(&"2->1 App t3 prev=1/12 c11 [3/13]".to_string()));
    c.deliver_to(&[1]);
    c.drop_where(|_| true);
    let a3 = h.process_ready(&mut c, 1).expect("Ready");
    assert!(a3.entries.is_empty());
    assert_eq!(a3.persisted, vec!["1->2 AppResp t3 reject 12 hint=11/1"]);

    // The host writes 1/12, 2/12 and the term-3 hard state in order and
    // sends what waited for them, but does not report the writes yet.
    for _ in 0..3 {
        h.write(&mut c, 1).expect("write");
    }
    assert_eq!(log_of(&c, 1), vec!["1/11 ", "2/12 "]);
    c.deliver_where(|m| m.to == 2 && m.term == 3);
    c.drop_where(|_| true);

    // The leader resends from 12: node 1 gets 1/12 again (and 3/13).
    let r = h.process_ready(&mut c, 2).expect("Ready");
    assert_eq!(r.messages, vec!["2->1 App t3 prev=1/11 c11 [1/12,3/13]"]);
    c.deliver_to(&[1]);
    let a4 = h.process_ready(&mut c, 1).expect("Ready");
    assert_eq!(a4.entries, vec!["1/12", "3/13"]);

    // Now the reports of the first three writes arrive. The storage still
    // holds 2/12: the write of the new 1/12 has not landed.
    h.report(&mut c, 1);
    assert_eq!(log_of(&c, 1), vec!["1/11 ", "2/12 "]);

    // Node 1 campaigns for term 4; 4, 5, 6 and 7 (all at 1/11) elect it.
    // (raftlet: its vote requests leave only once this write and every
    // earlier one are durable, so the new 1/12 lands before anyone can
    // elect node 1; etcd sends them at once, while 1/12 is in flight.)
    campaign(&mut c, 1);
    let r = h.process_ready(&mut c, 1).expect("Ready");
    assert!(r.messages.is_empty());
    assert!(r.persisted.iter().all(|m| m.contains("Vote t4 last=3/13")));
    assert!(c
        .queued()
        .iter()
        .all(|m| m.msg_type != MessageType::MsgVote));
    h.flush(&mut c, 1);
    assert_eq!(log_of(&c, 1), vec!["1/11 ", "1/12 init_prop", "3/13 "]);
    c.deliver_to(&[4, 5, 6, 7]);
    c.drop_where(|_| true);
    for id in [4, 5, 6, 7] {
        h.process_ready(&mut c, id).expect("Ready");
        h.flush(&mut c, id);
    }
    c.deliver_to(&[1]);
    assert_eq!((c.role(1), c.term(1)), (StateRole::Leader, 4));

    // Its first appends fail on 4 (log ends at 11); the leader resends
    // from 12, reading 12 from its log: it must be 1/12 init_prop, the
    // entry node 1 actually holds, not the stale 2/12 from storage.
    h.process_ready(&mut c, 1).expect("Ready");
    c.deliver_to(&[4]);
    c.drop_where(|m| m.to != 1);
    h.process_ready(&mut c, 4).expect("Ready");
    h.flush(&mut c, 4);
    c.deliver_to(&[1]);
    let r = h.process_ready(&mut c, 1).expect("Ready");
    let app = c
        .queued_to(4)
        .into_iter()
        .find(|m| m.msg_type == MessageType::MsgApp && m.index == 11)
        .unwrap_or_else(|| panic!("no resend from 12 to 4: {:?}", r.messages));
    assert_eq!(
        (
            app.entries[0].term,
            app.entries[0].index,
            app.entries[0].data()
        ),
        (1, 12, &b"init_prop"[..]),
        "node 1 replicated an entry it does not hold: {}",
        desc(&app)
    );

    // Everything settles (the leader's heartbeats wake the probes that
    // were lost): one log, one state machine history everywhere.
    h.stabilize(&mut c, &ALL);
    for _ in 0..3 {
        c.tick_only(1);
        h.stabilize(&mut c, &ALL);
    }
    assert_eq!(c.leader(), Some(1));
    let leader_log = log_of(&c, 1);
    assert_eq!(&leader_log[..3], ["1/11 ", "1/12 init_prop", "3/13 "]);
    for id in ALL {
        assert_eq!(log_of(&c, id), leader_log, "log of {id}");
        assert_eq!(c.committed(id), 14, "commit of {id}");
        assert!(
            h.applied[&id].contains(&"1/12 init_prop".to_string()),
            "node {id} applied {:?}",
            h.applied[&id]
        );
    }
}
