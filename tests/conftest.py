"""Shared test set-up: makes ``tests/_tables.py`` importable and registers the
hypothesis profiles (``ci`` by default, ``nightly`` with HYPOTHESIS_PROFILE=nightly)."""

import os
import sys

from hypothesis import settings

sys.path.insert(0, os.path.dirname(__file__))

settings.register_profile("ci", derandomize=True, max_examples=100, deadline=None,
                          print_blob=True, database=None)
settings.register_profile("nightly", max_examples=5000, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
