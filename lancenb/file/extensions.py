"""Arrow extension types in a Lance schema.

Lance stores an extension-typed field as its *storage* type, with the extension's name
and serialized parameters in the field's metadata under ``ARROW:extension:name`` and
``ARROW:extension:metadata`` (what Arrow's C data interface and IPC do, and what pylance
14 writes: a ``uuid`` column is a ``fixed_size_binary(16)`` field so tagged, a
``fixed_shape_tensor`` a fixed-size list, a blob v2 column a struct). Arrow's
``arrow.json`` is the exception: pylance stores JSON text as JSONB in a ``large_binary``
field tagged ``lance.json`` (logical type ``json``), and reads it back as text; the
conversions are :mod:`lancenb.file.jsonb`'s, applied by :func:`storage_batch` on write
and :func:`with_extension_types` on read.

:func:`storage_schema` turns a writer's input schema into that form (``None`` when it
has no extension type, the common case, which then costs one pass over the fields);
:func:`extension_schema` turns a stored schema back into extension types for the ones
pyarrow knows (registered Python extension types and Arrow's canonical ones), leaving
unknown extensions as storage type plus metadata.

pyarrow exposes an extension's serialized parameters only through the C data interface
for the C++ types (``uuid``, ``fixed_shape_tensor``, ``bool8``, ``json``, ``opaque``):
:func:`_exported_metadata` reads them from the exported ``ArrowSchema`` struct, whose
layout the Arrow C data interface fixes.
"""

from __future__ import annotations

import ctypes

import pyarrow as pa

from lancenb.file import jsonb
from lancenb.file.jsonb import ARROW_JSON, EXT_METADATA, EXT_NAME, LANCE_JSON

__all__ = ["storage_schema", "extension_schema", "has_extension_metadata", "EXT_NAME",
           "EXT_METADATA", "public_columns", "public_schema", "with_extension_types",
           "extension_names", "holds_lance_json", "LANCE_JSON", "storage_batch",
           "is_lance_json"]


class _ArrowSchema(ctypes.Structure):
    """The Arrow C data interface's ``struct ArrowSchema``."""


_ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_void_p),
    ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64),
    ("children", ctypes.c_void_p), ("dictionary", ctypes.c_void_p),
    ("release", ctypes.CFUNCTYPE(None, ctypes.POINTER(_ArrowSchema))),
    ("private_data", ctypes.c_void_p),
]


def _exported_metadata(t: pa.DataType) -> dict[bytes, bytes]:
    """The metadata pyarrow attaches to ``t`` when exporting it through the C data
    interface (an int32 pair count, then int32-length-prefixed keys and values)."""
    c = _ArrowSchema()
    t._export_to_c(ctypes.addressof(c))
    try:
        out: dict[bytes, bytes] = {}
        p = c.metadata
        if not p:
            return out
        off = 4
        for _ in range(ctypes.c_int32.from_address(p).value):
            n = ctypes.c_int32.from_address(p + off).value
            key = ctypes.string_at(p + off + 4, n)
            off += 4 + n
            n = ctypes.c_int32.from_address(p + off).value
            out[key] = ctypes.string_at(p + off + 4, n)
            off += 4 + n
        return out
    finally:
        c.release(ctypes.byref(c))


def _extension_tags(t: pa.BaseExtensionType) -> dict[bytes, bytes]:
    if isinstance(t, pa.ExtensionType):  # defined in Python: serializes itself
        return {EXT_NAME: t.extension_name.encode(),
                EXT_METADATA: t.__arrow_ext_serialize__()}
    md = _exported_metadata(t)
    return {EXT_NAME: md.get(EXT_NAME, t.extension_name.encode()),
            EXT_METADATA: md.get(EXT_METADATA, b"")}


def _storage_field(f: pa.Field) -> pa.Field | None:
    """``f`` with every extension type in it replaced, or ``None`` if it has none."""
    t = f.type
    if isinstance(t, pa.BaseExtensionType):
        if t.extension_name == ARROW_JSON.decode():  # JSONB, as pylance stores it
            return jsonb.jsonb_field(f)
        md = dict(f.metadata or {})
        md.update(_extension_tags(t))
        plain = pa.field(f.name, t.storage_type, f.nullable, md)
        return _storage_field(plain) or plain
    nt = _storage_type(t)
    return None if nt is None else f.with_type(nt)


# type ids that can hold an extension type below them; any other non-extension type is
# left as it is without the four ``pa.types`` tests (wide schemas: thousands of columns)
_NESTED_IDS = frozenset(t.id for t in (
    pa.struct([]), pa.map_(pa.int8(), pa.int8()), pa.list_(pa.int8()),
    pa.large_list(pa.int8()), pa.list_(pa.int8(), 1)))


def _storage_type(t: pa.DataType) -> pa.DataType | None:
    """``t`` with every nested extension field replaced, or ``None`` if it has none."""
    if t.id not in _NESTED_IDS:
        return None
    if pa.types.is_struct(t):
        fields = [t.field(i) for i in range(t.num_fields)]
        new = [_storage_field(f) for f in fields]
        if all(n is None for n in new):
            return None
        return pa.struct([n or f for n, f in zip(new, fields)])
    if pa.types.is_map(t):
        k, v = _storage_field(t.key_field), _storage_field(t.item_field)
        if k is None and v is None:
            return None
        return pa.map_(k or t.key_field, v or t.item_field, keys_sorted=t.keys_sorted)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        v = _storage_field(t.value_field)
        if v is None:
            return None
        if pa.types.is_fixed_size_list(t):
            return pa.list_(v, t.list_size)
        return pa.large_list(v) if pa.types.is_large_list(t) else pa.list_(v)
    return None


def storage_schema(schema: pa.Schema) -> pa.Schema | None:
    """``schema`` with every extension type (at any depth) replaced by its storage type
    tagged with the extension's name and parameters (``arrow.json``: JSONB in
    ``large_binary``, tagged ``lance.json``, as pylance stores it); ``None`` when there
    is none."""
    fields = list(schema)
    new = [_storage_field(f) for f in fields]
    if all(n is None for n in new):
        return None
    return pa.schema([n or f for n, f in zip(new, fields)], metadata=schema.metadata)


def storage_batch(batch: pa.RecordBatch, stored: pa.Schema, *,
                  first_row: int = 0) -> pa.RecordBatch:
    """``batch`` (of a schema whose :func:`storage_schema` is ``stored``) in its stored
    form: ``arrow.json`` values encoded as JSONB (invalid JSON is an
    :class:`~lancenb.errors.InvalidInputError` naming the column and the row,
    ``first_row`` + its position), other extension arrays as their storage (no copy)."""
    cols = [i for i, f in enumerate(batch.schema) if jsonb.holds(f, ARROW_JSON)]
    for i in cols:
        f = batch.schema.field(i)
        arr = jsonb.jsonb_array(batch.column(i), f, first_row=first_row)
        batch = batch.set_column(i, f.with_type(arr.type), arr)
    return batch.cast(stored)


def _fields_below(f: pa.Field):
    """``f`` and every field nested in it (struct children, map keys and items, list
    items), depth first."""
    yield f
    t = f.type
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            yield from _fields_below(t.field(i))
    elif pa.types.is_map(t):
        yield from _fields_below(t.key_field)
        yield from _fields_below(t.item_field)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        yield from _fields_below(t.value_field)


def extension_names(f: pa.Field) -> list[bytes]:
    """The extension names tagged on ``f`` and the fields nested in it."""
    if not f.metadata and f.type.id not in _NESTED_IDS:  # (most fields of wide schemas)
        return []
    return [g.metadata[EXT_NAME] for g in _fields_below(f)
            if g.metadata and EXT_NAME in g.metadata]


def has_extension_metadata(schema: pa.Schema) -> bool:
    """Whether any field of ``schema``, at any depth, carries an extension name."""
    return any(extension_names(f) for f in schema)


def extension_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with fields tagged by a known extension name (at any depth) turned back
    into that extension type. The schema goes out and back in through the C data
    interface, whose import resolves registered and canonical extensions and keeps the
    tags of unknown ones."""
    if not has_extension_metadata(schema):
        return schema
    c = _ArrowSchema()
    schema._export_to_c(ctypes.addressof(c))
    return pa.Schema._import_from_c(ctypes.addressof(c))  # takes ownership: no release


# Lance's own extensions (the 2.2 blob v2 column, ``lance.blob.v2``; ``lance.json``):
# lancenb reads those columns itself (lancenb.dataset.read.blob; JSONB is decoded here), they
# are not turned into whatever Python type another library registered under the name.
# (lance.bfloat16 and lance.arrow.* are ordinary extension types: lancenb.arrow's.)
_OWN_PREFIX = (b"lance.blob.", b"lance.json")


def _public_field(f: pa.Field, json: bool) -> bool:
    """Whether ``f`` (at any depth) carries another library's extension tag, or with
    ``json`` pylance's JSON, and no other of Lance's own."""
    names = extension_names(f)
    own = [n for n in names if n.startswith(_OWN_PREFIX)]
    if json:
        return bool(names) and all(n == LANCE_JSON for n in own)
    return bool(names) and not own


def public_columns(schema: pa.Schema, *, json: bool = True) -> list[int]:
    """The top-level fields of a stored schema that read back as extension types: those
    tagged (at any depth) with an extension name that is not one of Lance's own, and
    with ``json`` those holding JSON (``lance.json``, read back as ``arrow.json`` text:
    what datasets return; a file reader returns the JSONB, as pylance's)."""
    if not has_extension_metadata(schema):
        return []
    return [i for i, f in enumerate(schema) if _public_field(f, json)]


def _import_field(f: pa.Field) -> pa.Field:
    c = _ArrowSchema()
    pa.schema([f])._export_to_c(ctypes.addressof(c))
    return pa.Schema._import_from_c(ctypes.addressof(c)).field(0)


def public_schema(schema: pa.Schema, cols: list[int] | None = None) -> pa.Schema:
    """``schema`` with the fields :func:`public_columns` names as extension types (the
    ones pyarrow knows: registered and canonical; unknown ones stay tagged storage)."""
    cols = public_columns(schema) if cols is None else cols
    if not cols:
        return schema
    fields = list(schema)
    for i in cols:
        f = jsonb.text_field(fields[i])  # (JSON first: its tags go, the others stay)
        fields[i] = _import_field(f) if extension_names(f) else f
    return pa.schema(fields, metadata=schema.metadata)


def with_extension_types(data, cols: list[int], *, where: str = "data"):
    """A Table or RecordBatch read in its stored schema, with columns ``cols`` (see
    :func:`public_columns`) as extension arrays: JSONB decoded to ``arrow.json`` text
    (``where`` names the data in errors), then each column with other extensions goes
    out and back in through the C data interface with its tagged field, which makes
    the extension arrays over the same buffers (no copy)."""
    for i in cols:
        f = data.schema.field(i)
        if jsonb.holds(f, LANCE_JSON):
            arr = jsonb.text_array(data.column(i), f, where=where)
            f = jsonb.text_field(f)
            data = data.set_column(i, f, arr)
            if not extension_names(f):
                continue
        if isinstance(data, pa.RecordBatch):
            one = pa.RecordBatch.from_arrays([data.column(i)], schema=pa.schema([f]))
            got = pa.RecordBatch._import_from_c_capsule(*one.__arrow_c_array__())
            data = data.set_column(i, got.schema.field(0), got.column(0))
        else:
            one = pa.Table.from_arrays([data.column(i)], schema=pa.schema([f]))
            got = pa.RecordBatchReader._import_from_c_capsule(one.__arrow_c_stream__())
            got = got.read_all()
            data = data.set_column(i, got.schema.field(0), got.column(0))
    return data


def holds_lance_json(f: pa.Field) -> bool:
    """Whether ``f`` is, or holds, one of pylance's JSON columns (``lance.json``: JSONB
    bytes, read back as ``arrow.json`` text)."""
    return LANCE_JSON in extension_names(f)


def is_lance_json(f: pa.Field) -> bool:
    """Whether ``f`` itself is one of pylance's JSON fields (manifest logical type
    ``json``)."""
    return jsonb.is_json(f, LANCE_JSON)
