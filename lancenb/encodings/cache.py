"""The search cache: what random access needs, kept per reader in one LRU.

Takes and ranges need, per page, the mini-block chunk table (buffer 0), the
repetition index and the decoded dictionary. A reader loads them in an
initialisation phase (one coalesced read per column) and keeps them in a
:class:`SearchCache` shared by all its columns, bounded in bytes, evicting the least
recently used entries. Keys are ``(column, page, what)``, so the memory can be
reported per column.

Full scans neither need nor fill it: inside :func:`scanning` a decoder keeps what it
loads in a scratch area that lives only as long as the scan (it still uses entries
already cached).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import contextmanager

import numpy as np
import pyarrow as pa

from lancenb.io.pools import fork_safe_locks

__all__ = ["SearchCache", "scanning", "CachedState", "DEFAULT_CAPACITY"]

DEFAULT_CAPACITY = 256 * 1024 * 1024

_tls = threading.local()


@contextmanager
def scanning():
    """Within this block (on this thread) decoders do not fill the search cache."""
    prev = getattr(_tls, "scratch", None)
    _tls.scratch = {}
    try:
        yield
    finally:
        _tls.scratch = prev


def _scratch():
    return getattr(_tls, "scratch", None)


def nbytes_of(value) -> int:
    """Approximate memory held by a cached value."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (pa.Array, pa.ChunkedArray)):
        return int(value.nbytes)
    if isinstance(value, (tuple, list)):
        return sum(nbytes_of(v) for v in value)
    if hasattr(value, "__dataclass_fields__"):
        return sum(nbytes_of(getattr(value, f)) for f in value.__dataclass_fields__)
    return 64


class SearchCache:
    """A thread-safe LRU of decoded metadata, bounded by ``capacity`` bytes."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY):
        self.capacity = int(capacity)
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        fork_safe_locks(self, "_lock")
        self.nbytes = 0
        self.hits = 0
        self.misses = 0

    def get(self, key):
        """The value cached under ``key`` (marking it recently used), or None."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return hit[0]

    def put(self, key, value, nbytes: int | None = None) -> None:
        """Cache ``value`` under ``key`` (``nbytes``: its size, measured when None),
        evicting the least recently used entries beyond the capacity; a value larger than the
        whole capacity is not kept.
        """
        size = nbytes_of(value) if nbytes is None else int(nbytes)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.nbytes -= old[1]
            if size > self.capacity:
                return
            self._entries[key] = (value, size)
            self.nbytes += size
            while self.nbytes > self.capacity:
                _, (_, s) = self._entries.popitem(last=False)
                self.nbytes -= s

    def __contains__(self, key) -> bool:
        with self._lock:
            return key in self._entries

    def memory_by_column(self) -> dict:
        """Bytes held per column (the first element of each key)."""
        out: dict = {}
        with self._lock:
            for key, (_, s) in self._entries.items():
                out[key[0]] = out.get(key[0], 0) + s
        return out

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._entries.clear()
            self.nbytes = 0


class CachedState:
    """Mixin for page decoders: ``_cached``/``_store`` of named per-page state in the
    reader's search cache (or in the decoder itself when it has none)."""

    cache: SearchCache | None = None
    cache_key: tuple = ()

    def attach_cache(self, cache: SearchCache, key: tuple) -> None:
        """Keep this object's state in ``cache`` under ``key`` instead of on the object."""
        self.cache, self.cache_key = cache, key

    def _cached(self, name: str):
        if self.cache is not None:
            hit = self.cache.get(self.cache_key + (name,))
            if hit is not None:
                return hit
        scratch = _scratch()
        if scratch is not None:
            hit = scratch.get((id(self), name))
            if hit is not None:
                return hit
        return self.__dict__.get("_own_" + name)

    def _store(self, name: str, value) -> None:
        scratch = _scratch()
        if scratch is not None:
            scratch[(id(self), name)] = value
        elif self.cache is not None:
            self.cache.put(self.cache_key + (name,), value)
        else:
            self.__dict__["_own_" + name] = value
