"""Dataset-level interop with pylance, both directions, on real directories.

Every operation lancenb commits must leave a dataset pylance reads exactly (and
the reverse), at every version, including mixed histories.
"""

from __future__ import annotations

import os

import lance
import numpy as np
import pyarrow as pa
import pytest
from _tables import assert_tables_equal

import lancenb

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def table(n: int, start: int = 0, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(start, start + n, dtype=np.int64)
    f = rng.standard_normal(n)
    s = [None if i % 17 == 0 else f"name-{i % 97}" for i in ids]
    return pa.table({"id": ids, "x": pa.array(f, mask=(ids % 11 == 0)),
                     "s": pa.array(s, pa.string()),
                     "ts": pa.array(ids * 1000, pa.timestamp("us"))})


def same_version_both(uri: str, version: int | None = None) -> None:
    """pylance and lancenb see the same rows, row count and versions."""
    a = lance.dataset(uri, version=version)
    b = lancenb.dataset(uri, version=version)
    assert a.version == b.version
    assert a.count_rows() == b.count_rows()
    assert_tables_equal(b.to_table(), a.to_table())
    assert [v["version"] for v in a.versions()] == [v["version"] for v in b.versions()]
    assert [v["metadata"] for v in a.versions()] == [v["metadata"] for v in b.versions()]
    n = a.count_rows()
    if n:
        idx = sorted({0, n - 1, n // 2, n // 3})
        assert_tables_equal(b.take(idx), a.take(idx))
        assert_tables_equal(b.to_table(filter="id % 3 = 0"), a.to_table(filter="id % 3 = 0"))
        assert b.count_rows("x > 0") == a.count_rows("x > 0")
        assert_tables_equal(b.to_table(columns=["s", "id"], with_row_id=True, limit=50,
                                       offset=7),
                            a.to_table(columns=["s", "id"], with_row_id=True, limit=50,
                                       offset=7))


@pytest.mark.parametrize("v2_paths", [True, False])
@pytest.mark.parametrize("fmt", ["2.1", "2.2"])
def test_lancenb_history_read_by_pylance(tmp_path, v2_paths, fmt):
    uri = str(tmp_path / "ds")
    ds = lancenb.write_dataset(table(3000), uri, max_rows_per_file=1000,
                               enable_v2_manifest_paths=v2_paths, data_storage_version=fmt)
    assert ds.version == 1 and len(ds.get_fragments()) == 3
    same_version_both(uri)
    lancenb.write_dataset(table(500, 3000), uri, mode="append")
    same_version_both(uri)
    ds = lancenb.dataset(uri)
    ds.delete("id % 5 = 0 OR s IS NULL")  # .arrow deletion files
    same_version_both(uri)
    ds.delete("id >= 1000 AND id < 2000")  # empties fragment 1 entirely
    assert len(ds.get_fragments()) == 3
    same_version_both(uri)
    ds.tags.create("before-overwrite", ds.version)
    lancenb.write_dataset(table(200, 10_000), uri, mode="overwrite")
    same_version_both(uri)
    for v in range(1, lancenb.dataset(uri).version + 1):
        same_version_both(uri, v)
    pl = lance.dataset(uri)
    assert pl.tags.list()["before-overwrite"]["version"] == 4
    assert_tables_equal(lance.dataset(uri, version="before-overwrite").to_table(),
                        lancenb.dataset(uri, version="before-overwrite").to_table())
    old = lancenb.dataset(uri, version=2)
    old.restore()
    assert old.version == 6
    same_version_both(uri)
    assert lance.dataset(uri).count_rows() == 3500
    names = os.listdir(os.path.join(uri, "_versions"))
    if v2_paths:
        assert "18446744073709551614.manifest" in names
    else:
        assert "1.manifest" in names and "6.manifest" in names


@pytest.mark.parametrize("fmt", ["2.1", "2.2"])
def test_deletes_match_pylance(tmp_path, fmt):
    # the same deletes by both libraries on the same data (two files of several
    # statistics pages, small appended fragments): the same rows stay, pylance reads
    # lancenb's result exactly, and fragments emptied by a delete go in both
    data = table(150_000)
    small = [table(10, start=200_000 + 10 * k, seed=k) for k in range(3)]
    sets = {}
    for name, lib in (("ours", lancenb), ("theirs", lance)):
        uri = str(tmp_path / name)
        lib.write_dataset(data, uri, max_rows_per_file=100_000, data_storage_version=fmt)
        for t in small:
            lib.write_dataset(t, uri, mode="append")
        sets[name] = uri
    for pred in ["id % 100 = 3",                    # every fragment, small ones too
                 "id >= 70000 AND id < 70500",      # statistics rule out most pages
                 "x > 1.5",                         # nulls in x are not deleted
                 "s = 'name-5' OR id % 100 = 4",    # again where rows are deleted already
                 "id >= 200010 AND id < 200020",    # a whole small fragment
                 "id < 0"]:                         # nothing
        lancenb.dataset(sets["ours"]).delete(pred)
        lance.dataset(sets["theirs"]).delete(pred)
        ours, theirs = lancenb.dataset(sets["ours"]), lance.dataset(sets["theirs"])
        assert ours.count_rows() == theirs.count_rows(), pred
        assert len(ours.get_fragments()) == len(theirs.get_fragments()), pred
        assert_tables_equal(ours.to_table(), theirs.to_table())
        assert_tables_equal(lance.dataset(sets["ours"]).to_table(), theirs.to_table())


def test_bitmap_deletion_files(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(table(12_000), uri)
    ds = lancenb.dataset(uri)
    ds.delete("id < 6000")  # > 5000 rows in one fragment: roaring .bin
    files = os.listdir(os.path.join(uri, "_deletions"))
    assert len(files) == 1 and files[0].endswith(".bin")
    same_version_both(uri)
    ds.delete("id >= 11000")  # merged with the existing deletions: still .bin
    same_version_both(uri)
    assert lance.dataset(uri).count_rows() == 5000


def test_pylance_history_read_by_lancenb(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(table(2000), uri, max_rows_per_file=700)
    lance.write_dataset(table(300, 2000), uri, mode="append")
    pl = lance.dataset(uri)
    pl.delete("id % 7 = 1")
    pl.delete("id < 6500 AND id >= 0 AND id % 2 = 0 AND id > 1990")
    pl.tags.create("t", 2)
    lance.write_dataset(table(12_000, 5000), uri, mode="append")
    lance.dataset(uri).delete("id >= 5000 AND id < 11000")  # .bin
    lance.write_dataset(table(10, 99), uri, mode="overwrite")
    lance.dataset(uri, version=3).restore()
    for v in range(1, lance.dataset(uri).version + 1):
        same_version_both(uri, v)
    assert lancenb.dataset(uri, version="t").count_rows() == 2300
    assert lancenb.dataset(uri).tags.list()["t"]["version"] == 2


def test_pylance_v1_names_and_add_columns(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(table(1000), uri, enable_v2_manifest_paths=False,
                        max_rows_per_file=400)
    pl = lance.dataset(uri)
    pl.add_columns({"y": "id * 2"})
    pl.drop_columns(["x"])
    assert "1.manifest" in os.listdir(os.path.join(uri, "_versions"))
    ds = lancenb.dataset(uri)
    assert len(ds.get_fragments()[0].data_files()) == 2
    for v in (1, 2, 3):
        same_version_both(uri, v) if v == 1 else None
        assert_tables_equal(lancenb.dataset(uri, version=v).to_table(),
                            lance.dataset(uri, version=v).to_table())
    got = lancenb.dataset(uri).to_table(columns=["y", "id"], filter="y > 100")
    assert_tables_equal(got, lance.dataset(uri).to_table(columns=["y", "id"], filter="y > 100"))
    # lancenb appends to a V1-named dataset with V1 names, and a file for the new column
    lancenb.write_dataset(lancenb.dataset(uri).to_table().slice(0, 10), uri, mode="append")
    assert "4.manifest" in os.listdir(os.path.join(uri, "_versions"))
    assert_tables_equal(lancenb.dataset(uri).to_table(), lance.dataset(uri).to_table())


def test_stable_row_ids_read(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(table(1000), uri, enable_stable_row_ids=True, max_rows_per_file=300)
    lance.write_dataset(table(10, 1000), uri, mode="append")
    lance.dataset(uri).delete("id % 4 = 0")
    a = lance.dataset(uri).to_table(with_row_id=True, with_row_address=True)
    b = lancenb.dataset(uri).to_table(with_row_id=True, with_row_address=True)
    assert_tables_equal(b, a)
    assert lancenb.dataset(uri).stable_row_ids
    # lancenb appends continue pylance's row ids
    lancenb.write_dataset(table(5, 2000), uri, mode="append")
    t = lance.dataset(uri).to_table(with_row_id=True)
    assert t["_rowid"].to_pylist()[-5:] == list(range(1010, 1015))
    assert_tables_equal(lancenb.dataset(uri).to_table(with_row_id=True), t)


def test_mixed_histories(tmp_path):
    uri = str(tmp_path / "a")
    lancenb.write_dataset(table(100), uri)
    lancenb.write_dataset(table(100, 100), uri, mode="append")
    lance.dataset(uri).delete("id % 3 = 0")
    lancenb.write_dataset(table(100, 200), uri, mode="append")
    lancenb.dataset(uri).delete("id % 3 = 1")  # rewrites pylance's deletion files
    same_version_both(uri)
    assert lance.dataset(uri).count_rows() == 133  # id%3==2, plus id%3==0 of the last 100

    uri = str(tmp_path / "b")
    lance.write_dataset(table(100), uri)
    lancenb.write_dataset(table(100, 100), uri, mode="append")
    lancenb.dataset(uri).delete("id % 3 = 0")
    lance.write_dataset(table(100, 200), uri, mode="append")
    lance.dataset(uri).delete("id % 3 = 1")
    same_version_both(uri)
    lancenb.write_dataset(table(5, 900), uri, mode="append")
    same_version_both(uri)


def test_pandas_input(tmp_path):
    pytest.importorskip("pandas")  # no dependency of lancenb (make test-oldest has none)
    t = table(250)
    uri = str(tmp_path / "p")
    lancenb.write_dataset(t.to_pandas(), uri)
    lance.write_dataset(t.to_pandas(), str(tmp_path / "p_ref"))
    assert_tables_equal(lance.dataset(uri).to_table(),
                        lance.dataset(str(tmp_path / "p_ref")).to_table())


def test_reader_inputs(tmp_path):
    t = table(250)
    uri = str(tmp_path / "r")
    reader = pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=64))
    lancenb.write_dataset(reader, uri, max_rows_per_file=100)
    assert len(lance.dataset(uri).get_fragments()) == 3
    assert_tables_equal(lance.dataset(uri).to_table(), t)
    uri = str(tmp_path / "i")
    lancenb.write_dataset(iter(t.to_batches(max_chunksize=100)), uri)
    assert_tables_equal(lance.dataset(uri).to_table(), t)


def test_empty_dataset(tmp_path):
    uri = str(tmp_path / "e")
    schema = table(1).schema
    ds = lancenb.write_dataset(schema.empty_table(), uri)
    assert ds.count_rows() == 0 and ds.get_fragments() == []
    assert lance.dataset(uri).count_rows() == 0
    assert lance.dataset(uri).schema == schema
    lancenb.write_dataset(table(3), uri, mode="append")
    same_version_both(uri)


def test_asof_picks_the_version_pylance_picks(tmp_path):
    """At each version's listed timestamp and a microsecond either side, both pick the
    same version: the newest listed strictly before ``asof``, with pylance's float
    rounding of the listed nanoseconds (which shows in about one timestamp in ten, so
    four histories are drawn)."""
    import datetime

    one_us = datetime.timedelta(microseconds=1)
    for n in range(4):
        uri = str(tmp_path / f"ds{n}")
        for i in range(3):
            lance.write_dataset(pa.table({"a": [i]}), uri, mode="create" if i == 0 else "append")
        lancenb.write_dataset(pa.table({"a": [3]}), uri, mode="append")

        def picked(lib, ts, uri=uri):
            try:
                return lib.dataset(uri, asof=ts).version
            except (ValueError, lancenb.errors.DatasetNotFoundError):
                return None  # before the first version: both refuse

        for v in lance.dataset(uri).versions():
            for ts in (v["timestamp"] - one_us, v["timestamp"], v["timestamp"] + one_us):
                assert picked(lancenb, ts) == picked(lance, ts), ts
    assert picked(lancenb, datetime.datetime(2000, 1, 1)) is None


@pytest.mark.parametrize("ns", [1795625064591999924, 1795625062900095028, 1795625062900095000,
                                1795625062900095999, 1_000_000_000_000_000_000, 0, 999])
def test_listed_times_are_pylances(ns):
    """The listed time asof is compared with is pylance's conversion of the manifest's
    nanoseconds, float rounding included (the first value is listed a microsecond up)."""
    import datetime

    from lance.dataset import _convert_version_timestamp

    from lancenb._proto import table_pb2
    from lancenb.table.versions import listed_micros, manifest_time

    m = table_pb2.Manifest()
    m.timestamp.seconds, m.timestamp.nanos = divmod(ns, 1_000_000_000)
    theirs = _convert_version_timestamp({"timestamp": ns})["timestamp"]
    assert manifest_time(m, "m") == theirs
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    assert listed_micros(m, "m") == (theirs.astimezone() - epoch) // datetime.timedelta(
        microseconds=1)
