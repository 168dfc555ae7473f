# raftlet — the one entry point. `make help` lists the targets.
SHELL := /bin/bash
CARGO ?= cargo
SEEDS ?= 20000

.PHONY: help
help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: test
test: lint test-rust doc examples plan-coverage ## everything CI runs: lint, tests, docs, examples

.PHONY: lint
lint: ## cargo fmt --check and clippy -D warnings
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p raftlet --all-targets --features bug-injection -- -D warnings

.PHONY: test-rust
test-rust: ## all Rust tests (unit, integration, doctests)
	$(CARGO) test --workspace

.PHONY: doc
doc: ## rustdoc with warnings denied
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps

.PHONY: examples
examples: ## run every example once (each exits non-zero on failure)
	$(CARGO) run -q -p raftlet --example demo > /dev/null

.PHONY: demo
demo: ## a 3-node cluster: election, replication, leader isolation, re-election
	$(CARGO) run -q -p raftlet --example demo

.PHONY: plan-coverage
plan-coverage: ## which TEST-PLAN lines the tests name (report only)
	@if [ -x ../shared/tools/plan-coverage ]; then python3 ../shared/tools/plan-coverage . | tail -n 12; \
	else echo "plan-coverage: ../shared/tools not present; skipped"; fi

.PHONY: bench
bench: ## benchmarks (see docs/bench.md); not part of make test
	$(CARGO) bench -p raftlet

.PHONY: clean
clean: ## remove build outputs
	$(CARGO) clean
