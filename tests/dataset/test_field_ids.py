"""Columns resolved by field id at every depth (lancenb.dataset.read.field_ids, retype).

Nested fields renamed, cast and dropped by either library, in 2.0/2.1/2.2 datasets
written by either library, read back by both (scan, take, a nested column by path, a
filter on the renamed field), then compacted and cleaned up and read again: lancenb's
answers must be pylance's. Before, a renamed child read as nulls, and compaction wrote
those nulls over the data. Also: scans with no columns give row counts, as pylance's.
"""

from __future__ import annotations

import datetime

import lance
import pyarrow as pa
import pytest

import lancenb

LIBS = {"lancenb": lancenb, "pylance": lance}


def _rows(n: int, start: int = 0, struct_nulls: bool = True) -> pa.Table:
    ids = range(start, start + n)
    meta = [{"name": f"n{i}", "age": i, "sub": {"x": i, "y": -i}}
            if (i % 7 or not struct_nulls) else None for i in ids]
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "meta": pa.array(meta),
        "l": pa.array([[{"p": i, "q": str(i)}] * (i % 3) for i in ids]),
    })


def _reads(uri: str) -> dict:
    """What each library reads: whole table, a take, a nested column, a filter."""
    out = {}
    for name, lib in LIBS.items():
        ds = lib.dataset(uri)
        if name == "pylance" and ds.data_storage_version == "2.0" and \
                any(len(f.metadata.files) > 1 for f in ds.get_fragments()):
            continue
        out[name] = (ds.to_table(), ds.take([0, 3, 11]),
                     ds.to_table(columns=["meta.nm"]),
                     ds.to_table(filter="meta.nm = 'n8'"))
    return out


def _assert_same(uri: str, fmt: str) -> tuple:
    """lancenb's reads, checked equal to pylance's (except in 2.0: pylance 14 cannot
    read a 2.0 struct whose fields are in two data files, which its own nested cast
    makes; there the test checks lancenb against the model only)."""
    got = _reads(uri)
    if "pylance" in got:
        for a, b in zip(got["lancenb"], got["pylance"]):
            assert a.equals(b), (a.to_pylist()[:3], b.to_pylist()[:3])
    return got["lancenb"]


def _expected(t: pa.Table) -> pa.Table:
    """The model: ``t`` after the renames, the cast and the drop the test applies."""
    meta = pa.array([None if m is None else
                     {"nm": m["name"], "age": m["age"], "sub": {"xx": m["sub"]["x"]}}
                     for m in t.column("meta").to_pylist()],
                    pa.struct([("nm", pa.string()), ("age", pa.int32()),
                               ("sub", pa.struct([("xx", pa.int64())]))]))
    lst = pa.array([[{"pp": e["p"], "q": e["q"]} for e in v] for v in t.column("l").to_pylist()],
                   pa.list_(pa.struct([("pp", pa.int64()), ("q", pa.string())])))
    return pa.table({"id": t.column("id"), "meta": meta, "l": lst})


@pytest.mark.parametrize("fmt", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("writer", ["lancenb", "pylance"])
@pytest.mark.parametrize("evolver", ["lancenb", "pylance"])
def test_nested_evolution_reads_by_id(tmp_path, fmt, writer, evolver):
    if fmt == "2.0" and evolver == "pylance":
        pytest.skip("pylance 14 cannot read back its own nested cast in 2.0 datasets")
    uri = str(tmp_path / "ds")
    base = _rows(20, struct_nulls=fmt != "2.0")  # 2.0 has no struct validity
    LIBS[writer].write_dataset(base, uri, data_storage_version=fmt, max_rows_per_file=8)
    ev = LIBS[evolver]
    ev.dataset(uri).alter_columns({"path": "meta.name", "name": "nm"})
    ev.dataset(uri).alter_columns({"path": "meta.sub.x", "name": "xx"},
                                  {"path": "l.item.p", "name": "pp"})
    _assert_same(uri, fmt)
    ev.dataset(uri).alter_columns({"path": "meta.age", "data_type": pa.int32()})
    ev.dataset(uri).drop_columns(["meta.sub.y"])
    want = _expected(base)
    got = _assert_same(uri, fmt)
    assert got[0].equals(want)
    assert got[2].column(0).to_pylist() == [None if m is None else m["nm"]
                                            for m in want.column("meta").to_pylist()]
    assert got[3].column("id").to_pylist() == [8]
    # appended rows (written with the new names) and a compaction that rewrites all of it
    more = lancenb.dataset(uri).to_table().slice(0, 5)
    ev.write_dataset(more, uri, mode="append")
    ev.dataset(uri).optimize.compact_files(target_rows_per_fragment=1000)
    ev.dataset(uri).cleanup_old_versions(older_than=datetime.timedelta(0))
    got = _assert_same(uri, fmt)
    assert got[0].equals(pa.concat_tables([want, want.slice(0, 5)]))


def test_struct_over_two_files(tmp_path):
    """A struct whose cast child lives in a second data file; a row of the cast reads
    its new values, the renamed sibling its old ones, and a take over both files
    lines them up."""
    uri = str(tmp_path / "ds")
    lance.write_dataset(_rows(30), uri, data_storage_version="2.1", max_rows_per_file=30)
    lance.dataset(uri).alter_columns({"path": "meta.age", "data_type": pa.int16()},
                                     {"path": "meta.name", "name": "nm"})
    frag = lance.dataset(uri).get_fragments()[0]
    assert len(frag.metadata.files) == 2
    ours, ref = lancenb.dataset(uri), lance.dataset(uri)
    for rows in ([0, 29, 7, 8], [5]):
        assert ours.take(rows).equals(ref.take(rows))
    assert ours.to_table(filter="meta.age > 20").equals(ref.to_table(filter="meta.age > 20"))


@pytest.mark.parametrize("kw", [{}, {"filter": "a > 3"}, {"limit": 3, "offset": 2},
                                {"with_row_id": True}, {"batch_size": 3}])
def test_no_columns_gives_row_counts(tmp_path, kw):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(pa.table({"a": range(10)}), uri, max_rows_per_file=4)
    ours, ref = lancenb.dataset(uri), lance.dataset(uri)
    assert ours.to_table(columns=[], **kw).num_rows == ref.to_table(columns=[], **kw).num_rows
    assert ([b.num_rows for b in ours.to_batches(columns=[], **kw)]
            == [b.num_rows for b in ref.to_batches(columns=[], **kw)])
    if "limit" not in kw:  # (pylance refuses count_rows with a limit)
        assert ours.scanner(columns=[], **kw).count_rows() == \
            ref.scanner(columns=[], **kw).count_rows()


def test_cast_out_of_range_names_the_value(tmp_path):
    """A type change that cannot hold a value fails with pylance's words, naming it,
    and commits nothing."""
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(pa.table({"x": [1, 2, 1024]}), uri)
    ds = lancenb.dataset(uri)
    with pytest.raises(ValueError, match="Can't cast value 1024 to type Int8"):
        ds.alter_columns({"path": "x", "data_type": pa.int8()})
    assert lancenb.dataset(uri).version == 1


@pytest.mark.parametrize("lib", ["lancenb", "pylance"])
def test_drop_removes_files_of_only_dropped_fields(tmp_path, lib):
    """A data file left holding only dropped fields leaves its fragment, as pylance
    does; one that still holds a kept field stays."""
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(pa.table({"a": [1, 2], "b": [3, 4]}), uri)
    LIBS[lib].dataset(uri).add_columns({"c": "a * 2", "d": "a * 3"})
    lancenb.dataset(uri).drop_columns(["c", "d"])
    ours, ref = lancenb.dataset(uri), lance.dataset(uri)
    assert [len(f.metadata.files) for f in ref.get_fragments()] == [1]
    assert ours.to_table().equals(ref.to_table())
    lancenb.dataset(uri).drop_columns(["b"])
    assert [f.fields for f in lance.dataset(uri).get_fragments()[0].metadata.files] == [[0, 1]]


def test_add_columns_refuses_a_dotted_name(tmp_path):
    """``meta.z`` is a path, not a top-level name: refused as pylance refuses it
    (pylance cannot read a dataset with such a column back)."""
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(pa.table({"id": [1], "meta": [{"a": 1}]}), uri)
    for new in ({"meta.z": "id * 2"}, pa.field("x.y", pa.int32())):
        with pytest.raises(ValueError, match="cannot contain `.`"):
            lancenb.dataset(uri).add_columns(new)
    assert lancenb.dataset(uri).version == 1


@pytest.mark.parametrize("lib", ["lancenb", "pylance"])
def test_add_children_to_structs_in_2_2(tmp_path, lib):
    """add_columns(pa.field(existing struct, new children)) adds null children (also
    inside a list's struct items) as a schema change only, in 2.2 as pylance; read by
    both, then appended to and read again. Before 2.2 both refuse it."""
    t = pa.table({"id": [1, 2], "meta": [{"a": 1}, {"a": 2}], "l": [[{"p": 1}], []]})
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(t, uri, data_storage_version="2.2")
    ev = LIBS[lib]
    ev.dataset(uri).add_columns(pa.field("meta", pa.struct([("z", pa.int64())])))
    ev.dataset(uri).add_columns([pa.field("l", pa.list_(pa.struct([("w", pa.int64())]))),
                                 pa.field("n", pa.int8())])
    ours, ref = lancenb.dataset(uri), lance.dataset(uri)
    assert len(ref.get_fragments()[0].metadata.files) == 1  # nothing written
    assert ours.schema == ref.schema
    assert ours.to_table().equals(ref.to_table())
    assert ours.to_table().column("meta").to_pylist() == [{"a": 1, "z": None},
                                                          {"a": 2, "z": None}]
    lancenb.write_dataset(ref.to_table(), uri, mode="append")
    assert lancenb.dataset(uri).to_table().equals(lance.dataset(uri).to_table())
    old = str(tmp_path / "old")
    lancenb.write_dataset(t, old, data_storage_version="2.1")
    with pytest.raises(ValueError, match="add sub column is not supported"):
        lancenb.dataset(old).add_columns(pa.field("meta", pa.struct([("z", pa.int64())])))


def test_unmatchable_file_with_renamed_children_is_an_error_not_nulls(tmp_path):
    """A data file whose fields cannot be matched with the manifest's ids (here its
    DataFile lists more fields than it has) and whose struct children are named
    otherwise than the schema's: an error naming the column, never a struct of nulls
    (Arrow's cast would match the children by name)."""
    from lancenb.table.manifest import frame_manifest, parse_manifest_file

    uri = str(tmp_path / "ds")
    lancenb.write_dataset(pa.table({"id": [1, 2], "meta": [{"a": 1, "b": 2}, None]}), uri,
                          data_storage_version="2.1")
    vd = tmp_path / "ds" / "_versions"
    path = sorted(p for p in vd.iterdir() if p.suffix == ".manifest")[0]
    mf = parse_manifest_file(path.read_bytes(), str(path))
    txn = mf.transaction()
    m = mf.manifest
    next(f for f in m.fields if f.name == "a").name = "x"
    df = m.fragments[0].files[0]
    df.fields.append(77)
    df.column_indices.append(9)
    path.write_bytes(frame_manifest(m, txn))
    ds = lancenb.dataset(uri)
    with pytest.raises(lancenb.NotSupportedError, match="'meta'"):
        ds.to_table()
    assert ds.to_table(columns=["id"]).column("id").to_pylist() == [1, 2]
