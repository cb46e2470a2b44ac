"""``LanceDataset``, ``dataset()`` and ``write_dataset()``: the pylance-compatible API.

A dataset is a directory (or object-store prefix)::

    data/*.lance                 data files (one or more per fragment)
    _versions/*.manifest         one manifest per version
    _transactions/*.txn          the transaction behind each version
    _deletions/*.{arrow,bin}     deleted rows per fragment
    _refs/tags/*.json            tags: names for versions

Each operation writes its new files first and then commits a manifest with
put-if-absent (see :mod:`lancenb.table.commit`), so readers only ever see whole
versions. A :class:`LanceDataset` object is one version; operations that commit
(``delete``, ``restore``, ``insert``) move it to the version they made.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from lancenb._proto import transaction_pb2
from lancenb._version import __version__
from lancenb.dataset.administration import DatasetAdministration
from lancenb.dataset.branching import branch_store, resolve_reference, root_of
from lancenb.dataset.catalog import namespace_table, provided_options
from lancenb.dataset.fragment import LanceFragment, open_data_file
from lancenb.dataset.operations import commit_operation, commit_store
from lancenb.dataset.read import take
from lancenb.dataset.read.blob import BlobMethods
from lancenb.dataset.read.scanner import LanceScanner, ScanStatistics
from lancenb.dataset.session import Session, open_options, scan_with_defaults, with_scan_defaults
from lancenb.dataset.snapshot import Snapshot
from lancenb.dataset.write.cleanup import after_commit
from lancenb.dataset.write.delete import delete_rows
from lancenb.dataset.write.evolution import add_columns, alter_columns, drop_columns, merge_columns
from lancenb.dataset.write.insert import (
    DEFAULT_MAX_BYTES_PER_FILE,
    DEFAULT_MAX_ROWS_PER_FILE,
    check_write_options,
    write_version,
)
from lancenb.dataset.write.merge_insert import MergeInsertBuilder
from lancenb.dataset.write.optimize import Optimize, cleanup_old_versions
from lancenb.dataset.write.update import update
from lancenb.errors import NotSupportedError
from lancenb.expr.engine import SqlQueryBuilder
from lancenb.file.extensions import public_schema
from lancenb.file.reader import cached_fields_to_schema
from lancenb.file.schema import FieldList
from lancenb.index.scalar.api import ScalarIndexMethods
from lancenb.index.vector.api import VectorIndexMethods
from lancenb.table.bases import register_bases
from lancenb.table.commit import (
    commit,
    latest_version,
    load_manifest,
    open_store,
)
from lancenb.table.manifest import FLAG_STABLE_ROW_IDS, check_feature_flags, parse_manifest_name
from lancenb.table.tags import Tags
from lancenb.table.transaction import Op, Transaction
from lancenb.table.versions import locate_manifest, version_list
from lancenb.table.versions import manifest_time as _manifest_time
from lancenb.table.versions import version_summary as _summary

__all__ = ["LanceDataset", "dataset", "write_dataset", "Tags"]

_IGNORED_SCAN_OPTIONS = ("use_threads", "batch_readahead", "fragment_readahead",
                         "fragment_scan_options", "cache_metadata", "memory_pool",
                         "io_buffer_size", "scan_in_order")


def _writer_version() -> str:
    return __version__


class LanceDataset(VectorIndexMethods, ScalarIndexMethods, BlobMethods, DatasetAdministration,
                   pads.Dataset):
    """One version of a Lance dataset (pylance's ``lance.LanceDataset`` subset).

    Like pylance's, it is a ``pyarrow.dataset.Dataset`` to engines: DuckDB and
    Polars call :meth:`scanner`/:meth:`to_table` with the columns and the filter
    (a pyarrow expression) of a query, so projection and filters are pushed down.
    Methods of ``pyarrow.dataset.Dataset`` that lancenb does not implement raise
    :class:`~lancenb.errors.NotSupportedError`.
    """

    _default_scan_options = None  # dataset(default_scan_options=) (lancenb.dataset.session)

    def __init__(self, uri, version=None, *, asof=None, storage_options=None,
                 commit_lock=None, manifest_store=None, session=None, _store=None, _manifest=None,
                 _root_store=None, _branch=None):
        self._store = _store or open_store(uri, storage_options, commit_lock, manifest_store)
        self._root_store, self._branch = _root_store or self._store, _branch  # (branching.py)
        if _manifest is None:
            self._branch, version = resolve_reference(self._root_store, _branch, version)
            if self._branch != _branch or self._branch is None:
                self._store = branch_store(self._root_store, self._branch)
            _manifest, self._v2 = locate_manifest(
                self._store, version, asof, Tags(self._store).get_version)
        else:
            parsed = parse_manifest_name(_manifest.name.rsplit("/", 1)[-1])
            self._v2 = parsed[1] if parsed else True
        self._uri = self._store.uri
        self._mf = _manifest
        m = _manifest.manifest
        if m.branch and self._branch is None:  # opened at {root}/tree/{branch}
            self._root_store, self._branch = root_of(self._store, m.branch), m.branch
        register_bases(self._store, m, _manifest.name, main_root=self._root_store.root)
        check_feature_flags(m, _manifest.name, write=False)
        self._schema, self._top_fields = cached_fields_to_schema(m.fields, m.schema_metadata)
        self._cache: dict = {}
        self._session = session or Session()  # (its file readers, shared when given)
        self._readers = self._session.readers_of(self._uri)
        self._session.saw_manifest(self._uri, self.version, _manifest.size)
        self._fragments: list[LanceFragment] | None = None
        #: what the read and write modules use of this version (lancenb.dataset.snapshot)
        self.snapshot = Snapshot(self._uri, m.version, self._store, _manifest, self._schema,
                                 self._top_fields, self._cache, self._open_file,
                                 self._branch, self._root_store, self._commit)

    def __reduce__(self):
        # (uri, version, storage options): the other side reopens the same version;
        # open files, caches and commit locks stay in this process
        return _reopen, (self._uri, self.version, self._store.storage_options)

    @staticmethod
    def _write_dataset(*args, **kwargs) -> LanceDataset:
        # write_dataset for the mixins (administration.py), which do not import this module
        return write_dataset(*args, **kwargs)

    @staticmethod
    def commit(base_uri, operation, read_version=None, commit_lock=None, storage_options=None,
               enable_v2_manifest_paths=None, detached=False, max_retries=None, *,
               commit_message=None, enable_stable_row_ids=None, **kwargs) -> "LanceDataset":
        """Commit one :class:`lancenb.LanceOperation` (or a ``Transaction`` from
        ``write_fragments(..., return_transaction=True)``) as a new version.

        The driver side of distributed writes: workers write fragments, this commits
        them. It goes through the same commit protocol as every other writer
        (:mod:`lancenb.table.commit`): conflicts with versions committed after
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
        storage_options = provided_options(storage_options,
                                           kwargs.pop("storage_options_provider", None))
        store = base_uri.snapshot.store if isinstance(base_uri, LanceDataset) else \
            commit_store(base_uri, storage_options, commit_lock)
        mf = commit_operation(store, operation, read_version,
                              enable_v2_manifest_paths=enable_v2_manifest_paths,
                              max_retries=max_retries, detached=detached,
                              commit_message=commit_message,
                              enable_stable_row_ids=enable_stable_row_ids, **kwargs)
        return LanceDataset(store.uri, _store=store, _manifest=mf)

    def _at(self, mf) -> "LanceDataset":
        return LanceDataset(self._uri, _store=self._store, _manifest=mf, session=self._session,
                            _root_store=self._root_store, _branch=self._branch)

    def _become(self, mf) -> None:
        other = self._at(mf)
        self.__dict__.update(other.__dict__)
        self.snapshot = replace(self.snapshot, commit=self._commit)  # (commits move self)

    # -- metadata --------------------------------------------------------------
    def __repr__(self) -> str:
        return f"LanceDataset(uri={self._uri!r}, version={self.version})"

    @property
    def uri(self) -> str:
        """The dataset's URI (a local path or an object-store URL)."""
        return self._uri

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of this version (blob v2 columns as pylance shows them;
        extension columns, such as ``uuid`` or ``fixed_shape_tensor``, as their extension
        types). lancenb works on the stored schema, ``_schema``: extension columns as
        their storage type tagged with the extension's name."""
        if self._default_scan_options:
            return self.scanner().projected_schema
        tops = self._top_fields
        if isinstance(tops, FieldList):  # (once per distinct schema)
            return tops.derived("public_schema", partial(public_schema, self._schema))
        return public_schema(self._schema)

    @property
    def version(self) -> int:
        """This object's version number."""
        return self._mf.version

    @property
    def latest_version(self) -> int:
        """The newest version committed (looked up now, not when opened)."""
        return latest_version(self._store)[0]

    @property
    def data_storage_version(self) -> str:
        """The file format of this version's data files, e.g. ``"2.1"``."""
        return self._mf.manifest.data_format.version or "2.0"

    @property
    def max_field_id(self) -> int:
        """The largest field id in the schema (-1 when it has none)."""
        return max((f.id for f in self._mf.manifest.fields), default=-1)

    @property
    def manifest(self):
        """The ``lance.table.Manifest`` protobuf of this version (read-only use)."""
        return self._mf.manifest

    @property
    def stable_row_ids(self) -> bool:
        """Whether rows keep their ids across compaction and updates."""
        return bool(self._mf.manifest.reader_feature_flags & FLAG_STABLE_ROW_IDS)

    def versions(self) -> list[dict]:
        """Every version of the dataset, oldest first, as pylance lists them.

        Returns
        -------
        list of dict
            ``{"version": int, "timestamp": datetime, "metadata": {...}}``, the
            metadata pylance's per-version counts (``total_rows``, ``total_fragments``,
            ... as strings).

        Examples
        --------
        >>> [v["version"] for v in ds.versions()]  # doctest: +SKIP
        [1, 2, 3]
        """
        # each manifest read once per dataset object (committed manifests never change)
        return version_list(self._store, self._v2, self._cache.setdefault("versions", {}))

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
        """Another version, as a new object: a number (on this branch), a tag name or
        ``(branch, version)`` (None or ``"main"``: main; version None: latest).

        Examples
        --------
        >>> first = ds.checkout_version(1)  # doctest: +SKIP
        >>> exp = ds.checkout_version(("experiment", None))  # doctest: +SKIP
        """
        return LanceDataset(self._uri, version, _store=self._store, session=self._session,
                            _root_store=self._root_store, _branch=self._branch)

    @property
    def tags(self) -> "Tags":
        """The dataset's tags (:class:`~lancenb.table.tags.Tags`), for every branch."""
        return Tags(self._root_store, branch=self._branch,
                    open_branch=partial(branch_store, self._root_store))

    def get_fragments(self, filter=None) -> list[LanceFragment]:
        """The fragments of this version, in order (``filter`` is not supported)."""
        if filter is not None:
            raise NotSupportedError("get_fragments(filter=) is not supported")
        if self._fragments is None:
            self._fragments = [LanceFragment(self, f) for f in self._mf.manifest.fragments]
        return list(self._fragments)

    def get_fragment(self, fragment_id: int) -> LanceFragment | None:
        """The fragment with id ``fragment_id``, or None."""
        for f in self.get_fragments():
            if f.fragment_id == fragment_id:
                return f
        return None

    def _open_file(self, path: str, legacy: bool = False):
        r = self._readers.get(path)
        if r is None:
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

        Parameters
        ----------
        columns : list of str or dict, optional
            Column names (``"_rowid"``/``"_rowaddr"`` included), or ``{alias: SQL
            expression}``; default: every column.
        filter : str or pyarrow.compute.Expression, optional
            A SQL predicate in pylance's dialect, or a pyarrow expression.
        limit, offset : int, optional
            At most ``limit`` rows after skipping ``offset`` (deleted rows not counted).
        batch_size : int, optional
            Rows per batch (default 8192); ``strict_batch_size`` makes every batch but
            the last exactly that long, across fragments.
        batch_readahead : int, optional
            Batches read ahead on a background thread while the consumer of
            :meth:`LanceScanner.to_batches` works (default: none).
        fragments : list of LanceFragment, optional
            Scan only these fragments, in this order.
        with_row_id, with_row_address : bool, optional
            Add ``_rowid`` / ``_rowaddr`` columns.
        blob_handling : str, optional
            ``"all_binary"`` returns blob columns' bytes (default: descriptions).
        order_by : list, optional
            Column names or ``ColumnOrdering``; the scan is sorted (materialised).
        use_stats : bool, optional
            False: no pruning by statistics.
        include_deleted_rows : bool, optional
            With ``with_row_id``: deleted rows too, their id null.
        use_scalar_index : bool, optional
            False: filters are evaluated by scanning, without the scalar indices
            (default: indices answer what they can).

        Returns
        -------
        LanceScanner

        Notes
        -----
        Accepted and without effect, as they only tune pylance's engine:
        ``prefilter``, ``late_materialization`` (lancenb always reads the filter
        columns first), ``fast_search``, ``batch_size_bytes``,
        ``fragment_readahead``, ``scan_in_order`` (scans are always in order),
        ``io_buffer_size``, ``disable_scoring_autoprojection``, ``scan_stats_callback``.
        ``nearest`` is vector search (:mod:`lancenb.index.vector.search`: exact over
        fragments no vector index covers, through the index over those it does);
        full-text search (``full_text_query``), ``index_segments`` and row-address
        lists raise :class:`~lancenb.errors.NotSupportedError`. Any other keyword is a
        ``TypeError``, except the execution hints engines pass through the ``pyarrow.dataset``
        protocol (``use_threads``, ``fragment_scan_options``, ...).

        Examples
        --------
        >>> sc = ds.scanner(columns=["id", "name"], filter="id > 10", limit=5)  # doctest: +SKIP
        >>> sc.to_table().num_rows  # doctest: +SKIP
        5
        """
        if self._default_scan_options:
            return scan_with_defaults(self, locals())
        unknown = sorted(k for k in engine_hints if k not in _IGNORED_SCAN_OPTIONS)
        if unknown:
            raise TypeError(f"LanceDataset.scanner() got an unexpected keyword argument "
                            f"{unknown[0]!r}")
        if nearest is not None and full_text_query is None and index_segments is None and \
                row_addr_allowlist is None and row_addr_blocklist is None:
            from lancenb.index.vector.search import VectorSearchScanner

            return VectorSearchScanner(self, nearest, columns=columns, filter=filter,
                                       prefilter=prefilter, limit=limit, offset=offset,
                                       with_row_id=with_row_id, fragments=fragments,
                                       with_row_address=with_row_address,
                                       batch_size=batch_size,
                                       fast_search=fast_search,
                                       include_deleted_rows=include_deleted_rows,
                                       disable_scoring_autoprojection=disable_scoring_autoprojection)
        if full_text_query is not None and nearest is None and index_segments is None:
            from lancenb.index.fts.search import FtsScanner

            return FtsScanner(self, full_text_query, columns=columns, filter=filter,
                              prefilter=prefilter, limit=limit, offset=offset,
                              with_row_id=with_row_id, with_row_address=with_row_address,
                              fragments=fragments, batch_size=batch_size, fast_search=fast_search,
                              scan_stats=(scan_stats_callback, ScanStatistics),
                              disable_scoring_autoprojection=disable_scoring_autoprojection,
                              include_deleted_rows=include_deleted_rows)
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
                          include_deleted_rows=include_deleted_rows,
                          batch_readahead=batch_readahead)
        sc.scan_stats_callback = scan_stats_callback
        if use_scalar_index is not None and not use_scalar_index:
            sc.use_scalar_index = False  # (filters scan: no scalar index is used)
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
        lancenb.expr.engine.SqlQueryBuilder
            ``.build()`` runs it; ``.to_batch_records()`` / ``.to_stream_reader()`` of
            the result give the rows.
        """
        return SqlQueryBuilder(self, sql)

    def to_table(self, columns=None, filter=None, limit=None, offset=None, nearest=None,
                 batch_size=None, batch_size_bytes=None, batch_readahead=None,
                 fragment_readahead=None, scan_in_order=None, **kwargs) -> pa.Table:
        """The rows of :meth:`scanner` with the same parameters, as one table.

        Parameters
        ----------
        columns, filter, limit, offset, batch_size, **kwargs
            As for :meth:`scanner`.

        Returns
        -------
        pyarrow.Table
            One chunk per fragment read.

        Examples
        --------
        >>> ds.to_table(columns=["id"], filter="id < 3").to_pylist()  # doctest: +SKIP
        [{'id': 0}, {'id': 1}, {'id': 2}]
        """
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
        """The first ``num_rows`` rows (other :meth:`scanner` options allowed)."""
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
        v, naming = latest_version(self._store)
        if v != self.version:
            self._become(load_manifest(self._store, v, naming))

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

    def __len__(self) -> int:
        """The live rows (``count_rows()``), as pylance's ``len(ds)``."""
        return self.count_rows()

    def count_rows(self, filter=None, **kwargs) -> int:
        """Live rows, or rows matching ``filter`` (SQL or pyarrow expression).

        Examples
        --------
        >>> ds.count_rows("id > 10")  # doctest: +SKIP
        89
        """
        if filter is None and not kwargs:
            return sum(f.count_rows() for f in self.get_fragments())
        return self.scanner(columns=[], filter=filter, **kwargs).count_rows()

    def __arrow_c_stream__(self, requested_schema=None):
        return self.scanner().to_reader().__arrow_c_stream__(requested_schema)

    def take(self, indices, columns=None, *, with_row_id=False,
             with_row_address=False, blob_handling=None) -> pa.Table:
        """Rows at logical ``indices`` (deleted rows skipped), in the order given.

        Parameters
        ----------
        indices : array-like of int
            Positions among the live rows, repeats allowed; out of range is an
            ``InvalidInputError``.
        columns : list of str, optional
            The columns (default: all).
        with_row_id, with_row_address : bool
            Add ``_rowid`` / ``_rowaddr``.
        blob_handling : str, optional
            ``"all_binary"`` returns blob bytes (default: descriptions).

        Examples
        --------
        >>> ds.take([5, 0, 5], columns=["id"]).column("id").to_pylist()  # doctest: +SKIP
        [5, 0, 5]
        """
        return take.take(self, indices, columns, with_row_id=with_row_id,
                         with_row_address=with_row_address, blob_handling=blob_handling)

    # -- writes ----------------------------------------------------------------
    def _commit(self, txn: Transaction, written=(), **retries) -> None:
        # commit() removes ``written`` itself if it fails before its commit point,
        # and never after it (see lancenb.table.commit); ``retries``: max_retries...
        mf = commit(self._store, txn, v2_names=self._v2,
                    data_format=self.data_storage_version, writer_version=_writer_version(),
                    base=self._mf, written=written, **retries)
        self._become(mf)
        after_commit(self._store, mf)

    def delete(self, predicate) -> dict:
        """Delete the rows matching ``predicate`` (SQL string or pyarrow expression),
        as a new version (even when nothing matched, as pylance does). Row-id sequences
        are never rewritten: only deletion files change. Returns
        ``{"num_deleted_rows": n}``, as pylance.

        Examples
        --------
        >>> ds.delete("id < 10")  # doctest: +SKIP
        {'num_deleted_rows': 10}
        """
        return delete_rows(self, predicate)

    def restore(self) -> None:
        """Make this (older) version the latest, as a new version."""
        check_feature_flags(self._mf.manifest, self._mf.name, write=True)
        txn = Transaction(self.version, Op.RESTORE,
                          transaction_pb2.Transaction.Restore(version=self.version))
        txn.restore_manifest = self._mf.manifest
        txn.restore_index_section = self._mf.index_section_bytes()
        self._commit(txn)

    def insert(self, data, *, mode: str = "append", **kwargs) -> None:
        """Append ``data`` (``mode="overwrite"`` replaces) and move to the new version;
        keywords as for :func:`write_dataset`."""
        ds = write_dataset(data, self, mode=mode, **kwargs)
        self._become(ds.snapshot.manifest)

    # -- row changes and maintenance ----------------------------------------------
    def update(self, updates: dict, where=None, **kwargs) -> dict:
        """``{column: SQL expression}`` on the rows matching ``where``."""
        return update(self, updates, where, **kwargs)

    def merge_insert(self, on):
        """Upsert builder: ``ds.merge_insert("id").when_matched_update_all()
        .when_not_matched_insert_all().execute(data)``."""
        return MergeInsertBuilder(self, on)

    @property
    def optimize(self) -> Optimize:
        """Compaction (``ds.optimize.compact_files(...)``), pylance's namespace."""
        return Optimize(self)

    def cleanup_old_versions(self, older_than=None, retain_versions=None, *,
                             delete_unverified=False, error_if_tagged_old_versions=True,
                             dry_run=False):
        """Remove the files only versions older than ``older_than`` (a timedelta,
        default two weeks) use, keeping ``retain_versions`` and tagged versions;
        returns pylance's ``CleanupStats``."""
        return cleanup_old_versions(self, older_than, retain_versions,
                                    delete_unverified=delete_unverified,
                                    error_if_tagged_old_versions=error_if_tagged_old_versions,
                                    dry_run=dry_run)

    def _take_rows(self, row_ids, columns=None, *, by_address=False, **kwargs) -> pa.Table:
        """Rows by row id (stable row ids) or row address (``by_address``, or without
        stable row ids), in the order given."""
        return take.take_rows(self, row_ids, columns, by_address=by_address, **kwargs)

    # -- schema evolution (lancenb.dataset.write.evolution) ----------------------------
    def add_columns(self, transforms, read_columns=None, reader_schema=None,
                    batch_size=None) -> None:
        """Add columns from SQL expressions (``{"b": "a * 2"}``), ``pa.Field``s /
        a ``pa.Schema`` (all null), a batch function (see ``lancenb.batch_udf``), or
        data with one value per row (a reader, scanner, or an iterator of batches
        with ``reader_schema``)."""
        add_columns(self, transforms, read_columns, batch_size=batch_size,
                    reader_schema=reader_schema)

    def drop_columns(self, columns) -> None:
        """Remove ``columns`` from the schema (a new version; data files are not
        rewritten)."""
        drop_columns(self, columns)

    def alter_columns(self, *alterations) -> None:
        """Rename columns, change nullability or cast types: each alteration a dict
        ``{"path", "name", "nullable", "data_type"}`` as pylance takes them."""
        alter_columns(self, *alterations)

    def merge(self, data_obj, left_on: str, right_on: str | None = None,
              schema=None) -> None:
        """Join the columns of ``data_obj`` onto this dataset's rows by key (``schema``:
        of ``data_obj``, e.g. an iterator of batches)."""
        merge_columns(self, data_obj, left_on, right_on, schema)

    # pyarrow.dataset.Dataset methods without a lancenb implementation: refuse
    # clearly instead of reaching into an uninitialised C++ dataset
    def _unsupported(self, *args, **kwargs):
        raise NotSupportedError("this pyarrow.dataset.Dataset method is not supported by "
                                "lancenb datasets; use scanner()/to_table()")

    filter = join = join_asof = sort_by = replace_schema = _get_fragments = _unsupported

    @property
    def partition_expression(self):
        """Always true: Lance datasets are not partitioned (``pyarrow.dataset`` API)."""
        return pc.scalar(True)


LanceScanner.dataset_class = LanceDataset


def _reopen(uri, version, storage_options) -> LanceDataset:
    """Unpickling a :class:`LanceDataset`: open the same version again."""
    return LanceDataset(uri, version, storage_options=storage_options)


def dataset(uri=None, version=None, *, asof=None, storage_options=None, commit_lock=None,
            manifest_store=None, **kwargs) -> LanceDataset:
    """Open a dataset: its latest version, a version number, a tag name, or the version
    current ``asof`` a time.

    Parameters
    ----------
    uri : str or Path
        A local path or an object-store URL (``s3://``, ``gs://``, ``az://``, ``memory://``).
    version : int or str, optional
        A version number or a tag name.
    asof : datetime, date or ISO string, optional
        The latest version committed at or before this time.
    storage_options : dict, optional
        Object-store options (pylance's names are accepted).
    commit_lock, manifest_store : optional
        How commits through this object are made safe (see the README's "Commits").
    namespace_client, table_id : optional
        Instead of ``uri``: a table of a namespace (:mod:`lancenb.namespace`).

    Examples
    --------
    >>> ds = lancenb.dataset("/tmp/ds", version=2)  # doctest: +SKIP
    >>> ds = lancenb.dataset(namespace_client=ns, table_id=["team", "t"])  # doctest: +SKIP
    """
    uri, storage_options = namespace_table(kwargs, uri, storage_options)
    session, defaults = open_options(kwargs)  # (and pylance's other options: read_params)
    return with_scan_defaults(LanceDataset(
        uri, version, asof=asof, storage_options=storage_options, commit_lock=commit_lock,
        manifest_store=manifest_store, session=session), defaults)


def write_dataset(data_obj, uri=None, schema: pa.Schema | None = None, mode: str = "create", *,
                  max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
                  max_rows_per_group: int | None = None,
                  max_bytes_per_file: int = DEFAULT_MAX_BYTES_PER_FILE,
                  data_storage_version: str | None = None, storage_options=None,
                  enable_v2_manifest_paths: bool = True, commit_lock=None,
                  manifest_store=None, enable_stable_row_ids: bool | None = None,
                  use_legacy_format=None, progress=None, **kwargs) -> LanceDataset:
    """Write ``data_obj`` as a new dataset, or append to / overwrite one (pylance's API).

    Parameters
    ----------
    data_obj : pyarrow Table, RecordBatch, RecordBatchReader, iterable of RecordBatch, \
pandas or polars DataFrame, dict, list of dicts, pyarrow or Lance dataset or scanner, \
Hugging Face Dataset or IterableDataset
        Streamed, never materialised whole (the kinds and their rules:
        :mod:`lancenb.dataset.write.inputs`). A Hugging Face ``DatasetDict`` is refused: pass
        one split.
    uri : str, Path or LanceDataset
        Where; a ``LanceDataset`` commits on top of its version.
    schema : pyarrow.Schema, optional
        The data is cast to it.
    mode : {"create", "append", "overwrite"}
        ``"create"`` refuses an existing dataset; an append may leave out nullable
        columns (nulls in the new rows).
    max_rows_per_file, max_bytes_per_file : int
        A new data file (fragment) starts when the current one reaches either.
    data_storage_version : str, optional
        File format of new data files (default: the file layer's default; appends keep the
        dataset's; an overwrite keeps it unless given).
    enable_stable_row_ids : bool, optional
        Rows keep their ids across compaction and updates.
    progress : object, optional
        pylance's ``FragmentWriteProgress`` (``begin``/``complete`` per data file).
    commit_message, transaction_properties, auto_cleanup_options : optional
        Stored with the transaction, as pylance stores them; automatic cleanup of a
        created dataset (:mod:`lancenb.dataset.write.cleanup`).
    namespace_client, table_id : optional
        Instead of ``uri``: a table of a namespace (:mod:`lancenb.namespace`); a create
        declares the table there, an append or overwrite looks it up.
    initial_bases, target_bases, target_all_bases : optional
        Multi-base datasets (:mod:`lancenb.dataset.write.bases`): ``DatasetBasePath`` s to
        register (create/overwrite), names or paths of the bases new data files go to in
        turn (the dataset's URI names its own storage), or every base (after the own
        storage unless ``False``).

    Returns
    -------
    LanceDataset
        The version committed.

    Examples
    --------
    >>> ds = lancenb.write_dataset(pa.table({"id": [1, 2]}), "/tmp/ds")  # doctest: +SKIP
    >>> ds = lancenb.write_dataset(more, "/tmp/ds", mode="append")  # doctest: +SKIP
    """
    uri, storage_options = namespace_table(kwargs, uri, storage_options, mode)
    extra = ("commit_message", "transaction_properties", "auto_cleanup_options",
             "initial_bases", "target_bases", "target_all_bases")  # (write/bases.py)
    check_write_options({k: v for k, v in kwargs.items() if k not in extra})
    store, mf = write_version(data_obj, uri, schema, mode=mode,
                              max_rows_per_file=max_rows_per_file,
                              max_bytes_per_file=max_bytes_per_file,
                              data_storage_version=data_storage_version,
                              storage_options=storage_options,
                              enable_v2_manifest_paths=enable_v2_manifest_paths,
                              commit_lock=commit_lock, manifest_store=manifest_store,
                              enable_stable_row_ids=enable_stable_row_ids,
                              use_legacy_format=use_legacy_format, progress=progress,
                              **{k: kwargs.get(k) for k in extra})
    return LanceDataset(store.uri, _store=store, _manifest=mf)
