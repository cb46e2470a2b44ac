"""k-means steps: nearest centroid from a dot-product matrix, and centroid sums.

The caller computes ``dots = x @ c.T`` with BLAS (the bulk of the work); these kernels
do the rest in one pass without temporaries:

``assign_from_dots(dots, xnorm, cnorm, metric, labels, dists)``: for row ``i`` the
centroid ``j`` minimising ``xnorm[i] + cnorm[j] - 2 * dots[i, j]`` (squared L2,
``metric`` 0, clamped at 0) or ``1 - dots[i, j]`` (dot, ``metric`` 2); the first of
equals wins; a NaN distance never wins (a row with only NaNs gets label -1).
E.g. ``dots = [[1, 3]]``, ``xnorm = [2]``, ``cnorm = [1, 9]`` -> L2 ``[1, 5]``: label 0.

``assign_l2_small(x, ct, labels, dists, scratch)``: the same for squared L2 computed
directly, for few dimensions (PQ sub-vectors), where BLAS is slow; ``ct`` is the
centroids transposed ``(d, k)``, ``scratch`` ``(4 * k,)`` floats.

``accumulate(x, labels, sums, counts)``: ``sums[j] += x[i]`` and ``counts[j] += 1`` for
every row ``i`` with ``labels[i] = j >= 0`` (float64 sums). A label ``>= len(sums)``
is BAD_LABEL.
"""

import numpy as np

from .._jit import kernel

OK = 0
BAD_SHAPE = -1
BAD_LABEL = -2
L2 = 0
DOT = 2


@kernel
def assign_from_dots(dots, xnorm, cnorm, metric, labels, dists):
    n, k = dots.shape
    if xnorm.shape[0] != n or cnorm.shape[0] != k or labels.shape[0] != n \
            or dists.shape[0] != n:
        return BAD_SHAPE
    two = dots.dtype.type(2.0)
    for i in range(n):
        # the row's own norm does not change which centroid wins: added once after
        best = np.inf
        arg = -1
        for j in range(k):
            if metric == DOT:
                d = -dots[i, j]
            else:
                d = cnorm[j] - two * dots[i, j]
            if d < best:
                best = d
                arg = j
        labels[i] = arg
        if arg < 0:
            dists[i] = np.nan
        elif metric == DOT:
            dists[i] = 1.0 + best
        else:
            dists[i] = max(xnorm[i] + best, 0.0)
    return OK


@kernel
def assign_l2_small(x, ct, labels, dists, scratch):
    """Nearest centroid by squared L2 for few dimensions, without BLAS: ``ct`` is the
    centroids transposed, ``(d, k)``, so the inner loop runs over centroids
    (vectorisable); ``scratch`` is ``(4 * k,)`` of x's dtype. First of equals wins."""
    n, d = x.shape
    k = ct.shape[1]
    if ct.shape[0] != d or labels.shape[0] != n or dists.shape[0] != n \
            or scratch.shape[0] != 4 * k:
        return BAD_SHAPE
    # four rows at a time: each centroid value loaded once for all four
    for i0 in range(0, n, 4):
        m = min(4, n - i0)
        for j in range(4 * k):
            scratch[j] = 0.0
        for t in range(d):
            for r in range(m):
                v = x[i0 + r, t]
                for j in range(k):
                    diff = v - ct[t, j]
                    scratch[r * k + j] += diff * diff
        for r in range(m):
            best = np.inf
            arg = -1
            for j in range(k):
                if scratch[r * k + j] < best:
                    best = scratch[r * k + j]
                    arg = j
            labels[i0 + r] = arg
            dists[i0 + r] = best if arg >= 0 else np.nan
    return OK


@kernel
def accumulate(x, labels, sums, counts):
    n, d = x.shape
    k = sums.shape[0]
    if labels.shape[0] != n or sums.shape[1] != d or counts.shape[0] != k:
        return BAD_SHAPE
    for i in range(n):
        j = labels[i]
        if j < 0:
            continue
        if j >= k:
            return BAD_LABEL
        counts[j] += 1
        for t in range(d):
            sums[j, t] += x[i, t]
    return OK
