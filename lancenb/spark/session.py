"""An embedded local Spark session set up for lancenb (demo, tests, benchmarks)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

from lancenb.errors import NotSupportedError

__all__ = ["local_session", "java_available"]


def java_available() -> bool:
    """Whether a Java runtime is found (``java`` on PATH or under ``JAVA_HOME``)."""
    home = os.environ.get("JAVA_HOME")
    return bool(shutil.which("java") or (home and os.path.exists(os.path.join(home, "bin",
                                                                              "java"))))


def local_session(master: str = "local[2]", *, app_name: str = "lancenb",
                  pushdown: bool = True, register: bool = True, preload: bool = True,
                  conf: dict | None = None):
    """A ``local[2]`` SparkSession: UI off, UTC, 2 shuffle partitions, Python workers
    running this interpreter (so they import this lancenb), the ``lancenb`` source
    registered, filter pushdown on unless ``pushdown=False``.

    With ``preload`` (the default) Python task workers are forked from
    :mod:`lancenb.spark.daemon`, which imports pyspark's worker and lancenb and loads
    the common kernels once, so each worker starts without doing it again. ``conf``
    entries are set last and win."""
    try:
        from pyspark.sql import SparkSession  # lazy: optional and heavy
    except ImportError as e:
        raise NotSupportedError("lancenb.spark needs pyspark: pip install 'lancenb[spark]'") \
            from e
    if not java_available():
        raise NotSupportedError("Spark needs Java (17 or newer): install a JDK or set "
                                "JAVA_HOME")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    b = (SparkSession.builder.master(master).appName(app_name)
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "2")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.driver.memory", "2g")
         .config("spark.sql.warehouse.dir", tempfile.mkdtemp(prefix="lancenb-spark-wh-"))
         .config("spark.sql.python.filterPushdown.enabled", "true" if pushdown else "false"))
    if preload:
        b = b.config("spark.python.daemon.module", "lancenb.spark.daemon")
    for k, v in (conf or {}).items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if register:
        # deferred: the package imports this module lazily (a cycle at module level)
        from lancenb.spark import register as _register

        _register(spark)
    return spark
