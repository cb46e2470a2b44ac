"""Distributed vector index builds across the two libraries (pylance 14's
``create_index_uncommitted`` / ``merge_existing_index_segments`` /
``commit_existing_index_segments``): segments built by one library are merged or
committed by the other, and both search the result with the same neighbours; the
manifest entries both write for the same steps agree."""

from __future__ import annotations

import shutil

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
DIM, FRAG_ROWS, FRAGS = 16, 1200, 4


def _table(n=FRAG_ROWS * FRAGS, seed=5):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((10, DIM)) * 3
    v = (centers[rng.integers(0, 10, n)] + rng.standard_normal((n, DIM))).astype(np.float32)
    return pa.table({"id": np.arange(n),
                     "v": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), DIM)})


def _model(uri, index_type, metric="l2"):
    """Centroids and PQ codebook trained once (by pylance's IndicesBuilder)."""
    b = lance.indices.IndicesBuilder(lance.dataset(uri), "v")
    ivf = b.train_ivf(num_partitions=6, sample_rate=32, distance_type=metric)
    kw = {"ivf_centroids": ivf.centroids, "metric": metric}
    if "PQ" in index_type:
        kw.update(pq_codebook=b.train_pq(ivf, num_subvectors=4, sample_rate=16).codebook,
                  num_sub_vectors=4)
    return kw


def _ids(ds, q, nprobes, refine_factor=None, k=10):
    t = ds.to_table(nearest={"column": "v", "q": q, "k": k, "nprobes": nprobes,
                             "refine_factor": refine_factor}, columns=["id", "_distance"])
    return t["id"].to_pylist(), t["_distance"].to_numpy()


def _same_both(uri, nprobes=(1, 3, 6), refine=(None, 3)):
    nds, pds = lancenb.dataset(uri), lance.dataset(uri)
    qs = (np.random.default_rng(2).standard_normal((5, DIM)) * 2).astype(np.float32)
    for q in qs:
        for n in nprobes:
            for rf in refine:
                a, da = _ids(nds, q, n, rf)
                b, db = _ids(pds, q, n, rf)
                assert a == b, (n, rf)
                np.testing.assert_allclose(da, db, rtol=1e-4, atol=1e-4)


@pytest.fixture
def uri(tmp_path):
    out = str(tmp_path / "ds")
    lance.write_dataset(_table(), out, max_rows_per_file=FRAG_ROWS)
    return out


def _entries(uri):
    """The index entries of the latest version, as pylance reads them."""
    ds = lance.dataset(uri)
    return sorted((e["name"], sorted(e["fragment_ids"]), e["type"], tuple(e["fields"]))
                  for e in ds.list_indices())


@pytest.mark.parametrize("index_type,metric", [("IVF_FLAT", "l2"), ("IVF_PQ", "l2"),
                                               ("IVF_PQ", "cosine"), ("IVF_SQ", "l2"),
                                               ("IVF_FLAT", "dot")])
def test_lancenb_segments_searched_by_pylance(uri, index_type, metric):
    model = _model(uri, index_type, metric)
    ds = lancenb.dataset(uri)
    segs = [ds.create_index_uncommitted("v", index_type, fragment_ids=[f], **model)
            for f in range(FRAGS)]
    merged = ds.merge_existing_index_segments(segs[1:3])
    ds.commit_existing_index_segments("v_idx", "v", [segs[0], merged, segs[3]])
    assert _entries(uri) == [("v_idx", [0], index_type, ("v",)),
                             ("v_idx", [1, 2], index_type, ("v",)),
                             ("v_idx", [3], index_type, ("v",))]
    _same_both(uri)


@pytest.mark.parametrize("index_type", ["IVF_FLAT", "IVF_PQ", "IVF_SQ"])
def test_pylance_segments_committed_by_lancenb(uri, index_type):
    model = _model(uri, index_type)
    pds = lance.dataset(uri)
    segs = [pds.create_index_uncommitted("v", index_type, fragment_ids=[f], **model)
            for f in range(FRAGS)]  # (pylance's PQ segments: row-major codes)
    ds = lancenb.dataset(uri)
    merged = ds.merge_existing_index_segments(segs[:2])  # lancenb merges pylance's
    ds.commit_existing_index_segments("v_idx", "v", [merged, *segs[2:]])
    assert [sorted(e["fragment_ids"]) for e in lance.dataset(uri).list_indices()] == \
        [[0, 1], [2], [3]]
    _same_both(uri)


@pytest.mark.parametrize("index_type", ["IVF_FLAT", "IVF_PQ", "IVF_SQ"])
def test_lancenb_segments_merged_and_committed_by_pylance(uri, index_type):
    model = _model(uri, index_type)
    ds = lancenb.dataset(uri)
    segs = [ds.create_index_uncommitted("v", index_type, fragment_ids=[f], **model)
            for f in range(FRAGS)]
    pds = lance.dataset(uri)
    merged = pds.merge_existing_index_segments(segs[:3])  # pylance merges lancenb's
    pds.commit_existing_index_segments("v_idx", "v", [merged, segs[3]])
    assert [sorted(e["fragment_ids"]) for e in lancenb.dataset(uri).list_indices()] == \
        [[0, 1, 2], [3]]
    _same_both(uri)


def test_merged_equals_single_shot_in_both(uri, tmp_path):
    """lancenb's merge of lancenb's segments and pylance's single-shot build with the
    same model find the same neighbours at the same distances, in either library."""
    model = _model(uri, "IVF_PQ")
    single = str(tmp_path / "single")
    shutil.copytree(uri, single)
    lance.dataset(single).create_index("v", "IVF_PQ", **model)
    ds = lancenb.dataset(uri)
    segs = [ds.create_index_uncommitted("v", "IVF_PQ", fragment_ids=[f], **model)
            for f in range(FRAGS)]
    ds.commit_existing_index_segments("v_idx", "v", [ds.merge_existing_index_segments(segs)])
    qs = (np.random.default_rng(8).standard_normal((5, DIM)) * 2).astype(np.float32)
    for q in qs:
        for n in (1, 4):
            want = _ids(lance.dataset(single), q, n)
            for lib in (lance, lancenb):
                got = _ids(lib.dataset(uri), q, n)
                assert got[0] == want[0]
                np.testing.assert_allclose(got[1], want[1], rtol=1e-4, atol=1e-4)


def test_commit_steps_give_pylance_entries(tmp_path):
    """The same commits (new segments beside, replacing, or partly covering existing
    ones) give the same index entries and errors in both libraries."""
    results = {}
    for name, lib in (("pylance", lance), ("lancenb", lancenb)):
        uri = str(tmp_path / name)
        lance.write_dataset(_table(), uri, max_rows_per_file=FRAG_ROWS)
        model = _model(uri, "IVF_FLAT")
        ds = lib.dataset(uri)

        def seg(frags, ds=ds, model=model):
            return ds.create_index_uncommitted("v", "IVF_FLAT", fragment_ids=frags, **model)

        s0, s1, s23 = seg([0]), seg([1]), seg([2, 3])
        steps = []
        ds.commit_existing_index_segments("x", "v", [s0])
        ds.commit_existing_index_segments("x", "v", [s1, s23])
        steps.append(_entries(uri))
        try:
            ds.commit_existing_index_segments("x", "v", [seg([1, 2])])
        except (ValueError, lancenb.errors.LanceError) as e:
            steps.append(("error", "orphan" in str(e)))
        ds.commit_existing_index_segments("x", "v", [seg([1, 2, 3])])
        steps.append(_entries(uri))
        ds.commit_existing_index_segments("y", "v", [seg([0, 1])])
        steps.append(_entries(uri))
        for bad in ([], [s0, seg([0, 1])]):
            try:
                ds.commit_existing_index_segments("z", "v", bad)
                steps.append("committed")
            except (ValueError, lancenb.errors.LanceError):
                steps.append("error")
        results[name] = steps
    assert results["lancenb"] == results["pylance"]
    assert results["lancenb"][1] == ("error", True)


@pytest.mark.parametrize("index_type", ["IVF_HNSW_PQ", "IVF_HNSW_SQ"])
@pytest.mark.parametrize("builder", ["lancenb", "pylance"])
def test_hnsw_segments_cross_merged(uri, index_type, builder):
    """HNSW segments built by one library, merged and committed by the other (graphs
    built again by the merger); with ``ef`` above the partition sizes both search every
    row of the probed partitions and agree."""
    model = _model(uri, index_type)
    lib, other = (lancenb, lance) if builder == "lancenb" else (lance, lancenb)
    ds = lib.dataset(uri)
    segs = [ds.create_index_uncommitted("v", index_type, fragment_ids=[f], **model)
            for f in range(FRAGS)]
    ods = other.dataset(uri)
    ods.commit_existing_index_segments("v_idx", "v",
                                       [ods.merge_existing_index_segments(segs[:3]), segs[3]])
    nds, pds = lancenb.dataset(uri), lance.dataset(uri)
    assert len(nds.list_indices()) == 2
    qs = (np.random.default_rng(3).standard_normal((4, DIM)) * 2).astype(np.float32)
    for q in qs:
        for n in (2, 6):
            req = {"column": "v", "q": q, "k": 10, "nprobes": n, "ef": 5000}
            a = nds.to_table(nearest=req, columns=["id"])["id"].to_pylist()
            b = pds.to_table(nearest=req, columns=["id"])["id"].to_pylist()
            assert a == b


@pytest.mark.parametrize("index_type,metric", [("IVF_PQ", "dot"), ("IVF_FLAT", "cosine"),
                                               ("IVF_SQ", "l2")])
def test_segmented_index_with_prefilter_and_appended_rows(uri, index_type, metric):
    """Segments committed separately, rows appended after (searched flat), a prefilter
    and a postfilter: lancenb and pylance return the same rows."""
    model = _model(uri, index_type, metric)
    ds = lancenb.dataset(uri)
    segs = [ds.create_index_uncommitted("v", index_type, fragment_ids=[f], **model)
            for f in range(FRAGS)]
    ds.commit_existing_index_segments("v_idx", "v", segs)
    extra = _table(600, seed=6)
    extra = extra.set_column(0, "id", pa.array(np.arange(600) + FRAG_ROWS * FRAGS))
    lancenb.write_dataset(extra, uri, mode="append")
    nds, pds = lancenb.dataset(uri), lance.dataset(uri)
    assert len(nds.get_fragments()) == FRAGS + 1
    qs = (np.random.default_rng(12).standard_normal((4, DIM)) * 2).astype(np.float32)
    for q in qs:
        for prefilter in (True, False):
            kw = {"nearest": {"column": "v", "q": q, "k": 10, "nprobes": 3},
                  "filter": "id % 3 = 0", "prefilter": prefilter, "columns": ["id"]}
            a = nds.to_table(**kw)["id"].to_pylist()
            b = pds.to_table(**kw)["id"].to_pylist()
            assert a == b, prefilter


@pytest.mark.parametrize("builder", ["lancenb", "pylance"])
def test_segmented_index_statistics_and_optimize(uri, builder):
    """Both libraries describe a distributed index alike (segments, rows per delta), and
    lancenb's optimize_indices folds its segments and appended rows into one segment
    that both search alike."""
    lib = lancenb if builder == "lancenb" else lance
    model = _model(uri, "IVF_PQ")
    ds = lib.dataset(uri)
    segs = [ds.create_index_uncommitted("v", "IVF_PQ", fragment_ids=[f], **model)
            for f in range(FRAGS)]
    ds.commit_existing_index_segments(
        "v_idx", "v", [ds.merge_existing_index_segments(segs[:2]), *segs[2:]])
    keys = ("index_type", "num_indices", "num_indexed_fragments", "num_indexed_rows",
            "num_unindexed_rows", "num_indexed_rows_per_delta")
    got = [{k: r.dataset(uri).stats.index_stats("v_idx")[k] for k in keys}
           for r in (lance, lancenb)]
    assert got[0] == got[1]
    assert got[0]["num_indexed_rows_per_delta"] == [2 * FRAG_ROWS, FRAG_ROWS, FRAG_ROWS]
    d = [[(x.name, len(x.segments), x.num_rows_indexed) for x in r.dataset(uri)
          .describe_indices()] for r in (lance, lancenb)]
    assert d[0] == d[1] == [("v_idx", 3, FRAGS * FRAG_ROWS)]
    extra = _table(500, seed=7)
    extra = extra.set_column(0, "id", pa.array(np.arange(500) + FRAG_ROWS * FRAGS))
    lancenb.write_dataset(extra, uri, mode="append")
    nds = lancenb.dataset(uri)
    nds.optimize.optimize_indices()
    assert [sorted(e["fragment_ids"]) for e in lance.dataset(uri).list_indices()] == \
        [list(range(FRAGS + 1))]
    _same_both(uri, nprobes=(2, 6), refine=(None,))
