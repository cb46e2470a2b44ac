"""The ``lancenb`` data source on tables named in a catalog (``namespace`` + ``table``
options instead of a path), on the embedded Spark: directory catalogs written by either
library, a REST catalog served by :class:`lancenb.namespace.RestAdapter`, every save mode,
and the errors for half-given or conflicting options. The oracles are pylance's own
``DirectoryNamespace`` and the tables it reads."""

from __future__ import annotations

import lance  # the oracle
import lance.namespace as pylance_ns
import pyarrow as pa
import pytest
from lance_namespace import CreateNamespaceRequest, DescribeTableRequest, ListTablesRequest

import lancenb
from lancenb.namespace import DirectoryNamespace, RestAdapter

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _table(n: int, start: int = 0) -> pa.Table:
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table({"id": ids, "s": pa.array([f"v{i}" for i in range(start, start + n)])})


def _read(spark, impl: str, props: dict, table: str, **extra):
    r = spark.read.format("lancenb").option("namespace", impl).option("table", table)
    for k, v in {**{f"namespace.{k}": v for k, v in props.items()}, **extra}.items():
        r = r.option(k, v)
    return r.load()


def _write(df, impl: str, props: dict, table: str, mode: str = "append", **extra):
    w = df.write.format("lancenb").mode(mode).option("namespace", impl).option(
        "table", table)
    for k, v in {**{f"namespace.{k}": v for k, v in props.items()}, **extra}.items():
        w = w.option(k, v)
    w.save()


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by("id")


@pytest.fixture
def root(tmp_path):
    return str(tmp_path / "catalog")


def test_reads_a_table_pylance_made_in_its_catalog(spark, root):
    theirs = pylance_ns.DirectoryNamespace(root=root)
    theirs.create_namespace(CreateNamespaceRequest(id=["team"]))
    lance.write_dataset(_table(50), namespace_client=theirs, table_id=["team", "events"])
    got = _read(spark, "dir", {"root": root}, "team.events").toArrow()
    assert _sorted(got) == _table(50)
    # projection and pinned versions work as on a path
    lance.write_dataset(_table(5, 50), namespace_client=theirs, table_id=["team", "events"],
                        mode="append")
    assert _read(spark, "dir", {"root": root}, "team.events", version=1).count() == 50
    assert _read(spark, "dir", {"root": root}, "team.events", columns="s").columns == ["s"]


def test_save_modes_through_the_catalog_read_by_pylance(spark, root):
    DirectoryNamespace(root=root).create_namespace(CreateNamespaceRequest(id=["a"]))
    props = {"root": root}
    df = spark.createDataFrame(_table(20).to_pandas())
    # append to a table the catalog does not know declares it
    _write(df, "dir", props, "a.t")
    theirs = pylance_ns.DirectoryNamespace(root=root)
    assert theirs.list_tables(ListTablesRequest(id=["a"])).tables == ["t"]
    ds = lance.dataset(namespace_client=theirs, table_id=["a", "t"])
    assert _sorted(ds.to_table()) == _table(20)
    _write(spark.createDataFrame(_table(5, 20).to_pandas()), "dir", props, "a.t")
    assert lance.dataset(namespace_client=theirs, table_id=["a", "t"]).count_rows() == 25
    _write(spark.createDataFrame(_table(3, 100).to_pandas()), "dir", props, "a.t",
           mode="overwrite")
    got = lancenb.dataset(namespace_client=DirectoryNamespace(root=root), table_id=["a", "t"])
    assert _sorted(got.to_table()) == _table(3, 100) and got.version == 3
    # create refuses a table that exists, and leaves it as it was
    with pytest.raises(Exception, match="(?i)exist"):
        _write(df, "dir", props, "a.t", write_mode="create")
    assert lance.dataset(namespace_client=theirs, table_id=["a", "t"]).version == 3
    _write(df, "dir", props, "a.fresh", write_mode="create")
    loc = theirs.describe_table(DescribeTableRequest(id=["a", "fresh"])).location
    assert lance.dataset(loc).count_rows() == 20


def test_rest_catalog(spark, root):
    with RestAdapter("dir", {"root": root}, port=0) as srv:
        props = {"uri": f"http://127.0.0.1:{srv.port}"}
        _write(spark.createDataFrame(_table(7).to_pandas()), "rest", props, "r",
               write_mode="create")
        assert _sorted(_read(spark, "rest", props, "r").toArrow()) == _table(7)
    # the server kept the table in its directory, where pylance finds it
    theirs = pylance_ns.DirectoryNamespace(root=root)
    assert lance.dataset(namespace_client=theirs, table_id=["r"]).count_rows() == 7


@pytest.mark.parametrize("options, message", [
    ({"namespace": "dir", "namespace.root": "ROOT"}, "both the namespace option"),
    ({"table": "a.t"}, "both the namespace option"),
    ({"namespace.root": "ROOT"}, "need the namespace option"),
    ({"namespace": "dir", "namespace.root": "ROOT", "table": "a..t"}, "joined by dots"),
    ({"namespace": "dir", "namespace.root": "ROOT", "table": "t", "path": "ROOT/x"},
     "not both"),
])
def test_bad_catalog_options_name_the_problem(spark, root, options, message):
    r = spark.read.format("lancenb")
    for k, v in options.items():
        r = r.option(k, v.replace("ROOT", root))
    with pytest.raises(Exception, match=message):
        r.load().collect()


def test_unknown_table_is_reported(spark, root):
    DirectoryNamespace(root=root)
    with pytest.raises(Exception, match="(?i)not found|does not exist|no table"):
        _read(spark, "dir", {"root": root}, "nope").collect()
