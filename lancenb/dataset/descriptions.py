"""Small result classes of pylance's dataset API: statistics, schemas, base paths.

They mirror the classes pylance returns (``lance.DataStatistics``,
``lance.FieldStatistics``, ``lance.LanceSchema``, ``lance.DatasetBasePath``, the
``ds.stats`` namespace) with the same fields, so code that reads them runs
unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from lancenb._proto import file_pb2
from lancenb.errors import IndexStatsNotFoundError, NotSupportedError
from lancenb.file.extensions import storage_schema
from lancenb.file.schema import schema_to_fields
from lancenb.table.fragments import is_legacy_file

__all__ = ["FieldStatistics", "DataStatistics", "LanceStats", "LanceSchema", "LanceField",
           "DatasetBasePath"]


@dataclass
class FieldStatistics:
    """Bytes one field takes in the data files (after compression)."""

    id: int
    bytes_on_disk: int


@dataclass
class DataStatistics:
    """Per-field statistics of a dataset version (``ds.stats.data_stats()``)."""

    fields: list = field(default_factory=list)


@dataclass
class DatasetBasePath:
    """A base path of a multi-base dataset (pylance's argument order): where data
    files may live besides the dataset's own ``data/``. ``is_dataset_root``: files
    go under ``{path}/data/``, else directly under ``path``; ``id`` is assigned when
    the base is registered (``write_dataset(initial_bases=)``, ``add_bases``) and
    set in what ``ds.base_paths()`` returns.

    Examples
    --------
    >>> DatasetBasePath("s3://bucket/hot", name="hot")  # doctest: +SKIP
    """

    path: str
    name: str | None = None
    is_dataset_root: bool = False
    id: int | None = None


class LanceStats:
    """``ds.stats``: dataset statistics computed from the manifest and the data files'
    metadata (no data is read)."""

    def __init__(self, ds):
        self._ds = ds

    def dataset_stats(self, max_rows_per_group: int = 1024) -> dict:
        """``{"num_deleted_rows", "num_fragments", "num_small_files"}``: a fragment is
        small when it holds fewer than ``max_rows_per_group`` rows (pylance's count)."""
        frags = self._ds.get_fragments()
        return {"num_deleted_rows": sum(f.num_deletions for f in frags),
                "num_fragments": len(frags),
                "num_small_files": sum(f.count_rows() < max_rows_per_group for f in frags)}

    def data_stats(self) -> DataStatistics:
        """Bytes on disk of every field (pages' buffers in the data files; 0 for a
        field with no column of its own, and for legacy files)."""
        ds = self._ds
        ids = [f.id for f in ds.manifest.fields]
        total = dict.fromkeys(ids, 0)
        for frag in ds.get_fragments():
            for df in frag.protobuf.files:
                if is_legacy_file(df):
                    continue
                meta = ds.snapshot.open_file(df.path).metadata()
                for fid, col in zip(df.fields, df.column_indices):
                    if fid in total and 0 <= col < len(meta.columns):
                        total[fid] += sum(b.size for p in meta.columns[col].pages
                                          for b in p.buffers)
        return DataStatistics([FieldStatistics(i, total[i]) for i in ids])

    def index_stats(self, index_name: str):
        """Statistics of an index, as pylance's (vector indices; others raise
        :class:`~lancenb.errors.NotSupportedError`)."""
        from lancenb.index.vector.api import VECTOR_INDEX_TYPES, vector_index_stats

        types = {e["type"] for e in self._ds.list_indices() if e["name"] == index_name}
        if not types:
            raise IndexStatsNotFoundError(f'Index "{index_name}" not found')
        from lancenb.index.scalar.stats import SCALAR_STATS_TYPES, scalar_index_stats
        if types and types <= set(SCALAR_STATS_TYPES):
            return scalar_index_stats(self._ds, index_name)
        if types == {"Inverted"}:
            from lancenb.index.fts.stats import inverted_index_stats

            return inverted_index_stats(self._ds, index_name)
        if types and not types <= set(VECTOR_INDEX_TYPES):
            raise NotSupportedError(f"index statistics of {sorted(types)} indices are not "
                                    "supported by lancenb")
        return vector_index_stats(self._ds, index_name)


class LanceSchema:
    """A dataset's Lance schema: the Arrow schema plus the field ids of the manifest
    (``ds.lance_schema``); its fields are :class:`LanceField` trees, and its repr is
    pylance's (Rust ``Debug``: ``Schema { fields: [Field { name: "a", id: 0, ...
    }], metadata: {} }``).

    Examples
    --------
    >>> [(f.name(), f.id()) for f in ds.lance_schema.fields()]  # doctest: +SKIP
    [('x', 0), ('s', 1)]
    """

    def __init__(self, fields_pb, arrow: pa.Schema):
        self._fields = list(fields_pb)
        self._arrow = arrow

    def to_pyarrow(self) -> pa.Schema:
        return self._arrow

    @staticmethod
    def from_pyarrow(schema: pa.Schema) -> "LanceSchema":
        # (fresh field ids, as operations.schema_fields gives them without a base: not
        # imported from there, which imports this module for LanceSchema)
        return LanceSchema(schema_to_fields(storage_schema(schema) or schema)[0], schema)

    def serialized_fields(self) -> list[bytes]:
        """Every field (pre-order) as its serialised protobuf."""
        return [f.SerializeToString() for f in self._fields]

    def fields(self) -> list["LanceField"]:
        """The top-level fields, in order (their children through
        :meth:`LanceField.children`)."""
        ids = {f.id for f in self._fields}
        return [LanceField(f, self._fields, self._arrow.field(f.name))
                for f in self._fields if f.parent_id not in ids]

    def field(self, name: str) -> "LanceField | None":
        """The field at dotted path ``name`` (``"s.a"``), or None."""
        return self._find(name, str)

    def field_case_insensitive(self, name: str) -> "LanceField | None":
        """:meth:`field`, names compared without case."""
        return self._find(name, str.lower)

    def _find(self, name: str, norm):
        level = self.fields()
        found = None
        for part in name.split("."):
            found = next((f for f in level if norm(f.name()) == norm(part)), None)
            if found is None:
                return None
            level = found.children()
        return found

    def unenforced_primary_key(self) -> list["LanceField"]:
        """The fields of the unenforced primary key, in key order."""
        return self._keyed("unenforced_primary_key_position")

    def unenforced_clustering_key(self) -> list["LanceField"]:
        """The fields of the unenforced clustering key, in key order."""
        return self._keyed("unenforced_clustering_key_position")

    def _keyed(self, attr: str) -> list["LanceField"]:
        every = [f for top in self.fields() for f in top.walk()]
        return sorted((f for f in every if getattr(f.protobuf, attr)),
                      key=lambda f: getattr(f.protobuf, attr))

    def __eq__(self, other) -> bool:
        return isinstance(other, LanceSchema) and self.to_pyarrow() == other.to_pyarrow() \
            and self.serialized_fields() == other.serialized_fields()

    def __reduce__(self):
        # (the field protobufs pickle as their bytes)
        return _schema_from_bytes, (self.serialized_fields(), self._arrow)

    def __repr__(self) -> str:
        meta = _debug_map(self._arrow.metadata or {})
        return f"Schema {{ fields: [{', '.join(map(repr, self.fields()))}], metadata: {meta} }}"


def _schema_from_bytes(fields: list, arrow: pa.Schema) -> LanceSchema:
    return LanceSchema([file_pb2.Field.FromString(b) for b in fields], arrow)


# the field encodings of the manifest protobuf as pylance names them
_ENCODING_NAMES = {1: "Plain", 2: "VarBinary", 3: "Dictionary", 4: "RLE"}


def _debug_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _debug_map(meta: dict) -> str:
    def text(v):
        return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
    items = sorted((text(k), text(v)) for k, v in meta.items())
    if not items:
        return "{}"
    return "{" + ", ".join(f"{_debug_str(k)}: {_debug_str(v)}" for k, v in items) + "}"


class LanceField:
    """One field of a :class:`LanceSchema` with its id and children (pylance's
    ``lance.schema.LanceField``).

    Examples
    --------
    >>> f = ds.lance_schema.fields()[0]  # doctest: +SKIP
    >>> f.name(), f.id(), f.metadata, f.to_arrow()  # doctest: +SKIP
    ('a', 0, {}, pyarrow.Field<a: int64>)
    """

    def __init__(self, pb, fields_pb: list, arrow: pa.Field):
        self._pb = pb
        self._all = fields_pb
        self._arrow = arrow

    def name(self) -> str:
        """The field's name (its last path component)."""
        return self._pb.name

    def id(self) -> int:
        """The field id of the manifest (kept through renames)."""
        return int(self._pb.id)

    def to_arrow(self) -> pa.Field:
        """The field as a pyarrow field."""
        return self._arrow

    @property
    def metadata(self) -> dict:
        """The field's metadata, as strings."""
        return {k: v.decode("utf-8", "replace") for k, v in self._pb.metadata.items()}

    def children(self) -> list["LanceField"]:
        """The child fields (a struct's fields, a list's item, a map's entries)."""
        return [LanceField(c, self._all, _arrow_child(self._arrow, c.name))
                for c in self._all if c.parent_id == self._pb.id]

    @property
    def protobuf(self):
        """The field as the manifest stores it (a ``lance.file.Field`` protobuf)."""
        return self._pb

    def walk(self):
        """This field, then every field below it (depth first)."""
        yield self
        for c in self.children():
            yield from c.walk()

    def unenforced_primary_key_position(self) -> int | None:
        """The field's 1-based position in the unenforced primary key (None: not in it)."""
        return int(self._pb.unenforced_primary_key_position) or None

    def is_unenforced_primary_key(self) -> bool:
        return bool(self._pb.unenforced_primary_key_position)

    def unenforced_clustering_key_position(self) -> int | None:
        """The 1-based position in the unenforced clustering key (None: not in it)."""
        return int(self._pb.unenforced_clustering_key_position) or None

    def is_unenforced_clustering_key(self) -> bool:
        return bool(self._pb.unenforced_clustering_key_position)

    def __eq__(self, other) -> bool:
        return isinstance(other, LanceField) and repr(self) == repr(other)

    def __hash__(self) -> int:
        return hash((self.id(), self.name()))

    def __repr__(self) -> str:
        pb = self._pb
        enc = _ENCODING_NAMES.get(int(pb.encoding))
        pk, ck = self.unenforced_primary_key_position(), \
            self.unenforced_clustering_key_position()
        return (f"Field {{ name: {_debug_str(pb.name)}, id: {int(pb.id)}, "
                f"parent_id: {int(pb.parent_id)}, "
                f"logical_type: LogicalType({_debug_str(pb.logical_type)}), "
                f"metadata: {_debug_map(dict(pb.metadata))}, "
                f"encoding: {f'Some({enc})' if enc else 'None'}, "
                f"nullable: {'true' if pb.nullable else 'false'}, "
                f"children: [{', '.join(map(repr, self.children()))}], dictionary: None, "
                f"unenforced_primary_key_position: {f'Some({pk})' if pk else 'None'}, "
                f"unenforced_clustering_key_position: {f'Some({ck})' if ck else 'None'} }}")


def _arrow_child(parent: pa.Field, name: str) -> pa.Field | None:
    """The child field ``name`` of the Arrow field ``parent`` (None if it has none)."""
    t = parent.type if parent is not None else None
    if t is None:
        return None
    if pa.types.is_struct(t):
        i = t.get_field_index(name)
        return t.field(i) if i >= 0 else None
    if pa.types.is_map(t):
        return pa.field(name, pa.struct([t.key_field, t.item_field]), nullable=False)
    if hasattr(t, "value_field"):  # lists
        return t.value_field
    return None


@dataclass
class CleanupCandidateFile:
    """One file :meth:`LanceDataset.cleanup_old_versions` would remove: its path in
    the object store, ``kind`` (``manifest``, ``transaction``, ``data``,
    ``deletion``), whether it is unverified (not referenced by any manifest) and its
    size."""

    path: str
    kind: str
    unverified: bool
    size_bytes: int


@dataclass
class CleanupExplanation:
    """What a cleanup would do (``ds.explain_cleanup_old_versions(...)``)."""

    read_version: int
    stats: object
    candidate_files: list = field(default_factory=list)
    candidate_files_truncated: bool = False
    candidate_file_limit: int = 1000
    referenced_branches: list = field(default_factory=list)
    warnings: list = field(default_factory=list)


class DatasetDelta:
    """The changes between two versions of a dataset (``ds.delta(...)``): the
    transactions, and the rows inserted or updated (from the per-row created and
    last-updated versions that stable row ids keep)."""

    ROW_ID = "_rowid"
    CREATED = "_row_created_at_version"
    UPDATED = "_row_last_updated_at_version"

    def __init__(self, ds, begin: int, end: int):
        self._ds = ds
        self.begin_version = int(begin)
        self.end_version = int(end)

    def list_transactions(self) -> list:
        """The transactions of versions ``begin + 1 .. end``, oldest first."""
        return [self._ds.read_transaction(v)
                for v in range(self.begin_version + 1, self.end_version + 1)]

    def _rows(self, keep) -> pa.RecordBatchReader:
        end = self._ds  # (pylance reads the rows of the dataset's own version)
        schema = pa.schema(list(end.schema) + [
            pa.field(self.ROW_ID, pa.uint64()), pa.field(self.CREATED, pa.uint64()),
            pa.field(self.UPDATED, pa.uint64())])
        batches = []
        for frag in end.get_fragments():
            live = frag.live_offsets()
            offs = np.arange(frag.physical_rows, dtype=np.int64) if live is None else live
            created = frag.row_versions("created")[offs]
            updated = frag.row_versions("last_updated")[offs]
            sel = keep(created, updated)
            if not sel.any():
                continue
            rows = offs[sel]
            ids = frag.row_ids()[rows] if end.stable_row_ids else frag.row_addresses(rows)
            t = frag.take_physical(end.schema.names, rows)
            t = t.append_column(self.ROW_ID, pa.array(ids, pa.uint64())) \
                .append_column(self.CREATED, pa.array(created[sel], pa.uint64())) \
                .append_column(self.UPDATED, pa.array(updated[sel], pa.uint64()))
            batches += t.cast(schema).to_batches()
        return pa.RecordBatchReader.from_batches(schema, batches)

    def get_inserted_rows(self) -> pa.RecordBatchReader:
        """Rows created after ``begin`` (up to ``end``), among the rows of the
        dataset's version."""
        b, e = self.begin_version, self.end_version
        return self._rows(lambda c, u: (c > b) & (c <= e))

    def get_updated_rows(self) -> pa.RecordBatchReader:
        """Rows that existed at ``begin`` and were updated after it (up to ``end``),
        among the rows of the dataset's version."""
        b, e = self.begin_version, self.end_version
        return self._rows(lambda c, u: (c <= b) & (u > b) & (u <= e))


@dataclass
class IOStats:
    """Requests made through a dataset's object store (``ds.io_stats_snapshot()``):
    pylance's field names."""

    read_iops: int = 0
    read_bytes: int = 0
    write_iops: int = 0
    written_bytes: int = 0


@dataclass
class ScanStatistics:
    """What one scan did (given to ``scanner(scan_stats_callback=...)`` when the scan
    ends): requests and bytes read through the dataset's store, and counts."""

    iops: int = 0
    requests: int = 0
    bytes_read: int = 0
    indices_loaded: int = 0
    parts_loaded: int = 0
    index_comparisons: int = 0
    all_counts: dict = field(default_factory=dict)
