"""Legacy (0.1) datasets as pylance 14 reads and appends them.

Manifests written before the data storage version was recorded (pylance 0.15 and
older) are made here from pylance's own datasets with the field removed; lancenb
must infer the version pylance infers and append the files pylance appends. Legacy
data files lancenb writes must read the same in both libraries as the ones pylance
writes for the same table.
"""

from __future__ import annotations

import datetime
import decimal
import os
import shutil
import struct

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import InvalidInputError, NotSupportedError
from lancenb.file import LanceFileReader, LanceFileWriter
from lancenb.table.manifest import VERSIONS_DIR, parse_manifest_file

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _frame(m) -> bytes:
    """A manifest file of ``m`` alone, as written (no checks: some are stale on
    purpose)."""
    mb = m.SerializeToString()
    return struct.pack("<I", len(mb)) + mb + struct.pack("<qHH", 0, 0, 2) + b"LANC"


def _strip_data_format(uri: str, *, v2_flag: bool = False) -> None:
    """Rewrite the latest manifest as pylance 0.15 wrote it: no data storage format
    (``v2_flag``: the deprecated writer flag 4 set)."""
    d = os.path.join(uri, VERSIONS_DIR)
    name = sorted(n for n in os.listdir(d) if n.endswith(".manifest"))[0]
    mf = parse_manifest_file(_read(os.path.join(d, name)), name)
    m = mf.manifest
    m.ClearField("data_format")
    m.ClearField("transaction_section")
    if v2_flag:
        m.writer_feature_flags |= 4
    with open(os.path.join(d, name), "wb") as f:
        f.write(_frame(m))


def _file_versions(ds) -> list:
    return sorted({(f.file_major_version, f.file_minor_version)
                   for fr in ds.get_fragments() for f in fr.metadata.files})


X = pa.table({"x": pa.array(range(1024), pa.int64())})


@pytest.mark.parametrize("case", ["legacy_empty", "v2_flag_empty", "legacy_files",
                                  "v2_0_files"])
def test_inferred_version_and_append_match_pylance(tmp_path, case):
    base = str(tmp_path / "base")
    version = "2.0" if case == "v2_0_files" else "legacy"
    data = X.slice(0, 10) if case.endswith("files") else X.slice(0, 0)
    lance.write_dataset(data, base, data_storage_version=version)
    _strip_data_format(base, v2_flag=case == "v2_flag_empty")
    shutil.copytree(base, tmp_path / "pl")
    shutil.copytree(base, tmp_path / "nb")
    pl = lance.dataset(str(tmp_path / "pl"))
    nb = lancenb.dataset(str(tmp_path / "nb"))
    assert nb.data_storage_version == pl.data_storage_version
    assert nb.data_storage_version == {"legacy_empty": "0.1", "v2_flag_empty": "2.2",
                                       "legacy_files": "0.1", "v2_0_files": "2.0"}[case]
    lance.write_dataset(X, pl.uri, mode="append")
    lancenb.write_dataset(X, nb.uri, mode="append")
    pl, nb = lance.dataset(pl.uri), lancenb.dataset(nb.uri)
    assert nb.data_storage_version == pl.data_storage_version
    assert lance.dataset(nb.uri).data_storage_version == pl.data_storage_version
    assert _file_versions(lance.dataset(nb.uri)) == _file_versions(pl)
    want = pl.to_table()
    assert nb.to_table().equals(want)
    assert lance.dataset(nb.uri).to_table().equals(want)


def test_mixed_versions_without_a_recorded_format_are_refused(tmp_path):
    uri = str(tmp_path / "mixed")
    lance.write_dataset(X.slice(0, 3), uri, data_storage_version="legacy")
    other = str(tmp_path / "other")
    lance.write_dataset(X.slice(0, 3), other, data_storage_version="2.0")
    frag = lance.dataset(other).get_fragments()[0].metadata
    shutil.copy(os.path.join(other, "data", frag.data_files()[0].path),
                os.path.join(uri, "data"))
    # splice the 2.0 fragment into the legacy manifest
    d = os.path.join(uri, VERSIONS_DIR)
    name = sorted(n for n in os.listdir(d) if n.endswith(".manifest"))[0]
    mf = parse_manifest_file(_read(os.path.join(d, name)), name)
    od = os.path.join(other, VERSIONS_DIR)
    oname = sorted(n for n in os.listdir(od) if n.endswith(".manifest"))[0]
    omf = parse_manifest_file(_read(os.path.join(od, oname)), oname)
    m = mf.manifest
    g = m.fragments.add()
    g.CopyFrom(omf.manifest.fragments[0])
    g.id = 1
    m.max_fragment_id = 1
    m.ClearField("data_format")
    m.ClearField("transaction_section")
    with open(os.path.join(d, name), "wb") as f:
        f.write(_frame(m))
    with pytest.raises(Exception, match="same version|mixture"):
        lance.dataset(uri)
    with pytest.raises(InvalidInputError, match="same version"):
        lancenb.dataset(uri)


def _legacy_table(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = np.array(["", "a", "bc", "déf", "ghij", "x" * 40])
    s = words[rng.integers(0, len(words), n)]
    k = rng.integers(-1000, 1000, n)
    valid = rng.random(n) > 0.2
    ints = {f"i{w}": pa.array(k.astype(f"int{w}"), mask=~valid) for w in (8, 16, 32, 64)}
    uints = {f"u{w}": pa.array(np.abs(k).astype(f"uint{w}")) for w in (8, 16, 32, 64)}
    cols = {
        **ints, **uints,
        "f32": pa.array(k.astype(np.float32) / 3),
        "f64": pa.array(k / 7.0, mask=~valid),
        "half": pa.array(k.astype(np.float16)),
        "b": pa.array(k % 3 == 0),
        "s": pa.array(s.tolist()),
        "ls": pa.array(s.tolist(), pa.large_string()),
        "bin": pa.array([w.encode() for w in s], pa.binary()),
        "fsb": pa.array([int(v).to_bytes(4, "little", signed=True) for v in k],
                        pa.binary(4)),
        "dec": pa.array([decimal.Decimal(int(v)) / 100 for v in k], pa.decimal128(12, 2)),
        "date": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=int(v))
                          for v in k]),
        "ts": pa.array(k * 1_000_000, pa.timestamp("us", tz="UTC")),
        "vec": pa.FixedSizeListArray.from_arrays(
            pa.array(rng.random(n * 4).astype(np.float32)), 4),
        "st": pa.StructArray.from_arrays(
            [pa.array(k), pa.array(s.tolist()),
             pa.StructArray.from_arrays([pa.array(k % 5 == 0)], ["deep"])],
            ["a", "b", "c"]),
        "lst": pa.array([list(range(int(v) % 4)) for v in k], pa.list_(pa.int32())),
        "llst": pa.array([[w] * (int(v) % 3) for v, w in zip(k, s)],
                         pa.large_list(pa.string())),
        "lstruct": pa.array([[{"p": int(v), "q": w}] * (int(v) % 2) for v, w in zip(k, s)]),
        # (one dictionary, without "" (read back as null): pylance refuses appends
        # whose dictionary differs from the one it read)
        "dict": pa.DictionaryArray.from_arrays(
            pa.array(rng.integers(0, len(words) - 1, n).astype(np.int32)),
            pa.array(words[1:])),
    }
    return pa.table(cols)


def test_lancenb_legacy_files_read_as_pylance_legacy_files(tmp_path):
    """The same table written as a legacy dataset by each library (3,200 rows, so
    several 1,024-row batches, of two chunks, then an append; no dictionary column:
    see the next test) reads the same in both libraries: scans, takes across batches and
    filters."""
    t1 = pa.concat_tables([_legacy_table(2500, 1), _legacy_table(700, 2)]).drop(["dict"])
    t2 = _legacy_table(300, 4).drop(["dict"])
    uris = {}
    for name, lib in (("pl", lance), ("nb", lancenb)):
        uri = uris[name] = str(tmp_path / name)
        lib.write_dataset(t1, uri, data_storage_version="legacy")
        lib.write_dataset(t2, uri, mode="append")
    want = lance.dataset(uris["pl"]).to_table()
    rows = [0, 1023, 1024, 2047, 2499, 2500, 3199, 3200, 3499, 1]
    for uri in uris.values():
        for lib in (lance, lancenb):
            ds = lib.dataset(uri)
            assert ds.data_storage_version == "0.1"
            assert ds.to_table().equals(want)
            assert ds.take(rows).equals(want.take(rows))
            assert ds.to_table(filter="i32 > 100", columns=["i32", "s", "st"]).equals(
                lance.dataset(uris["pl"]).to_table(filter="i32 > 100",
                                                   columns=["i32", "s", "st"]))
    assert _file_versions(lance.dataset(uris["nb"])) == [(0, 2)]


def test_legacy_dataset_dictionaries(tmp_path):
    """pylance keeps a legacy dataset's dictionaries in its manifests: lancenb reads
    such datasets and refuses to append dictionary columns (rather than write files
    whose keys pylance would read against another dictionary)."""
    uri = str(tmp_path / "d")
    t = _legacy_table(1500, 5).select(["i32", "dict"])
    lance.write_dataset(t, uri, data_storage_version="legacy")
    assert lancenb.dataset(uri).to_table().equals(lance.dataset(uri).to_table())
    with pytest.raises(NotSupportedError, match="dictionary"):
        lancenb.write_dataset(t, uri, mode="append")
    assert lance.dataset(uri).count_rows() == 1500
    with pytest.raises(NotSupportedError, match="dictionary"):
        lancenb.write_dataset(t, str(tmp_path / "new"), data_storage_version="legacy")


def test_legacy_file_writer_round_trip(tmp_path):
    t = _legacy_table(3000, 3)
    path = str(tmp_path / "f.lance")
    with LanceFileWriter(path, version="legacy") as w:
        w.write_batch(t.slice(0, 1500))
        w.write_batch(t.slice(1500))
    r = LanceFileReader(path)
    assert r.version.label == "0.1"
    got = r.read_all().to_table()
    # a legacy file keeps no validity: a null reads back as the bytes under it, an
    # empty string as null (pylance reads its own files so: see the test above)
    assert got.num_rows == 3000
    for name in ("u8", "u64", "f32", "half", "b", "fsb", "dec", "date", "ts", "vec", "lst"):
        assert got[name].equals(t[name]), name
    assert got["dict"].to_pylist() == [v or None for v in t["dict"].to_pylist()]


def test_legacy_dictionaries_differing_between_batches(tmp_path):
    path = str(tmp_path / "d.lance")
    a = pa.array(["x", "y", "x", None]).dictionary_encode()
    b = pa.array(["z", "x", "w"]).dictionary_encode()
    c = pa.DictionaryArray.from_arrays(pa.array([1, 0], pa.int32()), pa.array(["w", "v"]))
    with LanceFileWriter(path, version="0.1") as w:
        for arr in (a, b, c.slice(1), c):
            w.write_batch(pa.table({"d": arr}))
    got = LanceFileReader(path).read_all().to_table()["d"].combine_chunks()
    # (no validity in 0.1 files: a null key reads back as the first value)
    assert got.to_pylist() == ["x", "y", "x", "x", "z", "x", "w", "w", "v", "w"]
    assert got.dictionary.to_pylist() == ["x", "y", "z", "w", "v"]


@pytest.mark.parametrize("dtype", [pa.map_(pa.string(), pa.int64()),
                                   pa.list_(pa.string(), 2),
                                   pa.dense_union([pa.field("a", pa.int32())])])
def test_legacy_refuses_what_it_cannot_write(tmp_path, dtype):
    with pytest.raises(NotSupportedError, match=r"legacy|0\.1"):
        LanceFileWriter(str(tmp_path / "f.lance"), pa.schema([pa.field("c", dtype)]),
                        version="0.1")
    assert not (tmp_path / "f.lance").exists()


def _record_format(uri: str, label: str) -> None:
    """Rewrite the latest manifest recording ``label`` as its storage version (pylance
    0.16 recorded 0.1 for datasets of 2.0 files)."""
    d = os.path.join(uri, VERSIONS_DIR)
    name = sorted(n for n in os.listdir(d) if n.endswith(".manifest"))[0]
    m = parse_manifest_file(_read(os.path.join(d, name)), name).manifest
    m.data_format.version = label
    m.ClearField("transaction_section")
    with open(os.path.join(d, name), "wb") as f:
        f.write(_frame(m))


def test_wrong_recorded_version_is_corrected_on_commit(tmp_path):
    base = str(tmp_path / "base")
    lance.write_dataset(X.slice(0, 10), base, data_storage_version="2.0")
    _record_format(base, "0.1")
    for name, lib in (("pl", lance), ("nb", lancenb)):
        uri = str(tmp_path / name)
        shutil.copytree(base, uri)
        ds = lib.dataset(uri)
        assert ds.data_storage_version == "0.1", name
        ds.delete("false")  # (a commit that deletes nothing: pylance cannot scan it)
        assert lib.dataset(uri).data_storage_version == "2.0", name
        assert lib.dataset(uri).version == 2, name
    assert lancenb.dataset(str(tmp_path / "nb")).to_table().equals(
        lance.dataset(str(tmp_path / "pl")).to_table())


def test_append_that_would_mix_versions_is_refused(tmp_path):
    # a dataset of 2.0 files recording 0.1: an append writes 0.1 files (as pylance's
    # does), and the commit refuses the mixture; nothing is committed
    uri = str(tmp_path / "mixed")
    lance.write_dataset(X.slice(0, 10), uri, data_storage_version="2.0")
    _record_format(uri, "0.1")
    with pytest.raises(OSError, match="mixture of file versions"):
        lancenb.write_dataset(X.slice(0, 5), uri, mode="append")
    assert lance.dataset(uri).version == 1
    assert lancenb.dataset(uri).count_rows() == 10
