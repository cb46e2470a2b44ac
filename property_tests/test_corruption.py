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
    assert {k for k, _ in seeds} == {"file", "manifest", "deletion", "dsfile"}


def test_corrupted_inputs_never_crash_or_hang(seeds, tmp_path):
    items = make_mutants(seeds, str(tmp_path), MUTATIONS, seed=1)
    res = run_batch(items)
    assert res["problems"] == [], res["problems"][:5]
    assert sum(res["counts"].values()) == len(items)
    # the damage was real: most mutants are refused
    assert res["counts"].get("lance-error", 0) > len(items) // 3


@pytest.fixture(scope="module")
def dataset_seeds(tmp_path_factory):
    from corrupt_dataset import seed_datasets

    return seed_datasets(str(tmp_path_factory.mktemp("dataset-seeds")))


def test_valid_seed_datasets_read_cleanly(dataset_seeds):
    from corrupt_dataset import run_datasets

    res = run_datasets([("dataset", s) for s in dataset_seeds], timeout=3600,
                       input_seconds=900)
    assert res == {"counts": {"ok": len(dataset_seeds)}, "problems": []}


def test_damaged_datasets_never_crash_hang_or_blow_memory(dataset_seeds, tmp_path):
    from budget import DATASET_MUTATIONS
    from corrupt_dataset import make_dataset_mutants, run_datasets

    items = make_dataset_mutants(dataset_seeds, str(tmp_path), DATASET_MUTATIONS, seed=1)
    res = run_datasets(items)
    assert res["problems"] == [], res["problems"][:5]
    assert sum(res["counts"].values()) == len(items)
    assert res["counts"].get("lance-error", 0) > len(items) // 10  # the damage was real
