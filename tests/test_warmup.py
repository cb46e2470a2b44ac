"""Start-up cost (issue 18): lazy imports, one specialisation per kernel where inputs
differ only in being read-only, a kernel cache shared safely by concurrent processes,
and ``lancenb warmup``.

Each check that depends on what numba compiles runs in fresh processes with their own
``NUMBA_CACHE_DIR``, so the test process's own compilations do not interfere.
"""

import hashlib
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest
from lancenb.kernels import bitpack, rle, slices
from lancenb.kernels._jit import _WRITTEN_TABLES, _written, _written_path, _written_stored

from lancenb.tools.cli import main

# compiles concat_slices for one dtype, called with a writable and a read-only source,
# checks the result and reports the kernel's specialisations and cache statistics
_CONCAT = """
import json, sys
import numpy as np
from lancenb.kernels import slices
dt = np.dtype(sys.argv[1])
src = np.arange(10, dtype=dt)
ro = src.copy()
ro.flags.writeable = False
got = []
for a in (src, ro, src):
    out = np.zeros(4, dt)
    assert slices.concat_slices(a, np.array([1, 5]), np.array([2, 2]), out) == 0
    got.append(out.tolist())
assert got == [[1, 2, 5, 6]] * 3, got
d = slices.concat_slices
print(json.dumps([len(d.signatures), sum(d.stats.cache_hits.values()),
                  sum(d.stats.cache_misses.values())]))
"""


def _env(cache) -> dict:
    env = dict(os.environ)
    env.pop("NUMBA_DISABLE_JIT", None)
    env["NUMBA_CACHE_DIR"] = str(cache)
    return env


def _run(code: str, cache, *args: str) -> str:
    p = subprocess.run([sys.executable, "-c", code, *args], env=_env(cache),
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout.strip().splitlines()[-1]


def test_import_lancenb_loads_neither_the_dataset_layer_nor_numba():
    code = ("import sys, lancenb\n"
            "heavy = [m for m in ('pyarrow.dataset', 'pandas', 'numba', 'sqlglot', "
            "'pyspark', 'lancenb.file', 'lancenb.dataset') if m in sys.modules]\n"
            "print(heavy)")
    assert _run(code, "") == "[]"


def test_function_names_survive_importing_their_subpackages():
    import lancenb.dataset.lance_dataset  # noqa: F401  (binds the subpackages in the parent)
    import lancenb.inspect  # noqa: F401
    import lancenb.tools.warmup  # noqa: F401
    from lancenb.dataset.lance_dataset import dataset

    assert lancenb.dataset is dataset
    assert callable(lancenb.dataset) and callable(lancenb.inspect)
    assert callable(lancenb.warmup)
    assert lancenb.LanceFileWriter.__name__ == "LanceFileWriter"
    assert "LanceDataset" in dir(lancenb)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        lancenb.nope  # noqa: B018


def test_written_parameters_are_read_from_the_kernel_source():
    def names(d):
        params = d.py_func.__code__.co_varnames[:d.py_func.__code__.co_argcount]
        return {params[i] for i in _written(d.py_func)}

    assert names(slices.concat_slices) == {"out"}
    # through helper kernels and views of slices
    assert names(bitpack.inline_unpack_chunks) == {"out", "err"}
    # RLE: the width picks the word kernel in Python; the kernels behind it
    assert names(rle._chunks_status) == {"err"}
    assert names(rle._expand_chunks) == {"out"}
    assert names(rle._fill_words) == {"out_values", "out_lengths"}


def test_written_answers_are_stored_by_the_module_hash(tmp_path):
    src = tmp_path / "wmod.py"
    src.write_text("from lancenb.kernels._jit import kernel\n\n\n@kernel\n"
                   "def copy(a, out):\n    out[:] = a\n    return 0\n")
    spec = importlib.util.spec_from_file_location("lancenb_test_wmod", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    d, filename = mod.copy, os.path.abspath(str(src))
    assert _written_stored(d) == {1}
    stored = pathlib.Path(_written_path(d._cache._cache_path, filename))
    data = json.loads(stored.read_text())
    assert data == {"stamp": hashlib.sha256(src.read_bytes()).hexdigest(),
                    "written": {"copy:4": [1]}}
    # a new process (nothing in memory) takes the stored answer without reading the source
    data["written"]["copy:4"] = [0]
    stored.write_text(json.dumps(data))
    _WRITTEN_TABLES.pop(filename)
    assert _written_stored(d) == {0}
    # an answer stored for other module contents, or a damaged file: read the source
    for text in (json.dumps(dict(data, stamp="00" * 32)), "{not json"):
        stored.write_text(text)
        _WRITTEN_TABLES.pop(filename)
        assert _written_stored(d) == {1}


# a kernel calling another; run with "callee" it calls only the callee, with "caller"
# the callee first (loaded from the cache by then) and then the caller, which compiles
_LINK = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[2])
import linkmod
a = np.arange(5, dtype=np.int64)
out = np.zeros(5, np.int64)
assert linkmod.add_one(a, out) == 0 and out.tolist() == [1, 2, 3, 4, 5]
stats = [sum(linkmod.add_one.stats.cache_hits.values())]
if sys.argv[1] == "caller":
    assert linkmod.add_two(a, out) == 0 and out.tolist() == [2, 3, 4, 5, 6]
    stats.append(sum(linkmod.add_two.stats.cache_misses.values()))
print(json.dumps(stats))
"""


def test_a_kernel_loaded_from_the_cache_links_into_a_new_compilation(tmp_path):
    # a loaded kernel's LLVM bitcode is parsed only when a compilation links it in
    src = tmp_path / "src"
    src.mkdir()
    (src / "linkmod.py").write_text(
        "import numpy as np\nfrom lancenb.kernels._jit import kernel\n\n\n@kernel\n"
        "def add_one(a, out):\n    for i in range(a.size):\n        out[i] = a[i] + 1\n"
        "    return 0\n\n\n@kernel\ndef add_two(a, out):\n    tmp = np.empty_like(out)\n"
        "    add_one(a, tmp)\n    add_one(tmp, out)\n    return 0\n")
    cache = tmp_path / "cache"
    assert json.loads(_run(_LINK, cache, "callee", str(src))) == [0]
    assert json.loads(_run(_LINK, cache, "caller", str(src))) == [1, 1]
    # both loaded; the caller allocates, through the runtime the load path initialises
    assert json.loads(_run(_LINK, cache, "caller", str(src))) == [1, 0]


# a kernel calling numba's own helpers (np.empty: their environments are in
# the cache entry) and raising; run with "load" after a first run compiled it, it
# reports whether loading imported numba.np.arrayobj, then compiles a new kernel that
# calls the same helpers in the same process
_ENVS = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import envmod
assert envmod.first(np.array([5, 3, 9], np.int64), 2) == 8
try:
    envmod.first(np.array([1], np.int64), 2)
except ValueError as e:
    assert "too few values" in str(e)
else:
    raise AssertionError("no error")
imported = "numba.np.arrayobj" in sys.modules
if sys.argv[2] == "load":  # compiled only now
    assert envmod.last(np.array([5, 3, 9], np.int64), 2) == 12
print(json.dumps([imported, sum(envmod.first.stats.cache_hits.values())]))
"""


_ENVMOD = (
    "import numpy as np\nfrom lancenb.kernels._jit import kernel\n\n\n@kernel\n"
    "def first(a, k):\n    if a.size < k:\n        raise ValueError('too few values')\n"
    "    out = np.empty(k, np.int64)\n    out[:] = a[:k]\n    return out.sum()\n\n\n"
    "@kernel\ndef last(a, k):\n    out = np.empty(k, np.int64)\n"
    "    out[:] = a[a.size - k:]\n    return out.sum()\n")


def test_loading_a_kernel_does_not_import_numbas_helper_modules(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "envmod.py").write_text(_ENVMOD)
    cache = tmp_path / "cache"
    assert json.loads(_run(_ENVS, cache, str(src), "compile")) == [True, 0]
    # loaded: the helpers' environments stand in for their modules, which stay unimported
    # until something compiles (and the compilation then works alongside them)
    assert json.loads(_run(_ENVS, cache, str(src), "load")) == [False, 1]


def test_a_damaged_cache_entry_is_compiled_again(tmp_path):
    # an entry that cannot be loaded (damaged, or written by a numba whose internals the
    # loader does not know) costs a compilation, never a failed call
    src = tmp_path / "src"
    src.mkdir()
    (src / "envmod.py").write_text(_ENVMOD)
    cache = tmp_path / "cache"
    assert json.loads(_run(_ENVS, cache, str(src), "compile")) == [True, 0]
    entries = [p for p in cache.rglob("*.nbc") if "first" in p.name]
    assert entries
    for p in entries:
        p.write_bytes(b"not a pickle")
    assert json.loads(_run(_ENVS, cache, str(src), "load")) == [True, 0]


# a kernel writing its argument through a row of a 2-D parameter (``registers[r]``),
# which the source reading does not see: its read-only attempt fails to type
_MISSED = """
import json, sys
import numpy as np
from numba.core import event
sys.path.insert(0, sys.argv[1])
import missmod
n = []
class Count(event.Listener):
    def on_start(self, ev):
        n.append(ev.data["dispatcher"].py_func.__name__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Count())
regs = np.zeros((2, 4), np.uint8)
assert missmod.rows(regs) == 0 and regs.tolist() == [[1, 0, 0, 0]] * 2
print(json.dumps(n))
"""


def test_a_missed_write_is_stored_so_later_processes_skip_the_failing_attempt(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "missmod.py").write_text(
        "from lancenb.kernels._jit import kernel\n\n\n@kernel\n"
        "def bump(reg):\n    reg[0] += 1\n    return 0\n\n\n@kernel\n"
        "def rows(registers):\n    for r in range(registers.shape[0]):\n"
        "        reg = registers[r]\n        bump(reg)\n    return 0\n")
    cache = tmp_path / "cache"
    first = json.loads(_run(_MISSED, cache, str(src)))
    assert first.count("rows") == 2  # the read-only attempt, then as given
    # the next process loads the kernels as given: no compilation, failed or not
    assert json.loads(_run(_MISSED, cache, str(src))) == []


def test_readonly_and_writable_inputs_share_one_specialisation(tmp_path):
    sigs, hits, misses = json.loads(_run(_CONCAT, tmp_path, "uint16"))
    assert (sigs, hits, misses) == (1, 0, 1)
    # a new process loads it from the cache and compiles nothing
    assert json.loads(_run(_CONCAT, tmp_path, "uint16")) == [1, 1, 0]


# two threads that miss at once both reach _compile_for_args with the same argument
# types (simulated: called twice); afterwards calls must go straight to machine code
_DOUBLE_MISS = """
import json
import numpy as np
from lancenb.kernels import slices
d = slices.concat_slices
src, starts, lens = np.arange(10, dtype=np.uint16), np.array([1, 5]), np.array([2, 2])
for _ in range(2):
    d._compile_for_args(src, starts, lens, np.zeros(4, np.uint16))
slow = []
plain = type(d)._compile_for_args
type(d)._compile_for_args = lambda self, *a, **k: slow.append(1) or plain(self, *a, **k)
for _ in range(5):
    out = np.zeros(4, np.uint16)
    assert d(src, starts, lens, out) == 0 and out.tolist() == [1, 2, 5, 6]
print(json.dumps(len(slow)))
"""


def test_threads_missing_at_once_leave_calls_on_the_fast_path(tmp_path):
    # a second dispatch entry for the same types made every later call ambiguous to
    # numba's C dispatch, which sent each one through Python typing (~20 us)
    assert json.loads(_run(_DOUBLE_MISS, tmp_path)) == 0


def test_concurrent_processes_share_one_cache(tmp_path):
    # four processes compile the same kernel for four dtypes at the same time into one
    # cache; afterwards every process finds its own specialisation there, intact
    dtypes = ("uint8", "uint16", "uint32", "int64")
    procs = [subprocess.Popen([sys.executable, "-c", _CONCAT, dt], env=_env(tmp_path),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for dt in dtypes]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
    for dt in dtypes:
        assert json.loads(_run(_CONCAT, tmp_path, dt)) == [1, 1, 0], dt


def test_warmup_fills_the_cache_for_the_next_process():
    # one workload in a worker process, then the check pass in this (fresh) process must
    # load everything from the cache. The default cache, which the rest of the suite has
    # filled, keeps this short; with an empty one it compiles the whole float path.
    code = ("import json\n"
            "from lancenb.tools.warmup import _warm\n"
            "r = _warm(('floats/2.1/default',), processes=1, progress=False, check=True)\n"
            "print(json.dumps([r.tasks, r.compiled, r.filled, r.cache_dir]))")
    env = dict(os.environ)
    env.pop("NUMBA_DISABLE_JIT", None)
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    tasks, compiled, filled, where = json.loads(p.stdout.strip().splitlines()[-1])
    assert tasks == 1 and compiled >= 0
    assert filled == 0  # nothing the worker used was missing from the cache
    assert where and os.path.isdir(where)


def test_cli_warmup_rejects_a_bad_process_count(capsys):
    assert main(["warmup", "--processes", "0", "--quiet"]) == 1
    assert "processes must be at least 1, not 0" in capsys.readouterr().err
