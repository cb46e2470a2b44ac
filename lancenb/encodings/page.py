"""One page of one column: picking its layout when writing, decoding it when reading.

``encode_page`` turns an Arrow array into page buffers and a ``PageLayout``.
``PageDecoder`` is built from a page's description and buffer locations; it reads
what it needs through a :class:`lancenb.io.RangeReader` and returns Arrow arrays for
the whole page (:meth:`decode_all`) or for a sorted set of rows (:meth:`read_rows`),
touching only the chunks (mini-block) or values (full-zip) those rows live in.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb.encodings import pb
from lancenb.encodings.config import EncodingConfig
from lancenb.encodings.layouts import (
    LayoutDecoder,
    PageInfo,
    decode_all_many,
    dictionaries_kept,
    init_from_many,
    layout_decoder,
    rows_from_many,
)
from lancenb.encodings.physical import packed_struct_variable as vpacked
from lancenb.encodings.strategy import encode_page as encode
from lancenb.encodings.structural import dictarray, fullzip
from lancenb.errors import NotSupportedError

__all__ = ["encode_page", "PageDecoder", "PageInfo", "parse_layout",
           "describe_layout", "dictionaries_kept"]


def encode_page(arr: pa.Array, *, version_minor: int, config=None, levels=None):
    """Encode a flat Arrow array as one page (see :mod:`lancenb.encodings.strategy`);
    with ``levels``, ``arr`` is a nested column's leaf value slots."""
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


class PageDecoder:
    """Decodes one 2.1/2.2 page into Arrow arrays.

    A thin wrapper: the page's ``PageLayout`` picks one :class:`.layouts.LayoutDecoder`
    (mini-block, full-zip, constant, blob, empty struct) at construction, and every
    method delegates to it.

    Parameters
    ----------
    encoding : bytes
        The page's Any-wrapped ``PageLayout`` (from the column metadata).
    page : PageInfo
        Where the page's buffers are and its row count.
    dtype : pyarrow.DataType
        The column's leaf type.
    where : str
        Names the page in error messages (file, column, page).
    chain : pyarrow.DataType, optional
        For a leaf of a nested field, the type its arrays take (see
        :mod:`.structural.repdef`).
    file_size : int, optional
        Bounds the positions blob descriptors may point at.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from lancenb.encodings import pb
    >>> layout = pb.e21.PageLayout(constant_layout=pb.e21.ConstantLayout(
    ...     layers=[pb.e21.RepDefLayer.REPDEF_NULLABLE_ITEM]))
    >>> d = PageDecoder(pb.pack_any(layout), PageInfo([], [], 3, 0), pa.int32(), "page 0")
    >>> d.read_rows(None, [0, 2]).to_pylist()
    [None, None]
    """

    def __init__(self, encoding: bytes, page: PageInfo, dtype: pa.DataType, where: str,
                 chain: pa.DataType | None = None, file_size: int | None = None):
        self.page = page
        self.where = where
        self.layout = parse_layout(encoding, where)
        self.impl: LayoutDecoder = layout_decoder(self.layout, page, dtype, where, chain,
                                                  file_size)
        self.kind = self.impl.kind

    @property
    def chain(self) -> pa.DataType | None:
        """The nested chain type the page decodes to (None for a flat column)."""
        return self.impl.chain

    # -- the search cache ---------------------------------------------------------
    def attach_cache(self, cache, key: tuple) -> None:
        """Keep this page's random-access state in ``cache`` under ``key``."""
        if self.impl.search_state is not None:
            self.impl.search_state.attach_cache(cache, key)

    def init_ranges(self) -> list[tuple[int, int]]:
        """File ranges that initialisation for random access reads for this page."""
        state = self.impl.search_state
        return [] if state is None else state.init_ranges(self.page.offsets)

    def init_from(self, bufs) -> None:
        """Load the random-access state from the bytes of :meth:`init_ranges`."""
        if self.impl.search_state is not None:
            self.impl.search_state.init_from(bufs)

    def describe(self) -> str:
        """The page's layout and value encoding, e.g. ``mini_block:variable(flat(32))``."""
        return describe_layout(self.layout)

    # -- reading -------------------------------------------------------------------
    def buffer_ranges(self) -> list[tuple[int, int]]:
        """The buffers a full read of the page needs."""
        return self.impl.buffer_ranges()

    def decode_all(self, buffers: list) -> pa.Array:
        """Decode the whole page from the buffers named by :meth:`buffer_ranges`."""
        return self.impl.decode_all(buffers)

    def scan(self, reader, group_bytes: int = 1 << 20) -> list[pa.Array]:
        """The whole page as Arrow arrays, reading and decoding it in pieces of about
        ``group_bytes`` where the layout allows (mini-block), to bound peak memory."""
        return self.impl.scan(reader, group_bytes)

    @staticmethod
    def decode_all_many(decoders: list, ranges: list, data: np.ndarray,
                        pos: np.ndarray) -> list[pa.Array]:
        """:meth:`decode_all` of many pages at once: ``ranges[j]`` is page ``j``'s
        :meth:`buffer_ranges`, all read in order into ``data`` (range ``k`` at
        ``pos[k]``). Pages of narrow flat columns of one kind decode in a single
        value decode (:func:`lancenb.encodings.layouts.decode_all_many`)."""
        return decode_all_many([d.impl for d in decoders], ranges, data, pos)

    @staticmethod
    def init_from_many(decoders: list, ranges: list, data: np.ndarray,
                       pos: np.ndarray) -> None:
        """:meth:`init_from` of many pages: ``ranges[j]`` is page ``j``'s
        :meth:`init_ranges`, all read in order into ``data`` (range ``k`` at
        ``pos[k]``); chunk tables of narrow flat columns parsed together
        (:func:`lancenb.encodings.layouts.init_from_many`)."""
        init_from_many([d.impl for d in decoders], ranges, data, pos)

    @staticmethod
    def rows_from_many(decoders: list, plans: list, data: np.ndarray,
                       poss: list) -> list[pa.Array]:
        """:meth:`rows_from` of many pages' plans (plan ``i``'s ranges read into
        ``data`` at ``poss[i]``), narrow flat columns of one kind decoded and gathered
        together (:func:`lancenb.encodings.layouts.rows_from_many`); None for pages
        to read again one by one (:meth:`read_rows`), which names what is wrong."""
        return rows_from_many([d.impl for d in decoders], plans, data, poss)

    def plan_rows(self, reader, rows: np.ndarray, memo: dict | None = None):
        """The first half of :meth:`read_rows` where the layout splits it (mini-block):
        a plan whose ``ranges()`` are the file bytes the rows need, finished by
        :meth:`rows_from`; None where the page reads its rows by itself. ``memo``, a
        dict kept for one read of many pages, shares their row-to-chunk lookups."""
        return self.impl.plan_rows(reader, rows, memo)

    def rows_from(self, plan, data: np.ndarray, pos: np.ndarray) -> pa.Array:
        """The rows of a :meth:`plan_rows` plan, its ranges read into ``data`` (range
        ``i`` at ``pos[i]``)."""
        return self.impl.rows_from(plan, data, pos)

    def blob_descriptions(self, reader, rows: np.ndarray | None = None) -> pa.Array:
        """A top-level blob page's ``(position, size)`` descriptions, every row or
        ``rows`` (sorted, page-relative), without reading the blob values."""
        return self.impl.blob_descriptions(reader, rows)

    def read_rows(self, reader, rows: np.ndarray) -> pa.Array:
        """Rows (sorted, page-relative int64, duplicates allowed) of this page."""
        return self.impl.read_rows(reader, rows)
