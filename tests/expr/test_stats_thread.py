"""Page statistics folded in on the statistics thread (lancenb.dataset.write.insert): the data
files are byte-identical to statistics computed on the writing thread, several files in
flight keep their own statistics, and a failure there fails the write with nothing
committed and no file left behind."""

from __future__ import annotations

import hashlib
import importlib
import os

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb

W = importlib.import_module("lancenb.dataset.write.insert")
STATS = importlib.import_module("lancenb.file.statistics")


def _batches():
    rng = np.random.default_rng(5)
    for k in range(6):  # 6 x 20,000 rows: over STATS_THREAD_MIN_ROWS, 3 files of 40,000
        n = 20_000
        yield pa.record_batch({
            "id": np.arange(k * n, (k + 1) * n),
            "x": rng.normal(size=n),
            "s": pa.array([f"v{int(v)}" if v % 11 else None
                           for v in rng.integers(0, 10**6, n)]),
            "ts": pa.array(rng.integers(0, 10**15, n), pa.timestamp("us")),
        })


def _digests(uri: str) -> list[str]:
    ds = lancenb.dataset(uri)
    out = []
    for frag in ds.get_fragments():
        for df in frag.metadata.files:
            with open(os.path.join(uri, "data", df.path), "rb") as f:
                out.append(hashlib.sha256(f.read()).hexdigest())
    return out


def _write(uri: str):
    schema = next(_batches()).schema
    reader = pa.RecordBatchReader.from_batches(schema, _batches())
    return lancenb.write_dataset(reader, uri, max_rows_per_file=40_000)


def test_thread_and_inline_statistics_write_the_same_bytes(tmp_path, monkeypatch):
    _write(str(tmp_path / "threaded"))
    monkeypatch.setattr(W, "STATS_THREAD_MIN_ROWS", 1 << 60)  # every batch inline
    _write(str(tmp_path / "inline"))
    threaded, inline = _digests(str(tmp_path / "threaded")), _digests(str(tmp_path / "inline"))
    assert len(threaded) == 3 and threaded == inline
    ds = lancenb.dataset(str(tmp_path / "threaded"))
    # the statistics serve pruning: a range filter on id reads what it should
    want = lance.dataset(str(tmp_path / "threaded")).to_table(filter="id >= 95000 AND id < 95010")
    assert ds.to_table(filter="id >= 95000 AND id < 95010") == want
    assert want.num_rows == 10


def test_a_failure_on_the_statistics_thread_fails_the_write(tmp_path, monkeypatch):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(pa.table({"id": pa.array([1], pa.int64())}), uri)
    calls = []

    def broken(self, batch):  # an injected fault, after some batches went through
        calls.append(batch.num_rows)
        if len(calls) == 3:
            raise OSError("injected statistics fault")
        return real(self, batch)

    real = STATS.StatsCollector.add
    monkeypatch.setattr(STATS.StatsCollector, "add", broken)
    schema = pa.schema([("id", pa.int64())])
    batches = (pa.record_batch({"id": np.arange(k * 20_000, (k + 1) * 20_000)})
               for k in range(6))
    with pytest.raises(OSError, match="injected statistics fault"):
        lancenb.write_dataset(pa.RecordBatchReader.from_batches(schema, batches), uri,
                              mode="append", max_rows_per_file=40_000)
    ds = lancenb.dataset(uri)
    assert ds.version == 1 and ds.count_rows() == 1
    assert sorted(os.listdir(os.path.join(uri, "data"))) == sorted(
        df.path for f in ds.get_fragments() for df in f.metadata.files)
