# Shared by the tests/install/check-*.sh scripts (sourced, POSIX sh).
#
# Each check installs one binding the way its ecosystem does, from a copy of
# this checkout (what `git clone` would give once committed: the tracked
# files and the untracked ones .gitignore does not exclude; no build tree),
# then runs a tiny program against a throwaway redis-server on a free
# loopback port. Everything lives under one temporary directory, removed on
# exit, and the server is stopped by its pid.
#
# Environment: REDIS_SERVER (default redis-server), REDIS_CLI (redis-cli).

set -eu
install_root=$(cd "$(dirname "$0")/../.." && pwd)
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_CLI=${REDIS_CLI:-redis-cli}
work=$(mktemp -d "${TMPDIR:-/tmp}/hilock-install-${check_name:-check}.XXXXXX")
redis_pid=""

cleanup() {
	if [ -n "$redis_pid" ]; then
		kill "$redis_pid" 2>/dev/null || true
		wait "$redis_pid" 2>/dev/null || true
	fi
	chmod -R u+w "$work" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "install-check ${check_name:-}: $*"; }
fail() {
	echo "install-check ${check_name:-}: FAILED: $*" >&2
	exit 1
}

# copy_repo DEST: the checkout's files as a fresh clone has them.
copy_repo() {
	mkdir -p "$1"
	if git -C "$install_root" rev-parse --git-dir >/dev/null 2>&1; then
		(cd "$install_root" && git ls-files -z --cached --others --exclude-standard |
			xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
			tar --null -T - -cf -) | tar -xf - -C "$1"
	else
		(cd "$install_root" && tar --exclude='./build*' --exclude=./.git -cf - .) |
			tar -xf - -C "$1"
	fi
	[ -f "$1/core/include/hilock.h" ] || fail "copy of the checkout has no core/include/hilock.h"
}

# start_redis: a redis-server on 127.0.0.1:$redis_port, data in $work/redis.
start_redis() {
	mkdir -p "$work/redis"
	attempt=0
	while [ $attempt -lt 3 ]; do
		attempt=$((attempt + 1))
		redis_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
		"$REDIS_SERVER" --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
			--dir "$work/redis" --logfile "$work/redis/redis.log" --daemonize no &
		redis_pid=$!
		i=0
		while [ $i -lt 100 ]; do
			if [ "$("$REDIS_CLI" -p "$redis_port" ping 2>/dev/null)" = PONG ]; then
				redis_url="redis://127.0.0.1:$redis_port/0"
				return 0
			fi
			kill -0 "$redis_pid" 2>/dev/null || break
			sleep 0.1
			i=$((i + 1))
		done
		kill "$redis_pid" 2>/dev/null || true
		wait "$redis_pid" 2>/dev/null || true
		redis_pid=""
	done
	cat "$work/redis/redis.log" >&2 2>/dev/null || true
	fail "could not start $REDIS_SERVER"
}

# assert_empty_redis: the program left no key behind.
assert_empty_redis() {
	n=$("$REDIS_CLI" -p "$redis_port" dbsize)
	[ "$n" = 0 ] || fail "the program left $n key(s) in Redis: $("$REDIS_CLI" -p "$redis_port" --scan | head -5 | tr '\n' ' ')"
}

# readme_quickstart LANG OUT: the README's quick start for LANG (the code
# block after `<!-- quickstart:LANG -->`, as tests/quickstart extracts it)
# into OUT.
readme_quickstart() {
	awk -v want="<!-- quickstart:$1 -->" '
		$0 == want { on = 1; next }
		on == 1 && /^```/ { on = 2; next }
		on == 2 && /^```[ \t]*$/ { exit }
		on == 2 { print }' "$install_root/README.md" >"$2"
	[ -s "$2" ] || fail "no $1 quick start in README.md"
}

# run_quickstart LANG CMD...: run the installed quick start against the
# throwaway server: it says its batch is done, and leaves nothing behind
# but hilock's request markers (which expire by themselves).
run_quickstart() {
	_lang=$1
	shift
	HILOCK_URL="$redis_url" "$@" >"$work/qs-$_lang.out" 2>&1 ||
		{ cat "$work/qs-$_lang.out" >&2; fail "the README's $_lang quick start"; }
	grep -Eq 'batch done:[[:space:]]*(1|true|True)' "$work/qs-$_lang.out" ||
		{ cat "$work/qs-$_lang.out" >&2; fail "the $_lang quick start did not say its batch is done"; }
	_left=$("$REDIS_CLI" -p "$redis_port" --scan | grep -v '^hilock_request:' || true)
	[ -z "$_left" ] || fail "the $_lang quick start left keys: $_left"
	"$REDIS_CLI" -p "$redis_port" flushall >/dev/null
	say "the README's $_lang quick start ran as pasted"
}
