"""Fixed-size lists beyond vectors of whole-byte primitives: ``fixed_size_list<bool>``
and fixed-size lists of fixed-size lists (depth 2 and 3), with nulls at every level,
in 2.1 and 2.2, mini-block and full-zip; pylance reads lancenb's files and lancenb
reads pylance's (whole, by range, by take, across pages), single-page files are
byte-identical, and the pages carry the nested FixedSizeList description. Also:
pylance 2.2's ``fixed_size_list<struct>`` (stored as its items) read by lancenb, and
the types neither side can write refused with NotSupportedError."""

import numpy as np
import pyarrow as pa
import pytest
from _tables import flip_page_bytes

import lancenb
from lancenb.encodings import pb
from lancenb.encodings.physical import fsl
from lancenb.errors import CorruptFileError, NotSupportedError
from lancenb.file import LanceFileReader, LanceFileWriter

lance = pytest.importorskip("lance")
from lance.file import LanceFileReader as PyReader  # noqa: E402
from lance.file import LanceFileWriter as PyWriter  # noqa: E402

N = 2400


def vectors(rng, n, dims, item="bool", nulls=None):
    """``n`` rows of ``dims`` (outermost first) fixed-size lists; ``nulls[0]`` is the
    items' null fraction, ``nulls[k]`` that of the lists at depth ``len(dims) - k``
    (the last entry: the rows)."""
    nulls = nulls or (0.0,) * (len(dims) + 1)
    total = n * int(np.prod(dims))
    if item == "bool":
        vals = pa.array(rng.random(total) < 0.5)
    elif np.issubdtype(np.dtype(item), np.floating):
        vals = pa.array(rng.standard_normal(total).astype(item))
    else:
        vals = pa.array(rng.integers(-1000, 1000, total).astype(item))
    if nulls[0]:
        vals = pa.array(vals.to_numpy(zero_copy_only=False), mask=rng.random(total) < nulls[0])
    arr = vals
    for k, d in enumerate(reversed(dims)):
        m = len(arr) // d
        p = nulls[k + 1]
        arr = pa.FixedSizeListArray.from_arrays(
            arr, d, mask=pa.array(rng.random(m) < p) if p else None)
    return arr


# name -> (dims, item, nulls, layout)
COLUMNS = {
    "b1": ((1,), "bool", (0, 0), "mini_block"),
    "b2n": ((2,), "bool", (0.2, 0.1), "mini_block"),
    "b3": ((3,), "bool", (0.0, 0.1), "mini_block"),
    "b8n": ((8,), "bool", (0.1, 0.1), "mini_block"),
    "b17n": ((17,), "bool", (0.1, 0.0), "mini_block"),
    "b3x5": ((3, 5), "bool", (0.1, 0.1, 0.1), "mini_block"),
    "b2k": ((2048,), "bool", (0.0, 0.0), "mini_block"),  # 256 B: still mini-block
    "i2x2": ((2, 2), np.int32, (0, 0, 0), "mini_block"),
    "i2x2n": ((2, 2), np.int32, (0.1, 0.1, 0.1), "mini_block"),
    "h3x8n": ((3, 8), np.int16, (0.0, 0.2, 0.0), "mini_block"),
    "d2x3x2": ((2, 3, 2), np.int8, (0.1, 0.1, 0.1, 0.1), "mini_block"),
    "b2x2x3": ((2, 2, 3), "bool", (0.1, 0.0, 0.1, 0.1), "mini_block"),
    "f4x64": ((4, 64), np.float32, (0, 0, 0), "full_zip"),
    "f4x64n": ((4, 64), np.float32, (0.05, 0.1, 0.1), "full_zip"),
    "f2x3x17n": ((2, 3, 17), np.float64, (0.1, 0.1, 0.1, 0.1), "full_zip"),
}


def make_table(n=N, seed=7, names=None):
    rng = np.random.default_rng(seed)
    return pa.table({name: vectors(rng, n, dims, item, nulls)
                     for name, (dims, item, nulls, _) in COLUMNS.items()
                     if names is None or name in names})


@pytest.fixture(scope="module")
def table():
    return make_table()


@pytest.fixture(scope="module", params=["2.1", "2.2"])
def version(request):
    return request.param


def _write(writer, path, t, version, cache=None, batch=600):
    kw = {} if cache is None else {"data_cache_bytes": cache}
    with writer(str(path), version=version, **kw) as w:
        for i in range(0, t.num_rows, batch):
            w.write_batch(t.slice(i, batch))
    return str(path)


@pytest.fixture(scope="module")
def files(table, version, tmp_path_factory):
    """``(lancenb's file, pylance's file)``, several pages per column."""
    d = tmp_path_factory.mktemp(f"fsl{version}")
    return (_write(LanceFileWriter, d / "ours.lance", table, version, cache=256 * 1024),
            _write(PyWriter, d / "theirs.lance", table, version, cache=256 * 1024))


def test_pylance_reads_ours(files, table):
    assert PyReader(files[0]).read_all().to_table().equals(table)


def test_we_read_pylance(files, table):
    assert LanceFileReader(files[1]).read_all().to_table().equals(table)


def test_multi_page(files):
    md = LanceFileReader(files[0]).metadata()
    assert max(len(c.pages) for c in md.columns) > 1


def _bits(item):
    return 1 if item == "bool" else np.dtype(item).itemsize * 8


def _shape(dims, item, nulls):
    # has_validity of layer k: its children (the items, for the innermost) have nulls
    hv = tuple(bool(nulls[len(dims) - 1 - k]) for k in range(len(dims)))
    return fsl.Shape(tuple(dims), hv, _bits(item))


def test_layouts(files):
    """Every page of both files carries the nested FixedSizeList description (no
    silent fallback), in the structural layout pylance picks."""
    for path in files:
        md = LanceFileReader(path).metadata()
        for name, col in zip(COLUMNS, md.columns):
            dims, item, nulls, kind = COLUMNS[name]
            want = _shape(dims, item, nulls)
            for i, page in enumerate(col.pages):
                assert page.layout.WhichOneof("layout") == kind + "_layout", (path, name)
                enc = getattr(page.layout, kind + "_layout").value_compression
                assert pb.describe(enc).count("fixed_size_list") == len(dims)
                got = fsl.parse(enc, int(np.prod(dims)) * _bits(item), name)
                if i == 0:
                    assert got == want, (path, name)
                else:  # a small page may happen to have no nulls at some level
                    assert got.dims == want.dims and got.item_bits == want.item_bits
                    assert all(w or not g for g, w in zip(got.has_validity, want.has_validity))


def test_same_layout_as_pylance(files):
    ours, theirs = (LanceFileReader(p).metadata() for p in files)
    for name, a, b in zip(COLUMNS, ours.columns, theirs.columns):
        la, lb = a.pages[0].layout, b.pages[0].layout
        kind = la.WhichOneof("layout")
        assert kind == lb.WhichOneof("layout"), name
        assert getattr(la, kind).value_compression == getattr(lb, kind).value_compression, name


@pytest.mark.parametrize("which", [0, 1], ids=["ours", "theirs"])
def test_ranges_and_takes(files, table, which):
    r = LanceFileReader(files[which])
    for start, n in [(0, 1), (599, 3), (1000, 700), (N - 5, 5), (0, N)]:
        assert r.read_range(start, n).to_table().equals(table.slice(start, n)), (start, n)
    rng = np.random.default_rng(3)
    for idx in ([0], [N - 1, 0, 1200], rng.integers(0, N, 300).tolist(),
                sorted(rng.integers(0, N, 50).tolist()) * 2):
        assert r.take_rows(idx).to_table().equals(table.take(idx)), idx


def test_pylance_takes_ours(files, table):
    idx = [0, 5, 599, 600, 601, 1777, N - 1]
    assert PyReader(files[0]).take_rows(idx).to_table().equals(table.take(idx))
    assert PyReader(files[0]).read_range(590, 40).to_table().equals(table.slice(590, 40))


def test_single_page_byte_identical(tmp_path, version):
    """One batch, one page per column: the same bytes as pylance (page buffers,
    descriptions, metadata)."""
    t = make_table(700, seed=11)
    _write(LanceFileWriter, tmp_path / "a.lance", t, version, batch=700)
    _write(PyWriter, tmp_path / "b.lance", t, version, batch=700)
    assert (tmp_path / "a.lance").read_bytes() == (tmp_path / "b.lance").read_bytes()


def test_nested_in_struct_and_list(tmp_path, version):
    rng = np.random.default_rng(5)
    n = 1500
    offs = np.concatenate([[0], np.cumsum(rng.integers(0, 4, n))]).astype(np.int32)
    t = pa.table({
        "s": pa.StructArray.from_arrays(
            [vectors(rng, n, (3,), "bool", (0.1, 0.1)), vectors(rng, n, (2, 2), np.int32,
                                                                (0.1, 0.1, 0.1))],
            names=["b", "n"], mask=pa.array(rng.random(n) < 0.1)),
        "l": pa.ListArray.from_arrays(pa.array(offs), vectors(
            rng, int(offs[-1]), (2, 3), np.int16, (0.1, 0.1, 0.1)),
            mask=pa.array(rng.random(n) < 0.1)),
        "lb": pa.ListArray.from_arrays(pa.array(offs), vectors(
            rng, int(offs[-1]), (5,), "bool", (0.1, 0.1))),
        "lw": pa.ListArray.from_arrays(pa.array(offs), vectors(
            rng, int(offs[-1]), (2, 40), np.float32, (0.1, 0.1, 0.1))),
    })
    ours = _write(LanceFileWriter, tmp_path / "a.lance", t, version, cache=64 * 1024, batch=500)
    theirs = _write(PyWriter, tmp_path / "b.lance", t, version, cache=64 * 1024, batch=500)
    assert PyReader(ours).read_all().to_table().equals(t)
    for path in (ours, theirs):
        r = LanceFileReader(path)
        assert r.read_all().to_table().equals(t)
        idx = [0, 1, 499, 500, 1234, n - 1]
        assert r.take_rows(idx).to_table().equals(t.take(idx))
        assert r.read_range(480, 100).to_table().equals(t.slice(480, 100))


def test_constant_and_all_null(tmp_path, version):
    n = 1000
    t = pa.table({
        "cb": pa.FixedSizeListArray.from_arrays(pa.array(np.tile([True, False, True], n)), 3),
        "cn": pa.FixedSizeListArray.from_arrays(pa.FixedSizeListArray.from_arrays(
            pa.array(np.tile(np.arange(4, dtype=np.int32), n)), 2), 2),
        "zb": pa.nulls(n, pa.list_(pa.bool_(), 3)),
        "zn": pa.nulls(n, pa.list_(pa.list_(pa.int32(), 2), 2)),
    })
    ours = _write(LanceFileWriter, tmp_path / "a.lance", t, version, batch=n)
    theirs = _write(PyWriter, tmp_path / "b.lance", t, version, batch=n)
    assert PyReader(ours).read_all().to_table().equals(t)
    for path in (ours, theirs):
        assert LanceFileReader(path).read_all().to_table().equals(t)
        assert LanceFileReader(path).take_rows([3, 999]).to_table().equals(t.take([3, 999]))


def test_dataset_roundtrip(tmp_path, version):
    t = make_table(900, seed=2)
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(t, uri)  # (the default version)
    assert lance.dataset(uri).to_table().equals(t)
    uri = str(tmp_path / "dsv")
    lancenb.write_dataset(t, uri, data_storage_version=version)
    assert lance.dataset(uri).to_table().equals(t)
    assert lancenb.dataset(uri).to_table().equals(t)
    lance.write_dataset(t, str(tmp_path / "py"), data_storage_version=version)
    assert lancenb.dataset(str(tmp_path / "py")).to_table().equals(t)
    assert lancenb.dataset(uri).take([0, 899, 450]).equals(t.take([0, 899, 450]))


# -- fixed_size_list<struct> (pylance 2.2) -------------------------------------------

def _fsl_struct(rng, n, d, with_list=False):
    m = n * d
    kids = [pa.array(rng.integers(0, 100, m).astype(np.int32), mask=rng.random(m) < 0.1),
            pa.array(rng.standard_normal(m), mask=rng.random(m) < 0.1)]
    names = ["a", "b"]
    if with_list:
        kids.append(pa.array([None if i % 7 == 0 else [i] * (i % 3) for i in range(m)],
                             pa.list_(pa.int64())))
        names.append("l")
    s = pa.StructArray.from_arrays(kids, names=names, mask=pa.array(rng.random(m) < 0.1))
    return pa.FixedSizeListArray.from_arrays(s, d, mask=pa.array(rng.random(n) < 0.1))


def test_read_pylance_fsl_of_struct(tmp_path):
    rng = np.random.default_rng(9)
    n = 3000
    # separate batches: pylance panics on slices of these arrays
    batches = [pa.table({"k": pa.array(np.arange(i, i + 600, dtype=np.int64)),
                         "s": _fsl_struct(rng, 600, 2),
                         "v": vectors(rng, 600, (3,), "bool", (0.1, 0.1))})
               for i in range(0, n, 600)]
    t = pa.concat_tables(batches).combine_chunks()
    path = str(tmp_path / "s.lance")
    with PyWriter(path, version="2.2", data_cache_bytes=8 * 1024) as w:
        for b in batches:
            w.write_batch(b)
    assert len(LanceFileReader(path).metadata().columns[1].pages) > 1
    # pylance reads the column only on its own (its pages count items)
    assert PyReader(path, columns=["s"]).read_all().to_table().column(0).equals(t.column("s"))
    r = LanceFileReader(path)
    assert r.read_all().to_table().equals(t)
    assert r.read_range(690, 30).to_table().equals(t.slice(690, 30))
    idx = [0, 2999, 700, 700, 1401]
    assert r.take_rows(idx).to_table().equals(t.take(idx))
    assert LanceFileReader(path, columns=["s"]).take_rows([5]).to_table().equals(
        t.select(["s"]).take([5]))


def test_read_pylance_fsl_of_struct_with_lists(tmp_path):
    rng = np.random.default_rng(4)
    t = pa.table({"s": _fsl_struct(rng, 500, 3, with_list=True)})
    path = _write(PyWriter, tmp_path / "s.lance", t, "2.2", batch=500)
    r = LanceFileReader(path)
    assert r.read_all().to_table().equals(t)
    assert r.take_rows([499, 0, 17]).to_table().equals(t.take([499, 0, 17]))
    assert r.read_range(100, 50).to_table().equals(t.slice(100, 50))


def test_fsl_of_struct_inside_struct_is_not_supported(tmp_path):
    rng = np.random.default_rng(1)
    t = pa.table({"o": pa.StructArray.from_arrays([_fsl_struct(rng, 10, 2)], names=["f"])})
    path = _write(PyWriter, tmp_path / "o.lance", t, "2.2")
    with pytest.raises(NotSupportedError, match="'o'"):
        LanceFileReader(path).read_all()


@pytest.mark.parametrize("with_list", [False, True], ids=["plain", "list-child"])
def test_write_fsl_of_struct_2_2(tmp_path, with_list):
    """lancenb writes fixed_size_list<struct> in 2.2 as pylance does (byte for byte);
    pylance reads such a column on its own."""
    rng = np.random.default_rng(6)
    t = pa.table({"s": _fsl_struct(rng, 800, 3, with_list=with_list)})
    ours = _write(LanceFileWriter, tmp_path / "a.lance", t, "2.2", batch=800)
    _write(PyWriter, tmp_path / "b.lance", t, "2.2", batch=800)
    assert (tmp_path / "a.lance").read_bytes() == (tmp_path / "b.lance").read_bytes()
    assert PyReader(ours).read_all().to_table().equals(t)
    multi = _write(LanceFileWriter, tmp_path / "m.lance", t, "2.2", cache=4 * 1024,
                   batch=150)
    assert len(LanceFileReader(multi).metadata().columns[0].pages) > 1
    assert PyReader(multi).read_all().to_table().equals(t)
    r = LanceFileReader(multi)
    assert r.read_all().to_table().equals(t)
    assert r.take_rows([799, 3, 150, 150]).to_table().equals(t.take([799, 3, 150, 150]))
    assert r.read_range(140, 300).to_table().equals(t.slice(140, 300))


def test_fsl_of_struct_dataset(tmp_path):
    rng = np.random.default_rng(8)
    t = pa.table({"s": _fsl_struct(rng, 500, 2)})
    for lib, name in [(lancenb, "ours"), (lance, "theirs")]:
        uri = str(tmp_path / name)
        lib.write_dataset(t, uri, data_storage_version="2.2")
        assert lance.dataset(uri).to_table().equals(t)
        assert lancenb.dataset(uri).to_table().equals(t)
    both = t.append_column("k", pa.array(np.arange(500)))
    uri = str(tmp_path / "both")
    lancenb.write_dataset(both, uri, data_storage_version="2.2")
    # (pylance 14 cannot read it next to other columns: its pages count items)
    assert lancenb.dataset(uri).to_table().equals(both)
    assert lancenb.dataset(uri).take([499, 0, 7]).equals(both.take([499, 0, 7]))


@pytest.mark.parametrize("dt", [
    pa.list_(pa.string(), 2),
    pa.list_(pa.list_(pa.int32()), 2),
    pa.list_(pa.list_(pa.string(), 2), 2),
    pa.struct([("f", pa.list_(pa.struct([("a", pa.int32())]), 2))]),
], ids=["string", "list", "fsl-string", "fsl-struct-in-struct"])
def test_unwritable_fixed_size_lists(tmp_path, dt, version):
    t = pa.table({"col_x": pa.nulls(3, dt)})
    with pytest.raises(NotSupportedError, match="col_x"):
        with LanceFileWriter(str(tmp_path / "x.lance"), version=version) as w:
            w.write_batch(t)


def test_fsl_of_struct_needs_2_2(tmp_path):
    t = pa.table({"col_x": pa.nulls(3, pa.list_(pa.struct([("a", pa.int32())]), 2))})
    with pytest.raises(NotSupportedError, match="col_x.*2.2"):
        with LanceFileWriter(str(tmp_path / "x.lance"), version="2.1") as w:
            w.write_batch(t)


def test_too_wide_boolean_vectors(tmp_path):
    """pylance refuses boolean vectors whose 16 rows exceed a mini-block chunk."""
    t = pa.table({"w": pa.FixedSizeListArray.from_arrays(pa.array(np.ones(5001 * 4, bool)),
                                                         5001)})
    with pytest.raises(NotSupportedError):
        with LanceFileWriter(str(tmp_path / "w.lance")) as w:
            w.write_batch(t)


# -- damaged files -------------------------------------------------------------------

def test_damaged_pages(tmp_path):
    t = make_table(500, seed=4, names=["b8n", "b3x5", "i2x2n", "f4x64n"])
    path = tmp_path / "g.lance"
    _write(LanceFileWriter, path, t, "2.1", batch=500)
    md = LanceFileReader(str(path)).metadata()
    buffers = [b for col in md.columns for page in col.pages for b in page.buffers]
    assert flip_page_bytes(tmp_path, path, buffers, 4, [0, 250, 499], seed=2) > 0


def test_corrupt_descriptions():
    enc = fsl.description(fsl.Shape((2, 3), (True, True), 32))
    assert fsl.parse(enc, 192, "x") == fsl.Shape((2, 3), (True, True), 32)
    with pytest.raises(CorruptFileError):
        fsl.parse(enc, 96, "x")  # the column's type says other dims
    bad = fsl.description(fsl.Shape((2, 3), (False, False), 12))
    with pytest.raises(CorruptFileError):
        fsl.parse(bad, 72, "x")  # items neither bits nor whole bytes
    zero = fsl.description(fsl.Shape((0, 3), (False, False), 8))
    with pytest.raises(CorruptFileError):
        fsl.parse(zero, 0, "x")
    dec = fsl.FslValues(enc, 192, "x")
    data = np.zeros(64, np.uint8)
    starts = np.array([[0, 8, 16]], np.int64)
    sizes = np.array([[1, 2, 48]], np.int64)  # 2 rows: validity 4 bits, 12 bits, 48 B
    dec.decode(data, starts, sizes, np.array([2]), "x")
    with pytest.raises(CorruptFileError):
        dec.decode(data, starts, np.array([[1, 2, 40]], np.int64), np.array([2]), "x")
    with pytest.raises(CorruptFileError):  # buffers past the page
        dec.decode(data, np.array([[0, 8, 40]], np.int64), sizes, np.array([2]), "x")


def test_boolean_vectors_forced_full_zip(tmp_path, version):
    """``structural-encoding=fullzip`` on boolean vectors of whole-byte rows without
    item nulls: the rows' bits zipped (pylance writes the same and panics on the
    others, which lancenb refuses)."""
    rng = np.random.default_rng(12)
    meta = {"lance-encoding:structural-encoding": "fullzip"}
    good = vectors(rng, 300, (16,), "bool", (0.0, 0.1))
    t = pa.Table.from_arrays([good], schema=pa.schema([pa.field("x", good.type,
                                                                metadata=meta)]))
    ours = _write(LanceFileWriter, tmp_path / "a.lance", t, version, batch=300)
    theirs = _write(PyWriter, tmp_path / "b.lance", t, version, batch=300)
    assert (tmp_path / "a.lance").read_bytes() == (tmp_path / "b.lance").read_bytes()
    assert LanceFileReader(ours).metadata().columns[0].pages[0].description.startswith(
        "full_zip:fixed_size_list(flat(1))")
    for path in (ours, theirs):
        assert PyReader(path).read_all().to_table().equals(t)
        r = LanceFileReader(path)
        assert r.read_all().to_table().equals(t)
        assert r.take_rows([299, 0, 77]).to_table().equals(t.take([299, 0, 77]))
    for bad in (vectors(rng, 10, (16,), "bool", (0.1, 0.0)), vectors(rng, 10, (3,), "bool")):
        tb = pa.Table.from_arrays([bad], schema=pa.schema([pa.field("x", bad.type,
                                                                    metadata=meta)]))
        with pytest.raises(NotSupportedError):
            _write(LanceFileWriter, tmp_path / "c.lance", tb, version)


def test_fsl_of_struct_inside_list_is_not_supported(tmp_path):
    """pylance 2.2 writes (but cannot read) these; lancenb names the column."""
    s = pa.StructArray.from_arrays([pa.array(np.arange(4, dtype=np.int32))], names=["a"])
    t = pa.table({"k": pa.array([1, 2]), "q": pa.ListArray.from_arrays(
        pa.array([0, 1, 2], pa.int32()), pa.FixedSizeListArray.from_arrays(s, 2))})
    path = _write(PyWriter, tmp_path / "q.lance", t, "2.2")
    r = LanceFileReader(path)
    assert LanceFileReader(path, columns=["k"]).read_all().to_table().equals(t.select(["k"]))
    with pytest.raises(NotSupportedError, match="'q'"):
        r.read_all()


# -- property: any shape, any nulls --------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def _shapes(draw):
    depth = draw(st.integers(1, 3))
    dims = tuple(draw(st.lists(st.integers(1, 9), min_size=depth, max_size=depth)))
    item = draw(st.sampled_from(["bool", np.int8, np.int32, np.float64]))
    nulls = tuple(draw(st.sampled_from([0.0, 0.3, 1.0])) for _ in range(depth + 1))
    return dims, item, nulls, draw(st.integers(1, 300)), draw(st.integers(0, 2**16))


@settings(max_examples=30)
@given(_shapes(), st.sampled_from(["2.1", "2.2"]))
def test_property_roundtrip_both_ways(tmp_path_factory, case, version):
    dims, item, nulls, n, seed = case
    t = pa.table({"x": vectors(np.random.default_rng(seed), n, dims, item, nulls)})
    d = tmp_path_factory.mktemp("p")
    ours = _write(LanceFileWriter, d / "a.lance", t, version, batch=max(1, n // 2 + 1))
    assert PyReader(ours).read_all().to_table().equals(t)
    assert LanceFileReader(ours).read_all().to_table().equals(t)
    theirs = _write(PyWriter, d / "b.lance", t, version, batch=max(1, n // 2 + 1))
    r = LanceFileReader(theirs)
    assert r.read_all().to_table().equals(t)
    idx = sorted({0, n - 1, n // 3})
    assert r.take_rows(idx).to_table().equals(t.take(idx))


def test_pylance_pages_of_all_null_items(tmp_path, version):
    """A page whose items are all null: pylance writes it full-zip with ``Constant{}``
    items (outer layers only, when whole inner lists are null too); lancenb reads it."""
    i32 = pa.int32()
    t = pa.table({
        "one": pa.FixedSizeListArray.from_arrays(pa.array([None] * 6, i32), 2,
                                                 mask=pa.array([False, True, False])),
        "deep": pa.FixedSizeListArray.from_arrays(pa.FixedSizeListArray.from_arrays(
            pa.array([None] * 12, i32), 2), 2),
        "inner": pa.FixedSizeListArray.from_arrays(pa.FixedSizeListArray.from_arrays(
            pa.array([None] * 12, i32), 2, mask=pa.array([True] * 6)), 2),
        "bools": pa.FixedSizeListArray.from_arrays(pa.array([None] * 9, pa.bool_()), 3),
    })
    path = _write(PyWriter, tmp_path / "n.lance", t, version)
    r = LanceFileReader(path)
    assert all("constant" in c.pages[0].description for c in r.metadata().columns)
    assert r.read_all().to_table().equals(t)
    assert r.take_rows([2, 0]).to_table().equals(t.take([2, 0]))
    ours = _write(LanceFileWriter, tmp_path / "o.lance", t, version)
    assert PyReader(ours).read_all().to_table().equals(t)
    assert (tmp_path / "o.lance").read_bytes() == (tmp_path / "n.lance").read_bytes()
