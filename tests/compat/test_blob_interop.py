"""Blob columns and packed structs against pylance 14, both directions, 2.1 and 2.2:
same layouts and buffer sizes, exact reads, takes."""

import struct
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb._proto import file_pb2
from lancenb.file import LanceFileReader, LanceFileWriter

lance = pytest.importorskip("lance")
from lance.file import LanceFileReader as PyReader  # noqa: E402
from lance.file import LanceFileWriter as PyWriter  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "file"))
from test_blob_packed import blob_table  # noqa: E402

N = 600


@pytest.fixture(scope="module")
def table():
    return blob_table(N, seed=7, wide=False)


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def files(request, table, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"blob{request.param}")
    ours, theirs = str(d / "ours.lance"), str(d / "theirs.lance")
    with LanceFileWriter(ours, version=request.param) as w:
        w.write_batch(table)
    with PyWriter(theirs, version=request.param) as w:
        w.write_batch(table)
    return ours, theirs


def test_same_layouts(files):
    ours = LanceFileReader(files[0]).metadata()
    theirs = LanceFileReader(files[1]).metadata()
    for a, b in zip(ours.columns, theirs.columns):
        assert [p.description for p in a.pages] == [p.description for p in b.pages]
        assert [[x.size for x in p.buffers] for p in a.pages] == \
            [[x.size for x in p.buffers] for p in b.pages]


def test_pylance_reads_lancenb(files, table):
    r = PyReader(files[0])
    assert r.read_all().to_table().equals(table)
    idx = [0, 3, 97, 300, 599]
    assert r.take_rows(idx).to_table().equals(table.take(idx))


def test_lancenb_reads_pylance(files, table):
    r = LanceFileReader(files[1])
    assert r.read_all().to_table().equals(table)
    idx = np.array([599, 0, 3, 3, 97, 256, 255])
    assert r.take_rows(idx).to_table().equals(table.take(idx))
    assert r.read_range(10, 500).to_table().equals(table.slice(10, 500))


def test_pylance_reads_wide_packed_rows(tmp_path):
    """Packed rows of 302 bytes (pylance 14 cannot write these itself): lancenb keeps
    them in mini-block chunks, which pylance reads."""
    t = blob_table(300, seed=1).select(["psn"])
    path = str(tmp_path / "wide.lance")
    with LanceFileWriter(path) as w:
        w.write_batch(t)
    assert PyReader(path).read_all().to_table().equals(t)


# -- datasets: the blob API both ways (issue 16, findings 4 and 5) -----------------------
BLOB_MD = {"lance-encoding:blob": "true"}


def _dataset_values():
    """Inline, empty and null values, and (in pylance's 2.2 blob v2) values it keeps in
    a packed sidecar file (over 64 KiB) and in a file of their own (over 4 MiB)."""
    rng = np.random.default_rng(11)
    return [b"abc", None, b"", rng.bytes(100), rng.bytes(70_000), rng.bytes(90_000),
            None, rng.bytes((4 << 20) + 5), b"z", rng.bytes(3000)]


def _blob_table(vals):
    schema = pa.schema([pa.field("id", pa.int64()),
                        pa.field("b", pa.large_binary(), metadata=BLOB_MD)])
    return pa.table({"id": np.arange(len(vals)), "b": pa.array(vals, pa.large_binary())},
                    schema=schema)


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def pylance_ds(request, tmp_path_factory):
    vals = _dataset_values()
    uri = str(tmp_path_factory.mktemp(f"pyblob{request.param}") / "ds")
    lance.write_dataset(_blob_table(vals), uri, data_storage_version=request.param,
                        max_rows_per_file=6)
    lance.dataset(uri).delete("id = 3")
    del vals[3]
    return uri, vals


def test_lancenb_reads_pylance_blob_dataset(pylance_ds):
    uri, vals = pylance_ds
    ours, theirs = lancenb.dataset(uri), lance.dataset(uri)
    for handling in (None, "all_binary"):
        a, b = ours.to_table(blob_handling=handling), theirs.to_table(blob_handling=handling)
        assert a.schema == b.schema and a.equals(b)
    assert ours.to_table(blob_handling="all_binary").column("b").to_pylist() == vals
    idx = [8, 0, 1, 4, 4, 6]
    assert ours.take(idx).equals(theirs.take(idx))
    assert ours.take(idx, blob_handling="all_binary").column("b").to_pylist() == \
        [vals[i] for i in idx]
    flt = "id > 4 AND id < 9"
    assert ours.to_table(filter=flt).equals(theirs.to_table(filter=flt))
    assert ours.count_rows() == theirs.count_rows() == len(vals)


def test_lancenb_take_blobs_of_pylance_dataset(pylance_ds):
    uri, vals = pylance_ds
    ours, theirs = lancenb.dataset(uri), lance.dataset(uri)
    idx = list(range(len(vals)))
    a = ours.take_blobs("b", indices=idx)
    b = theirs.take_blobs("b", indices=idx)
    assert [x is None for x in a] == [v is None for v in vals] == [x is None for x in b]
    assert [x.size() for x in a if x] == [x.size() for x in b if x]
    assert [x.read() for x in a if x] == [v for v in vals if v is not None]
    assert ours.read_blobs("b", indices=idx[::-1]) == theirs.read_blobs("b", indices=idx[::-1])
    # ten bytes of the 4 MiB value (a file of its own in 2.2) read ten bytes
    big = ours.take_blobs("b", indices=[6], buffer_size=0)[0]
    big.seek(1 << 20)
    assert big.read(10) == vals[6][1 << 20:(1 << 20) + 10]
    assert big.stats.bytes_read == 10
    addrs = theirs.to_table(columns=["id"], with_row_address=True).column("_rowaddr")
    assert ours.take_blobs("b", addresses=addrs.take([4]))[0].read() == vals[4]


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_pylance_reads_lancenb_blob_dataset(tmp_path, version):
    vals = _dataset_values()[:7]  # (no 4 MiB value: pylance's 2.2 files hold those apart)
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_blob_table(vals), uri, data_storage_version=version,
                          max_rows_per_file=4)
    ours, theirs = lancenb.dataset(uri), lance.dataset(uri)
    assert theirs.to_table(blob_handling="all_binary").column("b").to_pylist() == vals
    assert ours.to_table().equals(theirs.to_table())  # same descriptions
    files = theirs.take_blobs("b", indices=list(range(len(vals))))
    assert [f if f is None else f.read() for f in files] == vals
    ids = theirs.to_table(columns=["id"], with_row_id=True).column("_rowid")
    assert ours.take_blobs("b", ids=ids.take([4]))[0].read() == vals[4]


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_lancenb_reads_pylance_nested_blob_dataset(tmp_path, version):
    """Blob columns inside a struct: 2.2 (blob v2) as pylance returns them, both modes;
    2.1 (blob v1) bytes (descriptions of nested v1 blobs are not produced)."""
    st = pa.struct([pa.field("x", pa.int32()),
                    pa.field("b", pa.large_binary(), metadata=BLOB_MD)])
    vals = [{"x": 1, "b": b"ab"}, {"x": 2, "b": None}, None, {"x": 3, "b": b"q" * 70_000}]
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"s": pa.array(vals, st)}), uri, data_storage_version=version)
    ours, theirs = lancenb.dataset(uri), lance.dataset(uri)
    a = ours.to_table(blob_handling="all_binary")
    assert a.equals(theirs.to_table(blob_handling="all_binary"))
    assert a.column("s").to_pylist() == vals
    if version == "2.2":
        assert ours.to_table().equals(theirs.to_table())
        assert ours.take([3, 1]).equals(theirs.take([3, 1]))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_blob_data_file_bytes_identical(tmp_path, version):
    """lancenb's data file for a blob column is pylance's, byte for byte: blob v1 at
    2.1; at 2.2 the blob v2 layout (values out of line before the pages, descriptions
    as a packed struct with the id -1 description fields in the file's schema)."""
    from lancenb.encodings.structural.blob import WRITE_V2

    vals = [b"abc", None, b"", b"x" * 100, b"y" * 65_536]
    t = _blob_table(vals)
    uri = str(tmp_path / "ds")
    lance.write_dataset(t, uri, data_storage_version=version)
    theirs = (tmp_path / "ds" / "data").glob("*.lance").__next__().read_bytes()
    if version == "2.2":
        n = len(vals)
        b = pa.StructArray.from_arrays(
            [pa.array([0] * n, pa.uint8()), t.column("b").combine_chunks(),
             pa.nulls(n, pa.uint64()), pa.nulls(n, pa.uint64()), pa.nulls(n, pa.uint32()),
             pa.nulls(n, pa.string())], fields=list(WRITE_V2),
            mask=pa.array([v is None for v in vals]))
        t = pa.table({"id": t.column("id"), "b": b}, schema=pa.schema(
            [pa.field("id", pa.int64()), pa.field("b", WRITE_V2, metadata=BLOB_MD)]))
    ours = str(tmp_path / "ours.lance")
    with LanceFileWriter(ours, version=version) as w:
        w.write_batch(t)
    mine = Path(ours).read_bytes()
    assert len(mine) == len(theirs)
    # the same bytes, except that pylance's schema metadata map comes out in either
    # order (a Rust HashMap): the schemas are compared as messages
    gbo = struct.unpack_from("<Q", theirs, len(theirs) - 24)[0]
    gb0, size = struct.unpack_from("<QQ", theirs, gbo)
    assert mine[:gb0] == theirs[:gb0] and mine[gb0 + size:] == theirs[gb0 + size:]
    a, b = file_pb2.FileDescriptor(), file_pb2.FileDescriptor()
    a.ParseFromString(mine[gb0:gb0 + size])
    b.ParseFromString(theirs[gb0:gb0 + size])
    assert a == b


def _sidecars(uri) -> list:
    """``(data file index, sidecar name, size)`` of a dataset's blob sidecar files."""
    out = []
    ds = lance.dataset(uri)
    for i, frag in enumerate(ds.get_fragments()):
        d = Path(uri) / "data" / frag.metadata.files[0].path[:-len(".lance")]
        out += [(i, p.name, p.stat().st_size) for p in sorted(d.glob("*.blob"))]
    return out


def test_lancenb_writes_blob_v2_as_pylance(tmp_path):
    """2.2 blob columns written by lancenb are pylance's blob v2: the same dataset
    schema, DataFile fields, sidecar files (pack file over 64 KiB, own file over 4 MiB)
    and descriptions (inline positions aside: lancenb's statistics buffer comes first);
    each side appends to the other's dataset."""
    vals = _dataset_values()
    t = _blob_table(vals)
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    lancenb.write_dataset(t, ours, data_storage_version="2.2", max_rows_per_file=6)
    lance.write_dataset(t, theirs, data_storage_version="2.2", max_rows_per_file=6)
    a, b = lance.dataset(ours), lance.dataset(theirs)
    assert a.schema == b.schema
    assert [f.metadata.files[0].fields for f in a.get_fragments()] == \
        [f.metadata.files[0].fields for f in b.get_fragments()]
    assert _sidecars(ours) == _sidecars(theirs)
    da, db = a.to_table().column("b").to_pylist(), b.to_table().column("b").to_pylist()
    strip = [None if d is None else dict(d, position=d["position"] if d["kind"] else 0)
             for d in da]
    assert strip == [None if d is None else dict(d, position=d["position"] if d["kind"] else 0)
                     for d in db]
    assert a.to_table(blob_handling="all_binary").column("b").to_pylist() == vals
    files = a.take_blobs("b", indices=list(range(len(vals))))
    assert [f if f is None else f.read() for f in files] == vals
    lance.write_dataset(t, ours, mode="append")
    lancenb.write_dataset(t, theirs, mode="append")
    for uri in (ours, theirs):
        for lib in (lance, lancenb):
            got = lib.dataset(uri).to_table(blob_handling="all_binary").column("b")
            assert got.to_pylist() == vals * 2


def test_blob_v2_dataset_update_and_compaction(tmp_path):
    vals = _dataset_values()[:7]
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_blob_table(vals), uri, data_storage_version="2.2",
                          max_rows_per_file=3)
    ds = lancenb.dataset(uri)
    ds.update({"id": "id + 100"}, where="id < 2")
    ds = lancenb.dataset(uri)
    ds.optimize.compact_files(target_rows_per_fragment=100)
    for lib in (lance, lancenb):
        got = lib.dataset(uri).to_table(blob_handling="all_binary")
        rows = sorted(zip(got.column("id").to_pylist(), got.column("b").to_pylist()),
                      key=lambda r: r[0] % 100)
        assert [b for _, b in rows] == vals
        assert [i for i, _ in rows] == [100, 101] + list(range(2, 7))


def test_nested_blob_field_in_2_2_reads_both_ways(tmp_path):
    """A blob field inside a struct in a 2.2 dataset: pylance writes it as a blob v2
    column, lancenb (a known gap) as a plain one; each library reads the other's."""
    import lance

    f0 = pa.field("f0", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    t = pa.table({"c0": pa.array([None, 1], pa.int8()),
                  "c1": pa.array([{"f0": None}, {"f0": b"xyz"}], pa.struct([f0])),
                  "c2": pa.array([0, 5], pa.int8())})
    for writer, name in ((lancenb, "nb"), (lance, "pl")):
        uri = str(tmp_path / name)
        writer.write_dataset(t, uri, data_storage_version="2.2")
        for reader in (lancenb, lance):
            got = reader.dataset(uri).to_table(columns=["c0", "c2"])
            assert got.equals(t.select(["c0", "c2"])), (name, reader.__name__)
        assert lancenb.dataset(uri).to_table(blob_handling="all_binary").column("c1") \
            .to_pylist() == [{"f0": None}, {"f0": b"xyz"}]
