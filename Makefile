# raftlet — the one entry point. `make help` lists the targets.
SHELL := /bin/bash
CARGO ?= cargo
CC ?= cc
SEEDS ?= 20000
FUZZ_SECONDS ?= 60
PREFIX ?= /usr/local
TOOLS := build/tools/bin
CBINDGEN := $(TOOLS)/cbindgen
CFLAGS_STRICT := -std=c11 -Wall -Wextra -Wpedantic -Werror -Iinclude
CLIBS := -lpthread -ldl -lm
SANITIZE := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
STATICLIB := target/release/libraftlet.a
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)

# `make help` lists these first, in this order; every other target with a
# `## ` description follows, for developers.
USER_TARGETS := demo test install wheel bench

.PHONY: help
help: ## list the targets
	@awk -F':.*## ' -v users="$(USER_TARGETS)" ' \
	  /^[a-zA-Z_-]+:.*## / { desc[$$1] = $$2; order[++n] = $$1 } \
	  END { \
	    print "Using raftlet:"; k = split(users, u, " "); \
	    for (i = 1; i <= k; i++) { printf "  %-16s %s\n", u[i], desc[u[i]]; mine[u[i]] = 1 } \
	    print ""; print "Working on raftlet:"; \
	    for (i = 1; i <= n; i++) if (!(order[i] in mine)) printf "  %-16s %s\n", order[i], desc[order[i]] \
	  }' $(MAKEFILE_LIST)

.PHONY: test
test: lint test-rust sim-test doc check-header test-c test-python test-go test-jepsen examples check-readme plan-coverage ## everything CI runs: every check, test and example, and every README code block
	@echo "make test: all checks passed"

.PHONY: tools
tools: ## install the pinned build tools (cbindgen) into build/tools
	./scripts/install-tools.sh

.PHONY: lint
lint: ## cargo fmt --check and clippy -D warnings
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p raftlet --all-targets --features bug-injection -- -D warnings
	$(CARGO) clippy -p raftlet-sim --all-targets --features bug-injection -- -D warnings
	$(CARGO) clippy -p raftlet-disk --all-targets --features bug-injection -- -D warnings

.PHONY: test-rust
test-rust: ## all Rust tests (unit, integration, doctests)
	$(CARGO) test --workspace
	$(CARGO) test -p raftlet-ffi --features testing --test panic
	$(CARGO) test -p raftlet-disk --features bug-injection --test planted_bugs

.PHONY: sim-test
sim-test: ## the simulator's fixed seed set and planted-bug tests (release build)
	$(CARGO) test --release -p raftlet-sim
	$(CARGO) test --release -p raftlet-sim --features bug-injection --test invariants_fire
	$(CARGO) test --profile sim-assert -p raftlet-sim --test debug_assertions

.PHONY: chaos
chaos: ## SEEDS simulator seeds (default 20000) on 2 threads; prints steps and faults per kind
	$(CARGO) run --release -q -p raftlet-sim -- --seeds $(SEEDS) --threads 2

SOAK_SEEDS ?= 4000
SOAK_START ?= 200000
.PHONY: soak
soak: ## make chaos (SEEDS, mixed profile), then SOAK_SEEDS (4000) seeds of every other profile from seed SOAK_START: the long runs that found safety bugs the fixed seed sets missed (~15 min; not part of make test)
	$(MAKE) chaos SEEDS=$(SEEDS)
	for p in adversarial churn learners durability disk calm; do \
	  echo "soak: profile $$p"; \
	  $(CARGO) run --release -q -p raftlet-sim -- --seeds $(SOAK_SEEDS) --start $(SOAK_START) --threads 2 --profile $$p || exit 1; \
	done

.PHONY: fuzz
fuzz: ## every cargo-fuzz target for FUZZ_SECONDS (default 60) each
	FUZZ_SECONDS=$(FUZZ_SECONDS) ./scripts/fuzz.sh

.PHONY: doc
doc: ## rustdoc with warnings denied
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps

.PHONY: lib
lib: ## build libraftlet.a and libraftlet.so (release)
	$(CARGO) build --release -p raftlet-ffi

.PHONY: header
header: tools ## regenerate include/raftlet.h from ffi/
	$(CBINDGEN) --config ffi/cbindgen.toml --output include/raftlet.h ffi

.PHONY: check-header
check-header: tools ## fail if include/raftlet.h is stale
	@mkdir -p build
	$(CBINDGEN) --config ffi/cbindgen.toml --output build/raftlet.h.check ffi
	@diff -u include/raftlet.h build/raftlet.h.check || { echo "include/raftlet.h is stale: run make header"; exit 1; }
	@grep -q "RAFTLET_VERSION_MAJOR $(word 1,$(subst ., ,$(VERSION)))$$" include/raftlet.h && \
	 grep -q "RAFTLET_VERSION_MINOR $(word 2,$(subst ., ,$(VERSION)))$$" include/raftlet.h && \
	 grep -q "RAFTLET_VERSION_PATCH $(word 3,$(subst ., ,$(VERSION)))$$" include/raftlet.h || \
	 { echo "RAFTLET_VERSION_* in ffi/cbindgen.toml differ from Cargo.toml ($(VERSION))"; exit 1; }

# test_threads.c under ThreadSanitizer. TSan sees only instrumented code, and
# the Rust side (stable toolchain) is not: its lock is invisible to TSan, so
# the library's own memcpy/malloc calls look racy. The test therefore links
# libraftlet.so and runs with ignore_noninstrumented_modules=1, which keeps
# TSan from reporting those; races in C code are still reported.
# (valgrind --tool=helgrind is no alternative: it cannot see parking_lot's
# futex-based lock and reports hundreds of thousands of false races.)
.PHONY: test-c-tsan
test-c-tsan: lib ## two threads on one node under ThreadSanitizer (C side)
	@mkdir -p build/c
	$(CC) $(CFLAGS_STRICT) -fsanitize=thread -g -O1 tests/c/test_threads.c -Ltarget/release -lraftlet -Wl,-rpath,$(CURDIR)/target/release $(CLIBS) -o build/c/test_threads
	TSAN_OPTIONS="ignore_noninstrumented_modules=1 halt_on_error=1" ./build/c/test_threads

# Optional, not part of `make test`: the same test with the Rust side (core,
# ffi, parking_lot) instrumented too, so TSan checks the node lock and the
# ready handles. Needs a nightly toolchain and links LLVM's TSan runtime
# from its sysroot. std stays uninstrumented (no rust-src for -Zbuild-std),
# so the std::sync::RwLock inside MemoryStorage is invisible to TSan: races
# inside MemoryStorageCore are suppressed (every access to it takes that lock).
TSAN_HOST = $(shell rustc -vV | sed -n 's/^host: //p')
TSAN_RT = $(shell rustc +nightly --print sysroot)/lib/rustlib/$(TSAN_HOST)/lib/librustc-nightly_rt.tsan.a
.PHONY: test-c-tsan-rust
test-c-tsan-rust: ## optional: test-c-tsan with the Rust side instrumented too (nightly)
	@mkdir -p build/c
	CARGO_TARGET_DIR=build/c/tsan-target RUSTFLAGS="-Zsanitizer=thread -Cunsafe-allow-abi-mismatch=sanitizer" \
	  $(CARGO) +nightly build --release -p raftlet-ffi --target $(TSAN_HOST)
	$(CC) $(CFLAGS_STRICT) -fsanitize=thread -g -O1 -c tests/c/test_threads.c -o build/c/test_threads_rust.o
	$(CC) build/c/test_threads_rust.o build/c/tsan-target/$(TSAN_HOST)/release/libraftlet.a \
	  -Wl,--whole-archive $(TSAN_RT) -Wl,--no-whole-archive $(CLIBS) -lstdc++ -o build/c/test_threads_rust
	printf 'race:raftlet::storage::MemoryStorageCore\n' > build/c/tsan-rust.supp
	TSAN_OPTIONS="halt_on_error=1 suppressions=build/c/tsan-rust.supp" ./build/c/test_threads_rust

# Optional, not part of `make test`: the C ABI crate's unit tests under
# Miri, which checks the unsafe code of the ready handles (the recycled
# boxes written field by field, their arrays kept in place, readies freed
# on other threads) for undefined behaviour and leaks. Needs the nightly
# toolchain; installs its miri and rust-src components (idempotent).
.PHONY: miri
miri: ## optional: the C ABI crate's unit tests under Miri (nightly; about a minute)
	rustup component add --toolchain nightly miri rust-src
	$(CARGO) +nightly miri test -p raftlet-ffi --lib

.PHONY: test-c
test-c: lib test-c-tsan test-install check-c-coverage ## C tests under ASan+UBSan and TSan, a C++ include check, the C example under valgrind
	@mkdir -p build/c
	$(CC) $(CFLAGS_STRICT) $(SANITIZE) -g tests/c/test_api.c $(STATICLIB) $(CLIBS) -o build/c/test_api
	ASAN_OPTIONS=detect_leaks=1 ./build/c/test_api
	c++ -std=c++17 -Wall -Wextra -Werror -Iinclude -c tests/c/header_twice.cpp -o build/c/header_twice.o
	$(CC) $(CFLAGS_STRICT) -g examples/c/cluster.c $(STATICLIB) $(CLIBS) -o build/c/cluster
	@if command -v valgrind >/dev/null; then \
	  valgrind --quiet --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect ./build/c/cluster > /dev/null; \
	else echo "valgrind not installed; running the example without it"; ./build/c/cluster > /dev/null; fi
	$(CC) $(CFLAGS_STRICT) -g examples/c/disk_restart.c $(STATICLIB) $(CLIBS) -o build/c/disk_restart
	rm -rf build/c/disk-example && ./build/c/disk_restart build/c/disk-example > /dev/null && rm -rf build/c/disk-example
	@# The C ABI bench harnesses (make bench profiles them), short runs under the sanitizers.
	for h in abi_b3 abi_b5; do \
	  $(CC) $(CFLAGS_STRICT) $(SANITIZE) -g bench/c/$$h.c $(STATICLIB) $(CLIBS) -o build/c/$$h && \
	  ASAN_OPTIONS=detect_leaks=1 ./build/c/$$h 300 > /dev/null || exit 1; \
	done

.PHONY: test-python
test-python: ## Python package: venv, wheel (maturin), pytest, stubtest, the example
	./scripts/python-test.sh

.PHONY: wheel
wheel: ## build the abi3 wheel into build/wheels (pip install build/wheels/raftlet-*.whl)
	./scripts/python-test.sh --wheel-only

# Every fenced code block of every README, run by its language (see the
# script's docstring). Python blocks run in the fresh venv with the wheel
# that test-python makes; it is made here if it is missing.
.PHONY: check-readme
check-readme: lib ## run every code block of every README as written (scripts/check-readme.py)
	@test -x build/venv-fresh/bin/python || ./scripts/python-test.sh --wheel-only
	CC="$(CC)" CFLAGS_STRICT="$(CFLAGS_STRICT)" SANITIZE="$(SANITIZE)" CLIBS="$(CLIBS)" CARGO="$(CARGO)" \
	  ./scripts/check-readme.py

.PHONY: test-go
test-go: ## Go package: gofmt, go vet, go test -race (binding + interop with etcd raft), GOGC=1 run, the example in-tree and through pkg-config
	./scripts/go-test.sh

.PHONY: test-jepsen
test-jepsen: ## bounded linearizability test of examples/kv: 60 s of kills, pauses, partitions (must pass), 40 s with stale reads planted (must be caught)
	./scripts/jepsen.sh test

JEPSEN_SCHEDULES ?= 20
JEPSEN_MINUTES ?= 5
.PHONY: jepsen
jepsen: ## JEPSEN_SCHEDULES (20) schedules of JEPSEN_MINUTES (5) minutes against examples/kv: writes docs/jepsen.md (~110 min; not part of make test)
	JEPSEN_SCHEDULES=$(JEPSEN_SCHEDULES) JEPSEN_MINUTES=$(JEPSEN_MINUTES) ./scripts/jepsen.sh full

.PHONY: examples
examples: ## run every example once (each exits non-zero on failure)
	$(CARGO) run -q -p raftlet --example demo > /dev/null

.PHONY: demo
demo: lib ## a real 3-process cluster (examples/kv on loopback): SIGKILL of the leader, restart, a 4th node joins as a learner and is promoted
	@mkdir -p build
	cd examples/kv && go build -tags raftlet_intree -o ../../build/kv . && go run -tags raftlet_intree ./demo -kv ../../build/kv

.PHONY: demo-inprocess
demo-inprocess: ## a 3-node cluster in one process: election, replication, leader isolation, re-election
	$(CARGO) run -q -p raftlet --example demo

.PHONY: install
install: lib ## install libraftlet (.a and .so), raftlet.h and raftlet.pc under PREFIX (default /usr/local)
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 target/release/libraftlet.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 target/release/libraftlet.so $(DESTDIR)$(PREFIX)/lib/
	install -m 644 include/raftlet.h $(DESTDIR)$(PREFIX)/include/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' ffi/raftlet.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/raftlet.pc

.PHONY: check-c-coverage
check-c-coverage: ## fail if an exported function is not called by tests/c/test_api.c
	@missing=0; for f in $$(grep -oE '^[a-z_ ]*\*?raftlet_[a-z0-9_]+\(' include/raftlet.h | grep -oE 'raftlet_[a-z0-9_]+' | sort -u); do \
	  grep -q "$$f" tests/c/test_api.c || { echo "tests/c/test_api.c does not call $$f"; missing=1; }; done; \
	test $$missing = 0 && echo "check-c-coverage: every exported function is called by tests/c/test_api.c"

.PHONY: test-install
test-install: lib ## make install into a temporary prefix; build and run the C example outside the tree, shared and static, through pkg-config
	./scripts/install-test.sh

.PHONY: plan-coverage
plan-coverage: ## which TEST-PLAN lines the tests name (report only)
	@if [ -x ../shared/tools/plan-coverage ]; then python3 ../shared/tools/plan-coverage . | tail -n 9; \
	else echo "plan-coverage: ../shared/tools not present; skipped"; fi

.PHONY: bench
bench: ## K1 and D1, then raftlet vs raft-rs, etcd raft, PySyncObj: writes docs/bench-k1.md, docs/bench-d1.md, docs/bench.md (with K1's table) + docs/bench.svg (~35 min; not part of make test)
	./scripts/bench_k1.sh
	./scripts/bench_d1.sh
	./scripts/bench.sh

.PHONY: bench-k1
bench-k1: ## K1 only: the kv service on loopback, 3 nodes, synced storage, 1 and 64 clients (writes/s, p50/p99): writes docs/bench-k1.md (~1.5 min)
	./scripts/bench_k1.sh

.PHONY: bench-disk
bench-disk: ## D1 only: raftlet-disk vs etcd's WAL, raft-engine, redb, fjall (synced writes/s): writes docs/bench-d1.md
	./scripts/bench_d1.sh

.PHONY: clean
clean: ## remove build outputs
	$(CARGO) clean
	rm -rf build/c build/raftlet.h.check
