"""Spark reads pylance-written datasets exactly (types Spark lacks included, and
written back unchanged), and the mapInArrow helpers and batch encoding statistics."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest
from _tables import assert_tables_equal

import lancenb
import lancenb.spark as ls
from lancenb.spark.types import spark_arrow_type

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def odd_types(n: int) -> pa.Table:
    rng = np.random.default_rng(3)
    ids = np.arange(n, dtype=np.int64)
    return pa.table({
        "id": ids,
        "u8": pa.array(rng.integers(0, 256, n), pa.uint8()),
        "u32": pa.array(rng.integers(0, 2**32, n, dtype=np.uint64), pa.uint32()),
        "u64": pa.array(rng.integers(0, 2**64 - 1, n, dtype=np.uint64), pa.uint64()),
        "big": pa.array([f"text-{i}" * (i % 4) for i in ids], pa.large_string()),
        "ts_ns": pa.array(ids * 1000, pa.timestamp("ns", "UTC")),
        "naive": pa.array(ids, pa.timestamp("us")),
        "vec": pa.FixedSizeListArray.from_arrays(
            pa.array(rng.standard_normal(n * 8).astype(np.float32)), 8),
        "fsb": pa.array([i.to_bytes(4, "little") for i in range(n)], pa.binary(4)),
        "tags": pa.array([[f"t{i % 3}"] * (i % 3) for i in ids], pa.list_(pa.string())),
    })


def test_spark_reads_pylance_dataset_exactly_and_writes_types_back(spark, tmp_path):
    src = str(tmp_path / "pylance")
    t = odd_types(3000)
    lance.write_dataset(t, src, max_rows_per_file=1000, data_storage_version="2.1")
    lance.dataset(src).delete("id % 7 = 0")
    want = lance.dataset(src).to_table()
    df = spark.read.format("lancenb").load(src)
    got = df.toArrow().sort_by("id")
    # values are exact after Spark's documented widening (uint64 -> decimal(20,0), ...)
    for f in want.schema:
        exp = want.column(f.name).cast(spark_arrow_type(f.type))
        assert got.column(f.name).cast(exp.type).equals(exp), f.name
    # writing the DataFrame back restores the Lance types from the field metadata
    dst = str(tmp_path / "back")
    df.write.format("lancenb").mode("append").save(dst)
    back = lance.dataset(dst)
    assert back.schema.remove_metadata() == want.schema.remove_metadata()
    assert_tables_equal(back.to_table().sort_by("id"), want)
    # and appending to a dataset with those types casts back (overflow-checked)
    df.filter("id < 10").write.format("lancenb").mode("append").save(src)
    assert lance.dataset(src).count_rows() == want.num_rows + 8


def test_uint_overflow_on_append_fails_and_cleans_up(spark, tmp_path):
    uri = str(tmp_path / "u8")
    lance.write_dataset(pa.table({"u8": pa.array([1, 2], pa.uint8())}), uri)
    with pytest.raises(Exception, match="cannot convert int16 to uint8"):
        spark.range(300).selectExpr("cast(id as smallint) as u8").write.format("lancenb") \
            .mode("append").save(uri)
    assert lance.dataset(uri).version == 1


def test_write_lance_and_read_lance(spark, tmp_path):
    uri = str(tmp_path / "helpers")
    df = spark.range(0, 5000, numPartitions=3).selectExpr(
        "id", "cast(id % 10 as string) as s", "id * 1.5 as x")
    ds = ls.write_lance(df, uri, mode="create", max_rows_per_file=1000)
    assert ds.version == 1 and ds.count_rows() == 5000 and len(ds.get_fragments()) >= 5
    ds = ls.write_lance(df.filter("id < 100"), uri)  # append, committed here
    assert ds.version == 2 and ds.count_rows() == 5100
    part = ls.read_lance(spark, uri, columns=["x", "id"], filter="s = '3' AND id < 1000")
    assert part.columns == ["x", "id"]
    got = sorted((r.id, r.x) for r in part.collect())
    want = [(i, i * 1.5) for i in range(3, 1000, 10)]
    assert got == sorted(want + [(i, i * 1.5) for i in range(3, 100, 10)])
    old = ls.read_lance(spark, uri, version=1, rows_per_partition=700)
    assert old.count() == 5000
    with pytest.raises(lancenb.InvalidInputError):
        ls.read_lance(spark, uri, columns=["nope"])
    # SQL functions go through the engine now (issue 20): lower() is a filter like any
    assert ls.read_lance(spark, uri, filter="lower(s) = '3' AND id < 1000").count() == 110
    with pytest.raises(lancenb.InvalidInputError):
        ls.read_lance(spark, uri, filter="no_such_function(s) = 'a'")
    with pytest.raises(lancenb.DatasetExistsError):
        ls.write_lance(df, uri, mode="create")
    assert lance.dataset(uri).count_rows() == 5100
    ds = ls.write_lance(df.limit(0), uri, mode="overwrite")
    assert ds.count_rows() == 0


def test_encoding_stats_per_batch(spark):
    df = spark.range(0, 30000, numPartitions=2).selectExpr(
        "id", "cast(id % 4 as string) as cat", "array(1.0f, 2.0f) as v")
    stats = ls.encoding_stats(df).collect()
    assert {r.column for r in stats} == {"id", "cat", "v"}
    assert sum(r.rows for r in stats if r.column == "id") == 30000
    cat = [r for r in stats if r.column == "cat"]
    assert all("dict" in r.encoding and r.lance_bytes < r.arrow_bytes for r in cat)
    one = ls.batch_encoding_stats(pa.table({"a": pa.array(np.zeros(1000, np.int64))}))
    assert one.column("rows").to_pylist() == [1000]
