#!/bin/sh
# N sorted set adds (default 50,000, as GRID-USERS.md's Redisson users
# measured) of the same pseudo-random values, one client each, on a
# throwaway redis-server: hilock from C and Python, then Redisson 4.3.1's
# RSortedSet.add (or $REDISSON_VERSION). Redisson takes minutes.
#
#   sh bench/sorted_set/run.sh [BUILD_DIR [N]]
#
# Needs cc, pkg-config, redis-server, java 17+, mvn (Redisson in ~/.m2)
# and the build's Python venv (make python-binding). Not part of make test.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
n=${2:-50000}
version=${REDISSON_VERSION:-4.3.1}
out="$build/bench-sorted-set"
mkdir -p "$out"
PKG_CONFIG_PATH="$build/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH
# shellcheck disable=SC2046
cc -std=c11 -O2 -Wall -Wextra -o "$out/sorted_set_adds" "$here/sorted_set_adds.c" \
	$(pkg-config --cflags --libs hilock)
cp="$out/cp-$version.txt"
pom="$here/../../tests/interop/grid/pom.xml"
if [ ! -s "$cp" ]; then
	mvn -q -B -o -f "$pom" -Dredisson.version="$version" -DbuildDir="$out/mvn" \
		-Dmdep.outputFile="$cp" dependency:build-classpath >/dev/null 2>&1 ||
		mvn -q -B -f "$pom" -Dredisson.version="$version" -DbuildDir="$out/mvn" \
			-Dmdep.outputFile="$cp" dependency:build-classpath
fi
mkdir -p "$out/classes"
javac -d "$out/classes" -cp "$(cat "$cp")" "$here/SortedSetAdds.java"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hilock-sorted-bench.XXXXXX")
TR_DIR=$tmp
. "$here/../../tools/throwaway-redis.sh"
trap 'tr_stop; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
tr_start || exit 1
url="redis://127.0.0.1:$TR_PORT"
"$out/sorted_set_adds" "$url" "$n" bench:sorted:c
"$build/venv-python/bin/python" "$here/sorted_set_adds.py" "$url" "$n" bench:sorted:py
java -cp "$out/classes:$(cat "$cp")" SortedSetAdds "$url" "$n" bench:sorted:java "$version"
