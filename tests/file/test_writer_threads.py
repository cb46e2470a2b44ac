"""One LanceFileWriter shared by many threads, and dataset writes from threads.

Every row says which thread and batch it came from and its place in the batch, so a
read-back (by lancenb and by pylance) can check that each row is whole (its columns
from one batch) and each batch's rows contiguous and in order.
"""

from __future__ import annotations

import gc
import threading

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.file import LanceFileReader, LanceFileWriter

THREADS = 8
BATCHES = 12


def _batch(tid: int, b: int, rng: np.random.Generator) -> pa.RecordBatch:
    n = int(rng.integers(1, 400))
    r = np.arange(n, dtype=np.int64)
    key = tid * 1_000_000 + b * 1_000 + r
    return pa.record_batch({
        "tid": pa.array(np.full(n, tid, np.int64)),
        "batch": pa.array(np.full(n, b, np.int32)),
        "row": pa.array(r),
        "s": pa.array([f"{tid}/{b}/{i}" + "x" * (i % 7) for i in range(n)]),
        "v": pa.array(list(zip(key.tolist(), (key + 1).tolist())), pa.list_(pa.int64(), 2)),
        "l": pa.array([[tid, b] * (i % 3) for i in range(n)], pa.list_(pa.int64())),
    })


def _check_whole(table: pa.Table, expected: dict) -> None:
    """Every row whole, every batch one contiguous run in order, nothing lost."""
    d = table.to_pydict()
    n = table.num_rows
    assert n == sum(expected.values())
    runs = {}
    i = 0
    while i < n:
        tid, b = d["tid"][i], d["batch"][i]
        assert (tid, b) not in runs, f"batch {(tid, b)} split (again at row {i})"
        size = expected[(tid, b)]
        runs[(tid, b)] = i
        for k in range(size):
            j = i + k
            assert (d["tid"][j], d["batch"][j], d["row"][j]) == (tid, b, k), f"row {j}"
            assert d["s"][j] == f"{tid}/{b}/{k}" + "x" * (k % 7), f"row {j}"
            key = tid * 1_000_000 + b * 1_000 + k
            assert d["v"][j] == [key, key + 1], f"row {j}"
            assert d["l"][j] == [tid, b] * (k % 3), f"row {j}"
        i += size
    assert set(runs) == set(expected)
    # each thread's batches in the order that thread wrote them
    for tid in range(THREADS):
        starts = [runs[(tid, b)] for b in range(BATCHES)]
        assert starts == sorted(starts)


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("cache", [None, 4096])
def test_shared_writer_keeps_batches_whole(tmp_path, version, cache):
    path = str(tmp_path / "threads.lance")
    expected = {}
    batches = {}
    for tid in range(THREADS):
        rng = np.random.default_rng(tid)
        for b in range(BATCHES):
            batches[(tid, b)] = _batch(tid, b, rng)
            expected[(tid, b)] = batches[(tid, b)].num_rows
    start = threading.Barrier(THREADS)
    errors = []

    def run(tid: int, w: LanceFileWriter) -> None:
        try:
            start.wait()
            for b in range(BATCHES):
                w.write_batch(batches[(tid, b)])
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    w = LanceFileWriter(path, version=version, data_cache_bytes=cache,
                        schema=batches[(0, 0)].schema)
    threads = [threading.Thread(target=run, args=(t, w)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert w.close() == sum(expected.values())
    _check_whole(LanceFileReader(path).read_all().to_table(), expected)
    _check_whole(lance.file.LanceFileReader(path).read_all().to_table(), expected)


def test_abandoned_writer_leaves_no_file(tmp_path):
    # as pylance: a writer dropped without close() or abort() leaves nothing
    for lib in (lance.file, lancenb.file):
        path = tmp_path / f"{lib.__name__}.lance"
        w = lib.LanceFileWriter(str(path), pa.schema([pa.field("a", pa.int64())]))
        w.write_batch(pa.table({"a": [1, 2, 3]}))
        del w
        gc.collect()
        assert not path.exists(), lib.__name__
    # without a garbage collection: nothing else holds the writer
    path = tmp_path / "no-gc.lance"
    w = LanceFileWriter(str(path), pa.schema([pa.field("a", pa.int64())]))
    w.write_batch(pa.table({"a": [1, 2, 3]}))
    del w
    assert not path.exists()


def test_closed_writer_is_kept_when_dropped(tmp_path):
    path = tmp_path / "kept.lance"
    w = LanceFileWriter(str(path))
    w.write_batch(pa.table({"a": [1, 2, 3]}))
    w.close()
    del w
    gc.collect()
    assert lance.file.LanceFileReader(str(path)).read_all().to_table()["a"].to_pylist() == [1, 2, 3]


def test_dataset_appends_from_threads(tmp_path):
    """Appends (write_dataset and insert) from threads on one dataset: every row
    lands exactly once, no commit lost, and pylance reads the same."""
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(pa.table({"id": pa.array([-1], pa.int64()),
                                    "s": ["seed"]}), uri)
    n_threads, per = 6, 5
    start = threading.Barrier(n_threads)
    errors = []

    def run(tid: int) -> None:
        try:
            ds = lancenb.dataset(uri)
            start.wait()
            for k in range(per):
                ids = np.arange(4, dtype=np.int64) + tid * 1000 + k * 10
                t = pa.table({"id": ids, "s": [f"{tid}/{k}/{i}" for i in range(4)]})
                if (tid + k) % 2:
                    lancenb.write_dataset(t, uri, mode="append")
                else:
                    ds.insert(t)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    want = sorted([-1] + [tid * 1000 + k * 10 + i for tid in range(n_threads)
                          for k in range(per) for i in range(4)])
    for ds in (lancenb.dataset(uri), lance.dataset(uri)):
        t = ds.to_table()
        assert sorted(t["id"].to_pylist()) == want
        for i, s in zip(t["id"].to_pylist(), t["s"].to_pylist()):
            if i >= 0:
                assert s == f"{i // 1000}/{i % 1000 // 10}/{i % 10}"
        assert ds.version == 1 + n_threads * per
        assert len(ds.get_fragments()) == 1 + n_threads * per
