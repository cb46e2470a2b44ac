"""Searching the HNSW graphs of an IVF_HNSW index's probed partitions in one call.

The storage's rows (``N`` of them, partition ``p`` being rows ``starts[p] ..
starts[p] + lengths[p]``) are *nodes*; a partition's graph links its own nodes by
their local number (``0 .. lengths[p]``). The graphs of every partition are one
adjacency in CSR form: graph row ``r`` has the local neighbour ids ``nb[nb_off[r] :
nb_off[r + 1]]``, and ``row_of[level, node]`` (``node`` global) is the graph row of
``node`` at ``level``, or -1 when the node is not on that level (level 0 holds every
node). ``entries[p]`` is partition ``p``'s entry point (local; -1: no graph).

``hnsw_search(row_of, nb_off, nb, entries, starts, lengths, parts, kind, metric, xf,
xc, qf, qc, tables, nbits, shift, scale, ef, k, allow, lower, upper, exhaustive,
out_pos, out_dist)``: for each probed partition ``parts[j]`` (as pylance's
``HNSW::search``): greedy descent from the entry point through the levels, top to 0
(move to the nearest neighbour while it is nearer), then a best-first beam search at
level 0 keeping the ``ef`` nearest nodes found (``ef >= k``): take the nearest
unexpanded candidate; stop when it is farther than the worst kept and ``ef`` are kept;
else score its unvisited neighbours, keep those nearer than the worst kept (or while
fewer than ``ef`` are kept) as candidates, and as results those ``allow`` allows
(``allow[node] != 0``; an empty ``allow`` allows every node) within ``lower <= d <
upper``. The best ``k`` of a partition (by distance, then node) go to ``out_pos[j*k
: j*k + k]`` (global node numbers) and ``out_dist``; unused slots get -1 and NaN.
When ``allow`` keeps fewer than a tenth of a partition's nodes (pylance's rule), or
``exhaustive`` is set, the partition is scored node by node instead (the exact
``k`` nearest allowed nodes). A NaN distance (cosine of a zero row) is never kept.

Distances (``kind``), node ``i`` against the query:

* ``FLAT`` (0): ``xf`` ``(N, d)`` float32 rows; ``metric`` ``L2`` (0) ``sum((x-q)**2)``,
  ``COSINE`` (1) ``1 - x.q/(|x||q|)``, ``DOT`` (2) ``1 - x.q`` (as ``distance.py``).
* ``SQ`` (1): ``xc`` ``(N, d)`` u8 codes against the query's codes ``qc``:
  ``float32(sum((x - qc)**2)) * scale / 65025`` (as ``sq.scale_l2``; the sum exact in
  int32, at most 33025 dimensions).
* ``PQ`` (2): ``xc`` ``(N, mb)`` row-major codes (``nbits`` 8, or 4: two codes a byte,
  low nibble first), ``tables[j]`` ``(m, 2**nbits)`` the lookup table of probed
  partition ``j``: the sum of the code's entries in sub-vector order, minus ``shift``.

Returns ``OK`` (0), ``BAD_SHAPE`` (-1: sizes disagree, a partition runs past the
rows) or ``BAD_GRAPH`` (-2: a graph row or neighbour id out of range); a PQ code past
its table scores NaN (never kept). Scratch (visited marks, the two heaps) is allocated per call.

Example: one partition of nodes ``[0, 0]``, ``[1, 0]``, ``[2, 0]`` linked in a path
0-1-2 (entry 0, one level), ``q = [2, 0]``, L2, ``ef = k = 1``: the result is node 2
at distance 0 (the beam starts at node 0, keeps node 1, then node 2).

(Seeding the beam with node 0 as well reproduces pylance 14's results: on a pylance-built
20k x 32 IVF_HNSW_FLAT index of one partition this walk returns pylance's lists for
40 of 40 queries at ``ef = 10`` (recall 0.985), against 33 of 40 from the descended
entry alone (0.95) and 37 from node 0 alone (0.93); a greedy pass down level 0 before
the beam, as pylance's older code does, fell to 0.67.)
"""

import numpy as np

from .._jit import kernel

OK = 0
BAD_SHAPE = -1
BAD_GRAPH = -2

FLAT = 0
SQ = 1
PQ = 2

L2 = 0
COSINE = 1
DOT = 2

_SQ_MAX_DIM = 33025  # d * 255**2 stays within int32
SPARSE_SHARE = 10  # under 1/10 of a partition allowed: score it node by node (pylance)


@kernel
def _sq_l2(row, qc):
    """``sum((row - qc)**2)`` of two u8 code vectors, in int32 throughout (numba widens
    int32 arithmetic to int64 otherwise): the compiler then multiplies and adds pairs
    of codes at once (vpmaddwd), about 3x faster at 768 dimensions than inline in the
    walk; exact up to _SQ_MAX_DIM dimensions."""
    acc = np.int32(0)
    for t in range(qc.shape[0]):
        a = np.int32(row[t]) - np.int32(qc[t])
        acc = np.int32(acc + np.int32(a * a))
    return acc


@kernel(inline=True)
def _distance(kind, metric, node, xf, xc, qf, qn, qc, tables, j, nbits, shift, scale):
    """The distance of global node ``node`` (see the module docs); NaN: never kept."""
    if kind == FLAT:
        d = qf.shape[0]
        if metric == L2:
            s = np.float32(0)
            for t in range(d):
                a = xf[node, t] - qf[t]
                s += a * a
            return s
        dot = np.float32(0)
        nx = np.float32(0)
        for t in range(d):
            v = xf[node, t]
            dot += v * qf[t]
            nx += v * v
        if metric == DOT:
            return np.float32(1) - dot
        den = np.sqrt(nx) * qn
        if den == 0:
            return np.float32(np.nan)
        return np.float32(1) - dot / den
    if kind == SQ:
        r = np.float32(_sq_l2(xc[node], qc)) * scale
        return r / np.float32(65025.0)
    s = np.float32(0)
    kk = tables.shape[2]
    for u in range(xc.shape[1]):
        b = xc[node, u]
        if nbits == 8:
            if b >= kk:
                return np.float32(np.nan)
            s += tables[j, u, b]
        else:
            s += tables[j, 2 * u, b & 15]
            s += tables[j, 2 * u + 1, b >> 4]
    return s - shift


@kernel(inline=True)
def _before(da, ia, db, ib):
    """Whether (distance, node) ``a`` sorts before ``b``."""
    return da < db or (da == db and ia < ib)


@kernel
def _push(hd, hi, size, d, i, is_max):
    """Push (distance, node) onto a heap of ``size`` entries (a max-heap, the worst on
    top, when ``is_max``; else a min-heap); returns the new size."""
    c = size
    hd[c] = d
    hi[c] = i
    while c > 0:
        parent = (c - 1) // 2
        if is_max:
            up = _before(hd[parent], hi[parent], hd[c], hi[c])
        else:
            up = _before(hd[c], hi[c], hd[parent], hi[parent])
        if not up:
            break
        hd[c], hd[parent] = hd[parent], hd[c]
        hi[c], hi[parent] = hi[parent], hi[c]
        c = parent
    return size + 1


@kernel
def _pop(hd, hi, size, is_max):
    """Drop the top of a heap of ``size`` entries; returns the new size."""
    size -= 1
    hd[0] = hd[size]
    hi[0] = hi[size]
    c = 0
    while True:
        left = 2 * c + 1
        if left >= size:
            break
        best = left
        right = left + 1
        if is_max:
            if right < size and _before(hd[left], hi[left], hd[right], hi[right]):
                best = right
            if not _before(hd[c], hi[c], hd[best], hi[best]):
                break
        else:
            if right < size and _before(hd[right], hi[right], hd[left], hi[left]):
                best = right
            if not _before(hd[best], hi[best], hd[c], hi[c]):
                break
        hd[c], hd[best] = hd[best], hd[c]
        hi[c], hi[best] = hi[best], hi[c]
        c = best
    return size


@kernel
def _drain(rd, ri, size, k, base, out_pos, out_dist, at):
    """Write the best ``k`` of a max-heap (local nodes) best first from ``at``."""
    while size > k:
        size = _pop(rd, ri, size, True)
    for slot in range(size - 1, -1, -1):
        out_dist[at + slot] = rd[0]
        out_pos[at + slot] = base + ri[0]
        size = _pop(rd, ri, size, True)


@kernel
def hnsw_search(row_of, nb_off, nb, entries, starts, lengths, parts, kind, metric, xf,
                xc, qf, qc, tables, nbits, shift, scale, ef, k, allow, lower, upper,
                exhaustive, out_pos, out_dist):
    """The best ``k`` nodes of each probed partition's graph (see the module docs)."""
    total = xf.shape[0] if kind == FLAT else xc.shape[0]
    nparts = parts.shape[0]
    if k < 0 or ef < k or out_pos.shape[0] < nparts * k or out_dist.shape[0] < nparts * k:
        return BAD_SHAPE
    if starts.shape[0] != lengths.shape[0] or entries.shape[0] != lengths.shape[0] or \
            row_of.shape[1] != total or row_of.shape[0] == 0 or nb_off.shape[0] == 0:
        return BAD_SHAPE
    if allow.shape[0] != 0 and allow.shape[0] != total:
        return BAD_SHAPE
    if kind == FLAT:
        if xf.shape[1] != qf.shape[0]:
            return BAD_SHAPE
    elif kind == SQ:
        if xc.shape[1] != qc.shape[0] or qc.shape[0] > _SQ_MAX_DIM:
            return BAD_SHAPE
    elif kind == PQ:
        if tables.shape[0] != nparts or (nbits != 8 and nbits != 4) or \
                tables.shape[1] != (xc.shape[1] if nbits == 8 else 2 * xc.shape[1]) or \
                (nbits == 4 and tables.shape[2] < 16):
            return BAD_SHAPE
    else:
        return BAD_SHAPE
    qn = np.float32(0)
    if kind == FLAT and metric == COSINE:
        s = np.float32(0)
        for t in range(qf.shape[0]):
            s += qf[t] * qf[t]
        qn = np.sqrt(s)
    for j in range(nparts * k):
        out_pos[j] = -1
        out_dist[j] = np.nan
    most = 0
    for j in range(nparts):
        p = parts[j]
        if p < 0 or p >= starts.shape[0] or starts[p] < 0 or lengths[p] < 0 or \
                starts[p] + lengths[p] > total:
            return BAD_SHAPE
        most = max(most, lengths[p])
    visited = np.zeros(most, np.uint8)
    cd = np.empty(most + 1, np.float32)
    ci = np.empty(most + 1, np.int64)
    rd = np.empty(max(ef, k) + 1, np.float32)
    ri = np.empty(max(ef, k) + 1, np.int64)
    levels = row_of.shape[0]
    rows = nb_off.shape[0] - 1
    for j in range(nparts):
        p = parts[j]
        n = lengths[p]
        base = starts[p]
        at = j * k
        if n == 0 or k == 0:
            continue
        kept = n
        if allow.shape[0] != 0:
            kept = 0
            for i in range(n):
                if allow[base + i] != 0:
                    kept += 1
        ep = entries[p]
        if exhaustive or kept < n * SPARSE_SHARE // 100 or ep < 0:
            size = 0
            for i in range(n):
                if allow.shape[0] != 0 and allow[base + i] == 0:
                    continue
                d = _distance(kind, metric, base + i, xf, xc, qf, qn, qc, tables, j, nbits,
                              shift, scale)
                if not (d >= lower and d < upper):
                    continue  # (NaN too)
                if size < k:
                    size = _push(rd, ri, size, d, i, True)
                elif _before(d, i, rd[0], ri[0]):
                    size = _pop(rd, ri, size, True)
                    size = _push(rd, ri, size, d, i, True)
            _drain(rd, ri, size, k, base, out_pos, out_dist, at)
            continue
        if ep >= n:
            return BAD_GRAPH
        cur = ep
        cur_d = _distance(kind, metric, base + cur, xf, xc, qf, qn, qc, tables, j, nbits,
                          shift, scale)
        for level in range(levels - 1, 0, -1):  # greedy descent to level 1
            while True:
                r = row_of[level, base + cur]
                if r < 0:
                    break
                if r >= rows or nb_off[r] < 0 or nb_off[r + 1] < nb_off[r] or \
                        nb_off[r + 1] > nb.shape[0]:
                    return BAD_GRAPH
                nxt = -1
                for e in range(nb_off[r], nb_off[r + 1]):
                    v = np.int64(nb[e])
                    if v >= n:
                        return BAD_GRAPH
                    d = _distance(kind, metric, base + v, xf, xc, qf, qn, qc, tables, j,
                                  nbits, shift, scale)
                    if d < cur_d:
                        cur_d = d
                        nxt = v
                if nxt < 0:
                    break
                cur = nxt
        for i in range(n):
            visited[i] = 0
        csize = 0
        size = 0
        for seed in range(2):  # the beam starts from where the descent ends and node 0
            if seed == 1:
                if cur == 0:
                    break
                cur = 0
                cur_d = _distance(kind, metric, base, xf, xc, qf, qn, qc, tables, j, nbits,
                                  shift, scale)
            visited[cur] = 1
            if cur_d != cur_d:
                continue
            csize = _push(cd, ci, csize, cur_d, cur, False)
            if (allow.shape[0] == 0 or allow[base + cur] != 0) and cur_d >= lower and \
                    cur_d < upper:
                if size < ef:
                    size = _push(rd, ri, size, cur_d, cur, True)
                elif _before(cur_d, cur, rd[0], ri[0]):
                    size = _pop(rd, ri, size, True)
                    size = _push(rd, ri, size, cur_d, cur, True)
        while csize > 0:
            c_d = cd[0]
            c = ci[0]
            csize = _pop(cd, ci, csize, False)
            worst = rd[0] if size > 0 else np.float32(np.inf)
            if c_d > worst and size == ef:
                break
            r = row_of[0, base + c]
            if r < 0:
                continue
            if r >= rows or nb_off[r] < 0 or nb_off[r + 1] < nb_off[r] or \
                    nb_off[r + 1] > nb.shape[0]:
                return BAD_GRAPH
            for e in range(nb_off[r], nb_off[r + 1]):
                v = np.int64(nb[e])
                if v >= n:
                    return BAD_GRAPH
                if visited[v]:
                    continue
                visited[v] = 1
                d = _distance(kind, metric, base + v, xf, xc, qf, qn, qc, tables, j, nbits,
                              shift, scale)
                if d != d or not (d <= worst or size < ef):
                    continue  # (a NaN node is neither kept nor expanded)
                if (allow.shape[0] == 0 or allow[base + v] != 0) and d >= lower and \
                        d < upper:
                    if size < ef:
                        size = _push(rd, ri, size, d, v, True)
                    elif d < rd[0]:
                        size = _pop(rd, ri, size, True)
                        size = _push(rd, ri, size, d, v, True)
                csize = _push(cd, ci, csize, d, v, False)
        _drain(rd, ri, size, k, base, out_pos, out_dist, at)
    return OK
