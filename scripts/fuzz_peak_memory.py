#!/usr/bin/env python
"""Peak memory of reading the fuzz inputs that inflate the most, lancenb next to pylance.

    python scripts/fuzz_peak_memory.py [--count 3000] [--top 100] [--seed 0] [--json OUT]

Damages the corruption fuzzer's seed data files (property_tests/corrupt.py) ``--count``
times and reads each mutant with lancenb in a child forked from a parent that has read
every seed once (kernels compiled, modules imported). What an input costs is the child's
peak RSS over its RSS when it starts reading: the child reads the undamaged seed, then
resets its high-water mark (``/proc/self/clear_refs``) before the read, so the figure is
the read's own growth. The
``--top`` inputs with the largest growth are then read with pylance, each in a fresh
process that first reads the undamaged seed of that input (pylance's lazy start-up paid)
and then measures the damaged one the same way. Prints, per library, how many inputs it
reads, refuses or fails on and the growth (MiB: max, p50, p90), and the ratio of the two
growths per input (each floored at 1 MiB, so that two reads costing nothing are 1.0);
``--json`` writes every row.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(HERE, "property_tests"))

from corrupt import PEAK_RSS_SOURCE, make_mutants  # noqa: E402

_RESET = PEAK_RSS_SOURCE + """
def _reset_peak_kib():
    # the high-water mark starts again at the current RSS (Linux >= 4.0); returns that RSS
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return _hwm_kib()
"""
exec(_RESET)  # _hwm_kib, _reset_peak_kib here too

_PYLANCE = _RESET + """
import sys
from lance.file import LanceFileReader
seed, path = sys.argv[1], sys.argv[2]
LanceFileReader(seed).read_all().to_table()
base = _reset_peak_kib()
try:
    LanceFileReader(path).read_all().to_table()
    out = "ok"
except Exception as e:
    out = type(e).__name__
print(out, max(0, _hwm_kib() - base))
"""


def _read_lancenb(path: str):
    from lancenb.file import LanceFileReader

    return LanceFileReader(path).read_all().to_table()


def forked_growth(path: str, warm: str | None = None) -> tuple[str, int]:
    """The outcome of reading ``path`` with lancenb in a forked child, and the KiB its
    peak RSS grew by during the read. The child first reads ``warm`` (the undamaged
    seed): a fork does not copy the page tables of shared libraries and code, so
    without it the pages of the read path (about 14 MiB) are counted again in every
    child."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        out = "crash-or-timeout"
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
            signal.alarm(300)
            if warm is not None:
                _read_lancenb(warm)
            base = _reset_peak_kib()  # noqa: F821 - defined by exec(_RESET)
            try:
                _read_lancenb(path)
                out = "ok"
            except BaseException as e:  # noqa: BLE001 - any outcome; memory is measured
                out = type(e).__name__
            signal.alarm(0)
            grown = max(0, _hwm_kib() - base)  # noqa: F821
            os.write(w, f"{out} {grown}".encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        got = f.read().split()
    os.waitpid(pid, 0)
    return (got[0], int(got[1])) if len(got) == 2 else ("crash-or-timeout", -1)


def pylance_growth(seed: str, path: str) -> tuple[str, int]:
    try:
        out = subprocess.run([sys.executable, "-c", _PYLANCE, seed, path], capture_output=True,
                             text=True, timeout=300).stdout.split()
        return out[0], int(out[1])
    except (subprocess.TimeoutExpired, IndexError, ValueError):
        return "crash-or-timeout", -1


def _summary(results: list[tuple[str, int]]) -> dict:
    mib = sorted(k / 1024 for _, k in results if k >= 0)
    outcomes: dict[str, int] = {}
    for o, _ in results:
        outcomes[o] = outcomes.get(o, 0) + 1
    q = (lambda p: round(mib[min(len(mib) - 1, int(p * len(mib)))], 1)) if mib else \
        (lambda p: None)
    return {"max_mib": q(1.0), "p50_mib": q(0.5), "p90_mib": q(0.9), "outcomes": outcomes}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--top", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="write every row of the top inputs here")
    args = ap.parse_args(argv)
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="lancenb-peak-") as d:
        # the seeds are written in a child: pylance must not be imported in this
        # process, which forks a child per input
        got = subprocess.run([sys.executable, "-c", "import sys, json; "
                              "sys.path.insert(0, sys.argv[1]); from corrupt import seed_inputs; "
                              "print(json.dumps(seed_inputs(sys.argv[2])))",
                              os.path.join(HERE, "property_tests"), os.path.join(d, "seeds")],
                             check=True, capture_output=True, text=True).stdout
        seeds = [(k, p) for k, p in json.loads(got.strip().splitlines()[-1]) if k == "file"]
        by_name = {os.path.basename(p): p for _, p in seeds}
        items = make_mutants(seeds, os.path.join(d, "m"), args.count, seed=args.seed)
        for _, p in seeds:  # warm: every seed's kernels compiled in the parent
            _read_lancenb(p)
        grown = []
        for j, (_, p) in enumerate(items):
            grown.append((forked_growth(p, by_name[os.path.basename(p)]), p))
            if (j + 1) % 500 == 0:
                print(f"{j + 1}/{len(items)} mutants read (forked), {time.time() - t0:.0f} s",
                      file=sys.stderr, flush=True)
        grown.sort(key=lambda g: g[0][1], reverse=True)
        top = grown[: args.top]
        print(f"{len(items)} mutants read (forked), {time.time() - t0:.0f} s; the top "
              f"{len(top)} grew {top[-1][0][1] // 1024}..{top[0][0][1] // 1024} MiB; "
              f"outcomes of all: {_summary([g for g, _ in grown])['outcomes']}",
              file=sys.stderr, flush=True)
        rows = []
        for k, ((ours, kib), p) in enumerate(top):  # rows as they come: a partial run tells
            name = os.path.basename(p)
            theirs = pylance_growth(by_name[name], p)
            ratio = max(kib, 1024) / max(theirs[1], 1024) if theirs[1] >= 0 else None
            rows.append({"input": f"{os.path.basename(os.path.dirname(p))}/{name}",
                         "lancenb": [ours, round(kib / 1024, 1)],
                         "pylance": [theirs[0], round(theirs[1] / 1024, 1)],
                         "ratio": None if ratio is None else round(ratio, 2)})
            print(f"{k + 1}/{len(top)} {json.dumps(rows[-1])}", file=sys.stderr, flush=True)
    ratios = sorted(r["ratio"] for r in rows if r["ratio"] is not None)
    worst = sorted((r for r in rows if r["ratio"] is not None), key=lambda r: -r["ratio"])[:5]
    report = {"mutants": args.count, "seed": args.seed, "top": len(rows),
              "lancenb": _summary([tuple(r["lancenb"][:1]) + (int(r["lancenb"][1] * 1024),)
                                   for r in rows]),
              "pylance": _summary([(r["pylance"][0], int(r["pylance"][1] * 1024))
                                   for r in rows]),
              "ratio_lancenb_over_pylance": {
                  "median": ratios[len(ratios) // 2] if ratios else None,
                  "max": ratios[-1] if ratios else None},
              "worst": worst, "seconds": round(time.time() - t0)}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(report, rows=rows), f, indent=1)
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
