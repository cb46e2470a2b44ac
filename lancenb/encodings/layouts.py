"""Page decoders, one per 2.1/2.2 page layout, behind one declared interface.

Every layout (mini-block, full-zip, constant/all-null, blob, and the rowless pages of
empty structs) is read through a :class:`LayoutDecoder`: the same methods, each
returning Arrow arrays of the column's type (for a leaf of a nested field, of its
chain type; see :mod:`.structural.repdef`). What only some layouts can do is declared
as attributes of the interface, not probed: ``search_state`` (random-access state kept
in the search cache, or None) and ``has_blob_descriptions``.

The byte layouts themselves are in the structural modules
(:mod:`.structural.miniblock`, :mod:`.structural.fullzip`, :mod:`.structural.allnull`,
:mod:`.structural.blob`); this module turns what they decode (blocks, validity,
rep/def levels) into Arrow arrays.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np
import pyarrow as pa

from lancenb.encodings import blocks
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

__all__ = ["PageInfo", "LayoutDecoder", "SearchState", "ArrowValues", "layout_decoder",
           "dictionaries_kept",
           "decode_all_many", "rows_from_many", "init_from_many",
           "MiniBlockPage", "FullZipPage", "ConstantPage", "BlobPage", "EmptyStructPage"]


@dataclass
class PageInfo:
    """Where a page's buffers are and how many rows it holds.

    Examples
    --------
    >>> PageInfo(offsets=[0, 64], sizes=[64, 128], num_rows=100, first_row=0).num_rows
    100
    """

    offsets: list[int]
    sizes: list[int]
    num_rows: int
    first_row: int


class SearchState(Protocol):
    """Random-access state of a page (chunk tables, dictionaries, repetition indices)
    that the file reader loads ahead of takes and keeps in its search cache."""

    def attach_cache(self, cache, key: tuple) -> None:
        """Keep the state in ``cache`` under ``key`` (instead of on the object)."""

    def init_ranges(self, offsets) -> list[tuple[int, int]]:
        """File ranges ``(offset, size)`` the state is loaded from."""

    def init_from(self, bufs) -> None:
        """Load the state from the bytes of :meth:`init_ranges`."""


class LayoutDecoder(Protocol):
    """What every page layout's decoder provides; arrays are of the column's type."""

    kind: str  # the layout's name, as in the PageLayout message (for messages)
    search_state: SearchState | None  # random-access state, if the layout has any
    has_blob_descriptions: bool  # a top-level blob page: descriptions without values

    def buffer_ranges(self) -> list[tuple[int, int]]:
        """The file ranges a whole-page decode needs."""

    def decode_all(self, buffers: list) -> pa.Array:
        """The whole page from the bytes of :meth:`buffer_ranges`."""

    def scan(self, reader, group_bytes: int) -> list[pa.Array]:
        """The whole page, read through ``reader`` in pieces of about ``group_bytes``
        where the layout allows."""

    def read_rows(self, reader, rows: np.ndarray) -> pa.Array:
        """Rows (sorted, page-relative int64, duplicates allowed)."""

    def plan_rows(self, reader, rows: np.ndarray, memo: dict | None = None):
        """The first half of :meth:`read_rows` (a plan whose ``ranges()`` are the file
        bytes the rows need), or None where the layout reads its rows by itself;
        ``memo``, kept by the caller for one read, shares work between pages."""

    def rows_from(self, plan, data: np.ndarray, pos: np.ndarray) -> pa.Array:
        """The rows of a :meth:`plan_rows` plan from its ranges' bytes."""

    def blob_descriptions(self, reader, rows: np.ndarray | None) -> pa.Array:
        """``(position, size)`` of each row, without the values (blob pages only)."""


_tls = threading.local()


@contextmanager
def dictionaries_kept():
    """Within this block (on this thread), the dictionary pages of top-level string
    and binary columns decode to ``DictionaryArray``s of their items (int32 indices,
    one dictionary per page) instead of the values the indices name: a caller that
    evaluates a filter on the few distinct values, or takes few rows, skips building
    every row's string. Other pages, nested columns' leaves and columns whose type is
    a dictionary decode as usual."""
    prev = getattr(_tls, "keep", False)
    _tls.keep = True
    try:
        yield
    finally:
        _tls.keep = prev


def _kept() -> bool:
    return getattr(_tls, "keep", False)


@dataclass
class ArrowValues:
    """Turns decoded value blocks and validity into Arrow arrays of one column.

    ``dict_type`` is the column's dictionary type (values decode to ``dtype``, its
    value type, then become dictionary arrays); ``vexpand`` is set for a packed struct
    with variable-width children, whose rows decode as variable-width values.
    """

    dtype: pa.DataType
    dict_type: pa.DataType | None
    where: str
    vexpand: object = None
    vpacked: bool = False

    def array(self, block, validity, *, keep_dictionary: bool = False) -> pa.Array:
        """The Arrow array of a decoded block and its validity (None: all valid).
        ``keep_dictionary``: a string or binary column's dictionary page comes back as
        a ``DictionaryArray`` of its items (see :func:`dictionaries_kept`)."""
        if (keep_dictionary and self.dict_type is None and isinstance(
                block, blocks.DictionaryIndices) and blocks.is_variable(self.dtype)
                and block.items.type == self.dtype):
            try:
                return blocks.to_dictionary_arrow(block, validity)
            except CorruptFileError as e:
                raise CorruptFileError(f"{self.where}: {e}") from e
        if self.dict_type is not None:
            if isinstance(block, blocks.DictionaryIndices):
                return dictarray.to_arrow(self.dict_type, block, validity, self.where)
            return dictarray.from_values(self._plain(block, validity), self.dict_type)
        return self._plain(block, validity)

    def empty(self) -> pa.Array:
        """No rows, of the column's type."""
        return pa.array([], type=self.dict_type or self.dtype)

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
        packed = vpacked.unpack_rows(self.dtype, sub, self.where, self.vexpand)
        where = np.full(len(validity), -1, np.int64)
        where[valid] = np.arange(len(valid))
        return packed.take(pa.array(where, mask=~validity))

    def _plain(self, block, validity) -> pa.Array:
        if self.vpacked:
            if validity is not None and not validity.all():
                return self._vpacked_with_nulls(block, validity)
            return vpacked.unpack_rows(self.dtype, block, self.where, self.vexpand)
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


class _Page(LayoutDecoder):
    """What the layouts share: the page, the Arrow conversion, nested-row assembly
    (subclasses implement the :class:`LayoutDecoder` methods)."""

    kind: ClassVar[str]
    search_state = None
    has_blob_descriptions = False

    def __init__(self, page: PageInfo, values: ArrowValues, chain: pa.DataType | None):
        self.page = page
        self.values = values
        self.where = values.where
        self.chain = chain
        self._offsets32 = chain is not None and repdef.offsets32(chain)

    def plan_rows(self, reader, rows: np.ndarray, memo: dict | None = None):
        """None: this layout reads its rows by itself (mini-block splits the read:
        :meth:`MiniBlockPage.plan_rows`)."""
        return None

    def rows_from(self, plan, data: np.ndarray, pos: np.ndarray) -> pa.Array:
        raise NotSupportedError(f"{self.where}: {self.kind} pages read rows by themselves")

    def blob_descriptions(self, reader, rows: np.ndarray | None) -> pa.Array:
        raise NotSupportedError(f"{self.where}: {self.kind} page read as blob descriptions")

    def _check_rows(self, arr: pa.Array, n: int) -> pa.Array:
        if len(arr) != n:
            raise CorruptFileError(f"{self.where}: decoded {len(arr)} rows, expected {n}")
        return arr

    def _chain(self, block, levels) -> pa.Array:
        """The chain array of a leaf's values and levels (whole rows)."""
        un = repdef.unshred(levels, block.num_values, self.where, offsets32=self._offsets32)
        leaf = self.values.array(block, un.validity(0))
        return repdef.build_chain(self.chain, leaf, un, self.where)

    def _nested(self, reader, rows: np.ndarray | None) -> pa.Array:
        """Rows of a nested field's leaf page, every row for None (the layouts whose
        structural decoder has ``read_nested``)."""
        arr = self._chain(*self.impl.read_nested(reader, self.page.offsets, rows))
        return self._check_rows(arr, self.page.num_rows if rows is None else len(rows))


class EmptyStructPage(_Page):
    """A struct without children: pylance writes all-null pages; only the row count
    matters."""

    kind = "empty_struct"

    def _rows(self, n: int) -> pa.Array:
        return dictarray.empty_struct_chain(self.chain or self.values.dtype, n)

    def buffer_ranges(self):
        return []

    def decode_all(self, buffers):
        return self._rows(self.page.num_rows)

    def scan(self, reader, group_bytes):
        return [self._rows(self.page.num_rows)]

    def read_rows(self, reader, rows):
        return self._rows(len(rows))


class ConstantPage(_Page):
    """Constant (all-null or one repeated value) pages: :mod:`.structural.allnull`."""

    kind = "constant_layout"

    def __init__(self, page, values, chain, layout, file_size):
        cl = layout.constant_layout
        cdt = values.dict_type or values.dtype  # (all-null pages of dictionary columns)
        nested_ = chain
        if chain is None and (len(page.sizes) or cl.HasField("rep_compression")
                              or cl.HasField("def_compression")):
            # a flat column's 2.2 constant page with levels or a value buffer (e.g. a
            # constant string): decode it as a one-layer chain
            nested_ = cdt
        super().__init__(page, values, chain)
        self.chain = nested_
        self.impl = allnull.ConstantDecoder(cl, page.num_rows, page.sizes, cdt, self.where,
                                            nested_)

    def buffer_ranges(self):
        return []

    def decode_all(self, buffers):
        return self.impl.array(self.page.num_rows)

    def _nested(self, reader, rows):
        arr = self._check_rows(self.impl.chain_array(reader, self.page.offsets),
                               self.page.num_rows)
        return arr if rows is None else arr.take(pa.array(rows))

    def scan(self, reader, group_bytes):
        if self.chain is not None:
            return [self._nested(reader, None)]
        return [self.impl.array(self.page.num_rows)]

    def read_rows(self, reader, rows):
        if self.chain is not None:
            return self._nested(reader, np.asarray(rows, np.int64))
        return self.impl.array(len(rows))


class MiniBlockPage(_Page):
    """Mini-block pages (chunks of up to 4 KiB values): :mod:`.structural.miniblock`."""

    kind = "mini_block_layout"

    def __init__(self, page, values, chain, layout, file_size, bits):
        super().__init__(page, values, chain)
        self.impl = miniblock.MiniBlockDecoder(layout.mini_block_layout, page.num_rows,
                                               page.sizes, self.where, bits, values.dtype)
        self.search_state = self.impl

    def buffer_ranges(self):
        return self.impl.buffers_for_all(self.page.offsets, self.page.sizes)

    def _array(self, block, validity) -> pa.Array:
        # (a top-level column's rows: its dictionary kept when the reader asks)
        return self.values.array(block, validity,
                                 keep_dictionary=self.chain is None and _kept())

    def decode_all(self, buffers):
        return self._array(*self.impl.decode_all(buffers))

    def scan(self, reader, group_bytes):
        if self.chain is not None:
            return [self._nested(reader, None)]
        return [self._array(b, v) for b, v in
                self.impl.scan(reader, self.page.offsets, group_bytes)]

    def read_rows(self, reader, rows):
        if self.chain is not None:
            return self._nested(reader, np.asarray(rows, np.int64))
        if len(rows) == 0:
            return self.values.empty()
        block, validity, sel = self.impl.read_rows(reader, self.page.offsets, rows)
        arr = self._array(block, validity)
        return arr if sel is None else arr.take(pa.array(sel))

    def plan_rows(self, reader, rows, memo=None):
        """:meth:`read_rows` in two halves, for a caller that reads the chunks of many
        pages in one request: the plan (its file ranges: ``plan.ranges()``), or None
        when this page reads rows some other way (nested, no rows). ``memo``: see
        :meth:`miniblock.MiniBlockDecoder.plan_rows`."""
        if self.chain is not None or len(rows) == 0:
            return None
        return self.impl.plan_rows(reader, self.page.offsets, rows, memo)

    def rows_from(self, plan, data, pos) -> pa.Array:
        """The rows of a :meth:`plan_rows` plan from its chunks' bytes (chunk ``i``
        at ``data[pos[i]]``)."""
        block, validity, sel = self.impl.rows_from(plan, data, pos)
        arr = self._array(block, validity)
        return arr if sel is None else arr.take(pa.array(sel))


class FullZipPage(_Page):
    """Full-zip pages (values zipped with their levels, row by row):
    :mod:`.structural.fullzip`."""

    kind = "full_zip_layout"

    def __init__(self, page, values, chain, layout, file_size, bits):
        super().__init__(page, values, chain)
        self.impl = fullzip.FullZipDecoder(layout.full_zip_layout, page.num_rows, page.sizes,
                                           self.where, values.dtype, bits)

    def buffer_ranges(self):
        return self.impl.buffers_for_all(self.page.offsets, self.page.sizes)

    def decode_all(self, buffers):
        return self.values.array(*self.impl.decode_all(buffers))

    def _nested(self, reader, rows):
        block, levels, uniq = self.impl.read_nested(reader, self.page.offsets, rows)
        if rows is not None and len(uniq) != len(rows):
            block, levels = self._repeat_rows(block, levels, np.searchsorted(uniq, rows))
        arr = self._chain(block, levels)
        return self._check_rows(arr, self.page.num_rows if rows is None else len(rows))

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

    def scan(self, reader, group_bytes):
        if self.chain is not None:
            return [self._nested(reader, None)]
        return [self.decode_all(reader.read_ranges(self.buffer_ranges()))]

    def read_rows(self, reader, rows):
        if self.chain is not None:
            return self._nested(reader, np.asarray(rows, np.int64))
        if len(rows) == 0:
            return self.values.empty()
        if len(rows) == 1 or np.all(rows[1:] != rows[:-1]):
            return self.values.array(*self.impl.read_rows(reader, self.page.offsets, rows))
        uniq, inverse = np.unique(rows, return_inverse=True)
        arr = self.values.array(*self.impl.read_rows(reader, self.page.offsets, uniq))
        return arr if len(uniq) == len(rows) else arr.take(pa.array(inverse))


class BlobPage(_Page):
    """Blob pages (values out of line, descriptors in an inner mini-block page):
    :mod:`.structural.blob`."""

    kind = "blob_layout"

    def __init__(self, page, values, chain, layout, file_size):
        super().__init__(page, values, chain)
        self.impl = blob.BlobDecoder(layout.blob_layout, page.num_rows, page.sizes,
                                     values.dtype, self.where,
                                     (1 << 62) if file_size is None else file_size,
                                     nested=chain is not None)
        self.search_state = self.impl.inner
        self.has_blob_descriptions = chain is None

    def buffer_ranges(self):
        raise NotSupportedError(f"{self.where}: blob pages are read with scan or read_rows")

    def decode_all(self, buffers):
        raise NotSupportedError(f"{self.where}: blob pages are read with scan or read_rows")

    def scan(self, reader, group_bytes):
        if self.chain is not None:
            return [self._nested(reader, None)]
        return [self.impl.scan(reader, self.page.offsets)]

    def read_rows(self, reader, rows):
        if self.chain is not None:
            return self._nested(reader, np.asarray(rows, np.int64))
        if len(rows) == 0:
            return self.values.empty()
        return self.impl.read_rows(reader, self.page.offsets, rows)

    def blob_descriptions(self, reader, rows):
        if not self.has_blob_descriptions:
            return super().blob_descriptions(reader, rows)
        return self.impl.descriptions(reader, self.page.offsets, rows)


def decode_all_many(decs: list, ranges: list, data: np.ndarray,
                    pos: np.ndarray) -> list[pa.Array]:
    """``decode_all`` of many pages (flat columns) whose :meth:`buffer_ranges`
    (``ranges[j]`` of page ``j``), in order, were read into ``data`` (range ``k``
    at ``pos[k]``). Mini-block pages of
    the same kind decode together, one value decode for all their chunks
    (:func:`miniblock.decode_pages`); the rest, and any group that does not check
    (then decoded again page by page for the precise error), one by one."""
    view = memoryview(data)
    out: list = [None] * len(decs)
    groups: dict = {}
    alone = []
    k = 0
    for j, d in enumerate(decs):
        key = d.impl.batch_key() if isinstance(d, MiniBlockPage) and d.chain is None else None
        if key is None:
            alone.append((j, k))
        else:
            groups.setdefault(key, []).append((j, k))
        k += len(ranges[j])
    for members in groups.values():
        impls = [decs[j].impl for j, _ in members]
        ks = np.array([k for _, k in members], np.int64)
        sizes = np.array([(ranges[j][0][1], ranges[j][1][1]) for j, _ in members], np.int64)
        meta = np.stack([pos[ks], sizes[:, 0]], axis=1)
        chunks = np.stack([pos[ks + 1], sizes[:, 1]], axis=1)
        blocks_ = miniblock.decode_pages(impls, data, meta, chunks)
        if blocks_ is None:
            alone.extend(members)
            continue
        for (j, _), b in zip(members, blocks_):
            out[j] = decs[j].values.array(b, None)
    for j, k in alone:
        out[j] = decs[j].decode_all([view[p:p + z] for p, (_, z) in
                                     zip(pos[k:k + len(ranges[j])].tolist(), ranges[j])])
    return out


def init_from_many(decs: list, ranges: list, data: np.ndarray, pos: np.ndarray) -> None:
    """``init_from`` of many pages whose search-state ranges (``ranges[j]``, from
    ``init_ranges``), in order, were read into ``data`` (range ``k`` at ``pos[k]``):
    the chunk tables of mini-block pages of one kind parsed together
    (:func:`miniblock.load_tables`), the rest page by page."""
    view = memoryview(data)
    groups: dict = {}
    alone = []
    k = 0
    for j, d in enumerate(decs):
        key = d.impl.batch_key() if isinstance(d, MiniBlockPage) and len(ranges[j]) == 1 \
            else None
        (alone if key is None else groups.setdefault(key, [])).append((j, k))
        k += len(ranges[j])
    for members in groups.values():
        meta = np.array([(pos[k], ranges[j][0][1]) for j, k in members], np.int64)
        if not miniblock.load_tables([decs[j].impl for j, _ in members], data, meta):
            alone.extend(members)
    for j, k in alone:
        if ranges[j]:
            decs[j].search_state.init_from([view[p:p + z] for p, (_, z) in
                                            zip(pos[k:k + len(ranges[j])].tolist(),
                                                ranges[j])])


def rows_from_many(decs: list, plans: list, data: np.ndarray, poss: list) -> list[pa.Array]:
    """``rows_from`` of many pages' :meth:`plan_rows` plans, their chunks read into
    ``data`` (plan ``i``'s ranges at ``poss[i]``): mini-block pages of one kind with
    one value decode and one gather for all (:func:`miniblock.take_pages`). None for
    the pages of a group that does not check: the caller reads those again page by
    page (``read_rows``), which names the fault as a one-page read does."""
    out: list = [None] * len(decs)
    groups: dict = {}
    for j, d in enumerate(decs):
        key = d.impl.batch_key() if isinstance(d, MiniBlockPage) else None
        groups.setdefault(key, []).append(j)
    for key, members in groups.items():
        got = None
        if key is not None:
            got = miniblock.take_pages([decs[j].impl for j in members],
                                       [plans[j] for j in members], data,
                                       [poss[j] for j in members])
        if got is None:
            if key is None:
                for j in members:
                    try:
                        out[j] = decs[j].rows_from(plans[j], data, poss[j])
                    except CorruptFileError:
                        pass  # (read again alone, for the message a one-page read gives)
            continue
        for j, b in zip(members, got):
            out[j] = decs[j].values.array(b, None)
    return out


# layout name -> (decoder class, whether it needs the value width)
_VALUE_LAYOUTS = {"mini_block_layout": MiniBlockPage, "full_zip_layout": FullZipPage}
_OTHER_LAYOUTS = {"constant_layout": ConstantPage, "blob_layout": BlobPage}


def layout_decoder(layout, page: PageInfo, dtype: pa.DataType, where: str,
                   chain: pa.DataType | None = None,
                   file_size: int | None = None) -> LayoutDecoder:
    """The decoder of one page from its ``PageLayout`` message.

    ``dtype`` is the column's leaf type (a dictionary type decodes its values, then
    becomes dictionary arrays); ``chain`` the type of a nested field's leaf arrays.
    Raises ``CorruptFileError`` for an empty layout and ``NotSupportedError`` for a
    layout or type lancenb does not read.
    """
    kind = layout.WhichOneof("layout")
    dict_type = dtype if pa.types.is_dictionary(dtype) else None
    if dict_type is not None:
        dtype = dtype.value_type
    if kind is None:
        raise CorruptFileError(f"{where}: page layout is empty")
    values = ArrowValues(dtype, dict_type, where)
    if dictarray.is_empty_struct(dtype):
        # pylance writes these as simple all-null pages: only the row count counts
        return EmptyStructPage(page, values, chain)
    if kind in _OTHER_LAYOUTS:
        return _OTHER_LAYOUTS[kind](page, values, chain, layout, file_size)
    if kind not in _VALUE_LAYOUTS:
        raise NotSupportedError(f"{where}: {kind} pages are not supported yet")
    # a packed struct with variable-width children decodes as variable-width rows
    if kind == "full_zip_layout" and vpacked.is_variable_struct(dtype):
        values.vpacked = True
        values.vexpand = vpacked.check(layout.full_zip_layout.value_compression, dtype, where)
    variable = values.vpacked or blocks.is_variable(dtype)
    bits = None if variable else blocks.fixed_bits(dtype)
    if bits is None and not variable:
        raise NotSupportedError(f"{where}: reading {dtype} columns is not supported yet")
    return _VALUE_LAYOUTS[kind](page, values, chain, layout, file_size, bits)
