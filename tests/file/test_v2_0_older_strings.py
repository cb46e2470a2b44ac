"""2.0 files whose strings and binaries are laid out as ``list<u8>`` (two columns per
field: list offsets pages, then u8 items), as pylance 0.13 and older wrote them.

The files are made here: a 2.0 file of ``list<uint8>`` columns, then its schema
(global buffer 0) rewritten to name those fields string/binary, the rest of the tail
rebuilt around it (column metadata copied byte for byte). pylance reads them, in a
dataset, as the same strings.
"""

from __future__ import annotations

import os
import shutil
import struct

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb._proto import file_pb2
from lancenb.errors import CorruptFileError
from lancenb.file import LanceFileReader, LanceFileWriter
from lancenb.file.format import FOOTER_SIZE, Footer, pack_offset_table
from lancenb.file.schema import schema_to_fields
from lancenb.table.manifest import VERSIONS_DIR, parse_manifest_file

UPSTREAM = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "upstream",
                        "ref", "python", "python", "tests", "historical_datasets",
                        "0.13.0_string_encoding.lance")


def _as_bytes(v):
    return None if v is None else list(v.encode() if isinstance(v, str) else v)


def _older_layout_file(path: str, table: pa.Table, **writer_options) -> None:
    """Write ``table`` as pylance 0.13 did: each string/binary column as list<u8>."""
    lists = []
    for f, col in zip(table.schema, table.columns):
        if pa.types.is_string(f.type) or pa.types.is_binary(f.type):
            lists.append(pa.array([_as_bytes(v) for v in col.to_pylist()],
                                  pa.list_(pa.uint8())))
        elif pa.types.is_large_string(f.type) or pa.types.is_large_binary(f.type):
            lists.append(pa.array([_as_bytes(v) for v in col.to_pylist()],
                                  pa.large_list(pa.uint8())))
        else:
            lists.append(col)
    with LanceFileWriter(path, version="2.0", **writer_options) as w:
        w.write_batch(pa.table(lists, names=table.column_names))
    with open(path, "rb") as fh:
        raw = fh.read()
    ft = Footer.parse(raw[-FOOTER_SIZE:], len(raw), path)
    cmo = struct.unpack_from(f"<{2 * ft.num_columns}Q", raw, ft.cmo_position)
    gbo = struct.unpack_from(f"<{2 * ft.num_global_buffers}Q", raw, ft.gbo_position)
    assert ft.num_global_buffers == 1
    desc = file_pb2.FileDescriptor()
    desc.ParseFromString(raw[gbo[0]:gbo[0] + gbo[1]])
    fields, _ = schema_to_fields(table.schema)
    del desc.schema.fields[:]
    desc.schema.fields.extend(fields)
    gb0 = desc.SerializeToString()
    out = bytearray(raw[:gbo[0]])
    gb0_pos = len(out)
    out += gb0
    meta_start = len(out)
    offsets = []
    for i in range(ft.num_columns):
        pos, n = cmo[2 * i], cmo[2 * i + 1]
        offsets.append((len(out), n))
        out += raw[pos:pos + n]
    cmo_pos = len(out)
    out += pack_offset_table(offsets)
    gbo_pos = len(out)
    out += pack_offset_table([(gb0_pos, len(gb0))])
    out += Footer(meta_start, cmo_pos, gbo_pos, 1, ft.num_columns, ft.major, ft.minor).pack()
    with open(path, "wb") as fh:
        fh.write(bytes(out))


def _pylance_dataset(tmp_path, path: str, table: pa.Table):
    """A pylance 2.0 dataset of ``table`` whose data file is replaced by ``path``, its
    DataFile's column indices set as pylance 0.13 recorded them (a string field's
    offsets column; the next field two columns on). pylance's own LanceFileReader
    maps fields to columns one to one, so it reads such files only through a dataset."""
    uri = str(tmp_path / "ds")
    lance.write_dataset(table, uri, data_storage_version="2.0")
    (name,) = os.listdir(os.path.join(uri, "data"))
    shutil.copy(path, os.path.join(uri, "data", name))
    d = os.path.join(uri, VERSIONS_DIR)
    (mname,) = [n for n in os.listdir(d) if n.endswith(".manifest")]
    with open(os.path.join(d, mname), "rb") as fh:
        m = parse_manifest_file(fh.read(), mname).manifest
    cols, c = [], 0
    for f in table.schema:
        cols.append(c)
        c += 2 if pa.types.is_string(f.type) or pa.types.is_binary(f.type) or \
            pa.types.is_large_string(f.type) or pa.types.is_large_binary(f.type) else 1
    df = m.fragments[0].files[0]
    del df.column_indices[:]
    df.column_indices.extend(cols)
    df.file_size_bytes = os.path.getsize(path)
    m.ClearField("transaction_section")
    mb = m.SerializeToString()
    with open(os.path.join(d, mname), "wb") as fh:
        fh.write(struct.pack("<I", len(mb)) + mb + struct.pack("<qHH", 0, 0, 2) + b"LANC")
    return lance.dataset(uri)


def _table(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = ["", "a", "héllo", "x" * 50, None, "zz"]
    pick = rng.integers(0, len(words), n)
    s = [words[i] for i in pick]
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "s": pa.array(s, pa.string()),
        "b": pa.array([None if v is None else v.encode()[::-1] for v in s], pa.binary()),
        "ls": pa.array(s, pa.large_string()),
        "tail": pa.array(np.arange(n, dtype=np.int32) * 3),
    })


def test_known_answer(tmp_path):
    path = str(tmp_path / "small.lance")
    t = pa.table({"n": pa.array([1, 2, 3], pa.int64()), "s": ["foo", None, ""],
                  "b": pa.array([b"\x00\xff", b"", None], pa.binary())})
    _older_layout_file(path, t)
    r = LanceFileReader(path)
    assert len(r.metadata().columns) == 5  # n, s (offsets, bytes), b (offsets, bytes)
    assert r.read_all().to_table().equals(t)
    assert _pylance_dataset(tmp_path, path, t).to_table().equals(t)


@pytest.mark.parametrize("pages", [None, 64])
def test_scan_take_and_ranges_match_pylance(tmp_path, pages):
    path = str(tmp_path / "older.lance")
    t = _table(3000)
    opts = {} if pages is None else {"max_page_bytes": pages}
    _older_layout_file(path, t, **opts)
    ours, theirs = LanceFileReader(path), _pylance_dataset(tmp_path, path, t)
    assert ours.read_all().to_table().equals(t)
    assert theirs.to_table().equals(t)
    rows = [0, 5, 5, 999, 1000, 2998, 2999]
    assert ours.take_rows(rows).to_table().equals(t.take(rows))
    assert theirs.take(rows).equals(t.take(rows))
    nb = lancenb.dataset(theirs.uri)  # the dataset, with its column indices
    assert nb.to_table().equals(t)
    assert nb.take(rows).equals(t.take(rows))
    assert nb.to_table(filter="s = 'zz'").equals(theirs.to_table(filter="s = 'zz'"))
    assert ours.read_range(17, 1500).to_table().equals(t.slice(17, 1500))
    assert ours.read_range(2999, 1).to_table().equals(t.slice(2999, 1))


def test_invalid_utf8_is_corrupt(tmp_path):
    path = str(tmp_path / "bad.lance")
    _older_layout_file(path, pa.table({"b": pa.array([b"ok", b"\xff\xfe"], pa.binary())}))
    # the same bytes named a string column
    with open(path, "rb") as fh:
        raw = fh.read()
    bad = raw.replace(b"*\x06binary", b"*\x06string")
    assert bad != raw
    with open(path, "wb") as fh:
        fh.write(bad)
    with pytest.raises(CorruptFileError, match="invalid strings"):
        LanceFileReader(path).read_all().to_table()


@pytest.mark.skipif(not os.path.isdir(UPSTREAM), reason="../shared/upstream is not here")
def test_pylance_0_13_dataset_file():
    data = os.path.join(UPSTREAM, "data")
    (name,) = os.listdir(data)
    got = LanceFileReader(os.path.join(data, name)).read_all().to_table()
    assert got.to_pydict() == {"numbers": [1, 2, 3], "strings": ["foo", "bar", "baz"],
                               "bins": [b"foo", b"bar", b"baz"], "more_numbers": [4, 5, 6]}
