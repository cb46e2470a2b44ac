"""Reads whose cost grows with fragments, versions and columns (issue 23): many small
fragments (filters evaluated over batches spanning fragments, small files served from
the bytes read at open), many versions (manifests read concurrently, cached per
dataset), wide tables (one field looked up among hundreds). Results are checked
against pylance's on the same files."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.dataset.read import scanner as scanner_mod

FILTERS = ["id % 7 = 0", "id > 45 AND id < 260", "x IS NULL", "x >= 100.5", "1 = 1"]


@pytest.fixture(scope="module")
def small_fragments(tmp_path_factory):
    """30 fragments of 10 rows (one pylance write), then rows deleted from three."""
    path = str(tmp_path_factory.mktemp("frags") / "ds")
    n = 300
    x = np.arange(n, dtype=np.float64)
    lance.write_dataset(pa.table({"id": np.arange(n, dtype=np.int64),
                                  "x": pa.array(x, mask=(np.arange(n) % 11 == 0))}),
                        path, max_rows_per_file=10)
    lance.dataset(path).delete("id IN (3, 4, 55, 56, 57, 299)")
    return path


@pytest.mark.parametrize("batch_rows", [1, 25, 64 * 1024])
def test_filters_across_fragments_equal_pylance(small_fragments, monkeypatch, batch_rows):
    # batch boundaries inside, between and past the fragments
    monkeypatch.setattr(scanner_mod, "FILTER_BATCH_ROWS", batch_rows)
    ours, theirs = lancenb.dataset(small_fragments), lance.dataset(small_fragments)
    assert len(ours.get_fragments()) == 30
    for f in FILTERS:
        assert ours.count_rows(f) == theirs.count_rows(f), f
        for kw in ({"offset": 13}, {"limit": 9, "offset": 4, "with_row_id": True}):
            got = ours.to_table(filter=f, **kw)
            want = theirs.to_table(filter=f, **kw)
            assert got.equals(want), (f, kw)


def test_scan_and_take_many_small_files_equal_pylance(small_fragments):
    ours, theirs = lancenb.dataset(small_fragments), lance.dataset(small_fragments)
    assert ours.to_table(columns=["id"]).equals(theirs.to_table(columns=["id"]))
    assert ours.to_table().equals(theirs.to_table())
    idx = [0, 1, 150, 200, 293]
    assert ours.take(idx).equals(theirs.take(idx))
    # every small data file is read whole at open: page reads come from those bytes
    frag = ours.get_fragments()[4]
    reader = ours._open_file(frag.data_files()[0].path)
    assert reader._io.size() == reader._io._inner.size() and len(reader._io._data) > 0
    got = reader.read_all().to_table()
    assert got.column("id").to_pylist() == list(range(40, 50))


def test_versions_equal_pylance_and_cached(tmp_path):
    path = str(tmp_path / "v")
    t = pa.table({"id": np.arange(5, dtype=np.int64)})
    lance.write_dataset(t, path)
    for _ in range(11):
        lance.write_dataset(t, path, mode="append")
    lance.dataset(path).delete("id = 2")
    ours = lancenb.dataset(path)
    got, want = ours.versions(), lance.dataset(path).versions()
    assert [v["version"] for v in got] == [v["version"] for v in want] == list(range(1, 14))
    assert [v["metadata"] for v in got] == [v["metadata"] for v in want]
    assert sorted(ours._cache["versions"]["entries"]) == list(range(1, 14))
    # a version committed after the first call is listed by the next one
    lancenb.write_dataset(t, path, mode="append")
    again = ours.versions()
    assert [v["version"] for v in again] == list(range(1, 15))
    assert again[-1]["metadata"] == lance.dataset(path).versions()[-1]["metadata"]


def test_wide_table_projection_equal_pylance(tmp_path):
    path = str(tmp_path / "wide")
    rng = np.random.default_rng(5)
    data = rng.random((300, 50))
    lance.write_dataset(pa.table({f"c{i}": data[i] for i in range(300)}), path)
    ours, theirs = lancenb.dataset(path), lance.dataset(path)
    assert ours.to_table(columns=["c151"]).equals(theirs.to_table(columns=["c151"]))
    assert ours.to_table().equals(theirs.to_table())
    assert ours.take([1, 48]).equals(theirs.take([1, 48]))
