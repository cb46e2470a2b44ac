"""Arrow dictionary columns and empty structs in 2.1/2.2 files, both ways against
pylance 14 (see :mod:`lancenb.encodings.structural.dictarray`)."""

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.encodings.blocks import DictionaryIndices
from lancenb.encodings.structural import dictarray
from lancenb.errors import CorruptFileError, InvalidInputError, NotSupportedError
from lancenb.file import LanceFileReader, LanceFileWriter

lance = pytest.importorskip("lance")
from lance.file import LanceFileReader as PyReader  # noqa: E402
from lance.file import LanceFileWriter as PyWriter  # noqa: E402

VERSIONS = ["2.1", "2.2"]
N = 600


def D(idx, values, index_type=None, value_type=None):
    return pa.DictionaryArray.from_arrays(pa.array(idx, index_type or pa.int32()),
                                          pa.array(values, value_type or pa.string()))


def _indices(rng, n, k, null_every=0):
    idx = rng.integers(0, k, n).astype(object)
    if null_every:
        idx[::null_every] = None
    return list(idx)


def E(n):
    return pa.StructArray.from_buffers(pa.struct([]), n, [None], children=[])


def _table(n=N, seed=0):
    """Every dictionary shape pylance 14 writes and reads back exactly. A top-level
    empty struct goes last: pylance 14 reads the columns after one as nulls."""
    rng = np.random.default_rng(seed)
    words = ["alpha", "beta", "gamma", "delta", "unused", "eps"]
    list_type = pa.list_(pa.dictionary(pa.int8(), pa.string()))
    lists = pa.ListArray.from_arrays(
        pa.array(np.arange(0, n + 1) * 2, pa.int32()),
        D(_indices(rng, 2 * n, 3, 7), ["x", "yy", "zzz"], pa.int8()),
        type=list_type, mask=pa.array(np.arange(n) % 11 == 3))
    lists = pa.concat_arrays([lists.slice(0, n - 2), pa.array([[], None], list_type)])
    return pa.table({
        "s_i8": D(_indices(rng, n, 4, 5), words, pa.int8()),  # "unused", "eps" unused
        "s_i16": D(_indices(rng, n, 6), words, pa.int16()),
        "i_i32": D(_indices(rng, n, 3, 9), [7, -8, 1 << 40], pa.int32(), pa.int64()),
        "f_i64": D(_indices(rng, n, 3), [1.5, float("inf"), -0.0], pa.int64(), pa.float64()),
        "u8_f32": D(_indices(rng, n, 2), [0.25, 2.0], pa.uint8(), pa.float32()),
        "bool": D(_indices(rng, n, 2, 4), [True, False], pa.int32(), pa.bool_()),
        "large": D(_indices(rng, n, 2), ["p", "qq"], pa.int16(), pa.large_string()),
        "bin": D(_indices(rng, n, 3), [b"\x00", b"\xff\xfe", b""], pa.int32(), pa.binary()),
        "dups": D(_indices(rng, n, 4), ["a", "b", "a", "b"]),
        "all_null": D([None] * n, []),  # (any dictionary reads back empty)
        "list": lists,
        "struct": pa.StructArray.from_arrays(
            [pa.array(np.arange(n, dtype=np.int32)),
             D(_indices(rng, n, 3, 6), ["r", "s", "t"])], ["x", "y"],
            mask=pa.array(np.arange(n) % 13 == 0)),
        "with_empty": pa.StructArray.from_arrays([pa.array(np.arange(n) * 3), E(n)],
                                                 ["x", "e"]),
        "empty": E(n),
    })


def _write(writer, path, tables, version, **kw):
    with writer(str(path), version=version, **kw) as w:
        for t in tables:
            w.write_batch(t)
    return str(path)


def _layouts(path):
    """``{column index: [page descriptions]}`` of a file (lancenb's metadata)."""
    md = LanceFileReader(path).metadata()
    return [[(p.description, len(p.buffers)) for p in c.pages] for c in md.columns]


def _logical(col):
    """A column's values with dictionaries decoded (nested ones included)."""
    if isinstance(col, pa.ChunkedArray):  # (chunks' dictionaries may not combine)
        return [v for c in col.chunks for v in c.to_pylist()]
    return col.to_pylist()


def _assert_same_values(got: pa.Table, want: pa.Table):
    assert got.schema == want.schema
    for name in want.column_names:
        assert _logical(got[name]) == _logical(want[name]), name


def _assert_dictionary_pages(path, version):
    """Dictionary columns are mini-block pages with a page dictionary (or all-null),
    empty structs all-null pages without buffers: no other layout slipped in."""
    t = _table(4)
    lay = _layouts(path)
    cols = {n: i for i, n in enumerate(["s_i8", "s_i16", "i_i32", "f_i64", "u8_f32", "bool",
                                        "large", "bin", "dups", "all_null", "list", "struct.x",
                                        "struct.y", "with_empty.x", "with_empty.e", "empty"])}
    assert len(lay) == len(cols)
    wrap = "general(" if version == "2.2" else ""
    for name, ci in cols.items():
        for desc, nbuf in lay[ci]:
            if name in ("all_null", "empty", "with_empty.e"):
                assert (desc, nbuf) == ("constant", 0), name
            elif name in ("struct.x", "with_empty.x"):
                assert "dict=" not in desc
            else:
                assert desc.startswith("mini_block:") and f" dict={wrap}" in desc, (name, desc)
    assert "dict=" + wrap + "variable(flat(64))" in lay[cols["large"]][0][0]
    assert "bitpacking" in lay[cols["s_i8"]][0][0]  # 8-bit indices packed to 3 bits
    assert t.schema.field("empty").type == pa.struct([])


@pytest.mark.parametrize("version", VERSIONS)
def test_lancenb_writes_pylance_reads(tmp_path, version):
    t = _table()
    p = _write(LanceFileWriter, tmp_path / "a.lance", [t], version)
    back = PyReader(p).read_all().to_table()
    assert back.equals(t)
    _assert_dictionary_pages(p, version)
    r = LanceFileReader(p)
    assert r.read_all().to_table().equals(t)


@pytest.mark.parametrize("version", VERSIONS)
def test_pylance_writes_lancenb_reads(tmp_path, version):
    t = _table(seed=1)
    p = _write(PyWriter, tmp_path / "p.lance", [t], version)
    r = LanceFileReader(p)
    assert r.read_all().to_table().equals(t)
    _assert_dictionary_pages(p, version)
    # lancenb writes the same pages; in 2.1 the very same bytes (2.2's LZ4 differs)
    q = _write(LanceFileWriter, tmp_path / "q.lance", [t], version)
    assert _layouts(q) == _layouts(p)
    if version == "2.1":
        assert Path(p).read_bytes() == Path(q).read_bytes()
    for col in r.metadata().columns:
        for page in col.pages:
            lay = page.layout.mini_block_layout
            if page.layout.HasField("mini_block_layout") and lay.HasField("dictionary"):
                assert lay.num_dictionary_items > 0


@pytest.mark.parametrize("version", VERSIONS)
def test_ranges_and_takes_equal_slices(tmp_path, version):
    t = _table(seed=2)
    # several batches in pages of a few batches each: dictionaries concatenated per page
    batches = [t.slice(i, 150) for i in range(0, N, 150)]
    for writer in (LanceFileWriter, PyWriter):
        p = _write(writer, tmp_path / f"{writer.__module__}.lance", batches, version,
                   data_cache_bytes=30_000)
        r = LanceFileReader(p)
        whole = r.read_all().to_table()
        _assert_same_values(whole, t)
        assert max(len(c) for c in _layouts(p)) > 1  # some column has several pages
        for start, n in [(0, 1), (149, 3), (140, 300), (599, 1), (0, N), (300, 0)]:
            got = r.read_range(start, n).to_table()
            _assert_same_values(got, whole.slice(start, n))
        rows = [599, 0, 150, 151, 149, 300, 300, 7]
        got = r.take_rows(rows).to_table()
        _assert_same_values(got, whole.take(rows))


@pytest.mark.parametrize("version", VERSIONS)
def test_multi_page_dictionaries(tmp_path, version):
    """Each page keeps its own dictionary, the batches' dictionaries concatenated."""
    a = pa.table({"d": D([0, 1, 2, 1] * 500, ["a", "bb", "ccc"])})
    b = pa.table({"d": D([0, 1, None, 1] * 500, ["x", "a"])})
    want = pa.concat_tables([a, b, a])
    for kw, items in [({}, [3 + 2 + 3]), ({"data_cache_bytes": 1000}, [3, 2, 3])]:
        pages, files = {}, {}
        for writer in (LanceFileWriter, PyWriter):
            p = files[writer] = _write(writer, tmp_path / f"{writer.__module__}.lance",
                                       [a, b, a], version, **kw)
            md = LanceFileReader(p).metadata()
            pages[writer] = [pg.layout for pg in md.columns[0].pages]
            assert [pg.layout.mini_block_layout.num_dictionary_items
                    for pg in md.columns[0].pages] == items
            got = LanceFileReader(p).read_all().to_table()
            assert got.schema == want.schema and _logical(got["d"]) == _logical(want["d"])
            # per page: the page's dictionary (a single-page column is its own input)
            if len(items) == 3:
                assert [c.dictionary.to_pylist() for c in got["d"].chunks] == \
                    [["a", "bb", "ccc"], ["x", "a"], ["a", "bb", "ccc"]]
            other = PyReader(p).read_all().to_table()
            assert other.schema == want.schema and _logical(other["d"]) == _logical(want["d"])
        assert pages[LanceFileWriter] == pages[PyWriter]
        if version == "2.1":  # null slots included: shifted like the valid indices
            assert Path(files[LanceFileWriter]).read_bytes() == \
                Path(files[PyWriter]).read_bytes()


def test_dictionary_overflowing_its_index_type_splits_pages(tmp_path):
    """Batches whose dictionaries together overflow int8 indices: pylance writes one
    page with 32-bit indices it cannot read back; lancenb cuts pages instead."""
    rng = np.random.default_rng(3)
    batches = [pa.table({"d": D(rng.integers(0, 100, 1000), [f"v{b}_{i}" for i in range(100)],
                                pa.int8())}) for b in range(3)]
    p = _write(LanceFileWriter, tmp_path / "a.lance", batches, "2.1")
    md = LanceFileReader(p).metadata()
    assert [pg.num_rows for pg in md.columns[0].pages] == [1000, 1000, 1000]
    want = pa.concat_tables(batches)
    assert _logical(LanceFileReader(p).read_all().to_table()["d"]) == _logical(want["d"])
    # pylance reads it batch by batch within pages (a batch across pages overflows int8)
    got = PyReader(p).read_all(batch_size=1000).to_table()
    assert _logical(got["d"]) == _logical(want["d"])
    # two batches whose dictionaries merge into one that fits share one page: pylance
    # (Arrow) keeps the values the indices use, once each
    same = [pa.table({"d": D([0, 1] * 50, [f"w{i}" for i in range(100)], pa.int8())})] * 2
    q = _write(LanceFileWriter, tmp_path / "b.lance", same, "2.1")
    lay = LanceFileReader(q).metadata().columns[0].pages
    assert len(lay) == 1 and lay[0].layout.mini_block_layout.num_dictionary_items == 2
    assert Path(q).read_bytes() == Path(_write(PyWriter, tmp_path / "c.lance", same,
                                               "2.1")).read_bytes()


@pytest.mark.parametrize("version", VERSIONS)
def test_batches_sharing_a_big_dictionary_merge(tmp_path, version):
    """A table cut into batches that each carry the whole (big) string dictionary: the
    dictionaries hold more values than the page has rows, so they are merged to the
    values in use (as pylance does; its lossy hash keeps a few repeats, lancenb none)."""
    rng = np.random.default_rng(7)
    t = pa.table({"d": D(rng.integers(0, 5000, 20000), [f"city-{i}" for i in range(5000)])})
    batches = t.to_batches(max_chunksize=1000)
    ours = _write(LanceFileWriter, tmp_path / "a.lance", batches, version)
    theirs = _write(PyWriter, tmp_path / "p.lance", batches, version)
    n_ours, n_theirs = (LanceFileReader(p).metadata().columns[0].pages[0].layout
                        .mini_block_layout.num_dictionary_items for p in (ours, theirs))
    used = len(np.unique(t["d"].chunk(0).indices.to_numpy()))
    assert n_ours == used and used <= n_theirs < 1.25 * used
    for p in (ours, theirs):
        for reader in (LanceFileReader, PyReader):
            got = reader(p).read_all().to_table()["d"]
            assert got.type == t["d"].type and _logical(got) == _logical(t["d"])
    first = [LanceFileReader(p).read_all().to_table()["d"].chunk(0).dictionary[:5].to_pylist()
             for p in (ours, theirs)]
    assert first[0] == first[1]  # same order: first use, batch by batch


@pytest.mark.parametrize("version", VERSIONS)
def test_nulls_in_dictionary_values_move_to_the_indices(tmp_path, version):
    """pylance drops null dictionary entries and nulls the indices pointing at them."""
    t = pa.table({
        "d": D([0, 1, 2, 1, 3, None] * 50, ["a", None, "c", "d"]),
        "l": pa.array([[None, "k"], ["k"]] * 150,
                      pa.list_(pa.dictionary(pa.int16(), pa.string()))),
    })
    t = t.set_column(1, "l", pa.ListArray.from_arrays(
        pa.array(np.arange(301) * 2, pa.int32()), D([0, 1, 2, 1] * 150, ["k", None, "m"],
                                                    pa.int16())))
    want = pa.table({
        "d": D([0, None, 1, None, 2, None] * 50, ["a", "c", "d"]),
        "l": pa.ListArray.from_arrays(pa.array(np.arange(301) * 2, pa.int32()),
                                      D([0, None, 1, None] * 150, ["k", "m"], pa.int16())),
    })
    ours = _write(LanceFileWriter, tmp_path / "a.lance", [t], version)
    theirs = _write(PyWriter, tmp_path / "p.lance", [t], version)
    for p in (ours, theirs):
        assert LanceFileReader(p).read_all().to_table().equals(want)
        assert PyReader(p).read_all().to_table().equals(want)
    assert _layouts(ours) == _layouts(theirs)


@pytest.mark.parametrize("version", VERSIONS)
def test_zero_rows(tmp_path, version):
    schema = _table(4).schema
    for writer, reader in [(LanceFileWriter, PyReader), (PyWriter, LanceFileReader)]:
        p = str(tmp_path / f"{writer.__module__}.lance")
        writer(p, schema, version=version).close()
        got = reader(p).read_all().to_table()
        assert got.num_rows == 0 and got.schema == schema
    assert LanceFileReader(p).take_rows([]).to_table().schema == schema


@pytest.mark.parametrize("version", VERSIONS)
def test_empty_structs_refused_where_pylance_refuses_them(tmp_path, version):
    nullable = pa.table({"e": pa.StructArray.from_buffers(
        pa.struct([]), 4, [pa.py_buffer(np.packbits([1, 0, 1, 1], bitorder="little"))],
        children=[])})
    in_list = pa.table({"l": pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()), E(3))})
    under_null = pa.table({"s": pa.StructArray.from_arrays(
        [pa.array([1, 2]), E(2)], ["x", "e"], mask=pa.array([False, True]))})
    for i, t in enumerate([nullable, in_list, under_null]):
        with pytest.raises(NotSupportedError, match="empty struct"):
            _write(LanceFileWriter, tmp_path / f"a{i}.lance", [t], version)
        with pytest.raises(Exception, match="[Ee]mpty struct"):
            _write(PyWriter, tmp_path / f"p{i}.lance", [t], version)


def test_invalid_dictionary_arrays_are_refused(tmp_path):
    bad = pa.DictionaryArray.from_arrays(pa.array([0, 5], pa.int32()), pa.array(["a", "b"]),
                                         safe=False)
    for t in (pa.table({"d": bad}),
              pa.table({"d": pa.DictionaryArray.from_arrays(
                  pa.array([0, 5], pa.int32()), pa.array(["a", None]), safe=False)})):
        with pytest.raises(InvalidInputError, match="outside"):
            _write(LanceFileWriter, tmp_path / "a.lance", [t], "2.1")


def test_dictionary_value_types_pylance_cannot_store_are_refused(tmp_path):
    t = pa.table({"f": D([0, 1], [b"ab", b"cd"], pa.int32(), pa.binary(2))})
    with pytest.raises(NotSupportedError, match="dictionaries of"):
        _write(LanceFileWriter, tmp_path / "a.lance", [t], "2.1")
    w = PyWriter(str(tmp_path / "p.lance"), version="2.1")
    with pytest.raises(RuntimeError, match="does not parse back"):
        w.write_batch(t)


def _chunk_values_start(path, column):
    """File offset of the first chunk's value bytes (a page without rep/def levels)."""
    page = LanceFileReader(path).metadata().columns[column].pages[0]
    return page.buffers[1].position + 8  # u16 num_levels, u16 size, padding to 8


@pytest.mark.parametrize("version", VERSIONS)
def test_index_outside_the_dictionary_is_corrupt(tmp_path, version):
    t = pa.table({"d": D([0, 1, 2, 1] * 50, ["a", "b", "c"], pa.int8())})
    p = _write(LanceFileWriter, tmp_path / "a.lance", [t], version)
    assert _layouts(p)[0][0][0].startswith("mini_block:flat(8)")
    if version == "2.2":
        pos = LanceFileReader(p).metadata().columns[0].pages[0].buffers[1].position + 8
    else:
        pos = _chunk_values_start(p, 0)
    raw = bytearray(Path(p).read_bytes())
    assert raw[pos:pos + 4] == bytes([0, 1, 2, 1])
    raw[pos + 2] = 3  # one past the dictionary
    Path(p).write_bytes(bytes(raw))
    with pytest.raises(CorruptFileError, match="dictionary index 3 is out of range"):
        LanceFileReader(p).read_all()
    with pytest.raises(CorruptFileError, match="out of range"):
        LanceFileReader(p).take_rows([2])
    assert LanceFileReader(p).take_rows([0, 1]).to_table()["d"].to_pylist() == ["a", "b"]


def test_to_arrow_checks_indices():
    dt = pa.dictionary(pa.int8(), pa.string())
    items = pa.array(["a", "b"])
    ok = dictarray.to_arrow(dt, DictionaryIndices(np.array([1, 0, 9], np.uint32), items, 3),
                            np.array([True, True, False]), "here")
    assert ok.type == dt and ok.to_pylist() == ["b", "a", None]
    with pytest.raises(CorruptFileError, match="here: dictionary index 2"):
        dictarray.to_arrow(dt, DictionaryIndices(np.array([2], np.uint32), items, 1), None,
                           "here")
    big = pa.array([str(i) for i in range(300)])
    with pytest.raises(CorruptFileError, match="does not fit"):
        dictarray.to_arrow(dt, DictionaryIndices(np.array([200], np.uint32), big, 1), None, "x")


@pytest.mark.parametrize("version", VERSIONS)
def test_datasets_both_ways(tmp_path, version):
    t = _table(seed=4)
    lancenb.write_dataset(t, str(tmp_path / "ours"), data_storage_version=version)
    assert lance.dataset(str(tmp_path / "ours")).to_table().equals(t)
    lance.write_dataset(t, str(tmp_path / "theirs"), data_storage_version=version)
    ds = lancenb.dataset(str(tmp_path / "theirs"))
    assert ds.to_table().equals(t)
    assert ds.take([5, 0, 599]).equals(t.take([5, 0, 599]))
    frag_ours = lance.dataset(str(tmp_path / "ours")).get_fragments()[0].metadata.files[0]
    frag_theirs = lance.dataset(str(tmp_path / "theirs")).get_fragments()[0].metadata.files[0]
    assert frag_ours.fields == frag_theirs.fields
    assert frag_ours.column_indices == frag_theirs.column_indices
    shutil.rmtree(tmp_path / "ours")


def test_inspect_explain_validate(tmp_path):
    t = _table(200)
    p = _write(LanceFileWriter, tmp_path / "a.lance", [t], "2.1")
    report = lancenb.inspect(p)
    for col in report["columns"]:
        for page in col["pages"]:
            assert page["explanation"]["reproduced"], (col["name"], page["explanation"])
    assert lancenb.validate(p)["ok"]
    explained = lancenb.explain(t, version="2.1")["columns"]
    chosen = {c["column"]: c["pages"][0]["chosen"] for c in explained}
    assert chosen == {c["name"]: c["pages"][0]["description"] for c in report["columns"]}


def _deeper_table(n=300):
    inner = pa.StructArray.from_arrays(
        [D([0, 1, None, 2] * (n // 2), ["a", "b", "c"], pa.int16()), pa.array(range(2 * n))],
        ["y", "z"], mask=pa.array([False, False, False, True] * (n // 2)))
    return pa.table({
        "list_struct": pa.ListArray.from_arrays(pa.array(np.arange(n + 1) * 2, pa.int32()),
                                                inner, mask=pa.array(np.arange(n) % 7 == 1)),
        "large_list": pa.LargeListArray.from_arrays(
            pa.array(np.arange(n + 1) * 2, pa.int64()),
            D([0, 1, 2, 1] * (n // 2), [1.0, 2.0, 3.0], pa.uint16(), pa.float32())),
        "list_list": pa.ListArray.from_arrays(
            pa.array(np.arange(n + 1), pa.int32()),
            pa.ListArray.from_arrays(pa.array(np.arange(n + 1) * 2, pa.int32()),
                                     D([0, 1] * n, ["q", "r"], pa.int8()))),
        "empty": E(n),
        "after": pa.array(range(n)),
    })


@pytest.mark.parametrize("version", VERSIONS)
def test_deeper_nesting_and_columns_after_an_empty_struct(tmp_path, version):
    """Dictionaries under list<struct>, large_list, list<list>; a column after a
    top-level empty struct (pylance 14 writes it correctly but reads it back as
    nulls, so only lancenb's reads check that column)."""
    t = _deeper_table()
    theirs = _write(PyWriter, tmp_path / "p.lance", [t], version)
    ours = _write(LanceFileWriter, tmp_path / "a.lance", [t], version)
    # the same bytes, 2.2 included (these small dictionaries LZ4-compress alike)
    assert Path(ours).read_bytes() == Path(theirs).read_bytes()
    for p in (ours, theirs):
        r = LanceFileReader(p)
        assert r.read_all().to_table().equals(t)
        assert r.take_rows([299, 1, 1, 0]).to_table().equals(t.take([299, 1, 1, 0]))
        assert r.read_range(5, 200).to_table().equals(t.slice(5, 200))
    got = PyReader(ours).read_all().to_table()
    assert got.select(t.column_names[:-1]).equals(t.select(t.column_names[:-1]))


def test_from_values_and_empty_struct_chain():
    dt = pa.dictionary(pa.int16(), pa.string())
    arr = dictarray.from_values(pa.array(["b", None, "a", "b"]), dt)
    assert arr.type == dt and arr.to_pylist() == ["b", None, "a", "b"]
    assert dictarray.from_values(pa.nulls(3, pa.string()), dt).to_pylist() == [None] * 3
    chain = pa.struct([pa.field("s", pa.struct([pa.field("e", pa.struct([]))]))])
    got = dictarray.empty_struct_chain(chain, 4)
    assert got.type == chain and got.to_pylist() == [{"s": {"e": {}}}] * 4


def _items_table(n=6000, seed=5):
    """Dictionaries whose items pylance block-compresses in each way: Variable (big),
    InlineBitpacking (≤ 1024 fixed-width items), OutOfLineBitpacking (more; a group of
    zeros does not stop it), Flat (too few items to pack)."""
    rng = np.random.default_rng(seed)
    big = [f"value-{i:06d}-padding" for i in range(3000)]
    return pa.table({
        "strings_i16": D(rng.integers(0, 3000, n), big, pa.int16()),
        "strings_u32_nulls": D(np.where(rng.random(n) < 0.1, None, rng.integers(0, 3000, n)),
                               big, pa.uint32()),
        "runs_i8": D(np.repeat(np.arange(20) % 3, n // 20), ["a", "b", "c"], pa.int8()),
        "inline_f64": D(rng.integers(0, 1000, n), rng.random(1000), pa.int32(), pa.float64()),
        "outofline_i64": D(rng.integers(0, 3000, n), rng.permutation(3000), pa.int64(),
                           pa.int64()),
        "zero_group": D(rng.integers(0, 2000, n), np.r_[np.arange(1, 1025), np.zeros(976, int)],
                        pa.int16(), pa.int64()),
        "flat_i32": D(rng.integers(0, 3, n), [-1, 5, 7], pa.int32(), pa.int32()),
        "u16_items": D(rng.integers(0, 1500, n), np.arange(1500) * 3, pa.int16(), pa.uint16()),
        "f16_u64": D(rng.integers(0, 2, n), np.array([1.5, -2.5], np.float16), pa.uint64(),
                     pa.float16()),
        "lbin_u8": D(rng.integers(0, 3, n), [b"\x00", b"", b"xyz"], pa.uint8(),
                     pa.large_binary()),
    })


@pytest.mark.parametrize("version", VERSIONS)
def test_same_bytes_as_pylance(tmp_path, version):
    t = _items_table()
    ours = _write(LanceFileWriter, tmp_path / "a.lance", [t], version)
    theirs = _write(PyWriter, tmp_path / "p.lance", [t], version)
    lay = _layouts(theirs)
    assert "dict=out_of_line_bitpacking(flat(12))" in lay[4][0][0]
    assert "dict=out_of_line_bitpacking(flat(11))" in lay[5][0][0]
    assert "dict=inline_bitpacking" in lay[3][0][0]
    assert Path(ours).read_bytes() == Path(theirs).read_bytes()
    assert PyReader(ours).read_all().to_table().equals(t)
    r = LanceFileReader(theirs)
    assert r.read_all().to_table().equals(t)
    rows = [5999, 0, 1024, 4097, 4096, 4096]
    assert r.take_rows(rows).to_table().equals(t.take(rows))


def test_dataset_fragments_with_dictionaries_that_do_not_unify(tmp_path):
    """Two fragments of int8-indexed dictionaries with 100 values each: together they
    overflow int8, so reads keep one chunk per fragment instead of failing."""
    def frag(prefix):
        return pa.table({"d": D(np.arange(100), [f"{prefix}{i}" for i in range(100)],
                                pa.int8()), "x": pa.array(np.arange(100))})
    p = str(tmp_path / "ds")
    lancenb.write_dataset(frag("a"), p)
    lancenb.write_dataset(frag("b"), p, mode="append")
    want = pa.concat_tables([frag("a"), frag("b")])
    assert lance.dataset(p).to_table().equals(want)
    ds = lancenb.dataset(p)
    got = ds.to_table()
    assert got.schema == want.schema and _logical(got["d"]) == _logical(want["d"])
    assert got["d"].num_chunks == 2  # one dictionary per fragment
    rows = [150, 0, 199, 1, 150]
    taken = ds.take(rows)
    assert taken.schema == want.schema
    assert _logical(taken["d"]) == ["b50", "a0", "b99", "a1", "b50"]
    assert _logical(ds.head(150)["d"]) == _logical(want["d"])[:150]
    assert ds.to_table(filter="d = 'b5'")["x"].to_pylist() == [5]


@pytest.mark.parametrize("version", VERSIONS)
def test_pages_whose_dictionaries_do_not_unify(tmp_path, version):
    """Pages of int8-indexed dictionaries with 100 values each, flat and under a list
    and a struct: reads join them page by page instead of unifying past int8."""
    def batch(prefix):
        d = D(np.arange(200) % 100, [f"{prefix}{i}" for i in range(100)], pa.int8())
        return pa.table({
            "d": d.slice(0, 100),
            "l": pa.ListArray.from_arrays(pa.array(np.arange(0, 201, 2), pa.int32()), d),
            "s": pa.StructArray.from_arrays([d.slice(100, 100), pa.array(np.arange(100))],
                                            ["y", "z"]),
        })
    batches = [batch("a"), batch("b"), batch("c")]
    want = pa.concat_tables(batches)
    p = _write(LanceFileWriter, tmp_path / "a.lance", batches, version)
    r = LanceFileReader(p)
    assert [len(c.pages) for c in r.metadata().columns] == [3, 3, 3, 3]
    got = r.read_all().to_table()
    for name in want.column_names:
        assert _logical(got[name]) == _logical(want[name])
        assert got[name].type == want[name].type
    assert _logical(r.read_range(50, 200).to_table()["l"]) == _logical(want["l"])[50:250]
    rows = [250, 3, 120, 120, 299]
    taken = r.take_rows(rows).to_table()
    assert _logical(taken["s"]) == [want["s"][i].as_py() for i in rows]
    assert sum(b.num_rows for b in r.read_all(batch_size=64).to_batches()) == 300
    # pylance reads each page (batches that stay inside pages)
    theirs = PyReader(p).read_all(batch_size=100).to_table()
    assert _logical(theirs["l"]) == _logical(want["l"])
