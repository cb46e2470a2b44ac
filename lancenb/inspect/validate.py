"""Checking Lance files and datasets: :func:`validate` decodes every page of every
column (through :class:`~lancenb.file.LanceFileReader`'s public page access) and every
deletion file, and returns each problem with its file, column, page and offset."""

from __future__ import annotations

import functools
import re

from lancenb.errors import CorruptFileError, LanceError, NotSupportedError
from lancenb.file.reader import LanceFileReader
from lancenb.file.version import FileVersion
from lancenb.inspect.datasets import _target_kind
from lancenb.inspect.files import _inspect_file, _open_lance_file
from lancenb.io.paths import check_name, check_relative
from lancenb.io.store import ObjectStore

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
    # deferred: inspecting a file does not load the dataset layer
    from lancenb.table.commit import list_versions, load_manifest
    from lancenb.table.deletion import deletion_path, read_deletions

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
    # deferred: inspecting a file does not load the dataset layer
    from lancenb.table.hint import HINT_MAX_BYTES, parse_hint
    from lancenb.table.manifest import HINT_FILE, VERSIONS_DIR, parse_manifest_name
    from lancenb.table.tags import parse_tag

    for name in sorted(store.list(VERSIONS_DIR)):
        if name.endswith(".manifest") and parse_manifest_name(name) is None:
            problems.append(_problem(store.uri_of(f"{VERSIONS_DIR}/{name}"),
                                     "not a manifest name (no version 1..2**64-2); ignored "
                                     "when the dataset is read"))
    if store.exists(HINT_FILE):
        # (what the readers accept as a hint: lancenb.table.hint)
        raw = store.read_bytes(HINT_FILE, max_bytes=HINT_MAX_BYTES + 1)
        if parse_hint(raw) is None:
            problems.append(_problem(store.uri_of(HINT_FILE), f"latest-version hint "
                                     f"{bytes(raw[:60])!r} is not {{\"version\": N}}; ignored "
                                     f"when the dataset is read"))
    for name in sorted(store.list("_refs/tags")):
        if not name.endswith(".json"):
            continue
        rel = f"_refs/tags/{name}"
        tag = _check(problems, lambda rel=rel: parse_tag(store.read_bytes(rel),
                                                          store.uri_of(rel)), store.uri_of(rel))
        if tag is not None and tag["version"] not in versions:
            problems.append(_problem(store.uri_of(rel), f"tag {name[:-5]!r} points to version "
                                     f"{tag['version']}, which the dataset does not have"))


def _check_manifest_refs(mf, problems: list) -> None:
    """A manifest's timestamp and every path it holds (confined to the dataset)."""
    # deferred: inspecting a file does not load the dataset layer
    from lancenb.table.versions import manifest_time

    m, src = mf.manifest, f"manifest {mf.name!r}"
    _check(problems, lambda: manifest_time(m, mf.name), mf.name)
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
    # deferred: inspecting a file does not load the dataset layer
    from lancenb.table.rowids import decode_row_ids, external_bytes

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
    A path that does not exist, a directory that is not a dataset and a file that is
    not a Lance file (no ``LANC`` magic at its end) raise a
    :class:`~lancenb.errors.LanceError` instead: there is nothing to check.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from lancenb.file import LanceFileWriter
    >>> from lancenb.inspect import validate
    >>> with LanceFileWriter("memory://validate-example.lance") as w:
    ...     w.write_batch(pa.table({"x": [1, 2, 3]}))
    >>> report = validate("memory://validate-example.lance")
    >>> report["ok"], report["checked"]["pages"]
    (True, 1)
    """
    uri = str(path_or_uri)
    problems: list = []
    counts = {"manifests": 0, "files": 0, "pages": 0, "deletion_files": 0, "not_decoded": []}
    # nothing to check (raised): no such path, a directory that is not a dataset, a
    # file that does not end in Lance's magic
    is_ds = _target_kind(uri, storage_options) == "dataset"
    if is_ds:
        _validate_dataset(uri, problems, counts, storage_options)
    else:
        _open_lance_file(uri, storage_options)
        _validate_file(uri, problems, counts, storage_options)
    skipped = counts.pop("not_decoded")
    return {"uri": uri, "kind": "dataset" if is_ds else "file", "ok": not problems,
            "checked": counts, "not_decoded": skipped, "problems": problems}
