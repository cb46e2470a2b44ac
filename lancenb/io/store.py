"""Whole-object operations a dataset needs: list, read, write, delete, put-if-absent.

Datasets address objects by paths relative to their root (``_versions/1.manifest``).
The store resolves the root once with fsspec and keeps the local fast paths.

``put_if_absent`` is the commit point of every dataset write: of several writers
racing to create the same manifest name, exactly one may succeed. How the store
makes that true is chosen once, when it is opened (:attr:`ObjectStore.conditional_put`):

* ``"link"``: a local disk (or fsspec's ``dir://`` over one) writes a temporary file
  and hard-links it to the final name; ``link`` fails when the name exists, and a
  reader never sees a partial file.
* ``"create"``: object stores whose fsspec filesystem has an atomic create-only put:
  s3fs and gcsfs ``pipe_file(..., mode="create")`` (S3 ``If-None-Match: *``, GCS
  ``ifGenerationMatch=0``) and adlfs ``pipe_file(..., overwrite=False)`` (Azure
  ``If-None-Match: *``). This is what pylance uses by default.
* ``"commit_lock"``: the caller's ``commit_lock`` (a lock shared by every writer).
* ``"process"``: a lock that is only correct inside one process: for fsspec's
  ``memory://`` filesystem, which only this process can see, and for any other store
  when the caller opted in with ``storage_options={"single_process_commits": True}``
  (single-writer jobs).

A store with none of these (and no external manifest store, which makes the commit
point itself) refuses to commit with :class:`UnsafeCommitError` instead of silently
losing concurrent commits. Which of the two commits a version (this atomic create or
an external manifest store) is the table layer's commit handler
(:mod:`lancenb.table.handlers`), chosen once when the store is opened.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import random
import stat
import sys
import threading
import time
import uuid

from lancenb.errors import (
    CommitLockError,
    InvalidInputError,
    LanceFileNotFoundError,
    LanceIOError,
    UnsafeCommitError,
)
from lancenb.io.local import is_local
from lancenb.io.memory import is_memory, uri_scheme
from lancenb.io.options import SINGLE_PROCESS_COMMITS, single_process_commits
from lancenb.io.paths import check_relative, is_confined

__all__ = ["ObjectStore", "conditional_put_of"]

# fsspec implementations (by top-level package) whose put has an atomic create-only
# mode, and the keyword that asks for it. Detected by package and signature: fsspec's
# base class also takes mode="create" but implements it as exists-then-write.
_CREATE_ONLY_PUT = {
    "s3fs": ("mode", "create"),       # PutObject If-None-Match: *  -> 412
    "gcsfs": ("mode", "create"),      # ifGenerationMatch=0         -> 412
    "adlfs": ("overwrite", False),    # upload_blob(overwrite=False) -> 409 BlobAlreadyExists
}
# S3 answers 409 ConditionalRequestConflict while another conditional write of the same
# key is in flight; the put is then retried (and meets that writer's object, or wins).
_CONFLICT_RETRIES = 10

_PROCESS_LOCKS: dict[str, threading.Lock] = {}
_PROCESS_LOCKS_GUARD = threading.Lock()


def _process_lock(key: str) -> threading.Lock:
    with _PROCESS_LOCKS_GUARD:
        return _PROCESS_LOCKS.setdefault(key, threading.Lock())


def _reset_process_locks() -> None:
    # a lock held by another thread at fork time would stay held forever in the child
    global _PROCESS_LOCKS_GUARD
    _PROCESS_LOCKS_GUARD = threading.Lock()
    _PROCESS_LOCKS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_process_locks)


def _dir_over_local(fs):
    """The local filesystem under fsspec's ``dir://`` wrapper, or None."""
    dirfs = sys.modules.get("fsspec.implementations.dirfs")  # not imported: not one
    if dirfs is not None and isinstance(fs, dirfs.DirFileSystem) and is_local(fs.fs):
        return fs.fs
    return None


def _package_of(obj) -> str:
    """The top-level package that defines ``obj`` (a class or function)."""
    return (getattr(obj, "__module__", "") or "").split(".", 1)[0]


def conditional_put_of(fs) -> tuple[str, str | None, object] | tuple[None, None, None]:
    """How ``fs`` creates an object only if it is absent, atomically.

    Returns ``("link", None, None)`` for local disks (hard link of a temporary file),
    ``("create", keyword, value)`` for object stores whose ``pipe_file`` takes a
    create-only keyword (s3fs, gcsfs, adlfs), else ``(None, None, None)``.
    """
    if is_local(fs) or _dir_over_local(fs) is not None:
        return "link", None, None
    for name in ("_pipe_file", "pipe_file"):
        meth = getattr(type(fs), name, None)
        package = _package_of(meth)
        if package not in _CREATE_ONLY_PUT:
            continue
        keyword, value = _CREATE_ONLY_PUT[package]
        try:
            params = inspect.signature(meth).parameters
        except (TypeError, ValueError):
            continue
        if keyword in params:
            return "create", keyword, value
    return None, None, None


def _is_memory(fs) -> bool:
    """Whether ``fs`` is fsspec's in-process memory filesystem itself (a wrapper
    around one is not recognised: what it forwards to cannot be told)."""
    return is_memory(fs)


def _already_exists(err: BaseException) -> bool:
    """Whether a create-only put failed because the object exists."""
    if isinstance(err, FileExistsError):
        return True
    for e in (err, err.__cause__):
        # adlfs lets azure-core's ResourceExistsError through
        if type(e).__name__ == "ResourceExistsError":
            return True
        # s3fs makes a FileExistsError of a 412 only when the answer names the condition
        resp = getattr(e, "response", None)
        if isinstance(resp, dict) and (
                resp.get("Error", {}).get("Code") == "PreconditionFailed"
                or resp.get("ResponseMetadata", {}).get("HTTPStatusCode") == 412):
            return True
    return False


def _write_conflict(err: BaseException) -> bool:
    """S3's 409 ConditionalRequestConflict: a concurrent conditional write is in flight."""
    for e in (err, err.__cause__, err.__context__):
        resp = getattr(e, "response", None)
        if isinstance(resp, dict) and \
                resp.get("Error", {}).get("Code") == "ConditionalRequestConflict":
            return True
    return "ConditionalRequestConflict" in str(err)


def _create_local(path: str):
    """``open(path, "wb")``, making the parent directory only when it is missing (a
    dataset's directories exist after its first write: a commit saved a mkdir and a
    stat per file)."""
    try:
        return open(path, "wb")
    except FileNotFoundError:
        parent = os.path.dirname(path)
        if not parent:
            raise
        os.makedirs(parent, exist_ok=True)
        return open(path, "wb")


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
        self.local = is_local(self.fs)
        if commit_lock is not None and not (callable(commit_lock)
                                            or hasattr(commit_lock, "__enter__")):
            raise InvalidInputError("commit_lock must be a callable taking the version being "
                                    "committed and returning a context manager (as in pylance), "
                                    "or a context manager")
        self.commit_lock = commit_lock
        self.manifest_store = None  # an ExternalManifestStore, set by the table layer
        # how versions are committed (lancenb.table.handlers), chosen when the table
        # layer opens the store: put_if_absent below, or the external manifest store
        self.commit_handler = None
        from lancenb.io import IOStats

        self.io_stats = IOStats()  # requests made through this store (ds.io_stats_*)
        self._made: set[str] = set()  # directories already created
        # objects of other base paths (branches, multi-base datasets): rel -> filesystem
        # path, filled only from base paths the table layer confined (lancenb.table.bases);
        # read through this store, never deleted through it, but for the new files this
        # process placed on a base (``placed``: a failed write removes them)
        self.redirects: dict[str, str] = {}
        self.placed: set[str] = set()
        # how put_if_absent is made atomic, decided once here (see the module docstring)
        self._create_only = conditional_put_of(self.fs)
        # object stores have no directories to make (a put creates the key's prefixes);
        # skipping makedirs saves a request per new prefix
        self._flat = _package_of(type(self.fs)) in _CREATE_ONLY_PUT
        # fsspec's memory filesystem lives in this process only: no other process can
        # write it, so a lock of this process makes its puts atomic (pylance commits
        # to memory:// too); any other store without conditional writes must opt in
        self._single_process = single_process_commits(storage_options) or \
            _is_memory(self.fs)

    def renew_memory_root(self) -> bool:
        """A ``memory://`` store: start its root anew, empty (as each pylance call given
        a ``memory://`` URI does; :mod:`lancenb.io.memory`) and use it; True if done,
        False (nothing changed) for any other store."""
        if not _is_memory(self.fs):
            return False
        from lancenb.io import memory

        memory.renew(self.root)
        self.fs = memory.filesystem_for(self.fs, self.root)
        self._made.clear()
        return True

    @property
    def conditional_put(self) -> str | None:
        """How :meth:`put_if_absent` is atomic on this store: ``"commit_lock"`` (given),
        ``"link"``, ``"create"``, ``"process"`` (opted in), or None (commits refused)."""
        if self.commit_lock is not None:
            return "commit_lock"
        if self._create_only[0] is not None:
            return self._create_only[0]
        return "process" if self._single_process else None

    # -- paths -----------------------------------------------------------------
    def path(self, rel: str) -> str:
        """The filesystem path of ``rel``, which must stay inside the root (no ``..``,
        absolute path, scheme, ``::`` or NUL: see :mod:`lancenb.io.paths`)."""
        if rel and not is_confined(rel):
            check_relative(rel, what="object", source=f"dataset {self.uri!r}")
        if rel in self.redirects:
            return self.redirects[rel]
        return f"{self.root}/{rel}" if rel else self.root

    def uri_of(self, rel: str) -> str:
        """A URI naming ``rel`` (for messages; reads go through :meth:`open_reader`)."""
        p = self.redirects.get(rel) or (f"{self.root}/{rel}" if rel else self.root)
        if self.local:
            return p
        proto = self.fs.protocol[0] if isinstance(self.fs.protocol, (tuple, list)) else \
            self.fs.protocol
        return f"{proto}://{p.lstrip('/')}" if proto != "memory" else \
            f"{uri_scheme(self.fs, p)}://{p}"

    def open_reader(self, rel: str):
        """A :class:`lancenb.io.RangeReader` of ``rel`` through this store's own
        filesystem object (the path is never re-parsed as a URL)."""
        from lancenb.io import RangeReader

        return RangeReader(self.fs, self.path(rel), uri=self.uri_of(rel),
                           counters=(self.io_stats,))

    # -- reads -----------------------------------------------------------------
    def exists(self, rel: str) -> bool:
        """Whether the object ``rel`` (relative to the root) exists."""
        p = self.path(rel)
        if self.local:
            return os.path.exists(p)
        return bool(self.fs.exists(p))

    def has(self, rel: str) -> bool:
        """Whether the object ``rel`` exists, strictly: unlike :meth:`exists`, an error
        other than "not found" (permissions, a network failure) raises
        ``LanceIOError`` instead of reading as absent. On an object store it is one
        request, a read of the first byte (s3fs answers a missing key's ``info``
        with a HEAD and then a listing)."""
        p = self.path(rel)
        try:
            if self.local:
                return stat.S_ISREG(os.stat(p).st_mode)
            self.fs.cat_file(p, start=0, end=1)
            self._count(reads=1)
            return True
        except (FileNotFoundError, NotADirectoryError):
            return False
        except Exception as e:  # noqa: BLE001 - "cannot tell" must not read as "absent"
            raise LanceIOError(f"cannot tell whether {self.uri_of(rel)!r} exists: {e}") from e

    def read_bytes(self, rel: str, *, max_bytes: int | None = None) -> bytes:
        """The whole object ``rel`` (or its first ``max_bytes``); a missing one raises
        ``LanceFileNotFoundError``."""
        p = self.path(rel)
        try:
            if self.local:
                with open(p, "rb") as f:
                    data = f.read() if max_bytes is None else f.read(max_bytes)
            elif max_bytes is not None:
                data = self.fs.cat_file(p, start=0, end=max_bytes)
            else:
                data = self.fs.cat_file(p)
            self._count(reads=1, bytes_read=len(data))
            return data
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
        """The size of object ``rel`` in bytes; a missing one raises ``LanceFileNotFoundError``."""
        p = self.path(rel)
        try:
            return os.path.getsize(p) if self.local else int(self.fs.size(p))
        except FileNotFoundError as e:
            raise LanceFileNotFoundError(f"no such object: {self.uri_of(rel)!r}") from e

    # -- writes ----------------------------------------------------------------
    def _makedirs_for(self, p: str) -> None:
        # (not for local files: _create_local makes a directory only when it is missing)
        parent = p.rsplit("/", 1)[0] if "/" in p else ""
        if parent and parent not in self._made and not self._flat:
            self.fs.makedirs(parent, exist_ok=True)
            # only once it exists: a thread sharing this store skips the call after this
            self._made.add(parent)

    def write_bytes(self, rel: str, data: bytes, *, atomic: bool = True) -> None:
        """Write an object whole. Local files go through a temporary file and a rename
        (``atomic``) so readers never see half of one; ``atomic=False`` is for names no
        reader looks at until something else points to them (unique new files)."""
        p = self.path(rel)
        if not self.local:
            self._makedirs_for(p)
        try:
            if self.local and not atomic:
                with _create_local(p) as f:
                    f.write(data)
            elif self.local:
                tmp = f"{p}.{uuid.uuid4().hex}.tmp"
                with _create_local(tmp) as f:
                    f.write(data)
                os.replace(tmp, p)
            else:
                self.fs.pipe_file(p, bytes(data))
        except OSError as e:
            raise LanceIOError(f"cannot write {self.uri_of(rel)!r}: {e}") from e
        self._count(writes=1, bytes_written=len(data))

    def _count(self, **kw) -> None:
        from lancenb.io import PROCESS_IO

        self.io_stats.add(**kw)
        PROCESS_IO.add(**kw)

    def count_write(self, nbytes: int) -> None:
        """Record a write another writer made under this store (a data file written
        through its own handle), for :attr:`io_stats`."""
        self.io_stats.add(writes=1, bytes_written=int(nbytes))

    def put_if_absent(self, rel: str, data: bytes, version: int | None = None) -> bool:
        """Create ``rel`` with ``data`` unless it exists; True if this call created it.

        ``version`` is passed to a callable ``commit_lock`` (pylance's convention).
        A ``commit_lock``, when given, replaces an object store's conditional write
        (as in pylance: the escape hatch for S3-compatible servers that ignore
        ``If-None-Match``); on a local disk the link is still used under the lock.
        """
        p = self.path(rel)
        if not self.local:  # (local files make their directory when it is missing)
            self._makedirs_for(p)
        how = self._create_only[0]
        if how == "link" and self.commit_lock is None:
            return self._link_if_absent(rel, p, data)
        if how == "create" and self.commit_lock is None:
            return self._create_if_absent(rel, p, data)
        if self.commit_lock is None:
            if not self._single_process and self.manifest_store is None:
                raise UnsafeCommitError(
                    f"cannot commit to {self.uri!r}: its filesystem "
                    f"({type(self.fs).__module__}.{type(self.fs).__name__}) has no "
                    f"conditional write, so concurrent writers could overwrite each other's "
                    f"versions. Use one of: a store with conditional writes (local disk, s3fs, "
                    f"gcsfs, adlfs), commit_lock= (a lock shared by every writer), or "
                    f"manifest_store= (an external manifest store such as "
                    f"SqliteManifestStore). If only this one process ever writes here (e.g. "
                    f"memory:// in tests), pass storage_options="
                    f"{{{SINGLE_PROCESS_COMMITS!r}: True}}.")
            # opted in to single-process commits, or (with an external manifest store,
            # which is the commit point of versions) objects such as tags
            lock = _process_lock(f"{self.fs.protocol}:{self.root}")
        else:
            return self._put_under_commit_lock(rel, p, data, how, version)
        with lock:
            return self._put_locked(rel, p, data, how)

    def _put_locked(self, rel: str, p: str, data: bytes, how: str) -> bool:
        if how == "link":
            return self._link_if_absent(rel, p, data)
        if self.fs.exists(p):
            return False
        try:
            self.fs.pipe_file(p, bytes(data))
        except OSError as e:
            raise LanceIOError(f"cannot write {self.uri_of(rel)!r}: {e}") from e
        return True

    def _put_under_commit_lock(self, rel: str, p: str, data: bytes, how: str,
                               version: int | None) -> bool:
        """:meth:`put_if_absent` holding the caller's ``commit_lock`` (pylance's
        contract: ``commit_lock(version)`` returns a context manager held while the
        manifest of ``version`` is written). What the lock raises is a
        :class:`CommitLockError` saying whether the manifest was written: taking the
        lock failed (nothing written), or releasing it failed after the put (whose
        outcome it carries). When the put itself fails the lock is released with that
        error, which propagates (the caller reads the object back)."""
        what = f"dataset {self.uri!r}: the commit_lock"
        try:
            lock = self.commit_lock if (hasattr(self.commit_lock, "__enter__") and not
                                        isinstance(self.commit_lock, type)) \
                else self.commit_lock(version)
            exit_ = type(lock).__exit__
            type(lock).__enter__(lock)
        except Exception as e:
            raise CommitLockError(f"{what} raised {type(e).__name__}: {e} while taking the "
                                  f"lock for version {version}; nothing was committed",
                                  committed=False) from e
        try:
            created = self._put_locked(rel, p, data, how)
        except BaseException as e:
            exit_(lock, type(e), e, e.__traceback__)
            raise
        try:
            exit_(lock, None, None, None)
        except Exception as e:
            done = (f"version {version} was committed" if created else
                    f"version {version} had been committed by another writer")
            raise CommitLockError(f"{what} raised {type(e).__name__}: {e} while releasing "
                                  f"the lock ({done})", committed=created) from e
        return created

    def _link_if_absent(self, rel: str, p: str, data: bytes) -> bool:
        under = _dir_over_local(self.fs)
        if under is not None:
            p = self.fs._join(p)  # the real local path under the dir:// root
        tmp = f"{p}.{uuid.uuid4().hex}.tmp"
        try:
            # no fsync: like the reference, visibility is atomic (link) but
            # durability across power loss is left to the filesystem
            with _create_local(tmp) as f:
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

    def _create_if_absent(self, rel: str, p: str, data: bytes) -> bool:
        _, keyword, value = self._create_only
        payload = bytes(data)
        for attempt in range(_CONFLICT_RETRIES + 1):
            try:
                self.fs.pipe_file(p, payload, **{keyword: value})
                return True
            except Exception as e:  # noqa: BLE001 - classified below, else re-raised
                if _already_exists(e):
                    # a retried request whose first try did land meets its own object:
                    # the content (a manifest names a fresh transaction) tells whose it is
                    return self._holds(p, payload)
                if _write_conflict(e) and attempt < _CONFLICT_RETRIES:
                    time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))
                    continue
                if isinstance(e, OSError):
                    raise LanceIOError(f"cannot write {self.uri_of(rel)!r}: {e}") from e
                raise
        raise LanceIOError(f"cannot write {self.uri_of(rel)!r}: conditional write kept "
                           f"conflicting after {_CONFLICT_RETRIES} retries")

    def _holds(self, p: str, payload: bytes) -> bool:
        try:
            return self.fs.cat_file(p) == payload
        except OSError:
            return False

    def delete(self, rel: str, *, missing_ok: bool = True) -> None:
        """Delete object ``rel`` (a missing one is an error only with ``missing_ok=False``).
        An object of another base path (:attr:`redirects`) is never deleted from here."""
        if rel in self.redirects and rel not in self.placed:
            return
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

