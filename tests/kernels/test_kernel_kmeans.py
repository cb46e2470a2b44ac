"""k-means kernels (``kernels/vector/kmeans.py``) against NumPy references: nearest centroid
from a dot-product matrix (l2 and dot, first of equals, NaN rows) and centroid sums."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from lancenb.kernels.vector import kmeans as kk


def ref_assign(x, c, metric):
    if metric == kk.DOT:
        d = 1.0 - x @ c.T
    else:
        d = np.maximum((x * x).sum(1)[:, None] + (c * c).sum(1)[None] - 2 * x @ c.T, 0)
    return d.argmin(1), d.min(1)


@st.composite
def case(draw):
    n = draw(st.integers(0, 30))
    k = draw(st.integers(1, 6))
    d = draw(st.integers(1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    # small integers: exact float arithmetic, so ties are real ties
    x = rng.integers(-3, 4, (n, d)).astype(np.float64)
    c = rng.integers(-3, 4, (k, d)).astype(np.float64)
    return x, c


@given(case(), st.sampled_from([kk.L2, kk.DOT]))
def test_assign_matches_reference(as_input, xc, metric):
    x, c = xc
    dots = x @ c.T
    labels = np.full(len(x), -5, np.int32)
    dists = np.empty(len(x), np.float64)
    assert kk.assign_from_dots(as_input(dots), as_input((x * x).sum(1)),
                               as_input((c * c).sum(1)), metric, labels, dists) == kk.OK
    lab, dd = ref_assign(x, c, metric)
    np.testing.assert_array_equal(labels, lab)  # argmin: the first of equals
    np.testing.assert_allclose(dists, dd)


@given(case())
def test_accumulate_matches_reference(as_input, xc):
    x, c = xc
    k = len(c)
    labels = (np.arange(len(x)) % (k + 1) - 1).astype(np.int32)  # includes -1 (skipped)
    sums = np.zeros((k, x.shape[1]))
    counts = np.zeros(k, np.int64)
    assert kk.accumulate(as_input(x), as_input(labels), sums, counts) == kk.OK
    for j in range(k):
        np.testing.assert_allclose(sums[j], x[labels == j].sum(0))
        assert counts[j] == (labels == j).sum()


def test_nan_rows_and_bad_labels():
    dots = np.array([[np.nan, np.nan], [1.0, 2.0]])
    labels = np.zeros(2, np.int32)
    dists = np.zeros(2)
    assert kk.assign_from_dots(dots, np.zeros(2), np.zeros(2), kk.DOT, labels, dists) == kk.OK
    assert labels[0] == -1 and np.isnan(dists[0]) and labels[1] == 1
    assert kk.accumulate(np.zeros((1, 2)), np.array([3], np.int32), np.zeros((2, 2)),
                         np.zeros(2, np.int64)) == kk.BAD_LABEL
    assert kk.assign_from_dots(dots, np.zeros(3), np.zeros(2), kk.L2, labels,
                               dists) == kk.BAD_SHAPE


@given(case())
def test_assign_l2_small_matches_reference(as_input, xc):
    x, c = xc
    x, c = x.astype(np.float32), c.astype(np.float32)
    labels = np.full(len(x), -5, np.int32)
    dists = np.empty(len(x), np.float32)
    scratch = np.empty(4 * len(c), np.float32)
    assert kk.assign_l2_small(as_input(x), as_input(np.ascontiguousarray(c.T)), labels,
                              dists, scratch) == kk.OK
    lab, dd = ref_assign(x.astype(np.float64), c.astype(np.float64), kk.L2)
    np.testing.assert_array_equal(labels, lab)  # small integers: exact, ties included
    np.testing.assert_allclose(dists, dd)
    assert kk.assign_l2_small(x, np.ascontiguousarray(c.T), labels, dists,
                              scratch[:1]) == kk.BAD_SHAPE
