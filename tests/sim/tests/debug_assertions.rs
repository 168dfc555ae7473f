//! Part of the fixed seed set, built with debug assertions on: the core's
//! internal consistency checks (`debug_assert!`) and overflow checks run on
//! every step of 100 mixed, 100 adversarial, 50 churn, 50 durability and
//! 50 disk seeds (the store's own too), with both host kinds. `make sim-test` runs it in the `sim-assert`
//! profile (optimized, debug assertions on), where it takes seconds; an
//! unoptimized build runs a tenth of it. Release builds, without debug
//! assertions, have nothing to run here.
#![cfg(debug_assertions)]

use raftlet_sim::{run_many, HostKind, Options, Params, Profile};

#[test]
fn seed_sets_with_debug_assertions_keep_every_invariant() {
    raftlet_sim::quiet_panics();
    let scale = if cfg!(sim_optimized) { 1 } else { 10 };
    let mut report = String::new();
    let mut hosts = [0u64; 2];
    for (profile, n) in [
        (Profile::Mixed, 100),
        (Profile::Adversarial, 100),
        (Profile::Churn, 50),
        (Profile::Durability, 50),
        (Profile::Disk, 50),
    ] {
        let opts = Options {
            profile: Some(profile),
            ..Options::default()
        };
        let n = (n / scale).max(2);
        for seed in 1..=n {
            match Params::draw(seed, &opts).host {
                HostKind::Disciplined => hosts[0] += 1,
                HostKind::Pipelined => hosts[1] += 1,
            }
        }
        let s = run_many(1..n + 1, &opts, 1, false);
        assert_eq!(s.seeds, n);
        for r in &s.failures {
            let v = r.violation.as_ref().expect("failure");
            report.push_str(&format!(
                "seed {} ({}): {}\n  reproduce: {}\n",
                r.seed,
                profile.name(),
                v.to_string().lines().next().unwrap_or_default(),
                opts.repro_command(r.seed)
            ));
        }
    }
    assert!(report.is_empty(), "invariants broken:\n{report}");
    assert!(
        hosts[0] > 0 && hosts[1] > 0,
        "both host kinds ran: {hosts:?}"
    );
}
