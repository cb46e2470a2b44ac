#!/usr/bin/env python
"""Corruption fuzzing at scale (the nightly run).

    python scripts/fuzz_corrupt.py --count 100000 [--seed 0] [--batch 2000] [--keep DIR]

Writes valid seed inputs with lancenb and pylance, reads them once (which compiles the
kernels into the Numba cache), damages them ``--count`` times, reads each in worker
subprocesses, and prints the counts (ok / lance-error / other / hang /
crash) and every problem input. ``--keep`` copies problem inputs there for
regression tests. Exit status 1 when any problem was found.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "property_tests"))

from corrupt import make_mutants, run_batch, seed_inputs  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=2000)
    ap.add_argument("--keep")
    args = ap.parse_args(argv)
    t0 = time.time()
    totals: dict[str, int] = {}
    problems = []
    with tempfile.TemporaryDirectory(prefix="lancenb-fuzz-") as d:
        seeds = seed_inputs(os.path.join(d, "seeds"))
        # read the valid seeds once first: with a fresh Numba cache this compiles the
        # kernels, which would otherwise count against the first mutants' time limit
        warm = run_batch(seeds, timeout=3600, input_seconds=900)
        if warm["problems"]:
            print(json.dumps({"valid seeds failed": warm["problems"]}, indent=1))
            return 1
        done = 0
        while done < args.count:
            n = min(args.batch, args.count - done)
            work = os.path.join(d, f"b{done}")
            items = make_mutants(seeds, work, n, seed=args.seed * 1_000_003 + done)
            res = run_batch(items)
            for k, v in res["counts"].items():
                totals[k] = totals.get(k, 0) + v
            for path, what in res["problems"]:
                problems.append((path, what))
                if args.keep:
                    os.makedirs(args.keep, exist_ok=True)
                    dst = os.path.join(args.keep, f"{len(problems)}-{os.path.basename(path)}")
                    if os.path.basename(os.path.dirname(path)) == "data":  # (kind dsfile)
                        shutil.copytree(os.path.dirname(os.path.dirname(path)), dst)
                    else:
                        shutil.copy(path, dst)
            shutil.rmtree(work, ignore_errors=True)
            done += n
            print(f"{done}/{args.count} inputs, {time.time() - t0:.0f} s: {totals}",
                  file=sys.stderr, flush=True)
    print(json.dumps({"inputs": args.count, "seconds": round(time.time() - t0),
                      "counts": totals, "problems": problems[:50]}, indent=1))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
