"""``optimize_indices`` for vector indices: bring new fragments into an index.

pylance's three ways, for each IVF_FLAT / IVF_PQ / IVF_SQ index name:

* ``num_indices_to_merge=0``: a *delta* segment (a new uuid under the same name)
  holding the fragments no segment covers, encoded with the newest segment's model
  (centroids, PQ codebook or SQ bounds); the old segments stay;
* otherwise (the default): one segment replacing every segment of the name, holding
  every live fragment, encoded with the newest segment's model (no retraining);
* ``retrain=True``: the index built again from the data (new centroids and
  quantizer), replacing every segment.

Each is one CreateIndex commit. Nothing happens to an index with a single segment that
covers every fragment (unless ``retrain``).
"""

from __future__ import annotations

import numpy as np

from lancenb.errors import NotSupportedError
from lancenb.index.vector import sq as sqmod
from lancenb.index.vector.build import (
    BUILD_TYPES,
    build_vector_index,
    commit_create_index,
    describe_existing,
    encode_grouped,
    write_index,
)
from lancenb.index.vector.ivf import open_vector_index

__all__ = ["optimize_vector_indices"]


def optimize_vector_indices(ds, *, num_indices_to_merge: int | None = None,
                            index_names=None, retrain: bool = False, **_ignored) -> None:
    """Add unindexed fragments to ``ds``'s vector indices (see the module docstring);
    ``ds`` moves to the version committed last.

    Examples
    --------
    >>> optimize_vector_indices(ds, num_indices_to_merge=0)  # doctest: +SKIP
    """
    entries = ds.list_indices()
    names = list(dict.fromkeys(e["name"] for e in entries if e["type"] in BUILD_TYPES))
    if index_names is not None:
        names = [n for n in names if n in set(index_names)]
    for name in names:
        segs = [e for e in ds.list_indices() if e["name"] == name]
        if segs:
            _optimize_one(ds, name, segs, num_indices_to_merge, retrain)


def _optimize_one(ds, name, segs, num_indices_to_merge, retrain) -> None:
    newest = max(segs, key=lambda e: e["version"])
    idx = open_vector_index(ds, newest)
    live = [f for f in ds.get_fragments()]
    covered = set()
    for e in segs:
        covered |= {int(f) for f in e["fragment_ids"]}
    unindexed = [f for f in live if f.fragment_id not in covered]
    if retrain:
        st = idx.storage
        kw = {}
        if st.kind == "PQ":
            kw = {"num_sub_vectors": int(st.params["num_sub_vectors"]),
                  "num_bits": int(st.params["nbits"])}
        build_vector_index(ds, idx.column, idx.index_type, name, metric=idx.metric,
                           num_partitions=idx.num_partitions, replace=True,
                           dataset_out=ds, **kw)
        return
    if not unindexed and len(segs) == 1:
        return
    delta = num_indices_to_merge == 0
    frags = unindexed if delta else live
    if delta and not frags:
        return
    built = _rebuild_with_model(ds, idx, name, frags)
    if delta:  # the old segments stay: listed again (a CreateIndex replaces by name)
        kept = [describe_existing(ds, e, open_vector_index(ds, e)) for e in segs]
        commit_create_index(ds, [built], [], dataset_out=ds, kept=kept)
    else:
        commit_create_index(ds, [built], segs, dataset_out=ds)


def _rebuild_with_model(ds, idx, name, frags):
    """Index files for ``frags`` encoded with ``idx``'s trained model."""
    st = idx.storage
    if idx.index_type not in BUILD_TYPES:
        raise NotSupportedError(f"optimize_indices on {idx.index_type} is not supported")
    codebook = st.params.get("codebook") if st.kind == "PQ" else None
    bounds = sqmod.bounds_of(st.params) if st.kind == "SQ" else None
    num_bits = int(st.params.get("nbits", st.params.get("num_bits", 8)))
    width = st.dim if st.dim is not None else \
        (int(st.params["num_sub_vectors"]) if num_bits == 8
         else int(st.params["num_sub_vectors"]) // 2)
    dtype = np.float32 if st.kind == "FLAT" and idx.metric != "hamming" else np.uint8
    ids, labels, payload = encode_grouped(ds, idx.column, frags, idx.index_type,
                                          idx.metric, idx.centroids, codebook, bounds,
                                          num_bits, width=width, dtype=dtype)
    # (the stored metadata only: a reader keeps arrays in params, the codebook and its
    # transposed copy)
    params = {k: v for k, v in st.params.items() if k != "codebook"
              and isinstance(v, (int, float, str, bool, list, dict, type(None)))}
    field_id = ds.lance_schema.field(idx.column).id()
    return write_index(ds, field_id, idx.index_type, idx.metric, name, idx.centroids,
                       idx.loss, ids, labels, payload, params, codebook, num_bits=num_bits,
                       num_sub_vectors=int(st.params.get("num_sub_vectors", 0)),
                       fragment_ids=[f.fragment_id for f in frags])
