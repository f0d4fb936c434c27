#!/bin/sh
# The blocking queue against the real Redisson's RBlockingQueue
# (StringCodec), 4.3.1 and 4.7.0 (or $GRID_REDISSON_VERSIONS), on a
# throwaway redis-server: takes woken across, producers and consumers on
# both sides at once, every element taken once, no hilock key left
# (BlockingInterop.java, driving two grid_peer.c processes).
#
#   sh tests/interop/grid/blocking.sh [BUILD_DIR]
#
# Needs what run.sh needs (java 17+, mvn with Redisson in ~/.m2, cc,
# pkg-config, redis-server, redis-cli). Not part of `make test`. Exits
# non-zero when a check fails.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
versions=${GRID_REDISSON_VERSIONS:-4.3.1 4.7.0}
out="$build/interop-grid-blocking"
mkdir -p "$out"
for tool in java javac mvn cc pkg-config redis-server redis-cli; do
	command -v "$tool" >/dev/null 2>&1 || { echo "interop-blocking: $tool not found" >&2; exit 1; }
done

PKG_CONFIG_PATH="$build/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH
# shellcheck disable=SC2046
cc -std=c11 -O2 -Wall -Wextra -o "$out/grid_peer" "$here/grid_peer.c" \
	$(pkg-config --cflags --libs hilock) -lpthread

for v in $versions; do
	cp="$out/cp-$v.txt"
	if [ ! -s "$cp" ] || [ "$here/pom.xml" -nt "$cp" ]; then
		mvn -q -B -o -f "$here/pom.xml" -Dredisson.version="$v" -DbuildDir="$out/mvn" \
			-Dmdep.outputFile="$cp" dependency:build-classpath >/dev/null 2>&1 ||
			mvn -q -B -f "$here/pom.xml" -Dredisson.version="$v" -DbuildDir="$out/mvn" \
				-Dmdep.outputFile="$cp" dependency:build-classpath
	fi
	mkdir -p "$out/classes-$v"
	javac -d "$out/classes-$v" -cp "$(cat "$cp")" "$here/BlockingInterop.java"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hilock-blocking-interop.XXXXXX")
TR_DIR=$tmp
. "$here/../../../tools/throwaway-redis.sh"
cleanup() {
	tr_stop
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

status=0
for v in $versions; do
	tr_start || exit 1
	timeout 300 java -cp "$out/classes-$v:$(cat "$out/cp-$v.txt")" BlockingInterop \
		"$v" "$out/grid_peer" "redis://127.0.0.1:$TR_PORT" || status=1
	tr_stop
done
exit $status
