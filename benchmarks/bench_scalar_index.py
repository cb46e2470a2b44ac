"""Scalar indices, lancenb vs pylance in one run: build time and peak memory per index
type, and filter latency with each library's index and without (issue 35).

    .venv/bin/python benchmarks/bench_scalar_index.py [--rows N] [--quick] [--data DIR]

The data (``--rows``, default 10,000,000; ``--quick``: 500,000) is written once by pylance
(file format 2.x, fragments of 1M rows) and copied, so that each library indexes its own
copy of the same files. Columns: ``id`` (a random permutation of 0..N-1, BTREE), ``cat``
(int32 of 1,000 values, BITMAP), ``labels`` (1-3 of 200 strings, LABEL_LIST), ``name`` (8
random lower-case letters, NGRAM), ``ts`` (row number plus noise, ZONEMAP), ``key``
(random int64 in 0..10N, BLOOMFILTER). INVERTED has ``bench_fts.py``.

Each build runs in a fresh child process (one per library and type): wall time, and
peak RSS over the process's RSS after import and open (the high-water mark is reset by
``/proc/self/clear_refs`` when the kernel allows it, else the baseline is subtracted).
lancenb's numba kernels come from their on-disk cache, as in any process after the first.

Lookups run in one process per library, warm (one untimed run first), median of
``--repeat`` runs, on both libraries' indices, and without an index
(``use_scalar_index=False``), projecting ``id``. Every variant must return the same number
of rows (checked). With ``--data DIR`` the datasets are kept and a later run reuses them
(``--lookups-only`` skips the builds, ``--no-scans`` the unindexed filters,
``--lookup-types`` limits the lookups to some index types). ``--before TREE`` runs the
lookups of another lancenb source tree as well (an earlier commit's ``lancenb/``, with
``kernels/`` linked in as ``lancenb/kernels``: ``git archive``), reported as "lancenb
before"; ``--rounds R`` runs the lookup processes R times in turn and keeps each
figure's lowest median (the load of a shared machine comes and goes).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
from _memory import peak_since, reset_peak  # noqa: E402  (benchmarks/ is on sys.path)

LIBS = ("lancenb", "pylance")
# index type -> column
TYPES = {"BTREE": "id", "BITMAP": "cat", "LABEL_LIST": "labels", "NGRAM": "name",
         "ZONEMAP": "ts", "BLOOMFILTER": "key"}
FRAG_ROWS = 1 << 20


def _batches(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    vocab = pa.array([f"l{i}" for i in range(200)])
    step = 1 << 18
    for a in range(0, n, step):
        m = min(step, n - a)
        nlab = rng.integers(1, 4, m)
        offs = np.concatenate([[0], np.cumsum(nlab)]).astype(np.int32)
        labels = pa.ListArray.from_arrays(
            pa.array(offs), vocab.take(pa.array(rng.integers(0, 200, int(offs[-1])))))
        letters = rng.integers(97, 123, (m, 8), dtype=np.uint8)
        name = pa.StringArray.from_buffers(
            m, pa.py_buffer(np.arange(0, 8 * m + 1, 8, dtype=np.int32).tobytes()),
            pa.py_buffer(letters.tobytes()))
        yield pa.record_batch({
            "id": pa.array(perm[a:a + m].astype(np.int64)),
            "cat": pa.array(rng.integers(0, 1000, m).astype(np.int32)),
            "labels": labels,
            "name": name,
            "ts": pa.array(np.arange(a, a + m, dtype=np.int64) * 10 + rng.integers(0, 50, m)),
            "key": pa.array(rng.integers(0, 10 * n, m).astype(np.int64)),
        })


def write_data(root: str, n: int) -> None:
    import lance

    first = next(_batches(min(n, 8)))
    reader = pa.RecordBatchReader.from_batches(first.schema, _batches(n))
    lance.write_dataset(reader, f"{root}/pylance", max_rows_per_file=FRAG_ROWS,
                        data_storage_version="2.0")
    shutil.copytree(f"{root}/pylance", f"{root}/lancenb")


def queries(n: int, root: str) -> list[tuple[str, str, str]]:
    """(index type, kind, filter) triples; values are taken from the data."""
    import lance

    ds = lance.dataset(f"{root}/pylance")
    row = ds.take([n // 3], columns=["key", "name"]).to_pylist()[0]
    keys = ds.take(list(range(5, n, max(1, n // 20)))[:20], columns=["key"])["key"].to_pylist()
    ids = [int(x) for x in np.random.default_rng(1).integers(0, n, 20)]
    span = max(10, n // 1000)
    sub = row["name"][2:6]
    return [
        ("BTREE", "point", f"id = {n // 2 + 7}"),
        ("BTREE", "IN-list (20)", f"id IN ({', '.join(map(str, ids))})"),
        ("BTREE", "range (0.1 %)", f"id >= {n // 4} AND id < {n // 4 + span}"),
        ("BITMAP", "point (0.1 %)", "cat = 17"),
        ("BITMAP", "IN-list (5)", "cat IN (1, 22, 333, 444, 999)"),
        ("LABEL_LIST", "array_has_any (1.5 %)", "array_has_any(labels, ['l7'])"),
        ("LABEL_LIST", "array_has_all", "array_has_all(labels, ['l7', 'l8'])"),
        ("NGRAM", "contains", f"contains(name, '{sub}')"),
        ("ZONEMAP", "range (0.1 %)", f"ts >= {n * 5} AND ts < {n * 5 + span * 10}"),
        ("BLOOMFILTER", "point", f"key = {row['key']}"),
        ("BLOOMFILTER", "IN-list (20)", f"key IN ({', '.join(map(str, keys))})"),
    ]


def _open(lib: str, uri: str):
    if lib == "lancenb":
        import lancenb
        return lancenb.dataset(uri)
    import lance
    return lance.dataset(uri)


def child_build(lib: str, typ: str, uri: str) -> None:
    ds = _open(lib, uri)
    ds.count_rows()
    base = reset_peak()
    t = time.perf_counter()
    ds.create_scalar_index(TYPES[typ], typ, replace=True)
    wall = time.perf_counter() - t
    print(json.dumps({"wall": wall, "peak": peak_since(base)}), flush=True)


def child_lookups(lib: str, root: str, n: int, repeat: int, scans: bool = True,
                  types: tuple = tuple(TYPES)) -> None:
    out = {}
    jobs = []
    for index_by in (*LIBS, "none") if scans else LIBS:
        ds = _open(lib, f"{root}/{'pylance' if index_by == 'none' else index_by}")
        for typ, kind, flt in queries(n, root):
            if typ not in types:
                continue
            kw = {"use_scalar_index": False} if index_by == "none" else {}

            def run(ds=ds, flt=flt, kw=kw):
                return ds.to_table(columns=["id"], filter=flt, **kw).num_rows

            jobs.append((typ, kind, index_by, run, run()))
    # (every query once more untimed before any is timed: the first pass over a
    # process's datasets runs slower than later ones, whichever is first)
    for *_, run, _ in jobs:
        run()
    for typ, kind, index_by, run, rows in jobs:
        lat = []
        for _ in range(repeat):
            t = time.perf_counter()
            run()
            lat.append(time.perf_counter() - t)
        out[f"{typ}|{kind}|{index_by}"] = [statistics.median(lat), rows]
    print(json.dumps(out), flush=True)


def _child(*args: str, path: str | None = None) -> dict:
    env = dict(os.environ)
    if path:  # (another lancenb tree first on the path: an earlier commit's, "before")
        env["PYTHONPATH"] = os.pathsep.join([path, *filter(None, [env.get("PYTHONPATH")])])
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", *args],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--quick", action="store_true", help="500,000 rows, 3 repeats")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--data", help="keep the datasets here (reused when present)")
    ap.add_argument("--types", default=",".join(TYPES), help="index types to build")
    ap.add_argument("--lookups-only", action="store_true")
    ap.add_argument("--no-scans", action="store_true", help="skip the unindexed filters")
    ap.add_argument("--lookup-types", default=",".join(TYPES),
                    help="index types whose lookups run")
    ap.add_argument("--before", help="a source tree of an earlier lancenb (its lancenb/ "
                    "with kernels/ linked in): its lookups too, as 'lancenb before'")
    ap.add_argument("--rounds", type=int, default=1, help="run the lookup processes this "
                    "many times in turn and keep each figure's lowest median (a shared "
                    "machine's load comes and goes)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        if args.child[0] == "build":
            child_build(*args.child[1:4])
        else:
            child_lookups(args.child[1], args.child[2], int(args.child[3]), int(args.child[4]),
                          args.child[5] == "1", tuple(args.child[6].split(",")))
        return
    n, repeat = (500_000, 3) if args.quick else (args.rows, args.repeat)
    root = args.data or tempfile.mkdtemp(prefix="bench_scalar_")
    try:
        if not os.path.exists(f"{root}/lancenb"):
            t = time.perf_counter()
            write_data(root, n)
            print(f"wrote {n:,} rows in {time.perf_counter() - t:.1f} s", flush=True)
        types = [t for t in args.types.split(",") if t]
        builds = {}
        if not args.lookups_only:
            for typ in types:
                for lib in LIBS:
                    builds[(typ, lib)] = r = _child("build", lib, typ, f"{root}/{lib}")
                    print(f"build {typ} {lib}: {r}", flush=True)
        runs = [(lib, lib, None) for lib in LIBS]
        if args.before:
            runs.insert(0, ("before", "lancenb", args.before))
        look: dict = {}
        for _ in range(max(1, args.rounds)):
            for name, lib, path in runs:
                got = _child("lookups", lib, root, str(n), str(repeat),
                             "0" if args.no_scans else "1", args.lookup_types, path=path)
                if "error" in got:
                    print(f"lookups {name}: {got['error']}")
                    look.setdefault(name, got)
                    continue
                held = look.setdefault(name, {})
                for k, v in got.items():
                    if k not in held or v[0] < held[k][0]:
                        held[k] = v
        report(n, repeat, types, builds, look)
    finally:
        if args.data is None:
            shutil.rmtree(root, ignore_errors=True)


def _ms(x) -> str:
    return "err" if x is None else f"{1000 * x:.1f}"


def report(n, repeat, types, builds, look) -> None:
    print(f"\n{n:,} rows, {-(-n // FRAG_ROWS)} fragments (written by pylance, format 2.0)\n")
    if builds:
        print("| index | build s lancenb | pylance | peak MiB lancenb | pylance |")
        print("|---|---:|---:|---:|---:|")
        for typ in types:
            a, b = builds[(typ, "lancenb")], builds[(typ, "pylance")]
            cells = [f"{r['wall']:.2f}" if "wall" in r else "err" for r in (a, b)]
            cells += [f"{r['peak'] / 2**20:.0f}" if "peak" in r else "err" for r in (a, b)]
            print(f"| {typ} | " + " | ".join(cells) + " |")
        print()
    print(f"Filter latency, ms (median of {repeat}, warm), reader / index built by:\n")
    cols = [("lancenb", "lancenb"), ("lancenb", "pylance"), ("pylance", "pylance"),
            ("pylance", "lancenb"), ("lancenb", "none"), ("pylance", "none")]
    head = ["lancenb / lancenb", "lancenb / pylance", "pylance / pylance",
            "pylance / lancenb", "lancenb, no index", "pylance, no index"]
    if "before" in look:
        cols = [("before", "lancenb"), ("before", "pylance")] + cols
        head = ["lancenb before / lancenb", "lancenb before / pylance"] + head
    print("| index | filter | rows | " + " | ".join(head) + " |")
    print("|---|---|---:|" + "---:|" * len(head))
    keys = list(dict.fromkeys(k.rsplit("|", 1)[0] for d in look.values()
                              if "error" not in d for k in d))
    for k in keys:
        cells, rows = [], set()
        for lib, by in cols:
            v = look.get(lib, {}).get(f"{k}|{by}")
            cells.append(_ms(v[0] if v else None))
            if v:
                rows.add(v[1])
        typ, kind = k.split("|")
        r = str(rows.pop()) if len(rows) == 1 else f"MISMATCH {sorted(rows)}"
        print(f"| {typ} | {kind} | {r} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
