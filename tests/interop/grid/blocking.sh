#!/bin/sh
# The blocking queue against the real Redisson's RBlockingQueue
# (StringCodec), 4.3.1 and 4.7.0 (or $GRID_REDISSON_VERSIONS), on a
# throwaway redis-server: takes woken across, producers and consumers on
# both sides at once, every element taken once, no hilock key left; the
# bounded queue's capacity; poll from several queues both ways (hilock's
# poll_from_any, Redisson's pollFromAny and its forms) with producers and
# consumers on both sides (BlockingInterop.java, driving two grid_peer.c
# processes). The setup is common.sh's.
#
#   sh tests/interop/grid/blocking.sh [BUILD_DIR]
#
# Needs what run.sh needs (java 17+, mvn with Redisson in ~/.m2, cc,
# pkg-config, redis-server, redis-cli). Not part of `make test`. Exits
# non-zero when a check fails.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" && pwd)
out="$build/interop-grid-blocking"
who=interop-blocking
. "$here/common.sh"
grid_single BlockingInterop grid_peer
