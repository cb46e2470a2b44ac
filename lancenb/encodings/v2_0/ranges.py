"""Random access into one 2.0 page without reading it whole.

Fixed-width values (``nullable{...{flat{bits}}}`` with whole-byte, uncompressed values,
or vectors ``fixed_size_list{items: flat}``): row ``r`` is ``width`` bytes at
``buffer + r * width``, so a take reads just those byte ranges (near ones merged by
the I/O layer) plus the validity bitmap. Strings (``binary`` with uncompressed u64
end offsets): the end offsets of rows ``r - 1`` and ``r`` first, then the bytes
between them; list offsets the same way. Dictionaries: the keys of the rows, then
the (small) dictionary. Everything else, and takes that would touch most of a page,
read the page whole and decode it (:func:`lancenb.encodings.v2_0.decode.decode`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb.encodings.blocks import fixed_bits
from lancenb.encodings.v2_0 import decode as dec
from lancenb.errors import CorruptFileError
from lancenb.kernels import gather as kg
from lancenb.kernels import slices

__all__ = ["take", "list_offsets"]

# Read the page whole when the wanted bytes are more than this share of it.
DENSE_SHARE = 0.25


def _plain_flat(enc) -> bool:
    return (enc.WhichOneof("array_encoding") == "flat" and enc.flat.bits_per_value % 8 == 0
            and enc.flat.buffer.buffer_type == 0
            and not (enc.flat.HasField("compression") and enc.flat.compression.scheme
                     not in ("", "none")))


def _shape(enc, dt):
    """``(validity Buffer ref or None, values Buffer ref, row bytes, dim)`` or None."""
    if enc.WhichOneof("array_encoding") != "nullable":
        return None
    nk = enc.nullable.WhichOneof("nullability")
    if nk == "no_nulls":
        vref, values = None, enc.nullable.no_nulls.values
    elif nk == "some_nulls":
        v = enc.nullable.some_nulls.validity
        if v.WhichOneof("array_encoding") != "flat" or v.flat.bits_per_value != 1 or \
                v.flat.HasField("compression") and v.flat.compression.scheme not in ("", "none"):
            return None
        vref, values = v.flat.buffer, enc.nullable.some_nulls.values
    else:
        return None
    dim = 1
    if values.WhichOneof("array_encoding") == "fixed_size_list":
        if not pa.types.is_fixed_size_list(dt) or pa.types.is_nested(dt.value_type):
            return None
        dim = int(values.fixed_size_list.dimension)
        items = values.fixed_size_list.items
        if items.WhichOneof("array_encoding") == "nullable":
            if items.nullable.WhichOneof("nullability") != "no_nulls":
                return None
            items = items.nullable.no_nulls.values
        values = items
        item_t = dt.value_type
    else:
        item_t = dt
    if not _plain_flat(values) or pa.types.is_fixed_size_list(item_t) or \
            fixed_bits(item_t) != values.flat.bits_per_value or dim <= 0:
        return None
    if dim != (dt.list_size if pa.types.is_fixed_size_list(dt) else 1):
        return None
    return vref, values.flat.buffer, int(values.flat.bits_per_value) // 8 * dim, dim


def _buffer_pos(c, p: int, ref) -> tuple[int, int]:
    i = int(ref.buffer_index)
    if i >= len(c.offsets[p]):
        raise CorruptFileError(f"{c.where}, page {p}: encoding names buffer {i}, the page has "
                               f"{len(c.offsets[p])}")
    return int(c.offsets[p][i]), int(c.sizes[p][i])


def _validity(io, c, p: int, vref, n: int, local: np.ndarray):
    if vref is None:
        return None
    pos, size = _buffer_pos(c, p, vref)
    if size < (n + 7) // 8:
        raise CorruptFileError(f"{c.where}, page {p}: validity of {size} bytes for {n} rows")
    lo, hi = int(local[0]) // 8, int(local[-1]) // 8 + 1
    bits = np.frombuffer(io.read(pos + lo, hi - lo), np.uint8)
    valid = np.unpackbits(bits, bitorder="little").astype(bool)[local - lo * 8]
    return None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))


def take(io, c, p: int, local: np.ndarray, dt: pa.DataType, page_fn) -> pa.Array:
    """Rows ``local`` (page-local, sorted) of page ``p`` of column ``c``."""
    enc = c.encoding(p)
    n = int(c.lengths[p])
    k = len(local)
    if k and (int(local[0]) < 0 or int(local[-1]) >= n):
        raise CorruptFileError(f"{c.where}, page {p}: row {int(local[-1])} of {n}")
    if enc.WhichOneof("array_encoding") == "nullable" and \
            enc.nullable.WhichOneof("nullability") == "all_nulls":
        return pa.nulls(k, dt)
    shape = _shape(enc, dt)
    if shape is not None and k:
        vref, ref, width, dim = shape
        pos, size = _buffer_pos(c, p, ref)
        if size < n * width:
            raise CorruptFileError(f"{c.where}, page {p}: {size} bytes hold fewer than {n} "
                                   f"values of {width} bytes")
        if k * width < DENSE_SHARE * size:
            return _take_fixed(io, c, p, local, dt, vref, pos, width, dim, n)
    elif k and enc.WhichOneof("array_encoding") == "binary":
        got = _take_binary(io, c, p, local, dt, enc.binary, n)
        if got is not None:
            return got
    elif k and enc.WhichOneof("array_encoding") == "dictionary" and \
            not pa.types.is_dictionary(dt):
        got = _take_dictionary(io, c, p, local, dt, enc.dictionary, n, page_fn)
        if got is not None:
            return got
    return dec.take(enc, page_fn(c, p), n, dt, local)


def _take_fixed(io, c, p, local, dt, vref, pos, width, dim, n) -> pa.Array:
    k = len(local)
    out = _gather(io, pos, local, width, f"{c.where}, page {p}")
    vbuf = _validity(io, c, p, vref, n, local)
    if pa.types.is_fixed_size_list(dt):
        child = pa.Array.from_buffers(dt.value_type, k * dim, [None, pa.py_buffer(out)])
        return pa.Array.from_buffers(dt, k, [vbuf], children=[child])
    return pa.Array.from_buffers(dt, k, [vbuf, pa.py_buffer(out)])


def _u64_ref(enc):
    """The Buffer of plain u64 values under ``nullable{no_nulls{flat{64}}}``, or None."""
    if enc.WhichOneof("array_encoding") == "nullable" and \
            enc.nullable.WhichOneof("nullability") == "no_nulls":
        enc = enc.nullable.no_nulls.values
    if not _plain_flat(enc) or enc.flat.bits_per_value != 64:
        return None
    return enc.flat.buffer


def _is_run(idx: np.ndarray) -> bool:
    """``idx`` is ``a, a+1, ..., b`` (a range read)."""
    k = len(idx)
    return k > 1 and int(idx[-1]) - int(idx[0]) == k - 1 and bool(np.all(np.diff(idx) == 1))


def _gather(io, pos: int, idx: np.ndarray, width: int, where: str) -> np.ndarray:
    """Values ``idx`` of ``width`` bytes each from the buffer at ``pos`` (one read for a
    run of rows, merged ranges otherwise)."""
    if _is_run(idx):
        return np.frombuffer(io.read(pos + width * int(idx[0]), width * len(idx)), np.uint8)
    buf, at = io.read_ranges_np(pos + width * idx, np.full(len(idx), width, np.int64))
    raw = np.empty(width * len(idx), np.uint8)
    if kg.gather_fixed(buf, at, width, raw) != kg.OK:
        raise CorruptFileError(f"{where}: values outside what was read")
    return raw


def _ends_at(io, c, p, ref, local, n, adj):
    """``(starts, ends, null)`` of rows ``local`` from u64 end offsets with a null
    adjustment, reading only the offsets of those rows and of the rows before them."""
    where = f"{c.where}, page {p}"
    opos, osize = _buffer_pos(c, p, ref)
    if osize < 8 * n:
        raise CorruptFileError(f"{where}: {osize} bytes of offsets for {n} rows")
    k = len(local)
    prev = local - 1
    if _is_run(local):
        # one read: the ends of rows lo-1 (when there is one) .. hi
        lo = int(local[0])
        got = _gather(io, opos, np.arange(max(lo - 1, 0), int(local[-1]) + 1), 8,
                      where).view("<u8")
        # as below: the rows' ends, then the ends of the rows before them
        vals = np.concatenate([got[1:], got[:k]] if lo else [got, got[:k - 1]])
    else:
        want = np.concatenate([local, prev[prev >= 0]])
        vals = _gather(io, opos, want, 8, where).view("<u8")
    if len(vals) and int(vals.max()) >= 1 << 62:
        raise CorruptFileError(f"{where}: offset {int(vals.max())} is out of range")
    vals = vals.astype(np.int64)
    null_all = (vals >= adj) if adj > 0 else np.zeros(len(vals), bool)
    vals = np.where(null_all, vals - adj, vals)
    starts = np.zeros(k, np.int64)
    starts[prev >= 0] = vals[k:]
    ends = vals[:k]
    if np.any(ends < starts):
        raise CorruptFileError(f"{where}: offsets go backwards")
    return starts, ends, null_all[:k]


def list_offsets(io, c, p: int, local: np.ndarray):
    """``(starts, ends, validity or None)`` of rows ``local`` of a list offsets page,
    or None when reading the page whole is the better plan."""
    lst = c.encoding(p).list
    ref = _u64_ref(lst.offsets)
    n = int(c.lengths[p])
    if ref is None or 16 * len(local) >= DENSE_SHARE * 8 * n:
        return None
    starts, ends, null = _ends_at(io, c, p, ref, local, n, int(lst.null_offset_adjustment))
    if len(ends) and int(ends.max()) > int(lst.num_items):
        raise CorruptFileError(f"{c.where}, page {p}: list offsets past the page's "
                               f"{int(lst.num_items)} items")
    return starts, ends, (~null if null.any() else None)


def _take_dictionary(io, c, p, local, dt, d, n, page_fn):
    idx = d.indices
    if idx.WhichOneof("array_encoding") == "nullable" and \
            idx.nullable.WhichOneof("nullability") == "no_nulls":
        idx = idx.nullable.no_nulls.values
    if not _plain_flat(idx) or idx.flat.bits_per_value not in (8, 16, 32, 64):
        return None
    width = int(idx.flat.bits_per_value) // 8
    pos, size = _buffer_pos(c, p, idx.flat.buffer)
    if size < n * width:
        raise CorruptFileError(f"{c.where}, page {p}: {size} bytes of indices for {n} rows")
    if len(local) * width >= DENSE_SHARE * size:
        return None
    keys = _gather(io, pos, local, width, f"{c.where}, page {p}").view(f"<u{width}")
    # the items: every page buffer except the indices (a tiny read)
    skip = int(idx.flat.buffer.buffer_index)
    want = [(o, z) for i, (o, z) in enumerate(zip(c.offsets[p], c.sizes[p])) if i != skip]
    bufs = iter(io.read_ranges(want))
    page = dec.Page([np.zeros(0, np.uint8) if i == skip else np.frombuffer(next(bufs), np.uint8)
                     for i in range(len(c.offsets[p]))], f"{c.where}, page {p}")
    return dec.dictionary_take(d, page, keys, dt)


def _take_binary(io, c, p, local, dt, b, n):
    ref = _u64_ref(b.indices)
    if ref is None or not _plain_flat(b.bytes) or b.bytes.flat.bits_per_value != 8:
        return None
    osize = _buffer_pos(c, p, ref)[1]
    bpos, bsize = _buffer_pos(c, p, b.bytes.flat.buffer)
    k = len(local)
    if 16 * k >= DENSE_SHARE * (osize + bsize):
        return None
    starts, ends, null = _ends_at(io, c, p, ref, local, n, int(b.null_adjustment))
    lens = ends - starts
    if np.any(ends > bsize):
        raise CorruptFileError(f"{c.where}, page {p}: string offsets go backwards or past the "
                               f"{bsize} bytes of the page")
    lens = np.where(null, 0, lens)
    offsets = np.zeros(k + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    data = np.empty(int(offsets[-1]), np.uint8)
    some = lens > 0
    if _is_run(local) and np.array_equal(starts[1:], ends[:-1]):
        # a run of rows: their bytes are one range
        data = np.frombuffer(io.read(bpos + int(starts[0]), int(offsets[-1])), np.uint8)
    elif some.any():
        dbuf, dat = io.read_ranges_np(bpos + starts[some], lens[some])
        if slices.concat_slices(dbuf, dat, lens[some], data) != slices.OK:
            raise CorruptFileError(f"{c.where}, page {p}: string bytes outside what was read")
    return dec.variable_array(dt, offsets, data, ~null if null.any() else None)
