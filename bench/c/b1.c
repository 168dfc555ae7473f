/*
 * B2 (C): B1 through the C ABI. Three voters in one process; each round the
 * leader gets 256 raftlet_node_propose calls of SIZE bytes, then Ready
 * cycles run on all nodes until the round is applied everywhere. Messages
 * are copied out of the Ready as raftpb bytes and stepped in as bytes.
 * Logs are compacted when a round crosses a 100k-entry boundary (or 256 MiB
 * of payload). Prints one JSON line (CPU time, as the other harnesses).
 *
 * Usage: b1 [total_entries=500000] [size=128]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "raftlet.h"

typedef struct {
    raftlet_node *node;
    raftlet_storage *storage;
    uint64_t applied;       /* normal entries with data applied */
    uint64_t applied_index; /* last applied index */
} host;

typedef struct {
    uint64_t to;
    uint8_t *data;
    size_t len;
} envelope;

static host hosts[4]; /* by id; 0 unused */
static envelope *mailbox, *inflight;
static size_t mailbox_len, mailbox_cap;
static uint64_t msgs;

static void post(const raftlet_message_view *m) {
    if (mailbox_len == mailbox_cap) {
        mailbox_cap = mailbox_cap ? 2 * mailbox_cap : 1024;
        mailbox = realloc(mailbox, mailbox_cap * sizeof *mailbox);
        inflight = realloc(inflight, mailbox_cap * sizeof *inflight);
        if (!mailbox || !inflight) exit(1);
    }
    envelope *e = &mailbox[mailbox_len++];
    e->to = m->to;
    e->len = m->data.len;
    e->data = malloc(m->data.len ? m->data.len : 1);
    if (!e->data) exit(1);
    memcpy(e->data, m->data.ptr, m->data.len);
}

static int cycle(uint64_t id) {
    host *h = &hosts[id];
    bool has = false;
    CHECK(raftlet_node_has_ready(h->node, &has));
    if (!has) return 0;
    raftlet_ready *rd = NULL;
    CHECK(raftlet_node_ready(h->node, &rd));
    CHECK(raftlet_storage_append_ready(h->storage, rd));
    size_t n = 0;
    CHECK(raftlet_ready_message_count(rd, &n));
    for (size_t i = 0; i < n; i++) {
        raftlet_message_view m;
        CHECK(raftlet_ready_message(rd, i, &m));
        post(&m);
    }
    CHECK(raftlet_ready_persisted_message_count(rd, &n));
    for (size_t i = 0; i < n; i++) {
        raftlet_message_view m;
        CHECK(raftlet_ready_persisted_message(rd, i, &m));
        post(&m);
    }
    CHECK(raftlet_ready_committed_entry_count(rd, &n));
    for (size_t i = 0; i < n; i++) {
        raftlet_entry_view e;
        CHECK(raftlet_ready_committed_entry(rd, i, &e));
        if (e.entry_type == 0 && e.data.len > 0) h->applied++;
        h->applied_index = e.index;
    }
    CHECK(raftlet_node_advance(h->node, rd));
    raftlet_ready_free(rd);
    return 1;
}

static void pump(void) {
    for (;;) {
        int work = 0;
        for (uint64_t id = 1; id <= 3; id++) work |= cycle(id);
        if (mailbox_len == 0) {
            if (!work) return;
            continue;
        }
        size_t len = mailbox_len;
        envelope *t = inflight;
        inflight = mailbox;
        mailbox = t;
        mailbox_len = 0;
        for (size_t i = 0; i < len; i++) {
            envelope *e = &inflight[i];
            msgs++;
            (void)raftlet_node_step(hosts[e->to].node, e->data, e->len);
            free(e->data);
        }
    }
}

static double cpu_secs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double wall_secs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long peak_rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = 0;
    if (!f) return 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "VmHWM:", 6) == 0) v = strtol(line + 6, NULL, 10);
    }
    fclose(f);
    return v;
}

int main(int argc, char **argv) {
    uint64_t total = argc > 1 ? strtoull(argv[1], NULL, 10) : 500000;
    size_t size = argc > 2 ? strtoull(argv[2], NULL, 10) : 128;
    const uint64_t per_round = 256;
    const uint64_t voters[] = {1, 2, 3};
    for (uint64_t id = 1; id <= 3; id++) {
        raftlet_config *cfg = NULL;
        CHECK(raftlet_config_new(id, &cfg));
        CHECK(raftlet_storage_new_memory(&hosts[id].storage));
        CHECK(raftlet_storage_set_conf_state(hosts[id].storage, voters, 3, NULL, 0));
        CHECK(raftlet_node_new(cfg, hosts[id].storage, &hosts[id].node));
        raftlet_config_free(cfg);
    }
    CHECK(raftlet_node_campaign(hosts[1].node));
    pump();
    raftlet_status st;
    CHECK(raftlet_node_status(hosts[1].node, &st));
    if (st.role != 2) {
        fprintf(stderr, "node 1 did not win its election\n");
        return 1;
    }
    uint8_t *payload = malloc(size);
    memset(payload, 0x5a, size);
    uint64_t every = 100000;
    if ((256ull << 20) / size < every) every = (256ull << 20) / size;
    uint64_t next = every, rounds = total / per_round, m0 = msgs;
    double c0 = cpu_secs(), w0 = wall_secs();
    for (uint64_t r = 0; r < rounds; r++) {
        for (uint64_t i = 0; i < per_round; i++) {
            CHECK(raftlet_node_propose(hosts[1].node, payload, size));
        }
        pump();
        if ((r + 1) * per_round >= next) {
            for (uint64_t id = 1; id <= 3; id++) {
                CHECK(raftlet_storage_compact(hosts[id].storage, hosts[id].applied_index));
            }
            next += every;
        }
    }
    double cpu = cpu_secs() - c0, wall = wall_secs() - w0;
    uint64_t n = rounds * per_round;
    for (uint64_t id = 1; id <= 3; id++) {
        if (hosts[id].applied != n) {
            fprintf(stderr, "node %llu applied %llu of %llu\n", (unsigned long long)id,
                    (unsigned long long)hosts[id].applied, (unsigned long long)n);
            return 1;
        }
    }
    printf("{\"workload\":\"b1\",\"impl\":\"raftlet-c\",\"params\":{\"total\":\"%llu\",\"size\":\"%zu\"},"
           "\"metrics\":{\"entries_per_s\":%.1f,\"entries_per_s_wall\":%.1f,\"mb_per_s\":%.3f,"
           "\"msgs_per_entry\":%.4f,\"peak_rss_mib\":%.1f,\"cpu_secs\":%.4f,\"wall_secs\":%.4f}}\n",
           (unsigned long long)total, size, n / cpu, n / wall, n * (double)size / cpu / 1e6,
           (double)(msgs - m0) / n, peak_rss_kib() / 1024.0, cpu, wall);
    for (uint64_t id = 1; id <= 3; id++) {
        raftlet_node_free(hosts[id].node);
        raftlet_storage_free(hosts[id].storage);
    }
    free(payload);
    free(mailbox);
    free(inflight);
    return 0;
}
