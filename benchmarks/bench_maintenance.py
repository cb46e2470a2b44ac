#!/usr/bin/env python
"""Memory and time of the dataset operations that must stay bounded:

* compaction of N-row datasets in N/10,000 fragments (lancenb vs pylance), at two
  sizes, to show the peak does not grow with the dataset;
* a streaming write of a generated dataset larger than the page budget, at two
  sizes (lancenb vs pylance), to show memory does not follow the input size.

Each measurement runs in a fresh subprocess; "peak MB" is the growth of the peak
resident set (ru_maxrss) over the process's own size after imports and set-up.

    python benchmarks/bench_maintenance.py [--out benchmarks/RESULTS.md]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

from _results import replace_section  # noqa: E402  (benchmarks/ is on sys.path)

MARK_START = "<!-- bench_maintenance:start -->"
MARK_END = "<!-- bench_maintenance:end -->"

SETUP = textwrap.dedent("""
    import sys, numpy as np, pyarrow as pa, lance
    uri, rows = sys.argv[1], int(sys.argv[2])
    def gen(n, chunk=10_000):
        for lo in range(0, n, chunk):
            ids = np.arange(lo, min(n, lo + chunk), dtype=np.int64)
            yield pa.record_batch({"id": ids, "x": np.sin(ids), "s": pa.array(
                [f"row-{i}-" + "p" * (i % 40) for i in ids.tolist()])})
    schema = next(gen(1)).schema
    lance.write_dataset(pa.RecordBatchReader.from_batches(schema, gen(rows)), uri,
                        max_rows_per_file=10_000, data_storage_version="2.1")
    lance.dataset(uri).delete("id % 10 = 0")
""")

COMPACT = textwrap.dedent("""
    import sys, time, resource, json
    uri, lib = sys.argv[1], sys.argv[2]
    if lib == "lancenb":
        import lancenb as L
    else:
        import lance as L
    ds = L.dataset(uri)
    n = ds.count_rows()
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    ds.optimize.compact_files(target_rows_per_fragment=1024 * 1024)
    dt = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    ds2 = L.dataset(uri)
    assert ds2.count_rows() == n, (ds2.count_rows(), n)
    print(json.dumps({"s": dt, "peak_mb": (peak - base) / 1024,
                      "fragments": len(ds2.get_fragments())}))
""")

WRITE = textwrap.dedent("""
    import sys, time, resource, json
    import numpy as np, pyarrow as pa
    uri, lib, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if lib == "lancenb":
        import lancenb as L
    else:
        import lance as L
    def gen(n, chunk=50_000):
        for lo in range(0, n, chunk):
            ids = np.arange(lo, min(n, lo + chunk), dtype=np.int64)
            yield pa.record_batch({"id": ids, "x": np.cos(ids),
                                   "s": pa.array(np.char.add("payload-", ids.astype(str)))})
    schema = next(gen(1)).schema
    import gc; gc.collect()
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    L.write_dataset(pa.RecordBatchReader.from_batches(schema, gen(rows)), uri,
                    data_storage_version="2.1")
    dt = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"s": dt, "peak_mb": (peak - base) / 1024}))
""")


def run(code, *args):
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                         text=True, timeout=3600)
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def dir_mb(p):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(p) for f in fs) / 1e6


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--compact-rows", type=int, nargs="+", default=[1_000_000, 2_000_000])
    ap.add_argument("--write-rows", type=int, nargs="+", default=[5_000_000, 20_000_000])
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="lancenb-bench-maint-")
    lines = [MARK_START, "", f"### Bounded-memory operations (run {time.strftime('%Y-%m-%d')})",
             "", "Peak MB = growth of the peak RSS during the operation, each in a fresh "
             "process.", "",
             "| operation | rows | lancenb s | lancenb peak MB | pylance s | pylance peak MB |",
             "|---|---:|---:|---:|---:|---:|"]
    try:
        for rows in args.compact_rows:
            src = os.path.join(tmp, f"src{rows}")
            run(SETUP + "\nprint('{}')\n", src, rows)
            res = {}
            for lib in ("lancenb", "pylance"):
                work = os.path.join(tmp, f"{lib}{rows}")
                shutil.copytree(src, work)
                res[lib] = run(COMPACT, work, lib)
                shutil.rmtree(work)
            shutil.rmtree(src)
            print(rows, res, file=sys.stderr)
            lines.append(f"| compact {rows // 10_000} fragments (10% deleted) | {rows:,} | "
                         f"{res['lancenb']['s']:.2f} | {res['lancenb']['peak_mb']:.0f} | "
                         f"{res['pylance']['s']:.2f} | {res['pylance']['peak_mb']:.0f} |")
        for rows in args.write_rows:
            res = {}
            for lib in ("lancenb", "pylance"):
                uri = os.path.join(tmp, f"w{lib}{rows}")
                res[lib] = run(WRITE, uri, lib, rows)
                res[lib]["mb"] = dir_mb(uri)
                shutil.rmtree(uri)
            print(rows, res, file=sys.stderr)
            lines.append(f"| streaming write (~{res['lancenb']['mb']:.0f} MB on disk) | "
                         f"{rows:,} | {res['lancenb']['s']:.2f} | "
                         f"{res['lancenb']['peak_mb']:.0f} | {res['pylance']['s']:.2f} | "
                         f"{res['pylance']['peak_mb']:.0f} |")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    lines += ["", MARK_END]
    block = "\n".join(lines)
    print(block)
    if args.out:
        replace_section(args.out, block, MARK_START, MARK_END)


if __name__ == "__main__":
    main()
