/*
 * B3 through the C ABI, for instruction counts (callgrind): one voter; each
 * operation proposes 128 bytes (raftlet_node_propose), takes the Ready with
 * its write acknowledged (raftlet_node_ready_persisted: the entry comes
 * back committed) and advances it (raftlet_node_advance_light): the calls
 * a Go host of the view API makes for a proposal, without the Go runtime.
 * Prints the operations done; compare with the native row
 * (`raftlet-bench b3 raftlet`) to see what the boundary costs.
 *
 * Usage: abi_b3 [ops=20000]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "raftlet.h"

/* Takes and handles the node's Readies until it has none; returns the
 * committed entries handed out. */
static unsigned long drain(raftlet_node *node, raftlet_storage *storage) {
    unsigned long applied = 0;
    raftlet_ready *rd = NULL;
    const raftlet_ready_flat *flat = NULL;
    raftlet_result persist = RAFTLET_OK;
    bool has = false;
    CHECK(raftlet_node_ready_persisted(node, storage, true, &rd, &flat, &persist, &has));
    while (rd != NULL) {
        CHECK(persist);
        applied += flat->committed_entry_count;
        raftlet_ready *light = NULL;
        const raftlet_ready_flat *lflat = NULL;
        CHECK(raftlet_node_advance_light(node, rd, storage, &light, &lflat, &persist, &has));
        raftlet_ready_free(rd);
        rd = NULL;
        if (light != NULL) {
            CHECK(persist);
            applied += lflat->committed_entry_count;
            CHECK(raftlet_node_advance(node, light));
            raftlet_ready_free(light);
        }
        if (has) {
            CHECK(raftlet_node_ready_persisted(node, storage, true, &rd, &flat, &persist, &has));
        }
    }
    return applied;
}

int main(int argc, char **argv) {
    long ops = argc > 1 ? atol(argv[1]) : 20000;
    raftlet_config *config = NULL;
    CHECK(raftlet_config_new(1, &config));
    CHECK(raftlet_config_set_election_tick(config, 10));
    CHECK(raftlet_config_set_heartbeat_tick(config, 1));
    CHECK(raftlet_config_set_max_size_per_msg(config, 1 << 20));
    CHECK(raftlet_config_set_max_committed_size_per_ready(config, 1 << 20));
    CHECK(raftlet_config_set_max_inflight_msgs(config, 256));
    raftlet_storage *storage = NULL;
    CHECK(raftlet_storage_new_memory(&storage));
    const uint64_t voters[1] = {1};
    CHECK(raftlet_storage_set_conf_state(storage, voters, 1, NULL, 0));
    raftlet_node *node = NULL;
    CHECK(raftlet_node_new(config, storage, &node));
    raftlet_config_free(config);
    CHECK(raftlet_node_campaign(node));
    drain(node, storage);
    uint8_t payload[128];
    unsigned long applied = 0;
    for (long i = 0; i < ops; i++) {
        memset(payload, (int)(i & 0xff), sizeof payload);
        CHECK(raftlet_node_propose(node, payload, sizeof payload));
        applied += drain(node, storage);
    }
    printf("{\"ops\": %ld, \"applied\": %lu}\n", ops, applied);
    raftlet_node_free(node);
    raftlet_storage_free(storage);
    return applied == (unsigned long)ops ? 0 : 1;
}
