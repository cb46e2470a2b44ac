"""Whole-object operations a dataset needs: list, read, write, delete, put-if-absent.

Datasets address objects by paths relative to their root (``_versions/1.manifest``).
The store resolves the root once with fsspec and keeps the local fast paths:

* ``put_if_absent`` on a local disk writes a temporary file and hard-links it to the
  final name; ``link`` fails when the name exists, so exactly one of several racing
  writers wins, and a reader never sees a partial file.
* On other filesystems there is no portable conditional write. The store then takes
  the ``commit_lock`` the caller supplied (a context manager shared by every writer,
  e.g. a lock on a coordination service), or, without one, a lock that is only
  correct inside one process (good for ``memory://`` and single-writer jobs).
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid

from fsspec.implementations.local import LocalFileSystem

from lancenb.errors import InvalidInputError, LanceFileNotFoundError, LanceIOError
from lancenb.io.paths import check_relative, is_confined

__all__ = ["ObjectStore"]

_PROCESS_LOCKS: dict[str, threading.Lock] = {}
_PROCESS_LOCKS_GUARD = threading.Lock()


def _process_lock(key: str) -> threading.Lock:
    with _PROCESS_LOCKS_GUARD:
        return _PROCESS_LOCKS.setdefault(key, threading.Lock())


class ObjectStore:
    """The objects under one dataset root."""

    def __init__(self, uri, storage_options: dict | None = None, *, commit_lock=None):
        from lancenb.io import resolve  # the package's resolver (avoids an import cycle)

        self.uri = os.fspath(uri)
        if not self.uri:
            raise InvalidInputError("a dataset URI must not be empty")
        self.fs, root = resolve(self.uri, storage_options)
        self.root = root.rstrip("/") if root not in ("/", "") else root
        self.storage_options = storage_options
        self.local = isinstance(self.fs, LocalFileSystem)
        if commit_lock is not None and not (callable(commit_lock)
                                            or hasattr(commit_lock, "__enter__")):
            raise InvalidInputError("commit_lock must be a callable taking the version being "
                                    "committed and returning a context manager (as in pylance), "
                                    "or a context manager")
        self.commit_lock = commit_lock
        self.manifest_store = None  # an ExternalManifestStore, set by the dataset layer
        self._made: set[str] = set()  # directories already created

    # -- paths -----------------------------------------------------------------
    def path(self, rel: str) -> str:
        """The filesystem path of ``rel``, which must stay inside the root (no ``..``,
        absolute path, scheme, ``::`` or NUL: see :mod:`lancenb.io.paths`)."""
        if rel and not is_confined(rel):
            check_relative(rel, what="object", source=f"dataset {self.uri!r}")
        return f"{self.root}/{rel}" if rel else self.root

    def uri_of(self, rel: str) -> str:
        """A URI naming ``rel`` (for messages; reads go through :meth:`open_reader`)."""
        p = f"{self.root}/{rel}" if rel else self.root
        if self.local:
            return p
        proto = self.fs.protocol[0] if isinstance(self.fs.protocol, (tuple, list)) else \
            self.fs.protocol
        return f"{proto}://{p.lstrip('/')}" if proto != "memory" else f"memory://{p}"

    def open_reader(self, rel: str):
        """A :class:`lancenb.io.RangeReader` of ``rel`` through this store's own
        filesystem object (the path is never re-parsed as a URL)."""
        from lancenb.io import RangeReader

        return RangeReader(self.fs, self.path(rel), uri=self.uri_of(rel))

    # -- reads -----------------------------------------------------------------
    def exists(self, rel: str) -> bool:
        p = self.path(rel)
        if self.local:
            return os.path.exists(p)
        return bool(self.fs.exists(p))

    def read_bytes(self, rel: str) -> bytes:
        p = self.path(rel)
        try:
            if self.local:
                with open(p, "rb") as f:
                    return f.read()
            return self.fs.cat_file(p)
        except FileNotFoundError as e:
            raise LanceFileNotFoundError(f"no such object: {self.uri_of(rel)!r}") from e
        except OSError as e:
            raise LanceIOError(f"cannot read {self.uri_of(rel)!r}: {e}") from e

    def list(self, rel_dir: str) -> list[str]:
        """Names (not paths) of the objects directly under ``rel_dir``; [] if none."""
        p = self.path(rel_dir)
        try:
            if self.local:
                return os.listdir(p)
            return [e.rstrip("/").rsplit("/", 1)[-1] for e in self.fs.ls(p, detail=False)]
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as e:
            raise LanceIOError(f"cannot list {self.uri_of(rel_dir)!r}: {e}") from e

    def size(self, rel: str) -> int:
        p = self.path(rel)
        try:
            return os.path.getsize(p) if self.local else int(self.fs.size(p))
        except FileNotFoundError as e:
            raise LanceFileNotFoundError(f"no such object: {self.uri_of(rel)!r}") from e

    # -- writes ----------------------------------------------------------------
    def _makedirs_for(self, p: str) -> None:
        parent = p.rsplit("/", 1)[0] if "/" in p else ""
        if parent and parent not in self._made:
            self._made.add(parent)
            if self.local:
                os.makedirs(parent, exist_ok=True)
            else:
                self.fs.makedirs(parent, exist_ok=True)

    def write_bytes(self, rel: str, data: bytes, *, atomic: bool = True) -> None:
        """Write an object whole. Local files go through a temporary file and a rename
        (``atomic``) so readers never see half of one; ``atomic=False`` is for names no
        reader looks at until something else points to them (unique new files)."""
        p = self.path(rel)
        self._makedirs_for(p)
        try:
            if self.local and not atomic:
                with open(p, "wb") as f:
                    f.write(data)
            elif self.local:
                tmp = f"{p}.{uuid.uuid4().hex}.tmp"
                with open(tmp, "wb") as f:
                    f.write(data)
                os.replace(tmp, p)
            else:
                self.fs.pipe_file(p, bytes(data))
        except OSError as e:
            raise LanceIOError(f"cannot write {self.uri_of(rel)!r}: {e}") from e

    def put_if_absent(self, rel: str, data: bytes, version: int | None = None) -> bool:
        """Create ``rel`` with ``data`` unless it exists; True if this call created it.

        ``version`` is passed to a callable ``commit_lock`` (pylance's convention).
        """
        p = self.path(rel)
        self._makedirs_for(p)
        if self.local:
            tmp = f"{p}.{uuid.uuid4().hex}.tmp"
            try:
                # no fsync: like the reference, visibility is atomic (link) but
                # durability across power loss is left to the filesystem
                with open(tmp, "wb") as f:
                    f.write(data)
                try:
                    os.link(tmp, p)
                except FileExistsError:
                    return False
                return True
            except OSError as e:
                raise LanceIOError(f"cannot write {self.uri_of(rel)!r}: {e}") from e
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
        if self.commit_lock is None:
            lock = _process_lock(f"{self.fs.protocol}:{self.root}")
        elif hasattr(self.commit_lock, "__enter__") and not isinstance(self.commit_lock, type):
            lock = self.commit_lock
        else:
            lock = self.commit_lock(version)
        with lock:
            if self.fs.exists(p):
                return False
            try:
                self.fs.pipe_file(p, bytes(data))
            except OSError as e:
                raise LanceIOError(f"cannot write {self.uri_of(rel)!r}: {e}") from e
            return True

    def delete(self, rel: str, *, missing_ok: bool = True) -> None:
        p = self.path(rel)
        try:
            if self.local:
                os.unlink(p)
            else:
                self.fs.rm(p)
        except FileNotFoundError:
            if not missing_ok:
                raise LanceFileNotFoundError(f"no such object: {self.uri_of(rel)!r}") from None
        except OSError as e:
            raise LanceIOError(f"cannot delete {self.uri_of(rel)!r}: {e}") from e

