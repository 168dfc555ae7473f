/*
 * Two threads drive one raftlet node at once, as the header allows ("Node
 * and storage handles may be used from any thread: a lock inside
 * serialises calls"):
 *
 *  - the driver thread runs the Ready loop of a 3-node cluster: it takes
 *    and advances node 1's readies, persists them, steps the messages of
 *    nodes 2 and 3 into node 1 (and node 1's into them), and ticks;
 *  - the client thread proposes on node 1 (the leader), asks for reads,
 *    and reads its status, progress and JSON status.
 *
 * Then, on a node of its own, readies whose advance changes nothing
 * (advance_is_noop) freed by another thread while this one drives the
 * node; and two host mistakes:
 *
 *  - two threads advance the same ready at once: exactly one gets
 *    RAFTLET_OK, the other RAFTLET_ERR_READY_STALE, every round;
 *  - two threads run the whole Ready loop at once, without keeping the
 *    readies in order: every call gets RAFTLET_OK or a documented error,
 *    never RAFTLET_PANIC, and the node is not poisoned.
 *
 * Iterations are bounded. Built by `make test-c-tsan` with
 * -fsanitize=thread (see the Makefile for what TSan can and cannot see).
 * Prints "N passed, N failed"; exits non-zero on any failure.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "raftlet.h"

static atomic_int g_passed;
static atomic_int g_failed;

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (cond) {                                                                        \
            atomic_fetch_add(&g_passed, 1);                                                \
        } else {                                                                           \
            atomic_fetch_add(&g_failed, 1);                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);      \
        }                                                                                  \
    } while (0)

/* A call that must succeed; counts a failure only. */
#define MUST(call)                                                                         \
    do {                                                                                   \
        raftlet_result rc_ = (call);                                                       \
        if (rc_ != RAFTLET_OK) {                                                           \
            atomic_fetch_add(&g_failed, 1);                                                \
            fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,      \
                    raftlet_result_str(rc_), raftlet_last_error_message());                \
        }                                                                                  \
    } while (0)

#define NODES 3
#define MAX_MSGS 16384
#define PROPOSALS 400
#define DRIVER_MAX_ROUNDS 200000
#define DRIVER_MAX_SECONDS 300.0

typedef struct {
    raftlet_node *node;
    raftlet_storage *storage;
    size_t applied_normal; /* written by the driver only */
} host;

typedef struct {
    uint64_t to;
    uint8_t *data;
    size_t len;
} envelope;

static host H[NODES + 1];
/* The mailbox belongs to the driver thread. */
static envelope mbox[MAX_MSGS];
static size_t mbox_len;
static envelope batch[MAX_MSGS];

static atomic_bool client_done;
static atomic_int proposals_ok;
static atomic_int proposals_dropped;
static atomic_int reads_asked;
static atomic_int reads_answered;

static void post(const raftlet_message_view *m) {
    if (mbox_len == MAX_MSGS) {
        fprintf(stderr, "mailbox overflow\n");
        exit(2);
    }
    envelope *e = &mbox[mbox_len++];
    e->to = m->to;
    e->len = m->data.len;
    e->data = malloc(m->data.len ? m->data.len : 1);
    if (!e->data) {
        exit(2);
    }
    memcpy(e->data, m->data.ptr, m->data.len);
}

static int handle_ready(uint64_t id) {
    host *h = &H[id];
    bool has = false;
    MUST(raftlet_node_has_ready(h->node, &has));
    if (!has) {
        return 0;
    }
    raftlet_ready *rd = NULL;
    MUST(raftlet_node_ready(h->node, &rd));
    MUST(raftlet_storage_append_ready(h->storage, rd));
    size_t n = 0;
    MUST(raftlet_ready_message_count(rd, &n));
    for (size_t i = 0; i < n; i++) {
        raftlet_message_view m;
        MUST(raftlet_ready_message(rd, i, &m));
        post(&m);
    }
    MUST(raftlet_ready_persisted_message_count(rd, &n));
    for (size_t i = 0; i < n; i++) {
        raftlet_message_view m;
        MUST(raftlet_ready_persisted_message(rd, i, &m));
        post(&m);
    }
    MUST(raftlet_ready_read_state_count(rd, &n));
    if (id == 1) {
        atomic_fetch_add(&reads_answered, (int)n);
    }
    MUST(raftlet_ready_committed_entry_count(rd, &n));
    for (size_t i = 0; i < n; i++) {
        raftlet_entry_view e;
        MUST(raftlet_ready_committed_entry(rd, i, &e));
        if (e.entry_type == 0 && e.data.len > 0) {
            /* Touch the payload the client thread handed to propose. */
            char buf[32];
            size_t l = e.data.len < sizeof buf - 1 ? e.data.len : sizeof buf - 1;
            memcpy(buf, e.data.ptr, l);
            buf[l] = '\0';
            if (strncmp(buf, "p", 1) == 0 || strncmp(buf, "warmup", 6) == 0) {
                h->applied_normal++;
            }
        }
    }
    MUST(raftlet_node_advance(h->node, rd));
    raftlet_ready_free(rd);
    return 1;
}

static size_t deliver(void) {
    size_t len = mbox_len;
    memcpy(batch, mbox, len * sizeof *batch);
    mbox_len = 0;
    for (size_t i = 0; i < len; i++) {
        if (batch[i].to >= 1 && batch[i].to <= NODES) {
            (void)raftlet_node_step(H[batch[i].to].node, batch[i].data, batch[i].len);
        }
        free(batch[i].data);
    }
    return len;
}

/* One round of the driver: every node's ready, then the mail. */
static int round_once(void) {
    int work = 0;
    for (uint64_t id = 1; id <= NODES; id++) {
        work |= handle_ready(id);
    }
    return deliver() > 0 || work;
}

static void settle(void) {
    for (int i = 0; i < 10000 && round_once(); i++) {
    }
}

/* Seconds since an arbitrary start (a monotonic clock). */
static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The driver runs until the client is done and the cluster is quiet. How
 * many rounds the client's proposals take depends on how the scheduler
 * shares the cores between the two threads, so the round count is bounded
 * only once the client is done (the cluster must then settle within
 * DRIVER_MAX_ROUNDS); before that a generous wall-clock bound stops a hung
 * run. */
static void *driver(void *arg) {
    (void)arg;
    long rounds = 0;
    long rounds_after_done = 0;
    int idle_after_done = 0;
    double deadline = now_seconds() + DRIVER_MAX_SECONDS;
    for (;; rounds++) {
        int work = round_once();
        if (rounds % 16 == 0) {
            for (uint64_t id = 1; id <= NODES; id++) {
                MUST(raftlet_node_tick(H[id].node));
            }
        }
        if (atomic_load(&client_done)) {
            idle_after_done = work ? 0 : idle_after_done + 1;
            if (idle_after_done > 3 || ++rounds_after_done >= DRIVER_MAX_ROUNDS) {
                break;
            }
        } else if (rounds % 1024 == 0 && now_seconds() > deadline) {
            break;
        }
    }
    CHECK(atomic_load(&client_done));
    CHECK(rounds_after_done < DRIVER_MAX_ROUNDS);
    return NULL;
}

static void *client(void *arg) {
    (void)arg;
    raftlet_node *n = H[1].node;
    for (int i = 0; i < PROPOSALS; i++) {
        char d[16];
        int len = snprintf(d, sizeof d, "p%d", i);
        raftlet_result rc = raftlet_node_propose(n, (const uint8_t *)d, (size_t)len);
        if (rc == RAFTLET_OK) {
            atomic_fetch_add(&proposals_ok, 1);
        } else if (rc == RAFTLET_ERR_PROPOSAL_DROPPED) {
            atomic_fetch_add(&proposals_dropped, 1);
        } else {
            MUST(rc);
        }
        if (i % 8 == 0) {
            if (raftlet_node_read_index(n, (const uint8_t *)d, (size_t)len) == RAFTLET_OK) {
                atomic_fetch_add(&reads_asked, 1);
            }
            raftlet_status st;
            MUST(raftlet_node_status(n, &st));
            raftlet_progress pr[NODES];
            size_t plen = 0;
            MUST(raftlet_node_progress(n, pr, NODES, &plen));
            char *json = NULL;
            MUST(raftlet_node_status_json(n, &json));
            raftlet_string_free(json);
            bool has = false;
            MUST(raftlet_node_has_ready(n, &has));
            uint64_t first = 0, last = 0;
            MUST(raftlet_storage_bounds(H[1].storage, &first, &last));
        }
    }
    atomic_store(&client_done, true);
    return NULL;
}

/* ---- Two threads advancing the same ready ---- */

#define RACE_ROUNDS 200

typedef struct {
    raftlet_node *node;
    raftlet_ready *rd;
    atomic_int *arrived;
    raftlet_result rc;
} racer;

static void *race_advance(void *arg) {
    racer *r = arg;
    /* Both threads start the call as close together as possible. */
    atomic_fetch_add(r->arrived, 1);
    while (atomic_load(r->arrived) < 2) {
    }
    r->rc = raftlet_node_advance(r->node, r->rd);
    return NULL;
}

/* A single-voter node, led and settled, over its own storage. */
static void solo_node(raftlet_node **n, raftlet_storage **s) {
    const uint64_t voters[] = {1};
    raftlet_config *cfg = NULL;
    MUST(raftlet_config_new(1, &cfg));
    MUST(raftlet_storage_new_memory(s));
    MUST(raftlet_storage_set_conf_state(*s, voters, 1, NULL, 0));
    MUST(raftlet_node_new(cfg, *s, n));
    raftlet_config_free(cfg);
    MUST(raftlet_node_campaign(*n));
    for (int i = 0; i < 10; i++) {
        raftlet_ready *rd = NULL;
        MUST(raftlet_node_ready(*n, &rd));
        MUST(raftlet_storage_append_ready(*s, rd));
        MUST(raftlet_node_advance(*n, rd));
        raftlet_ready_free(rd);
    }
}

static void test_double_advance_race(void) {
    raftlet_node *n = NULL;
    raftlet_storage *s = NULL;
    solo_node(&n, &s);
    raftlet_status st;
    MUST(raftlet_node_status(n, &st));
    CHECK(st.role == 2);
    int one_ok = 0;
    for (int round = 0; round < RACE_ROUNDS; round++) {
        char d[16];
        int len = snprintf(d, sizeof d, "r%d", round);
        MUST(raftlet_node_propose(n, (const uint8_t *)d, (size_t)len));
        raftlet_ready *rd = NULL;
        MUST(raftlet_node_ready(n, &rd));
        MUST(raftlet_storage_append_ready(s, rd));
        atomic_int arrived;
        atomic_init(&arrived, 0);
        racer a = {n, rd, &arrived, RAFTLET_PANIC};
        racer b = {n, rd, &arrived, RAFTLET_PANIC};
        pthread_t ta, tb;
        CHECK(pthread_create(&ta, NULL, race_advance, &a) == 0);
        CHECK(pthread_create(&tb, NULL, race_advance, &b) == 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        bool ok = (a.rc == RAFTLET_OK && b.rc == RAFTLET_ERR_READY_STALE) ||
                  (b.rc == RAFTLET_OK && a.rc == RAFTLET_ERR_READY_STALE);
        if (!ok) {
            fprintf(stderr, "round %d: %s and %s\n", round, raftlet_result_str(a.rc),
                    raftlet_result_str(b.rc));
        }
        one_ok += ok;
        raftlet_ready_free(rd);
    }
    CHECK(one_ok == RACE_ROUNDS);
    /* The node went on: every proposal committed once and is applied. */
    for (int i = 0; i < 10; i++) {
        bool has = false;
        MUST(raftlet_node_has_ready(n, &has));
        if (!has) {
            break;
        }
        raftlet_ready *rd = NULL;
        MUST(raftlet_node_ready(n, &rd));
        MUST(raftlet_storage_append_ready(s, rd));
        MUST(raftlet_node_advance(n, rd));
        raftlet_ready_free(rd);
    }
    uint64_t first = 0, last = 0;
    MUST(raftlet_storage_bounds(s, &first, &last));
    MUST(raftlet_node_status(n, &st));
    CHECK(st.role == 2 && st.term == 1);
    CHECK(last == (uint64_t)RACE_ROUNDS + 1); /* the leader's empty entry, then one per round */
    CHECK(st.commit == last && st.applied == last);
    raftlet_node_free(n);
    raftlet_storage_free(s);
}

/* ---- Two threads running the Ready loop of one node at once ---- */

#define LOOP_ROUNDS 500

typedef struct {
    raftlet_node *node;
    raftlet_storage *storage;
    int id;
    atomic_int *unexpected;
} looper;

static bool documented(raftlet_result rc) {
    return rc == RAFTLET_OK || rc == RAFTLET_ERR_READY_STALE ||
           rc == RAFTLET_ERR_READY_NOT_PERSISTED || rc == RAFTLET_ERR_UNAVAILABLE ||
           rc == RAFTLET_ERR_PROPOSAL_DROPPED;
}

static void *careless_loop(void *arg) {
    looper *l = arg;
    for (int i = 0; i < LOOP_ROUNDS; i++) {
        char d[16];
        int len = snprintf(d, sizeof d, "t%d-%d", l->id, i);
        raftlet_result rc = raftlet_node_propose(l->node, (const uint8_t *)d, (size_t)len);
        raftlet_ready *rd = NULL;
        raftlet_result rr, ra = RAFTLET_OK, rv = RAFTLET_OK;
        if (i % 3 == 2) {
            /* Taken and written by the library, its write acknowledged in
             * the same call while the other thread runs its own cycles. */
            const raftlet_ready_flat *fl = NULL;
            bool has = false;
            rr = raftlet_node_ready_persisted(l->node, l->storage, false, &rd, &fl, &ra, &has);
        } else {
            rr = raftlet_node_ready(l->node, &rd);
            if (rr == RAFTLET_OK) {
                ra = raftlet_storage_append_ready(l->storage, rd);
            }
        }
        if (rr == RAFTLET_OK) {
            /* Thread 1 advances whatever happened; thread 0 only what it persisted. */
            if (ra == RAFTLET_OK || l->id == 1) {
                rv = (i % 2) ? raftlet_node_advance(l->node, rd)
                             : raftlet_node_advance_append(l->node, rd);
            }
            raftlet_ready_free(rd);
        }
        if (!documented(rc) || rr != RAFTLET_OK || !documented(ra) || !documented(rv)) {
            atomic_fetch_add(l->unexpected, 1);
            fprintf(stderr, "thread %d round %d: propose %s ready %s append %s advance %s\n",
                    l->id, i, raftlet_result_str(rc), raftlet_result_str(rr),
                    raftlet_result_str(ra), raftlet_result_str(rv));
        }
    }
    return NULL;
}

static void test_concurrent_ready_loops(void) {
    raftlet_node *n = NULL;
    raftlet_storage *s = NULL;
    solo_node(&n, &s);
    atomic_int unexpected;
    atomic_init(&unexpected, 0);
    looper a = {n, s, 0, &unexpected};
    looper b = {n, s, 1, &unexpected};
    pthread_t ta, tb;
    CHECK(pthread_create(&ta, NULL, careless_loop, &a) == 0);
    CHECK(pthread_create(&tb, NULL, careless_loop, &b) == 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(atomic_load(&unexpected) == 0);
    /* Not poisoned: the node still answers, as the leader of term 1. */
    raftlet_status st;
    MUST(raftlet_node_status(n, &st));
    CHECK(st.role == 2 && st.term == 1 && st.applied <= st.commit);
    bool has = false;
    MUST(raftlet_node_has_ready(n, &has));
    MUST(raftlet_node_tick(n));
    raftlet_node_free(n);
    raftlet_storage_free(s);
}

/* Readies handed from the thread that drives a node to one that frees
 * them (a mutex-guarded queue; NULL ends it). */
#define FREE_QUEUE 64
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    raftlet_ready *q[FREE_QUEUE];
    size_t head, len;
} fq = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0};

static void fq_push(raftlet_ready *rd) {
    pthread_mutex_lock(&fq.mu);
    while (fq.len == FREE_QUEUE) {
        pthread_cond_wait(&fq.cv, &fq.mu);
    }
    fq.q[(fq.head + fq.len) % FREE_QUEUE] = rd;
    fq.len++;
    pthread_cond_broadcast(&fq.cv);
    pthread_mutex_unlock(&fq.mu);
}

static void *freer(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&fq.mu);
        while (fq.len == 0) {
            pthread_cond_wait(&fq.cv, &fq.mu);
        }
        raftlet_ready *rd = fq.q[fq.head];
        fq.head = (fq.head + 1) % FREE_QUEUE;
        fq.len--;
        pthread_cond_broadcast(&fq.cv);
        pthread_mutex_unlock(&fq.mu);
        if (rd == NULL) {
            return NULL;
        }
        raftlet_ready_free(rd);
    }
}

/* The freedom advance_is_noop gives: a ready whose advance would change
 * nothing is only freed, at any later time and from any thread. Here
 * another thread frees every such ready while this one goes on driving
 * the node (reads, and proposals whose readies it advances itself): every
 * noop ready is a read's, every read is answered, every proposal applied,
 * and the node stays healthy. */
static void test_noop_readies_freed_elsewhere(void) {
    raftlet_node *n = NULL;
    raftlet_storage *s = NULL;
    solo_node(&n, &s);
    pthread_t tf;
    CHECK(pthread_create(&tf, NULL, freer, NULL) == 0);
    int noop = 0, answered = 0, applied = 0, wrong = 0;
    const int rounds = 2000;
    for (int i = 0; i < rounds; i++) {
        uint8_t ctx[4] = {(uint8_t)i, (uint8_t)(i >> 8), 0, 1};
        if (i % 4 == 3) {
            MUST(raftlet_node_propose(n, ctx, sizeof ctx));
        } else {
            MUST(raftlet_node_read_index(n, ctx, sizeof ctx));
        }
        for (;;) {
            raftlet_ready *rd = NULL;
            const raftlet_ready_flat *fl = NULL;
            raftlet_result persist = RAFTLET_PANIC;
            bool has = false;
            MUST(raftlet_node_ready_persisted(n, s, true, &rd, &fl, &persist, &has));
            if (rd == NULL) {
                break;
            }
            MUST(persist);
            answered += (int)fl->read_state_count;
            applied += (int)fl->committed_entry_count;
            if (fl->advance_is_noop) {
                noop++;
                wrong += fl->read_state_count != 1 || fl->committed_entry_count != 0;
                fq_push(rd);
            } else {
                MUST(raftlet_node_advance(n, rd));
                raftlet_ready_free(rd);
            }
        }
    }
    fq_push(NULL);
    pthread_join(tf, NULL);
    CHECK(noop == rounds - rounds / 4);
    CHECK(wrong == 0);
    CHECK(answered == rounds - rounds / 4);
    CHECK(applied == rounds / 4);
    raftlet_status st;
    MUST(raftlet_node_status(n, &st));
    CHECK(st.role == 2 && st.applied == st.commit);
    raftlet_node_free(n);
    raftlet_storage_free(s);
}

int main(void) {
    const uint64_t voters[] = {1, 2, 3};
    for (uint64_t id = 1; id <= NODES; id++) {
        raftlet_config *cfg = NULL;
        MUST(raftlet_config_new(id, &cfg));
        MUST(raftlet_storage_new_memory(&H[id].storage));
        MUST(raftlet_storage_set_conf_state(H[id].storage, voters, NODES, NULL, 0));
        MUST(raftlet_node_new(cfg, H[id].storage, &H[id].node));
        raftlet_config_free(cfg);
    }
    /* Single-threaded warm-up: node 1 leads and one entry commits. */
    MUST(raftlet_node_campaign(H[1].node));
    settle();
    raftlet_status st;
    MUST(raftlet_node_status(H[1].node, &st));
    CHECK(st.role == 2);
    MUST(raftlet_node_propose(H[1].node, (const uint8_t *)"warmup", 6));
    settle();
    CHECK(H[1].applied_normal == 1);

    pthread_t td, tc;
    CHECK(pthread_create(&td, NULL, driver, NULL) == 0);
    CHECK(pthread_create(&tc, NULL, client, NULL) == 0);
    pthread_join(tc, NULL);
    pthread_join(td, NULL);
    settle();

    int ok = atomic_load(&proposals_ok);
    CHECK(ok + atomic_load(&proposals_dropped) == PROPOSALS);
    CHECK(ok == PROPOSALS); /* node 1 stayed the leader */
    for (uint64_t id = 1; id <= NODES; id++) {
        CHECK(H[id].applied_normal == (size_t)ok + 1);
    }
    CHECK(atomic_load(&reads_asked) > 0);
    CHECK(atomic_load(&reads_answered) == atomic_load(&reads_asked));
    MUST(raftlet_node_status(H[1].node, &st));
    CHECK(st.role == 2 && st.applied == st.commit);

    for (uint64_t id = 1; id <= NODES; id++) {
        raftlet_node_free(H[id].node);
        raftlet_storage_free(H[id].storage);
    }

    test_double_advance_race();
    test_concurrent_ready_loops();
    test_noop_readies_freed_elsewhere();
    printf("%d passed, %d failed\n", atomic_load(&g_passed), atomic_load(&g_failed));
    return atomic_load(&g_failed) == 0 ? 0 : 1;
}
