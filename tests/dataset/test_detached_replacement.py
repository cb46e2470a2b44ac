"""Detached commits and DataReplacement, against pylance.

Detached versions (``LanceDataset.commit(..., detached=True)``): a random version
number with the high bit set, stored as ``_versions/d{version}.manifest``, never
listed; each library opens the other's by number and builds detached versions on
them. ``LanceOperation.DataReplacement`` swaps a data file of given fragments; the
result must be what pylance commits for the same operation.
"""

from __future__ import annotations

import os

import lance
import pyarrow as pa
import pytest

import lancenb

HIGH = 1 << 63


@pytest.mark.parametrize("lib", [lancenb, lance])
def test_detached_append_read_by_both(tmp_path, lib):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(pa.table({"x": [0]}), uri)
    frag = lib.LanceFragment.create(uri, pa.table({"x": [1]}))
    det = lib.LanceDataset.commit(uri, lib.LanceOperation.Append([frag]), read_version=1,
                                  detached=True)
    assert det.version & HIGH
    assert f"d{det.version}.manifest" in os.listdir(os.path.join(uri, "_versions"))
    for reader in (lancenb, lance):
        assert reader.dataset(uri).version == 1  # not the latest, not listed
        assert [v["version"] for v in reader.dataset(uri).versions()] == [1]
        assert reader.dataset(uri).checkout_version(det.version).to_table() == \
            pa.table({"x": [0, 1]})
    # attached commits go on; the detached version still reads the same
    lancenb.write_dataset(pa.table({"x": [2]}), uri, mode="append")
    assert lance.dataset(uri).to_table() == pa.table({"x": [0, 2]})
    assert lancenb.dataset(uri, version=det.version).to_table() == pa.table({"x": [0, 1]})
    # a detached commit on a detached version, by the other library
    other = lance if lib is lancenb else lancenb
    frag = other.LanceFragment.create(uri, pa.table({"x": [3]}))
    det2 = other.LanceDataset.commit(uri, other.LanceOperation.Append([frag]),
                                     read_version=det.version, detached=True)
    assert det2.version & HIGH and det2.version != det.version
    for reader in (lancenb, lance):
        assert reader.dataset(uri).checkout_version(det2.version).to_table() == \
            pa.table({"x": [0, 1, 3]})


def test_detached_refused_on_v1_names_and_new_datasets(tmp_path):
    uri = str(tmp_path / "v1")
    lancenb.write_dataset(pa.table({"x": [0]}), uri, enable_v2_manifest_paths=False)
    frag = lancenb.LanceFragment.create(uri, pa.table({"x": [1]}))
    op = lancenb.LanceOperation.Append([frag])
    with pytest.raises(OSError, match="v1 manifest paths"):
        lancenb.LanceDataset.commit(uri, op, read_version=1, detached=True)
    ref_uri = str(tmp_path / "v1ref")
    lance.write_dataset(pa.table({"x": [0]}), ref_uri, enable_v2_manifest_paths=False)
    rfrag = lance.LanceFragment.create(ref_uri, pa.table({"x": [1]}))
    with pytest.raises(OSError, match="v1 manifest paths"):
        lance.LanceDataset.commit(ref_uri, lance.LanceOperation.Append([rfrag]),
                                  read_version=1, detached=True)
    schema = pa.schema([("x", pa.int64())])
    with pytest.raises(lancenb.errors.InvalidInputError, match="new datasets"):
        lancenb.LanceDataset.commit(str(tmp_path / "new"), lancenb.LanceOperation.Overwrite(
            schema, []), detached=True)


def test_attached_commit_on_detached_read_version_refused(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(pa.table({"x": [0]}), uri)
    frag = lancenb.LanceFragment.create(uri, pa.table({"x": [1]}))
    det = lancenb.LanceDataset.commit(uri, lancenb.LanceOperation.Append([frag]),
                                      read_version=1, detached=True)
    with pytest.raises(lancenb.errors.InvalidInputError, match="detached"):
        lancenb.LanceDataset.commit(uri, lancenb.LanceOperation.Append([frag]),
                                    read_version=det.version)


def _replace(lib, uri, frag_ids, table):
    new = lib.fragment.LanceFragment.create(uri, table)
    groups = [lib.LanceOperation.DataReplacementGroup(i, new.files[0]) for i in frag_ids]
    return lib.LanceDataset.commit(uri, lib.LanceOperation.DataReplacement(groups),
                                   read_version=lib.dataset(uri).version)


@pytest.mark.parametrize("lib", [lancenb, lance])
def test_data_replacement_like_pylance(tmp_path, lib):
    """The committed version equals pylance's: fragments in place, the new file's path
    and size in the replaced fragment."""
    t = pa.table({"a": range(90), "b": [str(i) for i in range(90)]})
    new = pa.table({"a": range(100, 130), "b": [f"n{i}" for i in range(30)]})
    out = {}
    for writer, name in ((lancenb, "n"), (lance, "p")):
        uri = str(tmp_path / name)
        lance.write_dataset(t, uri, max_rows_per_file=30)
        (_replace(lancenb if writer is lancenb else lance, uri, [1], new))
        ds = lance.dataset(uri)
        out[name] = (ds.version, [f.fragment_id for f in ds.get_fragments()],
                     [len(f.data_files()) for f in ds.get_fragments()], ds.to_table())
        assert lancenb.dataset(uri).to_table() == ds.to_table()
    assert out["n"] == out["p"]
    assert out["n"][3]["a"].to_pylist()[30:60] == list(range(100, 130))


def test_data_replacement_of_one_column_file(tmp_path):
    """Replacing the file of one column (added by add_columns as a file of its own)."""
    out = {}
    for lib, name in ((lancenb, "n"), (lance, "p")):
        uri = str(tmp_path / name)
        ds = lance.write_dataset(pa.table({"a": range(10)}), uri)
        ds.add_columns({"b": "a * 2"})
        ds = lance.dataset(uri)
        old = ds.get_fragments()[0].data_files()[1]
        fname = f"b-{name}.lance"
        with lancenb.LanceFileWriter(os.path.join(uri, "data", fname),
                                     version=f"{old.file_major_version}."
                                             f"{old.file_minor_version}") as w:
            w.write_batch(pa.table({"b": pa.array(range(100, 110), pa.int64())}))
        size = os.path.getsize(os.path.join(uri, "data", fname))
        df = lib.fragment.DataFile(fname, [1], [0], old.file_major_version,
                                   old.file_minor_version, size)
        L = lib.LanceOperation
        lib.LanceDataset.commit(uri, L.DataReplacement([L.DataReplacementGroup(0, df)]),
                                read_version=ds.version)
        out[name] = lance.dataset(uri).to_table()
        assert lancenb.dataset(uri).to_table() == out[name]
    assert out["n"] == out["p"]
    assert out["n"]["b"].to_pylist() == list(range(100, 110))


def test_data_replacement_errors(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(pa.table({"a": range(10)}), uri)
    with pytest.raises(lancenb.errors.InvalidInputError, match="not found"):
        _replace(lancenb, uri, [7], pa.table({"a": range(10)}))
    with pytest.raises(lancenb.errors.InvalidInputError, match="no changes"):
        new = lancenb.fragment.LanceFragment.create(uri, pa.table({"a": range(10)}))
        df = new.files[0]
        df.file_minor_version = 0 if df.file_minor_version else 1
        L = lancenb.LanceOperation
        lancenb.LanceDataset.commit(uri, L.DataReplacement([L.DataReplacementGroup(0, df)]),
                                    read_version=1)
    assert lance.dataset(uri).version == 1
