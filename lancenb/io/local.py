"""Plain local paths without fsspec.

Most datasets lancenb opens are plain local paths, which it reads and writes itself
(``os.pread``, ``open``, ``os.link``); fsspec is needed only for the other URIs.
Importing it costs a fresh process about 50 ms of CPU (it pulls in asyncio and its
compression codecs), a noticeable share of a warm start (issue 18). So
:func:`resolve_local` maps a plain local path to :data:`LOCAL` without importing it, and
:class:`LocalFS` stands in for fsspec's ``LocalFileSystem``: the few operations lancenb
leaves to the filesystem object (``find``, ``rm``, ``modified``, ...) are handed to a
real one, made (and fsspec imported) the first time one is used.
"""

from __future__ import annotations

import functools
import os
import sys

__all__ = ["LOCAL", "LocalFS", "is_local", "resolve_local"]


@functools.lru_cache(maxsize=None)
def _fsspec_local():
    from fsspec.implementations.local import LocalFileSystem

    return LocalFileSystem()


class LocalFS:
    """The local disk, as fsspec's ``LocalFileSystem`` would be, imported on first need.

    Any attribute this class lacks comes from a real ``LocalFileSystem`` (one per
    process, as fsspec caches its instances anyway).
    """

    protocol = ("file", "local")
    root_marker = "/"

    def __getattr__(self, name):
        if name.startswith("__"):  # pickle, copy and friends look for dunders
            raise AttributeError(name)
        return getattr(_fsspec_local(), name)

    def __repr__(self) -> str:
        return "LocalFS()"


#: the one instance :func:`resolve_local` hands out
LOCAL = LocalFS()


def is_local(fs) -> bool:
    """Whether ``fs`` is the local disk: :class:`LocalFS` or fsspec's ``LocalFileSystem``
    (which cannot be unless fsspec is imported)."""
    if isinstance(fs, LocalFS):
        return True
    mod = sys.modules.get("fsspec.implementations.local")
    return mod is not None and isinstance(fs, mod.LocalFileSystem)


def resolve_local(uri: str, options: dict) -> str | None:
    """The absolute path fsspec would give the plain local path ``uri`` (no scheme, no
    ``::`` chain, no filesystem options), or None for anything else (left to fsspec)."""
    if options or os.sep != "/" or "://" in uri or "::" in uri or uri.startswith("data:"):
        return None
    # what fsspec's make_path_posix and LocalFileSystem._strip_protocol do on POSIX
    if uri.startswith("~"):
        path = os.path.expanduser(uri)
    elif uri.startswith("/"):
        path = uri
    else:
        rel = uri[2:] if uri.startswith("./") else "" if uri == "." else uri
        path = f"{os.getcwd()}/{rel}"
    return path.rstrip("/") if len(path) > 1 else path
