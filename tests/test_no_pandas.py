"""lancenb works where pandas is not installed: pandas is no dependency of lancenb, only
``to_pandas`` and pandas inputs need it. A child interpreter in which every import of
pandas fails (as in an environment with only lancenb's dependencies: ``make test-oldest``)
imports lancenb, writes datasets (2.0, 2.1, 2.2; integer, string, dictionary columns),
filters, counts, takes and appends; pylance reads what it wrote, and it reads what
pylance wrote (a legacy 0.1 dataset with a dictionary column too)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from lancenb.encodings.nptypes import numpy_dtype

lance = pytest.importorskip("lance")

N = 3000

CHILD = r'''
import importlib.abc
import json
import sys


class NoPandas(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NoPandas())

import pyarrow as pa  # noqa: E402

import lancenb as lance  # noqa: E402
import lancenb.dataset  # noqa: E402,F401

root, n = sys.argv[1], int(sys.argv[2])
table = pa.table({
    "a": pa.array(range(n), pa.int64()),
    "s": [f"row {i}" for i in range(n)],
    "d": pa.array([f"k{i % 7}" for i in range(n)]).dictionary_encode(),
    "f": pa.array([i / 4 for i in range(n)], pa.float32()),
})
out = {}
for version in ("2.0", "2.1", "2.2"):
    uri = f"{root}/ours-{version}"
    ds = lance.write_dataset(table, uri, data_storage_version=version)
    ds = lance.write_dataset(table.slice(0, 10), uri, mode="append")
    out[version] = {
        "filtered": ds.to_table(columns=["a", "s"],
                                filter="a % 3 = 0 AND a > 100 AND s LIKE 'row 1%'")
                      .column("a").to_pylist(),
        "count": ds.count_rows("f < 10.5 OR d = 'k3'"),
        "take": ds.take([0, 5, n - 1, n + 9]).to_pylist(),
    }
theirs = {}
for name in ("legacy", "2.1"):
    ds = lance.dataset(f"{root}/theirs-{name}")
    theirs[name] = {
        "table": ds.to_table().to_pylist(),
        "filtered": ds.to_table(filter="d = 'k2' AND a < 50").column("a").to_pylist(),
        "take": ds.take([1, n - 2]).to_pylist(),
    }
out["theirs"] = theirs
out["pandas_imported"] = "pandas" in sys.modules
print(json.dumps(out))
'''


def _table():
    n = N
    return pa.table({
        "a": pa.array(range(n), pa.int64()),
        "s": [f"row {i}" for i in range(n)],
        "d": pa.array([f"k{i % 7}" for i in range(n)]).dictionary_encode(),
        "f": pa.array([i / 4 for i in range(n)], pa.float32()),
    })


def test_write_filter_take_without_pandas(tmp_path):
    table = _table()
    for name, version in (("legacy", "legacy"), ("2.1", "2.1")):
        lance.write_dataset(table, tmp_path / f"theirs-{name}", data_storage_version=version)
    run = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), str(N)],
                         capture_output=True, text=True, env=dict(os.environ), timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    got = json.loads(run.stdout.splitlines()[-1])
    assert got["pandas_imported"] is False

    both = pa.concat_tables([table, table.slice(0, 10)])
    for version in ("2.0", "2.1", "2.2"):
        # what the child wrote, read by pylance
        ref = lance.dataset(tmp_path / f"ours-{version}")
        assert ref.to_table().to_pylist() == both.to_pylist()
        ours = got[version]
        assert ours["filtered"] == ref.to_table(
            columns=["a"], filter="a % 3 = 0 AND a > 100 AND s LIKE 'row 1%'"
        ).column("a").to_pylist()
        assert ours["count"] == ref.count_rows("f < 10.5 OR d = 'k3'")
        assert ours["take"] == ref.take([0, 5, N - 1, N + 9]).to_pylist()

    for name in ("legacy", "2.1"):
        ref = lance.dataset(tmp_path / f"theirs-{name}")
        theirs = got["theirs"][name]
        assert theirs["table"] == table.to_pylist()
        assert theirs["filtered"] == ref.to_table(
            filter="d = 'k2' AND a < 50").column("a").to_pylist()
        assert theirs["take"] == ref.take([1, N - 2]).to_pylist()


@pytest.mark.parametrize("t", [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(),
                               pa.uint16(), pa.uint32(), pa.uint64(), pa.float16(),
                               pa.float32(), pa.float64()], ids=str)
def test_numpy_dtype_matches_arrow(t):
    """numpy_dtype (used instead of pyarrow's to_pandas_dtype, which some pyarrow versions
    answer only with pandas installed) is the dtype of the array's numpy view."""
    arr = pa.array([0, 1], t) if not pa.types.is_float16(t) else \
        pa.array(np.array([0, 1], np.float16))
    assert numpy_dtype(t) == arr.to_numpy().dtype


def test_numpy_dtype_refuses_other_types():
    with pytest.raises(TypeError, match="string is not an integer"):
        numpy_dtype(pa.string())
