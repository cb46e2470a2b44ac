#!/usr/bin/env python
"""Start-up benchmark: first use of lancenb in a fresh process, cold and warm Numba cache.

Run from the repository root::

    python benchmarks/bench_startup.py [--runs K] [--cold-runs C] [--dir D] [--out FILE]
    python benchmarks/bench_startup.py --breakdown --cache C [--runs K]

The scenario (issue 18), each time in a new Python process: ``import`` the library;
open, scan and take 20 rows from each of eight small pylance-written 2.1 datasets that
between them use every encoding family (bit-packed and flat mini-blocks, FSST and plain
binary, dictionary, RLE, constant/all-null, full-zip vectors and blobs, nested lists and
structs); then write one 100,000-row mixed table as a new dataset.

It is run for lancenb with an empty ``NUMBA_CACHE_DIR`` (cold: every kernel compiles),
with the cache that run filled (warm), and for pylance; and ``import lancenb`` alone is
timed against ``import pyarrow; import numba``. The cold run also records every Numba
compilation (the ``numba:compile`` event) so the report lists how many specialisations
were compiled and the 20 slowest (self time: a kernel that calls another kernel compiles
it inside its own compilation; that time is counted for the callee).

``--breakdown`` runs only the warm scenario (``--cache``: a filled ``NUMBA_CACHE_DIR``)
with timers on the stages of a kernel's first call, to show where a warm start goes:
CPU seconds summed over all calls of each stage (stages nest: the first call of a
kernel includes loading it, which includes reading its cache file).

No timing assertions: this only measures and reports (medians of the runs).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from _results import replace_section  # noqa: E402  (benchmarks/ is on sys.path)

MARK_START = "<!-- bench_startup:start -->"
MARK_END = "<!-- bench_startup:end -->"
HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = 4_000          # rows of each small read dataset
WRITE_ROWS = 100_000  # rows of the written table
TAKE = 20


def log(msg: str = "") -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# inputs (made once, with pyarrow and pylance, in the parent process)


def _read_tables(n: int) -> dict:
    """Eight small tables, each leaning on one family of encodings."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(7)

    def nulls(values, typ=None):
        return pa.array(values, typ, mask=rng.random(len(values)) < 0.1)

    words = ["lance", "numba", "arrow", "column", "format", "spark", "page", "https://", ".com/"]
    text = [" ".join(words[j] for j in rng.integers(0, len(words), 6)) for _ in range(n)]
    vec = rng.standard_normal(n * 64).astype(np.float32)
    blobs = [bytes(rng.integers(0, 256, int(k), dtype=np.uint8)) for k in
             rng.integers(200, 2000, n // 8)]
    list_lens = rng.integers(0, 5, n)
    offsets = np.concatenate([[0], np.cumsum(list_lens)]).astype(np.int32)
    items = rng.integers(-1000, 1000, int(offsets[-1])).astype(np.int32)
    return {
        "bitpacked": pa.table({
            "i8": pa.array(rng.integers(-100, 100, n).astype(np.int8)),
            "i32": nulls(rng.integers(0, 5000, n).astype(np.int32)),
            "i64": pa.array(rng.integers(-2**40, 2**40, n)),
            "u16": pa.array(rng.integers(0, 60000, n).astype(np.uint16)),
            "u64": pa.array(rng.integers(0, 2**63, n, dtype=np.uint64)),
            "ts": pa.array(rng.integers(0, 2 * 10**15, n), pa.timestamp("us")),
            "date": pa.array(rng.integers(0, 30000, n).astype(np.int32), pa.date32()),
        }),
        "floats": pa.table({
            "f16": pa.array(rng.standard_normal(n).astype(np.float16)),
            "f32": nulls(rng.standard_normal(n).astype(np.float32)),
            "f64": pa.array(rng.standard_normal(n)),
            "fsb16": pa.array([bytes(rng.integers(0, 256, 16, dtype=np.uint8))
                               for _ in range(n)], pa.binary(16)),
        }),
        "fsst": pa.table({
            "text": pa.array(text),
            "ltext": nulls(text, pa.large_string()),
        }),
        "binary": pa.table({
            "bin": pa.array([bytes(rng.integers(0, 256, int(k), dtype=np.uint8))
                             for k in rng.integers(0, 30, n)]),
            "short": nulls([str(x) for x in rng.integers(0, 10**6, n)]),
        }),
        "dictionary": pa.table({
            "cat": pa.array([words[i] for i in rng.integers(0, 4, n)]),
            "small": pa.array(rng.integers(0, 3, n).astype(np.int64)),
        }),
        "rle_const": pa.table({
            "runs": pa.array(np.repeat(np.arange(n // 200, dtype=np.int32), 200)),
            "const": pa.array(np.full(n, 7, np.int64)),
            "flag": pa.array(rng.random(n) < 0.3),
            "flag_n": nulls(rng.random(n) < 0.5),
            "all_null": pa.nulls(n, pa.int32()),
        }),
        "fullzip": pa.table({
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec), 64),
            "blob": pa.array(blobs * 8, pa.large_binary()),
        }),
        "nested": pa.table({
            "ints": pa.ListArray.from_arrays(pa.array(offsets), pa.array(items)),
            "strs": pa.array([[words[j] for j in rng.integers(0, 9, int(k))]
                              for k in list_lens], pa.list_(pa.string())),
            "st": pa.StructArray.from_arrays(
                [pa.array(rng.integers(0, 100, n).astype(np.int32)), pa.array(text)],
                ["a", "b"]),
        }),
    }


def _write_table(n: int):
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(11)
    words = ["red", "green", "blue", "cyan", "magenta"]
    return pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "small": pa.array(rng.integers(0, 1000, n).astype(np.int32)),
        "price": pa.array(rng.standard_normal(n)),
        "ratio": pa.array(rng.random(n).astype(np.float32)),
        "flag": pa.array(rng.random(n) < 0.5),
        "ts": pa.array(rng.integers(0, 2 * 10**15, n), pa.timestamp("us", "UTC")),
        "color": pa.array([words[i] for i in rng.integers(0, 5, n)]),
        "name": pa.array([f"user-{x}@example.com" for x in rng.integers(0, 10**7, n)]),
        "tags": pa.array([[words[j] for j in rng.integers(0, 5, int(k))]
                          for k in rng.integers(0, 4, n)], pa.list_(pa.string())),
        "vec": pa.FixedSizeListArray.from_arrays(
            pa.array(rng.standard_normal(n * 8).astype(np.float32)), 8),
    })


def prepare(root: str) -> None:
    """Write the eight datasets with pylance and the write input as an Arrow IPC file."""
    import lance
    import pyarrow as pa

    done = os.path.join(root, ".done")
    if os.path.exists(done):
        return
    log(f"preparing inputs in {root}")
    for name, t in _read_tables(ROWS).items():
        lance.write_dataset(t, os.path.join(root, "read", name), data_storage_version="2.1")
    t = _write_table(WRITE_ROWS)
    with pa.OSFile(os.path.join(root, "write.arrow"), "wb") as f, \
            pa.ipc.new_file(f, t.schema) as w:
        w.write_table(t)
    open(done, "w").close()


# ---------------------------------------------------------------------------
# the child process


_COMPILES: list = []


def _listen() -> None:
    """Record every Numba compilation: (kernel, argument types, self seconds)."""
    from numba.core import event

    stack: list = []

    class _L(event.Listener):
        def on_start(self, ev):
            stack.append([time.perf_counter(), 0.0])

        def on_end(self, ev):
            t0, inner = stack.pop()
            took = time.perf_counter() - t0
            if stack:
                stack[-1][1] += took
            d = ev.data["dispatcher"]
            name = f"{d.py_func.__module__.rsplit('.', 1)[-1]}.{d.py_func.__name__}"
            _COMPILES.append((name, str(tuple(ev.data["args"])), took - inner))

    event.register("numba:compile", _L())


# the stages of a warm start --breakdown times: (module, class or None, function, label)
_STAGES = (
    ("lancenb.kernels._jit", "_KernelDispatcher", "_compile_for_args",
     "first call of a kernel from Python, in all"),
    ("numba.core.base", "BaseContext", "refresh",
     "target-context refresh (imports numba's lowering registries)"),
    ("lancenb.kernels._jit", "_KernelDispatcher", "_normalised",
     "which parameters a kernel writes (source reading)"),
    ("numba.core.caching", "IndexDataCacheFile", "_load_index", "read a kernel's cache index"),
    ("numba.core.caching", "IndexDataCacheFile", "_load_data",
     "read and unpickle a cached specialisation"),
    ("lancenb.kernels._jit", "_EntryFile", "_load_data",
     "read and unpickle a cached specialisation (lancenb's unpickler)"),
    ("numba.core.caching", "Cache", "_index_key", "cache key (hash of the bytecode)"),
    ("numba.core.compiler", "CompileResult", "_rebuild", "numba's rebuild of a compile result"),
    ("lancenb.kernels._jit", None, "_rebuild", "lancenb's rebuild of a compile result"),
    ("llvmlite.binding", None, "parse_bitcode", "parse LLVM bitcode"),
    ("numba.core.codegen", "JitEngine", "_load_defined_symbols",
     "record the symbol names of a module"),
    ("numba.core.codegen", "CPUCodeLibrary", "__init__", "new code library (empty module)"),
    ("numba.core.codegen", "CPUCodeLibrary", "_finalize_final_module",
     "load the object code into the JIT engine"),
)
_TIMES: dict = {}


def _time_stages() -> None:
    """Wrap each stage of :data:`_STAGES` that exists with a CPU timer."""
    import importlib

    for module, cls, name, label in _STAGES:
        try:
            owner = importlib.import_module(module)
            if cls is not None:
                owner = getattr(owner, cls)
            fn = getattr(owner, name)
        except (ImportError, AttributeError):
            continue  # not in this version of numba or lancenb
        rec = _TIMES.setdefault(label, [0, 0.0])

        def timed(*a, _fn=fn, _rec=rec, **k):
            t = time.process_time()
            try:
                return _fn(*a, **k)
            finally:
                _rec[0] += 1
                _rec[1] += time.process_time() - t

        setattr(owner, name, timed)


def child(impl: str, root: str, stats: bool, breakdown: bool = False) -> None:
    t0 = time.perf_counter()
    if stats:
        _listen()
    if breakdown:
        c0 = time.process_time()
        import numba  # noqa: F401  (timed on its own)

        numba_cpu = time.process_time() - c0
        _time_stages()
    if impl == "lancenb":
        import lancenb as lib
    else:
        import lance as lib
    import pyarrow as pa
    t1 = time.perf_counter()
    rows = 0
    for name in sorted(os.listdir(os.path.join(root, "read"))):
        ds = lib.dataset(os.path.join(root, "read", name))
        rows += ds.to_table().num_rows
        n = ds.count_rows()
        rows += ds.take(list(range(0, n, max(1, n // TAKE)))[:TAKE]).num_rows
    t2 = time.perf_counter()
    with pa.memory_map(os.path.join(root, "write.arrow")) as f:
        table = pa.ipc.open_file(f).read_all()
    out = tempfile.mkdtemp(prefix="bench_startup_w_")
    lib.write_dataset(table, os.path.join(out, "t"), data_storage_version="2.1")
    t3 = time.perf_counter()
    res = {"import": t1 - t0, "read": t2 - t1, "write": t3 - t2, "rows": rows}
    if breakdown:
        res["stages"] = _TIMES
        res["numba_import_cpu"] = numba_cpu
        res["cpu_in_process"] = time.process_time()
        res["specialisations"] = _count_specialisations()
    if stats:
        res["compiles"] = _COMPILES
        res["specialisations"] = _count_specialisations()
    print("@@" + json.dumps(res))
    import shutil

    shutil.rmtree(out, ignore_errors=True)


def _count_specialisations() -> dict:
    """Specialisations held by every kernel dispatcher (compiled or loaded from cache)."""
    from numba.core.registry import CPUDispatcher

    kernels = sigs = 0
    for mod in list(sys.modules.values()):
        if not getattr(mod, "__name__", "").startswith("lancenb.kernels"):
            continue
        for v in vars(mod).values():
            if isinstance(v, CPUDispatcher) and v.py_func.__module__ == mod.__name__:
                kernels += 1
                sigs += len(v.signatures)
    return {"dispatchers": kernels, "signatures": sigs}


# ---------------------------------------------------------------------------
# the parent


def _env(cache: str | None) -> dict:
    env = dict(os.environ)
    env.pop("NUMBA_DISABLE_JIT", None)
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = cache
    return env


# the interpreter lancenb's runs use (--python: e.g. a virtualenv with the built wheel)
LANCENB_PYTHON = sys.executable


def run_scenario(impl: str, root: str, cache: str | None, stats: bool = False,
                 breakdown: bool = False) -> dict:
    py = LANCENB_PYTHON if impl == "lancenb" else sys.executable
    cmd = [py, os.path.abspath(__file__), "--child", impl, "--dir", root]
    if stats:
        cmd.append("--stats")
    if breakdown:
        cmd.append("--breakdown")
    t0 = time.perf_counter()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, env=_env(cache), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{impl} child failed:\n{p.stderr[-4000:]}")
    line = [x for x in p.stdout.splitlines() if x.startswith("@@")][-1]
    res = json.loads(line[2:])
    res["wall"] = wall
    # CPU seconds (user + system) of the whole process: on a shared, loaded machine
    # they move much less than wall time does
    res["cpu"] = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return res


def time_import(code: str, cache: str | None) -> float:
    t0 = time.perf_counter()
    subprocess.run([LANCENB_PYTHON, "-c", code], env=_env(cache), check=True)
    return time.perf_counter() - t0


def med(xs) -> float:
    return statistics.median(xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="warm and pylance runs (median)")
    ap.add_argument("--cold-runs", type=int, default=1, help="empty-cache runs (median)")
    ap.add_argument("--dir", default=None, help="inputs directory (kept; made if missing)")
    ap.add_argument("--out", default=None, help="markdown file to update (RESULTS.md)")
    ap.add_argument("--child", choices=("lancenb", "pylance"), help=argparse.SUPPRESS)
    ap.add_argument("--stats", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--breakdown", action="store_true",
                    help="time the stages of a warm start (needs --cache), print a table")
    ap.add_argument("--cache", default=None, help="a filled NUMBA_CACHE_DIR for --breakdown")
    ap.add_argument("--python", default=None,
                    help="interpreter for lancenb's runs, e.g. a virtualenv with the built "
                         "wheel installed (pylance runs under this one)")
    args = ap.parse_args()
    if args.python:
        global LANCENB_PYTHON
        LANCENB_PYTHON = args.python
    root = args.dir or os.path.join(tempfile.gettempdir(), "lancenb_bench_startup")
    if args.child:
        child(args.child, root, args.stats, args.breakdown)
        return
    os.makedirs(root, exist_ok=True)
    prepare(root)
    if args.breakdown:
        if not args.cache:
            raise SystemExit("--breakdown needs --cache: a NUMBA_CACHE_DIR the scenario filled")
        print(render_breakdown([run_scenario("lancenb", root, args.cache, breakdown=True)
                                for _ in range(args.runs)]))
        return

    if args.cold_runs < 1:
        raise SystemExit("--cold-runs must be at least 1: the warm runs use the cache the "
                         "cold runs fill")
    cold, stats = [], None
    for i in range(args.cold_runs):
        cache = tempfile.mkdtemp(prefix="bench_startup_cache_")
        r = run_scenario("lancenb", root, cache, stats=(i == 0))
        log(f"cold  lancenb: {r['wall']:.2f} s (import {r['import']:.2f}, read "
            f"{r['read']:.2f}, write {r['write']:.2f})")
        if i == 0:
            stats = r
        cold.append(r)
    warm, ref = [], []
    for _ in range(args.runs):
        warm.append(run_scenario("lancenb", root, cache))
        ref.append(run_scenario("pylance", root, None))
        log(f"warm  lancenb: {warm[-1]['wall']:.2f} s   pylance: {ref[-1]['wall']:.2f} s")
    imp_l, imp_b = [], []
    for _ in range(max(5, args.runs)):
        imp_l.append(time_import("import lancenb", cache))
        imp_b.append(time_import("import pyarrow; import numba", cache))
    log(f"import lancenb {med(imp_l):.3f} s, import pyarrow+numba {med(imp_b):.3f} s")

    report = render(cold, warm, ref, imp_l, imp_b, stats)
    print(report)
    if args.out:
        replace_section(args.out, f"{MARK_START}\n{report}{MARK_END}", MARK_START, MARK_END)


def render_breakdown(runs) -> str:
    """The --breakdown table: median CPU seconds and calls of each stage over the runs."""
    lines = [f"Warm start, stages of the kernels' first calls (median of {len(runs)} runs, "
             "CPU s summed over the calls; stages nest):", "",
             "| stage | calls | CPU s |", "| --- | ---: | ---: |"]
    for _, _, _, label in _STAGES:
        got = [r["stages"][label] for r in runs if label in r["stages"]]
        if got and max(g[0] for g in got):
            lines.append(f"| {label} | {med([g[0] for g in got]):.0f} | "
                         f"{med([g[1] for g in got]):.3f} |")
    sp = runs[0]["specialisations"]
    lines += ["",
              f"- whole process: {med([r['wall'] for r in runs]):.2f} s wall, "
              f"{med([r['cpu'] for r in runs]):.2f} s CPU; `import numba` "
              f"{med([r['numba_import_cpu'] for r in runs]):.3f} s CPU; "
              f"{sp['signatures']} specialisations of {sp['dispatchers']} kernels loaded"]
    return "\n".join(lines) + "\n"


def render(cold, warm, ref, imp_l, imp_b, stats) -> str:
    def row(label, rs):
        return (f"| {label} | {med([r['wall'] for r in rs]):.2f} | "
                f"{med([r['cpu'] for r in rs]):.2f} | "
                f"{med([r['import'] for r in rs]):.2f} | {med([r['read'] for r in rs]):.2f} | "
                f"{med([r['write'] for r in rs]):.2f} |")

    p = med([r["wall"] for r in ref])
    pc = med([r["cpu"] for r in ref])
    lines = [
        "## Start-up: first use in a fresh process (`benchmarks/bench_startup.py`)",
        "",
        f"Run {_dt.date.today().isoformat()} on {platform.machine()}, {os.cpu_count()} cores "
        f"(shared, noisy machine); cold runs: {len(cold)}, warm/pylance runs: {len(warm)} "
        "(medians). Scenario: import; open, scan and take 20 rows from eight pylance 2.1 "
        f"datasets of {ROWS:,} rows; write a {WRITE_ROWS:,}-row mixed table. Seconds; "
        "'total' is the whole process's wall time, 'CPU' its user + system seconds.",
        "",
        "| run | total | CPU | import | read 8 datasets | write |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        row("lancenb, empty Numba cache", cold),
        row("lancenb, warm cache", warm),
        row("pylance 14.0.2", ref),
        "",
        f"- cold / pylance: {med([r['wall'] for r in cold]) / p:.1f}x wall, "
        f"{med([r['cpu'] for r in cold]) / pc:.1f}x CPU; warm / pylance: "
        f"{med([r['wall'] for r in warm]) / p:.2f}x wall, "
        f"{med([r['cpu'] for r in warm]) / pc:.2f}x CPU",
        f"- `import lancenb` {med(imp_l):.3f} s vs `import pyarrow; import numba` "
        f"{med(imp_b):.3f} s ({med(imp_l) / med(imp_b):.2f}x)",
    ]
    if stats:
        comp = stats["compiles"]
        total = sum(c[2] for c in comp)
        sp = stats["specialisations"]
        lines += [
            f"- cold run: {len(comp)} compilations ({total:.1f} s of compile time, self), "
            f"{sp['signatures']} specialisations over {sp['dispatchers']} kernels loaded",
            "",
            "Top 20 compilations by self time (cold run):",
            "",
            "| kernel | argument types | s |",
            "| --- | --- | ---: |",
        ]
        for name, sig, t in sorted(comp, key=lambda c: -c[2])[:20]:
            sig = sig if len(sig) < 110 else sig[:107] + "..."
            lines.append(f"| `{name}` | `{sig}` | {t:.2f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
