#!/usr/bin/env python
"""Commit latency and concurrent appends, lancenb vs pylance, on a local disk and on
an S3 API (moto's server from ``tests/_s3server.py``, on 127.0.0.1):

* latency: one-row appends by one writer, one after another (median and p90 of
  ``--appends`` after a warm-up append);
* concurrency: ``--procs`` spawned processes x ``--per-proc`` one-row appends racing on
  one dataset, started together behind a barrier; wall time from the barrier, commits
  per second, failed appends, and a check that every append that returned is in the
  dataset exactly once (read back with the same library).

Local commits are a hard link of the manifest; S3 commits a PutObject with
``If-None-Match: *`` (both libraries). moto serialises the requests that change
objects, so the S3 figures measure the protocol's request count on a server that
answers in about a millisecond, not S3's latency.

    python benchmarks/bench_commit.py [--out benchmarks/RESULTS.md]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from _results import replace_section  # noqa: E402  (benchmarks/ is on sys.path)

MARK_START = "<!-- bench_commit:start -->"
MARK_END = "<!-- bench_commit:end -->"


def _row(k: int):
    import pyarrow as pa

    return pa.table({"id": pa.array([k], pa.int64()), "s": pa.array([f"row {k}"])})


def _lib(name: str):
    if name == "pylance":
        import lance

        return lance
    import lancenb

    return lancenb


def _append(lib, name, uri, opts, k):
    lib.write_dataset(_row(k), uri, mode="append", storage_options=opts)


def _ids(name, uri, opts) -> list[int]:
    ds = _lib(name).dataset(uri, storage_options=opts)
    return ds.to_table(columns=["id"])["id"].to_pylist()


def _worker(name, uri, opts, writer, count, barrier, out):
    lib = _lib(name)
    lib.dataset(uri, storage_options=opts).count_rows()  # imports and connections warm
    barrier.wait()
    ok, failed = [], []
    for k in range(count):
        row = 1_000_000 + writer * 10_000 + k
        try:
            _append(lib, name, uri, opts, row)
            ok.append(row)
        except Exception as e:  # noqa: BLE001 - counted and named, the run goes on
            failed.append(f"{type(e).__name__}: {str(e)[:160]}")
    out.put((ok, failed))


def latency(name, uri, opts, n):
    lib = _lib(name)
    lib.write_dataset(_row(0), uri, mode="create", storage_options=opts)
    _append(lib, name, uri, opts, 1)  # warm-up
    times = []
    for k in range(n):
        t = time.perf_counter()
        _append(lib, name, uri, opts, 2 + k)
        times.append(time.perf_counter() - t)
    times.sort()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


def concurrent(name, uri, opts, procs, per_proc):
    lib = _lib(name)
    lib.write_dataset(_row(-1), uri, mode="create", storage_options=opts)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(procs + 1)
    out = ctx.Queue()
    ps = [ctx.Process(target=_worker, args=(name, uri, opts, w, per_proc, barrier, out))
          for w in range(procs)]
    for p in ps:
        p.start()
    barrier.wait()
    t = time.perf_counter()
    results = [out.get(timeout=1800) for _ in ps]
    wall = time.perf_counter() - t
    for p in ps:
        p.join()
    reported = sorted(r for ok, _ in results for r in ok)
    errors = [e for _, f in results for e in f]
    for e in sorted(set(errors)):
        print(f"  {name}: {errors.count(e)} x {e}", flush=True)
    got = sorted(_ids(name, uri, opts))
    exact = got == sorted([-1] + reported)
    return wall, len(reported), len(errors), exact


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--appends", type=int, default=25)
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--per-proc", type=int, default=25)
    ap.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    args = ap.parse_args(argv)

    import _s3server

    server = _s3server.start()
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for store in ("local", "S3 (moto)"):
                for name in ("lancenb", "pylance"):
                    def where(tag, store=store, name=name):
                        if store == "local":
                            return os.path.join(tmp, f"{name}-{tag}"), None
                        return server.uri(), (server.pylance_options if name == "pylance"
                                              else server.lancenb_options)

                    uri, opts = where("latency")
                    med, p90 = latency(name, uri, opts, args.appends)
                    uri, opts = where("concurrent")
                    wall, ok, failed, exact = concurrent(name, uri, opts, args.procs,
                                                         args.per_proc)
                    rows.append((store, name, med, p90, wall, ok, failed, exact))
                    print(f"{store:10s} {name:8s} append median {med * 1e3:7.1f} ms "
                          f"p90 {p90 * 1e3:7.1f} ms | {args.procs}x{args.per_proc}: "
                          f"{wall:6.1f} s, {ok} ok, {failed} failed, exactly once: {exact}",
                          flush=True)
    finally:
        server.stop()

    import lance

    import lancenb

    lines = [MARK_START, "## Commits (`benchmarks/bench_commit.py`)", "",
             f"One-row appends by one writer ({args.appends}, after a warm-up), and "
             f"{args.procs} spawned processes x {args.per_proc} one-row appends racing on "
             f"one dataset. Local: the manifest is hard-linked; S3: moto's server on "
             f"127.0.0.1 with `If-None-Match: *` puts (it serialises writes; the figures "
             f"count requests, not S3's latency). lancenb {lancenb.__version__}, pylance "
             f"{lance.__version__}; {platform.machine()}, {os.cpu_count()} cores, shared "
             f"machine; run {time.strftime('%Y-%m-%d')}.", "",
             "| store | library | append median (ms) | append p90 (ms) | "
             f"{args.procs} x {args.per_proc} wall (s) | commits/s | failed | "
             "each success once |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for store, name, med, p90, wall, ok, failed, exact in rows:
        lines.append(f"| {store} | {name} | {med * 1e3:.1f} | {p90 * 1e3:.1f} | {wall:.1f} | "
                     f"{ok / wall:.1f} | {failed} | {'yes' if exact else 'NO'} |")
    lines.append(MARK_END)
    replace_section(args.out, "\n".join(lines), MARK_START, MARK_END)


if __name__ == "__main__":
    main()
