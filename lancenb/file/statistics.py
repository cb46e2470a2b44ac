"""Page statistics in data files, for skipping rows a filter cannot match.

Spec (seed 001, "Statistics"): per column a null count, a lower bound (min) and an
upper bound (max), stored in Lance's own columnar form with the schema::

    "<field id>": struct<null_count: int64, min_value: T, max_value: T>

one row per statistics page. Lance 2.x pages are not aligned across columns, so
lancenb defines a statistics page as a fixed range of rows (``rows_per_page``, 64 Ki
by default): row ``k`` describes rows ``[k * rows_per_page, (k + 1) * rows_per_page)``
of the data file for every column. The table is an Arrow IPC stream in a global
buffer of the data file, found through the file's schema metadata key
``lancenb:statistics`` (JSON ``{"version": 1, "global_buffer": i, "rows_per_page": n}``).
pylance ignores both the buffer and the key, so its reads stay exact; files without
them (pylance's) are simply never pruned.

The value rules (NaN ignored, signed zeros, sentinels for all-null pages, truncated
string bounds) are :func:`compute_stats`'s. Float columns' structs carry two more
fields, ``nan_count: int64`` (NaNs of either sign) and ``negative_nan_count: int64``
(those with the sign bit set): the spec's min and max ignore NaN, and pylance's total
order places -NaN below -inf and NaN above +inf, so pruning
(:mod:`lancenb.expr.pruning`) skips a page on a ``<`` test only when it holds no
-NaN and on a ``>`` test only when it holds no +NaN. Files written before these fields
are never pruned on tests a NaN could pass. Readers that do not know the fields
ignore them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from lancenb.encodings.nptypes import numpy_dtype
from lancenb.errors import CorruptFileError
from lancenb.kernels import stats_rows as kstats_rows
from lancenb.kernels import variable as kvariable

__all__ = ["StatsCollector", "read_file_stats", "STATS_KEY", "DEFAULT_ROWS_PER_PAGE",
           "ColumnStats", "compute_stats", "BINARY_STATS_PREFIX"]

STATS_KEY = "lancenb:statistics"
#: the float columns' statistics fields counting NaNs, and those of them with the sign
#: bit set (absent from older files)
NAN_COUNT, NEGATIVE_NAN_COUNT = "nan_count", "negative_nan_count"
DEFAULT_ROWS_PER_PAGE = 64 * 1024


#: Longest string/binary min or max kept by :func:`compute_stats` (in characters for
#: strings, bytes for binary); longer bounds are truncated as the spec allows.
BINARY_STATS_PREFIX = 64


@dataclass(frozen=True, kw_only=True)
class ColumnStats:
    """Statistics of one column over a page or fragment.

    ``min``/``max`` are Python scalars (``pyarrow`` scalars for temporal types, whose
    values may lie outside Python's datetime range; ``None`` when unknown) bounding every
    non-null value; they need not occur in the data (truncated strings, deleted rows).
    ``null_count`` is ``None`` when unknown; ``nan_count`` (floats: NaNs of either
    sign, which ``min``/``max`` ignore) and ``negative_nan_count`` (those with the sign
    bit set) are ``None`` when unknown. Keys of the ``stats``
    mappings passed to :func:`may_match` are field paths joined by ``"."`` (``"a.b"``
    for struct field b); a struct field's statistics must count a null parent as null
    (``pc.struct_field(column, "b")``, not ``StructArray.field("b")``).
    """

    num_rows: int
    null_count: int | None = None
    min: Any = None
    max: Any = None
    nan_count: int | None = None
    negative_nan_count: int | None = None


def _truncate_min(value: Any, limit: int) -> Any:
    return value[:limit]


def _truncate_max(value: Any, limit: int) -> Any:
    """The shortest bound ≥ ``value`` of at most ``limit`` units, or None if none exists:
    the prefix with its last incrementable unit incremented."""
    if len(value) <= limit:
        return value
    prefix = value[:limit]
    if isinstance(value, str):
        codes = [ord(c) for c in prefix]
        while codes:
            c = codes.pop() + 1
            c = 0xE000 if 0xD800 <= c <= 0xDFFF else c  # skip surrogates
            if c <= 0x10FFFF:
                return "".join(map(chr, codes)) + chr(c)
        return None
    data = bytearray(prefix)
    while data:
        last = data.pop() + 1
        if last <= 0xFF:
            return bytes(data) + bytes([last])
    return None


def _physical(array: pa.Array | pa.ChunkedArray) -> pa.ChunkedArray:
    """A temporal column as the integers it stores (no Python datetime conversion, which
    overflows beyond year 9999 and has no kernel for durations)."""
    typ = array.type
    int_t = pa.int32() if typ.bit_width == 32 else pa.int64()
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    return pa.chunked_array([c.view(int_t) for c in chunks], int_t)


def _temporal_scalar(value: int, typ: pa.DataType) -> pa.Scalar:
    int_t = pa.int32() if typ.bit_width == 32 else pa.int64()
    return pa.array([value], int_t).view(typ)[0]


def compute_stats(array: pa.Array | pa.ChunkedArray, *,
                  max_binary_length: int = BINARY_STATS_PREFIX) -> ColumnStats:
    """Null count and min/max bounds of ``array`` following the spec's "Statistics".

    Computed by Arrow kernels on the physical values: temporal types (timestamps,
    dates, times, durations) on the integers they store, their bounds returned as
    ``pyarrow`` scalars of the column's type (any int64 value, also beyond year 9999);
    float16 through float32 (exact). NaN is ignored (and counted in ``nan_count``); a
    zero max is recorded as +0.0 and a zero min as -0.0; with no non-NaN value floats
    get -inf/+inf and integers the type's limits. Strings and binary (not fixed-size)
    longer than ``max_binary_length`` get a truncated min and an incremented truncated
    max (None when no such bound exists). Types without an order (lists, structs, ...)
    get ``min = max = None``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> st = compute_stats(pa.array([2**63 - 1, None, -2**63], pa.timestamp("ns")))
    >>> st.null_count, st.min.value, st.max.value
    (1, -9223372036854775808, 9223372036854775807)
    """
    typ = array.type
    if pa.types.is_dictionary(typ):
        array = array.cast(typ.value_type)
        typ = typ.value_type
    num_rows, null_count = len(array), array.null_count
    if _stat_type(typ) is None:
        return ColumnStats(num_rows=num_rows, null_count=null_count)
    lo = hi = None
    if pa.types.is_temporal(typ):
        if null_count < num_rows:
            mm = pc.min_max(_physical(array))
            lo = _temporal_scalar(mm["min"].as_py(), typ)
            hi = _temporal_scalar(mm["max"].as_py(), typ)
        return ColumnStats(num_rows=num_rows, null_count=null_count, min=lo, max=hi)
    if pa.types.is_float16(typ):
        array = array.cast(pa.float32())  # every float16 is a float32; no float16 kernel
    nans = negative = 0
    if pa.types.is_floating(typ):
        nans, negative = _nan_counts(array)
        if nans:  # NaN as null: min_max (fmin) loses values next to a signalling NaN
            array = pc.if_else(pc.is_nan(array), pa.scalar(None, array.type), array)
    if null_count < num_rows:
        mm = pc.min_max(array)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
    if pa.types.is_floating(typ):
        if lo is None or math.isnan(lo):
            lo, hi = -math.inf, math.inf
        lo = -0.0 if lo == 0 else lo
        hi = 0.0 if hi == 0 else hi
        return ColumnStats(num_rows=num_rows, null_count=null_count, min=lo, max=hi,
                           nan_count=nans, negative_nan_count=negative)
    elif pa.types.is_integer(typ) and lo is None:
        bits, signed = typ.bit_width, pa.types.is_signed_integer(typ)
        lo = -(1 << (bits - 1)) if signed else 0
        hi = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    elif lo is not None and not pa.types.is_fixed_size_binary(typ) and (
            isinstance(lo, (str, bytes))):
        lo, hi = _truncate_min(lo, max_binary_length), _truncate_max(hi, max_binary_length)
    return ColumnStats(num_rows=num_rows, null_count=null_count, min=lo, max=hi)


def _nan_counts(array: pa.Array | pa.ChunkedArray) -> tuple[int, int]:
    """``(NaNs, NaNs with the sign bit set)`` among the valid values of a float array."""
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    nans = negative = 0
    for c in chunks:
        v = c.fill_null(0).to_numpy(zero_copy_only=False) if c.null_count else c.to_numpy(
            zero_copy_only=False)
        isnan = np.isnan(v)
        nans += int(isnan.sum())
        negative += int((isnan & np.signbit(v)).sum())
    return nans, negative


def _bounds_array(values: list, typ: pa.DataType) -> pa.Array:
    """One statistics column (min or max per page) of type ``typ``, built without
    converting temporal bounds to Python objects."""
    if pa.types.is_temporal(typ):
        int_t = pa.int32() if typ.bit_width == 32 else pa.int64()
        ints = [None if v is None else v.value for v in values]
        return pa.array(ints, int_t).view(typ)
    if pa.types.is_float16(typ):
        return pa.array(values, pa.float64()).cast(typ)  # exact: the bounds are float16s
    return pa.array(values, typ)


def _stat_type(t: pa.DataType) -> pa.DataType | None:
    """``t`` (a dictionary's value type) if its values have an order, else None."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_interval(t):
        return None
    if (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t)
            or pa.types.is_boolean(t) or pa.types.is_decimal(t) or pa.types.is_string(t)
            or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)):
        return t
    return None


def _stats_struct(rows: list, t: pa.DataType, st: pa.DataType) -> pa.StructArray:
    """The statistics rows (:class:`ColumnStats`) of one or more columns of type ``t``
    as a ``struct<null_count, min_value, max_value[, nan_count, negative_nan_count]>``
    array of type ``st``."""
    parts = [pa.array([r.null_count for r in rows], pa.int64()),
             _bounds_array([r.min for r in rows], t), _bounds_array([r.max for r in rows], t)]
    if pa.types.is_floating(t):
        parts += [pa.array([r.nan_count for r in rows], pa.int64()),
                  pa.array([r.negative_nan_count for r in rows], pa.int64())]
    return pa.StructArray.from_arrays(parts, fields=list(st))


# Arrow types whose statistics numpy computes as compute_stats does, when nothing is
# null: integers (exact) and float32/float64 (NaN skipped; all-NaN, signed zeros: the
# same rules applied after)
_NUMPY_STATS = {t: numpy_dtype(t) for t in
                (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(),
                 pa.uint32(), pa.uint64(), pa.float32(), pa.float64())}


_STACK_BYTES = 2 * 1024 * 1024


def _plain_stats(t: pa.DataType, cols: list) -> list[ColumnStats]:
    """:func:`compute_stats` of null-free columns of the number type ``t``
    (``cols``: ``(field id, chunks)`` pairs), several columns per numpy call."""
    by_len: dict = {}
    for k, (_, chunks) in enumerate(cols):
        vals = (chunks[0].to_numpy(zero_copy_only=False) if len(chunks) == 1 else
                np.concatenate([c.to_numpy(zero_copy_only=False) for c in chunks]))
        by_len.setdefault(len(vals), []).append((k, vals))
    out: list = [None] * len(cols)
    floating = pa.types.is_floating(t)
    for n, items in by_len.items():
        if n == 0:
            for k, _ in items:
                out[k] = compute_stats(pa.chunked_array(cols[k][1], t))
            continue
        # at most about _STACK_BYTES of values copied at once
        step = max(1, _STACK_BYTES // (n * items[0][1].itemsize))
        lo, hi, nans, negative = [], [], [], []
        for s in range(0, len(items), step):
            part = items[s:s + step]
            # (one column: a view, not a copy)
            m = part[0][1][None, :] if len(part) == 1 else np.stack([v for _, v in part])
            if floating and (isnan := np.isnan(m)).any():
                # (not fmin/fmax: next to a signalling NaN they drop the other operand,
                # fmin([0.0, sNaN, 1.0]) is 1.0)
                nans += isnan.sum(axis=1).tolist()
                negative += (isnan & np.signbit(m)).sum(axis=1).tolist()
                lo += np.where(isnan, np.inf, m).min(axis=1).tolist()
                hi += np.where(isnan, -np.inf, m).max(axis=1).tolist()
                continue
            nans += [0] * len(part)
            negative += [0] * len(part)
            lo += m.min(axis=1).tolist()
            hi += m.max(axis=1).tolist()
        for j, ((k, _), a, b) in enumerate(zip(items, lo, hi)):
            if floating:
                if nans[j] == n:  # (no number: the spec's sentinels)
                    a, b = -math.inf, math.inf
                a = -0.0 if a == 0 else a
                b = 0.0 if b == 0 else b
            out[k] = ColumnStats(num_rows=n, null_count=0, min=a, max=b,
                                 nan_count=int(nans[j]) if floating else None,
                                 negative_nan_count=int(negative[j]) if floating else None)
    return out


# fixed-width columns whose bounds come from their bytes (_word_stats)
# rather than Arrow's min_max (per-page calls on decimals and fixed-size binary were
# most of a mixed table's statistics time); False: every such column through Arrow
WORD_STATS = True
# True: string and binary page statistics from one kernel pass over the bytes
# (_string_stats) rather than Arrow's min_max (a call per page and column)
STRING_STATS = True


def _ordered_keys(arr: pa.Array):
    """``(keys, signed_le)``: the values of ``arr`` as keys whose order is
    :func:`compute_stats`' order of the values, for
    :func:`kernels.stats_rows.lex_bounds`: a temporal type's stored integers (1-D,
    signed), a decimal's little-endian two's complement words (``signed_le``),
    fixed-size binary of whole 8-byte words read big-endian (byte order, unsigned
    word by word). None for other types."""
    typ, n = arr.type, len(arr)
    buf = arr.buffers()[1]
    if pa.types.is_temporal(typ) and not pa.types.is_interval(typ) and (
            typ.bit_width in (32, 64)):
        dt = np.dtype(np.int32 if typ.bit_width == 32 else np.int64)
        return np.frombuffer(buf, dt, count=n, offset=arr.offset * dt.itemsize), 1
    if pa.types.is_decimal(typ) and typ.bit_width in (128, 256):
        k = typ.bit_width // 64
        words = np.frombuffer(buf, np.uint64, count=n * k, offset=arr.offset * k * 8)
        return words.reshape(n, k), 1
    if pa.types.is_fixed_size_binary(typ) and typ.byte_width and typ.byte_width % 8 == 0:
        k = typ.byte_width // 8
        words = np.frombuffer(buf, ">u8", count=n * k, offset=arr.offset * k * 8)
        return words.reshape(n, k).astype(np.uint64), 0
    return None


def _word_stats(chunks: list) -> ColumnStats | None:
    """:func:`compute_stats` of one page of a temporal, decimal or fixed-size binary
    column, its bounds found over the values' bytes (:func:`_ordered_keys`: numpy for
    temporal pages without nulls, else one :func:`kernels.stats_rows.lex_bounds`
    pass), or None for a type this does not cover."""
    t = chunks[0].type
    if not (pa.types.is_temporal(t) or pa.types.is_decimal(t)
            or pa.types.is_fixed_size_binary(t)):
        return None
    arr = chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks)
    found = _ordered_keys(arr)
    if found is None:
        return None
    keys, signed_le = found
    n, nulls = len(arr), arr.null_count
    if nulls == n:
        return ColumnStats(num_rows=n, null_count=nulls)
    if keys.ndim == 1 and not nulls:
        lo, hi = int(keys.argmin()), int(keys.argmax())
    else:
        if keys.ndim == 1:
            keys = keys.astype(np.int64).view(np.uint64).reshape(n, 1)
        valid = (np.zeros(0, np.uint8) if not nulls else
                 arr.is_valid().to_numpy(zero_copy_only=False).view(np.uint8))
        out = np.empty(2, np.int64)
        if kstats_rows.lex_bounds(keys, signed_le, valid, out) != kstats_rows.OK:
            raise AssertionError("lex_bounds: shapes disagree")  # (they are ours)
        lo, hi = int(out[0]), int(out[1])
    lo, hi = arr[lo], arr[hi]
    if not pa.types.is_temporal(t):  # (temporal bounds stay pyarrow scalars)
        lo, hi = lo.as_py(), hi.as_py()
    return ColumnStats(num_rows=n, null_count=nulls, min=lo, max=hi)


def _string_stats(chunks: list) -> ColumnStats | None:
    """:func:`compute_stats` of one page of a string or binary column (32- or 64-bit
    offsets), its bounds found by one :func:`kernels.variable.value_bounds` pass over
    the bytes (the order of Arrow's ``min_max``: bytes unsigned, a prefix first), then
    truncated as :func:`compute_stats` does; None for other types."""
    t = chunks[0].type
    if pa.types.is_string(t) or pa.types.is_binary(t):
        width = np.int32
    elif pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        width = np.int64
    else:
        return None
    arr = chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks)
    n, nulls = len(arr), arr.null_count
    if nulls == n:
        return ColumnStats(num_rows=n, null_count=nulls)
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], width, count=n + 1, offset=arr.offset * width(0).nbytes)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    valid = (np.zeros(0, np.uint8) if not nulls else
             arr.is_valid().to_numpy(zero_copy_only=False).view(np.uint8))
    out = np.empty(2, np.int64)
    if kvariable.value_bounds(offsets, data, valid, out) != kvariable.OK:
        return None  # (buffers Arrow would not produce: left to compute_stats)
    lo, hi = arr[int(out[0])].as_py(), arr[int(out[1])].as_py()
    return ColumnStats(num_rows=n, null_count=nulls, min=_truncate_min(lo, BINARY_STATS_PREFIX),
                       max=_truncate_max(hi, BINARY_STATS_PREFIX))


class StatsCollector:
    """Accumulates one data file's statistics as batches are written."""

    def __init__(self, schema: pa.Schema, field_ids: list[int],
                 rows_per_page: int = DEFAULT_ROWS_PER_PAGE):
        self.rows_per_page = rows_per_page
        self.cols = [(i, f, fid, _stat_type(f.type)) for i, (f, fid) in
                     enumerate(zip(schema, field_ids)) if _stat_type(f.type) is not None]
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._rows: dict[int, list[ColumnStats]] = {fid: [] for _, _, fid, _ in self.cols}
        self._skip: set[int] = set()

    def add(self, batch: pa.RecordBatch) -> None:
        """Fold one batch's values into the per-page statistics."""
        pos = 0
        while pos < batch.num_rows:
            take = min(batch.num_rows - pos, self.rows_per_page - self._pending_rows)
            self._pending.append(batch.slice(pos, take))
            self._pending_rows += take
            pos += take
            if self._pending_rows == self.rows_per_page:
                self._flush()

    def _flush(self) -> None:
        if not self._pending_rows:
            return
        plain: dict = {}  # numpy dtype -> [(field id, values)] of columns without nulls
        for i, f, fid, _ in self.cols:
            if fid in self._skip:
                continue
            chunks = [b.column(i) for b in self._pending]
            if f.type in _NUMPY_STATS and not any(c.null_count for c in chunks):
                plain.setdefault(f.type, []).append((fid, chunks))
                continue
            if WORD_STATS and not pa.types.is_dictionary(f.type):
                st = _word_stats(chunks)
                if st is not None:
                    self._rows[fid].append(st)
                    continue
            if STRING_STATS and not pa.types.is_dictionary(f.type):
                st = _string_stats(chunks)
                if st is not None:
                    self._rows[fid].append(st)
                    continue
            arr = pa.chunked_array(chunks)
            try:
                self._rows[fid].append(compute_stats(arr))
            except (pa.ArrowException, OverflowError, ValueError, TypeError):
                # no min/max kernel for this type: no statistics (never a failed write)
                self._skip.add(fid)
        for t, cols in plain.items():
            for fid, st in zip((fid for fid, _ in cols), _plain_stats(t, cols)):
                self._rows[fid].append(st)
        self._pending, self._pending_rows = [], 0

    def finish(self) -> tuple[bytes, dict] | None:
        """``(IPC stream bytes, metadata dict without the buffer index)``, or None."""
        self._flush()
        if not any(self._rows[fid] for _, _, fid, _ in self.cols if fid not in self._skip):
            return None
        # columns of the same type: their statistics arrays are built together (a few
        # Arrow calls per type, not per column) and each column's struct wraps its slice
        groups: dict = {}
        for _, _f, fid, t in self.cols:
            if fid not in self._skip:
                groups.setdefault(t, []).append(fid)
        built = {}
        for t, fids in groups.items():
            st = _struct_type(t)
            children = list(st)
            parts = _group_arrays(t, [r for fid in fids for r in self._rows[fid]])
            if parts is None:  # bounds this type cannot hold: find the columns that fail
                for fid in fids:
                    try:
                        built[fid] = (_stats_struct(self._rows[fid], t, st), st)
                    except (pa.ArrowException, OverflowError, ValueError, TypeError):
                        pass  # leave the column out
                continue
            pos = 0
            for fid in fids:
                k = len(self._rows[fid])
                built[fid] = (pa.StructArray.from_arrays(
                    [a if len(fids) == 1 else a.slice(pos, k) for a in parts],
                    fields=children), st)
                pos += k
        arrays, fields = [], []
        for _, _f, fid, _t in self.cols:
            if fid in built:
                arr, st = built[fid]
                arrays.append(arr)
                fields.append(pa.field(str(fid), st))
        if not arrays:
            return None
        batch = pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))
        sink = pa.BufferOutputStream()
        with ipc.new_stream(sink, batch.schema) as w:
            w.write_batch(batch)
        return sink.getvalue().to_pybytes(), {"version": 1, "rows_per_page": self.rows_per_page}


_STRUCT_TYPES: dict = {}


def _struct_type(t: pa.DataType) -> pa.DataType:
    """``struct<null_count: int64, min_value: t, max_value: t>``, with ``nan_count``
    and ``negative_nan_count`` (int64) for floats (made once per type)."""
    st = _STRUCT_TYPES.get(t)
    if st is None:
        if len(_STRUCT_TYPES) > 256:
            _STRUCT_TYPES.clear()
        fields = [pa.field("null_count", pa.int64()), pa.field("min_value", t),
                  pa.field("max_value", t)]
        if pa.types.is_floating(t):
            fields += [pa.field(NAN_COUNT, pa.int64()), pa.field(NEGATIVE_NAN_COUNT, pa.int64())]
        st = _STRUCT_TYPES[t] = pa.struct(fields)
    return st


def _group_arrays(t: pa.DataType, rows: list) -> list | None:
    """``[null counts, minima, maxima]`` (and NaN counts for floats) of the statistics
    ``rows`` of columns of type ``t`` as Arrow arrays, or None when Arrow cannot hold a
    bound of ``t``."""
    nans = ([pa.array([r.nan_count for r in rows], pa.int64()),
             pa.array([r.negative_nan_count for r in rows], pa.int64())]
            if pa.types.is_floating(t) else [])
    try:
        if t in _NUMPY_STATS and all(r.min is not None and r.max is not None
                                     and r.null_count is not None for r in rows):
            # (numpy dtypes give t itself: no type passed, faster)
            return [pa.array(np.array([r.null_count for r in rows], np.int64)),
                    pa.array(np.array([r.min for r in rows], _NUMPY_STATS[t])),
                    pa.array(np.array([r.max for r in rows], _NUMPY_STATS[t]))] + nans
        return [pa.array([r.null_count for r in rows], pa.int64()),
                _bounds_array([r.min for r in rows], t),
                _bounds_array([r.max for r in rows], t)] + nans
    except (pa.ArrowException, OverflowError, ValueError, TypeError):
        return None


def read_file_stats(reader, where: str) -> tuple[int, dict[int, list[ColumnStats]]] | None:
    """``(rows_per_page, {field id: [ColumnStats per page]})`` of a data file, or None
    when it has no lancenb statistics."""
    md = reader.schema_full.metadata or {}
    raw = md.get(STATS_KEY.encode())
    if raw is None:
        return None
    try:
        info = json.loads(raw)
        gb, rpp = int(info["global_buffer"]), int(info["rows_per_page"])
    except (ValueError, KeyError, TypeError) as e:
        raise CorruptFileError(f"{where}: bad {STATS_KEY} metadata {raw!r}: {e}") from e
    if info.get("version") != 1:
        return None  # a future layout: ignore it rather than misread it
    if rpp <= 0:
        raise CorruptFileError(f"{where}: statistics rows_per_page {rpp}")
    data = reader.read_global_buffer(gb)
    try:
        table = ipc.open_stream(pa.BufferReader(data)).read_all()
        # (offsets within their buffers, strings UTF-8: converting a damaged stream to
        # Python objects raised IndexError, ArrowIndexError or UnicodeDecodeError)
        table.validate()
        for col in table.columns:
            for chunk in col.chunks:
                _validate_values(chunk)
    except (pa.ArrowException, OSError) as e:
        raise CorruptFileError(f"{where}: statistics buffer {gb} is not a valid Arrow "
                               f"stream: {e}") from e
    try:
        return rpp, _file_stats(table, reader.num_rows(), rpp, where)
    except (pa.ArrowException, UnicodeDecodeError, ValueError, OverflowError) as e:
        # (field names that are not UTF-8, bounds Python cannot hold, ...)
        raise CorruptFileError(f"{where}: statistics buffer {gb} cannot be read: "
                               f"{type(e).__name__}: {e}") from e


def _file_stats(table: pa.Table, num_rows: int, rpp: int, where: str):
    pages = -(-num_rows // rpp)
    out: dict[int, list[ColumnStats]] = {}
    for i, name in enumerate(table.schema.names):
        if not (name.isascii() and name.isdigit()):
            continue  # unknown extra columns are allowed and ignored
        col = table.column(i)
        if not pa.types.is_struct(col.type) or table.num_rows != pages:
            raise CorruptFileError(f"{where}: statistics column {name!r} has {table.num_rows} "
                                   f"rows of {col.type} for {pages} pages")
        rows = _stats_rows(col.combine_chunks())
        stats = []
        for k, r in enumerate(rows):
            n = min(rpp, num_rows - k * rpp)
            r = r or {}
            stats.append(ColumnStats(num_rows=n, null_count=r.get("null_count"),
                                     min=r.get("min_value"), max=r.get("max_value"),
                                     nan_count=r.get(NAN_COUNT),
                                     negative_nan_count=r.get(NEGATIVE_NAN_COUNT)))
        out[int(name)] = stats
    return out


# types whose full validation also checks the values' range (whole days, times within a
# day, decimal precision): bounds lancenb writes for such columns may lie outside it (a
# date64 column holding -2**63 ms), so their bytes are checked as plain integers
_VALUE_VIEWS = ((pa.types.is_date64, pa.int64()), (pa.types.is_time32, pa.int32()),
                (pa.types.is_time64, pa.int64()),
                (pa.types.is_decimal128, pa.binary(16)), (pa.types.is_decimal256, pa.binary(32)))


def _validate_values(arr: pa.Array) -> None:
    """Arrow's full validation (offsets, UTF-8) of ``arr`` and its children, without
    the value-range checks of :data:`_VALUE_VIEWS`."""
    if pa.types.is_struct(arr.type):
        arr.validate()
        for i in range(arr.type.num_fields):
            _validate_values(arr.field(i))
        return
    for is_type, view in _VALUE_VIEWS:
        if is_type(arr.type):
            arr = arr.view(view)
            break
    arr.validate(full=True)


def _stats_rows(col: pa.StructArray) -> list[dict | None]:
    """A statistics column's rows as dicts; temporal bounds stay ``pyarrow`` scalars
    (their values may lie outside Python's datetime range)."""
    names = [col.type.field(i).name for i in range(col.type.num_fields)]
    if not any(pa.types.is_temporal(col.type.field(i).type) for i in range(len(names))):
        return col.to_pylist()
    kids = {n: col.field(n) for n in names}
    out: list[dict | None] = []
    for k in range(len(col)):
        if not col[k].is_valid:
            out.append(None)
            continue
        row = {}
        for n, a in kids.items():
            v = a[k]
            row[n] = (v if v.is_valid else None) if pa.types.is_temporal(a.type) else v.as_py()
        out.append(row)
    return out
