"""An IVF_HNSW_SQ index of pylance's with an empty partition (pylance writes an empty
string as that partition's graph metadata) opens in lancenb and answers as pylance."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa

import lancenb


def test_pylance_hnsw_with_empty_partition(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((600, 16)).astype(np.float32)
    path = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": np.arange(600), "vector": pa.FixedSizeListArray
                                  .from_arrays(pa.array(x.ravel()), 16)}), path)
    centroids = np.stack([x[:300].mean(0), x[300:].mean(0) + 0.01,
                          np.full(16, 1000.0, np.float32)])  # the last one gets no row
    lance.dataset(path).create_index("vector", index_type="IVF_HNSW_SQ", num_partitions=3,
                                     ivf_centroids=centroids)
    sizes = [p["size"] for p in lance.dataset(path).stats.index_stats("vector_idx")
             ["indices"][0]["partitions"]]
    assert 0 in sizes
    for q in x[:5]:
        nearest = {"column": "vector", "q": q, "k": 5, "nprobes": 3}
        ours = lancenb.dataset(path).to_table(nearest=nearest, columns=["id"])
        theirs = lance.dataset(path).to_table(nearest=nearest, columns=["id"])
        assert ours["id"].to_pylist()[0] == theirs["id"].to_pylist()[0]
        assert len(set(ours["id"].to_pylist()) & set(theirs["id"].to_pylist())) >= 4
