"""Build the sdist and the wheel, install the wheel in a fresh virtualenv, use it there.

Editable installs (the project's .venv) import from the source tree, so a module missing
from the wheel goes unnoticed by the test suite. This script does what a user does:

1. builds the sdist from the repository, unpacks it in a temporary directory and builds the
   wheel from the unpacked sdist (as ``python -m build`` does), so the sdist must be enough
   to build from; checks the sdist holds the .proto files and the kernels, and the wheel
   every module of ``lancenb/`` and ``kernels/`` (the latter as ``lancenb.kernels``).
   Building the wheel compiles every kernel for a portable CPU target into
   ``lancenb/kernels/_jitcache`` (setup.py; ``LANCENB_BUILD_KERNELS=0`` skips it); the
   wheel's size and the build time are printed;
2. creates a virtualenv outside the source tree and installs the wheel with its
   dependencies from the package index (the pip cache makes this quick after the first
   time); pyspark (400 MB) is linked in from the running interpreter unless ``--spark``
   installs ``lancenb[spark]``;
3. from a directory outside the source tree: writes and reads a dataset at file versions
   2.0, 2.1 and 2.2 (a table with nested, list, string and packed-struct columns and
   timestamps at the int64 extremes; take, a filter and count_rows) with an empty
   ``NUMBA_CACHE_DIR``, as on a new machine, and checks that no kernel was compiled (numba's
   ``numba:compile`` events) when the wheel carries compiled kernels; runs the ``lancenb``
   command line on it, and imports the Spark data source and checks its name (a real
   SparkSession only with ``--spark``: starting a JVM takes a while).

Usage: ``python scripts/smoke_wheel.py [--keep] [--spark | --no-spark] [--verbose]``; exit
status 0 when everything works. Steps and their times are printed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# the part that runs inside the fresh virtualenv
SMOKE = r'''
import sys, os
import pyarrow as pa
import pyarrow.compute as pc
from numba.core import event
import lancenb
import lancenb.kernels

compiled = []


class Compiles(event.Listener):
    def on_start(self, ev):
        pass

    def on_end(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)


event.register("numba:compile", Compiles())

repo = sys.argv[1]
where = os.path.dirname(lancenb.__file__)
assert not where.startswith(repo), f"lancenb imported from the source tree: {where}"
assert not os.path.dirname(lancenb.kernels.__file__).startswith(repo)
packed = {"lance-encoding:packed": "true"}
schema = pa.schema([
    pa.field("id", pa.int64()),
    pa.field("p", pa.struct([pa.field("a", pa.int32()), pa.field("b", pa.float64())]),
             metadata=packed),
    pa.field("s", pa.string()),
    pa.field("l", pa.list_(pa.int16())),
    pa.field("st", pa.struct([pa.field("x", pa.string()), pa.field("y", pa.int8())])),
    pa.field("t", pa.timestamp("ns")),
])
n = 3000
ids = pa.array(range(n), pa.int64())
table = pa.table({
    "id": ids,
    "p": pa.StructArray.from_arrays([pa.array(range(n), pa.int32()),
                                     pa.array([i / 2 for i in range(n)])], names=["a", "b"]),
    "s": pa.array([f"row {i}" if i % 7 else None for i in range(n)]),
    "l": pa.array([[i % 5] * (i % 4) for i in range(n)], pa.list_(pa.int16())),
    "st": pa.StructArray.from_arrays([pa.array([str(i) for i in range(n)]),
                                      pa.array([i % 100 for i in range(n)], pa.int8())],
                                     names=["x", "y"]),
    # int64 extremes: far outside Python's datetime range
    "t": pa.array([-2**63 + 1, 2**63 - 1] + list(range(n - 2)), pa.timestamp("ns")),
}, schema=schema)
out = sys.argv[2]
for version in ("2.0", "2.1", "2.2"):
    uri = os.path.join(out, f"ds_{version}")
    lancenb.write_dataset(table, uri, data_storage_version=version, max_rows_per_file=2000)
    ds = lancenb.dataset(uri)
    assert ds.to_table().equals(table), version
    assert ds.count_rows() == n and ds.count_rows(filter="id >= 2990") == 10, version
    assert ds.take([0, 2999, 1500]).column("s").to_pylist() == [None, "row 2999", "row 1500"]
    got = ds.to_table(filter="id < 5", columns=["id", "p"])
    assert got.column("p").combine_chunks().equals(table.column("p").slice(0, 5).combine_chunks())
    print(f"dataset {version}: {len(ds.get_fragments())} fragments, round trip OK")
print(f"kernels compiled on first use: {len(compiled)}")
if sys.argv[3] == "1":  # the wheel ships compiled kernels: none may compile here
    assert not compiled, f"compiled although the wheel ships kernels: {sorted(set(compiled))}"
print(os.path.join(out, "ds_2.1"))
'''

SPARK = r'''
import sys
from lancenb.spark.datasource import LanceNbDataSource
import lancenb.spark
assert lancenb.spark.FORMAT == "lancenb"
assert LanceNbDataSource.name() == "lancenb", LanceNbDataSource.name()
if sys.argv[1] == "1":
    spark = lancenb.spark.local_session()
    lancenb.spark.register(spark)
    df = spark.read.format("lancenb").load(sys.argv[2])
    assert df.count() == 3000
    spark.stop()
    print("spark: registered, read 3000 rows")
else:
    print("spark: data source class imports, name 'lancenb'")
'''


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, **kw)


def _step(name: str, t0: float) -> float:
    t = time.perf_counter()
    print(f"[smoke_wheel] {name}: {t - t0:.1f} s", flush=True)
    return t


def _link_pyspark(venv: Path) -> None:
    """Make the running interpreter's pyspark and py4j (pure Python, 400 MB with the
    bundled jars) importable in ``venv`` through a .pth file, instead of installing them
    again: only lancenb and its own dependencies come from the wheel."""
    import importlib.util

    shelf = venv / "spark-shelf"
    shelf.mkdir()
    for name in ("pyspark", "py4j"):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit(f"{name} is not installed here; use --spark or --no-spark")
        (shelf / name).symlink_to(Path(list(spec.submodule_search_locations)[0]))
    (site,) = (venv / "lib").glob("python3*/site-packages")
    (site / "smoke-pyspark.pth").write_text(f"{shelf}\n")


def _expected_modules(src: Path) -> set[str]:
    """The modules a wheel built from the source tree ``src`` must hold (``src`` is the
    unpacked sdist, not the repository: files others add to the working tree while the
    wheel builds are not the wheel's business)."""
    mods = {f"lancenb/{p.relative_to(src / 'lancenb').as_posix()}"
            for p in (src / "lancenb").rglob("*.py")}
    mods |= {f"lancenb/kernels/{p.relative_to(src / 'kernels').as_posix()}"
             for p in (src / "kernels").rglob("*.py")}
    return mods


def build(tmp: Path) -> tuple[Path, Path]:
    """The sdist (built from the repository) and the wheel (built from the sdist)."""
    dist = tmp / "dist"
    dist.mkdir()
    hook = ("import sys; import _lancenb_build as b; "
            "print(getattr(b, sys.argv[1])(sys.argv[2]))")
    _run([sys.executable, "-c", hook, "build_sdist", str(dist)], cwd=REPO,
         capture_output=True, text=True)
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as tf:
        names = tf.getnames()
        tf.extractall(tmp / "src", filter="data")
    root = names[0].split("/")[0]
    members = {n.split("/", 1)[1] for n in names if "/" in n}
    want = {f"protos/{p.name}" for p in (REPO / "protos").glob("*.proto")}
    want |= {"setup.py", "_lancenb_build.py", "pyproject.toml"}  # the build backend
    want |= {f"kernels/{p.relative_to(REPO / 'kernels').as_posix()}"
             for p in (REPO / "kernels").rglob("*.py") if "__pycache__" not in p.parts}
    want |= {f"lancenb/{p.relative_to(REPO / 'lancenb').as_posix()}"
             for p in (REPO / "lancenb").rglob("*.py")}
    missing = sorted(want - members)
    if missing:
        raise SystemExit(f"sdist {sdist.name} lacks {missing}")
    _run([sys.executable, "-c", hook, "build_wheel", str(dist)], cwd=tmp / "src" / root,
         capture_output=True, text=True)
    (wheel,) = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        in_wheel = set(zf.namelist())
    missing = sorted(_expected_modules(tmp / "src" / root) - in_wheel)
    if missing:
        raise SystemExit(f"wheel {wheel.name} lacks {missing}")
    extra = sorted(n for n in in_wheel if n.endswith(".py") and not n.startswith("lancenb/"))
    if extra:
        raise SystemExit(f"wheel {wheel.name} installs modules outside lancenb: {extra}")
    return sdist, wheel


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--spark", action="store_true",
                    help="install lancenb[spark] (pyspark from the index), start a local "
                         "SparkSession and read the dataset through it")
    ap.add_argument("--no-spark", action="store_true", help="skip the Spark check")
    ap.add_argument("--verbose", action="store_true", help="show pip's warnings")
    args = ap.parse_args(argv)
    t0 = start = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="lancenb-smoke-"))
    try:
        sdist, wheel = build(tmp)
        with zipfile.ZipFile(wheel) as zf:
            shipped = [n for n in zf.namelist() if "/_jitcache/" in n]
        ships = "lancenb/kernels/_jitcache/manifest.json" in shipped
        print(f"[smoke_wheel] wheel {wheel.stat().st_size / 2**20:.1f} MiB, "
              + (f"{len(shipped) - 1} compiled-kernel cache files" if ships
                 else "no compiled kernels (LANCENB_BUILD_KERNELS=0)"))
        t0 = _step(f"built {sdist.name} and {wheel.name}, contents checked", t0)
        venv = tmp / "venv"
        _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
        py = venv / "bin" / "python"
        # the running interpreter's pip installs into the new environment (no pip of
        # its own to bootstrap), without byte-compiling every dependency
        spec = f"{wheel}[spark]" if args.spark else str(wheel)
        _run([sys.executable, "-m", "pip", "--python", str(py), "install", "--quiet",
              "--no-compile", "--disable-pip-version-check", spec],
             stderr=subprocess.DEVNULL if not args.verbose else None)
        t0 = _step("fresh virtualenv with the wheel and its dependencies", t0)
        if not args.spark and not args.no_spark:
            _link_pyspark(venv)
        work = tmp / "work"
        work.mkdir()
        drop = ("PYTHONPATH", "VIRTUAL_ENV", "NUMBA_DISABLE_JIT", "LANCENB_SHIPPED_KERNELS",
                "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")
        env = {k: v for k, v in os.environ.items() if k not in drop}
        # an empty Numba cache: first use on a new machine
        env["NUMBA_CACHE_DIR"] = str(tmp / "numba-cache")
        out = _run([str(py), "-c", SMOKE, str(REPO), str(work), "1" if ships else "0"],
                   cwd=work, env=env, capture_output=True, text=True)
        print(out.stdout.rstrip())
        ds_uri = out.stdout.strip().splitlines()[-1]
        t0 = _step("datasets 2.0/2.1/2.2 written and read (empty Numba cache"
                   + (", nothing compiled)" if ships else ")"), t0)
        cli = _run([str(venv / "bin" / "lancenb"), "inspect", ds_uri], cwd=work, env=env,
                   capture_output=True, text=True)
        if "3,000" not in cli.stdout:
            raise SystemExit(f"lancenb inspect did not report 3,000 rows:\n{cli.stdout}")
        t0 = _step("lancenb inspect", t0)
        if not args.no_spark:
            _run([str(py), "-c", SPARK, "1" if args.spark else "0", ds_uri], cwd=work, env=env)
            t0 = _step("spark data source", t0)
    except subprocess.CalledProcessError as e:
        for stream in (e.stdout, e.stderr):
            if stream:
                print(stream, file=sys.stderr)
        print(f"[smoke_wheel] FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"[smoke_wheel] kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"[smoke_wheel] OK in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
