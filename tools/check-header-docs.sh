#!/bin/sh
# Every public function of the C API has its own comment: fails, naming
# each one, if a declaration starting with HL_EXTERN is not directly
# preceded by a line ending a comment ("*/"). A comment above a group of
# declarations documents only the first of them, so each gets its own.
# Usage: sh tools/check-header-docs.sh [header...]
# (default: core/include/hilock.h and core/include/hilock/*.h).
# Run by ctest as docs.header_comments.
if [ $# -eq 0 ]; then
	dir=$(dirname "$0")/../core/include
	set -- "$dir"/hilock.h "$dir"/hilock/*.h
fi
status=0
for h in "$@"; do
	[ -f "$h" ] || continue
	awk -v file="$h" '
	/^[ \t]*HL_EXTERN[ \t]/ && !/#[ \t]*define/ {
		n++
		if (prev !~ /\*\/[ \t]*$/) {
			name = $0
			sub(/\(.*/, "", name)
			sub(/.*[ \t*]/, "", name)
			printf "%s:%d: %s has no comment of its own\n", file, NR, name
			bad++
		}
	}
	{ prev = $0 }
	END {
		printf "%s: %d public functions, %d without a comment\n", file, n, bad
		exit bad > 0
	}' "$h" || status=1
done
exit $status
