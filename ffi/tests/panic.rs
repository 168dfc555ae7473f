//! The panic boundary of the C ABI, from Rust: a panic inside an export
//! comes back as RAFTLET_PANIC (no abort, no unwinding into the caller) and
//! poisons the node; NULL pointers give RAFTLET_ERR_NULL_ARG; outputs are
//! written only on success.
//!
//! Needs the test-only export `raftlet_testing_panic`:
//! `cargo test -p raftlet-ffi --features testing`.
#![allow(unsafe_code, reason = "these tests call the C ABI")]
#![allow(missing_docs, reason = "tests")]

use std::ffi::CStr;
use std::ptr;

use raftlet::raftlet_result::{self, *};
use raftlet::*;

fn last_error() -> String {
    // SAFETY: the library returns a valid NUL-terminated string.
    unsafe { CStr::from_ptr(raftlet_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// A node with id 1 over a storage that holds the configuration {1}.
struct Fixture {
    storage: *mut raftlet_storage,
    node: *mut raftlet_node,
}

impl Fixture {
    fn new() -> Fixture {
        let mut cfg = ptr::null_mut();
        let mut storage = ptr::null_mut();
        let mut node = ptr::null_mut();
        // SAFETY: valid out-pointers and handles throughout.
        unsafe {
            assert_eq!(raftlet_config_new(1, &mut cfg), RAFTLET_OK);
            assert_eq!(raftlet_storage_new_memory(&mut storage), RAFTLET_OK);
            let voters = [1u64];
            assert_eq!(
                raftlet_storage_set_conf_state(storage, voters.as_ptr(), 1, ptr::null(), 0),
                RAFTLET_OK
            );
            assert_eq!(raftlet_node_new(cfg, storage, &mut node), RAFTLET_OK);
            raftlet_config_free(cfg);
        }
        Fixture { storage, node }
    }

    /// Runs the Ready loop until the node has nothing left to do.
    fn settle(&self) {
        // SAFETY: live handles owned by the fixture.
        unsafe {
            loop {
                let mut has = false;
                assert_eq!(raftlet_node_has_ready(self.node, &mut has), RAFTLET_OK);
                if !has {
                    return;
                }
                let mut rd = ptr::null_mut();
                assert_eq!(raftlet_node_ready(self.node, &mut rd), RAFTLET_OK);
                assert_eq!(raftlet_storage_append_ready(self.storage, rd), RAFTLET_OK);
                assert_eq!(raftlet_node_advance(self.node, rd), RAFTLET_OK);
                raftlet_ready_free(rd);
            }
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        // SAFETY: handles owned by the fixture, freed once.
        unsafe {
            raftlet_node_free(self.node);
            raftlet_storage_free(self.storage);
        }
    }
}

#[test]
fn a_panic_in_an_export_is_reported_and_poisons_the_node() {
    let f = Fixture::new();
    let other = Fixture::new();
    // SAFETY: valid handles and out-pointers; the function under test
    // panics inside the library, which must not unwind out of it.
    unsafe {
        assert_eq!(raftlet_node_campaign(f.node), RAFTLET_OK);
        f.settle();
        let mut st = raftlet_status::default();
        assert_eq!(raftlet_node_status(f.node, &mut st), RAFTLET_OK);
        assert_eq!(st.role, 2);

        assert_eq!(raftlet_testing_panic(f.node), RAFTLET_PANIC);
        let msg = last_error();
        assert!(msg.contains("panic"), "last error: {msg}");

        // Every later call on that node is refused with RAFTLET_PANIC.
        assert_eq!(raftlet_testing_panic(f.node), RAFTLET_PANIC);
        assert!(last_error().contains("poisoned"), "{}", last_error());
        assert_eq!(raftlet_node_tick(f.node), RAFTLET_PANIC);
        assert_eq!(raftlet_node_campaign(f.node), RAFTLET_PANIC);
        assert_eq!(
            raftlet_node_propose(f.node, b"x".as_ptr(), 1),
            RAFTLET_PANIC
        );
        assert_eq!(
            raftlet_node_read_index(f.node, ptr::null(), 0),
            RAFTLET_PANIC
        );
        assert_eq!(raftlet_node_transfer_leader(f.node, 1), RAFTLET_PANIC);
        assert_eq!(raftlet_node_forget_leader(f.node), RAFTLET_PANIC);
        assert_eq!(raftlet_node_report_unreachable(f.node, 2), RAFTLET_PANIC);
        assert_eq!(raftlet_node_report_snapshot(f.node, 2, true), RAFTLET_PANIC);
        assert_eq!(raftlet_node_advance_apply_to(f.node, 1), RAFTLET_PANIC);
        let voters = [1u64];
        assert_eq!(
            raftlet_node_bootstrap(f.node, voters.as_ptr(), 1, ptr::null(), 0),
            RAFTLET_PANIC
        );
        // A well-formed heartbeat from a member (type 8, to 1, from 1, term 9).
        let hb = [0x08u8, 8, 0x10, 1, 0x18, 1, 0x20, 9];
        assert_eq!(
            raftlet_node_step(f.node, hb.as_ptr(), hb.len()),
            RAFTLET_PANIC
        );
        let mut cc = [0u8; 32];
        let mut cc_len = 0usize;
        assert_eq!(
            raftlet_conf_change_encode(3, 2, ptr::null(), 0, cc.as_mut_ptr(), 32, &mut cc_len),
            RAFTLET_OK
        );
        assert_eq!(
            raftlet_node_propose_conf_change(f.node, cc.as_ptr(), cc_len, false),
            RAFTLET_PANIC
        );
        assert_eq!(
            raftlet_node_apply_conf_change(
                f.node,
                cc.as_ptr(),
                cc_len,
                false,
                ptr::null_mut(),
                0,
                ptr::null_mut()
            ),
            RAFTLET_PANIC
        );

        // ... and writes none of its outputs.
        let mut has = true;
        assert_eq!(raftlet_node_has_ready(f.node, &mut has), RAFTLET_PANIC);
        assert!(has);
        let mut rd: *mut raftlet_ready = ptr::null_mut();
        assert_eq!(raftlet_node_ready(f.node, &mut rd), RAFTLET_PANIC);
        assert!(rd.is_null());
        let mut st2 = raftlet_status {
            id: 77,
            ..raftlet_status::default()
        };
        assert_eq!(raftlet_node_status(f.node, &mut st2), RAFTLET_PANIC);
        assert_eq!(st2.id, 77);
        let mut len = 55usize;
        assert_eq!(
            raftlet_node_progress(f.node, ptr::null_mut(), 0, &mut len),
            RAFTLET_PANIC
        );
        assert_eq!(len, 55);
        let mut json: *mut std::ffi::c_char = ptr::null_mut();
        assert_eq!(raftlet_node_status_json(f.node, &mut json), RAFTLET_PANIC);
        assert!(json.is_null());

        // Another node is not affected.
        assert_eq!(raftlet_node_campaign(other.node), RAFTLET_OK);
        other.settle();
        assert_eq!(
            raftlet_node_propose(other.node, b"ok".as_ptr(), 2),
            RAFTLET_OK
        );
        other.settle();
        // The storage of the poisoned node still works.
        let (mut first, mut last) = (0u64, 0u64);
        assert_eq!(
            raftlet_storage_bounds(f.storage, &mut first, &mut last),
            RAFTLET_OK
        );
        assert!(last >= 1);
    }
    // Dropping the fixture frees the poisoned node: it must not panic or
    // abort (raftlet_node_free has its own boundary).
    drop(f);
}

#[test]
fn a_ready_taken_before_the_panic_cannot_be_advanced() {
    let f = Fixture::new();
    // SAFETY: valid handles and out-pointers.
    unsafe {
        assert_eq!(raftlet_node_campaign(f.node), RAFTLET_OK);
        let mut rd = ptr::null_mut();
        assert_eq!(raftlet_node_ready(f.node, &mut rd), RAFTLET_OK);
        assert_eq!(raftlet_testing_panic(f.node), RAFTLET_PANIC);
        assert_eq!(raftlet_node_advance(f.node, rd), RAFTLET_PANIC);
        assert_eq!(raftlet_node_advance_append(f.node, rd), RAFTLET_PANIC);
        // The ready itself is still readable (it does not touch the node)
        // and its release works.
        let mut n = 99usize;
        assert_eq!(raftlet_ready_message_count(rd, &mut n), RAFTLET_OK);
        assert_eq!(n, 0);
        raftlet_ready_free(rd);
    }
}

#[test]
fn the_testing_export_checks_its_pointer() {
    // SAFETY: NULL is an allowed argument.
    assert_eq!(
        unsafe { raftlet_testing_panic(ptr::null_mut()) },
        RAFTLET_ERR_NULL_ARG
    );
    assert!(!last_error().is_empty());
}

#[test]
fn null_pointers_give_null_arg() {
    let f = Fixture::new();
    let check = |rc: raftlet_result, what: &str| {
        assert_eq!(rc, RAFTLET_ERR_NULL_ARG, "{what}");
        assert!(!last_error().is_empty(), "{what}: no last error message");
    };
    // SAFETY: every pointer is NULL or valid; NULL is what is under test.
    unsafe {
        check(raftlet_config_new(1, ptr::null_mut()), "config_new");
        check(raftlet_config_validate(ptr::null()), "config_validate");
        check(
            raftlet_config_set_election_tick(ptr::null_mut(), 10),
            "config_set_election_tick",
        );
        check(
            raftlet_storage_new_memory(ptr::null_mut()),
            "storage_new_memory",
        );
        check(
            raftlet_storage_compact(ptr::null_mut(), 1),
            "storage_compact",
        );
        check(
            raftlet_storage_append_ready(f.storage, ptr::null()),
            "storage_append_ready",
        );
        let mut node = ptr::null_mut();
        check(
            raftlet_node_new(ptr::null(), f.storage, &mut node),
            "node_new config",
        );
        check(raftlet_node_tick(ptr::null_mut()), "node_tick");
        check(
            raftlet_node_propose(f.node, ptr::null(), 3),
            "node_propose data",
        );
        check(
            raftlet_node_step(ptr::null_mut(), ptr::null(), 0),
            "node_step",
        );
        let mut rd = ptr::null_mut();
        assert_eq!(raftlet_node_ready(f.node, &mut rd), RAFTLET_OK);
        check(
            raftlet_node_advance(ptr::null_mut(), rd),
            "node_advance node",
        );
        check(
            raftlet_node_advance(f.node, ptr::null_mut()),
            "node_advance ready",
        );
        check(
            raftlet_ready_entry_count(rd, ptr::null_mut()),
            "ready_entry_count",
        );
        check(
            raftlet_ready_message_count(ptr::null(), &mut 0),
            "ready_message_count",
        );
        assert_eq!(raftlet_node_advance(f.node, rd), RAFTLET_OK);
        raftlet_ready_free(rd);
        check(raftlet_node_status(f.node, ptr::null_mut()), "node_status");
        check(
            raftlet_message_decode_header(ptr::null(), 1, &mut raftlet_message_header::default()),
            "message_decode_header",
        );
        check(
            raftlet_conf_change_encode(0, 1, ptr::null(), 0, ptr::null_mut(), 0, ptr::null_mut()),
            "conf_change_encode len_out",
        );
        // The _free functions accept NULL.
        raftlet_config_free(ptr::null_mut());
        raftlet_storage_free(ptr::null_mut());
        raftlet_node_free(ptr::null_mut());
        raftlet_ready_free(ptr::null_mut());
        raftlet_string_free(ptr::null_mut());
    }
}

#[test]
fn outputs_are_written_only_on_success() {
    let f = Fixture::new();
    // SAFETY: valid handles and out-pointers.
    unsafe {
        // node_new with an invalid configuration.
        let mut cfg = ptr::null_mut();
        assert_eq!(raftlet_config_new(0, &mut cfg), RAFTLET_OK);
        let marker = 0x1000 as *mut raftlet_node;
        let mut node = marker;
        assert_eq!(
            raftlet_node_new(cfg, f.storage, &mut node),
            RAFTLET_ERR_CONFIG_INVALID
        );
        assert_eq!(node, marker);
        raftlet_config_free(cfg);

        // storage_bounds with one NULL output writes neither.
        let mut first = 77u64;
        assert_eq!(
            raftlet_storage_bounds(f.storage, &mut first, ptr::null_mut()),
            RAFTLET_ERR_NULL_ARG
        );
        assert_eq!(first, 77);

        // Decoders on malformed bytes.
        let garbage = [0xffu8; 12];
        let mut h = raftlet_message_header {
            msg_type: 5,
            to: 5,
            from: 5,
            term: 5,
        };
        assert_eq!(
            raftlet_message_decode_header(garbage.as_ptr(), garbage.len(), &mut h),
            RAFTLET_ERR_DECODE
        );
        assert_eq!((h.msg_type, h.to, h.from, h.term), (5, 5, 5, 5));
        let mut cc = raftlet_conf_change_single {
            change_type: 9,
            node_id: 9,
        };
        assert_eq!(
            raftlet_conf_change_decode(garbage.as_ptr(), garbage.len(), &mut cc),
            RAFTLET_ERR_DECODE
        );
        assert_eq!((cc.change_type, cc.node_id), (9, 9));

        // has_ready with a NULL node.
        let mut has = true;
        assert_eq!(
            raftlet_node_has_ready(ptr::null(), &mut has),
            RAFTLET_ERR_NULL_ARG
        );
        assert!(has);

        // A stale ready's accessors.
        assert_eq!(raftlet_node_campaign(f.node), RAFTLET_OK);
        let mut rd = ptr::null_mut();
        assert_eq!(raftlet_node_ready(f.node, &mut rd), RAFTLET_OK);
        assert_eq!(raftlet_storage_append_ready(f.storage, rd), RAFTLET_OK);
        assert_eq!(raftlet_node_advance(f.node, rd), RAFTLET_OK);
        let mut n = 31usize;
        assert_eq!(
            raftlet_ready_entry_count(rd, &mut n),
            RAFTLET_ERR_READY_STALE
        );
        assert_eq!(n, 31);
        let mut has_hs = true;
        let mut hs = raftlet_hard_state {
            term: 3,
            vote: 3,
            commit: 3,
        };
        assert_eq!(
            raftlet_ready_hard_state(rd, &mut has_hs, &mut hs),
            RAFTLET_ERR_READY_STALE
        );
        assert!(has_hs);
        assert_eq!((hs.term, hs.vote, hs.commit), (3, 3, 3));
        raftlet_ready_free(rd);

        // An index out of range.
        f.settle();
        let mut rd = ptr::null_mut();
        assert_eq!(raftlet_node_ready(f.node, &mut rd), RAFTLET_OK);
        let mut ev = raftlet_entry_view {
            index: 8,
            term: 8,
            entry_type: 8,
            data: raftlet_bytes {
                ptr: ptr::null(),
                len: 8,
            },
        };
        assert_eq!(raftlet_ready_entry(rd, 0, &mut ev), RAFTLET_ERR_INVALID_ARG);
        assert_eq!(
            (ev.index, ev.term, ev.entry_type, ev.data.len),
            (8, 8, 8, 8)
        );
        assert_eq!(raftlet_node_advance(f.node, rd), RAFTLET_OK);
        raftlet_ready_free(rd);

        // A successful call does write.
        let mut st = raftlet_status::default();
        assert_eq!(raftlet_node_status(f.node, &mut st), RAFTLET_OK);
        assert_eq!((st.id, st.role), (1, 2));
    }
}

#[test]
fn result_names() {
    let name = |c: raftlet_result| {
        // SAFETY: static NUL-terminated strings.
        unsafe { CStr::from_ptr(raftlet_result_str(c as u32)) }
            .to_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(name(RAFTLET_PANIC), "RAFTLET_PANIC");
    assert_eq!(name(RAFTLET_ERR_NULL_ARG), "RAFTLET_ERR_NULL_ARG");
    // SAFETY: as above.
    let unknown = unsafe { CStr::from_ptr(raftlet_result_str(12345)) };
    assert_eq!(unknown.to_str().unwrap(), "RAFTLET_UNKNOWN");
}

// ---------------------------------------------------------------------------
// What a caught panic prints. Rust's default panic hook writes the message
// to stderr; inside a raftlet export it must not (the host's stderr is not
// ours), and with a log callback installed the message goes there. Each
// case runs in a child process (this test binary again, running one of the
// ignored `child_*` tests below) so that its stderr can be read whole.
// ---------------------------------------------------------------------------

/// Runs the ignored test `name` in a child process; returns whether it
/// passed, its stdout and its stderr.
fn run_child(name: &str) -> (bool, String, String) {
    let exe = std::env::current_exe().expect("the test binary");
    let out = std::process::Command::new(exe)
        .args([
            name,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("run the test binary");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One leader node, then a deliberate panic inside an export.
fn panic_inside_an_export() {
    let f = Fixture::new();
    // SAFETY: live handles; the panic must not unwind out of the call.
    unsafe {
        assert_eq!(raftlet_node_campaign(f.node), RAFTLET_OK);
        f.settle();
        assert_eq!(raftlet_testing_panic(f.node), RAFTLET_PANIC);
    }
    assert!(
        last_error().contains("deliberate panic"),
        "{}",
        last_error()
    );
}

#[test]
#[ignore = "a child process of a_caught_panic_prints_nothing"]
fn child_panic_without_log_callback() {
    panic_inside_an_export();
    println!("CHILD-DONE");
}

#[test]
fn a_caught_panic_prints_nothing() {
    let (ok, out, err) = run_child("child_panic_without_log_callback");
    assert!(
        ok && out.contains("CHILD-DONE"),
        "stdout: {out}\nstderr: {err}"
    );
    assert!(!err.contains("deliberate panic"), "stderr: {err}");
    assert!(!err.contains("panicked"), "stderr: {err}");
}

/// The records the log callback of the child received.
static LOGGED: std::sync::Mutex<Vec<(u32, u64, String)>> = std::sync::Mutex::new(Vec::new());

unsafe extern "C" fn collect(
    _user_data: *mut std::ffi::c_void,
    level: u32,
    node_id: u64,
    message: *const u8,
    message_len: usize,
) {
    // SAFETY: the library passes `message_len` bytes of UTF-8 at `message`.
    let bytes = unsafe { std::slice::from_raw_parts(message, message_len) };
    let text = String::from_utf8_lossy(bytes).into_owned();
    LOGGED.lock().unwrap().push((level, node_id, text));
}

#[test]
#[ignore = "a child process of a_caught_panic_goes_to_the_log_callback"]
fn child_panic_with_log_callback() {
    // SAFETY: a valid callback; user data is unused.
    let rc = unsafe { raftlet_set_log_callback(Some(collect), ptr::null_mut(), 2) };
    assert_eq!(rc, RAFTLET_OK);
    panic_inside_an_export();
    // SAFETY: NULL removes the callback.
    unsafe { raftlet_set_log_callback(None, ptr::null_mut(), 0) };
    let logged = LOGGED.lock().unwrap().clone();
    let hit = logged
        .iter()
        .find(|(_, _, m)| m.contains("deliberate panic"))
        .unwrap_or_else(|| panic!("no panic record in {logged:?}"));
    assert_eq!(hit.0, 3, "logged at level error");
    assert!(hit.2.contains("panic inside raftlet at "), "{}", hit.2);
    assert!(hit.2.contains("node.rs"), "names the location: {}", hit.2);
    println!("CHILD-DONE");
}

#[test]
fn a_caught_panic_goes_to_the_log_callback() {
    let (ok, out, err) = run_child("child_panic_with_log_callback");
    assert!(
        ok && out.contains("CHILD-DONE"),
        "stdout: {out}\nstderr: {err}"
    );
    assert!(!err.contains("deliberate panic"), "stderr: {err}");
    assert!(!err.contains("panicked"), "stderr: {err}");
}

#[test]
#[ignore = "a child process of panics_outside_raftlet_reach_the_host_hook"]
fn child_host_hook() {
    // A Rust host that installed its own hook before using raftlet.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .copied()
            .unwrap_or("?");
        eprintln!("HOST-HOOK: {msg}");
    }));
    panic_inside_an_export();
    let r = std::panic::catch_unwind(|| panic!("the host's own panic"));
    assert!(r.is_err());
    println!("CHILD-DONE");
}

#[test]
fn panics_outside_raftlet_reach_the_host_hook() {
    let (ok, out, err) = run_child("child_host_hook");
    assert!(
        ok && out.contains("CHILD-DONE"),
        "stdout: {out}\nstderr: {err}"
    );
    // The host's panic went to the host's hook, raftlet's to nobody.
    assert!(
        err.contains("HOST-HOOK: the host's own panic"),
        "stderr: {err}"
    );
    assert!(!err.contains("deliberate panic"), "stderr: {err}");
    assert_eq!(err.matches("HOST-HOOK").count(), 1, "stderr: {err}");
}

#[test]
#[ignore = "a child process of panics_outside_raftlet_keep_the_default_hook"]
fn child_default_hook() {
    panic_inside_an_export();
    let r = std::panic::catch_unwind(|| panic!("the host's own panic"));
    assert!(r.is_err());
    println!("CHILD-DONE");
}

#[test]
fn panics_outside_raftlet_keep_the_default_hook() {
    let (ok, out, err) = run_child("child_default_hook");
    assert!(
        ok && out.contains("CHILD-DONE"),
        "stdout: {out}\nstderr: {err}"
    );
    assert!(err.contains("the host's own panic"), "stderr: {err}");
    assert!(err.contains("panicked"), "stderr: {err}");
    assert!(!err.contains("deliberate panic"), "stderr: {err}");
}

#[test]
fn a_ready_of_a_freed_node_is_refused_by_a_node_at_the_same_address() {
    // SAFETY: valid handles and out-pointers; the ready outlives its node,
    // which the header allows.
    unsafe {
        let f = Fixture::new();
        assert_eq!(raftlet_node_campaign(f.node), RAFTLET_OK);
        let mut rd = ptr::null_mut();
        assert_eq!(raftlet_node_ready(f.node, &mut rd), RAFTLET_OK);
        let old = f.node as usize;
        let storage = f.storage;
        // Free the node, keep its storage for the next ones.
        raftlet_node_free(f.node);
        std::mem::forget(f);
        let mut cfg = ptr::null_mut();
        assert_eq!(raftlet_config_new(1, &mut cfg), RAFTLET_OK);
        let mut nodes = Vec::new();
        let mut reused = 0;
        for _ in 0..16 {
            let mut n = ptr::null_mut();
            assert_eq!(raftlet_node_new(cfg, storage, &mut n), RAFTLET_OK);
            reused += usize::from(n as usize == old);
            let mut before = raftlet_status::default();
            assert_eq!(raftlet_node_status(n, &mut before), RAFTLET_OK);
            assert_eq!(raftlet_node_advance(n, rd), RAFTLET_ERR_READY_FOREIGN);
            assert_eq!(
                raftlet_node_advance_append(n, rd),
                RAFTLET_ERR_READY_FOREIGN
            );
            let mut after = raftlet_status::default();
            assert_eq!(raftlet_node_status(n, &mut after), RAFTLET_OK);
            assert_eq!(
                (before.term, before.vote, before.commit, before.role),
                (after.term, after.vote, after.commit, after.role)
            );
            nodes.push(n);
        }
        eprintln!("{reused} of 16 new nodes took the freed node's address");
        // The ready is still readable; a new node's own Ready loop works.
        let mut count = 99;
        assert_eq!(raftlet_ready_message_count(rd, &mut count), RAFTLET_OK);
        raftlet_ready_free(rd);
        let last = Fixture {
            storage,
            node: nodes.pop().unwrap(),
        };
        for n in nodes {
            raftlet_node_free(n);
        }
        raftlet_config_free(cfg);
        assert_eq!(raftlet_node_campaign(last.node), RAFTLET_OK);
        last.settle();
        let mut st = raftlet_status::default();
        assert_eq!(raftlet_node_status(last.node, &mut st), RAFTLET_OK);
        assert_eq!(st.role, 2);
    }
}

#[test]
fn the_batch_calls_refuse_a_poisoned_node_and_tick_the_others() {
    let bad = Fixture::new();
    let good = Fixture::new();
    // SAFETY: valid handles, arrays and out-pointers.
    unsafe {
        assert_eq!(raftlet_testing_panic(bad.node), RAFTLET_PANIC);
        let hb = [0x08u8, 8, 0x10, 1, 0x18, 1, 0x20, 9];
        let msgs = [raftlet_bytes {
            ptr: hb.as_ptr(),
            len: hb.len(),
        }];
        let mut res = [RAFTLET_OK];
        assert_eq!(
            raftlet_node_step_batch(bad.node, msgs.as_ptr(), 1, res.as_mut_ptr()),
            RAFTLET_PANIC
        );
        assert_eq!(res[0], RAFTLET_PANIC, "an unstepped message says why");
        assert_eq!(
            raftlet_node_propose_batch(bad.node, msgs.as_ptr(), 1),
            RAFTLET_PANIC
        );
        // The healthy node is ticked although the poisoned one comes first:
        // past its election timeout it campaigns, and has a ready.
        let nodes = [bad.node, good.node];
        let mut bits = [0xffu8];
        let mut saw = false;
        for _ in 0..100 {
            assert_eq!(
                raftlet_tick_many(nodes.as_ptr(), 2, bits.as_mut_ptr()),
                RAFTLET_PANIC
            );
            assert!(last_error().contains("poisoned"), "{}", last_error());
            assert_eq!(bits[0] & 1, 0, "a poisoned node never has a ready");
            if bits[0] & 2 != 0 {
                saw = true;
                break;
            }
        }
        assert!(saw, "the healthy node was not ticked into a campaign");
    }
}
