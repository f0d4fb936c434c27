#!/bin/sh
# The Bloom filter against the real Redisson (4.3.1 and 4.7.0), both ways,
# on a throwaway redis-server: a filter Redisson fills (StringCodec) answers
# every value in hilock with Redisson's count, and a filter hilock fills
# answers every value in Redisson with the same count, the two bitmaps
# are the same bytes; the hashes and the
# Double.toString forms the C tests hold (tests/test_grid_bloom.c) are
# printed again for a look.
#
#   sh tests/interop/bloom/run.sh [BUILD_DIR]
#
# Needs java (17+), mvn (Redisson and its dependencies in ~/.m2, fetched
# the first time), cc, pkg-config, redis-server and redis-cli. Not part of
# `make test`. Exits non-zero when a check fails.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
build=$(cd "${1:-build}" && pwd)
out="$build/interop-bloom"
mkdir -p "$out"
PKG_CONFIG_PATH="$build/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH
# shellcheck disable=SC2046
cc -std=c11 -O2 -Wall -Wextra -o "$out/bloom_peer" "$here/bloom_peer.c" \
	$(pkg-config --cflags --libs hilock)

TR_DIR=$(mktemp -d "${TMPDIR:-/tmp}/hilock-bloom-interop.XXXXXX")
. "$repo/tools/throwaway-redis.sh"
trap 'tr_stop; rm -rf "$TR_DIR"' EXIT
tr_start || exit 1
url="redis://127.0.0.1:$TR_PORT/0"

fails=0
check() { # what expected got
	if [ "$2" = "$3" ]; then
		echo "ok   $1: $3"
	else
		echo "FAIL $1: expected $2, got $3"
		fails=$((fails + 1))
	fi
}

vals=$(seq -f 'v%g' 0 199 | tr '\n' ' ')
for v in 4.3.1 4.7.0; do
	cp="$out/cp-$v.txt"
	if [ ! -s "$cp" ]; then
		mvn -q -o -f "$repo/tests/interop/java/pom.xml" -Dredisson.version="$v" \
			-DbuildDir="$out/mvn" -Dmdep.outputFile="$cp" dependency:build-classpath ||
			mvn -q -f "$repo/tests/interop/java/pom.xml" -Dredisson.version="$v" \
				-DbuildDir="$out/mvn" -Dmdep.outputFile="$cp" dependency:build-classpath
	fi
	mkdir -p "$out/classes-$v"
	javac -d "$out/classes-$v" -cp "$(cat "$cp")" "$here/BloomVectors.java"
	java_() { java -cp "$out/classes-$v:$(cat "$cp")" BloomVectors "$@" 2>/dev/null; }

	# Redisson fills, hilock checks
	# shellcheck disable=SC2086
	jout=$(java_ fill "$TR_PORT" "j:$v" 1000 0.03 $vals)
	# shellcheck disable=SC2086
	hout=$("$out/bloom_peer" "$url" check "j:$v" $vals)
	check "$v: hilock contains of Redisson's 200" "contains 200" \
		"$(echo "$hout" | grep '^contains')"
	check "$v: hilock count = Redisson count" \
		"$(echo "$jout" | sed -n 's/.* count \([0-9]*\)$/count \1/p')" \
		"$(echo "$hout" | grep '^count')"

	# hilock fills, Redisson checks
	# shellcheck disable=SC2086
	hout=$("$out/bloom_peer" "$url" fill "h:$v" 1000 0.03 $vals)
	# shellcheck disable=SC2086
	jout=$(java_ check "$TR_PORT" "h:$v" $vals)
	ones=$(echo "$jout" | grep '^contains' | tr ' ' '\n' | grep -c '^1$' || true)
	check "$v: Redisson contains of hilock's 200" 200 "$ones"
	check "$v: Redisson count = hilock count" \
		"$(echo "$hout" | grep '^count' | cut -d' ' -f2)" \
		"$(echo "$jout" | sed -n 's/^count \([0-9]*\) .*/\1/p')"
	check "$v: Redisson reads hilock's config" "size 7298 k 5 n 1000 p 0.03" \
		"$(echo "$jout" | sed -n 's/^count [0-9]* //p')"
	check "$v: the same bitmap byte for byte" \
		"$(redis-cli -p "$TR_PORT" GET "j:$v" | cksum)" \
		"$(redis-cli -p "$TR_PORT" GET "h:$v" | cksum)"
	# a value neither added: both say absent (or both a false positive)
	j1=$(java_ check "$TR_PORT" "h:$v" never-added | grep '^contains')
	h1=$("$out/bloom_peer" "$url" check "h:$v" never-added | grep '^contains')
	check "$v: both agree on a value never added" "$j1" "$h1"
done
echo "hashes (first lines; the C test holds them):"
java_ hash | head -3
java_ fmt 0.03 0.0001 0.001 1e-10 0.5 0.000123456
echo "$fails failed"
[ "$fails" = 0 ]
