#!/usr/bin/env python
"""Every file version side by side: scan and take on datasets of 0.1, 2.0, 2.1 and
2.2 data files, lancenb vs pylance, in one run.

Run from the repository root::

    python benchmarks/bench_versions.py [--rows N] [--repeat K] [--out benchmarks/RESULTS.md]

For each version pylance writes a dataset of N rows (files of 256 Ki rows, 0.1 in
groups of 1,024 rows); then, medians of K runs after one warm-up:

* scan: the whole table, and one string column;
* take: 100 and 1,000 random rows by logical offset;
* write: the same table as a new dataset of that version (lancenb cannot write 0.1).

Both libraries read the same files, and every result is checked against the input (a
mismatch aborts). No timing assertions: this only measures. Figures go between the
``bench_versions`` markers of RESULTS.md.
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

MARK_START = "<!-- bench_versions:start -->"
MARK_END = "<!-- bench_versions:end -->"
ROWS_PER_FILE = 256 * 1024
VERSIONS = ("0.1", "2.0", "2.1", "2.2")


def log(msg=""):
    print(msg, file=sys.stderr, flush=True)


def make_table(n: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    cats = np.array([f"c{i}" for i in range(20)], dtype=object)
    hosts = np.array([f"https://host{i}.example.com/p/" for i in range(50)], dtype=object)
    urls = hosts[rng.integers(0, 50, n)] + rng.integers(0, 10**9, n).astype(str).astype(object)
    lens = rng.integers(0, 5, n)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    return pa.table({
        "id": np.arange(n, dtype=np.int64),
        "x": rng.random(n),
        "v": rng.integers(0, 1000, n).astype(np.int32),
        "cat": pa.array(cats[rng.integers(0, 20, n)].tolist(), pa.string()),
        "url": pa.array(urls.tolist(), pa.string()),
        "tags": pa.ListArray.from_arrays(
            pa.array(offsets), pa.array(rng.integers(0, 100, int(offsets[-1]), dtype=np.int32))),
    })


def median_ms(fn, repeat: int):
    fn()  # warm-up (also JIT / cache loading)
    times = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), out


def check(got: pa.Table, want: pa.Table, what: str) -> None:
    if not got.equals(want):
        raise SystemExit(f"{what}: result differs from the input")


def run(n: int, repeat: int, versions=VERSIONS) -> list[tuple]:
    import lance

    import lancenb

    table = make_table(n)
    rng = np.random.default_rng(3)
    takes = {k: np.sort(rng.choice(n, k, replace=False)) for k in (100, 1000)}
    root = tempfile.mkdtemp(prefix="bench_versions_")
    rows = []
    try:
        for v in versions:
            path = os.path.join(root, f"ds_{v}")
            kw = {"max_rows_per_group": 1024} if v == "0.1" else {}
            lance.write_dataset(table, path, data_storage_version=v,
                                max_rows_per_file=ROWS_PER_FILE, **kw)
            libs = {"lancenb": lancenb.dataset(path), "pylance": lance.dataset(path)}
            ops = {
                "scan": (lambda ds: ds.to_table(), table),
                "scan url": (lambda ds: ds.to_table(columns=["url"]), table.select(["url"])),
                "take 100": (lambda ds: ds.take(takes[100]), table.take(takes[100])),
                "take 1000": (lambda ds: ds.take(takes[1000]), table.take(takes[1000])),
            }
            for op, (fn, want) in ops.items():
                ms = {}
                for lib, ds in libs.items():
                    ms[lib], got = median_ms(lambda fn=fn, ds=ds: fn(ds), repeat)
                    check(got, want, f"{v} {op} ({lib})")
                rows.append((v, op, ms["lancenb"], ms["pylance"]))
                log(f"{v:4} {op:10} lancenb {ms['lancenb']:9.1f} ms  pylance "
                    f"{ms['pylance']:9.1f} ms  ratio {ms['lancenb'] / ms['pylance']:.2f}")
            if v == "0.1":
                continue
            ms = {}
            for lib, mod in (("lancenb", lancenb), ("pylance", lance)):
                out = os.path.join(root, f"w_{lib}_{v}")

                def write(mod=mod, out=out, v=v):
                    shutil.rmtree(out, ignore_errors=True)
                    mod.write_dataset(table, out, data_storage_version=v,
                                      max_rows_per_file=ROWS_PER_FILE)
                ms[lib], _ = median_ms(write, repeat)
                check(lance.dataset(out).to_table(), table, f"{v} write ({lib})")
            rows.append((v, "write", ms["lancenb"], ms["pylance"]))
            log(f"{v:4} {'write':10} lancenb {ms['lancenb']:9.1f} ms  pylance "
                f"{ms['pylance']:9.1f} ms  ratio {ms['lancenb'] / ms['pylance']:.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return rows


def render(rows, n: int, repeat: int) -> str:
    lines = [MARK_START, "", f"### File versions: datasets of 0.1, 2.0, 2.1 and 2.2 files "
             f"(`bench_versions.py`, {n:,} rows)", "",
             f"pylance writes each dataset; both libraries read the same files. Medians of "
             f"{repeat} runs after a warm-up, ms; ratio = lancenb / pylance (below 1 is "
             f"faster). Columns: int64, float64, int32, a 20-value string, a URL string, "
             f"list<int32>. {platform.machine()}, {os.cpu_count()} cores, "
             f"Python {platform.python_version()}.", "",
             "| version | operation | lancenb ms | pylance ms | ratio |",
             "|---|---|---:|---:|---:|"]
    for v, op, a, b in rows:
        lines.append(f"| {v} | {op} | {a:.1f} | {b:.1f} | {a / b:.2f} |")
    lines += ["", MARK_END]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--versions", default=",".join(VERSIONS))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "RESULTS.md"))
    args = ap.parse_args()
    rows = run(args.rows, args.repeat, args.versions.split(","))
    block = render(rows, args.rows, args.repeat)
    print(block)
    if args.out:
        replace_section(args.out, block, MARK_START, MARK_END)


if __name__ == "__main__":
    main()
