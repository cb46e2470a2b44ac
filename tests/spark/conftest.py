"""One embedded ``local[2]`` SparkSession for every Spark test (starting one costs
10-30 s). The tests are skipped only when Java (or pyspark) is absent."""

from __future__ import annotations

import os
import warnings

import pytest

from lancenb.spark.session import java_available

# pyspark 4.3 warns that it does not fully support pandas 3 whenever it checks the
# pandas version (createDataFrame, mapInArrow, toArrow ...); nothing else is ignored
PYSPARK_PANDAS_WARNING = "ignore:PySpark does not yet fully support pandas:FutureWarning"


def _skip_reason() -> str | None:
    if not java_available():
        return "Spark tests need Java"
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "Spark tests need pyspark (pip install 'lancenb[spark]')"
    return None


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    reason = _skip_reason()
    for item in items:
        if not str(item.fspath).startswith(here):
            continue
        item.add_marker(pytest.mark.filterwarnings(PYSPARK_PANDAS_WARNING))
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def spark():
    from lancenb.spark import local_session

    with warnings.catch_warnings():
        # pylance (imported by the interop tests) warns in an at-fork hook, and
        # pyspark forks once here to launch the JVM
        warnings.filterwarnings("ignore", "lance is not fork-safe", UserWarning)
        s = local_session("local[2]", app_name="lancenb-tests",
                          conf={"spark.driver.memory": "1g"})
    yield s
    s.stop()


@pytest.fixture
def pushdown_off(spark):
    """Spark's default: filter pushdown for Python sources disabled."""
    key = "spark.sql.python.filterPushdown.enabled"
    spark.conf.set(key, "false")
    yield
    spark.conf.set(key, "true")
