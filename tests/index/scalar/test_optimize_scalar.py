"""``optimize_indices`` on scalar and full-text indices, against pylance: an index built
by one library, rows appended by either, the index optimized by either; filters and
full-text queries then give the rows (and scores) of an unindexed scan and of pylance,
and the appended fragments are answered by the index."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pytest

import lancenb

lance = pytest.importorskip("lance")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

LIBS = {"lancenb": lancenb, "pylance": lance}

# index type -> (column, filters it answers)
CASES = {
    "BTREE": ("i", ["i = 105", "i IN (3, 120, 141)", "i > 95 AND i < 130", "i IS NULL"]),
    "BITMAP": ("i", ["i = 105", "i IN (3, 120, 141)", "i IS NULL", "i < 20"]),
    "ZONEMAP": ("i", ["i = 105", "i > 95 AND i < 130", "i IS NULL"]),
    "BLOOMFILTER": ("i", ["i = 105", "i IN (3, 120, 141)"]),
    "LABEL_LIST": ("l", ["array_has_any(l, ['a1'])", "array_has_all(l, ['a1', 'b2'])",
                         "array_contains(l, 'b0')"]),
    "NGRAM": ("s", ["contains(s, 'w3')", "contains(s, 'w6 t')"]),
    "INVERTED": ("s", []),
}
QUERIES = ["w3", "t1 w2", "w5 t0 t2"]


def data(n: int, off: int = 0) -> pa.Table:
    x = np.arange(off, off + n)
    i = pa.array((x * 7) % 150, pa.int64(), mask=(x % 11 == 0))
    return pa.table({"i": i, "s": pa.array([f"w{v % 7} t{v % 3} w{v % 5}" for v in x]),
                     "l": pa.array([[f"a{v % 5}", f"b{v % 3}"] for v in x]),
                     "k": pa.array(x, pa.int64())})


def build(uri: str, kind: str, lib: str = "lancenb", n: int = 200, per_file: int = 100):
    lance.write_dataset(data(n), uri, max_rows_per_file=per_file)
    LIBS[lib].dataset(uri).create_scalar_index(CASES[kind][0], kind)


def append(uri: str, lib: str, n: int, off: int) -> None:
    LIBS[lib].write_dataset(data(n, off), uri, mode="append", max_rows_per_file=60)


def rows(ds, flt: str, **kw) -> list:
    t = ds.to_table(filter=flt, columns=["k"], **kw)
    return sorted(t.column("k").to_pylist())


def fts(ds, q: str) -> list:
    t = ds.to_table(full_text_query=q, columns=["k"], with_row_id=False)
    return sorted(zip(t.column("k").to_pylist(), np.round(t.column("_score").to_numpy(), 4)))


def rows_scanned(ds, flt: str) -> int:
    plan = ds.scanner(filter=flt, columns=["k"]).analyze_plan()
    return int(re.search(r"rows_scanned=(\d+)", plan).group(1))


def check_answers(uri: str, kind: str) -> None:
    """lancenb's and pylance's indexed answers are the unindexed scan's."""
    ours, theirs = lancenb.dataset(uri), lance.dataset(uri)
    for flt in CASES[kind][1]:
        want = rows(theirs, flt, use_scalar_index=False)
        assert rows(ours, flt) == want, flt
        assert rows(ours, flt, use_scalar_index=False) == want, flt
        assert rows(theirs, flt) == want, flt
    if kind == "INVERTED":
        for q in QUERIES:
            got = fts(ours, q)
            assert got == fts(theirs, q), q
            t = ours.to_table(columns=["k", "s"]).to_pydict()
            assert {k for k, _ in got} == {k for k, s in zip(t["k"], t["s"])
                                           if set(q.split()) & set(s.split())}


COMBOS = [("lancenb", "lancenb", "lancenb"), ("pylance", "pylance", "lancenb"),
          ("pylance", "lancenb", "lancenb"), ("lancenb", "lancenb", "pylance")]


@pytest.mark.parametrize("kind", list(CASES))
@pytest.mark.parametrize("built,appended,optimized", COMBOS)
@pytest.mark.parametrize("merge", [0, None], ids=["delta", "merge"])
def test_appended_rows_are_indexed(tmp_path, kind, built, appended, optimized, merge):
    uri = str(tmp_path / "d")
    build(uri, kind, built)
    append(uri, appended, 90, 200)
    LIBS[optimized].dataset(uri).optimize.optimize_indices(num_indices_to_merge=merge)
    ds = lancenb.dataset(uri)
    segs = ds.list_indices()
    assert {int(f) for e in segs for f in e["fragment_ids"]} == \
        {f.fragment_id for f in ds.get_fragments()}
    assert len(segs) == (2 if merge == 0 else 1)
    check_answers(uri, kind)
    if kind in ("BTREE", "BITMAP"):  # (the appended fragments are not scanned whole)
        hits = len(rows(ds, "i = 105"))
        assert rows_scanned(ds, "i = 105") <= hits == rows_scanned(lance.dataset(uri),
                                                                   "i = 105")


def _shape(uri: str) -> list:
    from lancenb.io.store import ObjectStore
    from lancenb.table.commit import find_manifest
    from lancenb.table.indices import index_from_pb, parse_section

    version = lancenb.dataset(uri).version
    mf = find_manifest(ObjectStore(uri), version)[0]
    out = []
    for m in parse_section(mf.index_section_bytes(), mf.name):
        i = index_from_pb(m)
        out.append((i.name, sorted(i.fragment_ids), i.dataset_version, list(i.fields),
                    i.index_details[0], sorted(f.path for f in i.files)
                    if i.index_details[0] != "/lance.table.InvertedIndexDetails" else None))
    return [version, out]


def _sequence(lib: str, uri: str, kind: str) -> list:
    """Deltas, merges of some and of all, and no-ops, by ``lib``: the manifest's index
    entries after each step."""
    mod = LIBS[lib]
    build(uri, kind, lib, n=100, per_file=50)
    shapes = []
    for k in range(3):
        append(uri, lib, 30, 100 + 30 * k)
        mod.dataset(uri).optimize.optimize_indices(num_indices_to_merge=0)
        shapes.append(_shape(uri))
    mod.dataset(uri).optimize.optimize_indices(num_indices_to_merge=0)  # (nothing new)
    shapes.append(_shape(uri))
    append(uri, lib, 30, 200)
    for kw in ({"num_indices_to_merge": 2}, {"num_indices_to_merge": 2}, {},
               {"num_indices_to_merge": 10}):
        mod.dataset(uri).optimize.optimize_indices(**kw)
        shapes.append(_shape(uri))
    append(uri, lib, 30, 230)
    mod.dataset(uri).optimize.optimize_indices(retrain=True)
    shapes.append(_shape(uri))
    return shapes


@pytest.mark.parametrize("kind", list(CASES))
def test_segments_as_pylance_writes_them(tmp_path, kind):
    ours = _sequence("lancenb", str(tmp_path / "a"), kind)
    theirs = _sequence("pylance", str(tmp_path / "b"), kind)
    assert ours == theirs
    check_answers(str(tmp_path / "a"), kind)


def _stats(ds, name: str) -> dict:
    keys = ("index_type", "name", "num_indices", "num_segments", "num_indexed_fragments",
            "num_indexed_rows", "num_unindexed_fragments", "num_unindexed_rows",
            "num_indexed_rows_per_delta")
    st = ds.stats.index_stats(name)
    return {k: st[k] for k in keys}


@pytest.mark.parametrize("kind", ["BTREE", "BITMAP", "ZONEMAP", "BLOOMFILTER", "INVERTED"])
@pytest.mark.parametrize("merge", [0, None], ids=["delta", "merge"])
def test_statistics_and_descriptions_as_pylance(tmp_path, kind, merge):
    name = f"{CASES[kind][0]}_idx"
    got = []
    for lib in ("lancenb", "pylance"):
        uri = str(tmp_path / lib)
        build(uri, kind, lib)
        append(uri, lib, 90, 200)
        before = _stats(LIBS[lib].dataset(uri), name)
        LIBS[lib].dataset(uri).optimize.optimize_indices(num_indices_to_merge=merge)
        ds = LIBS[lib].dataset(uri)
        # (not type_url: lancenb's describe_indices names /lance.index.pb.* types where
        # pylance names /lance.table.* ones, index.vector.api's _TYPE_URLS)
        desc = [(d.name, d.index_type, d.num_rows_indexed, d.field_names,
                 len(d.segments)) for d in ds.describe_indices()]
        entries = [(e["name"], e["type"], e["fields"], sorted(e["fragment_ids"]))
                   for e in ds.list_indices()]
        got.append((before, _stats(ds, name), desc, entries))
    assert got[0] == got[1]
    assert got[0][1]["num_unindexed_rows"] == 0 < got[0][0]["num_unindexed_rows"]


def _mutate(lib: str, uri: str, kind: str) -> list:
    """Rows deleted and updated, a fragment deleted whole, appends, a delta, a
    compaction, appends and a merge, by ``lib`` on an index the other library built:
    the manifest's index entries after each optimize."""
    mod = LIBS[lib]
    build(uri, kind, "lancenb" if lib == "pylance" else "pylance", n=300)
    ds = mod.dataset(uri)
    ds.delete("k < 100")  # (fragment 0, whole)
    ds.delete("k >= 150 AND k < 160")
    ds.update({"s": "'w3 zz'", "i": "7"}, where="k >= 200 AND k < 210")
    append(uri, lib, 40, 300)
    mod.dataset(uri).optimize.optimize_indices(num_indices_to_merge=0)
    shapes = [_shape(uri)[1]]
    check_answers(uri, kind)
    mod.dataset(uri).optimize.compact_files(materialize_deletions_threshold=0.01)
    append(uri, lib, 40, 340)
    mod.dataset(uri).optimize.optimize_indices()
    shapes.append(_shape(uri)[1])
    check_answers(uri, kind)
    return shapes


@pytest.mark.parametrize("kind", list(CASES))
def test_deletes_updates_and_compaction(tmp_path, kind):
    """The optimized indices cover what pylance's cover (a fragment deleted whole
    leaves a merged segment) and answer as a scan."""
    ours = _mutate("lancenb", str(tmp_path / "a"), kind)
    theirs = _mutate("pylance", str(tmp_path / "b"), kind)
    assert [[e[:2] for e in s] for s in ours] == [[e[:2] for e in s] for s in theirs]


@pytest.mark.parametrize("kind", list(CASES))
@pytest.mark.parametrize("deleted", ["k < 100", "k < 50", "k < 300"],
                         ids=["a-fragment", "some-rows", "every-row"])
def test_merge_after_deletes_as_pylance(tmp_path, kind, deleted):
    """A segment whose fragments were deleted (some, whole or every one) merged with
    appended rows: the fragments and dataset version pylance gives it."""
    got = []
    for lib in ("lancenb", "pylance"):
        uri = str(tmp_path / lib)
        build(uri, kind, lib, n=300)
        LIBS[lib].dataset(uri).delete(deleted)
        append(uri, lib, 50, 300)
        LIBS[lib].dataset(uri).optimize.optimize_indices()
        got.append(_shape(uri))
        check_answers(uri, kind)
    assert got[0] == got[1]


@pytest.mark.parametrize("kind", ["BTREE", "BITMAP", "ZONEMAP", "BLOOMFILTER"])
@pytest.mark.parametrize("deleted", ["k < 50", "k < 100"], ids=["some-rows", "a-fragment"])
def test_merged_content_as_pylance_after_deletes(tmp_path, kind, deleted):
    """A merge keeps what the merged segment held (rows deleted since in live
    fragments; zones of a fragment deleted whole), as pylance: the same statistics."""
    got = []
    for lib in ("lancenb", "pylance"):
        uri = str(tmp_path / lib)
        build(uri, kind, "pylance", n=300)
        LIBS[lib].dataset(uri).delete(deleted)
        append(uri, "lancenb", 50, 300)
        LIBS[lib].dataset(uri).optimize.optimize_indices()
        st = lance.dataset(uri).stats.index_stats("i_idx")
        st.pop("updated_at_timestamp_ms")
        assert lancenb.dataset(uri).stats.index_stats("i_idx")["segments"] == st["segments"]
        got.append(st)
        check_answers(uri, kind)
    assert got[0] == got[1]


def test_index_names_and_no_ops(tmp_path):
    uri = str(tmp_path / "d")
    build(uri, "BTREE")
    ds = lancenb.dataset(uri)
    ds.create_scalar_index("s", "NGRAM")
    v = ds.version
    ds.optimize.optimize_indices()
    ds.optimize.optimize_indices(num_indices_to_merge=0)
    ds.optimize.optimize_indices(retrain=True)
    assert ds.version == v  # (nothing unindexed, one segment each)
    append(uri, "pylance", 50, 200)
    ds = lancenb.dataset(uri)
    ds.optimize.optimize_indices(index_names=["s_idx"])
    assert ds.version == v + 2  # (one commit: the NGRAM index only)
    by_name = {e["name"]: e for e in ds.list_indices()}
    assert sorted(by_name["s_idx"]["fragment_ids"]) == [0, 1, 2]
    assert sorted(by_name["i_idx"]["fragment_ids"]) == [0, 1]
    ds.optimize.optimize_indices()
    assert ds.version == v + 3
    assert sorted(lancenb.dataset(uri).list_indices()[0]["fragment_ids"]) == [0, 1, 2]
    append(uri, "lancenb", 50, 250)
    ds = lancenb.dataset(uri)
    ds.optimize.optimize_indices(num_indices_to_merge=0)
    assert ds.version == v + 5  # (both indices, one CreateIndex, as pylance)
    assert sorted((e["name"], sorted(e["fragment_ids"])) for e in ds.list_indices()) == [
        ("i_idx", [0, 1, 2]), ("i_idx", [3]), ("s_idx", [0, 1, 2]), ("s_idx", [3])]
    with pytest.raises(lancenb.LanceError):
        ds.optimize.optimize_indices(num_indices_to_merge=-1)


def test_the_appended_fragment_is_scanned_until_optimized(tmp_path):
    uri = str(tmp_path / "d")
    build(uri, "BTREE")
    append(uri, "lancenb", 90, 200)
    ds = lancenb.dataset(uri)
    assert rows_scanned(ds, "i = 105") >= 90
    ds.optimize.optimize_indices()
    assert rows_scanned(lancenb.dataset(uri), "i = 105") <= len(rows(ds, "i = 105"))


def _wide(n: int, off: int = 0) -> pa.Table:
    x = np.arange(off, off + n)
    return pa.table({"i": pa.array(x % 37, pa.int64()),
                     "st": pa.array([{"a": int(v % 13), "b": f"w{v % 5}"} for v in x]),
                     "j": pa.array([f'{{"x": {v % 9}}}' for v in x], pa.json_()),
                     "k": pa.array(x)})


@pytest.mark.parametrize("lib", ["lancenb", "pylance"])
@pytest.mark.parametrize("kind", ["BTREE", "BITMAP", "ZONEMAP", "INVERTED"])
def test_stable_row_ids(tmp_path, lib, kind):
    mod, uri = LIBS[lib], str(tmp_path / "d")
    lance.write_dataset(_wide(300), uri, max_rows_per_file=100, enable_stable_row_ids=True)
    col = "st.b" if kind == "INVERTED" else "i"
    mod.dataset(uri).create_scalar_index(col, kind)
    ds = lancenb.dataset(uri)
    ds.delete("k < 30")
    ds.update({"i": "5"}, where="k >= 100 AND k < 110")
    mod.write_dataset(_wide(50, 300), uri, mode="append")
    lancenb.dataset(uri).optimize.optimize_indices()
    ours, theirs = lancenb.dataset(uri), lance.dataset(uri)
    assert sorted(int(f) for f in ours.list_indices()[0]["fragment_ids"]) == [0, 1, 2, 3, 4]
    if kind == "INVERTED":
        q = {"full_text_query": "w3", "columns": ["k"]}
        assert sorted(ours.to_table(**q).column("k").to_pylist()) == \
            sorted(theirs.to_table(**q).column("k").to_pylist())
        return
    want = rows(theirs, "i = 5", use_scalar_index=False)
    assert rows(ours, "i = 5") == rows(theirs, "i = 5") == want


@pytest.mark.parametrize("lib", ["lancenb", "pylance"])
def test_nested_and_json_indices(tmp_path, lib):
    mod, uri = LIBS[lib], str(tmp_path / "d")
    lance.write_dataset(_wide(300), uri, max_rows_per_file=100)
    ds = lancenb.dataset(uri)
    ds.create_scalar_index("st.a", "BTREE")
    ds.create_scalar_index("j", lancenb.indices.IndexConfig(
        index_type="json", parameters={"target_index_type": "btree", "path": "x"}))
    lance.write_dataset(_wide(50, 300), uri, mode="append")
    mod.dataset(uri).optimize.optimize_indices()
    ours, theirs = lancenb.dataset(uri), lance.dataset(uri)
    assert sorted((e["name"], sorted(e["fragment_ids"])) for e in ours.list_indices()) == [
        ("j_idx", [0, 1, 2, 3]), ("st.a_idx", [0, 1, 2, 3])]
    for flt in ("st.a = 4", "json_get_int(j, 'x') = 3"):
        want = rows(theirs, flt, use_scalar_index=False)
        assert rows(ours, flt) == rows(theirs, flt) == want


@pytest.mark.parametrize("positions", [False, True])
def test_fts_scores_after_deletes_as_pylance(tmp_path, positions):
    """A merge of an INVERTED index lancenb built keeps its partitions (documents
    deleted since count in BM25's statistics, as pylance's merge keeps them): the
    scores of both libraries' merges agree; phrases still match."""
    got = []
    for lib in ("lancenb", "pylance"):
        uri = str(tmp_path / lib)
        lance.write_dataset(data(300), uri, max_rows_per_file=100)
        lancenb.dataset(uri).create_scalar_index("s", "INVERTED", with_position=positions)
        LIBS[lib].dataset(uri).delete("k < 50")
        append(uri, "lancenb", 50, 300)
        LIBS[lib].dataset(uri).optimize.optimize_indices()
        ours, theirs = lancenb.dataset(uri), lance.dataset(uri)
        scores = [fts(ours, q) for q in QUERIES]
        assert scores == [fts(theirs, q) for q in QUERIES]
        if positions:
            from lance.query import PhraseQuery

            from lancenb.query import PhraseQuery as OurPhrase

            a = ours.to_table(full_text_query=OurPhrase("w3 t1", "s"), columns=["k"])
            b = theirs.to_table(full_text_query=PhraseQuery("w3 t1", "s"), columns=["k"])
            assert sorted(a.column("k").to_pylist()) == sorted(b.column("k").to_pylist())
            assert a.num_rows
        got.append(scores)
    assert got[0] == got[1]
