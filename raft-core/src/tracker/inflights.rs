//! The window of append messages in flight to one follower.

/// One append message in flight.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Inflight {
    /// The index of the last entry the message carries.
    index: u64,
    /// The total payload size of the entries the message carries.
    bytes: u64,
}

/// A bounded FIFO of the append messages sent to a follower but not yet
/// acknowledged, limited both in count and in total bytes.
///
/// The leader records each append with [`Inflights::add`] (indexes must be
/// added in increasing order) and releases everything up to an acknowledged
/// index with [`Inflights::free_le`]. While [`Inflights::full`] the leader
/// stops streaming to the follower.
///
/// The ring buffer is allocated lazily and grows by doubling up to the
/// capacity, so an idle follower costs nothing beyond the struct itself.
///
/// Ported from etcd-io/raft tracker/inflights.go (`Inflights`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inflights {
    /// The ring buffer; its length grows lazily up to `size`. A boxed slice
    /// rather than a `Vec`: it only ever grows by reallocation, so a
    /// capacity word per follower would be dead weight.
    buffer: Box<[Inflight]>,
    /// The total bytes of the messages in flight.
    bytes: u64,
    /// The most bytes allowed in flight; 0 means unlimited.
    max_bytes: u64,
    /// Where the oldest message sits in `buffer`.
    ///
    /// Invariant: `start < size` whenever `count > 0`; 0 when empty.
    start: u32,
    /// The number of messages in flight.
    ///
    /// Invariant: `count <= size` and `count <= buffer.len()`.
    count: u32,
    /// The most messages allowed in flight (at most `u32::MAX`, see
    /// [`Inflights::new`]).
    size: u32,
}

impl Inflights {
    /// An empty window for at most `cap` messages and `max_bytes` bytes
    /// (0: no byte limit). Allocates nothing.
    ///
    /// A `cap` above `u32::MAX` is taken as `u32::MAX`: a window that large
    /// (64 GiB of bookkeeping) could never be allocated anyway.
    pub fn new(cap: usize, max_bytes: u64) -> Inflights {
        Inflights {
            buffer: Box::default(),
            bytes: 0,
            max_bytes,
            start: 0,
            count: 0,
            size: u32::try_from(cap).unwrap_or(u32::MAX),
        }
    }

    /// Records an append whose last entry is `index`, carrying `bytes` of
    /// payload. Indexes must be added in increasing order.
    ///
    /// # Panics
    /// If the window is [`full`](Inflights::full), as etcd does: the caller
    /// must check first.
    ///
    /// Ported from etcd-io/raft tracker/inflights.go (`Add`).
    pub fn add(&mut self, index: u64, bytes: u64) {
        assert!(!self.full(), "cannot add into a full inflights");
        // Both below `size <= u32::MAX`: the sum cannot overflow a u64.
        let mut next = self.start as u64 + self.count as u64;
        if next >= self.size as u64 {
            next -= self.size as u64;
        }
        let next = next as usize;
        if next >= self.buffer.len() {
            self.grow();
        }
        self.buffer[next] = Inflight { index, bytes };
        self.count += 1;
        self.bytes += bytes;
    }

    /// Doubles the buffer (1 to start with), never beyond `size`.
    fn grow(&mut self) {
        let new_len = match self.buffer.len() {
            0 => 1,
            n => n.saturating_mul(2).min(self.size as usize),
        };
        let mut grown = Vec::with_capacity(new_len);
        grown.extend_from_slice(&self.buffer);
        grown.resize(new_len, Inflight::default());
        self.buffer = grown.into_boxed_slice();
    }

    /// Releases every message whose last index is at most `to` (the
    /// follower acknowledged up to `to`).
    ///
    /// Ported from etcd-io/raft tracker/inflights.go (`FreeLE`).
    pub fn free_le(&mut self, to: u64) {
        if self.count == 0 || to < self.buffer[self.start as usize].index {
            // Nothing in flight at or below `to`.
            return;
        }
        let mut idx = self.start as usize;
        let mut freed = 0;
        let mut bytes = 0;
        while freed < self.count {
            let inflight = self.buffer[idx];
            if to < inflight.index {
                break;
            }
            bytes += inflight.bytes;
            freed += 1;
            idx += 1;
            if idx >= self.size as usize {
                idx -= self.size as usize;
            }
        }
        self.count -= freed;
        self.bytes -= bytes;
        // Restart from the front once empty, so the buffer does not grow
        // needlessly. `idx < size <= u32::MAX`.
        self.start = if self.count == 0 { 0 } else { idx as u32 };
    }

    /// Whether no more messages may be sent: the count or the byte limit is
    /// reached.
    pub fn full(&self) -> bool {
        self.count == self.size || (self.max_bytes != 0 && self.bytes >= self.max_bytes)
    }

    /// The number of messages in flight.
    pub fn count(&self) -> usize {
        self.count as usize
    }

    /// The most messages allowed in flight.
    pub fn cap(&self) -> usize {
        self.size as usize
    }

    /// The total bytes of the messages in flight.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The byte limit (0: none).
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// Frees the buffer if nothing is in flight (an idle, quiesced group).
    pub fn shrink_idle(&mut self) {
        if self.count == 0 {
            self.start = 0;
            self.buffer = Box::default();
        }
    }

    /// Forgets every message in flight (keeps the buffer).
    pub fn reset(&mut self) {
        self.start = 0;
        self.count = 0;
        self.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer from parallel lists of indexes and sizes.
    fn buffer(indexes: &[u64], sizes: &[u64]) -> Vec<Inflight> {
        assert_eq!(indexes.len(), sizes.len());
        indexes
            .iter()
            .zip(sizes)
            .map(|(&index, &bytes)| Inflight { index, bytes })
            .collect()
    }

    fn window(start: u32, count: u32, bytes: u64, buf: Vec<Inflight>) -> Inflights {
        Inflights {
            buffer: buf.into_boxed_slice(),
            bytes,
            max_bytes: 0,
            start,
            count,
            size: 10,
        }
    }

    /// etcd: TestInflightsAdd
    #[test]
    fn test_inflights_add() {
        // Without wrapping around: start at the front of a preallocated buffer.
        let mut ins = window(0, 0, 0, vec![Inflight::default(); 10]);
        for i in 0..5 {
            ins.add(i, 100 + i);
        }
        let want = window(
            0,
            5,
            510,
            buffer(
                &[0, 1, 2, 3, 4, 0, 0, 0, 0, 0],
                &[100, 101, 102, 103, 104, 0, 0, 0, 0, 0],
            ),
        );
        assert_eq!(ins, want);

        for i in 5..10 {
            ins.add(i, 100 + i);
        }
        let want = window(
            0,
            10,
            1045,
            buffer(
                &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
                &[100, 101, 102, 103, 104, 105, 106, 107, 108, 109],
            ),
        );
        assert_eq!(ins, want);

        // Wrapping around: start in the middle.
        let mut ins = window(5, 0, 0, vec![Inflight::default(); 10]);
        for i in 0..5 {
            ins.add(i, 100 + i);
        }
        let want = window(
            5,
            5,
            510,
            buffer(
                &[0, 0, 0, 0, 0, 0, 1, 2, 3, 4],
                &[0, 0, 0, 0, 0, 100, 101, 102, 103, 104],
            ),
        );
        assert_eq!(ins, want);

        for i in 5..10 {
            ins.add(i, 100 + i);
        }
        let want = window(
            5,
            10,
            1045,
            buffer(
                &[5, 6, 7, 8, 9, 0, 1, 2, 3, 4],
                &[105, 106, 107, 108, 109, 100, 101, 102, 103, 104],
            ),
        );
        assert_eq!(ins, want);
    }

    /// etcd: TestInflightFreeTo
    #[test]
    fn test_inflight_free_to() {
        let full_buffer = || {
            buffer(
                &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
                &[100, 101, 102, 103, 104, 105, 106, 107, 108, 109],
            )
        };
        let mut ins = Inflights::new(10, 0);
        assert!(ins.buffer.is_empty(), "allocates lazily");
        for i in 0..10 {
            ins.add(i, 100 + i);
        }

        ins.free_le(0);
        assert_eq!(ins, window(1, 9, 945, full_buffer()));

        ins.free_le(4);
        assert_eq!(ins, window(5, 5, 535, full_buffer()));

        ins.free_le(8);
        assert_eq!(ins, window(9, 1, 109, full_buffer()));

        // Wrap around.
        for i in 10..15 {
            ins.add(i, 100 + i);
        }
        ins.free_le(12);
        let wrapped = || {
            buffer(
                &[10, 11, 12, 13, 14, 5, 6, 7, 8, 9],
                &[110, 111, 112, 113, 114, 105, 106, 107, 108, 109],
            )
        };
        assert_eq!(ins, window(3, 2, 227, wrapped()));

        // Emptying the window moves the start back to the front.
        ins.free_le(14);
        assert_eq!(ins, window(0, 0, 0, wrapped()));
    }

    /// etcd: TestInflightsFull
    #[test]
    fn test_inflights_full() {
        struct Case {
            name: &'static str,
            size: usize,
            max_bytes: u64,
            full_at: u64,
            free_le: u64,
            again_at: u64,
        }
        let case = |name, size, max_bytes, full_at, free_le, again_at| Case {
            name,
            size,
            max_bytes,
            full_at,
            free_le,
            again_at,
        };
        let cases = [
            // A zero-capacity window is full from the start.
            case("always-full", 0, 0, 0, 0, 0),
            // One message fills it; acknowledging it makes room for one more.
            case("single-entry", 1, 0, 1, 1, 2),
            // The same when the single message also exceeds the byte limit.
            case("single-entry-overflow", 1, 10, 1, 1, 2),
            // Count-limited: 15 fill it, freeing 7 makes room for 7.
            case("multi-entry", 15, 0, 15, 6, 22),
            // Byte-limited: 4 messages (406 bytes) pass 400; freeing 3
            // (303 bytes) makes room for 3 more.
            case("slight-overflow", 8, 400, 4, 2, 7),
            // Exactly reaching the byte limit counts as full.
            case("exact-max-bytes", 8, 406, 4, 3, 8),
            // Byte-limited well before the count limit.
            case("larger-overflow", 15, 408, 5, 1, 6),
        ];
        for c in &cases {
            let mut ins = Inflights::new(c.size, c.max_bytes);
            let add_until_full = |ins: &mut Inflights, begin: u64, end: u64| {
                for i in begin..end {
                    assert!(!ins.full(), "{}: full at {i}, want {end}", c.name);
                    ins.add(i, 100 + i);
                }
                assert!(ins.full(), "{}: not full at {end}", c.name);
            };
            add_until_full(&mut ins, 0, c.full_at);
            ins.free_le(c.free_le);
            add_until_full(&mut ins, c.full_at, c.again_at);

            let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                ins.add(100, 1024);
            }))
            .is_err();
            assert!(panicked, "{}: add to a full window did not panic", c.name);
        }
    }

    /// etcd: TestInflightsReset
    #[test]
    fn test_inflights_reset() {
        let mut ins = Inflights::new(10, 1000);
        // Reset periodically, as a leader does on state changes: the byte
        // count must not leak across resets.
        let mut index = 0;
        for _ in 0..100 {
            ins.reset();
            // Five messages stay below both limits.
            for _ in 0..5 {
                assert!(!ins.full());
                index += 1;
                ins.add(index, 16);
            }
            // Acknowledge all but the last two.
            ins.free_le(index - 2);
            assert!(!ins.full());
            assert_eq!(ins.count(), 2);
        }
        ins.free_le(index);
        assert_eq!(ins.count(), 0);
        assert_eq!(ins.bytes(), 0);
        assert_eq!(ins.cap(), 10);
    }
}
