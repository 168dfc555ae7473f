/* Placeholder replaced by the C API test suite. */
#include "raftlet.h"
int main(void) { return raftlet_result_str(RAFTLET_OK) == 0; }
