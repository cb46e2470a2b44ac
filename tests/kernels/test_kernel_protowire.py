"""``protowire.fragment_rows`` against the protobuf decoder (the reference): each
fragment's ``physical_rows`` and whether it has a deletion file, from the bytes of a
``Manifest`` message; truncated or malformed bytes give a status, never a read past
the message."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from lancenb.kernels import protowire

from lancenb._proto import table_pb2


def _walk(data: bytes, as_input, capacity=None, start=0, end=None):
    n = capacity if capacity is not None else 64
    rows = np.full(n, 7, np.uint64)
    deleted = np.full(n, 9, np.uint8)
    buf = as_input(np.frombuffer(data, np.uint8)) if data else np.zeros(0, np.uint8)
    got = protowire.fragment_rows(buf, start, len(data) if end is None else end, rows,
                                  deleted)
    return got, rows[:max(got, 0)].tolist(), deleted[:max(got, 0)].tolist()


def test_known_answer(as_input):
    # the module's example: (physical_rows 100), (a deletion file, physical_rows 5)
    data = bytes.fromhex("1202206412041a002005")
    assert _walk(data, as_input) == (2, [100, 5], [0, 1])


fragments = st.lists(st.tuples(
    st.integers(0, 2**64 - 1),  # physical_rows
    st.booleans(),  # a deletion file
    st.integers(0, 3),  # data files
    st.integers(0, 2**64 - 1),  # id
), max_size=12)


@settings(max_examples=40)
@given(frags=fragments, version=st.integers(1, 2**40), tag=st.text(max_size=8))
def test_equals_the_decoder(frags, version, tag, as_input):
    m = table_pb2.Manifest(version=version, tag=tag)
    for rows, has_del, nfiles, fid in frags:
        f = m.fragments.add(id=fid, physical_rows=rows)
        for k in range(nfiles):
            f.files.add(path=f"{k}.lance", fields=[0, k], file_size_bytes=k * 1000)
        if has_del:
            f.deletion_file.num_deleted_rows = rows % 5
    data = m.SerializeToString()
    parsed = table_pb2.Manifest.FromString(data)
    want = ([f.physical_rows for f in parsed.fragments],
            [int(f.HasField("deletion_file")) for f in parsed.fragments])
    assert _walk(data, as_input) == (len(want[0]), *want)
    # a window of a larger buffer (as a manifest file frames its message)
    framed = b"\x00" * 5 + data + b"\xff" * 3
    got = _walk(framed, as_input, start=5, end=5 + len(data))
    assert got == (len(want[0]), *want)
    if frags:
        assert _walk(data, as_input, capacity=len(frags) - 1)[0] == protowire.TOO_MANY


@settings(max_examples=40)
@given(frags=fragments.filter(bool), cut=st.integers(1, 40))
def test_truncated_bytes_give_a_status(frags, cut, as_input):
    m = table_pb2.Manifest(version=1)
    for rows, has_del, nfiles, fid in frags:
        f = m.fragments.add(id=fid, physical_rows=rows)
        for k in range(nfiles):
            f.files.add(path=f"{k}.lance")
        if has_del:
            f.deletion_file.id = 3
    data = m.SerializeToString()
    short = data[:max(0, len(data) - cut)]
    got = _walk(short, as_input)[0]
    # a cut between records is a shorter valid message; inside one, TRUNCATED
    try:
        parsed = table_pb2.Manifest.FromString(short)
    except Exception:  # noqa: BLE001  (the decoder refuses it too)
        assert got < 0
    else:
        assert got in (len(parsed.fragments), protowire.TRUNCATED)


def test_bad_wire_types_and_bounds(as_input):
    assert _walk(bytes([0x13]), as_input)[0] == protowire.BAD_WIRE_TYPE  # field 2, group
    assert _walk(bytes([0x12, 0x05, 0x20]), as_input)[0] == protowire.TRUNCATED
    assert _walk(bytes([0x12, 0x02, 0x20, 0x80]), as_input)[0] == protowire.TRUNCATED
    assert _walk(b"\xff" * 11, as_input)[0] == protowire.TRUNCATED  # an 11-byte varint
    assert _walk(bytes([0x12, 0x00]), as_input, end=5)[0] == protowire.TRUNCATED
    assert _walk(b"", as_input)[0] == 0
