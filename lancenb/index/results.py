"""What an index search hands back once its rows are computed: the scanner methods
pylance's ``LanceScanner`` has, over one materialised table.

:class:`TableResults` is the mixin the vector and full-text scanners share: a class
gives ``to_table()`` (computing the rows once), ``_batch_size`` (rows per batch, None
for whole chunks) and ``_ds`` (the dataset searched), and gets the rest.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["TableResults"]


class TableResults:
    """``to_batches``, ``to_reader``, ``to_pandas``, ``count_rows``, ``head`` and the
    schemas of a search whose rows :meth:`to_table` computes."""

    _batch_size: int | None
    _ds: object

    def to_table(self) -> pa.Table:  # pragma: no cover - each scanner defines it
        """The search's rows."""
        raise NotImplementedError

    def to_batches(self):
        """The rows as record batches (of at most ``batch_size`` rows)."""
        return iter(self.to_table().to_batches(max_chunksize=self._batch_size))

    def to_reader(self) -> pa.RecordBatchReader:
        """The rows as a ``RecordBatchReader``."""
        t = self.to_table()
        return pa.RecordBatchReader.from_batches(t.schema, t.to_batches())

    def __arrow_c_stream__(self, requested_schema=None):
        return self.to_reader().__arrow_c_stream__(requested_schema)

    def to_pandas(self, **kwargs):
        """The rows as a pandas DataFrame (``kwargs``: ``pyarrow.Table.to_pandas``'s)."""
        return self.to_table().to_pandas(**kwargs)

    def count_rows(self) -> int:
        """How many rows the search gives."""
        return self.to_table().num_rows

    def head(self, num_rows: int) -> pa.Table:
        """The first ``num_rows`` rows."""
        return self.to_table().slice(0, num_rows)

    @property
    def projected_schema(self) -> pa.Schema:
        """The schema of the rows."""
        return self.to_table().schema

    @property
    def dataset_schema(self) -> pa.Schema:
        """The searched dataset's schema."""
        return self._ds.schema  # type: ignore[attr-defined]
