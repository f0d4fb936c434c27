# API reference (`make docs`; NOT part of `make test`). Generates into
# $(BUILD)/docs:
#   c/html/index.html  the C API, by Doxygen from core/include/hilock.h
#                      (docs/Doxyfile; docs/doxygen-filter.sh makes the
#                      header's plain C comments doxygen comments)
#   python/*.html      pydoc of hilock, hilock._client, hilock._multi,
#                      hilock._errors, hilock._observe, from the build venv
#                      ($(BUILD)/venv-python, python-binding)
#   go.txt             `go doc -all` of the Go module (bindings/go)
#   lua.md             the documentation comments of bindings/lua/hilock.lua
#                      (docs/lua-doc.py)
# Doxygen (Debian's doxygen) is installed by `make docs` only, so `make test`
# does not pull it in. Doxygen's warnings are printed, never fatal.
DOCS_APT_PACKAGES := doxygen
DOCS_DIR := $(BUILD)/docs
DOCS_PY_MODULES := hilock hilock._client hilock._multi hilock._errors hilock._observe

.PHONY: docs docs-deps docs-c docs-python docs-go docs-lua

docs-deps:
	@APT_PACKAGES="$(DOCS_APT_PACKAGES)" sh tools/install-deps.sh

docs-c: docs-deps
	rm -rf $(DOCS_DIR)/c
	mkdir -p $(DOCS_DIR)/c
	HILOCK_DOCS_OUT=$(abspath $(DOCS_DIR))/c doxygen docs/Doxyfile

# pydoc -w writes <module>.html into the current directory.
docs-python: python-binding
	rm -rf $(DOCS_DIR)/python
	mkdir -p $(DOCS_DIR)/python
	cd $(DOCS_DIR)/python && $(abspath $(PY_VENV))/bin/python -m pydoc -w $(DOCS_PY_MODULES)

# go doc reads the sources only: no cgo build, no libhilock needed.
docs-go: deps
	mkdir -p $(DOCS_DIR)
	cd bindings/go && $(GO_ENV) $(GO) doc -all . > $(abspath $(DOCS_DIR))/go.txt

docs-lua: deps
	mkdir -p $(DOCS_DIR)
	python3 docs/lua-doc.py bindings/lua/hilock.lua $(DOCS_DIR)/lua.md

docs: docs-c docs-python docs-go docs-lua
	@echo "make docs: the API reference is in $(abspath $(DOCS_DIR)):"
	@echo "  C       $(abspath $(DOCS_DIR))/c/html/index.html"
	@for m in $(DOCS_PY_MODULES); do echo "  Python  $(abspath $(DOCS_DIR))/python/$$m.html"; done
	@echo "  Go      $(abspath $(DOCS_DIR))/go.txt"
	@echo "  Lua     $(abspath $(DOCS_DIR))/lua.md"
	@echo "  and docs/MIGRATING.md (redis-py, redsync, Redisson -> hilock)"
	@echo "  index   docs/README.md (design, what hilock keeps in Redis, the four references)"
