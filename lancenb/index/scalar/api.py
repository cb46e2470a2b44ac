"""The scalar-index methods of :class:`~lancenb.dataset.LanceDataset` (a mixin).

They use the dataset's public API only: ``uri``, ``version``, ``schema``,
``lance_schema``, ``get_fragments()``, ``scanner(...)``, ``list_indices()`` and
``type(ds).commit(...)`` with a ``LanceOperation.CreateIndex``. The index files are
written in pylance's layout (:mod:`.btree`, :mod:`.bitmap`), so pylance uses them.
"""

from __future__ import annotations

import uuid as uuidlib
from datetime import datetime, timezone

import numpy as np
import pyarrow as pa

from lancenb.errors import IndexExistsError, InvalidInputError, NotSupportedError
from lancenb.index import distributed as vector_segments
from lancenb.index.scalar import bitmap, btree, label_list, ngram, zones
from lancenb.index.scalar import segments as segments_mod
from lancenb.index.scalar.common import IndexFiles, become
from lancenb.index.scalar.segments import replace_fields
from lancenb.table.indices import CreateIndex, Index, IndexFile

__all__ = ["ScalarIndexMethods", "SCALAR_INDEX_TYPES", "BUILT_TYPES", "storage_type",
           "column_field", "address_batches"]

# pylance's index types for scalar columns (its NotImplementedError lists them)
SCALAR_INDEX_TYPES = ("BTREE", "BITMAP", "NGRAM", "ZONEMAP", "LABEL_LIST", "INVERTED",
                      "BLOOMFILTER", "RTREE", "MINHASHLSH")
# index type -> (list_indices type, details type URL, index version pylance 14 writes:
# a LABEL_LIST of version 0 lacks the null-list rows, and pylance warns it is "old")
BUILT_TYPES = {"BTREE": ("BTree", btree.DETAILS_TYPE_URL, 0),
               "BITMAP": ("Bitmap", bitmap.DETAILS_TYPE_URL, 0),
               "LABEL_LIST": ("LabelList", label_list.DETAILS_TYPE_URL, 1),
               "ZONEMAP": ("ZoneMap", zones.ZONEMAP_DETAILS, 0),
               "BLOOMFILTER": ("BloomFilter", zones.BLOOM_DETAILS, 0),
               "NGRAM": ("NGram", ngram.DETAILS_TYPE_URL, 0),
               "INVERTED": ("Inverted", "/lance.table.InvertedIndexDetails", 0)}
# the build parameters of each type (pylance's names) and their defaults
_PARAMS = {"ZONEMAP": {"rows_per_zone": zones.ROWS_PER_ZONE},
           "BLOOMFILTER": {"number_of_items": zones.BLOOM_ITEMS,
                           "probability": zones.BLOOM_PROBABILITY}}


def _vector_type(index_type) -> bool:
    from lancenb.index.vector.api import VECTOR_INDEX_TYPES

    return isinstance(index_type, str) and index_type.upper() in VECTOR_INDEX_TYPES


def _btree_type_ok(t: pa.DataType) -> bool:
    """The column types pylance builds BTREE and BITMAP indices on."""
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_decimal(t)
            or pa.types.is_fixed_size_binary(t) or pa.types.is_temporal(t))


def storage_type(t: pa.DataType) -> pa.DataType:
    """An extension type's storage type (a uuid column is indexed as its 16 bytes)."""
    return t.storage_type if isinstance(t, pa.BaseExtensionType) else t


def column_field(ds, column: str) -> pa.Field:
    """The Arrow field of top-level ``column`` of dataset ``ds`` (a clear error if none)."""
    try:
        return ds.schema.field(column)
    except KeyError:
        pass
    parts, t = column.split("."), None
    fields = ds.schema
    for p in parts:
        try:
            f = fields.field(p) if t is None else t.field(p)
        except KeyError:
            raise KeyError(f"{column} not found in schema") from None
        t = f.type if pa.types.is_struct(f.type) else None
    return f


def _field_id(ds, column: str) -> int:
    lf = ds.lance_schema.field(column)
    if lf is None:
        raise KeyError(f"{column} not found in schema")
    return int(lf.id())


def _column_batches(ds, column: str, frags, typ: pa.DataType):
    """``(values, uint64 row ids)`` of ``column`` in ``frags``, batch by batch
    (deleted rows skipped)."""
    return _keyed_batches(ds, column, frags, typ, "_rowid")


def address_batches(ds, column: str, frags, typ: pa.DataType):
    """``(values, uint64 row addresses)`` of ``column`` in ``frags``, in address order."""
    return _keyed_batches(ds, column, frags, typ, "_rowaddr")


def _keyed_batches(ds, column: str, frags, typ: pa.DataType, key: str):
    """``(values cast to typ, uint64 key)`` batches of ``column`` over ``frags``; ``key``
    is ``_rowid`` or ``_rowaddr`` (extension columns give their storage values)."""
    if not frags:
        return
    scan = ds.scanner(columns=[column], with_row_id=key == "_rowid",
                      with_row_address=key == "_rowaddr", fragments=frags)
    for b in scan.to_batches():
        if b.num_rows:
            v = b.column(0)
            if isinstance(v, pa.ExtensionArray):
                v = v.storage
            keys = b.column(b.schema.get_field_index(key))
            yield (v.cast(typ) if v.type != typ else v), np.asarray(keys.to_numpy(), np.uint64)


def _index_name(existing, column: str, name: str | None, type_name: str) -> str:
    """pylance's default name: ``{column}_idx``, or ``{column}_idx_2``, ... when that
    name belongs to an index of another type or column."""
    if name is not None:
        return name
    base = f"{column}_idx"
    taken = {e["name"]: e for e in existing}
    cur = taken.get(base)
    if cur is None or (cur["type"] == type_name and cur["fields"] == [column]):
        return base
    k = 2
    while f"{base}_{k}" in taken:
        k += 1
    return f"{base}_{k}"


class ScalarIndexMethods:
    """Dataset methods that build and manage scalar and full-text indices."""

    def create_scalar_index(self, column: str, index_type, name: str | None = None, *,
                            replace: bool = True, train: bool = True, fragment_ids=None,
                            index_uuid: str | None = None, progress_callback=None,
                            format_version=None, _uncommitted: bool = False, **kwargs):
        """Build a scalar index on ``column`` and commit it as a new version (this
        dataset moves to it), in pylance's format.

        Parameters
        ----------
        column : str
            The column to index.
        index_type : str
            ``"BTREE"``, ``"BITMAP"``, ``"LABEL_LIST"``, ``"ZONEMAP"``, ``"BLOOMFILTER"``
            or ``"NGRAM"`` (lancenb builds these;
            pylance's other types raise :class:`~lancenb.errors.NotSupportedError`).
        name : str, optional
            Default ``"{column}_idx"`` (``"{column}_idx_2"``, ... when that name is
            taken by an index of another type, as pylance).
        replace : bool, default True
            Replace an index of the same name; else an existing name is an error.
        fragment_ids : list of int, optional
            Build one segment over these fragments and return its ``Index`` without
            committing it (not for BTREE, as pylance 14: use
            :meth:`create_index_uncommitted`); commit segments with
            :meth:`commit_existing_index_segments`.
        train : bool, default True
            False: an empty index covering no fragment.

        Examples
        --------
        >>> ds.create_scalar_index("x", "BTREE")  # doctest: +SKIP
        >>> ds.to_table(filter="x = 5")  # doctest: +SKIP
        """
        if hasattr(index_type, "index_type") and hasattr(index_type, "parameters"):
            kwargs = {**dict(index_type.parameters or {}), **kwargs}  # (an IndexConfig)
            index_type = index_type.index_type
        if not isinstance(index_type, str):
            raise NotSupportedError(f"index_type {index_type!r}: lancenb takes the index type "
                                    f"by name")
        kind = index_type.upper()
        if kind == "JSON":
            return self._create_json_index(column, name, replace, train, kwargs)
        if kind == "FTS":
            kind = "INVERTED"
        if kind not in SCALAR_INDEX_TYPES:
            raise NotImplementedError(
                'Only "BTREE", "BITMAP", "NGRAM", "ZONEMAP", "LABEL_LIST", "INVERTED", '
                '"BLOOMFILTER", "RTREE" or "MINHASHLSH" are supported for scalar columns.  '
                f"Received {index_type}")
        field = column_field(self, column)
        field = field.with_type(storage_type(field.type))
        if kind in ("BTREE", "BITMAP") and not _btree_type_ok(field.type):
            raise TypeError(f"BTREE/BITMAP index column {column} must be int, float, bool, "
                            f"str, large_str, binary, large_binary, decimal, fixed-size-binary, "
                            f"or temporal")
        if kind == "LABEL_LIST" and not (pa.types.is_list(field.type)
                                         or pa.types.is_large_list(field.type)):
            raise TypeError(f"LABEL_LIST index column {column} must be a list or large list")
        if kind == "BLOOMFILTER" and not zones.bloom_type_ok(field.type):
            raise TypeError(f"Bloom filter index does not support data type: {field.type} "
                            f"(column {column})")
        if kind == "NGRAM" and not (pa.types.is_string(field.type)
                                    or pa.types.is_large_string(field.type)):
            raise TypeError(f"NGRAM index column {column} must be a string or large string")
        if kind == "ZONEMAP" and not _btree_type_ok(field.type):
            raise TypeError(f"ZONEMAP index column {column}: type {field.type} is not "
                            f"supported")
        if kind == "INVERTED":
            from lancenb.index.fts import build as fts_build  # (full-text: its own package)

            fts_build.check_column_type(field.type, column)
            fts_params = fts_build.params_from(kwargs)
            if isinstance(column_field(self, column).type, pa.JsonType):
                fts_params.lance_tokenizer = "json"
            kwargs = {}
        if kind not in BUILT_TYPES:
            raise NotSupportedError(f"lancenb cannot build {kind} indices yet (BTREE, "
                                    f"BITMAP, LABEL_LIST, ZONEMAP, BLOOMFILTER and NGRAM only)")
        if fragment_ids is not None and kind == "BTREE" and not _uncommitted:
            raise InvalidInputError('BTREE distributed indexing uses create_index_uncommitted('
                                    '..., index_type="BTREE", fragment_ids=...)')
        params = dict(_PARAMS.get(kind, {}))
        for k in list(kwargs):
            if k in params:
                params[k] = kwargs.pop(k)
        unknown = sorted(k for k in kwargs if k not in ("document_granularity",))
        if unknown:
            raise InvalidInputError(f"create_scalar_index: unknown options {unknown} for "
                                    f"{kind}")
        fid = _field_id(self, column)
        type_name, type_url, index_version = BUILT_TYPES[kind]
        existing = self.list_indices()
        name = _index_name(existing, column, name, type_name)
        same = [e for e in existing if e["name"] == name] if fragment_ids is None else []
        if same and not replace:
            raise IndexExistsError(f"Index name '{name}' already exists, please specify a "
                                   f"different name or use replace=True")
        if any(e["fields"] != [column] for e in same):
            raise IndexExistsError(f"Index name '{name} already exists with different "
                                   f"fields, please specify a different name")
        uid = str(uuidlib.UUID(index_uuid)) if index_uuid else str(uuidlib.uuid4())
        frags = self.get_fragments()
        if fragment_ids is not None:
            wanted = {int(f) for f in fragment_ids}
            unknown_ids = sorted(wanted - {f.fragment_id for f in frags})
            if unknown_ids:
                raise InvalidInputError(f"fragment_ids {unknown_ids} are not fragments of this "
                                        f"dataset (version {self.version})")
            frags = [f for f in frags if f.fragment_id in wanted]
        covered = [f.fragment_id for f in frags] if train else []
        source = address_batches if kind in _PARAMS else _column_batches
        batches = source(self, column, frags if train else [], field.type)
        files = IndexFiles(self.uri, uid)
        if kind == "ZONEMAP":
            zones.write_zonemap(files, batches, field.type,
                                rows_per_zone=int(params["rows_per_zone"]))
        elif kind == "BLOOMFILTER":
            zones.write_bloomfilter(files, batches, field.type,
                                    number_of_items=int(params["number_of_items"]),
                                    probability=float(params["probability"]))
        elif kind == "NGRAM":
            ngram.write_ngram(files, batches, field.type)
        elif kind == "BTREE":
            btree.write_btree(files, batches, field.type)
        elif kind == "BITMAP":
            bitmap.write_bitmap(files, batches, field.type)
        elif kind == "INVERTED":
            fts_build.write_inverted(files, fts_params, batches, fragment_ids=fragment_ids)
        else:
            label_list.write_label_list(files, batches, field.type)
        index = Index(uuid=uid, name=name, fields=[fid], dataset_version=self.version,
                      fragment_ids=set(covered), index_version=index_version,
                      created_at=datetime.now(timezone.utc),
                      files=[IndexFile(n, s) for n, s in files.written],
                      index_details=(type_url, fts_build.details_bytes(fts_params)
                                     if kind == "INVERTED" else b""))
        if fragment_ids is not None:
            return index  # (a segment: not committed, see create_index_uncommitted)
        # (the table layer's CreateIndex: LanceOperation.CreateIndex is that class)
        new = type(self).commit(self.uri, CreateIndex(new_indices=[index], removed_indices=[]),
                                read_version=self.version)
        become(self, new)  # this dataset moves to the new version, as pylance's

    def _create_json_index(self, column: str, name, replace: bool, train: bool, params):
        """A JSON index (:mod:`lancenb.index.json_index`): the values under one key of a
        JSON column, indexed by a BTREE or BITMAP, committed as a new version."""
        from lancenb.index import json_index as ji

        target, path = ji.check_params(params)
        if target == "BTREE" and self.has_stable_row_ids:
            raise NotSupportedError("a JSON-wrapped BTREE index is not yet supported on a "
                                    "dataset with stable row ids enabled (as pylance 14): "
                                    "create a plain BTREE index on this column instead, or "
                                    "a JSON index with target_index_type 'bitmap'")
        field = column_field(self, column)
        if not isinstance(field.type, pa.JsonType) and not pa.types.is_large_binary(
                field.type) and not pa.types.is_binary(field.type):
            raise InvalidInputError(f"A JSON index can only be created on a JSON column, "
                                    f"not {column} ({field.type})")
        storage = storage_type(field.type)
        existing = self.list_indices()
        name = _index_name(existing, column, name, "Json")
        if any(e["name"] == name for e in existing) and not replace:
            raise IndexExistsError(f"Index name '{name}' already exists, please specify a "
                                   f"different name or use replace=True")
        frags = self.get_fragments() if train else []

        def jsonb():
            for v, ids in _column_batches(self, column, frags, storage):
                yield ji.as_jsonb(v, column), ids

        typ = ji.value_type(ji.extract_texts(v, path) for v, _ in jsonb())
        batches = ((ji.json_values(v, path, typ), ids) for v, ids in jsonb())
        uid = str(uuidlib.uuid4())
        files = IndexFiles(self.uri, uid)
        (btree.write_btree if target == "BTREE" else bitmap.write_bitmap)(files, batches, typ)
        index = Index(uuid=uid, name=name, fields=[_field_id(self, column)],
                      dataset_version=self.version,
                      fragment_ids={f.fragment_id for f in frags}, index_version=0,
                      created_at=datetime.now(timezone.utc),
                      files=[IndexFile(n, s) for n, s in files.written],
                      index_details=(ji.DETAILS_TYPE_URL,
                                     ji.encode_details(path, ji.TARGETS[target][0])))
        new = type(self).commit(self.uri, CreateIndex(new_indices=[index], removed_indices=[]),
                                read_version=self.version)
        become(self, new)

    def prewarm_index(self, name: str) -> None:
        """Load the index ``name`` into this dataset's session cache, so queries on it
        read no index part from storage (pylance's ``prewarm_index``)."""
        from lancenb.index.scalar.query import prewarm

        prewarm(self, name)

    def create_index_uncommitted(self, column, index_type, name: str | None = None, *args,
                                 replace: bool = False, train: bool = True,
                                 fragment_ids=None, index_uuid: str | None = None,
                                 **kwargs) -> Index:
        """Build one index segment over ``fragment_ids`` under
        ``_indices/<uuid>/`` and return its ``Index`` metadata, unpublished (pylance
        14's distributed build): merge groups with
        :meth:`merge_existing_index_segments`, publish with
        :meth:`commit_existing_index_segments`. Vector types (IVF_FLAT, IVF_PQ,
        IVF_SQ, IVF_HNSW_*) take :meth:`create_index`'s parameters; pass the same
        ``ivf_centroids`` (and ``pq_codebook``) to every worker for segments that merge
        (:mod:`lancenb.index.distributed`).

        Examples
        --------
        >>> segs = [ds.create_index_uncommitted("x", "BTREE", fragment_ids=[f.fragment_id])
        ...         for f in ds.get_fragments()]  # doctest: +SKIP
        >>> ds.commit_existing_index_segments("x_idx", "x", segs)  # doctest: +SKIP
        """
        if fragment_ids is None:
            raise InvalidInputError("create_index_uncommitted requires fragment_ids for "
                                    "distributed index build")
        if _vector_type(index_type):  # (lancenb.index.distributed)
            unknown = sorted({int(f) for f in fragment_ids} -
                             {f.fragment_id for f in self.get_fragments()})
            if unknown:
                raise InvalidInputError(f"fragment_ids {unknown} are not fragments of this "
                                        f"dataset (version {self.version})")
            return self.create_index(column, index_type, name, *args, replace=replace,
                                     train=train, fragment_ids=list(fragment_ids),
                                     index_uuid=index_uuid, _uncommitted=True, **kwargs)
        if args or kwargs.get("metric") not in (None, "L2"):
            raise NotSupportedError("create_index_uncommitted: lancenb builds scalar index "
                                    "segments only")
        kwargs.pop("metric", None)
        return self.create_scalar_index(column, index_type, name, replace=replace, train=train,
                                        fragment_ids=list(fragment_ids),
                                        index_uuid=index_uuid, _uncommitted=True, **kwargs)

    def merge_index_metadata(self, index_uuid: str, index_type: str = "INVERTED",
                             batch_readhead=None) -> None:
        """Gather the partitions a distributed INVERTED build wrote under
        ``_indices/<index_uuid>/`` (``create_scalar_index(..., fragment_ids=...,
        index_uuid=...)`` per worker) into one index, to commit with a CreateIndex."""
        if str(index_type).upper() not in ("INVERTED", "FTS"):
            raise NotSupportedError(f"merge_index_metadata: lancenb merges INVERTED "
                                    f"partitions only, not {index_type}")
        from lancenb.index.fts import build as fts_build

        fts_build.merge_index_metadata(IndexFiles(self.uri, str(index_uuid)))

    def merge_existing_index_segments(self, segments) -> Index:
        """Merge uncommitted segments of one index type into one new segment covering
        their fragments (BTREE, ZONEMAP, BLOOMFILTER; vector segments of one model);
        the inputs stay on disk."""
        segments = list(segments)
        if any(vector_segments.is_vector_segment(s) for s in segments):
            return vector_segments.merge_segments(self, segments)
        return segments_mod.merge_segments(self, segments)

    def commit_existing_index_segments(self, index_name: str, column: str, segments):
        """Publish ``segments`` as the one index ``index_name`` on ``column`` (replacing
        an index of that name) in a new version; this dataset moves to it."""
        fid = _field_id(self, column)
        segments = list(segments)
        if not segments or any(vector_segments.is_vector_segment(s) for s in segments):
            return vector_segments.commit_segments(self, index_name, column, segments, fid)
        new = [replace_fields(seg, name=index_name, fields=[fid]) for seg in segments]
        done = type(self).commit(self.uri, CreateIndex(new_indices=new, removed_indices=[]),
                                 read_version=self.version)
        become(self, done)
        return self
