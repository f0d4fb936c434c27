#!/bin/sh
# Wire compatibility with the real Redisson (Java): hilock processes and
# Redisson's locks (RLock, fair, read-write, spin, fenced) contend on the
# same locks of a throwaway redis-server, then of a Sentinel deployment
# and of a Redis Cluster.
#
#   sh tests/interop/run.sh [BUILD_DIR [FILTER [TOPOLOGIES]]]
#
# BUILD_DIR is a configured and built hilock build tree (default: build);
# its pkgconfig/hilock.pc, examples/c/hilock_contend and the C tests'
# harness library (tests/libhilock_test_harness.a, for the Sentinel and
# Cluster launcher topo-up.c) are used. FILTER runs only the scenarios
# whose name starts with it. TOPOLOGIES: a comma-separated subset of
# single,sentinel,cluster (default: all three). Needs java (17+), mvn, cc,
# pkg-config, redis-server (or $REDIS_SERVER), and for the topologies
# redis-sentinel and redis-cli. Maven downloads Redisson into ~/.m2 the
# first time; later runs reuse it (and skip Maven entirely while the jar
# is newer than its sources).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
filter=${2:-}
topologies=${3:-single,sentinel,cluster}
redis=${REDIS_SERVER:-redis-server}
out="$build/interop"
jar="$out/java/hilock-interop-redisson.jar"
peer="$out/hl_interop_peer"
topo="$out/hl_interop_topo"
harness="$build/tests/libhilock_test_harness.a"
contend="$build/examples/c/hilock_contend"

case ",$topologies," in
*,sentinel,* | *,cluster,*) need_topo=1 ;;
*) need_topo=0 ;;
esac
tools="java mvn cc pkg-config $redis"
[ "$need_topo" = 0 ] || tools="$tools redis-sentinel redis-cli"
for tool in $tools; do
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

# The Sentinel and Cluster launcher, on the C tests' topology harness
# (tests/harness_topo.c) as the build tree compiled it into
# libhilock_test_harness.a.
if [ "$need_topo" = 1 ]; then
	[ -f "$harness" ] || { echo "interop: $harness missing (build the tests first)" >&2; exit 1; }
	# shellcheck disable=SC2046
	cc -std=gnu11 -O2 -Wall -Wextra -I"$here/.." -o "$topo" "$here/topo-up.c" \
		"$harness" $(pkg-config --cflags --libs hilock hiredis) -lpthread
fi

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

port=0
redis_pid=
echo "interop: redis-server $($redis --version | sed 's/.*v=\([^ ]*\).*/\1/'); topologies $topologies"
case ",$topologies," in
*,single,*)
	tr_start || exit 1
	port=$TR_PORT
	redis_pid=$TR_PID
	echo "interop: single redis-server on 127.0.0.1:$port (pid $redis_pid)"
	;;
esac

# The Java driver starts the Sentinel and Cluster deployments itself
# (hl_interop_topo, one at a time, stopped when its stdin closes) and
# logs the launcher's output to $tmp/<topology>.log.
status=0
timeout 900 java -jar "$jar" run --port "$port" --peer "$peer" --contend "$contend" \
	--topo-up "$topo" --work "$tmp" --topologies "$topologies" --filter "$filter" || status=$?
if [ -n "$redis_pid" ] && ! kill -0 "$redis_pid" 2>/dev/null; then
	echo "interop: redis-server died; its log:" >&2
	cat "$tmp/redis.log" >&2 || true
	status=1
fi
if [ "$status" != 0 ]; then
	for log in "$tmp"/sentinel.log "$tmp"/cluster.log; do
		[ -s "$log" ] || continue
		echo "interop: last lines of $(basename "$log"):" >&2
		tail -n 20 "$log" >&2
	done
fi
exit $status
