"""Damaged inputs from both implementations: every read returns or raises a
LanceError, within a time limit, and never crashes the interpreter (the reads run
in a worker subprocess). ``scripts/fuzz_corrupt.py`` runs the same at scale."""

from __future__ import annotations

import pytest
from budget import MUTATIONS
from corrupt import make_mutants, run_batch, seed_inputs

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    return seed_inputs(str(tmp_path_factory.mktemp("seeds")))


def test_valid_seeds_read_cleanly(seeds):
    # the first reads compile the kernels when the Numba cache is fresh (as in CI):
    # no tight per-input limit here; this also warms the cache for the mutants
    res = run_batch(seeds, timeout=3600, input_seconds=900)
    assert res["problems"] == []
    assert res["counts"] == {"ok": len(seeds)}
    assert {k for k, _ in seeds} == {"file", "manifest", "deletion"}


def test_corrupted_inputs_never_crash_or_hang(seeds, tmp_path):
    items = make_mutants(seeds, str(tmp_path), MUTATIONS, seed=1)
    res = run_batch(items)
    assert res["problems"] == [], res["problems"][:5]
    assert sum(res["counts"].values()) == len(items)
    # the damage was real: most mutants are refused
    assert res["counts"].get("lance-error", 0) > len(items) // 3
