"""Reading rows of nested (rep/def) mini-block pages in one batch.

A nested page's chunks are cut at value boundaries, not row boundaries: a row may
start in one chunk and end several chunks later, and invisible levels (null or empty
lists) open the chunk after the value they follow. The repetition index (one
``[rows ending in the chunk, levels left over after its last row start]`` pair per
chunk) says which chunks a row spans without decoding any of them.

A read of sorted rows (duplicates allowed) then

1. finds each row's first and last chunk from the index, and the union of those
   chunks (all of them for a scan);
2. reads those chunks (coalesced) and decodes their rep levels, def levels and values
   each in one call over all of them, as if they were back to back;
3. locates each row's levels ``[ls, le)`` among the decoded ones: the row starts
   (rep == max_rep) of a chunk are numbered from the chunk's first row; a row ends at
   the next row start, or where its run of consecutive chunks ends;
4. gathers those level ranges and the value slots they cover (``[vs, ve)``, counted
   by the visible levels before them) with slice kernels.

The result is one block of values and one set of levels holding exactly the rows
asked for, in order: :func:`~lancenb.encodings.structural.repdef.unshred` turns it
into Arrow layers in one pass. No per-row or per-chunk Python.

Example: chunks A (levels ``r: 1 0 1``) and B (``r: 0 1 0``), index ``[[1, 2],
[2, 0]]``; row 1 starts at A's level 2 and ends at B's level 1: ``[ls, le) = [2, 4)``
of the levels of A+B.
"""

from __future__ import annotations

import numpy as np

from lancenb.encodings.blocks import DictionaryIndices, take_ranges
from lancenb.encodings.structural import repdef
from lancenb.errors import CorruptFileError
from lancenb.kernels import repdef as kr
from lancenb.kernels import slices

__all__ = ["NestedPages", "gather_rows", "merge_ranges"]


def merge_ranges(starts: np.ndarray, ends: np.ndarray):
    """Join ranges where one ends exactly where the next starts (same concatenation,
    fewer slices to copy; not worth its own cost for a few ranges)."""
    if len(starts) < 16:
        return starts, ends
    brk = np.flatnonzero(starts[1:] != ends[:-1])
    keep_s = np.concatenate([[0], brk + 1])
    keep_e = np.concatenate([brk, [len(ends) - 1]])
    return starts[keep_s], ends[keep_e]


def _concat(src, starts, ends, total, where):
    out = np.empty(total, src.dtype)
    if slices.concat_slices(src, starts, ends - starts, out) != slices.OK:
        raise CorruptFileError(f"{where}: row levels fall outside the levels decoded")
    return out


def visible_prefix(levels: repdef.Levels) -> np.ndarray | None:
    """Value slots before each level (``num_levels + 1`` entries), or None when every
    level has one."""
    info = levels.info
    if levels.defs is None or info.max_visible_def >= info.max_def:
        return None
    out = np.zeros(levels.num_levels + 1, np.int64)
    np.cumsum(levels.defs[:levels.num_levels] <= info.max_visible_def, out=out[1:])
    return out


def gather_rows(block, levels: repdef.Levels, ls: np.ndarray, le: np.ndarray, where: str,
                vs: np.ndarray | None = None, ve: np.ndarray | None = None):
    """``(block, levels)`` holding the level ranges ``[ls[i], le[i])`` (whole rows,
    in order) and their value slots (``[vs[i], ve[i])``; counted here when not
    given)."""
    ls = np.ascontiguousarray(ls, np.int64)
    le = np.ascontiguousarray(le, np.int64)
    if vs is None:
        vcum = visible_prefix(levels)
        nvis = levels.num_levels if vcum is None else int(vcum[-1])
        if nvis != block.num_values:
            raise CorruptFileError(f"{where}: levels give {nvis} value slots, the chunks "
                                   f"hold {block.num_values} values")
        vs, ve = (ls, le) if vcum is None else (vcum[ls], vcum[le])
    ms, me = merge_ranges(ls, le)
    total = int((me - ms).sum())
    rep = None if levels.rep is None else _concat(levels.rep, ms, me, total, where)
    defs = None if levels.defs is None else _concat(levels.defs, ms, me, total, where)
    vs, ve = merge_ranges(np.ascontiguousarray(vs, np.int64), np.ascontiguousarray(ve, np.int64))
    return take_ranges(block, vs, ve), repdef.Levels(rep, defs, levels.info, total, 0)


class NestedPages:
    """Methods of :class:`~lancenb.encodings.structural.miniblock.MiniBlockDecoder`
    for pages with rep/def layers."""

    def rep_index(self, reader, offsets, raw=None, table=None):
        """``(levels left over per chunk, rows ended by the end of each chunk, first row
        starting in each chunk + the page's rows)``, read and checked once."""
        ri = self._rep_index
        if ri is None:
            t = table if table is not None else self._load_table(reader, offsets)
            nc = len(t.words)
            if self.buffer_sizes[-1] != 16 * nc:
                raise CorruptFileError(f"{self.where}: repetition index of "
                                       f"{self.buffer_sizes[-1]} bytes for {nc} chunks")
            if raw is None:
                (raw,) = reader.read_ranges([(offsets[-1], self.buffer_sizes[-1])])
            idx = np.frombuffer(raw, "<u8").reshape(nc, 2)
            if nc and (int(idx[:, 0].sum()) != self.num_rows or np.any(idx > (1 << 40))):
                raise CorruptFileError(f"{self.where}: repetition index counts "
                                       f"{int(idx[:, 0].sum())} rows, the page has "
                                       f"{self.num_rows}")
            left = idx[:, 1].astype(np.int64)
            ends_at = np.cumsum(idx[:, 0].astype(np.int64))
            first = np.zeros(nc + 1, np.int64)
            first[1:] = ends_at + (left != 0)
            first[-1] = self.num_rows
            if np.any(np.diff(first) < 0):
                raise CorruptFileError(f"{self.where}: repetition index row counts go "
                                       f"backwards")
            ri = (left, ends_at, first)
            self._rep_index = ri
        return ri

    def _row_chunks(self, reader, offsets, t, rows):
        """``(levels left over per chunk, first row starting in each chunk, start chunk
        and end chunk of each row)`` from the repetition index."""
        left, ends_at, first = self.rep_index(reader, offsets, table=t)
        nc = len(ends_at)
        if len(rows) > 16 * nc and rows[-1] < self.num_rows:
            # many rows (a range): a row -> chunk table beats a binary search per row
            per = np.diff(ends_at, prepend=0)
            sc = np.repeat(np.arange(nc), np.diff(first))[rows]
            ec = np.repeat(np.arange(nc), per)[rows]
            return left, first, sc, ec
        sc = np.searchsorted(first, rows, side="right") - 1
        ec = np.searchsorted(ends_at, rows, side="right")
        # rows are sorted, so sc and ec are too (locate_rows checks each row's span)
        if ec[-1] >= len(ends_at) or sc[0] < 0:
            raise CorruptFileError(f"{self.where}: repetition index does not place every row "
                                   f"in a chunk")
        return left, first, sc, ec

    def _decode_chunks(self, t, need, data, pos, items):
        """Levels and values of the (sorted) chunks ``need``, decoded back to back:
        ``(block, Levels, level start of each chunk + total, values per chunk)``."""
        nitems, lcounts, starts, sizes = self._parse(t, need, data, pos)
        nl = self.n_level_bufs
        rep = defs = None
        if self.reps is not None:
            rep = self.reps.decode(data, starts[:, 0], sizes[:, 0], lcounts, self.where)
        if self.levels is not None:
            defs = self.levels.decode(data, starts[:, nl - 1], sizes[:, nl - 1], lcounts,
                                      self.where)
        if not self.info.max_rep and nl and not np.array_equal(lcounts, nitems):
            # without lists every level is a value slot
            raise CorruptFileError(f"{self.where}: chunks' level counts do not match their "
                                   f"values")
        counts = lcounts if nl else nitems
        lstart = np.zeros(len(need) + 1, np.int64)
        np.cumsum(counts, out=lstart[1:])
        block = self._wrap(self.values.decode(data, starts[:, nl:], sizes[:, nl:], nitems,
                                              self.where), items)
        return block, repdef.Levels(rep, defs, self.info, int(lstart[-1]), 0), lstart, nitems

    def read_nested(self, reader, offsets, rows: np.ndarray | None):
        """``(block, Levels)`` of ``rows`` (sorted page-relative, duplicates allowed;
        None: the whole page), reading and decoding only the chunks they need."""
        t = self._load_table(reader, offsets)
        items = self.load_items(reader, offsets) if self.has_dictionary else None
        nc = len(t.words)
        if nc == 0 or (rows is not None and len(rows) == 0):
            block = (DictionaryIndices(np.zeros(0, np.uint32), items, 0) if items is not None
                     else self._empty()[0])
            return block, repdef.Levels(
                None if self.reps is None else np.zeros(0, np.uint16),
                None if self.levels is None else np.zeros(0, np.uint16), self.info, 0, 0)
        contiguous = (rows is not None and self.reps is not None and len(rows) > 2
                      and int(rows[-1] - rows[0]) == len(rows) - 1
                      and bool(np.all(np.diff(rows) == 1)))
        if contiguous:
            # a range: only its first and last rows need locating, and the levels
            # between them are the answer (one slice instead of a gather per row)
            rows = rows[[0, -1]]
        if rows is None:
            need = np.arange(nc)
        elif self.reps is None:
            # one level per row: the chunk of each (sorted) row, and which of the
            # needed chunks that is
            if len(rows) > 16 * nc:
                chunk_of = np.repeat(np.arange(nc), np.diff(t.item_starts))[rows]
            else:
                chunk_of = np.searchsorted(t.item_starts, rows, side="right") - 1
            new = np.empty(len(rows), bool)
            new[0] = True
            np.not_equal(chunk_of[1:], chunk_of[:-1], out=new[1:])
            need = chunk_of[new]
        else:
            left, first, sc, ec = self._row_chunks(reader, offsets, t, rows)
            need = np.arange(sc[0], ec[-1] + 1) if contiguous else _union(sc, ec)
        data, pos = self.read_chunks(reader, offsets, t, need)
        block, levels, lstart, nitems = self._decode_chunks(t, need, data, pos, items)
        if rows is None:
            return block, levels
        if self.reps is None:
            ls = lstart[np.cumsum(new) - 1] + rows - t.item_starts[chunk_of]
            return gather_rows(block, levels, ls, ls + 1, self.where)
        r = self._row_levels(levels, nitems, need, lstart, left, first, sc, ec, rows)
        if contiguous:
            r = r[:, [0, 1]]
            r[1, 0], r[3, 0] = r[1, 1], r[3, 1]
            r = r[:, :1]
        return gather_rows(block, levels, r[0], r[1], self.where, r[2], r[3])

    def _row_levels(self, levels, nitems, need, lstart, left, first, sc, ec, rows):
        """Each row's levels ``[ls, le)`` and value slots ``[vs, ve)`` among the
        decoded chunks ``need`` (one row per column)."""
        out = np.empty((4, len(rows)), np.int64)
        err = np.zeros(1, np.int64)
        defs = levels.defs if levels.defs is not None else np.zeros(0, np.uint16)
        if len(rows) > 16 * len(need):
            where = np.full(len(left), -1, np.int64)
            where[need] = np.arange(len(need))
            i_sc = where[sc]
        else:
            i_sc = np.searchsorted(need, sc)
        status = kr.locate_rows(levels.rep, defs, self.info.max_rep,
                                self.info.max_visible_def, need, lstart, nitems, left,
                                i_sc, rows - first[sc], ec, out, err)
        if status != kr.OK:
            what = {kr.BAD_VISIBLE: f"chunk {int(need[min(int(err[0]), len(need) - 1)])}'s "
                                    f"levels do not match its values",
                    kr.BAD_ROW: "a row is not within the chunks the repetition index "
                                "places it in"}.get(status, "bad chunk layout")
            raise CorruptFileError(f"{self.where}: {what}")
        return out


def _union(sc: np.ndarray, ec: np.ndarray) -> np.ndarray:
    """The chunks in any of the (sorted) spans ``[sc[i], ec[i]]``, sorted (``ec >= sc``
    holds by construction: a chunk's first row start is never before the rows ended in
    the chunks before it)."""
    if len(sc) == 1:
        return np.arange(sc[0], ec[0] + 1)
    s = sc.copy()
    s[1:] = np.maximum(sc[1:], ec[:-1] + 1)
    keep = s <= ec
    s, e = s[keep], ec[keep] + 1
    out = np.empty(int((e - s).sum()), np.int64)
    slices.expand_ranges(s, e, int(e[-1]), out)
    return out
