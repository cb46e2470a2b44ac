"""InlineBitpacking values gathered one by one (``InlineValues.gather``, used by takes)
against decoding whole chunks (``decode``, the kernel), and its checks of damaged
chunks against the kernel's."""

import numpy as np
import pytest

from lancenb.encodings.blocks import FixedWidth
from lancenb.encodings.physical import bitpacking
from lancenb.errors import CorruptFileError


def _chunks(bits: int, n: int, rng):
    """Values of every width 0..bits across chunks, encoded as inline chunks."""
    dt = np.dtype(f"<u{bits // 8}")
    widths = rng.integers(0, bits + 1, -(-n // 1024))
    widths[:2] = (0, bits)  # (always both extremes)
    vals = np.concatenate([
        (rng.integers(0, 1 << 62, 1024, dtype=np.uint64) * 3).astype(dt) & dt.type(
            (1 << int(w)) - 1 if w < bits else (1 << bits) - 1)
        for w in widths])[:n]
    block = FixedWidth(bits, vals.view(np.uint8), n)
    bounds = bitpacking.plan(block)
    src, starts, sizes, _ = bitpacking.encode_chunks(block, bounds)
    return vals, np.asarray(src, np.uint8), np.asarray(starts), np.asarray(sizes), \
        np.diff(bounds)


@pytest.mark.parametrize("readonly", [False, True])
@pytest.mark.parametrize("bits", [8, 16, 32, 64])
def test_gather_equals_decode(bits, readonly):
    rng = np.random.default_rng(bits)
    n = 5 * 1024 + 77
    vals, src, starts, sizes, counts = _chunks(bits, n, rng)
    if readonly:
        src = src.copy()
        src.setflags(write=False)
    dec = bitpacking.InlineValues(bits)
    whole = dec.decode(src, starts, sizes, counts, "p").data.view(vals.dtype)
    assert np.array_equal(whole, vals)
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    for k in range(6):
        rows = np.sort(rng.integers(0, n, 300 if k < 5 else 3 * n))  # (last: dense)
        rows = np.concatenate([rows, [0, n - 1]])
        rows.sort()
        chunk = np.searchsorted(first, rows, side="right") - 1
        needed, slot = np.unique(chunk, return_inverse=True)
        got = dec.gather(src, starts[needed], sizes[needed], counts[needed], slot,
                         rows - first[chunk], "p")
        assert got.num_values == len(rows)
        assert np.array_equal(got.data.view(vals.dtype), vals[rows])


@pytest.mark.parametrize("bits", [16, 64])
def test_gather_rejects_damaged_chunks_as_decode_does(bits):
    rng = np.random.default_rng(7)
    vals, src, starts, sizes, counts = _chunks(bits, 3000, rng)
    dec = bitpacking.InlineValues(bits)
    isz = bits // 8
    damaged = []
    wide = src.copy()
    wide[starts[1, 0]:starts[1, 0] + isz] = 0xFF  # width word above T
    damaged.append((wide, starts, sizes))
    short = sizes.copy()
    short[1, 0] -= isz  # one word missing
    damaged.append((src, starts, short))
    past = starts.copy()
    past[2, 0] = len(src)  # chunk outside the data
    damaged.append((src, past, sizes))
    slot = np.array([0, 1, 2])
    local = np.array([5, 6, 7])
    for data, st, sz in damaged:
        with pytest.raises(CorruptFileError) as whole:
            dec.decode(data, st[:3], sz[:3], counts[:3], "p")
        with pytest.raises(CorruptFileError) as one:
            dec.gather(data, st[:3], sz[:3], counts[:3], slot, local, "p")
        assert str(one.value) == str(whole.value)
