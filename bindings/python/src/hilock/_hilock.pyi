# The cffi module generated from hilock.h at build time (out-of-line API mode).
from typing import Any

ffi: Any
lib: Any
