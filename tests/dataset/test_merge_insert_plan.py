"""``MergeInsertBuilder.explain_plan`` / ``analyze_plan``: pylance's contract (the merge
node's first line, operators indented under it, metrics with the write counters, no
commit), checked against pylance 14 on the same builders."""

import lance
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import InvalidInputError, SchemaError

ROWS = pa.table({"sku": pa.array([10, 20, 30, 40, 50], pa.int64()),
                 "name": ["bolt", "nut", "gear", "cam", "pin"],
                 "qty": pa.array([5, 0, 7, 1, 9], pa.int32())})

BUILDERS = {
    "upsert": lambda b: b.when_matched_update_all().when_not_matched_insert_all(),
    "update_if": lambda b: b.when_matched_update_all("target.qty < source.qty"),
    "insert_only": lambda b: b.when_not_matched_insert_all(),
    "delete_only": lambda b: b.when_matched_delete(),
    "fail": lambda b: b.when_matched_fail().when_not_matched_insert_all(),
    "replace_range": lambda b: b.when_matched_update_all().when_not_matched_insert_all()
    .when_not_matched_by_source_delete("sku > 30"),
    "by_source_delete": lambda b: b.when_not_matched_by_source_delete(),
}


@pytest.fixture()
def both(tmp_path):
    lance.write_dataset(ROWS, tmp_path / "p")
    lancenb.write_dataset(ROWS, tmp_path / "n")
    return lance.dataset(tmp_path / "p"), lancenb.dataset(tmp_path / "n")


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_first_line_as_pylance(both, name):
    theirs, ours = (BUILDERS[name](ds.merge_insert("sku")) for ds in both)
    want = theirs.explain_plan().splitlines()[0]
    got = ours.explain_plan()
    assert got.splitlines()[0] == want
    assert got.endswith("\n") and "HashJoinExec" in got and "LanceRead" in got
    for line in got.splitlines()[1:]:  # operators indented under the merge node
        assert line.startswith("  ")
    assert ours.explain_plan(verbose=True).startswith(want)


def test_explain_with_a_partial_source_schema(both):
    schema = pa.schema([("sku", pa.int64()), ("qty", pa.int32())])
    theirs, ours = (ds.merge_insert("sku").when_matched_update_all() for ds in both)
    want = theirs.explain_plan(schema)
    got = ours.explain_plan(schema)
    assert got.splitlines()[0] == want.splitlines()[0]
    assert "projection=[sku, qty]" in got  # the source's columns
    assert "projection=[sku, name, qty]" in got  # matched rows are read whole


@pytest.mark.parametrize("schema", [
    pa.schema([("sku", pa.int32())]),                          # another key type
    pa.schema([("sku", pa.int64()), ("colour", pa.string())]),  # not a dataset column
    pa.schema([("name", pa.string())]),                       # no key
])
def test_explain_refuses_a_source_execute_would_refuse(both, schema):
    theirs, ours = (ds.merge_insert("sku").when_matched_update_all() for ds in both)
    with pytest.raises((OSError, ValueError)):
        theirs.explain_plan(schema)
    with pytest.raises(SchemaError):
        ours.explain_plan(schema)


def test_unconfigured_merge_is_refused(both):
    with pytest.raises(ValueError, match="not configured to change the data"):
        both[0].merge_insert("sku").explain_plan()
    with pytest.raises(InvalidInputError, match="not configured to change the data"):
        both[1].merge_insert("sku").explain_plan()


@pytest.mark.parametrize("name", ["upsert", "delete_only", "replace_range"])
def test_analyze_counts_without_committing(both, name):
    source = pa.table({"sku": pa.array([20, 60, 70], pa.int64()),
                       "name": ["nut2", "axle", "cog"],
                       "qty": pa.array([3, 2, 8], pa.int32())})
    theirs, ours = (BUILDERS[name](ds.merge_insert("sku")) for ds in both)
    want, got = theirs.analyze_plan(source), ours.analyze_plan(source)
    assert got.splitlines()[0].split(":")[0] == want.strip().split(":")[0]
    for key in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows",
                "num_files_written"):
        w = want.split(f"{key}=")[1].split(",")[0].split("]")[0]
        assert f"{key}={w}" in got
    assert "bytes_written=" in got and "metrics=[" in got
    # nothing committed
    assert lancenb.dataset(both[1].uri).version == 1
    assert lancenb.dataset(both[1].uri).to_table() == ROWS
    assert lance.dataset(both[1].uri).to_table() == ROWS
