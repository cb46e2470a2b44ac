"""Nested Arrow arrays <-> one leaf column's values and repetition/definition levels.

Each leaf of a nested field is its own column (2.1/2.2). Its *path* is the chain of
struct children and list items from the top-level array down to the leaf (a
primitive, a string, or a fixed-size list of primitives). The chain gives the
*layers*, innermost first (``layers[0]`` is the leaf, as in the page description):

=================== =========== =============================================
layer               def levels  meaning of its levels (base ``b`` = levels of
                                the layers inside it)
=================== =========== =============================================
ALL_VALID_ITEM      0
NULLABLE_ITEM       1           ``b + 1``: null struct / null value
ALL_VALID_LIST      0
NULLABLE_LIST       1           ``b + 1``: null list
EMPTYABLE_LIST      1           ``b + 1``: empty list
NULL_AND_EMPTY_LIST 2           ``b + 1``: null list, ``b + 2``: empty list
=================== =========== =============================================

A struct's nulls are pushed down into its children (as the reference does): a leaf
under a nullable struct is labelled NULLABLE_ITEM even when it has no nulls of its
own. The per-value work is in :mod:`lancenb.kernels.repdef`; here Python only plans.

Reading builds a *chain* array for the leaf column: the field's type cut down to the
one path (structs keep only that child). :func:`merge` joins the chains of a field's
leaves back into the field's array.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
import pyarrow as pa

from lancenb.encodings import pb
from lancenb.encodings.config import is_blob, is_packed
from lancenb.errors import CorruptFileError, NotSupportedError
from lancenb.kernels import repdef as kr

__all__ = ["Levels", "shred", "unshred", "Unshredded", "leaf_paths", "chain_type",
           "build_chain", "merge", "is_nested", "LayerInfo", "offsets32"]

L = pb.e21.RepDefLayer
_LIST_KINDS = (L.REPDEF_ALL_VALID_LIST, L.REPDEF_NULLABLE_LIST, L.REPDEF_EMPTYABLE_LIST,
               L.REPDEF_NULL_AND_EMPTY_LIST)
_NDEF = {L.REPDEF_ALL_VALID_ITEM: 0, L.REPDEF_NULLABLE_ITEM: 1, L.REPDEF_ALL_VALID_LIST: 0,
         L.REPDEF_NULLABLE_LIST: 1, L.REPDEF_EMPTYABLE_LIST: 1,
         L.REPDEF_NULL_AND_EMPTY_LIST: 2}


def is_nested(dt: pa.DataType) -> bool:
    """Struct or list types (a fixed-size list and an empty struct are leaves)."""
    return ((pa.types.is_struct(dt) and dt.num_fields > 0) or pa.types.is_list(dt)
            or pa.types.is_large_list(dt))


def _is_list(dt: pa.DataType) -> bool:
    return pa.types.is_list(dt) or pa.types.is_large_list(dt)


def leaf_paths(dt: pa.DataType, prefix: tuple = (), in_list: bool = False) -> list[tuple]:
    """Paths (child indices; 0 for a list's item) to every leaf, in pre-order. A
    packed struct (``lance-encoding:packed``) inside is one leaf, stored row by row."""
    if pa.types.is_struct(dt):
        if dt.num_fields == 0:
            return [prefix]  # an empty struct owns a column
        return [p for i in range(dt.num_fields) for p in _field_paths(dt.field(i),
                                                                      prefix + (i,), in_list)]
    if _is_list(dt):
        return _field_paths(dt.value_field, prefix + (0,), True)
    return [prefix]


def _field_paths(f: pa.Field, prefix: tuple, in_list: bool = False) -> list[tuple]:
    if is_blob(f) and in_list:
        raise NotSupportedError(f"field {f.name!r}: blobs inside lists are not supported "
                                f"(pylance 14 cannot read them either)")
    if is_packed_leaf(f):
        return [prefix]
    return leaf_paths(f.type, prefix, in_list)


def leaf_arrow_field(f: pa.Field, path: tuple) -> pa.Field:
    """The field at ``path`` under ``f`` (its metadata included)."""
    for step in path:
        f = f.type.field(step) if pa.types.is_struct(f.type) else f.type.value_field
    return f


def is_packed_leaf(f: pa.Field) -> bool:
    """A struct field stored packed: a leaf of the rep/def tree, not a layer."""
    return pa.types.is_struct(f.type) and f.type.num_fields > 0 and is_packed(f)


def leaf_field(dt: pa.DataType, path: tuple) -> pa.DataType:
    """The type of the leaf at ``path`` (a packed struct for packed leaves)."""
    for step in path:
        dt = dt.field(step).type if pa.types.is_struct(dt) else dt.value_type
    return dt


def chain_type(dt: pa.DataType, path: tuple) -> pa.DataType:
    """``dt`` cut down to the one leaf at ``path``."""
    if not path:
        return dt
    if pa.types.is_struct(dt):
        f = dt.field(path[0])
        return pa.struct([f.with_type(chain_type(f.type, path[1:]))])
    f = dt.value_field
    ctor = pa.list_ if pa.types.is_list(dt) else pa.large_list
    return ctor(f.with_type(chain_type(f.type, path[1:])))


@dataclass(frozen=True)
class LayerInfo:
    """What the levels of a page mean, derived from its ``layers`` alone."""

    layers: tuple
    is_list: np.ndarray      # uint8 per layer
    null_level: np.ndarray   # int64 per layer (0: none)
    empty_level: np.ndarray
    rep_num: np.ndarray      # rep number of list layers (innermost 1), 0 for items
    max_rep: int
    max_def: int
    max_visible_def: int     # defs above this have no value slot

    @classmethod
    def from_layers(cls, layers, where: str = "") -> "LayerInfo":
        """The meaning of ``layers`` (shared per distinct list of layers, so its lookup
        tables are built once per process)."""
        layers = tuple(int(x) for x in layers)
        try:
            return _layer_info(layers)
        except CorruptFileError:
            return cls._build(layers, where)  # raises, naming ``where``

    @classmethod
    def _build(cls, layers: tuple, where: str = "") -> "LayerInfo":
        if not layers:
            raise CorruptFileError(f"{where}: page description has no rep/def layers")
        k = len(layers)
        is_list = np.zeros(k, np.uint8)
        null_level = np.zeros(k, np.int64)
        empty_level = np.zeros(k, np.int64)
        rep_num = np.zeros(k, np.int64)
        base = 0
        reps = 0
        visible = None
        for j, lay in enumerate(layers):
            if lay not in _NDEF:
                raise CorruptFileError(f"{where}: unknown rep/def layer {lay}")
            if lay in _LIST_KINDS:
                if j == 0:
                    raise CorruptFileError(f"{where}: the innermost layer is a list")
                if visible is None:
                    visible = base
                is_list[j] = 1
                reps += 1
                rep_num[j] = reps
            if lay in (L.REPDEF_NULLABLE_ITEM, L.REPDEF_NULLABLE_LIST,
                       L.REPDEF_NULL_AND_EMPTY_LIST):
                null_level[j] = base + 1
            if lay == L.REPDEF_EMPTYABLE_LIST:
                empty_level[j] = base + 1
            if lay == L.REPDEF_NULL_AND_EMPTY_LIST:
                empty_level[j] = base + 2
            base += _NDEF[lay]
        if base > 0xFFFF or reps > 0xFFFF:
            raise CorruptFileError(f"{where}: too many rep/def layers")
        return cls(layers, is_list, null_level, empty_level, rep_num, reps, base,
                   base if visible is None else visible)

    @property
    def num_layers(self) -> int:
        """Number of rep/def layers."""
        return len(self.layers)

    @cached_property
    def leaf_all_valid(self) -> bool:
        """Only ``def == 0`` reaches the leaf layer (every other level stops at a list
        above it), so every value slot is valid."""
        stop = self.tables()[2]
        return bool(np.all(stop[1:] > 0))

    @cached_property
    def skip(self) -> np.ndarray:
        """Layers whose unshred pass can be skipped (see :func:`kernels.repdef.unshred`):
        the leaf when every value slot is valid, and struct layers without nulls (their
        validity is never used); never the outermost."""
        k = self.num_layers
        out = np.zeros(k, np.uint8)
        if k > 1:
            out[0] = self.leaf_all_valid
            for j in range(1, k - 1):
                out[j] = not self.is_list[j] and self.layers[j] not in _NULLABLE
        return out

    @cached_property
    def valid_lut(self) -> np.ndarray:
        """``[layer, def]``: whether a level of that def makes a valid entry there."""
        term, term_valid = self.tables()[:2]
        j = np.arange(self.num_layers)[:, None]
        return ((j > term[None, :]) | ((j == term[None, :]) & (term_valid[None, :] == 1))
                ).astype(np.uint8)

    @cached_property
    def list_row(self) -> np.ndarray:
        """Which row of the unshred offsets output each list layer takes."""
        return np.cumsum(self.is_list, dtype=np.int64) - 1

    def tables(self):
        """``(term, term_valid, stop, top_of_rep)`` lookup tables for the unshred kernel
        (built once)."""
        return self._tables

    @cached_property
    def _tables(self):
        k = self.num_layers
        term = np.zeros(self.max_def + 1, np.int64)
        term_valid = np.zeros(self.max_def + 1, np.uint8)
        term_valid[0] = 1
        for j in range(k):
            if self.null_level[j]:
                term[self.null_level[j]] = j
            if self.empty_level[j]:
                term[self.empty_level[j]] = j
                term_valid[self.empty_level[j]] = 1
        stop = np.zeros(self.max_def + 1, np.int64)
        for d in range(1, self.max_def + 1):
            t = int(term[d])
            if self.is_list[t]:
                stop[d] = t
            else:
                below = np.flatnonzero(self.is_list[:t])
                stop[d] = int(below[-1]) if below.size else 0
        top = np.zeros(self.max_rep + 1, np.int64)
        top[self.max_rep] = k - 1
        for j in range(k):
            if self.is_list[j] and self.rep_num[j] >= 1 and self.rep_num[j] - 1 < self.max_rep:
                top[self.rep_num[j] - 1] = j - 1
        return term, term_valid, stop, top


@lru_cache(maxsize=256)
def _layer_info(layers: tuple) -> LayerInfo:
    return LayerInfo._build(layers)


@dataclass
class Levels:
    """One page's levels: ``rep``/``defs`` (u16, None when absent) and their meaning."""

    rep: np.ndarray | None
    defs: np.ndarray | None
    info: LayerInfo
    num_levels: int
    num_rows: int

    @property
    def layers(self):
        """The layers, innermost first."""
        return list(self.info.layers)

    def visible(self) -> np.ndarray | None:
        """Indices of levels that have a value slot (None: every level; computed once,
        as the page's chunk bounds, validity and encoders all ask)."""
        if self.defs is None or self.info.max_visible_def >= self.info.max_def:
            return None
        vis = self.__dict__.get("_visible")
        if vis is None:
            vis = self.__dict__["_visible"] = np.flatnonzero(
                self.defs <= self.info.max_visible_def)
        return vis

    def is_simple(self) -> bool:
        """No levels beyond a flat column's (one item layer, no repetition)."""
        return self.info.num_layers == 1


# -- writing ------------------------------------------------------------------

def _u8_validity(arr: pa.Array) -> np.ndarray | None:
    """One byte per entry (1 = valid), None when nothing is null: the validity bitmap
    unpacked once (a view of the unpacked bytes)."""
    if arr.null_count == 0:
        return None
    if pa.types.is_null(arr.type):
        return np.zeros(len(arr), np.uint8)
    bits = np.frombuffer(arr.buffers()[0], np.uint8)
    return np.unpackbits(bits, count=arr.offset + len(arr), bitorder="little")[arr.offset:]


def _offsets(a: pa.Array) -> np.ndarray:
    """A list array's ``len + 1`` offsets (int32 or int64, as stored; no copy)."""
    return a.offsets.to_numpy(zero_copy_only=False)


def _list_kind(has_null, has_empty):
    return {(0, 0): L.REPDEF_ALL_VALID_LIST, (1, 0): L.REPDEF_NULLABLE_LIST,
            (0, 1): L.REPDEF_EMPTYABLE_LIST,
            (1, 1): L.REPDEF_NULL_AND_EMPTY_LIST}[(int(has_null), int(has_empty))]


def _leaf_at(leaf: pa.Array, pos, nvis: int, consecutive: bool, first: int) -> pa.Array:
    """The leaf's value slots: a slice when they are consecutive, else a take."""
    if nvis == 0:
        return leaf.slice(0, 0)
    if consecutive:
        return leaf.slice(first, nvis)
    return leaf.take(pa.array(pos))


def _shred_items(layers, leaf):
    """Levels of a chain without lists (structs over a leaf): no repetition, every
    level visible, so the leaf is kept as it is and the def level of a row is the null
    level of its outermost null layer (0 if none)."""
    k = len(layers)
    n = layers[-1][3]
    outer_null = None  # per row: the outermost layer that is null there, or -1
    for j, (_, valid, _, _) in enumerate(layers):
        if valid is not None:
            if outer_null is None:
                outer_null = np.full(n, -1, np.int8 if k < 127 else np.int64)
            outer_null[valid == 0] = j
    top = -1 if outer_null is None else int(outer_null.max())
    # a null struct makes every layer below it nullable (its nulls are pushed down)
    kinds = [L.REPDEF_NULLABLE_ITEM if j <= top else L.REPDEF_ALL_VALID_ITEM
             for j in range(k)]
    info = LayerInfo.from_layers(kinds)
    defs = None
    if info.max_def:
        lut = np.zeros(k + 1, np.uint16)
        lut[1:] = info.null_level
        defs = lut[outer_null.astype(np.int64) + 1]
    return Levels(None, defs, info, n, n), leaf


def _shred_list(layers, leaf):
    """Levels of ``list<leaf>`` through :func:`kernels.repdef.shred_list`."""
    (_, leaf_valid, _, leaf_len), (_, list_valid, offs, _) = layers
    e8, e16, e64 = np.zeros(0, np.uint8), np.zeros(0, np.uint16), np.zeros(0, np.int64)
    lv = e8 if list_valid is None else list_valid
    fv = e8 if leaf_valid is None else leaf_valid
    flags = np.zeros(3, np.uint8)
    counts = np.zeros(4, np.int64)
    status = kr.shred_list(lv, offs, fv, leaf_len, 0, 0, 0, False, e16, e16, e64, flags,
                           counts)
    if status != kr.OK:
        raise CorruptFileError("list offsets point outside their values")
    kinds = [L.REPDEF_NULLABLE_ITEM if flags[2] else L.REPDEF_ALL_VALID_ITEM,
             _list_kind(flags[0], flags[1])]
    info = LayerInfo.from_layers(kinds)
    n, nvis, consecutive, first = (int(x) for x in counts)
    rep = np.empty(n, np.uint16)
    defs = np.empty(n if info.max_def else 0, np.uint16)
    pos = e64 if consecutive else np.empty(nvis, np.int64)
    kr.shred_list(lv, offs, fv, leaf_len, int(info.null_level[1]), int(info.empty_level[1]),
                  int(info.null_level[0]), True, rep, defs, pos, flags, counts)
    levels = Levels(rep, defs if info.max_def else None, info, n, len(offs) - 1)
    return levels, _leaf_at(leaf, pos, nvis, bool(consecutive), first)


def shred(arr: pa.Array, path: tuple):
    """``(Levels, leaf array)``: the levels of the leaf at ``path`` of ``arr`` and the
    leaf's value slots (one per visible level; slots of nulls keep whatever the
    Arrow array held there)."""
    outer = []  # (is_list, validity, offsets, length), outermost first
    a = arr
    depth = 0
    while True:
        dt = a.type
        valid = _u8_validity(a)
        if is_nested(dt) and not _is_list(dt) and depth < len(path):
            outer.append((0, valid, None, len(a)))
            a = a.field(path[depth])
        elif _is_list(dt):
            outer.append((1, valid, _offsets(a), len(a)))
            a = a.values
        else:
            outer.append((0, valid, None, len(a)))
            break
        depth += 1
    leaf = a
    layers = outer[::-1]
    k = len(layers)
    is_list = np.array([x[0] for x in layers], np.uint8)
    lengths = np.array([x[3] for x in layers], np.int64)
    # the common shapes take short paths (same levels): structs only, and list<leaf>
    if not is_list.any() and np.all(lengths == lengths[-1]):
        return _shred_items(layers, leaf)
    if k == 2 and is_list[1]:
        return _shred_list(layers, leaf)
    vparts, vstart, oparts, ostart = [], np.full(k, -1, np.int64), [], np.full(k, -1, np.int64)
    vpos = opos = 0
    for j, (_, valid, offs, _) in enumerate(layers):
        if valid is not None:
            vstart[j] = vpos
            vparts.append(valid)
            vpos += len(valid)
        if offs is not None:
            ostart[j] = opos
            oparts.append(offs.astype(np.int64, copy=False))
            opos += len(offs)
    valid_all = np.concatenate(vparts) if vparts else np.zeros(0, np.uint8)
    offs_all = np.concatenate(oparts) if oparts else np.zeros(0, np.int64)
    rep_num = np.zeros(k, np.int64)
    rep_num[is_list == 1] = np.arange(1, int(is_list.sum()) + 1)
    max_rep = int(is_list.sum())
    has_null = np.zeros(k, np.uint8)
    has_empty = np.zeros(k, np.uint8)
    counts = np.zeros(2, np.int64)
    zeros = np.zeros(k, np.int64)
    e16, e64 = np.zeros(0, np.uint16), np.zeros(0, np.int64)
    status = kr.shred(is_list, valid_all, vstart, offs_all, ostart, lengths, zeros, zeros,
                      rep_num, max_rep, False, e16, e16, e64, has_null, has_empty, counts)
    if status != kr.OK:
        raise CorruptFileError("list offsets point outside their values")
    kinds = []
    for j in range(k):
        if is_list[j]:
            kinds.append(_list_kind(has_null[j], has_empty[j]))
        else:
            kinds.append(L.REPDEF_NULLABLE_ITEM if has_null[j] else L.REPDEF_ALL_VALID_ITEM)
    info = LayerInfo.from_layers(kinds)
    n, nvis = int(counts[0]), int(counts[1])
    rep = np.empty(n if max_rep else 0, np.uint16)
    defs = np.empty(n if info.max_def else 0, np.uint16)
    pos = np.empty(nvis, np.int64)
    kr.shred(is_list, valid_all, vstart, offs_all, ostart, lengths, info.null_level,
             info.empty_level, rep_num, max_rep, True, rep, defs, pos, has_null, has_empty,
             counts)
    consecutive = nvis and pos[-1] - pos[0] == nvis - 1 and (
        nvis < 3 or bool(np.all(np.diff(pos) == 1)))
    leaf = _leaf_at(leaf, pos, nvis, consecutive, int(pos[0]) if nvis else 0)
    levels = Levels(rep if max_rep else None, defs if info.max_def else None, info, n,
                    int(lengths[-1]))
    return levels, leaf


def leaf_validity(levels: Levels) -> np.ndarray | None:
    """Validity of the value slots (``def == 0`` among visible levels)."""
    if levels.defs is None:
        return None
    vis = levels.visible()
    if levels.info.max_visible_def == 0:  # only def 0 has a value slot: all valid
        return np.ones(levels.num_levels if vis is None else len(vis), bool)
    d = levels.defs if vis is None else levels.defs[vis]
    return d == 0


# -- reading ------------------------------------------------------------------

_NULLABLE = (L.REPDEF_NULLABLE_ITEM, L.REPDEF_NULLABLE_LIST, L.REPDEF_NULL_AND_EMPTY_LIST)


class Unshredded:
    """Every layer's entries from a set of levels (see :func:`unshred`).

    ``counts[j]`` entries in layer ``j`` (innermost first; layer 0 is the value
    slots), ``nulls[j]`` of them invalid; their validity bytes are
    ``valid[j, :counts[j]]`` and, for list layers, their offsets into layer ``j - 1``
    ``offs[list_row[j], :counts[j] + 1]`` (int32 or int64).
    """

    def __init__(self, info: LayerInfo, counts, nulls, valid, offs, list_row):
        self.info = info
        self.counts, self.nulls = counts, nulls
        self.valid, self.offs, self.list_row = valid, offs, list_row

    def validity(self, j: int) -> np.ndarray | None:
        """Layer ``j``'s validity (bool), None when every entry is valid. The value
        slots (layer 0) are null wherever their level is not 0; other layers only
        carry nulls when their layer kind is nullable."""
        if not self.nulls[j] or (j and self.info.layers[j] not in _NULLABLE):
            return None
        return self.valid[j, :self.counts[j]].view(bool)

    def bitmap(self, j: int) -> pa.Buffer | None:
        """Layer ``j``'s validity as an Arrow bitmap buffer, or None when all valid."""
        v = self.validity(j)
        return None if v is None else pa.py_buffer(np.packbits(v, bitorder="little"))

    def offsets(self, j: int) -> np.ndarray:
        """Layer ``j``'s list offsets."""
        return self.offs[self.list_row[j], :self.counts[j] + 1]

    def layer(self, j: int):
        """``(count, validity or None, offsets or None)`` of layer ``j``."""
        return (int(self.counts[j]), self.validity(j),
                self.offsets(j) if self.info.is_list[j] else None)


def unshred(levels: Levels, num_values: int, where: str, offsets32: bool = False):
    """The entries of every layer (:class:`Unshredded`), in one pass over the levels.

    Checks that the visible levels match ``num_values`` value slots. ``offsets32``
    asks for int32 list offsets (when every list in the chain is a 32-bit list).
    """
    info = levels.info
    k = info.num_layers
    term, term_valid, stop, top = info.tables()
    if levels.rep is None and info.max_rep:
        raise CorruptFileError(f"{where}: list layers but no repetition levels")
    n = levels.num_levels
    counts = np.zeros(k, np.int64)
    nulls = np.zeros(k, np.int64)
    list_row = info.list_row
    nlists = int(list_row[-1]) + 1
    odt = np.int32 if offsets32 and n < (1 << 31) else np.int64
    offs = np.empty((nlists, n + 1), odt)
    if levels.rep is None and levels.defs is None:
        counts[:] = n
        valid = np.ones((k, n), np.uint8)
        status = kr.OK
    elif levels.rep is None:
        # no lists: every level is one entry in every layer, its validity a lookup
        defs = levels.defs[:n]
        if n and int(defs.max()) > info.max_def:
            bad = int(np.argmax(defs > info.max_def))
            raise CorruptFileError(f"{where}: level {bad}: a rep/def level above the "
                                   f"layers' maximum")
        counts[:] = n
        valid = np.empty((k, n), np.uint8)
        for j in range(k):
            np.take(info.valid_lut[j], defs, out=valid[j])
            nulls[j] = n - np.count_nonzero(valid[j])
        status = kr.OK
    else:
        valid = np.empty((k, n), np.uint8)
        err = np.zeros(1, np.int64)
        e16 = np.zeros(0, np.uint16)
        status = kr.unshred(levels.rep if levels.rep is not None else e16,
                            levels.defs if levels.defs is not None else e16, n, info.max_rep,
                            info.max_def, info.is_list, list_row, term, term_valid, stop,
                            top, info.skip, counts, nulls, valid, offs, err)
    if status != kr.OK:
        what = ("a rep/def level above the layers' maximum" if status == kr.BAD_LEVEL else
                "a level continues a list that is not open")
        raise CorruptFileError(f"{where}: level {int(err[0])}: {what}")
    if int(counts[0]) != num_values:
        raise CorruptFileError(f"{where}: levels give {int(counts[0])} value slots, the "
                               f"page has {num_values}")
    return Unshredded(info, counts, nulls, valid, offs, list_row)


def _bitmap(valid: np.ndarray | None):
    if valid is None or valid.all():
        return None
    return pa.py_buffer(np.packbits(valid, bitorder="little"))


def chain_layers(chain: pa.DataType) -> tuple:
    """The struct and list types along a chain, outermost first.

    Not cached: Arrow type equality (and hash) ignores nested fields' metadata, so a
    cache would hand a chain with a ``lance-encoding:packed`` struct the layers of the
    same type without it (found by property_tests/test_dataset_roundtrip.py)."""
    types = []
    t = chain
    while is_nested(t):
        types.append(t)
        f = t.field(0) if pa.types.is_struct(t) else t.value_field
        if is_packed_leaf(f):
            break
        t = f.type
    return tuple(types)


def offsets32(chain: pa.DataType) -> bool:
    """Whether every list along the chain takes 32-bit offsets."""
    return not any(pa.types.is_large_list(t) for t in chain_layers(chain))


def build_chain(chain: pa.DataType, leaf: pa.Array, un: Unshredded, where: str) -> pa.Array:
    """The chain array of ``chain`` type from the leaf values (validity applied) and
    the unshredded outer layers."""
    types = chain_layers(chain)
    k = un.info.num_layers
    if len(types) + 1 != k:
        raise CorruptFileError(f"{where}: page has {k} rep/def layers, the column's type "
                               f"needs {len(types) + 1}")
    arr = leaf
    for j, t in enumerate(reversed(types), start=1):
        count = int(un.counts[j])
        if pa.types.is_struct(t):
            if un.info.is_list[j]:
                raise CorruptFileError(f"{where}: a list layer where the type has a struct")
            arr = pa.Array.from_buffers(t, count, [un.bitmap(j)], children=[arr])
        else:
            if not un.info.is_list[j]:
                raise CorruptFileError(f"{where}: an item layer where the type has a list")
            offs = un.offsets(j)
            odt = np.int32 if pa.types.is_list(t) else np.int64
            if odt is np.int32 and offs.dtype != np.int32:
                if offs[-1] > np.iinfo(np.int32).max:
                    raise NotSupportedError(f"{where}: more than 2^31 list items in one page")
                offs = offs.astype(np.int32)
            elif offs.dtype != odt:
                offs = offs.astype(odt)
            arr = pa.Array.from_buffers(t, count, [un.bitmap(j), pa.py_buffer(offs)],
                                        children=[arr])
    return arr


def _validity_buffer(arr: pa.Array) -> pa.Buffer | None:
    """``arr``'s validity bitmap, re-based to offset 0 (shared when it already is)."""
    if arr.null_count == 0:
        return None
    if arr.offset == 0:
        return arr.buffers()[0]
    return _bitmap(np.asarray(arr.is_valid()))


def merge(dt: pa.DataType, chains: list, where: str = "") -> pa.Array:
    """Join the chain arrays of the leaves of a field of type ``dt`` (pre-order)."""
    first = chains[0]
    if not is_nested(dt):
        if len(chains) != 1:
            raise CorruptFileError(f"{where}: {len(chains)} columns for one leaf")
        return first
    if len(chains) == 1 and first.type == dt:
        return first  # a field with one leaf is its own chain
    n = len(first)
    for c in chains[1:]:
        if len(c) != n:
            raise CorruptFileError(f"{where}: the columns of one field disagree on its "
                                   f"length ({len(c)} vs {n})")
    valid = _validity_buffer(first)
    if pa.types.is_struct(dt):
        kids = []
        i = 0
        for f in dt:
            m = len(_field_paths(f, ()))
            kids.append(merge(f.type, [c.field(0) for c in chains[i:i + m]], where))
            i += m
        return pa.Array.from_buffers(dt, n, [valid], children=kids)
    offs = np.asarray(first.offsets)
    subs = []
    for c in chains:
        o = np.asarray(c.offsets)
        same = np.array_equal(o, offs) if o[0] == offs[0] else \
            np.array_equal(o.astype(np.int64) - o[0], offs.astype(np.int64) - offs[0])
        if not same:
            raise CorruptFileError(f"{where}: the columns of one list field disagree on its "
                                   f"offsets")
        subs.append(c.values.slice(int(o[0]), int(o[-1] - o[0])))
    child = merge(dt.value_type, subs, where)
    odt = np.int32 if pa.types.is_list(dt) else np.int64
    if offs[0] != 0 or offs.dtype != odt:
        offs = (offs.astype(np.int64) - offs[0]).astype(odt)
    return pa.Array.from_buffers(dt, n, [valid, pa.py_buffer(offs)], children=[child])
