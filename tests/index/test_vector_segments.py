"""Distributed vector index builds (``lancenb/index/distributed.py``): segments built
over some fragments each (here in separate worker processes) with one trained model,
merged and committed, search as a single-shot build with the same model does; pylance
(the oracle) searches the result with the same neighbours."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import InvalidInputError
from lancenb.index.vector.ivf import open_vector_index

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
DIM, FRAG_ROWS, FRAGS = 16, 1500, 4


def _table(n=FRAG_ROWS * FRAGS, seed=3):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((12, DIM)) * 3
    v = (centers[rng.integers(0, 12, n)] + rng.standard_normal((n, DIM))).astype(np.float32)
    return pa.table({"id": np.arange(n),
                     "v": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), DIM)})


def _queries(n=6, seed=9):
    return (np.random.default_rng(seed).standard_normal((n, DIM)) * 2).astype(np.float32)


def _model(ds, index_type):
    """IVF centroids (and the PQ codebook) trained once on a sample."""
    b = lancenb.indices.IndicesBuilder(ds, "v")
    ivf = b.train_ivf(num_partitions=6, sample_rate=32)
    kw = {"ivf_centroids": ivf.centroids}
    if "PQ" in index_type:
        kw.update(pq_codebook=b.train_pq(ivf, num_subvectors=4, sample_rate=16).codebook,
                  num_sub_vectors=4)
    return kw


def _worker(uri, version, index_type, fragment_ids, model):
    """One worker: open the dataset version, build the segment of its fragments."""
    ds = lancenb.dataset(uri, version=version)
    return ds.create_index_uncommitted("v", index_type, fragment_ids=fragment_ids, **model)


def _search(ds, q, nprobes, k=10, refine_factor=None):
    t = ds.to_table(nearest={"column": "v", "q": q, "k": k, "nprobes": nprobes,
                             "refine_factor": refine_factor},
                    columns=["id", "_distance"])
    return t["id"].to_pylist(), t["_distance"].to_numpy()


@pytest.fixture
def uri(tmp_path):
    out = str(tmp_path / "ds")
    lancenb.write_dataset(_table(), out, max_rows_per_file=FRAG_ROWS)
    return out


def _copy_of(uri, tmp_path, name):
    import shutil

    dst = str(tmp_path / name)
    shutil.copytree(uri, dst)
    return dst


@pytest.mark.parametrize("index_type", ["IVF_FLAT", "IVF_PQ"])
def test_segments_from_processes_search_as_single_build(uri, tmp_path, index_type):
    ds = lancenb.dataset(uri)
    model = _model(ds, index_type)
    single = _copy_of(uri, tmp_path, "single")
    lancenb.dataset(single).create_index("v", index_type, **model)
    groups = [[f.fragment_id] for f in ds.get_fragments()]
    with cf.ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as pool:
        segs = list(pool.map(_worker, [uri] * len(groups), [ds.version] * len(groups),
                             [index_type] * len(groups), groups, [model] * len(groups)))
    assert [sorted(s.fragment_ids) for s in segs] == groups
    merged = ds.merge_existing_index_segments(segs[:2])
    assert sorted(merged.fragment_ids) == [0, 1]
    ds.commit_existing_index_segments("v_idx", "v", [merged, *segs[2:]])
    assert sorted(sorted(e["fragment_ids"]) for e in ds.list_indices()) == [[0, 1], [2], [3]]
    one, pyl, pyl_one = lancenb.dataset(single), lance.dataset(uri), lance.dataset(single)
    for q in _queries():
        for nprobes in (1, 3, 6):
            ids, d = _search(ds, q, nprobes)
            ids1, d1 = _search(one, q, nprobes)
            assert ids == ids1
            np.testing.assert_allclose(d, d1, rtol=1e-5, atol=1e-5)
            pids, pd = _search(pyl, q, nprobes)  # pylance on lancenb's three segments
            assert pids == ids
            np.testing.assert_allclose(pd, d, rtol=1e-4, atol=1e-4)
            assert _search(pyl_one, q, nprobes)[0] == ids


@pytest.mark.parametrize("index_type", ["IVF_FLAT", "IVF_PQ", "IVF_SQ"])
def test_merged_segment_holds_what_one_segment_over_the_union_holds(uri, index_type):
    ds = lancenb.dataset(uri)
    model = _model(ds, index_type)
    segs = [ds.create_index_uncommitted("v", index_type, fragment_ids=[f], **model)
            for f in (0, 1, 2)]
    merged = ds.merge_existing_index_segments(segs)
    whole = ds.create_index_uncommitted("v", index_type, fragment_ids=[0, 1, 2], **model)
    a = open_vector_index(ds, {"uuid": merged.uuid, "name": "m", "fields": ["v"],
                               "fragment_ids": {0, 1, 2}})
    b = open_vector_index(ds, {"uuid": whole.uuid, "name": "w", "fields": ["v"],
                               "fragment_ids": {0, 1, 2}})
    np.testing.assert_array_equal(a.centroids, b.centroids)
    np.testing.assert_array_equal(a.storage.lengths, b.storage.lengths)
    for p in range(a.num_partitions):
        s, n = int(a.storage.offsets[p]), int(a.storage.lengths[p])
        np.testing.assert_array_equal(a.storage.row_ids[s:s + n], b.storage.row_ids[s:s + n])
    if index_type != "IVF_SQ":  # (SQ: bounds of other rows, so other codes)
        np.testing.assert_array_equal(a.storage.data, b.storage.data)
    assert merged.fragment_ids == {0, 1, 2} and merged.index_version == 1


@pytest.mark.parametrize("index_type", ["IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_SQ"])
def test_multi_segment_search_equals_single_segment(uri, tmp_path, index_type):
    ds = lancenb.dataset(uri)
    model = _model(ds, index_type)
    other = _copy_of(uri, tmp_path, "other")
    segs = [ds.create_index_uncommitted("v", index_type, fragment_ids=[f], **model)
            for f in range(FRAGS)]
    ds.commit_existing_index_segments("v_idx", "v", segs)
    ods = lancenb.dataset(other)
    oseg = [ods.create_index_uncommitted("v", index_type, fragment_ids=[f], **model)
            for f in range(FRAGS)]
    ods.commit_existing_index_segments("v_idx", "v", [ods.merge_existing_index_segments(oseg)])
    assert len(ds.list_indices()) == FRAGS and len(ods.list_indices()) == 1
    exact = "SQ" not in index_type  # (merged SQ codes are in the union of the bounds)
    for q in _queries():
        for nprobes in (2, 6):
            rf = None if exact else 5  # (SQ: candidates re-ranked by exact distances)
            ids, d = _search(ds, q, nprobes, refine_factor=rf)
            ids1, d1 = _search(ods, q, nprobes, refine_factor=rf)
            if exact:
                assert ids == ids1
                np.testing.assert_allclose(d, d1, rtol=1e-5, atol=1e-5)
            else:
                assert len(set(ids) & set(ids1)) >= 9
        # every segment is searched with its index: all partitions = exact top 10
    truth = lancenb.dataset(uri)
    for q in _queries(3, seed=4):
        want = truth.to_table(nearest={"column": "v", "q": q, "k": 10, "use_index": False},
                              columns=["id"])["id"].to_pylist()
        got = _search(ds, q, 6, refine_factor=20)[0]
        assert len(set(got) & set(want)) >= 9


def test_segments_without_a_shared_model_commit_but_do_not_merge(uri):
    ds = lancenb.dataset(uri)
    segs = [ds.create_index_uncommitted("v", "IVF_PQ", fragment_ids=[f], num_partitions=4,
                                        num_sub_vectors=4, sample_rate=4) for f in (0, 1)]
    with pytest.raises(InvalidInputError, match="different IVF centroids"):
        ds.merge_existing_index_segments(segs)
    ds.commit_existing_index_segments("own", "v", segs)
    q = _queries(1)[0]
    ids, _ = _search(ds, q, 4)
    pids, _ = _search(lance.dataset(uri), q, 4)
    assert ids == pids and len(ids) == 10


def test_segment_checks(uri):
    ds = lancenb.dataset(uri)
    model = _model(ds, "IVF_FLAT")
    s0, s1 = (ds.create_index_uncommitted("v", "IVF_FLAT", fragment_ids=[f], **model)
              for f in (0, 1))
    s01 = ds.create_index_uncommitted("v", "IVF_FLAT", fragment_ids=[0, 1], **model)
    sq = ds.create_index_uncommitted("v", "IVF_SQ", fragment_ids=[2], **model)
    assert (s0.name, s0.fields, s0.dataset_version) == ("v_idx", [1], ds.version)
    assert ds.merge_existing_index_segments([s0]) is s0
    for bad, match in [([], "at least one"), ([s0, s0], "duplicate segment uuid"),
                       ([s0, s01], "overlapping fragment"), ([s0, sq], "IVF_SQ")]:
        with pytest.raises(InvalidInputError, match=match):
            ds.merge_existing_index_segments(bad)
    for bad, match in [([], "at least one"), ([s0, s01], "overlapping"),
                       ([s0, sq], "expected IVF_FLAT")]:
        with pytest.raises(InvalidInputError, match=match):
            ds.commit_existing_index_segments("x", "v", bad)
    with pytest.raises(InvalidInputError, match="expected keyed field"):
        ds.commit_existing_index_segments("x", "id", [s0])
    with pytest.raises(InvalidInputError, match="not fragments"):
        ds.create_index_uncommitted("v", "IVF_FLAT", fragment_ids=[7], **model)
    ds.commit_existing_index_segments("x", "v", [s0, s1])
    s23 = ds.create_index_uncommitted("v", "IVF_FLAT", fragment_ids=[2, 3], **model)
    ds.commit_existing_index_segments("x", "v", [s23])
    assert sorted(sorted(e["fragment_ids"]) for e in ds.list_indices()) == [[0], [1], [2, 3]]
    s12 = ds.create_index_uncommitted("v", "IVF_FLAT", fragment_ids=[1, 2], **model)
    with pytest.raises(InvalidInputError, match=r"orphan fragments \[3\]"):
        ds.commit_existing_index_segments("x", "v", [s12])
    s123 = ds.create_index_uncommitted("v", "IVF_FLAT", fragment_ids=[1, 2, 3], **model)
    ds.commit_existing_index_segments("x", "v", [s123])  # replaces [1] and [2, 3]
    assert sorted(sorted(e["fragment_ids"]) for e in ds.list_indices()) == [[0], [1, 2, 3]]
