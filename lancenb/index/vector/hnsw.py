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

lancenb builds a two-level graph: level 0 links each node to ``2*m`` nodes of its
partition, three quarters its nearest (exact, by the decoded vectors) and a quarter
random ones (long links: a nearest-only graph of clustered data falls apart), level 1
holds only the entry point (the node nearest the partition's mean). pylance searches it as any HNSW
graph. lancenb itself searches an HNSW index's partitions exhaustively (its storage
as IVF_FLAT/SQ/PQ would be), which finds at least what the graph walk finds.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

__all__ = ["HNSW", "HNSW_KEY", "GRAPH_SCHEMA", "build_graphs", "DEFAULT_M", "MAX_LEVEL"]

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
    for s in range(0, n, BLOCK):
        d = norms[s:s + BLOCK, None] + norms[None, :] - 2 * (x[s:s + BLOCK] @ x.T)
        np.maximum(d, 0, out=d)
        d[np.arange(len(d)), np.arange(s, s + len(d))] = np.inf  # not its own neighbour
        part = np.argpartition(d, k - 1, axis=1)[:, :k]
        pd = np.take_along_axis(d, part, axis=1)
        order = np.argsort(pd, axis=1, kind="stable")
        nbrs[s:s + BLOCK] = np.take_along_axis(part, order, axis=1)
        dists[s:s + BLOCK] = np.take_along_axis(pd, order, axis=1)
    return nbrs, dists


RANDOM_SHARE = 4  # one link in four goes to a random node: keeps clusters connected


def _links(x: np.ndarray, k: int, seed: int):
    """Each node's links: its nearest nodes, plus a quarter random ones (a nearest-only
    graph of clustered data falls apart into islands the walk cannot leave)."""
    n = len(x)
    near = k - k // RANDOM_SHARE if n - 1 > k else k
    nbrs, dists = _knn(x, near)
    extra = min(k, n - 1) - nbrs.shape[1]
    if extra <= 0:
        return nbrs, dists
    rng = np.random.default_rng(seed)
    rand = rng.integers(0, n - 1, (n, extra))
    rand += rand >= np.arange(n)[:, None]  # never the node itself
    rd = ((x[:, None, :] - x[rand]) ** 2).sum(-1).astype(np.float32)
    return np.concatenate([nbrs, rand], axis=1), np.concatenate([dists, rd], axis=1)


def build_graphs(vectors: np.ndarray, offsets, lengths, m: int = DEFAULT_M):
    """``(table of graph rows, lance:hnsw JSON, graph offsets, graph lengths)`` for the
    partitions of ``vectors`` (decoded, grouped by partition)."""
    ids, nb, ds, lens, meta = [], [], [], [], []
    g_off, g_len = [], []
    row = 0
    params = {"max_level": MAX_LEVEL, "m": m, "ef_construction": EF_CONSTRUCTION,
              "prefetch_distance": 2}
    for start, n in zip(np.asarray(offsets, np.int64), np.asarray(lengths, np.int64)):
        start, n = int(start), int(n)
        g_off.append(row)
        if n == 0:
            meta.append(json.dumps({"entry_point": 0, "params": params,
                                    "level_offsets": [0] * (MAX_LEVEL + 1)},
                                   separators=(",", ":")))
            g_len.append(0)
            continue
        x = np.ascontiguousarray(vectors[start:start + n], np.float32)
        nbrs, dists = _links(x, 2 * m, seed=start)
        entry = int(np.argmin(((x - x.mean(0)) ** 2).sum(1)))
        # level 0: every node; level 1: the entry point alone, without neighbours
        ids.append(np.r_[np.arange(n, dtype=np.uint32), np.uint32(entry)])
        nb.append(nbrs.astype(np.uint32).reshape(-1))
        ds.append(dists.reshape(-1))
        lens.append(np.r_[np.full(n, nbrs.shape[1], np.int32), np.int32(0)])
        levels = [0, n] + [n + 1] * (MAX_LEVEL - 1)
        meta.append(json.dumps({"entry_point": entry, "params": params,
                                "level_offsets": levels}, separators=(",", ":")))
        g_len.append(n + 1)
        row += n + 1
    vid = np.concatenate(ids) if ids else np.zeros(0, np.uint32)
    ln = np.concatenate(lens) if lens else np.zeros(0, np.int32)
    list_offsets = pa.array(np.r_[np.int32(0), np.cumsum(ln, dtype=np.int32)], pa.int32())
    nbv = pa.array(np.concatenate(nb) if nb else np.zeros(0, np.uint32), pa.uint32())
    dsv = pa.array(np.concatenate(ds) if ds else np.zeros(0, np.float32), pa.float32())
    table = pa.table([pa.array(vid, pa.uint32()),
                      pa.ListArray.from_arrays(list_offsets, nbv),
                      pa.ListArray.from_arrays(list_offsets, dsv)], schema=GRAPH_SCHEMA)
    return table, json.dumps(meta, separators=(",", ":")), \
        np.asarray(g_off, np.uint64), np.asarray(g_len, np.uint32)


class HNSW:
    """pylance's ``lance.util.HNSW``: an HNSW graph of some vectors (lancenb's two-level
    graph, see the module docstring), written as a Lance file of graph rows.

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
