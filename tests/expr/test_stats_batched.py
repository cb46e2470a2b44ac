"""Statistics of many number columns computed together (numpy, several columns per
call) equal :func:`compute_stats` column by column, and the statistics buffer is
byte-identical to the one built column by column (NaN, signed zeros, infinities,
all-NaN pages, 64-bit extremes, several batches and pages, nulls and other types
mixed in)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lancenb.file import statistics as stats


def _table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    f = rng.standard_normal(n)
    f[rng.random(n) < 0.1] = np.nan
    zeros = np.where(rng.random(n) < 0.5, -0.0, 0.0)
    cols = {
        "f": f, "nan": np.full(n, np.nan), "zeros": zeros, "zeros32": zeros.astype(np.float32),
        "inf": np.where(rng.random(n) < 0.5, np.inf, -np.inf),
        "i8": rng.integers(-128, 128, n).astype(np.int8),
        "u64": rng.integers(0, 2**64, n, dtype=np.uint64),
        "i64": rng.integers(-2**63, 2**63, n, dtype=np.int64),
        "f32": rng.random(n).astype(np.float32), "f16": rng.random(n).astype(np.float16),
    }
    t = {k: pa.array(v) for k, v in cols.items()}
    t["nulls"] = pa.array(rng.random(n), mask=rng.random(n) < 0.3)
    t["s"] = pa.array([str(x) for x in rng.integers(0, 100, n)])
    t["ts"] = pa.array(rng.integers(0, 2**50, n), pa.timestamp("us"))
    t["dict"] = pa.array(rng.integers(0, 5, n)).dictionary_encode()
    # fixed-width columns whose bounds numpy finds over their bytes (stats._word_stats):
    # ties in the top word, negatives, nulls, an all-null column
    some_null = rng.random(n) < 0.2
    top = rng.integers(0, 3, n).astype(np.uint64)
    low = rng.integers(0, 2**64, n, dtype=np.uint64)
    fsb = np.stack([top.byteswap(), low], axis=1)  # first 8 bytes: 0, 1 or 2 (big-endian)
    t["fsb16"] = pa.Array.from_buffers(pa.binary(16), n, [None, pa.py_buffer(fsb)])
    t["fsb8"] = pa.array([bytes(x) for x in rng.integers(0, 3, (n, 8), dtype=np.uint8)],
                         pa.binary(8), mask=some_null)
    ints = [int(x) * 10**int(e) for x, e in zip(rng.integers(-10**6, 10**6, n),
                                                  rng.integers(0, 30, n))]
    t["dec"] = pa.array([None if m else x for x, m in zip(ints, some_null)],
                        pa.decimal128(38, 0)).cast(pa.decimal128(38, 0))
    t["dec_small"] = pa.array([x % 7 - 3 for x in ints], pa.decimal128(9, 0)).cast(
        pa.decimal128(9, 2))
    t["dec256"] = pa.array([-x for x in ints], pa.decimal256(76, 0))
    t["date_nulls"] = pa.array(rng.integers(-5, 5, n).astype(np.int32), pa.date32(),
                               mask=some_null)
    t["ts_tz"] = pa.array(rng.integers(-2**62, 2**62, n), pa.timestamp("ns", tz="UTC"))
    t["time32"] = pa.array(rng.integers(0, 86_400, n).astype(np.int32), pa.time32("s"))
    t["dur_null"] = pa.array(np.zeros(n, np.int64), pa.duration("ms"), mask=np.ones(n, bool))
    for k in range(4):
        t[f"w{k}"] = pa.array(rng.random(n))
    return pa.table(t)


def _collect(table: pa.Table, rows_per_page: int):
    sc = stats.StatsCollector(table.schema, list(range(7, 7 + table.num_columns)),
                              rows_per_page=rows_per_page)
    for b in table.to_batches(max_chunksize=700):
        sc.add(b)
    return sc, sc.finish()


@pytest.mark.parametrize("n,rows_per_page", [(1, 64), (5, 64), (2000, 64 * 1024), (3000, 1000)])
def test_batched_statistics_match_column_by_column(monkeypatch, n, rows_per_page):
    table = _table(n, seed=n)
    if n == 3000:  # several numpy stacks per group
        monkeypatch.setattr(stats, "_STACK_BYTES", 5000)
    sc, fast = _collect(table, rows_per_page)
    for i, name in enumerate(table.column_names):
        fid = 7 + i
        if fid in sc._skip or fid not in sc._rows:
            continue
        col = table.column(name)
        want = [stats.compute_stats(col.slice(k, rows_per_page))
                for k in range(0, n, rows_per_page)]
        assert [(r.null_count, repr(r.min), repr(r.max)) for r in sc._rows[fid]] == \
            [(r.null_count, repr(r.min), repr(r.max)) for r in want], name
    monkeypatch.setattr(stats, "_NUMPY_STATS", {})  # every column on its own
    monkeypatch.setattr(stats, "WORD_STATS", False)  # ... through Arrow's min_max
    _, slow = _collect(table, rows_per_page)
    assert fast == slow
