"""The fast lookup paths of the scalar indices give exactly the rows of an unindexed
scan: BTREE page selection on numeric bounds (nulls, NaN), an ``AND`` of comparisons
of one column read as one range, on both libraries' indices, with deletions and with
stable row ids."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancenb

lance = pytest.importorskip("lance")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

N = 30_000  # (several 4096-row BTREE pages)


def _table(seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    i = rng.integers(-500, 500, N)
    f = rng.normal(0, 100, N)
    f[rng.random(N) < 0.01] = np.nan
    s = np.array([f"k{v:04d}" for v in rng.integers(0, 3000, N)])
    nulls = rng.random(N) < 0.05
    return pa.table({
        "i": pa.array(i, mask=nulls),
        "f": pa.array(f, mask=np.roll(nulls, 7)),
        "s": pa.array(s, mask=np.roll(nulls, 13)),
        "u": pa.array(rng.integers(0, 1 << 40, N).astype(np.uint64)),
        "r": pa.array(np.arange(N)),
    })


@pytest.fixture(params=[("lancenb", False), ("pylance", False), ("lancenb", True),
                        ("pylance", True)], ids=["lancenb", "pylance", "lancenb-stable",
                                                 "pylance-stable"])
def uri(tmp_path, request):
    lib_name, stable = request.param
    uri = str(tmp_path / "d")
    lance.write_dataset(_table(1), uri, max_rows_per_file=12_000,
                        enable_stable_row_ids=stable)
    lib = lancenb if lib_name == "lancenb" else lance
    ds = lib.dataset(uri)
    for c in ("i", "f", "s", "u"):
        ds.create_scalar_index(c, "BTREE")
    lance.dataset(uri).delete("r % 17 = 3")
    return uri


def _rows(ds, flt, **kw) -> list[int]:
    """The ``r`` of the rows ``flt`` selects (row order and NaN aside)."""
    return sorted(ds.to_table(filter=flt, columns=["r"], **kw).column("r").to_pylist())


FILTERS = [
    "i >= -20 AND i < 35",
    "i > 100 AND i <= 100",
    "i >= 400 AND i < 450 AND i <> 420",
    "i > -10 AND i IN (-20, -5, 0, 7, 499)",
    "i IN (-500, 0, 3, 499, 1000)",
    "i < 3 AND i > -3 AND i <> 0",
    "i IS NULL OR (i > 5 AND i < 9)",
    "f >= -10 AND f < 10.5",
    "f > 250 AND f < 1000",
    "f IN (0.0, 1.5) OR f > 300",
    "s >= 'k0100' AND s < 'k0200'",
    "u > 1000 AND u < 1099511627776",
    "(i >= 10 AND i < 20) OR (i >= 300 AND i < 301)",
    "i >= 10 AND i < 20 AND r < 15000",
    "NOT (i >= 10 AND i < 20)",
]


@pytest.mark.parametrize("flt", FILTERS)
def test_indexed_equals_unindexed(uri, flt):
    want = _rows(lance.dataset(uri), flt, use_scalar_index=False)
    ds = lancenb.dataset(uri)
    assert _rows(ds, flt) == want
    assert _rows(ds, flt, use_scalar_index=False) == want
    assert _rows(lance.dataset(uri), flt) == want


def test_random_ranges_on_a_float_column(tmp_path):
    uri = str(tmp_path / "d")
    lance.write_dataset(_table(2), uri, max_rows_per_file=10_000)
    lancenb.dataset(uri).create_scalar_index("f", "BTREE")
    ds = lancenb.dataset(uri)
    rng = np.random.default_rng(5)
    for _ in range(12):
        a, b = sorted(rng.normal(0, 120, 2).round(2).tolist())
        flt = f"f >= {a} AND f <= {b}"
        assert _rows(ds, flt) == _rows(lance.dataset(uri), flt, use_scalar_index=False)


def test_bloom_check_many_is_each_filter_checked():
    from lancenb.index.scalar.xxh import (
        bloom_check,
        bloom_check_blocks,
        bloom_check_many,
        bloom_insert,
    )

    rng = np.random.default_rng(9)
    for blocks in (1, 4, 32):
        stack = np.zeros((40, blocks, 8), np.uint32)
        for z in range(40):
            bloom_insert(stack[z], rng.integers(0, 2**63, int(rng.integers(0, 30)))
                         .astype(np.uint64))
        for k in (0, 1, 7, 300):
            hashes = rng.integers(0, 2**63, k).astype(np.uint64)
            want = np.array([bloom_check(stack[z], hashes).any() for z in range(40)], bool)
            assert np.array_equal(bloom_check_many(stack, hashes), want)
            by_block = np.ascontiguousarray(stack.transpose(1, 0, 2))
            assert np.array_equal(bloom_check_blocks(by_block, hashes), want)
