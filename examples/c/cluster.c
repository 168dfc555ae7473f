/*
 * A raftlet cluster driven from C: three voters elect a leader and
 * replicate, a fourth node joins as a learner, catches up and is promoted
 * to voter. Prints a timeline and exits non-zero if a step fails.
 *
 * Build: `make test-c` links target/release/libraftlet.a; against an
 * installed raftlet, README.md gives the pkg-config lines (shared or
 * static), which `make test-install` runs on this file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raftlet.h"

#define MAX_NODES 4
#define MAX_MSGS 4096

#define CHECK(call)                                                               \
    do {                                                                          \
        raftlet_result rc_ = (call);                                              \
        if (rc_ != RAFTLET_OK) {                                                  \
            fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__,    \
                    #call, raftlet_result_str(rc_), raftlet_last_error_message()); \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

typedef struct {
    raftlet_node *node;
    raftlet_storage *storage;
    size_t applied;      /* normal entries with data applied */
} host;

typedef struct {
    uint64_t to;
    uint8_t *data;
    size_t len;
} envelope;

static host hosts[MAX_NODES + 1]; /* indexed by id; 0 unused */
static envelope mailbox[MAX_MSGS];
static size_t mailbox_len;
static unsigned long now;

static size_t log_records;

/* Receives the library's log records (here: counted, warnings printed). */
static void on_log(void *user_data, uint32_t level, uint64_t node_id, const uint8_t *message,
                   size_t message_len) {
    (void)user_data;
    log_records++;
    if (level >= 2) {
        fprintf(stderr, "raftlet warn [node %llu]: %.*s\n", (unsigned long long)node_id,
                (int)message_len, (const char *)message);
    }
}

static const char *role_name(uint32_t role) {
    switch (role) {
    case 0: return "follower";
    case 1: return "candidate";
    case 2: return "leader";
    case 3: return "pre-candidate";
    default: return "?";
    }
}

static void post(const raftlet_message_view *m) {
    if (mailbox_len == MAX_MSGS) {
        fprintf(stderr, "mailbox overflow\n");
        exit(1);
    }
    envelope *e = &mailbox[mailbox_len++];
    e->to = m->to;
    e->len = m->data.len;
    e->data = malloc(m->data.len ? m->data.len : 1);
    if (!e->data) {
        exit(1);
    }
    memcpy(e->data, m->data.ptr, m->data.len);
}

static void start_node(uint64_t id, const uint64_t *voters, size_t n_voters,
                       const uint64_t *learners, size_t n_learners) {
    raftlet_config *cfg = NULL;
    CHECK(raftlet_config_new(id, &cfg));
    CHECK(raftlet_storage_new_memory(&hosts[id].storage));
    if (n_voters > 0) {
        CHECK(raftlet_storage_set_conf_state(hosts[id].storage, voters, n_voters, learners,
                                             n_learners));
    }
    CHECK(raftlet_node_new(cfg, hosts[id].storage, &hosts[id].node));
    raftlet_config_free(cfg);
}

/* One pass of the Ready loop on one node. Returns whether it had work. */
static int handle_ready(uint64_t id) {
    host *h = &hosts[id];
    bool has = false;
    CHECK(raftlet_node_has_ready(h->node, &has));
    if (!has) {
        return 0;
    }
    raftlet_ready *rd = NULL;
    CHECK(raftlet_node_ready(h->node, &rd));

    bool has_ss = false;
    raftlet_soft_state ss;
    CHECK(raftlet_ready_soft_state(rd, &has_ss, &ss));
    if (has_ss) {
        printf("[tick %3lu] node %llu is now %s (leader %llu)\n", now,
               (unsigned long long)id, role_name(ss.role), (unsigned long long)ss.leader_id);
    }
    /* 1. Persist snapshot, entries and hard state. */
    CHECK(raftlet_storage_append_ready(h->storage, rd));
    /* 2. Send: immediate messages, then those that wait for the write. */
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
    /* 3. Apply committed entries. */
    CHECK(raftlet_ready_committed_entry_count(rd, &n));
    for (size_t i = 0; i < n; i++) {
        raftlet_entry_view e;
        CHECK(raftlet_ready_committed_entry(rd, i, &e));
        if (e.entry_type == 0 && e.data.len > 0) {
            h->applied++;
        } else if (e.entry_type == 1 || e.entry_type == 2) {
            uint8_t cs[256];
            size_t cs_len = 0;
            CHECK(raftlet_node_apply_conf_change(h->node, e.data.ptr, e.data.len,
                                                 e.entry_type == 2, cs, sizeof cs, &cs_len));
            CHECK(raftlet_storage_set_conf_state_encoded(h->storage, cs, cs_len));
            if (e.entry_type == 1) {
                raftlet_conf_change_single cc;
                CHECK(raftlet_conf_change_decode(e.data.ptr, e.data.len, &cc));
                printf("[tick %3lu] node %llu applied conf change: %s %llu\n", now,
                       (unsigned long long)id,
                       cc.change_type == 3 ? "add learner" : cc.change_type == 0 ? "add voter" : "other",
                       (unsigned long long)cc.node_id);
            }
        }
    }
    /* 4. Advance, then release the ready. */
    CHECK(raftlet_node_advance(h->node, rd));
    raftlet_ready_free(rd);
    return 1;
}

static void settle(void) {
    for (;;) {
        int work = 0;
        for (uint64_t id = 1; id <= MAX_NODES; id++) {
            if (hosts[id].node) {
                work |= handle_ready(id);
            }
        }
        size_t len = mailbox_len;
        mailbox_len = 0;
        for (size_t i = 0; i < len; i++) {
            envelope *e = &mailbox[i];
            if (e->to >= 1 && e->to <= MAX_NODES && hosts[e->to].node) {
                /* Errors such as a response from an unknown peer are normal
                 * on a real network; a host logs and drops them. */
                (void)raftlet_node_step(hosts[e->to].node, e->data, e->len);
            }
            free(e->data);
        }
        if (!work && len == 0) {
            return;
        }
    }
}

static void tick_all(unsigned ticks) {
    for (unsigned t = 0; t < ticks; t++) {
        now++;
        for (uint64_t id = 1; id <= MAX_NODES; id++) {
            if (hosts[id].node) {
                CHECK(raftlet_node_tick(hosts[id].node));
            }
        }
        settle();
    }
}

static uint64_t find_leader(void) {
    for (uint64_t id = 1; id <= MAX_NODES; id++) {
        if (!hosts[id].node) {
            continue;
        }
        raftlet_status st;
        CHECK(raftlet_node_status(hosts[id].node, &st));
        if (st.role == 2) {
            return id;
        }
    }
    return 0;
}

static void propose_conf_change(uint64_t leader, uint32_t type, uint64_t node_id) {
    uint8_t buf[64];
    size_t len = 0;
    CHECK(raftlet_conf_change_encode(type, node_id, NULL, 0, buf, sizeof buf, &len));
    CHECK(raftlet_node_propose_conf_change(hosts[leader].node, buf, len, false));
}

int main(void) {
    printf("raftlet %s (C ABI)\n", raftlet_version());
    CHECK(raftlet_set_log_callback(on_log, NULL, 1 /* info and above */));
    const uint64_t voters[] = {1, 2, 3};
    for (uint64_t id = 1; id <= 3; id++) {
        start_node(id, voters, 3, NULL, 0);
    }
    uint64_t leader = 0;
    for (int i = 0; i < 100 && !leader; i++) {
        tick_all(1);
        leader = find_leader();
    }
    if (!leader) {
        fprintf(stderr, "no leader elected\n");
        return 1;
    }
    printf("[tick %3lu] node %llu leads\n", now, (unsigned long long)leader);

    for (int i = 0; i < 20; i++) {
        char data[32];
        int len = snprintf(data, sizeof data, "put k%d=v%d", i, i);
        CHECK(raftlet_node_propose(hosts[leader].node, (const uint8_t *)data, (size_t)len));
        settle();
    }
    for (uint64_t id = 1; id <= 3; id++) {
        if (hosts[id].applied != 20) {
            fprintf(stderr, "node %llu applied %zu entries, expected 20\n",
                    (unsigned long long)id, hosts[id].applied);
            return 1;
        }
    }
    printf("[tick %3lu] all three voters applied 20 entries\n", now);

    /* A new, empty node 4 joins as a learner: it receives the log but does
     * not count in the quorum until it is promoted. The cluster adds it
     * first; the new node starts knowing the configuration it joins. */
    propose_conf_change(leader, 3 /* ConfChangeAddLearnerNode */, 4);
    settle();
    const uint64_t learners[] = {4};
    start_node(4, voters, 3, learners, 1);
    settle();
    tick_all(5);
    if (hosts[4].applied != 20) {
        fprintf(stderr, "the learner applied %zu entries, expected 20\n", hosts[4].applied);
        return 1;
    }
    printf("[tick %3lu] learner 4 caught up (%zu entries applied)\n", now, hosts[4].applied);

    /* Promotion: the leader accepts it because the learner is caught up. */
    propose_conf_change(leader, 0 /* ConfChangeAddNode */, 4);
    settle();
    tick_all(2);
    raftlet_status st;
    CHECK(raftlet_node_status(hosts[leader].node, &st));
    if (st.voters_count != 4 || st.learners_count != 0) {
        fprintf(stderr, "after promotion: %zu voters, %zu learners\n", st.voters_count,
                st.learners_count);
        return 1;
    }
    char *json = NULL;
    CHECK(raftlet_node_status_json(hosts[leader].node, &json));
    printf("[tick %3lu] node 4 promoted; leader status: %s\n", now, json);
    raftlet_string_free(json);

    CHECK(raftlet_set_log_callback(NULL, NULL, 0));
    if (log_records == 0) {
        fprintf(stderr, "no log records reached the callback\n");
        return 1;
    }
    printf("[tick %3lu] the log callback received %zu records\n", now, log_records);
    for (uint64_t id = 1; id <= MAX_NODES; id++) {
        raftlet_node_free(hosts[id].node);
        raftlet_storage_free(hosts[id].storage);
    }
    printf("C example finished: every step happened as described\n");
    return 0;
}
