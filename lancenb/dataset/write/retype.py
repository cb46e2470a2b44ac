"""Type changes of columns at any depth (``alter_columns`` with ``data_type``), planned.

A changed field gets a new field id and its values, cast, are written to one new data
file per fragment; the old values stay in the old files under the old id, which the
schema no longer has. A field inside a struct (``meta.age``) is written under its
ancestors, which keep their ids and carry only the path down to it:

    meta: struct<name (2), age (3): int64>  (id 1)   ->   cast meta.age to int32
    new files: meta (1): struct<age (7): int32>       (DataFile.fields [7] in 2.1+)
    schema:    meta (1): struct<name (2), age (7)>

which is what pylance writes, and what readers resolve by id
(:mod:`lancenb.dataset.read.field_ids`). In 2.0 datasets pylance cannot read such a
struct back from two files, so there the whole top-level column is rewritten under
new ids instead (every reader reads one file per column again).

This module only plans (types, field protos, the new schema); the dataset's schema
evolution writes and commits.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from lancenb.errors import InvalidInputError
from lancenb.file.schema import LanceField, schema_to_fields

__all__ = ["RetypePlan", "plan_retype"]


@dataclass(frozen=True)
class RetypePlan:
    """``read``: the top-level columns to read (the dataset's current names);
    ``cast_types``: for each, the type to cast it to (current names, only the paths
    to changed fields, changed fields with their new types); ``schema`` and
    ``fields``: the new files' Arrow schema (altered names) and Field protos (ids as
    above); ``dataset_fields``: the dataset's new schema as Field protos."""

    read: list
    cast_types: list
    schema: pa.Schema
    fields: list
    dataset_fields: list


def plan_retype(tops: list, fields: list, targets: dict, first_id: int, *,
                whole_columns: bool) -> RetypePlan:
    """Plan changing the types of fields ``targets`` (field id -> new Arrow type).

    ``tops``: the dataset's top-level :class:`LanceField` trees (current names and
    types); ``fields``: the dataset's Field protos with this call's other alterations
    (renames, nullability) applied; ``first_id``: the first unused field id;
    ``whole_columns``: rewrite whole top-level columns (2.0 datasets)."""
    by_id = {f.id: f for f in fields}
    if whole_columns:
        targets = _whole(tops, targets)
    read, cast_types, new_fields, keep = [], [], [], {}
    for top in tops:
        got = _prune(top, targets, by_id, (), keep)
        if got is None:
            continue
        old_field, new_field = got
        read.append(top.name)
        cast_types.append(old_field.type)
        new_fields.append(new_field)
    schema = pa.schema(new_fields)
    protos, _ = schema_to_fields(schema)
    # ids: the kept ancestors their own, changed fields and what is below them new ones
    assigned: dict[int, int] = {}
    path_of: dict[int, tuple] = {}
    next_id = first_id
    for p in protos:
        path = (path_of[p.parent_id] if p.parent_id != -1 else ()) + (p.name,)
        path_of[p.id] = path
        if path in keep:
            assigned[p.id] = keep[path]
        else:
            assigned[p.id] = next_id
            next_id += 1
    for p in protos:
        p.id, p.parent_id = assigned[p.id], (assigned[p.parent_id] if p.parent_id != -1
                                             else -1)
        if p.id in by_id:  # a kept ancestor: its metadata and nullability as in the schema
            p.nullable = by_id[p.id].nullable
    kept_ids = set(keep.values())
    new_of = {}  # changed field id -> its new protos (itself first, then its subtree)
    for p in protos:
        if p.id not in kept_ids and p.parent_id in kept_ids | {-1}:
            new_of[_target_at(by_id, fields, p)] = [p]
        elif p.id not in kept_ids:
            for group in new_of.values():
                if any(q.id == p.parent_id for q in group):
                    group.append(p)
                    break
    out, skip = [], set()
    for f in fields:
        if f.id in skip or f.parent_id in skip:
            skip.add(f.id)
            continue
        if f.id in new_of:
            out.extend(new_of[f.id])
            skip.add(f.id)
        else:
            out.append(f)
    return RetypePlan(read, cast_types, schema, protos, out)


def _target_at(by_id: dict, fields: list, proto) -> int:
    """The id of the changed field whose new proto is ``proto`` (same parent, same
    name in the altered schema)."""
    for f in fields:
        if f.parent_id == proto.parent_id and f.name == proto.name:
            return f.id
    raise InvalidInputError(f"cannot change the type of {proto.name!r}: not in the schema")


def _whole(tops: list, targets: dict) -> dict:
    """Targets widened to their top-level columns, each with its full new type."""
    out = {}
    for top in tops:
        if any(f.id in targets for f in top.walk()):
            out[top.id] = _replaced(top, targets).type
    return out


def _replaced(node: LanceField, targets: dict) -> pa.Field:
    if node.id in targets:
        return node.arrow.with_type(targets[node.id])
    if not node.children:
        return node.arrow
    return node.arrow.with_type(_rebuild(node, [_replaced(c, targets) for c in node.children]))


def _rebuild(node: LanceField, children: list) -> pa.DataType:
    t = node.arrow.type
    if pa.types.is_struct(t):
        return pa.struct(children)
    if pa.types.is_fixed_size_list(t):
        return pa.list_(children[0], t.list_size)
    if pa.types.is_large_list(t):
        return pa.large_list(children[0])
    if pa.types.is_list(t):
        return pa.list_(children[0])
    raise InvalidInputError(f"cannot change the type of a field inside {node.name!r} ({t})")


def _prune(node: LanceField, targets: dict, by_id: dict, path: tuple, keep: dict):
    """``(current field, altered field)`` of ``node`` cut down to the paths that lead
    to changed fields, or None when none is below it; ``keep`` collects the altered
    path -> id of every kept ancestor."""
    new_name = by_id[node.id].name if node.id in by_id else node.name
    if node.id in targets:
        typ = targets[node.id]
        return node.arrow.with_type(typ), node.arrow.with_type(typ).with_name(new_name)
    if not node.children:
        return None
    here = path + (new_name,)
    below = [_prune(c, targets, by_id, here, keep) for c in node.children]
    got = [b for b in below if b is not None]
    if not got:
        return None
    if pa.types.is_map(node.arrow.type):
        raise InvalidInputError(f"cannot change the type of a field inside map column "
                                f"{node.name!r}")
    if not pa.types.is_struct(node.arrow.type) and len(got) != len(below):
        return None
    keep[here] = node.id
    old = node.arrow.with_type(_rebuild(node, [o for o, _ in got]))
    new = node.arrow.with_type(_rebuild(node, [n for _, n in got])).with_name(new_name)
    return old, new
