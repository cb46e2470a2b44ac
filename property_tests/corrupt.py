"""Corruption fuzzing: damaged files, manifests and deletion files must either read or
raise a :class:`~lancenb.errors.LanceError` subclass, quickly, and never crash the
interpreter.

* :func:`seed_inputs` writes valid inputs with both implementations: lancenb and
  pylance data files (2.0, 2.1 and 2.2; flat, nested, vectors, large values; many
  encodings), pylance's 0.1 (legacy) data files, a dataset manifest and a deletion
  file, and the data files of small datasets with JSON, uuid and tensor columns
  (kind ``dsfile``: the mutant is a copy of the whole dataset with that one file
  damaged, read through the dataset API, so damaged JSONB reaches the JSON decoder).
* :func:`mutate` damages bytes: bit flips, random bytes, inserted and deleted runs,
  truncation, and overwrites of the little-endian integers that sizes and offsets
  live in (zero, huge, off by one).
* :func:`run_batch` reads every mutated input in a *worker subprocess* (so a segfault
  or an abort is caught, not fatal) with a per-input time limit, and returns the
  inputs that crashed, hung, or raised something other than a LanceError.

``scripts/fuzz_corrupt.py`` runs this at scale (the nightly figure in RESULTS.md);
``test_corruption.py`` runs a small derandomised batch in ``make test``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def seed_inputs(d: str) -> list[tuple[str, str]]:
    """Write valid inputs into ``d``; returns ``[(kind, path)]``."""
    import lance
    import lance.file as lf
    import pyarrow as pa

    import lancenb
    from lancenb.file import LanceFileWriter

    rng = np.random.default_rng(0)
    n = 3000
    ids = np.arange(n)
    flat = pa.table({
        "seq": pa.array(ids, pa.int64()),
        "small": pa.array(rng.integers(0, 9, n).astype(np.int32), mask=ids % 7 == 0),
        "runs": pa.array(np.repeat(np.arange(30), 100).astype(np.int64)),
        "f": pa.array(rng.standard_normal(n).astype(np.float32)),
        "cat": pa.array([f"cat-{i % 5}" for i in ids]),
        "url": pa.array([f"https://example.com/{i * 7919 % 1000}/item" for i in ids]),
        "big": pa.array(["x" * 300 + str(i) if i % 500 == 0 else None for i in ids]),
    })
    nested = pa.table({
        "st": pa.array([{"a": int(i), "b": [int(i)] * (i % 3)} if i % 11 else None
                        for i in ids[:800]]),
        "ll": pa.array([[[int(i)], []] if i % 5 else None for i in ids[:800]]),
        "vec": pa.array([[float(i)] * 8 if i % 9 else None for i in ids[:800]],
                        pa.list_(pa.float32(), 8)),
    })
    # 2.0 cannot store null structs
    nested20 = nested.set_column(0, "st", pa.array(
        [{"a": int(i), "b": [int(i)] * (i % 3) if i % 11 else None} for i in ids[:800]]))
    out = []
    for name, table, versions in (("flat", flat, ("2.0", "2.1", "2.2")),
                                  ("nested", nested, ("2.1", "2.2")),
                                  ("nested20", nested20, ("2.0",))):
        for version in versions:
            p = os.path.join(d, f"lancenb-{name}-{version}.lance")
            with LanceFileWriter(p, table.schema, version=version,
                                 data_cache_bytes=64 * 1024) as w:
                for b in table.to_batches(max_chunksize=700):
                    w.write_batch(b)
            out.append(("file", p))
            p = os.path.join(d, f"pylance-{name}-{version}.lance")
            w = lf.LanceFileWriter(p, table.schema, version=version)
            w.write_batch(table)
            w.close()
            out.append(("file", p))
    for name, table in (("flat", flat), ("nested", nested20)):
        legacy = os.path.join(d, f"legacy-{name}")
        lance.write_dataset(table, legacy, data_storage_version="legacy",
                            max_rows_per_group=512)
        for f in sorted(os.listdir(os.path.join(legacy, "data"))):
            out.append(("file", os.path.join(legacy, "data", f)))
    # data files of datasets whose columns the dataset layer converts on read (JSONB to
    # JSON text, extension types): damage there reaches those conversions
    m = 300
    typed = pa.table({
        "id": pa.array(np.arange(m), pa.int64()),
        "j": pa.array([None if i % 9 == 0 else
                       f'{{"k": {i}, "s": "v{i}\\u00e9", "l": [1.5, {i}e-3, true, null], '
                       f'"o": {{"n": [{{}}, []]}}}}' for i in range(m)], pa.json_()),
        "u": pa.array([bytes([i % 256]) * 16 for i in range(m)], pa.uuid()),
        "t": pa.FixedShapeTensorArray.from_numpy_ndarray(
            np.arange(m * 4, dtype=np.float32).reshape(m, 2, 2)),
    })
    for lib, version in ((lancenb, "2.1"), (lancenb, "2.2"), (lance, "2.1"), (lance, "2.0")):
        root = os.path.join(d, f"typed-{lib.__name__}-{version}")
        lib.write_dataset(typed, root, data_storage_version=version, max_rows_per_file=200)
        for f in sorted(os.listdir(os.path.join(root, "data"))):
            out.append(("dsfile", os.path.join(root, "data", f)))
    ds = os.path.join(d, "ds")
    lancenb.write_dataset(flat.slice(0, 500), ds)
    lancenb.dataset(ds).delete("seq % 3 = 0")
    lance.dataset(ds).delete("seq % 5 = 0")
    for root, _, files in os.walk(ds):
        for f in files:
            p = os.path.join(root, f)
            if f.endswith(".manifest"):
                out.append(("manifest", p))
            elif "_deletions" in root:
                out.append(("deletion", p))
    return out


def mutate(data: bytes, rng: np.random.Generator) -> bytes:
    """One to four random damages."""
    b = bytearray(data)
    for _ in range(int(rng.integers(1, 5))):
        if not b:
            break
        kind = int(rng.integers(0, 7))
        pos = int(rng.integers(0, len(b)))
        if kind == 0:  # flip one bit
            b[pos] ^= 1 << int(rng.integers(0, 8))
        elif kind == 1:  # random bytes
            k = int(rng.integers(1, 9))
            b[pos:pos + k] = rng.integers(0, 256, k, dtype=np.uint8).tobytes()
        elif kind == 2:  # insert
            b[pos:pos] = rng.integers(0, 256, int(rng.integers(1, 17)), dtype=np.uint8).tobytes()
        elif kind == 3:  # delete
            del b[pos:pos + int(rng.integers(1, 17))]
        elif kind == 4:  # truncate
            del b[pos:]
        else:  # an integer where sizes/offsets live: zero, huge, or off by one
            width = [2, 4, 8][int(rng.integers(0, 3))]
            if pos + width > len(b):
                continue
            old = int.from_bytes(b[pos:pos + width], "little")
            new = [0, (1 << (8 * width)) - 1, old + 1, max(old - 1, 0),
                   1 << (8 * width - 1)][int(rng.integers(0, 5))] % (1 << (8 * width))
            b[pos:pos + width] = new.to_bytes(width, "little")
    return bytes(b)


WORKER = textwrap.dedent("""
    import json, os, signal, sys, traceback
    import numpy as np
    from lancenb.errors import LanceError
    from lancenb.file import LanceFileReader
    from lancenb.table.manifest import parse_manifest_file
    from lancenb.table.deletion import read_deletions
    from lancenb.io.store import ObjectStore
    from lancenb._proto import table_pb2

    LIMIT = int(os.environ.get("LANCENB_FUZZ_INPUT_SECONDS", "20"))

    def on_alarm(sig, frame):
        raise TimeoutError("input took longer than the limit")
    signal.signal(signal.SIGALRM, on_alarm)

    def read_file(p):
        r = LanceFileReader(p)
        r.metadata()
        t = r.read_all().to_table()
        n = r.num_rows()
        if n:
            r.take_rows([0, n - 1, n // 2, n // 3]).to_table()
            r.read_range(n // 4, min(50, n - n // 4)).to_table()
        return t.num_rows

    def read_manifest(p):
        with open(p, "rb") as f:
            mf = parse_manifest_file(f.read(), p)
        mf.transaction()
        mf.index_section_bytes()
        return len(mf.manifest.fragments)

    def read_deletion(p):
        name = os.path.basename(p)
        frag, ver, did = name.split(".")[0].split("-")
        df = table_pb2.DeletionFile(read_version=int(ver), id=int(did),
                                    file_type=1 if name.endswith(".bin") else 0)
        store = ObjectStore(os.path.dirname(os.path.dirname(p)))
        return len(read_deletions(store, int(frag), df, 1 << 20))

    def read_dsfile(p):
        import lancenb
        ds = lancenb.dataset(os.path.dirname(os.path.dirname(p)))
        n = ds.to_table().num_rows
        if n:
            ds.take([0, n - 1, n // 2]).to_pylist()
            ds.to_table(filter="j IS NOT NULL", columns=["j", "u"]).to_pylist()
            ds.head(5).to_pylist()
        return n

    READERS = {"file": read_file, "manifest": read_manifest, "deletion": read_deletion,
               "dsfile": read_dsfile}
    for line in sys.stdin:
        i, kind, path = json.loads(line)
        print(json.dumps(["start", i]), flush=True)
        signal.alarm(LIMIT)
        try:
            READERS[kind](path)
            res = "ok"
        except LanceError:
            res = "lance-error"
        except TimeoutError:
            res = "hang"
        except MemoryError as e:
            res = "memory: " + "".join(traceback.format_exception_only(type(e), e)).strip()
        except BaseException as e:
            res = "other: " + "".join(traceback.format_exception_only(type(e), e)).strip()
        finally:
            signal.alarm(0)
        print(json.dumps(["done", i, res]), flush=True)
""")


# The peak RSS of a worker's own process image, for worker code to include: /proc's
# VmHWM starts afresh at exec, while getrusage's ru_maxrss keeps the size of the (forked)
# parent across it on Linux, which made every input a "memory" problem when pytest had
# grown large. Falls back to ru_maxrss where /proc is missing.
PEAK_RSS_SOURCE = textwrap.dedent("""
    def _hwm_kib():
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1])
        except OSError:
            pass
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
""")


# Run first in every worker: cap its address space (RLIMIT_AS) when asked, so an input
# that would allocate GiBs fails inside the worker and is reported, rather than slowing
# the machine down. (Set by the worker itself: a preexec_fn would make Popen fork the
# parent, which pylance, imported there, warns about.)
_PROLOGUE = textwrap.dedent("""
    import os as _os, resource as _resource
    if _os.environ.get("LANCENB_FUZZ_AS_BYTES"):
        _lim = int(_os.environ["LANCENB_FUZZ_AS_BYTES"])
        _resource.setrlimit(_resource.RLIMIT_AS, (_lim, _lim))
""")


def run_batch(items: list[tuple[str, str]], *, timeout: float | None = None,
              input_seconds: int | None = None, worker: str = WORKER,
              memory_limit: int | None = None) -> dict:
    """Read ``items`` (``(kind, path)``) in worker subprocesses; returns counts and the
    problem inputs: ``{"counts": {...}, "problems": [(path, what)]}``. A crashed or
    stuck worker is reported against the input it was reading and restarted.

    ``input_seconds`` overrides the per-input time limit (``LANCENB_FUZZ_INPUT_SECONDS``,
    20 s): reads of valid inputs with a fresh Numba cache include JIT compilation.
    ``worker`` is the worker's code (:data:`WORKER` reads files, manifests and
    deletion files; :mod:`corrupt_dataset` has one for whole datasets);
    ``memory_limit`` caps each worker's address space in bytes (Arrow then uses the
    system allocator, whose reservations are small): a ``MemoryError`` is a problem
    ("memory"), as is a worker killed by the limit."""
    counts: dict[str, int] = {}
    problems: list[tuple[str, str]] = []
    pending = list(enumerate(items))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if input_seconds is not None:
        env["LANCENB_FUZZ_INPUT_SECONDS"] = str(int(input_seconds))
    if memory_limit is not None:
        env.update(ARROW_DEFAULT_MEMORY_POOL="system", MALLOC_ARENA_MAX="2",
                   LANCENB_FUZZ_AS_BYTES=str(int(memory_limit)))
    while pending:
        proc = subprocess.Popen([sys.executable, "-c", _PROLOGUE + worker],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
        payload = "".join(json.dumps([i, k, p]) + "\n" for i, (k, p) in pending)
        try:
            out, err = proc.communicate(payload, timeout=timeout or 60 + 5 * len(pending))
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            err = "worker timed out\n" + (err or "")
        done, started = set(), None
        for line in out.splitlines():
            msg = json.loads(line)
            if msg[0] == "start":
                started = msg[1]
            else:
                done.add(msg[1])
                res = msg[2]
                key = res.split(":")[0]
                counts[key] = counts.get(key, 0) + 1
                if res == "hang" or res.startswith(("other", "memory")):
                    problems.append((items[msg[1]][1], res))
        rest = [(i, it) for i, it in pending if i not in done]
        if rest and started is not None and started not in done:
            what = (f"crash (exit {proc.returncode})" if proc.returncode not in (0, None)
                    else "hang (worker timed out)")
            counts["crash"] = counts.get("crash", 0) + 1
            problems.append((items[started][1], what + ": " + (err or "")[-500:]))
            rest = [(i, it) for i, it in rest if i != started]
        elif rest and proc.returncode != 0:
            raise RuntimeError(f"worker stopped early: {err[-2000:]}")
        # (a worker that exits cleanly between inputs, e.g. after a memory problem,
        # is simply restarted for the rest)
        pending = rest
    return {"counts": counts, "problems": problems}


def make_mutants(seeds: list[tuple[str, str]], out_dir: str, count: int,
                 seed: int = 0) -> list[tuple[str, str]]:
    """``count`` damaged copies of the seed inputs (deletion files keep their name,
    which encodes how to read them)."""
    rng = np.random.default_rng(seed)
    raw = []
    for k, p in seeds:
        with open(p, "rb") as f:
            raw.append((k, p, f.read()))
    out = []
    for j in range(count):
        kind, path, data = raw[int(rng.integers(0, len(raw)))]
        sub = os.path.join(out_dir, f"m{j}")
        if kind == "deletion":
            sub = os.path.join(sub, "_deletions")
        elif kind == "dsfile":  # the whole (small) dataset, one data file damaged
            shutil.copytree(os.path.dirname(os.path.dirname(path)), sub)
            sub = os.path.join(sub, "data")
        os.makedirs(sub, exist_ok=True)
        dst = os.path.join(sub, os.path.basename(path))
        with open(dst, "wb") as f:
            f.write(mutate(data, rng))
        out.append((kind, dst))
    return out
