#!/usr/bin/env python
"""File-level benchmark: lancenb vs pylance (both Lance 2.1) vs Parquet (zstd).

Run from the repository root::

    python benchmarks/bench_file.py [--rows N] [--repeat K] [--quick] [--out benchmarks/RESULTS.md]

For each generated table (ints, floats, strings, mixed) and each implementation it
measures, in one run: write time, full scan, one-column scan, take of 100 and of
1,000 random sorted rows, and the file size. Every measurement is warmed up once and
then repeated K times; the report shows medians. It also reports lancenb's
first-call (cold Numba cache) and cached start-up times, measured in fresh
subprocesses, and the peak RSS growth of a full scan, each in a fresh subprocess.

lancenb's results are compared with the input table on every call; a mismatch
aborts the run. Columns lancenb cannot write or read back correctly are dropped
up front (a probe per column) with a printed note, and listed in the report.

No timing assertions: this only measures and reports.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback

from _results import replace_section  # noqa: E402  (benchmarks/ is on sys.path)

MARK_START = "<!-- bench_file:start -->"
MARK_END = "<!-- bench_file:end -->"
IMPLS = ("lancenb", "pylance", "parquet")
TAKE_SIZES = (100, 1000)
# the column scanned alone in the "scan one column" measurement (first remaining
# column if this one was dropped)
SCAN_COLUMN = {"ints": "i64_random", "floats": "f64_walk", "strings": "url", "mixed": "ts_utc"}


def log(msg: str = "") -> None:
    print(msg, file=sys.stderr, flush=True)


def banner(msg: str) -> None:
    line = "!" * 78
    log(f"\n{line}\n{msg}\n{line}")


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------

def _random_strings(rng, n, lo, hi, alphabet, prefixes=None, null_frac=0.0):
    """n random strings of lengths in [lo, hi] built straight into Arrow buffers.

    With ``prefixes``, each string starts with one of them (cut to the string's length).
    """
    import numpy as np
    import pyarrow as pa

    lengths = rng.integers(lo, hi + 1, n).astype(np.int64)
    mask = rng.random(n) < null_frac if null_frac else None
    if mask is not None:
        lengths[mask] = 0
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    alpha = np.frombuffer(alphabet.encode(), dtype=np.uint8)
    data = alpha[rng.integers(0, len(alpha), int(offsets[-1]))]
    if prefixes:
        pbytes = [p.encode() for p in prefixes]
        pcat = np.frombuffer(b"".join(pbytes), dtype=np.uint8)
        plens = np.array([len(p) for p in pbytes], dtype=np.int64)
        pstart = np.concatenate([[0], np.cumsum(plens)[:-1]])
        pid = rng.integers(0, len(pbytes), n)
        copy = np.minimum(plens[pid], lengths)
        rows = np.repeat(np.arange(n), copy)
        intra = np.arange(int(copy.sum())) - np.repeat(np.cumsum(copy) - copy, copy)
        data[offsets[rows] + intra] = pcat[pstart[pid[rows]] + intra]
    validity = None
    if mask is not None:
        validity = pa.array(~mask).buffers()[1]
    return pa.StringArray.from_buffers(
        n, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data), validity,
        int(mask.sum()) if mask is not None else 0)


def make_tables(rows: int, seed: int = 42):
    """The benchmark tables, keyed by name (deterministic for a given seed)."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    n = rows
    tables = {}

    # (a) ints
    small = rng.integers(0, 100, n, dtype=np.int32)
    tables["ints"] = pa.table({
        "i32_seq": pa.array(np.arange(n, dtype=np.int32)),
        "i64_random": pa.array(rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max,
                                            n, dtype=np.int64, endpoint=True)),
        "i32_small_nulls": pa.array(small, mask=rng.random(n) < 0.10),
    })

    # (b) floats
    tables["floats"] = pa.table({
        "f64_walk": pa.array(100.0 + np.cumsum(rng.standard_normal(n))),
        "f32_unit": pa.array(rng.random(n, dtype=np.float32)),
    })

    # (c) strings
    words = ["alpha", "bravo", "cdn", "data", "echo", "files", "git", "hub", "img", "lance",
             "media", "news", "shop", "static", "video", "wiki"]
    hosts = [f"{a}{b}" for a in words for b in words][:200]
    tlds = ["com", "org", "net", "io", "dev"]
    prefixes = [f"{'https' if i % 4 else 'http'}://{'www.' if i % 3 == 0 else ''}"
                f"{h}.{tlds[i % len(tlds)]}/" for i, h in enumerate(hosts)]
    categories = ["books", "electronics", "garden", "toys", "grocery", "sports", "music",
                  "movies", "health", "beauty", "automotive", "tools", "baby", "pets",
                  "office", "shoes"]
    cat_idx = pa.array(rng.integers(0, len(categories), n, dtype=np.int32))
    tables["strings"] = pa.table({
        "url": _random_strings(rng, n, 10, 80, "abcdefghijklmnopqrstuvwxyz0123456789/-_",
                               prefixes=prefixes),
        "category": pa.DictionaryArray.from_arrays(cat_idx, pa.array(categories))
                      .dictionary_decode(),
        "comment_nullable": _random_strings(rng, n, 0, 40, "abcdefghijklmnopqrstuvwxyz ",
                                            null_frac=0.20),
    })

    # (d) mixed
    unscaled = rng.integers(-10**11, 10**11, n, dtype=np.int64)  # up to +-1e9 with 2 decimals
    dec = np.empty((n, 2), dtype=np.int64)
    dec[:, 0] = unscaled
    dec[:, 1] = unscaled >> 63  # sign extension to 128 bits (little-endian two's complement)
    dec_mask = rng.random(n) < 0.05
    ts = 1_700_000_000_000_000 + np.cumsum(rng.integers(0, 2_000_000, n, dtype=np.int64))
    tables["mixed"] = pa.table({
        "flag": pa.array(rng.random(n) < 0.3),
        "ts_utc": pa.array(ts, type=pa.timestamp("us", tz="UTC")),
        "day": pa.array(rng.integers(18_000, 20_000, n, dtype=np.int32), type=pa.date32()),
        "amount": pa.Array.from_buffers(pa.decimal128(18, 2), n,
                                        [pa.array(~dec_mask).buffers()[1], pa.py_buffer(dec)],
                                        null_count=int(dec_mask.sum())),
        "uuid": pa.Array.from_buffers(pa.binary(16), n, [None, pa.py_buffer(rng.bytes(16 * n))]),
        "u8": pa.array(rng.integers(0, 256, n, dtype=np.uint8)),
    })
    for t in tables.values():
        t.validate(full=True)
    return tables


# ---------------------------------------------------------------------------
# implementations: each has write(path, table), scan(path, columns), take(path, idx)
# ---------------------------------------------------------------------------

class LanceImpl:
    def __init__(self, name: str):
        self.name = name
        if name == "lancenb":
            from lancenb.file import LanceFileReader, LanceFileWriter
        else:
            from lance.file import LanceFileReader, LanceFileWriter
        self.Reader, self.Writer = LanceFileReader, LanceFileWriter

    def write(self, path, table):
        w = self.Writer(path, table.schema, version="2.1")
        w.write_batch(table)
        w.close()

    def scan(self, path, columns=None):
        return self.Reader(path, columns=columns).read_all().to_table()

    def take(self, path, idx):
        return self.Reader(path).take_rows(idx).to_table()


class ParquetImpl:
    """pyarrow Parquet, zstd, default row-group size.

    take: open a ParquetFile, read only the row groups that hold the wanted rows
    (``read_row_groups``), then ``Table.take`` the rows out of them -- the best random
    access plain pyarrow offers (it has no page-level row selection).
    """

    name = "parquet"

    def __init__(self):
        import pyarrow.parquet as pq
        self.pq = pq

    def write(self, path, table):
        self.pq.write_table(table, path, compression="zstd")

    def scan(self, path, columns=None):
        return self.pq.read_table(path, columns=columns)

    def take(self, path, idx):
        import numpy as np

        pf = self.pq.ParquetFile(path)
        md = pf.metadata
        counts = np.array([md.row_group(i).num_rows for i in range(md.num_row_groups)],
                          dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        rg_of = np.searchsorted(starts, idx, side="right") - 1
        needed = np.unique(rg_of)
        base = np.zeros(len(counts), dtype=np.int64)  # position of each needed group's
        base[needed] = np.concatenate([[0], np.cumsum(counts[needed])[:-1]])  # first row
        part = pf.read_row_groups([int(g) for g in needed])
        return part.take(idx - starts[rg_of] + base[rg_of])


def make_impl(name):
    return ParquetImpl() if name == "parquet" else LanceImpl(name)


# ---------------------------------------------------------------------------
# timing helpers
# ---------------------------------------------------------------------------

def timed(fn, repeat, check=None):
    """Warm up once, then ``repeat`` timed calls; returns the median seconds.

    ``fn(i)`` gets the repetition number (-1 for the warm-up); ``check(result)``
    runs outside the timed region after every call.
    """
    res = fn(-1)
    if check is not None:
        check(res)
    times = []
    for i in range(repeat):
        res = None
        gc.collect()
        t0 = time.perf_counter()
        res = fn(i)
        times.append(time.perf_counter() - t0)
        if check is not None:
            check(res)
    return statistics.median(times)


def _unlink(path):
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


class Mismatch(AssertionError):
    pass


def expect_equal(got, want, what):
    if not got.equals(want):
        detail = ""
        if got.schema != want.schema:
            detail = f"\n  schema got:\n{got.schema}\n  schema want:\n{want.schema}"
        else:
            bad = [c for c in want.column_names if not got[c].equals(want[c])]
            detail = f"\n  differing columns: {bad}"
        raise Mismatch(f"{what}: result != input ({got.num_rows} vs {want.num_rows} rows)"
                       f"{detail}")


def short_tb(exc: BaseException, limit: int = 4) -> str:
    """Traceback summary: the last frames and the exception line."""
    frames = traceback.extract_tb(exc.__traceback__)[-limit:]
    where = " <- ".join(f"{os.path.relpath(f.filename)}:{f.lineno} {f.name}"
                        for f in reversed(frames))
    lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
    msg = lines[0] if lines else ""
    # multi-line messages (numba's TypingError): keep the lines that say what and where
    extra = [x for x in lines[1:] if x.startswith((">>>", "During: typing", "File \""))]
    if extra:
        msg += " | " + " | ".join(extra[:3])
    return f"{type(exc).__name__}: {msg} [at {where}]"


# ---------------------------------------------------------------------------
# per-column probe: drop what lancenb cannot round-trip
# ---------------------------------------------------------------------------

def probe_columns(tables, tmp, rng_seed):
    import numpy as np

    lnb = make_impl("lancenb")
    dropped = []  # (table, column, reason)
    rng = np.random.default_rng(rng_seed)
    for tname, table in list(tables.items()):
        keep = []
        for cname in table.column_names:
            sub = table.select([cname])
            path = os.path.join(tmp, f"probe_{tname}_{cname}.lance")
            idx = np.sort(rng.choice(table.num_rows, min(1000, table.num_rows), replace=False))
            try:
                lnb.write(path, sub)
                expect_equal(lnb.scan(path), sub, "read_all")
                expect_equal(lnb.scan(path, [cname]), sub, "read_all(columns=[...])")
                expect_equal(lnb.take(path, idx), sub.take(idx), "take_rows")
                keep.append(cname)
            except Exception as e:  # anything lancenb raises drops the column
                reason = short_tb(e)
                dropped.append((tname, cname, str(table.schema.field(cname).type), reason))
                banner(f"NOTE: dropping column {tname}.{cname} "
                       f"({table.schema.field(cname).type}): lancenb failed on it\n  {reason}")
            finally:
                _unlink(path)
        if len(keep) != table.num_columns:
            if keep:
                tables[tname] = table.select(keep)
            else:
                banner(f"NOTE: dropping table {tname!r}: no column left")
                del tables[tname]
    return dropped


# ---------------------------------------------------------------------------
# the steady-state benchmark of one table
# ---------------------------------------------------------------------------

def bench_table(tname, table, impls, tmp, repeat, seed, notes):
    import numpy as np

    n = table.num_rows
    rng = np.random.default_rng(seed)
    take_sets = {k: [np.sort(rng.choice(n, min(k, n), replace=False)) for _ in range(repeat + 1)]
                 for k in TAKE_SIZES}
    col = SCAN_COLUMN.get(tname)
    if col not in table.column_names:
        col = table.column_names[0]
    one = table.select([col])
    res = {"rows": n, "columns": table.column_names, "nbytes": table.nbytes, "scan_column": col,
           "ms": {}, "size": {}, "paths": {}}

    for impl in impls:
        name = impl.name
        path = os.path.join(tmp, f"{tname}.{ 'parquet' if name == 'parquet' else name + '.lance'}")
        res["paths"][name] = path
        strict = name == "lancenb"
        warned = set()

        def check(what, want, strict=strict, name=name, warned=warned):
            def _check(got):
                try:
                    expect_equal(got, want, f"{name} {tname} {what}")
                except Mismatch as e:
                    if strict:
                        banner(f"ABORT: lancenb returned a wrong result\n{e}")
                        raise
                    if what not in warned:
                        warned.add(what)
                        notes.append(f"{name} {tname} {what}: result differs from the input "
                                     f"({str(e).splitlines()[-1].strip()})")
                        log(f"WARNING: {e}")
            return _check

        def do_write(i, impl=impl, path=path):
            """Returns its own time, so removing the previous file is not timed."""
            _unlink(path)
            gc.collect()
            t0 = time.perf_counter()
            impl.write(path, table)
            return time.perf_counter() - t0

        do_write(-1)  # warm-up
        wtimes = [do_write(i) for i in range(repeat)]
        ms = {"write": statistics.median(wtimes) * 1e3}
        res["size"][name] = os.path.getsize(path)

        ms["full scan"] = timed(lambda i, impl=impl, path=path: impl.scan(path), repeat,
                                check("full scan", table)) * 1e3
        ms[f"scan `{col}`"] = timed(lambda i, impl=impl, path=path: impl.scan(path, [col]),
                                    repeat, check(f"scan {col}", one)) * 1e3
        for k in TAKE_SIZES:
            sets = take_sets[k]
            wants = [table.take(s) for s in sets]
            state = {"i": 0}

            def take_fn(i, impl=impl, path=path, sets=sets, state=state):
                state["i"] = i
                return impl.take(path, sets[i])

            def take_check(got, wants=wants, state=state, k=k):
                check(f"take {k}", wants[state["i"]])(got)

            ms[f"take {k}"] = timed(take_fn, repeat, take_check) * 1e3
        res["ms"][name] = ms
        log(f"  {tname:8s} {name:8s} " + "  ".join(f"{op}={v:.2f}ms" for op, v in ms.items())
            + f"  size={res['size'][name] / 1e6:.2f}MB")
    return res


def cross_read(tname, table, res):
    """Can each Lance implementation read the other's file? (informational)"""
    out = []
    pairs = [("pylance", "lancenb"), ("lancenb", "pylance")]
    for reader, writer in pairs:
        if writer not in res["paths"] or reader not in res["paths"]:
            continue
        try:
            got = make_impl(reader).scan(res["paths"][writer])
            status = "ok" if got.equals(table) else "DIFFERENT RESULT"
        except Exception as e:
            status = f"error: {short_tb(e, 2)}"
        out.append(f"{reader} reads {writer}'s file: {status}")
    return out


# ---------------------------------------------------------------------------
# subprocess measurements: start-up and peak memory
# ---------------------------------------------------------------------------

STARTUP_CHILD = textwrap.dedent(r"""
    import json, sys, time
    impl, ipc_path, out_dir = sys.argv[1:4]
    t0 = time.perf_counter()
    if impl == "lancenb":
        from lancenb.file import LanceFileReader, LanceFileWriter
    else:
        from lance.file import LanceFileReader, LanceFileWriter
    t_import = time.perf_counter() - t0
    import numpy as np
    import pyarrow as pa
    import pyarrow.ipc
    with pa.ipc.open_file(ipc_path) as f:
        table = f.read_all()
    idx = np.arange(0, table.num_rows, 7)
    res = {"import": t_import}
    # pyarrow imports pandas (when installed) lazily on the first pa.array(<numpy>) call;
    # time that once up front so the columns below are the library's own first calls
    t0 = time.perf_counter()
    pa.array(np.arange(3))
    res["pa_array"] = time.perf_counter() - t0
    for rnd in ("first", "second"):
        path = f"{out_dir}/{impl}_{rnd}.lance"
        t0 = time.perf_counter()
        w = LanceFileWriter(path, table.schema, version="2.1")
        w.write_batch(table)
        w.close()
        t1 = time.perf_counter()
        got = LanceFileReader(path).read_all().to_table()
        t2 = time.perf_counter()
        took = LanceFileReader(path).take_rows(idx).to_table()
        t3 = time.perf_counter()
        ok = got.equals(table) and took.equals(table.take(idx))
        res[rnd] = {"write": t1 - t0, "read": t2 - t1, "take": t3 - t2, "ok": ok}
    print(json.dumps(res))
""")

MEMORY_CHILD = textwrap.dedent(r"""
    import gc, json, resource, sys, time
    impl, path, warm_path = sys.argv[1:4]
    import pyarrow as pa
    if impl == "parquet":
        import pyarrow.parquet as pq
        scan = lambda p: pq.read_table(p)
    else:
        if impl == "lancenb":
            from lancenb.file import LanceFileReader
        else:
            from lance.file import LanceFileReader
        scan = lambda p: LanceFileReader(p).read_all().to_table()

    def status():
        out = {}
        with open("/proc/self/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM"):
                    out[k] = int(v.split()[0]) * 1024
        return out

    # warm-up on a small file of the same schema: imports, kernel loading, thread pools
    t = scan(warm_path)
    del t
    gc.collect()
    try:  # reset the peak-RSS counter (VmHWM) to the current RSS
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        reset = True
    except OSError:
        reset = False
    before = status()
    t0 = time.perf_counter()
    table = scan(path)
    secs = time.perf_counter() - t0
    after = status()
    ru_max = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    peak = after["VmHWM"] if reset else max(after["VmHWM"], ru_max)
    print(json.dumps({"rss_before": before["VmRSS"], "peak": peak, "rss_after": after["VmRSS"],
                      "nbytes": table.nbytes, "rows": table.num_rows, "secs": secs,
                      "hwm_reset": reset}))
""")


def run_child(code, args, env=None, timeout=1800):
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                       env=env, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"child failed (rc={p.returncode}):\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def bench_startup(tables, tmp):
    """lancenb (cold and warm Numba cache) and pylance first calls, each in a fresh process."""
    import pyarrow as pa
    import pyarrow.ipc

    # one small table with every remaining column of every table
    cols, names = [], []
    for tname, t in tables.items():
        s = t.slice(0, min(1000, t.num_rows))
        for c in s.column_names:
            cols.append(s[c])
            names.append(f"{tname}_{c}")
    small = pa.Table.from_arrays(cols, names=names)
    ipc_path = os.path.join(tmp, "startup_small.arrow")
    with pa.ipc.new_file(ipc_path, small.schema) as w:
        w.write_table(small)
    cache = tempfile.mkdtemp(prefix="numba_cache_", dir=tmp)
    out = {"rows": small.num_rows, "columns": small.num_columns}
    for label, impl in (("lancenb, cold cache", "lancenb"), ("lancenb, warm cache", "lancenb"),
                        ("pylance", "pylance")):
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        d = tempfile.mkdtemp(dir=tmp)
        log(f"  start-up: {label} ...")
        try:
            out[label] = run_child(STARTUP_CHILD, [impl, ipc_path, d], env=env)
        except RuntimeError as e:  # keep the rest of the report; the error goes in it
            lines = [x for x in str(e).splitlines() if x.strip()]
            out[label] = {"error": lines[-1] if lines else str(e)}
            banner(f"ERROR: start-up child {label!r} failed:\n{e}")
            continue
        finally:
            shutil.rmtree(d, ignore_errors=True)
        for rnd in ("first", "second"):
            if not out[label][rnd]["ok"]:
                banner(f"ABORT: {label}: the start-up round trip ({rnd}) returned a wrong result")
                raise SystemExit(2)
    return out


def bench_memory(results, tables, impls, tmp, numba_cache):
    out = {}
    for tname, res in results.items():
        warm = tables[tname].slice(0, min(1000, tables[tname].num_rows))
        for impl in impls:
            name = impl.name
            warm_path = os.path.join(tmp, f"memwarm_{tname}_{name}")
            impl.write(warm_path, warm)
            env = dict(os.environ, NUMBA_CACHE_DIR=numba_cache)
            log(f"  memory: {tname} {name} ...")
            try:
                out[(tname, name)] = run_child(MEMORY_CHILD, [name, res["paths"][name], warm_path],
                                               env=env)
            except Exception as e:
                out[(tname, name)] = {"error": str(e).splitlines()[-1]}
            _unlink(warm_path)
    return out


# ---------------------------------------------------------------------------
# machine and report
# ---------------------------------------------------------------------------

def machine_info():
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        info["cpu"] = platform.processor() or "?"
    info["cpus"] = os.cpu_count()
    try:
        info["cpus_usable"] = len(os.sched_getaffinity(0))
    except AttributeError:
        info["cpus_usable"] = info["cpus"]
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    info["ram_gb"] = int(line.split()[1]) / 1024**2
    except OSError:
        pass
    import lance
    import numba
    import numpy
    import pyarrow

    import lancenb
    info["versions"] = {
        "Python": platform.python_version(), "numpy": numpy.__version__,
        "numba": numba.__version__, "pyarrow": pyarrow.__version__,
        "pylance": getattr(lance, "__version__", "?"),
        "lancenb": getattr(lancenb, "__version__", "?"),
    }
    info["os"] = f"{platform.system()} {platform.release()}"
    try:
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        rev = subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        if rev:
            info["commit"] = rev + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def fmt_ms(v):
    if v is None:
        return "–"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    if v >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def fmt_mb(b):
    return f"{b / 1e6:.2f}"


def render(args, machine, results, dropped, notes, cross, startup, memory, started, elapsed):
    L = []
    L.append("## File-level benchmark (`benchmarks/bench_file.py`)")
    L.append("")
    mode = " (`--quick` smoke run)" if args.quick else ""
    L.append(f"Run {started:%Y-%m-%d %H:%M} UTC{mode}, {elapsed:.0f} s in all. "
             f"Rows per table: {args.rows:,}; each number is the median of {args.repeat} "
             f"timed runs after one warm-up run (so lancenb's JIT compilation is excluded; see "
             f"start-up below). Lance files are format 2.1 (lancenb and pylance); Parquet is "
             f"pyarrow `write_table(compression=\"zstd\")` with default row groups. Files are "
             f"local and hot in the OS page cache.")
    L.append("")
    v = machine["versions"]
    L.append(f"Machine: {machine.get('cpu', '?')}, {machine['cpus']} logical CPUs "
             f"({machine['cpus_usable']} usable), {machine.get('ram_gb', 0):.1f} GiB RAM, "
             f"{machine['os']}. Python {v['Python']}, numpy {v['numpy']}, numba {v['numba']}, "
             f"pyarrow {v['pyarrow']}, pylance {v['pylance']}, lancenb {v['lancenb']}"
             + (f" at {machine['commit']}" if machine.get("commit") else "") + ".")
    L.append("")
    L.append("How each operation is timed (every one starts from the file path, so opening the "
             "reader and parsing metadata are included):")
    L.append("")
    L.append("- **write**: `LanceFileWriter(path, schema, version=\"2.1\")`, `write_batch(table)`, "
             "`close()` / `pq.write_table`.")
    L.append("- **full scan**: `LanceFileReader(path).read_all().to_table()` / `pq.read_table`.")
    L.append("- **scan `col`**: the same with `columns=[col]`.")
    L.append("- **take k**: k random sorted row indices (a fresh set per run, the same sets for "
             "every implementation), all columns: `LanceFileReader(path).take_rows(idx)"
             ".to_table()`. Parquet: `ParquetFile(path).read_row_groups(<groups holding the "
             "rows>)` then `Table.take` (pyarrow has no finer row-level access; with the default "
             "1Mi-row groups this reads nearly the whole file).")
    L.append("- lancenb/pylance < 1 means lancenb is faster.")
    L.append("")

    ratios = []
    slower = []
    for tname, res in results.items():
        L.append(f"### {tname}: {res['rows']:,} rows, {len(res['columns'])} columns "
                 f"({', '.join(f'`{c}`' for c in res['columns'])}), "
                 f"{fmt_mb(res['nbytes'])} MB in Arrow")
        L.append("")
        L.append("| operation | lancenb ms | pylance ms | parquet ms | lancenb/pylance |")
        L.append("|---|---:|---:|---:|---:|")
        ops = list(next(iter(res["ms"].values())).keys())
        for op in ops:
            vals = {i: res["ms"].get(i, {}).get(op) for i in IMPLS}
            ratio = ""
            if vals["lancenb"] and vals["pylance"]:
                r = vals["lancenb"] / vals["pylance"]
                ratios.append(r)
                ratio = f"{r:.2f}"
                if r > 1.0:
                    slower.append((r, tname, op, vals["lancenb"], vals["pylance"]))
            L.append(f"| {op} | {fmt_ms(vals['lancenb'])} | {fmt_ms(vals['pylance'])} | "
                     f"{fmt_ms(vals['parquet'])} | {ratio} |")
        L.append("")
        for line in cross.get(tname, []):
            L.append(f"- {line}")
        if cross.get(tname):
            L.append("")

    L.append("### File sizes (MB)")
    L.append("")
    L.append("| table | Arrow in memory | lancenb | pylance | parquet (zstd) | lancenb/pylance |")
    L.append("|---|---:|---:|---:|---:|---:|")
    for tname, res in results.items():
        s = res["size"]
        r = f"{s['lancenb'] / s['pylance']:.3f}" if "lancenb" in s and "pylance" in s else ""
        L.append(f"| {tname} | {fmt_mb(res['nbytes'])} | "
                 + " | ".join(fmt_mb(s[i]) if i in s else "–" for i in IMPLS) + f" | {r} |")
    L.append("")

    if ratios:
        gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        L.append(f"Geometric mean of lancenb/pylance over all {len(ratios)} timed operations: "
                 f"**{gm:.2f}**.")
        if slower:
            slower.sort(reverse=True)
            L.append("lancenb is slower than pylance on: "
                     + "; ".join(f"{t} {op} ({r:.2f}x: {fmt_ms(a)} vs {fmt_ms(b)} ms)"
                                 for r, t, op, a, b in slower) + ".")
        L.append("")

    if startup:
        L.append("### First-call and cached start-up times")
        L.append("")
        L.append(f"Each row is a fresh Python process: import, then write + read_all + take "
                 f"(every 7th row) of a {startup['rows']:,}-row table with all "
                 f"{startup['columns']} benchmark columns, twice. \"cold cache\" points "
                 f"`NUMBA_CACHE_DIR` at a fresh empty directory, so every kernel is compiled; "
                 f"\"warm cache\" reuses that directory in a second process, so kernels are "
                 f"loaded from the cache. Times in ms. Before timing the calls, each process "
                 f"makes one `pa.array(numpy_array)` call, timed separately: pyarrow imports "
                 f"pandas (when installed) on the first such call, which would otherwise land "
                 f"on lancenb's first `take`.")
        L.append("")
        L.append("| process | import | 1st `pa.array` | 1st write | 1st read | 1st take | "
                 "1st total | 2nd write | 2nd read | 2nd take |")
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for label in ("lancenb, cold cache", "lancenb, warm cache", "pylance"):
            s = startup.get(label)
            if not s:
                continue
            if "error" in s:
                L.append(f"| {label} | error: {s['error'][:120]} |" + " |" * 8)
                continue
            f, sec = s["first"], s["second"]
            total = f["write"] + f["read"] + f["take"]
            L.append(f"| {label} | {fmt_ms(s['import'] * 1e3)} | {fmt_ms(s['pa_array'] * 1e3)} | "
                     f"{fmt_ms(f['write'] * 1e3)} | "
                     f"{fmt_ms(f['read'] * 1e3)} | {fmt_ms(f['take'] * 1e3)} | "
                     f"{fmt_ms(total * 1e3)} | {fmt_ms(sec['write'] * 1e3)} | "
                     f"{fmt_ms(sec['read'] * 1e3)} | {fmt_ms(sec['take'] * 1e3)} |")
        L.append("")

    if memory:
        L.append("### Peak memory of a full scan")
        L.append("")
        L.append("Each cell is a fresh process that first scans a 1,000-row file of the same "
                 "schema (imports, kernel loading, thread pools), resets the peak-RSS counter "
                 "(`/proc/self/clear_refs`), reads VmRSS, runs the full scan and reads VmHWM. "
                 "growth = peak − RSS before; the ratio is growth / the result table's "
                 "`nbytes` (lancenb's target: < 1.5).")
        L.append("")
        L.append("| table | result MB | lancenb growth MB (ratio) | pylance growth MB (ratio) | "
                 "parquet growth MB (ratio) |")
        L.append("|---|---:|---:|---:|---:|")
        any_unreset = False
        for tname in results:
            cells, nb = [], None
            for i in IMPLS:
                m = memory.get((tname, i))
                if m is None:
                    cells.append("–")
                elif "error" in m:
                    cells.append(f"error: {m['error'][:60]}")
                else:
                    nb = nb or m["nbytes"]
                    g = m["peak"] - m["rss_before"]
                    any_unreset |= not m["hwm_reset"]
                    cells.append(f"{fmt_mb(g)} ({g / max(1, m['nbytes']):.2f}x)")
            L.append(f"| {tname} | {fmt_mb(nb) if nb else '–'} | " + " | ".join(cells) + " |")
        L.append("")
        if any_unreset:
            L.append("(The peak-RSS counter could not be reset here, so the growth includes "
                     "any higher peak reached earlier in the process: an upper bound.)")
            L.append("")

    if dropped or notes:
        L.append("### Notes")
        L.append("")
        for tname, cname, typ, reason in dropped:
            L.append(f"- **Dropped** `{tname}.{cname}` ({typ}): lancenb failed on it: {reason}")
        for n in notes:
            L.append(f"- {n}")
        L.append("")
    return "\n".join(L).rstrip() + "\n"


def write_out(path, report):
    replace_section(path, f"{MARK_START}\n{report}{MARK_END}", MARK_START, MARK_END)


# ---------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=None,
                    help="rows per table (default 1,000,000; 100,000 with --quick)")
    ap.add_argument("--repeat", type=int, default=None,
                    help="timed runs per measurement (default 5; 3 with --quick)")
    ap.add_argument("--quick", action="store_true", help="small smoke run")
    ap.add_argument("--out", default=None, help="markdown file to update between the markers")
    ap.add_argument("--tables", default=None,
                    help="comma-separated subset of ints,floats,strings,mixed")
    ap.add_argument("--no-startup", action="store_true", help="skip the start-up section")
    ap.add_argument("--no-memory", action="store_true", help="skip the peak-memory section")
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args(argv)
    if args.rows is None:
        args.rows = 100_000 if args.quick else 1_000_000
    if args.repeat is None:
        args.repeat = 3 if args.quick else 5
    if args.rows < 1000 or args.repeat < 1:
        ap.error("--rows must be >= 1000 and --repeat >= 1")

    started = _dt.datetime.now(_dt.timezone.utc)
    t_start = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix="bench_file_")
    # keep Numba's on-disk cache out of the source tree; the warm-up runs compile into it
    numba_cache = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(tmp, "numba_cache")
    os.environ["NUMBA_CACHE_DIR"] = numba_cache
    try:
        log(f"bench_file: {args.rows:,} rows per table, repeat={args.repeat}, tmp={tmp}")
        log("generating tables ...")
        tables = make_tables(args.rows, args.seed)
        if args.tables:
            want = [t.strip() for t in args.tables.split(",") if t.strip()]
            unknown = set(want) - set(tables)
            if unknown:
                ap.error(f"unknown tables {sorted(unknown)}; choose from {sorted(tables)}")
            tables = {k: tables[k] for k in want}
        log("probing lancenb column by column (also compiles its kernels) ...")
        dropped = probe_columns(tables, tmp, args.seed + 1)

        impls = [make_impl(n) for n in IMPLS]
        results, notes, cross = {}, [], {}
        log("steady-state benchmarks ...")
        for tname, table in tables.items():
            results[tname] = bench_table(tname, table, impls, tmp, args.repeat, args.seed + 2,
                                         notes)
            cross[tname] = cross_read(tname, table, results[tname])
            for line in cross[tname]:
                log(f"  {tname}: {line}")

        if not tables:
            banner("ERROR: lancenb failed on every column; nothing left to benchmark")
        startup = None
        if not args.no_startup and tables:
            log("start-up times (fresh subprocesses) ...")
            startup = bench_startup(tables, tmp)
        memory = None
        if not args.no_memory and tables:
            log("peak memory (fresh subprocesses) ...")
            memory = bench_memory(results, tables, impls, tmp, numba_cache)

        report = render(args, machine_info(), results, dropped, notes, cross, startup, memory,
                        started, time.perf_counter() - t_start)
        print(report)
        if args.out:
            write_out(args.out, report)
            log(f"wrote {args.out}")
        if dropped:
            banner("NOTE: columns dropped because lancenb failed on them:\n"
                   + "\n".join(f"  {t}.{c} ({ty}): {r}" for t, c, ty, r in dropped))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if tables else 1


if __name__ == "__main__":
    sys.exit(main())
