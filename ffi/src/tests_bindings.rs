//! Tests of the functions bindings use to cross the ABI in few calls:
//! raftlet_ready_encode, raftlet_storage_append_entries,
//! raftlet_storage_create_snapshot_with_conf_state,
//! raftlet_storage_snapshot and raftlet_node_conf_state.

use std::ptr;

use raftlet_core::pb::{ConfState, Decode, Encode, Entry, HardState, Message, Snapshot};

use crate::raftlet_result::*;
use crate::*;

/// Reads one protobuf varint at `*at`.
fn varint(buf: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = buf[*at];
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// Splits an envelope into (field number, payload) pairs; varint fields
/// give their value as little-endian bytes.
fn fields(buf: &[u8]) -> Vec<(u64, Vec<u8>)> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < buf.len() {
        let key = varint(buf, &mut at);
        match key & 7 {
            0 => out.push((key >> 3, varint(buf, &mut at).to_le_bytes().to_vec())),
            2 => {
                let len = varint(buf, &mut at) as usize;
                out.push((key >> 3, buf[at..at + len].to_vec()));
                at += len;
            }
            w => panic!("unexpected wire type {w}"),
        }
    }
    out
}

unsafe fn bytes_of<'a>(b: raftlet_bytes) -> &'a [u8] {
    if b.len == 0 {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(b.ptr, b.len) }
    }
}

struct Node {
    node: *mut raftlet_node,
    storage: *mut raftlet_storage,
}

impl Node {
    fn new(id: u64, voters: &[u64]) -> Node {
        unsafe {
            let mut cfg = ptr::null_mut();
            assert_eq!(raftlet_config_new(id, &mut cfg), RAFTLET_OK);
            let mut storage = ptr::null_mut();
            assert_eq!(raftlet_storage_new_memory(&mut storage), RAFTLET_OK);
            let mut node = ptr::null_mut();
            assert_eq!(raftlet_node_new(cfg, storage, &mut node), RAFTLET_OK);
            raftlet_config_free(cfg);
            assert_eq!(
                raftlet_node_bootstrap(node, voters.as_ptr(), voters.len(), ptr::null(), 0),
                RAFTLET_OK
            );
            Node { node, storage }
        }
    }

    fn ready(&self) -> *mut raftlet_ready {
        let mut rd = ptr::null_mut();
        assert_eq!(
            unsafe { raftlet_node_ready(self.node, &mut rd) },
            RAFTLET_OK
        );
        rd
    }

    fn handle(&self, rd: *mut raftlet_ready) {
        unsafe {
            assert_eq!(raftlet_storage_append_ready(self.storage, rd), RAFTLET_OK);
            assert_eq!(raftlet_node_advance(self.node, rd), RAFTLET_OK);
            raftlet_ready_free(rd);
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        unsafe {
            raftlet_node_free(self.node);
            raftlet_storage_free(self.storage);
        }
    }
}

fn envelope(rd: *const raftlet_ready) -> Vec<(u64, Vec<u8>)> {
    let mut b = raftlet_bytes {
        ptr: ptr::null(),
        len: 0,
    };
    assert_eq!(unsafe { raftlet_ready_encode(rd, &mut b) }, RAFTLET_OK);
    fields(unsafe { bytes_of(b) })
}

#[test]
fn ready_encode_holds_every_part_of_the_ready() {
    let n = Node::new(1, &[1]);
    let rd = n.ready();
    let f = envelope(rd);
    // Bootstrap: one entry to persist and apply, and a hard state.
    let ents: Vec<Entry> = f
        .iter()
        .filter(|(k, _)| *k == 3)
        .map(|(_, v)| Entry::decode(v).unwrap())
        .collect();
    assert_eq!(ents.len(), 1);
    assert_eq!((ents[0].index, ents[0].term), (1, 1));
    let committed: Vec<Entry> = f
        .iter()
        .filter(|(k, _)| *k == 4)
        .map(|(_, v)| Entry::decode(v).unwrap())
        .collect();
    assert_eq!(committed, ents);
    let hs: Vec<HardState> = f
        .iter()
        .filter(|(k, _)| *k == 5)
        .map(|(_, v)| HardState::decode(v).unwrap())
        .collect();
    assert_eq!(
        hs,
        vec![HardState {
            term: 1,
            vote: 0,
            commit: 1
        }]
    );
    assert!(f.iter().any(|(k, v)| *k == 9 && v[0] == 1), "must_sync");
    // A second call gives the same bytes.
    assert_eq!(envelope(rd), f);
    n.handle(rd);

    // Campaign: a single voter becomes leader at once.
    assert_eq!(unsafe { raftlet_node_campaign(n.node) }, RAFTLET_OK);
    // Pre-candidate, then (once its own votes are persisted) leader.
    let mut soft_states = Vec::new();
    while unsafe {
        let mut has = false;
        raftlet_node_has_ready(n.node, &mut has);
        has
    } {
        let rd = n.ready();
        let f = envelope(rd);
        soft_states.extend(f.into_iter().filter(|(k, _)| *k == 6).map(|(_, v)| v));
        n.handle(rd);
    }
    assert_eq!(
        soft_states.first(),
        Some(&vec![0x08, 0x00, 0x10, 0x03]),
        "pre-candidate"
    );
    assert_eq!(
        soft_states.last(),
        Some(&vec![0x08, 0x01, 0x10, 0x02]),
        "lead 1, leader"
    );

    // A read state.
    assert_eq!(
        unsafe { raftlet_node_read_index(n.node, b"ctx".as_ptr(), 3) },
        RAFTLET_OK
    );
    let rd = n.ready();
    let f = envelope(rd);
    let rs: Vec<Vec<(u64, Vec<u8>)>> = f
        .iter()
        .filter(|(k, _)| *k == 8)
        .map(|(_, v)| fields(v))
        .collect();
    assert_eq!(rs.len(), 1);
    assert_eq!(rs[0][1], (2, b"ctx".to_vec()));
    n.handle(rd);
}

#[test]
fn ready_encode_keeps_message_order_and_bytes() {
    let n = Node::new(1, &[1, 2, 3]);
    let rd = n.ready();
    n.handle(rd);
    assert_eq!(unsafe { raftlet_node_campaign(n.node) }, RAFTLET_OK);
    let rd = n.ready();
    let f = envelope(rd);
    let mut count = 0;
    assert_eq!(
        unsafe { raftlet_ready_message_count(rd, &mut count) },
        RAFTLET_OK
    );
    assert_eq!(count, 2, "pre-votes to 2 and 3");
    let msgs: Vec<&Vec<u8>> = f.iter().filter(|(k, _)| *k == 1).map(|(_, v)| v).collect();
    assert_eq!(msgs.len(), 2);
    for (i, m) in msgs.iter().enumerate() {
        let mut view = raftlet_message_view {
            to: 0,
            from: 0,
            msg_type: 0,
            data: raftlet_bytes {
                ptr: ptr::null(),
                len: 0,
            },
        };
        assert_eq!(
            unsafe { raftlet_ready_message(rd, i, &mut view) },
            RAFTLET_OK
        );
        assert_eq!(unsafe { bytes_of(view.data) }, m.as_slice());
        assert_eq!(Message::decode(m).unwrap().to, view.to);
    }
    // Stale after advance; NULL arguments.
    unsafe {
        assert_eq!(raftlet_storage_append_ready(n.storage, rd), RAFTLET_OK);
        assert_eq!(raftlet_node_advance(n.node, rd), RAFTLET_OK);
        let mut b = raftlet_bytes {
            ptr: ptr::null(),
            len: 0,
        };
        assert_eq!(raftlet_ready_encode(rd, &mut b), RAFTLET_ERR_READY_STALE);
        assert_eq!(
            raftlet_ready_encode(rd, ptr::null_mut()),
            RAFTLET_ERR_READY_STALE
        );
        assert_eq!(
            raftlet_ready_encode(ptr::null(), &mut b),
            RAFTLET_ERR_NULL_ARG
        );
        raftlet_ready_free(rd);
    }
}

fn entries_message(ents: Vec<Entry>) -> Vec<u8> {
    Message {
        entries: ents,
        ..Message::default()
    }
    .encode_to_vec()
}

fn bounds(s: *const raftlet_storage) -> (u64, u64) {
    let (mut f, mut l) = (0, 0);
    assert_eq!(
        unsafe { raftlet_storage_bounds(s, &mut f, &mut l) },
        RAFTLET_OK
    );
    (f, l)
}

#[test]
fn storage_append_entries_is_all_or_nothing() {
    unsafe {
        let mut s = ptr::null_mut();
        assert_eq!(raftlet_storage_new_memory(&mut s), RAFTLET_OK);
        let buf = entries_message((1..=3).map(|i| Entry::new(1, i, vec![i as u8])).collect());
        assert_eq!(
            raftlet_storage_append_entries(s, buf.as_ptr(), buf.len()),
            RAFTLET_OK
        );
        assert_eq!(bounds(s), (1, 3));
        // A gap: nothing appended.
        let gap = entries_message(vec![Entry::new(1, 5, vec![5])]);
        assert_eq!(
            raftlet_storage_append_entries(s, gap.as_ptr(), gap.len()),
            RAFTLET_ERR_UNAVAILABLE
        );
        assert_eq!(bounds(s), (1, 3));
        // Entries that are not consecutive: nothing appended, no panic on
        // an index that cannot be followed.
        for bad in [
            vec![Entry::new(1, 4, vec![]), Entry::new(1, 6, vec![])],
            vec![Entry::new(1, u64::MAX, vec![]), Entry::new(1, 0, vec![])],
        ] {
            let buf = entries_message(bad);
            assert_eq!(
                raftlet_storage_append_entries(s, buf.as_ptr(), buf.len()),
                RAFTLET_ERR_UNAVAILABLE
            );
            assert_eq!(bounds(s), (1, 3));
        }
        // A conflicting tail is replaced.
        let tail = entries_message(vec![Entry::new(2, 3, vec![9]), Entry::new(2, 4, vec![9])]);
        assert_eq!(
            raftlet_storage_append_entries(s, tail.as_ptr(), tail.len()),
            RAFTLET_OK
        );
        assert_eq!(bounds(s), (1, 4));
        // Empty is fine; malformed is a decode error; NULL checks.
        assert_eq!(
            raftlet_storage_append_entries(s, ptr::null(), 0),
            RAFTLET_OK
        );
        assert_eq!(
            raftlet_storage_append_entries(s, [0x3a, 0x05].as_ptr(), 2),
            RAFTLET_ERR_DECODE
        );
        assert_eq!(
            raftlet_storage_append_entries(ptr::null_mut(), buf.as_ptr(), buf.len()),
            RAFTLET_ERR_NULL_ARG
        );
        assert_eq!(
            raftlet_storage_append_entries(s, ptr::null(), 3),
            RAFTLET_ERR_NULL_ARG
        );
        raftlet_storage_free(s);
    }
}

fn held_snapshot(s: *const raftlet_storage) -> Snapshot {
    unsafe {
        let mut len = 0;
        assert_eq!(
            raftlet_storage_snapshot(s, ptr::null_mut(), 0, &mut len),
            RAFTLET_OK
        );
        let mut buf = vec![0u8; len];
        if len > 0 {
            let mut small = 0;
            assert_eq!(
                raftlet_storage_snapshot(s, buf.as_mut_ptr(), len - 1, &mut small),
                RAFTLET_ERR_INVALID_ARG
            );
            assert_eq!(small, len);
        }
        assert_eq!(
            raftlet_storage_snapshot(s, buf.as_mut_ptr(), buf.len(), &mut len),
            RAFTLET_OK
        );
        Snapshot::decode(&buf[..len]).unwrap()
    }
}

#[test]
fn storage_create_snapshot_with_conf_state_and_read_it_back() {
    unsafe {
        let mut s = ptr::null_mut();
        assert_eq!(raftlet_storage_new_memory(&mut s), RAFTLET_OK);
        assert_eq!(held_snapshot(s), Snapshot::default());
        let buf = entries_message((1..=4).map(|i| Entry::new(i, i, vec![i as u8])).collect());
        assert_eq!(
            raftlet_storage_append_entries(s, buf.as_ptr(), buf.len()),
            RAFTLET_OK
        );
        // A snapshot is taken only of what the storage holds committed.
        assert_eq!(raftlet_storage_set_hard_state(s, 4, 0, 4), RAFTLET_OK);
        let cs = ConfState::from_voters(vec![1, 2, 3]).encode_to_vec();
        assert_eq!(
            raftlet_storage_create_snapshot_with_conf_state(
                s,
                2,
                cs.as_ptr(),
                cs.len(),
                b"state".as_ptr(),
                5
            ),
            RAFTLET_OK
        );
        let snap = held_snapshot(s);
        assert_eq!((snap.metadata.index, snap.metadata.term), (2, 2));
        assert_eq!(snap.metadata.conf_state.voters, vec![1, 2, 3]);
        assert_eq!(snap.data(), b"state");
        // NULL keeps the configuration.
        assert_eq!(
            raftlet_storage_create_snapshot_with_conf_state(s, 3, ptr::null(), 0, ptr::null(), 0),
            RAFTLET_OK
        );
        let snap = held_snapshot(s);
        assert_eq!(snap.metadata.index, 3);
        assert_eq!(snap.metadata.conf_state.voters, vec![1, 2, 3]);
        // Errors leave it alone.
        assert_eq!(
            raftlet_storage_create_snapshot_with_conf_state(s, 3, ptr::null(), 0, ptr::null(), 0),
            RAFTLET_ERR_SNAPSHOT_OUT_OF_DATE
        );
        assert_eq!(
            raftlet_storage_create_snapshot_with_conf_state(s, 9, ptr::null(), 0, ptr::null(), 0),
            RAFTLET_ERR_UNAVAILABLE
        );
        assert_eq!(
            raftlet_storage_create_snapshot_with_conf_state(
                s,
                4,
                [0xff].as_ptr(),
                1,
                ptr::null(),
                0
            ),
            RAFTLET_ERR_DECODE
        );
        assert_eq!(held_snapshot(s).metadata.index, 3);
        assert_eq!(
            raftlet_storage_snapshot(ptr::null(), ptr::null_mut(), 0, &mut 0),
            RAFTLET_ERR_NULL_ARG
        );
        assert_eq!(
            raftlet_storage_snapshot(s, ptr::null_mut(), 4, &mut 0),
            RAFTLET_ERR_NULL_ARG
        );
        raftlet_storage_free(s);
    }
}

fn conf_state_of(n: &Node) -> ConfState {
    unsafe {
        let mut len = 0;
        assert_eq!(
            raftlet_node_conf_state(n.node, ptr::null_mut(), 0, &mut len),
            RAFTLET_OK
        );
        let mut buf = vec![0u8; len];
        let mut small = 0;
        assert_eq!(
            raftlet_node_conf_state(n.node, buf.as_mut_ptr(), len - 1, &mut small),
            RAFTLET_ERR_INVALID_ARG
        );
        assert_eq!(small, len);
        assert_eq!(
            raftlet_node_conf_state(n.node, buf.as_mut_ptr(), len, &mut len),
            RAFTLET_OK
        );
        ConfState::decode(&buf).unwrap()
    }
}

#[test]
fn node_conf_state_matches_apply_conf_change() {
    let n = Node::new(1, &[1, 2, 3]);
    assert_eq!(conf_state_of(&n), ConfState::from_voters(vec![1, 2, 3]));
    unsafe {
        // Add learner 4 and compare with what apply_conf_change returns.
        let mut cc = [0u8; 32];
        let mut cc_len = 0;
        assert_eq!(
            raftlet_conf_change_encode(
                3,
                4,
                ptr::null(),
                0,
                cc.as_mut_ptr(),
                cc.len(),
                &mut cc_len
            ),
            RAFTLET_OK
        );
        let mut out = [0u8; 64];
        let mut out_len = 0;
        assert_eq!(
            raftlet_node_apply_conf_change(
                n.node,
                cc.as_ptr(),
                cc_len,
                false,
                out.as_mut_ptr(),
                out.len(),
                &mut out_len
            ),
            RAFTLET_OK
        );
        let applied = ConfState::decode(&out[..out_len]).unwrap();
        assert_eq!(applied.learners, vec![4]);
        assert_eq!(conf_state_of(&n), applied);
        assert_eq!(
            raftlet_node_conf_state(ptr::null(), ptr::null_mut(), 0, &mut out_len),
            RAFTLET_ERR_NULL_ARG
        );
        assert_eq!(
            raftlet_node_conf_state(n.node, ptr::null_mut(), 0, ptr::null_mut()),
            RAFTLET_ERR_NULL_ARG
        );
        assert_eq!(
            raftlet_node_conf_state(n.node, ptr::null_mut(), 8, &mut out_len),
            RAFTLET_ERR_NULL_ARG
        );
    }
}

/// A follower hands out an entry of an older term after moving to a new
/// term, and the new term's leader overwrites it before the first Ready is
/// advanced: the host persisted both Readies in order, so storage holds the
/// replacement. Advancing the first Ready must not be refused as "not
/// persisted" (the entry it wrote was replaced, not lost).
#[test]
fn advancing_a_ready_whose_entry_a_later_ready_replaced_is_accepted() {
    let n = Node::new(2, &[1, 2, 3]);
    unsafe {
        while {
            let mut has = false;
            assert_eq!(raftlet_node_has_ready(n.node, &mut has), RAFTLET_OK);
            has
        } {
            n.handle(n.ready());
        }
    }
    let step = |m: Message| {
        let b = m.encode_to_vec();
        assert_eq!(
            unsafe { raftlet_node_step(n.node, b.as_ptr(), b.len()) },
            RAFTLET_OK
        );
    };
    let (_, last) = bounds(n.storage);
    // The bootstrap's conf-change entries are of term 1.
    let last_term = 1;
    let entry = |index: u64, term: u64| Entry {
        index,
        term,
        data: Some(vec![index as u8].into()),
        ..Entry::default()
    };
    let append = |from: u64, term: u64, index: u64, log_term: u64, ents: Vec<Entry>| Message {
        msg_type: raftlet_core::pb::MessageType::MsgApp,
        from,
        to: 2,
        term,
        index,
        log_term,
        entries: ents,
        ..Message::default()
    };
    // Term 2, leader 1: entries last+1 and last+2, persisted and advanced.
    step(append(
        1,
        2,
        last,
        last_term,
        vec![entry(last + 1, 2), entry(last + 2, 2)],
    ));
    n.handle(n.ready());
    // Entry last+3 of term 2 arrives; then node 3's term 3 reaches the
    // node before its Ready is taken: it is handed out in term 3.
    step(append(1, 2, last + 2, 2, vec![entry(last + 3, 2)]));
    step(Message {
        msg_type: raftlet_core::pb::MessageType::MsgHeartbeat,
        from: 3,
        to: 2,
        term: 3,
        ..Message::default()
    });
    let r1 = n.ready();
    // Leader 3 overwrites it with its own entry at last+3.
    step(append(3, 3, last + 2, 2, vec![entry(last + 3, 3)]));
    let r2 = n.ready();
    unsafe {
        assert_eq!(raftlet_storage_append_ready(n.storage, r1), RAFTLET_OK);
        assert_eq!(raftlet_storage_append_ready(n.storage, r2), RAFTLET_OK);
        assert_eq!(raftlet_node_advance(n.node, r1), RAFTLET_OK);
        assert_eq!(raftlet_node_advance(n.node, r2), RAFTLET_OK);
        raftlet_ready_free(r1);
        raftlet_ready_free(r2);
    }
}

/// raftlet_node_ready_persisted on `n`: the ready (NULL when none was
/// waiting), its flat view, the write's outcome and has_ready after it.
fn take_persisted(
    n: &Node,
) -> (
    *mut raftlet_ready,
    Option<raftlet_ready_flat>,
    raftlet_result,
    bool,
) {
    let mut rd = ptr::null_mut();
    let mut flat = ptr::null();
    let mut persist = RAFTLET_PANIC;
    let mut has = true;
    assert_eq!(
        unsafe {
            raftlet_node_ready_persisted(
                n.node,
                n.storage,
                true,
                &mut rd,
                &mut flat,
                &mut persist,
                &mut has,
            )
        },
        RAFTLET_OK
    );
    assert_eq!(rd.is_null(), flat.is_null());
    (
        rd,
        (!flat.is_null()).then(|| unsafe { *flat }),
        persist,
        has,
    )
}

fn committed_of(f: &raftlet_ready_flat) -> Vec<(u64, Vec<u8>)> {
    if f.committed_entry_count == 0 {
        return Vec::new();
    }
    unsafe { std::slice::from_raw_parts(f.committed_entries, f.committed_entry_count) }
        .iter()
        .map(|e| (e.index, unsafe { bytes_of(e.data) }.to_vec()))
        .collect()
}

fn status(n: &Node) -> raftlet_basic_status {
    let mut st = raftlet_basic_status {
        id: 0,
        term: 0,
        vote: 0,
        commit: 0,
        lead: 0,
        role: 0,
        applied: 0,
        lead_transferee: 0,
    };
    assert_eq!(
        unsafe { raftlet_node_basic_status(n.node, &mut st) },
        RAFTLET_OK
    );
    st
}

fn stored_commit(n: &Node) -> u64 {
    use raftlet_core::Storage;
    unsafe { &*n.storage }
        .inner
        .initial_state()
        .expect("the storage reads")
        .hard_state
        .commit
}

/// Runs `n`'s Ready loop through raftlet_node_ready_persisted until idle.
fn drain_persisted(n: &Node) {
    loop {
        let (rd, _, persist, _) = take_persisted(n);
        if rd.is_null() {
            return;
        }
        assert_eq!(persist, RAFTLET_OK);
        unsafe {
            assert_eq!(raftlet_node_advance(n.node, rd), RAFTLET_OK);
            raftlet_ready_free(rd);
        }
    }
}

/// A single voter's proposal takes one ready through
/// raftlet_node_ready_persisted: the write is acknowledged in the call, so
/// the ready that carries the entry also hands it out committed, with the
/// new commit index in the storage; advancing it reports it applied and
/// leaves nothing to do.
#[test]
fn ready_persisted_hands_out_what_its_write_committed() {
    let n = Node::new(1, &[1]);
    drain_persisted(&n);
    assert_eq!(unsafe { raftlet_node_campaign(n.node) }, RAFTLET_OK);
    drain_persisted(&n);
    assert_eq!(status(&n).role, 2, "the single voter leads");
    for i in 0..3u8 {
        let data = [b'p', i];
        assert_eq!(
            unsafe { raftlet_node_propose(n.node, data.as_ptr(), data.len()) },
            RAFTLET_OK
        );
        let (rd, flat, persist, has) = take_persisted(&n);
        let f = flat.expect("the proposal leaves a ready");
        assert_eq!(persist, RAFTLET_OK);
        assert_eq!(f.entry_count, 1, "the entry to write");
        let committed = committed_of(&f);
        assert_eq!(committed.last().map(|c| &c.1[..]), Some(&data[..]));
        let index = committed.last().unwrap().0;
        assert_eq!(status(&n).commit, index);
        assert_eq!(stored_commit(&n), index, "the new commit index is written");
        assert!(!has, "nothing is left for a second ready");
        unsafe {
            assert_eq!(raftlet_node_advance(n.node, rd), RAFTLET_OK);
            raftlet_ready_free(rd);
        }
        assert_eq!(status(&n).applied, index);
        assert!(take_persisted(&n).0.is_null());
    }
}

/// A ready taken while an earlier one waits to be advanced is written but
/// not acknowledged: acknowledging it would cover the earlier one, whose
/// own advance would then be refused. Both advance in order as usual.
#[test]
fn ready_persisted_leaves_a_ready_behind_an_unadvanced_one_unacknowledged() {
    let n = Node::new(1, &[1]);
    drain_persisted(&n);
    assert_eq!(unsafe { raftlet_node_campaign(n.node) }, RAFTLET_OK);
    drain_persisted(&n);
    let data = *b"a";
    unsafe {
        assert_eq!(raftlet_node_propose(n.node, data.as_ptr(), 1), RAFTLET_OK);
    }
    let r1 = n.ready();
    unsafe {
        assert_eq!(raftlet_storage_append_ready(n.storage, r1), RAFTLET_OK);
        assert_eq!(raftlet_node_propose(n.node, b"b".as_ptr(), 1), RAFTLET_OK);
    }
    let (r2, flat, persist, _) = take_persisted(&n);
    let f = flat.expect("the second proposal leaves a ready");
    assert_eq!((persist, f.entry_count), (RAFTLET_OK, 1));
    assert!(
        committed_of(&f).is_empty(),
        "nothing acknowledged, nothing committed"
    );
    unsafe {
        assert_eq!(raftlet_node_advance(n.node, r1), RAFTLET_OK);
        assert_eq!(raftlet_node_advance(n.node, r2), RAFTLET_OK);
        raftlet_ready_free(r1);
        raftlet_ready_free(r2);
    }
    // The acknowledgement by the advances committed both entries.
    let (r3, flat, _, _) = take_persisted(&n);
    let got: Vec<Vec<u8>> = committed_of(&flat.expect("the commit ready"))
        .into_iter()
        .map(|c| c.1)
        .collect();
    assert_eq!(got, vec![b"a".to_vec(), b"b".to_vec()]);
    unsafe {
        assert_eq!(raftlet_node_advance(n.node, r3), RAFTLET_OK);
        raftlet_ready_free(r3);
    }
}

/// A follower's append: the response waits for the write, which the call
/// made and acknowledged, so every message of the ready may leave at once
/// (`persisted_message_start` is the count), and the entries the leader's
/// commit covers are handed out in the same ready.
#[test]
fn ready_persisted_lets_a_followers_append_response_leave_at_once() {
    let n = Node::new(2, &[1, 2, 3]);
    drain_persisted(&n);
    let (_, last) = bounds(n.storage);
    let ents: Vec<Entry> = (1..=2)
        .map(|k| Entry {
            index: last + k,
            term: 2,
            data: Some(vec![k as u8].into()),
            ..Entry::default()
        })
        .collect();
    let app = Message {
        msg_type: raftlet_core::pb::MessageType::MsgApp,
        from: 1,
        to: 2,
        term: 2,
        index: last,
        log_term: 1,
        commit: last + 2,
        entries: ents,
        ..Message::default()
    }
    .encode_to_vec();
    unsafe {
        assert_eq!(
            raftlet_node_step(n.node, app.as_ptr(), app.len()),
            RAFTLET_OK
        );
    }
    let (rd, flat, persist, _) = take_persisted(&n);
    let f = flat.expect("the append leaves a ready");
    assert_eq!(persist, RAFTLET_OK);
    assert_eq!(f.entry_count, 2);
    assert!(f.message_count >= 1);
    assert_eq!(f.persisted_message_start, f.message_count, "nothing waits");
    let resp = messages_of(&f)
        .into_iter()
        .find(|m| m.msg_type == raftlet_core::pb::MessageType::MsgAppResp)
        .expect("the append response");
    assert_eq!((resp.to, resp.index, resp.reject), (1, last + 2, false));
    let committed: Vec<u64> = committed_of(&f).into_iter().map(|c| c.0).collect();
    assert_eq!(committed.last(), Some(&(last + 2)));
    assert_eq!(stored_commit(&n), last + 2);
    unsafe {
        assert_eq!(raftlet_node_advance(n.node, rd), RAFTLET_OK);
        raftlet_ready_free(rd);
    }
    assert_eq!(status(&n).applied, last + 2);
}

/// A NULL storage is refused: the call exists to write the ready.
#[test]
fn ready_persisted_refuses_a_null_storage() {
    let n = Node::new(1, &[1]);
    let (mut rd, mut flat, mut persist, mut has) =
        (ptr::null_mut(), ptr::null(), RAFTLET_OK, false);
    assert_eq!(
        unsafe {
            raftlet_node_ready_persisted(
                n.node,
                ptr::null_mut(),
                false,
                &mut rd,
                &mut flat,
                &mut persist,
                &mut has,
            )
        },
        RAFTLET_ERR_NULL_ARG
    );
    assert!(rd.is_null());
}

/// Every message of a flat view, decoded.
fn messages_of(f: &raftlet_ready_flat) -> Vec<Message> {
    if f.message_count == 0 {
        return Vec::new();
    }
    unsafe { std::slice::from_raw_parts(f.messages, f.message_count) }
        .iter()
        .map(|m| Message::decode(unsafe { bytes_of(m.data) }).expect("decodes"))
        .collect()
}

/// Readies of every shape, taken one after the other and freed in turn,
/// every other one on another thread: each ready is made in a recycled
/// box (its arrays emptied in place; an encoding buffer of 4 KiB or more
/// handed to the node instead) and carries only its own messages and
/// entries. Under Miri (`cargo +nightly miri test -p raftlet-ffi`) this
/// also checks the recycling's unsafe code: what is initialised when, what
/// is dropped once, and that nothing leaks.
#[test]
fn recycled_ready_boxes_carry_nothing_over() {
    use raftlet_core::pb::MessageType;
    let n = Node::new(1, &[1, 2, 3]);
    drain_persisted(&n);
    assert_eq!(unsafe { raftlet_node_campaign(n.node) }, RAFTLET_OK);
    // Node 2 grants every (pre-)vote: node 1 wins.
    for _ in 0..8 {
        if status(&n).role == 2 {
            break;
        }
        let (rd, flat, persist, _) = take_persisted(&n);
        let Some(f) = flat else { continue };
        assert_eq!(persist, RAFTLET_OK);
        let grants: Vec<Vec<u8>> = messages_of(&f)
            .into_iter()
            .filter(|m| m.to == 2)
            .filter_map(|m| {
                let t = match m.msg_type {
                    MessageType::MsgPreVote => MessageType::MsgPreVoteResp,
                    MessageType::MsgVote => MessageType::MsgVoteResp,
                    _ => return None,
                };
                Some(
                    Message {
                        msg_type: t,
                        from: 2,
                        to: 1,
                        term: m.term,
                        ..Message::default()
                    }
                    .encode_to_vec(),
                )
            })
            .collect();
        unsafe {
            assert_eq!(raftlet_node_advance(n.node, rd), RAFTLET_OK);
            raftlet_ready_free(rd);
        }
        for g in grants {
            assert_eq!(
                unsafe { raftlet_node_step(n.node, g.as_ptr(), g.len()) },
                RAFTLET_OK
            );
        }
    }
    assert_eq!(status(&n).role, 2, "node 1 leads");
    // Acknowledges the leader's appends as both followers would.
    let ack = |msgs: &[Message]| {
        for m in msgs.iter().filter(|m| m.msg_type == MessageType::MsgApp) {
            let r = Message {
                msg_type: MessageType::MsgAppResp,
                from: m.to,
                to: 1,
                term: m.term,
                index: m.index + m.entries.len() as u64,
                ..Message::default()
            }
            .encode_to_vec();
            assert_eq!(
                unsafe { raftlet_node_step(n.node, r.as_ptr(), r.len()) },
                RAFTLET_OK
            );
        }
    };
    // Frees `rd`, here or on another thread.
    let free = |rd: *mut raftlet_ready, elsewhere: bool| {
        if elsewhere {
            let rd = rd as usize;
            std::thread::spawn(move || unsafe { raftlet_ready_free(rd as *mut raftlet_ready) })
                .join()
                .expect("freed on another thread");
        } else {
            unsafe { raftlet_ready_free(rd) };
        }
    };
    // Until idle, acknowledging every append; returns the entries
    // committed on the way.
    let settle = |freed: &mut usize| {
        let mut committed = Vec::new();
        loop {
            let (rd, flat, persist, _) = take_persisted(&n);
            let Some(f) = flat else { return committed };
            assert_eq!(persist, RAFTLET_OK);
            committed.extend(committed_of(&f).into_iter().map(|c| c.1));
            let msgs = messages_of(&f);
            assert_eq!(unsafe { raftlet_node_advance(n.node, rd) }, RAFTLET_OK);
            free(rd, *freed % 2 == 1);
            *freed += 1;
            ack(&msgs);
        }
    };
    let mut freed = 0;
    settle(&mut freed);
    for (k, size) in [1usize, 9000, 3, 20000, 0, 5000, 7].into_iter().enumerate() {
        let data: Vec<u8> = (0..size).map(|i| (i * 7 + k) as u8).collect();
        assert_eq!(
            unsafe { raftlet_node_propose(n.node, data.as_ptr(), data.len()) },
            RAFTLET_OK
        );
        let (rd, flat, persist, _) = take_persisted(&n);
        let f = flat.expect("the proposal leaves a ready");
        assert_eq!(persist, RAFTLET_OK);
        assert_eq!(f.entry_count, 1, "proposal {k}: its entry only");
        let e = unsafe { &*f.entries };
        assert_eq!(unsafe { bytes_of(e.data) }, &data[..], "proposal {k}");
        let msgs = messages_of(&f);
        assert_eq!(msgs.len(), 2, "proposal {k}: an append to each follower");
        for m in &msgs {
            assert_eq!(m.msg_type, MessageType::MsgApp);
            let got: Vec<&[u8]> = m.entries.iter().map(|e| e.data()).collect();
            assert_eq!(got, vec![&data[..]], "proposal {k}");
        }
        assert_eq!(committed_of(&f), Vec::new(), "no quorum yet");
        assert_eq!(unsafe { raftlet_node_advance(n.node, rd) }, RAFTLET_OK);
        free(rd, k % 2 == 1);
        ack(&msgs);
        assert_eq!(
            settle(&mut freed),
            vec![data],
            "proposal {k} committed, alone"
        );
    }
}
