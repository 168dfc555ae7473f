package raftlet

import (
	"encoding/binary"
	"errors"

	"go.etcd.io/raft/v3/raftpb"
)

// A decoder of raftpb messages for the typed Ready: the same result as
// gogoproto's Message.Unmarshal, without an allocation per entry. The
// bytes fields (entry payloads, contexts) alias buf, which the caller owns
// (a Go copy of the library's encodings); each alias has its capacity cut
// at its end, so that appending to one never writes over another. A
// message with a field this decoder does not handle (a snapshot, storage
// responses, an unknown or malformed field) is decoded by gogoproto
// instead, errors included.

// errFallback sends a message to gogoproto's decoder.
var errFallback = errors.New("raftlet: decoded by gogoproto")

// emptyBytes is what gogoproto gives a bytes field present with no bytes.
var emptyBytes = []byte{}

// decodeMessage decodes b into m (m is overwritten).
func decodeMessage(b []byte, m *raftpb.Message) error {
	*m = raftpb.Message{}
	if err := fastMessage(b, m); err != nil {
		*m = raftpb.Message{}
		return m.Unmarshal(b)
	}
	return nil
}

// uvarint reads a varint; n <= 0 on a malformed one.
func uvarint(b []byte) (uint64, int) { return binary.Uvarint(b) }

// lenField reads a length-delimited payload after its key.
func lenField(b []byte) (payload, rest []byte, ok bool) {
	l, n := uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return nil, nil, false
	}
	end := n + int(l)
	return b[n:end:end], b[end:], true
}

func bytesField(p []byte) []byte {
	if len(p) == 0 {
		return emptyBytes
	}
	return p
}

func fastMessage(b []byte, m *raftpb.Message) error {
	// Count the entries first, to allocate them once.
	entries := 0
	for s := b; len(s) > 0; {
		key, n := uvarint(s)
		if n <= 0 {
			return errFallback
		}
		s = s[n:]
		switch key & 7 {
		case 0:
			if _, n = uvarint(s); n <= 0 {
				return errFallback
			}
			s = s[n:]
		case 2:
			var ok bool
			if _, s, ok = lenField(s); !ok {
				return errFallback
			}
			if key>>3 == 7 {
				entries++
			}
		default:
			return errFallback
		}
	}
	if entries > 0 {
		m.Entries = make([]raftpb.Entry, 0, entries)
	}
	for len(b) > 0 {
		key, n := uvarint(b)
		b = b[n:]
		num := key >> 3
		if key&7 == 0 {
			v, n := uvarint(b)
			b = b[n:]
			switch num {
			case 1:
				m.Type = raftpb.MessageType(int32(v))
			case 2:
				m.To = v
			case 3:
				m.From = v
			case 4:
				m.Term = v
			case 5:
				m.LogTerm = v
			case 6:
				m.Index = v
			case 8:
				m.Commit = v
			case 10:
				m.Reject = v != 0
			case 11:
				m.RejectHint = v
			case 13:
				m.Vote = v
			default:
				return errFallback
			}
			continue
		}
		p, rest, _ := lenField(b)
		b = rest
		switch num {
		case 7:
			m.Entries = append(m.Entries, raftpb.Entry{})
			if err := fastEntry(p, &m.Entries[len(m.Entries)-1]); err != nil {
				return err
			}
		case 12:
			m.Context = bytesField(p)
		default: // 9 (snapshot), 14 (responses), unknown
			return errFallback
		}
	}
	return nil
}

func fastEntry(b []byte, e *raftpb.Entry) error {
	for len(b) > 0 {
		key, n := uvarint(b)
		if n <= 0 {
			return errFallback
		}
		b = b[n:]
		switch key {
		case 1<<3 | 0, 2<<3 | 0, 3<<3 | 0:
			v, n := uvarint(b)
			if n <= 0 {
				return errFallback
			}
			b = b[n:]
			switch key >> 3 {
			case 1:
				e.Type = raftpb.EntryType(int32(v))
			case 2:
				e.Term = v
			case 3:
				e.Index = v
			}
		case 4<<3 | 2:
			p, rest, ok := lenField(b)
			if !ok {
				return errFallback
			}
			e.Data = bytesField(p)
			b = rest
		default:
			return errFallback
		}
	}
	return nil
}
