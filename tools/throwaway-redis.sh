# Sourced (not run) by the shell scripts that need a redis-server of their
# own: the demo, the Lua tests and the Redisson interop run.
#
#   TR_DIR=$(mktemp -d ...)        # required: its data and log go there
#   . tools/throwaway-redis.sh
#   trap 'tr_stop; rm -rf "$TR_DIR"' EXIT
#   tr_start || exit 1              # sets TR_PORT and TR_PID
#
# tr_start starts $REDIS_SERVER (default redis-server) on a free 127.0.0.1
# port, with no persistence, and waits (10 s at most) until it answers PING
# (through $REDIS_CLI, default redis-cli). A port taken between choosing and
# binding it makes redis-server exit: then it tries another, 5 times.
# tr_stop stops it: TERM, 5 s at most, then KILL. Safe to call twice.

TR_PORT=""
TR_PID=""

tr_free_port() {
	# Bind port 0 and let the kernel choose when python3 is there; else a
	# random high port (the retry below covers a collision).
	if command -v python3 >/dev/null 2>&1; then
		python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
	else
		echo $((20000 + $(od -An -N2 -tu2 /dev/urandom) % 40000))
	fi
}

tr_start() {
	_tr_server=${REDIS_SERVER:-redis-server}
	_tr_cli=${REDIS_CLI:-redis-cli}
	_tr_tries=0
	while [ $_tr_tries -lt 5 ]; do
		_tr_tries=$((_tr_tries + 1))
		TR_PORT=$(tr_free_port)
		"$_tr_server" --port "$TR_PORT" --bind 127.0.0.1 --save "" \
			--appendonly no --dir "$TR_DIR" --daemonize no \
			>"$TR_DIR/redis.log" 2>&1 &
		TR_PID=$!
		_tr_i=0
		while [ $_tr_i -lt 100 ]; do
			if [ "$("$_tr_cli" -h 127.0.0.1 -p "$TR_PORT" ping 2>/dev/null)" = PONG ]; then
				return 0
			fi
			kill -0 "$TR_PID" 2>/dev/null || break
			sleep 0.1
			_tr_i=$((_tr_i + 1))
		done
		kill "$TR_PID" 2>/dev/null || true
		wait "$TR_PID" 2>/dev/null || true
		TR_PID=""
	done
	echo "cannot start $_tr_server on 127.0.0.1; its log:" >&2
	cat "$TR_DIR/redis.log" >&2 2>/dev/null || true
	return 1
}

tr_stop() {
	if [ -n "$TR_PID" ]; then
		kill "$TR_PID" 2>/dev/null || true
		_tr_i=0
		while kill -0 "$TR_PID" 2>/dev/null && [ $_tr_i -lt 50 ]; do
			sleep 0.1
			_tr_i=$((_tr_i + 1))
		done
		kill -9 "$TR_PID" 2>/dev/null || true
		wait "$TR_PID" 2>/dev/null || true
		TR_PID=""
	fi
}
