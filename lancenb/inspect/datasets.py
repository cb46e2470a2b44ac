"""Inspecting a Lance dataset: versions, manifest, fragments, data files, tags."""

from __future__ import annotations

import datetime as _dt
import json

from lancenb import io as lio
from lancenb._proto import table_pb2
from lancenb.errors import (
    CorruptFileError,
    DatasetNotFoundError,
    InvalidInputError,
    LanceError,
    LanceFileNotFoundError,
)
from lancenb.file.version import version_from_footer
from lancenb.inspect._format import (
    FEATURE_FLAGS,
    LANCENB_FILE_VERSIONS,
    PYLANCE14_FILE_VERSIONS,
    PYLANCE14_FLAGS,
    _md,
)
from lancenb.inspect.files import _inspect_file, _schema_fields
from lancenb.io.paths import check_name
from lancenb.io.store import ObjectStore


# -- datasets ---------------------------------------------------------------------------
def _target_kind(uri: str, storage_options=None) -> str:
    """``"dataset"`` (a directory holding ``_versions/``) or ``"file"``; a path that
    does not exist, or a directory that is not a dataset, is refused naming which."""
    fs, p = lio.resolve(uri, storage_options)
    if fs.isdir(p):
        if fs.exists(p.rstrip("/") + "/_versions"):
            return "dataset"
        raise InvalidInputError(f"{uri!r} is a directory, but not a Lance dataset (no "
                                f"_versions/ in it) nor a Lance file")
    if not fs.exists(p):
        raise LanceFileNotFoundError(f"no such file or directory: {uri!r}")
    return "file"


def _spans(versions: list[int]) -> str:
    """Sorted version numbers as runs: ``1-4, 7``."""
    runs: list[list[int]] = []
    for v in versions:
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


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
        # deferred: inspecting a file does not load the dataset layer
        from lancenb.table.deletion import deletion_path

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
    # deferred: inspecting a file does not load the dataset layer
    from lancenb.table.commit import list_versions, load_manifest
    from lancenb.table.manifest import check_feature_flags

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
        want = versions[-1] if version is None else int(version)
        if want not in versions:
            raise DatasetNotFoundError(f"dataset {uri!r} has no version {want} (versions: "
                                       f"{_spans(versions)})")
        error = next(x["error"] for x in out["versions"] if x["version"] == want)
        raise CorruptFileError(f"dataset {uri!r}: version {want} cannot be read: {error}")
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
    # deferred: inspecting a file does not load the dataset layer
    from lancenb.table.tags import parse_tag

    out = {}
    for name in sorted(store.list("_refs/tags")):
        if not name.endswith(".json"):
            continue
        try:
            out[name[:-5]] = json.loads(store.read_bytes(f"_refs/tags/{name}"))
            parse_tag(store.read_bytes(f"_refs/tags/{name}"), store.uri_of(f"_refs/tags/{name}"))
        except (LanceError, ValueError, RecursionError) as e:
            out[name[:-5]] = {"error": str(e)}
    return out
