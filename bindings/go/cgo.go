package raftlet

// This file is the whole cgo boundary: every call into the C ABI is made
// here, through small C helpers in the preamble. Each helper does all the
// C work of one Go method (several C calls when needed) in one cgo
// crossing and, on failure, copies raftlet_last_error_message() before
// returning, so the thread-local message is read on the thread that set
// it without runtime.LockOSThread.
//
// Rules kept throughout: Go memory passed to C holds no Go pointers and is
// never retained by C (raftlet copies what it keeps); C memory handed to
// Go is copied before the C object that owns it is freed; every method
// that uses a C handle calls runtime.KeepAlive on its Go owner after the
// C call.

/*
// Where raftlet.h and the library come from is set by link_pkgconfig.go
// (an installed raftlet, found through pkg-config: the default) or
// link_intree.go (this checkout's build, with -tags raftlet_intree).

#include <stdlib.h>
#include <string.h>
#include "raftlet.h"

// The hot helpers neither keep a Go pointer past the call (the library
// copies what it keeps) nor call back into Go (the binding installs no C
// callback), which lets cgo skip the work of a call that might.
#cgo noescape go_node_propose_hr
#cgo nocallback go_node_propose_hr
#cgo noescape go_node_step_hr
#cgo nocallback go_node_step_hr
#cgo noescape go_node_tick_hr
#cgo nocallback go_node_tick_hr
#cgo noescape go_node_read_index_hr
#cgo nocallback go_node_read_index_hr
#cgo noescape go_node_step_batch
#cgo nocallback go_node_step_batch
#cgo noescape go_node_propose_batch
#cgo nocallback go_node_propose_batch
#cgo noescape go_payloads_new
#cgo nocallback go_payloads_new
#cgo noescape go_node_propose_payloads
#cgo nocallback go_node_propose_payloads
#cgo noescape go_node_packed_batch
#cgo nocallback go_node_packed_batch
#cgo noescape go_node_advance_hr
#cgo nocallback go_node_advance_hr
#cgo noescape go_node_ready_flat
#cgo nocallback go_node_ready_flat
#cgo noescape go_node_advance_ready_flat
#cgo nocallback go_node_advance_ready_flat
#cgo noescape go_bytes_then_ready
#cgo nocallback go_bytes_then_ready
#cgo noescape go_node_step_batch_ready
#cgo nocallback go_node_step_batch_ready
#cgo noescape go_node_packed_step_ready
#cgo nocallback go_node_packed_step_ready
#cgo noescape go_release
#cgo nocallback go_release
#cgo noescape go_tick_many
#cgo nocallback go_tick_many
#cgo noescape go_storage_append_ready
#cgo nocallback go_storage_append_ready
#cgo noescape go_node_has_ready
#cgo nocallback go_node_has_ready
#cgo noescape go_node_basic_status
#cgo nocallback go_node_basic_status
#cgo noescape go_node_campaign
#cgo nocallback go_node_campaign
#cgo noescape go_storage_compact
#cgo nocallback go_storage_compact

#if RAFTLET_VERSION_MAJOR != 0
#error "this Go binding is written for raftlet 0.x: include/raftlet.h has another RAFTLET_VERSION_MAJOR"
#endif

// The outcome of a helper: the result code and, on failure, a malloc'd
// copy of the last error message (freed by Go).
typedef struct {
	uint32_t code;
	char *msg;
} go_res;

static go_res go_res_of(raftlet_result rc) {
	go_res r;
	r.code = (uint32_t)rc;
	r.msg = NULL;
	if (rc != RAFTLET_OK) {
		const char *m = raftlet_last_error_message();
		r.msg = strdup(m ? m : "");
	}
	return r;
}

// Every Config field, set in one crossing.
typedef struct {
	uint64_t id;
	uint64_t election_tick;
	uint64_t heartbeat_tick;
	uint64_t applied;
	uint64_t max_size_per_msg;
	uint64_t max_committed_size_per_ready;
	uint64_t max_uncommitted_entries_size;
	uint64_t max_inflight_msgs;
	uint64_t max_inflight_bytes;
	uint64_t promote_max_lag;
	uint64_t max_learners;
	uint64_t seed;
	uint32_t read_only_option;
	bool check_quorum;
	bool pre_vote;
	bool disable_proposal_forwarding;
	bool disable_conf_change_validation;
	bool step_down_on_removal;
	bool coalesce_appends;
	uint64_t promote_min_active_rounds;
	uint64_t standby_dead_rounds;
	bool learner_first;
	bool auto_promote;
	bool standby_promotion;
	bool learner_forwards_proposals;
	bool quiesce;
} go_config;

typedef struct {
	go_res res;
	raftlet_node *node;
} go_node_res;

static go_node_res go_node_new(const go_config *c, const raftlet_storage *s) {
	go_node_res out;
	out.node = NULL;
	raftlet_config *cfg = NULL;
	raftlet_result rc = raftlet_config_new(c->id, &cfg);
#define GO_SET(fn, v) if (rc == RAFTLET_OK) rc = fn(cfg, v)
	GO_SET(raftlet_config_set_election_tick, c->election_tick);
	GO_SET(raftlet_config_set_heartbeat_tick, c->heartbeat_tick);
	GO_SET(raftlet_config_set_applied, c->applied);
	GO_SET(raftlet_config_set_max_size_per_msg, c->max_size_per_msg);
	GO_SET(raftlet_config_set_max_committed_size_per_ready, c->max_committed_size_per_ready);
	GO_SET(raftlet_config_set_max_uncommitted_entries_size, c->max_uncommitted_entries_size);
	GO_SET(raftlet_config_set_max_inflight_msgs, c->max_inflight_msgs);
	GO_SET(raftlet_config_set_max_inflight_bytes, c->max_inflight_bytes);
	GO_SET(raftlet_config_set_promote_max_lag, c->promote_max_lag);
	GO_SET(raftlet_config_set_max_learners, c->max_learners);
	GO_SET(raftlet_config_set_seed, c->seed);
	GO_SET(raftlet_config_set_read_only_option, c->read_only_option);
	GO_SET(raftlet_config_set_check_quorum, c->check_quorum);
	GO_SET(raftlet_config_set_pre_vote, c->pre_vote);
	GO_SET(raftlet_config_set_disable_proposal_forwarding, c->disable_proposal_forwarding);
	GO_SET(raftlet_config_set_disable_conf_change_validation, c->disable_conf_change_validation);
	GO_SET(raftlet_config_set_step_down_on_removal, c->step_down_on_removal);
	GO_SET(raftlet_config_set_coalesce_appends, c->coalesce_appends);
	GO_SET(raftlet_config_set_promote_min_active_rounds, c->promote_min_active_rounds);
	GO_SET(raftlet_config_set_standby_dead_rounds, c->standby_dead_rounds);
	GO_SET(raftlet_config_set_learner_first, c->learner_first);
	GO_SET(raftlet_config_set_auto_promote, c->auto_promote);
	GO_SET(raftlet_config_set_standby_promotion, c->standby_promotion);
	GO_SET(raftlet_config_set_learner_forwards_proposals, c->learner_forwards_proposals);
	GO_SET(raftlet_config_set_quiesce, c->quiesce);
#undef GO_SET
	if (rc == RAFTLET_OK) rc = raftlet_node_new(cfg, s, &out.node);
	out.res = go_res_of(rc);
	raftlet_config_free(cfg);
	return out;
}

static go_res go_node_bootstrap(raftlet_node *n, const uint64_t *voters, size_t nv, const uint64_t *learners, size_t nl) {
	return go_res_of(raftlet_node_bootstrap(n, voters, nv, learners, nl));
}
static go_res go_node_tick(raftlet_node *n) { return go_res_of(raftlet_node_tick(n)); }
static go_res go_node_campaign(raftlet_node *n) { return go_res_of(raftlet_node_campaign(n)); }
static go_res go_node_propose(raftlet_node *n, const uint8_t *d, size_t len) {
	return go_res_of(raftlet_node_propose(n, d, len));
}
static go_res go_node_propose_conf_change(raftlet_node *n, const uint8_t *d, size_t len, bool v2) {
	return go_res_of(raftlet_node_propose_conf_change(n, d, len, v2));
}
static go_res go_node_step(raftlet_node *n, const uint8_t *d, size_t len) {
	return go_res_of(raftlet_node_step(n, d, len));
}
static go_res go_node_read_index(raftlet_node *n, const uint8_t *d, size_t len) {
	return go_res_of(raftlet_node_read_index(n, d, len));
}
static go_res go_node_transfer_leader(raftlet_node *n, uint64_t id) {
	return go_res_of(raftlet_node_transfer_leader(n, id));
}
static go_res go_node_forget_leader(raftlet_node *n) { return go_res_of(raftlet_node_forget_leader(n)); }
static go_res go_node_report_unreachable(raftlet_node *n, uint64_t id) {
	return go_res_of(raftlet_node_report_unreachable(n, id));
}
static go_res go_node_report_snapshot(raftlet_node *n, uint64_t id, bool ok) {
	return go_res_of(raftlet_node_report_snapshot(n, id, ok));
}

typedef struct {
	go_res res;
	size_t len;
} go_len_res;

static go_len_res go_node_apply_conf_change(raftlet_node *n, const uint8_t *d, size_t len, bool v2, uint8_t *out, size_t cap) {
	go_len_res r;
	r.len = 0;
	r.res = go_res_of(raftlet_node_apply_conf_change(n, d, len, v2, out, cap, &r.len));
	return r;
}
static go_len_res go_node_conf_state(raftlet_node *n, uint8_t *out, size_t cap) {
	go_len_res r;
	r.len = 0;
	r.res = go_res_of(raftlet_node_conf_state(n, out, cap, &r.len));
	return r;
}

typedef struct {
	go_res res;
	bool has;
} go_bool_res;

static go_bool_res go_node_has_ready(uintptr_t n_) {
	raftlet_node *n = (raftlet_node *)n_;
	go_bool_res r;
	r.has = false;
	r.res = go_res_of(raftlet_node_has_ready(n, &r.has));
	return r;
}

static go_bool_res go_node_is_quiesced(raftlet_node *n) {
	go_bool_res r;
	r.has = false;
	r.res = go_res_of(raftlet_node_is_quiesced(n, &r.has));
	return r;
}
static go_res go_node_wake(raftlet_node *n) { return go_res_of(raftlet_node_wake(n)); }
static go_res go_node_wake_leader_lost(raftlet_node *n) { return go_res_of(raftlet_node_wake_leader_lost(n)); }

// A ready and its envelope (bytes owned by the ready).
typedef struct {
	go_res res;
	raftlet_ready *rd;
	const uint8_t *buf;
	size_t len;
} go_ready_res;

static go_ready_res go_node_ready(raftlet_node *n) {
	go_ready_res r;
	r.rd = NULL;
	r.buf = NULL;
	r.len = 0;
	raftlet_ready *rd = NULL;
	raftlet_result rc = raftlet_node_ready(n, &rd);
	if (rc == RAFTLET_OK) {
		raftlet_bytes b;
		rc = raftlet_ready_encode(rd, &b);
		if (rc == RAFTLET_OK) {
			r.rd = rd;
			r.buf = b.ptr;
			r.len = b.len;
		}
	}
	r.res = go_res_of(rc);
	if (rc != RAFTLET_OK) raftlet_ready_free(rd);
	return r;
}

// The learner lifecycle (raftlet_node_add_member and the rest).
static go_res go_node_add_member(raftlet_node *n, uint64_t id, const uint8_t *d, size_t len) {
	return go_res_of(raftlet_node_add_member(n, id, d, len));
}
static go_res go_node_set_auto_promote(raftlet_node *n, bool on) {
	return go_res_of(raftlet_node_set_auto_promote(n, on));
}
static go_res go_node_set_standby_promotion(raftlet_node *n, bool on) {
	return go_res_of(raftlet_node_set_standby_promotion(n, on));
}

typedef struct {
	go_res res;
	raftlet_local_read lr;
} go_local_read_res;

static go_local_read_res go_node_read_local(raftlet_node *n) {
	go_local_read_res r;
	memset(&r.lr, 0, sizeof r.lr);
	r.res = go_res_of(raftlet_node_read_local(n, &r.lr));
	return r;
}

// Up to cap membership events of a ready into out; *count gets how many
// there are.
static go_res go_ready_membership_events(raftlet_ready *rd, raftlet_membership_event *out, size_t cap, size_t *count) {
	raftlet_result rc = raftlet_ready_membership_event_count(rd, count);
	for (size_t i = 0; rc == RAFTLET_OK && i < *count && i < cap; i++) {
		rc = raftlet_ready_membership_event(rd, i, &out[i]);
	}
	return go_res_of(rc);
}

// Up to cap learner statuses into out; *count gets how many there are.
// The node may change between the calls (another goroutine, a step): a
// count that shrank ends the copy at the first index out of range.
static go_res go_node_learners(raftlet_node *n, raftlet_learner_status *out, size_t cap, size_t *count) {
	raftlet_result rc = raftlet_node_learner_count(n, count);
	size_t i = 0;
	for (; rc == RAFTLET_OK && i < *count && i < cap; i++) {
		rc = raftlet_node_learner_status(n, i, &out[i]);
	}
	if (rc == RAFTLET_ERR_INVALID_ARG) {
		*count = i;
		rc = RAFTLET_OK;
	}
	return go_res_of(rc);
}

// Advances and, on success, frees the ready.
static go_res go_node_advance(raftlet_node *n, raftlet_ready *rd) {
	go_res r = go_res_of(raftlet_node_advance(n, rd));
	if (r.code == RAFTLET_OK) raftlet_ready_free(rd);
	return r;
}

typedef struct {
	go_res res;
	raftlet_status st;
	size_t nprogress;
} go_status_res;

static go_status_res go_node_status(raftlet_node *n, raftlet_progress *prs, size_t cap) {
	go_status_res r;
	memset(&r.st, 0, sizeof r.st);
	r.nprogress = 0;
	raftlet_result rc = raftlet_node_status(n, &r.st);
	if (rc == RAFTLET_OK && prs != NULL) rc = raftlet_node_progress(n, prs, cap, &r.nprogress);
	r.res = go_res_of(rc);
	return r;
}

typedef struct {
	go_res res;
	raftlet_basic_status st;
} go_basic_status_res;

static go_basic_status_res go_node_basic_status(raftlet_node *n) {
	go_basic_status_res r;
	memset(&r.st, 0, sizeof r.st);
	r.res = go_res_of(raftlet_node_basic_status(n, &r.st));
	return r;
}

typedef struct {
	go_res res;
	raftlet_message_header h;
} go_header_res;

static go_header_res go_message_decode_header(const uint8_t *d, size_t len) {
	go_header_res r;
	memset(&r.h, 0, sizeof r.h);
	r.res = go_res_of(raftlet_message_decode_header(d, len, &r.h));
	return r;
}

typedef struct {
	go_res res;
	raftlet_storage *storage;
} go_storage_res;

static go_storage_res go_storage_new(void) {
	go_storage_res r;
	r.storage = NULL;
	r.res = go_res_of(raftlet_storage_new_memory(&r.storage));
	return r;
}
static go_res go_storage_append_entries(raftlet_storage *s, const uint8_t *d, size_t len) {
	return go_res_of(raftlet_storage_append_entries(s, d, len));
}
static go_res go_storage_append_ready(raftlet_storage *s, const raftlet_ready *rd) {
	return go_res_of(raftlet_storage_append_ready(s, rd));
}
static go_res go_storage_append_readies(raftlet_storage **ss, raftlet_ready **rs, size_t n) {
	return go_res_of(raftlet_storage_append_readies((const raftlet_storage *const *)ss,
	                                                (const raftlet_ready *const *)rs, n));
}
static go_res go_storage_set_hard_state(raftlet_storage *s, uint64_t term, uint64_t vote, uint64_t commit) {
	return go_res_of(raftlet_storage_set_hard_state(s, term, vote, commit));
}
static go_res go_storage_set_conf_state(raftlet_storage *s, const uint8_t *d, size_t len) {
	return go_res_of(raftlet_storage_set_conf_state_encoded(s, d, len));
}
static go_res go_storage_apply_snapshot(raftlet_storage *s, const uint8_t *d, size_t len) {
	return go_res_of(raftlet_storage_apply_snapshot(s, d, len));
}
// Creates a snapshot and copies the one held, in one crossing: into `out`
// when it fits in `cap`, else *len_out tells the size needed.
static go_len_res go_storage_create_snapshot(raftlet_storage *s, uint64_t index, const uint8_t *cs, size_t cs_len,
		const uint8_t *data, size_t data_len, uint8_t *out, size_t cap) {
	go_len_res r;
	r.len = 0;
	raftlet_result rc = raftlet_storage_create_snapshot_with_conf_state(s, index, cs, cs_len, data, data_len);
	if (rc == RAFTLET_OK) {
		rc = raftlet_storage_snapshot(s, NULL, 0, &r.len);
		if (rc == RAFTLET_OK && r.len <= cap && out != NULL) rc = raftlet_storage_snapshot(s, out, cap, &r.len);
	}
	r.res = go_res_of(rc);
	return r;
}
static go_len_res go_storage_snapshot(raftlet_storage *s, uint8_t *out, size_t cap) {
	go_len_res r;
	r.len = 0;
	r.res = go_res_of(raftlet_storage_snapshot(s, out, cap, &r.len));
	return r;
}
static go_res go_storage_compact(raftlet_storage *s, uint64_t index) {
	return go_res_of(raftlet_storage_compact(s, index));
}

typedef struct {
	go_res res;
	uint64_t first;
	uint64_t last;
} go_bounds_res;

static go_bounds_res go_storage_bounds(raftlet_storage *s) {
	go_bounds_res r;
	r.first = 0;
	r.last = 0;
	r.res = go_res_of(raftlet_storage_bounds(s, &r.first, &r.last));
	return r;
}

// The hot path: the C handles (node, ready, storage) of the helpers
// below cross as uintptr_t: they are C memory, and cgo would otherwise
// check at run time, for every pointer argument of every call, that it
// does not point into the Go heap (cgocheck, ~40 instructions each).
// Each helper below is one crossing that also reports
// whether the node has a ready afterwards (known is false when that could
// not be read), so that RawNode.HasReady needs no crossing of its own.
typedef struct {
	go_res res;
	bool has;
	bool known;
} go_hr_res;

static void go_hr(raftlet_node *n, go_hr_res *r) {
	bool h = false;
	r->known = raftlet_node_has_ready(n, &h) == RAFTLET_OK;
	r->has = h;
}

static go_hr_res go_node_propose_hr(uintptr_t n_, const uint8_t *d, size_t len) {
	raftlet_node *n = (raftlet_node *)n_;
	go_hr_res r;
	r.res = go_res_of(raftlet_node_propose(n, d, len));
	go_hr(n, &r);
	return r;
}
static go_hr_res go_node_step_hr(uintptr_t n_, const uint8_t *d, size_t len) {
	raftlet_node *n = (raftlet_node *)n_;
	go_hr_res r;
	r.res = go_res_of(raftlet_node_step(n, d, len));
	go_hr(n, &r);
	return r;
}
static go_hr_res go_node_tick_hr(uintptr_t n_) {
	raftlet_node *n = (raftlet_node *)n_;
	go_hr_res r;
	r.res = go_res_of(raftlet_node_tick(n));
	go_hr(n, &r);
	return r;
}
static go_hr_res go_node_read_index_hr(uintptr_t n_, const uint8_t *d, size_t len) {
	raftlet_node *n = (raftlet_node *)n_;
	go_hr_res r;
	r.res = go_res_of(raftlet_node_read_index(n, d, len));
	go_hr(n, &r);
	return r;
}
static go_hr_res go_node_step_batch(uintptr_t n_, const raftlet_bytes *msgs, size_t count) {
	raftlet_node *n = (raftlet_node *)n_;
	go_hr_res r;
	r.res = go_res_of(raftlet_node_step_batch(n, msgs, count, NULL));
	go_hr(n, &r);
	return r;
}
// Payloads in the library's memory: their handles as integers and their
// bytes as C pointers, both written into Go memory (which may hold C
// pointers).
static go_res go_payloads_new(const size_t *lens, size_t count, uintptr_t *ps, uint8_t **data) {
	return go_res_of(raftlet_payloads_new(lens, count, (raftlet_payload **)ps, data));
}
static void go_payload_free(uintptr_t p) {
	raftlet_payload_free((raftlet_payload *)p);
}
static go_hr_res go_node_propose_payloads(uintptr_t n_, const uintptr_t *ps, size_t count) {
	raftlet_node *n = (raftlet_node *)n_;
	go_hr_res r;
	r.res = go_res_of(raftlet_node_propose_payloads(n, (raftlet_payload *const *)ps, count));
	go_hr(n, &r);
	return r;
}
static go_hr_res go_node_propose_batch(uintptr_t n_, const raftlet_bytes *ps, size_t count) {
	raftlet_node *n = (raftlet_node *)n_;
	go_hr_res r;
	r.res = go_res_of(raftlet_node_propose_batch(n, ps, count));
	go_hr(n, &r);
	return r;
}
// Advances and, on success, frees the ready; then reads has_ready.
static go_hr_res go_node_advance_hr(uintptr_t n_, uintptr_t rd_) {
	raftlet_node *n = (raftlet_node *)n_;
	raftlet_ready *rd = (raftlet_ready *)rd_;
	go_hr_res r;
	raftlet_result rc = raftlet_node_advance(n, rd);
	r.res = go_res_of(rc);
	if (rc == RAFTLET_OK) raftlet_ready_free(rd);
	go_hr(n, &r);
	return r;
}
// A ready taken with its flat view (a pointer into the ready: the result
// stays small, and no Go pointer crosses for cgo to check) and, when
// persisted in the same crossing, the outcome of the write.
typedef struct {
	go_hr_res hr;
	raftlet_ready *rd;
	const raftlet_ready_flat *flat; // in the ready's memory
	go_res persist;
} go_ready_flat_res;

static void go_take_ready(raftlet_node *n, raftlet_storage *s, bool only_if_ready, go_ready_flat_res *r);

// Reports entries up to owed applied, when owed is not 0: the report the
// Go side owes the node for views it released without a crossing
// (RawNode.deferAdvance), made first thing in the node's next crossing.
// It fails only on a poisoned node, which the call after it reports.
static void go_pay(raftlet_node *n, uint64_t owed) {
	if (owed != 0) (void)raftlet_node_advance_apply_to(n, owed);
}
static go_res go_node_advance_apply_to(uintptr_t n_, uint64_t index) {
	return go_res_of(raftlet_node_advance_apply_to((raftlet_node *)n_, index));
}

// Frees the nslots readies of slots and the n of rel, released by the Go
// side without an advance (their flat views said advance_is_noop) and
// left to the next crossing of any node that takes a ready or ticks a
// set. First thing in such a crossing, so that a ready taken after it
// reuses their buffers.
static void go_release(const uintptr_t *slots, size_t nslots, const uintptr_t *rel, size_t n) {
	for (size_t i = 0; i < nslots; i++) raftlet_ready_free((raftlet_ready *)slots[i]);
	for (size_t i = 0; i < n; i++) raftlet_ready_free((raftlet_ready *)rel[i]);
}

// Takes the next ready and its flat view, persists it into s when s is
// not NULL, then reads has_ready: a whole Ready in one crossing. rd is
// NULL when no ready was taken; a failed write leaves the ready taken.
static go_ready_flat_res go_node_ready_flat(uintptr_t n_, uintptr_t s_, const uintptr_t *slots, size_t nslots, const uintptr_t *rel, size_t nrel,
		uint64_t owed) {
	raftlet_node *n = (raftlet_node *)n_;
	raftlet_storage *s = (raftlet_storage *)s_;
	go_release(slots, nslots, rel, nrel);
	go_pay(n, owed);
	go_ready_flat_res r;
	memset(&r, 0, sizeof r);
	go_take_ready(n, s, false, &r);
	return r;
}

// What a call that ends with "and take the next ready" returns: the
// outcome of its first part (an advance, a step), then, when that left
// the node with a ready (next.hr.has on return from the first part), the
// ready taken and persisted as go_node_ready_flat does (next.rd NULL
// when none was taken).
typedef struct {
	go_res first;
	go_ready_flat_res next;
} go_then_ready_res;

// Takes the next ready, if the node has one, into r->next (persisted
// into s) as go_node_ready_flat: one call of the library.
static void go_then_take(raftlet_node *n, raftlet_storage *s, go_then_ready_res *r) {
	go_take_ready(n, s, true, &r->next);
}

// Advances rd (freed on success) and, when the node then has a ready,
// takes it persisted into s: the end of one Ready cycle and the start of
// the next in one crossing. With a storage, the advance is
// raftlet_node_advance_light: what the write's acknowledgement made
// available (entries it committed, messages) comes back as a light ready,
// its commit index written to s, without a full Ready cycle.
static go_then_ready_res go_node_advance_ready_flat(uintptr_t n_, uintptr_t rd_, uintptr_t s_, const uintptr_t *slots, size_t nslots, const uintptr_t *rel, size_t nrel) {
	raftlet_node *n = (raftlet_node *)n_;
	raftlet_ready *rd = (raftlet_ready *)rd_;
	raftlet_storage *s = (raftlet_storage *)s_;
	go_release(slots, nslots, rel, nrel);
	go_then_ready_res r;
	memset(&r, 0, sizeof r);
	if (s != NULL) {
		raftlet_ready *light = NULL;
		const raftlet_ready_flat *flat = NULL;
		raftlet_result persist = RAFTLET_OK;
		bool has = false;
		raftlet_result rc = raftlet_node_advance_light(n, rd, s, &light, &flat, &persist, &has);
		r.first = go_res_of(rc);
		if (rc != RAFTLET_OK) {
			go_hr(n, &r.next.hr);
			return r;
		}
		raftlet_ready_free(rd);
		if (light == NULL) {
			go_then_take(n, s, &r);
			return r;
		}
		r.next.rd = light;
		r.next.flat = flat;
		r.next.persist = go_res_of(persist);
		r.next.hr.has = has;
		r.next.hr.known = true;
		return r;
	}
	raftlet_result rc = raftlet_node_advance(n, rd);
	r.first = go_res_of(rc);
	if (rc != RAFTLET_OK) {
		go_hr(n, &r.next.hr);
		return r;
	}
	raftlet_ready_free(rd);
	go_then_take(n, s, &r);
	return r;
}

// A call of the library that takes a node and bytes: raftlet_node_propose,
// raftlet_node_read_index (passed from Go as C function pointers).
typedef raftlet_result (*go_bytes_call)(raftlet_node *, const uint8_t *, size_t);

// Calls call(n, d, len) and, when the node then has a ready, takes it
// persisted into s: a proposal or a read request and the Ready it leaves
// (the entry; the heartbeats that confirm the read) in one crossing.
static go_then_ready_res go_bytes_then_ready(go_bytes_call call, uintptr_t n_, const uint8_t *d, size_t len,
		uintptr_t s_, const uintptr_t *slots, size_t nslots, const uintptr_t *rel, size_t nrel, uint64_t owed) {
	raftlet_node *n = (raftlet_node *)n_;
	raftlet_storage *s = (raftlet_storage *)s_;
	go_release(slots, nslots, rel, nrel);
	go_pay(n, owed);
	go_then_ready_res r;
	memset(&r, 0, sizeof r);
	r.first = go_res_of(call(n, d, len));
	go_then_take(n, s, &r);
	return r;
}

// Steps msgs (every one, as raftlet_node_step_batch) and, when the node
// then has a ready, takes it persisted into s.
static go_then_ready_res go_node_step_batch_ready(uintptr_t n_, const raftlet_bytes *msgs, size_t count,
		uintptr_t s_, const uintptr_t *slots, size_t nslots, const uintptr_t *rel, size_t nrel, uint64_t owed) {
	raftlet_node *n = (raftlet_node *)n_;
	raftlet_storage *s = (raftlet_storage *)s_;
	go_release(slots, nslots, rel, nrel);
	go_pay(n, owed);
	go_then_ready_res r;
	memset(&r, 0, sizeof r);
	r.first = go_res_of(raftlet_node_step_batch(n, msgs, count, NULL));
	go_then_take(n, s, &r);
	return r;
}

// Fills *r (zeroed by the caller) as go_node_ready_flat returns it,
// with one call of the library: raftlet_node_ready_flat, or with a
// storage raftlet_node_ready_persisted (the write acknowledged at once,
// and what that made available in the same ready); with only_if_ready,
// r->rd stays NULL when the node has no ready.
static void go_take_ready(raftlet_node *n, raftlet_storage *s, bool only_if_ready, go_ready_flat_res *r) {
	raftlet_result persist = RAFTLET_OK;
	bool has = false;
	raftlet_result rc = s != NULL
		? raftlet_node_ready_persisted(n, s, only_if_ready, &r->rd, &r->flat, &persist, &has)
		: raftlet_node_ready_flat(n, NULL, only_if_ready, &r->rd, &r->flat, &persist, &has);
	r->hr.res = go_res_of(rc);
	r->hr.has = has;
	r->hr.known = rc == RAFTLET_OK;
	r->persist = go_res_of(persist);
}
// A batch packed in one buffer: item i is the lens[i] bytes after the
// previous items (Go memory without Go pointers, read for the call).
static go_hr_res go_node_packed_batch(uintptr_t n_, const uint8_t *buf, const size_t *lens, size_t count,
		bool propose) {
	raftlet_node *n = (raftlet_node *)n_;
	go_hr_res r;
	raftlet_bytes stack[64];
	raftlet_bytes *items = count <= 64 ? stack : malloc(count * sizeof *items);
	if (items == NULL) {
		r.res.code = RAFTLET_ERR_INVALID_ARG;
		r.res.msg = strdup("out of memory for the batch");
		go_hr(n, &r);
		return r;
	}
	size_t at = 0;
	for (size_t i = 0; i < count; i++) {
		items[i].ptr = lens[i] ? buf + at : NULL;
		items[i].len = lens[i];
		at += lens[i];
	}
	raftlet_result rc = propose ? raftlet_node_propose_batch(n, items, count)
	                            : raftlet_node_step_batch(n, items, count, NULL);
	r.res = go_res_of(rc);
	if (items != stack) free(items);
	go_hr(n, &r);
	return r;
}
// go_node_packed_batch's step, then the next ready as
// go_node_step_batch_ready.
static go_then_ready_res go_node_packed_step_ready(uintptr_t n_, const uint8_t *buf, const size_t *lens,
		size_t count, uintptr_t s_, const uintptr_t *slots, size_t nslots, const uintptr_t *rel, size_t nrel,
		uint64_t owed) {
	raftlet_node *n = (raftlet_node *)n_;
	raftlet_storage *s = (raftlet_storage *)s_;
	go_release(slots, nslots, rel, nrel);
	go_pay(n, owed);
	go_then_ready_res r;
	memset(&r, 0, sizeof r);
	raftlet_bytes stack[64];
	raftlet_bytes *items = count <= 64 ? stack : malloc(count * sizeof *items);
	if (items == NULL) {
		r.first.code = RAFTLET_ERR_INVALID_ARG;
		r.first.msg = strdup("out of memory for the batch");
		go_hr(n, &r.next.hr);
		return r;
	}
	size_t at = 0;
	for (size_t i = 0; i < count; i++) {
		items[i].ptr = lens[i] ? buf + at : NULL;
		items[i].len = lens[i];
		at += lens[i];
	}
	r.first = go_res_of(raftlet_node_step_batch(n, items, count, NULL));
	if (items != stack) free(items);
	go_then_take(n, s, &r);
	return r;
}
// Reports the nowed applied indexes owed (owed_nodes[i] is owed
// owed_index[i]), then ticks the nodes.
static go_res go_tick_many(raftlet_node *const *nodes, size_t count, uint8_t *bitmap, const uintptr_t *slots,
		size_t nslots, const uintptr_t *rel, size_t nrel, const uintptr_t *owed_nodes, const uint64_t *owed_index,
		size_t nowed) {
	go_release(slots, nslots, rel, nrel);
	for (size_t i = 0; i < nowed; i++) go_pay((raftlet_node *)owed_nodes[i], owed_index[i]);
	return go_res_of(raftlet_tick_many(nodes, count, bitmap));
}
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// errorOf turns a helper's outcome into an error (nil on success).
func errorOf(r C.go_res) error {
	if r.code == 0 {
		return nil // small enough to be inlined: the common case costs no call
	}
	return errorFrom(r)
}

// errorFrom is errorOf for a failure.
func errorFrom(r C.go_res) error {
	msg := ""
	if r.msg != nil {
		msg = C.GoString(r.msg)
		C.free(unsafe.Pointer(r.msg))
	}
	return &Error{Code: Code(r.code), Msg: msg}
}

// nodeH is a C handle (C memory: never a Go pointer) as the uintptr_t
// the hot helpers take, so that cgo does not check it on every call.
func nodeH(p cNode) C.uintptr_t { return C.uintptr_t(uintptr(unsafe.Pointer(p))) }

// readyH is nodeH for a ready (see nodeH).
func readyH(p cReady) C.uintptr_t { return C.uintptr_t(uintptr(unsafe.Pointer(p))) }

// storeH is nodeH for a storage (see nodeH).
func storeH(p cStorage) C.uintptr_t { return C.uintptr_t(uintptr(unsafe.Pointer(p))) }

// bytesPtr is the C view of a Go byte slice for the duration of a call:
// NULL for an empty slice.
func bytesPtr(b []byte) (*C.uint8_t, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0])), C.size_t(len(b))
}

// Handle types, so that other files need no cgo.
type (
	cNode    = *C.raftlet_node
	cStorage = *C.raftlet_storage
	cReady   = *C.raftlet_ready
)

// cVersion is raftlet_version() of the linked library.
func cVersion() string { return C.GoString(C.raftlet_version()) }

// cResultName is raftlet_result_str(code).
func cResultName(c Code) string { return C.GoString(C.raftlet_result_str(C.uint32_t(c))) }

// cConfig mirrors the C go_config struct in Go terms.
type cConfig struct {
	id, electionTick, heartbeatTick, applied                 uint64
	maxSizePerMsg, maxCommittedSizePerReady                  uint64
	maxUncommittedEntriesSize, maxInflightMsgs               uint64
	maxInflightBytes, promoteMaxLag, maxLearners, seed       uint64
	promoteMinActiveRounds, standbyDeadRounds                uint64
	readOnlyOption                                           uint32
	checkQuorum, preVote, disableProposalForwarding          bool
	disableConfChangeValidation, stepDownOnRemoval, coalesce bool
	learnerFirst, autoPromote, standbyPromotion              bool
	learnerForwardsProposals, quiesce                        bool
}

func cNodeNew(c *cConfig, s cStorage) (cNode, error) {
	cc := C.go_config{
		id:                             C.uint64_t(c.id),
		election_tick:                  C.uint64_t(c.electionTick),
		heartbeat_tick:                 C.uint64_t(c.heartbeatTick),
		applied:                        C.uint64_t(c.applied),
		max_size_per_msg:               C.uint64_t(c.maxSizePerMsg),
		max_committed_size_per_ready:   C.uint64_t(c.maxCommittedSizePerReady),
		max_uncommitted_entries_size:   C.uint64_t(c.maxUncommittedEntriesSize),
		max_inflight_msgs:              C.uint64_t(c.maxInflightMsgs),
		max_inflight_bytes:             C.uint64_t(c.maxInflightBytes),
		promote_max_lag:                C.uint64_t(c.promoteMaxLag),
		max_learners:                   C.uint64_t(c.maxLearners),
		seed:                           C.uint64_t(c.seed),
		read_only_option:               C.uint32_t(c.readOnlyOption),
		check_quorum:                   C.bool(c.checkQuorum),
		pre_vote:                       C.bool(c.preVote),
		disable_proposal_forwarding:    C.bool(c.disableProposalForwarding),
		disable_conf_change_validation: C.bool(c.disableConfChangeValidation),
		step_down_on_removal:           C.bool(c.stepDownOnRemoval),
		coalesce_appends:               C.bool(c.coalesce),
		promote_min_active_rounds:      C.uint64_t(c.promoteMinActiveRounds),
		standby_dead_rounds:            C.uint64_t(c.standbyDeadRounds),
		learner_first:                  C.bool(c.learnerFirst),
		auto_promote:                   C.bool(c.autoPromote),
		standby_promotion:              C.bool(c.standbyPromotion),
		learner_forwards_proposals:     C.bool(c.learnerForwardsProposals),
		quiesce:                        C.bool(c.quiesce),
	}
	r := C.go_node_new(&cc, s)
	if err := errorOf(r.res); err != nil {
		return nil, err
	}
	return r.node, nil
}

func cNodeFree(n cNode) { C.raftlet_node_free(n) }

func cNodeBootstrap(n cNode, voters, learners []uint64) error {
	var vp, lp *C.uint64_t
	if len(voters) > 0 {
		vp = (*C.uint64_t)(unsafe.Pointer(&voters[0]))
	}
	if len(learners) > 0 {
		lp = (*C.uint64_t)(unsafe.Pointer(&learners[0]))
	}
	return errorOf(C.go_node_bootstrap(n, vp, C.size_t(len(voters)), lp, C.size_t(len(learners))))
}

func cNodeTick(n cNode) error     { return errorOf(C.go_node_tick(n)) }
func cNodeCampaign(n cNode) error { return errorOf(C.go_node_campaign(n)) }

func cNodePropose(n cNode, data []byte) error {
	p, l := bytesPtr(data)
	return errorOf(C.go_node_propose(n, p, l))
}

func cNodeProposeConfChange(n cNode, cc []byte, v2 bool) error {
	p, l := bytesPtr(cc)
	return errorOf(C.go_node_propose_conf_change(n, p, l, C.bool(v2)))
}

func cNodeStep(n cNode, msg []byte) error {
	p, l := bytesPtr(msg)
	return errorOf(C.go_node_step(n, p, l))
}

func cNodeReadIndex(n cNode, ctx []byte) error {
	p, l := bytesPtr(ctx)
	return errorOf(C.go_node_read_index(n, p, l))
}

func cNodeTransferLeader(n cNode, id uint64) error {
	return errorOf(C.go_node_transfer_leader(n, C.uint64_t(id)))
}

func cNodeForgetLeader(n cNode) error { return errorOf(C.go_node_forget_leader(n)) }

func cNodeReportUnreachable(n cNode, id uint64) error {
	return errorOf(C.go_node_report_unreachable(n, C.uint64_t(id)))
}

func cNodeReportSnapshot(n cNode, id uint64, ok bool) error {
	return errorOf(C.go_node_report_snapshot(n, C.uint64_t(id), C.bool(ok)))
}

// cNodeApplyConfChange applies cc and writes the new ConfState into out;
// it returns the ConfState's length, which exceeds len(out) (with a nil
// error) when out was too small: the change is applied all the same.
func cNodeApplyConfChange(n cNode, cc []byte, v2 bool, out []byte) (int, error) {
	p, l := bytesPtr(cc)
	op, ocap := bytesPtr(out)
	r := C.go_node_apply_conf_change(n, p, l, C.bool(v2), op, ocap)
	err := errorOf(r.res)
	if int(r.len) > len(out) && isCode(err, CodeInvalidArg) {
		err = nil
	}
	return int(r.len), err
}

// cNodeConfState writes the current ConfState into out and returns its
// length (larger than len(out), with a nil error, when out is too small).
func cNodeConfState(n cNode, out []byte) (int, error) {
	op, ocap := bytesPtr(out)
	r := C.go_node_conf_state(n, op, ocap)
	err := errorOf(r.res)
	if int(r.len) > len(out) && isCode(err, CodeInvalidArg) {
		err = nil
	}
	return int(r.len), err
}

func cNodeHasReady(n cNode) (bool, error) {
	r := C.go_node_has_ready(nodeH(n))
	return bool(r.has), errorOf(r.res)
}

func cNodeIsQuiesced(n cNode) (bool, error) {
	r := C.go_node_is_quiesced(n)
	return bool(r.has), errorOf(r.res)
}

func cNodeWake(n cNode) error           { return errorOf(C.go_node_wake(n)) }
func cNodeWakeLeaderLost(n cNode) error { return errorOf(C.go_node_wake_leader_lost(n)) }

// cNodeReady takes the next ready; the envelope view is valid until the
// ready is freed.
func cNodeReady(n cNode) (cReady, []byte, error) {
	r := C.go_node_ready(n)
	if err := errorOf(r.res); err != nil {
		return nil, nil, err
	}
	var view []byte
	if r.len > 0 {
		view = unsafe.Slice((*byte)(unsafe.Pointer(r.buf)), int(r.len))
	}
	return r.rd, view, nil
}

// cNodeAdvance advances and frees the ready (only on success).
func cNodeAdvance(n cNode, rd cReady) error { return errorOf(C.go_node_advance(n, rd)) }

func cReadyFree(rd cReady) { C.raftlet_ready_free(rd) }

// cStatus is the scalar part of raftlet_status.
type cStatus struct {
	id, term, vote, commit, lead, applied, leadTransferee uint64
	role                                                  uint32
	progressCount                                         int
}

// cProgress is raftlet_progress.
type cProgress = C.raftlet_progress

func newProgressBuf(n int) []cProgress { return make([]cProgress, n) }

func progressFields(p *cProgress) (id, match, next uint64, state uint32, learner, active bool, pending uint64) {
	return uint64(p.id), uint64(p.match_index), uint64(p.next_index), uint32(p.state),
		bool(p.is_learner), bool(p.recent_active), uint64(p.pending_snapshot)
}

// cNodeStatus reads the status and up to len(prs) progress records (all
// of them when prs is large enough; cStatus.progressCount says how many
// exist). A nil prs skips the progress.
func cNodeStatus(n cNode, prs []cProgress) (cStatus, error) {
	var pp *C.raftlet_progress
	if len(prs) > 0 {
		pp = &prs[0]
	}
	r := C.go_node_status(n, pp, C.size_t(len(prs)))
	if err := errorOf(r.res); err != nil {
		return cStatus{}, err
	}
	st := cStatus{
		id: uint64(r.st.id), term: uint64(r.st.term), vote: uint64(r.st.vote),
		commit: uint64(r.st.commit), lead: uint64(r.st.lead), applied: uint64(r.st.applied),
		leadTransferee: uint64(r.st.lead_transferee), role: uint32(r.st.role),
		progressCount: int(r.st.progress_count),
	}
	return st, nil
}

// cNodeBasicStatus reads the scalars only (raftlet_node_basic_status: no
// configuration or progress is copied).
func cNodeBasicStatus(n cNode) (cStatus, error) {
	r := C.go_node_basic_status(n)
	if err := errorOf(r.res); err != nil {
		return cStatus{}, err
	}
	return cStatus{
		id: uint64(r.st.id), term: uint64(r.st.term), vote: uint64(r.st.vote),
		commit: uint64(r.st.commit), lead: uint64(r.st.lead), applied: uint64(r.st.applied),
		leadTransferee: uint64(r.st.lead_transferee), role: uint32(r.st.role),
	}, nil
}

func cStorageNew() (cStorage, error) {
	r := C.go_storage_new()
	if err := errorOf(r.res); err != nil {
		return nil, err
	}
	return r.storage, nil
}

func cStorageFree(s cStorage) { C.raftlet_storage_free(s) }

func cStorageAppendEntries(s cStorage, msg []byte) error {
	p, l := bytesPtr(msg)
	return errorOf(C.go_storage_append_entries(s, p, l))
}

func cStorageAppendReady(s cStorage, rd cReady) error {
	return errorOf(C.go_storage_append_ready(s, rd))
}

// cStorageAppendReadies passes two Go slices of C pointers (no Go pointer
// in them, as cgo requires); len(ss) == len(rs) > 0.
func cStorageAppendReadies(ss []cStorage, rs []cReady) error {
	return errorOf(C.go_storage_append_readies(&ss[0], &rs[0], C.size_t(len(ss))))
}

func cStorageSetHardState(s cStorage, term, vote, commit uint64) error {
	return errorOf(C.go_storage_set_hard_state(s, C.uint64_t(term), C.uint64_t(vote), C.uint64_t(commit)))
}

func cStorageSetConfState(s cStorage, cs []byte) error {
	p, l := bytesPtr(cs)
	return errorOf(C.go_storage_set_conf_state(s, p, l))
}

func cStorageApplySnapshot(s cStorage, snap []byte) error {
	p, l := bytesPtr(snap)
	return errorOf(C.go_storage_apply_snapshot(s, p, l))
}

// cStorageCreateSnapshot creates the snapshot (cs nil keeps the
// configuration) and copies the encoded snapshot into out; it returns the
// encoded length, larger than len(out) when out was too small (then call
// cStorageSnapshot with a larger buffer).
func cStorageCreateSnapshot(s cStorage, index uint64, cs []byte, keepConf bool, data []byte, out []byte) (int, error) {
	csp, csl := bytesPtr(cs)
	if keepConf {
		csp, csl = nil, 0
	}
	dp, dl := bytesPtr(data)
	op, ocap := bytesPtr(out)
	r := C.go_storage_create_snapshot(s, C.uint64_t(index), csp, csl, dp, dl, op, ocap)
	return int(r.len), errorOf(r.res)
}

func cStorageSnapshot(s cStorage, out []byte) (int, error) {
	op, ocap := bytesPtr(out)
	r := C.go_storage_snapshot(s, op, ocap)
	err := errorOf(r.res)
	if int(r.len) > len(out) && isCode(err, CodeInvalidArg) {
		err = nil
	}
	return int(r.len), err
}

func cStorageCompact(s cStorage, index uint64) error {
	return errorOf(C.go_storage_compact(s, C.uint64_t(index)))
}

func cStorageBounds(s cStorage) (first, last uint64, err error) {
	r := C.go_storage_bounds(s)
	return uint64(r.first), uint64(r.last), errorOf(r.res)
}

// cMessageDecodeHeader validates a raftpb-encoded message and returns its
// routing fields.
func cMessageDecodeHeader(b []byte) (typ int32, to, from, term uint64, err error) {
	p, l := bytesPtr(b)
	r := C.go_message_decode_header(p, l)
	if err := errorOf(r.res); err != nil {
		return 0, 0, 0, 0, err
	}
	return int32(r.h.msg_type), uint64(r.h.to), uint64(r.h.from), uint64(r.h.term), nil
}

func cNodeAddMember(n cNode, id uint64, ctx []byte) error {
	p, l := bytesPtr(ctx)
	return errorOf(C.go_node_add_member(n, C.uint64_t(id), p, l))
}

func cNodeSetAutoPromote(n cNode, on bool) error {
	return errorOf(C.go_node_set_auto_promote(n, C.bool(on)))
}

func cNodeSetStandbyPromotion(n cNode, on bool) error {
	return errorOf(C.go_node_set_standby_promotion(n, C.bool(on)))
}

func cNodeReadLocal(n cNode) (LocalRead, error) {
	r := C.go_node_read_local(n)
	if err := errorOf(r.res); err != nil {
		return LocalRead{}, err
	}
	return LocalRead{Applied: uint64(r.lr.applied), Commit: uint64(r.lr.commit), Leader: uint64(r.lr.leader)}, nil
}

// cReadyMembershipEvents copies the membership events of a ready (nil
// when there are none, the usual case: one crossing).
func cReadyMembershipEvents(rd cReady) ([]MembershipEvent, error) {
	var buf [4]C.raftlet_membership_event
	var count C.size_t
	if err := errorOf(C.go_ready_membership_events(rd, &buf[0], C.size_t(len(buf)), &count)); err != nil {
		return nil, err
	}
	evs := buf[:]
	if int(count) > len(buf) {
		evs = make([]C.raftlet_membership_event, int(count))
		if err := errorOf(C.go_ready_membership_events(rd, &evs[0], count, &count)); err != nil {
			return nil, err
		}
	}
	if count == 0 {
		return nil, nil
	}
	out := make([]MembershipEvent, 0, int(count))
	for i := 0; i < int(count) && i < len(evs); i++ {
		e := &evs[i]
		out = append(out, MembershipEvent{
			Kind: MembershipEventKind(e.kind), ID: uint64(e.id), Promoted: uint64(e.promoted),
			Demoted: uint64(e.demoted), Index: uint64(e.index),
		})
	}
	return out, nil
}

// cNodeLearners copies the leader's view of its learners (nil elsewhere).
func cNodeLearners(n cNode) ([]LearnerStatus, error) {
	var buf [4]C.raftlet_learner_status
	var count C.size_t
	if err := errorOf(C.go_node_learners(n, &buf[0], C.size_t(len(buf)), &count)); err != nil {
		return nil, err
	}
	ls := buf[:]
	if int(count) > len(buf) {
		ls = make([]C.raftlet_learner_status, int(count))
		if err := errorOf(C.go_node_learners(n, &ls[0], count, &count)); err != nil {
			return nil, err
		}
	}
	if count == 0 {
		return nil, nil
	}
	out := make([]LearnerStatus, 0, int(count))
	for i := 0; i < int(count) && i < len(ls); i++ {
		l := &ls[i]
		st := LearnerStatus{
			ID: uint64(l.id), Lag: uint64(l.lag), RecentActive: bool(l.recent_active),
			ActiveRounds: uint32(l.active_rounds), State: ProgressStateType(l.state),
		}
		if reason := NotPromotableReason(l.not_promotable); reason != Promotable {
			np := &NotPromotable{Reason: reason}
			switch reason {
			case NotPromotableLagging:
				np.Lag, np.MaxLag = uint64(l.not_promotable_have), uint64(l.not_promotable_need)
			case NotPromotableNotActiveLongEnough:
				np.ActiveRounds, np.Needed = uint64(l.not_promotable_have), uint64(l.not_promotable_need)
			}
			st.NotPromotable = np
		}
		out = append(out, st)
	}
	return out, nil
}

// cReadyFlat takes the next ready of n into h (its C handle and flat
// view) in one crossing, with has_ready afterwards.
// With s not nil, the ready is persisted into s in the same crossing:
// persistErr is the write's outcome (the ready is taken either way).
// Entries up to owed (when not 0) are reported applied first.
func cReadyFlat(n cNode, s cStorage, h *readyHandle, owed uint64) (has, known bool, persistErr, err error) {
	var rl relTake
	rl.take()
	r := C.go_node_ready_flat(nodeH(n), storeH(s), &rl.slots[0], rl.ns, rl.p, rl.n, C.uint64_t(owed))
	rl.done()
	if err := errorOf(r.hr.res); err != nil {
		return false, false, nil, err
	}
	h.p = r.rd
	h.flat = r.flat
	return bool(r.hr.has), bool(r.hr.known), errorOf(r.persist), nil
}

func hrOf(r C.go_hr_res) (has, known bool, err error) {
	return bool(r.has), bool(r.known), errorOf(r.res)
}

func cNodeProposeHR(n cNode, data []byte) (bool, bool, error) {
	p, l := bytesPtr(data)
	return hrOf(C.go_node_propose_hr(nodeH(n), p, l))
}

func cNodeStepHR(n cNode, msg []byte) (bool, bool, error) {
	p, l := bytesPtr(msg)
	return hrOf(C.go_node_step_hr(nodeH(n), p, l))
}

func cNodeTickHR(n cNode) (bool, bool, error) { return hrOf(C.go_node_tick_hr(nodeH(n))) }

func cNodeReadIndexHR(n cNode, ctx []byte) (bool, bool, error) {
	p, l := bytesPtr(ctx)
	return hrOf(C.go_node_read_index_hr(nodeH(n), p, l))
}

// cNodeAdvanceHR advances and frees the ready (only on success).
func cNodeAdvanceHR(n cNode, rd cReady) (bool, bool, error) {
	return hrOf(C.go_node_advance_hr(nodeH(n), readyH(rd)))
}

// cNodePackedBatch steps (or proposes) bufs packed into b's buffer: no
// Go pointer crosses but the buffer's and the lengths'.
func cNodePackedBatch(n cNode, b *batch, bufs [][]byte, propose bool) (bool, bool, error) {
	b.pack(bufs)
	bp, lp := b.packed()
	r := C.go_node_packed_batch(nodeH(n), bp, lp, C.size_t(len(bufs)), C.bool(propose))
	b.release()
	return hrOf(r)
}

func cNodeStepBatch(n cNode, b *batch, msgs [][]byte) (bool, bool, error) {
	if b.packable(msgs) {
		return cNodePackedBatch(n, b, msgs, false)
	}
	b.fill(msgs)
	p, l := b.ptr()
	r := C.go_node_step_batch(nodeH(n), p, l)
	b.release()
	return hrOf(r)
}

// cPayloadsNew allocates payloads of the given sizes in the library's
// memory, in one crossing: their handles and their bytes (C memory; nil
// for an empty one).
func cPayloadsNew(sizes []int) (hs []uintptr, data []*byte, err error) {
	if len(sizes) == 0 {
		return nil, nil, nil
	}
	lens := make([]C.size_t, len(sizes))
	for i, n := range sizes {
		if n < 0 {
			return nil, nil, &Error{CodeInvalidArg, fmt.Sprintf("payload %d has a negative size %d", i, n)}
		}
		lens[i] = C.size_t(n)
	}
	hs = make([]uintptr, len(sizes))
	// Go memory that C fills with C pointers (allowed: no Go pointer in it).
	data = make([]*byte, len(sizes))
	r := C.go_payloads_new(&lens[0], C.size_t(len(lens)),
		(*C.uintptr_t)(unsafe.Pointer(&hs[0])), (**C.uint8_t)(unsafe.Pointer(&data[0])))
	if err := errorOf(r); err != nil {
		return nil, nil, err
	}
	return hs, data, nil
}

// cPayloadFree frees a payload handle that was not proposed.
func cPayloadFree(h uintptr) { C.go_payload_free(C.uintptr_t(h)) }

// cNodeProposePayloads proposes the payload handles (taken by the
// library, see raftlet_node_propose_payloads) and reads has_ready.
func cNodeProposePayloads(n cNode, hs []uintptr) (bool, bool, error) {
	var p *C.uintptr_t
	if len(hs) > 0 {
		p = (*C.uintptr_t)(unsafe.Pointer(&hs[0]))
	}
	return hrOf(C.go_node_propose_payloads(nodeH(n), p, C.size_t(len(hs))))
}

func cNodeProposeBatch(n cNode, b *batch, payloads [][]byte) (bool, bool, error) {
	if b.packable(payloads) {
		return cNodePackedBatch(n, b, payloads, true)
	}
	b.fill(payloads)
	p, l := b.ptr()
	r := C.go_node_propose_batch(nodeH(n), p, l)
	b.release()
	return hrOf(r)
}

// cTickMany reports the applied indexes owed (owedIndex[i] to
// owedNodes[i]), then ticks the nodes (C handles, in C memory: no Go
// pointers) and writes the has-ready bitmap.
func cTickMany(nodes []cNode, bitmap []byte, owedNodes []C.uintptr_t, owedIndex []C.uint64_t) error {
	if len(nodes) == 0 {
		return nil
	}
	var rl relTake
	rl.take()
	var on *C.uintptr_t
	var oi *C.uint64_t
	if len(owedNodes) > 0 {
		on, oi = &owedNodes[0], &owedIndex[0]
	}
	r := C.go_tick_many((**C.raftlet_node)(unsafe.Pointer(&nodes[0])), C.size_t(len(nodes)),
		(*C.uint8_t)(unsafe.Pointer(&bitmap[0])), &rl.slots[0], rl.ns, rl.p, rl.n, on, oi, C.size_t(len(owedNodes)))
	rl.done()
	return errorOf(r)
}

// cNodeAdvanceApplyTo reports entries up to index applied.
func cNodeAdvanceApplyTo(n cNode, index uint64) error {
	return errorOf(C.go_node_advance_apply_to(nodeH(n), C.uint64_t(index)))
}

// releaseSlots is the number of released readies that wait without a
// lock (see released).
const releaseSlots = 8

// released holds the C readies released without an advance (see
// RawNode.deferAdvance): the next crossing of any node that takes a ready,
// of any TickSet's Tick, or any Close frees them, first thing. Not the
// node's own next crossing: an idle group may never make one, and must
// not keep a ready for it. Up to releaseSlots wait in slots, each put
// with one compare-and-swap and taken with a load and a swap: a host that
// releases a few readies between crossings (the common case: a cycle's
// Readies once their messages are sent) takes no lock. More wait in the
// list.
var released struct {
	slots [releaseSlots]atomic.Uintptr // 0 when free
	used  atomic.Int32                 // slots in use, read without a lock
	n     atomic.Int32                 // len(list), read without the lock
	mu    sync.Mutex
	list  []C.uintptr_t
	spare []C.uintptr_t // the last list freed, for reuse
}

// releaseLater adds r to the readies the next crossing frees.
func releaseLater(r cReady) {
	h := uintptr(readyH(r))
	for i := range released.slots {
		if released.slots[i].CompareAndSwap(0, h) {
			released.used.Add(1)
			return
		}
	}
	released.mu.Lock()
	released.list = append(released.list, C.uintptr_t(h))
	released.n.Store(int32(len(released.list)))
	released.mu.Unlock()
}

// releasedCount is the number of readies waiting to be freed.
func releasedCount() int {
	return int(released.used.Load() + released.n.Load())
}

// relTake is what one crossing frees first: the readies it took from the
// slots (in its own memory, on the caller's stack: every helper that
// takes them is noescape) and the list, if any, with the array to give
// back once the crossing returned.
type relTake struct {
	slots [releaseSlots]C.uintptr_t
	ns    C.size_t
	p     *C.uintptr_t // the list's array, nil when it is empty
	n     C.size_t
	list  []C.uintptr_t
}

// take moves the released readies into t.
func (t *relTake) take() {
	if released.used.Load() != 0 {
		for i := range released.slots {
			if released.slots[i].Load() == 0 {
				continue
			}
			if h := released.slots[i].Swap(0); h != 0 {
				released.used.Add(-1)
				t.slots[t.ns] = C.uintptr_t(h)
				t.ns++
			}
		}
	}
	if released.n.Load() == 0 {
		return
	}
	released.mu.Lock()
	l := released.list
	released.list, released.spare = released.spare[:0], nil
	released.n.Store(0)
	released.mu.Unlock()
	if len(l) > 0 {
		t.p, t.n, t.list = &l[0], C.size_t(len(l)), l
	}
}

// done keeps the array of the list the crossing freed for the next list.
func (t *relTake) done() {
	if t.list == nil {
		return
	}
	released.mu.Lock()
	if released.spare == nil && cap(t.list) <= 1024 {
		released.spare = t.list[:0]
	}
	released.mu.Unlock()
}

// freeReleased frees the released readies now, in a crossing of their own.
func freeReleased() {
	var rl relTake
	rl.take()
	if rl.ns != 0 || rl.n != 0 {
		C.go_release(&rl.slots[0], rl.ns, rl.p, rl.n)
		rl.done()
	}
}

// thenReady reads the "take the next ready" part of a go_then_ready_res:
// the ready taken (nil when none was), put in reuse (a released handle)
// or, when reuse is nil, in a handle of nh, and has_ready after it. err
// is a failure to take it (nothing taken); persistErr, with a ready
// taken, the outcome of its write.
func thenReady(r *C.go_then_ready_res, nh *nodeHandle, reuse *readyHandle) (h *readyHandle, has, known bool,
	persistErr, err error) {
	if err := errorOf(r.next.hr.res); err != nil {
		return nil, false, false, nil, err
	}
	has, known = bool(r.next.hr.has), bool(r.next.hr.known)
	if r.next.rd == nil {
		return nil, has, known, nil, nil
	}
	h = reuse
	if h == nil {
		h = nh.takeHandle()
	}
	h.p = r.next.rd
	h.flat = r.next.flat
	return h, has, known, errorOf(r.next.persist), nil
}

// cNodeAdvanceReadyFlat advances the ready of old, a pending handle of
// nh, and, when that left a ready, takes it persisted into s when s is
// not nil (see thenReady), in one crossing. On success (advErr nil) old
// is released, with the earlier readies it covers, and the next ready,
// if any, is put in old itself (its generation changed: the views of the
// advanced ready are stale), so that a cycle costs no handle from the
// pool.
func cNodeAdvanceReadyFlat(n cNode, old *readyHandle, s cStorage, nh *nodeHandle) (h *readyHandle, has, known bool,
	advErr, persistErr, err error) {
	var rl relTake
	rl.take()
	r := C.go_node_advance_ready_flat(nodeH(n), readyH(old.p), storeH(s), &rl.slots[0], rl.ns, rl.p, rl.n)
	rl.done()
	if advErr = errorOf(r.first); advErr != nil {
		return nil, false, false, advErr, nil, nil
	}
	nh.unpend(old)
	old.p, old.flat = nil, nil // freed by the advance
	old.gen.Add(1)
	h, has, known, persistErr, err = thenReady(&r, nh, old)
	if h == nil {
		putHandle(old)
	}
	return h, has, known, nil, persistErr, err
}

// cNodeProposeReady proposes data and takes the Ready it leaves (persisted
// into s when s is not nil) in one crossing.
func cNodeProposeReady(n cNode, data []byte, s cStorage, nh *nodeHandle, owed uint64) (h *readyHandle, has, known bool,
	proposeErr, persistErr, err error) {
	return cNodeBytesReady(C.go_bytes_call(C.raftlet_node_propose), n, data, s, nh, owed)
}

// cNodeReadIndexReady is cNodeProposeReady for a read request.
func cNodeReadIndexReady(n cNode, rctx []byte, s cStorage, nh *nodeHandle, owed uint64) (h *readyHandle, has, known bool,
	readErr, persistErr, err error) {
	return cNodeBytesReady(C.go_bytes_call(C.raftlet_node_read_index), n, rctx, s, nh, owed)
}

// cNodeBytesReady calls call(n, data) and takes the Ready it leaves, in
// one crossing (go_bytes_then_ready): firstErr is the call's outcome.
// Entries up to owed (when not 0) are reported applied first.
func cNodeBytesReady(call C.go_bytes_call, n cNode, data []byte, s cStorage, nh *nodeHandle, owed uint64) (h *readyHandle,
	has, known bool, firstErr, persistErr, err error) {
	p, l := bytesPtr(data)
	var rl relTake
	rl.take()
	r := C.go_bytes_then_ready(call, nodeH(n), p, l, storeH(s), &rl.slots[0], rl.ns, rl.p, rl.n, C.uint64_t(owed))
	rl.done()
	firstErr = errorOf(r.first)
	h, has, known, persistErr, err = thenReady(&r, nh, nil)
	return h, has, known, firstErr, persistErr, err
}

// cNodeStepBatchReady steps msgs as cNodeStepBatch (stepErr its outcome)
// and, when that left a ready, takes it as cNodeAdvanceReadyFlat does,
// in one crossing.
func cNodeStepBatchReady(n cNode, b *batch, msgs [][]byte, s cStorage, nh *nodeHandle, owed uint64) (h *readyHandle, has, known bool,
	stepErr, persistErr, err error) {
	var r C.go_then_ready_res
	if b.packable(msgs) {
		b.pack(msgs)
		bp, lp := b.packed()
		var rl relTake
		rl.take()
		r = C.go_node_packed_step_ready(nodeH(n), bp, lp, C.size_t(len(msgs)), storeH(s), &rl.slots[0], rl.ns, rl.p, rl.n,
			C.uint64_t(owed))
		rl.done()
	} else {
		b.fill(msgs)
		p, l := b.ptr()
		var rl relTake
		rl.take()
		r = C.go_node_step_batch_ready(nodeH(n), p, l, storeH(s), &rl.slots[0], rl.ns, rl.p, rl.n, C.uint64_t(owed))
		rl.done()
	}
	b.release()
	stepErr = errorOf(r.first)
	h, has, known, persistErr, err = thenReady(&r, nh, nil)
	return h, has, known, stepErr, persistErr, err
}
