"""Encoding one 2.0 page: Arrow values → ``(buffers, ArrayEncoding)``.

The trees are the ones pylance 14 writes (see :mod:`lancenb.encodings.v2_0.decode`
for their byte layouts); buffers are numbered in the order they are added:

* fixed width (ints, floats, bool, decimals, dates/times/timestamps, durations,
  fixed_size_binary): ``nullable{no_nulls{flat}}`` or ``nullable{some_nulls{
  validity: flat{1, buf 0}, values: flat{bits, buf 1}}}``, ``nullable{all_nulls}``
  (no buffers) when every value is null;
* fixed-size lists: that wrapper around ``fixed_size_list{dimension, items: <the
  items' own tree>}``;
* strings/binaries: ``binary{indices: u64 end offsets, bytes, null_adjustment =
  total bytes + 1}``, or, for ``string`` pages of at least 100 rows with fewer than
  100 distinct values, ``dictionary{indices: u8 (0 = null), items: binary}`` as
  pylance chooses;
* packed structs: ``packed_struct{inner: [flat per child], buffer}`` (rows of the
  children's bytes back to back).

A string field's ``lance-encoding:compression`` (``zstd``/``lz4``/``none``, with
``lance-encoding:compression-level``) compresses the bytes buffer of its binary
pages (``flat{8, compression{scheme, level}}``); ``fsst`` wraps them as
``fsst{binary: <the compressed strings>, symbol_table}`` (string/binary only:
pylance's 2.0 FSST cannot handle 64-bit offsets). Dictionary pages and other types
ignore it, as in pylance.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb.encodings import blocks, pb
from lancenb.encodings.blocks import Variable
from lancenb.encodings.config import COMPRESSION, COMPRESSION_LEVEL
from lancenb.encodings.nptypes import numpy_dtype
from lancenb.encodings.physical import general, packed_struct
from lancenb.encodings.physical.fsst import FsstCodec
from lancenb.errors import InvalidInputError, NotSupportedError
from lancenb.kernels import slices

__all__ = ["encode", "binary_tree", "list_offsets", "Compression", "compression_of",
           "DICT_MIN_ROWS", "DICT_MAX_ITEMS"]

E = pb.e20
# pylance 2.0 dictionary-encodes a Utf8 page with at least this many rows whose
# (HyperLogLog-estimated) distinct count stays below DICT_MAX_ITEMS.
DICT_MIN_ROWS = 100
DICT_MAX_ITEMS = 100


class _Buffers(list):
    def add(self, data) -> E.Buffer:
        self.append(np.ascontiguousarray(data).view(np.uint8).reshape(-1))
        return E.Buffer(buffer_index=len(self) - 1)


def _flat(bits: int, buf: E.Buffer) -> E.ArrayEncoding:
    return E.ArrayEncoding(flat=E.Flat(bits_per_value=bits, buffer=buf))


def _no_nulls(values: E.ArrayEncoding) -> E.ArrayEncoding:
    return E.ArrayEncoding(nullable=E.Nullable(no_nulls=E.Nullable.NoNull(values=values)))


class Compression:
    """A string field's ``lance-encoding:compression`` (and level), checked."""

    SCHEMES = ("zstd", "lz4", "none", "fsst")

    def __init__(self, scheme: str, level: int | None = None):
        self.scheme = scheme
        self.level = level


def compression_of(field: pa.Field) -> Compression | None:
    md = {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes)
                                                        else str(v))
          for k, v in (field.metadata or {}).items()}
    scheme = md.get(COMPRESSION)
    if scheme is None:
        return None
    if scheme not in Compression.SCHEMES:
        raise InvalidInputError(f"column {field.name!r}: {COMPRESSION}={scheme!r}; 2.0 files "
                                f"take one of {', '.join(Compression.SCHEMES)}")
    level = md.get(COMPRESSION_LEVEL)
    try:
        level = None if level is None else int(level)
    except ValueError:
        raise InvalidInputError(f"column {field.name!r}: {COMPRESSION_LEVEL}={level!r} is not "
                                f"an integer") from None
    return Compression(scheme, level)


def encode(arr: pa.Array, compression: Compression | None = None) -> tuple[list, E.ArrayEncoding]:
    """One page of a leaf column: its buffers and their description."""
    bufs = _Buffers()
    tree = _encode(arr, bufs, compression)
    return list(bufs), tree


def _encode(arr: pa.Array, bufs: _Buffers, compression=None) -> E.ArrayEncoding:
    dt = arr.type
    if pa.types.is_dictionary(dt):
        return _arrow_dictionary(arr, bufs)
    if blocks.is_variable(dt):
        if pa.types.is_string(dt) and _use_dictionary(arr):
            return _dictionary(arr, bufs)
        if compression is not None and compression.scheme == "fsst":
            # pylance's 2.0 FSST handles 32-bit offsets only (it cannot write or read
            # large_string/large_binary FSST pages): those stay plain
            if blocks.offset_bits(dt) == 32:
                return _fsst(arr, bufs)
            compression = None
        return binary_tree(arr, bufs, compression)
    if pa.types.is_struct(dt):
        if arr.null_count:
            raise InvalidInputError(struct_null_message(arr.null_count))
        return _packed(arr, bufs)
    n = len(arr)
    if pa.types.is_null(dt) or arr.null_count == n:  # (an empty page too, as pylance)
        return E.ArrayEncoding(nullable=E.Nullable(all_nulls=E.Nullable.AllNull()))
    validity = None
    if arr.null_count:
        validity = bufs.add(np.packbits(blocks.validity_of(arr), bitorder="little"))
    values = _values(arr, bufs)
    if validity is None:
        return _no_nulls(values)
    return E.ArrayEncoding(nullable=E.Nullable(some_nulls=E.Nullable.SomeNull(
        validity=_flat(1, validity), values=values)))


def _values(arr: pa.Array, bufs: _Buffers) -> E.ArrayEncoding:
    dt = arr.type
    if pa.types.is_fixed_size_list(dt):
        d = dt.list_size
        if d <= 0:
            raise NotSupportedError(f"fixed-size lists of size {d}")
        items = arr.values.slice(arr.offset * d, len(arr) * d)
        if blocks.is_variable(items.type) or pa.types.is_struct(items.type) or \
                pa.types.is_list(items.type) or pa.types.is_large_list(items.type):
            raise NotSupportedError(f"writing {dt} in a 2.0 file is not supported")
        return E.ArrayEncoding(fixed_size_list=E.FixedSizeList(
            dimension=d, items=_encode(items, bufs)))
    bits = blocks.fixed_bits(dt)
    if bits is None:
        raise NotSupportedError(f"writing {dt} in a 2.0 file is not supported")
    block, _ = blocks.from_arrow(arr)
    return _flat(bits, bufs.add(block.data))


def struct_null_message(count: int, name: str | None = None) -> str:
    what = f"struct field {name!r}" if name else "a struct field"
    return (f"{what} contains {count} null value(s), but Lance file version 2.0 does not "
            f"encode struct validity; use file version 2.1 or later")


def _variable(arr: pa.Array):
    """``(offsets from 0, bytes, validity or None)``; null rows hold no bytes."""
    block, validity = blocks.from_arrow(arr)
    offsets, data = block.offsets, block.data
    if validity is not None:
        lens = np.diff(offsets)
        if np.any(lens[~validity]):
            lens = np.where(validity, lens, 0)
            starts = offsets[:-1]
            offsets = np.zeros(len(arr) + 1, np.int64)
            np.cumsum(lens, out=offsets[1:])
            out = np.empty(int(offsets[-1]), np.uint8)
            if slices.concat_slices(data, starts, lens, out) != slices.OK:
                raise InvalidInputError("string offsets outside their data")  # unreachable
            data = out
    return offsets, data, validity


def binary_tree(arr: pa.Array, bufs: _Buffers, compression=None, parts=None) -> E.ArrayEncoding:
    offsets, data, validity = parts if parts is not None else _variable(arr)
    ends = offsets[1:].astype(np.uint64)
    adj = int(offsets[-1]) + 1 if len(ends) else 0
    if validity is not None:
        ends[~validity] += np.uint64(adj)
    idx = bufs.add(ends.astype("<u8"))
    if compression is not None and compression.scheme in ("zstd", "lz4"):
        scheme = general.ZSTD if compression.scheme == "zstd" else general.LZ4
        data = np.frombuffer(general.compress(data, scheme, compression.level), np.uint8)
    byt = bufs.add(data)
    flat = _flat(8, byt)
    if compression is not None and compression.scheme != "fsst":
        flat.flat.compression.scheme = compression.scheme
        if compression.level is not None:
            flat.flat.compression.level = compression.level
    return E.ArrayEncoding(binary=E.Binary(indices=_no_nulls(_flat(64, idx)),
                                           bytes=flat, null_adjustment=adj))


def _fsst(arr: pa.Array, bufs: _Buffers) -> E.ArrayEncoding:
    """Strings compressed with one FSST symbol table for the page."""
    offsets, data, validity = _variable(arr)
    codec = FsstCodec(Variable(offsets, data, len(arr), 64))
    codes = codec.codes
    inner = binary_tree(arr, bufs, parts=(codes.offsets, codes.data, validity))
    return E.ArrayEncoding(fsst=E.Fsst(binary=inner, symbol_table=codec.table.tobytes()))


def _use_dictionary(arr: pa.Array) -> bool:
    if len(arr) < DICT_MIN_ROWS:
        return False
    # like pylance's estimate, which stops at the threshold: a prefix with too many
    # values settles it without hashing the whole page
    for probe in (arr.slice(0, 4 * DICT_MAX_ITEMS), arr):
        if pc.count_distinct(probe, mode="only_valid").as_py() >= DICT_MAX_ITEMS:
            return False
    return True


def _dictionary(arr: pa.Array, bufs: _Buffers) -> E.ArrayEncoding:
    enc = pc.dictionary_encode(arr)
    items = enc.dictionary
    raw = np.asarray(enc.indices.fill_null(-1)).astype(np.int64) + 1
    if len(items) == 0:
        # as pylance: an all-null page keeps one (null) item
        items = pa.nulls(1, arr.type)
    idx = bufs.add(raw.astype(np.uint8))
    tree = binary_tree(items, bufs)
    return E.ArrayEncoding(dictionary=E.Dictionary(
        indices=_no_nulls(_flat(8, idx)), items=tree, num_dictionary_items=len(items)))


def _arrow_dictionary(arr: pa.DictionaryArray, bufs: _Buffers) -> E.ArrayEncoding:
    """An Arrow dictionary column as pylance stores it: its own keys (a null key points
    at a null item, appended when the dictionary has none) and its dictionary."""
    items = arr.dictionary
    if pa.types.is_dictionary(items.type) or pa.types.is_nested(items.type):
        raise NotSupportedError(f"writing {arr.type} in a 2.0 file is not supported")
    keys = arr.indices
    if keys.null_count:
        nulls = np.flatnonzero(np.asarray(items.is_null()))
        if len(nulls):
            fill = int(nulls[0])
        else:
            fill = len(items)
            items = pa.concat_arrays([items, pa.nulls(1, items.type)])
        keys = keys.fill_null(fill)
    raw = np.asarray(keys).astype(numpy_dtype(keys.type), copy=False)
    idx = bufs.add(raw)
    tree = _encode(items, bufs)
    return E.ArrayEncoding(dictionary=E.Dictionary(
        indices=_no_nulls(_flat(keys.type.bit_width, idx)), items=tree,
        num_dictionary_items=len(items)))


def _packed(arr: pa.Array, bufs: _Buffers) -> E.ArrayEncoding:
    bits = packed_struct.child_bits(arr.type)
    if bits is None:
        raise NotSupportedError(f"packed structs need whole-byte fixed-width children, not "
                                f"{arr.type}")
    block = packed_struct.pack(arr)
    inner = [_no_nulls(_flat(b, E.Buffer())) for b in bits]
    buf = bufs.add(block.data)
    return E.ArrayEncoding(packed_struct=E.PackedStruct(inner=inner, buffer=buf))


def list_offsets(lengths: np.ndarray, valid: np.ndarray | None) -> tuple[list, E.ArrayEncoding]:
    """An offsets page: u64 end offsets, ``end + num_items + 1`` for a null list."""
    ends = np.cumsum(lengths, dtype=np.int64).astype(np.uint64)
    num_items = int(ends[-1]) if len(ends) else 0
    adj = num_items + 1
    if valid is not None:
        ends[~valid] += np.uint64(adj)
    bufs = _Buffers()
    buf = bufs.add(ends.astype("<u8"))
    return list(bufs), E.ArrayEncoding(list=E.List(offsets=_no_nulls(_flat(64, buf)),
                                                   null_offset_adjustment=adj,
                                                   num_items=num_items))
