"""Vectors (fixed-size lists of primitives): lancenb writes and reads them in 2.1/2.2,
with null rows and null items, in mini-block (narrow) and full-zip (wide) pages, on
their own and inside structs and lists; whole, by range and by take at chunk and page
edges. Damaged vector pages are a LanceError, never a crash."""

import numpy as np
import pyarrow as pa
import pytest
from _tables import flip_page_bytes

from lancenb.file import LanceFileReader, LanceFileWriter

N = 3000


def vectors(rng, n, dim, dtype=np.float32, null_rows=0.0, null_items=0.0):
    if np.issubdtype(dtype, np.floating):
        vals = rng.standard_normal(n * dim).astype(dtype)
    else:
        info = np.iinfo(dtype)
        vals = rng.integers(info.min, info.max, n * dim, dtype=dtype, endpoint=True)
    items = pa.array(vals, mask=rng.random(n * dim) < null_items if null_items else None)
    mask = pa.array(rng.random(n) < null_rows) if null_rows else None
    return pa.FixedSizeListArray.from_arrays(items, dim, mask=mask)


def vector_table(n=N, seed=5):
    rng = np.random.default_rng(seed)
    ragged = [None if i % 7 == 0 else [] if i % 11 == 0 else
              [rng.standard_normal(4).astype(np.float32).tolist()] * (i % 3 + 1)
              for i in range(n)]
    return pa.table({
        "v8": vectors(rng, n, 8),
        "v8n": vectors(rng, n, 8, null_rows=0.1, null_items=0.1),
        "v3i": vectors(rng, n, 3, np.int16, null_items=0.2),
        "v16b": vectors(rng, n, 16, np.int8, null_rows=0.3),
        "v128": vectors(rng, n, 128),
        "v128n": vectors(rng, n, 128, np.float64, null_rows=0.05, null_items=0.05),
        "v768h": vectors(rng, n, 768, np.float16),
        "v768n": vectors(rng, n, 768, np.float32, null_rows=0.1),
        "lv": pa.array(ragged, pa.list_(pa.list_(pa.float32(), 4))),
        "sv": pa.StructArray.from_arrays(
            [vectors(rng, n, 8, null_items=0.1), vectors(rng, n, 300, np.uint8, null_rows=0.2),
             pa.array(np.arange(n))], names=["v", "w", "k"],
            mask=pa.array(np.arange(n) % 5 == 0)),
        "lw": pa.array([None if i % 4 == 1 else [[i % 256] * 300] * (i % 3) for i in range(n)],
                       pa.list_(pa.list_(pa.uint8(), 300))),
    })


@pytest.fixture(scope="module")
def table():
    return vector_table()


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def version(request):
    return request.param


@pytest.fixture(scope="module", params=[None, 256 * 1024], ids=["one-page", "small-pages"])
def written(request, table, version, tmp_path_factory):
    path = tmp_path_factory.mktemp("vec") / "t.lance"
    with LanceFileWriter(str(path), version=version, data_cache_bytes=request.param) as w:
        for i in range(0, table.num_rows, 700):
            w.write_batch(table.slice(i, 700))
    return str(path)


def test_read_all(written, table):
    assert LanceFileReader(written).read_all().to_table().equals(table)


def test_layouts(written):
    md = LanceFileReader(written).metadata()
    enc = {f.name: None for f in md.schema}
    names = list(enc)
    first = [c.pages[0].description for c in md.columns]
    assert first[names.index("v8")].startswith("mini_block:fixed_size_list(flat(32))")
    assert first[names.index("v128")].startswith("full_zip:fixed_size_list(flat(32))")
    assert first[names.index("v768h")].startswith("full_zip:fixed_size_list(flat(16))")
    v8n = md.columns[names.index("v8n")].pages[0].layout.mini_block_layout
    assert v8n.value_compression.fixed_size_list.has_validity and v8n.num_buffers == 2


@pytest.mark.parametrize("start,n", [(0, 1), (0, N), (N - 1, 1), (127, 2), (255, 258),
                                     (1023, 1026), (1500, 0)])
def test_read_range(written, table, start, n):
    got = LanceFileReader(written).read_range(start, n).to_table()
    assert got.equals(table.slice(start, n))


def test_take(written, table):
    rng = np.random.default_rng(0)
    idx = np.concatenate([rng.integers(0, N, 200), [0, N - 1, 127, 128, 255, 256, 5, 5]])
    assert LanceFileReader(written).take_rows(idx).to_table().equals(table.take(idx))


def test_sliced_input(tmp_path, table):
    """Arrays with an offset (slices) are written from the right items."""
    t = table.slice(17, 1000)
    path = str(tmp_path / "s.lance")
    with LanceFileWriter(path) as w:
        w.write_batch(t)
    assert LanceFileReader(path).read_all().to_table().equals(t)


def test_constant_and_all_null_vectors(tmp_path, version):
    n = 2000
    t = pa.table({
        "c": pa.FixedSizeListArray.from_arrays(pa.array(np.tile(np.arange(8, dtype=np.float32),
                                                                n)), 8),
        "z": pa.nulls(n, pa.list_(pa.float32(), 8)),
        "lz": pa.array([None] * n, pa.list_(pa.list_(pa.int8(), 4))),
    })
    path = str(tmp_path / "c.lance")
    with LanceFileWriter(path, version=version) as w:
        w.write_batch(t)
    assert LanceFileReader(path).read_all().to_table().equals(t)
    assert LanceFileReader(path).take_rows([0, 1999, 5]).to_table().equals(t.take([0, 1999, 5]))


def test_unsupported_vectors_rejected(tmp_path):
    from lancenb.errors import NotSupportedError

    t = pa.table({"b": pa.array([["a", "b"]], pa.list_(pa.string(), 2))})
    with pytest.raises(NotSupportedError):
        with LanceFileWriter(str(tmp_path / "b.lance")) as w:
            w.write_batch(t)


def test_damaged_vector_pages(tmp_path):
    t = vector_table(600, seed=2).select(["v8n", "v128n", "lv", "sv"])
    path = tmp_path / "g.lance"
    with LanceFileWriter(str(path)) as w:
        w.write_batch(t)
    md = LanceFileReader(str(path)).metadata()
    buffers = [b for col in md.columns for page in col.pages for b in page.buffers]
    assert flip_page_bytes(tmp_path, path, buffers, 5, [0, 300, 599], seed=4) > 0
