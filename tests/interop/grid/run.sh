#!/bin/sh
# The data grid against the real Redisson, 4.3.1 and 4.7.0 (or
# $GRID_REDISSON_VERSIONS), on a throwaway redis-server and, when the
# build has the topology launcher, a throwaway Redis Cluster: buckets
# (StringCodec, ByteArrayCodec), atomic longs and doubles (LongCodec and
# the stored number forms), bit sets, counters updated from both sides at
# once, long and double adders, Bloom filters and one rate limiter shared
# by both sides; then the collections (CollectionsInterop.java: maps,
# sets, scored sorted sets, sorted sets, lists, queues and deques, with
# StringCodec and ByteArrayCodec: written by one side and read byte-exact
# and in order by the other, races with one winner, concurrent adds,
# producers and consumers on both sides, iteration of more than 1000);
# then the priority queue and deque (PriorityInterop.java: Java's String
# order with duplicates both ways, adds from both sides at once, hilock
# waiting for Redisson's lock, a Java comparator refused, producers and
# consumers on both sides).
# GridInterop.java (one JVM per version) drives grid_peer.c (a hilock
# process) and prints one line per check, then
# "VERSION TOPOLOGY: N passed, N failed (T ms)"; CollectionsInterop.java
# drives collections_peer.c and ends with
# "VERSION TOPOLOGY collections: N passed, N failed (T ms)", as
# PriorityInterop.java ("... priority: ..."); DelayedInterop.java (grid_peer.c
# again) shares delayed queues with Redisson's RDelayedQueue: offered by one
# side, moved by the other, both movers at once ("VERSION TOPOLOGY delayed: ...").
#
#   sh tests/interop/grid/run.sh [BUILD_DIR [FILTER [TOPOLOGIES]]]
#
# FILTER runs only the scenarios whose name starts with it (bucket,
# atomic, bit_set, counters, adders, bloom, rate; map, set, scored,
# sorted, list, queue, deque, priority; delayed); TOPOLOGIES is single,
# cluster or single,cluster (the default). Needs java (17+), mvn
# (Redisson and its dependencies in ~/.m2, fetched the first time), cc,
# pkg-config, redis-server and redis-cli; the Cluster also needs the
# build's tests/tools/hl_topo. Not part of `make test`. Exits non-zero
# when a check fails.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
filter=${2:-}
topologies=${3:-single,cluster}
out="$build/interop-grid"
who=interop-grid
topo_bin="$build/tests/tools/hl_topo"
. "$here/common.sh"
grid_tools
grid_peers grid_peer collections_peer

# Redisson's classpath for each version (Maven only resolves it; offline
# first), and the driver compiled against it.
for v in $versions; do
	grid_classpath "$v"
	javac -d "$out/classes-$v" -cp "$(cat "$cp")" "$here/GridInterop.java" \
		"$here/BloomVectors.java" "$here/CollectionsInterop.java" "$here/PriorityInterop.java" \
		"$here/DelayedInterop.java"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hilock-grid-interop.XXXXXX")
TR_DIR=$tmp
. "$here/../../../tools/throwaway-redis.sh"
topo_pid=
cleanup() {
	[ -z "$topo_pid" ] || { exec 3>&- || true; wait "$topo_pid" 2>/dev/null || true; }
	tr_stop
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start=$(date +%s)
status=0
summary=""
run() { # topology addresses url
	for v in $versions; do
		timeout 300 java -cp "$out/classes-$v:$(cat "$out/cp-$v.txt")" GridInterop \
			"$v" "$out/grid_peer" "$1" "$2" "$3" "$filter" >"$tmp/out" 2>&1 || status=1
		cat "$tmp/out"
		summary="$summary$(tail -n 1 "$tmp/out")
"
		timeout 600 java -cp "$out/classes-$v:$(cat "$out/cp-$v.txt")" CollectionsInterop \
			"$v" "$out/collections_peer" "$1" "$2" "$3" "$filter" >"$tmp/out" 2>&1 || status=1
		cat "$tmp/out"
		summary="$summary$(tail -n 1 "$tmp/out")
"
		timeout 300 java -cp "$out/classes-$v:$(cat "$out/cp-$v.txt")" PriorityInterop \
			"$v" "$out/collections_peer" "$1" "$2" "$3" "$filter" >"$tmp/out" 2>&1 || status=1
		cat "$tmp/out"
		summary="$summary$(tail -n 1 "$tmp/out")
"
		timeout 300 java -cp "$out/classes-$v:$(cat "$out/cp-$v.txt")" DelayedInterop \
			"$v" "$out/grid_peer" "$1" "$2" "$3" "$filter" >"$tmp/out" 2>&1 || status=1
		cat "$tmp/out"
		summary="$summary$(tail -n 1 "$tmp/out")
"
	done
}

case ",$topologies," in
*,single,*)
	tr_start || exit 1
	echo "interop-grid: redis-server on 127.0.0.1:$TR_PORT"
	run single "127.0.0.1:$TR_PORT" "redis://127.0.0.1:$TR_PORT/0"
	tr_stop
	;;
esac

case ",$topologies," in
*,cluster,*)
	if [ ! -x "$topo_bin" ]; then
		echo "interop-grid: $topo_bin missing: no Cluster run" >&2
		status=1
	else
		# hl_topo keeps the Cluster up while its stdin stays open
		mkfifo "$tmp/topo.in"
		"$topo_bin" cluster <"$tmp/topo.in" >"$tmp/topo.out" 2>"$tmp/topo.log" &
		topo_pid=$!
		exec 3>"$tmp/topo.in"
		i=0
		while ! grep -q '^up cluster' "$tmp/topo.out" 2>/dev/null && [ $i -lt 600 ]; do
			kill -0 "$topo_pid" 2>/dev/null || break
			sleep 0.1
			i=$((i + 1))
		done
		up=$(grep '^up cluster' "$tmp/topo.out" || true)
		if [ -z "$up" ]; then
			echo "interop-grid: the Cluster did not come up; its log:" >&2
			tail -n 20 "$tmp/topo.log" >&2
			status=1
		else
			url=$(echo "$up" | cut -d' ' -f3)
			nodes=$(echo "$up" | sed 's/.* nodes=\([^ ]*\).*/\1/')
			echo "interop-grid: Redis Cluster $nodes"
			run cluster "$nodes" "$url"
		fi
		echo quit >&3 || true
		exec 3>&-
		wait "$topo_pid" 2>/dev/null || true
		topo_pid=
	fi
	;;
esac

# The Bloom filter's hash vectors (tests/test_grid_bloom.c holds 4.3.1's)
# are the same in every version.
first=
for v in $versions; do
	java -cp "$out/classes-$v:$(cat "$out/cp-$v.txt")" BloomVectors hash >"$tmp/hash-$v" 2>/dev/null && [ -s "$tmp/hash-$v" ] || status=1
	if [ -z "$first" ]; then
		first=$v
	elif cmp -s "$tmp/hash-$first" "$tmp/hash-$v"; then
		summary="${summary}Bloom hash vectors: $v = $first ($(wc -l <"$tmp/hash-$v") inputs)
"
	else
		summary="${summary}FAIL Bloom hash vectors: $v differs from $first
"
		status=1
	fi
done
printf 'interop-grid:\n%s' "$summary"
echo "interop-grid: $(($(date +%s) - start)) s"
exit $status
