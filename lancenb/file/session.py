"""``LanceFileSession``: readers and writers of Lance files under one base path.

pylance's session shares one object-store connection between the files it opens;
lancenb's resolves the base path once (:class:`lancenb.io.store.ObjectStore`) and opens
every file through that store's filesystem, with the paths checked to stay under the
base (no ``..``, absolute paths or schemes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from lancenb.errors import LanceFileNotFoundError
from lancenb.file.reader import LanceFileReader
from lancenb.file.writer import LanceFileWriter
from lancenb.io.store import ObjectStore

__all__ = ["LanceFileSession", "ListResult"]


@dataclass
class ListResult:
    """One level of a listing: folders (``common_prefixes``) and files (``objects``),
    as paths relative to the session's base path."""

    common_prefixes: list[str]
    objects: list[str]


class LanceFileSession:
    """Opens Lance files relative to ``base_path`` (a local path or a URI).

    Examples
    --------
    >>> import pyarrow as pa, tempfile
    >>> session = LanceFileSession(tempfile.mkdtemp())
    >>> with session.open_writer("a.lance") as writer:
    ...     writer.write_batch(pa.table({"x": [1, 2]}))
    >>> session.open_reader("a.lance").read_all().to_table().num_rows
    2
    >>> session.list()
    ['a.lance']
    """

    def __init__(self, base_path, storage_options: dict | None = None, **kwargs):
        if kwargs.get("namespace_client") is not None or kwargs.get("table_id") is not None:
            raise NotImplementedError("LanceFileSession: namespace credentials are not "
                                      "supported by lancenb")
        self.base_path = os.fspath(base_path)
        self.storage_options = storage_options
        self._store = ObjectStore(self.base_path, storage_options)

    def _uri(self, path: str) -> str:
        self._store.path(path)  # refuses a path leaving the base
        return f"{self.base_path.rstrip('/')}/{path}"

    def open_reader(self, path: str, columns: list[str] | None = None) -> LanceFileReader:
        """A :class:`LanceFileReader` of ``path`` (relative to the base path)."""
        return LanceFileReader(self._uri(path), columns=columns,
                               _io=self._store.open_reader(path))

    def open_writer(self, path: str, *, schema=None, data_cache_bytes: int | None = None,
                    version: str | None = None, keep_original_array: bool | None = None,
                    max_page_bytes: int | None = None) -> LanceFileWriter:
        """A :class:`LanceFileWriter` of ``path`` (relative to the base path); the
        options are the writer's (``keep_original_array`` is accepted: lancenb never
        keeps the arrays it was given)."""
        return LanceFileWriter(self._uri(path), schema, data_cache_bytes=data_cache_bytes,
                               version=version, storage_options=self.storage_options,
                               max_page_bytes=max_page_bytes)

    def contains(self, path: str) -> bool:
        """Whether a file exists at ``path`` (relative to the base path)."""
        return self._store.has(path)

    def list(self, path: str | None = None) -> list[str]:
        """Every file under ``path`` (default: the base path), recursively, as paths
        relative to the base path."""
        out: list[str] = []
        stack = [path.strip("/")] if path else [""]
        while stack:
            rel = stack.pop()
            for name in self._store.list(rel):
                child = f"{rel}/{name}" if rel else name
                if self._store.has(child):
                    out.append(child)
                else:
                    stack.append(child)
        return sorted(out)

    def list_with_delimiter(self, path: str | None = None) -> ListResult:
        """The folders and files directly under ``path`` (default: the base path)."""
        rel = path.strip("/") if path else ""
        prefixes, objects = [], []
        for name in sorted(self._store.list(rel)):
            child = f"{rel}/{name}" if rel else name
            (objects if self._store.has(child) else prefixes).append(child)
        return ListResult(common_prefixes=prefixes, objects=objects)

    def read_range(self, path: str, offset: int, length: int) -> bytes:
        """``length`` bytes of ``path`` at ``offset``, in one read (a missing file is
        an OSError: ``LanceFileNotFoundError``)."""
        reader = self._store.open_reader(path)
        try:
            return reader.read(offset, length)
        finally:
            reader.close()

    def delete_file(self, path: str) -> None:
        """Remove ``path``; a missing one is an OSError (``LanceFileNotFoundError``)."""
        if not self._store.has(path):
            raise LanceFileNotFoundError(f"no such file: {self._store.uri_of(path)!r}")
        self._store.delete(path, missing_ok=False)

    def upload_file(self, local_path, remote_path: str) -> None:
        """Copy the local file ``local_path`` to ``remote_path`` (under the base path)."""
        with open(os.fspath(local_path), "rb") as f:
            self._store.write_bytes(remote_path, f.read())

    def download_file(self, remote_path: str, local_path) -> None:
        """Copy ``remote_path`` (under the base path) to the local file ``local_path``."""
        data = self._store.read_bytes(remote_path)
        with open(os.fspath(local_path), "wb") as f:
            f.write(data)
