"""Sorting ``(value, row id)`` pairs in bounded memory for index building.

Rows arrive in batches. They are gathered into *runs* of at most ``run_rows`` rows;
each run is sorted (:func:`~lancenb.index.scalar.common.sort_order`: nulls first,
NaN last) and, when there is more than one, spilled to a temporary Lance file. The
runs are then merged block by block: every run contributes its next ``block_rows``
rows, the pending rows are sorted together, and everything up to the *smallest of
the runs' last pending values* is emitted (no unread row of any run can sort before
it: each run is sorted and its unread rows follow its last pending one). The run
that held that value is then empty and reads its next block. Memory stays at about
``run_rows`` rows while building runs and ``runs x block_rows`` while merging.

Example: runs ``[1, 4, 9]`` and ``[2, 3, 8]`` with blocks of 2 rows: pending ``1 4 |
2 3``; the smallest last value is 3 (run 2), so ``1 2 3`` go out and run 2 reads
``8``; pending ``4 | 8``, smallest last 4: ``4`` goes out and run 1 reads ``9``; then
``8 9``.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pyarrow as pa

from lancenb.errors import InvalidInputError, LanceIOError
from lancenb.file.reader import LanceFileReader
from lancenb.file.writer import LanceFileWriter
from lancenb.index.scalar.common import sort_order

__all__ = ["sorted_pairs", "memory_pool", "RUN_ROWS", "BLOCK_ROWS"]

# rows sorted in memory at once (about 100 MB for 8-byte values and their ids)
RUN_ROWS = 1 << 22
# rows each spilled run contributes to one merge step
BLOCK_ROWS = 1 << 16


def _sort(values: pa.Array, ids: np.ndarray) -> pa.Table:
    order = sort_order(values)
    return pa.table({"values": values.take(pa.array(order)),
                     "ids": pa.array(np.asarray(ids, np.uint64)[order], pa.uint64())})


def _runs(batches, value_type: pa.DataType, run_rows: int):
    """Sorted runs (tables of ``values``, ``ids``) of at most ``run_rows`` rows."""
    vals, ids, n = [], [], 0
    for v, i in batches:
        pos = 0
        while pos < len(v):
            take = min(len(v) - pos, run_rows - n)
            vals.append(v.slice(pos, take))
            ids.append(np.asarray(i[pos:pos + take], np.uint64))
            n += take
            pos += take
            if n == run_rows:
                yield _sort(pa.concat_arrays(vals), np.concatenate(ids))
                vals, ids, n = [], [], 0
    if n or not vals:
        arr = pa.concat_arrays(vals) if vals else pa.array([], value_type)
        yield _sort(arr, np.concatenate(ids) if ids else np.zeros(0, np.uint64))


def _merge(readers, block_rows: int):
    """Merge sorted run files into sorted tables."""
    pos = [0] * len(readers)
    sizes = [r.num_rows() for r in readers]
    pending = [None] * len(readers)

    def refill(k):
        n = min(block_rows, sizes[k] - pos[k])
        pending[k] = readers[k].read_range(pos[k], n).to_table() if n else None
        pos[k] += n

    for k in range(len(readers)):
        refill(k)
    while any(p is not None for p in pending):
        live = [k for k in range(len(readers)) if pending[k] is not None]
        # the run whose last pending value sorts first bounds what may go out now
        lasts = pa.concat_arrays([pending[k].column("values").combine_chunks().slice(
            pending[k].num_rows - 1, 1) for k in live])
        first = live[int(sort_order(lasts)[0])]
        tables, owners = [], []
        for k in live:
            tables.append(pending[k])
            owners.append(np.full(pending[k].num_rows, k, np.int64))
        allt = pa.concat_tables(tables).combine_chunks()
        owner = np.concatenate(owners)
        order = sort_order(allt.column("values").combine_chunks())
        # (stable: the bounding run's rows keep their order, its last one is the cut)
        cut = int(np.flatnonzero(owner[order] == first)[-1]) + 1
        out, keep = order[:cut], order[cut:]
        yield allt.take(pa.array(out))
        rest = allt.take(pa.array(keep))
        rest_owner = owner[keep]
        for k in live:
            mine = np.flatnonzero(rest_owner == k)
            pending[k] = rest.take(pa.array(mine)) if mine.size else None
            if pending[k] is None:  # (always so for the bounding run)
                refill(k)


def memory_pool() -> int | None:
    """The bytes an index build may sort in memory: pylance's ``LANCE_MEM_POOL_SIZE``
    (None: unbounded, or ``LANCE_BYPASS_SPILLING`` set, which takes precedence)."""
    raw = os.environ.get("LANCE_MEM_POOL_SIZE")
    if not raw or os.environ.get("LANCE_BYPASS_SPILLING"):
        return None
    try:
        return int(raw)
    except ValueError as e:
        raise InvalidInputError(f"LANCE_MEM_POOL_SIZE={raw!r} is not a number of bytes") from e


def _within(batches, pool: int):
    """``batches``, refused when one does not fit the memory pool."""
    for v, i in batches:
        need = v.nbytes + 8 * len(v)
        if need > pool:
            raise LanceIOError(f"Resources exhausted: sorting index input needs {need} bytes "
                               f"for a batch of {len(v)} rows; the memory pool "
                               f"(LANCE_MEM_POOL_SIZE) is {pool} bytes")
        yield v, i


def sorted_pairs(batches, value_type: pa.DataType, *, run_rows: int = RUN_ROWS,
                 block_rows: int = BLOCK_ROWS):
    """Tables of ``values``, ``ids`` in index order, from ``batches`` of ``(values
    array, uint64 ids)``, holding about ``run_rows`` rows in memory at a time (fewer
    when the memory pool, :func:`memory_pool`, is smaller)."""
    pool = memory_pool()
    if pool is not None:
        batches = _within(batches, pool)
        width = 8 + (pa.array([], value_type).type.bit_width // 8
                     if pa.types.is_primitive(value_type) else 32)
        run_rows = max(1, min(run_rows, pool // width))
        block_rows = max(1, min(block_rows, run_rows))
    runs = _runs(batches, value_type, run_rows)
    first = next(runs)
    second = next(runs, None)
    if second is None:
        yield first
        return
    with tempfile.TemporaryDirectory(prefix="lancenb-index-sort-") as tmp:
        paths = []
        for k, run in enumerate(_chain(first, second, runs)):
            p = os.path.join(tmp, f"run{k}.lance")
            with LanceFileWriter(p, run.schema) as w:
                w.write_batch(run)
            paths.append(p)
            del run
        yield from _merge([LanceFileReader(p) for p in paths], block_rows)


def _chain(a, b, rest):
    yield a
    yield b
    yield from rest
