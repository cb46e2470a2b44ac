#!/usr/bin/env python
"""Peak memory of reading the fuzz inputs that inflate the most, lancenb next to pylance.

    python scripts/fuzz_peak_memory.py [--count 3000] [--top 100] [--seed 0]

Damages the corruption fuzzer's seed data files (property_tests/corrupt.py) ``--count``
times, reads each mutant with lancenb in a child forked from a warm parent (the child's
peak RSS over the parent's RSS is what reading that input cost), keeps the ``--top``
inputs with the largest growth, then reads each of those in a fresh process with
lancenb and with pylance and prints the peak RSS growth of both (MiB: max, p50, p90,
and how many inputs each reads, refuses or fails on).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(HERE, "property_tests"))

from corrupt import PEAK_RSS_SOURCE, make_mutants  # noqa: E402

_READ = PEAK_RSS_SOURCE + """
import resource, sys
which, path = sys.argv[1], sys.argv[2]
if which == "pylance":
    from lance.file import LanceFileReader
else:
    from lancenb.file import LanceFileReader
base = _hwm_kib()
try:
    r = LanceFileReader(path)
    r.read_all().to_table()
    out = "ok"
except Exception as e:
    out = type(e).__name__
print(out, (_hwm_kib() - base) // 1024)
"""


def _rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def forked_growth(path: str) -> int:
    """KiB the peak RSS of a forked child grows by while lancenb reads ``path``."""
    from lancenb.file import LanceFileReader

    r, w = os.pipe()
    base = _rss_kib()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
            LanceFileReader(path).read_all().to_table()
        except BaseException:  # noqa: BLE001 - any outcome; only memory is measured
            pass
        os.write(w, str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss).encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        got = f.read()
    os.waitpid(pid, 0)
    return max(0, int(got or 0) - base)


def fresh(which: str, path: str) -> tuple[str, int]:
    try:
        out = subprocess.run([sys.executable, "-c", _READ, which, path], capture_output=True,
                             text=True, timeout=300).stdout.split()
        return out[0], int(out[1])
    except (subprocess.TimeoutExpired, IndexError, ValueError):
        return "crash-or-timeout", -1


def _summary(results: list[tuple[str, int]]) -> dict:
    mib = sorted(m for _, m in results if m >= 0)
    outcomes: dict[str, int] = {}
    for o, _ in results:
        outcomes[o] = outcomes.get(o, 0) + 1
    q = (lambda p: mib[min(len(mib) - 1, int(p * len(mib)))]) if mib else (lambda p: None)
    return {"max_mib": mib[-1] if mib else None, "p50_mib": q(0.5), "p90_mib": q(0.9),
            "outcomes": outcomes}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--top", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
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
        items = make_mutants(seeds, os.path.join(d, "m"), args.count, seed=args.seed)
        forked_growth(seeds[0][1])  # warm: kernels compiled in the parent
        grown = sorted(((forked_growth(p), p) for _, p in items), reverse=True)[: args.top]
        print(f"{len(items)} mutants read (forked), {time.time() - t0:.0f} s; the top "
              f"{len(grown)} grew {grown[-1][0] // 1024}..{grown[0][0] // 1024} MiB",
              file=sys.stderr, flush=True)
        ours, theirs = [], []
        for k, (_, p) in enumerate(grown):  # pairs as they come: a partial run still tells
            ours.append(fresh("lancenb", p))
            theirs.append(fresh("pylance", p))
            print(f"{k + 1}/{len(grown)} {os.path.basename(p)}: lancenb {ours[-1]}, "
                  f"pylance {theirs[-1]}", file=sys.stderr, flush=True)
    print(json.dumps({"mutants": args.count, "top": args.top,
                      "forked_growth_mib": {"max": grown[0][0] // 1024,
                                            "min_of_top": grown[-1][0] // 1024},
                      "lancenb": _summary(ours), "pylance": _summary(theirs),
                      "seconds": round(time.time() - t0)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
