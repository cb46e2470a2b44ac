"""Blob columns and packed structs against pylance 14, both directions, 2.1 and 2.2:
same layouts and buffer sizes, exact reads, takes."""

import sys
from pathlib import Path

import numpy as np
import pytest

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
        assert [p.encoding for p in a.pages] == [p.encoding for p in b.pages]
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
