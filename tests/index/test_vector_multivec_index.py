"""Vector indices over multivector columns (a list of fixed-size float lists per row):
lancenb builds them as pylance does, every vector of every row under its row's id (null
rows and empty lists contribute none), in pylance's format, so pylance searches
lancenb's index; lancenb's nearest queries on such a column (one query vector or
several) answer exactly (flat), with pylance's result shape, also on ``memory://``
(whose index files stay in memory: they went to a local ``memory:`` folder before)."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # list_indices
DIM = 32


def _table(n: int = 400, seed: int = 0) -> tuple[pa.Table, int]:
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, 5, n)
    vals = rng.standard_normal((int(lens.sum()), DIM)).astype(np.float32)
    inner = pa.FixedSizeListArray.from_arrays(pa.array(vals.ravel()), DIM)
    offsets = pa.array(np.concatenate([[0], np.cumsum(lens)]).astype(np.int32))
    mask = np.zeros(n, bool)
    mask[5] = True
    col = pa.ListArray.from_arrays(offsets, inner, mask=pa.array(mask))
    vectors = int(lens.sum() - lens[5])
    return pa.table({"id": np.arange(n), "vector": col}), vectors


@pytest.mark.parametrize("uri", ["dir", "memory://"])
def test_lancenb_builds_multivector_index(tmp_path, uri):
    table, vectors = _table()
    path = str(tmp_path / "ds") if uri == "dir" else uri
    ds = lancenb.write_dataset(table, path)
    ds = ds.create_index("vector", index_type="IVF_PQ", num_partitions=4, num_sub_vectors=8,
                         metric="cosine")
    assert [e["type"] for e in ds.list_indices()] == ["IVF_PQ"]
    stats = ds.stats.index_stats("vector_idx")["indices"][0]
    assert sum(p["size"] for p in stats["partitions"]) == vectors
    q = np.random.default_rng(1).standard_normal((3, DIM))
    res = ds.to_table(nearest={"column": "vector", "q": q, "k": 20})
    assert res.num_rows == 20
    assert res["vector"].type == table["vector"].type
    one = ds.to_table(nearest={"column": "vector", "q": q[0], "k": 20})
    two = ds.to_table(nearest={"column": "vector", "q": [q[0], q[0]], "k": 20})
    assert one["id"].to_pylist() == two["id"].to_pylist()
    assert [2 * d for d in one["_distance"].to_pylist()] == two["_distance"].to_pylist()


def test_pylance_searches_lancenb_multivector_index(tmp_path):
    table, vectors = _table()
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    lancenb.write_dataset(table, ours).create_index(
        "vector", index_type="IVF_PQ", num_partitions=4, num_sub_vectors=8, metric="cosine")
    lance.write_dataset(table, theirs).create_index(
        "vector", index_type="IVF_PQ", num_partitions=4, num_sub_vectors=8, metric="cosine")
    for path in (ours, theirs):
        stats = lance.dataset(path).stats.index_stats("vector_idx")["indices"][0]
        assert sum(p["size"] for p in stats["partitions"]) == vectors
        assert stats["metric_type"] == "cosine"
    q = np.random.default_rng(2).standard_normal((3, DIM))
    nearest = {"column": "vector", "q": q, "k": 10, "nprobes": 4}
    got = lance.dataset(ours).to_table(nearest=nearest, columns=["id"])
    assert 0 < got.num_rows <= 10
    assert got.schema.names == lance.dataset(theirs).to_table(
        nearest=nearest, columns=["id"]).schema.names
