"""The column plan of fragments with many fields (:meth:`LanceFragment._wide_plan`,
numpy over the manifest's field ids) equals the per-field Python plan on the same
fragments: flat and nested schemas, pylance- and lancenb-written files, a column added
in a second data file, and the same errors for inconsistent manifests."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.dataset import fragment as fragment_mod
from lancenb.errors import CorruptFileError


def _wide_table(n_cols: int, rows: int = 50) -> pa.Table:
    rng = np.random.default_rng(n_cols)
    cols = {}
    for i in range(n_cols):
        kind = i % 4
        if kind == 0:
            cols[f"f{i}"] = rng.random(rows)
        elif kind == 1:
            cols[f"s{i}"] = pa.array([f"v{j % 7}" for j in range(rows)])
        elif kind == 2:
            cols[f"t{i}"] = pa.StructArray.from_arrays(
                [pa.array(np.arange(rows)), pa.array(rng.random(rows))], names=["a", "b"])
        else:
            cols[f"l{i}"] = pa.array([[j, j + 1] for j in range(rows)], pa.list_(pa.int32()))
    return pa.table(cols)


def _plans(path: str, monkeypatch) -> tuple[list, list]:
    """Every fragment's plan through the wide path and through the per-field path."""
    wide = [f._column_plan() for f in lancenb.dataset(path).get_fragments()]
    monkeypatch.setattr(fragment_mod, "WIDE_PLAN_FIELDS", 10**9)
    narrow = [f._column_plan() for f in lancenb.dataset(path).get_fragments()]
    monkeypatch.undo()
    return wide, narrow


@pytest.mark.parametrize("writer", ["lancenb", "pylance"])
@pytest.mark.parametrize("n_cols", [70, 300])
def test_wide_plan_equals_per_field_plan(tmp_path, monkeypatch, writer, n_cols):
    path = str(tmp_path / "ds")
    table = _wide_table(n_cols)
    (lancenb if writer == "lancenb" else lance).write_dataset(table, path,
                                                             max_rows_per_file=20)
    wide, narrow = _plans(path, monkeypatch)
    assert len(wide) == 3 and wide == narrow
    assert list(wide[0]) == table.column_names  # in schema order, every column
    got = lancenb.dataset(path).to_table(columns=[table.column_names[-1], "f0"])
    assert got.equals(table.select([table.column_names[-1], "f0"]))


def test_wide_plan_with_a_column_in_a_second_data_file(tmp_path, monkeypatch):
    path = str(tmp_path / "ds")
    table = _wide_table(80)
    lance.write_dataset(table, path, max_rows_per_file=25)
    lance.dataset(path).add_columns({"extra": "f0 * 2"})
    assert all(len(f.data_files()) == 2 for f in lancenb.dataset(path).get_fragments())
    wide, narrow = _plans(path, monkeypatch)
    assert wide == narrow and all(p["extra"][0] == 1 for p in wide)
    ours = lancenb.dataset(path).to_table(columns=["extra", "s1"])
    assert ours.equals(lance.dataset(path).to_table(columns=["extra", "s1"]))


def _with_column_indices(path: str, edit) -> lancenb.LanceDataset:
    ds = lancenb.dataset(path)
    edit(ds._mf.manifest.fragments[0].files[0])
    ds._fragments = None
    return ds


@pytest.mark.parametrize("wide", [True, False])
def test_wide_plan_errors_as_the_per_field_plan(tmp_path, monkeypatch, wide):
    path = str(tmp_path / "ds")
    lancenb.write_dataset(_wide_table(70, rows=10), path)
    if not wide:
        monkeypatch.setattr(fragment_mod, "WIDE_PLAN_FIELDS", 10**9)

    def short(df):  # fewer column indices than fields
        del df.column_indices[-1]

    ds = _with_column_indices(path, short)
    with pytest.raises(CorruptFileError, match=r"(\d+) fields but \d+ column indices"):
        ds.get_fragments()[0]._column_plan()

    def past_the_end(df):  # a column index after the file's last column
        if not len(df.column_indices):
            df.column_indices.extend(range(len(df.fields)))
        df.column_indices[-1] = 10**6

    ds = _with_column_indices(path, past_the_end)
    with pytest.raises(CorruptFileError, match="no column 1000000 for field"):
        ds.get_fragments()[0]._column_plan()


def test_wide_plans_of_file_versions_with_one_schema(tmp_path, monkeypatch):
    """The same nested wide schema in 2.0, 2.1 and 2.2 datasets, planned in one process
    (the plans are memoised per process: the file version is part of what they depend
    on, since it decides which column each field starts at)."""
    table = _wide_table(72)
    plans = {}
    for version in ("2.0", "2.1", "2.2"):
        path = str(tmp_path / version)
        lancenb.write_dataset(table, path, data_storage_version=version)
        plans[version] = _plans(path, monkeypatch)
        got = lancenb.dataset(path).to_table(columns=["t2", "l3", "s69"])
        assert got.equals(table.select(["t2", "l3", "s69"]))
        assert got.equals(lance.dataset(path).to_table(columns=["t2", "l3", "s69"]))
    for wide, narrow in plans.values():
        assert wide == narrow
