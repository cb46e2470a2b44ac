"""Compact profile: zstd chunks fitted to the 2.1 chunk limit (up to 2**15 values),
one-byte dictionary indices, and pages encoded with and without a dictionary."""

import numpy as np
import pyarrow as pa
import pytest
from _tables import assert_tables_equal

from lancenb.encodings import compact
from lancenb.file import LanceFileReader, LanceFileWriter

lance_file = pytest.importorskip("lance.file")

N = 200_000


def _write(path, table, version="2.1", **kw):
    with LanceFileWriter(str(path), table.schema, version=version, **kw) as w:
        w.write_batch(table)
    return str(path)


def _pages(path, col):
    r = LanceFileReader(path)
    md = r.metadata()
    i = md.schema.names.index(col)
    with open(path, "rb") as f:
        raw = f.read()
    out = []
    for p in md.columns[i].pages:
        b0 = p.buffers[0]
        words = np.frombuffer(raw[b0.position:b0.position + b0.size],
                              np.uint32 if md.minor_version >= 2 else np.uint16)
        out.append((p.description, ((words.astype(np.int64) >> 4) + 1) * 8,
                    words.astype(np.int64) & 0xF))
    return out


def _table():
    rng = np.random.default_rng(3)
    return pa.table({
        "sorted": pa.array(np.sort(rng.integers(0, 100, N)).astype(np.int32)),
        "walk": pa.array(np.round(np.cumsum(rng.normal(0, 0.01, N)), 4)),
        "flags": pa.array(rng.choice(np.array(["A", "N", "R"], dtype=object), N).tolist()),
        "dates": pa.array((8000 + rng.integers(0, 2500, N)).astype(np.int32), pa.date32()),
        "nullable": pa.array(np.sort(rng.integers(0, 50, N)), mask=rng.random(N) < 0.01),
    })


def test_split_keeps_powers_of_two():
    b = np.array([0, 8, 16, 21], np.int64)
    assert compact._split(b, np.array([True, False, True])).tolist() == [0, 4, 8, 16, 20, 21]
    assert compact._split(np.array([0, 1, 2], np.int64), np.array([True, False])) is None


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_compact_chunks_fit_and_pylance_reads_them(tmp_path, version):
    t = _table()
    path = _write(tmp_path / "c.lance", t, version, compression="compact")
    default = _write(tmp_path / "d.lance", t, version)
    for col in t.column_names:
        for _enc, nbytes, _log2 in _pages(path, col):
            assert int(nbytes.max()) <= 32 * 1024, col
    # long runs: zstd chunks of 2**15 values
    sorted_pages = _pages(path, "sorted")
    assert any(int(log2.max()) == 15 for _, _, log2 in sorted_pages)
    # nullable pages keep chunks of at most 8192 values (their levels share the chunk)
    assert all(int(log2.max()) <= 13 for _, _, log2 in _pages(path, "nullable"))
    # three-valued strings: a dictionary with one-byte indices under zstd
    flags = _pages(path, "flags")[0][0]
    assert "general(flat(8))" in flags and "dict=" in flags, flags
    # dates of 2500 values: no dictionary beats the dictionary page here
    assert "dict=" not in _pages(path, "dates")[0][0]
    for col in t.column_names:
        mine = sum(int(n.sum()) for _, n, _ in _pages(path, col))
        assert mine <= sum(int(n.sum()) for _, n, _ in _pages(default, col)), col
    r = lance_file.LanceFileReader(path)
    assert_tables_equal(r.read_all().to_table(), t)
    idx = sorted(np.random.default_rng(1).choice(N, 800, replace=False).tolist())
    assert_tables_equal(r.take_rows(idx).to_table(), t.take(idx))
    assert_tables_equal(r.read_range(33_333, 70_000).to_table(), t.slice(33_333, 70_000))
    ours = LanceFileReader(path)
    assert_tables_equal(ours.read_all().to_table(), t)
    assert_tables_equal(ours.take_rows(idx).to_table(), t.take(idx))


def test_compact_level_setting_is_honoured(tmp_path):
    """An explicit compression level is used as given (no higher final pass)."""
    t = _table().select(["sorted"])
    fields = [pa.field("sorted", pa.int32(), metadata={"lancenb:profile": "compact",
                                                       "lance-encoding:compression-level":
                                                       "3"})]
    t = pa.table([t.column(0)], schema=pa.schema(fields))
    path = _write(tmp_path / "l.lance", t)
    md = LanceFileReader(path).metadata()
    layout = md.columns[0].pages[0].layout.mini_block_layout
    assert layout.value_compression.general.compression.level == 3
    assert_tables_equal(lance_file.LanceFileReader(path).read_all().to_table(), t)
