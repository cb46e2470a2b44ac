"""Arrow schema <-> Lance fields (``lance.file.Field``).

Lance stores a schema as a flat list of fields in pre-order (a parent, then its
children, depth first), ids counting from 0, ``parent_id`` -1 at the top level. Each
field carries a *logical type* string, e.g. ``int32``, ``float`` (float32),
``double``, ``timestamp:us:UTC``, ``decimal:128:38:10``, ``fixed_size_list:float:8``,
``dict:string:int32:false``. A list's child is named ``item``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from lancenb._proto import file_pb2
from lancenb.encodings.structural.blob import DESCRIPTION_V2, is_write_v2
from lancenb.errors import CorruptFileError, SchemaError
from lancenb.file.extensions import is_lance_json

__all__ = ["LanceField", "schema_to_fields", "fields_to_schema", "logical_type",
           "parse_logical_type", "has_map", "storage_type"]

_SIMPLE = {
    pa.null(): "null", pa.bool_(): "bool",
    pa.int8(): "int8", pa.uint8(): "uint8", pa.int16(): "int16", pa.uint16(): "uint16",
    pa.int32(): "int32", pa.uint32(): "uint32", pa.int64(): "int64", pa.uint64(): "uint64",
    pa.float16(): "halffloat", pa.float32(): "float", pa.float64(): "double",
    pa.string(): "string", pa.binary(): "binary", pa.large_string(): "large_string",
    pa.large_binary(): "large_binary", pa.date32(): "date32:day", pa.date64(): "date64:ms",
}
_SIMPLE_BACK = {v: k for k, v in _SIMPLE.items()}
_UNITS = ("s", "ms", "us", "ns")


_BF16 = b"lance.bfloat16"

def logical_type(dt: pa.DataType) -> str:
    """The Lance logical type string of an Arrow type."""
    if dt in _SIMPLE:
        return _SIMPLE[dt]
    if pa.types.is_time32(dt) or pa.types.is_time64(dt):
        return f"time{dt.bit_width}:{dt.unit}"
    if pa.types.is_timestamp(dt):
        return f"timestamp:{dt.unit}:{dt.tz if dt.tz is not None else '-'}"
    if pa.types.is_duration(dt):
        return f"duration:{dt.unit}"
    if pa.types.is_decimal128(dt):
        return f"decimal:128:{dt.precision}:{dt.scale}"
    if pa.types.is_decimal256(dt):
        return f"decimal:256:{dt.precision}:{dt.scale}"
    if pa.types.is_fixed_size_binary(dt):
        return f"fixed_size_binary:{dt.byte_width}"
    if pa.types.is_struct(dt):
        return "struct"
    if pa.types.is_map(dt):
        if dt.keys_sorted:
            raise SchemaError(f"map type {dt} has keys_sorted=true, which Lance cannot store")
        return "map"
    if pa.types.is_list(dt) or pa.types.is_large_list(dt):
        base = "list" if pa.types.is_list(dt) else "large_list"
        return base + (".struct" if pa.types.is_struct(dt.value_type) else "")
    if pa.types.is_fixed_size_list(dt):
        if (dt.value_field.metadata or {}).get(b"ARROW:extension:name") == _BF16:
            return f"fixed_size_list:lance.bfloat16:{dt.list_size}"  # (as pylance)
        return f"fixed_size_list:{logical_type(dt.value_type)}:{dt.list_size}"
    if pa.types.is_dictionary(dt):
        return f"dict:{logical_type(dt.value_type)}:{logical_type(dt.index_type)}:false"
    raise SchemaError(f"lancenb cannot store Arrow type {dt}")


def parse_logical_type(lt: str, children: list[pa.Field] | None = None) -> pa.DataType:
    """The Arrow type of a logical type string (``children`` for struct/list)."""
    if lt in _SIMPLE_BACK:
        return _SIMPLE_BACK[lt]
    if lt == "json":  # pylance's JSON column: JSONB bytes (tagged lance.json)
        return pa.large_binary()
    parts = lt.split(":")
    head = parts[0]
    try:
        if head in ("time32", "time64") and len(parts) == 2 and parts[1] in _UNITS:
            return (pa.time32 if head == "time32" else pa.time64)(parts[1])
        if head == "timestamp" and len(parts) >= 3 and parts[1] in _UNITS:
            tz = ":".join(parts[2:])
            return pa.timestamp(parts[1], None if tz == "-" else tz)
        if head == "duration" and len(parts) == 2 and parts[1] in _UNITS:
            return pa.duration(parts[1])
        if head == "decimal" and len(parts) == 4:
            ctor = {"128": pa.decimal128, "256": pa.decimal256}[parts[1]]
            return ctor(int(parts[2]), int(parts[3]))
        if head == "fixed_size_binary" and len(parts) == 2:
            return pa.binary(int(parts[1]))
        if head == "dict" and len(parts) == 4:
            return pa.dictionary(parse_logical_type(parts[2]), parse_logical_type(parts[1]))
        if head == "fixed_size_list" and len(parts) >= 3:
            inner = ":".join(parts[1:-1])
            if inner == "lance.bfloat16":  # bfloat16 items: tagged 2-byte storage
                return pa.list_(pa.field("item", pa.binary(2), metadata={
                    b"ARROW:extension:name": _BF16, b"ARROW:extension:metadata": b""}),
                    int(parts[-1]))
            if children:
                return pa.list_(children[0], int(parts[-1]))
            return pa.list_(parse_logical_type(inner), int(parts[-1]))
        if lt == "struct":
            return pa.struct(children or [])
        if lt == "map":
            entries = children[0].type if children and len(children) == 1 else None
            if (entries is None or not pa.types.is_struct(entries) or entries.num_fields != 2
                    or entries.field(0).nullable):
                raise CorruptFileError(f"map field needs one child struct<key not null, "
                                       f"value>, not {[str(c) for c in children or []]}")
            return pa.map_(entries.field(0), entries.field(1))
        if lt in ("list", "list.struct", "large_list", "large_list.struct"):
            if not children or len(children) != 1:
                raise CorruptFileError(f"list field has {len(children or [])} children, not 1")
            return (pa.list_ if lt.startswith("list") else pa.large_list)(children[0])
    except (KeyError, ValueError, pa.ArrowInvalid) as e:
        if isinstance(e, SchemaError):
            raise
        raise CorruptFileError(f"bad logical type {lt!r}: {e}") from e
    raise CorruptFileError(f"unknown logical type {lt!r}")


def has_map(dt: pa.DataType) -> bool:
    """Whether ``dt`` is or contains a map type."""
    if pa.types.is_map(dt):
        return True
    if pa.types.is_struct(dt):
        return any(has_map(dt.field(i).type) for i in range(dt.num_fields))
    if pa.types.is_list(dt) or pa.types.is_large_list(dt) or pa.types.is_fixed_size_list(dt):
        return has_map(dt.value_type)
    return False


def storage_type(dt: pa.DataType) -> pa.DataType:
    """``dt`` with every map replaced by ``list<entries: struct<key, value>>``.

    A map array has exactly the layout of that list (offsets, validity, one struct
    child), so ``array.view(storage_type(t))`` and back are free; Lance encodes a map
    as that list and records ``map`` as its logical type."""
    if pa.types.is_map(dt):
        entries = dt.field(0)
        return pa.list_(entries.with_type(storage_type(entries.type)))
    if pa.types.is_struct(dt):
        return pa.struct([f.with_type(storage_type(f.type)) for f in dt])
    if pa.types.is_list(dt) or pa.types.is_large_list(dt) or pa.types.is_fixed_size_list(dt):
        vf = dt.value_field.with_type(storage_type(dt.value_type))
        if pa.types.is_fixed_size_list(dt):
            return pa.list_(vf, dt.list_size)
        return (pa.list_ if pa.types.is_list(dt) else pa.large_list)(vf)
    return dt


_ENCODINGS: dict = {}  # type -> encoding (wide schemas repeat a few types many times)


def _encoding_of(dt: pa.DataType) -> int:
    enc = _ENCODINGS.get(dt)
    if enc is None:
        if pa.types.is_struct(dt) or pa.types.is_null(dt):
            enc = file_pb2.NONE
        elif pa.types.is_dictionary(dt):
            enc = file_pb2.DICTIONARY
        elif (pa.types.is_string(dt) or pa.types.is_binary(dt)
              or pa.types.is_large_string(dt) or pa.types.is_large_binary(dt)):
            enc = file_pb2.VAR_BINARY
        else:
            enc = file_pb2.PLAIN
        if len(_ENCODINGS) < 4096:
            _ENCODINGS[dt] = enc
    return enc


@dataclass
class LanceField:
    """One field of a Lance schema, with its children (a tree view of the flat list)."""

    id: int
    name: str
    arrow: pa.Field
    children: list["LanceField"] = field(default_factory=list)

    @property
    def storage(self) -> pa.Field:
        """The field as it is encoded: maps become the lists of ``entries`` structs
        they are laid out as (see :func:`storage_type`)."""
        if not has_map(self.arrow.type):
            return self.arrow
        return self.arrow.with_type(storage_type(self.arrow.type))

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


class _Fields(list):
    """Field protos in pre-order, and the next field id (ids count fields, except that
    a blob v2 column's description fields take none and its dataset children two)."""

    next_id = 0

    def take_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1


def _flatten_blob_v2(f: pa.Field, parent: int, out: list) -> LanceField:
    """A file writer's blob v2 column, as pylance 14 lists it in a data file: a
    ``struct`` marked packed and blob, then its description's fields (kind, position,
    size, blob_id, blob_uri) with id -1 and parent id -1."""
    lf = LanceField(out.take_id(), f.name, f)
    out.take_id()  # the dataset schema's data and uri children (the manifest's ids)
    out.take_id()
    msg = file_pb2.Field(name=f.name, id=lf.id, parent_id=parent, logical_type="struct",
                         nullable=f.nullable, encoding=file_pb2.NONE)
    msg.metadata["lance-encoding:packed"] = b"true"
    msg.metadata["lance-encoding:blob"] = b"true"
    out.append(msg)
    for c in DESCRIPTION_V2:
        out.append(file_pb2.Field(name=c.name, id=-1, parent_id=-1,
                                  logical_type=logical_type(c.type), nullable=c.nullable,
                                  encoding=_encoding_of(c.type)))
    return lf


def _flatten(f: pa.Field, parent: int, out: list) -> LanceField:
    dt = f.type
    if is_write_v2(f):
        return _flatten_blob_v2(f, parent, out)
    lf = LanceField(out.take_id(), f.name, f)
    lt = "json" if is_lance_json(f) else logical_type(dt)  # (JSONB bytes, as pylance)
    msg = file_pb2.Field(name=f.name, id=lf.id, parent_id=parent, logical_type=lt,
                         nullable=f.nullable, encoding=_encoding_of(dt))
    for k, v in (f.metadata or {}).items():
        msg.metadata[k.decode("utf-8", "replace") if isinstance(k, bytes) else k] = (
            v if isinstance(v, bytes) else str(v).encode())
    out.append(msg)
    if pa.types.is_struct(dt):
        lf.children = [_flatten(dt.field(i), lf.id, out) for i in range(dt.num_fields)]
    elif pa.types.is_map(dt):
        lf.children = [_flatten(dt.field(0), lf.id, out)]  # entries: struct<key, value>
    elif pa.types.is_list(dt) or pa.types.is_large_list(dt) or (
            pa.types.is_fixed_size_list(dt) and pa.types.is_struct(dt.value_type)):
        # (a fixed-size list of structs lists its item, as pylance 2.2 writes it)
        lf.children = [_flatten(dt.value_field.with_name("item"), lf.id, out)]
    return lf


def schema_to_fields(schema: pa.Schema) -> tuple[list, list[LanceField]]:
    """Flatten an Arrow schema: ``(Field protos in pre-order, top-level LanceFields)``."""
    out = _Fields()
    tops = [_flatten(f, -1, out) for f in schema]
    return list(out), tops


def _is_blob_v2_file_field(f) -> bool:
    """A 2.2 data file's blob v2 column: a packed ``struct`` field with
    ``lance-encoding:blob``, whose descriptor children pylance 14 lists right after it
    with id -1 and parent id -1 (``kind, position, size, blob_id, blob_uri``)."""
    return f.logical_type == "struct" and "lance-encoding:blob" in f.metadata


class FieldList(list):
    """The top-level fields of a schema (a list of :class:`LanceField`), plus what is
    derived from them once: schemas are rebuilt once per distinct schema message
    (:func:`lancenb.file.metadata.cached_fields_to_schema`), so every reader of one
    dataset's files shares one list, and a 2,000-field name index is built once, not
    on every open. Derived values must not be mutated."""

    __slots__ = ("_derived",)

    def derived(self, key, build):
        """The value ``build()`` gave for ``key`` the first time it was asked for."""
        cache = getattr(self, "_derived", None)
        if cache is None:
            cache = self._derived = {}
        hit = cache.get(key)
        if hit is None:
            hit = cache[key] = build()
        return hit

    def name_index(self) -> dict:
        """name -> position of the first field of that name."""
        def build():
            index: dict[str, int] = {}
            for i, f in enumerate(self):
                index.setdefault(f.name, i)
            return index
        return self.derived("name_index", build)


def fields_to_schema(fields, metadata=None) -> tuple[pa.Schema, list[LanceField]]:
    """Rebuild the Arrow schema from flat Field protos (as read from a file)."""
    by_parent: dict[int, list] = {}
    ids = set()
    blob_owner = None  # the blob v2 struct whose id -1 children follow
    for f in fields:
        if f.id == -1 and f.parent_id == -1 and blob_owner is not None:
            by_parent.setdefault(("blob", blob_owner), []).append(f)
            continue
        blob_owner = f.id if _is_blob_v2_file_field(f) else None
        if f.id in ids:
            raise CorruptFileError(f"schema has field id {f.id} twice")
        ids.add(f.id)
        by_parent.setdefault(f.parent_id, []).append(f)

    def build(f, depth: int) -> LanceField:
        if depth > 64:
            raise CorruptFileError("schema nesting is deeper than 64 levels")
        if f.id == -1:
            kids = []
        elif _is_blob_v2_file_field(f) and ("blob", f.id) in by_parent:
            kids = [build(c, depth + 1) for c in by_parent[("blob", f.id)]]
        else:
            kids = [build(c, depth + 1) for c in by_parent.get(f.id, [])]
        dt = parse_logical_type(f.logical_type, [k.arrow for k in kids])
        md = {k: bytes(v) for k, v in f.metadata.items()} or None
        try:
            arrow = pa.field(f.name, dt, f.nullable, metadata=md)
        except (ValueError, TypeError, pa.ArrowException) as e:  # e.g. a non-nullable null
            raise CorruptFileError(f"schema field {f.name!r} (id {f.id}): {e}") from e
        return LanceField(f.id, f.name, arrow, kids)

    tops = FieldList(build(f, 0) for f in by_parent.get(-1, []))
    md = {k: bytes(v) for k, v in (metadata or {}).items()} or None
    return pa.schema([t.arrow for t in tops], metadata=md), tops
