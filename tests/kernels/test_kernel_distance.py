"""Batched distances (``kernels/vector/distance.py``) against NumPy references written from
pylance's definitions (squared L2, ``1 - cos``, ``1 - dot``, popcount of XOR), with
read-only and writable inputs; float32 inputs are compared within float32 rounding.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from lancenb.kernels.vector import distance as kd

# -- references ---------------------------------------------------------------------------


def ref_distances(x: np.ndarray, c: np.ndarray, metric: int) -> np.ndarray:
    """(n, m) distances, computed in float64."""
    if metric == kd.HAMMING:
        return np.unpackbits(x[:, None, :] ^ c[None, :, :], axis=2).sum(2).astype(np.float64)
    x64, c64 = x.astype(np.float64), c.astype(np.float64)
    if metric == kd.L2:
        return ((x64[:, None, :] - c64[None, :, :]) ** 2).sum(2)
    dot = x64 @ c64.T
    if metric == kd.DOT:
        return 1 - dot
    with np.errstate(invalid="ignore", divide="ignore"):
        den = np.linalg.norm(x64, axis=1)[:, None] * np.linalg.norm(c64, axis=1)[None, :]
        return np.where(den == 0, np.nan, 1 - dot / np.where(den == 0, 1, den))


def _close(got, want, x, c):
    """Within float32 rounding of the terms summed (dot products cancel)."""
    big = np.abs(x.astype(np.float64)).max(initial=0) + np.abs(c.astype(np.float64)).max(
        initial=0)
    scale = big * big * x.shape[1] + 1
    tol = 1e-5 * scale if got.dtype == np.float32 or x.dtype == np.float32 else 1e-10 * scale
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.all(np.abs(got[~nan] - want[~nan]) <= tol)


_floats = st.sampled_from([np.float32, np.float64])
_metric_f = st.sampled_from([kd.L2, kd.COSINE, kd.DOT])


@st.composite
def _vectors(draw, dtype, n_max=12, m_max=5):
    n = draw(st.integers(0, n_max))
    m = draw(st.integers(1, m_max))
    d = draw(st.integers(1, 20))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if dtype == np.uint8:
        return rng.integers(0, 256, (n, d)).astype(np.uint8), \
            rng.integers(0, 256, (m, d)).astype(np.uint8)
    x = rng.integers(-4, 5, (n, d)).astype(dtype) * draw(st.sampled_from([1, 0.37, 1e3]))
    c = rng.standard_normal((m, d)).astype(dtype)
    if n and draw(st.booleans()):
        x[0] = 0  # a zero vector: cosine is NaN
    return x.astype(dtype), c


@given(data=st.data(), dtype=_floats, metric=_metric_f, out_dtype=_floats)
def test_distances_to_many_matches_reference(data, dtype, metric, out_dtype, as_input):
    x, c = data.draw(_vectors(dtype))
    out = np.full((len(x), len(c)), -7, dtype=out_dtype)
    assert kd.distances_to_many(as_input(x), as_input(c), metric, out) == kd.OK
    _close(out, ref_distances(x, c, metric), x, c)


@given(data=st.data(), dtype=_floats, metric=_metric_f)
def test_distances_to_query_matches_reference(data, dtype, metric, as_input):
    x, c = data.draw(_vectors(dtype, m_max=1))
    out = np.full(len(x), -7, dtype=np.float32)
    assert kd.distances_to_query(as_input(x), as_input(c[0]), metric, out) == kd.OK
    _close(out, ref_distances(x, c, metric)[:, 0], x, c)


@given(data=st.data())
def test_hamming_counts_differing_bits(data, as_input):
    x, c = data.draw(_vectors(np.uint8))
    out = np.empty((len(x), len(c)), dtype=np.float32)
    assert kd.distances_to_many(as_input(x), as_input(c), kd.HAMMING, out) == kd.OK
    assert np.array_equal(out, ref_distances(x, c, kd.HAMMING))
    one = np.empty(len(x), dtype=np.float32)
    assert kd.distances_to_query(as_input(x), as_input(c[0]), kd.HAMMING, one) == kd.OK
    assert np.array_equal(one, out[:, 0])


@given(data=st.data(), dtype=_floats, metric=_metric_f)
def test_nearest_of_many_is_the_argmin(data, dtype, metric, as_input):
    x, c = data.draw(_vectors(dtype, m_max=8))
    labels = np.full(len(x), -7, dtype=np.int64)
    dists = np.full(len(x), -7, dtype=np.float64)
    assert kd.nearest_of_many(as_input(x), as_input(c), metric, labels, dists) == kd.OK
    ref = ref_distances(x, c, metric)
    for i in range(len(x)):
        if np.all(np.isnan(ref[i])):
            assert labels[i] == -1 and np.isnan(dists[i])
            continue
        # the chosen centroid is within rounding of the best one
        _close(dists[i:i + 1], np.nanmin(ref[i])[None], x, c)
        _close(ref[i, labels[i]][None], np.nanmin(ref[i])[None], x, c)


def test_known_answers():
    x = np.array([[1, 2], [0, 0]], dtype=np.float32)
    q = np.array([1, 0], dtype=np.float32)
    out = np.empty(2, dtype=np.float32)
    kd.distances_to_query(x, q, kd.L2, out)
    assert out.tolist() == [4, 1]
    kd.distances_to_query(x, q, kd.DOT, out)
    assert out.tolist() == [0, 1]
    kd.distances_to_query(x, q, kd.COSINE, out)
    assert out[0] == pytest.approx(1 - 1 / np.sqrt(5)) and np.isnan(out[1])
    u = np.array([[3], [0]], dtype=np.uint8)
    kd.distances_to_query(u, np.array([1], dtype=np.uint8), kd.HAMMING, out)
    assert out.tolist() == [1, 1]


def test_bad_inputs_give_a_status():
    x = np.zeros((3, 4), dtype=np.float32)
    out = np.empty(3, dtype=np.float32)
    assert kd.distances_to_query(x, np.zeros(5, np.float32), kd.L2, out) == kd.BAD_SHAPE
    assert kd.distances_to_query(x, np.zeros(4, np.float32), kd.L2, out[:2]) == kd.BAD_SHAPE
    assert kd.distances_to_query(x, np.zeros(4, np.float32), 9, out) == kd.BAD_METRIC
    assert kd.distances_to_query(x, np.zeros(4, np.float32), kd.HAMMING, out) == kd.BAD_METRIC
    u = np.zeros((3, 4), dtype=np.uint8)
    assert kd.distances_to_query(u, np.zeros(4, np.uint8), kd.L2, out) == kd.BAD_METRIC
    many = np.empty((3, 2), dtype=np.float32)
    assert kd.distances_to_many(x, np.zeros((2, 3), np.float32), kd.L2, many) == kd.BAD_SHAPE
    assert kd.distances_to_many(x, np.zeros((3, 4), np.float32), kd.L2, many) == kd.BAD_SHAPE
    labels = np.empty(2, dtype=np.int64)
    assert kd.nearest_of_many(x, np.zeros((2, 4), np.float32), kd.L2, labels,
                              np.empty(3, np.float32)) == kd.BAD_SHAPE


@given(data=st.data(), dtype=_floats, metric=_metric_f)
def test_many_equals_one_query_at_a_time_bit_for_bit(data, dtype, metric, as_input):
    """The centroid-vectorised loop sums each pair in dimension order, as the one-query
    loop does, so both give the same bits."""
    x, c = data.draw(_vectors(dtype, m_max=6))
    many = np.empty((len(x), len(c)), dtype=np.float32)
    assert kd.distances_to_many(as_input(x), as_input(c), metric, many) == kd.OK
    one = np.empty(len(x), dtype=np.float32)
    for j in range(len(c)):
        assert kd.distances_to_query(as_input(x), as_input(c[j]), metric, one) == kd.OK
        assert np.array_equal(one, many[:, j], equal_nan=True)
    labels = np.empty(len(x), np.int64)
    dists = np.empty(len(x), np.float32)
    assert kd.nearest_of_many(as_input(x), as_input(c), metric, labels, dists) == kd.OK
    for i in range(len(x)):
        row = many[i]
        if np.all(np.isnan(row)):
            assert labels[i] == -1
        else:
            assert labels[i] == int(np.nanargmin(row)) and dists[i] == np.nanmin(row)
