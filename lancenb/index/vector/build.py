"""Build IVF_FLAT / IVF_PQ / IVF_SQ indices in pylance's format and commit them.

Steps (pylance's, see :mod:`.ivf` for the files written):

1. a training sample of the column (``sample_rate * num_partitions`` rows for IVF,
   ``sample_rate * 2**num_bits`` for PQ/SQ; every row when there are fewer), non-null
   finite vectors only, normalised for cosine;
2. IVF centroids by k-means (l2; dot for a dot index), unless ``ivf_centroids`` given;
3. the quantizer: PQ codebooks by k-means per sub-vector on the residuals to the
   nearest centroid (l2/cosine) or the vectors (dot), unless ``pq_codebook`` given; SQ
   bounds = min and max of the sample;
4. every row of every fragment assigned to its nearest centroid and encoded, then
   written grouped by partition (PQ codes transposed per partition); HNSW graphs are
   built, written and dropped one partition at a time.

Memory: the fragments are read in row ranges of ``SCAN_BATCH``, twice (assign, then
encode each batch into its place in one grouped array: the codes are held once), and
a HNSW partition's vectors are decoded only while its graph is built. 1M x 128
IVF_HNSW_SQ peaks at about 0.4x pylance's memory (benchmarks/RESULTS.md).
5. ``index.idx`` and ``auxiliary.idx`` under ``_indices/<uuid>/``, then a CreateIndex
   transaction through ``type(ds).commit``.
"""

from __future__ import annotations

import json
import os
import time
import uuid as uuidlib
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa

from lancenb.errors import InvalidInputError, NotSupportedError
from lancenb.file import LanceFileWriter
from lancenb.index.scalar.common import become
from lancenb.index.vector import pq as pqmod
from lancenb.index.vector import sq as sqmod
from lancenb.index.vector.hnsw import GRAPH_SCHEMA, HNSW_KEY, graph_lengths, iter_graphs
from lancenb.index.vector.ivf import (
    AUX_FILE,
    INDEX_FILE,
    index_dir,
    storage_options_of,
)
from lancenb.index.vector.ivfpb import Ivf, encode_ivf, encode_tensor, write_legacy
from lancenb.index.vector.kmeans import assign, train_kmeans
from lancenb.index.vector.rows import nested_field
from lancenb.io import open_reader
from lancenb.io.pools import ThreadPool
from lancenb.kernels.vector import distance as kd
from lancenb.table.indices import CreateIndex, Index, IndexFile

__all__ = ["build_vector_index", "BuiltIndex", "VECTOR_DETAILS_URL", "sample_vectors",
           "train_pq_codebook", "commit_create_index", "write_index", "as_matrix",
           "encode_pq", "pq_params", "describe_existing", "encode_fragments",
           "encode_grouped"]

BUILD_TYPES = ("IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ", "IVF_HNSW_SQ")
VECTOR_DETAILS_URL = "/lance.index.pb.VectorIndexDetails"
_METRIC_CODES = {"l2": 0, "cosine": 1, "dot": 2, "hamming": 3}
_METRIC_ALIASES = {"l2": "l2", "euclidean": "l2", "cosine": "cosine", "dot": "dot",
                   "hamming": "hamming"}
INDEX_FILE_VERSION = "2.2"  # what pylance 14 writes its index files as
INDEX_VERSION = 1  # the manifest's index_version pylance gives IVF indices
SCAN_BATCH = 16384  # rows a batch of the encode pass: its float copies stay ~10 MB
# workers for independent pieces of a build (PQ sub-vectors): the kernels release the GIL
_POOL = ThreadPool(lambda: os.cpu_count() or 1, "lancenb-vector-build")


class BuiltIndex:
    """What a build wrote: the pieces of the manifest's index entry."""

    def __init__(self, uuid, name, field_id, dataset_version, fragment_ids, files, details):
        self.uuid, self.name, self.field_id = uuid, name, field_id
        self.dataset_version, self.fragment_ids = dataset_version, fragment_ids
        self.files, self.details = files, details


def _norm(metric) -> str:
    m = _METRIC_ALIASES.get(str(metric).lower())
    if m is None:
        raise InvalidInputError(f"metric {metric!r} is not supported for vector indices "
                                "(l2, cosine, dot)")
    return m


def _normalise(x: np.ndarray) -> np.ndarray:
    n = np.sqrt(np.einsum("ij,ij->i", x, x))
    n[n == 0] = 1
    return (x / n[:, None]).astype(np.float32)


def as_matrix(col: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``(vectors float32 (n, d), keep mask)``: null or non-finite rows are dropped."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if _multivector(arr.type):  # every vector of every row (null rows have none)
        arr = arr.flatten()
    if not pa.types.is_fixed_size_list(arr.type):
        raise InvalidInputError(f"a vector index needs a fixed-size list column, got "
                                f"{arr.type}")
    dim = arr.type.list_size
    valid = np.ones(len(arr), bool) if arr.null_count == 0 else \
        ~np.asarray(arr.is_null().to_numpy(zero_copy_only=False))
    child = arr.values.slice(arr.offset * dim, len(arr) * dim)  # null slots included
    if child.null_count:
        child = pa.compute.fill_null(child, float("nan"))
    vals = np.asarray(child.to_numpy(zero_copy_only=False))
    x = vals.astype(np.float32, copy=False).reshape(len(arr), dim)
    keep = valid & np.isfinite(x).all(axis=1)
    return x, keep


def sample_vectors(ds, column: str, size: int, seed: int = 42, fragment_ids=None):
    """Up to ``size`` random non-null, finite vectors of ``column`` (float32 matrix).

    Random rows are taken; when nulls leave too few, the whole column is read and the
    valid rows sampled (pylance also samples among valid rows)."""
    frags = ds.get_fragments()
    if fragment_ids is not None:
        wanted = {int(f) for f in fragment_ids}
        frags = [f for f in frags if f.fragment_id in wanted]
    total = sum(f.count_rows() for f in frags)
    if total == 0:
        raise InvalidInputError("cannot train a vector index on an empty dataset")
    rng = np.random.default_rng(seed)
    if total > size and fragment_ids is None:
        idx = np.sort(rng.choice(total, size, replace=False))
        x, kept = _take_vectors(ds, column, idx)
        if kept >= min(size, total) // 2:
            return x
    parts = [as_matrix(f.to_table(columns=[column]).column(column)) for f in frags]
    x = np.concatenate([p[0][p[1]] for p in parts]) if parts else np.zeros((0, 0))
    if len(x) > size:
        x = x[np.sort(rng.choice(len(x), size, replace=False))]
    return x


TAKE_ROWS = 16384  # rows a sample takes at a time


def _take_vectors(ds, column: str, idx: np.ndarray):
    """``(valid vectors of rows idx, how many)``, taken ``TAKE_ROWS`` rows at a time
    into one array: the whole take's Arrow table and its copies are never held (a
    1M-row build's sample is 256k rows)."""
    pieces, out, filled = [], None, 0
    multi = _multivector(nested_field(ds.schema, column).type)
    for s in range(0, len(idx), TAKE_ROWS):
        xc, kc = as_matrix(ds.take(idx[s:s + TAKE_ROWS].tolist(), columns=[column])
                           .column(column))
        xc = xc if kc.all() else xc[kc]
        if multi:  # (vectors per row vary: gathered, then joined)
            pieces.append(np.array(xc, np.float32))
            continue
        if out is None:
            out = np.empty((len(idx), xc.shape[1]), np.float32)
        out[filled:filled + len(xc)] = xc
        filled += len(xc)
    if multi:
        out = np.concatenate(pieces) if pieces else np.zeros((0, 0), np.float32)
        return out, len(out)
    return out[:filled], filled


def _details(index_type: str, metric: str, num_bits: int, m: int, params: dict) -> bytes:
    """pylance's ``lance.index.pb.VectorIndexDetails``: metric (1), pq {num_bits,
    num_sub_vectors} (4), sq {num_bits} (5) or flat {} (8), build params (9)."""
    from lancenb.index.vector.ivfpb import _put_bytes, _put_varint

    out = bytearray()
    code = _METRIC_CODES[metric]
    if code:
        _put_varint(out, 8)
        _put_varint(out, code)
    if "HNSW" in index_type:  # hnsw {m, ef_construction, max_level}
        h = bytearray()
        for num, v in ((1, 20), (2, 150), (3, 7)):
            _put_varint(h, num << 3)
            _put_varint(h, v)
        _put_bytes(out, 3, bytes(h))
        index_type = index_type.replace("HNSW_", "")
    sub = bytearray()
    if index_type == "IVF_PQ":
        _put_varint(sub, 8)
        _put_varint(sub, num_bits)
        _put_varint(sub, 16)
        _put_varint(sub, m)
        _put_bytes(out, 4, bytes(sub))
    elif index_type == "IVF_SQ":
        _put_varint(sub, 8)
        _put_varint(sub, num_bits)
        _put_bytes(out, 5, bytes(sub))
    else:
        _put_bytes(out, 8, b"")
    for k, v in params.items():
        entry = bytearray()
        _put_bytes(entry, 1, k.encode())
        _put_bytes(entry, 2, str(v).encode())
        _put_bytes(out, 9, bytes(entry))
    return bytes(out)


def _scan(ds, column: str, fragments):
    """``(row ids, vectors, keep)`` per batch of each fragment."""
    for frag in fragments:
        # in row ranges: a fragment's scan would read the whole column first (a 1M-row
        # fragment of 128 floats: 512 MB at once)
        for start in range(0, frag.count_rows(), SCAN_BATCH):
            batch = frag.to_table(columns=[column], with_row_id=True, offset=start,
                                  limit=SCAN_BATCH)
            x, keep = as_matrix(batch.column(column))
            ids = np.asarray(batch.column("_rowid").to_numpy(), dtype=np.uint64)
            if _multivector(batch.column(column).type):  # a row id per vector
                ids = np.repeat(ids, pa.compute.list_value_length(batch.column(column))
                                .fill_null(0).to_numpy(zero_copy_only=False))
            yield ids, x, keep


def _multivector(t: pa.DataType) -> bool:
    """Whether ``t`` is a multivector column: a list of fixed-size lists (pylance
    indexes each vector, under its row's id)."""
    return (pa.types.is_list(t) or pa.types.is_large_list(t)) and \
        pa.types.is_fixed_size_list(t.value_type)


def build_vector_index(ds, column: str, index_type: str, name: str | None = None, *,
                       metric: str = "l2", num_partitions: int | None = None,
                       num_sub_vectors: int | None = None, num_bits: int = 8,
                       sample_rate: int = 256, max_iters: int = 50, ivf_centroids=None,
                       pq_codebook=None, replace: bool = True, fragment_ids=None,
                       index_uuid: str | None = None, commit: bool = True, seed: int = 42,
                       train: bool = True, dataset_out=None, index_file_version=None,
                       row_major: bool = False) -> BuiltIndex:
    """Build a vector index of ``column`` and (with ``commit``) commit it.

    Parameters follow pylance's ``create_index``; ``num_partitions`` defaults to
    ``sqrt(rows)`` and ``num_sub_vectors`` to ``dim / 16`` (or ``dim / 8``) as pylance.
    ``row_major``: PQ codes stored row by row (``"transposed": false``), as pylance 14
    writes the segments of a distributed build given a shared codebook.

    Examples
    --------
    >>> build_vector_index(ds, "v", "IVF_PQ", num_partitions=8,
    ...                    num_sub_vectors=4)  # doctest: +SKIP
    """
    index_type = str(index_type).upper()
    legacy = _file_version(index_file_version) == "Legacy" and index_type == "IVF_PQ"
    if legacy and num_bits != 8:  # (pylance writes them, then fails reading them)
        raise NotSupportedError("legacy IVF_PQ index files hold 8-bit codes only")
    if not train:
        raise NotSupportedError("create_index(train=False) (an empty vector index) is not "
                                "supported by lancenb")
    if index_type not in BUILD_TYPES:
        raise NotSupportedError(f"lancenb builds {', '.join(BUILD_TYPES)} indices, not "
                                f"{index_type}")
    metric = _norm(metric)
    full_type, index_type = index_type, index_type.replace("HNSW_", "")
    field = ds.lance_schema.field(column) if hasattr(ds, "lance_schema") else None
    afield = nested_field(ds.schema, column)  # (a top-level name or a struct path)
    if afield is None or afield.name != column or field is None:
        raise InvalidInputError(f"column {column!r} is not in the dataset "
                                f"(columns: {ds.schema.names})")
    ftype = afield.type.value_type if _multivector(afield.type) else afield.type
    if metric == "hamming" and (index_type != "IVF_FLAT" or not (
            pa.types.is_fixed_size_list(ftype) and ftype.value_type == pa.uint8())):
        raise NotSupportedError(f"lancenb builds hamming indices as IVF_FLAT over "
                                f"fixed-size lists of uint8, not {full_type} over {ftype}")
    if metric != "hamming" and not (pa.types.is_fixed_size_list(ftype) and
                                    pa.types.is_floating(ftype.value_type)):
        raise InvalidInputError(f"column {column!r} of type {ftype} cannot have a "
                                f"{index_type} index: it needs fixed-size lists of floats")
    dim = ftype.list_size
    name = name or f"{column}_idx"
    existing = [e for e in ds.list_indices() if e["name"] == name]
    if existing and not replace:
        raise InvalidInputError(f"index {name!r} already exists (replace=False)")
    frags = ds.get_fragments()
    if fragment_ids is not None:
        wanted = set(int(f) for f in fragment_ids)
        frags = [f for f in frags if f.fragment_id in wanted]
    rows = sum(f.count_rows() for f in frags)
    if num_partitions is None:
        num_partitions = max(1, int(round(np.sqrt(max(rows, 1)))))
    # more partitions than rows cannot be trained: pylance trains what the rows allow
    num_partitions = max(1, min(int(num_partitions), max(rows, 1)))
    num_partitions = int(num_partitions)
    if index_type == "IVF_PQ":
        if num_sub_vectors is None:
            num_sub_vectors = dim // 16 if dim % 16 == 0 else (dim // 8 if dim % 8 == 0
                                                                else 1)
        num_sub_vectors = int(num_sub_vectors)
        if num_sub_vectors <= 0 or dim % num_sub_vectors:
            raise InvalidInputError(f"dimension {dim} is not divisible by num_sub_vectors "
                                    f"{num_sub_vectors}")
        if num_bits not in (4, 8):
            raise InvalidInputError(f"num_bits must be 4 or 8, got {num_bits}")
    elif index_type == "IVF_SQ" and num_bits != 8:
        raise NotSupportedError(f"IVF_SQ with num_bits={num_bits}: lancenb writes 8 bits")

    # 1-2: IVF centroids
    t0 = time.time()
    ivf_metric = "dot" if metric == "dot" else "l2"
    if ivf_centroids is not None:
        centroids = np.asarray(_to_numpy(ivf_centroids), dtype=np.float32).reshape(-1, dim)
        num_partitions = len(centroids)
        loss = None
    else:
        sample = sample_vectors(ds, column, sample_rate * num_partitions, seed,
                                fragment_ids=fragment_ids)
        if metric == "cosine":
            sample = _normalise(sample)
        if len(sample) < num_partitions:
            raise InvalidInputError(f"{len(sample)} vectors cannot make {num_partitions} "
                                    "partitions (need at least one row per partition)")
        if metric == "hamming":
            centroids, loss = _train_binary(sample.astype(np.uint8), num_partitions,
                                            max_iters, seed)
        else:
            centroids, loss = train_kmeans(sample, num_partitions, metric=ivf_metric,
                                           max_iters=max_iters, seed=seed)
        del sample  # (not held through the encode pass)

    # 3: quantizer
    params: dict = {}
    codebook = None
    if index_type in ("IVF_PQ", "IVF_SQ"):
        qsample = sample_vectors(ds, column, sample_rate * (1 << num_bits), seed + 1,
                                 fragment_ids=fragment_ids)
        if metric == "cosine":
            qsample = _normalise(qsample)
    if index_type == "IVF_PQ":
        if pq_codebook is not None:
            codebook = np.asarray(_to_numpy(pq_codebook), np.float32).reshape(
                num_sub_vectors, 1 << num_bits, dim // num_sub_vectors)
        else:
            train = qsample
            if pqmod.uses_residual(metric):
                labels, _ = assign(qsample, centroids, "l2")
                train = qsample - centroids[labels]
            codebook = train_pq_codebook(train, num_sub_vectors, num_bits, max_iters, seed)
        params = pq_params(num_bits, num_sub_vectors, dim)
        if row_major:  # (IVF_HNSW_PQ segments too, as pylance)
            params["transposed"] = False
    elif index_type == "IVF_SQ":
        lo, hi = (float(qsample.min()), float(qsample.max())) if len(qsample) else (0., 0.)
        params = {"dim": dim, "num_bits": num_bits, "bounds": {"start": lo, "end": hi}}
    else:
        params = {"dim": dim}
    qsample = train = None

    # 4: assign and encode every row
    bounds = (lo, hi) if index_type == "IVF_SQ" else None
    width = {"IVF_FLAT": dim, "IVF_SQ": dim}.get(index_type) or \
        (num_sub_vectors if num_bits == 8 else num_sub_vectors // 2)
    pdtype = np.float32 if index_type == "IVF_FLAT" and metric != "hamming" else np.uint8
    row_ids, labels, payload = encode_grouped(ds, column, frags, index_type, metric,
                                              centroids, codebook, bounds, num_bits,
                                              width=width, dtype=pdtype)
    build_params = {"lance.ivf.sample_rate": sample_rate, "lance.ivf.max_iters": max_iters}
    if index_type == "IVF_PQ":
        build_params.update({"lance.pq.sample_rate": sample_rate,
                             "lance.pq.max_iters": max_iters})
    if legacy:  # pylance's single-file IVF_PQ layout (see ivfpb)
        uid = index_uuid or str(uuidlib.uuid4())
        size = write_legacy(f"{index_dir(ds, uid)}/{INDEX_FILE}", storage_options_of(ds),
                            name=name, column=column, dataset_version=ds.version,
                            metric=metric, centroids=centroids, loss=loss, row_ids=row_ids,
                            labels=labels, codes=payload, codebook=codebook)
        built = BuiltIndex(uid, name, field.id(), ds.version,
                           sorted(f.fragment_id for f in frags), [(INDEX_FILE, size)],
                           _details(full_type, metric, num_bits, num_sub_vectors,
                                    build_params))
        built.build_seconds = time.time() - t0
        if commit:
            commit_create_index(ds, [built], existing, dataset_out=dataset_out)
        return built
    built = write_index(ds, field.id(), full_type, metric, name, centroids, loss, row_ids,
                        labels, payload, params, codebook, num_bits=num_bits,
                        num_sub_vectors=num_sub_vectors or 0,
                        fragment_ids=[f.fragment_id for f in frags],
                        build_params=build_params, index_uuid=index_uuid,
                        transposed=params.get("transposed", True))
    built.build_seconds = time.time() - t0
    if commit:
        commit_create_index(ds, [built], existing, dataset_out=dataset_out)
    return built


def _file_version(v) -> str:
    """pylance's ``index_file_version`` (an ``IndexFileVersion`` or its name) as
    ``"V3"`` (the default) or ``"Legacy"``."""
    text = str(getattr(v, "value", v) or "V3")
    out = {"v3": "V3", "legacy": "Legacy"}.get(text.lower())
    if out is None:
        raise InvalidInputError(f"index_file_version must be 'V3' or 'Legacy', not {v!r}")
    return out


def encode_fragments(ds, column: str, frags, index_type: str, metric: str, centroids,
                     codebook=None, bounds=None, num_bits: int = 8):
    """``(row ids, partitions, encoded rows)`` per batch of ``frags`` (null and
    non-finite vectors skipped), with a trained model: IVF ``centroids`` and the PQ
    ``codebook`` or SQ ``bounds``."""
    centroids = _centroids(centroids, metric)
    for ids, x in _valid_batches(ds, column, frags, metric):
        labels = _labels(x, centroids, metric)
        yield ids, labels, _encode(x, labels, index_type, metric, centroids, codebook,
                                   bounds, num_bits)


def encode_grouped(ds, column: str, frags, index_type: str, metric: str, centroids,
                   codebook=None, bounds=None, num_bits: int = 8, *, width: int, dtype):
    """What :func:`encode_fragments` yields, grouped by partition (a stable sort of
    the batches one after another), with the encoded rows held once: a first
    pass assigns every batch's rows (their ids and partitions kept, each row's place
    then known), a second reads the batches again and encodes each into its place."""
    centroids = _centroids(centroids, metric)
    nparts = len(centroids)
    ids_l, lab_l = [], []
    for ids, x in _valid_batches(ds, column, frags, metric):
        ids_l.append(ids)
        lab_l.append(_labels(x, centroids, metric))
    counts = np.zeros(nparts, np.int64)
    for lab in lab_l:
        counts += np.bincount(lab, minlength=nparts)
    total = int(counts.sum())
    row_ids = np.empty(total, np.uint64)
    labels = np.repeat(np.arange(nparts, dtype=lab_l[0].dtype if lab_l else np.int32),
                       counts)
    payload = np.empty((total, width), dtype)
    nxt = np.cumsum(counts) - counts  # each partition's next free row
    for b, lab in enumerate(lab_l):  # each row's place (a stable sort of the batches)
        order = np.argsort(lab, kind="stable")
        here = np.bincount(lab, minlength=nparts)
        first = np.cumsum(here) - here
        dest = np.empty(len(lab), np.int64)
        dest[order] = nxt[lab[order]] + (np.arange(len(lab)) - first[lab[order]])
        row_ids[dest] = ids_l[b]
        ids_l[b] = dest
        nxt += here
    b = 0
    for ids, x in _valid_batches(ds, column, frags, metric):
        dest = ids_l[b]
        if len(ids) != len(dest) or not np.array_equal(row_ids[dest], ids):
            raise InvalidInputError(f"column {column!r} changed while it was indexed")
        payload[dest] = _encode(x, lab_l[b], index_type, metric, centroids, codebook,
                                bounds, num_bits)
        ids_l[b] = lab_l[b] = None
        b += 1
    if b != len(lab_l):
        raise InvalidInputError(f"column {column!r} changed while it was indexed")
    return row_ids, labels, payload


def _centroids(centroids, metric: str) -> np.ndarray:
    return np.ascontiguousarray(centroids, np.uint8 if metric == "hamming" else np.float32)


def _valid_batches(ds, column: str, frags, metric: str):
    """``(row ids, vectors)`` per batch: valid rows only, normalised for cosine, bytes
    for hamming; batches without valid rows skipped."""
    for ids, x, keep in _scan(ds, column, frags):
        ids, x = ids[keep], x[keep]
        if not len(ids):
            continue
        if metric == "hamming":  # binary vectors: bytes as they are, nearest by bits
            x = x.astype(np.uint8)
        elif metric == "cosine":
            x = _normalise(x)
        yield ids, x


def _labels(x: np.ndarray, centroids: np.ndarray, metric: str) -> np.ndarray:
    if metric == "hamming":
        return _nearest_binary(x, centroids)[0]
    return assign(x, centroids, "dot" if metric == "dot" else "l2")[0]


def _encode(x, labels, index_type, metric, centroids, codebook, bounds, num_bits):
    """A batch's encoded rows (``x`` as :func:`_valid_batches` gives it)."""
    index_type = index_type.replace("HNSW_", "")
    if metric == "hamming" or index_type == "IVF_FLAT":
        return x
    if index_type == "IVF_PQ":
        key = x - centroids[labels] if pqmod.uses_residual(metric) else x
        return encode_pq(codebook, key, num_bits)
    return sqmod.quantize(x, bounds[0], bounds[1])


def _nearest_binary(x: np.ndarray, centroids: np.ndarray):
    """Each uint8 row's nearest centroid by hamming distance (first on ties) and it."""
    labels = np.empty(len(x), np.int64)
    dists = np.empty(len(x), np.float32)
    if kd.nearest_of_many(np.ascontiguousarray(x), np.ascontiguousarray(centroids),
                          kd.HAMMING, labels, dists) != kd.OK:
        raise InvalidInputError(f"hamming: vectors {x.shape}, centroids {centroids.shape}")
    return labels, dists


def _train_binary(x: np.ndarray, k: int, max_iters: int, seed: int):
    """k-modes of uint8 (bit) vectors: ``k`` distinct random rows to start, then each
    centroid the per-bit majority of its rows (an empty one kept) until nothing moves;
    ``(centroids uint8 (k, d), total hamming distance)``."""
    rng = np.random.default_rng(seed)
    cent = x[rng.choice(len(x), k, replace=False)].copy()
    bits = np.unpackbits(x, axis=1).astype(np.int64)
    labels, dists = _nearest_binary(x, cent)
    for _ in range(max(1, int(max_iters))):
        sums = np.zeros((k, bits.shape[1]), np.int64)
        np.add.at(sums, labels, bits)
        counts = np.bincount(labels, minlength=k)
        maj = (2 * sums > counts[:, None]).astype(np.uint8)
        new = np.where(counts[:, None] > 0, np.packbits(maj, axis=1), cent)
        if np.array_equal(new, cent):
            break
        cent = new
        labels, dists = _nearest_binary(x, cent)
    return cent, float(dists.sum())


def pq_params(num_bits: int, num_sub_vectors: int, dim: int) -> dict:
    """The PQ storage metadata pylance writes (see :mod:`.ivf`)."""
    return {"codebook_position": 2, "nbits": num_bits, "num_sub_vectors": num_sub_vectors,
            "dimension": dim, "codebook_tensor": [], "transposed": True}


def write_index(ds, field_id: int, index_type: str, metric: str, name: str, centroids,
                loss, row_ids, labels, payload, params: dict, codebook, *, num_bits=8,
                num_sub_vectors=0, fragment_ids=(), build_params=None,
                index_uuid=None, transposed=True) -> BuiltIndex:
    """Write the two index files from each row's id, partition (``labels``) and
    encoded vector (``payload``: row-major codes or vectors) and describe them.

    Rows are grouped by partition (stable), PQ codes transposed per partition (unless
    ``transposed`` is False: a distributed segment's row-major codes)."""
    num_partitions = len(centroids)
    width = payload.shape[1]
    if len(labels) > 1 and (labels[1:] < labels[:-1]).any():  # (else grouped already)
        order = np.argsort(labels, kind="stable")
        row_ids, labels, payload = row_ids[order], labels[order], payload[order]
        del order
    lengths = np.bincount(labels, minlength=num_partitions).astype(np.uint32)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.uint64)
    graph = None
    if "HNSW" in index_type:  # the graph links the decoded vectors, a partition at a time
        def decode(start, n, rows=payload, labels=labels):
            return _decode(index_type, metric, rows[start:start + n],
                           labels[start:start + n], centroids, params, codebook, num_bits)

        graph = (*graph_lengths(offsets, lengths),
                 iter_graphs(None, offsets, lengths, decode=decode))
    if index_type.endswith("PQ") and transposed:  # sub-vector major in each partition
        flat = np.empty(payload.size, np.uint8)
        for p in range(num_partitions):
            s, n = int(offsets[p]), int(lengths[p])
            flat[s * width:(s + n) * width] = pqmod.transpose_codes(payload[s:s + n])
        payload = flat.reshape(-1, width)
    uid = index_uuid or str(uuidlib.uuid4())
    files = _write_files(index_dir(ds, uid), storage_options_of(ds), index_type, metric,
                         centroids, loss, row_ids, payload, offsets, lengths, params,
                         codebook, width, graph)
    details = _details(index_type, metric, num_bits, num_sub_vectors, build_params or {})
    return BuiltIndex(uid, name, field_id, ds.version, sorted(fragment_ids), files, details)


def _to_numpy(obj):
    if isinstance(obj, pa.ExtensionArray):  # fixed-shape tensors: their storage lists
        obj = obj.storage
    if isinstance(obj, (pa.FixedSizeListArray, pa.ChunkedArray)):
        arr = obj.combine_chunks() if isinstance(obj, pa.ChunkedArray) else obj
        return np.asarray(arr.flatten().to_numpy(zero_copy_only=False))
    return np.asarray(obj)


def train_pq_codebook(train: np.ndarray, m: int, num_bits: int, max_iters: int,
                      seed: int = 42) -> np.ndarray:
    """PQ codebook ``(m, 2**num_bits, dim/m)``: k-means of each sub-vector."""
    kk = 1 << num_bits
    if len(train) < kk:
        raise InvalidInputError(f"PQ training needs at least {kk} rows, the dataset has "
                                f"{len(train)}")
    sd = train.shape[1] // m
    cb = np.empty((m, kk, sd), np.float32)

    def one(s):  # sub-vectors train independently: one per worker (nogil kernels)
        cb[s], _ = train_kmeans(np.ascontiguousarray(train[:, s * sd:(s + 1) * sd]), kk,
                                metric="l2", max_iters=max_iters, seed=seed + s)

    list(_POOL.get().map(one, range(m)))
    return cb


def encode_pq(codebook: np.ndarray, x: np.ndarray, num_bits: int) -> np.ndarray:
    """Row-major codes (4-bit: two sub-vectors a byte, low nibble first)."""
    m, kk, sd = codebook.shape
    codes = np.empty((len(x), m), np.uint8)

    def one(s):
        codes[:, s] = assign(np.ascontiguousarray(x[:, s * sd:(s + 1) * sd]), codebook[s],
                             "l2")[0]

    list(_POOL.get().map(one, range(m)))
    if num_bits == 4:
        codes = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    return codes


def _decode(index_type, metric, payload, labels, centroids, params, codebook, num_bits):
    """The vectors the stored codes stand for (row-major codes in, float32 out)."""
    if index_type.endswith("FLAT"):
        return payload
    if index_type.endswith("SQ"):
        lo, hi = sqmod.bounds_of(params)
        return (np.float32(lo) + payload.astype(np.float32) *
                np.float32((hi - lo) / 255.0)).astype(np.float32)
    m = codebook.shape[0]
    codes = payload
    if num_bits == 4:
        codes = np.empty((len(payload), m), np.uint8)
        codes[:, 0::2], codes[:, 1::2] = payload & 15, payload >> 4
    out = np.concatenate([codebook[s][codes[:, s]] for s in range(m)], axis=1)
    if pqmod.uses_residual(metric):
        out = out + np.asarray(centroids, np.float32)[labels]
    return out.astype(np.float32)


def _write_files(base, opts, index_type, metric, centroids, loss, row_ids, payload,
                 offsets, lengths, params, codebook, width, graph=None) -> list:
    nparts = len(centroids)
    # auxiliary.idx: row ids and codes by partition
    base_type = index_type.replace("HNSW_", "")
    col_name = {"IVF_FLAT": "flat", "IVF_PQ": pqmod.CODE_COLUMN,
                "IVF_SQ": sqmod.CODE_COLUMN}[base_type]
    vtype = pa.float32() if base_type == "IVF_FLAT" and metric != "hamming" else pa.uint8()
    schema = pa.schema([pa.field("_rowid", pa.uint64()),
                        pa.field(col_name, pa.list_(pa.field("item", vtype), width),
                                 nullable=base_type != "IVF_FLAT")])
    values = pa.array(np.ascontiguousarray(payload).reshape(-1), type=vtype)
    table = pa.table([pa.array(row_ids, pa.uint64()),
                      pa.FixedSizeListArray.from_arrays(values, width)], schema=schema)
    aux_path = f"{base}/{AUX_FILE}"
    with LanceFileWriter(aux_path, schema, version=INDEX_FILE_VERSION,
                         storage_options=opts) as w:
        pos = w.add_global_buffer(encode_ivf(Ivf(None, offsets, lengths)))
        if codebook is not None:
            # shape (K, dim) as pylance's, bytes [m][K][dim/m] (see ivf.py)
            tensor = encode_tensor(np.ascontiguousarray(codebook).reshape(
                codebook.shape[1], -1))
            params = dict(params, codebook_position=w.add_global_buffer(tensor))
        w.add_schema_metadata("distance_type", metric)
        w.add_schema_metadata("storage_metadata", json.dumps([json.dumps(
            params, separators=(",", ":"))]))
        w.add_schema_metadata("lance:ivf", str(pos))
        if len(table):
            w.write_batch(table)
    # index.idx: the centroids and a sub-index per partition (FLAT: none; HNSW: graph)
    idx_path = f"{base}/{INDEX_FILE}"
    schema = GRAPH_SCHEMA if graph is not None else \
        pa.schema([pa.field("__flat_marker", pa.uint64(), nullable=False)])
    with LanceFileWriter(idx_path, schema, version=INDEX_FILE_VERSION,
                         storage_options=opts) as w:
        if graph is not None:
            g_off, g_len, parts = graph
            ivf = Ivf(centroids, g_off, g_len, loss)
        else:
            zeros = np.zeros(nparts, np.uint64)
            ivf = Ivf(centroids, zeros, zeros.astype(np.uint32), loss)
        pos = w.add_global_buffer(encode_ivf(ivf))
        w.add_schema_metadata("lance:index", json.dumps(
            {"type": index_type, "distance_type": metric}, separators=(",", ":")))
        if graph is not None:
            w.add_schema_metadata(HNSW_KEY, "")  # (its place among the keys; set below)
        else:
            w.add_schema_metadata("lance:flat", json.dumps([""] * nparts,
                                                           separators=(",", ":")))
        w.add_schema_metadata("lance:ivf", str(pos))
        if graph is not None:  # each partition's graph built, written and dropped
            metas = []
            rows = 0
            for table, meta in parts:
                metas.append(meta)
                if table is not None and len(table):
                    w.write_batch(table)
                    rows += len(table)
            if rows != int(np.sum(g_len, dtype=np.int64)):
                raise InvalidInputError(f"HNSW graphs of {rows} rows, expected "
                                        f"{int(np.sum(g_len, dtype=np.int64))}")
            w.add_schema_metadata(HNSW_KEY, json.dumps(metas, separators=(",", ":")))
    return [(n, _size(f"{base}/{n}", opts)) for n in (AUX_FILE, INDEX_FILE)]


def _size(uri: str, opts) -> int:
    r = open_reader(uri, opts)
    try:
        return int(r.size())
    finally:
        r.close()


def describe_existing(ds, entry, idx) -> BuiltIndex:
    """A :class:`BuiltIndex` for an existing segment (``entry`` of ``list_indices()``,
    ``idx`` its opened :class:`~lancenb.index.vector.ivf.VectorIndex`), to commit it
    again unchanged."""
    st = idx.storage
    num_bits = int(st.params.get("nbits", st.params.get("num_bits", 8)))
    details = _details(idx.index_type, idx.metric, num_bits,
                       int(st.params.get("num_sub_vectors", 0)), {})
    opts = storage_options_of(ds)
    files = [(n, _size(f"{index_dir(ds, entry['uuid'])}/{n}", opts))
             for n in (AUX_FILE, INDEX_FILE)]
    out = BuiltIndex(entry["uuid"], entry["name"], ds.lance_schema.field(idx.column).id(),
                     entry["version"], sorted(int(f) for f in entry["fragment_ids"]), files,
                     details)
    return out


def commit_create_index(ds, built: list, removed: list, *, dataset_out=None, kept=()):
    """Commit a CreateIndex adding ``built`` (:class:`BuiltIndex` list) and removing
    ``removed`` (entries of ``ds.list_indices()``); ``dataset_out`` (a dataset object)
    moves to the new version, as pylance's methods move the dataset they are called on.

    A CreateIndex drops every index named as a new one (pylance's rule), so segments
    that must stay beside a new one of the same name are listed again: ``kept`` are
    :class:`BuiltIndex` descriptions of them (see :func:`describe_existing`)."""
    now = datetime.now(timezone.utc)
    new = [Index(uuid=b.uuid, name=b.name, fields=[b.field_id],
                 dataset_version=b.dataset_version, fragment_ids=set(b.fragment_ids),
                 index_version=INDEX_VERSION, created_at=now,
                 files=[IndexFile(n, sz) for n, sz in b.files],
                 index_details=(VECTOR_DETAILS_URL, b.details)) for b in [*kept, *built]]
    ids = {f.name(): f.id() for f in ds.lance_schema.fields()}
    old = [Index(uuid=e["uuid"], name=e["name"], fields=[ids.get(f, -1) for f in e["fields"]],
                 dataset_version=e["version"], fragment_ids=set(e["fragment_ids"]),
                 index_version=INDEX_VERSION) for e in removed]
    # (the table layer's CreateIndex is what LanceOperation.CreateIndex extends)
    out = type(ds).commit(ds.uri, CreateIndex(new_indices=new, removed_indices=old),
                          read_version=ds.version, storage_options=storage_options_of(ds))
    if dataset_out is not None and out is not None:
        become(dataset_out, out)  # (its later commits move dataset_out)
    return out
