#!/bin/sh
# Python from a fresh clone: `pip install ./bindings/python` into a fresh
# virtualenv (pip's own build isolation: setuptools and cffi come from the
# package index, or pip's cache) builds the static core with CMake into the
# extension, with no pkg-config hilock in sight; then a lock is taken and
# released against a throwaway redis-server, and the README's Python quick
# start runs as pasted.
#
#   sh tests/install/check-python.sh       (make test-install runs it)
#
# Needs python3-venv, python3-dev, cmake and the core's -dev packages, and
# the package index (PIP_INDEX_URL, PIP_FIND_LINKS... are honoured).
# Environment: PYTHON (default python3), REDIS_SERVER, REDIS_CLI.
check_name=python
. "$(dirname "$0")/lib.sh"
PYTHON=${PYTHON:-python3}
copy_repo "$work/hilock"
unset PKG_CONFIG_PATH LD_LIBRARY_PATH HILOCK_LINK HILOCK_SOURCE_DIR HILOCK_CMAKE_BUILD_DIR PYTHONPATH

cat >"$work/app.py" <<'EOF2'
import sys

import hilock

url = sys.argv[1]
with hilock.Client(url) as client, hilock.Client(url) as other:
    lock = client.lock("install-check")
    with lock:
        assert lock.held(), "not held inside with"
        taken = other.lock("install-check").acquire(blocking=False)
        assert taken is False, "another client took the held lock: %r" % (taken,)
    assert not lock.locked(), "still locked after with"
print("app: hilock %s took and released install-check" % hilock.__version__)
EOF2

say "pip install ./bindings/python into a fresh venv (builds the static core)"
"$PYTHON" -m venv "$work/venv" || fail "python3 -m venv"
(cd "$work/hilock" && "$work/venv/bin/python" -m pip install -q \
	--disable-pip-version-check ./bindings/python >"$work/pip.log" 2>&1) ||
	{ cat "$work/pip.log" >&2; fail "pip install ./bindings/python"; }
ext=$("$work/venv/bin/python" -c 'import hilock._hilock as m; print(m.__file__)' 2>/dev/null) ||
	fail "import hilock._hilock"
if ldd "$ext" | grep -q libhilock; then
	fail "the extension links a libhilock: $(ldd "$ext" | grep libhilock)"
fi
start_redis
(cd "$work" && "$work/venv/bin/python" "$work/app.py" "$redis_url") ||
	fail "the program against $redis_url"
assert_empty_redis
readme_quickstart python "$work/quickstart.py"
(cd "$work" && run_quickstart python "$work/venv/bin/python" "$work/quickstart.py")
say "ok"
