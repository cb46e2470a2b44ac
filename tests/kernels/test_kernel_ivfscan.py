"""IVF partition-scan kernels (``kernels/vector/ivfscan.py``) against NumPy references:
flat (transposed blocks; bit-identical to ``distance.distances_to_query`` on the
row-major rows), PQ (codes as pylance stores them) and SQ (transposed), over random partitions
probed in random order, and their refusals of malformed inputs."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from lancenb.kernels.vector import distance as kd
from lancenb.kernels.vector import ivfscan as ks


@st.composite
def layout(draw, max_parts=5):
    """Partition sizes, a probe order (a subset of them) and a seed."""
    sizes = draw(st.lists(st.integers(0, 12), min_size=1, max_size=max_parts))
    order = draw(st.permutations(range(len(sizes))))
    parts = order[:draw(st.integers(0, len(sizes)))]
    seed = draw(st.integers(0, 2**31))
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    return np.asarray(sizes, np.int64), offsets, np.asarray(parts, np.int64), seed


def probed(offsets, lengths, parts):
    """Storage positions of the probed rows, partition after partition (reference)."""
    return np.concatenate([np.arange(offsets[p], offsets[p] + lengths[p]) for p in parts]
                          + [np.zeros(0, np.int64)]).astype(np.int64)


def transposed(x, offsets, lengths):
    out = np.zeros(x.size, x.dtype)
    d = x.shape[1]
    for o, n in zip(offsets.tolist(), lengths.tolist()):
        out[o * d:(o + n) * d] = x[o:o + n].T.reshape(-1)
    return out


@given(layout(), st.integers(1, 9), st.sampled_from([kd.L2, kd.COSINE, kd.DOT]))
def test_flat_scan_matches_distances_to_query(as_input, lay, d, metric):
    lengths, offsets, parts, seed = lay
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((int(lengths.sum()), d)).astype(np.float32)
    if len(x):
        x[rng.integers(0, len(x))] = 0  # a zero row: NaN cosine
    q = rng.standard_normal(d).astype(np.float32)
    rows = probed(offsets, lengths, parts)
    out = np.full(len(rows) + 1, -7, np.float32)
    assert ks.flat_scan(as_input(transposed(x, offsets, lengths)), as_input(offsets),
                        as_input(lengths), as_input(parts), as_input(q), metric, out) == ks.OK
    want = np.empty(len(rows), np.float32)
    if len(rows):
        assert kd.distances_to_query(np.ascontiguousarray(x[rows]), q, metric, want) == kd.OK
    np.testing.assert_array_equal(out[:len(rows)], want)  # the same bits (NaN too)
    # and a plain NumPy reference
    xr = x[rows].astype(np.float64)
    if metric == kd.L2:
        ref = ((xr - q) ** 2).sum(1)
    elif metric == kd.DOT:
        ref = 1 - xr @ q
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            ref = 1 - (xr @ q) / (np.linalg.norm(xr, axis=1) * np.linalg.norm(q))
        ref[np.linalg.norm(xr, axis=1) == 0] = np.nan
    np.testing.assert_allclose(out[:len(rows)], ref, rtol=1e-4, atol=1e-4)
    assert out[-1] == -7  # nothing written past the probed rows


@given(layout(), st.sampled_from([4, 8]), st.sampled_from([2, 4]))
def test_pq_scan_matches_table_sums(as_input, lay, nbits, m):
    lengths, offsets, parts, seed = lay
    rng = np.random.default_rng(seed)
    kk = 1 << nbits
    codes = rng.integers(0, kk, (int(lengths.sum()), m)).astype(np.uint8)
    stored = []
    for o, n in zip(offsets.tolist(), lengths.tolist()):  # as pylance stores them
        block = codes[o:o + n]
        if nbits == 4:
            block = block[:, 0::2] | (block[:, 1::2] << 4)
        stored.append(np.ascontiguousarray(block.T).reshape(-1))
    stored = np.concatenate(stored).astype(np.uint8)
    tables = rng.standard_normal((len(parts), m, kk)).astype(np.float32)
    rows = probed(offsets, lengths, parts)
    out = np.full(len(rows) + 1, -7, np.float32)
    assert ks.pq_scan(as_input(tables), as_input(stored), as_input(offsets), as_input(lengths),
                      as_input(parts), nbits, out) == ks.OK
    which = np.repeat(np.arange(len(parts)), lengths[parts])
    ref = tables[which[:, None], np.arange(m)[None, :], codes[rows]].sum(1)
    np.testing.assert_allclose(out[:len(rows)], ref, rtol=1e-5, atol=1e-5)
    assert out[-1] == -7


@given(layout(), st.integers(1, 9))
def test_sq_scan_is_the_exact_squared_code_distance(as_input, lay, d):
    lengths, offsets, parts, seed = lay
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 256, (int(lengths.sum()), d)).astype(np.uint8)
    qc = rng.integers(0, 256, d).astype(np.uint8)
    rows = probed(offsets, lengths, parts)
    out = np.full(len(rows) + 1, -7, np.float32)
    assert ks.sq_scan(as_input(transposed(codes, offsets, lengths)), as_input(offsets),
                      as_input(lengths), as_input(parts), as_input(qc), out) == ks.OK
    ref = ((codes[rows].astype(np.int64) - qc) ** 2).sum(1).astype(np.float32)
    np.testing.assert_array_equal(out[:len(rows)], ref)
    assert out[-1] == -7


def test_malformed_inputs_are_refused():
    offsets, lengths = np.array([0, 3], np.int64), np.array([3, 2], np.int64)
    q = np.zeros(2, np.float32)
    x = np.zeros(10, np.float32)
    out = np.zeros(5, np.float32)
    parts = np.array([0, 1], np.int64)
    assert ks.flat_scan(x, offsets, lengths, parts, q, kd.L2, out) == ks.OK
    assert ks.flat_scan(x[:8], offsets, lengths, parts, q, kd.L2, out) == ks.BAD_SHAPE
    assert ks.flat_scan(x, offsets, lengths, np.array([2], np.int64), q, kd.L2,
                        out) == ks.BAD_SHAPE
    assert ks.flat_scan(x, offsets, lengths, parts, q, kd.L2, out[:4]) == ks.BAD_SHAPE
    assert ks.flat_scan(x, offsets, lengths, parts, q, kd.HAMMING, out) == ks.BAD_SHAPE
    codes = np.zeros(10, np.uint8)
    assert ks.sq_scan(codes, offsets, lengths, parts, np.zeros(2, np.uint8), out) == ks.OK
    assert ks.sq_scan(codes, offsets, lengths, parts, np.zeros(3, np.uint8),
                      out) == ks.BAD_SHAPE
    assert ks.sq_scan(codes[:8], offsets, lengths, parts, np.zeros(2, np.uint8),
                      out) == ks.BAD_SHAPE
    tables = np.zeros((2, 2, 16), np.float32)
    assert ks.pq_scan(tables, np.full(10, 200, np.uint8), offsets, lengths, parts, 8,
                      out) == ks.BAD_CODE
    assert ks.pq_scan(tables, np.zeros(10, np.uint8), offsets, lengths, parts, 5,
                      out) == ks.BAD_SHAPE
    assert ks.pq_scan(tables[:1], np.zeros(10, np.uint8), offsets, lengths, parts, 8,
                      out) == ks.BAD_SHAPE


@given(st.integers(0, 2**31), st.sampled_from([1, 2, 4]), st.integers(1, 3),
       st.sampled_from([4, 16]))
def test_pq_tables_l2_match_pq_table_l2_of_the_residual(as_input, seed, m, sd, kk):
    from lancenb.kernels.vector import pq as kpq

    rng = np.random.default_rng(seed)
    cb = rng.standard_normal((m, kk, sd)).astype(np.float32)
    cents = rng.standard_normal((5, m * sd)).astype(np.float32)
    q = rng.standard_normal(m * sd).astype(np.float32)
    parts = rng.permutation(5)[:rng.integers(0, 6)].astype(np.int64)
    out = np.empty((len(parts), m, kk), np.float32)
    cbt = np.ascontiguousarray(cb.transpose(0, 2, 1))
    assert ks.pq_tables_l2(as_input(cbt), as_input(q), as_input(cents), as_input(parts),
                           out) == ks.OK
    for j, p in enumerate(parts.tolist()):
        want = np.empty((m, kk), np.float32)
        assert kpq.pq_table_l2(cb, q - cents[p], want) == kpq.OK
        np.testing.assert_array_equal(out[j], want)  # the same bits
        ref = ((cb - (q - cents[p]).reshape(m, 1, sd)) ** 2).sum(-1)
        np.testing.assert_allclose(out[j], ref, rtol=1e-5, atol=1e-5)
    assert ks.pq_tables_l2(cbt, q, cents, np.array([5], np.int64),
                           np.empty((1, m, kk), np.float32)) == ks.BAD_SHAPE
