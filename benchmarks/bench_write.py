#!/usr/bin/env python
"""Write time per table: lancenb's ``LanceFileWriter`` vs pylance's (both 2.1), and
where lancenb's write time goes.

    python benchmarks/bench_write.py [--rows N] [--repeat K] [--out benchmarks/RESULTS.md]
                                     [--tables a,b] [--no-profile]

Tables: the bench_file tables (ints, floats, strings, mixed), temporal, nullable, lists,
structs, lineitem (from bench_tables, 0.6 N rows) and wide (2,000 float64 columns x
2,000 rows). Each table is written by both libraries in turn within every repetition
(medians of K after a warm-up). File sizes are compared. Then one profiled lancenb write
per table splits its time by where it is spent (cProfile's own time per function,
grouped): Numba kernels, strategy choice and statistics (lancenb/encodings/strategy.py,
kernels/stats.py), other Python in lancenb, numpy/pyarrow calls (copies, reductions),
and file writes. No timing assertions; figures go between the ``bench_write`` markers of
RESULTS.md.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
from _results import replace_section  # noqa: E402  (benchmarks/ is on sys.path)

MARK_START = "<!-- bench_write:start -->"
MARK_END = "<!-- bench_write:end -->"


def make_tables(rows: int) -> dict[str, pa.Table]:
    from bench_file import make_tables as file_tables
    from bench_tables import make_tables as shape_tables

    t = file_tables(rows)
    n = rows
    rng = np.random.default_rng(1)
    t["temporal"] = pa.table({
        "ts": pa.array(1_700_000_000_000_000 + np.cumsum(rng.integers(0, 2_000_000, n)),
                       pa.timestamp("us")),
        "d": pa.array(rng.integers(18000, 20000, n).astype(np.int32), pa.date32()),
        "t": pa.array(rng.integers(0, 86_400_000_000, n), pa.time64("us"))})
    t["nullable"] = pa.table({"a": pa.array(rng.random(n), mask=rng.random(n) < .2),
                              "b": pa.array(rng.integers(0, 10**6, n),
                                            mask=rng.random(n) < .5)})
    off = np.concatenate([[0], np.cumsum(rng.integers(0, 6, n))]).astype(np.int32)
    t["lists"] = pa.table({"l": pa.ListArray.from_arrays(
        pa.array(off), pa.array(rng.integers(0, 1000, off[-1]).astype(np.int32)))})
    t["structs"] = pa.table({"s": pa.StructArray.from_arrays(
        [pa.array(rng.random(n)), pa.array(rng.integers(0, 100, n))], ["x", "y"])})
    t["lineitem"] = shape_tables(int(rows * 0.6))["lineitem"]
    t["wide"] = pa.table({f"c{i}": pa.array(rng.random(2000)) for i in range(2000)})
    return t


def _writers():
    import lance.file

    from lancenb.file import LanceFileWriter

    def nb(path, tab):
        with LanceFileWriter(path, tab.schema, version="2.1") as w:
            w.write_batch(tab)

    def seq(path, tab):  # every page encoded on the calling thread (as before the pool)
        from lancenb.file import v2_1_write as writer

        old, writer.PARALLEL_MIN_BYTES = writer.PARALLEL_MIN_BYTES, 2**62
        try:
            nb(path, tab)
        finally:
            writer.PARALLEL_MIN_BYTES = old

    def pl(path, tab):
        w = lance.file.LanceFileWriter(path, tab.schema, version="2.1")
        w.write_batch(tab)
        w.close()

    return nb, seq, pl


_GROUPS = (("kernels", "Numba kernels"), ("strategy", "strategy + statistics"),
           ("lancenb", "other lancenb Python"), ("numpy", "numpy/pyarrow calls"),
           ("io", "file writes"), ("protobuf", "protobuf"), ("other", "other"))


def _group(key) -> str:
    filename, _, func = key
    if filename.endswith(("strategy.py", os.path.join("kernels", "stats.py"))):
        return "strategy"
    if os.sep + "kernels" + os.sep in filename or "numba" in filename:
        return "kernels"
    if os.sep + "lancenb" + os.sep in filename:
        return "lancenb"
    if "write" in func and filename == "~":
        return "io"
    if filename == "~" or "numpy" in filename or "pyarrow" in filename:
        return "numpy"
    if "protobuf" in filename or "_pb2" in filename:
        return "protobuf"
    return "other"


def profile(fn) -> dict[str, float]:
    pr = cProfile.Profile()
    pr.enable()
    fn()
    pr.disable()
    out = dict.fromkeys((g for g, _ in _GROUPS), 0.0)
    for key, (_, _, tt, _, _) in pstats.Stats(pr).stats.items():
        out[_group(key)] += tt
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tables", default="")
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-profile", action="store_true")
    args = ap.parse_args()
    tables = make_tables(args.rows)
    if args.tables:
        tables = {k: tables[k] for k in args.tables.split(",")}
    nb, seq, pl = _writers()
    rows = []
    tmp = tempfile.mkdtemp(prefix="bench_write")
    a, b = os.path.join(tmp, "nb.lance"), os.path.join(tmp, "pl.lance")
    for name, tab in tables.items():
        nb(a, tab)
        pl(b, tab)
        ta, tb, ts = [], [], []
        for _ in range(args.repeat):
            s = time.perf_counter()
            seq(a, tab)
            ts.append(time.perf_counter() - s)
            s = time.perf_counter()
            nb(a, tab)
            ta.append(time.perf_counter() - s)
            s = time.perf_counter()
            pl(b, tab)
            tb.append(time.perf_counter() - s)
        # profiled on the calling thread (cProfile sees only the thread it runs on)
        prof = None if args.no_profile else profile(lambda t=tab: seq(a, t))
        rows.append((name, tab.nbytes, statistics.median(ts), statistics.median(ta),
                     statistics.median(tb), os.path.getsize(a), os.path.getsize(b), prof))
        r = rows[-1]
        print(f"{name:10s} sequential {r[2]:.3f}s lancenb {r[3]:.3f}s pylance {r[4]:.3f}s "
              f"ratio {r[3] / r[4]:.2f} size {r[5]} vs {r[6]}", file=sys.stderr, flush=True)
    lines = [MARK_START, "## Write time per table (bench_write.py)", "",
             f"{platform.machine()}, {os.cpu_count()} cores, {args.rows:,} rows (lineitem "
             f"0.6x, wide 2,000 x 2,000), `LanceFileWriter` 2.1, medians of {args.repeat} "
             f"interleaved runs in one process.", "",
             "before: every page encoded on the writing thread (`PARALLEL_MIN_BYTES` "
             "set out of reach); after: columns encoded on the encoder pool.", "",
             "| table | MB | before s | after s | pylance s | before / pylance | "
             "after / pylance | lancenb bytes | pylance bytes |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, nbytes, w, x, y, sa, sb, _ in rows:
        lines.append(f"| {name} | {nbytes / 1e6:.0f} | {w:.3f} | {x:.3f} | {y:.3f} | "
                     f"{w / y:.2f} | {x / y:.2f} | {sa:,} | {sb:,} |")
    if not args.no_profile:
        lines += ["", "Where one lancenb write spends its time (profiled, so slower, with every "
                  "page encoded on the writing thread), seconds of cProfile's own time per "
                  "group:", "",
                  "| table | " + " | ".join(label for _, label in _GROUPS) + " |",
                  "|---|" + "---:|" * len(_GROUPS)]
        for name, *_, prof in rows:
            lines.append(f"| {name} | " + " | ".join(f"{prof[g]:.3f}" for g, _ in _GROUPS)
                         + " |")
    lines.append(MARK_END)
    block = "\n".join(lines)
    print(block)
    if args.out:
        replace_section(args.out, block, MARK_START, MARK_END)


if __name__ == "__main__":
    main()
