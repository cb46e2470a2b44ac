"""Damaged files raise LanceError subclasses with useful messages, never crash.

Every read of a damaged file must either return (some byte flips only change values,
which a format without checksums cannot notice) or raise a ``LanceError``; anything
else (IndexError, a numpy or Arrow error, a segfault) is a bug.
"""

import struct

import numpy as np
import pyarrow as pa
import pytest
from _tables import flat_table

from lancenb.errors import CorruptFileError, LanceError
from lancenb.file import LanceFileReader, LanceFileWriter
from lancenb.file.format import FOOTER_SIZE


def _read_everything(path):
    r = LanceFileReader(path)
    r.read_all().to_table()
    n = r.num_rows()
    if n:
        r.take_rows([0, n // 2, n - 1]).to_table()
        r.read_range(n // 3, n // 3).to_table()
    for i in range(len(r._backend._c.gbo)):
        r.read_global_buffer(i)


def _expect_lance_error_or_success(path):
    try:
        _read_everything(path)
    except LanceError as e:
        assert str(e)
        return e
    return None


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    d = tmp_path_factory.mktemp("good")
    t = flat_table(3000, seed=3)
    path = d / "good.lance"
    with LanceFileWriter(str(path), data_cache_bytes=64 * 1024) as w:
        for i in range(0, 3000, 500):
            w.write_batch(t.slice(i, 500))
    return path.read_bytes()


def _put(tmp_path, data, name="bad.lance"):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def test_truncated_everywhere(tmp_path, good):
    offsets = sorted(set(list(range(0, len(good), max(1, len(good) // 150)))
                         + list(range(len(good) - 300, len(good)))))
    for cut in offsets:
        path = _put(tmp_path, good[:cut])
        with pytest.raises(LanceError):
            _read_everything(path)


def test_empty_and_tiny_files(tmp_path):
    for data in (b"", b"LANC", b"\x00" * 39):
        with pytest.raises(CorruptFileError, match="too small"):
            LanceFileReader(_put(tmp_path, data))


def test_wrong_magic(tmp_path, good):
    with pytest.raises(CorruptFileError, match="magic"):
        LanceFileReader(_put(tmp_path, good[:-4] + b"LANX"))


def test_footer_positions_past_the_end(tmp_path, good):
    footer = bytearray(good[-FOOTER_SIZE:])
    for field in range(3):
        bad = bytearray(footer)
        struct.pack_into("<Q", bad, field * 8, len(good) + 1000)
        with pytest.raises(CorruptFileError):
            LanceFileReader(_put(tmp_path, good[:-FOOTER_SIZE] + bytes(bad)))
    for count_off in (24, 28):
        bad = bytearray(footer)
        struct.pack_into("<I", bad, count_off, 0xFFFFFFFF)
        with pytest.raises(CorruptFileError):
            LanceFileReader(_put(tmp_path, good[:-FOOTER_SIZE] + bytes(bad)))


def test_unknown_version_is_named(tmp_path, good):
    bad = bytearray(good)
    struct.pack_into("<HH", bad, len(bad) - 8, 7, 9)
    with pytest.raises(LanceError, match="7.9"):
        LanceFileReader(_put(tmp_path, bytes(bad)))


def test_offset_tables_pointing_outside(tmp_path, good):
    _, cmo, gbo, ngb, ncol, _, _ = struct.unpack_from("<QQQIIHH", good, len(good) - FOOTER_SIZE)
    for table, count in ((cmo, ncol), (gbo, ngb)):
        for entry in range(min(count, 4)):
            for value in (len(good), 2**63 - 1, 2**64 - 1):
                bad = bytearray(good)
                struct.pack_into("<Q", bad, table + 16 * entry, value)
                with pytest.raises(CorruptFileError):
                    _read_everything(_put(tmp_path, bytes(bad)))
                bad = bytearray(good)
                struct.pack_into("<Q", bad, table + 16 * entry + 8, value)
                with pytest.raises(CorruptFileError):
                    _read_everything(_put(tmp_path, bytes(bad)))


def test_malformed_protobuf_metadata(tmp_path, good):
    _, cmo, gbo, ngb, ncol, _, _ = struct.unpack_from("<QQQIIHH", good, len(good) - FOOTER_SIZE)
    for table, count in ((cmo, ncol), (gbo, 1)):
        for entry in range(min(count, 3)):
            pos, size = struct.unpack_from("<QQ", good, table + 16 * entry)
            bad = bytearray(good)
            bad[pos:pos + size] = b"\xff" * size
            with pytest.raises(CorruptFileError, match="malformed|protobuf|Any"):
                _read_everything(_put(tmp_path, bytes(bad)))


def test_random_byte_flips_only_raise_lance_errors(tmp_path, good):
    rng = np.random.default_rng(1234)
    meta_start = struct.unpack_from("<Q", good, len(good) - FOOTER_SIZE)[0]
    errors = 0
    for i in range(300):
        bad = bytearray(good)
        # half the damage lands in metadata, half anywhere (page data, chunk headers)
        lo = meta_start - 200 if i % 2 else 0
        for _ in range(int(rng.integers(1, 4))):
            pos = int(rng.integers(max(0, lo), len(bad)))
            bad[pos] = int(rng.integers(0, 256))
        if _expect_lance_error_or_success(_put(tmp_path, bytes(bad))) is not None:
            errors += 1
    assert errors > 0


def test_damaged_chunk_metadata_and_headers(tmp_path):
    """Target the mini-block framing of one page directly."""
    t = pa.table({"s": pa.array([f"value {i}" for i in range(5000)]),
                  "x": pa.array(np.arange(5000, dtype=np.int64), mask=np.arange(5000) % 7 == 0)})
    good_path = tmp_path / "g.lance"
    with LanceFileWriter(str(good_path)) as w:
        w.write_batch(t)
    good = good_path.read_bytes()
    r = LanceFileReader(str(good_path))
    for col in range(2):
        page = r._backend._column_pages(col)[0].page
        meta_off, meta_size = page.offsets[0], page.sizes[0]
        data_off = page.offsets[1]
        for pos in list(range(meta_off, meta_off + meta_size)) + list(
                range(data_off, data_off + 64)):
            for value in (0x00, 0xFF, 0x7F):
                bad = bytearray(good)
                bad[pos] = value
                _expect_lance_error_or_success(_put(tmp_path, bytes(bad)))
