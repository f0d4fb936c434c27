# Fresh-clone install checks (tests/install): each binding installed from a
# copy of the checkout with its ecosystem's own tool alone (Go: a module
# with a replace and `go build`; Lua: `luarocks make --tree`; Python: `pip
# install ./bindings/python` into a fresh venv), then a lock taken and
# released against a throwaway redis-server. They do not use $(BUILD) and
# run at the same time (tests/install/run.sh); the Python one needs the
# package index (or pip's cache) for its build requirements.
APT_PACKAGES += luarocks lua5.4 liblua5.4-dev swig redis-tools python3-venv python3-dev
LANG_TESTS += test-install

.PHONY: test-install
test-install: deps
	GO="$(GO)" GOTOOLCHAIN=local sh tests/install/run.sh $(INSTALL_CHECKS)
