#!/usr/bin/env python
"""Dataset-level corruption fuzzing at scale (the nightly run).

    python scripts/fuzz_datasets.py --count 50000 [--seed 0] [--batch 2000] [--keep DIR]

Writes small valid datasets with lancenb and pylance, damages one metadata object of a
copy ``--count`` times (manifests as bytes and as protobuf fields, transaction,
deletion, tag and hint files, junk names; see property_tests/corrupt_dataset.py), and
exercises each copy in one worker subprocess under a 2 GiB address-space limit and a
per-input CPU-time limit. Prints the counts (ok / lance-error / other / memory / hang /
crash) and every problem input; ``--keep`` copies problem datasets there. Exit
status 1 when any problem was found.
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

from corrupt_dataset import make_dataset_mutants, run_datasets, seed_datasets  # noqa: E402


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
    with tempfile.TemporaryDirectory(prefix="lancenb-dsfuzz-") as d:
        seeds = seed_datasets(os.path.join(d, "seeds"))
        warm = run_datasets([("dataset", s) for s in seeds], timeout=3600, input_seconds=900)
        if warm["problems"] or warm["counts"] != {"ok": len(seeds)}:
            print(json.dumps({"valid seeds failed": warm}, indent=1))
            return 1
        done = 0
        while done < args.count:
            n = min(args.batch, args.count - done)
            work = os.path.join(d, f"b{done}")
            items = make_dataset_mutants(seeds, work, n, seed=args.seed * 1_000_003 + done)
            res = run_datasets(items)
            for k, v in res["counts"].items():
                totals[k] = totals.get(k, 0) + v
            for path, what in res["problems"]:
                problems.append((path, what))
                if args.keep:  # the dataset as the worker left it, and what happened
                    os.makedirs(args.keep, exist_ok=True)
                    kept = os.path.join(args.keep, f"{len(problems)}-{os.path.basename(path)}")
                    shutil.copytree(path, kept)
                    with open(kept + ".txt", "w") as f:
                        f.write(f"seed {args.seed}, batch at {done}: {what}\n")
            shutil.rmtree(work, ignore_errors=True)
            done += n
            print(f"{done}/{args.count} datasets, {time.time() - t0:.0f} s: {totals}",
                  file=sys.stderr, flush=True)
    print(json.dumps({"datasets": args.count, "seconds": round(time.time() - t0),
                      "counts": totals, "problems": problems[:50]}, indent=1))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
