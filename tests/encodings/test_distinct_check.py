"""The strategy's early "too many distinct values" check for strings
(``strategy._too_many_distinct``) says no only where the full dictionary trial says no,
and stops hashing early on unique strings."""

import numpy as np
import pyarrow as pa
import pytest

from lancenb.encodings import blocks, strategy
from lancenb.encodings.config import EncodingConfig
from lancenb.encodings.physical import dictionary

N = 40_000


def _block(distinct: int, seed: int):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, distinct, N)
    block, _ = blocks.from_arrow(pa.array([f"value-{c:07d}" for c in codes.tolist()]))
    return block


@pytest.mark.parametrize("distinct", [30, 6_000, 19_000, 23_000, 200_000])
def test_early_no_agrees_with_the_full_trial(distinct):
    cfg = EncodingConfig()
    block = _block(distinct, distinct)
    why: list[str] = []
    early = strategy._too_many_distinct(block, cfg, why)
    full = dictionary.try_dictionary(block, cfg, version_minor=2, why=[])
    if early:
        assert full is None
        assert why and why[0].startswith("try_dictionary: ~") and why[0].endswith(": no")
    else:
        assert not why
    if distinct == 200_000:  # (nearly) unique: decided on the first two steps
        assert early and f"first {2 * strategy.DISTINCT_CHECK_STEP} of {N}" in why[0]
    if distinct == 30:
        assert not early and full is not None


def test_divisor_from_metadata_is_honoured():
    block = _block(6_000, 1)
    assert not strategy._too_many_distinct(block, EncodingConfig(), [])
    assert strategy._too_many_distinct(block, EncodingConfig(dict_divisor=N // 1000), [])
