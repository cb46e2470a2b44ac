#!/usr/bin/env python
"""Dataset-level benchmark: lancenb vs pylance (both writing the same file version, 2.2
by default as pylance 14; ``--data-storage-version 2.1`` for the other) vs a
Parquet dataset (pyarrow.dataset, zstd), side by side in one run.

Run from the repository root::

    python benchmarks/bench_dataset.py [--rows N] [--repeat K] [--data-storage-version V]
                                       [--out benchmarks/RESULTS.md]

Measured (medians of K runs after one warm-up, same machine, same data):

* write: a new dataset of N rows in files of 256 Ki rows;
* open: opening the latest version;
* scan: the whole table; scan of one column;
* filtered scan: ``x > 0.99`` (1 % of rows) and ``cat = 'c7'`` (low cardinality);
* take: 100 random rows by logical offset;
* count_rows with a filter;
* commit latency: appending a 10-row table (one data file + one commit);
* delete: deleting 1 % of rows (deletion files + commit).

Results are checked against the input on every call (a mismatch aborts). No timing
assertions: this only measures. Figures go between the ``bench_dataset`` markers of
RESULTS.md.
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
import pyarrow.compute as pc
from _results import replace_section  # noqa: E402  (benchmarks/ is on sys.path)

MARK_START = "<!-- bench_dataset:start -->"
MARK_END = "<!-- bench_dataset:end -->"
ROWS_PER_FILE = 256 * 1024
FILE_VERSION = "2.2"  # both Lance writers (--data-storage-version)


def log(msg=""):
    print(msg, file=sys.stderr, flush=True)


def make_table(n: int, seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(n, dtype=np.int64)
    cats = np.array([f"c{i}" for i in range(20)], dtype=object)
    hosts = np.array([f"https://host{i}.example.com/path/" for i in range(50)], dtype=object)
    urls = hosts[rng.integers(0, 50, n)] + rng.integers(0, 10**9, n).astype(str).astype(object)
    return pa.table({
        "id": ids,
        "x": rng.random(n),
        "v": rng.integers(0, 1000, n).astype(np.int32),
        "cat": pa.array(cats[rng.integers(0, 20, n)].tolist(), pa.string()),
        "url": pa.array(urls.tolist(), pa.string()),
    })


class Lancenb:
    name = "lancenb"

    def __init__(self):
        import lancenb

        self.m = lancenb

    def write(self, uri, t):
        self.m.write_dataset(t, uri, max_rows_per_file=ROWS_PER_FILE,
                             data_storage_version=FILE_VERSION)

    def open(self, uri):
        return self.m.dataset(uri)

    def scan(self, ds, columns=None, filter=None):
        return ds.to_table(columns=columns, filter=filter)

    def take(self, ds, idx):
        return ds.take(idx)

    def count(self, ds, filter):
        return ds.count_rows(filter)

    def append(self, uri, t):
        self.m.write_dataset(t, uri, mode="append")

    def delete(self, uri, pred):
        self.m.dataset(uri).delete(pred)


class Pylance(Lancenb):
    name = "pylance"

    def __init__(self):
        import lance

        self.m = lance


class Parquet:
    name = "parquet"

    def write(self, uri, t):
        import pyarrow.dataset as pads

        pads.write_dataset(t, uri, format="parquet", max_rows_per_file=ROWS_PER_FILE,
                           max_rows_per_group=64 * 1024,
                           file_options=pads.ParquetFileFormat().make_write_options(
                               compression="zstd"))

    def open(self, uri):
        import pyarrow.dataset as pads

        return pads.dataset(uri, format="parquet")

    def scan(self, ds, columns=None, filter=None):
        expr = None
        if filter == "x > 0.99":
            expr = pc.field("x") > 0.99
        elif filter == "cat = 'c7'":
            expr = pc.field("cat") == "c7"
        return ds.to_table(columns=columns, filter=expr)

    def take(self, ds, idx):
        return ds.take(pa.array(idx))

    def count(self, ds, filter):
        return ds.count_rows(filter=pc.field("v") < 10)

    append = delete = None


def median_ms(fn, repeat, setup=None):
    times = []
    for i in range(repeat + 1):
        if setup:
            setup(i)
        t0 = time.perf_counter()
        fn(i)
        dt = time.perf_counter() - t0
        if i:  # the first run warms caches (and Numba)
            times.append(dt * 1000)
    return statistics.median(times)


def run(rows: int, repeat: int, tmp: str) -> dict:
    table = make_table(rows)
    rng = np.random.default_rng(7)
    take_idx = np.sort(rng.choice(rows, 100, replace=False))
    small = make_table(10, seed=9)
    want_x = table.filter(pc.greater(table["x"], 0.99))
    want_cat = table.filter(pc.equal(table["cat"], "c7"))
    want_count = int(pc.sum(pc.less(table["v"], 10)).as_py())
    res: dict = {}
    for impl in (Lancenb(), Pylance(), Parquet()):
        r = res[impl.name] = {}
        log(f"-- {impl.name}")
        paths = [os.path.join(tmp, f"{impl.name}-w{i}") for i in range(repeat + 1)]
        r["write"] = median_ms(lambda i, impl=impl, paths=paths: impl.write(paths[i], table),
                               repeat)
        uri = paths[0]
        for p in paths[1:]:
            shutil.rmtree(p, ignore_errors=True)
        r["open"] = median_ms(lambda i, impl=impl, uri=uri: impl.open(uri), repeat)
        ds = impl.open(uri)

        def scan_all(i, impl=impl, ds=ds):
            t = impl.scan(ds)
            assert t.num_rows == rows, "scan mismatch"
            if impl.name != "parquet":  # pyarrow's dataset writer may reorder rows
                assert t["id"].equals(table["id"]), "scan mismatch"
        r["scan"] = median_ms(scan_all, repeat)

        def scan_one(i, impl=impl, ds=ds):
            t = impl.scan(ds, columns=["x"])
            assert t.num_rows == rows
        r["scan 1 column"] = median_ms(scan_one, repeat)

        def scan_x(i, impl=impl, ds=ds):
            t = impl.scan(ds, filter="x > 0.99")
            assert sorted(t["id"].to_pylist()) == want_x["id"].to_pylist(), "filter mismatch"
        r["filter x > 0.99"] = median_ms(scan_x, repeat)

        def scan_cat(i, impl=impl, ds=ds):
            t = impl.scan(ds, filter="cat = 'c7'")
            assert t.num_rows == want_cat.num_rows, "filter mismatch"
        r["filter cat = 'c7'"] = median_ms(scan_cat, repeat)

        def count(i, impl=impl, ds=ds):
            assert impl.count(ds, "v < 10") == want_count
        r["count_rows(v < 10)"] = median_ms(count, repeat)

        def take(i, impl=impl, ds=ds):
            t = impl.take(ds, take_idx)
            if impl.name != "parquet":
                assert t["id"].to_pylist() == take_idx.tolist(), "take mismatch"
        r["take 100"] = median_ms(take, repeat)
        if impl.append is not None:
            r["commit (append 10 rows)"] = median_ms(
                lambda i, impl=impl, uri=uri: impl.append(uri, small), repeat)
            dpaths = [os.path.join(tmp, f"{impl.name}-d{i}") for i in range(repeat + 1)]

            def setup(i, uri=uri, dpaths=dpaths):
                shutil.copytree(uri, dpaths[i])
            r["delete 1%"] = median_ms(
                lambda i, impl=impl, dpaths=dpaths: impl.delete(dpaths[i], "id % 100 = 3"),
                repeat, setup)
            for p in dpaths:
                shutil.rmtree(p, ignore_errors=True)
        r["size MB"] = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(uri)
                           for f in fs) / 1e6
    return res


def render(res: dict, rows: int, repeat: int) -> str:
    ops = list(res["lancenb"].keys())
    lines = [MARK_START, "",
             f"### Datasets ({rows:,} rows, files of {ROWS_PER_FILE:,} rows; medians of "
             f"{repeat} runs; {platform.machine()}, {os.cpu_count()} cores; run "
             f"{time.strftime('%Y-%m-%d')})", "",
             "Columns: id int64 (sequential), x float64 (uniform), v int32 (0..999), cat string "
             "(20 values), url string (~45 B). Both Lance writers write "
             f"{FILE_VERSION} data files.", "",
             "| operation | lancenb ms | pylance ms | parquet ms | lancenb / pylance |",
             "|---|---:|---:|---:|---:|"]
    ratios = []
    for op in ops:
        a = res["lancenb"].get(op)
        b = res["pylance"].get(op)
        c = res["parquet"].get(op)
        ratio = a / b if a and b else None
        if ratio and op != "size MB":
            ratios.append(ratio)

        def f(v):
            return "–" if v is None else (f"{v:.2f}" if v < 100 else f"{v:.0f}")
        lines.append(f"| {op} | {f(a)} | {f(b)} | {f(c)} | "
                     f"{'–' if ratio is None else f'{ratio:.2f}'} |")
    geo = float(np.exp(np.mean(np.log(ratios)))) if ratios else float("nan")
    lines += ["", f"Geometric mean of the time ratios (lancenb / pylance): **{geo:.2f}** "
              f"(below 1 = lancenb faster). Size row: MB on disk.", "", MARK_END]
    return "\n".join(lines)


def write_out(path: str, block: str) -> None:
    replace_section(path, block, MARK_START, MARK_END)


def main(argv=None):
    global FILE_VERSION
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=None)
    ap.add_argument("--data-storage-version", default=FILE_VERSION)
    args = ap.parse_args(argv)
    FILE_VERSION = args.data_storage_version
    tmp = tempfile.mkdtemp(prefix="lancenb-bench-ds-")
    try:
        res = run(args.rows, args.repeat, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    block = render(res, args.rows, args.repeat)
    print(block)
    if args.out:
        write_out(args.out, block)


if __name__ == "__main__":
    main()
