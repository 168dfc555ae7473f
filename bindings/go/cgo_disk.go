package raftlet

// The cgo boundary of the durable storage (raftlet_storage_open and
// friends), kept beside cgo.go under the same rules: one helper per Go
// call, which copies raftlet_last_error_message() in the same crossing.

/*
#include <stdlib.h>
#include <string.h>
#include "raftlet.h"

typedef struct {
	uint32_t code;
	char *msg;
	raftlet_storage *storage;
} go_disk_res;

static go_disk_res go_disk_res_of(raftlet_result rc, raftlet_storage *s) {
	go_disk_res r;
	r.code = (uint32_t)rc;
	r.msg = NULL;
	r.storage = s;
	if (rc != RAFTLET_OK) {
		const char *m = raftlet_last_error_message();
		r.msg = strdup(m ? m : "");
	}
	return r;
}

static go_disk_res go_storage_open(const char *dir, uint64_t group) {
	raftlet_storage *s = NULL;
	raftlet_result rc = raftlet_storage_open(dir, group, &s);
	return go_disk_res_of(rc, s);
}

static go_disk_res go_storage_open_with(const char *dir, uint64_t group, uint64_t segment_size,
                                        uint64_t rewrite_max_bytes, uint64_t direct_min_bytes,
                                        uint64_t read_cache_bytes) {
	raftlet_storage *s = NULL;
	raftlet_storage_options o = raftlet_storage_options_default();
	o.segment_size = segment_size;
	o.rewrite_max_bytes = rewrite_max_bytes;
	o.direct_min_bytes = direct_min_bytes;
	o.read_cache_bytes = read_cache_bytes;
	raftlet_result rc = raftlet_storage_open_with(dir, group, &o, &s);
	return go_disk_res_of(rc, s);
}

static raftlet_storage_options go_storage_options_default(void) {
	return raftlet_storage_options_default();
}

static go_disk_res go_storage_open_group(const raftlet_storage *from, uint64_t group) {
	raftlet_storage *s = NULL;
	raftlet_result rc = raftlet_storage_open_group(from, group, &s);
	return go_disk_res_of(rc, s);
}
*/
import "C"

import "unsafe"

func diskResult(r C.go_disk_res) (cStorage, error) {
	if r.code == 0 {
		return r.storage, nil
	}
	msg := ""
	if r.msg != nil {
		msg = C.GoString(r.msg)
		C.free(unsafe.Pointer(r.msg))
	}
	return nil, &Error{Code: Code(r.code), Msg: msg}
}

func cStorageOpen(dir string, group uint64) (cStorage, error) {
	cdir := C.CString(dir)
	defer C.free(unsafe.Pointer(cdir))
	return diskResult(C.go_storage_open(cdir, C.uint64_t(group)))
}

func cStorageOpenWith(dir string, group uint64, o DiskOptions) (cStorage, error) {
	cdir := C.CString(dir)
	defer C.free(unsafe.Pointer(cdir))
	return diskResult(C.go_storage_open_with(cdir, C.uint64_t(group), C.uint64_t(o.SegmentSize),
		C.uint64_t(o.RewriteMaxBytes), C.uint64_t(o.DirectMinBytes), C.uint64_t(o.ReadCacheBytes)))
}

func cStorageOptionsDefault() DiskOptions {
	o := C.go_storage_options_default()
	return DiskOptions{
		SegmentSize:     uint64(o.segment_size),
		RewriteMaxBytes: uint64(o.rewrite_max_bytes),
		DirectMinBytes:  uint64(o.direct_min_bytes),
		ReadCacheBytes:  uint64(o.read_cache_bytes),
	}
}

func cStorageOpenGroup(from cStorage, group uint64) (cStorage, error) {
	return diskResult(C.go_storage_open_group(from, C.uint64_t(group)))
}
