//! Payloads copied into one allocation that holds their reference count.
//!
//! A [`Bytes`] made from a copy (`Bytes::copy_from_slice`) owns a vector
//! and allocates its shared reference count on its first clone: two
//! allocations, and two frees, for every entry a node clones (into its
//! storage, into a Ready). [`copy_payload`] puts a small payload and its
//! count in one allocation, so its clones cost an atomic increment and
//! nothing else. The node's own copies (the C ABI's and the bindings'
//! proposals, message decoding) go through it; Rust hosts that copy a
//! payload out of a buffer of their own can too.

use bytes::Bytes;

/// The largest payload copied inline; larger ones are copied as
/// `Bytes::copy_from_slice` does, where the second allocation is small
/// beside the payload.
pub const MAX_INLINE_PAYLOAD: usize = 512;

/// A payload of at most `N` bytes, inline.
struct Inline<const N: usize> {
    len: usize,
    buf: [u8; N],
}

impl<const N: usize> AsRef<[u8]> for Inline<N> {
    fn as_ref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// `data` in an `Inline<N>`; `data.len() <= N`.
fn inline<const N: usize>(data: &[u8]) -> Bytes {
    let mut b = Inline {
        len: data.len(),
        buf: [0u8; N],
    };
    b.buf[..data.len()].copy_from_slice(data);
    Bytes::from_owner(b)
}

/// A copy of `data` as [`Bytes`]. Up to [`MAX_INLINE_PAYLOAD`] bytes the
/// copy and its reference count share one allocation (sized in steps of
/// at most half the size below it), so cloning it never allocates; larger
/// payloads are copied as `Bytes::copy_from_slice` copies them.
///
/// ```
/// let data = b"set x = 1".to_vec();
/// let p = raftlet::copy_payload(&data);
/// assert_eq!(&p[..], &data[..]);
/// let q = p.clone(); // no allocation
/// assert_eq!(q.as_ptr(), p.as_ptr());
/// ```
pub fn copy_payload(data: &[u8]) -> Bytes {
    match data.len() {
        0 => Bytes::new(),
        1..=16 => inline::<16>(data),
        17..=32 => inline::<32>(data),
        33..=48 => inline::<48>(data),
        49..=64 => inline::<64>(data),
        65..=96 => inline::<96>(data),
        97..=128 => inline::<128>(data),
        129..=192 => inline::<192>(data),
        193..=256 => inline::<256>(data),
        257..=384 => inline::<384>(data),
        385..=MAX_INLINE_PAYLOAD => inline::<MAX_INLINE_PAYLOAD>(data),
        _ => Bytes::copy_from_slice(data),
    }
}

/// `data`, a host's owned vector, as a payload: copied into one
/// allocation with its reference count as [`copy_payload`] does when it is
/// small, kept as it is (no copy) when it is larger.
pub fn payload_from_vec(data: Vec<u8>) -> Bytes {
    if data.len() <= MAX_INLINE_PAYLOAD {
        copy_payload(&data)
    } else {
        Bytes::from(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_hold_the_data_at_every_size() {
        for len in 0..=MAX_INLINE_PAYLOAD + 64 {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            let p = copy_payload(&data);
            assert_eq!(&p[..], &data[..], "len {len}");
            let q = p.clone();
            drop(p);
            assert_eq!(&q[..], &data[..], "len {len} after the original is dropped");
            let s = q.slice(len / 3..len - len / 3);
            drop(q);
            assert_eq!(&s[..], &data[len / 3..len - len / 3], "len {len}, a slice");
        }
    }

    #[test]
    fn owned_vectors_become_payloads_at_every_size() {
        for len in [0, 1, 100, MAX_INLINE_PAYLOAD, MAX_INLINE_PAYLOAD + 1, 4096] {
            let data: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let ptr = data.as_ptr();
            let p = payload_from_vec(data.clone());
            assert_eq!(&p[..], &data[..], "len {len}");
            if len > MAX_INLINE_PAYLOAD {
                let kept = payload_from_vec(data);
                assert_eq!(
                    kept.as_ptr(),
                    ptr,
                    "len {len}: a large vector is kept, not copied"
                );
            }
        }
    }

    #[test]
    fn clones_share_the_copy() {
        let p = copy_payload(&[1u8; 100]);
        let q = p.clone();
        assert_eq!(p.as_ptr(), q.as_ptr());
    }
}
