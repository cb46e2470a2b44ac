"""MaxScore top-k BM25 (``kernels/fts/topk.py``) against scoring every posting with
NumPy (the same float32 operations as ``lancenb.index.fts.score``), then a stable sort
by score descending and row id: same rows, same scores, partitions sharing one heap,
dead documents dropped; read-only and writable inputs."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from lancenb.kernels.fts import topk as kt

K1P = np.float32(2.2)


def ref_scores(docs, freqs, lo, hi, w, rep, norm, boost):
    """Every document's score (NumPy, float32, terms in query order)."""
    score = np.zeros(len(norm), np.float32)
    for j in range(len(lo)):
        d = docs[lo[j]:hi[j]].astype(np.int64)
        f = freqs[lo[j]:hi[j]].astype(np.float32)
        s = w[j] * (K1P * f / (f + norm[d]))
        score[d] += s.astype(np.float32) * rep[j]
    return score * np.float32(boost)


def _partition(rng, nd, m, dense):
    """CSR postings of ``m`` terms over ``nd`` documents."""
    lists, lo, hi, at = [], [], [], 0
    for _ in range(m):
        p = rng.random() * dense
        d = np.flatnonzero(rng.random(nd) < p).astype(np.uint32)
        lists.append(d)
        lo.append(at)
        at += len(d)
        hi.append(at)
    docs = np.concatenate(lists) if lists else np.zeros(0, np.uint32)
    freqs = rng.integers(1, 4, len(docs)).astype(np.uint32)
    return docs, freqs, np.array(lo, np.int64), np.array(hi, np.int64)


@st.composite
def _cases(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m = draw(st.integers(1, 4))
    parts = []
    first_row = 0
    for _ in range(draw(st.integers(1, 3))):
        nd = draw(st.integers(0, 700))
        docs, freqs, lo, hi = _partition(rng, nd, m, draw(st.sampled_from([0.05, 0.5, 1.0])))
        # few distinct lengths, so ties are common
        norm = (np.float32(0.3) + rng.integers(0, 3, nd).astype(np.float32)
                * np.float32(0.45)).astype(np.float32)
        rows = (first_row + rng.permutation(nd)).astype(np.uint64)
        first_row += nd
        live = (rng.random(nd) < 0.8).astype(np.uint8) if draw(st.booleans()) else \
            np.zeros(0, np.uint8)
        parts.append((docs, freqs, lo, hi, norm, rows, live))
    w = rng.choice(np.array([0.5, 1.25, 3.0], np.float32), m).astype(np.float32)
    rep = rng.integers(1, 3, m).astype(np.float32)
    boost = draw(st.sampled_from([1.0, 0.5, 2.5]))
    return parts, w, rep, np.float32(boost), draw(st.integers(0, 40))


@settings(max_examples=60, deadline=None)
@given(case=_cases())
def test_maxscore_topk_equals_scoring_every_posting(case, as_input):
    parts, w, rep, boost, k = case
    hs = np.zeros(k, np.float32)
    hr = np.zeros(k, np.uint64)
    size = np.zeros(1, np.int64)
    all_rows, all_scores = [], []
    for docs, freqs, lo, hi, norm, rows, live in parts:
        nb = (hi - lo + kt.BLOCK - 1) // kt.BLOCK
        bstart = np.concatenate([[0], np.cumsum(nb)]).astype(np.int64)
        bmax = np.zeros(int(bstart[-1]), np.float32)
        for j in range(len(lo)):
            kt.block_max(as_input(docs), as_input(freqs), lo[j], hi[j], as_input(norm), K1P,
                         bmax[bstart[j]:bstart[j + 1]])
        kt.maxscore_topk(as_input(docs), as_input(freqs), lo, hi, w, rep, bstart,
                         as_input(bmax), as_input(norm), as_input(live), as_input(rows),
                         boost, K1P, hs, hr, size)
        s = ref_scores(docs, freqs, lo, hi, w, rep, norm, boost)
        held = np.zeros(len(norm), bool)
        for j in range(len(lo)):
            held[docs[lo[j]:hi[j]]] = True
        if len(live):
            held &= live.astype(bool)
        all_rows.append(rows[held])
        all_scores.append(s[held])
    rows = np.concatenate(all_rows)
    scores = np.concatenate(all_scores)
    order = np.lexsort((rows, -scores.astype(np.float64)))[:k]
    n = int(size[0])
    got = np.lexsort((hr[:n], -hs[:n].astype(np.float64)))
    assert n == len(order)
    np.testing.assert_array_equal(hr[:n][got], rows[order])
    np.testing.assert_array_equal(hs[:n][got], scores[order])


def test_block_max_per_128_postings():
    docs = np.arange(300, dtype=np.uint32)
    freqs = np.ones(300, np.uint32)
    freqs[[5, 200, 299]] = 3
    norm = np.full(300, np.float32(1.2))
    out = np.zeros(3, np.float32)
    kt.block_max(docs, freqs, 0, 300, norm, K1P, out)
    f = np.float32(3)
    want = K1P * f / (f + np.float32(1.2))
    np.testing.assert_array_equal(out, [want, want, want])


def test_pruning_skips_postings():
    """A frequent low-weight term and a rare high-weight one: most documents of the
    frequent term are never scored once the heap holds ten documents of both (the
    threshold then exceeds any document of the frequent term alone)."""
    nd = 100_000
    common = np.arange(nd, dtype=np.uint32)
    rare = np.arange(0, nd, 997, dtype=np.uint32)
    docs = np.concatenate([common, rare])
    freqs = np.ones(len(docs), np.uint32)
    lo = np.array([0, nd], np.int64)
    hi = np.array([nd, len(docs)], np.int64)
    norm = np.full(nd, np.float32(1.2))
    nb = (hi - lo + 127) // 128
    bstart = np.concatenate([[0], np.cumsum(nb)]).astype(np.int64)
    bmax = np.zeros(int(bstart[-1]), np.float32)
    for j in range(2):
        kt.block_max(docs, freqs, lo[j], hi[j], norm, K1P, bmax[bstart[j]:bstart[j + 1]])
    hs, hr, size = np.zeros(10, np.float32), np.zeros(10, np.uint64), np.zeros(1, np.int64)
    scored = kt.maxscore_topk(docs, freqs, lo, hi, np.array([0.1, 5.0], np.float32),
                              np.ones(2, np.float32), bstart, bmax, norm,
                              np.zeros(0, np.uint8), np.arange(nd, dtype=np.uint64),
                              np.float32(1), K1P, hs, hr, size)
    assert scored <= 11 * 997 + len(rare)
    assert sorted(hr.tolist()) == rare[:10].tolist()
