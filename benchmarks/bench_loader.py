"""Training-loader throughput: lancenb.torch vs pylance's lance.torch in one run.

For each table (embeddings: N x 768 float32; images: binary values of ~8 KiB; a mixed
tabular set: ints, floats, strings, booleans, 16-d vectors), each written once by
pylance, an epoch through ``torch.utils.data.DataLoader(LanceDataset(...),
batch_size=None)`` with 0 and 2 workers, sequential (the default sampler) and shuffled
(``ShardedBatchSampler(0, 1, randomize=True)``). Workers are persistent, forked for
lancenb and spawned for pylance (not fork-safe), and epochs after the first are timed
(the best of two), so worker start-up is not counted. Each row reports rows/s, MB/s
(Arrow bytes of the columns read) and the rows the epoch delivered / distinct ids
(pylance hands a user's sampler to every worker unchanged, so its workers repeat rows).
Then random-batch takes (256 rows) through ``ds.take``.

    python benchmarks/bench_loader.py [--quick] [--rows N] [--workers 0,2]

Prints a markdown table (the integrator copies it into RESULTS.md).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import sys
import tempfile
import time
import warnings

import numpy as np
import pyarrow as pa

warnings.filterwarnings("ignore", message="lance is not fork-safe")
warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
warnings.filterwarnings("ignore", message="with_row_id is not supported")

BATCH = 1024
REPEAT = 2


def make_tables(rows: int, seed: int = 0) -> dict[str, pa.Table]:
    rng = np.random.default_rng(seed)
    emb_rows = rows
    img_rows = max(rows // 4, 1000)
    mixed_rows = rows * 2
    words = np.array("alpha beta gamma delta epsilon zeta eta theta iota kappa".split())
    return {
        "embeddings": pa.table({
            "id": np.arange(emb_rows),
            "vec": pa.FixedSizeListArray.from_arrays(
                pa.array(rng.random(emb_rows * 768, dtype=np.float32)), 768)}),
        "images": pa.table({
            "id": np.arange(img_rows),
            "img": pa.array([rng.bytes(int(n)) for n in rng.integers(4096, 12288, img_rows)],
                            pa.binary())}),
        "mixed": pa.table({
            "id": np.arange(mixed_rows),
            "label": rng.integers(0, 1000, mixed_rows).astype(np.int32),
            "score": rng.random(mixed_rows).astype(np.float32),
            "flag": rng.random(mixed_rows) < 0.5,
            "text": pa.array(words[rng.integers(0, len(words), mixed_rows)]),
            "vec": pa.FixedSizeListArray.from_arrays(
                pa.array(rng.random(mixed_rows * 16, dtype=np.float32)), 16)}),
    }


def _ids(batch):
    return batch["id"].numpy() if isinstance(batch, dict) else batch.numpy()


def pylance_to_tensor(batch, **kwargs):
    """pylance's default conversion refuses binary and string columns: its conversion
    for the others, lists of bytes / str for those (what lancenb's default gives)."""
    from lance.torch.data import _to_tensor

    names = batch.column_names
    lists = [n for n in names if pa.types.is_binary(batch.schema.field(n).type)
             or pa.types.is_string(batch.schema.field(n).type)]
    rest = [n for n in names if n not in lists]
    out = _to_tensor(batch.select(rest)) if rest else {}
    if not isinstance(out, dict):
        out = {rest[0]: out}
    out.update({n: batch.column(n).to_pylist() for n in lists})
    return out


def _torch_dataset(lib: str, uri: str, columns, shuffled: bool):
    if lib == "lancenb":
        from lancenb.sampler import ShardedBatchSampler
        from lancenb.torch.data import LanceDataset
    else:
        from lance.sampler import ShardedBatchSampler
        from lance.torch.data import LanceDataset
    sampler = ShardedBatchSampler(0, 1, randomize=True, seed=1) if shuffled else None
    kw = {}
    if lib == "pylance":
        kw["to_tensor_fn"] = pylance_to_tensor
    return LanceDataset(uri, batch_size=BATCH, columns=columns, sampler=sampler, **kw)


def epoch(lib, uri, columns, shuffled, workers):
    import torch

    ds = _torch_dataset(lib, uri, columns, shuffled)
    # lancenb's workers fork (it is fork-safe, and forking starts faster); pylance's spawn
    ctx = multiprocessing.get_context("fork" if lib == "lancenb" else "spawn") \
        if workers else None
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers,
                                         multiprocessing_context=ctx,
                                         persistent_workers=workers > 0)
    for _ in loader:  # warm: workers started, files opened, kernels loaded
        pass
    best = float("inf")
    for _ in range(REPEAT):  # the machine is shared: the best of REPEAT epochs
        t0 = time.perf_counter()
        seen = []
        for batch in loader:
            seen.append(_ids(batch).copy())
        best = min(best, time.perf_counter() - t0)
    ids = np.concatenate(seen) if seen else np.array([], np.int64)
    del loader
    return best, len(ids), len(np.unique(ids))


def random_takes(lib, uri, columns, total, n_batches=60, size=256):
    if lib == "lancenb":
        import lancenb as mod
    else:
        import lance as mod
    ds = mod.dataset(uri)
    rng = np.random.default_rng(3)
    picks = [np.sort(rng.choice(total, size, replace=False)) for _ in range(n_batches + 2)]
    for p in picks[:2]:
        ds.take(p, columns=columns)
    best = float("inf")
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        for p in picks[2:]:
            ds.take(p, columns=columns)
        best = min(best, time.perf_counter() - t0)
    return best, n_batches * size


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="20k embeddings, under 3 minutes")
    ap.add_argument("--rows", type=int, default=None, help="embedding rows (default 100k)")
    ap.add_argument("--workers", default="0,2")
    args = ap.parse_args(argv)
    rows = args.rows or (20_000 if args.quick else 100_000)
    workers = [int(w) for w in args.workers.split(",")]
    import lance

    began = time.perf_counter()
    tables = make_tables(rows)
    out = []
    with tempfile.TemporaryDirectory(prefix="bench_loader-") as tmp:
        for name, table in tables.items():
            uri = os.path.join(tmp, f"{name}.lance")
            lance.write_dataset(table, uri, max_rows_per_file=max(table.num_rows // 4, 1))
            cols = table.column_names
            mb = table.nbytes / 1e6
            for shuffled in (False, True):
                for w in workers:
                    for lib in ("lancenb", "pylance"):
                        dt, got, distinct = epoch(lib, uri, cols, shuffled, w)
                        out.append((name, "shuffled" if shuffled else "sequential", w, lib,
                                    got / dt, mb * got / table.num_rows / dt, got, distinct,
                                    table.num_rows))
                        print(f"{name:10s} {out[-1][1]:10s} w={w} {lib:8s} "
                              f"{out[-1][4]:12,.0f} rows/s {out[-1][5]:8,.0f} MB/s "
                              f"rows {got}/{table.num_rows} distinct {distinct}",
                              file=sys.stderr, flush=True)
            for lib in ("lancenb", "pylance"):
                dt, n = random_takes(lib, uri, cols, table.num_rows)
                out.append((name, "take 256", "-", lib, n / dt, mb * n / table.num_rows / dt,
                            n, n, n))
    print(f"\nbench_loader: {rows:,} embedding rows, batch {BATCH}, best of {REPEAT} "
          f"epochs, {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}; {time.perf_counter() - began:.0f} s\n")
    print("| table | order | workers | library | rows/s | MB/s | rows delivered / distinct"
          " (of) |")
    print("|---|---|---|---|---:|---:|---|")
    for name, order, w, lib, rps, mbs, got, distinct, total in out:
        print(f"| {name} | {order} | {w} | {lib} | {rps:,.0f} | {mbs:,.0f} | "
              f"{got:,} / {distinct:,} ({total:,}) |")


if __name__ == "__main__":
    main()
