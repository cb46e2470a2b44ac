"""Operations a driver commits for its workers: pylance's ``LanceOperation`` and
``LanceDataset.commit``.

Workers write fragments (:func:`lancenb.fragment.write_fragments`,
``LanceFragment.create``) and send back :class:`FragmentMetadata`; the driver wraps
them in one operation and commits it::

    frags = [f for part in client.gather(futures) for f in part]
    ds = lancenb.LanceDataset.commit(uri, lancenb.LanceOperation.Append(frags),
                                     read_version=ds.version)

Each operation becomes a :class:`lancenb.table.transaction.Transaction` (the
``lance.table.Transaction`` protobuf) and goes through the one commit protocol of
:mod:`lancenb.table.commit` -- the conflict checks against everything committed
after ``read_version`` and the put-if-absent retries every other writer uses.

``UpdateConfig`` (config, table, schema and field metadata maps) commits like the
others. Operations lancenb does not apply (data overlays,
clones through ``commit``) exist under their pylance names so code imports, and raise
:class:`~lancenb.errors.NotSupportedError` when committed.
"""

from __future__ import annotations

import dataclasses
import os
import uuid as uuidlib
import warnings
from dataclasses import dataclass, field

import pyarrow as pa

from lancenb._proto import file_pb2, table_pb2, transaction_pb2
from lancenb._version import __version__
from lancenb.dataset.write.cleanup import after_commit
from lancenb.errors import InvalidInputError, LanceIOError, NotSupportedError
from lancenb.file.extensions import storage_schema
from lancenb.file.reader import cached_fields_to_schema
from lancenb.file.schema import fields_to_schema, schema_to_fields
from lancenb.file.version import FileVersion
from lancenb.table.commit import (
    DEFAULT_MAX_RETRIES,
    commit,
    commit_detached,
    is_detached,
    list_versions,
    load_manifest,
    open_store,
)
from lancenb.table.fragments import DataFile, FragmentMetadata, as_pb
from lancenb.table.indices import CreateIndex as _CreateIndex
from lancenb.table.indices import index_from_pb
from lancenb.table.transaction import Op, new_fragments
from lancenb.table.transaction import Transaction as _Txn

_T = transaction_pb2.Transaction

__all__ = ["LanceOperation", "Transaction", "to_transaction", "file_version_of"]


def _check_fragments(frags, what: str) -> None:
    if not isinstance(frags, list):
        raise InvalidInputError(f"{what} must be a list of FragmentMetadata, not "
                                f"{type(frags).__name__}")


class LanceOperation:
    """pylance's ``lance.LanceOperation`` namespace: one dataclass per operation."""

    class BaseOperation:
        """Base class of the operations :meth:`LanceDataset.commit` accepts."""

    @dataclass
    class Overwrite(BaseOperation):
        """Create a dataset or replace its data and schema with ``fragments``
        (their ids are reassigned at commit)."""

        new_schema: object
        fragments: list
        initial_bases: list | None = None

        def __post_init__(self):
            _check_fragments(self.fragments, "Overwrite.fragments")

    @dataclass
    class Append(BaseOperation):
        """Add ``fragments`` (new ids assigned at commit)."""

        fragments: list

        def __post_init__(self):
            _check_fragments(self.fragments, "Append.fragments")

    @dataclass
    class Delete(BaseOperation):
        """Fragments with new deletion files, and fragments removed whole."""

        updated_fragments: list
        deleted_fragment_ids: list
        predicate: str

        def __post_init__(self):
            _check_fragments(self.updated_fragments, "Delete.updated_fragments")

    @dataclass
    class Update(BaseOperation):
        """Rows moved: updated fragments (deletions), new fragments, removed ids."""

        removed_fragment_ids: list = field(default_factory=list)
        updated_fragments: list = field(default_factory=list)
        new_fragments: list = field(default_factory=list)
        fields_modified: list = field(default_factory=list)
        fields_for_preserving_frag_bitmap: list = field(default_factory=list)
        update_mode: str = ""
        updated_fragment_offsets: dict | None = None

        def __post_init__(self):
            _check_fragments(self.updated_fragments, "Update.updated_fragments")
            _check_fragments(self.new_fragments, "Update.new_fragments")

    @dataclass
    class Merge(BaseOperation):
        """Replace every fragment and the schema (new columns added to fragments).
        ``schema``: a ``pa.Schema`` (columns matched to the read version's fields by
        name, new ones given new ids) or a list of Lance field protobufs."""

        fragments: list
        schema: object
        preserves_nullability: bool = False

        def __post_init__(self):
            if isinstance(self.schema, pa.Schema):  # pylance's deprecation
                warnings.warn("Passing a pyarrow.Schema to Merge is deprecated. "
                              "Please use a LanceSchema instead.", DeprecationWarning,
                              stacklevel=3)
            _check_fragments(self.fragments, "Merge.fragments")

    @dataclass
    class Restore(BaseOperation):
        """Make ``version`` the latest, as a new version."""

        version: int

    @dataclass
    class RewriteGroup:
        """Fragments replaced by new ones holding the same rows (compaction)."""

        old_fragments: list
        new_fragments: list

    @dataclass
    class RewrittenIndex:
        """An index remapped by a rewrite (refused: lancenb has no indices)."""
        old_id: str
        new_id: str
        new_details_type_url: str = ""
        new_details_value: bytes = b""
        new_index_version: int = 0

    @dataclass
    class Rewrite(BaseOperation):
        """Compaction's operation: groups of old fragments replaced by new ones."""
        groups: list
        rewritten_indices: list = field(default_factory=list)

    @dataclass
    class Project(BaseOperation):
        """Keep/rename columns: the new schema (a ``pa.Schema`` or field protobufs)."""

        schema: object
        preserves_nullability: bool = False

    class CreateIndex(_CreateIndex, BaseOperation):
        """Add index segments (:class:`lancenb.dataset.Index`; each replaces the
        indices of its name) and remove ``removed_indices`` (by uuid), as pylance's
        ``LanceOperation.CreateIndex``; the index files must be in ``_indices/<uuid>/``
        already."""

    @dataclass
    class DataReplacementGroup:
        """The data file ``new_file`` (a :class:`~lancenb.fragment.DataFile`) replacing
        the file of the same fields in fragment ``fragment_id``."""
        fragment_id: int
        new_file: object

    @dataclass
    class DataReplacement(BaseOperation):
        """Replace data files of fragments (pylance's rules: every new file has the same
        fields; each replaces the file with those fields and file version in its
        fragment, or is added to it when the fragment has none of those fields)."""
        replacements: list

    @dataclass
    class Clone(BaseOperation):
        """A copy of another dataset's version (``deep_clone``: files copied; a
        shallow clone refers to them through base paths, which lancenb refuses)."""

        is_shallow: bool
        ref_name: str | None
        ref_version: int
        ref_path: str
        branch_name: str | None = None

    @dataclass
    class UpdateMap:
        """Entries to set (and, with ``replace``, the whole map) of a config map."""
        updates: dict
        replace: bool = False

    @dataclass
    class UpdateConfig(BaseOperation):
        """Change the dataset's config, table, schema or field metadata."""
        config_updates: object = None
        table_metadata_updates: object = None
        schema_metadata_updates: object = None
        field_metadata_updates: object = None


@dataclass
class Transaction:
    """pylance's ``lance.Transaction``: an operation and the version it was read at
    (what ``write_fragments(..., return_transaction=True)`` returns)."""

    read_version: int
    operation: LanceOperation.BaseOperation
    uuid: str = dataclasses.field(default_factory=lambda: str(uuidlib.uuid4()))
    transaction_properties: dict | None = dataclasses.field(default_factory=dict)


# -- conversion to the commit protocol's transaction ---------------------------------

def file_version_of(frags_pb) -> FileVersion | None:
    """The file version of the fragments' data files (None: no files); mixed
    versions are refused."""
    seen = set()
    for f in frags_pb:
        for df in f.files:
            seen.add(FileVersion.for_data_file(int(df.file_major_version),
                                               int(df.file_minor_version),
                                               f"data file {df.path!r}"))
    if len(seen) > 1:
        raise InvalidInputError(f"the fragments mix data file versions "
                                f"{sorted(v.label for v in seen)}")
    return seen.pop() if seen else None


def _subtree(fields_pb, top_id: int) -> list:
    ids = {top_id}
    out = []
    for f in fields_pb:  # pre-order: a child follows its parent
        if f.id in ids or f.parent_id in ids:
            ids.add(f.id)
            g = file_pb2.Field()
            g.CopyFrom(f)
            out.append(g)
    return out


def schema_fields(schema, base_fields=None) -> list:
    """Lance field protobufs for ``schema``: protobufs pass through; a ``pa.Schema``
    keeps the ids of ``base_fields`` whose top-level name and type match and gives
    other columns ids after the largest one in use."""
    if isinstance(schema, (list, tuple)) and all(isinstance(f, file_pb2.Field) for f in schema):
        return list(schema)
    if hasattr(schema, "to_pyarrow") and hasattr(schema, "_fields"):  # a LanceSchema
        return list(schema._fields)
    if not isinstance(schema, pa.Schema):
        raise InvalidInputError(f"schema must be a pyarrow.Schema or a list of Lance field "
                                f"protobufs, not {type(schema).__name__}")
    # extension columns (uuid, JSON ...) as Lance stores them, as the data files hold them
    schema = storage_schema(schema) or schema
    fresh, _ = schema_to_fields(schema)
    if not base_fields:
        return fresh
    base_schema, base_tops = fields_to_schema(base_fields)
    by_name = {t.name: t for t in base_tops}
    next_id = max((f.id for f in base_fields), default=-1) + 1
    out = []
    for top in schema:
        old = by_name.get(top.name)
        if old is not None and base_schema.field(top.name).type == top.type:
            out += _subtree(base_fields, old.id)
            continue
        sub, _ = schema_to_fields(pa.schema([top]))
        remap = {f.id: f.id + next_id for f in sub}
        for f in sub:
            f.id = remap[f.id]
            if f.parent_id != -1:
                f.parent_id = remap[f.parent_id]
        next_id += len(sub)
        out += sub
    return out


def _pbs(frags, what: str) -> list:
    _check_fragments(list(frags) if not isinstance(frags, list) else frags, what)
    return [as_pb(f) for f in frags]


def _schema_metadata(schema) -> dict:
    if not isinstance(schema, pa.Schema):
        return {}
    return {(k.decode() if isinstance(k, bytes) else k): v
            for k, v in (schema.metadata or {}).items()}


def _append(op, base_fields, base) -> _Txn:
    return _Txn(0, Op.APPEND, _T.Append(fragments=_pbs(op.fragments, "fragments")))


def _overwrite(op, base_fields, base) -> _Txn:
    if op.initial_bases:
        raise NotSupportedError("Overwrite(initial_bases=...) is not supported by lancenb")
    frags = _pbs(op.fragments, "fragments")
    bad = [f.id for f in frags if f.HasField("deletion_file")]
    if bad:
        raise InvalidInputError(f"Overwrite fragments must not have deletion files "
                                f"(fragment ids {bad}); commit deletions with Delete")
    msg = _T.Overwrite(fragments=frags, schema=schema_fields(op.new_schema))
    for k, v in _schema_metadata(op.new_schema).items():
        msg.schema_metadata[k] = v
    return _Txn(0, Op.OVERWRITE, msg)


def _delete(op, base_fields, base) -> _Txn:
    upd = _pbs(op.updated_fragments, "updated_fragments")
    txn = _Txn(0, Op.DELETE,
               _T.Delete(updated_fragments=upd,
                         deleted_fragment_ids=[int(i) for i in op.deleted_fragment_ids],
                         predicate=str(op.predicate or "")))
    txn.rows_known = False  # (as pylance: rebased over nothing that touched its fragments)
    return txn


def _update(op, base_fields, base) -> _Txn:
    if op.updated_fragment_offsets:
        raise NotSupportedError("Update(updated_fragment_offsets=...) is not supported")
    msg = _T.Update(removed_fragment_ids=[int(i) for i in op.removed_fragment_ids],
                    updated_fragments=_pbs(op.updated_fragments, "updated_fragments"),
                    new_fragments=_pbs(op.new_fragments, "new_fragments"),
                    fields_modified=[int(i) for i in op.fields_modified],
                    fields_for_preserving_frag_bitmap=[
                        int(i) for i in op.fields_for_preserving_frag_bitmap])
    txn = _Txn(0, Op.UPDATE, msg)
    txn.rows_known = False  # (as a Delete operation: pylance does not rebase it)
    return txn


def _merge(op, base_fields, base) -> _Txn:
    msg = _T.Merge(fragments=_pbs(op.fragments, "fragments"),
                   schema=schema_fields(op.schema, base_fields),
                   preserves_nullability=bool(op.preserves_nullability))
    meta = _schema_metadata(op.schema) if isinstance(op.schema, pa.Schema) else \
        dict(base.schema_metadata)
    for k, v in meta.items():
        msg.schema_metadata[k] = v
    return _Txn(0, Op.MERGE, msg)


def _project(op, base_fields, base) -> _Txn:
    return _Txn(0, Op.PROJECT, _T.Project(schema=schema_fields(op.schema, base_fields),
                                          preserves_nullability=bool(op.preserves_nullability)))


def _rewrite(op, base_fields, base) -> _Txn:
    if op.rewritten_indices:
        raise NotSupportedError("Rewrite(rewritten_indices=...) is not supported: lancenb "
                                "datasets carry no indices it can remap")
    groups = [_T.Rewrite.RewriteGroup(old_fragments=_pbs(g.old_fragments, "old_fragments"),
                                      new_fragments=_pbs(g.new_fragments, "new_fragments"))
              for g in op.groups]
    return _Txn(0, Op.REWRITE, _T.Rewrite(groups=groups))


def _restore(op, base_fields, base) -> _Txn:
    return _Txn(0, Op.RESTORE, _T.Restore(version=int(op.version)))


def _update_config(op, base_fields, base) -> _Txn:
    return _Txn(0, Op.UPDATE_CONFIG, update_config_pb(op, base_fields))


def _create_index(op, base_fields, base) -> _Txn:
    return _Txn(0, Op.CREATE_INDEX, op.to_pb())


def _data_replacement(op, base_fields, base) -> _Txn:
    groups = [_T.DataReplacementGroup(fragment_id=int(g.fragment_id),
                                      new_file=_data_file_pb(g.new_file))
              for g in op.replacements]
    return _Txn(0, Op.DATA_REPLACEMENT, _T.DataReplacement(replacements=groups))


_L = LanceOperation
# each public operation class -> the table-layer transaction it stands for
_TO_TABLE = {_L.Append: _append, _L.Overwrite: _overwrite, _L.Delete: _delete,
             _L.Update: _update, _L.Merge: _merge, _L.Project: _project,
             _L.Rewrite: _rewrite, _L.Restore: _restore, _L.UpdateConfig: _update_config,
             _CreateIndex: _create_index,  # (also the table layer's own class)
             _L.DataReplacement: _data_replacement}
_NEED_NO_DATASET = (_L.Append, _L.Overwrite, _L.Restore)


def to_transaction(op, read_version: int, *, store=None, base=None) -> _Txn:
    """The commit protocol's transaction (:class:`lancenb.table.transaction.Transaction`)
    for a :class:`LanceOperation` operation.

    ``base`` is the manifest (protobuf) at ``read_version`` (None: no dataset yet);
    ``store`` the dataset's object store (kept for callers; no operation needs it now).
    """
    if base is None and not isinstance(op, _NEED_NO_DATASET):
        raise InvalidInputError(f"{type(op).__name__} needs an existing dataset at "
                                f"read_version {read_version}")
    build = next((fn for cls, fn in _TO_TABLE.items() if isinstance(op, cls)), None)
    if build is None:
        if isinstance(op, _L.BaseOperation):
            raise NotSupportedError(f"lancenb cannot commit LanceOperation."
                                    f"{type(op).__name__}")
        raise InvalidInputError(f"operation must be a LanceOperation operation or a "
                                f"Transaction, not {type(op).__name__}")
    txn = build(op, list(base.fields) if base is not None else [], base)
    txn.pb.read_version = int(read_version)
    return txn


def _data_file_pb(df):
    """A ``DataFile`` protobuf from lancenb's or pylance's ``DataFile`` (or a protobuf)."""
    if isinstance(df, table_pb2.DataFile):
        return df
    if hasattr(df, "to_pb"):
        return df.to_pb()
    if hasattr(df, "to_json"):
        return DataFile(**{k: v for k, v in df.to_json().items()}).to_pb()
    raise InvalidInputError(f"new_file must be a DataFile, not {type(df).__name__}")


def _update_map_pb(upd) -> transaction_pb2.Transaction.UpdateMap:
    if isinstance(upd, dict):
        upd = LanceOperation.UpdateMap(upd)
    out = transaction_pb2.Transaction.UpdateMap(replace=bool(upd.replace))
    for k, v in (upd.updates or {}).items():
        e = out.update_entries.add(key=str(k))
        if v is not None:
            e.value = str(v)
    return out


def update_config_pb(op, base_fields) -> transaction_pb2.Transaction.UpdateConfig:
    """The ``UpdateConfig`` protobuf of a :class:`LanceOperation.UpdateConfig`; field
    metadata updates are keyed by field id (an int) or by field path (a str)."""
    msg = transaction_pb2.Transaction.UpdateConfig()
    for name in ("config_updates", "table_metadata_updates", "schema_metadata_updates"):
        upd = getattr(op, name)
        if upd is not None:
            getattr(msg, name).CopyFrom(_update_map_pb(upd))
    ids = {field_path(base_fields, f): f.id for f in base_fields}
    for key, upd in (op.field_metadata_updates or {}).items():
        if isinstance(key, str):
            if key not in ids:
                raise InvalidInputError(f"field metadata update of {key!r}: the schema has no "
                                        f"such field (it has {sorted(ids)})")
            key = ids[key]
        msg.field_metadata_updates[int(key)].CopyFrom(_update_map_pb(upd))
    return msg


def field_path(fields, f) -> str:
    """The dotted path of field ``f`` among the Lance field protobufs ``fields``."""
    by_id = {g.id: g for g in fields}
    parts = [f.name]
    while f.parent_id in by_id:
        f = by_id[f.parent_id]
        parts.append(f.name)
    return ".".join(reversed(parts))


def commit_store(base_uri, storage_options=None, commit_lock=None):
    """The object store ``LanceDataset.commit`` commits to, for a URI."""
    if not isinstance(base_uri, (str, os.PathLike)):
        raise InvalidInputError(f"base_uri must be a str, Path or LanceDataset, not "
                                f"{type(base_uri).__name__}")
    return open_store(base_uri, storage_options, commit_lock, None)


def commit_operation(store, operation, read_version=None, *, enable_v2_manifest_paths=None,
                     max_retries=None, enable_stable_row_ids=None, detached=False,
                     commit_message=None, **kwargs):
    """Commit ``operation`` to the dataset of ``store``; returns the new manifest file
    (``LanceDataset.commit``: see :meth:`lancenb.dataset.LanceDataset.commit`)."""
    unknown = sorted(k for k in kwargs if k not in ("commit_timeout", "base_store_params"))
    if unknown:
        raise InvalidInputError(f"unsupported LanceDataset.commit options: {unknown}")
    properties = {}
    if isinstance(operation, Transaction):
        read_version = operation.read_version
        properties = dict(operation.transaction_properties or {})
        op = operation.operation
    else:
        op = operation
    if commit_message is not None:
        properties["__lance_commit_message"] = str(commit_message)  # pylance's key
    if read_version is None and not isinstance(op, (_L.Overwrite, _L.Restore)):
        raise InvalidInputError("read_version is required for all operations except "
                                "Overwrite and Restore")
    versions, naming = list_versions(store)
    if read_version is None:
        read_version = versions[-1] if versions else 0
    read_version = int(read_version)
    if is_detached(read_version) and not detached:
        raise InvalidInputError(f"read_version {read_version} is a detached version: only a "
                                f"detached commit can build on it")
    if read_version and read_version not in versions and not is_detached(read_version):
        raise InvalidInputError(f"read_version {read_version} is not a version of "
                                f"{store.uri!r}")
    v2 = naming if naming is not None else (True if enable_v2_manifest_paths is None
                                            else bool(enable_v2_manifest_paths))
    if detached and not versions:
        raise InvalidInputError("detached commits cannot currently be used to create new "
                                "datasets")
    if detached and not v2:
        raise LanceIOError(f"detached commits cannot be used with v1 manifest paths "
                           f"({store.uri!r}: migrate_manifest_paths_v2() first)")
    base = load_manifest(store, read_version, v2) if read_version else None
    txn = to_transaction(op, read_version, store=store,
                         base=base.manifest if base is not None else None)
    for k, v in properties.items():
        txn.pb.transaction_properties[k] = v
    if txn.op is Op.OVERWRITE and enable_stable_row_ids is not None:
        txn.enable_stable_row_ids = bool(enable_stable_row_ids)
    if txn.op is Op.RESTORE:
        target = load_manifest(store, int(op.version), v2)
        txn.restore_manifest = target.manifest
        txn.restore_index_section = target.index_section_bytes()
    new = file_version_of(new_fragments(txn.pb))
    if base is not None and txn.op is not Op.OVERWRITE:
        fmt = base.manifest.data_format.version or "2.0"
        if new is not None and new is not FileVersion.resolve(fmt):
            raise InvalidInputError(f"cannot commit {new.label} data files to a dataset of "
                                    f"{fmt} files")
    else:
        fmt = (new or FileVersion.resolve(None)).label
    retries = DEFAULT_MAX_RETRIES if max_retries is None else int(max_retries)
    if detached:  # (no auto cleanup: a detached version is not the dataset's latest)
        return commit_detached(store, txn, base=base, data_format=fmt,
                               writer_version=__version__, max_retries=retries)
    mf = commit(store, txn, v2_names=v2, data_format=fmt, writer_version=__version__,
                max_retries=retries, base=base)
    after_commit(store, mf)
    return mf


def fragment_metadata(frags_pb) -> list[FragmentMetadata]:
    """``FragmentMetadata`` objects of fragment protobufs."""
    return [FragmentMetadata.from_pb(f) for f in frags_pb]


# -- transaction protobuf -> LanceOperation ------------------------------------------

def _frags(pbs) -> list:
    return fragment_metadata(pbs)


def _map(upd):
    return LanceOperation.UpdateMap({e.key: (e.value if e.HasField("value") else None)
                                     for e in upd.update_entries}, bool(upd.replace))


def _schema(fields, metadata) -> pa.Schema:
    return cached_fields_to_schema(list(fields), dict(metadata))[0]


def _clone_of(o):
    return _L.Clone(bool(o.is_shallow), o.ref_name if o.HasField("ref_name") else None,
                    int(o.ref_version), o.ref_path,
                    o.branch_name if o.HasField("branch_name") else None)


def _merge_of(o):
    from lancenb.dataset.descriptions import LanceSchema  # (descriptions.py imports us)
    return _L.Merge(_frags(o.fragments),
                    LanceSchema(list(o.schema), _schema(o.schema, o.schema_metadata)),
                    bool(o.preserves_nullability))


def _update_config_of(o):
    return _L.UpdateConfig(
        _map(o.config_updates) if o.HasField("config_updates") else None,
        _map(o.table_metadata_updates) if o.HasField("table_metadata_updates") else None,
        _map(o.schema_metadata_updates) if o.HasField("schema_metadata_updates") else None,
        {int(k): _map(v) for k, v in o.field_metadata_updates.items()} or None)


# each table-layer operation kind -> its public operation (from its protobuf message)
_FROM_TABLE = {
    Op.APPEND: lambda o: _L.Append(_frags(o.fragments)),
    Op.DELETE: lambda o: _L.Delete(_frags(o.updated_fragments), list(o.deleted_fragment_ids),
                                   o.predicate),
    Op.OVERWRITE: lambda o: _L.Overwrite(_schema(o.schema, o.schema_metadata),
                                         _frags(o.fragments)),
    Op.UPDATE: lambda o: _L.Update(list(o.removed_fragment_ids), _frags(o.updated_fragments),
                                   _frags(o.new_fragments), list(o.fields_modified),
                                   list(o.fields_for_preserving_frag_bitmap)),
    Op.MERGE: _merge_of,
    Op.PROJECT: lambda o: _L.Project(_schema(o.schema, {}), bool(o.preserves_nullability)),
    Op.RESTORE: lambda o: _L.Restore(int(o.version)),
    Op.REWRITE: lambda o: _L.Rewrite([_L.RewriteGroup(_frags(g.old_fragments),
                                                      _frags(g.new_fragments))
                                      for g in o.groups]),
    Op.UPDATE_CONFIG: _update_config_of,
    Op.CREATE_INDEX: lambda o: _L.CreateIndex([index_from_pb(i) for i in o.new_indices],
                                              [index_from_pb(i) for i in o.removed_indices]),
    Op.CLONE: _clone_of,
}


def transaction_of(pb):
    """A ``lance.table.Transaction`` protobuf as a :class:`lancenb.Transaction` with
    the :class:`lancenb.LanceOperation` operation (as pylance's ``read_transaction``)."""
    kind = Op.of(pb)
    read = _FROM_TABLE.get(kind)
    op = read(kind.message(pb)) if read is not None else _L.BaseOperation()
    return Transaction(int(pb.read_version), op, pb.uuid, dict(pb.transaction_properties))
