"""Tables of rows and no columns: what a scan with ``columns=[]`` returns.

pylance answers an empty projection with the row count (batches of rows without
columns), and so does lancenb; Arrow keeps a table's row count without columns, but a
few of its operations drop it (``replace_schema_metadata`` and ``concat_tables`` give
0 rows), so the scanner goes through these instead.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["with_metadata", "concat_tables", "no_columns"]


def with_metadata(t: pa.Table, metadata) -> pa.Table:
    """``t`` with schema ``metadata``; a table of no columns keeps its rows."""
    if not t.num_columns:
        return no_columns(t.num_rows)
    return t.replace_schema_metadata(metadata)


def concat_tables(tables: list) -> pa.Table:
    """``pa.concat_tables``, except that tables of no columns add up their rows."""
    if tables and not tables[0].num_columns:
        return no_columns(sum(t.num_rows for t in tables))
    return pa.concat_tables(tables)


def no_columns(n: int) -> pa.Table:
    """A table of ``n`` rows and no columns."""
    return pa.Table.from_batches([pa.RecordBatch.from_struct_array(pa.nulls(n, pa.struct([])))])
