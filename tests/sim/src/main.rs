//! `raftlet-sim`: run the deterministic cluster simulator.
//!
//! ```text
//! raftlet-sim --seed N [--trace]              one seed (with a per-step trace)
//! raftlet-sim --seeds N [--start S] [--threads T]   seeds S..S+N, summary at the end
//! options: --profile mixed|adversarial|churn|calm|durability|learners|disk  --bug NAME  --ticks N (fault phase length)
//!          --host disciplined|pipelined  --lease on|off  --storage memory|disk  --quiesce on|off  --light on|off   (override the seed's draw)
//!          --no-contract-check   (see what breaking the Ready contract leads to)
//!          --strict-local-reads  (weak reads without the snapshot exception, see the README)
//! ```
//!
//! Exits 1 when any seed breaks an invariant, after printing one replay
//! command per failing seed.

use std::process::ExitCode;

use raftlet_sim::{params, run_many, run_seed, Bug, HostKind, Options, Profile, StorageKind};

fn usage() -> ! {
    eprintln!(
        "usage: raftlet-sim (--seed N [--trace] | --seeds N [--start S] [--threads T])\n\
         \x20                  [--profile mixed|adversarial|churn|calm|durability|learners|disk] [--bug NAME] [--ticks N]
         \x20                  [--host disciplined|pipelined] [--lease on|off] [--storage memory|disk] [--quiesce on|off] [--light on|off]
         \x20                  [--no-contract-check] [--strict-local-reads]
         bugs (need --features bug-injection): {}",
        Bug::ALL.map(Bug::name).join(", ")
    );
    std::process::exit(2)
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut opts = Options::default();
    let (mut seed, mut count, mut start, mut threads) = (None, None, 1u64, 2usize);
    let num =
        |v: Option<String>| -> u64 { v.and_then(|s| s.parse().ok()).unwrap_or_else(|| usage()) };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--seed" => seed = Some(num(args.next())),
            "--seeds" => count = Some(num(args.next())),
            "--start" => start = num(args.next()),
            "--threads" => threads = num(args.next()) as usize,
            "--trace" => opts.trace = true,
            "--no-contract-check" => opts.no_contract_check = true,
            "--strict-local-reads" => opts.strict_local_reads = true,
            "--ticks" => opts.chaos_ticks = Some(num(args.next())),
            "--profile" => {
                opts.profile = Some(
                    args.next()
                        .and_then(|s| Profile::from_name(&s))
                        .unwrap_or_else(|| usage()),
                )
            }
            "--host" => {
                opts.host = Some(
                    args.next()
                        .and_then(|s| HostKind::from_name(&s))
                        .unwrap_or_else(|| usage()),
                )
            }
            "--storage" => {
                opts.storage = Some(
                    args.next()
                        .and_then(|s| StorageKind::from_name(&s))
                        .unwrap_or_else(|| usage()),
                )
            }
            "--lease" => {
                opts.lease_reads = Some(match args.next().as_deref() {
                    Some("on") => true,
                    Some("off") => false,
                    _ => usage(),
                })
            }
            "--light" => {
                opts.light = Some(match args.next().as_deref() {
                    Some("on") => true,
                    Some("off") => false,
                    _ => usage(),
                })
            }
            "--quiesce" => {
                opts.quiesce = Some(match args.next().as_deref() {
                    Some("on") => true,
                    Some("off") => false,
                    _ => usage(),
                })
            }
            "--bug" => {
                opts.bug = Some(
                    args.next()
                        .and_then(|s| Bug::from_name(&s))
                        .unwrap_or_else(|| usage()),
                )
            }
            _ => usage(),
        }
    }
    if opts.bug.is_some() && !raftlet_sim::CAN_PLANT_BUGS {
        eprintln!("--bug needs a build with --features bug-injection");
        return ExitCode::from(2);
    }
    raftlet_sim::quiet_panics();
    if let Some(seed) = seed {
        let r = run_seed(seed, &opts);
        println!(
            "seed {seed}: {} voters, {} steps, {} faults, recovery {} ticks: {}",
            r.nodes,
            r.steps,
            r.stats.total_faults(),
            r.liveness_ticks.map_or("-".into(), |t| t.to_string()),
            r.violation
                .as_ref()
                .map_or("ok".into(), |v| format!("VIOLATION {v}"))
        );
        if r.violation.is_some() {
            println!("reproduce: {}", opts.repro_command(seed));
            return ExitCode::FAILURE;
        }
        return ExitCode::SUCCESS;
    }
    let Some(count) = count else { usage() };
    opts.trace = false;
    println!(
        "raftlet-sim: seeds {start}..{} (profile {}), {threads} threads",
        start + count,
        opts.profile().name()
    );
    let s = run_many(start..start + count, &opts, threads, false);
    for r in &s.failures {
        let v = r.violation.as_ref().expect("failure");
        println!(
            "FAIL seed {}: {}",
            r.seed,
            v.to_string().lines().next().unwrap_or("")
        );
        println!("  reproduce: {}", opts.repro_command(r.seed));
    }
    println!("{}", s.stats.describe().trim_end());
    let op = |k: &str| s.stats.ops.get(k).copied().unwrap_or(0);
    println!(
        "pipelined hosts: {} Readies taken with writes in flight, at most {} in flight; {} crashes \
         lost {} writes not yet durable ({} torn: a prefix landed)",
        op("readies-taken-with-writes-in-flight"),
        s.stats.maxima.get("readies-in-flight").copied().unwrap_or(0),
        op("crashes-with-lost-writes"),
        op("writes-lost-in-crashes"),
        op("torn-writes")
    );
    if op("disk-seeds") > 0 {
        println!(
            "disk storage: {} seeds; {} crashes cut the power ({} torn, {} losing every unsynced write), \
             {} restarts reopened the store; filesystem: {} writes ({} of them direct), {} syncs, {} directory syncs, \
             of the unsynced writes at a crash {} lost whole, {} torn and {} kept; \
             records of Readies with 256 KiB of entries or more: {} (over 2 MiB: {})",
            op("disk-seeds"),
            op("disk-fs-crashes"),
            op("disk-crashes-torn"),
            op("disk-crashes-lose-unsynced"),
            op("disk-reopens"),
            op("disk-fs-writes"),
            op("disk-fs-direct-writes"),
            op("disk-fs-syncs"),
            op("disk-fs-dir-syncs"),
            op("disk-fs-writes-lost"),
            op("disk-fs-writes-torn"),
            op("disk-fs-writes-kept"),
            op("disk-records-over-256k"),
            op("disk-records-over-2m")
        );
    }
    println!(
        "cluster sizes: {}",
        s.by_size
            .iter()
            .map(|(n, c)| format!("{n} voters: {c}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let bound = params::LIVENESS_BOUND_ELECTIONS * params::ELECTION_TICK as u64;
    println!(
        "recovery after the faults stop (a probe applied by every running member): max {} ticks, \
         mean {:.1} ticks (bounds per seed: committed within {bound} ticks, {} in churn, without pre-vote \
         and with throttled pipelined hosts, each election timeout lengthened by {} write latencies on \
         pipelined hosts, plus the backlog's replication time where flow control is throttled; applied \
         everywhere within {}x that)",
        s.max_liveness_ticks,
        s.sum_liveness_ticks as f64 / (s.seeds - s.failures.len() as u64).max(1) as f64,
        params::CHURN_LIVENESS_BOUND_ELECTIONS * params::ELECTION_TICK as u64,
        params::WRITES_PER_ELECTION,
        params::CATCH_UP_FACTOR
    );
    println!(
        "seeds: {}  failed: {}  steps: {}  faults: {}  elapsed: {:.1}s",
        s.seeds,
        s.failures.len(),
        s.steps,
        s.stats.total_faults(),
        s.elapsed.as_secs_f64()
    );
    if s.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
