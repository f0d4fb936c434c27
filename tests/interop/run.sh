#!/bin/sh
# Wire compatibility with the real Redisson (Java): hilock processes and
# Redisson RLocks contend on the same locks of a throwaway redis-server.
#
#   sh tests/interop/run.sh [BUILD_DIR [FILTER]]
#
# BUILD_DIR is a configured and built hilock build tree (default: build);
# its pkgconfig/hilock.pc and examples/c/hilock_contend are used. FILTER
# runs only the scenarios whose name contains it. Needs java (17+), mvn, cc,
# pkg-config and redis-server (or $REDIS_SERVER). Maven downloads Redisson
# into ~/.m2 the first time; later runs reuse it (and skip Maven entirely
# while the jar is newer than its sources).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
filter=${2:-}
redis=${REDIS_SERVER:-redis-server}
out="$build/interop"
jar="$out/java/hilock-interop-redisson.jar"
peer="$out/hl_interop_peer"
contend="$build/examples/c/hilock_contend"

for tool in java mvn cc pkg-config "$redis"; do
	command -v "$tool" >/dev/null 2>&1 || { echo "interop: $tool not found" >&2; exit 1; }
done
[ -x "$contend" ] || { echo "interop: $contend missing (build the core first)" >&2; exit 1; }
mkdir -p "$out"

# The C peer, against this build's libhilock (the build-tree hilock.pc
# carries an rpath to $build/core).
PKG_CONFIG_PATH="$build/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH
# shellcheck disable=SC2046
cc -std=c11 -O2 -Wall -Wextra -o "$peer" "$here/peer.c" \
	$(pkg-config --cflags --libs hilock)

# The Redisson driver: a shaded jar under the build dir.
if [ ! -f "$jar" ] || [ -n "$(find "$here/java/pom.xml" "$here/java/src" -newer "$jar" -type f 2>/dev/null)" ]; then
	echo "interop: building the Redisson driver with Maven"
	mvn -q -B -o -f "$here/java/pom.xml" -DbuildDir="$out/java" package >/dev/null 2>&1 ||
		mvn -q -B -f "$here/java/pom.xml" -DbuildDir="$out/java" package
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hilock-interop.XXXXXX")
TR_DIR=$tmp
REDIS_SERVER=$redis
. "$here/../../tools/throwaway-redis.sh"
trap 'tr_stop; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

tr_start || exit 1
port=$TR_PORT
redis_pid=$TR_PID
echo "interop: redis-server $($redis --version | sed 's/.*v=\([^ ]*\).*/\1/') on 127.0.0.1:$port (pid $redis_pid)"

status=0
timeout 600 java -jar "$jar" run "$port" "$peer" "$contend" "$filter" || status=$?
if ! kill -0 "$redis_pid" 2>/dev/null; then
	echo "interop: redis-server died; its log:" >&2
	cat "$tmp/redis.log" >&2 || true
	status=1
fi
exit $status
