#!/usr/bin/env python
"""Kernel throughput: RLE, byte-stream split, dictionary and statistics kernels.

Run from the repository root::

    python benchmarks/bench_kernels_misc.py [--values N] [--repeat K]

Every kernel runs once to compile (or load from the Numba cache), then K timed runs
on generated data; the table shows the median as millions of values per second and
the output rate in GB/s. "memcpy" rows copy a buffer of the decoded size
(``np.copyto`` into preallocated memory) as the yardstick for decoders; ``x memcpy``
is how many times longer the kernel takes than that copy. Each result is checked
against the input once. Prints a markdown table; no timing assertions.
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

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from lancenb.kernels import bss, rle  # noqa: E402
from lancenb.kernels import dictionary as kd  # noqa: E402
from lancenb.kernels import stats as ks  # noqa: E402


def median_seconds(repeat: int, fn, *args) -> float:
    """Median wall time of ``fn(*args)`` over ``repeat`` runs after one warm-up."""
    fn(*args)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def plan_and_count(raw, width, bounds, runs):
    rle.plan_chunks(raw, width, rle.MAX_CHUNK_VALUES, rle.MAX_CHUNK_BYTES, 1,
                    np.empty(len(raw) // width + 1, np.int64))
    rle.encode_count(raw, width, bounds, 1, runs)


def decode_variable(offsets, data, indices, out_offsets, out_data):
    kd.decode_variable_size(offsets, data, indices)
    kd.decode_variable_fill(offsets, data, indices, out_offsets, out_data)


def runs_column(rng, n, mean, dtype):
    runs = rng.geometric(1 / mean, size=n)
    vals = rng.integers(0, 2**31, size=n)
    return np.repeat(vals, runs)[:n].astype(dtype)


def rle_page(arr):
    """Encode like a mini-block page: per chunk its values then its lengths."""
    width = arr.dtype.itemsize
    raw = arr.view(np.uint8)
    bounds = np.empty(len(arr) + 1, np.int64)
    nc = rle.plan_chunks(raw, width, rle.MAX_CHUNK_VALUES, rle.MAX_CHUNK_BYTES, 1, bounds)
    bounds = bounds[:nc + 1]
    runs = np.empty(nc, np.int64)
    total = rle.encode_count(raw, width, bounds, 1, runs)
    starts = np.zeros(nc, np.int64)
    np.cumsum(runs[:-1], out=starts[1:])
    vals = np.empty(total * width, np.uint8)
    lens = np.empty(total, np.uint8)
    assert rle.encode_fill(raw, width, bounds, 1, starts, vals, lens) == rle.OK
    src = np.concatenate([vals, lens])
    return (src, starts * width, runs * width, total * width + starts, runs.copy(),
            np.diff(bounds), bounds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--values", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    n, k = args.values, args.repeat
    rng = np.random.default_rng(0)
    rows = []

    def record(kernel, data, seconds, out_bytes, copy_seconds=None):
        ratio = f"{seconds / copy_seconds:.2f}" if copy_seconds else ""
        rows.append((kernel, data, n / seconds / 1e6, out_bytes / seconds / 1e9, ratio))

    # -- RLE ------------------------------------------------------------------------------
    for dtype in (np.int32, np.int64):
        width = np.dtype(dtype).itemsize
        for mean in (4, 32, 256):
            arr = runs_column(rng, n, mean, dtype)
            src, vs, vz, ls, lz, counts, bounds = rle_page(arr)
            out = np.empty(n * width, np.uint8)
            err = np.zeros(2, np.int64)
            assert rle.decode_chunks(src, vs, vz, ls, lz, counts, width, 1, out, err) == rle.OK
            assert np.array_equal(out, arr.view(np.uint8))
            raw = arr.view(np.uint8)
            copy = median_seconds(k, np.copyto, out, raw)
            t = median_seconds(k, rle.decode_chunks, src, vs, vz, ls, lz, counts, width, 1, out,
                               err)
            label = f"{np.dtype(dtype).name}, mean run {mean}"
            record("memcpy (decoded size)", label, copy, n * width)
            record("rle.decode_chunks", label, t, n * width, copy)
            runs = np.empty(len(counts), np.int64)
            t = median_seconds(k, plan_and_count, raw, width, bounds, runs)
            record("rle.plan_chunks + encode_count", label, t, n * width)

    # -- byte-stream split ----------------------------------------------------------------
    for dtype in (np.float32, np.float64):
        width = np.dtype(dtype).itemsize
        raw = rng.normal(size=n).astype(dtype).view(np.uint8)
        bounds = bss.chunk_bounds(n, width)
        split = np.empty_like(raw)
        back = np.empty_like(raw)
        assert bss.split(raw, width, bounds, split) == bss.OK
        starts, counts = bounds[:-1] * width, np.diff(bounds)
        assert bss.join(split, starts, counts, width, back) == bss.OK
        assert np.array_equal(back, raw)
        copy = median_seconds(k, np.copyto, back, raw)
        label = np.dtype(dtype).name
        record("memcpy", label, copy, n * width)
        record("bss.split", label, median_seconds(k, bss.split, raw, width, bounds, split),
               n * width, copy)
        record("bss.join", label, median_seconds(k, bss.join, split, starts, counts, width, back),
               n * width, copy)

    # -- dictionary -----------------------------------------------------------------------
    card = 1000
    for dtype in (np.int32, np.int64):
        width = np.dtype(dtype).itemsize
        items = rng.integers(0, 2**31, card).astype(dtype)
        idx = rng.integers(0, card, n).astype(np.uint32)
        values = items[idx].view(np.uint8)
        table = np.empty(kd.table_size(4 * card), np.uint64)
        got_idx = np.empty(n, np.uint32)
        first = np.empty(4 * card, np.int64)
        label = f"{np.dtype(dtype).name}, {card} distinct"
        assert kd.build_fixed(values, width, 4 * card, table, got_idx, first) == card
        record("dictionary.build_fixed", label, median_seconds(
            k, kd.build_fixed, values, width, 4 * card, table, got_idx, first), n * 4)
        out = np.empty(n * width, np.uint8)
        item_bytes = items.view(np.uint8)
        assert kd.decode_fixed(item_bytes, width, idx, out) == kd.OK
        assert np.array_equal(out, values)
        copy = median_seconds(k, np.copyto, out, values)
        record("memcpy (decoded size)", label, copy, n * width)
        record("dictionary.decode_fixed", label, median_seconds(
            k, kd.decode_fixed, item_bytes, width, idx, out), n * width, copy)

    words = [b"value-%06d" % i for i in range(card)]
    idx = rng.integers(0, card, n).astype(np.uint32)
    offsets = np.zeros(n + 1, np.int64)
    lengths = np.array([len(w) for w in words])[idx]
    np.cumsum(lengths, out=offsets[1:])
    data = np.frombuffer(b"".join(words[i] for i in idx.tolist()), np.uint8)
    table = np.empty(kd.table_size(4 * card), np.uint64)
    got_idx = np.empty(n, np.uint32)
    first = np.empty(4 * card, np.int64)
    label = f"strings (10 B), {card} distinct"
    assert kd.build_variable(offsets, data, 4 * card, table, got_idx, first) == card
    record("dictionary.build_variable", label, median_seconds(
        k, kd.build_variable, offsets, data, 4 * card, table, got_idx, first), n * 4)
    d_off = np.zeros(card + 1, np.int64)
    np.cumsum([len(w) for w in words], out=d_off[1:])
    d_data = np.frombuffer(b"".join(words), np.uint8)
    size = kd.decode_variable_size(d_off, d_data, idx)
    out_off, out_data = np.empty(n + 1, np.int64), np.empty(size, np.uint8)
    assert kd.decode_variable_fill(d_off, d_data, idx, out_off, out_data) == kd.OK
    assert np.array_equal(out_data, data)
    record("dictionary.decode_variable (size + fill)", label, median_seconds(
        k, decode_variable, d_off, d_data, idx, out_off, out_data), size + 8 * (n + 1))

    # -- statistics -----------------------------------------------------------------------
    ints = rng.integers(0, 10**6, n).astype(np.int64).view(np.uint8)
    reg = np.zeros(1 << ks.DEFAULT_PRECISION, np.uint8)
    record("stats.hll_fixed (p = 12)", "int64", median_seconds(
        k, ks.hll_fixed, ints, 8, 0, reg), 0)
    record("stats.hll_variable (p = 12)", label, median_seconds(
        k, ks.hll_variable, offsets, data, 0, reg), 0)
    record("stats.run_count", "int64", median_seconds(k, ks.run_count, ints, 8), 0)
    widths = np.empty(n // ks.BITWIDTH_CHUNK + 1, np.int64)
    record("stats.bit_widths", "int64", median_seconds(
        k, ks.bit_widths, ints, 8, ks.BITWIDTH_CHUNK, widths), 0)
    entropy = np.empty(8, np.int64)
    record("stats.byte_position_entropy (all values)", "int64", median_seconds(
        k, ks.byte_position_entropy, ints, 8, n, entropy), 0)

    print(f"Kernel benchmark: {n:,} values per run, median of {k} runs after a warm-up. "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"numpy {np.__version__}, numba {numba.__version__}"
          f"{' (JIT DISABLED)' if numba.config.DISABLE_JIT else ''}.\n")
    print("| kernel | data | M values/s | output GB/s | x memcpy |")
    print("|---|---|---:|---:|---:|")
    for kernel, data_label, mvals, gbs, ratio in rows:
        print(f"| {kernel} | {data_label} | {mvals:,.0f} | {gbs:.2f} | {ratio} |"
              if gbs else f"| {kernel} | {data_label} | {mvals:,.0f} | | |")


if __name__ == "__main__":
    main()
