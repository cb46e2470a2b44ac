"""Readable dumps of a dataset's metadata, as pylance's ``lance.debug``.

pylance prints its Rust structures with Rust's pretty ``Debug`` (``{:#?}``); lancenb
prints the same records in the same notation, built from the manifest protobuf and
the public fragment and transaction objects, so the outline a reader (or a test)
relies on is the same: ``Schema { fields: [ Field { name: "a", id: 0, parent_id: -1,
logical_type: LogicalType("int64"), ... } ] }``, ``Manifest { ... fragments: [
Fragment { ... } ] }``, ``PrettyPrintableFragment { ... }`` and one ``Transaction {
... operation: Append { ... } }`` per version. Field by field the content is the
manifest's; what is Rust-internal (``CachedFileSize``, encoding enums) is spelled as
pylance spells it, and an operation's fields are lancenb's ``LanceOperation``
dataclass fields (see docs/parity.md).

Examples
--------
>>> print(render(Struct("Point", [("x", 1), ("tags", [])])))
Point {
    x: 1,
    tags: [],
}
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa

from lancenb.file.schema import schema_to_fields
from lancenb.table.fragments import FragmentMetadata

__all__ = ["format_schema", "format_manifest", "format_fragment", "list_transactions",
           "Struct", "Tuple", "Word", "render"]

_INDENT = "    "


@dataclasses.dataclass
class Struct:
    """A named record: ``Name { key: value, ... }``."""

    name: str
    items: list


@dataclasses.dataclass
class Tuple:
    """A tuple record: ``Name(value, ...)`` (``Some(x)``, ``LogicalType("int64")``)."""

    name: str
    items: list


@dataclasses.dataclass
class Word:
    """A bare name: an enum value such as ``None``, ``Plain`` or ``V2_2``."""

    name: str


def _some(value):
    return Word("None") if value is None else Tuple("Some", [value])


def _string(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _block(opening: str, closing: str, lines: list[str], pad: str) -> str:
    inner = "".join(f"{pad}{_INDENT}{line},\n" for line in lines)
    return f"{opening}\n{inner}{pad}{closing}"


def render(value, pad: str = "") -> str:
    """``value`` in Rust's pretty ``Debug`` notation (nested at indent ``pad``)."""
    deeper = pad + _INDENT
    if isinstance(value, Struct):
        if not value.items:
            return value.name
        return _block(value.name + " {", "}", [f"{k}: {render(v, deeper)}"
                                               for k, v in value.items], pad)
    if isinstance(value, Tuple):
        return _block(value.name + "(", ")", [render(v, deeper) for v in value.items], pad)
    if isinstance(value, Word):
        return value.name
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, bytes):
        return render(list(value), pad)
    if isinstance(value, float):
        return repr(value) if value != int(value) else f"{value:.1f}"
    if isinstance(value, (list, tuple)):
        return "[]" if not value else _block("[", "]", [render(v, deeper) for v in value],
                                             pad)
    if isinstance(value, dict):
        return "{}" if not value else _block(
            "{", "}", [f"{render(k, deeper)}: {render(v, deeper)}" for k, v in value.items()],
            pad)
    return str(value)


# -- records ---------------------------------------------------------------------------
_ENCODINGS = {0: None, 1: "Plain", 2: "VarBinary", 3: "Dictionary", 4: "RLE"}


def _field_struct(f, fields) -> Struct:
    children = [_field_struct(c, fields) for c in fields if c.parent_id == f.id]
    encoding = _ENCODINGS.get(int(f.encoding))
    return Struct("Field", [
        ("name", f.name), ("id", int(f.id)), ("parent_id", int(f.parent_id)),
        ("logical_type", Tuple("LogicalType", [f.logical_type])),
        ("metadata", {k: v.decode("utf-8", "replace") for k, v in sorted(f.metadata.items())}),
        ("encoding", _some(Word(encoding) if encoding else None)),
        ("nullable", bool(f.nullable)), ("children", children),
        ("dictionary", Word("None")),
        ("unenforced_primary_key_position", _some(int(f.unenforced_primary_key_position) or None)),
        ("unenforced_clustering_key_position",
         _some(int(f.unenforced_clustering_key_position) or None)),
    ])


def _schema_struct(fields, metadata=None) -> Struct:
    fields = list(fields)
    ids = {int(f.id) for f in fields}
    top = [f for f in fields if int(f.parent_id) not in ids]
    meta = {(k.decode() if isinstance(k, bytes) else k): (v.decode("utf-8", "replace")
                                                          if isinstance(v, bytes) else v)
            for k, v in sorted((metadata or {}).items())}
    return Struct("Schema", [("fields", [_field_struct(f, fields) for f in top]),
                             ("metadata", meta)])


def _fields_of(schema):
    """Lance field protobufs of a schema given as a pyarrow schema, a LanceSchema or
    a list of field protobufs."""
    if isinstance(schema, pa.Schema):
        return schema_to_fields(schema)[0], schema.metadata
    if hasattr(schema, "to_pyarrow"):
        arrow = schema.to_pyarrow()
        return schema_to_fields(arrow)[0], arrow.metadata
    return list(schema or []), None


def _deletion_struct(d) -> Struct:
    return Struct("DeletionFile", [
        ("read_version", int(d.read_version)), ("id", int(d.id)),
        ("file_type", Word(str(d.file_type).capitalize())),
        ("num_deleted_rows", _some(d.num_deleted_rows)), ("base_id", _some(d.base_id))])


def _data_file_struct(df) -> Struct:
    return Struct("DataFile", [
        ("path", df.path), ("fields", list(df.fields)),
        ("column_indices", list(df.column_indices)),
        ("file_major_version", int(df.file_major_version)),
        ("file_minor_version", int(df.file_minor_version)),
        ("file_size_bytes", Tuple("CachedFileSize", [int(df.file_size_bytes or 0)])),
        ("base_id", _some(df.base_id))])


def _meta_seq(x):
    return Word("None") if x is None else _some(Word(type(x).__name__))


def _fragment_struct(frag: FragmentMetadata) -> Struct:
    deletion = frag.deletion_file
    return Struct("Fragment", [
        ("id", int(frag.id)), ("files", [_data_file_struct(df) for df in frag.files]),
        ("overlays", list(frag.overlays or [])),
        ("deletion_file", _some(_deletion_struct(deletion) if deletion else None)),
        ("row_id_meta", _meta_seq(frag.row_id_meta)),
        ("physical_rows", _some(frag.physical_rows)),
        ("last_updated_at_version_meta", _meta_seq(frag.last_updated_at_version_meta)),
        ("created_at_version_meta", _meta_seq(frag.created_at_version_meta))])


def _storage_version(label: str) -> Word:
    return Word("Legacy" if label in ("", "0.1") else "V" + label.replace(".", "_"))


def _manifest_struct(ds) -> Struct:
    m = ds.manifest
    wv = m.writer_version
    frags = [FragmentMetadata.from_pb(f) for f in m.fragments]
    offsets = [0]  # where each fragment's live rows start
    for f in frags:
        offsets.append(offsets[-1] + f.num_rows)
    ts = m.timestamp.seconds * 1_000_000_000 + m.timestamp.nanos
    return Struct("Manifest", [
        ("schema", _schema_struct(m.fields, dict(m.schema_metadata))),
        ("version", int(m.version)), ("branch", _some(m.branch or None)),
        ("writer_version", _some(Struct("WriterVersion", [
            ("library", wv.library), ("version", wv.version),
            ("prerelease", _some(wv.prerelease or None)),
            ("build_metadata", _some(wv.build_metadata or None))]) if wv.library else None)),
        ("fragments", [_fragment_struct(f) for f in frags]),
        ("version_aux_data", int(m.version_aux_data)),
        ("index_section", _some(int(m.index_section) if m.HasField("index_section")
                                else None)),
        ("timestamp_nanos", ts), ("tag", _some(m.tag or None)),
        ("reader_feature_flags", int(m.reader_feature_flags)),
        ("writer_feature_flags", int(m.writer_feature_flags)),
        ("max_fragment_id", _some(int(m.max_fragment_id) if m.HasField("max_fragment_id")
                                  else None)),
        ("max_allocated_field_id", Word("None")),  # (not in lancenb's manifest protobuf)
        ("transaction_file", _some(m.transaction_file or None)),
        ("transaction_section", _some(int(m.transaction_section)
                                      if m.HasField("transaction_section") else None)),
        ("fragment_offsets", offsets), ("next_row_id", int(m.next_row_id)),
        ("data_storage_format", Struct("DataStorageFormat", [
            ("file_format", m.data_format.file_format or "lance"),
            ("version", _storage_version(ds.data_storage_version))])),
        ("config", dict(sorted(m.config.items()))),
        ("table_metadata", dict(sorted(m.table_metadata.items()))),
        ("base_paths", {int(b.id): b.path for b in m.base_paths}),
    ])


def _value(v):
    """An operation's field value as a record: fragments, data files, schemas and
    dataclasses get their own notation."""
    if isinstance(v, FragmentMetadata):
        return _fragment_struct(v)
    if isinstance(v, pa.Schema) or hasattr(v, "to_pyarrow"):
        return _schema_struct(*_fields_of(v))
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return Struct(type(v).__name__, [(f.name, _value(getattr(v, f.name)))
                                         for f in dataclasses.fields(v)])
    if isinstance(v, (list, tuple)):
        return [_value(x) for x in v]
    if isinstance(v, dict):
        return {k: _value(x) for k, x in v.items()}
    return v


# -- the public functions --------------------------------------------------------------
def format_schema(dataset) -> str:
    """The dataset's schema with its field ids (``Schema { fields: [Field {...}] }``).

    Examples
    --------
    >>> print(format_schema(ds))  # doctest: +SKIP
    Schema {
        fields: [
            Field {
                name: "a",
                id: 0,
    ...
    """
    m = dataset.manifest
    return render(_schema_struct(m.fields, dict(m.schema_metadata)))


def format_manifest(dataset) -> str:
    """The dataset's manifest: schema, version, writer, fragments, flags, format.

    Examples
    --------
    >>> format_manifest(ds).startswith("Manifest {")  # doctest: +SKIP
    True
    """
    return render(_manifest_struct(dataset))


def format_fragment(fragment, dataset) -> str:
    """One fragment (a :class:`FragmentMetadata`, as ``frag.metadata`` gives) with the
    schema of each of its data files (the dataset's fields that file holds).

    Examples
    --------
    >>> print(format_fragment(ds.get_fragments()[0].metadata, ds))  # doctest: +SKIP
    PrettyPrintableFragment {
        id: 0,
    ...
    """
    fields = list(dataset.manifest.fields)
    by_id = {int(f.id): f for f in fields}
    files = []
    for df in fragment.files:
        keep = set()
        for fid in df.fields:
            while fid in by_id and fid not in keep:  # the field and its parents
                keep.add(fid)
                fid = int(by_id[fid].parent_id)
        files.append(Struct("PrettyPrintableDataFile", [
            ("path", df.path), ("fields", list(df.fields)),
            ("column_indices", list(df.column_indices)),
            ("schema", _schema_struct([f for f in fields if int(f.id) in keep])),
            ("major_version", int(df.file_major_version)),
            ("minor_version", int(df.file_minor_version))]))
    deletion = fragment.deletion_file
    return render(Struct("PrettyPrintableFragment", [
        ("id", int(fragment.id)), ("files", files),
        ("deletion_file", _some(_deletion_struct(deletion) if deletion else None)),
        ("physical_rows", _some(fragment.physical_rows))]))


def list_transactions(dataset, max_transactions: int = 10) -> list[str]:
    """The transactions of the latest ``max_transactions`` versions up to the
    dataset's, newest first, each as ``Transaction { read_version, uuid, operation:
    <Operation> {...}, tag, transaction_properties }`` (a version whose transaction
    is not recorded is left out).

    Examples
    --------
    >>> list_transactions(ds, max_transactions=1)[0].startswith("Transaction {")
    ... # doctest: +SKIP
    True
    """
    out = []
    for txn in dataset.get_transactions(max_transactions):
        if txn is None:
            continue
        props = getattr(txn, "transaction_properties", None)
        out.append(render(Struct("Transaction", [
            ("read_version", int(txn.read_version)), ("uuid", str(txn.uuid)),
            ("operation", _value(txn.operation)),
            ("tag", Word("None")),
            ("transaction_properties", _some(dict(props) if props else None)),
        ])))
    return out
