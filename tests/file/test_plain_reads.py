"""Plain pages of wide files read without per-page decoders (issue 23,
``lancenb.file.formats.v2_1_plain``): pylance-written wide files of fixed-width columns, read
and taken through the shared page templates, give what pylance reads; pages that are
not plain or do not check go through the page decoders."""

import lance
import numpy as np
import pyarrow as pa
import pytest
from _tables import assert_tables_equal

import lancenb
from lancenb._proto import file2_pb2
from lancenb.encodings import pb
from lancenb.file import LanceFileReader
from lancenb.file.formats import v2_1_plain
from lancenb.file.formats.v2_1_plain import column_pages, template

ROWS = 3000


def _table() -> pa.Table:
    rng = np.random.default_rng(7)
    cols = {}
    for i in range(12):
        cols[f"f{i}"] = pa.array(rng.random(ROWS))
    for i in range(6):
        cols[f"i{i}"] = pa.array(rng.integers(0, 1000 * (i + 1), ROWS, dtype=np.int64))
    cols["i32"] = pa.array(rng.integers(-5, 5, ROWS, dtype=np.int32))
    cols["u8"] = pa.array(rng.integers(0, 255, ROWS, dtype=np.uint8))
    cols["f32"] = pa.array(rng.random(ROWS).astype(np.float32))
    cols["ts"] = pa.array(rng.integers(0, 10**12, ROWS), pa.timestamp("us"))
    cols["nulls"] = pa.array([None if i % 7 == 0 else float(i) for i in range(ROWS)])
    cols["s"] = pa.array([f"s{i % 11}" for i in range(ROWS)])
    return pa.table(cols)


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def wide(tmp_path_factory, request):
    t = _table()
    path = str(tmp_path_factory.mktemp("plain") / f"p{request.param}.lance")
    # small pages: several a column, cut at different rows in different columns
    with lance.file.LanceFileWriter(path, t.schema, version=request.param,
                                    data_cache_bytes=16 * 1024) as w:
        for i in range(0, ROWS, 1000):
            w.write_batch(t.slice(i, 1000))
    return path, t


def test_plain_fields_share_templates_and_read_as_pylance(wide):
    path, t = wide
    r = LanceFileReader(path)
    b = r._backend
    got = {f.name: b._plain(i) for i, f in enumerate(b.fields)}
    # fixed-width columns without nulls are plain; nullable and string ones are not
    assert all(got[n] is not None for n in t.column_names if n[0] in "fiu" or n == "ts")
    assert got["nulls"] is None and got["s"] is None
    assert any(len(got[n][1]) > 1 for n in got if got[n] is not None)
    tmpls = {id(p.tmpl) for v in got.values() if v is not None for p in v[1]}
    assert len(tmpls) < sum(len(v[1]) for v in got.values() if v is not None)
    theirs = lance.file.LanceFileReader(path).read_all().to_table()
    assert_tables_equal(LanceFileReader(path).read_all().to_table(), theirs)
    assert_tables_equal(pa.table(dict(zip(t.column_names,
                                          LanceFileReader(path).read_columns(t.column_names)))),
                        t)


@pytest.mark.parametrize("whole_page_bytes", [v2_1_plain.TAKE_WHOLE_PAGE_BYTES, 1])
def test_take_across_pages_matches_pylance(wide, monkeypatch, whole_page_bytes):
    # (1 byte: no page is small enough, every column goes through its decoders)
    monkeypatch.setattr(v2_1_plain, "TAKE_WHOLE_PAGE_BYTES", whole_page_bytes)
    path, t = wide
    rows = [0, 1, 1, 999, 1000, 1500, 2047, 2048, 2048, ROWS - 1]
    got = LanceFileReader(path).read_columns(t.column_names, rows=rows)
    assert_tables_equal(pa.table(dict(zip(t.column_names, got))), t.take(rows))
    some = [0, 5, 1024, 2999]
    theirs = lance.file.LanceFileReader(path).take_rows(some).to_table()
    assert_tables_equal(LanceFileReader(path).take_rows(some).to_table(), theirs)


def test_dataset_scan_and_take_match_pylance(tmp_path):
    t = _table().select([f"f{i}" for i in range(12)] + ["i0", "i32", "ts"])
    lance.write_dataset(t, str(tmp_path / "ds"))
    ours, theirs = lancenb.dataset(str(tmp_path / "ds")), lance.dataset(str(tmp_path / "ds"))
    assert_tables_equal(ours.to_table(), theirs.to_table())
    assert_tables_equal(ours.take([2, 1, 2999]), theirs.take([2, 1, 2999]))


def _column(sizes, length, encoding, offsets=(0, 8)) -> bytes:
    cm = file2_pb2.ColumnMetadata()
    page = cm.pages.add()
    page.buffer_offsets.extend(offsets)
    page.buffer_sizes.extend(sizes)
    page.length = length
    if encoding is not None:
        page.encoding.direct.encoding = encoding
    return cm.SerializeToString()


def test_column_pages_refuses_what_it_cannot_check():
    layout = pb.e21.PageLayout(mini_block_layout=pb.e21.MiniBlockLayout(
        value_compression=pb.flat(64), num_buffers=1, num_items=10,
        layers=[pb.e21.RepDefLayer.REPDEF_ALL_VALID_ITEM]))
    enc = pb.pack_any(layout)
    assert template(enc, pa.float64()) is template(enc, pa.float64())
    assert template(enc, pa.float64()).num_items == 10
    ok = column_pages(_column([8, 80], 10, enc), pa.float64(), 10, 1000)
    assert ok is not None and len(ok) == 1 and ok[0].chunk_size == 80
    # buffers past the end of the file, wrong row count, a page's length not its
    # layout's, three buffers, no direct encoding, bytes that are not a ColumnMetadata
    assert column_pages(_column([8, 80], 10, enc), pa.float64(), 10, 50) is None
    assert column_pages(_column([8, 80], 10, enc), pa.float64(), 11, 1000) is None
    assert column_pages(_column([8, 80], 9, enc), pa.float64(), 9, 1000) is None
    assert column_pages(_column([8, 80, 8], 10, enc, (0, 8, 88)), pa.float64(), 10,
                        1000) is None
    assert column_pages(_column([8, 80], 10, None), pa.float64(), 10, 1000) is None
    assert column_pages(b"\xff\xff\xff", pa.float64(), 10, 1000) is None
    # not plain: a dictionary type, a string column, a layout that does not parse
    assert template(enc, pa.string()) is None
    assert template(b"garbage", pa.float64()) is None
