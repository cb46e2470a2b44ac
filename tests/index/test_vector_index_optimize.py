"""optimize_indices for vector indices (``lancenb/index/vector/optimize.py``): appended
fragments merged into the index with its trained model, or added as a delta segment,
or the index retrained; pylance lists, counts and searches the result."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.index.vector.ivf import open_vector_index
from lancenb.index.vector.optimize import optimize_vector_indices

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
DIM = 16


def _rows(lo, n, seed):
    v = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return pa.table({"id": np.arange(lo, lo + n),
                     "v": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), DIM)})


def _setup(tmp_path, index_type):
    uri = str(tmp_path / "ds")
    ds = lance.write_dataset(_rows(0, 2000, 1), uri)
    kw = {"num_sub_vectors": 4} if index_type == "IVF_PQ" else {}
    ds.create_index("v", index_type, num_partitions=4, **kw)
    lance.write_dataset(_rows(2000, 500, 2), uri, mode="append")
    return uri


def _same_search(uri):
    ds, nds = lance.dataset(uri), lancenb.dataset(uri)
    for seed in range(3):
        q = np.random.default_rng(seed + 10).standard_normal(DIM).astype(np.float32)
        a = ds.to_table(nearest={"column": "v", "q": q, "k": 8, "nprobes": 4},
                        columns=["id"])["id"].to_pylist()
        b = nds.to_table(nearest={"column": "v", "q": q, "k": 8, "nprobes": 4},
                         columns=["id"])["id"].to_pylist()
        assert set(a) == set(b)


@pytest.mark.parametrize("index_type", ["IVF_PQ", "IVF_SQ", "IVF_FLAT"])
def test_merge_keeps_the_model(tmp_path, index_type):
    uri = _setup(tmp_path, index_type)
    before = lance.dataset(uri).stats.index_stats("v_idx")
    nds = lancenb.dataset(uri)
    optimize_vector_indices(nds)
    assert nds.version == 4
    stats = lance.dataset(uri).stats.index_stats("v_idx")
    assert (stats["num_indexed_rows"], stats["num_unindexed_rows"]) == (2500, 0)
    assert stats["num_indices"] == 1
    np.testing.assert_allclose(stats["indices"][0]["centroids"],
                               before["indices"][0]["centroids"])
    _same_search(uri)
    optimize_vector_indices(lancenb.dataset(uri))  # nothing left to do: no commit
    assert lancenb.dataset(uri).version == 4


def test_delta_segment(tmp_path):
    uri = _setup(tmp_path, "IVF_PQ")
    optimize_vector_indices(lancenb.dataset(uri), num_indices_to_merge=0)
    ds = lance.dataset(uri)
    segs = [e for e in ds.list_indices() if e["name"] == "v_idx"]
    assert sorted(sorted(e["fragment_ids"]) for e in segs) == [[0], [1]]
    stats = ds.stats.index_stats("v_idx")
    assert (stats["num_indices"], stats["num_unindexed_rows"]) == (2, 0)
    nds = lancenb.dataset(uri)
    delta = [e for e in nds.list_indices() if list(e["fragment_ids"]) == [1]][0]
    assert open_vector_index(nds, delta).storage.row_ids.size == 500


def test_retrain(tmp_path):
    uri = _setup(tmp_path, "IVF_SQ")
    optimize_vector_indices(lancenb.dataset(uri), retrain=True)
    stats = lance.dataset(uri).stats.index_stats("v_idx")
    assert (stats["num_indices"], stats["num_indexed_rows"]) == (1, 2500)
    _same_search(uri)


def test_through_ds_optimize(tmp_path):
    uri = _setup(tmp_path, "IVF_SQ")
    nds = lancenb.dataset(uri)
    nds.optimize.optimize_indices(num_indices_to_merge=0)
    stats = lance.dataset(uri).stats.index_stats("v_idx")
    assert (stats["num_indices"], stats["num_unindexed_rows"]) == (2, 0)
