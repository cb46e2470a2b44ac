"""ZONEMAP and BLOOMFILTER indices in pylance's on-disk format: per-zone summaries
that rule zones out, never rows in (a scan evaluates its filter on what is left).

A zone is up to ``rows_per_zone`` consecutive indexed rows of one fragment (zones
never span fragments); it covers the row addresses ``fragment_id << 32 |
[zone_start, zone_start + zone_length)``. pylance counts ``zone_start`` as the sum of
the fragment's earlier zone lengths, which is the row offset when the fragment had
no deleted rows at build time; lancenb writes the offset of the zone's first row and
the span to its last, and reads every zone as reaching further by the fragment's
deleted-row count (clipped to its rows), so zones of either library stay supersets.

``_indices/<uuid>/zonemap.lance`` (ZONEMAP, index version 0)
    One row per zone: ``min`` and ``max`` (the column's type; nulls and NaN left
    out, null when nothing is left, but ``max`` is NaN in a zone holding a NaN, as
    pylance writes it), ``null_count`` and ``nan_count``
    (``uint32``), ``fragment_id``, ``zone_start``, ``zone_length`` (``uint64``).
    Schema metadata ``rows_per_zone`` (default ``"8192"``) and ``null_bitmap``: the
    index of a global buffer holding the row set (:mod:`.rowmap`) of the addresses
    whose value is null (both files have it). Details
    ``lance.table.ZoneMapIndexDetails`` (empty). A zone may match ``x = v`` when
    ``min <= v <= max``, a range when it overlaps ``[min, max]``, ``IS NULL`` when
    ``null_count > 0``.
``_indices/<uuid>/bloomfilter.lance`` (BLOOMFILTER, index version 0)
    One row per zone: ``fragment_id``, ``zone_start``, ``zone_length`` (``uint64``),
    ``has_null`` (bool), ``bloom_filter_data`` (binary: a split-block bloom filter,
    :mod:`.xxh`, of the XXH64 of each non-null value's bytes: little-endian for
    numbers, dates and times, 1 byte for a bool, UTF-8 for strings). Metadata
    ``bloomfilter_item`` (expected distinct values per zone, default ``"8192"``) and
    ``bloomfilter_probability`` (default ``"0.00057"``), which size each filter
    (32 KiB by default). A zone may match ``x = v`` / ``IN`` when the filter may
    hold ``v``, ``IS NULL`` when ``has_null``. Details
    ``lance.index.pb.BloomFilterIndexDetails`` (empty).

Example: 12000 rows in fragment 0 and 8000 in fragment 1 give the zones ``(0, 0,
8192)``, ``(0, 8192, 3808)``, ``(1, 0, 8000)``.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb.errors import InvalidInputError
from lancenb.expr.nodes import FLIP, Cmp, Col, In, IsNull, Lit
from lancenb.index.scalar import rowmap
from lancenb.index.scalar.btree import _leaf_ranges
from lancenb.index.scalar.common import IndexFiles, Unanswerable
from lancenb.index.scalar.xxh import (
    bloom_check_blocks,
    bloom_insert,
    bloom_log2_bytes,
    xxh64_many,
)

__all__ = ["ZoneMapIndex", "BloomFilterIndex", "write_zonemap", "write_bloomfilter",
           "ZONEMAP_FILE", "BLOOM_FILE", "ZONEMAP_DETAILS", "BLOOM_DETAILS", "bloom_type_ok"]

ZONEMAP_FILE = "zonemap.lance"
BLOOM_FILE = "bloomfilter.lance"
ZONEMAP_DETAILS = "/lance.table.ZoneMapIndexDetails"
BLOOM_DETAILS = "/lance.index.pb.BloomFilterIndexDetails"
ROWS_PER_ZONE = 8192
BLOOM_ITEMS = 8192
BLOOM_PROBABILITY = 0.00057


def _zones(batches, rows_per_zone: int):
    """``(fragment id, offsets, values)`` of each zone, from ``batches`` of ``(values,
    uint64 row addresses)`` in address order."""
    if rows_per_zone <= 0:
        raise InvalidInputError(f"rows_per_zone must be positive, got {rows_per_zone}")
    held_v: list = []
    held_o: list = []
    n, cur = 0, None

    def flush(upto: int):
        nonlocal held_v, held_o, n
        v = pa.concat_arrays(held_v) if len(held_v) > 1 else held_v[0]
        o = np.concatenate(held_o) if len(held_o) > 1 else held_o[0]
        out = (o[:upto], v.slice(0, upto))
        held_v, held_o, n = [v.slice(upto)], [o[upto:]], n - upto
        return out

    for values, addrs in batches:
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        fids = addrs >> np.uint64(32)
        cuts = np.flatnonzero(np.diff(fids)) + 1
        for a, b in zip(np.concatenate([[0], cuts]), np.concatenate([cuts, [len(addrs)]])):
            if a == b:
                continue
            fid = int(fids[a])
            if cur is not None and fid != cur and n:
                yield (cur, *flush(n))
            cur = fid
            held_v.append(values.slice(int(a), int(b - a)))
            held_o.append((addrs[a:b] & np.uint64(0xFFFFFFFF)).astype(np.int64))
            n += int(b - a)
            while n >= rows_per_zone:
                yield (cur, *flush(rows_per_zone))
            held_v = [x for x in held_v if len(x)]
            held_o = [x for x in held_o if len(x)]
    if n:
        yield (cur, *flush(n))


def _null_addresses(fid: int, offs: np.ndarray, v: pa.Array) -> np.ndarray:
    if not v.null_count:
        return np.zeros(0, np.uint64)
    nulls = np.flatnonzero(~v.is_valid().to_numpy(zero_copy_only=False))
    return offs[nulls].astype(np.uint64) | np.uint64(fid << 32)


def _min_max(v: pa.Array) -> dict:
    """``{"min", "max"}`` scalars of ``v`` (no NaN in it); floats in total order, so
    -0.0 is below 0.0 (as pylance)."""
    mm = pc.min_max(v)
    out = {"min": mm["min"], "max": mm["max"]}
    if pa.types.is_floating(v.type) and mm["min"].is_valid:
        x = np.asarray(pc.drop_null(v).to_numpy(zero_copy_only=False), np.float64)
        zero = x == 0
        if zero.any():
            neg = np.signbit(x[zero])
            if out["min"].as_py() == 0 and neg.any():
                out["min"] = pa.scalar(-0.0, v.type)
            if out["max"].as_py() == 0 and (~neg).any():
                out["max"] = pa.scalar(0.0, v.type)
    return out


def _float_parts(v: pa.Array):
    if pa.types.is_floating(v.type):
        nan = pc.fill_null(pc.is_nan(v), False)
        return v.filter(pc.invert(nan)), int(pc.sum(nan).as_py() or 0)
    return v, 0


def write_zonemap(files: IndexFiles, batches, value_type: pa.DataType, *,
                  rows_per_zone: int = ROWS_PER_ZONE) -> None:
    """Write a ZONEMAP index from ``(values, row addresses)`` batches in address order."""
    mins, maxs, nulls, nans, fids, starts, lengths, null_rows = [], [], [], [], [], [], [], []
    for fid, offs, v in _zones(batches, rows_per_zone):
        null_rows.append(_null_addresses(fid, offs, v))
        plain, nan = _float_parts(v)
        mm = _min_max(plain)
        mins.append(mm["min"].cast(value_type) if mm["min"].is_valid else None)
        if nan:  # (pylance: NaN is the greatest value of a zone holding one)
            maxs.append(pa.scalar(float("nan"), value_type))
        else:
            maxs.append(mm["max"].cast(value_type) if mm["max"].is_valid else None)
        nulls.append(v.null_count)
        nans.append(nan)
        fids.append(fid)
        starts.append(int(offs[0]))
        lengths.append(int(offs[-1] - offs[0] + 1))
    schema = pa.schema([pa.field("min", value_type), pa.field("max", value_type),
                        pa.field("null_count", pa.uint32(), False),
                        pa.field("nan_count", pa.uint32(), False),
                        pa.field("fragment_id", pa.uint64(), False),
                        pa.field("zone_start", pa.uint64(), False),
                        pa.field("zone_length", pa.uint64(), False)],
                       metadata={"rows_per_zone": str(rows_per_zone)})

    def col(items):
        return pa.array([None if s is None else s.as_py() for s in items], value_type)

    table = pa.table([col(mins), col(maxs), pa.array(nulls, pa.uint32()),
                      pa.array(nans, pa.uint32()), pa.array(fids, pa.uint64()),
                      pa.array(starts, pa.uint64()), pa.array(lengths, pa.uint64())],
                     schema=schema)
    files.write(ZONEMAP_FILE, table, schema, buffers={"null_bitmap": _null_set(null_rows)})


def _null_set(parts: list) -> bytes:
    """The ``null_bitmap`` global buffer: the row set (:mod:`.rowmap`) of the
    addresses whose value is null."""
    return rowmap.serialize(np.concatenate(parts) if parts else np.zeros(0, np.uint64))


def bloom_type_ok(t: pa.DataType) -> bool:
    """The column types pylance builds BLOOMFILTER indices on."""
    return ((pa.types.is_integer(t) or t in (pa.float32(), pa.float64())
             or pa.types.is_string(t) or pa.types.is_large_string(t)
             or pa.types.is_binary(t) or pa.types.is_large_binary(t)
             or pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_timestamp(t)))


def _value_bytes(v: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``(data, offsets)``: the bytes of each non-null value of ``v`` as pylance
    hashes them."""
    v = pc.drop_null(v)
    t = v.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t):
        v = v.cast(pa.large_binary())
        bufs = v.buffers()
        offs = np.frombuffer(bufs[1], np.int64)[v.offset:v.offset + len(v) + 1]
        data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None and len(bufs[2]) \
            else np.zeros(0, np.uint8)
        return data, offs
    if pa.types.is_boolean(t):
        data = np.asarray(v.to_numpy(zero_copy_only=False), np.uint8)
        return data, np.arange(len(data) + 1, dtype=np.int64)
    width = t.bit_width // 8
    store = {1: pa.int8(), 2: pa.int16(), 4: pa.int32(), 8: pa.int64()}[width]
    raw = np.ascontiguousarray(v.view(store).to_numpy(zero_copy_only=False))
    return raw.astype(raw.dtype.newbyteorder("<")).view(np.uint8), \
        np.arange(len(raw) + 1, dtype=np.int64) * width


def _hashes(v: pa.Array) -> np.ndarray:
    return xxh64_many(*_value_bytes(v))


def _fmt(p: float) -> str:
    return np.format_float_positional(p, trim="-")


def write_bloomfilter(files: IndexFiles, batches, value_type: pa.DataType, *,
                      number_of_items: int = BLOOM_ITEMS,
                      probability: float = BLOOM_PROBABILITY) -> None:
    """Write a BLOOMFILTER index from ``(values, row addresses)`` batches in address
    order (zones of ``number_of_items`` rows, as pylance)."""
    if not 0.0 < probability < 1.0:
        raise InvalidInputError(f"bloom filter probability must be in (0, 1), got {probability}")
    n_bytes = 1 << bloom_log2_bytes(int(number_of_items), float(probability))
    fids, starts, lengths, has_null, data, null_rows = [], [], [], [], [], []
    for fid, offs, v in _zones(batches, int(number_of_items)):
        null_rows.append(_null_addresses(fid, offs, v))
        words = np.zeros((n_bytes // 32, 8), np.uint32)
        bloom_insert(words, _hashes(v))
        fids.append(fid)
        starts.append(int(offs[0]))
        lengths.append(int(offs[-1] - offs[0] + 1))
        has_null.append(v.null_count > 0)
        data.append(words.astype("<u4").tobytes())
    schema = pa.schema([pa.field("fragment_id", pa.uint64(), False),
                        pa.field("zone_start", pa.uint64(), False),
                        pa.field("zone_length", pa.uint64(), False),
                        pa.field("has_null", pa.bool_(), False),
                        pa.field("bloom_filter_data", pa.binary(), False)],
                       metadata={"bloomfilter_item": str(number_of_items),
                                 "bloomfilter_probability": _fmt(probability)})
    table = pa.table([pa.array(fids, pa.uint64()), pa.array(starts, pa.uint64()),
                      pa.array(lengths, pa.uint64()), pa.array(has_null, pa.bool_()),
                      pa.array(data, pa.binary())], schema=schema)
    files.write(BLOOM_FILE, table, schema, buffers={"null_bitmap": _null_set(null_rows)})


def _col_lit(node):
    """``(op, column node, literal)`` of a comparison (column first), else None."""
    if not isinstance(node, Cmp):
        return None
    op, a, b = node.op, node.left, node.right
    if isinstance(a, Lit) and isinstance(b, Col):
        op, a, b = FLIP[op], b, a
    if isinstance(a, Col) and isinstance(b, Lit):
        return op, a, b
    return None


class _Zones:
    """What both zone indices share: the zones' fragment ids, starts and lengths."""

    def _load(self, table: pa.Table):
        self.fids = np.asarray(table.column("fragment_id").to_numpy(), np.int64)
        self.starts = np.asarray(table.column("zone_start").to_numpy(), np.int64)
        self.lengths = np.asarray(table.column("zone_length").to_numpy(), np.int64)

    def zones(self, node) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(fragment ids, starts, lengths)`` of the zones that may hold rows where the
        leaf predicate ``node`` is true (raises ``Unanswerable`` for a predicate this
        index cannot rule zones out for)."""
        return self.zones_all([node])

    def zones_all(self, nodes: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`zones` of the ``AND`` of the leaf predicates ``nodes`` (a zone may
        hold rows where all are true only if it may for each)."""
        keep = self.may_match(nodes[0])
        for node in nodes[1:]:
            keep &= self.may_match(node)
        return self.fids[keep], self.starts[keep], self.lengths[keep]


class ZoneMapIndex(_Zones):
    """An open ZONEMAP index (its one small file read whole)."""

    def __init__(self, files: IndexFiles, full_rows=None):
        r = files.reader(ZONEMAP_FILE)
        t = r.read_all().to_table()
        self._load(t)
        self.mins = t.column("min").to_pylist()
        self.maxs = t.column("max").to_pylist()
        # numeric bounds as arrays too (NaN where a zone has none): ranges are tested
        # over every zone at once, not zone by zone
        self._num = None
        typ = t.schema.field("min").type
        if pa.types.is_integer(typ) or pa.types.is_floating(typ):
            self._num = tuple(np.asarray(t.column(c).cast(pa.float64()).to_numpy(
                zero_copy_only=False), np.float64) for c in ("min", "max")) + (
                np.asarray(pc.and_(pc.is_valid(t.column("min")),
                                   pc.is_valid(t.column("max"))).to_numpy(
                    zero_copy_only=False), bool),)
            if pa.types.is_integer(typ) and any(abs(v) > 2 ** 53 for v in (
                    pc.min(t.column("min")).as_py() or 0, pc.max(t.column("max")).as_py() or 0)):
                self._num = None  # (float64 would round such integers)
        self.null_counts = np.asarray(t.column("null_count").to_numpy(), np.int64)
        self.nan_counts = np.asarray(t.column("nan_count").to_numpy(), np.int64)
        meta = r.schema_full.metadata or {}
        self.rows_per_zone = int(meta.get(b"rows_per_zone", ROWS_PER_ZONE))

    def may_match(self, node) -> np.ndarray:
        if isinstance(node, IsNull) and not node.negated:
            return self.null_counts > 0
        if not isinstance(node, (Cmp, In, IsNull)) or (isinstance(node, Cmp)
                                                      and node.op == "!="):
            raise Unanswerable("a zone map answers =, ranges, IN and IS NULL")
        ranges = _leaf_ranges(node)
        n = len(self.fids)
        has_value = self.lengths > self.null_counts  # (a zone may have values)
        if ranges is None:
            return has_value | (self.nan_counts > 0)
        if self._num is not None and all(
                isinstance(v, (int, float)) and not isinstance(v, bool)
                for r in ranges for v in r if v is not None):
            return self._numeric_match(ranges)
        out = np.zeros(n, bool)
        for i in range(n):
            mn, mx = self.mins[i], self.maxs[i]
            if mn is None or mx is None:
                out[i] = self.nan_counts[i] > 0 and _nan_possible(ranges)
                continue
            for lo, hi in ranges:
                try:
                    if (lo is None or not mx < lo) and (hi is None or not hi < mn):
                        out[i] = True
                        break
                except TypeError:
                    out[i] = True
                    break
            if not out[i] and self.nan_counts[i] > 0 and _nan_possible(ranges):
                out[i] = True
        return out


    def _numeric_match(self, ranges) -> np.ndarray:
        """:meth:`may_match` of numeric ranges over every zone at once (the loop's
        rules: a zone without bounds may hold NaN; a range meets ``[min, max]``)."""
        mins, maxs, bounded = self._num  # (a NaN bound compares false: the zone may match)
        out = np.zeros(len(mins), bool)
        with np.errstate(invalid="ignore"):
            for lo, hi in ranges:
                m = bounded.copy()
                if lo is not None:
                    m &= ~(maxs < lo)
                if hi is not None:
                    m &= ~(hi < mins)
                out |= m
        if _nan_possible(ranges):
            out |= self.nan_counts > 0
        return out


def _nan_possible(ranges) -> bool:
    """Whether NaN (greatest in the total order of floats) can be in ``ranges``."""
    return any(hi is None or (isinstance(hi, float) and math.isnan(hi)) for _, hi in ranges)


class BloomFilterIndex(_Zones):
    """An open BLOOMFILTER index (its file read whole: one filter per zone)."""

    def __init__(self, files: IndexFiles, full_rows=None):
        r = files.reader(BLOOM_FILE)
        t = r.read_all().to_table()
        self._load(t)
        self.has_null = np.asarray(t.column("has_null").to_numpy(zero_copy_only=False), bool)
        filters = [np.frombuffer(b, "<u4").reshape(-1, 8)
                        for b in t.column("bloom_filter_data").to_pylist()]
        # the zones grouped by filter size, each group's filters stacked block-major
        # (blocks, zones, 8): a lookup tests every zone of a group at once, reading
        # one contiguous slab per value (bloom_check_blocks)
        shapes: dict[int, list[int]] = {}
        for i, w in enumerate(filters):
            shapes.setdefault(w.shape[0], []).append(i)
        self._groups = [(np.array(ix, np.int64), np.ascontiguousarray(
            np.stack([filters[i] for i in ix], axis=1))) for ix in shapes.values()]
        meta = r.schema_full.metadata or {}
        self.number_of_items = int(meta.get(b"bloomfilter_item", BLOOM_ITEMS))
        self.probability = float(meta.get(b"bloomfilter_probability", BLOOM_PROBABILITY))

    def may_match(self, node) -> np.ndarray:
        if isinstance(node, IsNull) and not node.negated:
            return self.has_null.copy()
        got = _col_lit(node)
        if got is not None and got[0] == "=":
            values = pa.array([got[2].value.as_py()], got[1].type)
        elif isinstance(node, In) and isinstance(node.arg, Col):
            values = node.values.cast(node.arg.type)
        else:
            raise Unanswerable("a bloom filter answers =, IN and IS NULL")
        hashes = _hashes(values)
        out = np.zeros(len(self.fids), bool)
        for lo in range(0, hashes.size, 256):
            for zones, stack in self._groups:
                out[zones] |= bloom_check_blocks(stack, hashes[lo:lo + 256])
        if isinstance(node, In) and node.has_null:
            out |= self.has_null
        return out
