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

``--scans`` measures plain scans instead (``ds.to_batches()`` of every column): the
embeddings and a table of 10 x N URL-like strings, each written by pylance and by
lancenb, rows/s and MB/s by wall clock and per CPU-second of the process (all its
threads), in alternating rounds. ``--arrow`` adds, for each 0-worker epoch, the same
epoch without the DataLoader and without the tensor conversion (``to_tensor_fn=None``,
the library's Arrow batches alone), so an epoch's time splits into the library's part
and torch's (``default_convert`` walks lists of strings value by value).

    python benchmarks/bench_loader.py [--quick] [--rows N] [--workers 0,2] [--arrow]
    python benchmarks/bench_loader.py --scans [--rows N] [--rounds 3]

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


def _torch_dataset(lib: str, uri: str, columns, shuffled: bool, arrow: bool = False):
    if lib == "lancenb":
        from lancenb.sampler import ShardedBatchSampler
        from lancenb.torch.data import LanceDataset
    else:
        from lance.sampler import ShardedBatchSampler
        from lance.torch.data import LanceDataset
    sampler = ShardedBatchSampler(0, 1, randomize=True, seed=1) if shuffled else None
    kw = {}
    if arrow:
        kw["to_tensor_fn"] = None
    elif lib == "pylance":
        kw["to_tensor_fn"] = pylance_to_tensor
    return LanceDataset(uri, batch_size=BATCH, columns=columns, sampler=sampler, **kw)


def _clock():
    return time.perf_counter(), time.process_time()


def arrow_epoch(lib, uri, columns, shuffled):
    """The library's part of a 0-worker epoch: the LanceDataset's Arrow batches,
    iterated directly; ``(best wall s, best CPU s, rows)``."""
    ds = _torch_dataset(lib, uri, columns, shuffled, arrow=True)
    for _ in ds:
        pass
    wall = cpu = float("inf")
    for _ in range(REPEAT):
        t0, c0 = _clock()
        n = sum(b.num_rows for b in ds)
        t1, c1 = _clock()
        wall, cpu = min(wall, t1 - t0), min(cpu, c1 - c0)
    return wall, cpu, n


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
    best = cpu = float("inf")
    for _ in range(REPEAT):  # the machine is shared: the best of REPEAT epochs
        t0, c0 = _clock()
        seen = []
        for batch in loader:
            seen.append(_ids(batch).copy())
        t1, c1 = _clock()
        best, cpu = min(best, t1 - t0), min(cpu, c1 - c0)
    ids = np.concatenate(seen) if seen else np.array([], np.int64)
    del loader
    # (the CPU time is this process's: with workers it leaves theirs out)
    return best, len(ids), len(np.unique(ids)), cpu


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
    best = cpu = float("inf")
    for _ in range(REPEAT):
        t0, c0 = _clock()
        for p in picks[2:]:
            ds.take(p, columns=columns)
        t1, c1 = _clock()
        best, cpu = min(best, t1 - t0), min(cpu, c1 - c0)
    return best, n_batches * size, cpu


def strings_table(rows: int, seed: int = 5) -> pa.Table:
    """``rows`` URL-like strings of 30-60 bytes (the scans' string table)."""
    rng = np.random.default_rng(seed)
    hosts = np.array([f"https://host{i}.example.com/" for i in range(50)], dtype=object)
    words = np.array("alpha beta gamma delta epsilon zeta eta theta iota kappa".split(),
                     dtype=object)
    s = (hosts[rng.integers(0, 50, rows)] + words[rng.integers(0, 10, rows)] + "/"
         + rng.integers(0, 10**9, rows).astype(str).astype(object))
    return pa.table({"s": pa.array(s.tolist(), pa.string())})


def scan(lib: str, uri: str):
    """``ds.to_batches()`` of every column: ``(best wall s, best CPU s, Arrow bytes)``."""
    if lib == "pylance":
        import lance as mod
    else:
        import lancenb as mod
    ds = mod.dataset(uri)
    nbytes = sum(b.nbytes for b in ds.to_batches())  # warm
    wall = cpu = float("inf")
    for _ in range(3):
        t0, c0 = _clock()
        for _b in ds.to_batches():
            pass
        t1, c1 = _clock()
        wall, cpu = min(wall, t1 - t0), min(cpu, c1 - c0)
    return wall, cpu, nbytes


def scans(rows: int, rounds: int) -> None:
    """Plain scans, lancenb and pylance alternating, tables written by both."""
    import lance

    import lancenb

    tables = {"embeddings": make_tables(rows)["embeddings"],
              "strings": strings_table(rows * 10)}
    best: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench_loader-") as tmp:
        uris = {}
        for name, table in tables.items():
            for writer, mod in (("pylance", lance), ("lancenb", lancenb)):
                uri = os.path.join(tmp, f"{name}-{writer}.lance")
                mod.write_dataset(table, uri, max_rows_per_file=max(table.num_rows // 4, 1))
                uris[(name, writer)] = uri
        for r in range(rounds):
            for (name, writer), uri in uris.items():
                for lib in ("lancenb", "pylance"):
                    wall, cpu, nbytes = scan(lib, uri)
                    key = (name, writer, lib)
                    w0, c0, _ = best.get(key, (float("inf"), float("inf"), 0))
                    best[key] = (min(w0, wall), min(c0, cpu), nbytes)
                    print(f"round {r} {name:10s} written by {writer:8s} read by {lib:8s} "
                          f"{nbytes / wall / 1e9:6.2f} GB/s wall {nbytes / cpu / 1e9:6.2f} "
                          f"GB/s per CPU-s", file=sys.stderr, flush=True)
    print(f"\nbench_loader --scans: {rows:,} embeddings (768 float32), {rows * 10:,} "
          f"strings, 4 fragments each, best of 3 scans x {rounds} rounds, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}\n")
    print("| table | written by | read by | GB/s (wall) | GB/s per CPU-s |")
    print("|---|---|---|---:|---:|")
    for (name, writer, lib), (wall, cpu, nbytes) in best.items():
        print(f"| {name} | {writer} | {lib} | {nbytes / wall / 1e9:.2f} | "
              f"{nbytes / cpu / 1e9:.2f} |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="20k embeddings, under 3 minutes")
    ap.add_argument("--rows", type=int, default=None, help="embedding rows (default 100k)")
    ap.add_argument("--workers", default="0,2")
    ap.add_argument("--arrow", action="store_true",
                    help="also the 0-worker epochs' Arrow batches alone (library's part)")
    ap.add_argument("--scans", action="store_true", help="plain scans only (see above)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of --scans")
    args = ap.parse_args(argv)
    rows = args.rows or (20_000 if args.quick else 100_000)
    if args.scans:
        scans(rows, args.rounds)
        return
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
                order = "shuffled" if shuffled else "sequential"
                for w in workers:
                    for lib in ("lancenb", "pylance"):
                        dt, got, distinct, cpu = epoch(lib, uri, cols, shuffled, w)
                        out.append((name, order, w, lib, got / dt,
                                    mb * got / table.num_rows / dt,
                                    got / cpu if w == 0 else None, got, distinct,
                                    table.num_rows))
                        print(f"{name:10s} {order:10s} w={w} {lib:8s} "
                              f"{out[-1][4]:12,.0f} rows/s {out[-1][5]:8,.0f} MB/s "
                              f"rows {got}/{table.num_rows} distinct {distinct}",
                              file=sys.stderr, flush=True)
                        if w == 0 and args.arrow:
                            dt, cpu, n = arrow_epoch(lib, uri, cols, shuffled)
                            out.append((name, order + ", Arrow only", w, lib, n / dt,
                                        mb * n / table.num_rows / dt, n / cpu, n, n, n))
            for lib in ("lancenb", "pylance"):
                dt, n, cpu = random_takes(lib, uri, cols, table.num_rows)
                out.append((name, "take 256", "-", lib, n / dt, mb * n / table.num_rows / dt,
                            n / cpu, n, n, n))
    print(f"\nbench_loader: {rows:,} embedding rows, batch {BATCH}, best of {REPEAT} "
          f"epochs, {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}; {time.perf_counter() - began:.0f} s\n")
    print("| table | order | workers | library | rows/s | MB/s | rows per CPU-s | "
          "rows delivered / distinct (of) |")
    print("|---|---|---|---|---:|---:|---:|---|")
    for name, order, w, lib, rps, mbs, per_cpu, got, distinct, total in out:
        cpu_txt = "" if per_cpu is None else f"{per_cpu:,.0f}"
        print(f"| {name} | {order} | {w} | {lib} | {rps:,.0f} | {mbs:,.0f} | {cpu_txt} | "
              f"{got:,} / {distinct:,} ({total:,}) |")


if __name__ == "__main__":
    main()
