# Go binding (bindings/go, examples/go).
#
# By default cgo compiles the C core into the package itself (the
# bindings/go/core_*.c files include core/src's .c files), so a Go user
# needs no installed libhilock. The module is the repository root
# (github.com/hilock/hilock; the package is .../bindings/go), so its zip
# carries core/. With -tags hilock_system the package links an installed
# libhilock found with pkg-config instead: the Makefile exports
# PKG_CONFIG_PATH=$(BUILD)/pkgconfig, whose build-tree hilock.pc carries an
# rpath to $(BUILD)/core; test-go checks that build too. The module needs
# Go 1.19 or newer (Debian 12's golang-go) and no third-party modules;
# GOTOOLCHAIN=local keeps newer go commands from downloading a toolchain.
# -race needs cgo and gcc (build-essential). check-outside-module.sh uses
# the module from a throwaway module outside the repository (offline).
ifeq ($(shell command -v go 2>/dev/null),)
APT_PACKAGES += golang-go
endif
LANG_TESTS += test-go test-go-system
LANG_DEMO_DEPS += demo-go

GO ?= go
GO_ENV := GOTOOLCHAIN=local CGO_ENABLED=1 GOFLAGS=
# go's build cache does not hash pkg-config's output or the files cgo
# includes from outside the package (the core's headers and .c files): key
# the cached cgo objects to this build tree and to the core's sources, or
# objects of an older core (or another BUILD's rpath) would be linked.
GO_CGO_KEY := $(shell cat $(sort $(wildcard core/include/*.h core/include/*/*.h)) \
	$(shell find core/src -name '*.[ch]' | LC_ALL=C sort) | cksum | cut -d' ' -f1)
GO_ENV += CGO_CFLAGS="-g -O2 -DHILOCK_GO_BUILD=$(abspath $(BUILD)) -DHILOCK_GO_HEADER=$(GO_CGO_KEY)"
# Without HOME (some CI shells) go has no default cache or GOPATH.
ifeq ($(HOME),)
GO_ENV += GOCACHE=$(abspath $(BUILD))/go-cache GOPATH=$(abspath $(BUILD))/go-path
endif

.PHONY: test-go test-go-system demo-go

test-go: build
	cd bindings/go && $(GO_ENV) $(GO) vet ./...
	cd bindings/go && $(GO_ENV) HILOCK_FAULTPROXY=$(abspath $(BUILD))/tests/tools/faultproxy \
		HILOCK_TOPO=$(abspath $(BUILD))/tests/tools/hl_topo \
		$(GO) test -race -count=1 -timeout 5m ./...
	$(GO_ENV) GO="$(GO)" sh bindings/go/check-outside-module.sh
	@# Without cgo the build must fail, and its first error must say why
	@# (cgo_required.go), not only "undefined: cClient".
	cd bindings/go && if out=$$($(GO_ENV) CGO_ENABLED=0 $(GO) build ./... 2>&1); then \
		echo "go: CGO_ENABLED=0 go build succeeded; expected it to fail saying cgo is needed"; exit 1; \
	fi; \
	echo "$$out" | sed -n 2p | grep -q 'undefined: hilock_requires_cgo__set_CGO_ENABLED_1' || \
		{ echo "$$out"; echo "go: without cgo the first error does not say that cgo is needed"; exit 1; }

# -tags hilock_system: builds and links the installed (here: this build's)
# libhilock instead of compiling the core; a few tests prove it runs.
test-go-system: build
	cd bindings/go && $(GO_ENV) $(GO) vet -tags hilock_system .
	cd bindings/go && $(GO_ENV) $(GO) test -c -tags hilock_system -o $(abspath $(BUILD))/go-system.test .
	ldd $(BUILD)/go-system.test | grep -q 'libhilock\.so' || \
		{ echo "go: -tags hilock_system did not link libhilock.so" >&2; exit 1; }
	cd bindings/go && $(abspath $(BUILD))/go-system.test -test.count=1 -test.timeout 2m \
		-test.run '^(TestVersion|TestLockWireFormat|TestCoreSourcesCompiled)$$'

# The example the demo runs: $(BUILD)/examples/go-contend.
demo-go: build
	mkdir -p $(BUILD)/examples
	cd examples/go && $(GO_ENV) $(GO) build -o $(abspath $(BUILD))/examples/go-contend ./contend
