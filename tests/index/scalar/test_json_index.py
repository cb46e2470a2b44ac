"""JSON indices (a BTREE or BITMAP over one key of a JSON column) built by lancenb and
by pylance, each used by both libraries: same rows as an unindexed scan, and the
index in the plan where pylance puts it."""

import json
import random

import lance
import pyarrow as pa
import pytest
from lance.indices import IndexConfig

import lancenb

FILTERS = ["json_get_int(j, 'x') = 10", "json_get_int(j, 'x') > 7",
           "json_get_int(j, 'x') IN (7, 10, 3)", "json_get_int(j, 'x') IS NULL",
           "json_get_int(j, 'x') IS NOT NULL", "json_get_int(j, 'x') BETWEEN 3 AND 10",
           "NOT json_get_int(j, 'x') = 10", "json_get_int(j, 'x') != 4",
           "json_get_int(j, 'x') < 5 AND id > 20", "json_get_string(j, 'x') = '10'"]


def _table(n=300, seed=3):
    rnd = random.Random(seed)
    docs = []
    for _ in range(n):
        k = rnd.random()
        d = {"y": rnd.randint(0, 9)}
        if k < 0.8:
            d["x"] = rnd.randint(0, 12)
        elif k < 0.9:
            d["x"] = None
        docs.append(None if k > 0.97 else json.dumps(d))
    return pa.table({"id": pa.array(range(n), pa.int64()), "j": pa.array(docs, pa.json_())})


def _sorted(t):
    return t.sort_by("id").column("id").to_pylist()


@pytest.mark.parametrize("target", ["btree", "bitmap"])
@pytest.mark.parametrize("builder", ["lancenb", "pylance"])
def test_json_index_both_ways(tmp_path, builder, target):
    mod = lancenb if builder == "lancenb" else lance
    ds = mod.write_dataset(_table(), tmp_path / "d", max_rows_per_file=120)
    ds.create_scalar_index("j", IndexConfig(index_type="json", parameters={
        "target_index_type": target, "path": "x"}))
    ours, theirs = lancenb.dataset(tmp_path / "d"), lance.dataset(tmp_path / "d")
    assert ours.list_indices()[0]["type"] == "Json"
    assert theirs.describe_indices()[0].type_url.endswith("JsonIndexDetails")
    a, b = ours.stats.index_stats("j_idx"), theirs.stats.index_stats("j_idx")
    assert (a["index_type"], a["indices"]) == (b["index_type"], b["indices"])
    for f in FILTERS:
        want = _sorted(theirs.to_table(filter=f, use_scalar_index=False))
        assert _sorted(ours.to_table(filter=f)) == want, f
        if "json_get_int" in f:  # (pylance panics on json_get_string with an int index)
            assert _sorted(theirs.to_table(filter=f)) == want, f
    for f in FILTERS[:7]:
        plan, mine = theirs.scanner(filter=f).explain_plan(), ours.scanner(filter=f).explain_plan()
        want = [ln.strip() for ln in plan.splitlines() if "ScalarIndexQuery" in ln]
        assert [ln.strip() for ln in mine.splitlines() if "ScalarIndexQuery" in ln] == want, f


def test_json_index_type_mismatch_scans(tmp_path):
    """An int64 index does not answer json_get_float (pylance answers it wrongly)."""
    ds = lancenb.write_dataset(_table(), tmp_path / "d")
    ds.create_scalar_index("j", IndexConfig(index_type="json", parameters={
        "target_index_type": "btree", "path": "x"}))
    f = "json_get_float(j, 'x') = 10.0"
    assert "ScalarIndexQuery" not in ds.scanner(filter=f).explain_plan()
    assert _sorted(ds.to_table(filter=f)) == _sorted(ds.to_table(filter=f,
                                                                 use_scalar_index=False))


@pytest.mark.parametrize("builder", ["lancenb", "pylance"])
def test_json_index_after_compaction(tmp_path, builder):
    """Compaction (deleted rows, no stable row ids) remaps the JSON index: lancenb's
    answers and pylance's stay those of an unindexed scan."""
    mod = lancenb if builder == "lancenb" else lance
    ds = mod.write_dataset(_table(), tmp_path / "d", max_rows_per_file=60)
    ds.create_scalar_index("j", IndexConfig(index_type="json", parameters={
        "target_index_type": "btree", "path": "x"}))
    ds.delete("id % 7 = 0")
    ours = lancenb.dataset(tmp_path / "d")
    ours.optimize.compact_files(target_rows_per_fragment=1000)
    ours, theirs = lancenb.dataset(tmp_path / "d"), lance.dataset(tmp_path / "d")
    assert len(ours.get_fragments()) == 1
    assert set(ours.list_indices()[0]["fragment_ids"]) == {ours.get_fragments()[0].fragment_id}
    for f in FILTERS[:7]:
        want = _sorted(theirs.to_table(filter=f, use_scalar_index=False))
        assert "ScalarIndexQuery" in ours.scanner(filter=f).explain_plan(), f
        assert _sorted(ours.to_table(filter=f)) == want, f
        assert _sorted(theirs.to_table(filter=f)) == want, f


@pytest.mark.parametrize("builder", ["lancenb", "pylance"])
def test_json_index_stable_row_ids(tmp_path, builder):
    """With stable row ids a BTREE target is refused (as pylance 14), a BITMAP target
    answers through deletes and a compaction by either library."""
    mod = lancenb if builder == "lancenb" else lance
    ds = mod.write_dataset(_table(), tmp_path / "d", max_rows_per_file=100,
                           enable_stable_row_ids=True)
    with pytest.raises(NotImplementedError):
        ds.create_scalar_index("j", IndexConfig(index_type="json", parameters={
            "target_index_type": "btree", "path": "x"}))
    ds.create_scalar_index("j", IndexConfig(index_type="json", parameters={
        "target_index_type": "bitmap", "path": "x"}))
    ds.delete("id % 5 = 0")
    for step in range(2):
        ours, theirs = lancenb.dataset(tmp_path / "d"), lance.dataset(tmp_path / "d")
        for f in FILTERS[:7]:
            want = _sorted(theirs.to_table(filter=f, use_scalar_index=False))
            assert _sorted(ours.to_table(filter=f)) == want, (step, f)
            assert _sorted(theirs.to_table(filter=f)) == want, (step, f)
        assert "ScalarIndexQuery" in ours.scanner(filter=FILTERS[0]).explain_plan()
        (ours if builder == "lancenb" else theirs).optimize.compact_files(
            target_rows_per_fragment=1000)
