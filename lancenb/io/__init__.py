"""The one I/O seam: every byte lancenb reads or writes goes through here.

URIs are resolved with fsspec (``memory://``, ``file://`` and any object store fsspec
knows); plain local paths without it (:mod:`lancenb.io.local`: fsspec is then not even
imported). Local files get a fast path with ``os.pread`` so ranged reads are thread-safe
and cost one system call each.

Readers count their requests (:attr:`RangeReader.stats`) so tests can check how many
reads an operation needs.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from lancenb.errors import LanceFileNotFoundError, LanceIOError
from lancenb.io.local import is_local, resolve_local
from lancenb.io.pools import fork_safe_locks, module_lock

__all__ = ["RangeReader", "SequentialWriter", "open_reader", "open_writer", "resolve",
           "coalesce_ranges", "IOStats"]

# Ranges closer than this are fetched in one request (bytes in the gap are read and
# thrown away). Local reads are cheap, so the gap is small; object stores pay per
# request, so a larger gap wins there.
LOCAL_COALESCE_GAP = 4096
REMOTE_COALESCE_GAP = 1 << 20
_HAS_PREADV = hasattr(os, "preadv")
# a local read of at least this many requests issues them from one kernel call
# (:mod:`lancenb.kernels.fileio`); fewer (metadata, a page or two) from Python, which
# costs less than a kernel call then and never loads numba for a manifest
_KERNEL_READS = 8


def resolve(uri: str | os.PathLike, storage_options: dict | None = None):
    """Return ``(filesystem, path)`` for a URI or local path (``storage_options`` as
    :func:`lancenb.io.options.fsspec_options` adapts them)."""
    from lancenb.io.options import fsspec_options

    uri = os.fspath(uri)
    options = fsspec_options(uri, storage_options)
    path = resolve_local(uri, options)
    if path is not None:  # a plain local path: fsspec is not even imported
        from lancenb.io.local import LOCAL

        return LOCAL, path
    import fsspec

    from lancenb.io.memory import filesystem_for, resolve_scheme

    own = resolve_scheme(uri)  # (the store of a memory:// root started anew)
    if own is not None:
        return own
    fs, path = fsspec.core.url_to_fs(uri, **options)
    return filesystem_for(fs, path), path


@dataclass
class IOStats:
    """Counters of requests: a reader's, a dataset store's, or the process's
    (:data:`PROCESS_IO`)."""

    reads: int = 0
    bytes_read: int = 0
    writes: int = 0
    bytes_written: int = 0

    def add(self, *, reads: int = 0, bytes_read: int = 0, writes: int = 0,
            bytes_written: int = 0) -> None:
        """Count reads/writes and their bytes (thread-safe)."""
        with _COUNT_LOCK:
            self.reads += reads
            self.bytes_read += bytes_read
            self.writes += writes
            self.bytes_written += bytes_written

    def take(self) -> "IOStats":
        """A copy of the counters, which then start again from zero (atomically)."""
        with _COUNT_LOCK:
            out = IOStats(self.reads, self.bytes_read, self.writes, self.bytes_written)
            self.reads = self.bytes_read = self.writes = self.bytes_written = 0
        return out


_COUNT_LOCK = module_lock(globals(), "_COUNT_LOCK")
# every read and write request lancenb makes in this process (``lancenb.iops_counter``,
# ``lancenb.bytes_read_counter``)
PROCESS_IO = IOStats()


def coalesce_ranges(offsets, lengths, gap: int):
    """Merge ``(offset, length)`` ranges closer than ``gap`` bytes (NumPy, no loops).

    Returns ``(order, group, starts, ends)``: ``order`` sorts the ranges by offset,
    ``group[k]`` is the merged request the ``k``-th sorted range belongs to, and
    ``starts``/``ends`` bound each merged request.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    ends = offsets + np.asarray(lengths, dtype=np.int64)
    order = np.argsort(offsets, kind="stable")
    so, se = offsets[order], ends[order]
    reach = np.maximum.accumulate(se) if len(se) else se
    new = np.ones(len(so), dtype=bool)
    if len(so) > 1:
        new[1:] = so[1:] > reach[:-1] + gap
    group = np.cumsum(new) - 1
    first = np.flatnonzero(new)
    last = np.append(first[1:], len(so)) - 1
    return order, group, so[first], reach[last]


# per-thread reusable read buffer (RangeReader.read_ranges_scratch), and its largest size
_SCRATCH = threading.local()
SCRATCH_BYTES = 32 << 20


def _scratch(n: int, dtype=np.uint8) -> np.ndarray:
    """``n`` bytes of this thread's scratch buffer (grown as needed, at most
    ``SCRATCH_BYTES``; a larger request gets a buffer of its own)."""
    if n > SCRATCH_BYTES:
        return np.empty(n, dtype)
    buf = getattr(_SCRATCH, "buf", None)
    if buf is None or len(buf) < n:
        buf = np.empty(max(n, 1 << 20), np.uint8)
        _SCRATCH.buf = buf
    return buf[:n]


class RangeReader:
    """Ranged, thread-safe reads of one immutable object."""

    def __init__(self, fs, path: str, *, uri: str | None = None, counters=()):
        self.fs = fs
        self.path = path
        self.uri = uri or path
        self.stats = IOStats()
        # more counters every read adds to (the process's; the dataset store's)
        self._counters = (self.stats, PROCESS_IO) + tuple(counters)
        self._lock = threading.Lock()
        fork_safe_locks(self, "_lock")
        self._fd: int | None = None
        try:
            if is_local(fs):
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
        """The file's size in bytes."""
        return self._size

    def count_read(self, n: int) -> None:
        """Count one read request of ``n`` bytes in this reader's counters (for readers
        that fetch through another route, e.g. a whole small file read at once)."""
        for c in self._counters:
            c.add(reads=1, bytes_read=n)

    def read(self, offset: int, length: int) -> bytes:
        """Read exactly ``length`` bytes at ``offset``; short reads are errors."""
        if offset < 0 or length < 0 or offset + length > self._size:
            raise LanceIOError(
                f"{self.uri!r}: read of {length} bytes at offset {offset} is outside the "
                f"file ({self._size} bytes)")
        if length == 0:
            return b""
        self.count_read(length)
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
        if not ranges:
            return []
        offs = np.fromiter((r[0] for r in ranges), np.int64, len(ranges))
        lens = np.fromiter((r[1] for r in ranges), np.int64, len(ranges))
        buf, pos = self.read_ranges_np(offs, lens)
        view = memoryview(buf)
        return [view[p:p + n] for p, n in zip(pos.tolist(), lens.tolist())]

    def read_ranges_np(self, offsets: np.ndarray, lengths: np.ndarray):
        """Read ranges into one uint8 array; returns ``(buffer, position of each range)``.

        Near ranges are merged into single requests (the gap bytes come along), so
        ranges sit in the buffer in offset order, not back to back.
        """
        return self._read_ranges(offsets, lengths, np.empty)

    def read_ranges_scratch(self, offsets: np.ndarray, lengths: np.ndarray):
        """:meth:`read_ranges_np` into this thread's scratch buffer (up to
        ``SCRATCH_BYTES``; larger reads get their own), for bytes the caller decodes
        into new arrays at once: the buffer is overwritten by this thread's next
        scratch read. A fresh buffer of a few MiB costs a page fault per 4 KiB on
        first touch (a 256-row take of 8 KiB images: ~25-30% of its CPU); this one
        is touched once."""
        return self._read_ranges(offsets, lengths, _scratch)

    def _read_ranges(self, offsets, lengths, alloc):
        offsets = np.asarray(offsets, dtype=np.int64)
        lengths = np.asarray(lengths, dtype=np.int64)
        if len(offsets) == 0:
            return np.zeros(0, np.uint8), np.zeros(0, np.int64)
        if np.any(offsets < 0) or np.any(lengths < 0) or np.any(offsets + lengths > self._size):
            bad = int(np.flatnonzero((offsets < 0) | (lengths < 0)
                                     | (offsets + lengths > self._size))[0])
            raise LanceIOError(f"{self.uri!r}: read of {int(lengths[bad])} bytes at offset "
                               f"{int(offsets[bad])} is outside the file ({self._size} bytes)")
        order, group, gstart, gend = coalesce_ranges(offsets, lengths, self.coalesce_gap)
        gsize = gend - gstart
        gpos = np.zeros(len(gsize), dtype=np.int64)
        np.cumsum(gsize[:-1], out=gpos[1:])
        total = int(gsize.sum())
        buf = alloc(total, dtype=np.uint8)
        if self._fd is not None and _HAS_PREADV:
            # local file: the requests straight to pread from one kernel call, counted
            # once (a take of 256 random rows makes 256 requests: 2-4 us of Python each
            # when issued one by one)
            if len(gstart) >= _KERNEL_READS:
                self._pread_all(gstart, gsize, buf, gpos)
            else:
                for s, n, p in zip(gstart.tolist(), gsize.tolist(), gpos.tolist()):
                    self._preadv(s, n, buf[p:p + n])
            nreq = int(np.count_nonzero(gsize))
            for c in self._counters:
                c.add(reads=nreq, bytes_read=total)
        else:
            for s, n, p in zip(gstart.tolist(), gsize.tolist(), gpos.tolist()):
                self._read_into(s, n, buf[p:p + n])
        pos = np.empty(len(offsets), dtype=np.int64)
        pos[order] = gpos[group] + (offsets[order] - gstart[group])
        return buf, pos

    def _pread_all(self, starts: np.ndarray, sizes: np.ndarray, buf: np.ndarray,
                   pos: np.ndarray) -> None:
        """Each range ``i`` into ``buf[pos[i]:pos[i] + sizes[i]]`` (local files): all of
        them through :func:`lancenb.kernels.fileio.pread_ranges`; a read it stops at is
        repeated with ``os.preadv``, which names the error (or reads it after all)."""
        from lancenb.kernels import fileio

        fd, k, n = self._fd, 0, len(starts)
        while k < n:
            k = int(fileio.pread_ranges(fd, buf, starts, sizes, pos, k))
            if k < 0:
                raise LanceIOError(f"{self.uri!r}: read ranges do not fit their buffer")
            if k == n:
                return
            s, z, p = int(starts[k]), int(sizes[k]), int(pos[k])
            self._preadv(s, z, buf[p:p + z])
            k += 1

    def _preadv(self, offset: int, length: int, out: np.ndarray) -> None:
        """One local read into ``out`` (not counted: the caller counts)."""
        try:
            got = os.preadv(self._fd, [out], offset) if length else 0
        except OSError as e:
            raise LanceIOError(f"{self.uri!r}: read at offset {offset} failed: {e}") from e
        if got != length:
            raise LanceIOError(f"{self.uri!r}: short read at offset {offset}: wanted "
                               f"{length} bytes, got {got}")

    def _read_into(self, offset: int, length: int, out: np.ndarray) -> None:
        if length == 0:
            return
        self.count_read(length)
        try:
            if self._fd is not None and _HAS_PREADV:
                got = os.preadv(self._fd, [out], offset)
            elif self._fd is not None:
                data = os.pread(self._fd, length, offset)
                got = len(data)
                out[:got] = np.frombuffer(data, np.uint8)
            else:
                data = self.fs.cat_file(self.path, start=offset, end=offset + length)
                got = len(data)
                out[:got] = np.frombuffer(data, np.uint8)[:length]
        except OSError as e:
            raise LanceIOError(f"{self.uri!r}: read at offset {offset} failed: {e}") from e
        if got != length:
            raise LanceIOError(f"{self.uri!r}: short read at offset {offset}: wanted {length} "
                               f"bytes, got {got}")

    def close(self) -> None:
        """Release the file handle (reads after this fail)."""
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
        self._local = is_local(fs)
        try:
            if self._local:
                try:
                    self._f = open(path, "wb")
                except FileNotFoundError:  # (the directory only when it is missing)
                    parent = os.path.dirname(path)
                    if not parent:
                        raise
                    os.makedirs(parent, exist_ok=True)
                    self._f = open(path, "wb")
            else:
                parent = fs._parent(path)
                if parent:
                    fs.makedirs(parent, exist_ok=True)
                self._f = fs.open(path, "wb")
        except OSError as e:
            raise LanceIOError(f"cannot create {self.uri!r}: {e}") from e
        self._pos = 0

    def tell(self) -> int:
        """Bytes written so far."""
        return self._pos

    def write(self, data) -> int:
        """Append ``data`` (any buffer); returns its size."""
        n = memoryview(data).nbytes
        if n:
            self._f.write(data)
            self._pos += n
            PROCESS_IO.add(writes=1, bytes_written=n)
        return n

    def close(self) -> None:
        """Flush and close the file."""
        if self._f is not None:
            self._f.close()
            self._f = None

    def abort(self) -> None:
        """Close and remove a partially written file."""
        try:
            self.close()
        finally:
            try:
                if self._local:
                    os.unlink(self.path)
                else:
                    self.fs.rm(self.path)
            except Exception:
                pass


def open_reader(uri, storage_options: dict | None = None) -> RangeReader:
    """A :class:`RangeReader` over the file at ``uri`` (a path or a URL fsspec knows).

    Parameters
    ----------
    uri : str or os.PathLike
        The file.
    storage_options : dict, optional
        Passed to the filesystem (credentials, endpoints; pylance's names are accepted).

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "f.bin")
    >>> with open(p, "wb") as f:
    ...     _ = f.write(b"0123456789")
    >>> r = open_reader(p)
    >>> r.size(), bytes(r.read_ranges([(2, 3)])[0])
    (10, b'234')
    >>> r.close()
    """
    fs, path = resolve(uri, storage_options)
    return RangeReader(fs, path, uri=os.fspath(uri))


def open_writer(uri, storage_options: dict | None = None) -> SequentialWriter:
    """A :class:`SequentialWriter` creating (or replacing) the file at ``uri``.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "f.bin")
    >>> w = open_writer(p)
    >>> w.write(b"abc"), w.tell()
    (3, 3)
    >>> w.close()
    """
    fs, path = resolve(uri, storage_options)
    return SequentialWriter(fs, path, uri=os.fspath(uri))
