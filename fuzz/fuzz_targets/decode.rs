//! Decoding arbitrary bytes as every raftpb type never panics, and what
//! decodes re-encodes to bytes that decode to the same value (and encode
//! to themselves: the encoding of a decoded value is canonical).
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use raftlet::pb::{
    ConfChange, ConfChangeSingle, ConfChangeV2, ConfState, Decode, Encode, Entry, HardState,
    Message, Snapshot, SnapshotMetadata,
};

fn check<T: Decode + Encode + PartialEq + std::fmt::Debug>(data: &[u8]) {
    let shared = Bytes::copy_from_slice(data);
    let a = T::decode(data);
    let b = T::decode_bytes(&shared);
    assert_eq!(a, b, "decode and decode_bytes disagree");
    if let Ok(v) = a {
        let enc = v.encode_to_vec();
        assert_eq!(enc.len(), v.encoded_len(), "encoded_len is not exact");
        let back = T::decode(&enc).expect("re-encoded value must decode");
        assert_eq!(back, v, "round trip changed the value");
        assert_eq!(back.encode_to_vec(), enc, "encoding is not canonical");
    }
}

fuzz_target!(|data: &[u8]| {
    check::<Message>(data);
    check::<Entry>(data);
    check::<HardState>(data);
    check::<ConfState>(data);
    check::<Snapshot>(data);
    check::<SnapshotMetadata>(data);
    check::<ConfChange>(data);
    check::<ConfChangeV2>(data);
    check::<ConfChangeSingle>(data);
    // Conf-change payloads as entries carry them, and the describe helpers
    // used in logs and traces.
    if let Ok(m) = Message::decode(data) {
        let _ = raftlet::describe::describe_message(&m);
        for e in &m.entries {
            let _ = raftlet::pb::ConfChangeI::from_entry(e);
        }
    }
});
