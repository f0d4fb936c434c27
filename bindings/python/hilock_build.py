"""cffi build script: the out-of-line API-mode module ``hilock._hilock``.

The declarations are generated from the public header at build time
(build_support.generate_cdef); there is no hand-kept copy. Linking is
decided in setup.py's build_ext (build_support.plan).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cffi import FFI  # noqa: E402

import build_support  # noqa: E402

_plan = build_support.plan()

ffibuilder = FFI()
ffibuilder.cdef(build_support.generate_cdef(_plan.header, _plan.include_dirs))
ffibuilder.set_source(
    "hilock._hilock",
    '#include "hilock.h"\n',
    include_dirs=list(_plan.include_dirs),
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
