"""Fields inside struct columns named by their path (``"s.a.b"``), as pylance takes
them in ``columns``: scans give a column named by the path (the scanner turns such a
list into a projection), takes give each struct column pruned to the fields asked for.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["ROW_ID", "ROW_ADDR", "ROW_OFFSET", "struct_path", "quoted", "nested_request",
           "prune_nested"]

ROW_ID = "_rowid"
ROW_ADDR = "_rowaddr"
# a row's position among the live rows of the dataset version (not stored)
ROW_OFFSET = "_rowoffset"


def struct_path(schema: pa.Schema, name) -> list[str] | None:
    """``name`` ("s.a.b") as the path of a field inside a top-level struct column, or
    None when it names none."""
    if not isinstance(name, str) or "." not in name:
        return None
    parts = name.split(".")
    if not schema.get_all_field_indices(parts[0]):
        return None
    t = schema.field(parts[0]).type
    for p in parts[1:]:
        if not pa.types.is_struct(t) or t.get_field_index(p) < 0:
            return None
        t = t.field(p).type
    return parts


def quoted(identifier: str) -> str:
    """``identifier`` quoted for the SQL engine (MySQL dialect backticks)."""
    return "`" + identifier.replace("`", "``") + "`"


_ALL = None  # a requested field taken whole (in nested_request's trees)


def nested_request(schema: pa.Schema, columns):
    """Takes of fields inside structs (``columns=["s.a", "id"]``), as pylance answers
    them: each struct column comes back pruned to the fields asked for (in the schema's
    order), at its first place in ``columns``. ``(top-level columns, {column: tree})``,
    a tree a dict of child name -> tree (``None``: the whole field); None when
    ``columns`` names no nested field (or is a projection dict)."""
    if columns is None or isinstance(columns, dict):
        return None
    paths = []
    for c in columns:
        if c in (ROW_ID, ROW_ADDR) or (isinstance(c, str) and schema.get_all_field_indices(c)):
            paths.append([c])
            continue
        path = struct_path(schema, c)
        if path is None:
            return None  # (the scanner names the unknown column)
        paths.append(path)
    if all(len(p) == 1 for p in paths):
        return None
    tops: list = []
    trees: dict = {}
    for path in paths:
        top = path[0]
        if top not in tops:
            tops.append(top)
            trees[top] = {}
        if len(path) == 1:
            trees[top] = _ALL
            continue
        node = trees[top]
        for name in path[1:-1]:
            if node is _ALL:
                break
            node = node.setdefault(name, {})
        if node is not _ALL:
            node[path[-1]] = _ALL
    return tops, {k: v for k, v in trees.items() if v is not _ALL}


def _prune(arr, tree):
    if tree is _ALL:
        return arr
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([_prune(c, tree) for c in arr.chunks])
    kids = arr.flatten()  # (the struct's offset applied)
    t = arr.type
    keep = [i for i in range(t.num_fields) if t.field(i).name in tree]
    children = [_prune(kids[i], tree[t.field(i).name]) for i in keep]
    fields = [t.field(i).with_type(c.type) for i, c in zip(keep, children)]
    mask = pc.invert(arr.is_valid()) if arr.null_count else None
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)


def prune_nested(table: pa.Table, trees: dict) -> pa.Table:
    """``table`` with each struct column of ``trees`` pruned to its requested fields
    (see :func:`nested_request`)."""
    for name, tree in trees.items():
        i = table.schema.get_field_index(name)
        col = _prune(table.column(i), tree)
        table = table.set_column(i, table.schema.field(i).with_type(col.type), col)
    return table
