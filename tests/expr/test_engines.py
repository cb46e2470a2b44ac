"""DuckDB and Polars query lancenb datasets through the pyarrow Dataset protocol,
with projection and filters pushed down into lancenb's scanner."""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancenb
from lancenb.dataset import LanceDataset


class RecordingDataset(LanceDataset):
    """A real lancenb dataset that remembers what each engine asked its scanner for."""

    def __init__(self, uri):
        super().__init__(uri)
        self.requests = []

    def scanner(self, columns=None, filter=None, *args, **kwargs):
        self.requests.append((None if columns is None else list(columns), filter))
        return super().scanner(columns, filter, *args, **kwargs)


@pytest.fixture
def uri(tmp_path):
    n = 5000
    ids = np.arange(n, dtype=np.int64)
    t = pa.table({"id": ids, "grp": pa.array([f"g{i % 7}" for i in ids]),
                  "val": pa.array(np.sin(ids), mask=ids % 10 == 0),
                  "unused": pa.array(ids * 3)})
    u = str(tmp_path / "ds")
    lancenb.write_dataset(t, u, max_rows_per_file=1500)
    lancenb.dataset(u).delete("id % 100 = 1")
    return u


def _expected(uri):
    t = lancenb.dataset(uri).to_table()
    return t.filter(pc.and_(pc.greater(t["id"], 1000), pc.equal(t["grp"], "g3")))


def test_duckdb(uri):
    ds = RecordingDataset(uri)
    got = duckdb.sql("SELECT id, val FROM ds WHERE id > 1000 AND grp = 'g3' ORDER BY id").arrow()
    if isinstance(got, pa.RecordBatchReader):
        got = got.read_all()
    want = _expected(uri).select(["id", "val"])
    assert got["id"].to_pylist() == want["id"].to_pylist()
    assert got["val"].to_pylist() == want["val"].to_pylist()
    cols, flt = ds.requests[-1]
    assert cols is not None and "unused" not in cols  # projection pushed down
    assert flt is not None and "id" in str(flt)  # filter pushed down
    # aggregates see deleted rows removed
    ((count,),) = duckdb.sql("SELECT count(*) FROM ds").fetchall()
    assert count == 5000 - 50


def test_polars(uri):
    ds = RecordingDataset(uri)
    lf = pl.scan_pyarrow_dataset(ds)
    out = (lf.filter((pl.col("id") > 1000) & (pl.col("grp") == "g3"))
           .select(["id", "val"]).sort("id").collect())
    want = _expected(uri)
    assert out["id"].to_list() == want["id"].to_pylist()
    assert out["val"].to_list() == want["val"].to_pylist()
    cols, flt = ds.requests[-1]
    assert flt is not None and "id" in str(flt)  # predicate pushed down
    assert cols is None or "unused" not in cols
    assert pl.from_arrow(lancenb.dataset(uri).to_table()).height == 4950


def test_arrow_c_stream(uri):
    ds = lancenb.dataset(uri)
    reader = pa.RecordBatchReader.from_stream(ds)
    assert reader.read_all().num_rows == 4950


def test_unsupported_pyarrow_methods_raise(uri):
    ds = lancenb.dataset(uri)
    with pytest.raises(lancenb.NotSupportedError):
        ds.join(ds, "id")
    with pytest.raises(lancenb.NotSupportedError):
        ds.sort_by("id")
