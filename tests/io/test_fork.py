"""lancenb keeps working in a forked child after the parent read or wrote (its thread
pools are per process: see ``lancenb/io/pools.py``). A hang fails the test after a
timeout instead of hanging the suite."""

from __future__ import annotations

import multiprocessing as mp
import os
import sys

import numpy as np
import pyarrow as pa
import pytest

import lancenb

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin",
                       reason="needs the fork start method"),
    # pylance (imported by other tests in the session) warns in its own at-fork hook
    pytest.mark.filterwarnings("ignore:lance is not fork-safe:UserWarning"),
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
]

ROWS = 30_000  # above the thresholds where reads decode columns on the pool


def table(lo, n):
    rng = np.random.default_rng(lo)
    return pa.table({"id": pa.array(np.arange(lo, lo + n), pa.int64()),
                     "x": pa.array(rng.standard_normal(n)),
                     "s": pa.array([f"v{i % 97}" for i in range(lo, lo + n)])})


def _child(uri, conn):
    try:
        ds = lancenb.dataset(uri)
        got = ds.to_table()
        lancenb.write_dataset(table(10 * ROWS, 1000), uri, mode="append")
        conn.send(("ok", got.num_rows, int(sum(got["id"].to_pylist()) % 1_000_003)))
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        conn.send(("error", repr(e), 0))
    finally:
        conn.close()


@pytest.mark.parametrize("before", ["read", "write"])
def test_fork_after_io(tmp_path, before):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(table(0, ROWS), uri, max_rows_per_file=ROWS // 3)
    if before == "read":
        assert lancenb.dataset(uri).to_table().num_rows == ROWS  # starts the read pools
    else:
        lancenb.write_dataset(table(ROWS, ROWS), uri, mode="append")  # the write pool
    rows = lancenb.dataset(uri).count_rows()
    want_sum = int(sum(lancenb.dataset(uri).to_table()["id"].to_pylist()) % 1_000_003)

    ctx = mp.get_context("fork")
    parent_end, child_end = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(uri, child_end))
    p.start()
    child_end.close()
    try:
        assert parent_end.poll(60), "the forked child hung reading/writing the dataset"
        status, n, s = parent_end.recv()
    finally:
        p.join(10)
        if p.is_alive():
            p.kill()
            p.join()
    assert status == "ok", n
    assert (n, s) == (rows, want_sum)
    assert p.exitcode == 0
    # the parent sees the child's append and can still read and write itself
    ds = lancenb.dataset(uri)
    assert ds.count_rows() == rows + 1000
    assert sorted(ds.to_table(filter=f"id >= {10 * ROWS}")["id"].to_pylist()) == \
        list(range(10 * ROWS, 10 * ROWS + 1000))
    lancenb.write_dataset(table(20 * ROWS, 10), uri, mode="append")
    assert lancenb.dataset(uri).count_rows() == rows + 1010
