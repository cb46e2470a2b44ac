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

from lancenb.encodings import pb

# the struct <-> packed rows conversion lives with the other Arrow <-> block cuts
# (blocks.py needs it and must not import the codecs)
from lancenb.encodings.blocks import FixedWidth
from lancenb.encodings.blocks import pack_struct_rows as pack
from lancenb.encodings.blocks import packed_child_bits as child_bits
from lancenb.encodings.blocks import unpack_struct_rows as unpack
from lancenb.encodings.codecs import ChunkCodec
from lancenb.encodings.physical import flat
from lancenb.errors import CorruptFileError, NotSupportedError

__all__ = ["description", "child_bits", "pack", "unpack", "PackedCodec", "PackedValues",
           "parse"]


def description(bits: list[int]):
    """The ``PackedStruct`` description of rows whose children have ``bits`` bits."""
    return pb.e21.CompressiveEncoding(packed_struct=pb.e21.PackedStruct(
        bits_per_value=bits, values=pb.flat(sum(bits))))


def parse(enc, fixed_bits_: int | None, where: str) -> list[int]:
    """The child widths of a ``PackedStruct`` description, checked against the column's
    row width ``fixed_bits_``.
    """
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


class PackedCodec(ChunkCodec):
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
