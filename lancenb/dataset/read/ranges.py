"""Reading a fragment's rows as runs of consecutive rows, for the candidate rows of an
inexact scalar-index answer (:func:`~lancenb.index.scalar.query.index_offsets`).

A ZONEMAP or BLOOMFILTER index answers with whole zones: contiguous ranges of a
fragment's rows (8192 by default). Taking those rows by position makes the file
reader map, coalesce and gather every row (a bloom-filter ``IN`` of 20 values gives
~170k rows: tens of ms); reading each run as a ``range`` is a slice of pages, one
request per page a run touches. :func:`read_runs` does that for the plain case (the
columns stored in the fragment's data files under the schema's types, no blob
column, no column assembled by field id), and leaves anything else to
:meth:`~lancenb.dataset.fragment.LanceFragment.take_physical` (it returns None).

Example: offsets ``[0..8191, 16384..24575]`` are two runs, read as
``range(0, 8192)`` and ``range(16384, 24576)``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb.dataset.read import blob
from lancenb.index.scalar.rowmap import without as without_deleted
from lancenb.table.fragments import is_legacy_file

__all__ = ["runs_of", "spans_of", "read_runs", "without_deleted", "MIN_MEAN_RUN", "MAX_GAP"]

#: offsets are read as spans when their spans hold at least this many rows on average
#: (shorter ones: a take by position does as well, in fewer calls)
MIN_MEAN_RUN = 512
#: runs of offsets at most this many rows apart are read as one span
MAX_GAP = 256


def runs_of(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, ends)`` of the runs of consecutive values of sorted, distinct
    ``offsets`` (``ends`` exclusive).

    Examples
    --------
    >>> runs_of(np.array([3, 4, 5, 9, 10]))
    (array([3, 9]), array([ 6, 11]))
    """
    offsets = np.asarray(offsets, np.int64)
    if not len(offsets):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cut = np.flatnonzero(np.diff(offsets) != 1) + 1
    first = np.concatenate([[0], cut])
    last = np.concatenate([cut, [len(offsets)]]) - 1
    return offsets[first], offsets[last] + 1


def spans_of(offsets: np.ndarray, gap: int = MAX_GAP) -> tuple[np.ndarray, np.ndarray]:
    """:func:`runs_of` with runs less than ``gap`` rows apart merged into one span
    (the rows between are read and dropped: a zone with deleted rows is one read).

    Examples
    --------
    >>> spans_of(np.array([0, 1, 2, 5, 6, 300]), gap=8)
    (array([  0, 300]), array([  7, 301]))
    """
    starts, ends = runs_of(offsets)
    if len(starts) < 2:
        return starts, ends
    new = np.ones(len(starts), bool)
    new[1:] = starts[1:] - ends[:-1] > gap
    first = np.flatnonzero(new)
    last = np.append(first[1:], len(starts)) - 1
    return starts[first], ends[last]


def read_runs(frag, columns: list[str], offsets: np.ndarray | None) -> pa.Table | None:
    """``frag``'s ``columns`` (stored ones, not ``_rowid``/``_rowaddr``) at sorted
    physical ``offsets``, read a span of consecutive rows at a time (:func:`spans_of`;
    the rows between the offsets of a span dropped), or None when that is not the
    better plan (spans shorter than :data:`MIN_MEAN_RUN` rows on average, or more
    than twice the rows asked for) or not the plain case (see the module's text):
    the caller then takes the rows by position. The table is what
    ``frag.take_physical(columns, offsets)`` gives."""
    if offsets is None or not columns or len(offsets) < 2 * MIN_MEAN_RUN:
        return None
    starts, ends = spans_of(offsets)
    spanned = int((ends - starts).sum())
    if len(starts) * MIN_MEAN_RUN > len(offsets) or spanned > 2 * len(offsets):
        return None
    ds = frag.dataset
    schema = ds.snapshot.schema
    groups, missing = frag.readers_for(columns)
    if missing or any(c not in schema.names or blob.has_blobs(schema.field(c))
                      for c in columns):
        return None
    resolved = frag.columns_by_field_id()  # (those are not read here)
    if any(c in resolved for c in columns):
        return None
    frag.verified_rows()
    files = frag.protobuf.files
    spans = [range(s, e) for s, e in zip(starts.tolist(), ends.tolist())]
    arrays: dict[str, pa.Array] = {}
    for fi, names in groups.items():
        df = files[fi]
        reader = ds.snapshot.open_file(df.path, is_legacy_file(df))
        if reader.num_rows() != frag.physical_rows:
            return None  # (take_physical names that error)
        got = _read_spans(reader, [reader.field_index(f) for f in names.values()], spans)
        for k, dname in enumerate(names):
            # (one chunk: the filter then runs over one batch, not one per span)
            arrays[dname] = pa.concat_arrays([c for run in got for c in run[k].chunks])
    fields = [schema.field(c) for c in columns]
    if any(arrays[f.name].type != f.type for f in fields):
        return None  # (a cast, or an error, for take_physical to make)
    table = pa.Table.from_arrays([arrays[f.name] for f in fields], schema=pa.schema(fields))
    if spanned == len(offsets):
        return table
    base = np.zeros(len(starts), np.int64)
    np.cumsum((ends - starts)[:-1], out=base[1:])
    k = np.searchsorted(starts, offsets, side="right") - 1
    return table.take(pa.array(offsets - starts[k] + base[k]))


def _read_spans(reader, idx: list[int], spans: list[range]) -> list[list]:
    """``[[column k's values in span j for k] for j]``: the reader reads a range of
    rows as a slice of pages."""
    return [[reader.read_column(i, range=(r.start, len(r))) for i in idx] for r in spans]
