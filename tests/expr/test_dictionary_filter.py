"""SQL filters over one string or binary column whose pages are dictionary-encoded are
evaluated on each page's distinct values and looked up by index
(``LanceScanner._dictionary_filter``, ``Filter.positions_by_dictionary``). The rows
they return are pylance's, on datasets written by either library, with nulls, deleted
rows, small appended fragments, projections, limits and counts."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest
from _tables import assert_tables_equal

import lancenb
from lancenb.dataset.read import scanner
from lancenb.expr import filters

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

FILTERS = [
    "cat = 'c7'",
    "cat IN ('c1', 'c3', 'nope')",
    "cat != 'c2'",                       # null rows are not kept
    "cat <> 'c2' OR cat IS NULL",
    "cat IS NULL",
    "cat IS NOT NULL",
    "NOT (cat = 'c1')",
    "cat LIKE 'c1%'",
    "cat > 'c5'",
    "cat = 'zzz'",
    "cat NOT IN ('c4', NULL)",           # never true
    "upper(cat) = 'C7'",                 # a function: the engine, on the rows
    "bin IS NULL",
    "tag = 'high-cardinality-12'",        # pages not dictionary-encoded
]


def _table(n: int, start: int = 0, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    cats = np.array([f"c{i}" for i in range(20)], dtype=object)
    pick = rng.integers(0, 20, n)
    cat = cats[pick]
    cat[rng.random(n) < 0.05] = None
    return pa.table({
        "id": np.arange(start, start + n, dtype=np.int64),
        "cat": pa.array(cat.tolist(), pa.string()),
        "bin": pa.array([None if c is None else f"b{c[1:]}".encode() for c in cat],
                        pa.binary()),
        "tag": pa.array([f"high-cardinality-{i}" for i in range(start, start + n)]),
        "x": rng.random(n),
    })


@pytest.fixture(scope="module", params=[("lancenb", "2.1"), ("lancenb", "2.2"),
                                        ("pylance", "2.1"), ("pylance", "2.2")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def dataset_uri(request, tmp_path_factory):
    writer, fmt = request.param
    lib = lancenb if writer == "lancenb" else lance
    uri = str(tmp_path_factory.mktemp(f"dictfilter-{writer}-{fmt}") / "ds")
    lib.write_dataset(_table(150_000), uri, max_rows_per_file=100_000,
                      data_storage_version=fmt)
    for k in range(3):  # small fragments (lancenb reads those through its small-file path)
        lib.write_dataset(_table(50, start=200_000 + 50 * k, seed=k + 1), uri, mode="append")
    lance.dataset(uri).delete("id % 97 = 5")  # deleted rows: reads by live offsets
    return uri


@pytest.mark.parametrize("flt", FILTERS)
def test_rows_equal_pylance(dataset_uri, flt):
    ours, theirs = lancenb.dataset(dataset_uri), lance.dataset(dataset_uri)
    assert_tables_equal(ours.to_table(filter=flt), theirs.to_table(filter=flt))
    assert ours.count_rows(flt) == theirs.count_rows(flt)
    for kw in ({"columns": ["id"]}, {"columns": ["cat", "x"], "limit": 40, "offset": 7},
               {"columns": ["x"], "with_row_id": True}):
        assert_tables_equal(ours.to_table(filter=flt, **kw), theirs.to_table(filter=flt, **kw))


def test_the_dictionary_path_is_taken_and_matches_the_row_path(dataset_uri, monkeypatch):
    calls = []
    real = filters.Filter.positions_by_dictionary

    def spy(self, name, column):
        got = real(self, name, column)
        calls.append(got is not None)
        return got
    monkeypatch.setattr(filters.Filter, "positions_by_dictionary", spy)
    ds = lancenb.dataset(dataset_uri)
    got = {flt: ds.to_table(filter=flt) for flt in FILTERS}
    assert any(calls)  # (both writers dictionary-encode 20 values in 100,000 rows)
    monkeypatch.setattr(scanner, "_DICTIONARY_FILTERS", False)
    ds = lancenb.dataset(dataset_uri)
    for flt in FILTERS:
        assert_tables_equal(got[flt], ds.to_table(filter=flt))


def test_a_value_that_fails_to_evaluate_falls_back_to_the_rows(tmp_path):
    # CAST fails on 'x' (in the dictionary, but only on rows deleted since): the rows
    # left all cast, so the filter answers as on the rows, as pylance does
    uri = str(tmp_path / "ds")
    t = pa.table({"s": pa.array((["1", "2", "3"] * 40_000) + ["x"] * 10)})
    lancenb.write_dataset(t, uri)
    lancenb.dataset(uri).delete("s = 'x'")
    flt = "CAST(s AS INT) = 2"
    ours = lancenb.dataset(uri).to_table(filter=flt)
    assert ours.num_rows == 40_000
    assert_tables_equal(ours, lance.dataset(uri).to_table(filter=flt))


def test_positions_by_dictionary_null_rows_and_chunks():
    f = filters.compile_filter("c IS NULL OR c = 'b'", pa.schema([("c", pa.string())]))
    a = pa.DictionaryArray.from_arrays(pa.array([1, None, 0, 1], pa.int32()),
                                       pa.array(["a", "b"]))
    b = pa.DictionaryArray.from_arrays(pa.array([0, 0], pa.int32()), pa.array(["b"]))
    got = f.positions_by_dictionary("c", pa.chunked_array([a, b]))
    want = f.positions(pa.table({"c": pa.chunked_array([a, b]).cast(pa.string())}))
    assert got.tolist() == want.tolist() == [0, 1, 3, 4, 5]
    # a pyarrow Expression: not known to be a function of the value alone
    g = filters.compile_filter(pa.compute.field("c") == "b", pa.schema([("c", pa.string())]))
    assert g.positions_by_dictionary("c", pa.chunked_array([a])) is None
