"""Datasets with pylance's indices: lancenb lists them as pylance does (list_indices,
has_index), keeps them through its own commits, and reads such datasets."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _rows(lo: int, n: int) -> pa.Table:
    ids = np.arange(lo, lo + n)
    vec = pa.FixedSizeListArray.from_arrays(
        pa.array(np.random.default_rng(lo).random(n * 8).astype(np.float32)), 8)
    return pa.table({"id": pa.array(ids, pa.int64()), "v": vec,
                     "t": [f"w{i % 9} x" for i in ids], "c": [f"c{i % 5}" for i in ids],
                     "tags": pa.array([[f"t{i % 3}"] for i in ids]),
                     "st": pa.array([{"a": int(i)} for i in ids])})


def test_list_indices_as_pylance(tmp_path):
    uri = str(tmp_path / "ds")
    lance.write_dataset(_rows(0, 2000), uri, max_rows_per_file=800)
    assert lancenb.dataset(uri).list_indices() == [] and not lancenb.dataset(uri).has_index
    ds = lance.dataset(uri)
    ds.create_index("v", "IVF_PQ", num_partitions=2, num_sub_vectors=2)
    ds.create_scalar_index("t", "INVERTED")
    ds.create_scalar_index("id", "BTREE")
    ds.create_scalar_index("c", "BITMAP")
    ds.create_scalar_index("tags", "LABEL_LIST")
    ds.create_scalar_index("st.a", "BTREE")
    ds.create_scalar_index("c", "NGRAM", name="ng")
    lance.write_dataset(_rows(5000, 1), uri, mode="append")
    lancenb.write_dataset(_rows(6000, 1), uri, mode="append")  # kept through lancenb's commit

    def by_name(ds):
        return sorted(ds.list_indices(), key=lambda x: x["name"])

    want, got = by_name(lance.dataset(uri)), by_name(lancenb.dataset(uri))
    assert len(want) == 7 and got == want
    assert {i["type"] for i in got} == {"IVF_PQ", "Inverted", "BTree", "Bitmap", "LabelList",
                                        "NGram"}
    assert lancenb.dataset(uri).has_index
    assert lancenb.dataset(uri, version=1).list_indices() == []
    ours = lancenb.dataset(uri)
    assert ours.count_rows("id > 1990") == lance.dataset(uri).count_rows("id > 1990") == 11
