"""2.2 rep/def level compression as pylance 14 writes it (``physical/levels.py``):
RLE block form in mini-block chunks and in constant (all-null) pages, chosen from
the page's levels; and the bitpacked/flat choice both versions share."""

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from _tables import assert_tables_equal

from lancenb.encodings import pb
from lancenb.encodings.physical import levels as level_codec
from lancenb.file import LanceFileReader, LanceFileWriter

lance_file = pytest.importorskip("lance.file")

RLE = "rle(flat(16), flat(8))"


def _runs_mask(n: int, runs: int, seed: int = 1) -> np.ndarray:
    """A null mask of ``n`` values with exactly ``runs`` runs (none longer than 255
    when ``n / runs`` is small)."""
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.choice(np.arange(1, n), runs - 1, replace=False))
    flip = np.zeros(n, np.int64)
    flip[cuts] = 1
    return np.cumsum(flip) % 2 == 1


def _write(path, table, writer, version="2.2"):
    with writer(str(path), table.schema, version=version) as w:
        w.write_batch(table)
    return str(path)


def _levels(path):
    """Per column, per page: ``(layout kind, rep description, def description)``."""
    out = []
    for col in LanceFileReader(path).metadata().columns:
        pages = []
        for p in col.pages:
            kind = p.layout.WhichOneof("layout")
            sub = getattr(p.layout, kind)
            pages.append((kind,) + tuple(
                pb.describe(getattr(sub, f)) if sub.HasField(f) else None
                for f in ("rep_compression", "def_compression")))
        out.append(pages)
    return out


def _page_bytes(path):
    raw = Path(path).read_bytes()
    return [[(p.layout, [raw[b.position:b.position + b.size] for b in p.buffers])
             for p in col.pages] for col in LanceFileReader(path).metadata().columns]


# -- the choice ----------------------------------------------------------------------

@pytest.mark.parametrize("n, runs, want", [
    (10_000, 424, "rle"),          # 8 + 3 * 424 = 1280 B = bitpacked at W=1: RLE
    (10_000, 425, "outofline"),
    (1000, 40, "rle"),             # 128 B < 130 B inline
    (1000, 41, "inline"),
    (20, 10, "rle"),               # 38 B < 40 B raw
    (10, 4, "flat"),               # 20 B is not smaller than 20 B raw
])
def test_choice_boundaries_as_pylance(n, runs, want):
    lv = _runs_mask(n, runs).astype(np.uint16)
    assert level_codec.choose(lv, version_minor=2) == want
    assert level_codec.choose(lv, version_minor=1) != "rle"


def test_inline_levels_when_the_packed_bits_are_smaller():
    """65 one-bit levels: 128 B of packed bits < 130 B raw, so inline (pylance 14 in
    2.1 and 2.2), though with its width word the inline chunk also takes 130 B."""
    lv = np.tile(np.array([1, 0], np.uint16), 40)[:65]
    assert level_codec.choose(lv, version_minor=1) == "inline"
    assert level_codec.choose(lv[:64], version_minor=1) == "flat"


# -- against pylance ----------------------------------------------------------------

def _table(n: int) -> pa.Table:
    rng = np.random.default_rng(5)
    ints = np.arange(n, dtype=np.int32)
    lens = rng.integers(1, 4, n)
    items = [list(range(k)) for k in lens]
    return pa.table({
        "few_null_runs": pa.array(ints, mask=(np.arange(n) // 700) % 2 == 1),
        "rare_nulls": pa.array(ints, mask=_runs_mask(n, min(41, n - 1), seed=2)),
        "many_nulls": pa.array(ints, mask=rng.random(n) < 0.3),
        "list_null_runs": pa.array([None if (i // 500) % 3 == 2 else v
                                    for i, v in enumerate(items)], pa.list_(pa.int32())),
        "struct_null_runs": pa.array(
            [None if (i // 300) % 4 == 0 else {"x": None if i % 997 == 0 else i}
             for i in range(n)], pa.struct([("x", pa.int32())])),
        "all_null_lists": pa.array([None] * n, pa.list_(pa.int32())),
        "null_or_empty_lists": pa.array([None if i % 3 else [] for i in range(n)],
                                        pa.list_(pa.int64())),
        "all_null_struct_leaf": pa.array([None if (i // 400) % 2 else {"y": None}
                                          for i in range(n)],
                                         pa.struct([("y", pa.int16())])),
    })


@pytest.mark.parametrize("n", [5, 300, 3000, 20_000])
def test_pages_are_byte_identical_to_pylance(tmp_path, n):
    t = _table(n)
    ours = _write(tmp_path / "ours.lance", t, LanceFileWriter)
    theirs = _write(tmp_path / "theirs.lance", t, lance_file.LanceFileWriter)
    assert _levels(ours) == _levels(theirs)
    assert _page_bytes(ours) == _page_bytes(theirs)


def test_compressed_level_forms_are_used_and_pylance_reads_them(tmp_path):
    n = 20_000
    t = _table(n)
    path = _write(tmp_path / "a.lance", t, LanceFileWriter)
    kinds = dict(zip(["few_null_runs", "rare_nulls", "many_nulls", "list_null_runs",
                      "struct_null_runs", "all_null_lists", "null_or_empty_lists",
                      "all_null_struct_leaf"], _levels(path)))
    assert kinds["few_null_runs"] == [("mini_block_layout", None, RLE)]
    assert kinds["rare_nulls"] == [("mini_block_layout", None, RLE)]
    assert kinds["many_nulls"] == [("mini_block_layout", None, "out_of_line_bitpacking(flat(1))")]
    assert kinds["list_null_runs"][0][2] == RLE
    assert kinds["struct_null_runs"][0][2] == RLE
    assert kinds["all_null_lists"] == [("constant_layout", RLE, RLE)]
    assert kinds["null_or_empty_lists"] == [("constant_layout", RLE,
                                             "out_of_line_bitpacking(flat(2))")]
    assert kinds["all_null_struct_leaf"] == [("constant_layout", None, RLE)]
    r = lance_file.LanceFileReader(path)
    assert_tables_equal(r.read_all().to_table(), t)
    idx = sorted(np.random.default_rng(0).choice(n, 700, replace=False).tolist())
    assert_tables_equal(r.take_rows(idx).to_table(), t.take(idx))
    assert_tables_equal(r.read_range(4321, 9000).to_table(), t.slice(4321, 9000))
    ours = LanceFileReader(path)
    assert_tables_equal(ours.read_all().to_table(), t)
    assert_tables_equal(ours.take_rows(idx).to_table(), t.take(idx))


def test_version_21_keeps_bitpacked_and_raw_levels(tmp_path):
    t = _table(3000)
    path = _write(tmp_path / "a.lance", t, LanceFileWriter, version="2.1")
    for pages in _levels(path):
        for kind, rep, dfn in pages:
            assert RLE not in (rep, dfn)
            if kind == "constant_layout":
                assert rep is None and dfn is None
    theirs = _write(tmp_path / "b.lance", t, lance_file.LanceFileWriter, version="2.1")
    assert _page_bytes(path) == _page_bytes(theirs)


def test_rle_falls_back_when_a_chunk_block_would_overflow_its_u16_size():
    """Few runs page-wide (RLE wins) but one chunk of 30,000 alternating levels, whose
    block (90 KB) a chunk header's u16 cannot describe: bitpacked instead."""
    lv = np.full(2_000_000, 3, np.uint16)
    lv[:30_000] = np.arange(30_000) % 2
    assert level_codec.choose(lv, version_minor=2) == "rle"
    bounds = np.append(np.arange(30_000, 2_000_000, 4096), 2_000_000)
    bounds = np.concatenate([[0], bounds]).astype(np.int64)
    src, starts, sizes, desc = level_codec.encode_levels(lv, bounds, version_minor=2)
    assert pb.describe(desc) == "out_of_line_bitpacking(flat(2))"
    assert int(sizes.max()) <= 0xFFFF
    # with room in every chunk the page keeps RLE
    src, starts, sizes, desc = level_codec.encode_levels(
        lv, np.array([0, 10_000, 20_000, 30_000, 2_000_000], np.int64), version_minor=2)
    assert pb.describe(desc) == RLE
