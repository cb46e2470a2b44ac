"""``ShardedBatchIterator``: one shard's batches of a dataset, for data-parallel
readers (pylance's ``lance._dataset.sharded_batch_iterator``, deprecated there in
favour of its samplers).

Shard ``rank`` of ``world_size`` gets, with ``granularity="fragment"``, every
``world_size``-th fragment starting at ``rank`` (whole fragments, in order); with
``granularity="batch"``, every ``world_size``-th run of ``batch_size`` rows of the
dataset starting at row ``rank * batch_size`` (the last run may be short).
"""

from __future__ import annotations

import os
import warnings
from typing import Iterator, Literal

import pyarrow as pa

from lancenb.dataset import LanceDataset, dataset
from lancenb.errors import InvalidInputError, NotSupportedError

__all__ = ["ShardedBatchIterator"]


class ShardedBatchIterator:
    """Iterate over shard ``rank`` of ``world_size`` of ``data`` (a dataset or its URI).

    ``columns``: names or ``{name: SQL}``; ``batch_size``: rows per batch;
    ``granularity``: ``"fragment"`` or ``"batch"`` (module docstring);
    ``with_row_id``: add ``_rowid`` (fragment granularity only, as in pylance).

    Examples
    --------
    >>> for batch in ShardedBatchIterator(uri, 0, 2, columns=["a"]):  # doctest: +SKIP
    ...     train(batch)
    """

    def __init__(self, data, rank: int, world_size: int, *, columns=None,
                 batch_size: int = 1024 * 10,
                 granularity: Literal["fragment", "batch"] = "fragment",
                 batch_readahead: int = 8, with_row_id: bool = False):
        warnings.warn("ShardedBatchIterator is deprecated (as in pylance), use a sampler "
                      "instead", stacklevel=2)
        if not 0 <= int(rank) < int(world_size):
            raise InvalidInputError(f"ShardedBatchIterator: rank {rank} is not in "
                                    f"0..{int(world_size) - 1}")
        if granularity not in ("fragment", "batch"):
            raise InvalidInputError(f"Unrecognized granularity: {granularity!r} (expected "
                                    f"'fragment' or 'batch')")
        self._rank, self._world_size = int(rank), int(world_size)
        self._batch_size = int(batch_size)
        self._granularity = granularity
        self._columns = columns
        self._with_row_id = with_row_id
        self._batch_readahead = batch_readahead
        self._ds = data if isinstance(data, LanceDataset) else dataset(os.fspath(data))

    @staticmethod
    def from_torch(data, *, columns=None, batch_size: int = 1024 * 10,
                   granularity: Literal["fragment", "batch"] = "fragment",
                   batch_readahead: int = 8, with_row_id: bool = False):
        """The shard of this process in a ``torch.distributed`` job (rank and world
        size from torch)."""
        import torch.distributed as dist

        return ShardedBatchIterator(data, dist.get_rank(), dist.get_world_size(),
                                    columns=columns, batch_size=batch_size,
                                    granularity=granularity, batch_readahead=batch_readahead,
                                    with_row_id=with_row_id)

    def _iter_fragments(self) -> Iterator[pa.RecordBatch]:
        fragments = self._ds.get_fragments()
        for frag in fragments[self._rank::self._world_size]:
            yield from frag.to_batches(columns=self._columns, batch_size=self._batch_size,
                                       with_row_id=self._with_row_id)

    def _iter_batches(self) -> Iterator[pa.RecordBatch]:
        if self._with_row_id:
            raise NotSupportedError("with_row_id is not supported for batch sharding "
                                    "(as in pylance)")
        total = self._ds.count_rows()
        step = self._world_size * self._batch_size
        for start in range(self._rank * self._batch_size, total, step):
            rows = range(start, min(start + self._batch_size, total))
            yield from self._ds.take(rows, columns=self._columns).to_batches()

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        if self._granularity == "fragment":
            return self._iter_fragments()
        return self._iter_batches()
