"""Scalar indices under hypothesis: for random data, random BTREE/BITMAP indices built
by either library and random filters (comparisons, IN, IS [NOT] NULL, LIKE prefixes,
combined with AND/OR/NOT), the rows :func:`lancenb.index.scalar.query.index_rows`
answers are exactly the rows of an unindexed filter over the fragments the index
covers, after deletions and an append the index does not cover; and pylance, using a
lancenb-built index, returns what its own unindexed scan returns."""

from __future__ import annotations

import shutil
import tempfile

import lance
import numpy as np
import pyarrow as pa
import pytest
from budget import EXAMPLES, fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import lancenb
from lancenb.expr.filters import compile_filter
from lancenb.index.scalar import rowmap
from lancenb.index.scalar.api import ScalarIndexMethods
from lancenb.index.scalar.query import index_offsets, index_rows

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

_FLOATS = [0.0, -0.0, 1.5, -2.25, 7.0, float("nan"), float("inf"), float("-inf")]


@st.composite
def datasets(draw):
    n = draw(st.integers(1, 300))
    ints = draw(st.lists(st.one_of(st.none(), st.integers(-5, 12)), min_size=n, max_size=n))
    strs = draw(st.lists(st.one_of(st.none(), st.sampled_from(["a", "ab", "abc", "b", "ba",
                                                               "", "z"])),
                         min_size=n, max_size=n))
    floats = draw(st.lists(st.one_of(st.none(), st.sampled_from(_FLOATS)), min_size=n,
                           max_size=n))
    return pa.table({"i": pa.array(ints, pa.int32()), "s": pa.array(strs, pa.string()),
                     "f": pa.array(floats, pa.float64())})


def _literal(col: str, draw):
    if col == "i":
        return str(draw(st.integers(-6, 13)))
    if col == "s":
        return "'" + draw(st.sampled_from(["a", "ab", "b", "", "zz", "abc"])) + "'"
    v = draw(st.sampled_from(_FLOATS[:5] + [3.0]))
    return repr(float(v))


@st.composite
def leaves(draw):
    col = draw(st.sampled_from(["i", "s", "f"]))
    kind = draw(st.sampled_from(["cmp", "in", "null", "like"] if col == "s" else
                                ["cmp", "in", "null"]))
    if kind == "cmp":
        op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
        return f"{col} {op} {_literal(col, draw)}"
    if kind == "in":
        vals = [_literal(col, draw) for _ in range(draw(st.integers(1, 3)))]
        if draw(st.booleans()):
            vals.append("NULL")
        neg = "NOT " if draw(st.booleans()) else ""
        return f"{col} {neg}IN ({', '.join(vals)})"
    if kind == "null":
        return f"{col} IS {'NOT ' if draw(st.booleans()) else ''}NULL"
    return f"s LIKE '{draw(st.sampled_from(['a', 'ab', 'b', 'z']))}%'"


filters = st.recursive(leaves(), lambda inner: st.one_of(
    st.tuples(inner, st.sampled_from(["AND", "OR"]), inner).map(
        lambda t: f"({t[0]}) {t[1]} ({t[2]})"),
    inner.map(lambda f: f"NOT ({f})")), max_leaves=4)


def _rows(ds, flt, stable: bool) -> np.ndarray:
    """Row addresses (row ids with stable row ids) an unindexed filter selects."""
    key = "_rowid" if stable else "_rowaddr"
    t = ds.to_table(**{"with_row_id" if stable else "with_row_address": True})
    pos = compile_filter(flt, ds.schema).positions(t)  # (the whole table: no index)
    return np.sort(t[key].to_numpy()[pos].astype(np.uint64))


def _covered(ds, rows: np.ndarray, covered: set, stable: bool) -> np.ndarray:
    """``rows`` of the covered fragments only."""
    if not stable:
        return rows[np.isin(rows >> np.uint64(32), list(covered))]
    ids = ds.to_table(columns=["i"], with_row_id=True, with_row_address=True)
    inside = np.isin(ids["_rowaddr"].to_numpy().astype(np.uint64) >> np.uint64(32),
                     list(covered))
    keep = ids["_rowid"].to_numpy().astype(np.uint64)[inside]
    return rows[np.isin(rows, keep)]


@fuzz_settings(examples=EXAMPLES)
@given(table=datasets(), kinds=st.tuples(*[st.sampled_from(["BTREE", "BITMAP"])] * 3),
       builder=st.sampled_from(["lancenb", "pylance"]), flts=st.lists(filters, min_size=1,
                                                                     max_size=4),
       mutate=st.sampled_from(["none", "delete", "update"]), stable=st.booleans())
def test_indexed_equals_unindexed(table, kinds, builder, flts, mutate, stable):
    d = tempfile.mkdtemp(prefix="lancenb-sidx-")
    try:
        uri = f"{d}/ds"
        lancenb.write_dataset(table, uri, max_rows_per_file=128,
                              enable_stable_row_ids=stable)
        ds = lance.dataset(uri) if builder == "pylance" else lancenb.dataset(uri)
        for col, kind in zip(["i", "s", "f"], kinds):
            if builder == "pylance":
                ds.create_scalar_index(col, kind)
            else:  # (the mixin's method: LanceDataset may not list the mixin yet)
                ScalarIndexMethods.create_scalar_index(ds, col, kind)
        if mutate == "delete":
            lancenb.dataset(uri).delete("i = 3")
        elif mutate == "update":  # (rows move to a new fragment the index does not cover)
            lancenb.dataset(uri).update({"i": "i + 1", "s": "'ab'"}, where="i < 2")
        lancenb.write_dataset(table.slice(0, 5), uri, mode="append")
        ours = lancenb.dataset(uri)
        for flt in flts:
            got = index_rows(ours, flt)
            assert got is not None, flt
            rows, covered = got
            want = _covered(ours, _rows(ours, flt, stable), covered, stable)
            assert np.array_equal(rowmap.to_ids(rows), want), flt
            # lancenb's scan (which uses the index now) = the unindexed filter
            key = "_rowid" if stable else "_rowaddr"
            scan = ours.to_table(filter=flt, columns=["i"], with_row_id=stable,
                                 with_row_address=not stable)[key].to_numpy()
            assert np.array_equal(np.sort(scan.astype(np.uint64)), _rows(ours, flt, stable))
            if builder == "lancenb":
                theirs = lance.dataset(uri)
                a = theirs.to_table(filter=flt, columns=["i"], with_row_id=True)
                b = theirs.to_table(filter=flt, columns=["i"], with_row_id=True,
                                    use_scalar_index=False)
                assert a.sort_by("_rowid").equals(b.sort_by("_rowid")), flt
    finally:
        shutil.rmtree(d, ignore_errors=True)


# -- the building blocks: row sets and the bounded-memory sort, against references -----

def test_row_set_bytes_are_pylances():
    """The serialised row set of rows {4} in fragment 0, as pylance's LABEL_LIST file
    holds it (u32 count, u32 fragment, u32 size, portable roaring bitmap)."""
    want = (b"\x01\x00\x00\x00\x00\x00\x00\x00\x12\x00\x00\x00:0\x00\x00\x01\x00\x00\x00"
            b"\x00\x00\x00\x00\x10\x00\x00\x00\x04\x00")
    assert rowmap.serialize(np.array([4], np.uint64)) == want
    assert rowmap.to_ids(rowmap.deserialize(want)).tolist() == [4]


@fuzz_settings(examples=EXAMPLES * 4)
@given(ids=st.lists(st.integers(0, (1 << 36) - 1), max_size=300))
def test_row_set_roundtrip(ids):
    arr = np.array(ids, np.uint64)
    got = rowmap.to_ids(rowmap.deserialize(rowmap.serialize(arr)))
    assert got.tolist() == sorted(set(ids))


@fuzz_settings(examples=EXAMPLES * 4)
@given(values=st.lists(st.one_of(st.none(), st.sampled_from(_FLOATS)), max_size=400),
       run_rows=st.integers(1, 120), block_rows=st.integers(1, 50),
       batch=st.integers(1, 90))
def test_sorted_pairs_is_a_sort(values, run_rows, block_rows, batch):
    """Spilled runs merged block by block give the one-shot sort (nulls first, NaN
    last, -0.0 and 0.0 in any order) with every id kept next to its value."""
    from lancenb.index.scalar.common import sort_order
    from lancenb.index.scalar.sorting import sorted_pairs

    arr = pa.array(values, pa.float64())
    ids = np.arange(len(values), dtype=np.uint64)
    batches = [(arr.slice(i, batch), ids[i:i + batch]) for i in range(0, len(values), batch)]
    out = pa.concat_tables(list(sorted_pairs(iter(batches), pa.float64(), run_rows=run_rows,
                                             block_rows=block_rows)))
    ref = arr.take(pa.array(sort_order(arr))).to_pylist()
    got = out["values"].to_pylist()
    assert [repr(abs(v)) if v is not None else None for v in got] == \
        [repr(abs(v)) if v is not None else None for v in ref]
    assert sorted(out["ids"].to_pylist()) == list(range(len(values)))
    for i, v in zip(out["ids"].to_pylist(), got):
        assert repr(values[i]) == repr(v)


@fuzz_settings(EXAMPLES)
@given(st.lists(st.binary(max_size=80), max_size=40))
def test_xxh64_kernel_matches_reference(strings):
    """The Numba XXH64 of many strings equals the plain-Python reference and the
    ``xxhash`` package (when installed), string by string."""
    from lancenb.index.scalar.xxh import xxh64_many, xxh64_ref
    offsets = np.cumsum([0] + [len(b) for b in strings]).astype(np.int64)
    data = np.frombuffer(b"".join(strings), np.uint8)
    got = xxh64_many(data, offsets).tolist()
    assert got == [xxh64_ref(b) for b in strings]
    try:
        import xxhash
    except ImportError:
        return
    assert got == [xxhash.xxh64_intdigest(b) for b in strings]


@fuzz_settings(EXAMPLES)
@given(st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=200),
       st.integers(0, 4))
def test_bloom_filter_has_no_false_negatives(values, log_blocks):
    """Every inserted value's hash checks as present in a bloom filter of any size."""
    from lancenb.index.scalar.xxh import bloom_check, bloom_insert, xxh64_many
    raw = np.asarray(values, np.int64).view(np.uint8)
    hashes = xxh64_many(raw, np.arange(len(values) + 1, dtype=np.int64) * 8)
    words = np.zeros((1 << log_blocks, 8), np.uint32)
    bloom_insert(words, hashes)
    assert bloom_check(words, hashes).all()


@fuzz_settings(EXAMPLES)
@given(st.lists(st.one_of(st.none(), st.text(alphabet="abcAB12 -é.xyz", max_size=12)),
                max_size=30))
def test_ngram_trigrams_match_reference(texts):
    """The vectorised trigram tokens of many strings equal a per-string reference
    (lower-case, three consecutive ASCII letters/digits, pylance's token numbers)."""
    from lancenb.index.scalar.ngram import _fold, trigram_tokens

    def p(c):
        return ord(c) - ord("0") + 1 if c.isdigit() else ord(c) - ord("a") + 11

    want = set()
    for i, s in enumerate(texts):
        if s is None:
            continue
        s = s.lower()
        s = s if s.isascii() else _fold(s)
        for k in range(len(s) - 2):
            w = s[k:k + 3]
            if all(c.isascii() and c.isalnum() for c in w):
                want.add((i, p(w[0]) * 37 * 37 + p(w[1]) * 37 + p(w[2])))
    rows, tokens = trigram_tokens(pa.array(texts, pa.string()))
    assert set(zip(rows.tolist(), tokens.tolist())) == want


@fuzz_settings(examples=EXAMPLES)
@given(table=datasets(), builder=st.sampled_from(["lancenb", "pylance"]),
       flts=st.lists(filters, min_size=1, max_size=4),
       mutate=st.sampled_from(["none", "delete", "update"]), stable=st.booleans(),
       zone=st.integers(1, 40))
def test_zone_indices_keep_every_matching_row(table, builder, flts, mutate, stable, zone):
    """ZONEMAP (on i, f) and BLOOMFILTER (on s) with small zones, built by either
    library: the rows a scan keeps after the index (index_offsets) hold every row the
    filter matches, lancenb's scan equals the unindexed filter, and pylance using
    lancenb's indices gives what it gives with its own (not always its unindexed
    scan: ``NOT (f > -0.0) OR f > -0.0`` over zones differs there)."""
    d = tempfile.mkdtemp(prefix="lancenb-zidx-")
    try:
        uri = f"{d}/ds"
        twin = f"{d}/twin"  # (the same dataset, indexed by pylance: the reference)
        for u in (uri, twin):
            lancenb.write_dataset(table, u, max_rows_per_file=128,
                                  enable_stable_row_ids=stable)
        for u, mod in ((uri, lance if builder == "pylance" else lancenb), (twin, lance)):
            ds = mod.dataset(u)
            cfg = mod.indices.IndexConfig
            ds.create_scalar_index("i", cfg("zonemap", {"rows_per_zone": zone}))
            ds.create_scalar_index("f", cfg("zonemap", {"rows_per_zone": zone}))
            ds.create_scalar_index("s", cfg("bloomfilter", {"number_of_items": zone,
                                                            "probability": 0.05}))
            if mutate == "delete":
                lancenb.dataset(u).delete("i = 3")
            elif mutate == "update":
                lancenb.dataset(u).update({"i": "i + 1", "s": "'ab'"}, where="i < 2")
            lancenb.write_dataset(table.slice(0, 5), u, mode="append")
        ours = lancenb.dataset(uri)
        t = ours.to_table(columns=["i"], with_row_address=True)
        addrs = t["_rowaddr"].to_numpy().astype(np.uint64)
        for flt in flts:
            hits = index_offsets(ours, flt)
            want = _rows(ours, flt, False) if not stable else None
            if hits is not None and want is not None:
                for a in want.tolist():
                    fid, off = a >> 32, a & 0xFFFFFFFF
                    assert fid not in hits or off in set(hits[fid].tolist()), (flt, a)
            key = "_rowid" if stable else "_rowaddr"
            scan = ours.to_table(filter=flt, columns=["i"], with_row_id=stable,
                                 with_row_address=not stable)[key].to_numpy()
            assert np.array_equal(np.sort(scan.astype(np.uint64)), _rows(ours, flt, stable))
            if builder == "lancenb":  # (pylance on lancenb's indices = on its own)
                a = lance.dataset(uri).to_table(filter=flt, columns=["i"], with_row_id=True)
                b = lance.dataset(twin).to_table(filter=flt, columns=["i"], with_row_id=True)
                assert a.sort_by("_rowid").equals(b.sort_by("_rowid")), flt
        assert addrs.size == ours.count_rows()
    finally:
        shutil.rmtree(d, ignore_errors=True)
