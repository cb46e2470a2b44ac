"""Scoring the probed partitions of an IVF index in one call per query.

An IVF index keeps its rows grouped by partition: partition ``p`` is rows
``offsets[p] .. offsets[p] + lengths[p]``. A query probes a few partitions
(``parts``, in probe order); these kernels write the distances of all their rows to
``out``, partition after partition in that order (``out`` is at least
``lengths[parts].sum()`` long), so the caller takes one top-k over ``out``.

* ``flat_scan(xt, offsets, lengths, parts, q, metric, out)``: float32 vectors stored
  *transposed per partition*: partition ``p``'s ``n = lengths[p]`` rows of ``d``
  values are the ``d * n`` values of ``xt`` from ``offsets[p] * d`` on, dimension
  major (value ``t`` of row ``i`` at ``offsets[p] * d + t * n + i``). Each row still
  sums its dimensions in index order with one accumulator, so the distances are
  bit-identical to ``distance.distances_to_query`` over the row-major rows; the layout
  lets the inner loop run over rows, which the compiler vectorises without reordering
  any sum (about 5x faster at 128 dimensions). Metrics as ``distance.py``: ``L2`` (0),
  ``COSINE`` (1; NaN for a zero row or query), ``DOT`` (2).
* ``pq_scan(tables, codes, offsets, lengths, parts, nbits, out)``: product-quantised
  rows, codes as pylance stores them (each partition's codes sub-vector major, 4-bit
  codes two to a byte, low nibble first); ``tables`` is ``(len(parts), m, 2**nbits)``,
  the lookup table of each probed partition in probe order; a row's distance is the
  sum over sub-vectors of its code's table entry, in sub-vector order (as
  ``pq.pq_adc``).
* ``pq_tables_l2(cbt, q, centroids, parts, out)``: the l2 lookup tables of the
  residual ``q - centroids[p]`` of each probed partition, ``out`` ``(len(parts), m,
  K)``; ``cbt`` is the codebook ``(m, K, d/m)`` transposed to ``(m, d/m, K)`` so the
  inner loop runs over the ``K`` centroids. Each entry sums its ``d/m`` squared
  differences in order, bit-identical to ``pq.pq_table_l2`` of the residual.
* ``sq_scan(ct, offsets, lengths, parts, qc, out)``: 8-bit scalar-quantised rows,
  transposed per partition as ``flat_scan``'s vectors (u8), against the query's codes
  ``qc``: ``sum((codes[i] - qc) ** 2)`` exactly (in int32: at most ``_SQ_MAX_DIM``
  dimensions), as float32 (as ``pq.sq_l2``); about 5x faster than row by row.

Every kernel returns ``OK`` (0) or ``BAD_SHAPE`` (a partition runs past the data,
``out`` is too short, a size does not fit) / ``BAD_CODE`` (a PQ code past the table).

Example: one partition of rows ``[1, 2]`` and ``[0, 0]`` (``xt = [1, 0, 2, 0]``:
dimension 0 of both rows, then dimension 1), ``q = [1, 0]``, L2: ``out = [4, 1]``.
"""

import numpy as np

from .._jit import kernel

OK = 0
BAD_SHAPE = -1
BAD_CODE = -2

L2 = 0
COSINE = 1
DOT = 2
_SQ_MAX_DIM = 33025  # d * 255**2 stays within int32


@kernel(inline=True)
def _total(offsets, lengths, parts, size):
    """Rows of the probed partitions, or -1 when one runs past ``size`` rows."""
    total = 0
    for j in range(parts.shape[0]):
        p = parts[j]
        if p < 0 or p >= offsets.shape[0]:
            return -1
        if offsets[p] < 0 or lengths[p] < 0 or offsets[p] + lengths[p] > size:
            return -1
        total += lengths[p]
    return total


@kernel
def flat_scan(xt, offsets, lengths, parts, q, metric, out):
    """Distances of the rows of the probed partitions (transposed float32 blocks)."""
    d = q.shape[0]
    if d == 0 or xt.shape[0] % d != 0 or lengths.shape[0] != offsets.shape[0]:
        return BAD_SHAPE
    if metric != L2 and metric != COSINE and metric != DOT:
        return BAD_SHAPE
    total = _total(offsets, lengths, parts, xt.shape[0] // d)
    if total < 0 or out.shape[0] < total:
        return BAD_SHAPE
    qn = np.float32(0)
    if metric == COSINE:
        s = np.float32(0)
        for t in range(d):
            s += q[t] * q[t]
        qn = np.sqrt(s)
    at = 0
    norms = np.empty(0, np.float32)
    for j in range(parts.shape[0]):
        p = parts[j]
        n = lengths[p]
        base = offsets[p] * d
        acc = out[at:at + n]
        for i in range(n):
            acc[i] = np.float32(0)
        if metric == L2:
            for t in range(d):
                qt = q[t]
                row = base + t * n
                for i in range(n):
                    a = xt[row + i] - qt
                    acc[i] += a * a
        else:
            if metric == COSINE:
                if norms.shape[0] < n:
                    norms = np.empty(n, np.float32)
                for i in range(n):
                    norms[i] = np.float32(0)
            for t in range(d):
                qt = q[t]
                row = base + t * n
                for i in range(n):
                    v = xt[row + i]
                    acc[i] += v * qt
                if metric == COSINE:
                    for i in range(n):
                        v = xt[row + i]
                        norms[i] += v * v
            for i in range(n):
                if metric == DOT:
                    acc[i] = 1 - acc[i]
                else:
                    den = np.sqrt(norms[i]) * qn
                    acc[i] = 1 - acc[i] / den if den != 0 else np.nan
        at += n
    return OK


@kernel
def pq_scan(tables, codes, offsets, lengths, parts, nbits, out):
    """ADC distances of the rows of the probed partitions (codes as stored)."""
    if nbits != 8 and nbits != 4:
        return BAD_SHAPE
    np_, m, kk = tables.shape
    mb = m if nbits == 8 else m // 2
    if np_ != parts.shape[0] or mb == 0 or (nbits == 4 and m % 2) or \
            codes.shape[0] % mb != 0 or lengths.shape[0] != offsets.shape[0]:
        return BAD_SHAPE
    total = _total(offsets, lengths, parts, codes.shape[0] // mb)
    if total < 0 or out.shape[0] < total:
        return BAD_SHAPE
    at = 0
    for j in range(np_):
        p = parts[j]
        n = lengths[p]
        base = offsets[p] * mb
        acc = out[at:at + n]
        for i in range(n):
            acc[i] = np.float32(0)
        for s in range(mb):
            run = base + s * n
            if nbits == 8:
                for i in range(n):
                    c = codes[run + i]
                    if c >= kk:
                        return BAD_CODE
                    acc[i] += tables[j, s, c]
            else:
                for i in range(n):
                    b = codes[run + i]
                    acc[i] += tables[j, 2 * s, b & 15]
                    acc[i] += tables[j, 2 * s + 1, b >> 4]
        at += n
    return OK


@kernel
def pq_tables_l2(cbt, q, centroids, parts, out):
    """Residual l2 lookup tables of the probed partitions (see the module docs)."""
    m, sd, kk = cbt.shape
    d = q.shape[0]
    if d != m * sd or centroids.shape[1] != d or out.shape[0] != parts.shape[0] or \
            out.shape[1] != m or out.shape[2] != kk:
        return BAD_SHAPE
    r = np.empty(d, np.float32)
    for j in range(parts.shape[0]):
        p = parts[j]
        if p < 0 or p >= centroids.shape[0]:
            return BAD_SHAPE
        for t in range(d):
            r[t] = q[t] - centroids[p, t]
        for s in range(m):
            row = out[j, s]
            for c in range(kk):
                row[c] = np.float32(0)
            for u in range(sd):
                v = r[s * sd + u]
                for c in range(kk):
                    diff = v - cbt[s, u, c]
                    row[c] += diff * diff
    return OK


@kernel
def sq_scan(ct, offsets, lengths, parts, qc, out):
    """Squared code distances of the rows of the probed partitions (transposed u8)."""
    d = qc.shape[0]
    if d == 0 or d > _SQ_MAX_DIM or ct.shape[0] % d != 0 or \
            lengths.shape[0] != offsets.shape[0]:
        return BAD_SHAPE
    total = _total(offsets, lengths, parts, ct.shape[0] // d)
    if total < 0 or out.shape[0] < total:
        return BAD_SHAPE
    most = 0
    for j in range(parts.shape[0]):
        most = max(most, lengths[parts[j]])
    acc = np.empty(most, np.int32)
    at = 0
    for j in range(parts.shape[0]):
        p = parts[j]
        n = lengths[p]
        base = offsets[p] * d
        for i in range(n):
            acc[i] = 0
        for t in range(d):
            qt = np.int32(qc[t])
            row = base + t * n
            for i in range(n):
                a = np.int32(ct[row + i]) - qt
                acc[i] += a * a
        for i in range(n):
            out[at + i] = np.float32(acc[i])
        at += n
    return OK
