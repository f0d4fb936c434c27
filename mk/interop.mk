# Wire compatibility with the real Redisson (tests/interop, README there).
# `make interop` is NOT part of `make test`: it needs a JDK, Maven and, the
# first time, Maven Central (Redisson is fetched into ~/.m2). It runs hilock
# C processes against Redisson's locks (RLock, fair, read-write, spin,
# fenced; the non-reentrant ones from 4.4.0 on) on the same locks of a
# throwaway redis-server, then of a Sentinel deployment (a master, two
# replicas, three sentinels) and of a Redis Cluster (three masters, three
# replicas), once per Redisson version (4.3.1, then 4.7.0), and prints one
# line per scenario, a "N passed, N failed" line per version and one for
# all.
#
#   make interop                                # all three topologies
#   make interop INTEROP_TOPOLOGIES=cluster     # single, sentinel, cluster
#                                               # (comma-separated)
#   make interop INTEROP_FILTER=b               # scenarios starting with b
#   make interop INTEROP_REDISSON=4.7.0         # Redisson versions
#                                               # (comma-separated)
#
# The Sentinel and Cluster deployments come from the C tests' topology
# harness (libhilock_test_harness, built by `build`), so they need
# redis-sentinel and redis-cli as well as redis-server.
#
# A JDK (17+) and Maven come from Debian only when `java` or `mvn` is
# missing, so a machine with its own JDK/Maven is left alone.
INTEROP_APT_PACKAGES := default-jdk-headless maven
INTEROP_FILTER ?=
INTEROP_TOPOLOGIES ?= single,sentinel,cluster
INTEROP_REDISSON ?= 4.3.1,4.7.0

.PHONY: interop

interop: build
	@if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then \
		APT_PACKAGES="$(INTEROP_APT_PACKAGES)" sh tools/install-deps.sh; fi
	sh tests/interop/run.sh "$(BUILD)" "$(INTEROP_FILTER)" "$(INTEROP_TOPOLOGIES)" "$(INTEROP_REDISSON)"

# The data grid against Redisson 4.3.1 and 4.7.0 (tests/interop/grid: every
# object, then every collection (maps, sets, scored and plain sorted sets,
# lists, queues, deques; then priority queues and deques, delayed queues),
# both ways, on a redis-server and a Redis Cluster; about two minutes):
#
#   make interop-grid
#   make interop-grid INTEROP_GRID_FILTER=bloom   # scenarios starting so
#   make interop-grid INTEROP_GRID_FILTER=sorted  # (map, set, scored, list...,
#                                                 #  priority)
#   make interop-grid INTEROP_GRID_FILTER=blocking  # the blocking queue only
#   make interop-grid INTEROP_GRID_TOPOLOGIES=single
INTEROP_GRID_FILTER ?=
INTEROP_GRID_TOPOLOGIES ?= single,cluster

.PHONY: interop-grid
interop: interop-grid

interop-grid: build
	@if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then \
		APT_PACKAGES="$(INTEROP_APT_PACKAGES)" sh tools/install-deps.sh; fi
	sh tests/interop/grid/run.sh "$(BUILD)" "$(INTEROP_GRID_FILTER)" "$(INTEROP_GRID_TOPOLOGIES)"
	@# the blocking queue: both sides producing and taking at once
	@case "$(INTEROP_GRID_FILTER)" in ""|block*) sh tests/interop/grid/blocking.sh "$(BUILD)";; esac
