"""Flat (exact) vector search: every live row's distance to the query, best ``k`` kept.

Fragments are read in row ranges of at most :data:`RANGE_ROWS` rows, each range a task
on a thread pool (decoding and the distance and top-k kernels release the GIL), and
each range is streamed in batches of :data:`BATCH_ROWS` rows: a batch's distances are
computed (``kernels.distance``), its best ``k`` merged into the range's running best
(``kernels.topk``), and the batch dropped, so memory stays at a batch plus ``k``
candidates per task. A candidate is ``(distance, row id, fragment id, position among
the fragment's live rows)``; the position lets the caller take the row's other columns
afterwards (late materialisation), as pylance's plan does.

Vectors: fixed-size lists of float16 (widened to float32), float32, float64 or uint8
(hamming); multivectors (lists of fixed-size lists) score the sum over the query's
vectors of the smallest distance to one of the row's vectors (what pylance 14 gives;
``1 - sum(1 - min)`` with one query vector).
A null vector, or a NaN distance (cosine of a zero vector), is never a result.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancenb.errors import InvalidInputError
from lancenb.io.pools import ThreadPool
from lancenb.kernels import distance as kd
from lancenb.kernels import topk as kt

__all__ = ["Candidates", "FlatQuery", "flat_search", "vectors_of_batch"]

BATCH_ROWS = 32768     # rows per batch a task scores at once (~16 MiB at 128 x f32)
RANGE_ROWS = 262144    # rows per task: a 1M-row fragment is four tasks for the pool

_POOL = ThreadPool(lambda: os.cpu_count() or 1, "lancenb-vector")


@dataclass
class FlatQuery:
    """What a flat search scores: ``query`` is ``(dim,)`` or, for a multivector column,
    ``(n_queries, dim)``, already in the computation's dtype (float32/float64/uint8)."""

    column: str
    query: np.ndarray
    metric: int
    k: int
    multivector: bool = False
    lower: float | None = None   # distance_range, lower bound inclusive
    upper: float | None = None   # upper bound exclusive


@dataclass
class Candidates:
    """Scored rows, best first after :meth:`best`."""

    dist: np.ndarray   # float32
    row_id: np.ndarray  # uint64
    frag: np.ndarray   # int64 fragment id
    pos: np.ndarray    # int64 position among the fragment's live rows (-1: unknown)

    @staticmethod
    def empty() -> "Candidates":
        return Candidates(np.zeros(0, np.float32), np.zeros(0, np.uint64),
                          np.zeros(0, np.int64), np.zeros(0, np.int64))

    @staticmethod
    def concat(parts: list) -> "Candidates":
        parts = [p for p in parts if len(p.dist)]
        if not parts:
            return Candidates.empty()
        return Candidates(*(np.concatenate([getattr(p, f) for p in parts])
                            for f in ("dist", "row_id", "frag", "pos")))

    def __len__(self) -> int:
        return len(self.dist)

    def best(self, k: int) -> "Candidates":
        """The best ``k``, by distance then row id, best first."""
        pos = np.empty(k, np.int64)
        n = kt.topk_by_key(self.dist, self.row_id, k, pos)
        if n < 0:
            raise InvalidInputError(f"top-k: bad size (k={k})")
        pos = pos[:n]
        return Candidates(self.dist[pos], self.row_id[pos], self.frag[pos], self.pos[pos])


def _float_values(values: pa.Array) -> np.ndarray:
    arr = values.to_numpy(zero_copy_only=False)
    if arr.dtype == np.float16:
        arr = arr.astype(np.float32)
    return arr


def vectors_of_batch(col: pa.Array, dim: int) -> tuple[np.ndarray, np.ndarray | None]:
    """``(vectors (n, dim), valid mask or None)`` of a fixed-size-list array; null rows
    hold whatever their slots hold (callers mask them)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if isinstance(col, pa.ExtensionArray):
        col = col.storage
    n = len(col)
    values = col.values.slice(col.offset * dim, n * dim)
    x = _float_values(values).reshape(n, dim)
    valid = None
    if col.null_count:
        valid = col.is_valid().to_numpy(zero_copy_only=False)
    return np.ascontiguousarray(x), valid


def _status(code: int, what: str) -> None:
    if code < 0:
        raise InvalidInputError(f"vector search: {what} (status {code})")


def _score_batch(fq: FlatQuery, col: pa.Array, dim: int) -> np.ndarray:
    """float32 distances of a batch's rows (NaN for rows never returned)."""
    if fq.multivector:
        return _score_multivector(fq, col, dim)
    x, valid = vectors_of_batch(col, dim)
    if x.dtype != fq.query.dtype:
        x = x.astype(fq.query.dtype)
    out = np.empty(len(x), np.float32)
    _status(kd.distances_to_query(x, fq.query, fq.metric, out), "distances")
    if valid is not None:
        out[~valid] = np.nan
    return out


def _score_multivector(fq: FlatQuery, col: pa.Array, dim: int) -> np.ndarray:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    n = len(col)
    offsets = col.offsets.to_numpy()
    inner = col.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    x, _ = vectors_of_batch(inner, dim)
    if x.dtype != fq.query.dtype:
        x = x.astype(fq.query.dtype)
    m = len(fq.query)
    pair = np.empty((len(x), m), np.float32)
    _status(kd.distances_to_many(x, fq.query, fq.metric, pair), "distances")
    starts = (offsets[:-1] - offsets[0]).astype(np.int64)
    counts = np.diff(offsets)
    out = np.full(n, np.nan, np.float32)
    has = counts > 0
    if len(x) and has.any():
        best = np.minimum.reduceat(pair, starts[has], axis=0)  # (rows with vectors, m)
        out[has] = best.sum(axis=1, dtype=np.float32)
    if col.null_count:
        out[~col.is_valid().to_numpy(zero_copy_only=False)] = np.nan
    return out


def _in_range(fq: FlatQuery, dist: np.ndarray) -> None:
    if fq.lower is not None:
        dist[~(dist >= fq.lower)] = np.nan
    if fq.upper is not None:
        dist[~(dist < fq.upper)] = np.nan


def _scan_range(frag, fq: FlatQuery, dim: int, filter, offset: int | None,
                limit: int | None) -> Candidates:
    best = Candidates.empty()
    fid = frag.fragment_id
    seen = offset or 0  # live position of the batch's first row (without a filter)
    kw = {}
    if offset is not None:
        kw = {"offset": offset, "limit": limit}
    # with a filter the live positions of the matching rows are unknown: ask for row
    # addresses as well, the caller maps them back
    for batch in frag.to_batches(columns=[fq.column], filter=filter, with_row_id=True,
                                 batch_size=BATCH_ROWS, **kw):
        n = batch.num_rows
        if not n:
            continue
        dist = _score_batch(fq, batch.column(0), dim)
        _in_range(fq, dist)
        ids = np.asarray(batch.column("_rowid").to_numpy(), dtype=np.uint64)
        pos = np.empty(min(fq.k, n), np.int64)
        c = kt.topk_by_key(dist, ids, len(pos), pos)
        pos = pos[:max(c, 0)]
        live = (pos + seen) if filter is None else np.full(len(pos), -1, np.int64)
        part = Candidates(dist[pos], ids[pos], np.full(len(pos), fid, np.int64),
                          live.astype(np.int64))
        best = Candidates.concat([best, part]).best(fq.k)
        seen += n
    return best


def flat_search(fragments: list, fq: FlatQuery, dim: int, *, filter=None) -> Candidates:
    """The best ``fq.k`` rows of ``fragments`` (``LanceFragment`` objects), by distance
    then row id; ``filter`` (SQL or pyarrow Expression) selects the rows scored."""
    tasks = []
    for frag in fragments:
        rows = frag.count_rows() if filter is None else None
        if rows is not None and rows > RANGE_ROWS:
            for start in range(0, rows, RANGE_ROWS):
                tasks.append((frag, start, min(RANGE_ROWS, rows - start)))
        else:
            tasks.append((frag, None, None))
    if not tasks:
        return Candidates.empty()
    if len(tasks) == 1:
        return _scan_range(tasks[0][0], fq, dim, filter, tasks[0][1], tasks[0][2])
    pool = _POOL.get()
    futures = [pool.submit(_scan_range, f, fq, dim, filter, o, n) for f, o, n in tasks]
    return Candidates.concat([f.result() for f in futures]).best(fq.k)
