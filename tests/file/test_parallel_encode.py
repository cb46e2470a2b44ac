"""Columns encoded on the writer's thread pool give the same bytes as encoding them one
after another on the writing thread (pages written in the same order), and pylance
reads them back."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

from lancenb.file import LanceFileReader, LanceFileWriter
from lancenb.file.formats import v2_1_write as file_writer


def _table(n: int, seed: int = 3) -> pa.Table:
    rng = np.random.default_rng(seed)
    off = np.concatenate([[0], np.cumsum(rng.integers(0, 4, n))]).astype(np.int32)
    words = np.array(["ant", "bee", "cat", "dog", "eel"], dtype=object)
    return pa.table({
        "i": pa.array(rng.integers(0, 1000, n)),
        "f": pa.array(rng.random(n), mask=rng.random(n) < 0.1),
        "s": pa.array(words[rng.integers(0, 5, n)].tolist()),
        "u": pa.array([f"v{x}" for x in rng.integers(0, 10**9, n)]),
        "blob": pa.array([bytes(int(k)) for k in rng.integers(0, 50, n)], pa.large_binary()),
        "l": pa.ListArray.from_arrays(pa.array(off),
                                      pa.array(rng.integers(0, 50, off[-1]).astype(np.int16))),
        "st": pa.StructArray.from_arrays([pa.array(rng.random(n)),
                                          pa.array(words[rng.integers(0, 5, n)].tolist())],
                                         ["x", "y"]),
        "d": pa.array(rng.integers(0, 3, n).astype(np.int32)).dictionary_encode(),
    }, schema=pa.schema([
        pa.field("i", pa.int64()), pa.field("f", pa.float64()), pa.field("s", pa.string()),
        pa.field("u", pa.string()),
        pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"}),
        pa.field("l", pa.list_(pa.int16())),
        pa.field("st", pa.struct([("x", pa.float64()), ("y", pa.string())])),
        pa.field("d", pa.dictionary(pa.int32(), pa.int32())),
    ]))


def _write(path, table, version, cache):
    with LanceFileWriter(str(path), table.schema, version=version,
                         data_cache_bytes=cache) as w:
        for b in table.to_batches(max_chunksize=700):
            w.write_batch(b)


@pytest.mark.parametrize("version", ["2.1", "2.2"])
@pytest.mark.parametrize("cache", [None, 64 * 1024])  # one page per column; many pages
def test_pool_matches_sequential(tmp_path, monkeypatch, version, cache):
    table = _table(3000)
    monkeypatch.setattr(file_writer, "PARALLEL_MIN_BYTES", 2**62)  # on the calling thread
    _write(tmp_path / "seq.lance", table, version, cache)
    monkeypatch.setattr(file_writer, "PARALLEL_MIN_BYTES", 0)  # every flush on the pool
    monkeypatch.setattr(file_writer, "_encode_workers", lambda: 2)
    _write(tmp_path / "par.lance", table, version, cache)
    seq = (tmp_path / "seq.lance").read_bytes()
    assert (tmp_path / "par.lance").read_bytes() == seq
    pages = [len(c.pages) for c in LanceFileReader(str(tmp_path / "par.lance"))
             .metadata().columns]
    assert (max(pages) > 1) == (cache is not None)
    want = table.drop_columns(["blob", "d"])
    back = lance.file.LanceFileReader(str(tmp_path / "par.lance")).read_all().to_table()
    assert back.select(want.column_names).equals(want)
    assert back["d"].to_pylist() == table["d"].to_pylist()
    ours = LanceFileReader(str(tmp_path / "par.lance")).read_all().to_table()
    assert ours.select(want.column_names).equals(want)
    assert ours["blob"].to_pylist() == table["blob"].to_pylist()
    assert ours["d"].to_pylist() == table["d"].to_pylist()


def test_pool_error_is_raised(tmp_path, monkeypatch):
    """A column that fails to encode on the pool fails the write with its own error."""
    from lancenb.errors import LanceError

    monkeypatch.setattr(file_writer, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(file_writer, "_encode_workers", lambda: 2)
    table = pa.table({"a": pa.array(np.arange(5000)), "b": pa.array(np.arange(5000.0))})
    # a compression no encoder knows: the error of the page's encoder reaches the caller
    schema = pa.schema([pa.field("a", pa.int64()),
                        pa.field("b", pa.float64(),
                                 metadata={"lance-encoding:compression": "nosuch"})])
    with pytest.raises(LanceError, match="nosuch"):
        with LanceFileWriter(str(tmp_path / "x.lance"), schema, version="2.1") as w:
            w.write_batch(table.cast(schema))
