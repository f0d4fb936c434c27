# Lua binding (bindings/lua): SWIG glue for Lua 5.4 + the hilock.lua layer.
# The module itself is built by the main CMake build (`build` passes
# -DHILOCK_BUILD_LUA=ON) into $(BUILD)/bindings/lua.
APT_PACKAGES += lua5.4 liblua5.4-dev swig redis-tools

LANG_TESTS += test-lua

.PHONY: test-lua
# TAP on stdout, "N passed, N failed" at the end; non-zero exit on failure.
test-lua: build
	HILOCK_TOPO=$(abspath $(BUILD))/tests/tools/hl_topo sh bindings/lua/tests/run-tests.sh $(BUILD)
