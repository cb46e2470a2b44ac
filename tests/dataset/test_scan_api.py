"""Scanner behaviour a pylance caller relies on, compared with pylance on the same data:
system columns (``_rowid``/``_rowaddr`` in filters, ``_rowoffset``, projection order),
limit/offset and count validation, batch sizes, the plan text's contract, and
``lance_schema``'s LanceField objects."""

from __future__ import annotations

import pickle
import re

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb

LIBS = {"pylance": lance, "lancenb": lancenb}


def _open_both(path):
    return lance.dataset(path), lancenb.dataset(path)


@pytest.fixture(params=["pylance", "lancenb"])
def writer(request):
    return LIBS[request.param]


def _dataset(writer, path, *, rows=60, per_file=17, stable=False, delete=True):
    tbl = pa.table({"a": np.arange(rows), "b": np.arange(rows) * 10})
    writer.write_dataset(tbl, path, max_rows_per_file=per_file,
                         enable_stable_row_ids=stable)
    if delete:
        writer.dataset(path).delete("a % 7 = 3")
    return path


# -- _rowid / _rowaddr in filters ----------------------------------------------------------
@pytest.mark.parametrize("stable", [False, True])
def test_row_id_and_address_filters_equal_pylance(writer, tmp_path, stable):
    path = _dataset(writer, tmp_path / "d", stable=stable)
    theirs, ours = _open_both(path)
    ids = theirs.to_table(columns=[], with_row_id=True).column(0).to_pylist()
    addrs = theirs.to_table(columns=[], with_row_address=True).column(0).to_pylist()
    filters = [f"_rowid = {ids[5]}", f"_rowaddr = {addrs[20]}",
               f"_rowid > {ids[10]} AND a < 40", f"_rowaddr < {addrs[3]} OR b = 500",
               f"_rowid IN ({ids[0]}, {ids[-1]}, 999999)", f"NOT (_rowaddr >= {addrs[8]})",
               f"_rowid = {ids[7]} AND _rowaddr = {addrs[7]}"]
    for flt in filters:
        for kw in ({}, {"with_row_id": True}, {"columns": ["b"]},
                   {"columns": [], "with_row_address": True}):
            want = theirs.to_table(filter=flt, **kw)
            got = ours.to_table(filter=flt, **kw)
            assert got.combine_chunks() == want.combine_chunks(), (flt, kw)
        assert ours.count_rows(flt) == theirs.count_rows(flt), flt


def test_row_id_filter_with_limit_and_batches(tmp_path):
    path = _dataset(lancenb, tmp_path / "d")
    theirs, ours = _open_both(path)
    flt = "_rowaddr >= 4294967296"  # every fragment but the first
    for kw in ({"limit": 5}, {"offset": 4, "limit": 30}, {"batch_size": 3}):
        assert ours.to_table(filter=flt, **kw) == theirs.to_table(filter=flt, **kw).combine_chunks()


# -- _rowoffset and the order of system columns ----------------------------------------------
def test_row_offset_equals_pylance(writer, tmp_path):
    path = _dataset(writer, tmp_path / "d")
    theirs, ours = _open_both(path)
    for kw in ({"columns": ["_rowoffset"]}, {"columns": ["a", "_rowoffset"]},
               {"columns": ["_rowoffset", "a"], "filter": "a > 20"},
               {"columns": ["_rowoffset", "b"], "limit": 9, "offset": 13},
               {"columns": ["_rowoffset"], "with_row_id": True}):
        want = theirs.to_table(**kw).combine_chunks()
        got = ours.to_table(**kw).combine_chunks()
        assert got == want, kw
        assert ours.scanner(**kw).projected_schema == theirs.scanner(**kw).projected_schema


@pytest.mark.parametrize("columns", [
    ["_rowid", "_rowaddr", "_rowoffset"], ["_rowoffset", "_rowid", "_rowaddr"],
    ["_rowaddr", "a"], ["b", "_rowid", "a"], ["_rowoffset", "b", "_rowaddr"]])
def test_system_columns_keep_their_projection_order(tmp_path, columns):
    path = _dataset(lancenb, tmp_path / "d")
    theirs, ours = _open_both(path)
    want = theirs.to_table(columns=columns)
    got = ours.to_table(columns=columns)
    assert got.schema.names == columns
    assert got.combine_chunks() == want.combine_chunks()
    # with_row_id / with_row_address alone append them at the end
    for kw in ({"with_row_id": True}, {"with_row_address": True},
               {"with_row_id": True, "with_row_address": True}):
        assert ours.to_table(columns=["a"], **kw).schema.names == \
            theirs.to_table(columns=["a"], **kw).schema.names


@pytest.mark.parametrize("stable", [False, True])
def test_take_with_system_columns_equals_pylance(tmp_path, stable):
    path = _dataset(lancenb, tmp_path / "d", stable=stable)
    theirs, ours = _open_both(path)
    idx = [0, 1, 16, 17, 30, 2, 40]
    for columns in (["_rowid"], ["_rowid", "_rowid"], ["_rowaddr"], ["_rowaddr", "_rowid"],
                    ["a", "_rowid"], ["_rowid", "a", "_rowaddr"]):
        want = theirs.take(idx, columns=columns)
        got = ours.take(idx, columns=columns)
        assert got.schema == want.schema, columns
        assert got.combine_chunks() == want.combine_chunks(), columns


# -- validation ----------------------------------------------------------------------------
@pytest.mark.parametrize("kw, message", [
    ({"offset": -1, "limit": 10}, "Offset must be non-negative"),
    ({"offset": 10, "limit": -1}, "Limit must be non-negative"),
    ({"offset": -1, "limit": -1}, "Limit must be non-negative")])
def test_limit_offset_messages_as_pylance(tmp_path, kw, message):
    path = _dataset(lancenb, tmp_path / "d", delete=False)
    for lib in (lance, lancenb):
        with pytest.raises(ValueError, match=message):
            lib.dataset(path).to_table(**kw)


def test_count_rows_of_a_scanner_as_pylance(tmp_path):
    path = _dataset(lancenb, tmp_path / "d")
    theirs, ours = _open_both(path)
    for kw in ({}, {"columns": []}, {"with_row_id": True}, {"filter": "a < 30"},
               {"filter": "a < 30", "columns": ["a"], "with_row_id": True}):
        assert ours.scanner(**kw).count_rows() == theirs.scanner(**kw).count_rows(), kw
    for kw in ({"limit": 3}, {"offset": 2, "columns": [], "with_row_id": True}):
        for ds in (theirs, ours):
            with pytest.raises(ValueError, match="Cannot use limit/offset with aggregate"):
                ds.scanner(**kw).count_rows()


# -- batch sizes ---------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [
    {"batch_size": 16}, {"batch_size": 128}, {"batch_size": 500}, {"batch_size": 7},
    {"batch_size": 128, "limit": 450, "offset": 10}, {"batch_size": 100, "columns": ["b"]}])
def test_batch_sizes_equal_pylance(writer, tmp_path, kw):
    tbl = pa.table({"a": np.arange(1000), "b": np.arange(1000).astype(str)})
    writer.write_dataset(tbl, tmp_path / "d", max_rows_per_file=300)
    writer.dataset(tmp_path / "d").delete("a >= 10 AND a < 60")
    theirs, ours = _open_both(tmp_path / "d")
    want = [b.num_rows for b in theirs.to_batches(**kw)]
    assert [b.num_rows for b in ours.to_batches(**kw)] == want
    assert [b.num_rows for b in ours.scanner(**kw).to_batches()] == want


def test_batch_sizes_of_a_large_fragment_are_even(tmp_path):
    # a fragment of several pages: every batch but its last has batch_size rows
    tbl = pa.table({"a": np.arange(30000), "b": np.arange(30000) * 2})
    lance.write_dataset(tbl, tmp_path / "d", max_rows_per_group=1000)
    sizes = [b.num_rows for b in lancenb.dataset(tmp_path / "d").to_batches(batch_size=4096)]
    assert sizes == [4096] * 7 + [30000 - 7 * 4096]
    sizes = [b.num_rows for b in lancenb.dataset(tmp_path / "d").to_batches()]
    assert sizes == [8192] * 3 + [30000 - 3 * 8192]


def test_filtered_batches_are_at_most_batch_size(tmp_path):
    # pylance's sizes after a filter follow its read batches; what a caller can rely on
    # is the bound and the rows
    path = _dataset(lancenb, tmp_path / "d", rows=1000, per_file=300, delete=False)
    theirs, ours = _open_both(path)
    got = list(ours.to_batches(batch_size=64, filter="a % 3 = 0"))
    assert all(0 < b.num_rows <= 64 for b in got)
    assert pa.Table.from_batches(got) == theirs.to_table(filter="a % 3 = 0").combine_chunks()


def test_default_batch_size_from_the_environment(tmp_path, monkeypatch):
    path = _dataset(lancenb, tmp_path / "d", rows=100, per_file=40, delete=False)
    monkeypatch.setenv("LANCE_DEFAULT_BATCH_SIZE", "12")
    theirs, ours = _open_both(path)
    want = [b.num_rows for b in theirs.to_batches()]
    assert [b.num_rows for b in ours.to_batches()] == want == [12, 12, 12, 4] * 2 + [12, 8]
    assert [b.num_rows for b in ours.to_batches(batch_size=30)] == \
        [b.num_rows for b in theirs.to_batches(batch_size=30)]
    monkeypatch.delenv("LANCE_DEFAULT_BATCH_SIZE")
    assert [b.num_rows for b in ours.to_batches()] == [40, 40, 20]


# -- plan text -----------------------------------------------------------------------------
def _read_line(plan: str, n: int = -1) -> str:
    lines = [x for x in plan.splitlines() if x.strip().startswith("LanceRead:")]
    return lines[n]


def test_plan_text_contract_as_pylance(tmp_path):
    path = _dataset(lancenb, tmp_path / "d", rows=100, per_file=100, delete=False)
    for ds in _open_both(path):
        plan = ds.scanner(columns=[], filter="a < 50", with_row_id=True).explain_plan(True)
        assert "projection=[a]" in _read_line(plan) and "row_id=true" in plan
        assert "ProjectionExec: expr=[_rowid@1 as _rowid]" in plan
        assert "full_filter=a < " in _read_line(ds.scanner(filter="a < 5").explain_plan())
        plan = ds.scanner(columns=["b"], limit=3, offset=1).explain_plan()
        assert "range_before=Some(1..4)" in plan
        assert "full_filter=--" in ds.scanner().explain_plan()
        plan = ds.scanner(columns=[], filter="a < 50", with_row_id=True).analyze_plan()
        assert re.search(r"^\s*LanceRead:.*output_rows=50.*rows_scanned=100.*$", plan,
                         re.MULTILINE)
        plan = ds.scanner().analyze_plan()
        assert re.search(r"^\s*LanceRead:.*output_rows=100.*bytes_read=\d+.*iops=\d+"
                         r".*requests=\d+.*$", plan, re.MULTILINE)
        assert plan.startswith("AnalyzeExec")
    # a binary column is read after the filter, for the rows it keeps
    tbl = pa.table({"f": np.arange(4), "values": [b"abcd", b"efgh", b"ijkl", b"mnop"]})
    lancenb.write_dataset(tbl, tmp_path / "bin")
    for ds in _open_both(tmp_path / "bin"):
        plan = ds.scanner(filter="f % 2 = 0").explain_plan(True)
        assert re.search(r"LanceRead: .*projection=\[values\], source=stream\(_rowid\)", plan)
        assert "projection=[f]" in _read_line(plan)


# -- lance_schema --------------------------------------------------------------------------
def _nested_table():
    return pa.table({
        "x": pa.array([1, 2]),
        "s": [{"a": 1, "b": "hello"}, {"a": 2, "b": "world"}],
        "y": [[1.0, 2.0], [3.0, 4.0]],
        "m": pa.array([[("k", 1)], []], pa.map_(pa.string(), pa.int64())),
    })


def _tree(field):
    return (field.name(), field.id(), field.metadata, field.to_arrow(),
            [_tree(c) for c in field.children()])


def test_lance_schema_fields_equal_pylance(writer, tmp_path):
    writer.write_dataset(_nested_table(), tmp_path / "d")
    writer.dataset(tmp_path / "d").update_field_metadata({"x": {"unit": "m"},
                                                          "s.b": {"k": "v"}})
    theirs, ours = _open_both(tmp_path / "d")
    got, want = ours.lance_schema, theirs.lance_schema
    assert [_tree(f) for f in got.fields()] == [_tree(f) for f in want.fields()]
    assert repr(got) == repr(want) and repr(got).startswith("Schema {")
    assert pickle.loads(pickle.dumps(got)) == got
    for name in ("x", "s.a", "s.b", "y", "m", "nope", "s.nope"):
        a, b = got.field(name), want.field(name)
        assert (a is None and b is None) or _tree(a) == _tree(b), name
    assert got.field_case_insensitive("S.B").id() == want.field_case_insensitive("S.B").id()
    assert [f.is_unenforced_primary_key() for f in got.fields()] == \
        [f.is_unenforced_primary_key() for f in want.fields()]


def test_field_metadata_updates_seen_through_fields(tmp_path):
    lancenb.write_dataset(pa.table({"num": [1, 2], "str": ["a", "b"]}), tmp_path / "d")
    ours = lancenb.dataset(tmp_path / "d")
    ours.update_field_metadata({"num": {"type": "numeric", "unit": "count"}})
    ours.update_field_metadata({"num": {"unit": None, "description": "n"}})
    theirs = lance.dataset(tmp_path / "d")
    for ds in (ours, lancenb.dataset(tmp_path / "d"), theirs):
        meta = {f.name(): f.metadata for f in ds.lance_schema.fields()}
        assert meta == {"num": {"type": "numeric", "description": "n"}, "str": {}}


@pytest.mark.parametrize("stable", [False, True])
def test_row_id_predicates_of_delete_and_update_equal_pylance(tmp_path, stable):
    results = []
    for name, lib in LIBS.items():
        path = _dataset(lib, tmp_path / name, stable=stable)
        ds = lib.dataset(path)
        ds.delete("_rowid = 3 OR _rowaddr = 4294967296")
        ds = lib.dataset(path)
        ds.update({"b": "b + 1"}, where="_rowid < 2 OR _rowaddr = 4294967298")
        lib.dataset(path).get_fragments()[1].to_table()  # (readable)
        frag = lib.dataset(path).get_fragments()[2]
        kept = frag.delete("_rowaddr = 8589934593")
        results.append((lib.dataset(path).to_table().sort_by("a"),
                        None if kept is None else kept.deletion_file.num_deleted_rows))
    assert results[0][0] == results[1][0]
    assert results[0][1] == results[1][1]
