//! A storage that fails to read entries (a disk returning EIO, a durable
//! store whose files went away) does not crash the node. etcd panics when
//! it cannot read the committed entries to apply; raftlet hands out none,
//! keeps running, and retries the read at the node's next message or
//! acting tick (a heartbeat or an election timeout, not a tick that only
//! counts).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use raftlet::pb::{ConfState, Entry, EntryType, HardState, Snapshot};
use raftlet::{Config, MemoryStorage, RaftState, RawNode, Result, Storage, StorageError};

/// A `MemoryStorage` whose entry reads fail while `failing` is set; terms,
/// bounds and the hard state still answer (as the durable store's index
/// does after its files fail).
#[derive(Clone, Default)]
struct Flaky {
    inner: MemoryStorage,
    failing: Arc<AtomicBool>,
    /// Fail with `Compacted` instead of an I/O error.
    compacted: bool,
}

impl Flaky {
    fn check(&self) -> Result<()> {
        if self.failing.load(Ordering::SeqCst) {
            if self.compacted {
                return Err(StorageError::Compacted.into());
            }
            return Err(StorageError::Other("read: Input/output error (os error 5)".into()).into());
        }
        Ok(())
    }
}

impl Storage for Flaky {
    fn initial_state(&self) -> Result<RaftState> {
        self.inner.initial_state()
    }
    fn entries(&self, low: u64, high: u64, max_size: u64) -> Result<Vec<Entry>> {
        self.check()?;
        self.inner.entries(low, high, max_size)
    }
    fn entries_into(&self, low: u64, high: u64, max_size: u64, out: &mut Vec<Entry>) -> Result<()> {
        self.check()?;
        self.inner.entries_into(low, high, max_size, out)
    }
    fn term(&self, idx: u64) -> Result<u64> {
        self.inner.term(idx)
    }
    fn first_index(&self) -> Result<u64> {
        self.inner.first_index()
    }
    fn last_index(&self) -> Result<u64> {
        self.inner.last_index()
    }
    fn snapshot(&self, request_index: u64, to: u64) -> Result<Snapshot> {
        self.inner.snapshot(request_index, to)
    }
}

/// A storage holding `n` entries of term 1 (payloads `e1`..), all
/// committed, for a configuration of `voters`, whose entry reads already
/// fail: with an I/O error, or with `Compacted` when `compacted`.
fn committed_log(voters: &[u64], n: u64, vote: u64, compacted: bool) -> Flaky {
    let s = Flaky {
        compacted,
        ..Flaky::default()
    };
    s.inner
        .wl()
        .set_conf_state(ConfState::from_voters(voters.to_vec()))
        .unwrap();
    let ents: Vec<Entry> = (1..=n)
        .map(|i| Entry {
            term: 1,
            index: i,
            data: Some(format!("e{i}").into_bytes().into()),
            ..Default::default()
        })
        .collect();
    s.inner.wl().append(&ents).unwrap();
    s.inner.wl().set_hard_state(HardState {
        term: 1,
        vote,
        commit: n,
    });
    s.failing.store(true, Ordering::SeqCst);
    s
}

/// Takes a Ready, writes what it asks to the storage, advances; returns
/// the payloads it handed out to apply.
fn cycle(node: &mut RawNode<Flaky>, s: &Flaky) -> Vec<Vec<u8>> {
    let rd = node.ready();
    {
        let mut w = s.inner.wl();
        w.append(&rd.entries).unwrap();
        if let Some(hs) = rd.hard_state {
            w.set_hard_state(hs);
        }
    }
    let applied = rd.committed_entries.iter().filter_map(normal).collect();
    node.advance(rd);
    applied
}

fn normal(e: &Entry) -> Option<Vec<u8>> {
    (e.entry_type == EntryType::EntryNormal && !e.data().is_empty()).then(|| e.data().to_vec())
}

/// A node restarting on a log of committed entries whose reads fail hands
/// none out and does not panic; has_ready stops asking (no busy loop);
/// acting ticks retry, and once the storage reads again every entry comes
/// out, in order, once.
#[test]
fn a_failed_read_of_committed_entries_waits_for_the_next_tick() {
    let s = committed_log(&[1], 5, 1, false);
    let mut node = RawNode::new(&Config::new(1), s.clone()).unwrap();

    // The read fails: a Ready without the entries, no panic.
    assert!(node.has_ready());
    assert!(cycle(&mut node, &s).is_empty());
    // Nothing asks again until the node is ticked or stepped.
    assert!(
        !node.has_ready(),
        "a failed read must not make the host spin"
    );

    // Acting ticks (its election timeouts) retry, and fail again while the
    // storage does.
    for _ in 0..30 {
        node.tick();
        while node.has_ready() {
            assert!(cycle(&mut node, &s).is_empty());
        }
    }
    // (It cannot campaign either: whether a committed configuration change
    // waits to be applied is not known without reading the entries.)
    assert_eq!(node.basic_status().applied, 0);

    // The storage reads again: the next acting tick hands every entry out
    // once (and the node campaigns and leads).
    s.failing.store(false, Ordering::SeqCst);
    let mut applied = Vec::new();
    for _ in 0..30 {
        node.tick();
        while node.has_ready() {
            applied.extend(cycle(&mut node, &s));
        }
    }
    let want: Vec<Vec<u8>> = (1..=5).map(|i| format!("e{i}").into_bytes()).collect();
    assert_eq!(applied, want);
    // (6: the leader it became appended an empty entry.)
    assert_eq!(node.basic_status().applied, 6);
}

/// The same through a message: a follower whose reads fail keeps stepping
/// its leader's messages, and the message retries the read.
#[test]
fn a_message_retries_a_failed_read() {
    let s = committed_log(&[1, 2], 3, 0, false);
    let mut node = RawNode::new(&Config::new(2), s.clone()).unwrap();
    assert!(cycle(&mut node, &s).is_empty());
    assert!(!node.has_ready());

    s.failing.store(false, Ordering::SeqCst);
    let mut hb = raftlet::pb::Message::new(raftlet::pb::MessageType::MsgHeartbeat, 1, 2);
    hb.term = 1;
    hb.commit = 3;
    node.step(hb).unwrap();
    let mut applied = Vec::new();
    while node.has_ready() {
        applied.extend(cycle(&mut node, &s));
    }
    assert_eq!(applied.len(), 3);
}

/// A storage that says the entries to apply were compacted is not failing
/// to read: the host broke the storage contract (it compacted entries it
/// had not applied). Retrying cannot mend that, and the node panics, as
/// etcd's does (the C ABI and the bindings report it and refuse the node).
#[test]
#[should_panic(expected = "unexpected error when getting unapplied entries")]
fn entries_compacted_before_they_were_applied_still_panic() {
    let s = committed_log(&[1], 2, 1, true);
    let mut node = RawNode::new(&Config::new(1), s).unwrap();
    let _ = node.ready();
}
