"""Plain-number pages written through the short path (``encode_plain``) and the batched
one (``encode_plain_many``, many narrow columns at once) are byte-identical to the full
strategy chain, in 2.1 and 2.2, across the chain's branches (Flat, InlineBitpacking,
RLE and dictionaries left to the full chain), with small pages written together; and
pylance reads the files back."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

from lancenb.encodings import pb, plainpage
from lancenb.encodings.config import EncodingConfig
from lancenb.encodings.plainpage import encode_plain, encode_plain_many
from lancenb.encodings.strategy import encode_page
from lancenb.file import LanceFileReader, LanceFileWriter
from lancenb.file.formats import v2_1_write as file_writer


def _columns(n: int, seed: int) -> dict[str, pa.Array]:
    rng = np.random.default_rng(seed)
    return {
        "f64": pa.array(rng.random(n)),
        "f64neg": pa.array(rng.standard_normal(n)),
        "f32": pa.array(rng.random(n).astype(np.float32)),
        "f16": pa.array(rng.random(n).astype(np.float16)),
        "small": pa.array(rng.integers(0, 1000, n)),
        "wide": pa.array(rng.integers(-2**62, 2**62, n)),
        "i32": pa.array(rng.integers(-2**31, 2**31, n, dtype=np.int32)),
        "u8": pa.array(rng.integers(0, 256, n).astype(np.uint8)),
        "runs": pa.array(np.repeat(rng.integers(0, 5, n // 10 + 1), 10)[:n].astype(np.int16)),
        "lowcard": pa.array(rng.integers(0, 7, n) * 1_234_567),
        "const": pa.array(np.full(n, 7, np.int64)),
        "ts": pa.array(rng.integers(0, 2**50, n), pa.timestamp("us")),
        "date": pa.array(rng.integers(0, 20_000, n).astype(np.int32), pa.date32()),
        "dur": pa.array(rng.integers(0, 10**9, n), pa.duration("ns")),
        # a few repeats: RLE is not planned (its floor exceeds bitpacked), short path
        "walk": pa.array(np.cumsum(rng.integers(0, 50, n)), pa.timestamp("us", tz="UTC")),
    }


def _write(path, table: pa.Table, version: str, plain: bool) -> bytes:
    old = file_writer.USE_PLAIN_PAGES
    file_writer.USE_PLAIN_PAGES = plain
    try:
        with LanceFileWriter(path, table.schema, version=version) as w:
            w.write_batch(table)
    finally:
        file_writer.USE_PLAIN_PAGES = old
    with open(path, "rb") as f:
        return f.read()


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("n", [1, 100, 1025, 5000])
def test_files_match_the_full_chain(tmp_path, version, n):
    cols = _columns(n, seed=n)
    cols["sliced"] = _columns(n + 3, seed=1)["f64"].slice(3)
    table = pa.table(cols)
    fast = _write(tmp_path / "fast.lance", table, version, True)
    full = _write(tmp_path / "full.lance", table, version, False)
    assert fast == full
    assert lance.file.LanceFileReader(str(tmp_path / "fast.lance")).read_all() \
        .to_table().equals(table)


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("minor", [1, 2])
def test_pages_match_encode_page(minor, grouped, monkeypatch):
    if grouped:  # every group of two or more same-shaped pages encoded together
        monkeypatch.setattr(plainpage, "GROUP_MIN_PAGES", 2)
        monkeypatch.setattr(plainpage, "GROUP_MAX_ROWS", 1 << 40)
    cols = list(_columns(3000, seed=7).values())
    cfg = EncodingConfig()
    many = encode_plain_many(cols, [cfg] * len(cols), version_minor=minor)
    answered = 0
    for arr, batched in zip(cols, many):
        one = encode_plain(arr, cfg, version_minor=minor)
        assert (one is None) == (batched is None), arr.type
        if one is None:
            continue
        answered += 1
        buffers, layout = encode_page(arr, cfg, version_minor=minor)
        wanted = [bytes(b) for b in buffers]
        assert [bytes(b) for b in one[0]] == wanted
        assert [bytes(b) for b in batched[0]] == wanted
        assert one[1] == batched[1] == pb.pack_any(layout)
    assert answered >= 6  # floats, wide ints, timestamps... took the short path


def test_not_plain_is_left_to_the_full_chain():
    cfg = EncodingConfig()
    assert encode_plain(pa.array([1.0, None]), cfg, version_minor=1) is None
    assert encode_plain(pa.array(["a", "b"]), cfg, version_minor=1) is None
    assert encode_plain(pa.array([True, False]), cfg, version_minor=1) is None
    assert encode_plain(pa.array(np.arange(10.0)), EncodingConfig(compression="zstd"),
                        version_minor=1) is None


def test_many_narrow_columns_several_windows(tmp_path, monkeypatch):
    # small windows and drains: pages still land where the metadata says
    monkeypatch.setattr(file_writer, "PLAIN_WINDOW_BYTES", 20_000)
    monkeypatch.setattr(file_writer, "DRAIN_BYTES", 30_000)
    rng = np.random.default_rng(2)
    table = pa.table({f"c{i}": pa.array(rng.random(500) if i % 3 else
                                        rng.integers(0, 50, 500)) for i in range(60)})
    path = tmp_path / "wide.lance"
    with LanceFileWriter(path, table.schema, version="2.2") as w:
        w.write_batch(table.slice(0, 200))
        w.add_global_buffer(b"between")
        w.write_batch(table.slice(200))
    assert LanceFileReader(str(path)).read_all().to_table().equals(table)
    assert lance.file.LanceFileReader(str(path)).read_all().to_table().equals(table)
