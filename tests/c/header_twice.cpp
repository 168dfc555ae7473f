// The header must be includable twice from C++ and compile with -Werror.
#include "raftlet.h"
#include "raftlet.h"

static_assert(RAFTLET_OK == 0, "RAFTLET_OK is 0");
static_assert(RAFTLET_VERSION_NUMBER ==
                  ((RAFTLET_VERSION_MAJOR << 24) | (RAFTLET_VERSION_MINOR << 16) |
                   (RAFTLET_VERSION_PATCH << 8)),
              "RAFTLET_VERSION_NUMBER packs MAJOR.MINOR.PATCH");

int raftlet_cpp_check() {
    raftlet_config *cfg = nullptr;
    if (raftlet_config_new(1, &cfg) != RAFTLET_OK) {
        return 1;
    }
    raftlet_config_free(cfg);
    return 0;
}
