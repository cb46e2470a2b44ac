"""Spark writes go through the dataset write pipeline (lancenb.dataset.write.insert): an append
to a 2.2 dataset with a blob v2 column writes the files ``write_dataset`` writes
(before, the job took the dataset's blob v2 struct type and refused binary data)."""

from __future__ import annotations

import sys
from pathlib import Path

import lance

import lancenb

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dataset"))
from test_write_pipeline import VALUES, _blob_bytes, _layout, _table  # noqa: E402


def test_spark_append_to_a_blob_v2_dataset_writes_write_datasets_layout(spark, tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    for uri in (a, b):
        lancenb.write_dataset(_table(), uri, data_storage_version="2.2")
    lancenb.write_dataset(_table(5), a, mode="append")
    rows = _table(5).to_pylist()
    df = spark.createDataFrame([(r["id"], r["b"]) for r in rows], "id long, b binary")
    df.coalesce(1).write.format("lancenb").mode("append").save(b)
    assert lancenb.dataset(b).schema == lancenb.dataset(a).schema
    assert _layout(a) == _layout(b)
    assert _blob_bytes(b) == VALUES * 2
    assert lance.dataset(b).to_table(columns=["id"]).column("id").to_pylist() == \
        list(range(10))
