"""A Spark write job's commit runs pylance's automatic cleanup like every other
commit (lancenb.dataset.write.cleanup.after_commit, called by lancenb.spark.jobs)."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lancenb

pytest.importorskip("pyspark")

from lancenb.spark.jobs import commit_job, plan_write, write_task  # noqa: E402


def _schema():
    from pyspark.sql.types import LongType, StructField, StructType

    return StructType([StructField("id", LongType(), False)])


def test_job_commit_cleans_up(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": pa.array([0], pa.int64())}), uri,
                        auto_cleanup_options={"interval": 1, "older_than_seconds": 0})
    for k in range(1, 4):
        job = plan_write(uri, _schema(), mode="append")
        frags, _ = write_task(job, iter([pa.record_batch({"id": pa.array([k], pa.int64())})]),
                              task="0-0")
        commit_job(job, frags)
    assert [v["version"] for v in lance.dataset(uri).versions()] == [3, 4]
    assert sorted(lancenb.dataset(uri).to_table()["id"].to_pylist()) == [0, 1, 2, 3]
