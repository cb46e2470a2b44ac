"""Read-ahead of a scan: its batches (``batch_readahead``) and its small files.

:func:`read_ahead` runs a batch iterator on a background thread that stays up to
``depth`` batches ahead of the consumer, so reading and decoding the next fragments
(numba kernels and pyarrow release the GIL) overlaps with whatever the consumer does
with the current batch. Batches come out in the same order, and an error raised while
reading is raised by the consumer's ``next()``. Closing the iterator early (a
``break``, a ``limit`` reached downstream) stops the thread after the batch it is
reading.

Each scan gets its own thread rather than a worker of a shared pool: a consumer may
interleave several scans (``zip`` of two readers), and scans waiting for a free worker
of a bounded pool could then wait on each other forever.

:func:`decoded_ahead` decodes the small data files of the next fragments together, per
shape (:mod:`lancenb.file.same_shape`), before the fragments read them.

:func:`read_several` reads the next fragments of a scan on the scan pool while the
consumer works through the current one (and decodes two at once on two cores: a
fragment's read is one thread's work when it reads one column).
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from itertools import islice
from typing import Callable, Iterable, Iterator, TypeVar

from lancenb.errors import LanceError
from lancenb.file.same_shape import DECODE_AHEAD_FILES, SmallFile, decode_ahead
from lancenb.io.pools import ThreadPool
from lancenb.table.fragments import is_legacy_file

__all__ = ["read_ahead", "decoded_ahead", "read_several", "READ_SEVERAL_BYTES"]

T = TypeVar("T")
_END = object()
_POLL = 0.05  # seconds between checks of the stop flag while the queue is full
# the fragments read_several has in flight besides the first hold at most this many
# bytes of data files (a fragment is decoded whole: this bounds the extra memory)
READ_SEVERAL_BYTES = 256 << 20
# read_several's tasks only read (they never wait on another task of this pool)
_SCAN_POOL_NAME = "lancenb-scan"
_SCAN_POOL = ThreadPool(lambda: max(2, os.cpu_count() or 1), _SCAN_POOL_NAME)


def read_ahead(source: Iterator[T], depth: int) -> Iterator[T]:
    """Yield the items of ``source``, produced up to ``depth`` ahead on a thread.

    Parameters
    ----------
    source : iterator
        Consumed on the background thread only.
    depth : int
        How many items may wait, produced but not yet consumed (>= 1).

    Examples
    --------
    >>> list(read_ahead(iter(range(5)), 2))
    [0, 1, 2, 3, 4]
    """
    q: queue.Queue = queue.Queue(maxsize=max(1, int(depth)))
    stop = threading.Event()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=_POLL)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in source:
                if not put((True, item)):
                    return
            put((True, _END))
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, raised there
            put((False, e))
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()

    worker = threading.Thread(target=produce, name="lancenb-readahead", daemon=True)
    worker.start()
    try:
        while True:
            ok, item = q.get()
            if not ok:
                raise item
            if item is _END:
                return
            yield item
    finally:
        stop.set()
        worker.join()


def decoded_ahead(frags, columns: list[str], window: int = DECODE_AHEAD_FILES):
    """Yield ``frags`` in order; before each run of ``window`` fragments, decode their
    small files' ``columns`` together (:func:`decode_ahead`, per shape and field), so
    each fragment's own read then takes its columns ready-made. A fragment whose
    plan fails is left alone here (its own read raises, in scan order)."""
    it = iter(frags)
    while True:
        run = list(islice(it, window))
        if not run:
            return
        groups: dict = {}
        for frag in run:
            try:
                plan, _ = frag.readers_for(columns)
                for fi, names in plan.items():
                    df = frag.protobuf.files[fi]
                    r = frag.dataset.snapshot.open_file(df.path, is_legacy_file(df))
                    if isinstance(r, SmallFile):
                        for fname in names.values():
                            groups.setdefault((r.shape_key, r.field_index(fname)),
                                              []).append(r)
            except LanceError:
                continue
        for (_, idx), files in groups.items():
            decode_ahead(files, idx)
        yield from run


def read_several(read: Callable[[T], object], items: Iterable[T], depth: int,
                 size: Callable[[T], int] = lambda item: 0) -> Iterator:
    """``read(item)`` of each of ``items``, in order, with up to ``depth`` of them
    under way at once on the scan pool (the ones after the first only while their
    ``size`` adds up to at most ``READ_SEVERAL_BYTES``). ``items`` is consumed on the
    calling thread; an error raised by a read is raised in order. Closing the
    iterator cancels the reads not started (the ones running finish unseen).

    Examples
    --------
    >>> list(read_several(lambda x: x * 2, range(4), 2))
    [0, 2, 4, 6]
    """
    if depth <= 1 or threading.current_thread().name.startswith(_SCAN_POOL_NAME):
        # (a scan started by a read of the pool's own runs inline: a worker waiting on
        # tasks queued behind it could wait forever)
        for item in items:
            yield read(item)
        return
    pool = _SCAN_POOL.get()
    pending: deque = deque()  # (future, size)
    held = 0  # sizes of the pending reads after the first
    it = iter(items)
    try:
        nxt = next(it, _END)
        while nxt is not _END or pending:
            while nxt is not _END and len(pending) < depth:
                z = int(size(nxt)) if pending else 0
                if pending and held + z > READ_SEVERAL_BYTES:
                    break
                pending.append((pool.submit(read, nxt), z))
                held += z
                nxt = next(it, _END)
            fut, _ = pending.popleft()
            if pending:  # the next one becomes the first: its size no longer counts
                held -= pending[0][1]
                pending[0] = (pending[0][0], 0)
            yield fut.result()
    finally:
        for fut, _ in pending:
            fut.cancel()
