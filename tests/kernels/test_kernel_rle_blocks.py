"""``rle.encode_blocks`` (one RLE block per chunk: ``u64 values byte length | values |
lengths``) against a pure-Python reference, and back through ``decode_blocks``."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from lancenb.kernels import rle

FILL = 0x5C
WIDTHS = [1, 2, 4, 8]
LENGTH_WIDTHS = [1, 2, 4]


def _le(value: int, width: int) -> bytes:
    return value.to_bytes(width, "little")


def _raw(values, width) -> bytes:
    return b"".join(_le(v, width) for v in values)


def ref_runs(values, max_run):
    """``[(value, length), ...]`` with long runs cut into ``max_run`` pieces."""
    out, i = [], 0
    while i < len(values):
        j = i
        while j < len(values) and values[j] == values[i]:
            j += 1
        left = j - i
        while left:
            piece = min(left, max_run)
            out.append((values[i], piece))
            left -= piece
        i = j
    return out


@st.composite
def run_values(draw):
    """``(width, values)``: runs of equal values, some long enough to be cut at 255."""
    width = draw(st.sampled_from(WIDTHS))
    pool = draw(st.lists(st.integers(0, 2 ** (8 * width) - 1), min_size=1, max_size=4))
    runs = draw(st.lists(st.tuples(st.sampled_from(pool),
                                   st.one_of(st.integers(1, 5), st.integers(1, 700))),
                         max_size=30))
    return width, [v for v, n in runs for _ in range(n)]


@st.composite
def bounds_for(draw, n):
    if n == 0:
        return [0]
    cuts = draw(st.lists(st.integers(1, n - 1), max_size=6)) if n > 1 else []
    return [0] + sorted(set(cuts)) + [n]


def ref_blocks(values, width, bounds, length_width) -> list[bytes]:
    """Each chunk's block, written out from the layout."""
    max_run = 2 ** (8 * length_width) - 1
    out = []
    for c in range(len(bounds) - 1):
        runs = ref_runs(values[bounds[c]:bounds[c + 1]], max_run)
        vals = b"".join(_le(v, width) for v, _ in runs)
        lens = b"".join(_le(n, length_width) for _, n in runs)
        out.append(_le(len(vals), 8) + vals + lens)
    return out


def _encode(values, width, bounds, length_width, as_input, guarded):
    data = as_input(np.frombuffer(_raw(values, width), np.uint8))
    b = as_input(np.array(bounds, np.int64))
    runs = np.zeros(len(bounds) - 1, np.int64)
    assert rle.encode_count(data, width, b, length_width, runs) >= 0
    sizes = 8 + runs * (width + length_width)
    starts = np.zeros(len(sizes), np.int64)
    if len(sizes):
        np.cumsum(sizes[:-1], out=starts[1:])
    g = guarded(int(sizes.sum()), np.uint8, fill=FILL)
    status = rle.encode_blocks(data, width, b, length_width, as_input(starts), g.out)
    assert g.intact()
    return status, g.out.tobytes(), starts, sizes


@given(data=st.data())
def test_encode_blocks_matches_reference(as_input, guarded, data):
    width, values = data.draw(run_values())
    length_width = data.draw(st.sampled_from(LENGTH_WIDTHS))
    bounds = data.draw(bounds_for(len(values)))
    status, out, starts, sizes = _encode(values, width, bounds, length_width, as_input,
                                         guarded)
    assert status == rle.OK
    want = ref_blocks(values, width, bounds, length_width)
    assert [out[s:s + z] for s, z in zip(starts, sizes)] == want
    # and the decoder reads the blocks back
    counts = np.diff(np.array(bounds, np.int64))
    back = np.full(len(values) * width, FILL, np.uint8)
    err = np.zeros(2, np.int64)
    src = as_input(np.frombuffer(out, np.uint8))
    assert rle.decode_blocks(src, as_input(starts), as_input(sizes), as_input(counts), width,
                             length_width, back, err) == rle.OK
    assert back.tobytes() == _raw(values, width)


@given(data=st.data())
def test_encode_blocks_rejects_a_short_output(as_input, data):
    width, values = data.draw(run_values())
    if not values:
        values = [0]
    bounds = [0, len(values)]
    runs = len(ref_runs(values, 255))
    cut = data.draw(st.integers(1, 8 + runs * (width + 1)))
    out = np.full(8 + runs * (width + 1) - cut, FILL, np.uint8)
    src = as_input(np.frombuffer(_raw(values, width), np.uint8))
    status = rle.encode_blocks(src, width, as_input(np.array(bounds, np.int64)), 1,
                               as_input(np.zeros(1, np.int64)), out)
    assert status == rle.BAD_SIZE
    assert np.all(out == FILL)


def test_encode_blocks_rejects_bad_arguments(as_input):
    data = as_input(np.arange(6, dtype=np.uint8))
    starts = as_input(np.zeros(1, np.int64))
    out = np.zeros(64, np.uint8)
    assert rle.encode_blocks(data, 3, as_input(np.array([0, 2], np.int64)), 1, starts,
                             out) == rle.BAD_WIDTH
    assert rle.encode_blocks(data, 4, as_input(np.array([0, 1], np.int64)), 1, starts,
                             out) == rle.BAD_SIZE
    assert rle.encode_blocks(data, 2, as_input(np.array([0, 2], np.int64)), 1, starts,
                             out) == rle.BAD_SIZE  # bounds end short of the 3 values
    assert rle.encode_blocks(data, 2, as_input(np.array([0, 3], np.int64)), 1,
                             as_input(np.full(1, -1, np.int64)), out) == rle.BAD_SIZE


def test_encode_blocks_known_answer():
    """u16 levels ``[1, 1, 1, 0, 0]``: values 1, 0 and lengths 3, 2 after a u64 of 4."""
    data = np.array([1, 1, 1, 0, 0], np.uint16).view(np.uint8)
    out = np.zeros(14, np.uint8)
    assert rle.encode_blocks(data, 2, np.array([0, 5], np.int64), 1, np.zeros(1, np.int64),
                             out) == rle.OK
    assert out.tobytes() == bytes.fromhex("0400000000000000 0100 0000 03 02".replace(" ", ""))
