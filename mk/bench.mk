# Benchmarks (bench/, BENCHMARKS.md). `make bench` is NOT part of `make test`:
# it starts its own redis-server, and for the topology groups (cluster, tls,
# failover) a cluster, a TLS server and Sentinel deployments of its own
# (bench/topo.py: redis-server, redis-sentinel, redis-cli and openssl, all
# in APT_PACKAGES), runs every scenario (about 19 minutes on 2 cores) and
# rewrites BENCHMARKS.md and bench/wait-times.png. BENCH_ARGS passes options
# to bench/run.py, e.g. BENCH_ARGS="--only cluster,tls,failover" or --quick;
# BENCH_ARGS="--only redlock" (three servers of its own: hilock's RedLock
# against redsync's) rewrites only that section of BENCHMARKS.md;
# BENCH_ARGS="--only kinds,fair,rw" measures the lock family alone and
# replaces only its section (9); BENCH_ARGS="--only unc" measures scenario
# (1), uncontended lock+unlock against the floor in every language, alone
# and replaces only section (1), its rows of the Targets table and the
# Analysis and Reproduce tail; BENCH_ARGS="--only grid" measures the data
# grid's operations against their floors, beside raw redis-py and
# go-redis, Redisson, limits, pottery and redis_rate, and replaces only
# section (11); BENCH_ARGS="--only grid-coll" the collections' operations
# (bench/grid_coll.py), replacing only their section at the end;
# BENCH_ARGS="--only grid-queue" the queues (bench/grid_queue.py): a
# blocking queue's hand-off latency and throughput with 1 and 16 consumers
# against RPUSH + BLPOP through hiredis, redis-py, go-redis, Redisson, rq,
# arq and asynq, and a delayed queue's due-time accuracy (rq, arq, asynq
# and Redisson besides hilock), replacing only its own section (15). Its
# Python peers go into BUILD/venv-bench-queue (pinned), asynq comes from
# the Go module proxy (bench/go/queue, a module of its own).
# BENCH_ARGS="--only sections" measures sections (3) to (8) (scale,
# watchdog, memory, faults, the topologies, RedLock) and replaces only
# them, their rows of the Targets table and the Analysis tail.
#
# Its extra Debian packages (Python for the driver and the Python peers, Go
# for redsync and go-redis, a JDK and Maven for Redisson) are installed only by
# `make bench`, so `make test` does not pull them in.
BENCH_APT_PACKAGES := python3 python3-venv python3-pip \
	openjdk-17-jdk-headless maven
ifeq ($(shell command -v go 2>/dev/null),)
BENCH_APT_PACKAGES += golang-go
endif
BENCH_ARGS ?=

.PHONY: bench-deps

bench-deps:
	@APT_PACKAGES="$(BENCH_APT_PACKAGES)" sh tools/install-deps.sh

# The language examples' build targets (LANG_DEMO_DEPS, from the other
# mk files) build the bindings the bench measures; they are named in the
# recipe because that list is complete only once every mk file is read.
bench: build bench-deps
	@if [ -n "$(strip $(LANG_DEMO_DEPS))" ]; then \
		$(MAKE) --no-print-directory $(LANG_DEMO_DEPS); fi
	python3 bench/run.py --build $(BUILD) $(BENCH_ARGS)

# `make bench-grid-iter`: the data grid at scale (issue 21 "Scale";
# bench/grid_iterate.py, about 10 minutes on 2 cores): a 1,000,000-entry
# hash on a redis-server of its own, iterated by HSCAN pages in C, Python,
# Go and Lua beside redis-py's hscan_iter and go-redis's scan iterator
# (entries/s and peak RSS), the page size (COUNT) swept, and get_all
# batches against single gets and HMGET. It builds bench/go/griditer and a
# venv with redis-py and hiredis under $(BUILD), and appends or replaces
# its own section (12) of BENCHMARKS.md. GRID_ITER_ARGS passes options,
# e.g. GRID_ITER_ARGS="--reps 1 --no-write".
GRID_ITER_ARGS ?=

.PHONY: bench-grid-iter

bench-grid-iter: build bench-deps python-binding
	python3 bench/grid_iterate.py --build $(BUILD) $(GRID_ITER_ARGS)
