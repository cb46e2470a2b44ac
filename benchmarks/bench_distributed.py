#!/usr/bin/env python
"""Distributed writes, lancenb vs pylance: ``--workers`` processes each write
``--rows`` rows as fragments (``lancenb.fragment.write_fragments`` /
``lance.fragment.write_fragments``), the driver commits them as one Overwrite
(``LanceDataset.commit``), on a local disk, 2.1 data files for both.

Worker processes (and the driver) are warmed up (library imported, a small dataset
written and read, so JIT compilation and imports are not timed) before the clock starts. Each
worker makes its own data (``id`` int64, ``value`` float64, ``tag`` string of 16
values), untimed; the figures are

* write: wall time from submitting the writes to holding every worker's metadata;
* commit: the driver's ``LanceDataset.commit`` of all fragments;
* rows/s: rows / (write + commit);
* worker write: median seconds one worker spent in ``write_fragments``.

The result is read back (row count, with both libraries) before it is reported.

    python benchmarks/bench_distributed.py [--workers 8] [--rows 1000000] [--out ...]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import multiprocessing as mp
import os
import platform
import shutil
import statistics
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _results import replace_section  # noqa: E402  (benchmarks/ is on sys.path)

MARK_START = "<!-- bench_distributed:start -->"
MARK_END = "<!-- bench_distributed:end -->"
VERSION = "2.1"


def _lib(name: str):
    if name == "pylance":
        import lance

        return lance
    import lancenb

    return lancenb


def _data(k: int, rows: int):
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(k)
    tags = pa.array([f"tag-{i:02d}" for i in range(16)])
    return pa.table({"id": pa.array(np.arange(k * rows, (k + 1) * rows, dtype=np.int64)),
                     "value": pa.array(rng.standard_normal(rows)),
                     "tag": tags.take(pa.array(rng.integers(0, 16, rows)))})


def _warm(name: str) -> None:
    lib = _lib(name)
    d = tempfile.mkdtemp(prefix="bench_distributed_warm")
    try:
        metas = lib.fragment.write_fragments(_data(0, 50_000), d, data_storage_version=VERSION)
        ds = lib.LanceDataset.commit(d, lib.LanceOperation.Overwrite(_data(0, 1).schema, metas))
        ds.to_table()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _ready(barrier):
    barrier.wait(timeout=600)  # every worker holds one: all are started and warm
    return os.getpid()


def _write(name: str, uri: str, k: int, rows: int):
    lib = _lib(name)
    table = _data(k, rows)
    t0 = time.perf_counter()
    metas = lib.fragment.write_fragments(table, uri, data_storage_version=VERSION)
    return time.perf_counter() - t0, metas


def run(name: str, workers: int, rows: int, root: str) -> dict:
    uri = os.path.join(root, name)
    _warm(name)  # the driver too: it unpickles the metadata and commits
    ctx = mp.get_context("spawn")
    with cf.ProcessPoolExecutor(workers, mp_context=ctx, initializer=_warm,
                                initargs=(name,)) as pool:
        with ctx.Manager() as manager:
            barrier = manager.Barrier(workers)
            pids = set(pool.map(_ready, [barrier] * workers))
        assert len(pids) == workers, pids
        t0 = time.perf_counter()
        results = list(pool.map(_write, [name] * workers, [uri] * workers, range(workers),
                                [rows] * workers))
        t1 = time.perf_counter()
        lib = _lib(name)
        frags = [m for _, metas in results for m in metas]
        schema = _data(0, 1).schema
        ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Overwrite(schema, frags))
        t2 = time.perf_counter()
    n = workers * rows
    assert ds.count_rows() == n
    other = _lib("lancenb" if name == "pylance" else "pylance")
    assert other.dataset(uri).count_rows() == n
    size = sum(os.path.getsize(os.path.join(uri, "data", f))
               for f in os.listdir(os.path.join(uri, "data")))
    return {"write": t1 - t0, "commit": t2 - t1, "rows_s": n / (t2 - t0),
            "worker": statistics.median(r[0] for r in results), "files": len(frags),
            "mb": size / 1e6}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    ap.add_argument("--note", default="", help="a line about the run (machine load, ...)")
    args = ap.parse_args(argv)
    root = tempfile.mkdtemp(prefix="bench_distributed")
    try:
        res = {name: run(name, args.workers, args.rows, root) for name in ("lancenb", "pylance")}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    import lance

    intro = (f"{args.workers} spawned worker processes each write {args.rows:,} rows "
             f"(int64 id, float64 value, 16-value string tag) with `fragment.write_fragments`; "
             f"the driver commits all fragments as one `LanceOperation.Overwrite`. Local disk, "
             f"{VERSION} data files, workers warmed up before timing. {os.cpu_count()} CPUs, "
             f"Python {platform.python_version()}, pylance {lance.__version__}. "
             + args.note)
    lines = [MARK_START,
             "## Distributed writes (`benchmarks/bench_distributed.py`)",
             "",
             textwrap.fill(intro.strip(), 88, break_on_hyphens=False),
             "",
             "| library | write (s) | commit (s) | rows/s | worker write, median (s) "
             "| data files | data MB |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, r in res.items():
        lines.append(f"| {name} | {r['write']:.2f} | {r['commit']:.3f} | {r['rows_s']:,.0f} "
                     f"| {r['worker']:.2f} | {r['files']} | {r['mb']:.1f} |")
    a, b = res["lancenb"], res["pylance"]
    lines += ["", f"lancenb / pylance, write + commit time: "
              f"{(a['write'] + a['commit']) / (b['write'] + b['commit']):.2f}x.", MARK_END]
    text = "\n".join(lines)
    print(text)
    if args.out:
        replace_section(args.out, text, MARK_START, MARK_END)


if __name__ == "__main__":
    main()
