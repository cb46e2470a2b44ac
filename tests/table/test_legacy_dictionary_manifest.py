"""A 0.1 (legacy) dataset with a dictionary column, written by pylance, changed by
lancenb: pylance keeps the dictionary's values at the start of every manifest file
(``Field.dictionary.offset`` points there), so each manifest lancenb writes must carry
them too. Before, pylance could not open the dataset after any lancenb commit
("Invalid range ..." reading the dictionary)."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

import lancenb

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _table():
    return pa.table({"d": pa.array(["a", "b", "a", "c"], pa.dictionary(pa.int8(), pa.string())),
                     "n": pa.array(["x", "y", "x", "y"], pa.dictionary(pa.int32(), pa.string())),
                     "x": pa.array([1, 2, 3, 4], pa.int64())})


# (not here: update and add_columns, which lancenb refuses on 0.1 datasets with
# dictionary columns; restore, which pylance 14 itself fails on them)
CHANGES = {
    "delete": lambda ds: ds.delete("x = 2"),
    "delete_all_of_a_key": lambda ds: ds.delete("d = 'a'"),
    "config": lambda ds: ds.update_config({"k": "v"}),
    "index": lambda ds: ds.create_scalar_index("x", "BTREE"),
    "two_commits": lambda ds: (ds.delete("x = 4"), ds.update_config({"k": "v"})),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_pylance_reads_after_lancenb_commits(tmp_path, change):
    want_uri, got_uri = str(tmp_path / "want"), str(tmp_path / "got")
    for uri in (want_uri, got_uri):
        lance.write_dataset(_table(), uri, data_storage_version="legacy")
    CHANGES[change](lance.dataset(want_uri))
    CHANGES[change](lancenb.dataset(got_uri))
    want = lance.dataset(want_uri).to_table()
    for lib in (lance, lancenb):
        got = lib.dataset(got_uri)
        assert got.version == lance.dataset(want_uri).version
        assert got.to_table().equals(want)
    # and pylance commits on top of lancenb's manifest
    lance.dataset(got_uri).delete("x = 3")
    lance.dataset(want_uri).delete("x = 3")
    assert lancenb.dataset(got_uri).to_table().equals(lance.dataset(want_uri).to_table())
