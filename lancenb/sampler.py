"""Samplers: which rows of a dataset a training process reads, and in what order
(pylance's ``lance.sampler``).

A sampler is called with a dataset and scan options and yields ``pyarrow.RecordBatch``
objects. :class:`FullScanSampler` reads every fragment in order;
:class:`ShardedFragmentSampler` gives rank ``r`` of ``world_size`` the fragments
``r, r + world_size, ...``; :class:`ShardedBatchSampler` gives it the runs of
``batch_size`` rows ``r, r + world_size, ...`` (rows ``[r * b, (r + 1) * b)``, ...).
:func:`maybe_sample` draws ``n`` random rows.

Where lancenb differs from pylance, on purpose:

* shuffles (``randomize=True``) come from a private ``random.Random(seed + epoch)``
  (:meth:`set_epoch`), so every rank draws the same permutation and each epoch a new
  one, the permutation pylance draws at epoch 0; pylance seeds the global ``random``
  module, changing the caller's random state, and (fragment and unfiltered batch
  sampling) with ``seed`` only: the same order every epoch.
* the samplers split their share once more between the workers of a PyTorch
  ``DataLoader`` when called with ``worker_id``/``num_workers`` (as
  :class:`lancenb.torch.data.LanceDataset` does), so ranks x workers read every row
  exactly once: fragments round-robin (or row ranges of each fragment when a rank
  has fewer fragments than workers), row runs round-robin, or -- for a filtered
  stream, whose rows are only known by scanning -- every ``num_workers``-th batch.
"""

from __future__ import annotations

import gc
import heapq
import math
import os
import random
import warnings
from abc import ABC, abstractmethod
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Generic, Iterable, Iterator, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb.errors import InvalidInputError, NotSupportedError

__all__ = ["maybe_sample", "Sampler", "FragmentSampler", "FullScanSampler",
           "ShardedFragmentSampler", "ShardedBatchSampler", "ShardedFixedBatchSampler",
           "reservoir_sampling", "PrioritizedItem"]

# batches the filtered ShardedBatchSampler keeps in its shuffling reservoir (pylance's
# figure: 256 batches, 32 Ki rows at the default batch size)
RESERVOIR_BATCHES = 256
# at most this many threads read row runs ahead (each read already decodes its columns
# on lancenb's own pool; more threads only add contention)
READ_THREADS = 4
# ShardedBatchSampler reads runs of batch_size rows together (one take) when a run is
# small: as many as make about GROUP_BYTES of Arrow data, at most GROUP_RUNS, and only
# when that is at least 4 (a larger run's cost is its bytes, not the read's fixed costs)
GROUP_BYTES = 8 << 20
GROUP_RUNS = 32


def _open(data):
    if isinstance(data, (str, os.PathLike)):
        from lancenb.dataset import dataset

        return dataset(os.fspath(data))
    return data


def _rng(seed):
    return np.random.default_rng(None if seed is None else int(seed))


def _check_worker(worker_id: int, num_workers: int) -> tuple[int, int]:
    worker_id, num_workers = int(worker_id), int(num_workers)
    if not 0 <= worker_id < num_workers:
        raise InvalidInputError(f"worker_id {worker_id} is not in 0..{num_workers - 1}")
    return worker_id, num_workers


def _check_rank(rank, world_size) -> tuple[int, int]:
    rank, world_size = int(rank), int(world_size)
    if world_size < 1 or not 0 <= rank < world_size:
        raise InvalidInputError(f"rank {rank} is not in 0..{world_size - 1} "
                                f"(world_size={world_size})")
    return rank, world_size


def _every_nth(batches: Iterable[pa.RecordBatch], start: int, step: int):
    for i, batch in enumerate(batches):
        if i % step == start:
            yield batch


def _read_threads(depth: int) -> int:
    # half the cores, the rest left to the consumer (the training step) and to the
    # reads' own decoding pool; one reading thread only contends for the GIL with the
    # consumer (measured 20-25% slower than reading inline on 2 cores), so none then
    threads = min(max(int(depth or 1), 1), (os.cpu_count() or 1) // 2, READ_THREADS)
    return threads if threads >= 2 else 0


def _read_ahead(read, items: list, depth: int, threads: int) -> Iterator[pa.RecordBatch]:
    """``read(item)`` for each item, in order, with up to ``depth`` reads in flight on
    ``threads`` threads (0: inline; the decoding kernels release the GIL), so reading
    overlaps the consumer's work. The pool belongs to this generator, so it is made in
    the process that iterates (a forked DataLoader worker included)."""
    depth = max(int(depth or 1), 1)
    if threads < 1 or len(items) <= 1:
        for item in items:
            yield from read(item)
        return
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="lancenb-sampler")
    try:
        pending = deque()
        todo = iter(items)
        for item in todo:
            pending.append(pool.submit(read, item))
            if len(pending) >= depth:
                break
        while pending:
            batches = pending.popleft().result()
            nxt = next(todo, None)
            if nxt is not None:
                pending.append(pool.submit(read, nxt))
            yield from batches
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _read_runs(dataset, runs: list[tuple[int, int]], columns, scan
               ) -> list[pa.RecordBatch]:
    """Each run ``[start, stop)`` of rows as one batch, in the order given, read with
    one take of them all in row order (the fixed costs of a read, per column and
    page, paid once for the group, not per run)."""
    lo = np.array([a for a, _ in runs], np.int64)
    n = np.array([b - a for a, b in runs], np.int64)
    order = np.argsort(lo, kind="stable")
    ends = np.cumsum(n[order])
    # the rows of the runs in row order: a run's rows are its start plus 0, 1, ...
    idx = np.arange(int(ends[-1]), dtype=np.int64)
    idx += np.repeat(lo[order] - (ends - n[order]), n[order])
    table = dataset.take(idx, columns=columns, **scan).combine_chunks()
    at = np.empty(len(runs), np.int64)
    at[order] = ends - n[order]
    return [_one_batch(table.slice(int(a), int(m))) for a, m in zip(at, n)]


def _one_batch(table: pa.Table) -> pa.RecordBatch:
    batches = table.to_batches()
    if len(batches) == 1:
        return batches[0]
    return _concat(batches) if batches else pa.RecordBatch.from_pylist([], table.schema)


def _concat(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(batches) == 1:
        return batches[0]
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


# -- maybe_sample ------------------------------------------------------------------------
def _efficient_sample(ds, n, columns, batch_size, max_takes, rng):
    # about max_takes runs of contiguous rows, one per equal chunk of the dataset, at a
    # random offset in the chunk: few random reads, a fair spread over the dataset.
    # Exactly n rows (pylance's rounding can give a few more or fewer).
    total = len(ds)
    chunk = max(total // max_takes, 1)
    starts = np.arange(0, total, chunk)
    sizes = np.minimum(chunk, total - starts)
    quotas = np.full(len(starts), n // len(starts))
    quotas[:n % len(starts)] += 1
    spill = int(np.maximum(quotas - sizes, 0).sum())
    quotas = np.minimum(quotas, sizes)
    for i in range(len(starts)):  # one step per chunk: move what a short chunk lacks
        if spill == 0:
            break
        extra = min(spill, int(sizes[i] - quotas[i]))
        quotas[i] += extra
        spill -= extra
    buf: list[pa.RecordBatch] = []
    buffered = 0
    for start, size, take in zip(starts.tolist(), sizes.tolist(), quotas.tolist()):
        if take == 0:
            continue
        offset = start + (int(rng.integers(0, size - take)) if take < size else 0)
        buf.extend(ds.take(np.arange(offset, offset + take), columns=columns).to_batches())
        buffered += take
        if buffered >= batch_size:
            yield _concat(buf)
            buf, buffered = [], 0
    if buf:
        yield _concat(buf)


def _filtered_efficient_sample(ds, n, columns, batch_size, target_takes, filt, rng):
    # pylance runs only "<column> IS NOT NULL" over the sample (in memory)
    if not (len(columns) == 1 and filt.strip().lower() == f"{columns[0]} is not null".lower()):
        raise NotSupportedError(f"maybe_sample cannot yet apply the filter {filt!r} to a "
                                f"sample (only '<column> IS NOT NULL' over one column)")
    total = len(ds)
    shard = math.ceil(n / target_takes)
    tables, remaining, pending = [], n, 0
    for s in rng.permutation(math.ceil(total / shard)):
        start = int(s) * shard
        table = pc.drop_null(ds.to_table(columns=columns, offset=start,
                                         limit=min(shard, total - start)))
        table = table.slice(0, remaining)
        if table.num_rows == 0:
            continue
        tables.append(table)
        remaining -= table.num_rows
        pending += table.num_rows
        if pending >= batch_size:
            combined = pa.concat_tables(tables).combine_chunks()
            start = 0
            while pending - start >= batch_size:
                yield combined.slice(start, batch_size).to_batches()[0]
                start += batch_size
            tables = [combined.slice(start)] if start < pending else []
            pending -= start
        if remaining <= 0:
            break
    if pending:
        yield pa.concat_tables(tables).combine_chunks().to_batches()[0]


def maybe_sample(dataset, n: int, columns, batch_size: int = 10240, max_takes: int = 2048,
                 filt: str | None = None, *, seed: int | None = None
                 ) -> Iterator[pa.RecordBatch]:
    """Sample ``n`` rows of ``dataset`` (all of them, scanned, when it has no more).

    Parameters
    ----------
    dataset : str, Path or LanceDataset
    n : int
        Rows to sample.
    columns : list of str, dict or str
        Columns to read.
    batch_size : int
        Rows per batch yielded (about: runs of rows are not split).
    max_takes : int
        At most this many random reads: above ``max_takes`` rows, the sample is
        ``max_takes`` runs of contiguous rows at random places.
    filt : str, optional
        Only ``"<column> IS NOT NULL"`` is supported with a sample (as in pylance).
    seed : int, optional
        Seed of the draw (lancenb's addition; None: a fresh draw each call).

    Examples
    --------
    >>> batches = list(maybe_sample(ds, 1000, ["vec"], seed=0))  # doctest: +SKIP
    """
    ds = _open(dataset)
    if isinstance(columns, str):
        columns = [columns]
    rng = _rng(seed)
    if n >= len(ds):
        yield from ds.to_batches(columns=columns, batch_size=batch_size, filter=filt)
    elif filt is not None:
        yield from _filtered_efficient_sample(ds, n, columns, batch_size, max_takes, filt, rng)
    elif n > max_takes:
        yield from _efficient_sample(ds, n, columns, batch_size, max_takes, rng)
    else:
        choices = rng.choice(len(ds), n, replace=False)
        for start in range(0, len(choices), batch_size):
            table = ds.take(choices[start:start + batch_size], columns=columns)
            yield table.combine_chunks().to_batches()[0]


T = TypeVar("T")


@dataclass(order=True)
class PrioritizedItem(Generic[T]):
    """An item ordered by ``priority`` only (for heaps of batches)."""

    priority: int
    item: T = field(compare=False)


def reservoir_sampling(stream: Iterable[T], k: int, *, seed: int | None = None) -> list[T]:
    """``k`` items of ``stream`` at random (one pass; items kept with random priorities)."""
    rng = _rng(seed)
    heap: list[PrioritizedItem] = []
    for idx, item in enumerate(stream):
        entry = PrioritizedItem(int(rng.integers(0, k * 2)), item)
        if len(heap) < k:
            heapq.heappush(heap, entry)
        else:
            heapq.heappushpop(heap, entry)
        if idx % 10240 == 0:
            gc.collect()
    return [e.item for e in heap]


# -- samplers -----------------------------------------------------------------------------
class Sampler(ABC):
    """Yields ``pyarrow.RecordBatch`` objects of a dataset: implement ``__call__``.

    A sampler that splits its output between DataLoader workers itself sets
    ``splits_workers = True`` and accepts ``worker_id``/``num_workers`` keywords;
    for any other, :class:`lancenb.torch.data.LanceDataset` gives each worker every
    ``num_workers``-th batch of the sampler's stream.
    """

    splits_workers = False

    @abstractmethod
    def __call__(self, ds, *args, batch_size: int = 128, columns=None, filter=None,
                 batch_readahead: int = 16, with_row_id: bool = False, **kwargs
                 ) -> Iterator[pa.RecordBatch]:
        """Yield the batches of ``ds`` this sampler selects."""


class FragmentSampler(Sampler):
    """Reads whole fragments, in the order :meth:`iter_fragments` gives them."""

    splits_workers = True

    def __call__(self, dataset, *args, batch_size: int = 128, columns=None, filter=None,
                 batch_readahead: int = 16, with_row_id: bool = False,
                 worker_id: int = 0, num_workers: int = 1, blob_handling=None, **kwargs
                 ) -> Iterator[pa.RecordBatch]:
        worker_id, num_workers = _check_worker(worker_id, num_workers)
        fragments = list(self.iter_fragments(dataset, *args, **kwargs))
        scan = dict(columns=columns, batch_size=batch_size, with_row_id=with_row_id)
        if blob_handling is not None:
            scan["blob_handling"] = blob_handling
        if num_workers > 1 and len(fragments) < num_workers and filter is None:
            # fewer fragments than workers: each worker reads a range of every fragment
            yield from self._fragment_ranges(fragments, worker_id, num_workers, scan)
            return
        mine = fragments[worker_id::num_workers]
        if not mine:
            return
        yield from dataset.scanner(filter=filter, batch_readahead=batch_readahead,
                                   fragments=mine, **scan).to_batches()

    @staticmethod
    def _fragment_ranges(fragments, worker_id, num_workers, scan):
        for frag in fragments:
            rows = frag.count_rows()
            lo = rows * worker_id // num_workers
            hi = rows * (worker_id + 1) // num_workers
            if hi > lo:
                yield from frag.to_batches(offset=lo, limit=hi - lo, **scan)

    @abstractmethod
    def iter_fragments(self, ds, *args, **kwargs) -> Iterator:
        """The fragments to read, in order."""


class FullScanSampler(FragmentSampler):
    """Every fragment of the dataset, in order (the default)."""

    def iter_fragments(self, dataset, **kwargs):
        yield from dataset.get_fragments()


class _Sharded:
    def __init__(self, rank: int, world_size: int, randomize: bool = False, seed: int = 0):
        self._rank, self._world_size = _check_rank(rank, world_size)
        self._randomize = bool(randomize)
        self._seed = int(seed)
        self._epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Shuffle for ``epoch`` (the draw is seeded with ``seed + epoch``)."""
        self._epoch = int(epoch)

    @property
    def epoch(self) -> int:
        return self._epoch

    def _shuffled(self, items: list) -> list:
        # a private random.Random seeded as pylance seeds the global one, so a shuffle
        # is pylance's for the same seed (at epoch 0 where pylance ignores the epoch)
        items = list(items)
        random.Random(self._seed + self._epoch).shuffle(items)
        return items

    def _generator(self) -> np.random.Generator:
        return np.random.default_rng(self._seed + self._epoch)

    @classmethod
    def torch_rank(cls) -> tuple[int, int]:
        import torch.distributed as dist

        return dist.get_rank(), dist.get_world_size()


class ShardedFragmentSampler(_Sharded, FragmentSampler):
    """Rank ``rank`` of ``world_size`` reads fragments ``rank::world_size`` (after a
    shuffle of the fragment list with ``seed + epoch`` when ``randomize``).

    Examples
    --------
    >>> sampler = ShardedFragmentSampler(rank=1, world_size=2)  # doctest: +SKIP
    >>> batches = list(sampler(ds, batch_size=25, columns=["id"]))  # doctest: +SKIP
    """

    @staticmethod
    def from_torch(randomize: bool = False, seed: int = 0) -> ShardedFragmentSampler:
        """Rank and world size from :mod:`torch.distributed`."""
        rank, world_size = _Sharded.torch_rank()
        return ShardedFragmentSampler(rank, world_size, randomize=randomize, seed=seed)

    def iter_fragments(self, dataset, **kwargs):
        fragments = list(dataset.get_fragments())
        if self._randomize:
            fragments = self._shuffled(fragments)
        yield from fragments[self._rank::self._world_size]


class ShardedBatchSampler(_Sharded, Sampler):
    """Rank ``rank`` of ``world_size`` reads every ``world_size``-th run of
    ``batch_size`` rows, starting with run ``rank``; in random order with
    ``randomize``.

    With a filter the runs are of the filtered rows, so each rank scans the filtered
    dataset and keeps every ``world_size``-th row from its ``rank``-th on; ``randomize``
    then shuffles through a reservoir of batches. Row ids are not returned (as in
    pylance; ``with_row_id`` warns).
    """

    splits_workers = True

    @staticmethod
    def from_torch(randomize: bool = False, seed: int = 0) -> ShardedBatchSampler:
        """Rank and world size from :mod:`torch.distributed`."""
        rank, world_size = _Sharded.torch_rank()
        return ShardedBatchSampler(rank, world_size, randomize=randomize, seed=seed)

    def _shard_scan(self, dataset, batch_size, columns, batch_readahead, filter,
                    scan) -> Iterator[pa.RecordBatch]:
        pending: list[pa.RecordBatch] = []
        buffered = seen = 0
        for batch in dataset.scanner(columns=columns, batch_readahead=batch_readahead,
                                     filter=filter, scan_in_order=True, **scan).to_batches():
            # this rank's rows: those at positions rank, rank + world_size, ... of the
            # filtered stream
            first = (self._rank - seen) % self._world_size
            seen += batch.num_rows
            if first >= batch.num_rows:
                continue
            kept = batch.take(pa.array(np.arange(first, batch.num_rows, self._world_size)))
            pending.append(kept)
            buffered += kept.num_rows
            if buffered >= batch_size:
                big = _concat(pending)
                start = 0
                while big.num_rows - start >= batch_size:
                    yield big.slice(start, batch_size)
                    start += batch_size
                pending = [big.slice(start)] if start < big.num_rows else []
                buffered = big.num_rows - start
        if buffered:
            yield _concat(pending)

    def _sample_filtered(self, dataset, batch_size, columns, batch_readahead, filter, scan):
        stream = self._shard_scan(dataset, batch_size, columns, batch_readahead, filter, scan)
        if not self._randomize:
            yield from stream
            return
        rng = self._generator()
        heap: list[PrioritizedItem] = []
        for i, batch in enumerate(stream):
            # ties broken by arrival, so the order depends on the draw alone
            entry = PrioritizedItem((int(rng.integers(0, 2 * RESERVOIR_BATCHES)), i), batch)
            if len(heap) < RESERVOIR_BATCHES:
                heapq.heappush(heap, entry)
            else:
                yield heapq.heappushpop(heap, entry).item
        order = rng.permutation(len(heap))
        for i in order:
            yield heap[i].item

    def _ranges(self, total: int, batch_size: int) -> list[tuple[int, int]]:
        starts = range(self._rank * batch_size, total, self._world_size * batch_size)
        ranges = [(s, min(s + batch_size, total)) for s in starts]
        if self._randomize:
            ranges = self._shuffled(ranges)
        return ranges

    def _sample_all(self, dataset, batch_size, columns, ranges, readahead, scan):
        def read(group):
            if len(group) == 1:
                start, stop = group[0]
                table = dataset.to_table(columns=columns, offset=start, limit=stop - start,
                                         **scan)
                return table.combine_chunks().to_batches()
            return _read_runs(dataset, group, columns, scan)

        if not ranges:
            return
        first = read(ranges[:1])  # its size sets how many runs a read takes together
        yield from first
        per_run = max(sum(b.nbytes for b in first), 1)
        k = min(GROUP_RUNS, GROUP_BYTES // per_run)
        k = k if k >= 4 else 1  # large runs: read alone (their costs are bytes)
        groups = [ranges[i:i + k] for i in range(1, len(ranges), k)]
        depth = max(1, int(readahead or 1) // k)  # about readahead runs in flight
        yield from _read_ahead(read, groups, depth, _read_threads(depth))

    def __call__(self, dataset, *args, batch_size: int = 128, columns=None, filter=None,
                 batch_readahead: int = 16, with_row_id: bool | None = None,
                 worker_id: int = 0, num_workers: int = 1, blob_handling=None, **kwargs
                 ) -> Iterator[pa.RecordBatch]:
        worker_id, num_workers = _check_worker(worker_id, num_workers)
        if with_row_id is not None:
            warnings.warn("with_row_id is not supported for ShardedBatchSampler",
                          stacklevel=2)
        scan = {} if blob_handling is None else {"blob_handling": blob_handling}
        if filter is None:
            ranges = self._ranges(dataset.count_rows(), int(batch_size))
            return self._sample_all(dataset, batch_size, columns,
                                    ranges[worker_id::num_workers], batch_readahead, scan)
        stream = self._sample_filtered(dataset, batch_size, columns, batch_readahead,
                                       filter, scan)
        return _every_nth(stream, worker_id, num_workers) if num_workers > 1 else stream


class ShardedFixedBatchSampler(ShardedBatchSampler):
    """Row-index batches for a ``DataLoader``'s ``batch_sampler``: rank ``rank`` gets
    the ``ceil(total_num_rows / world_size)`` consecutive rows from
    ``rank * ceil(total_num_rows / world_size)``, in runs of ``batch_size`` (shuffled
    with ``seed + epoch`` when ``randomize``). Called with a dataset, it reads as
    :class:`ShardedBatchSampler`.

    Examples
    --------
    >>> list(ShardedFixedBatchSampler(1, 2, batch_size=2, total_num_rows=6))
    [[3, 4], [5]]
    """

    def __init__(self, rank: int, world_size: int, randomize: bool = False, seed: int = 0,
                 batch_size: int = 0, total_num_rows: int = 0):
        super().__init__(rank, world_size, randomize, seed)
        self._total_num_rows = int(total_num_rows)
        self._batch_size = int(batch_size)
        if self._total_num_rows and self._batch_size <= 0:
            raise InvalidInputError(f"ShardedFixedBatchSampler: batch_size must be positive "
                                    f"(got {batch_size}) when total_num_rows is set")

    def _bounds(self) -> tuple[int, int]:
        per_rank = math.ceil(self._total_num_rows / self._world_size)
        start = self._rank * per_rank
        return start, min(start + per_rank, self._total_num_rows)

    def __len__(self) -> int:
        start, stop = self._bounds()
        if stop <= start:
            return 0
        return math.ceil((stop - start) / self._batch_size)

    def __iter__(self) -> Iterator[list[int]]:
        start, stop = self._bounds()
        batches = [list(range(s, min(s + self._batch_size, stop)))
                   for s in range(start, stop, max(self._batch_size, 1))]
        if self._randomize:
            batches = self._shuffled(batches)
        yield from batches

    @staticmethod
    def from_torch(batch_size: int, total_num_rows: int, randomize: bool = False,
                   seed: int = 0) -> ShardedFixedBatchSampler:
        """Rank and world size from :mod:`torch.distributed`."""
        rank, world_size = _Sharded.torch_rank()
        return ShardedFixedBatchSampler(rank, world_size, randomize, seed, batch_size,
                                        total_num_rows)

