#!/bin/sh
# Writes one core_<dir>_<name>.c in bindings/go for every .c file under
# core/src, and removes those whose source is gone. Each only includes its
# core file (one translation unit per core file, as CMake builds them, so
# static names never clash), so cgo compiles the whole core into the Go
# package. Run it after adding or removing a core .c file and commit the
# result; the Go test TestCoreSourcesCompiled fails until then.
#
#   sh bindings/go/core-sources.sh
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root/core/src"
want=$(find . -name '*.c' | sed 's|^\./||' | LC_ALL=C sort)
for src in $want; do
	f="$here/core_$(printf '%s' "${src%.c}" | tr '/' '_').c"
	body=$(printf '%s\n%s\n%s\n' \
		'//go:build cgo && !hilock_system' \
		'' \
		"#include \"../../core/src/$src\"")
	if [ ! -f "$f" ] || [ "$(cat "$f")" != "$body" ]; then
		printf '%s\n' "$body" >"$f"
		echo "wrote ${f#"$root"/}"
	fi
done
for f in "$here"/core_*.c; do
	[ -e "$f" ] || continue
	src=$(sed -n 's|^#include "\.\./\.\./core/src/\(.*\)"$|\1|p' "$f")
	if [ -z "$src" ] || [ ! -f "$root/core/src/$src" ]; then
		rm -f "$f"
		echo "removed ${f#"$root"/}"
	fi
done
