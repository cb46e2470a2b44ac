"""Decoding one 2.0 page: an ``ArrayEncoding`` tree over the page's buffers.

The tree names page buffers by index (``Buffer{buffer_index}``); every node knows
how many values it decodes (the page length, or ``length * dimension`` under a
fixed-size list). Trees pylance 14 writes in 2.0, with their buffers:

* ``nullable{no_nulls{values}}`` / ``nullable{some_nulls{validity: flat{1}, values}}``
  / ``nullable{all_nulls{}}`` (no buffers): validity is an LSB-first bitmap.
* ``flat{bits, buffer, compression?}``: values back to back (``bits == 1``: a bitmap).
  A compressed buffer is ``u64 LE raw size | zstd frame`` (or ``u32 | lz4 block``).
* ``binary{indices, bytes: flat{8}, null_adjustment}``: ``n`` u64 *end* offsets
  (page-local, no leading 0); a null row stores ``previous end + null_adjustment``.
  ``["a", None, "", "xyz"]`` → ends ``[1, 6, 1, 4]``, adjustment 5, bytes ``axyz``.
* ``dictionary{indices: flat{8}, items: binary, num_dictionary_items}``: index 0 is
  null, index k is item k-1 (for Arrow dictionary columns the indices are plain and
  null items sit in the dictionary).
* ``fixed_size_list{dimension, items}``, ``packed_struct{inner, buffer}`` (rows of
  the children's bytes back to back), ``fsst{binary, symbol_table}``.

Every count and offset is checked against the buffer it points into before use; a
bad one raises :class:`~lancenb.errors.CorruptFileError` naming the page.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb.encodings.blocks import FixedWidth, fixed_bits, is_variable, offset_bits
from lancenb.encodings.nptypes import numpy_dtype
from lancenb.encodings.physical import general, packed_struct
from lancenb.errors import CorruptFileError, NotSupportedError
from lancenb.kernels.fsst import fsst as kf

__all__ = ["Page", "decode", "take", "validity_bytes", "uint_values", "dictionary_take",
           "variable_array"]

_SCHEMES = {"zstd": general.ZSTD, "lz4": general.LZ4}
_MAX_DEPTH = 32


class Page:
    """A page's buffers (uint8 arrays) and where it is, for error messages."""

    def __init__(self, buffers: list, where: str):
        self.buffers = buffers
        self.where = where

    def buffer(self, ref) -> np.ndarray:
        if ref.buffer_type != 0:
            raise NotSupportedError(f"{self.where}: column/file buffers in 2.0 pages are not "
                                    f"supported")
        i = int(ref.buffer_index)
        if i >= len(self.buffers):
            raise CorruptFileError(f"{self.where}: encoding names buffer {i}, the page has "
                                   f"{len(self.buffers)}")
        return self.buffers[i]


def _corrupt(page: Page, what: str) -> CorruptFileError:
    return CorruptFileError(f"{page.where}: {what}")


def flat_bytes(flat, page: Page, n: int) -> np.ndarray:
    """The first bytes of a flat node's buffer holding ``n`` values (decompressed)."""
    bits = int(flat.bits_per_value)
    if bits <= 0 or (bits % 8 and bits != 1):
        raise NotSupportedError(f"{page.where}: flat values of {bits} bits")
    data = page.buffer(flat.buffer)
    scheme = flat.compression.scheme if flat.HasField("compression") else ""
    if scheme and scheme != "none":
        if scheme not in _SCHEMES:
            raise NotSupportedError(f"{page.where}: compression scheme {scheme!r}")
        data = np.frombuffer(general.decompress(data, _SCHEMES[scheme], page.where), np.uint8)
    need = (n + 7) // 8 if bits == 1 else n * (bits // 8)
    if len(data) < need:
        raise _corrupt(page, f"{len(data)} bytes hold fewer than {n} values of {bits} bits")
    return data[:need]


def _unwrap_no_nulls(enc):
    while enc.WhichOneof("array_encoding") == "nullable" and \
            enc.nullable.WhichOneof("nullability") == "no_nulls":
        enc = enc.nullable.no_nulls.values
    return enc


def uint_values(enc, page: Page, n: int) -> np.ndarray:
    """Unsigned integers (offsets, indices) under ``nullable{no_nulls{flat}}``."""
    enc = _unwrap_no_nulls(enc)
    if enc.WhichOneof("array_encoding") != "flat":
        raise NotSupportedError(f"{page.where}: integers encoded as "
                                f"{enc.WhichOneof('array_encoding')}")
    bits = int(enc.flat.bits_per_value)
    if bits not in (8, 16, 32, 64):
        raise _corrupt(page, f"offsets or indices of {bits} bits")
    return np.frombuffer(flat_bytes(enc.flat, page, n), f"<u{bits // 8}")


def validity_bytes(enc, page: Page, n: int) -> np.ndarray:
    """An LSB-first validity bitmap (``flat{1}``) of ``n`` values."""
    if enc.WhichOneof("array_encoding") != "flat" or enc.flat.bits_per_value != 1:
        raise NotSupportedError(f"{page.where}: validity encoded as "
                                f"{enc.WhichOneof('array_encoding')}")
    return flat_bytes(enc.flat, page, n)


def _with_validity(arr: pa.Array, vbits: np.ndarray) -> pa.Array:
    n = len(arr)
    vbuf = pa.py_buffer(vbits)
    dt = arr.type
    if pa.types.is_null(dt):
        return arr
    if pa.types.is_dictionary(dt):
        valid = np.unpackbits(vbits, bitorder="little", count=n).astype(bool)
        return pa.DictionaryArray.from_arrays(
            pa.array(arr.indices.to_numpy(zero_copy_only=False), mask=~valid), arr.dictionary)
    if pa.types.is_fixed_size_list(dt):
        return pa.Array.from_buffers(dt, n, [vbuf], children=[arr.values])
    if pa.types.is_struct(dt):
        return pa.Array.from_buffers(dt, n, [vbuf],
                                     children=[arr.field(i) for i in range(dt.num_fields)])
    return pa.Array.from_buffers(dt, n, [vbuf] + arr.buffers()[1:])


def decode(enc, page: Page, n: int, dt: pa.DataType, depth: int = 0) -> pa.Array:
    """``n`` values of Arrow type ``dt`` from an ArrayEncoding tree."""
    if depth > _MAX_DEPTH:
        raise _corrupt(page, "encoding tree is too deep")
    kind = enc.WhichOneof("array_encoding")
    if kind == "nullable":
        nk = enc.nullable.WhichOneof("nullability")
        if nk == "all_nulls" or pa.types.is_null(dt):
            return pa.nulls(n, dt)
        if nk == "no_nulls":
            return decode(enc.nullable.no_nulls.values, page, n, dt, depth + 1)
        if nk == "some_nulls":
            sn = enc.nullable.some_nulls
            vbits = validity_bytes(sn.validity, page, n)
            return _with_validity(decode(sn.values, page, n, dt, depth + 1), vbits)
        raise _corrupt(page, "nullable encoding without a nullability")
    if kind == "flat":
        return _flat(enc.flat, page, n, dt)
    if kind == "binary":
        return variable_array(dt, *_binary_parts(enc.binary, page, n))
    if kind == "dictionary":
        return _dictionary(enc.dictionary, page, n, dt, depth)
    if kind == "fixed_size_list":
        f = enc.fixed_size_list
        if not pa.types.is_fixed_size_list(dt) or int(f.dimension) != dt.list_size:
            raise _corrupt(page, f"fixed-size list of dimension {f.dimension} for a {dt} "
                                 f"column")
        items = decode(f.items, page, n * dt.list_size, dt.value_type, depth + 1)
        return pa.Array.from_buffers(dt, n, [None], children=[items])
    if kind == "packed_struct":
        return _packed(enc.packed_struct, page, n, dt)
    if kind == "fsst":
        return _fsst(enc.fsst, page, n, dt)
    if kind is None:
        raise _corrupt(page, "empty ArrayEncoding")
    raise NotSupportedError(f"{page.where}: the 2.0 encoding {kind!r} is not supported")


def _flat(flat, page: Page, n: int, dt: pa.DataType) -> pa.Array:
    if pa.types.is_null(dt):
        return pa.nulls(n)
    bits = int(flat.bits_per_value)
    want = fixed_bits(dt)
    if pa.types.is_fixed_size_list(dt) or want is None or want != bits:
        raise _corrupt(page, f"flat values of {bits} bits for a {dt} column")
    data = flat_bytes(flat, page, n)
    return pa.Array.from_buffers(dt, n, [None, pa.py_buffer(data)])


def _binary_parts(b, page: Page, n: int):
    """``(offsets int64[n+1], bytes, validity bool[n] or None)`` of a binary node."""
    ends = uint_values(b.indices, page, n)
    adj = int(b.null_adjustment)
    if len(ends) and int(ends.max()) >= 1 << 62:
        raise _corrupt(page, f"string offset {int(ends.max())} is out of range")
    ends = ends.astype(np.int64)
    valid = None
    if adj > 0:
        null = ends >= adj
        if null.any():
            valid = ~null
            ends = np.where(null, ends - adj, ends)
    offsets = np.zeros(n + 1, np.int64)
    offsets[1:] = ends
    if n and np.any(offsets[1:] < offsets[:-1]):
        bad = int(np.flatnonzero(offsets[1:] < offsets[:-1])[0])
        raise _corrupt(page, f"string end offset of row {bad} goes backwards")
    total = int(offsets[-1])
    if b.bytes.WhichOneof("array_encoding") != "flat" or b.bytes.flat.bits_per_value != 8:
        raise NotSupportedError(f"{page.where}: string bytes encoded as "
                                f"{b.bytes.WhichOneof('array_encoding')}")
    data = flat_bytes(b.bytes.flat, page, total)
    return offsets, data, valid


def variable_array(dt: pa.DataType, offsets: np.ndarray, data: np.ndarray,
                    valid: np.ndarray | None) -> pa.Array:
    if not is_variable(dt):
        raise CorruptFileError(f"string values for a {dt} column")
    n = len(offsets) - 1
    if offset_bits(dt) == 32:
        if offsets[-1] > np.iinfo(np.int32).max:
            raise NotSupportedError(f"{dt} page with more than 2 GiB of data")
        offsets = offsets.astype(np.int32)
    vbuf = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(dt, n, [vbuf, pa.py_buffer(offsets), pa.py_buffer(data)])


def _dictionary(d, page: Page, n: int, dt: pa.DataType, depth: int) -> pa.Array:
    k = int(d.num_dictionary_items)
    idx = uint_values(d.indices, page, n)
    if pa.types.is_dictionary(dt):
        # an Arrow dictionary column: plain indices, nulls live in the dictionary
        if k - 1 > np.iinfo(numpy_dtype(dt.index_type)).max:
            raise _corrupt(page, f"{k} dictionary items for {dt.index_type} keys")
        items = decode(d.items, page, k, dt.value_type, depth + 1)
        if n and int(idx.max()) >= k:
            raise _corrupt(page, f"dictionary index {int(idx.max())} with {k} items")
        item_valid = np.asarray(items.is_valid())
        ind = pa.array(idx.astype(numpy_dtype(dt.index_type)),
                       mask=~item_valid[idx.astype(np.int64)] if items.null_count else None)
        return pa.DictionaryArray.from_arrays(ind, items)
    return dictionary_take(d, page, idx, dt, depth)


def dictionary_take(d, page: Page, idx: np.ndarray, dt: pa.DataType, depth: int = 0):
    """Values of keys ``idx`` (0 = null, k = item k-1) of a dictionary node."""
    k = int(d.num_dictionary_items)
    items = decode(d.items, page, k, dt, depth + 1)
    if len(idx) and int(idx.max()) > k:
        raise _corrupt(page, f"dictionary index {int(idx.max())} with {k} items")
    idx = idx.astype(np.int64)
    null = idx == 0
    return items.take(pa.array(np.where(null, 0, idx - 1), mask=null if null.any() else None))


def _packed(ps, page: Page, n: int, dt: pa.DataType) -> pa.Array:
    bits = packed_struct.child_bits(dt)
    inner = []
    for child in ps.inner:
        c = _unwrap_no_nulls(child)
        if c.WhichOneof("array_encoding") != "flat":
            raise NotSupportedError(f"{page.where}: packed struct child encoded as "
                                    f"{c.WhichOneof('array_encoding')}")
        inner.append(int(c.flat.bits_per_value))
    if bits is None or inner != bits:
        raise _corrupt(page, f"packed struct of {inner} bits for a {dt} column")
    width = sum(bits) // 8
    data = page.buffer(ps.buffer)
    if len(data) < n * width:
        raise _corrupt(page, f"{len(data)} bytes hold fewer than {n} packed rows of {width}")
    return packed_struct.unpack(dt, FixedWidth(sum(bits), data[:n * width], n), None)


_FSST_ERRORS = {kf.BAD_OFFSETS: "compressed string offsets are inconsistent",
                kf.BAD_CODE: "a code points past the symbol table",
                kf.ESCAPE_AT_END: "an escape code ends a string",
                kf.OUTPUT_TOO_SMALL: "strings decompress to more than expected"}


def _fsst(f, page: Page, n: int, dt: pa.DataType) -> pa.Array:
    if f.binary.WhichOneof("array_encoding") != "binary":
        raise NotSupportedError(f"{page.where}: FSST over "
                                f"{f.binary.WhichOneof('array_encoding')}")
    offsets, codes, valid = _binary_parts(f.binary.binary, page, n)
    symbols, lens, info = kf.new_table()
    if kf.parse_table(np.frombuffer(bytes(f.symbol_table), np.uint8), symbols, lens,
                      info) != kf.OK:
        raise _corrupt(page, "FSST symbol table is invalid")
    out_offsets = np.empty(n + 1, np.int64)
    out = np.empty(8 * len(codes) + 8, np.uint8)
    status = kf.decompress(offsets, np.ascontiguousarray(codes), symbols, lens, info,
                           out_offsets, out)
    if status < 0:
        raise _corrupt(page, _FSST_ERRORS.get(int(status), "bad FSST data"))
    return variable_array(dt, out_offsets, out[:status], valid)


def take(enc, page: Page, n: int, dt: pa.DataType, rows: np.ndarray) -> pa.Array:
    """Rows ``rows`` (page-local, sorted) of a page whose buffers were read whole."""
    arr = decode(enc, page, n, dt)
    k = len(rows)
    if k and int(rows[-1]) - int(rows[0]) == k - 1 and np.all(np.diff(rows) == 1):
        return arr.slice(int(rows[0]), k)  # a range
    return arr.take(pa.array(rows))
