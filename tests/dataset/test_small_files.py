"""Many small data files of one shape (issue 23, lancenb.file.same_shape): files whose
metadata bytes match share one parse and one set of page decoders, each decoding its
own pages; results equal pylance's on the same files, and a damaged page is reported
naming the file that holds it, not the first file of its shape."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.dataset.read import take
from lancenb.errors import LanceError
from lancenb.file import LanceFileReader, same_shape


def _table(n: int) -> pa.Table:
    rng = np.random.default_rng(5)
    return pa.table({
        "id": np.arange(n, dtype=np.int64),
        "f": pa.array(rng.random(n), mask=np.arange(n) % 7 == 0),
        "s": pa.array([f"v{i % 13}" for i in range(n)]),
        "st": pa.array([{"a": i, "b": float(i)} for i in range(n)]),
    })


@pytest.mark.parametrize("writer", ["pylance", "lancenb"])
def test_shared_shapes_read_like_pylance(tmp_path, writer):
    path = str(tmp_path / "ds")
    t = _table(240)
    if writer == "pylance":
        lance.write_dataset(t, path, max_rows_per_file=20)
    else:
        lancenb.write_dataset(t, path, max_rows_per_file=20)
    ours, theirs = lancenb.dataset(path), lance.dataset(path)
    frags = ours.get_fragments()
    assert len(frags) == 12
    readers = [ours._open_file(f.data_files()[0].path) for f in frags]
    assert all(isinstance(r, same_shape.SmallFile) for r in readers)
    # (most files share a shape; the flat columns decode through its decoders)
    assert len({r.shape_key for r in readers}) < len(readers)
    assert ours.to_table().equals(theirs.to_table())
    for cols in (["id"], ["s", "f"], ["st"]):
        assert ours.to_table(columns=cols).equals(theirs.to_table(columns=cols)), cols
    for f in ("id % 7 = 0", "f > 0.5", "s = 'v3'"):
        assert ours.count_rows(f) == theirs.count_rows(f), f
        assert ours.to_table(filter=f, with_row_id=True).equals(
            theirs.to_table(filter=f, with_row_id=True)), f
    idx = [239, 0, 120, 121, 0]
    assert ours.take(idx).equals(theirs.take(idx))
    # deletions: offsets of live rows go through the full reader of each file
    theirs.delete("id % 5 = 1")
    ours, theirs = lancenb.dataset(path), lance.dataset(path)
    assert ours.to_table().equals(theirs.to_table())
    assert ours.take([3, 100]).equals(theirs.take([3, 100]))


def test_damaged_page_names_its_own_file(tmp_path):
    path = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": np.arange(60, dtype=np.int64)}), path,
                        max_rows_per_file=20)
    ds = lancenb.dataset(path)
    files = [f.data_files()[0].path for f in ds.get_fragments()]
    shapes = {ds.snapshot.open_file(f).shape_key for f in files}
    assert len(shapes) == 1  # the damaged file's decode goes through the first's decoders
    victim = f"{path}/data/{files[2]}"
    (page,) = LanceFileReader(victim).column_pages("id", 0)
    # chunk metadata words claiming more bytes than the page holds
    off, size = page.info.offsets[0], page.info.sizes[0]
    with open(victim, "r+b") as fh:
        fh.seek(off)
        fh.write(b"\xff" * size)
    assert ds.to_table(columns=["id"], fragments=ds.get_fragments()[:2]).num_rows == 40
    with pytest.raises(LanceError, match=files[2]):
        lancenb.dataset(path).to_table(columns=["id"])


def test_files_of_one_shape_decode_together(tmp_path):
    path = str(tmp_path / "ds")
    lance.write_dataset(_table(200), path, max_rows_per_file=20)
    ds = lancenb.dataset(path)
    files = [ds._open_file(f.data_files()[0].path) for f in ds.get_fragments()]
    by_shape: dict = {}
    for f in files:
        by_shape.setdefault(f.shape_key, []).append(f)
    group = max(by_shape.values(), key=len)
    assert len(group) >= 2
    for name in ("id", "f"):  # flat columns, with and without nulls
        idx = group[0].field_index(name)
        want = [f.read_column(name) for f in group]
        same_shape.decode_ahead(group, idx)
        batched = [f._ready.get(idx) for f in group]
        if name == "id":  # (plain mini-block pages: one decode for all the files)
            assert all(b is not None for b in batched)
        got = [f.read_column(name) for f in group]
        assert all(g.equals(w) for g, w in zip(got, want)), name
        assert not any(f._ready for f in group)  # each taken by its read
    # scans with and without filters go through it and still equal pylance's
    theirs = lance.dataset(path)
    assert lancenb.dataset(path).to_table().equals(theirs.to_table())
    assert lancenb.dataset(path).count_rows("id % 3 = 0") == theirs.count_rows("id % 3 = 0")


def test_take_over_small_files_gathers_at_once(tmp_path):
    path = str(tmp_path / "ds")
    rng = np.random.default_rng(11)

    def part(lo: int, n: int) -> pa.Table:
        return pa.table({"id": np.arange(lo, lo + n, dtype=np.int64),
                         "x": rng.random(n), "k": (np.arange(n) % 5).astype(np.int32)})
    # two shapes of files (20 and 30 rows), then rows deleted from some fragments
    lance.write_dataset(part(0, 100), path, max_rows_per_file=20)
    lance.write_dataset(part(100, 90), path, mode="append", max_rows_per_file=30)
    lance.dataset(path).delete("id % 9 = 4")
    ours, theirs = lancenb.dataset(path), lance.dataset(path)
    n = theirs.count_rows()
    idx = [n - 1, 0, 77, 77, 5, 150, 101, 3]
    sc = ours.scanner(columns=["k", "id", "x"], with_row_id=True)
    starts = take._live_starts(ours)
    frag_of = np.searchsorted(starts, np.array(idx), side="right") - 1
    assert take._take_small(ours, sc, np.array(idx) - starts[frag_of], frag_of) is not None
    assert ours.take(idx).equals(theirs.take(idx))
    # (pylance 14's take has no row id options: its scan's row ids at those rows)
    for cols, kw in ((["k", "id", "x"], {"with_row_id": True}),
                     (["x"], {"with_row_address": True})):
        want = theirs.to_table(columns=cols, **kw).take(idx)
        assert ours.take(idx, columns=cols, **kw).equals(want), (cols, kw)
    # a nullable column is not a plain page: the fragment-by-fragment read answers
    lance.write_dataset(pa.table({"id": pa.array([1, None] * 10, pa.int64())}),
                        str(tmp_path / "nulls"), max_rows_per_file=5)
    got = lancenb.dataset(str(tmp_path / "nulls")).take([7, 2, 19])
    assert got.equals(lance.dataset(str(tmp_path / "nulls")).take([7, 2, 19]))


def test_statistics_of_small_files_read_from_their_own_bytes(tmp_path):
    path = str(tmp_path / "ds")
    lancenb.write_dataset(pa.table({"id": np.arange(120, dtype=np.int64)}), path,
                          max_rows_per_file=20)
    ds = lancenb.dataset(path)
    for frag in ds.get_fragments():
        name = frag.data_files()[0].path
        small = ds._open_file(name)
        assert isinstance(small, same_shape.SmallFile)
        full = LanceFileReader(f"{path}/data/{name}")
        n = len(full.metadata().global_buffers)
        assert n >= 2  # the schema, then lancenb's page statistics
        for i in range(n):
            assert small.read_global_buffer(i) == full.read_global_buffer(i)
        assert small._full is None  # (no full reader opened for it)
    # pages pruned by those statistics, counts as pylance's; a filter statistics cannot
    # decide (arithmetic on the column) reads none of them
    theirs = lance.dataset(path)
    for f, pruned in (("id >= 100", True), ("NOT (id < 100)", True),
                      ("id % 7 = 0 AND id > 90", True), ("id % 7 = 0", False),
                      ("id % 7 = 0 OR id * 2 > 3", False)):
        ds = lancenb.dataset(path)
        sc = ds.scanner(filter=f)
        assert sc.count_rows() == theirs.count_rows(f), f
        assert (sc.pages_skipped > 0) == pruned, f
        assert any(k[0] == "stats" for k in ds._cache if isinstance(k, tuple)) == pruned, f
