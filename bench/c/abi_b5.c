/*
 * B5 at one read per round through the C ABI, for instruction counts
 * (callgrind): three voters in one process; each round the leader gets one
 * raftlet_node_read_index, then every node's Readies are taken with their
 * writes acknowledged (raftlet_node_ready_persisted), their messages copied
 * out as raftpb bytes and each node's batch stepped in one call
 * (raftlet_node_step_batch), until no node has work and the read is
 * answered. The calls a Go host of the view API makes, without the Go
 * runtime.
 *
 * Usage: abi_b5 [rounds=20000]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "raftlet.h"

#define NODES 3
#define MAX_WIRE 1024
#define MAX_QUEUE 256

typedef struct {
    int to;
    size_t len;
    uint8_t data[MAX_WIRE];
} wire;

static wire queue[MAX_QUEUE];
static int queued;
static raftlet_node *nodes[NODES];
static raftlet_storage *storages[NODES];
static unsigned long reads;

/* Copies the messages of a flat view into the queue and counts its reads. */
static void collect(const raftlet_ready_flat *flat) {
    for (size_t k = 0; k < flat->message_count; k++) {
        const raftlet_message_view *m = &flat->messages[k];
        if (queued == MAX_QUEUE || m->data.len > MAX_WIRE || m->to < 1 || m->to > NODES) {
            fprintf(stderr, "unexpected message to %llu of %zu bytes\n", (unsigned long long)m->to,
                    m->data.len);
            exit(1);
        }
        wire *w = &queue[queued++];
        w->to = (int)m->to - 1;
        w->len = m->data.len;
        memcpy(w->data, m->data.ptr, m->data.len);
    }
    reads += flat->read_state_count;
}

/* Handles a ready of node i: its messages queued, then advanced; a ready
 * whose advance would change nothing (advance_is_noop) is only freed, as
 * the Go binding releases it. */
static void handle(int i, raftlet_ready *rd, const raftlet_ready_flat *flat) {
    collect(flat);
    if (flat->advance_is_noop) {
        raftlet_ready_free(rd);
        return;
    }
    raftlet_ready *light = NULL;
    const raftlet_ready_flat *lflat = NULL;
    raftlet_result persist = RAFTLET_OK;
    bool has = false;
    CHECK(raftlet_node_advance_light(nodes[i], rd, storages[i], &light, &lflat, &persist, &has));
    raftlet_ready_free(rd);
    if (light != NULL) {
        CHECK(persist);
        collect(lflat);
        CHECK(raftlet_node_advance(nodes[i], light));
        raftlet_ready_free(light);
    }
}

/* Runs Ready cycles and delivers messages until every node is idle. */
static void pump(void) {
    for (;;) {
        int busy = 0;
        for (int i = 0; i < NODES; i++) {
            bool has = false;
            CHECK(raftlet_node_has_ready(nodes[i], &has));
            while (has) {
                raftlet_ready *rd = NULL;
                const raftlet_ready_flat *flat = NULL;
                raftlet_result persist = RAFTLET_OK;
                CHECK(raftlet_node_ready_persisted(nodes[i], storages[i], true, &rd, &flat, &persist,
                                                   &has));
                if (rd == NULL) {
                    break;
                }
                CHECK(persist);
                busy = 1;
                handle(i, rd, flat);
                CHECK(raftlet_node_has_ready(nodes[i], &has));
            }
        }
        if (queued == 0 && !busy) {
            return;
        }
        for (int i = 0; i < NODES; i++) {
            raftlet_bytes batch[MAX_QUEUE];
            size_t count = 0;
            for (int k = 0; k < queued; k++) {
                if (queue[k].to == i) {
                    batch[count].ptr = queue[k].data;
                    batch[count].len = queue[k].len;
                    count++;
                }
            }
            if (count > 0) {
                CHECK(raftlet_node_step_batch(nodes[i], batch, count, NULL));
            }
        }
        queued = 0;
    }
}

int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 20000;
    const uint64_t voters[NODES] = {1, 2, 3};
    for (int i = 0; i < NODES; i++) {
        raftlet_config *config = NULL;
        CHECK(raftlet_config_new((uint64_t)i + 1, &config));
        CHECK(raftlet_config_set_election_tick(config, 10));
        CHECK(raftlet_config_set_heartbeat_tick(config, 1));
        CHECK(raftlet_config_set_max_size_per_msg(config, 1 << 20));
        CHECK(raftlet_config_set_max_committed_size_per_ready(config, 1 << 20));
        CHECK(raftlet_config_set_max_inflight_msgs(config, 256));
        CHECK(raftlet_config_set_check_quorum(config, true));
        CHECK(raftlet_config_set_pre_vote(config, true));
        CHECK(raftlet_storage_new_memory(&storages[i]));
        CHECK(raftlet_storage_set_conf_state(storages[i], voters, NODES, NULL, 0));
        CHECK(raftlet_node_new(config, storages[i], &nodes[i]));
        raftlet_config_free(config);
    }
    CHECK(raftlet_node_campaign(nodes[0]));
    pump();
    const uint8_t first[128] = {0};
    CHECK(raftlet_node_propose(nodes[0], first, sizeof first));
    pump();
    reads = 0;
    for (long r = 0; r < rounds; r++) {
        uint8_t ctx[8];
        uint64_t c = (uint64_t)r + 1;
        memcpy(ctx, &c, sizeof ctx);
        CHECK(raftlet_node_read_index(nodes[0], ctx, sizeof ctx));
        pump();
    }
    printf("{\"rounds\": %ld, \"reads\": %lu}\n", rounds, reads);
    for (int i = 0; i < NODES; i++) {
        raftlet_node_free(nodes[i]);
        raftlet_storage_free(storages[i]);
    }
    return reads == (unsigned long)rounds ? 0 : 1;
}
