"""Branches, as pylance 14 stores them.

A branch ``b`` of the dataset at ``{root}`` is a line of versions of its own::

    {root}/_refs/branches/{b, '/' as %2F}.json    the branch's record
    {root}/tree/{b}/_versions/*.manifest          its manifests (V2 names)
    {root}/tree/{b}/_versions/latest_version_hint.json
    {root}/tree/{b}/_transactions/, data/, _deletions/   what it wrote itself

The record is ``{"parentBranch": null, "identifier": {"version_mapping": [[1,
"7e45...36"]]}, "parentVersion": 1, "createAt": 1795948354, "manifestSize": 368,
"metadata": {}}`` (``createAt`` in seconds, ``manifestSize`` the source version's
manifest size). The branch's first manifest is the source version's under the same
version number, with ``branch`` set and the source's root added as a base path
(``is_dataset_root``), which the inherited data and deletion files name by
``base_id`` (see :mod:`lancenb.table.bases`). Appends on the branch write data under
``tree/{b}/data/`` and commit the next version there. Tags stay in
``{root}/_refs/tags`` and say which branch their version is on.

Branch names: segments of letters, digits, ``.``, ``-``, ``_`` joined by ``/``; not
``main``, not ending in ``.lock`` (pylance's rules).
"""

from __future__ import annotations

import json
import time
import uuid
from urllib.parse import quote, unquote

from lancenb._proto import table_pb2
from lancenb.errors import (
    CommitConflictError,
    CorruptFileError,
    DatasetNotFoundError,
    InvalidInputError,
    LanceError,
)
from lancenb.table.bases import BRANCH_DIR

__all__ = ["BRANCHES_DIR", "check_branch_name", "branch_rel", "branch_file_rel", "Branches",
           "branch_manifest", "record_bytes", "parse_record", "MAIN", "BRANCH_SUBDIRS",
           "shared_refs", "new_identifier", "referencing_versions"]

BRANCHES_DIR = "_refs/branches"
MAIN = "main"
BRANCH_SUBDIRS = ("_versions", "_transactions", "data", "_deletions", "_indices")


def check_branch_name(name) -> str:
    """``name`` if it is a valid new branch name, else ``InvalidInputError`` saying why."""
    if not isinstance(name, str) or not name:
        raise InvalidInputError(f"invalid branch name {name!r}: it must be a non-empty string")
    why = None
    if name.startswith("/") or name.endswith("/"):
        why = "it cannot start or end with '/'"
    elif ".." in name or "\\" in name:
        why = "it cannot contain '..' or '\\'"
    elif any(not s for s in name.split("/")):
        why = "it cannot have empty segments between '/'"
    elif not all(c.isalnum() or c in ".-_" for s in name.split("/") for c in s):
        why = "segments may hold only letters, digits, '.', '-' and '_'"
    elif name.endswith(".lock"):
        why = "it cannot end with '.lock'"
    elif name == MAIN:
        why = "'main' is the default branch"
    if why:
        raise InvalidInputError(f"invalid branch name {name!r}: {why}")
    return name


def branch_rel(name: str) -> str:
    """The branch's directory relative to the main root: ``tree/{name}``."""
    return f"{BRANCH_DIR}/{check_branch_name(name)}"


def branch_file_rel(name: str) -> str:
    """The branch's record relative to the main root (``/`` encoded as ``%2F``)."""
    return f"{BRANCHES_DIR}/{quote(check_branch_name(name), safe='')}.json"


def record_bytes(parent_branch, parent_version: int, manifest_size: int,
                 identifier: list, metadata: dict | None = None) -> bytes:
    """A branch record as pylance writes it."""
    body = {"parentBranch": parent_branch,
            "identifier": {"version_mapping": [[int(v), str(i)] for v, i in identifier]},
            "parentVersion": int(parent_version), "createAt": int(time.time()),
            "manifestSize": int(manifest_size), "metadata": dict(metadata or {})}
    return json.dumps(body, indent=2).encode()


def parse_record(raw: bytes, where: str) -> dict:
    """A branch record as pylance's ``ds.branches.list()`` shows it."""
    try:
        d = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise CorruptFileError(f"branch file {where!r} is not JSON: {e}") from None
    if not isinstance(d, dict):
        raise CorruptFileError(f"branch file {where!r} holds no JSON object")
    pv, size = d.get("parentVersion"), d.get("manifestSize")
    if not isinstance(pv, int) or isinstance(pv, bool) or pv < 0 or not isinstance(size, int):
        raise CorruptFileError(f"branch file {where!r}: parentVersion {pv!r} / manifestSize "
                               f"{size!r} are not integers")
    parent = d.get("parentBranch")
    if parent is not None and not isinstance(parent, str):
        raise CorruptFileError(f"branch file {where!r}: parentBranch {parent!r} is not a name")
    ident = (d.get("identifier") or {}).get("version_mapping") or []
    try:
        mapping = [(int(v), str(i)) for v, i in ident]
    except (TypeError, ValueError):
        raise CorruptFileError(f"branch file {where!r}: identifier {ident!r} is not a list "
                               f"of [version, id]") from None
    meta = d.get("metadata") or {}
    if not isinstance(meta, dict):
        raise CorruptFileError(f"branch file {where!r}: metadata is not an object")
    return {"parent_branch": parent, "branch_identifier": mapping, "parent_version": pv,
            "create_at": int(d.get("createAt") or 0), "manifest_size": size,
            "metadata": dict(meta)}


class Branches:
    """The branches of a dataset (pylance's ``ds.branches``): ``list``,
    ``list_ordered``, ``delete``, ``replace_metadata``.

    Examples
    --------
    >>> ds.create_branch("exp", 1); sorted(ds.branches.list())  # doctest: +SKIP
    ['exp']
    """

    def __init__(self, root_store, open_branch=None):
        self._store = root_store
        self._open_branch = open_branch or (lambda b: _branch_store(root_store, b))

    def _read(self, name: str) -> tuple[bytes, dict]:
        rel = branch_file_rel(name)
        try:
            raw = self._store.read_bytes(rel)
        except LanceError:
            raise DatasetNotFoundError(f"dataset {self._store.uri!r} has no branch "
                                       f"{name!r}") from None
        return raw, parse_record(raw, self._store.uri_of(rel))

    def get(self, name: str) -> dict:
        """The record of branch ``name`` (``DatasetNotFoundError`` when there is none)."""
        return self._read(name)[1]

    def list(self) -> dict:
        """``{name: {"parent_branch", "branch_identifier", "parent_version",
        "create_at", "manifest_size", "metadata"}}``."""
        out = {}
        for fname in sorted(self._store.list(BRANCHES_DIR)):
            if fname.endswith(".json"):
                name = unquote(fname[:-5])
                out[name] = self._read(name)[1]
        return out

    def list_ordered(self, order: str | None = None) -> list:
        """``[(name, branch)]`` by parent version, newest first (``"desc"``, the
        default) or oldest first (``"asc"``); then by name."""
        if order not in (None, "asc", "desc"):
            raise InvalidInputError(f"order must be 'asc' or 'desc', not {order!r}")
        items = sorted(self.list().items(), key=lambda kv: kv[0])
        return sorted(items, key=lambda kv: kv[1]["parent_version"], reverse=order != "asc")

    def delete(self, name: str) -> None:
        """Remove branch ``name``: its record, then its versions and the files it wrote
        (never what it shares with its parent, which lives under the parent's root;
        nor a branch nested under it, ``{name}/...``)."""
        self._read(name)
        users = referencing_versions(self._store, self._open_branch,
                                     self._store.path(branch_rel(name)), name)
        if users:
            raise CommitConflictError(f"Ref conflict error: Branch {name} is referenced by "
                                      f"{users} versions, can not delete")
        self._store.delete(branch_file_rel(name))
        base = branch_rel(name)
        fs = self._store.fs
        for sub in BRANCH_SUBDIRS:
            p = self._store.path(f"{base}/{sub}")
            try:
                if fs.exists(p):
                    fs.rm(p, recursive=True)
            except FileNotFoundError:
                pass
        parts = name.split("/")  # remove the directories left empty, innermost first
        for i in range(len(parts), 0, -1):
            p = self._store.path(f"{BRANCH_DIR}/{'/'.join(parts[:i])}")
            try:
                if fs.exists(p) and not fs.ls(p):
                    fs.rmdir(p)
                else:
                    break
            except (FileNotFoundError, OSError):
                break

    def replace_metadata(self, name: str, metadata: dict) -> None:
        """Replace the ``metadata`` map of branch ``name`` (``{str: str}``)."""
        if not isinstance(metadata, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise InvalidInputError("branch metadata must be a dict of str to str")
        raw, _ = self._read(name)
        d = json.loads(raw)
        d["metadata"] = dict(metadata)
        self._store.write_bytes(branch_file_rel(name), json.dumps(d, indent=2).encode())


def branch_manifest(source, name: str | None, source_root_uri: str):
    """The first manifest of branch ``name`` (None: of a shallow clone): ``source``
    (a ``Manifest``) with ``branch`` set, and the files it holds under its own root
    renamed to a new base path for ``source_root_uri`` (files already on other bases
    keep theirs)."""
    m = table_pb2.Manifest()
    m.CopyFrom(source)
    if name:
        m.branch = name
    else:  # (a shallow clone: a new dataset on the main line)
        m.ClearField("branch")
    own = [d for f in m.fragments for d in f.files if not d.HasField("base_id")]
    own_del = [f.deletion_file for f in m.fragments
               if f.HasField("deletion_file") and not f.deletion_file.HasField("base_id")]
    if own or own_del:
        same = [bp.id for bp in m.base_paths if bp.path == source_root_uri and bp.is_dataset_root]
        if same:
            bid = same[0]
        else:
            bid = max((int(bp.id) for bp in m.base_paths), default=-1) + 1
            m.base_paths.add(id=bid, path=source_root_uri, is_dataset_root=True)
        for d in own:
            d.base_id = bid
        for df in own_del:
            df.base_id = bid
    return m


def new_identifier(parent_record: dict | None, version: int) -> list:
    """The ``version_mapping`` of a new branch: its parent branch's, then this one."""
    head = list(parent_record["branch_identifier"]) if parent_record else []
    return head + [(int(version), uuid.uuid4().hex)]


def _branch_store(root_store, name: str):
    from lancenb.table.commit import open_store

    return open_store(f"{root_store.uri.rstrip('/')}/{branch_rel(name)}",
                      root_store.storage_options, root_store.commit_lock, None)


def _uses_of(root_store, open_branch, target_root: str, skip):
    """``(branch, version, manifest, base ids)`` of every version of every line but
    ``skip`` (a branch name, None for main, ``...`` for none) whose manifest has a
    base path at ``target_root``."""
    from lancenb.table.bases import normalise_root
    from lancenb.table.commit import list_versions, load_manifest

    target_root = target_root.rstrip("/")
    for b in [None] + sorted(Branches(root_store).list()):
        if b == skip and skip is not ...:
            continue
        st = root_store if b is None else open_branch(b)
        versions, v2 = list_versions(st)
        for v in versions:
            try:
                m = load_manifest(st, v, v2).manifest
            except DatasetNotFoundError:
                continue  # (removed by a cleanup of that branch meanwhile)
            ids = {int(bp.id) for bp in m.base_paths
                   if normalise_root(st.fs, bp.path) == target_root}
            if ids:
                yield b, v, m, ids


def referencing_versions(root_store, open_branch, target_root: str, skip) -> list:
    """``[(branch, version)]`` of the versions of other lines holding files through a
    base path at ``target_root`` (pylance refuses to delete such a branch)."""
    out = []
    for b, v, m, ids in _uses_of(root_store, open_branch, target_root, skip):
        if any(d.HasField("base_id") and d.base_id in ids for f in m.fragments for d in f.files) \
                or any(f.HasField("deletion_file") and f.deletion_file.HasField("base_id")
                       and f.deletion_file.base_id in ids for f in m.fragments):
            out.append((b or MAIN, v))
    return out


def shared_refs(root_store, open_branch, target_root: str, skip) -> set[str]:
    """Paths (relative to ``target_root``) of the data and deletion files that the
    versions of any line but ``skip`` (a branch name, None for main, or ``...``
    for none) hold through a base path at ``target_root``: what a cleanup of
    ``target_root`` must keep for the other branches."""
    from lancenb.table.deletion import deletion_path

    out: set[str] = set()
    for _, _, m, ids in _uses_of(root_store, open_branch, target_root, skip):
        for f in m.fragments:
            for d in f.files:
                if d.HasField("base_id") and d.base_id in ids:
                    out.add(f"data/{d.path}")
            if f.HasField("deletion_file") and f.deletion_file.HasField("base_id") \
                    and f.deletion_file.base_id in ids:
                out.add(deletion_path(int(f.id), f.deletion_file))
    return out
