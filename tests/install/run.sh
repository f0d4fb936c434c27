#!/bin/sh
# Runs the fresh-clone install checks (check-go.sh, check-lua.sh,
# check-python.sh, or those named as arguments: go lua python) at the same
# time, each with its own log, and prints the log of each one that failed.
# Exit status: 0 when all passed.
#
#   sh tests/install/run.sh [go] [lua] [python]
set -u
here=$(cd "$(dirname "$0")" && pwd)
checks=${*:-go lua python}
logs=$(mktemp -d "${TMPDIR:-/tmp}/hilock-install-logs.XXXXXX")
trap 'rm -rf "$logs"' EXIT
pids=""
for c in $checks; do
	[ -f "$here/check-$c.sh" ] || { echo "install-check: no check-$c.sh" >&2; exit 2; }
	# Each check is bounded: a hang fails, with its log, instead of
	# holding `make test` silent until CI's own limit.
	timeout -k 10 "${HILOCK_INSTALL_CHECK_BOUND:-900}" sh "$here/check-$c.sh" >"$logs/$c.log" 2>&1 &
	pids="$pids $c:$!"
done
failed=""
for cp in $pids; do
	c=${cp%%:*}
	rc=0
	wait "${cp#*:}" || rc=$?
	if [ "$rc" = 0 ]; then
		tail -n 1 "$logs/$c.log"
	else
		failed="$failed $c"
		[ "$rc" != 124 ] && [ "$rc" != 137 ] ||
			echo "---- install-check $c did not end within ${HILOCK_INSTALL_CHECK_BOUND:-900} s: stopped" >&2
		echo "---- install-check $c FAILED; its log:" >&2
		cat "$logs/$c.log" >&2
	fi
done
if [ -n "$failed" ]; then
	echo "install-check: failed:$failed" >&2
	exit 1
fi
echo "install-check: $checks: installed from a fresh copy and ran"
