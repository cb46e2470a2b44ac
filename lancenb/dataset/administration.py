"""More of pylance's ``LanceDataset`` API, as a mixin of :class:`LanceDataset`.

* configuration and metadata: ``update_config``, ``delete_config_keys``,
  ``update_metadata``, ``update_schema_metadata``, ``update_field_metadata`` and the
  deprecated ``replace_*`` forms. Each commits one ``UpdateConfig`` transaction
  (the protobuf pylance writes: ``UpdateMap`` entries, an entry without a value
  removes its key) through the commit protocol;
* history: ``read_transaction``, ``get_transactions``, ``version_refs``;
* files: ``all_files``, ``tracked_files``, ``fragment_ids``, ``validate``,
  ``stats``, ``lance_schema``, ``base_paths``;
* whole-dataset changes: ``truncate_table``, ``drop``, ``migrate_manifest_paths_v2``.

Features lancenb's table format lacks (branches, extra base paths, file sessions)
raise :class:`~lancenb.errors.NotSupportedError` saying why.
"""

from __future__ import annotations

import datetime as _dt
import re
import warnings

import pyarrow as pa

from lancenb._proto import table_pb2, transaction_pb2
from lancenb._version import __version__
from lancenb.dataset.branching import create_branch, shallow_clone
from lancenb.dataset.descriptions import (
    CleanupCandidateFile,
    CleanupExplanation,
    DatasetBasePath,
    DatasetDelta,
    IOStats,
    LanceSchema,
    LanceStats,
)
from lancenb.dataset.operations import LanceOperation, Transaction, transaction_of, update_config_pb
from lancenb.dataset.read import blob
from lancenb.dataset.write.insert import cleanup
from lancenb.dataset.write.optimize import _mtime
from lancenb.errors import (
    BatchCommitError,
    CorruptFileError,
    DatasetNotFoundError,
    InvalidInputError,
    NotSupportedError,
)
from lancenb.file.schema_json import pydantic_to_schema
from lancenb.table.branches import Branches
from lancenb.table.commit import (
    commit,
    list_versions,
    load_manifest,
    load_transaction,
    open_store,
)
from lancenb.table.deletion import deletion_path
from lancenb.table.manifest import VERSIONS_DIR, check_feature_flags, manifest_name
from lancenb.table.transaction import Op
from lancenb.table.transaction import Transaction as _Txn

__all__ = ["DatasetAdministration", "transaction_of"]

FRAG_REUSE_INDEX = "__lance_frag_reuse"  # the reference's name for that index
_TRACKED_SCHEMA = pa.schema([
    pa.field("version", pa.int64(), nullable=False),
    pa.field("base_uri", pa.dictionary(pa.int32(), pa.string()), nullable=False),
    pa.field("path", pa.string(), nullable=False),
    pa.field("type", pa.dictionary(pa.int8(), pa.string()), nullable=False)])
_ALL_FILES_SCHEMA = pa.schema([
    pa.field("base_uri", pa.dictionary(pa.int32(), pa.string()), nullable=False),
    pa.field("path", pa.string(), nullable=False),
    pa.field("size_bytes", pa.int64(), nullable=False),
    pa.field("last_modified", pa.timestamp("us", tz="UTC"), nullable=False)])


def _str_map(values, what: str) -> dict:
    if not isinstance(values, dict):
        raise InvalidInputError(f"{what} must be a dict of str to str (or None), not "
                                f"{type(values).__name__}")
    for k, v in values.items():
        if not isinstance(k, str) or not (v is None or isinstance(v, str)):
            raise InvalidInputError(f"{what}: {k!r}: {v!r} is not a str key with a str or "
                                    f"None value")
    return values


class DatasetAdministration:
    """Mixin of :class:`lancenb.LanceDataset` (see the module docstring)."""

    # -- configuration and metadata ---------------------------------------------
    def _update_config(self, **maps) -> None:
        check_feature_flags(self._mf.manifest, self._mf.name, write=True)
        op = LanceOperation.UpdateConfig(**maps)
        pb = update_config_pb(op, list(self._mf.manifest.fields))
        self._commit(_Txn(self.version, Op.UPDATE_CONFIG, pb))

    def update_config(self, values: dict, *, replace: bool = False) -> dict:
        """Set (or, with value None, remove) dataset config keys; ``replace=True``
        replaces the whole config. Returns the new config.

        Examples
        --------
        >>> ds.update_config({"lance.auto_cleanup.interval": "10"})  # doctest: +SKIP
        """
        self._update_config(config_updates=LanceOperation.UpdateMap(
            _str_map(values, "update_config values"), replace))
        return self.config()

    def delete_config_keys(self, keys) -> None:
        """Remove ``keys`` from the dataset config (absent keys are ignored)."""
        self._update_config(config_updates=LanceOperation.UpdateMap(
            {str(k): None for k in keys}))

    def update_metadata(self, values: dict, *, replace: bool = False) -> dict:
        """Set (value None: remove) keys of the table metadata (``ds.metadata``);
        returns the new table metadata."""
        self._update_config(table_metadata_updates=LanceOperation.UpdateMap(
            _str_map(values, "update_metadata values"), replace))
        return self.metadata

    def update_schema_metadata(self, values: dict, *, replace: bool = False) -> dict:
        """Set (value None: remove) keys of the schema's metadata; returns it."""
        self._update_config(schema_metadata_updates=LanceOperation.UpdateMap(
            _str_map(values, "update_schema_metadata values"), replace))
        return self.schema_metadata

    def update_field_metadata(self, field_updates: dict, *, replace: bool = False) -> None:
        """``{field path or id: {key: value or None}}``: change fields' metadata."""
        if not isinstance(field_updates, dict):
            raise InvalidInputError("field_updates must be a dict of field path to dict")
        self._update_config(field_metadata_updates={
            k: LanceOperation.UpdateMap(_str_map(v, f"metadata of field {k!r}"), replace)
            for k, v in field_updates.items()})

    def replace_schema_metadata(self, new_metadata: dict) -> None:
        """Deprecated (as in pylance): ``update_schema_metadata(m, replace=True)``."""
        warnings.warn("replace_schema_metadata is deprecated. Use "
                      "update_schema_metadata(metadata, replace=True) instead.",
                      DeprecationWarning, stacklevel=2)
        self.update_schema_metadata(new_metadata, replace=True)

    def replace_field_metadata(self, field_name: str, new_metadata: dict) -> None:
        """Deprecated (as in pylance): ``update_field_metadata({f: m}, replace=True)``."""
        warnings.warn("replace_field_metadata is deprecated. Use update_field_metadata with "
                      "field paths and replace=True instead.", DeprecationWarning,
                      stacklevel=2)
        self.update_field_metadata({field_name: new_metadata}, replace=True)

    # -- history -------------------------------------------------------------------
    def read_transaction(self, version: int):
        """The :class:`lancenb.Transaction` that made ``version`` (None if its
        transaction is not recorded)."""
        versions, _ = list_versions(self._store)
        if int(version) not in versions:
            raise DatasetNotFoundError(f"dataset {self.uri!r} has no version {version}")
        mf = load_manifest(self._store, int(version), self._v2)
        pb = load_transaction(self._store, mf)
        return None if pb is None else transaction_of(pb)

    def get_transactions(self, recent_transactions: int = 10) -> list:
        """The transactions of the latest ``recent_transactions`` versions up to this
        one, newest first (None where one is not recorded)."""
        first = max(1, self.version - int(recent_transactions) + 1)
        return [self.read_transaction(v) for v in range(self.version, first - 1, -1)]

    def version_refs(self) -> list:
        """``[{"version": v}]`` for every version, oldest first."""
        return [{"version": v} for v in list_versions(self._store)[0]]

    def delta(self, compared_against: int | None = None, *, begin_version=None,
              end_version=None) -> DatasetDelta:
        """The changes between this version and ``compared_against`` (either order),
        or between ``begin_version`` and ``end_version``: a :class:`DatasetDelta`."""
        if compared_against is not None:
            if begin_version is not None or end_version is not None:
                raise InvalidInputError("delta: give compared_against or begin_version/"
                                        "end_version, not both")
            begin, end = sorted((int(compared_against), self.version))
        elif begin_version is None or end_version is None:
            raise InvalidInputError("delta: give compared_against, or both begin_version "
                                    "and end_version")
        else:
            begin, end = int(begin_version), int(end_version)
        if begin > end:
            raise InvalidInputError(f"delta: begin_version {begin} is after end_version {end}")
        return DatasetDelta(self, begin, end)

    # -- files -----------------------------------------------------------------------
    def fragment_ids(self) -> list:
        """The ids of this version's fragments, ascending (pylance returns a bitmap
        of the same ids)."""
        return sorted(int(f.id) for f in self._mf.manifest.fragments)

    def all_files(self) -> pa.RecordBatchReader:
        """Every object under the dataset root: ``base_uri``, ``path`` (relative),
        ``size_bytes``, ``last_modified``."""
        store = self._store
        root = store.root.rstrip("/")
        rows = {"base_uri": [], "path": [], "size_bytes": [], "last_modified": []}
        for p, info in sorted(store.fs.find(root, detail=True).items()):
            if info.get("type") == "directory":
                continue
            rel = p[len(root):].lstrip("/")
            rows["base_uri"].append(self.uri)
            rows["path"].append(rel)
            rows["size_bytes"].append(int(info.get("size") or 0))
            rows["last_modified"].append(_modified(store, rel))
        t = pa.table(rows, schema=_ALL_FILES_SCHEMA)
        return pa.RecordBatchReader.from_batches(t.schema, t.to_batches())

    def tracked_files(self, *, min_version: int | None = None,
                      progress=None) -> pa.RecordBatchReader:
        """Every file some manifest version references, newest version first:
        ``version``, ``base_uri``, ``path`` (relative to the root), ``type``
        (``manifest``, ``transaction file``, ``data file``, ``deletion file``)."""
        versions, naming = list_versions(self._store)
        rows = {"version": [], "base_uri": [], "path": [], "type": []}

        def add(v, path, kind):
            rows["version"].append(v)
            rows["base_uri"].append(self.uri)
            rows["path"].append(path)
            rows["type"].append(kind)

        for v in reversed(versions):
            if min_version is not None and v < min_version:
                continue
            mf = load_manifest(self._store, v, naming)
            m = mf.manifest
            add(v, f"{VERSIONS_DIR}/{manifest_name(v, naming)}", "manifest")
            if m.transaction_file:
                add(v, f"_transactions/{m.transaction_file}", "transaction file")
            for f in m.fragments:
                for d in f.files:
                    add(v, f"data/{d.path}", "data file")
            for f in m.fragments:
                if f.HasField("deletion_file"):
                    add(v, deletion_path(f.id, f.deletion_file), "deletion file")
            if progress is not None:
                progress(1)
        t = pa.table(rows, schema=_TRACKED_SCHEMA)
        return pa.RecordBatchReader.from_batches(t.schema, t.to_batches())

    def validate(self) -> None:
        """Check this version's manifest against its files: fragment ids unique, every
        data and deletion file present, each data file's row count the fragment's
        physical rows, deletions within the fragment. Raises ``CorruptFileError``."""
        seen = set()
        for frag in self.get_fragments():
            fid = frag.fragment_id
            if fid in seen:
                raise CorruptFileError(f"{self.uri!r} version {self.version}: fragment id "
                                       f"{fid} appears twice")
            seen.add(fid)
            try:
                frag.validate()  # its files against its row counts (LanceFragment.validate)
            except CorruptFileError as e:
                raise CorruptFileError(f"{self.uri!r} version {self.version}: {e}") from e

    @property
    def stats(self) -> LanceStats:
        """Dataset and per-field statistics (``ds.stats.dataset_stats()``,
        ``ds.stats.data_stats()``)."""
        return LanceStats(self)

    def list_indices(self) -> list[dict]:
        """The indices this version's manifest lists, as pylance's ``list_indices``:
        name, type, uuid, fields, version, fragment_ids, base_id. lancenb does not
        build or use indices; its commits keep them (:mod:`lancenb.table.indices`)."""
        from lancenb.table.indices import list_indices

        return list_indices(self._mf, self._store)

    @property
    def has_index(self) -> bool:
        """Whether this version's manifest lists any index."""
        from lancenb.table.indices import has_indices

        return has_indices(self._mf)

    @property
    def lance_schema(self) -> LanceSchema:
        """The schema with the manifest's field ids (:class:`LanceSchema`)."""
        return LanceSchema(self._mf.manifest.fields, self.schema)

    def base_paths(self) -> dict:
        """``{id: DatasetBasePath}`` of this version's registered base paths."""
        return {int(b.id): DatasetBasePath(b.path, name=b.name if b.HasField("name") else None,
                                           is_dataset_root=bool(b.is_dataset_root),
                                           id=int(b.id))
                for b in self._mf.manifest.base_paths}

    def explain_cleanup_old_versions(self, older_than=None, retain_versions=None, *,
                                     delete_unverified: bool = False,
                                     error_if_tagged_old_versions: bool = True,
                                     delete_rate_limit=None, versions=None,
                                     include_files: bool = False,
                                     max_files: int = 1000) -> CleanupExplanation:
        """What :meth:`cleanup_old_versions` with the same options would remove,
        without removing anything: its statistics and, with ``include_files``, up to
        ``max_files`` of the files."""
        if versions is not None:
            raise NotSupportedError("explain_cleanup_old_versions(versions=...) is not "
                                    "supported by lancenb; use older_than/retain_versions")
        stats = self.cleanup_old_versions(older_than, retain_versions,
                                          delete_unverified=delete_unverified,
                                          error_if_tagged_old_versions=(
                                              error_if_tagged_old_versions),
                                          dry_run=True)
        kinds = (("_versions/", "manifest"), ("_transactions/", "transaction"),
                 ("data/", "data"), ("_deletions/", "deletion"))
        files = []
        if include_files:
            for rel in stats.removed[:max(0, int(max_files))]:
                kind = next((k for prefix, k in kinds if rel.startswith(prefix)), "other")
                files.append(CleanupCandidateFile(self._store.path(rel).lstrip("/"), kind,
                                                  False, self._store.size(rel)))
        return CleanupExplanation(self.version, stats, files,
                                  include_files and len(stats.removed) > int(max_files),
                                  int(max_files))

    def io_stats_snapshot(self) -> IOStats:
        """Reads and writes made through this dataset's object store so far: every
        ranged read of a data file, every object read or written whole (manifests,
        transactions, deletion files) and each data file committed."""
        c = self._store.io_stats
        return IOStats(c.reads, c.bytes_read, c.writes, c.bytes_written)

    def io_stats_incremental(self) -> IOStats:
        """:meth:`io_stats_snapshot`, then the counters start again from zero."""
        c = self._store.io_stats.take()
        return IOStats(c.reads, c.bytes_read, c.writes, c.bytes_written)

    # -- whole-dataset changes --------------------------------------------------------
    def truncate_table(self) -> None:
        """Remove every row: a delete of every fragment (predicate ``true``, as
        pylance commits it); the old versions keep their data until cleaned up."""
        check_feature_flags(self._mf.manifest, self._mf.name, write=True)
        op = transaction_pb2.Transaction.Delete(
            deleted_fragment_ids=[f.id for f in self._mf.manifest.fragments], predicate="true")
        self._commit(_Txn(self.version, Op.DELETE, op))

    @staticmethod
    def drop(base_uri, storage_options=None, ignore_not_found=None) -> None:
        """Delete the dataset at ``base_uri`` and everything under it."""
        store = open_store(base_uri, storage_options, None, None)
        if not store.fs.exists(store.root):
            if ignore_not_found:
                return
            raise DatasetNotFoundError(f"no Lance dataset at {store.uri!r}")
        store.fs.rm(store.root, recursive=True)

    def migrate_manifest_paths_v2(self) -> None:
        """Rename manifests from the V1 scheme (``{version}.manifest``) to V2 (names
        that sort newest first); readers of either library find both."""
        versions, naming = list_versions(self._store)
        if naming:
            return
        for v in versions:
            old = f"{VERSIONS_DIR}/{manifest_name(v, False)}"
            new = f"{VERSIONS_DIR}/{manifest_name(v, True)}"
            self._store.write_bytes(new, self._store.read_bytes(old))
            self._store.delete(old)
        self._v2 = True

    # -- more of pylance's calls -------------------------------------------------------
    @classmethod
    def commit_batch(cls, dest, transactions, commit_lock=None, storage_options=None,
                     enable_v2_manifest_paths=None, detached=False, max_retries=20,
                     base_store_params=None, commit_timeout=None) -> dict:
        """Commit several ``Append`` transactions as one version (as pylance, other
        operations are refused). Returns ``{"dataset": LanceDataset, "merged":
        Transaction}``."""
        txns = list(transactions)
        if not txns:
            raise InvalidInputError("commit_batch needs at least one transaction")
        if not all(isinstance(t, Transaction) and isinstance(t.operation, LanceOperation.Append)
                   for t in txns):
            raise BatchCommitError("Only append transactions are supported in batch commits "
                                   "(as in pylance)")
        merged = Transaction(min(t.read_version for t in txns), LanceOperation.Append(
            [f for t in txns for f in t.operation.fragments]))
        ds = cls.commit(dest, merged, commit_lock=commit_lock,
                       storage_options=storage_options,
                       enable_v2_manifest_paths=enable_v2_manifest_paths,
                       detached=detached, max_retries=max_retries)
        return {"dataset": ds, "merged": merged}

    @classmethod
    def from_pydantic_model(cls, model_class, data, uri=None, mode: str = "create",
                            **kwargs):
        """Write a list of Pydantic model instances as a dataset whose schema comes
        from the model's annotations (``uri`` defaults to the class name in
        snake_case)."""
        try:
            from pydantic import BaseModel  # optional dependency, imported on use
        except ImportError:
            raise TypeError("from_pydantic_model needs pydantic installed") from None
        if not (isinstance(model_class, type) and issubclass(model_class, BaseModel)):
            raise TypeError(f"`model_class` must be a Pydantic BaseModel subclass, got "
                            f"{model_class!r}")
        if not isinstance(data, list) or not all(type(d) is model_class for d in data):
            raise TypeError(f"`data` must be a list of {model_class.__name__} instances")
        if not data:
            raise InvalidInputError("`data` must be a non-empty list of Pydantic model "
                                    "instances.")
        if uri is None:
            uri = re.sub(r"(?<!^)(?=[A-Z])", "_", model_class.__name__).lower()
        schema = pydantic_to_schema(model_class)
        table = pa.Table.from_pylist([d.model_dump() for d in data], schema=schema)
        return cls._write_dataset(table, uri, mode=mode, **kwargs)

    def read_blob_ranges(self, blob_column: str, requests, *, selector: str,
                         io_buffer_size=None, preserve_order=None) -> list:
        """Byte ranges of blob values: ``requests`` are ``(row, offset, length)`` with
        rows given as ``selector`` says (``"ids"``, ``"addresses"``, ``"indices"``);
        returns ``[(request index, row address, bytes or None)]`` (None: a null
        blob)."""
        if selector not in ("ids", "addresses", "indices"):
            raise InvalidInputError(f"selector must be 'ids', 'addresses' or 'indices', not "
                                    f"{selector!r}")
        reqs = [(int(r), int(o), int(n)) for r, o, n in requests]
        sel = {"ids": None, "addresses": None, "indices": None}
        sel[selector] = [r for r, _, _ in reqs]
        _, t = blob._select(self, "read_blob_ranges", blob_column, sel["ids"],
                            sel["addresses"], sel["indices"], blob.DEFAULT_BLOB_HANDLING)
        addrs = t.column("_rowaddr").to_pylist()
        present = [a for a, d in zip(addrs, t.column(blob_column).to_pylist())
                   if d is not None]
        files = dict(zip(present, self.take_blobs(blob_column, addresses=present)))
        out = []
        for i, ((_, off, n), addr) in enumerate(zip(reqs, addrs)):
            f = files.get(addr)
            if f is None:
                out.append((i, addr, None))
                continue
            if off < 0 or n < 0 or off + n > f.size():
                raise InvalidInputError(f"Blob range request {i} for row address {addr} is "
                                        f"invalid: Blob range end {off + n} exceeds blob size "
                                        f"{f.size()}")
            out.append((i, addr, f.read_range(off, n)))
        return out

    @property
    def storage_options_accessor(self):
        """None: lancenb has no storage-options provider (refreshing credentials);
        the options given at open are in :attr:`initial_storage_options`."""
        return None

    def remap_row_addrs(self, addrs):
        """Row addresses moved by compactions recorded in a fragment-reuse index:
        None when the dataset has no such index (lancenb never writes one)."""
        raw = self._mf.index_section_bytes()
        if raw:
            sec = table_pb2.IndexSection()
            sec.ParseFromString(raw)
            if any(i.name == FRAG_REUSE_INDEX for i in sec.indices):
                raise NotSupportedError("remap_row_addrs: lancenb does not read the "
                                        "fragment-reuse index this dataset has")
        return None

    def deep_clone(self, target_path, reference, storage_options=None, **kwargs):
        """Copy version ``reference`` (a version number, a tag, or ``(None,
        version)``) to a new dataset at ``target_path``: its data and deletion files
        are copied, and its manifest is committed there under the same version number
        with a ``Clone`` transaction (as pylance; tags are not copied)."""
        if isinstance(reference, tuple):
            branch, reference = reference
            if branch is not None:
                self._no("deep_clone of a branch", "lancenb datasets have no branches")
        if isinstance(reference, str):
            version = self.tags.get_version(reference)
        else:
            version = int(reference if reference is not None else self.version)
        src = self.checkout_version(version)
        target = open_store(target_path, storage_options, kwargs.pop("commit_lock", None),
                            None)
        if kwargs:
            raise TypeError(f"deep_clone got unexpected keyword(s) {sorted(kwargs)}")
        rels = []
        for f in src.manifest.fragments:
            rels += [f"data/{d.path}" for d in f.files]
            if f.HasField("deletion_file"):
                rels.append(deletion_path(f.id, f.deletion_file))
            for kind in ("external_row_ids", "external_created_at_versions",
                         "external_last_updated_at_versions"):
                if f.HasField(kind):
                    rels.append(getattr(f, kind).path)
        op = transaction_pb2.Transaction.Clone(is_shallow=False, ref_version=version,
                                               ref_path=str(self.uri))
        # (pylance records the version a tag names, not the tag: ref_name stays unset)
        txn = _Txn(version, Op.CLONE, op)
        txn.restore_manifest = src.manifest
        txn.clone_version = version
        txn.create_only = True  # never over an existing dataset
        written = []
        try:
            for rel in rels:
                written.append(rel)
                target.write_bytes(rel, self._store.read_bytes(rel), atomic=False)
        except BaseException:
            cleanup(target, written)
            raise
        mf = commit(target, txn, v2_names=True, data_format=src.data_storage_version,
                    writer_version=__version__, written=written)
        return type(self)(target.uri, _store=target, _manifest=mf)

    # -- what lancenb's table format does not have -------------------------------------
    def _no(self, what: str, why: str):
        raise NotSupportedError(f"{what} is not supported by lancenb: {why}")

    @property
    def branches(self) -> Branches:
        """The dataset's branches (:class:`~lancenb.table.branches.Branches`:
        ``list``, ``list_ordered``, ``delete``, ``replace_metadata``), as pylance 14
        stores them (``_refs/branches/``, versions under ``tree/{name}/``)."""
        return Branches(self._root_store)

    def create_branch(self, branch: str, reference=None, storage_options=None):
        """Create branch ``branch`` from ``reference`` (a version of this branch, a
        tag, or ``(branch, version)``; default this object's version) and return the
        dataset on the new branch. Appends to it commit on the branch.

        Examples
        --------
        >>> exp = ds.create_branch("experiment", 2)  # doctest: +SKIP
        >>> exp.insert(table); ds.checkout_version(("experiment", None))  # doctest: +SKIP
        """
        return create_branch(self, branch, reference)

    @property
    def _ds(self):
        """This dataset: pylance's handle to its Rust dataset, through which code
        written for pylance calls ``base_paths()`` and the like."""
        return self

    def checkout_branch(self, branch: str):
        """The latest version of ``branch`` (``"main"``: the main line), as a new
        object (pylance's older API; ``checkout_version((branch, None))``)."""
        return self.checkout_version((branch, None))

    def add_bases(self, bases, transaction_properties=None):
        """Register more base paths (``DatasetBasePath`` objects) in a new version
        (an ``UpdateBases`` commit); ``write_dataset(..., target_bases=[name])`` then
        writes there. Returns this dataset, moved to the new version."""
        from lancenb.dataset.write.bases import add_bases_txn
        from lancenb.table.bases import trust_bases

        if not bases:
            return self  # (nothing to register: no version, as pylance)
        txn = add_bases_txn(self.version, self._mf.manifest, bases, transaction_properties)
        trust_bases(self._store, [b.path for b in bases])
        mf = commit(self._store, txn, v2_names=self._v2, data_format=self.data_storage_version,
                    writer_version=__version__, base=self._mf)
        self._become(mf)
        return self

    def shallow_clone(self, target_path, reference=None, storage_options=None, **kwargs):
        """A new dataset at ``target_path`` holding version ``reference`` (a version,
        a tag or ``(branch, version)``) of this one without copying data: its files
        are named through a base path at this dataset's root (pylance's layout).

        Examples
        --------
        >>> clone = ds.shallow_clone("/tmp/clone", 2)  # doctest: +SKIP
        """
        return shallow_clone(self, target_path, reference, storage_options, **kwargs)

    def session(self):
        """The :class:`lancenb.Session` whose caches this dataset uses (pass it to
        ``lancenb.dataset(..., session=)`` to share them)."""
        return self._session

    def index_cache_hit_rate(self) -> float:
        """The share of this dataset's session index cache lookups (vector searches:
        an index's IVF model and each partition probed) that hit, as pylance's."""
        from lancenb.index.vector.ivf import index_cache_hit_rate

        return index_cache_hit_rate(self._session)

    def new_file_session(self):
        self._no("new_file_session", "file sessions belong to pylance's Rust object store")


def _modified(store, rel: str) -> _dt.datetime:
    t = _mtime(store, rel)
    return _dt.datetime.fromtimestamp(t or 0, _dt.timezone.utc)


for _name in ("new_file_session",):
    getattr(DatasetAdministration, _name).not_supported = True  # scripts/parity.py reads it
