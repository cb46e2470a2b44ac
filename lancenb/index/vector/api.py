"""The vector-index methods of :class:`~lancenb.dataset.LanceDataset` (a mixin).

``create_index`` (IVF_FLAT, IVF_PQ, IVF_SQ built here; scalar types go to
``create_scalar_index``), ``drop_index``, ``describe_indices`` and
``index_statistics``, with pylance's parameters, checks and messages. They use the
dataset's public API only (``uri``, ``version``, ``schema``, ``lance_schema``,
``get_fragments()``, ``list_indices()``, ``type(ds).commit``).
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from lancenb.errors import IndexExistsError, IndexNotFoundError, LanceError, NotSupportedError

__all__ = ["VectorIndexMethods", "IndexDescription", "VECTOR_INDEX_TYPES",
           "IndexNotFoundError", "IndexExistsError", "vector_index_stats"]

VECTOR_INDEX_TYPES = ("IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ",
                      "IVF_HNSW_SQ", "IVF_RQ")
_SCALAR_TYPES = ("BTREE", "BITMAP", "LABEL_LIST", "INVERTED", "FTS", "NGRAM", "ZONEMAP",
                 "BLOOMFILTER", "RTREE", "MINHASHLSH", "JSON")
_METRICS = ("l2", "cosine", "euclidean", "dot", "hamming")
_TYPE_URLS = {"BTree": "/lance.index.pb.BTreeIndexDetails",
              "Bitmap": "/lance.index.pb.BitmapIndexDetails",
              "LabelList": "/lance.index.pb.LabelListIndexDetails",
              "Inverted": "/lance.index.pb.InvertedIndexDetails",
              "NGram": "/lance.index.pb.NGramIndexDetails",
              "ZoneMap": "/lance.index.pb.ZoneMapIndexDetails"}
VECTOR_TYPE_URL = "/lance.index.pb.VectorIndexDetails"


def _details_type_urls(ds) -> dict:
    """``{uuid: type URL of its details}`` as the manifest stores them (pylance reports
    those: ``/lance.table.BTreeIndexDetails`` and ``/lance.index.pb.BloomFilterIndexDetails``
    alike)."""
    from lancenb.table.indices import index_from_pb, parse_section

    raw = ds.snapshot.manifest.index_section_bytes()
    found = (index_from_pb(m) for m in parse_section(raw, "index section"))
    return {i.uuid: i.index_details[0] for i in found if i.index_details}


@dataclass
class IndexSegmentDescription:
    """One physical segment (one uuid) of an index."""

    uuid: str
    fragment_ids: object
    dataset_version_at_last_update: int
    index_version: int | None = None
    size_bytes: int | None = None
    base_id: int | None = None
    created_at: object = None
    covering_fields: list = field(default_factory=list)


@dataclass
class IndexDescription:
    """One logical index, as pylance's ``describe_indices`` describes it."""

    name: str
    type_url: str
    index_type: str
    num_rows_indexed: int
    fields: list
    field_names: list
    num_segments: int
    total_size_bytes: int | None = None
    segments: list = field(default_factory=list)
    details: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        return (f"IndexDescription(name={self.name!r}, type_url={self.type_url!r}, "
                f"num_rows_indexed={self.num_rows_indexed}, fields={self.fields}, "
                f"field_names={json.dumps(self.field_names)}, num_segments={self.num_segments}, "
                f"total_size_bytes={self.total_size_bytes})")


def _check_vector_column(ds, column: str, num_sub_vectors):
    lf = ds.lance_schema.field_case_insensitive(column)
    if lf is None:
        raise KeyError(f"{column} not found in schema")
    t = lf.to_arrow().type
    if pa.types.is_fixed_size_list(t):
        dim, elem = t.list_size, t.value_type
    elif pa.types.is_list(t) and pa.types.is_fixed_size_list(t.value_type):
        dim, elem = t.value_type.list_size, t.value_type.value_type
    else:
        raise TypeError(f"Vector column {column} must be FixedSizeListArray 1-dimensional "
                        f"FixedShapeTensorArray, got {t}")
    if num_sub_vectors is not None and dim % num_sub_vectors != 0:
        raise ValueError(f"dimension ({dim}) must be divisible by num_sub_vectors "
                         f"({num_sub_vectors})")
    if not (pa.types.is_floating(elem) or pa.types.is_uint8(elem)):
        raise TypeError(f"Vector column {column} must have floating value type, got {elem}")
    return (column if "." in column else lf.name()), dim  # (a struct path kept whole)


def _centroids_array(ivf_centroids, num_partitions):
    if isinstance(ivf_centroids, np.ndarray):
        if ivf_centroids.ndim != 2:
            raise ValueError(f"Ivf centroids must be 2D array: (clusters, dim), got "
                             f"{ivf_centroids.shape}")
        if ivf_centroids.shape[0] == 0:
            raise ValueError(f"Ivf centroids must have at least one cluster, got "
                             f"{ivf_centroids.shape}")
        if num_partitions is not None and ivf_centroids.shape[0] != num_partitions:
            raise ValueError(f"Ivf centroids has {ivf_centroids.shape[0]} clusters, but "
                             f"num_partitions={num_partitions}")
        if ivf_centroids.dtype not in (np.float16, np.float32, np.float64):
            raise TypeError(f"IVF centroids must be floating numbergot {ivf_centroids.dtype}")
    return ivf_centroids


class VectorIndexMethods:
    """Dataset methods that build and manage vector indices (pylance's names)."""

    def create_index(self, column, index_type, name: str | None = None, metric: str = "L2",
                     replace: bool = False, num_partitions: int | None = None,
                     ivf_centroids=None, pq_codebook=None, num_sub_vectors: int | None = None,
                     accelerator=None, index_cache_size=None, shuffle_partition_batches=None,
                     shuffle_partition_concurrency=None, ivf_centroids_file=None,
                     precomputed_partition_dataset=None, storage_options=None,
                     filter_nan: bool = True, train: bool = True, fragment_ids=None,
                     index_uuid: str | None = None, *, target_partition_size=None,
                     _uncommitted: bool = False, **kwargs):
        """Build an index on ``column`` and commit it; this dataset moves to the new
        version. Returns the dataset.

        Vector types ``IVF_FLAT``, ``IVF_PQ`` (``num_sub_vectors`` required, ``num_bits``
        4 or 8) and ``IVF_SQ`` are built in pylance's format; scalar types (``BTREE``,
        ``BITMAP``, ...) go to :meth:`create_scalar_index`.

        Examples
        --------
        >>> ds.create_index("v", "IVF_PQ", num_partitions=256,
        ...                 num_sub_vectors=16)  # doctest: +SKIP
        """
        if isinstance(index_type, str) and index_type.upper() in _SCALAR_TYPES:
            return self.create_scalar_index(column, index_type, name=name, replace=replace,
                                            train=train, fragment_ids=fragment_ids,
                                            index_uuid=index_uuid, **kwargs)
        columns = [column] if isinstance(column, str) else list(column)
        if len(columns) != 1:
            raise NotSupportedError("a vector index covers one column")
        col, dim = _check_vector_column(self, columns[0], num_sub_vectors)
        if index_cache_size is not None:
            warnings.warn("The 'index_cache_size' parameter of create_index is ignored. "
                          "The index cache is sized on the dataset, via "
                          "lance.dataset(..., index_cache_size_bytes=...) or a Session.",
                          DeprecationWarning, stacklevel=2)
        if not isinstance(metric, str) or metric.lower() not in _METRICS:
            raise ValueError(f"Metric {metric} not supported.")
        kind = str(index_type).upper()
        if kind not in VECTOR_INDEX_TYPES:
            raise NotImplementedError(f"Only {list(VECTOR_INDEX_TYPES)} index types "
                                      f"supported. Got {kind}")
        if ivf_centroids is not None and ivf_centroids_file is not None:
            raise ValueError("ivf_centroids and ivf_centroids_file cannot be provided at "
                             "the same time")
        if ivf_centroids_file is not None:
            ivf_centroids = np.load(ivf_centroids_file)
            num_partitions = ivf_centroids.shape[0]
        if isinstance(num_partitions, float):
            warnings.warn("num_partitions is float, converting to int", stacklevel=2)
            num_partitions = int(num_partitions)
        elif num_partitions is not None and not isinstance(num_partitions, (int, np.integer)):
            raise TypeError(f"num_partitions must be int, got {type(num_partitions)}")
        if ivf_centroids is None and pq_codebook is not None:
            raise ValueError("ivf_centroids must be specified when pq_codebook is provided")
        if ivf_centroids is not None:
            ivf_centroids = _centroids_array(ivf_centroids, num_partitions)
        num_bits = int(kwargs.pop("num_bits", 8))
        if "PQ" in kind:
            if num_sub_vectors is None:
                raise ValueError("num_partitions and num_sub_vectors are required for IVF_PQ")
            if isinstance(pq_codebook, np.ndarray):
                k = 2 ** num_bits
                if pq_codebook.ndim != 3 or pq_codebook.shape[0] != num_sub_vectors or \
                        pq_codebook.shape[1] != k:
                    raise ValueError(f"PQ codebook must be 3D array: (sub_vectors, {k}, dim) "
                                     f"for num_bits={num_bits}, got {pq_codebook.shape}")
        if kind == "IVF_RQ":
            raise NotSupportedError("lancenb cannot build IVF_RQ indices")
        if accelerator is not None and kind == "IVF_PQ":
            # a torch device or its name ("cuda", "cuda:N", "mps" as pylance accepts;
            # "cpu" trains as without one); other types build on the CPU, as pylance
            device = str(accelerator)
            if isinstance(accelerator, str) and not (
                    re.fullmatch(r"cuda(:\d+)?", device) or device in ("mps", "cpu")):
                raise ValueError("Train ivf centroids on accelerator: only support 'cuda' "
                                 f"or 'mps' as accelerator, got '{accelerator}'.")
            if device.split(":")[0] in ("cuda", "mps"):
                raise NotSupportedError("index training on a GPU (torch) is not supported "
                                        "by lancenb")
        if metric.lower() == "hamming" and str(index_type).upper() != "IVF_FLAT":
            raise NotSupportedError("lancenb builds hamming vector indices as IVF_FLAT only")
        if num_partitions is None and target_partition_size:
            rows = self.count_rows()
            num_partitions = max(1, rows // int(target_partition_size))
        name = name or f"{col}_idx"
        if not _uncommitted and not replace and \
                any(e["name"] == name for e in self.list_indices()):
            raise IndexExistsError(f"Index name '{name}' already exists, please specify a "
                                   f"different name or use replace=True")
        from lancenb.index.vector.build import build_vector_index

        built = build_vector_index(
            self, col, kind, name, metric=metric.lower(), num_partitions=num_partitions,
            num_sub_vectors=num_sub_vectors, num_bits=num_bits, ivf_centroids=ivf_centroids,
            pq_codebook=pq_codebook, replace=True, fragment_ids=fragment_ids,
            index_uuid=index_uuid, train=train,
            sample_rate=int(kwargs.pop("sample_rate", 256)),
            max_iters=int(kwargs.pop("max_iters", 50)), dataset_out=self,
            index_file_version=kwargs.pop("index_file_version", None),
            commit=not _uncommitted,
            # (a shared codebook: row-major codes, as pylance's segments)
            row_major=_uncommitted and pq_codebook is not None)
        if _uncommitted:  # create_index_uncommitted: the segment's metadata
            from lancenb.index.distributed import segment_index

            return segment_index(built)
        return self

    def drop_index(self, name: str) -> None:
        """Remove the index ``name`` (all its segments) in a new version.

        Examples
        --------
        >>> ds.drop_index("v_idx")  # doctest: +SKIP
        """
        gone = [e for e in self.list_indices() if e["name"] == name]
        if not gone:
            raise IndexNotFoundError(f"Lance index not found: name={name}")
        from lancenb.index.vector.build import commit_create_index

        commit_create_index(self, [], gone, dataset_out=self)

    def describe_indices(self) -> list:
        """One :class:`IndexDescription` per index name (its segments together)."""
        out: dict[str, IndexDescription] = {}
        counts = {f.fragment_id: f.count_rows() for f in self.get_fragments()}
        ids = {f.name(): f.id() for f in _walk(self.lance_schema.fields())}
        stored = _details_type_urls(self)
        for e in self.list_indices():
            t = e["type"]
            url = VECTOR_TYPE_URL if t.startswith("IVF") or t == "Vector" else \
                stored.get(e["uuid"]) or _TYPE_URLS.get(t, f"/lance.index.pb.{t}IndexDetails")
            rows = sum(counts.get(int(f), 0) for f in e["fragment_ids"])
            vector = url == VECTOR_TYPE_URL
            size = _files_size(self, e["uuid"]) if vector else None
            seg = IndexSegmentDescription(e["uuid"], e["fragment_ids"], e["version"],
                                          1 if vector else None, size, e.get("base_id"))
            d = out.get(e["name"])
            if d is None:
                out[e["name"]] = IndexDescription(
                    name=e["name"], type_url=url, index_type=t, num_rows_indexed=rows,
                    fields=[ids.get(f, -1) for f in e["fields"]], field_names=e["fields"],
                    num_segments=1, segments=[seg], total_size_bytes=size,
                    details=_vector_details(self, e) if vector else {})
            else:
                d.num_rows_indexed += rows
                if size is not None and d.total_size_bytes is not None:
                    d.total_size_bytes += size
                d.num_segments += 1
                d.segments.append(seg)
        return list(out.values())

    def get_ivf_model(self, index_name: str):
        """The IVF model (:class:`lancenb.indices.IvfModel`: centroids as fixed-size
        lists, distance type) of the vector index ``index_name``, or None."""
        from lancenb.index.vector.ivf import open_vector_index

        entries = [e for e in self.list_indices() if e["name"] == index_name]
        if not entries:
            raise IndexNotFoundError(f"Index not found: {index_name}")
        if not entries[0]["type"].startswith("IVF"):
            return None
        idx = open_vector_index(self, entries[0])
        c = idx.centroids
        arr = pa.FixedSizeListArray.from_arrays(pa.array(c.reshape(-1), pa.float32()),
                                                c.shape[1])
        from lancenb.index.vector.models import IvfModel

        return IvfModel(arr, idx.metric)

    def centroids(self, *, index_name: str | None = None, column: str | None = None):
        """IVF centroids (fixed-size lists) of ``index_name``, or of the first IVF
        index on ``column``; None when the index has none.

        Examples
        --------
        >>> ds.centroids(index_name="vector_idx")  # doctest: +SKIP
        """
        if index_name is None:
            if column is None:
                raise ValueError("Must provide 'index_name' or 'column'.")
            names = [e["name"] for e in self.list_indices()
                     if [f.lower() for f in e["fields"]] == [column.lower()]
                     and e["type"].startswith("IVF")]
            if not names:
                raise KeyError(f"No IVF index for column '{column}'")
            index_name = names[0]
        ivf = self.get_ivf_model(index_name)
        return None if ivf is None else ivf.centroids

    def index_statistics(self, index_name: str) -> dict:
        """pylance's statistics of a vector index (deprecated there, as here: use
        ``ds.stats.index_stats``)."""
        warnings.warn("LanceDataset.index_statistics() is deprecated, use "
                      "LanceDataset.stats.index_stats() instead", DeprecationWarning,
                      stacklevel=2)
        return vector_index_stats(self, index_name)


def _files_size(ds, uuid: str) -> int | None:
    """Bytes of a vector index's two files (None when unreadable)."""
    from lancenb.index.vector.ivf import AUX_FILE, INDEX_FILE, index_dir, storage_options_of
    from lancenb.io import open_reader

    total = 0
    for name in (INDEX_FILE, AUX_FILE):
        try:
            r = open_reader(f"{index_dir(ds, uuid)}/{name}", storage_options_of(ds))
        except LanceError:
            return None
        total += r.size()
        r.close()
    return total


def _vector_details(ds, entry) -> dict:
    """pylance's ``details`` of a vector index: metric and compression."""
    from lancenb.index.vector.ivf import open_vector_index

    try:
        idx = open_vector_index(ds, entry)
    except LanceError:
        return {}
    out: dict = {"metric_type": idx.metric.upper() if idx.metric == "l2"
                 else idx.metric.capitalize()}
    st = idx.storage
    if st.kind == "PQ":
        out["compression"] = {"type": "pq", "num_bits": int(st.params["nbits"]),
                              "num_sub_vectors": int(st.params["num_sub_vectors"])}
    elif st.kind == "SQ":
        out["compression"] = {"type": "sq", "num_bits": int(st.params.get("num_bits", 8))}
    return out


def _walk(fields):
    for f in fields:
        yield f
        yield from _walk(f.children())


def vector_index_stats(ds, index_name: str) -> dict:
    """``ds.stats.index_stats(name)`` for a vector index, with pylance's keys."""
    from lancenb.index.vector.ivf import index_dir, open_vector_index

    segs = [e for e in ds.list_indices() if e["name"] == index_name]
    if not segs:
        raise IndexNotFoundError(f"Index not found: {index_name}")
    frags = {f.fragment_id: f.count_rows() for f in ds.get_fragments()}
    covered = set()
    per = []
    for e in segs:
        covered |= set(int(f) for f in e["fragment_ids"])
        idx = open_vector_index(ds, e)
        st = idx.storage
        sub = dict(st.params)
        sub.pop("codebook", None)
        sub.pop("codebook_position", None)
        sub.pop("codebook_tensor", None)
        sub["index_type"] = st.kind
        sub["metric_type"] = "l2" if (st.kind == "PQ" and idx.metric == "cosine" and
                                      idx.file_version != "Legacy") else idx.metric
        per.append({"index_type": idx.index_type, "uuid": e["uuid"],
                    "uri": f"{index_dir(ds, e['uuid'])}/index.idx",
                    "metric_type": idx.metric, "num_partitions": idx.num_partitions,
                    "sub_index": sub,
                    "partitions": [{"size": int(s)} for s in st.lengths],
                    "centroids": idx.centroids.tolist(), "loss": idx.loss,
                    "index_file_version": idx.file_version})
    live = set(frags)
    indexed = covered & live
    per_delta = [sum(frags.get(int(f), 0) for f in e["fragment_ids"]) for e in segs]
    return {"num_indexed_rows_per_delta": per_delta, "updated_at_timestamp_ms": None,
            "index_type": per[0]["index_type"], "name": index_name,
            "num_indices": len(per), "num_segments": len(per), "indices": per,
            "segments": per,
            "num_indexed_fragments": len(indexed),
            "num_indexed_rows": sum(frags[f] for f in indexed),
            "num_unindexed_fragments": len(live - covered),
            "num_unindexed_rows": sum(frags[f] for f in live - covered)}
