"""IVF_HNSW_* searches walk each probed partition's graph (lancenb.index.vector.hnsw),
on indices either library built, next to pylance on the same data: recall against
exact neighbours, the same neighbours as pylance at a wide beam, prefilters (a
prefiltered search still gives k rows when k pass, a sparse one scores the partition
row by row), deletions, refine_factor, the three metrics, and pylance's ``ef < k``
refusal."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import InvalidInputError
from lancenb.index.vector.ivf import open_vector_index

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

N, DIM = 3000, 16


def _data(seed=3):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((8, DIM)) * 3
    v = (centers[rng.integers(0, 8, N)] + rng.standard_normal((N, DIM))).astype(np.float32)
    table = pa.table({"id": np.arange(N),
                      "v": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), DIM)})
    queries = v[rng.integers(0, N, 8)] + 0.3 * rng.standard_normal((8, DIM)).astype(np.float32)
    return table, v, queries.astype(np.float32)


def _build(tmp_path, built_by, index_type="IVF_HNSW_SQ", metric="l2"):
    table, v, queries = _data()
    uri = str(tmp_path / f"{built_by}_{index_type}_{metric}")
    lance.write_dataset(table, uri, max_rows_per_file=1000)
    kw = dict(num_partitions=4, metric=metric)
    if "PQ" in index_type:
        kw["num_sub_vectors"] = 4
    (lance if built_by == "pylance" else lancenb).dataset(uri).create_index(
        "v", index_type, **kw)
    return uri, v, queries


def _ids(ds, q, k=10, **nearest):
    t = ds.to_table(nearest={"column": "v", "q": q, "k": k, **nearest}, columns=["id"])
    return t["id"].to_pylist(), t["_distance"].to_numpy()


@pytest.mark.parametrize("built_by", ["pylance", "lancenb"])
@pytest.mark.parametrize("index_type", ["IVF_HNSW_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ"])
def test_walk_recall_and_wide_beam_agrees_with_pylance(tmp_path, built_by, index_type):
    uri, v, queries = _build(tmp_path, built_by, index_type)
    ds, pds = lancenb.dataset(uri), lance.dataset(uri)
    idx = open_vector_index(ds, ds.list_indices()[0])
    assert idx.graphs is not None
    recall, their_recall, agree = [], [], []
    for q in queries:
        exact = set(np.argsort(((v - q) ** 2).sum(1))[:10].tolist())
        ours, d = _ids(ds, q, nprobes=4)
        assert len(ours) == 10 and np.all(np.diff(d) >= 0)
        recall.append(len(exact & set(ours)) / 10)
        their_recall.append(len(exact & set(_ids(pds, q, nprobes=4)[0])) / 10)
        wide, _ = _ids(ds, q, nprobes=2, ef=400)
        theirs, _ = _ids(pds, q, nprobes=2, ef=400)
        agree.append(len(set(wide) & set(theirs)) / 10)
    # the default beam (ef = k + k // 2) finds about what pylance's does
    assert np.mean(recall) >= np.mean(their_recall) - 0.05
    assert np.mean(agree) >= 0.95


def _partition_scan(idx, q, parts, k):
    """The exact top ``k`` of partitions ``parts`` by the storage's SQ distance (what the
    walk approximates), as row ids."""
    from lancenb.index.vector import sq as sqmod

    st = idx.storage
    rows = np.concatenate([np.arange(st.offsets[p], st.offsets[p] + st.lengths[p])
                           for p in parts])
    d = sqmod.partition_distances(st.params, st.data[rows], q, "l2")
    order = np.lexsort((st.row_ids[rows], d))[:k]
    return st.row_ids[rows][order]


def test_beam_as_wide_as_the_partition_is_the_exhaustive_scan(tmp_path):
    uri, v, queries = _build(tmp_path, "lancenb")
    ds = lancenb.dataset(uri)
    idx = open_vector_index(ds, ds.list_indices()[0])
    for q in queries:
        parts = np.argsort(((idx.centroids - q) ** 2).sum(1), kind="stable")[:2]
        ids, _ = idx.search(q, 10, nprobes=2, ef=N)
        assert ids.tolist() == _partition_scan(idx, q, parts, 10).tolist()


@pytest.mark.parametrize("built_by", ["pylance", "lancenb"])
@pytest.mark.parametrize("filt", ["id < 40", "id % 2 = 0", "id % 25 = 0"])
def test_prefilter_gives_k_rows_as_pylance(tmp_path, built_by, filt):
    uri, v, queries = _build(tmp_path, built_by)
    ds, pds = lancenb.dataset(uri), lance.dataset(uri)
    ids = np.arange(N)
    kept = set(ids[{"id < 40": ids < 40, "id % 2 = 0": ids % 2 == 0,
                    "id % 25 = 0": ids % 25 == 0}[filt]].tolist())
    for q in queries[:4]:
        for nprobes in (1, 4):  # one partition (as many rows as pass there), or all
            t = ds.to_table(nearest={"column": "v", "q": q, "k": 10, "nprobes": nprobes},
                            filter=filt, prefilter=True, columns=["id"])
            p = pds.to_table(nearest={"column": "v", "q": q, "k": 10, "nprobes": nprobes},
                             filter=filt, prefilter=True, columns=["id"])
            ours, theirs = t["id"].to_pylist(), p["id"].to_pylist()
            assert len(ours) == len(theirs) and set(ours) <= kept
            assert len(set(ours) & set(theirs)) >= len(ours) - 2
        assert len(ours) == 10  # every partition probed: k rows, since k pass
        if filt != "id % 2 = 0":  # sparse: scored row by row, the exact answer
            exact = sorted(kept, key=lambda i: float(((v[i] - q) ** 2).sum()))[:10]
            assert len(set(ours) & set(exact)) >= 9


def test_deleted_rows_never_returned(tmp_path):
    uri, v, queries = _build(tmp_path, "lancenb")
    lance.dataset(uri).delete("id % 3 = 0")
    ds, pds = lancenb.dataset(uri), lance.dataset(uri)
    for q in queries[:4]:
        ours, _ = _ids(ds, q, nprobes=2)
        theirs, _ = _ids(pds, q, nprobes=2)
        assert len(ours) == 10 and all(i % 3 for i in ours)
        assert len(set(ours) & set(theirs)) >= 7


@pytest.mark.parametrize("built_by", ["pylance", "lancenb"])
def test_refine_gives_exact_distances(tmp_path, built_by):
    uri, v, queries = _build(tmp_path, built_by)
    ds, pds = lancenb.dataset(uri), lance.dataset(uri)
    for q in queries[:4]:
        ours, d = _ids(ds, q, nprobes=4, refine_factor=3)
        theirs, _ = _ids(pds, q, nprobes=4, refine_factor=3)
        np.testing.assert_allclose(d, ((v[ours] - q) ** 2).sum(1), rtol=1e-5)
        assert len(set(ours) & set(theirs)) >= 9


@pytest.mark.parametrize("metric", ["cosine", "dot"])
@pytest.mark.parametrize("index_type", ["IVF_HNSW_FLAT", "IVF_HNSW_SQ", "IVF_HNSW_PQ"])
def test_other_metrics_agree_with_pylance(tmp_path, metric, index_type):
    uri, v, queries = _build(tmp_path, "pylance", index_type, metric)
    ds, pds = lancenb.dataset(uri), lance.dataset(uri)
    agree = []
    for q in queries:
        ours, d = _ids(ds, q, nprobes=2, ef=300)
        theirs, pd = _ids(pds, q, nprobes=2, ef=300)
        agree.append(len(set(ours) & set(theirs)) / 10)
        np.testing.assert_allclose(np.sort(d)[:5], np.sort(pd)[:5], rtol=1e-3, atol=1e-4)
    assert np.mean(agree) >= 0.9


def test_ef_below_k_is_refused_as_pylance(tmp_path):
    uri, v, queries = _build(tmp_path, "lancenb")
    with pytest.raises(ValueError, match="ef must be greater than or equal to k"):
        lance.dataset(uri).to_table(nearest={"column": "v", "q": queries[0], "k": 10,
                                             "ef": 5})
    with pytest.raises(InvalidInputError, match="ef must be greater than or equal to k"):
        lancenb.dataset(uri).to_table(nearest={"column": "v", "q": queries[0], "k": 10,
                                               "ef": 5})


def test_lancenb_graph_has_levels_pylance_walks(tmp_path):
    """lancenb's build draws HNSW levels (a node on level l with chance m**-l) and links
    each level's nodes among themselves; the entry point is on the top level; pylance
    opens and walks it (the recall test above covers its answers)."""
    import json

    from lancenb.index.vector.hnsw import build_graphs

    rng = np.random.default_rng(0)
    x = rng.standard_normal((3000, 8)).astype(np.float32)
    table, meta, g_off, g_len = build_graphs(x, [0, 1000], [1000, 2000], m=4)
    metas = [json.loads(m) for m in json.loads(meta)]
    vid = table["__vector_id"].to_numpy()
    nbrs = table["__neighbors"].to_pylist()
    for p, (first, count, n) in enumerate(zip(g_off.tolist(), g_len.tolist(), [1000, 2000])):
        lv = metas[p]["level_offsets"]
        assert lv[1] == n and lv[-1] == count and lv[2] > lv[1]  # level 1 is not empty
        below = set(range(n))
        for level in range(len(lv) - 1):
            nodes = vid[first + lv[level]:first + lv[level + 1]].tolist()
            assert set(nodes) <= below and nodes == sorted(nodes)
            for row in range(lv[level], lv[level + 1]):
                assert set(nbrs[first + row]) <= set(nodes) - {int(vid[first + row])}
            if nodes:
                top = nodes
            below = set(nodes)
        assert metas[p]["entry_point"] in top
