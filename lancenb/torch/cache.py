"""A stream of record batches kept on local disk (Arrow IPC) as it is first read, and
replayed from there afterwards (pylance's ``lance._dataset.cache.CachedDataset``)."""

from __future__ import annotations

import os
import weakref
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Iterable, Iterator

import pyarrow as pa

from lancenb.errors import InvalidInputError, LanceError

__all__ = ["CachedDataset"]


class CachedDataset:
    """Iterate ``stream`` once, writing each batch to ``cache`` (True/None: a temporary
    directory; a path: a temporary directory under it); later iterations read the file.

    Examples
    --------
    >>> cached = CachedDataset(ds.to_batches(), cache=True)  # doctest: +SKIP
    """

    def __init__(self, stream: Iterable[pa.RecordBatch], cache=None):
        if cache is None or cache is True:
            parent = None
        elif isinstance(cache, (str, os.PathLike)):
            parent = os.fspath(cache)
        else:
            raise InvalidInputError(f"cache must be True, None or a directory, not "
                                    f"{type(cache).__name__}")
        self._dir: TemporaryDirectory | None = TemporaryDirectory(prefix="lancenb-torch-",
                                                                  dir=parent)
        self._finalizer = weakref.finalize(self, self._dir.cleanup)
        self.cache_file: Path | None = None
        self.stream = stream
        self.finished_origin_stream = False

    def close(self) -> None:
        """Delete the cache file."""
        self._finalizer()
        self._dir = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        if self._dir is None:
            raise LanceError("CachedDataset is closed")
        if self.cache_file is None:
            path = Path(self._dir.name) / "cache.arrow"
            writer = None
            try:
                for batch in self.stream:
                    if writer is None:
                        writer = pa.ipc.new_stream(str(path), batch.schema)
                    writer.write_batch(batch)
                    yield batch
            finally:
                if writer is not None:
                    writer.close()
            self.cache_file = path
            self.finished_origin_stream = writer is not None
            return
        if not self.finished_origin_stream:
            raise LanceError("CachedDataset: the first iteration over the data did not finish")
        with pa.ipc.open_stream(str(self.cache_file)) as reader:
            yield from reader
