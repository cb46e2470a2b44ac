#!/usr/bin/env python
"""IVF_HNSW_SQ (or another vector index) build: time and peak memory, lancenb vs
pylance in one run.

Run from the repository root::

    python benchmarks/bench_vector_build_mem.py [--rows N] [--parts P] [--kind KIND]
        [--data DIR] [--libs lancenb,pylance] [--trace]

The data set is bench_vector's clustered N x 128 float32 (written once by pylance under
``--data``). Each build runs in a fresh child process on a hard-linked copy of the data
set (the build only adds files): the child opens the data set, resets its peak resident
memory (``/proc/self/clear_refs``, else the baseline is subtracted), builds, and reports
the wall time and the peak RSS above that post-open baseline (VmHWM - VmRSS before).
lancenb's numba kernels come from their on-disk cache, as in any process after the first.
``--trace``: a thread samples the RSS every 10 ms and reports where the main thread was
(its innermost lancenb frames) at the peak, and the highest RSS in each phase (the
build's own functions on the stack), to find which build phase holds it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time

from _memory import peak_since, proc_status, reset_peak  # noqa: E402  (benchmarks/ is on sys.path)

HERE = os.path.dirname(os.path.abspath(__file__))


class _Sampler(threading.Thread):
    """The highest RSS seen and the main thread's lancenb frames at that moment."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak, self.where, self.stop = 0, "", False
        self.main = threading.main_thread().ident
        self.phases: dict = {}  # innermost lancenb frame (function) -> highest RSS

    def run(self):
        while not self.stop:
            rss = proc_status("VmRSS")
            frame = sys._current_frames().get(self.main)
            where = []
            while frame is not None:
                code = frame.f_code
                if "lancenb" in code.co_filename or "kernels" in code.co_filename:
                    where.append(f"{os.path.basename(code.co_filename)}:"
                                 f"{code.co_name}:{frame.f_lineno}")
                frame = frame.f_back
            steps = [w.split(":")[1] for w in where if w.startswith(("build.py", "hnsw.py"))]
            if steps:  # the build's own functions, outermost first
                key = ">".join(steps[::-1][1:4]) or steps[0]
                self.phases[key] = max(self.phases.get(key, 0), rss)
            if rss > self.peak:
                self.peak, self.where = rss, " < ".join(where[:6])
            time.sleep(0.01)


def child(lib: str, uri: str, kind: str, parts: int, trace: bool) -> None:
    if lib == "lancenb":
        import lancenb as lance
    else:
        import lance
    ds = lance.dataset(uri)
    ds.count_rows()
    base = reset_peak()  # (VmHWM from here)
    sampler = _Sampler()
    if trace:
        sampler.start()
    t = time.perf_counter()
    extra = {"num_sub_vectors": 16} if kind.endswith("PQ") else {}  # (as bench_vector_curve)
    ds.create_index("vector", kind, num_partitions=parts, metric="l2", **extra)
    wall = time.perf_counter() - t
    sampler.stop = True
    print(json.dumps({"seconds": wall, "peak_mb": peak_since(base) / 2**20,
                      "base_mb": base / 2**20,
                      "traced_mb": (sampler.peak - base) / 2**20 if trace else None,
                      "where": sampler.where,
                      "phases": {k: round((v - base) / 2**20) for k, v in
                                 sampler.phases.items()}}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--parts", type=int, default=0, help="(default sqrt(rows)/~4: "
                    "100 at 200k, 1000 at 1M as the other benchmarks)")
    ap.add_argument("--kind", default="IVF_HNSW_SQ")
    ap.add_argument("--data", default="/tmp/lancenb-bench-vector")
    ap.add_argument("--libs", default="lancenb,pylance")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--trace", action="store_true")
    args = ap.parse_args()
    sys.path.insert(0, HERE)
    from bench_vector import dataset

    parts = args.parts or (1000 if args.rows >= 1_000_000 else max(1, args.rows // 2000))
    src = dataset(args.data, args.rows, args.dim)
    for _ in range(args.repeat):
        for lib in args.libs.split(","):
            work = f"{src}_build_{lib}"
            shutil.rmtree(work, ignore_errors=True)
            subprocess.run(["cp", "-al", src, work], check=True)
            try:
                out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child",
                                      lib, work, args.kind, str(parts),
                                      "1" if args.trace else "0"],
                                     check=True, capture_output=True, text=True)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            res = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{args.rows} x {args.dim} {args.kind} parts={parts} {lib}: "
                  f"{res['seconds']:.1f} s, peak {res['peak_mb']:.0f} MB above "
                  f"{res['base_mb']:.0f} MB" +
                  (f" (sampled {res['traced_mb']:.0f} MB at {res['where']})"
                   if args.trace else ""), flush=True)
            if args.trace:
                print("  highest RSS (MB above the baseline) by innermost lancenb "
                      "function: " + ", ".join(f"{k} {v}" for k, v in
                                               res["phases"].items()), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6] == "1")
    else:
        main()
