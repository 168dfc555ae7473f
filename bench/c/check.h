/* CHECK(call): the bench harnesses' error check. A raftlet call that does
 * not return RAFTLET_OK prints where it failed, the result code and the
 * library's message, and exits with status 1. */
#ifndef RAFTLET_BENCH_CHECK_H
#define RAFTLET_BENCH_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "raftlet.h"

#define CHECK(call)                                                                   \
    do {                                                                              \
        raftlet_result rc_ = (call);                                                  \
        if (rc_ != RAFTLET_OK) {                                                      \
            fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call, \
                    raftlet_result_str(rc_), raftlet_last_error_message());           \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#endif
