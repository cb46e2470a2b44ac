"""Issue-3 encodings against pylance, both ways: byte-stream-split under lz4/zstd
(``lance-encoding:bss`` off/on/auto), dictionaries for numbers and decimals, RLE
above the snapshot's 0.5 runs per value, and the compact profile. Each test asserts
the encoding the pages really use, so a silent fallback to Flat cannot pass."""

import numpy as np
import pyarrow as pa
import pytest
from _tables import assert_tables_equal

from lancenb.file import LanceFileReader, LanceFileWriter

lance_file = pytest.importorskip("lance.file")

N = 20_000
RNG = np.random.default_rng(3)


def _cols():
    rng = np.random.default_rng(5)
    return {
        "f32_walk": pa.array(np.cumsum(rng.normal(0, 1, N)).astype(np.float32)),
        "f64_unit": pa.array(rng.random(N)),
        "i32_small": pa.array(rng.integers(0, 1000, N).astype(np.int32)),
        "i32_rand": pa.array(rng.integers(-2**31, 2**31 - 1, N).astype(np.int32)),
        "i64_seq": pa.array(np.arange(N, dtype=np.int64) * 1000 + 1_600_000_000_000),
        "f64_lowcard": pa.array(rng.choice(rng.random(20), N)),
        "i16": pa.array(rng.integers(0, 300, N).astype(np.int16)),
    }


def _table(md: dict) -> pa.Table:
    cols = _cols()
    return pa.table(list(cols.values()), schema=pa.schema(
        [pa.field(k, v.type, metadata=md or None) for k, v in cols.items()]))


def encodings(path) -> dict[str, list[str]]:
    r = LanceFileReader(path)
    md = r.metadata()
    return {f.name: [p.description for p in c.pages] for f, c in zip(md.schema, md.columns)}


def _write_nb(path, t, version="2.1", **kw):
    with LanceFileWriter(str(path), t.schema, version=version, **kw) as w:
        w.write_batch(t)
    return str(path)


def _write_py(path, t, version="2.1"):
    w = lance_file.LanceFileWriter(str(path), t.schema, version=version)
    w.write_batch(t)
    w.close()
    return str(path)


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("compression", ["lz4", "zstd"])
@pytest.mark.parametrize("bss", [None, "auto", "on", "off"])
def test_bss_choices_match_pylance_both_ways(tmp_path, version, compression, bss):
    md = {"lance-encoding:compression": compression}
    if bss:
        md["lance-encoding:bss"] = bss
    t = _table(md)
    nb = _write_nb(tmp_path / "nb.lance", t, version)
    py = _write_py(tmp_path / "py.lance", t, version)
    # the same page encodings as pylance chooses, column by column
    assert encodings(nb) == encodings(py)
    used = {k for k, v in encodings(nb).items() if any("byte_stream_split" in e for e in v)}
    if bss == "off":
        assert not used
    elif bss == "on":
        assert {"f32_walk", "f64_unit", "i32_small", "i32_rand", "i64_seq"} <= used
    else:  # auto: low byte entropy only (pylance 14: small ints, seq, few floats)
        assert {"i32_small", "i64_seq"} <= used and "f32_walk" not in used
    assert "i16" not in used
    assert_tables_equal(lance_file.LanceFileReader(nb).read_all().to_table(), t)
    assert_tables_equal(LanceFileReader(py).read_all().to_table(), t)
    idx = sorted(RNG.choice(N, 300, replace=False).tolist())
    assert_tables_equal(lance_file.LanceFileReader(nb).take_rows(idx).to_table(), t.take(idx))
    assert_tables_equal(LanceFileReader(py).take_rows(idx).to_table(), t.take(idx))


def _numbers():
    rng = np.random.default_rng(9)
    return pa.table({
        "i64_card50": pa.array(rng.choice(rng.integers(0, 2**62, 50), N)),
        "ts_card30": pa.array(rng.choice(np.arange(30) * 86_400_000_000, N)).cast(
            pa.timestamp("us")),
        "f64_card20": pa.array(rng.choice(rng.random(20), N)),
        "dec_card100": pa.array(rng.choice(np.arange(100), N)).cast(pa.decimal128(38, 0))
        .cast(pa.decimal128(20, 2)),
        "i64_sorted": pa.array(np.sort(rng.choice(rng.integers(0, 2**62, 40), N))),
        "i32_runs": pa.array(np.repeat(rng.integers(-2**31, 2**31 - 1, N), rng.geometric(
            1 / 1.6, N))[:N].astype(np.int32)),
        "s1": pa.array(rng.choice(np.array(list("abcde"), dtype=object), N).tolist()),
    })


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_number_dictionaries_and_rle_match_pylance(tmp_path, version):
    t = _numbers()
    nb = _write_nb(tmp_path / "nb.lance", t, version)
    py = _write_py(tmp_path / "py.lance", t, version)
    e_nb, e_py = encodings(nb), encodings(py)
    for col in ("i64_card50", "ts_card30", "f64_card20", "dec_card100", "i64_sorted",
                "i32_runs"):
        assert e_nb[col] == e_py[col], col
    # 2.2 dictionary-encodes 64-bit numbers; 2.1 only decimals (and strings)
    assert ("dict=" in e_nb["i64_card50"][0]) == (version == "2.2")
    assert "dict=" in e_nb["dec_card100"][0]
    assert "dict=" in e_nb["s1"][0]  # one-byte strings: lancenb's dictionary
    assert e_nb["i32_runs"][0].startswith("mini_block:rle")  # RLE at ~0.6 runs/value
    assert_tables_equal(lance_file.LanceFileReader(nb).read_all().to_table(), t)
    assert_tables_equal(LanceFileReader(py).read_all().to_table(), t)
    idx = sorted(RNG.choice(N, 300, replace=False).tolist())
    assert_tables_equal(lance_file.LanceFileReader(nb).take_rows(idx).to_table(), t.take(idx))


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_compact_profile_pylance_reads_exactly(tmp_path, version):
    t = _table({})
    nums = _numbers()
    for name in nums.column_names:
        t = t.append_column(name, nums[name])
    nb = _write_nb(tmp_path / "c.lance", t, version, compression="compact")
    default = _write_nb(tmp_path / "d.lance", t, version)
    e = encodings(nb)
    flat_text = " ".join(v[0] for v in e.values())
    assert "general(" in flat_text and "dict=" in flat_text
    assert "dict=" in e["i64_card50"][0]  # numbers get dictionaries in 2.1 too
    for col in t.column_names:  # never larger than the default, column by column
        assert _col_bytes(nb, col) <= _col_bytes(default, col), col
    r = lance_file.LanceFileReader(nb)
    assert_tables_equal(r.read_all().to_table(), t)
    idx = sorted(RNG.choice(N, 500, replace=False).tolist())
    assert_tables_equal(r.take_rows(idx).to_table(), t.take(idx))
    assert_tables_equal(r.read_range(7000, 5000).to_table(), t.slice(7000, 5000))
    assert_tables_equal(LanceFileReader(nb).read_all().to_table(), t)


def _col_bytes(path, col):
    md = LanceFileReader(path).metadata()
    i = md.schema.names.index(col)
    return sum(b.size for p in md.columns[i].pages for b in p.buffers)


def test_compact_profile_through_field_metadata(tmp_path):
    cols = _cols()
    fields = [pa.field(k, v.type, metadata={"lancenb:profile": "compact"})
              for k, v in cols.items()]
    t = pa.table(list(cols.values()), schema=pa.schema(fields))
    nb = _write_nb(tmp_path / "m.lance", t)
    assert any("general(" in v[0] for v in encodings(nb).values())
    assert_tables_equal(lance_file.LanceFileReader(nb).read_all().to_table(), t)


@pytest.mark.parametrize("typ", [pa.int64(), pa.float64(), pa.timestamp("us")])
def test_pylance_22_out_of_line_bitpacked_dictionary_items(tmp_path, typ):
    """pylance 2.2 dictionary-encodes 64-bit numbers; with a few thousand distinct values
    it bitpacks the dictionary items out of line. lancenb reads them."""
    import lance.file as lf

    rng = np.random.default_rng(0)
    v = rng.integers(0, 2500, 100_000).astype(np.int64) * 1000003
    arr = pa.array(v.astype(np.float64) / 7) if typ == pa.float64() else pa.array(v).cast(typ)
    t = pa.table({"c": arr})
    path = str(tmp_path / "o.lance")
    w = lf.LanceFileWriter(path, t.schema, version="2.2")
    w.write_batch(t)
    w.close()
    r = LanceFileReader(path)
    dict_enc = r.metadata().columns[0].pages[0].layout.mini_block_layout.dictionary
    assert dict_enc.WhichOneof("compression") == "out_of_line_bitpacking"
    assert r.read_all().to_table().equals(t)
    assert r.take_rows([5, 99_999, 0]).to_table().equals(t.take([5, 99_999, 0]))
