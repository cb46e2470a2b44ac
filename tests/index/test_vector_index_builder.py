"""``lancenb.indices`` (pylance's ``lance.indices``): IVF and PQ models trained step by
step, saved by one library and loaded by the other, and fed to ``create_index``; the
step-by-step build (transform, shuffle, load) commits an index pylance searches."""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.indices import IvfModel as PIvfModel
from lance.indices import PqModel as PPqModel

import lancenb
from lancenb.index.vector.api import VectorIndexMethods
from lancenb.indices import IndicesBuilder, IvfModel, PqModel

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
DIM = 16


@pytest.fixture(scope="module")
def uri(tmp_path_factory):
    rng = np.random.default_rng(7)
    v = rng.standard_normal((3000, DIM)).astype(np.float32)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), DIM)
    vec = pa.array([x if i % 5 else None for i, x in enumerate(vec.to_pylist())],
                   pa.list_(pa.float32(), DIM))  # nulls: sampled around
    out = str(tmp_path_factory.mktemp("builder") / "ds")
    lance.write_dataset(pa.table({"id": np.arange(3000), "v": vec}), out,
                        max_rows_per_file=1000)
    return out


def test_models_cross_load(uri, tmp_path):
    b = IndicesBuilder(lancenb.dataset(uri), "v")
    ivf = b.train_ivf(8, sample_rate=16, distance_type="cosine")
    pq = b.train_pq(ivf, 4, sample_rate=4)
    assert (ivf.num_partitions, ivf.distance_type, pq.dimension) == (8, "cosine", DIM)
    ivf.save(str(tmp_path / "ivf"))
    pq.save(str(tmp_path / "pq"))
    pivf, ppq = PIvfModel.load(str(tmp_path / "ivf")), PPqModel.load(str(tmp_path / "pq"))
    assert pivf.centroids == ivf.centroids and pivf.distance_type == "cosine"
    assert ppq.codebook == pq.codebook and ppq.num_subvectors == 4
    pivf.save(str(tmp_path / "ivf2"))
    assert IvfModel.load(str(tmp_path / "ivf2")).centroids == ivf.centroids
    ppq.save(str(tmp_path / "pq2"))
    assert PqModel.load(str(tmp_path / "pq2")).codebook == pq.codebook


def test_checks_as_pylance(uri):
    b = IndicesBuilder(lancenb.dataset(uri), "v")
    with pytest.raises(ValueError, match="must be divisible by num_subvectors .* without"):
        b.train_pq(b.train_ivf(4, sample_rate=16), 5)
    with pytest.raises(ValueError, match="not enough rows in the dataset to create IVF"):
        b.train_ivf(1000, sample_rate=16)
    with pytest.raises(KeyError, match="nope not found in schema"):
        IndicesBuilder(lancenb.dataset(uri), "nope")


def test_given_models_and_step_by_step_build(uri, tmp_path):
    import shutil

    work = str(tmp_path / "ds")
    shutil.copytree(uri, work)
    nds = lancenb.dataset(work)
    b = IndicesBuilder(nds, "v")
    ivf = b.train_ivf(6, sample_rate=16)
    pq = b.train_pq(ivf, 4, sample_rate=4)
    VectorIndexMethods.create_index(nds, "v", "IVF_PQ", name="given", num_sub_vectors=4,
                                    ivf_centroids=ivf.centroids, pq_codebook=pq.codebook)
    stats = lance.dataset(work).stats.index_stats("given")
    np.testing.assert_allclose(stats["indices"][0]["centroids"],
                               np.stack(ivf.centroids.to_numpy(zero_copy_only=False)))
    frags = nds.get_fragments()
    b = IndicesBuilder(nds, "v")
    b.transform_vectors(ivf, pq, str(tmp_path / "t1"), fragments=frags[:1])
    b.transform_vectors(ivf, pq, str(tmp_path / "t2"), fragments=frags[1:])
    names = b.shuffle_transformed_vectors(["t1"], str(tmp_path), ivf, "s1") + \
        b.shuffle_transformed_vectors(["t2"], str(tmp_path), ivf, "s2")
    b.load_shuffled_vectors(names, str(tmp_path), ivf, pq, index_name="shuffled")
    ds = lance.dataset(work)
    entry = [e for e in ds.list_indices() if e["name"] == "shuffled"][0]
    assert entry["type"] == "IVF_PQ" and sorted(entry["fragment_ids"]) == [0, 1, 2]
    assert ds.stats.index_stats("shuffled")["num_indexed_rows"] == 3000
    # both indices hold the same codes: the same answers from pylance
    q = np.ones(DIM, np.float32)
    a = ds.to_table(nearest={"column": "v", "q": q, "k": 5, "nprobes": 6}, columns=["id"])
    assert len(a) == 5
