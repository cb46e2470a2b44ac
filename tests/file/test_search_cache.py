"""The search cache: initialisation loads chunk tables, dictionaries and repetition
indices once per column; after it, a one-row take reads at most two ranges from a
full-zip or blob column and one per chunk touched from a mini-block column; full
scans do not fill the cache; its memory is reported per column."""

import numpy as np
import pyarrow as pa
import pytest

from lancenb.encodings.cache import SearchCache, scanning
from lancenb.file import LanceFileReader, LanceFileWriter

N = 20_000


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    rng = np.random.default_rng(0)
    cats = np.array(["red", "green", "blue", "cyan"])
    t = pa.table({
        "i": pa.array(rng.integers(0, 1 << 40, N)),  # mini-block, flat
        "cat": pa.array(cats[rng.integers(0, 4, N)]),  # mini-block + dictionary
        "l": pa.array([[int(x)] * (int(x) % 4) for x in rng.integers(0, 100, N)],
                      pa.list_(pa.int32())),  # mini-block + repetition index
        "vec": pa.FixedSizeListArray.from_arrays(
            pa.array(rng.standard_normal(N * 128).astype(np.float32)), 128),  # full-zip
        "txt": pa.array([rng.bytes(300) for _ in range(N)]),  # full-zip, variable
        "blob": pa.array([rng.bytes(int(k)) for k in rng.integers(0, 2000, N)],
                         pa.large_binary()),
    })
    schema = t.schema.set(5, pa.field("blob", pa.large_binary(),
                                      metadata={"lance-encoding:blob": "true"}))
    p = tmp_path_factory.mktemp("sc") / "t.lance"
    with LanceFileWriter(str(p), schema, data_cache_bytes=6 << 20) as w:
        w.write_batch(t.cast(schema))
    return str(p), t


@pytest.mark.parametrize("col", ["vec", "txt", "blob"])
def test_full_zip_and_blob_take_two_reads(path, col):
    p, t = path
    r = LanceFileReader(p, columns=[col])
    r.take_rows([0])  # initialisation
    for row in (1, 777, N // 2, N - 1):
        before = r._io.stats.reads
        assert r.take_rows([row]).to_table().column(0).equals(t.column(col).take([row]))
        assert r._io.stats.reads - before <= 2


@pytest.mark.parametrize("col", ["i", "cat", "l"])
def test_mini_block_take_one_read_per_chunk(path, col):
    p, t = path
    r = LanceFileReader(p, columns=[col])
    r.take_rows([0])  # initialisation
    for rows in ([5], [N - 1], [3, 4], [10, N // 2, N - 3]):
        before = r._io.stats.reads
        got = r.take_rows(rows).to_table().column(0)
        assert got.equals(t.column(col).take(rows))
        assert r._io.stats.reads - before <= len(rows)


def test_initialisation_is_one_read_per_column(path):
    p, _ = path
    r = LanceFileReader(p, columns=["l"])
    before = r._io.stats.reads
    r.prepare_take([0])
    assert r._io.stats.reads - before == 1
    r.prepare_take([0])
    assert r._io.stats.reads - before == 1


def test_scans_do_not_fill_the_cache_and_memory_is_per_column(path):
    p, t = path
    r = LanceFileReader(p)
    assert r.read_all().to_table().equals(t.cast(r.schema))
    assert r.search_cache_memory() == {}
    r.take_rows([1, 2])
    mem = r.search_cache_memory()
    assert set(mem) == {"i", "cat", "l.item", "blob"}  # full-zip pages need nothing cached
    assert all(v > 0 for v in mem.values())
    assert mem["cat"] > mem["i"]  # the dictionary is in there too
    assert r.read_all().to_table().equals(t.cast(r.schema))  # scans may use it


def test_small_cache_evicts_and_still_answers(path):
    p, t = path
    r = LanceFileReader(p, columns=["l", "cat"])
    r._backend._search_cache = SearchCache(capacity=2000)
    for d in [d for f in range(2) for col in r._backend._leaf_pages(f) for d in col]:
        for impl in [d.impl.search_state]:
            if impl is not None:
                impl.attach_cache(r._backend._search_cache, impl.cache_key)
    idx = np.random.default_rng(1).integers(0, N, 50)
    assert r.take_rows(idx).to_table().equals(t.select(["l", "cat"]).take(idx))
    assert r._backend._search_cache.nbytes <= 2000


def test_lru_unit():
    c = SearchCache(capacity=100)
    c.put((0, 0, "a"), np.zeros(40, np.uint8))
    c.put((1, 0, "b"), np.zeros(40, np.uint8))
    assert c.get((0, 0, "a")) is not None  # a is now the most recent
    c.put((1, 1, "c"), np.zeros(40, np.uint8))  # evicts b
    assert c.get((1, 0, "b")) is None and (0, 0, "a") in c
    assert c.memory_by_column() == {0: 40, 1: 40}
    c.put((2, 0, "huge"), np.zeros(1000, np.uint8))  # larger than the cache: not kept
    assert (2, 0, "huge") not in c and c.nbytes == 80
    with scanning():
        pass
