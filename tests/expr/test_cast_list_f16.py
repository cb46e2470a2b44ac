"""``_cast_list_f16(v)`` (pylance's SQL function casting a float32 list or fixed-size
list to float16) in projections, filters and vector-search projections: the same values,
types and refusals as pylance, on a dataset each library wrote."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb


def _table(n: int = 300, dim: int = 16, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, dim)) * 1000).astype(np.float32)
    x[3, 2] = 70000.0  # past float16's range: inf
    x[4, 1] = 1e-9  # below its smallest subnormal: 0
    mask = np.zeros(n, bool)
    mask[7] = True  # a null vector
    vector = pa.FixedSizeListArray.from_arrays(pa.array(x.reshape(-1)), dim,
                                               mask=pa.array(mask))
    lens = rng.integers(0, 5, n)
    lists = pa.array([None if i == 5 else [float(v) if v % 3 else None
                                          for v in rng.integers(0, 100, lens[i])]
                      for i in range(n)], pa.list_(pa.float32()))
    halves = pa.FixedSizeListArray.from_arrays(
        pa.array((x[:, :4] / 100).reshape(-1).astype(np.float16)), 4)
    return pa.table({"id": np.arange(n, dtype=np.int64), "vector": vector, "l": lists,
                     "h": halves,
                     "d": pa.FixedSizeListArray.from_arrays(
                         pa.array(x[:, :2].reshape(-1).astype(np.float64)), 2),
                     "big": pa.array([[1.0]] * n, pa.large_list(pa.float32()))})


@pytest.fixture(scope="module", params=["lancenb", "pylance"])
def uri(request, tmp_path_factory):
    path = str(tmp_path_factory.mktemp(f"castf16-{request.param}") / "ds")
    writer = lancenb if request.param == "lancenb" else lance
    writer.write_dataset(_table(), path)
    return path


@pytest.mark.parametrize("exprs", [
    {"vec": "vector", "f16": "_cast_list_f16(vector)"},
    {"f16": "_CAST_LIST_F16( vector )"},
    {"l16": "_cast_list_f16(l)", "h16": "_cast_list_f16(h)"},
    {"twice": "_cast_list_f16(_cast_list_f16(vector))", "id": "id"},
    {"n": "array_length(_cast_list_f16(l))", "isnull": "_cast_list_f16(vector) IS NULL"},
    {"s": "concat('_cast_list_f16(', CAST(id AS VARCHAR))"},
])
def test_projection_as_pylance(uri, exprs):
    ours = lancenb.dataset(uri).to_table(columns=exprs)
    theirs = lance.dataset(uri).to_table(columns=exprs)
    assert ours.schema == theirs.schema
    assert ours.equals(theirs)


def test_values_are_numpy_float16(uri):
    t = lancenb.dataset(uri).to_table(columns={"v": "vector", "f": "_cast_list_f16(vector)"},
                                      filter="id != 7")
    original = np.stack(t["v"].to_numpy(zero_copy_only=False))
    cast = np.stack(t["f"].to_numpy(zero_copy_only=False))
    assert cast.dtype == np.float16
    with np.errstate(over="ignore"):  # 70000 is inf in float16
        np.testing.assert_array_equal(original.astype(np.float16), cast)
    assert np.isinf(cast).sum() == 1


def test_filter_as_pylance(uri):
    flt = "_cast_list_f16(vector) IS NULL OR array_length(_cast_list_f16(l)) = 0"
    ours = lancenb.dataset(uri).to_table(columns=["id"], filter=flt)
    theirs = lance.dataset(uri).to_table(columns=["id"], filter=flt)
    assert ours["id"].to_pylist() == theirs["id"].to_pylist()
    assert 7 in ours["id"].to_pylist()


@pytest.mark.parametrize("expr,message", [
    ("_cast_list_f16(d)", "only supports list of float32 or float16"),
    ("_cast_list_f16(big)", "only supports FixedSizeList/List arguments"),
    ("_cast_list_f16(id)", "only supports FixedSizeList/List arguments"),
    ("_cast_list_f16(vector, l)", "expected 1 arguments but received 2"),
])
def test_refused_as_pylance(uri, expr, message):
    for lib in (lancenb, lance):
        with pytest.raises(ValueError, match=message):
            lib.dataset(uri).to_table(columns={"x": expr})


def test_in_vector_search_projection(tmp_path):
    """A nearest query's projection casts the rows found (flat and through an index)."""
    t = _table(n=600, dim=32, seed=1).select(["id", "vector"]).filter(
        pa.compute.invert(pa.compute.is_null(_table(n=600, dim=32, seed=1)["vector"])))
    path = str(tmp_path / "ds")
    lance.write_dataset(t, path)
    q = np.random.default_rng(2).standard_normal(32).astype(np.float32) * 1000
    cols = {"vec": "vector", "vec_f16": "_cast_list_f16(vector)"}
    for indexed in (False, True):
        if indexed:
            lance.dataset(path).create_index("vector", index_type="IVF_PQ",
                                             num_partitions=4, num_sub_vectors=8)
        nearest = {"column": "vector", "q": q, "k": 10, "nprobes": 4}
        ours = lancenb.dataset(path).to_table(nearest=nearest, columns=cols)
        theirs = lance.dataset(path).to_table(nearest=nearest, columns=cols)
        assert ours.column_names == theirs.column_names == ["vec", "vec_f16", "_distance"]
        assert ours.schema.field("vec_f16").type == theirs.schema.field("vec_f16").type
        original = np.stack(ours["vec"].to_numpy(zero_copy_only=False))
        cast = np.stack(ours["vec_f16"].to_numpy(zero_copy_only=False))
        np.testing.assert_array_equal(original.astype(np.float16), cast)
        assert sorted(map(tuple, original.tolist())) == sorted(
            map(tuple, np.stack(theirs["vec"].to_numpy(zero_copy_only=False)).tolist()))
