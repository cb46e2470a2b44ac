"""FSST: strings compressed with a per-page table of up to 255 symbols (1..8 bytes).

Description: ``Fsst{symbol_table: 2312 bytes, values: Variable(Flat(32|64))}``. The
page's strings are compressed as a whole with one table, then the compressed strings
(code bytes: a code ``c < 255`` stands for symbol ``c``, ``255`` escapes one literal
byte) are chunked exactly like Variable values. Example: with symbol 0 = ``"http"``,
``"https"`` compresses to ``00 ff 73``. The table's byte layout and the kernels are in
``lancenb.kernels.fsst.fsst``.

Chosen for pages with at least 32 KiB of strings whose longest value has at least 5
bytes (or when ``lance-encoding:compression=fsst``), and only when it saves space.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb.encodings import pb
from lancenb.encodings.blocks import Variable
from lancenb.encodings.codecs import ChunkCodec, ChunkDecoder
from lancenb.encodings.physical import variable
from lancenb.errors import CorruptFileError
from lancenb.kernels.fsst import fsst as kf
from lancenb.kernels.fsst import fsst_build as kfb
from lancenb.kernels.fsst import fsst_chunks as kc

__all__ = ["FsstValues", "FsstCodec", "worth_trying"]

_ERRORS = {kf.BAD_OFFSETS: "compressed string offsets are inconsistent",
           kf.BAD_CODE: "a code points past the symbol table",
           kf.ESCAPE_AT_END: "an escape code ends a string",
           kf.OUTPUT_TOO_SMALL: "strings decompress to more than expected",
           kc.BAD_CHUNK: "a chunk's offset table lies outside the page's data",
           kc.BAD_CHUNK_OFFSETS: "a chunk's offsets decrease or point outside it"}


def worth_trying(block: Variable) -> bool:
    """Whether FSST may pay: enough bytes, and a long enough longest value."""
    return (int(block.offsets[-1]) >= kf.LEAST_INPUT_SIZE
            and int(np.diff(block.offsets).max(initial=0)) >= kf.LEAST_INPUT_MAX_LENGTH)


class FsstValues(ChunkDecoder):
    """Decoder of FSST mini-block chunks (a Variable chunk of codes per chunk); its
    :meth:`expand` also decodes full-zip values (each value's codes zipped whole)."""

    can_gather = True  # single values without decoding their chunk
    copies_out = True  # decode keeps no view of the chunks' bytes (they may be reused)

    num_buffers = 1

    def __init__(self, enc, where: str):
        table = np.frombuffer(bytes(enc.fsst.symbol_table), np.uint8)
        self.symbols, self.lens, self.info = kf.new_table()
        status = kf.parse_table(table, self.symbols, self.lens, self.info)
        if status != kf.OK:
            raise CorruptFileError(f"{where}: FSST symbol table is invalid (status {status})")
        inner = enc.fsst.values
        if (inner.WhichOneof("compression") != "variable" or inner.variable.HasField("values")
                or inner.variable.offsets.WhichOneof("compression") != "flat"):
            raise CorruptFileError(f"{where}: FSST codes encoded as {pb.describe(inner)}")
        self.inner = variable.VariableValues(int(inner.variable.offsets.flat.bits_per_value))
        self.offset_bits = self.inner.offset_bits

    def expand(self, codes: Variable, where: str) -> Variable:
        # no sizing pass: no code expands to more than 8 bytes, and of the np.empty
        # output only the pages the result fills get touched
        """The strings of FSST ``codes`` (a variable-width block of codes)."""
        offsets = np.empty(codes.num_values + 1, np.int64)
        out = np.empty(8 * len(codes.data) + 8, np.uint8)
        status = kf.decompress(codes.offsets, codes.data, self.symbols, self.lens, self.info,
                               offsets, out)
        if status < 0:
            err = np.zeros(2, np.int64)
            kf.decompress_size(codes.offsets, codes.data, self.symbols, self.lens, self.info,
                               err)
            raise CorruptFileError(f"{where}, value {int(err[0])}: "
                                   f"{_ERRORS.get(int(status), 'bad FSST data')}")
        return Variable(offsets, out[:status], codes.num_values, self.offset_bits)

    def decode(self, data, starts, sizes, counts, where) -> Variable:
        """The strings of the chunks, decoded from them in one pass (no join of their
        codes first: :func:`lancenb.kernels.fsst.fsst_chunks.decompress_chunks`)."""
        if self.offset_bits not in (32, 64):
            raise CorruptFileError(f"{where}: variable offsets of {self.offset_bits} bits")
        sizes = np.ascontiguousarray(sizes[:, 0], dtype=np.int64)
        counts = np.ascontiguousarray(counts, dtype=np.int64)
        n = int(counts.sum())
        # from Arrow's pool, whose freed memory the next pages reuse (a fresh np.empty
        # of a few MiB costs a page fault per 4 KiB on first touch)
        offsets = np.frombuffer(pa.allocate_buffer(8 * (n + 1)), np.int64)
        out = np.frombuffer(pa.allocate_buffer(kc.output_bound(len(data), sizes)), np.uint8)
        err = np.zeros(3, np.int64)
        status = kc.decompress_chunks(data, np.ascontiguousarray(starts[:, 0], dtype=np.int64),
                                      sizes, counts, self.offset_bits // 8, self.symbols,
                                      self.lens, self.info, offsets, out, err)
        if status < 0:
            value = f", value {int(err[2])}" if err[2] >= 0 else ""
            raise CorruptFileError(f"{where}, chunk {int(err[0])}{value}, byte {int(err[1])}: "
                                   f"{_ERRORS.get(int(status), 'bad FSST data')}")
        return Variable(offsets, out[:status], n, self.offset_bits)

    def gather(self, data, starts, sizes, counts, slot, local, where) -> Variable:
        return self.expand(self.inner.gather(data, starts, sizes, counts, slot, local, where),
                            where)


class FsstCodec(ChunkCodec):
    """Encoder: builds the page's table, compresses, then chunks the codes."""

    def __init__(self, block: Variable):
        s_off, s_data = kfb.sample_strings(block.offsets, block.data)
        self.symbols, self.lens, self.info = kf.new_table()
        kfb.build_table(s_off, s_data, self.symbols, self.lens, self.info)
        out_offsets = np.empty(block.num_values + 1, np.int64)
        out = np.empty(kf.compress_bound(block.offsets), np.uint8)
        size = kf.compress(block.offsets, block.data, self.symbols, self.lens, self.info,
                           out_offsets, out)
        self.codes = Variable(out_offsets, out[:size], block.num_values, block.offset_bits)
        self.table = kf.serialize_table(self.symbols, self.lens, self.info)

    def saves_space(self, block: Variable) -> bool:
        """Whether the codes plus the symbol table are smaller than the strings."""
        return len(self.codes.data) + len(self.table) < len(block.data)

    def description(self, inner=None):
        """The ``Fsst`` description (symbol table, ``inner`` describing the codes)."""
        inner = inner if inner is not None else variable.description(self.codes)
        return pb.e21.CompressiveEncoding(fsst=pb.e21.Fsst(symbol_table=self.table.tobytes(),
                                                           values=inner))

    def plan(self, block):
        return variable.plan(self.codes)

    def encode_chunks(self, block, bounds):
        src, starts, sizes, desc = variable.encode_chunks(self.codes, bounds)
        return src, starts, sizes, self.description(desc)
