"""Lance datasets as PyTorch datasets (pylance's ``lance.torch.data``).

:class:`LanceDataset` is an ``IterableDataset`` of batches (dicts of tensors, or the
tensor when one column is read); :class:`SafeLanceDataset` a map-style dataset whose
``__getitems__`` reads a whole batch of indices in one take.

Sharding is automatic and exact: the rank and world size come from the arguments or
``torch.distributed``, the DataLoader worker from ``torch.utils.data.get_worker_info()``,
and the sampler splits its rank's rows between the workers (see :mod:`lancenb.sampler`),
so ranks x workers read every row once per epoch without user code. Shuffles are seeded
with ``seed + epoch``: call :meth:`LanceDataset.set_epoch` each epoch (as with torch's
``DistributedSampler``; a dataset iterated again in the same process, with no workers or
persistent ones, moves to the next epoch by itself).

lancenb has no native runtime and its thread pools restart in a forked child
(:mod:`lancenb.io.pools`), so every start method (fork, spawn, forkserver) works, also
after the parent process has read; with spawn and forkserver the dataset travels as
(uri, version, storage options) and is reopened in the worker.
"""

from __future__ import annotations

import math
import os
from collections import deque
from typing import Any, Callable, Iterable, Iterator, Literal

import numpy as np
import pyarrow as pa
import torch
import torch.utils.data

from lancenb.errors import InvalidInputError, NotSupportedError
from lancenb.sampler import (
    FragmentSampler,
    FullScanSampler,
    Sampler,
    ShardedBatchSampler,
    ShardedFragmentSampler,
    maybe_sample,
)
from lancenb.torch.cache import CachedDataset
from lancenb.torch.dist import get_dist_rank, get_dist_world_size
from lancenb.torch.tensors import to_tensor

__all__ = ["LanceDataset", "SafeLanceDataset", "TensorDataset", "get_safe_loader",
           "concat_batches"]

_to_tensor = to_tensor  # pylance's name

# a fragment sampler's scan is asked for batches of this many times batch_size rows
# (slices of the decoded fragment: no more memory), which _rebatch cuts to size
SCAN_BATCHES = 16


def _open(uri, options: dict | None):
    from lancenb.dataset import dataset

    return dataset(os.fspath(uri), **(options or {}))


def _blob_columns(schema: pa.Schema, columns) -> list[str]:
    # blob v1: binary + lance-encoding:blob; blob v2: the lance.blob.v2 extension struct
    out = []
    for name in columns:
        if name not in schema.names:  # a {name: SQL} projection's computed column
            continue
        f = schema.field(name)
        md = f.metadata or {}
        if md.get(b"ARROW:extension:name") == b"lance.blob.v2" or (
                md.get(b"lance-encoding:blob") == b"true"
                and (pa.types.is_large_binary(f.type) or pa.types.is_binary(f.type))):
            out.append(name)
    return out


def concat_batches(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    """One record batch of ``batches`` (same schema)."""
    if len(batches) == 1:
        return batches[0]
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


def _rebatch(stream: Iterable[pa.RecordBatch], size: int, *, ordered: bool = True
             ) -> Iterator[pa.RecordBatch]:
    """Batches of exactly ``size`` rows (the last may be short); zero-copy slices where
    a batch holds them, one concatenation where a batch straddles two.

    ``ordered=False`` (a shuffled stream, whose order is random anyway): a batch of
    exactly ``size`` rows passes through even while short ones wait, and the short
    ones are joined among themselves. A shuffle's one short run of rows then costs one
    concatenation, not a copy of every batch after it (each straddling two runs)."""
    if not ordered:
        yield from _rebatch_unordered(stream, size)
        return
    pending: list[pa.RecordBatch] = []
    buffered = 0
    for batch in stream:
        if batch.num_rows == 0:
            continue
        if not pending and batch.num_rows == size:
            yield batch
            continue
        pending.append(batch)
        buffered += batch.num_rows
        if buffered < size:
            continue
        if len(pending) > 1:
            need = size - (buffered - batch.num_rows)
            yield concat_batches(pending[:-1] + [batch.slice(0, need)])  # one copy
            start = need
        else:
            start = 0
        while batch.num_rows - start >= size:
            yield batch.slice(start, size)
            start += size
        pending = [batch.slice(start)] if start < batch.num_rows else []
        buffered = batch.num_rows - start
    if buffered:
        yield concat_batches(pending)


def _rebatch_unordered(stream: Iterable[pa.RecordBatch], size: int
                       ) -> Iterator[pa.RecordBatch]:
    # batches of other sizes go through an ordered rebatch of their own, fed as they
    # come, so at most one short batch's rows wait at any time
    short: deque = deque()
    joined = _rebatch(_drain(short), size)
    waiting = 0
    for batch in stream:
        if batch.num_rows == size:
            yield batch
        elif batch.num_rows:
            short.append(batch)
            waiting += batch.num_rows
            while waiting >= size:
                out = next(joined)
                waiting -= out.num_rows
                yield out
    short.append(None)  # the end: what still waits comes out
    yield from joined


def _drain(queue: deque) -> Iterator[pa.RecordBatch]:
    """The batches put in ``queue`` until a None (read only while it is not empty)."""
    while True:
        batch = queue.popleft()
        if batch is None:
            return
        yield batch


def _every_nth(stream, start: int, step: int):
    for i, batch in enumerate(stream):
        if i % step == start:
            yield batch


class LanceDataset(torch.utils.data.IterableDataset):
    """A Lance dataset as a PyTorch ``IterableDataset`` of batches.

    Parameters
    ----------
    dataset : str, Path or lancenb.LanceDataset
    batch_size : int
        Rows per batch (every batch has exactly this many but the last of each worker).
    dataset_options : dict, optional
        Keywords of :func:`lancenb.dataset` when ``dataset`` is a URI.
    columns : list of str or dict, optional
    filter : str, optional
        SQL filter (not with ``samples``, except ``"<column> IS NOT NULL"``).
    samples : int, optional
        Read a random sample of this many rows per epoch instead of the whole dataset
        (drawn with ``seed + epoch``, split between ranks and workers).
    cache : bool or str, optional
        Keep the batches on local disk at the first epoch and replay them after.
    with_row_id : bool
        Add ``_rowid`` (int64).
    rank, world_size : int, optional
        This process's shard (default: ``torch.distributed``, else the whole dataset).
    shard_granularity : "fragment" or "batch", optional
        Shard by fragments (:class:`~lancenb.sampler.ShardedFragmentSampler`) or runs
        of ``batch_size`` rows (:class:`~lancenb.sampler.ShardedBatchSampler`).
    batch_readahead : int
    to_tensor_fn : callable, optional
        Batch -> tensors (default :func:`lancenb.torch.tensors.to_tensor`; None yields
        the ``pyarrow.RecordBatch``).
    sampler : lancenb.sampler.Sampler, optional
    seed : int, optional
        Seed of ``samples`` draws and of ``shuffle`` (lancenb's addition; default: one
        drawn here, shared by every worker of this object).
    shuffle : bool
        Without a sampler: read the runs of ``batch_size`` rows in a random order,
        drawn with ``seed + epoch`` (lancenb's addition; a
        :class:`~lancenb.sampler.ShardedBatchSampler` with ``randomize=True``).

    Examples
    --------
    >>> loader = torch.utils.data.DataLoader(  # doctest: +SKIP
    ...     LanceDataset(uri, batch_size=256, columns=["vec"]), batch_size=None,
    ...     num_workers=2)
    """

    def __init__(self, dataset, batch_size: int, *args, dataset_options: dict | None = None,
                 columns=None, filter: str | None = None, samples: int | None = 0,
                 cache=None, with_row_id: bool = False, rank: int | None = None,
                 world_size: int | None = None,
                 shard_granularity: Literal["fragment", "batch"] | None = None,
                 batch_readahead: int = 16, to_tensor_fn: Callable | None = to_tensor,
                 sampler: Sampler | None = None, auto_detect_rank: bool = True,
                 seed: int | None = None, shuffle: bool = False, **kwargs):
        super().__init__()
        if isinstance(dataset, (str, os.PathLike)):
            dataset = _open(dataset, dataset_options)
        if int(batch_size) <= 0:
            raise InvalidInputError(f"batch_size must be positive, not {batch_size}")
        if shard_granularity not in (None, "fragment", "batch"):
            raise InvalidInputError(f"Invalid shard_granularity: {shard_granularity!r} "
                                    f"(expected 'fragment' or 'batch')")
        self.dataset = dataset
        self.columns = columns
        self.batch_size = int(batch_size)
        self.samples = samples
        self.filter = filter
        self.with_row_id = with_row_id
        self.batch_readahead = batch_readahead
        self._to_tensor_fn = to_tensor_fn
        self._hf_converter = None
        self.shard_granularity = shard_granularity
        self.rank = rank
        self.world_size = world_size
        self.sampler = sampler
        self.cache = cache
        self.cached_ds: CachedDataset | None = None
        self._auto_detect_rank = auto_detect_rank
        self.seed = int(np.random.SeedSequence().entropy % (2**63)) if seed is None else seed
        self.shuffle = bool(shuffle)
        self._iter_epoch = 0  # the epoch of the iteration under way
        self._epoch = 0
        self._told: int | None = None  # the epoch last given to the sampler
        names = list(columns) if columns else dataset.schema.names
        self._blob_columns = _blob_columns(dataset.schema, names)
        # the default conversion reads blobs as bytes in the scan; any other gets
        # pylance's BlobFile objects, which need row ids
        self._blobs_as_bytes = bool(self._blob_columns) and to_tensor_fn is to_tensor
        if self._blob_columns and not self._blobs_as_bytes:
            self.with_row_id = True

    def __repr__(self) -> str:
        return f"LanceTorchDataset({self.dataset.uri}, size={self.samples})"

    def __getstate__(self):
        state = self.__dict__.copy()
        state["cached_ds"] = None  # a temporary directory of this process
        return state

    @property
    def schema(self) -> pa.Schema:
        """The schema of the columns read."""
        if not self.columns:
            return self.dataset.schema
        fields = [self.dataset.schema.field(c) for c in self.columns]
        return pa.schema(fields, metadata=self.dataset.schema.metadata)

    def set_epoch(self, epoch: int) -> None:
        """Shuffle and sample for ``epoch`` (also sets the sampler's epoch)."""
        self._epoch = int(epoch)
        if self.sampler is not None and hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)
            self._told = self._epoch

    # -- planning ---------------------------------------------------------------------
    def _shard(self) -> tuple[int, int]:
        rank, world_size = self.rank, self.world_size
        if rank is None:
            rank = get_dist_rank() if self._auto_detect_rank else 0
        if world_size is None:
            world_size = get_dist_world_size() if self._auto_detect_rank else 1
        return int(rank), int(world_size)

    def _sampler(self, rank: int, world_size: int) -> Sampler:
        if self.sampler is not None:
            return self.sampler
        if self.shuffle or self.shard_granularity == "batch":
            # ranks hold disjoint runs before the shuffle, so a seed per rank is safe
            sampler = ShardedBatchSampler(rank, world_size, randomize=self.shuffle,
                                          seed=self.seed)
            sampler.set_epoch(self._iter_epoch)
            return sampler
        if self.shard_granularity == "fragment" or world_size > 1:
            return ShardedFragmentSampler(rank, world_size)
        return FullScanSampler()

    def _raw_stream(self, epoch: int) -> Iterator[pa.RecordBatch]:
        info = torch.utils.data.get_worker_info()
        worker_id, num_workers = (0, 1) if info is None else (info.id, info.num_workers)
        rank, world_size = self._shard()
        columns = self.columns or self.dataset.schema.names
        if self._blob_columns and not self._blobs_as_bytes:
            columns = [c for c in columns if c not in self._blob_columns]
        if self.samples:
            stream = maybe_sample(self.dataset, n=self.samples, columns=columns,
                                  batch_size=self.batch_size, filt=self.filter,
                                  seed=self.seed + epoch)
            # one draw for the whole job, dealt out by batch to ranks x workers
            parts = world_size * num_workers
            return _every_nth(stream, rank * num_workers + worker_id, parts) \
                if parts > 1 else stream
        sampler = self._sampler(rank, world_size)
        options: dict[str, Any] = dict(columns=columns, filter=self.filter,
                                       batch_size=self.batch_size,
                                       with_row_id=self.with_row_id,
                                       batch_readahead=self.batch_readahead)
        if isinstance(sampler, ShardedBatchSampler) and not self.with_row_id:
            options["with_row_id"] = None  # it does not give row ids (and says so if asked)
        if isinstance(sampler, FragmentSampler):
            # its batches are slices of a fragment's decoded rows: larger ones, which
            # _rebatch cuts without copies, leave a batch straddling two (and copied)
            # once every SCAN_BATCHES batches, not at every batch after a fragment's end
            options["batch_size"] = self.batch_size * SCAN_BATCHES
        splits = getattr(sampler, "splits_workers", False)
        if splits:
            options.update(worker_id=worker_id, num_workers=num_workers)
            if self._blobs_as_bytes:
                options["blob_handling"] = "all_binary"
        stream = sampler(self.dataset, **options)
        if num_workers > 1 and not splits:
            stream = _every_nth(stream, worker_id, num_workers)
        return stream

    def _shuffled(self) -> bool:
        """Whether this epoch's batches come in a random order (a shuffle, or a
        sharded sampler's ``randomize``)."""
        if self.samples:
            return False
        sampler = self.sampler
        if sampler is None:
            return self.shuffle
        return bool(getattr(sampler, "_randomize", False))

    def _sync_epoch(self) -> int:
        # the epoch of this iteration, told to the sampler; an epoch the user set on the
        # sampler directly since the last iteration wins
        epoch = self._epoch
        sampler = self.sampler
        if sampler is not None and hasattr(sampler, "set_epoch"):
            theirs = getattr(sampler, "epoch", None)
            if self._told is not None and theirs is not None and theirs != self._told:
                epoch = int(theirs)
            else:
                sampler.set_epoch(epoch)
            self._told = epoch
        # iterated again in this process (no workers, or persistent ones): next epoch
        self._epoch = epoch + 1
        return epoch

    def __iter__(self):
        epoch = self._iter_epoch = self._sync_epoch()
        if self.cached_ds is not None:
            stream: Iterable[pa.RecordBatch] = self.cached_ds
        else:
            stream = _rebatch(self._raw_stream(epoch), self.batch_size,
                              ordered=not self._shuffled())
            if self.cache:
                self.cached_ds = CachedDataset(stream, cache=self.cache)
                stream = self.cached_ds
        blob_api = bool(self._blob_columns) and not self._blobs_as_bytes
        for batch in stream:
            if blob_api:
                if "_rowid" not in batch.column_names:
                    raise NotSupportedError(
                        f"blob columns {self._blob_columns} with a to_tensor_fn of your own "
                        f"are read as BlobFile objects by row id, and this sampler gives no "
                        f"row ids: use the default to_tensor_fn (blobs as bytes) or a "
                        f"fragment sampler")
                ids = batch.column("_rowid").to_pylist()
                batch = {name: batch.column(name) for name in batch.column_names}
                for col in self._blob_columns:
                    batch[col] = self.dataset.take_blobs(col, ids=ids)
            if self._to_tensor_fn is not None:
                batch = self._to_tensor_fn(batch, hf_converter=self._hf_converter,
                                           use_blob_api=blob_api)
            yield batch


class TensorDataset(torch.utils.data.Dataset):
    """A tensor (or array) served in batches of ``batch_size`` rows, as
    :class:`LanceDataset` serves a dataset."""

    def __init__(self, data, batch_size: int, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._data = torch.from_numpy(data) if isinstance(data, np.ndarray) else data
        self._batch_size = int(batch_size)

    def __repr__(self) -> str:
        return "LanceTensorDataset"

    def __len__(self) -> int:
        return math.ceil(self._data.shape[0] / self._batch_size)

    def __getitem__(self, idx: int):
        if idx >= len(self):
            raise IndexError(f"batch {idx} of {len(self)}")
        start = idx * self._batch_size
        return self._data[start:start + self._batch_size]


class SafeLanceDataset(torch.utils.data.Dataset):
    """A map-style dataset of rows: ``ds[i]`` is row ``i`` as a dict, and a DataLoader's
    batch of indices is read with one take (``__getitems__``). The dataset is opened in
    each worker on first use, so it suits every start method.

    ``ds[[i, j, ...]]`` (a list, array or tensor of indices) gives the rows as a batch
    of tensors (lancenb's addition): with ``DataLoader(ds, batch_size=None,
    sampler=BatchSampler(...))`` no per-row Python runs.

    Examples
    --------
    >>> loader = get_safe_loader(SafeLanceDataset(uri), batch_size=32)  # doctest: +SKIP
    """

    def __init__(self, uri, *, dataset_options: dict | None = None, columns=None,
                 to_tensor_fn: Callable | None = to_tensor, **kwargs):
        super().__init__(**kwargs)
        self.uri = os.fspath(uri) if isinstance(uri, os.PathLike) else uri
        self.dataset_options = dataset_options or {}
        self.columns = columns
        self._to_tensor_fn = to_tensor_fn
        self._ds = None
        self._len = self._safe_preload()

    def _safe_preload(self) -> int:
        return _open(self.uri, self.dataset_options).count_rows()

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_ds"] = None
        return state

    def _dataset(self):
        if self._ds is None:
            self._ds = _open(self.uri, self.dataset_options)
        return self._ds

    def __len__(self) -> int:
        return self._len

    def _take(self, indices) -> pa.Table:
        return self._dataset().take(indices, columns=self.columns)

    def __getitem__(self, idx):
        if isinstance(idx, (list, tuple, np.ndarray, torch.Tensor, range)):
            indices = np.asarray(idx, dtype=np.int64)
            batch = self._take(indices).combine_chunks()
            return batch if self._to_tensor_fn is None else self._to_tensor_fn(batch)
        return self.__getitems__([idx])[0]

    def __getitems__(self, indices) -> list[dict]:
        return self._take(np.asarray(indices, dtype=np.int64)).to_pylist()


def get_safe_loader(dataset, batch_size: int = 32, num_workers: int = 4, **kwargs):
    """A ``DataLoader`` with spawned, persistent workers (pylance's defaults; lancenb
    works with any start method, so ``multiprocessing_context`` may be overridden)."""
    options = {"batch_size": batch_size, "num_workers": num_workers,
               "persistent_workers": kwargs.pop("persistent_workers", num_workers > 0),
               "multiprocessing_context": kwargs.pop(
                   "multiprocessing_context",
                   torch.multiprocessing.get_context("spawn") if num_workers > 0 else None)}
    options.update(kwargs)
    return torch.utils.data.DataLoader(dataset, **options)
