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
