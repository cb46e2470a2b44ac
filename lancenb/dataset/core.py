"""``LanceDataset``, ``dataset()`` and ``write_dataset()``: the pylance-compatible API.

A dataset is a directory (or object-store prefix)::

    data/*.lance                 data files (one or more per fragment)
    _versions/*.manifest         one manifest per version
    _transactions/*.txn          the transaction behind each version
    _deletions/*.{arrow,bin}     deleted rows per fragment
    _refs/tags/*.json            tags: names for versions

Each operation writes its new files first and then commits a manifest with
put-if-absent (see :mod:`lancenb.dataset.commit`), so readers only ever see whole
versions. A :class:`LanceDataset` object is one version; operations that commit
(``delete``, ``restore``, ``insert``) move it to the version they made.
"""

from __future__ import annotations

import datetime as _dt
import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from lancenb._version import __version__ as _lancenb_version
from lancenb._proto import table_pb2, transaction_pb2
from lancenb.dataset import blob
from lancenb.dataset.api_extras import DatasetApiExtras
from lancenb.dataset.commit import (
    commit,
    list_versions,
    load_manifest,
    load_manifests,
    put_new_object,
)
from lancenb.dataset.deletion import deletion_path, write_deletions
from lancenb.dataset.fragment import LanceFragment, open_data_file
from lancenb.dataset.manifest import (
    FLAG_STABLE_ROW_IDS,
    VERSIONS_DIR,
    check_feature_flags,
    manifest_name,
    parse_manifest_name,
)
from lancenb.dataset.scanner import LanceScanner
from lancenb.dataset.transaction import Transaction
from lancenb.dataset.write import (
    DEFAULT_MAX_BYTES_PER_FILE,
    DEFAULT_MAX_ROWS_PER_FILE,
    cleanup,
    normalize_input,
    write_fragments,
)
from lancenb.encodings.structural import dictarray
from lancenb.errors import (
    CorruptFileError,
    DatasetExistsError,
    DatasetNotFoundError,
    InvalidInputError,
    LanceError,
    NotSupportedError,
    SchemaError,
)
from lancenb.file.reader import cached_fields_to_schema
from lancenb.file.schema import fields_to_schema, schema_to_fields
from lancenb.file.version import FileVersion
from lancenb.io.store import ObjectStore

__all__ = ["LanceDataset", "dataset", "write_dataset", "Tags"]

_READER_CACHE_SIZE = 128
_IGNORED_SCAN_OPTIONS = ("use_threads", "batch_readahead", "fragment_readahead",
                         "fragment_scan_options", "cache_metadata", "memory_pool",
                         "io_buffer_size", "scan_in_order")
TAGS_DIR = "_refs/tags"


def _writer_version() -> str:
    return _lancenb_version


class LanceDataset(DatasetApiExtras, pads.Dataset):
    """One version of a Lance dataset (pylance's ``lance.LanceDataset`` subset).

    Like pylance's, it is a ``pyarrow.dataset.Dataset`` to engines: DuckDB and
    Polars call :meth:`scanner`/:meth:`to_table` with the columns and the filter
    (a pyarrow expression) of a query, so projection and filters are pushed down.
    Methods of ``pyarrow.dataset.Dataset`` that lancenb does not implement raise
    :class:`~lancenb.errors.NotSupportedError`.
    """

    def __init__(self, uri, version=None, *, asof=None, storage_options=None,
                 commit_lock=None, manifest_store=None, _store=None, _manifest=None):
        self._store = _store or _open_store(uri, storage_options, commit_lock, manifest_store)
        self._uri = self._store.uri
        if _manifest is None:
            versions, naming = list_versions(self._store)
            if not versions:
                raise DatasetNotFoundError(f"no Lance dataset at {self._uri!r} (no manifests "
                                           f"under _versions/)")
            self._v2 = naming
            v = self._resolve_version(version, asof, versions)
            _manifest = load_manifest(self._store, v, naming)
        else:
            parsed = parse_manifest_name(_manifest.name.rsplit("/", 1)[-1])
            self._v2 = parsed[1] if parsed else True
        self._mf = _manifest
        m = _manifest.manifest
        check_feature_flags(m, _manifest.name, write=False)
        self._schema, self._top_fields = cached_fields_to_schema(m.fields, m.schema_metadata)
        self._cache: dict = {}
        self._manifest_cache: dict = {}  # version -> parsed manifest (versions(), asof=)
        self._readers: dict = {}
        self._fragments: list[LanceFragment] | None = None

    def _resolve_version(self, version, asof, versions: list[int]) -> int:
        if version is not None and asof is not None:
            raise InvalidInputError("pass version= or asof=, not both")
        if isinstance(version, str) and not version.isdigit():
            return Tags(self).get_version(version)
        if version is not None:
            v = int(version)
            if v not in versions:
                raise DatasetNotFoundError(f"dataset {self._uri!r} has no version {v} (it has "
                                           f"{_ranges(versions)})")
            return v
        if asof is not None:
            ts = _as_datetime(asof)
            for v in reversed(versions):
                mf = load_manifest(self._store, v, self._v2)
                when = _manifest_time(mf.manifest, mf.name, _dt.timezone.utc)
                if when <= ts:
                    return v
            raise DatasetNotFoundError(f"dataset {self._uri!r} has no version as of {asof}")
        return versions[-1]

    def __reduce__(self):
        # (uri, version, storage options): the other side reopens the same version;
        # open files, caches and commit locks stay in this process
        return _reopen, (self._uri, self.version, self._store.storage_options)

    @staticmethod
    def commit(base_uri, operation, read_version=None, commit_lock=None, storage_options=None,
               enable_v2_manifest_paths=None, detached=False, max_retries=None, *,
               commit_message=None, enable_stable_row_ids=None, **kwargs) -> "LanceDataset":
        """Commit one :class:`lancenb.LanceOperation` (or a ``Transaction`` from
        ``write_fragments(..., return_transaction=True)``) as a new version.

        The driver side of distributed writes: workers write fragments, this commits
        them. It goes through the same commit protocol as every other writer
        (:mod:`lancenb.dataset.commit`): conflicts with versions committed after
        ``read_version`` are checked, lost races retried (``max_retries``).

        Parameters
        ----------
        base_uri : str, Path or LanceDataset
            The dataset (created by an ``Overwrite`` when it does not exist).
        operation : LanceOperation.BaseOperation or Transaction
        read_version : int, optional
            The version the operation was built against; required except for
            ``Overwrite`` and ``Restore``.
        commit_lock, storage_options, enable_v2_manifest_paths : optional
            As for :func:`lancenb.write_dataset`.
        commit_message : str, optional
            Stored as the transaction property ``__lance_commit_message`` (as pylance
            stores it).
        enable_stable_row_ids : bool, optional
            For an ``Overwrite`` that creates the dataset.

        Examples
        --------
        >>> frags = lancenb.fragment.write_fragments(table, uri)  # doctest: +SKIP
        >>> ds = LanceDataset.commit(uri, LanceOperation.Append(frags),
        ...                          read_version=1)  # doctest: +SKIP
        """
        from lancenb.dataset.operations import commit_operation  # it builds on this module

        unknown = sorted(k for k in kwargs if k not in ("commit_timeout", "base_store_params"))
        if unknown:
            raise InvalidInputError(f"unsupported LanceDataset.commit options: {unknown}")
        return commit_operation(base_uri, operation, read_version, commit_lock=commit_lock,
                                storage_options=storage_options,
                                enable_v2_manifest_paths=enable_v2_manifest_paths,
                                max_retries=max_retries, detached=detached,
                                commit_message=commit_message,
                                enable_stable_row_ids=enable_stable_row_ids)

    def _at(self, mf) -> "LanceDataset":
        return LanceDataset(self._uri, _store=self._store, _manifest=mf)

    def _become(self, mf) -> None:
        other = self._at(mf)
        self.__dict__.update(other.__dict__)

    # -- metadata --------------------------------------------------------------
    def __repr__(self) -> str:
        return f"LanceDataset(uri={self._uri!r}, version={self.version})"

    @property
    def uri(self) -> str:
        return self._uri

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    @property
    def version(self) -> int:
        return self._mf.version

    @property
    def latest_version(self) -> int:
        versions, _ = list_versions(self._store)
        return versions[-1]

    @property
    def data_storage_version(self) -> str:
        return self._mf.manifest.data_format.version or "2.0"

    @property
    def max_field_id(self) -> int:
        return max((f.id for f in self._mf.manifest.fields), default=-1)

    @property
    def manifest(self):
        """The ``lance.table.Manifest`` protobuf of this version (read-only use)."""
        return self._mf.manifest

    @property
    def stable_row_ids(self) -> bool:
        return bool(self._mf.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS)

    def versions(self) -> list[dict]:
        """Every version: ``{"version", "timestamp", "metadata"}`` like pylance."""
        versions, _ = list_versions(self._store)
        out = []
        # read concurrently, parsed once per dataset object (committed manifests never change)
        memo = self._cache.setdefault("fragment_counts", {})
        for v, mf in zip(versions, load_manifests(self._store, versions, self._v2,
                                                   self._manifest_cache)):
            m = mf.manifest
            when = _manifest_time(m, mf.name)
            out.append({"version": v, "timestamp": when,
                        "metadata": _summary(m, memo)})
        return out

    def get_version(self) -> dict:
        """This version's entry of :meth:`versions` (``version``, ``timestamp``,
        ``metadata``)."""
        return {"version": self.version,
                "timestamp": _manifest_time(self._mf.manifest, self._mf.name),
                "metadata": _summary(self._mf.manifest)}

    @property
    def schema_metadata(self) -> dict:
        """The schema's key/value metadata as ``{str: str}``."""
        return {(k.decode() if isinstance(k, bytes) else k):
                (v.decode() if isinstance(v, bytes) else v)
                for k, v in (self._schema.metadata or {}).items()}

    def slice(self, start: int, end: int, columns=None) -> pa.Table:
        """Rows ``start`` (inclusive) to ``end`` (exclusive), deleted rows skipped."""
        start = max(0, int(start))
        return self.to_table(columns=columns, offset=start, limit=max(0, int(end) - start))

    def checkout_version(self, version) -> "LanceDataset":
        return LanceDataset(self._uri, version, _store=self._store)

    @property
    def tags(self) -> "Tags":
        return Tags(self)

    def get_fragments(self, filter=None) -> list[LanceFragment]:
        if filter is not None:
            raise NotSupportedError("get_fragments(filter=) is not supported")
        if self._fragments is None:
            self._fragments = [LanceFragment(self, f) for f in self._mf.manifest.fragments]
        return list(self._fragments)

    def get_fragment(self, fragment_id: int) -> LanceFragment | None:
        for f in self.get_fragments():
            if f.fragment_id == fragment_id:
                return f
        return None

    def _open_file(self, path: str, legacy: bool = False):
        r = self._readers.get(path)
        if r is None:
            if len(self._readers) >= _READER_CACHE_SIZE:
                self._readers.pop(next(iter(self._readers)))
            r = open_data_file(self._store, path, legacy, source=f"manifest {self._mf.name!r}")
            self._readers[path] = r
        return r

    # -- reads -----------------------------------------------------------------
    def scanner(self, columns=None, filter=None, limit=None, offset=None, nearest=None,
                batch_size=None, batch_size_bytes=None, batch_readahead=None,
                fragment_readahead=None, scan_in_order=None, fragments=None,
                index_segments=None, full_text_query=None, *, prefilter=None,
                with_row_id=None, with_row_address=None, use_stats=None, fast_search=None,
                io_buffer_size=None, late_materialization=None, blob_handling=None,
                use_scalar_index=None, include_deleted_rows=None, scan_stats_callback=None,
                strict_batch_size=None, order_by=None, disable_scoring_autoprojection=None,
                row_addr_allowlist=None, row_addr_blocklist=None,
                **engine_hints) -> LanceScanner:
        """A scan of this version, with pylance's ``scanner`` parameters.

        Implemented: ``columns`` (names, or ``{alias: SQL}``), ``filter``, ``limit``,
        ``offset``, ``batch_size``, ``strict_batch_size``, ``fragments``,
        ``with_row_id``, ``with_row_address``, ``blob_handling``, ``order_by``
        (names or ``ColumnOrdering``), ``use_stats`` (False: no statistics pruning),
        ``include_deleted_rows`` (with ``with_row_id``; deleted rows get a null id).
        Accepted and without effect, as they only tune pylance's engine:
        ``prefilter``, ``late_materialization`` (lancenb always reads the filter
        columns first), ``fast_search``, ``use_scalar_index``, ``batch_size_bytes``,
        ``batch_readahead``, ``fragment_readahead``, ``scan_in_order``,
        ``io_buffer_size``, ``disable_scoring_autoprojection``. Vector and full-text
        search (``nearest``, ``full_text_query``, ``index_segments``) and row-address
        lists raise :class:`~lancenb.errors.NotSupportedError`. Any other keyword is a
        ``TypeError``, except the execution hints engines pass through the
        ``pyarrow.dataset`` protocol (``use_threads``, ``fragment_scan_options``, ...).
        """
        unknown = sorted(k for k in engine_hints if k not in _IGNORED_SCAN_OPTIONS)
        if unknown:
            raise TypeError(f"LanceDataset.scanner() got an unexpected keyword argument "
                            f"{unknown[0]!r}")
        search = {"nearest": nearest, "full_text_query": full_text_query,
                  "index_segments": index_segments, "row_addr_allowlist": row_addr_allowlist,
                  "row_addr_blocklist": row_addr_blocklist}
        used = sorted(k for k, v in search.items() if v is not None)
        if used:
            raise NotSupportedError(f"scanner: {', '.join(used)} (index search) is not "
                                    f"supported by lancenb")
        sc = LanceScanner(self, columns=columns, filter=filter, limit=limit, offset=offset,
                          batch_size=batch_size, with_row_id=bool(with_row_id),
                          with_row_address=bool(with_row_address), fragments=fragments,
                          blob_handling=blob_handling, use_stats=use_stats,
                          order_by=order_by, strict_batch_size=strict_batch_size,
                          include_deleted_rows=include_deleted_rows)
        sc.scan_stats_callback = scan_stats_callback
        return sc

    def sql(self, sql: str):
        """A SQL query over this version (pylance's ``LanceDataset.sql``).

        Parameters
        ----------
        sql : str
            A ``SELECT`` naming the dataset as ``dataset`` (``.table_name()`` changes
            that), evaluated by DataFusion.

        Returns
        -------
        lancenb.dataset.sql.SqlQueryBuilder
            ``.build()`` runs it; ``.to_batch_records()`` / ``.to_stream_reader()`` of
            the result give the rows.
        """
        from lancenb.dataset.sql import SqlQueryBuilder

        return SqlQueryBuilder(self, sql)

    def to_table(self, columns=None, filter=None, limit=None, offset=None, nearest=None,
                 batch_size=None, batch_size_bytes=None, batch_readahead=None,
                 fragment_readahead=None, scan_in_order=None, **kwargs) -> pa.Table:
        """The rows of :meth:`scanner` with the same parameters, as one table."""
        return self.scanner(columns, filter, limit, offset, nearest, batch_size,
                            batch_size_bytes, batch_readahead, fragment_readahead,
                            scan_in_order, **kwargs).to_table()

    def to_batches(self, columns=None, filter=None, limit=None, offset=None, nearest=None,
                   batch_size=None, batch_size_bytes=None, batch_readahead=None,
                   fragment_readahead=None, scan_in_order=None, **kwargs):
        """The rows of :meth:`scanner` with the same parameters, as record batches."""
        return self.scanner(columns, filter, limit, offset, nearest, batch_size,
                            batch_size_bytes, batch_readahead, fragment_readahead,
                            scan_in_order, **kwargs).to_batches()

    def head(self, num_rows: int, **kwargs) -> pa.Table:
        return self.scanner(limit=num_rows, **kwargs).to_table()

    def to_pandas(self, columns=None, filter=None, **kwargs):
        """The rows of :meth:`scanner` as a pandas DataFrame (pandas metadata written
        with the data, such as the index, is applied by pyarrow)."""
        return self.scanner(columns, filter, **kwargs).to_table().to_pandas()

    def sample(self, num_rows: int, columns=None, randomize_order: bool = True,
               **kwargs) -> pa.Table:
        """``num_rows`` rows drawn without replacement (all rows when the dataset
        has fewer); in random order, or in dataset order when not ``randomize_order``."""
        total = self.count_rows()
        n = min(int(num_rows), total)
        idx = np.random.default_rng().choice(total, size=n, replace=False)
        if not randomize_order:
            idx = np.sort(idx)
        return self.take(idx, columns=columns, **kwargs)

    def checkout_latest(self) -> None:
        """Move this object to the newest version of the dataset (in place)."""
        versions, naming = list_versions(self._store)
        if versions[-1] != self.version:
            self._become(load_manifest(self._store, versions[-1], naming))

    def config(self) -> dict:
        """The dataset's configuration (the manifest's ``config`` map)."""
        return dict(self._mf.manifest.config)

    @property
    def metadata(self) -> dict:
        """The table metadata (the manifest's ``table_metadata`` map)."""
        return dict(self._mf.manifest.table_metadata)

    @property
    def initial_storage_options(self):
        """The storage options this dataset was opened with (None when none)."""
        return dict(self._store.storage_options) if self._store.storage_options else None

    def latest_storage_options(self):
        """The storage options in use (lancenb has no provider that refreshes them)."""
        return self.initial_storage_options

    @property
    def has_stable_row_ids(self) -> bool:
        """Whether rows keep their ids across compaction and updates (pylance's name
        for :attr:`stable_row_ids`)."""
        return self.stable_row_ids

    def count_rows(self, filter=None, **kwargs) -> int:
        if filter is None and not kwargs:
            return sum(f.count_rows() for f in self.get_fragments())
        return self.scanner(columns=[], filter=filter, **kwargs).count_rows()

    def __arrow_c_stream__(self, requested_schema=None):
        return self.scanner().to_reader().__arrow_c_stream__(requested_schema)

    def take(self, indices, columns=None, *, with_row_id=False,
             with_row_address=False, blob_handling=None) -> pa.Table:
        """Rows at logical ``indices`` (deleted rows skipped), in the order given;
        blob columns as descriptions unless ``blob_handling="all_binary"``."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        frags = self.get_fragments()
        # a fragment without a deletion file has its physical rows: only the others
        # read theirs (not one deletion lookup per fragment of a many-fragment table)
        counts = np.array([f.physical_rows if not f._pb.HasField("deletion_file")
                           else f.count_rows() for f in frags], dtype=np.int64)
        starts = np.zeros(len(frags) + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        total = int(starts[-1])
        if idx.size and (idx.min() < 0 or idx.max() >= total):
            bad = int(idx[(idx < 0) | (idx >= total)][0])
            raise InvalidInputError(f"take: index {bad} is out of range for a dataset of "
                                    f"{total} rows")
        sc = self.scanner(columns=columns, with_row_id=with_row_id,
                          with_row_address=with_row_address, blob_handling=blob_handling)
        frag_of = np.searchsorted(starts, idx, side="right") - 1
        parts, positions = [], []
        for fi in np.unique(frag_of):
            frag = frags[int(fi)]
            sel = np.flatnonzero(frag_of == fi)
            local = idx[sel] - starts[fi]
            live = frag.live_offsets()
            phys = live[local] if live is not None else local
            uniq, inverse = np.unique(phys, return_inverse=True)
            t = frag.take_physical(sc.columns, uniq, blob_handling=sc.blob_handling)
            t = sc._with_ids(frag, t, uniq)
            if len(uniq) != len(phys) or np.any(np.diff(inverse) < 0):
                t = dictarray.take(t, pa.array(inverse))
            parts.append(t)
            positions.append(sel)
        schema = sc.projected_schema
        if not parts:
            return schema.empty_table()
        table = pa.concat_tables([p.replace_schema_metadata(schema.metadata) for p in parts])
        order = np.concatenate(positions)
        if np.any(np.diff(order) < 0):
            inv = np.empty_like(order)
            inv[order] = np.arange(len(order))
            table = dictarray.take(table, pa.array(inv))
        return dictarray.combine_chunks(table)

    def take_blobs(self, blob_column: str, ids=None, addresses=None, indices=None, *,
                   buffer_size: int = blob.DEFAULT_BUFFER_SIZE) -> list:
        """Open blob values as file-like objects (pylance's ``take_blobs``).

        Exactly one of ``ids`` (row ids), ``addresses`` (row addresses) and
        ``indices`` (row offsets in the dataset, deleted rows skipped) selects the
        rows. Only descriptions are read here; each :class:`~lancenb.dataset.blob.BlobFile`
        reads its bytes when asked, with range reads.

        Parameters
        ----------
        blob_column : str
            A blob column: ``large_binary`` with ``lance-encoding:blob`` metadata, or
            a pylance 2.2 blob v2 column.
        ids, addresses, indices : array-like of int
            The rows, in the order the results come back (repeats allowed).
        buffer_size : int, default 512 KiB
            Read-ahead of sequential reads in bytes; 0 reads exactly what is asked.

        Returns
        -------
        list of BlobFile or None
            One per row: None for a null value, a zero-size file for an empty one.

        Examples
        --------
        >>> f = ds.take_blobs("video", indices=[3])[0]  # doctest: +SKIP
        >>> f.seek(1024); f.read(16)  # doctest: +SKIP
        """
        return blob.take_blobs(self, blob_column, ids, addresses, indices,
                               buffer_size=buffer_size)

    def read_blobs(self, blob_column: str, ids=None, addresses=None, indices=None, *,
                   io_buffer_size=None, preserve_order=None) -> list:
        """Blob values read whole (pylance's ``read_blobs``): ``[(row address, bytes or
        None)]`` in the order asked for; select rows as in :meth:`take_blobs`.
        ``io_buffer_size`` and ``preserve_order`` are accepted (the order is always
        kept)."""
        return blob.read_blobs(self, blob_column, ids, addresses, indices)

    # -- writes ----------------------------------------------------------------
    def _commit(self, txn: Transaction, written=()) -> None:
        # commit() removes ``written`` itself if it fails before its commit point,
        # and never after it (see lancenb.dataset.commit)
        mf = commit(self._store, txn, v2_names=self._v2,
                    data_format=self.data_storage_version, writer_version=_writer_version(),
                    base=self._mf, written=written)
        self._become(mf)

    def delete(self, predicate) -> None:
        """Delete the rows matching ``predicate`` (SQL string or pyarrow expression).
        Row-id sequences are never rewritten: only deletion files change."""
        check_feature_flags(self._mf.manifest, self._mf.name, write=True)
        op = transaction_pb2.Transaction.Delete(
            predicate=predicate if isinstance(predicate, str) else str(predicate))
        txn = Transaction(self.version, "delete", op)
        written = []
        try:
            sc = self.scanner(columns=[], filter=predicate)  # parsed once
            for frag in self.get_fragments():
                live = frag.live_offsets()
                if frag.count_rows() == 0:
                    continue
                table = frag.take_physical(sc._filter_cols, live)
                hit = sc._expr_mask(table)
                if not len(hit):
                    continue
                phys = (live[hit] if live is not None else hit).astype(np.uint32)
                txn.deleted_rows[frag.fragment_id] = phys
                rows = np.union1d(frag.deleted_offsets(), phys).astype(np.uint32)
                if len(rows) >= frag.physical_rows:
                    txn.pb.delete.deleted_fragment_ids.append(frag.fragment_id)
                    continue
                df = write_deletions(self._store, frag.fragment_id, rows, self.version)
                written.append(deletion_path(frag.fragment_id, df))
                g = table_pb2.DataFragment()
                g.CopyFrom(frag._pb)
                g.deletion_file.CopyFrom(df)
                txn.pb.delete.updated_fragments.append(g)
        except BaseException:
            cleanup(self._store, written)
            raise
        # like pylance, a delete makes a new version even when nothing matched
        self._commit(txn, written)

    def restore(self) -> None:
        """Make this (older) version the latest, as a new version."""
        check_feature_flags(self._mf.manifest, self._mf.name, write=True)
        txn = Transaction(self.version, "restore",
                          transaction_pb2.Transaction.Restore(version=self.version))
        txn.restore_manifest = self._mf.manifest
        txn.restore_index_section = self._mf.index_section_bytes()
        self._commit(txn)

    def insert(self, data, *, mode: str = "append", **kwargs) -> None:
        ds = write_dataset(data, self, mode=mode, **kwargs)
        self._become(ds._mf)

    # -- row changes and maintenance ----------------------------------------------
    def update(self, updates: dict, where=None) -> dict:
        """``{column: SQL expression}`` on the rows matching ``where``."""
        from lancenb.dataset.mutation import update

        return update(self, updates, where)

    def merge_insert(self, on):
        """Upsert builder: ``ds.merge_insert("id").when_matched_update_all()
        .when_not_matched_insert_all().execute(data)``."""
        from lancenb.dataset.mutation import MergeInsertBuilder

        return MergeInsertBuilder(self, on)

    @property
    def optimize(self) -> "_Optimize":
        return _Optimize(self)

    def cleanup_old_versions(self, older_than=None, retain_versions=None, *,
                             delete_unverified=False, error_if_tagged_old_versions=True,
                             dry_run=False):
        from lancenb.dataset.maintenance import cleanup_old_versions

        return cleanup_old_versions(self, older_than, retain_versions,
                                    delete_unverified=delete_unverified,
                                    error_if_tagged_old_versions=error_if_tagged_old_versions,
                                    dry_run=dry_run)

    def _take_rows(self, row_ids, columns=None, *, by_address=False, **kwargs) -> pa.Table:
        """Rows by row id (stable row ids) or row address (``by_address``, or without
        stable row ids), in the order given."""
        ids = np.asarray(row_ids, dtype=np.uint64).reshape(-1)
        frags = {f.fragment_id: f for f in self.get_fragments()}
        if self.stable_row_ids and not by_address:
            sorted_ids, frag_of, off_of = self._row_id_index()
            pos = np.searchsorted(sorted_ids, ids)
            ok = (pos < len(sorted_ids)) & (sorted_ids[np.minimum(pos, len(sorted_ids) - 1)]
                                            == ids) if len(sorted_ids) else \
                np.zeros(len(ids), bool)
            if not ok.all():
                raise InvalidInputError(f"no row with id {int(ids[~ok][0])}")
            fid, off = frag_of[pos], off_of[pos]
        else:
            fid, off = (ids >> np.uint64(32)).astype(np.int64), \
                (ids & np.uint64(0xFFFFFFFF)).astype(np.int64)
        sc = self.scanner(columns=columns, **kwargs)
        parts, positions = [], []
        for f in np.unique(fid):
            frag = frags.get(int(f))
            sel = np.flatnonzero(fid == f)
            if frag is None or np.any(off[sel] >= frag.physical_rows) or np.any(
                    np.isin(off[sel], frag.deleted_offsets())):
                raise InvalidInputError(f"row(s) {ids[sel][:3].tolist()} do not exist or are "
                                        f"deleted")
            uniq, inverse = np.unique(off[sel], return_inverse=True)
            t = sc._with_ids(frag, frag.take_physical(sc.columns, uniq,
                                                      blob_handling=sc.blob_handling), uniq)
            parts.append(dictarray.take(t, pa.array(inverse)))
            positions.append(sel)
        if not parts:
            return sc.projected_schema.empty_table()
        table = pa.concat_tables(parts)
        order = np.concatenate(positions)
        inv = np.empty_like(order)
        inv[order] = np.arange(len(order))
        return dictarray.combine_chunks(dictarray.take(table, pa.array(inv)))

    def _row_id_index(self):
        """Sorted row ids with their fragment id and offset (built once, cached)."""
        key = ("row_id_index",)
        if key not in self._cache:
            ids, fr, off = [], [], []
            for f in self.get_fragments():  # live rows only: a moved row's old copy is
                live = f.live_offsets()        # deleted and must not shadow the new one
                o = np.arange(f.physical_rows, dtype=np.int64) if live is None else live
                ids.append(f.row_ids()[o])
                fr.append(np.full(len(o), f.fragment_id, np.int64))
                off.append(o)
            ids_a = np.concatenate(ids) if ids else np.zeros(0, np.uint64)
            order = np.argsort(ids_a, kind="stable")
            self._cache[key] = (ids_a[order], np.concatenate(fr)[order] if fr else ids_a,
                                np.concatenate(off)[order] if off else ids_a)
        return self._cache[key]

    # -- schema evolution (lancenb.dataset.evolution) ----------------------------
    def add_columns(self, transforms, read_columns=None, *, batch_size=None, **kwargs) -> None:
        """Add columns from SQL expressions (``{"b": "a * 2"}``), ``pa.Field``s /
        a ``pa.Schema`` (all null), or a batch function (see ``lancenb.batch_udf``)."""
        from lancenb.dataset.evolution import add_columns

        kwargs.pop("reader_schema", None)
        if kwargs:
            raise InvalidInputError(f"unsupported add_columns options: {sorted(kwargs)}")
        add_columns(self, transforms, read_columns, batch_size=batch_size)

    def drop_columns(self, columns) -> None:
        from lancenb.dataset.evolution import drop_columns

        drop_columns(self, columns)

    def alter_columns(self, *alterations) -> None:
        from lancenb.dataset.evolution import alter_columns

        alter_columns(self, *alterations)

    def merge(self, data_obj, left_on: str, right_on: str | None = None, **kwargs) -> None:
        """Join the columns of ``data_obj`` onto this dataset's rows by key."""
        from lancenb.dataset.evolution import merge_columns

        if kwargs:
            raise InvalidInputError(f"unsupported merge options: {sorted(kwargs)}")
        merge_columns(self, data_obj, left_on, right_on)

    # pyarrow.dataset.Dataset methods without a lancenb implementation: refuse
    # clearly instead of reaching into an uninitialised C++ dataset
    def _unsupported(self, *args, **kwargs):
        raise NotSupportedError("this pyarrow.dataset.Dataset method is not supported by "
                                "lancenb datasets; use scanner()/to_table()")

    filter = join = join_asof = sort_by = replace_schema = _get_fragments = _unsupported

    @property
    def partition_expression(self):
        return pc.scalar(True)


class _Optimize:
    """``ds.optimize``: pylance's namespace for compaction."""

    def __init__(self, ds: LanceDataset):
        self._ds = ds

    def compact_files(self, **kwargs):
        from lancenb.dataset.maintenance import compact_files

        return compact_files(self._ds, **kwargs)


def _ranges(vs: list[int]) -> str:
    return f"{vs[0]}..{vs[-1]}" if vs and vs[-1] - vs[0] + 1 == len(vs) else str(vs)


def _as_datetime(x) -> _dt.datetime:
    if isinstance(x, str):
        x = _dt.datetime.fromisoformat(x)
    if isinstance(x, _dt.date) and not isinstance(x, _dt.datetime):
        x = _dt.datetime(x.year, x.month, x.day)
    if not isinstance(x, _dt.datetime):
        raise InvalidInputError(f"asof must be a datetime or ISO string, not {type(x).__name__}")
    if x.tzinfo is None:
        x = x.astimezone()  # naive = local time, as pylance reads it
    return x


def _fragment_counts(f) -> tuple[int, int, int, int, int]:
    """(live rows, deleted rows, data files, bytes, deletion files) of one fragment."""
    has_del = f.HasField("deletion_file")
    nd = int(f.deletion_file.num_deleted_rows) if has_del else 0
    return (int(f.physical_rows) - nd, nd, len(f.files),
            sum(int(d.file_size_bytes) for d in f.files), int(has_del))


def _summary(m, memo: dict | None = None) -> dict:
    """pylance's version summary. ``memo`` (serialized fragment -> its counts) spares
    re-reading the fields of the fragments successive versions share: versions()
    would otherwise be quadratic in fragments x versions of Python."""
    rows = deleted = files = size = dfiles = 0
    for f in m.fragments:
        if memo is None:
            c = _fragment_counts(f)
        else:
            key = f.SerializeToString()
            c = memo.get(key)
            if c is None:
                c = memo[key] = _fragment_counts(f)
        rows += c[0]
        deleted += c[1]
        files += c[2]
        size += c[3]
        dfiles += c[4]
    return {"total_data_file_rows": str(rows + deleted), "total_data_files": str(files),
            "total_deletion_file_rows": str(deleted), "total_deletion_files": str(dfiles),
            "total_files_size": str(size), "total_fragments": str(len(m.fragments)),
            "total_rows": str(rows)}


class Tags:
    """Named versions, stored as ``_refs/tags/{name}.json`` (pylance's layout)."""

    def __init__(self, ds: LanceDataset):
        self._ds = ds
        self._store = ds._store

    @staticmethod
    def _check_name(tag: str) -> None:
        ok = isinstance(tag, str) and tag and all(c.isalnum() or c in "-_." for c in tag) \
            and not tag.startswith(".") and not tag.endswith(".lock") and ".." not in tag
        if not ok:
            raise InvalidInputError(f"invalid tag name {tag!r}: use letters, digits, '-', '_' "
                                    f"and '.'")

    def _read(self, tag: str) -> dict:
        self._check_name(tag)
        rel = f"{TAGS_DIR}/{tag}.json"
        try:
            raw = self._store.read_bytes(rel)
        except LanceError:
            raise DatasetNotFoundError(f"dataset {self._ds.uri!r} has no tag {tag!r}") from None
        return _parse_tag(raw, self._store.uri_of(rel))

    def list(self) -> dict:
        out = {}
        for name in sorted(self._store.list(TAGS_DIR)):
            if not name.endswith(".json"):
                continue
            tag = name[:-5]
            d = self._read(tag)
            out[tag] = {"branch": d.get("branch"), "version": d["version"],
                        "created_at": d.get("createdAt"),
                        "updated_at": d.get("updatedAt"),
                        "manifest_size": d.get("manifestSize"), "metadata": d.get("metadata", {})}
        return out

    def get_version(self, tag: str) -> int:
        return self._read(tag)["version"]

    def list_ordered(self, order: str | None = None) -> list:
        """``[(name, tag)]`` by version, newest first (``order="desc"``, the default)
        or oldest first (``"asc"``); tags of one version by name."""
        if order not in (None, "asc", "desc"):
            raise InvalidInputError(f"order must be 'asc' or 'desc', not {order!r}")
        items = sorted(self.list().items(), key=lambda kv: kv[0])
        return sorted(items, key=lambda kv: kv[1]["version"], reverse=order != "asc")

    def _write(self, tag: str, version: int, created: str | None, *, create: bool,
               metadata: dict | None = None) -> None:
        versions, naming = list_versions(self._store)
        if version not in versions:
            raise DatasetNotFoundError(f"cannot tag version {version}: dataset "
                                       f"{self._ds.uri!r} has versions {_ranges(versions)}")
        size = self._store.size(f"{VERSIONS_DIR}/{manifest_name(version, naming)}")
        now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        body = {"branch": None, "version": int(version), "createdAt": created or now,
                "updatedAt": now, "manifestSize": size, "metadata": metadata or {}}
        data = json.dumps(body, indent=2).encode()
        rel = f"{TAGS_DIR}/{tag}.json"
        if create:
            if not put_new_object(self._store, rel, data):  # a put that fails is read back
                raise InvalidInputError(f"tag {tag!r} already exists in {self._ds.uri!r}")
        else:
            self._store.write_bytes(rel, data)

    def create(self, tag: str, version: int) -> None:
        self._check_name(tag)
        self._write(tag, int(version), None, create=True)

    def update(self, tag: str, version: int) -> None:
        old = self._read(tag)
        created = old.get("createdAt")  # parsed to a datetime by _read: back to text
        if isinstance(created, _dt.datetime):
            created = created.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        self._write(tag, int(version), created, create=False, metadata=old.get("metadata"))

    def replace_metadata(self, tag: str, metadata: dict) -> None:
        """Replace the ``metadata`` map of an existing tag (``{str: str}``)."""
        old = self._read(tag)
        if not isinstance(metadata, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise InvalidInputError("tag metadata must be a dict of str to str")
        created = old.get("createdAt")
        if isinstance(created, _dt.datetime):
            created = created.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        self._write(tag, int(old["version"]), created, create=False, metadata=dict(metadata))

    def delete(self, tag: str) -> None:
        self._read(tag)
        self._store.delete(f"{TAGS_DIR}/{tag}.json")


def _is_u64(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**64


def _parse_tag(raw: bytes, where: str) -> dict:
    """A tag file's contents, checked as strictly as the reference reads them: a JSON
    object whose ``version`` (>= 1) and ``manifestSize`` are u64 integers, timestamps
    (if any) ISO strings; anything else is a ``CorruptFileError`` naming the file."""
    try:
        d = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise CorruptFileError(f"tag file {where!r} is not JSON: {e}") from None
    if not isinstance(d, dict):
        raise CorruptFileError(f"tag file {where!r} holds a JSON {type(d).__name__}, not an "
                               f"object")
    v = d.get("version")
    if not _is_u64(v) or v < 1:
        raise CorruptFileError(f"tag file {where!r}: version {v!r} is not a version number")
    if not _is_u64(d.get("manifestSize")):
        raise CorruptFileError(f"tag file {where!r}: manifestSize {d.get('manifestSize')!r} is "
                               f"not a byte count")
    for k in ("createdAt", "updatedAt"):
        try:
            d[k] = _parse_ts(d.get(k))
        except (ValueError, TypeError, AttributeError):
            raise CorruptFileError(f"tag file {where!r}: {k} {d.get(k)!r} is not a "
                                   f"timestamp") from None
    if not isinstance(d.get("metadata", {}), dict):
        raise CorruptFileError(f"tag file {where!r}: metadata is not an object")
    return d


def _parse_ts(s):
    if not s:
        return None
    if isinstance(s, _dt.datetime):
        return s
    s = s.rstrip("Z")
    head, _, frac = s.partition(".")
    base = _dt.datetime.fromisoformat(head).replace(tzinfo=_dt.timezone.utc)
    return base.replace(microsecond=int((frac + "000000")[:6])) if frac else base


def _manifest_time(m, where: str, tz=None) -> _dt.datetime:
    """A manifest's timestamp as a datetime; one no datetime can hold (``2**62``
    seconds) is a ``CorruptFileError`` naming the manifest."""
    t = m.timestamp
    try:
        return _dt.datetime.fromtimestamp(t.seconds, tz) + _dt.timedelta(
            microseconds=t.nanos // 1000)
    except (OverflowError, OSError, ValueError) as e:
        raise CorruptFileError(f"manifest {where!r}: timestamp {t.seconds} s, {t.nanos} ns is "
                               f"not a representable time ({e})") from None


def _open_store(uri, storage_options, commit_lock, manifest_store) -> ObjectStore:
    store = ObjectStore(uri, storage_options, commit_lock=commit_lock)
    if manifest_store is not None:
        from lancenb.dataset.external import ExternalManifestStore

        if not isinstance(manifest_store, ExternalManifestStore):
            raise InvalidInputError("manifest_store must be an "
                                    "lancenb.dataset.external.ExternalManifestStore")
    store.manifest_store = manifest_store
    return store


def _reopen(uri, version, storage_options) -> LanceDataset:
    """Unpickling a :class:`LanceDataset`: open the same version again."""
    return LanceDataset(uri, version, storage_options=storage_options)


def dataset(uri, version=None, *, asof=None, storage_options=None, commit_lock=None,
            manifest_store=None, **kwargs) -> LanceDataset:
    """Open a dataset (latest version, a version number, a tag name, or ``asof`` a time)."""
    if kwargs:
        unknown = sorted(k for k in kwargs if k not in ("block_size", "index_cache_size",
                                                        "metadata_cache_size", "session"))
        if unknown:
            raise InvalidInputError(f"unsupported dataset() options: {unknown}")
    return LanceDataset(uri, version, asof=asof, storage_options=storage_options,
                        commit_lock=commit_lock, manifest_store=manifest_store)


def write_dataset(data, uri, schema: pa.Schema | None = None, *, mode: str = "create",
                  max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
                  max_rows_per_group: int | None = None,
                  max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
                  data_storage_version: str | None = None, storage_options=None,
                  enable_v2_manifest_paths: bool = True, commit_lock=None,
                  manifest_store=None, enable_stable_row_ids: bool | None = None,
                  use_legacy_format=None, progress=None, **kwargs) -> LanceDataset:
    """Write ``data`` as a new dataset, or append to / overwrite one (pylance's API).

    ``data``: a pyarrow Table, RecordBatch, RecordBatchReader, iterable of
    RecordBatches, or pandas DataFrame; streamed, never materialised whole.
    ``data_storage_version``: file format of new data files (default: lancenb's file
    default, 2.1; appends keep the dataset's).
    """
    commit_message = kwargs.pop("commit_message", None)
    properties = dict(kwargs.pop("transaction_properties", None) or {})
    if commit_message is not None:  # pylance's key; the message wins over a property
        properties["__lance_commit_message"] = str(commit_message)
    _check_write_options(kwargs)
    data = _coerce_input(data, schema)
    if mode not in ("create", "append", "overwrite"):
        raise InvalidInputError(f"mode must be 'create', 'append' or 'overwrite', not {mode!r}")
    if use_legacy_format:
        data_storage_version = data_storage_version or "legacy"
    if isinstance(uri, LanceDataset):  # pylance allows this: commit on top of that version
        store, base = uri._store, uri._mf
        naming = uri._v2
    else:
        store = _open_store(uri, storage_options, commit_lock, manifest_store)
        versions, naming = list_versions(store)
        base = load_manifest(store, versions[-1], naming) if versions else None
    if base is not None:
        check_feature_flags(base.manifest, base.name, write=True)
    if mode == "create" and base is not None:
        raise DatasetExistsError(f"dataset {store.uri!r} already exists (version "
                                 f"{base.version}); use mode='append' or 'overwrite'")
    v2 = naming if naming is not None else bool(enable_v2_manifest_paths)
    appending = mode == "append" and base is not None
    if appending:
        ds_schema, _ = fields_to_schema(base.manifest.fields, base.manifest.schema_metadata)
        fmt = base.manifest.data_format.version or "2.0"
        if data_storage_version is not None and FileVersion.resolve(data_storage_version) != \
                FileVersion.resolve(fmt):
            raise InvalidInputError(f"cannot append {data_storage_version} files to a dataset "
                                    f"of {fmt} files")
        in_schema, batches = normalize_input(data, schema)
        ds_schema = blob.input_schema(ds_schema)  # (blob v2 columns take their values)
        if set(in_schema.names) < set(ds_schema.names):  # a subset: nulls elsewhere
            in_schema, batches = _fill_missing(in_schema, batches, ds_schema, store.uri)
        _check_append_schema(in_schema, ds_schema, store.uri)
        if in_schema.names != ds_schema.names or not in_schema.equals(ds_schema,
                                                                      check_metadata=False):
            _, batches = normalize_input(pa.RecordBatchReader.from_batches(in_schema, batches),
                                         ds_schema.remove_metadata())
        write_schema = ds_schema
        fields_pb = list(base.manifest.fields)
        version = FileVersion.resolve(fmt)
    else:
        if data_storage_version is None and base is not None and mode == "overwrite":
            data_storage_version = base.manifest.data_format.version or None
        version = FileVersion.resolve(data_storage_version)
        in_schema, batches = normalize_input(data, schema)
        write_schema = in_schema
        # 2.2: blob columns are blob v2 in the dataset's schema, as pylance makes them
        fields_pb, _ = schema_to_fields(blob.manifest_schema(in_schema)
                                        if version is FileVersion.V2_2 else in_schema)
    if not version.writable:
        raise NotSupportedError(f"lancenb writes datasets with 2.0, 2.1 or 2.2 data files, not "
                                f"{version.label} (it reads {version.label} datasets)")
    written: list[str] = []
    try:
        frags = write_fragments(store, batches, write_schema, fields_pb, version=version,
                                max_rows_per_file=max_rows_per_file,
                                max_bytes_per_file=max_bytes_per_file, written=written,
                                progress=progress)
        read_version = base.version if base is not None else 0
        if appending:
            txn = Transaction(read_version, "append",
                              transaction_pb2.Transaction.Append(fragments=frags))
        else:
            op = transaction_pb2.Transaction.Overwrite(fragments=frags, schema=fields_pb)
            for k, v in (write_schema.metadata or {}).items():
                op.schema_metadata[k.decode() if isinstance(k, bytes) else k] = v
            txn = Transaction(read_version, "overwrite", op)
            txn.create_only = mode == "create"
            if enable_stable_row_ids is not None:
                txn.enable_stable_row_ids = bool(enable_stable_row_ids)
        for k, v in properties.items():
            txn.pb.transaction_properties[str(k)] = str(v)
    except BaseException:  # before the commit point: nothing of this write stays
        cleanup(store, written)
        raise
    mf = commit(store, txn, v2_names=v2, data_format=version.label,
                writer_version=_writer_version(), base=base, written=written)
    return LanceDataset(store.uri, _store=store, _manifest=mf)


# pylance's write_dataset options that only tune its writer: accepted
_WRITE_TUNING = ("data_cache_bytes", "max_page_bytes", "session",
                 "blob_pack_file_size_threshold")
# pylance's options for features lancenb does not have: refused when used
_WRITE_UNSUPPORTED = {"auto_cleanup_options": None, "initial_bases": None,
                      "target_bases": None, "target_all_bases": None,
                      "base_store_params": None, "external_blob_mode": "reference",
                      "allow_external_blob_outside_bases": False, "namespace_client": None,
                      "table_id": None}


def _check_write_options(kwargs: dict) -> None:
    """Keywords of pylance's ``write_dataset`` beyond lancenb's own: tuning ones are
    accepted, unimplemented features raise ``NotSupportedError`` when set, anything
    else is a ``TypeError`` (a misspelling)."""
    for k, v in kwargs.items():
        if k in _WRITE_TUNING:
            continue
        if k in _WRITE_UNSUPPORTED:
            if v is not None and v != _WRITE_UNSUPPORTED[k]:
                raise NotSupportedError(f"write_dataset({k}=...) is not supported by lancenb")
            continue
        raise TypeError(f"write_dataset() got an unexpected keyword argument {k!r}")


def _coerce_input(data, schema):
    """pylance's extra input kinds, as it reads them: a list of dicts (one per row),
    a pandas DataFrame (its pandas metadata kept in the schema), a
    ``pyarrow.dataset.Dataset`` (streamed through its scanner)."""
    if isinstance(data, list) and data and all(isinstance(r, dict) for r in data):
        return pa.Table.from_pylist(data, schema=schema)
    if isinstance(data, pads.Dataset) and not isinstance(data, LanceDataset):
        return data.scanner().to_reader()
    if type(data).__name__ == "DataFrame" and hasattr(data, "to_numpy") and \
            type(data).__module__.startswith("pandas"):
        return pa.Table.from_pandas(data, schema=schema)
    return data


def _fill_missing(in_schema: pa.Schema, batches, ds_schema: pa.Schema, uri: str):
    """An append of some of the dataset's columns (as pylance allows): the others
    are null in the new rows; a non-nullable one is a :class:`SchemaError`."""
    missing = [f for f in ds_schema if f.name not in in_schema.names]
    required = [f.name for f in missing if not f.nullable]
    if required:
        raise SchemaError(f"cannot append to {uri!r}: the data lacks non-nullable "
                          f"column(s) {required}")
    out = pa.schema([in_schema.field(f.name) if f.name in in_schema.names else f
                     for f in ds_schema])

    def fill():
        for b in batches:
            yield pa.RecordBatch.from_arrays(
                [b.column(f.name) if f.name in in_schema.names
                 else pa.nulls(b.num_rows, f.type) for f in out], schema=out)
    return out, fill()


def _check_append_schema(data_schema: pa.Schema, ds_schema: pa.Schema, uri: str) -> None:
    if set(data_schema.names) != set(ds_schema.names) or len(data_schema) != len(ds_schema):
        raise SchemaError(f"cannot append to {uri!r}: the data has columns {data_schema.names}, "
                          f"the dataset {ds_schema.names}")
    for f in ds_schema:
        g = data_schema.field(f.name)
        if g.type != f.type:
            raise SchemaError(f"cannot append to {uri!r}: column {f.name!r} is {g.type} in the "
                              f"data but {f.type} in the dataset")
