"""Paths read from dataset metadata, confined to the dataset root.

Manifests, transactions and row-id references name other objects of the dataset by
path: a data file (``DataFile.path``, a name under ``data/``), a transaction file (a
name under ``_transactions/``), an external row-id sequence (a path from the root).
A damaged or hostile manifest can put anything there, so every such path is checked
where it is resolved, and a violation is a :class:`~lancenb.errors.CorruptFileError`
naming the manifest and the path. A confined path is relative, has no ``.``, ``..``
or empty segment, no scheme (``s3:``, ``memory:``), no fsspec chain (``::``), no
backslash and no NUL byte. Object *names* (data and transaction files) are a single
segment: pylance reads ``a/b.lance`` as the one object ``data/a%2Fb.lance``, never a
subdirectory, so a ``/`` there can only miss.

Example: ``../../other.lance/data/x.lance`` and ``x.lance::memory://a`` are refused;
``0a1b.lance`` is the object ``data/0a1b.lance``.
"""

from __future__ import annotations

from lancenb.errors import CorruptFileError

__all__ = ["check_name", "check_relative", "is_confined"]

_FORBIDDEN = ("\x00", "\\", "::")


def _problem(path, *, single: bool) -> str | None:
    """Why ``path`` is not a confined relative path (or name), or None."""
    if not isinstance(path, str):
        return f"is a {type(path).__name__}, not a string"
    if not path:
        return "is empty"
    for bad in _FORBIDDEN:
        if bad in path:
            return f"contains {bad!r}"
    if path.startswith("/"):
        return "is absolute"
    if single and "/" in path:
        return "is not a single name"
    segments = path.split("/")
    first = segments[0]
    if ":" in first:
        return "has a scheme or drive"
    for seg in segments:
        if seg in ("", ".", ".."):
            return f"has a {seg!r} segment" if seg else "has an empty segment"
    return None


def is_confined(path, *, single: bool = False) -> bool:
    """Whether ``path`` is a relative path (``single``: a name) inside the root."""
    return _problem(path, single=single) is None


def check_name(name, *, what: str, source: str) -> str:
    """``name`` if it is one object name (no ``/``); else ``CorruptFileError``.

    ``what`` says what the name is ("data file"), ``source`` where it was read
    ("manifest '.../_versions/1.manifest', fragment 3").
    """
    why = _problem(name, single=True)
    if why is not None:
        raise CorruptFileError(f"{source}: {what} path {name!r} {why}; paths in a dataset's "
                               f"metadata must name objects inside the dataset")
    return name


def check_relative(path, *, what: str, source: str) -> str:
    """``path`` if it is a relative path inside the root; else ``CorruptFileError``."""
    why = _problem(path, single=False)
    if why is not None:
        raise CorruptFileError(f"{source}: {what} path {path!r} {why}; paths in a dataset's "
                               f"metadata must stay inside the dataset")
    return path
