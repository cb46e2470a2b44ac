"""No lock lancenb holds at fork time stays held in the child.

A forked child has only the thread that called ``fork``: a lock another thread held at
that moment would never be released there, and the child's first read, filter parse or
cache lookup would hang. Every module-level lock in the package, and the locks of the
objects a read creates (file ranges, search caches, readers), must be fresh in a child.
The check runs in a subprocess: a thread holds every lock while the main thread forks,
then the child acquires each with a timeout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin",
                                reason="needs fork")

SCRIPT = textwrap.dedent(r'''
    import importlib, os, pkgutil, sys, threading, warnings
    warnings.simplefilter("ignore")
    import numpy as np, pyarrow as pa
    import lancenb
    SKIP = ("lancenb.spark",)   # imports pyspark; its locks are pyspark's
    OPTIONAL = {"torch", "lance_namespace", "ray"}   # extras a module may need
    for m in pkgutil.walk_packages(lancenb.__path__, "lancenb.",
                                   onerror=lambda name: None):
        if not m.name.startswith(SKIP):
            try:
                importlib.import_module(m.name)
            except ModuleNotFoundError as e:
                if (e.name or "").split(".")[0] not in OPTIONAL:
                    raise
    lock_types = (type(threading.Lock()), type(threading.RLock()))
    held = []   # (description, getter)
    for name, mod in sorted(sys.modules.items()):
        if name == "lancenb" or name.startswith("lancenb.") and not name.startswith(SKIP):
            for attr, value in list(vars(mod).items()):
                if isinstance(value, lock_types):
                    held.append((f"{name}.{attr}",
                                 lambda mod=mod, attr=attr: getattr(mod, attr)))
    # objects a read creates
    path = sys.argv[1]
    with lancenb.file.LanceFileWriter(path, pa.schema([("x", pa.int64())])) as w:
        w.write_batch(pa.table({"x": np.arange(10)}))
    reader = lancenb.file.LanceFileReader(path)
    reader.read_all().to_table()
    from lancenb.io import RangeReader
    from lancenb.encodings.cache import SearchCache
    from fsspec.implementations.local import LocalFileSystem
    ds = lancenb.write_dataset(pa.table({"x": np.arange(10)}), path + ".ds")
    ds.to_table(filter="x > 3")
    ds.take([1, 2])
    objs = [RangeReader(LocalFileSystem(), path), SearchCache(), reader, ds]
    seen = set()
    while objs:
        o = objs.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        for attr, value in list(vars(o).items()):
            if isinstance(value, lock_types):
                held.append((f"{type(o).__name__}.{attr}",
                             lambda o=o, attr=attr: getattr(o, attr)))
            else:
                for v in (value.values() if isinstance(value, dict) else
                          value if isinstance(value, (list, tuple)) else (value,)):
                    if hasattr(v, "__dict__") and type(v).__module__.startswith("lancenb"):
                        objs.append(v)
    assert len(held) >= 6, held   # the check must see the package's locks
    ready, stop = threading.Event(), threading.Event()
    def hold():
        for _, get in held:
            get().acquire()
        ready.set()
        stop.wait()
    threading.Thread(target=hold, daemon=True).start()
    ready.wait()
    pid = os.fork()
    if pid == 0:
        stuck = [d for d, get in held if not get().acquire(timeout=2)]
        os.write(1, ("STUCK " + " ".join(stuck) + "\n").encode() if stuck else b"OK\n")
        os._exit(1 if stuck else 0)
    _, status = os.waitpid(pid, 0)
    print("checked", len(held), "locks", flush=True)
    sys.exit(os.waitstatus_to_exitcode(status))
''')


def test_no_lock_stays_held_in_a_forked_child(tmp_path):
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "f.lance")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    assert "OK" in out.stdout and "checked" in out.stdout
