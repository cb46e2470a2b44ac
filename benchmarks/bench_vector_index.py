#!/usr/bin/env python
"""IVF vector indices, lancenb vs pylance in one run: build time, recall@10, QPS.

Run from the repository root::

    python benchmarks/bench_vector_index.py [--quick] [--queries Q] [--data DIR] [--out FILE]

The clustered synthetic sets of ``bench_vector.py`` (1,000,000 x 128 float32;
``--quick``: 200,000 x 128), written by pylance once. For each index type (IVF_PQ with
``dim/8`` sub-vectors, IVF_FLAT, IVF_SQ, IVF_HNSW_SQ; ``--kinds`` picks) with ``sqrt(n)``
partitions, l2:

* build: pylance's ``create_index`` and lancenb's ``build_vector_index`` on two copies
  of the set (wall seconds);
* search: each library queries each index (pylance's and lancenb's) through
  ``to_table(nearest={..., "nprobes": P, "refine_factor": R}, columns=["id"])`` for the
  same Q queries (points near the data), one after another after a warm-up, the two
  libraries alternated ``--passes`` times in this process (best pass of each kept: the
  machine is shared); also with the prefilter ``id % 2 = 0``; recall@10 against exact
  neighbours (NumPy; among the rows the filter keeps) and QPS. On the same index both
  libraries must give the same ids (a mismatch aborts).

Figures go between the ``bench_vector_index`` markers of RESULTS.md. No timing
assertions: this only measures.
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
from bench_vector import dataset, queries  # the same sets as the flat benchmark

import lancenb
from lancenb.errors import NotSupportedError
from lancenb.index.vector.build import VECTOR_DETAILS_URL, build_vector_index

MARK_START = "<!-- bench_vector_index:start -->"
MARK_END = "<!-- bench_vector_index:end -->"
K = 10


def log(msg=""):
    print(msg, file=sys.stderr, flush=True)


def copy(path: str, name: str) -> str:
    out = f"{path}_{name}"
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(path, out)
    return out


FILTER = "id % 2 = 0"
SETTINGS = ((10, None, None), (20, 10, None), (10, None, FILTER))  # nprobes, refine, filter


def exact(path: str, qs, keep_even: bool = False) -> list:
    """Exact top-k ids of each query (squared L2), by NumPy over the whole set (or
    over the rows of even id: the prefilter's)."""
    t = lance.dataset(path).to_table(columns=["id", "vector"])
    ids = t["id"].to_numpy()
    x = np.stack(t["vector"].to_numpy(zero_copy_only=False)).astype(np.float32)
    if keep_even:
        ids, x = ids[ids % 2 == 0], x[ids % 2 == 0]
    xn = np.einsum("ij,ij->i", x, x)
    out = []
    for q in qs:
        d = xn - 2 * x @ q
        out.append(set(ids[np.argsort(d)[:K]].tolist()))
    return out


def build_pylance(path, kind, parts, subs):
    start = time.perf_counter()
    kw = {"num_sub_vectors": subs} if "PQ" in kind else {}
    lance.dataset(path).create_index("vector", kind, num_partitions=parts, **kw)
    return time.perf_counter() - start


def build_lancenb(path, kind, parts, subs):
    start = time.perf_counter()
    nds = lancenb.dataset(path)
    try:
        build_vector_index(nds, "vector", kind, num_partitions=parts, num_sub_vectors=subs)
        return time.perf_counter() - start
    except NotSupportedError:
        pass  # lancenb cannot commit CreateIndex yet: the files, committed by pylance
    built = build_vector_index(lancenb.dataset(path), "vector", kind, num_partitions=parts,
                               num_sub_vectors=subs, commit=False)
    elapsed = time.perf_counter() - start
    from lance.dataset import Index

    idx = Index(uuid=built.uuid, name=built.name, fields=[built.field_id],
                dataset_version=built.dataset_version, fragment_ids=set(built.fragment_ids),
                index_version=1, index_details=(VECTOR_DETAILS_URL, built.details))
    lance.LanceDataset.commit(path, lance.LanceOperation.CreateIndex(
        new_indices=[idx], removed_indices=[]), read_version=built.dataset_version)
    return elapsed


def run(ds, qs, nprobes, refine, flt=None):
    def one(q):
        kw = {"filter": flt, "prefilter": True} if flt else {}
        t = ds.to_table(nearest={"column": "vector", "q": q, "k": K, "nprobes": nprobes,
                                 "refine_factor": refine}, columns=["id"], **kw)
        return t["id"].to_pylist()

    one(qs[0])
    start = time.perf_counter()
    answers = [one(q) for q in qs]
    return time.perf_counter() - start, answers


def recall(answers, truth) -> float:
    return float(np.mean([len(set(a) & t) / K for a, t in zip(answers, truth)]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--quick", action="store_true", help="200k rows, fewer queries")
    ap.add_argument("--queries", type=int, default=None)
    ap.add_argument("--passes", type=int, default=3, help="alternated passes per setting")
    ap.add_argument("--kinds", default="IVF_PQ,IVF_FLAT,IVF_SQ,IVF_HNSW_SQ")
    ap.add_argument("--data", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                   "lancenb-bench-vector"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "RESULTS.md"))
    args = ap.parse_args()
    n, dim = (200_000, 128) if args.quick else (1_000_000, 128)
    nq = args.queries or (20 if args.quick else 50)
    os.makedirs(args.data, exist_ok=True)
    base = dataset(args.data, n, dim)
    qs = queries(base, nq)
    truth = {False: exact(base, qs), True: exact(base, qs, keep_even=True)}
    parts = int(round(np.sqrt(n)))
    subs = dim // 8
    builds, rows = [], []
    for kind in args.kinds.split(","):
        p_path, n_path = copy(base, "pylance_idx"), copy(base, "lancenb_idx")
        bp = build_pylance(p_path, kind, parts, subs)
        bn = build_lancenb(n_path, kind, parts, subs)
        log(f"{kind}: build pylance {bp:.1f}s, lancenb {bn:.1f}s")
        builds.append((kind, bp, bn))
        for built_by, path in (("pylance", p_path), ("lancenb", n_path)):
            for nprobes, refine, flt in SETTINGS:
                sec_p = sec_n = float("inf")
                dp, dn = lance.dataset(path), lancenb.dataset(path)
                for _ in range(args.passes):
                    tp, ans_p = run(dp, qs, nprobes, refine, flt)
                    tn, ans_n = run(dn, qs, nprobes, refine, flt)
                    sec_p, sec_n = min(sec_p, tp), min(sec_n, tn)
                same = float(np.mean([len(set(a) & set(b)) / K
                                      for a, b in zip(ans_p, ans_n)]))
                if same < (0.8 if "HNSW" in kind else 0.9):
                    sys.exit(f"{kind} built by {built_by}, nprobes={nprobes}: lancenb's "
                             f"answers differ from pylance's ({same:.2f} of the ids agree)")
                rp, rn = recall(ans_p, truth[bool(flt)]), recall(ans_n, truth[bool(flt)])
                log(f"  {kind} by {built_by:<7} nprobes={nprobes:<3} refine={refine} "
                    f"prefilter={flt}: "
                    f"recall@10 pylance {rp:.3f} lancenb {rn:.3f} (ids agree {same:.3f})  "
                    f"pylance {nq / sec_p:7.1f} QPS  lancenb {nq / sec_n:7.1f} QPS")
                rows.append((kind, built_by, nprobes, refine, flt, rp, rn, same, nq / sec_p,
                             nq / sec_n))
        shutil.rmtree(p_path, ignore_errors=True)
        shutil.rmtree(n_path, ignore_errors=True)
    lines = [MARK_START, "## Vector indices (benchmarks/bench_vector_index.py)", "",
             f"{n:,} x {dim} clustered float32 (the flat benchmark's set), l2, "
             f"{parts} partitions, IVF_PQ with {subs} sub-vectors x 8 bits; {nq} queries "
             f"one after another after a warm-up, k={K}, `columns=['id']`; recall@10 "
             f"against exact neighbours; 'ids agree' = the share of the ids both "
             f"libraries return for the same query on the same index (IVF_PQ: they differ "
             f"only among rows tied on their quantized distance at the cut-off, which each "
             f"library breaks its own way; IVF_HNSW_SQ: pylance walks the graph, lancenb "
             f"scans the probed partitions). {platform.machine()}, {os.cpu_count()} "
             f"cores, Python {platform.python_version()}, pylance {lance.__version__}"
             f"{', --quick' if args.quick else ''}; best of {args.passes} alternated passes.",
             "",
             "| index | build pylance (s) | build lancenb (s) |",
             "| --- | ---: | ---: |"]
    lines += [f"| {k} | {bp:.1f} | {bn:.1f} |" for k, bp, bn in builds]
    lines += ["", "| index | built by | nprobes | refine | prefilter | recall@10 pylance | "
              "recall@10 lancenb | ids agree | pylance QPS | lancenb QPS | lancenb / pylance |",
              "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for kind, by, npb, ref, flt, rp, rn, same, qp, qn in rows:
        lines.append(f"| {kind} | {by} | {npb} | {ref or '-'} | {f'`{flt}`' if flt else '-'} | "
                     f"{rp:.3f} | {rn:.3f} | {same:.3f} | {qp:.1f} | {qn:.1f} | "
                     f"{qn / qp:.2f}x |")
    lines.append(MARK_END)
    replace_section(args.out, "\n".join(lines), MARK_START, MARK_END)
    log(f"figures written to {args.out}")


if __name__ == "__main__":
    main()
