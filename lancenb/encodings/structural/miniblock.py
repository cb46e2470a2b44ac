"""Mini-block pages: values (and rep/def levels) cut into small, independently
decodable chunks.

Page buffers: ``[0]`` chunk metadata words, ``[1]`` the chunks (framing in
``lancenb.kernels.miniblock``). Description: ``MiniBlockLayout`` with the value
compression, the def-level compression (``Flat(16)``: raw u16 levels) when the page
has nulls, and ``layers`` (``[ALL_VALID_ITEM]`` or ``[NULLABLE_ITEM]`` for flat data).

Decoding can take any run of chunks, so ranges and takes read only the chunks they
touch: :class:`ChunkTable` maps items to chunks from buffer 0 alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lancenb.encodings import pb
from lancenb.encodings.blocks import FixedWidth, Variable
from lancenb.encodings.physical import flat, variable
from lancenb.errors import CorruptFileError, NotSupportedError
from lancenb.kernels import gather as kg
from lancenb.kernels import miniblock as km
from lancenb.kernels import slices

__all__ = ["encode", "MiniBlockDecoder", "ChunkTable"]

MAX_CHUNK_BYTES = 32 * 1024  # a u16 metadata word can describe at most 4096 words of 8 bytes
MAX_LARGE_CHUNK_BYTES = (1 << 28) * 8

L = pb.e21.RepDefLayer


def encode(block, validity: np.ndarray | None, *, large_chunks: bool = False):
    """Encode one page: ``(buffers, PageLayout)``."""
    codec = variable if isinstance(block, Variable) else flat
    bounds = codec.plan(block)
    vsrc, vstarts, vsizes = codec.encode_chunks(block, bounds)
    counts = np.diff(bounds)
    nc = len(counts)
    if validity is not None:
        defs = (~validity).astype(np.uint16)
        lsrc = defs.view(np.uint8)
        starts = np.concatenate([bounds[:-1, None] * 2, vstarts], axis=1)
        sizes = np.concatenate([counts[:, None] * 2, vsizes], axis=1)
        n_level = 1
        num_levels = counts
        layers = [L.REPDEF_NULLABLE_ITEM]
    else:
        lsrc = np.zeros(0, np.uint8)
        starts, sizes, n_level = vstarts, vsizes, 0
        num_levels = np.zeros(nc, dtype=np.int64)
        layers = [L.REPDEF_ALL_VALID_ITEM]
    size_width = 4 if large_chunks else 2
    cbytes = km.chunk_bytes(sizes, n_level, size_width)
    limit = MAX_LARGE_CHUNK_BYTES if large_chunks else MAX_CHUNK_BYTES
    if nc and int(cbytes.max()) > limit:
        raise NotSupportedError(f"a mini-block chunk would need {int(cbytes.max())} bytes "
                                f"(limit {limit}); values this large need a full-zip page")
    out_starts = np.zeros(nc, dtype=np.int64)
    np.cumsum(cbytes[:-1], out=out_starts[1:])
    data = np.empty(int(cbytes.sum()), dtype=np.uint8)
    km.pack_chunks(lsrc, vsrc, starts.astype(np.int64), sizes.astype(np.int64),
                   num_levels.astype(np.int64), n_level, size_width, data, out_starts)
    log2 = np.zeros(nc, dtype=np.int64)
    if nc > 1:
        log2[:-1] = np.log2(counts[:-1]).astype(np.int64)
    words = ((cbytes // 8 - 1) << 4) | log2
    meta = words.astype(np.uint32 if large_chunks else np.uint16)
    layout = pb.e21.MiniBlockLayout(
        value_compression=(variable if isinstance(block, Variable) else flat).description(block),
        layers=layers, num_buffers=1, num_items=block.num_values)
    if validity is not None:
        layout.def_compression.CopyFrom(pb.flat(16))
    if large_chunks:
        layout.has_large_chunk = True
    return [meta.view(np.uint8), data], pb.e21.PageLayout(mini_block_layout=layout)


@dataclass
class ChunkTable:
    """Where each chunk lives and which items it holds (from buffer 0 only)."""

    words: np.ndarray        # the metadata words, widened to int64
    offsets: np.ndarray      # byte offset of each chunk in buffer 1
    nbytes: np.ndarray       # bytes of each chunk
    item_starts: np.ndarray  # first item of each chunk, plus the total at the end

    @classmethod
    def from_words(cls, raw: np.ndarray, num_items: int, data_size: int, where: str):
        words = raw.astype(np.int64)
        nbytes = ((words >> 4) + 1) * 8
        log2 = words & 0xF
        counts = np.left_shift(1, log2)
        if len(words):
            counts[-1] = num_items - int(counts[:-1].sum()) if log2[-1] == 0 else counts[-1]
        bad = np.flatnonzero(log2[:-1] == 0)
        if bad.size or (len(words) and counts[-1] <= 0) or int(counts.sum()) != num_items:
            raise CorruptFileError(f"{where}: chunk metadata describes "
                                   f"{int(counts.sum())} items, the page has {num_items}")
        offsets = np.zeros(len(words), dtype=np.int64)
        np.cumsum(nbytes[:-1], out=offsets[1:])
        if len(words) and int(offsets[-1] + nbytes[-1]) > data_size:
            raise CorruptFileError(f"{where}: chunks need {int(offsets[-1] + nbytes[-1])} "
                                   f"bytes, the chunk buffer has {data_size}")
        item_starts = np.zeros(len(words) + 1, dtype=np.int64)
        np.cumsum(counts, out=item_starts[1:])
        return cls(words, offsets, nbytes, item_starts)


class MiniBlockDecoder:
    """Decodes a mini-block page of flat (non-repeated) data."""

    def __init__(self, layout, num_rows: int, buffer_sizes, where: str, dtype_bits):
        self.where = where
        self.layout = layout
        if layout.HasField("rep_compression") or layout.repetition_index_depth:
            raise NotSupportedError(f"{where}: pages with repetition levels (lists) are not "
                                    f"supported yet")
        if layout.HasField("dictionary"):
            raise NotSupportedError(f"{where}: dictionary-encoded pages are not supported yet")
        layers = list(layout.layers)
        if layers not in ([L.REPDEF_ALL_VALID_ITEM], [L.REPDEF_NULLABLE_ITEM]):
            names = [L.Name(x) if x in L.values() else str(x) for x in layers]
            raise NotSupportedError(f"{where}: rep/def layers {names} are not supported yet")
        self.has_def = layout.HasField("def_compression")
        if self.has_def:
            d = layout.def_compression
            if d.WhichOneof("compression") != "flat" or d.flat.bits_per_value != 16 \
                    or d.flat.HasField("data"):
                raise NotSupportedError(
                    f"{where}: definition levels use encoding {pb.describe(d)}, which lancenb "
                    f"does not decode yet (it decodes flat(16))")
        vc = layout.value_compression
        kind = vc.WhichOneof("compression")
        if kind == "flat" and not vc.flat.HasField("data"):
            self.codec, self.bits = flat, int(vc.flat.bits_per_value)
            if dtype_bits is not None and self.bits != dtype_bits:
                raise CorruptFileError(f"{where}: flat values of {self.bits} bits for a column "
                                       f"of {dtype_bits}-bit values")
        elif (kind == "variable" and vc.variable.offsets.WhichOneof("compression") == "flat"
              and not vc.variable.HasField("values")):
            self.codec, self.bits = variable, int(vc.variable.offsets.flat.bits_per_value)
        else:
            raise NotSupportedError(f"{where}: value encoding {pb.describe(vc)} is not "
                                    f"supported yet (lancenb decodes flat and variable)")
        if layout.num_buffers != 1:
            raise CorruptFileError(f"{where}: {layout.num_buffers} value buffers per chunk "
                                   f"for a {kind} page (expected 1)")
        if layout.num_items != num_rows:
            raise CorruptFileError(f"{where}: layout has {layout.num_items} items for "
                                   f"{num_rows} rows")
        if len(buffer_sizes) != 2:
            raise CorruptFileError(f"{where}: mini-block page has {len(buffer_sizes)} buffers, "
                                   f"expected 2")
        self.size_width = 4 if layout.has_large_chunk else 2
        self._table: ChunkTable | None = None
        self.num_items = num_rows
        self.buffer_sizes = buffer_sizes

    def buffers_for_all(self, offsets, sizes):
        return list(zip(offsets, sizes))

    def chunk_table(self, meta) -> ChunkTable:
        if self._table is None:
            wdt = np.uint32 if self.size_width == 4 else np.uint16
            if len(meta) % np.dtype(wdt).itemsize:
                raise CorruptFileError(f"{self.where}: chunk metadata of {len(meta)} bytes is "
                                       f"not a whole number of words")
            raw = np.frombuffer(meta, dtype=wdt)
            self._table = ChunkTable.from_words(raw, self.num_items, self.buffer_sizes[1],
                                                self.where)
        return self._table

    def decode_all(self, buffers):
        """``(block, validity)`` of the whole page from its two buffers."""
        table = self.chunk_table(buffers[0])
        if len(table.words) == 0:
            return empty_block(None if self.codec is variable else self.bits, self.bits), None
        return self._decode_run(table, np.arange(len(table.words)),
                                np.frombuffer(buffers[1], dtype=np.uint8), table.offsets)

    def scan(self, reader, offsets, group_bytes: int):
        """Yield ``(block, validity)`` for runs of about ``group_bytes`` of chunks, so a
        full read holds only one run's file bytes at a time next to the result."""
        if self._table is None:
            (meta,) = reader.read_ranges([(offsets[0], self.buffer_sizes[0])])
            self.chunk_table(meta)
        t = self._table
        n = len(t.words)
        if n == 0:
            yield empty_block(None if self.codec is variable else self.bits, self.bits), None
            return
        ends = t.offsets + t.nbytes
        start = 0
        while start < n:
            stop = max(start + 1, int(np.searchsorted(ends, t.offsets[start] + group_bytes,
                                                      side="right")))
            span = int(ends[stop - 1] - t.offsets[start])
            data, _ = reader.read_ranges_np([offsets[1] + int(t.offsets[start])], [span])
            yield self._decode_run(t, np.arange(start, stop), data,
                                   t.offsets[start:stop] - t.offsets[start])
            start = stop

    def _decode_run(self, table: ChunkTable, chunks: np.ndarray, data: np.ndarray,
                    chunk_pos: np.ndarray):
        """``(block, validity)`` of consecutive ``chunks`` located in ``data``."""
        items, starts, sizes = self._parse(table, chunks, data, chunk_pos)
        validity = None
        if self.has_def:
            defs = np.empty(int(items.sum()) * 2, np.uint8)
            slices.concat_slices(data, starts[:, 0].copy(), sizes[:, 0].copy(), defs)
            validity = self._validity(defs.view(np.uint16))
        block = self.codec.decode_chunks(self.bits, data, starts[:, -1].copy(),
                                         sizes[:, -1].copy(), items, self.where)
        return block, validity

    def read_rows(self, reader, offsets, rows: np.ndarray):
        """``(block, validity)`` of ``rows`` (sorted, page-relative), reading only
        the chunks that hold them and copying out only the selected values."""
        if self._table is None:
            (meta,) = reader.read_ranges([(offsets[0], self.buffer_sizes[0])])
            self.chunk_table(meta)
        t = self._table
        chunk_of = np.searchsorted(t.item_starts, rows, side="right") - 1
        needed, slot = np.unique(chunk_of, return_inverse=True)
        data, pos = reader.read_ranges_np(offsets[1] + t.offsets[needed], t.nbytes[needed])
        items, starts, sizes = self._parse(t, needed, data, pos)
        local = rows - t.item_starts[chunk_of]
        n = len(rows)
        validity = None
        if self.has_def:
            out = np.empty(2 * n, np.uint8)
            if kg.gather_fixed(data, starts[slot, 0] + 2 * local, 2, out) != 0:
                raise CorruptFileError(f"{self.where}: definition levels outside their chunk")
            validity = self._validity(out.view(np.uint16))
        vs, vz, cnt = starts[slot, -1], sizes[slot, -1], items[slot]
        if self.codec is flat:
            self._check_flat_sizes(sizes[:, -1], items, needed)
            if self.bits % 8 == 0:
                w = self.bits // 8
                out = np.empty(n * w, np.uint8)
                status = kg.gather_fixed(data, vs + local * w, w, out)
            else:
                out = np.empty((n * self.bits + 7) // 8, np.uint8)
                status = kg.gather_bits(data, vs * 8 + local * self.bits, out)
            if status != 0:
                raise CorruptFileError(f"{self.where}: value outside its chunk")
            return FixedWidth(self.bits, out, n), validity
        ow = self.bits // 8
        err = np.zeros(2, np.int64)
        total = kg.gather_variable_size(data, vs, vz, cnt, local, ow, err)
        if total < 0:
            c = int(needed[slot[int(err[0])]])
            raise CorruptFileError(f"{self.where}, chunk {c}: variable offsets are out of "
                                   f"bounds or decreasing")
        offs = np.empty(n + 1, np.int64)
        out = np.empty(int(total), np.uint8)
        kg.gather_variable_fill(data, vs, local, ow, offs, out)
        return Variable(offs, out, n, self.bits), validity

    def _parse(self, table: ChunkTable, chunks: np.ndarray, data: np.ndarray,
               chunk_pos: np.ndarray):
        """Validate ``chunks`` (sorted; chunk ``i`` at ``data[chunk_pos[i]]``) and
        locate their buffers: ``(items, starts, sizes)``."""
        words = table.words[chunks]
        n_items = int((table.item_starts[chunks + 1] - table.item_starts[chunks]).sum())
        nl = 1 if self.has_def else 0
        nc = len(chunks)
        items = np.empty(nc, np.int64)
        levels = np.empty(nc, np.int64)
        starts = np.empty((nc, nl + 1), np.int64)
        sizes = np.empty((nc, nl + 1), np.int64)
        err = np.zeros(2, np.int64)
        status = km.parse_chunks(words, data, np.ascontiguousarray(chunk_pos, np.int64),
                                 n_items, nl, 1, self.size_width, items, levels, starts, sizes,
                                 err)
        if status != 0:
            what = {km.CHUNKS_PAST_END: "chunk runs past the end of the chunk buffer",
                    km.BAD_ITEM_COUNT: "chunk item counts do not match the page",
                    km.HEADER_PAST_CHUNK: "chunk header is larger than the chunk",
                    km.BUFFER_PAST_CHUNK: "buffer size points past the end of the chunk",
                    }[status]
            c = int(chunks[min(int(err[0]), nc - 1)])
            raise CorruptFileError(f"{self.where}, chunk {c}: {what} (byte {int(err[1])} of "
                                   f"the chunks read)")
        if self.has_def and (not np.array_equal(levels, items)
                             or not np.array_equal(sizes[:, 0], items * 2)):
            raise CorruptFileError(f"{self.where}: definition level counts do not match the "
                                   f"chunks' values")
        return items, starts, sizes

    def _check_flat_sizes(self, sizes, counts, chunks):
        expected = (counts * self.bits + 7) // 8
        bad = np.flatnonzero(sizes != expected)
        if bad.size:
            c = int(bad[0])
            raise CorruptFileError(f"{self.where}, chunk {int(chunks[c])}: flat value buffer "
                                   f"has {int(sizes[c])} bytes, expected {int(expected[c])}")

    def _validity(self, defs: np.ndarray) -> np.ndarray:
        if defs.size and int(defs.max()) > 1:
            raise CorruptFileError(f"{self.where}: definition level {int(defs.max())} in a "
                                   f"page whose only layer is a nullable item")
        return defs == 0


def empty_block(dtype_bits: int | None, offset_bits: int = 32):
    if dtype_bits is None:
        return Variable(np.zeros(1, np.int64), np.zeros(0, np.uint8), 0, offset_bits)
    return FixedWidth(dtype_bits, np.zeros(0, np.uint8), 0)
