"""External manifest stores: commits on object stores without put-if-absent.

An external manifest store is a key-value store with an atomic *put if not exists*
(keys are ``(base_uri, version)``, values manifest paths). It supplements the
manifests in the dataset directory; it does not replace them, so a reader unaware
of it still reads the dataset (possibly one version behind).

Commit (spec "External Manifest Store"):

1. write the manifest to a staging path ``_versions/{name}-{uuid}``;
2. ``put_if_not_exists(base, version, staging path)``: the commit point. Losing
   this race means another writer has the version: retry with the next one;
3. copy the staged manifest to its final name ``_versions/{name}``;
4. ``put_if_exists(base, version, final path)``.

Readers ask the store for the latest version. A path still ending in a UUID means a
writer died between steps 2 and 4: the reader finishes steps 3-4 itself, and
refuses to load if it cannot.

:class:`SqliteManifestStore` is the embedded default (one SQLite file, safe across
processes on one machine); implement :class:`ExternalManifestStore` for DynamoDB,
a database, etc.
"""

from __future__ import annotations

import os
import sqlite3
import threading

from lancenb.errors import CorruptFileError, LanceIOError

__all__ = ["ExternalManifestStore", "SqliteManifestStore", "is_staged"]


def is_staged(path: str) -> bool:
    """True for a staging path (``...manifest-<uuid>``), False for a final one."""
    return not path.endswith(".manifest")


class ExternalManifestStore:
    """The interface: four operations on ``(base_uri, version) -> path``."""

    def get(self, base_uri: str, version: int) -> str | None:
        """The path of ``version``'s manifest, or None."""
        raise NotImplementedError

    def get_latest(self, base_uri: str) -> tuple[int, str] | None:
        """The highest version recorded for ``base_uri`` and its path, or None."""
        raise NotImplementedError

    def put_if_not_exists(self, base_uri: str, version: int, path: str) -> bool:
        """Record ``path`` for a new version; False if the version is taken."""
        raise NotImplementedError

    def put_if_exists(self, base_uri: str, version: int, path: str) -> None:
        """Point an existing version at ``path`` (the finalised manifest)."""
        raise NotImplementedError


class SqliteManifestStore(ExternalManifestStore):
    """An external manifest store in one SQLite database file.

    SQLite's locking makes ``INSERT`` of an existing primary key fail atomically
    across processes, which is exactly put-if-not-exists.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        self._local = threading.local()
        with self._conn() as c:
            c.execute("CREATE TABLE IF NOT EXISTS lance_manifests (base_uri TEXT NOT NULL, "
                      "version INTEGER NOT NULL, path TEXT NOT NULL, "
                      "PRIMARY KEY (base_uri, version))")

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
                conn.execute("PRAGMA journal_mode=WAL")
            except sqlite3.Error as e:
                raise LanceIOError(f"cannot open manifest store {self.path!r}: {e}") from e
            self._local.conn = conn
        return conn

    def get(self, base_uri, version):
        """The path of ``version``'s manifest, or None."""
        row = self._conn().execute("SELECT path FROM lance_manifests WHERE base_uri=? AND "
                                   "version=?", (base_uri, int(version))).fetchone()
        return row[0] if row else None

    def get_latest(self, base_uri):
        """``(version, path)`` of the newest version, or None."""
        row = self._conn().execute("SELECT version, path FROM lance_manifests WHERE base_uri=? "
                                   "ORDER BY version DESC LIMIT 1", (base_uri,)).fetchone()
        return (int(row[0]), row[1]) if row else None

    def put_if_not_exists(self, base_uri, version, path):
        """Record a version's path unless it exists (False: it did)."""
        try:
            self._conn().execute("INSERT INTO lance_manifests (base_uri, version, path) "
                                 "VALUES (?, ?, ?)", (base_uri, int(version), path))
            return True
        except sqlite3.IntegrityError:
            return False

    def put_if_exists(self, base_uri, version, path):
        """Change an existing version's path (step 4 of a commit)."""
        cur = self._conn().execute("UPDATE lance_manifests SET path=? WHERE base_uri=? AND "
                                   "version=?", (path, base_uri, int(version)))
        if cur.rowcount != 1:
            raise CorruptFileError(f"manifest store {self.path!r} has no version {version} of "
                                   f"{base_uri!r} to update")


def synchronize(store, ext: ExternalManifestStore, base_uri: str, version: int, path: str,
                final_rel: str) -> None:
    """Finish a commit whose writer stopped after step 2 (reader side, steps 3-4)."""
    if not is_staged(path):
        return
    try:
        try:
            data = store.read_bytes(path)
        except FileNotFoundError:
            # the writer may have finished steps 3-4 (and removed the staged copy)
            # while we looked: then the store now names the final manifest
            now = ext.get(base_uri, version)
            if now is not None and not is_staged(now) and store.exists(now):
                return
            raise
        if not store.exists(final_rel):
            store.write_bytes(final_rel, data)
        ext.put_if_exists(base_uri, version, final_rel)
    except Exception as e:
        raise CorruptFileError(f"dataset {store.uri!r}: version {version} is committed in the "
                               f"external manifest store as {path!r} but could not be "
                               f"synchronised to {final_rel!r}: {e}") from e
