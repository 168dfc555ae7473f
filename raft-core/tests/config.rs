//! Configuration tests: `Config::validate` refuses every invalid field and
//! combination with `Error::ConfigInvalid` naming the field, the defaults
//! are the ones DESIGN §2 documents, and `RawNode::new` refuses an invalid
//! configuration (including an `applied` index the storage contradicts).
//!
//! Public API only.

use raftlet::pb::{ConfState, Entry, HardState, Snapshot, SnapshotMetadata};
use raftlet::{Config, Error, MemoryStorage, RawNode, ReadOnlyOption};

/// A valid configuration for node 1 (the defaults).
fn valid() -> Config {
    Config::new(1)
}

/// Asserts that `c` is refused with `ConfigInvalid` and that the message
/// names every one of `fields`.
fn assert_invalid(c: &Config, fields: &[&str], what: &str) {
    match c.validate() {
        Err(Error::ConfigInvalid(msg)) => {
            for f in fields {
                assert!(msg.contains(f), "{what}: message {msg:?} does not name {f}");
            }
            // The error's Display carries the sentence too.
            let shown = Error::ConfigInvalid(msg.clone()).to_string();
            assert!(shown.contains(&msg), "{what}: {shown}");
        }
        other => panic!("{what}: expected ConfigInvalid, got {other:?}"),
    }
}

/// etcd: TestConfigValidate (config validation)
#[test]
fn config_validate() {
    type Edit = fn(&mut Config);
    let invalid: Vec<(&str, Edit, &[&str])> = vec![
        ("id 0", |c| c.id = 0, &["id"]),
        (
            "heartbeat_tick 0",
            |c| c.heartbeat_tick = 0,
            &["heartbeat_tick"],
        ),
        (
            "election_tick == heartbeat_tick",
            |c| {
                c.election_tick = 5;
                c.heartbeat_tick = 5;
            },
            &["election_tick", "heartbeat_tick"],
        ),
        (
            "election_tick < heartbeat_tick",
            |c| {
                c.election_tick = 2;
                c.heartbeat_tick = 3;
            },
            &["election_tick", "heartbeat_tick"],
        ),
        (
            "election_tick 0",
            |c| c.election_tick = 0,
            &["election_tick"],
        ),
        (
            "election_tick overflows 2 * election_tick",
            |c| c.election_tick = usize::MAX,
            &["election_tick"],
        ),
        (
            "2 * election_tick overflows 32 bits",
            |c| c.election_tick = (u32::MAX / 2) as usize + 1,
            &["election_tick"],
        ),
        (
            "max_inflight_msgs 0",
            |c| c.max_inflight_msgs = 0,
            &["max_inflight_msgs"],
        ),
        (
            "max_inflight_bytes below max_size_per_msg",
            |c| {
                c.max_size_per_msg = 1024;
                c.max_inflight_bytes = 1023;
            },
            &["max_inflight_bytes", "max_size_per_msg"],
        ),
        (
            "max_inflight_bytes 1 with the default max_size_per_msg",
            |c| c.max_inflight_bytes = 1,
            &["max_inflight_bytes"],
        ),
        (
            "lease-based reads without check_quorum",
            |c| {
                c.read_only_option = ReadOnlyOption::LeaseBased;
                c.check_quorum = false;
            },
            &["LeaseBased", "check_quorum"],
        ),
        (
            "id u64::MAX (etcd's LocalAppendThread)",
            |c| c.id = u64::MAX,
            &["id"],
        ),
        (
            "id u64::MAX - 1 (etcd's LocalApplyThread)",
            |c| c.id = u64::MAX - 1,
            &["id"],
        ),
    ];
    for (what, edit, fields) in invalid {
        let mut c = valid();
        edit(&mut c);
        assert_invalid(&c, fields, what);
    }

    // The boundaries of each rule are valid.
    let ok: Vec<(&str, Edit)> = vec![
        ("defaults", |_| {}),
        ("id 2", |c| c.id = 2),
        ("id u64::MAX - 2", |c| c.id = u64::MAX - 2),
        ("election_tick = heartbeat_tick + 1", |c| {
            c.heartbeat_tick = 4;
            c.election_tick = 5;
        }),
        ("election_tick u32::MAX / 2", |c| {
            c.election_tick = (u32::MAX / 2) as usize
        }),
        ("max_inflight_msgs 1", |c| c.max_inflight_msgs = 1),
        ("max_inflight_bytes 0 (unlimited)", |c| {
            c.max_size_per_msg = u64::MAX;
            c.max_inflight_bytes = 0;
        }),
        ("max_inflight_bytes = max_size_per_msg", |c| {
            c.max_size_per_msg = 1024;
            c.max_inflight_bytes = 1024;
        }),
        ("max_size_per_msg 0 (one entry per message)", |c| {
            c.max_size_per_msg = 0;
            c.max_inflight_bytes = 1;
        }),
        ("lease-based reads with check_quorum", |c| {
            c.read_only_option = ReadOnlyOption::LeaseBased;
            c.check_quorum = true;
        }),
        ("safe reads without check_quorum", |c| {
            c.check_quorum = false
        }),
        ("pre_vote off", |c| c.pre_vote = false),
        ("max_learners 0", |c| c.max_learners = 0),
        ("promote_max_lag 0", |c| c.promote_max_lag = 0),
    ];
    for (what, edit) in ok {
        let mut c = valid();
        edit(&mut c);
        assert_eq!(c.validate(), Ok(()), "{what}");
    }
}

/// The defaults are DESIGN §2's.
#[test]
fn config_defaults() {
    let c = Config::new(7);
    assert_eq!(c.id, 7);
    assert_eq!(c.election_tick, 10);
    assert_eq!(c.heartbeat_tick, 1);
    assert_eq!(c.applied, 0);
    assert_eq!(c.max_size_per_msg, 1024 * 1024);
    assert_eq!(c.max_committed_size_per_ready, 0, "0 = max_size_per_msg");
    assert_eq!(c.max_uncommitted_entries_size, 0, "0 = unlimited");
    assert_eq!(c.max_inflight_msgs, 256);
    assert_eq!(c.max_inflight_bytes, 0, "0 = unlimited");
    assert!(c.check_quorum);
    assert!(c.pre_vote);
    assert_eq!(c.read_only_option, ReadOnlyOption::Safe);
    assert!(!c.disable_proposal_forwarding);
    assert!(!c.disable_conf_change_validation);
    assert!(c.step_down_on_removal);
    assert_eq!(c.promote_max_lag, 1000);
    assert_eq!(c.max_learners, 1);
    assert_eq!(c.seed, 0, "0 = drawn from the OS");
    assert_eq!(ReadOnlyOption::default(), ReadOnlyOption::Safe);
    // Config::default is the same with id 0, which does not validate.
    assert_eq!(
        Config {
            id: 7,
            ..Config::default()
        },
        c
    );
    assert!(matches!(
        Config::default().validate(),
        Err(Error::ConfigInvalid(_))
    ));
    c.validate().expect("defaults are valid");
}

/// RawNode::new refuses an invalid configuration with its error.
#[test]
fn config_raw_node_new_invalid() {
    let mut c = valid();
    c.heartbeat_tick = 0;
    let want = c.validate().expect_err("invalid");
    let s = MemoryStorage::new_with_conf_state(ConfState::from_voters([1])).unwrap();
    match RawNode::new(&c, s) {
        Err(e) => assert_eq!(e, want),
        Ok(_) => panic!("RawNode::new accepted heartbeat_tick 0"),
    }
    c.heartbeat_tick = 1;
    let s = MemoryStorage::new_with_conf_state(ConfState::from_voters([1])).unwrap();
    assert!(RawNode::new(&c, s).is_ok());
}

/// A storage with a snapshot at index 5 and entries 6..=8, committed to 7.
fn restart_storage() -> MemoryStorage {
    let s = MemoryStorage::new();
    s.wl()
        .apply_snapshot(Snapshot {
            data: None,
            metadata: SnapshotMetadata {
                conf_state: ConfState::from_voters([1]),
                index: 5,
                term: 1,
            },
        })
        .expect("snapshot");
    let ents: Vec<Entry> = (6..=8).map(|i| Entry::new(1, i, "x")).collect();
    s.wl().append(&ents).expect("append");
    s.wl().set_hard_state(HardState {
        term: 1,
        vote: 1,
        commit: 7,
    });
    s
}

/// `applied` must lie between the snapshot and the stored commit index.
#[test]
fn config_applied_out_of_range() {
    // Beyond the commit index: the host claims to have applied entries
    // that are not known to be committed.
    let mut c = valid();
    c.applied = 8;
    match RawNode::new(&c, restart_storage()) {
        Err(Error::ConfigInvalid(msg)) => assert!(msg.contains("applied"), "{msg}"),
        Err(e) => panic!("expected ConfigInvalid, got {e:?}"),
        Ok(_) => panic!("applied 8 > commit 7 accepted"),
    }
    // Below the snapshot: the state machine is older than the snapshot the
    // storage holds (etcd panics).
    c.applied = 3;
    match RawNode::new(&c, restart_storage()) {
        Err(Error::ConfigInvalid(msg)) => assert!(msg.contains("applied"), "{msg}"),
        Err(e) => panic!("expected ConfigInvalid, got {e:?}"),
        Ok(_) => panic!("applied 3 < snapshot 5 accepted"),
    }
    // In range: entries up to applied are not handed out again.
    for (applied, first) in [(0, 6), (5, 6), (6, 7), (7, 8)] {
        c.applied = applied;
        let mut rn = RawNode::new(&c, restart_storage()).expect("valid applied");
        let rd = rn.ready();
        let got: Vec<u64> = rd.committed_entries.iter().map(|e| e.index).collect();
        let want: Vec<u64> = (first..=7).collect();
        assert_eq!(got, want, "applied {applied}");
        rn.advance(rd);
        assert_eq!(rn.status().basic.applied, 7, "applied {applied}");
    }
}
