#!/usr/bin/env python
"""IVF_HNSW_SQ recall/QPS curves over nprobes and ef, lancenb vs pylance in one run.

Run from the repository root::

    python benchmarks/bench_vector_curve_hnsw.py [--queries Q] [--nprobes 1,2,...]
        [--ef 0,30,60] [--data DIR]

The 100,000 x 768 clustered float32 set of ``bench_vector.py`` (kept under ``--data``),
l2, ``sqrt(n)`` partitions, IVF_HNSW_SQ with default graph parameters, built by each
library on its own copy; both libraries then query both indices with ``nearest={...,
"nprobes": P, "ef": E}`` (``ef`` 0: not given, each library's default, ``k + k // 2``)
for each P and E, no refine, ``columns=["id"]``, the same Q queries one after another
after a warm-up, the two libraries alternated ``--passes`` times (best pass kept: the
machine is shared). Recall@10 against exact neighbours (NumPy); 'ids agree' is the
share of ids both libraries return for the same query on the same index.

QPS at equal recall: for each recall target, each library's best QPS among its points
reaching it (on the same index). The curves go to ``bench_vector_curve_hnsw.png``
(one panel per ef, bench_vector_curve's plot), the figures between the
``bench_vector_curve_hnsw`` markers of RESULTS.md. No timing assertions.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import time

import lance
import numpy as np
from _results import replace_section  # noqa: E402  (benchmarks/ is on sys.path)
from bench_vector import dataset, queries
from bench_vector_curve import plot
from bench_vector_index import build_lancenb, build_pylance, copy, exact, recall

import lancenb

MARK_START = "<!-- bench_vector_curve_hnsw:start -->"
MARK_END = "<!-- bench_vector_curve_hnsw:end -->"
K = 10
KIND = "IVF_HNSW_SQ"
TARGETS = (0.80, 0.85, 0.90, 0.92, 0.93)


def log(msg=""):
    print(msg, file=sys.stderr, flush=True)


def run(ds, qs, nprobes, ef):
    """(seconds for all queries, answers) after one warm-up query."""
    nearest = {"column": "vector", "k": K, "nprobes": nprobes}
    if ef:
        nearest["ef"] = ef

    def one(q):
        return ds.to_table(nearest=dict(nearest, q=q), columns=["id"])["id"].to_pylist()

    one(qs[0])
    start = time.perf_counter()
    answers = [one(q) for q in qs]
    return time.perf_counter() - start, answers


def best_at(points, target):
    """The best QPS among ``(recall, qps)`` points reaching ``target`` (None: none)."""
    got = [q for r, q in points if r >= target]
    return max(got) if got else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--passes", type=int, default=2, help="alternated passes per point")
    ap.add_argument("--nprobes", default="1,2,4,8,16,32")
    ap.add_argument("--ef", default="0,30,60", help="0: not given (the default)")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--data", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                   "lancenb-bench-vector"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "RESULTS.md"))
    ap.add_argument("--png", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "bench_vector_curve_hnsw.png"))
    args = ap.parse_args()
    n, dim, nq = args.rows, args.dim, args.queries
    probes = [int(p) for p in args.nprobes.split(",")]
    efs = [int(e) for e in args.ef.split(",")]
    os.makedirs(args.data, exist_ok=True)
    base = dataset(args.data, n, dim)
    qs = queries(base, nq)
    truth = exact(base, qs)
    parts = int(round(np.sqrt(n)))
    p_path, n_path = copy(base, "pylance_hnsw"), copy(base, "lancenb_hnsw")
    started = time.time()
    bp = build_pylance(p_path, KIND, parts, 0)
    bn = build_lancenb(n_path, KIND, parts, 0)
    log(f"build pylance {bp:.1f}s, lancenb {bn:.1f}s")
    rows, curves, points = [], {}, {}
    for built_by, path in (("pylance", p_path), ("lancenb", n_path)):
        dp, dn = lance.dataset(path), lancenb.dataset(path)
        for ef in efs:
            panel = f"ef={ef or 'default'}"
            for nprobes in probes:
                sec_p = sec_n = float("inf")
                for _ in range(args.passes):
                    tp, ans_p = run(dp, qs, nprobes, ef)
                    tn, ans_n = run(dn, qs, nprobes, ef)
                    sec_p, sec_n = min(sec_p, tp), min(sec_n, tn)
                same = float(np.mean([len(set(a) & set(b)) / K
                                      for a, b in zip(ans_p, ans_n)]))
                rp, rn = recall(ans_p, truth), recall(ans_n, truth)
                qp, qn = nq / sec_p, nq / sec_n
                log(f"  by {built_by:<7} ef={ef:<3} nprobes={nprobes:<3} recall@10 pylance "
                    f"{rp:.3f} lancenb {rn:.3f} (ids agree {same:.3f})  pylance {qp:7.1f} "
                    f"QPS  lancenb {qn:7.1f} QPS")
                rows.append((built_by, ef, nprobes, rp, rn, same, qp, qn))
                curves.setdefault(panel, {}).setdefault(("pylance", built_by), []).append(
                    (nprobes, rp, qp))
                curves[panel].setdefault(("lancenb", built_by), []).append((nprobes, rn, qn))
                points.setdefault(("pylance", built_by), []).append((rp, qp))
                points.setdefault(("lancenb", built_by), []).append((rn, qn))
    minutes = (time.time() - started) / 60
    shutil.rmtree(p_path, ignore_errors=True)
    shutil.rmtree(n_path, ignore_errors=True)
    plot(curves, args.png)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [MARK_START,
             "## IVF_HNSW_SQ recall/QPS over nprobes and ef "
             "(benchmarks/bench_vector_curve_hnsw.py)",
             "", "![recall@10 against QPS, one panel per ef](bench_vector_curve_hnsw.png)", "",
             f"{n:,} x {dim} clustered float32 (bench_vector's set), l2, {parts} partitions, "
             f"IVF_HNSW_SQ with default graph parameters, built by each library; no refine; "
             f"{nq} queries one after another after a warm-up, k={K}, `columns=['id']`; "
             f"ef 'default' = not given (k + k // 2 in both); recall@10 against exact "
             f"neighbours. {platform.machine()}, {os.cpu_count()} cores (shared, load "
             f"average {load:.1f} at the end), Python {platform.python_version()}, pylance "
             f"{lance.__version__}; best of {args.passes} alternated passes; "
             f"{minutes:.1f} minutes of queries.", "",
             f"Build: pylance {bp:.1f} s, lancenb {bn:.1f} s.", "",
             "QPS at equal recall (each library's best QPS among its points reaching the "
             "recall, on the same index; '-': no point reaches it):", "",
             "| index built by | recall@10 >= | pylance QPS | lancenb QPS | lancenb / pylance |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for by in ("pylance", "lancenb"):
        for target in TARGETS:
            bp_, bn_ = best_at(points[("pylance", by)], target), \
                best_at(points[("lancenb", by)], target)
            ratio = f"{bn_ / bp_:.2f}x" if bp_ and bn_ else "-"
            lines.append(f"| {by} | {target:.2f} | {bp_ or 0:.1f} | {bn_ or 0:.1f} | {ratio} |"
                         .replace("| 0.0 |", "| - |"))
    lines += ["", "| built by | ef | nprobes | recall@10 pylance | recall@10 lancenb | "
              "ids agree | pylance QPS | lancenb QPS | lancenb / pylance |",
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    lines += [f"| {by} | {ef or 'default'} | {npb} | {rp:.3f} | {rn:.3f} | {same:.3f} | "
              f"{qp:.1f} | {qn:.1f} | {qn / qp:.2f}x |"
              for by, ef, npb, rp, rn, same, qp, qn in rows]
    lines.append(MARK_END)
    replace_section(args.out, "\n".join(lines), MARK_START, MARK_END)
    log(f"figures written to {args.out}, curves to {args.png}")


if __name__ == "__main__":
    main()
