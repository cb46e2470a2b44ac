"""Statistics of many number columns computed together (numpy, several columns per
call) equal :func:`compute_stats` column by column, and the statistics buffer is
byte-identical to the one built column by column (NaN, signed zeros, infinities,
all-NaN pages, 64-bit extremes, several batches and pages, nulls and other types
mixed in)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lancenb.dataset import stats


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
    _, slow = _collect(table, rows_per_page)
    assert fast == slow
