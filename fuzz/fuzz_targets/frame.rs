//! Decoding arbitrary bytes as a multi-group frame never panics; what
//! decodes re-encodes to a frame that decodes the same; and a MultiNode
//! fed the bytes (and then ticked) never panics, whatever the frame holds.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use raftlet::multi::frame::{decode, FrameBuilder};
use raftlet::multi::MultiNode;
use raftlet::pb::ConfState;
use raftlet::{Config, MemoryStorage, RawNode};

fuzz_target!(|data: &[u8]| {
    let b = Bytes::copy_from_slice(data);
    if let Ok(f) = decode(&b) {
        let mut g = FrameBuilder::new(f.from);
        for (group, m) in &f.items {
            g.push(*group, m);
        }
        assert_eq!(decode(&Bytes::from(g.finish())).expect("re-encoded frame"), f);
    }
    // Node 1 of two groups (0 and 1) of voters 1..=3, group 1 led by it.
    let mut host = MultiNode::new(1, 10, 1);
    for g in 0..2u64 {
        let mut c = Config::new(1);
        c.quiesce = true;
        c.seed = g + 1;
        let s = MemoryStorage::new_with_conf_state(ConfState::from_voters(vec![1, 2, 3]))
            .expect("storage");
        host.add_group(g, RawNode::new(&c, s).expect("node")).expect("group");
    }
    let _ = host.with_group(1, |n, _| n.campaign());
    let _ = host.receive(&b);
    for _ in 0..3 {
        host.tick();
        for g in host.take_ready_groups() {
            host.with_group(g, |n, out| {
                while n.has_ready() {
                    let mut rd = n.ready();
                    let s = n.store().clone();
                    let _ = s.wl().append(&rd.entries);
                    if let Some(hs) = rd.hard_state {
                        s.wl().set_hard_state(hs);
                    }
                    out.send(rd.take_all_messages());
                    n.advance(rd);
                }
            });
        }
        let _ = host.take_frames();
    }
});
