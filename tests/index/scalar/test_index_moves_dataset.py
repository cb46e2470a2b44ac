"""An index method moves the dataset it is called on to the version it committed, and
that dataset's later commits (delete, compaction, ...) move it again, as pylance's."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

import lancenb


def _ds(tmp_path):
    t = pa.table({"z": np.arange(300), "v": pa.FixedSizeListArray.from_arrays(
        pa.array(np.random.default_rng(0).random(600).astype(np.float32)), 2)})
    return lancenb.write_dataset(t, str(tmp_path / "d"), max_rows_per_file=150)


def test_commits_after_index_builds_move_the_dataset(tmp_path):
    ds = _ds(tmp_path)
    ds.create_scalar_index("z", "BTREE")
    assert ds.version == 2
    ds.delete("z < 5")  # (moved a copy of the dataset, not ds, before)
    assert (ds.version, ds.count_rows()) == (3, 295)
    ds.create_index("v", "IVF_FLAT", num_partitions=2)
    assert ds.version == 4
    ds.optimize.compact_files()
    assert (ds.version, len(ds.get_fragments())) == (6, 1)
    assert ds.to_table(filter="z = 7").num_rows == 1


def test_segments_commit_moves_the_dataset(tmp_path):
    ds = _ds(tmp_path)
    segs = [ds.create_scalar_index("z", "BITMAP", fragment_ids=[f.fragment_id])
            for f in ds.get_fragments()]
    ds.commit_existing_index_segments("z_idx", "z", segs)
    ds.delete("z = 1")
    assert (ds.version, ds.count_rows()) == (3, 299)
