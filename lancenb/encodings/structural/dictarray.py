"""Arrow dictionary columns and empty structs in 2.1/2.2 files.

**Dictionary columns** (``dictionary<values=V, indices=I>``; the Lance field's logical
type is ``dict:{V}:{I}:false``, its ``encoding`` DICTIONARY) are always written as a
mini-block page with a page dictionary, as pylance 14 does (same bytes, checked in
``tests/file/test_dictionary_arrays.py``):

* the Arrow dictionary becomes the page dictionary (buffer 2; ``num_dictionary_items``
  its length), its entries kept as given (unused and repeated entries stay), block-
  compressed as pylance 14 does: strings and binary in the ``Variable`` block form,
  booleans as a ``Flat(1)`` bitmap, 8/16/32/64-bit values bitpacked
  (``InlineBitpacking`` up to 1024 items, else ``OutOfLineBitpacking`` at the widest
  1024-group's width) unless a single group would not shrink, then ``Flat``. 2.2
  wraps ``Variable`` and ``Flat`` (not bitpacking) in ``General`` LZ4. E.g. 1000
  doubles in [0, 1) → ``InlineBitpacking(64)``; ``[1.5, 2.5, 3.5]`` → ``Flat(64)``.
* the chunk values are the Arrow indices at their own width (int8 → 8 bits, ...,
  compressed like any integers of that width: Flat, InlineBitpacking or Rle). Null
  indices become definition levels; their slots keep what the Arrow array holds.
* nulls *inside* the dictionary are moved to the indices first (pylance's
  normalisation): the null entries are dropped and every index that pointed at one
  becomes null. ``indices [0, 1, 2]`` over ``["a", None, "c"]`` is written as
  ``indices [0, null, 1]`` over ``["a", "c"]``, and that is what reads back.
* a page's rows that arrive in several batches get one dictionary, joined as Arrow's
  concatenation in pylance joins them: the batches' dictionaries appended and the
  indices shifted (no de-duplication): two batches over ``["a", "b"]`` and
  ``["c", "a"]`` make the page dictionary ``["a", "b", "c", "a"]``; but string and
  binary dictionaries that together hold at least as many values as the page has
  rows, or more than the index type addresses, are merged to the values the indices
  use, each once, in order of first use (batches of a table that share one big
  dictionary). Other value types that overflow are unified. When even the merged
  dictionary overflows, the batches go to separate pages (pylance writes such a
  page with 32-bit indices that it then refuses to read).
* a page whose indices are all null is an all-null page (no buffers); it reads back
  as nulls over an empty dictionary.

Reading gives each page's rows as a ``DictionaryArray`` over that page's dictionary
(so a multi-page column is a chunked array with one dictionary per page; pylance's
batches that span pages concatenate the pages' dictionaries); every index is checked
against the dictionary's size first (out of range ⇒
:class:`~lancenb.errors.CorruptFileError`). Joins of pages whose dictionaries cannot
be unified within their index type keep them apart (:func:`combine_chunks`,
:func:`take`, :func:`page_segments`).

**Empty structs** (``struct<>``) own a column of their own, top level or as a struct
child. pylance writes only those without nulls and outside lists; each page is a
simple all-null page (``layers [NULLABLE_ITEM]``, no buffers) of the page's row
count, even inside a struct, and reads back as that many valid empty structs.
(pylance 14 reads the columns *after* a top-level empty struct as nulls; lancenb
reads them.)
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb.encodings import blocks, pb
from lancenb.encodings.physical import general, variable
from lancenb.encodings.strategy import choose_codec
from lancenb.encodings.structural import allnull, miniblock, repdef
from lancenb.errors import CorruptFileError, InvalidInputError, NotSupportedError
from lancenb.kernels import bitpack as kb

__all__ = ["has_dictionary", "is_empty_struct", "handles", "page_array", "page_groups",
           "encode_page", "encode", "encode_empty_struct", "to_arrow", "from_values",
           "empty_struct_chain", "combine_chunks", "take", "page_segments",
           "check_writable"]

_NP_INDEX = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def is_empty_struct(dt: pa.DataType) -> bool:
    """Whether ``dt`` is a struct without children."""
    return pa.types.is_struct(dt) and dt.num_fields == 0


def handles(dt: pa.DataType) -> bool:
    """Whether pages of a leaf of type ``dt`` are this module's to write."""
    return pa.types.is_dictionary(dt) or is_empty_struct(dt)


@lru_cache(maxsize=1024)
def has_dictionary(dt: pa.DataType) -> bool:
    """Whether ``dt`` is, or holds somewhere inside, a dictionary type."""
    if pa.types.is_dictionary(dt):
        return True
    if pa.types.is_struct(dt):
        return any(has_dictionary(f.type) for f in dt)
    if pa.types.is_list(dt) or pa.types.is_large_list(dt) or pa.types.is_fixed_size_list(dt):
        return has_dictionary(dt.value_type)
    return False


def check_writable(dt: pa.DataType, name: str) -> None:
    """Refuse what pylance 14 cannot store either: dictionaries of anything but plain
    values whose logical type has no parameters (pylance cannot parse e.g.
    ``dict:fixed_size_binary:4:int32:false`` back), and dictionaries of dictionaries."""
    if pa.types.is_dictionary(dt):
        v = dt.value_type
        simple = (blocks.is_variable(v) or pa.types.is_boolean(v) or pa.types.is_integer(v)
                  or pa.types.is_floating(v))
        if not simple:
            raise NotSupportedError(f"column {name!r}: dictionaries of {v} values are not "
                                    f"supported (pylance 14 cannot read them back either)")
    elif pa.types.is_struct(dt):
        for f in dt:
            check_writable(f.type, name)
    elif pa.types.is_list(dt) or pa.types.is_large_list(dt):
        check_writable(dt.value_type, name)
    elif pa.types.is_fixed_size_list(dt) and has_dictionary(dt.value_type):
        raise NotSupportedError(f"column {name!r}: dictionaries inside fixed-size lists are "
                                f"not supported")


# -- writing: one page's array --------------------------------------------------------
def _index_numpy(indices: pa.Array) -> np.ndarray:
    """The index values as an unsigned numpy view of the Arrow buffer (indices are
    never negative in a valid array)."""
    bits = indices.type.bit_width
    raw = indices.buffers()[1]
    if raw is None or len(indices) == 0:
        return np.zeros(0, _NP_INDEX[bits])
    return np.frombuffer(raw, _NP_INDEX[bits], count=len(indices),
                         offset=indices.offset * bits // 8)


def _rebuild(dt: pa.DictionaryType, idx: np.ndarray, valid: np.ndarray | None,
             dictionary: pa.Array) -> pa.DictionaryArray:
    vbuf = None if valid is None or valid.all() else pa.py_buffer(
        np.packbits(valid, bitorder="little"))
    idx = np.ascontiguousarray(idx.astype(_NP_INDEX[dt.index_type.bit_width], copy=False))
    return pa.DictionaryArray.from_buffers(dt, len(idx), [vbuf, pa.py_buffer(idx)],
                                           dictionary)


def _normalise(arr: pa.DictionaryArray) -> pa.DictionaryArray:
    """Nulls in the dictionary moved to the indices (pylance's normalisation)."""
    d = arr.dictionary
    if d.null_count == 0:
        return arr
    dvalid = blocks.validity_of(d)
    new_pos = np.cumsum(dvalid) - 1
    idx = _index_numpy(arr.indices).astype(np.int64)
    valid = blocks.validity_of(arr)
    valid = np.ones(len(arr), bool) if valid is None else valid.copy()
    if len(idx):
        inside = idx < len(d)
        if not np.all(inside[valid]):
            raise InvalidInputError("dictionary array with indices outside its dictionary")
        hit = np.where(inside, idx, 0)
        valid &= dvalid[hit]
        idx = np.where(valid, new_pos[hit], 0)
    return _rebuild(arr.type, idx, valid, d.filter(pa.array(dvalid)))


def _limit(dt: pa.DictionaryType) -> int:
    """How many dictionary values the index type can address."""
    it = dt.index_type
    return 1 << (it.bit_width - (1 if pa.types.is_signed_integer(it) else 0))


def _unified(arrays: list):
    """The arrays over one de-duplicated dictionary, or None when it needs a wider
    index type."""
    try:
        return pa.chunked_array(arrays, type=arrays[0].type).unify_dictionaries().chunks
    except pa.ArrowInvalid:
        return None


def _merge_used(arrays: list):
    """Arrow's dictionary merge (arrow-rs ``merge_dictionary_values``): the values the
    non-null indices use, dictionary by dictionary in value order, each kept once
    (first appearance). Returns ``(dictionary, [old index -> new index per array])``;
    an unused value maps to 0. (arrow-rs de-duplicates through a lossy hash table
    and may keep a few repeats; this keeps none.)"""
    used_pos, parts = [], []
    for a in arrays:
        idx = _index_numpy(a.indices)
        valid = blocks.validity_of(a)
        used = np.zeros(len(a.dictionary), bool)
        used[idx if valid is None else idx[valid]] = True
        pos = np.flatnonzero(used)
        used_pos.append(pos)
        parts.append(a.dictionary.take(pa.array(pos)))
    candidates = pa.concat_arrays(parts)
    dictionary = pc.unique(candidates)
    new = np.asarray(pc.index_in(candidates, value_set=dictionary), dtype=np.int64)
    maps, at = [], 0
    for a, pos in zip(arrays, used_pos):
        m = np.zeros(max(len(a.dictionary), 1), np.int64)
        m[pos] = new[at:at + len(pos)]
        at += len(pos)
        maps.append(m)
    return dictionary, maps


def _joined(arrays: list):
    """How pylance joins one page's dictionary arrays (nulls already normalised):
    ``(dictionary, [index mapping per array] or None for shifts)``. Strings and binary
    are merged when the dictionaries together hold at least as many values as the
    rows, or more than the index type addresses (arrow-rs ``concat``); other values are
    appended, or unified when they overflow (pylance then writes 32-bit indices it
    cannot read back)."""
    dt = arrays[0].type
    total = sum(len(a.dictionary) for a in arrays)
    overflow = total > _limit(dt) - 1
    if blocks.is_variable(dt.value_type) and (overflow or total >= sum(len(a) for a in arrays)):
        return _merge_used(arrays)
    if overflow:
        unified = _unified(arrays)
        if unified is None:
            return None, None
        maps = []
        for a, u in zip(arrays, unified):  # old index -> unified index, per array
            m = np.zeros(max(len(a.dictionary), 1), np.int64)
            idx = _index_numpy(a.indices)
            m[idx] = _index_numpy(u.indices)
            maps.append(m)
        return unified[0].dictionary, maps
    return pa.concat_arrays([a.dictionary for a in arrays]), None


def _concat_dicts(arrays: list) -> pa.DictionaryArray:
    """Concatenate dictionary arrays as pylance does (see :func:`_joined`): appended
    dictionaries with shifted indices, or one merged dictionary with remapped ones."""
    arrays = [_normalise(a) for a in arrays]
    if len(arrays) == 1:
        return arrays[0]
    dt = arrays[0].type
    dictionary, maps = _joined(arrays)
    if dictionary is None or len(dictionary) > _limit(dt):  # (page_groups avoids this)
        raise NotSupportedError(f"the distinct dictionary values do not fit "
                                f"{dt.index_type} indices")
    if maps is None:
        shifts = np.cumsum([0] + [len(a.dictionary) for a in arrays[:-1]])
        idx = np.concatenate([_index_numpy(a.indices).astype(np.int64) + s
                              for a, s in zip(arrays, shifts)])
    else:
        parts = []
        for a, m in zip(arrays, maps):
            raw = _index_numpy(a.indices).astype(np.int64)
            parts.append(m[np.where(raw < len(a.dictionary), raw, 0)])
        idx = np.concatenate(parts)
    if any(a.null_count for a in arrays):
        # (null slots moved along, as Arrow's concatenation in pylance leaves them)
        valid = np.concatenate([np.asarray(a.is_valid(), dtype=bool) for a in arrays])
    else:
        valid = None
    return _rebuild(dt, idx, valid, dictionary)


def _validity_buffer(arrays: list, n: int):
    if not any(a.null_count for a in arrays):
        return None
    valid = np.concatenate([np.asarray(a.is_valid(), dtype=bool) for a in arrays])
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def _concat(arrays: list, dt: pa.DataType) -> pa.Array:
    if not has_dictionary(dt):
        return arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)
    if pa.types.is_dictionary(dt):
        return _concat_dicts(arrays)
    n = sum(len(a) for a in arrays)
    valid = _validity_buffer(arrays, n)
    if pa.types.is_struct(dt):
        kids = [_concat([a.field(i) for a in arrays], dt.field(i).type)
                for i in range(dt.num_fields)]
        return pa.StructArray.from_buffers(dt, n, [valid], children=kids)
    if pa.types.is_list(dt) or pa.types.is_large_list(dt):
        odt = np.int32 if pa.types.is_list(dt) else np.int64
        parts, values, base = [np.zeros(1, np.int64)], [], 0
        for a in arrays:
            o = np.asarray(a.offsets, dtype=np.int64)
            values.append(a.values.slice(int(o[0]), int(o[-1] - o[0])))
            parts.append(o[1:] - o[0] + base)
            base += int(o[-1] - o[0])
        if odt is np.int32 and base > np.iinfo(np.int32).max:
            raise NotSupportedError("more than 2^31 list items in one page")
        offs = np.concatenate(parts).astype(odt)
        child = _concat(values, dt.value_type)
        return pa.Array.from_buffers(dt, n, [valid, pa.py_buffer(offs)], children=[child])
    raise NotSupportedError(f"dictionaries inside {dt} are not supported")


def _dict_leaves(arr: pa.Array) -> list:
    """The dictionary arrays inside ``arr``, in pre-order."""
    dt = arr.type
    if pa.types.is_dictionary(dt):
        return [arr]
    if pa.types.is_struct(dt):
        return [d for i in range(dt.num_fields) for d in _dict_leaves(arr.field(i))]
    if pa.types.is_list(dt) or pa.types.is_large_list(dt):
        o = arr.offsets
        lo, hi = (o[0].as_py(), o[-1].as_py()) if len(o) else (0, 0)
        return _dict_leaves(arr.values.slice(lo, hi - lo))
    return []


def _fits(leaves: list) -> bool:
    """Whether one page's dictionary leaves (per array, each a list of leaves) can
    share a dictionary per leaf, joined as pylance joins them (:func:`_joined`)."""
    for col in zip(*leaves):
        dt = col[0].type
        if sum(len(a.dictionary) for a in col) > _limit(dt) - 1:
            dictionary, _ = _joined([_normalise(a) for a in col])
            if dictionary is None or len(dictionary) > _limit(dt):
                return False
    return True


def page_groups(arrays: list) -> list[list]:
    """A column's buffered arrays cut into runs that each make one page: all of them,
    unless dictionaries joined would overflow their index type (pylance writes such a
    page with wider indices than the schema's, a file it cannot read back); then each
    run is as long as fits."""
    if len(arrays) < 2 or not has_dictionary(arrays[0].type):
        return [arrays]
    leaves = [_dict_leaves(a) for a in arrays]
    if _fits(leaves):
        return [arrays]
    groups, start = [], 0
    for i in range(1, len(arrays) + 1):
        if i == len(arrays) or not _fits(leaves[start:i + 1]):
            groups.append(arrays[start:i])
            start = i
    return groups


def page_array(arrays: list) -> pa.Array:
    """The one array a page is written from, out of a column's buffered arrays:
    ``pa.concat_arrays``, except that dictionaries (anywhere inside) are joined and
    normalised as pylance does (see the module docstring)."""
    dt = arrays[0].type
    if not has_dictionary(dt):
        return arrays[0] if len(arrays) == 1 else pa.concat_arrays(arrays)
    return _concat(arrays, dt)


# -- writing: encoding -------------------------------------------------------------------
def _bitpacked_items(block: blocks.FixedWidth):
    """pylance's block bitpacking of fixed-width dictionary items, or None when it
    does not apply: 8/16/32/64-bit values, and not a single 1024-value group whose
    packed bits (``1024 * W / 8`` bytes) are no smaller than the raw values (groups of
    zeros do not stop it in pylance 14, unlike the reference snapshot). At most 1024
    items → InlineBitpacking (``W | packed``), more → OutOfLineBitpacking at the widest
    group's width. E.g. 1000 doubles in [0, 1) → InlineBitpacking(64), 3 doubles →
    Flat(64)."""
    bits, n = block.bits, block.num_values
    if bits not in _NP_INDEX or n == 0:
        return None
    vals = np.ascontiguousarray(block.data[:n * bits // 8]).view(_NP_INDEX[bits])
    widths = np.empty((n + kb.BLOCK - 1) // kb.BLOCK, np.int64)
    kb.block_bit_widths(vals, widths)
    if len(widths) == 1 and kb.BLOCK * int(widths[0]) // 8 >= n * bits // 8:
        return None
    if n <= kb.BLOCK:
        out = np.empty(int(kb.inline_chunk_words(vals).sum()), vals.dtype)
        kb.inline_pack(vals, out)
        return out.view(np.uint8), pb.e21.CompressiveEncoding(
            inline_bitpacking=pb.e21.InlineBitpacking(uncompressed_bits_per_value=bits))
    width = int(widths.max())
    out = np.empty(kb.outofline_words(n, width, bits), vals.dtype)
    kb.outofline_pack(vals, width, out)
    return out.view(np.uint8), pb.e21.CompressiveEncoding(
        out_of_line_bitpacking=pb.e21.OutOfLineBitpacking(uncompressed_bits_per_value=bits,
                                                          values=pb.flat(width)))


def _items(values: pa.Array, version_minor: int, level):
    """``(bytes, description)`` of the page dictionary, block-compressed as pylance 14
    does it: strings → Variable; fixed-width → bitpacked where that applies (see
    :func:`_bitpacked_items`; never wrapped), else Flat; 2.2 wraps Variable and Flat in
    General LZ4."""
    block, _ = blocks.from_arrow(values)
    if isinstance(block, blocks.FixedWidth) and not pa.types.is_boolean(values.type):
        packed = _bitpacked_items(block)
        if packed is not None:
            return packed
    if isinstance(block, blocks.Variable):
        data = variable.encode_block(block)
        desc = pb.variable(block.offset_bits)
    elif isinstance(block, blocks.FixedWidth):
        data = np.ascontiguousarray(block.data[:(block.num_values * block.bits + 7) // 8])
        desc = pb.flat(block.bits)
    else:
        raise NotSupportedError(f"dictionaries of {values.type} values are not supported")
    if version_minor >= 2:
        data = np.frombuffer(general.compress(data, general.LZ4, level), np.uint8)
        desc = pb.e21.CompressiveEncoding(general=pb.e21.General(
            compression=pb.e21.BufferCompression(scheme=general.LZ4), values=desc))
    return data, desc


def encode(arr: pa.DictionaryArray, cfg, *, version_minor: int, levels=None,
           why: list[str] | None = None):
    """One page of a dictionary column: ``(buffers, PageLayout)``. ``arr`` comes from
    :func:`page_array` (no nulls in its dictionary); with ``levels`` it holds a nested
    column's value slots and the levels carry the nulls."""
    why = [] if why is None else why
    arr = _normalise(arr)
    if levels is not None:
        validity = repdef.leaf_validity(levels)
        if len(arr) == 0 or (validity is not None and not validity.any()):
            why.append("dictionary: no valid index: all-null page with rep/def levels")
            return allnull.encode_levels(levels, version_minor=version_minor)
    else:
        if len(arr) and arr.null_count == len(arr):
            why.append("dictionary: every index null: all-null page")
            return allnull.encode()
        validity = blocks.validity_of(arr)
    idx = _index_numpy(arr.indices)
    k = len(arr.dictionary)
    if validity is not None:
        # null slots keep what the Arrow array holds there (as pylance writes them,
        # e.g. the child values under a null struct) unless it is outside the dictionary
        idx = np.where(validity | (idx < k), idx, 0).astype(idx.dtype)
    ok = idx[validity] if validity is not None else idx
    if len(ok) and int(ok.max()) >= k:
        raise InvalidInputError(f"dictionary index {int(ok.max())} is outside the dictionary "
                                f"({k} values)")
    bits = arr.type.index_type.bit_width
    block = blocks.FixedWidth(bits, np.ascontiguousarray(idx).view(np.uint8), len(idx))
    items, desc = _items(arr.dictionary, version_minor, cfg.compression_level)
    why.append(f"dictionary column: {k} dictionary values, {bits}-bit indices")
    codec = choose_codec(arr.type.index_type, block, cfg, why)
    return miniblock.encode(block, validity, codec=codec, pack_levels=True,
                            large_chunks=version_minor >= 2, dictionary=(items, desc, k),
                            levels=levels, version_minor=version_minor)


def encode_page(arr: pa.Array, cfg, *, version_minor: int, levels=None,
                why: list[str] | None = None):
    """A page of a dictionary or empty-struct leaf (see :func:`handles`)."""
    if is_empty_struct(arr.type):
        if why is not None:
            why.append("empty struct: all-null page without buffers (as pylance)")
        return encode_empty_struct(arr, levels)
    return encode(arr, cfg, version_minor=version_minor, levels=levels, why=why)


def encode_empty_struct(arr: pa.Array, levels=None):
    """One page of an empty-struct column: a simple all-null page, as pylance writes
    it. Nulls (of the struct or above it) and lists above it are refused, as pylance
    refuses them."""
    if arr.null_count or (levels is not None and (levels.rep is not None
                                                  or levels.defs is not None)):
        raise NotSupportedError("empty structs with nulls, or inside lists or nullable "
                                "structs, are not supported (pylance 14 refuses them too)")
    return allnull.encode()


# -- reading -------------------------------------------------------------------------------
def combine_chunks(table: pa.Table) -> pa.Table:
    """``table.combine_chunks()``, except that a column whose chunks' dictionaries do
    not unify within its index type (pages or fragments with different dictionaries
    of, say, int8 indices) keeps its chunks instead of failing."""
    try:
        return table.combine_chunks()
    except pa.ArrowInvalid:
        if not any(has_dictionary(f.type) for f in table.schema):
            raise
    cols = []
    for c in table.columns:
        try:
            cols.append(c.combine_chunks() if c.num_chunks > 1 else c)
        except pa.ArrowInvalid:
            cols.append(c)
    return pa.Table.from_arrays(cols, schema=table.schema)


def page_segments(columns: list) -> list:
    """A field's per-column page arrays (``columns[c]`` = the arrays of column ``c``,
    back to back in row order) cut into stretches of rows that lie inside one array of
    every column: ``[columns-shaped lists holding one slice each]``. Joining each
    stretch on its own avoids concatenating pages whose dictionaries cannot be unified
    within their index type."""
    bounds = np.unique(np.concatenate(
        [np.cumsum([0] + [len(a) for a in parts]) for parts in columns]))
    ends = [np.cumsum([len(a) for a in parts]) for parts in columns]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        seg = []
        for parts, e in zip(columns, ends):
            k = int(np.searchsorted(e, lo, side="right"))
            start = int(e[k] - len(parts[k]))
            seg.append([parts[k].slice(int(lo) - start, int(hi - lo))])
        out.append(seg)
    return out


def take(table: pa.Table, indices: pa.Array) -> pa.Table:
    """``table.take(indices)``, taking chunk by chunk when the chunks' dictionaries
    cannot be unified (see :func:`combine_chunks`)."""
    try:
        return table.take(indices)
    except pa.ArrowInvalid:
        if not any(has_dictionary(f.type) for f in table.schema):
            raise
    idx = np.asarray(indices, dtype=np.int64)
    cols = []
    for c in table.columns:
        try:
            cols.append(c.take(indices))
            continue
        except pa.ArrowInvalid:
            pass
        # one piece per run of indices that stays in one chunk (vectorised planning)
        ends = np.cumsum([len(x) for x in c.chunks])
        which = np.searchsorted(ends, idx, side="right")
        starts = ends - np.array([len(x) for x in c.chunks])
        cut = np.flatnonzero(np.diff(which)) + 1
        pieces = []
        for lo, hi in zip(np.r_[0, cut], np.r_[cut, len(idx)]):
            k = int(which[lo])
            pieces.append(c.chunk(k).take(pa.array(idx[lo:hi] - starts[k])))
        cols.append(pa.chunked_array(pieces, type=c.type))
    return pa.Table.from_arrays(cols, schema=table.schema)



def to_arrow(dt: pa.DictionaryType, block: blocks.DictionaryIndices,
             validity: np.ndarray | None, where: str) -> pa.DictionaryArray:
    """A page's decoded indices and dictionary as a ``DictionaryArray`` of type ``dt``,
    every non-null index checked against the dictionary size."""
    n = block.num_values
    idx = np.asarray(block.indices[:n])
    k = len(block.items)
    if validity is not None:
        if len(validity) != n:
            raise CorruptFileError(f"{where}: {len(validity)} validity entries for {n} "
                                   f"dictionary indices")
        idx = np.where(validity, idx, 0)
    if n and int(idx.max(initial=0)) >= k:
        if k or validity is None or validity.any():
            bad = int(idx.max())
            raise CorruptFileError(f"{where}: dictionary index {bad} is out of range (the "
                                   f"dictionary has {k} values)")
    it = dt.index_type
    top = (1 << (it.bit_width - 1)) - 1 if pa.types.is_signed_integer(it) else \
        (1 << it.bit_width) - 1
    if n and int(idx.max(initial=0)) > top:
        raise CorruptFileError(f"{where}: dictionary index {int(idx.max())} does not fit "
                               f"the column's {it} indices")
    items = block.items
    if items.type != dt.value_type:
        raise CorruptFileError(f"{where}: dictionary of {items.type} for a {dt} column")
    return _rebuild(dt, idx, validity, items)


def from_values(arr: pa.Array, dt: pa.DictionaryType) -> pa.Array:
    """Plain values read from a page without a dictionary, as dictionary type ``dt``
    (a robustness path: pylance always writes dictionary columns with a dictionary)."""
    if arr.null_count == len(arr):
        return pa.nulls(len(arr), dt)
    enc = pc.dictionary_encode(arr)
    return _rebuild(dt, _index_numpy(enc.indices).astype(np.int64),
                    blocks.validity_of(enc), enc.dictionary)


def empty_struct_chain(chain: pa.DataType, n: int) -> pa.Array:
    """``n`` valid rows of ``chain``: structs (each with one child) down to an empty
    struct."""
    if is_empty_struct(chain):
        return pa.StructArray.from_buffers(chain, n, [None], children=[])
    if not pa.types.is_struct(chain):
        raise CorruptFileError(f"an empty struct's column under a {chain}")
    child = empty_struct_chain(chain.field(0).type, n)
    return pa.StructArray.from_buffers(chain, n, [None], children=[child])
