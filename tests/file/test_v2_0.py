"""Lance file version 2.0 against pylance, both ways: whole files, ranges, takes,
the encodings chosen, datasets, and damaged files."""

import decimal
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from _tables import assert_tables_equal, flat_table, with_nulls
from lance.file import LanceFileReader as PyReader
from lance.file import LanceFileWriter as PyWriter

import lancenb
from lancenb.encodings import blocks, pb
from lancenb.errors import CorruptFileError, InvalidInputError, LanceError, NotSupportedError
from lancenb.file import LanceFileReader, LanceFileWriter

N = 3_000


def nb_write(path, table, *, batches=1, **kw):
    with LanceFileWriter(str(path), table.schema, version="2.0", **kw) as w:
        step = max(1, -(-table.num_rows // batches))
        for i in range(0, table.num_rows, step):
            w.write_batch(table.slice(i, step))
    return str(path)


def py_write(path, table, *, batches=1, **kw):
    with PyWriter(str(path), table.schema, version="2.0", **kw) as w:
        step = max(1, -(-table.num_rows // batches))
        for i in range(0, table.num_rows, step):
            # a copy, not a slice: pylance 14 panics on a sliced struct holding a list
            w.write_batch(table.take(np.arange(i, min(i + step, table.num_rows))))
    return str(path)


def trees(path):
    """Per column, the ArrayEncoding kind of every page (read through lancenb)."""
    md = LanceFileReader(path).metadata()
    return [[p.layout.WhichOneof("array_encoding") for p in c.pages] for c in md.columns]


def check_both(path, table, rows=None):
    """pylance and lancenb read ``path`` as ``table`` (whole, by range, by take)."""
    assert_tables_equal(PyReader(path).read_all().to_table(), table)
    r = LanceFileReader(path)
    assert r.num_rows() == table.num_rows
    assert_tables_equal(r.read_all().to_table(), table)
    n = table.num_rows
    if rows is None:
        rows = [0, n - 1, n // 2, 1, n // 2, 0] if n else []
    rows = np.asarray(rows, np.int64)
    assert_tables_equal(r.take_rows(rows).to_table(), table.take(rows))
    if n > 2:
        assert_tables_equal(r.read_range(1, n - 2).to_table(), table.slice(1, n - 2))


def nested_table(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, 5, n)
    vals = pa.array(rng.integers(-1000, 1000, int(lens.sum())), pa.int32())
    offs = pa.array(np.concatenate([[0], np.cumsum(lens)]).astype(np.int32))
    null = pa.array(rng.random(n) < 0.1)
    lst = pa.ListArray.from_arrays(offs, vals, mask=null)
    large = pa.LargeListArray.from_arrays(offs.cast(pa.int64()), with_nulls(
        pa.array([f"s{i}" for i in range(int(lens.sum()))]), rng), mask=null)
    inner = pa.array([[[j] * (j % 3) for j in range(i % 4)] if i % 5 else None
                      for i in range(n)], pa.list_(pa.list_(pa.int64())))
    los = pa.array([[{"a": i, "b": str(i)}] * (i % 3) if i % 7 else None for i in range(n)],
                   pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())])))
    sol = pa.array([{"l": [i % 100] * (i % 3) if i % 4 else None, "k": i % 100,
                     "n": {"x": float(i), "y": [str(i)]}} for i in range(n)],
                   pa.struct([("l", pa.list_(pa.int8())), ("k", pa.int8()),
                              ("n", pa.struct([("x", pa.float64()),
                                               ("y", pa.large_list(pa.string()))]))]))
    empty = pa.array([[] for _ in range(n)], pa.list_(pa.float32()))
    return pa.table({"lst": lst, "large": large, "lol": inner, "los": los, "sol": sol,
                     "empty": empty})


def vector_table(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    cols = {}
    for d in (8, 128, 768):
        vals = pa.array(rng.standard_normal(n * d).astype(np.float32))
        cols[f"v{d}"] = pa.FixedSizeListArray.from_arrays(vals, d, mask=pa.array(
            rng.random(n) < 0.05))
    items = with_nulls(pa.array(rng.integers(0, 100, n * 4), pa.int16()), rng)
    cols["items_null"] = pa.FixedSizeListArray.from_arrays(items, 4)
    cols["bools"] = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 3) < 0.5), 3)
    inner = pa.FixedSizeListArray.from_arrays(pa.array(rng.integers(0, 9, n * 4), pa.uint8()),
                                              2)
    cols["nested"] = pa.FixedSizeListArray.from_arrays(inner, 2)
    return pa.table(cols)


PACKED = pa.field("p", pa.struct([("x", pa.int32()), ("y", pa.float64()), ("z", pa.uint8())]),
                  metadata={"lance-encoding:packed": "true"})
BLOB = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})


def packed_blob_table(n: int) -> pa.Table:
    p = pa.array([{"x": i, "y": i / 2, "z": i % 256} for i in range(n)], PACKED.type)
    b = pa.array([None if i % 5 == 1 else b"" if i % 5 == 2 else bytes([i % 256]) * (i % 300)
                  for i in range(n)], pa.large_binary())
    return pa.table({"p": p, "b": b}, schema=pa.schema([PACKED, BLOB]))


# -- flat types ----------------------------------------------------------------

@pytest.fixture(scope="module")
def flat():
    return flat_table(N, seed=3)


@pytest.mark.parametrize("nulls", [True, False], ids=["nulls", "no-nulls"])
def test_flat_types_lancenb_to_pylance(tmp_path, nulls):
    t = flat_table(N, seed=5, nulls=nulls)
    check_both(nb_write(tmp_path / "nb.lance", t, batches=3), t)


@pytest.mark.parametrize("nulls", [True, False], ids=["nulls", "no-nulls"])
def test_flat_types_pylance_to_lancenb(tmp_path, nulls):
    t = flat_table(N, seed=6, nulls=nulls)
    check_both(py_write(tmp_path / "py.lance", t, batches=3), t)


def test_same_encodings_and_footer_as_pylance(tmp_path, flat):
    mine = nb_write(tmp_path / "nb.lance", flat)
    ref = py_write(tmp_path / "py.lance", flat)
    a, b = LanceFileReader(mine).metadata(), LanceFileReader(ref).metadata()
    assert (a.major_version, a.minor_version) == (b.major_version, b.minor_version) == (0, 3)
    for ca, cb in zip(a.columns, b.columns, strict=True):
        assert [p.description for p in ca.pages] == [p.description for p in cb.pages]
        assert [[x.size for x in p.buffers] for p in ca.pages] == \
            [[x.size for x in p.buffers] for p in cb.pages]
    assert PyReader(mine).metadata().num_rows == N


def test_empty_strings_and_all_null_columns(tmp_path):
    t = pa.table({"e": pa.array([""] * 50 + ["x", None]), "n": pa.nulls(52, pa.int32()),
                  "ns": pa.nulls(52, pa.large_string()), "nb": pa.nulls(52, pa.bool_()),
                  "nt": pa.nulls(52), "nf": pa.nulls(52, pa.list_(pa.float32(), 4))})
    check_both(nb_write(tmp_path / "nb.lance", t), t)
    check_both(py_write(tmp_path / "py.lance", t), t)


def test_low_cardinality_strings_are_dictionaries_both_ways(tmp_path):
    rng = np.random.default_rng(1)
    cats = np.array(["red", "green", "", "blue-ish long value"])
    t = pa.table({"cat": with_nulls(pa.array(cats[rng.integers(0, 4, 500)]), rng),
                  "all_null": pa.nulls(500, pa.string()),
                  "many": pa.array([str(i) for i in range(500)]),
                  "large": pa.array(cats[rng.integers(0, 4, 500)], pa.large_string())})
    short = pa.table({"short": pa.array(["a", "b"] * 49)})  # under 100 rows: no dictionary
    for tag, (tab, want) in {"t": (t, [["dictionary"], ["dictionary"], ["binary"], ["binary"]]),
                             "s": (short, [["binary"]])}.items():
        for path in (nb_write(tmp_path / f"nb{tag}.lance", tab),
                     py_write(tmp_path / f"py{tag}.lance", tab)):
            check_both(path, tab)
            assert trees(path) == want


@pytest.mark.parametrize("writer", ["lancenb", "pylance"])
def test_arrow_dictionary_columns(tmp_path, writer):
    keys = pa.array([0, 1, None, 0, 2] * 20, pa.int8())
    t = pa.table({"d": pa.array(["a", "b", None, "a"] * 25).dictionary_encode(),
                  "n": pa.array([1, 2, None, 1] * 25, pa.int64()).dictionary_encode(),
                  "k": pa.DictionaryArray.from_arrays(keys, pa.array(["x", None, "zz"]))})
    path = (nb_write if writer == "lancenb" else py_write)(tmp_path / "d.lance", t, batches=2)
    assert trees(path) == [["dictionary"]] * 3
    for got in (PyReader(path).read_all().to_table(), LanceFileReader(path).read_all().to_table()):
        for name in t.column_names:
            assert got[name].to_pylist() == t[name].to_pylist()
            assert got.schema.field(name).type == t.schema.field(name).type
    rows = [99, 2, 2, 50]
    got = LanceFileReader(path).take_rows(rows).to_table()
    assert got.to_pylist() == t.take(rows).to_pylist()


@pytest.mark.parametrize("writer", ["lancenb", "pylance"])
def test_compressed_and_fsst_strings(tmp_path, writer):
    def field(name, dt, scheme, **extra):
        md = {"lance-encoding:compression": scheme}
        md.update({f"lance-encoding:{k.replace('_', '-')}": v for k, v in extra.items()})
        return pa.field(name, dt, metadata=md)

    fields = [field("z", pa.string(), "zstd"), field("z9", pa.string(), "zstd",
                                                     compression_level="9"),
              field("l", pa.string(), "lz4"), field("n", pa.binary(), "none"),
              field("f", pa.string(), "fsst"), field("zb", pa.large_binary(), "zstd"),
              field("i", pa.int32(), "zstd")]
    vals = with_nulls(pa.array([f"value {i} " * (i % 7) for i in range(2000)]),
                      np.random.default_rng(4))
    cols = [vals, vals, vals, vals.cast(pa.binary()), vals, vals.cast(pa.large_binary()),
            pa.array(np.arange(2000, dtype=np.int32))]
    t = pa.table(cols, schema=pa.schema(fields))
    path = (nb_write if writer == "lancenb" else py_write)(tmp_path / "c.lance", t, batches=2)
    check_both(path, t, rows=[1999, 5, 5, 1000])
    md = LanceFileReader(path).metadata()
    schemes = [p.layout.binary.bytes.flat.compression
               if p.layout.WhichOneof("array_encoding") == "binary" else None
               for c in md.columns for p in c.pages]
    assert [(c.scheme, c.level) for c in schemes[:4]] == [("zstd", 0), ("zstd", 9), ("lz4", 0),
                                                           ("none", 0)]
    assert trees(path)[4:] == [["fsst"], ["binary"], ["nullable"]]
    assert md.columns[1].pages[0].buffers[1].size < md.columns[3].pages[0].buffers[1].size / 4


def test_types_2_0_cannot_hold_are_refused(tmp_path):
    m = pa.array([[("a", 1)], []], pa.map_(pa.string(), pa.int32()))
    with pytest.raises(NotSupportedError, match="map"):
        nb_write(tmp_path / "m.lance", pa.table({"m": m}))
    f = pa.field("b", pa.binary(), metadata={"lance-encoding:blob": "true"})
    with pytest.raises(InvalidInputError, match="large_binary"):
        nb_write(tmp_path / "b.lance", pa.table({"b": pa.array([b"x"])}, schema=pa.schema([f])))


def test_unknown_compression_is_refused(tmp_path):
    f = pa.field("s", pa.string(), metadata={"lance-encoding:compression": "brotli"})
    with pytest.raises(InvalidInputError, match="brotli"):
        nb_write(tmp_path / "x.lance", pa.table({"s": pa.array(["a"])}, schema=pa.schema([f])))


# -- nested ----------------------------------------------------------------------

@pytest.mark.parametrize("writer", ["lancenb", "pylance"])
def test_lists_and_structs(tmp_path, writer):
    t = nested_table(2_000, seed=2)
    path = (nb_write if writer == "lancenb" else py_write)(tmp_path / "f.lance", t, batches=3,
                                                           data_cache_bytes=64 * 1024)
    check_both(path, t, rows=[1999, 0, 0, 1000, 7, 3, 1500])
    # one column per field: struct headers and list offsets have their own
    assert LanceFileReader(path)._backend.columns_of == [0, 2, 4, 7, 11, 19]


def test_list_pages_and_item_pages_split_independently(tmp_path):
    t = nested_table(4_000, seed=4).select(["lst", "los"])
    path = nb_write(tmp_path / "f.lance", t, batches=8, data_cache_bytes=16 * 1024)
    md = LanceFileReader(path).metadata()
    assert len(md.columns[0].pages) > 1 and len(md.columns[1].pages) > 1
    r = LanceFileReader(path)
    for start, n in [(0, 1), (1234, 1500), (3999, 1), (100, 0)]:
        assert_tables_equal(r.read_range(start, n).to_table(), t.slice(start, n))
    assert_tables_equal(PyReader(path).read_all().to_table(), t)


def test_lists_without_items_as_pylance_writes_them(tmp_path):
    # regression: pylance panicked reading a list<struct> whose rows held no items when
    # the struct header column had no page; columns that got only empty arrays write
    # a page of 0 rows, and a struct header always has its page
    st = pa.struct([("c", pa.int8()), ("d", pa.list_(pa.string()))])
    t = pa.table({"ls": pa.array([[], None, []], pa.list_(st)),
                  "lf": pa.array([[], None, []], pa.list_(pa.list_(pa.float32(), 2))),
                  "lb": pa.array([None, [], []], pa.large_list(pa.large_binary()))})
    mine = nb_write(tmp_path / "nb.lance", t, batches=2)
    ref = py_write(tmp_path / "py.lance", t, batches=2)
    check_both(mine, t)

    def shape(path):
        return [[(p.num_rows, p.description) for p in c.pages]
                for c in LanceFileReader(path).metadata().columns]

    assert shape(mine) == shape(ref)
    z = pa.table({"s": pa.array([], st)})
    assert shape(nb_write(tmp_path / "z.lance", z)) == shape(py_write(tmp_path / "zp.lance", z))


@pytest.mark.parametrize("writer", ["lancenb", "pylance"])
def test_vectors(tmp_path, writer):
    t = vector_table(600, seed=9)
    path = (nb_write if writer == "lancenb" else py_write)(tmp_path / "v.lance", t, batches=2)
    check_both(path, t, rows=[599, 3, 3, 300, 0])


@pytest.mark.parametrize("writer", ["lancenb", "pylance"])
def test_packed_struct_and_blob(tmp_path, writer):
    t = packed_blob_table(700)
    path = (nb_write if writer == "lancenb" else py_write)(tmp_path / "p.lance", t, batches=2)
    check_both(path, t, rows=[1, 2, 699, 0, 1])
    assert trees(path) == [["packed_struct"] * len(trees(path)[0])] * 2


def test_blob_bytes_identical_to_pylance(tmp_path):
    t = packed_blob_table(50).select(["b"])
    mine = nb_write(tmp_path / "nb.lance", t)
    ref = py_write(tmp_path / "py.lance", t)
    assert Path(mine).read_bytes() == Path(ref).read_bytes()


def test_null_structs_are_refused_like_pylance(tmp_path):
    t = pa.table({"s": pa.array([{"x": 1}, None], pa.struct([("x", pa.int32())]))})
    with pytest.raises(ValueError, match="does not encode struct validity"):
        py_write(tmp_path / "py.lance", t)
    with pytest.raises(InvalidInputError, match="does not encode struct validity"):
        nb_write(tmp_path / "nb.lance", t)
    inner = pa.table({"l": pa.array([[{"x": 1}, None]], pa.list_(pa.struct([("x", pa.int8())])))})
    with pytest.raises(InvalidInputError, match="l.item"):
        nb_write(tmp_path / "nb2.lance", inner)


_LEAVES = [pa.int8(), pa.uint16(), pa.int64(), pa.float32(), pa.bool_(), pa.string(),
           pa.large_string(), pa.binary(), pa.date32(), pa.timestamp("us", "UTC"),
           pa.decimal128(10, 2), pa.binary(4), pa.list_(pa.float32(), 3)]


def _random_type(rng, depth=0):
    r = rng.random()
    if depth < 3 and r < 0.25:
        inner = _random_type(rng, depth + 1)
        return pa.list_(inner) if rng.random() < 0.7 else pa.large_list(inner)
    if depth < 3 and r < 0.4:
        return pa.struct([(f"c{i}", _random_type(rng, depth + 1))
                          for i in range(int(rng.integers(1, 3)))])
    return _LEAVES[int(rng.integers(0, len(_LEAVES)))]


def _random_array(rng, t, n):
    """Random values of type ``t`` (nulls anywhere but in structs: 2.0 cannot hold those)."""
    mask = rng.random(n) < rng.choice([0, 0.2, 1.0])
    if pa.types.is_struct(t):
        return pa.StructArray.from_arrays([_random_array(rng, f.type, n) for f in t],
                                          fields=list(t))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        lens = np.where(mask, 0, rng.integers(0, 4, n))
        offs = np.concatenate([[0], np.cumsum(lens)])
        cls = pa.ListArray if pa.types.is_list(t) else pa.LargeListArray
        return cls.from_arrays(offs.astype(np.int32 if pa.types.is_list(t) else np.int64),
                               _random_array(rng, t.value_type, int(offs[-1])),
                               mask=pa.array(mask) if mask.any() else None)
    if pa.types.is_fixed_size_list(t):
        return pa.FixedSizeListArray.from_arrays(
            _random_array(rng, t.value_type, n * t.list_size), t.list_size,
            mask=pa.array(mask) if mask.any() else None)
    if blocks.is_variable(t):
        card = int(rng.choice([3, 1000]))
        base = pa.array([f"s{int(x) % card}" * int(x % 3) for x in rng.integers(0, 10**6, n)])
        base = base.cast(t)
    elif pa.types.is_fixed_size_binary(t):
        base = pa.array([bytes(rng.integers(0, 256, 4, dtype=np.uint8)) for _ in range(n)], t)
    elif pa.types.is_boolean(t):
        base = pa.array(rng.random(n) < 0.5)
    elif pa.types.is_decimal(t):
        base = pa.array([decimal.Decimal(int(x)).scaleb(-2)
                         for x in rng.integers(-10**6, 10**6, n)], t)
    elif pa.types.is_floating(t):
        base = pa.array(rng.standard_normal(n)).cast(t)
    else:
        storage = pa.int32() if t.bit_width == 32 else pa.int64()
        base = pa.array(rng.integers(0, 100, n)).cast(storage if pa.types.is_temporal(t)
                                                      else t).cast(t)
    return pc.if_else(pa.array(mask), pa.nulls(n, t), base) if mask.any() else base


def test_random_schemas_both_ways(tmp_path):
    rng = np.random.default_rng(2024)
    for it in range(30):
        n = int(rng.choice([1, 7, 150, 600]))
        fields = [pa.field(f"f{i}", _random_type(rng)) for i in range(int(rng.integers(1, 4)))]
        t = pa.table([_random_array(rng, f.type, n) for f in fields], schema=pa.schema(fields))
        budget = int(rng.choice([2_000, 50_000]))
        for write in (nb_write, py_write):
            path = write(tmp_path / f"{it}{write.__name__}.lance", t, batches=3,
                         data_cache_bytes=budget)
            rows = rng.integers(0, n, 6)
            a = int(rng.integers(0, n))
            assert_tables_equal(PyReader(path).read_all().to_table(), t)
            r = LanceFileReader(path)
            assert_tables_equal(r.read_all().to_table(), t)
            assert_tables_equal(r.take_rows(rows).to_table(), t.take(rows))
            assert_tables_equal(r.read_range(a, n - a).to_table(), t.slice(a, n - a))


# -- pages, ranges, takes ----------------------------------------------------------

@pytest.fixture(scope="module")
def paged(tmp_path_factory):
    t = flat_table(20_000, seed=11).select(["i32", "i64", "bool_n", "str", "lbin", "fsb16",
                                            "dec", "all_null"])
    t = t.append_column("v", vector_table(20_000).column("v8"))
    d = tmp_path_factory.mktemp("paged")
    return t, {"lancenb": nb_write(d / "nb.lance", t, batches=20, data_cache_bytes=64 * 1024),
               "pylance": py_write(d / "py.lance", t, batches=20, data_cache_bytes=64 * 1024)}


@pytest.mark.parametrize("writer", ["lancenb", "pylance"])
def test_takes_and_ranges_across_pages(paged, writer):
    t, paths = paged
    path = paths[writer]
    md = LanceFileReader(path).metadata()
    assert len(md.columns[1].pages) > 2 and len(md.columns[3].pages) > 2
    check_both(path, t)
    r = LanceFileReader(path)
    firsts = np.cumsum([0] + [p.num_rows for p in md.columns[0].pages])
    edges = np.unique(np.concatenate([firsts[1:-1] - 1, firsts[1:-1], [0, 19_999]]))
    rng = np.random.default_rng(0)
    for rows in (edges, edges[::-1], np.repeat(edges[:3], 3), rng.integers(0, 20_000, 50),
                 np.array([], np.int64), np.array([7])):
        assert_tables_equal(r.take_rows(rows).to_table(), t.take(rows))
    for start, n in [(0, 20_000), (int(firsts[1]) - 3, 6), (19_990, 10), (5, 0)]:
        assert_tables_equal(r.read_range(start, n).to_table(), t.slice(start, n))
    assert_tables_equal(LanceFileReader(path, columns=["str", "v"]).take_rows(edges).to_table(),
                        t.select(["str", "v"]).take(edges))


def test_take_reads_only_byte_ranges(tmp_path):
    n = 200_000
    t = pa.table({"x": np.arange(n, dtype=np.int64),
                  "s": pa.array([f"row {i}" for i in range(n)], pa.large_string()),
                  "cat": pa.array(np.array(["p", "q", None])[np.arange(n) % 3]),
                  "l": pa.ListArray.from_arrays(np.arange(0, 2 * n + 1, 2, dtype=np.int32),
                                                pa.array(np.arange(2 * n, dtype=np.int32)))})
    path = nb_write(tmp_path / "big.lance", t)
    assert trees(path)[2] == ["dictionary"]
    for col in t.column_names:
        r = LanceFileReader(path, columns=[col])
        before = r._io.stats.bytes_read
        rows = np.array([0, 5, 77_777, 199_999])
        assert_tables_equal(r.take_rows(rows).to_table(), t.select([col]).take(rows))
        assert r._io.stats.bytes_read - before < 4096, col
        for start, count in [(0, 40), (100_001, 50), (n - 30, 30)]:
            before = r._io.stats.bytes_read
            assert_tables_equal(r.read_range(start, count).to_table(),
                                t.select([col]).slice(start, count))
            assert r._io.stats.bytes_read - before < 4096, (col, start)


def test_pages_split_where_pylance_splits_them(tmp_path):
    n = 20_000
    t = pa.table({"i": np.arange(n), "s": pa.array([str(i) for i in range(n)]),
                  "l": pa.ListArray.from_arrays(np.arange(0, 2 * n + 1, 2, dtype=np.int32),
                                                pa.array(np.arange(2 * n)))})
    for batches, budget in ((1, None), (10, None), (10, 100_000)):
        rows = {}
        for name, write in (("nb", nb_write), ("py", py_write)):
            path = write(tmp_path / f"{name}.lance", t, batches=batches, max_page_bytes=25_000,
                         data_cache_bytes=budget)
            rows[name] = [[p.num_rows for p in c.pages]
                          for c in LanceFileReader(path).metadata().columns]
            check_both(path, t, rows=[n - 1, 0, 12_345, 12_346])
        # (a list's item pages differ: arrow-rs counts a sliced child's whole buffers)
        assert rows["nb"][:3] == rows["py"][:3]
        assert len(rows["nb"][0]) > 3 or batches > 1


@pytest.mark.parametrize("writer", ["lancenb", "pylance"])
def test_zero_rows(tmp_path, writer):
    t = pa.table({"i": pa.array([], pa.int32()), "s": pa.array([], pa.string()),
                  "l": pa.array([], pa.list_(pa.int32())),
                  "st": pa.array([], pa.struct([("a", pa.int8())]))})
    path = (nb_write if writer == "lancenb" else py_write)(tmp_path / "z.lance", t)
    assert_tables_equal(PyReader(path).read_all().to_table(), t)
    r = LanceFileReader(path)
    assert r.num_rows() == 0
    assert_tables_equal(r.read_all().to_table(), t)
    assert_tables_equal(r.take_rows([]).to_table(), t)


def test_column_projection_and_metadata(tmp_path, flat):
    path = nb_write(tmp_path / "p.lance", flat)
    r = LanceFileReader(path, columns=["str", "i8"])
    assert_tables_equal(r.read_all().to_table(), flat.select(["str", "i8"]))
    md = r.metadata()
    assert md.num_rows == N and len(md.columns) == flat.num_columns
    assert md.schema.equals(flat.schema)


# -- datasets ------------------------------------------------------------------------

def test_pylance_2_0_dataset(tmp_path):
    t = pa.table({"a": np.arange(3000), "s": pa.array([str(i % 30) for i in range(3000)]),
                  "st": pa.array([{"x": i, "l": [i] * (i % 3)} for i in range(3000)]),
                  "v": vector_table(3000).column("v8")})
    uri = str(tmp_path / "ds")
    lance.write_dataset(t, uri, data_storage_version="2.0", max_rows_per_file=1000)
    lance.write_dataset(t.slice(0, 10), uri, mode="append", data_storage_version="2.0")
    lance.dataset(uri).delete("a % 7 = 0")
    ref = lance.dataset(uri)
    ds = lancenb.dataset(uri)
    assert_tables_equal(ds.to_table(), ref.to_table())
    assert_tables_equal(ds.to_table(columns=["st", "a"]), ref.to_table(columns=["st", "a"]))
    assert_tables_equal(ds.take([0, 999, 1000, 2500]), ref.take([0, 999, 1000, 2500]))
    assert ds.count_rows("a > 2900") == ref.count_rows("a > 2900")


# -- damaged files ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def good(tmp_path_factory):
    t = flat_table(800, seed=1).select(["i32", "str", "bool_n"])
    t = t.append_column("v", vector_table(800).column("v8"))
    t = t.append_column("cat", pa.array(["x", "y"] * 400))
    t = t.append_column("lst", nested_table(800).column("lst"))
    path = tmp_path_factory.mktemp("good") / "g.lance"
    return nb_write(path, t, data_cache_bytes=16 * 1024)


def _read_everything(path):
    r = LanceFileReader(path)
    r.read_all().to_table()
    n = r.num_rows()
    r.take_rows([0, 5, n - 1]).to_table()
    r.read_range(10, n - 20).to_table()


def test_truncated_files_raise_lance_errors(tmp_path, good):
    raw = Path(good).read_bytes()
    bad = tmp_path / "t.lance"
    for cut in range(0, len(raw), max(1, len(raw) // 60)):
        bad.write_bytes(raw[:cut])
        with pytest.raises(LanceError):
            _read_everything(str(bad))


def test_flipped_bytes_raise_lance_errors_or_read(tmp_path, good):
    raw = Path(good).read_bytes()
    md = LanceFileReader(good).metadata()
    gb0 = md.global_buffers[0]
    meta_start = gb0.position + gb0.size
    rng = np.random.default_rng(5)
    spots = [b.position + int(rng.integers(0, max(1, b.size)))
             for c in md.columns for p in c.pages for b in p.buffers if b.size]
    spots += list(rng.integers(meta_start, len(raw) - 40, 80))
    bad = tmp_path / "f.lance"
    corrupt = 0
    for pos in spots:
        data = bytearray(raw)
        data[int(pos)] ^= int(rng.integers(1, 256))
        bad.write_bytes(bytes(data))
        try:
            _read_everything(str(bad))
        except CorruptFileError:
            corrupt += 1
        except LanceError:
            pass
    assert corrupt > 0


def test_damaged_offsets_and_encodings(tmp_path):
    t = pa.table({"s": pa.array(["abc", None, "", "defg"] * 50, pa.large_string()),
                  "l": pa.array([[1, 2], None, [], [3]] * 50, pa.list_(pa.int32()))})
    path = nb_write(tmp_path / "o.lance", t)
    raw = bytearray(Path(path).read_bytes())
    md = LanceFileReader(path).metadata()
    bad = tmp_path / "bad.lance"
    for col, buf in [(0, 0), (1, 0)]:  # string end offsets, list end offsets
        b = md.columns[col].pages[0].buffers[buf]
        for value in (2**63 + 5, 10**9, 0):
            data = bytearray(raw)
            data[b.position + 16:b.position + 24] = int(value).to_bytes(8, "little")
            bad.write_bytes(bytes(data))
            with pytest.raises(LanceError):
                _read_everything(str(bad))
    # an encoding naming a buffer the page does not have
    enc = pb.e20.ArrayEncoding()
    enc.CopyFrom(md.columns[0].pages[0].layout)
    enc.binary.bytes.flat.buffer.buffer_index = 7
    old = pb.pack_any(md.columns[0].pages[0].layout)
    new = pb.pack_any(enc)
    assert len(old) == len(new) and raw.count(old) == 1
    bad.write_bytes(bytes(raw).replace(old, new))
    with pytest.raises(CorruptFileError, match="buffer 7"):
        _read_everything(str(bad))
