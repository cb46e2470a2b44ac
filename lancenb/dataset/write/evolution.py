"""Schema evolution: add, drop, alter and merge columns.

* ``add_columns`` writes the new columns as *new data files* in every fragment (one
  file per fragment, holding all the fragment's physical rows, deleted ones
  included); existing files are untouched. All-null columns (given as
  ``pa.Field``/``pa.Schema``) need no files at all: a fragment without a file for a
  column reads it as nulls. Committed as a ``Merge`` transaction, like pylance.
* ``drop_columns`` and renames / nullability changes only change the schema
  (``Project``); the data stays where it is until compaction rewrites it.
* A type change rewrites that column: a new field id, new files with the cast values
  (the old files keep the old id, which the schema no longer names).
* ``merge`` joins new columns onto the rows by a key (left outer join).

New field ids never reuse an id any data file still holds, so a dropped column's
bytes can never resurface under a new column.
"""

from __future__ import annotations

import json
import os
import re
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb._proto import file_pb2, table_pb2, transaction_pb2
from lancenb.dataset.write import udf
from lancenb.dataset.write.inputs import InputTypeError, is_hugging_face
from lancenb.dataset.write.insert import cleanup, normalize_input, write_data_files
from lancenb.dataset.write.retype import plan_retype
from lancenb.errors import InvalidInputError, SchemaError
from lancenb.expr import engine as engine
from lancenb.file.schema import schema_to_fields
from lancenb.file.version import FileVersion
from lancenb.table.manifest import DATA_DIR
from lancenb.table.transaction import Op, Transaction

__all__ = ["add_columns", "drop_columns", "alter_columns", "merge_columns", "BatchUDF",
           "batch_udf"]

DEFAULT_BATCH_ROWS = 64 * 1024
# ``CAST(NULL AS <type>)``: an add_columns expression pylance turns into an all-null
# column without data files (its SqlToAllNullsOptimizer); a bare NULL is not one
_CAST_NULL = re.compile(r"\s*CAST\s*\(\s*NULL\s+AS\s+[^()]+(\([^()]*\))?\s*\)\s*",
                        re.IGNORECASE)


class BatchUDF:
    """A function from a RecordBatch of existing columns to a RecordBatch of new ones,
    with the schema of its output (pylance's ``lance.batch_udf``)."""

    def __init__(self, func: Callable, output_schema: pa.Schema | None = None,
                 checkpoint_file: str | None = None):
        self.func = func
        self.output_schema = output_schema
        self.checkpoint_file = checkpoint_file

    def __call__(self, batch):
        return self.func(batch)


def batch_udf(output_schema: pa.Schema | None = None, checkpoint_file: str | None = None):
    """Decorator: ``@batch_udf(output_schema=...)`` turns a function into a BatchUDF."""
    def wrap(func):
        return BatchUDF(func, output_schema, checkpoint_file)
    return wrap


# -- helpers -------------------------------------------------------------------------

def _next_field_id(ds) -> int:
    m = ds.manifest
    hi = max((f.id for f in m.fields), default=-1)
    for frag in m.fragments:
        for df in frag.files:
            if len(df.fields):
                hi = max(hi, max(df.fields))
    return hi + 1


def _new_fields(schema: pa.Schema, first_id: int) -> list:
    """Field protos for ``schema`` with ids from ``first_id`` (pre-order)."""
    fields, _ = schema_to_fields(schema)
    remap = {f.id: f.id + first_id for f in fields}
    for f in fields:
        f.id = remap[f.id]
        if f.parent_id != -1:
            f.parent_id = remap[f.parent_id]
    return fields


def _file_version(ds) -> FileVersion:
    return FileVersion.resolve(ds.data_storage_version)


def _merge_txn(ds, frags, fields_pb) -> Transaction:
    op = transaction_pb2.Transaction.Merge(fragments=frags, schema=fields_pb)
    for k, v in ds.manifest.schema_metadata.items():
        op.schema_metadata[k] = v
    return Transaction(ds.version, Op.MERGE, op)


class _Checkpoint:
    """Per-fragment results of a long ``add_columns`` backfill, so a rerun resumes.

    A JSON file mapping fragment id -> the DataFile written for it (hex protobuf),
    keyed by the dataset version and the new column names it was computed for.
    """

    def __init__(self, path: str | None, key: str):
        self.path, self.key = path, key
        self.done: dict[int, bytes] = {}
        if path and os.path.exists(path):
            try:
                with open(path) as f:
                    data = json.load(f)
            except ValueError as e:
                raise InvalidInputError(f"checkpoint {path!r} is not JSON: {e}") from e
            if data.get("key") == key:
                self.done = {int(k): bytes.fromhex(v) for k, v in data["files"].items()}

    def get(self, fid: int):
        raw = self.done.get(fid)
        if raw is None:
            return None
        df = table_pb2.DataFile()
        df.ParseFromString(raw)
        return df

    def put(self, fid: int, df) -> None:
        if not self.path:
            return
        self.done[fid] = df.SerializeToString()
        tmp = f"{self.path}.tmp"
        with open(tmp, "w") as f:
            json.dump({"key": self.key, "files": {str(k): v.hex()
                                                   for k, v in self.done.items()}}, f)
        os.replace(tmp, self.path)

    def clear(self) -> None:
        if self.path and os.path.exists(self.path):
            os.unlink(self.path)


def _write_column_files(ds, new_schema: pa.Schema, new_fields, make_batches, *,
                        checkpoint: _Checkpoint | None = None):
    """One new data file per fragment from ``make_batches(frag)``; returns the updated
    fragment list and the paths written."""
    version = _file_version(ds)
    written: list[str] = []
    frags = []
    try:
        for frag in ds.get_fragments():
            df = checkpoint.get(frag.fragment_id) if checkpoint else None
            if df is None:
                out = write_data_files(ds.snapshot.store, make_batches(frag),
                                       new_schema, new_fields,
                                       version=version, max_rows_per_file=2**62,
                                       written=written)
                rows = sum(f.physical_rows for f in out)
                if len(out) != 1 or rows != frag.physical_rows:
                    raise InvalidInputError(
                        f"fragment {frag.fragment_id}: produced {rows} rows for its "
                        f"{frag.physical_rows} (a batch function must return one output row "
                        f"per input row)")
                df = out[0].files[0]
                if checkpoint:
                    checkpoint.put(frag.fragment_id, df)
            g = table_pb2.DataFragment()
            g.CopyFrom(frag.protobuf)
            g.files.append(df)
            frags.append(g)
    except BaseException:
        # files a checkpoint recorded stay: a rerun picks them up
        kept = {f"{DATA_DIR}/{checkpoint.get(k).path}" for k in checkpoint.done} \
            if checkpoint else set()
        cleanup(ds.snapshot.store, [w for w in written if w not in kept])
        raise
    return frags, written


def _ranges(n: int, step: int):
    for lo in range(0, n, step):
        yield lo, min(n, lo + step)


# -- add -------------------------------------------------------------------------------

def add_columns(ds, transforms, read_columns=None, *, batch_size=None,
                reader_schema=None) -> None:
    """Add columns: ``{name: SQL expression}``, a ``pa.Field``/list of fields/
    ``pa.Schema`` (all null), a function / :class:`BatchUDF` from a RecordBatch of
    ``read_columns`` to a RecordBatch of new columns (run on the live rows, see
    :mod:`lancenb.dataset.write.udf`), or data: any input ``write_dataset`` reads (a reader,
    a scanner, an iterator of batches with ``reader_schema`` ...), one value per live
    row in dataset order."""
    schema = ds.snapshot.schema
    step = int(batch_size or DEFAULT_BATCH_ROWS)
    if isinstance(transforms, pa.Field):
        transforms = [transforms]
    if isinstance(transforms, pa.Schema) or (isinstance(transforms, list) and transforms
                                             and all(isinstance(f, pa.Field)
                                                     for f in transforms)):
        new_schema = pa.schema(list(transforms))
        tops = {t.name: t for t in ds.snapshot.top_fields}
        nested = [f for f in new_schema if f.name in tops and _has_struct(f.type)
                  and _has_struct(tops[f.name].arrow.type)]
        top_level = pa.schema([f for f in new_schema if f not in nested])
        _check_new_names(schema, top_level.names)
        next_id = _next_field_id(ds)
        fields = list(ds.manifest.fields) + _new_fields(top_level, next_id)
        next_id += len(fields) - len(ds.manifest.fields)
        if nested and _file_version(ds) in (FileVersion.LEGACY, FileVersion.V2_0,
                                            FileVersion.V2_1):
            raise InvalidInputError(f"Column {nested[0].name} is a struct col, add sub column "
                                    f"is not supported in Lance file version "
                                    f"{_file_version(ds).label}")
        for f in nested:  # new children of existing structs: null, a schema change only
            added = _new_children(tops[f.name], f, next_id)
            fields += added
            next_id += len(added)
        frags = list(ds.manifest.fragments)
        ds.snapshot.commit(_merge_txn(ds, frags, fields), [])
        return
    if isinstance(transforms, dict) and not is_hugging_face(transforms):
        from lancenb.expr.filters import check_expression  # lazy: it loads sqlglot

        if not transforms:
            raise InvalidInputError("add_columns got no columns to add")
        out_fields, needed = [], set()
        for name, sql in transforms.items():
            typ, used = check_expression(sql, schema, what=f"add_columns {name!r}")
            out_fields.append(pa.field(name, typ))
            needed.update(used)
        new_schema = pa.schema(out_fields)
        _check_new_names(schema, new_schema.names)
        if all(isinstance(v, str) and _CAST_NULL.fullmatch(v) for v in transforms.values()) \
                and _file_version(ds) is not FileVersion.LEGACY:
            # all null: a schema change only, as pylance makes it (no data files)
            fields = list(ds.manifest.fields) + _new_fields(
                pa.schema([f.with_nullable(True) for f in new_schema]), _next_field_id(ds))
            ds.snapshot.commit(_merge_txn(ds, list(ds.manifest.fragments), fields), [])
            return
        needed = sorted(needed)

        def make_batches(frag):
            for lo, hi in _ranges(frag.physical_rows, step):
                t = frag.take_physical(needed, np.arange(lo, hi, dtype=np.int64))
                out = engine.evaluate(t, transforms, what="add_columns")
                yield from out.cast(new_schema).to_batches()
        ckpt = None
    elif callable(transforms):
        func = transforms
        cols = list(read_columns) if read_columns is not None else list(schema.names)
        missing = [c for c in cols if c not in schema.names and c not in udf.ROW_COLUMNS]
        if missing:
            raise InvalidInputError(f"add_columns: no column(s) {missing} to read")
        new_schema = udf.output_schema(func, ds.get_fragments(), cols,
                                       plain=not isinstance(func, BatchUDF))
        _check_new_names(schema, new_schema.names)

        def make_batches(frag):
            return udf.udf_batches(frag, func, cols, new_schema, step)
        ckpt_path = getattr(func, "checkpoint_file", None)
        ckpt = _Checkpoint(ckpt_path, f"{ds.uri}@{ds.version}:{','.join(new_schema.names)}")
    else:
        try:
            new_schema, batches = normalize_input(transforms, reader_schema,
                                                  what="add_columns")
        except InputTypeError as e:
            raise InputTypeError(f"add_columns takes a dict of SQL expressions, a pa.Field/"
                                 f"pa.Schema, a function or data (a reader, an iterator of "
                                 f"batches with reader_schema ...): {e}") from e
        _check_new_names(schema, new_schema.names)
        feeder = udf.RowFeeder(new_schema, batches)
        last = ds.get_fragments()[-1].fragment_id if ds.get_fragments() else None

        def make_batches(frag):
            yield from feeder.batches(frag, step)
            if frag.fragment_id == last:
                feeder.finish()
        ckpt = None
    new_fields = _new_fields(new_schema, _next_field_id(ds))
    frags, written = _write_column_files(ds, new_schema, new_fields, make_batches,
                                         checkpoint=ckpt)
    if not isinstance(transforms, dict) and not callable(transforms) and last is None:
        feeder.finish()  # (no fragment took any row)
    if ckpt is not None:  # a failed commit keeps what the checkpoint names for a rerun
        kept = {f"{DATA_DIR}/{ckpt.get(k).path}" for k in ckpt.done}
        written = [w for w in written if w not in kept]
    ds.snapshot.commit(_merge_txn(ds, frags, list(ds.manifest.fields) + new_fields), written)
    if ckpt is not None:
        ckpt.clear()


def _has_struct(t: pa.DataType) -> bool:
    """A struct, or a list of structs (whose item can take new children too)."""
    while pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        t = t.value_type
    return pa.types.is_struct(t)


def _new_children(node, new: pa.Field, first_id: int) -> list:
    """Field protos (ids from ``first_id``) for the children ``new`` has that the
    dataset field ``node`` lacks, at any depth below structs and list items; an
    existing child of another kind is refused."""
    t = new.type
    if not pa.types.is_struct(t):  # a list: its item
        return _new_children(node.children[0], t.value_field, first_id) if node.children \
            else []
    out: list = []
    have = {c.name: c for c in node.children}
    for child in t:
        if child.name not in have:
            got = _new_fields(pa.schema([child.with_nullable(True)]), first_id + len(out))
            got[0].parent_id = node.id
            out += got
        elif _has_struct(child.type) and _has_struct(have[child.name].arrow.type):
            out += _new_children(have[child.name], child, first_id + len(out))
        else:
            raise InvalidInputError(f"cannot add column(s) [{new.name!r}]: Column "
                                    f"{child.name} already exists in the dataset")
    return out


def _check_new_names(schema: pa.Schema, names: list[str]) -> None:
    clash = [n for n in names if n in schema.names]
    if clash:
        raise InvalidInputError(f"cannot add column(s) {clash}: Column {clash[0]} already "
                                f"exists in the dataset")  # (pylance's words)
    if len(set(names)) != len(names):
        raise InvalidInputError(f"add_columns: duplicate new column names {names}")
    dotted = [n for n in names if "." in n]
    if dotted:  # (a path, not a name: pylance refuses it, and could not read it back)
        raise InvalidInputError(f"Top level field {dotted[0]} cannot contain `.`. Maybe you "
                                f"meant to create a struct field?")


# -- drop / alter ----------------------------------------------------------------------

def _subtree_ids(fields, top_id: int) -> set[int]:
    ids = {top_id}
    changed = True
    while changed:
        changed = False
        for f in fields:
            if f.parent_id in ids and f.id not in ids:
                ids.add(f.id)
                changed = True
    return ids


def _field_by_path(fields, path: str):
    parts = path.split(".")
    parent = -1
    found = None
    for part in parts:
        found = next((f for f in fields if f.parent_id == parent and f.name == part), None)
        if found is None:
            return None
        parent = found.id
    return found


def drop_columns(ds, columns) -> None:
    """Remove columns from the schema (a ``Project``; data files are not rewritten)."""
    if isinstance(columns, str):
        columns = [columns]
    fields = list(ds.manifest.fields)
    drop: set[int] = set()
    for c in columns:
        f = _field_by_path(fields, c)
        if f is None:
            raise InvalidInputError(f"cannot drop column {c!r}: the dataset has no such column "
                                    f"(it has {ds.snapshot.schema.names})")
        drop |= _subtree_ids(fields, f.id)
    keep = [f for f in fields if f.id not in drop]
    if not any(f.parent_id == -1 for f in keep):
        raise InvalidInputError("cannot drop every column of a dataset")
    _project(ds, keep)


def _project(ds, fields) -> None:
    op = transaction_pb2.Transaction.Project(schema=fields)
    ds.snapshot.commit(Transaction(ds.version, Op.PROJECT, op))


def alter_columns(ds, *alterations) -> None:
    """Rename, change nullability or change the type of columns.

    Each alteration is a dict: ``{"path": "a.b", "name": "new", "nullable": bool,
    "data_type": pa.DataType}`` (only ``path`` is required).
    """
    fields = [file_pb2.Field() for _ in ds.manifest.fields]
    for dst, src in zip(fields, ds.manifest.fields):
        dst.CopyFrom(src)
    retype: dict[int, pa.DataType] = {}
    for alt in alterations:
        if not isinstance(alt, dict) or "path" not in alt:
            raise InvalidInputError(f"path is required: an alteration is a dict with a "
                                    f"'path', not {alt!r}")
        for key in alt:
            if key not in ("path", "name", "nullable", "data_type"):
                raise InvalidInputError(f"Unknown key: {key}. Valid keys are name, nullable, "
                                        f"and data_type.")
        if all(alt.get(k) is None for k in ("name", "nullable", "data_type")):
            raise InvalidInputError("At least one of name, nullable, or data_type must be "
                                    "specified")
        # (paths name the schema as it was before this call, as pylance's)
        src = _field_by_path(ds.manifest.fields, alt["path"])
        if src is None:
            raise InvalidInputError(f'Column "{alt["path"]}" does not exist in the dataset')
        f = next(g for g in fields if g.id == src.id)
        if alt.get("nullable") is False and src.nullable:
            raise InvalidInputError(f'Column "{alt["path"]}" is already nullable and thus '
                                    f'cannot be made non-nullable')
        if alt.get("data_type") is not None:
            old_type = _arrow_type(ds, src.id)
            if not (_castable(old_type, alt["data_type"])
                    and _same_kind(old_type, alt["data_type"])):
                raise InvalidInputError(
                    f'Cannot cast column "{alt["path"]}" from {_rust_type_name(old_type)} '
                    f'to {_rust_type_name(alt["data_type"])}')
        if alt.get("nullable") is not None:
            f.nullable = bool(alt["nullable"])
        if alt.get("data_type") is not None:
            retype[f.id] = alt["data_type"]
        if alt.get("name") is not None:
            new = alt["name"]
            if any(g.parent_id == f.parent_id and g.name == new and g.id != f.id
                   for g in fields):
                raise InvalidInputError(f"cannot rename {alt['path']!r} to {new!r}: a column "
                                        f"with that name exists")
            f.name = new
    if not retype:
        _project(ds, fields)
        return
    _retype(ds, fields, retype)


def _retype(ds, fields, retype: dict) -> None:
    """Type changes: the changed fields' values, cast, under new field ids in one new
    data file per fragment (:mod:`lancenb.dataset.write.retype`)."""
    tops = ds.snapshot.top_fields
    current = {f.id: f for t in tops for f in t.walk()}
    for fid, typ in retype.items():
        old = current[fid].arrow.type
        if not pa.types.is_dictionary(typ) and not _castable(old, typ):
            raise InvalidInputError(f"cannot change column {current[fid].name!r} from {old} "
                                    f"to {typ}: no such cast")
    version = _file_version(ds)
    plan = plan_retype(list(tops), fields, retype, _next_field_id(ds),
                       whole_columns=version is FileVersion.V2_0)
    step = DEFAULT_BATCH_ROWS

    def make_batches(frag):
        for lo, hi in _ranges(frag.physical_rows, step):
            t = frag.take_physical(plan.read, np.arange(lo, hi, dtype=np.int64))
            cols = []
            for n, old_t, new_f in zip(plan.read, plan.cast_types, plan.schema):
                try:
                    cols.append(_cast_as(t.column(n), old_t, new_f.type))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                    raise InvalidInputError(f"cannot change the type of {n!r}: "
                                            f"{_cast_failure(t.column(n), old_t, e)}") from e
            yield from pa.Table.from_arrays(cols, schema=plan.schema).to_batches()
    frags, written = _write_column_files(ds, plan.schema, plan.fields, make_batches)
    ds.snapshot.commit(_merge_txn(ds, frags, plan.dataset_fields), written)


def _cast_failure(col: pa.ChunkedArray, cast_type: pa.DataType, err: Exception) -> str:
    """Why a cast failed, in pylance's words for a value out of range ("Can't cast
    value 1024 to type Int8"), else Arrow's."""
    if pa.types.is_struct(cast_type) or pa.types.is_list(cast_type) or \
            pa.types.is_large_list(cast_type) or pa.types.is_fixed_size_list(cast_type):
        return str(err)
    try:
        back = pc.cast(pc.cast(col, cast_type, safe=False), col.type)
        bad = pc.indices_nonzero(pc.fill_null(pc.not_equal(back, col), False).combine_chunks())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return str(err)
    if not len(bad):
        return str(err)
    value = col[int(bad[0].as_py())].as_py()
    return f"Can't cast value {value} to type {_rust_type_name(cast_type)} ({err})"


def _rust_type_name(t: pa.DataType) -> str:
    """The Arrow type's name as pylance's messages print it (Rust's arrow names)."""
    names = {"int8": "Int8", "int16": "Int16", "int32": "Int32", "int64": "Int64",
             "uint8": "UInt8", "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64",
             "halffloat": "Float16", "float": "Float32", "double": "Float64",
             "string": "Utf8", "large_string": "LargeUtf8", "binary": "Binary",
             "large_binary": "LargeBinary", "bool": "Boolean"}
    return names.get(str(t), str(t))


def _cast_as(col: pa.ChunkedArray, cast_type: pa.DataType, out_type: pa.DataType):
    """``col`` cast to ``cast_type`` (current names), then seen under the altered
    names of ``out_type`` (the same layout)."""
    cast = col.cast(cast_type)
    if cast_type == out_type:
        return cast
    return pa.chunked_array([c.view(out_type) for c in cast.chunks], type=out_type)


def _arrow_type(ds, field_id: int) -> pa.DataType:
    """The current Arrow type of the dataset field ``field_id``, at any depth."""
    for top in ds.snapshot.top_fields:
        for f in top.walk():
            if f.id == field_id:
                return f.arrow.type
    raise InvalidInputError(f"the dataset has no field id {field_id}")


def _same_kind(src: pa.DataType, dst: pa.DataType) -> bool:
    """pylance's rule for type changes: integers to integers, floats to floats,
    temporal to temporal, strings to strings, binaries to binaries, decimals to
    decimals, lists to lists of such items; nothing else."""
    t = pa.types
    kinds = ((t.is_integer,), (t.is_floating,), (t.is_temporal,), (t.is_boolean,),
             (t.is_string, t.is_large_string), (t.is_binary, t.is_large_binary),
             (t.is_decimal,))
    for preds in kinds:
        if any(p(src) for p in preds):
            return any(p(dst) for p in preds)
    lists = (t.is_list, t.is_large_list, t.is_fixed_size_list)
    if any(p(src) for p in lists):
        return any(p(dst) for p in lists) and _same_kind(src.value_type, dst.value_type)
    return False


def _castable(src: pa.DataType, dst: pa.DataType) -> bool:
    try:
        pa.array([], src).cast(dst)
        return True
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False


def _quote(name: str) -> str:
    """``name`` as a SQL identifier (pylance's dialect quotes with backticks)."""
    return "`" + name.replace("`", "``") + "`"


# -- merge -----------------------------------------------------------------------------

def merge_columns(ds, data, left_on: str, right_on: str | None = None,
                  schema: pa.Schema | None = None) -> None:
    """Add the columns of ``data`` to the rows whose ``left_on`` equals ``data``'s
    ``right_on`` (rows without a match get nulls). ``right_on`` must be unique."""
    right_on = right_on or left_on
    if left_on not in ds.snapshot.schema.names:
        raise InvalidInputError(f"merge: the dataset has no column {left_on!r}")
    src_schema, batches = normalize_input(data, schema, what="merge")
    src = pa.Table.from_batches(list(batches), schema=src_schema)
    if right_on not in src.column_names:
        raise InvalidInputError(f"merge: the new data has no column {right_on!r}")
    keys = src.column(right_on)
    if keys.null_count or len(pc.unique(keys)) != len(keys):
        raise InvalidInputError(f"merge: the key {right_on!r} of the new data must be unique "
                                f"and not null")
    new_cols = [c for c in src.column_names if c != right_on]
    if not new_cols:
        raise InvalidInputError("merge: the new data has no columns besides the key")
    _check_new_names(ds.snapshot.schema, new_cols)
    new_schema = pa.schema([src.schema.field(c) for c in new_cols])
    left_type = ds.snapshot.schema.field(left_on).type
    if keys.type != left_type:
        try:
            src = src.set_column(src.column_names.index(right_on), right_on,
                                 keys.cast(left_type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SchemaError(f"merge: key types differ ({keys.type} vs {left_type})") from e
    right = src.rename_columns([("__lancenb_key" if c == right_on else c)
                                for c in src.column_names])

    def make_batches(frag):
        for lo, hi in _ranges(frag.physical_rows, DEFAULT_BATCH_ROWS):
            left = frag.take_physical([left_on], np.arange(lo, hi, dtype=np.int64))
            left = left.rename_columns(["__lancenb_key"]).append_column(
                "__lancenb_pos", pa.array(np.arange(left.num_rows, dtype=np.int64)))
            joined = left.join(right, "__lancenb_key", join_type="left outer")
            joined = joined.sort_by("__lancenb_pos")
            yield from joined.select(new_cols).cast(new_schema).to_batches()
    new_fields = _new_fields(new_schema, _next_field_id(ds))
    frags, written = _write_column_files(ds, new_schema, new_fields, make_batches)
    ds.snapshot.commit(_merge_txn(ds, frags, list(ds.manifest.fields) + new_fields), written)
