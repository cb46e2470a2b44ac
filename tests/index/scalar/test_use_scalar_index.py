"""``use_scalar_index=False`` turns the scalar indices off for a scan, as in pylance:
no ``ScalarIndexQuery`` in the plan, no index read, the rows of the indexed scan."""

from __future__ import annotations

import pickle

import numpy as np
import pyarrow as pa
import pytest

import lancenb

lance = pytest.importorskip("lance")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(params=["lancenb", "pylance"])
def indexed(tmp_path, request):
    """A dataset of three fragments with a BTREE index on ``x`` built by one library."""
    rng = np.random.default_rng(3)
    t = pa.table({"x": pa.array(rng.integers(0, 50, 3000)), "y": pa.array(np.arange(3000))})
    uri = str(tmp_path / "d")
    lance.write_dataset(t, uri, max_rows_per_file=1000)
    lib = lancenb if request.param == "lancenb" else lance
    lib.dataset(uri).create_scalar_index("x", "BTREE")
    return uri


@pytest.mark.parametrize("flt", ["x = 10", "x > 40 AND y < 2000", "x IN (1, 2, 3)"])
def test_off_is_a_scan_with_the_same_rows(indexed, flt):
    ds = lancenb.dataset(indexed)
    on, off = ds.scanner(filter=flt), ds.scanner(filter=flt, use_scalar_index=False)
    assert "ScalarIndexQuery" in on.explain_plan(True)
    assert "ScalarIndexQuery" not in off.explain_plan(True)
    assert "ScalarIndexQuery" not in ds.scanner(filter=flt, use_scalar_index=False).analyze_plan()
    want = lance.dataset(indexed).to_table(filter=flt, use_scalar_index=False)
    assert off.to_table() == want
    assert on.to_table() == want
    assert ds.to_table(filter=flt, use_scalar_index=False) == want
    assert ds.count_rows(filter=flt) == want.num_rows


def test_off_reads_every_row_and_survives_pickling(indexed):
    ds = lancenb.dataset(indexed)
    on = ds.scanner(filter="x = 10")
    off = ds.scanner(filter="x = 10", use_scalar_index=False)
    on.to_table()
    off.to_table()
    assert off.rows_scanned == 3000 > on.rows_scanned
    again = pickle.loads(pickle.dumps(off))
    assert not again.use_scalar_index
    assert again.to_table() == off.to_table()
    assert pickle.loads(pickle.dumps(on)).use_scalar_index
