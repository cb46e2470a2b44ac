"""Distributed vector index builds, as pylance 14: segments, their merge and commit.

A *segment* is one index directory ``_indices/<uuid>/`` (pylance's two files, see
:mod:`.ivf`) over some fragments, with its ``Index`` metadata, not yet in any manifest:

1. train once on a sample (``IndicesBuilder.train_ivf`` / ``train_pq``, or any
   centroids and codebook);
2. each worker: ``ds.create_index_uncommitted(column, "IVF_PQ", fragment_ids=[...],
   ivf_centroids=..., pq_codebook=...)`` assigns and encodes its fragments' rows and
   writes one segment (:func:`segment_index` describes it). With a shared PQ codebook the
   codes are stored row by row (``"transposed": false``), as pylance's segments, so
   either library can merge them;
3. optionally ``ds.merge_existing_index_segments(group)`` (:func:`merge_segments`): one
   new segment over the union of the group's fragments, same model, rows of each
   partition in the order of the segments given, PQ codes transposed (a single-shot
   build's layout), HNSW graphs built again;
4. ``ds.commit_existing_index_segments(name, column, segments)``
   (:func:`commit_segments`): one CreateIndex publishing the segments as index ``name``,
   each a manifest entry covering its own fragments (a "delta"), beside the segments of
   that name they do not overlap; a segment wholly covered by the new ones is replaced.

Checks follow pylance's: at least one segment, no uuid twice, no fragment in two
segments, every segment built on ``column``, one index type (and metric) across the
index, no existing segment left partly covered. Merging needs one model (the same
centroids; the same PQ codebook); SQ segments with different bounds are re-quantized
to the union of the bounds (pylance keeps the first segment's bounds for all codes).

A search over an index of several segments (:class:`SegmentedIndex`) searches each with
the same ``nprobes`` and keeps the best ``k`` of their results, as pylance.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import numpy as np

from lancenb.errors import InvalidInputError, NotSupportedError
from lancenb.file import LanceFileReader
from lancenb.index.scalar.common import become
from lancenb.index.vector import sq as sqmod
from lancenb.index.vector.build import (
    INDEX_VERSION,
    VECTOR_DETAILS_URL,
    pq_params,
    write_index,
)
from lancenb.index.vector.ivf import INDEX_FILE, index_dir, open_vector_index, storage_options_of
from lancenb.io.store import ObjectStore
from lancenb.table.commit import find_manifest
from lancenb.table.indices import CreateIndex, Index, IndexFile, index_from_pb, parse_section

__all__ = ["segment_index", "is_vector_segment", "merge_segments", "commit_segments",
           "SegmentedIndex", "segmented"]


def segment_index(built) -> Index:
    """The ``Index`` metadata of a segment a build wrote (:class:`.build.BuiltIndex`)."""
    return Index(uuid=built.uuid, name=built.name, fields=[built.field_id],
                 dataset_version=built.dataset_version,
                 fragment_ids={int(f) for f in built.fragment_ids},
                 index_version=INDEX_VERSION, created_at=datetime.now(timezone.utc),
                 files=[IndexFile(n, sz) for n, sz in built.files],
                 index_details=(VECTOR_DETAILS_URL, built.details))


def is_vector_segment(seg) -> bool:
    """True for a vector index segment (lancenb's or pylance's ``Index``)."""
    d = getattr(seg, "index_details", None)
    return bool(d) and d[0] == VECTOR_DETAILS_URL


def _copy(seg, **changes) -> Index:
    """A lancenb ``Index`` of ``seg`` (lancenb's or pylance's) with ``changes``."""
    values = {k: getattr(seg, k, None) for k in
              ("uuid", "name", "fields", "dataset_version", "fragment_ids", "index_version",
               "created_at", "base_id", "files", "index_details")}
    values.update(changes)
    values["fragment_ids"] = {int(f) for f in values["fragment_ids"] or ()}
    values["fields"] = [int(f) for f in values["fields"] or ()]
    values["files"] = [IndexFile(f.path, int(f.size_bytes)) for f in values["files"] or ()] \
        or None
    return Index(**values)


def _check_set(segments: list, what: str) -> set[int]:
    """pylance's checks of a segment set; the fragments they cover together."""
    if not segments:
        raise InvalidInputError(f"{what}: at least one index segment is required")
    seen: set[str] = set()
    covered: set[int] = set()
    for s in segments:
        u = str(s.uuid)
        if u in seen:
            raise InvalidInputError(f"{what}: duplicate segment uuid {u}")
        seen.add(u)
        got = {int(f) for f in s.fragment_ids}
        if got & covered:
            raise InvalidInputError(f"{what}: overlapping fragment coverage in the segment "
                                    f"set (fragments {sorted(got & covered)})")
        covered |= got
    return covered


def _column_of(ds, field_id: int) -> str:
    """The column (a dotted path for a nested field) of lance field ``field_id``."""
    def walk(fields, prefix):
        for f in fields:
            path = f"{prefix}{f.name()}"
            if f.id() == field_id:
                return path
            found = walk(f.children(), path + ".")
            if found:
                return found
        return None

    found = walk(ds.lance_schema.fields(), "")
    if found is None:
        raise InvalidInputError(f"index segment field {field_id} is not in the dataset")
    return found


def _index_meta(ds, uuid: str) -> tuple[str, str]:
    """``(index type, metric)`` of segment ``uuid`` (its index file's ``lance:index``)."""
    path = f"{index_dir(ds, uuid)}/{INDEX_FILE}"
    r = LanceFileReader(path, storage_options_of(ds))
    info = json.loads((r.schema_full.metadata or {}).get(b"lance:index", b"{}"))
    return str(info.get("type", "")).upper(), str(info.get("distance_type", "l2")).lower()


def _open(ds, seg):
    column = _column_of(ds, int(list(seg.fields)[0]))
    return open_vector_index(ds, {"uuid": str(seg.uuid), "name": seg.name,
                                  "fields": [column],
                                  "fragment_ids": {int(f) for f in seg.fragment_ids}})


def _row_major(st, p: int) -> np.ndarray:
    """Partition ``p``'s stored rows of storage ``st``, one row each (PQ: its codes)."""
    if st.kind != "PQ":
        return st.rows(p)
    s, n = int(st.offsets[p]), int(st.lengths[p])
    codes = st.data
    width = len(codes) // max(len(st.row_ids), 1)
    return codes[s * width:(s + n) * width].reshape(width, n).T


def merge_segments(ds, segments: list) -> Index:
    """One new segment holding the rows of vector ``segments`` (one model); returns its
    ``Index`` (a single segment is returned as it is, as pylance)."""
    segments = list(segments)
    covered = _check_set(segments, "merge_existing_index_segments")
    if len(segments) == 1:
        return segments[0]
    if any(not is_vector_segment(s) for s in segments):
        raise InvalidInputError("merge_existing_index_segments: segments of one index "
                                "type only (vector and scalar segments given)")
    if any(list(s.fields) != list(segments[0].fields) for s in segments):
        raise InvalidInputError("merge_existing_index_segments: segments of one column only")
    idx = [_open(ds, s) for s in segments]
    first = idx[0]
    for i, other in enumerate(idx[1:], 1):
        if (other.index_type, other.metric) != (first.index_type, first.metric):
            raise InvalidInputError(
                f"merge_existing_index_segments: segment {i} is {other.index_type} "
                f"({other.metric}), segment 0 {first.index_type} ({first.metric})")
        if other.centroids.shape != first.centroids.shape or \
                not np.array_equal(other.centroids, first.centroids):
            raise InvalidInputError(
                "merge_existing_index_segments: the segments have different IVF centroids; "
                "build them with the same ivf_centroids to merge them, or commit them as "
                "separate segments")
        if first.storage.kind == "PQ" and not np.array_equal(
                other.storage.params["codebook"], first.storage.params["codebook"]):
            raise InvalidInputError(
                "merge_existing_index_segments: the segments have different PQ codebooks; "
                "build them with the same pq_codebook to merge them")
    st0 = first.storage
    nparts = first.num_partitions
    ids_l, lab_l, pay_l = [], [], []
    lo = hi = None
    if st0.kind == "SQ":
        bounds = [sqmod.bounds_of(i.storage.params) for i in idx]
        lo, hi = min(b[0] for b in bounds), max(b[1] for b in bounds)
    for i in idx:
        st = i.storage
        for p in range(nparts):
            s, n = int(st.offsets[p]), int(st.lengths[p])
            if not n:
                continue
            rows = _row_major(st, p)
            if st.kind == "SQ" and sqmod.bounds_of(st.params) != (lo, hi):
                a, b = sqmod.bounds_of(st.params)  # decoded, then coded in the union
                x = np.float32(a) + rows.astype(np.float32) * np.float32((b - a) / 255.0)
                rows = sqmod.quantize(x, lo, hi)
            ids_l.append(st.row_ids[s:s + n])
            lab_l.append(np.full(n, p, np.int64))
            pay_l.append(rows)
    dim = first.dim
    row_ids = np.concatenate(ids_l) if ids_l else np.zeros(0, np.uint64)
    labels = np.concatenate(lab_l) if lab_l else np.zeros(0, np.int64)
    codebook, num_bits, m = None, 8, 0
    if st0.kind == "PQ":
        codebook = st0.params["codebook"]
        num_bits = int(st0.params.get("nbits", 8))
        m = int(st0.params.get("num_sub_vectors", codebook.shape[0]))
        params = pq_params(num_bits, m, int(st0.params.get("dimension", dim)))
        width = m if num_bits == 8 else m // 2
        dtype = np.uint8
    elif st0.kind == "SQ":
        params = {"dim": dim, "num_bits": int(st0.params.get("num_bits", 8)),
                  "bounds": {"start": lo, "end": hi}}
        width, dtype = dim, np.uint8
    else:
        params = {"dim": dim}
        width = dim
        dtype = np.uint8 if first.metric == "hamming" else np.float32
    payload = np.concatenate(pay_l).astype(dtype, copy=False) if pay_l else \
        np.zeros((0, width), dtype)
    built = write_index(ds, int(list(segments[0].fields)[0]), first.index_type,
                        first.metric, segments[0].name, first.centroids, first.loss, row_ids,
                        labels, payload, params, codebook, num_bits=num_bits,
                        num_sub_vectors=m, fragment_ids=sorted(covered))
    return _copy(segments[0], uuid=built.uuid, fragment_ids=covered,
                 dataset_version=max(int(s.dataset_version) for s in segments),
                 created_at=datetime.now(timezone.utc),
                 files=[IndexFile(n, sz) for n, sz in built.files])


def _manifest_indices(ds) -> list[Index]:
    """The index segments of ``ds``'s version as its manifest holds them (files and
    details, which ``list_indices`` omits)."""
    found = find_manifest(ObjectStore(ds.uri, storage_options_of(ds)), ds.version)
    if found is None:
        raise NotSupportedError(f"commit_existing_index_segments: the manifest of version "
                                f"{ds.version} cannot be read by name")
    mf = found[0]
    return [index_from_pb(m) for m in parse_section(mf.index_section_bytes(), mf.name)]


def commit_segments(ds, index_name: str, column: str, segments: list, field_id: int):
    """Publish vector ``segments`` as index ``index_name`` on ``column`` (lance field
    ``field_id``) in one CreateIndex; ``ds`` moves to the new version."""
    segments = list(segments)
    covered = _check_set(segments, "CreateIndex")
    for s in segments:
        if [int(f) for f in s.fields] != [int(field_id)]:
            raise InvalidInputError(f"CreateIndex: segment {s.uuid} was built for fields "
                                    f"{list(s.fields)}, expected keyed field [{field_id}] "
                                    f"({column})")
    existing = [e for e in _manifest_indices(ds) if e.name == index_name]
    kept, removed = [], []
    for e in existing:
        frags = {int(f) for f in e.fragment_ids}
        if not frags & covered and str(e.uuid) not in {str(s.uuid) for s in segments}:
            kept.append(e)
        elif frags <= covered:
            removed.append(e)
        else:
            raise InvalidInputError(f"CreateIndex: incoming segments for '{index_name}' "
                                    f"would orphan fragments {sorted(frags - covered)} from "
                                    f"existing segment {e.uuid}")
    everything = segments + kept
    if any(not is_vector_segment(s) for s in everything):
        raise InvalidInputError(f"CreateIndex: index '{index_name}' would mix vector and "
                                f"scalar segments")
    kinds = [_index_meta(ds, str(s.uuid)) for s in everything]
    for i, k in enumerate(kinds):
        if k != kinds[0]:
            raise InvalidInputError(f"CreateIndex: index '{index_name}': vector index "
                                    f"segment {i} is {k[0]} ({k[1]}), expected {kinds[0][0]} "
                                    f"({kinds[0][1]})")
    new = [_copy(s, name=index_name, fields=[int(field_id)]) for s in segments]
    # lancenb's table layer drops every segment named as a new one, pylance 14's only
    # those removed: the kept ones are removed and added again, the same either way
    op = CreateIndex(new_indices=[_copy(e) for e in kept] + new, removed_indices=removed + kept)
    done = type(ds).commit(ds.uri, op, read_version=ds.version,
                           storage_options=storage_options_of(ds))
    become(ds, done)
    return ds


class SegmentedIndex:
    """The segments of one vector index searched as one: each with the same
    ``nprobes`` (its own partitions), the best ``k`` of all their results kept."""

    def __init__(self, parts: list):
        self.parts = parts
        first = parts[0]
        self.name, self.uuid, self.column = first.name, first.uuid, first.column
        self.index_type, self.metric = first.index_type, first.metric
        self.fragment_ids = set().union(*(p.fragment_ids for p in parts))
        self.dataset = first.dataset

    @property
    def num_partitions(self) -> int:
        return max(p.num_partitions for p in self.parts)

    @property
    def dim(self) -> int:
        return self.parts[0].dim

    def probes_to_fill(self, query, k: int, allow, start: int, limit: int) -> int:
        """Every segment shares the count of rows found: probe up to ``limit``."""
        return limit

    def centroid_distances(self, query):
        """The first segment's (see :meth:`VectorIndex.centroid_distances`)."""
        return self.parts[0].centroid_distances(query)

    def search(self, query, k: int, *, nprobes: int = 1, refine_factor=None, ef=None,
               allow=None):
        """``(row ids, distances)`` of the ``k`` nearest over every segment, best first
        (ties by row id): each segment's best ``k * refine_factor`` by its own
        distances, the best of them all, then (``refine_factor``) re-ranked by exact
        distance once, as pylance's plan (a union of the segments, then a refine)."""
        want = k * (int(refine_factor) if refine_factor else 1)
        got = [p.search(query, want, nprobes=nprobes, refine_factor=None, ef=ef,
                        allow=allow) for p in self.parts]
        ids = np.concatenate([np.asarray(g[0], np.uint64) for g in got])
        dists = np.concatenate([np.asarray(g[1], np.float32) for g in got])
        order = np.lexsort((ids, dists))[:want]
        ids, dists = ids[order], dists[order]
        if refine_factor and len(ids):
            return self.parts[0]._refine(query, ids, k)
        return ids[:k], dists[:k]


def segmented(ds, idx, entries: list):
    """``idx`` (an opened segment) with the other segments ``entries`` of its index
    (entries of ``list_indices()``) as one :class:`SegmentedIndex`; segments lancenb
    cannot open (or with another metric) are left out (their fragments are searched
    flat)."""
    parts = [idx]
    for e in entries:
        try:
            other = open_vector_index(ds, e)
        except NotSupportedError:
            continue
        if other.metric == idx.metric and other.dim == idx.dim:
            parts.append(other)
    return idx if len(parts) == 1 else SegmentedIndex(parts)
