"""``write_dataset(mode="create")`` to a ``memory://`` URI that already holds a dataset:
pylance opens a new empty store for every call given a ``memory://`` URI, so the create
succeeds, and dataset objects opened before keep their own store; lancenb does the same
(a new store for that root), and, unlike pylance, ``dataset(uri)`` opens the newest.
"""

from __future__ import annotations

import uuid

import lance
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import DatasetExistsError


def _t(*values):
    return pa.table({"a": pa.array(values, pa.int64())})


def _try(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - the kind of failure is what is compared
        return type(e).__name__


def _story(lib, uri: str) -> list:
    """Create, index and append; create again at the same URI; use both objects."""
    out = []
    old = lib.write_dataset(_t(1, 2), uri)
    old.create_scalar_index("a", "BTREE")
    old.insert(_t(3))
    out.append((old.count_rows(), old.version))
    new = lib.write_dataset(_t(7), uri, mode="create")
    out.append((new.count_rows(), new.version, len(new.list_indices())))
    out.append((old.count_rows(), old.version, old.to_table(filter="a = 1").num_rows))
    new.insert(_t(8, 9))
    old.insert(_t(4))
    out.append((sorted(new.to_table()["a"].to_pylist()), new.version))
    out.append((sorted(old.to_table()["a"].to_pylist()), old.version))
    out.append(_try(lambda: lib.write_dataset(_t(5), uri).version))  # (a third store)
    return out


@pytest.mark.filterwarnings("ignore:The 'list_indices' method:DeprecationWarning")
def test_create_again_on_memory_like_pylance():
    name = uuid.uuid4().hex
    want = _story(lance, f"memory://{name}/pylance")
    assert _story(lancenb, f"memory://{name}/lancenb") == want
    assert want[1] == (1, 1, 0) and want[5] == 1


def test_memory_dataset_opened_again_is_the_newest():
    """The deliberate difference: pylance's ``dataset(uri)`` finds nothing (a new
    store); lancenb's opens the dataset the last create left there."""
    uri = f"memory://{uuid.uuid4().hex}/ds"
    lancenb.write_dataset(_t(1, 2), uri)
    lancenb.write_dataset(_t(3), uri, mode="append")
    lancenb.write_dataset(_t(7), uri, mode="create")
    ds = lancenb.dataset(uri)
    assert ds.to_table()["a"].to_pylist() == [7] and ds.version == 1
    lancenb.write_dataset(_t(8), f"{uri}/../other")  # another root is untouched
    assert lancenb.dataset(uri).count_rows() == 1


@pytest.mark.parametrize("lib", [lance, lancenb])
def test_create_again_on_disk_is_refused(tmp_path, lib):
    lib.write_dataset(_t(1), str(tmp_path / "ds"))
    with pytest.raises((DatasetExistsError, OSError, ValueError)):
        lib.write_dataset(_t(2), str(tmp_path / "ds"), mode="create")
