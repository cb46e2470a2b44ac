"""``memory://`` roots started anew, as pylance's ``write_dataset(mode="create")`` does.

pylance opens a new, empty in-memory store for every ``write_dataset``/``dataset`` call
given a ``memory://`` URI, and the dataset object keeps it. lancenb keeps fsspec's one
memory filesystem per process, so a ``memory://`` dataset can be opened again by its
URI (lancenb's own tests, Spark jobs and namespaces rely on it). The two differ where
pylance succeeds and lancenb would refuse: ``write_dataset(..., "memory://x",
mode="create")`` when ``memory://x`` already holds a dataset. There lancenb, as pylance,
starts a new empty store for that root (:func:`renew`); from then on every URI under
it resolves to the new store (:func:`filesystem_for`), while dataset objects opened
before keep reading the old one's files through their own store.

Examples
--------
>>> import fsspec
>>> fs, path = fsspec.core.url_to_fs("memory://renew-example/ds")
>>> fs.pipe_file(path + "/a", b"1")
>>> renew(path)
>>> filesystem_for(fs, path + "/a").exists(path + "/a")
False
"""

from __future__ import annotations

import itertools
import weakref

from lancenb.io.pools import module_lock

__all__ = ["renew", "filesystem_for", "is_memory", "uri_scheme", "resolve_scheme"]

_LOCK = module_lock(globals(), "_LOCK")
# root path -> the memory filesystem that now holds it
_ROOTS: dict = {}
# URI scheme of each root's store -> the store: files of a dataset object opened before
# a renewal are named by URI ``memory-root<N>://path`` (:func:`uri_scheme`), which
# resolves to that object's store, not to the newest (kept while something holds it)
_BY_SCHEME: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_CLASS = None
_COUNT = itertools.count(1)


def is_memory(fs) -> bool:
    """Whether ``fs`` is fsspec's in-process memory filesystem (or a root's own one)."""
    # (by name: local I/O must not import fsspec)
    return any(c.__name__ == "MemoryFileSystem" and c.__module__ == "fsspec.implementations.memory"
               for c in type(fs).__mro__)


def _new_filesystem():
    global _CLASS
    if _CLASS is None:
        from fsspec.implementations.memory import MemoryFileSystem

        class RootMemoryFileSystem(MemoryFileSystem):
            """A memory filesystem with its own objects (fsspec's share one dict)."""

            cachable = False

            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.store = {}
                self.pseudo_dirs = [""]

        _CLASS = RootMemoryFileSystem
    fs = _CLASS()
    with _LOCK:
        fs.lancenb_scheme = f"memory-root{next(_COUNT)}"
        _BY_SCHEME[fs.lancenb_scheme] = fs
    return fs


def uri_scheme(fs, path: str) -> str:
    """The URI scheme naming the file ``path`` of the memory filesystem ``fs``:
    ``memory`` for fsspec's, ``memory-root<N>`` for a renewed root's store, and
    ``memory-root0`` for fsspec's where a renewed root now holds ``path``."""
    own = getattr(fs, "lancenb_scheme", None)
    if own is not None:
        return own
    return "memory" if filesystem_for(fs, path) is fs else "memory-root0"


def resolve_scheme(uri: str):
    """``(filesystem, path)`` of a ``memory-root<N>://path`` URI, else None."""
    if not uri.startswith("memory-root"):
        return None
    scheme, sep, path = uri.partition("://")
    if scheme == "memory-root0" and sep:
        import fsspec

        return fsspec.filesystem("memory"), "/" + path.lstrip("/")
    fs = _BY_SCHEME.get(scheme) if sep else None
    return None if fs is None else (fs, "/" + path.lstrip("/"))


def _norm(path: str) -> str:
    return "/" + path.strip("/")


def renew(path: str) -> None:
    """Give the memory root ``path`` (and everything under it) a new, empty store."""
    fs = _new_filesystem()
    with _LOCK:
        root = _norm(path)
        for r in [r for r in _ROOTS if r == root or r.startswith(root + "/")]:
            del _ROOTS[r]  # (roots inside it start anew with it)
        _ROOTS[root] = fs


def filesystem_for(fs, path: str):
    """The memory filesystem holding ``path`` now: ``fs`` (fsspec's), or the store of
    the innermost root :func:`renew` started that contains it."""
    if not _ROOTS or not is_memory(fs):
        return fs
    p = _norm(path)
    with _LOCK:
        best = None
        for r in _ROOTS:
            if (p == r or p.startswith(r + "/")) and (best is None or len(r) > len(best)):
                best = r
        return fs if best is None else _ROOTS[best]
