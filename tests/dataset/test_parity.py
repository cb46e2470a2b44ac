"""pylance parity of everyday calls: the same call on the same data through
``lance`` (pylance 14, the reference) and ``lancenb`` gives the same result.

Each case builds the same dataset with both libraries (pylance writes one, lancenb
the other) and compares results or the builtin class of the exception raised.
"""

from __future__ import annotations

import importlib.util
import os

import pyarrow as pa
import pytest

import lancenb

lance = pytest.importorskip("lance")
ColumnOrdering = pytest.importorskip("lance.dataset").ColumnOrdering

TABLE = pa.table({"a": pa.array([5, 3, None, 1, 4, 2, 7, 6], pa.int64()),
                  "b": list("uvwxyzst"),
                  "c": pa.array([0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5])})


@pytest.fixture
def pair(tmp_path):
    """The same 2-fragment dataset with one deleted row, by pylance and by lancenb."""
    ref = lance.write_dataset(TABLE, str(tmp_path / "ref"), max_rows_per_file=5)
    ref.delete("a = 3")
    ours = lancenb.write_dataset(TABLE, str(tmp_path / "ours"), max_rows_per_file=5)
    ours.delete("a = 3")
    return ref, ours


SCANS = [
    {"order_by": ["a"]},
    {"order_by": ["a"], "limit": 3, "offset": 1},
    {"order_by": [ColumnOrdering("a", ascending=False, nulls_first=True)], "limit": 4},
    {"order_by": [ColumnOrdering("b", ascending=False)], "columns": ["b", "a"]},
    {"include_deleted_rows": True, "with_row_id": True},
    {"filter": "a > 2", "use_stats": False},
    {"filter": "a > 2", "prefilter": True, "late_materialization": ["b"],
     "fast_search": True, "use_scalar_index": False, "batch_size_bytes": 64,
     "io_buffer_size": 1 << 16, "scan_in_order": True, "batch_readahead": 2,
     "fragment_readahead": 1},
    {"filter": "c < 5", "late_materialization": True, "columns": ["b"]},
    {"with_row_id": True, "with_row_address": True, "limit": 5},
]


@pytest.mark.parametrize("opts", SCANS, ids=[",".join(o) for o in SCANS])
def test_scanner_options_match_pylance(pair, opts):
    ref, ours = pair
    assert ours.to_table(**opts).to_pydict() == ref.to_table(**opts).to_pydict()
    assert ours.scanner(**opts).to_table().to_pydict() == \
        ref.scanner(**opts).to_table().to_pydict()


@pytest.mark.parametrize("size", [2, 3, 4])
def test_strict_batch_size_matches_pylance(pair, size):
    ref, ours = pair
    for strict in (True, False):
        want = [b.num_rows for b in ref.to_batches(batch_size=size, strict_batch_size=strict)]
        got = [b.num_rows for b in ours.to_batches(batch_size=size, strict_batch_size=strict)]
        if strict:
            assert got == want
        else:  # pylance's non-strict split is its own; both stay within batch_size
            assert sum(got) == sum(want) and max(got) <= size


@pytest.mark.parametrize("call", ["scanner", "to_table"])
def test_misspelled_keyword_is_type_error(pair, call):
    for ds in pair:
        with pytest.raises(TypeError, match="colums"):
            getattr(ds, call)(colums=["a"])
    with pytest.raises(TypeError, match="colums"):  # (pylance's to_batches ignores it)
        pair[1].to_batches(colums=["a"])


def test_include_deleted_rows_needs_row_id(pair):
    for ds in pair:
        with pytest.raises(ValueError, match="with_row_id"):
            ds.to_table(include_deleted_rows=True)


def test_full_text_search_without_an_index(pair):
    """Without an INVERTED index a query must name its columns (then they are searched
    without an index), as pylance; tests/index/fts/ has the indexed searches."""
    for ds in pair:
        with pytest.raises(ValueError, match="INVERTED index has been created"):
            ds.to_table(full_text_query="hello")
    ref, ours = (ds.to_table(full_text_query={"query": "x", "columns": ["b"]}) for ds in pair)
    assert ours.column_names == ref.column_names
    assert ours.sort_by("a").drop_columns(["_score"]) == ref.sort_by("a").drop_columns(
        ["_score"])


def test_explain_plan_names_the_scan(pair):
    _, ours = pair
    plan = ours.scanner(columns=["b"], filter="a > 1", order_by=["b"], limit=2).explain_plan()
    assert "a > 1" in plan and "SortExec" in plan and "fetch=2" in plan
    analyzed = ours.scanner().analyze_plan()
    assert "metrics=[output_rows=7, " in analyzed and "pages_skipped=0]" in analyzed


# -- merge_insert ----------------------------------------------------------------
MI_TARGET = pa.table({"id": [1, 2, 3, 4], "v": ["a", "b", "c", "d"], "n": [10, 20, 30, 40]})
MI_SOURCE = pa.table({"id": [2, 3, 9], "v": ["B", "C", "Z"], "n": [21, 29, 99]})
MERGES = {
    "update-if-target-older": (lambda b: b.when_matched_update_all("target.n < source.n")
                               .when_not_matched_insert_all(), MI_SOURCE),
    "update-if-source-literal": (lambda b: b.when_matched_update_all("source.v = 'C'"),
                                 MI_SOURCE),
    "matched-delete": (lambda b: b.when_matched_delete(), MI_SOURCE),
    "by-source-delete-where": (lambda b: b.when_not_matched_by_source_delete("n > 35"),
                               MI_SOURCE),
    "delete-insert-delete": (lambda b: b.when_matched_delete().when_not_matched_insert_all()
                             .when_not_matched_by_source_delete(), MI_SOURCE),
    "partial-upsert": (lambda b: b.when_matched_update_all().when_not_matched_insert_all(),
                       pa.table({"id": [2, 9], "n": [0, 1]})),
    "partial-reordered-update": (lambda b: b.when_matched_update_all(),
                                 pa.table({"n": [0, 1], "id": [2, 3]})),
    "fail-without-match": (lambda b: b.when_matched_fail().when_not_matched_insert_all(),
                           pa.table({"id": [9], "v": ["x"], "n": [1]})),
}


@pytest.mark.parametrize("name", list(MERGES))
def test_merge_insert_matches_pylance(tmp_path, name):
    build, source = MERGES[name]
    ref = lance.write_dataset(MI_TARGET, str(tmp_path / "ref"))
    ours = lancenb.write_dataset(MI_TARGET, str(tmp_path / "ours"))
    want = build(ref.merge_insert("id")).execute(source)
    got = build(ours.merge_insert("id")).execute(source)
    assert got == want
    assert ours.to_table().sort_by("id").to_pydict() == ref.to_table().sort_by("id").to_pydict()
    # and each library reads what the other wrote
    assert lance.dataset(ours.uri).to_table().sort_by("id").to_pydict() == \
        lancenb.dataset(ref.uri).to_table().sort_by("id").to_pydict()


@pytest.mark.parametrize("how", ["fail", "ambiguous"])
def test_merge_insert_refusals_are_oserrors_like_pylance(tmp_path, how):
    ref = lance.write_dataset(MI_TARGET, str(tmp_path / "ref"))
    ours = lancenb.write_dataset(MI_TARGET, str(tmp_path / "ours"))
    for ds in (ref, ours):
        with pytest.raises(OSError):
            if how == "fail":
                ds.merge_insert("id").when_matched_fail().execute(
                    pa.table({"id": [1], "v": ["x"], "n": [1]}))
            else:
                ds.merge_insert("id").when_matched_update_all().execute(
                    pa.table({"id": [2, 2], "v": ["x", "y"], "n": [1, 2]}))
    assert ours.version == 1 and ref.version == 1  # nothing committed
    with pytest.raises(lancenb.InvalidInputError, match="no column 'zz'"):
        ours.merge_insert("id").when_matched_update_all("source.zz > 1").execute(MI_SOURCE)


# -- exceptions: the builtin classes pylance raises ---------------------------------
def _raises_same(ref_call, our_call, builtin):
    with pytest.raises(builtin):
        ref_call()
    with pytest.raises(builtin) as e:
        our_call()
    assert isinstance(e.value, lancenb.LanceError)


def test_exceptions_are_pylance_builtins(tmp_path):
    r, o = str(tmp_path / "r"), str(tmp_path / "o")
    _raises_same(lambda: lance.dataset(r), lambda: lancenb.dataset(o), ValueError)
    lance.write_dataset(TABLE, r)
    lancenb.write_dataset(TABLE, o)
    _raises_same(lambda: lance.write_dataset(TABLE, r), lambda: lancenb.write_dataset(TABLE, o),
                 OSError)
    bad = pa.table({"a": ["s"], "b": ["x"], "c": [1.0]})
    _raises_same(lambda: lance.write_dataset(bad, r, mode="append"),
                 lambda: lancenb.write_dataset(bad, o, mode="append"), OSError)
    extra = TABLE.append_column("d", pa.array([0] * 8))
    _raises_same(lambda: lance.write_dataset(extra, r, mode="append"),
                 lambda: lancenb.write_dataset(extra, o, mode="append"), OSError)
    _raises_same(lambda: lance.dataset(r, version=9), lambda: lancenb.dataset(o, version=9),
                 ValueError)
    _raises_same(lambda: lance.dataset(r, version="nosuch"),
                 lambda: lancenb.dataset(o, version="nosuch"), ValueError)
    _raises_same(lambda: lance.dataset(r).to_table(columns=["zz"]),
                 lambda: lancenb.dataset(o).to_table(columns=["zz"]), ValueError)
    _raises_same(lambda: lance.dataset(r).to_table(filter="zz > 1"),
                 lambda: lancenb.dataset(o).to_table(filter="zz > 1"), ValueError)


# -- conveniences -----------------------------------------------------------------
def test_write_inputs_like_pylance(tmp_path):
    pd = pytest.importorskip("pandas")
    import pyarrow.dataset as pads

    rows = [{"a": 1, "b": "x"}, {"a": 2, "b": None}]
    df = pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5]}, index=[10, 20])
    for data in (rows, df, pads.dataset(TABLE)):
        ref = lance.write_dataset(data, str(tmp_path / "r"), mode="overwrite")
        ours = lancenb.write_dataset(data, str(tmp_path / "o"), mode="overwrite",
                                     commit_message="load")
        assert ours.schema == ref.schema  # pandas metadata included
        assert ours.to_table() == ref.to_table()
        assert lance.dataset(ours.uri).read_transaction(ours.version) \
            .transaction_properties == {"__lance_commit_message": "load"}
    assert ours.to_pandas().equals(ref.to_pandas())
    # an append of some of the columns: nulls in the others
    part = pa.table({"a": [9]})
    lance.write_dataset(part, ref.uri, mode="append")
    lancenb.write_dataset(part, ours.uri, mode="append")
    assert lancenb.dataset(ours.uri).to_table() == lance.dataset(ref.uri).to_table()
    with pytest.raises(TypeError, match="modee"):
        lancenb.write_dataset(rows, str(tmp_path / "x"), modee="create")
    with pytest.raises(lancenb.InvalidInputError, match="DatasetBasePath"):
        lancenb.write_dataset(rows, str(tmp_path / "x"), initial_bases=[object()])
    props = {"who": "me"}
    for lib, p in ((lance, "r2"), (lancenb, "o2")):
        lib.write_dataset(rows, str(tmp_path / p), transaction_properties=props,
                          commit_message="m", data_cache_bytes=1 << 20, max_page_bytes=1 << 20)
    assert lance.dataset(str(tmp_path / "o2")).read_transaction(1).transaction_properties == \
        lance.dataset(str(tmp_path / "r2")).read_transaction(1).transaction_properties


def test_dataset_conveniences_like_pylance(pair):
    ref, ours = pair
    assert ours.has_stable_row_ids is ref.has_stable_row_ids is False
    if importlib.util.find_spec("pandas"):  # no dependency of lancenb (make test-oldest)
        assert ours.to_pandas(columns=["b"], filter="a > 2").equals(
            ref.to_pandas(columns=["b"], filter="a > 2"))
    s = ours.sample(3, columns=["b"])
    assert s.num_rows == 3 and set(s["b"].to_pylist()) <= set(ours.to_table()["b"].to_pylist())
    assert ours.sample(100, randomize_order=False) == ours.to_table()
    old_r, old_o = lance.dataset(ref.uri, version=1), lancenb.dataset(ours.uri, version=1)
    old_r.checkout_latest()
    old_o.checkout_latest()
    assert old_o.version == old_r.version == 2
    assert old_o.to_table() == old_r.to_table()


def test_version_and_slice_like_pylance(tmp_path):
    meta = TABLE.replace_schema_metadata({"k": "v"})
    ref = lance.write_dataset(meta, str(tmp_path / "r"), max_rows_per_file=3)
    ours = lancenb.write_dataset(meta, str(tmp_path / "o"), max_rows_per_file=3)
    assert ours.schema_metadata == ref.schema_metadata == {"k": "v"}
    for a, b in [(1, 5), (0, 2), (6, 20), (4, 4)]:
        assert ours.slice(a, b, columns=["b"]) == ref.slice(a, b, columns=["b"])
    g, w = ours.get_version(), ref.get_version()
    assert g["version"] == w["version"] == 1
    assert {k: v for k, v in g["metadata"].items() if k != "total_files_size"} == \
        {k: v for k, v in w["metadata"].items() if k != "total_files_size"}


# -- table-driven: one call on both libraries' copy of the data, same answer ---------
def _rows(t):
    return t.to_pydict() if isinstance(t, pa.Table) else t


READS = {  # name -> call on (dataset); compared after _rows
    "LanceDataset.schema": lambda d: d.schema,
    "LanceDataset.version": lambda d: d.version,
    "LanceDataset.latest_version": lambda d: d.latest_version,
    "LanceDataset.max_field_id": lambda d: d.max_field_id,
    "LanceDataset.count_rows": lambda d: (d.count_rows(), d.count_rows("a > 2")),
    "LanceDataset.head": lambda d: d.head(3),
    "LanceDataset.take": lambda d: d.take([6, 0, 3], columns=["b", "a"]),
    "LanceDataset.to_table": lambda d: d.to_table(columns=["c"], filter="b != 'u'"),
    "LanceDataset.to_batches": lambda d: pa.Table.from_batches(list(d.to_batches())),
    "LanceDataset.scanner": lambda d: d.scanner(columns=["a"], limit=2).to_table(),
    "LanceDataset.versions": lambda d: [v["version"] for v in d.versions()],
    "LanceDataset.checkout_version": lambda d: d.checkout_version(1).count_rows(),
    "LanceDataset.get_fragments": lambda d: [f.count_rows() for f in d.get_fragments()],
    "LanceDataset.get_fragment": lambda d: d.get_fragment(1).to_table(),
    "LanceDataset.stable_row_ids": lambda d: bool(getattr(d, "stable_row_ids",
                                                          d.has_stable_row_ids)),
    "LanceDataset.tags": lambda d: d.tags.list(),
    "LanceDataset.initial_storage_options": lambda d: d.initial_storage_options,
    "LanceDataset.latest_storage_options": lambda d: d.latest_storage_options(),
    "LanceScanner.to_table": lambda d: d.scanner(filter="a < 5").to_table(),
    "LanceScanner.to_batches": lambda d: pa.Table.from_batches(
        list(d.scanner(columns=["b"]).to_batches())),
    "LanceScanner.to_reader": lambda d: d.scanner(columns=["c"]).to_reader().read_all(),
    "LanceScanner.count_rows": lambda d: d.scanner(filter="c > 2").count_rows(),
    "LanceScanner.projected_schema": lambda d: d.scanner(columns=["c", "a"]).projected_schema,
    "LanceScanner.dataset_schema": lambda d: d.scanner(columns=["c"]).dataset_schema,
    "LanceScanner.head": lambda d: d.scanner(columns=["a"]).head(4),
    "LanceScanner.to_pandas": lambda d: d.scanner(columns=["a"]).to_pandas().fillna(-1).to_dict(),
    "LanceFragment.count_rows": lambda d: [f.count_rows("a > 1") for f in d.get_fragments()],
    "LanceFragment.to_table": lambda d: d.get_fragments()[0].to_table(columns=["b"]),
    "LanceFragment.to_batches": lambda d: pa.Table.from_batches(
        list(d.get_fragments()[1].to_batches())),
    "LanceFragment.head": lambda d: d.get_fragments()[1].head(2),
    "LanceFragment.to_pandas": lambda d: d.get_fragments()[0].to_pandas(
        columns=["b", "c"], filter="c > 1").to_dict(),
    "LanceFragment.take": lambda d: d.get_fragments()[0].take([0, 2]),
    "LanceFragment.scanner": lambda d: d.get_fragments()[0].scanner(filter="a > 1").to_table(),
    "LanceFragment.schema": lambda d: d.get_fragments()[0].schema,
    "LanceFragment.fragment_id": lambda d: [f.fragment_id for f in d.get_fragments()],
    "LanceFragment.physical_rows": lambda d: [f.physical_rows for f in d.get_fragments()],
    "LanceFragment.num_deletions": lambda d: [f.num_deletions for f in d.get_fragments()],
    "LanceFragment.data_files": lambda d: [len(f.data_files()) for f in d.get_fragments()],
    "LanceFragment.deletion_file": lambda d: [f.deletion_file() is None
                                              for f in d.get_fragments()],
    "LanceFragment.metadata": lambda d: [f.metadata.physical_rows for f in d.get_fragments()],
}


@pytest.mark.parametrize("name", list(READS))
def test_reads_match_pylance(pair, name):
    ref, ours = pair
    call = READS[name]
    try:
        want = _rows(call(ref))
    except Exception as e:  # pylance refuses: lancenb must refuse with the same builtin
        with pytest.raises(type(e).__mro__[1] if type(e).__mro__[1] is not Exception
                           else type(e)):
            call(ours)
        return
    assert _rows(call(ours)) == want


WRITES = {  # name -> change on (dataset); the tables after it are compared
    "LanceDataset.delete": lambda d: d.delete("c > 6"),
    "LanceDataset.update": lambda d: d.update({"c": "c * 2"}, where="a < 3"),
    "LanceDataset.add_columns": lambda d: d.add_columns({"d": "a + 1"}),
    "LanceDataset.drop_columns": lambda d: d.drop_columns(["c"]),
    "LanceDataset.alter_columns": lambda d: d.alter_columns({"path": "b", "name": "bb"}),
    "LanceDataset.merge": lambda d: d.merge(pa.table({"a": [1, 2], "e": ["p", "q"]}), "a"),
    "LanceDataset.restore": lambda d: d.checkout_version(1).restore(),
    "LanceDataset.insert": lambda d: d.insert(TABLE.slice(0, 2)),
    "LanceDataset.merge_insert": lambda d: d.merge_insert("a").when_matched_update_all()
    .execute(TABLE.slice(0, 3)),
    "LanceDataset.cleanup_old_versions": lambda d: d.cleanup_old_versions(retain_versions=1),
    "LanceDataset.optimize": lambda d: d.optimize.compact_files(),
    "LanceDataset.checkout_latest": lambda d: d.checkout_latest(),
    "Tags.create": lambda d: d.tags.create("v1", 1),
    "Tags.update": lambda d: (d.tags.create("v1", 1), d.tags.update("v1", 2)),
    "Tags.delete": lambda d: (d.tags.create("v1", 1), d.tags.delete("v1")),
    "Tags.get_version": lambda d: (d.tags.create("v1", 2), d.tags.get_version("v1"))[1],
    "Tags.list": lambda d: (d.tags.create("v1", 2), sorted(d.tags.list()))[1],
    "Tags.list_ordered": lambda d: (d.tags.create("zz", 1), d.tags.create("aa", 2),
                                    d.tags.create("mm", 1),
                                    [[n for n, _ in d.tags.list_ordered(o)]
                                     for o in (None, "asc", "desc")])[-1],
}


@pytest.mark.parametrize("name", list(WRITES))
def test_changes_match_pylance(pair, name):
    ref, ours = pair
    change = WRITES[name]
    r_out, o_out = change(ref), change(ours)
    if isinstance(r_out, (int, list)):
        assert o_out == r_out
    ref = lance.dataset(ref.uri)
    ours_re = lancenb.dataset(ours.uri)
    if name != "LanceDataset.optimize":  # (pylance may commit compaction in two steps)
        assert ours_re.version == ref.version
    assert ours_re.schema == ref.schema
    key = ref.schema.names[0]
    assert ours_re.to_table().sort_by(key) == ref.to_table().sort_by(key)
    # pylance reads lancenb's result the same
    assert lance.dataset(ours.uri).to_table().sort_by(key) == ref.to_table().sort_by(key)


# names compared with pylance by the other tests of this module (scripts/parity.py
# counts a name as tested when "Surface.name" is written in this file)
COVERED_ABOVE = [
    "LanceDataset.sample", "LanceDataset.to_pandas", "LanceDataset.has_stable_row_ids",
    "LanceDataset.slice", "LanceDataset.get_version", "LanceDataset.schema_metadata",
    "LanceDataset.uri", "LanceDataset.config", "LanceDataset.metadata",
    "MergeInsertBuilder.when_matched_update_all", "MergeInsertBuilder.when_matched_delete",
    "MergeInsertBuilder.when_matched_fail", "MergeInsertBuilder.when_not_matched_insert_all",
    "MergeInsertBuilder.when_not_matched_by_source_delete", "MergeInsertBuilder.execute",
    "module.write_dataset", "module.dataset", "module.LanceDataset",
]


def test_uri_like_pylance(pair):
    from pathlib import Path

    ref, ours = pair
    assert Path(ours.uri).name == Path(ref.uri).name.replace("ref", "ours")


def test_write_progress_callbacks_like_pylance(tmp_path):
    progress_mod = pytest.importorskip("lance.progress")

    class Recorder(progress_mod.FragmentWriteProgress):
        def __init__(self):
            self.calls = []

        def begin(self, fragment, **kwargs):
            self.calls.append(("begin", fragment.physical_rows, len(fragment.files)))

        def complete(self, fragment, **kwargs):
            self.calls.append(("complete", fragment.physical_rows, len(fragment.files)))

    data = pa.table({"a": list(range(10))})
    ref, ours = Recorder(), Recorder()
    lance.write_dataset(data, str(tmp_path / "r"), max_rows_per_file=4, progress=ref)
    ds = lancenb.write_dataset(data, str(tmp_path / "o"), max_rows_per_file=4, progress=ours)
    begins = [c for c in ours.calls if c[0] == "begin"]
    assert begins == [c for c in ref.calls if c[0] == "begin"] == [("begin", None, 0)] * 3
    done = [c for c in ours.calls if c[0] == "complete"]
    # every fragment completes once, with its file and rows (pylance 14 sometimes
    # misses the last one's complete call)
    assert done == [("complete", f.count_rows(), 1) for f in ds.get_fragments()]
    assert set(c for c in ref.calls if c[0] == "complete") <= set(done)


def test_commits_and_conflicts_are_logged(tmp_path, caplog):
    import logging

    caplog.set_level(logging.DEBUG, logger="lancenb")
    ds = lancenb.write_dataset(TABLE, str(tmp_path / "o"))
    stale = lancenb.dataset(ds.uri)
    ds.delete("a = 1")
    # rebased over the other delete (the commit looks the latest version up first, so
    # no attempt at version 2 is made)
    stale.delete("a = 2")
    msgs = [(r.name, r.getMessage()) for r in caplog.records if r.name.startswith("lancenb")]
    assert ("lancenb.commit", f"{ds.uri}: committed version 1 (overwrite, read version 0)") \
        in msgs
    assert ("lancenb.commit", f"{ds.uri}: committed version 3 (delete, read version 1)") \
        in msgs
    assert not any("retrying" in m for _, m in msgs)
    lancenb.dataset(ds.uri).checkout_version(1).restore()
    with pytest.raises(lancenb.CommitConflictError):
        stale.update({"c": "c + 1"})  # restore happened after its read: a conflict
    assert any(r.name == "lancenb.commit" and "update commit (read version 3) refused"
               in r.getMessage() for r in caplog.records)


def test_config_and_table_metadata_read_and_kept_like_pylance(tmp_path):
    ref = lance.write_dataset(TABLE, str(tmp_path / "r"))
    ref.update_config({"k1": "v1"})
    ref.update_metadata({"m": "n"})
    ours = lancenb.dataset(ref.uri)
    assert ours.config() == lance.dataset(ref.uri).config() == {"k1": "v1"}
    assert ours.metadata == lance.dataset(ref.uri).metadata == {"m": "n"}
    ours.delete("a = 1")  # lancenb's commits carry both forward
    assert lance.dataset(ref.uri).config() == {"k1": "v1"}
    assert lance.dataset(ref.uri).metadata == {"m": "n"}
    fresh = lancenb.write_dataset(TABLE, str(tmp_path / "o"))
    assert fresh.config() == lance.write_dataset(TABLE, str(tmp_path / "r2")).config() == {}


def test_fragment_operations_and_commit_like_pylance(tmp_path):
    """"module.LanceFragment", "LanceFragment.create", "LanceFragment.delete",
    "module.LanceOperation", "LanceDataset.commit", "MergeInsertBuilder.conflict_retries",
    "MergeInsertBuilder.retry_timeout", "module.LanceScanner" """
    import datetime

    results = []
    for lib, name in ((lance, "r"), (lancenb, "o")):
        uri = str(tmp_path / name)
        ds = lib.write_dataset(pa.table({"a": [1, 2, 3, 4]}), uri)
        assert isinstance(ds.scanner(), lib.LanceScanner)
        meta = lib.LanceFragment.create(uri, pa.table({"a": [7, 8]}))
        ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Append([meta]),
                                     read_version=ds.version)
        frag = ds.get_fragments()[0]
        assert isinstance(frag, lib.LanceFragment)
        assert frag.delete("a > 0") is None  # every row: the fragment would go
        new = frag.delete("a > 2")
        ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Delete([new], [], "a > 2"),
                                     read_version=ds.version)
        counts = ds.merge_insert("a").when_matched_update_all().conflict_retries(3) \
            .retry_timeout(datetime.timedelta(seconds=1)).execute(pa.table({"a": [1, 9]}))
        results.append((new.physical_rows, new.num_deletions, ds.version, counts,
                        ds.to_table().sort_by("a").to_pydict()))
    assert results[0] == results[1]


@pytest.mark.parametrize("fmt", ["2.0", "2.1", "2.2"])
def test_data_storage_version_like_pylance(tmp_path, fmt):
    """"LanceDataset.data_storage_version" when given"""
    ref = lance.write_dataset(TABLE, str(tmp_path / "r"), data_storage_version=fmt)
    ours = lancenb.write_dataset(TABLE, str(tmp_path / "o"), data_storage_version=fmt)
    assert ours.data_storage_version == ref.data_storage_version == fmt
    assert lance.dataset(ours.uri).data_storage_version == fmt


# -- configuration and metadata updates (UpdateConfig transactions) --------------------
def _meta_calls(ds):
    out = [ds.update_config({"k1": "v1", "k2": "v2"}), ds.delete_config_keys(["k2"]),
           ds.update_metadata({"m": "n", "m2": "x"}), ds.update_metadata({"m2": None}),
           ds.update_schema_metadata({"s": "t"}), ds.update_field_metadata({"b": {"f": "g"}})]
    with pytest.warns(DeprecationWarning):
        out.append(ds.replace_schema_metadata({"s2": "t2"}))
    with pytest.warns(DeprecationWarning):
        out.append(ds.replace_field_metadata("a", {"f2": "g2"}))
    out += [ds.update_config({"k3": "v3"}, replace=True),
            ds.update_field_metadata({"a": {"f3": "g3"}}, replace=False)]
    return out


def test_config_and_metadata_updates_like_pylance(pair):
    """"LanceDataset.update_config", "LanceDataset.delete_config_keys",
    "LanceDataset.update_metadata", "LanceDataset.update_schema_metadata",
    "LanceDataset.update_field_metadata", "LanceDataset.replace_schema_metadata",
    "LanceDataset.replace_field_metadata", "LanceDataset.read_transaction" """
    ref, ours = pair
    assert _meta_calls(ours) == _meta_calls(ref)
    for a, b in ((lancenb.dataset(ours.uri), lance.dataset(ref.uri)),
                 (lance.dataset(ours.uri), lancenb.dataset(ref.uri))):  # both directions
        assert a.version == b.version == 12
        assert a.schema == b.schema and a.config() == b.config() == {"k3": "v3"}
        assert a.metadata == b.metadata == {"m": "n"}
        assert a.to_table() == b.to_table()
    for v in range(3, 13):  # the same UpdateConfig transactions, read by both
        for x, y in ((ours, ref), (lance.dataset(ours.uri), lancenb.dataset(ref.uri))):
            tx, tr = x.read_transaction(v), y.read_transaction(v)
            assert tx.read_version == tr.read_version == v - 1
            assert type(tx.operation).__name__ == type(tr.operation).__name__ == "UpdateConfig"
            for k in ("config_updates", "table_metadata_updates", "schema_metadata_updates"):
                a, b = getattr(tx.operation, k), getattr(tr.operation, k)
                assert (a is None and b is None) or (a.updates, a.replace) == \
                    (b.updates, b.replace)
            fa, fb = tx.operation.field_metadata_updates, tr.operation.field_metadata_updates
            assert {k: (u.updates, u.replace) for k, u in (fa or {}).items()} == \
                {k: (u.updates, u.replace) for k, u in (fb or {}).items()}
    # lancenb's data commits keep what pylance set, and the reverse
    ours.delete("a = 5")
    lance.dataset(ours.uri).delete("a = 6")
    assert lancenb.dataset(ours.uri).config() == {"k3": "v3"}
    assert lancenb.dataset(ours.uri).schema == lance.dataset(ref.uri).schema


def test_history_and_files_like_pylance(pair):
    """"LanceDataset.get_transactions", "LanceDataset.version_refs",
    "LanceDataset.fragment_ids", "LanceDataset.tracked_files", "LanceDataset.all_files",
    "LanceDataset.stats", "LanceDataset.lance_schema", "LanceDataset.base_paths",
    "LanceDataset.validate" """
    ref, ours = pair
    tr, to = ref.get_transactions(5), ours.get_transactions(5)
    assert [type(t.operation).__name__ for t in to] == \
        [type(t.operation).__name__ for t in tr] == ["Delete", "Overwrite"]
    assert to[0].operation.predicate == tr[0].operation.predicate == "a = 3"
    assert [f.id for f in to[0].operation.updated_fragments] == \
        [f.id for f in tr[0].operation.updated_fragments]
    want = tr[1].operation.new_schema  # (pylance's LanceSchema, lancenb's pa.Schema)
    assert to[1].operation.new_schema == getattr(want, "to_pyarrow", lambda: want)()
    assert ours.get_transactions(1)[0].uuid == lance.dataset(ours.uri).read_transaction(2).uuid
    assert ours.version_refs() == [dict(r) for r in ref.version_refs()]
    assert ours.fragment_ids() == list(ref.fragment_ids()) == [0, 1]

    def tracked(ds):
        t = ds.tracked_files().read_all()
        return sorted((r["version"], r["type"], r["path"].split("/")[0])  # (pylance's order
                      for r in t.to_pylist()), t.schema                   # varies)

    assert tracked(ours) == tracked(ref)
    names = {p.split("/")[-1] for p in ours.tracked_files().read_all()["path"].to_pylist()}
    assert names == {p.split("/")[-1] for p in
                     lance.dataset(ours.uri).tracked_files().read_all()["path"].to_pylist()}

    def files(ds):
        t = ds.all_files().read_all()
        return sorted(p.split("/")[0] for p in t["path"].to_pylist()), t.schema

    assert files(ours) == files(ref)
    assert sorted(ours.all_files().read_all()["path"].to_pylist()) == \
        sorted(lance.dataset(ours.uri).all_files().read_all()["path"].to_pylist())
    assert ours.stats.dataset_stats() == ref.stats.dataset_stats()
    assert [(f.id, f.bytes_on_disk) for f in ours.stats.data_stats().fields] == \
        [(f.id, f.bytes_on_disk) for f in lance.dataset(ours.uri).stats.data_stats().fields]
    assert ours.lance_schema.to_pyarrow() == ref.lance_schema.to_pyarrow()
    assert ours.base_paths() == ref.base_paths() == {}
    assert ours.validate() is None and ref.validate() is None


def test_truncate_drop_and_manifest_migration_like_pylance(tmp_path):
    """"LanceDataset.truncate_table", "LanceDataset.drop",
    "LanceDataset.migrate_manifest_paths_v2" """
    import os

    out = []
    for lib, name in ((lance, "r"), (lancenb, "o")):
        uri = str(tmp_path / name)
        ds = lib.write_dataset(TABLE, uri, max_rows_per_file=3, enable_v2_manifest_paths=False)
        v1 = sorted(os.listdir(f"{uri}/_versions"))
        ds.migrate_manifest_paths_v2()
        v2 = sorted(os.listdir(f"{uri}/_versions"))
        ds.truncate_table()
        t = lib.dataset(uri).read_transaction(2)
        out.append((v1, v2, ds.version, ds.count_rows(), ds.schema,
                    lance.dataset(uri).count_rows(), lancenb.dataset(uri).version,
                    t.operation.predicate, sorted(t.operation.deleted_fragment_ids)))
        lib.LanceDataset.drop(uri)
        assert not os.path.exists(uri)
        with pytest.raises(OSError):
            lib.LanceDataset.drop(uri)
        lib.LanceDataset.drop(uri, ignore_not_found=True)
    assert out[0] == out[1]


SCHEMA_JSON_CASES = pa.schema([
    pa.field("i8", pa.int8()), pa.field("u32", pa.uint32(), nullable=False),
    pa.field("f16", pa.float16()), pa.field("f64", pa.float64()), pa.field("b", pa.bool_()),
    pa.field("s", pa.string()), pa.field("ls", pa.large_string()),
    pa.field("lbin", pa.large_binary()), pa.field("fsb", pa.binary(4)),
    pa.field("d", pa.date32()), pa.field("ts", pa.timestamp("us", tz="UTC")),
    pa.field("tsn", pa.timestamp("ns")), pa.field("t32", pa.time32("ms")),
    pa.field("dur", pa.duration("s")), pa.field("dec", pa.decimal128(10, 2)),
    pa.field("ll", pa.large_list(pa.int32())),
    pa.field("fsl", pa.list_(pa.field("x", pa.float32(), nullable=False), 3)),
    pa.field("st", pa.struct([("x", pa.int16()), ("y", pa.list_(pa.string()))]),
             metadata={"fm": "1"}),
    pa.field("dict", pa.dictionary(pa.int32(), pa.string())), pa.field("null", pa.null())],
    metadata={"k": "v"})


def test_module_functions_like_pylance(tmp_path):
    """"module.schema_to_json", "module.json_to_schema", "module.sanitize_ts",
    "module.simd_info", "module.set_logger" """
    import datetime
    import logging

    j = lancenb.schema_to_json(SCHEMA_JSON_CASES)
    assert j == lance.schema_to_json(SCHEMA_JSON_CASES)
    assert lancenb.json_to_schema(j) == lance.json_to_schema(j) == SCHEMA_JSON_CASES
    no_meta = pa.schema([("a", pa.int8())])
    assert lancenb.schema_to_json(no_meta) == lance.schema_to_json(no_meta)
    for lib in (lance, lancenb):
        with pytest.raises(ValueError):  # pylance: no 'nullable' is an error
            lib.json_to_schema({"fields": [{"name": "a", "type": {"type": "int8"}}]})
        with pytest.raises(ValueError):
            lib.schema_to_json(pa.schema([("m", pa.map_(pa.string(), pa.int8()))]))
    for ts in ("2024-01-02 03:04:05", datetime.datetime(2024, 1, 2, 3, 4, 5),
               pytest.importorskip("pandas").Timestamp("2024-01-02T03:04:05")):
        assert lancenb.sanitize_ts(ts) == lance.sanitize_ts(ts)
    for lib in (lance, lancenb):
        with pytest.raises(TypeError):
            lib.sanitize_ts(3)
    ours, ref = lancenb.simd_info(), lance.simd_info()
    assert ours["target_arch"] == ref["target_arch"]
    assert set(ref["host_features"]) <= set(ours["host_features"])
    # set_logger: the named logger writes to the file at the level given
    for lib, name in ((lance, "pylance-test"), (lancenb, "lancenb-test")):
        path = tmp_path / f"{name}.log"
        lib.set_logger(str(path), name=name, level=logging.WARNING)
        logging.getLogger(name).warning("hello %s", name)
        logging.getLogger(name).info("not written")
        for h in list(logging.getLogger(name).handlers):
            h.close()
            logging.getLogger(name).removeHandler(h)
        text = path.read_text()
        assert "[WARNING]" in text and f"hello {name}" in text and "not written" not in text


def test_module_classes_and_tag_metadata_like_pylance(pair):
    """"module.FragmentMetadata", "module.Transaction", "module.MergeInsertBuilder",
    "module.CleanupStats", "module.DataStatistics", "module.FieldStatistics",
    "module.DatasetBasePath", "module.BlobFile", "module.BlobColumn",
    "LanceDataset.take_blobs", "LanceDataset.read_blobs", "Tags.replace_metadata" """
    import dataclasses
    import datetime
    from pathlib import Path

    ref, ours = pair
    for name in ("FragmentMetadata", "Transaction", "MergeInsertBuilder", "DataStatistics",
                 "FieldStatistics"):
        assert isinstance(getattr(lancenb, name), type)
    assert isinstance(ours.get_fragments()[0].metadata, lancenb.FragmentMetadata)
    assert isinstance(ours.read_transaction(2), lancenb.Transaction)
    assert isinstance(ours.merge_insert("a"), lancenb.MergeInsertBuilder)
    assert isinstance(ours.stats.data_stats(), lancenb.DataStatistics)
    assert all(isinstance(f, lancenb.FieldStatistics) for f in ours.stats.data_stats().fields)
    assert [f.name for f in dataclasses.fields(lancenb.FieldStatistics)] == \
        [f.name for f in dataclasses.fields(lance.FieldStatistics)]
    assert {f.name for f in dataclasses.fields(lancenb.DatasetBasePath)} >= \
        {"id", "path", "name", "is_dataset_root"}
    # blobs: the same bytes through each library's module-level classes
    blob_schema = pa.schema([pa.field("id", pa.int64()), pa.field(
        "blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    blobs = pa.table({"id": [1, 2, 3], "blob": [b"aa", b"bbbb", None]}, schema=blob_schema)
    got = []
    for lib, name in ((lance, "rb"), (lancenb, "ob")):
        ds = lib.write_dataset(blobs, str(Path(ours.uri).parent / name))
        files = ds.take_blobs("blob", indices=[1, 0])
        assert all(isinstance(f, lib.BlobFile) for f in files)
        got.append(([f.read() for f in files], ds.read_blobs("blob", indices=[0, 1, 2]),
                    [None if f is None else f.read()
                     for f in lib.BlobColumn(blobs["blob"].chunk(0))]))
        with pytest.raises(ValueError):
            lib.BlobColumn(pa.array([1]))
    assert got[0] == got[1] == ([b"bbbb", b"aa"], [(0, b"aa"), (1, b"bbbb"), (2, None)],
                                [b"aa", b"bbbb", b""])  # (a null reads as empty)
    stats = []
    for ds in (ref, ours):
        ds.tags.create("t1", 1)
        ds.tags.replace_metadata("t1", {"x": "y"})
        ds.tags.update("t1", 2)  # the metadata stays
        stats.append((ds.tags.list()["t1"]["metadata"], ds.tags.list()["t1"]["version"]))
        s = ds.cleanup_old_versions(older_than=datetime.timedelta(0),
                                    error_if_tagged_old_versions=False)
        stats.append(tuple(getattr(s, k) for k in (
            "bytes_removed", "old_versions", "data_files_removed", "transaction_files_removed",
            "deletion_files_removed", "index_files_removed", "failed_deletes")))
    assert isinstance(s, lancenb.CleanupStats)
    assert stats[0] == stats[2] == ({"x": "y"}, 2)
    assert stats[1][1:] == stats[3][1:] == (1, 0, 1, 0, 0, 0)
    assert lancenb.dataset(ref.uri).tags.list()["t1"]["metadata"] == \
        lance.dataset(ours.uri).tags.list()["t1"]["metadata"] == {"x": "y"}


def test_fragment_schema_evolution_like_pylance(tmp_path):
    """"LanceFragment.merge_columns", "LanceFragment.update_columns", "LanceFragment.merge",
    "LanceFragment.validate", "LanceFragment.physical_schema",
    "LanceFragment.partition_expression" """
    out = []
    for lib, name in ((lance, "r"), (lancenb, "o")):
        uri = str(tmp_path / name)
        ds = lib.write_dataset(TABLE, uri, max_rows_per_file=5)
        metas, schema = [], None
        for f in ds.get_fragments():  # the worker side: files, no commit
            m, schema = f.merge_columns({"d": "a + 100"})
            metas.append(m)
        assert [len(m.files) for m in metas] == [2, 2]
        ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Merge(metas, schema),
                                     read_version=ds.version)
        ms = []
        for f in ds.get_fragments():
            m, schema = f.merge(pa.table({"a": [4, 9, 1], "e": ["p", "q", "r"]}), "a")
            ms.append(m)
        ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Merge(ms, schema),
                                     read_version=ds.version)
        f = ds.get_fragments()[0]
        m, ids = f.update_columns(pa.table({"a": [3, 1], "b": ["BB", "AA"], "e": ["E", "F"]}),
                                  "a")
        files = [(list(d.fields), list(d.column_indices)) for d in m.files]
        ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Update(
            updated_fragments=[m], fields_modified=ids), read_version=ds.version)
        assert all(f.validate() is None for f in ds.get_fragments())
        out.append((ids, files, ds.schema, ds.to_table().to_pydict()))
        # each library reads what the other wrote
        assert lance.dataset(uri).to_table() == lancenb.dataset(uri).to_table()
    assert out[0] == out[1]
    # pylance leaves these pyarrow.dataset.Fragment properties unimplemented; lancenb's
    # answer is what pylance's schema and pyarrow say for the same fragment
    ours = lancenb.dataset(str(tmp_path / "o"))
    ref = lance.dataset(str(tmp_path / "r"))
    assert ours.get_fragments()[0].physical_schema == ref.get_fragments()[0].schema
    import pyarrow.dataset as pads

    arrow_frag = next(iter(pads.dataset(TABLE).get_fragments()))
    assert ours.get_fragments()[0].partition_expression.equals(
        arrow_frag.partition_expression)


def test_scanner_entry_points_like_pylance(pair):
    """"LanceScanner.take", "LanceScanner.scan_batches", "LanceScanner.from_dataset",
    "LanceScanner.from_fragment", "LanceScanner.from_batches" """
    import pyarrow.dataset as pads

    ref, ours = pair
    # (pylance raises NotImplementedError for these pyarrow.dataset.Scanner methods:
    # lancenb's results are compared with pylance's equivalent calls)
    sc = ours.scanner(columns=["b", "a"], filter="a > 1")
    want = ref.to_table(columns=["b", "a"], filter="a > 1")
    assert sc.take([3, 0]) == want.take([3, 0])
    tagged = list(ours.scanner(columns=["a"]).scan_batches())
    assert [(t.fragment.fragment_id, t.record_batch.num_rows) for t in tagged] == \
        [(f.fragment_id, f.count_rows()) for f in ref.get_fragments()]
    assert pa.Table.from_batches([t.record_batch for t in tagged]) == ref.to_table(
        columns=["a"])
    assert lancenb.LanceScanner.from_dataset(ours, columns=["c"], limit=3).to_table() == \
        ref.scanner(columns=["c"], limit=3).to_table()
    assert lancenb.LanceScanner.from_fragment(ours.get_fragments()[1], filter="c > 6") \
        .to_table() == ref.get_fragments()[1].scanner(filter="c > 6").to_table()
    got = lancenb.LanceScanner.from_batches(TABLE.to_batches(), columns=["b"],
                                            filter="a < 4").to_table()
    assert got == pads.Scanner.from_batches(TABLE.to_batches(), schema=TABLE.schema,
                                            columns=["b"],
                                            filter=pads.field("a") < 4).to_table()


def test_merge_insert_uncommitted_like_pylance(tmp_path):
    """"MergeInsertBuilder.execute_uncommitted", "MergeInsertBuilder.execute_batches",
    "MergeInsertBuilder.execute_uncommitted_batches" """
    out = []
    for lib, name in ((lance, "r"), (lancenb, "o")):
        uri = str(tmp_path / name)
        ds = lib.write_dataset(MI_TARGET, uri)
        b = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
        txn, counts = b.execute_uncommitted(MI_SOURCE)
        assert ds.version == 1 and lib.dataset(uri).version == 1  # nothing committed
        op = txn.operation
        shape = (type(op).__name__, txn.read_version, [f.id for f in op.updated_fragments],
                 [f.physical_rows for f in op.new_fragments], counts)
        ds = lib.LanceDataset.commit(uri, txn)
        txn2, counts2 = ds.merge_insert("id").when_matched_delete() \
            .execute_uncommitted_batches(pa.table({"id": [1], "v": ["x"], "n": [0]}))
        ds = lib.LanceDataset.commit(uri, txn2)
        counts3 = ds.merge_insert("id").when_not_matched_insert_all().execute_batches(
            pa.table({"id": [5], "v": ["e"], "n": [50]}))
        out.append((shape, counts2, counts3, lib.dataset(uri).version,
                    lib.dataset(uri).to_table().sort_by("id").to_pydict()))
        assert lance.dataset(uri).to_table().sort_by("id") == \
            lancenb.dataset(uri).to_table().sort_by("id")
    assert out[0] == out[1]


def test_explain_cleanup_like_pylance(tmp_path):
    """"LanceDataset.explain_cleanup_old_versions", "module.CleanupExplanation",
    "module.CleanupCandidateFile" """
    import datetime

    out = []
    for lib, name in ((lance, "r"), (lancenb, "o")):
        uri = str(tmp_path / name)
        ds = lib.write_dataset(pa.table({"a": [1, 2, 3, 4]}), uri, max_rows_per_file=2)
        ds.delete("a = 1")
        ds = lib.write_dataset(pa.table({"a": [1]}), uri, mode="overwrite")
        old = datetime.timedelta(0)
        ex = ds.explain_cleanup_old_versions(older_than=old, include_files=True)
        assert isinstance(ex, lib.CleanupExplanation)
        assert all(isinstance(c, lib.CleanupCandidateFile) for c in ex.candidate_files)
        few = ds.explain_cleanup_old_versions(older_than=old, include_files=True, max_files=2)
        none = ds.explain_cleanup_old_versions(older_than=old)
        s = ex.stats
        # (byte counts are each library's own file sizes)
        assert s.bytes_removed == sum(c.size_bytes for c in ex.candidate_files)
        out.append((ex.read_version, s.old_versions, s.data_files_removed,
                    s.deletion_files_removed, s.transaction_files_removed,
                    sorted((c.kind, c.unverified) for c in ex.candidate_files),
                    sorted(c.path.rsplit("/", 2)[-2] for c in ex.candidate_files),
                    len(few.candidate_files), few.candidate_files_truncated,
                    few.candidate_file_limit, none.candidate_files, ex.referenced_branches,
                    ex.warnings))
        assert lib.dataset(uri).versions()[0]["version"] == 1  # nothing removed
        assert all(os.path.exists("/" + c.path.lstrip("/")) for c in ex.candidate_files)
    ref, ours = out
    assert ref[1:] == ours[1:] and ref[0] == ours[0] == 3


def test_more_dataset_calls_like_pylance(tmp_path):
    """"LanceDataset.commit_batch", "LanceDataset.from_pydantic_model",
    "LanceDataset.read_blob_ranges", "LanceDataset.storage_options_accessor",
    "LanceDataset.remap_row_addrs" """
    import datetime
    from typing import Optional

    pydantic = pytest.importorskip("pydantic")

    class Inner(pydantic.BaseModel):
        x: int

    class MyRow(pydantic.BaseModel):
        id: int
        name: str
        score: Optional[float] = None
        tags: list[str]
        when: datetime.datetime
        day: datetime.date
        flag: bool
        raw: bytes
        inner: Inner

    rows = [MyRow(id=i, name="n", tags=["x"] * i, when=datetime.datetime(2024, 1, 1),
                  day=datetime.date(2024, 1, 2), flag=i % 2 == 0, raw=b"r", inner=Inner(x=i))
            for i in range(3)]
    blob_schema = pa.schema([pa.field("id", pa.int64()), pa.field(
        "blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})])
    blobs = pa.table({"id": [1, 2, 3], "blob": [b"aabbcc", b"0123456789", None]},
                     schema=blob_schema)
    out = []
    for lib, name in ((lance, "r"), (lancenb, "o")):
        pyd = lib.LanceDataset.from_pydantic_model(MyRow, rows, str(tmp_path / f"{name}p"))
        uri = str(tmp_path / name)
        lib.write_dataset(pa.table({"a": [1]}), uri)
        txns = [lib.Transaction(1, lib.LanceOperation.Append(
            [lib.LanceFragment.create(uri, pa.table({"a": [v]}))])) for v in (2, 3)]
        res = lib.LanceDataset.commit_batch(uri, txns)
        with pytest.raises(OSError):
            lib.LanceDataset.commit_batch(uri, [lib.Transaction(
                2, lib.LanceOperation.Delete([], [0], "a = 1"))])
        bds = lib.write_dataset(blobs, str(tmp_path / f"{name}b"))
        ranges = bds.read_blob_ranges("blob", [(0, 1, 2), (1, 3, 4), (0, 0, 6), (2, 0, 1)],
                                      selector="indices")
        with pytest.raises(ValueError, match="exceeds blob size"):
            bds.read_blob_ranges("blob", [(0, 5, 10)], selector="indices")
        out.append((pyd.schema, pyd.to_table().to_pylist(), res["dataset"].version,
                    res["dataset"].to_table().to_pydict(),
                    [len(f.files) for f in res["merged"].operation.fragments],
                    [(i, b) for i, _, b in ranges], bds.storage_options_accessor,
                    bds.remap_row_addrs(pa.array([0], pa.uint64()))))
    assert out[0] == out[1]


@pytest.mark.parametrize("stable", [True, False])
def test_delta_like_pylance(tmp_path, stable):
    """"LanceDataset.delta" """
    out = []
    for lib, name in ((lance, "r"), (lancenb, "o")):
        ds = lib.write_dataset(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}),
                               str(tmp_path / name), enable_stable_row_ids=stable)
        ds.insert(pa.table({"id": [4], "v": ["d"]}))
        ds.update({"v": "'B'"}, where="id = 2")
        got = []
        for d in (ds.delta(1), ds.delta(begin_version=2, end_version=3),
                  lib.dataset(ds.uri, version=2).delta(3)):
            got.append(([type(t.operation).__name__ for t in d.list_transactions()],
                        d.get_inserted_rows().read_all().sort_by("id").to_pydict(),
                        d.get_updated_rows().read_all().sort_by("id").to_pydict()))
        out.append(got)
    assert out[0] == out[1]


def test_sql_udf_and_row_deletes_like_pylance(pair):
    """"LanceDataset.sql", "LanceDataset.partition_expression", "LanceFragment.delete_rows",
    "module.batch_udf" """
    ref, ours = pair
    import pyarrow.compute as pc
    import pyarrow.dataset as pads

    q = "SELECT b, a * 2 AS a2 FROM dataset WHERE a > 2 ORDER BY b"
    assert pa.Table.from_batches(ours.sql(q).build().to_batch_records()) == \
        pa.Table.from_batches(ref.sql(q).build().to_batch_records())
    # (pylance raises NotImplementedError here; lancenb answers as pyarrow does for an
    # unpartitioned dataset, which engines that push down partitions read)
    assert ours.partition_expression.equals(pads.dataset(TABLE).partition_expression)
    assert ours.partition_expression.equals(pc.scalar(True))
    got = []
    for lib, ds in ((lance, ref), (lancenb, ours)):
        @lib.batch_udf(output_schema=pa.schema([pa.field("d", pa.float64())]))
        def double(batch):
            return pa.record_batch([pa.compute.multiply(batch["c"], 2.0)], ["d"])

        ds.add_columns(double, read_columns=["c"])
        frag = ds.get_fragments()[0]
        meta = frag.delete_rows([0, 2])
        got.append((ds.to_table(columns=["c", "d"]).to_pydict(), meta.num_deletions,
                    meta.deletion_file.num_deleted_rows))
    assert got[0] == got[1]


def test_io_counters_like_pylance(tmp_path):
    """"LanceDataset.io_stats_snapshot", "LanceDataset.io_stats_incremental",
    "module.iops_counter", "module.bytes_read_counter" """
    # the request counts are each library's own (different request plans); what the
    # counters do is the same
    for lib, name in ((lance, "r"), (lancenb, "o")):
        ds = lib.write_dataset(TABLE, str(tmp_path / name), max_rows_per_file=3)
        ds.delete("a = 1")
        snap = ds.io_stats_snapshot()
        assert snap.write_iops > 0 and snap.written_bytes > sum(
            os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tmp_path / name / "data")
            for f in fs) * 0.5
        iops, nbytes = lib.iops_counter(), lib.bytes_read_counter()
        before = ds.io_stats_incremental()
        assert before.read_iops >= snap.read_iops and before.write_iops == snap.write_iops
        ds.to_table()
        inc = ds.io_stats_incremental()
        assert inc.read_iops > 0 and inc.read_bytes > 0 and inc.write_iops == 0
        again = ds.io_stats_incremental()
        assert (again.read_iops, again.read_bytes, again.write_iops, again.written_bytes) == \
            (0, 0, 0, 0)
        assert lib.iops_counter() > iops and lib.bytes_read_counter() > nbytes


def test_merge_insert_file_version_like_pylance(tmp_path):
    """"MergeInsertBuilder.data_storage_version" (the dataset's own version)"""
    out = []
    for lib, name in ((lance, "r"), (lancenb, "o")):
        uri = str(tmp_path / name)
        ds = lib.write_dataset(MI_TARGET, uri, data_storage_version="2.1")
        counts = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
            .data_storage_version("2.1").execute(MI_SOURCE)
        for reader in (lance, lancenb):
            d = reader.dataset(uri)
            out.append((counts, d.data_storage_version,
                        sorted((df.file_major_version, df.file_minor_version)
                               for f in d.get_fragments() for df in f.metadata.files),
                        d.to_table().sort_by("id").to_pydict()))
    assert out[0] == out[1] == out[2] == out[3]
    with pytest.raises(lancenb.NotSupportedError, match="mix file versions"):
        lancenb.dataset(str(tmp_path / "o")).merge_insert("id").data_storage_version("2.2")


def test_scan_statistics_and_fragment_from_file_like_pylance(tmp_path):
    """"module.ScanStatistics", "LanceFragment.create_from_file" """
    out = []
    for lib, name in ((lance, "r"), (lancenb, "o")):
        uri = str(tmp_path / name)
        ds = lib.write_dataset(TABLE, uri, max_rows_per_file=5)
        seen = []
        ds.scanner(columns=["a", "b"], scan_stats_callback=seen.append).to_table()
        assert len(seen) == 1 and isinstance(seen[0], lib.ScanStatistics)
        s = seen[0]
        assert s.iops > 0 and s.bytes_read > 0
        # a data file written on its own, then made a fragment and committed
        other = lib.write_dataset(TABLE.slice(0, 3), str(tmp_path / f"{name}2"))
        fname = other.get_fragments()[0].metadata.files[0].path
        import shutil

        shutil.copy(os.path.join(other.uri, "data", fname), os.path.join(uri, "data", fname))
        meta = lib.LanceFragment.create_from_file(fname, ds, 7)
        ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Append([meta]),
                                     read_version=ds.version)
        out.append((s.all_counts, meta.id, meta.physical_rows,
                    [(list(f.fields), list(f.column_indices)) for f in meta.files],
                    lance.dataset(uri).to_table().to_pydict(),
                    lancenb.dataset(uri).to_table().to_pydict()))
    assert out[0] == out[1]


def test_deep_clone_like_pylance(tmp_path):
    """"LanceDataset.deep_clone" """
    out = []
    for lib, name in ((lance, "r"), (lancenb, "o")):
        uri = str(tmp_path / name)
        ds = lib.write_dataset(TABLE, uri, max_rows_per_file=3)
        ds.update_config({"k": "v"})
        ds.delete("a = 1")
        ds.tags.create("t", 2)
        ds.delete("a = 5")
        got = []
        for ref, target in (("t", "c1"), (3, "c2")):
            c = ds.deep_clone(str(tmp_path / f"{name}{target}"), ref)
            for reader in (lance, lancenb):  # read by both
                d = reader.dataset(c.uri)
                t = d.read_transaction(d.version)
                op = t.operation
                copied = len(os.listdir(os.path.join(c.uri, "data")))
                got.append((d.version, d.versions()[0]["version"], d.to_table().to_pydict(),
                            d.config(), d.tags.list(), type(op).__name__, t.read_version,
                            op.is_shallow, op.ref_name, op.ref_version, copied))
        with pytest.raises(OSError):  # not over an existing dataset
            ds.deep_clone(str(tmp_path / f"{name}c1"), 3)
        out.append(got)
    assert out[0] == out[1]


def test_default_file_version_like_pylance(tmp_path):
    """Both libraries write 2.2 by default: datasets, fragments and LanceFileWriter."""
    from lance.file import LanceFileReader as RefReader
    from lance.file import LanceFileWriter as RefWriter

    ref = lance.write_dataset(TABLE, str(tmp_path / "r"))
    ours = lancenb.write_dataset(TABLE, str(tmp_path / "o"))
    assert ours.data_storage_version == ref.data_storage_version == "2.2"
    for ds in (ref, ours):
        assert {(d.file_major_version, d.file_minor_version) for f in ds.get_fragments()
                for d in f.metadata.files} == {(2, 2)}
    meta = lancenb.LanceFragment.create(str(tmp_path / "f"), TABLE)
    assert (meta.files[0].file_major_version, meta.files[0].file_minor_version) == (2, 2)
    for writer, name in ((RefWriter, "r.lance"), (lancenb.LanceFileWriter, "o.lance")):
        with writer(str(tmp_path / name), TABLE.schema) as w:
            w.write_batch(TABLE)
    for name in ("r.lance", "o.lance"):  # each read by the other library too
        m = RefReader(str(tmp_path / name)).metadata()
        assert (m.major_version, m.minor_version) == (2, 2)
        r = lancenb.LanceFileReader(str(tmp_path / name))
        assert r.metadata().minor_version == 2 and r.read_all().to_table() == TABLE


def test_file_sessions_are_not_supported(pair):
    """Names lancenb cannot implement faithfully raise NotSupportedError saying why
    (merge_insert's target_bases/target_all_bases: tests/compat/test_multi_base_interop)."""
    _, ours = pair
    with pytest.raises(lancenb.NotSupportedError, match="lancenb"):
        ours.new_file_session()


def test_validate_names_the_dataset_and_the_broken_fragment(tmp_path):
    path = str(tmp_path / "ds")
    lancenb.write_dataset(pa.table({"a": list(range(10))}), path)
    lancenb.write_dataset(pa.table({"a": list(range(10, 20))}), path, mode="append")
    ds = lancenb.dataset(path)
    ds.delete("a = 12")
    ds = lancenb.dataset(path)
    assert ds.validate() is None
    (name,) = os.listdir(os.path.join(path, "_deletions"))
    os.remove(os.path.join(path, "_deletions", name))
    broken = lancenb.dataset(path)
    with pytest.raises(lancenb.CorruptFileError,
                       match=r"version 3: fragment 1: deletion file .* is missing"):
        broken.validate()
    with pytest.raises(lancenb.CorruptFileError, match="is missing"):
        broken.get_fragment(1).validate()
    assert broken.get_fragment(0).validate() is None


@pytest.mark.parametrize("predicate", ["a = 3", "a > 5", "a < 0", "a = 3 OR a = 4",
                                       "b IS NULL"])
def test_delete_returns_the_rows_it_deleted_like_pylance(pair, predicate):
    """pylance's delete returns {"num_deleted_rows": n}; rows deleted before (a = 3 in
    both datasets) are not counted again."""
    ref, ours = pair
    want = ref.delete(predicate)
    assert ours.delete(predicate) == want and set(want) == {"num_deleted_rows"}
    assert ours.count_rows() == ref.count_rows()
