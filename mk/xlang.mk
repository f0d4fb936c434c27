# Cross-language synchronizers (tests/crosslang): one semaphore of 3 and one
# latch shared by C, Python and Lua processes, 12 workers at once; TAP on
# stdout. Needs the C build (hl_syncworker, the Lua module) and the Python
# binding's virtualenv.
# Then the cross-language queue test (tests/crosslang/queue_run.py): C,
# Python, Lua and Go producers and consumers of one blocking queue and one
# bounded blocking queue, the consumers behind fault proxies, one of them
# killed with an element in flight. Its Go worker is built here with
# -tags hilock_system (this build's libhilock) when go is installed.
LANG_TESTS += test-crosslang

.PHONY: test-crosslang
test-crosslang: build python-binding
	$(abspath $(PY_VENV))/bin/python tests/crosslang/run.py $(BUILD)
	@if command -v $(GO) >/dev/null 2>&1; then \
		$(GO_ENV) $(GO) build -tags hilock_system -o $(abspath $(BUILD))/tests/tools/hl_goqueue \
			./tests/crosslang/goqueue || { echo "xlang: the Go queue worker did not build" >&2; exit 1; }; \
	fi
	$(abspath $(PY_VENV))/bin/python tests/crosslang/queue_run.py $(BUILD)
