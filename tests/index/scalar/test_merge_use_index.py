"""``merge_insert(...).explain_plan()`` on a key with a BTREE or BITMAP index refuses as
pylance 14's (its join would go through the index, a path without a plan) unless
``use_index(False)``; other index types and composite keys explain as before."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import lancenb

lance = pytest.importorskip("lance")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.mark.parametrize("kind", ["BTREE", "BITMAP", "ZONEMAP", None])
@pytest.mark.parametrize("use_index", [None, True, False])
@pytest.mark.parametrize("on", ["id", ["id", "v"]])
def test_explain_refuses_as_pylance(tmp_path, kind, use_index, on):
    uri = str(tmp_path / "d")
    lance.write_dataset(pa.table({"id": np.arange(100), "v": np.arange(100)}), uri)
    if kind:
        lance.dataset(uri).create_scalar_index("id", kind)
    outcome = []
    for lib in (lance, lancenb):
        b = lib.dataset(uri).merge_insert(on).when_matched_update_all() \
            .when_not_matched_insert_all()
        if use_index is not None:
            b = b.use_index(use_index)
        try:
            b.explain_plan()
            outcome.append("plan")
        except Exception as e:  # noqa: BLE001 - pylance raises OSError, lancenb its own
            assert "does not support explain_plan" in str(e)
            outcome.append("refused")
    assert outcome[0] == outcome[1]
    b = lancenb.dataset(uri).merge_insert(on).when_matched_update_all().use_index(use_index
                                                                                  or False)
    if not use_index:
        assert b.execute(pa.table({"id": [1, 200], "v": [1, 9]}))["num_updated_rows"] == 1
