"""Takes of small plain pages through the decoded-page cache (``v2_1_plain.take`` with
a cache key): cold and warm takes give what pylance gives, a file written again at the
same path is read afresh, and the cache stays within its byte budget."""

import lance
import numpy as np
import pyarrow as pa
import pytest
from _tables import assert_tables_equal

import lancenb
from lancenb.file import LanceFileReader
from lancenb.file.formats import v2_1_plain

ROWS = 5000


def _table(seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"i": rng.integers(-10**9, 10**9, ROWS),
                     "f": rng.random(ROWS).astype(np.float32),
                     "u": rng.integers(0, 200, ROWS).astype(np.uint8),
                     "ts": pa.array(rng.integers(0, 10**12, ROWS), pa.timestamp("us"))})


def _write(path, t):
    with lance.file.LanceFileWriter(str(path), t.schema, data_cache_bytes=16 * 1024) as w:
        for i in range(0, ROWS, 1000):  # several pages a column
            w.write_batch(t.slice(i, 1000))


@pytest.mark.parametrize("seed", range(4))
def test_cold_and_warm_takes_match_pylance(tmp_path, seed):
    t = _table(seed)
    path = tmp_path / "f.lance"
    _write(path, t)
    rng = np.random.default_rng(seed)
    reader = LanceFileReader(str(path))
    theirs = lance.file.LanceFileReader(str(path))
    for _ in range(3):  # the first take decodes the pages, the next ones reuse them
        rows = np.sort(rng.choice(ROWS, int(rng.integers(1, 300)), replace=True))
        got = reader.read_columns(t.column_names, rows=rows)
        assert_tables_equal(pa.table(dict(zip(t.column_names, got))), t.take(rows))
        uniq = np.unique(rows).tolist()  # (pylance's file take: strictly increasing)
        assert_tables_equal(reader.take_rows(uniq).to_table(),
                            theirs.take_rows(uniq).to_table())


def test_a_file_written_again_is_read_afresh(tmp_path):
    path = tmp_path / "f.lance"
    rows = [0, 17, 2500, ROWS - 1]
    for seed in (1, 2):
        t = _table(seed)
        _write(path, t)
        got = LanceFileReader(str(path)).read_columns(t.column_names, rows=rows)
        assert_tables_equal(pa.table(dict(zip(t.column_names, got))), t.take(rows))


def test_cache_keeps_to_its_budget(tmp_path, monkeypatch):
    from collections import OrderedDict

    monkeypatch.setattr(v2_1_plain, "PAGE_CACHE_BYTES", 64 * 1024)
    monkeypatch.setattr(v2_1_plain, "_PAGES", OrderedDict())
    monkeypatch.setattr(v2_1_plain, "_PAGES_HELD", [0])
    rng = np.random.default_rng(0)
    for seed in range(6):
        t = _table(seed)
        _write(tmp_path / f"{seed}.lance", t)
        reader = LanceFileReader(str(tmp_path / f"{seed}.lance"))
        rows = np.sort(rng.choice(ROWS, 300, replace=False))
        got = reader.read_columns(t.column_names, rows=rows)
        assert_tables_equal(pa.table(dict(zip(t.column_names, got))), t.take(rows))
        with v2_1_plain._PAGES_LOCK:
            held = sum(a.nbytes for a in v2_1_plain._PAGES.values())
            assert held == v2_1_plain._PAGES_HELD[0]
            assert 0 < held <= 64 * 1024


@pytest.mark.parametrize("seed", range(3))
def test_pages_decoded_whole_on_the_second_take_match_pylance(tmp_path, seed):
    # flat pages of other kinds (strings, dictionary strings, booleans, nullable
    # floats, vectors) are decoded whole and kept once a take comes back to them
    rng = np.random.default_rng(seed)
    n = 4000
    words = np.array(["alpha", "beta", "gamma", None], dtype=object)
    t = pa.table({
        "s": pa.array([f"row {i}" * int(rng.integers(0, 4)) for i in range(n)]),
        "d": pa.array(words[rng.integers(0, 4, n)].tolist()),
        "b": pa.array(rng.random(n) < 0.5),
        "x": pa.array([None if v < 0.1 else v for v in rng.random(n)]),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8, dtype=np.float32)),
                                               8),
    })
    path = tmp_path / "ds"
    lance.write_dataset(t, path, max_rows_per_file=1500)
    ours = lancenb.dataset(str(path))
    theirs = lance.dataset(str(path))
    for _ in range(4):  # cold, second touch (decoded whole), warm
        idx = rng.choice(n, int(rng.integers(1, 200)), replace=True)
        assert_tables_equal(ours.take(idx), theirs.take(idx))


def test_a_page_too_large_to_keep_is_not_decoded_again(monkeypatch):
    monkeypatch.setattr(v2_1_plain, "PAGE_CACHE_BYTES", 80)
    key = ("test", object())
    assert not v2_1_plain.touched_again(key)
    assert v2_1_plain.touched_again(key)  # the second touch: decode whole and keep
    v2_1_plain.keep_page(key, pa.array(np.arange(100)))  # 800 bytes: over 80 // 8
    assert v2_1_plain.cached_page(key) is None
    # refused: later touches never ask for a whole decode again
    assert not v2_1_plain.touched_again(key) and not v2_1_plain.touched_again(key)
    small = ("test", object())
    v2_1_plain.touched_again(small)
    assert v2_1_plain.touched_again(small)
    v2_1_plain.keep_page(small, pa.array([1], pa.int8()))
    assert v2_1_plain.cached_page(small).to_pylist() == [1]
