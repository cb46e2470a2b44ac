"""Flat vector search (``nearest=`` without an index) against pylance's on the same
dataset, written by either library: the same rows in the same order (distance, then row
id) and the same ``_distance`` values within float32 rounding, for each metric and
vector type, with prefilters and postfilters, deletions, appends, limit/offset, row
ids/addresses, multivectors, batches of queries and pylance's validation errors."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.index.vector import flat

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

DIM = 8


def _vectors(n, dim=DIM, seed=0, dtype=np.float32, ties=False):
    rng = np.random.default_rng(seed)
    if ties:  # small integers: many equal distances, so the row-id order shows
        return rng.integers(0, 3, (n, dim)).astype(dtype)
    return rng.standard_normal((n, dim)).astype(dtype)


def _table(x, start=0, arrow_type=None):
    n, dim = x.shape
    values = pa.array(x.ravel(), type=arrow_type)
    return pa.table({"id": np.arange(start, start + n),
                     "cat": pa.array([f"c{i % 3}" for i in range(start, start + n)]),
                     "vec": pa.FixedSizeListArray.from_arrays(values, dim)})


def _write(lib, table, path, **kw):
    return (lance if lib == "pylance" else lancenb).write_dataset(table, str(path), **kw)


def _both(path):
    return lancenb.dataset(str(path)), lance.dataset(str(path))


def _compare(ours: pa.Table, theirs: pa.Table, rtol=1e-5, atol=1e-5):
    assert ours.column_names == theirs.column_names
    assert ours.schema.field("_distance").type == pa.float32()
    assert ours.schema == theirs.schema
    rest = [c for c in ours.column_names if c != "_distance"]
    assert ours.select(rest).to_pylist() == theirs.select(rest).to_pylist()
    np.testing.assert_allclose(ours["_distance"].to_numpy(), theirs["_distance"].to_numpy(),
                               rtol=rtol, atol=atol)


def _same_search(ours_ds, theirs_ds, **kw):
    ours = ours_ds.to_table(**kw)
    theirs = theirs_ds.to_table(**kw)
    _compare(ours, theirs)
    return ours


@pytest.fixture(params=["pylance", "lancenb"])
def writer(request):
    return request.param


@pytest.mark.parametrize("metric", ["l2", "cosine", "dot", "L2", "euclidean", None])
def test_each_metric_matches_pylance(tmp_path, writer, metric):
    x = _vectors(300)
    _write(writer, _table(x), tmp_path / "d", max_rows_per_file=120)
    ours, theirs = _both(tmp_path / "d")
    for q in (_vectors(1, seed=5)[0], np.ones(DIM)):
        nn = {"column": "vec", "q": q, "k": 17, "metric": metric}
        _same_search(ours, theirs, nearest=nn)
        _same_search(ours, theirs, nearest=nn, columns=["id"], with_row_id=True,
                     with_row_address=True)


def test_ties_are_ordered_by_row_id(tmp_path, writer):
    _write(writer, _table(_vectors(200, ties=True)), tmp_path / "d", max_rows_per_file=64)
    ours, theirs = _both(tmp_path / "d")
    for k in (1, 7, 50, 200):
        _same_search(ours, theirs, nearest={"column": "vec", "q": np.zeros(DIM), "k": k},
                     columns=["id"], with_row_id=True)


def test_k_beyond_the_rows_and_default_k(tmp_path, writer):
    _write(writer, _table(_vectors(25)), tmp_path / "d", max_rows_per_file=10)
    ours, theirs = _both(tmp_path / "d")
    q = np.full(DIM, 0.5)
    t = _same_search(ours, theirs, nearest={"column": "vec", "q": q, "k": 100})
    assert t.num_rows == 25
    t = _same_search(ours, theirs, nearest={"column": "vec", "q": q})  # k = 10
    assert t.num_rows == 10
    _same_search(ours, theirs, nearest={"column": "vec", "q": q}, limit=4)  # k = limit
    # index-only parameters leave a flat search alone (ef < k included)
    _same_search(ours, theirs, nearest={"column": "vec", "q": q, "k": 5, "ef": 1,
                                        "nprobes": 3, "refine_factor": 2})
    # a k far beyond the rows allocates for the rows, not for k
    assert ours.to_table(nearest={"column": "vec", "q": q, "k": 10**12}).num_rows == 25


@pytest.mark.parametrize("limit,offset", [(3, None), (3, 2), (None, 4), (0, None),
                                          (20, 15)])
def test_limit_and_offset_slice_the_k_results(tmp_path, limit, offset):
    _write("pylance", _table(_vectors(60)), tmp_path / "d")
    ours, theirs = _both(tmp_path / "d")
    for k in (None, 10):
        kw = dict(nearest={"column": "vec", "q": np.ones(DIM), "k": k}, limit=limit,
                  offset=offset, columns=["id"])
        if k is None and limit == 0:  # k = limit = 0
            mine, their = _errors(ours, **kw), _errors(theirs, **kw)
            assert isinstance(mine, ValueError) and isinstance(their, ValueError)
            assert str(their).split(", /home")[0] == str(mine)
            continue
        _same_search(ours, theirs, **kw)


@pytest.mark.parametrize("prefilter", [True, False, None])
def test_prefilter_and_postfilter(tmp_path, writer, prefilter):
    x = _vectors(240, ties=True)
    _write(writer, _table(x), tmp_path / "d", max_rows_per_file=100)
    ours, theirs = _both(tmp_path / "d")
    for filt in ("cat = 'c1'", "id > 200", "id < 0", "cat = 'c2' AND id % 2 = 0"):
        _same_search(ours, theirs, nearest={"column": "vec", "q": np.ones(DIM), "k": 15},
                     filter=filt, prefilter=prefilter, columns=["id", "cat"],
                     with_row_id=True)


def test_postfilter_on_distance(tmp_path):
    _write("pylance", _table(_vectors(50, ties=True)), tmp_path / "d")
    ours, theirs = _both(tmp_path / "d")
    _same_search(ours, theirs, nearest={"column": "vec", "q": np.zeros(DIM), "k": 20},
                 filter="_distance < 4", columns=["id"])


def test_deleted_rows_are_never_results(tmp_path, writer):
    x = _vectors(200, ties=True)
    _write(writer, _table(x), tmp_path / "d", max_rows_per_file=80)
    ds = (lance if writer == "pylance" else lancenb).dataset(str(tmp_path / "d"))
    ds.delete("id % 3 = 0 OR id BETWEEN 100 AND 130")
    ours, theirs = _both(tmp_path / "d")
    for prefilter in (True, False):
        t = _same_search(ours, theirs, nearest={"column": "vec", "q": np.zeros(DIM), "k": 40},
                         filter="id > 20", prefilter=prefilter, columns=["id"],
                         with_row_id=True, with_row_address=True)
        assert not any(i % 3 == 0 or 100 <= i <= 130 for i in t["id"].to_pylist())
    _same_search(ours, theirs, nearest={"column": "vec", "q": np.zeros(DIM), "k": 40})


def test_appends_by_either_library(tmp_path, writer):
    _write(writer, _table(_vectors(100, seed=1)), tmp_path / "d")
    lance.write_dataset(_table(_vectors(70, seed=2), start=100), str(tmp_path / "d"),
                        mode="append")
    lancenb.write_dataset(_table(_vectors(50, seed=3), start=170), str(tmp_path / "d"),
                          mode="append")
    ours, theirs = _both(tmp_path / "d")
    assert len(ours.get_fragments()) == 3
    _same_search(ours, theirs, nearest={"column": "vec", "q": _vectors(1, seed=9)[0],
                                        "k": 30, "metric": "cosine"}, with_row_id=True)


def test_stable_row_ids(tmp_path):
    lance.write_dataset(_table(_vectors(90, ties=True)), str(tmp_path / "d"),
                        enable_stable_row_ids=True, max_rows_per_file=40)
    pds = lance.dataset(str(tmp_path / "d"))
    pds.delete("id < 5")
    pds.update({"cat": "'zz'"}, where="id > 80")  # moves rows: new addresses, same ids
    ours, theirs = _both(tmp_path / "d")
    _same_search(ours, theirs, nearest={"column": "vec", "q": np.zeros(DIM), "k": 30},
                 columns=["id", "cat"], with_row_id=True, with_row_address=True)


def test_distance_range(tmp_path):
    _write("pylance", _table(_vectors(100, ties=True)), tmp_path / "d")
    ours, theirs = _both(tmp_path / "d")
    for rng in ((1.0, 3.0), (None, 2.0), (5.5, None), (5.0, 5.0)):
        _same_search(ours, theirs, nearest={"column": "vec", "q": np.zeros(DIM), "k": 8,
                                            "distance_range": rng}, columns=["id"])


@pytest.mark.parametrize("arrow_type,dtype", [(pa.float16(), np.float16),
                                              (pa.float64(), np.float64)])
def test_float16_and_float64_vectors(tmp_path, writer, arrow_type, dtype):
    x = _vectors(150, dtype=dtype)
    _write(writer, _table(x, arrow_type=arrow_type), tmp_path / "d")
    ours, theirs = _both(tmp_path / "d")
    for metric in ("l2", "cosine", "dot"):
        t = ours.to_table(nearest={"column": "vec", "q": np.full(DIM, 0.1), "k": 12,
                                   "metric": metric}, columns=["id"])
        p = theirs.to_table(nearest={"column": "vec", "q": np.full(DIM, 0.1), "k": 12,
                                     "metric": metric}, columns=["id"])
        assert t["id"].to_pylist() == p["id"].to_pylist()
        np.testing.assert_allclose(t["_distance"].to_numpy(), p["_distance"].to_numpy(),
                                   rtol=2e-3 if dtype == np.float16 else 1e-6, atol=1e-3)


def test_uint8_hamming(tmp_path, writer):
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (120, 16)).astype(np.uint8)
    _write(writer, _table(x, arrow_type=pa.uint8()), tmp_path / "d", max_rows_per_file=50)
    ours, theirs = _both(tmp_path / "d")
    for metric in (None, "hamming"):
        _same_search(ours, theirs, nearest={"column": "vec", "q": x[7], "k": 20,
                                            "metric": metric}, with_row_id=True)


def test_multivector_column(tmp_path):
    rng = np.random.default_rng(4)
    rows = [[rng.standard_normal(DIM).tolist() for _ in range(rng.integers(1, 4))]
            for _ in range(60)]
    rows[5] = None
    mv = pa.array(rows, type=pa.list_(pa.list_(pa.float32(), DIM)))
    lance.write_dataset(pa.table({"id": np.arange(60), "mv": mv}), str(tmp_path / "d"))
    ours, theirs = _both(tmp_path / "d")
    queries = (rng.standard_normal((2, DIM)).tolist(), [np.ones(DIM)], np.ones(DIM))
    for metric in ("l2", "cosine", "dot"):
        for q in queries:
            t = ours.to_table(nearest={"column": "mv", "q": q, "k": 9, "metric": metric},
                              columns=["id"])
            p = theirs.to_table(nearest={"column": "mv", "q": q, "k": 9, "metric": metric},
                                columns=["id"])
            assert t["id"].to_pylist() == p["id"].to_pylist()
            np.testing.assert_allclose(t["_distance"].to_numpy(), p["_distance"].to_numpy(),
                                       rtol=1e-5, atol=1e-5)


def test_batch_of_queries(tmp_path):
    _write("pylance", _table(_vectors(80, ties=True)), tmp_path / "d")
    ours, theirs = _both(tmp_path / "d")
    q = np.stack([np.zeros(DIM), np.ones(DIM), np.full(DIM, 2.0)])
    _same_search(ours, theirs, nearest={"column": "vec", "q": q, "k": 4}, columns=["id"])


def test_many_batches_give_the_same_rows(tmp_path, monkeypatch):
    x = _vectors(5000, ties=True)
    lancenb.write_dataset(_table(x), str(tmp_path / "d"), max_rows_per_file=3000)
    ours, theirs = _both(tmp_path / "d")
    ours.delete("id % 7 = 0")
    theirs = lance.dataset(str(tmp_path / "d"))
    monkeypatch.setattr(flat, "BATCH_ROWS", 333)
    monkeypatch.setattr(flat, "MAX_PENDING", 2)
    ours = lancenb.dataset(str(tmp_path / "d"))
    _same_search(ours, theirs, nearest={"column": "vec", "q": np.zeros(DIM), "k": 300},
                 columns=["id"], with_row_id=True, with_row_address=True)


def test_scanner_methods(tmp_path):
    _write("pylance", _table(_vectors(40)), tmp_path / "d")
    ours, theirs = _both(tmp_path / "d")
    nn = {"column": "vec", "q": np.ones(DIM), "k": 5}
    sc = ours.scanner(nearest=nn, columns=["id"])
    psc = theirs.scanner(nearest=nn, columns=["id"])
    assert sc.count_rows() == psc.count_rows() == 5
    assert sc.projected_schema == psc.projected_schema
    assert pa.Table.from_batches(list(sc.to_batches())).equals(sc.to_table())
    assert sc.to_reader().read_all().equals(sc.to_table())
    assert "KNN" in sc.explain_plan()
    ours_b = pa.Table.from_batches(list(ours.to_batches(nearest=nn, columns=["id"])))
    assert ours_b["id"].to_pylist() == psc.to_table()["id"].to_pylist()


def _errors(ds, **kw):
    try:
        ds.to_table(**kw)
    except Exception as e:  # noqa: BLE001 - comparing what each library raises
        return e
    return None


@pytest.mark.parametrize("nearest,kw", [
    ({"column": "vec", "q": [1.0, 2.0, 3.0], "k": 3}, {}),
    ({"column": "id", "q": np.zeros(DIM), "k": 3}, {}),
    ({"column": "nope", "q": np.zeros(DIM), "k": 3}, {}),
    ({"column": "vec", "q": np.zeros(DIM), "k": 0}, {}),
    ({"column": "vec", "q": np.zeros(DIM), "k": -2}, {}),
    ({"column": "vec", "q": np.zeros(DIM), "k": 3, "metric": "foo"}, {}),
    ({"column": "vec", "q": np.zeros(DIM), "k": 3, "metric": "hamming"}, {}),
    ({"column": "vec", "q": np.zeros(DIM), "k": 3, "bogus": 1}, {}),
    ({"column": "vec", "q": np.zeros(DIM), "k": 3, "nprobes": 0}, {}),
    ({"column": "vec", "q": np.zeros(DIM), "k": 3, "refine_factor": 0}, {}),
    ({"column": "vec", "q": np.zeros(DIM), "k": 3, "ef": 0}, {}),
    ({"column": "vec", "q": np.zeros(DIM), "k": 3, "minimum_nprobes": 5,
      "maximum_nprobes": 2}, {}),
    ({"column": "vec", "q": np.zeros(DIM), "k": 3, "distance_range": (1.0,)}, {}),
])
def test_validation_errors_as_pylance(tmp_path, nearest, kw):
    _write("pylance", _table(_vectors(20)), tmp_path / "d")
    ours, theirs = _both(tmp_path / "d")
    mine, their = _errors(ours, nearest=nearest, **kw), _errors(theirs, nearest=nearest, **kw)
    assert their is not None and mine is not None
    assert isinstance(mine, type(their)), (mine, their)
    assert str(their).split(", /home")[0] == str(mine)


def test_uint8_vectors_refuse_float_metrics(tmp_path):
    x = np.zeros((5, 4), np.uint8)
    _write("pylance", _table(x, arrow_type=pa.uint8()), tmp_path / "d")
    ours, theirs = _both(tmp_path / "d")
    for metric in ("l2", "cosine", "dot"):
        nn = {"column": "vec", "q": np.zeros(4), "k": 2, "metric": metric}
        mine, their = _errors(ours, nearest=nn), _errors(theirs, nearest=nn)
        assert isinstance(mine, ValueError) and isinstance(their, ValueError)
        assert str(their).split(", /home")[0] == str(mine)


@pytest.mark.parametrize("index_type", ["IVF_FLAT", "IVF_PQ"])
def test_index_and_unindexed_fragments_merge_as_pylance(tmp_path, index_type):
    """An index pylance built covers the first fragment; rows appended afterwards are
    searched flat; deleted rows drop out of both; the merge is pylance's."""
    rng = np.random.default_rng(7)
    centers = rng.standard_normal((8, 16)) * 3
    x = (centers[rng.integers(0, 8, 3000)] + rng.standard_normal((3000, 16))).astype(np.float32)
    pds = lance.write_dataset(_table(x), str(tmp_path / "d"))
    pds.create_index("vec", index_type=index_type, num_partitions=4, num_sub_vectors=4)
    more = (centers[rng.integers(0, 8, 500)] + rng.standard_normal((500, 16))).astype(np.float32)
    lancenb.write_dataset(_table(more, start=3000), str(tmp_path / "d"), mode="append")
    lance.dataset(str(tmp_path / "d")).delete("id % 10 = 0")
    ours, theirs = _both(tmp_path / "d")
    for q in (x[5] + 0.1, more[3]):
        for nprobes, rf in ((1, None), (2, None), (4, 2), (None, None)):
            for kw in ({}, {"filter": "id > 1000", "prefilter": True},
                       {"filter": "id > 1000"}):
                _same_search(ours, theirs, nearest={"column": "vec", "q": q, "k": 10,
                                                    "nprobes": nprobes, "refine_factor": rf},
                             columns=["id"], with_row_id=True, **kw)
    # fast_search: the indexed fragments only, with the index's own distances
    for nprobes in (1, 4):
        _same_search(ours, theirs, nearest={"column": "vec", "q": more[3], "k": 10,
                                            "nprobes": nprobes}, fast_search=True,
                     columns=["id"], with_row_id=True)
    # use_index=False: exact over every fragment
    _same_search(ours, theirs, nearest={"column": "vec", "q": x[5], "k": 10,
                                        "use_index": False}, columns=["id"])


def test_output_column_order_as_pylance(tmp_path):
    _write("pylance", _table(_vectors(30)), tmp_path / "d")
    ours, theirs = _both(tmp_path / "d")
    nn = {"column": "vec", "q": pa.array(np.ones(DIM), pa.float32()), "k": 4,
          "use_index": False}
    for kw in ({}, {"with_row_id": True}, {"with_row_address": True},
               {"with_row_id": True, "with_row_address": True},
               {"columns": ["_rowid", "vec"]}, {"columns": ["vec", "_rowaddr"]},
               {"columns": ["_distance", "id"], "with_row_id": True},
               {"columns": ["vec"], "disable_scoring_autoprojection": True},
               {"columns": ["vec"], "disable_scoring_autoprojection": False}):
        assert ours.scanner(nearest=nn, **kw).to_table().column_names == \
            theirs.scanner(nearest=nn, **kw).to_table().column_names, kw


def test_fixed_shape_tensor_column_and_extension_query(tmp_path):
    tensor = pa.fixed_shape_tensor(pa.float32(), [4])
    storage = pa.array([[i, i + 1, i + 2, i + 3] for i in range(0, 80, 4)],
                       pa.list_(pa.float32(), 4))
    table = pa.table({"t": pa.ExtensionArray.from_storage(tensor, storage)})
    lance.write_dataset(table, str(tmp_path / "d"))
    ours, theirs = _both(tmp_path / "d")
    q = pa.ExtensionArray.from_storage(tensor, pa.array([[10, 20, 30, 40]],
                                                        pa.list_(pa.float32(), 4)))[0]
    _same_search(ours, theirs, nearest={"column": "t", "k": 3, "q": q}, with_row_id=True)


def test_fragments_need_a_prefilter(tmp_path):
    _write("pylance", _table(_vectors(60, ties=True)), tmp_path / "d", max_rows_per_file=20)
    ours, theirs = _both(tmp_path / "d")
    nn = {"column": "vec", "q": np.zeros(DIM), "k": 5}
    def error(ds):
        try:
            ds.scanner(nearest=nn, fragments=[ds.get_fragments()[1]]).to_table()
        except Exception as e:  # noqa: BLE001 - comparing what each library raises
            return e

    mine, their = error(ours), error(theirs)
    assert isinstance(mine, ValueError) and isinstance(their, ValueError)
    assert str(their).split(", /home")[0] == str(mine)
    got = ours.scanner(nearest=nn, fragments=[ours.get_fragments()[1]], prefilter=True,
                       columns=["id"], with_row_id=True).to_table()
    want = theirs.scanner(nearest=nn, fragments=[theirs.get_fragments()[1]], prefilter=True,
                          columns=["id"], with_row_id=True).to_table()
    _compare(got, want)


def test_fast_search_searches_only_indexed_rows(tmp_path):
    _write("pylance", _table(_vectors(40)), tmp_path / "d")
    ours, theirs = _both(tmp_path / "d")
    nn = {"column": "vec", "q": np.zeros(DIM), "k": 5}
    got = ours.scanner(nearest=nn, fast_search=True).to_table()
    _compare(got, theirs.scanner(nearest=nn, fast_search=True).to_table())
    assert got.num_rows == 0  # no index: nothing is indexed


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_index_metric_is_the_default_for_the_whole_search(tmp_path, metric):
    """No metric named: pylance searches with the index's, on the unindexed rows too."""
    rng = np.random.default_rng(11)
    centers = rng.standard_normal((8, 16)) * 3
    x = (centers[rng.integers(0, 8, 2000)] + rng.standard_normal((2000, 16))).astype(np.float32)
    pds = lance.write_dataset(_table(x), str(tmp_path / "d"))
    pds.create_index("vec", index_type="IVF_FLAT", num_partitions=4, metric=metric)
    more = (centers[rng.integers(0, 8, 300)] + rng.standard_normal((300, 16))).astype(np.float32)
    lancenb.write_dataset(_table(more, start=2000), str(tmp_path / "d"), mode="append")
    ours, theirs = _both(tmp_path / "d")
    for name in (None, metric, "l2"):
        for nprobes in (1, 4):
            _same_search(ours, theirs, nearest={"column": "vec", "q": x[7] + 0.2, "k": 10,
                                                "nprobes": nprobes, "metric": name},
                         columns=["id"])


def test_a_dataset_moved_to_a_new_version_in_place(tmp_path):
    lancenb.write_dataset(_table(_vectors(50, seed=1)), str(tmp_path / "d"))
    ours = lancenb.dataset(str(tmp_path / "d"))
    nn = {"column": "vec", "q": np.zeros(DIM), "k": 60}
    assert ours.to_table(nearest=nn).num_rows == 50
    ours.insert(_table(_vectors(30, seed=2), start=50))  # the same object, next version
    ours.delete("id < 5")
    _compare(ours.to_table(nearest=nn, with_row_id=True),
             lance.dataset(str(tmp_path / "d")).to_table(nearest=nn, with_row_id=True))


def test_stable_row_ids_without_row_addresses(tmp_path):
    lance.write_dataset(_table(_vectors(60, ties=True)), str(tmp_path / "d"),
                        enable_stable_row_ids=True, max_rows_per_file=25)
    ours, theirs = _both(tmp_path / "d")
    for kw in ({}, {"with_row_id": True}, {"columns": ["id"]}):
        _same_search(ours, theirs, nearest={"column": "vec", "q": np.zeros(DIM), "k": 12},
                     **kw)


def test_only_the_distance_or_no_column(tmp_path):
    _write("pylance", _table(_vectors(40)), tmp_path / "d")
    ours, theirs = _both(tmp_path / "d")
    for cols in (["_distance"], [], ["_rowid"]):
        _same_search(ours, theirs, nearest={"column": "vec", "q": np.zeros(DIM), "k": 6},
                     columns=cols)


def test_include_deleted_rows_is_refused(tmp_path):
    _write("pylance", _table(_vectors(10)), tmp_path / "d")
    ours, theirs = _both(tmp_path / "d")
    kw = dict(nearest={"column": "vec", "q": np.zeros(DIM), "k": 3}, with_row_id=True,
              include_deleted_rows=True)
    mine, their = _errors(ours, **kw), _errors(theirs, **kw)
    assert isinstance(mine, ValueError) and isinstance(their, ValueError)
    assert str(their).split(", /home")[0] == str(mine)


def test_explain_plan_names_the_probes_as_pylance(tmp_path):
    x = _vectors(1200, dim=16)
    pds = lance.write_dataset(_table(x), str(tmp_path / "d"))
    pds.create_index("vec", index_type="IVF_FLAT", num_partitions=8)
    ours, theirs = _both(tmp_path / "d")
    for probes, want in (({"nprobes": 7}, "minimum_nprobes=7, maximum_nprobes=Some(7)"),
                         ({"minimum_nprobes": 7}, "minimum_nprobes=7, maximum_nprobes=None"),
                         ({"minimum_nprobes": 7, "maximum_nprobes": 8},
                          "minimum_nprobes=7, maximum_nprobes=Some(8)"),
                         ({}, "minimum_nprobes=1, maximum_nprobes=None")):
        nn = {"column": "vec", "q": x[3], "k": 10, **probes}
        mine, their = ours.scanner(nearest=nn).explain_plan(), \
            theirs.scanner(nearest=nn).explain_plan()
        assert want in mine and want in their
        # only the index: no exact re-scoring, in either plan
        assert ("KNNVectorDistance" in mine) == ("KNNVectorDistance" in their) is False
    lancenb.write_dataset(_table(x[:10], start=1200), str(tmp_path / "d"), mode="append")
    ours, theirs = _both(tmp_path / "d")
    nn = {"column": "vec", "q": x[3], "k": 10}
    assert "KNNVectorDistance" in ours.scanner(nearest=nn).explain_plan()
    assert "KNNVectorDistance" in theirs.scanner(nearest=nn).explain_plan()


def test_explicit_nprobes_is_not_exceeded(tmp_path):
    """nprobes=1 with a prefilter keeping few rows: pylance searches one partition and
    returns what it finds there (fewer than k), without probing further."""
    rng = np.random.default_rng(3)
    centers = rng.standard_normal((8, 16)) * 5
    x = (centers[rng.integers(0, 8, 2000)] + rng.standard_normal((2000, 16))).astype(np.float32)
    pds = lance.write_dataset(_table(x), str(tmp_path / "d"))
    pds.create_index("vec", index_type="IVF_FLAT", num_partitions=8)
    ours, theirs = _both(tmp_path / "d")
    for probes in ({"nprobes": 1}, {"minimum_nprobes": 1}, {"minimum_nprobes": 1,
                                                            "maximum_nprobes": 2}):
        _same_search(ours, theirs, nearest={"column": "vec", "q": x[0], "k": 50, **probes},
                     filter="id < 300", prefilter=True, columns=["id"])


def test_sql_projections_with_nearest(tmp_path):
    _write("pylance", _table(_vectors(40)), tmp_path / "d")
    ours, theirs = _both(tmp_path / "d")
    cols = {"ident": "id", "twice": "id * 2", "cat": "upper(cat)"}
    _same_search(ours, theirs, nearest={"column": "vec", "q": np.zeros(DIM), "k": 5},
                 columns=cols, with_row_id=True)
    _same_search(ours, theirs, nearest={"column": "vec", "q": np.zeros(DIM), "k": 5},
                 columns=cols, filter="id > 3")
    _same_search(ours, theirs, nearest={"column": "vec", "q": np.zeros(DIM), "k": 5},
                 columns=cols, filter="id < 0", prefilter=True)  # no rows
