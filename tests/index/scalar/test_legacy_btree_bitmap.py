"""BTREE and BITMAP indices in the files pylance wrote before 0.21: 0.1 (legacy) Lance
files, the BTREE's page data naming its row-id column ``row_ids``, its page lookup
without schema metadata (pages of 4096 rows, one batch each). lancenb answers filters
through them as pylance does, and ``optimize_indices`` writes them again in the current
format, readable by both.
"""

from __future__ import annotations

import os
import shutil
import uuid

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.dataset import Index

import lancenb
from lancenb.file import LanceFileReader, LanceFileWriter
from lancenb.index.scalar.query import index_rows

pytestmark = pytest.mark.filterwarnings("ignore:The 'list_indices' method:DeprecationWarning")

OLD = "/work/shared/upstream/ref/test_data/v0.20.0/old_btree_bitmap_indices.lance"
FILTERS = ["bitmap > 2", "btree > 2", "btree = 3", "btree IN (1, 4)", "bitmap < 3",
           "btree IS NULL", "bitmap IS NOT NULL AND btree < 4", "btree >= 2 AND btree < 4"]


def _copy(tmp_path, name: str) -> str:
    if not os.path.isdir(OLD):
        pytest.skip("pylance's v0.20.0 test data is not here")
    uri = str(tmp_path / name)
    shutil.copytree(OLD, uri)
    for root, dirs, files in os.walk(uri):  # (the source tree is read-only)
        for n in dirs + files:
            os.chmod(os.path.join(root, n), 0o755)
    return uri


def _index_answers_exactly(ds, filters) -> None:
    """The index alone answers each filter, with the rows a full scan finds (a failed
    index read would fall back to a scan unseen)."""
    for f in filters:
        got = index_rows(ds, f)
        assert got is not None, f
        want = ds.to_table(filter=f, columns=[], with_row_address=True, use_scalar_index=False)
        assert sorted(got[0]) == sorted(want["_rowaddr"].to_pylist()), f


def _answers(ds, filters) -> list:
    return [ds.to_table(filter=f).sort_by("btree").to_pydict() for f in filters]


def test_old_indices_answer_filters_like_pylance(tmp_path):
    uri = _copy(tmp_path, "old")
    ds = lancenb.dataset(uri)
    assert _answers(ds, FILTERS) == _answers(lance.dataset(uri), FILTERS)
    _index_answers_exactly(ds, FILTERS)
    for f in ("bitmap > 2", "btree > 2"):
        assert ds.to_table(filter=f) == pa.table({"bitmap": [3, 4], "btree": [3, 4]})
        assert "ScalarIndexQuery" in ds.scanner(filter=f).explain_plan()


@pytest.mark.parametrize("lib", [lance, lancenb])
def test_old_indices_after_append_and_optimize(tmp_path, lib):
    """New rows (unindexed, then indexed by ``optimize_indices``) are found with the
    old ones; the rewritten indices are read by both libraries alike."""
    uri = _copy(tmp_path, "old")
    ds = lib.dataset(uri)
    ds.insert(pa.table({"bitmap": pa.array([5, 2], pa.int64()),
                        "btree": pa.array([6, 2], pa.int64())}))
    want = _answers(lance.dataset(uri), FILTERS)
    assert _answers(lancenb.dataset(uri), FILTERS) == want
    lib.dataset(uri).optimize.optimize_indices()
    for reader in (lance, lancenb):
        got = reader.dataset(uri)
        assert {i["name"]: sorted(i["fragment_ids"]) for i in got.list_indices()} == {
            "bitmap_idx": [0, 1], "btree_idx": [0, 1]}
        assert _answers(got, FILTERS) == want


def _as_legacy(src: str, dst: str) -> None:
    """The BTREE files of folder ``src`` written again in folder ``dst`` as pylance
    before 0.21 wrote them: 0.1 files, the page data's row ids named ``row_ids``, one
    page per batch (1024 rows here: lancenb's 0.1 batches), a lookup row per page and
    no schema metadata."""
    t = LanceFileReader(os.path.join(src, "page_data.lance")).read_all().to_table()
    t = t.rename_columns(["values", "row_ids"]).replace_schema_metadata()
    with LanceFileWriter(os.path.join(dst, "page_data.lance"), t.schema, version="0.1") as w:
        w.write_batch(t)
    batches = LanceFileReader(os.path.join(dst, "page_data.lance")).metadata().columns[0].pages
    starts = np.cumsum([0] + [p.num_rows for p in batches])
    v = t.column("values").to_numpy()
    lookup = pa.table({
        "min": pa.array(v[starts[:-1]]), "max": pa.array(v[starts[1:] - 1]),
        "null_count": pa.array(np.zeros(len(batches), np.uint32)),
        "page_idx": pa.array(np.arange(len(batches), dtype=np.uint32))})
    with LanceFileWriter(os.path.join(dst, "page_lookup.lance"), version="0.1") as w:
        w.write_batch(lookup)


def test_many_pages_of_a_legacy_btree_like_pylance(tmp_path):
    """A 10,000-row BTREE (ten pages, deletions) in the old layout answers range,
    equality and IN filters as pylance and a full scan do. (0.1 files cannot hold
    nulls in integer columns, so old indices held none.)"""
    rng = np.random.default_rng(7)
    uri = str(tmp_path / "many")
    t = pa.table({"btree": pa.array(rng.integers(0, 3000, 10_000).astype(np.int64)),
                  "i": pa.array(np.arange(10_000))})
    lance.write_dataset(t, uri, max_rows_per_file=4000)
    ds = lance.dataset(uri)
    ds.create_scalar_index("btree", "BTREE")
    ds.delete("i % 13 = 0")
    ds = lance.dataset(uri)
    (entry,) = ds.list_indices()
    new = str(uuid.uuid4())
    src, dst = (os.path.join(uri, "_indices", u) for u in (entry["uuid"], new))
    os.mkdir(dst)
    _as_legacy(src, dst)
    assert LanceFileReader(os.path.join(dst, "page_data.lance")).version.label == "0.1"

    def index(u):  # (no file list, as before 0.21)
        return Index(
            uuid=u, name="btree_idx", fields=[0], dataset_version=ds.version,
            fragment_ids=set(entry["fragment_ids"]), index_version=0,
            index_details=("/lance.table.BTreeIndexDetails", b""))

    lance.LanceDataset.commit(uri, lance.LanceOperation.CreateIndex(
        [index(new)], [index(entry["uuid"])]), read_version=ds.version)
    assert [i["uuid"] for i in lance.dataset(uri).list_indices()] == [new]
    filters = ["btree < 100", "btree >= 2900", "btree = 1500", "btree IN (3, 2999, 4000)",
               "btree IS NULL", "btree > 1000 AND btree <= 1010", "btree != 17",
               "btree > 1800 AND btree < 2000 OR btree = 7"]

    def rows(lib, **kw):
        d = lib.dataset(uri)
        return [sorted(d.to_table(filter=f, columns=["i"], **kw)["i"].to_pylist())
                for f in filters]

    want = rows(lance, use_scalar_index=False)
    assert rows(lance) == want
    assert rows(lancenb) == want
    _index_answers_exactly(lancenb.dataset(uri), filters)
