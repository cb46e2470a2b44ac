"""Batched vector distances, as pylance defines them (``rust/lance-linalg``).

Metrics, by code (``METRICS`` maps pylance's names to them):

* ``L2`` (0): squared Euclidean distance, ``sum((x - q) ** 2)``.
* ``COSINE`` (1): ``1 - x.q / (|x| |q|)``; NaN when either norm is 0 (pylance drops
  such rows from results).
* ``DOT`` (2): ``1 - x.q`` (pylance's "dot" distance: smaller is more similar).
* ``HAMMING`` (3): for ``uint8`` vectors, the number of differing bits,
  ``popcount(x ^ q)`` summed over the bytes.

Example: ``x = [[1, 2], [0, 0]]``, ``q = [1, 0]`` gives L2 ``[4, 1]``, cosine
``[1 - 1/sqrt(5), nan]``, dot ``[0, 1]``; ``uint8`` ``[[3], [0]]`` against ``[1]``
gives hamming ``[1, 1]``.

Kernels (stable signatures; every one returns ``OK`` or a negative status):

* ``distances_to_query(x, q, metric, out)``: ``x`` is ``(n, d)`` C-contiguous,
  ``q`` is ``(d,)`` of the same dtype, ``out`` is ``(n,)`` ``float32`` or ``float64``
  (the caller's choice of result type).
* ``distances_to_many(x, c, metric, out)``: ``x`` ``(n, d)``, ``c`` ``(m, d)`` (many
  queries, or centroids), ``out`` ``(n, m)``: ``out[i, j] = dist(x[i], c[j])``.
* ``nearest_of_many(x, c, metric, labels, dists)``: for each row of ``x``, the index
  of its nearest row of ``c`` (the first on ties) into ``labels`` (``int32`` or
  ``int64``, ``(n,)``) and that distance into ``dists`` (``(n,)``); NaN distances lose
  to any number; a row whose distances are all NaN gets label ``-1``. This is k-means'
  assignment step without an ``(n, m)`` matrix.

Inputs are ``float32`` or ``float64`` for L2, cosine and dot and ``uint8`` for hamming;
float32 inputs accumulate in float32 (as pylance does), float64 in float64. Callers
upcast ``float16`` to ``float32`` first (numba has no float16 arithmetic). Sums use
one accumulator in index order (measured: as fast here as eight partial sums, the
loop being bound by memory at 128 dimensions).
"""

import numpy as np

from .._jit import kernel

OK = 0
BAD_SHAPE = -1   # dimensions of x, q/c and out disagree, or d == 0
BAD_METRIC = -2  # an unknown metric code, or hamming on other than uint8 (and vice versa)

L2 = 0
COSINE = 1
DOT = 2
HAMMING = 3
METRICS = {"l2": L2, "euclidean": L2, "cosine": COSINE, "dot": DOT, "hamming": HAMMING}

# bits set in each byte value
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


@kernel(inline=True)
def _l2(x, i, q, j):
    s = x.dtype.type(0)
    for t in range(x.shape[1]):
        a = x[i, t] - q[j, t]
        s += a * a
    return s


@kernel(inline=True)
def _dot(x, i, q, j):
    s = x.dtype.type(0)
    for t in range(x.shape[1]):
        s += x[i, t] * q[j, t]
    return s


@kernel(inline=True)
def _hamming(x, i, q, j, table):
    s = 0
    for t in range(x.shape[1]):
        s += table[np.uint8(x[i, t]) ^ np.uint8(q[j, t])]
    return s


@kernel
def _norms(x, out):
    for i in range(x.shape[0]):
        out[i] = np.sqrt(_dot(x, i, x, i))
    return OK


@kernel
def _check(x, c, metric):
    """OK when ``x`` (n, d) and ``c`` (m, d) fit ``metric``."""
    if x.shape[1] != c.shape[1] or x.shape[1] == 0:
        return BAD_SHAPE
    is_u8 = x.itemsize == 1  # uint8: the only one-byte type callers pass
    if metric == HAMMING:
        return OK if is_u8 else BAD_METRIC
    if metric == L2 or metric == COSINE or metric == DOT:
        return BAD_METRIC if is_u8 else OK
    return BAD_METRIC


@kernel
def _accumulate(x, i, ct, metric, acc):
    """``acc[j]`` = the L2 sum, or the dot product, of ``x[i]`` and centroid ``j``, where
    ``ct`` is the centroids transposed (d, m): the inner loop runs over independent
    centroids, which the compiler vectorises without reordering any sum (each ``acc[j]``
    adds its terms in dimension order, as :func:`_l2` and :func:`_dot` do)."""
    d, m = ct.shape
    for j in range(m):
        acc[j] = 0
    if metric == L2:
        for t in range(d):
            xv = x[i, t]
            for j in range(m):
                a = xv - ct[t, j]
                acc[j] += a * a
    else:
        for t in range(d):
            xv = x[i, t]
            for j in range(m):
                acc[j] += xv * ct[t, j]
    return OK


@kernel
def _finish(x, i, metric, acc, cn, out_row):
    """Distances of row ``i`` from its accumulated sums (see :func:`_accumulate`)."""
    m = acc.shape[0]
    if metric == L2:
        for j in range(m):
            out_row[j] = acc[j]
    elif metric == DOT:
        for j in range(m):
            out_row[j] = 1 - acc[j]
    else:
        xn = np.sqrt(_dot(x, i, x, i))
        for j in range(m):
            den = xn * cn[j]
            out_row[j] = 1 - acc[j] / den if den != 0 else np.nan
    return OK


@kernel
def _fill_many(x, c, metric, out, table):
    """out[i, j] = dist(x[i], c[j]) for an already checked metric."""
    n, m = x.shape[0], c.shape[0]
    if metric == HAMMING:
        for i in range(n):
            for j in range(m):
                out[i, j] = _hamming(x, i, c, j, table)
    elif m == 1 and metric == L2:  # one query: a loop per row
        for i in range(n):
            out[i, 0] = _l2(x, i, c, 0)
    elif m == 1 and metric == DOT:
        for i in range(n):
            out[i, 0] = 1 - _dot(x, i, c, 0)
    elif m == 1 and metric == COSINE:  # one pass per row for its dot product and norm
        qn = np.sqrt(_dot(c, 0, c, 0))
        for i in range(n):
            s = x.dtype.type(0)
            xx = x.dtype.type(0)
            for t in range(x.shape[1]):
                v = x[i, t]
                s += v * c[0, t]
                xx += v * v
            den = np.sqrt(xx) * qn
            out[i, 0] = 1 - s / den if den != 0 else np.nan
    else:
        ct = np.ascontiguousarray(c.T)
        cn = np.empty(m, dtype=x.dtype)
        _norms(c, cn)
        acc = np.empty(m, dtype=x.dtype)
        for i in range(n):
            _accumulate(x, i, ct, metric, acc)
            _finish(x, i, metric, acc, cn, out[i])
    return OK


@kernel
def distances_to_query(x, q, metric, out):
    """Distances of each row of ``x`` (n, d) to ``q`` (d,) into ``out`` (n,)."""
    if q.ndim != 1 or out.shape[0] != x.shape[0]:
        return BAD_SHAPE
    c = q.reshape((1, q.shape[0]))
    status = _check(x, c, metric)
    if status != OK:
        return status
    return _fill_many(x, c, metric, out.reshape((out.shape[0], 1)), _POPCOUNT)


@kernel
def distances_to_many(x, c, metric, out):
    """Distances of each row of ``x`` (n, d) to each row of ``c`` (m, d) into ``out``
    (n, m)."""
    if out.shape[0] != x.shape[0] or out.shape[1] != c.shape[0]:
        return BAD_SHAPE
    status = _check(x, c, metric)
    if status != OK:
        return status
    return _fill_many(x, c, metric, out, _POPCOUNT)


@kernel
def nearest_of_many(x, c, metric, labels, dists):
    """For each row of ``x`` (n, d), its nearest row of ``c`` (m, d): index into
    ``labels`` (n,), distance into ``dists`` (n,)."""
    n, m = x.shape[0], c.shape[0]
    if labels.shape[0] != n or dists.shape[0] != n:
        return BAD_SHAPE
    status = _check(x, c, metric)
    if status != OK:
        return status
    row = np.empty(m, dtype=dists.dtype)
    ct = np.ascontiguousarray(c.T)
    cn = np.empty(m, dtype=x.dtype)
    _norms(c, cn)
    acc = np.empty(m, dtype=x.dtype)
    for i in range(n):
        if metric == HAMMING:
            for j in range(m):
                row[j] = _hamming(x, i, c, j, _POPCOUNT)
        else:
            _accumulate(x, i, ct, metric, acc)
            _finish(x, i, metric, acc, cn, row)
        best = -1
        for j in range(m):
            v = row[j]
            if v == v and (best < 0 or v < row[best]):
                best = j
        labels[i] = best
        dists[i] = row[best] if best >= 0 else np.nan
    return OK
