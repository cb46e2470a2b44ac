"""Full-text search, lancenb vs pylance in one run: INVERTED index build time and
query latency (top 10 by BM25) on a synthetic corpus, each library on its own index
and on the other's.

    .venv/bin/python benchmarks/bench_fts.py [num_docs] [work_dir]   # default 200_000

Each index is built in a child process (``multiprocessing`` spawn): its wall time and
peak resident memory (``VmHWM`` of the child, which includes the interpreter and the
imported libraries, measured on their own as ``baseline``) are printed.
With ``work_dir`` the datasets and indices are kept there and reused by a later run
(queries only: the 1M-document figures). Queries run in two rounds, each index queried
first once, in a process that has not just built anything when the indices are reused.

The corpus: documents of 10-60 words drawn from a Zipf(1.1) vocabulary of 50,000 words.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa


def corpus(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}x" for i in range(50_000)])
    lengths = rng.integers(10, 61, n)
    ranks = (rng.zipf(1.1, int(lengths.sum())) - 1) % len(vocab)
    words = vocab[ranks]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    w = pa.array(words.tolist(), pa.string())
    w = w.combine_chunks() if isinstance(w, pa.ChunkedArray) else w
    lists = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), w)
    import pyarrow.compute as pc
    return pa.table({"id": np.arange(n), "text": pc.binary_join(lists, " ")})


def timed(fn, repeat=1):
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out) if repeat == 1 else statistics.median(out)


def _peak_mib() -> float:
    """This process's peak resident memory (``VmHWM``: the high-water mark of its own
    address space; ``ru_maxrss`` would carry the forking parent's over an exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _build_child(lib: str, uri: str, out) -> None:
    if lib == "lancenb":
        import lancenb as mod
    else:
        import lance as mod
    ds = mod.dataset(uri)
    base = _peak_mib()
    t = time.perf_counter()
    ds.create_scalar_index("text", "INVERTED")
    out.put((time.perf_counter() - t, base, _peak_mib()))


def build_in_child(lib: str, uri: str) -> tuple[float, float, float]:
    """``(seconds, baseline MiB, peak MiB)`` of building the INVERTED index of ``uri``
    with ``lib`` in a fresh process."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_build_child, args=(lib, uri, q))
    p.start()
    secs, base, peak = q.get()
    p.join()
    return secs, base, peak


def main(n: int, work_dir: str | None = None) -> None:
    import os

    import lance

    import lancenb

    root = work_dir or tempfile.mkdtemp(prefix="bench_fts_")
    try:
        queries = ["w5x", "w50x w60x", "w500x", "w3x w4000x w20000x", "w1x w2x"]
        if not os.path.exists(f"{root}/pylance"):
            t = corpus(n)
            for lib in ("lancenb", "pylance"):
                lancenb.write_dataset(t, f"{root}/{lib}", max_rows_per_file=1 << 20)
            del t
            for lib in ("lancenb", "pylance"):
                secs, base, peak = build_in_child(lib, f"{root}/{lib}")
                print(f"docs={n} build lib={lib} seconds={secs:.2f} "
                      f"peak_rss_mib={peak:.0f} baseline_mib={base:.0f}", flush=True)
        else:
            print(f"docs={n} reusing {root} (queries only)")
        for order in (("lancenb", "pylance"), ("pylance", "lancenb")):
            for index_by in order:
                uri = f"{root}/{index_by}"
                for reader, ds in (("lancenb", lancenb.dataset(uri)),
                                   ("pylance", lance.dataset(uri))):
                    ds.to_table(full_text_query=queries[0], limit=10)  # (open the index)
                    lat = [timed(lambda q=q, ds=ds: ds.to_table(
                        full_text_query=q, limit=10, columns=["id"]), repeat=5)
                        for q in queries]
                    print(f"index={index_by} query={reader} top10_ms median_of_queries="
                          f"{1000 * statistics.median(lat):.2f} max={1000 * max(lat):.2f} "
                          f"per_query={' '.join(f'{1000 * x:.1f}' for x in lat)}", flush=True)
    finally:
        if work_dir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000,
         sys.argv[2] if len(sys.argv) > 2 else None)
