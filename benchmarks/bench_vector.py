#!/usr/bin/env python
"""Vector search, lancenb vs pylance in one run: flat (exact) search QPS.

Run from the repository root::

    python benchmarks/bench_vector.py [--quick] [--queries Q] [--data DIR] [--out FILE]

Two clustered synthetic sets (SIFT-like: 256 Gaussian clusters, spread 4, unit noise),
written once by pylance under ``--data`` (kept between runs):

* 1,000,000 x 128 float32 (``--quick``: 200,000 x 128);
* 100,000 x 768 float32 (``--quick``: 20,000 x 768).

For each set, each library answers the same Q queries (points near the data) with
``nearest={"column": "vector", "q": q, "k": 10}`` and ``columns=["id"]``, after one
warm-up query; queries run one after another, so QPS = Q / total seconds. Cases: l2,
cosine, and l2 with a prefilter keeping half the rows (``id % 2 = 0``). Every answer is
compared between the libraries (the same ids, or where near-ties come out in another
order, the same distances within 1e-4; a mismatch aborts). Figures go between
the ``bench_vector`` markers of RESULTS.md. No timing assertions: this only measures.
(Index rows, IVF_PQ and IVF_HNSW_SQ, are for the index work to add.)
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import lance
import numpy as np
import pyarrow as pa
from _results import replace_section  # noqa: E402  (benchmarks/ is on sys.path)

import lancenb

MARK_START = "<!-- bench_vector:start -->"
MARK_END = "<!-- bench_vector:end -->"
K = 10
CLUSTERS = 256


def log(msg=""):
    print(msg, file=sys.stderr, flush=True)


def clustered(n: int, dim: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((CLUSTERS, dim)).astype(np.float32) * 4
    out = np.empty((n, dim), np.float32)
    step = 100_000
    for lo in range(0, n, step):  # in slices: bounded temporary memory
        hi = min(n, lo + step)
        out[lo:hi] = centers[rng.integers(0, CLUSTERS, hi - lo)] + \
            rng.standard_normal((hi - lo, dim)).astype(np.float32)
    return out


def dataset(root: str, n: int, dim: int) -> str:
    path = os.path.join(root, f"vectors_{n}x{dim}")
    try:
        if lance.dataset(path).count_rows() == n:
            return path
    except (ValueError, OSError):
        pass
    log(f"writing {n} x {dim} with pylance under {path}")
    x = clustered(n, dim)
    table = pa.table({"id": np.arange(n),
                      "vector": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), dim)})
    lance.write_dataset(table, path, mode="overwrite")
    return path


def queries(path: str, count: int, seed: int = 1) -> list:
    ds = lance.dataset(path)
    n = ds.count_rows()
    rng = np.random.default_rng(seed)
    rows = ds.take(rng.choice(n, count, replace=False).tolist(), columns=["vector"])
    base = np.stack(rows["vector"].to_numpy(zero_copy_only=False)).astype(np.float32)
    return list(base + rng.standard_normal(base.shape).astype(np.float32) * 0.5)


def run(ds, qs, metric, filt):
    """(seconds for all queries, answers) after one warm-up."""
    def one(q):
        kw = {"filter": filt, "prefilter": True} if filt else {}
        t = ds.to_table(nearest={"column": "vector", "q": q, "k": K, "metric": metric},
                        columns=["id"], **kw)
        return t["id"].to_pylist(), t["_distance"].to_numpy()

    one(qs[0])
    start = time.perf_counter()
    answers = [one(q) for q in qs]
    return time.perf_counter() - start, answers


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--quick", action="store_true", help="smaller sets, fewer queries")
    ap.add_argument("--queries", type=int, default=None)
    ap.add_argument("--data", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                   "lancenb-bench-vector"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "RESULTS.md"))
    args = ap.parse_args()
    sets = [(200_000, 128), (20_000, 768)] if args.quick else [(1_000_000, 128),
                                                               (100_000, 768)]
    nq = args.queries or (5 if args.quick else 20)
    os.makedirs(args.data, exist_ok=True)
    cases = [("l2", None), ("cosine", None), ("l2", "id % 2 = 0")]
    rows = []
    for n, dim in sets:
        path = dataset(args.data, n, dim)
        qs = queries(path, nq)
        for metric, filt in cases:
            sec_p, ans_p = run(lance.dataset(path), qs, metric, filt)
            sec_n, ans_n = run(lancenb.dataset(path), qs, metric, filt)
            for (ids_p, d_p), (ids_n, d_n) in zip(ans_p, ans_n):
                # the same rows, or (near-ties ordered otherwise by float32 rounding,
                # which differs between the two summation orders) the same distances
                if ids_p != ids_n and not np.allclose(d_p, d_n, rtol=1e-4, atol=1e-5):
                    sys.exit(f"{n}x{dim} {metric} {filt}: lancenb's answers differ from "
                             f"pylance's: {ids_n} {d_n} against {ids_p} {d_p}")
            qps_p, qps_n = nq / sec_p, nq / sec_n
            label = metric + (f", prefilter `{filt}`" if filt else "")
            log(f"{n:>9} x {dim:<4} {label:<32} pylance {qps_p:7.2f} QPS  "
                f"lancenb {qps_n:7.2f} QPS  ({qps_n / qps_p:.2f}x)")
            rows.append((f"{n:,} x {dim}", label, qps_p, qps_n))
    lines = [MARK_START, "## Vector search (benchmarks/bench_vector.py)", "",
             f"Flat (exact) search, k={K}, `columns=['id']`, {nq} queries one after another "
             f"after a warm-up; clustered float32 sets written by pylance; the same answers from "
             f"both libraries for every query. {platform.machine()}, "
             f"{os.cpu_count()} cores, Python {platform.python_version()}, pylance "
             f"{lance.__version__}{', --quick' if args.quick else ''}.", "",
             "| set | search | pylance QPS | lancenb QPS | lancenb / pylance |",
             "| --- | --- | ---: | ---: | ---: |"]
    for name, label, qp, qn in rows:
        lines.append(f"| {name} | {label} | {qp:.2f} | {qn:.2f} | {qn / qp:.2f}x |")
    lines.append(MARK_END)
    replace_section(args.out, "\n".join(lines), MARK_START, MARK_END)
    log(f"figures written to {args.out}")


if __name__ == "__main__":
    main()
