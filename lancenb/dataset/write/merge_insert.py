"""``LanceDataset.merge_insert`` (upsert): source rows matched to target rows by key
columns; matched rows are updated (or deleted), unmatched source rows inserted,
unmatched target rows optionally deleted: a delete plus insert in one ``Update``
transaction."""

from __future__ import annotations

import datetime
import re
import time

import numpy as np
import pyarrow as pa

from lancenb._proto import transaction_pb2
from lancenb.dataset.operations import transaction_of
from lancenb.dataset.read import blob
from lancenb.dataset.write import merge_plan
from lancenb.dataset.write.changes import RowChanges
from lancenb.dataset.write.insert import normalize_input
from lancenb.dataset.write.merge_keys import inserted_keys_filter
from lancenb.errors import (
    InvalidInputError,
    MergeInsertError,
    NotSupportedError,
    RetryableCommitConflictError,
    SchemaError,
)
from lancenb.file import jsonb
from lancenb.file.version import FileVersion
from lancenb.table.transaction import Op, Transaction

__all__ = ["MergeInsertBuilder"]


class MergeInsertBuilder:
    """``ds.merge_insert(on)`` builder (pylance's API): choose what happens to
    matched target rows, unmatched source rows, and target rows no source row
    matches, then ``execute(data)``.

    Conditions are SQL over the joined row: ``source.col`` and ``target.col`` name
    the two sides (a bare name is the target's column). The source may hold a
    subset of the dataset's columns (the keys included): matched rows keep their
    other values, inserted rows get nulls there, as in pylance.

    Examples
    --------
    >>> (ds.merge_insert("id")  # doctest: +SKIP
    ...    .when_matched_update_all("target.ts < source.ts")
    ...    .when_not_matched_insert_all()
    ...    .when_not_matched_by_source_delete("ts < '2020-01-01'")
    ...    .execute(new_rows))
    {'num_inserted_rows': 3, 'num_updated_rows': 2, 'num_deleted_rows': 1}
    """

    def __init__(self, ds, on):
        self._ds = ds
        self._on = [on] if isinstance(on, str) else list(on)
        missing = [c for c in self._on if c not in ds.snapshot.schema.names]
        if not self._on or missing:
            raise InvalidInputError(f"merge_insert: key column(s) {missing or self._on} not "
                                    f"in the dataset")
        self._matched = None  # None (keep), "update", "delete" or "fail"
        self._update_cond = None
        self._insert = False
        self._delete_unmatched = False
        self._delete_cond = None
        self._file_version = None
        self._retries = DEFAULT_CONFLICT_RETRIES
        self._bases: list[str] = []
        self._all_bases: bool | None = None
        self._timeout = DEFAULT_RETRY_TIMEOUT
        self._use_index = True

    def when_matched_update_all(self, condition: str | None = None) -> "MergeInsertBuilder":
        """Replace matched target rows by their source rows (where ``condition``)."""
        self._matched, self._update_cond = "update", condition
        return self

    def when_matched_delete(self) -> "MergeInsertBuilder":
        """Delete the target rows that a source row matches."""
        self._matched, self._update_cond = "delete", None
        return self

    def when_matched_fail(self) -> "MergeInsertBuilder":
        """Refuse the whole operation (nothing committed) if any source row matches."""
        self._matched, self._update_cond = "fail", None
        return self

    def when_not_matched_insert_all(self) -> "MergeInsertBuilder":
        """Insert the source rows that match no target row."""
        self._insert = True
        return self

    def when_not_matched_by_source_delete(self, expr: str | None = None) -> "MergeInsertBuilder":
        """Delete the target rows no source row matches (those where ``expr``)."""
        self._delete_unmatched, self._delete_cond = True, expr
        return self

    def conflict_retries(self, max_retries: int) -> "MergeInsertBuilder":
        """Run the merge again, on the newest version, up to ``max_retries`` times (10)
        when a concurrent commit makes it a retryable conflict (for example another
        merge that inserted one of its keys, when the key is the table's unenforced
        primary key); 0 fails at the first conflict."""
        if int(max_retries) < 0:
            raise InvalidInputError(f"conflict_retries must be >= 0, not {max_retries!r}")
        self._retries = int(max_retries)
        return self

    def retry_timeout(self, timeout) -> "MergeInsertBuilder":
        """Stop retrying after ``timeout`` (a ``datetime.timedelta`` or seconds; 30 s)."""
        seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) \
            else float(timeout)
        if seconds < 0:
            raise InvalidInputError(f"retry_timeout must be >= 0, not {timeout!r}")
        self._timeout = seconds
        return self

    def data_storage_version(self, version: str) -> "MergeInsertBuilder":
        """Write this operation's new data files at file ``version`` (``"2.0"``,
        ``"2.1"``, ``"2.2"``, ``"stable"``, ``"next"``). Only the dataset's own version
        is accepted: pylance 14 marks a dataset of mixed file versions with a reader
        feature flag (256) whose rules lancenb does not implement."""
        label = FileVersion.resolve(version).label
        if label != FileVersion.resolve(self._ds.data_storage_version).label:
            raise NotSupportedError(f"merge_insert: data_storage_version({version!r}) on a "
                                    f"dataset of {self._ds.data_storage_version} files would "
                                    f"mix file versions, which lancenb does not write")
        self._file_version = label
        return self

    def target_bases(self, bases) -> "MergeInsertBuilder":
        """Write the merge's new data files to these registered bases (names or paths;
        the dataset's URI names its own storage), one file per base in turn. Deletion
        files stay in the dataset's own storage."""
        if self._all_bases is not None:
            raise InvalidInputError("target_bases and target_all_bases cannot be combined")
        self._bases = [str(b) for b in bases]
        return self

    def target_all_bases(self, include_primary: bool = True) -> "MergeInsertBuilder":
        """Write the merge's new data files to every base registered when it runs, in
        turn, the dataset's own storage first unless ``include_primary`` is False."""
        if self._bases:
            raise InvalidInputError("target_bases and target_all_bases cannot be combined")
        self._all_bases = bool(include_primary)
        return self

    def use_index(self, use_index: bool) -> "MergeInsertBuilder":
        """Whether pylance may join through a scalar index on the key (lancenb always
        joins without one; as pylance's, :meth:`explain_plan` refuses that path)."""
        self._use_index = bool(use_index)
        return self

    @property
    def dataset(self):
        """The dataset (version) this merge reads and commits onto."""
        return self._ds

    @property
    def clauses(self) -> merge_plan.MergeClauses:
        """What this builder was told so far (keys, matched/unmatched behaviour)."""
        return merge_plan.MergeClauses(tuple(self._on), self._matched, self._update_cond,
                                       self._insert, self._delete_unmatched, self._delete_cond)

    def explain_plan(self, schema: pa.Schema | None = None, verbose: bool = False) -> str:
        """The plan :meth:`execute` would run for a source of ``schema`` (the dataset's
        schema when None), as text; writes nothing. Layout and the differences from
        pylance's text: :mod:`lancenb.dataset.write.merge_plan`.

        Examples
        --------
        >>> print(ds.merge_insert("id").when_not_matched_insert_all()  # doctest: +SKIP
        ...       .explain_plan().splitlines()[0])
        MergeInsert: on=[id], when_matched=DoNothing, when_not_matched=InsertAll, ...
        """
        if self._use_index and len(self._on) == 1 and any(
                e["fields"] == self._on and e["type"] in ("BTree", "Bitmap")
                for e in self._ds.list_indices()):  # (pylance's scalar-index join path)
            raise NotSupportedError("This merge insert configuration does not support "
                                    "explain_plan: either the source schema is not one the "
                                    "plan path accepts, or the join takes the scalar-index "
                                    "execution path (use_index(False) to see the plan)")
        return merge_plan.explain(self, schema, verbose)

    def analyze_plan(self, data_obj, *, schema: pa.Schema | None = None) -> str:
        """Run the merge on ``data_obj`` without committing it and return its plan with
        metrics (``num_inserted_rows``, ``num_updated_rows``, ``num_deleted_rows``,
        ``num_files_written``, ``bytes_written``, rows read). The dataset keeps its
        version; the data files written stay unreferenced, as with pylance."""
        return merge_plan.analyze(self, data_obj, schema)

    def _source(self, data, schema) -> pa.Table:
        tschema = self._ds.snapshot.schema
        src_schema, batches = normalize_input(data, schema, what="merge_insert")
        src = pa.Table.from_batches(list(batches), schema=src_schema)
        extra = [c for c in src.column_names if c not in tschema.names]
        keys = [c for c in self._on if c not in src.column_names]
        if extra or keys:
            raise SchemaError(f"merge_insert: the source has columns {src.column_names}; they "
                              f"must be the dataset's {tschema.names} or a subset holding the "
                              f"key(s) {self._on}")
        names = [c for c in tschema.names if c in src.column_names]
        for c in names:  # (a cast would keep text or bytes as they are: not JSONB)
            if jsonb.holds(tschema.field(c), jsonb.LANCE_JSON) and \
                    src.schema.field(c).type != tschema.field(c).type:
                raise SchemaError(f"merge_insert: column {c!r} is JSON in the dataset; the "
                                  f"source's is {src.schema.field(c).type}, not JSON "
                                  f"(pa.json_())")
        try:
            src = src.select(names).cast(pa.schema([tschema.field(c) for c in names]))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SchemaError(f"merge_insert: the source does not match the schema: {e}") from e
        keys = src.select(self._on)
        if keys.group_by(self._on).aggregate([]).num_rows != keys.num_rows:
            raise MergeInsertError(f"merge_insert: the source has duplicate keys on "
                                   f"{self._on}; each target row may match one source row")
        return src

    def execute(self, data, *, schema=None) -> dict:
        """Run the merge and commit one version; returns pylance's counts
        ``{"num_inserted_rows", "num_updated_rows", "num_deleted_rows"}``."""
        return self._merge(data, schema, commit=True)

    def execute_batches(self, new_data) -> dict:
        """:meth:`execute` (pylance's name for fully materialised data)."""
        return self._merge(new_data, None, commit=True)

    def execute_uncommitted(self, data_obj, *, schema=None):
        """Run the merge and write its files without committing: returns
        ``(Transaction, counts)``; commit with ``LanceDataset.commit(uri, transaction)``.
        """
        return self._merge(data_obj, schema, commit=False)

    def execute_uncommitted_batches(self, new_data):
        """:meth:`execute_uncommitted` for fully materialised data."""
        return self._merge(new_data, None, commit=False)

    def _merge(self, data, schema, *, commit: bool):
        src = self._source(data, schema)
        if self._matched is None and not self._insert and not self._delete_unmatched:
            raise InvalidInputError(
                "merge_insert: the merge insert job is not configured to change the data in "
                "any way: call when_matched_update_all(), when_matched_delete(), "
                "when_not_matched_insert_all() or when_not_matched_by_source_delete() "
                "before execute()")
        if not commit:
            return self._merge_once(src, commit=False)
        deadline = time.monotonic() + self._timeout
        attempt = 0
        while True:
            try:
                return self._merge_once(src, commit=True)
            except RetryableCommitConflictError:
                attempt += 1
                if attempt > self._retries or time.monotonic() > deadline:
                    raise
                # a concurrent commit changed what the merge finds: run it again on the
                # newest version (the source rows are already read)
                self._ds.checkout_latest()

    def _merge_once(self, src: pa.Table, *, commit: bool):
        ds = self._ds
        tschema = ds.snapshot.schema
        src_cols = src.column_names
        src = src.append_column("__lancenb_src", pa.array(np.arange(src.num_rows)))
        ch = RowChanges(ds)
        ch.file_version = self._file_version
        ch.target_bases, ch.target_all_bases = self._bases, self._all_bases
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
            t_all = j.column("__lancenb_tgt").to_numpy()
            s_idx = j.column("__lancenb_src").to_numpy()
            order = np.argsort(t_all, kind="stable")
            t_idx, s_idx = t_all[order], s_idx[order]
            matched_src[s_idx] = True
            gone = []
            if self._matched == "fail" and len(t_idx):
                key = src.select(self._on).slice(int(s_idx[0]), 1).to_pylist()[0]
                raise MergeInsertError(f"merge_insert: when_matched_fail and a source row "
                                       f"matches a target row (key {key})")
            if self._matched in ("update", "delete") and len(t_idx):
                target_rows = None
                if self._update_cond is not None:
                    target_rows = frag.take_physical(tschema.names, offs[t_idx])
                    joined = _joined(target_rows, src.take(pa.array(s_idx)), src_cols)
                    ok = _where(joined, _qualify(self._update_cond, tschema.names, src_cols),
                                "when_matched_update_all condition")
                    t_idx, s_idx = t_idx[ok], s_idx[ok]
                    target_rows = target_rows.filter(pa.array(ok))
                gone.append(offs[t_idx])
                if self._matched == "delete":
                    n_del += len(t_idx)
                else:
                    rows = src.take(pa.array(s_idx)).drop_columns(["__lancenb_src"])
                    if len(src_cols) < len(tschema.names):  # partial: keep the others
                        if target_rows is None:
                            target_rows = frag.take_physical(tschema.names, offs[t_idx])
                        rows = pa.table([rows.column(c) if c in src_cols
                                         else target_rows.column(c) for c in tschema.names],
                                        schema=blob.input_schema(tschema))
                    ids = created = None
                    if ds.stable_row_ids:
                        ids = frag.row_ids()[offs[t_idx]]
                        created = frag.row_versions("created")[offs[t_idx]]
                    ch.insert(rows, ids, created)
                    n_upd += len(t_idx)
            if self._delete_unmatched:
                unmatched = np.setdiff1d(np.arange(len(offs)), t_all)
                if self._delete_cond is not None and len(unmatched):
                    rows = frag.take_physical(tschema.names, offs[unmatched])
                    unmatched = unmatched[_where(rows, _qualify(
                        self._delete_cond, tschema.names, [], side="target"),
                        "when_not_matched_by_source_delete condition")]
                gone.append(offs[unmatched])
                n_del += len(unmatched)
            if gone:
                ch.delete(frag, np.unique(np.concatenate(gone)))
        n_ins = 0
        if self._insert:
            new = src.filter(pa.array(~matched_src)).drop_columns(["__lancenb_src"])
            if len(src_cols) < len(tschema.names):  # nulls in the columns not given
                full = blob.input_schema(tschema)
                new = pa.table([new.column(c) if c in src_cols
                                else pa.nulls(new.num_rows, full.field(c).type)
                                for c in tschema.names], schema=full)
            ch.insert(new)
            n_ins = new.num_rows
            # on the unenforced primary key: record the inserted keys (merge_keys.py)
            ch.inserted_keys = inserted_keys_filter(new, self._on, ds.snapshot.top_fields)
        counts = {"num_inserted_rows": n_ins, "num_updated_rows": n_upd,
                  "num_deleted_rows": n_del}
        if commit:
            ch.commit()
            return counts
        txn = ch.commit(uncommitted=True)
        if txn is None:  # nothing changed: an empty update, as pylance returns
            txn = Transaction(ds.version, Op.UPDATE, transaction_pb2.Transaction.Update())
        return transaction_of(txn.pb), counts


DEFAULT_CONFLICT_RETRIES = 10  # pylance's defaults
DEFAULT_RETRY_TIMEOUT = 30.0
_SRC = "__lancenb_source_{}"
_QUALIFIED = re.compile(r"""'(?:[^']|'')*'"""  # a string literal, left alone
                        r"""|\b(source|target)\s*\.\s*(?:"([^"]+)"|`([^`]+)`|(\w+))""",
                        re.IGNORECASE)


def _qualify(sql: str, target: list, source: list, side: str = "both") -> str:
    """``sql`` with ``source.col``/``target.col`` replaced by the names the joined
    table holds them under (target columns keep their names; string literals are
    left alone)."""
    def sub(m):
        if m.group(1) is None:
            return m.group(0)  # a string literal
        which, col = m.group(1).lower(), m.group(2) or m.group(3) or m.group(4)
        if which == "source" and side == "target":
            raise InvalidInputError(f"merge_insert: {m.group(0)!r}: this condition sees only "
                                    f"the target row")
        names = source if which == "source" else target
        if col not in names:
            raise InvalidInputError(f"merge_insert: {m.group(0)!r}: no column {col!r} in the "
                                    f"{which} (it has {names})")
        name = _SRC.format(source.index(col)) if which == "source" else col
        # pylance's dialect: backticks quote identifiers ("..." is a string literal)
        return name if name.isidentifier() else "`" + name.replace("`", "``") + "`"
    return _QUALIFIED.sub(sub, sql)


def _joined(target_rows: pa.Table, source_rows: pa.Table, src_cols: list) -> pa.Table:
    """Target columns under their names, source columns as ``__lancenb_source_{i}``."""
    out = target_rows
    for i, c in enumerate(src_cols):
        out = out.append_column(_SRC.format(i), source_rows.column(c))
    return out


def _where(table: pa.Table, sql: str, what: str) -> np.ndarray:
    """Boolean mask of the rows of ``table`` where the SQL condition is true."""
    from lancenb.expr.filters import compile_filter  # lazy: it loads sqlglot

    f = compile_filter(sql, table.schema)
    if hasattr(f, "positions"):
        pos = f.positions(table)
    else:
        tagged = table.append_column("__lancenb_p", pa.array(np.arange(table.num_rows)))
        try:
            pos = tagged.filter(f.expression).column("__lancenb_p").to_numpy()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise InvalidInputError(f"merge_insert {what} {sql!r}: {e}") from None
    m = np.zeros(table.num_rows, dtype=bool)
    m[np.asarray(pos, dtype=np.int64)] = True
    return m
