"""BTREE and BITMAP indices against pylance 14, both directions: an index pylance
built answers lancenb's :func:`index_rows` exactly as an unindexed filter; an index
lancenb built (its files, its CreateIndex commit) is listed and used by pylance, with
the rows pylance's unindexed scan gives."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.expr.filters import compile_filter
from lancenb.index.scalar import rowmap
from lancenb.index.scalar.api import ScalarIndexMethods
from lancenb.index.scalar.query import index_offsets, index_rows

lance = pytest.importorskip("lance")

# (pylance 14 deprecates list_indices in favour of describe_indices)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

N = 9000

FILTERS = ["x = 5", "x IN (1, 50, 96)", "x > 90", "x <= 3 AND s = 'v3'", "NOT (x > 5)",
           "s = 'v1' OR x = 7", "x IS NULL", "x IS NOT NULL", "s LIKE 'v1%'", "s IN ('v2', 'v9')",
           "NOT (s = 'v4') AND x < 20", "f > 0.5", "f IS NULL", "NOT (f < 0.25)",
           "x != 13 OR s IS NULL", "s >= 'v5'", "d < DATE '2020-02-01'"]


def _table(seed: int, n: int = N) -> pa.Table:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 97, n)
    xm = rng.random(n) < 0.05
    f = rng.random(n)
    f[rng.random(n) < 0.03] = np.nan
    fm = rng.random(n) < 0.05
    s = np.array([f"v{i}" for i in rng.integers(0, 13, n)], dtype=object)
    s[rng.random(n) < 0.04] = None
    d = (np.datetime64("2020-01-01") + rng.integers(0, 90, n)).astype("datetime64[D]")
    return pa.table({"x": pa.array(x, pa.int64(), mask=xm), "s": pa.array(s, pa.string()),
                     "f": pa.array(f, mask=fm), "d": pa.array(d, pa.date32())})


def _create(ds, *args, **kw):
    """``ds.create_scalar_index(...)`` of a lancenb dataset (the mixin's method, called
    on the dataset whether or not LanceDataset lists the mixin among its bases yet)."""
    return ScalarIndexMethods.create_scalar_index(ds, *args, **kw)


def _rows(ds, flt) -> np.ndarray:
    """Row addresses of the rows lancenb's filter engine selects from the whole table
    (read without a filter: no index involved)."""
    t = ds.to_table(with_row_address=True)
    pos = compile_filter(flt, ds.schema).positions(t)
    return np.sort(t["_rowaddr"].to_numpy()[pos].astype(np.uint64))


INDICES = [("x", "BTREE"), ("s", "BITMAP"), ("f", "BTREE"), ("d", "BTREE")]


@pytest.fixture(scope="module")
def pylance_built(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("pyidx") / "ds")
    ds = lance.write_dataset(_table(1), uri, max_rows_per_file=4000)
    for col, kind in INDICES:
        ds.create_scalar_index(col, kind)
    ds.delete("x = 11")  # deleted rows stay in the index; the answer drops them
    lance.write_dataset(_table(2, 500), uri, mode="append")  # a fragment no index covers
    return uri


@pytest.mark.parametrize("flt", FILTERS + ["f = 'NaN'", "f > 'NaN'"])
def test_pylance_index_read_by_lancenb(pylance_built, flt):
    ds = lancenb.dataset(pylance_built)
    got = index_rows(ds, flt)
    assert got is not None, flt
    rows, covered = got
    assert covered == {0, 1, 2}
    want = _rows(ds, flt)
    want = want[np.isin(want >> np.uint64(32), list(covered))]
    assert np.array_equal(rowmap.to_ids(rows), want), flt


def test_unanswerable_filters(pylance_built):
    ds = lancenb.dataset(pylance_built)
    for flt in ["x + 1 = 5", "x = 5 OR x + 0 = 3", "x = 5 AND y_unindexed_free = 1"]:
        assert index_rows(ds, flt) is None


@pytest.fixture(scope="module")
def lancenb_built(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("nbidx") / "ds")
    lancenb.write_dataset(_table(3), uri, max_rows_per_file=4000)
    ds = lancenb.dataset(uri)
    for col, kind in INDICES:
        _create(ds, col, kind)
    return uri


def test_lancenb_index_listed_by_pylance(lancenb_built):
    theirs = sorted(lance.dataset(lancenb_built).list_indices(), key=lambda e: e["name"])
    ours = sorted(lancenb.dataset(lancenb_built).list_indices(), key=lambda e: e["name"])
    assert [(e["name"], e["type"], e["fields"]) for e in theirs] == \
        [("d_idx", "BTree", ["d"]), ("f_idx", "BTree", ["f"]), ("s_idx", "Bitmap", ["s"]),
         ("x_idx", "BTree", ["x"])]
    assert [(e["name"], e["uuid"], e["version"], sorted(e["fragment_ids"])) for e in ours] == \
        [(e["name"], e["uuid"], e["version"], sorted(e["fragment_ids"])) for e in theirs]
    desc = {d.name: d for d in lance.dataset(lancenb_built).describe_indices()}
    assert desc["x_idx"].num_rows_indexed == N


@pytest.mark.parametrize("flt", FILTERS)
def test_lancenb_index_used_by_pylance(lancenb_built, flt):
    ds = lance.dataset(lancenb_built)
    plan = ds.scanner(filter=flt, columns=["x"]).explain_plan()
    if flt in ("x = 5", "s = 'v1' OR x = 7", "x > 90"):
        assert "ScalarIndexQuery" in plan or "MaterializeIndex" in plan, plan
    with_index = ds.to_table(filter=flt, columns=["x", "s", "f", "d"], with_row_id=True)
    without = ds.to_table(filter=flt, columns=["x", "s", "f", "d"], with_row_id=True,
                          use_scalar_index=False)
    assert with_index.sort_by("_rowid")["_rowid"].equals(without.sort_by("_rowid")["_rowid"]), flt
    ours = index_rows(lancenb.dataset(lancenb_built), flt)
    assert ours is not None
    assert np.array_equal(rowmap.to_ids(ours[0]), _rows(lancenb.dataset(lancenb_built), flt))


def test_replace_and_name_rules(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_table(4, 300), uri)
    ds = lancenb.dataset(uri)
    _create(ds, "x", "BTREE")
    assert ds.version == 2
    with pytest.raises(RuntimeError, match="already exists"):
        _create(ds, "x", "BTREE", replace=False)
    _create(ds, "x", "BTREE")  # replaced: still one index of that name
    _create(ds, "x", "BITMAP")  # another type: a second name, as pylance
    names = sorted(e["name"] for e in lance.dataset(uri).list_indices())
    assert names == ["x_idx", "x_idx_2"]
    lists = lancenb.write_dataset(pa.table({"l": [[1]]}), str(tmp_path / "l"))
    with pytest.raises(TypeError, match="BTREE/BITMAP index column"):
        _create(lists, "l", "BTREE")
    with pytest.raises(NotImplementedError):
        _create(ds, "x", "FOO")


LABEL_FILTERS = ["array_has_any(l, ['t1', 't3'])", "array_has_all(l, ['t1', 't3'])",
                 "array_contains(l, 't5')", "array_has_any(l, ['t1']) AND i < 1500",
                 "array_has_all(l, ['t2']) OR array_has_any(l, ['t7', 'nope'])"]


def _lists(seed: int, n: int = 3000) -> pa.Table:
    rng = np.random.default_rng(seed)
    rows = [None if rng.random() < 0.05 else
            [None if rng.random() < 0.05 else f"t{int(k)}" for k in
             rng.integers(0, 8, rng.integers(0, 4))] for _ in range(n)]
    return pa.table({"l": pa.array(rows, pa.list_(pa.string())),
                     "i": pa.array(np.arange(n), pa.int64())})


@pytest.mark.parametrize("builder", ["pylance", "lancenb"])
def test_label_list_both_ways(tmp_path, builder):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_lists(5), uri, max_rows_per_file=1000)
    if builder == "pylance":
        lance.dataset(uri).create_scalar_index("l", "LABEL_LIST")
    else:
        _create(lancenb.dataset(uri), "l", "LABEL_LIST")
        _create(lancenb.dataset(uri), "i", "BTREE")
    theirs, ours = lance.dataset(uri), lancenb.dataset(uri)
    assert [e["type"] for e in theirs.list_indices() if e["name"] == "l_idx"] == ["LabelList"]
    for flt in LABEL_FILTERS:
        if builder == "lancenb":
            a = theirs.to_table(filter=flt, columns=["i"], with_row_id=True)
            b = theirs.to_table(filter=flt, columns=["i"], with_row_id=True,
                                use_scalar_index=False)
            assert a.sort_by("_rowid")["_rowid"].equals(b.sort_by("_rowid")["_rowid"]), flt
            if flt.startswith("array_has_any(l, ['t1', 't3'])"):
                assert "ScalarIndexQuery" in theirs.scanner(filter=flt).explain_plan()
        got = index_rows(ours, flt)
        if "i <" in flt and builder == "pylance":
            assert got is None  # (no index on i)
            continue
        assert got is not None, flt
        assert np.array_equal(rowmap.to_ids(got[0]), _rows(ours, flt)), flt


@pytest.mark.parametrize("stable", [False, True])
def test_index_offsets_select_the_filtered_rows(tmp_path, stable):
    """index_offsets (what a scan restricts covered fragments to): per covered fragment,
    the physical offsets of the live rows the filter selects."""
    from lancenb.index.scalar.query import index_offsets

    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_table(6, 2500), uri, max_rows_per_file=1000,
                          enable_stable_row_ids=stable)
    lance.dataset(uri).create_scalar_index("x", "BTREE")
    lancenb.dataset(uri).delete("s = 'v3'")
    lancenb.write_dataset(_table(7, 100), uri, mode="append")
    ds = lancenb.dataset(uri)
    hits = index_offsets(ds, "x < 10 OR x IS NULL")
    assert sorted(hits) == [0, 1, 2]
    addr = _rows(ds, "x < 10 OR x IS NULL")
    for fid, offs in hits.items():
        assert offs.tolist() == sorted((addr[addr >> 32 == fid] & 0xFFFFFFFF).tolist())


def test_lancenb_scans_use_the_index(lancenb_built):
    """lancenb's filtered scans read only the rows the index selects in the fragments
    it covers, and return what the unindexed filter does (with_row_id, count_rows)."""
    ds = lancenb.dataset(lancenb_built)
    for flt in FILTERS:
        got = ds.to_table(filter=flt, columns=["x"], with_row_address=True)
        assert np.array_equal(np.sort(got["_rowaddr"].to_numpy().astype(np.uint64)),
                              _rows(ds, flt)), flt
        assert ds.count_rows(flt) == len(_rows(ds, flt)), flt
    sc = ds.scanner(filter="x = 5", columns=["x"])
    n = sc.to_table().num_rows
    assert sc.rows_scanned == n < N // 50  # (the index's rows only, not all 9000)


def test_and_with_an_unindexed_side_scans_the_indexed_rows(tmp_path):
    """``p AND q`` with only ``p`` indexed: a scan reads the rows ``p``'s index gives
    and evaluates the whole filter on them (index_rows itself stays exact: None)."""
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_table(8), uri, max_rows_per_file=4000)
    ds = lancenb.dataset(uri)
    _create(ds, "x", "BTREE")
    for flt in ["x = 5 AND f > 0.5", "f > 0.5 AND x IN (1, 2) AND s != 'v1'",
                "(x = 5 AND f < 0.3) OR x = 6", "NOT (x = 5 AND f > 0.5)",
                "x = 5 OR f > 0.99"]:
        assert index_rows(ds, flt) is None, flt
        sc = ds.scanner(filter=flt, columns=["x"], with_row_address=True)
        got = np.sort(sc.to_table()["_rowaddr"].to_numpy().astype(np.uint64))
        assert np.array_equal(got, _rows(ds, flt)), flt
        if "NOT" not in flt and " OR f" not in flt:
            assert sc.rows_scanned < N // 20, flt  # (the index's rows only)


PLAN_FILTERS = ["x = 5", "x IN (1, 50, 96)", "x > 90", "x IS NULL", "x IS NOT NULL",
                "s = 'v1' OR x = 7", "s LIKE 'v1%'", "x >= 3 AND x <= 7", "x BETWEEN 3 AND 7",
                "x < 7 AND x > 3", "f > 0.5", "x != 13", "d < DATE '2020-02-01'",
                "x = 5 AND s = 'v3'", "x = 5 AND (s = 'v3' OR f < 0.5)"]


def _index_line(plan: str) -> str | None:
    lines = [ln.strip() for ln in plan.splitlines() if "ScalarIndexQuery" in ln]
    return lines[0] if lines else None


@pytest.mark.parametrize("flt", PLAN_FILTERS)
def test_plan_names_the_index_query_as_pylance(pylance_built, flt):
    """explain_plan's ScalarIndexQuery line is pylance's text for the same dataset
    and filter; a filter the index answers whole has no refine filter in either."""
    ds = lancenb.dataset(pylance_built)
    theirs = lance.dataset(pylance_built).scanner(filter=flt, columns=["x"]).explain_plan()
    ours = ds.scanner(filter=flt, columns=["x"]).explain_plan()
    assert _index_line(ours) == _index_line(theirs)
    assert _index_line(ours) is not None or flt == "s LIKE 'v1%'"  # (LIKE: BTREE only)
    assert ("refine_filter=--" in ours) == ("refine_filter=--" in theirs)


def test_plan_partly_indexed_and_unindexed(pylance_built):
    """``p AND q`` with only p indexed: the index query names p and the scan still
    filters; no index on the column or use of an expression: no index line."""
    ds = lancenb.dataset(pylance_built)
    plan = ds.scanner(filter="x = 5 AND x + 1 > 2", columns=["x"]).explain_plan()
    assert "ScalarIndexQuery: query=[x = 5]@x_idx(BTree)" in plan
    assert "refine_filter=--" not in plan
    assert _index_line(ds.scanner(filter="x + 1 = 5").explain_plan()) is None


ZONE_FILTERS = ["x = 5", "x > 15000", "x IN (1, 9000, 17000)", "x IS NULL", "x BETWEEN 100 AND 200",
                "s = 'k7'", "s IN ('k1', 'zz')", "s IS NULL", "f > 0.99", "x = 5 AND f > 0.5",
                "x = 5 OR s = 'k3'", "x != 5", "NOT (s = 'k2')", "x < 10 AND s IS NOT NULL"]


def _zoned_table(n: int = 20000) -> pa.Table:
    rng = np.random.default_rng(3)
    f = rng.random(n)
    f[::37] = np.nan
    s = np.array([f"k{i // 700}" for i in range(n)], dtype=object)
    s[rng.random(n) < 0.01] = None
    return pa.table({"x": pa.array(np.arange(n), mask=rng.random(n) < 0.02),
                     "s": pa.array(s, pa.string()), "f": f})


def _zone_rows(ds, flt) -> list:
    return sorted(map(str, zip(*ds.to_table(filter=flt).to_pydict().values())))


@pytest.mark.parametrize("builder", ["pylance", "lancenb"])
def test_zonemap_and_bloomfilter_both_ways(tmp_path, builder):
    """ZONEMAP (rows_per_zone from an IndexConfig) and BLOOMFILTER built by either
    library over fragments with deleted rows: both libraries list them, print the
    same index query, and give an unindexed scan's rows; lancenb's zones rule rows
    out for selective filters on sorted data."""
    uri = str(tmp_path / "ds")
    lance.write_dataset(_zoned_table(), uri, max_rows_per_file=12000).delete("x % 97 = 3")
    mod = lance if builder == "pylance" else lancenb
    ds = mod.dataset(uri)
    ds.create_scalar_index("x", mod.indices.IndexConfig("zonemap", {"rows_per_zone": 1000}))
    ds.create_scalar_index("s", "BLOOMFILTER")
    ds.create_scalar_index("f", "ZONEMAP")
    theirs, ours = lance.dataset(uri), lancenb.dataset(uri)
    assert sorted((e["name"], e["type"]) for e in ours.list_indices()) == \
        sorted((e["name"], e["type"]) for e in theirs.list_indices()) == \
        [("f_idx", "ZoneMap"), ("s_idx", "BloomFilter"), ("x_idx", "ZoneMap")]
    for flt in ZONE_FILTERS:
        want = sorted(map(str, zip(*theirs.to_table(
            filter=flt, use_scalar_index=False).to_pydict().values())))
        assert _zone_rows(ours, flt) == want, flt
        assert _zone_rows(theirs, flt) == want, flt
        assert _index_line(ours.scanner(filter=flt).explain_plan()) == \
            _index_line(theirs.scanner(filter=flt).explain_plan()), flt
    live = ours.count_rows()
    for flt, most in [("x = 5", 1200), ("x BETWEEN 100 AND 200", 1200), ("s = 'k7'", 8500)]:
        hits = index_offsets(ours, flt)
        assert hits is not None and sum(len(v) for v in hits.values()) <= most < live, flt


def test_scalar_index_stats_as_pylance(tmp_path):
    """stats.index_stats of ZONEMAP, BLOOMFILTER, BTREE and BITMAP indices pylance
    built: pylance's dict (but the build time, which lancenb does not keep)."""
    uri = str(tmp_path / "ds")
    ds = lance.write_dataset(pa.table({"x": np.arange(10000), "y": np.arange(10000) % 7,
                                       "s": [str(i) for i in range(10000)]}), uri,
                             max_rows_per_file=6000)
    ds.create_scalar_index("x", "ZONEMAP")
    ds.create_scalar_index("s", "BLOOMFILTER")
    ds.create_scalar_index("y", "BTREE")
    ds.create_scalar_index("y", "BITMAP", name="yb")
    lance.write_dataset(pa.table({"x": [1], "y": [2], "s": ["a"]}), uri, mode="append")
    theirs, ours = lance.dataset(uri), lancenb.dataset(uri)
    for name in ["x_idx", "s_idx", "y_idx", "yb"]:
        want = theirs.stats.index_stats(name)
        got = ours.stats.index_stats(name)
        want.pop("updated_at_timestamp_ms")
        got.pop("updated_at_timestamp_ms")
        assert got == want, name


DIST_FILTERS = ["id = 25000", "id = 0", "id >= 9995 AND id < 10005", "id > 19999", "id < 10000",
                "id = -1", "v = 3", "v = 3 AND id < 100"]


@pytest.mark.parametrize("builder,committer", [("lancenb", "lancenb"), ("pylance", "pylance"),
                                               ("pylance", "lancenb")])
def test_distributed_segments_both_ways(tmp_path, builder, committer):
    """pylance 14's distributed build: one uncommitted BTREE/ZONEMAP segment per
    fragment (nothing listed yet), two BTREE segments merged, the rest committed as
    one index of that name; built by one library, merged and committed by one, both
    list the same segments and give the unindexed counts with the index in the plan.
    create_scalar_index(fragment_ids=...) for BTREE is refused, as pylance 14."""
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": np.arange(30000), "v": np.arange(30000) % 13}), uri,
                        max_rows_per_file=10000)
    b = (lancenb if builder == "lancenb" else lance).dataset(uri)
    c = (lancenb if committer == "lancenb" else lance).dataset(uri)
    segs = [b.create_index_uncommitted("id", "BTREE", name="bi", fragment_ids=[f.fragment_id])
            for f in b.get_fragments()]
    zs = [b.create_index_uncommitted("v", "ZONEMAP", fragment_ids=[f.fragment_id])
          for f in b.get_fragments()]
    assert lancenb.dataset(uri).list_indices() == []
    c.commit_existing_index_segments("bi", "id", [c.merge_existing_index_segments(segs[:2]),
                                                  segs[2]])
    c.commit_existing_index_segments("vz", "v", [c.merge_existing_index_segments(zs)])
    theirs, ours = lance.dataset(uri), lancenb.dataset(uri)
    listed = [sorted((e["name"], e["type"], sorted(e["fragment_ids"])) for e in d.list_indices())
              for d in (theirs, ours)]
    assert listed[0] == listed[1] == [("bi", "BTree", [0, 1]), ("bi", "BTree", [2]),
                                      ("vz", "ZoneMap", [0, 1, 2])]
    for flt in DIST_FILTERS:
        want = theirs.count_rows(filter=flt)
        assert ours.count_rows(filter=flt) == want, flt
        line = _index_line(ours.scanner(filter=flt).explain_plan())
        assert line == _index_line(theirs.scanner(filter=flt).explain_plan()) is not None, flt
    with pytest.raises(ValueError, match="create_index_uncommitted"):
        ours.create_scalar_index("id", "BTREE", fragment_ids=[0])


NGRAM_FILTERS = ["contains(t, 'hello')", "contains(t, 'ello')", "contains(t, 'HELLO')",
                 "contains(t, 'he')", "contains(t, 'cafe')", "contains(t, 'café')",
                 "contains(t, 'zzz')", "contains(t, 'abc-def')", "contains(t, 'x1y') AND i < 500",
                 "contains(t, 'hello') OR i = 3", "NOT contains(t, 'hello')"]


@pytest.mark.parametrize("builder", ["pylance", "lancenb"])
def test_ngram_both_ways(tmp_path, builder):
    """NGRAM built by either library (accents, case, punctuation, nulls, deleted
    rows): both give the unindexed counts of contains() filters and the same index
    line; lancenb's index rules out every row for a trigram no row holds."""
    rng = np.random.default_rng(1)
    words = ["hello", "World", "héllo", "naïve café", "abc-def", "x1y2z3", "Straße", "ab"]
    texts = [" ".join(rng.choice(words, 3)) if rng.random() > 0.05 else None
             for _ in range(3000)]
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"t": pa.array(texts, pa.string()), "i": np.arange(3000)}),
                        uri, max_rows_per_file=1000).delete("i % 50 = 1")
    (lancenb if builder == "lancenb" else lance).dataset(uri).create_scalar_index("t", "NGRAM")
    theirs, ours = lance.dataset(uri), lancenb.dataset(uri)
    assert [e["type"] for e in ours.list_indices()] == ["NGram"]
    for flt in NGRAM_FILTERS:
        want = theirs.count_rows(filter=flt, use_scalar_index=False)
        assert ours.count_rows(filter=flt) == theirs.count_rows(filter=flt) == want, flt
        assert _index_line(ours.scanner(filter=flt).explain_plan()) == \
            _index_line(theirs.scanner(filter=flt).explain_plan()), flt
    hits = index_offsets(ours, "contains(t, 'zzz')")
    assert hits is not None and sum(len(v) for v in hits.values()) == 0


@pytest.mark.parametrize("builder", ["pylance", "lancenb"])
def test_uuid_btree_with_arrow_cast_literal(tmp_path, builder):
    """A BTREE on a uuid column answers ``uuid = arrow_cast(0x..., 'FixedSizeBinary(16)')``
    (the index line as pylance's, the one matching row) whoever built it."""
    uri = str(tmp_path / "ds")
    vals = [i.to_bytes(2, "big") * 8 for i in range(300)]
    lance.write_dataset(pa.table({"u": pa.array(vals, pa.uuid()), "i": np.arange(300)}), uri)
    (lancenb if builder == "lancenb" else lance).dataset(uri).create_scalar_index("u", "BTREE")
    flt = f"u = arrow_cast(0x{vals[7].hex()}, 'FixedSizeBinary(16)')"
    theirs, ours = lance.dataset(uri), lancenb.dataset(uri)
    assert ours.to_table(filter=flt)["i"].to_pylist() == [7] == \
        theirs.to_table(filter=flt)["i"].to_pylist()
    line = _index_line(ours.scanner(filter=flt).explain_plan())
    assert line == _index_line(theirs.scanner(filter=flt).explain_plan()) is not None
    assert {k: v.tolist() for k, v in index_offsets(ours, flt).items()} == {0: [7]}


def test_describe_indices_type_urls_as_pylance(tmp_path):
    """describe_indices reports each index's details type URL as the manifest stores it
    (pylance: /lance.table.* for most scalar types, /lance.index.pb.* for bloom
    filters and vectors), whichever library built the indices."""
    n = 400
    rng = np.random.default_rng(3)
    t = pa.table({"a": np.arange(n), "s": [f"v{i % 7}" for i in range(n)],
                  "l": [["a", "b"]] * n,
                  "v": pa.FixedSizeListArray.from_arrays(
                      pa.array(rng.random(16 * n).astype(np.float32)), 16)})
    for lib in (lance, lancenb):
        uri = str(tmp_path / lib.__name__)
        lance.write_dataset(t, uri)
        ds = lib.dataset(uri)
        ds.create_index("v", "IVF_PQ", num_partitions=2, num_sub_vectors=4)
        for col, kind, name in (("a", "BTREE", None), ("s", "BITMAP", None),
                                ("l", "LABEL_LIST", None), ("s", "NGRAM", "ng"),
                                ("a", "ZONEMAP", "zm"), ("a", "BLOOMFILTER", "bf")):
            ds.create_scalar_index(col, kind, name=name)
        want = sorted((d.name, d.type_url, d.index_type)
                      for d in lance.dataset(uri).describe_indices())
        got = sorted((d.name, d.type_url, d.index_type)
                     for d in lancenb.dataset(uri).describe_indices())
        assert got == want
