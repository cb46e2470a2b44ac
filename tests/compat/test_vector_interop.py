"""Vectors against pylance 14 in both directions: pylance reads lancenb's 2.1/2.2
vector files exactly (whole and by take), lancenb reads pylance's exactly (whole,
ranges, takes), and both pick the same layouts and buffer sizes."""

import sys
from pathlib import Path

import numpy as np
import pytest

from lancenb.file import LanceFileReader, LanceFileWriter

lance = pytest.importorskip("lance")
from lance.file import LanceFileReader as PyReader  # noqa: E402
from lance.file import LanceFileWriter as PyWriter  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "file"))
from test_vectors import vector_table  # noqa: E402

N = 2500


@pytest.fixture(scope="module")
def table():
    return vector_table(N, seed=21)


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def version(request):
    return request.param


@pytest.fixture(scope="module")
def files(table, version, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"vi{version}")
    ours, theirs = str(d / "ours.lance"), str(d / "theirs.lance")
    with LanceFileWriter(ours, version=version) as w:
        w.write_batch(table)
    with PyWriter(theirs, version=version) as w:
        w.write_batch(table)
    return ours, theirs


def test_pylance_reads_lancenb(files, table):
    r = PyReader(files[0])
    assert r.read_all().to_table().equals(table)
    idx = np.unique(np.random.default_rng(2).integers(0, N, 150))
    assert r.take_rows(idx.tolist()).to_table().equals(table.take(idx))


def test_lancenb_reads_pylance(files, table):
    r = LanceFileReader(files[1])
    assert r.read_all().to_table().equals(table)
    idx = np.random.default_rng(3).integers(0, N, 300)
    assert r.take_rows(idx).to_table().equals(table.take(idx))
    assert r.read_range(127, 1300).to_table().equals(table.slice(127, 1300))


def test_same_layouts(files):
    ours = LanceFileReader(files[0]).metadata()
    theirs = LanceFileReader(files[1]).metadata()
    for a, b in zip(ours.columns, theirs.columns):
        assert [p.description for p in a.pages] == [p.description for p in b.pages]
        assert [[x.size for x in p.buffers] for p in a.pages] == \
            [[x.size for x in p.buffers] for p in b.pages]
