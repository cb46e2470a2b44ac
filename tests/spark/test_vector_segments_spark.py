"""A distributed vector index build on Spark: the model trained once in the driver,
``mapInArrow`` tasks build one ``create_index_uncommitted`` segment per group of
fragment ids, the driver merges and commits them; the index searches as a single-shot
build with the same model, in lancenb and in pylance."""

from __future__ import annotations

import pickle
import shutil

import lance
import numpy as np
import pyarrow as pa
import pytest

import lancenb

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
DIM, FRAG_ROWS, FRAGS = 16, 1000, 4


def _table(n=FRAG_ROWS * FRAGS):
    rng = np.random.default_rng(11)
    centers = rng.standard_normal((8, DIM)) * 3
    v = (centers[rng.integers(0, 8, n)] + rng.standard_normal((n, DIM))).astype(np.float32)
    return pa.table({"id": np.arange(n),
                     "v": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), DIM)})


def test_index_segments_built_by_map_in_arrow(spark, tmp_path):
    uri, single = str(tmp_path / "ds"), str(tmp_path / "single")
    ds = lancenb.write_dataset(_table(), uri, max_rows_per_file=FRAG_ROWS)
    shutil.copytree(uri, single)
    b = lancenb.indices.IndicesBuilder(ds, "v")
    ivf = b.train_ivf(num_partitions=6, sample_rate=32)
    model = {"ivf_centroids": ivf.centroids, "num_sub_vectors": 4,
             "pq_codebook": b.train_pq(ivf, num_subvectors=4, sample_rate=8).codebook}
    payload, version = pickle.dumps(model), ds.version

    def build(batches):  # a Spark task: its fragment ids -> one pickled segment
        import pickle

        import pyarrow as pa

        import lancenb

        m = pickle.loads(payload)
        for batch in batches:
            ids = batch.column("fragment_id").to_pylist()
            if ids:
                tds = lancenb.dataset(uri, version=version)
                seg = tds.create_index_uncommitted("v", "IVF_PQ", fragment_ids=ids, **m)
                yield pa.record_batch([pa.array([pickle.dumps(seg)], pa.binary())],
                                      names=["segment"])

    frame = spark.createDataFrame([(f.fragment_id,) for f in ds.get_fragments()],
                                  "fragment_id long").repartition(2)
    rows = frame.mapInArrow(build, "segment binary").collect()
    segs = [pickle.loads(r.segment) for r in rows]
    assert sorted(f for s in segs for f in s.fragment_ids) == list(range(FRAGS))
    ds.commit_existing_index_segments("v_idx", "v", [ds.merge_existing_index_segments(segs)])
    lancenb.dataset(single).create_index("v", "IVF_PQ", **model)
    qs = (np.random.default_rng(4).standard_normal((4, DIM)) * 2).astype(np.float32)
    for q in qs:
        req = {"column": "v", "q": q, "k": 10, "nprobes": 3}
        want = lancenb.dataset(single).to_table(nearest=req, columns=["id"])["id"].to_pylist()
        for lib in (lancenb, lance):
            assert lib.dataset(uri).to_table(nearest=req, columns=["id"])["id"].to_pylist() \
                == want
