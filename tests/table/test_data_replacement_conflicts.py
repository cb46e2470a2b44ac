"""A data replacement committed over a concurrent transaction, decided as pylance does.

Version 2 of the table holds columns ``a`` (field 0) and ``b`` (field 1) in separate
data files of two fragments (``b`` added by ``add_columns``). Another transaction is
committed first on read version 2; then a ``DataReplacement`` of one column in one
fragment, also built on version 2, is committed by lancenb: it must be committed
(rebased) or refused with the kind of conflict pylance gives, and leave the table
pylance leaves. The reverse order (the replacement first, the other one second) is
checked the same way.
"""

from __future__ import annotations

import json
import os
import uuid

import lance
import lance.commit
import pyarrow as pa
import pytest

import lancenb
from lancenb.errors import CommitConflictError, RetryableCommitConflictError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

READ = 2  # the version both transactions are built on


def _file(uri: str, field: int, values) -> dict:
    """A staged data file holding one column (for field id ``field``)."""
    name = f"{uuid.uuid4()}.lance"
    with lance.file.LanceFileWriter(f"{uri}/data/{name}") as w:
        w.write_batch(pa.table({"x": pa.array(values, pa.int64())}))
    return {"path": name, "fields": [field]}


def _prepare(uri: str) -> dict:
    lance.write_dataset(pa.table({"a": pa.array(range(20), pa.int64())}), uri,
                        max_rows_per_file=10)
    ds = lance.dataset(uri)
    ds.add_columns({"b": "a + 100"})  # version 2
    ds = lance.dataset(uri)
    f0, f1 = ds.get_fragments()
    return {
        "ds": ds, "f0": f0, "f1": f1,
        "a0": _file(uri, 0, range(200, 210)), "b0": _file(uri, 1, range(300, 310)),
        "b0x": _file(uri, 1, range(400, 410)), "b1": _file(uri, 1, range(500, 510)),
        "new": lance.LanceFragment.create(uri, pa.table({
            "a": pa.array([90, 91], pa.int64()), "b": pa.array([0, 0], pa.int64())})),
        "del0": f0.delete("a < 3"),
    }


def _replacement(lib, staged: dict, key: str, frag: int):
    f = staged[key]
    df = lib.fragment.DataFile(path=f["path"], fields=f["fields"], column_indices=[0],
                               file_major_version=2, file_minor_version=2)
    L = lib.LanceOperation
    return L.DataReplacement([L.DataReplacementGroup(frag, df)])


def _other(lib, name: str, uri: str, staged: dict, handle):
    """Commit the concurrent operation ``name`` with ``lib`` (read version 2; an index
    is built through ``handle``, a dataset opened at version 2)."""
    L = lib.LanceOperation

    def fm(frag):  # a pylance fragment or its metadata, in ``lib``
        meta = frag.metadata if isinstance(frag, lance.LanceFragment) else frag
        return lib.fragment.FragmentMetadata.from_json(json.dumps(meta.to_json()))

    if name.startswith("index_"):
        handle.create_scalar_index(name[len("index_"):], "BTREE")
        return
    if name.startswith("replace_"):
        key, frag = {"replace_a0": ("a0", 0), "replace_b0": ("b0x", 0),
                     "replace_b1": ("b1", 1)}[name]
        op = _replacement(lib, staged, key, frag)
    elif name == "append":
        op = L.Append([fm(staged["new"])])
    elif name == "delete0":
        op = L.Delete([fm(staged["del0"])], [], "a < 3")
    elif name == "delete_frag1":
        op = L.Delete([], [staged["f1"].fragment_id], "a >= 10")
    elif name.startswith("rewrite"):
        old = staged["f" + name[-1]]
        new = lance.LanceFragment.create(uri, staged["ds"].scanner(fragments=[old]).to_table())
        op = L.Rewrite([L.RewriteGroup([fm(old)], [fm(new)])], [])
    elif name == "overwrite":
        op = L.Overwrite(staged["ds"].schema, [fm(staged["new"])])
    elif name == "restore":
        op = L.Restore(1)
    elif name == "config":
        op = L.UpdateConfig(config_updates=L.UpdateMap({"k": "v"}))
    else:
        raise AssertionError(name)
    lib.LanceDataset.commit(uri, op, read_version=READ)


def _try(fn):
    try:
        fn()
        return "ok"
    except RetryableCommitConflictError:
        return "retryable"
    except CommitConflictError:
        return "conflict"
    except lance.commit.CommitConflictError as e:
        return "retryable" if e.retryable else "conflict"


def _state(uri: str):
    ds = lance.dataset(uri)
    t = ds.to_table()
    return ds.version, t.sort_by([(c, "ascending") for c in t.column_names]).to_pydict()


def _run(uri: str, first_lib, second_lib, other: str, replaced: tuple, *, replace_first: bool):
    staged = _prepare(uri)
    key, frag = replaced

    def replace(lib):
        lib.LanceDataset.commit(uri, _replacement(lib, staged, key, frag), read_version=READ)

    if replace_first:
        handle = second_lib.dataset(uri)
        assert _try(lambda: replace(first_lib)) == "ok"
        outcome = _try(lambda: _other(second_lib, other, uri, staged, handle))
    else:
        handle = first_lib.dataset(uri)
        assert _try(lambda: _other(first_lib, other, uri, staged, handle)) == "ok"
        outcome = _try(lambda: replace(second_lib))
    return outcome, _state(uri)


OTHERS = ["append", "delete0", "delete_frag1", "rewrite0", "rewrite1", "overwrite", "restore",
          "config", "index_a", "index_b", "replace_a0", "replace_b0", "replace_b1"]
REPLACED = {"b0": ("b0", 0), "a0": ("a0", 0)}


@pytest.mark.parametrize("replaced", sorted(REPLACED))
@pytest.mark.parametrize("other", OTHERS)
def test_replacement_after_concurrent_commit_like_pylance(tmp_path, other, replaced):
    """The replacement committed second, over ``other`` (pylance: a replacement of a
    column a concurrent index covers is retryable, of another column compatible; one
    of the same column in the same fragment retryable; delete, append and config
    changes compatible; a rewrite of the fragment retryable; overwrite and restore
    incompatible)."""
    r = REPLACED[replaced]
    want = _run(str(tmp_path / "oracle"), lance, lance, other, r, replace_first=False)
    got = _run(str(tmp_path / "lance_first"), lance, lancenb, other, r, replace_first=False)
    assert got == want, f"pylance committed {other}, then lancenb the replacement"
    got = _run(str(tmp_path / "lancenb"), lancenb, lancenb, other, r, replace_first=False)
    assert got == want, f"lancenb committed {other}, then lancenb the replacement"


@pytest.mark.parametrize("replaced", sorted(REPLACED))
@pytest.mark.parametrize("other", [o for o in OTHERS if not o.startswith("replace_")])
def test_concurrent_commit_after_replacement_like_pylance(tmp_path, other, replaced):
    """The other order: the replacement committed first, then ``other``."""
    r = REPLACED[replaced]
    want = _run(str(tmp_path / "oracle"), lance, lance, other, r, replace_first=True)
    got = _run(str(tmp_path / "lancenb"), lancenb, lancenb, other, r, replace_first=True)
    assert got == want, f"lancenb committed the replacement, then lancenb {other}"
    assert os.path.isdir(str(tmp_path / "lancenb"))
