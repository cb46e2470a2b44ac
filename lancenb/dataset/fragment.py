"""Fragments: a horizontal slice of a dataset, stored as one or more data files.

Every data file of a fragment holds the same rows (``physical_rows``, deleted ones
included) for a subset of the dataset's columns: ``DataFile.fields`` lists the
dataset field ids stored in the file and ``column_indices`` the file column of
each (2.1+: one column per leaf field). A column added later lives in a new file;
a dropped column simply stops being read.

Rows are addressed by *offset* within the fragment (physical) or by row address
``(fragment_id << 32) | offset``; deletion files remove offsets.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from lancenb.dataset.fragment_columns import FragmentColumnMethods
from lancenb.dataset.read import blob
from lancenb.dataset.read.field_ids import (
    conform,
    file_fields,
    resolve_column,
    struct_names_match,
)
from lancenb.dataset.read.nested import nested_request, prune_nested
from lancenb.dataset.write.insert import create_fragment
from lancenb.encodings.structural import dictarray
from lancenb.errors import CorruptFileError, InvalidInputError, NotSupportedError
from lancenb.file.legacy import LegacyFileReader
from lancenb.file.reader import LanceFileReader
from lancenb.file.same_shape import SmallFile, open_small
from lancenb.file.schema import FieldList
from lancenb.file.statistics import ColumnStats, read_file_stats
from lancenb.file.version import FileVersion
from lancenb.io.paths import check_name
from lancenb.io.pools import ThreadPool
from lancenb.table.deletion import deletion_path, read_deletions, write_deletions
from lancenb.table.fragments import DataFile, FragmentMetadata, is_legacy_file
from lancenb.table.manifest import DATA_DIR
from lancenb.table.rowids import decode_row_ids, decode_version_runs, external_bytes

__all__ = ["LanceFragment", "FragmentMetadata", "DataFile"]

# row offsets in a row address are 32 bits
MAX_FRAGMENT_ROWS = 1 << 32
# the deleted offsets of every fragment without a deletion file (shared, read-only)
_NONE_DELETED = np.zeros(0, np.uint32)
_NONE_DELETED.flags.writeable = False


# data files listing more fields than this are planned with numpy (_wide_plan); below,
# the per-field Python path with its per-dataset memo is cheaper
WIDE_PLAN_FIELDS = 64
# what _wide_plan derives from shared schema objects (a dataset's top-level fields, a
# data file's fields: both come from the schema caches, so every open of one dataset
# gets the same objects): key -> (the objects the key names by id, kept alive so the
# ids stay theirs, value)
_WIDE_MEMO: dict = {}
_WIDE_MEMO_SIZE = 64


def _wide_memo(key, pins, build):
    hit = _WIDE_MEMO.get(key)
    if hit is not None:
        return hit[1]
    value = build()
    if len(_WIDE_MEMO) >= _WIDE_MEMO_SIZE:
        _WIDE_MEMO.pop(next(iter(_WIDE_MEMO), None), None)
    _WIDE_MEMO[key] = (pins, value)
    return value


def _owner_arrays(tops) -> tuple:
    """``(leaf field ids sorted, index of each one's top-level field, top-level names)``
    (ids need not be dense)."""
    ids, owner = [], []
    for k, top in enumerate(tops):
        for lf in top.walk():
            ids.append(lf.id)
            owner.append(k)
    ids_a = np.asarray(ids, dtype=np.int64)
    order = np.argsort(ids_a, kind="stable")
    return ids_a[order], np.asarray(owner, dtype=np.int64)[order], [t.name for t in tops]


class LanceFragment(FragmentColumnMethods):
    """One fragment of a :class:`~lancenb.dataset.LanceDataset` version.

    ``LanceFragment(dataset, fragment_id)`` as in pylance (or with the manifest's
    ``DataFragment``). Pickles as its dataset (URI, version, storage options) and id.

    Examples
    --------
    >>> frag = ds.get_fragments()[0]  # doctest: +SKIP
    >>> frag.count_rows(), frag.to_table(columns=["id"], limit=2).num_rows  # doctest: +SKIP
    (1000, 2)
    >>> meta = LanceFragment.create(uri, more_rows)  # not committed yet  # doctest: +SKIP
    """

    def __init__(self, dataset, pb):
        if isinstance(pb, (int, np.integer)):
            fid = int(pb)
            pb = next((f for f in dataset.manifest.fragments if f.id == fid), None)
            if pb is None:
                raise InvalidInputError(f"dataset {dataset.uri!r} version {dataset.version} has "
                                        f"no fragment {fid}")
        self._ds = dataset
        self._pb = pb
        self.fragment_id = int(pb.id)
        self.physical_rows = int(pb.physical_rows)
        self._deleted: np.ndarray | None = None
        self._rows_ok = False
        self._plan: dict | None = None
        self._resolved: dict | None = None

    # -- metadata --------------------------------------------------------------
    def __repr__(self) -> str:
        return f"LanceFragment(id={self.fragment_id}, physical_rows={self.physical_rows})"

    def __reduce__(self):
        # the dataset pickles as (uri, version, storage options); the fragment by id
        return LanceFragment, (self._ds, self.fragment_id)

    @property
    def dataset(self):
        """The dataset (one version) this fragment belongs to."""
        return self._ds

    @property
    def protobuf(self):
        """This fragment as the manifest lists it (a ``DataFragment`` protobuf)."""
        return self._pb

    @property
    def metadata(self) -> FragmentMetadata:
        """pylance's :class:`~lancenb.fragment.FragmentMetadata` of this fragment."""
        return FragmentMetadata.from_pb(self._pb)

    @property
    def num_deletions(self) -> int:
        """Rows of this fragment deleted by its deletion file."""
        return len(self.deleted_offsets())

    @property
    def schema(self) -> pa.Schema:
        """The dataset's schema (every fragment holds every column, nulls where a
        data file lacks one)."""
        return self._ds.schema

    @staticmethod
    def create(dataset_uri, data, fragment_id=None, schema=None, max_rows_per_group=1024,
               progress=None, mode: str = "append", *, data_storage_version=None,
               use_legacy_format=None, storage_options=None, **kwargs) -> FragmentMetadata:
        """Write ``data`` as one new fragment (one data file) of ``dataset_uri``,
        without committing it; commit with ``LanceOperation.Append``/``Overwrite``.

        ``mode="append"`` uses the existing dataset's schema, field ids and file
        version; ``"create"``/``"overwrite"`` (or no dataset yet) assign field ids from
        the data's schema. Returns its :class:`~lancenb.fragment.FragmentMetadata`
        (id ``fragment_id`` or 0: the commit assigns ids).

        Examples
        --------
        >>> meta = LanceFragment.create(uri, pa.table({"a": [1]}))  # doctest: +SKIP
        """
        return create_fragment(dataset_uri, data, fragment_id, schema, max_rows_per_group,
                               progress, mode, data_storage_version=data_storage_version,
                               use_legacy_format=use_legacy_format,
                               storage_options=storage_options, **kwargs)

    def delete(self, predicate) -> FragmentMetadata | None:
        """Write a deletion file for the rows matching ``predicate`` (SQL string or
        pyarrow expression) without committing it: the new
        :class:`~lancenb.fragment.FragmentMetadata` (unchanged when nothing matched), or
        None when no row is left. Commit with ``LanceOperation.Delete``."""
        sc = self._ds.scanner(columns=[], filter=predicate)
        live = self.live_offsets()
        hit = sc.expr_mask(sc.filter_table(self, live))
        phys = live[hit] if live is not None else hit
        return self.delete_rows(phys)

    def delete_rows(self, offsets) -> FragmentMetadata | None:
        """Like :meth:`delete`, for physical row ``offsets`` of this fragment."""
        offsets = np.asarray(offsets, dtype=np.int64).reshape(-1)
        if offsets.size and (offsets.min() < 0 or offsets.max() >= self.physical_rows):
            raise InvalidInputError(f"fragment {self.fragment_id} has {self.physical_rows} "
                                    f"rows; offsets must be in 0..{self.physical_rows - 1}")
        rows = np.union1d(self.deleted_offsets(), offsets).astype(np.uint32)
        if len(rows) == len(self.deleted_offsets()):
            return self.metadata
        if len(rows) >= self.physical_rows:
            return None
        pb = type(self._pb)()
        pb.CopyFrom(self._pb)
        pb.deletion_file.CopyFrom(write_deletions(self._ds.snapshot.store, self.fragment_id, rows,
                                                  self._ds.version))
        return FragmentMetadata.from_pb(pb)

    # -- pylance's fragment reads ---------------------------------------------------
    def scanner(self, *, columns=None, batch_size=None, filter=None, limit=None, offset=None,
                with_row_id=False, with_row_address=False, **kwargs):
        """A :class:`~lancenb.dataset.LanceScanner` over this fragment only."""
        return self._ds.scanner(columns=columns, filter=filter, limit=limit, offset=offset,
                                batch_size=batch_size, with_row_id=with_row_id,
                                with_row_address=with_row_address, fragments=[self], **kwargs)

    def to_batches(self, *, columns=None, batch_size=None, filter=None, limit=None,
                   offset=None, with_row_id=False, with_row_address=False, **kwargs):
        """This fragment's rows as an iterator of ``pa.RecordBatch``."""
        return self.scanner(columns=columns, batch_size=batch_size, filter=filter, limit=limit,
                            offset=offset, with_row_id=with_row_id,
                            with_row_address=with_row_address, **kwargs).to_batches()

    def to_table(self, columns=None, filter=None, limit=None, offset=None, with_row_id=False,
                 with_row_address=False, **kwargs) -> pa.Table:
        """This fragment's rows (projection, filter, limit/offset) as a ``pa.Table``.

        Examples
        --------
        >>> ds.get_fragments()[0].to_table(columns=["a"], filter="a > 3")  # doctest: +SKIP
        """
        return self.scanner(columns=columns, filter=filter, limit=limit, offset=offset,
                            with_row_id=with_row_id, with_row_address=with_row_address,
                            **kwargs).to_table()

    def head(self, num_rows: int) -> pa.Table:
        """The first ``num_rows`` live rows of this fragment."""
        return self.scanner(limit=num_rows).to_table()

    def to_pandas(self, columns=None, filter=None, limit=None, offset=None, **kwargs):
        """This fragment's rows (as :meth:`to_table`) as a pandas DataFrame."""
        return self.to_table(columns=columns, filter=filter, limit=limit, offset=offset,
                             **kwargs).to_pandas()

    def take(self, indices, columns=None) -> pa.Table:
        """Rows at ``indices`` among this fragment's live rows (deleted rows skipped,
        as pylance counts them), in the order given."""
        nested = nested_request(self._ds.snapshot.schema, columns)
        if nested is not None:  # fields inside structs: pruned structs, as pylance
            return prune_nested(self.take(indices, nested[0]), nested[1])
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        n = self.count_rows()
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            bad = int(idx[(idx < 0) | (idx >= n)][0])
            raise InvalidInputError(f"take: index {bad} is out of range for fragment "
                                    f"{self.fragment_id} of {n} rows")
        sc = self.scanner(columns=columns)
        live = self.live_offsets()
        phys = live[idx] if live is not None else idx
        uniq, inverse = np.unique(phys, return_inverse=True)
        t = sc.project(self.take_physical(sc.columns, uniq))
        t = t.replace_schema_metadata(sc.stored_schema().metadata)
        if len(uniq) != len(phys) or np.any(np.diff(inverse) < 0):
            t = dictarray.take(t, pa.array(inverse.reshape(-1)))
        return sc.to_public(t)

    def data_files(self) -> list[DataFile]:
        """This fragment's data files (:class:`~lancenb.fragment.DataFile`)."""
        return self.metadata.files

    def deletion_file(self) -> str | None:
        """The path of this fragment's deletion file, or None."""
        if not self._pb.HasField("deletion_file"):
            return None
        return deletion_path(self.fragment_id, self._pb.deletion_file)

    def deleted_offsets(self) -> np.ndarray:
        """Sorted uint32 offsets of this fragment's deleted rows."""
        if self._deleted is None:
            if self._pb.HasField("deletion_file"):
                key = ("deletions", self.fragment_id, self._pb.deletion_file.id)
                cached = self._ds.snapshot.cache.get(key)
                if cached is None:
                    cached = read_deletions(self._ds.snapshot.store, self.fragment_id,
                                            self._pb.deletion_file, self.verified_rows())
                    self._ds.snapshot.cache[key] = cached
                self._deleted = cached
            else:
                self._deleted = _NONE_DELETED
        return self._deleted

    def live_offsets(self) -> np.ndarray | None:
        """Offsets of the live rows (int64), or None when nothing is deleted."""
        dead = self.deleted_offsets()
        if not dead.size:
            return None
        mask = np.ones(self.verified_rows(), dtype=bool)
        mask[dead] = False
        return np.flatnonzero(mask)

    def verified_rows(self) -> int:
        """``physical_rows``, once checked against what the fragment's files hold.

        Per-row arrays (deletion masks, row ids, null columns) are sized from it, so a
        manifest claiming ``2**36`` rows must fail here, not in a 64 GiB allocation:
        the first data file's row count must agree, and without data files the count
        must fit in the 32-bit row offsets of row addresses.
        """
        if self._rows_ok:
            return self.physical_rows
        n = self.physical_rows
        if n > MAX_FRAGMENT_ROWS:
            raise CorruptFileError(f"{self._where()}: physical_rows {n} is more than a "
                                   f"fragment can hold ({MAX_FRAGMENT_ROWS})")
        if len(self._pb.files):
            df = self._pb.files[0]
            got = self._ds.snapshot.open_file(df.path, is_legacy_file(df)).num_rows()
            if got != n:
                raise CorruptFileError(f"{self._where()}: physical_rows is {n} but data file "
                                       f"{df.path!r} has {got} rows")
        self._rows_ok = True
        return n

    def _where(self) -> str:
        return f"manifest {self._ds.snapshot.manifest.name!r}, fragment {self.fragment_id}"

    def count_rows(self, filter=None) -> int:
        """Live rows, or rows matching ``filter``.

        Examples
        --------
        >>> ds.get_fragments()[0].count_rows("a > 1")  # doctest: +SKIP
        """
        if filter is not None:
            return self._ds.scanner(filter=filter, columns=[], fragments=[self]).count_rows()
        return self.physical_rows - len(self.deleted_offsets())

    @property
    def has_stable_row_ids(self) -> bool:
        """Whether the dataset keeps row ids across compaction and updates."""
        return self._pb.WhichOneof("row_id_sequence") is not None

    def row_ids(self) -> np.ndarray:
        """Row id of every physical row: stable ids if the dataset has them, else the
        row addresses."""
        p = self._pb
        kind = p.WhichOneof("row_id_sequence")
        n = self.verified_rows()
        if kind is None:
            return self.row_addresses(np.arange(n, dtype=np.int64))
        where = (f"manifest {self._ds.snapshot.manifest.name!r}, fragment {self.fragment_id}: "
                 "row id sequence")
        if kind == "inline_row_ids":
            data = p.inline_row_ids
        else:
            data = external_bytes(self._ds.snapshot.store, p.external_row_ids, where)
        ids = decode_row_ids(data, where, expected=n)
        if len(ids) != self.physical_rows:
            raise CorruptFileError(f"{where} has {len(ids)} ids for {self.physical_rows} rows")
        return ids

    def row_versions(self, kind: str) -> np.ndarray:
        """Per-row ``created`` or ``last_updated`` dataset version (stable row ids);
        1 where the fragment has no sequence."""
        p = self._pb
        field = f"{kind}_at_version_sequence"
        which = p.WhichOneof(field)
        n = self.verified_rows()
        if which is None:
            return np.ones(n, dtype=np.uint64)
        where = (f"manifest {self._ds.snapshot.manifest.name!r}, fragment {self.fragment_id}: "
                 f"{kind} versions")
        if which.startswith("inline"):
            data = getattr(p, which)
        else:
            data = external_bytes(self._ds.snapshot.store, getattr(p, which), where)
        return decode_version_runs(data, n, where)

    def row_addresses(self, offsets: np.ndarray) -> np.ndarray:
        """Row addresses ``(fragment_id << 32) | offset`` of physical ``offsets``."""
        return (np.uint64(self.fragment_id) << np.uint64(32)) | offsets.astype(np.uint64)

    # -- reading ---------------------------------------------------------------
    def _column_plan(self) -> dict:
        """Dataset top-level field name -> (data file index, name inside that file)."""
        if self._plan is not None:
            return self._plan
        if any(len(df.fields) > WIDE_PLAN_FIELDS for df in self._pb.files):
            self._plan = self._wide_plan()
            return self._plan
        cache = self._ds.snapshot.cache
        owner = cache.get("field_owner")
        if owner is None:  # leaf field id -> its top-level field's name (once per dataset)
            owner = {lf.id: top.name for top in self._ds.snapshot.top_fields for lf in top.walk()}
            cache["field_owner"] = owner
        wanted = self._wanted_columns(owner)  # (from the manifest alone)
        readers = {fi: self._ds.snapshot.open_file(self._pb.files[fi].path,
                                           is_legacy_file(self._pb.files[fi]))
                   for fi, _ in wanted}
        # fragments whose files hold the same fields, in files of the same schema (one
        # writer's many small files), have the same plan: it is made once per dataset
        memo = cache.setdefault("column_plans", {})
        hit = memo.get(wanted)
        if hit is not None and all(hit[0][fi] is r.fields for fi, r in readers.items()):
            self._plan = hit[1]
            return hit[1]
        plan: dict[str, tuple[int, str]] = {}
        for fi, cols in wanted:
            df, reader = self._pb.files[fi], readers[fi]
            for name, col in cols:
                # the field's first id may be a parent without a column (2.1+): the
                # first field whose columns start at or after it
                top_idx = reader.field_at_column(col)
                if top_idx is None:
                    raise CorruptFileError(
                        f"fragment {self.fragment_id}, data file {df.path!r}: no column "
                        f"{col} for field {name!r}")
                plan[name] = (fi, reader.fields[top_idx].name)
        if len(memo) < 1024:
            memo[wanted] = ({fi: r.fields for fi, r in readers.items()}, plan)
        self._plan = plan
        return plan

    def _wide_plan(self) -> dict:
        """:meth:`_column_plan` of a fragment whose data files list many fields, with
        numpy instead of a Python step per field (a 2,000-column dataset opened to read
        one column spent ~4 ms there), memoised per process by what it depends on (the
        dataset's fields, each file's field list, ids and column indices): the same
        plan, the same errors. The plan returned is shared: callers only read it."""
        tops = self._ds.snapshot.top_fields
        sorted_ids, sorted_tops, top_names = (
            tops.derived("owner_arrays", lambda: _owner_arrays(tops))
            if isinstance(tops, FieldList) else _owner_arrays(tops))
        seen = np.zeros(len(top_names), dtype=bool)
        parts = []
        for fi, df in enumerate(self._pb.files):
            fids = np.array(df.fields, dtype=np.int64)
            n = len(fids)
            if len(df.column_indices) != n and len(df.column_indices):
                raise CorruptFileError(f"fragment {self.fragment_id}, data file {df.path!r}: "
                                       f"{n} fields but {len(df.column_indices)} column "
                                       f"indices")
            if not n or not len(sorted_ids):
                continue
            at = np.minimum(np.searchsorted(sorted_ids, fids), len(sorted_ids) - 1)
            owner = np.where(sorted_ids[at] == fids, sorted_tops[at], -1)
            # the first listed field of each top-level field not planned from an earlier file
            listed = np.flatnonzero(owner >= 0)
            _, first = np.unique(owner[listed], return_index=True)
            pos = listed[np.sort(first)]
            pos = pos[~seen[owner[pos]]]
            if not len(pos):
                continue
            seen[owner[pos]] = True
            cols = (np.array(df.column_indices, dtype=np.int64)[pos] if len(df.column_indices)
                    else pos)
            reader = self._ds.snapshot.open_file(df.path, is_legacy_file(df))
            parts.append((fi, df, reader, owner[pos], cols))
        # (the file version too: it decides which column each field starts at)
        key = ("plan", id(tops)) + tuple((fi, id(r.fields), r.version, o.tobytes(),
                                          c.tobytes()) for fi, _, r, o, c in parts)
        pins = (tops,) + tuple(r.fields for _, _, r, _, _ in parts)
        return _wide_memo(key, pins, lambda: self._wide_plan_of(parts, top_names))

    def _wide_plan_of(self, parts: list, top_names: list) -> dict:
        plan: dict[str, tuple[int, str]] = {}
        for fi, df, reader, owner, cols in parts:
            found = reader.fields_at_columns(cols)
            if (found < 0).any():
                k = int(np.flatnonzero(found < 0)[0])
                raise CorruptFileError(
                    f"fragment {self.fragment_id}, data file {df.path!r}: no column "
                    f"{int(cols[k])} for field {top_names[int(owner[k])]!r}")
            fields = reader.fields
            for t, i in zip(owner.tolist(), found.tolist()):
                plan[top_names[t]] = (fi, fields[i].name)
        return plan

    def columns_by_field_id(self) -> frozenset:
        """Names of the top-level columns this fragment assembles from its data files by
        field id (a nested field renamed, cast or dropped since the files were written,
        a struct spread over several files); empty in the usual case. Readers that
        read columns by their position in a file leave these to the fragment."""
        return frozenset(self._resolutions())

    def _resolutions(self) -> dict:
        """Top-level columns whose values are assembled from their data files by field
        id (a nested field renamed, cast or dropped since the files were written, or a
        struct spread over several files: :mod:`lancenb.dataset.read.field_ids`), name ->
        :class:`~lancenb.dataset.read.field_ids.Resolution`; empty in the usual case."""
        if self._resolved is not None:
            return self._resolved
        cache = self._ds.snapshot.cache
        nested = cache.get("nested_tops")
        if nested is None:  # (once per dataset; flat schemas skip all of this)
            nested = cache["nested_tops"] = [(t, frozenset(f.id for f in t.walk()))
                                             for t in self._ds.snapshot.top_fields if t.children]
            cache["parent_of"] = {c.id: f.id for t in self._ds.snapshot.top_fields
                                  for f in t.walk() for c in f.children}
        out: dict = {}
        if nested:
            plan = self._column_plan()
            where = f"fragment {self.fragment_id}"
            parent_of = cache["parent_of"]
            known: dict = {}  # data file index -> its fields under dataset ids
            for top, ids in nested:
                if top.name not in plan or blob.has_blobs(top.arrow):
                    continue
                files = []
                for fi, df in enumerate(self._pb.files):
                    if not any(int(x) in ids for x in df.fields):
                        continue
                    if fi not in known:
                        reader = self._ds.snapshot.open_file(df.path, is_legacy_file(df))
                        known[fi] = file_fields(df, reader, parent_of)
                    files.append((fi, df, known[fi]))
                got = resolve_column(top, files, where=where)
                if got is not None:
                    out[top.name] = got
        self._resolved = out
        return out

    def _wanted_columns(self, owner: dict) -> tuple:
        """``((data file index, ((top-level name, file column index), ...)), ...)``:
        the files that hold a dataset column (the first file listing a field wins)."""
        out = []
        seen: set = set()
        for fi, df in enumerate(self._pb.files):
            if len(df.fields) != len(df.column_indices) and len(df.column_indices):
                raise CorruptFileError(f"fragment {self.fragment_id}, data file {df.path!r}: "
                                       f"{len(df.fields)} fields but {len(df.column_indices)} "
                                       f"column indices")
            wanted: dict = {}
            for k, fid in enumerate(df.fields):
                name = owner.get(int(fid))
                if name is None or name in wanted or name in seen:
                    continue
                wanted[name] = int(df.column_indices[k]) if len(df.column_indices) else k
            if wanted:
                seen.update(wanted)
                out.append((fi, tuple(wanted.items())))
        return tuple(out)

    def page_stats(self):
        """``(rows_per_page, {column name: [ColumnStats per statistics page]})`` from
        the data files' lancenb statistics, or None (no statistics, or files that
        disagree on the page size)."""
        key = ("stats", self.fragment_id, tuple(f.path for f in self._pb.files))
        if key in self._ds.snapshot.cache:
            return self._ds.snapshot.cache[key]
        name_of = self._ds.snapshot.cache.get("top_names")
        if name_of is None:
            snap = self._ds.snapshot
            name_of = snap.cache["top_names"] = {t.id: t.name for t in snap.top_fields}
        plan = self._column_plan()
        used = sorted({fi for fi, _ in plan.values()})
        rpp, out = None, {}
        for fi in used:
            df = self._pb.files[fi]
            reader = self._ds.snapshot.open_file(df.path, is_legacy_file(df))
            if reader.version is FileVersion.LEGACY:
                got = _legacy_stats(reader)
            else:
                got = read_file_stats(reader, f"fragment {self.fragment_id}, data file "
                                              f"{df.path!r}")
            if got is None:
                continue
            if rpp is not None and got[0] != rpp:
                out = None
                break
            rpp = got[0]
            for fid, stats in got[1].items():
                name = name_of.get(fid)
                if name is not None and plan.get(name, (None,))[0] == fi:
                    out[name] = stats
        result = (rpp, out) if out else None
        self._ds.snapshot.cache[key] = result
        return result

    def readers_for(self, columns: list[str]):
        """Group the columns by data file: ``[(reader, {dataset name: file name})]``."""
        plan = self._column_plan()
        groups: dict[int, dict[str, str]] = {}
        missing = []
        for c in columns:
            if c not in plan:
                missing.append(c)
                continue
            fi, fname = plan[c]
            groups.setdefault(fi, {})[c] = fname
        return groups, missing

    def data_file_of(self, column: str) -> str:
        """The path (under ``data/``) of the data file holding a top-level column."""
        plan = self._column_plan()
        if column not in plan:
            raise InvalidInputError(f"fragment {self.fragment_id}: no data file holds column "
                                    f"{column!r}")
        return self._pb.files[plan[column][0]].path

    def small_file_for(self, columns: list[str]):
        """``(small file, [its field index of each column])`` when one small data file
        of this fragment (:mod:`lancenb.file.same_shape`) holds every one of
        ``columns`` with the schema's type and no blobs, its rows checked against the
        manifest; else None (read through :meth:`take_physical`)."""
        if not columns:
            return None
        groups, missing = self.readers_for(columns)
        if missing or len(groups) != 1:
            return None
        (fi, names), = groups.items()
        if any(c in self._resolutions() for c in columns):
            return None
        df = self._pb.files[fi]
        reader = self._ds.snapshot.open_file(df.path, is_legacy_file(df))
        if not isinstance(reader, SmallFile) or reader.num_rows() != self.physical_rows:
            return None
        self.verified_rows()
        schema = self._ds.snapshot.schema
        idx = []
        for c in columns:
            field = schema.field(c)
            k = reader.field_index(names[c])
            if blob.has_blobs(field) or reader.fields[k].arrow.type != field.type:
                return None
            idx.append(k)
        return reader, idx

    def take_physical(self, columns: list[str], offsets: np.ndarray | None, *,
                      blob_handling: str | None = None, dictionaries: bool = False
                      ) -> pa.Table:
        """Columns at physical ``offsets`` (sorted ascending; None = every row); blob
        columns as ``blob_handling`` says (see :mod:`lancenb.dataset.read.blob`), by default
        their values (what compaction, updates and schema evolution rewrite; scans
        pass the scanner's mode, descriptions by default). ``dictionaries``: string and
        binary columns whose pages are dictionary-encoded may come back as
        ``dictionary<int32, type>`` columns (see
        :meth:`lancenb.file.LanceFileReader.read_columns`)."""
        self.verified_rows()
        schema = self._ds.snapshot.schema
        handling = blob.check_handling(blob_handling or "all_binary")
        # the output fields of a projection: worked out once per dataset, not per fragment
        key = ("take_fields", tuple(columns), handling)
        got = self._ds.snapshot.cache.get(key)
        if got is None:
            fields = [blob.output_field(schema.field(c), handling) for c in columns]
            got = (fields, {c for c in columns if blob.has_blobs(schema.field(c))},
                   pa.schema(fields))
            self._ds.snapshot.cache[key] = got
        fields, blobs, out_schema = got
        groups, missing = self.readers_for(columns)
        n = self.physical_rows if offsets is None else len(offsets)
        arrays: dict[str, pa.ChunkedArray] = {}
        tasks = []
        resolved = self._resolutions()
        for fi, names in groups.items():
            df = self._pb.files[fi]
            reader = self._ds.snapshot.open_file(df.path, is_legacy_file(df))
            if reader.num_rows() != self.physical_rows:
                raise CorruptFileError(f"fragment {self.fragment_id}: data file {df.path!r} has "
                                       f"{reader.num_rows()} rows, the manifest says "
                                       f"{self.physical_rows}")
            for dname, fname in names.items():
                if dname in blobs:  # descriptions, or values from wherever they are
                    arrays[dname] = blob.read_column(self, reader, df.path, fname,
                                                     schema.field(dname), offsets, handling)
                elif dname in resolved:
                    arrays[dname] = self._read_resolved(resolved[dname], offsets)
                else:
                    tasks.append((dname, reader, fname))
        # a data file's columns are read together: the reader plans their pages at
        # once (a wide file's many small pages in a few requests and decodes) and
        # decodes on its pool when the read is large (small reads are fixed costs in
        # Python, which threads only make contend)
        by_file: dict = {}
        for dname, reader, fname in tasks:
            by_file.setdefault(id(reader), (reader, []))[1].append((dname, fname))
        for reader, cols in by_file.values():
            kw = {"dictionaries": True} if dictionaries else {}
            got = reader.read_columns([fname for _, fname in cols], rows=offsets, **kw)
            arrays.update(zip((dname for dname, _ in cols), got))
        for c in missing:  # a column no data file of this fragment has: all null
            arrays[c] = pa.chunked_array([pa.nulls(n, fields[columns.index(c)].type)])
        cols = []
        kept = False  # a column kept as a dictionary: the table's schema says so
        for f in fields:
            a = arrays[f.name]
            if dictionaries and pa.types.is_dictionary(a.type) and \
                    a.type.value_type == f.type and not pa.types.is_dictionary(f.type):
                kept = True
            elif a.type != f.type:
                if not struct_names_match(a.type, f.type):  # (Arrow casts structs by name)
                    raise NotSupportedError(
                        f"fragment {self.fragment_id}: column {f.name!r} is {a.type} in its "
                        f"data file, {f.type} in the schema, and the file's field ids do not "
                        f"say which of its fields are which")
                try:
                    a = a.cast(f.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                    raise NotSupportedError(f"fragment {self.fragment_id}: column {f.name!r} is "
                                            f"{a.type} in its data file, {f.type} in the "
                                            f"schema") from e
            cols.append(a)
        if not fields:
            return pa.table({"n": pa.nulls(n)}).drop_columns(["n"])
        if kept:
            out_schema = pa.schema([f.with_type(a.type) for f, a in zip(fields, cols)],
                                   metadata=out_schema.metadata)
        return pa.Table.from_arrays(cols, schema=out_schema)


    def _read_resolved(self, res, offsets) -> pa.ChunkedArray:
        """A top-level column assembled by field id from its data files (see
        :mod:`lancenb.dataset.read.field_ids`)."""
        cols = []
        for src in res.sources:
            df = self._pb.files[src.file_index]
            reader = self._ds.snapshot.open_file(df.path, is_legacy_file(df))
            if reader.num_rows() != self.physical_rows:
                raise CorruptFileError(f"fragment {self.fragment_id}: data file {df.path!r} has "
                                       f"{reader.num_rows()} rows, the manifest says "
                                       f"{self.physical_rows}")
            cols.append(reader.read_columns([src.name], rows=offsets)[0])
        return pa.chunked_array([conform(cols, res, where=f"fragment {self.fragment_id}")])


# one pool per process, started anew in a forked child (lancenb.io.pools)
_POOL = ThreadPool(lambda: min(16, 2 * (os.cpu_count() or 1)), "lancenb-dataset")
# reads of at most this many rows decode their columns on the calling thread
PARALLEL_MIN_ROWS = 4096


def _pool() -> ThreadPoolExecutor:
    return _POOL.get()


def open_data_file(store, path: str, legacy: bool = False, *, source: str = "manifest"):
    """A reader of one data file: :class:`LanceFileReader` for 2.x files,
    :class:`LegacyFileReader` for 0.1 files (``legacy``, from the manifest's
    DataFile version numbers); both have the same read surface.

    ``path`` (``DataFile.path``) must be one object name under ``data/``
    (:func:`lancenb.io.paths.check_name`; ``source`` names the manifest in the
    error); the file is opened through the store's filesystem object, never by
    re-parsing a URI.
    """
    rel = f"{DATA_DIR}/{check_name(path, what='data file', source=source)}"
    if not legacy:  # a small file of a shape seen before: no metadata parse
        small = open_small(store, rel, store.uri_of(rel))
        if small is not None:
            return small
    io = store.open_reader(rel)
    cls = LegacyFileReader if legacy else LanceFileReader
    return cls(store.uri_of(rel), storage_options=store.storage_options, _io=io)


def _legacy_stats(reader: LegacyFileReader):
    """A 0.1 file's statistics pages as ``(rows_per_page, {field id: [ColumnStats]})``,
    or None when it has none or its batches are not all the same size (but the last)."""
    got = reader.page_statistics(stats_factory=ColumnStats)
    if got is None:
        return None
    starts, stats = got
    sizes = np.diff(starts)
    if len(sizes) == 0 or np.any(sizes[:-1] != sizes[0]) or sizes[-1] > sizes[0]:
        return None
    return int(sizes[0]), stats


def read_file_column(reader: LanceFileReader, name: str, offsets: np.ndarray | None):
    """One top-level column of a data file, whole or at sorted ``offsets``."""
    return reader.read_column(name, rows=offsets)
