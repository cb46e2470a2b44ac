"""lancenb's build backend: setuptools', plus what the wheel build needs to compile kernels.

Building a wheel compiles every Numba kernel for a portable CPU target and ships the
machine code (setup.py), which runs lancenb, so the wheel build needs lancenb's runtime
dependencies, at the numba version the compiled kernels are meant for. Only the wheel
build: an editable install (``pip install -e``, ``make test``) or an sdist needs none of
them, and neither does a wheel built with ``LANCENB_BUILD_KERNELS=0``.

The compiled kernels are used only under the numba version they were compiled with (and
the same Python and numpy major version); under any other they compile on first use, as
they would without them. numba is pinned here to the version the project is tested with,
which is also the one a fresh install resolves to when this was written.
"""

import os

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F401,F403  (the other PEP 517 hooks)

KERNEL_BUILD_REQUIRES = [
    "numba==0.68.1",
    "numpy>=2",
    "pyarrow>=16",
    "protobuf>=7.35.1",
    "zstandard>=0.22",
    "lz4>=4.3",
    "pyroaring>=1.0",
    "fsspec>=2024.2",
    "sqlglot>=25",
    "datafusion>=55",
]


def get_requires_for_build_wheel(config_settings=None):
    """setuptools' requirements, plus lancenb's own when the kernels are compiled."""
    reqs = list(_setuptools.get_requires_for_build_wheel(config_settings))
    if os.environ.get("LANCENB_BUILD_KERNELS", "1").strip().lower() not in ("0", "no",
                                                                             "false"):
        reqs += KERNEL_BUILD_REQUIRES
    return reqs
