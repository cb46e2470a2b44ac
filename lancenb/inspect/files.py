"""Inspecting one Lance file: its container parsed directly (footer, offset tables,
schema, every column's metadata), so that every version is shown, including those
lancenb does not decode; 2.1/2.2 pages are explained (:mod:`lancenb.inspect.explain`)."""

from __future__ import annotations

import struct

from lancenb import io as lio
from lancenb._proto import file2_pb2, file_pb2, table_pb2
from lancenb.encodings import pb
from lancenb.encodings.config import is_packed
from lancenb.encodings.page import describe_layout
from lancenb.encodings.structural import repdef
from lancenb.errors import CorruptFileError, LanceError
from lancenb.file.columns import data_file_columns
from lancenb.file.format import Footer, parse_offset_table
from lancenb.file.reader import LanceFileReader
from lancenb.file.schema import fields_to_schema
from lancenb.file.version import version_from_footer
from lancenb.inspect._format import (
    _LEGACY_FOOTER,
    EXPLAIN_MAX_PAGE_BYTES,
    LANCENB_FILE_VERSIONS,
    PYLANCE14_FILE_VERSIONS,
    _describe_any,
    _md,
    _tree,
)
from lancenb.inspect.explain import _explain_page, _leaf_name


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


def _open_lance_file(path: str, storage_options=None):
    """``(reader, size, tail start, tail)`` of a file ending in Lance's magic; anything
    else (too small, another magic) is refused as not a Lance file."""
    rr = lio.open_reader(path, storage_options)
    size, tail_start, tail = _read_tail(rr, path)
    magic = bytes(tail[-4:])
    if magic != b"LANC":
        raise CorruptFileError(f"file {path!r}: not a Lance file (magic {magic!r} at offset "
                               f"{size - 4}, expected b'LANC')")
    return rr, size, tail_start, tail


def _inspect_file(path: str, *, explain: bool, storage_options=None) -> dict:
    rr, size, tail_start, tail = _open_lance_file(path, storage_options)
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
