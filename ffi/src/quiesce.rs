//! Quiescence through the C ABI (raftlet::Config::quiesce,
//! RawNode::is_quiesced, wake, wake_leader_lost; docs/architecture.md,
//! "Quiescence").

use crate::config::raftlet_config;
use crate::node::{raftlet_node, with_node};
use crate::result::{raftlet_result, raftlet_result::*};

/// Lets an idle group quiesce (default off): once everything is committed,
/// applied and acknowledged by every peer, the leader asks its followers
/// to sleep with a heartbeat whose context marks it; a quiesced node
/// ignores raftlet_node_tick until a message, a proposal or a read wakes
/// it, or the host calls raftlet_node_wake_leader_lost. With a peer that
/// does not quiesce (an etcd node) the group never quiesces.
/// Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_config_set_quiesce(
    config: *mut raftlet_config,
    value: bool,
) -> raftlet_result {
    // SAFETY: the caller's handle contract is set_field's.
    unsafe { crate::config::set_field(config, "quiesce", Some(value), |c, v| c.quiesce = v) }
}

/// Writes whether the node is quiesced (it ignores ticks until woken).
/// Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_is_quiesced(
    node: *const raftlet_node,
    quiesced_out: *mut bool,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(quiesced_out);
        with_node(node, |n| {
            // SAFETY: non-null output pointer.
            unsafe { *quiesced_out = n.is_quiesced() };
            RAFTLET_OK
        })
    })
}

/// Wakes a quiesced node (a no-op on a node that is awake).
/// Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_wake(node: *mut raftlet_node) -> raftlet_result {
    ffi_boundary!({
        with_node(node, |n| {
            n.wake();
            RAFTLET_OK
        })
    })
}

/// Tells a follower that the host has heard nothing from the leader's
/// node (no message, no node-level heartbeat) for at least an election
/// timeout of this node's ticks: it wakes and campaigns within one more
/// election timeout. Call it for every follower of that leader, asleep or
/// awake; never while the leader's node is heard from (under lease-based
/// reads the follower could then vote inside the leader's lease).
/// Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_node_wake_leader_lost(node: *mut raftlet_node) -> raftlet_result {
    ffi_boundary!({
        with_node(node, |n| {
            n.wake_leader_lost();
            RAFTLET_OK
        })
    })
}
