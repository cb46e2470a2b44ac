"""Tags: names for versions, stored as ``_refs/tags/{name}.json`` (pylance's layout).

A tag file is a JSON object such as ``{"branch": null, "version": 3, "createdAt":
"2024-01-01T00:00:00.000000Z", "updatedAt": ..., "manifestSize": 1234, "metadata": {}}``;
:func:`parse_tag` reads one as strictly as the reference does.
"""

from __future__ import annotations

import datetime as _dt
import json

from lancenb.errors import CorruptFileError, DatasetNotFoundError, InvalidInputError, LanceError
from lancenb.table.commit import list_versions, put_new_object
from lancenb.table.manifest import VERSIONS_DIR, manifest_name
from lancenb.table.versions import version_ranges as _ranges

__all__ = ["Tags", "parse_tag", "TAGS_DIR"]

TAGS_DIR = "_refs/tags"


class Tags:
    """Named versions, stored as ``_refs/tags/{name}.json`` (pylance's layout)."""

    def __init__(self, store, *, branch: str | None = None, open_branch=None):
        # store: the main root's (tags of every branch live there); branch: the one
        # an int reference is on; open_branch(name): a branch's store
        self._store = store
        self._branch = branch
        self._open_branch = open_branch

    def _target(self, reference) -> tuple[str | None, int | None]:
        """``(branch, version)`` of a reference: an int (this branch), a tag name, or
        ``(branch, version)`` (None or ``"main"``: the main line)."""
        if reference is None:
            return self._branch, None
        if hasattr(reference, "__index__") and not isinstance(reference, bool):
            return self._branch, int(reference)
        if isinstance(reference, tuple) and len(reference) == 2:
            b, v = reference
            return (None if b in (None, "main") else b), v
        if isinstance(reference, str):
            return self.get_ref(reference)
        raise InvalidInputError(f"a tag reference is a version, a tag name or a (branch, "
                                f"version) tuple, not {reference!r}")

    @staticmethod
    def _check_name(tag: str) -> None:
        ok = isinstance(tag, str) and tag and all(c.isalnum() or c in "-_." for c in tag) \
            and not tag.startswith(".") and not tag.endswith(".lock") and ".." not in tag
        if not ok:
            raise InvalidInputError(f"invalid tag name {tag!r}: use letters, digits, '-', '_' "
                                    f"and '.'")

    def _read(self, tag: str) -> dict:
        self._check_name(tag)
        rel = f"{TAGS_DIR}/{tag}.json"
        try:
            raw = self._store.read_bytes(rel)
        except LanceError:
            raise DatasetNotFoundError(f"Ref not found error: tag {tag} does not exist "
                                       f"(dataset {self._store.uri!r} has no tag {tag!r})") \
                from None
        return parse_tag(raw, self._store.uri_of(rel))

    def list(self) -> dict:
        """Every tag: ``{name: {"version", "created_at", "updated_at", "manifest_size",
        "metadata", "branch"}}``.

        Examples
        --------
        >>> ds.tags.create("v1", 1); ds.tags.list()["v1"]["version"]  # doctest: +SKIP
        1
        """
        out = {}
        for name in sorted(self._store.list(TAGS_DIR)):
            if not name.endswith(".json"):
                continue
            tag = name[:-5]
            d = self._read(tag)
            out[tag] = {"branch": d.get("branch"), "version": d["version"],
                        "created_at": d.get("createdAt"),
                        "updated_at": d.get("updatedAt"),
                        "manifest_size": d.get("manifestSize"), "metadata": d.get("metadata", {})}
        return out

    def get_ref(self, tag: str) -> tuple[str | None, int]:
        """``(branch, version)`` that ``tag`` names (branch None: the main line)."""
        d = self._read(tag)
        return (d.get("branch") or None), int(d["version"])

    def get_version(self, tag: str) -> int:
        """The version ``tag`` names (``DatasetNotFoundError`` when there is none)."""
        return self._read(tag)["version"]

    def list_ordered(self, order: str | None = None) -> list:
        """``[(name, tag)]`` by version, newest first (``order="desc"``, the default)
        or oldest first (``"asc"``); tags of one version by name."""
        if order not in (None, "asc", "desc"):
            raise InvalidInputError(f"order must be 'asc' or 'desc', not {order!r}")
        items = sorted(self.list().items(), key=lambda kv: kv[0])
        return sorted(items, key=lambda kv: kv[1]["version"], reverse=order != "asc")

    def _write(self, tag: str, version, created: str | None, *, create: bool,
               metadata: dict | None = None) -> None:
        branch, version = self._target(version)
        where = self._store
        if branch is not None:
            if self._open_branch is None:
                raise InvalidInputError(f"cannot tag a version of branch {branch!r} here")
            where = self._open_branch(branch)
        versions, naming = list_versions(where)
        if version is None and versions:
            version = versions[-1]
        if version not in versions:
            raise DatasetNotFoundError(f"Version not found error: version {version} does not "
                                       f"exist (cannot tag it: dataset {where.uri!r} has "
                                       f"versions {_ranges(versions)})")
        size = where.size(f"{VERSIONS_DIR}/{manifest_name(version, naming)}")
        now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        body = {"branch": branch, "version": int(version), "createdAt": created or now,
                "updatedAt": now, "manifestSize": size, "metadata": metadata or {}}
        data = json.dumps(body, indent=2).encode()
        rel = f"{TAGS_DIR}/{tag}.json"
        if create:
            if not put_new_object(self._store, rel, data):  # a put that fails is read back
                raise InvalidInputError(f"tag {tag!r} already exists in {self._store.uri!r}")
        else:
            self._store.write_bytes(rel, data)

    def create(self, tag: str, reference=None, branch: str | None = None) -> None:
        """Name ``reference`` ``tag``: a version (of this dataset's branch, or of
        ``branch``, pylance's older form), a tag, or ``(branch, version)``. An
        existing tag is an ``InvalidInputError``."""
        self._check_name(tag)
        self._write(tag, _on(reference, branch), None, create=True)

    def update(self, tag: str, reference=None, branch: str | None = None) -> None:
        """Point ``tag`` at ``reference`` (its creation time and metadata kept)."""
        reference = _on(reference, branch)
        old = self._read(tag)
        created = old.get("createdAt")  # parsed to a datetime by _read: back to text
        if isinstance(created, _dt.datetime):
            created = created.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        self._write(tag, reference, created, create=False, metadata=old.get("metadata"))

    def replace_metadata(self, tag: str, metadata: dict) -> None:
        """Replace the ``metadata`` map of an existing tag (``{str: str}``)."""
        old = self._read(tag)
        if not isinstance(metadata, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise InvalidInputError("tag metadata must be a dict of str to str")
        created = old.get("createdAt")
        if isinstance(created, _dt.datetime):
            created = created.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        self._write(tag, (old.get("branch"), int(old["version"])), created, create=False,
                    metadata=dict(metadata))

    def delete(self, tag: str) -> None:
        """Remove ``tag`` (the version stays)."""
        self._read(tag)
        self._store.delete(f"{TAGS_DIR}/{tag}.json")


def _on(reference, branch):
    """A version on ``branch`` as a ``(branch, version)`` reference."""
    return (branch, reference) if branch is not None and not isinstance(
        reference, (str, tuple)) else reference


def _is_u64(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**64


def parse_tag(raw: bytes, where: str) -> dict:
    """A tag file's contents, checked as strictly as the reference reads them: a JSON
    object whose ``version`` (>= 1) and ``manifestSize`` are u64 integers, timestamps
    (if any) ISO strings; anything else is a ``CorruptFileError`` naming the file."""
    try:
        d = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise CorruptFileError(f"tag file {where!r} is not JSON: {e}") from None
    if not isinstance(d, dict):
        raise CorruptFileError(f"tag file {where!r} holds a JSON {type(d).__name__}, not an "
                               f"object")
    v = d.get("version")
    if not _is_u64(v) or v < 1:
        raise CorruptFileError(f"tag file {where!r}: version {v!r} is not a version number")
    if not _is_u64(d.get("manifestSize")):
        raise CorruptFileError(f"tag file {where!r}: manifestSize {d.get('manifestSize')!r} is "
                               f"not a byte count")
    for k in ("createdAt", "updatedAt"):
        try:
            d[k] = _parse_ts(d.get(k))
        except (ValueError, TypeError, AttributeError):
            raise CorruptFileError(f"tag file {where!r}: {k} {d.get(k)!r} is not a "
                                   f"timestamp") from None
    if not isinstance(d.get("metadata", {}), dict):
        raise CorruptFileError(f"tag file {where!r}: metadata is not an object")
    return d


def _parse_ts(s):
    if not s:
        return None
    if isinstance(s, _dt.datetime):
        return s
    s = s.rstrip("Z")
    head, _, frac = s.partition(".")
    base = _dt.datetime.fromisoformat(head).replace(tzinfo=_dt.timezone.utc)
    return base.replace(microsecond=int((frac + "000000")[:6])) if frac else base


