"""The ``lancenb`` data source writing and reading a dataset on an S3 API (moto's
server, ``tests/_s3server.py``): the storage options reach the driver and every
Python worker as ``storage_options.*`` data source options. Three Spark jobs (create,
append, read) keep it cheap; versions are checked with lancenb."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lancenb

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def s3():
    pytest.importorskip("moto.server", reason="the S3 tests need moto[server] (dev extras)")
    pytest.importorskip("s3fs", reason="the S3 tests need s3fs (dev extras)")
    import _s3server

    server = _s3server.start()
    try:
        yield server
    finally:
        server.stop()


def test_spark_write_and_read_on_s3(spark, s3):
    from lancenb.spark import register

    register(spark)
    uri = s3.uri()
    # pylance's option names: one dict serves lancenb, pylance and Spark
    opts = {f"storage_options.{k}": v for k, v in s3.pylance_options.items()}
    df = spark.range(0, 500, numPartitions=2).selectExpr("id", "cast(id % 7 as string) as s")
    df.write.format("lancenb").options(**opts).mode("overwrite").save(uri)
    spark.range(500, 600, numPartitions=2).selectExpr("id", "cast(id % 7 as string) as s") \
        .write.format("lancenb").options(**opts).mode("append").save(uri)

    # one read job: every row, its values checked here
    got = spark.read.format("lancenb").options(**opts).load(uri).collect()
    assert sorted((r.id, r.s) for r in got) == [(i, str(i % 7)) for i in range(600)]
    ds = lancenb.dataset(uri, storage_options=s3.lancenb_options)
    assert ds.version == 2 and ds.count_rows() == 600
    assert lancenb.dataset(uri, version=1, storage_options=s3.lancenb_options).count_rows() \
        == 500
    t = ds.to_table().sort_by("id")
    assert t["id"].to_pylist() == list(range(600))
    assert t.schema.field("s").type == pa.string()
