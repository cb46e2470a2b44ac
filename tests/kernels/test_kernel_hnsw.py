"""The HNSW walk kernel (``kernels/vector/hnsw.py``) against a plain-Python reference
of the same walk (greedy descent through the upper levels, a beam of ``ef`` at level
0 from there and from node 0, pylance's sparse-prefilter fallback), on random
multi-level graphs over several partitions probed in random order; with ``ef >= n``
on a connected graph it returns the exact top k; and it refuses malformed graphs.

Vectors are small integers so every distance is exact in float32 and the reference's
walk sees the very same numbers (ties included, which both break by node number)."""

import heapq
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from lancenb.kernels.vector import hnsw as kh

INF = math.inf


# -- the reference ------------------------------------------------------------------------

def ref_walk(adj, entry, dist, ef, k, ok, n, sparse):
    """One partition: ``adj[level]`` a dict node -> neighbours; ``dist(i)`` a float (or
    NaN); ``ok(i)`` whether node i may be a result. Returns [(dist, node)] best first."""
    if sparse or entry < 0:
        found = [(dist(i), i) for i in range(n) if ok(i)]
        return sorted(x for x in found if not math.isnan(x[0]))[:k]
    cur, cd = entry, dist(entry)
    for level in range(len(adj) - 1, 0, -1):
        while True:
            nxt = -1
            for v in adj[level].get(cur, ()):
                d = dist(v)
                if d < cd:
                    cd, nxt = d, v
            if nxt < 0:
                break
            cur = nxt
    visited, cand, res = set(), [], []
    for seed, d in ((cur, cd), (0, dist(0))):  # where the descent ends, and node 0
        if seed in visited:
            continue
        visited.add(seed)
        if math.isnan(d):
            continue
        heapq.heappush(cand, (d, seed))
        if ok(seed):
            res.append((d, seed))
    res = sorted(res)[:ef]
    while cand:
        c_d, c = heapq.heappop(cand)
        worst = max(res)[0] if res else INF
        if c_d > worst and len(res) == ef:
            break
        for v in adj[0].get(c, ()):
            if v in visited:
                continue
            visited.add(v)
            d = dist(v)
            if math.isnan(d) or not (d <= worst or len(res) < ef):
                continue
            if ok(v):
                if len(res) < ef:
                    res.append((d, v))
                elif d < max(res)[0]:
                    res.remove(max(res))
                    res.append((d, v))
            heapq.heappush(cand, (d, v))
    return sorted(res)[:k]


# -- random graphs ------------------------------------------------------------------------

@st.composite
def graphs(draw, max_parts=3, max_n=24, connected=False):
    """Partitions with random multi-level graphs, as the kernel's CSR arrays, plus the
    per-partition adjacency dicts for the reference."""
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    sizes = draw(st.lists(st.integers(0, max_n), min_size=1, max_size=max_parts))
    levels = draw(st.integers(1, 3))
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    total = int(sum(sizes))
    row_of = np.full((levels, total), -1, np.int32)
    nb_off, nb, adjs, entries = [0], [], [], []
    for p, n in enumerate(sizes):
        adj = [dict() for _ in range(levels)]
        members = [np.arange(n)]
        for _ in range(1, levels):  # each level a random subset of the one below
            below = members[-1]
            members.append(below[rng.random(len(below)) < 0.4])
        for level in range(levels):
            for node in members[level].tolist():
                pool = members[level]
                links = rng.choice(pool, size=min(len(pool), int(rng.integers(0, 5))),
                                   replace=False).tolist()
                if connected and level == 0 and n > 1:
                    links += [(node + 1) % n, (node - 1) % n]
                links = [v for v in dict.fromkeys(links) if v != node]
                adj[level][node] = links
                row_of[level, starts[p] + node] = len(nb_off) - 1
                nb.extend(links)
                nb_off.append(len(nb))
        top = [m for m in members if len(m)]
        entries.append(int(top[-1][0]) if n else -1)
        adjs.append(adj)
    return dict(row_of=row_of, nb_off=np.asarray(nb_off, np.int64),
                nb=np.asarray(nb, np.uint32), entries=np.asarray(entries, np.int64),
                starts=starts, lengths=np.asarray(sizes, np.int64), adjs=adjs,
                total=total, seed=seed)


def _probe(draw_order, g):
    order = list(range(len(g["lengths"])))
    return np.asarray([order[i] for i in draw_order if i < len(order)], np.int64)


EMPTY_F = np.zeros((0, 0), np.float32)
EMPTY_U = np.zeros((0, 0), np.uint8)
EMPTY_T = np.zeros((0, 0, 0), np.float32)


def run(g, parts, kind, metric, xf, xc, qf, qc, tables, nbits, ef, k, allow, lower, upper,
        exhaustive, as_input):
    out_pos = np.full(len(parts) * k, 77, np.int64)
    out_dist = np.full(len(parts) * k, 77, np.float32)
    status = kh.hnsw_search(as_input(g["row_of"]), as_input(g["nb_off"]), as_input(g["nb"]),
                            as_input(g["entries"]), as_input(g["starts"]),
                            as_input(g["lengths"]), as_input(parts), kind, metric,
                            as_input(xf), as_input(xc), as_input(qf), as_input(qc),
                            as_input(tables), nbits, np.float32(0), np.float32(1), ef, k,
                            as_input(allow), lower, upper, exhaustive, out_pos, out_dist)
    assert status == kh.OK
    return out_pos, out_dist


def expected(g, parts, dist_of, ef, k, allow, lower, upper, exhaustive):
    pos = np.full(len(parts) * k, -1, np.int64)
    dist = np.full(len(parts) * k, np.nan, np.float32)
    for j, p in enumerate(parts.tolist()):
        n, base = int(g["lengths"][p]), int(g["starts"][p])

        def ok(i, base=base):
            return (len(allow) == 0 or allow[base + i] != 0) and lower <= dist_of(base + i) \
                < upper

        kept = n if len(allow) == 0 else int(allow[base:base + n].sum())
        sparse = exhaustive or kept < n * kh.SPARSE_SHARE // 100
        got = ref_walk(g["adjs"][p], int(g["entries"][p]), lambda i, b=base: dist_of(b + i),
                       ef, k, ok, n, sparse)
        for s, (d, i) in enumerate(got):
            pos[j * k + s] = base + i
            dist[j * k + s] = d
    return pos, dist


@given(graphs(), st.lists(st.integers(0, 2), max_size=3, unique=True), st.integers(1, 4),
       st.integers(0, 6), st.sampled_from([kh.L2, kh.COSINE, kh.DOT]), st.integers(1, 5),
       st.sampled_from(["none", "half", "sparse"]), st.booleans(), st.booleans())
def test_flat_walk_matches_reference(as_input, g, order, k, extra, metric, d, filt, ranged,
                                     exhaustive):
    rng = np.random.default_rng(g["seed"] + 1)
    parts = _probe(order, g)
    x = rng.integers(-3, 4, (g["total"], d)).astype(np.float32)
    q = rng.integers(-3, 4, d).astype(np.float32)
    allow = np.zeros(0, np.uint8)
    if filt == "half":
        allow = (rng.random(g["total"]) < 0.5).astype(np.uint8)
    elif filt == "sparse":
        allow = (rng.random(g["total"]) < 0.05).astype(np.uint8)
    # the kernel's own distances, node by node (the exhaustive mode with k = n) feed the
    # reference: cosine is not exact, but the walk only compares these numbers
    one = dict(row_of=g["row_of"], nb_off=g["nb_off"], nb=g["nb"],
               entries=np.full(1, -1, np.int64), starts=np.zeros(1, np.int64),
               lengths=np.asarray([g["total"]], np.int64))
    every = np.zeros(g["total"], np.float32)
    if g["total"]:
        pos, dist = run(one, np.zeros(1, np.int64), kh.FLAT, metric, x, EMPTY_U, q,
                        np.zeros(0, np.uint8), EMPTY_T, 8, g["total"], g["total"],
                        np.zeros(0, np.uint8), -INF, INF, True, as_input)
        every[pos[pos >= 0]] = dist[pos >= 0]
        every[np.setdiff1d(np.arange(g["total"]), pos[pos >= 0])] = np.nan
        # and those are the plain NumPy distances
        if metric == kh.L2:
            np.testing.assert_array_equal(every, ((x - q) ** 2).sum(1))
        elif metric == kh.DOT:
            np.testing.assert_array_equal(every, 1 - x @ q)
    lower, upper = (-0.5, 12.0) if ranged else (-INF, INF)
    ef = k + extra
    got = run(g, parts, kh.FLAT, metric, x, EMPTY_U, q, np.zeros(0, np.uint8), EMPTY_T, 8,
              ef, k, allow, lower, upper, exhaustive, as_input)
    want = expected(g, parts, lambda i: float(every[i]), ef, k, allow, lower, upper,
                    exhaustive)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@given(graphs(), st.integers(1, 4), st.integers(0, 4), st.integers(1, 6))
def test_sq_walk_matches_reference(as_input, g, k, extra, d):
    rng = np.random.default_rng(g["seed"] + 2)
    parts = np.arange(len(g["lengths"]), dtype=np.int64)[::-1].copy()
    codes = rng.integers(0, 256, (g["total"], d)).astype(np.uint8)
    qc = rng.integers(0, 256, d).astype(np.uint8)
    raw = ((codes.astype(np.int64) - qc) ** 2).sum(1).astype(np.float32)
    scaled = raw * np.float32(1) / np.float32(65025)  # (scale 1, as run() passes)
    got = run(g, parts, kh.SQ, kh.L2, EMPTY_F, codes, np.zeros(0, np.float32), qc, EMPTY_T,
              8, k + extra, k, np.zeros(0, np.uint8), -INF, INF, False, as_input)
    want = expected(g, parts, lambda i: float(scaled[i]), k + extra, k,
                    np.zeros(0, np.uint8), -INF, INF, False)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@given(graphs(), st.integers(1, 4), st.integers(0, 4), st.sampled_from([4, 8]),
       st.integers(1, 4))
def test_pq_walk_matches_reference(as_input, g, k, extra, nbits, mb):
    rng = np.random.default_rng(g["seed"] + 3)
    parts = np.arange(len(g["lengths"]), dtype=np.int64)
    m = mb if nbits == 8 else 2 * mb
    kk = 2 ** nbits
    codes = rng.integers(0, 256 if nbits == 4 else kk, (g["total"], mb)).astype(np.uint8)
    tables = rng.integers(0, 9, (len(parts), m, kk)).astype(np.float32)
    got = run(g, parts, kh.PQ, kh.L2, EMPTY_F, codes, np.zeros(0, np.float32),
              np.zeros(0, np.uint8), tables, nbits, k + extra, k, np.zeros(0, np.uint8),
              -INF, INF, False, as_input)

    part_of = np.repeat(np.arange(len(g["lengths"])), g["lengths"])

    def dist_of(i):
        j = int(np.nonzero(parts == part_of[i])[0][0])
        if nbits == 8:
            return float(sum(tables[j, u, codes[i, u]] for u in range(mb)))
        return float(sum(tables[j, 2 * u, codes[i, u] & 15] + tables[j, 2 * u + 1, codes[i, u] >> 4]
                         for u in range(mb)))

    want = expected(g, parts, dist_of, k + extra, k, np.zeros(0, np.uint8), -INF, INF, False)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@given(graphs(max_parts=1, max_n=30, connected=True), st.integers(1, 6), st.integers(1, 4))
def test_wide_beam_on_connected_graph_is_exact(as_input, g, k, d):
    rng = np.random.default_rng(g["seed"] + 4)
    x = rng.standard_normal((g["total"], d)).astype(np.float32)
    q = rng.standard_normal(d).astype(np.float32)
    n = g["total"]
    got_pos, got_dist = run(g, np.zeros(1, np.int64), kh.FLAT, kh.L2, x, EMPTY_U, q,
                            np.zeros(0, np.uint8), EMPTY_T, 8, max(n, k), k,
                            np.zeros(0, np.uint8), -INF, INF, False, as_input)
    d_all = ((x.astype(np.float64) - q) ** 2).sum(1)
    want = np.lexsort((np.arange(n), d_all))[:k]
    assert sorted(got_pos[got_pos >= 0].tolist()) == sorted(want.tolist())
    assert (got_pos >= 0).sum() == min(k, n)


def test_path_example():
    """The module docstring's example."""
    g = dict(row_of=np.asarray([[0, 1, 2]], np.int32), nb_off=np.asarray([0, 1, 3, 4]),
             nb=np.asarray([1, 0, 2, 1], np.uint32), entries=np.zeros(1, np.int64),
             starts=np.zeros(1, np.int64), lengths=np.asarray([3], np.int64))
    x = np.asarray([[0, 0], [1, 0], [2, 0]], np.float32)
    pos, dist = run(g, np.zeros(1, np.int64), kh.FLAT, kh.L2, x, EMPTY_U,
                    np.asarray([2, 0], np.float32), np.zeros(0, np.uint8), EMPTY_T, 8, 1, 1,
                    np.zeros(0, np.uint8), -INF, INF, False, lambda a: a)
    assert pos.tolist() == [2] and dist.tolist() == [0.0]


def test_malformed_graphs_are_refused():
    x = np.zeros((3, 2), np.float32)
    q = np.zeros(2, np.float32)
    base = dict(row_of=np.asarray([[0, 1, 2]], np.int32), nb_off=np.asarray([0, 1, 3, 4]),
                nb=np.asarray([1, 0, 2, 1], np.uint32), entries=np.zeros(1, np.int64),
                starts=np.zeros(1, np.int64), lengths=np.asarray([3], np.int64))

    def status(ef=2, k=1, parts=(0,), **change):
        g = dict(base, **change)
        return kh.hnsw_search(g["row_of"], g["nb_off"], g["nb"], g["entries"], g["starts"],
                              g["lengths"], np.asarray(parts, np.int64), kh.FLAT, kh.L2, x,
                              EMPTY_U, q, np.zeros(0, np.uint8), EMPTY_T, 8, np.float32(0),
                              np.float32(1), ef, k, np.zeros(0, np.uint8), -INF, INF, False,
                              np.zeros(4, np.int64), np.zeros(4, np.float32))

    assert status() == kh.OK
    assert status(nb=np.asarray([1, 0, 7, 1], np.uint32)) == kh.BAD_GRAPH  # past the nodes
    assert status(nb_off=np.asarray([0, 1, 3, 9])) == kh.BAD_GRAPH  # past the lists
    assert status(row_of=np.asarray([[0, 1, 5]], np.int32)) == kh.BAD_GRAPH  # past the rows
    assert status(entries=np.asarray([3], np.int64)) == kh.BAD_GRAPH
    assert status(lengths=np.asarray([4], np.int64)) == kh.BAD_SHAPE  # past the storage
    assert status(parts=(1,)) == kh.BAD_SHAPE
    assert status(ef=1, k=2) == kh.BAD_SHAPE  # ef < k
    assert status(k=5) == kh.BAD_SHAPE  # outputs too short
    wide = np.zeros((3, kh._SQ_MAX_DIM + 1), np.uint8)  # an int32 sum could overflow
    assert kh.hnsw_search(base["row_of"], base["nb_off"], base["nb"], base["entries"],
                          base["starts"], base["lengths"], np.zeros(1, np.int64), kh.SQ,
                          kh.L2, EMPTY_F, wide, np.zeros(0, np.float32), wide[0], EMPTY_T, 8,
                          np.float32(0), np.float32(1), 2, 1, np.zeros(0, np.uint8), -INF,
                          INF, False, np.zeros(4, np.int64),
                          np.zeros(4, np.float32)) == kh.BAD_SHAPE
