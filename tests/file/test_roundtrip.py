"""lancenb writes, lancenb reads: whole files, ranges and takes across chunks and pages."""

import numpy as np
import pyarrow as pa
import pytest
from _tables import assert_tables_equal, flat_table

import lancenb
from lancenb.errors import InvalidInputError, NotSupportedError, SchemaError
from lancenb.file import LanceFileReader, LanceFileWriter

N = 20_000


def write(path, table, *, batches=1, **kw):
    with LanceFileWriter(str(path), **kw) as w:
        step = max(1, -(-table.num_rows // batches))
        for i in range(0, max(table.num_rows, 1), step):
            w.write_batch(table.slice(i, step))
    return path


@pytest.fixture(scope="module")
def table():
    return flat_table(N, seed=7)


# two page budgets: pylance's default (one page per column here) and a small one
# that gives every column many pages
@pytest.fixture(scope="module", params=[None, 256 * 1024], ids=["default-pages", "small-pages"])
def written(request, table, tmp_path_factory):
    path = tmp_path_factory.mktemp("rt") / "t.lance"
    write(path, table, batches=40, data_cache_bytes=request.param)
    return str(path)


def test_read_all_equals_input(written, table):
    r = LanceFileReader(written)
    assert r.num_rows() == N
    assert_tables_equal(r.read_all().to_table(), table)


def test_small_budget_makes_several_pages(table, tmp_path):
    path = write(tmp_path / "p.lance", table, batches=40, data_cache_bytes=256 * 1024)
    md = LanceFileReader(str(path)).metadata()
    assert max(len(c.pages) for c in md.columns) > 3
    for col in md.columns:
        assert sum(p.num_rows for p in col.pages) == N
        positions = [p.buffers[0].position for p in col.pages if p.buffers]
        assert all(b.position % 64 == 0 for p in col.pages for b in p.buffers)
        assert positions == sorted(positions)


@pytest.mark.parametrize("start,n", [(0, 1), (0, N), (N - 1, 1), (4095, 2), (1023, 1026),
                                     (12_345, 3_210), (N // 2, 0)])
def test_read_range_equals_slice(written, table, start, n):
    got = LanceFileReader(written).read_range(start, n).to_table()
    assert_tables_equal(got, table.slice(start, n))


def test_take_rows_across_chunk_and_page_edges(written, table):
    r = LanceFileReader(written)
    edges = [0, 1, 255, 256, 511, 512, 1023, 1024, 2047, 2048, 4095, 4096, 8191, 8192, N - 1]
    rng = np.random.default_rng(3)
    for idx in [edges, sorted(rng.choice(N, 100, replace=False)),
                sorted(rng.choice(N, 1000, replace=False)), [N - 1], list(range(500, 700))]:
        assert_tables_equal(r.take_rows(idx).to_table(), table.take(idx))


def test_take_rows_unsorted_and_duplicates_answer_in_request_order(written, table):
    idx = [19_999, 5, 5, 0, 12_000, 4096, 5]
    assert_tables_equal(LanceFileReader(written).take_rows(idx).to_table(), table.take(idx))


def test_take_rows_out_of_range(written):
    with pytest.raises(InvalidInputError, match="out of range"):
        LanceFileReader(written).take_rows([0, N])


def test_projection_decodes_only_requested_columns(written, table):
    r = LanceFileReader(written, columns=["str", "i32"])
    assert_tables_equal(r.read_all().to_table(), table.select(["str", "i32"]))
    names = table.column_names
    assert set(r._backend._decoders) <= {names.index("str"), names.index("i32")}
    with pytest.raises(InvalidInputError, match="no column"):
        LanceFileReader(written, columns=["nope"])


def test_batches_have_requested_size(written):
    batches = list(LanceFileReader(written).read_all(batch_size=1000).to_batches())
    assert [b.num_rows for b in batches] == [1000] * (N // 1000)


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_tiny_files(tmp_path, n):
    t = flat_table(n, seed=n)
    path = tmp_path / "tiny.lance"
    with LanceFileWriter(str(path), t.schema) as w:
        w.write_batch(t)
    r = LanceFileReader(str(path))
    assert r.num_rows() == n
    assert_tables_equal(r.read_all().to_table(), t)


def test_memory_filesystem():
    t = flat_table(3000, seed=1)
    with LanceFileWriter("memory://lancenb-tests/a.lance") as w:
        w.write_batch(t)
    r = LanceFileReader("memory://lancenb-tests/a.lance")
    assert_tables_equal(r.read_all().to_table(), t)
    assert_tables_equal(r.take_rows([0, 2999]).to_table(), t.take([0, 2999]))


def test_writer_api(tmp_path):
    path = str(tmp_path / "api.lance")
    t = pa.table({"x": pa.array([1, 2, 3], pa.int64())})
    w = LanceFileWriter(path)
    gb = w.add_global_buffer(b"hello")
    assert gb == 1
    assert w.add_global_buffer(b"") == 2
    w.write_batch(t)
    w.write_batch(t.to_batches()[0])
    w.add_schema_metadata("owner", "me")
    assert w.close() == 6
    assert w.close() is None  # safe to repeat
    assert w.size_bytes and w.size_bytes > 0
    r = LanceFileReader(path)
    assert r.read_global_buffer(1) == b"hello"
    assert r.read_global_buffer(2) == b""
    assert r.schema.metadata[b"owner"] == b"me"
    md = r.metadata()
    assert md.num_rows == 6 and (md.major_version, md.minor_version) == (2, 2)  # default
    with pytest.raises(InvalidInputError):
        r.read_global_buffer(3)
    with pytest.raises(InvalidInputError, match="closed"):
        w.write_batch(t)


def test_schema_mismatch_and_unsupported_types(tmp_path):
    w = LanceFileWriter(str(tmp_path / "a.lance"), pa.schema([("x", pa.int32())]))
    with pytest.raises(SchemaError):
        w.write_batch(pa.table({"x": pa.array([1.0])}))
    w.close()
    with pytest.raises(NotSupportedError, match="need file version 2.2"):
        LanceFileWriter(str(tmp_path / "b.lance"),
                        pa.schema([("m", pa.map_(pa.string(), pa.int32()))]), version="2.1")
    assert not (tmp_path / "b.lance").exists()
    with pytest.raises((NotSupportedError, SchemaError)):
        LanceFileWriter(str(tmp_path / "u.lance"),
                        pa.schema([("u", pa.dense_union([pa.field("i", pa.int32())]))]))
    assert not (tmp_path / "u.lance").exists()
    with pytest.raises(InvalidInputError, match="unknown file version"):
        LanceFileWriter(str(tmp_path / "c.lance"), version="9.9")


def test_failed_context_leaves_no_file(tmp_path):
    path = tmp_path / "gone.lance"
    with pytest.raises(RuntimeError):
        with LanceFileWriter(str(path)) as w:
            w.write_batch(pa.table({"x": [1]}))
            raise RuntimeError("boom")
    assert not path.exists()


def test_version_2_2_roundtrip(tmp_path, table):
    path = write(tmp_path / "v22.lance", table, batches=3, version="2.2")
    r = LanceFileReader(str(path))
    assert r.metadata().minor_version == 2
    assert_tables_equal(r.read_all().to_table(), table)


def test_import_as_lance():
    lance = lancenb
    assert lance.file.LanceFileReader is LanceFileReader


def test_open_reads_metadata_in_at_most_two_requests(tmp_path):
    small = write(tmp_path / "small.lance", flat_table(1000, seed=2))
    r = LanceFileReader(str(small))
    assert r._io.stats.reads == 1
    # a schema whose metadata outgrows the first (64 KiB) tail read
    wide = pa.table({f"column_with_a_long_name_{i:05d}": pa.array([i], pa.int32())
                     for i in range(3000)})
    path = write(tmp_path / "wide.lance", wide)
    r = LanceFileReader(str(path))
    assert r._io.stats.reads == 2
    assert_tables_equal(r.read_all().to_table(), wide)
