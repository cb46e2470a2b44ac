"""ZONEMAP lookups (numeric zones tested all at once) and the live-row step of every
index answer: on random numeric columns with NULL and NaN, deletions and a fragment
no index covers, the indexed scan equals the unindexed one for both libraries'
indices, and the vectorised zone test equals the zone-by-zone one."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.expr.nodes import Cmp, Col, In, Lit
from lancenb.index.scalar import zones
from lancenb.index.scalar.common import IndexFiles

lance = pytest.importorskip("lance")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _table(rng, n):
    f = rng.normal(0, 100, n)
    f[rng.random(n) < 0.02] = np.nan
    return pa.table({"i": pa.array(rng.integers(-50, 50, n), mask=rng.random(n) < 0.03),
                     "f": pa.array(f, mask=rng.random(n) < 0.03),
                     "k": np.arange(n)})


@pytest.mark.parametrize("builder", ["lancenb", "pylance"])
@pytest.mark.parametrize("seed", range(3))
def test_zonemap_filters_equal_the_scan(tmp_path, builder, seed):
    rng = np.random.default_rng(seed)
    uri = str(tmp_path / "d")
    lance.write_dataset(_table(rng, 30_000), uri, max_rows_per_file=10_000)
    ds = (lancenb if builder == "lancenb" else lance).dataset(uri)
    ds.create_scalar_index("i", "ZONEMAP", rows_per_zone=1000)
    ds.create_scalar_index("f", "ZONEMAP", rows_per_zone=1500)
    lance.dataset(uri).delete("k % 7 = 0 OR (k > 12000 AND k < 19000)")
    lance.write_dataset(_table(rng, 3000), uri, mode="append")  # (not indexed)
    ours = lancenb.dataset(uri)
    for _ in range(25):
        a, b = sorted(rng.integers(-60, 60, 2).tolist())
        x, y = sorted(rng.normal(0, 120, 2).round(2).tolist())
        flt = rng.choice([f"i = {a}", f"i > {a} AND i <= {b}", f"i IN ({a}, {b}, 7)",
                          f"f < {x}", f"f >= {x} AND f < {y}", f"i = {a} OR f > {y}",
                          "f IS NULL", "i IS NULL", f"f = {x}", "f > 1e9"])
        want = ours.to_table(filter=flt, use_scalar_index=False)["k"]  # (NaN != NaN)
        assert ours.to_table(filter=flt)["k"] == want, flt
        assert lance.dataset(uri).to_table(filter=flt)["k"] == want, flt
        assert ours.count_rows(filter=flt) == len(want), flt


def test_vectorised_zone_test_equals_the_loop(tmp_path):
    rng = np.random.default_rng(5)
    uri = str(tmp_path / "d")
    lance.write_dataset(_table(rng, 20_000), uri, max_rows_per_file=5000)
    lance.dataset(uri).create_scalar_index("f", "ZONEMAP", rows_per_zone=700)
    entry = next(e for e in lancenb.dataset(uri).list_indices() if e["name"] == "f_idx")
    idx = zones.ZoneMapIndex(IndexFiles(uri, entry["uuid"]))
    assert idx._num is not None
    col = Col(("f",), pa.float64())
    for _ in range(50):
        v = float(rng.normal(0, 150))
        node = rng.choice([Cmp("<", col, Lit(pa.scalar(v))), Cmp(">=", col, Lit(pa.scalar(v))),
                           Cmp("=", col, Lit(pa.scalar(v))),
                           In(col, pa.array([v, v + 10.0, float("nan")]), False)])
        fast = idx.may_match(node)
        num, idx._num = idx._num, None
        slow = idx.may_match(node)
        idx._num = num
        assert (fast == slow).all()
