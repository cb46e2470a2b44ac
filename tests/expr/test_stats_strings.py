"""String and binary page statistics found by one kernel pass over the bytes
(``stats._string_stats``, ``STRING_STATS``) give a statistics buffer byte-identical to
Arrow's ``min_max`` per page: nulls, all-null pages, empty strings, shared prefixes,
non-ASCII text, bounds longer than the kept prefix, large offsets, binary, pages cut
across batches; and a filtered scan of a dataset written with them finds every row."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.file import statistics as stats


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = np.array(["", "a", "ab", "abc", "abc\x00", "ü", "zz", "http://www.a", "é" * 70,
                      "http://www.ab" + "x" * 80, "\U0001f600"], dtype=object)
    s = words[rng.integers(0, len(words), n)].tolist()
    mask = rng.random(n) < 0.2
    blobs = [bytes(rng.integers(0, 256, rng.integers(0, 12)).astype(np.uint8))
             for _ in range(n)]
    return pa.table({
        "s": pa.array(s, mask=mask),
        "ls": pa.array(s, pa.large_string()),
        "b": pa.array(blobs, pa.binary(), mask=rng.random(n) < 0.1),
        "lb": pa.array(blobs, pa.large_binary()),
        "none": pa.array([None] * n, pa.string()),
        "keys": pa.array([f"k{i:09d}" for i in rng.integers(0, 10**9, n)]),
    })


def _buffer(t: pa.Table, rows_per_page: int, chunk: int) -> bytes:
    coll = stats.StatsCollector(t.schema, list(range(t.num_columns)), rows_per_page)
    for b in t.to_batches(max_chunksize=chunk):
        coll.add(b)
    return coll.finish()[0]


@pytest.mark.parametrize("rows_per_page,chunk", [(1000, 300), (4096, 5000)])
def test_string_statistics_match_arrow(monkeypatch, rows_per_page, chunk):
    t = _table(9_000, rows_per_page)
    fast = _buffer(t, rows_per_page, chunk)
    monkeypatch.setattr(stats, "STRING_STATS", False)
    assert fast == _buffer(t, rows_per_page, chunk)


def test_string_bounds_prune_a_dataset_scan(tmp_path):
    t = pa.table({"k": pa.array([f"key-{i:06d}" for i in range(200_000)])})
    path = str(tmp_path / "d")
    lancenb.write_dataset(t, path)
    ds = lancenb.dataset(path)
    got = ds.to_table(filter="k >= 'key-150000' AND k < 'key-150010'")
    assert got.column("k").to_pylist() == [f"key-{i:06d}" for i in range(150_000, 150_010)]
