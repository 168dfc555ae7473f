package raftlet

import (
	"fmt"
	"runtime"
)

// OpenDiskStorage opens (creating it if needed) the durable store in
// directory dir and returns its group 1 as a storage: the same type and
// methods as NewMemoryStorage's (the type keeps etcd's name), so it goes in
// Config.Storage like one, but its log, hard state, configuration and
// snapshot survive a crash and a node created over it restarts from them.
// Each write method is durable when it returns (AppendReady syncs when the
// Ready must be synced), but for a light Ready's commit index (written
// unsynced; the next synced write carries it) and Compact (a compaction
// lost in a crash only keeps entries the snapshot covers, and a restart
// takes the snapshot's index as committed). The stored commit index never
// goes back: a hard state whose commit is below the stored one keeps the
// stored commit.
//
// One store lives in one directory and serves any number of groups
// (OpenGroup); the directory is locked while any storage of it is open, so
// a second OpenDiskStorage of the same directory fails with ErrStorage
// until they are all closed. A store whose log is damaged in the middle,
// or whose snapshot file is missing, also fails with ErrStorage; the
// error's message names the file (and the offset).
func OpenDiskStorage(dir string) (*MemoryStorage, error) {
	return OpenDiskStorageGroup(dir, 1)
}

// DiskOptions tune a durable store (OpenDiskStorageWith). Start from
// DefaultDiskOptions and change the fields wanted.
type DiskOptions struct {
	// SegmentSize is the size a log segment is preallocated to; the log
	// moves to a new segment when a record would not fit. Must not be 0.
	// Default 64 MiB.
	SegmentSize uint64
	// RewriteMaxBytes: at each segment switch, the live entries of the
	// groups that keep the oldest segment alive are rewritten (so that it
	// can be deleted) while they total at most this many bytes. Default
	// 16 MiB.
	RewriteMaxBytes uint64
	// DirectMinBytes: records of at least this many bytes are written past
	// the page cache (O_DIRECT) where the filesystem takes it;
	// math.MaxUint64 writes every record through the page cache. Default
	// 1 MiB.
	DirectMinBytes uint64
	// ReadCacheBytes: the bytes of the newest records kept in memory, from
	// which their entries are read back without reading the file; 0 keeps
	// none. Default 64 MiB.
	ReadCacheBytes uint64
}

// DefaultDiskOptions returns the options OpenDiskStorage uses.
func DefaultDiskOptions() DiskOptions { return cStorageOptionsDefault() }

// OpenDiskStorageWith is OpenDiskStorageGroup with options instead of the
// defaults; they hold for the store while it is open, for every group of
// it. A SegmentSize of 0 fails with ErrInvalidArg.
func OpenDiskStorageWith(dir string, group uint64, opts DiskOptions) (*MemoryStorage, error) {
	p, err := cStorageOpenWith(dir, group, opts)
	if err != nil {
		return nil, err
	}
	return wrapStorage(p), nil
}

// OpenDiskStorageGroup is OpenDiskStorage for group `group` of the store.
func OpenDiskStorageGroup(dir string, group uint64) (*MemoryStorage, error) {
	p, err := cStorageOpen(dir, group)
	if err != nil {
		return nil, err
	}
	return wrapStorage(p), nil
}

// OpenGroup returns group `group` of the same durable store as s (a
// storage from OpenDiskStorage). It fails with ErrInvalidArg for a memory
// storage.
func (s *MemoryStorage) OpenGroup(group uint64) (*MemoryStorage, error) {
	p, err := s.ptr()
	if err != nil {
		return nil, err
	}
	q, err := cStorageOpenGroup(p, group)
	runtime.KeepAlive(s)
	if err != nil {
		return nil, err
	}
	return wrapStorage(q), nil
}

func wrapStorage(p cStorage) *MemoryStorage {
	s := &MemoryStorage{h: &storageHandle{p: p}}
	s.cleanup = runtime.AddCleanup(s, func(h *storageHandle) { cStorageFree(h.p) }, s.h)
	return s
}

// AppendReadyViews persists the Readies of many groups of one durable
// store with ONE sync (group commit): views[i], a view of the node over
// storages[i], is written to storages[i] as AppendReadyView would write
// it, all in one record, synced once if any of them must be. A host of
// many groups on one goroutine takes each node's view, writes them all
// with one call, then sends and advances each. Every storage must be a
// group of the same store (OpenDiskStorage, OpenGroup). Nothing is written
// if any view does not fit its group's log, or is stale or out of order
// (as for AppendReadyView, against what its storage persisted last or an
// earlier element of the same call). No views is a no-op.
//
// Errors: ErrInvalidArg for slices of different lengths, a memory
// storage or groups of different stores; ErrReadyStale; a storage error.
func AppendReadyViews(storages []*MemoryStorage, views []ReadyView) error {
	if len(storages) != len(views) {
		return &Error{CodeInvalidArg, fmt.Sprintf(
			"%d storages for %d readies", len(storages), len(views))}
	}
	if len(views) == 0 {
		return nil
	}
	ss := make([]cStorage, len(storages))
	rs := make([]cReady, len(views))
	for i, s := range storages {
		if s == nil {
			return &Error{CodeInvalidArg, fmt.Sprintf("storage %d is nil", i)}
		}
		p, err := s.ptr()
		if err != nil {
			return err
		}
		v := views[i]
		if v.h == nil || !v.h.live(v.gen) {
			return &Error{CodeReadyStale, fmt.Sprintf(
				"ready %d was already advanced or released", i)}
		}
		ss[i], rs[i] = p, v.h.p
	}
	err := cStorageAppendReadies(ss, rs)
	runtime.KeepAlive(storages)
	runtime.KeepAlive(views)
	return err
}
