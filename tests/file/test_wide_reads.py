"""Many columns read together (issue 23): ``LanceFileReader.read_columns`` and the
tables of ``read_all``/``take_rows`` plan all projected columns at once (coalesced page
reads, mini-block pages of one kind decoded and gathered in one value decode). They
must give what one-column reads give, what pylance reads, and, on damaged pages, the
same errors."""

from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from _tables import assert_tables_equal, flat_columns

from lancenb.errors import CorruptFileError, InvalidInputError
from lancenb.file import LanceFileReader, LanceFileWriter

ROWS = 3000


def _wide_table() -> pa.Table:
    rng = np.random.default_rng(23)
    cols = {}
    for i in range(16):  # random floats: inline-bitpacked at full width
        cols[f"f{i}"] = pa.array(rng.random(ROWS))
    for i in range(8):  # narrow integers: inline-bitpacked at a few bits
        cols[f"n{i}"] = pa.array(rng.integers(0, 50 + i, ROWS, dtype=np.int32))
    cols["const"] = pa.array(np.full(ROWS, 7, np.int64))
    cols.update(flat_columns(ROWS, seed=5))  # every flat type, some with nulls
    cols["st"] = pa.array([{"a": i, "b": f"s{i % 13}"} for i in range(ROWS)])
    cols["li"] = pa.array([list(range(i % 4)) for i in range(ROWS)])
    return pa.table(cols)


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def wide(tmp_path_factory, request):
    t = _wide_table()
    path = tmp_path_factory.mktemp("wide") / f"wide{request.param}.lance"
    # small pages: several pages a column, and pages of different sizes
    with LanceFileWriter(str(path), version=request.param, data_cache_bytes=16 * 1024) as w:
        for i in range(0, ROWS, 1000):
            w.write_batch(t.slice(i, 1000))
    return str(path), t


def test_read_columns_match_one_column_reads_and_pylance(wide):
    path, t = wide
    names = t.column_names
    got = LanceFileReader(path).read_columns(names)
    one = LanceFileReader(path)
    for name, arr in zip(names, got):
        assert_tables_equal(pa.table({name: arr}), pa.table({name: one.read_column(name)}))
    theirs = lance.file.LanceFileReader(path).read_all().to_table()
    assert_tables_equal(LanceFileReader(path).read_all().to_table(), theirs)
    assert_tables_equal(pa.table(dict(zip(names, got))), t)
    # a subset, in another order
    sub = names[::-3]
    assert_tables_equal(pa.table(dict(zip(sub, LanceFileReader(path).read_columns(sub)))),
                        t.select(sub))


def test_read_columns_rows_match_one_column_reads(wide):
    path, t = wide
    names = t.column_names
    # sorted, with duplicates, across chunks and pages, first and last row
    rows = np.array([0, 1, 1, 700, 1023, 1024, 1999, 2000, 2000, 2500, ROWS - 1])
    got = LanceFileReader(path).read_columns(names, rows=rows)
    one = LanceFileReader(path)
    for name, arr in zip(names, got):
        assert_tables_equal(pa.table({name: arr}),
                            pa.table({name: one.read_column(name, rows=rows)}))
    assert_tables_equal(pa.table(dict(zip(names, got))), t.take(rows))
    some = [0, 5, 1024, 2999]  # (pylance's file API takes sorted rows)
    theirs = lance.file.LanceFileReader(path).take_rows(some).to_table()
    assert_tables_equal(LanceFileReader(path).take_rows(some).to_table(), theirs)
    order = [2999, 5, 1024, 5, 0]
    assert_tables_equal(LanceFileReader(path).take_rows(order).to_table(), t.take(order))


def test_read_columns_checks_its_arguments(wide):
    path, _ = wide
    r = LanceFileReader(path)
    with pytest.raises(InvalidInputError, match="no column"):
        r.read_columns(["f0", "nope"])
    with pytest.raises(InvalidInputError, match="out of range"):
        r.read_columns(["f0"], rows=[ROWS])
    assert r.read_columns([]) == []


def _damaged(tmp_path, path: str, field: str, at, value: bytes) -> str:
    """A copy of the file with ``value`` written at ``at(first page of field)``."""
    page = LanceFileReader(path)._backend._column_pages(
        LanceFileReader(path).field_index(field))[0].page
    data = bytearray(Path(path).read_bytes())
    pos = at(page)
    data[pos:pos + len(value)] = value
    out = tmp_path / "damaged.lance"
    out.write_bytes(bytes(data))
    return str(out)


@pytest.mark.parametrize("what", ["chunk table", "chunk header"])
def test_damaged_page_in_a_batch_raises_the_one_column_error(wide, tmp_path, what):
    path, t = wide
    if what == "chunk table":  # the first chunk claims more bytes than the page has
        bad = _damaged(tmp_path, path, "f3", lambda p: p.offsets[0], b"\xf0\xff")
    else:  # the first chunk's value buffer runs past the chunk
        bad = _damaged(tmp_path, path, "f3", lambda p: p.offsets[1] + 2, b"\xff\x7f")
    names = [n for n in t.column_names if n[0] in "fn"]
    for rows in (None, np.array([0, 1, ROWS - 1])):
        with pytest.raises(CorruptFileError) as one:
            LanceFileReader(bad).read_column("f3", rows=rows)
        with pytest.raises(CorruptFileError) as many:
            LanceFileReader(bad).read_columns(names, rows=rows)
        assert str(many.value) == str(one.value)
        assert "column" in str(one.value) and "page 0" in str(one.value)
