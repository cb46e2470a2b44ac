"""The vector-index dataset methods (``lancenb/index/vector/api.py``): pylance's checks
and messages in ``create_index``, ``describe_indices`` and index statistics equal to
pylance's for the same index, ``drop_index``/``create_index`` commits."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import NotSupportedError
from lancenb.index.vector.api import (
    IndexNotFoundError,
    VectorIndexMethods,
    vector_index_stats,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _table(n=1200, dim=16, seed=0):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return pa.table({"id": np.arange(n),
                     "v": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), dim)})


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("api") / "ds")
    ds = lance.write_dataset(_table(), uri, max_rows_per_file=500)
    ds.create_index("v", "IVF_PQ", num_partitions=4, num_sub_vectors=4)
    lance.write_dataset(_table(300, seed=1), uri, mode="append")  # an unindexed fragment
    return uri


def _drop_centroids(stats):
    for seg in stats["indices"] + stats["segments"]:
        seg.pop("centroids", None)
    stats.pop("updated_at_timestamp_ms", None)
    return stats


def test_stats_as_pylance(indexed):
    ours = vector_index_stats(lancenb.dataset(indexed), "v_idx")
    theirs = lance.dataset(indexed).stats.index_stats("v_idx")
    np.testing.assert_allclose(ours["indices"][0]["centroids"],
                               theirs["indices"][0]["centroids"], rtol=1e-6)
    assert _drop_centroids(ours) == _drop_centroids(theirs)
    assert ours["num_unindexed_rows"] == 300 and ours["num_indexed_rows"] == 1200


def test_describe_indices_as_pylance(indexed):
    (ours,) = VectorIndexMethods.describe_indices(lancenb.dataset(indexed))
    (theirs,) = lance.dataset(indexed).describe_indices()
    for attr in ("name", "type_url", "index_type", "num_rows_indexed", "fields",
                 "field_names", "total_size_bytes"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert repr(ours) == repr(theirs)
    assert ours.details["compression"] == theirs.details["compression"]
    assert ours.details["metric_type"] == theirs.details["metric_type"]
    (seg,), (pseg,) = ours.segments, theirs.segments
    for attr in ("uuid", "dataset_version_at_last_update", "index_version", "size_bytes",
                 "base_id"):
        assert getattr(seg, attr) == getattr(pseg, attr), attr
    assert list(seg.fragment_ids) == list(pseg.fragment_ids)


@pytest.mark.parametrize("kwargs, exc, msg", [
    ({"column": "id", "index_type": "IVF_PQ", "num_partitions": 2, "num_sub_vectors": 2},
     TypeError, "Vector column id must be FixedSizeListArray"),
    ({"column": "nope", "index_type": "IVF_PQ"}, KeyError, "nope not found in schema"),
    ({"column": "v", "index_type": "IVF_PQ", "num_partitions": 2}, ValueError,
     "num_partitions and num_sub_vectors are required for IVF_PQ"),
    ({"column": "v", "index_type": "IVF_PQ", "num_partitions": 2, "num_sub_vectors": 5},
     ValueError, r"dimension \(16\) must be divisible by num_sub_vectors \(5\)"),
    ({"column": "v", "index_type": "IVF_FLAT", "metric": "foo"}, ValueError,
     "Metric foo not supported."),
    ({"column": "v", "index_type": "IVF_XX"}, NotImplementedError, "index types supported"),
    ({"column": "v", "index_type": "IVF_PQ", "num_sub_vectors": 4,
      "pq_codebook": np.zeros((4, 256, 4), np.float32)}, ValueError,
     "ivf_centroids must be specified when pq_codebook is provided"),
    ({"column": "v", "index_type": "IVF_FLAT", "num_partitions": 3,
      "ivf_centroids": np.zeros((2, 16), np.float32)}, ValueError,
     "Ivf centroids has 2 clusters, but num_partitions=3"),
])
def test_create_index_checks_as_pylance(indexed, kwargs, exc, msg):
    with pytest.raises(exc, match=msg):
        lance.dataset(indexed).create_index(**kwargs)
    with pytest.raises(exc, match=msg):
        VectorIndexMethods.create_index(lancenb.dataset(indexed), **kwargs)


def test_existing_name_and_missing_index(indexed):
    with pytest.raises(RuntimeError, match="Index name 'v_idx' already exists"):
        VectorIndexMethods.create_index(lancenb.dataset(indexed), "v", "IVF_FLAT",
                                        num_partitions=2)
    with pytest.raises(IndexNotFoundError, match="Lance index not found: name=nope"):
        VectorIndexMethods.drop_index(lancenb.dataset(indexed), "nope")


def test_create_and_drop_commit(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_table(), uri)
    nds = lancenb.dataset(uri)
    VectorIndexMethods.create_index(nds, "v", "IVF_SQ", num_partitions=4)
    assert nds.version == 2
    assert [e["type"] for e in lance.dataset(uri).list_indices()] == ["IVF_SQ"]
    VectorIndexMethods.drop_index(nds, "v_idx")
    assert nds.version == 3 and lance.dataset(uri).list_indices() == []


def test_vector_index_reader_as_pylance(indexed):
    from lance.dataset import VectorIndexReader as PReader

    from lancenb.index.vector.reader import VectorIndexReader

    ours = VectorIndexReader(lancenb.dataset(indexed), "v_idx")
    theirs = PReader(lance.dataset(indexed), "v_idx")
    assert ours.num_partitions() == theirs.num_partitions() == 4
    for p in range(4):
        a = ours.read_partition(p, with_vector=True)
        b = theirs.read_partition(p, with_vector=True)
        assert a.column_names == b.column_names == ["_rowid", "__pq_code"]
        assert a.equals(b.cast(a.schema))
    with pytest.raises(IndexError, match="out of range"):
        ours.read_partition(5)


def test_centroids_as_pylance(indexed):
    ours = VectorIndexMethods.centroids(lancenb.dataset(indexed), index_name="v_idx")
    theirs = lance.dataset(indexed).centroids(index_name="v_idx")
    assert ours.type.list_size == theirs.type.list_size == 16 and len(ours) == 4
    np.testing.assert_allclose(np.stack(ours.to_numpy(zero_copy_only=False)),
                               np.stack(theirs.to_numpy(zero_copy_only=False)), rtol=1e-6)
    by_column = VectorIndexMethods.centroids(lancenb.dataset(indexed), column="v")
    assert by_column.equals(ours)
    with pytest.raises(ValueError, match="Must provide 'index_name' or 'column'"):
        VectorIndexMethods.centroids(lancenb.dataset(indexed))


def test_accelerator_and_tensor_codebook(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_table(), uri)
    nds = lancenb.dataset(uri)
    for bad in ("0cuda", "cuda-0", "cuda:", "cuda:abc", "no-supported"):
        # (pylance's check and message: 'cuda', 'cuda:N' or 'mps')
        with pytest.raises(ValueError, match="only support 'cuda' or 'mps'"):
            VectorIndexMethods.create_index(nds, "v", "IVF_PQ", num_partitions=2,
                                            num_sub_vectors=4, accelerator=bad)
    with pytest.raises(NotSupportedError, match="GPU"):
        VectorIndexMethods.create_index(nds, "v", "IVF_PQ", num_partitions=2,
                                        num_sub_vectors=4, accelerator="cuda:1")
    with pytest.raises(NotSupportedError, match="GPU"):
        VectorIndexMethods.create_index(nds, "v", "IVF_PQ", num_partitions=2,
                                        num_sub_vectors=4, accelerator="cuda")
    cb = np.random.default_rng(0).standard_normal((4, 256, 4)).astype(np.float32)
    VectorIndexMethods.create_index(
        nds, "v", "IVF_PQ", num_partitions=1, num_sub_vectors=4, accelerator="cpu",
        ivf_centroids=np.zeros((1, 16), np.float32),
        pq_codebook=pa.FixedShapeTensorArray.from_numpy_ndarray(cb))
    from lancenb.index.vector.ivf import open_vector_index

    idx = open_vector_index(nds, nds.list_indices()[0])
    np.testing.assert_array_equal(idx.storage.params["codebook"], cb)


@pytest.mark.parametrize("builder", ["pylance", "lancenb"])
def test_prefilter_on_a_scalar_indexed_column_uses_the_index(tmp_path, builder):
    """A vector search prefiltered on a BTREE-indexed column: both libraries' plans show
    the ScalarIndexQuery under ANNSubIndex (alone when the index answers the whole
    filter, under the filtered read otherwise), and the answers are the same, also with
    a fragment appended after both indices (searched flat, filtered by the scan)."""
    uri = str(tmp_path / "ds")
    t = _table().append_column("tag", pa.array([f"t{i % 40}" for i in range(1200)]))
    lance.write_dataset(t, uri, max_rows_per_file=500)
    lib = lance if builder == "pylance" else lancenb
    lib.dataset(uri).create_index("v", "IVF_PQ", num_partitions=4, num_sub_vectors=4)
    lib.dataset(uri).create_scalar_index("tag", "BTREE")
    q = np.ones(16, np.float32)
    nn = {"column": "v", "q": q, "k": 5, "nprobes": 4}
    for flt, alone in (("tag = 't7'", True), ("id >= 0 AND tag = 't7'", False)):
        plans = [m.dataset(uri).scanner(nearest=nn, columns=["id"], prefilter=True,
                                        filter=flt).explain_plan() for m in (lancenb, lance)]
        for plan in plans:
            assert "ScalarIndexQuery: query=[tag = t7]@tag_idx(BTree)" in plan, plan
            sub = plan[plan.index("ANNSubIndex"):]
            assert ("LanceRead" not in sub) == alone, plan
    more = _table(300, seed=1).append_column("tag", pa.array([f"t{i % 40}" for i in range(300)]))
    lance.write_dataset(more, uri, mode="append")
    for flt in ("tag = 't7'", "id >= 0 AND tag = 't7'"):
        a, b = (m.dataset(uri).to_table(nearest=nn, columns=["id", "tag"], prefilter=True,
                                        filter=flt) for m in (lancenb, lance))
        assert a["id"].to_pylist() == b["id"].to_pylist()
        assert set(a["tag"].to_pylist()) == {"t7"}


def _nested(v, start):
    st = pa.StructArray.from_arrays(
        [pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), v.shape[1]),
         pa.array([str(i) for i in range(len(v))])], names=["embedding", "label"])
    return pa.table({"id": np.arange(start, start + len(v)), "data": st})


@pytest.mark.parametrize("builder", ["pylance", "lancenb"])
def test_vector_index_on_a_struct_field(tmp_path, builder):
    """An index on ``data.embedding`` (a vector inside a struct column), built by each
    library: listed under that path, searched alike by both libraries, then with an
    appended fragment and a refine (the original vectors read from the struct), then
    after optimize_indices. Before: 'column embedding is not in the dataset'."""
    uri = str(tmp_path / "ds")
    v = np.random.default_rng(0).standard_normal((512, 32)).astype(np.float32)
    lancenb.write_dataset(_nested(v, 0), uri)
    lib = lance if builder == "pylance" else lancenb
    lib.dataset(uri).create_index(column="data.embedding", index_type="IVF_PQ",
                                  num_partitions=4, num_sub_vectors=8)
    assert [e["fields"] for e in lancenb.dataset(uri).list_indices()] == [["data.embedding"]]

    def same(**kw):
        nn = {"column": "data.embedding", "q": v[0], "nprobes": 2, **kw}
        a, b = (m.dataset(uri).to_table(nearest=nn) for m in (lancenb, lance))
        assert a.column_names == b.column_names == ["id", "data", "_distance"]
        assert a["id"].to_pylist() == b["id"].to_pylist()
        np.testing.assert_allclose(a["_distance"].to_numpy(), b["_distance"].to_numpy(),
                                   rtol=1e-4)

    same(k=10)
    lancenb.write_dataset(_nested(v[:50] + 1, 512), uri, mode="append")
    same(k=15, refine_factor=2)
    lib.dataset(uri).optimize.optimize_indices()
    same(k=20)
