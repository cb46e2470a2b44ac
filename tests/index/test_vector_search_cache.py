"""What indexed vector searches keep between queries, and that nothing kept goes stale
(``lancenb/index/vector/ivf.py``'s opened-index cache, ``search.py``'s prefilter ids per
dataset version): answers always equal pylance's on the same dataset version after a
new index replaces the old one, ``optimize_indices``, ``drop_index``, a delete, and
another process's commit; ``index_cache_size_bytes=0`` keeps nothing; the byte bound
drops the oldest index."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import NotSupportedError
from lancenb.index.vector import ivf, search

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

DIM = 16


def _table(n, seed=0, start=0):
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return pa.table({"id": np.arange(start, start + n),
                     "v": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), DIM)})


def _nearest(q, **kw):
    return {"column": "v", "q": q, "k": 10, "nprobes": 4, **kw}


def _same(ours, theirs, q, **kw):
    """lancenb's and pylance's answers for the same query: the same ids, distances
    equal to float32 rounding."""
    a = ours.to_table(nearest=_nearest(q), columns=["id"], **kw)
    b = theirs.to_table(nearest=_nearest(q), columns=["id"], **kw)
    assert a["id"].to_pylist() == b["id"].to_pylist()
    np.testing.assert_allclose(a["_distance"].to_numpy(), b["_distance"].to_numpy(),
                               rtol=1e-4, atol=1e-5)
    return a


def _uuid(ds):
    (entry,) = [e for e in ds.list_indices() if e["name"] == "v_idx"]
    return entry["uuid"]


@pytest.fixture
def uri(tmp_path):
    u = str(tmp_path / "ds")
    lance.write_dataset(_table(2000), u, max_rows_per_file=1000)
    return u


def test_a_replaced_index_is_searched_not_the_cached_one(uri):
    ours = lancenb.dataset(uri)
    q = np.full(DIM, 0.1, np.float32)
    ours.create_index("v", "IVF_PQ", num_partitions=4, num_sub_vectors=4)
    first = _uuid(ours)
    _same(ours, lance.dataset(uri), q)
    assert (ours.uri, first) in ivf.cached_indices()
    # the same object, a new index under the same name: exact (flat) distances now
    ours.create_index("v", "IVF_FLAT", num_partitions=4, replace=True)
    assert _uuid(ours) != first
    got = _same(ours, lance.dataset(uri), q)
    x = np.stack(ours.to_table(columns=["v"])["v"].to_numpy(zero_copy_only=False))
    ids = got["id"].to_numpy()
    np.testing.assert_allclose(got["_distance"].to_numpy(), ((x[ids] - q) ** 2).sum(1),
                               rtol=1e-5)


def test_optimize_and_drop_index_are_seen(uri):
    ours = lancenb.dataset(uri)
    ours.create_index("v", "IVF_FLAT", num_partitions=4)
    q = np.full(DIM, -0.2, np.float32)
    _same(ours, lance.dataset(uri), q)
    ours.insert(_table(500, seed=3, start=2000))
    before = {e["uuid"] for e in ours.list_indices()}
    _same(ours, lance.dataset(uri), q)  # the new rows searched flat
    ours.optimize.optimize_indices()
    assert {e["uuid"] for e in ours.list_indices()} != before
    _same(ours, lance.dataset(uri), q)
    ours.drop_index("v_idx")
    assert "ANNSubIndex" not in ours.scanner(nearest=_nearest(q)).explain_plan()
    _same(ours, lance.dataset(uri), q)


def test_prefilter_ids_are_kept_per_version(uri):
    ours = lancenb.dataset(uri)
    ours.create_index("v", "IVF_FLAT", num_partitions=4)
    q = np.full(DIM, 0.3, np.float32)
    for _ in range(2):  # the second search reuses the version's filtered ids
        _same(ours, lance.dataset(uri), q, filter="id % 3 = 0", prefilter=True)
    assert len(ours.snapshot.cache[search._PREFILTER_KEY]) == 1
    first = ours.to_table(nearest=_nearest(q), columns=["id"], filter="id % 3 = 0",
                          prefilter=True)["id"].to_pylist()
    lancenb.dataset(uri).delete(f"id = {first[0]}")
    ours.checkout_latest()  # the same object, moved to the new version
    got = _same(ours, lance.dataset(uri), q, filter="id % 3 = 0", prefilter=True)
    assert first[0] not in got["id"].to_pylist()
    assert all(i % 3 == 0 for i in got["id"].to_pylist())


def test_another_process_commit_is_seen(uri):
    ours = lancenb.dataset(uri)
    ours.create_index("v", "IVF_PQ", num_partitions=4, num_sub_vectors=4)
    q = np.full(DIM, 0.05, np.float32)
    _same(ours, lance.dataset(uri), q)
    script = textwrap.dedent(f"""
        import lance
        ds = lance.dataset({uri!r})
        ds.create_index("v", "IVF_FLAT", num_partitions=8, replace=True)
        ds.delete("id < 100")
    """)
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True)
    old = ours.to_table(nearest=_nearest(q), columns=["id"])  # its own version still
    assert old.num_rows == 10
    fresh = lancenb.dataset(uri)
    got = _same(fresh, lance.dataset(uri), q)
    assert min(got["id"].to_pylist()) >= 100
    ours.checkout_latest()
    _same(ours, lance.dataset(uri), q)


def test_no_index_cache_when_the_session_has_none(uri):
    lance.dataset(uri).create_index("v", "IVF_PQ", num_partitions=4, num_sub_vectors=4)
    ours = lancenb.dataset(uri, index_cache_size_bytes=0)
    key = (ours.uri, _uuid(ours))
    q = np.full(DIM, 0.1, np.float32)
    _same(ours, lance.dataset(uri), q)
    assert key not in ivf.cached_indices()
    _same(lancenb.dataset(uri), lance.dataset(uri), q)
    assert key in ivf.cached_indices()


def test_the_byte_bound_drops_the_oldest_index(uri, tmp_path, monkeypatch):
    other = str(tmp_path / "other")
    lance.write_dataset(_table(1000, seed=5), other)
    for u in (uri, other):
        lance.dataset(u).create_index("v", "IVF_FLAT", num_partitions=4)
    a, b = lancenb.dataset(uri), lancenb.dataset(other)
    q = np.zeros(DIM, np.float32)
    a.to_table(nearest=_nearest(q))
    ka = (a.uri, _uuid(a))
    size = ivf.open_vector_index(a, "v_idx").storage.nbytes()
    monkeypatch.setattr(ivf, "_CACHE_BYTES", size + 40_000)  # room for one of them
    b.to_table(nearest=_nearest(q))
    assert (b.uri, _uuid(b)) in ivf.cached_indices()
    assert ka not in ivf.cached_indices()
    _same(a, lance.dataset(uri), q)  # opened again, the same answers


def test_flat_storage_kept_transposed_reads_back_as_pylance(uri):
    """IVF_FLAT vectors are kept transposed per partition for the scan: the partition
    reader and index remapping after compaction still see the stored rows."""
    from lance.dataset import VectorIndexReader as PReader

    from lancenb.index.vector.reader import VectorIndexReader

    lance.dataset(uri).create_index("v", "IVF_FLAT", num_partitions=4)
    ours, theirs = VectorIndexReader(lancenb.dataset(uri), "v_idx"), PReader(
        lance.dataset(uri), "v_idx")
    for p in range(4):
        a, b = ours.read_partition(p, with_vector=True), theirs.read_partition(p, with_vector=True)
        assert a.column_names == b.column_names == ["_rowid", "flat"]
        assert a.equals(b.cast(a.schema))
    idx = ivf.open_vector_index(lancenb.dataset(uri), "v_idx")
    x = np.stack(lancenb.dataset(uri).to_table(columns=["v"])["v"].to_numpy(
        zero_copy_only=False))
    rows = idx.storage.row_ids  # addresses of a single-version dataset: fragment, offset
    pos = (rows >> np.uint64(32)).astype(np.int64) * 1000 + (rows & np.uint64(0xFFFFFFFF))
    np.testing.assert_array_equal(idx.storage.data, x[pos.astype(np.int64)])
    ours = lancenb.dataset(uri)
    ours.delete("id % 7 = 0")
    ours = lancenb.dataset(uri)
    ours.optimize.compact_files()
    q = np.full(DIM, 0.2, np.float32)
    _same(lancenb.dataset(uri), lance.dataset(uri), q)


def test_optimize_after_searching_a_pq_index(uri):
    """A search leaves arrays in the opened index's quantizer parameters (the
    transposed codebook): optimize_indices writes only the stored metadata."""
    ours = lancenb.dataset(uri)
    ours.create_index("v", "IVF_PQ", num_partitions=4, num_sub_vectors=4)
    q = np.full(DIM, 0.1, np.float32)
    _same(ours, lance.dataset(uri), q)
    lancenb.write_dataset(_table(300, seed=4, start=2000), uri, mode="append")
    ours = lancenb.dataset(uri)
    ours.optimize.optimize_indices()
    ours = lancenb.dataset(uri)
    assert ours.to_table(nearest=_nearest(q)).num_rows == 10
    _same(ours, lance.dataset(uri), q)


def test_pylance_hamming_ivf_flat_is_searched_through_its_index(tmp_path):
    u = str(tmp_path / "bin")
    data = np.random.default_rng(0).integers(0, 256, (1000, 16)).astype(np.uint8)
    lance.write_dataset(pa.table({"vector": pa.FixedSizeListArray.from_arrays(
        pa.array(data.ravel()), 16)}), u)
    lance.dataset(u).create_index("vector", index_type="IVF_FLAT", num_partitions=4,
                                  metric="hamming")
    ours, theirs = lancenb.dataset(u), lance.dataset(u)
    for i, nprobes in ((3, 1), (500, 2), (999, 4)):
        nn = {"column": "vector", "q": data[i], "k": 10, "metric": "hamming",
              "nprobes": nprobes}
        assert "ANNSubIndex" in ours.scanner(nearest=nn).explain_plan()
        a = ours.to_table(nearest=nn, with_row_id=True, columns=[])
        b = theirs.to_table(nearest=nn, with_row_id=True, columns=[])
        assert a["_distance"].to_pylist() == b["_distance"].to_pylist()
        # (whole-number distances tie often: each library orders ties its own way)
        cut = a["_distance"][9].as_py()
        below = [{r for r, d in zip(t["_rowid"].to_pylist(), t["_distance"].to_pylist())
                  if d < cut} for t in (a, b)]
        assert below[0] == below[1]
        assert a["_distance"][0].as_py() == 0  # the row itself


def test_index_cache_size_entries_are_deprecated_as_pylance(uri):
    lance.dataset(uri).create_index("v", "IVF_FLAT", num_partitions=4)
    with pytest.warns(DeprecationWarning, match="index_cache_size_bytes"):
        ours = lancenb.dataset(uri, index_cache_size=0)
    assert ours.session().index_cache_size_bytes == 0
    key = (ours.uri, _uuid(ours))
    _same(ours, lance.dataset(uri), np.zeros(DIM, np.float32))
    assert key not in ivf.cached_indices()
    with pytest.warns(DeprecationWarning):
        assert lancenb.dataset(uri, index_cache_size=3).session().index_cache_size_bytes \
            == 3 * 20 * 1024 * 1024


def test_lancenb_hamming_ivf_flat_is_searched_by_pylance(tmp_path):
    u = str(tmp_path / "bin")
    data = np.random.default_rng(1).integers(0, 256, (1000, 16)).astype(np.uint8)
    lancenb.write_dataset(pa.table({"vector": pa.FixedSizeListArray.from_arrays(
        pa.array(data.ravel()), 16)}), u)
    lancenb.dataset(u).create_index("vector", index_type="IVF_FLAT", num_partitions=4,
                                    metric="hamming")
    theirs = lance.dataset(u)
    stats = theirs.stats.index_stats("vector_idx")
    assert stats["index_type"] == "IVF_FLAT"
    assert stats["indices"][0]["metric_type"] == "hamming"
    assert stats["num_indexed_rows"] == 1000
    for i in (3, 500):
        nn = {"column": "vector", "q": data[i], "k": 10, "metric": "hamming", "nprobes": 2}
        a = lancenb.dataset(u).to_table(nearest=nn, with_row_id=True, columns=[])
        b = theirs.to_table(nearest=nn, with_row_id=True, columns=[])
        assert a["_distance"].to_pylist() == b["_distance"].to_pylist()
        assert a["_distance"][0].as_py() == 0
    with pytest.raises(NotSupportedError, match="IVF_FLAT"):
        lancenb.dataset(u).create_index("vector", index_type="IVF_PQ", num_partitions=4,
                                        num_sub_vectors=4, metric="hamming", replace=True)


def _hit_rates(open_ds, uri, rng):
    """Hit rates of a session: fresh, after one query, after 50 of one query, after
    30 new queries (nprobes 8 of 64 partitions)."""
    out = []
    ds = open_ds(uri, index_cache_size_bytes=0)
    out.append(ds._ds.index_cache_hit_rate())
    ds.to_table(nearest=_nearest(rng.standard_normal(DIM), nprobes=8))
    out.append(ds._ds.index_cache_hit_rate())
    ds = open_ds(uri)
    q = rng.standard_normal(DIM)
    for _ in range(50):
        ds.to_table(nearest=_nearest(q, nprobes=8))
    out.append(ds._ds.index_cache_hit_rate())
    for _ in range(30):
        ds.to_table(nearest=_nearest(rng.standard_normal(DIM), nprobes=8))
    out.append(ds._ds.index_cache_hit_rate())
    return out


@pytest.mark.parametrize("builder", ["pylance", "lancenb"])
def test_index_cache_hit_rate_as_pylance(tmp_path, builder):
    """No cache: 0 hits; one query repeated: nearly all hits (each partition missed
    once); new queries probe partitions not seen yet: the rate drops. Both libraries."""
    uri = str(tmp_path / "ds")
    lance.write_dataset(_table(64 * 256), uri)  # (pylance trains 64 partitions of it)
    lib = lance if builder == "pylance" else lancenb
    lib.dataset(uri).create_index("v", index_type="IVF_PQ", num_partitions=64,
                                  num_sub_vectors=4)
    for open_ds in (lance.dataset, lancenb.dataset):
        rates = _hit_rates(open_ds, uri, np.random.default_rng(3))
        assert rates[0] == 0.0 and rates[1] == 0.0, (open_ds, rates)
        assert rates[2] > 0.95, (open_ds, rates)
        assert rates[3] < rates[2], (open_ds, rates)


def test_index_cache_hit_rate_is_per_session_and_bounded(uri):
    """A dataset opened afresh has a session of its own (rate 0 again); one sharing the
    session shares its entries; a session bound too small for a partition never hits."""
    lancenb.dataset(uri).create_index("v", index_type="IVF_FLAT", num_partitions=8)
    q = np.ones(DIM, np.float32)
    ds = lancenb.dataset(uri)
    ds.to_table(nearest=_nearest(q))
    ds.to_table(nearest=_nearest(q))
    assert ds.index_cache_hit_rate() == pytest.approx(0.5)  # 5 lookups missed, 5 hit
    again = lancenb.dataset(uri, session=ds.session())
    again.to_table(nearest=_nearest(q))
    assert again.index_cache_hit_rate() == pytest.approx(10 / 15)
    assert lancenb.dataset(uri).index_cache_hit_rate() == 0.0
    tiny = lancenb.dataset(uri, index_cache_size_bytes=16)
    for _ in range(3):
        tiny.to_table(nearest=_nearest(q))
    assert tiny.index_cache_hit_rate() == 0.0


@pytest.mark.parametrize("kind", ["IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_SQ"])
def test_probed_rows_scored_on_two_threads_as_on_one(uri, kind, monkeypatch):
    """The probed partitions split in two halves scored on two threads (forced here
    for any size) give the very answers of one call, and pylance's on the same index."""
    from lancenb.index.vector import flat

    kw = {"num_sub_vectors": 4} if "PQ" in kind else {}
    lancenb.dataset(uri).create_index("v", index_type=kind, num_partitions=8, **kw)
    rng = np.random.default_rng(5)
    for q in rng.standard_normal((4, DIM)).astype(np.float32):
        nn = {"column": "v", "q": q, "k": 10, "nprobes": 5}
        monkeypatch.setattr(flat, "_SPLIT_BYTES", 1 << 62)
        one = lancenb.dataset(uri).to_table(nearest=nn, columns=["id"])
        monkeypatch.setattr(flat, "_SPLIT_BYTES", 0)
        two = lancenb.dataset(uri).to_table(nearest=nn, columns=["id"])
        assert one.equals(two)
        theirs = lance.dataset(uri).to_table(nearest=nn, columns=["id"])
        if "HNSW" not in kind:  # (pylance walks the graph: near-ties may differ)
            assert two["id"].to_pylist() == theirs["id"].to_pylist()
