"""A file whose column offset table is larger than the reader's first read of its tail
(16 bytes a column: a file of more than ~4,000 columns with the default 64 KiB tail)
opens: the reader reads the rest of the tables before parsing them (it used to call such
a file corrupt). The tail size is lowered here so a few hundred columns exercise it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.file import LanceFileReader, backend

lance = pytest.importorskip("lance")


@pytest.mark.parametrize("writer", ["pylance", "lancenb"])
def test_offset_table_beyond_the_tail_read(tmp_path, monkeypatch, writer):
    t = pa.table({f"c{i}": np.arange(50, dtype=np.int64) * i for i in range(300)})
    uri = str(tmp_path / "ds")
    (lance if writer == "pylance" else lancenb).write_dataset(t, uri)
    path = next((tmp_path / "ds" / "data").glob("*.lance"))
    assert 16 * 300 < path.stat().st_size - 2048  # the table starts before the tail
    monkeypatch.setattr(backend, "TAIL_READ_BYTES", 2048)
    r = LanceFileReader(str(path))
    assert r.read_all().to_table().equals(t)
    assert lancenb.dataset(uri).to_table(columns=["c0", "c299"]).equals(
        t.select(["c0", "c299"]))
