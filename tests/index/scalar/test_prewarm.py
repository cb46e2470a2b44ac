"""prewarm_index and ScanStatistics.parts_loaded, as pylance reports them: a dataset
object's index cache is its session's (opened afresh it reads index pages again),
and prewarm_index fills it, so a later indexed scan reads no index page."""

import lance
import pyarrow as pa
import pytest
from lance.indices import IndexConfig

import lancenb


def _parts(ds, **kw):
    got = []
    ds.scanner(scan_stats_callback=got.append, **kw).to_table()
    return got[0].parts_loaded


@pytest.mark.parametrize("mod", [lancenb, lance], ids=["lancenb", "pylance"])
def test_btree_prewarm_parts(tmp_path, mod):
    t = pa.table({"id": pa.array(range(10_000), pa.int64())})
    lancenb.write_dataset(t, tmp_path / "d").create_scalar_index("id", "BTREE")
    ds = mod.dataset(tmp_path / "d")
    assert _parts(ds, filter="id > 5000") > 0
    assert _parts(ds, filter="id > 5000") == 0  # (cached by this dataset object)
    assert _parts(mod.dataset(tmp_path / "d"), filter="id > 5000") > 0
    ds = mod.dataset(tmp_path / "d")
    ds.prewarm_index("id_idx")
    assert _parts(ds, filter="id > 5000") == 0
    assert _parts(ds, filter="id < 10") == 0
    assert ds.count_rows("id > 5000") == 4999


@pytest.mark.parametrize("mod", [lancenb, lance], ids=["lancenb", "pylance"])
def test_bitmap_prewarm_parts(tmp_path, mod):
    t = pa.table({"k": pa.array([i % 50 for i in range(5_000)], pa.int64())})
    lancenb.write_dataset(t, tmp_path / "d").create_scalar_index("k", "BITMAP")
    assert _parts(mod.dataset(tmp_path / "d"), filter="k IN (3, 4)") > 0
    ds = mod.dataset(tmp_path / "d")
    ds.prewarm_index("k_idx")
    assert _parts(ds, filter="k IN (3, 4)") == 0
    assert ds.count_rows("k IN (3, 4)") == 200


def test_json_prewarm(tmp_path):
    t = pa.table({"j": pa.array(['{"x": %d}' % i for i in range(100)], pa.json_())})
    ds = lancenb.write_dataset(t, tmp_path / "d")
    ds.create_scalar_index("j", IndexConfig(index_type="json", parameters={
        "target_index_type": "btree", "path": "x"}))
    f = "json_get_int(j, 'x') < 10"
    assert _parts(lancenb.dataset(tmp_path / "d"), filter=f) > 0
    ds = lancenb.dataset(tmp_path / "d")
    ds.prewarm_index("j_idx")
    assert _parts(ds, filter=f) == 0
    assert ds.count_rows(f) == lance.dataset(tmp_path / "d").count_rows(f) == 10
