#!/bin/sh
# Wire compatibility with the real Redisson (Java): hilock processes and
# Redisson's locks (RLock, fair, read-write, spin, fenced) contend on the
# same locks of a throwaway redis-server, then of a Sentinel deployment
# and of a Redis Cluster, for each Redisson version asked for.
#
#   sh tests/interop/run.sh [BUILD_DIR [FILTER [TOPOLOGIES [VERSIONS]]]]
#
# BUILD_DIR is a configured and built hilock build tree (default: build);
# its pkgconfig/hilock.pc, examples/c/hilock_contend and the C tests'
# harness library (tests/libhilock_test_harness.a, for the Sentinel and
# Cluster launcher topo-up.c) are used. FILTER runs only the scenarios
# whose name starts with it. TOPOLOGIES: a comma-separated subset of
# single,sentinel,cluster (default: all three). VERSIONS: a comma-separated
# list of Redisson versions (default: $INTEROP_REDISSON, else 4.3.1,4.7.0);
# each gets its own driver jar and runs every scenario, one version after
# the other. Needs java (17+), mvn, cc, pkg-config, redis-server (or
# $REDIS_SERVER), and for the topologies redis-sentinel and redis-cli.
# Maven downloads Redisson into ~/.m2 the first time; later runs reuse it
# (and skip Maven entirely while the jar is newer than its sources).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
filter=${2:-}
topologies=${3:-single,sentinel,cluster}
versions=${4:-${INTEROP_REDISSON:-4.3.1,4.7.0}}
redis=${REDIS_SERVER:-redis-server}
out="$build/interop"
peer="$out/hl_interop_peer"
topo="$out/hl_interop_topo"
harness="$build/tests/libhilock_test_harness.a"
contend="$build/examples/c/hilock_contend"

case ",$topologies," in
*,sentinel,* | *,cluster,*) need_topo=1 ;;
*) need_topo=0 ;;
esac
tools="java mvn cc pkg-config redis-cli $redis"
[ "$need_topo" = 0 ] || tools="$tools redis-sentinel"
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

# The Redisson driver: a shaded jar per version under the build dir.
jar_of() { echo "$out/java-$1/hilock-interop-redisson.jar"; }
for v in $(echo "$versions" | tr ',' ' '); do
	case $v in
	*[!0-9A-Za-z.-]* | "") echo "interop: bad Redisson version '$v'" >&2; exit 2 ;;
	esac
	jar=$(jar_of "$v")
	if [ ! -f "$jar" ] || [ -n "$(find "$here/java/pom.xml" "$here/java/src" -newer "$jar" -type f 2>/dev/null)" ]; then
		echo "interop: building the Redisson $v driver with Maven"
		mvn -q -B -o -f "$here/java/pom.xml" -Dredisson.version="$v" -DbuildDir="$out/java-$v" package >/dev/null 2>&1 ||
			mvn -q -B -f "$here/java/pom.xml" -Dredisson.version="$v" -DbuildDir="$out/java-$v" package
	fi
done

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
# logs the launcher's output to $tmp/<version>/<topology>.log. One
# version after the other, on the same single server; then a line per
# version and the total.
status=0
total_pass=0
total_fail=0
summary=""
for v in $(echo "$versions" | tr ',' ' '); do
	mkdir -p "$tmp/$v"
	# the previous version's leftovers must not meet this one
	[ "$port" = 0 ] || redis-cli -h 127.0.0.1 -p "$port" flushall >/dev/null
	{
		timeout 900 java -jar "$(jar_of "$v")" run --port "$port" --peer "$peer" --contend "$contend" \
			--topo-up "$topo" --work "$tmp/$v" --topologies "$topologies" --filter "$filter" ||
			echo "$?" >"$tmp/$v/status"
	} | tee "$tmp/$v/out"
	counts=$(sed -n 's/^\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\1 \2/p' "$tmp/$v/out" | tail -n 1)
	if [ -z "$counts" ]; then
		counts="0 1"
		echo "interop: Redisson $v: the driver printed no result" >&2
	fi
	set -- $counts
	total_pass=$((total_pass + $1))
	total_fail=$((total_fail + $2))
	summary="$summary
interop: Redisson $v: $1 passed, $2 failed"
	if [ -f "$tmp/$v/status" ] || [ "$2" != 0 ]; then
		status=1
		for log in "$tmp/$v"/sentinel.log "$tmp/$v"/cluster.log; do
			[ -s "$log" ] || continue
			echo "interop: last lines of $v/$(basename "$log"):" >&2
			tail -n 20 "$log" >&2
		done
	fi
done
if [ -n "$redis_pid" ] && ! kill -0 "$redis_pid" 2>/dev/null; then
	echo "interop: redis-server died; its log:" >&2
	cat "$tmp/redis.log" >&2 || true
	status=1
fi
echo "$summary" | sed 1d
echo "$total_pass passed, $total_fail failed"
exit $status
