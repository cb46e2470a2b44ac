"""Row-level changes: ``update`` and ``merge_insert`` (upsert).

Both are *delete plus insert* in one ``Update`` transaction: the changed rows get
deletion-file entries in their old fragments and their new values are written as
new fragments. With stable row ids the moved rows keep their ids (their
last-updated version changes), as in the reference.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb._proto import table_pb2, transaction_pb2
from lancenb.dataset import blob
from lancenb.dataset.deletion import deletion_path, write_deletions
from lancenb.dataset.transaction import Transaction
from lancenb.dataset.write import cleanup, normalize_input, write_fragments
from lancenb.errors import InvalidInputError, SchemaError
from lancenb.file.version import FileVersion

__all__ = ["update", "MergeInsertBuilder"]


class _Changes:
    """Collects deleted offsets per fragment and new rows, then commits."""

    def __init__(self, ds):
        self.ds = ds
        self.deleted: dict[int, np.ndarray] = {}
        self.new_tables: list[pa.Table] = []
        self.moved: list[tuple] = []  # (table, row ids, created versions)

    def delete(self, frag, phys: np.ndarray) -> None:
        if len(phys):
            self.deleted[frag.fragment_id] = np.asarray(phys, dtype=np.uint32)

    def insert(self, table: pa.Table, row_ids=None, created=None) -> None:
        """New rows; ``row_ids`` (stable row ids) when they are moved rows."""
        if not table.num_rows:
            return
        if self.ds.stable_row_ids and row_ids is not None:
            self.moved.append((table, row_ids, created))
        else:
            self.new_tables.append(table)

    def commit(self) -> None:
        ds = self.ds
        if not self.deleted and not self.new_tables and not self.moved:
            return
        op = transaction_pb2.Transaction.Update()
        txn = Transaction(ds.version, "update", op)
        written: list[str] = []
        try:
            for frag in ds.get_fragments():
                rows = self.deleted.get(frag.fragment_id)
                if rows is None:
                    continue
                allrows = np.union1d(frag.deleted_offsets(), rows).astype(np.uint32)
                if len(allrows) >= frag.physical_rows:
                    op.removed_fragment_ids.append(frag.fragment_id)
                    continue
                df = write_deletions(ds._store, frag.fragment_id, allrows, ds.version)
                written.append(deletion_path(frag.fragment_id, df))
                g = table_pb2.DataFragment()
                g.CopyFrom(frag._pb)
                g.deletion_file.CopyFrom(df)
                op.updated_fragments.append(g)
            schema = blob.input_schema(ds.schema)  # (blob v2 columns: their values)
            version = FileVersion.resolve(ds.data_storage_version)

            def write(tables):
                table = pa.concat_tables([t.select(schema.names).cast(schema) for t in tables])
                return write_fragments(ds._store, iter(table.to_batches()), schema,
                                       list(ds.manifest.fields), version=version,
                                       written=written)
            if self.moved:  # moved rows keep their ids: fragments of their own
                new = write([t for t, _, _ in self.moved])
                _carry_row_ids(new, np.concatenate([i for _, i, _ in self.moved]),
                               np.concatenate([c for _, _, c in self.moved]), ds, written)
                op.new_fragments.extend(new)
            if self.new_tables:  # fresh rows get fresh ids at commit
                op.new_fragments.extend(write(self.new_tables))
            txn.pb.update.CopyFrom(op)
        except BaseException:
            cleanup(ds._store, written)
            raise
        ds._commit(txn, written)


def _carry_row_ids(frags, ids: np.ndarray, created: np.ndarray, ds, written) -> None:
    """Give the fragments of moved rows those rows' ids and versions."""
    from lancenb.dataset.rowids import encode_array_row_ids, encode_version_array, set_row_ids

    pos = 0
    new_version = ds.version + 1
    for f in frags:
        n = f.physical_rows
        set_row_ids(f, encode_array_row_ids(ids[pos:pos + n]), ds._store, written)
        f.inline_created_at_versions = encode_version_array(created[pos:pos + n])
        f.inline_last_updated_at_versions = encode_version_array(
            np.full(n, new_version, np.uint64))
        pos += n


def _eval(table: pa.Table, exprs: dict) -> pa.Table:
    import pyarrow.dataset as pads

    return pads.dataset(table).to_table(columns=exprs)


def update(ds, updates: dict, where=None) -> dict:
    """Set ``updates`` (``{column: SQL expression}``) on the rows matching ``where``
    (all rows when None); returns ``{"num_rows_updated": n}``."""
    from lancenb.dataset.filters import compile_expression

    if not isinstance(updates, dict) or not updates:
        raise InvalidInputError("update takes a non-empty dict {column: SQL expression}")
    schema = ds.schema
    bad = [c for c in updates if c not in schema.names]
    if bad:
        raise InvalidInputError(f"update: no column(s) {bad} in the dataset")
    exprs = {}
    for c in schema.names:
        if c in updates:
            e, _ = compile_expression(str(updates[c]), schema)
            exprs[c] = e.cast(schema.field(c).type)
        else:
            exprs[c] = pc.field(c)
    sc = ds.scanner(columns=[], filter=where if where is not None else "TRUE")
    ch = _Changes(ds)
    total = 0
    for frag in ds.get_fragments():
        live = frag.live_offsets()
        if frag.count_rows() == 0:
            continue
        hit = sc._expr_mask(frag.take_physical(sc._filter_cols, live))
        if not len(hit):
            continue
        phys = live[hit] if live is not None else hit
        old = frag.take_physical(schema.names, phys)
        try:
            new = _eval(old, exprs)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise InvalidInputError(f"update: evaluating {updates} failed: {e}") from e
        ch.delete(frag, phys)
        ids = created = None
        if ds.stable_row_ids:
            ids = frag.row_ids()[phys]
            created = frag.row_versions("created")[phys]
        ch.insert(new, ids, created)
        total += len(phys)
    ch.commit()
    return {"num_rows_updated": total}


class MergeInsertBuilder:
    """``ds.merge_insert(on)`` builder (pylance's API): choose what happens to
    matched target rows, unmatched source rows, and target rows no source row
    matches, then ``execute(data)``."""

    def __init__(self, ds, on):
        self._ds = ds
        self._on = [on] if isinstance(on, str) else list(on)
        missing = [c for c in self._on if c not in ds.schema.names]
        if not self._on or missing:
            raise InvalidInputError(f"merge_insert: key column(s) {missing or self._on} not "
                                    f"in the dataset")
        self._update = False
        self._update_cond = None
        self._insert = False
        self._delete_unmatched = False
        self._delete_cond = None

    def when_matched_update_all(self, condition: str | None = None) -> "MergeInsertBuilder":
        self._update, self._update_cond = True, condition
        return self

    def when_not_matched_insert_all(self) -> "MergeInsertBuilder":
        self._insert = True
        return self

    def when_not_matched_by_source_delete(self, expr: str | None = None) -> "MergeInsertBuilder":
        self._delete_unmatched, self._delete_cond = True, expr
        return self

    def execute(self, data, *, schema=None) -> dict:
        ds = self._ds
        tschema = ds.schema
        src_schema, batches = normalize_input(data, schema)
        src = pa.Table.from_batches(list(batches), schema=src_schema)
        if set(src.column_names) != set(tschema.names):
            raise SchemaError(f"merge_insert: the source has columns {src.column_names}, the "
                              f"dataset {tschema.names}")
        try:
            src = src.select(tschema.names).cast(tschema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SchemaError(f"merge_insert: the source does not match the schema: {e}") from e
        keys = src.select(self._on)
        if keys.group_by(self._on).aggregate([]).num_rows != keys.num_rows:
            raise InvalidInputError(f"merge_insert: the source has duplicate keys on "
                                    f"{self._on}; each target row may match one source row")
        src = src.append_column("__lancenb_src", pa.array(np.arange(src.num_rows)))
        cond = _compile(self._update_cond, tschema)
        dcond = _compile(self._delete_cond, tschema)
        ch = _Changes(ds)
        matched_src = np.zeros(src.num_rows, dtype=bool)
        n_upd = n_del = 0
        for frag in ds.get_fragments():
            live = frag.live_offsets()
            if frag.count_rows() == 0:
                continue
            offs = live if live is not None else np.arange(frag.physical_rows, dtype=np.int64)
            tkeys = frag.take_physical(self._on, live).append_column(
                "__lancenb_tgt", pa.array(np.arange(len(offs))))
            j = tkeys.join(src.select(self._on + ["__lancenb_src"]), self._on,
                           join_type="inner")
            t_idx = j.column("__lancenb_tgt").to_numpy()
            s_idx = j.column("__lancenb_src").to_numpy()
            matched_src[s_idx] = True
            gone = []
            if self._update and len(t_idx):
                if cond is not None:
                    target_rows = frag.take_physical(tschema.names, offs[np.sort(t_idx)])
                    ok = _mask(target_rows, cond)
                    keep = np.sort(t_idx)[ok]
                    s_idx = s_idx[np.isin(t_idx, keep)]
                    t_idx = t_idx[np.isin(t_idx, keep)]
                gone.append(offs[t_idx])
                rows = src.take(pa.array(s_idx)).drop_columns(["__lancenb_src"])
                ids = created = None
                if ds.stable_row_ids:
                    ids = frag.row_ids()[offs[t_idx]]
                    created = frag.row_versions("created")[offs[t_idx]]
                ch.insert(rows, ids, created)
                n_upd += len(t_idx)
            if self._delete_unmatched:
                unmatched = np.setdiff1d(np.arange(len(offs)), j.column("__lancenb_tgt")
                                         .to_numpy())
                if dcond is not None and len(unmatched):
                    rows = frag.take_physical(tschema.names, offs[unmatched])
                    unmatched = unmatched[_mask(rows, dcond)]
                gone.append(offs[unmatched])
                n_del += len(unmatched)
            if gone:
                ch.delete(frag, np.unique(np.concatenate(gone)))
        n_ins = 0
        if self._insert:
            new = src.filter(pa.array(~matched_src)).drop_columns(["__lancenb_src"])
            ch.insert(new)
            n_ins = new.num_rows
        ch.commit()
        return {"num_inserted_rows": n_ins, "num_updated_rows": n_upd,
                "num_deleted_rows": n_del}


def _compile(sql, schema):
    if sql is None:
        return None
    from lancenb.dataset.filters import to_expression

    return to_expression(sql, schema)


def _mask(table: pa.Table, expr) -> np.ndarray:
    pos = pa.array(np.arange(table.num_rows, dtype=np.int64))
    out = table.append_column("__p", pos).filter(expr)
    m = np.zeros(table.num_rows, dtype=bool)
    m[out.column("__p").to_numpy()] = True
    return m
