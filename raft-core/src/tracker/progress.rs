//! What the leader knows about one follower's log.

use std::fmt;

use super::{Inflights, ProgressState};

/// The leader's view of one follower (or learner): how far its log is known
/// to match, what to send next, and how sending is currently throttled.
///
/// Ported from etcd-io/raft tracker/progress.go (`Progress`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// The highest index known to match the leader's log.
    ///
    /// Invariant: `0 <= matched < next`.
    pub matched: u64,
    /// The index of the next entry to send. Entries in `(matched, next)` are
    /// already in flight.
    ///
    /// Invariant: `next >= 1`; in [`ProgressState::Snapshot`],
    /// `next == pending_snapshot + 1`.
    pub next: u64,
    /// The highest commit index sent to the follower (in flight or
    /// delivered). Mostly monotonic, but regresses when the follower is
    /// probed again or rejects an append.
    ///
    /// Invariant: in [`ProgressState::Snapshot`],
    /// `sent_commit == pending_snapshot == next - 1`.
    pub sent_commit: u64,
    /// How the leader currently replicates to the follower.
    pub state: ProgressState,
    /// In [`ProgressState::Snapshot`]: the leader's last index when it
    /// decided a snapshot was needed (the index of the `MsgSnap` it sent).
    ///
    /// Replication resumes when an append response reconnects the follower
    /// to the leader's log, whatever the index of the snapshot that actually
    /// got applied (hosts may deliver snapshots out of band). If that
    /// response is lost, reporting the snapshot as finished moves the
    /// follower back to probing from `pending_snapshot + 1`.
    ///
    /// Invariant: 0 outside [`ProgressState::Snapshot`].
    pub pending_snapshot: u64,
    /// Whether the follower was heard from recently (reset each election
    /// timeout by check-quorum; always true for the leader itself).
    pub recent_active: bool,
    /// Whether appends to the follower are throttled: in
    /// [`ProgressState::Probe`] after a probe was sent, in
    /// [`ProgressState::Replicate`] when the in-flight window is full. A
    /// heartbeat response clears it so that a probe can go out now and then.
    pub msg_app_flow_paused: bool,
    /// The appends in flight to the follower, which bound both the number of
    /// messages and the bytes the follower may be sent ahead of its acks.
    pub inflights: Inflights,
    /// Whether this progress tracks a learner.
    pub is_learner: bool,
    /// Consecutive check-quorum rounds in which the peer answered the
    /// leader (0 after a silent round), saturating.
    pub active_rounds: u16,
    /// Consecutive check-quorum rounds in which the peer was silent (0
    /// after a round it answered in), saturating.
    pub silent_rounds: u16,
}

impl Progress {
    /// A progress in [`ProgressState::Probe`] that will next send `next`,
    /// with nothing known to match, not recently active, and an in-flight
    /// window of `ins_size` messages and `max_bytes` bytes (0: unlimited).
    ///
    /// `next` should be at least 1.
    pub fn new(next: u64, ins_size: usize, max_bytes: u64) -> Progress {
        Progress {
            matched: 0,
            next,
            sent_commit: 0,
            state: ProgressState::Probe,
            pending_snapshot: 0,
            recent_active: false,
            msg_app_flow_paused: false,
            inflights: Inflights::new(ins_size, max_bytes),
            is_learner: false,
            active_rounds: 0,
            silent_rounds: 0,
        }
    }

    /// Switches to `state`, clearing the throttle, the pending snapshot and
    /// the in-flight window.
    ///
    /// Ported from etcd-io/raft tracker/progress.go (`ResetState`).
    pub fn reset_state(&mut self, state: ProgressState) {
        self.msg_app_flow_paused = false;
        self.pending_snapshot = 0;
        self.state = state;
        self.inflights.reset();
    }

    /// Starts probing the follower right after what is known to match. When
    /// leaving [`ProgressState::Snapshot`], the snapshot is taken as
    /// delivered: probing starts after it if that is further along.
    ///
    /// Ported from etcd-io/raft tracker/progress.go (`BecomeProbe`).
    pub fn become_probe(&mut self) {
        if self.state == ProgressState::Snapshot {
            let pending_snapshot = self.pending_snapshot;
            self.reset_state(ProgressState::Probe);
            self.next = (self.matched + 1).max(pending_snapshot + 1);
        } else {
            self.reset_state(ProgressState::Probe);
            self.next = self.matched + 1;
        }
        self.sent_commit = self.sent_commit.min(self.next - 1);
    }

    /// Starts streaming entries right after what is known to match.
    ///
    /// Ported from etcd-io/raft tracker/progress.go (`BecomeReplicate`).
    pub fn become_replicate(&mut self) {
        self.reset_state(ProgressState::Replicate);
        self.next = self.matched + 1;
    }

    /// Waits for a snapshot at index `snapshoti` to be applied by the
    /// follower.
    ///
    /// Ported from etcd-io/raft tracker/progress.go (`BecomeSnapshot`).
    pub fn become_snapshot(&mut self, snapshoti: u64) {
        self.reset_state(ProgressState::Snapshot);
        self.pending_snapshot = snapshoti;
        self.next = snapshoti + 1;
        self.sent_commit = snapshoti;
    }

    /// Records that an append with `entries` entries totalling `bytes`
    /// bytes of payload was sent.
    ///
    /// In [`ProgressState::Replicate`] the entries are in flight: `next`
    /// moves past them, and the flow pauses once the window is full. In
    /// [`ProgressState::Probe`] a non-empty append is a probe, which pauses
    /// the flow until a response or heartbeat response.
    ///
    /// # Panics
    /// In [`ProgressState::Snapshot`] (nothing is sent there), or when the
    /// in-flight window is already full in [`ProgressState::Replicate`]
    /// (callers check [`Progress::is_paused`] first), as etcd does.
    ///
    /// Ported from etcd-io/raft tracker/progress.go (`SentEntries`).
    pub fn sent_entries(&mut self, entries: usize, bytes: u64) {
        match self.state {
            ProgressState::Replicate => {
                if entries > 0 {
                    self.next += entries as u64;
                    self.inflights.add(self.next - 1, bytes);
                }
                // A message that fills the window (or one sent to a full
                // window) counts as a probe: the flow pauses.
                self.msg_app_flow_paused = self.inflights.full();
            }
            ProgressState::Probe => {
                // etcd pauses only for non-empty appends (kept for parity,
                // though every append in this state is a probe).
                if entries > 0 {
                    self.msg_app_flow_paused = true;
                }
            }
            ProgressState::Snapshot => {
                panic!("sending append in unhandled state {}", self.state)
            }
        }
    }

    /// Whether sending commit index `index` could move the follower's commit
    /// index: it is above what was already sent, and what was sent does not
    /// already cover everything up to `next - 1`.
    ///
    /// Ported from etcd-io/raft tracker/progress.go (`CanBumpCommit`).
    pub fn can_bump_commit(&self, index: u64) -> bool {
        // Wrapping like etcd's unsigned arithmetic should `next` ever be 0.
        index > self.sent_commit && self.sent_commit < self.next.wrapping_sub(1)
    }

    /// Records that commit index `commit` was sent to the follower.
    ///
    /// Ported from etcd-io/raft tracker/progress.go (`SentCommit`).
    pub fn sent_commit(&mut self, commit: u64) {
        self.sent_commit = commit;
    }

    /// Handles an acknowledgement of index `n`: returns false if it is stale
    /// (not above `matched`); otherwise raises `matched` (and `next` if
    /// needed) and lifts the throttle.
    ///
    /// Ported from etcd-io/raft tracker/progress.go (`MaybeUpdate`).
    pub fn maybe_update(&mut self, n: u64) -> bool {
        if n <= self.matched {
            return false;
        }
        self.matched = n;
        self.next = self.next.max(n + 1);
        self.msg_app_flow_paused = false;
        true
    }

    /// Handles the rejection of an append at index `rejected`, with the
    /// follower's hint that its log may match up to `match_hint`. Returns
    /// false if the rejection is stale; otherwise moves `next` back.
    ///
    /// In [`ProgressState::Replicate`] a rejection is stale when `rejected`
    /// is at or below `matched`, and `next` falls back to `matched + 1`.
    /// Otherwise only the rejection of the latest probe (`next - 1`) counts,
    /// and `next` becomes `min(rejected, match_hint + 1)`, but never
    /// `matched + 1` or lower; the throttle is lifted so the next probe goes
    /// out. Either way `sent_commit` is capped at `next - 1`, since the
    /// follower most likely did not apply it.
    ///
    /// Ported from etcd-io/raft tracker/progress.go (`MaybeDecrTo`).
    pub fn maybe_decr_to(&mut self, rejected: u64, match_hint: u64) -> bool {
        if self.state == ProgressState::Replicate {
            if rejected <= self.matched {
                return false;
            }
            self.next = self.matched + 1;
            self.sent_commit = self.sent_commit.min(self.next - 1);
            return true;
        }

        // Probes go out one at a time, so a rejection of anything but the
        // last one is stale (wrapping like etcd's unsigned arithmetic).
        if self.next.wrapping_sub(1) != rejected {
            return false;
        }
        self.next = rejected
            .min(match_hint.wrapping_add(1))
            .max(self.matched + 1);
        self.sent_commit = self.sent_commit.min(self.next - 1);
        self.msg_app_flow_paused = false;
        true
    }

    /// Whether appends to the follower should wait: always while a snapshot
    /// is pending, otherwise while the flow is throttled.
    ///
    /// Ported from etcd-io/raft tracker/progress.go (`IsPaused`).
    pub fn is_paused(&self) -> bool {
        match self.state {
            ProgressState::Probe | ProgressState::Replicate => self.msg_app_flow_paused,
            ProgressState::Snapshot => true,
        }
    }
}

impl fmt::Display for Progress {
    /// Formats as etcd does, e.g.
    /// `StateReplicate match=5 next=6 learner paused pendingSnap=3 inactive inflight=2[full]`
    /// (the optional parts only when they apply).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} match={} next={}",
            self.state, self.matched, self.next
        )?;
        if self.is_learner {
            f.write_str(" learner")?;
        }
        if self.is_paused() {
            f.write_str(" paused")?;
        }
        if self.pending_snapshot > 0 {
            write!(f, " pendingSnap={}", self.pending_snapshot)?;
        }
        if !self.recent_active {
            f.write_str(" inactive")?;
        }
        let n = self.inflights.count();
        if n > 0 {
            write!(f, " inflight={n}")?;
            if self.inflights.full() {
                f.write_str("[full]")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(state: ProgressState, matched: u64, next: u64) -> Progress {
        Progress {
            state,
            matched,
            ..Progress::new(next, 256, 0)
        }
    }

    /// etcd: TestProgressString
    #[test]
    fn test_progress_string() {
        let mut ins = Inflights::new(1, 0);
        ins.add(123, 1);
        let pr = Progress {
            matched: 1,
            next: 2,
            sent_commit: 0,
            state: ProgressState::Snapshot,
            pending_snapshot: 123,
            recent_active: false,
            msg_app_flow_paused: true,
            inflights: ins,
            is_learner: true,
            active_rounds: 0,
            silent_rounds: 0,
        };
        assert_eq!(
            pr.to_string(),
            "StateSnapshot match=1 next=2 learner paused pendingSnap=123 inactive inflight=1[full]"
        );
    }

    /// etcd: TestProgressIsPaused
    #[test]
    fn test_progress_is_paused() {
        let cases = [
            (ProgressState::Probe, false, false),
            (ProgressState::Probe, true, true),
            (ProgressState::Replicate, false, false),
            (ProgressState::Replicate, true, true),
            // A pending snapshot pauses regardless of the flag.
            (ProgressState::Snapshot, false, true),
            (ProgressState::Snapshot, true, true),
        ];
        for (i, &(state, paused, want)) in cases.iter().enumerate() {
            let mut p = progress(state, 0, 0);
            p.msg_app_flow_paused = paused;
            assert_eq!(p.is_paused(), want, "case {i}");
        }
    }

    /// etcd: TestProgressResume — both a probe rejection and an
    /// acknowledgement lift the throttle.
    #[test]
    fn test_progress_resume() {
        let mut p = progress(ProgressState::Probe, 0, 2);
        p.msg_app_flow_paused = true;
        p.maybe_decr_to(1, 1);
        assert!(!p.msg_app_flow_paused);
        p.msg_app_flow_paused = true;
        p.maybe_update(2);
        assert!(!p.msg_app_flow_paused);
    }

    /// etcd: TestProgressBecomeProbe
    #[test]
    fn test_progress_become_probe() {
        let matched = 1;
        let mut snapshot_done = progress(ProgressState::Snapshot, matched, 5);
        snapshot_done.pending_snapshot = 10;
        let snapshot_failed = progress(ProgressState::Snapshot, matched, 5);
        let cases = [
            // From replicate: probe right after the match.
            (progress(ProgressState::Replicate, matched, 5), 2),
            // Snapshot delivered: probe right after it.
            (snapshot_done, 11),
            // Snapshot aborted (no pending index): after the match.
            (snapshot_failed, 2),
        ];
        for (i, (mut p, want_next)) in cases.into_iter().enumerate() {
            p.become_probe();
            assert_eq!(p.state, ProgressState::Probe, "case {i}");
            assert_eq!(p.matched, matched, "case {i}");
            assert_eq!(p.next, want_next, "case {i}");
        }
    }

    /// etcd: TestProgressBecomeReplicate
    #[test]
    fn test_progress_become_replicate() {
        let mut p = progress(ProgressState::Probe, 1, 5);
        p.become_replicate();
        assert_eq!(p.state, ProgressState::Replicate);
        assert_eq!(p.matched, 1);
        assert_eq!(p.next, p.matched + 1);
    }

    /// etcd: TestProgressBecomeSnapshot
    #[test]
    fn test_progress_become_snapshot() {
        let mut p = progress(ProgressState::Probe, 1, 5);
        p.become_snapshot(10);
        assert_eq!(p.state, ProgressState::Snapshot);
        assert_eq!(p.matched, 1);
        assert_eq!(p.pending_snapshot, 10);
        assert_eq!((p.next, p.sent_commit), (11, 10));
    }

    /// etcd: TestProgressUpdate
    #[test]
    fn test_progress_update() {
        let (prev_m, prev_n) = (3, 5);
        let cases = [
            // Neither match nor next goes down.
            (prev_m - 1, prev_m, prev_n, false),
            // An equal match is stale; next stays.
            (prev_m, prev_m, prev_n, false),
            // Match goes up; next is already beyond it.
            (prev_m + 1, prev_m + 1, prev_n, true),
            // Match goes up and drags next along.
            (prev_m + 2, prev_m + 2, prev_n + 1, true),
        ];
        for (i, &(update, want_m, want_n, want_ok)) in cases.iter().enumerate() {
            let mut p = progress(ProgressState::Probe, prev_m, prev_n);
            assert_eq!(p.maybe_update(update), want_ok, "case {i}");
            assert_eq!(p.matched, want_m, "case {i}");
            assert_eq!(p.next, want_n, "case {i}");
        }
    }

    /// etcd: TestProgressMaybeDecr
    #[test]
    fn test_progress_maybe_decr() {
        use ProgressState::{Probe, Replicate};
        // (state, match, next, rejected, hint, accepted, want next)
        let cases = [
            // Replicate: a rejection at the match is stale.
            (Replicate, 5, 10, 5, 5, false, 10),
            // Replicate: a rejection below the match is stale.
            (Replicate, 5, 10, 4, 4, false, 10),
            // Replicate: a rejection above the match drops next to match+1.
            (Replicate, 5, 10, 9, 9, true, 6),
            // Probe: next-1 (wrapping) differs from rejected: stale.
            (Probe, 0, 0, 0, 0, false, 0),
            // Probe: rejection of an older probe: stale.
            (Probe, 0, 10, 5, 5, false, 10),
            // Probe: rejection of the last probe steps next back by one.
            (Probe, 0, 10, 9, 9, true, 9),
            // Same, down to 1.
            (Probe, 0, 2, 1, 1, true, 1),
            // next never drops below match+1 = 1.
            (Probe, 0, 1, 0, 0, true, 1),
            // The hint moves next to min(rejected, hint+1).
            (Probe, 0, 10, 9, 2, true, 3),
            // A zero hint moves next back to 1.
            (Probe, 0, 10, 9, 0, true, 1),
        ];
        for (i, &(state, m, n, rejected, hint, want, want_n)) in cases.iter().enumerate() {
            let mut p = progress(state, m, n);
            assert_eq!(p.maybe_decr_to(rejected, hint), want, "case {i}");
            assert_eq!(p.matched, m, "case {i}");
            assert_eq!(p.next, want_n, "case {i}");
        }
    }

    /// The commit-sending bookkeeping of etcd v3.6 (sentCommit).
    #[test]
    fn test_progress_sent_commit() {
        let mut p = progress(ProgressState::Replicate, 5, 6);
        assert!(p.can_bump_commit(3));
        p.sent_commit(5);
        // Everything up to next-1 = 5 was already sent.
        assert!(!p.can_bump_commit(7));
        p.sent_entries(2, 10);
        assert_eq!((p.next, p.inflights.count()), (8, 1));
        assert!(p.can_bump_commit(7) && !p.can_bump_commit(5));
        // A rejection regresses sent_commit to next-1.
        p.sent_commit(7);
        assert!(p.maybe_decr_to(7, 5));
        assert_eq!((p.next, p.sent_commit), (6, 5));
        // Probing after a snapshot starts past the snapshot.
        p.become_snapshot(20);
        p.become_probe();
        assert_eq!((p.next, p.sent_commit), (21, 20));
        // Probe: a non-empty append pauses, an empty one does not.
        p.sent_entries(0, 0);
        assert!(!p.is_paused());
        p.sent_entries(1, 1);
        assert!(p.is_paused());
    }

    /// Replicate pauses once the in-flight window fills up.
    #[test]
    fn test_progress_sent_entries_fills_window() {
        let mut p = Progress::new(1, 2, 0);
        p.become_replicate();
        p.sent_entries(1, 1);
        assert!(!p.is_paused());
        p.sent_entries(3, 1);
        assert!(p.is_paused());
        assert_eq!(p.next, 5);
        assert_eq!(
            p.to_string(),
            "StateReplicate match=0 next=5 paused inactive inflight=2[full]"
        );
        p.inflights.free_le(1);
        p.maybe_update(1);
        assert!(!p.is_paused());
    }
}
