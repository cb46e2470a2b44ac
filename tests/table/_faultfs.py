"""A fault-injecting fsspec filesystem for commit-safety tests.

``faulty:///abs/path`` is the local directory ``/abs/path`` seen through
:class:`FaultFS`, a *non-local* filesystem (so lancenb's store goes through fsspec
for every call, as it does on an object store). :data:`CONTROL` counts the mutating
calls (``pipe_file``, ``open`` for writing, ``rm``, ``mkdir``/``makedirs``, ``mv``,
``put``, ``touch``...) and fails the k-th one with an ``OSError``:

* ``mode="before"``: the call does nothing and raises (a request that never
  reached the store);
* ``mode="after"``: the call takes effect and then raises (a request whose answer
  was lost: the caller cannot tell it happened).

``CONTROL.hook(name, path)`` is called before every call, reads included, so a test
can run another operation at an exact point of the one under test.
"""

from __future__ import annotations

import errno
import io
import threading

import fsspec
from fsspec.implementations.local import LocalFileSystem
from fsspec.spec import AbstractFileSystem

PROTOCOL = "faulty"


class Control:
    """What the next calls do: count, fail the k-th mutating call, call a hook."""

    def __init__(self):
        self._lock = threading.Lock()
        self.reset()

    def reset(self, fail_at: int | None = None, mode: str = "before", hook=None) -> None:
        self.count = 0  # mutating calls seen
        self.fail_at = fail_at
        self.mode = mode
        self.hook = hook
        self.failed: tuple | None = None  # (k, name, path) of the injected failure
        self.calls: list[tuple[str, str]] = []

    def before(self, name: str, path: str) -> bool:
        """Count a mutating call; True if it must fail (raises now in mode "before")."""
        with self._lock:
            self.count += 1
            self.calls.append((name, path))
            hit = self.fail_at is not None and self.count == self.fail_at
            if hit:
                self.failed = (self.count, name, path)
        if hit and self.mode == "before":
            raise OSError(errno.EIO, f"injected fault: {name} #{self.count} ({path})")
        return hit

    def after(self, hit: bool, name: str, path: str) -> None:
        if hit:
            raise OSError(errno.EIO, f"injected fault after {name} #{self.count} ({path})")

    def call_hook(self, name: str, path: str) -> None:
        hook = self.hook
        if hook is not None:
            hook(name, path)


CONTROL = Control()


class _FaultyWriter(io.RawIOBase):
    """A file open for writing whose close may fail after the data landed."""

    def __init__(self, f, hit: bool, path: str):
        self._f, self._hit, self._path = f, hit, path

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        return self._f.write(b)

    def close(self) -> None:
        if self.closed:
            return
        self._f.close()
        super().close()
        CONTROL.after(self._hit, "open-w", self._path)


class FaultFS(AbstractFileSystem):
    """The local filesystem under ``faulty://``, with faults from :data:`CONTROL`."""

    protocol = (PROTOCOL,)
    root_marker = "/"

    def __init__(self, *args, **kwargs):
        # storage options meant for lancenb's store (e.g. its commit mode) are ignored
        super().__init__()
        self.local = LocalFileSystem()

    @classmethod
    def _strip_protocol(cls, path):
        path = str(path)
        if path.startswith(f"{PROTOCOL}://"):
            path = path[len(PROTOCOL) + 3:]
        return "/" + path.lstrip("/") if path else "/"

    def unstrip_protocol(self, name: str) -> str:
        return f"{PROTOCOL}://{name}"

    # -- reads: delegated, hook only ---------------------------------------------
    def ls(self, path, detail=True, **kwargs):
        path = self._strip_protocol(path)
        CONTROL.call_hook("ls", path)
        return self.local.ls(path, detail=detail, **kwargs)

    def info(self, path, **kwargs):
        path = self._strip_protocol(path)
        CONTROL.call_hook("info", path)
        return self.local.info(path, **kwargs)

    def cat_file(self, path, start=None, end=None, **kwargs):
        path = self._strip_protocol(path)
        CONTROL.call_hook("cat_file", path)
        return self.local.cat_file(path, start=start, end=end, **kwargs)

    def modified(self, path):
        return self.local.modified(self._strip_protocol(path))

    def created(self, path):
        return self.local.created(self._strip_protocol(path))

    # -- mutations: counted, may fail -----------------------------------------------
    def _mutate(self, name: str, path: str, fn):
        CONTROL.call_hook(name, path)
        hit = CONTROL.before(name, path)
        out = fn()
        CONTROL.after(hit, name, path)
        return out

    def pipe_file(self, path, value, **kwargs):
        path = self._strip_protocol(path)
        return self._mutate("pipe_file", path, lambda: self.local.pipe_file(path, value))

    def _open(self, path, mode="rb", **kwargs):
        path = self._strip_protocol(path)
        if "r" in mode and "+" not in mode:
            CONTROL.call_hook("open-r", path)
            return self.local._open(path, mode=mode, **kwargs)
        CONTROL.call_hook("open-w", path)
        hit = CONTROL.before("open-w", path)
        return _FaultyWriter(self.local._open(path, mode=mode, **kwargs), hit, path)

    def open(self, path, mode="rb", **kwargs):
        # no fsspec buffering layer: a write goes straight to the wrapped file
        return self._open(path, mode=mode, **kwargs)

    def rm_file(self, path):
        path = self._strip_protocol(path)
        return self._mutate("rm", path, lambda: self.local.rm_file(path))

    def rm(self, path, recursive=False, maxdepth=None):
        paths = path if isinstance(path, list) else [path]
        for p in paths:
            p = self._strip_protocol(p)
            self._mutate("rm", p, lambda p=p: self.local.rm(p, recursive=recursive,
                                                             maxdepth=maxdepth))

    def _rm(self, path):
        self.rm_file(path)

    def mkdir(self, path, create_parents=True, **kwargs):
        path = self._strip_protocol(path)
        return self._mutate("mkdir", path,
                            lambda: self.local.mkdir(path, create_parents=create_parents))

    def makedirs(self, path, exist_ok=False):
        path = self._strip_protocol(path)
        return self._mutate("makedirs", path,
                            lambda: self.local.makedirs(path, exist_ok=exist_ok))

    def rmdir(self, path):
        path = self._strip_protocol(path)
        return self._mutate("rmdir", path, lambda: self.local.rmdir(path))

    def mv(self, path1, path2, **kwargs):
        p1, p2 = self._strip_protocol(path1), self._strip_protocol(path2)
        return self._mutate("mv", p2, lambda: self.local.mv(p1, p2, **kwargs))

    def cp_file(self, path1, path2, **kwargs):
        p1, p2 = self._strip_protocol(path1), self._strip_protocol(path2)
        return self._mutate("cp", p2, lambda: self.local.cp_file(p1, p2, **kwargs))

    def put_file(self, lpath, rpath, **kwargs):
        rpath = self._strip_protocol(rpath)
        return self._mutate("put", rpath, lambda: self.local.put_file(lpath, rpath, **kwargs))

    def touch(self, path, truncate=True, **kwargs):
        path = self._strip_protocol(path)
        return self._mutate("touch", path, lambda: self.local.touch(path, truncate=truncate))


def register() -> None:
    """Make ``faulty://`` resolve to :class:`FaultFS` (idempotent)."""
    fsspec.register_implementation(PROTOCOL, FaultFS, clobber=True)


def uri(path) -> str:
    """The ``faulty://`` URI of a local directory."""
    return f"{PROTOCOL}://{str(path)}"
