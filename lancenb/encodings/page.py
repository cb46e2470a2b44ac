"""One page of one column: picking its layout when writing, decoding it when reading.

``encode_page`` turns an Arrow array into page buffers and a ``PageLayout``.
``PageDecoder`` is built from a page's description and buffer locations; it reads
what it needs through a :class:`lancenb.io.RangeReader` and returns Arrow arrays for
the whole page (:meth:`read_all`) or for a sorted set of rows (:meth:`read_rows`),
touching only the chunks those rows live in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancenb.encodings import blocks, pb
from lancenb.encodings.structural import allnull, miniblock
from lancenb.errors import CorruptFileError, NotSupportedError

__all__ = ["encode_page", "PageDecoder", "PageInfo"]


def encode_page(arr: pa.Array, *, version_minor: int):
    """Encode a flat Arrow array as one page: ``(buffers, PageLayout)``."""
    if len(arr) and arr.null_count == len(arr):
        return allnull.encode()
    block, validity = blocks.from_arrow(arr)
    return miniblock.encode(block, validity, large_chunks=version_minor >= 2)


@dataclass
class PageInfo:
    """Where a page's buffers are and how many rows it holds."""

    offsets: list[int]
    sizes: list[int]
    num_rows: int
    first_row: int


class PageDecoder:
    """Decodes one 2.1/2.2 page into Arrow arrays."""

    def __init__(self, encoding: bytes, page: PageInfo, dtype: pa.DataType, where: str):
        self.page = page
        self.dtype = dtype
        self.where = where
        name, value = pb.unpack_any(encoding, where)
        if name != pb.e21.PageLayout.DESCRIPTOR.full_name:
            raise NotSupportedError(f"{where}: page encoding {name!r} is not supported "
                                    f"(expected lance.encodings21.PageLayout)")
        layout = pb.parse(pb.e21.PageLayout, value, where)
        kind = layout.WhichOneof("layout")
        self.kind = kind
        self.layout = layout
        self._table = None
        if kind == "mini_block_layout":
            if pa.types.is_null(dtype):
                raise CorruptFileError(f"{where}: mini-block page for a null-typed column")
            bits = None if blocks.is_variable(dtype) else blocks.fixed_bits(dtype)
            if bits is None and not blocks.is_variable(dtype):
                raise NotSupportedError(f"{where}: reading {dtype} columns is not supported yet")
            self.impl = miniblock.MiniBlockDecoder(layout.mini_block_layout, page.num_rows,
                                                   page.sizes, where, bits)
        elif kind == "constant_layout":
            self.impl = allnull.ConstantDecoder(layout.constant_layout, page.num_rows,
                                                page.sizes, dtype, where)
        elif kind is None:
            raise CorruptFileError(f"{where}: page layout is empty")
        else:
            raise NotSupportedError(f"{where}: {kind} pages are not supported yet")

    def describe(self) -> str:
        """The page's layout and value encoding, e.g. ``mini_block:variable(flat(32))``."""
        if self.kind == "mini_block_layout":
            lay = self.layout.mini_block_layout
            out = "mini_block:" + pb.describe(lay.value_compression)
            if lay.HasField("def_compression"):
                out += " def=" + pb.describe(lay.def_compression)
            return out
        return self.kind.replace("_layout", "")

    # -- helpers -------------------------------------------------------------
    def _to_arrow(self, block, validity) -> pa.Array:
        if isinstance(block, blocks.FixedWidth) and blocks.is_variable(self.dtype):
            raise CorruptFileError(f"{self.where}: fixed-width values for a {self.dtype} column")
        if isinstance(block, blocks.Variable) and not blocks.is_variable(self.dtype):
            raise CorruptFileError(f"{self.where}: variable-width values for a {self.dtype} "
                                   f"column")
        return blocks.to_arrow(self.dtype, block, validity)

    def buffer_ranges(self) -> list[tuple[int, int]]:
        """Every buffer of the page (what a full read needs)."""
        return list(zip(self.page.offsets, self.page.sizes))

    def chunk_table(self, meta) -> "miniblock.ChunkTable":
        if self._table is None:
            self._table = self.impl.chunk_table(meta)
        return self._table

    # -- reading -------------------------------------------------------------
    def decode_all(self, buffers: list) -> pa.Array:
        """Decode the whole page from all its buffers (as from :meth:`buffer_ranges`)."""
        if self.kind == "constant_layout":
            return self.impl.array(self.page.num_rows)
        table = self.chunk_table(buffers[0])
        data = np.frombuffer(buffers[1], dtype=np.uint8)
        n = len(table.words)
        if n == 0:
            return self._to_arrow(miniblock.empty_block(
                None if blocks.is_variable(self.dtype) else blocks.fixed_bits(self.dtype),
                blocks.offset_bits(self.dtype)), None)
        return self._to_arrow(*self.impl.decode(table, 0, n, data))

    def read_rows(self, reader, rows: np.ndarray) -> pa.Array:
        """Rows (sorted, page-relative int64) of this page, reading only their chunks."""
        if self.kind == "constant_layout":
            return self.impl.array(len(rows))
        if len(rows) == 0:
            return pa.array([], type=self.dtype)
        if self._table is None:
            (meta,) = reader.read_ranges([(self.page.offsets[0], self.page.sizes[0])])
            self.chunk_table(meta)
        t = self._table
        chunk_of = np.searchsorted(t.item_starts, rows, side="right") - 1
        needed = np.unique(chunk_of)
        base = self.page.offsets[1]
        # consecutive chunks are adjacent on disk: one range per run of chunks
        breaks = np.flatnonzero(np.diff(needed) != 1) + 1
        runs = np.split(needed, breaks)
        ranges = [(base + int(t.offsets[r[0]]),
                   int(t.offsets[r[-1]] + t.nbytes[r[-1]] - t.offsets[r[0]])) for r in runs]
        views = reader.read_ranges(ranges)
        parts = []
        for r, view in zip(runs, views):
            data = np.frombuffer(view, dtype=np.uint8)
            block, validity = self.impl.decode(t, int(r[0]), int(r[-1]) + 1, data)
            arr = self._to_arrow(block, validity)
            lo = int(t.item_starts[r[0]])
            hi = int(t.item_starts[r[-1] + 1])
            sel = rows[(rows >= lo) & (rows < hi)] - lo
            if np.all(np.diff(sel) == 1):
                parts.append(arr.slice(int(sel[0]), len(sel)))
            else:
                parts.append(arr.take(pa.array(sel)))
        return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
