"""SQL through the engine (issue 20): the same filters and projections evaluated by
pylance and lancenb on the same dataset give the same rows and values; errors are
InvalidInputError in user terms; update, add_columns, columns={alias: expr} and
LanceDataset.sql use the engine."""

from __future__ import annotations

import datetime as dt
import math

import lance
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import InvalidInputError, LanceError


def _table() -> pa.Table:
    n = 40
    names = ["abc", "abd", "bcd", " abc ", "xyz", None, "ABC", "a_c"]
    xs = [0.1, 0.5, float("nan"), None, -0.0, 0.0, 0.9, 0.33]
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "i32": pa.array([(i * 7) % 11 - 5 if i % 9 else None for i in range(n)], pa.int32()),
        "x": pa.array([xs[i % len(xs)] for i in range(n)], pa.float64()),
        "name": pa.array([names[i % len(names)] for i in range(n)], pa.string()),
        "flag": pa.array([None if i % 7 == 3 else i % 2 == 0 for i in range(n)]),
        "tags": pa.array([None if i % 10 == 4 else [["a"], ["b", "c"], [], ["a", "c"]][i % 4]
                          for i in range(n)], pa.list_(pa.string())),
        "s": pa.array([{"a": i % 5, "b": "pq"[i % 2]} for i in range(n)],
                      pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 6) for i in range(n)],
                      pa.date32()),
        "ts": pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(hours=5 * i) for i in range(n)],
                       pa.timestamp("us")),
    })


FILTERS = [
    # string functions
    "lower(name) = 'abc'", "upper(name) = 'ABC'", "starts_with(name, 'ab')",
    "ends_with(name, 'd')", "regexp_match(name, '^a.c$') IS NOT NULL",
    "regexp_like(name, 'b+c')", "contains(name, 'bc')", "length(name) > 3",
    "char_length(name) = 3", "concat(name, '_x') = 'abc_x'", "btrim(name) = 'abc'",
    "left(name, 2) = 'ab'", "replace(name, 'a', 'z') LIKE 'z%'",
    "strpos(name, 'c') = 3", "split_part(name, 'b', 1) = 'a'",
    "coalesce(name, 'none') = 'none'",
    # LIKE, IN, NULL, quoting
    "name LIKE 'a%'", "name ILIKE 'A%'", "name NOT LIKE '%c'", "name LIKE 'a\\_c'",
    "name IN ('abc', 'xyz')", "name NOT IN ('abc', 'xyz')", "name IS NULL",
    "name = 'abc'", 'name = "abc"', "`name` = 'abc'",
    # lists and structs
    "array_has_any(tags, make_array('a', 'b'))", "array_has(tags, 'c')",
    "array_length(tags) = 2", "cardinality(tags) > 1", "s.a > 2", "s.b = 'p'",
    "s.a + id > 10",
    # numbers, NaN, casts
    "id * 2 + 1 > 17", "id % 3 = 1", "id / 4 = 2", "i32 IS DISTINCT FROM 3",
    "i32 IS NOT DISTINCT FROM NULL", "i32 BETWEEN -2 AND 2", "i32 NOT IN (1, 2, NULL)",
    "x > 0.4", "x < 0.4", "x = x", "isnan(x)", "x = 0.0", "abs(x - 0.5) < 0.2",
    "round(x * 10) = 5", "CAST(id AS DOUBLE) / 4 > 1.2", "CAST(id AS STRING) = '7'",
    "nullif(i32, 3) IS NULL", "greatest(i32, 0) = 0",
    # booleans
    "flag", "NOT flag", "flag IS TRUE", "flag IS NOT FALSE",
    "coalesce(flag, i32 > 0)",
    "(id > 20 AND x < 0.5) OR name IS NULL",
    # dates and timestamps
    "d > DATE '2024-01-03'", "d = DATE '2024-01-02'", "ts >= TIMESTAMP '2024-01-03 12:00:00'",
    "ts < TIMESTAMP '2024-01-02 00:00:00'", "date_part('day', d) = 2", "date_part('hour', ts) = 10",
]

PROJECTIONS = [
    "lower(name)", "concat(name, '-', CAST(id AS STRING))",
    "nullif(i32, 3)", "id * 2", "x + 1", "s.a", "upper(s.b)",
    "length(name)", "array_length(tags)", "i32 IS DISTINCT FROM 3", "coalesce(name, 'none')",
    "regexp_replace(name, 'b', 'B')", 'name = "abc"', "date_part('year', d)",
    "CAST(i32 AS DOUBLE) / 2", "name IS NULL", "i32 IS NOT NULL", "NOT (flag IS NULL)",
    "name IS NULL OR id > 3",
]


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("sql") / "ds.lance")
    lancenb.write_dataset(_table(), uri)
    return lance.dataset(uri), lancenb.dataset(uri)


def _same(a: pa.Table, b: pa.Table) -> None:
    assert a.schema.names == b.schema.names
    for name in a.schema.names:
        x, y = a.column(name).to_pylist(), b.column(name).to_pylist()
        assert len(x) == len(y), name
        for u, v in zip(x, y):
            if isinstance(u, float) and isinstance(v, float) and math.isnan(u):
                assert math.isnan(v), name
            else:
                assert u == v, (name, u, v)


def test_expression_table_size():
    assert len(FILTERS) + len(PROJECTIONS) >= 50 and len(FILTERS) >= 50


@pytest.mark.parametrize("sql", FILTERS)
def test_filter_matches_pylance(datasets, sql):
    theirs, ours = datasets
    want = theirs.to_table(filter=sql, columns=["id"])
    got = ours.to_table(filter=sql, columns=["id"])
    assert got.column("id").to_pylist() == want.column("id").to_pylist()
    assert ours.count_rows(filter=sql) == want.num_rows


@pytest.mark.parametrize("sql", PROJECTIONS)
def test_projection_matches_pylance(datasets, sql):
    theirs, ours = datasets
    cols = {"id": "id", "v": sql}
    want = theirs.to_table(columns=cols, filter="id >= 3")
    got = ours.to_table(columns=cols, filter="id >= 3")
    # the type and the nullability (`x IS NULL` is never null, as the engine says)
    assert got.schema.field("v") == want.schema.field("v")
    assert ours.scanner(columns=cols).projected_schema.field("v") == want.schema.field("v")
    _same(got, want)


@pytest.mark.parametrize("sql, problem", [
    ("id >", "syntax error"),
    ("id > > 1", "syntax error"),
    ("nosuch > 1", "no column 'nosuch'"),
    ("nosuch(id) = 1", "unknown function nosuch()"),
    ("id + 1", "not a boolean condition"),
    ("(" * 70 + "id > 1" + ")" * 70, "nests deeper than"),
])
def test_errors_in_user_terms(datasets, sql, problem):
    _, ours = datasets
    with pytest.raises(InvalidInputError, match=problem) as info:
        ours.to_table(filter=sql)
    msg = str(info.value)
    assert isinstance(info.value, LanceError) and isinstance(info.value, ValueError)
    assert "sqlglot" not in msg and "class '" not in msg and "datafusion" not in msg.lower()
    assert msg.startswith("filter '")


def test_import_does_not_load_the_engine():
    import subprocess
    import sys

    code = ("import sys, lancenb; assert 'datafusion' not in sys.modules; "
            "assert 'lancenb.expr.engine' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_columns_dict_with_row_id_and_pickle(datasets):
    import pickle

    theirs, ours = datasets
    cols = {"n": "upper(name)", "k": "s.a * 10"}
    sc = ours.scanner(columns=cols, filter="id < 5", with_row_id=True)
    got = sc.to_table()
    want = theirs.to_table(columns=cols, filter="id < 5", with_row_id=True)
    _same(got, want)
    assert pickle.loads(pickle.dumps(sc)).to_table().equals(got)
    with pytest.raises(InvalidInputError, match="column 'k'.*no column 'nope'"):
        ours.to_table(columns={"k": "nope + 1"})


def test_update_and_add_columns_with_functions(tmp_path):
    table = _table()
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    lance.write_dataset(table, a)
    lancenb.write_dataset(table, b)
    theirs, ours = lance.dataset(a), lancenb.dataset(b)
    for ds in (theirs, ours):
        ds.update({"name": "upper(concat(name, '!'))", "i32": "coalesce(i32, 0) + 1"},
                  where="starts_with(name, 'a') OR id IS DISTINCT FROM 3")
        ds.add_columns({"len": "length(name)", "first": "tags[1]"})
    got = lancenb.dataset(b).to_table().sort_by("id")
    want = lance.dataset(a).to_table().sort_by("id")
    _same(got, want)
    assert got.schema == want.schema
    # each side reads the other's result the same way
    _same(lance.dataset(b).to_table().sort_by("id"), want)
    with pytest.raises(InvalidInputError, match="unknown function nope"):
        ours.update({"name": "nope(name)"})


def test_dataset_sql_as_pylance(datasets):
    theirs, ours = datasets
    query = ("SELECT s.b AS b, count(*) AS n, max(length(name)) AS m FROM dataset "
             "WHERE id > 3 GROUP BY s.b ORDER BY b")
    want = pa.Table.from_batches(theirs.sql(query).build().to_batch_records())
    got = pa.Table.from_batches(ours.sql(query).build().to_batch_records())
    _same(got, want)
    got = ours.sql("SELECT id FROM t WHERE id < 3").table_name("t").build() \
        .to_stream_reader().read_all()
    assert got.column("id").to_pylist() == [0, 1, 2]
    with pytest.raises(InvalidInputError, match="query"):
        ours.sql("SELECT nope FROM dataset").build()


def test_take_with_computed_columns_as_pylance(tmp_path):
    """take/take_rows/head with columns={alias: SQL}: the expressions evaluated (take
    and take_rows returned the columns the expressions read, unevaluated)."""
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"id": pa.array(range(100), pa.int64()),
                                  "s": [f"v{i % 7}" if i % 9 else None for i in range(100)]}),
                        uri, max_rows_per_file=40, enable_stable_row_ids=True)
    theirs, ours = lance.dataset(uri), lancenb.dataset(uri)
    cols = {"x": "id * 2", "u": "upper(s)", "n": "s IS NULL"}
    for idx in ([0, 55, 3, 55], [99], []):
        want = theirs.take(idx, columns=cols)
        got = ours.take(idx, columns=cols)
        assert got.schema == want.schema and got.equals(want), idx
    assert ours._take_rows([1, 50], columns=cols).equals(theirs._take_rows([1, 50], columns=cols))
    assert ours.head(3, columns=cols).equals(theirs.head(3, columns=cols))
    got = ours.get_fragments()[1].take([0, 2], columns=cols)
    assert got.column_names == ["x", "u", "n"]
    assert got.column("x").to_pylist() == [80, 84]
    got = ours.take([0, 55], columns=cols, with_row_id=True)
    assert got.column_names == ["x", "u", "n", "_rowid"]
    assert got.column("_rowid").to_pylist() == [0, 55]


@pytest.mark.parametrize("cols", [["st.b.c"], ["st.a", "st.b.c"], ["id", "st.b.c", "st.a"],
                                  ["st.b.c", "id"], ["st", "st.a"], ["st.a", "_rowid"]])
def test_fields_inside_structs_as_pylance(tmp_path, cols):
    """columns=["s.a"]: scans give a column named by the path (as a projection would);
    takes give the struct pruned to the fields asked for, as pylance does each (before,
    lancenb refused such names)."""
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({
        "id": pa.array(range(50), pa.int64()),
        "st": pa.array([{"a": i, "b": {"c": str(i), "d": 1}} if i % 3 else None
                        for i in range(50)])}), uri, max_rows_per_file=20,
        enable_stable_row_ids=True)
    theirs, ours = lance.dataset(uri), lancenb.dataset(uri)
    for got, want in ((ours.to_table(columns=cols), theirs.to_table(columns=cols)),
                      (ours.to_table(columns=cols, filter="id > 30"),
                       theirs.to_table(columns=cols, filter="id > 30")),
                      (ours.take([0, 1, 33, 1], columns=cols),
                       theirs.take([0, 1, 33, 1], columns=cols)),
                      (ours._take_rows([2, 40], columns=cols),
                       theirs._take_rows([2, 40], columns=cols))):
        assert got.schema == want.schema and got.equals(want)


def test_unknown_field_inside_a_struct_is_named(tmp_path):
    uri = str(tmp_path / "ds")
    lancenb.write_dataset(pa.table({"st": pa.array([{"a": 1}])}), uri)
    for cols in (["st.zz"], ["nosuch.a"], ["st.a.b"]):
        with pytest.raises(InvalidInputError, match="no column"):
            lancenb.dataset(uri).to_table(columns=cols)
        with pytest.raises(InvalidInputError, match="no column"):
            lancenb.dataset(uri).take([0], columns=cols)
