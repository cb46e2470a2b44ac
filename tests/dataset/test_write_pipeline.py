"""The one dataset write pipeline (lancenb.dataset.write.insert): every writer of new data files
writes the same layout. Regression: 2.2 fragments written by ``write_fragments`` /
``LanceFragment.create`` stored blob columns as blob v1 where ``write_dataset`` writes
pylance's 2.2 blob v2 layout (and appending them to a blob v2 dataset failed)."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb
from lancenb.dataset.write.insert import plan_write, stage_deletions
from lancenb.file import LanceFileReader

BLOB = {"lance-encoding:blob": "true"}
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("b", pa.large_binary(), metadata=BLOB)])
VALUES = [b"abc", None, b"", b"x" * 70_000, b"z" * 10]


def _table(start: int = 0) -> pa.Table:
    return pa.table({"id": np.arange(start, start + len(VALUES)),
                     "b": pa.array(VALUES, pa.large_binary())}, schema=SCHEMA)


def _layout(uri: str) -> list:
    """The dataset's schema and, per data file, its fields, column indices, file schema
    and page encodings."""
    ds = lancenb.dataset(uri)
    out = [ds.schema]
    for frag in ds.get_fragments():
        for df in frag.metadata.files:
            md = LanceFileReader(f"{uri}/data/{df.path}").metadata()
            out.append((list(df.fields), list(df.column_indices),
                        (md.major_version, md.minor_version), md.schema,
                        [[p.description for p in c.pages] for c in md.columns]))
    return out


def _blob_bytes(uri: str) -> list:
    t = lance.dataset(uri).to_table(columns=["id"], with_row_id=True).sort_by("id")
    files = lance.dataset(uri).take_blobs("b", ids=t.column("_rowid").to_pylist())
    return [None if f is None else f.readall() for f in files]


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_write_fragments_writes_write_datasets_layout(tmp_path, version):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    lancenb.write_dataset(_table(), a, data_storage_version=version)
    txn = lancenb.fragment.write_fragments(_table(), b, mode="create",
                                           data_storage_version=version,
                                           return_transaction=True)
    lancenb.LanceDataset.commit(b, txn.operation, read_version=0)
    assert _layout(a) == _layout(b)
    if version == "2.2":
        assert lancenb.dataset(b).schema.field("b").metadata == \
            {b"ARROW:extension:name": b"lance.blob.v2"}
    # appends through both paths write the same files again, and pylance reads them
    lancenb.write_dataset(_table(5), a, mode="append")
    frag = lancenb.LanceFragment.create(b, _table(5))
    ds = lancenb.dataset(b)
    lancenb.LanceDataset.commit(b, lancenb.LanceOperation.Append([frag]),
                                read_version=ds.version)
    assert _layout(a) == _layout(b)
    assert _blob_bytes(a) == _blob_bytes(b) == VALUES * 2


def test_plan_of_an_append_keeps_the_datasets_schema(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(_table(), uri, data_storage_version="2.2")
    plan = plan_write(uri, None, mode="append")
    assert plan.appending and plan.read_version == 1 and plan.version.label == "2.2"
    assert plan.schema.field("b").type == pa.large_binary()  # blob v2 values go in as bytes
    assert plan.manifest_schema.field("b").metadata == \
        {b"ARROW:extension:name": b"lance.blob.v2"}
    plan = plan_write(uri, SCHEMA, mode="overwrite")
    assert not plan.appending and plan.version.label == "2.2"
    with pytest.raises(lancenb.DatasetExistsError, match="use mode='append'"):
        plan_write(uri, SCHEMA, mode="create", refuse_existing="mode='append'")


def test_stage_deletions_removes_emptied_fragments(tmp_path):
    uri = str(tmp_path / "ds")
    ds = lancenb.write_dataset(pa.table({"a": np.arange(10)}), uri, max_rows_per_file=5)
    written: list = []
    frags = ds.get_fragments()
    updated, removed = stage_deletions(ds._store, frags, {0: np.array([1, 2], np.uint32),
                                                          1: np.arange(5, dtype=np.uint32)},
                                       ds.version, written)
    assert removed == [1] and len(updated) == 1 and len(written) == 1
    assert updated[0].deletion_file.num_deleted_rows == 2
