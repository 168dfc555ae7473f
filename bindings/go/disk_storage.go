package raftlet

import "runtime"

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
