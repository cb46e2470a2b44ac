"""A fragment's columns resolved to the dataset's fields by field id, at every depth.

A data file keeps the field names and types it was written with; the manifest's schema
moves on. Renaming ``meta.name`` to ``meta.nm`` changes only the manifest; casting
``meta.age`` writes the cast values to a new data file under a new field id and leaves
the old values, under the old id, in the old file; dropping ``meta.sub.x`` removes the
id from the schema only. So the struct ``meta`` of one fragment can be spread over
several data files, under names that are no longer the schema's. The one thing that
stays true is the field id: a file's own schema carries the ids of the dataset fields
it was written for (both libraries write it so), and ``DataFile.fields`` lists the ids
whose values the file is responsible for.

Reading a top-level column therefore goes, when the fast case does not hold:

1. every data file that lists an id of the column's subtree is a *source*; its copy
   of the column is the file's top-level field with the column's id;
2. each dataset node (struct, list, leaf) takes its values, validity or offsets from
   the first source that *covers* its id: an id the file lists, a descendant of one
   (a packed struct lists only itself) or an ancestor of one (a struct's validity
   travels with its children);
3. children are matched by id, never by name or position: a renamed child reads its
   old values under its new name, a child no file covers is null (added later), a
   child the schema dropped is left out.

The fast case, which is every column a writer wrote and nobody evolved since, is one
source whose field has the dataset field's ids, names and types at every node: its
column is used as read. A file whose ids do not agree with its ``DataFile.fields`` (a
foreign file added by path) is used as before, by position at the top level, and only
when its type is the dataset's; anything else is an error naming the column and file,
never a column of nulls.

Example: ``meta: struct<name, age>`` (ids 1: 2, 3) written to ``a.lance``
(fields ``[2, 3]``), then ``age`` cast to int32 (new id 7, written to ``b.lance`` with
fields ``[7]``), then ``name`` renamed ``nm``: ``meta`` reads its validity and ``nm`` (id
2) from ``a.lance`` and ``age`` (id 7) from ``b.lance``; ``a.lance``'s old ``age`` (id 3)
is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb.errors import CorruptFileError, LanceError, NotSupportedError
from lancenb.file.columns import data_file_columns
from lancenb.file.schema import LanceField

__all__ = ["Source", "Resolution", "file_fields", "resolve_column", "same_tree", "conform",
           "struct_names_match"]


@dataclass(frozen=True)
class Source:
    """One data file's copy of a top-level column: the fragment's data file index, the
    file's name for the field, its field tree (the file's ids) and the ids it covers."""

    file_index: int
    name: str
    tree: LanceField
    covers: frozenset


@dataclass(frozen=True)
class Resolution:
    """How top-level column ``top`` is assembled from its sources (see the module doc)."""

    top: LanceField
    sources: tuple[Source, ...]


def same_tree(a: LanceField, b: LanceField, *, root_name: bool = False) -> bool:
    """The same ids, names and types at every node (the fast case); the roots' names
    only with ``root_name`` (a top-level column is read by its file's name and
    returned under the dataset's)."""
    if a.id != b.id or (root_name and a.name != b.name) or len(a.children) != len(b.children):
        return False
    if not a.children:
        return a.arrow.type == b.arrow.type
    if _kind(a.arrow.type) != _kind(b.arrow.type):
        return False
    return all(same_tree(x, y, root_name=True) for x, y in zip(a.children, b.children))


def struct_names_match(a: pa.DataType, b: pa.DataType) -> bool:
    """Whether every struct in ``a`` has the children names of its counterpart in
    ``b``, at any depth: a cast between them then keeps every value (Arrow casts
    structs by name, so a renamed child would come out null)."""
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        return [f.name for f in a] == [f.name for f in b] and all(
            struct_names_match(x.type, y.type) for x, y in zip(a, b))
    if pa.types.is_map(a) and pa.types.is_map(b):
        return struct_names_match(a.key_type, b.key_type) and \
            struct_names_match(a.item_type, b.item_type)
    nested = (pa.types.is_list, pa.types.is_large_list, pa.types.is_fixed_size_list)
    if any(p(a) for p in nested) and any(p(b) for p in nested):
        return struct_names_match(a.value_type, b.value_type)
    return True


def _kind(t: pa.DataType) -> str:
    if pa.types.is_struct(t):
        return "struct"
    if pa.types.is_map(t):
        return "map"
    if pa.types.is_fixed_size_list(t):
        return f"fsl{t.list_size}"
    if pa.types.is_large_list(t):
        return "large_list"
    if pa.types.is_list(t):
        return "list"
    return str(t)


def _ids(tree: LanceField) -> set:
    return {f.id for f in tree.walk()}


def _covered(tree: LanceField, listed: set) -> frozenset:
    """The ids of ``tree`` a file is responsible for: listed ids, their descendants
    and their ancestors."""
    out: set = set()

    def visit(node: LanceField, inherited: bool) -> bool:
        here = inherited or node.id in listed
        below = False
        for c in node.children:
            below = visit(c, here) or below
        if here or below:
            out.add(node.id)
        return here or below

    visit(tree, False)
    return frozenset(out)


def file_fields(df, reader, parent_of: dict) -> list | None:
    """A data file's top-level fields with the dataset's field ids at every node, or
    None when they cannot be told.

    Both libraries list in ``df.fields`` the dataset ids of the file's fields in
    pre-order: every field in 2.0 files, the fields with columns in 2.1+ (leaves, and
    a packed struct as one).
    pylance's files carry those ids in their own schema too; files lancenb wrote
    before carry 0, 1, 2, ... So the file's own ids are used when they are the listed
    ones, and otherwise the listed ids are laid over the file's fields by position; a
    field above the leaves then takes the dataset id of the ancestor of its leaves
    (``parent_of``: the dataset schema's child id -> parent id)."""
    tops = list(reader.fields)
    nodes = [f for t in tops for f in t.walk()]
    own = {f.id: f for f in nodes}
    try:  # the fields with columns, in order (a packed struct is one)
        cols = [own[c.field_id] for c in data_file_columns(tops, reader.version)]
    except (KeyError, LanceError):
        cols = []
    listed = [int(x) for x in df.fields]
    for seq in (cols, nodes):
        if len(seq) == len(listed) and all(x < 0 or x == f.id for x, f in zip(listed, seq)):
            return tops
    if len(listed) == len(nodes):
        ids = {id(f): x for f, x in zip(nodes, listed)}
    elif len(listed) == len(cols) and not any(f.children for f in cols):
        ids = {id(f): x for f, x in zip(cols, listed)}
        for t in tops:
            _ancestors(t, ids, parent_of)
    else:
        return None
    return [_relabel(t, ids) for t in tops]


def _ancestors(node: LanceField, ids: dict, parent_of: dict) -> list:
    """Give ``node`` and the fields below it the dataset ids their leaves imply;
    returns the chain of dataset ids from ``node``'s leaves up to ``node``, per leaf."""
    if not node.children:
        x = ids.get(id(node), -1)
        return [[x]] if x >= 0 else []
    chains = []
    for c in node.children:
        for chain in _ancestors(c, ids, parent_of):
            up = parent_of.get(chain[-1])
            if up is not None:
                chains.append(chain + [up])
    if chains:
        ids[id(node)] = chains[0][-1]
    return chains


def _relabel(node: LanceField, ids: dict) -> LanceField:
    # fields whose dataset id cannot be told get an id no dataset field has
    return LanceField(ids.get(id(node), -3), node.name, node.arrow,
                      [_relabel(c, ids) for c in node.children])


def resolve_column(top: LanceField, files, *, where: str) -> Resolution | None:
    """The sources of dataset column ``top`` among ``files`` (``[(data file index,
    DataFile, its fields from :func:`file_fields`)]`` in the fragment's order, each
    listing some id of ``top``'s subtree), or None when the first file's field is
    ``top`` exactly (read it as it is). ``where`` names the fragment in errors."""
    wanted = _ids(top)
    sources = []
    for fi, df, tops in files:
        listed = {int(x) for x in df.fields if x >= 0}
        tree = None if tops is None else next((f for f in tops if f.id == top.id), None)
        if tree is None:
            if not sources and len(files) == 1:
                return None  # a file without matching ids: read by position, as before
            raise NotSupportedError(
                f"{where}, data file {df.path!r}: the field ids of column {top.name!r} in "
                f"this file cannot be matched with the manifest's, so its nested fields "
                f"cannot be resolved by id")
        sources.append(Source(fi, tree.name, tree, _covered(tree, listed & wanted)))
    if not sources:
        return None
    if len(sources) == 1 and same_tree(sources[0].tree, top):
        return None
    return Resolution(top, tuple(sources))


def conform(columns: list, res: Resolution, *, where: str) -> pa.Array:
    """Assemble the dataset column ``res.top`` from ``columns`` (one array per source
    of ``res``, each the file's copy of the column as read, all of one length)."""
    nodes = [(i, _as_array(c), s.tree) for i, (c, s) in enumerate(zip(columns, res.sources))]
    return _conform(res.top, nodes, res, where)


def _as_array(col) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def _owner(node: LanceField, nodes: list, res: Resolution):
    """The first source node that covers ``node``'s id."""
    for i, arr, tree in nodes:
        if node.id in res.sources[i].covers:
            return i, arr, tree
    return None


def _conform(node: LanceField, nodes: list, res: Resolution, where: str) -> pa.Array:
    want = node.arrow.type
    owner = _owner(node, nodes, res)
    if owner is None:  # no file covers this field: it was added after they were written
        n = len(nodes[0][1]) if nodes else 0
        return pa.nulls(n, want)
    _, arr, tree = owner
    if not node.children or pa.types.is_map(want):
        if pa.types.is_map(want) and not same_tree(tree, node):
            raise NotSupportedError(f"{where}: the fields of map column {node.name!r} differ "
                                    f"from its data file's; they cannot be resolved by id")
        return _leaf(arr, want, node, where)
    kids = [(i, a, t) for i, a, t in nodes if _kind(t.arrow.type) == _kind(want)]
    if pa.types.is_struct(want):
        children = []
        for child in node.children:
            below = []
            for i, a, t in kids:
                pos = next((j for j, c in enumerate(t.children) if c.id == child.id), None)
                if pos is not None:
                    below.append((i, a.field(pos), t.children[pos]))
            if below:
                children.append(_conform(child, below, res, where))
            else:
                children.append(pa.nulls(len(arr), child.arrow.type))
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(want), mask=mask)
    # lists: the owner's offsets and validity; every source's values must line up
    item = node.children[0]
    below = []
    offsets = None
    for i, a, t in kids:
        if not t.children or t.children[0].id != item.id:
            continue
        vals, offs = _list_values(a)
        if offsets is None:
            offsets = offs
        elif offs is not None and not np.array_equal(offs, offsets):
            raise CorruptFileError(f"{where}: list column {node.name!r} has different "
                                   f"offsets in two of its data files")
        below.append((i, vals, t.children[0]))
    values = (_conform(item, below, res, where) if below
              else pa.nulls(0 if offsets is None else int(offsets[-1]), item.arrow.type))
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_fixed_size_list(want):
        return pa.FixedSizeListArray.from_arrays(values, type=want, mask=mask)
    otype = pa.int64() if pa.types.is_large_list(want) else pa.int32()
    offs = pa.array(_list_values(arr)[1] if offsets is None else offsets, otype)
    cls = pa.LargeListArray if pa.types.is_large_list(want) else pa.ListArray
    return cls.from_arrays(offs, values, type=want, mask=mask)


def _list_values(arr: pa.Array):
    """The values a list array's rows refer to, and offsets from zero into them (None
    for fixed-size lists)."""
    if pa.types.is_fixed_size_list(arr.type):
        size = arr.type.list_size
        return arr.values.slice(arr.offset * size, len(arr) * size), None
    offs = np.asarray(arr.offsets)
    base = int(offs[0]) if len(offs) else 0
    return arr.values.slice(base, int(offs[-1]) - base), (offs - base)


def _leaf(arr: pa.Array, want: pa.DataType, node: LanceField, where: str) -> pa.Array:
    if arr.type == want:
        return arr
    if pa.types.is_dictionary(arr.type) and arr.type.value_type == want:
        arr = arr.dictionary_decode()
    try:
        return pc.cast(arr, want)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise NotSupportedError(f"{where}: field {node.name!r} (id {node.id}) is "
                                f"{arr.type} in its data file, {want} in the schema") from e
