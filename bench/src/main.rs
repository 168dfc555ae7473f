//! raftlet-bench: raftlet and raft-rs side by side through the same
//! workload code (DESIGN §8). One run prints one JSON line:
//!
//! ```text
//! raftlet-bench <workload> <impl> [key=value ...]
//! ```
//!
//! workloads: b1, b3, b4, b5, b6, b7, c1; impl: raftlet, raftlet-nocoalesce
//! (etcd's one append per proposal), raftlet-noquiesce (b7), raftlet-zerocopy (received payloads
//! share the receive buffer instead of being copied out), raft-rs (printed
//! as raft-rs-prost or raft-rs-protobuf: the codec this binary was built
//! with, see Cargo.toml). Every implementation proposes a fresh copy of the
//! payload per entry and copies payloads out when decoding, except the
//! zero-copy rows. Keys (defaults in
//! parentheses): total (500000), batch (256), size (128), one (0: separate
//! proposals; 1: one proposal message per round), compact (100000), ops
//! (200000), groups (10000), rounds, per (reads per round), zerocopy,
//! active (b7: groups with a proposal per round, 100).

mod alloc;
mod b7;
mod codec;
mod node;
mod rl;
mod rr;
mod workloads;

use std::collections::HashMap;

use node::{BenchNode, Opts};
use workloads::Metrics;

#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

struct Args(HashMap<String, String>);

impl Args {
    fn u(&self, k: &str, d: u64) -> u64 {
        self.0.get(k).map(|v| v.parse().expect(k)).unwrap_or(d)
    }
}

fn run<N: BenchNode>(w: &str, opts: &Opts, a: &Args) -> Metrics {
    match w {
        "b1" => {
            let size = a.u("size", 128) as usize;
            // Compact every 100k entries, or every 256 MiB of payload for
            // large entries (so 16 KiB rows do not hold GiBs per node).
            let every = a.u("compact", (100_000u64).min((256 << 20) / size as u64));
            workloads::b1::<N>(
                opts,
                a.u("total", 500_000),
                a.u("batch", 256) as usize,
                size,
                a.u("one", 0) == 1,
                every,
            )
        }
        "b3" => workloads::b3::<N>(opts, a.u("ops", 200_000), a.u("size", 128) as usize),
        "b4" => workloads::b4::<N>(
            opts,
            a.u("groups", 10_000) as usize,
            a.u("rounds", 9) as usize,
        ),
        "b7" => b7::plain::<N>(
            opts,
            a.u("groups", 10_000) as usize,
            a.u("active", 100) as usize,
            a.u("rounds", 200) as usize,
        ),
        "b5" => workloads::b5::<N>(opts, a.u("rounds", 20_000), a.u("per", 1)),
        "b6" => workloads::b6::<N>(
            opts,
            a.u("total", 100_000),
            a.u("compact", 90_000),
            a.u("size", 128) as usize,
            a.u("lag", 1000),
        ),
        _ => panic!("unknown workload {w}"),
    }
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some("sizes") {
        // The in-memory sizes of the types the hot paths move around.
        println!(
            "{{\"raftlet\":{{\"Message\":{},\"Entry\":{},\"Ready\":{},\"RawNode\":{},\"Snapshot\":{}}},\"raft-rs\":{{\"Message\":{},\"Entry\":{},\"RawNode\":{}}}}}",
            std::mem::size_of::<raftlet::pb::Message>(),
            std::mem::size_of::<raftlet::pb::Entry>(),
            std::mem::size_of::<raftlet::Ready>(),
            std::mem::size_of::<raftlet::RawNode<raftlet::MemoryStorage>>(),
            std::mem::size_of::<raftlet::pb::Snapshot>(),
            std::mem::size_of::<raft::eraftpb::Message>(),
            std::mem::size_of::<raft::eraftpb::Entry>(),
            std::mem::size_of::<raft::RawNode<raft::storage::MemStorage>>(),
        );
        return;
    }
    if argv.len() < 2 {
        eprintln!("usage: raftlet-bench <b1|b3|b4|b5|b6|b7|c1> <raftlet|raftlet-nocoalesce|raftlet-noquiesce|raftlet-zerocopy|raft-rs> [key=value ...]");
        std::process::exit(2);
    }
    let w = argv[0].as_str();
    let imp = match argv[1].as_str() {
        "raft-rs" => rr::IMPL,
        other => other,
    };
    let args = Args(
        argv[2..]
            .iter()
            .map(|kv| {
                let (k, v) = kv.split_once('=').expect("key=value");
                (k.to_string(), v.to_string())
            })
            .collect(),
    );
    let mut opts = Opts::default();
    let metrics = match (w, imp) {
        ("c1", "raftlet") => codec::raftlet(args.u("ops", 200_000), args.u("zerocopy", 0) == 1),
        ("c1", rr::IMPL) => codec::raftrs(args.u("ops", 200_000), args.u("zerocopy", 0) == 1),
        ("b7", "raftlet") => b7::quiesced(
            &opts,
            args.u("groups", 10_000) as usize,
            args.u("active", 100) as usize,
            args.u("rounds", 200) as usize,
        ),
        ("b7", "raftlet-noquiesce") => run::<rl::Raftlet>(w, &opts, &args),
        (_, "raftlet") => run::<rl::Raftlet>(w, &opts, &args),
        (_, "raftlet-nocoalesce") => {
            opts.coalesce = false;
            run::<rl::Raftlet>(w, &opts, &args)
        }
        (_, "raftlet-zerocopy") => {
            opts.zero_copy = true;
            run::<rl::Raftlet>(w, &opts, &args)
        }
        (_, rr::IMPL) => run::<rr::RaftRs>(w, &opts, &args),
        _ => panic!("unknown implementation {imp}"),
    };
    let params: Vec<String> = args
        .0
        .iter()
        .map(|(k, v)| format!("\"{k}\":\"{v}\""))
        .collect();
    let ms: Vec<String> = metrics
        .iter()
        .map(|(k, v)| {
            format!(
                "\"{k}\":{}",
                if v.is_finite() {
                    format!("{v:.4}")
                } else {
                    "null".into()
                }
            )
        })
        .collect();
    println!(
        "{{\"workload\":\"{w}\",\"impl\":\"{imp}\",\"params\":{{{}}},\"metrics\":{{{}}}}}",
        params.join(","),
        ms.join(",")
    );
}
