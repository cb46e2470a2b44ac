"""Scans without a filter read two fragments at once (``read_several`` on the scan
pool): the same rows, batches and errors as one at a time, with offset/limit,
deletions and row ids, on datasets written by lancenb and by pylance."""

from __future__ import annotations

import os
import threading

import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.dataset.read import readahead
from lancenb.dataset.read.readahead import read_several
from lancenb.errors import LanceError

SCANS = [{}, {"offset": 3500}, {"limit": 4100, "offset": 700}, {"limit": 10},
         {"with_row_id": True}, {"columns": ["s"]}, {"batch_size": 999}]


def _table(n: int = 10_000) -> pa.Table:
    rng = np.random.default_rng(4)
    return pa.table({"a": np.arange(n), "s": [f"v{i % 7}" * (i % 5) for i in range(n)],
                     "v": pa.FixedSizeListArray.from_arrays(
                         pa.array(rng.random(n * 8, dtype=np.float32)), 8)})


@pytest.fixture(scope="module", params=["lancenb", "pylance"])
def ds(request, tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("scanfrags") / "ds")
    if request.param == "pylance":
        lance = pytest.importorskip("lance")
        lance.write_dataset(_table(), uri, max_rows_per_file=1500)
    else:
        lancenb.write_dataset(_table(), uri, max_rows_per_file=1500)
    out = lancenb.dataset(uri)
    out.delete("a % 11 = 3")
    return lancenb.dataset(uri)


def _scan(ds, at_once: int, **kw):
    sc = ds.scanner(**kw)
    sc.fragment_readahead = at_once
    return list(sc.to_batches())


@pytest.mark.parametrize("kw", SCANS)
def test_same_batches_one_or_several_at_once(ds, kw):
    want = _scan(ds, 1, **kw)
    for at_once in (2, 3):
        got = _scan(ds, at_once, **kw)
        assert [b.num_rows for b in got] == [b.num_rows for b in want]
        assert pa.Table.from_batches(got).equals(pa.Table.from_batches(want))
    assert ds.to_table(**kw).equals(pa.Table.from_batches(want, schema=want[0].schema))


def test_same_rows_as_pylance(ds):
    lance = pytest.importorskip("lance")
    theirs = lance.dataset(ds.uri)
    for kw in SCANS:
        if "batch_size" in kw:
            continue
        assert ds.to_table(**kw).equals(theirs.to_table(**kw)), kw


def test_errors_come_in_scan_order(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(pa.table({"a": np.arange(100)}), uri, max_rows_per_file=25)
    ds = lancenb.dataset(uri)
    path = ds.get_fragments()[2].data_files()[0].path
    os.remove(os.path.join(uri, "data", path))
    seen = []
    with pytest.raises(LanceError):
        for b in _scan_iter(lancenb.dataset(uri), 3):
            seen.append(b.num_rows)
    assert sum(seen) == 50  # the first two fragments, then the third's error


def _scan_iter(ds, at_once):
    sc = ds.scanner(batch_size=10)
    sc.fragment_readahead = at_once
    return sc.to_batches()


def test_read_several_order_errors_and_bound(monkeypatch):
    assert list(read_several(lambda x: x * 2, range(20), 3)) == list(range(0, 40, 2))
    assert list(read_several(lambda x: x, [], 3)) == []

    def bad(x):
        if x == 5:
            raise ValueError("five")
        return x

    got = []
    with pytest.raises(ValueError, match="five"):
        for x in read_several(bad, range(10), 4):
            got.append(x)
    assert got == [0, 1, 2, 3, 4]

    # reads after the first are held to READ_SEVERAL_BYTES: at most 1 + 2 at once
    monkeypatch.setattr(readahead, "READ_SEVERAL_BYTES", 20)
    running, peak, lock = [0], [0], threading.Lock()
    gate = threading.Event()

    def slow(x):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        gate.wait(0.02)
        with lock:
            running[0] -= 1
        return x

    assert list(read_several(slow, range(12), 8, size=lambda x: 10)) == list(range(12))
    assert peak[0] <= 3


def test_closing_early_cancels_the_rest():
    started = []

    def read(x):
        started.append(x)
        return x

    it = read_several(read, range(1000), 2)
    assert next(it) == 0
    it.close()
    assert len(started) <= 3


def test_a_scan_inside_a_read_runs_inline():
    # each outer read starts a scan of its own (as a read that scanned would):
    # with every worker of the pool waiting on inner reads queued behind them, the
    # inner scans must run on the worker itself
    def inner(x):
        return sum(read_several(lambda y: y, range(x, x + 3), 4))

    assert list(read_several(inner, range(8), 8)) == [3 * x + 3 for x in range(8)]


def test_fixed_width_scans_read_one_fragment_at_a_time(ds):
    # vectors and numbers are read straight into their output (memory-bound): one at
    # a time; a string column decodes, so two at once when there are two cores
    assert ds.scanner(columns=["a", "v"])._fragments_at_once() == 1
    want = min(2, os.cpu_count() or 1)
    assert ds.scanner(columns=["a", "s"])._fragments_at_once() == want
    sc = ds.scanner(columns=["v"])
    sc.fragment_readahead = 3
    assert sc._fragments_at_once() == 3
