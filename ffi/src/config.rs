//! `raftlet_config`: the parameters of a node (see raftlet::Config).

use raftlet_core::{Config, ReadOnlyOption};

use crate::result::{code, fail, raftlet_result, raftlet_result::*};

/// An opaque node configuration. Created by raftlet_config_new, released
/// by raftlet_config_free. Not synchronised: do not mutate one config from
/// two threads at once.
pub struct raftlet_config {
    pub(crate) inner: Config,
}

/// Creates a configuration for node `id` with the defaults (election_tick
/// 10, heartbeat_tick 1, pre-vote and check-quorum on, ...). On success
/// `*config_out` owns a new handle; release it with raftlet_config_free.
/// Returns RAFTLET_ERR_NULL_ARG when `config_out` is NULL.
#[no_mangle]
pub unsafe extern "C" fn raftlet_config_new(
    id: u64,
    config_out: *mut *mut raftlet_config,
) -> raftlet_result {
    ffi_boundary!({
        check_null!(config_out);
        let b = Box::new(raftlet_config {
            inner: Config::new(id),
        });
        // SAFETY: config_out is non-null and points to writable storage.
        unsafe { *config_out = Box::into_raw(b) };
        RAFTLET_OK
    })
}

/// Releases a configuration. NULL is a no-op. The handle must not be used
/// afterwards.
#[no_mangle]
pub unsafe extern "C" fn raftlet_config_free(config: *mut raftlet_config) {
    if config.is_null() {
        return;
    }
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the pointer came from raftlet_config_new and is freed once.
        drop(unsafe { Box::from_raw(config) });
    }));
}

/// Checks the configuration (raftlet::Config::validate). Returns RAFTLET_OK,
/// RAFTLET_ERR_CONFIG_INVALID (the last error message names the field) or
/// RAFTLET_ERR_NULL_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_config_validate(config: *const raftlet_config) -> raftlet_result {
    ffi_boundary!({
        check_null!(config);
        // SAFETY: non-null handle from raftlet_config_new.
        let c = unsafe { &*config };
        code(&c.inner.validate())
    })
}

macro_rules! setter {
    ($(#[$doc:meta])* $fname:ident, $field:ident, $ty:ty, $conv:expr) => {
        $(#[$doc])*
        ///
        /// Returns RAFTLET_OK or RAFTLET_ERR_NULL_ARG (and
        /// RAFTLET_ERR_INVALID_ARG for values that do not fit). Values are
        /// checked as a whole by raftlet_config_validate / raftlet_node_new.
        #[no_mangle]
        pub unsafe extern "C" fn $fname(config: *mut raftlet_config, value: $ty) -> raftlet_result {
            ffi_boundary!({
                check_null!(config);
                // SAFETY: non-null handle from raftlet_config_new.
                let c = unsafe { &mut *config };
                #[allow(clippy::redundant_closure_call, reason = "macro-supplied conversion")]
                match ($conv)(value) {
                    Some(v) => {
                        c.inner.$field = v;
                        RAFTLET_OK
                    }
                    None => fail(
                        RAFTLET_ERR_INVALID_ARG,
                        concat!("value out of range for ", stringify!($field)),
                    ),
                }
            })
        }
    };
}

fn same<T>(v: T) -> Option<T> {
    Some(v)
}

fn to_usize(v: u64) -> Option<usize> {
    usize::try_from(v).ok()
}

setter!(
    /// Sets the election timeout in ticks (default 10).
    raftlet_config_set_election_tick, election_tick, u64, to_usize);
setter!(
    /// Sets the heartbeat interval in ticks (default 1).
    raftlet_config_set_heartbeat_tick, heartbeat_tick, u64, to_usize);
setter!(
    /// Sets the last applied index to restart from (default 0).
    raftlet_config_set_applied, applied, u64, same);
setter!(
    /// Sets the most bytes of entries per append message (default 1 MiB).
    raftlet_config_set_max_size_per_msg, max_size_per_msg, u64, same);
setter!(
    /// Sets the most bytes of committed entries per Ready (0 = max_size_per_msg).
    raftlet_config_set_max_committed_size_per_ready, max_committed_size_per_ready, u64, same);
setter!(
    /// Sets the uncommitted payload budget of the leader (0 = unlimited).
    raftlet_config_set_max_uncommitted_entries_size, max_uncommitted_entries_size, u64, same);
setter!(
    /// Sets the most append messages in flight per peer (default 256).
    raftlet_config_set_max_inflight_msgs, max_inflight_msgs, u64, to_usize);
setter!(
    /// Sets the most bytes in flight per peer (0 = unlimited).
    raftlet_config_set_max_inflight_bytes, max_inflight_bytes, u64, same);
setter!(
    /// Turns check-quorum on or off (default on).
    raftlet_config_set_check_quorum, check_quorum, bool, same);
setter!(
    /// Turns pre-vote on or off (default on).
    raftlet_config_set_pre_vote, pre_vote, bool, same);
setter!(
/// Sets how reads are served: 0 = safe (heartbeat round), 1 = lease-based
/// (requires check-quorum). Other values give RAFTLET_ERR_INVALID_ARG.
raftlet_config_set_read_only_option, read_only_option, u32, |v: u32| match v {
    0 => Some(ReadOnlyOption::Safe),
    1 => Some(ReadOnlyOption::LeaseBased),
    _ => None,
});
setter!(
    /// Makes followers drop proposals instead of forwarding them (default off).
    raftlet_config_set_disable_proposal_forwarding, disable_proposal_forwarding, bool, same);
setter!(
    /// Skips etcd's propose-time checks of conf changes (default off).
    raftlet_config_set_disable_conf_change_validation, disable_conf_change_validation, bool, same);
setter!(
    /// Makes a removed or demoted leader step down (default on).
    raftlet_config_set_step_down_on_removal, step_down_on_removal, bool, same);
setter!(
    /// Sets how far (in entries) a learner may lag and still be promoted (default 1000).
    raftlet_config_set_promote_max_lag, promote_max_lag, u64, same);
setter!(
    /// Sets the most learners the configuration may hold (default 1).
    raftlet_config_set_max_learners, max_learners, u64, to_usize);
setter!(
    /// Sets the seed of the election-timeout RNG (0 = derived from the id).
    raftlet_config_set_seed, seed, u64, same);
setter!(
    /// Coalesces the appends of proposals made between two readies into one
    /// message per peer (default on); off sends one per proposal, as etcd.
    raftlet_config_set_coalesce_appends, coalesce_appends, bool, same);
