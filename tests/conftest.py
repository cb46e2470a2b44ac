"""Shared test set-up: makes ``tests/_tables.py`` importable, registers the
hypothesis profiles (``ci`` by default, ``nightly`` with HYPOTHESIS_PROFILE=nightly)
and the ``listed_dirs`` fixture."""

import os
import sys

import pytest
from hypothesis import settings

sys.path.insert(0, os.path.dirname(__file__))

settings.register_profile("ci", derandomize=True, max_examples=100, deadline=None,
                          print_blob=True, database=None)
settings.register_profile("nightly", max_examples=5000, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def listed_dirs(monkeypatch):
    """The directories ``ObjectStore.list`` is asked for during the test, in order (the
    real listing still answers)."""
    from lancenb.io.store import ObjectStore

    seen: list[str] = []
    real = ObjectStore.list

    def spy(self, rel_dir):
        seen.append(rel_dir)
        return real(self, rel_dir)

    monkeypatch.setattr(ObjectStore, "list", spy)
    return seen
