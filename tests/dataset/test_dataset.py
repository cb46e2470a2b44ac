"""lancenb datasets on their own: API behaviour, layout on disk, and bad input.

Interop with pylance is in tests/compat/test_dataset_interop.py; races and
crashes in test_concurrency.py.
"""

from __future__ import annotations

import datetime
import os
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from _tables import assert_tables_equal

import lancenb
from lancenb.errors import (
    CorruptFileError,
    DatasetExistsError,
    DatasetNotFoundError,
    InvalidInputError,
    LanceError,
    NotSupportedError,
    SchemaError,
)


def table(n: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({"id": ids, "v": pa.array((ids % 13).astype(np.int32)),
                     "s": pa.array([f"s{i % 5}" if i % 9 else None for i in ids])})


@pytest.fixture
def ds_uri(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(table(1000), uri, max_rows_per_file=300)
    return uri


def test_layout_on_disk(ds_uri):
    names = sorted(os.listdir(os.path.join(ds_uri, "_versions")))
    assert names == ["18446744073709551614.manifest", "latest_version_hint.json"]
    hint = Path(ds_uri, "_versions", "latest_version_hint.json").read_bytes()
    assert hint == b'{"version":1}'
    data = sorted(os.listdir(os.path.join(ds_uri, "data")))
    assert len(data) == 4
    for n in data:
        assert len(n) == 50 + len(".lance") and set(n[:24]) <= {"0", "1"}
        int(n[24:50], 16)
    txns = os.listdir(os.path.join(ds_uri, "_transactions"))
    assert len(txns) == 1 and txns[0].startswith("0-") and txns[0].endswith(".txn")
    m = lancenb.dataset(ds_uri).manifest
    assert m.writer_version.library == "lancenb"
    assert m.data_format.version == "2.2"  # the default, as pylance 14
    assert [f.id for f in m.fragments] == [0, 1, 2, 3] and m.max_fragment_id == 3
    assert m.HasField("transaction_section") and m.transaction_section == 0


def test_scan_options(ds_uri):
    ds = lancenb.dataset(ds_uri)
    full = table(1000)
    assert_tables_equal(ds.to_table(), full)
    assert_tables_equal(ds.to_table(columns=["s", "id"]), full.select(["s", "id"]))
    assert_tables_equal(ds.to_table(limit=10, offset=295), full.slice(295, 10))
    assert_tables_equal(ds.to_table(offset=990), full.slice(990))
    assert ds.to_table(offset=5000).num_rows == 0
    assert ds.to_table(limit=0).num_rows == 0
    assert_tables_equal(ds.head(7), full.slice(0, 7))
    batches = list(ds.to_batches(batch_size=128))
    assert max(b.num_rows for b in batches) == 128
    assert_tables_equal(pa.Table.from_batches(batches), full)
    t = ds.to_table(filter="v = 3 AND s IS NOT NULL", limit=5, offset=2, with_row_id=True,
                    with_row_address=True)
    want = full.filter(pc.and_(pc.equal(full["v"], 3), pc.is_valid(full["s"])))
    assert t["id"].to_pylist() == want["id"].to_pylist()[2:7]
    ids = np.array(t["id"].to_pylist(), dtype=np.uint64)
    frag, off = ids // 300, ids % 300
    assert t["_rowaddr"].to_pylist() == ((frag << 32) | off).tolist()
    assert t["_rowid"].to_pylist() == t["_rowaddr"].to_pylist()
    expr = (pc.field("v") > 10) & (pc.field("id") < 500)
    assert ds.count_rows(expr) == ds.count_rows("v > 10 AND id < 500") == \
        full.filter(expr).num_rows
    scanner = ds.scanner(columns=["id"], filter="id < 3")
    assert scanner.projected_schema.names == ["id"]
    assert scanner.to_reader().read_all()["id"].to_pylist() == [0, 1, 2]


def test_take_skips_deleted_rows_and_keeps_request_order(ds_uri):
    ds = lancenb.dataset(ds_uri)
    ds.delete("id % 2 = 1")
    live = table(1000).filter(pc.equal(pc.bit_wise_and(table(1000)["id"], 1), 0))
    idx = [499, 0, 150, 150, 3, 298]
    assert_tables_equal(ds.take(idx), live.take(idx))
    assert ds.take([], columns=["id"]).num_rows == 0
    with pytest.raises(InvalidInputError, match="out of range"):
        ds.take([500])


def test_delete_whole_fragment_and_nothing(ds_uri):
    ds = lancenb.dataset(ds_uri)
    ds.delete("id < 300")
    assert ds.version == 2 and [f.fragment_id for f in ds.get_fragments()] == [1, 2, 3]
    ds.delete("id < 0")  # matches nothing: still a new version, as pylance makes one
    assert ds.version == 3 and ds.latest_version == 3
    assert lancenb.dataset(ds.uri, version=3).count_rows() == 700
    ds.delete("id >= 300 AND id < 310")
    assert ds.count_rows() == 690
    frag = ds.get_fragment(1)
    assert frag.metadata.deletion_file.num_deleted_rows == 10
    assert frag.deletion_file().startswith("_deletions/1-3-")


def test_versions_time_travel_restore_tags(ds_uri):
    lancenb.write_dataset(table(10, 1000), ds_uri, mode="append")
    lancenb.write_dataset(table(5), ds_uri, mode="overwrite")
    ds = lancenb.dataset(ds_uri)
    assert [v["version"] for v in ds.versions()] == [1, 2, 3]
    assert lancenb.dataset(ds_uri, version=2).count_rows() == 1010
    ts = ds.versions()[1]["timestamp"]  # listed to the microsecond, as pylance's
    # pylance's rule: the newest version listed strictly before asof, so version 2 is as
    # of the microsecond after its listed timestamp, and not of that timestamp itself
    assert lancenb.dataset(ds_uri, asof=ts + datetime.timedelta(microseconds=1)).version == 2
    assert lancenb.dataset(ds_uri, asof=ts).version == 1
    assert lancenb.dataset(ds_uri, asof=ts - datetime.timedelta(microseconds=1)).version == 1
    ds.tags.create("big", 2)
    with pytest.raises(InvalidInputError, match="already exists"):
        ds.tags.create("big", 1)
    assert lancenb.dataset(ds_uri, version="big").count_rows() == 1010
    ds.tags.update("big", 1)
    assert ds.tags.list()["big"]["version"] == 1
    ds.tags.delete("big")
    assert ds.tags.list() == {}
    with pytest.raises(DatasetNotFoundError):
        lancenb.dataset(ds_uri, version="big")
    with pytest.raises(InvalidInputError):
        ds.tags.create("../evil", 1)
    with pytest.raises(DatasetNotFoundError):
        ds.tags.create("t", 99)
    old = ds.checkout_version(2)
    old.restore()
    assert old.version == 4 and lancenb.dataset(ds_uri).count_rows() == 1010


def test_modes(tmp_path, ds_uri):
    with pytest.raises(DatasetExistsError):
        lancenb.write_dataset(table(1), ds_uri)
    uri = str(tmp_path / "new")
    ds = lancenb.write_dataset(table(3), uri, mode="append")  # append creates
    assert ds.version == 1 and ds.count_rows() == 3
    with pytest.raises(SchemaError, match="columns"):
        lancenb.write_dataset(pa.table({"x": [1]}), uri, mode="append")
    with pytest.raises(SchemaError, match="int32"):
        lancenb.write_dataset(table(2).set_column(1, "v", pa.array(["a", "b"])), uri,
                              mode="append")
    # reordered columns are fine
    lancenb.write_dataset(table(2, 3).select(["s", "v", "id"]), uri, mode="append")
    assert lancenb.dataset(uri).to_table()["id"].to_pylist() == [0, 1, 2, 3, 4]
    ds = lancenb.write_dataset(pa.table({"z": [1.5]}), uri, mode="overwrite")
    assert ds.schema.names == ["z"] and ds.version == 3
    with pytest.raises(InvalidInputError):
        lancenb.write_dataset(table(1), uri, mode="upsert")


def test_memory_filesystem():
    uri = "memory://lancenb-test/ds"
    # memory:// has no conditional write: commits need the single-process opt-in
    opts = {"single_process_commits": True}
    lancenb.write_dataset(table(100), uri, max_rows_per_file=40, storage_options=opts)
    lancenb.write_dataset(table(10, 100), uri, mode="append", storage_options=opts)
    ds = lancenb.dataset(uri, storage_options=opts)
    ds.delete("id < 5")
    assert ds.count_rows() == 105 and ds.version == 3
    assert_tables_equal(lancenb.dataset(uri, version=1).to_table(), table(100))


def test_commit_lock_is_used_off_local_disk():
    calls = []

    class Lock:
        def __init__(self, version):
            calls.append(version)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    uri = "memory://lancenb-test/locked"
    lancenb.write_dataset(table(3), uri, commit_lock=Lock)
    lancenb.write_dataset(table(3), uri, mode="append", commit_lock=Lock)
    assert calls == [1, 2]


def test_streaming_write_stays_bounded(tmp_path):
    """A generator of batches is written without being materialised: the rows land
    in several files and the iterator is consumed lazily."""
    seen = []

    def gen():
        for k in range(20):
            seen.append(k)
            yield table(5000, k * 5000).to_batches()[0]

    uri = str(tmp_path / "s")
    ds = lancenb.write_dataset(gen(), uri, max_rows_per_file=30_000)
    assert seen == list(range(20))
    assert [f.physical_rows for f in ds.get_fragments()] == [30_000] * 3 + [10_000]
    assert ds.count_rows() == 100_000


def test_failed_write_leaves_nothing(tmp_path):
    uri = str(tmp_path / "f")

    def gen():
        yield table(100).to_batches()[0]
        raise RuntimeError("source failed")

    with pytest.raises(RuntimeError):
        lancenb.write_dataset(gen(), uri)
    assert not os.path.exists(os.path.join(uri, "_versions")) or \
        not os.listdir(os.path.join(uri, "_versions"))
    assert not os.path.exists(os.path.join(uri, "data")) or not os.listdir(
        os.path.join(uri, "data"))
    with pytest.raises(DatasetNotFoundError):
        lancenb.dataset(uri)


# -- bad input ---------------------------------------------------------------------------

def _manifest_path(uri, v=1):
    return os.path.join(uri, "_versions", f"{2**64 - 1 - v:020d}.manifest")


def test_missing_dataset(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="no Lance dataset"):
        lancenb.dataset(str(tmp_path / "nope"))
    with pytest.raises(FileNotFoundError):  # also the builtin
        lancenb.dataset(str(tmp_path / "nope"))


def test_missing_version(ds_uri):
    with pytest.raises(DatasetNotFoundError, match="no version 7"):
        lancenb.dataset(ds_uri, version=7)


@pytest.mark.parametrize("damage", ["truncate", "magic", "position", "length", "garbage"])
def test_corrupt_manifest(ds_uri, damage):
    p = _manifest_path(ds_uri)
    raw = bytearray(Path(p).read_bytes())
    if damage == "truncate":
        raw = raw[: len(raw) // 2]
    elif damage == "magic":
        raw[-4:] = b"XXXX"
    elif damage == "position":
        raw[-16:-8] = struct.pack("<q", len(raw) * 3)
    elif damage == "length":
        pos = struct.unpack("<q", raw[-16:-8])[0]
        raw[pos:pos + 4] = struct.pack("<I", 7)
    else:
        pos = struct.unpack("<q", raw[-16:-8])[0]
        raw[pos + 4:-16] = b"\xff" * (len(raw) - 16 - pos - 4)
    Path(p).write_bytes(bytes(raw))
    with pytest.raises(CorruptFileError, match="manifest"):
        lancenb.dataset(ds_uri)


def _rewrite_manifest(uri, edit):
    from lancenb.table.manifest import frame_manifest, parse_manifest_file

    p = _manifest_path(uri, lancenb.dataset(uri).version)
    mf = parse_manifest_file(Path(p).read_bytes(), p)
    m = mf.manifest
    edit(m)
    Path(p).write_bytes(frame_manifest(m, mf.transaction()))


def test_unknown_feature_flags(ds_uri):
    _rewrite_manifest(ds_uri, lambda m: setattr(m, "reader_feature_flags", 64 | 1))
    with pytest.raises(NotSupportedError, match=r"\[64\]"):
        lancenb.dataset(ds_uri)


def test_unknown_writer_flag_blocks_writes_only(ds_uri):
    _rewrite_manifest(ds_uri, lambda m: setattr(m, "writer_feature_flags", 128))
    assert lancenb.dataset(ds_uri).count_rows() == 1000
    with pytest.raises(NotSupportedError, match="write"):
        lancenb.write_dataset(table(1), ds_uri, mode="append")


def test_bad_deletion_file(ds_uri):
    ds = lancenb.dataset(ds_uri)
    ds.delete("id < 3")
    rel = ds.get_fragment(0).deletion_file()
    with open(os.path.join(ds_uri, rel), "wb") as f:
        f.write(b"not arrow at all")
    with pytest.raises(CorruptFileError, match="deletion file"):
        lancenb.dataset(ds_uri).to_table()


def test_deletion_file_out_of_range(ds_uri):
    from lancenb.io.store import ObjectStore

    ds = lancenb.dataset(ds_uri)
    ds.delete("id < 3")
    frag = ds.get_fragment(0)
    import pyarrow.ipc as ipc
    sink = pa.BufferOutputStream()
    schema = pa.schema([pa.field("row_id", pa.uint32(), False)])
    with ipc.new_file(sink, schema) as w:
        w.write_batch(pa.record_batch([pa.array([0, 1, 99999], pa.uint32())], schema=schema))
    ObjectStore(ds_uri).write_bytes(frag.deletion_file(), sink.getvalue().to_pybytes())
    with pytest.raises(CorruptFileError, match="99999"):
        lancenb.dataset(ds_uri).count_rows()


@pytest.mark.parametrize("bad", ["id >", "nosuchcol = 1", "id = 'a' AND (", "foo(id) = 1"])
def test_bad_filter(ds_uri, bad):
    with pytest.raises(LanceError):
        lancenb.dataset(ds_uri).to_table(filter=bad)


def test_bad_options(ds_uri):
    ds = lancenb.dataset(ds_uri)
    with pytest.raises(InvalidInputError):
        ds.to_table(columns=["nope"])
    with pytest.raises(InvalidInputError):
        ds.to_table(limit=-1)
    with pytest.raises(InvalidInputError):
        lancenb.write_dataset(table(1), ds_uri, mode="append", max_rows_per_file=0)
    with pytest.raises(InvalidInputError):
        lancenb.write_dataset(12, ds_uri + "x")


def test_mixed_manifest_names_refused(ds_uri):
    src = _manifest_path(ds_uri)
    dst = os.path.join(ds_uri, "_versions", "2.manifest")
    Path(dst).write_bytes(Path(src).read_bytes())
    with pytest.raises(CorruptFileError, match="mixes V1 and V2"):
        lancenb.dataset(ds_uri)


def test_missing_data_file(ds_uri):
    data = os.path.join(ds_uri, "data")
    os.unlink(os.path.join(data, sorted(os.listdir(data))[0]))
    with pytest.raises(FileNotFoundError):
        lancenb.dataset(ds_uri).to_table()
    assert isinstance(pytest.raises(LanceError, lancenb.dataset(ds_uri).to_table).value,
                      LanceError)


def test_tag_file_garbage(ds_uri):
    os.makedirs(os.path.join(ds_uri, "_refs", "tags"))
    with open(os.path.join(ds_uri, "_refs", "tags", "t.json"), "w") as f:
        f.write("{not json")
    with pytest.raises(CorruptFileError):
        lancenb.dataset(ds_uri, version="t")


@pytest.mark.parametrize("name", sorted(os.listdir(os.path.join(os.path.dirname(__file__),
                                                                "corrupt_inputs"))))
def test_fuzzed_deletion_files_raise_corrupt_file_error(tmp_path, name):
    """Deletion files damaged by scripts/fuzz_corrupt.py that made pyarrow raise
    MemoryError (a huge claimed buffer) or NotImplementedError (odd integer width)
    instead of a LanceError."""
    from lancenb._proto import table_pb2
    from lancenb.io.store import ObjectStore
    from lancenb.table.deletion import read_deletions

    kind, frag, ver, did = name[: -len(".arrow")].split("-")
    os.makedirs(tmp_path / "_deletions")
    data = Path(os.path.dirname(__file__), "corrupt_inputs", name).read_bytes()
    (tmp_path / "_deletions" / f"{frag}-{ver}-{did}.arrow").write_bytes(data)
    df = table_pb2.DeletionFile(read_version=int(ver), id=int(did))
    with pytest.raises(CorruptFileError, match="not a valid Arrow IPC file"):
        read_deletions(ObjectStore(str(tmp_path)), int(frag), df, 1000)
