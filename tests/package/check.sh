#!/bin/sh
# Install the build into a staging prefix, then build and run a consumer
# with find_package(hilock) and with pkg-config. Usage: check.sh BUILD_DIR
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
stage="$build/package-stage"
rm -rf "$stage" "$build/package-consumer"
cmake --install "$build" --prefix "$stage" >/dev/null
libdir=$(ls -d "$stage"/lib*/ | head -n 1)
libdir=${libdir%/}
for f in "$stage/include/hilock.h" "$stage/include/hilock/version.h" \
	"$libdir/libhilock.a" "$libdir/pkgconfig/hilock.pc" \
	"$libdir/cmake/hilock/hilockConfig.cmake"; do
	[ -e "$f" ] || { echo "package: missing $f"; exit 1; }
done
# The licence: installed, and the same text in every package of the tree.
repo=$(cd "$here/../.." && pwd)
cmp -s "$repo/LICENSE" "$stage/share/doc/hilock/LICENSE" || { echo "package: LICENSE not installed"; exit 1; }
grep -q "Apache License" "$repo/LICENSE" && grep -q "Version 2.0, January 2004" "$repo/LICENSE" ||
	{ echo "package: LICENSE is not the Apache License 2.0"; exit 1; }
for f in bindings/python/LICENSE bindings/go/LICENSE; do
	cmp -s "$repo/LICENSE" "$repo/$f" || { echo "package: $f differs from LICENSE"; exit 1; }
done
grep -q '^license = "Apache-2.0"$' "$repo/bindings/python/pyproject.toml" ||
	{ echo "package: pyproject.toml has no license = \"Apache-2.0\""; exit 1; }
grep -q '^   license = "Apache-2.0",$' "$repo/bindings/lua/hilock-scm-1.rockspec" ||
	{ echo "package: the rockspec has no license = \"Apache-2.0\""; exit 1; }

soname=$(objdump -p "$libdir/libhilock.so" | awk '/SONAME/ {print $2}')
[ "$soname" = "libhilock.so.0" ] || { echo "package: soname is '$soname'"; exit 1; }

cmake -S "$here" -B "$build/package-consumer" -DCMAKE_PREFIX_PATH="$stage" >/dev/null
cmake --build "$build/package-consumer" >/dev/null
LD_LIBRARY_PATH="$libdir" "$build/package-consumer/consumer"

# pkg-config: the .pc's prefix is the install prefix; point it at the stage.
cc -o "$build/package-consumer/consumer-pc" "$here/consumer.c" \
	$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --define-variable=prefix="$stage" --cflags --libs hilock)
LD_LIBRARY_PATH="$libdir" "$build/package-consumer/consumer-pc"
echo "package: install, find_package and pkg-config OK"
