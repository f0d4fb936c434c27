# hilock: the two commands are `make demo` and `make test` (see README.md).
# Each installs what is missing (Debian packages via apt-get, Python packages
# into a virtualenv under the build directory), builds and runs.

BUILD ?= build
JOBS ?= 2
CMAKE_FLAGS ?=
export PKG_CONFIG_PATH := $(abspath $(BUILD))/pkgconfig$(if $(PKG_CONFIG_PATH),:$(PKG_CONFIG_PATH))

.PHONY: all deps build demo test test-stream-a test-stream-b test-c test-package test-portable test-sanitizers test-asan test-tsan test-valgrind chaos bench clean format

all: build

# Debian packages every target needs; language makefiles add to APT_PACKAGES.
APT_PACKAGES := build-essential cmake pkg-config libhiredis-dev uuid-dev \
	libssl-dev openssl redis-server redis-sentinel valgrind

include mk/*.mk

# HILOCK_PREBUILT=1 (set by `make test` for its two streams): the packages,
# the build and the Python binding are there already, made once before the
# streams start; the streams must not rebuild them at the same time.
deps:
	@[ "$(HILOCK_PREBUILT)" = 1 ] || APT_PACKAGES="$(APT_PACKAGES)" sh tools/install-deps.sh

build: deps
	@[ "$(HILOCK_PREBUILT)" = 1 ] || { \
		cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHILOCK_BUILD_LUA=ON $(CMAKE_FLAGS) && \
		cmake --build $(BUILD) -j$(JOBS); }

test-c: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 300 -LE chaos

# Long soaks under network faults, pauses and kills: not part of `make test`.
# HILOCK_CHAOS_SECONDS (default 60) sets the length.
chaos: build
	cd $(BUILD) && ctest --output-on-failure -L chaos

test-asan: deps
	cmake -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=Debug -DHILOCK_SANITIZE=address -DHILOCK_BUILD_BENCH=OFF
	cmake --build $(BUILD)-asan -j$(JOBS)
	cd $(BUILD)-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --output-on-failure -j$(JOBS) --timeout 300 -LE 'nosan|chaos'

test-tsan: deps
	cmake -S . -B $(BUILD)-tsan -DCMAKE_BUILD_TYPE=Debug -DHILOCK_SANITIZE=thread -DHILOCK_BUILD_BENCH=OFF
	cmake --build $(BUILD)-tsan -j$(JOBS)
	cd $(BUILD)-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
		ctest --output-on-failure -j$(JOBS) --timeout 300 -LE 'nosan|chaos'

test-valgrind: build
	cd $(BUILD) && HILOCK_VALGRIND=1 ctest --output-on-failure -j$(JOBS) --timeout 600 -L valgrind

test-sanitizers: test-asan test-tsan test-valgrind

# The portable fallbacks that macOS and the BSDs build (a pipe for eventfd,
# SIGPIPE blocked around send, /dev/urandom, ...: core/src/base/sys.c),
# forced on Linux (HILOCK_FORCE_PORTABLE) and run through a representative
# part of the C suite: base/sys's own cases, connecting, locks, tasks and
# their fds, cancel, fork, the watchdog and lost holds, events, Sentinel,
# a few TLS cases. About two minutes.
PORTABLE_TESTS := ^(sys|client|lock|task|sync|cancel|fork|watchdog|lost|observe|sentinel)\.|^tls\.(lock_cycle|contention|idle_reuse|mutual_tls)$$

test-portable: deps
	cmake -S . -B $(BUILD)-portable -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHILOCK_FORCE_PORTABLE=ON \
		-DHILOCK_BUILD_BENCH=OFF -DHILOCK_BUILD_EXAMPLES=OFF
	cmake --build $(BUILD)-portable -j$(JOBS)
	cd $(BUILD)-portable && ctest --output-on-failure -j$(JOBS) --timeout 300 -R '$(PORTABLE_TESTS)'

# The installed package: header, libraries, hilock.pc, find_package(hilock);
# a program linked through pkg-config and the Python binding built through
# it run from a moved prefix without LD_LIBRARY_PATH.
test-package: build $(PY_VENV_STAMP)
	sh tests/package/check.sh $(BUILD) $(abspath $(PY_VENV))/bin/python

# Language targets (test-python, test-lua, test-go...) come from mk/*.mk.
# `make test` runs every suite in two streams at once, each one suite at a
# time (2 cores: the suites mostly wait on servers, timeouts and builds),
# after building once. Stream A has every ctest run in $(BUILD), so no two
# share that directory at once.
TEST_STREAM_A := test-c test-package test-asan test-valgrind test-quickstart \
	test-crosslang test-valkey
TEST_STREAM_B := test-tsan test-portable \
	$(filter-out $(TEST_STREAM_A),$(LANG_TESTS))

test: build python-binding
	@$(MAKE) --no-print-directory -j2 HILOCK_PREBUILT=1 test-stream-a test-stream-b
	@echo "make test: all suites passed"

# Each suite is bounded (SUITE_BOUND seconds; the longest takes about 8
# minutes on 2 cores) and stamped, so a hang fails naming its suite.
SUITE_BOUND ?= 1500

test-stream-a test-stream-b:
	@for t in $(if $(filter test-stream-a,$@),$(TEST_STREAM_A),$(TEST_STREAM_B)); do \
		echo "make $@: $$t started at $$(date -u +%T)"; start=$$(date +%s); rc=0; \
		timeout -k 30 $(SUITE_BOUND) $(MAKE) --no-print-directory HILOCK_PREBUILT=1 $$t || rc=$$?; \
		took=$$(( $$(date +%s) - start )); \
		case $$rc in \
		0) echo "make $@: $$t passed in $$took s";; \
		124|137) echo "make $@: $$t did not end within $(SUITE_BOUND) s: stopped"; exit 1;; \
		*) echo "make $@: $$t failed after $$took s"; exit 1;; \
		esac; done
	@echo "make $@ passed: $(if $(filter test-stream-a,$@),$(TEST_STREAM_A),$(TEST_STREAM_B))"

demo: build $(LANG_DEMO_DEPS)
	sh examples/run-demo.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan $(BUILD)-portable

format:
	clang-format -i core/include/*.h core/include/hilock/*.h core/src/*.c core/src/*.h core/src/*/*.c core/src/*/*.h tests/*.c tests/*.h tests/tools/*.c tests/crosslang/*.c examples/c/*.c bench/*.c
