"""The ``lancenb`` Python Data Source on a real local Spark: round trips, modes,
versions, filters with pushdown on and off, empty inputs, failures and concurrency.
The oracles are Spark's own evaluation of the same DataFrame and the data on disk
read back by lancenb's Python API and by pylance."""

from __future__ import annotations

import datetime
import os
import re
import threading

import lance
import pyarrow as pa
import pytest
from _tables import assert_tables_equal

import lancenb

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MIXED = [
    "id",
    "cast(id % 100000 as int) as i32",
    "cast(id % 100 as tinyint) as i8",
    "if(id % 13 = 0, null, cast(id as double) / 7) as d",
    "cast(id % 1000 as float) * 0.25f as f",
    "if(id % 17 = 0, null, concat('name-', cast(id % 997 as string))) as s",
    "id % 3 = 0 as b",
    "date_add(date'2020-01-01', cast(id % 1500 as int)) as dt",
    "timestamp_micros(1700000000000000 + id * 1000) as ts",
    "cast(id % 100000 as decimal(10, 2)) as dec",
    "if(id % 11 = 0, null, array(cast(id % 5 as int), cast(id % 7 as int))) as arr",
    "named_struct('a', id * 2, 'b', cast(id % 3 as string)) as st",
    "array(cast(id as float), cast(id % 3 as float), 0.5f, -1f) as vec",
]


def mixed_df(spark, n: int, *, start: int = 0, parts: int = 2):
    from pyspark.sql import functions as F

    df = spark.range(start, start + n, numPartitions=parts).selectExpr(*MIXED)
    return df.withColumn("vec", F.col("vec").alias("vec", metadata={
        "arrow.fixed-size-list.size": 4}))


def lancenb_read(spark, uri, **options):
    r = spark.read.format("lancenb")
    for k, v in options.items():
        r = r.option(k, v)
    return r.load(uri)


def as_arrow(df, order="id") -> pa.Table:
    t = df.toArrow()
    return t.sort_by(order) if order and t.num_rows else t


def same_values(got: pa.Table, want: pa.Table) -> None:
    """Equal values, ignoring Spark's plan-dependent nullability flags (G13)."""
    assert got.column_names == want.column_names
    assert_tables_equal(got.cast(want.schema), want)


def data_files(uri) -> set[str]:
    d = os.path.join(uri, "data")
    return set(os.listdir(d)) if os.path.isdir(d) else set()


def test_million_row_mixed_round_trip(spark, tmp_path):
    uri = str(tmp_path / "big")
    df = mixed_df(spark, 1_000_000)
    df.write.format("lancenb").mode("append").option("max_rows_per_file", 300_000).save(uri)
    ds = lancenb.dataset(uri)
    assert ds.version == 1 and ds.count_rows() == 1_000_000
    assert len(ds.get_fragments()) >= 4  # 2 tasks, files rolled at 300k rows
    # Spark types that Spark lacks came back as Lance types (vector: fixed-size list)
    vec = ds.schema.field("vec").type
    assert pa.types.is_fixed_size_list(vec) and vec.list_size == 4
    assert vec.value_type == pa.float32()
    assert ds.schema.field("ts").type == pa.timestamp("us", "UTC")
    want = as_arrow(df)
    back = lancenb_read(spark, uri)
    assert back.rdd.getNumPartitions() == len(ds.get_fragments())
    assert dict(back.schema["vec"].metadata)["arrow.fixed-size-list.size"] == 4
    same_values(as_arrow(back), want)
    # the Python API and pylance read the same rows
    mine = ds.to_table().sort_by("id")
    same_values(mine.cast(pa.schema([f.with_type(want.schema.field(f.name).type)
                                     for f in mine.schema])), want)
    theirs = lance.dataset(uri).to_table()
    assert_tables_equal(theirs.sort_by("id"), mine)


def test_append_two_jobs_overwrite_and_time_travel(spark, tmp_path):
    uri = str(tmp_path / "ds")
    mixed_df(spark, 1000).write.format("lancenb").mode("append").save(uri)
    mixed_df(spark, 500, start=1000).write.format("lancenb").mode("append").save(uri)
    snapshot = lancenb_read(spark, uri)  # pinned at version 2
    assert lancenb.dataset(uri).version == 2
    assert snapshot.count() == 1500
    mixed_df(spark, 10, start=5000, parts=1).write.format("lancenb").mode("overwrite").save(uri)
    assert lancenb_read(spark, uri).count() == 10
    assert snapshot.count() == 1500  # a DataFrame is a snapshot (G9)
    v1 = lancenb_read(spark, uri, version=1)
    same_values(as_arrow(v1), as_arrow(mixed_df(spark, 1000)))
    assert lancenb_read(spark, uri, versionAsOf=2).count() == 1500
    # (pylance's rule: the newest version listed strictly before asof, so version 2 is
    # as of the microsecond after its listed time)
    ts = lancenb.dataset(uri).versions()[1]["timestamp"] + datetime.timedelta(microseconds=1)
    assert lancenb_read(spark, uri, asof=ts.isoformat()).count() == 1500
    assert [v["version"] for v in lance.dataset(uri).versions()] == [1, 2, 3]
    # overwrite through the write_mode option too
    mixed_df(spark, 3, parts=1).write.format("lancenb").mode("append") \
        .option("write_mode", "overwrite").save(uri)
    assert lance.dataset(uri).count_rows() == 3


FILTERS = [
    "id >= 900 AND s = 'name-905'",
    "d IS NULL",
    "s IS NOT NULL AND i8 < 3",
    "i32 IN (1, 5, 700, 999)",
    "s LIKE 'name-99%'",
    "s LIKE '%7'",
    "s LIKE '%_1%'",
    "NOT (i8 = 5) AND id < 40",
    "b AND f > 100.5",
    "dt = DATE'2021-03-01'",
    "ts > TIMESTAMP'2023-11-14 22:13:20.5'",
    "id < 10 OR id > 1990",  # an OR: Spark does not push it
    "arr[0] = 3",
]


@pytest.fixture(scope="module")
def filter_data(spark, tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("filters") / "ds")
    df = mixed_df(spark, 2000)
    df.write.format("lancenb").mode("append").option("max_rows_per_file", 500).save(uri)
    lancenb.dataset(uri).delete("id % 10 = 3")
    return uri, df.filter("id % 10 != 3").cache()


def _executed(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


@pytest.mark.parametrize("where", FILTERS)
def test_filters_with_pushdown(spark, filter_data, where):
    uri, oracle = filter_data
    got = lancenb_read(spark, uri).filter(where)
    same_values(as_arrow(got), as_arrow(oracle.filter(where)))


def test_claimed_filters_leave_spark_plan(spark, filter_data):
    uri, _ = filter_data
    q = lancenb_read(spark, uri).filter("id >= 900 AND s = 'name-905'")
    assert not re.search(r"\bFilter\b", _executed(q))
    assert sorted(r.id for r in q.collect()) == [905, 1902]
    q = lancenb_read(spark, uri, pushdown="false").filter("id >= 900")
    assert re.search(r"\bFilter\b", _executed(q))


@pytest.mark.usefixtures("pushdown_off")
def test_filters_with_pushdown_disabled(spark, filter_data):
    """Spark's default setting: reads work with the non-pushdown reader."""
    uri, oracle = filter_data
    for where in FILTERS[:4] + FILTERS[-2:]:
        got = lancenb_read(spark, uri, pushdown="false").filter(where)
        same_values(as_arrow(got), as_arrow(oracle.filter(where)))
    assert lancenb_read(spark, uri, pushdown="false").count() == oracle.count()


def test_partition_knobs(spark, filter_data):
    uri, oracle = filter_data
    want = as_arrow(oracle)
    packed = lancenb_read(spark, uri, fragments_per_partition=3)
    assert packed.rdd.getNumPartitions() == 2
    same_values(as_arrow(packed), want)
    split = lancenb_read(spark, uri, rows_per_partition=200, batch_size=64)
    assert split.rdd.getNumPartitions() == 12  # 4 fragments of 450 live rows, 3 ranges each
    same_values(as_arrow(split), want)
    same_values(as_arrow(split.filter("i8 < 10")), as_arrow(oracle.filter("i8 < 10")))
    cols = lancenb_read(spark, uri, columns="s, id")
    assert cols.columns == ["s", "id"]
    same_values(as_arrow(cols), as_arrow(oracle.select("s", "id")))


def test_empty_dataframes_and_partitions(spark, tmp_path):
    uri = str(tmp_path / "empty")
    empty = mixed_df(spark, 0)
    empty.write.format("lancenb").mode("append").option("write_mode", "create").save(uri)
    ds = lancenb.dataset(uri)
    assert ds.version == 1 and ds.count_rows() == 0 and ds.get_fragments() == []
    assert lance.dataset(uri).count_rows() == 0
    back = lancenb_read(spark, uri)
    assert back.collect() == [] and back.columns == empty.columns
    # a job with empty partitions: 3 rows over 4 tasks
    mixed_df(spark, 3, parts=4).write.format("lancenb").mode("append").save(uri)
    assert len(lancenb.dataset(uri).get_fragments()) == 3
    same_values(as_arrow(lancenb_read(spark, uri)), as_arrow(mixed_df(spark, 3)))
    assert lancenb_read(spark, uri).filter("id > 100").count() == 0
    # an empty append still makes one version, like every write job
    empty.write.format("lancenb").mode("append").save(uri)
    assert lancenb.dataset(uri).version == 3


def test_task_failure_leaves_no_version_and_no_files(spark, tmp_path):
    uri = str(tmp_path / "fail")
    mixed_df(spark, 100).write.format("lancenb").mode("append").save(uri)
    before = data_files(uri)
    with pytest.raises(Exception, match="fails mid-write"):
        mixed_df(spark, 60_000, parts=2).write.format("lancenb").mode("append") \
            .option("max_rows_per_file", 5000).option("_test_fail_partition", 1).save(uri)
    assert lancenb.dataset(uri).version == 1
    assert data_files(uri) == before
    assert not os.path.exists(os.path.join(uri, "_lancenb_spark"))
    assert lance.dataset(uri).count_rows() == 100


def test_commit_failure_aborts(spark, tmp_path):
    uri = str(tmp_path / "cfail")
    mixed_df(spark, 100).write.format("lancenb").mode("append").save(uri)
    before = data_files(uri)
    with pytest.raises(Exception, match="the commit fails"):
        mixed_df(spark, 1000).write.format("lancenb").mode("append") \
            .option("_test_fail_commit", "true").save(uri)
    assert lancenb.dataset(uri).version == 1 and data_files(uri) == before


def test_concurrent_appends_from_two_jobs(spark, tmp_path):
    uri = str(tmp_path / "conc")
    mixed_df(spark, 10).write.format("lancenb").mode("append").save(uri)
    errors = []

    def job(start):
        try:  # threads need the session made active for Python sources (G15)
            spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
            mixed_df(spark, 2000, start=start).write.format("lancenb").mode("append").save(uri)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=job, args=(s,)) for s in (10_000, 20_000)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    ds = lancenb.dataset(uri)
    assert ds.version == 3 and ds.count_rows() == 4010
    ids = lance.dataset(uri).to_table(columns=["id"]).column("id").to_pylist()
    assert sorted(ids) == list(range(10)) + list(range(10_000, 12_000)) + \
        list(range(20_000, 22_000))


def test_bad_input_fails_before_any_task_writes(spark, tmp_path):
    uri = str(tmp_path / "bad")
    with pytest.raises(Exception, match="no Lance dataset"):
        lancenb_read(spark, str(tmp_path / "missing"))
    with pytest.raises(Exception, match="unknown lancenb option 'colums'"):
        lancenb_read(spark, uri, colums="id")
    df = mixed_df(spark, 100)
    with pytest.raises(Exception, match="unknown lancenb option 'max_rows'"):
        df.write.format("lancenb").mode("append").option("max_rows", 5).save(uri)
    assert not os.path.exists(uri)
    with pytest.raises(Exception, match="column .m. .map<string,bigint>.* cannot be stored"):
        spark.range(10).selectExpr("id", "map('a', id) as m").write.format("lancenb") \
            .mode("append").save(uri)
    assert not os.path.exists(uri)
    # day-time intervals are Arrow durations, which lancenb stores (no statistics)
    iv = str(tmp_path / "interval")
    spark.range(3).selectExpr("id", "make_dt_interval(1, 0, 0, id) as i") \
        .write.format("lancenb").mode("append").save(iv)
    assert sorted(r.i.total_seconds() for r in lancenb_read(spark, iv).collect()) == \
        [86400.0, 86401.0, 86402.0]
    df.write.format("lancenb").mode("append").save(uri)
    before = data_files(uri)
    with pytest.raises(Exception, match="column 'i32' is bigint in the DataFrame"):
        df.withColumn("i32", df.id).write.format("lancenb").mode("append").save(uri)
    with pytest.raises(Exception, match="the DataFrame has columns"):
        df.drop("s").write.format("lancenb").mode("append").save(uri)
    with pytest.raises(Exception, match="already exists"):
        df.write.format("lancenb").mode("append").option("write_mode", "create").save(uri)
    with pytest.raises(Exception, match="Overwrite"):
        df.write.format("lancenb").save(uri)  # Spark's default errorifexists (G11)
    with pytest.raises(Exception, match="no version 7"):
        lancenb_read(spark, uri, version=7)
    assert data_files(uri) == before and lancenb.dataset(uri).version == 1


@pytest.mark.parametrize("version", ["legacy", "2.0", "2.2"])
def test_reads_and_writes_other_file_versions(spark, tmp_path, version):
    """Spark reads pylance datasets of 0.1, 2.0 and 2.2 files (filters pushed down),
    and writes 2.0/2.2 datasets that pylance reads."""
    n = 3000
    t = pa.table({"id": pa.array(range(n), pa.int64()),
                  "s": pa.array([f"v{i % 37}" for i in range(n)]),
                  "l": pa.array([[i, i + 1] for i in range(n)], pa.list_(pa.int32()))})
    uri = str(tmp_path / f"in_{version}")
    lance.write_dataset(t, uri, data_storage_version=version, max_rows_per_file=1000)
    got = as_arrow(lancenb_read(spark, uri))
    same_values(got, t)
    got = as_arrow(lancenb_read(spark, uri).where("id >= 2500 and s = 'v3'"))
    same_values(got, lance.dataset(uri).to_table(filter="id >= 2500 and s = 'v3'"))
    if version == "legacy":
        return  # lancenb does not write 0.1
    out = str(tmp_path / f"out_{version}")
    (lancenb_read(spark, uri).write.format("lancenb").mode("overwrite")
     .option("data_storage_version", version).save(out))
    theirs = lance.dataset(out)
    assert theirs.data_storage_version == version
    same_values(theirs.to_table().sort_by("id"), t)


@pytest.mark.parametrize("writer", ["lancenb-2.1", "pylance-2.2"])
def test_blob_columns_read_as_bytes(spark, tmp_path, writer):
    """Blob columns reach Spark as their bytes (scans elsewhere return descriptions),
    for blob v1 and for pylance's 2.2 blob v2 (a value in a sidecar file included)."""
    vals = [b"abc", None, b"", b"x" * 70_000]
    schema = pa.schema([pa.field("id", pa.int64()),
                        pa.field("b", pa.large_binary(),
                                 metadata={"lance-encoding:blob": "true"})])
    t = pa.table({"id": [0, 1, 2, 3], "b": pa.array(vals, pa.large_binary())}, schema=schema)
    uri = str(tmp_path / "blobs")
    lib, version = writer.split("-")
    (lancenb if lib == "lancenb" else lance).write_dataset(t, uri, data_storage_version=version)
    rows = lancenb_read(spark, uri).orderBy("id").collect()
    assert [None if r.b is None else bytes(r.b) for r in rows] == vals


def test_extension_columns_reach_spark_as_their_storage(spark, tmp_path):
    """A uuid column (an Arrow extension type, which the Python API reads back as
    such) reaches Spark as binary, through the data source and ``read_lance``."""
    import uuid

    from lancenb.spark import read_lance

    raw = [uuid.UUID(int=i + 1).bytes for i in range(4)]
    u = pa.ExtensionArray.from_storage(pa.uuid(), pa.array(raw, pa.binary(16)))
    uri = str(tmp_path / "uuids")
    lancenb.write_dataset(pa.table({"id": [0, 1, 2, 3], "u": u}), uri)
    assert lancenb.dataset(uri).schema.field("u").type == pa.uuid()
    for df in (lancenb_read(spark, uri), read_lance(spark, uri)):
        assert [bytes(r.u) for r in df.orderBy("id").collect()] == raw
        assert df.schema["u"].dataType.simpleString() == "binary"
