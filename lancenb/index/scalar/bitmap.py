"""BITMAP scalar index in pylance's on-disk format.

Layout (``_indices/<uuid>/bitmap_page_lookup.lance``, a Lance 2.2 file): one row per
distinct value of the column, sorted with the null key first: ``keys`` (the column's
type; a null key holds the rows where the column is null) and ``bitmaps``
(``binary``: the rows holding that value as a serialised row set, see
:mod:`lancenb.index.scalar.rowmap`). Schema metadata ``lance:index_stats`` is
``{"num_bitmaps": <number of keys>}``. The manifest's index details are an empty
``lance.table.BitmapIndexDetails``.

Example: ``s = ["x", null, "y", "x"]`` in fragment 0 gives keys ``[null, "x", "y"]``
and bitmaps ``[{1}, {0, 3}, {2}]``.

A query evaluates the predicate once per key and unions the bitmaps of the keys it
is true for (and NULL for, when asked): exact for any predicate of the one column.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyroaring import BitMap64

from lancenb.index.scalar import rowmap
from lancenb.index.scalar.common import Answer, IndexFiles, leaf_mask, note_parts, sort_order
from lancenb.index.scalar.sorting import RUN_ROWS, memory_pool, sorted_pairs

__all__ = ["BitmapIndex", "write_bitmap", "BITMAP_FILE", "DETAILS_TYPE_URL", "group_rows"]

BITMAP_FILE = "bitmap_page_lookup.lance"
DETAILS_TYPE_URL = "/lance.table.BitmapIndexDetails"
STATS_KEY = "lance:index_stats"


class BitmapIndex:
    """An open BITMAP index (keys in memory; bitmaps decoded when a query needs them)."""

    file_name = BITMAP_FILE

    def __init__(self, files: IndexFiles, full_rows=None):
        self.files = files
        self.keys = files.reader(self.file_name, columns=["keys"]).read_all().to_table() \
            .column("keys").combine_chunks()
        self._bitmaps = files.reader(self.file_name, columns=["bitmaps"])
        self.full_rows = full_rows
        self._cache: dict[int, BitMap64] = {}

    def bitmap(self, i: int) -> BitMap64:
        """The rows of key ``i``."""
        self._load([i])
        return self._cache[i]

    def _load(self, positions: list[int]) -> None:
        """Read and decode the bitmaps of the keys at ``positions`` not decoded yet
        (only those rows of the file's ``bitmaps`` column are read)."""
        want = sorted({int(i) for i in positions} - set(self._cache))
        if not want:
            return
        raw = self._bitmaps.take_rows(want).to_table().column("bitmaps").to_pylist()
        note_parts(len(want))
        for i, data in zip(want, raw):
            self._cache[i] = rowmap.deserialize(data, full_rows=self.full_rows,
                                                where=f"index {self.files.uuid} key {i}")

    def prewarm(self) -> None:
        """Decode every key's bitmap now (pylance's ``prewarm_index``)."""
        self._load(list(range(len(self.keys))))

    def union(self, positions) -> BitMap64:
        """The rows of the keys at ``positions``."""
        positions = [int(i) for i in positions]
        self._load(positions)
        out = BitMap64()
        for i in positions:
            out |= self._cache[i]
        return out

    def search(self, node, column: str, with_nulls: bool) -> Answer:
        """The rows ``node`` (a predicate over ``column``) is true for, and NULL for
        when ``with_nulls``."""
        true, null = leaf_mask(pa.table({column: self.keys}), node.expr())
        return Answer(self.union(true), self.union(null) if with_nulls else None)

    def all_rows(self) -> BitMap64:
        """Every row the index holds."""
        return self.union(range(len(self.keys)))


def _canonical(values: pa.Array) -> pa.Array:
    """-0.0 as 0.0 (one key: the sort cannot tell them apart, and filters hold them
    equal)."""
    if pa.types.is_floating(values.type) and len(values):
        zero = pa.scalar(0, values.type)
        return pc.if_else(pc.equal(values, zero), zero, values)
    return values


def _same(a: pa.Array, b: pa.Array) -> bool:
    """Whether two one-value arrays hold the same key (null = null, NaN = NaN)."""
    if a.null_count or b.null_count:
        return bool(a.null_count and b.null_count)
    codes = pc.dictionary_encode(pa.concat_arrays([a, b])).indices.to_pylist()
    return codes[0] == codes[1]


def group_rows(sorted_tables):
    """``(key, uint64 ids)`` per distinct value, in index order, from tables of
    ``values``, ``ids`` sorted by value (:func:`~.sorting.sorted_pairs`)."""
    key, held = None, []
    for t in sorted_tables:
        if not t.num_rows:
            continue
        values = _canonical(t.column("values").combine_chunks())
        ids = np.asarray(t.column("ids").to_numpy(), np.uint64)
        codes = np.asarray(pc.dictionary_encode(values, null_encoding="encode")
                           .indices.to_numpy(zero_copy_only=False), np.int64)
        cuts = np.flatnonzero(np.diff(codes)) + 1
        starts = np.concatenate([[0], cuts]).tolist()
        ends = np.concatenate([cuts, [len(codes)]]).tolist()
        for a, b in zip(starts, ends):
            k = values.slice(a, 1)
            if key is not None and _same(key, k):
                held.append(ids[a:b])
                continue
            if key is not None:
                yield key, np.concatenate(held)
            key, held = k, [ids[a:b]]
    if key is not None:
        yield key, np.concatenate(held)


# distinct values a build keeps as row sets (hashed, not sorted) before it sorts instead
_DICT_MAX = 1 << 16


def _gathered(batches, rows: int):
    """``(values, ids)`` batches joined into ones of at least ``rows`` rows."""
    vals, ids, n = [], [], 0
    for v, i in batches:
        if isinstance(v, pa.ChunkedArray):
            v = v.combine_chunks()
        if len(v):
            vals.append(v)
            ids.append(np.asarray(i, np.uint64))
            n += len(v)
        if n >= rows:
            yield pa.concat_arrays(vals), np.concatenate(ids)
            vals, ids, n = [], [], 0
    if n:
        yield pa.concat_arrays(vals), np.concatenate(ids)


def _grouped(batches, value_type: pa.DataType, run_rows: int):
    """:func:`group_rows` of the sorted ``batches``: for integer, string and binary
    values (and no memory pool) the rows are gathered per distinct value as they come,
    a compressed row set each, and only the distinct values are sorted; past
    :data:`_DICT_MAX` values the pairs go through the bounded-memory sort."""
    t = value_type
    if memory_pool() is not None or not (
            pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_binary(t) or pa.types.is_large_binary(t)):
        yield from group_rows(sorted_pairs(batches, value_type, run_rows=run_rows))
        return
    sets: dict = {}  # value -> [one-value array, row set]
    it = _gathered(batches, 1 << 20)
    for values, ids in it:
        enc = pc.dictionary_encode(values, null_encoding="encode")
        codes = np.asarray(enc.indices.to_numpy(zero_copy_only=False), np.int64)
        order = np.argsort(codes.astype(np.uint16), kind="stable") \
            if len(enc.dictionary) <= 1 << 16 else np.argsort(codes)  # (radix: small codes)
        codes, ids = codes[order], np.asarray(ids, np.uint64)[order]
        cuts = np.flatnonzero(np.diff(codes)) + 1
        starts = np.concatenate([[0], cuts]).tolist()
        ends = np.concatenate([cuts, [len(codes)]]).tolist()
        dic = enc.dictionary
        for a, b in zip(starts, ends):
            c = int(codes[a])
            key = dic[c].as_py()
            got = rowmap.from_ids(ids[a:b])
            held = sets.get(key)
            if held is None:
                sets[key] = [dic.slice(c, 1), got]
            else:
                held[1] |= got
        if len(sets) > _DICT_MAX:
            def pairs(sets=sets):
                for one, rows in sets.values():
                    r = rowmap.to_ids(rows)
                    yield one.take(pa.array(np.zeros(len(r), np.int64))), r
                yield from it
            yield from group_rows(sorted_pairs(pairs(), value_type, run_rows=run_rows))
            return
    if not sets:
        return
    held = list(sets.values())
    keys = pa.concat_arrays([h[0] for h in held])
    for i in sort_order(keys).tolist():
        yield keys.slice(i, 1), rowmap.to_ids(held[i][1])


def write_bitmap(files: IndexFiles, batches, value_type: pa.DataType, *,
                 file_name: str = BITMAP_FILE, extra_metadata: dict | None = None,
                 buffers: dict | None = None, run_rows: int = RUN_ROWS) -> None:
    """Write a BITMAP index into ``files`` from ``batches`` of ``(values, uint64 row
    ids)``, sorted in bounded memory; one bitmap per distinct value is held.
    ``buffers``: global buffers for :meth:`IndexFiles.write` (read once the batches
    are consumed)."""
    keys, bitmaps = [], []
    for k, ids in _grouped(batches, value_type, run_rows):
        keys.append(k)
        bitmaps.append(rowmap.serialize(ids))
    key_arr = pa.concat_arrays(keys) if keys else pa.array([], value_type)
    meta = {STATS_KEY: json.dumps({"num_bitmaps": len(keys)}, separators=(",", ":"))}
    meta.update(extra_metadata or {})
    schema = pa.schema([pa.field("keys", value_type), pa.field("bitmaps", pa.binary())],
                       metadata=meta)
    table = pa.table([key_arr, pa.array(bitmaps, pa.binary())], schema=schema)
    files.write(file_name, table, schema, buffers=buffers)
