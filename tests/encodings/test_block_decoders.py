"""Block-compressed units (dictionary items, the levels of 2.2 constant pages):
known bytes built with the packing kernels decode back, damaged ones are a
CorruptFileError."""

import numpy as np
import pytest
from lancenb.kernels import bitpack as kb

from lancenb.encodings import pb, physical
from lancenb.encodings.physical import general
from lancenb.encodings.structural.allnull import _decode_levels
from lancenb.errors import CorruptFileError


def _inline(values: np.ndarray) -> bytes:
    out = np.empty(int(kb.inline_chunk_words(values).sum()), values.dtype)
    kb.inline_pack(values, out)
    return out.tobytes()


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
@pytest.mark.parametrize("n", [1, 5, 1024, 3000])
def test_inline_bitpacked_dictionary_items(dtype, n):
    bits = np.dtype(dtype).itemsize * 8
    values = (np.arange(n) * 7 % 200).astype(dtype)
    enc = pb.e21.CompressiveEncoding(inline_bitpacking=pb.e21.InlineBitpacking(
        uncompressed_bits_per_value=bits))
    dec = physical.block_decoder(enc, n, bits, "t")
    got = dec(_inline(values))
    assert got.num_values == n and np.array_equal(got.data.view(dtype), values)
    wrapped = pb.e21.CompressiveEncoding(general=pb.e21.General(
        compression=pb.e21.BufferCompression(scheme=general.LZ4), values=enc))
    got = physical.block_decoder(wrapped, n, bits, "t")(general.compress(_inline(values),
                                                                          general.LZ4))
    assert np.array_equal(got.data.view(dtype), values)


def test_inline_bitpacked_items_damaged():
    values = np.arange(2000, dtype=np.uint32)
    enc = pb.e21.CompressiveEncoding(inline_bitpacking=pb.e21.InlineBitpacking(
        uncompressed_bits_per_value=32))
    dec = physical.block_decoder(enc, 2000, 32, "t")
    raw = bytearray(_inline(values))
    for bad in (bytes(raw[:-4]), bytes(raw[:7]), bytes(raw) + b"\0\0\0\0"):
        with pytest.raises(CorruptFileError):
            dec(bad)
    raw[0] = 200  # a width above 32
    with pytest.raises(CorruptFileError):
        dec(bytes(raw))
    with pytest.raises(CorruptFileError):
        physical.block_decoder(enc, 10, 16, "t")


def test_constant_page_levels_out_of_line_and_general():
    levels = (np.arange(5000) % 3).astype(np.uint16)
    words = np.empty(kb.outofline_words(len(levels), 2, 16), np.uint16)
    kb.outofline_pack(levels, 2, words)
    enc = pb.e21.CompressiveEncoding(out_of_line_bitpacking=pb.e21.OutOfLineBitpacking(
        uncompressed_bits_per_value=16, values=pb.flat(2)))
    assert np.array_equal(_decode_levels(words.tobytes(), enc, 5000, "t"), levels)
    wrapped = pb.e21.CompressiveEncoding(general=pb.e21.General(
        compression=pb.e21.BufferCompression(scheme=general.ZSTD), values=enc))
    assert np.array_equal(_decode_levels(general.compress(words.tobytes(), general.ZSTD),
                                         wrapped, 5000, "t"), levels)
    with pytest.raises(CorruptFileError):
        _decode_levels(words.tobytes()[:-6], enc, 5000, "t")
