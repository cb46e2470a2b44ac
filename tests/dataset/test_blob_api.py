"""The blob API on datasets: descriptions from scans (as pylance 14 returns them),
``blob_handling="all_binary"`` for the bytes, and ``take_blobs`` returning lazy
file-like :class:`BlobFile` objects (issue 16, findings 4 and 5)."""

import io

import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.dataset.read.blob import BlobFile
from lancenb.encodings.structural.blob import DESCRIPTION_V2
from lancenb.errors import InvalidInputError

BLOB_MD = {"lance-encoding:blob": "true"}


def blob_schema():
    return pa.schema([pa.field("id", pa.int64()),
                      pa.field("b", pa.large_binary(), metadata=BLOB_MD)])


def blob_values():
    rng = np.random.default_rng(5)
    return [b"abc", None, b"", rng.bytes(100), rng.bytes(5000), None, b"z", rng.bytes(64)]


@pytest.fixture(scope="module", params=["2.0", "2.1", "2.2"])
def ours(request, tmp_path_factory):
    vals = blob_values()
    t = pa.table({"id": np.arange(len(vals)), "b": pa.array(vals, pa.large_binary())},
                 schema=blob_schema())
    uri = str(tmp_path_factory.mktemp(f"blobapi{request.param}") / "ds")
    lancenb.write_dataset(t, uri, data_storage_version=request.param, max_rows_per_file=5)
    return lancenb.dataset(uri), vals


def test_scan_returns_descriptions(ours):
    ds, vals = ours
    t = ds.to_table()
    f = t.schema.field("b")
    if ds.data_storage_version == "2.2":  # blob v2, as pylance writes 2.2 blob columns
        assert ds.schema.field("b").metadata == {b"ARROW:extension:name": b"lance.blob.v2"}
        assert f.type == DESCRIPTION_V2
        assert {d["kind"] for d in t.column("b").to_pylist() if d} == {0}  # all inline
    else:
        assert f.type == pa.struct([("position", pa.uint64()), ("size", pa.uint64())])
        assert f.metadata == {b"lance-encoding:blob": b"true"}
    desc = t.column("b").to_pylist()
    if ds.data_storage_version == "2.0":  # pylance returns 2.0's null marker, (1, 0)
        desc = [None if d == {"position": 1, "size": 0} else d for d in desc]
    assert [d if d is None else d["size"] for d in desc] == \
        [v if v is None else len(v) for v in vals]
    assert ds.scanner().projected_schema.field("b").type == f.type


def test_all_binary_returns_bytes(ours):
    ds, vals = ours
    t = ds.to_table(blob_handling="all_binary")
    assert t.column("b").to_pylist() == vals
    assert t.schema.field("b").type == pa.large_binary()
    assert ds.take([6, 0], blob_handling="all_binary").column("b").to_pylist() == \
        [vals[6], vals[0]]


def test_filter_on_other_column(ours):
    ds, vals = ours
    t = ds.to_table(filter="id >= 3", blob_handling="all_binary")
    assert t.column("b").to_pylist() == vals[3:]
    d = ds.to_table(columns=["b"], filter="id % 2 = 0").column("b").to_pylist()
    assert [x["size"] for x in d] == [len(vals[i]) for i in (0, 2, 4, 6)]


def test_take_blobs_by_indices_ids_addresses(ours):
    ds, vals = ours
    files = ds.take_blobs("b", indices=[4, 0, 1, 2, 4])
    assert files[2] is None  # a null value
    assert files[3].size() == 0 and files[3].read() == b""  # an empty one
    assert [f.read() for f in (files[0], files[1], files[4])] == [vals[4], vals[0], vals[4]]
    addrs = ds.to_table(columns=["id"], with_row_address=True).column("_rowaddr").to_pylist()
    by_addr = ds.take_blobs("b", addresses=[addrs[6], addrs[3]])
    assert [f.read() for f in by_addr] == [vals[6], vals[3]]
    ids = ds.to_table(columns=["id"], with_row_id=True).column("_rowid")
    assert ds.take_blobs("b", ids=ids.take([7]))[0].read() == vals[7]


def test_blob_file_is_a_file(ours):
    ds, vals = ours
    v = vals[4]
    with ds.take_blobs("b", indices=[4])[0] as f:
        assert isinstance(f, io.RawIOBase) and f.readable() and f.seekable()
        assert f.read(10) == v[:10] and f.tell() == 10
        assert f.seek(-5, io.SEEK_END) == len(v) - 5 and f.read() == v[-5:]
        assert f.read(3) == b""  # at the end
        f.seek(100)
        buf = bytearray(50)
        assert f.readinto(buf) == 50 and bytes(buf) == v[100:150]
        f.seek(4990)
        assert f.readinto(buf) == 10 and bytes(buf[:10]) == v[4990:]
        assert f.read_range(7, 4) == v[7:11] and f.tell() == len(v)
        assert f.read_ranges([(0, 2), (4000, 3)]) == [v[:2], v[4000:4003]]
        with pytest.raises(InvalidInputError):
            f.read_range(4999, 2)
        with pytest.raises(ValueError):
            f.seek(-1)
    assert f.closed
    with pytest.raises(ValueError):
        f.read()
    assert repr(f) == f"<BlobFile size={len(v)}>"
    # usable where a buffered binary file is expected
    assert io.BufferedReader(ds.take_blobs("b", indices=[4])[0], 256).read() == v


def test_take_blobs_after_deletion(ours, tmp_path):
    ds, vals = ours
    vals = list(vals)
    t = ds.to_table(blob_handling="all_binary")
    uri = str(tmp_path / "del")
    lancenb.write_dataset(t, uri, schema=blob_schema(), max_rows_per_file=5,
                          data_storage_version=ds.data_storage_version)
    d = lancenb.dataset(uri)
    d.delete("id = 0 OR id = 6")
    live = [v for i, v in enumerate(vals) if i not in (0, 6)]
    got = [f if f is None else f.read() for f in d.take_blobs("b", indices=range(len(live)))]
    assert got == live
    assert d.to_table(blob_handling="all_binary").column("b").to_pylist() == live


def test_take_blobs_refuses_bad_arguments(ours):
    ds, _ = ours
    with pytest.raises(InvalidInputError, match="exactly one"):
        ds.take_blobs("b", ids=[0], indices=[0])
    with pytest.raises(InvalidInputError, match="exactly one"):
        ds.take_blobs("b")
    with pytest.raises(InvalidInputError, match="not a blob column"):
        ds.take_blobs("id", indices=[0])
    with pytest.raises(InvalidInputError, match="no column"):
        ds.take_blobs("nope", indices=[0])
    with pytest.raises(InvalidInputError, match="blob_handling"):
        ds.to_table(blob_handling="bytes")


def test_blob_file_reads_lazily(tmp_path):
    """Ten bytes of a 50 MiB blob read ten bytes (or the read-ahead), never the blob."""
    big = np.random.default_rng(1).bytes(50 << 20)
    t = pa.table({"id": [0, 1], "b": pa.array([b"small", big], pa.large_binary())},
                 schema=blob_schema())
    uri = str(tmp_path / "big")
    lancenb.write_dataset(t, uri, data_storage_version="2.1")
    ds = lancenb.dataset(uri)
    f = ds.take_blobs("b", indices=[1], buffer_size=0)[0]
    assert isinstance(f, BlobFile) and f.size() == len(big)
    assert f.stats.reads == 0  # nothing read until asked
    f.seek(30 << 20)
    assert f.read(10) == big[30 << 20:(30 << 20) + 10]
    assert (f.stats.reads, f.stats.bytes_read) == (1, 10)
    g = ds.take_blobs("b", indices=[1])[0]  # default read-ahead: 512 KiB
    assert g.read(10) == big[:10] and g.read(10) == big[10:20]
    assert g.stats.reads == 1 and g.stats.bytes_read == 512 * 1024
    # the descriptions of a scan do not read the blobs either
    assert ds.to_table().column("b").to_pylist()[1]["size"] == len(big)


def test_truncated_sidecar_is_an_error_not_short_data(tmp_path):
    """A 2.2 blob v2 value in a sidecar file that is shorter than its description says
    fails with a LanceError (scan with the bytes, and BlobFile reads)."""
    from pathlib import Path

    from lancenb.errors import LanceError

    vals = [b"a", bytes(70_000)]
    t = pa.table({"id": [0, 1], "b": pa.array(vals, pa.large_binary())}, schema=blob_schema())
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(t, uri, data_storage_version="2.2")
    (pack,) = Path(uri, "data").glob("*/*.blob")
    pack.write_bytes(pack.read_bytes()[:10])
    ds = lancenb.dataset(uri)
    assert ds.to_table().column("b").to_pylist()[1]["size"] == 70_000  # descriptions read
    with pytest.raises(LanceError, match="past the end"):
        ds.to_table(blob_handling="all_binary")
    f = ds.take_blobs("b", indices=[1], buffer_size=0)[0]
    assert f.read(5) == bytes(5)  # (what is there reads)
    with pytest.raises(LanceError):
        f.read()


def test_read_blobs(ours):
    ds, vals = ours
    got = ds.read_blobs("b", indices=[6, 1, 2, 0])
    addrs = ds.to_table(columns=["id"], with_row_address=True).column("_rowaddr").to_pylist()
    assert got == [(addrs[i], vals[i]) for i in (6, 1, 2, 0)]
    assert ds.read_blobs("b", addresses=[addrs[3]]) == [(addrs[3], vals[3])]
