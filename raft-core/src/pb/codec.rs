//! The hand-written protobuf codec for the raftpb wire types.
//!
//! Encoding is byte for byte what etcd raft v3.6 (gogoproto, `nullable=false`)
//! writes. Decoding accepts v3.6's and v3.7's encodings and every ordinary
//! protobuf leniency; malformed input is a [`DecodeError`], never a panic.

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

    /// The encoding as a new vector.
    fn encode_to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.encoded_len());
        self.encode(&mut v);
        v
    }
}

/// A wire type that can be decoded from raftpb bytes.
pub trait Decode: Sized {
    /// Decodes one value from the whole of `buf`.
    ///
    /// # Errors
    /// [`DecodeError`] for any malformed input.
    fn decode(buf: &[u8]) -> Result<Self, DecodeError>;
}
