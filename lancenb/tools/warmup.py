"""Fill the Numba cache ahead of time: :func:`warmup` and ``lancenb warmup``.

lancenb's kernels are compiled by Numba the first time each is used with each input
type, and the machine code is cached on disk (see ``lancenb.kernels._jit`` for where),
so every machine pays the compilation once. :func:`warmup` pays it up front: it writes
and reads small tables that between them take every path of the 2.0, 2.1 and 2.2
writers and readers (every Arrow type family, both encoding profiles, scans, ranges,
takes and filtered dataset scans), in parallel worker processes, and then runs the
same work once more in the calling process to check that everything now loads from
the cache (compiling whatever a worker could not store).

Run it once per machine or container image, e.g. in a Dockerfile after installing
lancenb, or once per Spark executor node before the first job. Numba keys its cache by
CPU, so an image warmed on one CPU model recompiles on another.

A wheel of lancenb already carries its kernels compiled for a portable CPU target
(:func:`build_shipped`, run by the wheel build; used by ``lancenb.kernels._jit`` when the
machine's own cache has nothing), so first use compiles nothing; the warm-up's workers
ignore those and compile for this machine's CPU, which can be somewhat faster.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
import time

from numba.core import event

__all__ = ["warmup", "WarmupResult", "cache_dir", "build_shipped", "default_targets",
           "PORTABLE_TARGETS"]

_ROWS = 3000  # more than two 1024-value blocks, enough text for FSST to pay
_FAMILIES = ("ints", "floats", "strings", "nested")
_FILE_TASKS = tuple((fam, ver, prof) for fam in _FAMILIES
                    for ver, prof in (("2.0", "default"), ("2.1", "default"),
                                      ("2.1", "compact"), ("2.2", "default"),
                                      ("2.2", "compact")))
_TASKS = ("dataset", "vector") + tuple("/".join(t) for t in _FILE_TASKS)


@dataclasses.dataclass(frozen=True)
class WarmupResult:
    """What :func:`warmup` did.

    Attributes
    ----------
    tasks : int
        Workloads run (each in a worker process).
    compiled : int
        Kernel specialisations compiled by the workers (0 when the cache was full).
    filled : int
        Specialisations the check pass in the calling process still had to compile
        (normally 0).
    seconds : float
        Wall time of the whole warm-up.
    cache_dir : str or None
        Where the kernels' machine code is cached (None: Numba found no writable place
        and caches nothing).
    """

    tasks: int
    compiled: int
    filled: int
    seconds: float
    cache_dir: str | None


def cache_dir() -> str | None:
    """The directory Numba caches lancenb's kernels in, or None if it has none.

    ``NUMBA_CACHE_DIR`` when set, else ``__pycache__`` beside the kernel sources when
    writable, else the user's cache directory.

    Examples
    --------
    >>> from lancenb.tools.warmup import cache_dir
    >>> cache_dir()  # doctest: +SKIP
    '/home/me/.cache/numba/lancenb/kernels'
    """
    from lancenb.kernels import slices

    cache = getattr(slices.concat_slices, "_cache", None)
    locator = getattr(getattr(cache, "_impl", None), "locator", None)
    return locator.get_cache_path() if locator is not None else None


def warmup(*, processes: int | None = None, progress: bool | None = None,
           check: bool = True) -> WarmupResult:
    """Compile every kernel specialisation lancenb uses into the Numba cache.

    Parameters
    ----------
    processes : int, optional
        Worker processes (default: the number of CPUs). 1 runs the work in one worker.
    progress : bool, optional
        Print progress to stderr (default: only when stderr is a terminal).
    check : bool, default True
        Afterwards run the work once more in this process, loading every kernel from
        the cache and compiling any the workers did not store.

    Returns
    -------
    WarmupResult

    Examples
    --------
    >>> import lancenb
    >>> r = lancenb.warmup(processes=2)  # doctest: +SKIP
    >>> r.compiled, r.filled  # doctest: +SKIP
    (212, 0)
    """
    return _warm(_TASKS, processes=processes, progress=progress, check=check)


def _warm(tasks, *, processes, progress, check) -> WarmupResult:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from lancenb.errors import InvalidInputError

    if processes is None:
        processes = os.cpu_count() or 1
    if processes < 1:
        raise InvalidInputError(f"processes must be at least 1, not {processes}")
    if progress is None:
        progress = sys.stderr.isatty()
    t0 = time.perf_counter()
    compiled = done = 0
    # spawn: fresh interpreters (forking a process that holds LLVM and threads is unsafe)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(processes, len(tasks)), mp_context=ctx,
                             initializer=_compile_for_this_cpu) as ex:
        futures = [ex.submit(_run_task, name) for name in tasks]
        for fut in as_completed(futures):
            compiled += fut.result()
            done += 1
            if progress:
                print(f"\rlancenb warmup: {done}/{len(tasks)} workloads, {compiled} kernels "
                      f"compiled, {time.perf_counter() - t0:.0f} s", end="", file=sys.stderr,
                      flush=True)
    if progress:
        print(file=sys.stderr)
    filled = sum(_run_task(name) for name in tasks) if check else 0
    return WarmupResult(tasks=len(tasks), compiled=compiled, filled=filled,
                        seconds=time.perf_counter() - t0, cache_dir=cache_dir())


def _compile_for_this_cpu() -> None:
    """In a worker: ignore the compiled kernels a wheel ships (kernels/_jit.py), so that
    every kernel is compiled for this machine's CPU and stored in its own cache."""
    os.environ["LANCENB_SHIPPED_KERNELS"] = ""


def _run_task(name: str) -> int:
    """Run one workload; return how many kernel specialisations it compiled."""
    counter = _CompileCounter()
    event.register("numba:compile", counter)
    try:
        with tempfile.TemporaryDirectory(prefix="lancenb_warmup_") as tmp:
            if name == "dataset":
                _dataset_work(tmp)
            elif name == "vector":
                _vector_work(tmp)
            else:
                fam, ver, prof = name.split("/")
                _file_work(tmp, _table(fam), ver, prof)
    finally:
        event.unregister("numba:compile", counter)
    return counter.count


class _CompileCounter(event.Listener):
    """A ``numba:compile`` listener counting compilations (nested ones too)."""

    def __init__(self):
        self.count = 0

    def on_start(self, ev):
        pass

    def on_end(self, ev):
        self.count += 1


def _file_work(tmp: str, table, version: str, profile: str) -> None:
    import numpy as np

    from lancenb.file import LanceFileReader, LanceFileWriter

    path = os.path.join(tmp, "t.lance")
    compression = "compact" if profile == "compact" else None
    with LanceFileWriter(path, table.schema, version=version, compression=compression) as w:
        w.write_batch(table.slice(0, table.num_rows // 2))
        w.write_batch(table.slice(table.num_rows // 2))
    r = LanceFileReader(path)
    r.read_all().to_table()
    r.read_range(table.num_rows // 3, table.num_rows // 3).to_table()
    idx = np.sort(np.random.default_rng(0).choice(table.num_rows, 50, replace=False))
    r.take_rows(idx).to_table()
    r.take_rows(np.array([0, 1, 2, table.num_rows - 1])).to_table()


def _dataset_work(tmp: str) -> None:
    import pyarrow as pa  # deferred: warmup's worker processes import what they exercise

    from lancenb.dataset import dataset as open_dataset
    from lancenb.dataset import write_dataset

    path = os.path.join(tmp, "ds")
    t = _table("ints")
    t = t.append_column("s", _table("strings").column("cat"))
    # a JSON column: JSONB kernels on write, on read and in IS NULL filters
    t = t.append_column("j", pa.array([None if i % 7 == 3 else
                                       f'{{"i": {i}, "x": [{i / 3}, "s\\n", null, true]}}'
                                       for i in range(t.num_rows)], pa.json_()))
    ds = write_dataset(t, path, max_rows_per_file=_ROWS // 2)
    write_dataset(t.slice(0, 100), path, mode="append")
    ds = open_dataset(path)
    ds.to_table()
    ds.to_table(columns=["i32"], filter="i64 > 10 AND s = 'red' AND j IS NOT NULL")
    ds.take([0, 5, _ROWS - 1, _ROWS + 3])
    ds.count_rows("u8 < 100")
    # the JSON functions' kernels (kernels/json): filters and a projection; cold, the
    # first of these compiled for ~30 s on a loaded 2-core machine
    for q in ("json_get_int(j, 'i') > 3", "json_extract(j, '$.x') IS NOT NULL",
              "json_exists(j, '$.x')", "json_array_length(j, '$.x') = 4",
              "json_get_string(j, 'i') = 'a'", "json_array_contains(j, '$.x', true)",
              "json_get_float(j, 'i') > 0.5", "json_get(j, 'x') IS NOT NULL"):
        ds.count_rows(q)
    ds.to_table(columns={"i": "json_get_int(j, 'i')", "x": "json_extract(j, '$.x[0]')"})
    # full-text search (index/fts, kernels/fts): an INVERTED index and a top-k query,
    # whose pruning kernel compiled for ~16 s on first use
    ds.create_scalar_index("s", "INVERTED")
    ds.to_table(full_text_query="red blue", limit=10)
    ds.delete("i16 < 0")
    ds = open_dataset(path)
    ds.to_table(filter=pa.compute.field("i8") > 0)
    ds.take([1, 2, 3])


def _vector_work(tmp: str) -> None:
    """Vector search (kernels/vector): a flat search, and a build and a query of each
    index family (IVF_FLAT, IVF_PQ, IVF_SQ, IVF_HNSW_SQ); cold, these compiled for
    ~35 s on a 2-core machine."""
    import numpy as np
    import pyarrow as pa

    from lancenb.dataset import write_dataset

    rng = np.random.default_rng(0)
    n, dim = 1200, 16
    values = pa.array(rng.random(n * dim).astype(np.float32))
    ds = write_dataset(pa.table({"v": pa.FixedSizeListArray.from_arrays(values, dim),
                                 "i": np.arange(n)}), os.path.join(tmp, "vec"))
    q = rng.random(dim).astype(np.float32)
    for metric in ("l2", "cosine", "dot"):
        ds.to_table(nearest={"column": "v", "q": q, "k": 5, "metric": metric})
    for kind, extra in (("IVF_FLAT", {}), ("IVF_PQ", {"num_sub_vectors": 4}),
                        ("IVF_SQ", {}), ("IVF_HNSW_SQ", {})):
        ds.create_index("v", kind, num_partitions=2, replace=True, **extra)
        ds.to_table(nearest={"column": "v", "q": q, "k": 5, "nprobes": 2})
        ds.to_table(nearest={"column": "v", "q": q, "k": 5, "nprobes": 2},
                    filter="i < 600", prefilter=True)


def _table(family: str):
    """A small table with the columns of one family of Arrow types."""
    import numpy as np
    import pyarrow as pa

    n = _ROWS
    rng = np.random.default_rng(1)

    def nulls(values, typ=None):
        return pa.array(values, typ, mask=rng.random(len(values)) < 0.1)

    if family == "ints":
        cols = {}
        for bits in (8, 16, 32, 64):
            s, u = np.dtype(f"int{bits}"), np.dtype(f"uint{bits}")
            cols[f"i{bits}"] = pa.array(rng.integers(np.iinfo(s).min, np.iinfo(s).max, n,
                                                     dtype=s))
            cols[f"u{bits}"] = nulls(rng.integers(0, np.iinfo(u).max, n, dtype=u))
            cols[f"runs{bits}"] = pa.array(np.repeat(np.arange(n // 100, dtype=s), 100))
            cols[f"small{bits}"] = nulls(rng.integers(0, 3, n).astype(u))
        cols["const"] = pa.array(np.full(n, 3, np.int64))
        cols["all_null"] = pa.nulls(n, pa.int32())
        cols["bool"] = pa.array(rng.random(n) < 0.3)
        cols["bool_n"] = nulls(rng.random(n) < 0.5)
        cols["bool_runs"] = pa.array(np.repeat([True, False], n // 2))
        cols["date"] = pa.array(rng.integers(0, 30000, n).astype(np.int32), pa.date32())
        cols["ts"] = nulls(rng.integers(0, 2 * 10**15, n), pa.timestamp("us", "UTC"))
        cols["dur"] = pa.array(rng.integers(0, 10**9, n), pa.duration("ns"))
        return pa.table(cols)
    if family == "floats":
        cols = {}
        for dt in ("float16", "float32", "float64"):
            cols[dt] = pa.array(rng.standard_normal(n).astype(dt))
            cols[dt + "_n"] = nulls(rng.standard_normal(n).astype(dt))
            cols[dt + "_few"] = pa.array(rng.integers(0, 4, n).astype(dt))
        cols["dec"] = pa.array(rng.integers(-10**9, 10**9, n).astype(np.int32)).cast(
            pa.decimal128(18, 0))
        cols["fsb"] = pa.array([bytes(rng.integers(0, 256, 16, dtype=np.uint8))
                                for _ in range(n)], pa.binary(16))
        return pa.table(cols)
    words = ["red", "green", "blue", "https://example.com/", "lance", "numba", "arrow"]
    text = [" ".join(words[j] for j in rng.integers(0, len(words), int(k)))
            for k in rng.integers(0, 12, n)]
    if family == "strings":
        cat = [words[i] for i in rng.integers(0, 3, n)]
        return pa.table({
            "text": pa.array(text),
            "ltext": nulls(text, pa.large_string()),
            "cat": pa.array(cat),
            "lcat": nulls(cat, pa.large_string()),
            "short": nulls([str(x) for x in rng.integers(0, 10**6, n)]),
            "bin": pa.array([bytes(rng.integers(0, 256, int(k), dtype=np.uint8))
                             for k in rng.integers(0, 30, n)]),
            "big": pa.array([bytes(rng.integers(0, 256, int(k), dtype=np.uint8))
                             for k in rng.integers(100, 400, n)], pa.large_binary()),
            "one_byte": pa.array([words[i][:1] for i in rng.integers(0, 3, n)]),
            "empty": pa.array([""] * n),
            "all_null": pa.nulls(n, pa.string()),
        })
    lens = rng.integers(0, 5, n)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    ints = pa.array(rng.integers(-1000, 1000, int(offsets[-1])).astype(np.int32))
    items = pa.ListArray.from_arrays(pa.array(offsets), ints)
    dims = rng.standard_normal(n * 16).astype(np.float32)
    blob_field = pa.field("blob", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    packed = pa.field("packed", pa.struct([("x", pa.int32()), ("y", pa.float64())]),
                      metadata={"lance-encoding:packed": "true"})
    cols = [
        ("ints", items),
        ("ints_n", pa.ListArray.from_arrays(pa.array(offsets), ints,
                                            mask=pa.array(rng.random(n) < 0.1))),
        ("strs", pa.array([[words[j] for j in rng.integers(0, 7, int(k))] for k in lens],
                          pa.list_(pa.string()))),
        ("lints", pa.array([[int(x)] * int(k) for x, k in zip(rng.integers(0, 9, n), lens)],
                           pa.large_list(pa.int64()))),
        ("deep", pa.array([[[int(k)] * int(k)] * int(k) for k in lens],
                          pa.list_(pa.list_(pa.int16())))),
        ("st", pa.StructArray.from_arrays(
            [nulls(rng.integers(0, 100, n).astype(np.int32)), pa.array(text)], ["a", "b"])),
        ("lst", pa.array([[{"k": int(k), "v": "x" * int(k)}] * int(k) for k in lens],
                         pa.list_(pa.struct([("k", pa.int64()), ("v", pa.string())])))),
        ("vec", pa.FixedSizeListArray.from_arrays(pa.array(dims), 16)),
        ("vec8", pa.FixedSizeListArray.from_arrays(
            pa.array(rng.integers(0, 255, n * 4).astype(np.uint8)), 4)),
        ("vecs", pa.array([[[1.0, 2.0]] * int(k) for k in lens],
                          pa.list_(pa.list_(pa.float32(), 2)))),
        (packed, pa.StructArray.from_arrays(
            [pa.array(rng.integers(0, 100, n).astype(np.int32)), pa.array(rng.random(n))],
            ["x", "y"])),
        (blob_field, pa.array([b"x" * int(k) for k in rng.integers(0, 3000, n)],
                              pa.large_binary())),
    ]
    fields = [c if isinstance(c, pa.Field) else pa.field(c, a.type) for c, a in cols]
    return pa.Table.from_arrays([a for _, a in cols], schema=pa.schema(fields))


# -- compiled kernels shipped in the wheel (built by setup.py; see kernels/_jit.py) -----

# Portable CPU targets: LLVM's CPU name -> the CPU features (LLVM's names) code compiled
# for it may use. Code compiled for a target is used only on a CPU that has them all.
_X86_64 = ("cmov", "cx8", "fxsr", "mmx", "sse", "sse2")
_X86_64_V2 = _X86_64 + ("cx16", "sahf", "popcnt", "sse3", "sse4.1", "sse4.2", "ssse3")
_X86_64_V3 = _X86_64_V2 + ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe",
                           "xsave")
PORTABLE_TARGETS = {"x86-64-v3": _X86_64_V3, "x86-64-v2": _X86_64_V2, "generic": ()}

# what to compile when building on each machine type, best first
_DEFAULT_TARGETS = {"x86_64": ("x86-64-v3",), "amd64": ("x86-64-v3",)}

_TARGET_REPORT = """
import json
from numba.core.registry import cpu_target
print("LANCENB-MAGIC " + json.dumps(list(cpu_target.target_context.codegen().magic_tuple())))
"""


def default_targets() -> tuple:
    """The portable CPU targets a wheel built on this machine type carries."""
    import platform

    return _DEFAULT_TARGETS.get(platform.machine().lower(), ("generic",))


def _target_env(target: str, cache: str) -> dict:
    """The environment that makes numba compile for ``target`` into ``cache``."""
    env = dict(os.environ)
    for k in ("NUMBA_DISABLE_JIT", "NUMBA_OPT", "LANCENB_SHIPPED_KERNELS"):
        env.pop(k, None)
    env["LANCENB_SHIPPED_KERNELS"] = ""  # compile everything, load nothing shipped
    env["NUMBA_CACHE_DIR"] = cache
    env["NUMBA_CPU_NAME"] = target
    env["NUMBA_CPU_FEATURES"] = ",".join("+" + f for f in PORTABLE_TARGETS[target])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def build_shipped(dest: str, *, targets=None, processes: int | None = None,
                  script: str | None = None) -> dict:
    """Compile every kernel specialisation for portable CPU targets into ``dest``.

    The wheel build runs this (setup.py) so that the installed package carries compiled
    kernels (``lancenb/kernels/_jitcache``) and first use compiles nothing on a CPU that
    has the target's features. Each target compiles in fresh processes (the warm-up's
    workloads, ``processes`` workers) with ``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES`` set
    to it; the resulting numba cache files go flat into ``dest`` with ``manifest.json``.

    Parameters
    ----------
    dest : str
        The directory to fill (created; existing cache files in it are replaced).
    targets : sequence of str, optional
        Names from :data:`PORTABLE_TARGETS`, best first (default: :func:`default_targets`).
    processes : int, optional
        Worker processes per target (default: the number of CPUs).
    script : str, optional
        Python code to run instead of the warm-up workloads (tests use a single kernel).

    Returns
    -------
    dict
        The manifest written.
    """
    import json
    import shutil
    import subprocess

    import numba
    import numpy as np

    from lancenb.errors import InvalidInputError
    from lancenb.kernels import WRITTEN_SUFFIX

    targets = tuple(targets or default_targets())
    unknown = [t for t in targets if t not in PORTABLE_TARGETS]
    if unknown:
        raise InvalidInputError(f"unknown portable CPU target(s) {unknown}; "
                                f"known: {sorted(PORTABLE_TARGETS)}")
    if script is None:
        script = ("from lancenb.tools.warmup import _warm, _TASKS\n"
                  f"_warm(_TASKS, processes={processes!r}, progress=False, check=False)\n")
    os.makedirs(dest, exist_ok=True)
    entries = []
    with tempfile.TemporaryDirectory(prefix="lancenb_shipped_") as cache:
        for target in targets:
            p = subprocess.run([sys.executable, "-c", script + _TARGET_REPORT],
                               env=_target_env(target, cache), capture_output=True,
                               text=True)
            if p.returncode != 0:
                raise RuntimeError(f"compiling the kernels for {target} failed:\n"
                                   f"{p.stderr[-4000:]}")
            (line,) = [ln for ln in p.stdout.splitlines() if ln.startswith("LANCENB-MAGIC ")]
            magic = json.loads(line.split(" ", 1)[1])
            entries.append({"name": target, "magic": magic,
                            "requires": sorted(PORTABLE_TARGETS[target])})
        # numba's index and data files, and which parameters each kernel writes
        kinds = (".nbi", ".nbc", WRITTEN_SUFFIX)
        files = [os.path.join(root, f) for root, _, names in os.walk(cache) for f in names
                 if f.endswith(kinds)]
        for name in os.listdir(dest):
            if name.endswith(kinds):
                os.remove(os.path.join(dest, name))
        for f in files:
            shutil.copyfile(f, os.path.join(dest, os.path.basename(f)))
    manifest = {"numba": numba.__version__, "python": "%d.%d" % sys.version_info[:2],
                "numpy_major": np.__version__.split(".")[0], "targets": entries,
                "files": len(files)}
    with open(os.path.join(dest, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
    return manifest
