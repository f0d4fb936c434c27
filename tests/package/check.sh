#!/bin/sh
# The installed package. Usage: check.sh BUILD_DIR [PYTHON]
#
# Installs the build with `cmake --install --prefix P` into a temporary P
# (not the configure-time CMAKE_INSTALL_PREFIX), then builds and runs a
# consumer with plain pkg-config (no --define-variable) and with
# find_package(hilock): both must work for a prefix chosen at install time.
# Then moves the whole tree elsewhere and builds both again: the .pc file
# and the CMake package find their prefix from their own location. Checks
# that no installed text file names the build tree, the temporary prefix or
# the configure-time prefix, that the Lua module (when built) has a RUNPATH
# relative to $ORIGIN and loads the installed libhilock, and the licence.
# A program linked with `pkg-config --libs hilock` runs without
# LD_LIBRARY_PATH (hilock.pc carries an rpath to its libdir); with PYTHON
# (a python with pip, setuptools and cffi), so does `import hilock` after
# `pip install ./bindings/python` built through that .pc from the moved
# tree.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$(cd "$1" && pwd)
python=${2:-}
case $python in /* | '') ;; */*) python=$(pwd)/$python ;; esac

fail() { echo "package: $*" >&2; exit 1; }
cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }

conf_prefix=$(cache CMAKE_INSTALL_PREFIX)
libdir_rel=$(cache CMAKE_INSTALL_LIBDIR)
[ -n "$conf_prefix" ] && [ -n "$libdir_rel" ] || fail "cannot read $build/CMakeCache.txt"
case $libdir_rel in /*) fail "CMAKE_INSTALL_LIBDIR is absolute ($libdir_rel): not relocatable" ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hilock-package.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
stage="$tmp/prefix-one"
moved="$tmp/elsewhere/prefix-two"
case $stage in "$conf_prefix"|"$conf_prefix"/*) fail "the temporary prefix is the configured one" ;; esac

cmake --install "$build" --prefix "$stage" >/dev/null
libdir="$stage/$libdir_rel"
pc="$libdir/pkgconfig/hilock.pc"
for f in "$stage/include/hilock.h" "$stage/include/hilock/version.h" \
	"$libdir/libhilock.a" "$libdir/libhilock.so" "$pc" \
	"$libdir/cmake/hilock/hilockConfig.cmake" "$libdir/cmake/hilock/hilockTargets.cmake"; do
	[ -e "$f" ] || fail "missing $f"
done
soname=$(objdump -p "$libdir/libhilock.so" | awk '/SONAME/ {print $2}')
[ "$soname" = "libhilock.so.0" ] || fail "soname is '$soname'"

# The licence: installed, and the same text in every package of the tree.
cmp -s "$repo/LICENSE" "$stage/share/doc/hilock/LICENSE" || fail "LICENSE not installed"
grep -q "Apache License" "$repo/LICENSE" && grep -q "Version 2.0, January 2004" "$repo/LICENSE" ||
	fail "LICENSE is not the Apache License 2.0"
for f in bindings/python/LICENSE bindings/go/LICENSE; do
	cmp -s "$repo/LICENSE" "$repo/$f" || fail "$f differs from LICENSE"
done
grep -q '^license = "Apache-2.0"$' "$repo/bindings/python/pyproject.toml" ||
	fail 'pyproject.toml has no license = "Apache-2.0"'
grep -q '^   license = "Apache-2.0",$' "$repo/bindings/lua/hilock-scm-1.rockspec" ||
	fail 'the rockspec has no license = "Apache-2.0"'

# No installed text file may name a place that is only right for one
# prefix: the build tree, the source tree, the install prefix of this run,
# the configure-time prefix.
for f in "$pc" "$libdir"/cmake/hilock/*.cmake; do
	for p in "$build" "$repo" "$stage" "$conf_prefix"; do
		if grep -n -F "$p" "$f" >/dev/null; then
			grep -n -F "$p" "$f" >&2
			fail "$f names $p: not relocatable"
		fi
	done
done
grep -q '^prefix=${pcfiledir}/' "$pc" || fail "hilock.pc's prefix is not relative to \${pcfiledir}: $(grep '^prefix=' "$pc")"
grep -q 'PACKAGE_PREFIX_DIR' "$libdir/cmake/hilock/hilockConfig.cmake" ||
	fail "hilockConfig.cmake does not use PACKAGE_PREFIX_DIR"

# ELF files: no RUNPATH/RPATH into the build tree or an absolute prefix.
runpath() { readelf -d "$1" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p'; }
rp=$(runpath "$libdir/libhilock.so")
[ -z "$rp" ] || fail "libhilock.so has a RUNPATH ($rp)"

# The libhilock.so.0 the dynamic loader picks for a module (resolved path).
lua_finds() {
	f=$(env -u LD_LIBRARY_PATH ldd "$1" | awk '$1 == "libhilock.so.0" {print $3}')
	[ -n "$f" ] && readlink -f "$f"
}
lib_of() {
	f=$(env -u LD_LIBRARY_PATH ldd "$1" | awk '$1 == "libhilock.so.0" {print $3}')
	case $f in /*) readlink -f "$f" ;; *) echo "(not found)" ;; esac
}
if [ "$(cache HILOCK_BUILD_LUA)" = ON ]; then
	lua_v=$(cache HILOCK_LUA_VERSION)
	cmod=$(cache HILOCK_LUA_CMOD)
	lmod=$(cache HILOCK_LUA_LMOD)
	case $cmod$lmod in /*) fail "HILOCK_LUA_CMOD/LMOD are absolute: the Lua module is installed outside the prefix" ;; esac
	lua_mod="$stage/$cmod/hilock_core.so"
	[ -e "$lua_mod" ] || fail "missing $lua_mod"
	rp=$(runpath "$lua_mod")
	if [ "$(cache HILOCK_LUA_STATIC)" != ON ]; then
		[ -n "$rp" ] || fail "the Lua module has no RUNPATH"
	fi
	old_ifs=$IFS; IFS=:
	for e in $rp; do
		case $e in
		'$ORIGIN' | '$ORIGIN/'*) ;;
		*) fail "the Lua module's RUNPATH has '$e' (want only \$ORIGIN-relative entries)" ;;
		esac
	done
	IFS=$old_ifs
	readelf -d "$lua_mod" | grep -q 'FLAGS_1.*NODELETE' ||
		fail "the Lua module is not linked with -z nodelete"
	# Loaded from the installed tree alone, it finds the installed libhilock.
	if [ "$(cache HILOCK_LUA_STATIC)" != ON ]; then
		got=$(lua_finds "$lua_mod")
		[ "$got" = "$(readlink -f "$libdir/libhilock.so.0")" ] ||
			fail "the installed Lua module resolves libhilock.so.0 to '$got', not $libdir"
	fi
	if command -v "lua$lua_v" >/dev/null 2>&1; then
		v=$(env -u LD_LIBRARY_PATH -u "LUA_PATH_${lua_v%.*}_${lua_v#*.}" -u "LUA_CPATH_${lua_v%.*}_${lua_v#*.}" \
			LUA_PATH="$stage/$lmod/?.lua" LUA_CPATH="$stage/$cmod/?.so" \
			"lua$lua_v" -e 'io.write(require("hilock").version)')
		[ -n "$v" ] || fail "lua$lua_v could not load the installed module"
	fi
	lua_checked=" and the Lua module"
else
	lua_checked=""
fi

# The hilock command links the installed libhilock through an
# $ORIGIN-relative RUNPATH, and runs from the installed tree alone.
cli="$stage/bin/hilock"
[ -x "$cli" ] || fail "missing $cli"
rp=$(runpath "$cli")
case $rp in
'$ORIGIN/../'*) ;;
*) fail "bin/hilock's RUNPATH is '$rp' (want \$ORIGIN/../$libdir_rel)" ;;
esac
cli_runs() { # cli_runs PREFIX
	f=$(env -u LD_LIBRARY_PATH ldd "$1/bin/hilock" | awk '$1 == "libhilock.so.0" {print $3}')
	[ -n "$f" ] && [ "$(readlink -f "$f")" = "$(readlink -f "$1/$libdir_rel/libhilock.so.0")" ] &&
		env -u LD_LIBRARY_PATH "$1/bin/hilock" --version >/dev/null
}
cli_runs "$stage" || fail "the installed hilock does not run on the installed libhilock"

# Consumers of one installed tree, shared and static. Plain pkg-config: no
# --define-variable, only PKG_CONFIG_PATH (the Makefile's build-tree path
# is dropped).
consume() { # consume PREFIX TAG
	cdir="$tmp/consumer-$2"
	ldir="$1/$libdir_rel"
	cmake -S "$here" -B "$cdir" -DCMAKE_PREFIX_PATH="$1" >/dev/null
	cmake --build "$cdir" >/dev/null
	LD_LIBRARY_PATH="$ldir" "$cdir/consumer" >/dev/null || fail "find_package consumer ($2) failed"
	flags=$(PKG_CONFIG_PATH="$ldir/pkgconfig" pkg-config --cflags --libs hilock)
	inc=$(PKG_CONFIG_PATH="$ldir/pkgconfig" pkg-config --variable=includedir hilock)
	[ -f "$inc/hilock.h" ] || fail "pkg-config's includedir '$inc' has no hilock.h ($2)"
	# shellcheck disable=SC2086
	cc -o "$cdir/consumer-pc" "$here/consumer.c" $flags || fail "pkg-config consumer ($2) does not build: $flags"
	# No LD_LIBRARY_PATH: what pkg-config gave must be enough to run.
	env -u LD_LIBRARY_PATH "$cdir/consumer-pc" >/dev/null ||
		fail "pkg-config consumer ($2) does not run without LD_LIBRARY_PATH (linked with: $flags)"
	[ "$(lib_of "$cdir/consumer-pc")" = "$(readlink -f "$ldir/libhilock.so.0")" ] ||
		fail "pkg-config consumer ($2) loads libhilock from '$(lib_of "$cdir/consumer-pc")', not $ldir"
	# Static: the archive and what pkg-config --static adds (its
	# Requires.private: hiredis, uuid, libssl, libcrypto).
	"$cdir/consumer_static" >/dev/null || fail "find_package static consumer ($2) failed"
	sflags=$(PKG_CONFIG_PATH="$ldir/pkgconfig" pkg-config --static --libs hilock | sed 's/-lhilock\b//')
	# shellcheck disable=SC2086
	cc -o "$cdir/consumer-pc-static" "$here/consumer.c" -I"$inc" "$ldir/libhilock.a" $sflags ||
		fail "pkg-config static consumer ($2) does not build: libhilock.a $sflags"
	env -u LD_LIBRARY_PATH "$cdir/consumer-pc-static" >/dev/null || fail "pkg-config static consumer ($2) failed"
}
consume "$stage" installed

# The same tree moved: nothing in it may remember where it was installed.
mkdir -p "$(dirname "$moved")"
mv "$stage" "$moved"
consume "$moved" moved
[ -z "$lua_checked" ] || [ "$(cache HILOCK_LUA_STATIC)" = ON ] ||
	[ "$(lua_finds "$moved/$cmod/hilock_core.so")" = \
		"$(readlink -f "$moved/$libdir_rel/libhilock.so.0")" ] ||
	fail "the moved Lua module does not find the moved libhilock"
cli_runs "$moved" || fail "the moved hilock does not run on the moved libhilock"

# The Python binding built through the moved tree's hilock.pc (as a user
# with PKG_CONFIG_PATH set does), into a directory of its own, imports and
# runs with no LD_LIBRARY_PATH.
py_checked=""
if [ -n "$python" ]; then
	pydir="$tmp/python-target"
	mlib="$moved/$libdir_rel"
	(cd "$repo" && env -u LD_LIBRARY_PATH PKG_CONFIG_PATH="$mlib/pkgconfig" HILOCK_LINK=pkg-config \
		"$python" -m pip install -q --no-build-isolation --no-deps --no-cache-dir \
		--target "$pydir" ./bindings/python) >"$tmp/pip.log" 2>&1 || {
		cat "$tmp/pip.log" >&2
		fail "pip install ./bindings/python through the moved tree's hilock.pc failed"
	}
	ext=$(ls "$pydir"/hilock/_hilock*.so)
	v=$(cd "$tmp" && env -u LD_LIBRARY_PATH -u PYTHONHOME PYTHONPATH="$pydir" "$python" -c '
import sys, hilock
assert hilock.__file__.startswith(sys.argv[1]), hilock.__file__
print(hilock.library_version())' "$pydir") ||
		fail "import hilock (pip-installed through the moved tree's hilock.pc) failed"
	want=$(PKG_CONFIG_PATH="$mlib/pkgconfig" pkg-config --modversion hilock)
	[ "$v" = "$want" ] || fail "import hilock: library_version() is '$v', want $want"
	[ "$(lib_of "$ext")" = "$(readlink -f "$mlib/libhilock.so.0")" ] ||
		fail "the Python extension loads libhilock from '$(lib_of "$ext")', not $mlib"
	py_checked=", the Python binding"
fi

echo "package: install --prefix (temporary, then moved), find_package and pkg-config (shared and static, run without LD_LIBRARY_PATH), the hilock command$lua_checked$py_checked OK"
