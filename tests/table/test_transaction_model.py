"""The one transaction model (``lancenb.table.transaction``) and the commit handler
chosen once per store (``lancenb.table.handlers``), checked against pylance.

Every transaction pylance writes is read back into lancenb's model (its kind, the
fragments it adds, the fragments it changes) and into lancenb's public
``LanceOperation`` wrappers, which must name the operation pylance names; the
transactions lancenb writes are read by pylance the same way.
"""

from __future__ import annotations

import ast
import pathlib

import lance
import pyarrow as pa
import pytest

import lancenb
from lancenb._proto import transaction_pb2
from lancenb.table.commit import list_versions, load_manifest, load_transaction, open_store
from lancenb.table.external import SqliteManifestStore
from lancenb.table.handlers import ExternalManifestCommit, PutIfAbsentCommit, handler_of
from lancenb.table.transaction import (
    Op,
    Transaction,
    modified_fragment_ids,
    new_fragments,
    removed_fragment_ids,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _t(lo: int, hi: int) -> pa.Table:
    return pa.table({"a": pa.array(range(lo, hi), pa.int64()),
                     "b": pa.array([f"s{i}" for i in range(lo, hi)])})


def _history(lib, uri: str) -> None:
    """One version of each operation kind both libraries write the same way."""
    lib.write_dataset(_t(0, 30), uri, max_rows_per_file=10)              # 1 overwrite
    lib.write_dataset(_t(30, 40), uri, mode="append")                    # 2 append
    ds = lib.dataset(uri)
    ds.delete("a < 5 OR a >= 35")                                        # 3 delete
    ds = lib.dataset(uri)
    ds.update({"b": "'x'"}, where="a = 12")                              # 4 update
    ds = lib.dataset(uri)
    ds.add_columns({"c": "a * 2"})                                       # 5 merge
    ds = lib.dataset(uri)
    ds.drop_columns(["c"])                                               # 6 project
    ds = lib.dataset(uri)
    ds.optimize.compact_files(target_rows_per_fragment=100)              # 7-8 (reserve,) rewrite
    ds = lib.dataset(uri)
    ds.update_config({"k": "v"})                                         # update config
    lib.dataset(uri, version=2).restore()                                # restore


def _pbs(uri: str) -> list:
    store = open_store(uri)
    versions, v2 = list_versions(store)
    return [load_transaction(store, load_manifest(store, v, v2)) for v in versions]


def test_op_names_every_operation_of_the_protobuf():
    oneof = transaction_pb2.Transaction.DESCRIPTOR.oneofs_by_name["operation"]
    assert {f.name for f in oneof.fields} == {op.value for op in Op}
    assert f"{Op.UPDATE_CONFIG}" == "update_config" and str(Op.APPEND) == "append"


@pytest.mark.parametrize("writer", ["pylance", "lancenb"])
def test_transactions_round_trip_and_match_pylance(tmp_path, writer):
    uri = str(tmp_path / "ds")
    _history(lance if writer == "pylance" else lancenb, uri)
    theirs = lance.dataset(uri)
    pbs = _pbs(uri)
    assert len(pbs) == theirs.version
    for v, pb in enumerate(pbs, start=1):
        assert pb is not None, v
        txn = Transaction.from_pb(pb)
        assert txn.to_pb().SerializeToString() == pb.SerializeToString()
        assert txn.op is Op.of(pb) and txn.read_version == pb.read_version
        # the public wrapper names the operation pylance names, and its fragments
        public = lancenb.dataset(uri).read_transaction(v)
        expected = theirs.read_transaction(v)
        assert type(public.operation).__name__ == type(expected.operation).__name__, v
        assert public.read_version == expected.read_version and public.uuid == expected.uuid
        added = sorted((f.physical_rows, [d.path for d in f.files])
                       for f in new_fragments(pb))
        op = expected.operation
        if hasattr(op, "fragments"):
            want = op.fragments
        elif hasattr(op, "groups"):
            want = [f for g in op.groups for f in g.new_fragments]
        else:
            want = getattr(op, "new_fragments", [])
        assert added == sorted((f.physical_rows, [d.path for d in f.files]) for f in want), v
        if txn.op in (Op.DELETE, Op.UPDATE):
            gone = set(getattr(op, "deleted_fragment_ids", None) or
                       getattr(op, "removed_fragment_ids", []))
            assert removed_fragment_ids(pb) == gone
            assert modified_fragment_ids(pb) == gone | {f.id for f in op.updated_fragments}
        if txn.op is Op.REWRITE:
            assert modified_fragment_ids(pb) == {f.id for g in op.groups
                                                 for f in g.old_fragments}


def test_a_string_kind_is_the_typed_kind():
    txn = Transaction(3, "delete", transaction_pb2.Transaction.Delete(
        deleted_fragment_ids=[4]))
    assert txn.op is Op.DELETE and txn.message.deleted_fragment_ids == [4]
    assert removed_fragment_ids(txn.pb) == {4} == modified_fragment_ids(txn.pb)
    assert new_fragments(txn.pb) == []


def test_commit_handler_is_chosen_once_when_the_store_opens(tmp_path):
    local = open_store(str(tmp_path / "a"))
    assert isinstance(local.commit_handler, PutIfAbsentCommit)
    assert local.commit_handler.kind == "link"
    locked = open_store(str(tmp_path / "b"), commit_lock=lambda v: _NoLock())
    assert locked.commit_handler.kind == "commit_lock"
    mem = open_store("memory://tx-model-handler")
    assert mem.commit_handler.kind == "process"
    ext = SqliteManifestStore(str(tmp_path / "m.db"))
    external = open_store(str(tmp_path / "c"), manifest_store=ext)
    assert isinstance(external.commit_handler, ExternalManifestCommit)
    assert handler_of(external) is external.commit_handler


class _NoLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("how", ["link", "commit_lock", "external"])
def test_each_handler_commits_what_pylance_reads(tmp_path, how):
    uri = str(tmp_path / "ds")
    kw = {"commit_lock": lambda v: _NoLock()} if how == "commit_lock" else \
        {"manifest_store": SqliteManifestStore(str(tmp_path / "m.db"))} \
        if how == "external" else {}
    ds = lancenb.write_dataset(_t(0, 10), uri, **kw)
    ds = lancenb.write_dataset(_t(10, 20), uri, mode="append", **kw)
    ds.delete("a < 3")
    ds.add_columns({"c": "a + 1"})
    assert ds.version == 4
    got = lance.dataset(uri).to_table().sort_by("a")
    assert got.column("a").to_pylist() == list(range(3, 20))
    assert got.column("c").to_pylist() == list(range(4, 21))


def test_write_modules_commit_through_the_snapshot():
    """No write module reaches into the dataset's private commit method."""
    bad = []
    for p in sorted((ROOT / "lancenb" / "dataset" / "write").glob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "_commit" and not (
                    isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                bad.append(f"{p.name}:{node.lineno}")
    assert bad == []
