"""Top-k selection (``kernels/vector/topk.py``) against a stable NumPy sort: by distance,
then key, then position, NaN never selected; read-only and writable inputs."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from lancenb.kernels.vector import topk as kt


def ref_topk(dist: np.ndarray, k: int, keys=None) -> np.ndarray:
    pos = np.arange(len(dist))
    keys = np.zeros(len(dist), np.uint64) if keys is None else keys
    order = np.lexsort((pos, keys, dist))  # last key is primary
    order = order[~np.isnan(dist[order])]
    return order[:k]


@st.composite
def _dists(draw):
    n = draw(st.integers(0, 60))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    # few distinct values, so ties are common
    dist = rng.integers(0, draw(st.integers(1, 8)), n).astype(dtype)
    if n and draw(st.booleans()):
        dist[rng.integers(0, n, max(1, n // 5))] = np.nan
    if n and draw(st.booleans()):
        dist[0] = -np.inf
    keys = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
    if draw(st.booleans()):
        keys %= np.uint64(3)  # ties in key as well: position decides
    return dist, keys, draw(st.integers(0, n + 3))


@given(case=_dists())
def test_topk_matches_a_stable_sort(case, as_input):
    dist, _, k = case
    out = np.full(k + 2, -7, dtype=np.int64)
    count = kt.topk(as_input(dist), k, out)
    want = ref_topk(dist, k)
    assert count == len(want)
    assert out[:count].tolist() == want.tolist()
    assert np.all(out[count:] == -7)


@given(case=_dists())
def test_topk_by_key_matches_a_stable_sort(case, as_input):
    dist, keys, k = case
    out = np.full(k, -7, dtype=np.int64)
    count = kt.topk_by_key(as_input(dist), as_input(keys), k, out)
    want = ref_topk(dist, k, keys)
    assert out[:count].tolist() == want.tolist()


@given(case=_dists(), parts=st.integers(1, 4))
def test_merge_of_partial_topk_is_the_global_topk(case, parts, as_input):
    dist, keys, k = case
    bounds = np.linspace(0, len(dist), parts + 1).astype(int)
    cand_d, cand_k = [], []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        pos = np.empty(k, np.int64)
        c = kt.topk_by_key(dist[lo:hi], keys[lo:hi], k, pos)
        cand_d.append(dist[lo:hi][pos[:c]])
        cand_k.append(keys[lo:hi][pos[:c]])
    cd, ck = np.concatenate(cand_d), np.concatenate(cand_k)
    out_d = np.empty(k, dist.dtype)
    out_k = np.empty(k, np.uint64)
    count = kt.merge_topk(as_input(cd), as_input(ck), k, out_d, out_k)
    want = ref_topk(dist, k, keys)
    # keys may repeat, so compare the (distance, key) pairs
    assert list(zip(out_d[:count].tolist(), out_k[:count].tolist())) == \
        list(zip(dist[want].tolist(), keys[want].tolist()))


def test_known_answer_and_bad_sizes():
    out = np.empty(3, np.int64)
    assert kt.topk(np.array([3, 1, 2, 1], np.float32), 3, out) == 3
    assert out.tolist() == [1, 3, 2]
    assert kt.topk(np.array([1.0]), -1, out) == kt.BAD_SIZE
    assert kt.topk(np.array([1.0]), 4, out) == kt.BAD_SIZE
    assert kt.topk_by_key(np.array([1.0]), np.zeros(2, np.uint64), 1, out) == kt.BAD_SIZE
    assert kt.merge_topk(np.array([1.0]), np.zeros(1, np.uint64), 2, np.empty(1),
                         np.empty(2, np.uint64)) == kt.BAD_SIZE
