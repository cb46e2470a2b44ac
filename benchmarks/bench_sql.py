#!/usr/bin/env python
"""SQL engine benchmark (issue 20): the per-batch cost of evaluating SQL, and filtered
scans before and after the engine replaced the pyarrow.compute translator.

Run from the repository root::

    python benchmarks/bench_sql.py [--rows N] [--repeat K] [--out benchmarks/RESULTS.md]

Measured (medians of K runs after one warm-up):

* per batch of 1k, 64k and 1M rows: a filter (``x > 0.5 AND name LIKE 'n1%'``, row
  positions out) and a projection (``id * 2``, ``lower(name)``) through DataFusion and
  DuckDB, and the filter through ``pyarrow.compute`` (the translator's evaluation);
* bench_dataset's data and filtered scans (``x > 0.99``, ``cat = 'c7'``, plus a function
  ``starts_with(cat, 'c7')``) with lancenb's engine evaluation ("after"), lancenb with
  the same compiled filter evaluated by pyarrow.compute ("before", same pruning and late
  materialisation), and pylance, in one run; ratios are lancenb / pylance.

Results are checked (the three scans return the same rows). No timing assertions.
Figures go between the ``bench_sql`` markers of RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
from _results import replace_section  # noqa: E402  (benchmarks/ is on sys.path)
from bench_dataset import ROWS_PER_FILE, make_table  # noqa: E402

MARK_START = "<!-- bench_sql:start -->"
MARK_END = "<!-- bench_sql:end -->"


def log(msg=""):
    print(msg, file=sys.stderr, flush=True)


def median_ms(fn, repeat):
    times = []
    for i in range(repeat + 1):
        t0 = time.perf_counter()
        fn()
        if i:
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def per_batch(repeat: int) -> list:
    import duckdb
    import pyarrow.compute as pc

    from lancenb.expr import engine as sql

    con = duckdb.connect()
    rows = []
    for n in (1000, 65536, 1 << 20):
        rng = np.random.default_rng(0)
        t = pa.table({"id": np.arange(n), "x": rng.random(n),
                      "name": pa.array([f"n{i % 100}" for i in range(n)])})
        flt = "x > 0.5 AND name LIKE 'n1%'"
        proj = {"a": "id * 2", "b": "lower(name)"}
        want = sql.positions(t, flt)

        def df_filter(t=t, flt=flt):
            return sql.positions(t, flt)

        def df_proj(t=t, proj=proj):
            return sql.evaluate(t, proj)

        def dd_filter(t=t, flt=flt):
            pos = t.append_column("__p", pa.array(np.arange(t.num_rows)))  # noqa: F841
            return con.sql(f"SELECT __p FROM pos WHERE {flt}").to_arrow_table()

        def dd_proj(t=t):  # noqa: ARG001 (DuckDB finds `t` by name)
            return con.sql("SELECT id * 2 AS a, lower(name) AS b FROM t").to_arrow_table()

        def pc_filter(t=t):
            pos = t.append_column("__p", pa.array(np.arange(t.num_rows)))
            expr = (pc.field("x") > 0.5) & pc.match_like(pc.field("name"), "n1%")
            return pos.filter(expr).column("__p").to_numpy()

        assert np.array_equal(pc_filter(), want)
        assert len(dd_filter()) == len(want)
        reps = repeat * (10 if n < 100_000 else 1)
        rows.append((n, {k: median_ms(f, reps) for k, f in [
            ("DataFusion filter", df_filter), ("DuckDB filter", dd_filter),
            ("pyarrow.compute filter", pc_filter), ("DataFusion projection", df_proj),
            ("DuckDB projection", dd_proj)]}))
        log(f"{n}: {rows[-1][1]}")
    return rows


def scans(rows: int, repeat: int, tmp: str) -> dict:
    import lance

    import lancenb
    from lancenb.expr.filters import Filter, compile_filter

    table = make_table(rows)
    uri = os.path.join(tmp, "ds.lance")
    lancenb.write_dataset(table, uri, max_rows_per_file=ROWS_PER_FILE)
    ours, theirs = lancenb.dataset(uri), lance.dataset(uri)
    out = {}
    for flt in ("x > 0.99", "cat = 'c7'", "starts_with(cat, 'c7')"):
        after = compile_filter(flt, ours.schema)
        before = None
        if after.expression is not None:  # the translator's form, evaluated by pyarrow
            before = Filter(None, after.expression, after._tree, after._columns)
        want = theirs.to_table(filter=flt)["id"].to_pylist()
        assert ours.to_table(filter=flt)["id"].to_pylist() == want, flt
        if before is not None:
            assert ours.to_table(filter=before)["id"].to_pylist() == want, flt
        runs = {"after": lambda f=flt: ours.to_table(filter=f),
                "pylance": lambda f=flt: theirs.to_table(filter=f)}
        if before is not None:
            runs["before"] = lambda f=before: ours.to_table(filter=f)
        times = {k: [] for k in runs}
        for i in range(repeat + 1):  # interleaved: a loaded machine's drift hits all alike
            for k, fn in runs.items():
                t0 = time.perf_counter()
                fn()
                if i:
                    times[k].append((time.perf_counter() - t0) * 1000)
        r = {k: statistics.median(v) for k, v in times.items()}
        out[flt] = r
        log(f"{flt}: {r}")
    return out


def render(batch: list, scan: dict, rows: int, repeat: int) -> str:
    def f(v):
        return "–" if v is None else (f"{v:.2f}" if v < 100 else f"{v:.0f}")

    kinds = list(batch[0][1])
    lines = [MARK_START, "",
             f"### SQL engine (medians of {repeat} runs; {platform.machine()}, "
             f"{os.cpu_count()} cores; run {time.strftime('%Y-%m-%d')})", "",
             "Per batch (ms), a filter's row positions and a two-column projection:", "",
             "| rows | " + " | ".join(kinds) + " |", "|---:|" + "---:|" * len(kinds)]
    for n, r in batch:
        lines.append(f"| {n:,} | " + " | ".join(f(r[k]) for k in kinds) + " |")
    lines += ["", f"Filtered scans of bench_dataset's table ({rows:,} rows, files of "
              f"{ROWS_PER_FILE:,} rows), ms and lancenb / pylance:", "",
              "| filter | before ms | after ms | pylance ms | before / pylance | "
              "after / pylance |", "|---|---:|---:|---:|---:|---:|"]
    for flt, r in scan.items():
        b, a, p = r.get("before"), r["after"], r["pylance"]
        lines.append(f"| `{flt}` | {f(b)} | {f(a)} | {f(p)} | "
                     f"{'–' if b is None else f'{b / p:.2f}'} | {a / p:.2f} |")
    lines += ["", "\"before\": the filter evaluated by pyarrow.compute from the translator's "
              "expression (the evaluation lancenb used until issue 20); \"after\": today's "
              "path (the string compiled per scan; pyarrow.compute where the typed tree models "
              "the whole filter, DataFusion otherwise, as for `starts_with`, which had no "
              "translation before). Both prune pages with the same statistics and read the "
              "other columns only at the matching rows.", "", MARK_END]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="lancenb-bench-sql-")
    try:
        batch = per_batch(args.repeat)
        scan = scans(args.rows, args.repeat, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    block = render(batch, scan, args.rows, args.repeat)
    print(block)
    if args.out:
        replace_section(args.out, block, MARK_START, MARK_END)


if __name__ == "__main__":
    main()
