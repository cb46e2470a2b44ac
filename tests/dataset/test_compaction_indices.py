"""Compaction of indexed datasets, both ways with pylance 14: indices covering the
rewritten fragments are remapped to the rows' new addresses (BTREE, BITMAP, LABEL_LIST,
NGRAM, IVF), ZONEMAP keeps its old bitmap (pylance cannot remap it either), and every
filter and search gives what the unindexed scan / exact search gives, in both
libraries; with stable row ids the indices stay and follow their fragments."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.index.remap import AddressMap

lance = pytest.importorskip("lance")
lance_opt = pytest.importorskip("lance.optimize")
lancenb_opt = pytest.importorskip("lancenb.optimize")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

N, DIM = 1200, 8
LIBS = {"lancenb": lancenb, "pylance": lance}
FILTERS = ["x = 3", "x IN (1, 5, 36)", "x > 30 AND s = 'v1'", "s = 'v2'", "s IS NULL",
           "array_has_any(tags, ['t1'])", "contains(txt, 'bc7')", "z = 33", "z > 1100",
           "NOT (x < 20) OR s = 'v4'"]
REMAPPED = ("x_idx", "s_idx", "tags_idx", "txt_idx", "v_idx")


def _table() -> pa.Table:
    rng = np.random.default_rng(7)
    s = np.array([f"v{i % 5}" for i in range(N)], dtype=object)
    s[rng.random(N) < 0.05] = None
    tags = [[f"t{(i + j) % 4}" for j in range(i % 3)] for i in range(N)]
    return pa.table({
        "x": pa.array(rng.integers(0, 37, N)), "s": pa.array(s, pa.string()),
        "z": pa.array(np.arange(N)), "tags": pa.array(tags, pa.list_(pa.string())),
        "txt": pa.array([f"abc{i % 97}xyz" for i in range(N)]),
        "v": pa.FixedSizeListArray.from_arrays(
            pa.array(rng.random(N * DIM).astype(np.float32)), DIM)})


def _build(uri, lib, stable=False):
    lance.write_dataset(_table(), uri, max_rows_per_file=200,
                        enable_stable_row_ids=stable)
    ds = LIBS[lib].dataset(uri)
    for col, kind in [("x", "BTREE"), ("s", "BITMAP"), ("tags", "LABEL_LIST"),
                      ("txt", "NGRAM"), ("z", "ZONEMAP")]:
        ds.create_scalar_index(col, kind)
    ds.create_index("v", "IVF_FLAT", num_partitions=4)
    ds.delete("z % 10 = 3 OR z < 150")
    return ds


def _check(uri, stable=False):
    """Both libraries' answers, with and without the indices, are the scan's."""
    rng = np.random.default_rng(1)
    qs = rng.random((3, DIM)).astype(np.float32)
    found = {}
    for lib in LIBS.values():
        ds = lib.dataset(uri)
        for flt in FILTERS:
            got = ds.to_table(filter=flt, columns=["z"])["z"].to_numpy()
            want = ds.to_table(filter=flt, columns=["z"], use_scalar_index=False)
            assert sorted(got) == sorted(want["z"].to_numpy()), (lib.__name__, flt)
        plan = ds.scanner(filter="x = 3").explain_plan()
        assert "ScalarIndexQuery" in plan, lib.__name__
        for q in qs:
            got = ds.to_table(nearest={"column": "v", "q": q, "k": 10, "nprobes": 4},
                              columns=["z"])
            exact = ds.to_table(nearest={"column": "v", "q": q, "k": 10, "use_index": False},
                                columns=["z"])
            got, exact = sorted(got["z"].to_pylist()), sorted(exact["z"].to_pylist())
            found.setdefault(tuple(q), []).append(got)
            if stable:  # the index keeps deleted rows' ids, which take places in the
                # top k and are dropped after (pylance 14 the same): fewer rows
                assert set(got) <= set(exact), lib.__name__
            else:
                assert got == exact, lib.__name__
    assert all(a == b for a, b in found.values())  # (the two libraries agree)


@pytest.mark.parametrize("builder", list(LIBS))
@pytest.mark.parametrize("compactor", list(LIBS))
def test_remapped_indices_answer_as_the_scan(tmp_path, builder, compactor):
    uri = str(tmp_path / "d")
    _build(uri, builder)
    before = {e["name"]: e for e in lancenb.dataset(uri).list_indices()}
    LIBS[compactor].dataset(uri).optimize.compact_files(target_rows_per_fragment=500)
    frags = {f.fragment_id for f in lancenb.dataset(uri).get_fragments()}
    for lib in LIBS.values():
        after = {e["name"]: e for e in lib.dataset(uri).list_indices()}
        for name in REMAPPED:  # new files, bitmaps on the new fragments
            assert after[name]["uuid"] != before[name]["uuid"], (lib.__name__, name)
            assert set(after[name]["fragment_ids"]) == frags
        assert after["z_idx"]["uuid"] == before["z_idx"]["uuid"]  # (pylance: not remapped)
        assert set(after["z_idx"]["fragment_ids"]) == set(before["z_idx"]["fragment_ids"])
    _check(uri)


def test_lancenb_remap_matches_pylance_bitmaps(tmp_path):
    """The same plan on the same data: lancenb's and pylance's compactions leave the
    same fragment bitmaps and the same rows."""
    out = {}
    for lib in LIBS:
        uri = str(tmp_path / lib)
        _build(uri, "pylance")
        LIBS[lib].dataset(uri).optimize.compact_files(target_rows_per_fragment=10_000)
        ds = lance.dataset(uri)
        out[lib] = ({e["name"]: sorted(e["fragment_ids"]) for e in ds.list_indices()},
                    ds.to_table(columns=["z"])["z"].to_pylist())
    assert out["lancenb"] == out["pylance"]


@pytest.mark.parametrize("builder", list(LIBS))
@pytest.mark.parametrize("compactor", list(LIBS))
def test_stable_row_ids_keep_the_indices(tmp_path, builder, compactor):
    """Row ids survive: the indices stay and follow their fragments, but pylance's
    BTREE (index version 1, row addresses) is remapped and ZONEMAP loses the rewritten
    fragments, as pylance 14 does."""
    uri = str(tmp_path / "d")
    _build(uri, builder, stable=True)
    before = {e["name"]: e["uuid"] for e in lancenb.dataset(uri).list_indices()}
    LIBS[compactor].dataset(uri).optimize.compact_files(target_rows_per_fragment=500)
    frags = {f.fragment_id for f in lancenb.dataset(uri).get_fragments()}
    for lib in LIBS.values():
        after = {e["name"]: e for e in lib.dataset(uri).list_indices()}
        changed = {n for n, e in after.items() if e["uuid"] != before[n]}
        assert changed == ({"x_idx"} if builder == "pylance" else set()), lib.__name__
        assert not after["z_idx"]["fragment_ids"]
        assert all(set(e["fragment_ids"]) == frags for n, e in after.items() if n != "z_idx")
    _check(uri, stable=True)


def test_groups_never_mix_indexed_and_unindexed_fragments(tmp_path):
    """Fragments appended after the index was built are compacted apart from the
    indexed ones (the same plan as pylance's)."""
    plans = {}
    for lib in LIBS:
        uri = str(tmp_path / lib)
        lance.write_dataset(_table().slice(0, 600), uri, max_rows_per_file=200)
        LIBS[lib].dataset(uri).create_scalar_index("x", "BTREE")
        lance.write_dataset(_table().slice(600), uri, mode="append", max_rows_per_file=200)
        ds = LIBS[lib].dataset(uri)
        compaction = (lancenb_opt if lib == "lancenb" else lance_opt).Compaction
        plan = compaction.plan(ds, {"target_rows_per_fragment": 10_000})
        plans[lib] = [[f.id for f in t.fragments] for t in plan.tasks]
        ds.optimize.compact_files(target_rows_per_fragment=10_000)
        d = lance.dataset(uri)
        assert d.to_table(filter="x = 3") == d.to_table(filter="x = 3", use_scalar_index=False)
    assert plans["lancenb"] == plans["pylance"] == [[0, 1, 2], [3, 4, 5]]


def test_address_map():
    # fragment 1 (4 rows, row 2 deleted) and fragment 2 (3 rows, all live) -> fragment 7
    amap = AddressMap.from_groups([([(1, np.array([0, 1, 3]), 4), (2, None, 3)],
                                    [(7, 6)])])
    a = lambda f, o: (f << 32) | o  # noqa: E731
    ids = np.array([a(1, 0), a(1, 2), a(1, 3), a(2, 2), a(5, 9)], np.uint64)
    keep, new = amap.remap(ids)
    assert keep.tolist() == [True, False, True, True, True]
    assert new.tolist() == [a(7, 0), a(7, 2), a(7, 5), a(5, 9)]


@pytest.mark.parametrize("builder", list(LIBS))
def test_remapped_pq_index_answers_as_before(tmp_path, builder):
    """IVF_PQ keeps its codes through the remap: after a search (whose caches must not
    leak into the rewritten index's metadata) and a compaction, the same queries give
    the same rows, in both libraries."""
    uri = str(tmp_path / "d")
    lance.write_dataset(_table(), uri, max_rows_per_file=200)
    LIBS[builder].dataset(uri).create_index("v", "IVF_PQ", num_partitions=4,
                                            num_sub_vectors=4)
    qs = np.random.default_rng(3).random((4, DIM)).astype(np.float32)

    def rows(lib):
        ds = lib.dataset(uri)
        return [sorted(ds.to_table(nearest={"column": "v", "q": q, "k": 10, "nprobes": 4},
                                   columns=["z"])["z"].to_pylist()) for q in qs]

    before = {lib: rows(LIBS[lib]) for lib in LIBS}
    lancenb.dataset(uri).optimize.compact_files(target_rows_per_fragment=10_000)
    assert len(lancenb.dataset(uri).get_fragments()) == 1
    assert {lib: rows(LIBS[lib]) for lib in LIBS} == before


def test_distributed_compaction_remaps_at_commit(tmp_path):
    """Plan, execute the tasks (results pickled, as from workers), commit: the commit
    remaps the indices, as compact_files does."""
    import pickle

    uri = str(tmp_path / "d")
    _build(uri, "pylance")
    ds = lancenb.dataset(uri)
    plan = lancenb_opt.Compaction.plan(ds, {"target_rows_per_fragment": 400})
    assert plan.num_tasks() > 1
    results = [pickle.loads(pickle.dumps(t.execute(lancenb.dataset(uri))))
               for t in plan.tasks]
    lancenb_opt.Compaction.commit(lancenb.dataset(uri), results)
    frags = {f.fragment_id for f in lancenb.dataset(uri).get_fragments()}
    for e in lance.dataset(uri).list_indices():
        if e["name"] != "z_idx":
            assert set(e["fragment_ids"]) <= frags and e["fragment_ids"]
    _check(uri)
