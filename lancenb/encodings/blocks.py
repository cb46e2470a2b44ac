"""Data blocks: the plain buffers an Arrow array is cut into before encoding.

* :class:`FixedWidth` -- ``num_values`` values of ``bits`` bits each, packed
  (``bits == 1`` is an LSB-first bitmap, as Arrow booleans are).
* :class:`Variable` -- Arrow-style ``offsets`` (int64, ``num_values + 1``, starting at
  0) into ``data``.
* :class:`FixedSizeList` -- ``num_values`` vectors of ``dim`` fixed-width items each
  (``data`` holds the items back to back), with the items' own validity.

Validity is carried separately (a numpy bool array, or ``None`` when every value is
valid). Converting back builds Arrow arrays with ``pa.Array.from_buffers``: no
per-row Python either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pyarrow as pa

from lancenb.errors import CorruptFileError, NotSupportedError
from lancenb.kernels import gather as kg
from lancenb.kernels import slices

__all__ = ["FixedWidth", "Variable", "FixedSizeList", "DictionaryIndices", "from_arrow",
           "to_arrow", "fixed_bits", "is_variable", "is_vector", "offset_bits", "take_ranges"]


@dataclass
class FixedWidth:
    bits: int
    data: np.ndarray  # uint8
    num_values: int


@dataclass
class Variable:
    offsets: np.ndarray  # int64, num_values + 1, offsets[0] == 0
    data: np.ndarray  # uint8
    num_values: int
    offset_bits: int  # 32 or 64: the width the column's Arrow type uses


@dataclass
class FixedSizeList:
    """Vectors: ``num_values`` rows of ``dim`` items of ``item_bits`` bits (whole bytes).

    ``item_validity`` (bool per item, ``num_values * dim``) is None when no item is
    null; a row's own nullness travels separately, like any value's.
    """

    dim: int
    item_bits: int
    data: np.ndarray  # uint8, num_values * dim * item_bits / 8
    item_validity: np.ndarray | None
    num_values: int

    @property
    def bits(self) -> int:
        return self.dim * self.item_bits


@dataclass
class DictionaryIndices:
    """Decoded dictionary indices (0-based) and the decoded dictionary items."""

    indices: np.ndarray  # an unsigned integer array
    items: pa.Array
    num_values: int


def is_variable(dt: pa.DataType) -> bool:
    return (pa.types.is_string(dt) or pa.types.is_binary(dt) or pa.types.is_large_string(dt)
            or pa.types.is_large_binary(dt))


def offset_bits(dt: pa.DataType) -> int:
    return 64 if (pa.types.is_large_string(dt) or pa.types.is_large_binary(dt)) else 32


@lru_cache(maxsize=1024)
def is_vector(dt: pa.DataType) -> bool:
    """A fixed-size list of whole-byte fixed-width primitives (a vector type)."""
    if not pa.types.is_fixed_size_list(dt) or pa.types.is_nested(dt.value_type):
        return False  # (a struct has fixed_bits when packed, but is no vector item)
    bits = fixed_bits(dt.value_type)
    return bits is not None and bits % 8 == 0 and dt.list_size > 0


@lru_cache(maxsize=1024)
def fixed_bits(dt: pa.DataType) -> int | None:
    """Bits per value of a fixed-width primitive type (a vector: all its items), or
    None."""
    if pa.types.is_fixed_size_list(dt):
        return dt.list_size * fixed_bits(dt.value_type) if is_vector(dt) else None
    if pa.types.is_struct(dt):
        # a packed struct's rows: its children back to back
        bits = [fixed_bits(f.type) for f in dt]
        if not bits or any(b is None or b % 8 for b in bits):
            return None
        return sum(bits)
    if pa.types.is_boolean(dt):
        return 1
    if pa.types.is_fixed_size_binary(dt):
        return dt.byte_width * 8
    if (pa.types.is_integer(dt) or pa.types.is_floating(dt) or pa.types.is_temporal(dt)
            or pa.types.is_decimal(dt)):
        return dt.bit_width
    return None


def _u8(buf: pa.Buffer | None) -> np.ndarray:
    if buf is None:
        return np.zeros(0, np.uint8)
    return np.frombuffer(buf, dtype=np.uint8)


def validity_of(arr: pa.Array) -> np.ndarray | None:
    """Validity as a bool array, or None when nothing is null."""
    if arr.null_count == 0:
        return None
    if pa.types.is_null(arr.type):
        return np.zeros(len(arr), dtype=bool)
    bits = _u8(arr.buffers()[0])
    return np.unpackbits(bits, bitorder="little")[arr.offset:arr.offset + len(arr)].astype(bool)


def from_arrow(arr: pa.Array):
    """Cut a flat Arrow array into ``(block, validity)``."""
    dt = arr.type
    n = len(arr)
    bufs = arr.buffers()
    if is_vector(dt):
        d = dt.list_size
        width = fixed_bits(dt.value_type) // 8
        child = arr.values.slice(arr.offset * d, n * d)  # .values ignores the offset
        cbuf = _u8(child.buffers()[1])
        data = cbuf[child.offset * width:(child.offset + n * d) * width]
        return FixedSizeList(d, width * 8, data, validity_of(child), n), validity_of(arr)
    if pa.types.is_struct(dt):
        from lancenb.encodings.physical import packed_struct

        return packed_struct.pack(arr), validity_of(arr)
    if pa.types.is_dictionary(dt) or pa.types.is_nested(dt):
        raise NotSupportedError(f"writing {dt} columns is not supported yet")
    if is_variable(dt):
        ob = offset_bits(dt)
        raw = np.frombuffer(bufs[1], dtype=np.int32 if ob == 32 else np.int64)
        offs = raw[arr.offset:arr.offset + n + 1].astype(np.int64)
        if n == 0:
            offs = np.zeros(1, np.int64)
        data = _u8(bufs[2])[offs[0]:offs[-1]]
        return Variable(offs - offs[0], data, n, ob), validity_of(arr)
    bits = fixed_bits(dt)
    if bits is None:
        raise NotSupportedError(f"writing {dt} columns is not supported yet")
    raw = _u8(bufs[1])
    if bits == 1:
        if arr.offset % 8 == 0:
            data = raw[arr.offset // 8:(arr.offset + n + 7) // 8]
        else:
            unpacked = np.unpackbits(raw, bitorder="little")[arr.offset:arr.offset + n]
            data = np.packbits(unpacked, bitorder="little")
        return FixedWidth(1, data, n), validity_of(arr)
    width = bits // 8
    return FixedWidth(bits, raw[arr.offset * width:(arr.offset + n) * width], n), validity_of(arr)


def _validity_buffer(validity: np.ndarray | None) -> pa.Buffer | None:
    if validity is None or validity.all():
        return None
    return pa.py_buffer(np.packbits(validity, bitorder="little"))


def to_arrow(dt: pa.DataType, block, validity: np.ndarray | None) -> pa.Array:
    """Build an Arrow array of type ``dt`` from a decoded block and validity."""
    if isinstance(block, DictionaryIndices):
        idx = block.indices.astype(np.int64, copy=False)
        if idx.size and (int(idx.max()) >= len(block.items) or int(idx.min()) < 0):
            bad = idx[(idx >= len(block.items)) | (idx < 0)]
            if validity is None or np.any(validity[(idx >= len(block.items)) | (idx < 0)]):
                raise CorruptFileError(f"dictionary index {int(bad[0])} is out of range "
                                       f"(the dictionary has {len(block.items)} items)")
            idx = np.where(validity, idx, 0)
        mask = None if validity is None else ~validity
        return block.items.take(pa.array(idx, mask=mask))
    vbuf = _validity_buffer(validity)
    if pa.types.is_fixed_size_list(dt):
        return _vector_to_arrow(dt, block, vbuf)
    if pa.types.is_struct(dt) and isinstance(block, FixedWidth):
        from lancenb.encodings.physical import packed_struct

        return packed_struct.unpack(dt, block, vbuf)
    if isinstance(block, FixedSizeList):
        raise CorruptFileError(f"vector values for a {dt} column")
    if isinstance(block, Variable):
        n = block.num_values
        if offset_bits(dt) == 32:
            if block.offsets[-1] > np.iinfo(np.int32).max:
                # too many bytes for 32-bit offsets: the caller splits pages, so this is
                # only reachable with a single page over 2 GiB
                raise NotSupportedError(f"{dt} page with more than 2 GiB of data")
            offs = block.offsets.astype(np.int32)
        else:
            offs = block.offsets
        return pa.Array.from_buffers(dt, n, [vbuf, pa.py_buffer(offs), pa.py_buffer(block.data)])
    return pa.Array.from_buffers(dt, block.num_values, [vbuf, pa.py_buffer(block.data)])


def _vector_to_arrow(dt: pa.DataType, block, vbuf) -> pa.Array:
    if not is_vector(dt):
        raise NotSupportedError(f"reading {dt} columns is not supported yet")
    d = dt.list_size
    ibits = fixed_bits(dt.value_type)
    n = block.num_values
    if isinstance(block, FixedSizeList):
        if block.dim != d or block.item_bits != ibits:
            raise CorruptFileError(f"vectors of {block.dim} x {block.item_bits}-bit items for "
                                   f"a {dt} column")
        ivalid = block.item_validity
    elif isinstance(block, FixedWidth) and block.bits == d * ibits:
        ivalid = None
    else:
        raise CorruptFileError(f"values of {getattr(block, 'bits', 'variable')} bits for a "
                               f"{dt} column")
    if len(block.data) != n * d * ibits // 8:
        raise CorruptFileError(f"{len(block.data)} bytes of vector data for {n} {dt} values")
    child = pa.Array.from_buffers(dt.value_type, n * d,
                                  [_validity_buffer(ivalid), pa.py_buffer(block.data)])
    return pa.Array.from_buffers(dt, n, [vbuf], children=[child])


def _expand(starts: np.ndarray, ends: np.ndarray, limit: int, total: int) -> np.ndarray:
    idx = np.empty(total, np.int64)
    if slices.expand_ranges(starts, ends, limit, idx) != total:
        raise CorruptFileError(f"value ranges fall outside the {limit} values decoded")
    return idx


def _concat(src: np.ndarray, starts: np.ndarray, sizes: np.ndarray, total: int) -> np.ndarray:
    out = np.empty(total, src.dtype)
    if slices.concat_slices(src, starts, sizes, out) != slices.OK:
        raise CorruptFileError(f"value ranges fall outside the {len(src)} decoded")
    return out


def take_ranges(block, starts: np.ndarray, ends: np.ndarray):
    """The values ``[starts[i], ends[i])`` of ``block``, back to back, as a block of
    the same kind (a gather of whole runs: rows of a nested column)."""
    starts = np.ascontiguousarray(starts, np.int64)
    ends = np.ascontiguousarray(ends, np.int64)
    n = block.num_values
    if len(starts) != len(ends) or np.any(ends < starts) or (
            len(starts) and (int(starts.min()) < 0 or int(ends.max()) > n)):
        raise CorruptFileError(f"value ranges fall outside the {n} values decoded")
    sizes = ends - starts
    total = int(sizes.sum())
    if isinstance(block, DictionaryIndices):
        return DictionaryIndices(_concat(block.indices[:n], starts, sizes, total), block.items,
                                 total)
    if isinstance(block, Variable):
        offs = block.offsets
        if len(offs) != n + 1:
            raise CorruptFileError(f"{len(offs)} offsets for {n} values")
        b0, b1 = offs[starts], offs[ends]
        data = _concat(block.data, b0, b1 - b0, int((b1 - b0).sum()))
        idx = _expand(starts, ends, n, total)
        out = np.zeros(total + 1, np.int64)
        np.cumsum(offs[idx + 1] - offs[idx], out=out[1:])
        return Variable(out, data, total, block.offset_bits)
    if isinstance(block, FixedSizeList):
        w = block.dim * block.item_bits // 8
        data = _concat(block.data, starts * w, sizes * w, total * w)
        iv = block.item_validity
        if iv is not None:
            d = block.dim
            iv = iv[_expand(starts * d, ends * d, n * d, total * d)]
        return FixedSizeList(block.dim, block.item_bits, data, iv, total)
    if block.bits == 1:
        idx = _expand(starts, ends, n, total)
        out = np.empty((total + 7) // 8, np.uint8)
        if kg.gather_bits(block.data, idx, out) != kg.OK:
            raise CorruptFileError(f"value ranges fall outside the {n} values decoded")
        return FixedWidth(1, out, total)
    if block.bits % 8:
        raise NotSupportedError(f"{block.bits}-bit values in nested columns")
    w = block.bits // 8
    return FixedWidth(block.bits, _concat(block.data, starts * w, sizes * w, total * w), total)
