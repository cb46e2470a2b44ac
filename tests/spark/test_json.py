"""JSON columns through Spark: read as their text (a string column), appended to from
Spark strings (checked and stored as JSONB, which pylance reads back), a DataFrame read
from a JSON dataset written out again."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lancenb

lance = pytest.importorskip("lance")

TEXTS = ['{"b": 1, "a": [1.5, "x"]}', None, "3", '"s"']


def _json_table():
    js = pa.array(TEXTS, pa.json_())
    return pa.table({"id": [0, 1, 2, 3], "j": js,
                     "s": pa.StructArray.from_arrays([js, pa.array([1, 2, 3, 4])],
                                                     names=["x", "y"])})


@pytest.mark.parametrize("writer", ["lancenb", "pylance"])
def test_spark_reads_json_as_text(spark, tmp_path, writer):
    from lancenb.spark import read_lance

    uri = str(tmp_path / "ds")
    (lancenb if writer == "lancenb" else lance).write_dataset(_json_table(), uri)
    want = lance.dataset(uri).to_table()
    for df in (spark.read.format("lancenb").load(uri), read_lance(spark, uri)):
        assert df.schema["j"].dataType.simpleString() == "string"
        rows = df.orderBy("id").collect()
        assert [r.j for r in rows] == want["j"].to_pylist()
        assert [r.s.x for r in rows] == [s["x"] for s in want["s"].to_pylist()]
    got = spark.read.format("lancenb").load(uri).filter("j IS NULL").collect()
    assert [r.id for r in got] == [1]


def test_spark_appends_json_text(spark, tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(_json_table(), uri)
    df = spark.createDataFrame([(4, '{"z": [true, null]}', (None, 5))],
                               "id long, j string, s struct<x: string, y: long>")
    df.write.format("lancenb").mode("append").save(uri)
    got = lance.dataset(uri).to_table().sort_by("id")
    assert got["j"].to_pylist()[4] == '{"z":[true,null]}'
    assert got.schema.field("j").type == pa.json_()
    assert lancenb.dataset(uri).to_table().sort_by("id").equals(got)
    bad = spark.createDataFrame([(5, "{nope", (None, 6))],
                                "id long, j string, s struct<x: string, y: long>")
    with pytest.raises(Exception, match="invalid JSON"):
        bad.write.format("lancenb").mode("append").save(uri)
    assert lance.dataset(uri).count_rows() == 5


def test_spark_writes_back_what_it_read(spark, tmp_path):
    """A DataFrame read from a JSON dataset keeps its JSON columns when written to a
    new dataset (the original field travels in the Spark field's metadata)."""
    src, dst = str(tmp_path / "src"), str(tmp_path / "dst")
    lancenb.write_dataset(_json_table(), src)
    spark.read.format("lancenb").load(src).write.format("lancenb").mode("overwrite").save(dst)
    got = lance.dataset(dst).to_table().sort_by("id")
    assert got.schema.field("j").type == pa.json_()
    assert got.equals(lance.dataset(src).to_table().sort_by("id"))
