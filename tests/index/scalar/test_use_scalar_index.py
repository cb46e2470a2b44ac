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


@pytest.mark.parametrize("lib", ["lancenb", "pylance"])
@pytest.mark.parametrize("flt", ["a < 32", "b < 30", "b >= 20 AND a < 40", "b = 27"])
def test_include_deleted_rows_with_a_filter(tmp_path, lib, flt):
    """Deleted rows of the fragments left pass the filter too (a null _rowid), with or
    without an index on the column, as pylance 14 (lancenb refused the filter)."""
    uri = str(tmp_path / "d")
    t = pa.table({"a": np.arange(100), "b": np.arange(100)})
    lance.write_dataset(t, uri, max_rows_per_file=25)
    (lancenb if lib == "lancenb" else lance).dataset(uri).create_scalar_index("b", "BTREE")
    lance.dataset(uri).delete("a < 30")
    kw = {"with_row_id": True, "include_deleted_rows": True, "filter": flt}
    want = lance.dataset(uri).to_table(**kw)
    got = lancenb.dataset(uri).to_table(**kw)
    assert got == want
    with pytest.raises(ValueError, match="with_row_id is false"):
        lancenb.dataset(uri).to_table(include_deleted_rows=True, filter=flt)


@pytest.mark.parametrize("lib", ["lancenb", "pylance"])
def test_index_stats_of_a_missing_name_is_a_key_error(tmp_path, lib):
    uri = str(tmp_path / "d")
    lance.write_dataset(pa.table({"a": np.arange(10)}), uri)
    ds = (lancenb if lib == "lancenb" else lance).dataset(uri)
    with pytest.raises(KeyError, match='Index "a_idx" not found'):
        ds.stats.index_stats("a_idx")
    ds.create_scalar_index("a", "BTREE")
    with pytest.raises(KeyError, match='Index "nope" not found'):
        lancenb.dataset(uri).stats.index_stats("nope")
    got = lancenb.dataset(uri).stats.index_stats("a_idx")
    assert got["num_indexed_rows"] == 10 and got["index_type"] == "BTree"
