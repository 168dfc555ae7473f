//! The fixed seed set run by `make sim-test` (part of `make test`): seeds
//! 1..=500 of the default mix, 1..=250 of the adversarial mix and 1..=250
//! of the churn mix must keep every invariant. A failure prints, per
//! failing seed, the command that replays it with a trace.
//!
//! Built without optimizations (as `cargo test --workspace` does), each
//! set runs only its first 1/50th, so the debug test suite stays quick;
//! `make sim-test` runs the full sets in release.

use raftlet_sim::{run_many, run_seed, Options, Profile};

/// How many seeds of a set to run in this build.
fn seeds(n: u64) -> u64 {
    if cfg!(debug_assertions) {
        (n / 50).max(2)
    } else {
        n
    }
}

fn check(profile: Profile, n: u64) {
    raftlet_sim::quiet_panics();
    let opts = Options {
        profile: Some(profile),
        ..Options::default()
    };
    let n = seeds(n);
    let s = run_many(1..n + 1, &opts, 1, false);
    let mut report = String::new();
    for r in &s.failures {
        let v = r.violation.as_ref().expect("failure");
        report.push_str(&format!(
            "seed {}: {}\n  reproduce: {}\n",
            r.seed,
            v.to_string().lines().next().unwrap_or_default(),
            opts.repro_command(r.seed)
        ));
    }
    println!(
        "{} seeds of profile {}: {} steps, {} faults, {} failures, recovery max {} ticks, {:.1}s",
        s.seeds,
        profile.name(),
        s.steps,
        s.stats.total_faults(),
        s.failures.len(),
        s.max_liveness_ticks,
        s.elapsed.as_secs_f64()
    );
    assert!(s.failures.is_empty(), "invariants broken:\n{report}");
    assert_eq!(s.seeds, n);
}

#[test]
fn mixed_seed_set_keeps_every_invariant() {
    check(Profile::Mixed, 500);
}

#[test]
fn adversarial_seed_set_keeps_every_invariant() {
    check(Profile::Adversarial, 250);
}

#[test]
fn churn_seed_set_keeps_every_invariant() {
    check(Profile::Churn, 250);
}

#[test]
fn calm_seed_set_keeps_every_invariant() {
    check(Profile::Calm, 50);
}

/// A run is a pure function of its seed: the same seed gives the same
/// steps and the same counters, and another seed does not.
#[test]
fn runs_are_deterministic() {
    let opts = Options::default();
    let (a, b, c) = (
        run_seed(42, &opts),
        run_seed(42, &opts),
        run_seed(43, &opts),
    );
    assert_eq!(a.steps, b.steps);
    assert_eq!(a.stats, b.stats);
    assert_eq!(a.liveness_ticks, b.liveness_ticks);
    assert_ne!(a.stats, c.stats);
}

/// The replay line names the seed and every non-default option.
#[test]
fn repro_command_names_the_options() {
    let opts = Options {
        profile: Some(Profile::Churn),
        ..Options::default()
    };
    assert_eq!(
        opts.repro_command(12345),
        "cargo run --release -p raftlet-sim -- --seed 12345 --profile churn --trace"
    );
}
