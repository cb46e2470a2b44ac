"""A Spark Python daemon that loads lancenb once, before it forks task workers.

Spark runs Python tasks in workers forked from one daemon process per executor
(``python -m pyspark.daemon``); the daemon loads little, so every worker it forks
imports pyspark's worker, pyarrow, numba and lancenb on its own and loads the kernels
it calls: about 2 s of CPU per worker before it reads a row. Point Spark at this
module instead and the daemon does that once, so forked workers start with it done::

    SparkSession.builder.config("spark.python.daemon.module", "lancenb.spark.daemon")

:func:`lancenb.spark.local_session` sets it (``preload=False`` to not). On a
cluster set it in the executors' Spark configuration; it needs lancenb installed
where the executors' Python runs (it is already, for the data source).

What the daemon does before its first fork (:func:`preload`): imports
``pyspark.worker``, pyarrow, numba and lancenb's write and read paths, then writes
and reads a small dataset of common column types in a temporary directory, which
loads the kernels those use. lancenb's thread pools and locks are fork-safe
(:mod:`lancenb.io.pools`), so workers start their own. If any of it fails the daemon
serves workers as ``pyspark.daemon`` does: preloading only ever saves time.

Only task workers (``write``, ``read``, ``mapInArrow``, UDFs) come from this daemon:
Spark 4 starts the Python Data Source planner workers (the data source's
``writer()``, ``commit()``, ``schema()``/``reader()``) from ``pyspark.daemon``
whatever this setting says, one daemon per kind.
"""

from __future__ import annotations

import os
import tempfile

__all__ = ["preload", "main", "DAEMON_MODULE"]

DAEMON_MODULE = "lancenb.spark.daemon"
#: in the daemon (and so in every worker it forks): what :func:`preload` returned
PRELOADED: bool | None = None


def preload() -> bool:
    """Import what Spark's task workers use and load lancenb's common kernels;
    True if all of it loaded (a failure is swallowed: the workers then load it)."""
    try:
        import numpy as np
        import pyarrow as pa
        import pyspark.worker  # noqa: F401  (what every forked worker runs)

        import lancenb.spark.datasource  # noqa: F401  (pickled writers/readers name it)
        from lancenb.dataset import dataset as open_dataset
        from lancenb.dataset import write_dataset
        from lancenb.spark.helpers import write_lance  # noqa: F401
        from lancenb.spark.jobs import plan_write, write_task  # noqa: F401

        n = 4096
        rng = np.random.default_rng(0)
        table = pa.table({
            "id": pa.array(np.arange(n, dtype=np.int64)),
            "i": pa.array(rng.integers(0, 1000, n, dtype=np.int32)),
            "x": pa.array(np.where(np.arange(n) % 7 == 0, np.nan, rng.random(n)),
                          from_pandas=True),
            "cat": pa.array([f"c{i % 10}" for i in range(n)]),
            "text": pa.array([f"row {i} " * (i % 5) for i in range(n)]),
            "ts": pa.array(np.arange(n, dtype=np.int64) * 997, pa.timestamp("us", "UTC")),
            "flag": pa.array(np.arange(n) % 3 == 0),
            "vec": pa.FixedSizeListArray.from_arrays(
                pa.array(rng.standard_normal(n * 4).astype(np.float32)), 4),
            "tags": pa.array([[f"t{i % 3}"] * (i % 3) for i in range(n)]),
        })
        with tempfile.TemporaryDirectory(prefix="lancenb-spark-daemon-") as tmp:
            uri = os.path.join(tmp, "preload.lance")
            write_dataset(table, uri)
            open_dataset(uri).to_table()
        return True
    except Exception:  # noqa: BLE001 - preloading is an optimisation only
        return False


def main() -> None:
    """Preload, then run Spark's own daemon loop (``pyspark.daemon.manager``)."""
    global PRELOADED
    PRELOADED = preload()
    from pyspark import daemon

    daemon.manager()


if __name__ == "__main__":
    main()
