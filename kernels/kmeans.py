"""k-means steps: nearest centroid from a dot-product matrix, and centroid sums.

The caller computes ``dots = x @ c.T`` with BLAS (the bulk of the work); these kernels
do the rest in one pass without temporaries:

``assign_from_dots(dots, xnorm, cnorm, metric, labels, dists)``: for row ``i`` the
centroid ``j`` minimising ``xnorm[i] + cnorm[j] - 2 * dots[i, j]`` (squared L2,
``metric`` 0, clamped at 0) or ``1 - dots[i, j]`` (dot, ``metric`` 2); the first of
equals wins; a NaN distance never wins (a row with only NaNs gets label -1).
E.g. ``dots = [[1, 3]]``, ``xnorm = [2]``, ``cnorm = [1, 9]`` -> L2 ``[1, 5]``: label 0.

``accumulate(x, labels, sums, counts)``: ``sums[j] += x[i]`` and ``counts[j] += 1`` for
every row ``i`` with ``labels[i] = j >= 0`` (float64 sums). A label ``>= len(sums)``
is BAD_LABEL.
"""

import numpy as np

from ._jit import kernel

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
    for i in range(n):
        best = np.inf
        arg = -1
        for j in range(k):
            if metric == DOT:
                d = 1.0 - dots[i, j]
            else:
                d = xnorm[i] + cnorm[j] - 2.0 * dots[i, j]
                if d < 0.0:
                    d = 0.0
            if d < best:
                best = d
                arg = j
        labels[i] = arg
        dists[i] = best if arg >= 0 else np.nan
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
