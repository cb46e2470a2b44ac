"""Schema evolution at any depth under hypothesis, checked against an in-memory model.

A state machine drives a dataset with nested columns (a struct holding a struct, a
list of structs, in 2.2 a map) through random renames, drops and casts of fields at
any depth, children added to structs, struct columns added by SQL, interleaved with
appends, deletes (on nested fields too), updates, merge_insert, compaction and
cleanup of old versions, each done by lancenb or pylance at random. After every step
both libraries must read what the model holds: the whole table, takes, a filtered
scan on a nested field and ``columns=["a.b"]``.

What pylance 14 does is the judge (probed by hand; each rule keeps to it):

- ``alter_columns({"path": "a.b.c", "name": ...})`` renames at any depth, list items
  included (``"lst.item.a"``); map keys and values cannot be addressed.
- ``alter_columns({"path": ..., "data_type": ...})`` casts nested fields in 2.1 and
  2.2; in 2.0 it commits a dataset pylance itself cannot read (a struct over two
  data files), so there nested casts are lancenb's only (it rewrites the whole
  column, which pylance reads). Widening only (int32 -> int64, string -> large_string).
- ``drop_columns(["a.b"])`` drops at any depth; dropping a struct's last child drops
  the struct too, so the model never drops a last child. Before 2.2, dropping a field
  of a list's structs drops the whole list column, so those drops are 2.2 only.
- ``add_columns(pa.field("a", pa.struct([new])))`` adds a (null) child to an existing
  struct, also inside a list, only in 2.2.
- ``update`` cannot name nested fields; updates change the top-level ``v``.

Operations lancenb does not implement yet (``LANCENB_GAPS``) are done by pylance
only, so the reads are still checked; delete an entry to make the test demand it.
"""

from __future__ import annotations

import datetime
import shutil
import tempfile

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from _tables import assert_tables_equal
from budget import EXAMPLES, NIGHTLY, fuzz_settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import lancenb
from lancenb.errors import LanceError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# operations pylance does and lancenb refuses today (found by this test)
LANCENB_GAPS = {
}

Path = tuple  # field names from the top, "item" for a list's values


def _base(ids: np.ndarray, fmt: str, salt: int = 0) -> pa.Table:
    """Rows in the schema the dataset is created with; ``salt`` changes the values
    (merge_insert sources). 2.0 cannot store null structs, so only 2.1+ has them."""
    n = len(ids)
    k = ids * 7 + salt
    null_struct = (ids % 6 == 5) if fmt != "2.0" else np.zeros(n, bool)
    sub = pa.StructArray.from_arrays(
        [pa.array((k % 13).astype(np.int32), mask=ids % 4 == 1),
         pa.array([f"y{x % 5}" for x in k], pa.string(), mask=ids % 3 == 2)], ["x", "y"],
        mask=pa.array((ids % 7 == 3) & (fmt != "2.0")))
    meta = pa.StructArray.from_arrays(
        [pa.array([f"n{x % 6}" for x in k], pa.string(), mask=ids % 5 == 4),
         pa.array((k % 17).astype(np.int32), mask=ids % 4 == 2), sub],
        ["name", "age", "sub"], mask=pa.array(null_struct))
    items = [None if i % 8 == 7 else
             [{"a": int((x + j) % 9), "b": f"b{(x + j) % 3}" if j != 1 else None}
              for j in range(int(i % 3))] for i, x in zip(ids, k)]
    cols = {
        "id": pa.array(ids, pa.int64()),
        "v": pa.array((k % 11).astype(np.int32), mask=ids % 5 == 0),
        "meta": meta,
        "lst": pa.array(items, pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())]))),
    }
    if fmt == "2.2":  # maps need 2.2
        cols["m"] = pa.array([None if i % 9 == 4 else [(f"k{x % 3}", int(x % 5))]
                              for i, x in zip(ids, k)], pa.map_(pa.string(), pa.int32()))
    return pa.table(cols)


# --- editing a table at a path (the model's side of every schema change) -------------

def _flat(arr):
    """A contiguous copy of ``arr`` (offset 0), so children line up with it."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks else pa.array([], arr.type)
    return arr.take(pa.array(np.arange(len(arr)))) if arr.offset else arr


def _edit(field: pa.Field, arr: pa.Array, rest: Path, fn):
    """Apply ``fn(field, arr) -> (field | None, arr)`` to the field at ``rest`` below
    ``field``; None drops it."""
    if not rest:
        return fn(field, arr)
    arr, t = _flat(arr), field.type
    if pa.types.is_struct(t):
        kids = []
        for i in range(t.num_fields):
            f, a = t.field(i), arr.field(i)[:len(arr)]
            if f.name == rest[0]:
                f, a = _edit(f, a, rest[1:], fn)
            if f is not None:
                kids.append((f, a))
        new = pa.StructArray.from_arrays([a for _, a in kids], fields=[f for f, _ in kids],
                                         mask=arr.is_null())
        return field.with_type(new.type), new
    assert pa.types.is_list(t) and rest[0] == "item", (t, rest)
    vf, vals = _edit(t.value_field, arr.values, rest[1:], fn)
    new = pa.ListArray.from_arrays(arr.offsets, vals, type=pa.list_(vf), mask=arr.is_null())
    return field.with_type(new.type), new


def edit(table: pa.Table, path: Path, fn) -> pa.Table:
    i = table.schema.get_field_index(path[0])
    f, a = _edit(table.schema.field(i), table.column(i), path[1:], fn)
    return table.remove_column(i) if f is None else table.set_column(i, f, a)


def rename(new: str):
    return lambda f, a: (f.with_name(new), a)


def drop(f, a):
    return None, None


def cast(to: pa.DataType):
    return lambda f, a: (f.with_type(to), a.cast(to))


def add_child(name: str, typ: pa.DataType):
    def fn(f, a):
        a = _flat(a)
        kids = [a.field(i)[:len(a)] for i in range(f.type.num_fields)]
        new = pa.StructArray.from_arrays(kids + [pa.nulls(len(a), typ)],
                                         fields=list(f.type) + [pa.field(name, typ)],
                                         mask=a.is_null())
        return f.with_type(new.type), new
    return fn


def add_sql_struct(name: str):
    """The model of ``named_struct('p', id * 2, 'q', CAST(id AS STRING))``."""
    def apply(t: pa.Table) -> pa.Table:
        ids = t["id"]
        s = pa.StructArray.from_arrays([_flat(pc.multiply(ids, 2)), _flat(ids.cast(pa.string()))],
                                       ["p", "q"])
        return t.append_column(name, s)
    return apply


def nested_get(table: pa.Table, path: Path) -> pa.Array:
    """The values at a struct-only path, null where any parent is null (as a scan of
    ``columns=["a.b"]`` gives them)."""
    arr = _flat(table[path[0]])
    for name in path[1:]:
        arr = arr.flatten()[arr.type.get_field_index(name)]
    return arr


def fields_at(schema: pa.Schema):
    """Every field a path can name (not a map's insides): (path, field, number of
    children of its parent, whether it is inside a list)."""
    out = []

    def walk(f: pa.Field, path: Path, siblings: int, in_list: bool):
        out.append((path, f, siblings, in_list))
        if pa.types.is_struct(f.type):
            for c in f.type:
                walk(c, path + (c.name,), f.type.num_fields, in_list)
        elif pa.types.is_list(f.type) and pa.types.is_struct(f.type.value_type):
            for c in f.type.value_type:
                walk(c, path + ("item", c.name), f.type.value_type.num_fields, True)

    for f in schema:
        walk(f, (f.name,), len(schema), False)
    return out


def dotted(path: Path) -> str:
    return ".".join(path)


class EvolutionHistory(RuleBasedStateMachine):
    """The model: the current table and the schema edits made since the last
    overwrite (replayed on every batch of new rows so they fit the schema)."""

    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="lancenb-evo-")
        self.uri = f"{self.dir}/ds"
        self.table: pa.Table | None = None
        self.edits: list = []
        self.next_id = 0
        self.salt = 0
        self.names = 0
        self.fmt = "2.1"

    def teardown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def _lib(self, use_pylance: bool):
        return lance if use_pylance else lancenb

    def _name(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    def _rows(self, ids) -> pa.Table:
        t = _base(np.asarray(ids, np.int64), self.fmt, self.salt)
        for e in self.edits:
            t = e(t)
        return t

    def _edit(self, fn):
        self.edits.append(fn)
        self.table = fn(self.table)

    def _fields(self, *, in_list=True, top=True):
        """Fields a schema change may name: never ``id`` (the key) nor a map's
        insides, nested ones only where pylance can address them."""
        return [x for x in fields_at(self.table.schema)
                if x[0][0] != "id" and (in_list or not x[3]) and (top or len(x[0]) > 1)]

    @initialize(n=st.integers(0, 25), fmt=st.sampled_from(["2.0", "2.1", "2.2"]),
                use_pylance=st.booleans())
    def create(self, n, fmt, use_pylance):
        self.fmt = fmt
        self.table = self._rows(range(n))
        self.next_id = n
        self._lib(use_pylance).write_dataset(self.table, self.uri, data_storage_version=fmt,
                                             max_rows_per_file=10, schema=self.table.schema)

    # --- data -------------------------------------------------------------------------

    @rule(n=st.integers(1, 20), use_pylance=st.booleans())
    def append(self, n, use_pylance):
        t = self._rows(range(self.next_id, self.next_id + n))
        self.next_id += n
        self._lib(use_pylance).write_dataset(t, self.uri, mode="append", max_rows_per_file=10)
        self.table = pa.concat_tables([self.table, t])

    @rule(data=st.data(), use_pylance=st.booleans())
    def delete(self, data, use_pylance):
        """On ``id`` or on an integer field inside structs (a nested filter)."""
        leaves = [p for p, f, _, lst in self._fields(in_list=False)
                  if len(p) > 1 and pa.types.is_integer(f.type)]
        k = data.draw(st.integers(0, 16))
        if leaves and data.draw(st.booleans()):
            path = data.draw(st.sampled_from(leaves))
            pred, hit = f"{dotted(path)} >= {k}", pc.greater_equal(nested_get(self.table, path), k)
        else:
            pred = f"id % 7 = {k % 7}"
            hit = pc.equal(np.fmod(np.asarray(self.table["id"]), 7), k % 7)
        self._lib(use_pylance).dataset(self.uri).delete(pred)
        self.table = self.table.filter(pc.invert(pc.fill_null(hit, False)))

    @precondition(lambda self: "v" in self.table.column_names)
    @rule(k=st.integers(0, 6), use_pylance=st.booleans())
    def update(self, k, use_pylance):
        """Rewrites whole rows (nested columns included) into a new fragment."""
        self._lib(use_pylance).dataset(self.uri).update({"v": "v + 1"}, where=f"id % 3 = {k % 3}")
        hit = pc.equal(np.fmod(np.asarray(self.table["id"]), 3), k % 3)
        v = self.table["v"]
        new = pc.if_else(hit, pc.add(v, pa.scalar(1, v.type)), v)
        self.table = self.table.set_column(self.table.schema.get_field_index("v"),
                                           self.table.schema.field("v"), new)

    @rule(data=st.data(), new=st.integers(0, 8), use_pylance=st.booleans())
    def merge_insert(self, data, new, use_pylance):
        have = self.table["id"].to_pylist()
        old = data.draw(st.lists(st.sampled_from(have), max_size=6, unique=True)) if have else []
        self.salt += 1
        src = self._rows(sorted(old) + list(range(self.next_id, self.next_id + new)))
        self.next_id += new
        (self._lib(use_pylance).dataset(self.uri).merge_insert("id")
         .when_matched_update_all().when_not_matched_insert_all().execute(src))
        keep = pc.invert(pc.is_in(self.table["id"], value_set=pa.array(old, pa.int64())))
        self.table = pa.concat_tables([self.table.filter(keep), src])

    @rule(use_pylance=st.booleans())
    def compact(self, use_pylance):
        self._lib(use_pylance).dataset(self.uri).optimize.compact_files(
            target_rows_per_fragment=40)

    @rule(use_pylance=st.booleans())
    def cleanup(self, use_pylance):
        """After a compaction this makes what it rewrote the only copy."""
        self._lib(use_pylance).dataset(self.uri).cleanup_old_versions(
            older_than=datetime.timedelta(0))

    # --- schema -----------------------------------------------------------------------

    @precondition(lambda self: bool(self._fields()))
    @rule(data=st.data(), use_pylance=st.booleans())
    def rename_field(self, data, use_pylance):
        path = data.draw(st.sampled_from([x[0] for x in self._fields()]))
        new = self._name("r")
        self._lib(use_pylance).dataset(self.uri).alter_columns(
            {"path": dotted(path), "name": new})
        self._edit(lambda t, path=path, new=new: edit(t, path, rename(new)))

    def _droppable(self) -> list:
        return [p for p, _, s, lst in self._fields() if s > 1
                and not (lst and self.fmt != "2.2")]

    @precondition(lambda self: bool(self._droppable()))
    @rule(data=st.data(), use_pylance=st.booleans())
    def drop_field(self, data, use_pylance):
        """A nested field that is not its struct's last child (pylance then drops the
        struct too) or a top-level column other than ``id``. Not inside a list before
        2.2: pylance 14 then drops the whole list column (lancenb keeps the list)."""
        path = data.draw(st.sampled_from(self._droppable()))
        self._lib(use_pylance).dataset(self.uri).drop_columns([dotted(path)])
        self._edit(lambda t, path=path: edit(t, path, drop))

    def _castable(self):
        wider = {pa.int32(): pa.int64(), pa.string(): pa.large_string()}
        return [(p, wider[f.type]) for p, f, _, _ in self._fields() if f.type in wider]

    @precondition(lambda self: bool(self._castable()))
    @rule(data=st.data(), use_pylance=st.booleans())
    def cast_field(self, data, use_pylance):
        path, to = data.draw(st.sampled_from(self._castable()))
        if len(path) > 1 and self.fmt == "2.0":
            use_pylance = False  # pylance 14 cannot read its own nested 2.0 casts
        self._lib(use_pylance).dataset(self.uri).alter_columns(
            {"path": dotted(path), "data_type": to})
        self._edit(lambda t, path=path, to=to: edit(t, path, cast(to)))

    @precondition(lambda self: self.fmt == "2.2")
    @rule(data=st.data(), use_pylance=st.booleans())
    def add_child(self, data, use_pylance):
        """A null int64 child at the end of a struct (top-level, nested or a list's)."""
        structs = [p for p, f, _, _ in self._fields() if pa.types.is_struct(f.type)]
        if not structs:
            return
        path = data.draw(st.sampled_from(structs))
        name = self._name("c")
        spec: pa.DataType = pa.struct([(name, pa.int64())])
        for part in reversed(path[1:]):  # the same path holding only the new child
            spec = pa.list_(spec) if part == "item" else pa.struct([(part, spec)])
        if "add_child" in LANCENB_GAPS:
            use_pylance = True
        self._lib(use_pylance).dataset(self.uri).add_columns(pa.field(path[0], spec))
        self._edit(lambda t, path=path, name=name: edit(t, path, add_child(name, pa.int64())))

    @precondition(lambda self: self.table.num_columns < 8)
    @rule(use_pylance=st.booleans())
    def add_struct_column(self, use_pylance):
        name = self._name("s")
        self._lib(use_pylance).dataset(self.uri).add_columns(
            {name: "named_struct('p', id * 2, 'q', CAST(id AS STRING))"})
        self._edit(add_sql_struct(name))

    @rule(data=st.data(), use_pylance=st.booleans())
    def refused_change(self, data, use_pylance):
        """A change pylance refuses: refused too, with nothing committed."""
        fields = self._fields()
        ints = [p for p, f, _, _ in fields if pa.types.is_integer(f.type)]
        kinds = {
            "rename_missing": lambda ds: ds.alter_columns(
                {"path": dotted(data.draw(st.sampled_from(fields))[0][:-1] + ("nope",))
                 if fields else "nope", "name": "z"}),
            "drop_missing": lambda ds: ds.drop_columns(["meta.nope"]),
            "add_existing": lambda ds: ds.add_columns({"id": "id * 2"}),
            "dotted_add": lambda ds: ds.add_columns({"meta.z": "id * 2"}),
        }
        if ints:
            path = data.draw(st.sampled_from(ints))
            kinds["int_to_float"] = lambda ds: ds.alter_columns(
                {"path": dotted(path), "data_type": pa.float64()})
        kind = data.draw(st.sampled_from(sorted(kinds)))
        if kind in LANCENB_GAPS:
            use_pylance = True
        lib = self._lib(use_pylance)
        before = lancenb.dataset(self.uri).version
        with pytest.raises((LanceError, OSError, ValueError)):
            kinds[kind](lib.dataset(self.uri))
        assert lancenb.dataset(self.uri).version == before

    # --- reads ------------------------------------------------------------------------

    @invariant()
    def both_read_the_model(self):
        if self.table is None:
            return
        want = self.table.sort_by("id")
        ours, theirs = lancenb.dataset(self.uri), lance.dataset(self.uri)
        got = ours.to_table()
        assert_tables_equal(got.sort_by("id"), want)
        assert_tables_equal(theirs.to_table().sort_by("id"), want)
        assert ours.count_rows() == want.num_rows
        n = want.num_rows
        idx = sorted({0, n - 1, n // 2, (n * 7) // 11}) if n else []
        if idx:  # rows by position in the scan's order
            assert_tables_equal(ours.take(idx), got.take(pa.array(idx)))
        leaves = [p for p, f, _, lst in fields_at(want.schema)
                  if len(p) > 1 and not lst and not pa.types.is_struct(f.type)]
        if not leaves:
            return
        path = leaves[(n * 31 + len(leaves)) % len(leaves)]
        col = dotted(path)
        # columns=["a.b"]: a column named by the path
        sub = pa.table({"id": want["id"], col: nested_get(want, path)})
        for lib in (ours, theirs):
            assert_tables_equal(lib.to_table(columns=["id", col]).sort_by("id"), sub)
        if idx:  # take with a path: the struct pruned to that field, as pylance gives it
            assert_tables_equal(ours.take(idx, columns=[col]), theirs.take(idx, columns=[col]))
        # a filtered scan on the nested field
        vals = nested_get(want, path)
        if pa.types.is_integer(vals.type):
            pred, hit = f"{col} >= 5", pc.greater_equal(vals, 5)
        elif pa.types.is_string(vals.type) or pa.types.is_large_string(vals.type):
            pred, hit = f"{col} IS NULL", pc.is_null(vals)
        else:
            return
        expect = want.filter(pc.fill_null(hit, False))
        assert_tables_equal(ours.to_table(filter=pred).sort_by("id"), expect)
        assert_tables_equal(theirs.to_table(filter=pred).sort_by("id"), expect)
        assert ours.count_rows(filter=pred) == expect.num_rows


TestEvolutionHistory = EvolutionHistory.TestCase
# LANCENB_FUZZ_EXAMPLES=500 (or HYPOTHESIS_PROFILE=nightly) runs 500+ histories
TestEvolutionHistory.settings = fuzz_settings(
    examples=EXAMPLES if not NIGHTLY else max(500, EXAMPLES // 3),
    stateful_step_count=10)
