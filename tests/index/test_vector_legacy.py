"""Legacy IVF_PQ index files (``create_index(..., index_file_version="Legacy")``): one
``index.idx`` of row-major codes and row ids per partition, an ``Index`` protobuf and a
``0.1 LANC`` footer. lancenb writes them (pylance then lists, describes and searches
them as lancenb does) and reads pylance's (same neighbours and distances); other index
types ignore the option, as pylance's do."""

from __future__ import annotations

import glob
import os

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import NotSupportedError
from lancenb.index.vector.ivfpb import decode_legacy_file, legacy_file_bytes
from lancenb.index.vector.reader import VectorIndexReader

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # list_indices
DIM = 32


def _table(n: int = 1000, nans: int = 24, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n + nans, DIM)).astype(np.float32)
    x[n:] = np.nan  # rows an index leaves out
    return pa.table({"id": np.arange(n + nans),
                     "vector": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), DIM)})


def _build(lib, path, metric="l2", **kw):
    ds = lib.write_dataset(_table(), path)
    return ds.create_index("vector", index_type="IVF_PQ", num_partitions=4,
                           num_sub_vectors=8, metric=metric, index_file_version="Legacy",
                           **kw)


def _files(path) -> list:
    (d,) = glob.glob(os.path.join(path, "_indices", "*"))
    return sorted(os.listdir(d))


def _search_both(path, metric, queries=12):
    ours, theirs = lancenb.dataset(path), lance.dataset(path)
    rng = np.random.default_rng(7)
    for _ in range(queries):
        q = rng.standard_normal(DIM).astype(np.float32)
        for nprobes in (1, 2, 4):
            nearest = {"column": "vector", "q": q, "k": 10, "nprobes": nprobes}
            a = ours.to_table(nearest=nearest, columns=["id"])
            b = theirs.to_table(nearest=nearest, columns=["id"])
            assert sorted(a["id"].to_pylist()) == sorted(b["id"].to_pylist())
            np.testing.assert_allclose(np.sort(a["_distance"].to_numpy()),
                                       np.sort(b["_distance"].to_numpy()), rtol=1e-5,
                                       atol=1e-5)
            assert max(a["id"].to_pylist()) < 1000  # NaN rows are not indexed


@pytest.mark.parametrize("metric", ["l2", "cosine", "dot"])
def test_lancenb_writes_legacy_pylance_reads(tmp_path, metric):
    path = str(tmp_path / "ds")
    _build(lancenb, path, metric)
    assert _files(path) == ["index.idx"]
    for lib in (lancenb, lance):
        ds = lib.dataset(path)
        assert [e["type"] for e in ds.list_indices()] == ["IVF_PQ"]
        stats = ds.stats.index_stats("vector_idx")["indices"][0]
        assert stats["index_file_version"] == "Legacy"
        assert stats["metric_type"] == metric
        assert sum(p["size"] for p in stats["partitions"]) == 1000
        assert stats["sub_index"]["metric_type"] == metric
        assert stats["sub_index"]["num_sub_vectors"] == 8
    _search_both(path, metric)


@pytest.mark.parametrize("metric", ["l2", "cosine"])
def test_pylance_legacy_read_by_lancenb(tmp_path, metric):
    path = str(tmp_path / "ds")
    _build(lance, path, metric)
    ours = lancenb.dataset(path).stats.index_stats("vector_idx")["indices"][0]
    theirs = lance.dataset(path).stats.index_stats("vector_idx")["indices"][0]
    for key in ("index_file_version", "num_partitions", "partitions", "loss", "metric_type",
                "sub_index"):
        assert ours[key] == theirs[key], key
    np.testing.assert_array_equal(ours["centroids"], theirs["centroids"])
    _search_both(path, metric)
    reader = VectorIndexReader(lancenb.dataset(path), "vector_idx")
    part = reader.read_partition(0, with_vector=True)
    assert part.num_rows == theirs["partitions"][0]["size"]
    assert part.column_names == ["_rowid", "__pq_code"]


def test_legacy_file_round_trips_byte_for_byte(tmp_path):
    """lancenb's decoder and encoder give back pylance's file unchanged."""
    path = str(tmp_path / "ds")
    _build(lance, path)
    (f,) = glob.glob(os.path.join(path, "_indices", "*", "index.idx"))
    with open(f, "rb") as fh:
        data = fh.read()
    li = decode_legacy_file(data)
    assert (li.name, li.column, li.metric, li.num_bits) == ("vector_idx", "vector", "l2", 8)
    assert li.codes.shape == (1000, 8) and len(li.row_ids) == 1000
    assert legacy_file_bytes(li) == data


@pytest.mark.parametrize("kind", ["IVF_FLAT", "IVF_SQ"])
def test_option_only_changes_ivf_pq(tmp_path, kind):
    for lib in (lancenb, lance):
        path = str(tmp_path / lib.__name__)
        lib.write_dataset(_table(), path)
        lib.dataset(path).create_index("vector", index_type=kind, num_partitions=4,
                                       index_file_version="Legacy")
        stats = lib.dataset(path).stats.index_stats("vector_idx")["indices"][0]
        assert stats["index_file_version"] == "V3"
        assert _files(path) == ["auxiliary.idx", "index.idx"]


def test_refusals(tmp_path):
    ds = lancenb.write_dataset(_table(), str(tmp_path / "ds"))
    with pytest.raises(NotSupportedError, match="8-bit"):
        ds.create_index("vector", index_type="IVF_PQ", num_partitions=4, num_sub_vectors=8,
                        num_bits=4, index_file_version="Legacy")
    with pytest.raises(ValueError, match="index_file_version"):
        ds.create_index("vector", index_type="IVF_PQ", num_partitions=4, num_sub_vectors=8,
                        index_file_version="V2")
