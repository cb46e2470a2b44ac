"""Package discovery and the wheel's compiled kernels (everything else is in pyproject.toml).

Every package under ``lancenb/`` is found, so a new subpackage cannot be missing from the
wheel; the Numba kernels live in ``kernels/`` at the top of the repository and install as
``lancenb.kernels`` (the ``package-dir`` mapping in pyproject.toml).

Building a wheel also compiles every kernel specialisation ``lancenb warmup`` knows for a
portable CPU target (x86-64-v3 on x86-64, LLVM's generic CPU elsewhere) into
``lancenb/kernels/_jitcache`` (``lancenb.tools.warmup.build_shipped``, run on the copied sources
in the build directory), so that first use on a machine with that CPU level loads machine
code instead of compiling it (see ``kernels/_jit.py``). That makes the wheel specific to
the Python version and platform, and it is tagged so (``cp311-cp311-linux_x86_64``).
Environment variables:

- ``LANCENB_BUILD_KERNELS=0``: build a pure-Python wheel without compiled kernels (they
  then compile on first use, as in an editable install, which never carries them);
- ``LANCENB_BUILD_KERNEL_TARGETS=x86-64-v3,x86-64-v2``: the portable targets to compile
  for, best first (each one adds the whole compile time and about as much wheel size);
- ``LANCENB_BUILD_KERNEL_PROCESSES=N``: worker processes (default: the number of CPUs).
"""

import json
import os
import subprocess
import sys
import time

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

_SHIP = os.environ.get("LANCENB_BUILD_KERNELS", "1").strip().lower() not in ("0", "no", "false")


class _BinaryDistribution(Distribution):
    """A distribution whose wheel is tagged for one Python version and platform, because
    it carries machine code compiled for them."""

    def has_ext_modules(self):
        return _SHIP


class _BuildPyWithKernels(build_py):
    """build_py, then compile the kernels of the copied sources into the build tree."""

    def run(self):
        super().run()
        if not _SHIP or self.editable_mode:
            return
        build_lib = os.path.abspath(self.build_lib)
        dest = os.path.join(build_lib, "lancenb", "kernels", "_jitcache")
        targets = [t.strip() for t in
                   os.environ.get("LANCENB_BUILD_KERNEL_TARGETS", "").split(",") if t.strip()]
        procs = os.environ.get("LANCENB_BUILD_KERNEL_PROCESSES")
        code = ("import json, sys\n"
                "from lancenb.tools.warmup import build_shipped\n"
                "m = build_shipped(sys.argv[1], targets=json.loads(sys.argv[2]) or None,\n"
                "                  processes=json.loads(sys.argv[3]))\n"
                "print(m['files'], 'files for', [t['name'] for t in m['targets']])\n")
        # build_lib goes first; the rest of PYTHONPATH stays: pip's isolated build
        # environment is put on the path through it (its numba, pyarrow, ...)
        path = [build_lib] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                              if p]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(path),
                   PYTHONDONTWRITEBYTECODE="1")
        t0 = time.perf_counter()
        self.announce("compiling lancenb's kernels for the wheel (LANCENB_BUILD_KERNELS=0 "
                      "skips this)", level=2)
        out = subprocess.run([sys.executable, "-c", code, dest, json.dumps(targets),
                              json.dumps(int(procs) if procs else None)],
                             # cwd: the build tree's lancenb, not the source tree's
                             env=env, cwd=build_lib, capture_output=True, text=True)
        if out.returncode != 0:
            sys.stderr.write(out.stdout + out.stderr)
            raise RuntimeError("compiling lancenb's kernels for the wheel failed (set "
                               "LANCENB_BUILD_KERNELS=0 to build without them)")
        self.announce(f"compiled kernels: {out.stdout.strip()} in "
                      f"{time.perf_counter() - t0:.0f} s", level=2)


# lancenb.kernels and its subpackages (kernels/vector, kernels/json, ...) live in kernels/
_KERNEL_PACKAGES = ["lancenb.kernels"] + [f"lancenb.kernels.{p}" for p in find_packages("kernels")]

setup(packages=find_packages(include=["lancenb", "lancenb.*"]) + _KERNEL_PACKAGES,
      distclass=_BinaryDistribution, cmdclass={"build_py": _BuildPyWithKernels})
