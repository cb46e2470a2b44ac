"""Property: float filters and order_by answer as pylance does.

Floats drawn with every kind of NaN (both signs, quiet and signalling, any payload),
+-0, +-inf, subnormals and nulls, spread over several fragments (each its own
statistics page, so pruning takes part); random comparisons (with literals, between
columns, BETWEEN, IN, NOT, AND/OR) and order_by. lancenb's rows == pylance's rows on
the same dataset, written by either library.
"""

from __future__ import annotations

import struct
import tempfile

import lance
import numpy as np
import pyarrow as pa
from budget import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from lance.dataset import ColumnOrdering

import lancenb


def _from_bits(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


_NANS = st.builds(lambda sign, quiet, payload: _from_bits(
    (sign << 63) | (0x7FF << 52) | (quiet << 51) | payload),
    st.integers(0, 1), st.integers(0, 1), st.integers(1, (1 << 51) - 1))
_SPECIAL = st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, float("inf"), float("-inf"),
                            5e-324, -5e-324, 1.7976931348623157e308, float("nan"),
                            _from_bits(0xFFF8000000000000)])
_VALUES = st.one_of(_SPECIAL, _NANS, st.floats(allow_nan=True, allow_infinity=True),
                    st.none())
# literals: numbers as SQL text, the non-finite ones through CAST
_LITERALS = st.one_of(
    st.sampled_from(["0.0", "-0.0", "1.0", "-1.0", "0.5", "-2.5", "1e308", "-1e308",
                     "CAST('inf' AS DOUBLE)", "CAST('-inf' AS DOUBLE)",
                     "CAST('NaN' AS DOUBLE)", "CAST('-NaN' AS DOUBLE)", "3", "-3"]),
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr))
# float16 columns: literals float16 holds (pylance refuses one that overflows or
# underflows to zero, except under NOT; lancenb rounds it: not matched)
_H_LITERALS = st.sampled_from(["0.0", "-0.0", "1.0", "-1.0", "0.5", "-2.5", "3", "-3",
                               "0.1", "65504", "6e-08", "CAST('inf' AS DOUBLE)",
                               "CAST('-inf' AS DOUBLE)", "CAST('NaN' AS DOUBLE)",
                               "CAST('-NaN' AS DOUBLE)"])
_OPS = ["=", "!=", "<", "<=", ">", ">="]
_COLUMNS = ["x", "y", "f", "h"]


@st.composite
def _leaf(draw):
    col = draw(st.sampled_from(_COLUMNS))
    literals = _H_LITERALS if col == "h" else _LITERALS
    form = draw(st.sampled_from(["lit", "lit", "lit", "col", "between", "in", "null"]))
    if form == "lit":
        return f"{col} {draw(st.sampled_from(_OPS))} {draw(literals)}"
    if form == "col":
        return f"{col} {draw(st.sampled_from(_OPS))} {draw(st.sampled_from(_COLUMNS))}"
    if form == "between":
        neg = draw(st.sampled_from(["", "NOT "]))
        return f"{col} {neg}BETWEEN {draw(literals)} AND {draw(literals)}"
    if form == "in":
        items = draw(st.lists(literals, min_size=1, max_size=3))
        return f"{col} {draw(st.sampled_from(['', 'NOT ']))}IN ({', '.join(items)})"
    return f"{col} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"


_PREDICATES = st.recursive(
    _leaf(),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(
            lambda t: f"({t[0]}) {t[1]} ({t[2]})"),
        inner.map(lambda p: f"NOT ({p})")),
    max_leaves=3)


@st.composite
def _tables(draw):
    n = draw(st.integers(1, 24))
    x = draw(st.lists(_VALUES, min_size=n, max_size=n))
    y = draw(st.lists(_VALUES, min_size=n, max_size=n))

    def column(values):  # (built from the bits: a Python float keeps its NaN payload)
        bits = [0 if v is None else struct.unpack("<Q", struct.pack("<d", v))[0]
                for v in values]
        return pa.array(np.array(bits, np.uint64).view(np.float64),
                        mask=np.array([v is None for v in values]))

    xs = column(x)
    return pa.table({"id": pa.array(range(n), pa.int64()), "x": xs, "y": column(y),
                     "f": xs.cast(pa.float32()), "h": xs.cast(pa.float16())})


def _bits(col: pa.ChunkedArray) -> list:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    width = arr.type.bit_width
    raw = np.frombuffer(arr.buffers()[1], {16: np.uint16, 32: np.uint32, 64: np.uint64}[width],
                        count=len(arr), offset=arr.offset * width // 8) if len(arr) else []
    return [int(b) if ok else None for b, ok in zip(raw, arr.is_valid().to_pylist())]


@fuzz_settings()
@given(table=_tables(), sqls=st.lists(_PREDICATES, min_size=1, max_size=4),
       rows_per_file=st.integers(1, 8), pylance_writes=st.booleans(),
       order=st.tuples(st.sampled_from(_COLUMNS), st.booleans(), st.booleans()))
def test_float_filters_and_order_by_match_pylance(table, sqls, rows_per_file,
                                                  pylance_writes, order):
    with tempfile.TemporaryDirectory() as tmp:
        uri = f"{tmp}/ds"
        (lance if pylance_writes else lancenb).write_dataset(
            table, uri, max_rows_per_file=rows_per_file)
        ours, theirs = lancenb.dataset(uri), lance.dataset(uri)
        for sql in sqls:
            try:
                want = theirs.to_table(filter=sql, columns=["id"]).column("id").to_pylist()
            except ValueError:  # (pylance refuses a literal float16 cannot hold: not
                continue        # matched, lancenb compares it rounded, as +-inf)
            got = ours.to_table(filter=sql, columns=["id"]).column("id").to_pylist()
            assert sorted(got) == sorted(want), sql
            assert ours.count_rows(sql) == len(want), sql
        col, asc, nulls_first = order
        ordering = [ColumnOrdering(col, asc, nulls_first)]
        want = _bits(theirs.to_table(order_by=ordering, columns=[col]).column(col))
        got = _bits(ours.to_table(order_by=ordering, columns=[col]).column(col))
        assert got == want, ordering
