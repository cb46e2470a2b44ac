"""versions() without decoding every fragment of every manifest (issue 23): each
manifest is compared with the one before and only the records after their shared
bytes are walked. These check the shortcut gives pylance's answers wherever it
applies or not (appends, deletes, compaction, overwrite, manifests rewritten by hand)
and that damage in the records walked is a CorruptFileError naming the manifest."""

from __future__ import annotations

import os
import struct

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb._proto import table_pb2
from lancenb.errors import CorruptFileError, DatasetNotFoundError
from lancenb.table.manifest import (
    frame_manifest,
    manifest_span,
    message_records,
    parse_manifest_file,
    parse_manifest_name,
    parse_manifest_names,
)


def _t(a: int, n: int = 4) -> pa.Table:
    return pa.table({"id": np.arange(a, a + n, dtype=np.int64)})


def _same_as_pylance(path: str, ours=None) -> None:
    ours = ours or lancenb.dataset(path)
    got, want = ours.versions(), lance.dataset(path).versions()
    assert [v["version"] for v in got] == [v["version"] for v in want]
    assert [v["metadata"] for v in got] == [v["metadata"] for v in want]
    assert [v["timestamp"] for v in got] == [v["timestamp"] for v in want]


def _latest_manifest(path: str) -> str:
    d = os.path.join(path, "_versions")
    return os.path.join(d, min(n for n in os.listdir(d) if n.endswith(".manifest")))


def test_message_records_known_answer():
    # field 3 varint 150, field 2 bytes b"ab", field 7 fixed64, field 9 fixed32
    msg = (b"\x18\x96\x01" + b"\x12\x02ab" + b"\x39" + struct.pack("<q", -1)
           + b"\x4d" + struct.pack("<i", 5))
    raw = b"xx" + msg
    got = list(message_records(raw, 2, len(raw), "m"))
    assert got == [(3, 0, 2, 3, 5), (2, 2, 5, 7, 9), (7, 1, 9, 10, 18), (9, 5, 18, 19, 23)]
    assert raw[7:9] == b"ab"
    for bad in (b"\x12\x05ab",  # length past the end
                b"\x18\x96",  # varint cut short
                b"\x1b",  # wire type 3 (group)
                b"\x02\x00"):  # field 0
        with pytest.raises(CorruptFileError, match="manifest 'm'"):
            list(message_records(bad, 0, len(bad), "m"))


def test_appends_deletes_compaction_overwrite_equal_pylance(tmp_path):
    path = str(tmp_path / "d")
    lance.write_dataset(_t(0), path)
    for i in range(1, 6):  # both writers append
        (lancenb if i % 2 else lance).write_dataset(_t(4 * i), path, mode="append")
    lance.dataset(path).delete("id = 9")  # a fragment in the middle changes
    lancenb.write_dataset(_t(100), path, mode="append")
    lance.dataset(path).optimize.compact_files()  # every fragment replaced
    lancenb.write_dataset(_t(200), path, mode="append")
    lance.write_dataset(_t(300, 0), path, mode="overwrite")  # no fragments at all
    lance.write_dataset(_t(400), path, mode="append")
    ours = lancenb.dataset(path, version=3)
    _same_as_pylance(path, ours)
    # later commits: the next call walks only them, after the last manifest it saw
    lancenb.write_dataset(_t(500), path, mode="append")
    lance.dataset(path).delete("id = 401")
    _same_as_pylance(path, ours)
    assert ours.versions()[-1]["metadata"]["total_deletion_files"] == "1"


def test_fragments_out_of_order_in_the_message(tmp_path):
    """A writer could put other fields between fragment records: the whole manifest
    is decoded instead, with the same answer."""
    path = str(tmp_path / "d")
    lance.write_dataset(_t(0), path)
    for i in range(1, 4):
        lance.write_dataset(_t(4 * i), path, mode="append")
    want = lancenb.dataset(path).versions()
    mp = _latest_manifest(path)
    with open(mp, "rb") as f:
        mf = parse_manifest_file(f.read(), mp)
    txn = mf.transaction()
    raw = frame_manifest(mf.manifest, txn)
    a, b = manifest_span(raw, mp)
    recs = list(message_records(raw, a, b, mp))
    frags = [raw[i:k] for fld, _, i, _, k in recs if fld == 2]
    rest = [raw[i:k] for fld, _, i, _, k in recs if fld != 2]
    assert len(frags) == 4
    # fragments 0 and 1 first, the other fields, then fragments 2 and 3
    msg = b"".join(frags[:2] + rest + frags[2:])
    assert table_pb2.Manifest.FromString(msg) == mf.manifest
    with open(mp, "wb") as f:
        f.write(raw[:a - 4] + struct.pack("<I", len(msg)) + msg + raw[b:])
    got = lancenb.dataset(path).versions()
    assert [v["metadata"] for v in got] == [v["metadata"] for v in want]
    _same_as_pylance(path)


def test_damaged_new_fragment_names_the_manifest(tmp_path):
    path = str(tmp_path / "d")
    lance.write_dataset(_t(0), path)
    lance.write_dataset(_t(4), path, mode="append")
    mp = _latest_manifest(path)
    with open(mp, "rb") as f:
        raw = f.read()
    a, b = manifest_span(raw, mp)
    last = [r for r in message_records(raw, a, b, mp) if r[0] == 2][-1]
    _, _, _, j, k = last
    # the new fragment's data file record claims more bytes than the fragment holds
    files = [r for r in message_records(raw, j, k, mp) if r[0] == 2][0]
    assert files[3] - files[2] == 2 and k - j < 0x7F  # a one-byte length
    bad = bytearray(raw)
    bad[files[2] + 1] = 0x7F
    with open(mp, "wb") as f:
        f.write(bytes(bad))
    with pytest.raises(CorruptFileError, match=r"manifest .*18446744073709551613\.manifest"):
        lancenb.dataset(path, version=1).versions()


@pytest.mark.parametrize("v2_names", [True, False])
def test_open_a_version_by_its_file_name(tmp_path, v2_names):
    """version=k reads that manifest by name (no listing), under either naming."""
    path = str(tmp_path / "d")
    lance.write_dataset(_t(0), path, enable_v2_manifest_paths=v2_names)
    for i in (1, 2):
        lance.write_dataset(_t(4 * i), path, mode="append")
    names = os.listdir(os.path.join(path, "_versions"))
    assert ("3.manifest" in names) is not v2_names
    for k in (1, 2, 3):
        ours = lancenb.dataset(path, version=k)
        assert ours.version == k and ours.to_table().equals(lance.dataset(path, version=k)
                                                            .to_table())
    assert lancenb.dataset(path).checkout_version(2).count_rows() == 8
    for k in (0, 4, 2**64):
        with pytest.raises(DatasetNotFoundError, match=rf"has no version {k} \(it has 1..3\)"):
            lancenb.dataset(path, version=k)


@pytest.mark.parametrize("odd", [[], ["1844674407370955161x.manifest"],
                                 ["²1234567890123456789.manifest"]])
def test_manifest_names_parsed_together_as_one_by_one(odd):
    u = 2**64 - 1
    names = ([f"{u - v:020d}.manifest" for v in range(1, 40)] + odd
             + ["latest_version_hint.json", "5.manifest", "0.manifest", ".tmp.manifest",
                f"{u:020d}.manifest", "99999999999999999999.manifest",
                f"{2**64:d}.manifest", "x" * 29])
    one_by_one: tuple = ([], [])
    for n in names:
        p = parse_manifest_name(n)
        if p is not None:
            one_by_one[p[1]].append(p[0])
    v1, v2 = parse_manifest_names(names)
    assert (sorted(v1), sorted(v2)) == (sorted(one_by_one[0]), sorted(one_by_one[1]))
    assert sorted(v2) == list(range(1, 40)) and v1 == [5]
