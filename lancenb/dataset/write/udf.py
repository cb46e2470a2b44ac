"""New column values from a batch function or a stream of rows, as pylance computes
them for ``LanceDataset.add_columns`` and ``LanceFragment.merge_columns``.

* A function (plain, or a :class:`~lancenb.BatchUDF`) sees each fragment's *live* rows
  of the columns it reads, in batches of at most ``batch_size`` physical rows with the
  deleted rows taken out (pylance's fragment updater). The new data file still holds
  one row per physical row: deleted positions are null.
* Its output schema is its ``output_schema``, else the schema of what it returns for
  the first live row (one sample call, as pylance makes). Every batch it returns must
  have exactly that schema (names, order, types; metadata aside): otherwise
  ``Output schema of function does not match the expected schema`` (pylance's words),
  never a silent cast. A pandas DataFrame it returns is read with
  ``pa.RecordBatch.from_pandas``.
* A plain function that fails on the sample is an
  :class:`~lancenb.dataset.write.inputs.InputTypeError` saying it was taken for a function.
* A stream of rows (:class:`RowFeeder`, any input :func:`normalize_input` reads) fills
  the live rows of the fragments in order, re-chunked to the fragments; too few or too
  many rows is a :class:`~lancenb.errors.SchemaError` with pylance's messages.

Example: a fragment of 6 rows with row 2 deleted and ``batch_size=4`` calls the
function on rows ``[0, 1, 3]`` then ``[4, 5]``; its outputs ``[a, b, c]``, ``[d, e]``
are written as ``[a, b, null, c, d, e]``.
"""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np
import pyarrow as pa

from lancenb.dataset.read.nested import ROW_ADDR, ROW_ID
from lancenb.dataset.write.inputs import InputTypeError, _is_pandas
from lancenb.errors import InvalidInputError, SchemaError

__all__ = ["output_schema", "udf_batches", "RowFeeder", "SCHEMA_MISMATCH", "read_rows",
           "ROW_COLUMNS"]

ROW_COLUMNS = (ROW_ID, ROW_ADDR)  # read_columns a function may ask for besides columns

SCHEMA_MISMATCH = "Output schema of function does not match the expected schema"


def _record_batch(x, what: str) -> pa.RecordBatch:
    if _is_pandas(x):
        x = pa.RecordBatch.from_pandas(x)
    if isinstance(x, pa.Table):
        x = x.combine_chunks()
        x = x.to_batches()[0] if x.num_rows else pa.RecordBatch.from_pylist([], schema=x.schema)
    if not isinstance(x, pa.RecordBatch):
        raise InvalidInputError(f"{what}: the function must return a RecordBatch, Table or "
                                f"pandas DataFrame, not {type(x).__name__}")
    return x


def _empty(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)


def read_rows(frag, cols: list[str], offs: np.ndarray) -> pa.RecordBatch:
    """The rows at physical ``offs`` of ``cols`` as a function reads them: the
    dataset's columns, then ``_rowid`` and ``_rowaddr`` if asked for (pylance's
    order, whatever their place in ``cols``)."""
    t = frag.take_physical([c for c in cols if c not in (ROW_ID, ROW_ADDR)], offs)
    if ROW_ID in cols:  # (row_ids(): stable ids, else the addresses)
        t = t.append_column(ROW_ID, pa.array(frag.row_ids()[offs], pa.uint64()))
    if ROW_ADDR in cols:
        t = t.append_column(ROW_ADDR, pa.array(frag.row_addresses(offs), pa.uint64()))
    t = t.combine_chunks()
    return t.to_batches()[0] if t.num_rows else _empty(t.schema)


def _sample(fragments, cols: list[str]) -> pa.RecordBatch | None:
    """The first live row of ``fragments`` (of ``cols``), or None if there is none."""
    for frag in fragments:
        live = frag.live_offsets()
        if frag.physical_rows == 0 or (live is not None and not len(live)):
            continue
        first = np.array([0 if live is None else live[0]], dtype=np.int64)
        return read_rows(frag, cols, first)
    return None


def output_schema(func: Callable, fragments, cols: list[str], *, plain: bool,
                  what: str = "add_columns") -> pa.Schema:
    """The schema ``func`` produces: its ``output_schema``, else that of its output for
    the first live row of ``fragments``. ``plain``: ``func`` is a bare function (not a
    BatchUDF), so a failure on the sample says it was taken for one."""
    declared = getattr(func, "output_schema", None)
    if declared is not None:
        return declared
    sample = _sample(fragments, cols)
    if sample is None:
        raise InvalidInputError(f"{what}: there is no row to infer the function's output "
                                f"schema from; give it an output_schema (lancenb.batch_udf)")
    if not plain:
        return _record_batch(func(sample), what).schema
    try:
        return _record_batch(func(sample), what).schema
    except Exception as e:  # (any error of the user's function)
        raise InputTypeError(
            f"transforms must be a BatchUDF, dict, map function, or ReaderLike value. "
            f"Received {type(func)}, which is callable, but gave an error when called with "
            f"a batch of data: {e}") from e


def _checked(out, schema: pa.Schema, rows: int, what: str) -> pa.RecordBatch:
    out = _record_batch(out, what)
    if not out.schema.equals(schema, check_metadata=False):
        raise SchemaError(f"{what}: {SCHEMA_MISMATCH}. Expected:\n{schema}\nGot:\n"
                          f"{out.schema}")
    if out.num_rows != rows:
        raise InvalidInputError(f"{what}: the function returned {out.num_rows} rows for a "
                                f"batch of {rows}")
    return out


def _live_ranges(frag, step: int):
    """``(lo, hi, live)`` per range of ``step`` physical rows: ``live`` the live
    offsets in ``[lo, hi)``, or None when none of the fragment is deleted."""
    live = frag.live_offsets()
    n = frag.physical_rows
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        if live is None:
            yield lo, hi, None
        else:
            a, b = np.searchsorted(live, [lo, hi])
            yield lo, hi, live[a:b]


def _restore(out: pa.RecordBatch, lo: int, hi: int, live) -> pa.RecordBatch:
    """``out`` (one row per live row of ``[lo, hi)``) spread over the range's physical
    rows, null at the deleted ones."""
    if live is None or len(live) == hi - lo:
        return out
    idx = np.zeros(hi - lo, dtype=np.int64)
    present = np.zeros(hi - lo, dtype=bool)
    present[live - lo] = True
    idx[live - lo] = np.arange(len(live))
    if not len(live):
        return pa.RecordBatch.from_arrays([pa.nulls(hi - lo, f.type) for f in out.schema],
                                          schema=out.schema)
    return out.take(pa.array(idx, mask=~present))


def udf_batches(frag, func: Callable, cols: list[str], schema: pa.Schema, step: int,
                what: str = "add_columns") -> Iterator[pa.RecordBatch]:
    """``func``'s output for every physical row of ``frag`` (see the module
    docstring), in batches."""
    for lo, hi, live in _live_ranges(frag, step):
        if live is not None and not len(live):
            yield _restore(_empty(schema), lo, hi, live)
            continue
        offs = np.arange(lo, hi, dtype=np.int64) if live is None else live
        b = read_rows(frag, cols, offs)
        yield _restore(_checked(func(b), schema, b.num_rows, what), lo, hi, live)


class RowFeeder:
    """A stream of new column values handed out to fragments' live rows in order."""

    def __init__(self, schema: pa.Schema, batches: Iterator[pa.RecordBatch]):
        self.schema = schema
        self._batches = batches
        self._rest: pa.RecordBatch | None = None

    def _take(self, n: int) -> pa.RecordBatch:
        parts, need = [], n
        while need > 0:
            b = self._rest
            self._rest = None
            if b is None:
                b = next(self._batches, None)
                if b is None:
                    raise SchemaError("Stream ended before producing values for all rows in "
                                      "dataset")
            if b.num_rows > need:
                self._rest = b.slice(need)
                b = b.slice(0, need)
            parts.append(b)
            need -= b.num_rows
        if not parts:
            return _empty(self.schema)
        t = pa.Table.from_batches(parts, schema=self.schema).combine_chunks()
        return t.to_batches()[0]

    def batches(self, frag, step: int) -> Iterator[pa.RecordBatch]:
        """Values for ``frag``'s physical rows (deleted ones null), in batches."""
        for lo, hi, live in _live_ranges(frag, step):
            n = hi - lo if live is None else len(live)
            yield _restore(self._take(n), lo, hi, live)

    def finish(self) -> None:
        """Refuse rows left over once every fragment has its values."""
        if (self._rest is not None and self._rest.num_rows) or \
                any(b.num_rows for b in self._batches):
            raise SchemaError("Stream produced more values than expected for dataset")
