"""Top-k BM25 over CSR posting lists without scoring every posting: MaxScore with
per-block bounds, document at a time, exact (the same rows and float32 scores as
scoring every posting, ties broken by the smaller row id).

A query term ``j`` is the postings ``docs[lo[j]:hi[j]]`` (ascending document ids) with
frequencies ``freqs``; a posting's score is, in float32 as :mod:`lancenb.index.fts.score`
computes it, ``(w[j] * ((K1 + 1) * f / (f + norm[d]))) * rep[j]``, summed over the terms
in query order, then times ``boost`` (> 0). Blocks are 128 postings from ``lo[j]``;
``bmax[bstart[j] + b]`` is the largest ``(K1 + 1) * f / (f + norm[d])`` in block ``b``
(:func:`block_max`).

Kernels (stable signatures):

* ``block_max(docs, freqs, lo, hi, norm, k1p, out)``: the block maxima of one term's
  postings into ``out`` (``ceil((hi - lo) / 128)`` float32).
* ``maxscore_topk(docs, freqs, lo, hi, w, rep, bstart, bmax, norm, live, row_ids,
  boost, k1p, heap_s, heap_r, size) -> int``: adds this partition's documents to a
  bounded heap of the best ``len(heap_s)`` (``heap_s`` float32 scores, ``heap_r`` uint64
  row ids, ``size[0]`` entries, the worst at the root, so partitions share one heap and
  its threshold); ``live`` (uint8 per document, or empty: every document) drops
  documents; returns how many documents were scored in full.

The threshold ``t`` is the heap's worst score once it holds ``k`` entries. Terms sorted
by upper bound (largest block maximum times weight); the longest prefix whose bounds
sum below ``t`` is non-essential: a document holding only those terms cannot reach
``t``, so candidates come from the other (essential) terms' cursors only. A candidate
whose bound (its essential terms' block bounds plus the non-essential terms' bounds) is
below ``t`` is skipped without scoring, and so is one whose essential terms' exact
scores plus the non-essential terms' bounds are; with one essential term, whole blocks
whose bound is below ``t`` are skipped. Bounds are float64 with a 1e-5 relative margin, far
above float32 rounding, so no document that could enter (or tie) is skipped.
"""

import numpy as np

from .._jit import kernel

BLOCK = 128
_MARGIN = 1.0 + 1e-5


@kernel
def block_max(docs, freqs, lo, hi, norm, k1p, out):
    """Per block of 128 postings in ``[lo, hi)``, the largest ``k1p * f / (f + norm[d])``."""
    nb = (hi - lo + BLOCK - 1) // BLOCK
    for b in range(nb):
        best = np.float32(0)
        end = min(hi, lo + (b + 1) * BLOCK)
        for i in range(lo + b * BLOCK, end):
            f = np.float32(freqs[i])
            s = k1p * f / (f + norm[docs[i]])
            if s > best:
                best = s
        out[b] = best


@kernel(inline=True)
def _better(s, r, hs, hr, i):
    """Whether (score ``s``, row ``r``) sorts before heap entry ``i``."""
    if s != hs[i]:
        return s > hs[i]
    return r < hr[i]


@kernel
def _sift_down(hs, hr, n, i):
    while True:
        left = 2 * i + 1
        if left >= n:
            return
        w = left
        right = left + 1
        if right < n and _better(hs[w], hr[w], hs, hr, right):
            w = right  # (the worse child: the one the other sorts before)
        if _better(hs[i], hr[i], hs, hr, w):
            hs[i], hs[w] = hs[w], hs[i]
            hr[i], hr[w] = hr[w], hr[i]
            i = w
        else:
            return


@kernel
def _push(hs, hr, size, s, r):
    """Offer (``s``, ``r``) to the heap (worst at the root)."""
    k = len(hs)
    n = size[0]
    if n < k:
        i = n
        hs[i] = s
        hr[i] = r
        size[0] = n + 1
        while i > 0:  # sift up while the parent sorts before the new entry
            p = (i - 1) // 2
            if _better(hs[p], hr[p], hs, hr, i):
                hs[i], hs[p] = hs[p], hs[i]
                hr[i], hr[p] = hr[p], hr[i]
                i = p
            else:
                break
        return
    if k == 0 or not _better(s, r, hs, hr, 0):
        return
    hs[0] = s
    hr[0] = r
    _sift_down(hs, hr, k, 0)


@kernel
def _seek(docs, at, hi, d):
    """The first position in ``[at, hi)`` whose document is ``>= d`` (galloping)."""
    if at >= hi or docs[at] >= d:
        return at
    step = 1
    prev = at
    while at + step < hi and docs[at + step] < d:
        prev = at + step
        step *= 2
    top = min(hi, at + step)
    lo_ = prev + 1
    while lo_ < top:
        mid = (lo_ + top) // 2
        if docs[mid] < d:
            lo_ = mid + 1
        else:
            top = mid
    return lo_


@kernel
def maxscore_topk(docs, freqs, lo, hi, w, rep, bstart, bmax, norm, live, row_ids, boost,
                  k1p, heap_s, heap_r, size):
    m = len(lo)
    k = len(heap_s)
    if k == 0 or m == 0:
        return 0
    scale = np.empty(m, np.float64)  # block maximum -> bound of the term's score
    ub = np.zeros(m, np.float64)
    for j in range(m):
        scale[j] = float(w[j]) * float(rep[j]) * float(boost) * _MARGIN
        nb = (hi[j] - lo[j] + BLOCK - 1) // BLOCK
        for b in range(nb):
            v = float(bmax[bstart[j] + b]) * scale[j]
            if v > ub[j]:
                ub[j] = v
    order = np.argsort(ub)
    pre = np.zeros(m + 1, np.float64)
    for i in range(m):
        pre[i + 1] = pre[i] + ub[order[i]]
    essential = np.ones(m, np.bool_)
    cur = lo.copy()
    e = 0
    scored = 0
    check_live = len(live) > 0
    while True:
        th = -np.inf
        if size[0] >= k:
            th = float(heap_s[0])
        while e < m and pre[e + 1] < th:
            essential[order[e]] = False
            e += 1
        if e >= m:
            break
        if e == m - 1 and th > -np.inf:
            # one essential term: run down its postings to the next one that can enter
            j = order[e]
            i = cur[j]
            while i < hi[j]:
                b = (i - lo[j]) // BLOCK
                if (i - lo[j]) % BLOCK == 0 and pre[e] + float(bmax[bstart[j] + b]) * \
                        scale[j] < th:
                    i = min(hi[j], lo[j] + (b + 1) * BLOCK)
                    continue
                f = np.float32(freqs[i])
                c = float((w[j] * (k1p * f / (f + norm[docs[i]]))) * rep[j])
                if (c * float(boost) + pre[e]) * _MARGIN >= th:
                    break
                i += 1
            cur[j] = i
        # the candidate: the smallest document under an essential cursor
        d = -1
        for i in range(e, m):
            j = order[i]
            if cur[j] < hi[j]:
                dj = np.int64(docs[cur[j]])
                if d < 0 or dj < d:
                    d = dj
        if d < 0:
            break
        bound = pre[e]
        for i in range(e, m):
            j = order[i]
            if cur[j] < hi[j] and np.int64(docs[cur[j]]) == d:
                bound += float(bmax[bstart[j] + (cur[j] - lo[j]) // BLOCK]) * scale[j]
        if bound < th:
            if e == m - 1:  # one essential term: skip the rest of its block if it can
                j = order[e]
                b = (cur[j] - lo[j]) // BLOCK
                if pre[e] + float(bmax[bstart[j] + b]) * scale[j] < th:
                    cur[j] = min(hi[j], lo[j] + (b + 1) * BLOCK)
                    continue
            for i in range(e, m):
                j = order[i]
                if cur[j] < hi[j] and np.int64(docs[cur[j]]) == d:
                    cur[j] += 1
            continue
        ok = True
        if check_live:
            ok = live[d] != 0
        if ok and e > 0 and th > -np.inf:  # essential terms' exact part + the rest's bounds
            nd = norm[d]
            part = 0.0
            for i in range(e, m):
                j = order[i]
                if cur[j] < hi[j] and np.int64(docs[cur[j]]) == d:
                    f = np.float32(freqs[cur[j]])
                    part += float((w[j] * (k1p * f / (f + nd))) * rep[j])
            ok = (part * float(boost) + pre[e]) * _MARGIN >= th
        if ok:
            s = np.float32(0)
            nd = norm[d]
            for j in range(m):
                if not essential[j]:
                    cur[j] = _seek(docs, cur[j], hi[j], d)
                if cur[j] < hi[j] and np.int64(docs[cur[j]]) == d:
                    f = np.float32(freqs[cur[j]])
                    s += (w[j] * (k1p * f / (f + nd))) * rep[j]
            s = s * boost
            scored += 1
            _push(heap_s, heap_r, size, s, row_ids[d])
        for i in range(e, m):
            j = order[i]
            if cur[j] < hi[j] and np.int64(docs[cur[j]]) == d:
                cur[j] += 1
    return scored
