# Sourced (not run) by run.sh, blocking.sh and sorted_set.sh (this
# folder): what they share. Set before sourcing it:
#
#   here     this folder          build  the build directory (absolute)
#   out      where peers, classpaths and classes go
#   who      the name in messages (interop-grid, interop-blocking...)
#
#   grid_tools                  every tool needed there, or exit 1
#   grid_peers NAME...          cc $here/NAME.c into $out/NAME against the
#                               build's hilock (its pkgconfig)
#   grid_classpath VERSION      $out/cp-VERSION.txt: Redisson VERSION's
#                               classpath (Maven, offline first; again only
#                               when pom.xml is newer; cp is set to it)
#   grid_single CLASS PEER      blocking.sh, sorted_set.sh: for each of
#                               $versions a throwaway redis-server of its
#                               own, java CLASS VERSION $out/PEER URL (300 s
#                               at most); exits 0 if all passed, else 1
versions=${GRID_REDISSON_VERSIONS:-4.3.1 4.7.0}
mkdir -p "$out"

grid_tools() {
	for tool in java javac mvn cc pkg-config redis-server redis-cli; do
		command -v "$tool" >/dev/null 2>&1 || { echo "$who: $tool not found" >&2; exit 1; }
	done
}

grid_peers() {
	PKG_CONFIG_PATH="$build/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
	export PKG_CONFIG_PATH
	for peer in "$@"; do
		# shellcheck disable=SC2046
		cc -std=c11 -O2 -Wall -Wextra -o "$out/$peer" "$here/$peer.c" \
			$(pkg-config --cflags --libs hilock) -lpthread
	done
}

grid_classpath() {
	cp="$out/cp-$1.txt"
	if [ ! -s "$cp" ] || [ "$here/pom.xml" -nt "$cp" ]; then
		mvn -q -B -o -f "$here/pom.xml" -Dredisson.version="$1" -DbuildDir="$out/mvn" \
			-Dmdep.outputFile="$cp" dependency:build-classpath >/dev/null 2>&1 ||
			mvn -q -B -f "$here/pom.xml" -Dredisson.version="$1" -DbuildDir="$out/mvn" \
				-Dmdep.outputFile="$cp" dependency:build-classpath
	fi
	mkdir -p "$out/classes-$1"
}

grid_single() {
	grid_tools
	grid_peers "$2"
	for v in $versions; do
		grid_classpath "$v"
		javac -d "$out/classes-$v" -cp "$(cat "$out/cp-$v.txt")" "$here/$1.java"
	done
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/hilock-$who.XXXXXX")
	TR_DIR=$tmp
	. "$here/../../../tools/throwaway-redis.sh"
	trap 'tr_stop; rm -rf "$tmp"' EXIT
	trap 'exit 130' INT TERM
	status=0
	for v in $versions; do
		tr_start || exit 1
		timeout 300 java -cp "$out/classes-$v:$(cat "$out/cp-$v.txt")" "$1" \
			"$v" "$out/$2" "redis://127.0.0.1:$TR_PORT" || status=1
		tr_stop
	done
	exit $status
}
