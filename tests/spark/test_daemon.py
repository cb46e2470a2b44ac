"""``lancenb.spark.daemon``: the session's Python task workers are forked from the
preloading daemon and start with lancenb's write path already imported (every other
Spark test's data source jobs run through such workers too)."""

from __future__ import annotations

import sys

import pytest


def _worker_facts(batches):
    # runs in a Spark Python worker: which daemon forked it, what it had loaded
    import os
    import sys

    import pyarrow as pa

    loaded = "lancenb.spark.jobs" in sys.modules and "lancenb.dataset" in sys.modules
    main = sys.modules["__main__"]
    with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:
        parent = f.read().replace(b"\0", b" ").decode()
    n = sum(b.num_rows for b in batches)
    yield pa.record_batch([pa.array([n]), pa.array([loaded]),
                           pa.array([getattr(main, "PRELOADED", None) is True]),
                           pa.array([parent])], names=["n", "loaded", "preloaded", "parent"])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_task_workers_come_preloaded_from_the_lancenb_daemon(spark):
    assert spark.conf.get("spark.python.daemon.module") == "lancenb.spark.daemon"
    rows = spark.range(0, 1000, numPartitions=2).mapInArrow(
        _worker_facts, "n long, loaded boolean, preloaded boolean, parent string").collect()
    assert sum(r["n"] for r in rows) == 1000
    for r in rows:
        assert "-m lancenb.spark.daemon pyspark.worker" in r["parent"], r["parent"]
        assert r["preloaded"] and r["loaded"], r
