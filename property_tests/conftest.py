"""Set-up for the property tests.

Hypothesis profiles are the project's (``tests/conftest.py``): ``ci`` by default
(derandomised), ``nightly`` with ``HYPOTHESIS_PROFILE=nightly``. The example count of
each property here comes from :mod:`budget` (small under ``ci``, large under
``nightly``, or ``LANCENB_FUZZ_EXAMPLES``), so ``make test`` stays fast.
"""

import os
import sys

from hypothesis import settings
from hypothesis.errors import InvalidArgument

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

try:  # registered already when tests/ is collected in the same run
    settings.get_profile("ci")
except InvalidArgument:
    settings.register_profile("ci", derandomize=True, max_examples=100, deadline=None,
                              print_blob=True, database=None)
    settings.register_profile("nightly", max_examples=5000, deadline=None, print_blob=True)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
