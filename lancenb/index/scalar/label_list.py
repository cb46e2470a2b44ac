"""LABEL_LIST scalar index (list columns) in pylance's on-disk format.

Layout: a BITMAP index (:mod:`.bitmap`) over the list *elements*:
``_indices/<uuid>/bitmap_page_lookup.lance`` with one row per distinct element
(``keys``, a null key for null elements) and the rows whose list holds it
(``bitmaps``); schema metadata ``lance:index_stats``. Rows whose list is null or
empty are in no bitmap; the rows whose list is null are a serialised row set in a
global buffer of the file, whose index (``"1"``) is the schema metadata value
``lance:label_list_nulls`` (pylance 14 reads it to answer ``NOT``; an index without
it is "old" to pylance). Index details: an empty
``lance.table.LabelListIndexDetails``.

Example: ``[["a", "b"], null, ["b"]]`` gives keys ``["a", "b"]`` with bitmaps
``[{0}, {0, 2}]``; ``array_has_any(l, ['a', 'b'])`` is ``{0} | {0, 2}``,
``array_has_all(l, ['a', 'b'])`` is ``{0} & {0, 2}``.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from pyroaring import BitMap64
from sqlglot import exp

from lancenb.index.scalar import rowmap
from lancenb.index.scalar.bitmap import BitmapIndex, write_bitmap
from lancenb.index.scalar.common import Answer, IndexFiles, Unanswerable

__all__ = ["LabelListIndex", "write_label_list", "label_query", "DETAILS_TYPE_URL"]

DETAILS_TYPE_URL = "/lance.table.LabelListIndexDetails"
NULLS_KEY = "lance:label_list_nulls"


def _literal(e):
    if isinstance(e, exp.Literal):
        if e.is_string:
            return e.this
        text = e.this
        return float(text) if any(c in text for c in ".eE") else int(text)
    if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal) and not e.this.is_string:
        v = _literal(e.this)
        return -v
    raise Unanswerable(f"label {e.sql()!r} is not a literal")


def label_query(sql: str) -> tuple[str, list, str] | None:
    """``(column, labels, "any" | "all")`` of an ``array_has_any``/``array_has_all``/
    ``array_contains`` predicate in the SQL text of an opaque filter part, None for
    anything else (parsed once per text: the last 256 kept)."""
    got = _label_query(sql)
    return None if got is None else (got[0], list(got[1]), got[2])


@functools.lru_cache(maxsize=256)
def _label_query(sql: str) -> tuple[str, tuple, str] | None:
    try:
        e = sqlglot.parse_one(sql, read="postgres")
    except sqlglot.errors.ParseError:
        return None
    if isinstance(e, exp.ArrayContainsAll):
        col, arr, mode = e.this, e.expression, "all"
    elif isinstance(e, exp.ArrayContains):
        col, arr, mode = e.this, exp.Array(expressions=[e.expression]), "any"
    elif isinstance(e, exp.Anonymous) and str(e.this).upper() in ("ARRAY_HAS_ANY",
                                                                  "ARRAY_HAS_ALL") \
            and len(e.expressions) == 2:
        col, arr = e.expressions
        mode = "any" if str(e.this).upper() == "ARRAY_HAS_ANY" else "all"
    else:
        return None
    if not isinstance(col, exp.Column) or not isinstance(arr, exp.Array):
        return None
    try:
        labels = [_literal(x) for x in arr.expressions]
    except Unanswerable:
        return None
    if not labels:
        return None
    return col.name, tuple(labels), mode


class LabelListIndex(BitmapIndex):
    """An open LABEL_LIST index."""

    def search_labels(self, labels: list, mode: str) -> Answer:
        """Rows whose list holds any / all of ``labels``."""
        try:
            wanted = pa.array(labels).cast(self.keys.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise Unanswerable(str(e)) from e
        hit = pc.index_in(wanted, value_set=self.keys).to_pylist()
        if mode == "any":
            return Answer(self.union(i for i in hit if i is not None))
        if any(i is None for i in hit):
            return Answer(BitMap64())
        out = None
        for i in hit:
            out = self.bitmap(i).copy() if out is None else out & self.bitmap(i)
        return Answer(out)

    def search(self, node, column: str, with_nulls: bool) -> Answer:
        """Comparisons of a list column are not answered by its label index."""
        raise Unanswerable("a LABEL_LIST index answers array_has_any/array_has_all only")


def flatten(batches, null_lists: list):
    """``(element values, uint64 row ids)`` of batches of ``(list values, ids)``; the
    ids of null lists are appended to ``null_lists``."""
    for values, ids in batches:
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        ids = np.asarray(ids, np.uint64)
        if values.null_count:
            null_lists.append(ids[~values.is_valid().to_numpy(zero_copy_only=False)])
        parents = np.asarray(pc.list_parent_indices(values).to_numpy(), np.int64)
        yield pc.list_flatten(values), ids[parents]


class _NullLists(dict):
    """The global buffer of null-list rows, serialised once the batches are read."""

    def __init__(self, held: list):
        super().__init__()
        self.held = held

    def items(self):
        ids = np.concatenate(self.held) if self.held else np.zeros(0, np.uint64)
        return [(NULLS_KEY, rowmap.serialize(ids))]


def write_label_list(files: IndexFiles, batches, list_type: pa.DataType, **kw) -> None:
    """Write a LABEL_LIST index from ``batches`` of ``(list values, row ids)``."""
    held: list = []
    write_bitmap(files, flatten(batches, held), list_type.value_type,
                 buffers=_NullLists(held), **kw)
