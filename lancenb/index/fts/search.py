"""``full_text_query`` scans: a query (a string, a dict ``{"query", "columns"}`` or a
:mod:`lancenb.query` object) evaluated over INVERTED indices (:mod:`.score`), rows no
index covers scored flat as pylance does, deleted rows dropped, an optional filter
applied before (``prefilter=True``) or after the search, best scores first, with a
``_score`` column (float32).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb.errors import InvalidInputError
from lancenb.index.fts import score as sc
from lancenb.index.fts.fuzzy import expander, is_fuzzy
from lancenb.index.fts.query import (
    BooleanQuery,
    BoostQuery,
    FullTextOperator,
    FullTextQuery,
    MatchQuery,
    MultiMatchQuery,
    Occur,
    PhraseQuery,
)
from lancenb.index.results import TableResults
from lancenb.index.scalar.common import IndexFiles, parts_loaded

__all__ = ["FtsScanner"]

SCORE = "_score"
ROWID = "_rowid"


def _normalize(query, ds, indices: list) -> FullTextQuery:
    if isinstance(query, FullTextQuery):
        return query
    columns = None
    if isinstance(query, dict):
        columns = query.get("columns")
        query = query.get("query")
    if not isinstance(query, str):
        raise InvalidInputError(f"full_text_query must be a string, a dict or a "
                                f"FullTextQuery, not {type(query).__name__}")
    if not columns:
        columns = [e["fields"][0] for e in indices if e["type"] == "Inverted"]
        columns = list(dict.fromkeys(columns))
        if not columns:  # (pylance searches unindexed columns only when named)
            raise InvalidInputError("Invalid user input: Cannot perform full text search "
                                    "unless an INVERTED index has been created on at least "
                                    "one column")
    if isinstance(columns, str):
        columns = [columns]
    q = query.strip()
    if len(q) >= 2 and q.startswith('"') and q.endswith('"'):
        parts = [PhraseQuery(q[1:-1], c) for c in columns]
    else:
        parts = [MatchQuery(query, c) for c in columns]
    if len(parts) == 1:
        return parts[0]
    if isinstance(parts[0], MatchQuery):
        return MultiMatchQuery(query, list(columns))
    return BooleanQuery([(Occur.SHOULD, p) for p in parts])


class _Searcher:
    """Evaluates a query to ``{row id: score}`` arrays over the dataset's indices."""

    def __init__(self, ds, fragments, allow, fast_search: bool, indices: list):
        self.ds = ds
        self.indices = indices
        self.frags = fragments
        self.allow = allow  # sorted uint64 row ids allowed by a prefilter, or None
        self.fast = fast_search
        self.comparisons = 0  # indexed documents scored (analyze_plan's index_comparisons)
        self.stable = bool(getattr(ds, "has_stable_row_ids", False))

    def _index(self, column: str, positions: bool):
        entries = [e for e in self.indices if e["fields"] == [column] and (
            e["type"] == "Inverted" or (e["type"] == "Unknown" and IndexFiles(
                self.ds.uri, e["uuid"]).exists("metadata.lance")))]  # (no details kept)
        if not entries:
            return None, []
        e = entries[0]
        entries = [x for x in entries if x["name"] == e["name"]]  # (its segments)
        files = IndexFiles(self.ds.uri, e["uuid"])
        session = self.ds.session() if hasattr(self.ds, "session") else None
        idx = sc.open_inverted(files, e.get("fragment_ids") or [], positions=positions,
                               session=session)
        for extra in entries[1:]:  # (segments of one index built apart)
            more = sc.open_inverted(IndexFiles(self.ds.uri, extra["uuid"]),
                                    extra.get("fragment_ids") or [], positions=positions,
                                    session=session)
            idx = sc.OpenIndex(idx.uuid, idx.params, idx.parts + more.parts,
                               idx.fragment_ids | more.fragment_ids, idx.has_positions)
        return idx, sorted(idx.fragment_ids)

    def _flat(self, column: str, idx, text: str, boost: float = 1.0, operator: str = "OR",
              slop: int | None = None):
        covered = idx.fragment_ids if idx is not None else set()
        todo = [f for f in self.frags if f.fragment_id not in covered]
        if self.fast or not todo:
            return np.zeros(0, np.uint64), np.zeros(0, np.float32)
        from lancenb.index.fts.build import text_column

        scan = self.ds.scanner(columns=[column], with_row_id=True, fragments=todo)
        t = scan.to_table()
        texts = text_column(t.column(0))
        ids = np.asarray(t.column(ROWID).to_numpy(), np.uint64)
        if self.allow is not None:  # (a prefilter: its rows alone make the statistics)
            keep = np.isin(ids, self.allow)
            texts, ids = texts.filter(pa.array(keep)), ids[keep]
        rows, scores = sc.flat_match(idx.params if idx is not None else None, idx, text,
                                     texts, ids, operator=operator, slop=slop)
        return rows, scores * np.float32(boost)

    def _leaf(self, column: str, fn, text: str, flat: bool = True,
              positions: bool = False, boost: float = 1.0, operator: str = "OR",
              slop: int | None = None):
        self._check_column(column)
        idx, _ = self._index(column, positions=positions)
        parts = []
        if idx is not None:
            parts.append(self._live(*fn(idx), idx))
            self.comparisons += len(parts[-1][0])
        if flat:  # (a scan of live rows)
            parts.append(self._live(*self._flat(column, idx, text, boost, operator, slop),
                                    None))
        rows = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.uint64)
        scores = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.float32)
        return rows, scores

    def _check_column(self, column: str) -> None:
        if column not in self.ds.schema.names and "." not in column:
            raise InvalidInputError(f"Column {column} not found in the dataset schema")

    def _live(self, rows, scores, idx):
        """Drop rows of fragments not scanned or gone, and deleted rows (by address:
        the fragments' deletion vectors; stable row ids: the fragments' row ids)."""
        if rows.size and idx is not None:
            if self.stable:
                rows, scores = self._live_stable(rows, scores, idx)
            else:
                scanned = {f.fragment_id for f in self.frags}
                keep = np.ones(len(rows), bool)
                if not idx.fragment_ids <= scanned:  # (fragments gone, or not scanned)
                    keep = np.isin(rows >> np.uint64(32), np.fromiter(scanned, np.uint64))
                dead = [f.deleted_offsets().astype(np.uint64) | np.uint64(f.fragment_id << 32)
                        for f in self.frags if f.fragment_id in idx.fragment_ids]
                dead = [d for d in dead if d.size]
                if dead:
                    keep &= ~np.isin(rows, np.concatenate(dead))
                rows, scores = rows[keep], scores[keep]
        if self.allow is not None and rows.size:
            keep = np.isin(rows, self.allow)
            rows, scores = rows[keep], scores[keep]
        return rows, scores

    def top(self, q, k: int):
        """The best ``k`` ``(row ids, scores)`` of an OR :class:`MatchQuery` without
        fuzziness and with a positive boost, scoring only the postings that can enter
        (:func:`sc.match_topk`); None for other queries (:meth:`run` then a top-k)."""
        if not isinstance(q, MatchQuery) or self.stable or not q.boost > 0:
            return None
        op = q.operator.value if isinstance(q.operator, FullTextOperator) else q.operator
        if op != "OR" or is_fuzzy(q.fuzziness):
            return None
        self._check_column(q.column)
        idx, _ = self._index(q.column, positions=False)
        parts = [self._live(*self._flat(q.column, idx, q.query, q.boost), None)]
        if idx is not None:
            rows, scores, scored = sc.match_topk(idx, q.query, k, boost=q.boost,
                                                 live=self._live_mask(idx))
            parts.append((rows, scores))
            self.comparisons += scored
        return _top(np.concatenate([p[0] for p in parts]),
                    np.concatenate([p[1] for p in parts]), k)

    def _live_mask(self, idx):
        """What :meth:`_live` keeps, as a function of a partition giving a uint8 mask of
        its documents (None when every indexed row is kept)."""
        scanned = {f.fragment_id for f in self.frags}
        gone = not idx.fragment_ids <= scanned
        dead = [f.deleted_offsets().astype(np.uint64) | np.uint64(f.fragment_id << 32)
                for f in self.frags if f.fragment_id in idx.fragment_ids]
        dead = [d for d in dead if d.size]
        if not gone and not dead and self.allow is None:
            return None
        dead = np.concatenate(dead) if dead else None
        keep_frags = np.fromiter(scanned, np.uint64)

        def mask(p):
            rows = p.row_ids
            keep = np.ones(len(rows), bool)
            if gone:
                keep = np.isin(rows >> np.uint64(32), keep_frags)
            if dead is not None:
                keep &= ~np.isin(rows, dead)
            if self.allow is not None:
                keep &= np.isin(rows, self.allow)
            return keep.view(np.uint8)

        return mask

    def _live_stable(self, rows, scores, idx):
        from lancenb.index.scalar import rowmap
        from lancenb.index.scalar.query import _live, view_of

        covered = idx.fragment_ids & {f.fragment_id for f in self.frags}
        live = _live(view_of(self.ds), rowmap.from_ids(rows), covered, True)
        keep = np.isin(rows, rowmap.to_ids(live))
        return rows[keep], scores[keep]

    def run(self, q: FullTextQuery):
        if isinstance(q, MatchQuery):
            op = q.operator.value if isinstance(q.operator, FullTextOperator) else q.operator
            fuzzy = None
            if is_fuzzy(q.fuzziness):
                fuzzy = expander(q.fuzziness, q.max_expansions, q.prefix_length)
            return self._leaf(q.column, lambda idx: sc.match(idx, q.query, operator=op,
                                                             boost=q.boost, fuzzy=fuzzy),
                              q.query, flat=fuzzy is None, boost=q.boost, operator=op)
        if isinstance(q, PhraseQuery):
            return self._leaf(q.column, lambda idx: sc.phrase(idx, q.query, q.slop),
                              q.query, positions=True, slop=int(q.slop or 0))
        if isinstance(q, MultiMatchQuery):
            boosts = q.boosts or [1.0] * len(q.columns)
            # (pylance: the union of the columns' matches, each row's best score)
            return _max_union([self.run(MatchQuery(q.query, c, boost=b, operator=q.operator))
                               for c, b in zip(q.columns, boosts)])
        if isinstance(q, BoostQuery):
            pr, ps = self.run(q.positive)
            nr, ns = self.run(q.negative)
            if nr.size:
                _, ip, ineg = np.intersect1d(pr, nr, return_indices=True)
                ps = ps.copy()
                ps[ip] -= np.float32(q.negative_boost) * ns[ineg]
            return pr, ps
        if isinstance(q, BooleanQuery):
            return self._boolean(q)
        raise InvalidInputError(f"unknown full-text query {q!r}")

    def _boolean(self, q: BooleanQuery):
        must = [self.run(c) for o, c in q.queries if o == Occur.MUST]
        should = [self.run(c) for o, c in q.queries if o == Occur.SHOULD]
        must_not = [self.run(c) for o, c in q.queries if o == Occur.MUST_NOT]
        if must:
            rows, scores = _sum_union(must)
            for r, _ in must:
                keep = np.isin(rows, r)
                rows, scores = rows[keep], scores[keep]
            if should:
                sr, ss = _sum_union(should)
                _, a, b = np.intersect1d(rows, sr, return_indices=True)
                scores = scores.copy()
                scores[a] += ss[b]
        else:
            rows, scores = _sum_union(should)
        for r, _ in must_not:
            keep = ~np.isin(rows, r)
            rows, scores = rows[keep], scores[keep]
        return rows, scores


def _top(rows: np.ndarray, scores: np.ndarray, k: int):
    """The ``k`` best (score descending, then row id), without sorting every match."""
    if k < len(rows):
        if k <= 0:
            return rows[:0], scores[:0]
        thr = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = scores >= thr
        rows, scores = rows[keep], scores[keep]
    order = np.lexsort((rows, -scores.astype(np.float64)))[:k]
    return rows[order], scores[order]


def _max_union(results):
    if not results:
        return np.zeros(0, np.uint64), np.zeros(0, np.float32)
    rows = np.concatenate([r for r, _ in results])
    scores = np.concatenate([s for _, s in results])
    u, inv = np.unique(rows, return_inverse=True)
    out = np.full(len(u), -np.inf, np.float32)
    np.maximum.at(out, inv, scores)
    return u.astype(np.uint64), out


def _sum_union(results):
    if not results:
        return np.zeros(0, np.uint64), np.zeros(0, np.float32)
    rows = np.concatenate([r for r, _ in results])
    scores = np.concatenate([s for _, s in results])
    u, inv = np.unique(rows, return_inverse=True)
    out = np.zeros(len(u), np.float32)
    np.add.at(out, inv, scores)
    return u.astype(np.uint64), out


class FtsScanner(TableResults):
    """A full-text search with pylance's scanner options; rows are computed when first
    asked for (:meth:`to_table`, :meth:`to_batches`, :meth:`count_rows`, ...)."""

    def __init__(self, ds, query, *, columns=None, filter=None, prefilter=None, limit=None,
                 offset=None, with_row_id=False, with_row_address=False, fragments=None,
                 batch_size=None, fast_search=False, disable_scoring_autoprojection=False,
                 include_deleted_rows=False, scan_stats=None):
        if include_deleted_rows:
            raise InvalidInputError("Invalid user input: Cannot include deleted rows in a "
                                    "full text search")
        self._ds = ds
        self._indices = ds.list_indices()
        self._query = _normalize(query, ds, self._indices)
        self._columns = list(columns) if columns is not None else None
        self._filter = filter
        self._prefilter = bool(prefilter)
        if limit is not None and int(limit) < 0:
            raise InvalidInputError("Limit must be non-negative")
        self._limit = None if limit is None else int(limit)
        self._offset = int(offset or 0)
        self._with_row_id = bool(with_row_id)
        self._with_row_address = bool(with_row_address)
        self._fragments = list(fragments) if fragments is not None else None
        self._batch_size = batch_size
        self._fast = bool(fast_search)
        self._no_auto = bool(disable_scoring_autoprojection)
        self._result = None
        self._metrics: dict = {}
        # (callback, ScanStatistics class): told the index parts the search read
        self._stats = scan_stats if scan_stats and scan_stats[0] is not None else None

    def _allowed(self, frags):
        if self._filter is None or not self._prefilter:
            return None
        t = self._ds.scanner(columns=[], filter=self._filter, with_row_id=True,
                             fragments=frags).to_table()
        return np.sort(np.asarray(t.column(ROWID).to_numpy(), np.uint64))

    def _names(self) -> list[str]:
        names = [f.name for f in self._ds.schema] if self._columns is None \
            else list(self._columns)
        if SCORE not in names and (self._columns is None or not self._no_auto):
            names.append(SCORE)
        if self._with_row_id and ROWID not in names:
            names.append(ROWID)
        if self._with_row_address and "_rowaddr" not in names:
            names.append("_rowaddr")
        return names

    def to_table(self) -> pa.Table:
        """The matching rows, best score first."""
        if self._result is not None:
            return self._result
        parts = parts_loaded()
        frags = self._fragments if self._fragments is not None else self._ds.get_fragments()
        search = _Searcher(self._ds, frags, self._allowed(frags), self._fast, self._indices)
        names = self._names()
        data = [c for c in names if c not in (SCORE, ROWID, "_rowaddr")]
        post = self._filter if (self._filter is not None and not self._prefilter) else None
        got = None
        if post is None and self._limit is not None:
            got = search.top(self._query, self._offset + self._limit)
        if got is not None:
            rows, scores = got
        elif post is None and self._limit is not None:
            rows, scores = search.run(self._query)
            rows, scores = _top(rows, scores, self._offset + self._limit)
        else:
            rows, scores = search.run(self._query)
            order = np.lexsort((rows, -scores.astype(np.float64)))
            rows, scores = rows[order], scores[order]
        t = self._fetch(rows, scores, data, post)
        if post is not None:
            stop = None if self._limit is None else self._offset + self._limit
            t = t.slice(0, stop)
        t = t.slice(self._offset)
        self._result = t.select(names).combine_chunks()
        self._metrics = {"output_rows": self._result.num_rows,
                         "index_comparisons": search.comparisons,
                         "parts_loaded": parts_loaded() - parts}
        if self._stats is not None:
            callback, stats = self._stats
            callback(stats(parts_loaded=parts_loaded() - parts,
                           all_counts={"rows_scanned": self._result.num_rows}))
        return self._result

    def _fetch(self, rows, scores, data, post) -> pa.Table:
        from lancenb.expr.filters import compile_filter, referenced_columns
        from lancenb.index.vector import rows as vrows
        from lancenb.index.vector.flat import Candidates

        cols = list(data)
        flt = None
        if post is not None:
            schema = pa.schema(list(self._ds.schema) + [pa.field(SCORE, pa.float32()),
                                                        pa.field(ROWID, pa.uint64())])
            flt = compile_filter(post, schema)
            cols += [c for c in referenced_columns(flt, [f.name for f in self._ds.schema])
                     if c not in cols]
        n = len(rows)
        cand = Candidates(scores.astype(np.float32), rows.astype(np.uint64),
                          np.full(n, -1, np.int64), np.full(n, -1, np.int64))
        t = vrows.take_results(self._ds, cand, cols)
        if t is None:
            base = self._ds.scanner(columns=cols, limit=0).projected_schema if cols else \
                pa.schema([])
            t = pa.schema(list(base) + [pa.field("_distance", pa.float32()),
                                        pa.field(ROWID, pa.uint64()),
                                        pa.field("_rowaddr", pa.uint64())]).empty_table()
        t = t.rename_columns([SCORE if c == "_distance" else c for c in t.column_names])
        if flt is not None:
            t = flt.apply(t)
        return t

    def explain_plan(self, verbose: bool = False) -> str:
        """The search's plan, in the shape of pylance's (projection, read of the rows,
        the query over the index, the prefilter below it)."""
        return self._plan(None)

    def _plan(self, metrics: dict | None) -> str:
        q = self._query
        if isinstance(q, MatchQuery):
            node = f"MatchQuery: column={q.column}, query=[{q.query}]"
        elif isinstance(q, PhraseQuery):
            node = f"PhraseQuery: column={q.column}, query=[{q.query}]"
        else:
            node = f"{type(q).__name__}: {q.inner}"

        def m(keys):
            if metrics is None:
                return ""
            return ", metrics=[" + ", ".join(f"{k}={metrics[k]}" for k in keys) + "]"

        lines = [f"ProjectionExec: expr=[{', '.join(self._names())}]{m(['output_rows'])}",
                 f"  LanceRead: uri={self._ds.uri}{m(['output_rows'])}",
                 f"    {node}{m(['output_rows', 'index_comparisons', 'parts_loaded'])}"]
        if self._filter is not None:
            indexed = self._indexed_prefilter() if self._prefilter else None
            if indexed is not None:  # (the scalar indices answer the whole prefilter)
                lines.append(f"      {indexed}")
            else:
                where = "Prefilter" if self._prefilter else "Postfilter"
                lines.append(f"      {where}: filter=[{self._filter}]")
        return "\n".join(lines) + "\n"

    def _indexed_prefilter(self) -> str | None:
        """pylance's ``ScalarIndexQuery`` line for the prefilter when the scalar indices
        answer all of it, else None."""
        plan = self._ds.scanner(columns=[], filter=self._filter,
                                with_row_id=True).explain_plan()
        lines = [ln.strip() for ln in plan.splitlines()]
        query = [ln for ln in lines if ln.startswith("ScalarIndexQuery:")]
        read = [ln for ln in lines if ln.startswith("LanceRead:")]
        if query and read and "refine_filter=--" in read[0]:
            return query[0]
        return None

    def analyze_plan(self) -> str:
        """:meth:`explain_plan` with what running the search did: rows out, indexed
        documents scored (``index_comparisons``) and index parts read."""
        self._result = None
        self.to_table()
        return "AnalyzeExec verbose=true, metrics=[]\n" + "\n".join(
            "  " + line for line in self._plan(self._metrics).splitlines()) + "\n"
