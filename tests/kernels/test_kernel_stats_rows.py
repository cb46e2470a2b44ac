"""``hll_fixed_rows`` against its reference: ``hll_fixed`` then ``hll_estimate`` row by
row (the same registers and the same estimates), for read-only and writable inputs,
and its statuses for mismatched shapes and bad registers."""

import numpy as np
import pytest
from lancenb.kernels import stats as ks
from lancenb.kernels import stats_rows as kr


@pytest.mark.parametrize("width", [1, 2, 4, 8])
@pytest.mark.parametrize("readonly", [False, True])
def test_rows_match_hll_fixed_row_by_row(width, readonly):
    rng = np.random.default_rng(width)
    n = 500
    data = np.stack([rng.integers(0, card, n).astype(f"<u{width}").view(np.uint8)
                     for card in (1, 7, 100, 255, 10_000)])
    data.flags.writeable = not readonly
    regs = np.zeros((len(data), 1 << 12), np.uint8)
    out = np.full(len(data), -1.0)
    assert kr.hll_fixed_rows(data, width, 0, regs, out) == kr.OK
    for r in range(len(data)):
        want = np.zeros(1 << 12, np.uint8)
        assert ks.hll_fixed(data[r].copy(), width, 0, want) == n
        assert np.array_equal(regs[r], want)
        assert out[r] == ks.hll_estimate(want)


def test_statuses():
    data = np.zeros((2, 16), np.uint8)
    out = np.zeros(2)
    assert kr.hll_fixed_rows(data, 8, 0, np.zeros((3, 16), np.uint8), out) == kr.BAD_SIZE
    assert kr.hll_fixed_rows(data, 8, 0, np.zeros((2, 15), np.uint8), out) == \
        kr.BAD_REGISTERS
    assert kr.hll_fixed_rows(data, 3, 0, np.zeros((2, 16), np.uint8), out) == kr.BAD_SIZE


def _lex_bounds_reference(keys, signed_le, valid):
    rows = [i for i in range(len(keys)) if not len(valid) or valid[i]]
    if not rows:
        return -1, -1
    k = keys.shape[1]
    if signed_le:  # one little-endian two's complement integer per row
        ints = [sum(int(w) << (64 * j) for j, w in enumerate(keys[i])) for i in rows]
        vals = [v - (1 << (64 * k)) if v >> (64 * k - 1) else v for v in ints]
    else:  # word by word from the first
        vals = [tuple(int(x) for x in keys[i]) for i in rows]
    return rows[vals.index(min(vals))], rows[vals.index(max(vals))]  # the first of equal


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("signed_le", [0, 1])
@pytest.mark.parametrize("readonly", [False, True])
def test_lex_bounds_matches_reference(k, signed_le, readonly):
    rng = np.random.default_rng(k)
    for n, card in ((1, 3), (7, 2), (300, 3), (300, 2**64)):
        keys = rng.integers(0, card, (n, k), dtype=np.uint64)
        keys[:, -1] |= rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(63)  # negatives
        for valid in (np.zeros(0, np.uint8), (rng.random(n) < 0.7).astype(np.uint8),
                      np.zeros(n, np.uint8)):
            keys.flags.writeable = valid.flags.writeable = not readonly
            out = np.zeros(2, np.int64)
            assert kr.lex_bounds(keys, signed_le, valid, out) == kr.OK
            assert tuple(out) == _lex_bounds_reference(keys, signed_le, valid)
            keys.flags.writeable = valid.flags.writeable = True


def test_lex_bounds_example_and_statuses():
    rows = np.array([[1, 5], [0, 9], [1, 2]], np.uint64)
    out = np.zeros(2, np.int64)
    assert kr.lex_bounds(rows, 0, np.zeros(0, np.uint8), out) == kr.OK
    assert tuple(out) == (1, 0)
    assert kr.lex_bounds(rows, 1, np.zeros(0, np.uint8), out) == kr.OK
    assert tuple(out) == (2, 1)
    keys = np.zeros((3, 2), np.uint64)
    none = np.zeros(0, np.uint8)
    assert kr.lex_bounds(keys, 0, np.zeros(2, np.uint8), out) == kr.BAD_SIZE
    assert kr.lex_bounds(keys, 0, none, np.zeros(1, np.int64)) == kr.BAD_SIZE
    assert kr.lex_bounds(np.zeros((3, 0), np.uint64), 0, none, out) == kr.BAD_SIZE


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("readonly", [False, True])
def test_hll_words_matches_hll_fixed(k, readonly):
    rng = np.random.default_rng(k)
    for n, card in ((0, 1), (1, 5), (1000, 40), (3000, 2**62)):
        words = rng.integers(0, card, (n, k), dtype=np.uint64)
        words.flags.writeable = not readonly
        regs = np.zeros(1 << 12, np.uint8)
        assert kr.hll_words(words, 7, regs) == n
        want = np.zeros(1 << 12, np.uint8)
        assert ks.hll_fixed(words.view(np.uint8).reshape(-1).copy(), 8 * k, 7, want) == n
        assert np.array_equal(regs, want)


def test_hll_words_statuses():
    regs = np.zeros(16, np.uint8)
    assert kr.hll_words(np.zeros((2, 4), np.uint64), 0, regs) == kr.BAD_SIZE
    assert kr.hll_words(np.zeros((2, 0), np.uint64), 0, regs) == kr.BAD_SIZE
    assert kr.hll_words(np.zeros((2, 2), np.uint64), 0, np.zeros(15, np.uint8)) == \
        kr.BAD_REGISTERS
