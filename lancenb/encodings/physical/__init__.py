"""Compressive encodings (one module each): bytes of values <-> compressed buffers.

``value_decoder`` and ``level_decoder`` build a mini-block chunk decoder from a
``CompressiveEncoding`` description alone; an encoding lancenb cannot decode yet
raises ``NotSupportedError`` naming it.
"""

from __future__ import annotations

import numpy as np

from lancenb.encodings import pb
from lancenb.encodings.blocks import FixedWidth
from lancenb.encodings.physical import (
    bitpacking,
    bss,
    flat,
    fsl,
    fsst,
    general,
    packed_struct,
    rle,
    variable,
)
from lancenb.errors import CorruptFileError, NotSupportedError

__all__ = ["value_decoder", "level_decoder", "block_decoder", "natural_bits"]


def _unsupported(enc, where: str, what: str) -> NotSupportedError:
    return NotSupportedError(f"{where}: {what} use encoding {pb.describe(enc)}, which lancenb "
                             f"does not decode yet")


def value_decoder(enc, fixed_bits: int | None, where: str):
    """Decoder for the values of mini-block chunks described by ``enc``.

    ``fixed_bits`` is the column's value width (None for variable-width columns).
    """
    kind = enc.WhichOneof("compression")
    if kind == "fixed_size_list":
        return fsl.FslValues(enc, fixed_bits, where)
    if kind == "packed_struct":
        return packed_struct.PackedValues(enc, fixed_bits, where)
    if kind == "rle" and fixed_bits is not None:
        return rle.RleValues(enc, fixed_bits, where)
    if kind == "byte_stream_split" and fixed_bits is not None:
        return bss.BssValues(enc, fixed_bits, where)
    if kind == "fsst" and fixed_bits is None:
        return fsst.FsstValues(enc, where)
    if kind == "inline_bitpacking" and not enc.inline_bitpacking.HasField("values"):
        bits = int(enc.inline_bitpacking.uncompressed_bits_per_value)
        if bits not in (8, 16, 32, 64) or bits != fixed_bits:
            raise CorruptFileError(f"{where}: {bits}-bit bitpacked values for a column of "
                                   f"{fixed_bits or 'variable'}-bit values")
        return bitpacking.InlineValues(bits)
    if kind == "general":
        return general.GeneralValues(enc, value_decoder(enc.general.values, fixed_bits, where),
                                     where, fixed_bits)
    if kind == "flat" and not enc.flat.HasField("data"):
        bits = int(enc.flat.bits_per_value)
        if fixed_bits is None or bits != fixed_bits:
            raise CorruptFileError(f"{where}: flat values of {bits} bits for a column of "
                                   f"{fixed_bits or 'variable'}-bit values")
        return flat.FlatValues(bits)
    if (kind == "variable" and enc.variable.offsets.WhichOneof("compression") == "flat"
            and not enc.variable.HasField("values")):
        if fixed_bits is not None:
            raise CorruptFileError(f"{where}: variable-width values for a column of "
                                   f"{fixed_bits}-bit values")
        bits = int(enc.variable.offsets.flat.bits_per_value)
        if bits not in (32, 64):
            raise CorruptFileError(f"{where}: variable offsets of {bits} bits")
        return variable.VariableValues(bits)
    raise _unsupported(enc, where, "values")


def level_decoder(enc, where: str):
    """Decoder for the rep or def levels (u16) of mini-block chunks."""
    kind = enc.WhichOneof("compression")
    if kind == "flat" and enc.flat.bits_per_value == 16 and not enc.flat.HasField("data"):
        return flat.FlatLevels()
    if kind == "inline_bitpacking" and not enc.inline_bitpacking.HasField("values") \
            and enc.inline_bitpacking.uncompressed_bits_per_value == 16:
        return bitpacking.InlineLevels()
    if kind == "out_of_line_bitpacking":
        inner = enc.out_of_line_bitpacking.values
        if inner.WhichOneof("compression") == "flat" and not inner.flat.HasField("data"):
            return bitpacking.OutOfLineLevels(
                int(enc.out_of_line_bitpacking.uncompressed_bits_per_value),
                int(inner.flat.bits_per_value), where)
    if kind == "rle":
        return rle.RleLevels(enc, where)
    raise _unsupported(enc, where, "levels")


def natural_bits(enc) -> int | None:
    """The width of the values an encoding produces (for dictionary indices), if fixed."""
    kind = enc.WhichOneof("compression")
    if kind == "flat":
        return int(enc.flat.bits_per_value)
    if kind in ("inline_bitpacking", "out_of_line_bitpacking"):
        return int(getattr(enc, kind).uncompressed_bits_per_value)
    if kind == "general":
        return natural_bits(enc.general.values)
    if kind == "byte_stream_split":
        return natural_bits(enc.byte_stream_split.values)
    if kind == "rle":
        return natural_bits(enc.rle.values)
    return None


def block_decoder(enc, num_values: int, fixed_bits: int | None, where: str):
    """A function ``bytes -> block`` for one block-compressed unit (dictionary items)."""

    kind = enc.WhichOneof("compression")
    if kind == "general":
        scheme = general.scheme_of(enc, where)
        inner = block_decoder(enc.general.values, num_values, fixed_bits, where)
        limit = general.unit_limit(num_values, fixed_bits)
        return lambda buf: inner(general.decompress(buf, scheme, where, limit=limit))
    if kind == "flat" and not enc.flat.HasField("data"):
        bits = int(enc.flat.bits_per_value)
        if fixed_bits is None or bits != fixed_bits:
            raise CorruptFileError(f"{where}: flat dictionary of {bits}-bit items for a column "
                                   f"of {fixed_bits or 'variable'}-bit values")

        def flat_block(buf):
            need = (num_values * bits + 7) // 8
            if len(buf) < need:
                raise CorruptFileError(f"{where}: dictionary of {len(buf)} bytes for "
                                       f"{num_values} {bits}-bit items")
            return FixedWidth(bits, np.frombuffer(buf, np.uint8)[:need].copy(), num_values)
        return flat_block
    if kind == "variable" and fixed_bits is None:
        return lambda buf: variable.decode_block(buf, num_values, where)
    if kind == "inline_bitpacking" and not enc.inline_bitpacking.HasField("values"):
        bits = int(enc.inline_bitpacking.uncompressed_bits_per_value)
        if bits not in (8, 16, 32, 64) or bits != fixed_bits:
            raise CorruptFileError(f"{where}: {bits}-bit bitpacked dictionary items for a "
                                   f"column of {fixed_bits or 'variable'}-bit values")
        return lambda buf: bitpacking.decode_inline_block(buf, bits, num_values, where)
    if kind == "out_of_line_bitpacking":
        o = enc.out_of_line_bitpacking
        bits = int(o.uncompressed_bits_per_value)
        inner = o.values
        if inner.WhichOneof("compression") != "flat" or inner.flat.HasField("data"):
            raise _unsupported(enc, where, "dictionary items")
        width = int(inner.flat.bits_per_value)
        if bits not in (8, 16, 32, 64) or bits != fixed_bits or not 0 <= width <= bits:
            raise CorruptFileError(f"{where}: {bits}-bit items bitpacked out of line at "
                                   f"width {width} for a column of "
                                   f"{fixed_bits or 'variable'}-bit values")
        return lambda buf: bitpacking.decode_outofline_block(buf, bits, width, num_values,
                                                             where)
    raise _unsupported(enc, where, "dictionary items")
