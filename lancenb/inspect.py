"""See inside Lance files and datasets: :func:`inspect`, :func:`explain`, :func:`validate`.

Everything returned is plain data (dicts, lists, str, int, float, bool, None), ready
for ``json.dumps``.

* :func:`inspect` of a **file** parses the container itself (footer, offset tables,
  schema, every column's metadata), so it works for every version: 2.1/2.2 pages get
  their ``PageLayout`` (layout, full compression tree, chunk count, dictionary and
  repetition-index sizes); 2.0 pages their ``ArrayEncoding`` tree; 0.1 (legacy) files
  their batch offsets and page table. lancenb decodes only 2.1/2.2 pages, so only
  those get uncompressed sizes and explanations; the report's ``notes`` say so.
* **Explanations are reconstructed, not stored**: a Lance file does not record why a
  page was encoded the way it was. For each 2.1/2.2 page, :func:`inspect` decodes the
  page's rows, runs lancenb's strategy on them with the column's ``lance-encoding:*``
  metadata and a :class:`~lancenb.encodings.strategy.Trace`, and reports the trace
  and whether the re-run produced the stored description (``reproduced``). For files
  lancenb wrote it does (same rows per page, same strategy); for pylance's files a
  mismatch shows where the two strategies differ.
* :func:`explain` runs the strategy on in-memory data, cutting pages where
  ``LanceFileWriter`` would (its per-column buffer budget over the table's batches).
* :func:`validate` decodes every page of every column (and every deletion file of a
  dataset) and returns all problems found, each naming file, column, page and offset.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import re
import struct

import pyarrow as pa
from google.protobuf import json_format
from google.protobuf.message import Message

from lancenb import io as lio
from lancenb._proto import file2_pb2, file_pb2, table_pb2
from lancenb.encodings import pb, strategy
from lancenb.encodings.config import KEYS, config_for_field, is_blob, is_packed
from lancenb.encodings.page import describe_layout
from lancenb.encodings.structural import dictarray, repdef
from lancenb.errors import CorruptFileError, LanceError, NotSupportedError
from lancenb.file.columns import data_file_columns
from lancenb.file.format import Footer, parse_offset_table
from lancenb.file.reader import LanceFileReader
from lancenb.file.schema import fields_to_schema
from lancenb.file.version import FileVersion, version_from_footer
from lancenb.file.writer import DEFAULT_COLUMN_BUDGET
from lancenb.io.paths import check_name, check_relative
from lancenb.io.store import ObjectStore

__all__ = ["inspect", "explain", "validate", "FEATURE_FLAGS", "PYLANCE14_FILE_VERSIONS"]

FEATURE_FLAGS = {1: "deletion_files", 2: "stable_row_ids", 4: "use_v2_format (deprecated)",
                 8: "table_config", 16: "base_paths", 32: "disable_transaction_file"}
# pylance 14 knows the flags above (bits 1..32) and reads these file versions
# (0.1 checked by writing data_storage_version="legacy" with it; 2.3 is its "next")
PYLANCE14_FLAGS = 63
PYLANCE14_FILE_VERSIONS = ("0.1", "2.0", "2.1", "2.2", "2.3")
LANCENB_FILE_VERSIONS = ("0.1", "2.0", "2.1", "2.2")
# pages whose buffers exceed this are not decoded again for an explanation
EXPLAIN_MAX_PAGE_BYTES = 64 << 20
_LEGACY_FOOTER = struct.Struct("<QHH4s")


def _md(metadata) -> dict:
    return {(k.decode() if isinstance(k, bytes) else k):
            (v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v))
            for k, v in (metadata or {}).items()}


def _tree(msg) -> dict:
    return json_format.MessageToDict(msg, preserving_proto_field_name=True)


def _describe_any(msg) -> str:
    """A compact name for any encoding message: each set oneof, children in brackets."""
    for o in msg.DESCRIPTOR.oneofs:
        which = msg.WhichOneof(o.name)
        if which is not None:
            inner = getattr(msg, which)
            if not hasattr(inner, "DESCRIPTOR"):
                return which
            kids = [_describe_any(v) for _, v in inner.ListFields() if isinstance(v, Message)]
            kids = [k for k in kids if k]
            return f"{which}({', '.join(kids)})" if kids else which
    kids = [_describe_any(v) for _, v in msg.ListFields() if isinstance(v, Message)]
    return ", ".join(k for k in kids if k)


# -- files ------------------------------------------------------------------------------
def _schema_fields(fields) -> list[dict]:
    return [{"id": f.id, "parent_id": f.parent_id, "name": f.name,
             "logical_type": f.logical_type, "nullable": f.nullable,
             "metadata": _md(f.metadata)} for f in fields]


def _page_details(layout, sizes: list[int]) -> dict:
    """Layout kind, compression trees and the sizes of a 2.1/2.2 page's parts."""
    kind = layout.WhichOneof("layout")
    out: dict = {"layout": {"mini_block_layout": "mini-block", "full_zip_layout": "full-zip",
                            "constant_layout": "constant/all-null",
                            "blob_layout": "blob"}.get(kind, str(kind)),
                 "description": describe_layout(layout), "encoding": _tree(layout)}
    if kind == "blob_layout":
        inner = layout.blob_layout.inner_layout
        out["inner"] = describe_layout(inner)
        layout, kind = inner, inner.WhichOneof("layout")
    if kind == "mini_block_layout":
        mb = layout.mini_block_layout
        word = 4 if mb.has_large_chunk else 2
        out["chunks"] = sizes[0] // word if sizes else 0
        out["chunk_bytes"] = sizes[1] if len(sizes) > 1 else 0
        if mb.HasField("dictionary"):
            out["dictionary_items"] = int(mb.num_dictionary_items)
            out["dictionary_bytes"] = sizes[2] if len(sizes) > 2 else None
        if mb.repetition_index_depth:
            out["repetition_index_bytes"] = sizes[-1]
    elif kind == "full_zip_layout":
        out["zipped_bytes"] = sizes[0] if sizes else 0
        if len(sizes) > 1:
            out["repetition_index_bytes"] = sizes[1]
    return out


def _read_tail(rr, path: str):
    size = rr.size()
    if size < 16:
        raise CorruptFileError(f"file {path!r}: {size} bytes is too small to be a Lance file")
    start = max(0, size - (64 << 10))
    return size, start, rr.read(start, size - start)


def _legacy_file(rr, path: str, size: int) -> dict:
    """0.1 files: footer, batch offsets, page table positions (nothing decoded)."""
    tail = rr.read(size - 16, 16)
    pos, major, minor, _ = _LEGACY_FOOTER.unpack(tail)
    if pos >= size - 16:
        raise CorruptFileError(f"file {path!r}: metadata position {pos} is past the footer")
    (n,) = struct.unpack("<I", rr.read(pos, 4))
    if pos + 4 + n > size - 16:
        raise CorruptFileError(f"file {path!r}: metadata at {pos} claims {n} bytes, past the "
                               f"footer")
    md = pb.parse(file_pb2.Metadata, rr.read(pos + 4, n), f"file {path!r}: metadata")
    out = {"footer": {"metadata_position": pos, "major": major, "minor": minor},
           "batch_offsets": list(md.batch_offsets),
           "num_rows": int(md.batch_offsets[-1]) if md.batch_offsets else 0,
           "page_table_position": int(md.page_table_position)}
    if md.manifest_position:
        (n,) = struct.unpack("<I", rr.read(md.manifest_position, 4))
        m = pb.parse(table_pb2.Manifest, rr.read(md.manifest_position + 4, n),
                     f"file {path!r}: schema")
        out["schema"] = {"fields": _schema_fields(m.fields), "metadata": _md(m.schema_metadata)}
        ids = [f.id for f in m.fields]
        nb = max(0, len(md.batch_offsets) - 1)
        if ids and nb:
            lo, hi = min(ids), max(ids)
            raw = rr.read(md.page_table_position, 16 * nb * (hi - lo + 1))
            t = struct.unpack(f"<{2 * nb * (hi - lo + 1)}q", raw)
            by_id = {f.id: f.name for f in m.fields}
            out["columns"] = [{
                "index": i, "name": by_id.get(lo + i, f"field {lo + i}"), "field_id": lo + i,
                "pages": [{"index": b, "rows": int(md.batch_offsets[b + 1] - md.batch_offsets[b]),
                           "position": t[2 * (i * nb + b)], "items": t[2 * (i * nb + b) + 1],
                           "bytes": None, "layout": "legacy (0.1) page"}
                          for b in range(nb)]} for i in range(hi - lo + 1)]
    return out


def _column_names(fields, version: str, ncols: int) -> list[tuple[str, int | None]]:
    """(name, field id) per column: leaves for 2.1/2.2, every field in pre-order for 2.0."""
    _, top = fields_to_schema(fields)
    out = [(c.path, c.field_id) for c in data_file_columns(top, version)]
    if len(out) != ncols:  # not the layout assumed: name columns by index only
        return [(f"column {i}", None) for i in range(ncols)]
    return out


def _inspect_file(path: str, *, explain: bool, storage_options=None) -> dict:
    rr = lio.open_reader(path, storage_options)
    size, tail_start, tail = _read_tail(rr, path)
    magic = bytes(tail[-4:])
    if magic != b"LANC":
        raise CorruptFileError(f"file {path!r}: not a Lance file (magic {magic!r} at offset "
                               f"{size - 4}, expected b'LANC')")
    major, minor = struct.unpack("<HH", bytes(tail[-8:-4]))
    version = version_from_footer(major, minor, path).label
    out: dict = {"kind": "file", "path": path, "size_bytes": size, "version": version,
                 "readable_by": {"lancenb": version in LANCENB_FILE_VERSIONS,
                                 "pylance14": version in PYLANCE14_FILE_VERSIONS},
                 "notes": []}
    if version == "0.1":
        out.update(_legacy_file(rr, path, size))
        out["notes"].append("0.1 (legacy) file: pages listed from the page table (read "
                            "them with LanceFileReader, which returns a LegacyFileReader)")
        return out
    footer = Footer.parse(tail, size, path)
    out["footer"] = {"column_meta_start": footer.column_meta_start,
                     "column_meta_offsets_position": footer.cmo_position,
                     "global_buffer_offsets_position": footer.gbo_position,
                     "num_global_buffers": footer.num_global_buffers,
                     "num_columns": footer.num_columns, "major": major, "minor": minor}
    need = min(footer.column_meta_start, footer.gbo_position)
    if need < tail_start:
        tail = rr.read(need, tail_start - need) + tail
        tail_start = need

    def region(pos, n, what):
        if pos < tail_start or pos + n > tail_start + len(tail):
            raise CorruptFileError(f"file {path!r}: {what} at {pos} (+{n}) is outside the "
                                   f"metadata region")
        return tail[pos - tail_start: pos - tail_start + n]

    gbo = parse_offset_table(region(footer.gbo_position, 16 * footer.num_global_buffers,
                                    "global buffer table"),
                             footer.num_global_buffers, footer.cmo_position, "global buffer", path)
    cmo = parse_offset_table(region(footer.cmo_position, 16 * footer.num_columns,
                                    "column table"),
                             footer.num_columns, footer.cmo_position, "column metadata", path)
    gp, gs = int(gbo[0, 0]), int(gbo[0, 1])
    if gp < tail_start:
        tail = rr.read(gp, tail_start - gp) + tail
        tail_start = gp
    desc = pb.parse(file_pb2.FileDescriptor, region(gp, gs, "schema"),
                    f"file {path!r}: schema (global buffer 0)")
    out["num_rows"] = int(desc.length)
    out["global_buffers"] = [{"index": i, "position": int(p), "size": int(s)}
                             for i, (p, s) in enumerate(gbo)]
    out["schema"] = {"fields": _schema_fields(desc.schema.fields),
                     "metadata": _md(desc.schema.metadata)}
    names = _column_names(desc.schema.fields, version, footer.num_columns)
    cols = []
    for ci in range(footer.num_columns):
        p, s = int(cmo[ci, 0]), int(cmo[ci, 1])
        where = f"file {path!r}, column {ci}"
        cm = pb.parse(file2_pb2.ColumnMetadata, region(p, s, f"column {ci} metadata"), where)
        col = {"index": ci, "name": names[ci][0], "field_id": names[ci][1],
               "metadata_position": p, "metadata_size": s,
               "column_buffers": [{"position": int(o), "size": int(z)}
                                  for o, z in zip(cm.buffer_offsets, cm.buffer_sizes)],
               "pages": []}
        if cm.encoding.WhichOneof("location") == "direct" and cm.encoding.direct.encoding:
            tname, value = pb.unpack_any(cm.encoding.direct.encoding, where)
            col["column_encoding"] = tname
        row = 0
        for pi, page in enumerate(cm.pages):
            sizes = [int(z) for z in page.buffer_sizes]
            entry = {"index": pi, "first_row": row, "rows": int(page.length),
                     "priority": int(page.priority),
                     "buffers": [{"position": int(o), "size": z}
                                 for o, z in zip(page.buffer_offsets, sizes)],
                     "bytes": sum(sizes)}
            row += int(page.length)
            if page.encoding.WhichOneof("location") == "direct":
                tname, value = pb.unpack_any(page.encoding.direct.encoding, f"{where}, page {pi}")
                entry["encoding_type"] = tname
                if tname == pb.e21.PageLayout.DESCRIPTOR.full_name:
                    layout = pb.parse(pb.e21.PageLayout, value, f"{where}, page {pi}")
                    entry.update(_page_details(layout, sizes))
                elif tname == pb.e20.ArrayEncoding.DESCRIPTOR.full_name:
                    enc = pb.parse(pb.e20.ArrayEncoding, value, f"{where}, page {pi}")
                    entry.update({"layout": "2.0 array encoding",
                                  "description": _describe_any(enc), "encoding": _tree(enc)})
            else:
                entry["layout"] = f"{page.encoding.WhichOneof('location')} encoding (not shown)"
            col["pages"].append(entry)
        col["bytes"] = sum(pg["bytes"] for pg in col["pages"])
        cols.append(col)
    out["columns"] = cols
    out["data_bytes"] = sum(c["bytes"] for c in cols)
    if version == "2.0":
        out["notes"].append("2.0 file: page encodings (ArrayEncoding trees) shown from the "
                            "metadata; explanations cover 2.1 and 2.2 pages only")
    elif explain and version in ("2.1", "2.2"):
        _explain_file(path, out, storage_options)
    return out


def _explain_file(path: str, out: dict, storage_options) -> None:
    """Decode each page's rows and run lancenb's strategy on them with a trace."""
    reader = LanceFileReader(path, storage_options=storage_options)
    minor = reader.version.footer[1]
    by_name = {c["name"]: c for c in out["columns"]}
    for field in reader.schema:
        sub = None
        paths = ([None] if not repdef.is_nested(field.type) or is_packed(field)
                 else repdef.leaf_paths(field.type))
        for path_ in paths:
            name = field.name if path_ is None else _leaf_name(field, path_)
            col = by_name.get(name)
            if col is None:
                continue
            for page in col["pages"]:
                if page["bytes"] > EXPLAIN_MAX_PAGE_BYTES:
                    page["explanation"] = {"skipped": "page too large to decode again"}
                    continue
                if sub is None:
                    sub = LanceFileReader(path, storage_options=storage_options,
                                          columns=[field.name])
                try:
                    arr = sub.read_range(page["first_row"], page["rows"]).to_table().column(0)
                    arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
                except LanceError as e:
                    page["explanation"] = {"error": str(e)}
                    continue
                try:
                    exp = _explain_page(arr, field, path_, minor)
                except LanceError as e:  # a page lancenb reads but would not write
                    page["explanation"] = {"error": f"not re-encoded: {e}"}
                    continue
                page["uncompressed_bytes"] = exp.pop("uncompressed_bytes")
                exp["reproduced"] = exp.pop("description") == page.get("description")
                page["explanation"] = exp


def _leaf_name(field: pa.Field, path: tuple) -> str:
    names, t = [field.name], field.type
    for step in path:
        if pa.types.is_struct(t):
            names.append(t.field(step).name)
            t = t.field(step).type
        else:
            names.append(t.value_field.name)
            t = t.value_type
    return ".".join(names)


def _explain_page(arr: pa.Array, field: pa.Field, path, version_minor: int) -> dict:
    """Run the strategy on one page's values with a trace: description and decisions."""
    if is_blob(field):
        return {"description": None, "layout": "blob", "uncompressed_bytes": arr.nbytes,
                "steps": ["lance-encoding:blob: values stored out of line (blob layout)"],
                "overrides": {"lance-encoding:blob": _md(field.metadata).get(
                    "lance-encoding:blob")}}
    levels = None
    if path is not None:
        levels, arr = repdef.shred(arr, path)
    trace = strategy.Trace()
    if dictarray.handles(arr.type):  # dictionary columns, empty structs: fixed layouts
        _, layout = dictarray.encode_page(arr, config_for_field(field),
                                          version_minor=version_minor, levels=levels,
                                          why=trace.steps)
    else:
        _, layout = strategy.encode_page(arr, config_for_field(field),
                                         version_minor=version_minor, levels=levels,
                                         trace=trace)
    out = {"description": describe_layout(layout), "uncompressed_bytes": arr.nbytes}
    out.update(trace.to_dict())
    return out


# -- explain (in-memory data) -----------------------------------------------------------
def explain(data, field: str | None = None, *, version: str = "2.1",
            page_budget_bytes: int = DEFAULT_COLUMN_BUDGET) -> dict:
    """Why lancenb would encode ``data`` (a Table, RecordBatch or Array) as it does.

    Pages are cut as ``LanceFileWriter`` cuts them (``page_budget_bytes`` of buffered
    arrays per column, over the table's batches). Returns ``{"version", "columns":
    [{"column", "field_metadata", "pages": [{"rows", "chosen", "stats",
    "thresholds", "overrides", "steps"}]}]}``; ``field`` limits it to one top-level field.
    """

    minor = FileVersion.resolve(version).footer[1]
    if isinstance(data, (pa.Array, pa.ChunkedArray)):
        data = pa.table({field or "values": data})
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if not isinstance(data, pa.Table):
        raise TypeError(f"explain takes a pyarrow Table, RecordBatch or Array, not "
                        f"{type(data).__name__}")
    names = [field] if field is not None else data.schema.names
    out = {"version": FileVersion.resolve(version).label, "columns": []}
    for name in names:
        if name not in data.schema.names:
            from lancenb.errors import InvalidInputError

            raise InvalidInputError(f"no field {name!r}; the data has {data.schema.names}")
        f = data.schema.field(name)
        paths = ([None] if not repdef.is_nested(f.type) or is_packed(f)
                 else repdef.leaf_paths(f.type))
        chunks = [c for c in data.column(name).chunks if len(c)]
        for path_ in paths:
            pages, buf, nbytes, row = [], [], 0, 0
            for c in chunks + [None]:
                if c is not None:
                    buf.append(c)
                    nbytes += c.nbytes // len(paths)
                if buf and (c is None or nbytes >= page_budget_bytes):
                    arr = dictarray.page_array(buf)  # (as LanceFileWriter joins them)
                    e = _explain_page(arr, f, path_, minor)
                    pages.append({"first_row": row, "rows": len(arr),
                                  "chosen": e.pop("description"), **e})
                    row += len(arr)
                    buf, nbytes = [], 0
            out["columns"].append({
                "column": name if path_ is None else _leaf_name(f, path_),
                "field_metadata": {k: v for k, v in _md(f.metadata).items()
                                   if k in KEYS or k.startswith("lance-encoding:")},
                "pages": pages})
    return out


# -- datasets ---------------------------------------------------------------------------
def _is_dataset(uri: str, storage_options=None) -> bool:
    fs, p = lio.resolve(uri, storage_options)
    return bool(fs.isdir(p)) and bool(fs.exists(p.rstrip("/") + "/_versions"))


def _flags(x: int) -> list[str]:
    return [FEATURE_FLAGS.get(1 << i, f"unknown ({1 << i})") for i in range(64) if x >> i & 1]


def _timestamp(m) -> str | None:
    if not m.HasField("timestamp"):
        return None
    t = m.timestamp
    try:
        return (_dt.datetime.fromtimestamp(t.seconds, _dt.timezone.utc)
                + _dt.timedelta(microseconds=t.nanos // 1000)).isoformat()
    except (OverflowError, OSError, ValueError):
        return f"invalid ({t.seconds} s, {t.nanos} ns)"


def _label(major: int, minor: int) -> str:
    try:
        return version_from_footer(int(major), int(minor)).label
    except LanceError:
        return f"{major}.{minor} (unknown)"


def _fragment(store, f) -> dict:
    d = {"id": int(f.id), "physical_rows": int(f.physical_rows),
         "files": [{"path": df.path, "fields": list(df.fields),
                    "column_indices": list(df.column_indices),
                    "file_version": _label(df.file_major_version, df.file_minor_version),
                    "size_bytes": int(df.file_size_bytes) or None} for df in f.files]}
    d["deleted_rows"] = 0
    if f.HasField("deletion_file"):
        from lancenb.dataset.deletion import deletion_path

        dfile = f.deletion_file
        d["deleted_rows"] = int(dfile.num_deleted_rows)
        d["deletion_file"] = {"path": deletion_path(int(f.id), dfile),
                              "type": table_pb2.DeletionFile.DeletionFileType.Name(
                                  dfile.file_type),
                              "deleted_rows": int(dfile.num_deleted_rows)}
    d["rows"] = d["physical_rows"] - d["deleted_rows"]
    d["stable_row_ids"] = f.HasField("inline_row_ids") or f.HasField("external_row_ids")
    return d


def _inspect_dataset(uri: str, *, version=None, files: bool = False, explain: bool = False,
                     storage_options=None) -> dict:
    from lancenb.dataset.commit import list_versions, load_manifest
    from lancenb.dataset.manifest import check_feature_flags

    store = ObjectStore(uri, storage_options)
    versions, v2 = list_versions(store)
    if not versions:
        raise CorruptFileError(f"dataset {uri!r}: no manifests under _versions/")
    out: dict = {"kind": "dataset", "uri": uri, "manifest_naming": "V2" if v2 else "V1",
                 "latest_version": versions[-1], "versions": []}
    chosen = None
    for v in versions:
        try:
            mf = load_manifest(store, v, v2)
        except LanceError as e:
            out["versions"].append({"version": v, "error": str(e)})
            continue
        m = mf.manifest
        txn = None
        try:
            txn = mf.transaction()
        except LanceError:
            pass
        rows = sum(int(f.physical_rows) - (int(f.deletion_file.num_deleted_rows)
                                            if f.HasField("deletion_file") else 0)
                   for f in m.fragments)
        out["versions"].append({
            "version": v, "timestamp": _timestamp(m),
            "operation": txn.WhichOneof("operation") if txn is not None else None,
            "transaction_uuid": txn.uuid if txn is not None else None,
            "read_version": int(txn.read_version) if txn is not None else None,
            "writer": f"{m.writer_version.library} {m.writer_version.version}".strip(),
            "fragments": len(m.fragments), "rows": rows, "tag": m.tag or None})
        if v == (versions[-1] if version is None else int(version)):
            chosen = mf
    if chosen is None:
        raise CorruptFileError(f"dataset {uri!r}: version {version} cannot be read")
    m = chosen.manifest
    file_versions = sorted({_label(df.file_major_version, df.file_minor_version)
                            for f in m.fragments for df in f.files})
    storage = m.data_format.version or "2.0"
    try:
        check_feature_flags(m, chosen.name, write=False)
        lancenb_flags = True
    except LanceError:
        lancenb_flags = False
    reader = int(m.reader_feature_flags)
    out.update({
        "version": chosen.version, "timestamp": _timestamp(m),
        "schema": {"fields": _schema_fields(m.fields), "metadata": _md(m.schema_metadata)},
        "feature_flags": {"reader": reader, "reader_names": _flags(reader),
                          "writer": int(m.writer_feature_flags),
                          "writer_names": _flags(int(m.writer_feature_flags))},
        "data_storage_version": storage, "file_versions": file_versions,
        "config": dict(m.config), "next_row_id": int(m.next_row_id),
        "fragments": [_fragment(store, f) for f in m.fragments],
        "readable_by": {
            "lancenb": lancenb_flags and all(v in LANCENB_FILE_VERSIONS for v in file_versions),
            "pylance14": not (reader & ~PYLANCE14_FLAGS)
            and all(v in PYLANCE14_FILE_VERSIONS for v in file_versions)},
        "tags": _tags(store)})
    out["rows"] = sum(f["rows"] for f in out["fragments"])
    out["data_bytes"] = sum(d["size_bytes"] or 0 for f in out["fragments"] for d in f["files"])
    if files:
        for f in out["fragments"]:
            for d in f["files"]:
                try:
                    check_name(d["path"], what="data file", source=f"manifest {chosen.name!r}")
                    d["inspect"] = _inspect_file(store.uri_of(f"data/{d['path']}"),
                                                 explain=explain,
                                                 storage_options=storage_options)
                except LanceError as e:
                    d["inspect"] = {"error": str(e)}
    return out


def _tags(store) -> dict:
    from lancenb.dataset.core import _parse_tag

    out = {}
    for name in sorted(store.list("_refs/tags")):
        if not name.endswith(".json"):
            continue
        try:
            out[name[:-5]] = json.loads(store.read_bytes(f"_refs/tags/{name}"))
            _parse_tag(store.read_bytes(f"_refs/tags/{name}"), store.uri_of(f"_refs/tags/{name}"))
        except (LanceError, ValueError, RecursionError) as e:
            out[name[:-5]] = {"error": str(e)}
    return out


def inspect(path_or_uri, *, version=None, files: bool = False, explain: bool = True,
            storage_options: dict | None = None) -> dict:
    """What a Lance file or dataset holds, as plain JSON-ready data.

    Parameters
    ----------
    path_or_uri : str
        A ``.lance`` file or a dataset directory (anything fsspec resolves).
    version : int, optional
        Dataset version to detail (default: the latest); every version is listed.
    files : bool
        Datasets: also inspect every data file (``fragments[i].files[j].inspect``).
    explain : bool
        Files: re-run the strategy on each decoded 2.1/2.2 page and attach its trace
        (``columns[i].pages[j].explanation``); see the module docstring.
    """
    uri = str(path_or_uri)
    if _is_dataset(uri, storage_options):
        return _inspect_dataset(uri, version=version, files=files,
                                explain=explain and files, storage_options=storage_options)
    return _inspect_file(uri, explain=explain, storage_options=storage_options)





# -- validate ---------------------------------------------------------------------------
_OFFSET = re.compile(r"\b(?:offset|at) (\d+)")


def _problem(file, message, *, column=None, page=None, offset=None, unexpected=False) -> dict:
    if offset is None:
        m = _OFFSET.search(message)
        offset = int(m.group(1)) if m else None
    return {"file": file, "column": column, "page": page, "offset": offset,
            "message": message, "unexpected": unexpected}


def _check(problems, fn, file, **where):
    """Run ``fn``; a LanceError (or, flagged unexpected, any other error) is a problem."""
    try:
        return fn()
    except LanceError as e:
        problems.append(_problem(file, str(e), **where))
    except Exception as e:  # a lancenb bug or damage it failed to detect: still report it
        problems.append(_problem(file, f"{type(e).__name__}: {e}", unexpected=True, **where))
    return None


def _decode_page(r, fi: int, ci: int, page) -> None:
    info, _, where = page
    n = sum(len(a) for a in r.decode_page(fi, ci, page))
    if n != info.num_rows:
        raise CorruptFileError(f"{where}: decoded {n} rows, the page says {info.num_rows}")


def _validate_file(path: str, problems: list, counts: dict, storage_options=None,
                   expect_rows: int | None = None) -> None:
    counts["files"] += 1
    try:
        r = LanceFileReader(path, storage_options=storage_options)
    except NotSupportedError as e:
        # not a version lancenb decodes: check the container (footer, tables, metadata)
        counts["not_decoded"].append(f"{path}: {e}")
        _check(problems, functools.partial(_inspect_file, path, explain=False,
                                           storage_options=storage_options), path)
        return
    except Exception:
        r = _check(problems, functools.partial(LanceFileReader, path,
                                               storage_options=storage_options), path)
    if r is None:
        return
    if expect_rows is not None and r.num_rows() != expect_rows:
        problems.append(_problem(path, f"the file has {r.num_rows()} rows, the manifest says "
                                       f"{expect_rows}", offset=None))
    if r.version in (FileVersion.V2_0, FileVersion.LEGACY):
        # 2.0 and 0.1 columns decode as a whole (their pages are not independent
        # leaf pages): decode every column, and count the pages the metadata lists
        md = _check(problems, r.metadata, path)
        counts["pages"] += sum(len(getattr(c, "pages", ())) for c in
                               getattr(md, "columns", ()) or ())
        for fi, name in enumerate(r.schema_full.names):
            _check(problems, functools.partial(r.read_column, fi), path, column=name)
        return
    for fi in range(len(r.schema_full)):
        for ci, name in r.leaf_columns(fi):
            pages = _check(problems, functools.partial(r.column_pages, fi, ci), path,
                           column=name, offset=r.column_metadata_position(ci))
            for pi, page in enumerate(pages or []):
                counts["pages"] += 1
                _check(problems, functools.partial(_decode_page, r, fi, ci, page),
                       path, column=name, page=pi, offset=min(page[0].offsets, default=None))


def _validate_dataset(uri: str, problems: list, counts: dict, storage_options=None) -> None:
    from lancenb.dataset.commit import list_versions, load_manifest
    from lancenb.dataset.deletion import deletion_path, read_deletions

    store = ObjectStore(uri, storage_options)
    listed = _check(problems, lambda: list_versions(store), uri)
    if not listed or not listed[0]:
        if listed is not None:
            problems.append(_problem(uri, "no manifests under _versions/"))
        return
    versions, v2 = listed
    _check_metadata_files(store, versions, problems)
    latest = None
    for v in versions:
        counts["manifests"] += 1
        mf = _check(problems, lambda v=v: load_manifest(store, v, v2), f"{uri} version {v}")
        if mf is not None:
            _check(problems, mf.transaction, mf.name)
            _check_manifest_refs(mf, problems)
            latest = mf
    if latest is None or latest.version != versions[-1]:
        return
    for f in latest.manifest.fragments:
        _check_row_ids(store, latest, f, problems)
        for df in f.files:
            if _check(problems, functools.partial(check_name, df.path, what="data file",
                                                  source=f"manifest {latest.name!r}"),
                      latest.name) is None:
                continue
            rel = f"data/{df.path}"
            if not store.exists(rel):
                problems.append(_problem(store.uri_of(rel), f"fragment {f.id}: data file is "
                                         f"missing"))
                continue
            size = store.size(rel)
            if df.file_size_bytes and size != df.file_size_bytes:
                problems.append(_problem(store.uri_of(rel), f"fragment {f.id}: the file has "
                                         f"{size} bytes, the manifest says {df.file_size_bytes}"))
            _validate_file(store.uri_of(rel), problems, counts, storage_options,
                           int(f.physical_rows) or None)
        if f.HasField("deletion_file"):
            counts["deletion_files"] += 1
            _check(problems, lambda f=f: read_deletions(store, int(f.id), f.deletion_file,
                                                        int(f.physical_rows)),
                   store.uri_of(deletion_path(int(f.id), f.deletion_file)))


def _check_metadata_files(store, versions: list[int], problems: list) -> None:
    """Names under ``_versions/`` that look like manifests but name no version (pylance
    ignores them; they are reported), the latest-version hint, and every tag file."""
    from lancenb.dataset.core import _parse_tag
    from lancenb.dataset.manifest import HINT_FILE, VERSIONS_DIR, parse_manifest_name

    for name in sorted(store.list(VERSIONS_DIR)):
        if name.endswith(".manifest") and parse_manifest_name(name) is None:
            problems.append(_problem(store.uri_of(f"{VERSIONS_DIR}/{name}"),
                                     "not a manifest name (no version 1..2**64-2); ignored "
                                     "when the dataset is read"))
    if store.exists(HINT_FILE):
        raw = store.read_bytes(HINT_FILE)
        try:
            hint = json.loads(raw)
            ok = isinstance(hint, dict) and isinstance(hint.get("version"), int) \
                and not isinstance(hint.get("version"), bool) and hint["version"] >= 1
        except (ValueError, RecursionError):
            ok = False
        if not ok:
            problems.append(_problem(store.uri_of(HINT_FILE), f"latest-version hint "
                                     f"{bytes(raw[:60])!r} is not {{\"version\": N}}; ignored "
                                     f"when the dataset is read"))
    for name in sorted(store.list("_refs/tags")):
        if not name.endswith(".json"):
            continue
        rel = f"_refs/tags/{name}"
        tag = _check(problems, lambda rel=rel: _parse_tag(store.read_bytes(rel),
                                                          store.uri_of(rel)), store.uri_of(rel))
        if tag is not None and tag["version"] not in versions:
            problems.append(_problem(store.uri_of(rel), f"tag {name[:-5]!r} points to version "
                                     f"{tag['version']}, which the dataset does not have"))


def _check_manifest_refs(mf, problems: list) -> None:
    """A manifest's timestamp and every path it holds (confined to the dataset)."""
    from lancenb.dataset.core import _manifest_time

    m, src = mf.manifest, f"manifest {mf.name!r}"
    _check(problems, lambda: _manifest_time(m, mf.name), mf.name)
    if m.transaction_file:
        _check(problems, functools.partial(check_name, m.transaction_file,
                                           what="transaction file", source=src), mf.name)
    for f in m.fragments:
        for kind in ("external_row_ids", "external_created_at_versions",
                     "external_last_updated_at_versions"):
            if f.HasField(kind):
                _check(problems, functools.partial(check_relative, getattr(f, kind).path,
                                                   what=kind.replace("_", " "),
                                                   source=f"{src}, fragment {f.id}"), mf.name)


def _check_row_ids(store, mf, f, problems: list) -> None:
    """Decode a fragment's row-id sequence (sizes checked before anything is expanded)."""
    from lancenb.dataset.rowids import decode_row_ids, external_bytes

    kind = f.WhichOneof("row_id_sequence")
    if kind is None:
        return
    where = f"manifest {mf.name!r}, fragment {f.id}: row id sequence"

    def run():
        data = f.inline_row_ids if kind == "inline_row_ids" else \
            external_bytes(store, f.external_row_ids, where)
        decode_row_ids(data, where, expected=int(f.physical_rows))

    _check(problems, run, mf.name)


def validate(path_or_uri, *, storage_options: dict | None = None) -> dict:
    """Decode every page of a file, or of every data file and deletion file of a
    dataset's latest version (and parse every manifest), collecting all problems.

    Files of versions lancenb cannot decode get their container checked and are listed
    in ``not_decoded``. Returns ``{"uri", "kind", "ok", "checked": {...counts},
    "not_decoded", "problems": [{"file",
    "column", "page", "offset", "message", "unexpected"}]}``; ``unexpected`` marks
    errors that are not a :class:`~lancenb.errors.LanceError` (a bug or undetected damage).
    """
    uri = str(path_or_uri)
    problems: list = []
    counts = {"manifests": 0, "files": 0, "pages": 0, "deletion_files": 0, "not_decoded": []}
    is_ds = _check(problems, lambda: _is_dataset(uri, storage_options), uri)
    if is_ds:
        _validate_dataset(uri, problems, counts, storage_options)
    elif is_ds is not None:
        _validate_file(uri, problems, counts, storage_options)
    skipped = counts.pop("not_decoded")
    return {"uri": uri, "kind": "dataset" if is_ds else "file", "ok": not problems,
            "checked": counts, "not_decoded": skipped, "problems": problems}
