# Cross-language synchronizers (tests/crosslang): one semaphore of 3 and one
# latch shared by C, Python and Lua processes, 12 workers at once; TAP on
# stdout. Needs the C build (hl_syncworker, the Lua module) and the Python
# binding's virtualenv.
LANG_TESTS += test-crosslang

.PHONY: test-crosslang
test-crosslang: build python-binding
	$(abspath $(PY_VENV))/bin/python tests/crosslang/run.py $(BUILD)
