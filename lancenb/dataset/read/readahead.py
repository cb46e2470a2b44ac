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
"""

from __future__ import annotations

import queue
import threading
from itertools import islice
from typing import Iterator, TypeVar

from lancenb.errors import LanceError
from lancenb.file.same_shape import DECODE_AHEAD_FILES, SmallFile, decode_ahead
from lancenb.table.fragments import is_legacy_file

__all__ = ["read_ahead", "decoded_ahead"]

T = TypeVar("T")
_END = object()
_POLL = 0.05  # seconds between checks of the stop flag while the queue is full


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
