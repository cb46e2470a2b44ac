"""Spark integration: the ``lancenb`` Python Data Source, helpers and batch UDFs.

pyspark is imported only when something here is used (``pip install lancenb[spark]``)::

    import lancenb.spark
    spark = lancenb.spark.local_session()          # or your own SparkSession
    lancenb.spark.register(spark)                  # format("lancenb")
    df.write.format("lancenb").mode("append").save(uri)
    spark.read.format("lancenb").load(uri)

    lancenb.spark.write_lance(df, uri, mode="append")       # mapInArrow, commit here
    lancenb.spark.read_lance(spark, uri, columns=["id"], filter="id > 5")

See ``docs/spark.md``.
"""

from __future__ import annotations

__all__ = ["register", "local_session", "read_lance", "write_lance", "batch_encoding_stats",
           "encoding_stats", "FORMAT"]

FORMAT = "lancenb"
_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark, *, alias: str | None = None):
    """Register the ``lancenb`` data source (and ``alias``, e.g. ``"lance"`` on
    clusters without lance-spark) with ``spark``; returns the class registered.

    The ``pushdown`` option then defaults to the session's
    ``spark.sql.python.filterPushdown.enabled``; call again after changing it.
    Registering twice replaces the earlier registration.
    """
    from lancenb.spark.datasource import LanceNbDataSource  # lazy: it loads pyspark

    on = str(spark.conf.get(_PUSHDOWN_CONF, "false")).lower() == "true"
    names = [FORMAT] + ([alias] if alias and alias != FORMAT else [])
    cls = None
    for n in names:
        # a class made here is pickled by value, so its defaults travel with it
        cls = type("LanceNbDataSource", (LanceNbDataSource,),
                   {"pushdown_default": on, "name": classmethod(lambda c, n=n: n),
                    "__module__": __name__})
        spark.dataSource.register(cls)
    return cls


def __getattr__(name):
    # lazy attributes: ``import lancenb.spark`` loads neither pyspark nor the dataset layer
    if name in ("read_lance", "write_lance"):
        from lancenb.spark import helpers

        return getattr(helpers, name)
    if name in ("batch_encoding_stats", "encoding_stats"):
        from lancenb.spark import udf

        return getattr(udf, name)
    if name == "local_session":
        from lancenb.spark.session import local_session

        return local_session
    raise AttributeError(f"module 'lancenb.spark' has no attribute {name!r}")
