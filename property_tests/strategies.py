"""Hypothesis strategies for Arrow schemas and data that lancenb stores.

Types: every flat type lancenb writes, and struct / list / large_list nesting to
depth 3 (fixed-size lists join when the writer supports them, see
:func:`supported_extras`). Data leans on the edges: nulls everywhere, empty strings
and lists, the extremes of every integer type, NaN with payloads, -0.0 and
infinities, non-ASCII text and zero bytes, long values (full-zip pages), single rows
and row counts that span several pages with a small page budget.
"""

from __future__ import annotations

import decimal
import functools
import struct

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(),
             pa.uint32(), pa.uint64()]
FLAT_TYPES = INT_TYPES + [
    pa.float16(), pa.float32(), pa.float64(), pa.bool_(), pa.string(), pa.large_string(),
    pa.binary(), pa.large_binary(), pa.date32(), pa.date64(), pa.timestamp("us"),
    pa.timestamp("ns", "UTC"), pa.timestamp("s", "America/New_York"), pa.time32("ms"),
    pa.time64("us"), pa.duration("ms"), pa.decimal128(18, 2), pa.binary(16), pa.binary(3),
]

# values small enough that a row of a nested column stays a few KiB; long strings
# are rare but present (they push a page into full-zip)
_TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", "a", "héllo wörld", "日本語", "zero\x00byte", "🎉" * 3]),
    st.text(alphabet="abc", min_size=300, max_size=700),
)
_BYTES = st.one_of(st.binary(max_size=12), st.binary(min_size=256, max_size=600),
                   st.just(b""), st.just(b"\x00" * 5))


def _int_values(t: pa.DataType):
    bits = t.bit_width
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if pa.types.is_signed_integer(t) \
        else (0, (1 << bits) - 1)
    return st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, 0, 1, lo + 1, hi - 1]))


def _float64():
    payload_nans = st.integers(1, (1 << 51) - 1).map(
        lambda p: struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000 | p))[0])
    return st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                     st.sampled_from([0.0, -0.0, float("inf"), float("-inf"), float("nan")]),
                     payload_nans)


@functools.lru_cache(maxsize=None)
def values_for(t: pa.DataType):
    """A strategy for one (non-null) Python value of type ``t``."""
    if pa.types.is_integer(t):
        return _int_values(t)
    if pa.types.is_float16(t):
        return st.floats(width=16, allow_nan=True)
    if pa.types.is_float32(t):
        return st.floats(width=32, allow_nan=True, allow_infinity=True)
    if pa.types.is_float64(t):
        return _float64()
    if pa.types.is_boolean(t):
        return st.booleans()
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _TEXT
    if pa.types.is_fixed_size_binary(t):
        return st.binary(min_size=t.byte_width, max_size=t.byte_width)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return _BYTES
    if pa.types.is_date32(t):
        return st.integers(-(1 << 31), (1 << 31) - 1)
    if pa.types.is_date64(t):
        return st.integers(-10**7, 10**7).map(lambda d: d * 86_400_000)
    if pa.types.is_timestamp(t) or pa.types.is_duration(t) or pa.types.is_time64(t):
        if pa.types.is_time64(t):
            return st.integers(0, 86_400 * 10**6 - 1)
        return st.integers(-(1 << 63), (1 << 63) - 1)
    if pa.types.is_time32(t):
        return st.integers(0, 86_400_000 - 1)
    if pa.types.is_decimal(t):
        return st.integers(-(10**18) + 1, 10**18 - 1).map(
            lambda x: decimal.Decimal(x).scaleb(-t.scale))
    if pa.types.is_struct(t):
        return st.fixed_dictionaries({t.field(i).name: nullable(t.field(i).type)
                                      for i in range(t.num_fields)})
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return st.lists(nullable(t.value_type), max_size=4)
    if pa.types.is_fixed_size_list(t):
        return st.lists(nullable(t.value_type), min_size=t.list_size, max_size=t.list_size)
    raise NotImplementedError(str(t))


@functools.lru_cache(maxsize=None)
def nullable(t: pa.DataType):
    return st.one_of(st.none(), values_for(t))


def _needs_ints(t: pa.DataType) -> bool:
    return (pa.types.is_temporal(t) and not pa.types.is_date32(t)) or pa.types.is_date32(t)


def to_array(values: list, t: pa.DataType) -> pa.Array:
    """``values`` (Python objects, None = null) as an Arrow array of type ``t``."""
    if pa.types.is_float16(t):
        arr = np.array([0.0 if v is None else v for v in values], dtype=np.float16)
        return pa.array(arr, mask=np.array([v is None for v in values], dtype=bool), type=t)
    if _needs_ints(t):
        storage = pa.int32() if t.bit_width == 32 else pa.int64()
        return pa.array(values, storage).cast(t)
    return pa.array(values, type=t)


def supported_extras() -> list:
    """Types the writer gained after these strategies were written (probed once)."""
    import tempfile

    from lancenb.file import LanceFileWriter

    extras = []
    for t in (pa.list_(pa.float32(), 8), pa.list_(pa.int8(), 3)):
        try:
            with tempfile.TemporaryDirectory() as d:
                w = LanceFileWriter(f"{d}/p.lance", pa.schema([("v", t)]))
                w.write_batch(pa.table({"v": pa.array([[1] * t.list_size, None], t)}))
                w.close()
            extras.append(t)
        except Exception:
            pass
    return extras


@functools.lru_cache(maxsize=None)
def _flat_choices():
    return tuple(FLAT_TYPES + supported_extras())


def arrow_types(max_depth: int = 3):
    """Flat types, and struct/list/large_list of them nested up to ``max_depth``."""
    leaf = st.sampled_from(_flat_choices())

    def extend(children):
        names = st.sampled_from(["a", "b", "c", "x y", "ü"])
        struct_t = st.lists(st.tuples(names, children), min_size=1, max_size=3,
                            unique_by=lambda p: p[0]).map(
            lambda fs: pa.struct([pa.field(n, t) for n, t in fs]))
        return st.one_of(struct_t, children.map(pa.list_), children.map(pa.large_list))
    return st.recursive(leaf, extend, max_leaves=4).filter(lambda t: _depth(t) <= max_depth)


def _depth(t: pa.DataType) -> int:
    if pa.types.is_struct(t):
        return 1 + max(_depth(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return 1 + _depth(t.value_type)
    return 0


@st.composite
def tables(draw, max_columns: int = 3, max_rows: int = 60, nested: bool = True):
    """A pa.Table of 1..max_columns columns (names unique) and 0..max_rows rows."""
    types = arrow_types() if nested else st.sampled_from(_flat_choices())
    n_cols = draw(st.integers(1, max_columns))
    col_types = draw(st.lists(types, min_size=n_cols, max_size=n_cols))
    n = draw(st.one_of(st.integers(0, max_rows), st.just(1)))
    cols = {}
    for i, t in enumerate(col_types):
        nulls_ok = draw(st.booleans())
        strat = nullable(t) if nulls_ok else values_for(t)
        vals = draw(st.lists(strat, min_size=n, max_size=n))
        cols[f"c{i}"] = to_array(vals, t)
    return pa.table(cols)
