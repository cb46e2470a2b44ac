#!/usr/bin/env python
"""Kernel speed when compiled for a portable CPU target vs for this machine's CPU.

Run from the repository root::

    python benchmarks/bench_kernel_targets.py [--rounds R] [--targets x86-64-v3,x86-64-v2]

The wheel ships kernels compiled for a portable target (``lancenb.tools.warmup.build_shipped``,
``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES``); this measures what that costs against the code
numba compiles for the host. It runs ``bench_kernels_bitpack.py`` and
``bench_kernels_misc.py`` once per configuration per round, rounds interleaved (host,
each target, host, ...), each configuration with its own ``NUMBA_CACHE_DIR`` (compilation
is outside the timed part of both benchmarks). Every throughput cell of their tables is
the median over rounds; the report gives, per target, the ratio target/host of each
cell (above 1: the portable code is faster) summarised as geometric mean, minimum and
maximum per benchmark, and the rows with the lowest ratios. Prints markdown; no
assertions.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from lancenb.tools.warmup import PORTABLE_TARGETS, _target_env  # noqa: E402

BENCHES = {
    "bitpack": ["bench_kernels_bitpack.py", "--values", str(1 << 19), "--repeat", "7"],
    "misc": ["bench_kernels_misc.py", "--values", "500000", "--repeat", "7"],
}
_NUM = re.compile(r"-?\d+(?:\.\d+)?")


def table(text: str) -> dict:
    """Cells of a markdown table: {(row label, column): first number in the cell}."""
    cells = {}
    header = None
    for line in text.splitlines():
        if not line.startswith("|") or set(line) <= set("|-: "):
            continue
        parts = [p.strip() for p in line.strip("|").split("|")]
        if header is None:
            header = parts
            continue
        nums = [_number(p) for p in parts]
        label = " / ".join(p for p, v in zip(parts, nums) if v is None)
        for col, v in zip(header, nums):
            if v is not None:
                cells[(label, col)] = v
    return cells


def _number(cell: str):
    """The number a cell starts with ("3,027", "5.12 (10.2)"), or None for a label."""
    first = cell.replace(",", "").split(" ")[0]
    return float(first) if _NUM.fullmatch(first) else None


def run(bench: str, target: str | None, cache: str) -> dict:
    script, *args = BENCHES[bench]
    if target is None:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for k in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_DISABLE_JIT"):
            env.pop(k, None)
    else:
        env = _target_env(target, cache)
    p = subprocess.run([sys.executable, os.path.join(HERE, script), *args], env=env,
                       capture_output=True, text=True, check=True)
    return table(p.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--targets", default="x86-64-v3,x86-64-v2")
    args = ap.parse_args()
    targets = [t for t in args.targets.split(",") if t]
    for t in targets:
        if t not in PORTABLE_TARGETS:
            raise SystemExit(f"unknown target {t}; known: {sorted(PORTABLE_TARGETS)}")
    configs = [None] + targets
    results = {(b, c): [] for b in BENCHES for c in configs}
    with tempfile.TemporaryDirectory(prefix="bench_targets_") as tmp:
        for r in range(args.rounds):
            for b in BENCHES:
                for c in configs:
                    results[b, c].append(run(b, c, os.path.join(tmp, str(c))))
                    print(f"round {r + 1}: {b} {c or 'host'} done", file=sys.stderr, flush=True)
            if r + 1 < args.rounds:  # a partial report after each round, to stderr
                report(results, targets, r + 1, sys.stderr)
    report(results, targets, args.rounds, sys.stdout)


def report(results: dict, targets: list, rounds: int, out) -> None:
    def say(s=""):
        print(s, file=out, flush=True)

    say(f"## Portable kernels vs host-compiled ({rounds} interleaved rounds, medians)\n")
    say("| target | benchmark | cells | geo-mean target/host | min | max |")
    say("|---|---|---:|---:|---:|---:|")
    worst = []
    for t in targets:
        for b in BENCHES:
            host = _medians(results[b, None])
            port = _medians(results[b, t])
            ratios = {k: port[k] / host[k] for k in host if k in port and host[k] > 0
                      and port[k] > 0 and "copy" not in k[1] and "memcpy" not in k[0]
                      and "numpy" not in k[1] and k[1] not in ("W", "x memcpy")}
            if not ratios:
                continue
            g = math.exp(statistics.fmean(math.log(v) for v in ratios.values()))
            say(f"| {t} | {b} | {len(ratios)} | {g:.3f} | {min(ratios.values()):.2f} | "
                f"{max(ratios.values()):.2f} |")
            worst += [(v, t, b, k) for k, v in ratios.items()]
    say("\nLowest ratios:\n")
    for v, t, b, k in sorted(worst)[:10]:
        say(f"- {t} {b} {k[0]} [{k[1]}]: {v:.2f}")


def _medians(runs: list) -> dict:
    keys = set().union(*runs)
    return {k: statistics.median(r[k] for r in runs if k in r) for k in keys}


if __name__ == "__main__":
    main()
