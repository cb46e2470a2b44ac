"""Legacy (0.1) data files written by pylance, read with ``LegacyFileReader`` and
compared with pylance's own reading of the same fragments (the oracle: 0.1 stores no
validity, so nulls come back as pylance returns them)."""

from __future__ import annotations

import math
import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from _tables import assert_tables_equal, flat_columns

from lancenb.errors import CorruptFileError, InvalidInputError, LanceError, NotSupportedError
from lancenb.file.legacy import LegacyFileReader, PageStats, is_legacy_footer
from lancenb.file.statistics import ColumnStats
from lancenb.file.version import FileVersion

lance = pytest.importorskip("lance")

GROUP = 64


def _nested_columns(n: int, seed: int = 1) -> dict[str, pa.Array]:
    rng = np.random.default_rng(seed)

    def lists(make, null_p=0.1, empty_p=0.15, typ=None):
        out = []
        for _ in range(n):
            r = rng.random()
            if r < null_p:
                out.append(None)
            elif r < null_p + empty_p:
                out.append([])
            else:
                out.append([make() for _ in range(int(rng.integers(1, 5)))])
        return pa.array(out, typ)

    words = ["", "a", "bc", "déf", "ghij"]
    struct_t = pa.struct([("x", pa.int32()), ("s", pa.string()),
                          ("inner", pa.list_(pa.int16()))])
    return {
        "l_i64": lists(lambda: int(rng.integers(-99, 99)), typ=pa.list_(pa.int64())),
        "l_str": lists(lambda: words[int(rng.integers(0, 5))], typ=pa.list_(pa.string())),
        "ll_f32": lists(lambda: float(rng.standard_normal()), typ=pa.large_list(pa.float32())),
        "l_bool": lists(lambda: bool(rng.random() < 0.5), typ=pa.list_(pa.bool_())),
        "l_l": lists(lambda: [int(v) for v in rng.integers(0, 9, int(rng.integers(0, 3)))],
                     typ=pa.list_(pa.list_(pa.int8()))),
        "l_struct": lists(lambda: {"a": int(rng.integers(0, 5)),
                                   "b": words[int(rng.integers(0, 5))]},
                          typ=pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())]))),
        "l_fsl": lists(lambda: [float(rng.random()), float(rng.random())],
                       typ=pa.list_(pa.list_(pa.float64(), 2))),
        "st": pa.array([None if rng.random() < 0.1 else
                        {"x": None if rng.random() < 0.2 else int(rng.integers(0, 1000)),
                         "s": words[int(rng.integers(0, 5))],
                         "inner": [int(v) for v in rng.integers(0, 9, int(rng.integers(0, 4)))]}
                        for _ in range(n)], struct_t),
        "st2": pa.array([{"a": {"b": k % 7, "c": words[k % 5]},
                          "d": [words[(k + j) % 5] * 2 for j in range(k % 3)]}
                         for k in range(n)],
                        pa.struct([("a", pa.struct([("b", pa.int8()), ("c", pa.string())])),
                                   ("d", pa.large_list(pa.large_string()))])),
        "fsl_f32": pa.FixedSizeListArray.from_arrays(
            pa.array(rng.standard_normal(n * 4).astype(np.float32)), 4),
        "fsl_bool": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 3) < 0.5), 3),
        "fsl_fsl": pa.FixedSizeListArray.from_arrays(pa.FixedSizeListArray.from_arrays(
            pa.array(rng.integers(0, 99, n * 6).astype(np.int16)), 2), 3),
        "fsl_fsb": pa.FixedSizeListArray.from_arrays(
            pa.array([bytes(rng.integers(0, 256, 2, dtype=np.uint8)) for _ in range(n * 2)],
                     pa.binary(2)), 2),
        "dec256": pa.array([None if k % 7 == 0 else k * 3 for k in range(n)],
                           pa.int64()).cast(pa.decimal256(40, 2)),
        "d_str": pa.array([None if rng.random() < 0.1 else words[int(rng.integers(1, 5))]
                           for _ in range(n)]).dictionary_encode(),
        "d_i64": pa.array(rng.integers(0, 4, n) * 1000).dictionary_encode(),
        "d_u8_lstr": pa.DictionaryArray.from_arrays(
            pa.array(rng.integers(0, 3, n).astype(np.uint8)),
            pa.array(["x", "yy", "zzz"], pa.large_string())),
        "d_i16_bin": pa.DictionaryArray.from_arrays(
            pa.array(rng.integers(0, 2, n).astype(np.int16)), pa.array([b"\x00", b"ab"])),
    }


def _write(path, table, group=GROUP, per_file=None, schema=None):
    kw = {"max_rows_per_file": per_file} if per_file else {}
    return lance.write_dataset(table, str(path), schema=schema, data_storage_version="legacy",
                               max_rows_per_group=group, **kw)


def _fragment_files(ds_path):
    """``[(LegacyFileReader, pylance fragment table)]`` for every fragment."""
    ds = lance.dataset(str(ds_path))
    out = []
    for frag in ds.get_fragments():
        (df,) = frag.metadata.files
        out.append((LegacyFileReader(str(ds_path / "data" / df.path)), frag.to_table(), df))
    return out


@pytest.fixture(scope="module")
def flat_ds(tmp_path_factory):
    path = tmp_path_factory.mktemp("legacy") / "flat"
    table = pa.table(flat_columns(300, seed=3, nulls=True))
    _write(path, table, per_file=200)
    return path, table


@pytest.fixture(scope="module")
def nested_ds(tmp_path_factory):
    path = tmp_path_factory.mktemp("legacy") / "nested"
    table = pa.table(_nested_columns(230))
    _write(path, table, group=50, per_file=150)
    return path, table


@pytest.fixture(scope="module")
def big_string_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("legacy") / "strings"
    rng = np.random.default_rng(5)
    n = 5000
    table = pa.table({"id": pa.array(np.arange(n)),
                      "s": pa.array([("v%d" % k) * int(rng.integers(0, 4)) for k in range(n)]),
                      "l": pa.array([list(range(k % 5)) for k in range(n)], pa.list_(pa.int32()))})
    _write(path, table, group=700)
    ((reader, want, _),) = _fragment_files(path)
    return reader, want


# -- whole files -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["flat_ds", "nested_ds"])
def test_read_all_matches_pylance(name, request):
    path, _ = request.getfixturevalue(name)
    files = _fragment_files(path)
    assert len(files) == 2
    for reader, want, _ in files:
        assert reader.version is FileVersion.LEGACY
        assert reader.num_rows() == want.num_rows
        got = reader.read_all().to_table()
        assert_tables_equal(got, want)
        cols = [reader.read_column(i) for i in range(len(reader.fields))]
        assert_tables_equal(pa.Table.from_arrays(cols, schema=got.schema), got)


def test_no_nulls_and_non_nullable_fields(tmp_path):
    schema = pa.schema([pa.field("s", pa.string(), nullable=False),
                        pa.field("b", pa.binary(), nullable=False),
                        pa.field("i", pa.int32(), nullable=False),
                        pa.field("l", pa.list_(pa.int32()), nullable=False)])
    table = pa.table({"s": ["", "a", "", "bcd"] * 30, "b": [b"", b"\x00"] * 60,
                      "i": list(range(120)), "l": [[], [1], [2, 3]] * 40}, schema=schema)
    _write(tmp_path / "d", table, group=50)
    ((reader, want, _),) = _fragment_files(tmp_path / "d")
    got = reader.read_all().to_table()
    assert_tables_equal(got, want)
    assert got["s"].null_count == 0 and got["s"].to_pylist()[:4] == ["", "a", "", "bcd"]
    flat = pa.table(flat_columns(130, seed=9, nulls=False))
    _write(tmp_path / "f", flat, group=50)
    ((reader, want, _),) = _fragment_files(tmp_path / "f")
    assert_tables_equal(reader.read_all().to_table(), want)


def test_nulls_read_back_as_pylance_returns_them(flat_ds, nested_ds):
    reader, want, _ = _fragment_files(flat_ds[0])[0]
    got = reader.read_all().to_table()
    # primitives keep no validity; nullable strings turn empty values into nulls
    assert got["i32"].null_count == 0 and got["all_null"].null_count == 0
    assert got["str"].null_count == want["str"].null_count > 0
    assert got["null_type"].null_count == got.num_rows
    reader, _, _ = _fragment_files(nested_ds[0])[0]
    got = reader.read_all().to_table()
    assert got["st"].null_count == 0 and got["l_i64"].null_count == 0
    assert [] in got["l_i64"].to_pylist()


def test_schema_columns_and_field_positions(flat_ds, nested_ds):
    for path, _ in (flat_ds, nested_ds):
        for reader, want, df in _fragment_files(path):
            assert reader.schema_full.equals(want.schema, check_metadata=False)
            ids = [lf.id for top in reader.fields for lf in top.walk()]
            assert ids == list(df.fields)
            for k, top in zip(reader._backend.columns_of, reader.fields):
                assert df.fields[k] == top.id
    reader = _fragment_files(nested_ds[0])[0][0]
    assert reader._backend.columns_of[:3] == [0, 2, 4]  # l_i64, l_str, ll_f32: one child each
    path = nested_ds[0] / "data" / _fragment_files(nested_ds[0])[0][2].path
    r = LegacyFileReader(str(path), columns=["st", "d_str"])
    assert r.schema.names == ["st", "d_str"]
    full = reader.read_all().to_table()
    assert_tables_equal(r.read_all().to_table(), full.select(["st", "d_str"]))
    with pytest.raises(InvalidInputError):
        LegacyFileReader(str(path), columns=["nope"])


def test_add_columns_file_holds_only_new_field_ids(tmp_path):
    table = pa.table({"a": pa.array(["x", "y", "x"] * 20).dictionary_encode(),
                      "n": list(range(60))})
    _write(tmp_path / "d", table, group=16)
    ds = lance.dataset(str(tmp_path / "d"))
    ds.add_columns({"z": "n * 2"})
    ds = lance.dataset(str(tmp_path / "d"))
    (frag,) = ds.get_fragments()
    df_new = frag.metadata.files[1]
    r = LegacyFileReader(str(tmp_path / "d" / "data" / df_new.path))
    assert list(df_new.fields) == [2] and r._backend.columns_of == [0]
    assert r.read_all().to_table().column("z").to_pylist() == [2 * k for k in range(60)]
    assert r.take_rows([59, 0]).to_table().column("z").to_pylist() == [118, 0]


# -- ranges and takes ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["flat_ds", "nested_ds"])
def test_take_and_range_equal_slices(name, request):
    path, _ = request.getfixturevalue(name)
    rng = np.random.default_rng(7)
    for reader, _, _ in _fragment_files(path):
        full = reader.read_all().to_table()
        n = full.num_rows
        g = int(np.diff(reader._backend._batch_offsets)[0])
        for start, count in [(0, n), (0, 0), (0, 1), (g - 1, 2), (g, g), (g - 3, 2 * g + 5),
                             (n - 1, 1), (n - 7, 7)]:
            if start < 0 or start + count > n:
                continue
            got = reader.read_range(start, count).to_table()
            assert_tables_equal(got, full.slice(start, count))
        takes = [[], [0], [n - 1, 0], [g - 1, g, g + 1], [5, 5, 5, 2], list(range(n))[::-1],
                 rng.integers(0, n, 200).tolist(), np.sort(rng.integers(0, n, 50)).tolist()]
        for idx in takes:
            idx = [i % n for i in idx]
            got = reader.take_rows(idx).to_table()
            assert_tables_equal(got, full.take(pa.array(idx, pa.int64())))
        rows = np.sort(rng.integers(0, n, 40))
        cols = [reader.read_column(i, rows=rows) for i in range(len(reader.fields))]
        assert_tables_equal(pa.Table.from_arrays(cols, schema=full.schema),
                            full.take(pa.array(rows)))


def test_out_of_range_rows_are_rejected(flat_ds):
    reader = _fragment_files(flat_ds[0])[0][0]
    for bad in ([-1], [reader.num_rows()]):
        with pytest.raises(InvalidInputError):
            reader.take_rows(bad)
    with pytest.raises(InvalidInputError):
        reader.read_range(reader.num_rows() - 1, 2)


def test_large_reads_are_chunked(big_string_file, monkeypatch):
    import lancenb.file.formats.v0_1 as legacy

    reader, want = big_string_file
    monkeypatch.setattr(legacy, "CHUNK_ROWS", 333)
    got = reader.read_all().to_table()
    assert got.column("s").num_chunks > 1
    assert_tables_equal(got, want)
    idx = np.random.default_rng(2).integers(0, want.num_rows, 2000)
    assert_tables_equal(reader.take_rows(idx).to_table(), want.take(pa.array(idx)))


def test_offset_overflow_splits_chunks(big_string_file, monkeypatch):
    import lancenb.file.formats.v0_1 as legacy

    reader, want = big_string_file
    monkeypatch.setattr(legacy, "_I32_MAX", 2000)  # stands in for 2 GiB of string bytes
    got = reader.read_all().to_table()
    assert got.column("s").num_chunks > 5 and got.column("l").num_chunks > 2
    assert_tables_equal(got, want)
    monkeypatch.setattr(legacy, "_I32_MAX", 3)
    with pytest.raises(CorruptFileError, match="more than 2 GiB"):
        reader.take_rows([4999])


def test_take_reads_only_the_pages_it_needs(big_string_file):
    reader, want = big_string_file
    before = reader._io.stats.bytes_read
    got = reader.take_rows([4321]).to_table()
    assert_tables_equal(got, want.slice(4321, 1))
    assert reader._io.stats.bytes_read - before < 1000


def test_metadata(flat_ds):
    reader, want, _ = _fragment_files(flat_ds[0])[0]
    md = reader.metadata()
    assert (md.major_version, md.minor_version) == (0, 2)
    assert md.num_rows == want.num_rows == 256
    ids = [lf.id for top in reader.fields for lf in top.walk()]
    assert len(md.columns) == len(ids)
    nb = len(reader._backend._batch_offsets) - 1
    assert all(len(c.pages) == nb for c in md.columns)
    batch_rows = np.diff(reader._backend._batch_offsets).tolist()
    assert [p.num_rows for p in md.columns[0].pages] == batch_rows
    assert md.columns[0].pages[0].description == "plain"
    with pytest.raises(NotSupportedError):
        reader.read_global_buffer(0)


# -- statistics --------------------------------------------------------------------------
def _data_column(table, reader, fid):
    """The written (not read back) array of a field id, at any struct depth: the
    writer's child arrays as they are (a null parent does not count)."""

    def find(lf, arr):
        if lf.id == fid:
            return arr
        if pa.types.is_struct(lf.arrow.type):
            for k, c in enumerate(lf.children):
                hit = find(c, arr.field(k))
                if hit is not None:
                    return hit
        return None

    for top in reader.fields:
        hit = find(top, table.column(top.name).combine_chunks())
        if hit is not None:
            return hit
    raise AssertionError(fid)


def _check_raw(st, arr):
    assert st.null_count == arr.null_count
    t = arr.type
    valid = arr.drop_null()
    if pa.types.is_floating(t):
        vals = [v for v in valid.to_pylist() if not math.isnan(v)]
        if not vals:
            assert (st.min, st.max) == (-math.inf, math.inf)
        else:
            assert st.min == min(vals) and st.max == max(vals)
        return
    if len(valid) == 0:
        if pa.types.is_integer(t):
            bits = t.bit_width
            lo = -(1 << (bits - 1)) if pa.types.is_signed_integer(t) else 0
            assert st.min == lo
        return
    lo, hi = pc.min_max(valid)["min"].as_py(), pc.min_max(valid)["max"].as_py()
    if isinstance(lo, (str, bytes)):
        # empty bounds are stored as empty values, which read back as null; long ones
        # are truncated (min) and incremented (max)
        assert st.min is None if lo in ("", b"") else lo.startswith(st.min)
        size = len(hi.encode() if isinstance(hi, str) else hi)
        if size <= 64:  # longer bounds are cut at 64 bytes
            assert st.max == hi or (hi in ("", b"") and st.max is None)
        else:
            assert st.max is None or st.max > hi
    else:
        assert (st.min, st.max) == (lo, hi)


@pytest.mark.parametrize("name", ["flat_ds", "nested_ds"])
def test_page_statistics_hold_the_written_data(name, request):
    path, table = request.getfixturevalue(name)
    start = 0
    for reader, _, _ in _fragment_files(path):
        got = reader.page_statistics(raw=True, stats_factory=ColumnStats)
        assert got is not None
        offsets, stats = got
        assert offsets.tolist() == reader._backend._batch_offsets.tolist()
        part = table.slice(start, reader.num_rows())
        start += reader.num_rows()
        assert stats
        for fid, per_batch in stats.items():
            arr = _data_column(part, reader, fid)
            assert len(per_batch) == len(offsets) - 1
            for k, st in enumerate(per_batch):
                assert isinstance(st, ColumnStats)
                assert st.num_rows == offsets[k + 1] - offsets[k]
                _check_raw(st, arr.slice(offsets[k], st.num_rows))
    if name == "flat_ds":
        names = {reader._backend._by_id[fid].name for fid in stats}
        assert {"i32", "str", "bool_n", "f64", "dec", "date32"} <= names


@pytest.mark.parametrize("name", ["flat_ds", "nested_ds"])
def test_page_statistics_bound_the_data_as_read(name, request):
    path, _ = request.getfixturevalue(name)
    for reader, _, _ in _fragment_files(path):
        offsets, stats = reader.page_statistics()
        full = reader.read_all().to_table()
        for fid, per_batch in stats.items():
            col = _data_column(full, reader, fid)
            for k, st in enumerate(per_batch):
                assert isinstance(st, PageStats)
                arr = col.slice(offsets[k], st.num_rows)
                if st.null_count is not None:
                    assert st.null_count == arr.null_count
                vals = [v for v in arr.drop_null().to_pylist()
                        if not (isinstance(v, float) and math.isnan(v))]
                if st.min is not None:
                    assert all(v >= st.min for v in vals)
                if st.max is not None:
                    assert all(v <= st.max for v in vals)


def test_no_statistics_for_unsupported_types(tmp_path):
    table = pa.table({"l": pa.array([[1]] * 10, pa.list_(pa.int64()))})
    _write(tmp_path / "d", table, group=4)
    ((reader, _, _),) = _fragment_files(tmp_path / "d")
    assert reader.page_statistics() is None


# -- corrupt files ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("legacy") / "small"
    cols = flat_columns(40, seed=4)
    table = pa.table({k: cols[k] for k in ("i32", "str", "bool_n", "fsb16")}
                     | {k: v for k, v in _nested_columns(40).items()
                        if k in ("l_str", "st", "d_str", "fsl_f32")})
    _write(path, table, group=16)
    ((reader, want, df),) = _fragment_files(path)
    return (path / "data" / df.path).read_bytes(), want


def _read_everything(path):
    r = LegacyFileReader(str(path))
    r.read_all().to_table()
    r.take_rows([0, r.num_rows() - 1, 17]).to_table()
    r.read_range(3, 20).to_table()
    r.page_statistics()
    r.metadata()
    return r


def _layout(data: bytes):
    meta_pos = struct.unpack_from("<q", data, len(data) - 16)[0]
    from lancenb._proto import file_pb2

    (n,) = struct.unpack_from("<I", data, meta_pos)
    meta = file_pb2.Metadata()
    meta.ParseFromString(data[meta_pos + 4: meta_pos + 4 + n])
    return meta_pos, meta


def test_footer_detection(small_file):
    data, _ = small_file
    assert is_legacy_footer(data[-16:])
    assert not is_legacy_footer(data[-16:-8] + struct.pack("<hh", 2, 1) + b"LANC")
    assert not is_legacy_footer(b"x" * 16)


def test_truncated_files_raise(tmp_path, small_file):
    data, _ = small_file
    p = tmp_path / "t.lance"
    for cut in (0, 3, 15, 16, 100, len(data) // 2, len(data) - 17, len(data) - 1):
        p.write_bytes(data[:cut])
        with pytest.raises(LanceError):
            _read_everything(p)
    # a truncated tail that happens to keep a footer: the metadata no longer fits
    p.write_bytes(data[:200] + data[-16:])
    with pytest.raises(CorruptFileError, match=str(p.name)):
        _read_everything(p)


def _patch(data: bytes, pos: int, raw: bytes) -> bytes:
    return data[:pos] + raw + data[pos + len(raw):]


def test_bad_page_table_entries_name_field_and_batch(tmp_path, small_file):
    data, _ = small_file
    _, meta = _layout(data)
    pt = meta.page_table_position
    p = tmp_path / "pt.lance"
    nb = len(meta.batch_offsets) - 1
    # field 0 (i32), batch 1: position far past the end
    p.write_bytes(_patch(data, pt + 16 * 1, struct.pack("<q", 1 << 40)))
    with pytest.raises(CorruptFileError, match=r"field 'i32' \(id 0\), batch 1"):
        LegacyFileReader(str(p)).read_all()
    # a length larger than the batch
    p.write_bytes(_patch(data, pt + 8, struct.pack("<q", 1 << 62)))
    with pytest.raises(CorruptFileError, match="batch 0"):
        LegacyFileReader(str(p)).take_rows([1])
    # the string field's page (field 1, last batch) points at a negative position
    p.write_bytes(_patch(data, pt + 16 * (nb + nb - 1), struct.pack("<q", -5)))
    with pytest.raises(CorruptFileError, match=rf"field 'str' \(id 1\), batch {nb - 1}"):
        LegacyFileReader(str(p)).read_all()


def test_bad_string_offsets_raise(tmp_path, small_file):
    data, _ = small_file
    _, meta = _layout(data)
    pt = meta.page_table_position
    nb = len(meta.batch_offsets) - 1
    pos = struct.unpack_from("<q", data, pt + 16 * nb)[0]  # field 1 (str), batch 0
    p = tmp_path / "s.lance"
    for k, value in [(3, 0), (3, 1 << 50), (0, -1)]:
        p.write_bytes(_patch(data, pos + 8 * k, struct.pack("<q", value)))
        with pytest.raises(CorruptFileError, match=r"field 'str' \(id 1\), batch 0"):
            LegacyFileReader(str(p)).read_all()


def test_bad_metadata_raises(tmp_path, small_file):
    from lancenb._proto import file_pb2

    data, _ = small_file
    meta_pos, meta = _layout(data)
    p = tmp_path / "m.lance"

    def with_meta(m):
        raw = m.SerializeToString()
        return data[:meta_pos] + struct.pack("<I", len(raw)) + raw + struct.pack(
            "<qhh", meta_pos, 0, 2) + b"LANC"

    for change in ("offsets", "page_table", "manifest", "stats"):
        m = file_pb2.Metadata()
        m.CopyFrom(meta)
        if change == "offsets":
            m.batch_offsets[1] = 10 ** 6
        elif change == "page_table":
            m.page_table_position = meta_pos - 8
        elif change == "manifest":
            m.manifest_position = 3
        else:
            m.statistics.page_table_position = 10 ** 9
        p.write_bytes(with_meta(m))
        with pytest.raises(CorruptFileError):
            _read_everything(p)
    p.write_bytes(data[:-8] + struct.pack("<hh", 0, 3) + b"LANC")
    with pytest.raises(NotSupportedError):
        LegacyFileReader(str(p))


def test_random_byte_flips_never_crash(tmp_path, small_file):
    data, _ = small_file
    meta_pos, meta = _layout(data)
    rng = np.random.default_rng(11)
    p = tmp_path / "flip.lance"
    regions = [(0, meta.page_table_position),  # pages
               (meta.page_table_position, meta.manifest_position),  # tables, dictionaries
               (meta.manifest_position, len(data))]  # schema, metadata, footer
    corrupt = 0
    for lo, hi in regions:
        for _ in range(60):
            bad = bytearray(data)
            for _ in range(int(rng.integers(1, 4))):
                bad[int(rng.integers(lo, hi))] ^= int(rng.integers(1, 256))
            p.write_bytes(bytes(bad))
            try:
                _read_everything(p)
            except CorruptFileError:
                corrupt += 1
            except LanceError:
                pass
    assert corrupt > 20


def _page_pos(data: bytes, tmp_path, name: str, batch: int = 0) -> int:
    p = tmp_path / "probe.lance"
    p.write_bytes(data)
    r = LegacyFileReader(str(p))
    lf = next(f for top in r.fields for f in top.walk() if f.name == name)
    return int(r._backend._data.table[lf.id - r._backend._data.min_id, batch, 0])


def test_bad_list_offsets_and_dictionary_keys_raise(tmp_path, small_file):
    data, _ = small_file
    p = tmp_path / "b.lance"
    pos = _page_pos(data, tmp_path, "l_str", batch=1)
    for k, value in [(2, -3), (1, 1 << 30), (5, 0)]:
        bad = _patch(data, pos + 4 * k, struct.pack("<i", value))
        p.write_bytes(bad)
        with pytest.raises(CorruptFileError, match=r"field '(l_str|item)' \(id \d+\), batch 1"):
            LegacyFileReader(str(p)).read_all()
    pos = _page_pos(data, tmp_path, "d_str", batch=2)
    p.write_bytes(_patch(data, pos + 4, struct.pack("<i", 1000)))
    with pytest.raises(CorruptFileError, match=r"field 'd_str' .* batch 2: dictionary key 1000"):
        LegacyFileReader(str(p)).take_rows([33, 39])


def test_statistics_of_all_null_batches(tmp_path):
    n = 20
    table = pa.table({"i": pa.nulls(n, pa.int16()), "f": pa.nulls(n, pa.float64()),
                      "d": pa.nulls(n, pa.date64()), "t": pa.nulls(n, pa.timestamp("us")),
                      "s": pa.nulls(n, pa.string()), "b": pa.nulls(n, pa.bool_())})
    _write(tmp_path / "d", table, group=8)
    ((reader, want, _),) = _fragment_files(tmp_path / "d")
    assert_tables_equal(reader.read_all().to_table(), want)
    _, raw = reader.page_statistics(raw=True)
    by_name = {reader._backend._by_id[fid].name: st for fid, st in raw.items()}
    assert {"i", "f", "s", "b"} <= set(by_name)
    assert [s.null_count for s in by_name["i"]] == [8, 8, 4]
    assert (by_name["i"][0].min, by_name["i"][0].max) == (-(1 << 15), (1 << 15) - 1)
    assert (by_name["f"][0].min, by_name["f"][0].max) == (-math.inf, math.inf)
    assert by_name["s"][0].min is None and by_name["s"][0].max is None
    if "d" in by_name:  # sentinels no Python date can hold read back as unknown
        assert by_name["d"][0].min is None
    _, safe = reader.page_statistics()
    for fid, per_batch in safe.items():
        name = reader._backend._by_id[fid].name
        for st in per_batch:
            assert (st.null_count is None) if name == "s" else (st.null_count == 0)
            if name != "s":
                assert st.min is None and st.max is None


# -- hand-built files (known answers) --------------------------------------------------
def _legacy_file(pages: bytes, table: list[int], page_table_at: int, fields,
                 batch_offsets) -> bytes:
    """``pages``, the page table (i64 entries), the schema and metadata, the footer."""
    from lancenb._proto import file_pb2, table_pb2

    out = pages + struct.pack(f"<{len(table)}q", *table)
    man = table_pb2.Manifest(fields=fields).SerializeToString()
    man_pos = len(out)
    out += struct.pack("<I", len(man)) + man
    meta = file_pb2.Metadata(batch_offsets=batch_offsets, page_table_position=page_table_at,
                             manifest_position=man_pos).SerializeToString()
    meta_pos = len(out)
    out += struct.pack("<I", len(meta)) + meta
    return out + struct.pack("<qhh", meta_pos, 0, 2) + b"LANC"


def _fields():
    from lancenb._proto import file_pb2

    return [file_pb2.Field(name="i", id=0, parent_id=-1, logical_type="int32", nullable=True,
                           encoding=file_pb2.PLAIN),
            file_pb2.Field(name="s", id=1, parent_id=-1, logical_type="string", nullable=True,
                           encoding=file_pb2.VAR_BINARY)]


def test_known_answer_file(tmp_path):
    # batch 0: i = [1, 2, 3] at 0; s = "ab", "", "c": bytes at 12..15, offsets at 15
    # batch 1: i = [-4] at 47; s = "xyz": bytes at 51..54, offsets at 54
    pages = (struct.pack("<3i", 1, 2, 3) + b"abc" + struct.pack("<4q", 12, 14, 14, 15)
             + struct.pack("<i", -4) + b"xyz" + struct.pack("<2q", 51, 54))
    table = [0, 3, 47, 1,  # field 0: batches 0, 1
             15, 3, 54, 1]  # field 1
    p = tmp_path / "kat.lance"
    p.write_bytes(_legacy_file(pages, table, len(pages), _fields(), [0, 3, 4]))
    r = LegacyFileReader(str(p))
    assert r.read_all().to_table().to_pydict() == {"i": [1, 2, 3, -4],
                                                   "s": ["ab", None, "c", "xyz"]}
    assert r.take_rows([3, 0, 3]).to_table().to_pydict() == {"i": [-4, 1, -4],
                                                             "s": ["xyz", "ab", "xyz"]}
    assert r.read_range(2, 2).to_table().to_pydict() == {"i": [3, -4], "s": ["c", "xyz"]}
    assert [pg.buffers[0].position for pg in r.metadata().columns[1].pages] == [15, 54]
    assert r.page_statistics() is None


def test_zero_row_file(tmp_path):
    # pylance writes no data file for an empty table; a file without batches still reads
    ds = _write(tmp_path / "d", pa.table({"a": pa.array([], pa.int32())}))
    assert ds.get_fragments() == []
    p = tmp_path / "empty.lance"
    p.write_bytes(_legacy_file(b"\0" * 8, [], 8, _fields(), []))
    r = LegacyFileReader(str(p))
    assert r.num_rows() == 0
    got = r.read_all().to_table()
    assert got.num_rows == 0 and got.schema.names == ["i", "s"]
    assert r.take_rows([]).to_table().num_rows == 0
    assert r.read_range(0, 0).to_table().num_rows == 0


def test_reads_through_the_io_seam(small_file):
    import fsspec

    data, want = small_file
    fs = fsspec.filesystem("memory")
    fs.pipe("/legacy_small.lance", data)
    try:
        r = LegacyFileReader("memory:///legacy_small.lance")
        assert_tables_equal(r.read_all().to_table(), want)
        assert_tables_equal(r.take_rows([39, 1]).to_table(), want.take([39, 1]))
    finally:
        fs.rm("/legacy_small.lance")
