"""Floats in filters, order_by, statistics and pruning follow pylance's total order.

pylance (DataFusion) orders -NaN below -inf and NaN above +inf, NaNs equal only bit
for bit; against a literal -0.0 equals +0.0, between columns and in order_by -0.0 sorts
first. Every answer here is pylance's, on the same files (written by either library).
"""

from __future__ import annotations

import math

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.dataset import ColumnOrdering

import lancenb
from lancenb.errors import InvalidInputError
from lancenb.expr import nodes as exprnodes
from lancenb.expr.filters import compile_filter
from lancenb.file.statistics import DEFAULT_ROWS_PER_PAGE, ColumnStats

BITS = {
    "nan": 0x7FF8000000000000, "nan_p1": 0x7FF8000000000001, "snan": 0x7FF0000000000001,
    "nan_max": 0x7FFFFFFFFFFFFFFF, "mnan": 0xFFF8000000000000, "mnan_p1": 0xFFF8000000000001,
    "msnan": 0xFFF0000000000001, "mnan_max": 0xFFFFFFFFFFFFFFFF, "inf": 0x7FF0000000000000,
    "minf": 0xFFF0000000000000, "zero": 0, "mzero": 0x8000000000000000,
    "one": 0x3FF0000000000000, "mone": 0xBFF0000000000000,
}
NAMES = list(BITS)


def _special_table() -> pa.Table:
    x = np.array([BITS[n] for n in NAMES] + [0], np.uint64).view(np.float64)
    mask = np.array([False] * len(NAMES) + [True])
    xs = pa.array(x, mask=mask)
    return pa.table({
        "name": NAMES + ["null"], "x": xs, "y": pa.array(x[::-1].copy()),
        "f": xs.cast(pa.float32()), "h": pa.array(x.astype(np.float16), mask=mask),
        "s": pa.StructArray.from_arrays([xs], names=["a"]),
        "i": pa.array(np.arange(len(NAMES) + 1) - 7, pa.int64()),
    })


@pytest.fixture(scope="module", params=["lancenb", "pylance"])
def special(request, tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("nan") / "ds")
    (lancenb if request.param == "lancenb" else lance).write_dataset(_special_table(), uri)
    return lancenb.dataset(uri), lance.dataset(uri)


FILTERS = [
    "x > 0", "x < 0", "x >= 1", "x < -1", "x <= -0.0", "x > -0.0", "x < 0.0", "x = 0",
    "x = -0.0", "x != 0.0", "x <> 1", "NOT (x > 0)", "x IS NULL", "x IS NOT NULL",
    "x = CAST('NaN' AS DOUBLE)", "x = CAST('-NaN' AS DOUBLE)", "x > CAST('NaN' AS DOUBLE)",
    "x < CAST('NaN' AS DOUBLE)", "x < CAST('-NaN' AS DOUBLE)",
    "x >= CAST('-NaN' AS DOUBLE)", "x > CAST('inf' AS DOUBLE)", "x < CAST('-inf' AS DOUBLE)",
    "isnan(x)", "x IN (0.0)", "x IN (-0.0, 1.0)", "x IN (CAST('NaN' AS DOUBLE))",
    "x NOT IN (0.0)", "x BETWEEN -0.0 AND 0.0", "x BETWEEN -1 AND 1",
    "x NOT BETWEEN -1 AND 1", "x > 1e308", "-x > 0", "x * 1 < 0", "x * 1 = 0.0",
    "x + 0 > 0", "x = x", "x != x", "x = y", "x < y", "x > y", "x <= y", "x IN (y)",
    "x IN (y, 1.0)", "NOT x IN (y)", "x < y OR x >= y", "x > 0 IS TRUE",
    "f > 0", "f < 0", "f = 0", "f < 0.1", "f > CAST(0.1 AS DOUBLE)",
    "f = CAST('NaN' AS FLOAT)", "h > 0", "h < 0", "h = -0.0", "h < 0.1",
    "s.a > 0", "s.a < 0", "s.a = 0", "x > 0 AND abs(i) >= 0", "x < 0 AND abs(i) >= 0",
    "x / 0 > 0", "x / 0 < 0", "x % 2 > 0", "x % 0 < 0", "i % 3 = -1", "i % -1 = 0",
]


@pytest.mark.parametrize("sql", FILTERS)
def test_filters_answer_as_pylance(special, sql):
    ours, theirs = special
    want = theirs.to_table(filter=sql).column("name").to_pylist()
    assert ours.to_table(filter=sql).column("name").to_pylist() == want
    assert ours.count_rows(sql) == len(want)


@pytest.mark.parametrize("column", ["x", "f", "h"])
@pytest.mark.parametrize("ascending, nulls_first", [(True, False), (False, True),
                                                   (True, True), (False, False)])
def test_order_by_is_pylance_total_order(special, column, ascending, nulls_first):
    ours, theirs = special
    order = [ColumnOrdering(column, ascending, nulls_first)]
    want = theirs.to_table(order_by=order).column("name").to_pylist()
    if column != "x":  # (narrower types merge payloads: compare the values' bits)
        want = _bits(theirs.to_table(order_by=order).column(column))
        assert _bits(ours.to_table(order_by=order).column(column)) == want
    else:
        assert ours.to_table(order_by=order).column("name").to_pylist() == want


def _bits(col: pa.ChunkedArray) -> list:
    width = col.type.bit_width
    out = []
    for chunk in col.chunks:
        raw = np.frombuffer(chunk.buffers()[1], {16: np.uint16, 32: np.uint32}[width],
                            count=len(chunk), offset=chunk.offset * width // 8)
        out += [None if not ok else int(b) for b, ok in zip(raw, chunk.is_valid().to_pylist())]
    return out


@pytest.mark.parametrize("predicate", ["x < 0", "x > 0", "x = CAST('NaN' AS DOUBLE)",
                                       "x != 1"])
def test_delete_predicates_as_pylance(tmp_path, predicate):
    t = _special_table().drop_columns(["s"])
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    lancenb.write_dataset(t, a)
    lance.write_dataset(t, b)
    ours = lancenb.dataset(a)
    ours.delete(predicate)
    lance.dataset(b).delete(predicate)
    assert (ours.to_table().column("name").to_pylist()
            == lance.dataset(b).to_table().column("name").to_pylist())


def test_regression_negative_nan_sorted_above_numbers(tmp_path):
    """Before: -NaN passed x > 0 and failed x < 0 (lancenb put every NaN on top)."""
    x = np.array([BITS["mnan"], BITS["one"]], np.uint64).view(np.float64)
    uri = str(tmp_path / "d")
    lancenb.write_dataset(pa.table({"x": x}), uri)
    got = lancenb.dataset(uri).to_table(filter="x < 0").column("x").to_numpy()
    assert got.view(np.uint64).tolist() == [BITS["mnan"]]
    assert lancenb.dataset(uri).count_rows("x > 0") == 1


# ------------------------------------------------------------------- statistics, pruning


def _pages_table() -> pa.Table:
    """Three statistics pages: numbers in [0, 1] and -NaN; numbers in [5, 6] and +NaN;
    numbers in [10, 11] only."""
    n = DEFAULT_ROWS_PER_PAGE
    rng = np.random.default_rng(7)
    pages = [rng.random(n), 5 + rng.random(n), 10 + rng.random(n)]
    pages[0][::997] = np.array([BITS["mnan_p1"]], np.uint64).view(np.float64)[0]
    pages[1][::991] = np.nan
    return pa.table({"id": np.arange(3 * n), "x": np.concatenate(pages)})


@pytest.fixture(scope="module")
def paged(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("pages") / "ds")
    lancenb.write_dataset(_pages_table(), uri)
    return uri


def test_statistics_count_nans_by_sign(paged):
    _, stats = lancenb.dataset(paged).get_fragments()[0].page_stats()
    x = stats["x"]
    assert [s.negative_nan_count > 0 for s in x] == [True, False, False]
    assert [s.nan_count - s.negative_nan_count > 0 for s in x] == [False, True, False]
    assert 0 <= x[0].min and x[0].max <= 1  # min/max still ignore NaN (the spec)


@pytest.mark.parametrize("sql, skipped", [
    ("x < -1", 2),  # page 0 holds -NaN: read; pages 1, 2 skipped
    ("x > 20", 2),  # page 1 holds +NaN: read
    ("x > 7", 1), ("x < 2", 2), ("x != 3", 0), ("x = 3", 3), ("x <= 5.5", 1),
    ("NOT (x >= 0.5)", 2),
])
def test_pruning_keeps_pages_whose_nans_match(paged, sql, skipped):
    sc = lancenb.dataset(paged).scanner(filter=sql, columns=["id"])
    got = sc.to_table().column("id").to_pylist()
    assert got == lance.dataset(paged).to_table(filter=sql, columns=["id"]) \
        .column("id").to_pylist()
    assert sc.pages_skipped == skipped


@pytest.mark.parametrize("sql, expected", [
    ("x < -5", True), ("x <= -5", True), ("x > 5", True), ("x >= 5", True),
    ("x != 1", True), ("NOT (x >= -5)", True), ("x = 5", True), ("x IN (5, 7)", True),
    ("x = CAST('NaN' AS DOUBLE)", True), ("x IS NULL", False),
])
def test_float_statistics_without_nan_counts_prune_no_value_test(sql, expected):
    # statistics written before the NaN counts (lancenb files of older versions): a
    # NaN may hide outside min/max, and a signalling NaN made fmin/fmax drop values
    old = {"x": ColumnStats(num_rows=4, null_count=0, min=0.0, max=1.0)}
    assert compile_filter(sql, pa.schema([("x", pa.float64())])).may_match(old) is expected


@pytest.mark.parametrize("with_null", [False, True], ids=["numpy", "arrow"])
def test_regression_signalling_nan_hid_a_value_from_the_statistics(tmp_path, with_null):
    """Before: fmin/fmax (numpy's and Arrow's min_max) gave [0.0, sNaN, 1.0] the bounds
    [1.0, 1.0], so x = 0 skipped the page holding 0.0."""
    snan = np.array([0x7FF0000000000001], np.uint64).view(np.float64)[0]
    values = [0.0, snan, 1.0] + ([None] if with_null else [])
    x = pa.array(np.array([0.0 if v is None else v for v in values]),
                 mask=np.array([v is None for v in values]))
    uri = str(tmp_path / "d")
    lancenb.write_dataset(pa.table({"x": x}), uri)
    _, stats = lancenb.dataset(uri).get_fragments()[0].page_stats()
    assert (stats["x"][0].min, stats["x"][0].max, stats["x"][0].nan_count) == (-0.0, 1.0, 1)
    assert lancenb.dataset(uri).count_rows("x = 0") == 1


@pytest.mark.parametrize("sql, nans, negative, expected", [
    ("x < -5", 0, 0, False), ("x < -5", 1, 0, False), ("x < -5", 1, 1, True),
    ("x > 5", 1, 1, False), ("x > 5", 2, 1, True), ("x != 1", 1, 1, True),
    ("x >= 0.0", 0, 0, True), ("x < -0.0", 0, 0, False), ("x <= -0.0", 0, 0, True),
])
def test_may_match_with_nan_counts(sql, nans, negative, expected):
    st = {"x": ColumnStats(num_rows=4, null_count=0, min=0.0, max=1.0, nan_count=nans,
                           negative_nan_count=negative)}
    assert compile_filter(sql, pa.schema([("x", pa.float64())])).may_match(st) is expected


# ------------------------------------------------------------------- remainder (issue 37)


@pytest.fixture(scope="module")
def numbers(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("rem") / "ds")
    t = pa.table({
        "i": pa.array([7, -7, 7, -7, 0, -2**63, None], pa.int64()),
        "j": pa.array([3, 3, -3, -3, 5, -1, 2], pa.int64()),
        "u": pa.array([7, 200, 5, 0, 1, 2, 3], pa.uint8()),
        "g": [5.5, -5.5, 5.5, math.inf, 1e300, -0.0, None],
        "k": [2.0, 2.0, -2.0, 2.0, 3e-300, 1.0, 1.0],
    })
    lancenb.write_dataset(t, uri)
    return uri


REMAINDERS = ["i % j = 1", "i % j = -1", "i % j = 0", "i % 2 = -1", "i % -1 = 0",
              "u % 3 = 2", "g % k > 1", "g % k < 0", "g % 2 = 1.5", "g % 0 > 0",
              "g % 0 < 0", "i % 4 + 1 = 0"]


@pytest.mark.parametrize("native", [True, False], ids=["pc.remainder", "no-remainder"])
@pytest.mark.parametrize("sql", REMAINDERS)
def test_remainder_as_pylance_with_or_without_pyarrow_remainder(numbers, sql, native,
                                                                monkeypatch):
    if not native:  # pyarrow 16-25 have no remainder function
        monkeypatch.setattr(exprnodes, "_NATIVE_REMAINDER", None)
    want = lance.dataset(numbers).to_table(filter=sql, columns=["j"]).column("j").to_pylist()
    got = lancenb.dataset(numbers).to_table(filter=sql, columns=["j"]).column("j").to_pylist()
    assert got == want


def test_remainder_never_calls_remainder_checked(monkeypatch):
    import pyarrow.compute as pc

    monkeypatch.delattr(pc, "remainder_checked", raising=False)
    monkeypatch.setattr(exprnodes, "_NATIVE_REMAINDER", None)
    t = pa.table({"i": pa.array([7, -7, None], pa.int32())})
    f = compile_filter("i % 4 = -3", t.schema)
    assert f.expression is not None  # (pyarrow.compute, not the engine)
    assert f.positions(t).tolist() == [1]


@pytest.mark.parametrize("sql", ["i % 0 = 1", "u % 0 = 1"])
def test_integer_remainder_by_zero_raises_as_pylance(numbers, sql):
    with pytest.raises(ValueError):
        lance.dataset(numbers).to_table(filter=sql)
    with pytest.raises(InvalidInputError, match="(?i)divide by zero"):
        lancenb.dataset(numbers).to_table(filter=sql)


@pytest.mark.parametrize("sql", [
    "h < CAST('NaN' AS DOUBLE)", "h > CAST('-NaN' AS DOUBLE)", "h = CAST('NaN' AS DOUBLE)",
    "h = f", "h < f", "h > f", "h = x", "h < x", "h IN (CAST('NaN' AS DOUBLE))",
    "h IN (0.0, CAST('-NaN' AS DOUBLE))", "h > 0", "h < 0", "h = 0",
])
def test_float16_compares_widened_to_float32_as_pylance(tmp_path, sql):
    """pylance compares float16 values as float32 (a signalling NaN quieted, its
    payload kept) but sorts them by their own bits."""
    h = np.array([0x7E00, 0x7C01, 0x7D00, 0xFC01, 0xFE00, 0, 0x8000, 0x3C00],
                 np.uint16).view(np.float16)
    f = np.array([0x7FC00000, 0x7FC02000, 0x7F800001, 0xFFC00000, 0xFFC02000, 0x80000000,
                  0, 0x3F800000], np.uint32).view(np.float32)
    with np.errstate(invalid="ignore"):  # (the signalling NaN)
        x = f.astype(np.float64)
    uri = str(tmp_path / "d")
    lancenb.write_dataset(pa.table({"i": list(range(8)), "h": pa.array(h), "f": pa.array(f),
                                    "x": pa.array(x)}), uri)
    want = lance.dataset(uri).to_table(filter=sql).column("i").to_pylist()
    assert lancenb.dataset(uri).to_table(filter=sql).column("i").to_pylist() == want
    order = [ColumnOrdering("h", True, False)]
    assert (lancenb.dataset(uri).to_table(order_by=order).column("i").to_pylist()
            == lance.dataset(uri).to_table(order_by=order).column("i").to_pylist())


@pytest.mark.parametrize("sql", [
    "f = 5e-324", "NOT (f = 5e-324)", "f != 5e-324", "NOT (f != 5e-324)", "f = 1.00000001",
    "NOT (f = 1.00000001)", "f > 0.99999999", "NOT (f > 0.99999999)",
    "NOT ((f = 5e-324) AND (x < 5))", "f NOT IN (1.00000001)", "NOT (f IN (1.00000001))",
    "f NOT BETWEEN 1.00000001 AND 2", "NOT (f BETWEEN 1.00000001 AND 2)",
    "NOT NOT (f = 1.00000001)", "(f = 1.00000001) IS TRUE", "f = -3.4028235677973366e38",
])
def test_literals_rounded_to_float32_columns_except_under_not(tmp_path, sql):
    """pylance rounds a literal to a float32 column's type in comparisons reached
    through AND/OR (and NOT IN / NOT BETWEEN), not under NOT (...) or IS TRUE."""
    uri = str(tmp_path / "d")
    f = pa.array([0.0, 1.0, -math.inf], pa.float32())
    lancenb.write_dataset(pa.table({"i": [0, 1, 2], "f": f, "x": [0.0, 1.0, 2.0]}), uri)
    want = lance.dataset(uri).to_table(filter=sql).column("i").to_pylist()
    assert lancenb.dataset(uri).to_table(filter=sql).column("i").to_pylist() == want


@pytest.mark.parametrize("where", ["x < 0", "x > 0", "x = CAST('-NaN' AS DOUBLE)"])
def test_update_predicates_as_pylance(tmp_path, where):
    t = _special_table().drop_columns(["s"])
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    lancenb.write_dataset(t, a)
    lance.write_dataset(t, b)
    lancenb.dataset(a).update({"i": "100"}, where=where)
    lance.dataset(b).update({"i": "100"}, where=where)
    assert (lancenb.dataset(a).to_table(columns=["name", "i"]).sort_by("name")
            == lance.dataset(b).to_table(columns=["name", "i"]).sort_by("name"))
