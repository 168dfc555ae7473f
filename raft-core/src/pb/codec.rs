//! The hand-written protobuf codec for the raftpb wire types.
//!
//! Encoding is byte for byte what etcd raft v3.6 (gogoproto, `nullable=false`)
//! writes. Decoding accepts v3.6's and v3.7's encodings and every ordinary
//! protobuf leniency; malformed input is a [`DecodeError`], never a panic.
//!
//! # Encoding
//!
//! Fields come in field-number order. Non-nullable scalars and nested
//! messages are always written, zero or not; bytes fields and
//! `Message.snapshot` only when `Some`; repeated `uint64`s unpacked, one tag
//! per value. Enums are the varint of their `i32` (a negative one is
//! sign-extended to ten bytes). [`Encode::encoded_len`] is exact and does not
//! allocate; [`Encode::encode`] reserves once and writes the whole tree.
//!
//! # Decoding
//!
//! Accepted: absent fields (zero / `None`), fields in any order, repeated
//! scalars (last wins), a non-repeated message field given twice (merged as
//! protobuf merges: scalars overwrite, repeated fields append), packed and
//! unpacked repeated `uint64`s (mixed too), any non-zero varint as `true`,
//! padded varints, enum numbers without a name (kept; the low 32 bits of the
//! varint, as in Go), and unknown fields of wire types 0, 1, 2, 5 and groups
//! (3 … 4, properly nested), which are skipped.
//!
//! Rejected, as etcd v3.6 rejects them: truncated input anywhere, varints
//! longer than ten bytes, lengths past the end, a known field with the wrong
//! wire type, field number 0, an end-group without its start, wire types 6
//! and 7, unterminated groups.
//!
//! Also rejected, where v3.6 is more lenient (v3.7 rejects them all):
//! - a ten-byte varint whose last byte carries bits beyond the 64th (v3.6
//!   drops those bits);
//! - a packed varint that runs past the end of its packed field (v3.6 reads
//!   on into the following bytes);
//! - field numbers above 2^29 - 1, the protobuf maximum;
//! - an end-group tag whose field number differs from its start-group's;
//! - nesting of embedded messages and groups deeper than [`MAX_DEPTH`]
//!   (`Message.responses` is recursive; v3.6 has no limit).
//!
//! The decoder never allocates more than in proportion to its input. With
//! [`Decode::decode`], the bytes fields of one decoded value share a single
//! copy of the input (one allocation per message, not one per payload).

use super::*;

/// A failure to decode bytes as a raftpb message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    msg: std::borrow::Cow<'static, str>,
}

impl DecodeError {
    /// A decode error with the given description.
    pub fn new(msg: impl Into<std::borrow::Cow<'static, str>>) -> DecodeError {
        DecodeError { msg: msg.into() }
    }

    /// The description of what was wrong.
    pub fn message(&self) -> &str {
        &self.msg
    }
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "decode error: {}", self.msg)
    }
}

impl std::error::Error for DecodeError {}

/// A wire type that can be encoded as etcd v3.6 encodes it.
pub trait Encode {
    /// The exact number of bytes [`Encode::encode`] appends.
    fn encoded_len(&self) -> usize;

    /// Appends the encoding to `buf`.
    fn encode(&self, buf: &mut Vec<u8>);

    /// Appends the encoding to `buf` as [`Encode::encode`] does, without
    /// sizing it first: for a caller that reserved room for several values
    /// from their [`Encode::encoded_len`] already, so that each length is
    /// computed once (the bytes are the same; with too little room `buf`
    /// grows as usual).
    fn encode_reserved(&self, buf: &mut Vec<u8>) {
        self.encode(buf);
    }

    /// The encoding as a new vector, of exactly the encoded length.
    fn encode_to_vec(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.encode(&mut v);
        v
    }
}

/// A wire type that can be decoded from raftpb bytes.
pub trait Decode: Sized {
    /// Decodes one value from the whole of `buf`. The value owns its bytes
    /// fields (nothing borrows `buf`): when it has a non-empty one, `buf` is
    /// copied once and all of them are slices of that copy, so one
    /// allocation serves every payload of a message, however many entries
    /// it carries (and keeps the copy alive while any of them is).
    ///
    /// # Errors
    /// [`DecodeError`] for any malformed input.
    fn decode(buf: &[u8]) -> Result<Self, DecodeError>;

    /// Decodes like [`Decode::decode`], but bytes fields (entry data,
    /// contexts, snapshot data) share `buf`'s storage instead of being
    /// copied.
    ///
    /// # Errors
    /// [`DecodeError`] for any malformed input.
    fn decode_bytes(buf: &Bytes) -> Result<Self, DecodeError> {
        Self::decode(buf)
    }
}

// ---------------------------------------------------------------------------
// Wire-level constants and helpers.
// ---------------------------------------------------------------------------

/// Wire type of a varint field.
const WT_VARINT: u8 = 0;
/// Wire type of a little-endian 8-byte field.
const WT_FIXED64: u8 = 1;
/// Wire type of a length-delimited field.
const WT_LEN: u8 = 2;
/// Wire type that opens a (deprecated) group.
const WT_START_GROUP: u8 = 3;
/// Wire type that closes a group.
const WT_END_GROUP: u8 = 4;
/// Wire type of a little-endian 4-byte field.
const WT_FIXED32: u8 = 5;

/// The deepest nesting of embedded messages and groups the decoder accepts.
///
/// Every embedded message (an entry, a snapshot, its metadata, a response…)
/// and every unknown group counts one level. etcd never nests more than a
/// handful of levels (`Message.responses` holds responses without responses
/// of their own), so 32 leaves ample room while keeping the recursive decoder
/// far from any stack limit on hostile input.
pub const MAX_DEPTH: u32 = 32;

/// The largest valid protobuf field number (2^29 - 1).
const MAX_FIELD_NUMBER: u64 = (1 << 29) - 1;

/// The one-byte tag of field `field` (1..=15) with wire type `wt`.
const fn tag(field: u8, wt: u8) -> u8 {
    (field << 3) | wt
}

/// The number of bytes of the varint encoding of `v`.
#[inline]
const fn varint_len(v: u64) -> usize {
    // Bits needed (at least 1), rounded up to groups of 7: for 1 to 64
    // bits, (9 * bits + 64) / 64 is that quotient, with a multiply and a
    // shift instead of a division and its remainder.
    let bits = 64 - (v | 1).leading_zeros() as usize;
    (bits * 9 + 64) / 64
}

/// The varint image of an enum value: protobuf sign-extends an `int32` to
/// 64 bits, so a negative number takes ten bytes.
#[inline]
const fn enum_u64(v: i32) -> u64 {
    v as i64 as u64
}

/// Appends the varint encoding of `v`.
#[inline]
fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// The size of a varint field with a one-byte tag.
#[inline]
const fn varint_field_len(v: u64) -> usize {
    1 + varint_len(v)
}

/// The size of a length-delimited field with a one-byte tag and `len` bytes of payload.
#[inline]
const fn len_field_len(len: usize) -> usize {
    1 + varint_len(len as u64) + len
}

/// The size of an optional bytes field with a one-byte tag.
#[inline]
fn opt_bytes_len(b: &Option<Bytes>) -> usize {
    match b {
        Some(b) => len_field_len(b.len()),
        None => 0,
    }
}

/// Appends a varint field with a one-byte tag.
#[inline]
fn put_varint_field(buf: &mut Vec<u8>, tag: u8, v: u64) {
    buf.push(tag);
    put_varint(buf, v);
}

/// Appends a bytes field with a one-byte tag.
#[inline]
fn put_bytes_field(buf: &mut Vec<u8>, tag: u8, b: &[u8]) {
    buf.push(tag);
    put_varint(buf, b.len() as u64);
    buf.extend_from_slice(b);
}

/// Appends an optional bytes field (nothing when `None`).
#[inline]
fn put_opt_bytes_field(buf: &mut Vec<u8>, tag: u8, b: &Option<Bytes>) {
    if let Some(b) = b {
        put_bytes_field(buf, tag, b);
    }
}

/// Encoding of a nested message without reserving: the trait's `encode`
/// reserves once for the whole tree and then writes through this.
trait WriteRaw {
    /// The exact encoded size (same as [`Encode::encoded_len`]).
    fn raw_len(&self) -> usize;
    /// Appends the encoding without reserving.
    fn write_raw(&self, buf: &mut Vec<u8>);
}

/// Appends an embedded-message field: tag, length, body.
#[inline]
fn put_message_field<T: WriteRaw>(buf: &mut Vec<u8>, tag: u8, m: &T) {
    buf.push(tag);
    put_varint(buf, m.raw_len() as u64);
    m.write_raw(buf);
}

/// The size of an embedded-message field with a one-byte tag.
#[inline]
fn message_field_len<T: WriteRaw>(m: &T) -> usize {
    len_field_len(m.raw_len())
}

macro_rules! impl_encode_via_raw {
    ($($t:ty),+ $(,)?) => {$(
        impl Encode for $t {
            #[inline]
            fn encoded_len(&self) -> usize {
                self.raw_len()
            }

            fn encode(&self, buf: &mut Vec<u8>) {
                // An empty vector gets exactly the encoded length, so
                // `encode_to_vec` sizes its vector with one computation of
                // it; a vector being appended to grows as usual (amortized).
                let n = self.raw_len();
                if buf.capacity() == 0 {
                    buf.reserve_exact(n);
                } else {
                    buf.reserve(n);
                }
                self.write_raw(buf);
            }

            #[inline]
            fn encode_reserved(&self, buf: &mut Vec<u8>) {
                self.write_raw(buf);
            }
        }
    )+};
}

impl_encode_via_raw!(
    Entry,
    HardState,
    ConfState,
    SnapshotMetadata,
    Snapshot,
    Message,
    ConfChange,
    ConfChangeSingle,
    ConfChangeV2,
);

// ---------------------------------------------------------------------------
// Encoding, one type at a time, fields in field-number order.
// ---------------------------------------------------------------------------

impl WriteRaw for Entry {
    #[inline]
    fn raw_len(&self) -> usize {
        varint_field_len(enum_u64(self.entry_type.0))
            + varint_field_len(self.term)
            + varint_field_len(self.index)
            + opt_bytes_len(&self.data)
    }

    #[inline]
    fn write_raw(&self, buf: &mut Vec<u8>) {
        let mut head = [0u8; ENTRY_HEAD_MAX];
        let n = self.encode_head(&mut head);
        buf.extend_from_slice(&head[..n]);
        if let Some(data) = &self.data {
            buf.extend_from_slice(data);
        }
    }
}

/// The most bytes [`Entry::encode_head`] writes: three varint fields of at
/// most 11 bytes each, and the data's tag and length.
pub const ENTRY_HEAD_MAX: usize = 3 * 11 + 11;

/// Writes the varint field `tag`, `v` at `head[at..]`; returns the end.
/// Fields are staged in a small array and appended to the output in one
/// copy, rather than pushed a byte at a time (each push checks the
/// vector's capacity and stores its length again).
#[inline]
fn put_varint_field_at<const N: usize>(
    head: &mut [u8; N],
    mut at: usize,
    tag: u8,
    mut v: u64,
) -> usize {
    head[at] = tag;
    at += 1;
    while v >= 0x80 {
        head[at] = (v as u8) | 0x80;
        at += 1;
        v >>= 7;
    }
    head[at] = v as u8;
    at + 1
}

/// The most bytes [`Message`]'s scalar fields before its entries take:
/// six varint fields of at most 11 bytes each (tag and ten-byte varint).
const MESSAGE_HEAD_MAX: usize = 6 * 11;

/// Appends an entry as field `tag` of a message: tag, length and body,
/// measuring the body from its head (one pass over the entry's fields).
#[inline]
fn put_entry_field(buf: &mut Vec<u8>, tag: u8, e: &Entry) {
    let mut head = [0u8; ENTRY_HEAD_MAX];
    let n = e.encode_head(&mut head);
    let data: &[u8] = e.data.as_deref().unwrap_or_default();
    let mut pre = [0u8; 11];
    let p = put_varint_field_at(&mut pre, 0, tag, (n + data.len()) as u64);
    buf.extend_from_slice(&pre[..p]);
    buf.extend_from_slice(&head[..n]);
    buf.extend_from_slice(data);
}

impl Entry {
    /// Writes the raftpb encoding of every field of the entry that comes
    /// before its data bytes (type, term, index, and the data field's tag
    /// and length) into `head`, and returns its length: the entry encodes
    /// as `head[..n]` followed by the data. One pass, without measuring
    /// the entry first, for writers that frame entries themselves and
    /// learn the encoded length as `n` plus the data's length.
    ///
    /// ```
    /// use raftlet::pb::{Encode, Entry, ENTRY_HEAD_MAX};
    ///
    /// let e = Entry::new(3, 7, &b"put x=1"[..]);
    /// let mut head = [0u8; ENTRY_HEAD_MAX];
    /// let n = e.encode_head(&mut head);
    /// let mut framed = head[..n].to_vec();
    /// framed.extend_from_slice(b"put x=1");
    /// assert_eq!(framed, e.encode_to_vec());
    /// ```
    #[inline]
    pub fn encode_head(&self, head: &mut [u8; ENTRY_HEAD_MAX]) -> usize {
        let mut at = put_varint_field_at(head, 0, tag(1, WT_VARINT), enum_u64(self.entry_type.0));
        at = put_varint_field_at(head, at, tag(2, WT_VARINT), self.term);
        at = put_varint_field_at(head, at, tag(3, WT_VARINT), self.index);
        if let Some(data) = &self.data {
            at = put_varint_field_at(head, at, tag(4, WT_LEN), data.len() as u64);
        }
        at
    }
}

impl WriteRaw for HardState {
    #[inline]
    fn raw_len(&self) -> usize {
        varint_field_len(self.term) + varint_field_len(self.vote) + varint_field_len(self.commit)
    }

    #[inline]
    fn write_raw(&self, buf: &mut Vec<u8>) {
        put_varint_field(buf, tag(1, WT_VARINT), self.term);
        put_varint_field(buf, tag(2, WT_VARINT), self.vote);
        put_varint_field(buf, tag(3, WT_VARINT), self.commit);
    }
}

/// The size of an unpacked repeated uint64 field with a one-byte tag.
#[inline]
fn unpacked_len(vs: &[u64]) -> usize {
    vs.iter().map(|&v| varint_field_len(v)).sum()
}

/// Appends an unpacked repeated uint64 field, one tag per value.
#[inline]
fn put_unpacked(buf: &mut Vec<u8>, tag: u8, vs: &[u64]) {
    for &v in vs {
        put_varint_field(buf, tag, v);
    }
}

impl WriteRaw for ConfState {
    #[inline]
    fn raw_len(&self) -> usize {
        unpacked_len(&self.voters)
            + unpacked_len(&self.learners)
            + unpacked_len(&self.voters_outgoing)
            + unpacked_len(&self.learners_next)
            + 2
    }

    #[inline]
    fn write_raw(&self, buf: &mut Vec<u8>) {
        put_unpacked(buf, tag(1, WT_VARINT), &self.voters);
        put_unpacked(buf, tag(2, WT_VARINT), &self.learners);
        put_unpacked(buf, tag(3, WT_VARINT), &self.voters_outgoing);
        put_unpacked(buf, tag(4, WT_VARINT), &self.learners_next);
        put_varint_field(buf, tag(5, WT_VARINT), u64::from(self.auto_leave));
    }
}

impl WriteRaw for SnapshotMetadata {
    #[inline]
    fn raw_len(&self) -> usize {
        message_field_len(&self.conf_state)
            + varint_field_len(self.index)
            + varint_field_len(self.term)
    }

    #[inline]
    fn write_raw(&self, buf: &mut Vec<u8>) {
        put_message_field(buf, tag(1, WT_LEN), &self.conf_state);
        put_varint_field(buf, tag(2, WT_VARINT), self.index);
        put_varint_field(buf, tag(3, WT_VARINT), self.term);
    }
}

impl WriteRaw for Snapshot {
    #[inline]
    fn raw_len(&self) -> usize {
        opt_bytes_len(&self.data) + message_field_len(&self.metadata)
    }

    #[inline]
    fn write_raw(&self, buf: &mut Vec<u8>) {
        put_opt_bytes_field(buf, tag(1, WT_LEN), &self.data);
        put_message_field(buf, tag(2, WT_LEN), &self.metadata);
    }
}

impl WriteRaw for Message {
    fn raw_len(&self) -> usize {
        let mut n = varint_field_len(enum_u64(self.msg_type.0))
            + varint_field_len(self.to)
            + varint_field_len(self.from)
            + varint_field_len(self.term)
            + varint_field_len(self.log_term)
            + varint_field_len(self.index)
            + varint_field_len(self.commit)
            + 2 // reject
            + varint_field_len(self.reject_hint)
            + opt_bytes_len(&self.context)
            + varint_field_len(self.vote);
        for e in &self.entries {
            n += message_field_len(e);
        }
        if let Some(s) = &self.snapshot {
            n += message_field_len(s.as_ref());
        }
        for r in &self.responses {
            n += message_field_len(r);
        }
        n
    }

    fn write_raw(&self, buf: &mut Vec<u8>) {
        let mut head = [0u8; MESSAGE_HEAD_MAX];
        let mut at =
            put_varint_field_at(&mut head, 0, tag(1, WT_VARINT), enum_u64(self.msg_type.0));
        at = put_varint_field_at(&mut head, at, tag(2, WT_VARINT), self.to);
        at = put_varint_field_at(&mut head, at, tag(3, WT_VARINT), self.from);
        at = put_varint_field_at(&mut head, at, tag(4, WT_VARINT), self.term);
        at = put_varint_field_at(&mut head, at, tag(5, WT_VARINT), self.log_term);
        at = put_varint_field_at(&mut head, at, tag(6, WT_VARINT), self.index);
        buf.extend_from_slice(&head[..at]);
        for e in &self.entries {
            put_entry_field(buf, tag(7, WT_LEN), e);
        }
        // The fields after the entries, staged the same way (at most four
        // varint fields between flushes).
        at = put_varint_field_at(&mut head, 0, tag(8, WT_VARINT), self.commit);
        if let Some(s) = &self.snapshot {
            buf.extend_from_slice(&head[..at]);
            at = 0;
            put_message_field(buf, tag(9, WT_LEN), s.as_ref());
        }
        at = put_varint_field_at(&mut head, at, tag(10, WT_VARINT), u64::from(self.reject));
        at = put_varint_field_at(&mut head, at, tag(11, WT_VARINT), self.reject_hint);
        if let Some(c) = &self.context {
            buf.extend_from_slice(&head[..at]);
            at = 0;
            put_bytes_field(buf, tag(12, WT_LEN), c);
        }
        at = put_varint_field_at(&mut head, at, tag(13, WT_VARINT), self.vote);
        buf.extend_from_slice(&head[..at]);
        for r in &self.responses {
            put_message_field(buf, tag(14, WT_LEN), r);
        }
    }
}

impl WriteRaw for ConfChange {
    #[inline]
    fn raw_len(&self) -> usize {
        varint_field_len(self.id)
            + varint_field_len(enum_u64(self.change_type.0))
            + varint_field_len(self.node_id)
            + opt_bytes_len(&self.context)
    }

    #[inline]
    fn write_raw(&self, buf: &mut Vec<u8>) {
        put_varint_field(buf, tag(1, WT_VARINT), self.id);
        put_varint_field(buf, tag(2, WT_VARINT), enum_u64(self.change_type.0));
        put_varint_field(buf, tag(3, WT_VARINT), self.node_id);
        put_opt_bytes_field(buf, tag(4, WT_LEN), &self.context);
    }
}

impl WriteRaw for ConfChangeSingle {
    #[inline]
    fn raw_len(&self) -> usize {
        varint_field_len(enum_u64(self.change_type.0)) + varint_field_len(self.node_id)
    }

    #[inline]
    fn write_raw(&self, buf: &mut Vec<u8>) {
        put_varint_field(buf, tag(1, WT_VARINT), enum_u64(self.change_type.0));
        put_varint_field(buf, tag(2, WT_VARINT), self.node_id);
    }
}

impl WriteRaw for ConfChangeV2 {
    #[inline]
    fn raw_len(&self) -> usize {
        let mut n = varint_field_len(enum_u64(self.transition.0)) + opt_bytes_len(&self.context);
        for c in &self.changes {
            n += message_field_len(c);
        }
        n
    }

    #[inline]
    fn write_raw(&self, buf: &mut Vec<u8>) {
        put_varint_field(buf, tag(1, WT_VARINT), enum_u64(self.transition.0));
        for c in &self.changes {
            put_message_field(buf, tag(2, WT_LEN), c);
        }
        put_opt_bytes_field(buf, tag(3, WT_LEN), &self.context);
    }
}

// ---------------------------------------------------------------------------
// Decoding.
// ---------------------------------------------------------------------------

/// A cursor over untrusted input. Every read is bounds-checked and reports
/// truncation as a [`DecodeError`].
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// The buffer `buf` is a part of, when bytes fields may share it.
    src: Src<'a>,
}

/// Where the bytes fields of a decoded value get their storage.
#[derive(Clone, Copy)]
enum Src<'a> {
    /// [`Decode::decode_bytes`]: the [`Bytes`] the input is a part of;
    /// bytes fields share it.
    Shared(&'a Bytes),
    /// [`Decode::decode`]: bytes fields are copied out of the input. The
    /// first non-empty one copies the whole top-level input `top` once into
    /// `copy`, and every bytes field is a slice of that copy: one copy per
    /// decoded message instead of one per payload (a MsgApp's entries share
    /// it, as they would share the receive buffer with `decode_bytes`), in
    /// one allocation with its reference count for a message of up to
    /// [`crate::MAX_INLINE_PAYLOAD`] bytes ([`crate::copy_payload`]), and
    /// nothing is allocated for a message without payloads.
    Copy {
        top: &'a [u8],
        copy: &'a std::cell::OnceCell<Bytes>,
    },
}

/// The error for input that ends in the middle of something.
#[cold]
fn eof() -> DecodeError {
    DecodeError::new("unexpected end of input")
}

#[cold]
fn wrong_wire_type(msg: &'static str, field: &'static str, wt: u8) -> DecodeError {
    DecodeError::new(format!("wrong wire type {wt} for field {msg}.{field}"))
}

impl<'a> Reader<'a> {
    #[inline]
    fn new(buf: &'a [u8], src: Src<'a>) -> Reader<'a> {
        Reader { buf, pos: 0, src }
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Reads a varint of at most ten bytes whose value fits in 64 bits.
    ///
    /// Padded (non-minimal) encodings are accepted. A tenth byte carrying
    /// bits beyond the 64th is rejected (etcd v3.6 silently drops those bits;
    /// v3.7 and the protobuf spec reject them).
    #[inline(always)]
    fn varint(&mut self) -> Result<u64, DecodeError> {
        // One-byte varints (most tags and small values) inline; the rest
        // out of line.
        if let Some(&b) = self.buf.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                return Ok(u64::from(b));
            }
            // Two bytes (a payload's or an entry's length, an index below
            // 2^14) inline too.
            if let Some(&c) = self.buf.get(self.pos + 1) {
                if c < 0x80 {
                    self.pos += 2;
                    return Ok(u64::from(b & 0x7f) | u64::from(c) << 7);
                }
            }
        }
        self.varint_slow()
    }

    /// [`Reader::varint`] past its inline cases: varints of three bytes or
    /// more, and input that ends before the varint does.
    #[inline(never)]
    fn varint_slow(&mut self) -> Result<u64, DecodeError> {
        let rest = &self.buf[self.pos..];
        // Three bytes (indexes below 2^21) without the loop; `varint` has
        // read one and two bytes inline.
        if let [b0, b1, b2, ..] = *rest {
            if b0 >= 0x80 && b1 >= 0x80 && b2 < 0x80 {
                self.pos += 3;
                return Ok(u64::from(b0 & 0x7f) | u64::from(b1 & 0x7f) << 7 | u64::from(b2) << 14);
            }
        }
        if rest.is_empty() {
            return Err(eof());
        }
        let mut v: u64 = 0;
        for (i, &b) in rest.iter().enumerate().take(10) {
            if i == 9 {
                if b > 1 {
                    return Err(DecodeError::new("varint overflows 64 bits"));
                }
                v |= u64::from(b) << 63;
                self.pos += 10;
                return Ok(v);
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                self.pos += i + 1;
                return Ok(v);
            }
        }
        Err(eof())
    }

    /// Reads a length prefix and the bytes it covers.
    #[inline]
    fn len_delimited(&mut self) -> Result<&'a [u8], DecodeError> {
        let len = self.varint()?;
        let remaining = self.buf.len() - self.pos;
        if len > remaining as u64 {
            return Err(if len > i64::MAX as u64 {
                DecodeError::new("length overflows")
            } else {
                eof()
            });
        }
        let len = len as usize;
        let s = &self.buf[self.pos..self.pos + len];
        self.pos += len;
        Ok(s)
    }

    /// Skips `n` bytes.
    #[inline]
    fn skip(&mut self, n: usize) -> Result<(), DecodeError> {
        if self.buf.len() - self.pos < n {
            return Err(eof());
        }
        self.pos += n;
        Ok(())
    }

    /// Reads a tag: the field number (never 0) and a wire type in 0..=5.
    #[inline(always)]
    fn tag(&mut self) -> Result<(u32, u8), DecodeError> {
        // A one-byte tag of a field 1..=15 with a valid wire type: every
        // tag etcd writes for raftpb.
        if let Some(&b) = self.buf.get(self.pos) {
            if (8..0x80).contains(&b) && (b & 7) <= WT_FIXED32 {
                self.pos += 1;
                return Ok((u32::from(b >> 3), b & 7));
            }
        }
        self.tag_slow()
    }

    /// [`Reader::tag`] for the other tags, and the errors.
    #[inline(never)]
    fn tag_slow(&mut self) -> Result<(u32, u8), DecodeError> {
        let t = self.varint()?;
        let field = t >> 3;
        let wt = (t & 7) as u8;
        if field == 0 {
            return Err(DecodeError::new("illegal field number 0"));
        }
        if field > MAX_FIELD_NUMBER {
            return Err(DecodeError::new("field number out of range"));
        }
        if wt > WT_FIXED32 {
            return Err(DecodeError::new(format!("illegal wire type {wt}")));
        }
        Ok((field as u32, wt))
    }

    /// Skips the value of an unknown field whose tag has just been read.
    fn skip_field(&mut self, field: u32, wt: u8, depth: u32) -> Result<(), DecodeError> {
        match wt {
            WT_VARINT => self.varint().map(drop),
            WT_FIXED64 => self.skip(8),
            WT_LEN => self.len_delimited().map(drop),
            WT_FIXED32 => self.skip(4),
            WT_START_GROUP => self.skip_group(field, depth + 1),
            WT_END_GROUP => Err(DecodeError::new("end group without start group")),
            _ => Err(DecodeError::new(format!("illegal wire type {wt}"))),
        }
    }

    /// Skips the body of a group opened by field `field`, through its
    /// matching end-group tag.
    fn skip_group(&mut self, field: u32, depth: u32) -> Result<(), DecodeError> {
        check_depth(depth)?;
        loop {
            if self.is_empty() {
                return Err(DecodeError::new("unterminated group"));
            }
            let (f, wt) = self.tag()?;
            if wt == WT_END_GROUP {
                if f != field {
                    return Err(DecodeError::new("end group does not match start group"));
                }
                return Ok(());
            }
            self.skip_field(f, wt, depth)?;
        }
    }

    /// Whether the next byte is `key` (a whole one-byte field key); if so,
    /// it is consumed.
    #[inline(always)]
    fn next_is(&mut self, key: u8) -> bool {
        if self.buf.get(self.pos) == Some(&key) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Reads a varint and truncates it to the `i32` of an enum (as Go does).
    #[inline]
    fn enum_i32(&mut self) -> Result<i32, DecodeError> {
        Ok(self.varint()? as i32)
    }

    /// Reads a bool: any non-zero varint is true.
    #[inline]
    fn bool(&mut self) -> Result<bool, DecodeError> {
        Ok(self.varint()? != 0)
    }

    /// Reads a bytes field's value into a new [`Bytes`].
    #[inline]
    fn bytes(&mut self) -> Result<Bytes, DecodeError> {
        let s = self.len_delimited()?;
        Ok(match self.src {
            // `s` lies within `src`: every slice the decoder reads is cut
            // from the buffer it was given.
            Src::Shared(src) => src.slice_ref(s),
            Src::Copy { .. } if s.is_empty() => Bytes::new(),
            Src::Copy { top, copy } => {
                // `s` lies within `top`, for the same reason.
                let copy = copy.get_or_init(|| crate::copy_payload(top));
                let off = s.as_ptr() as usize - top.as_ptr() as usize;
                copy.slice(off..off + s.len())
            }
        })
    }
}

/// Fails when `depth` exceeds [`MAX_DEPTH`].
#[inline]
fn check_depth(depth: u32) -> Result<(), DecodeError> {
    if depth > MAX_DEPTH {
        Err(DecodeError::new("message nesting too deep"))
    } else {
        Ok(())
    }
}

/// Protobuf "merge" decoding: fields in `buf` overwrite scalars and extend
/// repeated fields of `self`. Decoding is merging into the default value.
trait MergeRaw: Default {
    /// Merges the encoded message `buf`, which sits at nesting level `depth`.
    fn merge_raw(&mut self, buf: &[u8], src: Src<'_>, depth: u32) -> Result<(), DecodeError>;

    /// Decodes a fresh value at nesting level `depth`.
    #[inline]
    fn decode_raw(buf: &[u8], src: Src<'_>, depth: u32) -> Result<Self, DecodeError> {
        let mut v = Self::default();
        v.merge_raw(buf, src, depth)?;
        Ok(v)
    }
}

macro_rules! impl_decode_via_merge {
    ($($t:ty),+ $(,)?) => {$(
        impl Decode for $t {
            fn decode(buf: &[u8]) -> Result<Self, DecodeError> {
                let copy = std::cell::OnceCell::new();
                <$t as MergeRaw>::decode_raw(buf, Src::Copy { top: buf, copy: &copy }, 0)
            }

            fn decode_bytes(buf: &Bytes) -> Result<Self, DecodeError> {
                <$t as MergeRaw>::decode_raw(buf, Src::Shared(buf), 0)
            }
        }
    )+};
}

impl_decode_via_merge!(
    Entry,
    HardState,
    ConfState,
    SnapshotMetadata,
    Snapshot,
    Message,
    ConfChange,
    ConfChangeSingle,
    ConfChangeV2,
);

/// Checks the wire type of a known field.
macro_rules! expect_wt {
    ($wt:expr, $want:expr, $msg:literal, $field:literal) => {
        if $wt != $want {
            return Err(wrong_wire_type($msg, $field, $wt));
        }
    };
}

impl MergeRaw for Entry {
    fn merge_raw(&mut self, buf: &[u8], src: Src<'_>, depth: u32) -> Result<(), DecodeError> {
        check_depth(depth)?;
        let mut r = Reader::new(buf, src);
        // The fields in etcd's order read straight through; the loop goes
        // on from wherever the input differs (as for Message).
        if r.next_is(tag(1, WT_VARINT)) {
            self.entry_type = EntryType(r.enum_i32()?);
        }
        if r.next_is(tag(2, WT_VARINT)) {
            self.term = r.varint()?;
        }
        if r.next_is(tag(3, WT_VARINT)) {
            self.index = r.varint()?;
        }
        if r.next_is(tag(4, WT_LEN)) {
            self.data = Some(r.bytes()?);
        }
        while !r.is_empty() {
            let (field, wt) = r.tag()?;
            match field {
                1 => {
                    expect_wt!(wt, WT_VARINT, "Entry", "Type");
                    self.entry_type = EntryType(r.enum_i32()?);
                }
                2 => {
                    expect_wt!(wt, WT_VARINT, "Entry", "Term");
                    self.term = r.varint()?;
                }
                3 => {
                    expect_wt!(wt, WT_VARINT, "Entry", "Index");
                    self.index = r.varint()?;
                }
                4 => {
                    expect_wt!(wt, WT_LEN, "Entry", "Data");
                    self.data = Some(r.bytes()?);
                }
                _ => r.skip_field(field, wt, depth)?,
            }
        }
        Ok(())
    }
}

impl MergeRaw for HardState {
    fn merge_raw(&mut self, buf: &[u8], src: Src<'_>, depth: u32) -> Result<(), DecodeError> {
        check_depth(depth)?;
        let mut r = Reader::new(buf, src);
        while !r.is_empty() {
            let (field, wt) = r.tag()?;
            match field {
                1 => {
                    expect_wt!(wt, WT_VARINT, "HardState", "term");
                    self.term = r.varint()?;
                }
                2 => {
                    expect_wt!(wt, WT_VARINT, "HardState", "vote");
                    self.vote = r.varint()?;
                }
                3 => {
                    expect_wt!(wt, WT_VARINT, "HardState", "commit");
                    self.commit = r.varint()?;
                }
                _ => r.skip_field(field, wt, depth)?,
            }
        }
        Ok(())
    }
}

/// Reads one occurrence of a repeated uint64 field, unpacked (one varint) or
/// packed (a length-delimited run of varints that must end exactly at the
/// field's boundary).
fn read_repeated_u64(
    r: &mut Reader<'_>,
    wt: u8,
    out: &mut Vec<u64>,
    field: &'static str,
) -> Result<(), DecodeError> {
    match wt {
        WT_VARINT => out.push(r.varint()?),
        WT_LEN => {
            let body = r.len_delimited()?;
            // Each varint ends in exactly one byte below 0x80: an exact,
            // input-bounded count to reserve.
            let n = body.iter().filter(|&&b| b < 0x80).count();
            out.reserve(n);
            let mut pr = Reader::new(body, r.src);
            while !pr.is_empty() {
                out.push(pr.varint()?);
            }
        }
        _ => return Err(wrong_wire_type("ConfState", field, wt)),
    }
    Ok(())
}

impl MergeRaw for ConfState {
    fn merge_raw(&mut self, buf: &[u8], src: Src<'_>, depth: u32) -> Result<(), DecodeError> {
        check_depth(depth)?;
        let mut r = Reader::new(buf, src);
        while !r.is_empty() {
            let (field, wt) = r.tag()?;
            match field {
                1 => read_repeated_u64(&mut r, wt, &mut self.voters, "voters")?,
                2 => read_repeated_u64(&mut r, wt, &mut self.learners, "learners")?,
                3 => read_repeated_u64(&mut r, wt, &mut self.voters_outgoing, "voters_outgoing")?,
                4 => read_repeated_u64(&mut r, wt, &mut self.learners_next, "learners_next")?,
                5 => {
                    expect_wt!(wt, WT_VARINT, "ConfState", "auto_leave");
                    self.auto_leave = r.bool()?;
                }
                _ => r.skip_field(field, wt, depth)?,
            }
        }
        Ok(())
    }
}

impl MergeRaw for SnapshotMetadata {
    fn merge_raw(&mut self, buf: &[u8], src: Src<'_>, depth: u32) -> Result<(), DecodeError> {
        check_depth(depth)?;
        let mut r = Reader::new(buf, src);
        while !r.is_empty() {
            let (field, wt) = r.tag()?;
            match field {
                1 => {
                    expect_wt!(wt, WT_LEN, "SnapshotMetadata", "conf_state");
                    let body = r.len_delimited()?;
                    self.conf_state.merge_raw(body, src, depth + 1)?;
                }
                2 => {
                    expect_wt!(wt, WT_VARINT, "SnapshotMetadata", "index");
                    self.index = r.varint()?;
                }
                3 => {
                    expect_wt!(wt, WT_VARINT, "SnapshotMetadata", "term");
                    self.term = r.varint()?;
                }
                _ => r.skip_field(field, wt, depth)?,
            }
        }
        Ok(())
    }
}

impl MergeRaw for Snapshot {
    fn merge_raw(&mut self, buf: &[u8], src: Src<'_>, depth: u32) -> Result<(), DecodeError> {
        check_depth(depth)?;
        let mut r = Reader::new(buf, src);
        while !r.is_empty() {
            let (field, wt) = r.tag()?;
            match field {
                1 => {
                    expect_wt!(wt, WT_LEN, "Snapshot", "data");
                    self.data = Some(r.bytes()?);
                }
                2 => {
                    expect_wt!(wt, WT_LEN, "Snapshot", "metadata");
                    let body = r.len_delimited()?;
                    self.metadata.merge_raw(body, src, depth + 1)?;
                }
                _ => r.skip_field(field, wt, depth)?,
            }
        }
        Ok(())
    }
}

impl MergeRaw for Message {
    fn merge_raw(&mut self, buf: &[u8], src: Src<'_>, depth: u32) -> Result<(), DecodeError> {
        check_depth(depth)?;
        let mut r = Reader::new(buf, src);
        // etcd writes a message's fields in field order, every scalar
        // always: that layout is read straight through, field by field,
        // and wherever the input differs (a field missing, another order,
        // a snapshot, responses, unknown fields) the general loop below
        // goes on from there. Merging is sequential, so the result is the
        // loop's on the same bytes.
        if r.next_is(tag(1, WT_VARINT)) {
            self.msg_type = MessageType(r.enum_i32()?);
        }
        if r.next_is(tag(2, WT_VARINT)) {
            self.to = r.varint()?;
        }
        if r.next_is(tag(3, WT_VARINT)) {
            self.from = r.varint()?;
        }
        if r.next_is(tag(4, WT_VARINT)) {
            self.term = r.varint()?;
        }
        if r.next_is(tag(5, WT_VARINT)) {
            self.log_term = r.varint()?;
        }
        if r.next_is(tag(6, WT_VARINT)) {
            self.index = r.varint()?;
        }
        while r.next_is(tag(7, WT_LEN)) {
            let body = r.len_delimited()?;
            self.entries.push(Entry::decode_raw(body, src, depth + 1)?);
        }
        if r.next_is(tag(8, WT_VARINT)) {
            self.commit = r.varint()?;
        }
        if r.next_is(tag(10, WT_VARINT)) {
            self.reject = r.bool()?;
        }
        if r.next_is(tag(11, WT_VARINT)) {
            self.reject_hint = r.varint()?;
        }
        if r.next_is(tag(12, WT_LEN)) {
            self.context = Some(r.bytes()?);
        }
        if r.next_is(tag(13, WT_VARINT)) {
            self.vote = r.varint()?;
        }
        while !r.is_empty() {
            let (field, wt) = r.tag()?;
            match field {
                1 => {
                    expect_wt!(wt, WT_VARINT, "Message", "type");
                    self.msg_type = MessageType(r.enum_i32()?);
                }
                2 => {
                    expect_wt!(wt, WT_VARINT, "Message", "to");
                    self.to = r.varint()?;
                }
                3 => {
                    expect_wt!(wt, WT_VARINT, "Message", "from");
                    self.from = r.varint()?;
                }
                4 => {
                    expect_wt!(wt, WT_VARINT, "Message", "term");
                    self.term = r.varint()?;
                }
                5 => {
                    expect_wt!(wt, WT_VARINT, "Message", "logTerm");
                    self.log_term = r.varint()?;
                }
                6 => {
                    expect_wt!(wt, WT_VARINT, "Message", "index");
                    self.index = r.varint()?;
                }
                7 => {
                    expect_wt!(wt, WT_LEN, "Message", "entries");
                    let body = r.len_delimited()?;
                    self.entries.push(Entry::decode_raw(body, src, depth + 1)?);
                }
                8 => {
                    expect_wt!(wt, WT_VARINT, "Message", "commit");
                    self.commit = r.varint()?;
                }
                9 => {
                    expect_wt!(wt, WT_LEN, "Message", "snapshot");
                    let body = r.len_delimited()?;
                    self.snapshot.get_or_insert_with(Box::default).merge_raw(
                        body,
                        src,
                        depth + 1,
                    )?;
                }
                10 => {
                    expect_wt!(wt, WT_VARINT, "Message", "reject");
                    self.reject = r.bool()?;
                }
                11 => {
                    expect_wt!(wt, WT_VARINT, "Message", "rejectHint");
                    self.reject_hint = r.varint()?;
                }
                12 => {
                    expect_wt!(wt, WT_LEN, "Message", "context");
                    self.context = Some(r.bytes()?);
                }
                13 => {
                    expect_wt!(wt, WT_VARINT, "Message", "vote");
                    self.vote = r.varint()?;
                }
                14 => {
                    expect_wt!(wt, WT_LEN, "Message", "responses");
                    let body = r.len_delimited()?;
                    self.responses
                        .push(Message::decode_raw(body, src, depth + 1)?);
                }
                _ => r.skip_field(field, wt, depth)?,
            }
        }
        Ok(())
    }
}

impl MergeRaw for ConfChange {
    fn merge_raw(&mut self, buf: &[u8], src: Src<'_>, depth: u32) -> Result<(), DecodeError> {
        check_depth(depth)?;
        let mut r = Reader::new(buf, src);
        while !r.is_empty() {
            let (field, wt) = r.tag()?;
            match field {
                1 => {
                    expect_wt!(wt, WT_VARINT, "ConfChange", "id");
                    self.id = r.varint()?;
                }
                2 => {
                    expect_wt!(wt, WT_VARINT, "ConfChange", "type");
                    self.change_type = ConfChangeType(r.enum_i32()?);
                }
                3 => {
                    expect_wt!(wt, WT_VARINT, "ConfChange", "node_id");
                    self.node_id = r.varint()?;
                }
                4 => {
                    expect_wt!(wt, WT_LEN, "ConfChange", "context");
                    self.context = Some(r.bytes()?);
                }
                _ => r.skip_field(field, wt, depth)?,
            }
        }
        Ok(())
    }
}

impl MergeRaw for ConfChangeSingle {
    fn merge_raw(&mut self, buf: &[u8], src: Src<'_>, depth: u32) -> Result<(), DecodeError> {
        check_depth(depth)?;
        let mut r = Reader::new(buf, src);
        while !r.is_empty() {
            let (field, wt) = r.tag()?;
            match field {
                1 => {
                    expect_wt!(wt, WT_VARINT, "ConfChangeSingle", "type");
                    self.change_type = ConfChangeType(r.enum_i32()?);
                }
                2 => {
                    expect_wt!(wt, WT_VARINT, "ConfChangeSingle", "node_id");
                    self.node_id = r.varint()?;
                }
                _ => r.skip_field(field, wt, depth)?,
            }
        }
        Ok(())
    }
}

impl MergeRaw for ConfChangeV2 {
    fn merge_raw(&mut self, buf: &[u8], src: Src<'_>, depth: u32) -> Result<(), DecodeError> {
        check_depth(depth)?;
        let mut r = Reader::new(buf, src);
        while !r.is_empty() {
            let (field, wt) = r.tag()?;
            match field {
                1 => {
                    expect_wt!(wt, WT_VARINT, "ConfChangeV2", "transition");
                    self.transition = ConfChangeTransition(r.enum_i32()?);
                }
                2 => {
                    expect_wt!(wt, WT_LEN, "ConfChangeV2", "changes");
                    let body = r.len_delimited()?;
                    self.changes
                        .push(ConfChangeSingle::decode_raw(body, src, depth + 1)?);
                }
                3 => {
                    expect_wt!(wt, WT_LEN, "ConfChangeV2", "context");
                    self.context = Some(r.bytes()?);
                }
                _ => r.skip_field(field, wt, depth)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `varint_len` is the length `put_varint` writes, at every bit width.
    #[test]
    fn varint_len_is_the_encoded_length() {
        for bits in 0..=64u32 {
            let top = if bits == 0 {
                0
            } else {
                u64::MAX >> (64 - bits)
            };
            for v in [top, top >> 1 | top & 1, (top >> 1) + 1] {
                let mut buf = Vec::new();
                put_varint(&mut buf, v);
                assert_eq!(varint_len(v), buf.len(), "{v:#x}");
            }
        }
    }
}
