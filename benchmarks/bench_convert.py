#!/usr/bin/env python
"""``lancenb convert`` on about 1 GB of generated Parquet: time, throughput, peak RSS.

Run from the repository root::

    python benchmarks/bench_convert.py [--gb 1.0] [--out benchmarks/RESULTS.md] [--keep DIR]

It writes a Parquet file (snappy, row groups of 1M rows: ids, zipf user ids,
timestamps, a low-cardinality category, random text of 10-60 bytes, prices with
nulls) until the file reaches ``--gb`` GB, then runs ``python -m lancenb.tools.cli convert
SRC DST`` in a fresh subprocess and reports its wall time, peak RSS (the child's
``ru_maxrss``) and the progress lines it printed; then checks the row count of the
result. Figures go between the bench_convert markers at the end of RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _results import replace_section  # noqa: E402  (benchmarks/ is on sys.path)

MARK_START = "<!-- bench_convert:start -->"
MARK_END = "<!-- bench_convert:end -->"
ROWS_PER_GROUP = 1_000_000
CATS = np.array(["books", "games", "music", "garden", "toys", "tools", "kitchen", "sports"])
ALPHABET = np.frombuffer(b"etaoin shrdlucmfwypvbgkqjxz     ", np.uint8)


def _chunk(start: int, n: int, rng) -> pa.Table:
    lens = rng.integers(10, 61, n)
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(lens, out=offsets[1:])
    data = ALPHABET[rng.integers(0, len(ALPHABET), int(offsets[-1]))]
    text = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))
    return pa.table({
        "id": pa.array(np.arange(start, start + n, dtype=np.int64)),
        "user_id": pa.array((rng.zipf(1.5, n) % 50_000).astype(np.int32)),
        "ts": pa.array(1_700_000_000_000_000 + (start + np.arange(n)) * 1_000_000 // 3,
                       pa.timestamp("us", "UTC")),
        "category": pa.array(CATS[rng.integers(0, len(CATS), n)]),
        "text": text,
        "price": pa.array(np.round(rng.gamma(2.0, 20.0, n), 2), mask=rng.random(n) < 0.05),
    })


def generate(path: str, gb: float) -> tuple[int, int]:
    rng = np.random.default_rng(42)
    rows = 0
    with pq.ParquetWriter(path, _chunk(0, 1, rng).schema, compression="snappy") as w:
        while True:
            w.write_table(_chunk(rows, ROWS_PER_GROUP, rng), row_group_size=ROWS_PER_GROUP)
            rows += ROWS_PER_GROUP
            if os.path.getsize(path) >= gb * 1e9:
                break
    return rows, os.path.getsize(path)


def _dir_size(path: str) -> int:
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--out", default=None, help="update this RESULTS.md")
    ap.add_argument("--keep", default=None, help="work in this directory and keep the files")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="bench_convert_")
    os.makedirs(work, exist_ok=True)
    src = os.path.join(work, "input.parquet")
    dst = os.path.join(work, "output.lance")
    t0 = time.perf_counter()
    rows, src_bytes = generate(src, args.gb)
    gen_s = time.perf_counter() - t0
    print(f"generated {rows:,} rows, {src_bytes / 1e9:.2f} GB of Parquet in {gen_s:.0f} s")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "lancenb.tools.cli", "convert", src, dst,
                           "--mode", "overwrite"], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # Linux: KiB
    if proc.returncode:
        print(proc.stdout, proc.stderr, file=sys.stderr)
        return 1
    import lancenb

    out_rows = lancenb.dataset(dst).count_rows()
    assert out_rows == rows, (out_rows, rows)
    lines = proc.stderr.strip().splitlines()
    shown = lines if len(lines) <= 4 else lines[:3] + ["..."] + lines[-1:]
    report = [
        MARK_START,
        "## Converting Parquet to Lance (`benchmarks/bench_convert.py`)",
        "",
        f"`lancenb convert input.parquet output.lance` in a fresh subprocess; "
        f"{platform.machine()}, {os.cpu_count()} cores (shared); "
        f"run {_dt.date.today().isoformat()}.",
        "",
        "| input | rows | Lance output | wall time | throughput | peak RSS |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        f"| {src_bytes / 1e9:.2f} GB Parquet (snappy, 6 columns) | {rows:,} | "
        f"{_dir_size(dst) / 1e9:.2f} GB | {wall:.1f} s | {src_bytes / 1e6 / wall:.0f} MB/s of "
        f"Parquet | {peak / 1e6:.0f} MB |",
        "",
        "Peak RSS is the whole converter process (Python, pyarrow, Numba and the compiled "
        "kernels included); the input is read in batches of 65,536 rows and data files are "
        "written as they fill. Progress lines printed:",
        "",
        "```",
        *shown,
        "```",
        MARK_END,
    ]
    text = "\n".join(report)
    print(text)
    if args.out:
        replace_section(args.out, text, MARK_START, MARK_END)
    if not args.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
