"""Package discovery (everything else is in pyproject.toml).

Every package under ``lancenb/`` is found, so a new subpackage cannot be missing from the
wheel; the Numba kernels live in ``kernels/`` at the top of the repository and install as
``lancenb.kernels`` (the ``package-dir`` mapping in pyproject.toml).
"""

from setuptools import find_packages, setup

setup(packages=find_packages(include=["lancenb", "lancenb.*"]) + ["lancenb.kernels"])
