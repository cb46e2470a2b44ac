"""Product-quantisation kernels (``kernels/vector/pq.py``) against NumPy references: lookup
tables (l2, dot), ADC sums over transposed 8-bit and 4-bit codes, and encoding."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from lancenb.kernels.vector import pq as kpq


def ref_table(cb, q, metric):
    m, kk, sd = cb.shape
    sub = q.reshape(m, 1, sd)
    if metric == "dot":
        return (1.0 - (cb * sub).sum(-1)).astype(np.float32)
    return ((cb - sub) ** 2).sum(-1).astype(np.float32)


def ref_adc(table, codes_rows, nbits):
    """``codes_rows``: (n, m) sub-vector codes, row major."""
    m = table.shape[0]
    return table[np.arange(m)[None, :], codes_rows].sum(1)


def pack(codes_rows, nbits):
    """Row-major (n, m) codes as pylance stores a partition (transposed, 4-bit packed)."""
    if nbits == 4:
        codes_rows = (codes_rows[:, 0::2] | (codes_rows[:, 1::2] << 4)).astype(np.uint8)
    return np.ascontiguousarray(codes_rows.T).reshape(-1)


@st.composite
def pq_case(draw):
    nbits = draw(st.sampled_from([4, 8]))
    m = draw(st.sampled_from([2, 4, 6]))
    sd = draw(st.integers(1, 4))
    n = draw(st.integers(0, 40))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    kk = 1 << nbits
    cb = rng.standard_normal((m, kk, sd)).astype(np.float32)
    q = rng.standard_normal(m * sd).astype(np.float32)
    codes = rng.integers(0, kk, (n, m)).astype(np.uint8)
    return nbits, cb, q, codes


@given(pq_case(), st.sampled_from(["l2", "dot"]))
def test_table_and_adc_match_reference(as_input, case, metric):
    nbits, cb, q, codes = case
    table = np.empty(cb.shape[:2], np.float32)
    fn = kpq.pq_table_dot if metric == "dot" else kpq.pq_table_l2
    assert fn(as_input(cb), as_input(q), table) == kpq.OK
    np.testing.assert_allclose(table, ref_table(cb, q, metric), rtol=1e-5, atol=1e-5)
    out = np.full(len(codes) + 1, -1, np.float32)
    assert kpq.pq_adc(as_input(table), as_input(pack(codes, nbits)), 0, len(codes), nbits,
                      out) == kpq.OK
    np.testing.assert_allclose(out[:len(codes)], ref_adc(table, codes, nbits), rtol=1e-5,
                               atol=1e-5)
    assert out[-1] == -1  # nothing written past n


@given(pq_case())
def test_encode_is_nearest_centroid(as_input, case):
    _, cb, _, codes = case
    m, kk, sd = cb.shape
    rng = np.random.default_rng(len(codes))
    x = rng.standard_normal((len(codes), m * sd)).astype(np.float32)
    out = np.empty((len(x), m), np.uint8)
    assert kpq.pq_encode(as_input(cb), as_input(x), out) == kpq.OK
    for s in range(m):
        d = ((x[:, None, s * sd:(s + 1) * sd] - cb[None, s]) ** 2).sum(-1)
        best = d[np.arange(len(x)), out[:, s]]
        np.testing.assert_allclose(best, d.min(1), rtol=1e-5, atol=1e-6)


def test_bad_shapes_and_codes_give_status():
    cb = np.zeros((2, 4, 2), np.float32)  # K = 4 < 256: an 8-bit code of 9 is corrupt
    table = np.zeros((2, 4), np.float32)
    assert kpq.pq_table_l2(cb, np.zeros(3, np.float32), table) == kpq.BAD_SHAPE
    out = np.zeros(2, np.float32)
    assert kpq.pq_adc(table, np.array([0, 9, 1, 1], np.uint8), 0, 2, 8, out) == kpq.BAD_CODE
    assert kpq.pq_adc(table, np.zeros(3, np.uint8), 0, 2, 8, out) == kpq.BAD_SHAPE


@given(st.integers(0, 30), st.integers(1, 40), st.integers(0, 2**31))
def test_sq_l2_matches_reference(as_input, n, d, seed):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 256, (n, d)).astype(np.uint8)
    qc = rng.integers(0, 256, d).astype(np.uint8)
    out = np.full(n + 1, -1, np.float32)
    assert kpq.sq_l2(as_input(codes), as_input(qc), out) == kpq.OK
    ref = ((codes.astype(np.int64) - qc) ** 2).sum(1)
    np.testing.assert_array_equal(out[:n], ref.astype(np.float32))
    assert out[-1] == -1
    assert kpq.sq_l2(codes, qc[:0] if d > 1 else np.zeros(2, np.uint8), out) == \
        kpq.BAD_SHAPE
