"""FixedSizeList: vectors (fixed-size lists, nested to any depth) of fixed-width items,
with the validity of every layer inside the row.

Description, one message per layer, outermost first: ``FixedSizeList{items_per_value:
d, has_validity, values: <the next layer's FixedSizeList, or Flat(item bits)>}``;
``fixed_size_list<fixed_size_list<int32>[2]>[3]`` with null inner lists and null items
is ``FixedSizeList{3, has_validity, FixedSizeList{2, has_validity, Flat(32)}}``. Items
are booleans (``Flat(1)``, an LSB-first bitmap) or whole bytes, never compressed (as in
the reference: compressing them would cut vectors or their validity across chunks).
A layer's ``has_validity`` says whether *its children* (the next layer's lists, or the
items) carry nulls; a row's own nullness is a definition level like any value's.

* **Mini-block chunk**: one LSB-first bitmap per layer with validity, outermost first
  (a chunk of ``r`` rows holds ``r * d1 * ... * dk`` bits for layer ``k``, padded to a
  byte), then the items (booleans: ``ceil(r * dim / 8)`` bytes). A chunk never cuts a
  row. Rows per chunk follow the reference: with ``v`` validity bytes per row
  (``sum ceil(d1..dk / 8)``) and ``b`` item bits per row, whole-byte rows (``b % 8 ==
  0``) take the largest power of two ``n`` (2..4096) with ``n * (b/8 + v) < 8186``;
  otherwise rows are counted in words of 8 and the estimate is doubled: the largest
  ``n`` (8..4096) with ``n * (b + 8v) / 4 < 8186``. Example: ``fixed_size_list<bool>[3]``
  rows ``[T, F, null]``, ``null``, ``[T, T, F]``, ``[null, null, T]``, one chunk:
  validity ``3b 0f``, items ``19 0d`` (null slots 0).
* **Full-zip value** (per row): for each layer with validity, outermost first,
  ``ceil(d1..dk / 8)`` bytes of that row's bits, then the row's items;
  ``bits_per_value`` counts all of it. Boolean vectors go to mini-block pages (the
  reference measures them as 0 bytes); forced into full-zip, only whole-byte rows
  without item validity work (the reference panics on the others).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancenb.encodings import pb
from lancenb.encodings.blocks import FixedSizeList, FixedWidth, cum_dims
from lancenb.encodings.codecs import ChunkCodec, ChunkDecoder
from lancenb.encodings.physical import flat
from lancenb.errors import CorruptFileError, NotSupportedError
from lancenb.kernels import gather as kg
from lancenb.kernels import slices

__all__ = ["FslCodec", "FslValues", "PerValueFsl", "Shape", "description", "per_value",
           "parse", "rows_per_chunk", "struct_items", "struct_items_inside",
           "from_struct_items", "to_struct_items"]

MAX_DEPTH = 64
_MAX_CHUNK_BYTES = 8 * 1024 - 6  # the reference's mini-block target
_MAX_CHUNK_ROWS = 4096


@dataclass(frozen=True)
class Shape:
    """What a FixedSizeList description says: ``dims`` (outermost first), which
    layers' children carry validity, and the item width."""

    dims: tuple
    has_validity: tuple
    item_bits: int

    @property
    def cum_dims(self) -> list[int]:
        """Entries per row at each layer (``prod(dims[:k+1])``)."""
        return cum_dims(self.dims)

    @property
    def dim(self) -> int:
        """Items per row."""
        return self.cum_dims[-1]

    @property
    def validity_layers(self) -> list[int]:
        """Entries per row of each validity bitmap, outermost first."""
        return [c for c, hv in zip(self.cum_dims, self.has_validity) if hv]

    @property
    def validity_bytes(self) -> list[int]:
        """Bytes of each stored validity bitmap per row."""
        return [(c + 7) // 8 for c in self.validity_layers]

    @classmethod
    def of(cls, block: FixedSizeList) -> "Shape":
        """The shape of a vector block."""
        return cls(tuple(block.dims), tuple(v is not None for v in block.validity),
                   block.item_bits)


def description(shape: Shape):
    """The nested FixedSizeList message (``item_bits`` 0: innermost ``Constant{}``,
    nothing stored inside the layers)."""
    enc = (pb.flat(shape.item_bits) if shape.item_bits else
           pb.e21.CompressiveEncoding(constant=pb.e21.Constant()))
    for d, hv in zip(reversed(shape.dims), reversed(shape.has_validity)):
        enc = pb.e21.CompressiveEncoding(fixed_size_list=pb.e21.FixedSizeList(
            items_per_value=d, values=enc, has_validity=hv))
    return enc


def parse(enc, fixed_bits: int | None, where: str, *, no_items: bool = False) -> Shape:
    """The :class:`Shape` of a FixedSizeList description, checked against the
    column's value width (``prod(dims) * item_bits``). With ``no_items``, innermost
    values ``Constant{}`` (no value) are accepted: pylance's full-zip pages whose items
    are all null; the shape then has ``item_bits`` 0 and may list only outer layers."""
    dims, hvs = [], []
    while enc.WhichOneof("compression") == "fixed_size_list":
        if len(dims) >= MAX_DEPTH:
            raise CorruptFileError(f"{where}: fixed-size lists nested over {MAX_DEPTH} deep")
        f = enc.fixed_size_list
        dims.append(int(f.items_per_value))
        hvs.append(bool(f.has_validity))
        enc = f.values
    if no_items and dims and enc.WhichOneof("compression") == "constant" \
            and not enc.constant.HasField("value"):
        if min(dims) <= 0 or fixed_bits is None or fixed_bits % _prod(dims):
            raise CorruptFileError(f"{where}: {dims} lists of no items for a column of "
                                   f"{fixed_bits or 'variable'}-bit values")
        return Shape(tuple(dims), tuple(hvs), 0)
    if enc.WhichOneof("compression") != "flat" or enc.flat.HasField("data"):
        raise NotSupportedError(f"{where}: vectors whose items use {pb.describe(enc)} are "
                                f"not supported yet")
    ibits = int(enc.flat.bits_per_value)
    total = ibits
    for d in dims:
        total *= max(d, 0)
    if not dims or min(dims) <= 0 or ibits <= 0 or (ibits % 8 and ibits != 1) \
            or fixed_bits is None or total != fixed_bits:
        raise CorruptFileError(f"{where}: vectors of {dims} x {ibits}-bit items for a column "
                               f"of {fixed_bits or 'variable'}-bit values")
    return Shape(tuple(dims), tuple(hvs), ibits)


def rows_per_chunk(shape: Shape) -> int:
    """Rows in each (but the last) mini-block chunk, as the reference picks them."""
    row_bits = shape.dim * shape.item_bits
    vbytes = sum(shape.validity_bytes)
    if row_bits % 8 == 0:
        per_word, word = 1, row_bits // 8 + vbytes
    else:  # whole words of 8 rows (booleans), the estimate doubled as the reference does
        per_word, word = 8, row_bits + 8 * vbytes
    n, size = (8 if per_word == 8 else 2), 2 * word
    if size >= _MAX_CHUNK_BYTES:
        raise NotSupportedError(f"vectors too wide for a mini-block page: {2 * per_word} rows "
                                f"would need {size} bytes (limit {_MAX_CHUNK_BYTES}); "
                                f"pylance refuses these too")
    while 2 * size < _MAX_CHUNK_BYTES and 2 * n <= _MAX_CHUNK_ROWS:
        size *= 2
        n *= 2
    return n


def _pack_runs(valid: np.ndarray, run_bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pack consecutive runs of ``valid`` (bool) of ``run_bits`` bits each into
    separate LSB-first bitmaps: ``(bytes, byte size of each run)``. The unused bits of
    a run's last byte are those that follow it when the run starts on a byte (zeros
    past the end), else zeros: the reference's bit slices, so pages match byte for
    byte."""
    nbytes = (run_bits + 7) // 8
    if not np.any(run_bits[:-1] % 8):  # every run starts on a byte: one bitmap
        return np.packbits(valid, bitorder="little"), nbytes
    padded_start = np.zeros(len(run_bits), np.int64)
    np.cumsum(nbytes[:-1] * 8, out=padded_start[1:])
    bit_start = np.zeros(len(run_bits), np.int64)
    np.cumsum(run_bits[:-1], out=bit_start[1:])
    total = int(nbytes.sum()) * 8
    src = np.arange(total, dtype=np.int64) + np.repeat(bit_start - padded_start, nbytes * 8)
    # the bits after a run: those of the source when the run starts on a byte
    # boundary (a byte slice), else zeros (a shifted copy)
    limit = np.where(bit_start % 8 == 0, len(valid), bit_start + run_bits)
    bits = np.zeros(total, bool)
    inside = src < np.repeat(limit, nbytes * 8)
    bits[inside] = valid[src[inside]]
    return np.packbits(bits, bitorder="little"), nbytes


def _prod(xs) -> int:
    out = 1
    for x in xs:
        out *= int(x)
    return out


def _item_bytes(shape: Shape, rows: np.ndarray) -> np.ndarray:
    return (rows * shape.dim * shape.item_bits + 7) // 8


class FslCodec(ChunkCodec):
    """Mini-block codec for a :class:`FixedSizeList` block (no compression)."""

    @staticmethod
    def rows_per_chunk(block: FixedSizeList) -> int:
        """Rows in each mini-block chunk of ``block``."""
        return rows_per_chunk(Shape.of(block))

    def plan(self, block: FixedSizeList) -> np.ndarray:
        k = self.rows_per_chunk(block)
        return np.append(np.arange(0, block.num_values, k, dtype=np.int64), block.num_values)

    def encode_chunks(self, block: FixedSizeList, bounds: np.ndarray):
        shape = Shape.of(block)
        counts = np.diff(bounds)
        srcs, starts, sizes = [], [], []
        base = 0
        for v, c in zip(block.validity, block.cum_dims):
            if v is None:
                continue
            packed, nbytes = _pack_runs(v, counts * c)
            st = np.zeros(len(counts), np.int64)
            np.cumsum(nbytes[:-1], out=st[1:])
            srcs.append(packed)
            starts.append(st + base)
            sizes.append(nbytes)
            base += len(packed)
        first_bit = bounds[:-1] * block.dim * block.item_bits
        if np.all(first_bit % 8 == 0):
            data, st = block.data, first_bit // 8
        else:  # (never with our plan) re-pack boolean items chunk by chunk
            bits = np.unpackbits(block.data, count=block.num_values * block.dim,
                                 bitorder="little")
            data, nb = _pack_runs(bits.view(bool), counts * block.dim)
            st = np.zeros(len(counts), np.int64)
            np.cumsum(nb[:-1], out=st[1:])
        srcs.append(data)
        starts.append(st + base)
        sizes.append(_item_bytes(shape, counts))
        src = np.concatenate(srcs) if len(srcs) > 1 else srcs[0]
        return src, np.stack(starts, axis=1), np.stack(sizes, axis=1), description(shape)


class FslValues(ChunkDecoder):
    """Decoder of FixedSizeList mini-block chunks."""

    can_gather = True  # single values without decoding their chunk

    def __init__(self, enc, fixed_bits: int | None, where: str):
        self.shape = parse(enc, fixed_bits, where)
        self.num_buffers = len(self.shape.validity_layers) + 1

    def _check(self, sizes, counts, where):
        want = [(counts * c + 7) // 8 for c in self.shape.validity_layers]
        want.append(_item_bytes(self.shape, counts))
        for j, w in enumerate(want):
            bad = np.flatnonzero(sizes[:, j] != w)
            if bad.size:
                c = int(bad[0])
                raise CorruptFileError(f"{where}, chunk {c}: vector buffers of "
                                       f"{sizes[c].tolist()} bytes for {int(counts[c])} rows "
                                       f"of {list(self.shape.dims)} items")

    def _validity(self, valid, n):
        it = iter(valid)
        return tuple(next(it) if hv else None for hv in self.shape.has_validity)

    def decode(self, data, starts, sizes, counts, where) -> FixedSizeList:
        self._check(sizes, counts, where)
        shape = self.shape
        n = int(counts.sum())
        valid = [_concat_bits(data, starts[:, j], counts * c, where)
                 for j, c in enumerate(shape.validity_layers)]
        if shape.item_bits == 1:
            items = np.packbits(_concat_bits(data, starts[:, -1], counts * shape.dim, where),
                                bitorder="little")
        else:
            items = flat.decode_chunks(shape.item_bits, data, starts[:, -1].copy(),
                                       sizes[:, -1].copy(), counts * shape.dim, where).data
        return FixedSizeList(shape.dims, shape.item_bits, items, self._validity(valid, n), n)

    def gather(self, data, starts, sizes, counts, slot, local, where) -> FixedSizeList:
        """Only the rows at ``local`` of chunk ``slot`` (no whole-chunk decode)."""
        self._check(sizes, counts, where)
        shape = self.shape
        n = len(local)
        valid = [_gather_bits(data, starts[slot, j], local, c, where)
                 for j, c in enumerate(shape.validity_layers)]
        if shape.item_bits == 1:
            items = np.packbits(_gather_bits(data, starts[slot, -1], local, shape.dim, where),
                                bitorder="little")
        else:
            w = shape.dim * shape.item_bits // 8
            items = np.empty(n * w, np.uint8)
            if kg.gather_fixed(data, starts[slot, -1] + local * w, w, items) != 0:
                raise CorruptFileError(f"{where}: vector outside its chunk")
        return FixedSizeList(shape.dims, shape.item_bits, items, self._validity(valid, n), n)


def _concat_bits(data, byte_starts, nbits, where) -> np.ndarray:
    """Bit runs (one per chunk) joined, as bools."""
    nbits = np.asarray(nbits, np.int64)
    total = int(nbits.sum())
    out = np.empty((total + 7) // 8, np.uint8)
    if slices.concat_bits(data, np.asarray(byte_starts, np.int64), nbits, out) != 0:
        raise CorruptFileError(f"{where}: vector bits outside the page")
    return np.unpackbits(out, count=total, bitorder="little").view(bool)


def _gather_bits(data, byte_start, local, per_row, where) -> np.ndarray:
    """``per_row`` bits for each row ``local[i]`` of the bitmap at ``byte_start[i]``."""
    pos = ((np.asarray(byte_start, np.int64) * 8 + local * per_row)[:, None]
           + np.arange(per_row, dtype=np.int64)).reshape(-1)
    out = np.empty((len(pos) + 7) // 8, np.uint8)
    if kg.gather_bits(data, pos, out) != 0:
        raise CorruptFileError(f"{where}: vector bits outside their chunk")
    return np.unpackbits(out, count=len(pos), bitorder="little").view(bool)


def per_value(block: FixedSizeList):
    """Full-zip values: ``(FixedWidth of whole rows, description)``. Inside a layer
    whose children are all null nothing is stored (``Constant{}`` items), as the
    reference writes them."""
    k = block.null_from
    if k is not None:
        block = FixedSizeList(block.dims[:k + 1], 0, np.zeros(0, np.uint8),
                              block.validity[:k + 1], block.num_values)
    shape = Shape.of(block)
    if shape.item_bits == 1 and (any(shape.has_validity) or block.bits % 8):
        raise NotSupportedError("full-zip pages of boolean vectors with null items or rows "
                                "of part bytes are not supported (nor written by pylance)")
    n = block.num_values
    if not any(shape.has_validity):
        return FixedWidth(block.bits, block.data, n), description(shape)
    cols = []
    for v, c in zip(block.validity, block.cum_dims):
        if v is None:
            continue
        packed, _ = _pack_runs(v, np.full(n, c, np.int64))
        cols.append(packed.reshape(n, (c + 7) // 8))
    if shape.item_bits:
        cols.append(block.data.reshape(n, -1))
    rows = np.concatenate(cols, axis=1)
    return FixedWidth(8 * rows.shape[1], rows.reshape(-1), n), description(shape)


class PerValueFsl:
    """Splits full-zip vector values back into items and validity."""

    def __init__(self, enc, bits_per_value: int, fixed_bits: int | None, where: str):
        self.shape = parse(enc, fixed_bits, where, no_items=True)
        if self.shape.item_bits == 1 and (any(self.shape.has_validity) or self.shape.dim % 8):
            raise NotSupportedError(f"{where}: full-zip pages of boolean vectors with item "
                                    f"validity or rows of part bytes are not supported")
        self.width = sum(self.shape.validity_bytes) + self.shape.dim * self.shape.item_bits // 8
        self.where = where
        if self.width == 0:
            raise NotSupportedError(f"{where}: full-zip vectors of no bytes")
        if bits_per_value != 8 * self.width:
            raise CorruptFileError(f"{where}: {bits_per_value}-bit values for vectors of "
                                   f"{self.width} bytes")

    def unzip(self, data: np.ndarray, n: int) -> FixedSizeList:
        """The ``n`` vectors of a full-zip page's value bytes ``data``."""
        shape = self.shape
        if len(data) != n * self.width:
            raise CorruptFileError(f"{self.where}: {len(data)} bytes for {n} vectors of "
                                   f"{self.width} bytes")
        if not any(shape.has_validity):
            return FixedSizeList(shape.dims, shape.item_bits, data,
                                 (None,) * len(shape.dims), n)
        rows = data.reshape(n, self.width)
        valid, pos = [], 0
        for c, vb in zip(shape.validity_layers, shape.validity_bytes):
            bits = np.unpackbits(rows[:, pos:pos + vb], axis=1, bitorder="little")[:, :c]
            valid.append(bits.reshape(-1).view(bool))
            pos += vb
        items = np.ascontiguousarray(rows[:, pos:]).reshape(-1)
        it = iter(valid)
        validity = tuple(next(it) if hv else None for hv in shape.has_validity)
        return FixedSizeList(shape.dims, shape.item_bits, items, validity, n)


# -- fixed-size lists of structs (2.2) ---------------------------------------------
# pylance 14 stores ``fixed_size_list<struct<...>>[d]`` (2.2 only) as its items: one
# column per struct leaf whose pages count *items* (``d`` a row), the list's own
# nullness an outer NULLABLE_ITEM layer repeated on each of its items. Read as
# ``struct<item: struct<...>>`` over the items, that is an ordinary struct column.

def struct_items(dt: pa.DataType) -> tuple[pa.DataType, int] | None:
    """``(struct<item: ...> of the items, d)`` for a fixed-size list of structs (how
    its columns are read), else None."""
    if (pa.types.is_fixed_size_list(dt) and pa.types.is_struct(dt.value_type)
            and dt.value_type.num_fields > 0 and dt.list_size > 0):
        return pa.struct([dt.value_field]), dt.list_size
    return None


def struct_items_inside(dt: pa.DataType) -> bool:
    """Whether a fixed-size list of structs sits below the top of ``dt``."""
    if pa.types.is_struct(dt):
        return any(struct_items(f.type) is not None or struct_items_inside(f.type) for f in dt)
    if pa.types.is_list(dt) or pa.types.is_large_list(dt) or pa.types.is_fixed_size_list(dt):
        t = dt.value_type
        return struct_items(t) is not None or struct_items_inside(t)
    return False


def from_struct_items(arr: pa.Array, dt: pa.DataType, d: int, where: str) -> pa.Array:
    """The ``dt`` array of ``struct<item: ...>`` items read ``d`` a row."""
    if len(arr) % d:
        raise CorruptFileError(f"{where}: {len(arr)} items do not make rows of {d}")
    n = len(arr) // d
    vbuf = None
    if arr.null_count:
        valid = np.asarray(arr.is_valid())[::d]
        if valid.size and not valid.all():
            vbuf = pa.py_buffer(np.packbits(valid, bitorder="little"))
    items = arr.field(0)
    if items.offset:
        items = pa.concat_arrays([items])  # children of from_buffers start at 0
    return pa.Array.from_buffers(dt, n, [vbuf], children=[items])


def to_struct_items(arr: pa.Array, dt: pa.DataType) -> pa.Array:
    """A fixed-size list of structs as ``dt`` (``struct<item: ...>``, see
    :func:`struct_items`) over its items, each carrying its row's nullness."""
    d = arr.type.list_size
    n = len(arr)
    items = arr.values.slice(arr.offset * d, n * d)  # .values ignores the offset
    vbuf = None
    if arr.null_count:
        valid = np.repeat(np.asarray(arr.is_valid()), d)
        vbuf = pa.py_buffer(np.packbits(valid, bitorder="little"))
    if items.offset:
        items = pa.concat_arrays([items])
    return pa.Array.from_buffers(dt, n * d, [vbuf], children=[items])
