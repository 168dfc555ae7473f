/*
 * A node whose log is on disk: it commits two entries, every handle is
 * freed (as when the process stops), and the reopened storage gives the
 * node its log back: it applies the same entries again. Usage:
 * disk_restart [DIR] (default: a fresh raftlet-disk-example directory).
 */
#include <stdio.h>
#include <stdlib.h>

#include "raftlet.h"

#define CHECK(call)                                                                        \
    do {                                                                                   \
        raftlet_result rc_ = (call);                                                       \
        if (rc_ != RAFTLET_OK) {                                                           \
            fprintf(stderr, "%s failed: %s (%s)\n", #call, raftlet_result_str(rc_),        \
                    raftlet_last_error_message());                                         \
            exit(1);                                                                       \
        }                                                                                  \
    } while (0)

/* The Ready loop: persist, apply (print), advance. Returns entries applied. */
static int drain(raftlet_node *n, raftlet_storage *st) {
    int applied = 0;
    for (;;) {
        bool has;
        CHECK(raftlet_node_has_ready(n, &has));
        if (!has) {
            break;
        }
        raftlet_ready *rd;
        size_t count;
        CHECK(raftlet_node_ready(n, &rd));
        CHECK(raftlet_storage_append_ready(st, rd)); /* durable before advance */
        CHECK(raftlet_ready_committed_entry_count(rd, &count));
        for (size_t i = 0; i < count; i++) {
            raftlet_entry_view e;
            CHECK(raftlet_ready_committed_entry(rd, i, &e));
            if (e.data.len > 0) {
                printf("  applied %llu: %.*s\n", (unsigned long long)e.index, (int)e.data.len,
                       (const char *)e.data.ptr);
                applied++;
            }
        }
        CHECK(raftlet_node_advance(n, rd));
        raftlet_ready_free(rd);
    }
    return applied;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "raftlet-disk-example";
    const uint64_t voters[] = {1};
    raftlet_config *cfg;
    raftlet_storage *st;
    raftlet_node *n;
    CHECK(raftlet_config_new(1, &cfg));

    printf("first run: elect, write two entries\n");
    CHECK(raftlet_storage_open(dir, 1, &st));
    CHECK(raftlet_storage_set_conf_state(st, voters, 1, NULL, 0));
    CHECK(raftlet_node_new(cfg, st, &n));
    CHECK(raftlet_node_campaign(n));
    drain(n, st);
    CHECK(raftlet_node_propose(n, (const uint8_t *)"x=1", 3));
    CHECK(raftlet_node_propose(n, (const uint8_t *)"y=2", 3));
    int before = drain(n, st);
    raftlet_node_free(n); /* the process goes away */
    raftlet_storage_free(st);

    printf("restart: the log comes back from %s\n", dir);
    CHECK(raftlet_storage_open(dir, 1, &st));
    CHECK(raftlet_node_new(cfg, st, &n));
    int after = drain(n, st);
    raftlet_node_free(n);
    raftlet_storage_free(st);
    raftlet_config_free(cfg);
    if (before < 2 || after != before) {
        fprintf(stderr, "applied %d entries before the restart and %d after\n", before, after);
        return 1;
    }
    return 0;
}
