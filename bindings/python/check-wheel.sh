#!/bin/sh
# Check the self-contained wheel `make wheel` builds. Usage:
#
#   sh bindings/python/check-wheel.sh WHEEL_DIR [PYTHON]
#
# WHEEL_DIR holds the repaired wheel (hilock-*-manylinux_*.whl) and, in
# WHEEL_DIR/deps, the wheels of its dependencies (cffi, pycparser), so the
# check needs no network. PYTHON (default python3) makes the virtualenv.
#
# 1. The wheel's extension needs no libhiredis, libuuid or libhilock from
#    the system: its NEEDED entries name only the copies bundled in
#    hilock.libs/ (auditwheel's hashed names), found through the RPATH
#    $ORIGIN/../hilock.libs.
# 2. In a mount namespace (unshare -m; needs root or CAP_SYS_ADMIN) where the
#    system's libhiredis and libuuid, the C compiler and the hiredis headers
#    are hidden (an empty file or directory bound over each), a fresh
#    virtualenv installs the wheel (binary only, offline) and a program
#    imports hilock with LD_LIBRARY_PATH empty, checks in /proc/self/maps
#    that the libhiredis and libuuid it runs on are the bundled ones, and
#    takes a lock on a throwaway redis-server (when one is installed).
#    Without unshare it runs the same outside a namespace and says so: the
#    system libraries are then present, and step 1, ldd and the maps check
#    are what show they are not used.
# 3. ldd (LD_LIBRARY_PATH empty) resolves the extension's libhiredis and
#    libuuid to the installed hilock.libs.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

fail() { echo "check-wheel: $*" >&2; exit 1; }

if [ "${1:-}" = "--inner" ]; then
	# Step 2, run inside the namespace (or not): install and use.
	shift
	wheels=$1 py=$2 venv=$3
	"$py" -m venv "$venv"
	CC=false "$venv/bin/python" -m pip install -q --disable-pip-version-check \
		--no-index --only-binary=:all: --find-links "$wheels" --find-links "$wheels/deps" hilock
	env LD_LIBRARY_PATH= "$venv/bin/python" - <<'PY_EOF'
import os
import sys

import hilock

assert os.environ.get("LD_LIBRARY_PATH", "") == ""
site = os.path.dirname(os.path.dirname(os.path.abspath(hilock.__file__)))
libs = os.path.join(site, "hilock.libs")
maps = open("/proc/self/maps").read().split("\n")
loaded = {line.split()[-1] for line in maps if "/" in line and ".so" in line}
for name in ("libhiredis", "libuuid"):
    mine = [p for p in loaded if os.path.basename(p).startswith(name)]
    assert mine, "%s is not loaded: %s" % (name, sorted(loaded))
    for p in mine:
        # libuuid may also be mapped for the interpreter's own _uuid module;
        # the extension's is the bundled one, and hiredis only comes from it.
        if not os.path.realpath(p).startswith(os.path.realpath(libs) + os.sep):
            if name == "libhiredis":
                raise SystemExit("the system's %s is loaded: %s" % (name, p))
    assert any(os.path.realpath(p).startswith(os.path.realpath(libs) + os.sep) for p in mine), \
        "%s is not the bundled copy: %s" % (name, mine)
print("check-wheel: hilock %s on libhilock %s, %s" % (
    hilock.__version__, hilock.library_version(),
    ", ".join(sorted(os.path.basename(p) for p in loaded
                     if "hilock.libs" in p))))
try:
    hilock.Client("redis://127.0.0.1:1/0", connect_timeout=1.0, retry_attempts=0)
except hilock.ConnectionError:
    pass
else:
    raise SystemExit("connected to port 1?")
url = os.environ.get("HILOCK_WHEEL_TEST_URL")
if url:
    with hilock.Client(url) as c:
        lock = c.lock("hilock:wheel:check")
        with lock:
            assert lock.held() and lock.hold_count == 1
        assert not lock.locked()
    print("check-wheel: took and released a lock on", url)
PY_EOF
	exit 0
fi

[ $# -ge 1 ] || fail "usage: check-wheel.sh WHEEL_DIR [PYTHON]"
wheels=$(cd "$1" && pwd)
py=${2:-python3}
set -- "$wheels"/hilock-*manylinux*.whl
[ -f "$1" ] || fail "no repaired wheel (hilock-*manylinux*.whl) in $wheels"
[ $# -eq 1 ] || fail "several repaired wheels in $wheels: $*"
whl=$1
[ -d "$wheels/deps" ] || fail "no $wheels/deps (the cffi and pycparser wheels)"
echo "check-wheel: $(basename "$whl")"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hilock-wheel-check.XXXXXX")
TR_DIR=$tmp
. "$repo/tools/throwaway-redis.sh"
trap 'tr_stop; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# 1. What the wheel's extension needs.
"$py" -m zipfile -e "$whl" "$tmp/unpacked"
set -- "$tmp"/unpacked/hilock/_hilock*.so
[ -f "$1" ] || fail "no hilock/_hilock*.so in the wheel"
ext_rel=${1#"$tmp/unpacked/"}
needed=$(readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
rpath=$(readelf -d "$1" | sed -n 's/.*(\(RPATH\|RUNPATH\)).*\[\(.*\)\]/\2/p')
bundled=0
for n in $needed; do
	case $n in
	libhiredis.so* | libuuid.so* | libhilock.so*)
		fail "the extension needs the system's $n (NEEDED: $(echo $needed))" ;;
	libhiredis-*.so* | libuuid-*.so*)
		[ -f "$tmp/unpacked/hilock.libs/$n" ] || fail "NEEDED $n is not in hilock.libs/"
		bundled=$((bundled + 1)) ;;
	esac
done
[ "$bundled" -eq 2 ] || fail "the extension does not need the bundled libhiredis and libuuid (NEEDED: $(echo $needed))"
[ "$rpath" = '$ORIGIN/../hilock.libs' ] || fail "the extension's RPATH is '$rpath', not \$ORIGIN/../hilock.libs"
for lib in "$tmp"/unpacked/hilock.libs/*; do
	for n in $(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		case $n in libhiredis.so* | libuuid.so*) fail "$(basename "$lib") needs the system's $n" ;; esac
	done
done
echo "check-wheel: NEEDED $(echo $needed); RPATH $rpath"

# A server to take a lock on, when there is one.
if command -v "${REDIS_SERVER:-redis-server}" >/dev/null 2>&1 &&
	command -v "${REDIS_CLI:-redis-cli}" >/dev/null 2>&1 && tr_start; then
	export HILOCK_WHEEL_TEST_URL="redis://127.0.0.1:$TR_PORT/0"
else
	echo "check-wheel: no redis-server: the lock is not exercised"
fi

# 2. Install and use it, with the system's libraries hidden when possible.
venv="$tmp/venv"
hide=""
for f in /usr/lib/*-linux-gnu/libhiredis.so* /usr/lib/*-linux-gnu/libuuid.so* \
	/lib/*-linux-gnu/libhiredis.so* /lib/*-linux-gnu/libuuid.so* \
	/usr/lib/libhiredis.so* /usr/lib/libuuid.so* /usr/local/lib/libhiredis.so* \
	/usr/bin/cc /usr/bin/gcc /usr/bin/gcc-[0-9]* /usr/bin/*-linux-gnu-gcc*; do
	[ -e "$f" ] && [ ! -L "$f" ] && hide="$hide $f"
done
mkdir "$tmp/empty-dir"
: >"$tmp/empty-file"
# shellcheck disable=SC2016
inner='set -e
for f in $HIDE; do mount --bind "$EMPTY_FILE" "$f"; done
for d in /usr/include/hiredis /usr/include/uuid; do
	[ -d "$d" ] && mount --bind "$EMPTY_DIR" "$d"
done
if python3 -c "import ctypes; ctypes.CDLL(\"libhiredis.so.0.14\")" 2>/dev/null; then
	echo "check-wheel: the system libhiredis is still loadable" >&2; exit 1
fi
if command -v cc >/dev/null 2>&1 && cc --version >/dev/null 2>&1; then
	echo "check-wheel: cc still works" >&2; exit 1
fi
exec sh "$SCRIPT" --inner "$WHEELS" "$PYTHON" "$VENV"'
if command -v unshare >/dev/null 2>&1 &&
	unshare -m --propagation private true 2>/dev/null; then
	echo "check-wheel: in a mount namespace without the system's libhiredis, libuuid, cc and headers"
	HIDE=$hide EMPTY_FILE="$tmp/empty-file" EMPTY_DIR="$tmp/empty-dir" SCRIPT="$here/check-wheel.sh" \
		WHEELS="$wheels" PYTHON="$(command -v "$py")" VENV="$venv" \
		unshare -m --propagation private sh -c "$inner"
else
	echo "check-wheel: cannot make a mount namespace (unshare -m needs root or CAP_SYS_ADMIN):"
	echo "check-wheel: the system's libhiredis and libuuid stay visible; NEEDED, RPATH, ldd and"
	echo "check-wheel: /proc/self/maps show the bundled copies are the ones used"
	sh "$here/check-wheel.sh" --inner "$wheels" "$py" "$venv"
fi

# 3. ldd of the installed extension, with the system libraries present.
set -- "$venv"/lib/python*/site-packages/"$ext_rel"
[ -f "$1" ] || fail "installed extension not found"
site=$(cd "$(dirname "$1")/.." && pwd)
env LD_LIBRARY_PATH= ldd "$1" | grep -E 'libhiredis|libuuid|not found' >"$tmp/ldd" || true
[ "$(wc -l <"$tmp/ldd")" -eq 2 ] || { cat "$tmp/ldd" >&2; fail "ldd: want exactly libhiredis and libuuid"; }
libs=$(readlink -f "$site/hilock.libs")
while read -r name arrow path rest; do
	case $(readlink -f "$path") in
	"$libs"/*) ;;
	*) fail "ldd resolves $name to $path, not the bundled copy in $libs" ;;
	esac
done <"$tmp/ldd"
echo "check-wheel: ldd: $(awk '{print $1 " => " $3}' "$tmp/ldd" | tr '\n' ' ')"
echo "check-wheel: OK"
