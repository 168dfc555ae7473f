//! The on-disk formats: log records (header, CRC32C, payload of group
//! operations) and snapshot files.
//!
//! A log record, aligned to 8 bytes in its segment:
//!
//! ```text
//! 0  magic "RLG1"
//! 4  len     u32 LE   payload length
//! 8  seq     u64 LE   one more than the record before it, across segments
//! 16 synced  u64 LE   the highest seq durable when this record was written
//! 24 kind    u8       1 = batch, 2 = checkpoint (first record of a segment)
//! 25 0 0 0
//! 28 crc     u32 LE   CRC32C of bytes 0..28 and the payload
//! 32 payload, then zeros up to the next multiple of 8
//! ```
//!
//! A payload is a sequence of operations, each `op u8 | group u64 LE |
//! body`; the bodies are listed at [`Op`]. Integers are little-endian;
//! raftpb messages are length-prefixed (`u32`).

use raftlet::pb::{ConfState, Decode, Encode, HardState, SnapshotMetadata, ENTRY_HEAD_MAX};

/// The record magic.
pub(crate) const MAGIC: [u8; 4] = *b"RLG1";
/// The size of a record header.
pub(crate) const HEADER: usize = 32;
/// A record holding a batch of writes.
pub(crate) const KIND_BATCH: u8 = 1;
/// A record restating the state of every group (first of each segment).
pub(crate) const KIND_CHECKPOINT: u8 = 2;
/// The largest payload a record may claim (anything larger is damage).
pub(crate) const MAX_PAYLOAD: usize = 1 << 30;

const OP_ENTRIES: u8 = 1;
const OP_HARD_STATE: u8 = 2;
const OP_CONF_STATE: u8 = 3;
const OP_SNAPSHOT_APPLY: u8 = 4;
const OP_SNAPSHOT_CREATE: u8 = 5;
const OP_COMPACT: u8 = 6;
const OP_REMOVE: u8 = 7;
const OP_GROUP_STATE: u8 = 8;

/// `x` rounded up to a multiple of 8.
pub(crate) fn align8(x: usize) -> usize {
    (x + 7) & !7
}

/// A parsed record header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) len: usize,
    pub(crate) seq: u64,
    pub(crate) synced: u64,
    pub(crate) kind: u8,
}

/// The header of a record holding `payload`.
pub(crate) fn record_header(kind: u8, seq: u64, synced: u64, payload: &[u8]) -> [u8; HEADER] {
    let (mut h, crc) = header_start(kind, seq, synced, payload.len());
    header_finish(&mut h, crc32c::crc32c_append(crc, payload));
    h
}

/// A record header for a payload of `len` bytes without its checksum, and
/// the checksum of its fields, which [`crc32c::crc32c_append`] continues
/// over the payload (a writer that checksums the payload as it copies it).
pub(crate) fn header_start(kind: u8, seq: u64, synced: u64, len: usize) -> ([u8; HEADER], u32) {
    let mut h = [0u8; HEADER];
    h[..4].copy_from_slice(&MAGIC);
    h[4..8].copy_from_slice(&(len as u32).to_le_bytes());
    h[8..16].copy_from_slice(&seq.to_le_bytes());
    h[16..24].copy_from_slice(&synced.to_le_bytes());
    h[24] = kind;
    let crc = crc32c::crc32c(&h[..HEADER_CRC_AT]);
    (h, crc)
}

/// Completes a header of [`header_start`] with the checksum of its fields
/// and payload.
pub(crate) fn header_finish(h: &mut [u8; HEADER], crc: u32) {
    h[HEADER_CRC_AT..].copy_from_slice(&crc.to_le_bytes());
}

/// Where a header's checksum is (see [`header_start`]).
pub(crate) const HEADER_CRC_AT: usize = 28;

/// Appends a whole record (header, payload, padding) to `out`.
pub(crate) fn encode_record(out: &mut Vec<u8>, kind: u8, seq: u64, synced: u64, payload: &[u8]) {
    let start = out.len();
    out.extend_from_slice(&record_header(kind, seq, synced, payload));
    out.extend_from_slice(payload);
    out.resize(start + align8(HEADER + payload.len()), 0);
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Parses the record at `off` of `data`: its header, its payload and the
/// offset of the next record. `Err` says why it is not a valid record.
pub(crate) fn parse_record(data: &[u8], off: usize) -> Result<(Header, &[u8], usize), String> {
    let Some(h) = data.get(off..).filter(|r| r.len() >= HEADER) else {
        return Err("truncated record header".into());
    };
    if h[..4] != MAGIC {
        return Err("bad record magic".into());
    }
    let len = u32_at(h, 4) as usize;
    let kind = h[24];
    if kind != KIND_BATCH && kind != KIND_CHECKPOINT {
        return Err(format!("unknown record kind {kind}"));
    }
    if h[25..HEADER_CRC_AT] != [0, 0, 0] {
        return Err("reserved header bytes are not zero".into());
    }
    if len > MAX_PAYLOAD || h.len() - HEADER < len {
        return Err(format!("record length {len} runs past the end of the file"));
    }
    let payload = &h[HEADER..HEADER + len];
    let crc = crc32c::crc32c_append(crc32c::crc32c(&h[..HEADER_CRC_AT]), payload);
    if crc != u32_at(h, HEADER_CRC_AT) {
        return Err("checksum mismatch".into());
    }
    let header = Header {
        len,
        seq: u64_at(h, 8),
        synced: u64_at(h, 16),
        kind,
    };
    Ok((header, payload, off + align8(HEADER + len)))
}

/// One entry inside an [`Op::Entries`]: its term and where its raftpb bytes
/// sit in the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EntryRef {
    pub(crate) term: u64,
    /// Offset of the entry's raftpb bytes in the payload.
    pub(crate) at: usize,
    pub(crate) len: u32,
}

/// One decoded operation of a payload.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Op {
    /// `first u64 | count u32 | count × (term u64 | len u32 | raftpb Entry)`:
    /// entries `first..first+count`, replacing the group's log from
    /// `first` on.
    Entries { first: u64, entries: Vec<EntryRef> },
    /// `len u32 | raftpb HardState`.
    HardState(HardState),
    /// `len u32 | raftpb ConfState`: the configuration `initial_state`
    /// reports.
    ConfState(ConfState),
    /// `len u32 | raftpb SnapshotMetadata`: a snapshot (in its own file) was
    /// applied; the log restarts after it.
    SnapshotApply(SnapshotMetadata),
    /// `len u32 | raftpb SnapshotMetadata`: a snapshot (in its own file) was
    /// taken of the state machine; the log is kept.
    SnapshotCreate(SnapshotMetadata),
    /// `index u64`: entries up to `index` are dropped; its term is kept.
    Compact(u64),
    /// (no body): the group is deleted.
    Remove,
    /// `len u32 | raftpb HardState | len u32 | raftpb SnapshotMetadata |
    /// flags u8 (bit 0: a snapshot file exists) | offset u64 | offset_term
    /// u64`: the group's whole state but its entries (in checkpoints).
    GroupState {
        hard_state: HardState,
        snapshot: SnapshotMetadata,
        snapshot_file: bool,
        offset: u64,
        offset_term: u64,
    },
}

/// Builds a payload.
#[derive(Debug, Default, Clone)]
pub(crate) struct PayloadWriter {
    pub(crate) buf: Vec<u8>,
}

impl PayloadWriter {
    fn head(&mut self, op: u8, group: u64) {
        self.buf.push(op);
        self.buf.extend_from_slice(&group.to_le_bytes());
    }

    fn msg<M: Encode>(&mut self, m: &M) {
        self.buf
            .extend_from_slice(&(m.encoded_len() as u32).to_le_bytes());
        m.encode(&mut self.buf);
    }

    /// Starts an entries operation of `count` entries from `first`; follow
    /// with `count` calls of [`PayloadWriter::entry`].
    pub(crate) fn entries_head(&mut self, group: u64, first: u64, count: u32) {
        self.head(OP_ENTRIES, group);
        self.buf.extend_from_slice(&first.to_le_bytes());
        self.buf.extend_from_slice(&count.to_le_bytes());
    }

    /// One entry of an entries operation, from its raftpb bytes.
    pub(crate) fn entry(&mut self, term: u64, raw: &[u8]) {
        self.entry_frame(term, raw.len());
        self.buf.extend_from_slice(raw);
    }

    /// An entry's framing: its term and the length of its raftpb bytes,
    /// which follow.
    fn entry_frame(&mut self, term: u64, len: usize) {
        self.buf.extend_from_slice(&term.to_le_bytes());
        self.buf.extend_from_slice(&(len as u32).to_le_bytes());
    }

    /// One entry of an entries operation, encoded here: its fields go to
    /// a stack buffer first, which gives the length without measuring the
    /// entry in a separate pass, then the framing, the fields and the data
    /// are appended after one reservation.
    pub(crate) fn entry_encoded(&mut self, e: &raftlet::pb::Entry) {
        let mut head = [0u8; ENTRY_HEAD_MAX];
        let n = e.encode_head(&mut head);
        let data: &[u8] = e.data.as_deref().unwrap_or_default();
        let len = n + data.len();
        self.buf.reserve(12 + len);
        self.entry_frame(e.term, len);
        self.buf.extend_from_slice(&head[..n]);
        self.buf.extend_from_slice(data);
    }

    pub(crate) fn hard_state(&mut self, group: u64, hs: &HardState) {
        self.head(OP_HARD_STATE, group);
        self.msg(hs);
    }

    pub(crate) fn conf_state(&mut self, group: u64, cs: &ConfState) {
        self.head(OP_CONF_STATE, group);
        self.msg(cs);
    }

    pub(crate) fn snapshot_apply(&mut self, group: u64, meta: &SnapshotMetadata) {
        self.head(OP_SNAPSHOT_APPLY, group);
        self.msg(meta);
    }

    pub(crate) fn snapshot_create(&mut self, group: u64, meta: &SnapshotMetadata) {
        self.head(OP_SNAPSHOT_CREATE, group);
        self.msg(meta);
    }

    pub(crate) fn compact(&mut self, group: u64, index: u64) {
        self.head(OP_COMPACT, group);
        self.buf.extend_from_slice(&index.to_le_bytes());
    }

    pub(crate) fn remove(&mut self, group: u64) {
        self.head(OP_REMOVE, group);
    }

    pub(crate) fn group_state(
        &mut self,
        group: u64,
        hs: &HardState,
        snapshot: &SnapshotMetadata,
        snapshot_file: bool,
        offset: u64,
        offset_term: u64,
    ) {
        self.head(OP_GROUP_STATE, group);
        self.msg(hs);
        self.msg(snapshot);
        self.buf.push(u8::from(snapshot_file));
        self.buf.extend_from_slice(&offset.to_le_bytes());
        self.buf.extend_from_slice(&offset_term.to_le_bytes());
    }
}

/// The error for a payload that ends inside an operation, at byte `pos`.
#[cold]
fn truncated(pos: usize) -> String {
    format!("operation truncated at payload byte {pos}")
}

/// Reads the operations of a payload one by one.
pub(crate) struct PayloadReader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> PayloadReader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        PayloadReader { buf, pos: 0 }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| truncated(self.pos))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32_at(self.take(4)?, 0))
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64_at(self.take(8)?, 0))
    }

    fn msg<M: Decode>(&mut self) -> Result<M, String> {
        let n = self.u32()? as usize;
        M::decode(self.take(n)?).map_err(|e| e.to_string())
    }

    /// The next operation and its group, or `None` at the end.
    pub(crate) fn next_op(&mut self) -> Result<Option<(u64, Op)>, String> {
        if self.pos == self.buf.len() {
            return Ok(None);
        }
        let op = self.u8()?;
        let group = self.u64()?;
        let op = match op {
            OP_ENTRIES => {
                let first = self.u64()?;
                let count = self.u32()? as usize;
                // Each entry takes at least 12 bytes: bound the allocation.
                if count > (self.buf.len() - self.pos) / 12 {
                    return Err(format!("entry count {count} exceeds the payload"));
                }
                if first == 0 || first.checked_add(count as u64).is_none() {
                    return Err(format!("bad first index {first}"));
                }
                let mut entries = Vec::with_capacity(count);
                let buf = self.buf;
                let mut pos = self.pos;
                for _ in 0..count {
                    // One bounds check for the framing, one for the entry.
                    let Some(frame) = buf.get(pos..pos + 12) else {
                        return Err(truncated(pos));
                    };
                    let term = u64_at(frame, 0);
                    let len = u32_at(frame, 8);
                    let at = pos + 12;
                    if len as usize > buf.len() - at {
                        return Err(truncated(at));
                    }
                    entries.push(EntryRef { term, at, len });
                    pos = at + len as usize;
                }
                self.pos = pos;
                Op::Entries { first, entries }
            }
            OP_HARD_STATE => Op::HardState(self.msg()?),
            OP_CONF_STATE => Op::ConfState(self.msg()?),
            OP_SNAPSHOT_APPLY => Op::SnapshotApply(self.msg()?),
            OP_SNAPSHOT_CREATE => Op::SnapshotCreate(self.msg()?),
            OP_COMPACT => Op::Compact(self.u64()?),
            OP_REMOVE => Op::Remove,
            OP_GROUP_STATE => {
                let hard_state = self.msg()?;
                let snapshot = self.msg()?;
                let flags = self.u8()?;
                if flags > 1 {
                    return Err(format!("unknown group-state flags {flags}"));
                }
                Op::GroupState {
                    hard_state,
                    snapshot,
                    snapshot_file: flags == 1,
                    offset: self.u64()?,
                    offset_term: self.u64()?,
                }
            }
            other => return Err(format!("unknown operation {other}")),
        };
        Ok(Some((group, op)))
    }
}

/// The snapshot file magic.
const SNAP_MAGIC: [u8; 4] = *b"RLS1";
/// The size of a snapshot file header.
const SNAP_HEADER: usize = 24;

/// A snapshot file: `magic "RLS1" | 0 u32 | len u64 | crc32c(payload) u32 |
/// crc32c(bytes 0..20) u32 | payload (raftpb Snapshot, len bytes)`.
pub(crate) fn encode_snapshot_file(snap: &raftlet::pb::Snapshot) -> Vec<u8> {
    let payload = snap.encode_to_vec();
    let mut out = Vec::with_capacity(SNAP_HEADER + payload.len());
    out.extend_from_slice(&SNAP_MAGIC);
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(&payload).to_le_bytes());
    let hcrc = crc32c::crc32c(&out[..20]);
    out.extend_from_slice(&hcrc.to_le_bytes());
    out.extend_from_slice(&payload);
    out
}

/// Checks and decodes a snapshot file. `Err` says what is wrong.
pub(crate) fn decode_snapshot_file(data: Vec<u8>) -> Result<raftlet::pb::Snapshot, String> {
    if data.len() < SNAP_HEADER {
        return Err(format!(
            "{} bytes: shorter than the header (half written?)",
            data.len()
        ));
    }
    if data[..4] != SNAP_MAGIC {
        return Err("bad magic".into());
    }
    if crc32c::crc32c(&data[..20]) != u32_at(&data, 20) {
        return Err("header checksum mismatch".into());
    }
    let len = u64_at(&data, 8);
    let have = (data.len() - SNAP_HEADER) as u64;
    if have != len {
        return Err(format!(
            "{have} bytes of data where the header says {len} (half written?)"
        ));
    }
    if crc32c::crc32c(&data[SNAP_HEADER..]) != u32_at(&data, 16) {
        return Err("data checksum mismatch".into());
    }
    let bytes = bytes::Bytes::from(data).slice(SNAP_HEADER..);
    raftlet::pb::Snapshot::decode_bytes(&bytes).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_any_flipped_bit_is_caught() {
        let mut w = PayloadWriter::default();
        w.hard_state(
            7,
            &HardState {
                term: 3,
                vote: 1,
                commit: 2,
            },
        );
        w.compact(7, 5);
        let mut rec = Vec::new();
        encode_record(&mut rec, KIND_BATCH, 9, 8, &w.buf);
        assert_eq!(rec.len() % 8, 0);
        let (h, payload, next) = parse_record(&rec, 0).unwrap();
        assert_eq!(
            (h.seq, h.synced, h.kind, next),
            (9, 8, KIND_BATCH, rec.len())
        );
        let mut r = PayloadReader::new(payload);
        assert_eq!(
            r.next_op().unwrap(),
            Some((
                7,
                Op::HardState(HardState {
                    term: 3,
                    vote: 1,
                    commit: 2
                })
            ))
        );
        assert_eq!(r.next_op().unwrap(), Some((7, Op::Compact(5))));
        assert_eq!(r.next_op().unwrap(), None);
        let used = HEADER + payload.len();
        for bit in 0..used * 8 {
            let mut bad = rec.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(parse_record(&bad, 0).is_err(), "bit {bit} not caught");
        }
    }

    #[test]
    fn truncated_payloads_are_errors_not_panics() {
        let mut w = PayloadWriter::default();
        w.entries_head(1, 4, 2);
        w.entry_encoded(&raftlet::pb::Entry::new(1, 4, &b"a"[..]));
        w.entry_encoded(&raftlet::pb::Entry::new(1, 5, &b"b"[..]));
        w.group_state(
            2,
            &HardState::default(),
            &SnapshotMetadata::default(),
            true,
            3,
            1,
        );
        for cut in 0..w.buf.len() {
            let mut r = PayloadReader::new(&w.buf[..cut]);
            let mut n = 0;
            loop {
                match r.next_op() {
                    Ok(Some(_)) => n += 1,
                    Ok(None) => break,
                    Err(_) => break,
                }
                assert!(n <= 2);
            }
        }
    }

    #[test]
    fn snapshot_files_detect_truncation_and_flips() {
        let snap = raftlet::pb::Snapshot {
            data: Some(bytes::Bytes::from_static(b"state machine")),
            metadata: SnapshotMetadata {
                conf_state: ConfState::from_voters([1, 2]),
                index: 10,
                term: 2,
            },
        };
        let file = encode_snapshot_file(&snap);
        assert_eq!(decode_snapshot_file(file.clone()).unwrap(), snap);
        for cut in 0..file.len() {
            assert!(decode_snapshot_file(file[..cut].to_vec()).is_err());
        }
        for bit in 0..file.len() * 8 {
            let mut bad = file.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(decode_snapshot_file(bad).is_err(), "bit {bit}");
        }
    }
}
