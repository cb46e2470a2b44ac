"""``LancePageMetadata.encoding`` is pylance's text, byte for byte: for every page of
files pylance and lancenb write (2.0, 2.1, 2.2; numbers, strings, FSST, dictionaries,
RLE, byte-stream-split, general compression, constant and all-null pages, blobs,
packed structs, fixed-size lists, lists, structs, maps, large values), the same file
read by both readers gives the same string."""

import difflib

import numpy as np
import pyarrow as pa
import pytest

from lancenb.file import LanceFileReader, LanceFileWriter

lance_file = pytest.importorskip("lance.file")

N = 3000
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon"]


def _f(name, arr, **md):
    meta = {f"lance-encoding:{k.replace('_', '-')}": v for k, v in md.items()}
    return pa.field(name, arr.type, metadata=meta or None), arr


def _columns(version):
    rng = np.random.default_rng(7)
    words = [WORDS[i % 5] for i in range(N)]
    cols = [
        _f("i64", pa.array(np.arange(N, dtype=np.int64))),
        _f("i32_rand", pa.array(rng.integers(-2**31, 2**31 - 1, N).astype(np.int32))),
        _f("f64", pa.array(rng.random(N))),
        _f("bool", pa.array(rng.random(N) < 0.5)),
        _f("nullable", pa.array([None if i % 7 == 0 else i for i in range(N)], pa.int32())),
        _f("all_null", pa.nulls(N, pa.int32())),
        _f("same", pa.array([42] * N, pa.int64())),
        _f("same_str", pa.array(["same"] * N)),
        _f("low_card", pa.array([None if i % 3 == 0 else w for i, w in enumerate(words)])),
        _f("urls", pa.array([f"https://example.com/a/long/path/{i}/index.html?q={i * 7}"
                             for i in range(N)])),
        _f("large_values", pa.array([("v%d" % i) * 150 for i in range(100)]
                                    + [None] * (N - 100))),
        _f("binary", pa.array([bytes(rng.integers(0, 256, 12, dtype=np.uint8))
                               for _ in range(N)])),
        _f("vec", pa.FixedSizeListArray.from_arrays(
            pa.array(rng.random(N * 64).astype(np.float32)), 64)),
        _f("fsl3", pa.FixedSizeListArray.from_arrays(pa.array(np.arange(N * 3, dtype=np.int32)),
                                                     3)),
        _f("lst", pa.array([list(range(i % 4)) if i % 11 else None for i in range(N)],
                           pa.list_(pa.int64()))),
        _f("st", pa.StructArray.from_arrays(
            [pa.array(np.arange(N, dtype=np.int32)), pa.array(words)], ["a", "b"])),
        _f("packed", pa.StructArray.from_arrays(
            [pa.array(np.arange(N, dtype=np.int32)), pa.array(rng.random(N))], ["x", "y"]),
           packed="true"),
        _f("zstd", pa.array(rng.integers(0, 1000, N).astype(np.int64)), compression="zstd"),
        _f("lz4_str", pa.array([w + str(i) for i, w in enumerate(words)]), compression="lz4"),
        _f("bss", pa.array(np.cumsum(rng.normal(0, 1, N)).astype(np.float32)), bss="on",
           compression="zstd"),
        _f("runs", pa.array(np.repeat(np.arange(N // 100), 100).astype(np.int32)),
           rle_threshold="0.9"),
        _f("dict_floats", pa.array(rng.choice(rng.random(10), N))),
        _f("dictionary", pa.DictionaryArray.from_arrays(
            pa.array(np.arange(N, dtype=np.int32) % 5), pa.array(WORDS))),
        _f("blob", pa.array([bytes(100) * (i % 3) for i in range(N)], pa.large_binary()),
           blob="true"),
        _f("nested", pa.array([{"l": [{"v": i}] * (i % 3)} for i in range(N)])),
    ]
    if version == "2.2":
        cols += [
            _f("packed_var", pa.StructArray.from_arrays(
                [pa.array(np.arange(N, dtype=np.int32)), pa.array(words)], ["x", "s"]),
               packed="true"),
            _f("map", pa.array([[("k", i)] for i in range(N)],
                               pa.map_(pa.string(), pa.int64()))),
        ]
    return cols


def _table(version):
    fields, arrays = zip(*_columns(version))
    return pa.table(list(arrays), schema=pa.schema(list(fields)))


def _write(who, path, table, version):
    writer = lance_file.LanceFileWriter if who == "pylance" else LanceFileWriter
    # small pages: most columns have several, some spill into chunked or split pages
    with writer(str(path), table.schema, version=version, data_cache_bytes=16 * 1024) as w:
        for b in table.to_batches(max_chunksize=N // 2):
            w.write_batch(b)
    return str(path)


def _diff(a, b):
    return "\n".join(list(difflib.unified_diff(a.splitlines(), b.splitlines(),
                                               "pylance", "lancenb", lineterm=""))[:60])


@pytest.mark.parametrize("who", ["pylance", "lancenb"])
@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_page_encoding_is_pylances_text(tmp_path, version, who):
    t = _table(version)
    path = _write(who, tmp_path / "f.lance", t, version)
    theirs = lance_file.LanceFileReader(path).metadata()
    ours = LanceFileReader(path).metadata()
    assert len(ours.columns) == len(theirs.columns)
    pages = 0
    for ci, (a, b) in enumerate(zip(theirs.columns, ours.columns)):
        assert len(a.pages) == len(b.pages), ci
        for pi, (pa_, pb_) in enumerate(zip(a.pages, b.pages)):
            assert pb_.encoding == pa_.encoding, (ci, pi, _diff(pa_.encoding, pb_.encoding))
            pages += 1
    assert pages >= len(ours.columns)
    assert pages > len(ours.columns)
    # the texts name what the pages are
    text = "\n".join(p.encoding for c in ours.columns for p in c.pages)
    if version == "2.0":
        assert text.startswith("ArrayEncoding {") and "Dictionary(" in text
    else:
        assert text.startswith("PageLayout {")
        for kind in ("MiniBlockLayout(", "FullZipLayout(", "Fsst(", "Rle(", "General(",
                     "ByteStreamSplit(", "PackedStruct(", "BlobLayout("):
            assert kind in text, kind
        assert "symbol_table: b\"" in text  # bytes as a byte string
    if version == "2.2":
        assert "VariablePackedStruct(" in text and "ConstantLayout(" in text


def test_short_description_stays_lancenbs(tmp_path):
    """``description`` keeps lancenb's compact name; ``layout`` the message both come
    from."""
    t = pa.table({"x": pa.array(np.arange(1000, dtype=np.int64))})
    path = _write("pylance", tmp_path / "f.lance", t, "2.1")
    page = LanceFileReader(path).metadata().columns[0].pages[0]
    assert page.description.startswith("mini_block:")
    assert page.encoding == lance_file.LanceFileReader(path).metadata().columns[0] \
        .pages[0].encoding
    assert page.layout.WhichOneof("layout") == "mini_block_layout"
