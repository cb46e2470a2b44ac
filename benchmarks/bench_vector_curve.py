#!/usr/bin/env python
"""Recall/QPS curves of IVF vector indices, lancenb vs pylance in one run, with a PNG.

Run from the repository root::

    python benchmarks/bench_vector_curve.py [--queries Q] [--nprobes 1,2,4,...] [--data DIR]

The 100,000 x 768 clustered float32 set of ``bench_vector.py`` (written by pylance once,
kept under ``--data``), l2, ``sqrt(n)`` partitions. For IVF_PQ (``dim/16`` sub-vectors x
8 bits) and IVF_HNSW_SQ, each library builds the index on its own copy of the set; then
both libraries query both indices with ``nearest={..., "nprobes": P}`` for each P of
``--nprobes`` (no refine), ``columns=["id"]``, the same Q queries one after another after
a warm-up, the two libraries alternated ``--passes`` times (best pass kept: the machine
is shared). Recall@10 is against exact neighbours (NumPy). On the same index both
libraries must give nearly the same ids (a mismatch aborts).

The curves go to ``benchmarks/bench_vector_curve.png`` (drawn with bench_scale's
PNG writer: no plotting library is a dependency), the figures between the
``bench_vector_curve`` markers of RESULTS.md. No timing assertions: this only measures.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys

import lance
import numpy as np
from _results import replace_section  # noqa: E402  (benchmarks/ is on sys.path)
from bench_scale import _png, _text
from bench_vector import dataset, queries
from bench_vector_index import build_lancenb, build_pylance, copy, exact, recall, run

import lancenb

MARK_START = "<!-- bench_vector_curve:start -->"
MARK_END = "<!-- bench_vector_curve:end -->"
K = 10
RED, BLUE = (220, 30, 30), (30, 60, 220)


def log(msg=""):
    print(msg, file=sys.stderr, flush=True)


def plot(curves: dict, path: str) -> None:
    """One panel per index type: QPS (log) against recall@10, one line per (library,
    index builder): lancenb red, pylance blue; solid on pylance's index, dashed on
    lancenb's; each point's nprobes written beside lancenb's on pylance's index."""
    W, H, L, T, B, R = 420, 300, 56, 28, 30, 16
    kinds = list(curves)
    img = np.full((H + 40, W * len(kinds), 3), 255, np.uint8)
    for k, kind in enumerate(kinds):
        ox = k * W
        _text(img, 6, ox + 8, f"{kind}: qps (log) against recall at 10")
        top, bottom, left, right = T, H - B, ox + L, ox + W - R
        img[top:bottom + 1, left] = 0
        img[bottom, left:right] = 0
        pts = [p for series in curves[kind].values() for p in series]
        rs = [p[1] for p in pts]
        qs = np.log10([p[2] for p in pts])
        r0, r1 = min(rs), max(max(rs), min(rs) + 1e-3)
        q0, q1 = qs.min(), max(qs.max(), qs.min() + 1e-3)

        def at(rec, qps, box=(top, bottom, left, right, r0, r1, q0, q1)):
            top, bottom, left, right, r0, r1, q0, q1 = box
            return (int(bottom - 4 - (np.log10(qps) - q0) / (q1 - q0) * (bottom - top - 10)),
                    int(left + 6 + (rec - r0) / (r1 - r0) * (right - left - 14)))

        for rec in (r0, r1):
            _, x = at(rec, 10 ** q0)
            img[bottom:bottom + 4, x] = 0
            _text(img, bottom + 7, x - 8, f"{rec:.3f}", scale=1)
        for qv in (10 ** q0, 10 ** q1):
            y, _ = at(r0, qv)
            img[y, left - 4:left] = 0
            _text(img, y - 2, ox + 4, f"{qv:.0f}", scale=1)
        for (lib, by), series in curves[kind].items():
            color = RED if lib == "lancenb" else BLUE
            line = [at(rec, qps) for _, rec, qps in sorted(series)]
            for y, x in line:
                img[y - 2:y + 3, x - 2:x + 3] = color
            for (ya, xa), (yb, xb) in zip(line, line[1:]):
                for t in np.linspace(0, 1, 400):
                    if by == "lancenb" and int(t * 16) % 2:
                        continue
                    y, x = int(ya + (yb - ya) * t), int(xa + (xb - xa) * t)
                    img[y - 1:y + 1, x - 1:x + 1] = color
            if (lib, by) == ("lancenb", "pylance"):
                for (npb, _, _), (y, x) in zip(sorted(series), line):
                    _text(img, y - 9, x + 3, str(npb), scale=1)
    y = H + 8
    _text(img, y, 8, "lancenb", RED)
    _text(img, y, 8 + 8 * 8, "red,")
    _text(img, y, 8 + 13 * 8, "pylance", BLUE)
    _text(img, y, 8 + 21 * 8, "blue. solid: index built by pylance, dashed: by lancenb")
    _text(img, y + 16, 8, "numbers: nprobes", scale=1)
    _png(path, img)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--passes", type=int, default=2, help="alternated passes per point")
    ap.add_argument("--nprobes", default="1,2,4,8,16,32,64")
    ap.add_argument("--kinds", default="IVF_PQ,IVF_HNSW_SQ")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--data", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                   "lancenb-bench-vector"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "RESULTS.md"))
    ap.add_argument("--png", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "bench_vector_curve.png"))
    args = ap.parse_args()
    n, dim, nq = args.rows, args.dim, args.queries
    probes = [int(p) for p in args.nprobes.split(",")]
    os.makedirs(args.data, exist_ok=True)
    base = dataset(args.data, n, dim)
    qs = queries(base, nq)
    truth = exact(base, qs)
    parts, subs = int(round(np.sqrt(n))), dim // 16
    builds, rows, curves = [], [], {}
    for kind in args.kinds.split(","):
        p_path, n_path = copy(base, "pylance_curve"), copy(base, "lancenb_curve")
        bp = build_pylance(p_path, kind, parts, subs)
        bn = build_lancenb(n_path, kind, parts, subs)
        log(f"{kind}: build pylance {bp:.1f}s, lancenb {bn:.1f}s")
        builds.append((kind, bp, bn))
        curves[kind] = {}
        for built_by, path in (("pylance", p_path), ("lancenb", n_path)):
            dp, dn = lance.dataset(path), lancenb.dataset(path)
            for nprobes in probes:
                sec_p = sec_n = float("inf")
                for _ in range(args.passes):
                    tp, ans_p = run(dp, qs, nprobes, None)
                    tn, ans_n = run(dn, qs, nprobes, None)
                    sec_p, sec_n = min(sec_p, tp), min(sec_n, tn)
                same = float(np.mean([len(set(a) & set(b)) / K
                                      for a, b in zip(ans_p, ans_n)]))
                if same < (0.8 if "HNSW" in kind else 0.9):
                    sys.exit(f"{kind} built by {built_by}, nprobes={nprobes}: lancenb's "
                             f"answers differ from pylance's ({same:.2f} of the ids agree)")
                rp, rn = recall(ans_p, truth), recall(ans_n, truth)
                qp, qn = nq / sec_p, nq / sec_n
                log(f"  {kind} by {built_by:<7} nprobes={nprobes:<3} recall@10 pylance "
                    f"{rp:.3f} lancenb {rn:.3f} (ids agree {same:.3f})  pylance {qp:7.1f} "
                    f"QPS  lancenb {qn:7.1f} QPS")
                rows.append((kind, built_by, nprobes, rp, rn, same, qp, qn))
                curves[kind].setdefault(("pylance", built_by), []).append((nprobes, rp, qp))
                curves[kind].setdefault(("lancenb", built_by), []).append((nprobes, rn, qn))
        shutil.rmtree(p_path, ignore_errors=True)
        shutil.rmtree(n_path, ignore_errors=True)
    png = args.png
    plot(curves, png)
    lines = [MARK_START, "## Vector recall/QPS curves (benchmarks/bench_vector_curve.py)", "",
             "![recall@10 against QPS](bench_vector_curve.png)", "",
             f"{n:,} x {dim} clustered float32 (bench_vector's set), l2, {parts} partitions, "
             f"IVF_PQ with {subs} sub-vectors x 8 bits, IVF_HNSW_SQ with default graph "
             f"parameters; no refine; {nq} queries one after another after a warm-up, k={K}, "
             f"`columns=['id']`; recall@10 against exact neighbours. {platform.machine()}, "
             f"{os.cpu_count()} cores (shared), Python {platform.python_version()}, pylance "
             f"{lance.__version__}; best of {args.passes} alternated passes.", "",
             "| index | build pylance (s) | build lancenb (s) |", "| --- | ---: | ---: |"]
    lines += [f"| {k} | {bp:.1f} | {bn:.1f} |" for k, bp, bn in builds]
    lines += ["", "| index | built by | nprobes | recall@10 pylance | recall@10 lancenb | "
              "ids agree | pylance QPS | lancenb QPS | lancenb / pylance |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    lines += [f"| {k} | {by} | {npb} | {rp:.3f} | {rn:.3f} | {same:.3f} | {qp:.1f} | "
              f"{qn:.1f} | {qn / qp:.2f}x |" for k, by, npb, rp, rn, same, qp, qn in rows]
    lines.append(MARK_END)
    replace_section(args.out, "\n".join(lines), MARK_START, MARK_END)
    log(f"figures written to {args.out}, curves to {png}")


# -- the 1M x 128 SIFT-like configuration (--sift1m) -------------------------------------
MARK_1M_START = "<!-- bench_vector_curve_1m:start -->"
MARK_1M_END = "<!-- bench_vector_curve_1m:end -->"


def build_child(lib: str, path: str, kind: str, parts: int, subs: int) -> None:
    """(In a fresh interpreter) build ``kind`` on ``path`` with ``lib``; print the
    seconds and this process's peak resident memory as JSON. The peak is VmHWM of
    /proc/self/status (this program's own address space): ru_maxrss would carry over
    the parent's peak at the fork (Linux keeps it across execve)."""
    import json
    import resource

    fn = build_pylance if lib == "pylance" else build_lancenb
    seconds = fn(path, kind, parts, subs)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    try:
        with open("/proc/self/status") as f:
            peak = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) \
                / 1024
    except (OSError, StopIteration, ValueError):
        pass
    print(json.dumps({"seconds": seconds, "peak_mb": peak}))


def _build_in_child(lib: str, path: str, kind: str, parts: int, subs: int) -> dict:
    import json
    import subprocess

    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--build-child", lib,
                          path, kind, str(parts), str(subs)], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _commit() -> str:
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=os.path.dirname(os.path.abspath(__file__)),
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def main_1m():
    """1,000,000 x 128 clustered (SIFT-like): builds in child processes (time, peak
    memory), then both libraries on both indices at each nprobes. One kind per run is
    enough (each run's figures are kept in ``--data``/curve_1m.json and the PNG and the
    RESULTS.md subsection are drawn from every kind measured so far)."""
    import json
    import time

    ap = argparse.ArgumentParser(description="1M x 128 recall/QPS curves")
    ap.add_argument("--sift1m", action="store_true")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--nprobes", default="1,2,4,8,16,32,64")
    ap.add_argument("--kinds", default="IVF_PQ")
    ap.add_argument("--rows", type=int, default=1_000_000, help="(smaller for a dry run)")
    ap.add_argument("--reuse", default="", help="libraries whose index built by an earlier "
                    "run (kept with --keep) is queried again instead of rebuilt")
    ap.add_argument("--keep", action="store_true", help="keep the indexed copies")
    ap.add_argument("--build-only", default="", help="build (and keep) this library's "
                    "index only, for a later --reuse run")
    ap.add_argument("--data", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                   "lancenb-bench-vector"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "RESULTS.md"))
    ap.add_argument("--png", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "bench_vector_curve_1m.png"))
    args = ap.parse_args()
    n, dim, nq = args.rows, 128, args.queries
    probes = [int(p) for p in args.nprobes.split(",")]
    base = dataset(args.data, n, dim)
    parts, subs = int(round(np.sqrt(n))), dim // 8
    store = os.path.join(args.data, f"curve_1m_{n}.json")
    saved = json.load(open(store)) if os.path.exists(store) else {}
    reuse = set(filter(None, args.reuse.split(",")))
    for kind in args.kinds.split(","):
        builds, paths = dict(saved.get(kind, {}).get("build", {})), {}
        for lib in ("pylance", "lancenb"):  # (builds first: the parent is small then)
            paths[lib] = f"{base}_{lib}_{kind}_c1m"
            if lib in reuse and lib in builds and os.path.isdir(paths[lib]) or \
                    args.build_only not in ("", lib):
                continue
            paths[lib] = copy(base, f"{lib}_{kind}_c1m")
            builds[lib] = _build_in_child(lib, paths[lib], kind, parts, subs)
            builds[lib]["commit"] = _commit()
            saved.setdefault(kind, {"rows": []})["build"] = builds
            with open(store, "w") as f:
                json.dump(saved, f)
        if args.build_only:
            continue
        bp, bn = builds["pylance"], builds["lancenb"]
        p_path, n_path = paths["pylance"], paths["lancenb"]
        log(f"{kind}: build pylance {bp['seconds']:.1f}s {bp['peak_mb']:.0f} MB, lancenb "
            f"{bn['seconds']:.1f}s {bn['peak_mb']:.0f} MB")
        qs = queries(base, nq)
        truth = exact(base, qs)
        rows = []
        for built_by, path in (("pylance", p_path), ("lancenb", n_path)):
            dp, dn = lance.dataset(path), lancenb.dataset(path)
            for nprobes in probes:
                sec_p = sec_n = float("inf")
                for _ in range(args.passes):
                    tp, ans_p = run(dp, qs, nprobes, None)
                    tn, ans_n = run(dn, qs, nprobes, None)
                    sec_p, sec_n = min(sec_p, tp), min(sec_n, tn)
                same = float(np.mean([len(set(a) & set(b)) / K
                                      for a, b in zip(ans_p, ans_n)]))
                rp, rn = recall(ans_p, truth), recall(ans_n, truth)
                log(f"  {kind} by {built_by:<7} nprobes={nprobes:<3} recall@10 pylance "
                    f"{rp:.3f} lancenb {rn:.3f} (ids agree {same:.3f})  pylance "
                    f"{nq / sec_p:7.1f} QPS  lancenb {nq / sec_n:7.1f} QPS")
                rows.append([built_by, nprobes, rp, rn, same, nq / sec_p, nq / sec_n])
        if not args.keep:
            shutil.rmtree(p_path, ignore_errors=True)
            shutil.rmtree(n_path, ignore_errors=True)
        saved[kind] = {"build": {"pylance": bp, "lancenb": bn}, "rows": rows,
                       "commit": _commit(), "passes": args.passes, "queries": nq,
                       "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                       "load": os.getloadavg()[0]}
        with open(store, "w") as f:
            json.dump(saved, f)
    if not args.build_only:
        write_1m(saved, n, parts, subs, args.out, args.png)


def write_1m(saved: dict, n: int, parts: int, subs: int, out: str, png: str) -> None:
    """The PNG and the RESULTS.md subsection from the figures of every kind measured."""
    saved = {kind: rec for kind, rec in saved.items() if rec.get("rows")}
    curves = {}
    for kind, rec in saved.items():
        c = curves[kind] = {}
        for by, npb, rp, rn, _same, qp, qn in rec["rows"]:
            c.setdefault(("pylance", by), []).append((npb, rp, qp))
            c.setdefault(("lancenb", by), []).append((npb, rn, qn))
    plot(curves, png)
    lines = [MARK_1M_START, "### 1M x 128 (SIFT-like): recall/QPS, build time, peak memory",
             "", "![recall@10 against QPS, 1M x 128](bench_vector_curve_1m.png)", "",
             f"`python benchmarks/bench_vector_curve.py --sift1m --kinds KIND`: {n:,} x "
             f"128 clustered float32 (bench_vector's set), l2, {parts} partitions, IVF_PQ "
             f"with {subs} sub-vectors x 8 bits, IVF_HNSW_SQ with default graph parameters "
             f"(both libraries the same parameters); no refine; k={K}, `columns=['id']`, "
             f"recall@10 against exact neighbours (NumPy). Each build runs in a fresh child "
             f"process: its wall time and its peak resident memory (VmHWM, which "
             f"includes the interpreter and the libraries). Then both libraries query both "
             f"indices, alternated, best of the passes. {platform.machine()}, "
             f"{os.cpu_count()} cores shared with other work (compare the ratios within a "
             f"row), pylance {lance.__version__}.", "",
             "| index | measured (commit, time, load) | build pylance | build lancenb | "
             "peak MB pylance | peak MB lancenb |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    for kind, rec in saved.items():
        bp, bn = rec["build"]["pylance"], rec["build"]["lancenb"]
        lines.append(f"| {kind} | {bn.get('commit', '?')} (build), {rec['commit']} "
                     f"(queries), {rec['when']}, load {rec['load']:.1f}, "
                     f"{rec['queries']} queries x best of {rec['passes']} | "
                     f"{bp['seconds']:.0f} s | {bn['seconds']:.0f} s | {bp['peak_mb']:.0f} | "
                     f"{bn['peak_mb']:.0f} |")
    lines += ["", "| index | built by | nprobes | recall@10 pylance | recall@10 lancenb | "
              "ids agree | pylance QPS | lancenb QPS | lancenb / pylance |",
              "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for kind, rec in saved.items():
        lines += [f"| {kind} | {by} | {npb} | {rp:.3f} | {rn:.3f} | {same:.3f} | {qp:.1f} | "
                  f"{qn:.1f} | {qn / qp:.2f}x |" for by, npb, rp, rn, same, qp, qn
                  in rec["rows"]]
    lines.append(MARK_1M_END)
    replace_section(out, "\n".join(lines), MARK_1M_START, MARK_1M_END)
    log(f"figures written to {out}, curves to {png}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--build-child":
        build_child(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]),
                    int(sys.argv[6]))
    elif "--sift1m" in sys.argv:
        main_1m()
    else:
        main()
