"""pylance's JSON SQL functions (json_get, json_get_*, json_extract, json_exists,
json_array_length, json_array_contains) in filters and projections: the same answers
(or both an error) as pylance 14, on a dataset written by each library and read by
both."""

import json
import uuid

import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lancenb
from lancenb.errors import InvalidInputError

DOCS = [
    {"sku": "A-1", "qty": 12, "price": 9.5, "tags": ["red", "sale", 3],
     "dims": {"w": 2, "h": [1, 2.0]}, "ok": True, "note": None, "n_txt": "17",
     "f_txt": "-0.5", "b_txt": "FALSE"},
    {"sku": "B-2", "qty": "4", "price": 12, "tags": [], "dims": {}, "ok": "true"},
    [{"sku": "C-3"}, 5, ["x", ["y"]]],
    None,
    "loose",
    -1.25,
    {"sku": "D-4", "qty": 0.5, "price": -3, "tags": ["blue", {"k": 1}, None], "ok": False,
     "esc": "tab\there \"q\" é"},
    {"qty": 7, "tags": ["red"], "dims": {"w": 9, "h": []}},
]

PROJECTIONS = [
    "json_get(doc, 'dims')", "json_get(doc, 'note')", "json_get(doc, '1')",
    "json_get(json_get(doc, 'dims'), 'h')", "json_get(json_get(doc, '2'), '1')",
    "json_get_string(doc, 'sku')", "json_get_string(doc, 'price')",
    "json_get_string(doc, 'esc')", "json_get_string(doc, 'ok')", "json_get_string(doc, '1')",
    "json_get_int(doc, 'qty')", "json_get_int(doc, 'n_txt')", "json_get_int(doc, 'f_txt')",
    "json_get_float(doc, 'price')", "json_get_float(doc, 'f_txt')",
    "json_get_bool(doc, 'ok')", "json_get_bool(doc, 'b_txt')",
    "json_get_int(json_get(doc, 'dims'), 'w')",
    "json_extract(doc, '$.dims.h')", "json_extract(doc, '$.tags[1]')",
    "json_extract(doc, '$.tags[*]')", "json_extract(doc, '$[0].sku')",
    "json_extract(doc, '$.dims.*')", "json_extract(doc, 'dims.w')",
    "json_extract(doc, '$.tags[last]')", "json_extract(doc, '$[1 to 2]')",
    "json_extract(doc, '$.esc')", "json_extract(doc, '$')",
    "json_exists(doc, '$.dims.h')", "json_exists(doc, '$.note')", "json_exists(doc, '$[2][1]')",
    "json_array_length(doc, '$.tags')", "json_array_length(doc, '$.dims')",
    "json_array_length(doc, '$')", "json_array_length(doc, '$.nothing')",
    "json_array_contains(doc, '$.tags', 'red')", "json_array_contains(doc, '$.tags', '3')",
    "json_array_contains(doc, '$.tags', 'null')", "json_array_contains(doc, '$[2]', '5')",
    "json_array_contains(doc, '$.tags[*]', '{\"k\":1}')",
    "json_get_string(doc, CASE WHEN id % 2 = 0 THEN 'sku' ELSE 'missing' END)",
    "json_extract(doc, CASE WHEN id < 3 THEN '$.sku' ELSE '$.tags' END)",
]

FILTERS = [
    "json_get_string(doc, 'sku') = 'B-2'",
    "json_get_int(doc, 'qty') >= 4",
    "json_get_float(doc, 'price') < 10",
    "json_get_bool(doc, 'ok')",
    "json_get_bool(doc, 'ok') IS NULL",
    "json_extract(doc, '$.dims.w') = '9'",
    "json_exists(doc, '$.tags') AND id > 0",
    "json_array_length(doc, '$.tags') = 0",
    "json_array_contains(doc, '$.tags', 'red') OR json_exists(doc, '$[2]')",
    "json_get(doc, 'note') IS NOT NULL",
    "NOT json_exists(doc, '$.sku')",
]

ERRORS = [
    "json_get_int(doc, 'sku')",        # text that is not a number
    "json_get_string(doc, 'dims')",    # an object
    "json_get_bool(doc, 'qty')",       # a number as a bool
    "json_extract(doc, '$..sku')",     # recursive descent: not pylance's JSONPath
    "json_extract(doc, 'lax $.sku')",
    "json_get(id, 'a')",               # not JSONB
]


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    d = tmp_path_factory.mktemp("json")
    table = pa.table({
        "id": pa.array(range(len(DOCS)), pa.int64()),
        "doc": pa.array([None if v is None else json.dumps(v) for v in DOCS], pa.json_()),
    })
    lance.write_dataset(table, d / "by_pylance")
    lancenb.write_dataset(table, d / "by_lancenb")
    return [d / "by_pylance", d / "by_lancenb"]


def _run(lib, path, **kw):
    try:
        return "ok", lib.dataset(path).to_table(**kw)
    except Exception as e:  # noqa: BLE001 - whether each library fails is compared
        return "error", type(e)


def _same(want, got):
    assert want[0] == got[0], (want, got)
    if want[0] == "ok":
        w, g = want[1], got[1]
        assert g.schema.types == w.schema.types
        assert g.to_pylist() == w.to_pylist() or all(
            str(a) == str(b) for a, b in zip(g.to_pylist(), w.to_pylist()))


@pytest.mark.parametrize("sql", PROJECTIONS)
def test_projection_as_pylance(datasets, sql):
    for path in datasets:
        _same(_run(lance, path, columns={"v": sql}), _run(lancenb, path, columns={"v": sql}))


@pytest.mark.parametrize("sql", FILTERS)
def test_filter_as_pylance(datasets, sql):
    for path in datasets:
        _same(_run(lance, path, filter=sql, columns=["id"]),
              _run(lancenb, path, filter=sql, columns=["id"]))


@pytest.mark.parametrize("sql", ERRORS)
def test_errors_as_pylance(datasets, sql):
    path = datasets[1]
    assert _run(lance, path, columns={"v": sql})[0] == "error"
    with pytest.raises(InvalidInputError):
        lancenb.dataset(path).to_table(columns={"v": sql})


def test_conversion_error_names_the_failure(datasets):
    with pytest.raises(InvalidInputError, match="Failed to convert to integer: InvalidCast") \
            as err:
        lancenb.dataset(datasets[0]).to_table(filter="json_get_int(doc, 'sku') > 1")
    assert "PyErr" not in str(err.value) and "Traceback" not in str(err.value)


def test_count_rows_and_json_in_struct(tmp_path):
    docs = pa.array([json.dumps({"k": i % 5, "v": [i] * (i % 3)}) for i in range(50)],
                    pa.json_())
    table = pa.table({"s": pa.StructArray.from_arrays([docs, pa.array(range(50))],
                                                      ["j", "n"])})
    lancenb.write_dataset(table, tmp_path / "a")
    lance.write_dataset(table, tmp_path / "b")
    for p in (tmp_path / "a", tmp_path / "b"):
        for f in ["json_get_int(s.j, 'k') = 3", "json_array_length(s.j, '$.v') = 2"]:
            assert lancenb.dataset(p).count_rows(filter=f) == lance.dataset(p).count_rows(filter=f)


def test_many_rows_vectorised(tmp_path):
    """100k documents: the same rows as pylance, without a Python step per row."""
    rng = np.random.default_rng(7)
    k = rng.integers(0, 1000, 100_000)
    docs = pa.array([f'{{"k":{a},"t":["a{a % 7}","b"],"p":{{"q":"{a % 3}"}}}}' for a in k],
                    pa.json_())
    table = pa.table({"doc": docs, "i": pa.array(range(len(k)))})
    lancenb.write_dataset(table, tmp_path / "d")
    ours, theirs = lancenb.dataset(tmp_path / "d"), lance.dataset(tmp_path / "d")
    f = ("json_get_int(doc, 'k') < 100 AND json_array_contains(doc, '$.t', 'a3') "
         "AND json_extract(doc, '$.p.q') = '\"1\"'")
    want = theirs.to_table(filter=f, columns=["i"])["i"].to_pylist()
    assert ours.to_table(filter=f, columns=["i"])["i"].to_pylist() == want
    assert len(want) > 0


@pytest.mark.parametrize("query", [
    "SELECT id, json_get_string(doc, 'sku') AS sku FROM dataset WHERE json_exists(doc, '$.tags')",
    "SELECT doc FROM dataset WHERE json_array_length(doc, '$.tags') > 1",
    "SELECT json_get(doc, 'dims') AS d, * FROM dataset",
])
def test_sql_queries_read_json_as_pylance(datasets, query):
    """``ds.sql()`` sees JSON columns as pylance's does: JSONB to the functions, text in
    the result."""
    for path in datasets:
        want = lance.dataset(path).sql(query).build().to_batch_records()
        got = lancenb.dataset(path).sql(query).build().to_batch_records()
        assert pa.Table.from_batches(got) == pa.Table.from_batches(want)


_scalars = st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) \
    | st.floats(allow_nan=False, allow_infinity=False) \
    | st.sampled_from(["a", "7", "-2.5", "true", ""])
_docs = st.recursive(_scalars, lambda kids: st.lists(kids, max_size=3)
                     | st.dictionaries(st.sampled_from(["a", "b", "0"]), kids, max_size=3),
                     max_leaves=8)
_PATHS = ["$", "$.a", "$.a.b", "$[0]", "$.*", "$[*]", "$.a[*]", "$.b[last]", "$[0 to 1].a",
          "a.0", "$[1, 0]"]


@given(st.lists(st.one_of(st.none(), _docs), min_size=1, max_size=6),
       st.sampled_from(["a", "b", "0", "1"]), st.sampled_from(_PATHS),
       st.sampled_from(["json_get_string", "json_get_int", "json_get_float", "json_get_bool"]))
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_random_documents_as_pylance(tmp_path, docs, key, path, typed):
    """Held-out documents: every function on random JSON gives pylance's values, or
    fails where pylance's fails."""
    uri = str(tmp_path / uuid.uuid4().hex)
    table = pa.table({"doc": pa.array([None if d is None else json.dumps(d) for d in docs],
                                      pa.json_())})
    lancenb.write_dataset(table, uri)
    for sql in (f"json_get(doc, '{key}')", f"{typed}(doc, '{key}')",
                f"json_extract(doc, '{path}')", f"json_exists(doc, '{path}')",
                f"json_array_length(doc, '{path}')",
                f"json_array_contains(doc, '{path}', '{key}')"):
        want, got = _run(lance, uri, columns={"v": sql}), _run(lancenb, uri, columns={"v": sql})
        _same(want, got)


def test_digit_keys_name_object_members_and_array_items(tmp_path):
    """A key of digits is an object's member of that name and an array's item at that
    index, as pylance reads it (lancenb read only the index: None for {"0": 1})."""
    uri = str(tmp_path / "digits")
    docs = [{"0": None}, {"0": 1}, {"a": 2}, [5, 6], {"1": "x"}, None]
    table = pa.table({"doc": pa.array([None if d is None else json.dumps(d) for d in docs],
                                      pa.json_())})
    lancenb.write_dataset(table, uri)
    for sql in ("json_get(doc, '0')", "json_get_int(doc, '0')", "json_get_string(doc, '1')"):
        want = _run(lance, uri, columns={"v": sql})
        got = _run(lancenb, uri, columns={"v": sql})
        _same(want, got)
    got = lancenb.dataset(uri).to_table(columns={"v": "json_get_int(doc, '0')"})
    assert got.column("v").to_pylist() == [None, 1, None, 5, None, None]
