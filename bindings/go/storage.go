package raftlet

import (
	"runtime"

	"go.etcd.io/raft/v3/raftpb"
)

// MemoryStorage is raftlet's in-memory storage (etcd's raft.MemoryStorage):
// the log, hard state and snapshot a node restarts from. A RawNode created
// over it keeps its own reference, so the host writes what each Ready asks
// to persist here (AppendReady, or Append, SetHardState and ApplySnapshot)
// and the node reads it back.
//
// Its methods may be called from several goroutines at once (a lock inside
// serialises them), but not concurrently with Close.
type MemoryStorage struct {
	h       *storageHandle
	cleanup runtime.Cleanup
}

// storageHandle owns the C handle; it is the cleanup's argument, so it
// must not point back to the MemoryStorage.
type storageHandle struct {
	p cStorage
}

// NewMemoryStorage creates an empty storage. Release it with Close (a
// cleanup frees it if it is garbage collected first).
func NewMemoryStorage() *MemoryStorage {
	p, err := cStorageNew()
	if err != nil {
		panic(err) // only fails on a NULL output pointer: a bug
	}
	s := &MemoryStorage{h: &storageHandle{p: p}}
	s.cleanup = runtime.AddCleanup(s, func(h *storageHandle) { cStorageFree(h.p) }, s.h)
	return s
}

// Close releases the storage handle. A node created over it keeps its own
// reference and goes on working. Close is idempotent and always returns nil.
func (s *MemoryStorage) Close() error {
	if s == nil || s.h.p == nil {
		return nil
	}
	s.cleanup.Stop()
	cStorageFree(s.h.p)
	s.h.p = nil
	return nil
}

func (s *MemoryStorage) ptr() (cStorage, error) {
	if s == nil || s.h.p == nil {
		return nil, ErrClosed
	}
	return s.h.p, nil
}

// Append appends entries, which must be consecutive, replacing any
// conflicting tail; entries already compacted are skipped. It is atomic:
// on an error (ErrUnavailable for a gap after the last index) nothing is
// appended.
func (s *MemoryStorage) Append(entries []raftpb.Entry) error {
	p, err := s.ptr()
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	// A raftpb Message is the envelope: C reads its entries.
	env := raftpb.Message{Entries: entries}
	buf, err := env.Marshal()
	if err != nil {
		return err
	}
	err = cStorageAppendEntries(p, buf)
	runtime.KeepAlive(s)
	return err
}

// AppendReady persists what a Ready asks for, in order: its snapshot (if
// any), its entries and its hard state (if any). For a Ready from
// RawNode.Ready this is one call into the library, which reads the Ready
// it still holds; for a Ready built by hand it falls back to
// ApplySnapshot, Append and SetHardState. Call it before RawNode.Advance.
//
// Readies from RawNode.Ready are persisted in the order they were taken,
// each once. ErrReadyStale, with nothing written, refuses one that was
// advanced, or released by the Advance of a later Ready, or closed with
// its node, and one not newer than the Ready this storage persisted last
// (the same Ready again, an earlier one, or one of a node this storage
// was restarted from since): writing it would replace newer entries and
// roll back the hard state under the node. On any error nothing is
// written; do not advance a Ready whose persistence failed.
func (s *MemoryStorage) AppendReady(rd Ready) error {
	p, err := s.ptr()
	if err != nil {
		return err
	}
	if rd.h != nil {
		if !rd.h.live(rd.gen) {
			// Advanced, released by a later Advance, or closed with its
			// node: persisting its copy now would rewrite the log.
			return &Error{CodeReadyStale, "the Ready was already advanced or released"}
		}
		err = cStorageAppendReady(p, rd.h.p)
		runtime.KeepAlive(s)
		runtime.KeepAlive(rd.rn)
		return err
	}
	if !IsEmptySnap(rd.Snapshot) {
		if err := s.ApplySnapshot(rd.Snapshot); err != nil {
			return err
		}
	}
	if err := s.Append(rd.Entries); err != nil {
		return err
	}
	if !IsEmptyHardState(rd.HardState) {
		return s.SetHardState(rd.HardState)
	}
	return nil
}

// AppendReadyView is AppendReady for a ReadyView: one call into the
// library, which reads the ready it holds. Same rules and errors.
func (s *MemoryStorage) AppendReadyView(v ReadyView) error {
	p, err := s.ptr()
	if err != nil {
		return err
	}
	if !v.h.live(v.gen) {
		return &Error{CodeReadyStale, "the Ready was already advanced or released"}
	}
	err = cStorageAppendReady(p, v.h.p)
	runtime.KeepAlive(s)
	runtime.KeepAlive(v.rn)
	return err
}

// SetHardState saves the hard state (term, vote, commit). The stored commit
// index never goes back: a lower commit keeps the stored one.
func (s *MemoryStorage) SetHardState(st raftpb.HardState) error {
	p, err := s.ptr()
	if err != nil {
		return err
	}
	err = cStorageSetHardState(p, st.Term, st.Vote, st.Commit)
	runtime.KeepAlive(s)
	return err
}

// SetConfState sets the configuration the storage reports at start, as a
// host does before creating the first node of a new cluster without
// Bootstrap (every member must start with the same configuration).
// ErrConfChangeRefused (the configuration held is kept) when cs names 0,
// math.MaxUint64 or math.MaxUint64-1, names an ID twice, has a voter that
// is also a learner, or is otherwise not a configuration membership
// changes can produce.
func (s *MemoryStorage) SetConfState(cs raftpb.ConfState) error {
	p, err := s.ptr()
	if err != nil {
		return err
	}
	buf, err := cs.Marshal()
	if err != nil {
		return err
	}
	err = cStorageSetConfState(p, buf)
	runtime.KeepAlive(s)
	return err
}

// ApplySnapshot replaces the storage's contents with snap: the log
// becomes empty and starts after the snapshot. It returns
// ErrSnapOutOfDate when snap is not newer than the snapshot held.
func (s *MemoryStorage) ApplySnapshot(snap raftpb.Snapshot) error {
	p, err := s.ptr()
	if err != nil {
		return err
	}
	buf, err := snap.Marshal()
	if err != nil {
		return err
	}
	err = cStorageApplySnapshot(p, buf)
	runtime.KeepAlive(s)
	return err
}

// CreateSnapshot records a snapshot of the state machine at index i
// holding data, with configuration cs (nil keeps the configuration held),
// and returns it. Follow with Compact to drop the entries it covers. i must
// be applied and covered by the commit index the storage holds: a host
// that applies entries before their Ready's write lands snapshots them
// once that write is done, as the storage may still hold an older entry
// there, whose term the snapshot would record. Errors: ErrSnapOutOfDate (i
// is not past the current snapshot), ErrUnavailable (i is past the last
// index, or past the commit index the storage holds), ErrCompacted.
func (s *MemoryStorage) CreateSnapshot(i uint64, cs *raftpb.ConfState, data []byte) (raftpb.Snapshot, error) {
	p, err := s.ptr()
	if err != nil {
		return raftpb.Snapshot{}, err
	}
	var csBuf []byte
	if cs != nil {
		if csBuf, err = cs.Marshal(); err != nil {
			return raftpb.Snapshot{}, err
		}
	}
	out := make([]byte, len(data)+len(csBuf)+256)
	n, err := cStorageCreateSnapshot(p, i, csBuf, cs == nil, data, out)
	if err == nil && n > len(out) {
		out = make([]byte, n)
		n, err = cStorageSnapshot(p, out)
	}
	runtime.KeepAlive(s)
	if err != nil {
		return raftpb.Snapshot{}, err
	}
	var snap raftpb.Snapshot
	if err := snap.Unmarshal(out[:n]); err != nil {
		return raftpb.Snapshot{}, err
	}
	return snap, nil
}

// Snapshot returns the snapshot held (empty before the first one).
func (s *MemoryStorage) Snapshot() (raftpb.Snapshot, error) {
	p, err := s.ptr()
	if err != nil {
		return raftpb.Snapshot{}, err
	}
	out := make([]byte, 256)
	for {
		n, err := cStorageSnapshot(p, out)
		if err != nil {
			return raftpb.Snapshot{}, err
		}
		if n <= len(out) {
			runtime.KeepAlive(s)
			var snap raftpb.Snapshot
			if err := snap.Unmarshal(out[:n]); err != nil {
				return raftpb.Snapshot{}, err
			}
			return snap, nil
		}
		out = make([]byte, n)
	}
}

// Compact discards the entries before compactIndex, which must be
// applied; the entry at compactIndex keeps its term known. Errors:
// ErrCompacted (already compacted) and ErrUnavailable (past the last index).
func (s *MemoryStorage) Compact(compactIndex uint64) error {
	p, err := s.ptr()
	if err != nil {
		return err
	}
	err = cStorageCompact(p, compactIndex)
	runtime.KeepAlive(s)
	return err
}

// FirstIndex returns the index of the first entry that may be read (the
// snapshot's index + 1).
func (s *MemoryStorage) FirstIndex() (uint64, error) {
	p, err := s.ptr()
	if err != nil {
		return 0, err
	}
	first, _, err := cStorageBounds(p)
	runtime.KeepAlive(s)
	return first, err
}

// LastIndex returns the index of the last entry (FirstIndex-1 when empty).
func (s *MemoryStorage) LastIndex() (uint64, error) {
	p, err := s.ptr()
	if err != nil {
		return 0, err
	}
	_, last, err := cStorageBounds(p)
	runtime.KeepAlive(s)
	return last, err
}

// IsEmptyHardState reports whether st is the zero HardState.
func IsEmptyHardState(st raftpb.HardState) bool {
	return st.Term == 0 && st.Vote == 0 && st.Commit == 0
}

// IsEmptySnap reports whether sp holds no snapshot (index 0).
func IsEmptySnap(sp raftpb.Snapshot) bool {
	return sp.Metadata.Index == 0
}
