"""Build-time helpers for the hilock Python binding (not installed).

Two jobs:

* Generate the cffi declarations from the real public header
  (``core/include/hilock.h``) by running it through the C preprocessor, so
  the binding can never drift from the C ABI.
* Decide how the extension links libhilock:

  1. ``pkg-config hilock`` when it resolves (an installed libhilock, or a
     CMake build tree whose ``<build>/pkgconfig`` is on ``PKG_CONFIG_PATH``):
     link the shared library it names, with a RUNPATH to its directory
     (hilock.pc's rpath flag, or one added here) so ``import hilock`` needs
     no ``LD_LIBRARY_PATH``.
  2. Otherwise the checkout's sources: configure CMake, build the static
     archive ``hilock_static`` and link it into the extension, together with
     hiredis, uuid, OpenSSL and pthread.

Environment knobs:

``HILOCK_LINK``            ``auto`` (default), ``pkg-config`` or ``static``.
``HILOCK_SOURCE_DIR``      root of a hilock checkout (default: two levels up
                           from this file, which is where it is when pip
                           builds ``./bindings/python`` in place).
``HILOCK_CMAKE_BUILD_DIR`` where the static build goes (default
                           ``build/hilock-core`` next to this file).
``CC``                     the C compiler used to preprocess the header.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from typing import List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildError(RuntimeError):
    pass


def _log(msg: str) -> None:
    print("hilock-build: " + msg, file=sys.stderr, flush=True)


def _run(cmd: List[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=False, text=True, capture_output=True, **kw)


def _pkg_config(*args: str) -> Optional[str]:
    exe = os.environ.get("PKG_CONFIG", "pkg-config")
    if shutil.which(exe) is None:
        return None
    res = _run([exe, *args])
    if res.returncode != 0:
        return None
    return res.stdout.strip()


def source_dir() -> Optional[str]:
    """The hilock checkout root, or None when this is not a checkout."""
    cand = os.environ.get("HILOCK_SOURCE_DIR") or os.path.join(HERE, "..", "..")
    cand = os.path.abspath(cand)
    if os.path.isfile(os.path.join(cand, "core", "include", "hilock.h")) and os.path.isfile(
        os.path.join(cand, "CMakeLists.txt")
    ):
        return cand
    return None


@dataclass
class LinkPlan:
    """Where the header is and how to link libhilock."""

    mode: str  # "pkg-config" or "static"
    include_dirs: List[str]
    library_dirs: List[str] = field(default_factory=list)
    libraries: List[str] = field(default_factory=list)
    extra_objects: List[str] = field(default_factory=list)
    extra_compile_args: List[str] = field(default_factory=list)
    extra_link_args: List[str] = field(default_factory=list)
    cmake_source: Optional[str] = None

    @property
    def header(self) -> str:
        for d in self.include_dirs:
            p = os.path.join(d, "hilock.h")
            if os.path.isfile(p):
                return p
        raise BuildError("hilock.h not found in " + ", ".join(self.include_dirs))


def _split_flags(flags: str, plan: LinkPlan, link: bool) -> None:
    for tok in shlex.split(flags):
        if tok.startswith("-I"):
            plan.include_dirs.append(tok[2:])
        elif tok.startswith("-L"):
            plan.library_dirs.append(tok[2:])
        elif tok.startswith("-l"):
            plan.libraries.append(tok[2:])
        elif link:
            plan.extra_link_args.append(tok)
        else:
            plan.extra_compile_args.append(tok)


@functools.lru_cache(maxsize=None)
def plan() -> LinkPlan:
    """Decide (once per build process) where the header and library come from."""
    mode = os.environ.get("HILOCK_LINK", "auto").strip().lower()
    if mode not in ("auto", "pkg-config", "static"):
        raise BuildError("HILOCK_LINK must be auto, pkg-config or static, not %r" % mode)

    if mode in ("auto", "pkg-config") and _pkg_config("--exists", "hilock") is not None:
        p = LinkPlan(mode="pkg-config", include_dirs=[])
        _split_flags(_pkg_config("--cflags", "hilock") or "", p, link=False)
        _split_flags(_pkg_config("--libs", "hilock") or "", p, link=True)
        incdir = _pkg_config("--variable=includedir", "hilock")
        if incdir and incdir not in p.include_dirs:
            p.include_dirs.append(incdir)
        if not any(a.startswith(("-Wl,-rpath", "-Wl,-R")) for a in p.extra_link_args):
            # A hilock.pc without an rpath (older, or built with
            # HILOCK_PC_RPATH=OFF): pkg-config keeps only -L dirs outside
            # the system's search path, so without a RUNPATH to them the
            # extension could not load libhilock.so.0 at import.
            p.extra_link_args += ["-Wl,-rpath," + d for d in p.library_dirs]
        _log("linking the libhilock found by pkg-config (%s)" % " ".join(p.include_dirs))
        return p
    if mode == "pkg-config":
        raise BuildError("HILOCK_LINK=pkg-config but `pkg-config --exists hilock` fails; "
                         "set PKG_CONFIG_PATH to <build>/pkgconfig or install libhilock")

    src = source_dir()
    if src is None:
        raise BuildError(
            "cannot find libhilock: `pkg-config hilock` fails and no hilock checkout was "
            "found at %s. Either install libhilock (or point PKG_CONFIG_PATH at a CMake "
            "build's pkgconfig dir), or set HILOCK_SOURCE_DIR to a hilock checkout."
            % os.path.abspath(os.path.join(HERE, "..", ".."))
        )
    p = LinkPlan(mode="static", include_dirs=[os.path.join(src, "core", "include")], cmake_source=src)
    _log("no pkg-config hilock: will build the static libhilock from %s with CMake" % src)
    return p


def generate_cdef(header: str, include_dirs: List[str]) -> str:
    """Preprocess the public header into declarations cffi can parse.

    The header's attributes and system includes can be switched off by
    macros, so the preprocessed text is plain C declarations; the status
    X-macro expands into the enum. Integer macros (versions, option
    versions) vanish in preprocessing, so they are added back as
    ``#define NAME ...`` for cffi to take their values from the compiler.
    """
    cc = shlex.split(os.environ.get("CC") or "cc")
    cmd = cc + ["-E", "-P", "-DHL_NO_SYSTEM_INCLUDES", "-DHL_NO_ATTRIBUTES", "-DHL_EXTERN="]
    for d in include_dirs:
        cmd.append("-I" + d)
    cmd.append(header)
    res = _run(cmd)
    if res.returncode != 0:
        raise BuildError("preprocessing %s failed (%s):\n%s" % (header, " ".join(cmd), res.stderr))
    body = "\n".join(line for line in res.stdout.splitlines() if line.strip())

    defines = []
    seen = set()
    headers = [header]
    sub = os.path.join(os.path.dirname(header), "hilock")
    if os.path.isdir(sub):
        headers += sorted(os.path.join(sub, f) for f in os.listdir(sub) if f.endswith(".h"))
    for h in headers:
        with open(h, encoding="utf-8") as f:
            text = f.read().replace("\\\n", " ")
        for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(HL_[A-Z0-9_]+)[ \t]+([^\n]*)$", text, re.M):
            name, value = m.group(1), m.group(2).strip()
            value = re.sub(r"/\*.*?\*/", "", value).strip()
            # integer constants only: numbers, other HL_ names, arithmetic
            if name in seen or not value or not re.fullmatch(r"[0-9A-Z_()+\-*/ \t]+", value):
                continue
            if not re.search(r"[0-9]", value) and not value.startswith("HL_"):
                continue
            seen.add(name)
            defines.append("#define %s ..." % name)
    return body + "\n" + "\n".join(defines) + "\n"


def build_static(p: LinkPlan, jobs: Optional[int] = None) -> None:
    """Build hilock_static with CMake and add it (and its dependencies) to p."""
    assert p.cmake_source
    cmake = os.environ.get("CMAKE", "cmake")
    if shutil.which(cmake) is None:
        raise BuildError("cmake is needed to build libhilock from source (apt-get install cmake)")
    bdir = os.path.abspath(os.environ.get("HILOCK_CMAKE_BUILD_DIR") or os.path.join(HERE, "build", "hilock-core"))
    configure = [
        cmake, "-S", p.cmake_source, "-B", bdir,
        "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
        "-DHILOCK_BUILD_TESTS=OFF", "-DHILOCK_BUILD_EXAMPLES=OFF",
        "-DHILOCK_BUILD_BENCH=OFF", "-DHILOCK_BUILD_LUA=OFF",
    ]
    jobs = jobs or int(os.environ.get("HILOCK_BUILD_JOBS", "2"))
    build = [cmake, "--build", bdir, "--target", "hilock_static", "-j%d" % jobs]
    for cmd in (configure, build):
        _log(" ".join(cmd))
        res = subprocess.run(cmd, check=False, stdout=sys.stderr, stderr=sys.stderr)
        if res.returncode != 0:
            raise BuildError("command failed (%d): %s" % (res.returncode, " ".join(cmd)))
    archive = os.path.join(bdir, "core", "libhilock.a")
    if not os.path.isfile(archive):
        raise BuildError("CMake did not produce " + archive)
    p.extra_objects.append(archive)
    deps = _pkg_config("--libs", "hiredis", "uuid", "libssl", "libcrypto")
    if deps is None:
        raise BuildError("pkg-config cannot find hiredis, uuid and OpenSSL "
                         "(apt-get install libhiredis-dev uuid-dev libssl-dev)")
    _split_flags(deps, p, link=True)
    p.extra_link_args.append("-pthread")
    p.libraries.append("m")


def apply_link_plan(ext, p: LinkPlan) -> None:
    """Give the setuptools Extension what p says; builds the archive if needed."""
    if p.mode == "static" and not p.extra_objects:
        build_static(p)
    for attr in ("include_dirs", "library_dirs", "libraries", "extra_objects",
                 "extra_compile_args", "extra_link_args"):
        cur = list(getattr(ext, attr) or [])
        for v in getattr(p, attr):
            if v not in cur:
                cur.append(v)
        setattr(ext, attr, cur)
