"""The keys a merge on the unenforced primary key inserted, as pylance 14 records them.

A field whose metadata has ``lance-schema:unenforced-primary-key`` set true is part of
the table's (unenforced) primary key. When ``merge_insert`` joins on exactly those
columns, its ``Update`` carries ``inserted_rows``: a ``KeyExistenceFilter`` of the key
columns' field ids and a split-block bloom filter of the inserted keys. Two merges that
raced to insert the same key are then a retryable conflict
(:func:`lancenb.table.conflicts.key_sets_may_overlap`), and the loser runs again on the
new version, where it finds the key, so no key is inserted twice.

The filter has one size for every transaction (8,192 keys at false-positive rate
0.00057: 32 KiB), so any two can be compared. A key's hash is XXH64 (seed 0) of its
bytes: a string's UTF-8, a binary value's bytes, a signed integer's 8 little-endian
bytes as int64, an unsigned one's as uint64; a key of several columns is each part's
bytes followed by a zero byte. Rows whose key has a null, or a column of another type,
are not recorded (as pylance).

Example: a table with ``id`` (int64, primary key); merging on ``id`` and inserting ids
3 and 4 records XXH64 of ``03 00 00 00 00 00 00 00`` and of ``04 00 ...``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb._proto import transaction_pb2
from lancenb.index.scalar.xxh import bloom_insert, bloom_log2_bytes, xxh64_many

__all__ = ["PRIMARY_KEY", "primary_key", "inserted_keys_filter", "BLOOM_ITEMS",
           "BLOOM_PROBABILITY"]

PRIMARY_KEY = b"lance-schema:unenforced-primary-key"
BLOOM_ITEMS = 8192
BLOOM_PROBABILITY = 0.00057


def primary_key(top_fields) -> dict[str, int]:
    """``{name: field id}`` of the top-level fields marked as the primary key."""
    out = {}
    for f in top_fields:
        value = (f.arrow.metadata or {}).get(PRIMARY_KEY)
        if value is not None and value.decode("utf-8", "replace").strip().lower() in (
                "true", "1", "yes"):
            out[f.name] = int(f.id)
    return out


def inserted_keys_filter(rows: pa.Table, on: list[str], top_fields):
    """The ``KeyExistenceFilter`` of the keys of ``rows`` (the rows a merge on ``on``
    inserts), or None when ``on`` is not exactly the table's primary key."""
    pk = primary_key(top_fields)
    if not pk or set(on) != set(pk):
        return None
    n_blocks = (1 << bloom_log2_bytes(BLOOM_ITEMS, BLOOM_PROBABILITY)) // 32
    words = np.zeros((n_blocks, 8), np.uint32)
    data, offsets = _key_bytes(rows, on)
    if len(offsets) > 1:
        bloom_insert(words, xxh64_many(data, offsets))
    msg = transaction_pb2.Transaction.KeyExistenceFilter(field_ids=[pk[c] for c in on])
    msg.bloom.bitmap = words.astype("<u4").tobytes()
    msg.bloom.num_bits = words.size * 32
    msg.bloom.number_of_items = BLOOM_ITEMS
    msg.bloom.probability = BLOOM_PROBABILITY
    return msg


def _key_bytes(rows: pa.Table, on: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of each recordable key, concatenated, and their offsets."""
    parts = [_as_binary(rows.column(c)) for c in on]
    if any(p is None for p in parts) or not rows.num_rows:
        return np.zeros(0, np.uint8), np.zeros(1, np.int64)
    keep = pc.and_kleene(*[pc.is_valid(p) for p in parts]) if len(parts) > 1 else \
        pc.is_valid(parts[0])
    parts = [pc.filter(p, keep) for p in parts]
    key = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(
        *parts, pa.scalar(b"", pa.large_binary()), pa.scalar(b"\0", pa.large_binary()))
    key = key.combine_chunks() if isinstance(key, pa.ChunkedArray) else key
    key = key.cast(pa.large_binary())
    _, off_buf, data_buf = key.buffers()
    offsets = np.frombuffer(off_buf, np.int64)[key.offset:key.offset + len(key) + 1]
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return data, offsets


def _as_binary(col) -> pa.ChunkedArray | None:
    """A key column as binary values (None: a type pylance does not record)."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    t = col.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or \
            pa.types.is_large_binary(t):
        return col.cast(pa.large_binary())
    if t in (pa.int32(), pa.int64(), pa.uint32(), pa.uint64()):
        signed = pa.types.is_signed_integer(t)
        wide = col.cast(pa.int64() if signed else pa.uint64())
        values = np.ascontiguousarray(wide.fill_null(0).to_numpy(zero_copy_only=False),
                                      "<i8" if signed else "<u8")
        fixed = pa.Array.from_buffers(pa.binary(8), len(values),
                                      [None, pa.py_buffer(values.view(np.uint8))])
        if wide.null_count:
            fixed = pc.if_else(pc.is_valid(wide), fixed, pa.scalar(None, pa.binary(8)))
        return fixed.cast(pa.large_binary())
    return None
