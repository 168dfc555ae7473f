"""Frames: the messages of many groups from one node to another in one write.

A process that hosts many groups (one ``RawNode`` per group) sends one
frame per destination node and round instead of one transport write per
message. The format is the Rust core's (``raftlet::multi::frame``) and the
Go package's (``FrameBuilder``, ``DecodeFrame``), byte for byte::

    frame = magic "RLF" | version 1 | from node (u64 LE) | count (u32 LE) | item*
    item  = group id (u64 LE) | length (u32 LE) | raftpb Message (length bytes)

A frame with no items is a node-level heartbeat (the sending node is
alive). ``decode_frame`` checks the frame's structure; each message is
checked when it is decoded (``Message.decode``):

>>> import raftlet
>>> from raftlet.frame import FrameBuilder, decode_frame
>>> b = FrameBuilder(1)
>>> hb = raftlet.Message(msg_type=raftlet.MessageType.MSG_HEARTBEAT, from_=1, to=2, term=3)
>>> b.push(7, hb)
>>> sender, items = decode_frame(b.finish())
>>> sender, items[0][0], raftlet.Message.decode(items[0][1]).term
(1, 7, 3)
"""

from __future__ import annotations

import struct
from typing import Union

from raftlet._errors import DecodeError
from raftlet._raftlet import Message

__all__ = ["FrameBuilder", "decode_frame", "HEADER_LEN"]

_MAGIC = b"RLF"
_VERSION = 1
_HEADER = struct.Struct("<3sBQI")
_ITEM = struct.Struct("<QI")
_U32_MAX = 0xFFFF_FFFF
_U64_MAX = 0xFFFF_FFFF_FFFF_FFFF

HEADER_LEN = _HEADER.size
"""Bytes before the first item (16)."""


class FrameBuilder:
    """Builds one frame from node ``from_node``, item by item."""

    __slots__ = ("_from", "_parts", "_count")

    def __init__(self, from_node: int) -> None:
        if not 0 <= from_node <= _U64_MAX:
            raise ValueError(f"node id {from_node} is not a u64")
        self._from = from_node
        self._parts: list[bytes] = []
        self._count = 0

    def push(self, group: int, message: Union[Message, bytes, bytearray, memoryview]) -> None:
        """Appends a message of group ``group``: a ``Message`` (encoded here)
        or its raftpb bytes."""
        if not 0 <= group <= _U64_MAX:
            raise ValueError(f"group id {group} is not a u64")
        data = message.encode() if isinstance(message, Message) else bytes(message)
        if len(data) > _U32_MAX or self._count == _U32_MAX:
            raise ValueError("message or frame too large for the frame format")
        self._parts.append(_ITEM.pack(group, len(data)))
        self._parts.append(data)
        self._count += 1

    def __len__(self) -> int:
        """The number of items pushed so far."""
        return self._count

    def finish(self) -> bytes:
        """The encoded frame (the builder may go on: this is a snapshot)."""
        return _HEADER.pack(_MAGIC, _VERSION, self._from, self._count) + b"".join(self._parts)


def decode_frame(data: Union[bytes, bytearray, memoryview]) -> tuple[int, list[tuple[int, bytes]]]:
    """Reads a frame: the node that sent it and its ``(group, message bytes)``
    items in order.

    Raises ``DecodeError`` for anything that is not exactly a well-formed
    frame: a short header, a foreign magic or version, an item that runs
    past the end, or an item count that does not match the items.
    """
    buf = bytes(data)
    if len(buf) < HEADER_LEN:
        raise DecodeError("frame truncated")
    magic, version, sender, count = _HEADER.unpack_from(buf)
    if magic != _MAGIC or version != _VERSION:
        raise DecodeError("not a raftlet frame (magic or version)")
    items: list[tuple[int, bytes]] = []
    off = HEADER_LEN
    while off < len(buf):
        if len(items) == count:
            raise DecodeError("frame item count does not match its items")
        if len(buf) - off < _ITEM.size:
            raise DecodeError("frame truncated")
        group, n = _ITEM.unpack_from(buf, off)
        off += _ITEM.size
        if n > len(buf) - off:
            raise DecodeError("frame truncated")
        items.append((group, buf[off : off + n]))
        off += n
    if len(items) != count:
        raise DecodeError("frame item count does not match its items")
    return sender, items
