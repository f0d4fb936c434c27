"""setuptools glue: metadata lives in pyproject.toml.

cffi_modules builds hilock._hilock from hilock_build.py; the build_ext below
first decides how libhilock is linked (pkg-config, or a static build of the
checkout with CMake: see build_support.py) so that nothing is compiled when
pip only asks for metadata.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from setuptools import setup  # noqa: E402
from setuptools.command.build_ext import build_ext  # noqa: E402

import build_support  # noqa: E402


class BuildExt(build_ext):
    def run(self):
        # The link plan may change between builds of one tree (pkg-config
        # path, static archive): never reuse a stale extension.
        self.force = True
        plan = build_support.plan()
        for ext in self.extensions:
            if ext.name == "hilock._hilock":
                build_support.apply_link_plan(ext, plan)
        super().run()


setup(
    cffi_modules=["hilock_build.py:ffibuilder"],
    cmdclass={"build_ext": BuildExt},
    zip_safe=False,
)
