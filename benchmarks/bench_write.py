#!/usr/bin/env python
"""Write time and write memory per table: lancenb vs pylance, optionally vs a "before"
tree of lancenb, side by side in one run.

    python benchmarks/bench_write.py [--rows N] [--repeat K] [--version 2.2]
                                     [--mode file|dataset] [--tables a,b]
                                     [--before TREE] [--memory] [--profile]
                                     [--out benchmarks/RESULTS.md]

Tables: the bench_file tables (ints, floats, strings, mixed), temporal, nullable, lists,
structs, lineitem (from bench_tables, 0.6 N rows) and wide (2,000 float64 columns x
2,000 rows). ``--mode file`` writes one file with ``LanceFileWriter`` (both libraries);
``--mode dataset`` writes a new dataset with ``write_dataset`` (``data_storage_version``
= ``--version``). Each implementation runs in its own worker process (lancenb from this
tree; with ``--before``, lancenb from that tree too; pylance), the workers taking turns
table by table and repetition by repetition (medians of K after a warm-up): wall time
and the worker's CPU time (``time.process_time``: all its threads) per write. Sizes
compared. ``--memory``: peak RSS growth of one write per table and implementation, each
in a fresh process (after a small warm-up write of the same table, the kernel peak
marker is reset through ``/proc/self/clear_refs``; Linux only). ``--profile``: one
profiled lancenb write per table split by where its time goes (cProfile's own time,
grouped: kernels, strategy and statistics, other lancenb Python, numpy/pyarrow, file
writes, protobuf). No timing assertions; figures go between the ``bench_write`` markers
of RESULTS.md.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
from _results import replace_section  # noqa: E402  (benchmarks/ is on sys.path)

MARK_START = "<!-- bench_write:start -->"
MARK_END = "<!-- bench_write:end -->"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def make_tables(rows: int, names=None) -> dict[str, pa.Table]:
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
    if names is None or "lineitem" in names:
        t["lineitem"] = shape_tables(int(rows * 0.6))["lineitem"]
    t["wide"] = pa.table({f"c{i}": pa.array(rng.random(2000)) for i in range(2000)})
    return {k: v for k, v in t.items() if names is None or k in names}


# -- the writes (run inside a worker) ------------------------------------------------

def _write_fn(impl: str, mode: str, version: str):
    if impl == "pl":
        import lance

        if mode == "file":
            def write(path, tab):
                w = lance.file.LanceFileWriter(path, tab.schema, version=version)
                w.write_batch(tab)
                w.close()
        else:
            def write(path, tab):
                lance.write_dataset(tab, path, data_storage_version=version)
        return write
    if mode == "file":
        from lancenb.file import LanceFileWriter

        def write(path, tab):
            with LanceFileWriter(path, tab.schema, version=version) as w:
                w.write_batch(tab)
    else:
        import lancenb

        def write(path, tab):
            lancenb.write_dataset(tab, path, data_storage_version=version)
    return write


def _size(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def _remove(path: str) -> None:
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


def serve(args) -> None:
    """Worker: one JSON request per stdin line, one JSON answer per stdout line."""
    tables = make_tables(args.rows, args.tables.split(",") if args.tables else None)
    write = _write_fn(args.impl, args.mode, args.version)
    tmp = tempfile.mkdtemp(prefix="bench_write_w")
    path = os.path.join(tmp, "out.lance")
    print(json.dumps({"ready": {k: v.nbytes for k, v in tables.items()}}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        tab = tables[req["table"]]
        _remove(path)
        gc.collect()
        if req.get("profile"):
            out = profile(lambda t=tab: write(path, t))
        else:
            s, c = time.perf_counter(), time.process_time()
            write(path, tab)
            out = {"wall": time.perf_counter() - s, "cpu": time.process_time() - c,
                   "size": _size(path)}
        print(json.dumps(out), flush=True)
    shutil.rmtree(tmp, ignore_errors=True)


def _status_kb(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {key} in /proc/self/status")


def peak(args) -> None:
    """Fresh process: peak RSS growth (bytes) of one write of ``args.table``."""
    tab = make_tables(args.rows, [args.table])[args.table]
    write = _write_fn(args.impl, args.mode, args.version)
    tmp = tempfile.mkdtemp(prefix="bench_write_m")
    path = os.path.join(tmp, "out.lance")
    write(path, tab.slice(0, min(len(tab), 2048)))  # code and caches loaded
    _remove(path)
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
    base = _status_kb("VmRSS")
    write(path, tab)
    print(json.dumps({"peak": (_status_kb("VmHWM") - base) * 1024}), flush=True)
    shutil.rmtree(tmp, ignore_errors=True)


_GROUPS = (("kernels", "Numba kernels"), ("strategy", "strategy + statistics"),
           ("lancenb", "other lancenb Python"), ("numpy", "numpy/pyarrow calls"),
           ("io", "file writes"), ("protobuf", "protobuf"), ("other", "other"))


def _group(key) -> str:
    filename, _, func = key
    if filename.endswith(("strategy.py", "plainpage.py", os.path.join("kernels", "stats.py"))):
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
    pr = cProfile.Profile(time.process_time)
    pr.enable()
    fn()
    pr.disable()
    out = dict.fromkeys((g for g, _ in _GROUPS), 0.0)
    for key, (_, _, tt, _, _) in pstats.Stats(pr).stats.items():
        out[_group(key)] += tt
    return out


# -- the driver ----------------------------------------------------------------------

class Worker:
    def __init__(self, tree: str, impl: str, args, extra=()):
        env = dict(os.environ, PYTHONPATH=tree)
        cmd = [sys.executable, os.path.abspath(__file__), "--serve", "--impl", impl,
               "--rows", str(args.rows), "--mode", args.mode, "--version", args.version,
               *extra]
        if args.tables:
            cmd += ["--tables", args.tables]
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  env=env, text=True)
        self.ready = json.loads(self.p.stdout.readline())["ready"]

    def ask(self, **req) -> dict:
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait()


def _peak(tree: str, impl: str, table: str, args) -> int:
    env = dict(os.environ, PYTHONPATH=tree)
    cmd = [sys.executable, os.path.abspath(__file__), "--peak", "--impl", impl, "--table",
           table, "--rows", str(args.rows), "--mode", args.mode, "--version", args.version]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["peak"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--version", default="2.2")
    ap.add_argument("--mode", choices=("file", "dataset"), default="file")
    ap.add_argument("--tables", default="")
    ap.add_argument("--before", default=None, help="a tree whose lancenb is 'before'")
    ap.add_argument("--memory", action="store_true")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--peak", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--impl", default="nb", help=argparse.SUPPRESS)
    ap.add_argument("--table", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        return serve(args)
    if args.peak:
        return peak(args)
    impls = [("after", ROOT, "nb"), ("pylance", ROOT, "pl")]
    if args.before:
        impls.insert(0, ("before", os.path.abspath(args.before), "nb"))
    workers = {name: Worker(tree, impl, args) for name, tree, impl in impls}
    names = workers["after"].ready
    res: dict = {}
    try:
        for name in names:
            for w in workers.values():
                w.ask(table=name)  # warm-up
            runs = {k: [] for k in workers}
            for _ in range(args.repeat):
                for k, w in workers.items():
                    runs[k].append(w.ask(table=name))
            res[name] = {k: {"wall": statistics.median(r["wall"] for r in v),
                             "cpu": statistics.median(r["cpu"] for r in v),
                             "size": v[-1]["size"]} for k, v in runs.items()}
            if args.profile:
                res[name]["profile"] = workers["after"].ask(table=name, profile=True)
            if args.memory:
                for label, tree, impl in impls:
                    res[name][label]["peak"] = _peak(tree, impl, name, args)
            r = res[name]
            print(f"{name:9s} " + " ".join(
                f"{k} {r[k]['wall']:.3f}s/{r[k]['cpu']:.3f}cpu" for k in workers)
                + f" after/pylance {r['after']['wall'] / r['pylance']['wall']:.2f}",
                file=sys.stderr, flush=True)
    finally:
        for w in workers.values():
            w.close()
    for name in res:
        res[name]["nbytes"] = names[name]
    block = render(res, args, list(workers))
    print(block)
    if args.out:
        replace_section(args.out, block, MARK_START, MARK_END)


def render(res: dict, args, labels: list[str]) -> str:
    api = "`LanceFileWriter`" if args.mode == "file" else "`write_dataset`"
    lines = [MARK_START, f"### bench_write.py: {args.mode} writes, version {args.version}", "",
             f"{platform.machine()}, {os.cpu_count()} cores, load average "
             f"{os.getloadavg()[0]:.1f} at the end, {args.rows:,} rows (lineitem 0.6x, wide "
             f"2,000 x 2,000), {api} {args.version}, one worker process per implementation, "
             f"medians of {args.repeat} interleaved runs; wall s / CPU s (the worker's, all "
             "threads).", ""]
    head = "| table | MB | " + " | ".join(f"{k} wall / cpu" for k in labels)
    head += " | " + " | ".join(f"{k} / pylance wall (cpu)" for k in labels if k != "pylance")
    head += " | lancenb bytes | pylance bytes |"
    mem = "peak" in next(iter(res.values()))["after"] if res else False
    if mem:
        head += " " + " | ".join(f"{k} peak MB" for k in labels) + " |"
    lines += [head, "|---|" + "---:|" * (head.count("|") - 2)]
    for name, r in res.items():
        pl = r["pylance"]
        row = f"| {name} | {r['nbytes'] / 1e6:.0f} | " + " | ".join(
            f"{r[k]['wall']:.3f} / {r[k]['cpu']:.3f}" for k in labels)
        row += " | " + " | ".join(
            f"{r[k]['wall'] / pl['wall']:.2f} ({r[k]['cpu'] / pl['cpu']:.2f})"
            for k in labels if k != "pylance")
        row += f" | {r['after']['size']:,} | {pl['size']:,} |"
        if mem:
            row += " " + " | ".join(f"{r[k]['peak'] / 1e6:.0f}" for k in labels) + " |"
        lines.append(row)
    if args.profile:
        lines += ["", "Where one lancenb write (after) spends its CPU time, cProfile's own "
                  "time per group (calling thread only), s:", "",
                  "| table | " + " | ".join(label for _, label in _GROUPS) + " |",
                  "|---|" + "---:|" * len(_GROUPS)]
        for name, r in res.items():
            lines.append(f"| {name} | " + " | ".join(f"{r['profile'][g]:.3f}"
                                                     for g, _ in _GROUPS) + " |")
    lines.append(MARK_END)
    return "\n".join(lines)


if __name__ == "__main__":
    main()
