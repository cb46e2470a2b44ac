"""Compiled kernels shipped with the package (issue 18): a numba cache built for a portable
CPU target (``lancenb.tools.warmup.build_shipped``, which the wheel build runs) is used by a new
process whose own cache is empty, and only when it is valid for this machine.

Every check runs real processes: one builds the shipped cache for one kernel
(``concat_slices`` over uint16), the others use it with their own empty
``NUMBA_CACHE_DIR``, pointed at the shipped directory by ``LANCENB_SHIPPED_KERNELS``.
"""

import json
import os
import pickle
import shutil
import subprocess
import sys

import pytest
from lancenb.kernels._jit import host_cpu_features

from lancenb.tools.warmup import PORTABLE_TARGETS, build_shipped

# calls concat_slices once and reports the result and how many compilations it took
_USE = """
import json, sys
import numpy as np
from numba.core import event

compiled = []


class Compiles(event.Listener):
    def on_start(self, ev):
        pass

    def on_end(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)


event.register("numba:compile", Compiles())
from lancenb.kernels import slices

dt = np.dtype(sys.argv[1])
src = np.arange(10, dtype=dt)
out = np.zeros(4, dt)
status = slices.concat_slices(src, np.array([1, 5]), np.array([2, 2]), out)
print(json.dumps([int(status), out.tolist(), compiled]))
"""


def _target() -> str:
    """A portable target this machine can run (x86-64-v3 where available)."""
    have = host_cpu_features()
    for name in ("x86-64-v3", "x86-64-v2"):
        if have.issuperset(PORTABLE_TARGETS[name]):
            return name
    return "generic"


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    dest = tmp_path_factory.mktemp("shipped")
    script = _USE.replace("sys.argv[1]", "'uint16'")
    manifest = build_shipped(str(dest), targets=[_target()], script=script)
    assert manifest["files"] >= 2  # an index and a data file per compiled kernel
    return dest


def _use(shipped_dir, cache, dtype="uint16"):
    env = dict(os.environ)
    env.pop("NUMBA_DISABLE_JIT", None)
    env["NUMBA_CACHE_DIR"] = str(cache)
    env["LANCENB_SHIPPED_KERNELS"] = str(shipped_dir)
    p = subprocess.run([sys.executable, "-c", _USE, dtype], env=env, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    status, out, compiled = json.loads(p.stdout.strip().splitlines()[-1])
    assert (status, out) == (0, [1, 2, 5, 6])  # right whichever way the code came
    return compiled


def _copy(shipped, tmp_path):
    dest = tmp_path / "copy"
    shutil.copytree(shipped, dest)
    return dest


def _snapshot(d):
    return {p.name: (p.stat().st_mtime_ns, p.stat().st_size) for p in d.iterdir()}


def test_manifest_names_the_target_and_versions(shipped):
    import numba

    m = json.loads((shipped / "manifest.json").read_text())
    assert m["numba"] == numba.__version__
    assert m["python"] == "%d.%d" % sys.version_info[:2]
    (target,) = m["targets"]
    assert target["name"] == _target()
    assert target["magic"][1] == _target()  # compiled for the portable CPU, not this one
    assert set(target["requires"]) == set(PORTABLE_TARGETS[_target()])


def test_a_new_process_with_an_empty_cache_compiles_nothing(shipped, tmp_path):
    before = _snapshot(shipped)
    assert _use(shipped, tmp_path / "cache") == []
    assert _snapshot(shipped) == before  # only ever read
    # with the shipped cache turned off (LANCENB_SHIPPED_KERNELS="") it compiles
    assert _use("", tmp_path / "cache2")


def test_a_cpu_lacking_a_target_feature_compiles(shipped, tmp_path):
    d = _copy(shipped, tmp_path)
    m = json.loads((d / "manifest.json").read_text())
    m["targets"][0]["requires"].append("lancenb-no-such-cpu-feature")
    (d / "manifest.json").write_text(json.dumps(m))
    assert _use(d, tmp_path / "cache")


def test_another_numba_version_compiles(shipped, tmp_path):
    d = _copy(shipped, tmp_path)
    m = json.loads((d / "manifest.json").read_text())
    m["numba"] = "0.0.1"
    (d / "manifest.json").write_text(json.dumps(m))
    assert _use(d, tmp_path / "cache")


def test_a_stale_source_hash_compiles(shipped, tmp_path):
    # the index records the hash of the kernel module it was compiled from; an edited
    # module (any other hash) must not load that machine code
    d = _copy(shipped, tmp_path)
    indexes = list(d.glob("*.nbi"))
    assert indexes
    for index in indexes:
        with open(index, "rb") as f:
            version = pickle.load(f)
            stamp, overloads = pickle.loads(f.read())
        assert isinstance(stamp, bytes) and overloads
        with open(index, "wb") as f:
            pickle.dump(version, f, protocol=-1)
            f.write(pickle.dumps((b"\0" * len(stamp), overloads), protocol=-1))
    assert _use(d, tmp_path / "cache")


def test_damaged_shipped_files_compile(shipped, tmp_path):
    d = _copy(shipped, tmp_path)
    for f in d.glob("*.nbc"):
        f.write_bytes(b"not a numba cache file")
    assert _use(d, tmp_path / "cache")
    (d / "manifest.json").write_text("{")
    assert _use(d, tmp_path / "cache2")
