"""Reads of many plain columns at once (wide 2.1/2.2 files, issue 23).

A page is *plain* when it is a mini-block page of a flat fixed-width primitive column
(integers, floats, temporal types) whose values are of one batchable kind (flat or
inline-bitpacked, all valid, no dictionary, no levels: see
:meth:`~lancenb.encodings.structural.miniblock.MiniBlockDecoder.batch_key`). Wide
tables are mostly such columns, and their pages mostly share one encoding: pylance
writes the same ``PageLayout`` bytes for every float64 column of a table. So the
layout is parsed and checked once per distinct ``(encoding bytes, type)``
(:func:`template`), and a page is then just six numbers (:class:`PlainPage`): no
decoder object is built per page or per column.

:func:`scan` decodes the pages of many columns with one chunk-table parse and one
value decode per kind (:func:`miniblock.decode_group`) and cuts the columns' Arrow
arrays out of one array per type; :func:`take` reads the pages the rows fall in
whole (small pages only) and gathers the rows of every column of one kind in one
call (:func:`miniblock.gather_group`: FastLanes lanes read value by value, flat
values picked, no page unpacked). Whatever does not check returns None for the
fields concerned: the caller reads those through their page decoders, which raise
the precise error a one-column read raises.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from lancenb._proto import file2_pb2
from lancenb.encodings import blocks
from lancenb.encodings.page import parse_layout
from lancenb.encodings.structural import miniblock
from lancenb.errors import LanceError
from lancenb.io.pools import module_lock

__all__ = ["PlainPage", "Template", "template", "is_plain_type", "column_pages", "scan",
           "take", "TAKE_WHOLE_PAGE_BYTES"]

# a take reads and decodes a plain page whole when its two buffers hold at most this
# many bytes (the chunk table and a chunk or two would be most of it anyway); larger
# pages are read chunk by chunk through their decoders' search state
TAKE_WHOLE_PAGE_BYTES = 64 << 10

_TEMPLATES: dict = {}
_TEMPLATES_SIZE = 4096
_TEMPLATES_LOCK = module_lock(globals(), "_TEMPLATES_LOCK")
_MISS = object()


class Template(NamedTuple):
    """A plain page layout, parsed and checked once: ``dec`` is its mini-block decoder
    (built from the layout alone; it names no page, so it never raises to a reader:
    a group that does not check is read again through the pages' own decoders),
    ``key`` its batch key, ``num_items`` the rows every page of it holds."""

    dec: miniblock.MiniBlockDecoder
    key: tuple
    num_items: int


class PlainPage(NamedTuple):
    """One plain page: its template, buffer 0 (chunk metadata) and buffer 1 (chunks)
    as ``(offset, size)``, and its first row in the column."""

    tmpl: Template
    meta_off: int
    meta_size: int
    chunk_off: int
    chunk_size: int
    first_row: int


# Arrow type ids of the types plain pages hold (integers, floats, temporal types)
_PLAIN_IDS = frozenset(t.id for t in (
    pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(),
    pa.uint64(), pa.float16(), pa.float32(), pa.float64(), pa.date32(), pa.date64(),
    pa.timestamp("s"), pa.time32("s"), pa.time64("us"), pa.duration("s")))


def is_plain_type(dt: pa.DataType) -> bool:
    """Whether a flat column of type ``dt`` can have plain pages (integers, floats,
    dates, times, timestamps, durations)."""
    return dt.id in _PLAIN_IDS


def template(encoding: bytes, dtype: pa.DataType) -> Template | None:
    """The :class:`Template` of a page's Any-wrapped ``PageLayout`` for a column of
    ``dtype``, or None when such pages are not plain (or do not parse). Memoised by
    ``(encoding, dtype)``."""
    k = (encoding, dtype)
    hit = _TEMPLATES.get(k, _MISS)
    if hit is not _MISS:
        return hit
    hit = None
    try:
        layout = parse_layout(encoding, "page template")
        if layout.WhichOneof("layout") == "mini_block_layout":
            mb = layout.mini_block_layout
            dec = miniblock.MiniBlockDecoder(mb, int(mb.num_items), [0, 0], "page template",
                                             blocks.fixed_bits(dtype), dtype)
            key = dec.batch_key()
            if key is not None:
                hit = Template(dec, key, dec.num_items)
    except LanceError:
        hit = None
    with _TEMPLATES_LOCK:
        if len(_TEMPLATES) >= _TEMPLATES_SIZE:
            _TEMPLATES.pop(next(iter(_TEMPLATES)), None)
        _TEMPLATES[k] = hit
    return hit


def column_pages(raw, dtype: pa.DataType, num_rows: int, file_size: int
                 ) -> list[PlainPage] | None:
    """The pages of a column (its serialized ``ColumnMetadata`` ``raw``) if every one is
    plain and checks (two buffers inside the file, the template's row count, rows
    adding up to ``num_rows``); None otherwise (the column's page decoders then say
    what is wrong, if anything is)."""
    cm = file2_pb2.ColumnMetadata()
    try:
        cm.ParseFromString(bytes(raw))
    except Exception:  # (the page decoders' parse names it)
        return None
    out = []
    row = 0
    for page in cm.pages:
        offs, sizes = page.buffer_offsets, page.buffer_sizes
        if len(offs) != 2 or len(sizes) != 2:
            return None
        # (a page whose encoding is not direct has empty direct bytes: no template)
        t = template(page.encoding.direct.encoding, dtype)
        if t is None or page.length != t.num_items:
            return None
        o0, o1 = offs
        s0, s1 = sizes
        if o0 + s0 > file_size or o1 + s1 > file_size:
            return None
        out.append(PlainPage(t, o0, s0, o1, s1, row))
        row += t.num_items
    return out if row == num_rows else None


def _decode(pages: list[PlainPage], data: np.ndarray, pos: np.ndarray):
    """Decode plain pages (their buffers read into ``data``, page ``j``'s two at
    ``pos[2j]`` and ``pos[2j + 1]``), one decode per batch key: per page ``(values
    block of its group, first item in it)``, or None for the pages of a group that
    does not check."""
    groups: dict = {}
    for j, p in enumerate(pages):
        groups.setdefault(p.tmpl.key, []).append(j)
    out: list = [None] * len(pages)
    for members in groups.values():
        m = np.array(members, np.int64)
        decs = [pages[j].tmpl.dec for j in members]
        meta = np.stack([pos[2 * m], [pages[j].meta_size for j in members]], axis=1)
        chunks = np.stack([pos[2 * m + 1], [pages[j].chunk_size for j in members]], axis=1)
        got = miniblock.decode_group(decs, data, meta, chunks)
        if got is None:
            continue
        block, item_start = got
        for j, a in zip(members, item_start[:-1].tolist()):
            out[j] = (block, a)
    return out


def _read(io, pages: list[PlainPage]):
    offs = np.empty(2 * len(pages), np.int64)
    sizes = np.empty(2 * len(pages), np.int64)
    offs[0::2] = [p.meta_off for p in pages]
    offs[1::2] = [p.chunk_off for p in pages]
    sizes[0::2] = [p.meta_size for p in pages]
    sizes[1::2] = [p.chunk_size for p in pages]
    return io.read_ranges_np(offs, sizes)


class _Arrays:
    """Arrow arrays cut from shared blocks: one array per (block, type), sliced."""

    def __init__(self):
        self._whole: dict = {}

    def slice(self, dtype: pa.DataType, block, first: int, n: int) -> pa.Array:
        k = (id(block), dtype)
        hit = self._whole.get(k)
        if hit is None:
            hit = self._whole[k] = (blocks.to_arrow(dtype, block, None), block)
        return hit[0].slice(first, n)


def scan(io, fields: list[tuple[pa.DataType, list[PlainPage]]], batch_bytes: int,
         page_bytes: int) -> list[list[pa.Array] | None]:
    """Every row of many plain columns (``(type, pages)`` each): per column its
    pages' Arrow arrays, or None for a column to read through its decoders (one of
    its pages is larger than ``page_bytes``: those scan in pieces, or a page does not
    check). Pages are read in coalesced requests of about ``batch_bytes``."""
    out: list = [None if any(p.meta_size + p.chunk_size > page_bytes for p in pages)
                 else [] for _, pages in fields]
    flat = [(f, p) for f, (_, pages) in enumerate(fields) if out[f] is not None
            for p in pages]
    arrays = _Arrays()
    start = 0
    while start < len(flat):
        stop, held = start, 0
        while stop < len(flat) and (stop == start or held < batch_bytes):
            held += flat[stop][1].meta_size + flat[stop][1].chunk_size
            stop += 1
        part = flat[start:stop]
        pages = [p for _, p in part]
        data, pos = _read(io, pages)
        for (f, p), got in zip(part, _decode(pages, data, pos)):
            if out[f] is None:
                continue
            if got is None:
                out[f] = None
                continue
            out[f].append(arrays.slice(fields[f][0], got[0], got[1], p.tmpl.num_items))
        start = stop
    return out


def take(io, fields: list[tuple[pa.DataType, list[PlainPage]]], rows: np.ndarray,
         num_rows: int, cache_key=None) -> list[list[pa.Array] | None]:
    """Rows ``rows`` (sorted, duplicates allowed) of many plain columns: per column the
    arrays of its pages' rows, or None for a column to read through its decoders (a
    page the rows touch is larger than ``TAKE_WHOLE_PAGE_BYTES``, or does not check).
    Columns cut into pages at the same rows share the row-to-page lookup; the touched
    pages are read in one request, and each kind's rows gathered in one call.

    With ``cache_key`` (one per open file, never reused: see :func:`new_cache_key`)
    the touched pages are decoded whole and kept in a process-wide cache of about
    :data:`PAGE_CACHE_BYTES` (least recently used out first), so later takes of the
    same pages only pick their rows (random takes and shuffled reads come back to the
    same small pages over and over)."""
    if cache_key is not None:
        return _take_cached(io, fields, rows, num_rows, cache_key)
    out, need = _pieces(fields, rows, num_rows)
    if not need:
        return out
    pages = [p for _, p, _ in need]
    data, pos = _read(io, pages)
    groups: dict = {}
    for j, p in enumerate(pages):
        groups.setdefault(p.tmpl.key, []).append(j)
    arrays = _Arrays()
    res: list = [None] * len(need)
    for members in groups.values():
        # one gather of the rows of all the group's pages
        m = np.array(members, np.int64)
        lens = [len(need[j][2]) for j in members]
        meta = np.stack([pos[2 * m], [pages[j].meta_size for j in members]], axis=1)
        chunks = np.stack([pos[2 * m + 1], [pages[j].chunk_size for j in members]], axis=1)
        block = miniblock.gather_group([pages[j].tmpl.dec for j in members], data, meta,
                                       chunks, np.repeat(np.arange(len(members)), lens),
                                       np.concatenate([need[j][2] for j in members]))
        if block is None:
            continue
        at = 0
        for j, n in zip(members, lens):
            res[j] = arrays.slice(fields[need[j][0]][0], block, at, n)
            at += n
    for (f, _, _), arr in zip(need, res):
        if arr is None:
            out[f] = None
        elif out[f] is not None:
            out[f].append(arr)
    return out


def _pieces(fields, rows: np.ndarray, num_rows: int):
    """``(out, need)``: per column ``[]`` when its touched pages are small enough to
    read whole (else None), and the ``(column, page, page-relative rows)`` to read."""
    out: list = [None] * len(fields)
    need: list = []  # (column, page, page-relative rows)
    split: dict = {}
    for f, (_, pages) in enumerate(fields):
        if len(pages) == 1:
            pieces = [(pages[0], rows)]
        else:
            k = tuple(p.first_row for p in pages)
            pieces = split.get(k)
            if pieces is None:
                firsts = np.array(k + (num_rows,), np.int64)
                page_of = np.searchsorted(firsts, rows, side="right") - 1
                pieces = split[k] = [(int(i), rows[page_of == i] - firsts[i])
                                     for i in np.unique(page_of).tolist()]
            pieces = [(pages[i], sel) for i, sel in pieces]
        if max([p.meta_size + p.chunk_size for p, _ in pieces], default=0) > \
                TAKE_WHOLE_PAGE_BYTES:
            continue
        out[f] = []
        need.extend((f, p, sel) for p, sel in pieces)
    return out, need


# decoded plain pages kept for takes: (cache key, chunk offset) -> Arrow array
PAGE_CACHE_BYTES = 32 << 20
_PAGES: OrderedDict = OrderedDict()
_PAGES_HELD = [0]
_PAGES_LOCK = module_lock(globals(), "_PAGES_LOCK")
_KEYS = itertools.count()


def new_cache_key() -> int:
    """A key for :func:`take`'s page cache, unique in this process (one per open
    file: a file written again at the same path gets a new one when reopened)."""
    return next(_KEYS)


_TOUCHED: OrderedDict = OrderedDict()  # keys of pages taken from once (bounded)
_TOUCHED_SIZE = 1 << 16
_REFUSED: OrderedDict = OrderedDict()  # keys of pages too large to keep (bounded)


def touched_again(key) -> bool:
    """Whether ``key`` was passed here before (then it is forgotten); else remember it."""
    with _PAGES_LOCK:
        if key in _REFUSED:
            return False
        if _TOUCHED.pop(key, None) is not None:
            return True
        _TOUCHED[key] = True
        if len(_TOUCHED) > _TOUCHED_SIZE:
            _TOUCHED.popitem(last=False)
        return False


def cached_page(key):
    """The decoded page kept under ``key`` (see :func:`keep_page`), or None."""
    return _cached(key)


def keep_page(key, arr: pa.Array) -> None:
    """Keep a decoded page for later takes, within the cache's byte budget; a page too
    large to keep is remembered as such (:func:`touched_again` then never says yes to
    it: it is not decoded whole again for nothing)."""
    if not _keep(key, arr):
        with _PAGES_LOCK:
            _REFUSED[key] = True
            if len(_REFUSED) > _TOUCHED_SIZE:
                _REFUSED.popitem(last=False)


def _cached(key):
    with _PAGES_LOCK:
        hit = _PAGES.get(key)
        if hit is not None:
            _PAGES.move_to_end(key)
        return hit


def _keep(key, arr: pa.Array) -> bool:
    n = arr.nbytes
    if n > PAGE_CACHE_BYTES // 8:
        return False
    with _PAGES_LOCK:
        if key in _PAGES:
            return True
        _PAGES[key] = arr
        _PAGES_HELD[0] += n
        while _PAGES_HELD[0] > PAGE_CACHE_BYTES and _PAGES:
            _, old = _PAGES.popitem(last=False)
            _PAGES_HELD[0] -= old.nbytes
    return True


def _take_cached(io, fields, rows: np.ndarray, num_rows: int, cache_key
                 ) -> list[list[pa.Array] | None]:
    out, need = _pieces(fields, rows, num_rows)
    if not need:
        return out
    whole = [_cached((cache_key, p.chunk_off)) for _, p, _ in need]
    missing = [j for j, a in enumerate(whole) if a is None]
    if missing:
        pages = list({need[j][1].chunk_off: need[j][1] for j in missing}.values())
        data, pos = _read(io, pages)
        type_of = {p.chunk_off: fields[f][0] for f, p, _ in need}
        decoded = {}
        for k, p in enumerate(pages):  # page by page: each block is its page alone
            got = _decode([p], data, pos[2 * k:2 * k + 2])
            if got[0] is not None:
                block, first = got[0]
                arr = blocks.to_arrow(type_of[p.chunk_off], block, None).slice(
                    first, p.tmpl.num_items)
                decoded[p.chunk_off] = arr
                _keep((cache_key, p.chunk_off), arr)
        for j in missing:
            whole[j] = decoded.get(need[j][1].chunk_off)
    for (f, _, sel), arr in zip(need, whole):
        if arr is None:
            out[f] = None
        elif out[f] is not None:
            out[f].append(arr.take(pa.array(sel)))
    return out
