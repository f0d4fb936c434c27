# The README's quick starts (tests/quickstart/run.sh): each fenced block
# after a `<!-- quickstart:LANG -->` marker in README.md is run as pasted
# (C compiled against the build tree, Python from the build's venv, Lua
# with the build's module, Go in a throwaway module with a replace line to
# the checkout) against a throwaway redis-server, which must hold no key
# afterwards but hilock's expiring request markers. TAP on stdout.
LANG_TESTS += test-quickstart

.PHONY: test-quickstart
test-quickstart: build python-binding
	$(GO_ENV) GO="$(GO)" QS_PYTHON=$(abspath $(PY_VENV))/bin/python \
		sh tests/quickstart/run.sh $(BUILD)
