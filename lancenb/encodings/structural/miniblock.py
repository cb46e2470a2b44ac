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

from lancenb.encodings import pb, physical
from lancenb.encodings.blocks import DictionaryIndices, FixedWidth, Variable, to_arrow
from lancenb.encodings.cache import CachedState
from lancenb.encodings.physical import flat, variable
from lancenb.encodings.physical import levels as level_codec
from lancenb.encodings.structural import repdef
from lancenb.encodings.structural.nested import NestedPages
from lancenb.errors import CorruptFileError, NotSupportedError
from lancenb.kernels import miniblock as km

__all__ = ["encode", "MiniBlockDecoder", "ChunkTable", "RowsPlan", "decode_pages",
           "decode_group", "gather_group", "take_pages", "load_tables"]

MAX_CHUNK_BYTES = 32 * 1024  # a u16 metadata word can describe at most 4096 words of 8 bytes
MAX_LARGE_CHUNK_BYTES = (1 << 28) * 8

L = pb.e21.RepDefLayer
# the layers of a flat page (looked up once: protobuf enum attributes are slow)
_FLAT_LAYERS = ([L.REPDEF_ALL_VALID_ITEM], [L.REPDEF_NULLABLE_ITEM])


def level_bounds(levels, bounds: np.ndarray) -> np.ndarray:
    """Where each chunk's levels start (and the end): a chunk takes levels until it has
    as many visible ones as it has values, stopping right after the last of them; the
    last chunk takes the rest (so invisible levels open the next chunk)."""
    vis = levels.visible()
    if vis is None:
        return bounds.copy()
    lb = np.empty(len(bounds), np.int64)
    lb[0] = 0
    lb[1:-1] = vis[bounds[1:-1] - 1] + 1
    lb[-1] = levels.num_levels
    return lb


def repetition_index(rep: np.ndarray, max_rep: int, lb: np.ndarray) -> np.ndarray:
    """Per chunk ``[rows ending in the chunk, levels left over after its last row
    start]`` (u64, row-major), as the reference counts them
    (:func:`kernels.miniblock.repetition_index`, one pass over the levels)."""
    out = np.empty(2 * (len(lb) - 1), np.uint64)
    status = km.repetition_index(rep, max_rep, np.asarray(lb, np.int64), out)
    if status != km.OK:  # chunks always hold levels: a bug, not bad input
        raise AssertionError(f"repetition index of chunks {lb.tolist()}: status {status}")
    return out


def encode(block, validity: np.ndarray | None, *, codec=None, pack_levels: bool = False,
           large_chunks: bool = False, dictionary=None, levels=None,
           version_minor: int = 1):
    """Encode one page: ``(buffers, PageLayout)``.

    ``codec`` (from the strategy) cuts the values into chunk buffers and describes
    them; by default Flat or Variable. ``pack_levels`` compresses the rep/def levels
    (bitpacked; in 2.2, ``version_minor`` 2, also RLE: :mod:`.physical.levels`).
    ``dictionary`` is ``(items bytes, description, count)`` when ``block`` holds
    dictionary indices; the items become page buffer 2. ``levels`` (a
    :class:`~lancenb.encodings.structural.repdef.Levels`) replaces ``validity`` for
    nested columns: rep and def levels go into the chunks and, with repetition, a
    repetition index is added as the last page buffer.
    """
    if codec is None:
        codec = variable.VARIABLE if isinstance(block, Variable) else flat.FLAT
    bounds = codec.plan(block)
    vsrc, vstarts, vsizes, desc = codec.encode_chunks(block, bounds)
    counts = np.diff(bounds)
    nc = len(counts)
    layout = pb.e21.MiniBlockLayout(value_compression=desc, num_buffers=vsizes.shape[1],
                                    num_items=block.num_values)
    if levels is not None and levels.is_simple() and levels.rep is None:
        validity = None if levels.defs is None else levels.defs == 0
        levels = None
    rep_index = None
    if levels is not None:
        lb = level_bounds(levels, bounds)
        num_levels = np.diff(lb)
        if levels.rep is None and levels.defs is None:
            num_levels = np.zeros(nc, np.int64)
        if nc and int(num_levels.max()) > 0xFFFF:
            raise NotSupportedError(f"a mini-block chunk would hold {int(num_levels.max())} "
                                    f"rep/def levels (at most 65535)")
        srcs, lstarts, lsizes = [], [], []
        base = 0
        for name, lv in (("rep", levels.rep), ("def", levels.defs)):
            if lv is None:
                continue
            if pack_levels:
                src, st, sz, ldesc = level_codec.encode_levels(lv, lb,
                                                               version_minor=version_minor)
            else:
                src, st, sz, ldesc = lv.view(np.uint8), lb[:-1] * 2, num_levels * 2, \
                    pb.flat(16)
            getattr(layout, f"{name}_compression").CopyFrom(ldesc)
            srcs.append(src)
            lstarts.append(np.asarray(st, np.int64) + base)
            lsizes.append(np.asarray(sz, np.int64))
            base += len(src)
        n_level = len(srcs)
        if n_level and int(np.max([z.max(initial=0) for z in lsizes])) > 0xFFFF:
            raise NotSupportedError("a mini-block chunk would hold more than 65535 bytes of "
                                    "rep/def levels")
        lsrc = np.concatenate(srcs) if srcs else np.zeros(0, np.uint8)
        if n_level:
            starts = np.concatenate([np.stack(lstarts, axis=1), vstarts], axis=1)
            sizes = np.concatenate([np.stack(lsizes, axis=1), vsizes], axis=1)
        else:
            starts, sizes = vstarts, vsizes
        layout.layers.extend(levels.layers)
        if levels.rep is not None:
            rep_index = repetition_index(levels.rep, levels.info.max_rep, lb)
            layout.repetition_index_depth = 1
    elif validity is not None:
        defs = (~validity).astype(np.uint16)
        if pack_levels:
            lsrc, lstarts, lsizes, ldesc = level_codec.encode_levels(
                defs, bounds, version_minor=version_minor)
            layout.def_compression.CopyFrom(ldesc)
        else:
            lsrc, lstarts, lsizes = defs.view(np.uint8), bounds[:-1] * 2, counts * 2
            layout.def_compression.CopyFrom(pb.flat(16))
        starts = np.concatenate([lstarts[:, None], vstarts], axis=1)
        sizes = np.concatenate([lsizes[:, None], vsizes], axis=1)
        n_level = 1
        num_levels = counts
        layout.layers.append(L.REPDEF_NULLABLE_ITEM)
    else:
        lsrc = np.zeros(0, np.uint8)
        starts, sizes, n_level = vstarts, vsizes, 0
        num_levels = np.zeros(nc, dtype=np.int64)
        layout.layers.append(L.REPDEF_ALL_VALID_ITEM)
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
    if large_chunks:
        layout.has_large_chunk = True
    buffers = [meta.view(np.uint8), data]
    if dictionary is not None:
        items, desc, count = dictionary
        layout.dictionary.CopyFrom(desc)
        layout.num_dictionary_items = count
        buffers.append(items)
    if rep_index is not None:
        buffers.append(rep_index.view(np.uint8))
    return buffers, pb.e21.PageLayout(mini_block_layout=layout)


@dataclass
class RowsPlan:
    """The chunks a read of rows by position needs (:meth:`MiniBlockDecoder.plan_rows`)."""

    table: "ChunkTable"
    needed: np.ndarray   # the chunks, sorted, unique
    slot: np.ndarray     # per row: its chunk's index in ``needed``
    local: np.ndarray    # per row: its position in its chunk
    dict_items: object   # the page's dictionary (dictionary pages)
    base: int            # where the chunk buffer starts in the file

    def ranges(self) -> tuple[np.ndarray, np.ndarray]:
        """``(file offsets, lengths)`` of the needed chunks."""
        return self.base + self.table.offsets[self.needed], self.table.nbytes[self.needed]


@dataclass
class ChunkTable:
    """Where each chunk lives and which items it holds (from buffer 0 only)."""

    words: np.ndarray        # the metadata words, widened to int64
    offsets: np.ndarray      # byte offset of each chunk in buffer 1
    nbytes: np.ndarray       # bytes of each chunk
    item_starts: np.ndarray  # first item of each chunk, plus the total at the end

    @classmethod
    def from_words(cls, raw: np.ndarray, num_items: int, data_size: int, where: str):
        """The chunk table from the page's metadata words (size and log2 count per
        chunk), checked."""
        words = raw.astype(np.int64)
        nbytes = ((words >> 4) + 1) * 8
        log2 = words & 0xF
        counts = np.left_shift(1, log2)
        if len(words):
            counts[-1] = num_items - int(counts[:-1].sum()) if log2[-1] == 0 else counts[-1]
        bad = np.flatnonzero(log2[:-1] == 0)
        if bad.size:
            raise CorruptFileError(f"{where}: chunk {int(bad[0])} of {len(words)} has no item "
                                   f"count (only the last chunk may)")
        if (len(words) and counts[-1] <= 0) or int(counts.sum()) != num_items:
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


class MiniBlockDecoder(NestedPages, CachedState):
    """Decodes a mini-block page (nested pages: see :mod:`.nested`).

    The value and level decoders come from ``lancenb.encodings.physical`` and are
    built from the layout alone.
    """

    def __init__(self, layout, num_rows: int, buffer_sizes, where: str, dtype_bits,
                 dtype=None):
        self.where = where
        self.dtype = dtype
        self.layout = layout
        layers = list(layout.layers)
        self.nested = layout.HasField("rep_compression") or layers not in _FLAT_LAYERS
        self.info = repdef.LayerInfo.from_layers(layers, where) if self.nested else None
        if self.nested:
            if self.info.max_rep and not layout.HasField("rep_compression"):
                raise CorruptFileError(f"{where}: list layers without repetition levels")
            if not self.info.max_rep and layout.HasField("rep_compression"):
                raise CorruptFileError(f"{where}: repetition levels without list layers")
            if self.info.max_rep and layout.repetition_index_depth != 1:
                raise NotSupportedError(f"{where}: repetition index depth "
                                        f"{layout.repetition_index_depth} is not supported")
            if not self.info.max_def and layout.HasField("def_compression"):
                raise CorruptFileError(f"{where}: definition levels for all-valid layers")
        self.reps = (physical.level_decoder(layout.rep_compression, where)
                     if layout.HasField("rep_compression") else None)
        self.levels = (physical.level_decoder(layout.def_compression, where)
                       if layout.HasField("def_compression") else None)
        self.dtype_bits = dtype_bits
        self.has_dictionary = layout.HasField("dictionary")
        if self.has_dictionary:
            # chunk values are indices into a dictionary kept in page buffer 2
            index_bits = physical.natural_bits(layout.value_compression)
            if index_bits not in (8, 16, 32, 64):
                raise NotSupportedError(f"{where}: dictionary indices encoded as "
                                        f"{pb.describe(layout.value_compression)}")
            self.values = physical.value_decoder(layout.value_compression, index_bits, where)
            self.items_decoder = physical.block_decoder(
                layout.dictionary, int(layout.num_dictionary_items), dtype_bits,
                f"{where}, dictionary")
        else:
            self.values = physical.value_decoder(layout.value_compression, dtype_bits, where)
        if layout.num_buffers != self.values.num_buffers:
            raise CorruptFileError(f"{where}: {layout.num_buffers} value buffers per chunk, "
                                   f"the encoding has {self.values.num_buffers}")
        if layout.num_items != num_rows and not (self.nested and self.info.max_rep):
            # without lists every row is one value slot
            raise CorruptFileError(f"{where}: layout has {layout.num_items} items for "
                                   f"{num_rows} rows")
        expected = (3 if self.has_dictionary else 2) + (1 if self.reps is not None else 0)
        if len(buffer_sizes) != expected:
            raise CorruptFileError(f"{where}: mini-block page has {len(buffer_sizes)} buffers, "
                                   f"expected {expected}")
        self.size_width = 4 if layout.has_large_chunk else 2
        self.num_items = int(layout.num_items)
        self.num_rows = num_rows
        self.buffer_sizes = buffer_sizes

    # per-page state for random access, kept in the reader's search cache
    _table = property(lambda self: self._cached("chunks"),
                      lambda self, v: self._store("chunks", v))
    _rep_index = property(lambda self: self._cached("rep_index"),
                          lambda self, v: self._store("rep_index", v))
    _items = property(lambda self: self._cached("dictionary"),
                      lambda self, v: self._store("dictionary", v))

    def init_ranges(self, offsets) -> list[tuple[int, int]]:
        """The buffers random access needs loaded: chunk metadata, dictionary and
        repetition index (see :meth:`init_from`)."""
        out = [(offsets[0], self.buffer_sizes[0])]
        if self.has_dictionary:
            out.append((offsets[2], self.buffer_sizes[2]))
        if self.reps is not None:
            out.append((offsets[-1], self.buffer_sizes[-1]))
        return out

    def init_from(self, bufs) -> None:
        """Load (into the search cache) what :meth:`init_ranges` named."""
        t = self.chunk_table(bufs[0])
        if self.has_dictionary:
            self.load_items(buf=bufs[1])
        if self.reps is not None:
            self.rep_index(None, None, raw=bufs[-1], table=t)

    def batch_key(self):
        """Pages with equal keys decode together (:func:`decode_pages`): flat, all
        valid, no dictionary, values of one batchable kind and whole bytes; None for
        any other page."""
        vk = self.values.batch_key
        if (vk is None or self.nested or self.levels is not None or self.has_dictionary
                or self.dtype_bits is None or self.dtype_bits % 8):
            return None
        return vk, self.size_width

    @property
    def n_level_bufs(self) -> int:
        """Level buffers in each chunk (repetition, definition)."""
        return (self.reps is not None) + (self.levels is not None)

    def buffers_for_all(self, offsets, sizes):
        """Every page buffer (all a whole-page decode needs)."""
        return list(zip(offsets, sizes))

    def chunk_table(self, meta) -> ChunkTable:
        """The page's chunk table, parsed from the metadata buffer ``meta`` once."""
        t = self._table
        if t is not None:
            return t
        if True:
            wdt = np.uint32 if self.size_width == 4 else np.uint16
            if len(meta) % np.dtype(wdt).itemsize:
                raise CorruptFileError(f"{self.where}: chunk metadata of {len(meta)} bytes is "
                                       f"not a whole number of words")
            raw = np.frombuffer(meta, dtype=wdt)
            t = ChunkTable.from_words(raw, self.num_items, self.buffer_sizes[1], self.where)
            self._table = t
        return t

    def load_items(self, reader=None, offsets=None, buf=None):
        """Decode (once) the page's dictionary from buffer 2."""
        items = self._items
        if items is None:
            if buf is None:
                (buf,) = reader.read_ranges([(offsets[2], self.buffer_sizes[2])])
            items = to_arrow(self.dtype, self.items_decoder(buf), None)
            self._items = items
        return items

    def _wrap(self, block, items=None):
        """Indices -> a DictionaryIndices block for dictionary pages."""
        if not self.has_dictionary:
            return block
        idx = np.frombuffer(block.data, dtype=f"<u{block.bits // 8}")[:block.num_values]
        items = items if items is not None else self._items
        return DictionaryIndices(idx, items, block.num_values)

    def _empty(self):
        return empty_block(self.dtype_bits, getattr(self.values, "offset_bits", 32)), None

    def read_chunks(self, reader, offsets, t: ChunkTable, chunks: np.ndarray):
        """``(bytes, position of each chunk in them)`` of the sorted ``chunks``: one
        plain read when they are consecutive (they lie back to back)."""
        a, b = int(chunks[0]), int(chunks[-1])
        if b - a == len(chunks) - 1:
            start = int(t.offsets[a])
            data = np.frombuffer(reader.read(offsets[1] + start,
                                             int(t.offsets[b] + t.nbytes[b]) - start), np.uint8)
            return data, t.offsets[a:b + 1] - start
        return reader.read_ranges_np(offsets[1] + t.offsets[chunks], t.nbytes[chunks])

    def _load_table(self, reader, offsets) -> ChunkTable:
        """The chunk table, reading buffer 0 on first use (cached for the reader)."""
        t = self._table
        if t is None:
            (meta,) = reader.read_ranges([(offsets[0], self.buffer_sizes[0])])
            t = self.chunk_table(meta)
        return t

    def decode_all(self, buffers):
        """``(block, validity)`` of the whole page from its buffers."""
        table = self.chunk_table(buffers[0])
        items = self.load_items(buf=buffers[2]) if self.has_dictionary else None
        if len(table.words) == 0:
            return self._empty()
        return self._decode_run(table, np.arange(len(table.words)),
                                np.frombuffer(buffers[1], dtype=np.uint8), table.offsets, items)

    def scan(self, reader, offsets, group_bytes: int):
        """Yield ``(block, validity)`` for runs of about ``group_bytes`` of chunks, so a
        full read holds only one run's file bytes at a time next to the result."""
        t = self._load_table(reader, offsets)
        dict_items = self.load_items(reader, offsets) if self.has_dictionary else None
        n = len(t.words)
        if n == 0:
            yield self._empty()
            return
        ends = t.offsets + t.nbytes
        # values decoded into new arrays (FSST): the run's bytes go to the thread's
        # reused scratch buffer, not fresh memory (a page fault per 4 KiB on first touch)
        read = (getattr(reader, "read_ranges_scratch", None)
                if self.levels is None and getattr(self.values, "copies_out", False)
                else None) or reader.read_ranges_np
        start = 0
        while start < n:
            stop = max(start + 1, int(np.searchsorted(ends, t.offsets[start] + group_bytes,
                                                      side="right")))
            span = int(ends[stop - 1] - t.offsets[start])
            data, _ = read([offsets[1] + int(t.offsets[start])], [span])
            yield self._decode_run(t, np.arange(start, stop), data,
                                   t.offsets[start:stop] - t.offsets[start], dict_items)
            start = stop

    def _decode_run(self, table: ChunkTable, chunks: np.ndarray, data: np.ndarray,
                    chunk_pos: np.ndarray, dict_items=None):
        """``(block, validity)`` of the (sorted) ``chunks`` located in ``data``."""
        items, levels, starts, sizes = self._parse(table, chunks, data, chunk_pos)
        nl = self.n_level_bufs
        validity = None
        if self.levels is not None:
            validity = self._validity(self.levels.decode(data, starts[:, 0], sizes[:, 0],
                                                         levels, self.where))
        block = self.values.decode(data, starts[:, nl:], sizes[:, nl:], items, self.where)
        return self._wrap(block, dict_items), validity

    def read_rows(self, reader, offsets, rows: np.ndarray):
        """``(block, validity, selection)`` for ``rows`` (sorted, page-relative),
        reading only the chunks that hold them. Where the encodings allow it only
        the selected values are copied out (``selection`` is None); otherwise the
        chunks are decoded and ``selection`` indexes the rows among their items."""
        plan = self.plan_rows(reader, offsets, rows)
        data, pos = self.read_chunks(reader, offsets, plan.table, plan.needed)
        return self.rows_from(plan, data, pos)

    def plan_rows(self, reader, offsets, rows: np.ndarray, memo: dict | None = None
                  ) -> "RowsPlan":
        """Which chunks hold ``rows`` (sorted, page-relative): the first half of
        :meth:`read_rows`, so that a caller can read the chunks of many pages in one
        request (their file ranges: :meth:`RowsPlan.ranges`) and finish each page with
        :meth:`rows_from`. ``memo`` (a dict the caller keeps for one read) shares the
        row-to-chunk lookup between pages cut into the same chunks (a wide table's
        columns of one type), asked for the same ``rows`` object."""
        t = self._load_table(reader, offsets)
        dict_items = self.load_items(reader, offsets) if self.has_dictionary else None
        key = None
        if memo is not None:
            key = (id(rows), t.item_starts.tobytes())
            hit = memo.get(key)
            if hit is not None:  # (hit[0] keeps ``rows`` alive: its id stays its own)
                return RowsPlan(t, *hit[1:], dict_items, offsets[1])
        chunk_of = np.searchsorted(t.item_starts, rows, side="right") - 1
        # rows are sorted, so their chunks are too
        new = np.empty(len(chunk_of), bool)
        new[:1] = True
        np.not_equal(chunk_of[1:], chunk_of[:-1], out=new[1:])
        needed = chunk_of[new]
        got = (rows, needed, np.cumsum(new) - 1, rows - t.item_starts[chunk_of])
        if key is not None:
            memo[key] = got
        return RowsPlan(t, *got[1:], dict_items, offsets[1])

    def rows_from(self, plan: "RowsPlan", data: np.ndarray, pos: np.ndarray):
        """``(block, validity, selection)`` of a :class:`RowsPlan` whose chunks were
        read into ``data`` (chunk ``i`` at ``pos[i]``, checked by :meth:`_parse`)."""
        t, needed, slot, local, dict_items = (plan.table, plan.needed, plan.slot, plan.local,
                                              plan.dict_items)
        if self.values.can_gather and (self.levels is None or self.levels.can_gather):
            items, levels, starts, sizes = self._parse(t, needed, data, pos)
            nl = self.n_level_bufs
            validity = None
            if self.levels is not None:
                validity = self._validity(self.levels.gather(
                    data, starts[:, 0], sizes[:, 0], levels, slot, local, self.where))
            block = self.values.gather(data, starts[:, nl:], sizes[:, nl:], items, slot, local,
                                       self.where)
            return self._wrap(block, dict_items), validity, None
        block, validity = self._decode_run(t, needed, data, pos, dict_items)
        firsts = np.zeros(len(needed), dtype=np.int64)
        counts = t.item_starts[needed + 1] - t.item_starts[needed]
        np.cumsum(counts[:-1], out=firsts[1:])
        return block, validity, firsts[slot] + local

    def _parse(self, table: ChunkTable, chunks: np.ndarray, data: np.ndarray,
               chunk_pos: np.ndarray):
        """Validate ``chunks`` (sorted; chunk ``i`` at ``data[chunk_pos[i]]``) and
        locate their buffers: ``(items, levels, starts, sizes)``."""
        words = table.words[chunks]
        n_items = int((table.item_starts[chunks + 1] - table.item_starts[chunks]).sum())
        nl = self.n_level_bufs
        nb = nl + self.values.num_buffers
        nc = len(chunks)
        items = np.empty(nc, np.int64)
        levels = np.empty(nc, np.int64)
        starts = np.empty((nc, nb), np.int64)
        sizes = np.empty((nc, nb), np.int64)
        err = np.zeros(2, np.int64)
        status = km.parse_chunks(words, data, np.ascontiguousarray(chunk_pos, np.int64),
                                 n_items, nl, self.values.num_buffers, self.size_width, items,
                                 levels, starts, sizes, err)
        if status != 0:
            what = {km.CHUNKS_PAST_END: "chunk runs past the end of the chunk buffer",
                    km.BAD_ITEM_COUNT: "chunk item counts do not match the page",
                    km.HEADER_PAST_CHUNK: "chunk header is larger than the chunk",
                    km.BUFFER_PAST_CHUNK: "buffer size points past the end of the chunk",
                    }[status]
            c = int(chunks[min(int(err[0]), nc - 1)])
            raise CorruptFileError(f"{self.where}, chunk {c}: {what} (byte {int(err[1])} of "
                                   f"the chunks read)")
        if self.levels is not None and not self.nested and not np.array_equal(levels, items):
            # without repetition every level is a value slot
            raise CorruptFileError(f"{self.where}: definition level counts do not match the "
                                   f"chunks' values")
        return items, levels, starts, sizes

    def _validity(self, defs: np.ndarray) -> np.ndarray:
        if defs.size and int(defs.max()) > 1:
            raise CorruptFileError(f"{self.where}: definition level {int(defs.max())} in a "
                                   f"page whose only layer is a nullable item")
        return defs == 0


def _words_at(data: np.ndarray, at: np.ndarray, width: int) -> np.ndarray:
    """Little-endian unsigned words of ``width`` bytes at byte positions ``at``."""
    out = data[at].astype(np.int64)
    for k in range(1, width):
        out |= data[at + k].astype(np.int64) << (8 * k)
    return out


def decode_pages(decs: list, data: np.ndarray, meta: np.ndarray, chunks: np.ndarray):
    """Decode whole pages of equal :meth:`MiniBlockDecoder.batch_key` with one value
    decode over all their chunks: the blocks of each page, or None when anything does
    not check (the caller then decodes page by page, which names the fault).

    ``data`` holds every page's buffers; page ``i``'s chunk metadata is
    ``data[meta[i, 0]:][:meta[i, 1]]`` and its chunk buffer ``data[chunks[i, 0]:]
    [:chunks[i, 1]]``. The checks are those of :meth:`ChunkTable.from_words` and the
    chunk parse, vectorised: item counts per page, chunks inside their buffer,
    headers and value sizes inside their chunk.
    """
    got = decode_group(decs, data, meta, chunks)
    if got is None:
        return None
    block, item_start = got
    width = decs[0].dtype_bits // 8
    return [FixedWidth(decs[0].dtype_bits, block.data[a * width:b * width], b - a)
            for a, b in zip(item_start[:-1].tolist(), item_start[1:].tolist())]


def _value_chunks(decs: list, data: np.ndarray, meta: np.ndarray, chunks: np.ndarray):
    """The chunk tables of pages of one layout parsed together, and where each chunk's
    values are: ``(first decoder, value starts, value sizes (both one column), values
    per chunk, each page's first chunk, items per page)``; None when anything does not
    check."""
    got = _tables(decs, data, meta, chunks[:, 1])
    if got is None:
        return None
    words, nbytes, counts, off, page_of, page_start, num_items = got
    first = decs[0]
    sw = first.size_width
    pos = chunks[page_of, 0] + off
    hdr = (2 + sw + 7) // 8 * 8  # level count (u16), one value size, padded to 8 bytes
    vsize = _words_at(data, pos + 2, sw)
    if np.any(nbytes < hdr) or np.any(vsize > nbytes - hdr):
        return None
    return first, (pos + hdr)[:, None], vsize[:, None], counts, page_start, num_items


def decode_group(decs: list, data: np.ndarray, meta: np.ndarray, chunks: np.ndarray):
    """:func:`decode_pages` without the cut into pages: ``(block of every page's
    values, back to back; item_start)``, page ``i``'s values being items
    ``item_start[i]:item_start[i + 1]`` of the block; None when anything does not
    check. ``decs`` may repeat one decoder (pages of one layout: only ``num_items``,
    the value decoder and the widths are read from them)."""
    got = _value_chunks(decs, data, meta, chunks)
    if got is None:
        return None
    first, vstart, vsize, counts, _, num_items = got
    try:
        block = first.values.decode(data, vstart, vsize, counts, first.where)
    except CorruptFileError:
        return None
    if block.num_values != int(num_items.sum()):
        return None
    item_start = np.zeros(len(decs) + 1, np.int64)
    np.cumsum(num_items, out=item_start[1:])
    return block, item_start


def gather_group(decs: list, data: np.ndarray, meta: np.ndarray, chunks: np.ndarray,
                 page: np.ndarray, local: np.ndarray):
    """Values ``local[k]`` of pages ``page[k]`` (page-relative item numbers) of whole
    pages laid out as for :func:`decode_group`: one block of just those values (the
    value decoder's ``gather`` where it has one, else a decode of every chunk and one
    fancy index), or None when anything does not check. Only the chunk tables are
    parsed for every page; value checks are the gather's (the chunks it touches)."""
    got = _value_chunks(decs, data, meta, chunks)
    if got is None:
        return None
    first, vstart, vsize, counts, page_start, num_items = got
    if len(local) and (np.any(local < 0) or np.any(local >= num_items[page])):
        return None
    chunk_first = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=chunk_first[1:])
    item = chunk_first[page_start[page]] + local  # in the group's item numbering
    slot = np.searchsorted(chunk_first, item, side="right") - 1
    width = first.dtype_bits // 8
    try:
        if first.values.can_gather:
            block = first.values.gather(data, vstart, vsize, counts, slot,
                                        item - chunk_first[slot], first.where)
        else:
            whole = first.values.decode(data, vstart, vsize, counts, first.where)
            if whole.num_values != int(chunk_first[-1]):
                return None
            values = whole.data[:whole.num_values * width].reshape(-1, width)
            block = FixedWidth(first.dtype_bits, values[item].reshape(-1), len(item))
    except CorruptFileError:
        return None
    if block.num_values != len(item) or len(block.data) < len(item) * width:
        return None
    return block


def load_tables(decs: list, data: np.ndarray, meta: np.ndarray) -> bool:
    """Parse the chunk tables of many pages (equal :meth:`MiniBlockDecoder.batch_key`)
    at once into their search state, page ``i``'s metadata words at
    ``data[meta[i, 0]:][:meta[i, 1]]``; False (nothing loaded) when any does not
    check (the caller then loads page by page, which names the fault)."""
    got = _tables(decs, data, meta, np.array([d.buffer_sizes[1] for d in decs], np.int64))
    if got is None:
        return False
    words, nbytes, counts, off, page_of, page_start, num_items = got
    ends = np.cumsum(counts)
    for d, a, n in zip(decs, page_start.tolist(), (meta[:, 1] // decs[0].size_width).tolist()):
        item_starts = np.empty(n + 1, np.int64)
        item_starts[0] = 0
        item_starts[1:] = ends[a:a + n] - (ends[a - 1] if a else 0)
        d._table = ChunkTable(words[a:a + n], off[a:a + n], nbytes[a:a + n], item_starts)
    return True


def _tables(decs: list, data: np.ndarray, meta: np.ndarray, chunk_bytes: np.ndarray):
    """The chunk tables of many pages, vectorised (the checks of
    :meth:`ChunkTable.from_words`): ``(words, nbytes, counts, offsets, page of each
    chunk, first chunk of each page, items of each page)``, or None when a page does
    not check."""
    first = decs[0]
    sw = first.size_width
    nw = meta[:, 1] // sw
    num_items = np.array([d.num_items for d in decs], np.int64)
    if np.any(meta[:, 1] % sw) or np.any(nw == 0):
        return None
    total_w = int(nw.sum())
    page_start = np.zeros(len(decs), np.int64)
    np.cumsum(nw[:-1], out=page_start[1:])
    page_of = np.repeat(np.arange(len(decs)), nw)
    k = np.arange(total_w, dtype=np.int64) - page_start[page_of]
    words = _words_at(data, meta[page_of, 0] + k * sw, sw)
    nbytes = ((words >> 4) + 1) * 8
    log2 = words & 0xF
    counts = np.left_shift(1, log2)
    last = page_start + nw - 1
    is_last = np.zeros(total_w, bool)
    is_last[last] = True
    if np.any((log2 == 0) & ~is_last):
        return None  # only a page's last chunk may leave its count implicit
    sums = np.add.reduceat(counts, page_start)
    rest = num_items - (sums - counts[last])
    open_last = log2[last] == 0
    counts[last[open_last]] = rest[open_last]
    if np.any(counts[last] <= 0) or np.any(np.add.reduceat(counts, page_start) != num_items):
        return None
    ends = np.cumsum(nbytes)
    off = ends - nbytes - (ends[page_start] - nbytes[page_start])[page_of]
    if np.any(off[last] + nbytes[last] > chunk_bytes):
        return None
    return words, nbytes, counts, off, page_of, page_start, num_items


def take_pages(decs: list, plans: list, data: np.ndarray, poss: list):
    """Rows of pages of equal :meth:`MiniBlockDecoder.batch_key` from their
    :class:`RowsPlan` chunks, read into ``data`` (plan ``i``'s chunk ``c`` at
    ``poss[i][c]``): one value decode of all the chunks and one gather of all the
    rows (or, where the values allow, one gather of just the rows' values). The
    blocks of each page's rows, or None when a chunk does not check (the caller then
    reads page by page, which names the fault)."""
    first = decs[0]
    sw = first.size_width
    width = first.dtype_bits // 8
    words = np.concatenate([p.table.words[p.needed] for p in plans])
    counts = np.concatenate([p.table.item_starts[p.needed + 1] - p.table.item_starts[p.needed]
                             for p in plans])
    pos = np.concatenate(poss).astype(np.int64)
    nbytes = ((words >> 4) + 1) * 8
    hdr = (2 + sw + 7) // 8 * 8
    if np.any(pos < 0) or np.any(pos + nbytes > len(data)) or np.any(nbytes < hdr):
        return None
    vsize = _words_at(data, pos + 2, sw)
    if np.any(vsize > nbytes - hdr):
        return None
    base = np.zeros(len(plans), np.int64)
    np.cumsum([len(p.needed) for p in plans][:-1], out=base[1:])
    slot = np.concatenate([b + p.slot for b, p in zip(base, plans)])
    vstart, vsize = (pos + hdr)[:, None], vsize[:, None]
    try:
        if first.values.can_gather:  # only the rows' values
            got = first.values.gather(data, vstart, vsize, counts, slot,
                                      np.concatenate([p.local for p in plans]),
                                      first.where).data
        else:
            block = first.values.decode(data, vstart, vsize, counts, first.where)
            if block.num_values != int(counts.sum()):
                return None
            chunk_first = np.zeros(len(counts), np.int64)
            np.cumsum(counts[:-1], out=chunk_first[1:])
            idx = np.concatenate([chunk_first[b + p.slot] + p.local
                                  for b, p in zip(base, plans)])
            got = block.data.reshape(-1, width)[idx].reshape(-1)
    except CorruptFileError:
        return None
    if len(got) != width * sum(len(p.local) for p in plans):
        return None
    out = []
    at = 0
    for p in plans:
        n = len(p.local)
        out.append(FixedWidth(first.dtype_bits, got[at * width:(at + n) * width], n))
        at += n
    return out


def empty_block(dtype_bits: int | None, offset_bits: int = 32):
    """A block of no values (variable-width when ``dtype_bits`` is None)."""
    if dtype_bits is None:
        return Variable(np.zeros(1, np.int64), np.zeros(0, np.uint8), 0, offset_bits)
    return FixedWidth(dtype_bits, np.zeros(0, np.uint8), 0)
