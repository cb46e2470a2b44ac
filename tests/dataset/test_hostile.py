"""Hostile datasets and inputs (issue 17): paths that leave the dataset, decompression
bombs, sizes that would allocate before they are checked, deep filters and junk
metadata files. Each test is named after the finding it reproduces."""

from __future__ import annotations

import os
import struct
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
import zstandard

from lancenb.encodings.physical import general
from lancenb.errors import CorruptFileError, LanceError
from lancenb.file import LanceFileReader, LanceFileWriter

BOMB = 64 << 20  # each chunk inflates to this


def _bomb_file(path, *, prefix: int | None = BOMB, content_size: bool = False) -> None:
    """A 2.1 file of 50 mini-block chunks (512 int64 values each) whose zstd units
    inflate to 64 MiB: the writer's compressor is swapped for one emitting the bomb
    (``prefix`` None keeps the true size prefix of 4096 bytes, so the frame lies)."""
    frame = zstandard.ZstdCompressor(level=19, write_content_size=content_size).compress(
        b"\0" * BOMB)
    real = general.compress

    def bomb(data, scheme, level=None):
        return struct.pack("<Q", len(bytes(data)) if prefix is None else prefix) + frame

    general.compress = bomb
    try:
        field = pa.field("x", pa.int64(), metadata={"lance-encoding:compression": "zstd"})
        t = pa.table({"x": pa.array(np.arange(25_600) % 1000 * 7919, pa.int64())},
                     schema=pa.schema([field]))
        with LanceFileWriter(str(path), version="2.1") as w:
            w.write_batch(t)
    finally:
        general.compress = real


_RSS = """
import resource, sys
which, path = sys.argv[1], sys.argv[2]
if which == "lance":
    from lance.file import LanceFileReader
else:
    from lancenb.file import LanceFileReader
r = LanceFileReader(path)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    r.read_all().to_table()
    out = "ok"
except Exception as e:
    out = type(e).__name__
print(out, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024)
"""


def _peak_growth_mib(which: str, path) -> tuple[str, int]:
    got = subprocess.run([sys.executable, "-c", _RSS, which, str(path)], capture_output=True,
                         text=True, timeout=120, check=True).stdout.split()
    return got[0], int(got[1])


@pytest.mark.parametrize("prefix,content_size", [(BOMB, False), (None, False), (None, True)],
                         ids=["prefix-claims-64MiB", "frame-lies-no-size", "frame-lies-sized"])
def test_zstd_chunk_bomb_is_corrupt_and_small(tmp_path, prefix, content_size):
    path = tmp_path / "bomb.lance"
    _bomb_file(path, prefix=prefix, content_size=content_size)
    assert os.path.getsize(path) < 200_000
    with pytest.raises(CorruptFileError, match="chunk 0"):
        LanceFileReader(str(path)).read_all()
    with pytest.raises(LanceError):
        LanceFileReader(str(path)).take_rows([5, 20_000])


def test_zstd_chunk_bomb_peak_memory_next_to_pylance(tmp_path):
    path = tmp_path / "bomb.lance"
    _bomb_file(path)
    ours, grew = _peak_growth_mib("lancenb", path)
    theirs, _ = _peak_growth_mib("lance", path)
    assert ours == "CorruptFileError" and theirs != "ok"
    # one chunk's worth at most (50 chunks x 64 MiB = 3.2 GiB before the fix)
    assert grew < 64


def test_decompress_refuses_claims_over_the_context_limit():
    unit = general.compress(b"a" * 5000, general.ZSTD)
    assert general.decompress(unit, general.ZSTD, "u", limit=5000) == b"a" * 5000
    with pytest.raises(CorruptFileError, match="more than the 4999"):
        general.decompress(unit, general.ZSTD, "u", limit=4999)
    lz = general.compress(b"b" * 5000, general.LZ4)
    with pytest.raises(CorruptFileError, match="claims 5000"):
        general.decompress(lz, general.LZ4, "u", limit=100)
    bare = zstandard.ZstdCompressor(write_content_size=False).compress(b"c" * 10_000)
    assert general.decompress(bare, general.ZSTD, "u", limit=10_000) == b"c" * 10_000
    with pytest.raises(CorruptFileError, match="inflates past"):
        general.decompress(bare, general.ZSTD, "u", limit=9_999)
