#!/usr/bin/env python
"""Nested-data benchmark: random takes and full scans, lancenb vs pylance (Lance 2.1).

Run from the repository root::

    python benchmarks/bench_nested.py [--scale S] [--repeat K] [--out benchmarks/RESULTS.md]

Files (both written by lancenb, so both readers decode the same bytes): a 768-d
float32 vector column (full-zip), a list<int32> column and a string column
(mini-block), and for scans also a struct, a list of structs and a 128-d vector
column. For each, in one run:

* take of 1, 100 and 1,000 random (sorted, distinct) rows with a reader opened per
  call ("cold": open + initialise + take) and with one reader reused ("warm");
* full scan of the column;

each warmed up once, then repeated K times with lancenb and pylance calls in
alternation (both see the same machine load); medians are reported, with the ratio
lancenb / pylance (below 1 = lancenb faster), and the search cache's memory per
column after the warm takes. Results are checked against the source table on every
lancenb call. No timing assertions: this only measures and reports.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
from _results import replace_section  # noqa: E402  (benchmarks/ is on sys.path)

MARK_START = "<!-- bench_nested:start -->"
MARK_END = "<!-- bench_nested:end -->"
TAKE_SIZES = (1, 100, 1000)


def log(msg: str = "") -> None:
    print(msg, file=sys.stderr, flush=True)


def make_tables(scale: float, seed: int = 7) -> dict[str, pa.Table]:
    rng = np.random.default_rng(seed)
    nv = int(20_000 * scale)
    nl = int(400_000 * scale)
    lens = rng.integers(0, 8, nl)
    offs = np.zeros(nl + 1, np.int32)
    np.cumsum(lens, out=offs[1:])
    items = pa.array(rng.integers(0, 100_000, int(offs[-1]), dtype=np.int32))
    valid = rng.random(nl) > 0.05
    lst = pa.ListArray.from_arrays(pa.array(offs), items, mask=pa.array(~valid))
    words = np.array([f"w{i:04d}" for i in range(5000)])
    strs = pa.array([" ".join(words[rng.integers(0, 5000, int(k))])
                     for k in rng.integers(1, 8, nl)])
    ns = int(200_000 * scale)
    st = pa.StructArray.from_arrays(
        [pa.array(rng.integers(0, 1000, ns)), pa.array(rng.random(ns)),
         pa.array(words[rng.integers(0, 5000, ns)])], names=["a", "b", "c"],
        mask=pa.array(rng.random(ns) < 0.05))
    llens = rng.integers(0, 4, ns)
    loffs = np.zeros(ns + 1, np.int32)
    np.cumsum(llens, out=loffs[1:])
    m = int(loffs[-1])
    ls = pa.ListArray.from_arrays(pa.array(loffs), pa.StructArray.from_arrays(
        [pa.array(rng.integers(0, 50, m, dtype=np.int32)),
         pa.array(words[rng.integers(0, 5000, m)])],
        names=["p", "q"]))
    return {
        "vector768": pa.table({"v": pa.FixedSizeListArray.from_arrays(
            pa.array(rng.standard_normal(nv * 768).astype(np.float32)), 768)}),
        "list_int32": pa.table({"l": lst}),
        "string": pa.table({"s": strs}),
        "vector128": pa.table({"v": pa.FixedSizeListArray.from_arrays(
            pa.array(rng.standard_normal(nv * 5 * 128).astype(np.float32)), 128)}),
        "struct": pa.table({"st": st}),
        "list_struct": pa.table({"ls": ls}),
    }


TAKE_TABLES = ("vector768", "list_int32", "string")


def timed(fns: dict, repeat: int) -> dict:
    """Median seconds of each function, run in alternation (one call of each per
    round) so that both implementations see the same machine load."""
    for fn in fns.values():
        fn()  # warm-up
    times = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def bench(tables, tmp, repeat, seed):
    import lance.file as pl

    import lancenb.file as nb

    rng = np.random.default_rng(seed)
    out = {"take": {}, "scan": {}, "cache": {}, "sizes": {}}
    for name, t in tables.items():
        path = os.path.join(tmp, f"{name}.lance")
        with nb.LanceFileWriter(path, t.schema, version="2.1") as w:
            w.write_batch(t)
        out["sizes"][name] = (t.num_rows, os.path.getsize(path))
        log(f"{name}: {t.num_rows} rows, {os.path.getsize(path) / 1e6:.1f} MB")
        readers = {"lancenb": nb.LanceFileReader, "pylance": pl.LanceFileReader}
        got = nb.LanceFileReader(path).read_all().to_table()
        if not got.equals(t):
            raise SystemExit(f"{name}: lancenb read back differs")
        got = timed({impl: lambda R=R, path=path: R(path).read_all().to_table()
                     for impl, R in readers.items()}, repeat)
        for impl, v in got.items():
            out["scan"][(name, impl)] = v
        if name not in TAKE_TABLES:
            continue
        for k in TAKE_SIZES:
            idx = np.sort(rng.choice(t.num_rows, k, replace=False))
            want = t.take(idx)
            if not nb.LanceFileReader(path).take_rows(idx).to_table().equals(want):
                raise SystemExit(f"{name}: lancenb take of {k} differs")
            got = timed({impl: lambda R=R, idx=idx, path=path: R(path).take_rows(idx)
                         .to_table() for impl, R in readers.items()}, repeat)
            for impl, v in got.items():
                out["take"][(name, k, impl, "cold")] = v
            warm = {impl: R(path) for impl, R in readers.items()}
            got = timed({impl: lambda w=w, idx=idx: w.take_rows(idx).to_table()
                         for impl, w in warm.items()}, repeat)
            for impl, v in got.items():
                out["take"][(name, k, impl, "warm")] = v
            out["cache"][name] = warm["lancenb"].search_cache_memory()
    return out


def fmt_ms(v: float) -> str:
    ms = v * 1e3
    return f"{ms:.2f}" if ms < 10 else f"{ms:.1f}" if ms < 100 else f"{ms:.0f}"


def render(args, res, elapsed) -> str:
    lines = ["### Nested data: takes and scans (bench_nested.py)", "",
             f"{_dt.date.today().isoformat()}, {platform.machine()}, "
             f"{os.cpu_count()} CPUs, Python {platform.python_version()}, "
             f"`--scale {args.scale} --repeat {args.repeat}`, {elapsed:.0f} s. "
             "Lance 2.1 files written by lancenb, read by both; medians in ms; "
             "ratio = lancenb / pylance (below 1: lancenb faster); the two run in "
             "alternation. Cold = open the file, initialise and take; warm = one reader "
             "reused.", "",
             "| column | rows | rows taken | lancenb cold | pylance cold | ratio | "
             "lancenb warm | pylance warm | ratio |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name in TAKE_TABLES:
        for k in TAKE_SIZES:
            tk = res["take"]
            c = [tk[(name, k, i, "cold")] for i in ("lancenb", "pylance")]
            w = [tk[(name, k, i, "warm")] for i in ("lancenb", "pylance")]
            lines.append(f"| {name} | {res['sizes'][name][0]:,} | {k:,} | {fmt_ms(c[0])} | "
                         f"{fmt_ms(c[1])} | {c[0] / c[1]:.2f} | {fmt_ms(w[0])} | "
                         f"{fmt_ms(w[1])} | {w[0] / w[1]:.2f} |")
    lines += ["", "Full scans (open + read_all):", "",
              "| column | rows | file MB | lancenb | pylance | ratio |",
              "|---|---:|---:|---:|---:|---:|"]
    for name, (rows, size) in res["sizes"].items():
        a, b = res["scan"][(name, "lancenb")], res["scan"][(name, "pylance")]
        lines.append(f"| {name} | {rows:,} | {size / 1e6:.1f} | {fmt_ms(a)} | {fmt_ms(b)} | "
                     f"{a / b:.2f} |")
    lines += ["", "Search cache after the warm takes (bytes per column): " + ", ".join(
        f"{name}: {mem or 'nothing (full-zip pages need no state)'}"
        for name, mem in res["cache"].items()), ""]
    return "\n".join(lines) + "\n"


def write_out(path, report):
    replace_section(path, f"{MARK_START}\n{report}{MARK_END}", MARK_START, MARK_END)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="row-count multiplier")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None, help="markdown file to update between the markers")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    tables = make_tables(args.scale)
    with tempfile.TemporaryDirectory() as tmp:
        res = bench(tables, tmp, args.repeat, args.seed)
    report = render(args, res, time.perf_counter() - t0)
    print(report)
    if args.out:
        write_out(args.out, report)


if __name__ == "__main__":
    main()
