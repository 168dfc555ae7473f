//! Each invariant fires: with one of raftlet's planted bugs (feature
//! `bug-injection`, forwarded by this crate's feature of the same name),
//! the simulator catches the bug within the fixed seed set, and the
//! invariant it reports is the one the bug breaks. The seed that catches
//! it passes without the bug, so the bug (not the scenario) is the cause.
//!
//! Run with `cargo test --release -p raftlet-sim --features bug-injection
//! --test invariants_fire` (part of `make sim-test`).

use raftlet_sim::{run_seed, Bug, Invariant, Options, Profile};

/// The fixed seed set's size: every bug must be caught within it.
const SEEDS: u64 = 500;

/// Runs seeds 1..=SEEDS with `bug` planted until one breaks `invariant`;
/// returns that seed.
fn first_catch(bug: Bug, profile: Profile, invariant: Invariant) -> u64 {
    raftlet_sim::quiet_panics();
    let opts = Options {
        profile: Some(profile),
        bug: Some(bug),
        ..Options::default()
    };
    let mut others = Vec::new();
    for seed in 1..=SEEDS {
        let r = run_seed(seed, &opts);
        match r.violation {
            Some(v) if v.invariant == invariant => {
                println!(
                    "{} caught by seed {seed} (profile {}): {}\n  replay: {}",
                    bug.name(),
                    profile.name(),
                    v.to_string().lines().next().unwrap_or_default(),
                    opts.repro_command(seed)
                );
                let clean = run_seed(
                    seed,
                    &Options {
                        bug: None,
                        ..opts.clone()
                    },
                );
                assert!(
                    clean.violation.is_none(),
                    "seed {seed} fails without the bug too: {:?}",
                    clean.violation
                );
                return seed;
            }
            Some(v) => others.push((seed, v.invariant)),
            None => {}
        }
    }
    panic!(
        "{} was never caught as {} in {SEEDS} seeds (other violations: {others:?})",
        bug.name(),
        invariant.name()
    );
}

#[test]
fn learner_counted_in_quorum_is_caught_by_the_voter_quorum_check() {
    first_catch(
        Bug::LearnerCountsInQuorum,
        Profile::Mixed,
        Invariant::CommitWithoutVoterQuorum,
    );
}

#[test]
fn committing_an_old_term_by_counting_is_caught_as_a_changed_commit() {
    // Figure 8 of the Raft paper needs a leader to die right after it
    // replicated an entry of an earlier term to a majority but before its
    // own entry got there: the churn mix makes that common enough.
    first_catch(
        Bug::CommitOldTermByCounting,
        Profile::Churn,
        Invariant::CommittedChanged,
    );
}

#[test]
fn voting_without_comparing_logs_is_caught_as_a_changed_commit() {
    first_catch(
        Bug::VoteIgnoresLog,
        Profile::Mixed,
        Invariant::CommittedChanged,
    );
}

#[test]
fn reading_without_a_quorum_is_caught_as_a_stale_read() {
    first_catch(Bug::ReadWithoutQuorum, Profile::Mixed, Invariant::StaleRead);
}

#[test]
fn voting_twice_in_a_term_is_caught_as_two_leaders() {
    first_catch(Bug::VoteTwice, Profile::Mixed, Invariant::LeaderPerTerm);
}

#[test]
fn appending_after_a_mismatched_entry_is_caught_by_log_matching() {
    first_catch(
        Bug::AppendIgnoresPrevTerm,
        Profile::Mixed,
        Invariant::LogMatching,
    );
}

#[test]
fn a_campaigning_learner_is_caught() {
    first_catch(
        Bug::LearnerCampaigns,
        Profile::Mixed,
        Invariant::LearnerCampaigned,
    );
}

#[test]
fn a_cluster_that_never_elects_is_caught_by_the_liveness_bound() {
    first_catch(Bug::NoElectionTimeout, Profile::Mixed, Invariant::Liveness);
}

#[test]
fn entries_handed_out_twice_are_caught_by_the_applied_sequence_check() {
    first_catch(
        Bug::ReapplyCommitted,
        Profile::Mixed,
        Invariant::AppliedPrefix,
    );
}

#[test]
fn restoring_a_snapshot_under_unapplied_conf_changes_is_caught_by_config_agreement() {
    first_catch(
        Bug::RestoreWhileApplying,
        Profile::Mixed,
        Invariant::ConfigAgreement,
    );
}

#[test]
fn a_leader_counting_its_own_append_early_is_caught_by_the_voter_quorum_check() {
    // The pipelined host makes the leader's write slow: the leader commits
    // with its own acknowledgement counted while its disk lacks the entry.
    first_catch(
        Bug::SelfAckEarly,
        Profile::Mixed,
        Invariant::CommitWithoutVoterQuorum,
    );
}

/// Vote requests sent before the candidate's term and vote are durable:
/// the host sees a MsgVote among the messages that may leave at once while
/// the term it has acknowledged durable is an older one.
///
#[test]
fn vote_requests_sent_before_the_term_is_durable_are_caught_by_the_ready_contract_check() {
    first_catch(
        Bug::VoteRequestEarly,
        Profile::Mixed,
        Invariant::ReadyContract,
    );
}

/// A leader that promotes learners whatever their lag (automatic promotion
/// on about a third of the mixed seeds): the promoted learner was further
/// behind than `promote_max_lag` when the leader proposed it.
#[test]
fn a_promotion_that_ignores_the_lag_is_caught_by_the_promotion_threshold_check() {
    first_catch(
        Bug::PromoteIgnoresLag,
        Profile::Mixed,
        Invariant::PromotionThreshold,
    );
}

/// A store whose log syncs return success without syncing: a crash loses
/// writes the host was told were durable, which the restarted node's
/// reopened store is found to lack.
#[test]
fn a_store_that_skips_the_sync_is_caught_when_the_node_restarts() {
    first_catch(
        Bug::DiskSkipSync,
        Profile::Disk,
        Invariant::DurableWriteLost,
    );
}

/// A store that creates a segment without syncing its directory: a crash
/// before the directory is next synced loses the segment's name and every
/// record in it (small segments make the log switch often; on seeds with
/// `rewrite_max_bytes` 0 nothing else syncs the directory meanwhile).
#[test]
fn a_store_that_skips_the_directory_sync_of_a_new_segment_is_caught() {
    first_catch(
        Bug::DiskSkipDirSync,
        Profile::Disk,
        Invariant::DurableWriteLost,
    );
}

/// A quiesced follower that sleeps on when its host reports the leader's
/// node silent: with quiescence on, a follower of a crashed or cut-off
/// quiesced leader never campaigns in time.
#[test]
fn a_quiesced_follower_that_never_wakes_is_caught_by_the_election_delay_check() {
    raftlet_sim::quiet_panics();
    let opts = Options {
        quiesce: Some(true),
        bug: Some(Bug::QuiescedNeverWakes),
        ..Options::default()
    };
    let seed = (1..=SEEDS)
        .find(|&s| {
            run_seed(s, &opts)
                .violation
                .is_some_and(|v| v.invariant == Invariant::ElectionDelayed)
        })
        .expect("quiesced_never_wakes never caught as election-delayed");
    println!(
        "quiesced_never_wakes caught by seed {seed}\n  replay: {}",
        opts.repro_command(seed)
    );
    let clean = run_seed(
        seed,
        &Options {
            bug: None,
            ..opts.clone()
        },
    );
    assert!(clean.violation.is_none(), "{:?}", clean.violation);
}

/// A light Ready (`advance_light`) that hands entries out without taking
/// them as being applied: the next Ready hands them out again, and the
/// host applies them twice.
#[test]
fn a_light_ready_handing_entries_out_twice_is_caught_by_the_applied_sequence_check() {
    first_catch(
        Bug::LightSkipsApplying,
        Profile::Mixed,
        Invariant::AppliedPrefix,
    );
}

/// Every planted bug has a test above.
#[test]
fn every_bug_is_covered() {
    assert_eq!(Bug::ALL.len(), 17);
}
