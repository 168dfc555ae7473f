//! `raftlet_ready`: a Ready batch with zero-copy accessors.

use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use raftlet_core::pb::{Encode, Entry, Message};
use raftlet_core::Ready;

use crate::node::NodeTrack;
use crate::raftlet_bytes;
use crate::result::{fail, raftlet_result, raftlet_result::*};
use raftlet_disk::ReadyWrites;

/// A message of a Ready: recipient, type and its raftpb encoding.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct raftlet_message_view {
    /// The recipient's id.
    pub to: u64,
    /// The sender's id.
    pub from: u64,
    /// The raftpb MessageType number (MsgApp = 3, ...).
    pub msg_type: i32,
    /// The raftpb-encoded message, ready to send; owned by the ready.
    pub data: raftlet_bytes,
}

/// An entry of a Ready.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct raftlet_entry_view {
    /// The entry's index.
    pub index: u64,
    /// The entry's term.
    pub term: u64,
    /// The raftpb EntryType number (0 normal, 1 conf change, 2 conf change v2).
    pub entry_type: i32,
    /// The payload; owned by the ready.
    pub data: raftlet_bytes,
}

/// Term, vote and commit.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct raftlet_hard_state {
    /// The current term.
    pub term: u64,
    /// The vote in that term (0 = none).
    pub vote: u64,
    /// The commit index.
    pub commit: u64,
}

/// The leader and this node's role (0 follower, 1 candidate, 2 leader,
/// 3 pre-candidate).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct raftlet_soft_state {
    /// The known leader (0 = none).
    pub leader_id: u64,
    /// The role.
    pub role: u32,
}

/// A snapshot of a Ready.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct raftlet_snapshot_view {
    /// The last index the snapshot covers.
    pub index: u64,
    /// The term of that index.
    pub term: u64,
    /// The host's state-machine data; owned by the ready.
    pub data: raftlet_bytes,
    /// The whole snapshot, raftpb-encoded; owned by the ready.
    pub encoded: raftlet_bytes,
}

/// The answer to a read_index request.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct raftlet_read_state_view {
    /// Reads are linearizable once the host applied up to this index.
    pub index: u64,
    /// The context passed to raftlet_node_read_index; owned by the ready.
    pub request_ctx: raftlet_bytes,
}

/// An opaque Ready batch, created by raftlet_node_ready and released by
/// raftlet_ready_free. Every view it hands out (bytes included) stays valid
/// until raftlet_ready_free, even after the ready is advanced; accessors
/// called after raftlet_node_advance (or raftlet_node_advance_append) of
/// this ready return RAFTLET_ERR_READY_STALE. A ready only covered by the
/// advance of a later one stays readable, but can no longer be persisted
/// or advanced. A ready may outlive its node (it is then only readable).
/// Its contents are immutable: it may be read from any thread.
pub struct raftlet_ready {
    pub(crate) rd: Ready,
    /// The node that produced it: its generation (to refuse a ready of
    /// another node) and the last ready it acknowledged.
    pub(crate) track: Arc<NodeTrack>,
    /// What advancing this ready reports applied: the last committed
    /// index handed out by it and the readies before it.
    pub(crate) applying: u64,
    /// What acknowledging it makes the node take as durable.
    pub(crate) written: ReadyWrites,
    /// Set once, by the one call that advances this ready.
    stale: AtomicBool,
    /// A light ready (raftlet_node_advance_light): committed entries and
    /// messages only, nothing to persist but its commit index (`Some`
    /// when it moved); advancing it reports its entries applied.
    pub(crate) light: Option<Option<u64>>,
    /// Whether advancing it would change nothing in the node (see
    /// `raftlet_ready_flat::advance_is_noop`): set when its write is
    /// acknowledged as it is taken and everything handed out to apply so
    /// far was reported applied.
    pub(crate) noop: bool,
    /// Whether the node had no ready when this light ready was handed out
    /// and reporting its entries applied would give it none (see
    /// `raftlet_ready_flat::idle_after_apply`).
    pub(crate) idle_after_apply: bool,
    /// Entry vectors of an earlier ready (its `entries` and
    /// `committed_entries`, emptied), offered to the node that makes the
    /// next ready in this box ([`NewReady::new_with`]): a leader's busy
    /// loop then allocates none.
    spare_entries: [Vec<Entry>; 2],
    /// Encodings of `messages` then `persisted_messages`, back to back.
    buf: Vec<u8>,
    spans: Vec<(usize, usize)>,
    snapshot_encoded: Vec<u8>,
    /// The whole ready as one envelope (raftlet_ready_encode), built on
    /// first use.
    envelope: OnceLock<Vec<u8>>,
    /// The view arrays of raftlet_ready_view, built when the ready is
    /// handed out ([`NewReady::seal`]), never changed after.
    flat: FlatArrays,
}

/// The smallest message-encoding buffer a node keeps for its next ready
/// (see `Drop`): below it a buffer stays with the thread, whose next ready
/// of any group reuses it, and an idle group, whose readies carry a
/// heartbeat response or two, keeps no buffer at all.
const MIN_SPARE_BUF: usize = 4 << 10;

/// The arrays raftlet_ready_view points into. Their pointers point into
/// the ready's own immutable data (the message encodings, the entries'
/// payloads, the read contexts), which lives as long as the ready.
struct FlatArrays {
    messages: Vec<raftlet_message_view>,
    entries: Vec<raftlet_entry_view>,
    committed_entries: Vec<raftlet_entry_view>,
    read_states: Vec<raftlet_read_state_view>,
    /// The whole flat view over these arrays (raftlet_ready_view copies
    /// it; raftlet_node_ready_flat hands out a pointer to it).
    view: raftlet_ready_flat,
}

// SAFETY: the raw pointers inside point into data the ready owns and never
// mutates after it is handed out; reading them from several threads is as
// safe as reading the ready itself, which is immutable from then on.
unsafe impl Send for FlatArrays {}
// SAFETY: as above: shared reads of immutable data only.
unsafe impl Sync for FlatArrays {}

/// A box for a ready, kept by a thread for its next one (a ready is about
/// 800 bytes, allocated and freed once per Ready cycle otherwise) with the
/// arrays of the ready it held still in it, emptied: a Ready cycle then
/// allocates none of them, and nothing is moved in or out.
///
/// Invariant: the array fields of the box (`spare_entries`, `buf`, `spans`
/// and the four arrays of `flat`) are initialised and empty; every other
/// field is not initialised.
struct Home(Box<MaybeUninit<raftlet_ready>>);

impl Home {
    /// A new box with empty arrays.
    fn new() -> Home {
        let mut b = Box::<raftlet_ready>::new_uninit();
        let p = b.as_mut_ptr();
        // SAFETY: `p` is the box's memory; each array field is written
        // once through `addr_of_mut!`, which makes the invariant hold.
        unsafe {
            use std::ptr::addr_of_mut;
            addr_of_mut!((*p).spare_entries).write([Vec::new(), Vec::new()]);
            addr_of_mut!((*p).buf).write(Vec::new());
            addr_of_mut!((*p).spans).write(Vec::new());
            addr_of_mut!((*p).flat.messages).write(Vec::new());
            addr_of_mut!((*p).flat.entries).write(Vec::new());
            addr_of_mut!((*p).flat.committed_entries).write(Vec::new());
            addr_of_mut!((*p).flat.read_states).write(Vec::new());
        }
        Home(b)
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let p = self.0.as_mut_ptr();
        // SAFETY: the array fields are initialised (the invariant) and
        // dropped once here; the box itself is freed after, as
        // MaybeUninit, which drops nothing else.
        unsafe {
            use std::ptr::{addr_of_mut, drop_in_place};
            drop_in_place(addr_of_mut!((*p).spare_entries));
            drop_in_place(addr_of_mut!((*p).buf));
            drop_in_place(addr_of_mut!((*p).spans));
            drop_in_place(addr_of_mut!((*p).flat.messages));
            drop_in_place(addr_of_mut!((*p).flat.entries));
            drop_in_place(addr_of_mut!((*p).flat.committed_entries));
            drop_in_place(addr_of_mut!((*p).flat.read_states));
        }
    }
}

/// What the freed readies of a thread leave for its next ones: their
/// boxes, arrays inside. Kept per thread, not per node, so that an idle
/// group keeps nothing; a few, for hosts that hold several readies at
/// once (one per group of a batch).
#[derive(Default)]
struct Spare {
    homes: Vec<Home>,
}

/// How many boxes a thread keeps.
const SPARE_DEPTH: usize = 4;

thread_local! {
    static SPARE: RefCell<Spare> = Default::default();
}

impl Spare {
    /// A box for a new ready: the thread's spare, or a new one.
    fn take() -> Home {
        SPARE
            .try_with(|s| s.borrow_mut().homes.pop())
            .ok()
            .flatten()
            .unwrap_or_else(Home::new)
    }

    /// Frees a ready: its arrays emptied in place and its box kept for the
    /// thread's next ready, when the thread has room; a large
    /// message-encoding buffer goes back to the ready's node instead, whose
    /// next readies are likely as large (a leader's appends).
    fn free(ready: Box<raftlet_ready>) {
        // The largest message-encoding buffer a node keeps for its next
        // ready.
        const MAX_SPARE_BUF: usize = 64 << 20;
        // The most elements of an array a thread keeps (40 bytes a view).
        const MAX_VIEWS: usize = 1024;
        let raw = Box::into_raw(ready);
        // SAFETY: `raw` is the live, uniquely owned ready just taken out of
        // its box. Its array fields are emptied (or replaced by empty
        // ones) in place and every other field is dropped once, which
        // leaves the box as a Home's invariant says: it is owned as such
        // from here, with the same layout.
        let home = unsafe {
            use std::ptr::{addr_of_mut, drop_in_place};
            let r = &mut *raw;
            /// Empties `v` in place, or lets it go when its capacity is
            /// over `max`.
            fn empty<T>(v: &mut Vec<T>, max: usize) {
                if v.capacity() > max {
                    *v = Vec::new();
                } else {
                    v.clear();
                }
            }
            let buf = &mut r.buf;
            if (MIN_SPARE_BUF..=MAX_SPARE_BUF).contains(&buf.capacity()) {
                let mut spare = r.track.spare_buf.lock();
                match spare.as_mut() {
                    Some(s) if s.capacity() >= buf.capacity() => {}
                    Some(s) => **s = std::mem::take(buf),
                    None => *spare = Some(Box::new(std::mem::take(buf))),
                }
            }
            // One the node did not take (it keeps a larger one) is not the
            // thread's to keep either.
            empty(buf, MIN_SPARE_BUF - 1);
            let f = &mut r.flat;
            empty(&mut r.spans, MAX_VIEWS);
            empty(&mut f.messages, MAX_VIEWS);
            empty(&mut f.entries, MAX_VIEWS);
            empty(&mut f.committed_entries, MAX_VIEWS);
            empty(&mut f.read_states, MAX_VIEWS);
            // The ready's entry vectors that held entries, emptied, for the
            // node of the next ready made in this box (the ones there before
            // go with `rd`). An empty one is let go with its capacity: a
            // node whose readies carry no entries stops cycling vectors.
            let rd = &mut r.rd;
            for (slot, v) in r
                .spare_entries
                .iter_mut()
                .zip([&mut rd.entries, &mut rd.committed_entries])
            {
                if !v.is_empty() && v.capacity() <= MAX_VIEWS {
                    v.clear();
                    std::mem::swap(slot, v);
                }
            }
            drop_in_place(addr_of_mut!((*raw).rd));
            drop_in_place(addr_of_mut!((*raw).track));
            drop_in_place(addr_of_mut!((*raw).applying));
            drop_in_place(addr_of_mut!((*raw).written));
            drop_in_place(addr_of_mut!((*raw).stale));
            drop_in_place(addr_of_mut!((*raw).light));
            drop_in_place(addr_of_mut!((*raw).noop));
            drop_in_place(addr_of_mut!((*raw).idle_after_apply));
            drop_in_place(addr_of_mut!((*raw).snapshot_encoded));
            drop_in_place(addr_of_mut!((*raw).envelope));
            drop_in_place(addr_of_mut!((*raw).flat.view));
            Home(Box::from_raw(raw.cast::<MaybeUninit<raftlet_ready>>()))
        };
        // During thread teardown the thread-local may be gone: the box and
        // its arrays are freed then.
        let _ = SPARE.try_with(|s| {
            let mut s = s.borrow_mut();
            if s.homes.len() < SPARE_DEPTH {
                s.homes.push(home);
            }
        });
    }
}

/// At least the encoded length of `m`, computed cheaply for a message
/// without entries, snapshot or responses (heartbeats, votes and their
/// responses: every scalar field at its longest), exactly for the others.
fn encoded_len_bound(m: &Message) -> usize {
    if m.entries.is_empty() && m.snapshot.is_none() && m.responses.is_empty() {
        // Eleven scalar fields and the context's key and length, each at
        // most a one-byte key and a ten-byte varint.
        const SCALARS: usize = 12 * 11;
        SCALARS + m.context.as_ref().map_or(0, |c| c.len())
    } else {
        m.encoded_len()
    }
}

/// Appends the encodings of `msgs` to `buf` (room for them reserved by
/// the caller, from [`encoded_len_bound`]) and their spans to `spans`.
fn encode_all(msgs: &[Message], buf: &mut Vec<u8>, spans: &mut Vec<(usize, usize)>) {
    for m in msgs {
        let start = buf.len();
        m.encode_reserved(buf);
        spans.push((start, buf.len() - start));
    }
}

/// Makes room for `extra` more bytes in a ready's message-encoding buffer:
/// a large write takes the buffer the node's last large ready left (see
/// `Drop`) when that is larger.
fn reserve_buf(buf: &mut Vec<u8>, track: &NodeTrack, extra: usize) {
    let need = buf.len() + extra;
    if need > buf.capacity() && need >= MIN_SPARE_BUF && buf.is_empty() {
        if let Some(spare) = track.spare_buf.lock().as_mut() {
            if spare.capacity() > buf.capacity() {
                std::mem::swap(buf, &mut **spare);
                buf.clear();
            }
        }
    }
    buf.reserve(extra);
}

/// A ready being made: owned by the call that takes it until
/// [`NewReady::seal`] builds its views and hands it out. Dropping it
/// frees it.
pub(crate) struct NewReady(Box<raftlet_ready>);

impl std::ops::Deref for NewReady {
    type Target = raftlet_ready;
    fn deref(&self) -> &raftlet_ready {
        &self.0
    }
}

impl std::ops::DerefMut for NewReady {
    fn deref_mut(&mut self) -> &mut raftlet_ready {
        &mut self.0
    }
}

/// Names every field of raftlet_ready, with no `..`: adding a field fails
/// to compile here until the code that handles the fields one by one
/// handles it too: [`NewReady::new_with`] writes them into uninitialised
/// memory, [`Spare::free`] drops them (all but the arrays, which it empties
/// in place), and [`Home`] makes and drops the arrays.
#[allow(dead_code)]
fn fields_written_in_place(r: &raftlet_ready) {
    let raftlet_ready {
        rd: _,
        track: _,
        applying: _,
        written: _,
        stale: _,
        light: _,
        noop: _,
        idle_after_apply: _,
        spare_entries: _,
        buf: _,
        spans: _,
        snapshot_encoded: _,
        envelope: _,
        flat:
            FlatArrays {
                messages: _,
                entries: _,
                committed_entries: _,
                read_states: _,
                view: _,
            },
    } = r;
}

impl NewReady {
    /// A ready for `rd`, its messages encoded.
    pub(crate) fn new(
        rd: Ready,
        track: Arc<NodeTrack>,
        applying: u64,
        written: ReadyWrites,
    ) -> NewReady {
        NewReady::new_with(&mut (), |_, _| rd, |_, _| (applying, written), track)
    }

    /// A ready for the `Ready` that `make` returns, made in place: `make`
    /// writes it straight into the ready's box (a `Ready` built on the
    /// stack and then moved in was two large copies per Ready cycle). It
    /// gets the entry vectors the box's last ready left, to offer to its
    /// node (`RawNode::recycle_entries`; what the node does not keep stays
    /// in the box). `book` then reads the Ready, with `state` back, and
    /// returns what advancing the ready reports applied and what its write
    /// must leave in the storage.
    pub(crate) fn new_with<S: ?Sized>(
        state: &mut S,
        make: impl FnOnce(&mut S, &mut [Vec<Entry>; 2]) -> Ready,
        book: impl FnOnce(&mut S, &Ready) -> (u64, ReadyWrites),
        track: Arc<NodeTrack>,
    ) -> NewReady {
        let mut home = Spare::take();
        // Written field by field into the box: a whole raftlet_ready
        // (about 800 bytes) built on the stack and then moved into the box
        // was a large copy on every Ready cycle.
        let p = home.0.as_mut_ptr();
        // SAFETY: `p` is the box's memory, laid out for a raftlet_ready:
        // its arrays are initialised and empty (Home's invariant) and used
        // in place; every other field is not initialised yet. `rd` is
        // written first and only read after, the others are each written
        // once, all through `addr_of_mut!` (no reference to uninitialised
        // memory is made), and `fields_written_in_place` fails to compile
        // when a field is added without being written here. A panic before
        // the last write drops the arrays with the box and leaks what else
        // was written.
        let (rd, buf, spans): (&Ready, &mut Vec<u8>, &mut Vec<(usize, usize)>) = unsafe {
            use std::ptr::addr_of_mut;
            let slot = addr_of_mut!((*p).rd);
            slot.write(make(state, &mut *addr_of_mut!((*p).spare_entries)));
            (
                &*slot,
                &mut *addr_of_mut!((*p).buf),
                &mut *addr_of_mut!((*p).spans),
            )
        };
        let (applying, written) = book(state, rd);
        let total: usize = rd
            .messages
            .iter()
            .chain(rd.persisted_messages.iter())
            .map(encoded_len_bound)
            .sum();
        if total > 0 {
            reserve_buf(buf, &track, total);
        }
        spans.reserve(rd.messages.len() + rd.persisted_messages.len());
        encode_all(&rd.messages, buf, spans);
        encode_all(&rd.persisted_messages, buf, spans);
        let snapshot_encoded = rd
            .snapshot
            .as_ref()
            .map(|s| s.encode_to_vec())
            .unwrap_or_default();
        // SAFETY: as above; `rd`, `buf` and `spans` are not used past this
        // point.
        unsafe {
            use std::ptr::addr_of_mut;
            addr_of_mut!((*p).track).write(track);
            addr_of_mut!((*p).applying).write(applying);
            addr_of_mut!((*p).written).write(written);
            addr_of_mut!((*p).stale).write(AtomicBool::new(false));
            addr_of_mut!((*p).light).write(None);
            addr_of_mut!((*p).noop).write(false);
            addr_of_mut!((*p).idle_after_apply).write(false);
            addr_of_mut!((*p).snapshot_encoded).write(snapshot_encoded);
            addr_of_mut!((*p).envelope).write(OnceLock::new());
            addr_of_mut!((*p).flat.view).write(raftlet_ready_flat::EMPTY);
        }
        // SAFETY: every field is initialised now: the arrays were, the
        // others were written just above. The box leaves the Home without
        // its Drop (which would free the arrays the ready now owns).
        let b = std::mem::ManuallyDrop::new(home);
        NewReady(unsafe { std::ptr::read(&b.0).assume_init() })
    }

    /// A light ready holding `rd`'s committed entries and messages, and
    /// the commit index to persist (see raftlet_node_advance_light).
    pub(crate) fn new_light(
        rd: Ready,
        track: Arc<NodeTrack>,
        applying: u64,
        written: ReadyWrites,
        commit: Option<u64>,
    ) -> NewReady {
        let mut r = NewReady::new(rd, track, applying, written);
        r.light = Some(commit);
        r
    }

    /// Takes into this ready, whose write was just acknowledged, what the
    /// acknowledgement made available (see raftlet_node_ready_persisted):
    /// the entries it committed after this ready's own, and messages. The
    /// ready becomes light: nothing of it is left to persist but `commit`,
    /// and advancing it reports its entries applied. Every message may now
    /// leave at once, so the ones that waited for the write join the
    /// others, in their order, with the new ones after them.
    pub(crate) fn absorb_light(
        &mut self,
        committed: Vec<Entry>,
        messages: Vec<Message>,
        commit: Option<u64>,
        applying: u64,
    ) {
        let r = &mut *self.0;
        debug_assert!(r.envelope.get().is_none());
        // The encodings in `buf` are in the order of `messages` then
        // `persisted_messages`: joining the two keeps `spans` in step.
        let waited = std::mem::take(&mut r.rd.persisted_messages);
        r.rd.messages.extend(waited);
        if !messages.is_empty() {
            let extra = messages.iter().map(encoded_len_bound).sum();
            reserve_buf(&mut r.buf, &r.track, extra);
            encode_all(&messages, &mut r.buf, &mut r.spans);
            r.rd.messages.extend(messages);
        }
        if r.rd.committed_entries.is_empty() {
            r.rd.committed_entries = committed;
        } else {
            r.rd.committed_entries.extend(committed);
        }
        r.applying = applying;
        r.light = Some(commit);
    }

    /// Records whether advancing this ready, light, would change nothing:
    /// `applied` is the node's applied index, read under the same lock as
    /// the acknowledgement that made it light.
    pub(crate) fn set_noop(&mut self, applied: u64) {
        let r = &mut *self.0;
        r.noop = r.light.is_some() && r.applying <= applied;
    }

    /// Records, for a light ready, whether the node it came from is left
    /// without a ready once its entries are reported applied: `has` is
    /// whether the node has one now and `may_wake` whether reporting them
    /// could make one (`RawNode::apply_may_make_ready`), both read under
    /// the lock that handed the ready out.
    pub(crate) fn set_idle_after_apply(&mut self, has: bool, may_wake: bool) {
        let r = &mut *self.0;
        r.idle_after_apply = r.light.is_some() && !has && !may_wake;
    }

    /// Builds the ready's views and hands it out: from here it is
    /// immutable, and raftlet_ready_free releases it.
    pub(crate) fn seal(self) -> *mut raftlet_ready {
        let mut b = self.0;
        b.build_flat();
        Box::into_raw(b)
    }
}

impl raftlet_ready {
    pub(crate) fn is_stale(&self) -> bool {
        self.stale.load(Ordering::Acquire)
    }

    /// Marks the ready advanced; false when it already was (only one
    /// caller ever gets true).
    pub(crate) fn mark_stale(&self) -> bool {
        self.stale
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The generation of the node that handed it out.
    pub(crate) fn generation(&self) -> u64 {
        self.track.generation
    }

    fn message_view(&self, i: usize) -> raftlet_message_view {
        message_view(&self.rd, &self.spans, &self.buf, i)
    }
}

/// The view of message `i` of `rd` (its `messages`, then its
/// `persisted_messages`), whose encodings `spans` locate in `buf`.
fn message_view(
    rd: &Ready,
    spans: &[(usize, usize)],
    buf: &[u8],
    i: usize,
) -> raftlet_message_view {
    let m = if i < rd.messages.len() {
        &rd.messages[i]
    } else {
        &rd.persisted_messages[i - rd.messages.len()]
    };
    let (start, len) = spans[i];
    raftlet_message_view {
        to: m.to,
        from: m.from,
        msg_type: m.msg_type.0,
        data: raftlet_bytes::from_slice(&buf[start..start + len]),
    }
}

fn entry_view(e: &Entry) -> raftlet_entry_view {
    raftlet_entry_view {
        index: e.index,
        term: e.term,
        entry_type: e.entry_type.0,
        data: raftlet_bytes::from_slice(e.data()),
    }
}

/// Borrows a live ready or returns the matching error code.
macro_rules! live_ready {
    ($ready:ident) => {{
        check_null!($ready);
        // SAFETY: non-null handle from raftlet_node_ready, alive until
        // raftlet_ready_free.
        let r = unsafe { &*$ready };
        if r.is_stale() {
            return fail(RAFTLET_ERR_READY_STALE, "the ready was already advanced");
        }
        r
    }};
}

/// Writes `$val` through the non-null pointer `$out`.
macro_rules! put {
    ($out:ident, $val:expr) => {{
        let v = $val;
        // SAFETY: checked non-null by the caller of this macro.
        unsafe { *$out = v };
    }};
}

/// Releases a ready and every view it handed out. NULL is a no-op.
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_free(ready: *mut raftlet_ready) {
    if ready.is_null() {
        return;
    }
    let _ = crate::boundary::catch(|| {
        // SAFETY: from raftlet_node_ready, freed once.
        Spare::free(unsafe { Box::from_raw(ready) });
    });
}

/// The number of messages that may be sent at once, before or while the
/// ready is written (a leader's appends and heartbeats in a durable term,
/// heartbeat responses, pre-vote requests, forwarded proposals and reads).
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_READY_STALE.
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_message_count(
    ready: *const raftlet_ready,
    count_out: *mut usize,
) -> raftlet_result {
    ffi_boundary!({
        let r = live_ready!(ready);
        check_null!(count_out);
        put!(count_out, r.rd.messages.len());
        RAFTLET_OK
    })
}

/// Message `index` (0-based) of those to send at once.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_READY_STALE or
/// RAFTLET_ERR_INVALID_ARG (index out of range).
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_message(
    ready: *const raftlet_ready,
    index: usize,
    message_out: *mut raftlet_message_view,
) -> raftlet_result {
    ffi_boundary!({
        let r = live_ready!(ready);
        check_null!(message_out);
        if index >= r.rd.messages.len() {
            return fail(RAFTLET_ERR_INVALID_ARG, "message index out of range");
        }
        put!(message_out, r.message_view(index));
        RAFTLET_OK
    })
}

/// The number of messages to send only once the writes of this ready and
/// of every earlier one are durable (vote requests, vote and append
/// responses, anything sent while the node's term or vote was not durable).
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_READY_STALE.
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_persisted_message_count(
    ready: *const raftlet_ready,
    count_out: *mut usize,
) -> raftlet_result {
    ffi_boundary!({
        let r = live_ready!(ready);
        check_null!(count_out);
        put!(count_out, r.rd.persisted_messages.len());
        RAFTLET_OK
    })
}

/// Persisted message `index` (0-based).
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_READY_STALE or
/// RAFTLET_ERR_INVALID_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_persisted_message(
    ready: *const raftlet_ready,
    index: usize,
    message_out: *mut raftlet_message_view,
) -> raftlet_result {
    ffi_boundary!({
        let r = live_ready!(ready);
        check_null!(message_out);
        if index >= r.rd.persisted_messages.len() {
            return fail(
                RAFTLET_ERR_INVALID_ARG,
                "persisted message index out of range",
            );
        }
        put!(message_out, r.message_view(r.rd.messages.len() + index));
        RAFTLET_OK
    })
}

/// The number of all messages, those to send at once and then the
/// persisted ones: what a synchronous host sends, in this order, once the
/// ready's writes (and every earlier ready's) are durable (etcd's
/// `Ready.Messages`). Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or
/// RAFTLET_ERR_READY_STALE.
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_all_message_count(
    ready: *const raftlet_ready,
    count_out: *mut usize,
) -> raftlet_result {
    ffi_boundary!({
        let r = live_ready!(ready);
        check_null!(count_out);
        put!(
            count_out,
            r.rd.messages.len() + r.rd.persisted_messages.len()
        );
        RAFTLET_OK
    })
}

/// Message `index` (0-based) of all messages: raftlet_ready_message for
/// `index` below raftlet_ready_message_count, then the persisted ones.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_READY_STALE or
/// RAFTLET_ERR_INVALID_ARG (index out of range).
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_all_message(
    ready: *const raftlet_ready,
    index: usize,
    message_out: *mut raftlet_message_view,
) -> raftlet_result {
    ffi_boundary!({
        let r = live_ready!(ready);
        check_null!(message_out);
        if index >= r.rd.messages.len() + r.rd.persisted_messages.len() {
            return fail(RAFTLET_ERR_INVALID_ARG, "message index out of range");
        }
        put!(message_out, r.message_view(index));
        RAFTLET_OK
    })
}

/// The number of entries to append to stable storage.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_READY_STALE.
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_entry_count(
    ready: *const raftlet_ready,
    count_out: *mut usize,
) -> raftlet_result {
    ffi_boundary!({
        let r = live_ready!(ready);
        check_null!(count_out);
        put!(count_out, r.rd.entries.len());
        RAFTLET_OK
    })
}

/// Entry `index` (0-based) to append.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_READY_STALE or
/// RAFTLET_ERR_INVALID_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_entry(
    ready: *const raftlet_ready,
    index: usize,
    entry_out: *mut raftlet_entry_view,
) -> raftlet_result {
    ffi_boundary!({
        let r = live_ready!(ready);
        check_null!(entry_out);
        let Some(e) = r.rd.entries.get(index) else {
            return fail(RAFTLET_ERR_INVALID_ARG, "entry index out of range");
        };
        put!(entry_out, entry_view(e));
        RAFTLET_OK
    })
}

/// The number of committed entries to apply.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_READY_STALE.
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_committed_entry_count(
    ready: *const raftlet_ready,
    count_out: *mut usize,
) -> raftlet_result {
    ffi_boundary!({
        let r = live_ready!(ready);
        check_null!(count_out);
        put!(count_out, r.rd.committed_entries.len());
        RAFTLET_OK
    })
}

/// Committed entry `index` (0-based), to apply in order.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_READY_STALE or
/// RAFTLET_ERR_INVALID_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_committed_entry(
    ready: *const raftlet_ready,
    index: usize,
    entry_out: *mut raftlet_entry_view,
) -> raftlet_result {
    ffi_boundary!({
        let r = live_ready!(ready);
        check_null!(entry_out);
        let Some(e) = r.rd.committed_entries.get(index) else {
            return fail(
                RAFTLET_ERR_INVALID_ARG,
                "committed entry index out of range",
            );
        };
        put!(entry_out, entry_view(e));
        RAFTLET_OK
    })
}

/// The hard state to persist: `*has_out` tells whether there is one, and
/// `*hard_state_out` is written only when there is.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_READY_STALE.
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_hard_state(
    ready: *const raftlet_ready,
    has_out: *mut bool,
    hard_state_out: *mut raftlet_hard_state,
) -> raftlet_result {
    ffi_boundary!({
        let r = live_ready!(ready);
        check_null!(has_out, hard_state_out);
        put!(has_out, r.rd.hard_state.is_some());
        if let Some(hs) = r.rd.hard_state {
            put!(
                hard_state_out,
                raftlet_hard_state {
                    term: hs.term,
                    vote: hs.vote,
                    commit: hs.commit,
                }
            );
        }
        RAFTLET_OK
    })
}

/// The new soft state, when leader or role changed: `*has_out` tells
/// whether there is one; `*soft_state_out` is written only when there is.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_READY_STALE.
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_soft_state(
    ready: *const raftlet_ready,
    has_out: *mut bool,
    soft_state_out: *mut raftlet_soft_state,
) -> raftlet_result {
    ffi_boundary!({
        let r = live_ready!(ready);
        check_null!(has_out, soft_state_out);
        put!(has_out, r.rd.soft_state.is_some());
        if let Some(ss) = r.rd.soft_state {
            put!(
                soft_state_out,
                raftlet_soft_state {
                    leader_id: ss.leader_id,
                    role: crate::node::role_code(ss.raft_state),
                }
            );
        }
        RAFTLET_OK
    })
}

/// The snapshot to persist and apply: `*has_out` tells whether there is one.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_READY_STALE.
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_snapshot(
    ready: *const raftlet_ready,
    has_out: *mut bool,
    snapshot_out: *mut raftlet_snapshot_view,
) -> raftlet_result {
    ffi_boundary!({
        let r = live_ready!(ready);
        check_null!(has_out, snapshot_out);
        put!(has_out, r.rd.snapshot.is_some());
        if let Some(s) = &r.rd.snapshot {
            put!(
                snapshot_out,
                raftlet_snapshot_view {
                    index: s.metadata.index,
                    term: s.metadata.term,
                    data: raftlet_bytes::from_slice(s.data()),
                    encoded: raftlet_bytes::from_slice(&r.snapshot_encoded),
                }
            );
        }
        RAFTLET_OK
    })
}

/// The number of read states (answers to raftlet_node_read_index).
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_READY_STALE.
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_read_state_count(
    ready: *const raftlet_ready,
    count_out: *mut usize,
) -> raftlet_result {
    ffi_boundary!({
        let r = live_ready!(ready);
        check_null!(count_out);
        put!(count_out, r.rd.read_states.len());
        RAFTLET_OK
    })
}

/// Read state `index` (0-based).
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG, RAFTLET_ERR_READY_STALE or
/// RAFTLET_ERR_INVALID_ARG.
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_read_state(
    ready: *const raftlet_ready,
    index: usize,
    read_state_out: *mut raftlet_read_state_view,
) -> raftlet_result {
    ffi_boundary!({
        let r = live_ready!(ready);
        check_null!(read_state_out);
        let Some(rs) = r.rd.read_states.get(index) else {
            return fail(RAFTLET_ERR_INVALID_ARG, "read state index out of range");
        };
        put!(
            read_state_out,
            raftlet_read_state_view {
                index: rs.index,
                request_ctx: raftlet_bytes::from_slice(&rs.request_ctx),
            }
        );
        RAFTLET_OK
    })
}

/// Whether the ready's write must be synced to disk: it holds entries,
/// changes the term or vote, or hands out a configuration change that no
/// durable commit index covers yet (its hard state then carries one that
/// does). Apply such a change (raftlet_node_apply_conf_change) only once
/// the ready's write is durable, even on a host that applies other entries
/// earlier: configurations take effect when applied.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_READY_STALE.
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_must_sync(
    ready: *const raftlet_ready,
    must_sync_out: *mut bool,
) -> raftlet_result {
    ffi_boundary!({
        let r = live_ready!(ready);
        check_null!(must_sync_out);
        put!(must_sync_out, r.rd.must_sync);
        RAFTLET_OK
    })
}

/// Appends `v` as a protobuf varint.
fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Appends a length-delimited field (`tag` is the whole one-byte key).
fn put_len_field(buf: &mut Vec<u8>, tag: u8, payload: &[u8]) {
    buf.push(tag);
    put_varint(buf, payload.len() as u64);
    buf.extend_from_slice(payload);
}

/// Appends a length-delimited field holding an encodable value.
fn put_msg_field<T: Encode>(buf: &mut Vec<u8>, tag: u8, v: &T) {
    buf.push(tag);
    put_varint(buf, v.encoded_len() as u64);
    v.encode(buf);
}

/// The protobuf key of field `n` (< 16) with wire type 2 (length-delimited).
const fn len_key(n: u8) -> u8 {
    (n << 3) | 2
}

impl raftlet_ready {
    fn encode_envelope(&self) -> Vec<u8> {
        let rd = &self.rd;
        let mut buf = Vec::with_capacity(self.buf.len() + 64);
        let n = rd.messages.len();
        for (i, &(start, len)) in self.spans.iter().enumerate() {
            let field = if i < n { 1 } else { 2 };
            put_len_field(&mut buf, len_key(field), &self.buf[start..start + len]);
        }
        for e in &rd.entries {
            put_msg_field(&mut buf, len_key(3), e);
        }
        for e in &rd.committed_entries {
            put_msg_field(&mut buf, len_key(4), e);
        }
        if let Some(hs) = &rd.hard_state {
            put_msg_field(&mut buf, len_key(5), hs);
        }
        if let Some(ss) = &rd.soft_state {
            let mut sub = Vec::with_capacity(12);
            sub.push(0x08);
            put_varint(&mut sub, ss.leader_id);
            sub.push(0x10);
            put_varint(&mut sub, u64::from(crate::node::role_code(ss.raft_state)));
            put_len_field(&mut buf, len_key(6), &sub);
        }
        if rd.snapshot.is_some() {
            put_len_field(&mut buf, len_key(7), &self.snapshot_encoded);
        }
        for rs in &rd.read_states {
            let mut sub = Vec::with_capacity(12 + rs.request_ctx.len());
            sub.push(0x08);
            put_varint(&mut sub, rs.index);
            put_len_field(&mut sub, 0x12, &rs.request_ctx);
            put_len_field(&mut buf, len_key(8), &sub);
        }
        if rd.must_sync {
            buf.extend_from_slice(&[0x48, 0x01]);
        }
        buf
    }
}

/// The whole ready as one buffer, so that a binding moves a Ready across
/// the ABI in one call. The buffer is in protobuf wire format, with raftpb
/// messages inside:
///
/// ```text
/// message ReadyEnvelope {
///   repeated raftpb.Message   messages           = 1; // send at once
///   repeated raftpb.Message   persisted_messages = 2; // send once durable
///   repeated raftpb.Entry     entries            = 3; // to persist
///   repeated raftpb.Entry     committed_entries  = 4; // to apply
///   optional raftpb.HardState hard_state         = 5; // when changed
///   optional SoftState        soft_state         = 6; // when changed
///   optional raftpb.Snapshot  snapshot           = 7; // to persist and apply
///   repeated ReadState        read_states        = 8;
///   optional bool             must_sync          = 9; // written only when true
/// }
/// message SoftState { uint64 lead = 1; uint32 raft_state = 2; } // 0 follower, 1 candidate, 2 leader, 3 pre-candidate
/// message ReadState { uint64 index = 1; bytes request_ctx = 2; }
/// ```
///
/// Fields come in that order; absent optional fields are not written.
/// `*encoded_out` views bytes owned by the ready, valid until
/// raftlet_ready_free (building them once, on the first call). The ready
/// is not consumed: it is still persisted with raftlet_storage_append_ready
/// and advanced with raftlet_node_advance.
/// Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or RAFTLET_ERR_READY_STALE.
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_encode(
    ready: *const raftlet_ready,
    encoded_out: *mut raftlet_bytes,
) -> raftlet_result {
    ffi_boundary!({
        let r = live_ready!(ready);
        check_null!(encoded_out);
        let env = r.envelope.get_or_init(|| r.encode_envelope());
        put!(encoded_out, raftlet_bytes::from_slice(env));
        RAFTLET_OK
    })
}

/// A whole ready as flat arrays, filled by raftlet_ready_view in one call,
/// so that a binding reads a ready with one crossing of the ABI and no
/// copy. Every pointer points into memory owned by the ready, valid until
/// raftlet_ready_free (views taken stay valid after the ready is advanced,
/// as for the other accessors). An array with a count of 0 may be NULL.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct raftlet_ready_flat {
    /// All messages: the `persisted_message_start` ones that may be sent
    /// at once, then those to send once this ready and every earlier one
    /// are durable (as raftlet_ready_all_message).
    pub messages: *const raftlet_message_view,
    /// The number of `messages`.
    pub message_count: usize,
    /// The index in `messages` of the first persisted message (equal to
    /// `message_count` when there is none).
    pub persisted_message_start: usize,
    /// The entries to append to stable storage.
    pub entries: *const raftlet_entry_view,
    /// The number of `entries`.
    pub entry_count: usize,
    /// The committed entries to apply, in order.
    pub committed_entries: *const raftlet_entry_view,
    /// The number of `committed_entries`.
    pub committed_entry_count: usize,
    /// The read states (answers to raftlet_node_read_index).
    pub read_states: *const raftlet_read_state_view,
    /// The number of `read_states`.
    pub read_state_count: usize,
    /// The number of membership events (raftlet_ready_membership_event).
    pub membership_event_count: usize,
    /// The hard state to persist, valid when `has_hard_state`.
    pub hard_state: raftlet_hard_state,
    /// The soft state, valid when `has_soft_state`.
    pub soft_state: raftlet_soft_state,
    /// The snapshot to persist and apply, valid when `has_snapshot`.
    pub snapshot: raftlet_snapshot_view,
    /// Whether there is a hard state to persist.
    pub has_hard_state: bool,
    /// Whether the leader or the role changed.
    pub has_soft_state: bool,
    /// Whether there is a snapshot.
    pub has_snapshot: bool,
    /// Whether the ready's write must be synced to disk.
    pub must_sync: bool,
    /// Whether advancing this ready would change nothing in the node: its
    /// write was reported durable as it was taken
    /// (raftlet_node_ready_persisted, raftlet_node_advance_light) and it
    /// hands out nothing to apply that the node has not applied already
    /// (no committed entries, after readies that were all advanced). Such a
    /// ready may be released with raftlet_ready_free alone, at any later
    /// time; advancing it first is allowed and changes nothing. A host
    /// saves a call per ready for heartbeats, their responses and read
    /// states; no later state of the node makes it wrong.
    pub advance_is_noop: bool,
    /// The index that advancing this ready reports applied: the last
    /// committed entry handed out by it and the readies before it.
    pub apply_index: u64,
    /// Whether advancing this ready does nothing but report entries up to
    /// `apply_index` applied: its write was reported durable as it was
    /// taken (raftlet_node_ready_persisted, raftlet_node_advance_light).
    /// Then raftlet_node_advance_apply_to(node, apply_index) and
    /// raftlet_ready_free, in either order, do what raftlet_node_advance
    /// and raftlet_ready_free do: a host may free the ready at once and
    /// report its entries applied at any later time, as hosts that apply
    /// asynchronously do.
    pub advance_is_apply_only: bool,
    /// Whether, when this ready was handed out, the node had no other
    /// ready and reporting entries up to `apply_index` applied gives it
    /// none (no committed entries wait behind them, and no joint
    /// configuration is left automatically on their application): a
    /// host that makes no other call of the node in between knows,
    /// without asking, that raftlet_node_has_ready is false after that
    /// report. Only set with `advance_is_apply_only`.
    pub idle_after_apply: bool,
}

impl raftlet_ready_flat {
    /// The view of an empty ready.
    const EMPTY: raftlet_ready_flat = raftlet_ready_flat {
        messages: std::ptr::null(),
        message_count: 0,
        persisted_message_start: 0,
        entries: std::ptr::null(),
        entry_count: 0,
        committed_entries: std::ptr::null(),
        committed_entry_count: 0,
        read_states: std::ptr::null(),
        read_state_count: 0,
        membership_event_count: 0,
        hard_state: raftlet_hard_state {
            term: 0,
            vote: 0,
            commit: 0,
        },
        soft_state: raftlet_soft_state {
            leader_id: 0,
            role: 0,
        },
        snapshot: raftlet_snapshot_view {
            index: 0,
            term: 0,
            data: raftlet_bytes::EMPTY,
            encoded: raftlet_bytes::EMPTY,
        },
        has_hard_state: false,
        has_soft_state: false,
        has_snapshot: false,
        must_sync: false,
        advance_is_noop: false,
        apply_index: 0,
        advance_is_apply_only: false,
        idle_after_apply: false,
    };
}

impl raftlet_ready {
    /// Fills the view arrays and the flat view over them, once, before the
    /// ready is handed out ([`NewReady::seal`]).
    fn build_flat(&mut self) {
        fn ptr<T>(v: &[T]) -> *const T {
            if v.is_empty() {
                std::ptr::null()
            } else {
                v.as_ptr()
            }
        }
        let rd = &self.rd;
        let f = &mut self.flat;
        f.entries.extend(rd.entries.iter().map(entry_view));
        f.committed_entries
            .extend(rd.committed_entries.iter().map(entry_view));
        f.messages
            .extend((0..self.spans.len()).map(|i| message_view(rd, &self.spans, &self.buf, i)));
        f.read_states
            .extend(rd.read_states.iter().map(|rs| raftlet_read_state_view {
                index: rs.index,
                request_ctx: raftlet_bytes::from_slice(&rs.request_ctx),
            }));
        let hs = rd.hard_state.unwrap_or_default();
        let ss = rd.soft_state.unwrap_or_default();
        // The arrays' heap buffers stay where they are until the ready is
        // freed: the view's pointers stay valid.
        f.view = raftlet_ready_flat {
            messages: ptr(&f.messages),
            message_count: f.messages.len(),
            persisted_message_start: rd.messages.len(),
            entries: ptr(&f.entries),
            entry_count: f.entries.len(),
            committed_entries: ptr(&f.committed_entries),
            committed_entry_count: f.committed_entries.len(),
            read_states: ptr(&f.read_states),
            read_state_count: f.read_states.len(),
            membership_event_count: rd.membership_events.len(),
            hard_state: raftlet_hard_state {
                term: hs.term,
                vote: hs.vote,
                commit: hs.commit,
            },
            soft_state: raftlet_soft_state {
                leader_id: ss.leader_id,
                role: crate::node::role_code(ss.raft_state),
            },
            snapshot: match &rd.snapshot {
                Some(s) => raftlet_snapshot_view {
                    index: s.metadata.index,
                    term: s.metadata.term,
                    data: raftlet_bytes::from_slice(s.data()),
                    encoded: raftlet_bytes::from_slice(&self.snapshot_encoded),
                },
                None => raftlet_ready_flat::EMPTY.snapshot,
            },
            has_hard_state: rd.hard_state.is_some(),
            has_soft_state: rd.soft_state.is_some(),
            has_snapshot: rd.snapshot.is_some(),
            must_sync: rd.must_sync,
            advance_is_noop: self.noop,
            apply_index: self.applying,
            advance_is_apply_only: self.light.is_some(),
            idle_after_apply: self.idle_after_apply,
        };
    }

    /// The flat view (raftlet_ready_view).
    pub(crate) fn flat_view(&self) -> raftlet_ready_flat {
        self.flat.view
    }

    /// The flat view in the ready's memory: valid as long as the ready.
    pub(crate) fn flat_ref(&self) -> &raftlet_ready_flat {
        &self.flat.view
    }
}

/// Fills `*flat_out` with the whole ready (messages, entries, committed
/// entries, read states, hard and soft state, snapshot, must_sync and the
/// number of membership events) in one call; the arrays are built when the
/// ready is handed out and owned by it (see raftlet_ready_flat). The ready is
/// not consumed. Returns RAFTLET_OK, RAFTLET_ERR_NULL_ARG or
/// RAFTLET_ERR_READY_STALE.
#[no_mangle]
pub unsafe extern "C" fn raftlet_ready_view(
    ready: *const raftlet_ready,
    flat_out: *mut raftlet_ready_flat,
) -> raftlet_result {
    ffi_boundary!({
        let r = live_ready!(ready);
        check_null!(flat_out);
        put!(flat_out, r.flat_view());
        RAFTLET_OK
    })
}
