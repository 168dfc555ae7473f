package raftlet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Frames carry the messages of many groups from one node to another: a
// host of many groups (one RawNode per group) sends one frame per
// destination node and round instead of one transport write per message.
// The format is the Rust core's (raftlet::multi::frame), so Go and Rust
// hosts read each other's frames:
//
//	frame = magic "RLF" | version 1 | from node (u64 LE) | count (u32 LE) | item*
//	item  = group id (u64 LE) | length (u32 LE) | raftpb Message (length bytes)
//
// A frame with no items is a node-level heartbeat (the sending node is
// alive). The messages inside are the raftpb bytes that MessageView.Data
// or Ready.EncodedMessages hand out, and they are checked when stepped
// (RawNode.StepBytes, StepBatch), not by DecodeFrame.

const (
	frameHeaderLen = 16
	frameItemLen   = 12
	frameVersion   = 1
)

var frameMagic = [3]byte{'R', 'L', 'F'}

// ErrFrame is returned (wrapped, with the reason) by DecodeFrame for bytes
// that are not exactly a well-formed frame, and by FrameBuilder.Push for a
// message or a frame too large for the format.
var ErrFrame = errors.New("raftlet: bad frame")

// FrameBuilder builds one frame, item by item. Reset lets one builder
// (and its buffer) serve frame after frame.
type FrameBuilder struct {
	buf   []byte
	count uint32
}

// NewFrameBuilder starts an empty frame from node from.
func NewFrameBuilder(from uint64) *FrameBuilder {
	b := &FrameBuilder{}
	b.Reset(from)
	return b
}

// Reset empties the builder for a new frame from node from, keeping its
// buffer.
func (b *FrameBuilder) Reset(from uint64) {
	b.buf = append(b.buf[:0], frameMagic[0], frameMagic[1], frameMagic[2], frameVersion)
	b.buf = binary.LittleEndian.AppendUint64(b.buf, from)
	b.buf = binary.LittleEndian.AppendUint32(b.buf, 0)
	b.count = 0
}

// Push appends msg, the raftpb encoding of a message of group group. The
// bytes are copied, so msg may be a view that Advance invalidates.
func (b *FrameBuilder) Push(group uint64, msg []byte) error {
	if uint64(len(msg)) > math.MaxUint32 {
		return fmt.Errorf("%w: a message of %d bytes", ErrFrame, len(msg))
	}
	if b.count == math.MaxUint32 {
		return fmt.Errorf("%w: more than %d items", ErrFrame, uint32(math.MaxUint32))
	}
	b.buf = binary.LittleEndian.AppendUint64(b.buf, group)
	b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(len(msg)))
	b.buf = append(b.buf, msg...)
	b.count++
	binary.LittleEndian.PutUint32(b.buf[12:16], b.count)
	return nil
}

// Len is the number of items pushed so far.
func (b *FrameBuilder) Len() int { return int(b.count) }

// Bytes is the frame as built so far, ready to send. It is the builder's
// buffer: valid until the next Push or Reset.
func (b *FrameBuilder) Bytes() []byte { return b.buf }

// FrameItem is one message of a decoded frame.
type FrameItem struct {
	// Group is the group the message belongs to.
	Group uint64
	// Msg is the raftpb encoding of the message, a sub-slice of the
	// frame's bytes (not copied).
	Msg []byte
}

// DecodeFrame reads a frame: the node that sent it and its items, appended
// to items[:0] (pass a slice to reuse, or nil). It never panics: every
// length is checked against the bytes that remain, the item count must
// match the items present, and nothing is allocated beyond the items.
func DecodeFrame(buf []byte, items []FrameItem) (from uint64, out []FrameItem, err error) {
	if len(buf) < frameHeaderLen {
		return 0, items[:0], fmt.Errorf("%w: truncated header", ErrFrame)
	}
	if buf[0] != frameMagic[0] || buf[1] != frameMagic[1] || buf[2] != frameMagic[2] || buf[3] != frameVersion {
		return 0, items[:0], fmt.Errorf("%w: not a raftlet frame (magic or version)", ErrFrame)
	}
	from = binary.LittleEndian.Uint64(buf[4:12])
	count := binary.LittleEndian.Uint32(buf[12:16])
	out = items[:0]
	rest := buf[frameHeaderLen:]
	for len(rest) > 0 {
		if uint64(len(out)) == uint64(count) {
			return 0, out[:0], fmt.Errorf("%w: more items than its count %d", ErrFrame, count)
		}
		if len(rest) < frameItemLen {
			return 0, out[:0], fmt.Errorf("%w: truncated item", ErrFrame)
		}
		group := binary.LittleEndian.Uint64(rest[:8])
		n := uint64(binary.LittleEndian.Uint32(rest[8:12]))
		rest = rest[frameItemLen:]
		if n > uint64(len(rest)) {
			return 0, out[:0], fmt.Errorf("%w: an item of %d bytes with %d left", ErrFrame, n, len(rest))
		}
		out = append(out, FrameItem{Group: group, Msg: rest[:n:n]})
		rest = rest[n:]
	}
	if uint64(len(out)) != uint64(count) {
		return 0, out[:0], fmt.Errorf("%w: %d items, its count says %d", ErrFrame, len(out), count)
	}
	return from, out, nil
}
