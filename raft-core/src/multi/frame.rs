//! The frame that carries the messages of many groups from one node to
//! another: one transport write per destination node instead of one per
//! message.
//!
//! ```text
//! frame  = magic "RLF" | version 1 | from node (u64 LE) | count (u32 LE) | item*
//! item   = group id (u64 LE) | length (u32 LE) | raftpb Message (length bytes)
//! ```
//!
//! A frame with no items is a node-level heartbeat: it tells the receiver
//! that the sending node is alive (see [`super::MultiNode`]).
//!
//! [`decode`] is safe on hostile input: every length is checked against
//! the bytes that remain before anything is read or allocated, the item
//! count cannot make it allocate more than in proportion to the input, and
//! every message goes through the raftpb decoder, which never panics.

use std::ops::Range;

use bytes::Bytes;

use crate::pb::{Decode, DecodeError, Encode, Message};

const MAGIC: &[u8; 3] = b"RLF";
const VERSION: u8 = 1;
/// Bytes before the first item.
pub const HEADER_LEN: usize = 16;
/// Bytes of an item before its message.
const ITEM_HEADER_LEN: usize = 12;

/// Why a frame was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// Shorter than the header, or an item runs past the end.
    Truncated,
    /// Not a raftlet frame (magic) or a version this build does not read.
    BadHeader,
    /// The item count does not match the items present.
    BadCount,
    /// An item's message is not a valid raftpb message.
    Message(DecodeError),
    /// A message over `u32::MAX` bytes, or a frame of `u32::MAX` items,
    /// does not fit the format ([`FrameBuilder::push_encoded`]).
    TooLarge,
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Truncated => f.write_str("frame truncated"),
            FrameError::BadHeader => f.write_str("not a raftlet frame (magic or version)"),
            FrameError::BadCount => f.write_str("frame item count does not match its items"),
            FrameError::Message(e) => write!(f, "frame item: {e}"),
            FrameError::TooLarge => f.write_str("message or frame too large for the frame format"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Builds one frame, item by item.
#[derive(Debug, Clone)]
pub struct FrameBuilder {
    buf: Vec<u8>,
    count: u32,
}

impl FrameBuilder {
    /// An empty frame from node `from`.
    pub fn new(from: u64) -> FrameBuilder {
        let mut buf = Vec::with_capacity(HEADER_LEN);
        buf.extend_from_slice(MAGIC);
        buf.push(VERSION);
        buf.extend_from_slice(&from.to_le_bytes());
        buf.extend_from_slice(&0u32.to_le_bytes());
        FrameBuilder { buf, count: 0 }
    }

    /// Appends the message `m` of group `group`.
    ///
    /// # Panics
    /// If the frame would hold more than `u32::MAX` items or a message
    /// encodes to more than `u32::MAX` bytes (the host splits frames long
    /// before that).
    pub fn push(&mut self, group: u64, m: &Message) {
        let len = u32::try_from(m.encoded_len()).expect("message larger than 4 GiB");
        let count = self
            .count
            .checked_add(1)
            .expect("too many items in a frame");
        self.buf.reserve(ITEM_HEADER_LEN + len as usize);
        self.buf.extend_from_slice(&group.to_le_bytes());
        self.buf.extend_from_slice(&len.to_le_bytes());
        m.encode(&mut self.buf);
        self.set_count(count);
    }

    /// Appends a message of group `group` that is already raftpb-encoded
    /// (as a Ready's encoded messages are), copying its bytes. The bytes
    /// are not checked here; the receiver's [`decode`] checks them.
    ///
    /// # Errors
    /// [`FrameError::TooLarge`] for a message over `u32::MAX` bytes or a
    /// frame that already holds `u32::MAX` items; the frame is unchanged.
    pub fn push_encoded(&mut self, group: u64, msg: &[u8]) -> Result<(), FrameError> {
        let len = u32::try_from(msg.len()).map_err(|_| FrameError::TooLarge)?;
        let count = self.count.checked_add(1).ok_or(FrameError::TooLarge)?;
        self.buf.reserve(ITEM_HEADER_LEN + msg.len());
        self.buf.extend_from_slice(&group.to_le_bytes());
        self.buf.extend_from_slice(&len.to_le_bytes());
        self.buf.extend_from_slice(msg);
        self.set_count(count);
        Ok(())
    }

    fn set_count(&mut self, count: u32) {
        self.count = count;
        self.buf[12..16].copy_from_slice(&count.to_le_bytes());
    }

    /// Empties the builder for a new frame from node `from`, keeping its
    /// buffer.
    pub fn reset(&mut self, from: u64) {
        self.buf.truncate(HEADER_LEN);
        self.buf[4..12].copy_from_slice(&from.to_le_bytes());
        self.set_count(0);
    }

    /// The frame as built so far (complete: the count is kept current).
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The number of items so far.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether the frame holds no item (a node-level heartbeat).
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The encoded frame.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

/// A decoded frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// The node that sent it.
    pub from: u64,
    /// The messages, each with its group id, in the order they were pushed.
    pub items: Vec<(u64, Message)>,
}

fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

fn le_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

/// A frame read for its structure only: the sender and, per item, the
/// group id and the byte range of its (not yet decoded) message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawFrame {
    /// The node that sent it.
    pub from: u64,
    /// Each item's group id and the range of its message in the frame.
    pub items: Vec<(u64, std::ops::Range<usize>)>,
}

/// Reads a frame's structure without decoding its messages (hosts that
/// step each message's bytes themselves, as the C ABI's
/// `raftlet_frame_decode` does).
///
/// # Errors
/// [`FrameError`] (never `Message`) for anything that is not exactly a
/// well-formed frame; never panics, and allocates in proportion to the
/// input at most.
pub fn decode_raw(buf: &[u8]) -> Result<RawFrame, FrameError> {
    let mut items = Vec::new();
    let from = walk(buf, &mut items, |group, range| Ok((group, range)))?;
    Ok(RawFrame { from, items })
}

/// Checks a frame's header and item headers and pushes onto `items` what
/// `each` makes of every item's group and the range of its message in
/// `buf`. Returns the sender. One pass, so that [`decode`] needs no list
/// of ranges besides its messages.
fn walk<T>(
    buf: &[u8],
    items: &mut Vec<T>,
    mut each: impl FnMut(u64, Range<usize>) -> Result<T, FrameError>,
) -> Result<u64, FrameError> {
    if buf.len() < HEADER_LEN {
        return Err(FrameError::Truncated);
    }
    if &buf[..3] != MAGIC || buf[3] != VERSION {
        return Err(FrameError::BadHeader);
    }
    let from = le_u64(&buf[4..12]);
    let count = le_u32(&buf[12..16]) as usize;
    let mut rest = &buf[HEADER_LEN..];
    // Every item takes at least its header: a count beyond that is a lie,
    // refused before it sizes any allocation.
    if count > rest.len() / ITEM_HEADER_LEN {
        return Err(FrameError::BadCount);
    }
    items.reserve_exact(count);
    let mut off = HEADER_LEN;
    for _ in 0..count {
        if rest.len() < ITEM_HEADER_LEN {
            return Err(FrameError::Truncated);
        }
        let group = le_u64(&rest[..8]);
        let len = le_u32(&rest[8..12]) as usize;
        rest = &rest[ITEM_HEADER_LEN..];
        off += ITEM_HEADER_LEN;
        if len > rest.len() {
            return Err(FrameError::Truncated);
        }
        items.push(each(group, off..off + len)?);
        rest = &rest[len..];
        off += len;
    }
    if !rest.is_empty() {
        return Err(FrameError::BadCount);
    }
    Ok(from)
}

/// Decodes a frame; bytes fields of the messages share `buf`'s storage.
///
/// # Errors
/// [`FrameError`] for anything that is not exactly a well-formed frame;
/// never panics.
pub fn decode(buf: &Bytes) -> Result<Frame, FrameError> {
    let mut items = Vec::new();
    let from = walk(buf, &mut items, |group, range| {
        let m = Message::decode_bytes(&buf.slice(range)).map_err(FrameError::Message)?;
        Ok((group, m))
    })?;
    Ok(Frame { from, items })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::{Entry, MessageType};
    use proptest::prelude::*;

    fn msg(t: MessageType, from: u64, to: u64, term: u64, data: &[u8]) -> Message {
        let mut m = Message::new(t, from, to);
        m.term = term;
        if !data.is_empty() {
            m.entries.push(Entry::new(term, 7, data.to_vec()));
        }
        m
    }

    /// The frame of raft-core/testdata/frame-v1.hex, which the Go package's
    /// frame helper (bindings/go/frame.go) must build byte for byte too.
    fn vector_frame() -> FrameBuilder {
        let mut f = FrameBuilder::new(7);
        let mut hb = Message::new(MessageType::MsgHeartbeat, 7, 3);
        hb.term = 5;
        hb.commit = 12;
        f.push(1, &hb);
        let mut app = msg(MessageType::MsgApp, 7, 3, 5, b"frame");
        app.log_term = 5;
        app.index = 6;
        app.commit = 6;
        f.push(42, &app);
        let mut vote = Message::new(MessageType::MsgVote, 7, 4);
        vote.term = 9;
        vote.log_term = 5;
        vote.index = 7;
        f.push(1 << 40, &vote);
        f
    }

    fn vector_hex() -> String {
        include_str!("../../testdata/frame-v1.hex")
            .split_whitespace()
            .collect()
    }

    #[test]
    fn the_shared_vector_is_this_encoding() {
        let got: String = vector_frame()
            .finish()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(got, vector_hex(), "raft-core/testdata/frame-v1.hex");
        let bytes: Vec<u8> = (0..got.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&got[i..i + 2], 16).unwrap())
            .collect();
        let f = decode(&Bytes::from(bytes)).unwrap();
        assert_eq!(f.from, 7);
        let groups: Vec<u64> = f.items.iter().map(|(g, _)| *g).collect();
        assert_eq!(groups, vec![1, 42, 1 << 40]);
        assert_eq!(f.items[1].1.entries[0].data.as_deref(), Some(&b"frame"[..]));
    }

    #[test]
    fn encoded_pushes_build_the_same_frame_and_reset_reuses_it() {
        let typed = vector_frame().finish();
        let f = decode(&Bytes::from(typed.clone())).unwrap();
        let mut b = FrameBuilder::new(99);
        b.push_encoded(5, b"stale").unwrap();
        b.reset(7);
        assert_eq!(b.as_bytes(), &FrameBuilder::new(7).finish()[..]);
        for (g, m) in &f.items {
            let mut enc = Vec::new();
            m.encode(&mut enc);
            b.push_encoded(*g, &enc).unwrap();
            assert_eq!(decode_raw(b.as_bytes()).unwrap().items.len(), b.len());
        }
        assert_eq!(b.finish(), typed);
        let raw = decode_raw(&typed).unwrap();
        assert_eq!(raw.from, 7);
        assert_eq!(raw.items.len(), 3);
        assert_eq!(
            Message::decode(&typed[raw.items[2].1.clone()])
                .unwrap()
                .msg_type,
            MessageType::MsgVote
        );
        // decode_raw does not look inside the messages; decode does.
        let mut junk = FrameBuilder::new(1);
        junk.push_encoded(3, &[0xff, 0xff]).unwrap();
        let junk = junk.finish();
        assert_eq!(decode_raw(&junk).unwrap().items, vec![(3, 28..30)]);
        assert!(matches!(
            decode(&Bytes::from(junk)),
            Err(FrameError::Message(_))
        ));
    }

    #[test]
    fn empty_frame_is_a_heartbeat() {
        let f = FrameBuilder::new(9);
        assert!(f.is_empty());
        let b = Bytes::from(f.finish());
        assert_eq!(b.len(), HEADER_LEN);
        assert_eq!(
            decode(&b).unwrap(),
            Frame {
                from: 9,
                items: vec![]
            }
        );
    }

    #[test]
    fn refuses_garbage() {
        let mut f = FrameBuilder::new(1);
        f.push(5, &msg(MessageType::MsgApp, 1, 2, 3, b"abc"));
        let good = f.finish();
        // Every strict prefix is refused, never a panic.
        for n in 0..good.len() {
            assert!(decode(&Bytes::copy_from_slice(&good[..n])).is_err(), "{n}");
        }
        // Trailing bytes, wrong magic, wrong version, lying counts.
        let mut t = good.clone();
        t.push(0);
        assert_eq!(decode(&Bytes::from(t)), Err(FrameError::BadCount));
        let mut t = good.clone();
        t[0] = b'X';
        assert_eq!(decode(&Bytes::from(t)), Err(FrameError::BadHeader));
        let mut t = good.clone();
        t[3] = 2;
        assert_eq!(decode(&Bytes::from(t)), Err(FrameError::BadHeader));
        let mut t = good.clone();
        t[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode(&Bytes::from(t)), Err(FrameError::BadCount));
        let mut t = good;
        t[24..28].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode(&Bytes::from(t)), Err(FrameError::Truncated));
    }

    proptest! {
        #[test]
        fn round_trips(items in proptest::collection::vec(
            (any::<u64>(), 1u64..5, 1u64..5, 0u64..100, proptest::collection::vec(any::<u8>(), 0..40)),
            0..20,
        ), from in any::<u64>()) {
            let mut f = FrameBuilder::new(from);
            let mut want = Vec::new();
            for (g, a, b, term, data) in items {
                let m = msg(MessageType::MsgApp, a, b, term, &data);
                f.push(g, &m);
                want.push((g, m));
            }
            let got = decode(&Bytes::from(f.finish())).unwrap();
            prop_assert_eq!(got, Frame { from, items: want });
        }

        #[test]
        fn hostile_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(&Bytes::from(bytes));
        }

        #[test]
        fn mutated_frames_never_panic(
            seed in proptest::collection::vec((any::<u64>(), proptest::collection::vec(any::<u8>(), 0..20)), 1..5),
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        ) {
            let mut f = FrameBuilder::new(3);
            for (g, data) in &seed {
                f.push(*g, &msg(MessageType::MsgApp, 1, 2, 1, data));
            }
            let mut b = f.finish();
            // Keep the magic most of the time so mutations reach the items.
            for (at, v) in flips {
                let i = 4 + at % (b.len() - 4);
                b[i] ^= v;
            }
            if let Ok(fr) = decode(&Bytes::from(b.clone())) {
                // Whatever decodes re-encodes to a frame that decodes the same.
                let mut g = FrameBuilder::new(fr.from);
                for (gid, m) in &fr.items {
                    g.push(*gid, m);
                }
                prop_assert_eq!(decode(&Bytes::from(g.finish())).unwrap(), fr);
            }
        }
    }
}
