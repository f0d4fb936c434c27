#!/bin/sh
# Run the Lua binding's tests against a throwaway redis-server.
#
#   sh bindings/lua/tests/run-tests.sh [BUILD_DIR]      (default: build)
#
# Starts redis-server ($REDIS_SERVER, else the one on PATH) on a free
# 127.0.0.1 port in a temporary directory, exports HILOCK_TEST_URL, LUA_PATH
# and LUA_CPATH for the module built in BUILD_DIR/bindings/lua, runs
# test_hilock.lua (TAP on stdout, ending "N passed, N failed"), then
# test_tasks.lua (the operations that do not block), then test_sync.lua
# (semaphores and the count-down latch, with worker processes running
# sync_worker.lua), then test_lease_end.lua (a fixed lease that ends is a
# loss), then test_multi.lua
# (which starts two more servers for its multilocks), then test_faults.lua
# (the fault proxy BUILD_DIR/tests/tools/faultproxy between a client and
# the server, a server of its own killed and started again, and fork()
# through forkhelper.c, compiled here with $CC, default cc; skipped, said
# so, when there is no faultproxy), and
# stops the servers. Then test_tls.lua against a second server, TLS only, with
# certificates made by openssl (HILOCK_TEST_TLS_URL, HILOCK_TEST_TLS_DIR);
# skipped, said so, when the server was built without TLS.
# Then test_topology.lua, which starts a Sentinel and a Cluster deployment
# itself with the launcher hl_topo (tests/interop/topo-up.c, built by CMake
# into BUILD_DIR/tests/tools).
# Exits non-zero when a test fails. Environment:
#   LUA            the interpreter (default lua5.4, else lua)
#   HILOCK_TEST_NO_VALGRIND=1   skip the valgrind test
#   HILOCK_TOPO    the launcher (default BUILD_DIR/tests/tools/hl_topo; when
#                  it is not set and that file is missing, the topology tests
#                  are skipped)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
repo=$(cd "$src/../.." && pwd)
build=${1:-build}
case $build in /*) ;; *) build=$(pwd)/$build ;; esac
mod="$build/bindings/lua"

if [ ! -f "$mod/hilock_core.so" ]; then
	echo "run-tests: $mod/hilock_core.so not found (build with -DHILOCK_BUILD_LUA=ON)" >&2
	exit 2
fi
if [ -z "${LUA:-}" ]; then
	if command -v lua5.4 >/dev/null 2>&1; then LUA=lua5.4; else LUA=lua; fi
fi
redis=${REDIS_SERVER:-redis-server}
command -v "$redis" >/dev/null 2>&1 || { echo "run-tests: $redis not found" >&2; exit 2; }
command -v redis-cli >/dev/null 2>&1 || { echo "run-tests: redis-cli not found (redis-tools)" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hilock-lua-test.XXXXXX")
TR_DIR=$tmp
REDIS_SERVER=$redis
. "$repo/tools/throwaway-redis.sh"
tls_pid=""
# test_multi.lua starts two more servers (daemonized) with pid files under
# $tmp/multi, test_faults.lua one under $tmp/faults; whatever is left of
# them is killed at exit.
kill_multi() {
	for _pf in "$tmp"/multi/*/pid "$tmp"/faults/*/pid; do
		[ -f "$_pf" ] && kill "$(cat "$_pf")" 2>/dev/null || true
	done
}
trap '[ -z "$tls_pid" ] || { kill "$tls_pid" 2>/dev/null; wait "$tls_pid" 2>/dev/null; }; kill_multi; tr_stop; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

tr_start || exit 2
port=$TR_PORT

export HILOCK_TEST_URL="redis://127.0.0.1:$port/0"
export HILOCK_TEST_REDIS_PORT="$port"
export HILOCK_TEST_LUA="$LUA"
export HILOCK_TEST_EXAMPLES="$repo/examples/lua"
export LUA_PATH="$mod/?.lua;$here/?.lua;;"
export LUA_CPATH="$mod/?.so;;"
export LUA_PATH_5_4="$LUA_PATH" LUA_CPATH_5_4="$LUA_CPATH"

# The TLS server: a CA, a server certificate for 127.0.0.1 and localhost,
# a client one, and another CA (a wrong one), then redis-server with a TLS
# port only (client certificates optional).
tls="$tmp/tls"
start_tls() {
	command -v openssl >/dev/null 2>&1 || { echo "run-tests: no openssl for the TLS tests" >&2; return 1; }
	mkdir -p "$tls"
	(
		set -e
		cd "$tls"
		printf '%s\n' '[req]' 'distinguished_name = dn' 'prompt = no' '[dn]' 'CN = hilock' \
			'[v3_ca]' 'basicConstraints = critical,CA:TRUE' \
			'keyUsage = critical,keyCertSign,cRLSign' \
			'[server]' 'basicConstraints = CA:FALSE' 'extendedKeyUsage = serverAuth' \
			'subjectAltName = IP:127.0.0.1,DNS:localhost' \
			'[client]' 'basicConstraints = CA:FALSE' 'extendedKeyUsage = clientAuth' > hl.cnf
		K='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'
		for ca in ca other-ca; do
			openssl req -x509 -config hl.cnf -extensions v3_ca $K -days 3650 \
				-keyout $ca.key -out $ca.crt -subj "/CN=hilock $ca"
		done
		for n in server client; do
			openssl req -new -config hl.cnf $K -keyout $n.key -out $n.csr -subj "/CN=$n"
			openssl x509 -req -in $n.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
				-days 3650 -extfile hl.cnf -extensions $n -out $n.crt
		done
	) >"$tmp/openssl.log" 2>&1 || { cat "$tmp/openssl.log" >&2; return 1; }
	for _try in 1 2 3 4 5; do
		tls_port=$(tr_free_port)
		"$redis" --port 0 --tls-port "$tls_port" --bind 127.0.0.1 --save "" \
			--appendonly no --dir "$tls" --daemonize no \
			--tls-cert-file "$tls/server.crt" --tls-key-file "$tls/server.key" \
			--tls-ca-cert-file "$tls/ca.crt" --tls-auth-clients optional \
			>"$tls/redis.log" 2>&1 &
		tls_pid=$!
		_i=0
		while [ $_i -lt 100 ]; do
			if [ "$(redis-cli --tls --cacert "$tls/ca.crt" -h 127.0.0.1 -p "$tls_port" ping 2>/dev/null)" = PONG ]; then
				return 0
			fi
			kill -0 "$tls_pid" 2>/dev/null || break
			sleep 0.1
			_i=$((_i + 1))
		done
		kill "$tls_pid" 2>/dev/null || true
		wait "$tls_pid" 2>/dev/null || true
		tls_pid=""
	done
	echo "run-tests: cannot start $redis with TLS; its log:" >&2
	cat "$tls/redis.log" >&2 || true
	return 1
}

# Why the server cannot serve TLS, "" when it can. Started with a TLS port
# and no certificate, a TLS build stops for the missing certificate; one
# built without TLS (Valkey's PyPI build) says it has no TLS support (the
# C harness's probe, tests/harness.c).
without_tls() {
	_out=$(cd / && timeout -k 5 10 "$redis" --port 0 --tls-port "$(tr_free_port)" \
		--bind 127.0.0.1 --save "" --daemonize no 2>&1 </dev/null || true)
	printf '%s\n' "$_out" | grep -i -m 1 -e 'tls support' -e 'tls not supported' -e 'bad directive' || true
}

cd "$here"
rc=0
# Every wait inside a test file is bounded; this stops a hang all the same,
# and says which file hung instead of holding the whole run until CI's limit.
lua_bound=${HILOCK_TEST_LUA_BOUND:-600}
run_lua() {
	_rc=0
	timeout -k 10 "$lua_bound" "$LUA" "$@" || _rc=$?
	if [ "$_rc" = 124 ] || [ "$_rc" = 137 ]; then
		echo "not ok - $(basename "$1") did not end within $lua_bound s: stopped" >&2
	fi
	return "$_rc"
}
run_lua "$here/test_hilock.lua" || rc=$?
run_lua "$here/test_tasks.lua" || rc=$?
run_lua "$here/test_sync.lua" || rc=$?
run_lua "$here/test_grid_rate_limiter.lua" || rc=$?
run_lua "$here/test_lease_end.lua" || rc=$?
run_lua "$here/test_grid.lua" || rc=$?
run_lua "$here/test_grid_adder.lua" || rc=$?
mkdir -p "$tmp/multi"
HILOCK_TEST_MULTI_DIR="$tmp/multi" run_lua "$here/test_multi.lua" || rc=$?
faultproxy=${HILOCK_FAULTPROXY:-$build/tests/tools/faultproxy}
# The grid's kinds (grid_helpers.lua; their lost-reply tests need the
# fault proxy and are left out without it).
mkdir -p "$tmp/grid"
for t in test_grid_bit_set test_grid_blocking_queue test_grid_bloom test_grid_list test_grid_map test_grid_set test_grid_sorted_set test_grid_priority test_grid_delayed_queue test_grid_poll_any; do
	HILOCK_TEST_GRID_DIR="$tmp/grid" \
		HILOCK_FAULTPROXY="$([ -x "$faultproxy" ] && echo "$faultproxy")" \
		run_lua "$here/$t.lua" || rc=$?
done
if [ -x "$faultproxy" ]; then
	mkdir -p "$tmp/faults" "$tmp/forkhelper"
	forkhelper=""
	if ! command -v "${CC:-cc}" >/dev/null 2>&1; then
		echo "# no C compiler ${CC:-cc}: test_faults.lua skips its fork test"
	# shellcheck disable=SC2046
	elif ${CC:-cc} -shared -fPIC -O2 -Wall $(pkg-config --cflags lua5.4 2>/dev/null || echo -I/usr/include/lua5.4) \
		-o "$tmp/forkhelper/forkhelper.so" "$here/forkhelper.c" >"$tmp/forkhelper/cc.log" 2>&1; then
		forkhelper="$tmp/forkhelper"
	else
		echo "run-tests: forkhelper.c did not compile:" >&2
		cat "$tmp/forkhelper/cc.log" >&2
		rc=1
	fi
	HILOCK_FAULTPROXY="$faultproxy" HILOCK_TEST_FAULTS_DIR="$tmp/faults" \
		HILOCK_TEST_FORKHELPER="$forkhelper" \
		run_lua "$here/test_faults.lua" || rc=$?
else
	echo "# skipped test_faults.lua: no $faultproxy (build with the C tests)"
fi
no_tls=$(without_tls)
if [ -n "$no_tls" ]; then
	echo "# skipped test_tls.lua: $redis was built without TLS (it says: $no_tls)"
elif start_tls; then
	export HILOCK_TEST_TLS_URL="rediss://127.0.0.1:$tls_port/0"
	export HILOCK_TEST_TLS_PORT="$tls_port" HILOCK_TEST_TLS_DIR="$tls"
	run_lua "$here/test_tls.lua" || rc=$?
else
	rc=1
fi
if [ -n "${HILOCK_TOPO:-}" ] || [ -x "$build/tests/tools/hl_topo" ]; then
	export HILOCK_TOPO="${HILOCK_TOPO:-$build/tests/tools/hl_topo}"
	if [ ! -x "$HILOCK_TOPO" ]; then
		echo "run-tests: $HILOCK_TOPO is not an executable (make build)" >&2
		rc=1
	else
		run_lua "$here/test_topology.lua" || rc=$?
	fi
else
	echo "# skipped test_topology.lua: no $build/tests/tools/hl_topo (build with the C tests)"
fi
exit $rc
