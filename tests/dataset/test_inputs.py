"""One input normaliser for every entry point, with pylance's rules (issue 30, "no
silent wrong answers"): each input kind is written by lancenb and by pylance and the
two datasets are read back by the other library; refused inputs are refused by both.

Hugging Face ``datasets`` is a pinned dev dependency: these tests import it and fail,
not skip, without it.
"""

from __future__ import annotations

import lance
import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pytest

import lancenb
from lancenb.dataset.write.inputs import InputTypeError, normalize_input
from lancenb.errors import InvalidInputError, SchemaError

# dev extras, no lancenb dependencies (make test-oldest has neither: the module skips there)
datasets = pytest.importorskip("datasets")
pd = pytest.importorskip("pandas")

TABLE = pa.table({"id": pa.array(range(10), pa.int64()),
                  "s": pa.array([f"v{i}" for i in range(10)])})


def _both(tmp_path, make, **kwargs):
    """Write ``make()`` with pylance and with lancenb; each reads the other's."""
    ours = lancenb.write_dataset(make(), tmp_path / "nb", **kwargs)
    theirs = lance.write_dataset(make(), str(tmp_path / "py"), **kwargs)
    a = lance.dataset(str(tmp_path / "nb")).to_table()
    b = lancenb.dataset(tmp_path / "py").to_table()
    assert a == b
    assert ours.schema.remove_metadata() == theirs.schema.remove_metadata()
    return a, ours, theirs


def _hf():
    return datasets.Dataset.from_dict({"id": list(range(10)),
                                       "s": [f"v{i}" for i in range(10)]})


KINDS = {
    "table": lambda: TABLE,
    "record_batch": lambda: TABLE.to_batches()[0],
    "reader": lambda: TABLE.to_reader(max_chunksize=3),
    "pandas": lambda: TABLE.to_pandas(),
    "dict": lambda: TABLE.to_pydict(),
    "list_of_dicts": lambda: TABLE.to_pylist(),
    "pyarrow_dataset": lambda: pads.dataset(TABLE),
    "pyarrow_scanner": lambda: pads.dataset(TABLE).scanner(),
    "hf_dataset": _hf,
    "hf_iterable": lambda: _hf().to_iterable_dataset(),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_write_dataset_kinds_match_pylance(tmp_path, kind):
    got, _, _ = _both(tmp_path, KINDS[kind])
    assert got.select(["id", "s"]).cast(TABLE.schema) == TABLE  # (pandas: large_string)


@pytest.mark.parametrize("with_list", [False, True])
def test_batches_with_schema_match_pylance(tmp_path, with_list):
    schema = pa.schema([("id", pa.int32()), ("s", pa.string())])

    def make():  # int64 batches cast to the schema's int32, as pylance casts them
        batches = TABLE.to_batches(max_chunksize=4)
        return batches if with_list else iter(batches)
    got, ours, _ = _both(tmp_path, make, schema=schema)
    assert ours.schema == schema
    assert got == TABLE.cast(schema)


def test_hugging_face_keeps_its_schema_and_metadata(tmp_path):
    hf = _hf()
    ds = lancenb.write_dataset(hf, tmp_path / "a")
    assert ds.schema == hf.features.arrow_schema
    assert ds.schema.metadata == hf.data.schema.metadata  # its "huggingface" key
    assert len(ds) == 10


def test_hugging_face_selection_is_written_as_shown(tmp_path):
    # pylance 14 writes the table under a select()/shuffle() (all 10 rows, unshuffled):
    # lancenb writes the rows the dataset shows
    sel = _hf().select([7, 2, 5])
    ds = lancenb.write_dataset(sel, tmp_path / "a")
    assert ds.to_table().column("id").to_pylist() == [7, 2, 5]
    shuffled = _hf().shuffle(seed=1)
    ds = lancenb.write_dataset(shuffled, tmp_path / "b")
    assert ds.to_table().column("id").to_pylist() == shuffled["id"]


def test_hugging_face_iterable_without_features(tmp_path):
    def gen():
        for i in range(3):
            yield {"id": i, "s": str(i)}
    it = datasets.IterableDataset.from_generator(gen)
    assert it.features is None
    ds = lancenb.write_dataset(it, tmp_path / "a")
    assert ds.to_table().to_pydict() == {"id": [0, 1, 2], "s": ["0", "1", "2"]}


@pytest.mark.parametrize("iterable", [False, True])
def test_dataset_dict_refused_as_pylance(tmp_path, iterable):
    dd = datasets.DatasetDict({"train": _hf(), "test": _hf()})
    if iterable:
        dd = datasets.IterableDatasetDict({k: v.to_iterable_dataset() for k, v in dd.items()})
    with pytest.raises((ValueError, TypeError)):
        lance.write_dataset(dd, str(tmp_path / "py"))
    # before: the splits were written as two struct columns, silently
    with pytest.raises(InvalidInputError, match=r"splits \(train, test\).*data\['train'\]"):
        lancenb.write_dataset(dd, tmp_path / "nb")
    ds = lancenb.write_dataset(TABLE, tmp_path / "t")
    for call in (lambda: ds.insert(dd), lambda: ds.merge(dd, "id"),
                 lambda: ds.merge_insert("id").when_matched_update_all().execute(dd),
                 lambda: ds.add_columns(dd),
                 lambda: lancenb.fragment.write_fragments(dd, tmp_path / "t")):
        with pytest.raises(InvalidInputError, match="splits"):
            call()
    assert not (tmp_path / "nb").exists()


@pytest.mark.parametrize("bad", ["abc", 5, 1.5, object()])
def test_unknown_kinds_are_type_errors(tmp_path, bad):
    with pytest.raises((TypeError, ValueError)):
        lance.write_dataset(bad, str(tmp_path / "py"))
    with pytest.raises(InputTypeError, match="write_dataset cannot read") as e:
        lancenb.write_dataset(bad, tmp_path / "nb")
    assert isinstance(e.value, TypeError)


def test_lancenb_dataset_and_scanner_inputs(tmp_path):
    src = lancenb.write_dataset(TABLE, tmp_path / "src", max_rows_per_file=4)
    src.delete("id = 3")
    a = lancenb.write_dataset(src, tmp_path / "a")
    assert a.to_table() == src.to_table()
    b = lancenb.write_dataset(src.scanner(columns=["id"], filter="id > 5"), tmp_path / "b")
    assert b.to_table().column("id").to_pylist() == [6, 7, 8, 9]
    # pylance reads what was written from lancenb's scanner
    assert lance.dataset(str(tmp_path / "b")).to_table() == b.to_table()


def test_schema_with_columns_the_data_lacks_or_adds_is_refused(tmp_path):
    narrow = pa.schema([("id", pa.int64())])
    # before: the extra column "s" was dropped silently
    with pytest.raises(SchemaError, match=r"column\(s\) \['s'\]"):
        lancenb.write_dataset(TABLE, tmp_path / "a", schema=narrow)
    with pytest.raises(SchemaError):
        lancenb.write_dataset(iter(TABLE.to_batches()), tmp_path / "b", schema=narrow)
    wide = TABLE.schema.append(pa.field("x", pa.int64()))
    with pytest.raises(SchemaError):
        lancenb.write_dataset(iter(TABLE.to_batches()), tmp_path / "c", schema=wide)


@pytest.mark.parametrize("where", ["schema_value", "schema_key", "field", "nested_field"])
def test_non_utf8_metadata_refused_as_pylance(tmp_path, where):
    inner = pa.field("x", pa.int64(), metadata={b"k": b"\xff"} if where == "nested_field"
                     else None)
    fields = [pa.field("id", pa.int64(), metadata={b"k": b"\xfe"} if where == "field"
                       else None), pa.field("st", pa.struct([inner]))]
    meta = {"schema_value": {b"k": b"\xff\xfe"}, "schema_key": {b"\xff": b"v"}}.get(where)
    t = pa.table({"id": [1], "st": [{"x": 1}]}, schema=pa.schema(fields, metadata=meta))
    if where != "nested_field":  # (pylance checks the schema's and top fields' only)
        with pytest.raises(ValueError):
            lance.write_dataset(t, str(tmp_path / "py"))
    with pytest.raises(InvalidInputError, match="not valid utf8"):
        lancenb.write_dataset(t, tmp_path / "nb")
    ds = lancenb.write_dataset(t.replace_schema_metadata(None).select(["id"]).cast(
        pa.schema([("id", pa.int64())])), tmp_path / "ok")
    with pytest.raises(InvalidInputError, match="not valid utf8"):
        ds.insert(pa.table({"id": [2]}).replace_schema_metadata({b"k": b"\xff"}))
    # utf-8 metadata (bytes or text) is kept, as pylance keeps it
    ok = TABLE.replace_schema_metadata({b"k": "é".encode()})
    assert lancenb.write_dataset(ok, tmp_path / "ok2").schema.metadata == {b"k": "é".encode()}


def test_empty_iterable_needs_a_schema(tmp_path):
    with pytest.raises(ValueError):
        lance.write_dataset([], str(tmp_path / "py"))
    with pytest.raises(InvalidInputError, match="empty iterable and no schema"):
        lancenb.write_dataset([], tmp_path / "nb")
    ds = lancenb.write_dataset([], tmp_path / "nb", schema=TABLE.schema)
    assert ds.count_rows() == 0 and ds.schema == TABLE.schema


def test_pandas_index_kept_as_pylance(tmp_path):
    df = pd.DataFrame({"a": [1, 2, 3]}, index=[10, 20, 30])
    got, ours, theirs = _both(tmp_path, lambda: df)
    assert ours.schema.names == theirs.schema.names == ["a", "__index_level_0__"]


def test_write_fragments_and_fragment_create_take_every_kind(tmp_path):
    base = lancenb.write_dataset(TABLE.slice(0, 0), tmp_path / "d")
    for kind in ("hf_dataset", "list_of_dicts", "pyarrow_scanner", "dict"):
        frags = lancenb.fragment.write_fragments(KINDS[kind](), tmp_path / "d")
        assert sum(f.physical_rows for f in frags) == 10
        meta = lancenb.LanceFragment.create(tmp_path / "d", KINDS[kind]())
        assert meta.physical_rows == 10
    with pytest.raises(InputTypeError, match="LanceFragment.create cannot read"):
        lancenb.LanceFragment.create(tmp_path / "d", 5)
    assert base.count_rows() == 0


# -- merge_insert ------------------------------------------------------------------------

def test_merge_insert_without_clauses_refused_as_pylance(tmp_path):
    py = lance.write_dataset(TABLE, str(tmp_path / "py"))
    nb = lancenb.write_dataset(TABLE, tmp_path / "nb")
    with pytest.raises(ValueError, match="not configured to change the data"):
        py.merge_insert("id").execute(TABLE)
    # before: it executed and committed a version
    with pytest.raises(InvalidInputError, match="not configured to change the data"):
        nb.merge_insert("id").execute(TABLE)
    with pytest.raises(InvalidInputError, match="not configured to change the data"):
        nb.merge_insert("id").execute_uncommitted(TABLE)
    assert nb.version == 1 and lancenb.dataset(tmp_path / "nb").version == 1
    # when_matched_fail alone is a job (it may fail), as pylance runs it
    new = pa.table({"id": [100], "s": ["new"]})
    assert nb.merge_insert("id").when_matched_fail().execute(new)["num_inserted_rows"] == 0


@pytest.mark.parametrize("kind", ["dict", "list_of_dicts", "hf_dataset", "reader",
                                  "pyarrow_scanner"])
def test_merge_insert_source_kinds_match_pylance(tmp_path, kind):
    py = lance.write_dataset(TABLE, str(tmp_path / "py"))
    nb = lancenb.write_dataset(TABLE, tmp_path / "nb")
    src = {"id": [5, 50], "s": ["five", "fifty"]}
    make = {"dict": lambda: dict(src),
            "list_of_dicts": lambda: pa.table(src).to_pylist(),
            "hf_dataset": lambda: datasets.Dataset.from_dict(src),
            "reader": lambda: pa.table(src).to_reader(),
            "pyarrow_scanner": lambda: pads.dataset(pa.table(src)).scanner()}[kind]
    a = py.merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
        .execute(make())
    b = nb.merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
        .execute(make())
    assert a == b
    assert py.to_table().sort_by("id") == nb.to_table().sort_by("id")


# -- add_columns / merge_columns / merge -------------------------------------------------

def _pair(tmp_path, **kwargs):
    t = pa.table({"a": range(10), "b": range(10)})
    py = lance.write_dataset(t, str(tmp_path / "py"), **kwargs)
    nb = lancenb.write_dataset(t, tmp_path / "nb", **kwargs)
    return py, nb


def test_udf_output_schema_change_refused_as_pylance(tmp_path):
    py, nb = _pair(tmp_path, max_rows_per_file=4)
    calls = iter(range(1000))

    def renaming(batch):  # a new column name on every call
        return pa.record_batch([batch["a"]], [f"c{next(calls)}"])
    with pytest.raises(Exception, match="Output schema of function does not match"):
        py.add_columns(lance.batch_udf()(renaming), read_columns=["a"])
    # before: accepted (and each batch cast to the first schema)
    with pytest.raises(SchemaError, match="Output schema of function does not match"):
        nb.add_columns(lancenb.batch_udf()(renaming), read_columns=["a"])
    with pytest.raises(SchemaError, match="Output schema of function does not match"):
        nb.get_fragments()[0].merge_columns(lancenb.batch_udf()(renaming), columns=["a"])

    def int32(batch):  # not the declared type: refused, not cast
        return pa.record_batch([batch["a"].cast(pa.int32())], ["c"])
    declared = pa.schema([("c", pa.int64())])
    with pytest.raises(Exception, match="Output schema of function does not match"):
        py.add_columns(lance.batch_udf(output_schema=declared)(int32))
    with pytest.raises(SchemaError, match="Output schema of function does not match"):
        nb.add_columns(lancenb.batch_udf(output_schema=declared)(int32))
    assert nb.version == 1 and py.version == 1


def test_udf_runs_on_live_rows_as_pylance(tmp_path):
    py, nb = _pair(tmp_path, max_rows_per_file=6)
    for ds in (py, nb):
        ds.delete("a in (2, 3, 7)")
    seen = {"py": [], "nb": []}

    def udf(key):
        def f(batch):
            seen[key].append(batch["a"].to_pylist())
            return pa.record_batch([pc_mul(batch["a"])], ["c"])
        return f
    py.add_columns(udf("py"), read_columns=["a"], batch_size=4)
    nb.add_columns(udf("nb"), read_columns=["a"], batch_size=4)
    assert seen["nb"] == seen["py"]  # the sample call on row 0, then live rows only
    assert nb.to_table() == py.to_table()
    assert lance.dataset(str(tmp_path / "nb")).to_table() == py.to_table()


def pc_mul(a):
    return pa.array([x * 10 for x in a.to_pylist()], pa.int64())


def test_plain_function_failing_on_the_sample(tmp_path):
    py, nb = _pair(tmp_path)

    def boom(batch):
        raise RuntimeError("boom")
    with pytest.raises(TypeError, match="callable, but gave an error .*boom"):
        py.add_columns(boom)
    with pytest.raises(InputTypeError, match="callable, but gave an error .*boom"):
        nb.add_columns(boom)


@pytest.mark.parametrize("kind", ["generator", "reader", "table", "scanner", "hf_dataset"])
def test_add_columns_from_data_matches_pylance(tmp_path, kind):
    py, nb = _pair(tmp_path, max_rows_per_file=4)
    for ds in (py, nb):
        ds.delete("a = 5")
    vals = pa.table({"c": pa.array(range(100, 109), pa.int64())})  # one per live row
    schema = vals.schema

    def make(lib):
        if kind == "generator":
            return (b for b in vals.to_batches(max_chunksize=2))
        if kind == "reader":
            return vals.to_reader(max_chunksize=5)
        if kind == "scanner":
            return lib.write_dataset(vals, str(tmp_path / f"v{lib.__name__}")).scanner()
        if kind == "hf_dataset":
            return datasets.Dataset.from_dict(vals.to_pydict())
        return vals
    py.add_columns(make(lance), reader_schema=schema if kind == "generator" else None)
    nb.add_columns(make(lancenb), reader_schema=schema if kind == "generator" else None)
    assert nb.to_table() == py.to_table()
    assert lance.dataset(str(tmp_path / "nb")).to_table() == py.to_table()


@pytest.mark.parametrize("rows,match", [(8, "Stream ended before producing values"),
                                        (11, "Stream produced more values than expected")])
def test_add_columns_wrong_row_count_refused_as_pylance(tmp_path, rows, match):
    py, nb = _pair(tmp_path, max_rows_per_file=4)
    vals = pa.table({"c": range(rows)})
    with pytest.raises(OSError, match=match):
        py.add_columns(vals)
    with pytest.raises(SchemaError, match=match):
        nb.add_columns(vals)
    assert nb.version == 1
    assert not list((tmp_path / "nb" / "data").iterdir())[4:]  # no file left behind


def test_add_columns_generator_needs_reader_schema_or_first_batch(tmp_path):
    _, nb = _pair(tmp_path)
    with pytest.raises(InputTypeError, match="add_columns takes"):
        nb.add_columns(5)
    nb.add_columns(iter(pa.table({"c": range(10)}).to_batches()))
    assert nb.to_table().column("c").to_pylist() == list(range(10))


def test_fragment_merge_columns_from_reader_and_batch_size(tmp_path):
    _, nb = _pair(tmp_path, max_rows_per_file=4)
    frag = nb.get_fragments()[1]
    sizes = []

    def f(batch):
        sizes.append(batch.num_rows)
        return pa.record_batch([batch["a"]], ["c"])
    meta, schema = frag.merge_columns(f, columns=["a"], batch_size=3)
    assert max(sizes) <= 3
    vals = pa.table({"d": range(4)})
    meta, schema = frag.merge_columns(iter(vals.to_batches(max_chunksize=1)),
                                      reader_schema=vals.schema)
    assert meta.physical_rows == 4
    with pytest.raises(SchemaError, match="Stream produced more values"):
        frag.merge_columns(pa.table({"d": range(5)}))
    ckpt = lancenb.batch_udf(checkpoint_file=str(tmp_path / "c.json"))(f)
    with pytest.raises(InvalidInputError, match="A checkpoint file cannot be used"):
        frag.merge_columns(ckpt, columns=["a"])


def test_merge_takes_every_kind_and_a_schema(tmp_path):
    py, nb = _pair(tmp_path)
    new = pa.table({"a": pa.array([1, 2], pa.int64()), "e": pa.array([10, 20], pa.int64())})
    schema = pa.schema([("a", pa.int64()), ("e", pa.int32())])
    py.merge(iter(new.to_batches()), "a", schema=schema)
    nb.merge(iter(new.to_batches()), "a", schema=schema)
    assert nb.to_table() == py.to_table()
    hf = datasets.Dataset.from_dict({"a": [3], "f": ["x"]})
    py.merge(hf, "a")
    nb.merge(hf, "a")
    assert nb.to_table() == py.to_table()


def test_normalize_input_is_lazy_over_iterators():
    pulled = []

    def gen():
        for i in range(3):
            pulled.append(i)
            yield pa.record_batch([pa.array([i])], ["x"])
    schema, batches = normalize_input(gen(), pa.schema([("x", pa.int64())]))
    assert pulled == []
    assert [b.num_rows for b in batches] == [1, 1, 1]
    assert np.array_equal(pulled, [0, 1, 2])


def test_add_columns_cast_null_is_schema_only_as_pylance(tmp_path):
    py, nb = _pair(tmp_path, max_rows_per_file=4)
    before = [f.data_files() for f in nb.get_fragments()]
    exprs = {"n": "CAST(NULL AS INT)", "d": "cast(null as decimal(10, 2))"}
    py.add_columns(exprs)
    nb.add_columns(exprs)
    # before: a data file of nulls per fragment
    assert [f.data_files() for f in nb.get_fragments()] == before
    assert nb.schema == py.schema
    assert nb.to_table() == py.to_table()
    assert lance.dataset(str(tmp_path / "nb")).to_table() == py.to_table()
    nb.add_columns({"m": "NULL"})  # not CAST(NULL AS ...): written, as pylance writes it
    assert len(nb.get_fragments()[0].data_files()) == 2


@pytest.mark.parametrize("stable", [False, True])
def test_udf_reads_row_ids_and_addresses_as_pylance(tmp_path, stable):
    py, nb = _pair(tmp_path, max_rows_per_file=4, enable_stable_row_ids=stable)
    for ds in (py, nb):
        ds.delete("a = 5")
    seen = {"py": [], "nb": []}

    def udf(key):
        def f(batch):
            seen[key].append(batch.to_pydict())
            return pa.record_batch([pa.array(batch["_rowaddr"].to_numpy() % 7, pa.uint64())],
                                   ["c"])
        return f
    cols = ["_rowaddr", "a", "_rowid"]  # pylance's order: columns, _rowid, _rowaddr
    py.add_columns(udf("py"), read_columns=cols)
    nb.add_columns(udf("nb"), read_columns=cols)
    assert seen["nb"] == seen["py"]
    assert nb.to_table() == py.to_table()


def test_pydantic_models_with_a_schema_as_pylance(tmp_path):
    import pydantic

    class Row(pydantic.BaseModel):
        id: int
        s: str

    class Other(pydantic.BaseModel):
        id: int

    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    rows = [Row(id=i, s=f"v{i}") for i in range(3)]
    got, _, _ = _both(tmp_path, lambda: list(rows), schema=schema)
    assert got.to_pylist() == [r.model_dump() for r in rows]
    with pytest.raises(TypeError):
        lance.write_dataset(rows + [Other(id=9)], str(tmp_path / "py2"), schema=schema)
    with pytest.raises(InputTypeError, match="one model class"):
        lancenb.write_dataset(rows + [Other(id=9)], tmp_path / "nb2", schema=schema)
    # pylance derives the schema from the model class; lancenb asks for it
    with pytest.raises(lancenb.errors.NotSupportedError, match="pass schema="):
        lancenb.write_dataset(rows, tmp_path / "nb3")


@pytest.mark.parametrize("new", [lambda: pa.field("a", pa.float32()),
                                 lambda: [pa.field("a", pa.float32()), pa.field("g", pa.int32())],
                                 lambda: {"a": "b + 1"}, lambda: pa.table({"a": range(10)})])
def test_add_columns_name_clash_named_as_pylance(tmp_path, new):
    py, nb = _pair(tmp_path)
    with pytest.raises(OSError):  # (its words vary by case: "Column a already exists in
        py.add_columns(new())      # the dataset", or for fields "Type conflicts ...")
    with pytest.raises(InvalidInputError, match="Column a already exists in the dataset"):
        nb.add_columns(new())
    assert nb.version == 1


@pytest.mark.parametrize("data,match", [(pd.DataFrame([]), "empty schema"),
                                        (pd.DataFrame([{}]), "empty schema"),
                                        (TABLE.slice(0, 0), "Input data was empty")])
def test_fragment_create_refuses_no_columns_or_rows_as_pylance(tmp_path, data, match):
    with pytest.raises(OSError, match=match):
        lance.LanceFragment.create(str(tmp_path / "py"), data)
    # before: a DataFrame of one row and no column made a fragment without fields
    with pytest.raises(SchemaError, match=match):
        lancenb.LanceFragment.create(tmp_path / "nb", data)
