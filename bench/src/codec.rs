//! C1: encode + decode of a MsgApp carrying 64 entries of 128 bytes.

use std::hint::black_box;

use bytes::Bytes;

use crate::alloc::{allocs, Clock};
use crate::workloads::Metrics;

const ENTRIES: u64 = 64;
const SIZE: usize = 128;

fn measure(iters: u64, mut f: impl FnMut()) -> Metrics {
    for _ in 0..iters / 10 {
        f();
    }
    let a0 = allocs();
    let t = Clock::start();
    for _ in 0..iters {
        f();
    }
    let (cpu, wall) = t.secs();
    let ns = cpu * 1e9 / iters as f64;
    vec![
        ("ns_per_op", ns),
        ("ns_per_op_wall", wall * 1e9 / iters as f64),
        ("allocs_per_op", (allocs() - a0) as f64 / iters as f64),
    ]
}

/// raftlet. `zero_copy`: the receive buffer is handed over as `Bytes` and
/// decoded with `decode_bytes` (entry payloads share it); otherwise the
/// encoding goes into a reused buffer and `decode` copies the payloads.
pub fn raftlet(iters: u64, zero_copy: bool) -> Metrics {
    use raftlet::pb::{Decode, Encode, Entry, Message, MessageType};
    let mut m = Message::new(MessageType::MsgApp, 1, 2);
    m.term = 5;
    m.log_term = 5;
    m.index = 1000;
    m.commit = 1000;
    let payload = Bytes::from(vec![0x5au8; SIZE]);
    m.entries = (0..ENTRIES)
        .map(|i| Entry::new(5, 1001 + i, payload.clone()))
        .collect();
    let len = m.encoded_len();
    let mut buf = Vec::with_capacity(len);
    let mut r = if zero_copy {
        measure(iters, || {
            let mut v = Vec::with_capacity(m.encoded_len());
            m.encode(&mut v);
            let b = Bytes::from(v);
            let d = Message::decode_bytes(&b).expect("decode");
            black_box(d);
        })
    } else {
        measure(iters, || {
            buf.clear();
            m.encode(&mut buf);
            let d = Message::decode(&buf).expect("decode");
            black_box(d);
        })
    };
    r.push(("encoded_bytes", len as f64));
    r
}

/// raft-rs's codec of this build (prost or rust-protobuf). Reused buffer:
/// decoding copies the payloads (both codecs, from a `&[u8]`). Fresh buffer
/// (`shared`): a new encode buffer per message handed over as `Bytes`, and
/// with rust-protobuf decoded by `parse_from_carllerche_bytes`, whose
/// payloads share it (prost has no such decode and still copies).
pub fn raftrs(iters: u64, shared: bool) -> Metrics {
    use crate::rr::wire;
    use raft::eraftpb::{Entry, Message, MessageType};
    let mut m = Message::default();
    m.set_msg_type(MessageType::MsgAppend);
    m.from = 1;
    m.to = 2;
    m.term = 5;
    m.log_term = 5;
    m.index = 1000;
    m.commit = 1000;
    m.entries = (0..ENTRIES)
        .map(|i| Entry {
            term: 5,
            index: 1001 + i,
            data: wire::payload(&[0x5au8; SIZE]),
            ..Entry::default()
        })
        .collect();
    let len = wire::encoded_len(&m);
    let mut buf = Vec::with_capacity(len);
    let mut r = if shared {
        measure(iters, || {
            let b = Bytes::from(wire::encode(&m));
            let d: Message = wire::decode_shared(&b);
            black_box(d);
        })
    } else {
        measure(iters, || {
            buf.clear();
            wire::encode_into(&m, &mut buf);
            let d: Message = wire::decode(&buf[..]);
            black_box(d);
        })
    };
    r.push(("encoded_bytes", len as f64));
    r
}
