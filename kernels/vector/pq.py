"""Product quantisation: lookup tables, asymmetric distances (ADC) and encoding.

A PQ codebook splits a ``dim``-vector into ``m`` sub-vectors of ``dim/m`` values and
gives each sub-vector ``K = 2**nbits`` centroids: ``codebook[s, c, :]`` (float32,
shape ``(m, K, dim/m)``). A row's code is the nearest centroid of each sub-vector.

``pq_table_l2`` / ``pq_table_dot``: for a query, ``table[s, c]`` = squared L2 between
its sub-vector ``s`` and centroid ``c`` (or ``1 - dot``), summed in index order.

``pq_adc``: a partition's distances from its codes as pylance stores them
("transposed": ``n`` rows' codes are ``mb`` runs of ``n`` bytes, run ``s`` holding every
row's byte ``s``); ``mb = m`` with 8 bits, ``m/2`` with 4 bits (low nibble = sub-vector
``2s``, high = ``2s+1``). ``out[i] = sum_s table[s, code(i, s)]``, summed from s = 0 in
float32 as pylance does. E.g. m=2, n=3, codes ``[0,1,1, 2,0,2]`` -> row 1 is
``table[0,1] + table[1,0]``.

``pq_encode``: codes (row major, ``(n, m)`` u8) of the nearest centroid by squared L2
(first of equals).

``sq_l2``: IVF_SQ's code distance, ``sum_j (codes[i, j] - qc[j])**2`` in integers
(u8 codes of a row and of the query), e.g. ``[[1, 2]]`` against ``[3, 2]`` -> ``[4]``.

Statuses: OK, or BAD_CODE when a code is >= K (a corrupt file) / BAD_SHAPE.
"""

import numpy as np

from .._jit import kernel

OK = 0
BAD_CODE = -1
BAD_SHAPE = -2


@kernel
def pq_table_l2(codebook, q, out):
    m, kk, sd = codebook.shape
    if q.shape[0] != m * sd or out.shape[0] != m or out.shape[1] != kk:
        return BAD_SHAPE
    for s in range(m):
        for c in range(kk):
            acc = np.float32(0.0)
            for j in range(sd):
                diff = q[s * sd + j] - codebook[s, c, j]
                acc += diff * diff
            out[s, c] = acc
    return OK


@kernel
def pq_table_dot(codebook, q, out):
    m, kk, sd = codebook.shape
    if q.shape[0] != m * sd or out.shape[0] != m or out.shape[1] != kk:
        return BAD_SHAPE
    for s in range(m):
        for c in range(kk):
            acc = np.float32(0.0)
            for j in range(sd):
                acc += q[s * sd + j] * codebook[s, c, j]
            out[s, c] = np.float32(1.0) - acc
    return OK


@kernel
def pq_adc(table, codes, start, n, nbits, out):
    """Distances of rows ``start .. start+n`` of a partition block of transposed codes.

    ``codes`` is the partition's ``n * mb`` bytes (``start`` rows into it are skipped
    only when ``start > 0``: pass 0 for a whole partition)."""
    m, kk = table.shape
    mb = m if nbits == 8 else m // 2
    if out.shape[0] < n or codes.shape[0] < mb * (start + n) or (nbits != 8 and nbits != 4):
        return BAD_SHAPE
    total = start + n
    for i in range(n):
        out[i] = np.float32(0.0)
    for s in range(mb):
        base = s * total + start
        if nbits == 8:
            for i in range(n):
                c = codes[base + i]
                if c >= kk:
                    return BAD_CODE
                out[i] += table[s, c]
        else:
            for i in range(n):
                b = codes[base + i]
                out[i] += table[2 * s, b & 15]
                out[i] += table[2 * s + 1, b >> 4]
    return OK


@kernel
def pq_encode(codebook, x, out):
    m, kk, sd = codebook.shape
    n = x.shape[0]
    if x.shape[1] != m * sd or out.shape[0] != n or out.shape[1] != m:
        return BAD_SHAPE
    for i in range(n):
        for s in range(m):
            best = np.inf
            arg = 0
            for c in range(kk):
                acc = np.float32(0.0)
                for j in range(sd):
                    diff = x[i, s * sd + j] - codebook[s, c, j]
                    acc += diff * diff
                if acc < best:
                    best = acc
                    arg = c
            out[i, s] = arg
    return OK


@kernel
def sq_l2(codes, qc, out):
    """Scalar-quantised rows against the query's codes: ``out[i] = sum_j (codes[i, j] -
    qc[j])**2`` (exact, in integers, then float32), for IVF_SQ's l2/cosine distance."""
    n, d = codes.shape
    if qc.shape[0] != d or out.shape[0] < n:
        return BAD_SHAPE
    for i in range(n):
        acc = 0
        for j in range(d):
            diff = np.int32(codes[i, j]) - np.int32(qc[j])
            acc += diff * diff
        out[i] = np.float32(acc)
    return OK
