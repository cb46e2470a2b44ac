"""pylance's ``nearest=`` contract on a dataset: validation, the search, the result.

``ds.scanner(nearest={...}, columns=, filter=, prefilter=, limit=, offset=,
with_row_id=, with_row_address=)`` gives a :class:`VectorSearchScanner`. The keys of
``nearest``: ``column``, ``q``, ``k``, ``metric``, ``nprobes``, ``minimum_nprobes``,
``maximum_nprobes``, ``refine_factor``, ``ef``, ``use_index``, ``distance_range``
(and pylance 14's ``query_parallelism``, ``approx_mode``, ``search_effort``, which
only tune its engine). As pylance:

* ``k`` defaults to ``limit``, else 10; ``offset``/``limit`` then slice the ``k``
  results. Results are ordered by ``_distance`` (float32) then row id.
* ``metric``: ``l2`` (``euclidean``), ``cosine``, ``dot``, ``hamming``; default ``l2``,
  ``hamming`` for uint8 vectors (the only metric they allow).
* ``prefilter=True``: the ``k`` nearest among the rows the filter keeps;
  otherwise the ``k`` nearest rows, then the filter (fewer than ``k`` may remain; the
  filter may use ``_distance``). Deleted rows are never results.
* ``distance_range=(lower, upper)``: lower inclusive, upper exclusive, applied before
  the top ``k``.
* A 2-D ``q`` on a fixed-size-list column is a batch: ``k`` rows per query vector and
  an int32 ``query_index`` first column. On a multivector column (list of fixed-size
  lists) a list of vectors is one multivector query.
* A vector index on the column (``use_index`` not False, the same metric) searches the
  fragments it covers (:func:`lancenb.index.vector.ivf.open_vector_index`), the others
  are searched flat (:mod:`.flat`), and the two are merged; with unindexed fragments
  the index's candidates are re-scored exactly (a refine by 1), as pylance's plan does.
  ``fast_search=True`` searches only what an index holds.
* ``fragments=`` needs ``prefilter=True`` (pylance's "not supported for fragment scan").

What a search keeps for the next: the opened index (:func:`.ivf.open_vector_index`, by
dataset URI and index uuid, bounded), the dataset object's index list per version, and
per dataset version the row ids a prefilter keeps (:func:`_allowed_ids`). The result
rows are taken once per fragment they lie in (:func:`.rows.take_results`).

Output columns: the projection (every column by default), ``_distance`` where
``columns`` names it, else after them, then ``_rowid`` and ``_rowaddr`` when asked.
"""

from __future__ import annotations

import math
import re
import weakref
from collections import OrderedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb.errors import InputTypeError, InvalidInputError, NotSupportedError
from lancenb.expr.engine import evaluate
from lancenb.expr.filters import compile_filter, referenced_columns
from lancenb.index.results import TableResults
from lancenb.io.pools import module_lock
from lancenb.kernels.vector import distance as kd

from . import flat, rows
from .flat import Candidates, FlatQuery
from .rows import DISTANCE, ROWADDR, ROWID, nested_field

try:  # the IVF reader lands separately: search flat without it
    from .ivf import open_vector_index
except ImportError:  # pragma: no cover
    open_vector_index = None

__all__ = ["VectorSearchScanner", "NEAREST_KEYS"]

NEAREST_KEYS = ("column", "q", "k", "metric", "nprobes", "minimum_nprobes",
                "maximum_nprobes", "refine_factor", "use_index", "ef", "query_parallelism",
                "approx_mode", "distance_range", "search_effort")
DEFAULT_K = 10
QUERY_INDEX = "query_index"
_ARROW_NAMES = {pa.float16(): "Float16", pa.float32(): "Float32", pa.float64(): "Float64",
                pa.uint8(): "UInt8", pa.int8(): "Int8", pa.int16(): "Int16",
                pa.int32(): "Int32", pa.int64(): "Int64"}


def _type_name(t: pa.DataType) -> str:
    return _ARROW_NAMES.get(t, str(t))


# -- the request ------------------------------------------------------------------------

def _coerce_query(q):
    """``(array, is_nested)`` as pylance's ``_coerce_query_vector``: lists and numpy
    arrays become float32; an integer Arrow array float32; nested sequences stay
    nested (a multivector, or a batch of queries)."""
    if isinstance(q, pa.Scalar):
        if isinstance(q, pa.ExtensionScalar):
            q = q.value
        if isinstance(q.type, (pa.FixedSizeListType, pa.ListType)):
            q = q.values
    if isinstance(q, pa.ChunkedArray):
        q = q.combine_chunks()
    if isinstance(q, (pa.FixedSizeListArray, pa.ListArray)):
        return [_coerce_query(v)[0] for v in q], True
    if isinstance(q, np.ndarray) and q.ndim == 2:
        return [_coerce_query(v)[0] for v in q], True
    if not isinstance(q, (pa.Array, np.ndarray, str, bytes)) and hasattr(q, "__getitem__") \
            and len(q) and isinstance(q[0], (list, tuple, np.ndarray, pa.Array)):
        dim = len(q[0])
        out = []
        for v in q:
            if len(v) != dim:
                raise InvalidInputError(f"All query vectors must have the same length, "
                                        f"but got {dim} and {len(v)}")
            out.append(_coerce_query(v)[0])
        return out, True
    if isinstance(q, (list, tuple)) or isinstance(q, np.ndarray):
        arr = np.asarray(q).astype(np.float64).astype(np.float32)
        return arr.reshape(-1), False
    if not isinstance(q, pa.Array):
        try:
            q = pa.array(q)
        except (pa.ArrowException, TypeError, ValueError):
            raise InputTypeError(f"Query vectors should be an array of floats, got "
                                 f"{type(q)} which we cannot coerce to a float array") from None
    if pa.types.is_integer(q.type):
        q = q.cast(pa.float32())
    elif not pa.types.is_floating(q.type):
        raise InputTypeError(f"query vector must be list-like or pa.FloatingPointArray "
                             f"but received {q.type}")
    return q.to_numpy(zero_copy_only=False), False


def _vector_type(schema: pa.Schema, column: str):
    """``(element type, dim, multivector)`` of ``column``, with pylance's errors."""
    field = nested_field(schema, column)
    if field is None:
        raise InvalidInputError(f"Embedding column {column} is not in the dataset")
    t = field.type
    if isinstance(t, pa.BaseExtensionType):
        t = t.storage_type
    if pa.types.is_fixed_size_list(t):
        inner, multi = t, False
    elif (pa.types.is_list(t) or pa.types.is_large_list(t)) and \
            pa.types.is_fixed_size_list(t.value_type):
        inner, multi = t.value_type, True
    else:
        raise InputTypeError(f"Query column {column} must be a vector. Got {field.type}.")
    elem = inner.value_type
    if isinstance(elem, pa.BaseExtensionType):
        elem = elem.storage_type
    return field.name, elem, inner.list_size, multi


def _metric(metric, elem: pa.DataType) -> int:
    if metric is None:
        return kd.HAMMING if elem == pa.uint8() else kd.L2
    code = kd.METRICS.get(str(metric).lower())
    if code is None:
        raise InvalidInputError(f"Invalid argument error: Metric type '{metric}' is not "
                                f"supported")
    if (code == kd.HAMMING) != (elem == pa.uint8()):
        name = {kd.L2: "l2", kd.COSINE: "cosine", kd.DOT: "dot", kd.HAMMING: "hamming"}[code]
        raise InvalidInputError(f"Invalid user input: Distance type {name} does not "
                                f"support {_type_name(elem)} vectors")
    return code


def _compute_dtype(elem: pa.DataType):
    if elem == pa.uint8():
        return np.uint8
    if elem == pa.float64():
        return np.float64
    if elem in (pa.float16(), pa.float32()):
        return np.float32
    return None


def _cast_query(q: np.ndarray, elem: pa.DataType, column: str) -> np.ndarray:
    """The query in the column's element type (float16 rounded as pylance does), then
    in the computation's type."""
    dtype = _compute_dtype(elem)
    if dtype is None:
        raise InvalidInputError(f"Invalid user input: Column {column} has element type "
                                f"{_type_name(elem)} and the query vector is Float32")
    if elem == pa.float16():
        q = np.asarray(q).astype(np.float16)
    return np.ascontiguousarray(np.asarray(q).astype(dtype))


def _positive(name, value, what, strict=True):
    if value is None:
        return None
    v = int(value)
    if (v <= 0) if strict else (v < 0):
        raise InvalidInputError(f"{what} must be {'> 0' if strict else '>= 0'} but got "
                                f"{value}")
    return v


class Request:
    """A validated ``nearest`` dict (pylance's checks and messages)."""

    def __init__(self, schema: pa.Schema, nearest: dict):
        if not isinstance(nearest, dict):
            raise InputTypeError(f"nearest must be a dict, not {type(nearest).__name__}")
        for key in nearest:
            if key not in NEAREST_KEYS:
                raise InputTypeError(f"ScannerBuilder.nearest() got an unexpected keyword "
                                     f"argument {key!r}")
        for key in ("column", "q"):
            if key not in nearest:
                raise InputTypeError(f"ScannerBuilder.nearest() missing 1 required "
                                     f"positional argument: {key!r}")
        n = dict(nearest)
        q, nested = _coerce_query(n["q"])
        self.column, elem, self.dim, self.multivector = _vector_type(schema, n["column"])
        qdim = len(q[0]) if nested else len(q)
        if qdim != self.dim:
            raise InvalidInputError(f"Query vector size {qdim} does not match index column "
                                    f"size {self.dim}")
        self.k = _positive("k", n.get("k"), "Nearest-K")
        effort = n.get("search_effort")
        if effort is not None:
            if isinstance(effort, (str, bytes)) or not hasattr(effort, "__float__"):
                raise InputTypeError(f"must be real number, not {type(effort).__name__}")
            effort = float(effort)
            if not (0.0 <= effort <= 1.0):  # (NaN too)
                raise InvalidInputError(f"Invalid user input: search_effort must be finite "
                                        f"and in [0, 1], got {_rust_float(effort)}")
        self.search_effort = effort
        # an effort overrides nprobes (pylance), which is then not checked either
        nprobes = None if effort is not None else \
            _positive("nprobes", n.get("nprobes"), "Nprobes")
        lo = _positive("minimum_nprobes", n.get("minimum_nprobes"), "Minimum nprobes",
                       strict=False)
        hi = _positive("maximum_nprobes", n.get("maximum_nprobes"), "Maximum nprobes",
                       strict=False)
        if lo is not None and hi is not None and lo > hi:
            raise InvalidInputError("minimum_nprobes must be <= maximum_nprobes")
        rf = n.get("refine_factor")
        if rf is not None and int(rf) < 1:
            raise InvalidInputError(f"Refine factor must be 1 or more got {rf}")
        self.refine_factor = int(rf) if rf is not None else None
        self.ef = _positive("ef", n.get("ef"), "ef")
        # an explicit nprobes probes exactly that many; else the probes start at the
        # effort's budget (auto_nprobes) and grow up to the maximum when too few rows
        # were found
        self.explicit_nprobes = nprobes is not None
        self.nprobes = nprobes if nprobes is not None else (lo if lo else 1)
        self.maximum_nprobes = nprobes if nprobes is not None else hi  # None: as needed
        self.use_index = n.get("use_index", True) is not False
        mode = n.get("approx_mode", "normal")
        if mode not in ("fast", "normal", "accurate"):
            raise InvalidInputError(f"approx_mode must be one of 'fast', 'normal', or "
                                    f"'accurate', got {mode!r}")
        rng = n.get("distance_range")
        self.lower = self.upper = None
        if rng is not None:
            if len(rng) != 2:
                raise InvalidInputError("distance_range must be a tuple of "
                                        "(lower_bound, upper_bound)")
            self.lower = None if rng[0] is None else float(rng[0])
            self.upper = None if rng[1] is None else float(rng[1])
        self.metric_given = n.get("metric") is not None
        self.elem = elem
        self.use_metric(_metric(n.get("metric"), elem))
        # the queries: one per search (a batch gives several)
        if self.multivector:
            self.queries = [_cast_query(np.stack([np.asarray(v) for v in q]) if nested
                                        else np.asarray(q).reshape(1, -1), elem, self.column)]
            self.batch = False
        elif nested:
            self.queries = [_cast_query(v, elem, self.column) for v in q]
            self.batch = True
        else:
            self.queries = [_cast_query(q, elem, self.column)]
            self.batch = False
        for v in self.queries:
            if v.size == 0:
                raise InvalidInputError("Query vector must have non-zero length")

    def use_metric(self, code: int) -> None:
        """Search with metric ``code`` (an index's, when the request names none)."""
        self.metric = code
        self.metric_name = {kd.L2: "l2", kd.COSINE: "cosine", kd.DOT: "dot",
                            kd.HAMMING: "hamming"}[code]

    def flat_query(self, q: np.ndarray, k: int) -> FlatQuery:
        return FlatQuery(self.column, q, self.metric, k, self.multivector, self.lower,
                         self.upper)


# pylance 14's automatic first probe count (search_effort 0.5), by k (at most 1, 10,
# 100, 200, 500, 1,000, more): at least ``floor`` partitions, more while a partition's
# centroid is within ``ratio`` times the nearest centroid's L2 distance, at most
# ``cap``. Measured on pylance 14.0.2 (the same for IVF_FLAT/PQ/SQ/HNSW_SQ, 32 to 256
# partitions, 8 to 32 dimensions, 256 queries x 6 k; each ratio to within 0.0003).
_AUTO_PROBES = ((1, 5, 1.1034, 19), (10, 6, 1.12464, 24), (100, 11, 1.15321, 38),
                (200, 15, 1.1725, 56), (500, 22, 1.17157, 81), (1000, 29, 1.19057, 93))
_AUTO_PROBES_MORE = (98, 1.19057, 98)


def auto_nprobes(k: int, minimum: int, maximum: int | None, partitions: int,
                 effort: float = 0.5, centroid_dists: np.ndarray | None = None) -> int:
    """How many partitions pylance probes first when no ``nprobes`` is given (more
    are probed afterwards only when fewer than ``k`` rows were found).

    ``centroid_dists``: the query's squared L2 distances to the centroids, nearest
    first (None: the count by ``k`` alone). ``effort`` (``search_effort``, 0 to 1)
    interpolates geometrically: 0 starts at ``minimum``, 0.5 at the automatic count
    (at least ``minimum``), 1 at ``maximum`` (None: every partition), rounded up.
    Example: 32 partitions, ``k=1``, centroids far apart: effort 0.5 gives 5, 0.75
    gives ``ceil(5 * (32 / 5) ** 0.5) = 13``, 1 gives 32."""
    top = partitions if maximum is None else min(int(maximum), partitions)
    low = max(1, min(int(minimum), top))
    floor, ratio, cap = next(((f, r, c) for most, f, r, c in _AUTO_PROBES if k <= most),
                             _AUTO_PROBES_MORE)
    auto = floor
    if centroid_dists is not None and len(centroid_dists) and centroid_dists[0] > 0:
        near = np.asarray(centroid_dists, np.float64) / float(centroid_dists[0])
        auto = max(auto, int(np.count_nonzero(near <= ratio * ratio)))
    auto = min(max(min(auto, cap), low), top)
    if effort <= 0.5:
        got = low * (auto / low) ** (effort / 0.5)
    else:
        got = auto * (top / auto) ** ((effort - 0.5) / 0.5)
    return int(min(max(math.ceil(got - 1e-9), low), top))


def _rust_float(x: float) -> str:
    return "NaN" if x != x else repr(x)


# -- the search -------------------------------------------------------------------------

# a dataset object's index list, read once per version it is at (about 1 ms of a 4 ms
# IVF query otherwise); keyed by the object, which some calls move to a new version
_INDEX_LISTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _index_list(ds) -> list:
    version = ds.version
    try:
        hit = _INDEX_LISTS.get(ds)
    except TypeError:  # not weakly referable or hashable: ask every time
        return ds.list_indices()
    if hit is None or hit[0] != version:
        hit = _INDEX_LISTS[ds] = (version, ds.list_indices())
    return hit[1]


def _vector_index(ds, req: Request):
    """The opened vector index on ``req.column`` the search may use, or None."""
    if open_vector_index is None or not req.use_index or req.multivector:
        return None
    for entry in _index_list(ds):
        fields = entry.get("fields") or []
        if [f.lower() for f in fields] != [req.column.lower()]:
            continue
        try:
            idx = open_vector_index(ds, entry)
        except NotSupportedError:
            continue  # a scalar index, or a vector index lancenb cannot read: flat
        if req.metric_given and idx.metric != req.metric_name:
            continue  # pylance searches flat when the metric differs from the index's
        if not req.metric_given and idx.metric in kd.METRICS:
            # no metric named: the index's, for the unindexed fragments too
            req.use_metric(_metric(idx.metric, req.elem))
        others = [e for e in _index_list(ds) if e.get("name") == entry.get("name")
                  and e.get("uuid") != entry.get("uuid")]
        if others:  # an index of several segments (deltas, a distributed build)
            from lancenb.index.distributed import segmented

            idx = segmented(ds, idx, others)
        return idx
    return None


# prefilter results kept per dataset version (its snapshot's memo table): the most
# entries and bytes of row ids kept, oldest dropped first
_PREFILTER_KEY = "vector_prefilter_ids"
_PREFILTER_ENTRIES = 8
_PREFILTER_BYTES = 64 << 20
_prefilter_lock = module_lock(globals(), "_prefilter_lock")  # (a fresh one in a forked child)


def _allowed_ids(frags: list, filter, ds=None) -> np.ndarray | None:
    """Sorted row ids of the live rows of ``frags`` the prefilter keeps; None when
    every row of them is allowed (no filter, no deletion).

    A version's rows never change, so the ids a filter (SQL text or an Arrow
    expression) keeps among the same fragments are kept with ``ds``'s version (its
    snapshot's memo table, see :mod:`lancenb.dataset.snapshot`) and reused by the next
    search with that filter: a prefiltered search otherwise spends most of its time
    evaluating the filter over every row."""
    if filter is None and all(f.count_rows() == f.physical_rows for f in frags):
        return None
    memo = getattr(getattr(ds, "snapshot", None), "cache", None)
    key = None
    if isinstance(memo, dict) and (filter is None or isinstance(filter, (str, pc.Expression))):
        key = (None if filter is None else str(filter),
               type(filter).__name__, tuple(f.fragment_id for f in frags))
        with _prefilter_lock:
            kept = memo.get(_PREFILTER_KEY)
            hit = kept.get(key) if kept is not None else None
            if hit is not None:
                kept.move_to_end(key)
                return hit
    ids = np.sort(_filtered_ids(frags, filter, ds))
    if key is not None and ids.nbytes <= _PREFILTER_BYTES:
        ids.flags.writeable = False
        with _prefilter_lock:
            kept = memo.setdefault(_PREFILTER_KEY, OrderedDict())
            kept[key] = ids
            while len(kept) > _PREFILTER_ENTRIES or \
                    sum(a.nbytes for a in kept.values()) > _PREFILTER_BYTES:
                kept.popitem(last=False)
    return ids


def _filtered_ids(frags: list, filter, ds) -> np.ndarray:
    """Row ids of the live rows of ``frags`` that ``filter`` keeps: through the
    dataset's scanner when there is one (its scalar indices answer what they can, as
    pylance's prefilter), else fragment by fragment."""
    if filter is not None and ds is not None and hasattr(ds, "scanner") and frags:
        t = ds.scanner(columns=[], filter=filter, with_row_id=True,
                       fragments=frags).to_table()
        return np.asarray(t.column(ROWID).to_numpy(), dtype=np.uint64)
    parts = [np.asarray(f.to_table(columns=[], filter=filter, with_row_id=True)
                        .column(ROWID).to_numpy(), dtype=np.uint64) for f in frags]
    return np.concatenate(parts) if parts else np.zeros(0, np.uint64)


def _prefilter_plan(ds, frags: list, filter) -> list[str]:
    """pylance's plan lines of an indexed search's prefilter, below ``ANNSubIndex``:
    ``ScalarIndexQuery`` alone when the scalar indices answer the whole filter, else
    the filtered read of the covered fragments (with the index query under it)."""
    if filter is None or not hasattr(ds, "scanner") or not frags:
        return []
    plan = ds.scanner(columns=[], filter=filter, with_row_id=True,
                      fragments=frags).explain_plan()
    lines = [ln.strip() for ln in plan.splitlines() if ln.strip()]
    read = [ln for ln in lines if ln.startswith("LanceRead:")]
    query = [ln for ln in lines if ln.startswith("ScalarIndexQuery:")]
    if query and read and "refine_filter=--" in read[0]:
        return query[:1]
    return read[:1] + ["  " + ln for ln in query[:1]]


class VectorSearchScanner(TableResults):
    """The result of ``ds.scanner(nearest=...)``: a vector search, run when its rows
    are asked for (:meth:`to_table`, :meth:`to_batches`, :meth:`to_reader`,
    :meth:`count_rows`), with pylance's ``LanceScanner`` methods.

    Examples
    --------
    >>> sc = ds.scanner(nearest={"column": "vec", "q": [0.1] * 8, "k": 3})  # doctest: +SKIP
    >>> sc.to_table().column_names  # doctest: +SKIP
    ['id', 'vec', '_distance']
    """

    def __init__(self, ds, nearest: dict, *, columns=None, filter=None, prefilter=None,
                 limit=None, offset=None, with_row_id=False, with_row_address=False,
                 fragments=None, batch_size=None, disable_scoring_autoprojection=False,
                 fast_search=False, include_deleted_rows=False):
        self._ds = ds
        self._req = Request(ds.schema, nearest)
        if include_deleted_rows:
            raise InvalidInputError("Invalid user input: Cannot include deleted rows in a "
                                    "nearest neighbor search")
        # {alias: SQL expression}: the columns the expressions name are taken with the
        # results and the expressions evaluated over them (lancenb.expr.engine)
        self._exprs = dict(columns) if isinstance(columns, dict) else None
        if limit is not None and int(limit) < 0:
            raise InvalidInputError("Limit must be non-negative")
        if offset is not None and int(offset) < 0:
            raise InvalidInputError("Offset must be non-negative")
        self._limit = None if limit is None else int(limit)
        self._offset = int(offset or 0)
        self._k = self._req.k or (self._limit if self._limit is not None else DEFAULT_K)
        if self._k <= 0:
            raise InvalidInputError("Invalid user input: k must be positive")
        self._filter = filter
        self._prefilter = bool(prefilter)
        if fragments is not None and not self._prefilter:
            raise InvalidInputError("Not supported: This operation is not supported for "
                                    "fragment scan")
        self._fragments = list(fragments) if fragments is not None else None
        self._fast_search = bool(fast_search)
        self._batch_size = batch_size
        self._with_row_id = bool(with_row_id)
        self._with_row_address = bool(with_row_address)
        self._columns = self._output_columns(columns, bool(disable_scoring_autoprojection))
        self._post = self._pre = None
        self._pre_columns: list = []
        if filter is not None and self._prefilter:
            self._pre = compile_filter(filter, ds.schema)
            self._pre_columns = referenced_columns(self._pre, [f.name for f in ds.schema])
        if filter is not None and not self._prefilter:
            schema = pa.schema(list(ds.schema) + [pa.field(DISTANCE, pa.float32()),
                                                  pa.field(ROWID, pa.uint64())])
            self._post = compile_filter(filter, schema)
        self._result = None

    def _output_columns(self, columns, no_autoprojection: bool) -> list[str]:
        names = [f.name for f in self._ds.schema] if columns is None else list(columns)
        if DISTANCE not in names and (columns is None or not no_autoprojection):
            names.append(DISTANCE)
        if self._with_row_id and ROWID not in names:
            names.append(ROWID)
        if self._with_row_address and ROWADDR not in names:
            names.append(ROWADDR)
        if self._req.batch and QUERY_INDEX in self._ds.schema.names:
            raise InvalidInputError(f"batch nearest-neighbor search adds a {QUERY_INDEX!r} "
                                    f"column, and the dataset already has one")
        return names

    # -- running ------------------------------------------------------------------------
    def _search(self, q: np.ndarray, idx) -> Candidates:
        frags = self._fragments if self._fragments is not None else self._ds.get_fragments()
        pre = self._filter if self._prefilter else None
        req = self._req
        found = []
        covered = []
        if idx is not None:
            covered = [f for f in frags if f.fragment_id in idx.fragment_ids]
            frags = [f for f in frags if f.fragment_id not in idx.fragment_ids]
        if self._fast_search:
            frags = []  # only what an index holds (nothing without one), as pylance
        if covered:
            # with unindexed fragments pylance re-scores the index's k candidates exactly
            # (its plan's KNNVectorDistance over the union): a refine by 1
            exact = 1 if frags and req.refine_factor is None else req.refine_factor
            found.append(self._index_search(idx, q, covered, pre, exact))
        found.append(flat.flat_search(frags, req.flat_query(q, self._k), req.dim,
                                      keep=self._pre, keep_columns=self._pre_columns))
        return Candidates.concat(found).best(self._k)

    def _index_search(self, idx, q, covered, pre, refine_factor) -> Candidates:
        req, k = self._req, self._k
        allow = _allowed_ids(covered, pre, self._ds)
        query = q.astype(np.float32)
        nprobes = req.nprobes
        if not req.explicit_nprobes:
            nprobes = auto_nprobes(k, req.nprobes, req.maximum_nprobes, idx.num_partitions,
                                   0.5 if req.search_effort is None else req.search_effort,
                                   idx.centroid_distances(query))
        while True:
            ids, dists = idx.search(query, k, nprobes=nprobes, refine_factor=refine_factor,
                                    ef=req.ef, allow=allow)
            top = min(req.maximum_nprobes or idx.num_partitions, idx.num_partitions)
            if len(ids) >= k or nprobes >= top:
                break
            # too few rows found: the next partitions (at least one more), as many as
            # may hold k rows
            nprobes = idx.probes_to_fill(query, k, allow, nprobes + 1, top)
        dists = np.asarray(dists, np.float32).copy()
        flat.in_range(req.flat_query(q, k), dists)
        n = len(ids)
        return Candidates(dists, np.asarray(ids, np.uint64), np.full(n, -1, np.int64),
                          np.full(n, -1, np.int64))

    def _fetch(self, cand: Candidates, columns: list[str]) -> pa.Table:
        """The rows of ``cand`` (in its order, rows that no longer exist dropped) with
        ``columns``, ``_distance``, ``_rowid`` and ``_rowaddr`` (:func:`.rows.take_results`:
        each fragment's result rows taken at once)."""
        got = rows.take_results(self._ds, cand, columns)
        return got if got is not None else self._empty(columns)

    def _empty(self, columns: list[str]) -> pa.Table:
        base = self._ds.scanner(columns=columns, limit=0).projected_schema
        schema = pa.schema(list(base) + [pa.field(DISTANCE, pa.float32()),
                                         pa.field(ROWID, pa.uint64()),
                                         pa.field(ROWADDR, pa.uint64())])
        return schema.empty_table()

    def _run_one(self, q: np.ndarray, idx) -> pa.Table:
        special = (DISTANCE, ROWID, ROWADDR)
        names = [f.name for f in self._ds.schema]
        if self._exprs is not None:
            used: list = []
            for sql in self._exprs.values():
                used += [n for n in names if n not in used and
                         re.search(r"(?<![\w])" + re.escape(n) + r"(?![\w])", str(sql))]
            data = used
        else:
            data = [c for c in self._columns if c not in special]
        if self._post is not None:
            data += [c for c in referenced_columns(self._post, names) if c not in data]
        t = self._fetch(self._search(q, idx), data)
        if self._post is not None:
            t = self._post.apply(t)
        stop = None if self._limit is None else self._offset + self._limit
        t = t.slice(self._offset, (stop - self._offset) if stop is not None else None)
        if self._exprs is not None:
            values = evaluate(t, self._exprs, what="projection")
            for name in values.column_names:
                t = t.append_column(pa.field(name, values.schema.field(name).type),
                                    values.column(name)) if name not in t.column_names \
                    else t.set_column(t.column_names.index(name), name, values.column(name))
        return t.select([c for c in self._columns])

    def to_table(self) -> pa.Table:
        """The search's rows, best first."""
        if self._result is None:
            idx = _vector_index(self._ds, self._req)
            parts = [self._run_one(q, idx) for q in self._req.queries]
            if self._req.batch:
                parts = [t.add_column(0, QUERY_INDEX,
                                      pa.array(np.full(t.num_rows, i, np.int32)))
                         for i, t in enumerate(parts)]
                parts = [t.cast(t.schema.set(0, pa.field(QUERY_INDEX, pa.int32(), False)))
                         for t in parts]
            self._result = pa.concat_tables(parts).combine_chunks()
        return self._result

    def explain_plan(self, verbose: bool = False) -> str:
        """The search in the terms of pylance's plan: ``ANNSubIndex``/``ANNIvfPartition``
        for an index, ``KNNVectorDistance`` for exact distances (a flat search, or the
        re-scoring when unindexed fragments are searched as well)."""
        req = self._req
        idx = _vector_index(self._ds, req)
        frags = self._fragments if self._fragments is not None else self._ds.get_fragments()
        unindexed = [f for f in frags if idx is None or f.fragment_id not in idx.fragment_ids]
        if self._fast_search:
            unindexed = []
        lines = [f"ProjectionExec: expr=[{', '.join(self._columns)}]"]
        if self._post is not None:
            lines.append(f"  FilterExec: {self._filter}")
        lines.append(f"  SortExec: TopK(fetch={self._k}), expr=[_distance ASC NULLS LAST, "
                     f"_rowid ASC NULLS LAST]")
        pre = f", filter={self._filter}" if self._pre is not None else ""
        if idx is None or unindexed:
            lines.append(f"    KNNVectorDistance: metric={req.metric_name}")
            lines.append(f"      LanceRead: uri={self._ds.uri}, projection=[{req.column}], "
                         f"num_fragments={len(unindexed)}{pre}")
        if idx is not None:
            most = "None" if req.maximum_nprobes is None else f"Some({req.maximum_nprobes})"
            shown = {"l2": "L2"}.get(req.metric_name, req.metric_name.capitalize())
            lines.append(f"    ANNSubIndex: name={idx.name}, k={self._k}, deltas=1, "
                         f"metric={shown}")
            lines.append(f"      ANNIvfPartition: uuid={idx.uuid}, minimum_nprobes={req.nprobes}, "
                         f"maximum_nprobes={most}, deltas=1")
            covered = [f for f in frags if f.fragment_id in idx.fragment_ids]
            if self._prefilter:
                lines += ["      " + ln for ln in _prefilter_plan(self._ds, covered,
                                                                  self._filter)]
        return "\n".join(lines) + "\n"

    def analyze_plan(self) -> str:
        self.to_table()
        return self.explain_plan(True)
