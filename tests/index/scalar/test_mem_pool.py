"""LANCE_MEM_POOL_SIZE bounds the memory an index build sorts in (pylance's meaning):
a pool smaller than one input batch refuses the build, LANCE_BYPASS_SPILLING lifts
the bound, and a small pool that holds a batch builds the same index by spilling."""

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb


def _data(tmp_path):
    rng = np.random.default_rng(5)
    t = pa.table({"x": pa.array(rng.integers(0, 500, 20_000), pa.int64())})
    return lancenb.write_dataset(t, tmp_path / "d", max_rows_per_file=2_000)


def test_tiny_pool_refuses_then_bypass(tmp_path, monkeypatch):
    ds = _data(tmp_path)
    monkeypatch.setenv("LANCE_MEM_POOL_SIZE", "1024")
    with pytest.raises(OSError, match="Resources exhausted"):
        ds.create_scalar_index("x", "BTREE")
    monkeypatch.setenv("LANCE_BYPASS_SPILLING", "1")
    ds.create_scalar_index("x", "BTREE")
    assert ds.list_indices()[0]["type"] == "BTree"


@pytest.mark.parametrize("kind", ["BTREE", "BITMAP"])
def test_small_pool_spills_same_answers(tmp_path, monkeypatch, kind):
    ds = _data(tmp_path)
    monkeypatch.setenv("LANCE_MEM_POOL_SIZE", str(64 * 1024))  # (a batch, many runs)
    monkeypatch.delenv("LANCE_BYPASS_SPILLING", raising=False)
    ds.create_scalar_index("x", kind)
    monkeypatch.delenv("LANCE_MEM_POOL_SIZE")
    theirs = lance.dataset(tmp_path / "d")
    for f in ["x = 7", "x < 30", "x IN (1, 499, 250)", "x >= 480 AND x != 490"]:
        want = theirs.to_table(filter=f, use_scalar_index=False).num_rows
        assert lancenb.dataset(tmp_path / "d").count_rows(f) == want, f
        assert theirs.count_rows(f) == want, f
        assert "ScalarIndexQuery" in theirs.scanner(filter=f).explain_plan(), f
