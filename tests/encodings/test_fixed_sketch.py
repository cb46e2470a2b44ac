"""The dictionary trial of fixed-width values sketches them a step at a time and stops
once the estimate says no (``dictionary._sketch_fixed``): the same answer and the same
dictionary as one sketch of every value, for 8- and 16-byte values at cardinalities on
both sides of ``values / dict-divisor`` and of ``MAX_ITEMS``, and it stops early on
unique values."""

import numpy as np
import pytest

from lancenb.encodings.blocks import FixedWidth
from lancenb.encodings.config import EncodingConfig
from lancenb.encodings.physical import dictionary


def _block(n: int, distinct: int, width: int, seed: int) -> FixedWidth:
    rng = np.random.default_rng(seed)
    pool = rng.integers(0, 2**63, (distinct, width // 8), dtype=np.uint64)
    rows = pool[rng.integers(0, distinct, n)]
    return FixedWidth(8 * width, np.ascontiguousarray(rows).view(np.uint8).reshape(-1), n)


def _trial(block, monkeypatch, step):
    monkeypatch.setattr(dictionary, "SKETCH_STEP", step)
    why: list[str] = []
    found = dictionary.try_dictionary(block, EncodingConfig(), version_minor=2, why=why)
    return found, why


@pytest.mark.parametrize("width", [8, 16])
@pytest.mark.parametrize("n,distinct", [(3000, 40), (3000, 1400), (3000, 1600),
                                        (3000, 10**6), (260_000, 120_000)])
def test_stepped_sketch_agrees_with_one_sketch(monkeypatch, width, n, distinct):
    block = _block(n, distinct, width, seed=distinct)
    stepped, why = _trial(block, monkeypatch, 500)
    whole, _ = _trial(block, monkeypatch, 10**9)
    assert (stepped is None) == (whole is None)
    if whole is not None:
        assert stepped[0].data.tobytes() == whole[0].data.tobytes()
        assert bytes(stepped[1]) == bytes(whole[1]) and stepped[3] == whole[3]
    if distinct >= n:  # unique values: told apart on a prefix
        assert "in the first" in why[-1]
