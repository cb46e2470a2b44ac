"""Data blocks: the plain buffers an Arrow array is cut into before encoding.

* :class:`FixedWidth` -- ``num_values`` values of ``bits`` bits each, packed
  (``bits == 1`` is an LSB-first bitmap, as Arrow booleans are).
* :class:`Variable` -- Arrow-style ``offsets`` (int64, ``num_values + 1``, starting at
  0) into ``data``.
* :class:`FixedSizeList` -- ``num_values`` vectors (fixed-size lists, nested to any
  depth, of booleans or whole-byte items; ``data`` holds the items back to back), with
  the validity of every layer inside the row.

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

__all__ = ["FixedWidth", "Variable", "FixedSizeList", "DictionaryIndices", "cum_dims", "from_arrow",
           "to_arrow", "to_dictionary_arrow", "fixed_bits", "is_variable", "is_vector",
           "vector_shape", "offset_bits",
           "take_ranges", "packed_child_bits", "pack_struct_rows", "unpack_struct_rows"]


@dataclass
class FixedWidth:
    """``num_values`` values of ``bits`` bits each, packed in ``data`` (uint8).

    ``bits == 1`` is an LSB-first bitmap, as Arrow booleans are.

    Examples
    --------
    >>> import numpy as np
    >>> FixedWidth(16, np.array([1, 0, 2, 0], np.uint8), 2).num_values
    2
    """

    bits: int
    data: np.ndarray  # uint8
    num_values: int


@dataclass
class Variable:
    """Variable-width values: ``offsets`` (int64, ``num_values + 1``, from 0) into
    ``data`` (uint8); ``offset_bits`` is the width the column's Arrow type uses (32 or 64).

    Examples
    --------
    >>> import numpy as np
    >>> v = Variable(np.array([0, 2, 2, 3]), np.frombuffer(b"abc", np.uint8), 3, 32)
    >>> bytes(v.data[v.offsets[0]:v.offsets[1]])
    b'ab'
    """

    offsets: np.ndarray  # int64, num_values + 1, offsets[0] == 0
    data: np.ndarray  # uint8
    num_values: int
    offset_bits: int  # 32 or 64: the width the column's Arrow type uses


@dataclass
class FixedSizeList:
    """Vectors: ``num_values`` rows of fixed-size lists nested ``len(dims)`` deep
    (``dims`` outermost first: ``fixed_size_list<fixed_size_list<int32>[2]>[3]`` has
    dims ``(3, 2)``), each row holding ``prod(dims)`` items of ``item_bits`` bits.

    ``item_bits`` is 1 for booleans (``data`` is then an LSB-first bitmap from bit 0,
    unused tail bits zero) or a whole number of bytes. ``validity[k]`` is the
    validity (bool) of the children of layer ``k``: ``num_values * prod(dims[:k+1])``
    entries (the last layer's children are the items), or None when none is null. A
    row's own nullness travels separately, like any value's.

    ``item_bits == 0`` (read only): the page stored no items, as pylance writes a
    full-zip page whose items are all null; ``dims`` may then be the outer layers only
    and everything inside them is null.
    """

    dims: tuple
    item_bits: int
    data: np.ndarray  # uint8
    validity: tuple
    num_values: int

    @property
    def dim(self) -> int:
        """Items per row."""
        return _prod(self.dims)

    @property
    def bits(self) -> int:
        """Bits per row (items per row times item bits)."""
        return self.dim * self.item_bits

    @property
    def cum_dims(self) -> list[int]:
        """Entries per row at each layer (``prod(dims[:k+1])``)."""
        return cum_dims(self.dims)

    @property
    def null_from(self) -> int | None:
        """The outermost layer whose children are all null (the reference then stores
        nothing inside it), or None."""
        for k, v in enumerate(self.validity):
            if v is not None and len(v) and not v.any():
                return k
        return None

    @property
    def value_bytes(self) -> int:
        """A row's size as the reference measures it to pick the layout (items only;
        booleans count 0 bytes, so boolean vectors always go to mini-block pages).
        All-null children have no size there, which sends the page to full-zip:
        :data:`UNSIZED`."""
        if self.null_from is not None:
            return UNSIZED
        return self.dim * (self.item_bits // 8)


# the size :attr:`FixedSizeList.value_bytes` reports for vectors of all-null children
UNSIZED = 1 << 62


def _prod(xs) -> int:
    out = 1
    for x in xs:
        out *= int(x)
    return out


def cum_dims(dims) -> list[int]:
    """Entries per row at each layer of nested fixed-size lists of ``dims``
    (outermost first): ``prod(dims[:k + 1])``."""
    out, c = [], 1
    for d in dims:
        c *= d
        out.append(c)
    return out


@dataclass
class DictionaryIndices:
    """Decoded dictionary indices (0-based) and the decoded dictionary items."""

    indices: np.ndarray  # an unsigned integer array
    items: pa.Array
    num_values: int


def is_variable(dt: pa.DataType) -> bool:
    """Whether ``dt`` is stored as variable-width values (string/binary, large or not)."""
    return (pa.types.is_string(dt) or pa.types.is_binary(dt) or pa.types.is_large_string(dt)
            or pa.types.is_large_binary(dt))


def offset_bits(dt: pa.DataType) -> int:
    """Offset width of a variable-width Arrow type: 64 for the large types, else 32."""
    return 64 if (pa.types.is_large_string(dt) or pa.types.is_large_binary(dt)) else 32


@lru_cache(maxsize=1024)
def vector_shape(dt: pa.DataType) -> tuple[tuple, pa.DataType] | None:
    """``(dims outermost first, item type)`` of a vector type, else None.

    A vector is a fixed-size list (nested to any depth) of booleans or of whole-byte
    fixed-width primitives; a struct, string or list item makes it something else.
    """
    dims = []
    t = dt
    while pa.types.is_fixed_size_list(t):
        if t.list_size <= 0:
            return None
        dims.append(t.list_size)
        t = t.value_type
    if not dims or pa.types.is_nested(t):
        return None  # (a struct has fixed_bits when packed, but is no vector item)
    bits = fixed_bits(t)
    if bits is None or (bits % 8 and bits != 1):
        return None
    return tuple(dims), t


def is_vector(dt: pa.DataType) -> bool:
    """A vector type: see :func:`vector_shape`."""
    return vector_shape(dt) is not None


@lru_cache(maxsize=1024)
def fixed_bits(dt: pa.DataType) -> int | None:
    """Bits per value of a fixed-width primitive type (a vector: all its items), or
    None."""
    if pa.types.is_fixed_size_list(dt):
        shape = vector_shape(dt)
        return None if shape is None else _prod(shape[0]) * fixed_bits(shape[1])
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
        return _vector_from_arrow(arr), validity_of(arr)
    if pa.types.is_struct(dt):
        return pack_struct_rows(arr), validity_of(arr)
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


def packed_child_bits(dt: pa.DataType) -> list[int] | None:
    """Bits of each child of a packable struct type (whole-byte fixed-width children),
    or None."""
    if not pa.types.is_struct(dt) or dt.num_fields == 0:
        return None
    if any(pa.types.is_fixed_size_list(f.type) for f in dt):
        return None  # pylance packs vector children as a VariablePackedStruct (2.2)
    if any(pa.types.is_struct(f.type) for f in dt):
        return None  # struct children are not packable (pylance 14 refuses them too)
    bits = [fixed_bits(f.type) for f in dt]
    if any(b is None or b % 8 for b in bits):
        return None
    return bits


def pack_struct_rows(arr: pa.StructArray) -> FixedWidth:
    """Rows of a struct array as one fixed-width block (child nulls are not kept)."""
    bits = packed_child_bits(arr.type)
    if bits is None:
        raise NotSupportedError(f"packed structs need whole-byte fixed-width children, not "
                                f"{arr.type}")
    n = len(arr)
    cols = []
    for i, b in enumerate(bits):
        child = arr.field(i)  # already offset into the struct's slice
        if child.null_count and validity_of(child) is not None and \
                not np.array_equal(validity_of(child), validity_of(arr) if arr.null_count
                                   else np.ones(n, bool)):
            raise NotSupportedError(f"packed struct child {arr.type.field(i).name!r} has "
                                    f"nulls of its own; packed structs cannot store them")
        w = b // 8
        raw = np.frombuffer(child.buffers()[1], np.uint8)[child.offset * w:(child.offset + n) * w]
        cols.append(raw.reshape(n, w))
    rows = np.concatenate(cols, axis=1) if cols else np.zeros((n, 0), np.uint8)
    return FixedWidth(sum(bits), rows.reshape(-1), n)


def unpack_struct_rows(dt: pa.DataType, block: FixedWidth, vbuf) -> pa.Array:
    """The struct array of type ``dt`` whose rows are packed in ``block``
    (children back to back, see :func:`pack_struct_rows`); ``vbuf`` is the struct's
    validity bitmap or None.
    """
    bits = packed_child_bits(dt)
    if bits is None:
        raise NotSupportedError(f"reading {dt} as a packed struct is not supported")
    n = block.num_values
    width = sum(bits) // 8
    if block.bits != sum(bits) or len(block.data) != n * width:
        raise CorruptFileError(f"packed rows of {block.bits} bits for a {dt} column")
    rows = block.data.reshape(n, width)
    kids, pos = [], 0
    for f, b in zip(dt, bits):
        w = b // 8
        data = np.ascontiguousarray(rows[:, pos:pos + w]).reshape(-1)
        kids.append(pa.Array.from_buffers(f.type, n, [None, pa.py_buffer(data)]))
        pos += w
    return pa.Array.from_buffers(dt, n, [vbuf], children=kids)


def _validity_buffer(validity: np.ndarray | None) -> pa.Buffer | None:
    if validity is None or validity.all():
        return None
    return pa.py_buffer(np.packbits(validity, bitorder="little"))


def _checked_indices(block: "DictionaryIndices", validity: np.ndarray | None) -> np.ndarray:
    """A dictionary block's indices as int64, each in range (null rows may hold
    anything: they become 0); an index of a valid row out of range is corrupt."""
    idx = block.indices.astype(np.int64, copy=False)
    if idx.size and (int(idx.max()) >= len(block.items) or int(idx.min()) < 0):
        bad = idx[(idx >= len(block.items)) | (idx < 0)]
        if validity is None or np.any(validity[(idx >= len(block.items)) | (idx < 0)]):
            raise CorruptFileError(f"dictionary index {int(bad[0])} is out of range "
                                   f"(the dictionary has {len(block.items)} items)")
        idx = np.where(validity, idx, 0)
    return idx


def to_dictionary_arrow(block: "DictionaryIndices", validity: np.ndarray | None
                        ) -> pa.DictionaryArray:
    """The rows of a dictionary block as a ``DictionaryArray`` (int32 indices into
    the block's items, nulls where ``validity`` is False): what :func:`to_arrow` gives
    without taking the values, e.g. indices ``[1, 0, 1]`` of items ``["a", "b"]`` are
    ``["b", "a", "b"]``."""
    idx = _checked_indices(block, validity)
    mask = None if validity is None else ~validity
    return pa.DictionaryArray.from_arrays(pa.array(idx.astype(np.int32), mask=mask),
                                          block.items)


def to_arrow(dt: pa.DataType, block, validity: np.ndarray | None) -> pa.Array:
    """Build an Arrow array of type ``dt`` from a decoded block and validity."""
    if isinstance(block, DictionaryIndices):
        idx = _checked_indices(block, validity)
        mask = None if validity is None else ~validity
        return block.items.take(pa.array(idx, mask=mask))
    vbuf = _validity_buffer(validity)
    if pa.types.is_fixed_size_list(dt):
        return _vector_to_arrow(dt, block, vbuf)
    if pa.types.is_struct(dt) and isinstance(block, FixedWidth):
        return unpack_struct_rows(dt, block, vbuf)
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


def _bits_at(buf: pa.Buffer | None, offset: int, count: int) -> np.ndarray:
    """``count`` bits of an LSB-first bitmap from bit ``offset``, re-based to bit 0
    with the unused tail bits zero."""
    raw = _u8(buf)
    if offset % 8 == 0:
        out = raw[offset // 8:offset // 8 + (count + 7) // 8].copy()
        if count % 8 and len(out):
            out[-1] &= (1 << (count % 8)) - 1
        return out
    bits = np.unpackbits(raw[offset // 8:(offset + count + 7) // 8 + 1], bitorder="little")
    return np.packbits(bits[offset % 8:offset % 8 + count], bitorder="little")


def _vector_from_arrow(arr: pa.Array) -> FixedSizeList:
    dims, item_t = vector_shape(arr.type)
    a, count, validity = arr, len(arr), []
    for d in dims:
        count *= d
        a = a.values.slice(a.offset * d, count)  # .values ignores the parent's offset
        validity.append(validity_of(a))
    bits = fixed_bits(item_t)
    if bits == 1:
        data = _bits_at(a.buffers()[1], a.offset, count)
    else:
        w = bits // 8
        data = _u8(a.buffers()[1])[a.offset * w:(a.offset + count) * w]
    return FixedSizeList(dims, bits, data, tuple(validity), len(arr))


def _vector_to_arrow(dt: pa.DataType, block, vbuf) -> pa.Array:
    shape = vector_shape(dt)
    if shape is None:
        raise NotSupportedError(f"reading {dt} columns is not supported yet")
    dims, item_t = shape
    ibits = fixed_bits(item_t)
    n = block.num_values
    if isinstance(block, FixedSizeList) and block.item_bits == 0:
        block, validity = _all_null_items(dt, dims, ibits, block)
    elif isinstance(block, FixedSizeList):
        if tuple(block.dims) != dims or block.item_bits != ibits:
            raise CorruptFileError(f"vectors of {list(block.dims)} x {block.item_bits}-bit "
                                   f"items for a {dt} column")
        validity = block.validity
    elif isinstance(block, FixedWidth) and block.bits == _prod(dims) * ibits:
        validity = (None,) * len(dims)
    else:
        raise CorruptFileError(f"values of {getattr(block, 'bits', 'variable')} bits for a "
                               f"{dt} column")
    count = n * _prod(dims)
    if len(block.data) != (count * ibits + 7) // 8:
        raise CorruptFileError(f"{len(block.data)} bytes of vector data for {n} {dt} values")
    types, t = [], dt
    for _ in dims:
        types.append(t)
        t = t.value_type
    for k, v in enumerate(validity):
        if v is not None and len(v) != n * _prod(dims[:k + 1]):
            raise CorruptFileError(f"{len(v)} validity entries at depth {k + 1} of {n} {dt} "
                                   f"values")
    child = pa.Array.from_buffers(item_t, count, [_validity_buffer(validity[-1]),
                                                  pa.py_buffer(block.data)])
    for k in range(len(dims) - 1, -1, -1):
        count //= dims[k]
        vb = vbuf if k == 0 else _validity_buffer(validity[k - 1])
        child = pa.Array.from_buffers(types[k], count, [vb], children=[child])
    return child


def _all_null_items(dt, dims: tuple, ibits: int, block: FixedSizeList):
    """A block that stored no items (see :class:`FixedSizeList`) in full: zero items,
    the described layers' validity, everything inside them null."""
    k = len(block.dims)
    if not 0 < k <= len(dims) or tuple(block.dims) != dims[:k]:
        raise CorruptFileError(f"vectors of {list(block.dims)} lists of no items for a {dt} "
                               f"column")
    n = block.num_values
    validity = list(block.validity) + [np.zeros(n * _prod(dims[:j + 1]), bool)
                                       for j in range(k, len(dims))]
    if validity[k - 1] is None:  # (the reference always describes the nulls)
        validity[k - 1] = np.zeros(n * _prod(dims[:k]), bool)
    data = np.zeros((n * _prod(dims) * ibits + 7) // 8, np.uint8)
    return FixedSizeList(dims, ibits, data, tuple(validity), n), tuple(validity)


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
        d = block.dim
        if block.item_bits == 1:
            idx = _expand(starts * d, ends * d, n * d, total * d)
            data = np.empty((total * d + 7) // 8, np.uint8)
            if kg.gather_bits(block.data, idx, data) != kg.OK:
                raise CorruptFileError(f"value ranges fall outside the {n} values decoded")
        else:
            w = d * block.item_bits // 8
            data = _concat(block.data, starts * w, sizes * w, total * w)
        validity = tuple(
            None if v is None else v[_expand(starts * c, ends * c, n * c, total * c)]
            for v, c in zip(block.validity, block.cum_dims))
        return FixedSizeList(block.dims, block.item_bits, data, validity, total)
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
