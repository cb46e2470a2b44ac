"""Large and compressible values against pylance 14 in both directions: full-zip pages
whose values are FSST-compressed (text of a few hundred bytes) or compressed one by
one with General zstd (values over 32 KiB), flat and inside lists, with nulls."""

import numpy as np
import pyarrow as pa
import pytest

from lancenb.file import LanceFileReader, LanceFileWriter

lance = pytest.importorskip("lance")
from lance.file import LanceFileReader as PyReader  # noqa: E402
from lance.file import LanceFileWriter as PyWriter  # noqa: E402

WORDS = [f"word{i} ".encode() for i in range(60)]


def _text(rng, words):
    return b"".join(WORDS[j] for j in rng.integers(0, len(WORDS), words))


def large_table(n=600, seed=0):
    rng = np.random.default_rng(seed)
    return pa.table({
        "s300": pa.array([_text(rng, 40).decode() for _ in range(n)]),
        "s300n": pa.array([None if i % 5 == 0 else _text(rng, 40).decode() for i in range(n)],
                          pa.large_string()),
        "b40k": pa.array([None if i % 9 == 4 else _text(rng, 5000) if i % 4 else b""
                          for i in range(n)], pa.binary()),
        "b2m": pa.array([_text(rng, 260_000) if i in (1, n - 1) else None if i % 2 else b"x"
                         for i in range(n)], pa.large_binary()),
        "ls": pa.array([None if i % 7 == 0 else [_text(rng, 50).decode()] * (i % 3)
                        for i in range(n)], pa.list_(pa.string())),
        "lb": pa.array([None if i % 11 == 0 else [_text(rng, 5000)] * (i % 2)
                        for i in range(n)], pa.list_(pa.large_binary())),
    })


EXPECTED = {"s300": "full_zip:fsst(variable(flat(32)))",
            "s300n": "full_zip:fsst(variable(flat(64)))",
            "b40k": "full_zip:general(variable(flat(32)))",
            "b2m": "full_zip:general(variable(flat(64)))",
            "ls": "full_zip:fsst(variable(flat(32)))",
            "lb": "full_zip:general(variable(flat(64)))"}


@pytest.fixture(scope="module")
def table():
    return large_table()


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def files(request, table, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"large{request.param}")
    ours, theirs = str(d / "ours.lance"), str(d / "theirs.lance")
    with LanceFileWriter(ours, version=request.param) as w:
        w.write_batch(table)
    with PyWriter(theirs, version=request.param) as w:
        w.write_batch(table)
    return ours, theirs


@pytest.mark.parametrize("which", [0, 1], ids=["ours", "theirs"])
def test_layouts(files, which):
    md = LanceFileReader(files[which]).metadata()
    got = {f.name: c.pages[0].description for f, c in zip(md.schema, md.columns)}
    assert got == EXPECTED


def test_pylance_reads_lancenb(files, table):
    r = PyReader(files[0])
    assert r.read_all().to_table().equals(table)
    idx = [0, 1, 2, 3, 4, 299, 598, 599]
    assert r.take_rows(idx).to_table().equals(table.take(idx))


def test_lancenb_reads_pylance(files, table):
    r = LanceFileReader(files[1])
    assert r.read_all().to_table().equals(table)
    idx = np.array([599, 0, 1, 4, 4, 77, 300, 598])
    assert r.take_rows(idx).to_table().equals(table.take(idx))
    assert r.read_range(3, 500).to_table().equals(table.slice(3, 500))
