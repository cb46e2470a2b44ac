"""Both directions against the reference: pylance reads lancenb's files, lancenb
reads pylance's. pylance (``import lance``) is the oracle here and nowhere else."""

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from _tables import assert_tables_equal, flat_table

from lancenb.errors import NotSupportedError
from lancenb.file import LanceFileReader, LanceFileWriter

lance_file = pytest.importorskip("lance.file")

N = 12_000


def lancenb_write(path, table, *, batches=1, version="2.1", **kw):
    # 2.1 unless told otherwise, as pylance_write below (both pinned: the writers'
    # defaults are 2.2)
    with LanceFileWriter(str(path), table.schema, version=version, **kw) as w:
        step = max(1, -(-table.num_rows // batches))
        for i in range(0, table.num_rows, step):
            w.write_batch(table.slice(i, step))
    return str(path)


def pylance_write(path, table, version="2.1"):
    w = lance_file.LanceFileWriter(str(path), table.schema, version=version)
    w.write_batch(table)
    w.close()
    return str(path)


def page_kinds(path, column):
    r = LanceFileReader(path, columns=[column])
    return [d.describe() for d in r._backend._column_pages(r._projection[0])]


# -- lancenb writes, pylance reads ------------------------------------------------

@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("budget", [None, 200 * 1024], ids=["default-pages", "small-pages"])
def test_pylance_reads_lancenb_flat_types(tmp_path, version, budget):
    t = flat_table(N, seed=11)
    path = lancenb_write(tmp_path / "a.lance", t, batches=24, version=version,
                         data_cache_bytes=budget)
    r = lance_file.LanceFileReader(path)
    assert r.num_rows() == N
    assert_tables_equal(r.read_all().to_table(), t)
    idx = sorted(np.random.default_rng(0).choice(N, 500, replace=False).tolist())
    assert_tables_equal(r.take_rows(idx).to_table(), t.take(idx))
    assert_tables_equal(r.read_range(4000, 5000).to_table(), t.slice(4000, 5000))


@pytest.mark.parametrize("n", [0, 1, 3])
def test_pylance_reads_tiny_lancenb_files(tmp_path, n):
    t = flat_table(n, seed=n)
    path = lancenb_write(tmp_path / "t.lance", t)
    assert_tables_equal(lance_file.LanceFileReader(path).read_all().to_table(), t)


@pytest.mark.parametrize("n", [0, 1, 5, 1000])
def test_bytes_identical_to_pylance(tmp_path, n):
    """Where both pick the same encodings (flat, variable, bitpacked), the files are
    byte for byte the same."""
    rng = np.random.default_rng(n)
    t = pa.table({
        "i64": pa.array(rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64)),
        "u8": pa.array(rng.integers(0, 256, n, dtype=np.uint8)),
        "s": pa.array([f"{x:x}"[:3] for x in rng.integers(0, 2**40, n)]),
        "b": pa.array(rng.random(n) < 0.5),
        # bitpacked values and out-of-line bitpacked definition levels
        "i32": pa.array(rng.integers(0, 1000, n).astype(np.int32)),
        "seq": pa.array(np.arange(n, dtype=np.int64)),
        "nullable": pa.array(rng.integers(0, 9, n), mask=rng.random(n) < 0.2),
        "f32": pa.array(rng.random(n).astype(np.float32)),
        "i16": pa.array(rng.integers(-50, 50, n).astype(np.int16)),
    })
    ours = lancenb_write(tmp_path / "ours.lance", t)
    theirs = pylance_write(tmp_path / "theirs.lance", t)
    assert Path(ours).read_bytes() == Path(theirs).read_bytes()


def test_pylance_reads_non_ascii_and_empty_strings(tmp_path):
    vals = ["", "ä", "日本", "", "\x00", "🎉" * 50, None, ""] * 700
    t = pa.table({"s": pa.array(vals), "ls": pa.array(vals, pa.large_string()),
                  "b": pa.array([v.encode() if v is not None else None for v in vals])})
    path = lancenb_write(tmp_path / "s.lance", t)
    assert_tables_equal(lance_file.LanceFileReader(path).read_all().to_table(), t)


def test_pylance_reads_metadata_and_global_buffers(tmp_path):
    path = str(tmp_path / "g.lance")
    t = pa.table({"x": pa.array([1, 2, 3], pa.int32())})
    with LanceFileWriter(path) as w:
        assert w.add_global_buffer(b"first") == 1
        w.write_batch(t)
        w.add_schema_metadata("k", "v")
    r = lance_file.LanceFileReader(path)
    assert r.read_global_buffer(1) == b"first"
    assert r.metadata().schema.metadata[b"k"] == b"v"
    theirs, ours = r.metadata(), LanceFileReader(path).metadata()
    for attr in ("num_rows", "num_data_bytes", "num_column_metadata_bytes",
                 "num_global_buffer_bytes", "major_version", "minor_version"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert [(b.position, b.size) for b in ours.global_buffers] == [
        (b.position, b.size) for b in theirs.global_buffers]
    assert [[(b.position, b.size) for b in p.buffers] for p in ours.columns[0].pages] == [
        [(b.position, b.size) for b in p.buffers] for p in theirs.columns[0].pages]


# -- pylance writes, lancenb reads ------------------------------------------------

def _pylance_flat_cases(n):
    """Columns for which pylance 14 itself chooses flat/variable mini-block pages."""
    rng = np.random.default_rng(5)
    none = {"lance-encoding:compression": "none"}
    return pa.table({
        "i64": pa.array(rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64)),
        "u64": pa.array(rng.integers(0, 2**64 - 1, n, dtype=np.uint64)),
        "u8": pa.array(rng.integers(0, 256, n, dtype=np.uint8)),
        "bool": pa.array(rng.random(n) < 0.5),
        "bin": pa.array([bytes(rng.integers(0, 256, int(k), dtype=np.uint8))
                         for k in rng.integers(0, 30, n)]),
        "s_short": pa.array([f"{x:x}"[:4] for x in rng.integers(0, 2**40, n)]),
        "f32_none": pa.array(rng.random(n).astype(np.float32)),
        "i32_none": pa.array(rng.integers(0, 100, n, dtype=np.int32)),
        "s_none": pa.array([f"v{x}" for x in rng.integers(0, 10**9, n)]),
        "all_null": pa.nulls(n, pa.float64()),
    }).cast(pa.schema([
        ("i64", pa.int64()), ("u64", pa.uint64()), ("u8", pa.uint8()), ("bool", pa.bool_()),
        ("bin", pa.binary()), ("s_short", pa.string()),
        pa.field("f32_none", pa.float32(), metadata=none),
        pa.field("i32_none", pa.int32(), metadata=none),
        pa.field("s_none", pa.string(), metadata=none), ("all_null", pa.float64())]))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_lancenb_reads_pylance_flat_and_variable_pages(tmp_path, version):
    t = _pylance_flat_cases(N)
    path = pylance_write(tmp_path / "p.lance", t, version=version)
    for name in t.column_names:
        kinds = set(page_kinds(path, name))
        if name == "all_null":
            assert kinds <= {"constant"}, kinds
        else:
            assert all(k.startswith("mini_block:flat(") or k.startswith("mini_block:variable(")
                       for k in kinds), (name, kinds)
    r = LanceFileReader(path)
    assert_tables_equal(r.read_all().to_table(), t)
    idx = [0, 1, 1023, 1024, 4095, 4096, N - 1]
    assert_tables_equal(r.take_rows(idx).to_table(), t.take(idx))
    assert_tables_equal(r.read_range(333, 7777).to_table(), t.slice(333, 7777))


def test_lancenb_reads_pylance_tiny_and_empty_files(tmp_path):
    for n in (0, 1):
        t = pa.table({"a": pa.array(range(n), pa.int64()), "s": pa.array(["é"] * n)})
        path = pylance_write(tmp_path / f"e{n}.lance", t)
        assert_tables_equal(LanceFileReader(path).read_all().to_table(), t)


def test_pylance_default_numeric_pages_decode(tmp_path):
    """pylance's defaults: bitpacked values and out-of-line bitpacked def levels."""
    n = 5000
    t = pa.table({"seq": pa.array(np.arange(n, dtype=np.int32)),
                  "neg": pa.array(np.arange(n, dtype=np.int64) - 2500),
                  "nullable": pa.array(np.arange(n), mask=np.arange(n) % 3 == 0),
                  "f32": pa.array(np.random.default_rng(1).random(n).astype(np.float32))})
    path = pylance_write(tmp_path / "bp.lance", t)
    assert "mini_block:inline_bitpacking" in page_kinds(path, "seq")
    assert any("def=out_of_line_bitpacking" in k for k in page_kinds(path, "nullable"))
    r = LanceFileReader(path)
    assert_tables_equal(r.read_all().to_table(), t)
    idx = [0, 1023, 1024, 4999]
    assert_tables_equal(r.take_rows(idx).to_table(), t.take(idx))


def test_encodings_not_yet_supported_are_named():
    """A page lancenb cannot decode fails loudly, naming the encoding."""
    from lancenb.encodings import pb
    from lancenb.encodings.page import PageDecoder, PageInfo

    layout = pb.e21.PageLayout()
    mb = layout.mini_block_layout
    mb.value_compression.variable_packed_struct.SetInParent()
    mb.layers.append(pb.e21.REPDEF_ALL_VALID_ITEM)
    mb.num_buffers, mb.num_items = 1, 10
    info = PageInfo([0, 64], [2, 8], 10, 0)
    with pytest.raises(NotSupportedError, match="variable_packed_struct"):
        PageDecoder(pb.pack_any(layout), info, pa.int64(), "file 'x', column 0, page 0")


def test_lancenb_reads_pylance_fsst_and_dictionary_pages(tmp_path):
    rng = np.random.default_rng(2)
    n = 20_000
    t = pa.table({
        "url": pa.array([f"https://host{k % 7}.example.org/a/b/{k}" for k in
                         rng.integers(0, 10**9, n)]),
        "lurl": pa.array([f"mailto:user{k}@example.com" for k in rng.integers(0, 10**9, n)],
                         pa.large_string()),
        "cat": pa.array(np.array(["red", "green", "blue"])[rng.integers(0, 3, n)]),
        "nullable_cat": pa.array(np.array(["x", "yy", "zzz"])[rng.integers(0, 3, n)],
                                 mask=rng.random(n) < 0.3),
    })
    for version in ("2.1", "2.2"):
        path = pylance_write(tmp_path / f"f{version}.lance", t, version=version)
        kinds = " ".join(k for c in t.column_names for k in page_kinds(path, c))
        assert "fsst" in kinds and "dict=" in kinds
        r = LanceFileReader(path)
        assert_tables_equal(r.read_all().to_table(), t)
        idx = [0, 5, 1024, 4097, n - 1]
        assert_tables_equal(r.take_rows(idx).to_table(), t.take(idx))


def test_lancenb_reads_pylance_rle_and_byte_stream_split_pages(tmp_path):
    rng = np.random.default_rng(3)
    n = 30_000
    zstd_bss = {"lance-encoding:compression": "zstd", "lance-encoding:bss": "on"}
    t = pa.table({
        "runs": pa.array(np.repeat(rng.integers(0, 100, n // 500), 500).astype(np.int32)),
        "runs_null": pa.array(np.repeat(rng.integers(0, 5, n // 300), 300),
                              mask=rng.random(n) < 0.1),
        "walk": pa.array(np.cumsum(rng.standard_normal(n))),
    }).cast(pa.schema([("runs", pa.int32()), ("runs_null", pa.int64()),
                       pa.field("walk", pa.float64(), metadata=zstd_bss)]))
    for version in ("2.1", "2.2"):
        path = pylance_write(tmp_path / f"r{version}.lance", t, version=version)
        assert any("rle(" in k for k in page_kinds(path, "runs"))
        assert any("byte_stream_split" in k for k in page_kinds(path, "walk"))
        r = LanceFileReader(path)
        assert_tables_equal(r.read_all().to_table(), t)
        idx = [0, 4095, 4096, n - 1]
        assert_tables_equal(r.take_rows(idx).to_table(), t.take(idx))


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("writer", ["pylance", "lancenb"])
def test_file_statistics_as_pylance(tmp_path, version, writer):
    """file_statistics(): pages and page-buffer bytes per column, as pylance counts
    them, on files of either writer."""
    import lance.file as lf

    n = 200_000
    t = pa.table({"id": pa.array(range(n), pa.int64()),
                  "s": [f"v{i % 7}" if i % 5 else None for i in range(n)],
                  "st": pa.array([{"a": i, "b": "x" * (i % 4)} for i in range(n)]),
                  "l": pa.array([[i] * (i % 3) for i in range(n)], pa.list_(pa.int32()))})
    path = str(tmp_path / "f.lance")
    if writer == "pylance":
        w = lf.LanceFileWriter(path, t.schema, version=version)
        w.write_batch(t)
        w.close()
    else:
        with LanceFileWriter(path, t.schema, version=version) as w:
            w.write_batch(t)
    want = lf.LanceFileReader(path).file_statistics()
    got = LanceFileReader(path).file_statistics()
    assert [(c.num_pages, c.size_bytes) for c in got.columns] == \
        [(c.num_pages, c.size_bytes) for c in want.columns]
    assert sum(c.size_bytes for c in got.columns) > 0
