#!/usr/bin/env python
"""Distributed writes, lancenb vs pylance: ``--workers`` processes each write
``--rows`` rows as fragments (``lancenb.fragment.write_fragments`` /
``lance.fragment.write_fragments``), the driver commits them as one Overwrite
(``LanceDataset.commit``), on a local disk, 2.1 data files for both.

Worker processes (and the driver) are warmed up (library imported, a small dataset
written and read, so JIT compilation and imports are not timed) before the clock starts. Each
worker makes its own data (``id`` int64, ``value`` float64, ``tag`` string of 16
values), untimed; the figures are

* write: wall time from submitting the writes to holding every worker's metadata;
* commit: the driver's ``LanceDataset.commit`` of all fragments;
* rows/s: rows / (write + commit);
* worker write: median seconds one worker spent in ``write_fragments``.

The result is read back (row count, with both libraries) before it is reported.

    python benchmarks/bench_distributed.py [--workers 8] [--rows 1000000] [--out ...]

With ``--index``: distributed IVF_PQ index builds (lancenb 1 worker vs 2 worker
processes vs pylance's single-shot build and 2 processes), see :func:`run_index`:

    python benchmarks/bench_distributed.py --index --rows 200000 [--dim 128]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import multiprocessing as mp
import os
import platform
import shutil
import statistics
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _results import replace_section  # noqa: E402  (benchmarks/ is on sys.path)

MARK_START = "<!-- bench_distributed:start -->"
MARK_END = "<!-- bench_distributed:end -->"
VERSION = "2.1"


def _lib(name: str):
    if name == "pylance":
        import lance

        return lance
    import lancenb

    return lancenb


def _data(k: int, rows: int):
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(k)
    tags = pa.array([f"tag-{i:02d}" for i in range(16)])
    return pa.table({"id": pa.array(np.arange(k * rows, (k + 1) * rows, dtype=np.int64)),
                     "value": pa.array(rng.standard_normal(rows)),
                     "tag": tags.take(pa.array(rng.integers(0, 16, rows)))})


def _warm(name: str) -> None:
    lib = _lib(name)
    d = tempfile.mkdtemp(prefix="bench_distributed_warm")
    try:
        metas = lib.fragment.write_fragments(_data(0, 50_000), d, data_storage_version=VERSION)
        ds = lib.LanceDataset.commit(d, lib.LanceOperation.Overwrite(_data(0, 1).schema, metas))
        ds.to_table()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _ready(barrier):
    barrier.wait(timeout=600)  # every worker holds one: all are started and warm
    return os.getpid()


def _write(name: str, uri: str, k: int, rows: int):
    lib = _lib(name)
    table = _data(k, rows)
    t0 = time.perf_counter()
    metas = lib.fragment.write_fragments(table, uri, data_storage_version=VERSION)
    return time.perf_counter() - t0, metas


def run(name: str, workers: int, rows: int, root: str) -> dict:
    uri = os.path.join(root, name)
    _warm(name)  # the driver too: it unpickles the metadata and commits
    ctx = mp.get_context("spawn")
    with cf.ProcessPoolExecutor(workers, mp_context=ctx, initializer=_warm,
                                initargs=(name,)) as pool:
        with ctx.Manager() as manager:
            barrier = manager.Barrier(workers)
            pids = set(pool.map(_ready, [barrier] * workers))
        assert len(pids) == workers, pids
        t0 = time.perf_counter()
        results = list(pool.map(_write, [name] * workers, [uri] * workers, range(workers),
                                [rows] * workers))
        t1 = time.perf_counter()
        lib = _lib(name)
        frags = [m for _, metas in results for m in metas]
        schema = _data(0, 1).schema
        ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Overwrite(schema, frags))
        t2 = time.perf_counter()
    n = workers * rows
    assert ds.count_rows() == n
    other = _lib("lancenb" if name == "pylance" else "pylance")
    assert other.dataset(uri).count_rows() == n
    size = sum(os.path.getsize(os.path.join(uri, "data", f))
               for f in os.listdir(os.path.join(uri, "data")))
    return {"write": t1 - t0, "commit": t2 - t1, "rows_s": n / (t2 - t0),
            "worker": statistics.median(r[0] for r in results), "files": len(frags),
            "mb": size / 1e6}


# -- distributed vector index builds (--index) ------------------------------------------
IDX_START = "<!-- bench_distributed_index:start -->"
IDX_END = "<!-- bench_distributed_index:end -->"


def _vectors(rows: int, dim: int, seed: int = 0):
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((64, dim)).astype(np.float32) * 4
    v = centers[rng.integers(0, 64, rows)] + rng.standard_normal((rows, dim), np.float32)
    return pa.table({"id": pa.array(np.arange(rows)),
                     "v": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), dim)})


def _warm_index(name: str) -> None:
    import numpy as np

    lib = _lib(name)
    d = tempfile.mkdtemp(prefix="bench_distributed_iwarm")
    try:
        lib.write_dataset(_vectors(4096, 16, 1), d, max_rows_per_file=2048)
        ds = lib.dataset(d)
        for kind in ("IVF_PQ", "IVF_FLAT"):
            model = {"ivf_centroids": np.ones((4, 16), np.float32) * np.arange(4)[:, None]}
            if kind == "IVF_PQ":
                model.update(pq_codebook=np.random.default_rng(0).standard_normal(
                    (2, 256, 8)).astype(np.float32), num_sub_vectors=2)
            segs = [ds.create_index_uncommitted("v", kind, fragment_ids=[f], **model)
                    for f in (0, 1)]
            ds.commit_existing_index_segments(f"w{kind}", "v",
                                              [ds.merge_existing_index_segments(segs)])
        ds.to_table(nearest={"column": "v", "q": [0.0] * 16, "k": 5})
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _segment(name: str, uri: str, version: int, frag_ids: list, model: dict):
    """One worker: the segment of ``frag_ids`` (assignment and PQ encoding)."""
    ds = _lib(name).dataset(uri, version=version)
    t0 = time.perf_counter()
    seg = ds.create_index_uncommitted("v", "IVF_PQ", fragment_ids=frag_ids, **model)
    return time.perf_counter() - t0, seg


def _recall(uri: str, lib, queries, k: int = 10, nprobes: int = 16) -> float:
    ds = lib.dataset(uri)
    hits = 0
    for q in queries:
        got = ds.to_table(nearest={"column": "v", "q": q, "k": k, "nprobes": nprobes},
                          columns=["id"])["id"].to_pylist()
        want = ds.to_table(nearest={"column": "v", "q": q, "k": k, "use_index": False},
                           columns=["id"])["id"].to_pylist()
        hits += len(set(got) & set(want))
    return hits / (k * len(queries))


def run_index(rows: int, dim: int, frags: int, parts: int, m: int, root: str) -> list:
    """Rows of the index table: (what, build s, merge s, commit s, total s, recall)."""
    import lance
    import numpy as np

    import lancenb

    src = os.path.join(root, "src")
    lancenb.write_dataset(_vectors(rows, dim), src, max_rows_per_file=rows // frags)
    rng = np.random.default_rng(7)  # (near the data: rows of it, moved a little)
    queries = np.asarray(lancenb.dataset(src).take(rng.choice(rows, 20).tolist(), ["v"])["v"]
                         .combine_chunks().flatten()).reshape(20, dim)
    queries = queries + rng.standard_normal(queries.shape).astype(np.float32)
    for name in ("lancenb", "pylance"):
        _warm_index(name)
    t0 = time.perf_counter()
    b = lancenb.indices.IndicesBuilder(lancenb.dataset(src), "v")
    ivf = b.train_ivf(num_partitions=parts)
    pq = b.train_pq(ivf, num_subvectors=m, sample_rate=min(256, rows // 256))
    train = time.perf_counter() - t0
    model = {"ivf_centroids": np.asarray(ivf.centroids.flatten()).reshape(parts, dim),
             "pq_codebook": np.asarray(pq.codebook.flatten()).reshape(m, 256, dim // m),
             "num_sub_vectors": m}
    out = [("train IVF + PQ once (lancenb IndicesBuilder, driver)", train, None, None, train,
            None)]
    ctx = mp.get_context("spawn")
    for name, workers in (("lancenb", 1), ("lancenb", 2), ("pylance", 2)):
        uri = os.path.join(root, f"{name}{workers}")
        shutil.copytree(src, uri)
        version = lancenb.dataset(uri).version
        groups = [list(range(frags))[w::workers] for w in range(workers)]
        ds = _lib(name).dataset(uri)
        with cf.ProcessPoolExecutor(workers, mp_context=ctx, initializer=_warm_index,
                                    initargs=(name,)) as pool:
            list(pool.map(time.sleep, [0.5] * workers))  # (started and warm)
            t0 = time.perf_counter()
            got = list(pool.map(_segment, [name] * workers, [uri] * workers,
                                [version] * workers, groups, [model] * workers))
            t1 = time.perf_counter()
            segs = [s for _, s in got]
            merged = ds.merge_existing_index_segments(segs) if workers > 1 else segs[0]
            t2 = time.perf_counter()
            ds.commit_existing_index_segments("v_idx", "v", [merged])
            t3 = time.perf_counter()
        rec = _recall(uri, lancenb, queries)
        assert abs(_recall(uri, lance, queries) - rec) < 0.05
        out.append((f"{name}: {workers} worker process{'es' if workers > 1 else ''} "
                    f"(create_index_uncommitted), merge, commit", t1 - t0,
                    t2 - t1 if workers > 1 else None, t3 - t2, t3 - t0, rec))
    for name in ("pylance", "lancenb"):
        uri = os.path.join(root, f"{name}_single")
        shutil.copytree(src, uri)
        ds = _lib(name).dataset(uri)
        t0 = time.perf_counter()
        ds.create_index("v", "IVF_PQ", **model)
        t1 = time.perf_counter()
        out.append((f"{name}: single-shot create_index, same model (driver)", t1 - t0, None,
                    None, t1 - t0, _recall(uri, lancenb, queries)))
    return out


def main_index(args) -> None:
    import lance

    root = tempfile.mkdtemp(prefix="bench_distributed_index")
    try:
        res = run_index(args.rows, args.dim, args.frags, args.partitions, args.sub_vectors,
                        root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    intro = (f"IVF_PQ over {args.rows:,} x {args.dim} float32 (64 clusters), "
             f"{args.frags} fragments, {args.partitions} partitions, {args.sub_vectors} "
             f"sub-vectors x 8 bits. The model is trained once in the driver; spawned, "
             f"warmed-up worker processes each build one segment over their fragments "
             f"(`create_index_uncommitted` with the shared centroids and codebook), the "
             f"driver merges the segments and commits them as one index. Recall@10 at "
             f"nprobes 16 against exact search, 20 queries, searched by lancenb (pylance's "
             f"within 0.05 on the same index). {os.cpu_count()} CPUs, Python "
             f"{platform.python_version()}, pylance {lance.__version__}. " + args.note)
    lines = [IDX_START, "## Distributed vector index build (`benchmarks/bench_distributed.py "
             "--index`)", "", textwrap.fill(intro.strip(), 88, break_on_hyphens=False), "",
             "| what | build (s) | merge (s) | commit (s) | total (s) | recall@10 |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]

    def f(v, fmt):
        return "" if v is None else format(v, fmt)

    for what, build, merge, commit, total, rec in res:
        lines.append(f"| {what} | {build:.2f} | {f(merge, '.2f')} | {f(commit, '.3f')} "
                     f"| {total:.2f} | {f(rec, '.3f')} |")
    lines.append(IDX_END)
    text = "\n".join(lines)
    print(text)
    if args.out:
        replace_section(args.out, text, IDX_START, IDX_END)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    ap.add_argument("--note", default="", help="a line about the run (machine load, ...)")
    ap.add_argument("--index", action="store_true",
                    help="distributed IVF_PQ builds instead of writes (--rows 200000)")
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--frags", type=int, default=8)
    ap.add_argument("--partitions", type=int, default=256)
    ap.add_argument("--sub-vectors", type=int, default=16)
    args = ap.parse_args(argv)
    if args.index:
        return main_index(args)
    root = tempfile.mkdtemp(prefix="bench_distributed")
    try:
        res = {name: run(name, args.workers, args.rows, root) for name in ("lancenb", "pylance")}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    import lance

    intro = (f"{args.workers} spawned worker processes each write {args.rows:,} rows "
             f"(int64 id, float64 value, 16-value string tag) with `fragment.write_fragments`; "
             f"the driver commits all fragments as one `LanceOperation.Overwrite`. Local disk, "
             f"{VERSION} data files, workers warmed up before timing. {os.cpu_count()} CPUs, "
             f"Python {platform.python_version()}, pylance {lance.__version__}. "
             + args.note)
    lines = [MARK_START,
             "## Distributed writes (`benchmarks/bench_distributed.py`)",
             "",
             textwrap.fill(intro.strip(), 88, break_on_hyphens=False),
             "",
             "| library | write (s) | commit (s) | rows/s | worker write, median (s) "
             "| data files | data MB |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, r in res.items():
        lines.append(f"| {name} | {r['write']:.2f} | {r['commit']:.3f} | {r['rows_s']:,.0f} "
                     f"| {r['worker']:.2f} | {r['files']} | {r['mb']:.1f} |")
    a, b = res["lancenb"], res["pylance"]
    lines += ["", f"lancenb / pylance, write + commit time: "
              f"{(a['write'] + a['commit']) / (b['write'] + b['commit']):.2f}x.", MARK_END]
    text = "\n".join(lines)
    print(text)
    if args.out:
        replace_section(args.out, text, MARK_START, MARK_END)


if __name__ == "__main__":
    main()
