#!/usr/bin/env python
"""Throughput of the FastLanes bitpacking kernels (``lancenb.kernels.bitpack``).

Run from the repository root::

    python benchmarks/bench_kernels_bitpack.py [--values N] [--repeat K]

For each element type and bit width it packs N random values (each 1024-block's
largest value needs exactly W bits) and times, single-threaded:

* ``inline_unpack``: N values from back-to-back inline chunks in a T-typed array;
* ``inline_unpack_chunks``: the same chunks laid out as a mini-block reader sees them:
  a uint8 buffer starting at an odd address, each chunk 8-byte padded;
* ``outofline_unpack``: the out-of-line form at the same W;
* ``inline_pack``: the writer side, for reference;
* a NumPy baseline that unpacks the out-of-line words with whole-array shifts and masks
  (one pass per row of the layout over all blocks at once);
* ``np.copyto`` of the decoded size, i.e. this machine's memory-copy speed for the same
  output.

Each number is the median of K timed runs after one warm-up call (so JIT compilation is
excluded). Values/s counts decoded values; GB/s counts bytes of decoded output. Every
result is checked against the input before timing. Prints a markdown table; writes
nothing.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

import numba
import numpy as np
from lancenb.kernels import bitpack as kb

CASES = [(32, w) for w in (1, 3, 8, 13, 17, 31)] + [(16, 3), (16, 9), (64, 8), (64, 33),
                                                     (8, 3)]
DTYPES = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
FL_ORDER = [0, 4, 2, 6, 1, 5, 3, 7]


def values_for(t: int, w: int, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.integers(0, 2**64, n, dtype=np.uint64) & np.uint64((1 << w) - 1)
    v[::1024] = (1 << w) - 1  # every block's width is exactly w
    return v.astype(DTYPES[t])


def chunk_buffer(words: np.ndarray, n: int, t: int):
    """The inline chunks as mini-block value buffers: ``(data, starts, sizes, counts)``,
    ``data`` a uint8 view starting 3 bytes into its allocation."""
    isz = t // 8
    starts, sizes, counts = [], [], []
    p = pos = 0
    for b in range(0, n, 1024):
        size = (1 + int(words[p]) * 1024 // t) * isz
        starts.append(pos)
        sizes.append(size)
        counts.append(min(1024, n - b))
        pos += (size + 7) // 8 * 8
        p += size // isz
    data = np.full(pos + 3, 0xFE, np.uint8)[3:]
    raw = words.view(np.uint8)
    q = 0
    for s, z in zip(starts, sizes):
        data[s:s + z] = raw[q:q + z]
        q += z
    return data, np.array(starts, np.int64), np.array(sizes, np.int64), np.array(counts,
                                                                                   np.int64)


def numpy_unpack(words: np.ndarray, w: int, n: int, out: np.ndarray) -> None:
    """Out-of-line words (whole blocks) -> ``out``, with NumPy whole-array operations."""
    dt = out.dtype.type
    t = out.dtype.itemsize * 8
    lanes = 1024 // t
    blocks = out.reshape(-1, 1024)
    if w == 0:
        out[:] = 0
        return
    w3 = words.reshape(-1, w, lanes)
    mask = dt((1 << w) - 1) if w < t else dt(np.iinfo(dt).max)
    for row in range(t):
        first, s = divmod(row * w, t)
        dst = blocks[:, FL_ORDER[row // 8] * 16 + (row % 8) * 128:][:, :lanes]
        v = w3[:, first, :] >> dt(s)
        if s + w > t:
            v |= w3[:, first + 1, :] << dt(t - s)
        np.bitwise_and(v, mask, out=dst)


def median_time(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(t: int, w: int, n: int, repeat: int) -> dict:
    """Median seconds of each way to decode (and to pack) ``n`` values of ``w`` bits."""
    dt = DTYPES[t]
    values = values_for(t, w, n, seed=t * 100 + w)
    inline = np.empty(int(kb.inline_chunk_words(values).sum()), dt)
    assert kb.inline_pack(values, inline) == len(inline)
    ool = np.empty(kb.outofline_words(n, w, t), dt)
    assert kb.outofline_pack(values, w, ool) == len(ool)
    data, starts, sizes, counts = chunk_buffer(inline, n, t)
    inline = np.frombuffer(inline.tobytes(), dt)  # decoders read read-only file bytes
    ool = np.frombuffer(ool.tobytes(), dt)
    data = np.frombuffer(bytes(3) + data.tobytes(), np.uint8)[3:]  # at an odd address
    out = np.empty(n, dt)
    err = np.zeros(2, np.int64)
    runs = {
        "inline_unpack": lambda: kb.inline_unpack(inline, n, out),
        "inline_unpack_chunks": lambda: kb.inline_unpack_chunks(data, starts, sizes, counts,
                                                                out, err),
        "outofline_unpack": lambda: kb.outofline_unpack(ool, w, n, out),
        "numpy": lambda: numpy_unpack(ool, w, n, out),
    }
    result = {}
    for name, fn in runs.items():
        out[:] = 0
        status = fn()
        assert status in (None, kb.OK), (name, status)
        assert np.array_equal(out, values), name
        result[name] = median_time(fn, repeat)
    packed = np.empty(len(inline), dt)
    result["inline_pack"] = median_time(lambda: kb.inline_pack(values, packed), repeat)
    src = values.copy()
    result["copy"] = median_time(lambda: np.copyto(out, src), repeat)
    return result


def cell(n: int, nbytes: int, sec: float) -> str:
    return f"{n / sec / 1e9:.2f} ({nbytes / sec / 1e9:.1f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--values", type=int, default=1 << 20, help="values per run (1Mi)")
    ap.add_argument("--repeat", type=int, default=15, help="timed runs per number (15)")
    args = ap.parse_args()
    n = max(1, args.values // 1024) * 1024  # whole blocks: the NumPy baseline has no tail

    rows = []
    for t, w in CASES:
        rows.append((t, w, measure(t, w, n, args.repeat)))
        print(f"u{t} W={w}: done", file=sys.stderr, flush=True)

    print("## FastLanes bitpacking kernels (`benchmarks/bench_kernels_bitpack.py`)\n")
    print(f"{n:,} values per run; median of {args.repeat} runs after a warm-up; one thread. "
          f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} logical "
          f"CPUs; numpy {np.__version__}, numba {numba.__version__}.\n")
    print("G values/s decoded (GB/s of decoded output in brackets); `copy` is `np.copyto` "
          "of the decoded size; `inline_pack` is G values/s packed.\n")
    print("| T | W | inline_unpack | inline_unpack_chunks | outofline_unpack | numpy shift/mask "
          "| copy | inline_pack |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for t, w, r in rows:
        nb = n * t // 8
        cols = [cell(n, nb, r[k]) for k in ("inline_unpack", "inline_unpack_chunks",
                                            "outofline_unpack", "numpy", "copy")]
        print(f"| u{t} | {w} | " + " | ".join(cols) + f" | {n / r['inline_pack'] / 1e9:.2f} |")


if __name__ == "__main__":
    main()
