"""The candidate rows of ZONEMAP and BLOOMFILTER answers read as runs of rows
(:mod:`lancenb.dataset.read.ranges`) and the cached posting lists of NGRAM: the
indexed scan equals the unindexed one on both libraries' indices, with deletions
(which split zones into several runs and stretch the last zone to the fragment's
end), stable row ids, a fragment no index covers, zones that end at a fragment's
end, and projections of other columns."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.dataset.read.ranges import MIN_MEAN_RUN, read_runs, runs_of, without_deleted
from lancenb.index.scalar import ngram

lance = pytest.importorskip("lance")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

N = 24_000  # fragments of 10,000 rows: zones of 3000 rows end at 9000, then 10,000


def _table(rng, n: int, base: int = 0) -> pa.Table:
    letters = rng.integers(97, 103, (n, 6), dtype=np.uint8)  # (a-f: trigrams repeat)
    return pa.table({
        "ts": np.arange(base, base + n, dtype=np.int64) * 10 + rng.integers(0, 30, n),
        "key": pa.array(rng.integers(0, 5000, n), mask=rng.random(n) < 0.01),
        "name": pa.array([bytes(x).decode() for x in letters]),
        "v": pa.array(rng.normal(0, 1, n), mask=rng.random(n) < 0.05),
        "r": np.arange(base, base + n, dtype=np.int64),
    })


@pytest.fixture(params=[("lancenb", False), ("pylance", False), ("lancenb", True),
                        ("pylance", True)],
                ids=["lancenb", "pylance", "lancenb-stable", "pylance-stable"])
def uri(tmp_path, request):
    builder, stable = request.param
    rng = np.random.default_rng(7)
    uri = str(tmp_path / "d")
    lance.write_dataset(_table(rng, N), uri, max_rows_per_file=10_000,
                        enable_stable_row_ids=stable)
    lance.dataset(uri).delete("r % 97 = 5")  # (before the build: zone starts shift)
    ds = (lancenb if builder == "lancenb" else lance).dataset(uri)
    ds.create_scalar_index("ts", "ZONEMAP", rows_per_zone=3000)
    ds.create_scalar_index("key", "BLOOMFILTER", number_of_items=3000)
    ds.create_scalar_index("name", "NGRAM")
    lance.dataset(uri).delete("(r > 4000 AND r < 4100) OR r % 501 = 0")  # (after it)
    lance.write_dataset(_table(rng, 2000, N), uri, mode="append")  # (not indexed)
    return uri


def _filters(uri: str) -> list[str]:
    t = lance.dataset(uri).to_table(columns=["key", "name"], filter="r % 1777 = 3")
    keys = [k for k in t["key"].to_pylist() if k is not None]
    sub = t["name"][0].as_py()[1:5]
    return [
        "ts >= 95000 AND ts < 140000",  # (a range over several zones)
        "ts >= 99990 AND ts < 100010",  # (the zones at the end of fragment 0)
        "ts < 50",
        f"key = {keys[0]}",
        f"key IN ({', '.join(map(str, keys))})",
        f"key IN ({keys[1]}, NULL)",
        "key IS NULL",
        f"key = {keys[2]} AND v > 0",
        f"key = {keys[3]} OR ts >= 239000",
        f"(ts >= 30000 AND ts < 90000) AND key IN ({keys[4]}, {keys[5]})",
        f"contains(name, '{sub}')",
        f"contains(name, '{sub[:3]}') AND ts < 120000",
        "ts >= 60000 AND ts < 160000 AND _rowid % 2 = 0",
    ]


def _rows(ds, flt, columns=("r", "v", "name"), **kw) -> pa.Table:
    return ds.to_table(filter=flt, columns=list(columns), **kw).sort_by("r")


def test_indexed_equals_unindexed(uri):
    ours, theirs = lancenb.dataset(uri), lance.dataset(uri)
    for flt in _filters(uri):
        want = _rows(theirs, flt, use_scalar_index=False)
        assert _rows(ours, flt).equals(want), flt
        assert _rows(ours, flt, use_scalar_index=False).equals(want), flt
        assert _rows(ours, flt, columns=("r",)).equals(want.select(["r"])), flt
        assert ours.count_rows(filter=flt) == want.num_rows, flt
        got = ours.to_table(filter=flt, columns=["r"], with_row_id=True)
        assert sorted(got["_rowid"].to_pylist()) == sorted(theirs.to_table(
            filter=flt, columns=["r"], with_row_id=True,
            use_scalar_index=False)["_rowid"].to_pylist()), flt


def test_limit_and_offset_over_runs(uri):
    ours = lancenb.dataset(uri)
    flt = "ts >= 20000 AND ts < 200000 AND v > 0"
    full = ours.to_table(filter=flt, columns=["r"], use_scalar_index=False)["r"].to_pylist()
    for limit, offset in ((5, 0), (100, 37), (10_000, 3)):
        got = ours.to_table(filter=flt, columns=["r"], limit=limit, offset=offset)
        assert got["r"].to_pylist() == full[offset:offset + limit]


def test_runs_of():
    assert [a.tolist() for a in runs_of(np.array([3, 4, 5, 9, 10, 20]))] == [[3, 9, 20],
                                                                         [6, 11, 21]]
    assert [a.tolist() for a in runs_of(np.zeros(0, np.int64))] == [[], []]
    rng = np.random.default_rng(0)
    for _ in range(50):
        offs = np.flatnonzero(rng.random(300) < rng.random())
        s, e = runs_of(offs)
        back = np.concatenate([np.arange(a, b) for a, b in zip(s, e)]) if len(s) else s
        assert back.tolist() == offs.tolist()
        assert (s[1:] > e[:-1]).all()


@pytest.mark.parametrize("version", ["2.0", "2.1", "legacy"])
def test_read_runs_equals_take_physical(tmp_path, version):
    rng = np.random.default_rng(3)
    uri = str(tmp_path / "d")
    lance.write_dataset(_table(rng, 20_000), uri, data_storage_version=version)
    frag = lancenb.dataset(uri).get_fragments()[0]
    cols = ["ts", "key", "name", "v"]
    for _ in range(10):
        keep = np.zeros(20_000, bool)
        for a in rng.integers(0, 20_000, 6):
            keep[a:a + int(rng.integers(600, 4000))] = True
        keep &= rng.random(20_000) > 0.001  # (deleted rows split the runs)
        offs = np.flatnonzero(keep)
        got = read_runs(frag, cols, offs)
        assert got is not None
        assert got.equals(frag.take_physical(cols, offs))
    # short runs, a meta column, no rows: left to take_physical
    assert read_runs(frag, cols, np.arange(0, 20_000, 3)) is None
    assert read_runs(frag, ["_rowid"], np.arange(5000)) is None
    assert read_runs(frag, cols, np.arange(MIN_MEAN_RUN)) is None


def test_ngram_postings_cached_and_equal(tmp_path):
    rng = np.random.default_rng(11)
    uri = str(tmp_path / "d")
    lance.write_dataset(_table(rng, 5000), uri)
    lance.dataset(uri).create_scalar_index("name", "NGRAM")
    ds = lancenb.dataset(uri)
    for sub in ("abc", "fed", "acef", "bbbb", "zzz", "ab"):
        flt = f"contains(name, '{sub}')"
        want = _rows(ds, flt, use_scalar_index=False)
        assert _rows(ds, flt).equals(want)
        assert _rows(ds, flt).equals(want)  # (again: from the cached posting lists)
    ids = np.array([1, 2, 3, 1 << 32, (1 << 32) + 7, 5 << 32], np.uint64)
    raw = ngram._treemap(ids)
    assert ngram._read_treemap(raw) == ngram._walk_treemap(raw)
    assert sorted(ngram._read_treemap(raw)) == ids.tolist()


def test_without_deleted_equals_setdiff():
    rng = np.random.default_rng(2)
    for _ in range(100):
        offs = np.flatnonzero(rng.random(500) < rng.random()).astype(np.int64)
        dead = np.flatnonzero(rng.random(600) < rng.random() / 4).astype(np.uint32)
        want = np.setdiff1d(offs, dead.astype(np.int64))
        assert without_deleted(offs, dead).tolist() == want.tolist()


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_few_candidates_read_with_every_column(tmp_path, version):
    """A fragment's few NGRAM candidates are read with the projected columns in one
    take (blob descriptions, strings, lists): the same rows and values as a scan."""
    rng = np.random.default_rng(4)
    uri = str(tmp_path / "d")
    t = _table(rng, 6000)
    blob_field = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    t = t.append_column(blob_field, pa.array([bytes([i % 251]) * (i % 7) for i in range(6000)],
                                             pa.large_binary()))
    t = t.append_column("tags", pa.array([[f"t{i % 5}"] * (i % 3) for i in range(6000)]))
    lance.write_dataset(t, uri, max_rows_per_file=2000, data_storage_version=version)
    lance.dataset(uri).create_scalar_index("name", "NGRAM")
    lance.dataset(uri).delete("r % 11 = 0")
    ds = lancenb.dataset(uri)
    sub = t["name"][123].as_py()[:4]
    for cols in (["r", "name", "tags"], ["b", "r"], ["v"]):
        for flt in (f"contains(name, '{sub}')", f"contains(name, '{sub}') AND r > 100"):
            got = ds.to_table(filter=flt, columns=cols, with_row_id=True)
            want = ds.to_table(filter=flt, columns=cols, with_row_id=True,
                               use_scalar_index=False)
            assert got.num_rows and got.equals(want), (cols, flt)
    got = ds.to_table(filter=f"contains(name, '{sub}')", columns=["b"], blob_handling="all_binary")
    want = lance.dataset(uri).to_table(filter=f"contains(name, '{sub}')", columns=["b"],
                                       use_scalar_index=False, blob_handling="all_binary")
    assert got.equals(want)
