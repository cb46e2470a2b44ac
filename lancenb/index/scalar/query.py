"""Answer a filter from the dataset's scalar indices, without reading the column.

:func:`index_rows` parses the filter into :mod:`lancenb.expr` nodes and answers it
when every leaf (a comparison of an indexed column with a literal, ``IN``, ``IS
[NOT] NULL``, ``LIKE``) has a BTREE or BITMAP index, combining leaves with SQL's
three-valued logic: ``AND`` intersects, ``OR`` unites, ``NOT p`` is every indexed row
where ``p`` is neither true nor NULL. The answer is exact for the fragments the
indices cover (all of them cover the same ones, or the answer is refused); rows of
other fragments are for the caller to scan, and deleted rows are removed. With
stable row ids the answer holds row ids: BITMAP indices (and lancenb's BTREE) hold
row ids there, pylance 14's BTREE (index version 1) holds row addresses, which are
translated through the fragments' row-id sequences.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyroaring import BitMap64

from lancenb.errors import InvalidInputError, LanceError
from lancenb.expr.nodes import And, Cmp, Col, In, IsNull, Like, Lit, Not, Opaque, Or
from lancenb.expr.parse import Translator, parse_sql
from lancenb.index import json_index as ji
from lancenb.index.scalar import rowmap
from lancenb.index.scalar.bitmap import BitmapIndex
from lancenb.index.scalar.btree import BTreeIndex
from lancenb.index.scalar.common import Answer, IndexFiles, Unanswerable
from lancenb.index.scalar.label_list import LabelListIndex, label_query
from lancenb.index.scalar.literals import opaque_comparison
from lancenb.index.scalar.ngram import NGramIndex, contains_query
from lancenb.index.scalar.rowmap import fragment_row_ids as _fragment_row_ids
from lancenb.index.scalar.rowmap import live_rows as _live
from lancenb.index.scalar.zones import BloomFilterIndex, ZoneMapIndex
from lancenb.io.pools import module_lock
from lancenb.io.store import ObjectStore
from lancenb.table.commit import find_manifest
from lancenb.table.indices import index_from_pb, parse_section

__all__ = ["index_rows", "index_offsets", "Offsets", "open_index", "TableView", "view_of",
           "json_targets", "prewarm"]

_READERS = {"BTree": BTreeIndex, "Bitmap": BitmapIndex, "LabelList": LabelListIndex}
# inexact indices: they rule zones of rows out, used where a superset will do
_ZONE_READERS = {"ZoneMap": ZoneMapIndex, "BloomFilter": BloomFilterIndex,
                 "NGram": NGramIndex}


def _leaf_column(node) -> str | None:
    """The column a leaf predicate tests, None if ``node`` is not such a leaf."""
    if isinstance(node, Cmp):
        sides = (node.left, node.right)
        cols = [s for s in sides if isinstance(s, Col)]
        lits = [s for s in sides if isinstance(s, Lit)]
        if len(cols) == 1 and len(lits) == 1:
            return ".".join(cols[0].path)
        return None
    if isinstance(node, (In, IsNull, Like)) and isinstance(node.arg, Col):
        return ".".join(node.arg.path)
    return None


def _has_not(node) -> bool:
    if isinstance(node, Not):
        return True
    if isinstance(node, (And, Or)):
        return _has_not(node.left) or _has_not(node.right)
    return False


# open indices by (dataset uri, uuid): index files never change once written (a new
# build gets a new uuid), so a reader and the lookup it loaded serve every version
_OPEN: OrderedDict = OrderedDict()
_OPEN_MAX = 64
# a dataset session's own open indices (pylance's index cache is its session's: a
# dataset opened afresh reads its index parts again, until prewarm_index loads them)
_SESSIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_OPEN_LOCK = module_lock(globals(), "_OPEN_LOCK")  # (a fresh one in a forked child)


def open_index(view: "TableView", entries: list[dict]):
    """Readers of the index segments ``entries`` (``list_indices()`` dicts), kept
    open for later queries (the last 64)."""
    frags = {int(f.id): int(f.physical_rows) for f in view.fragments}

    def full_rows(fid: int) -> int:
        # (a fragment id is never reused and keeps its row count)
        return frags.get(fid, 0)

    out = []
    with _OPEN_LOCK:
        cache = _OPEN
        if view.cache is not None:
            try:
                cache = _SESSIONS.setdefault(view.cache, OrderedDict())
            except TypeError:  # (a session object that takes no weak reference)
                pass
    for e in entries:
        cls = _READERS.get(e["type"]) or _ZONE_READERS.get(e["type"])
        if cls is None:
            raise Unanswerable(f"index type {e['type']}")
        key = (view.uri, e["uuid"], e["type"])
        with _OPEN_LOCK:
            got = cache.get(key)
            if got is not None:
                cache.move_to_end(key)
        if got is None:
            files = IndexFiles(view.uri, e["uuid"])
            got = cls(files) if cls is BTreeIndex else cls(files, full_rows)
            with _OPEN_LOCK:
                cache[key] = got
                while len(cache) > _OPEN_MAX:
                    cache.popitem(last=False)
        out.append(got)
    return out


# (uri, uuid) -> (path, target type, value type) of a JSON index, or None
_JSON: dict = {}


def json_targets(uri: str, version: int, entries: list[dict]) -> dict[str, tuple]:
    """uuid -> ``(path, list_indices type of the target, value type)`` of the JSON
    indices among ``entries`` that lancenb reads (details from the manifest file)."""
    want = [e["uuid"] for e in entries if e["type"] == "Json"]
    if any((uri, u) not in _JSON for u in want):
        found = find_manifest(ObjectStore(uri), version)
        if found is None:
            raise Unanswerable("the manifest file of this version cannot be read by name")
        for m in parse_section(found[0].index_section_bytes(), found[0].name):
            i = index_from_pb(m)
            if i.uuid in want and i.index_details and \
                    i.index_details[0] == ji.DETAILS_TYPE_URL:
                _JSON[(uri, i.uuid)] = ji.target_of(uri, i.uuid, i.index_details[1])
    return {u: _JSON[(uri, u)] for u in want if _JSON.get((uri, u)) is not None}


def _index_versions(view: "TableView") -> dict[str, int]:
    """uuid -> ``index_version`` of the indices of ``ds``'s version (read from its
    manifest file: ``list_indices`` does not give it)."""
    found = find_manifest(ObjectStore(view.uri), view.version)
    if found is None:
        raise Unanswerable("the manifest file of this version cannot be read by name")
    mf = found[0]
    return {index_from_pb(m).uuid: int(m.index_version)
            for m in parse_section(mf.index_section_bytes(), mf.name)}


class _AddressesAsIds:
    """A segment holding row addresses in a dataset with stable row ids (pylance 14's
    BTREE, index version 1): its answers translated to row ids."""

    def __init__(self, seg, planner):
        self.seg, self.planner = seg, planner

    def search(self, node, column: str, with_nulls: bool) -> Answer:
        a = self.seg.search(node, column, with_nulls)
        ids = self.planner.addr_to_id
        return Answer(ids(a.true), ids(a.null) if a.null is not None else None)

    def all_rows(self) -> BitMap64:
        return self.planner.addr_to_id(self.seg.all_rows())

    def search_all(self, nodes: list, column: str) -> Answer:
        return Answer(self.planner.addr_to_id(self.seg.search_all(nodes, column).true))


class _Planner:
    """Evaluates a filter tree over the indexed columns of one dataset."""

    def __init__(self, view: "TableView", stable: bool = False):
        self.view = view
        self.frags = view.fragments
        self.stable = stable
        self.versions: dict[str, int] | None = None
        self.row_ids: dict[int, np.ndarray] = {}
        self.by_column: dict[str, list[dict]] = {}
        self.zone_by_column: dict[str, list[dict]] = {}
        for e in view.indices:
            if len(e["fields"]) == 1 and e["type"] in _READERS:
                self.by_column.setdefault(e["fields"][0], []).append(e)
            elif len(e["fields"]) == 1 and e["type"] in _ZONE_READERS:
                self.zone_by_column.setdefault(e["fields"][0], []).append(e)
        self.json = [e for e in view.indices if e["type"] == "Json" and len(e["fields"]) == 1]
        self.readers: dict[tuple, list] = {}
        self.covered: set[int] | None = None
        self.universe: BitMap64 | None = None
        #: whether some part was answered by a superset (zones, n-grams, an AND side
        #: no index answers): the caller must then evaluate the filter on the rows
        self.superset = False
        self._rows = None
        self.spans = None  # (the answer of the last zones() and its address ranges)

    def _segments(self, column: str, labels: bool = False, zones: bool = False) -> list:
        key = (column, labels, zones)
        got = self.readers.get(key)
        if got is None:
            entries = [e for e in (self.zone_by_column if zones else self.by_column).get(
                column, ()) if (e["type"] == "LabelList") == labels
                and (e["type"] == "NGram") == (zones == "ngram")]
            if not entries:
                raise Unanswerable(f"no scalar index on {column!r}")
            name = entries[0]["name"]  # (the segments of one index; another index ignored)
            entries = [e for e in entries if e["name"] == name]
            cover = set()
            for e in entries:
                cover |= set(e["fragment_ids"])
            if self.covered is not None and cover != self.covered:
                raise Unanswerable("the indices cover different fragments")
            self.covered = cover
            got = open_index(self.view, entries)
            if self.stable and not zones:
                if self.versions is None:
                    self.versions = _index_versions(self.view)
                got = [_AddressesAsIds(g, self) if e["type"] == "BTree" and
                       self.versions.get(e["uuid"], 0) >= 1 else g
                       for g, e in zip(got, entries)]
            self.readers[key] = got
        return got

    def addr_to_id(self, rows: BitMap64) -> BitMap64:
        """Row addresses as the row ids of the rows they hold now (addresses of gone
        fragments or rows dropped)."""
        out = BitMap64()
        store = None
        for f in self.frags:
            base = int(f.id) << 32
            n = int(f.physical_rows)
            part = BitMap64()
            part.add_range(base, base + n)
            part &= rows
            if not len(part):
                continue
            ids = self.row_ids.get(int(f.id))
            if ids is None:
                store = store or ObjectStore(self.view.uri)
                ids = self.row_ids[int(f.id)] = _fragment_row_ids(store, f)
            offsets = (rowmap.to_ids(part) - np.uint64(base)).astype(np.int64)
            out |= rowmap.from_ids(ids[offsets])
        return out

    def labels(self, node, with_nulls: bool) -> Answer:
        q = label_query(node.sql)
        if q is None or with_nulls:  # (NULL rows of a list predicate: not from the index)
            raise Unanswerable(f"{node.sql!r} is not answered by a label index")
        column, labels, mode = q
        true = BitMap64()
        for seg in self._segments(column, labels=True):
            true |= seg.search_labels(labels, mode).true
        return Answer(true)

    def zones(self, nodes: list, column: str) -> Answer:
        """A superset of the rows where the ``AND`` of the leaves ``nodes`` (of
        ``column``) is true: the zones a ZONEMAP or BLOOMFILTER index cannot rule out
        for each of them (reaching further by the fragment's deleted rows,
        :mod:`.zones`)."""
        self.superset = True
        rows, dead = self._frag_rows()
        out, spans = BitMap64(), []
        for seg in self._segments(column, zones=True):
            fids, starts, lengths = seg.zones_all(nodes)
            if not len(fids):
                continue
            at = np.searchsorted(rows[0], fids)
            known = (at < len(rows[0])) & (rows[0][np.minimum(at, len(rows[0]) - 1)] == fids)
            fids, starts, lengths, at = fids[known], starts[known], lengths[known], at[known]
            n = rows[1][at]
            # (a fragment with deleted rows: its zones reach further by their count,
            # or to its end when the deletion file does not say how many)
            extra = dead[at]
            ends = np.where(extra < 0, n, starts + lengths + np.maximum(extra, 0))
            base = fids << 32
            lo, hi = base + np.minimum(starts, n), base + np.minimum(ends, n)
            for a, b in zip(lo.tolist(), hi.tolist()):
                out.add_range(a, b)
            spans.append((lo, hi))
        got = Answer(self.addr_to_id(out) if self.stable else out)
        # (the address ranges too: a scan whose whole answer this is reads them as
        # offsets without going through the row set, index_offsets)
        self.spans = None if self.stable or not spans else (
            got, np.concatenate([a for a, _ in spans]), np.concatenate([b for _, b in spans]))
        return got

    def _frag_rows(self) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
        """``((sorted fragment ids, their physical rows), deleted rows of each, -1
        where the count is not recorded)``."""
        if self._rows is None:
            fr = sorted(self.frags, key=lambda f: int(f.id))
            ids = np.array([int(f.id) for f in fr], np.int64)
            rows = np.array([int(f.physical_rows) for f in fr], np.int64)
            dead = np.array([0 if f.deletion_file is None else
                             int(f.deletion_file.num_deleted_rows or 0) or -1
                             for f in fr], np.int64)
            self._rows = ((ids, rows), dead)
        return self._rows

    def contains(self, node, with_nulls: bool, loose: bool) -> Answer | None:
        """A superset of the rows of ``contains(column, 'text')`` from an NGRAM index
        (rows ids), None when ``node`` is not such a predicate."""
        q = contains_query(node.sql)
        if q is None:
            return None
        if not loose or with_nulls:
            raise Unanswerable("an NGRAM index gives a superset only")
        self.superset = True
        out = BitMap64()
        for seg in self._segments(q[0], zones="ngram"):
            got = seg.search_contains(q[1])
            if got is None:
                raise Unanswerable(f"{q[1]!r} is too short for an NGRAM index")
            out |= got
        return Answer(out)

    def like(self, node, column: str, with_nulls: bool, loose: bool) -> Answer:
        """A superset of the rows of ``column LIKE pattern`` from an NGRAM index (the
        scan rechecks them), as pylance 14 uses one: case-sensitive LIKE, no NOT above."""
        if not loose or with_nulls or node.ignore_case:
            raise Unanswerable("an NGRAM index gives a superset only")
        self.superset = True
        out = BitMap64()
        for seg in self._segments(column, zones="ngram"):
            got = seg.search_like(node.pattern)
            if got is None:
                raise Unanswerable(f"LIKE {node.pattern!r}: no run an NGRAM index narrows")
            out |= got
        return Answer(out)

    def leaf(self, node, with_nulls: bool, loose: bool = False) -> Answer:
        if isinstance(node, Like) and isinstance(node.arg, Col) and \
                ".".join(node.arg.path) not in self.by_column and \
                any(e["type"] == "NGram" for e in self.zone_by_column.get(
                    ".".join(node.arg.path), ())):
            return self.like(node, ".".join(node.arg.path), with_nulls, loose)
        if isinstance(node, Opaque) and self.json:
            got = ji.json_leaf(node.sql)
            if got is not None:
                return self.json_leaf(got, with_nulls, loose)
        if isinstance(node, Opaque):
            cmp = opaque_comparison(node.sql, self.view.schema)
            if cmp is not None:
                return self.leaf(cmp, with_nulls, loose)
            got = self.contains(node, with_nulls, loose)
            return got if got is not None else self.labels(node, with_nulls)
        column = _leaf_column(node)
        if column is None:
            raise Unanswerable(f"{type(node).__name__} is not an indexed predicate")
        if column not in self.by_column and column in self.zone_by_column:
            if not loose or with_nulls:
                raise Unanswerable(f"the index on {column} is inexact")
            return self.zones([node], column)
        true, null = BitMap64(), BitMap64() if with_nulls else None
        for seg in self._segments(column):
            a = seg.search(node, column, with_nulls)
            true |= a.true
            if with_nulls:
                null |= a.null
        if with_nulls and self.universe is None:
            self.universe = BitMap64()
            for seg in self._segments(column):
                self.universe |= seg.all_rows()
        return Answer(true, null)

    def json_leaf(self, got, with_nulls: bool, loose: bool) -> Answer:
        """A ``json_get_<type>(column, 'path')`` test answered by the JSON index on that
        column and path whose values have the function's type."""
        column, path, typ, node = got
        key = ji.json_key(column, path)
        if key not in self.by_column:
            targets = json_targets(self.view.uri, self.view.version, self.json)
            found = [dict(e, type=targets[e["uuid"]][1], fields=[key]) for e in self.json
                     if e["fields"] == [column] and e["uuid"] in targets
                     and targets[e["uuid"]][0] == path and targets[e["uuid"]][2] == typ]
            if not found:
                raise Unanswerable(f"no JSON index on {column} -> {path} of type {typ}")
            self.by_column[key] = found
        return self.eval(node, with_nulls, loose)

    def conjunction(self, node, loose: bool = False) -> Answer | None:
        """An ``AND`` of comparisons of one BTREE-indexed column (``x >= a AND x <
        b``) answered by reading only the pages all of them may hold, or None;
        ``loose``: of a ZONEMAP/BLOOMFILTER column, the zones all of them may hold."""
        leaves, todo = [], [node]
        while todo:
            n = todo.pop()
            if isinstance(n, And):
                todo += [n.left, n.right]
            elif isinstance(n, (Cmp, In)):
                leaves.append(n)
            else:
                return None
        columns = {_leaf_column(n) for n in leaves}
        if len(columns) != 1 or None in columns:
            return None
        column = columns.pop()
        if column not in self.by_column:
            if not loose or column not in self.zone_by_column:
                return None
            try:
                return self.zones(leaves, column)
            except Unanswerable:
                return None
        try:
            segs = self._segments(column)
        except Unanswerable:
            return None
        if not all(hasattr(s, "search_all") for s in segs):
            return None
        true = BitMap64()
        for seg in segs:
            true |= seg.search_all(leaves, column).true
        return Answer(true)

    def eval(self, node, with_nulls: bool, loose: bool = False) -> Answer:
        """The answer of ``node``; ``loose``: an ``AND`` with a side no index answers
        is answered by its other side (a superset: the caller evaluates the filter on
        those rows), only where no ``NOT`` is above."""
        if isinstance(node, And) and not with_nulls:
            got = self.conjunction(node, loose)
            if got is not None:
                return got
        if isinstance(node, And) and loose and not with_nulls:
            try:
                a = self.eval(node.left, False, True)
            except Unanswerable:
                self.superset = True
                return self.eval(node.right, False, True)
            try:
                b = self.eval(node.right, False, True)
            except Unanswerable:
                self.superset = True
                return a
            return Answer(a.true & b.true)
        if isinstance(node, And):
            a, b = self.eval(node.left, with_nulls), self.eval(node.right, with_nulls)
            t = a.true & b.true
            n = ((a.true | a.null) & (b.true | b.null)) - t if with_nulls else None
            return Answer(t, n)
        if isinstance(node, Or):
            a = self.eval(node.left, with_nulls, loose)
            b = self.eval(node.right, with_nulls, loose)
            t = a.true | b.true
            return Answer(t, (a.null | b.null) - t if with_nulls else None)
        if isinstance(node, Not):
            a = self.eval(node.arg, True)
            return Answer(self.universe - a.true - a.null, a.null if with_nulls else None)
        return self.leaf(node, with_nulls, loose)


@dataclass(frozen=True)
class TableView:
    """What the index layer needs of one dataset version, gathered by the caller (a
    scan in the dataset layer hands it down rather than have this layer call back
    up): its URI, version number, schema, ``list_indices()`` entries and fragments
    (:class:`~lancenb.table.fragments.FragmentMetadata`)."""

    uri: str
    version: int
    schema: pa.Schema
    indices: list
    fragments: list
    cache: object = None  # the dataset's session: its open indices are its own


def view_of(ds) -> TableView:
    """The :class:`TableView` of a dataset object, through its public API."""
    session = ds.session() if hasattr(ds, "session") else None
    return TableView(ds.uri, ds.version, ds.schema, ds.list_indices(),
                     [f.metadata for f in ds.get_fragments()], session)


def prewarm(ds, name: str) -> None:
    """Load the index ``name`` of ``ds`` into its session's cache (BTREE pages: a
    later query on that dataset object reads no index part)."""
    view = view_of(ds)
    entries = [e for e in view.indices if e["name"] == name]
    if not entries:
        raise InvalidInputError(f"Index {name!r} not found in dataset {view.uri}")
    if entries[0]["type"] == "Json":
        targets = json_targets(view.uri, view.version, entries)
        entries = [dict(e, type=targets[e["uuid"]][1]) for e in entries
                   if e["uuid"] in targets]
    if entries[0]["type"] == "Inverted":
        from lancenb.index.fts.score import prewarm as prewarm_inverted

        return prewarm_inverted(view.uri, entries, view.cache)
    entries = [e for e in entries if e["type"] in _READERS or e["type"] in _ZONE_READERS]
    for reader in open_index(view, entries) if entries else ():
        if hasattr(reader, "prewarm"):
            reader.prewarm()


def _view(ds_or_view) -> TableView:
    return ds_or_view if isinstance(ds_or_view, TableView) else view_of(ds_or_view)


# parsed filters by (text, schema object), the schema held so its id stays its own: a
# scan asks the indices on every execution, and parsing costs more than the lookup
_TREES: dict = {}
_TREES_SIZE = 256


def _tree(filter: str, schema: pa.Schema):
    key = (filter, id(schema))
    hit = _TREES.get(key)
    if hit is not None and hit[0] is schema:
        return hit[1]
    tree = Translator(filter, schema, tolerant=True).term(parse_sql(filter, "filter"))
    if len(_TREES) >= _TREES_SIZE:
        _TREES.clear()
    _TREES[key] = (schema, tree)
    return tree


def index_rows(ds, filter, *, exact: bool = True) -> tuple[BitMap64, set[int]] | None:
    """The rows of ``ds`` (a dataset or a :class:`TableView`) where the SQL ``filter``
    is true, answered from scalar indices: ``(row addresses, ids of the fragments the
    answer covers)`` (row ids instead of addresses when the dataset has stable row
    ids), or None when the indices cannot answer it exactly (no index on a column it
    tests, a part no index evaluates, a pyarrow Expression). Rows of fragments
    outside the covered set are not included (scan those); deleted rows are
    excluded. ``exact=False``: a superset is enough (the caller evaluates the filter
    on the rows), so ``p AND q`` with ``q`` unindexed is answered by ``p``.

    Examples
    --------
    >>> rows, covered = index_rows(ds, "x = 5 OR x IN (7, 9)")  # doctest: +SKIP
    """
    got = _answer(ds, filter, exact)
    return None if got is None else got[:2]


def _answer(ds, filter, exact: bool, spans: bool = False
            ) -> tuple[BitMap64, set[int], bool] | None:
    """:func:`index_rows`, and whether the rows are a superset (``exact=False`` only).
    ``spans``: when the answer is one zone index's, ``(lo, hi)`` arrays of its address
    ranges instead of the rows (deleted rows not taken out)."""
    if not isinstance(filter, str) or not filter.strip():
        return None
    view = _view(ds)
    if not any(e["type"] in _READERS or e["type"] in _ZONE_READERS or e["type"] == "Json"
               for e in view.indices):
        return None  # (the common case: no scalar index, nothing parsed or read)
    stable = any(f.row_id_meta is not None for f in view.fragments)
    try:
        tree = _tree(filter, view.schema)
        planner = _Planner(view, stable)
        if not planner.by_column and not planner.zone_by_column and not planner.json:
            return None
        answer = planner.eval(tree, _has_not(tree), not exact)
    except (Unanswerable, LanceError, RecursionError, TypeError, ValueError):
        return None
    existing = {int(f.id) for f in view.fragments}
    covered = (planner.covered or set()) & existing
    if spans and planner.spans is not None and planner.spans[0] is answer:
        return planner.spans[1:], covered, True
    return _live(view, answer.true, covered, stable), covered, planner.superset


class Offsets(dict):
    """``{fragment id: offsets}`` of :func:`index_offsets`; ``exact``: the offsets
    are exactly the rows the filter is true for (no zone, n-gram or unindexed ``AND``
    side widened them), so a scan need not evaluate the filter on them."""

    exact = False


def index_offsets(ds, filter) -> dict[int, np.ndarray] | None:
    """:func:`index_rows` as a scan uses it: ``{fragment id: sorted physical offsets
    of its live rows where the filter may be true}`` for every fragment the indices
    cover (fragments not in the dict are to be scanned), or None. ``ds``: a dataset
    or a :class:`TableView`.

    A scan restricts each covered fragment's rows to these offsets, then evaluates
    the filter on them: the offsets hold every matching row, exactly the matching
    ones when the result's ``exact`` is true (:class:`Offsets`).

    Examples
    --------
    >>> hits = index_offsets(ds, "x = 5")  # doctest: +SKIP
    >>> hits[0][:3]  # doctest: +SKIP
    array([ 5, 102, 199])
    """
    view = _view(ds)
    got = _answer(view, filter, False, spans=True)
    if got is None:
        return None
    rows, covered, superset = got
    frags = {int(f.id): f for f in view.fragments}
    out = Offsets()
    out.exact = not superset
    if isinstance(rows, tuple):  # (zones: their ranges, without a row set)
        return _span_offsets(view, rows, covered, frags, out)
    stable = any(f.row_id_meta is not None for f in frags.values())
    store = ObjectStore(view.uri) if stable else None
    ids = rowmap.to_ids(rows)
    if not stable:  # (addresses sorted: each fragment's are one run)
        fids = (ids >> np.uint64(32)).astype(np.int64)
        offs = (ids & np.uint64(0xFFFFFFFF)).astype(np.int64)
    for fid in sorted(covered):
        f = frags.get(fid)
        if f is None:
            continue
        if stable:
            out[fid] = np.flatnonzero(np.isin(_fragment_row_ids(store, f), ids))
        else:
            a, b = np.searchsorted(fids, [fid, fid + 1]).tolist()
            out[fid] = offs[a:b]
    return out


def _span_offsets(view: TableView, spans, covered: set[int], frags: dict,
                  out: Offsets) -> Offsets:
    """:func:`index_offsets` of the address ranges ``spans`` (``(lo, hi)``) of a zone
    index's answer: each covered fragment's ranges as offsets, less its deleted rows."""
    lo, hi = spans
    fids = (lo >> 32).astype(np.int64)
    present = set(np.unique(fids).tolist())
    store = None
    for fid in sorted(covered):
        f = frags.get(fid)
        if f is None:
            continue
        if fid not in present:  # (no zone of it may match)
            out[fid] = np.zeros(0, np.int64)
            continue
        mine = fids == fid
        offs = rowmap.span_offsets(lo[mine] - (fid << 32), hi[mine] - (fid << 32))
        if f.deletion_file is not None and len(offs):
            store = store or ObjectStore(view.uri)
            offs = rowmap.without(offs, rowmap._deleted(store, f))
        out[fid] = offs
    return out
