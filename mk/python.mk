# Python binding (bindings/python, examples/python).
#
# A virtualenv at $(BUILD)/venv-python gets cffi, pytest and the binding,
# built against this build's libhilock through pkg-config (the Makefile
# exports PKG_CONFIG_PATH=$(BUILD)/pkgconfig). Outside make,
# `pip install ./bindings/python` also works from a clean checkout: with no
# pkg-config hilock it builds the static library with CMake itself.
APT_PACKAGES += python3 python3-venv python3-dev
LANG_TESTS += test-python
LANG_DEMO_DEPS += python-binding

PY_VENV := $(BUILD)/venv-python
# The stamp's suffix changes when the list below does, so an older venv is
# brought up to date (setuptools >= 77 reads the SPDX licence in pyproject).
PY_VENV_STAMP := $(PY_VENV)/.hilock-venv-ready-2

.PHONY: python-binding test-python

$(PY_VENV_STAMP):
	python3 -m venv $(PY_VENV)
	$(PY_VENV)/bin/python -m pip install -q "setuptools>=77" wheel "cffi>=1.15,<3" "pytest>=7,<10"
	touch $@

# Rebuilt every time: it is quick, and it must follow the C library.
python-binding: build $(PY_VENV_STAMP)
	HILOCK_LINK=pkg-config $(PY_VENV)/bin/python -m pip install -q \
		--no-build-isolation --force-reinstall --no-deps ./bindings/python

test-python: build python-binding
	cd bindings/python && HILOCK_FAULTPROXY=$(abspath $(BUILD))/tests/tools/faultproxy \
		$(abspath $(PY_VENV))/bin/python -m pytest -p no:cacheprovider tests
