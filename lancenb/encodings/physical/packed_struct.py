"""PackedStruct: a struct's fixed-width children stored row by row in one column.

Description: ``PackedStruct{bits_per_value: [child bits...], values: Flat(sum)}``.
Each row holds its children one after another, no padding: ``{x: int32, y: uint8}``
rows ``(1, 2), (3, 4)`` → ``01 00 00 00 02 03 00 00 00 04`` (5 bytes a row). Chunked
in mini-block pages like Flat values of the row width; rows of 256 bytes or more go
to full-zip pages. Used for structs whose field metadata says
``lance-encoding:packed=true`` and for blob descriptors (two u64s).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb.encodings import pb
from lancenb.encodings.blocks import FixedWidth, fixed_bits, validity_of
from lancenb.encodings.physical import flat
from lancenb.errors import CorruptFileError, NotSupportedError

__all__ = ["description", "child_bits", "pack", "unpack", "PackedCodec", "PackedValues",
           "parse"]


def child_bits(dt: pa.DataType) -> list[int] | None:
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


def description(bits: list[int]):
    return pb.e21.CompressiveEncoding(packed_struct=pb.e21.PackedStruct(
        bits_per_value=bits, values=pb.flat(sum(bits))))


def parse(enc, fixed_bits_: int | None, where: str) -> list[int]:
    p = enc.packed_struct
    bits = [int(b) for b in p.bits_per_value]
    inner = p.values
    if inner.WhichOneof("compression") != "flat" or inner.flat.HasField("data"):
        raise NotSupportedError(f"{where}: packed struct values as {pb.describe(inner)}")
    if not bits or any(b <= 0 or b % 8 for b in bits) or sum(bits) != inner.flat.bits_per_value \
            or sum(bits) != fixed_bits_:
        raise CorruptFileError(f"{where}: packed struct of {bits} bits for a column of "
                               f"{fixed_bits_ or 'variable'}-bit values")
    return bits


def pack(arr: pa.StructArray) -> FixedWidth:
    """Rows of a struct array as one fixed-width block (child nulls are not kept)."""
    bits = child_bits(arr.type)
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


def unpack(dt: pa.DataType, block: FixedWidth, vbuf) -> pa.Array:
    bits = child_bits(dt)
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


class PackedCodec:
    """Mini-block codec: Flat chunks of the row width, described as PackedStruct."""

    def __init__(self, bits: list[int]):
        self.bits = bits

    def plan(self, block: FixedWidth) -> np.ndarray:
        return flat.plan(block)

    def encode_chunks(self, block: FixedWidth, bounds: np.ndarray):
        src, starts, sizes, _ = flat.encode_chunks(block, bounds)
        return src, starts, sizes, description(self.bits)


class PackedValues(flat.FlatValues):
    """Decoder of PackedStruct mini-block chunks (whole rows, as Flat)."""

    def __init__(self, enc, fixed_bits_: int | None, where: str):
        self.child_bits = parse(enc, fixed_bits_, where)
        super().__init__(sum(self.child_bits))
