"""The one I/O seam: every byte lancenb reads or writes goes through here.

URIs are resolved with fsspec (``memory://``, ``file://``, plain local paths, and any
object store fsspec knows). Local files get a fast path with ``os.pread`` so ranged
reads are thread-safe and cost one system call each.

Readers count their requests (:attr:`RangeReader.stats`) so tests can check how many
reads an operation needs.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Sequence

import fsspec
from fsspec.implementations.local import LocalFileSystem

from lancenb.errors import LanceFileNotFoundError, LanceIOError

__all__ = ["RangeReader", "SequentialWriter", "open_reader", "open_writer", "resolve",
           "coalesce_ranges", "IOStats"]

# Ranges closer than this are fetched in one request (bytes in the gap are read and
# thrown away). Local reads are cheap, so the gap is small; object stores pay per
# request, so a larger gap wins there.
LOCAL_COALESCE_GAP = 4096
REMOTE_COALESCE_GAP = 1 << 20


def resolve(uri: str | os.PathLike, storage_options: dict | None = None):
    """Return ``(filesystem, path)`` for a URI or local path."""
    uri = os.fspath(uri)
    fs, path = fsspec.core.url_to_fs(uri, **(storage_options or {}))
    return fs, path


@dataclass
class IOStats:
    """Counters of the requests a reader made."""

    reads: int = 0
    bytes_read: int = 0


def coalesce_ranges(ranges: Sequence[tuple[int, int]], gap: int) -> list[tuple[int, int, list[int]]]:
    """Merge ``(offset, length)`` ranges closer than ``gap`` bytes.

    Returns ``(start, end, members)`` where ``members`` are indices into ``ranges``.
    """
    order = sorted(range(len(ranges)), key=lambda i: ranges[i][0])
    out: list[tuple[int, int, list[int]]] = []
    for i in order:
        off, ln = ranges[i]
        end = off + ln
        if out and off <= out[-1][1] + gap:
            s, e, members = out[-1]
            members.append(i)
            out[-1] = (s, max(e, end), members)
        else:
            out.append((off, end, [i]))
    return out


class RangeReader:
    """Ranged, thread-safe reads of one immutable object."""

    def __init__(self, fs, path: str, *, uri: str | None = None):
        self.fs = fs
        self.path = path
        self.uri = uri or path
        self.stats = IOStats()
        self._lock = threading.Lock()
        self._fd: int | None = None
        try:
            if isinstance(fs, LocalFileSystem):
                self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
                self._size = os.fstat(self._fd).st_size
                self.coalesce_gap = LOCAL_COALESCE_GAP
            else:
                self._size = int(fs.size(path))
                self.coalesce_gap = REMOTE_COALESCE_GAP
        except FileNotFoundError as e:
            raise LanceFileNotFoundError(f"no such file: {self.uri!r}") from e
        except OSError as e:
            raise LanceIOError(f"cannot open {self.uri!r}: {e}") from e

    def size(self) -> int:
        return self._size

    def _count(self, n: int) -> None:
        with self._lock:
            self.stats.reads += 1
            self.stats.bytes_read += n

    def read(self, offset: int, length: int) -> bytes:
        """Read exactly ``length`` bytes at ``offset``; short reads are errors."""
        if offset < 0 or length < 0 or offset + length > self._size:
            raise LanceIOError(
                f"{self.uri!r}: read of {length} bytes at offset {offset} is outside the "
                f"file ({self._size} bytes)")
        if length == 0:
            return b""
        self._count(length)
        try:
            if self._fd is not None:
                data = os.pread(self._fd, length, offset)
            else:
                data = self.fs.cat_file(self.path, start=offset, end=offset + length)
        except OSError as e:
            raise LanceIOError(f"{self.uri!r}: read at offset {offset} failed: {e}") from e
        if len(data) != length:
            raise LanceIOError(f"{self.uri!r}: short read at offset {offset}: wanted {length} "
                               f"bytes, got {len(data)}")
        return data

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[memoryview]:
        """Read several ranges, merging near ones into single requests."""
        out: list[memoryview | None] = [None] * len(ranges)
        for start, end, members in coalesce_ranges(ranges, self.coalesce_gap):
            view = memoryview(self.read(start, end - start))
            for i in members:
                off, ln = ranges[i]
                out[i] = view[off - start: off - start + ln]
        return out  # type: ignore[return-value]

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self):  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass


class SequentialWriter:
    """Append-only writer that tracks its position."""

    def __init__(self, fs, path: str, *, uri: str | None = None):
        self.uri = uri or path
        self.fs = fs
        self.path = path
        try:
            parent = fs._parent(path)
            if parent:
                fs.makedirs(parent, exist_ok=True)
            self._f = fs.open(path, "wb")
        except OSError as e:
            raise LanceIOError(f"cannot create {self.uri!r}: {e}") from e
        self._pos = 0

    def tell(self) -> int:
        return self._pos

    def write(self, data) -> int:
        n = memoryview(data).nbytes
        if n:
            self._f.write(data)
            self._pos += n
        return n

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None

    def abort(self) -> None:
        """Close and remove a partially written file."""
        try:
            self.close()
        finally:
            try:
                self.fs.rm(self.path)
            except Exception:
                pass


def open_reader(uri, storage_options: dict | None = None) -> RangeReader:
    fs, path = resolve(uri, storage_options)
    return RangeReader(fs, path, uri=os.fspath(uri))


def open_writer(uri, storage_options: dict | None = None) -> SequentialWriter:
    fs, path = resolve(uri, storage_options)
    return SequentialWriter(fs, path, uri=os.fspath(uri))
