"""IVF_HNSW_* builds partition by partition (bounded memory): the pieces give what the
whole-array steps gave, and the index pylance reads is the same."""

from __future__ import annotations

import json

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.index.vector import sq as sqmod
from lancenb.index.vector.build import encode_fragments, encode_grouped
from lancenb.index.vector.hnsw import build_graphs, graph_lengths, iter_graphs


def _quantize_ref(x, lo, hi):
    v = (x.astype(np.float64) - lo) * 255.0 / (hi - lo)
    v = np.nan_to_num(v, nan=0.0, posinf=255.0, neginf=0.0)
    return np.clip(np.trunc(v), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("shape", [(0, 4), (5,), (1000, 7), (sqmod.QUANTIZE_BLOCK // 3, 5)])
def test_quantize_in_blocks_matches_whole_array(shape):
    rng = np.random.default_rng(len(shape) + shape[0])
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    flat = x.reshape(-1)
    flat[::97], flat[::101], flat[::103] = np.nan, np.inf, -np.inf
    got = sqmod.quantize(x, -2.5, 3.25)
    assert got.shape == x.shape and got.dtype == np.uint8
    np.testing.assert_array_equal(got, _quantize_ref(x, -2.5, 3.25))
    np.testing.assert_array_equal(sqmod.quantize(x, 1.0, 1.0), np.zeros(shape, np.uint8))


@pytest.mark.parametrize("kind,metric,extra", [
    ("IVF_HNSW_SQ", "l2", {}), ("IVF_SQ", "cosine", {}), ("IVF_PQ", "l2", {}),
    ("IVF_FLAT", "dot", {}), ("IVF_FLAT", "hamming", {})])
def test_encode_grouped_is_a_stable_sort_of_the_encoded_batches(tmp_path, kind, metric,
                                                                extra):
    rng = np.random.default_rng(3)
    n, d, parts = 5000, 16, 7
    if metric == "hamming":
        x = rng.integers(0, 255, (n, d)).astype(np.uint8)
        vec = pa.FixedSizeListArray.from_arrays(pa.array(x.ravel(), pa.uint8()), d)
    else:
        x = rng.standard_normal((n, d)).astype(np.float32)
        x[::37] = np.nan  # skipped rows
        vec = pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), d)
    ds = lancenb.write_dataset(pa.table({"vector": vec}), str(tmp_path / "ds"),
                               max_rows_per_file=1500)
    frags = ds.get_fragments()
    cent = (rng.integers(0, 255, (parts, d)).astype(np.uint8) if metric == "hamming"
            else rng.standard_normal((parts, d)).astype(np.float32))
    codebook = rng.standard_normal((4, 256, d // 4)).astype(np.float32) \
        if kind == "IVF_PQ" else None
    width = 4 if kind == "IVF_PQ" else d
    dtype = np.float32 if kind == "IVF_FLAT" and metric != "hamming" else np.uint8
    args = (ds, "vector", frags, kind, metric, cent, codebook, (-1.5, 2.0), 8)
    batches = list(encode_fragments(*args))
    assert len(batches) > 1
    ids, labels, pay = (np.concatenate([b[i] for b in batches]) for i in range(3))
    order = np.argsort(labels, kind="stable")
    got = encode_grouped(*args, width=width, dtype=dtype)
    np.testing.assert_array_equal(got[0], ids[order])
    np.testing.assert_array_equal(got[1], labels[order])
    assert got[2].dtype == dtype and got[2].shape == (len(order), width)
    np.testing.assert_array_equal(got[2], pay[order])


def test_graph_lengths_and_partition_stream_match_the_whole_build():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1500, 6)).astype(np.float32)
    offsets, lengths = [0, 700, 700, 1100], [700, 0, 400, 400]
    table, meta, g_off, g_len = build_graphs(x, offsets, lengths, m=4)
    parts = list(iter_graphs(x, offsets, lengths, m=4,
                             decode=lambda s, n: x[s:s + n] * 1))
    assert [t is None for t, _ in parts] == [False, True, False, False]
    assert pa.concat_tables([t for t, _ in parts if t is not None]).equals(table)
    assert [one for _, one in parts] == json.loads(meta)
    got_len = [0 if t is None else len(t) for t, _ in parts]
    np.testing.assert_array_equal(g_len, got_len)
    np.testing.assert_array_equal(g_off, np.cumsum(got_len) - got_len)
    np.testing.assert_array_equal(graph_lengths(offsets, lengths, 4)[1], got_len)


@pytest.mark.parametrize("kind,extra", [("IVF_HNSW_SQ", {}),
                                        ("IVF_HNSW_PQ", {"num_sub_vectors": 4})])
def test_streamed_hnsw_build_is_read_alike_by_pylance(tmp_path, kind, extra):
    rng = np.random.default_rng(11)
    centers = rng.standard_normal((12, 16)).astype(np.float32) * 4
    x = centers[rng.integers(0, 12, 6000)] + rng.standard_normal((6000, 16)).astype(
        np.float32)
    table = pa.table({"id": np.arange(len(x)),
                      "vector": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), 16)})
    uri = str(tmp_path / "ds")
    ds = lancenb.write_dataset(table, uri, max_rows_per_file=2500)  # three fragments
    ds.create_index("vector", kind, num_partitions=6, **extra)
    ours, theirs = lancenb.dataset(uri), lance.dataset(uri)
    for q in x[rng.choice(len(x), 5, replace=False)] + 0.1:
        near = {"column": "vector", "q": q, "k": 10, "nprobes": 6}
        a = ours.to_table(nearest=near, columns=["id"]).column("id").to_pylist()
        b = theirs.to_table(nearest=near, columns=["id"]).column("id").to_pylist()
        assert a == b
    stats = theirs.stats.index_stats("vector_idx")
    assert stats["num_indexed_rows"] == len(x)


@pytest.mark.parametrize("stable", [False, True])
def test_scan_in_row_ranges_reads_every_live_row_once(tmp_path, monkeypatch, stable):
    from lancenb.index.vector import build

    rng = np.random.default_rng(8)
    x = rng.standard_normal((2300, 4)).astype(np.float32)
    table = pa.table({"id": np.arange(len(x)),
                      "vector": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), 4)})
    uri = str(tmp_path / "ds")
    ds = lancenb.write_dataset(table, uri, max_rows_per_file=1000,
                               enable_stable_row_ids=stable)
    ds.delete("id % 7 = 3 OR (id >= 1200 AND id < 1500)")
    ds = lancenb.dataset(uri)
    monkeypatch.setattr(build, "SCAN_BATCH", 128)
    got = list(build._scan(ds, "vector", ds.get_fragments()))
    assert len(got) > len(ds.get_fragments())
    want = ds.to_table(columns=["vector"], with_row_id=True)
    np.testing.assert_array_equal(np.concatenate([g[0] for g in got]),
                                  want.column("_rowid").to_numpy())
    np.testing.assert_array_equal(np.concatenate([g[1] for g in got]),
                                  build.as_matrix(want.column("vector"))[0])
