"""Nested columns against pylance 14 in both directions: pylance reads lancenb's
files exactly (whole and by take), and lancenb reads pylance's 2.1 and 2.2 files
exactly (whole, ranges and takes)."""

import sys
from pathlib import Path

import numpy as np
import pytest

from lancenb.file import LanceFileReader, LanceFileWriter

lance = pytest.importorskip("lance")
from lance.file import LanceFileReader as PyReader  # noqa: E402
from lance.file import LanceFileWriter as PyWriter  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "file"))
from test_nested import nested_table  # noqa: E402

N = 4000


@pytest.fixture(scope="module")
def table():
    return nested_table(N, seed=11)


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def version(request):
    return request.param


def test_pylance_reads_lancenb(table, version, tmp_path):
    path = str(tmp_path / "ours.lance")
    with LanceFileWriter(path, version=version) as w:
        for i in range(0, N, 700):
            w.write_batch(table.slice(i, 700))
    r = PyReader(path)
    assert r.read_all().to_table().equals(table)
    idx = np.unique(np.random.default_rng(2).integers(0, N, 150))  # strictly increasing
    assert r.take_rows(idx.tolist()).to_table().equals(table.take(idx))


def test_lancenb_reads_pylance(table, version, tmp_path):
    path = str(tmp_path / "theirs.lance")
    with PyWriter(path, version=version) as w:
        w.write_batch(table)
    r = LanceFileReader(path)
    assert r.read_all().to_table().equals(table)
    idx = np.random.default_rng(3).integers(0, N, 300)
    assert r.take_rows(idx).to_table().equals(table.take(idx))
    assert r.read_range(1023, 1500).to_table().equals(table.slice(1023, 1500))


def test_zero_rows_both_ways(tmp_path):
    schema = nested_table(5).schema
    ours = str(tmp_path / "ours.lance")
    with LanceFileWriter(ours, schema):
        pass
    assert PyReader(ours).read_all().to_table().num_rows == 0
    theirs = str(tmp_path / "theirs.lance")
    with PyWriter(theirs, schema=schema):
        pass
    assert LanceFileReader(theirs).read_all().to_table().schema.equals(schema)
