"""Directory and REST namespaces against pylance's on one catalog: what either library
creates, the other lists, describes and opens; errors are both lancenb's and the spec's."""

import io

import lance  # the oracle
import lance.namespace as pylance_ns
import lance_namespace as spec
import pyarrow as pa
import pytest
from lance_namespace import (
    CreateNamespaceRequest,
    CreateTableRequest,
    DeclareTableRequest,
    DeregisterTableRequest,
    DescribeNamespaceRequest,
    DescribeTableRequest,
    DropNamespaceRequest,
    DropTableRequest,
    ListNamespacesRequest,
    ListTablesRequest,
    RegisterTableRequest,
    TableExistsRequest,
)

import lancenb
from lancenb.errors import InvalidInputError, LanceError
from lancenb.namespace import DirectoryNamespace, RestAdapter, RestNamespace
from lancenb.namespace import errors as nserr


def _table(n=3, start=0):
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "name": [f"r{i}" for i in range(start, start + n)]})


def _ipc(tbl):
    sink = io.BytesIO()
    with pa.ipc.RecordBatchStreamWriter(sink, tbl.schema) as w:
        w.write_table(tbl)
    return sink.getvalue()


def _tables(ns, parent):
    return sorted(ns.list_tables(ListTablesRequest(id=parent)).tables)


def _namespaces(ns, parent):
    return sorted(ns.list_namespaces(ListNamespacesRequest(id=parent)).namespaces)


@pytest.fixture
def root(tmp_path):
    return str(tmp_path / "catalog")


def test_pylance_catalog_read_by_lancenb(root):
    theirs = pylance_ns.DirectoryNamespace(root=root)
    theirs.create_namespace(CreateNamespaceRequest(id=["team"], properties={"owner": "ada"}))
    theirs.create_namespace(CreateNamespaceRequest(id=["team", "sub"]))
    theirs.create_table(CreateTableRequest(id=["top"]), _ipc(_table(2)))
    theirs.create_table(CreateTableRequest(id=["team", "events"]), _ipc(_table(5)))
    theirs.create_table(CreateTableRequest(id=["team", "sub", "deep"]), _ipc(_table(1)))
    lance.write_dataset(_table(4), namespace_client=theirs, table_id=["team", "written"])

    ours = DirectoryNamespace(root=root)
    assert _namespaces(ours, []) == ["team"]
    assert _namespaces(ours, ["team"]) == ["sub"]
    assert _tables(ours, []) == ["top"]
    assert _tables(ours, ["team"]) == ["events", "written"]
    assert _tables(ours, ["team", "sub"]) == ["deep"]
    props = ours.describe_namespace(DescribeNamespaceRequest(id=["team"])).properties
    assert props == {"owner": "ada"}
    for tid, n in ((["top"], 2), (["team", "events"], 5), (["team", "written"], 4),
                   (["team", "sub", "deep"], 1)):
        ours.table_exists(TableExistsRequest(id=tid))
        got = lancenb.dataset(namespace_client=ours, table_id=tid).to_table()
        assert got == lance.dataset(namespace_client=theirs, table_id=tid).to_table()
        assert got.num_rows == n
    # the same location either way
    loc = ours.describe_table(DescribeTableRequest(id=["team", "events"])).location
    assert loc.rsplit("/", 1)[-1] == theirs.describe_table(
        DescribeTableRequest(id=["team", "events"])).location.rsplit("/", 1)[-1]


def test_lancenb_catalog_read_by_pylance(root):
    ours = DirectoryNamespace(root=root)
    ours.create_namespace(CreateNamespaceRequest(id=["a"], properties={"k": "v"}))
    ours.create_namespace(CreateNamespaceRequest(id=["a", "b"]))
    resp = ours.create_table(CreateTableRequest(id=["a", "t"]), _ipc(_table(3)))
    assert resp.version == 1 and "a$t" in resp.location
    ours.create_table(CreateTableRequest(id=["root_t"]), _ipc(_table(2)))
    lancenb.write_dataset(_table(6), namespace_client=ours, table_id=["a", "b", "w"])

    theirs = pylance_ns.DirectoryNamespace(root=root)
    assert _namespaces(theirs, []) == ["a"]
    assert _namespaces(theirs, ["a"]) == ["b"]
    assert _tables(theirs, []) == ["root_t"]
    assert _tables(theirs, ["a"]) == ["t"]
    assert _tables(theirs, ["a", "b"]) == ["w"]
    assert theirs.describe_namespace(DescribeNamespaceRequest(id=["a"])).properties == \
        {"k": "v"}
    assert lance.dataset(namespace_client=theirs, table_id=["a", "t"]).to_table() == _table(3)
    assert lance.dataset(namespace_client=theirs, table_id=["a", "b", "w"]).count_rows() == 6
    # pylance appends through the namespace, lancenb reads the new version
    lance.write_dataset(_table(2, 10), namespace_client=theirs, table_id=["a", "t"],
                        mode="append")
    assert lancenb.dataset(namespace_client=ours, table_id=["a", "t"]).count_rows() == 5


def test_mixed_writers_on_one_catalog(root):
    ours, theirs = DirectoryNamespace(root=root), pylance_ns.DirectoryNamespace(root=root)
    theirs.create_namespace(CreateNamespaceRequest(id=["ns"]))
    ours.create_table(CreateTableRequest(id=["ns", "mine"]), _ipc(_table()))
    theirs.create_table(CreateTableRequest(id=["ns", "theirs"]), _ipc(_table()))
    ours.create_namespace(CreateNamespaceRequest(id=["ns", "child"]))
    for ns in (ours, theirs):
        assert _tables(ns, ["ns"]) == ["mine", "theirs"]
        assert _namespaces(ns, ["ns"]) == ["child"]
    ours.drop_table(DropTableRequest(id=["ns", "theirs"]))
    theirs.drop_namespace(DropNamespaceRequest(id=["ns", "child"]))
    for ns in (ours, theirs):
        assert _tables(ns, ["ns"]) == ["mine"]
        assert _namespaces(ns, ["ns"]) == []
    # a name taken by the other library is refused
    with pytest.raises(nserr.TableAlreadyExistsError):
        ours.create_table(CreateTableRequest(id=["ns", "mine"]), _ipc(_table()))
    theirs.create_table(CreateTableRequest(id=["ns", "again"]), _ipc(_table()))
    with pytest.raises(spec.TableAlreadyExistsError):
        ours.create_table(CreateTableRequest(id=["ns", "again"]), _ipc(_table()))


def test_write_dataset_through_namespace(root):
    ours = DirectoryNamespace(root=root)
    ds = lancenb.write_dataset(_table(3), namespace_client=ours, table_id=["t"])
    assert ds.uri.endswith("t.lance")
    lancenb.write_dataset(_table(2, 3), namespace_client=ours, table_id=["t"], mode="append")
    assert lancenb.dataset(namespace_client=ours, table_id=["t"]).count_rows() == 5
    lancenb.write_dataset(_table(1), namespace_client=ours, table_id=["t"], mode="overwrite")
    assert lance.dataset(root + "/t.lance").count_rows() == 1
    # older pylance's keyword
    assert lancenb.dataset(namespace=ours, table_id=["t"]).count_rows() == 1
    with pytest.raises(nserr.TableAlreadyExistsError):
        lancenb.write_dataset(_table(1), namespace_client=ours, table_id=["t"])
    with pytest.raises(nserr.TableNotFoundError):
        lancenb.dataset(namespace_client=ours, table_id=["missing"])
    with pytest.raises(InvalidInputError, match="namespace_client"):
        lancenb.dataset()
    with pytest.raises(InvalidInputError, match="namespace_client"):
        lancenb.dataset(root + "/t.lance", namespace_client=ours, table_id=["t"])
    with pytest.raises(InvalidInputError, match="namespace_client"):
        lancenb.dataset(table_id=["t"])


def test_declared_table_then_written_by_pylance(root):
    ours = DirectoryNamespace(root=root)
    ours.create_namespace(CreateNamespaceRequest(id=["a"]))
    loc = ours.declare_table(DeclareTableRequest(id=["a", "later"])).location
    ours.table_exists(TableExistsRequest(id=["a", "later"]))
    theirs = pylance_ns.DirectoryNamespace(root=root)
    assert _tables(theirs, ["a"]) == ["later"]
    lance.write_dataset(_table(3), loc)
    assert lancenb.dataset(namespace_client=ours, table_id=["a", "later"]).count_rows() == 3


def test_register_and_deregister(tmp_path):
    root = str(tmp_path)
    lance.write_dataset(_table(3), root + "/data/physical.lance")
    ours = DirectoryNamespace(root=root)
    ours.create_namespace(CreateNamespaceRequest(id=["ws"]))
    resp = ours.register_table(RegisterTableRequest(id=["ws", "reg"],
                                                    location="data/physical.lance"))
    assert resp.location == "data/physical.lance"
    theirs = pylance_ns.DirectoryNamespace(root=root)
    assert lance.dataset(namespace_client=theirs, table_id=["ws", "reg"]).count_rows() == 3
    for bad, rule in (("s3://b/t.lance", "Absolute URIs are not allowed"),
                      ("/tmp/t.lance", "Absolute paths are not allowed"),
                      ("../out/t.lance", "Path traversal is not allowed")):
        with pytest.raises(nserr.InvalidInputError, match=rule):
            ours.register_table(RegisterTableRequest(id=["ws", "bad"], location=bad))
    with pytest.raises(nserr.NamespaceNotFoundError, match="'nope'"):
        ours.register_table(RegisterTableRequest(id=["nope", "t"], location="data/x"))
    out = ours.deregister_table(DeregisterTableRequest(id=["ws", "reg"]))
    assert out.id == ["ws", "reg"] and out.location.endswith("/data/physical.lance")
    assert _tables(theirs, ["ws"]) == []
    assert lance.dataset(root + "/data/physical.lance").count_rows() == 3  # data kept


def test_errors_name_what_is_wrong(root):
    ours = DirectoryNamespace(root=root)
    ours.create_namespace(CreateNamespaceRequest(id=["ns"]))
    ours.create_table(CreateTableRequest(id=["ns", "t"]), _ipc(_table()))
    cases = [
        (lambda: ours.drop_namespace(DropNamespaceRequest(id=["ns"])),
         nserr.NamespaceNotEmptyError, "not empty"),
        (lambda: ours.describe_table(DescribeTableRequest(id=["ns", "x"])),
         nserr.TableNotFoundError, "not found"),
        (lambda: ours.create_namespace(CreateNamespaceRequest(id=["ns"])),
         nserr.NamespaceAlreadyExistsError, "already exists"),
        (lambda: ours.create_namespace(CreateNamespaceRequest(id=["no", "x"])),
         nserr.NamespaceNotFoundError, "'no' does not exist"),
        (lambda: ours.create_table(CreateTableRequest(id=["ns", "e"]), b""),
         nserr.InvalidInputError, "Arrow IPC"),
        (lambda: ours.create_table(CreateTableRequest(id=[]), _ipc(_table())),
         nserr.InvalidInputError, "cannot be empty"),
        (lambda: ours.create_table(CreateTableRequest(id=["ns", "a$b"]), _ipc(_table())),
         nserr.InvalidInputError, "without"),
    ]
    for call, cls, text in cases:
        with pytest.raises(cls, match=text) as info:
            call()
        assert isinstance(info.value, LanceError)
        assert isinstance(info.value, spec.LanceNamespaceError)


def test_memory_root_and_connect_by_class_path():
    ns = spec.connect("lancenb.namespace.DirectoryNamespace",
                      {"root": "memory://nb-ns-test", "storage.some_option": "x"})
    assert isinstance(ns, DirectoryNamespace)
    assert ns.namespace_id() == 'DirectoryNamespace { root: "memory://nb-ns-test" }'
    plain = DirectoryNamespace(root="memory://nb-ns-test2")
    plain.create_namespace(CreateNamespaceRequest(id=["w"]))
    plain.create_table(CreateTableRequest(id=["w", "t"]), _ipc(_table(2)))
    plain.create_table(CreateTableRequest(id=["r"]), _ipc(_table(1)))
    assert _tables(plain, ["w"]) == ["t"] and _tables(plain, []) == ["r"]
    assert lancenb.dataset(namespace_client=plain, table_id=["w", "t"]).count_rows() == 2


def test_root_tables_found_by_directory_listing(root):
    lance.write_dataset(_table(2), root + "/loose.lance")  # never registered
    ours = DirectoryNamespace(root=root)
    assert _tables(ours, []) == ["loose"]
    ours.table_exists(TableExistsRequest(id=["loose"]))
    assert lancenb.dataset(namespace_client=ours, table_id=["loose"]).count_rows() == 2
    listing_off = DirectoryNamespace(root=root, dir_listing_enabled="false")
    assert _tables(listing_off, []) == []
    no_manifest = DirectoryNamespace(root=root, manifest_enabled="false")
    with pytest.raises(nserr.UnsupportedOperationError, match="manifest"):
        no_manifest.create_namespace(CreateNamespaceRequest(id=["x"]))


def test_list_pagination(root):
    ours = DirectoryNamespace(root=root)
    ours.create_namespace(CreateNamespaceRequest(id=["p"]))
    for name in ("c", "a", "b"):
        ours.create_table(CreateTableRequest(id=["p", name]), _ipc(_table(1)))
    first = ours.list_tables(ListTablesRequest(id=["p"], limit=2))
    assert first.tables == ["a", "b"] and first.page_token == "b"
    rest = ours.list_tables(ListTablesRequest(id=["p"], page_token=first.page_token))
    assert rest.tables == ["c"] and rest.page_token is None


@pytest.mark.parametrize("server,client", [("lancenb", "lancenb"), ("pylance", "lancenb"),
                                           ("lancenb", "pylance")])
def test_rest_round_trip(root, server, client):
    adapter = (RestAdapter if server == "lancenb" else pylance_ns.RestAdapter)
    with adapter("dir", {"root": root}, port=0) as srv:
        uri = f"http://127.0.0.1:{srv.port}"
        ns = RestNamespace(uri=uri) if client == "lancenb" else pylance_ns.RestNamespace(uri=uri)
        ns.create_namespace(CreateNamespaceRequest(id=["ws"], properties={"o": "p"}))
        ns.create_namespace(CreateNamespaceRequest(id=["ws", "inner"]))
        resp = ns.create_table(CreateTableRequest(id=["ws", "t"]), _ipc(_table(4)))
        assert resp.version == 1 and "t" in resp.location
        ns.declare_table(DeclareTableRequest(id=["ws", "d"]))
        assert _tables(ns, ["ws"]) == ["d", "t"]
        assert _namespaces(ns, ["ws"]) == ["inner"]
        assert ns.describe_namespace(DescribeNamespaceRequest(id=["ws"])).properties == \
            {"o": "p"}
        ns.table_exists(TableExistsRequest(id=["ws", "t"]))
        with pytest.raises(spec.TableNotFoundError, match="(?i)not found"):
            ns.table_exists(TableExistsRequest(id=["ws", "zz"]))
        with pytest.raises(spec.NamespaceNotEmptyError, match="(?i)not empty"):
            ns.drop_namespace(DropNamespaceRequest(id=["ws"]))
        with pytest.raises(spec.InvalidInputError, match="Path traversal is not allowed"):
            ns.register_table(RegisterTableRequest(id=["ws", "r"], location="../x"))
        loc = ns.describe_table(DescribeTableRequest(id=["ws", "t"])).location
        assert lancenb.dataset(loc).to_table() == _table(4)
        ns.drop_table(DropTableRequest(id=["ws", "t"]))
        assert _tables(ns, ["ws"]) == ["d"]
    # what the server wrote is the directory layout both libraries read
    assert _tables(pylance_ns.DirectoryNamespace(root=root), ["ws"]) == ["d"]
    assert _tables(DirectoryNamespace(root=root), ["ws"]) == ["d"]


def test_rest_headers_and_root_id(root):
    seen = []

    class Provider(lancenb.namespace.DynamicContextProvider):
        def provide_context(self, info):
            seen.append(info["operation"])
            return {"headers.X-Test": "1"}

    with RestAdapter("dir", {"root": root}, port=0) as srv:
        ns = RestNamespace(context_provider=Provider(), uri=f"http://127.0.0.1:{srv.port}",
                           delimiter="@")
        ns.create_table(CreateTableRequest(id=["top"]), _ipc(_table(1)))
        assert ns.list_tables(ListTablesRequest(id=[])).tables == ["top"]
    assert seen == ["create_table", "list_tables"]
    assert srv.port == 0  # stopped: the port is released


def test_racing_creates_of_one_id_have_one_winner(root):
    """lancenb's merge-insert rebases concurrent inserts like appends; the manifest must
    still hold one row per id (the earliest commit wins, the others report the id taken)."""
    import threading

    DirectoryNamespace(root=root).create_namespace(CreateNamespaceRequest(id=["seed"]))
    outcomes = []

    def create(name):
        try:
            DirectoryNamespace(root=root).create_namespace(CreateNamespaceRequest(id=[name]))
            outcomes.append((name, "ok"))
        except nserr.NamespaceAlreadyExistsError:
            outcomes.append((name, "taken"))

    threads = [threading.Thread(target=create, args=(n,))
               for n in ["same"] * 5 + ["x1", "x2", "x3"]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(o for n, o in outcomes if n == "same") == ["ok"] + ["taken"] * 4
    assert all(o == "ok" for n, o in outcomes if n != "same")
    ids = lance.dataset(root + "/__manifest").to_table()["object_id"].to_pylist()
    assert sorted(ids) == ["same", "seed", "x1", "x2", "x3"]
    assert _namespaces(pylance_ns.DirectoryNamespace(root=root), []) == \
        ["same", "seed", "x1", "x2", "x3"]


def test_create_modes_and_connect(root):
    ns = lancenb.namespace.connect("dir", {"root": root})
    assert isinstance(ns, DirectoryNamespace)
    ns.create_namespace(CreateNamespaceRequest(id=["m"], properties={"a": "1"}))
    kept = ns.create_namespace(CreateNamespaceRequest(id=["m"], mode="ExistOk"))
    assert kept.properties == {"a": "1"}
    first = ns.create_table(CreateTableRequest(id=["m", "t"]), _ipc(_table(3)))
    same = ns.create_table(CreateTableRequest(id=["m", "t"], mode="exist_ok"), _ipc(_table(1)))
    assert same.location == first.location and same.version == 1
    over = ns.create_table(CreateTableRequest(id=["m", "t"], mode="overwrite"), _ipc(_table(1)))
    assert over.location == first.location and over.version == 2
    assert lance.dataset(over.location).count_rows() == 1
    with pytest.raises(nserr.UnsupportedOperationError, match="supported: create"):
        ns.create_table(CreateTableRequest(id=["m", "u"], mode="replace"), _ipc(_table(1)))


def test_detailed_describe_equals_pylances(root):
    tbl = pa.table({
        "id": pa.array([1, 2], pa.int64()), "s": ["a", "b"],
        "vec": pa.array([[1.0, 2.0]] * 2, pa.list_(pa.float32(), 2)),
        "st": pa.array([{"x": 1, "y": "q"}] * 2),
        "dec": pa.array([1, 2], pa.decimal128(10, 2)),
        "ts": pa.array([1, 2], pa.timestamp("us")),
        "ll": pa.array([[1], [2, 3]], pa.large_list(pa.int8())),
        "b": pa.array([b"x", None], pa.large_binary()),
    })
    theirs, ours = pylance_ns.DirectoryNamespace(root=root), DirectoryNamespace(root=root)
    theirs.create_namespace(CreateNamespaceRequest(id=["n"]))
    lance.write_dataset(tbl, namespace_client=theirs, table_id=["n", "t"])
    theirs.declare_table(DeclareTableRequest(id=["n", "later"]))
    for tid in (["n", "t"], ["n", "later"]):
        req = DescribeTableRequest(id=tid, load_detailed_metadata=True)
        a, b = theirs.describe_table(req), ours.describe_table(req)
        assert (b.version, b.var_schema, b.is_only_declared) == \
            (a.version, a.var_schema, a.is_only_declared)
    assert ours.describe_table(DescribeTableRequest(id=["n", "t"])).version is None  # cheap
