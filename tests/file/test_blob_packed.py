"""Blob columns (``lance-encoding:blob``: values out of line, descriptors in the page)
and packed structs (``lance-encoding:packed``: children row by row in one column):
round trips, ranges and takes over several pages, the reads a blob take costs, and
damaged descriptors."""

import numpy as np
import pyarrow as pa
import pytest
from _tables import flip_page_bytes

from lancenb.errors import InvalidInputError, NotSupportedError
from lancenb.file import LanceFileReader, LanceFileWriter

BLOB = {"lance-encoding:blob": "true"}
PACKED = {"lance-encoding:packed": "true"}


def blob_table(n=900, seed=0, wide=True):
    rng = np.random.default_rng(seed)
    sizes = [300, 40 * 1024, 7, 2 * 1024 * 1024]
    blobs = [None if i % 7 == 3 else b"" if i % 11 == 0 else
             rng.bytes(sizes[i % 4] if i % 97 else sizes[3]) if i % 4 != 3 else rng.bytes(50)
             for i in range(n)]
    ps = pa.StructArray.from_arrays(
        [pa.array(np.arange(n, dtype=np.int32)), pa.array(np.arange(n) * 0.5),
         pa.array(np.arange(n) % 250, pa.uint8())], names=["x", "y", "z"])
    w = 300 if wide else 12  # pylance 14 cannot write packed rows of 256 bytes or more
    psn = pa.StructArray.from_arrays(
        [pa.array(np.arange(n, dtype=np.int16)), pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(w), n, [None, pa.py_buffer(rng.bytes(w * n))])],
        names=["k", "f"], mask=pa.array(np.arange(n) % 5 == 0))
    schema = pa.schema([pa.field("blob", pa.large_binary(), metadata=BLOB),
                        pa.field("ps", ps.type, metadata=PACKED),
                        pa.field("psn", psn.type, metadata={"packed": "TRUE"}),
                        pa.field("id", pa.int64())])
    return pa.table([pa.array(blobs, pa.large_binary()), ps, psn,
                     pa.array(np.arange(n))], schema=schema)


@pytest.fixture(scope="module")
def table():
    return blob_table()


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def version(request):
    return request.param


@pytest.fixture(scope="module", params=[None, 1 << 20], ids=["one-page", "small-pages"])
def written(request, table, version, tmp_path_factory):
    path = tmp_path_factory.mktemp("blob") / "t.lance"
    with LanceFileWriter(str(path), version=version, data_cache_bytes=request.param) as w:
        for i in range(0, table.num_rows, 250):
            w.write_batch(table.slice(i, 250))
    return str(path)


def test_read_all(written, table):
    r = LanceFileReader(written)
    assert r.read_all().to_table().equals(table)
    kinds = [c.pages[0].description for c in r.metadata().columns]
    assert kinds[0] == "blob"
    assert kinds[1] == "mini_block:packed_struct(flat(104))"
    assert kinds[2].startswith("mini_block:packed_struct(flat(2416))")


@pytest.mark.parametrize("start,n", [(0, 1), (0, 900), (899, 1), (255, 258), (600, 0)])
def test_read_range(written, table, start, n):
    assert LanceFileReader(written).read_range(start, n).to_table().equals(
        table.slice(start, n))


def test_take(written, table):
    idx = np.array([899, 0, 3, 3, 96, 97, 255, 256, 511, 512, 10])
    assert LanceFileReader(written).take_rows(idx).to_table().equals(table.take(idx))


def test_blob_take_costs_two_reads(written, table):
    r = LanceFileReader(written, columns=["blob"])
    r.take_rows([1])  # initialisation: every page's chunk table, one read
    for row in (97, 5, 898):
        before = r._io.stats.reads
        got = r.take_rows([row]).to_table()
        assert got.equals(table.select(["blob"]).take([row]))
        assert r._io.stats.reads - before <= 2


def test_blob_must_be_large_binary(tmp_path):
    schema = pa.schema([pa.field("b", pa.binary(), metadata=BLOB)])
    with pytest.raises(InvalidInputError):
        LanceFileWriter(str(tmp_path / "x.lance"), schema)


def test_packed_struct_with_strings_rejected(tmp_path):
    # in 2.1 (2.2, the default, packs string children as pylance does)
    schema = pa.schema([pa.field("p", pa.struct([("a", pa.string())]), metadata=PACKED)])
    with pytest.raises(NotSupportedError):
        LanceFileWriter(str(tmp_path / "x.lance"), schema, version="2.1")


def test_damaged_descriptors(tmp_path):
    t = blob_table(200, seed=3)
    path = tmp_path / "g.lance"
    with LanceFileWriter(str(path)) as w:
        w.write_batch(t)
    md = LanceFileReader(str(path)).metadata()
    buffers = [b for col in md.columns[:3] for b in col.pages[0].buffers]
    assert flip_page_bytes(tmp_path, path, buffers, 10, [0, 100, 199], seed=5) > 0
