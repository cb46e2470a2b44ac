"""More of pylance's ``LanceFragment`` API, as a mixin of :class:`LanceFragment`:
per-fragment schema evolution that writes files without committing (the worker side
of a distributed ``add_columns``/``merge``/update), ``validate`` and the
``pyarrow.dataset.Fragment`` properties.

Each writer returns the new :class:`~lancenb.fragment.FragmentMetadata` (and the
schema); the driver commits them with ``LanceOperation.Merge`` (new columns) or
``LanceOperation.Update`` (replaced columns) through :meth:`LanceDataset.commit`.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb._proto import table_pb2
from lancenb.dataset.descriptions import LanceSchema
from lancenb.dataset.operations import schema_fields
from lancenb.dataset.write import udf
from lancenb.dataset.write.evolution import (
    _check_new_names,
    _file_version,
    _new_fields,
    _next_field_id,
)
from lancenb.dataset.write.insert import cleanup, leaf_ids, normalize_input, write_data_files
from lancenb.errors import CorruptFileError, InvalidInputError
from lancenb.expr import engine as engine
from lancenb.file.version import FileVersion
from lancenb.table.deletion import deletion_path
from lancenb.table.fragments import FragmentMetadata, is_legacy_file

__all__ = ["FragmentColumnMethods", "FragmentSession"]

DEFAULT_BATCH_ROWS = 8192
ROW_ID = "_rowid"
_META_KEYS = (ROW_ID, "_rowaddr")  # join keys a fragment computes


def _batches(table: pa.Table, step: int):
    for lo in range(0, table.num_rows, step):
        yield from table.slice(lo, step).to_batches()


class FragmentColumnMethods:
    """Mixin of :class:`lancenb.LanceFragment` (see the module docstring)."""

    @property
    def physical_schema(self) -> pa.Schema:
        """The schema of the columns this fragment's data files hold (in dataset
        order; a column added later without data in this fragment is left out)."""
        have = {fid for df in self._pb.files for fid in df.fields}
        tops = {f.name for f in self._ds.manifest.fields
                if f.parent_id == -1 and f.id in have}
        return pa.schema([f for f in self._ds.schema if f.name in tops],
                         self._ds.schema.metadata)

    @property
    def partition_expression(self):
        """Always true: Lance datasets are not partitioned (``pyarrow.dataset``'s
        property, for engines that read it)."""
        return pc.scalar(True)

    def validate(self) -> None:
        """Check this fragment against its files: each data file's row count is
        ``physical_rows``, the deletion file exists and stays within the rows.
        Raises ``CorruptFileError``."""
        for df in self._pb.files:
            n = self._ds.snapshot.open_file(df.path, is_legacy_file(df)).num_rows()
            if n != self.physical_rows:
                raise CorruptFileError(f"fragment {self.fragment_id}: data file {df.path!r} "
                                       f"holds {n} rows, the fragment says "
                                       f"{self.physical_rows}")
        if self._pb.HasField("deletion_file"):
            rel = deletion_path(self.fragment_id, self._pb.deletion_file)
            if not self._ds.snapshot.store.exists(rel):
                raise CorruptFileError(f"fragment {self.fragment_id}: deletion file {rel!r} "
                                       f"is missing")
            dead = self.deleted_offsets()
            if len(dead) and int(dead.max()) >= self.physical_rows:
                raise CorruptFileError(f"fragment {self.fragment_id}: deletes row "
                                       f"{int(dead.max())} of {self.physical_rows}")

    @staticmethod
    def create_from_file(filename: str, dataset, fragment_id: int):
        """A fragment of an existing data file ``filename`` (a path under the
        dataset's ``data/``) whose columns are the dataset's; nothing is written or
        committed (commit with ``LanceOperation.Append``). Its columns are matched
        to the dataset's fields by name."""
        reader = dataset.snapshot.open_file(filename)
        version = FileVersion.resolve(dataset.data_storage_version)
        fields = schema_fields(reader.schema, list(dataset.manifest.fields))
        known = {f.id for f in dataset.manifest.fields}
        new = [f.name for f in fields if f.id not in known and f.parent_id == -1]
        if new:
            raise InvalidInputError(f"create_from_file: {filename!r} has columns {new} the "
                                    f"dataset does not have (or of another type)")
        ids = leaf_ids(fields, version)
        major, minor = reader.version.data_file
        df = table_pb2.DataFile(path=filename, fields=ids, column_indices=range(len(ids)),
                                file_major_version=major, file_minor_version=minor,
                                file_size_bytes=dataset.snapshot.store.size(f"data/{filename}"))
        pb = table_pb2.DataFragment(id=int(fragment_id), physical_rows=reader.num_rows())
        pb.files.append(df)
        return FragmentMetadata.from_pb(pb)

    def open_session(self, columns=None, with_row_address: bool | None = None):
        """A :class:`FragmentSession` over ``columns`` of this fragment: repeated
        :meth:`FragmentSession.take` calls without opening the fragment again."""
        return FragmentSession(self, columns, bool(with_row_address))

    def _key_table(self, left_on: str, offs: np.ndarray) -> pa.Table:
        """The join key of the physical rows at ``offs``: a column, or ``_rowid``
        (the stable row ids, else the row addresses, as pylance keys them)."""
        if left_on not in _META_KEYS:
            return self.take_physical([left_on], offs)
        if left_on == ROW_ID and self._ds.stable_row_ids:
            ids = self.row_ids()
        else:
            ids = self.row_addresses(offs)
        return pa.table({left_on: pa.array(np.asarray(ids, dtype=np.uint64))})

    # -- writers (no commit) ----------------------------------------------------------
    def _write_file(self, table: pa.Table, fields_pb, step: int):
        """One new data file of ``table`` (one row per physical row) with field ids
        ``fields_pb``; returns its DataFile protobuf."""
        ds = self._ds
        written: list[str] = []
        try:
            out = write_data_files(ds.snapshot.store, _batches(table, step), table.schema,
                                   list(fields_pb), version=_file_version(ds),
                                   max_rows_per_file=2**62, written=written)
        except BaseException:
            cleanup(ds.snapshot.store, written)
            raise
        return out[0].files[0]

    def _with_file(self, df, replace_ids=()):
        """This fragment's metadata plus data file ``df``; fields in ``replace_ids``
        move to it: a file left with none of its fields is dropped, otherwise their
        ids there become -2 (a tombstone, as pylance writes them)."""
        pb = type(self._pb)()
        pb.CopyFrom(self._pb)
        if replace_ids:
            kept = []
            for old in pb.files:
                if all(f in replace_ids or f == -2 for f in old.fields):
                    continue
                ids = [-2 if f in replace_ids else f for f in old.fields]
                del old.fields[:]
                old.fields.extend(ids)
                kept.append(old)
            del pb.files[:]
            pb.files.extend(kept)
        pb.files.append(df)
        return FragmentMetadata.from_pb(pb)

    def merge_columns(self, value_func, columns=None, batch_size=None, reader_schema=None):
        """Compute new columns for this fragment's rows and write them to a new data
        file (nothing committed). ``value_func``: ``{name: SQL expression}``, or a
        function / :class:`~lancenb.BatchUDF` from a RecordBatch of ``columns`` to a
        RecordBatch of new columns (run on the live rows in batches of ``batch_size``,
        see :mod:`lancenb.dataset.write.udf`), or data with one value per live row (a
        reader, an iterator of batches with ``reader_schema`` ...).

        Returns ``(FragmentMetadata, LanceSchema)``: commit every fragment's metadata
        with ``LanceOperation.Merge(fragments, schema)``.
        """
        from lancenb.expr.filters import check_expression  # lazy: it loads sqlglot

        ds = self._ds
        step = int(batch_size or DEFAULT_BATCH_ROWS)
        offs = np.arange(self.physical_rows, dtype=np.int64)
        if isinstance(value_func, dict):
            if not value_func:
                raise InvalidInputError("merge_columns got no columns to add")
            out_fields, needed = [], set()
            for name, sql in value_func.items():
                typ, used = check_expression(sql, ds.snapshot.schema,
                                             what=f"merge_columns {name!r}")
                out_fields.append(pa.field(name, typ))
                needed.update(used)
            new_schema = pa.schema(out_fields)
            t = self.take_physical(sorted(needed), offs)
            new = engine.evaluate(t, value_func, what="merge_columns").cast(new_schema)
        elif callable(value_func):
            if getattr(value_func, "checkpoint_file", None) is not None:
                raise InvalidInputError(
                    "A checkpoint file cannot be used when applying a UDF with "
                    "LanceFragment.merge_columns: checkpoint fragment-level work yourself")
            cols = list(columns) if columns is not None else list(ds.snapshot.schema.names)
            out_schema = udf.output_schema(value_func, [self], cols, what="merge_columns",
                                           plain=not hasattr(value_func, "output_schema"))
            new = pa.Table.from_batches(list(udf.udf_batches(
                self, value_func, cols, out_schema, step, what="merge_columns")), out_schema)
        else:
            rs, batches = normalize_input(value_func, reader_schema, what="merge_columns")
            feeder = udf.RowFeeder(rs, batches)
            new = pa.Table.from_batches(list(feeder.batches(self, step)), rs)
            feeder.finish()
        _check_new_names(ds.snapshot.schema, new.schema.names)
        fields = _new_fields(new.schema, _next_field_id(ds))
        df = self._write_file(new, fields, step)
        all_fields = list(ds.manifest.fields) + fields
        schema = pa.schema(list(ds.snapshot.schema) + list(new.schema), ds.snapshot.schema.metadata)
        return self._with_file(df), LanceSchema(all_fields, schema)

    def merge(self, data_obj, left_on: str, right_on: str | None = None, schema=None):
        """Join ``data_obj``'s other columns onto this fragment's rows by key (rows
        without a match get nulls) and write them to a new data file (nothing
        committed). Returns ``(FragmentMetadata, LanceSchema)`` for
        ``LanceOperation.Merge``."""
        ds = self._ds
        right_on = right_on or left_on
        src_schema, batches = normalize_input(data_obj, schema)
        src = pa.Table.from_batches(list(batches), schema=src_schema)
        if ((left_on not in ds.snapshot.schema.names and left_on not in _META_KEYS)
                or right_on not in src.column_names):
            raise InvalidInputError(f"merge: key {left_on!r} must be a dataset column and "
                                    f"{right_on!r} a column of the data")
        extra = [c for c in src.column_names if c != right_on]
        _check_new_names(ds.snapshot.schema, extra)
        keys = self._key_table(left_on, np.arange(self.physical_rows, dtype=np.int64))
        if left_on in _META_KEYS:
            src = src.set_column(src.column_names.index(right_on), right_on,
                                 src.column(right_on).cast(pa.uint64()))
        keys = keys.append_column("__lancenb_pos", pa.array(np.arange(keys.num_rows)))
        joined = keys.join(src.rename_columns([left_on if c == right_on else c
                                               for c in src.column_names]),
                           left_on, join_type="left outer").sort_by("__lancenb_pos")
        new = joined.select(extra)
        fields = _new_fields(new.schema, _next_field_id(ds))
        df = self._write_file(new, fields, DEFAULT_BATCH_ROWS)
        out = pa.schema(list(ds.snapshot.schema) + list(new.schema), ds.snapshot.schema.metadata)
        return self._with_file(df), LanceSchema(list(ds.manifest.fields) + fields, out)

    def update_columns(self, data_obj, left_on: str = ROW_ID, right_on: str | None = None,
                       schema=None, *, with_offsets: bool = False):
        """Replace the values of existing columns for the rows ``data_obj`` names
        (by ``_rowid`` or a key column), writing the updated columns to a new data
        file (nothing committed). Returns ``(FragmentMetadata, [updated field ids])``
        for ``LanceOperation.Update(updated_fragments=..., fields_modified=...)``."""
        ds = self._ds
        right_on = right_on or left_on
        src_schema, batches = normalize_input(data_obj, schema)
        src = pa.Table.from_batches(list(batches), schema=src_schema)
        cols = [c for c in src.column_names if c != right_on]
        for c in cols:  # pylance's messages
            if c in ("_rowid", "_rowaddr"):
                raise InvalidInputError(f"Column {c} is a reserved metadata column and "
                                        f"cannot be updated")
            if c not in ds.snapshot.schema.names:
                raise InvalidInputError(f"Column {c} in right side fragment does not "
                                        f"exist in left side fragment")
        if right_on not in src.column_names or not cols:
            raise InvalidInputError(f"update_columns: the data needs the key {right_on!r} and "
                                    f"dataset columns to update")
        offs = np.arange(self.physical_rows, dtype=np.int64)
        old = self.take_physical(cols, offs)
        keys = self._key_table(left_on, offs)
        if left_on in _META_KEYS:
            src = src.set_column(src.column_names.index(right_on), right_on,
                                 src.column(right_on).cast(pa.uint64()))
        keys = keys.append_column("__lancenb_pos", pa.array(np.arange(self.physical_rows)))
        src = src.rename_columns([left_on if c == right_on else f"__lancenb_new_{c}"
                                  for c in src.column_names])
        src = src.append_column("__lancenb_hit", pa.array(np.ones(src.num_rows, bool)))
        j = keys.join(src, left_on, join_type="left outer").sort_by("__lancenb_pos")
        hit = pc.fill_null(j.column("__lancenb_hit"), False)
        new = pa.table([pc.if_else(hit, j.column(f"__lancenb_new_{c}").cast(
            ds.snapshot.schema.field(c).type), old.column(c)) for c in cols],
            schema=pa.schema([ds.snapshot.schema.field(c) for c in cols]))
        by_name = {f.name: f for f in ds.manifest.fields if f.parent_id == -1}
        ids = [by_name[c].id for c in cols]
        sub = [f for f in ds.manifest.fields if _root_id(ds.manifest.fields, f) in ids]
        df = self._write_file(new, sub, DEFAULT_BATCH_ROWS)
        meta = self._with_file(df, replace_ids=set(f.id for f in sub))
        return (meta, ids, b"") if with_offsets else (meta, ids)


def _root_id(fields, f) -> int:
    by_id = {g.id: g for g in fields}
    while f.parent_id in by_id:
        f = by_id[f.parent_id]
    return f.id


class FragmentSession:
    """pylance's ``FragmentSession``: ``take`` rows of one fragment repeatedly over
    the same columns (with their ``_rowaddr`` if asked). Indices count live rows, as
    :meth:`LanceFragment.take`."""

    def __init__(self, fragment, columns, with_row_address: bool):
        self._fragment = fragment
        self._columns = columns
        self._with_row_address = with_row_address

    def take(self, indices) -> pa.Table:
        frag = self._fragment
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        t = frag.take(idx, columns=self._columns)
        if self._with_row_address:
            live = frag.live_offsets()
            phys = live[idx] if live is not None else idx
            addr = (np.uint64(frag.fragment_id) << np.uint64(32)) | phys.astype(np.uint64)
            t = t.append_column(pa.field("_rowaddr", pa.uint64()), pa.array(addr))
        return t
