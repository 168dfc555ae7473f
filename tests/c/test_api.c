/*
 * The C test suite of raftlet's C ABI (include/raftlet.h).
 *
 * Every exported function is called at least once, on its success path and
 * on each of its documented error paths: NULL pointers, malformed raftpb
 * bytes, stale or foreign readies, out-of-range indexes, short buffers,
 * refused proposals and conf changes, storage errors. Clusters of one and
 * three nodes run in process, driven by the Ready loop of
 * examples/c/cluster.c.
 *
 * Output: one line per failed check (file:line and what failed) on stderr,
 * then "N passed, N failed" on stdout. Exit status 1 on any failure.
 * Built by `make test-c` under ASan+UBSan with leak detection: everything
 * allocated here is freed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raftlet.h"

/* ------------------------------------------------------------------------ */
/* A small test framework                                                    */
/* ------------------------------------------------------------------------ */

static int g_passed;
static int g_failed;
static const char *g_test = "";

static void check_(int ok, const char *file, int line, const char *expr) {
    if (ok) {
        g_passed++;
    } else {
        g_failed++;
        fprintf(stderr, "%s:%d: [%s] check failed: %s\n", file, line, g_test, expr);
    }
}

/* A result check: the code must match, and an error must come with a
 * non-empty raftlet_last_error_message(). */
static void check_rc_(raftlet_result got, raftlet_result want, const char *file, int line,
                      const char *expr) {
    const char *msg = raftlet_last_error_message();
    if (got != want) {
        g_failed++;
        fprintf(stderr, "%s:%d: [%s] %s returned %s (%u), expected %s; last error: %s\n", file,
                line, g_test, expr, raftlet_result_str(got), (unsigned)got,
                raftlet_result_str(want), msg ? msg : "(null)");
    } else if (want != RAFTLET_OK && (msg == NULL || msg[0] == '\0')) {
        g_failed++;
        fprintf(stderr, "%s:%d: [%s] %s returned %s without a last error message\n", file, line,
                g_test, expr, raftlet_result_str(got));
    } else {
        g_passed++;
    }
}

/* Checks inside the cluster harness: failures count, successes do not (so
 * the pass count reflects the assertions of the tests, not loop trips). */
static void harness_(raftlet_result got, const char *file, int line, const char *expr) {
    if (got != RAFTLET_OK) {
        g_failed++;
        fprintf(stderr, "%s:%d: [%s] harness call %s failed: %s (%s)\n", file, line, g_test,
                expr, raftlet_result_str(got), raftlet_last_error_message());
    }
}

#define CHECK(cond) check_((cond) ? 1 : 0, __FILE__, __LINE__, #cond)
#define EXPECT_RC(call, want) check_rc_((call), (want), __FILE__, __LINE__, #call)
#define EXPECT_OK(call) EXPECT_RC(call, RAFTLET_OK)
#define H_OK(call) harness_((call), __FILE__, __LINE__, #call)
#define CHECK_STR(a, b) check_(strcmp((a), (b)) == 0, __FILE__, __LINE__, #a " == " #b)
#define CHECK_BYTES(view, lit)                                                        \
    check_((view).len == sizeof(lit) - 1 && (view).ptr != NULL &&                     \
               memcmp((view).ptr, (lit), sizeof(lit) - 1) == 0,                       \
           __FILE__, __LINE__, #view " holds " #lit)

#define RUN(fn)                \
    do {                       \
        g_test = #fn;          \
        printf("# %s\n", #fn); \
        fn();                  \
    } while (0)

#define B(s) ((const uint8_t *)(s))

/* Distinct non-NULL "untouched" markers for output pointers. */
static char sentinel_bytes[4];
#define SENTINEL(type) ((type *)(void *)&sentinel_bytes[0])

/* ------------------------------------------------------------------------ */
/* A tiny raftpb encoder, to hand-craft inputs                               */
/* ------------------------------------------------------------------------ */

typedef struct {
    uint8_t b[512];
    size_t n;
} pbuf;

static void pb_varint(pbuf *p, uint64_t v) {
    while (v >= 0x80) {
        p->b[p->n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p->b[p->n++] = (uint8_t)v;
}
static void pb_u64(pbuf *p, unsigned field, uint64_t v) {
    pb_varint(p, (uint64_t)field << 3);
    pb_varint(p, v);
}
static void pb_bytes(pbuf *p, unsigned field, const void *d, size_t n) {
    pb_varint(p, ((uint64_t)field << 3) | 2);
    pb_varint(p, n);
    memcpy(p->b + p->n, d, n);
    p->n += n;
}

/* A Message with the routing fields only. */
static pbuf enc_msg(int32_t type, uint64_t to, uint64_t from, uint64_t term) {
    pbuf p = {{0}, 0};
    pb_u64(&p, 1, (uint64_t)type);
    pb_u64(&p, 2, to);
    pb_u64(&p, 3, from);
    pb_u64(&p, 4, term);
    return p;
}

static pbuf enc_entry(uint64_t term, uint64_t index, const char *data) {
    pbuf p = {{0}, 0};
    pb_u64(&p, 1, 0);
    pb_u64(&p, 2, term);
    pb_u64(&p, 3, index);
    if (data) {
        pb_bytes(&p, 4, data, strlen(data));
    }
    return p;
}

static pbuf enc_conf_state(const uint64_t *voters, size_t nv) {
    pbuf p = {{0}, 0};
    for (size_t i = 0; i < nv; i++) {
        pb_u64(&p, 1, voters[i]);
    }
    return p;
}

/* A Snapshot {data, metadata {conf_state {voters}, index, term}}. */
static pbuf enc_snapshot(uint64_t index, uint64_t term, const uint64_t *voters, size_t nv,
                         const char *data) {
    pbuf cs = enc_conf_state(voters, nv);
    pbuf md = {{0}, 0};
    pb_bytes(&md, 1, cs.b, cs.n);
    pb_u64(&md, 2, index);
    pb_u64(&md, 3, term);
    pbuf p = {{0}, 0};
    if (data) {
        pb_bytes(&p, 1, data, strlen(data));
    }
    pb_bytes(&p, 2, md.b, md.n);
    return p;
}

/* Malformed inputs shared by every decoder test. */
static const uint8_t GARBAGE[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                  0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
static const uint8_t WRONG_WIRE_TYPE[] = {0x0a, 0x01, 0x03}; /* field 1 as bytes */
static const uint8_t FIELD_ZERO[] = {0x00, 0x01};
static const uint8_t LEN_PAST_END[] = {0x08, 0x03, 0x3a, 0x05, 0x00}; /* field 7, 5 bytes */
static const uint8_t WIRE_TYPE_7[] = {0x0f, 0x00};

/* ------------------------------------------------------------------------ */
/* A cluster harness: the Ready loop of examples/c/cluster.c, instrumented   */
/* ------------------------------------------------------------------------ */

#define MAXN 5
#define MAX_MSGS 8192

typedef struct {
    raftlet_node *node;
    raftlet_storage *storage;
    bool async_apply;       /* advance_append + advance_apply_to */
    uint64_t applied_index; /* last committed index applied */
    size_t applied_normal;  /* normal entries with data applied */
    uint8_t last_data[64];
    size_t last_len;
    size_t snapshots;       /* readies that carried a snapshot */
    uint64_t snap_index;
    uint8_t snap_data[64];
    size_t snap_data_len;
    uint8_t *snap_encoded;  /* malloc'd copy of the last snapshot's encoding */
    size_t snap_encoded_len;
    size_t read_states;
    uint64_t read_index;
    uint8_t read_ctx[64];
    size_t read_ctx_len;
    size_t conf_changes;    /* conf-change entries applied */
} host;

typedef struct {
    uint64_t from, to;
    int32_t type;
    uint8_t *data;
    size_t len;
} envelope;

static host H[MAXN + 1]; /* by id; 0 unused */
static bool cut[MAXN + 1]; /* messages to or from a cut node are dropped */
static envelope mbox[MAX_MSGS];
static size_t mbox_len;
static size_t msgs_seen;
static size_t header_mismatches;
static size_t snaps_reported;

static void reset_cluster(void) {
    for (int id = 0; id <= MAXN; id++) {
        raftlet_node_free(H[id].node);
        raftlet_storage_free(H[id].storage);
        free(H[id].snap_encoded);
    }
    for (size_t i = 0; i < mbox_len; i++) {
        free(mbox[i].data);
    }
    memset(H, 0, sizeof H);
    memset(cut, 0, sizeof cut);
    mbox_len = 0;
    msgs_seen = 0;
    header_mismatches = 0;
    snaps_reported = 0;
}

static void post(const raftlet_message_view *m) {
    /* Every message sent is decoded back: its header must match the view. */
    raftlet_message_header h;
    raftlet_result rc = raftlet_message_decode_header(m->data.ptr, m->data.len, &h);
    H_OK(rc);
    msgs_seen++;
    if (rc != RAFTLET_OK || h.to != m->to || h.from != m->from || h.msg_type != m->msg_type ||
        h.from == 0 || h.to == 0) {
        header_mismatches++;
    }
    if (mbox_len == MAX_MSGS) {
        fprintf(stderr, "mailbox overflow\n");
        exit(2);
    }
    envelope *e = &mbox[mbox_len++];
    e->from = m->from;
    e->to = m->to;
    e->type = m->msg_type;
    e->len = m->data.len;
    e->data = malloc(m->data.len ? m->data.len : 1);
    if (!e->data) {
        exit(2);
    }
    if (m->data.len) {
        memcpy(e->data, m->data.ptr, m->data.len);
    }
}

static void start_node(uint64_t id, const uint64_t *voters, size_t nv, const uint64_t *learners,
                       size_t nl) {
    raftlet_config *cfg = NULL;
    H_OK(raftlet_config_new(id, &cfg));
    H_OK(raftlet_config_set_election_tick(cfg, 10));
    H_OK(raftlet_config_set_heartbeat_tick(cfg, 1));
    H_OK(raftlet_storage_new_memory(&H[id].storage));
    if (nv > 0) {
        H_OK(raftlet_storage_set_conf_state(H[id].storage, voters, nv, learners, nl));
    }
    H_OK(raftlet_node_new(cfg, H[id].storage, &H[id].node));
    raftlet_config_free(cfg);
}

/* Steps 1-4 of the Ready loop on a ready already taken. Frees it unless
 * keep is set (the caller then frees it after its own checks). */
static void process_ready(uint64_t id, raftlet_ready *rd, bool keep) {
    host *h = &H[id];
    bool has = false;
    raftlet_soft_state ss;
    H_OK(raftlet_ready_soft_state(rd, &has, &ss));
    raftlet_hard_state hs;
    H_OK(raftlet_ready_hard_state(rd, &has, &hs));
    bool sync = false;
    H_OK(raftlet_ready_must_sync(rd, &sync));
    raftlet_snapshot_view sv;
    H_OK(raftlet_ready_snapshot(rd, &has, &sv));
    if (has) {
        h->snapshots++;
        h->snap_index = sv.index;
        h->snap_data_len = sv.data.len < sizeof h->snap_data ? sv.data.len : sizeof h->snap_data;
        if (h->snap_data_len) {
            memcpy(h->snap_data, sv.data.ptr, h->snap_data_len);
        }
        free(h->snap_encoded);
        h->snap_encoded = malloc(sv.encoded.len ? sv.encoded.len : 1);
        if (!h->snap_encoded) {
            exit(2);
        }
        memcpy(h->snap_encoded, sv.encoded.ptr, sv.encoded.len);
        h->snap_encoded_len = sv.encoded.len;
        h->applied_index = sv.index; /* the state machine restores from it */
    }
    size_t n = 0;
    H_OK(raftlet_ready_entry_count(rd, &n));
    for (size_t i = 0; i < n; i++) {
        raftlet_entry_view e;
        H_OK(raftlet_ready_entry(rd, i, &e));
    }
    /* 1. Persist. */
    H_OK(raftlet_storage_append_ready(h->storage, rd));
    /* 2. Send. */
    H_OK(raftlet_ready_message_count(rd, &n));
    for (size_t i = 0; i < n; i++) {
        raftlet_message_view m;
        H_OK(raftlet_ready_message(rd, i, &m));
        post(&m);
    }
    H_OK(raftlet_ready_persisted_message_count(rd, &n));
    for (size_t i = 0; i < n; i++) {
        raftlet_message_view m;
        H_OK(raftlet_ready_persisted_message(rd, i, &m));
        post(&m);
    }
    H_OK(raftlet_ready_read_state_count(rd, &n));
    for (size_t i = 0; i < n; i++) {
        raftlet_read_state_view rs;
        H_OK(raftlet_ready_read_state(rd, i, &rs));
        h->read_states++;
        h->read_index = rs.index;
        h->read_ctx_len = rs.request_ctx.len < sizeof h->read_ctx ? rs.request_ctx.len
                                                                   : sizeof h->read_ctx;
        if (h->read_ctx_len) {
            memcpy(h->read_ctx, rs.request_ctx.ptr, h->read_ctx_len);
        }
    }
    /* 3. Apply. */
    H_OK(raftlet_ready_committed_entry_count(rd, &n));
    uint64_t last = 0;
    for (size_t i = 0; i < n; i++) {
        raftlet_entry_view e;
        H_OK(raftlet_ready_committed_entry(rd, i, &e));
        last = e.index;
        if (e.entry_type == 0 && e.data.len > 0) {
            h->applied_normal++;
            h->last_len = e.data.len < sizeof h->last_data ? e.data.len : sizeof h->last_data;
            memcpy(h->last_data, e.data.ptr, h->last_len);
        } else if (e.entry_type == 1 || e.entry_type == 2) {
            uint8_t cs[256];
            size_t cs_len = 0;
            H_OK(raftlet_node_apply_conf_change(h->node, e.data.ptr, e.data.len,
                                                e.entry_type == 2, cs, sizeof cs, &cs_len));
            H_OK(raftlet_storage_set_conf_state_encoded(h->storage, cs, cs_len));
            h->conf_changes++;
        }
    }
    if (last) {
        h->applied_index = last;
    }
    /* 4. Advance. */
    if (h->async_apply) {
        H_OK(raftlet_node_advance_append(h->node, rd));
        if (last) {
            H_OK(raftlet_node_advance_apply_to(h->node, last));
        }
    } else {
        H_OK(raftlet_node_advance(h->node, rd));
    }
    if (!keep) {
        raftlet_ready_free(rd);
    }
}

static int handle_ready(uint64_t id) {
    bool has = false;
    H_OK(raftlet_node_has_ready(H[id].node, &has));
    if (!has) {
        return 0;
    }
    raftlet_ready *rd = NULL;
    H_OK(raftlet_node_ready(H[id].node, &rd));
    process_ready(id, rd, false);
    return 1;
}

static void deliver(void) {
    size_t len = mbox_len;
    mbox_len = 0;
    /* Copy out first: stepping may not post, but keep the loop simple. */
    envelope batch[MAX_MSGS];
    memcpy(batch, mbox, len * sizeof *batch);
    for (size_t i = 0; i < len; i++) {
        envelope *e = &batch[i];
        bool ok = e->to >= 1 && e->to <= MAXN && H[e->to].node && !cut[e->to] && !cut[e->from];
        if (ok) {
            /* Errors such as a response from an unknown peer are normal on
             * a network; a host logs and drops them. */
            (void)raftlet_node_step(H[e->to].node, e->data, e->len);
        }
        if (e->type == 7 /* MsgSnap */ && e->from >= 1 && e->from <= MAXN && H[e->from].node) {
            H_OK(raftlet_node_report_snapshot(H[e->from].node, e->to, ok));
            snaps_reported++;
        }
        free(e->data);
    }
}

static void settle(void) {
    for (int round = 0; round < 10000; round++) {
        int work = 0;
        for (uint64_t id = 1; id <= MAXN; id++) {
            if (H[id].node) {
                work |= handle_ready(id);
            }
        }
        size_t len = mbox_len;
        deliver();
        if (!work && len == 0) {
            return;
        }
    }
    g_failed++;
    fprintf(stderr, "%s:%d: [%s] the cluster did not settle\n", __FILE__, __LINE__, g_test);
}

static void tick_all(unsigned ticks) {
    for (unsigned t = 0; t < ticks; t++) {
        for (uint64_t id = 1; id <= MAXN; id++) {
            if (H[id].node && !cut[id]) {
                H_OK(raftlet_node_tick(H[id].node));
            }
        }
        settle();
    }
}

static raftlet_status status_of(uint64_t id) {
    raftlet_status st;
    memset(&st, 0, sizeof st);
    H_OK(raftlet_node_status(H[id].node, &st));
    return st;
}

static uint64_t find_leader(void) {
    for (uint64_t id = 1; id <= MAXN; id++) {
        if (H[id].node && !cut[id] && status_of(id).role == 2) {
            return id;
        }
    }
    return 0;
}

static uint64_t elect(void) {
    uint64_t leader = 0;
    for (int i = 0; i < 200 && !leader; i++) {
        tick_all(1);
        leader = find_leader();
    }
    return leader;
}

static bool progress_of(raftlet_node *node, uint64_t id, raftlet_progress *out) {
    raftlet_progress prs[MAXN + 1];
    size_t len = 0;
    H_OK(raftlet_node_progress(node, prs, MAXN + 1, &len));
    for (size_t i = 0; i < len && i < MAXN + 1; i++) {
        if (prs[i].id == id) {
            *out = prs[i];
            return true;
        }
    }
    return false;
}

static size_t encode_cc(uint32_t type, uint64_t id, uint8_t *buf, size_t cap) {
    size_t len = 0;
    H_OK(raftlet_conf_change_encode(type, id, NULL, 0, buf, cap, &len));
    return len;
}

/* ------------------------------------------------------------------------ */
/* Tests                                                                     */
/* ------------------------------------------------------------------------ */

static void test_version_and_result_str(void) {
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", RAFTLET_VERSION_MAJOR, RAFTLET_VERSION_MINOR,
             RAFTLET_VERSION_PATCH);
    CHECK(raftlet_version() != NULL);
    CHECK_STR(raftlet_version(), want);
    CHECK(RAFTLET_VERSION_NUMBER == ((RAFTLET_VERSION_MAJOR << 24) |
                                     (RAFTLET_VERSION_MINOR << 16) |
                                     (RAFTLET_VERSION_PATCH << 8)));
    CHECK(raftlet_version() == raftlet_version()); /* static, never freed */

#define NAME(code) CHECK_STR(raftlet_result_str(code), #code)
    NAME(RAFTLET_OK);
    NAME(RAFTLET_ERR_PROPOSAL_DROPPED);
    NAME(RAFTLET_ERR_STEP_LOCAL_MSG);
    NAME(RAFTLET_ERR_STEP_PEER_NOT_FOUND);
    NAME(RAFTLET_ERR_COMPACTED);
    NAME(RAFTLET_ERR_UNAVAILABLE);
    NAME(RAFTLET_ERR_SNAPSHOT_OUT_OF_DATE);
    NAME(RAFTLET_ERR_SNAPSHOT_TEMPORARILY_UNAVAILABLE);
    NAME(RAFTLET_ERR_STORAGE);
    NAME(RAFTLET_ERR_CONFIG_INVALID);
    NAME(RAFTLET_ERR_DECODE);
    NAME(RAFTLET_ERR_CONF_CHANGE_REFUSED);
    NAME(RAFTLET_ERR_PROMOTION_NOT_READY);
    NAME(RAFTLET_ERR_TOO_MANY_LEARNERS);
    NAME(RAFTLET_ERR_TRANSFER_REFUSED);
    NAME(RAFTLET_ERR_NO_LEADER);
    NAME(RAFTLET_ERR_INVALID_STATE);
    NAME(RAFTLET_ERR_INVALID_MESSAGE);
    NAME(RAFTLET_ERR_NULL_ARG);
    NAME(RAFTLET_ERR_INVALID_ARG);
    NAME(RAFTLET_ERR_READY_STALE);
    NAME(RAFTLET_ERR_READY_FOREIGN);
    NAME(RAFTLET_ERR_READY_NOT_PERSISTED);
    NAME(RAFTLET_PANIC);
#undef NAME
    /* The numbers are fixed forever. */
    CHECK(RAFTLET_ERR_INVALID_STATE == 16 && RAFTLET_ERR_INVALID_MESSAGE == 17 &&
          RAFTLET_ERR_NULL_ARG == 100 && RAFTLET_ERR_READY_STALE == 102 &&
          RAFTLET_ERR_READY_FOREIGN == 103 && RAFTLET_ERR_READY_NOT_PERSISTED == 104 &&
          RAFTLET_PANIC == 200);
    const uint32_t unknown[] = {18, 50, 99, 105, 199, 201, 1000, 0x7fffffffu, 0xffffffffu};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        CHECK_STR(raftlet_result_str(unknown[i]), "RAFTLET_UNKNOWN");
    }
}

static void test_last_error_message(void) {
    /* Nothing failed yet on this thread (this test runs first). */
    CHECK(raftlet_last_error_message() != NULL);
    CHECK_STR(raftlet_last_error_message(), "");
    EXPECT_RC(raftlet_config_new(1, NULL), RAFTLET_ERR_NULL_ARG);
    CHECK(strstr(raftlet_last_error_message(), "config_out") != NULL);
    EXPECT_RC(raftlet_storage_new_memory(NULL), RAFTLET_ERR_NULL_ARG);
    CHECK(strstr(raftlet_last_error_message(), "storage_out") != NULL);
}

static void test_free_null(void) {
    /* Each must be a no-op (ASan/UBSan would flag anything else). */
    raftlet_config_free(NULL);
    raftlet_storage_free(NULL);
    raftlet_node_free(NULL);
    raftlet_ready_free(NULL);
    raftlet_string_free(NULL);
    CHECK(1);
}

static void test_config(void) {
    raftlet_config *cfg = NULL;
    EXPECT_OK(raftlet_config_new(1, &cfg));
    CHECK(cfg != NULL);
    EXPECT_OK(raftlet_config_validate(cfg));
    EXPECT_RC(raftlet_config_validate(NULL), RAFTLET_ERR_NULL_ARG);

    /* Every setter: NULL config, then a valid value. */
    EXPECT_RC(raftlet_config_set_election_tick(NULL, 10), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_heartbeat_tick(NULL, 1), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_applied(NULL, 0), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_max_size_per_msg(NULL, 1), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_max_committed_size_per_ready(NULL, 0), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_max_uncommitted_entries_size(NULL, 0), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_max_inflight_msgs(NULL, 1), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_max_inflight_bytes(NULL, 0), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_check_quorum(NULL, true), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_pre_vote(NULL, true), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_read_only_option(NULL, 0), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_disable_proposal_forwarding(NULL, false), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_disable_conf_change_validation(NULL, false),
              RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_step_down_on_removal(NULL, true), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_promote_max_lag(NULL, 1000), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_max_learners(NULL, 1), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_seed(NULL, 0), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_coalesce_appends(NULL, false), RAFTLET_ERR_NULL_ARG);

    EXPECT_OK(raftlet_config_set_election_tick(cfg, 20));
    EXPECT_OK(raftlet_config_set_heartbeat_tick(cfg, 2));
    EXPECT_OK(raftlet_config_set_applied(cfg, 0));
    EXPECT_OK(raftlet_config_set_max_size_per_msg(cfg, 4096));
    EXPECT_OK(raftlet_config_set_max_committed_size_per_ready(cfg, 0));
    EXPECT_OK(raftlet_config_set_max_uncommitted_entries_size(cfg, 1 << 20));
    EXPECT_OK(raftlet_config_set_max_inflight_msgs(cfg, 64));
    EXPECT_OK(raftlet_config_set_max_inflight_bytes(cfg, 0));
    EXPECT_OK(raftlet_config_set_check_quorum(cfg, true));
    EXPECT_OK(raftlet_config_set_pre_vote(cfg, false));
    EXPECT_OK(raftlet_config_set_read_only_option(cfg, 1));
    EXPECT_OK(raftlet_config_set_disable_proposal_forwarding(cfg, true));
    EXPECT_OK(raftlet_config_set_disable_conf_change_validation(cfg, false));
    EXPECT_OK(raftlet_config_set_step_down_on_removal(cfg, true));
    EXPECT_OK(raftlet_config_set_promote_max_lag(cfg, 10));
    EXPECT_OK(raftlet_config_set_max_learners(cfg, 2));
    EXPECT_OK(raftlet_config_set_seed(cfg, 42));
    EXPECT_OK(raftlet_config_set_coalesce_appends(cfg, false));
    EXPECT_OK(raftlet_config_set_coalesce_appends(cfg, true));
    EXPECT_OK(raftlet_config_validate(cfg));

    /* read_only_option: only 0 and 1 exist. */
    EXPECT_RC(raftlet_config_set_read_only_option(cfg, 7), RAFTLET_ERR_INVALID_ARG);
    EXPECT_RC(raftlet_config_set_read_only_option(cfg, 2), RAFTLET_ERR_INVALID_ARG);
    EXPECT_OK(raftlet_config_validate(cfg)); /* a refused value changes nothing */
    /* Lease-based reads need check-quorum. */
    EXPECT_OK(raftlet_config_set_check_quorum(cfg, false));
    EXPECT_RC(raftlet_config_validate(cfg), RAFTLET_ERR_CONFIG_INVALID);
    CHECK(strstr(raftlet_last_error_message(), "check_quorum") != NULL);
    EXPECT_OK(raftlet_config_set_read_only_option(cfg, 0));
    EXPECT_OK(raftlet_config_validate(cfg));

    /* election_tick <= heartbeat_tick. */
    EXPECT_OK(raftlet_config_set_election_tick(cfg, 2));
    EXPECT_RC(raftlet_config_validate(cfg), RAFTLET_ERR_CONFIG_INVALID);
    CHECK(strstr(raftlet_last_error_message(), "election_tick") != NULL);
    EXPECT_OK(raftlet_config_set_election_tick(cfg, 1));
    EXPECT_RC(raftlet_config_validate(cfg), RAFTLET_ERR_CONFIG_INVALID);
    raftlet_storage *st = NULL;
    EXPECT_OK(raftlet_storage_new_memory(&st));
    raftlet_node *node = SENTINEL(raftlet_node);
    EXPECT_RC(raftlet_node_new(cfg, st, &node), RAFTLET_ERR_CONFIG_INVALID);
    CHECK(node == SENTINEL(raftlet_node)); /* outputs only on success */
    EXPECT_OK(raftlet_config_set_election_tick(cfg, 10));

    /* heartbeat_tick 0, max_inflight_msgs 0, inflight bytes below msg size. */
    EXPECT_OK(raftlet_config_set_heartbeat_tick(cfg, 0));
    EXPECT_RC(raftlet_config_validate(cfg), RAFTLET_ERR_CONFIG_INVALID);
    CHECK(strstr(raftlet_last_error_message(), "heartbeat_tick") != NULL);
    EXPECT_OK(raftlet_config_set_heartbeat_tick(cfg, 1));
    EXPECT_OK(raftlet_config_set_max_inflight_msgs(cfg, 0));
    EXPECT_RC(raftlet_config_validate(cfg), RAFTLET_ERR_CONFIG_INVALID);
    EXPECT_OK(raftlet_config_set_max_inflight_msgs(cfg, 8));
    EXPECT_OK(raftlet_config_set_max_inflight_bytes(cfg, 100));
    EXPECT_RC(raftlet_config_validate(cfg), RAFTLET_ERR_CONFIG_INVALID);
    EXPECT_OK(raftlet_config_set_max_inflight_bytes(cfg, 0));
    EXPECT_OK(raftlet_config_validate(cfg));
    raftlet_config_free(cfg);

    /* id 0 is reserved. */
    cfg = NULL;
    EXPECT_OK(raftlet_config_new(0, &cfg));
    EXPECT_RC(raftlet_config_validate(cfg), RAFTLET_ERR_CONFIG_INVALID);
    CHECK(strstr(raftlet_last_error_message(), "id") != NULL);
    node = SENTINEL(raftlet_node);
    EXPECT_RC(raftlet_node_new(cfg, st, &node), RAFTLET_ERR_CONFIG_INVALID);
    CHECK(node == SENTINEL(raftlet_node));
    raftlet_config_free(cfg);

    /* applied beyond the stored commit index. */
    cfg = NULL;
    EXPECT_OK(raftlet_config_new(1, &cfg));
    EXPECT_OK(raftlet_config_set_applied(cfg, 5));
    EXPECT_RC(raftlet_node_new(cfg, st, &node), RAFTLET_ERR_CONFIG_INVALID);
    raftlet_config_free(cfg);
    raftlet_storage_free(st);
}

static void test_conf_change_codec(void) {
    uint8_t buf[128];
    size_t need = 0;
    /* Sizing call. */
    EXPECT_OK(raftlet_conf_change_encode(3, 7, NULL, 0, NULL, 0, &need));
    CHECK(need > 0 && need < sizeof buf);
    size_t len = 0;
    EXPECT_OK(raftlet_conf_change_encode(3, 7, NULL, 0, buf, need, &len));
    CHECK(len == need);
    raftlet_conf_change_single cc = {99, 99};
    EXPECT_OK(raftlet_conf_change_decode(buf, len, &cc));
    CHECK(cc.change_type == 3 && cc.node_id == 7);
    /* Buffer too small: INVALID_ARG, the size needed is reported, nothing written. */
    memset(buf, 0xAB, sizeof buf);
    len = 0;
    EXPECT_RC(raftlet_conf_change_encode(3, 7, NULL, 0, buf, need - 1, &len),
              RAFTLET_ERR_INVALID_ARG);
    CHECK(len == need);
    CHECK(buf[0] == 0xAB);
    EXPECT_RC(raftlet_conf_change_encode(3, 7, NULL, 0, buf, 0, &len), RAFTLET_ERR_INVALID_ARG);
    /* NULLs and bad values. */
    EXPECT_RC(raftlet_conf_change_encode(3, 7, NULL, 0, buf, sizeof buf, NULL),
              RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_conf_change_encode(3, 7, NULL, 0, NULL, 16, &len), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_conf_change_encode(3, 7, NULL, 4, buf, sizeof buf, &len),
              RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_conf_change_encode(4, 7, NULL, 0, buf, sizeof buf, &len),
              RAFTLET_ERR_INVALID_ARG);
    EXPECT_RC(raftlet_conf_change_encode(0xffffffffu, 7, NULL, 0, buf, sizeof buf, &len),
              RAFTLET_ERR_INVALID_ARG);
    /* Every change type, with a context. */
    for (uint32_t t = 0; t <= 3; t++) {
        size_t l2 = 0;
        EXPECT_OK(raftlet_conf_change_encode(t, 100 + t, B("ctx"), 3, buf, sizeof buf, &l2));
        CHECK(l2 > need - 1);
        raftlet_conf_change_single d = {99, 0};
        EXPECT_OK(raftlet_conf_change_decode(buf, l2, &d));
        CHECK(d.change_type == t && d.node_id == 100 + t);
    }

    /* v2. */
    raftlet_conf_change_single chs[2] = {{3, 4}, {0, 5}};
    need = 0;
    EXPECT_OK(raftlet_conf_change_v2_encode(1, chs, 2, NULL, 0, NULL, 0, &need));
    CHECK(need > 0 && need < sizeof buf);
    memset(buf, 0xAB, sizeof buf);
    EXPECT_RC(raftlet_conf_change_v2_encode(1, chs, 2, NULL, 0, buf, need - 1, &len),
              RAFTLET_ERR_INVALID_ARG);
    CHECK(len == need && buf[0] == 0xAB);
    EXPECT_OK(raftlet_conf_change_v2_encode(1, chs, 2, B("c"), 1, buf, sizeof buf, &len));
    CHECK(len == need + 3); /* field tag, length, one byte */
    EXPECT_OK(raftlet_conf_change_v2_encode(0, NULL, 0, NULL, 0, buf, sizeof buf, &len));
    EXPECT_OK(raftlet_conf_change_v2_encode(2, chs, 1, NULL, 0, buf, sizeof buf, &len));
    EXPECT_RC(raftlet_conf_change_v2_encode(0, chs, 2, NULL, 0, buf, sizeof buf, NULL),
              RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_conf_change_v2_encode(0, NULL, 2, NULL, 0, buf, sizeof buf, &len),
              RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_conf_change_v2_encode(0, chs, 2, NULL, 1, buf, sizeof buf, &len),
              RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_conf_change_v2_encode(0, chs, 2, NULL, 0, NULL, 8, &len),
              RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_conf_change_v2_encode(3, chs, 2, NULL, 0, buf, sizeof buf, &len),
              RAFTLET_ERR_INVALID_ARG);
    raftlet_conf_change_single bad[1] = {{9, 1}};
    EXPECT_RC(raftlet_conf_change_v2_encode(0, bad, 1, NULL, 0, buf, sizeof buf, &len),
              RAFTLET_ERR_INVALID_ARG);

    /* decode errors; the output is untouched on failure. */
    raftlet_conf_change_single keep = {77, 77};
    EXPECT_RC(raftlet_conf_change_decode(GARBAGE, sizeof GARBAGE, &keep), RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_conf_change_decode(WRONG_WIRE_TYPE, sizeof WRONG_WIRE_TYPE, &keep),
              RAFTLET_ERR_DECODE);
    EXPECT_OK(raftlet_conf_change_encode(0, 300, B("ctx"), 3, buf, sizeof buf, &len));
    EXPECT_RC(raftlet_conf_change_decode(buf, len - 1, &keep), RAFTLET_ERR_DECODE);
    CHECK(keep.change_type == 77 && keep.node_id == 77);
    EXPECT_RC(raftlet_conf_change_decode(NULL, 3, &keep), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_conf_change_decode(buf, len, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_OK(raftlet_conf_change_decode(NULL, 0, &keep)); /* the empty ConfChange */
    CHECK(keep.change_type == 0 && keep.node_id == 0);

    /* v2 decode: sizing call, full decode, partial array, errors. */
    EXPECT_OK(raftlet_conf_change_v2_encode(2, chs, 2, NULL, 0, buf, sizeof buf, &len));
    uint32_t transition = 99;
    size_t n_changes = 99;
    EXPECT_OK(raftlet_conf_change_v2_decode(buf, len, &transition, NULL, 0, &n_changes));
    CHECK(transition == 2 && n_changes == 2);
    raftlet_conf_change_single got[2] = {{9, 9}, {9, 9}};
    EXPECT_OK(raftlet_conf_change_v2_decode(buf, len, &transition, got, 2, &n_changes));
    CHECK(got[0].change_type == 3 && got[0].node_id == 4);
    CHECK(got[1].change_type == 0 && got[1].node_id == 5);
    raftlet_conf_change_single one[1] = {{9, 9}};
    EXPECT_OK(raftlet_conf_change_v2_decode(buf, len, &transition, one, 1, &n_changes));
    CHECK(n_changes == 2 && one[0].node_id == 4);
    EXPECT_RC(raftlet_conf_change_v2_decode(buf, len - 1, &transition, got, 2, &n_changes),
              RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_conf_change_v2_decode(GARBAGE, sizeof GARBAGE, &transition, got, 2,
                                            &n_changes),
              RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_conf_change_v2_decode(buf, len, NULL, got, 2, &n_changes),
              RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_conf_change_v2_decode(buf, len, &transition, got, 2, NULL),
              RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_conf_change_v2_decode(buf, len, &transition, NULL, 2, &n_changes),
              RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_conf_change_v2_decode(NULL, 4, &transition, got, 2, &n_changes),
              RAFTLET_ERR_NULL_ARG);
}

static size_t log_count;
static uint64_t log_last_node;

static void count_log(void *user_data, uint32_t level, uint64_t node_id, const uint8_t *message,
                      size_t message_len) {
    size_t *calls = user_data;
    (*calls)++;
    log_count++;
    log_last_node = node_id;
    /* The message is NUL-terminated and message_len long. */
    if (level > 3 || message[message_len] != 0) {
        log_count = (size_t)-1;
    }
}

static void test_log_callback(void) {
    size_t calls = 0;
    EXPECT_RC(raftlet_set_log_callback(count_log, &calls, 4), RAFTLET_ERR_INVALID_ARG);
    EXPECT_OK(raftlet_set_log_callback(count_log, &calls, 0));
    raftlet_config *cfg = NULL;
    raftlet_storage *st = NULL;
    raftlet_node *n = NULL;
    const uint64_t voters[] = {42};
    EXPECT_OK(raftlet_config_new(42, &cfg));
    EXPECT_OK(raftlet_storage_new_memory(&st));
    EXPECT_OK(raftlet_storage_set_conf_state(st, voters, 1, NULL, 0));
    EXPECT_OK(raftlet_node_new(cfg, st, &n));
    EXPECT_OK(raftlet_node_campaign(n));
    CHECK(calls > 0 && log_count != (size_t)-1);
    CHECK(log_last_node == 42);
    /* Removing the callback stops delivery. */
    EXPECT_OK(raftlet_set_log_callback(NULL, NULL, 0));
    size_t before = calls;
    EXPECT_OK(raftlet_node_tick(n));
    raftlet_node_free(n);
    n = NULL;
    EXPECT_OK(raftlet_node_new(cfg, st, &n));
    EXPECT_OK(raftlet_node_campaign(n));
    CHECK(calls == before);
    raftlet_node_free(n);
    raftlet_storage_free(st);
    raftlet_config_free(cfg);
}

/* The functions the Go binding uses to move data in bulk. */
static void test_bulk_helpers(void) {
    /* raftlet_storage_append_entries: a Message envelope whose field 7
     * holds Entry{Type 0, Term 1, Index 1, Data "x"}. */
    static const uint8_t one_entry[] = {0x3a, 0x09, 0x08, 0x00, 0x10, 0x01, 0x18,
                                        0x01, 0x22, 0x01, 0x78};
    static const uint8_t gap_entry[] = {0x3a, 0x09, 0x08, 0x00, 0x10, 0x01, 0x18,
                                        0x05, 0x22, 0x01, 0x78};
    /* ConfState{voters: [1], auto_leave: false}. */
    static const uint8_t cs_one[] = {0x08, 0x01, 0x28, 0x00};
    raftlet_storage *st = NULL;
    EXPECT_OK(raftlet_storage_new_memory(&st));
    EXPECT_RC(raftlet_storage_append_entries(NULL, one_entry, sizeof one_entry),
              RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_append_entries(st, NULL, 3), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_append_entries(st, GARBAGE, sizeof GARBAGE), RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_storage_append_entries(st, gap_entry, sizeof gap_entry),
              RAFTLET_ERR_UNAVAILABLE);
    EXPECT_OK(raftlet_storage_append_entries(st, one_entry, sizeof one_entry));
    uint64_t first = 0, last = 0;
    EXPECT_OK(raftlet_storage_bounds(st, &first, &last));
    CHECK(first == 1 && last == 1);

    /* raftlet_storage_create_snapshot_with_conf_state + raftlet_storage_snapshot. */
    EXPECT_RC(raftlet_storage_create_snapshot_with_conf_state(NULL, 1, cs_one, sizeof cs_one,
                                                              B("s"), 1),
              RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_create_snapshot_with_conf_state(st, 1, GARBAGE, sizeof GARBAGE,
                                                              B("s"), 1),
              RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_storage_create_snapshot_with_conf_state(st, 9, cs_one, sizeof cs_one,
                                                              B("s"), 1),
              RAFTLET_ERR_UNAVAILABLE);
    /* Not covered by the stored commit yet: refused, nothing changes. */
    EXPECT_RC(raftlet_storage_create_snapshot_with_conf_state(st, 1, cs_one, sizeof cs_one,
                                                              B("s"), 1),
              RAFTLET_ERR_UNAVAILABLE);
    EXPECT_OK(raftlet_storage_set_hard_state(st, 1, 0, 1));
    EXPECT_OK(raftlet_storage_create_snapshot_with_conf_state(st, 1, cs_one, sizeof cs_one,
                                                              B("s"), 1));
    EXPECT_RC(raftlet_storage_create_snapshot_with_conf_state(st, 1, cs_one, sizeof cs_one,
                                                              B("s"), 1),
              RAFTLET_ERR_SNAPSHOT_OUT_OF_DATE);
    size_t snap_len = 0;
    EXPECT_OK(raftlet_storage_snapshot(st, NULL, 0, &snap_len));
    CHECK(snap_len > 0 && snap_len < 64);
    uint8_t snap[64];
    EXPECT_RC(raftlet_storage_snapshot(st, snap, snap_len - 1, &snap_len),
              RAFTLET_ERR_INVALID_ARG);
    EXPECT_OK(raftlet_storage_snapshot(st, snap, sizeof snap, &snap_len));
    EXPECT_RC(raftlet_storage_snapshot(NULL, snap, sizeof snap, &snap_len), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_snapshot(st, snap, sizeof snap, NULL), RAFTLET_ERR_NULL_ARG);
    /* The snapshot restores a fresh storage. */
    raftlet_storage *st2 = NULL;
    EXPECT_OK(raftlet_storage_new_memory(&st2));
    EXPECT_OK(raftlet_storage_apply_snapshot(st2, snap, snap_len));
    EXPECT_OK(raftlet_storage_bounds(st2, &first, &last));
    CHECK(first == 2 && last == 1);

    /* raftlet_node_conf_state and raftlet_ready_encode on a node over it. */
    raftlet_config *cfg = NULL;
    raftlet_node *n = NULL;
    EXPECT_OK(raftlet_config_new(1, &cfg));
    EXPECT_OK(raftlet_node_new(cfg, st2, &n));
    size_t cs_len = 0;
    EXPECT_OK(raftlet_node_conf_state(n, NULL, 0, &cs_len));
    CHECK(cs_len == sizeof cs_one);
    uint8_t cs[16];
    EXPECT_RC(raftlet_node_conf_state(n, cs, cs_len - 1, &cs_len), RAFTLET_ERR_INVALID_ARG);
    EXPECT_OK(raftlet_node_conf_state(n, cs, sizeof cs, &cs_len));
    CHECK(cs_len == sizeof cs_one && memcmp(cs, cs_one, sizeof cs_one) == 0);
    EXPECT_RC(raftlet_node_conf_state(NULL, cs, sizeof cs, &cs_len), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_conf_state(n, cs, sizeof cs, NULL), RAFTLET_ERR_NULL_ARG);

    EXPECT_OK(raftlet_node_campaign(n));
    raftlet_ready *rd = NULL;
    EXPECT_OK(raftlet_node_ready(n, &rd));
    raftlet_bytes enc = {NULL, 0};
    EXPECT_RC(raftlet_ready_encode(NULL, &enc), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_encode(rd, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_OK(raftlet_ready_encode(rd, &enc));
    CHECK(enc.len > 0 && enc.ptr != NULL);
    raftlet_bytes again = {NULL, 0};
    EXPECT_OK(raftlet_ready_encode(rd, &again));
    CHECK(again.ptr == enc.ptr && again.len == enc.len); /* built once */
    EXPECT_OK(raftlet_storage_append_ready(st2, rd));
    EXPECT_OK(raftlet_node_advance(n, rd));
    EXPECT_RC(raftlet_ready_encode(rd, &enc), RAFTLET_ERR_READY_STALE);
    raftlet_ready_free(rd);

    raftlet_node_free(n);
    raftlet_config_free(cfg);
    raftlet_storage_free(st2);
    raftlet_storage_free(st);
}

static void test_message_header(void) {
    pbuf m = enc_msg(8 /* MsgHeartbeat */, 2, 1, 5);
    raftlet_message_header h;
    EXPECT_OK(raftlet_message_decode_header(m.b, m.n, &h));
    CHECK(h.msg_type == 8 && h.to == 2 && h.from == 1 && h.term == 5);
    raftlet_message_header keep = {42, 42, 42, 42};
    EXPECT_RC(raftlet_message_decode_header(m.b, m.n - 1, &keep), RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_message_decode_header(GARBAGE, sizeof GARBAGE, &keep), RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_message_decode_header(WRONG_WIRE_TYPE, sizeof WRONG_WIRE_TYPE, &keep),
              RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_message_decode_header(FIELD_ZERO, sizeof FIELD_ZERO, &keep),
              RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_message_decode_header(LEN_PAST_END, sizeof LEN_PAST_END, &keep),
              RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_message_decode_header(WIRE_TYPE_7, sizeof WIRE_TYPE_7, &keep),
              RAFTLET_ERR_DECODE);
    CHECK(keep.msg_type == 42 && keep.to == 42 && keep.from == 42 && keep.term == 42);
    EXPECT_RC(raftlet_message_decode_header(NULL, 4, &h), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_message_decode_header(m.b, m.n, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_OK(raftlet_message_decode_header(NULL, 0, &h)); /* the empty Message */
    CHECK(h.msg_type == 0 && h.to == 0 && h.from == 0 && h.term == 0);

    /* Well-formed bytes that raftlet_node_step would refuse are refused
     * here too, so a transport can drop them before routing: a message
     * type raftpb does not name, a term above 2^63 - 1, a peer message from
     * an id that cannot be a member. */
    const int32_t unknown_types[] = {24, 99, -1};
    for (size_t i = 0; i < sizeof unknown_types / sizeof unknown_types[0]; i++) {
        pbuf u = enc_msg(unknown_types[i], 2, 1, 5);
        EXPECT_RC(raftlet_message_decode_header(u.b, u.n, &keep), RAFTLET_ERR_INVALID_MESSAGE);
        CHECK(strstr(raftlet_last_error_message(), "unknown message type") != NULL);
    }
    pbuf huge = enc_msg(8, 2, 1, UINT64_MAX);
    EXPECT_RC(raftlet_message_decode_header(huge.b, huge.n, &keep), RAFTLET_ERR_INVALID_MESSAGE);
    pbuf over = enc_msg(8, 2, 1, (UINT64_C(1) << 63));
    EXPECT_RC(raftlet_message_decode_header(over.b, over.n, &keep), RAFTLET_ERR_INVALID_MESSAGE);
    pbuf reserved = enc_msg(8, 2, UINT64_MAX, 5);
    EXPECT_RC(raftlet_message_decode_header(reserved.b, reserved.n, &keep),
              RAFTLET_ERR_INVALID_MESSAGE);
    CHECK(keep.msg_type == 42 && keep.to == 42 && keep.from == 42 && keep.term == 42);
    /* The bound itself is accepted. */
    pbuf at = enc_msg(8, 2, 1, (UINT64_C(1) << 63) - 1);
    EXPECT_OK(raftlet_message_decode_header(at.b, at.n, &h));
    CHECK(h.term == (UINT64_C(1) << 63) - 1);
}

static void test_storage(void) {
    raftlet_storage *st = NULL;
    EXPECT_RC(raftlet_storage_new_memory(NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_OK(raftlet_storage_new_memory(&st));
    CHECK(st != NULL);
    uint64_t first = 0, last = 0;
    EXPECT_OK(raftlet_storage_bounds(st, &first, &last));
    CHECK(first == 1 && last == 0);

    const uint64_t voters[] = {1, 2, 3};
    const uint64_t learners[] = {4};
    pbuf e1 = enc_entry(1, 1, "a");
    pbuf cs = enc_conf_state(voters, 3);
    pbuf snap = enc_snapshot(10, 2, voters, 3, "s");
    /* NULL storage for every storage function. */
    EXPECT_RC(raftlet_storage_set_conf_state(NULL, voters, 3, NULL, 0), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_set_hard_state(NULL, 1, 0, 0), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_append_entry(NULL, e1.b, e1.n), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_append_ready(NULL, SENTINEL(const raftlet_ready)),
              RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_append_ready(st, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_apply_snapshot(NULL, snap.b, snap.n), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_create_snapshot(NULL, 1, NULL, 0), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_set_conf_state_encoded(NULL, cs.b, cs.n), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_compact(NULL, 1), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_bounds(NULL, &first, &last), RAFTLET_ERR_NULL_ARG);
    /* NULL data arguments with a length. */
    EXPECT_RC(raftlet_storage_set_conf_state(st, NULL, 3, NULL, 0), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_set_conf_state(st, voters, 3, NULL, 1), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_append_entry(st, NULL, 4), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_apply_snapshot(st, NULL, 4), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_create_snapshot(st, 1, NULL, 4), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_set_conf_state_encoded(st, NULL, 4), RAFTLET_ERR_NULL_ARG);
    uint64_t f2 = 77, l2 = 77;
    EXPECT_RC(raftlet_storage_bounds(st, NULL, &l2), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_bounds(st, &f2, NULL), RAFTLET_ERR_NULL_ARG);
    CHECK(f2 == 77 && l2 == 77);

    /* Configurations no node can start from are refused and change
     * nothing: a voter id 0 or UINT64_MAX, a voter that is also a learner. */
    EXPECT_OK(raftlet_storage_set_conf_state(st, voters, 3, learners, 1));
    const uint64_t zero_voter[] = {1, 0};
    const uint64_t max_voter[] = {UINT64_MAX};
    EXPECT_RC(raftlet_storage_set_conf_state(st, zero_voter, 2, NULL, 0),
              RAFTLET_ERR_CONF_CHANGE_REFUSED);
    EXPECT_RC(raftlet_storage_set_conf_state(st, max_voter, 1, NULL, 0),
              RAFTLET_ERR_CONF_CHANGE_REFUSED);
    EXPECT_RC(raftlet_storage_set_conf_state(st, voters, 3, voters, 1),
              RAFTLET_ERR_CONF_CHANGE_REFUSED);
    CHECK(strstr(raftlet_last_error_message(), "learner") != NULL);
    pbuf zero_cs = enc_conf_state(zero_voter, 2);
    EXPECT_RC(raftlet_storage_set_conf_state_encoded(st, zero_cs.b, zero_cs.n),
              RAFTLET_ERR_CONF_CHANGE_REFUSED);
    {
        raftlet_config *c4 = NULL;
        raftlet_node *n4 = NULL;
        EXPECT_OK(raftlet_config_new(4, &c4));
        EXPECT_OK(raftlet_node_new(c4, st, &n4));
        raftlet_status s4;
        EXPECT_OK(raftlet_node_status(n4, &s4));
        CHECK(s4.voters_count == 3 && s4.learners_count == 1); /* still {1 2 3} + {4} */
        raftlet_node_free(n4);
        raftlet_config_free(c4);
    }
    EXPECT_OK(raftlet_storage_set_conf_state(st, NULL, 0, NULL, 0));
    EXPECT_OK(raftlet_storage_set_conf_state_encoded(st, cs.b, cs.n));
    EXPECT_OK(raftlet_storage_set_conf_state_encoded(st, NULL, 0));
    EXPECT_RC(raftlet_storage_set_conf_state_encoded(st, GARBAGE, sizeof GARBAGE),
              RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_storage_set_conf_state_encoded(st, WRONG_WIRE_TYPE + 1, 2),
              RAFTLET_ERR_DECODE);
    EXPECT_OK(raftlet_storage_set_hard_state(st, 1, 1, 0));

    /* Entries 1..5. */
    for (uint64_t i = 1; i <= 5; i++) {
        pbuf e = enc_entry(1, i, "x");
        EXPECT_OK(raftlet_storage_append_entry(st, e.b, e.n));
    }
    EXPECT_OK(raftlet_storage_bounds(st, &first, &last));
    CHECK(first == 1 && last == 5);
    pbuf gap = enc_entry(1, 9, "gap");
    EXPECT_RC(raftlet_storage_append_entry(st, gap.b, gap.n), RAFTLET_ERR_UNAVAILABLE);
    EXPECT_RC(raftlet_storage_append_entry(st, GARBAGE, sizeof GARBAGE), RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_storage_append_entry(st, e1.b, e1.n - 1), RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_storage_append_entry(st, WRONG_WIRE_TYPE, sizeof WRONG_WIRE_TYPE),
              RAFTLET_ERR_DECODE);
    /* A conflicting entry truncates the tail. */
    pbuf e4 = enc_entry(2, 4, "y");
    EXPECT_OK(raftlet_storage_append_entry(st, e4.b, e4.n));
    EXPECT_OK(raftlet_storage_bounds(st, &first, &last));
    CHECK(first == 1 && last == 4);

    /* Snapshots and compaction. */
    EXPECT_RC(raftlet_storage_create_snapshot(st, 9, B("d"), 1), RAFTLET_ERR_UNAVAILABLE);
    /* Above the stored commit the storage may hold an entry a ready in
     * flight replaces (as the conflicting entry above did): refused. */
    EXPECT_OK(raftlet_storage_set_hard_state(st, 2, 0, 1));
    EXPECT_RC(raftlet_storage_create_snapshot(st, 2, B("d"), 1), RAFTLET_ERR_UNAVAILABLE);
    EXPECT_OK(raftlet_storage_set_hard_state(st, 2, 0, 4));
    /* Compacted without a snapshot: index 1 is past the snapshot (0) but
     * its entry is gone. */
    EXPECT_OK(raftlet_storage_compact(st, 2));
    EXPECT_RC(raftlet_storage_create_snapshot(st, 1, NULL, 0), RAFTLET_ERR_COMPACTED);
    EXPECT_OK(raftlet_storage_create_snapshot(st, 2, B("state@2"), 7));
    EXPECT_RC(raftlet_storage_create_snapshot(st, 2, B("d"), 1),
              RAFTLET_ERR_SNAPSHOT_OUT_OF_DATE);
    EXPECT_RC(raftlet_storage_create_snapshot(st, 1, NULL, 0), RAFTLET_ERR_SNAPSHOT_OUT_OF_DATE);
    EXPECT_RC(raftlet_storage_compact(st, 9), RAFTLET_ERR_UNAVAILABLE); /* beyond last */
    EXPECT_OK(raftlet_storage_compact(st, 3));
    EXPECT_OK(raftlet_storage_bounds(st, &first, &last));
    CHECK(first == 4 && last == 4);
    EXPECT_RC(raftlet_storage_compact(st, 3), RAFTLET_ERR_COMPACTED);
    EXPECT_RC(raftlet_storage_compact(st, 2), RAFTLET_ERR_COMPACTED);
    EXPECT_OK(raftlet_storage_create_snapshot(st, 3, NULL, 0)); /* the placeholder's term */
    EXPECT_OK(raftlet_storage_create_snapshot(st, 4, NULL, 0));

    /* apply_snapshot: replaces the contents; older ones are refused. */
    EXPECT_OK(raftlet_storage_apply_snapshot(st, snap.b, snap.n));
    EXPECT_OK(raftlet_storage_bounds(st, &first, &last));
    CHECK(first == 11 && last == 10);
    EXPECT_RC(raftlet_storage_apply_snapshot(st, snap.b, snap.n),
              RAFTLET_ERR_SNAPSHOT_OUT_OF_DATE);
    pbuf older = enc_snapshot(5, 1, voters, 3, NULL);
    EXPECT_RC(raftlet_storage_apply_snapshot(st, older.b, older.n),
              RAFTLET_ERR_SNAPSHOT_OUT_OF_DATE);
    EXPECT_RC(raftlet_storage_apply_snapshot(st, GARBAGE, sizeof GARBAGE), RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_storage_apply_snapshot(st, snap.b, snap.n - 1), RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_storage_create_snapshot(st, 10, NULL, 0),
              RAFTLET_ERR_SNAPSHOT_OUT_OF_DATE);
    pbuf e11 = enc_entry(2, 11, "after");
    EXPECT_OK(raftlet_storage_append_entry(st, e11.b, e11.n));
    EXPECT_OK(raftlet_storage_bounds(st, &first, &last));
    CHECK(first == 11 && last == 11);
    /* Entries already covered by the snapshot are skipped. */
    pbuf e3 = enc_entry(1, 3, "old");
    EXPECT_OK(raftlet_storage_append_entry(st, e3.b, e3.n));

    /* A node restarts from what the storage holds: snapshot at 10 with
     * voters {1,2,3}, entry 11, and a hard state. */
    EXPECT_OK(raftlet_storage_set_hard_state(st, 2, 0, 10));
    raftlet_config *cfg = NULL;
    EXPECT_OK(raftlet_config_new(2, &cfg));
    raftlet_node *node = NULL;
    EXPECT_OK(raftlet_node_new(cfg, st, &node));
    /* The node keeps its own reference: the handle can go first. */
    raftlet_storage_free(st);
    raftlet_status s;
    EXPECT_OK(raftlet_node_status(node, &s));
    CHECK(s.id == 2 && s.term == 2 && s.commit == 10 && s.voters_count == 3 && s.role == 0);
    EXPECT_OK(raftlet_node_tick(node));
    raftlet_node_free(node);

    /* An inconsistent storage: commit beyond the last index. */
    st = NULL;
    EXPECT_OK(raftlet_storage_new_memory(&st));
    EXPECT_OK(raftlet_storage_set_conf_state(st, voters, 1, NULL, 0));
    EXPECT_OK(raftlet_storage_set_hard_state(st, 1, 0, 5));
    node = SENTINEL(raftlet_node);
    EXPECT_RC(raftlet_node_new(cfg, st, &node), RAFTLET_ERR_INVALID_STATE);
    CHECK(node == SENTINEL(raftlet_node));
    raftlet_config_free(cfg);
    raftlet_storage_free(st);
}

/* Every node function with a NULL node, and with each NULL output. */
static void test_node_null_args(void) {
    raftlet_config *cfg = NULL;
    raftlet_storage *st = NULL;
    raftlet_node *node = NULL;
    EXPECT_OK(raftlet_config_new(1, &cfg));
    EXPECT_OK(raftlet_storage_new_memory(&st));
    const uint64_t voters[] = {1};
    EXPECT_OK(raftlet_storage_set_conf_state(st, voters, 1, NULL, 0));
    EXPECT_RC(raftlet_node_new(NULL, st, &node), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_new(cfg, NULL, &node), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_new(cfg, st, NULL), RAFTLET_ERR_NULL_ARG);
    CHECK(node == NULL);
    EXPECT_OK(raftlet_node_new(cfg, st, &node));
    CHECK(node != NULL);

    uint8_t cc[32];
    size_t cc_len = encode_cc(3, 2, cc, sizeof cc);
    pbuf hb = enc_msg(8, 1, 2, 1);
    bool b = false;
    raftlet_ready *rd = NULL;
    raftlet_status s;
    raftlet_progress pr[2];
    size_t len = 0;
    char *json = NULL;
    size_t cs_len = 0;
    uint8_t csb[64];

    EXPECT_RC(raftlet_node_bootstrap(NULL, voters, 1, NULL, 0), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_tick(NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_campaign(NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_propose(NULL, B("x"), 1), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_propose_conf_change(NULL, cc, cc_len, false), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_apply_conf_change(NULL, cc, cc_len, false, csb, sizeof csb, &cs_len),
              RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_step(NULL, hb.b, hb.n), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_read_index(NULL, B("c"), 1), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_transfer_leader(NULL, 2), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_forget_leader(NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_report_unreachable(NULL, 2), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_report_snapshot(NULL, 2, true), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_has_ready(NULL, &b), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_ready(NULL, &rd), RAFTLET_ERR_NULL_ARG);
    CHECK(rd == NULL);
    EXPECT_RC(raftlet_node_advance(NULL, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_advance_append(NULL, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_advance_apply_to(NULL, 1), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_status(NULL, &s), RAFTLET_ERR_NULL_ARG);
    raftlet_basic_status bs;
    EXPECT_RC(raftlet_node_basic_status(NULL, &bs), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_progress(NULL, pr, 2, &len), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_status_json(NULL, &json), RAFTLET_ERR_NULL_ARG);
    CHECK(json == NULL);

    /* A NULL node is reported before any other argument is looked at. */
    EXPECT_RC(raftlet_node_step(NULL, GARBAGE, sizeof GARBAGE), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_propose_conf_change(NULL, GARBAGE, sizeof GARBAGE, false),
              RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_apply_conf_change(NULL, GARBAGE, sizeof GARBAGE, true, NULL, 0, NULL),
              RAFTLET_ERR_NULL_ARG);

    /* NULL data and outputs on a live node. */
    EXPECT_RC(raftlet_node_bootstrap(node, NULL, 1, NULL, 0), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_bootstrap(node, voters, 1, NULL, 1), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_propose(node, NULL, 1), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_propose_conf_change(node, NULL, 4, false), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_apply_conf_change(node, NULL, 4, false, NULL, 0, NULL),
              RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_step(node, NULL, 4), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_read_index(node, NULL, 4), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_has_ready(node, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_ready(node, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_advance(node, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_advance_append(node, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_status(node, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_basic_status(node, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_progress(node, pr, 2, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_progress(node, NULL, 2, &len), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_status_json(node, NULL), RAFTLET_ERR_NULL_ARG);

    /* A ready: NULL node with a real ready. */
    EXPECT_OK(raftlet_node_ready(node, &rd));
    CHECK(rd != NULL);
    EXPECT_RC(raftlet_node_advance(NULL, rd), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_advance_append(NULL, rd), RAFTLET_ERR_NULL_ARG);
    EXPECT_OK(raftlet_node_advance(node, rd));
    raftlet_ready_free(rd);

    raftlet_node_free(node);
    raftlet_storage_free(st);
    raftlet_config_free(cfg);
}

/* Every ready accessor with a NULL ready and with a NULL output. */
static void ready_null_args(raftlet_ready *rd) {
    size_t n = 0;
    bool b = false;
    raftlet_message_view mv;
    raftlet_entry_view ev;
    raftlet_hard_state hs;
    raftlet_soft_state ss;
    raftlet_snapshot_view sv;
    raftlet_read_state_view rv;
    EXPECT_RC(raftlet_ready_message_count(NULL, &n), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_message(NULL, 0, &mv), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_persisted_message_count(NULL, &n), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_persisted_message(NULL, 0, &mv), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_all_message_count(NULL, &n), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_all_message(NULL, 0, &mv), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_entry_count(NULL, &n), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_entry(NULL, 0, &ev), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_committed_entry_count(NULL, &n), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_committed_entry(NULL, 0, &ev), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_hard_state(NULL, &b, &hs), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_soft_state(NULL, &b, &ss), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_snapshot(NULL, &b, &sv), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_read_state_count(NULL, &n), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_read_state(NULL, 0, &rv), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_must_sync(NULL, &b), RAFTLET_ERR_NULL_ARG);

    EXPECT_RC(raftlet_ready_message_count(rd, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_message(rd, 0, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_persisted_message_count(rd, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_persisted_message(rd, 0, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_all_message_count(rd, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_all_message(rd, 0, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_entry_count(rd, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_entry(rd, 0, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_committed_entry_count(rd, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_committed_entry(rd, 0, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_hard_state(rd, NULL, &hs), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_hard_state(rd, &b, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_soft_state(rd, NULL, &ss), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_soft_state(rd, &b, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_snapshot(rd, NULL, &sv), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_snapshot(rd, &b, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_read_state_count(rd, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_read_state(rd, 0, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_must_sync(rd, NULL), RAFTLET_ERR_NULL_ARG);
}

/* Every indexed accessor at its count (one past the end) and at SIZE_MAX;
 * the output must be left untouched. */
static void ready_out_of_range(raftlet_ready *rd) {
    size_t n = 0;
    raftlet_message_view mv, mv0;
    raftlet_entry_view ev, ev0;
    raftlet_read_state_view rv, rv0;
    memset(&mv, 0x5A, sizeof mv);
    memset(&ev, 0x5A, sizeof ev);
    memset(&rv, 0x5A, sizeof rv);
    mv0 = mv;
    ev0 = ev;
    rv0 = rv;
    EXPECT_OK(raftlet_ready_message_count(rd, &n));
    EXPECT_RC(raftlet_ready_message(rd, n, &mv), RAFTLET_ERR_INVALID_ARG);
    EXPECT_RC(raftlet_ready_message(rd, SIZE_MAX, &mv), RAFTLET_ERR_INVALID_ARG);
    EXPECT_OK(raftlet_ready_persisted_message_count(rd, &n));
    EXPECT_RC(raftlet_ready_persisted_message(rd, n, &mv), RAFTLET_ERR_INVALID_ARG);
    EXPECT_RC(raftlet_ready_persisted_message(rd, SIZE_MAX, &mv), RAFTLET_ERR_INVALID_ARG);
    EXPECT_OK(raftlet_ready_all_message_count(rd, &n));
    EXPECT_RC(raftlet_ready_all_message(rd, n, &mv), RAFTLET_ERR_INVALID_ARG);
    EXPECT_RC(raftlet_ready_all_message(rd, SIZE_MAX, &mv), RAFTLET_ERR_INVALID_ARG);
    CHECK(memcmp(&mv, &mv0, sizeof mv) == 0);
    EXPECT_OK(raftlet_ready_entry_count(rd, &n));
    EXPECT_RC(raftlet_ready_entry(rd, n, &ev), RAFTLET_ERR_INVALID_ARG);
    EXPECT_RC(raftlet_ready_entry(rd, SIZE_MAX, &ev), RAFTLET_ERR_INVALID_ARG);
    EXPECT_OK(raftlet_ready_committed_entry_count(rd, &n));
    EXPECT_RC(raftlet_ready_committed_entry(rd, n, &ev), RAFTLET_ERR_INVALID_ARG);
    EXPECT_RC(raftlet_ready_committed_entry(rd, SIZE_MAX, &ev), RAFTLET_ERR_INVALID_ARG);
    CHECK(memcmp(&ev, &ev0, sizeof ev) == 0);
    EXPECT_OK(raftlet_ready_read_state_count(rd, &n));
    EXPECT_RC(raftlet_ready_read_state(rd, n, &rv), RAFTLET_ERR_INVALID_ARG);
    EXPECT_RC(raftlet_ready_read_state(rd, SIZE_MAX, &rv), RAFTLET_ERR_INVALID_ARG);
    CHECK(memcmp(&rv, &rv0, sizeof rv) == 0);
}

/* Every accessor of an advanced ready returns READY_STALE and writes nothing. */
static void ready_stale(raftlet_ready *rd) {
    size_t n = 12345;
    bool b = true;
    raftlet_message_view mv;
    raftlet_entry_view ev;
    raftlet_hard_state hs;
    raftlet_soft_state ss;
    raftlet_snapshot_view sv;
    raftlet_read_state_view rv;
    EXPECT_RC(raftlet_ready_message_count(rd, &n), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_ready_message(rd, 0, &mv), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_ready_persisted_message_count(rd, &n), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_ready_persisted_message(rd, 0, &mv), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_ready_all_message_count(rd, &n), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_ready_all_message(rd, 0, &mv), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_ready_entry_count(rd, &n), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_ready_entry(rd, 0, &ev), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_ready_committed_entry_count(rd, &n), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_ready_committed_entry(rd, 0, &ev), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_ready_hard_state(rd, &b, &hs), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_ready_soft_state(rd, &b, &ss), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_ready_snapshot(rd, &b, &sv), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_ready_read_state_count(rd, &n), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_ready_read_state(rd, 0, &rv), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_ready_must_sync(rd, &b), RAFTLET_ERR_READY_STALE);
    CHECK(n == 12345 && b == true);
}

/* A node of a 3-voter configuration alone: no leader. */
static void test_no_leader_and_step_errors(void) {
    reset_cluster();
    const uint64_t voters[] = {1, 2, 3};
    start_node(1, voters, 3, NULL, 0);
    raftlet_node *n = H[1].node;
    uint8_t cc[32];
    size_t cc_len = encode_cc(3, 4, cc, sizeof cc);

    EXPECT_RC(raftlet_node_propose(n, B("lost"), 4), RAFTLET_ERR_PROPOSAL_DROPPED);
    EXPECT_RC(raftlet_node_propose(n, NULL, 0), RAFTLET_ERR_PROPOSAL_DROPPED);
    EXPECT_RC(raftlet_node_propose_conf_change(n, cc, cc_len, false),
              RAFTLET_ERR_PROPOSAL_DROPPED);
    EXPECT_RC(raftlet_node_read_index(n, B("r"), 1), RAFTLET_ERR_NO_LEADER);
    EXPECT_RC(raftlet_node_transfer_leader(n, 2), RAFTLET_ERR_TRANSFER_REFUSED);
    EXPECT_OK(raftlet_node_forget_leader(n));
    EXPECT_OK(raftlet_node_report_unreachable(n, 2));
    EXPECT_OK(raftlet_node_report_snapshot(n, 2, false));

    /* Malformed bytes. */
    pbuf hb = enc_msg(8 /* MsgHeartbeat */, 1, 2, 1);
    EXPECT_RC(raftlet_node_step(n, hb.b, hb.n - 1), RAFTLET_ERR_DECODE); /* truncated */
    EXPECT_RC(raftlet_node_step(n, hb.b, 1), RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_node_step(n, GARBAGE, sizeof GARBAGE), RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_node_step(n, WRONG_WIRE_TYPE, sizeof WRONG_WIRE_TYPE), RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_node_step(n, FIELD_ZERO, sizeof FIELD_ZERO), RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_node_step(n, LEN_PAST_END, sizeof LEN_PAST_END), RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_node_step(n, WIRE_TYPE_7, sizeof WIRE_TYPE_7), RAFTLET_ERR_DECODE);
    CHECK(strstr(raftlet_last_error_message(), "wire type") != NULL);
    /* Local-only types. */
    const int32_t local[] = {0 /* Hup */, 1 /* Beat */, 10 /* Unreachable */,
                             11 /* SnapStatus */, 12 /* CheckQuorum */, 19, 20, 21, 22};
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++) {
        pbuf m = enc_msg(local[i], 1, 2, 1);
        EXPECT_RC(raftlet_node_step(n, m.b, m.n), RAFTLET_ERR_STEP_LOCAL_MSG);
    }
    EXPECT_RC(raftlet_node_step(n, NULL, 0), RAFTLET_ERR_STEP_LOCAL_MSG); /* empty = MsgHup */
    /* Responses from a peer outside the configuration. */
    const int32_t responses[] = {4 /* AppResp */, 6 /* VoteResp */, 9 /* HeartbeatResp */,
                                 16 /* ReadIndexResp */, 18 /* PreVoteResp */};
    for (size_t i = 0; i < sizeof responses / sizeof responses[0]; i++) {
        pbuf m = enc_msg(responses[i], 1, 9, 1);
        EXPECT_RC(raftlet_node_step(n, m.b, m.n), RAFTLET_ERR_STEP_PEER_NOT_FOUND);
    }
    /* A message a peer sends in its own name without a term is refused. */
    pbuf no_term = enc_msg(3 /* MsgApp */, 1, 2, 0);
    EXPECT_RC(raftlet_node_step(n, no_term.b, no_term.n), RAFTLET_ERR_STEP_LOCAL_MSG);
    /* Unknown message types, terms past 2^63 - 1 and senders that cannot
     * be members are refused before they reach the node. */
    pbuf unknown_type = enc_msg(24, 1, 2, 1);
    EXPECT_RC(raftlet_node_step(n, unknown_type.b, unknown_type.n), RAFTLET_ERR_INVALID_MESSAGE);
    pbuf max_term = enc_msg(8 /* MsgHeartbeat */, 1, 2, UINT64_MAX);
    EXPECT_RC(raftlet_node_step(n, max_term.b, max_term.n), RAFTLET_ERR_INVALID_MESSAGE);
    CHECK(strstr(raftlet_last_error_message(), "term") != NULL);
    pbuf from_max = enc_msg(5 /* MsgVote */, 1, UINT64_MAX, 1);
    EXPECT_RC(raftlet_node_step(n, from_max.b, from_max.n), RAFTLET_ERR_INVALID_MESSAGE);
    /* None of that changed the node. */
    raftlet_status s;
    EXPECT_OK(raftlet_node_status(n, &s));
    CHECK(s.term == 0 && s.lead == 0 && s.role == 0 && s.voters_count == 3);
    CHECK(s.progress_count == 0);

    /* A heartbeat from a real peer is accepted and makes it the leader. */
    pbuf hb2 = enc_msg(8, 1, 2, 1);
    EXPECT_OK(raftlet_node_step(n, hb2.b, hb2.n));
    EXPECT_OK(raftlet_node_status(n, &s));
    CHECK(s.term == 1 && s.lead == 2 && s.role == 0);
    /* ... and forget_leader drops it. */
    EXPECT_OK(raftlet_node_forget_leader(n));
    EXPECT_OK(raftlet_node_status(n, &s));
    CHECK(s.lead == 0);
    EXPECT_RC(raftlet_node_read_index(n, B("r"), 1), RAFTLET_ERR_NO_LEADER);

    /* While campaigning (pre-vote on: pre-candidate) there is no leader. */
    EXPECT_OK(raftlet_node_campaign(n));
    EXPECT_OK(raftlet_node_status(n, &s));
    CHECK(s.role == 3);
    raftlet_basic_status bs;
    EXPECT_OK(raftlet_node_basic_status(n, &bs));
    CHECK(bs.role == 3 && bs.lead == 0 && bs.term == s.term && bs.id == 1);
    /* Its ready asks both peers for a pre-vote (and answers the heartbeat
     * of node 2): all messages are the send-now ones, then the persisted
     * ones, the same bytes in order. */
    raftlet_ready *rd = NULL;
    EXPECT_OK(raftlet_node_ready(n, &rd));
    size_t now = 0, later = 0, all = 0;
    EXPECT_OK(raftlet_ready_message_count(rd, &now));
    EXPECT_OK(raftlet_ready_persisted_message_count(rd, &later));
    EXPECT_OK(raftlet_ready_all_message_count(rd, &all));
    CHECK(all == now + later);
    size_t pre_votes = 0;
    for (size_t i = 0; i < all; i++) {
        raftlet_message_view want, got;
        if (i < now) {
            EXPECT_OK(raftlet_ready_message(rd, i, &want));
        } else {
            EXPECT_OK(raftlet_ready_persisted_message(rd, i - now, &want));
        }
        EXPECT_OK(raftlet_ready_all_message(rd, i, &got));
        CHECK(got.to == want.to && got.from == want.from && got.msg_type == want.msg_type);
        pre_votes += got.msg_type == 17 /* MsgPreVote */;
        CHECK(got.data.len == want.data.len &&
              memcmp(got.data.ptr, want.data.ptr, got.data.len) == 0);
    }
    CHECK(pre_votes == 2);
    EXPECT_OK(raftlet_node_advance(n, rd));
    raftlet_ready_free(rd);
    EXPECT_RC(raftlet_node_propose(n, B("x"), 1), RAFTLET_ERR_PROPOSAL_DROPPED);
    EXPECT_RC(raftlet_node_read_index(n, B("r"), 1), RAFTLET_ERR_NO_LEADER);
    EXPECT_RC(raftlet_node_transfer_leader(n, 2), RAFTLET_ERR_TRANSFER_REFUSED);
    reset_cluster();
}

static void test_single_node(void) {
    reset_cluster();
    const uint64_t voters[] = {1};
    start_node(1, voters, 1, NULL, 0);
    raftlet_node *n = H[1].node;
    bool has = true;
    EXPECT_OK(raftlet_node_has_ready(n, &has));
    CHECK(!has); /* a fresh restart has nothing to do */

    EXPECT_OK(raftlet_node_campaign(n));
    EXPECT_OK(raftlet_node_has_ready(n, &has));
    CHECK(has);
    /* The first ready: a pre-candidate (pre-vote is on). As in etcd v3.6,
     * its own votes count only once the ready is persisted, so it takes
     * three readies to lead. */
    raftlet_ready *rd = NULL;
    EXPECT_OK(raftlet_node_ready(n, &rd));
    bool has_ss = false, has_hs = true, must_sync = true;
    raftlet_soft_state ss = {0, 0};
    raftlet_hard_state hs = {7, 7, 7};
    EXPECT_OK(raftlet_ready_soft_state(rd, &has_ss, &ss));
    CHECK(has_ss && ss.role == 3 && ss.leader_id == 0);
    EXPECT_OK(raftlet_ready_hard_state(rd, &has_hs, &hs));
    CHECK(!has_hs && hs.term == 7 && hs.vote == 7 && hs.commit == 7); /* not written */
    EXPECT_OK(raftlet_ready_must_sync(rd, &must_sync));
    CHECK(!must_sync);
    size_t n_ent = 99;
    EXPECT_OK(raftlet_ready_entry_count(rd, &n_ent));
    CHECK(n_ent == 0);
    bool has_snap = true;
    raftlet_snapshot_view sv;
    memset(&sv, 0x5A, sizeof sv);
    raftlet_snapshot_view sv0 = sv;
    EXPECT_OK(raftlet_ready_snapshot(rd, &has_snap, &sv));
    CHECK(!has_snap && memcmp(&sv, &sv0, sizeof sv) == 0);
    ready_null_args(rd);
    ready_out_of_range(rd);
    process_ready(1, rd, false);
    /* The second: a candidate that voted for itself. */
    rd = NULL;
    EXPECT_OK(raftlet_node_ready(n, &rd));
    EXPECT_OK(raftlet_ready_soft_state(rd, &has_ss, &ss));
    CHECK(has_ss && ss.role == 1 && ss.leader_id == 0);
    EXPECT_OK(raftlet_ready_hard_state(rd, &has_hs, &hs));
    CHECK(has_hs && hs.term == 1 && hs.vote == 1 && hs.commit == 0);
    EXPECT_OK(raftlet_ready_must_sync(rd, &must_sync));
    CHECK(must_sync);
    process_ready(1, rd, false);
    /* The third: the leader, with its empty entry. */
    rd = NULL;
    EXPECT_OK(raftlet_node_ready(n, &rd));
    EXPECT_OK(raftlet_ready_soft_state(rd, &has_ss, &ss));
    CHECK(has_ss && ss.role == 2 && ss.leader_id == 1);
    EXPECT_OK(raftlet_ready_entry_count(rd, &n_ent));
    CHECK(n_ent == 1);
    raftlet_entry_view ev;
    EXPECT_OK(raftlet_ready_entry(rd, 0, &ev));
    CHECK(ev.index == 1 && ev.term == 1 && ev.entry_type == 0 && ev.data.len == 0 &&
          ev.data.ptr == NULL);
    ready_out_of_range(rd);
    process_ready(1, rd, false);
    settle();

    raftlet_status s;
    EXPECT_OK(raftlet_node_status(n, &s));
    CHECK(s.id == 1 && s.role == 2 && s.lead == 1 && s.vote == 1 && s.term == 1);
    CHECK(s.commit == 1 && s.applied == 1 && s.lead_transferee == 0);
    CHECK(s.progress_count == 1 && s.voters_count == 1 && s.learners_count == 0);
    /* The basic status is the same scalars, without the counts. */
    raftlet_basic_status bs;
    memset(&bs, 0x5A, sizeof bs);
    EXPECT_OK(raftlet_node_basic_status(n, &bs));
    CHECK(bs.id == s.id && bs.term == s.term && bs.vote == s.vote && bs.commit == s.commit);
    CHECK(bs.lead == s.lead && bs.role == s.role && bs.applied == s.applied);
    CHECK(bs.lead_transferee == s.lead_transferee);

    /* Propose, commit, apply. */
    EXPECT_OK(raftlet_node_propose(n, B("hello"), 5));
    EXPECT_OK(raftlet_node_has_ready(n, &has));
    CHECK(has);
    rd = NULL;
    EXPECT_OK(raftlet_node_ready(n, &rd));
    EXPECT_OK(raftlet_ready_entry_count(rd, &n_ent));
    CHECK(n_ent == 1);
    raftlet_entry_view hello;
    EXPECT_OK(raftlet_ready_entry(rd, 0, &hello));
    CHECK(hello.index == 2 && hello.entry_type == 0 && hello.term == 1);
    CHECK_BYTES(hello.data, "hello");
    EXPECT_OK(raftlet_ready_must_sync(rd, &must_sync));
    CHECK(must_sync);

    /* A ready given to another node is refused and stays live. */
    raftlet_config *cfg = NULL;
    raftlet_storage *st2 = NULL;
    raftlet_node *other = NULL;
    EXPECT_OK(raftlet_config_new(1, &cfg));
    EXPECT_OK(raftlet_storage_new_memory(&st2));
    EXPECT_OK(raftlet_storage_set_conf_state(st2, voters, 1, NULL, 0));
    EXPECT_OK(raftlet_node_new(cfg, st2, &other));
    EXPECT_RC(raftlet_node_advance(other, rd), RAFTLET_ERR_READY_FOREIGN);
    EXPECT_RC(raftlet_node_advance_append(other, rd), RAFTLET_ERR_READY_FOREIGN);
    EXPECT_OK(raftlet_ready_entry_count(rd, &n_ent));
    raftlet_node_free(other);
    raftlet_storage_free(st2);
    raftlet_config_free(cfg);

    /* Handle it and keep it: then it is stale. */
    process_ready(1, rd, true);
    ready_stale(rd);
    EXPECT_RC(raftlet_node_advance(n, rd), RAFTLET_ERR_READY_STALE); /* advanced twice */
    EXPECT_RC(raftlet_node_advance_append(n, rd), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_storage_append_ready(H[1].storage, rd), RAFTLET_ERR_READY_STALE);
    /* Views taken before the advance stay valid until the free. */
    CHECK_BYTES(hello.data, "hello");
    raftlet_ready_free(rd);
    settle();
    CHECK(H[1].applied_normal == 1);
    CHECK(H[1].last_len == 5 && memcmp(H[1].last_data, "hello", 5) == 0);
    EXPECT_OK(raftlet_node_status(n, &s));
    CHECK(s.commit == 2 && s.applied == 2);

    /* A committed entry seen through its own ready. */
    EXPECT_OK(raftlet_node_propose(n, B("world!"), 6));
    bool found = false;
    for (int i = 0; i < 5 && !found; i++) {
        EXPECT_OK(raftlet_node_has_ready(n, &has));
        if (!has) {
            break;
        }
        rd = NULL;
        H_OK(raftlet_node_ready(n, &rd));
        size_t nc = 0;
        H_OK(raftlet_ready_committed_entry_count(rd, &nc));
        for (size_t j = 0; j < nc; j++) {
            raftlet_entry_view c;
            H_OK(raftlet_ready_committed_entry(rd, j, &c));
            if (c.index == 3) {
                found = true;
                CHECK_BYTES(c.data, "world!");
                CHECK(c.entry_type == 0);
            }
        }
        process_ready(1, rd, false);
    }
    CHECK(found);
    settle();

    /* Empty proposals are fine too. */
    EXPECT_OK(raftlet_node_propose(n, NULL, 0));
    settle();

    /* read_index: answered with the context. */
    size_t reads = H[1].read_states;
    EXPECT_OK(raftlet_node_read_index(n, B("ctx-42"), 6));
    settle();
    EXPECT_OK(raftlet_node_status(n, &s));
    CHECK(H[1].read_states == reads + 1);
    CHECK(H[1].read_ctx_len == 6 && memcmp(H[1].read_ctx, "ctx-42", 6) == 0);
    CHECK(H[1].read_index == s.commit);
    /* Through the accessors directly. */
    EXPECT_OK(raftlet_node_read_index(n, B("again"), 5));
    EXPECT_OK(raftlet_node_has_ready(n, &has));
    CHECK(has);
    rd = NULL;
    EXPECT_OK(raftlet_node_ready(n, &rd));
    size_t n_rs = 0;
    EXPECT_OK(raftlet_ready_read_state_count(rd, &n_rs));
    CHECK(n_rs == 1);
    raftlet_read_state_view rs;
    EXPECT_OK(raftlet_ready_read_state(rd, 0, &rs));
    CHECK(rs.index == s.commit);
    CHECK_BYTES(rs.request_ctx, "again");
    ready_out_of_range(rd);
    process_ready(1, rd, true);
    CHECK_BYTES(rs.request_ctx, "again"); /* still valid after the advance */
    raftlet_ready_free(rd);

    /* Leader-only calls. */
    EXPECT_RC(raftlet_node_transfer_leader(n, 9), RAFTLET_ERR_TRANSFER_REFUSED);
    CHECK(strstr(raftlet_last_error_message(), "9") != NULL);
    EXPECT_OK(raftlet_node_transfer_leader(n, 1)); /* already the leader */
    EXPECT_OK(raftlet_node_report_unreachable(n, 9));
    EXPECT_OK(raftlet_node_report_snapshot(n, 9, true));
    EXPECT_OK(raftlet_node_forget_leader(n)); /* a no-op on the leader */
    EXPECT_OK(raftlet_node_advance_apply_to(n, s.commit));
    for (int i = 0; i < 30; i++) {
        EXPECT_OK(raftlet_node_tick(n));
    }
    settle();
    EXPECT_OK(raftlet_node_status(n, &s));
    CHECK(s.role == 2 && s.lead == 1);

    /* Progress. */
    size_t plen = 0;
    EXPECT_OK(raftlet_node_progress(n, NULL, 0, &plen));
    CHECK(plen == 1);
    raftlet_progress pr[3];
    memset(pr, 0, sizeof pr);
    EXPECT_OK(raftlet_node_progress(n, pr, 3, &plen));
    uint64_t first = 0, last = 0;
    EXPECT_OK(raftlet_storage_bounds(H[1].storage, &first, &last));
    CHECK(plen == 1 && pr[0].id == 1 && pr[0].match_index == last &&
          pr[0].next_index == last + 1 && !pr[0].is_learner && pr[0].pending_snapshot == 0);
    CHECK(pr[1].id == 0); /* nothing written past len */

    /* JSON status. */
    char *json = NULL;
    EXPECT_OK(raftlet_node_status_json(n, &json));
    CHECK(json != NULL);
    if (json) {
        CHECK(strstr(json, "\"id\":\"1\"") != NULL);
        CHECK(strstr(json, "\"raftState\":\"StateLeader\"") != NULL);
        CHECK(strstr(json, "\"voters\":[\"1\"]") != NULL);
        CHECK(json[0] == '{' && json[strlen(json) - 1] == '}');
    }
    raftlet_string_free(json);

    /* Snapshot and compaction of the applied log. */
    EXPECT_OK(raftlet_node_status(n, &s));
    uint64_t a = s.applied;
    CHECK(a >= 4 && a == last);
    EXPECT_OK(raftlet_storage_create_snapshot(H[1].storage, a, B("state"), 5));
    EXPECT_OK(raftlet_storage_compact(H[1].storage, a));
    EXPECT_OK(raftlet_storage_bounds(H[1].storage, &first, &last));
    CHECK(first == a + 1 && last == a);
    EXPECT_RC(raftlet_storage_create_snapshot(H[1].storage, a, NULL, 0),
              RAFTLET_ERR_SNAPSHOT_OUT_OF_DATE);
    EXPECT_RC(raftlet_storage_compact(H[1].storage, a), RAFTLET_ERR_COMPACTED);
    EXPECT_RC(raftlet_storage_compact(H[1].storage, a + 5), RAFTLET_ERR_UNAVAILABLE);
    /* The node goes on after compaction. */
    EXPECT_OK(raftlet_node_propose(n, B("after"), 5));
    settle();
    CHECK(H[1].last_len == 5 && memcmp(H[1].last_data, "after", 5) == 0);
    EXPECT_OK(raftlet_node_status(n, &s));
    CHECK(s.commit == a + 1 && s.applied == a + 1);
    reset_cluster();
}

/* Learners and conf changes on a single-voter leader. */
static void test_conf_changes(void) {
    reset_cluster();
    const uint64_t voters[] = {1};
    start_node(1, voters, 1, NULL, 0);
    raftlet_node *n = H[1].node;
    EXPECT_OK(raftlet_node_campaign(n));
    settle();
    uint8_t cc[64];
    size_t len;

    /* Add learner 2 (a node that never answers). */
    len = encode_cc(3, 2, cc, sizeof cc);
    EXPECT_OK(raftlet_node_propose_conf_change(n, cc, len, false));
    /* A second change while one is pending is refused. */
    size_t len3 = encode_cc(1, 2, cc + 32, 32);
    EXPECT_RC(raftlet_node_propose_conf_change(n, cc + 32, len3, false),
              RAFTLET_ERR_CONF_CHANGE_REFUSED);
    settle();
    CHECK(H[1].conf_changes == 1);
    raftlet_status s;
    EXPECT_OK(raftlet_node_status(n, &s));
    CHECK(s.voters_count == 1 && s.learners_count == 1 && s.progress_count == 2);
    /* Two election timeouts of check-quorum: the silent learner is inactive. */
    tick_all(25);
    raftlet_progress pr;
    CHECK(progress_of(n, 2, &pr));
    CHECK(pr.is_learner && !pr.recent_active && pr.match_index == 0);

    /* Promotion refused: the learner has not caught up. Nothing is appended. */
    uint64_t first, last_before, last_after;
    H_OK(raftlet_storage_bounds(H[1].storage, &first, &last_before));
    len = encode_cc(0, 2, cc, sizeof cc);
    EXPECT_RC(raftlet_node_propose_conf_change(n, cc, len, false),
              RAFTLET_ERR_PROMOTION_NOT_READY);
    raftlet_conf_change_single promote[1] = {{0, 2}};
    EXPECT_OK(raftlet_conf_change_v2_encode(0, promote, 1, NULL, 0, cc, sizeof cc, &len));
    EXPECT_RC(raftlet_node_propose_conf_change(n, cc, len, true),
              RAFTLET_ERR_PROMOTION_NOT_READY);
    /* A second learner with max_learners 1. */
    len = encode_cc(3, 3, cc, sizeof cc);
    EXPECT_RC(raftlet_node_propose_conf_change(n, cc, len, false),
              RAFTLET_ERR_TOO_MANY_LEARNERS);
    raftlet_conf_change_single add3[1] = {{3, 3}};
    EXPECT_OK(raftlet_conf_change_v2_encode(0, add3, 1, NULL, 0, cc, sizeof cc, &len));
    EXPECT_RC(raftlet_node_propose_conf_change(n, cc, len, true),
              RAFTLET_ERR_TOO_MANY_LEARNERS);
    /* Leaving a joint configuration that is not joint. */
    EXPECT_OK(raftlet_conf_change_v2_encode(0, NULL, 0, NULL, 0, cc, sizeof cc, &len));
    EXPECT_RC(raftlet_node_propose_conf_change(n, cc, len, true),
              RAFTLET_ERR_CONF_CHANGE_REFUSED);
    /* Malformed. */
    EXPECT_RC(raftlet_node_propose_conf_change(n, GARBAGE, sizeof GARBAGE, false),
              RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_node_propose_conf_change(n, GARBAGE, sizeof GARBAGE, true),
              RAFTLET_ERR_DECODE);
    EXPECT_RC(raftlet_node_propose_conf_change(n, WRONG_WIRE_TYPE, sizeof WRONG_WIRE_TYPE, true),
              RAFTLET_ERR_DECODE);
    settle();
    H_OK(raftlet_storage_bounds(H[1].storage, &first, &last_after));
    CHECK(last_after == last_before);
    EXPECT_OK(raftlet_node_status(n, &s));
    CHECK(s.voters_count == 1 && s.learners_count == 1);

    /* Removing the learner is accepted (v2, explicit joint then leave). */
    raftlet_conf_change_single rm[1] = {{1, 2}};
    EXPECT_OK(raftlet_conf_change_v2_encode(0, rm, 1, NULL, 0, cc, sizeof cc, &len));
    EXPECT_OK(raftlet_node_propose_conf_change(n, cc, len, true));
    settle();
    EXPECT_OK(raftlet_node_status(n, &s));
    CHECK(s.learners_count == 0 && s.progress_count == 1);
    /* Now learner 3 fits. */
    len = encode_cc(3, 3, cc, sizeof cc);
    EXPECT_OK(raftlet_node_propose_conf_change(n, cc, len, false));
    settle();
    EXPECT_OK(raftlet_node_status(n, &s));
    CHECK(s.learners_count == 1);
    reset_cluster();

    /* apply_conf_change directly on a node (as for a committed entry). */
    start_node(1, voters, 1, NULL, 0);
    n = H[1].node;
    uint8_t out[64];
    size_t out_len = 0;
    len = encode_cc(3, 7, cc, sizeof cc);
    /* Buffer too small: INVALID_ARG, the change applied, the length given. */
    memset(out, 0xAB, sizeof out);
    EXPECT_RC(raftlet_node_apply_conf_change(n, cc, len, false, out, 1, &out_len),
              RAFTLET_ERR_INVALID_ARG);
    CHECK(out_len > 1 && out[0] == 0xAB);
    EXPECT_OK(raftlet_node_status(n, &s));
    CHECK(s.learners_count == 1);
    /* Sizing and discarding calls. */
    size_t out_len2 = 0;
    len = encode_cc(2, 7, cc, sizeof cc); /* update node: no change */
    EXPECT_OK(raftlet_node_apply_conf_change(n, cc, len, false, NULL, 0, &out_len2));
    CHECK(out_len2 == out_len);
    EXPECT_OK(raftlet_node_apply_conf_change(n, cc, len, false, NULL, 0, NULL));
    EXPECT_OK(raftlet_node_apply_conf_change(n, cc, len, false, out, out_len2, NULL));
    EXPECT_OK(raftlet_node_apply_conf_change(n, cc, len, false, out, sizeof out, &out_len));
    CHECK(out_len == out_len2);
    /* The ConfState bytes are valid for the storage. */
    EXPECT_OK(raftlet_storage_set_conf_state_encoded(H[1].storage, out, out_len));
    /* Refused: leave a joint config that is not joint; unchanged. */
    EXPECT_OK(raftlet_conf_change_v2_encode(0, NULL, 0, NULL, 0, cc, sizeof cc, &len));
    out_len = 999;
    EXPECT_RC(raftlet_node_apply_conf_change(n, cc, len, true, out, sizeof out, &out_len),
              RAFTLET_ERR_CONF_CHANGE_REFUSED);
    CHECK(out_len == 999);
    /* Malformed. */
    EXPECT_RC(raftlet_node_apply_conf_change(n, GARBAGE, sizeof GARBAGE, false, out, sizeof out,
                                             &out_len),
              RAFTLET_ERR_DECODE);
    size_t tlen = 0;
    EXPECT_OK(raftlet_conf_change_encode(3, 8, B("ctx"), 3, cc, sizeof cc, &tlen));
    EXPECT_RC(raftlet_node_apply_conf_change(n, cc, tlen - 1, false, NULL, 0, NULL),
              RAFTLET_ERR_DECODE); /* truncated */
    EXPECT_RC(raftlet_node_apply_conf_change(n, WRONG_WIRE_TYPE, sizeof WRONG_WIRE_TYPE, true,
                                             NULL, 0, NULL),
              RAFTLET_ERR_DECODE);
    EXPECT_OK(raftlet_node_status(n, &s));
    CHECK(s.voters_count == 1 && s.learners_count == 1);
    /* v2 joint: enter (explicit) then leave. */
    raftlet_conf_change_single add9[1] = {{0, 9}};
    EXPECT_OK(raftlet_conf_change_v2_encode(2, add9, 1, NULL, 0, cc, sizeof cc, &len));
    EXPECT_OK(raftlet_node_apply_conf_change(n, cc, len, true, out, sizeof out, &out_len));
    EXPECT_OK(raftlet_node_status(n, &s));
    CHECK(s.voters_count == 2);
    EXPECT_OK(raftlet_conf_change_v2_encode(0, NULL, 0, NULL, 0, cc, sizeof cc, &len));
    EXPECT_OK(raftlet_node_apply_conf_change(n, cc, len, true, out, sizeof out, &out_len));
    reset_cluster();
}

static void test_bootstrap(void) {
    reset_cluster();
    H_OK(raftlet_storage_new_memory(&H[1].storage));
    raftlet_config *cfg = NULL;
    EXPECT_OK(raftlet_config_new(1, &cfg));
    EXPECT_OK(raftlet_node_new(cfg, H[1].storage, &H[1].node));
    raftlet_node *n = H[1].node;
    raftlet_status s;
    EXPECT_OK(raftlet_node_status(n, &s));
    CHECK(s.voters_count == 0);
    /* No voters. */
    EXPECT_RC(raftlet_node_bootstrap(n, NULL, 0, NULL, 0), RAFTLET_ERR_INVALID_STATE);
    const uint64_t learners[] = {2};
    EXPECT_RC(raftlet_node_bootstrap(n, NULL, 0, learners, 1), RAFTLET_ERR_INVALID_STATE);
    /* Ids that cannot be members, or a voter that is also a learner: refused
     * with nothing left behind (no ready), so a corrected call succeeds. */
    const uint64_t one_zero[] = {1, 0};
    const uint64_t zero_one[] = {0, 1};
    const uint64_t one_max[] = {1, UINT64_MAX};
    const uint64_t voters[] = {1};
    EXPECT_RC(raftlet_node_bootstrap(n, one_zero, 2, NULL, 0), RAFTLET_ERR_CONF_CHANGE_REFUSED);
    EXPECT_RC(raftlet_node_bootstrap(n, zero_one, 2, NULL, 0), RAFTLET_ERR_CONF_CHANGE_REFUSED);
    EXPECT_RC(raftlet_node_bootstrap(n, one_max, 2, NULL, 0), RAFTLET_ERR_CONF_CHANGE_REFUSED);
    EXPECT_RC(raftlet_node_bootstrap(n, voters, 1, voters, 1), RAFTLET_ERR_CONF_CHANGE_REFUSED);
    {
        bool refused_has = true;
        EXPECT_OK(raftlet_node_has_ready(n, &refused_has));
        CHECK(!refused_has);
        EXPECT_OK(raftlet_node_status(n, &s));
        CHECK(s.voters_count == 0 && s.term == 0 && s.commit == 0);
    }
    /* An empty storage: accepted. */
    EXPECT_OK(raftlet_node_bootstrap(n, voters, 1, learners, 1));
    bool has = false;
    EXPECT_OK(raftlet_node_has_ready(n, &has));
    CHECK(has);
    settle();
    EXPECT_OK(raftlet_node_status(n, &s));
    CHECK(s.voters_count == 1 && s.learners_count == 1 && s.commit == 2 && s.term == 1);
    CHECK(H[1].conf_changes == 2);
    /* Not twice. */
    EXPECT_RC(raftlet_node_bootstrap(n, voters, 1, NULL, 0), RAFTLET_ERR_INVALID_STATE);
    /* Nor on a non-empty storage with another node. */
    raftlet_node *again = NULL;
    EXPECT_OK(raftlet_node_new(cfg, H[1].storage, &again));
    EXPECT_RC(raftlet_node_bootstrap(again, voters, 1, NULL, 0), RAFTLET_ERR_INVALID_STATE);
    CHECK(strstr(raftlet_last_error_message(), "nonempty") != NULL);
    raftlet_node_free(again);
    raftlet_config_free(cfg);
    /* The bootstrapped node works. */
    EXPECT_OK(raftlet_node_campaign(n));
    settle();
    EXPECT_OK(raftlet_node_status(n, &s));
    CHECK(s.role == 2);
    EXPECT_OK(raftlet_node_propose(n, B("boot"), 4));
    settle();
    CHECK(H[1].applied_normal == 1 && memcmp(H[1].last_data, "boot", 4) == 0);
    reset_cluster();
}

static void test_three_nodes(void) {
    reset_cluster();
    const uint64_t voters[] = {1, 2, 3};
    for (uint64_t id = 1; id <= 3; id++) {
        start_node(id, voters, 3, NULL, 0);
    }
    H[3].async_apply = true; /* advance_append + advance_apply_to */
    uint64_t l = elect();
    CHECK(l != 0);
    if (!l) {
        reset_cluster();
        return;
    }
    /* Pick the lagging follower f and the other follower g. */
    uint64_t f = l == 1 ? 2 : 1;
    uint64_t g = 6 - l - f;

    for (int i = 0; i < 5; i++) {
        char d[16];
        int dl = snprintf(d, sizeof d, "a%d", i);
        EXPECT_OK(raftlet_node_propose(H[l].node, B(d), (size_t)dl));
        settle();
    }
    for (uint64_t id = 1; id <= 3; id++) {
        CHECK(H[id].applied_normal == 5);
    }
    /* A follower forwards proposals to the leader. */
    EXPECT_OK(raftlet_node_propose(H[g].node, B("via-g"), 5));
    settle();
    CHECK(H[l].applied_normal == 6 && memcmp(H[l].last_data, "via-g", 5) == 0);
    /* A follower's read_index goes to the leader and comes back. */
    EXPECT_OK(raftlet_node_read_index(H[g].node, B("g-read"), 6));
    settle();
    CHECK(H[g].read_states == 1 && H[g].read_ctx_len == 6 &&
          memcmp(H[g].read_ctx, "g-read", 6) == 0);

    /* f is cut off; the others go on. */
    cut[f] = true;
    for (int i = 0; i < 10; i++) {
        char d[16];
        int dl = snprintf(d, sizeof d, "b%d", i);
        EXPECT_OK(raftlet_node_propose(H[l].node, B(d), (size_t)dl));
        settle();
    }
    CHECK(H[l].applied_normal == 16 && H[g].applied_normal == 16);
    CHECK(H[f].applied_normal == 6);
    raftlet_status sl = status_of(l);
    /* The leader snapshots its applied state and compacts its log. */
    EXPECT_OK(raftlet_storage_create_snapshot(H[l].storage, sl.applied, B("snap-data"), 9));
    EXPECT_OK(raftlet_storage_compact(H[l].storage, sl.applied));
    uint64_t first = 0, last = 0;
    EXPECT_OK(raftlet_storage_bounds(H[l].storage, &first, &last));
    CHECK(first == sl.applied + 1);

    /* f returns: it is too far behind for the log, so it gets a MsgSnap. */
    cut[f] = false;
    for (int i = 0; i < 30 && H[f].snapshots == 0; i++) {
        tick_all(1);
    }
    CHECK(H[f].snapshots == 1);
    CHECK(H[f].snap_index == sl.applied);
    CHECK(H[f].snap_data_len == 9 && memcmp(H[f].snap_data, "snap-data", 9) == 0);
    CHECK(snaps_reported >= 1); /* raftlet_node_report_snapshot ran */
    tick_all(3);
    raftlet_status sf = status_of(f);
    sl = status_of(l);
    CHECK(sf.commit == sl.commit && sf.lead == l && sf.applied == sl.applied);
    CHECK(H[f].applied_index == sl.applied);
    raftlet_progress pf;
    CHECK(progress_of(H[l].node, f, &pf));
    CHECK(pf.state == 1 /* replicate */ && pf.match_index == sl.commit &&
          pf.pending_snapshot == 0 && !pf.is_learner);
    /* The async-apply host is current too. */
    raftlet_status s3 = status_of(3);
    CHECK(s3.applied == s3.commit && s3.commit == sl.commit);
    /* Every message's header decoded as its view said. */
    CHECK(msgs_seen > 0);
    CHECK(header_mismatches == 0);

    /* The encoded snapshot f received restores a fresh storage. */
    CHECK(H[f].snap_encoded != NULL && H[f].snap_encoded_len > 0);
    raftlet_storage *fresh = NULL;
    EXPECT_OK(raftlet_storage_new_memory(&fresh));
    EXPECT_OK(raftlet_storage_apply_snapshot(fresh, H[f].snap_encoded, H[f].snap_encoded_len));
    EXPECT_OK(raftlet_storage_bounds(fresh, &first, &last));
    CHECK(first == H[f].snap_index + 1 && last == H[f].snap_index);
    EXPECT_RC(raftlet_storage_apply_snapshot(fresh, H[f].snap_encoded, H[f].snap_encoded_len),
              RAFTLET_ERR_SNAPSHOT_OUT_OF_DATE);
    raftlet_config *cfg = NULL;
    EXPECT_OK(raftlet_config_new(f, &cfg));
    raftlet_node *restored = NULL;
    EXPECT_OK(raftlet_node_new(cfg, fresh, &restored));
    raftlet_status sr;
    EXPECT_OK(raftlet_node_status(restored, &sr));
    CHECK(sr.commit == H[f].snap_index && sr.voters_count == 3);
    raftlet_node_free(restored);
    raftlet_storage_free(fresh);
    raftlet_config_free(cfg);

    /* report_unreachable: the leader stops optimistic replication to g. */
    raftlet_progress pg;
    CHECK(progress_of(H[l].node, g, &pg) && pg.state == 1);
    EXPECT_OK(raftlet_node_report_unreachable(H[l].node, g));
    CHECK(progress_of(H[l].node, g, &pg) && pg.state == 0 /* probe */);
    tick_all(2);
    CHECK(progress_of(H[l].node, g, &pg) && pg.state == 1);

    /* forget_leader on a follower. */
    EXPECT_OK(raftlet_node_forget_leader(H[g].node));
    CHECK(status_of(g).lead == 0);
    tick_all(2); /* the next heartbeat brings it back */
    CHECK(status_of(g).lead == l);

    /* Transfers: to a non-member refused; to a follower, leadership moves. */
    EXPECT_RC(raftlet_node_transfer_leader(H[l].node, 9), RAFTLET_ERR_TRANSFER_REFUSED);
    EXPECT_OK(raftlet_node_transfer_leader(H[l].node, g));
    settle();
    for (int i = 0; i < 20 && status_of(g).role != 2; i++) {
        tick_all(1);
    }
    raftlet_status sg = status_of(g);
    sl = status_of(l);
    CHECK(sg.role == 2 && sg.lead == g);
    CHECK(sl.role == 0 && sl.lead == g);
    CHECK(sg.term > sf.term);
    /* Transfer through a follower: it forwards to the leader. */
    EXPECT_OK(raftlet_node_transfer_leader(H[f].node, l));
    settle();
    for (int i = 0; i < 20 && status_of(l).role != 2; i++) {
        tick_all(1);
    }
    CHECK(status_of(l).role == 2);
    /* The cluster still commits. */
    EXPECT_OK(raftlet_node_propose(H[l].node, B("end"), 3));
    settle();
    for (uint64_t id = 1; id <= 3; id++) {
        CHECK(H[id].last_len == 3 && memcmp(H[id].last_data, "end", 3) == 0);
    }
    CHECK(header_mismatches == 0);
    reset_cluster();
}

/* Runs a single-voter node's Ready loop over its storage until idle;
 * returns how many normal entries with data it applied. */
static size_t drain_disk(raftlet_node *n, raftlet_storage *st) {
    size_t applied = 0;
    bool has = false;
    for (H_OK(raftlet_node_has_ready(n, &has)); has; H_OK(raftlet_node_has_ready(n, &has))) {
        raftlet_ready *rd = NULL;
        H_OK(raftlet_node_ready(n, &rd));
        EXPECT_OK(raftlet_storage_append_ready(st, rd));
        size_t c = 0;
        H_OK(raftlet_ready_committed_entry_count(rd, &c));
        for (size_t i = 0; i < c; i++) {
            raftlet_entry_view e;
            H_OK(raftlet_ready_committed_entry(rd, i, &e));
            applied += e.entry_type == 0 && e.data.len > 0;
        }
        H_OK(raftlet_node_advance(n, rd));
        raftlet_ready_free(rd);
    }
    return applied;
}

/* The durable storage: the same handle type as a memory storage, a log
 * that survives the handles, a locked directory, group commit. */
static void test_disk_storage(void) {
    const char *dir = "build/c/test_disk_store";
    CHECK(system("rm -rf build/c/test_disk_store") == 0);
    raftlet_storage *st = NULL, *st2 = NULL, *other = NULL, *mem = NULL;
    EXPECT_RC(raftlet_storage_open(NULL, 1, &st), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_open(dir, 1, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_OK(raftlet_storage_open(dir, 1, &st));
    /* A second open of the directory is refused while the first lives. */
    EXPECT_RC(raftlet_storage_open(dir, 1, &other), RAFTLET_ERR_STORAGE);
    CHECK(other == NULL);
    CHECK(strstr(raftlet_last_error_message(), "locked") != NULL);
    EXPECT_RC(raftlet_storage_open_group(NULL, 2, &st2), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_open_group(st, 2, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_OK(raftlet_storage_new_memory(&mem));
    EXPECT_RC(raftlet_storage_open_group(mem, 2, &st2), RAFTLET_ERR_INVALID_ARG);
    EXPECT_OK(raftlet_storage_open_group(st, 2, &st2));

    /* Two single-voter groups in one store. */
    const uint64_t v1[] = {1}, v2[] = {2};
    EXPECT_OK(raftlet_storage_set_conf_state(st, v1, 1, NULL, 0));
    EXPECT_OK(raftlet_storage_set_conf_state(st2, v2, 1, NULL, 0));
    raftlet_config *c1 = NULL, *c2 = NULL;
    H_OK(raftlet_config_new(1, &c1));
    H_OK(raftlet_config_new(2, &c2));
    raftlet_node *n1 = NULL, *n2 = NULL;
    EXPECT_OK(raftlet_node_new(c1, st, &n1));
    EXPECT_OK(raftlet_node_new(c2, st2, &n2));
    EXPECT_OK(raftlet_node_campaign(n1));
    EXPECT_OK(raftlet_node_campaign(n2));
    drain_disk(n1, st);
    drain_disk(n2, st2);
    EXPECT_OK(raftlet_node_propose(n1, B("x=1"), 3));
    EXPECT_OK(raftlet_node_propose(n2, B("y=1"), 3));
    /* Group commit: both groups' Readies in one call, one sync. */
    raftlet_ready *r1 = NULL, *r2 = NULL;
    H_OK(raftlet_node_ready(n1, &r1));
    H_OK(raftlet_node_ready(n2, &r2));
    const raftlet_storage *pair[] = {st, st2};
    const raftlet_ready *rds[] = {r1, r2};
    const raftlet_storage *with_mem[] = {st, mem};
    EXPECT_RC(raftlet_storage_append_readies(NULL, rds, 2), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_append_readies(pair, NULL, 2), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_append_readies(with_mem, rds, 2), RAFTLET_ERR_INVALID_ARG);
    EXPECT_OK(raftlet_storage_append_readies(NULL, NULL, 0));
    EXPECT_OK(raftlet_storage_append_readies(pair, rds, 2));
    /* The ready-order checks of raftlet_storage_append_ready hold here too:
     * a ready persisted already, or twice in one call, is refused (and the
     * message names the element). */
    EXPECT_RC(raftlet_storage_append_readies(pair, rds, 2), RAFTLET_ERR_READY_STALE);
    CHECK(strstr(raftlet_last_error_message(), "element 0") != NULL);
    EXPECT_RC(raftlet_storage_append_ready(st, r1), RAFTLET_ERR_READY_STALE);
    H_OK(raftlet_node_advance(n1, r1));
    H_OK(raftlet_node_advance(n2, r2));
    EXPECT_RC(raftlet_storage_append_readies(pair, rds, 2), RAFTLET_ERR_READY_STALE);
    raftlet_ready_free(r1);
    raftlet_ready_free(r2);
    CHECK(drain_disk(n1, st) == 1);
    CHECK(drain_disk(n2, st2) == 1);
    uint64_t first = 0, last = 0;
    EXPECT_OK(raftlet_storage_bounds(st, &first, &last));
    CHECK(first == 1 && last == 2);
    raftlet_status s1;
    EXPECT_OK(raftlet_node_status(n1, &s1));
    CHECK(s1.commit == 2);
    /* One ready twice in one call: the second is refused, nothing written. */
    EXPECT_OK(raftlet_node_propose(n2, B("y=2"), 3));
    raftlet_ready *r3 = NULL;
    H_OK(raftlet_node_ready(n2, &r3));
    const raftlet_storage *same[] = {st2, st2};
    const raftlet_ready *twice[] = {r3, r3};
    EXPECT_RC(raftlet_storage_append_readies(same, twice, 2), RAFTLET_ERR_READY_STALE);
    CHECK(strstr(raftlet_last_error_message(), "element 1") != NULL);
    EXPECT_OK(raftlet_storage_bounds(st2, &first, &last));
    CHECK(first == 1 && last == 2);
    EXPECT_OK(raftlet_storage_append_readies(same, twice, 1));
    EXPECT_OK(raftlet_storage_bounds(st2, &first, &last));
    CHECK(last == 3);
    H_OK(raftlet_node_advance(n2, r3));
    raftlet_ready_free(r3);

    /* Everything goes away: the process restarts. */
    raftlet_node_free(n1);
    raftlet_node_free(n2);
    raftlet_storage_free(st);
    raftlet_storage_free(st2);
    st = st2 = NULL;
    EXPECT_OK(raftlet_storage_open(dir, 1, &st));
    EXPECT_OK(raftlet_storage_bounds(st, &first, &last));
    CHECK(first == 1 && last == 2);
    EXPECT_OK(raftlet_node_new(c1, st, &n1));
    raftlet_status s;
    EXPECT_OK(raftlet_node_status(n1, &s));
    CHECK(s.term == s1.term && s.vote == 1 && s.commit == 2);
    /* The log is back: the node hands its committed entries out again. */
    CHECK(drain_disk(n1, st) == 1);
    size_t snap_len = 0;
    EXPECT_OK(raftlet_storage_snapshot(st, NULL, 0, &snap_len));
    raftlet_node_free(n1);
    raftlet_storage_free(st);
    raftlet_storage_free(mem);
    raftlet_config_free(c1);
    raftlet_config_free(c2);
    CHECK(system("rm -rf build/c/test_disk_store") == 0);
}

/* The store's options: the defaults, refusals, and a store opened with a
 * small segment size (and every record written direct) that moves to new
 * segments, and opens again with the defaults. */
static void test_disk_storage_options(void) {
    const char *dir = "build/c/test_disk_opts";
    CHECK(system("rm -rf build/c/test_disk_opts") == 0);
    raftlet_storage_options o = raftlet_storage_options_default();
    CHECK(o.segment_size == 64u << 20);
    CHECK(o.rewrite_max_bytes == 16u << 20);
    CHECK(o.direct_min_bytes == 1u << 20);
    CHECK(o.read_cache_bytes == 64u << 20);
    raftlet_storage *st = NULL;
    EXPECT_RC(raftlet_storage_open_with(NULL, 1, &o, &st), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_open_with(dir, 1, NULL, &st), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_storage_open_with(dir, 1, &o, NULL), RAFTLET_ERR_NULL_ARG);
    raftlet_storage_options zero = o;
    zero.segment_size = 0;
    EXPECT_RC(raftlet_storage_open_with(dir, 1, &zero, &st), RAFTLET_ERR_INVALID_ARG);
    CHECK(st == NULL);
    o.segment_size = 4096;
    o.rewrite_max_bytes = 0;
    o.direct_min_bytes = 0;
    o.read_cache_bytes = 0;
    EXPECT_OK(raftlet_storage_open_with(dir, 1, &o, &st));
    const uint64_t v1[] = {1};
    EXPECT_OK(raftlet_storage_set_conf_state(st, v1, 1, NULL, 0));
    raftlet_config *c = NULL;
    H_OK(raftlet_config_new(1, &c));
    raftlet_node *n = NULL;
    EXPECT_OK(raftlet_node_new(c, st, &n));
    EXPECT_OK(raftlet_node_campaign(n));
    drain_disk(n, st);
    char payload[300];
    memset(payload, 'p', sizeof payload);
    size_t applied = 0;
    for (int i = 0; i < 40; i++) {
        EXPECT_OK(raftlet_node_propose(n, (const uint8_t *)payload, sizeof payload));
        applied += drain_disk(n, st);
    }
    CHECK(applied == 40);
    /* 40 records of 300 bytes do not fit one 4 KiB segment. */
    CHECK(system("test -e build/c/test_disk_opts/0000000000000002.log") == 0);
    uint64_t first = 0, last = 0;
    EXPECT_OK(raftlet_storage_bounds(st, &first, &last));
    raftlet_node_free(n);
    raftlet_storage_free(st);
    st = NULL;
    EXPECT_OK(raftlet_storage_open(dir, 1, &st));
    uint64_t first2 = 0, last2 = 0;
    EXPECT_OK(raftlet_storage_bounds(st, &first2, &last2));
    CHECK(first2 == first && last2 == last && last == 41);
    raftlet_storage_free(st);
    raftlet_config_free(c);
    CHECK(system("rm -rf build/c/test_disk_opts") == 0);
}

/* ------------------------------------------------------------------------ */
/* Host mistakes: error codes, and the node and storage left as they were    */
/* ------------------------------------------------------------------------ */

/* What a mistake must not move: term, vote, commit, role, applied, the
 * storage's log bounds and the configuration. */
typedef struct {
    raftlet_status st;
    uint64_t first, last;
    uint8_t cs[256];
    size_t cs_len;
} node_view;

static node_view view_of(raftlet_node *node, raftlet_storage *storage) {
    node_view v;
    memset(&v, 0, sizeof v);
    H_OK(raftlet_node_status(node, &v.st));
    H_OK(raftlet_storage_bounds(storage, &v.first, &v.last));
    H_OK(raftlet_node_conf_state(node, v.cs, sizeof v.cs, &v.cs_len));
    return v;
}

static bool same_view(const node_view *a, const node_view *b) {
    return a->st.term == b->st.term && a->st.vote == b->st.vote &&
           a->st.commit == b->st.commit && a->st.role == b->st.role &&
           a->st.lead == b->st.lead && a->st.applied == b->st.applied &&
           a->first == b->first && a->last == b->last && a->cs_len == b->cs_len &&
           memcmp(a->cs, b->cs, a->cs_len) == 0;
}

#define CHECK_UNMOVED(id, before)                                  \
    do {                                                           \
        node_view now_ = view_of(H[id].node, H[id].storage);       \
        CHECK(same_view(&now_, &(before)));                        \
    } while (0)

static size_t ready_entries(raftlet_ready *rd) {
    size_t n = 0;
    H_OK(raftlet_ready_entry_count(rd, &n));
    return n;
}

static size_t ready_committed(raftlet_ready *rd) {
    size_t n = 0;
    H_OK(raftlet_ready_committed_entry_count(rd, &n));
    return n;
}

/* A correct Ready loop still works: a proposal commits and is applied. */
static void check_still_works(uint64_t id, const char *data) {
    size_t applied = H[id].applied_normal;
    uint64_t term = status_of(id).term;
    EXPECT_OK(raftlet_node_propose(H[id].node, B(data), strlen(data)));
    settle();
    CHECK(H[id].applied_normal == applied + 1);
    CHECK(H[id].last_len == strlen(data) && memcmp(H[id].last_data, data, H[id].last_len) == 0);
    raftlet_status s = status_of(id);
    CHECK(s.term == term && s.role == 2 && s.applied == s.commit);
}

/* Readies persisted or advanced out of order, advanced before being
 * persisted, twice, or on the wrong node: each refused, nothing moved. */
static void test_ready_order_mistakes(void) {
    reset_cluster();
    const uint64_t voters[] = {1};
    start_node(1, voters, 1, NULL, 0);
    raftlet_node *n = H[1].node;
    raftlet_storage *s = H[1].storage;
    EXPECT_OK(raftlet_node_campaign(n));
    settle();
    CHECK(status_of(1).role == 2);

    /* Two readies in flight, one entry each, nothing committed yet. */
    EXPECT_OK(raftlet_node_propose(n, B("a"), 1));
    raftlet_ready *rd1 = NULL, *rd2 = NULL;
    EXPECT_OK(raftlet_node_ready(n, &rd1));
    EXPECT_OK(raftlet_node_propose(n, B("b"), 1));
    EXPECT_OK(raftlet_node_ready(n, &rd2));
    CHECK(ready_entries(rd1) == 1 && ready_entries(rd2) == 1);
    CHECK(ready_committed(rd1) == 0 && ready_committed(rd2) == 0);
    node_view v0 = view_of(n, s);

    /* Ready 2 before ready 1: its entry would leave a gap. */
    EXPECT_RC(raftlet_storage_append_ready(s, rd2), RAFTLET_ERR_UNAVAILABLE);
    CHECK_UNMOVED(1, v0);
    /* Advancing what is not persisted would make the node read back
     * entries that are not there. */
    EXPECT_RC(raftlet_node_advance(n, rd2), RAFTLET_ERR_READY_NOT_PERSISTED);
    EXPECT_RC(raftlet_node_advance_append(n, rd2), RAFTLET_ERR_READY_NOT_PERSISTED);
    EXPECT_RC(raftlet_node_advance(n, rd1), RAFTLET_ERR_READY_NOT_PERSISTED);
    CHECK(strstr(raftlet_last_error_message(), "storage") != NULL);
    CHECK_UNMOVED(1, v0);

    /* In order: fine. */
    EXPECT_OK(raftlet_storage_append_ready(s, rd1));
    EXPECT_OK(raftlet_storage_append_ready(s, rd2));
    node_view v1 = view_of(n, s);
    CHECK(v1.last == v0.last + 2 && v1.st.commit == v0.st.commit);
    /* Persisting ready 1 again would replace ready 2's entry under the
     * node; ready 2 again is refused too. */
    EXPECT_RC(raftlet_storage_append_ready(s, rd1), RAFTLET_ERR_READY_STALE);
    CHECK(strstr(raftlet_last_error_message(), "order") != NULL);
    EXPECT_RC(raftlet_storage_append_ready(s, rd2), RAFTLET_ERR_READY_STALE);
    CHECK_UNMOVED(1, v1);

    /* Advance 2 then 1: ready 1 is covered by ready 2. */
    EXPECT_OK(raftlet_node_advance_append(n, rd2));
    node_view v2 = view_of(n, s);
    CHECK(v2.st.commit == v1.last); /* its own acknowledgement counted */
    EXPECT_RC(raftlet_node_advance(n, rd1), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_node_advance_append(n, rd1), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_storage_append_ready(s, rd1), RAFTLET_ERR_READY_STALE);
    /* Twice: refused, with every accessor of the advanced ready. */
    EXPECT_RC(raftlet_node_advance(n, rd2), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_node_advance_append(n, rd2), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_storage_append_ready(s, rd2), RAFTLET_ERR_READY_STALE);
    ready_stale(rd2);
    CHECK_UNMOVED(1, v2);
    /* A covered ready stays readable. */
    raftlet_entry_view ev;
    EXPECT_OK(raftlet_ready_entry(rd1, 0, &ev));
    CHECK_BYTES(ev.data, "a");
    raftlet_ready_free(rd1);
    raftlet_ready_free(rd2);
    settle(); /* applies a and b */
    CHECK(H[1].applied_normal == 2);
    check_still_works(1, "after-order");

    /* A ready of a node freed before another was created (possibly at the
     * same address): refused by the new node and by any other. */
    raftlet_config *cfg = NULL;
    raftlet_storage *gone_st = NULL;
    raftlet_node *gone = NULL;
    H_OK(raftlet_config_new(1, &cfg));
    H_OK(raftlet_storage_new_memory(&gone_st));
    H_OK(raftlet_storage_set_conf_state(gone_st, voters, 1, NULL, 0));
    H_OK(raftlet_node_new(cfg, gone_st, &gone));
    H_OK(raftlet_node_campaign(gone));
    raftlet_ready *orphan = NULL;
    EXPECT_OK(raftlet_node_ready(gone, &orphan));
    raftlet_node_free(gone);
    raftlet_node *fresh = NULL;
    H_OK(raftlet_node_new(cfg, gone_st, &fresh));
    raftlet_node *same_address = fresh == gone ? fresh : NULL;
    node_view vf = view_of(fresh, gone_st);
    EXPECT_RC(raftlet_node_advance(fresh, orphan), RAFTLET_ERR_READY_FOREIGN);
    EXPECT_RC(raftlet_node_advance_append(fresh, orphan), RAFTLET_ERR_READY_FOREIGN);
    CHECK(strstr(raftlet_last_error_message(), "another node") != NULL);
    node_view vf2 = view_of(fresh, gone_st);
    CHECK(same_view(&vf, &vf2));
    node_view v3 = view_of(n, s);
    EXPECT_RC(raftlet_node_advance(n, orphan), RAFTLET_ERR_READY_FOREIGN);
    CHECK_UNMOVED(1, v3);
    /* It outlives its node, readable. */
    bool has_ss = false;
    raftlet_soft_state ss;
    EXPECT_OK(raftlet_ready_soft_state(orphan, &has_ss, &ss));
    CHECK(has_ss);
    raftlet_ready_free(orphan);
    if (same_address) {
        printf("#   (the new node reused the freed node's address)\n");
    }
    raftlet_node_free(fresh);
    raftlet_storage_free(gone_st);

    /* A storage restarted under a new node refuses the old node's ready. */
    raftlet_storage *rs = NULL;
    raftlet_node *old_node = NULL, *new_node = NULL;
    H_OK(raftlet_storage_new_memory(&rs));
    H_OK(raftlet_storage_set_conf_state(rs, voters, 1, NULL, 0));
    H_OK(raftlet_node_new(cfg, rs, &old_node));
    H_OK(raftlet_node_campaign(old_node));
    raftlet_ready *old_rd = NULL;
    EXPECT_OK(raftlet_node_ready(old_node, &old_rd));
    H_OK(raftlet_node_new(cfg, rs, &new_node));
    H_OK(raftlet_node_campaign(new_node));
    for (int i = 0; i < 10; i++) { /* the new node leads */
        bool has = false;
        H_OK(raftlet_node_has_ready(new_node, &has));
        if (!has) {
            break;
        }
        raftlet_ready *r = NULL;
        H_OK(raftlet_node_ready(new_node, &r));
        H_OK(raftlet_storage_append_ready(rs, r));
        H_OK(raftlet_node_advance(new_node, r));
        raftlet_ready_free(r);
    }
    node_view vn = view_of(new_node, rs);
    CHECK(vn.st.role == 2);
    EXPECT_RC(raftlet_storage_append_ready(rs, old_rd), RAFTLET_ERR_READY_STALE);
    CHECK(strstr(raftlet_last_error_message(), "older") != NULL);
    node_view vn2 = view_of(new_node, rs);
    CHECK(same_view(&vn, &vn2));
    raftlet_ready_free(old_rd);
    raftlet_node_free(old_node);
    raftlet_node_free(new_node);
    raftlet_storage_free(rs);
    raftlet_config_free(cfg);
    check_still_works(1, "after-restart");
    reset_cluster();
}

/* A follower's snapshot advanced before it is persisted. */
static void test_snapshot_not_persisted(void) {
    reset_cluster();
    const uint64_t voters[] = {1, 2};
    start_node(1, voters, 2, NULL, 0);
    raftlet_node *n = H[1].node;
    raftlet_storage *s = H[1].storage;
    pbuf snap = enc_snapshot(10, 2, voters, 2, "s");
    pbuf m = enc_msg(7 /* MsgSnap */, 1, 2, 2);
    pb_bytes(&m, 9, snap.b, snap.n);
    EXPECT_OK(raftlet_node_step(n, m.b, m.n));
    raftlet_ready *rd = NULL;
    EXPECT_OK(raftlet_node_ready(n, &rd));
    bool has = false;
    raftlet_snapshot_view sv;
    EXPECT_OK(raftlet_ready_snapshot(rd, &has, &sv));
    CHECK(has && sv.index == 10 && sv.term == 2);
    node_view v0 = view_of(n, s);
    EXPECT_RC(raftlet_node_advance(n, rd), RAFTLET_ERR_READY_NOT_PERSISTED);
    CHECK(strstr(raftlet_last_error_message(), "snapshot") != NULL);
    EXPECT_RC(raftlet_node_advance_append(n, rd), RAFTLET_ERR_READY_NOT_PERSISTED);
    CHECK_UNMOVED(1, v0);
    /* Persisted, it advances, and the node follows leader 2. */
    EXPECT_OK(raftlet_storage_append_ready(s, rd));
    EXPECT_OK(raftlet_node_advance(n, rd));
    raftlet_ready_free(rd);
    raftlet_status st = status_of(1);
    CHECK(st.term == 2 && st.commit == 10 && st.lead == 2);
    uint64_t first = 0, last = 0;
    EXPECT_OK(raftlet_storage_bounds(s, &first, &last));
    CHECK(first == 11 && last == 10);
    pbuf hb = enc_msg(8 /* MsgHeartbeat */, 1, 2, 2);
    pb_u64(&hb, 8, 10);
    EXPECT_OK(raftlet_node_step(n, hb.b, hb.n));
    rd = NULL;
    EXPECT_OK(raftlet_node_ready(n, &rd));
    size_t nm = 0;
    EXPECT_OK(raftlet_ready_message_count(rd, &nm));
    raftlet_message_view mv;
    CHECK(nm == 1 && raftlet_ready_message(rd, 0, &mv) == RAFTLET_OK && mv.msg_type == 9 &&
          mv.to == 2);
    EXPECT_OK(raftlet_storage_append_ready(s, rd));
    EXPECT_OK(raftlet_node_advance(n, rd));
    raftlet_ready_free(rd);
    reset_cluster();
}

/* A snapshot that reaches a follower between the taking of a ready and its
 * acknowledgement is not durable yet: the light ready of that
 * acknowledgement, written to the storage at once, carries no commit that
 * only the snapshot covers (it would lie beyond the stored log, and a
 * restart from the storage would be refused). The commit is written with
 * the snapshot's own ready. */
static void test_light_commit_waits_for_snapshot(void) {
    reset_cluster();
    const uint64_t voters[] = {1, 2};
    start_node(1, voters, 2, NULL, 0);
    raftlet_node *n = H[1].node;
    raftlet_storage *s = H[1].storage;
    pbuf hb = enc_msg(8 /* MsgHeartbeat */, 1, 2, 2);
    EXPECT_OK(raftlet_node_step(n, hb.b, hb.n));
    raftlet_ready *rd = NULL, *light = NULL;
    const raftlet_ready_flat *fl = NULL, *lfl = NULL;
    raftlet_result w = RAFTLET_PANIC;
    bool has = false;
    /* Taken and written, not yet acknowledged. */
    EXPECT_OK(raftlet_node_ready_flat(n, s, false, &rd, &fl, &w, &has));
    CHECK(rd != NULL && w == RAFTLET_OK);
    pbuf snap = enc_snapshot(10, 2, voters, 2, "s");
    pbuf m = enc_msg(7 /* MsgSnap */, 1, 2, 2);
    pb_bytes(&m, 9, snap.b, snap.n);
    EXPECT_OK(raftlet_node_step(n, m.b, m.n));
    w = RAFTLET_PANIC;
    EXPECT_OK(raftlet_node_advance_light(n, rd, s, &light, &lfl, &w, &has));
    CHECK(w == RAFTLET_OK && has);
    if (light != NULL) {
        EXPECT_OK(raftlet_node_advance(n, light));
        raftlet_ready_free(light);
    }
    raftlet_ready_free(rd);
    /* A crash now, before the snapshot's write: the node restarts from
     * what the storage holds. */
    raftlet_config *cfg = NULL;
    EXPECT_OK(raftlet_config_new(1, &cfg));
    raftlet_node *again = NULL;
    EXPECT_OK(raftlet_node_new(cfg, s, &again));
    raftlet_node_free(again);
    again = NULL;
    /* The snapshot's ready writes the commit with it. */
    rd = NULL;
    EXPECT_OK(raftlet_node_ready_flat(n, s, false, &rd, &fl, &w, &has));
    CHECK(rd != NULL && w == RAFTLET_OK);
    if (rd != NULL) {
        raftlet_snapshot_view sv;
        EXPECT_OK(raftlet_ready_snapshot(rd, &has, &sv));
        CHECK(has && sv.index == 10);
        raftlet_hard_state hs;
        EXPECT_OK(raftlet_ready_hard_state(rd, &has, &hs));
        CHECK(has && hs.commit == 10);
        EXPECT_OK(raftlet_node_advance(n, rd));
        raftlet_ready_free(rd);
    }
    EXPECT_OK(raftlet_config_set_applied(cfg, 10));
    EXPECT_OK(raftlet_node_new(cfg, s, &again));
    raftlet_node_free(again);
    raftlet_config_free(cfg);
    reset_cluster();
}

/* ------------------------------------------------------------------------ */
/* Hostile input through the C ABI: typed errors, nothing moved              */
/* ------------------------------------------------------------------------ */

#define MAX_BOUND ((UINT64_C(1) << 63) - 1) /* the largest term or index accepted */

/* Steps `m` into node `id` and checks it is refused as an invalid message
 * with the node, its storage and its ready queue left as they were. */
static void step_refused(uint64_t id, const pbuf *m, const char *why, int line) {
    node_view before = view_of(H[id].node, H[id].storage);
    bool had = false;
    H_OK(raftlet_node_has_ready(H[id].node, &had));
    raftlet_result rc = raftlet_node_step(H[id].node, m->b, m->n);
    check_rc_(rc, RAFTLET_ERR_INVALID_MESSAGE, __FILE__, line, why);
    node_view after = view_of(H[id].node, H[id].storage);
    bool has = had;
    H_OK(raftlet_node_has_ready(H[id].node, &has));
    check_(same_view(&before, &after) && has == had, __FILE__, line, why);
}
#define STEP_REFUSED(id, m) step_refused((id), &(m), #m, __LINE__)

/* A ConfChange (v1) with any type and id, bypassing the checked encoder. */
static pbuf raw_cc(uint64_t type, uint64_t node_id) {
    pbuf p = {{0}, 0};
    pb_u64(&p, 2, type);
    pb_u64(&p, 3, node_id);
    return p;
}

/* A ConfChangeV2 with one change, any transition, type and id. */
static pbuf raw_cc_v2(uint64_t transition, uint64_t type, uint64_t node_id) {
    pbuf single = {{0}, 0};
    pb_u64(&single, 1, type);
    pb_u64(&single, 2, node_id);
    pbuf p = {{0}, 0};
    pb_u64(&p, 1, transition);
    pb_bytes(&p, 2, single.b, single.n);
    return p;
}

static void cc_refused(uint64_t id, const pbuf *cc, bool v2, const char *why, int line) {
    node_view before = view_of(H[id].node, H[id].storage);
    raftlet_result rc = raftlet_node_propose_conf_change(H[id].node, cc->b, cc->n, v2);
    check_rc_(rc, RAFTLET_ERR_CONF_CHANGE_REFUSED, __FILE__, line, why);
    node_view after = view_of(H[id].node, H[id].storage);
    bool has = true;
    H_OK(raftlet_node_has_ready(H[id].node, &has));
    check_(same_view(&before, &after) && !has, __FILE__, line, why);
}
#define CC_REFUSED(id, cc, v2) cc_refused((id), &(cc), (v2), #cc, __LINE__)

static void test_hostile_input(void) {
    reset_cluster();
    /* Node 1 leads {1}; node 2 is a follower of {1, 2, 3} that knows no
     * leader yet. Both have nothing to do. */
    const uint64_t solo[] = {1};
    const uint64_t three[] = {1, 2, 3};
    start_node(1, solo, 1, NULL, 0);
    EXPECT_OK(raftlet_node_campaign(H[1].node));
    settle();
    CHECK(status_of(1).role == 2);
    EXPECT_OK(raftlet_node_propose(H[1].node, B("x"), 1));
    settle();
    start_node(2, three, 3, NULL, 0);
    cut[2] = true; /* node 2 hears from nobody but this test */
    settle();

    /* Terms past the bound, in every message type a peer sends in its own
     * name, to the leader and to the follower. */
    const int32_t peer_types[] = {3, 4, 5, 6, 7, 8, 9, 14, 16, 17, 18};
    const uint64_t bad_terms[] = {UINT64_MAX, UINT64_MAX - 1, MAX_BOUND + 1};
    for (size_t i = 0; i < sizeof peer_types / sizeof peer_types[0]; i++) {
        for (size_t j = 0; j < sizeof bad_terms / sizeof bad_terms[0]; j++) {
            pbuf to_leader = enc_msg(peer_types[i], 1, 2, bad_terms[j]);
            STEP_REFUSED(1, to_leader);
            pbuf to_follower = enc_msg(peer_types[i], 2, 3, bad_terms[j]);
            STEP_REFUSED(2, to_follower);
        }
    }
    /* Huge indexes, commits, log terms and reject hints. */
    const unsigned fields[] = {5 /* log_term */, 6 /* index */, 8 /* commit */,
                               11 /* reject_hint */};
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
        pbuf app = enc_msg(3 /* MsgApp */, 2, 3, 1);
        pb_u64(&app, fields[f], UINT64_MAX);
        STEP_REFUSED(2, app);
        pbuf resp = enc_msg(4 /* MsgAppResp */, 1, 2, 1);
        pb_u64(&resp, fields[f], MAX_BOUND + 1);
        STEP_REFUSED(1, resp);
        pbuf hb = enc_msg(8 /* MsgHeartbeat */, 2, 3, 1);
        pb_u64(&hb, fields[f], UINT64_MAX);
        STEP_REFUSED(2, hb);
    }
    /* An entry at a huge index or term, and a snapshot at a huge index. */
    pbuf far_entry = enc_entry(1, UINT64_MAX, "far");
    pbuf app_far = enc_msg(3, 2, 3, 1);
    pb_bytes(&app_far, 7, far_entry.b, far_entry.n);
    STEP_REFUSED(2, app_far);
    pbuf late_entry = enc_entry(UINT64_MAX, 1, "late");
    pbuf app_late = enc_msg(3, 2, 3, 1);
    pb_bytes(&app_late, 7, late_entry.b, late_entry.n);
    STEP_REFUSED(2, app_late);
    pbuf far_snap = enc_snapshot(UINT64_MAX, 1, three, 3, "s");
    pbuf snap_far = enc_msg(7 /* MsgSnap */, 2, 3, 1);
    pb_bytes(&snap_far, 9, far_snap.b, far_snap.n);
    STEP_REFUSED(2, snap_far);
    const uint64_t bad_members[] = {1, 0};
    pbuf zero_snap = enc_snapshot(10, 1, bad_members, 2, "s");
    pbuf snap_zero = enc_msg(7, 2, 3, 1);
    pb_bytes(&snap_zero, 9, zero_snap.b, zero_snap.n);
    STEP_REFUSED(2, snap_zero);
    /* Unknown message types. */
    const int32_t unknown_types[] = {24, 99, 1000, -1};
    for (size_t i = 0; i < sizeof unknown_types / sizeof unknown_types[0]; i++) {
        pbuf u = enc_msg(unknown_types[i], 2, 3, 1);
        STEP_REFUSED(2, u);
        pbuf ul = enc_msg(unknown_types[i], 1, 2, 1);
        STEP_REFUSED(1, ul);
    }
    /* Senders that cannot be members. */
    const uint64_t reserved[] = {0, UINT64_MAX, UINT64_MAX - 1};
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++) {
        pbuf vote = enc_msg(5 /* MsgVote */, 2, reserved[i], 1);
        STEP_REFUSED(2, vote);
        pbuf app = enc_msg(3, 2, reserved[i], 1);
        STEP_REFUSED(2, app);
        pbuf resp = enc_msg(9 /* MsgHeartbeatResp */, 1, reserved[i], 1);
        STEP_REFUSED(1, resp);
    }
    /* The bound itself is accepted (the follower takes the term). */
    pbuf at_bound = enc_msg(8, 2, 3, MAX_BOUND);
    EXPECT_OK(raftlet_node_step(H[2].node, at_bound.b, at_bound.n));
    CHECK(status_of(2).term == MAX_BOUND && status_of(2).lead == 3);
    settle();

    /* Conf changes no node can apply, on the leader: unknown types and
     * transitions, and ids that cannot be members. Nothing is appended. */
    pbuf bad_type = raw_cc(7, 2);
    CC_REFUSED(1, bad_type, false);
    pbuf neg_type = raw_cc(UINT64_MAX, 2); /* -1 as an int32 */
    CC_REFUSED(1, neg_type, false);
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++) {
        pbuf add = raw_cc(0 /* AddNode */, reserved[i]);
        CC_REFUSED(1, add, false);
        pbuf learner = raw_cc(3 /* AddLearnerNode */, reserved[i]);
        CC_REFUSED(1, learner, false);
        pbuf v2 = raw_cc_v2(0, 0, reserved[i]);
        CC_REFUSED(1, v2, true);
    }
    pbuf bad_transition = raw_cc_v2(3, 0, 2);
    CC_REFUSED(1, bad_transition, true);
    pbuf v2_bad_type = raw_cc_v2(0, 9, 2);
    CC_REFUSED(1, v2_bad_type, true);
    /* ... on the follower too, which would forward them. */
    pbuf follower_cc = raw_cc(0, UINT64_MAX);
    CC_REFUSED(2, follower_cc, false);

    /* Configurations no node can start from, through the storage. */
    const uint64_t max_minus_one[] = {1, UINT64_MAX - 1};
    const uint64_t twice[] = {1, 1};
    const uint64_t learner_zero[] = {0};
    node_view before = view_of(H[1].node, H[1].storage);
    EXPECT_RC(raftlet_storage_set_conf_state(H[1].storage, max_minus_one, 2, NULL, 0),
              RAFTLET_ERR_CONF_CHANGE_REFUSED);
    EXPECT_RC(raftlet_storage_set_conf_state(H[1].storage, twice, 2, NULL, 0),
              RAFTLET_ERR_CONF_CHANGE_REFUSED);
    EXPECT_RC(raftlet_storage_set_conf_state(H[1].storage, solo, 1, learner_zero, 1),
              RAFTLET_ERR_CONF_CHANGE_REFUSED);
    pbuf cs_max = enc_conf_state(max_minus_one, 2);
    EXPECT_RC(raftlet_storage_set_conf_state_encoded(H[1].storage, cs_max.b, cs_max.n),
              RAFTLET_ERR_CONF_CHANGE_REFUSED);
    CHECK_UNMOVED(1, before);
    /* A node restarted from that storage still has {1}. */
    raftlet_config *cfg = NULL;
    raftlet_node *again = NULL;
    H_OK(raftlet_config_new(1, &cfg));
    EXPECT_OK(raftlet_node_new(cfg, H[1].storage, &again));
    raftlet_status rs;
    EXPECT_OK(raftlet_node_status(again, &rs));
    CHECK(rs.voters_count == 1 && rs.learners_count == 0 && rs.commit == before.st.commit);
    raftlet_node_free(again);

    /* Bootstrap memberships that cannot be: refused, no trace. */
    raftlet_storage *bs = NULL;
    raftlet_node *bn = NULL;
    H_OK(raftlet_storage_new_memory(&bs));
    H_OK(raftlet_node_new(cfg, bs, &bn));
    node_view empty = view_of(bn, bs);
    const uint64_t max_voter[] = {1, UINT64_MAX};
    const uint64_t learner_max[] = {UINT64_MAX - 1};
    EXPECT_RC(raftlet_node_bootstrap(bn, max_minus_one, 2, NULL, 0),
              RAFTLET_ERR_CONF_CHANGE_REFUSED);
    EXPECT_RC(raftlet_node_bootstrap(bn, max_voter, 2, NULL, 0), RAFTLET_ERR_CONF_CHANGE_REFUSED);
    EXPECT_RC(raftlet_node_bootstrap(bn, twice, 2, NULL, 0), RAFTLET_ERR_CONF_CHANGE_REFUSED);
    EXPECT_RC(raftlet_node_bootstrap(bn, solo, 1, learner_zero, 1),
              RAFTLET_ERR_CONF_CHANGE_REFUSED);
    EXPECT_RC(raftlet_node_bootstrap(bn, solo, 1, learner_max, 1),
              RAFTLET_ERR_CONF_CHANGE_REFUSED);
    node_view still_empty = view_of(bn, bs);
    CHECK(same_view(&empty, &still_empty));
    bool has = true;
    EXPECT_OK(raftlet_node_has_ready(bn, &has));
    CHECK(!has);
    /* A correct bootstrap then works. */
    EXPECT_OK(raftlet_node_bootstrap(bn, solo, 1, NULL, 0));
    EXPECT_OK(raftlet_node_has_ready(bn, &has));
    CHECK(has);
    raftlet_node_free(bn);
    raftlet_storage_free(bs);
    raftlet_config_free(cfg);

    /* The leader goes on. */
    check_still_works(1, "after-hostile");
    reset_cluster();
}

/* ------------------------------------------------------------------------ */
/* The learner lifecycle: learner-first membership, automatic and standby   */
/* promotion, weak reads, the leader's view of its learners                 */
/* ------------------------------------------------------------------------ */

static raftlet_membership_event lc_events[16];
static size_t lc_event_count;
static uint64_t lc_event_node;

/* A node whose config turns on the lifecycle features under test. */
static void lc_start_node(uint64_t id, const uint64_t *voters, size_t nv, const uint64_t *learners,
                          size_t nl, bool auto_promote, bool standby) {
    raftlet_config *cfg = NULL;
    H_OK(raftlet_config_new(id, &cfg));
    H_OK(raftlet_config_set_election_tick(cfg, 10));
    H_OK(raftlet_config_set_heartbeat_tick(cfg, 1));
    H_OK(raftlet_config_set_auto_promote(cfg, auto_promote));
    H_OK(raftlet_config_set_promote_min_active_rounds(cfg, 2));
    H_OK(raftlet_config_set_standby_promotion(cfg, standby));
    H_OK(raftlet_config_set_standby_dead_rounds(cfg, 2));
    H_OK(raftlet_config_set_learner_forwards_proposals(cfg, false));
    H_OK(raftlet_config_set_seed(cfg, 100 + id));
    H_OK(raftlet_storage_new_memory(&H[id].storage));
    if (nv > 0) {
        H_OK(raftlet_storage_set_conf_state(H[id].storage, voters, nv, learners, nl));
    }
    H_OK(raftlet_node_new(cfg, H[id].storage, &H[id].node));
    raftlet_config_free(cfg);
}

/* settle(), recording every membership event a ready carries. */
static void lc_settle(void) {
    for (int round = 0; round < 10000; round++) {
        int work = 0;
        for (uint64_t id = 1; id <= MAXN; id++) {
            bool has = false;
            if (!H[id].node) {
                continue;
            }
            H_OK(raftlet_node_has_ready(H[id].node, &has));
            if (!has) {
                continue;
            }
            raftlet_ready *rd = NULL;
            H_OK(raftlet_node_ready(H[id].node, &rd));
            size_t n = 0;
            H_OK(raftlet_ready_membership_event_count(rd, &n));
            for (size_t i = 0; i < n; i++) {
                if (lc_event_count < 16) {
                    H_OK(raftlet_ready_membership_event(rd, i, &lc_events[lc_event_count++]));
                    lc_event_node = id;
                }
            }
            process_ready(id, rd, false);
            work = 1;
        }
        size_t len = mbox_len;
        deliver();
        if (!work && len == 0) {
            return;
        }
    }
    g_failed++;
    fprintf(stderr, "%s:%d: [%s] the cluster did not settle\n", __FILE__, __LINE__, g_test);
}

static void lc_tick(unsigned ticks) {
    for (unsigned t = 0; t < ticks; t++) {
        for (uint64_t id = 1; id <= MAXN; id++) {
            if (H[id].node && !cut[id]) {
                H_OK(raftlet_node_tick(H[id].node));
            }
        }
        lc_settle();
    }
}

static void test_learner_config(void) {
    EXPECT_RC(raftlet_config_set_learner_first(NULL, true), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_auto_promote(NULL, true), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_promote_min_active_rounds(NULL, 3), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_standby_promotion(NULL, true), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_standby_dead_rounds(NULL, 3), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_config_set_learner_forwards_proposals(NULL, true), RAFTLET_ERR_NULL_ARG);

    raftlet_config *cfg = NULL;
    EXPECT_OK(raftlet_config_new(1, &cfg));
    EXPECT_OK(raftlet_config_set_learner_first(cfg, false));
    EXPECT_OK(raftlet_config_set_auto_promote(cfg, true));
    EXPECT_OK(raftlet_config_set_promote_min_active_rounds(cfg, 5));
    EXPECT_OK(raftlet_config_set_standby_promotion(cfg, true));
    EXPECT_OK(raftlet_config_set_standby_dead_rounds(cfg, 4));
    EXPECT_OK(raftlet_config_set_learner_forwards_proposals(cfg, false));
    EXPECT_OK(raftlet_config_validate(cfg));
    /* Rounds are 32-bit: a larger value is refused and changes nothing. */
    EXPECT_RC(raftlet_config_set_promote_min_active_rounds(cfg, (uint64_t)UINT32_MAX + 1),
              RAFTLET_ERR_INVALID_ARG);
    EXPECT_RC(raftlet_config_set_standby_dead_rounds(cfg, (uint64_t)UINT32_MAX + 1),
              RAFTLET_ERR_INVALID_ARG);
    EXPECT_OK(raftlet_config_validate(cfg));
    /* Both promotions are measured in check-quorum rounds. */
    EXPECT_OK(raftlet_config_set_check_quorum(cfg, false));
    EXPECT_RC(raftlet_config_validate(cfg), RAFTLET_ERR_CONFIG_INVALID);
    CHECK(strstr(raftlet_last_error_message(), "auto_promote") != NULL);
    EXPECT_OK(raftlet_config_set_auto_promote(cfg, false));
    EXPECT_RC(raftlet_config_validate(cfg), RAFTLET_ERR_CONFIG_INVALID);
    CHECK(strstr(raftlet_last_error_message(), "standby_promotion") != NULL);
    EXPECT_OK(raftlet_config_set_standby_promotion(cfg, false));
    EXPECT_OK(raftlet_config_validate(cfg));
    EXPECT_OK(raftlet_config_set_check_quorum(cfg, true));
    EXPECT_OK(raftlet_config_set_promote_min_active_rounds(cfg, 0));
    EXPECT_RC(raftlet_config_validate(cfg), RAFTLET_ERR_CONFIG_INVALID);
    CHECK(strstr(raftlet_last_error_message(), "promote_min_active_rounds") != NULL);
    EXPECT_OK(raftlet_config_set_promote_min_active_rounds(cfg, 1));
    EXPECT_OK(raftlet_config_set_standby_dead_rounds(cfg, 1));
    EXPECT_RC(raftlet_config_validate(cfg), RAFTLET_ERR_CONFIG_INVALID);
    CHECK(strstr(raftlet_last_error_message(), "standby_dead_rounds") != NULL);
    EXPECT_OK(raftlet_config_set_standby_dead_rounds(cfg, 2));
    EXPECT_OK(raftlet_config_validate(cfg));

    /* At run time: turning either on without check-quorum is refused. */
    EXPECT_OK(raftlet_config_set_check_quorum(cfg, false));
    raftlet_storage *st = NULL;
    EXPECT_OK(raftlet_storage_new_memory(&st));
    const uint64_t voters[] = {1};
    EXPECT_OK(raftlet_storage_set_conf_state(st, voters, 1, NULL, 0));
    raftlet_node *node = NULL;
    EXPECT_OK(raftlet_node_new(cfg, st, &node));
    EXPECT_RC(raftlet_node_set_auto_promote(node, true), RAFTLET_ERR_CONFIG_INVALID);
    EXPECT_RC(raftlet_node_set_standby_promotion(node, true), RAFTLET_ERR_CONFIG_INVALID);
    EXPECT_OK(raftlet_node_set_auto_promote(node, false));
    EXPECT_OK(raftlet_node_set_standby_promotion(node, false));
    EXPECT_RC(raftlet_node_set_auto_promote(NULL, false), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_set_standby_promotion(NULL, false), RAFTLET_ERR_NULL_ARG);
    /* learner_first off: add_member proposes a voter (refused here: no leader). */
    EXPECT_RC(raftlet_node_add_member(node, 2, NULL, 0), RAFTLET_ERR_PROPOSAL_DROPPED);
    raftlet_node_free(node);
    raftlet_storage_free(st);
    raftlet_config_free(cfg);
}

static void test_learner_auto_promotion(void) {
    reset_cluster();
    lc_event_count = 0;
    const uint64_t voters[] = {1};
    lc_start_node(1, voters, 1, NULL, 0, true, false);
    raftlet_node *n = H[1].node;
    EXPECT_OK(raftlet_node_campaign(n));
    lc_settle();
    CHECK(status_of(1).role == 2);
    EXPECT_OK(raftlet_node_propose(n, B("x=1"), 3));
    lc_settle();

    /* Weak read on the leader: its applied index, commit and itself. */
    raftlet_local_read lr;
    memset(&lr, 0, sizeof lr);
    EXPECT_OK(raftlet_node_read_local(n, &lr));
    CHECK(lr.applied == H[1].applied_index && lr.commit >= lr.applied && lr.leader == 1);
    EXPECT_RC(raftlet_node_read_local(n, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_read_local(NULL, &lr), RAFTLET_ERR_NULL_ARG);

    /* No learners yet. */
    size_t count = 99;
    EXPECT_OK(raftlet_node_learner_count(n, &count));
    CHECK(count == 0);
    raftlet_learner_status ls;
    EXPECT_RC(raftlet_node_learner_status(n, 0, &ls), RAFTLET_ERR_INVALID_ARG);
    EXPECT_RC(raftlet_node_learner_count(n, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_learner_count(NULL, &count), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_learner_status(n, 0, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_learner_status(NULL, 0, &ls), RAFTLET_ERR_NULL_ARG);

    /* add_member: a learner first, whatever the host asks. */
    EXPECT_RC(raftlet_node_add_member(NULL, 2, NULL, 0), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_add_member(n, 2, NULL, 4), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_add_member(n, 1, NULL, 0), RAFTLET_ERR_CONF_CHANGE_REFUSED);
    EXPECT_OK(raftlet_node_add_member(n, 2, B("10.0.0.2:7000"), 13));
    lc_settle();
    raftlet_status s = status_of(1);
    CHECK(s.voters_count == 1 && s.learners_count == 1);
    EXPECT_RC(raftlet_node_add_member(n, 2, NULL, 0), RAFTLET_ERR_CONF_CHANGE_REFUSED);

    /* The learner has not answered (it does not exist yet): not promotable. */
    EXPECT_OK(raftlet_node_learner_count(n, &count));
    CHECK(count == 1);
    EXPECT_OK(raftlet_node_learner_status(n, 0, &ls));
    CHECK(ls.id == 2 && ls.lag > 0 && ls.active_rounds == 0);
    CHECK(ls.not_promotable != RAFTLET_PROMOTABLE);
    EXPECT_RC(raftlet_node_learner_status(n, 1, &ls), RAFTLET_ERR_INVALID_ARG);
    char *json = NULL;
    EXPECT_OK(raftlet_node_status_json(n, &json));
    CHECK(json && strstr(json, "\"learnerStatus\":[{\"id\":\"2\"") != NULL);
    CHECK(json && strstr(json, "\"promotable\":false") != NULL);
    raftlet_string_free(json);

    /* Auto-promotion off: the learner catches up but stays a learner. */
    EXPECT_OK(raftlet_node_set_auto_promote(n, false));
    /* The new member boots with the configuration that adds it. */
    const uint64_t as_learner[] = {2};
    lc_start_node(2, voters, 1, as_learner, 1, true, false);
    lc_tick(60);
    CHECK(lc_event_count == 0);
    s = status_of(1);
    CHECK(s.voters_count == 1 && s.learners_count == 1);
    EXPECT_OK(raftlet_node_learner_status(n, 0, &ls));
    CHECK(ls.id == 2 && ls.lag == 0 && ls.state == 1 && ls.active_rounds >= 2);
    CHECK(ls.not_promotable == RAFTLET_PROMOTABLE);
    CHECK(ls.not_promotable_have == 0 && ls.not_promotable_need == 0);
    json = NULL;
    EXPECT_OK(raftlet_node_status_json(n, &json));
    CHECK(json && strstr(json, "\"promotable\":true,\"notPromotable\":null") != NULL);
    raftlet_string_free(json);

    /* The learner's weak read reports its applied index and its leader. */
    EXPECT_OK(raftlet_node_read_local(H[2].node, &lr));
    CHECK(lr.applied == H[2].applied_index && lr.applied > 0 && lr.leader == 1);
    /* This learner refuses writes (learner_forwards_proposals off). */
    EXPECT_RC(raftlet_node_propose(H[2].node, B("w"), 1), RAFTLET_ERR_PROPOSAL_DROPPED);
    /* A learner reports no learners of its own. */
    EXPECT_OK(raftlet_node_learner_count(H[2].node, &count));
    CHECK(count == 0);

    /* On again: the leader promotes it once, by itself, and says so. */
    EXPECT_OK(raftlet_node_set_auto_promote(n, true));
    lc_tick(40);
    CHECK(lc_event_count == 1);
    CHECK(lc_event_node == 1);
    CHECK(lc_events[0].kind == RAFTLET_MEMBERSHIP_PROMOTION_PROPOSED);
    CHECK(lc_events[0].id == 2 && lc_events[0].promoted == 2 && lc_events[0].demoted == 0);
    CHECK(lc_events[0].index > 0 && lc_events[0].index <= H[1].applied_index);
    s = status_of(1);
    CHECK(s.voters_count == 2 && s.learners_count == 0 && s.role == 2);
    EXPECT_OK(raftlet_node_learner_count(n, &count));
    CHECK(count == 0);

    /* The event accessors check their arguments. */
    raftlet_ready *rd = NULL;
    EXPECT_OK(raftlet_node_propose(n, B("y"), 1));
    EXPECT_OK(raftlet_node_ready(n, &rd));
    size_t ne = 99;
    EXPECT_OK(raftlet_ready_membership_event_count(rd, &ne));
    CHECK(ne == 0);
    raftlet_membership_event ev;
    EXPECT_RC(raftlet_ready_membership_event(rd, 0, &ev), RAFTLET_ERR_INVALID_ARG);
    EXPECT_RC(raftlet_ready_membership_event(rd, 0, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_membership_event(NULL, 0, &ev), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_membership_event_count(rd, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_membership_event_count(NULL, &ne), RAFTLET_ERR_NULL_ARG);
    process_ready(1, rd, true);
    EXPECT_RC(raftlet_ready_membership_event_count(rd, &ne), RAFTLET_ERR_READY_STALE);
    EXPECT_RC(raftlet_ready_membership_event(rd, 0, &ev), RAFTLET_ERR_READY_STALE);
    raftlet_ready_free(rd);
    reset_cluster();
}

static void test_learner_standby(void) {
    reset_cluster();
    lc_event_count = 0;
    const uint64_t voters[] = {1, 2, 3};
    const uint64_t learners[] = {4};
    for (uint64_t id = 1; id <= 4; id++) {
        lc_start_node(id, voters, 3, learners, 1, false, true);
    }
    EXPECT_OK(raftlet_node_campaign(H[1].node));
    lc_settle();
    CHECK(status_of(1).role == 2);
    EXPECT_OK(raftlet_node_propose(H[1].node, B("a"), 1));
    lc_tick(30); /* the standby answers for a few rounds */
    CHECK(lc_event_count == 0);

    /* Voter 3 dies: the standby replaces it in one joint change. */
    cut[3] = true;
    for (int t = 0; t < 200 && lc_event_count == 0; t++) {
        lc_tick(1);
        /* 1 and 2 stay a quorum of the configuration at every step. */
        CHECK(status_of(1).role == 2);
    }
    lc_tick(30);
    CHECK(lc_event_count == 1);
    CHECK(lc_events[0].kind == RAFTLET_MEMBERSHIP_STANDBY_SWAP_PROPOSED);
    CHECK(lc_events[0].id == 4 && lc_events[0].promoted == 4 && lc_events[0].demoted == 3);
    CHECK(lc_events[0].index > 0);
    raftlet_status s = status_of(1);
    CHECK(s.role == 2 && s.voters_count == 3 && s.learners_count == 1);
    size_t count = 0;
    raftlet_learner_status ls;
    EXPECT_OK(raftlet_node_learner_count(H[1].node, &count));
    CHECK(count == 1);
    EXPECT_OK(raftlet_node_learner_status(H[1].node, 0, &ls));
    CHECK(ls.id == 3 && !ls.recent_active);
    CHECK(ls.not_promotable == RAFTLET_NOT_PROMOTABLE_LAGGING ||
          ls.not_promotable == RAFTLET_NOT_PROMOTABLE_NOT_ACTIVE_LONG_ENOUGH);
    if (ls.not_promotable == RAFTLET_NOT_PROMOTABLE_NOT_ACTIVE_LONG_ENOUGH) {
        CHECK(ls.not_promotable_have == 0 && ls.not_promotable_need == 2);
    }
    reset_cluster();
}

/* A fresh cluster of voters 1, 2 and 3 with an elected leader: its id, or
 * 0 (a failed check, the cluster reset) when none was elected. */
static uint64_t three_with_leader(void) {
    reset_cluster();
    const uint64_t voters[] = {1, 2, 3};
    for (uint64_t id = 1; id <= 3; id++) {
        start_node(id, voters, 3, NULL, 0);
    }
    uint64_t l = elect();
    CHECK(l != 0);
    if (!l) {
        reset_cluster();
    }
    return l;
}

/* The calls that do many calls' work in one crossing: raftlet_ready_view
 * (a whole ready as flat arrays), raftlet_node_propose_batch,
 * raftlet_node_step_batch and raftlet_tick_many. */
static void test_batch_calls(void) {
    uint64_t l = three_with_leader();
    if (!l) {
        return;
    }
    raftlet_node *ln = H[l].node;
    uint64_t f = l == 1 ? 2 : 1;

    /* propose_batch: bad input is refused with nothing proposed. */
    raftlet_status before = status_of(l);
    raftlet_bytes bad[2] = {{B("x"), 1}, {NULL, 3}};
    EXPECT_RC(raftlet_node_propose_batch(NULL, bad, 1), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_propose_batch(ln, NULL, 2), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_propose_batch(ln, bad, 2), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_propose_batch(ln, NULL, 0), RAFTLET_ERR_PROPOSAL_DROPPED);
    bool has = true;
    EXPECT_OK(raftlet_node_has_ready(ln, &has));
    CHECK(!has);
    CHECK(status_of(l).commit == before.commit);

    /* Three payloads (one empty) in one proposal. */
    raftlet_bytes ps[3] = {{B("one"), 3}, {NULL, 0}, {B("three"), 5}};
    EXPECT_OK(raftlet_node_propose_batch(ln, ps, 3));
    raftlet_ready *rd = NULL;
    EXPECT_OK(raftlet_node_ready(ln, &rd));
    raftlet_ready_flat fl;
    EXPECT_RC(raftlet_ready_view(NULL, &fl), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_ready_view(rd, NULL), RAFTLET_ERR_NULL_ARG);
    memset(&fl, 0x5A, sizeof fl);
    EXPECT_OK(raftlet_ready_view(rd, &fl));
    /* The flat view says what the accessors say, pointer for pointer. */
    size_t n = 0;
    EXPECT_OK(raftlet_ready_entry_count(rd, &n));
    CHECK(fl.entry_count == n && n == 3);
    for (size_t i = 0; i < n && i < fl.entry_count; i++) {
        raftlet_entry_view e;
        EXPECT_OK(raftlet_ready_entry(rd, i, &e));
        CHECK(fl.entries[i].index == e.index && fl.entries[i].term == e.term);
        CHECK(fl.entries[i].entry_type == e.entry_type);
        CHECK(fl.entries[i].data.ptr == e.data.ptr && fl.entries[i].data.len == e.data.len);
    }
    if (fl.entry_count == 3) {
        CHECK_BYTES(fl.entries[0].data, "one");
        CHECK(fl.entries[1].data.len == 0 && fl.entries[1].data.ptr == NULL);
        CHECK_BYTES(fl.entries[2].data, "three");
    }
    EXPECT_OK(raftlet_ready_all_message_count(rd, &n));
    CHECK(fl.message_count == n && n == 2); /* one append to each follower */
    size_t at_once = 0;
    EXPECT_OK(raftlet_ready_message_count(rd, &at_once));
    CHECK(fl.persisted_message_start == at_once);
    for (size_t i = 0; i < n && i < fl.message_count; i++) {
        raftlet_message_view m;
        EXPECT_OK(raftlet_ready_all_message(rd, i, &m));
        CHECK(fl.messages[i].to == m.to && fl.messages[i].from == m.from);
        CHECK(fl.messages[i].msg_type == m.msg_type && fl.messages[i].msg_type == 3);
        CHECK(fl.messages[i].data.ptr == m.data.ptr && fl.messages[i].data.len == m.data.len);
    }
    bool hh = false;
    raftlet_hard_state hs;
    EXPECT_OK(raftlet_ready_hard_state(rd, &hh, &hs));
    CHECK(fl.has_hard_state == hh);
    bool ms = false;
    EXPECT_OK(raftlet_ready_must_sync(rd, &ms));
    CHECK(fl.must_sync == ms && ms);
    CHECK(!fl.has_snapshot && !fl.has_soft_state);
    CHECK(fl.committed_entry_count == 0 && fl.committed_entries == NULL);
    CHECK(fl.read_state_count == 0 && fl.read_states == NULL);
    CHECK(fl.membership_event_count == 0);
    /* A second call gives the same arrays (built once). */
    raftlet_ready_flat fl2;
    EXPECT_OK(raftlet_ready_view(rd, &fl2));
    CHECK(fl2.entries == fl.entries && fl2.messages == fl.messages);
    process_ready(l, rd, true);
    /* Advanced: the call is refused, but the views taken stay readable
     * until the ready is freed (ASan checks the reads). */
    EXPECT_RC(raftlet_ready_view(rd, &fl2), RAFTLET_ERR_READY_STALE);
    if (fl.entry_count == 3) {
        CHECK_BYTES(fl.entries[2].data, "three");
    }
    raftlet_ready_free(rd);

    /* step_batch: the leader's appends to f, with garbage in the middle;
     * every good message is stepped, the bad one gets its code. */
    raftlet_bytes batch[MAX_MSGS];
    size_t nb = 0, bad_at = 0;
    for (size_t i = 0; i < mbox_len; i++) {
        if (mbox[i].to == f) {
            if (nb == 1) {
                bad_at = nb;
                batch[nb].ptr = GARBAGE;
                batch[nb].len = sizeof GARBAGE;
                nb++;
            }
            batch[nb].ptr = mbox[i].data;
            batch[nb].len = mbox[i].len;
            nb++;
        }
    }
    if (nb == 1) {
        bad_at = nb;
        batch[nb].ptr = GARBAGE;
        batch[nb].len = sizeof GARBAGE;
        nb++;
    }
    raftlet_result res[MAX_MSGS];
    EXPECT_RC(raftlet_node_step_batch(NULL, batch, nb, res), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_step_batch(H[f].node, NULL, 1, res), RAFTLET_ERR_NULL_ARG);
    raftlet_bytes null_item = {NULL, 4};
    EXPECT_RC(raftlet_node_step_batch(H[f].node, &null_item, 1, res), RAFTLET_ERR_NULL_ARG);
    EXPECT_OK(raftlet_node_step_batch(H[f].node, NULL, 0, NULL));
    EXPECT_OK(raftlet_node_has_ready(H[f].node, &has));
    CHECK(!has); /* nothing reached the node yet */
    EXPECT_RC(raftlet_node_step_batch(H[f].node, batch, nb, res), RAFTLET_ERR_DECODE);
    for (size_t i = 0; i < nb; i++) {
        CHECK(res[i] == (i == bad_at ? RAFTLET_ERR_DECODE : RAFTLET_OK));
    }
    EXPECT_OK(raftlet_node_has_ready(H[f].node, &has));
    CHECK(has); /* the appends arrived */
    /* The same batch over 4 KiB in all (the garbage grown): decoded
     * before the node lock is taken rather than under it, with the same
     * outcomes (the appends again: harmless duplicates). */
    static uint8_t big_garbage[5000];
    memset(big_garbage, 0xff, sizeof big_garbage);
    batch[bad_at].ptr = big_garbage;
    batch[bad_at].len = sizeof big_garbage;
    EXPECT_RC(raftlet_node_step_batch(H[f].node, batch, nb, res), RAFTLET_ERR_DECODE);
    for (size_t i = 0; i < nb; i++) {
        CHECK(res[i] == (i == bad_at ? RAFTLET_ERR_DECODE : RAFTLET_OK));
    }
    /* Deliver the rest (f gets its copies again: harmless duplicates). */
    settle();
    for (uint64_t id = 1; id <= 3; id++) {
        CHECK(H[id].applied_normal == 2);
        CHECK(H[id].last_len == 5 && memcmp(H[id].last_data, "three", 5) == 0);
    }

    /* tick_many: bad input ticks nothing. A follower ticked past its
     * election timeout by a refused call would campaign. */
    raftlet_node *with_null[2] = {H[f].node, NULL};
    uint8_t bits[2] = {0xff, 0xff};
    for (int i = 0; i < 40; i++) {
        EXPECT_RC(raftlet_tick_many(with_null, 2, bits), RAFTLET_ERR_NULL_ARG);
    }
    EXPECT_RC(raftlet_tick_many(NULL, 1, bits), RAFTLET_ERR_NULL_ARG);
    CHECK(bits[0] == 0xff && bits[1] == 0xff); /* not written */
    EXPECT_OK(raftlet_node_has_ready(H[f].node, &has));
    CHECK(!has && status_of(f).role == 0);
    EXPECT_OK(raftlet_tick_many(NULL, 0, NULL));
    /* Ten slots (two bitmap bytes), the leader in slots 0 and 9: its
     * heartbeat (heartbeat_tick 1) gives it a ready; the followers,
     * ticked once, have none. */
    raftlet_node *ten[10];
    for (int i = 0; i < 10; i++) {
        ten[i] = H[i == 0 || i == 9 ? l : f].node;
    }
    EXPECT_OK(raftlet_tick_many(ten, 10, bits));
    CHECK(bits[0] == 0x01 && bits[1] == 0x02);
    for (int i = 0; i < 10; i++) {
        bool want = (bits[i / 8] >> (i % 8)) & 1;
        EXPECT_OK(raftlet_node_has_ready(ten[i], &has));
        CHECK(has == want);
    }
    EXPECT_OK(raftlet_tick_many(ten, 10, NULL)); /* no bitmap wanted */
    settle();
    CHECK(find_leader() == l);
    reset_cluster();
}

/* raftlet_node_ready_flat: a ready taken, viewed, persisted and has_ready
 * read in one call; with only_if_ready nothing is taken from an idle
 * node; a failed write is reported in persist_out with the ready taken. */
static void test_ready_flat_call(void) {
    raftlet_config *cfg = NULL;
    raftlet_storage *st = NULL, *later_st = NULL;
    raftlet_node *node = NULL, *later = NULL;
    EXPECT_OK(raftlet_config_new(1, &cfg));
    EXPECT_OK(raftlet_storage_new_memory(&st));
    EXPECT_OK(raftlet_storage_new_memory(&later_st));
    const uint64_t voters[] = {1};
    EXPECT_OK(raftlet_storage_set_conf_state(st, voters, 1, NULL, 0));
    EXPECT_OK(raftlet_storage_set_conf_state(later_st, voters, 1, NULL, 0));
    EXPECT_OK(raftlet_node_new(cfg, st, &node));
    EXPECT_OK(raftlet_node_new(cfg, later_st, &later));

    raftlet_ready *rd = SENTINEL(raftlet_ready);
    const raftlet_ready_flat *fl = SENTINEL(const raftlet_ready_flat);
    raftlet_result w = RAFTLET_PANIC;
    bool has = true;
    EXPECT_RC(raftlet_node_ready_flat(NULL, st, true, &rd, &fl, &w, &has), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_ready_flat(node, st, true, NULL, &fl, &w, &has), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_ready_flat(node, st, true, &rd, NULL, &w, &has), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_ready_flat(node, st, true, &rd, &fl, NULL, &has), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_ready_flat(node, st, true, &rd, &fl, &w, NULL), RAFTLET_ERR_NULL_ARG);

    /* Idle: nothing taken. */
    EXPECT_OK(raftlet_node_ready_flat(node, st, true, &rd, &fl, &w, &has));
    CHECK(rd == NULL && fl == NULL && !has && w == RAFTLET_OK);

    /* Elected, then a proposal: its entry comes out persisted. */
    EXPECT_OK(raftlet_node_campaign(node));
    for (int i = 0; i < 10; i++) {
        EXPECT_OK(raftlet_node_ready_flat(node, st, true, &rd, &fl, &w, &has));
        if (rd == NULL) {
            break;
        }
        CHECK(w == RAFTLET_OK);
        EXPECT_OK(raftlet_node_advance(node, rd));
        raftlet_ready_free(rd);
    }
    CHECK(rd == NULL && !has);
    EXPECT_OK(raftlet_node_propose(node, B("flat"), 4));
    EXPECT_OK(raftlet_node_ready_flat(node, st, true, &rd, &fl, &w, &has));
    CHECK(rd != NULL && w == RAFTLET_OK);
    CHECK(!has); /* the entry commits once this ready is advanced */
    CHECK(fl != NULL && fl->entry_count == 1);
    if (rd != NULL && fl != NULL && fl->entry_count == 1) {
        CHECK_BYTES(fl->entries[0].data, "flat");
        /* The same view raftlet_ready_view copies out. */
        raftlet_ready_flat again;
        EXPECT_OK(raftlet_ready_view(rd, &again));
        CHECK(again.entries == fl->entries && again.entry_count == 1);
        CHECK(again.message_count == fl->message_count && again.must_sync == fl->must_sync);
        /* Persisted already: a second write is refused as stale. */
        EXPECT_RC(raftlet_storage_append_ready(st, rd), RAFTLET_ERR_READY_STALE);
        EXPECT_OK(raftlet_node_advance(node, rd));
        /* Advanced: the view stays readable until the ready is freed
         * (ASan checks the reads). */
        CHECK(fl->entry_count == 1);
        CHECK_BYTES(fl->entries[0].data, "flat");
        raftlet_ready_free(rd);
    }
    EXPECT_OK(raftlet_node_ready_flat(node, st, true, &rd, &fl, &w, &has));
    CHECK(rd != NULL && fl != NULL && fl->committed_entry_count == 1 && !has);
    if (rd != NULL && fl != NULL && fl->committed_entry_count == 1) {
        CHECK_BYTES(fl->committed_entries[0].data, "flat");
        EXPECT_OK(raftlet_node_advance(node, rd));
        raftlet_ready_free(rd);
    }
    /* Without only_if_ready an idle node hands out an empty ready. */
    EXPECT_OK(raftlet_node_ready_flat(node, NULL, false, &rd, &fl, &w, &has));
    CHECK(rd != NULL && fl != NULL && w == RAFTLET_OK && !has);
    CHECK(fl != NULL && fl->entry_count == 0 && fl->message_count == 0 && fl->committed_entry_count == 0);
    if (rd != NULL) {
        EXPECT_OK(raftlet_node_advance(node, rd));
        raftlet_ready_free(rd);
    }

    /* A failed write: later_st holds a ready of a node created after
     * this one, so it refuses this node's; the ready is taken anyway. */
    EXPECT_OK(raftlet_node_campaign(later));
    raftlet_ready *lr = NULL;
    EXPECT_OK(raftlet_node_ready_flat(later, later_st, true, &lr, &fl, &w, &has));
    CHECK(lr != NULL && w == RAFTLET_OK);
    EXPECT_OK(raftlet_node_propose(node, B("lost"), 4));
    EXPECT_OK(raftlet_node_ready_flat(node, later_st, true, &rd, &fl, &w, &has));
    CHECK(rd != NULL && w == RAFTLET_ERR_READY_STALE);
    const char *msg = raftlet_last_error_message();
    CHECK(msg != NULL && msg[0] != '\0');
    CHECK(fl != NULL && fl->entry_count == 1);
    if (rd != NULL) {
        /* Not persisted where the node reads: not advanced either. */
        EXPECT_RC(raftlet_node_advance(node, rd), RAFTLET_ERR_READY_NOT_PERSISTED);
        EXPECT_OK(raftlet_storage_append_ready(st, rd));
        EXPECT_OK(raftlet_node_advance(node, rd));
        raftlet_ready_free(rd);
    }
    raftlet_ready_free(lr);

    raftlet_node_free(later);
    raftlet_node_free(node);
    raftlet_storage_free(later_st);
    raftlet_storage_free(st);
    raftlet_config_free(cfg);
}

/* Node 1, the single voter of a fresh memory storage. */
static void new_single_voter(raftlet_config **cfg, raftlet_storage **st, raftlet_node **node) {
    EXPECT_OK(raftlet_config_new(1, cfg));
    EXPECT_OK(raftlet_storage_new_memory(st));
    const uint64_t voters[] = {1};
    EXPECT_OK(raftlet_storage_set_conf_state(*st, voters, 1, NULL, 0));
    EXPECT_OK(raftlet_node_new(*cfg, *st, node));
}

/* A restart on st claiming `index` applied is accepted (the storage holds
 * it committed); frees st and cfg. */
static void restart_applied(raftlet_config *cfg, raftlet_storage *st, uint64_t index) {
    raftlet_node *again = NULL;
    EXPECT_OK(raftlet_config_set_applied(cfg, index));
    EXPECT_OK(raftlet_node_new(cfg, st, &again));
    raftlet_node_free(again);
    raftlet_storage_free(st);
    raftlet_config_free(cfg);
}

/* raftlet_node_advance_light: a single voter's proposal in one Ready cycle.
 * Advancing the ready of its entry hands the entry back at once, committed,
 * in a light ready whose commit index is written to the storage; advancing
 * the light ready reports it applied; a restart that claims it applied is
 * accepted because the commit index was persisted. */
static void test_advance_light(void) {
    raftlet_config *cfg = NULL;
    raftlet_storage *st = NULL;
    raftlet_node *node = NULL;
    new_single_voter(&cfg, &st, &node);

    raftlet_ready *rd = NULL, *light = SENTINEL(raftlet_ready);
    const raftlet_ready_flat *fl = NULL, *lfl = SENTINEL(const raftlet_ready_flat);
    raftlet_result w = RAFTLET_PANIC;
    bool has = true;
    EXPECT_OK(raftlet_node_campaign(node));
    for (int i = 0; i < 10; i++) {
        EXPECT_OK(raftlet_node_ready_flat(node, st, true, &rd, &fl, &w, &has));
        if (rd == NULL) {
            break;
        }
        EXPECT_OK(raftlet_node_advance(node, rd));
        raftlet_ready_free(rd);
    }
    EXPECT_OK(raftlet_node_propose(node, B("light"), 5));
    EXPECT_OK(raftlet_node_ready_flat(node, st, true, &rd, &fl, &w, &has));
    CHECK(rd != NULL && fl != NULL && fl->entry_count == 1 && w == RAFTLET_OK);
    EXPECT_RC(raftlet_node_advance_light(node, rd, st, NULL, &lfl, &w, &has), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_advance_light(node, rd, st, &light, NULL, &w, &has), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_advance_light(node, rd, st, &light, &lfl, NULL, &has), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_advance_light(node, rd, st, &light, &lfl, &w, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_advance_light(NULL, rd, st, &light, &lfl, &w, &has), RAFTLET_ERR_NULL_ARG);
    EXPECT_OK(raftlet_node_advance_light(node, rd, st, &light, &lfl, &w, &has));
    CHECK(light != NULL && lfl != NULL && w == RAFTLET_OK && !has);
    uint64_t index = 0;
    if (light != NULL && lfl != NULL) {
        CHECK(lfl->committed_entry_count == 1 && lfl->entry_count == 0 && lfl->message_count == 0);
        if (lfl->committed_entry_count == 1) {
            CHECK_BYTES(lfl->committed_entries[0].data, "light");
            index = lfl->committed_entries[0].index;
        }
        /* Advanced already: the ready of the entry is stale. */
        EXPECT_RC(raftlet_node_advance(node, rd), RAFTLET_ERR_READY_STALE);
        /* Writing the light ready again only rewrites its commit index. */
        EXPECT_OK(raftlet_storage_append_ready(st, light));
        EXPECT_OK(raftlet_node_advance(node, light));
        EXPECT_RC(raftlet_node_advance(node, light), RAFTLET_ERR_READY_STALE);
        raftlet_ready_free(light);
    }
    raftlet_ready_free(rd);
    raftlet_basic_status bs;
    EXPECT_OK(raftlet_node_basic_status(node, &bs));
    CHECK(index > 0 && bs.applied == index && bs.commit == index);
    EXPECT_OK(raftlet_node_has_ready(node, &has));
    CHECK(!has);
    raftlet_node_free(node);

    /* The commit index reached the storage: a restart that claims the
     * entry applied is accepted. */
    restart_applied(cfg, st, index);
}

/* raftlet_node_ready_persisted: the ready is written and its write
 * acknowledged in the call, so a single voter's proposal comes back
 * committed in the ready that carries it, the commit index in the storage;
 * advancing it reports the entry applied; a restart that claims it applied
 * is accepted. A NULL storage is refused. */
static void test_ready_persisted(void) {
    raftlet_config *cfg = NULL;
    raftlet_storage *st = NULL;
    raftlet_node *node = NULL;
    new_single_voter(&cfg, &st, &node);

    raftlet_ready *rd = SENTINEL(raftlet_ready);
    const raftlet_ready_flat *fl = SENTINEL(const raftlet_ready_flat);
    raftlet_result w = RAFTLET_PANIC;
    bool has = true;
    EXPECT_RC(raftlet_node_ready_persisted(node, NULL, true, &rd, &fl, &w, &has), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_ready_persisted(node, st, true, NULL, &fl, &w, &has), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_ready_persisted(NULL, st, true, &rd, &fl, &w, &has), RAFTLET_ERR_NULL_ARG);
    EXPECT_OK(raftlet_node_campaign(node));
    for (int i = 0; i < 10; i++) {
        EXPECT_OK(raftlet_node_ready_persisted(node, st, true, &rd, &fl, &w, &has));
        if (rd == NULL) {
            break;
        }
        CHECK(w == RAFTLET_OK);
        EXPECT_OK(raftlet_node_advance(node, rd));
        raftlet_ready_free(rd);
    }
    CHECK(rd == NULL && fl == NULL && !has);
    EXPECT_OK(raftlet_node_propose(node, B("fused"), 5));
    EXPECT_OK(raftlet_node_ready_persisted(node, st, true, &rd, &fl, &w, &has));
    CHECK(rd != NULL && fl != NULL && w == RAFTLET_OK && !has);
    uint64_t index = 0;
    if (rd != NULL && fl != NULL) {
        /* The entry to write and the same entry committed. */
        CHECK(fl->entry_count == 1 && fl->committed_entry_count == 1);
        CHECK(fl->persisted_message_start == fl->message_count);
        if (fl->committed_entry_count == 1) {
            CHECK_BYTES(fl->committed_entries[0].data, "fused");
            index = fl->committed_entries[0].index;
        }
        raftlet_basic_status bs;
        EXPECT_OK(raftlet_node_basic_status(node, &bs));
        CHECK(index > 0 && bs.commit == index && bs.applied < index);
        EXPECT_OK(raftlet_node_advance(node, rd));
        EXPECT_RC(raftlet_node_advance(node, rd), RAFTLET_ERR_READY_STALE);
        EXPECT_OK(raftlet_node_basic_status(node, &bs));
        CHECK(bs.applied == index);
        raftlet_ready_free(rd);
    }
    EXPECT_OK(raftlet_node_has_ready(node, &has));
    CHECK(!has);
    raftlet_node_free(node);

    /* The commit index reached the storage. */
    restart_applied(cfg, st, index);
}

/* Takes the next ready of a single voter persisted into st, failing the
 * test when there is none or its write failed. */
static raftlet_ready *take_persisted(raftlet_node *node, raftlet_storage *st, const raftlet_ready_flat **fl) {
    raftlet_ready *rd = NULL;
    raftlet_result w = RAFTLET_PANIC;
    bool has = true;
    EXPECT_OK(raftlet_node_ready_persisted(node, st, true, &rd, fl, &w, &has));
    CHECK(rd != NULL && *fl != NULL && w == RAFTLET_OK);
    return rd;
}

/* raftlet_ready_flat.advance_is_noop: set on a ready whose write was
 * acknowledged as it was taken and that hands out nothing left to apply
 * (a single voter's read state after its entries were applied). Such a
 * ready freed without an advance leaves the node as an advance would: the
 * next ready's write is acknowledged at once and the applied index is
 * untouched. A ready with committed entries, a ready taken while an
 * earlier one is not advanced, and a ready taken without persisting are
 * not noop. */
static void test_ready_advance_is_noop(void) {
    raftlet_config *cfg = NULL;
    raftlet_storage *st = NULL;
    raftlet_node *node = NULL;
    new_single_voter(&cfg, &st, &node);
    const raftlet_ready_flat *fl = NULL;
    EXPECT_OK(raftlet_node_campaign(node));
    /* The election's readies: the one committing the leader's empty entry
     * is not noop. */
    bool has = true;
    int committing = 0;
    for (int i = 0; i < 10 && has; i++) {
        raftlet_ready *rd = take_persisted(node, st, &fl);
        if (rd == NULL) {
            break;
        }
        if (fl->committed_entry_count > 0) {
            committing++;
            CHECK(!fl->advance_is_noop);
        }
        EXPECT_OK(raftlet_node_advance(node, rd));
        raftlet_ready_free(rd);
        EXPECT_OK(raftlet_node_has_ready(node, &has));
    }
    CHECK(committing == 1 && !has);

    /* A proposal: its entry comes back committed, to apply. */
    EXPECT_OK(raftlet_node_propose(node, B("one"), 3));
    raftlet_ready *rd = take_persisted(node, st, &fl);
    if (rd == NULL || fl->committed_entry_count != 1) {
        return;
    }
    CHECK(!fl->advance_is_noop);
    uint64_t applied = fl->committed_entries[0].index;

    /* A read while that ready is not advanced: taken after it, so not
     * acknowledged at once, and not noop. */
    EXPECT_OK(raftlet_node_read_index(node, B("r1"), 2));
    const raftlet_ready_flat *fl2 = NULL;
    raftlet_ready *rd2 = take_persisted(node, st, &fl2);
    CHECK(rd2 != NULL && fl2->read_state_count == 1 && !fl2->advance_is_noop);
    EXPECT_OK(raftlet_node_advance(node, rd));
    EXPECT_OK(raftlet_node_advance(node, rd2));
    raftlet_ready_free(rd);
    raftlet_ready_free(rd2);

    /* Every ready advanced: a read's ready is noop, and freeing it alone
     * is all it needs. */
    raftlet_basic_status bs;
    EXPECT_OK(raftlet_node_basic_status(node, &bs));
    CHECK(bs.applied == applied);
    EXPECT_OK(raftlet_node_read_index(node, B("r2"), 2));
    rd = take_persisted(node, st, &fl);
    CHECK(rd != NULL && fl->read_state_count == 1 && fl->committed_entry_count == 0 && fl->advance_is_noop);
    raftlet_ready_free(rd);
    EXPECT_OK(raftlet_node_has_ready(node, &has));
    CHECK(!has);

    /* The next proposal's write is acknowledged at once (its entry comes
     * back committed in the same ready), as after an advance. */
    EXPECT_OK(raftlet_node_propose(node, B("two"), 3));
    rd = take_persisted(node, st, &fl);
    CHECK(rd != NULL && fl->entry_count == 1 && fl->committed_entry_count == 1 && !fl->advance_is_noop);
    EXPECT_OK(raftlet_node_basic_status(node, &bs));
    CHECK(bs.applied == applied);
    EXPECT_OK(raftlet_node_advance(node, rd));
    raftlet_ready_free(rd);
    EXPECT_OK(raftlet_node_basic_status(node, &bs));
    applied = bs.applied;

    /* "At any later time": a noop ready kept while a later one is taken
     * and advanced, then advanced itself (allowed) and freed, changes
     * nothing: no error, the applied index stays, no ready appears. */
    EXPECT_OK(raftlet_node_read_index(node, B("r4"), 2));
    raftlet_ready *kept = take_persisted(node, st, &fl);
    CHECK(kept != NULL && fl->advance_is_noop);
    EXPECT_OK(raftlet_node_propose(node, B("three"), 5));
    rd = take_persisted(node, st, &fl);
    CHECK(rd != NULL && fl->committed_entry_count == 1 && !fl->advance_is_noop);
    EXPECT_OK(raftlet_node_advance(node, rd));
    raftlet_ready_free(rd);
    EXPECT_OK(raftlet_node_basic_status(node, &bs));
    CHECK(bs.applied > applied);
    applied = bs.applied;
    EXPECT_OK(raftlet_node_advance(node, kept));
    raftlet_ready_free(kept);
    EXPECT_OK(raftlet_node_basic_status(node, &bs));
    CHECK(bs.applied == applied);
    EXPECT_OK(raftlet_node_has_ready(node, &has));
    CHECK(!has);

    /* A ready taken without persisting is never noop. */
    EXPECT_OK(raftlet_node_read_index(node, B("r3"), 2));
    rd = NULL;
    fl = NULL;
    raftlet_result w = RAFTLET_PANIC;
    EXPECT_OK(raftlet_node_ready_flat(node, NULL, true, &rd, &fl, &w, &has));
    CHECK(rd != NULL && fl != NULL && fl->read_state_count == 1 && !fl->advance_is_noop);
    EXPECT_OK(raftlet_storage_append_ready(st, rd));
    EXPECT_OK(raftlet_node_advance(node, rd));
    raftlet_ready_free(rd);
    raftlet_node_free(node);
    raftlet_storage_free(st);
    raftlet_config_free(cfg);
}

/* raftlet_ready_flat.advance_is_apply_only, apply_index, idle_after_apply:
 * a ready whose write was acknowledged as it was taken may be freed and
 * its entries reported applied with raftlet_node_advance_apply_to, in
 * either order, instead of an advance. idle_after_apply says whether the
 * node has a ready after that report: not when all committed entries were
 * handed out; yes when the applying budget (max_committed_size_per_ready)
 * held some back, which the report releases. A ready taken without
 * persisting is not apply-only. */
static void test_ready_apply_only(void) {
    for (int budget = 0; budget < 2; budget++) {
        raftlet_config *cfg = NULL;
        raftlet_storage *st = NULL;
        raftlet_node *node = NULL;
        EXPECT_OK(raftlet_config_new(1, &cfg));
        if (budget) {
            EXPECT_OK(raftlet_config_set_max_committed_size_per_ready(cfg, 1));
        }
        EXPECT_OK(raftlet_storage_new_memory(&st));
        const uint64_t voters[] = {1};
        EXPECT_OK(raftlet_storage_set_conf_state(st, voters, 1, NULL, 0));
        EXPECT_OK(raftlet_node_new(cfg, st, &node));
        raftlet_config_free(cfg);
        const raftlet_ready_flat *fl = NULL;
        bool has = true;
        EXPECT_OK(raftlet_node_campaign(node));
        for (int i = 0; i < 10 && has; i++) {
            raftlet_ready *rd = take_persisted(node, st, &fl);
            if (rd == NULL) {
                break;
            }
            EXPECT_OK(raftlet_node_advance(node, rd));
            raftlet_ready_free(rd);
            EXPECT_OK(raftlet_node_has_ready(node, &has));
        }
        CHECK(!has);
        raftlet_basic_status bs;
        EXPECT_OK(raftlet_node_basic_status(node, &bs));
        uint64_t last = bs.applied + 3;

        EXPECT_OK(raftlet_node_propose(node, B("one"), 3));
        EXPECT_OK(raftlet_node_propose(node, B("two"), 3));
        EXPECT_OK(raftlet_node_propose(node, B("three"), 5));
        int readies = 0;
        for (bool free_first = true; bs.applied < last && readies < 10; free_first = !free_first) {
            raftlet_ready *rd = take_persisted(node, st, &fl);
            if (rd == NULL) {
                break;
            }
            readies++;
            size_t n = fl->committed_entry_count;
            CHECK(fl->advance_is_apply_only && n > 0);
            if (n == 0) {
                raftlet_ready_free(rd);
                break;
            }
            uint64_t index = fl->apply_index;
            CHECK(index == fl->committed_entries[n - 1].index);
            bool idle = fl->idle_after_apply;
            CHECK(idle == (index == last));
            if (free_first) {
                raftlet_ready_free(rd);
            }
            EXPECT_OK(raftlet_node_advance_apply_to(node, index));
            if (!free_first) {
                raftlet_ready_free(rd);
            }
            EXPECT_OK(raftlet_node_basic_status(node, &bs));
            CHECK(bs.applied == index);
            EXPECT_OK(raftlet_node_has_ready(node, &has));
            CHECK(has == !idle);
        }
        /* Without a budget one ready hands out all three; with a budget of
         * one byte, one entry each. */
        CHECK(bs.applied == last && readies == (budget ? 3 : 1));

        EXPECT_OK(raftlet_node_read_index(node, B("r"), 1));
        raftlet_ready *rd = NULL;
        raftlet_result w = RAFTLET_PANIC;
        EXPECT_OK(raftlet_node_ready_flat(node, NULL, true, &rd, &fl, &w, &has));
        CHECK(rd != NULL && fl != NULL && !fl->advance_is_apply_only && !fl->idle_after_apply);
        if (rd != NULL) {
            EXPECT_OK(raftlet_storage_append_ready(st, rd));
            EXPECT_OK(raftlet_node_advance(node, rd));
            raftlet_ready_free(rd);
        }
        raftlet_node_free(node);
        raftlet_storage_free(st);
    }
}

/* ------------------------------------------------------------------------ */
/* Quiescence: idle groups sleep, proposals wake them, and followers told   */
/* that the leader's node is silent elect a new leader                      */
/* ------------------------------------------------------------------------ */

static void qs_start_node(uint64_t id, const uint64_t *voters, size_t nv) {
    raftlet_config *cfg = NULL;
    H_OK(raftlet_config_new(id, &cfg));
    H_OK(raftlet_config_set_election_tick(cfg, 10));
    H_OK(raftlet_config_set_heartbeat_tick(cfg, 1));
    H_OK(raftlet_config_set_quiesce(cfg, true));
    H_OK(raftlet_config_set_seed(cfg, 200 + id));
    H_OK(raftlet_storage_new_memory(&H[id].storage));
    H_OK(raftlet_storage_set_conf_state(H[id].storage, voters, nv, NULL, 0));
    H_OK(raftlet_node_new(cfg, H[id].storage, &H[id].node));
    raftlet_config_free(cfg);
}

static bool quiesced(uint64_t id) {
    bool q = false;
    H_OK(raftlet_node_is_quiesced(H[id].node, &q));
    return q;
}

static void test_quiesce(void) {
    bool q = false;
    EXPECT_RC(raftlet_config_set_quiesce(NULL, true), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_is_quiesced(NULL, &q), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_wake(NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_wake_leader_lost(NULL), RAFTLET_ERR_NULL_ARG);

    reset_cluster();
    const uint64_t voters[] = {1, 2, 3};
    for (uint64_t id = 1; id <= 3; id++) {
        qs_start_node(id, voters, 3);
    }
    EXPECT_RC(raftlet_node_is_quiesced(H[1].node, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_OK(raftlet_node_campaign(H[1].node));
    settle();
    CHECK(find_leader() == 1);
    EXPECT_OK(raftlet_node_propose(H[1].node, B("q1"), 2));
    settle();
    tick_all(3);
    for (uint64_t id = 1; id <= 3; id++) {
        CHECK(quiesced(id));
    }
    /* Asleep, ticks change nothing: no heartbeat, no election. */
    tick_all(50);
    CHECK(find_leader() == 1);
    CHECK(mbox_len == 0);
    for (uint64_t id = 1; id <= 3; id++) {
        CHECK(quiesced(id));
    }
    /* A proposal on a follower wakes it and the leader; the group commits
       and falls asleep again. */
    EXPECT_OK(raftlet_node_propose(H[2].node, B("q2"), 2));
    CHECK(!quiesced(2));
    settle();
    tick_all(3);
    for (uint64_t id = 1; id <= 3; id++) {
        CHECK(H[id].applied_normal == 2);
        CHECK(quiesced(id));
    }
    /* Wake is a no-op on an awake node and wakes a sleeping one. */
    EXPECT_OK(raftlet_node_wake(H[3].node));
    CHECK(!quiesced(3));
    tick_all(2);
    /* The leader's node goes silent: its followers are told and elect a
       new leader within two election timeouts. */
    cut[1] = true;
    EXPECT_OK(raftlet_node_wake_leader_lost(H[2].node));
    EXPECT_OK(raftlet_node_wake_leader_lost(H[3].node));
    uint64_t l = 0;
    for (int t = 0; t < 20 && !l; t++) {
        tick_all(1);
        l = find_leader();
    }
    CHECK(l == 2 || l == 3);
    reset_cluster();
}

/* ------------------------------------------------------------------------ */
/* Multi-group frames (raftlet_frame_*)                                     */
/* ------------------------------------------------------------------------ */

/* Reads the shared frame vector (raft-core/testdata/frame-v1.hex, asserted
 * by the Rust, Go and Python tests too); 0 if it cannot be read. */
static size_t read_frame_vector(uint8_t *out, size_t cap) {
    FILE *f = fopen("raft-core/testdata/frame-v1.hex", "r");
    if (f == NULL) {
        return 0;
    }
    size_t n = 0;
    unsigned int byte;
    while (n < cap && fscanf(f, "%2x", &byte) == 1) {
        out[n++] = (uint8_t)byte;
    }
    fclose(f);
    return n;
}

static void test_frames(void) {
    uint8_t vec[512];
    size_t vec_len = read_frame_vector(vec, sizeof vec);
    CHECK(vec_len > 16); /* run from the checkout's root, as make test-c does */

    /* The vector decodes: from node 7, three groups, messages in place. */
    raftlet_frame_item items[4];
    uint64_t from = 0;
    size_t count = 0;
    EXPECT_OK(raftlet_frame_decode(vec, vec_len, &from, items, 4, &count));
    CHECK(from == 7 && count == 3);
    CHECK(items[0].group == 1 && items[1].group == 42 && items[2].group == ((uint64_t)1 << 40));
    CHECK(items[1].message.ptr >= vec && items[1].message.ptr + items[1].message.len <= vec + vec_len);

    /* The builder rebuilds it byte for byte from the messages' bytes. */
    raftlet_frame_builder *b = SENTINEL(raftlet_frame_builder);
    EXPECT_OK(raftlet_frame_builder_new(99, &b));
    EXPECT_OK(raftlet_frame_builder_push(b, 5, B("junk"), 4));
    EXPECT_OK(raftlet_frame_builder_reset(b, 7));
    size_t len = 9;
    EXPECT_OK(raftlet_frame_builder_len(b, &len));
    CHECK(len == 0);
    raftlet_bytes fb = {0};
    EXPECT_OK(raftlet_frame_builder_bytes(b, &fb));
    CHECK(fb.len == 16); /* an empty frame: a node-level heartbeat */
    EXPECT_OK(raftlet_frame_decode(fb.ptr, fb.len, &from, NULL, 0, &count));
    CHECK(from == 7 && count == 0);
    for (size_t i = 0; i < 3; i++) {
        EXPECT_OK(raftlet_frame_builder_push(b, items[i].group, items[i].message.ptr,
                                             items[i].message.len));
    }
    EXPECT_OK(raftlet_frame_builder_len(b, &len));
    CHECK(len == 3);
    EXPECT_OK(raftlet_frame_builder_bytes(b, &fb));
    CHECK(fb.len == vec_len && memcmp(fb.ptr, vec, vec_len) == 0);

    /* Too little room: only the count is written. */
    from = 0;
    EXPECT_RC(raftlet_frame_decode(vec, vec_len, &from, items, 2, &count),
              RAFTLET_ERR_INVALID_ARG);
    CHECK(count == 3 && from == 0);

    /* Every strict prefix, and a byte too many, is not a frame. */
    for (size_t n = 0; n < vec_len; n++) {
        count = 77;
        EXPECT_RC(raftlet_frame_decode(vec, n, &from, items, 4, &count), RAFTLET_ERR_DECODE);
        CHECK(count == 77);
    }
    uint8_t longer[513];
    memcpy(longer, vec, vec_len);
    longer[vec_len] = 0;
    EXPECT_RC(raftlet_frame_decode(longer, vec_len + 1, &from, items, 4, &count),
              RAFTLET_ERR_DECODE);
    longer[0] = 'X';
    EXPECT_RC(raftlet_frame_decode(longer, vec_len, &from, items, 4, &count), RAFTLET_ERR_DECODE);

    /* NULL arguments. */
    EXPECT_RC(raftlet_frame_builder_new(1, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_frame_builder_push(NULL, 1, B("x"), 1), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_frame_builder_push(b, 1, NULL, 1), RAFTLET_ERR_NULL_ARG);
    EXPECT_OK(raftlet_frame_builder_push(b, 1, NULL, 0)); /* an empty message is allowed */
    EXPECT_RC(raftlet_frame_builder_len(b, NULL), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_frame_builder_bytes(NULL, &fb), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_frame_builder_reset(NULL, 1), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_frame_decode(vec, vec_len, NULL, items, 4, &count), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_frame_decode(vec, vec_len, &from, NULL, 4, &count), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_frame_decode(NULL, 3, &from, items, 4, &count), RAFTLET_ERR_NULL_ARG);
    raftlet_frame_builder_free(b);
    raftlet_frame_builder_free(NULL);
}

/* Payloads in the library's memory: raftlet_payloads_new hands out
 * buffers the host fills in place, raftlet_node_propose_payloads proposes
 * them without a copy (the entry's bytes are the buffer the host wrote),
 * raftlet_payload_free frees one not proposed. ASan's leak check sees a
 * payload neither proposed nor freed, and a double free of a taken one. */
static void test_payloads(void) {
    /* Bad input: nothing allocated. */
    size_t lens[3] = {4, 0, 600};
    raftlet_payload *ps[3] = {NULL, NULL, NULL};
    uint8_t *data[3] = {NULL, NULL, NULL};
    EXPECT_OK(raftlet_payloads_new(NULL, 0, NULL, NULL));
    EXPECT_RC(raftlet_payloads_new(NULL, 3, ps, data), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_payloads_new(lens, 3, NULL, data), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_payloads_new(lens, 3, ps, NULL), RAFTLET_ERR_NULL_ARG);
    CHECK(ps[0] == NULL && ps[1] == NULL && ps[2] == NULL);
    /* A length no allocator can give: refused, and the first payload of
     * the call is not left allocated (the leak check would say so). */
    size_t huge[2] = {8, SIZE_MAX};
    EXPECT_RC(raftlet_payloads_new(huge, 2, ps, data), RAFTLET_ERR_INVALID_ARG);
    CHECK(ps[0] == NULL && ps[1] == NULL);
    raftlet_payload_free(NULL);

    /* One payload freed without proposing it. */
    raftlet_payload *lone = NULL;
    uint8_t *lone_data = NULL;
    size_t one = 16;
    EXPECT_OK(raftlet_payloads_new(&one, 1, &lone, &lone_data));
    CHECK(lone != NULL && lone_data != NULL);
    if (lone_data) {
        lone_data[15] = 7;
    }
    raftlet_payload_free(lone);

    uint64_t l = three_with_leader();
    if (!l) {
        return;
    }
    raftlet_node *ln = H[l].node;

    EXPECT_OK(raftlet_payloads_new(lens, 3, ps, data));
    CHECK(ps[0] && ps[1] && ps[2]);
    CHECK(data[0] != NULL && data[1] == NULL && data[2] != NULL);
    if (!data[0] || !data[2]) {
        reset_cluster();
        return;
    }
    /* Zeroed, then filled in place. */
    bool zero = true;
    for (size_t i = 0; i < 600; i++) {
        zero = zero && data[2][i] == 0;
    }
    CHECK(zero && data[0][0] == 0 && data[0][3] == 0);
    memcpy(data[0], "four", 4);
    for (size_t i = 0; i < 600; i++) {
        data[2][i] = (uint8_t)(i * 7);
    }
    const uint8_t *big = data[2];

    /* Refused with nothing taken: the same payloads are proposed after. */
    raftlet_status before = status_of(l);
    raftlet_payload *with_null[2] = {ps[0], NULL};
    raftlet_payload *twice[3] = {ps[0], ps[2], ps[0]};
    EXPECT_RC(raftlet_node_propose_payloads(ln, twice, 3), RAFTLET_ERR_INVALID_ARG);
    size_t too_many = SIZE_MAX / 4;
    EXPECT_RC(raftlet_payloads_new(lens, too_many, ps, data), RAFTLET_ERR_INVALID_ARG);
    EXPECT_RC(raftlet_node_propose_payloads(NULL, ps, 3), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_propose_payloads(ln, NULL, 3), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_propose_payloads(ln, with_null, 2), RAFTLET_ERR_NULL_ARG);
    EXPECT_RC(raftlet_node_propose_payloads(ln, NULL, 0), RAFTLET_ERR_PROPOSAL_DROPPED);
    bool has = true;
    EXPECT_OK(raftlet_node_has_ready(ln, &has));
    CHECK(!has);
    CHECK(status_of(l).commit == before.commit);

    EXPECT_OK(raftlet_node_propose_payloads(ln, ps, 3));
    raftlet_ready *rd = NULL;
    EXPECT_OK(raftlet_node_ready(ln, &rd));
    raftlet_ready_flat fl;
    EXPECT_OK(raftlet_ready_view(rd, &fl));
    CHECK(fl.entry_count == 3);
    if (fl.entry_count == 3) {
        CHECK_BYTES(fl.entries[0].data, "four");
        CHECK(fl.entries[1].data.len == 0);
        /* Not copied: the entry's bytes are the buffer written above. */
        CHECK(fl.entries[2].data.len == 600 && fl.entries[2].data.ptr == big);
        bool same = fl.entries[2].data.len == 600;
        for (size_t i = 0; same && i < 600; i++) {
            same = fl.entries[2].data.ptr[i] == (uint8_t)(i * 7);
        }
        CHECK(same);
    }
    process_ready(l, rd, true);
    raftlet_ready_free(rd);
    settle();
    CHECK(status_of(l).commit == before.commit + 3);

    /* Dropped (a node with no leader): the payloads are taken and freed
     * all the same. */
    reset_cluster();
    const uint64_t voters[] = {1, 2, 3};
    start_node(1, voters, 3, NULL, 0);
    EXPECT_OK(raftlet_payloads_new(lens, 3, ps, data));
    EXPECT_RC(raftlet_node_propose_payloads(H[1].node, ps, 3), RAFTLET_ERR_PROPOSAL_DROPPED);
    reset_cluster();
}

int main(void) {
    RUN(test_last_error_message); /* first: no failure yet on this thread */
    RUN(test_version_and_result_str);
    RUN(test_free_null);
    RUN(test_config);
    RUN(test_conf_change_codec);
    RUN(test_message_header);
    RUN(test_log_callback);
    RUN(test_bulk_helpers);
    RUN(test_storage);
    RUN(test_node_null_args);
    RUN(test_no_leader_and_step_errors);
    RUN(test_single_node);
    RUN(test_conf_changes);
    RUN(test_bootstrap);
    RUN(test_three_nodes);
    RUN(test_batch_calls);
    RUN(test_payloads);
    RUN(test_disk_storage);
    RUN(test_disk_storage_options);
    RUN(test_ready_order_mistakes);
    RUN(test_snapshot_not_persisted);
    RUN(test_light_commit_waits_for_snapshot);
    RUN(test_hostile_input);
    RUN(test_learner_config);
    RUN(test_learner_auto_promotion);
    RUN(test_learner_standby);
    RUN(test_quiesce);
    RUN(test_frames);
    RUN(test_ready_flat_call);
    RUN(test_advance_light);
    RUN(test_ready_persisted);
    RUN(test_ready_advance_is_noop);
    RUN(test_ready_apply_only);
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
