"""One page of one column: picking its layout when writing, decoding it when reading.

``encode_page`` turns an Arrow array into page buffers and a ``PageLayout``.
``PageDecoder`` is built from a page's description and buffer locations; it reads
what it needs through a :class:`lancenb.io.RangeReader` and returns Arrow arrays for
the whole page (:meth:`decode_all`) or for a sorted set of rows (:meth:`read_rows`),
touching only the chunks (mini-block) or values (full-zip) those rows live in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancenb.encodings import blocks, pb
from lancenb.encodings.physical import packed_struct_variable as vpacked
from lancenb.encodings.structural import (
    allnull,
    blob,
    dictarray,
    fullzip,
    miniblock,
    nested,
    repdef,
)
from lancenb.errors import CorruptFileError, NotSupportedError
from lancenb.kernels import slices

__all__ = ["encode_page", "PageDecoder", "PageInfo", "parse_layout",
           "describe_layout"]

def encode_page(arr: pa.Array, *, version_minor: int, config=None, levels=None):
    """Encode a flat Arrow array as one page (see :mod:`lancenb.encodings.strategy`);
    with ``levels``, ``arr`` is a nested column's leaf value slots."""
    from lancenb.encodings.config import EncodingConfig
    from lancenb.encodings.strategy import encode_page as encode

    if dictarray.handles(arr.type):  # fixed layouts, as pylance writes them
        return dictarray.encode_page(arr, config or EncodingConfig(),
                                     version_minor=version_minor, levels=levels)
    if levels is None and vpacked.is_variable_struct(arr.type):
        # a packed struct with variable-width children (2.2): one full-zip value a row
        if version_minor < 2:
            raise NotSupportedError(f"packed structs with variable-width children ({arr.type}) "
                                    f"need file version 2.2")
        return fullzip.encode(vpacked.pack_rows(arr), None,
                              value_compression=vpacked.description(arr.type))
    return encode(arr, config or EncodingConfig(), version_minor=version_minor, levels=levels)


def parse_layout(encoding: bytes, where: str):
    """The ``PageLayout`` inside a page's Any-wrapped encoding (2.1/2.2 pages)."""
    name, value = pb.unpack_any(encoding, where)
    if name != pb.e21.PageLayout.DESCRIPTOR.full_name:
        raise NotSupportedError(f"{where}: page encoding {name!r} is not supported "
                                f"(expected lance.encodings21.PageLayout)")
    return pb.parse(pb.e21.PageLayout, value, where)


def describe_layout(layout) -> str:
    """A compact description, e.g. ``mini_block:variable(flat(32)) def=flat(16)``."""
    kind = layout.WhichOneof("layout")
    if kind is None:
        return "empty"
    lay = getattr(layout, kind)
    name = kind.replace("_layout", "")
    if kind in ("mini_block_layout", "full_zip_layout"):
        name += ":" + pb.describe(lay.value_compression)
    if kind == "mini_block_layout":
        if lay.HasField("dictionary"):
            name += " dict=" + pb.describe(lay.dictionary)
        if lay.HasField("rep_compression"):
            name += " rep=" + pb.describe(lay.rep_compression)
        if lay.HasField("def_compression"):
            name += " def=" + pb.describe(lay.def_compression)
    return name


@dataclass
class PageInfo:
    """Where a page's buffers are and how many rows it holds."""

    offsets: list[int]
    sizes: list[int]
    num_rows: int
    first_row: int


class PageDecoder:
    """Decodes one 2.1/2.2 page into Arrow arrays."""

    vpacked = False  # a packed struct with variable-width children (set in __init__)

    def __init__(self, encoding: bytes, page: PageInfo, dtype: pa.DataType, where: str,
                 chain: pa.DataType | None = None, file_size: int | None = None):
        """``dtype`` is the column's leaf type; ``chain`` the type the column's arrays
        take for a leaf of a nested field (see :mod:`.structural.repdef`)."""
        self.page = page
        self.where = where
        self.chain = chain
        self._offsets32 = chain is not None and repdef.offsets32(chain)
        layout = parse_layout(encoding, where)
        kind = layout.WhichOneof("layout")
        self.kind = kind
        self.layout = layout
        # a dictionary column decodes its values' type, then becomes dictionary arrays
        self.dict_type = dtype if pa.types.is_dictionary(dtype) else None
        self.dtype = dtype = dtype.value_type if self.dict_type is not None else dtype
        if dictarray.is_empty_struct(dtype):
            # pylance writes these as simple all-null pages: only the row count counts
            if kind is None:
                raise CorruptFileError(f"{where}: page layout is empty")
            self.kind = "empty_struct"
            self.impl = None
            return
        # a packed struct with variable-width children decodes as variable-width rows
        self.vpacked = kind == "full_zip_layout" and vpacked.is_variable_struct(dtype)
        if self.vpacked:
            self._vexpand = vpacked.check(layout.full_zip_layout.value_compression, dtype,
                                          where)
        variable = self.vpacked or blocks.is_variable(dtype)
        bits = None if variable else blocks.fixed_bits(dtype)
        if kind in ("mini_block_layout", "full_zip_layout") and bits is None and not variable:
            raise NotSupportedError(f"{where}: reading {dtype} columns is not supported yet")
        if kind == "mini_block_layout":
            self.impl = miniblock.MiniBlockDecoder(layout.mini_block_layout, page.num_rows,
                                                   page.sizes, where, bits, dtype)
        elif kind == "full_zip_layout":
            self.impl = fullzip.FullZipDecoder(layout.full_zip_layout, page.num_rows,
                                               page.sizes, where, dtype, bits)
        elif kind == "constant_layout":
            cl = layout.constant_layout
            cdt = self.dict_type or dtype  # (all-null pages of dictionary columns)
            if chain is None and (len(page.sizes) or cl.HasField("rep_compression")
                                  or cl.HasField("def_compression")):
                # a flat column's 2.2 constant page with levels or a value buffer (e.g.
                # a constant string): decode it as a one-layer chain
                self.chain = chain = cdt
            self.impl = allnull.ConstantDecoder(cl, page.num_rows, page.sizes, cdt, where,
                                                chain)
        elif kind == "blob_layout":
            self.impl = blob.BlobDecoder(layout.blob_layout, page.num_rows, page.sizes, dtype,
                                         where, (1 << 62) if file_size is None else file_size,
                                         nested=chain is not None)
        elif kind is None:
            raise CorruptFileError(f"{where}: page layout is empty")
        else:
            raise NotSupportedError(f"{where}: {kind} pages are not supported yet")

    # -- the search cache ---------------------------------------------------------
    def _cached_impl(self):
        """The part of this page that keeps random-access state (mini-block chunk
        tables, dictionaries, repetition indices), if any."""
        if self.kind == "mini_block_layout":
            return self.impl
        if self.kind == "blob_layout":
            return self.impl.inner
        return None

    def attach_cache(self, cache, key: tuple) -> None:
        impl = self._cached_impl()
        if impl is not None:
            impl.attach_cache(cache, key)

    def init_ranges(self) -> list[tuple[int, int]]:
        """File ranges that initialisation for random access reads for this page."""
        impl = self._cached_impl()
        return [] if impl is None else impl.init_ranges(self.page.offsets)

    def init_from(self, bufs) -> None:
        impl = self._cached_impl()
        if impl is not None:
            impl.init_from(bufs)

    def describe(self) -> str:
        """The page's layout and value encoding, e.g. ``mini_block:variable(flat(32))``."""
        return describe_layout(self.layout)

    def _to_arrow(self, block, validity) -> pa.Array:
        if self.dict_type is not None:
            if isinstance(block, blocks.DictionaryIndices):
                return dictarray.to_arrow(self.dict_type, block, validity, self.where)
            return dictarray.from_values(self._plain_arrow(block, validity), self.dict_type)
        return self._plain_arrow(block, validity)

    def _vpacked_with_nulls(self, block, validity: np.ndarray) -> pa.Array:
        """A variable packed struct page with null rows (2.2 blob v2 descriptors: a
        null blob is a null row): the valid rows are unpacked, the null ones stay null."""
        valid = np.flatnonzero(validity)
        offs = np.asarray(block.offsets, np.int64)
        starts, sizes = offs[valid], offs[valid + 1] - offs[valid]
        sub_offs = np.zeros(len(valid) + 1, np.int64)
        np.cumsum(sizes, out=sub_offs[1:])
        data = np.empty(int(sub_offs[-1]), np.uint8)
        if slices.concat_slices(block.data, starts, sizes, data) != slices.OK:
            raise CorruptFileError(f"{self.where}: packed struct rows outside the page")
        sub = blocks.Variable(sub_offs, data, len(valid), 64)
        packed = vpacked.unpack_rows(self.dtype, sub, self.where, self._vexpand)
        where = np.full(len(validity), -1, np.int64)
        where[valid] = np.arange(len(valid))
        return packed.take(pa.array(where, mask=~validity))

    def _plain_arrow(self, block, validity) -> pa.Array:
        if self.vpacked:
            if validity is not None and not validity.all():
                return self._vpacked_with_nulls(block, validity)
            return vpacked.unpack_rows(self.dtype, block, self.where, self._vexpand)
        if isinstance(block, blocks.DictionaryIndices):
            try:
                return blocks.to_arrow(self.dtype, block, validity)
            except CorruptFileError as e:
                raise CorruptFileError(f"{self.where}: {e}") from e
        if isinstance(block, blocks.FixedWidth) and blocks.is_variable(self.dtype):
            raise CorruptFileError(f"{self.where}: fixed-width values for a {self.dtype} column")
        if isinstance(block, blocks.Variable) and not blocks.is_variable(self.dtype):
            raise CorruptFileError(f"{self.where}: variable-width values for a {self.dtype} "
                                   f"column")
        return blocks.to_arrow(self.dtype, block, validity)

    def buffer_ranges(self) -> list[tuple[int, int]]:
        """The buffers a full read of the page needs."""
        if self.kind in ("constant_layout", "empty_struct"):
            return []
        return self.impl.buffers_for_all(self.page.offsets, self.page.sizes)

    def decode_all(self, buffers: list) -> pa.Array:
        """Decode the whole page from the buffers named by :meth:`buffer_ranges`."""
        if self.kind == "empty_struct":
            return self._empty_structs(self.page.num_rows)
        if self.kind == "constant_layout":
            return self.impl.array(self.page.num_rows)
        return self._to_arrow(*self.impl.decode_all(buffers))

    def _empty_structs(self, n: int) -> pa.Array:
        return dictarray.empty_struct_chain(self.chain or self.dtype, n)

    # -- nested columns ----------------------------------------------------------
    def _chain(self, block, levels) -> pa.Array:
        """The chain array of a leaf's values and levels (whole rows)."""
        un = repdef.unshred(levels, block.num_values, self.where, offsets32=self._offsets32)
        leaf = self._to_arrow(block, un.validity(0))
        return repdef.build_chain(self.chain, leaf, un, self.where)

    def _nested_rows(self, reader, rows: np.ndarray | None) -> pa.Array:
        if self.kind == "constant_layout":
            arr = self.impl.chain_array(reader, self.page.offsets)
            if len(arr) != self.page.num_rows:
                raise CorruptFileError(f"{self.where}: decoded {len(arr)} rows, expected "
                                       f"{self.page.num_rows}")
            return arr if rows is None else arr.take(pa.array(rows))
        elif self.kind == "full_zip_layout":
            block, levels, uniq = self.impl.read_nested(reader, self.page.offsets, rows)
            if rows is not None and len(uniq) != len(rows):
                block, levels = self._repeat_rows(block, levels, np.searchsorted(uniq, rows))
            arr = self._chain(block, levels)
        else:
            arr = self._chain(*self.impl.read_nested(reader, self.page.offsets, rows))
        n = self.page.num_rows if rows is None else len(rows)
        if len(arr) != n:
            raise CorruptFileError(f"{self.where}: decoded {len(arr)} rows, expected {n}")
        return arr

    def _repeat_rows(self, block, levels, which: np.ndarray):
        """Rows ``which`` (indices, repeats allowed) of decoded whole rows."""
        if levels.rep is None:
            starts = np.arange(levels.num_levels, dtype=np.int64)
        else:
            starts = np.flatnonzero(levels.rep[:levels.num_levels] == levels.info.max_rep)
        ends = np.append(starts[1:], levels.num_levels)
        if len(which) and int(which.max()) >= len(starts):
            raise CorruptFileError(f"{self.where}: fewer rows decoded than asked for")
        return nested.gather_rows(block, levels, starts[which], ends[which], self.where)

    def scan(self, reader, group_bytes: int = 1 << 20) -> list[pa.Array]:
        """The whole page as Arrow arrays, reading and decoding it in pieces of about
        ``group_bytes`` where the layout allows (mini-block), to bound peak memory."""
        if self.kind == "empty_struct":
            return [self._empty_structs(self.page.num_rows)]
        if self.chain is not None:
            return [self._nested_rows(reader, None)]
        if self.kind == "blob_layout":
            return [self.impl.scan(reader, self.page.offsets)]
        if self.kind == "mini_block_layout":
            return [self._to_arrow(b, v) for b, v in
                    self.impl.scan(reader, self.page.offsets, group_bytes)]
        return [self.decode_all(reader.read_ranges(self.buffer_ranges()))]

    def blob_descriptions(self, reader, rows: np.ndarray | None = None) -> pa.Array:
        """A top-level blob page's ``(position, size)`` descriptions, every row or
        ``rows`` (sorted, page-relative), without reading the blob values."""
        if self.kind != "blob_layout" or self.chain is not None:
            raise NotSupportedError(f"{self.where}: {self.kind} page read as blob "
                                    f"descriptions")
        return self.impl.descriptions(reader, self.page.offsets, rows)

    def read_rows(self, reader, rows: np.ndarray) -> pa.Array:
        """Rows (sorted, page-relative int64, duplicates allowed) of this page."""
        if self.kind == "empty_struct":
            return self._empty_structs(len(rows))
        if self.chain is not None:
            rows = np.asarray(rows, np.int64)
            return self._nested_rows(reader, rows)
        if self.kind == "constant_layout":
            return self.impl.array(len(rows))
        if len(rows) == 0:
            return pa.array([], type=self.dict_type or self.dtype)
        if self.kind == "blob_layout":
            return self.impl.read_rows(reader, self.page.offsets, rows)
        if self.kind == "full_zip_layout":
            if len(rows) == 1 or np.all(rows[1:] != rows[:-1]):
                return self._to_arrow(*self.impl.read_rows(reader, self.page.offsets, rows))
            uniq, inverse = np.unique(rows, return_inverse=True)
            arr = self._to_arrow(*self.impl.read_rows(reader, self.page.offsets, uniq))
            return arr if len(uniq) == len(rows) else arr.take(pa.array(inverse))
        block, validity, sel = self.impl.read_rows(reader, self.page.offsets, rows)
        arr = self._to_arrow(block, validity)
        return arr if sel is None else arr.take(pa.array(sel))
