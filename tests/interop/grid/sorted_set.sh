#!/bin/sh
# The sorted set against the real Redisson's RSortedSet (StringCodec),
# 4.3.1 and 4.7.0 (or $GRID_REDISSON_VERSIONS), on a throwaway
# redis-server: Java's String order both ways (the UTF-16 vectors), both
# sides adding at once, hilock waiting for Redisson's lock, a comparator
# refused, polls and removes across (SortedSetInterop.java, driving
# grid_peer.c).
#
#   sh tests/interop/grid/sorted_set.sh [BUILD_DIR]
#
# Needs what run.sh needs (java 17+, mvn with Redisson in ~/.m2, cc,
# pkg-config, redis-server, redis-cli). Not part of `make test`. Exits
# non-zero when a check fails.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
out="$build/interop-grid-sorted"
who=interop-sorted-set
. "$here/common.sh"
grid_single SortedSetInterop grid_peer
