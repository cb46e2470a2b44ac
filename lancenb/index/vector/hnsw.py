"""The HNSW sub-index of IVF_HNSW_{FLAT,SQ,PQ} indices: the graph pylance stores.

Layout (``index.idx`` of an IVF_HNSW index, instead of the FLAT marker): per
partition, one row per (level, node): ``__vector_id: uint32`` (the node's position in
its partition of ``auxiliary.idx``), ``__neighbors: list<uint32>`` and ``_distance:
list<float32>`` (distance to each neighbour). A partition's rows are level 0 (every
node, in id order), then level 1, ...; the IVF message of ``index.idx`` gives each
partition's first row and row count. Metadata ``lance:hnsw`` is a JSON list with one
JSON string per partition: ``{"entry_point": id, "params": {"max_level": 7, "m": 20,
"ef_construction": 150, "prefetch_distance": 2}, "level_offsets": [0, n0, n0+n1, ...]}``
(cumulative row counts per level; empty top levels repeat the last offset).

lancenb builds an HNSW hierarchy without insertions: each node's top level is drawn as
HNSW draws it (level ``l`` with chance ``m**-l``); level 0 links every node to ``2*m``
nodes of its partition, the upper levels each of their nodes to ``m`` of that level:
per level, its nearest (exact, by the decoded vectors: two thirds of the nearest
share) and the nodes it is nearest to, up to three quarters of the links, and a
quarter random ones (long links: a nearest-only graph of clustered data falls apart);
the entry point is the top level's node nearest the partition's mean. A build makes
the partitions' graphs one after another (:func:`iter_graphs`, each partition's
vectors decoded for it alone) and writes each before the next; the graph row counts
the IVF message needs first come from the levels alone (:func:`graph_lengths`). Measured on 20k
x 32 clustered vectors, one partition, recall@10 at ``ef`` 10/15/30 (both libraries
walk it alike): 0.96/0.9975/0.9975, pylance's own graph 0.99/0.9975/1.0, the former
two-level graph (entry point alone on level 1) 0.83/0.93/0.9975.

Search (:class:`Graphs`, opened with the index): every partition's graph rows become
one CSR adjacency (``row_of[level, node]`` -> graph row, the ``__neighbors`` lists as
read), built once when the index is opened and kept with it; a query walks the graphs
of its probed partitions in one call of :func:`lancenb.kernels.vector.hnsw.hnsw_search`
(greedy descent from the partition's entry point, then a beam of ``ef`` at level 0
from there and from node 0, which reproduces pylance 14's answers on its own graphs;
``ef`` defaults to ``k + k // 2`` with ``k`` the candidates asked for, ``k *
refine_factor``, as pylance), on the storage's rows kept row-major (SQ: codes against
the query's codes; PQ: the ADC tables of the probed partitions; FLAT: the vectors).
Prefilters and deletions: rows the prefilter drops are walked through but never
returned; a partition where fewer than a tenth of the rows pass is scored row by row
(pylance's rule), so a search returns ``k`` rows whenever ``k`` pass.
"""

from __future__ import annotations

import json
import threading

import numpy as np
import pyarrow as pa

from lancenb.errors import CorruptFileError, InvalidInputError
from lancenb.index.vector import pq as pqmod
from lancenb.index.vector import sq as sqmod
from lancenb.index.vector.flat import allowed_mask, in_two
from lancenb.kernels.vector import hnsw as kh
from lancenb.kernels.vector import topk as kt

__all__ = ["HNSW", "HNSW_KEY", "GRAPH_SCHEMA", "Graphs", "build_graphs", "iter_graphs",
           "graph_lengths", "DEFAULT_M", "MAX_LEVEL"]

HNSW_KEY = "lance:hnsw"
DEFAULT_M = 20
EF_CONSTRUCTION = 150
MAX_LEVEL = 7
BLOCK = 2048  # rows of the distance matrix computed at once
GRAPH_SCHEMA = pa.schema([pa.field("__vector_id", pa.uint32()),
                          pa.field("__neighbors", pa.list_(pa.uint32())),
                          pa.field("_distance", pa.list_(pa.float32()))])


def _knn(x: np.ndarray, k: int):
    """Each row's ``k`` nearest other rows (squared L2) and their distances."""
    n = len(x)
    k = min(k, n - 1)
    norms = np.einsum("ij,ij->i", x, x)
    nbrs = np.empty((n, max(k, 0)), np.int64)
    dists = np.empty((n, max(k, 0)), np.float32)
    if k <= 0:
        return nbrs, dists
    # rows of the distance matrix at a time: at most BLOCK, and at most 2**22 entries
    # (its argpartition holds 8 bytes an entry: a large partition's whole block rows
    # would be hundreds of MB)
    step = max(1, min(BLOCK, (1 << 22) // max(n, 1)))
    for s in range(0, n, step):
        d = norms[s:s + step, None] + norms[None, :] - 2 * (x[s:s + step] @ x.T)
        np.maximum(d, 0, out=d)
        d[np.arange(len(d)), np.arange(s, s + len(d))] = np.inf  # not its own neighbour
        part = np.argpartition(d, k - 1, axis=1)[:, :k]
        pd = np.take_along_axis(d, part, axis=1)
        order = np.argsort(pd, axis=1, kind="stable")
        nbrs[s:s + step] = np.take_along_axis(part, order, axis=1)
        dists[s:s + step] = np.take_along_axis(pd, order, axis=1)
    return nbrs, dists


RANDOM_SHARE = 4  # one link in four goes to a random node: keeps clusters connected


def _with_reverse(nbrs: np.ndarray, dists: np.ndarray, cap: int):
    """The links ``nbrs`` (each node's nearest, ``(n, k)``) and their reverses, each
    node keeping its ``cap`` nearest: ``(owner, neighbour, distance)`` sorted by owner
    then distance. A node many others are near to links back to them, which keeps
    the walk from dead-ending in clusters reached only one way."""
    n, k = nbrs.shape
    src = np.repeat(np.arange(n, dtype=np.int64), k)
    dst = nbrs.reshape(-1).astype(np.int64)
    d = dists.reshape(-1)
    s, t, dd = np.r_[src, dst], np.r_[dst, src], np.r_[d, d]
    _, first = np.unique(s * n + t, return_index=True)  # one of each (owner, neighbour)
    s, t, dd = s[first], t[first], dd[first]
    order = np.lexsort((t, dd, s))
    s, t, dd = s[order], t[order], dd[order]
    rank = np.arange(len(s)) - np.searchsorted(s, s, side="left")
    keep = rank < cap
    return s[keep], t[keep], dd[keep]


def _links(x: np.ndarray, k: int, seed: int):
    """Each node's links as ``(counts, neighbours, distances)`` (CSR, nodes in order):
    its nearest nodes and the nodes it is nearest to (three quarters of ``k``), plus a
    quarter random ones (a nearest-only graph of clustered data falls apart into
    islands the walk cannot leave)."""
    n = len(x)
    near = k - k // RANDOM_SHARE if n - 1 > k else k
    nbrs, dists = _knn(x, max(1, near * 2 // 3) if near < n - 1 else near)
    owner, nb, nd = _with_reverse(nbrs, dists, near) if nbrs.size else \
        (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32))
    extra = min(k, n - 1) - near
    if extra > 0:
        rng = np.random.default_rng(seed)
        rand = rng.integers(0, n - 1, (n, extra))
        rand += rand >= np.arange(n)[:, None]  # never the node itself
        rd = np.empty((n, extra), np.float32)
        step = max(1, (1 << 20) // (extra * max(1, x.shape[1])))  # bounded temporaries
        for s in range(0, n, step):
            rd[s:s + step] = ((x[s:s + step, None, :] - x[rand[s:s + step]]) ** 2).sum(-1)
        owner = np.r_[owner, np.repeat(np.arange(n, dtype=np.int64), extra)]
        order = np.argsort(owner, kind="stable")  # each node's near links first
        owner, nb = owner[order], np.r_[nb, rand.reshape(-1)][order]
        nd = np.r_[nd, rd.reshape(-1)][order]
    return np.bincount(owner, minlength=n), nb, nd.astype(np.float32)


def _levels(n: int, m: int, seed: int) -> np.ndarray:
    """Each node's top level, as HNSW draws it: ``floor(-ln(U) / ln(m))`` (a node is on
    level ``l`` with chance ``m**-l``), at most ``MAX_LEVEL - 1``; seeded."""
    u = np.random.default_rng(seed ^ 0x5EED).random(n)
    lv = np.floor(-np.log(np.maximum(u, 1e-300)) / np.log(max(m, 2)))
    return np.minimum(lv, MAX_LEVEL - 1).astype(np.int64)


def _partition_graph(x: np.ndarray, m: int, seed: int):
    """One partition's graph rows: ``(vector ids, links per row, neighbours,
    distances, level offsets, entry point)`` (the rows' links one after another).
    Level 0 links every node to ``2*m`` others, the upper levels link the nodes drawn
    onto them to ``m`` others of the same level (nearest three quarters, random a
    quarter, as :func:`_links`); the entry point is the node of the top level nearest
    the partition's mean."""
    n = len(x)
    top = _levels(n, m, seed)
    ids, cnt, nbs, dss, offsets = [], [], [], [], [0]
    for level in range(MAX_LEVEL):
        members = np.nonzero(top >= level)[0] if level else np.arange(n)
        if len(members) == 0:
            offsets.append(offsets[-1])
            continue
        counts, nbrs, dists = _links(x[members], 2 * m if level == 0 else m, seed + level)
        ids.append(members)
        cnt.append(counts)
        nbs.append(members[nbrs].astype(np.uint32))
        dss.append(dists.astype(np.float32, copy=False))
        offsets.append(offsets[-1] + len(members))
    highest = np.nonzero(top == top.max())[0]
    mean = x.mean(0)
    entry = int(highest[np.argmin(((x[highest] - mean) ** 2).sum(1))])
    return (np.concatenate(ids), np.concatenate(cnt), np.concatenate(nbs),
            np.concatenate(dss), offsets, entry)


def _params(m: int) -> dict:
    return {"max_level": MAX_LEVEL, "m": m, "ef_construction": EF_CONSTRUCTION,
            "prefetch_distance": 2}


def graph_lengths(offsets, lengths, m: int = DEFAULT_M):
    """``(graph offsets uint64, graph lengths uint32)``: each partition's first graph
    row and row count (a node is a row on each of its levels, 0 to its top level as
    :func:`_levels` draws it with the partition's seed, its first row), known before
    any graph is built (the IVF message of ``index.idx`` is written before its rows)."""
    g_len = np.array([int((_levels(int(n), m, int(s)) + 1).sum()) if n else 0
                      for s, n in zip(np.asarray(offsets, np.int64),
                                      np.asarray(lengths, np.int64))], np.int64)
    g_off = np.cumsum(g_len) - g_len
    return g_off.astype(np.uint64), g_len.astype(np.uint32)


def iter_graphs(vectors, offsets, lengths, m: int = DEFAULT_M, decode=None):
    """Each partition's graph in turn: ``(table of its graph rows or None when it is
    empty, its lance:hnsw JSON)``. ``decode(start, n)`` gives a partition's float32
    vectors (default: rows ``start:start + n`` of ``vectors``), so a build holds one
    partition's decoded vectors and graph at a time."""
    params = _params(m)
    for start, n in zip(np.asarray(offsets, np.int64), np.asarray(lengths, np.int64)):
        start, n = int(start), int(n)
        if n == 0:
            yield None, json.dumps({"entry_point": 0, "params": params,
                                    "level_offsets": [0] * (MAX_LEVEL + 1)},
                                   separators=(",", ":"))
            continue
        x = decode(start, n) if decode is not None else vectors[start:start + n]
        x = np.ascontiguousarray(x, np.float32)
        vid, counts, nbrs, dists, levels, entry = _partition_graph(x, m, seed=start)
        del x
        yield _graph_table(vid.astype(np.uint32), counts.astype(np.int32), nbrs, dists), \
            json.dumps({"entry_point": entry, "params": params, "level_offsets": levels},
                       separators=(",", ":"))


def _graph_table(vid, counts, nbrs, dists) -> pa.Table:
    list_offsets = pa.array(np.r_[np.int32(0), np.cumsum(counts, dtype=np.int32)],
                            pa.int32())
    return pa.table([pa.array(vid, pa.uint32()),
                     pa.ListArray.from_arrays(list_offsets, pa.array(nbrs, pa.uint32())),
                     pa.ListArray.from_arrays(list_offsets, pa.array(dists, pa.float32()))],
                    schema=GRAPH_SCHEMA)


def build_graphs(vectors: np.ndarray, offsets, lengths, m: int = DEFAULT_M):
    """``(table of graph rows, lance:hnsw JSON, graph offsets, graph lengths)`` for the
    partitions of ``vectors`` (decoded, grouped by partition), all in memory (an index
    build streams :func:`iter_graphs` to its file instead)."""
    tables, meta = [], []
    for table, one in iter_graphs(vectors, offsets, lengths, m):
        meta.append(one)
        if table is not None:
            tables.append(table)
    table = pa.concat_tables(tables).combine_chunks() if tables else \
        GRAPH_SCHEMA.empty_table()
    g_off, g_len = graph_lengths(offsets, lengths, m)
    return table, json.dumps(meta, separators=(",", ":")), g_off, g_len


class HNSW:
    """pylance's ``lance.util.HNSW``: an HNSW graph of some vectors (lancenb's graph, see
    the module docstring), written as a Lance file of graph rows.

    Examples
    --------
    >>> v = pa.FixedSizeListArray.from_arrays(pa.array([1.0, 2, 3, 4], pa.float32()), 2)
    >>> len(HNSW.build(iter([v])).vectors())
    2
    """

    def __init__(self, vectors: pa.FixedSizeListArray, graph, m: int, max_level: int):
        self._vectors, self._graph = vectors, graph
        self._m, self._max_level = m, max_level

    @staticmethod
    def build(vectors_array, max_level: int = MAX_LEVEL, m: int = DEFAULT_M,
              ef_construction: int = 100) -> "HNSW":
        """The graph of the vectors of an iterator of fixed-size-list arrays."""
        arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
                  for a in vectors_array]
        vectors = pa.concat_arrays(arrays) if arrays else \
            pa.array([], pa.list_(pa.float32(), 1))
        dim = vectors.type.list_size
        x = np.asarray(vectors.flatten().to_numpy(zero_copy_only=False),
                       np.float32).reshape(-1, dim)
        graph = build_graphs(x, [0], [len(x)], m)
        return HNSW(vectors, graph, m, max_level)

    def to_lance_file(self, file_path) -> None:
        """Write the graph rows with the ``lance:hnsw`` metadata of its one partition."""
        from lancenb.file import LanceFileWriter

        table, meta, _, _ = self._graph
        with LanceFileWriter(str(file_path), GRAPH_SCHEMA) as w:
            w.add_schema_metadata(HNSW_KEY, json.loads(meta)[0])
            if len(table):
                w.write_batch(table)

    def vectors(self) -> pa.Array:
        """The vectors the graph links."""
        return self._vectors


_F32 = np.zeros((0, 0), np.float32)
_U8 = np.zeros((0, 0), np.uint8)
_TABLES = np.zeros((0, 0, 0), np.float32)
_NONE = np.zeros(0, np.uint8)
# the probed partitions' walks run on two threads past this much work (distance
# evaluations x row bytes, estimated): below it one call costs less than the hop
_WALK_VISITS = 40  # nodes scored per result a walk keeps, about (2 m links, pruned)


class Graphs:
    """The HNSW graphs of an IVF_HNSW index's partitions, ready to walk.

    Built by :meth:`read` from ``index.idx`` (its graph rows, the ``lance:hnsw``
    metadata and the IVF message's graph row ranges) and the index's storage (rows kept
    row-major, :class:`lancenb.index.vector.ivf._Storage`)."""

    def __init__(self, row_of, nb_off, nb, entries):
        self.row_of, self.nb_off, self.nb, self.entries = row_of, nb_off, nb, entries
        self._rows = {}  # what the kernel scores, per storage kind / metric (lazily)
        self._lock = threading.Lock()

    def nbytes(self) -> int:
        extra = sum(a.nbytes for a in self._rows.values())
        return int(self.row_of.nbytes + self.nb_off.nbytes + self.nb.nbytes + extra)

    @staticmethod
    def read(reader, ivf, storage, path: str) -> "Graphs":
        """The graphs of ``index.idx`` (``reader``, its decoded ``ivf``) over the
        partitions of ``storage``."""
        offsets = np.asarray(storage.offsets, np.int64)
        lengths = np.asarray(storage.lengths, np.int64)
        md = reader.schema_full.metadata or {}
        try:
            # (pylance writes "" for an empty partition: it has no graph)
            metas = [json.loads(m) if m else {} for m in json.loads(md[HNSW_KEY.encode()])]
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptFileError(f"{path}: no readable {HNSW_KEY!r} metadata ({e})") from None
        nparts = len(lengths)
        g_off = np.asarray(ivf.offsets, np.int64)
        g_len = np.asarray(ivf.lengths, np.int64)
        if len(metas) != nparts or len(g_off) != nparts or len(g_len) != nparts:
            raise CorruptFileError(f"{path}: {len(metas)} graphs and {len(g_off)} graph "
                                   f"ranges for {nparts} partitions")
        nrows = reader.num_rows()
        if nrows:
            vid = np.asarray(reader.read_column("__vector_id").combine_chunks()
                             .to_numpy(zero_copy_only=False), np.int64)
            col = reader.read_column("__neighbors").combine_chunks()
            nb_off = np.asarray(col.offsets.to_numpy(zero_copy_only=False), np.int64)
            nb = np.ascontiguousarray(col.values.to_numpy(zero_copy_only=False), np.uint32)
        else:
            vid = np.zeros(0, np.int64)
            nb_off, nb = np.zeros(1, np.int64), np.zeros(0, np.uint32)
        if len(vid) != nrows or len(nb_off) != nrows + 1 or np.any(np.diff(nb_off) < 0) \
                or nb_off[0] < 0 or nb_off[-1] > len(nb):
            raise CorruptFileError(f"{path}: graph rows do not fit their neighbour lists")
        levels = max([len(m.get("level_offsets") or [0]) - 1 for m in metas] + [1])
        starts = offsets
        total = len(storage.row_ids)
        row_of = np.full((max(levels, 1), total), -1, np.int32)
        entries = np.full(nparts, -1, np.int64)
        for p in range(nparts):
            n, first, count = int(lengths[p]), int(g_off[p]), int(g_len[p])
            if n == 0 or count == 0:
                continue
            if first < 0 or first + count > nrows:
                raise CorruptFileError(f"{path}: partition {p}'s graph rows run past "
                                       f"the file's {nrows}")
            lv = np.asarray(metas[p].get("level_offsets") or [0, count], np.int64)
            if len(lv) < 2 or lv[0] != 0 or np.any(np.diff(lv) < 0) or lv[-1] > count or lv[1] != n:
                raise CorruptFileError(f"{path}: partition {p}'s level offsets {lv.tolist()} "
                                       f"do not fit {count} graph rows of {n} nodes")
            ids = vid[first:first + count]
            links = nb[nb_off[first]:nb_off[first + count]]
            if (len(ids) and (ids.min() < 0 or ids.max() >= n)) or \
                    (len(links) and int(links.max()) >= n):
                raise CorruptFileError(f"{path}: partition {p}'s graph links nodes past "
                                       f"its {n} rows")
            for level in range(len(lv) - 1):
                a, b = int(lv[level]), int(lv[level + 1])
                row_of[level, starts[p] + ids[a:b]] = np.arange(first + a, first + b)
            entries[p] = _entry(ids, lv)
        return Graphs(row_of, nb_off, nb, entries)

    def _stored(self, st, what: str, make):
        got = self._rows.get(what)
        if got is None:
            with self._lock:
                got = self._rows.get(what)
                if got is None:
                    got = self._rows[what] = make(st)
        return got

    def search(self, idx, q: np.ndarray, parts: np.ndarray, inner: str, want: int,
               ef: int | None, allow: np.ndarray | None):
        """The best ``want`` rows of the probed partitions ``parts`` by their graph walks
        (row ids, float32 distances, best first, ties by row id)."""
        st = idx.storage
        ef = want + want // 2 if ef is None else int(ef)
        if ef < want:
            raise InvalidInputError(f"ef must be greater than or equal to k (ef {ef}, k "
                                    f"{want})")
        parts = np.ascontiguousarray(parts, np.int64)
        lengths = np.asarray(st.lengths, np.int64)
        starts = np.asarray(st.offsets, np.int64)
        xf, xc, qf, qc, tables = _F32, _U8, np.zeros(0, np.float32), _NONE, _TABLES
        kind, metric, nbits = kh.FLAT, kh.L2, 8
        shift = scale = np.float32(0)
        if st.kind == "FLAT":
            xf = self._stored(st, "flat", lambda s: np.ascontiguousarray(s.data, np.float32))
            qf = np.ascontiguousarray(q, np.float32)
            metric = {"l2": kh.L2, "cosine": kh.COSINE, "dot": kh.DOT}[idx.metric]
        elif st.kind == "SQ" and inner == "dot":  # dequantized rows, the float query
            xf = self._stored(st, "sq_dot", _dequantized)
            qf = np.ascontiguousarray(q, np.float32)
            metric = kh.DOT
        elif st.kind == "SQ":
            kind = kh.SQ
            xc = self._stored(st, "sq", lambda s: np.ascontiguousarray(s.data, np.uint8))
            lo, hi = sqmod.bounds_of(st.params)
            qc = np.ascontiguousarray(sqmod.quantize(q, lo, hi))
            rng = np.float32(hi - lo)
            scale = rng * rng
        else:
            kind = kh.PQ
            xc = self._stored(st, "pq", _row_major_codes)
            tables = pqmod.query_tables(st.params, q, idx.centroids, parts, inner)
            nbits = int(st.params["nbits"])
            if inner == "dot":
                shift = np.float32(tables.shape[1] - 1)
        mask = _NONE
        if allow is not None:
            mask = np.zeros(len(st.row_ids), np.uint8)
            for p in parts.tolist():
                a, b = int(starts[p]), int(starts[p] + lengths[p])
                mask[a:b] = allowed_mask(st.row_ids[a:b], allow)
        k = want
        out_pos = np.empty(len(parts) * k, np.int64)
        out_dist = np.empty(len(parts) * k, np.float32)

        def call(a, b, o):
            return kh.hnsw_search(self.row_of, self.nb_off, self.nb, self.entries, starts,
                                  lengths, parts[a:b], kind, metric, xf, xc, qf, qc,
                                  tables[a:b] if kind == kh.PQ else tables, nbits, shift,
                                  scale, ef, k, mask, -np.inf, np.inf, False,
                                  out_pos[a * k:b * k], o)

        width = xc.shape[1] if kind != kh.FLAT else xf.shape[1] * 4
        work = np.minimum(lengths[parts], ef * _WALK_VISITS) * width // max(k, 1)
        status = in_two(call, np.full(len(parts), k, np.int64), int(work.mean()) if len(parts)
                        else 0, out_dist)
        if status != kh.OK:
            raise CorruptFileError(f"vector index {idx.name!r}: its HNSW graphs or "
                                   f"{st.kind} storage do not fit (status {status})")
        found = out_pos >= 0
        pos, dist = out_pos[found], out_dist[found]
        ids = st.row_ids[pos]
        sel = np.empty(min(want, len(ids)), np.int64)
        got = kt.topk_by_key(dist, ids, len(sel), sel)
        sel = sel[:max(got, 0)]
        return ids[sel], dist[sel]


def _entry(ids: np.ndarray, lv: np.ndarray) -> int:
    """Where a walk starts: a node of the top non-empty level, node 0 when it is there.
    pylance walks from node 0 (its builds put it on every level) whatever
    ``entry_point`` says (pylance 14 writes the same number for every partition);
    lancenb's builds put the entry point alone on level 1."""
    full = np.nonzero(np.diff(lv) > 0)[0]
    top = ids[lv[full[-1]]:lv[full[-1] + 1]]
    return 0 if np.any(top == 0) else int(top[0])


def _dequantized(st) -> np.ndarray:
    lo, hi = sqmod.bounds_of(st.params)
    return np.float32(lo) + st.data.astype(np.float32) * np.float32((hi - lo) / 255.0)


def _row_major_codes(st) -> np.ndarray:
    """PQ codes ``(rows, bytes per row)`` row-major (pylance stores them transposed per
    partition)."""
    data = np.asarray(st.data, np.uint8).reshape(-1)
    n = len(st.row_ids)
    mb = data.shape[0] // n if n else 1
    if not st.params.get("transposed", True):
        return np.ascontiguousarray(data.reshape(n, mb))
    out = np.empty((n, mb), np.uint8)
    for p in range(len(st.offsets)):
        a, m = int(st.offsets[p]), int(st.lengths[p])
        out[a:a + m] = data[a * mb:(a + m) * mb].reshape(mb, m).T
    return out
