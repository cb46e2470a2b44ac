"""Branches at the dataset level: which store a reference opens, and create_branch.

A reference is what pylance's ``checkout_version``, ``dataset(version=)``,
``create_branch(reference=)`` and ``tags.create(reference=)`` take: an int (a
version of the current branch), a str (a tag, which names a branch and a version),
or a tuple ``(branch, version)`` where branch None or ``"main"`` is the main line
and version None the branch's latest. The layout is :mod:`lancenb.table.branches`.
"""

from __future__ import annotations

import os

from lancenb._proto import transaction_pb2
from lancenb._version import __version__
from lancenb.errors import DatasetNotFoundError, InvalidInputError
from lancenb.table.bases import BRANCH_DIR
from lancenb.table.branches import (
    BRANCH_SUBDIRS,
    MAIN,
    Branches,
    branch_file_rel,
    branch_manifest,
    branch_rel,
    check_branch_name,
    new_identifier,
    record_bytes,
)
from lancenb.table.commit import commit, latest_version, open_store, put_new_object
from lancenb.table.tags import Tags
from lancenb.table.transaction import Op, Transaction

__all__ = ["branch_store", "root_of", "resolve_reference", "create_branch", "shallow_clone"]


def branch_store(root_store, name: str | None):
    """The store of branch ``name`` (the root store itself for the main line)."""
    if name is None:
        return root_store
    uri = f"{root_store.uri.rstrip('/')}/{branch_rel(name)}"
    return open_store(uri, root_store.storage_options, root_store.commit_lock, None)


def root_of(store, branch: str):
    """The main root's store of a dataset opened at its branch ``branch`` directory."""
    suffix = f"/{BRANCH_DIR}/{branch}"
    uri = store.uri.rstrip("/")
    if not uri.endswith(suffix):
        raise InvalidInputError(f"dataset {store.uri!r} holds versions of branch {branch!r} "
                                f"but is not at {{root}}{suffix}: open it through its root")
    return open_store(uri[: -len(suffix)], store.storage_options, store.commit_lock, None)


def _branch_name(b):
    if b is None or b == MAIN:
        return None
    if not isinstance(b, str):
        raise InvalidInputError(f"a branch is a name (or None for main), not {b!r}")
    return b


def resolve_reference(root_store, branch, ref):
    """``(branch, version)`` for reference ``ref`` read on ``branch`` (version None:
    the branch's latest)."""
    if ref is None or isinstance(ref, int) and not isinstance(ref, bool):
        return branch, ref
    if isinstance(ref, tuple):
        if len(ref) != 2:
            raise InvalidInputError(f"a version reference tuple is (branch, version), not "
                                    f"{ref!r}")
        b, v = ref
        if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
            raise InvalidInputError(f"version in {ref!r} must be an int or None")
        b = _branch_name(b)
        if b is not None:
            Branches(root_store).get(b)  # (DatasetNotFoundError naming it when absent)
        return b, v
    if isinstance(ref, str):
        if ref.isdigit():
            return branch, int(ref)
        b, v = Tags(root_store).get_ref(ref)
        return _branch_name(b), v
    raise InvalidInputError(f"a version reference is an int, a tag name or a (branch, "
                            f"version) tuple, not {type(ref).__name__}")


def create_branch(ds, name: str, reference=None):
    """Create branch ``name`` at ``reference`` of ``ds`` (default: ``ds``'s version on
    its branch); return the branch's dataset at its first version.

    The branch's first manifest is committed first (put-if-absent), then its record
    (put-if-absent): a crash in between leaves versions no record names, which is no
    branch; creating the name again removes them first. The branch shares its
    source's files through a base path, so nothing else is written."""
    root = ds.snapshot.root_store
    branches = Branches(root)

    check_branch_name(name)
    if root.exists(branch_file_rel(name)):
        raise InvalidInputError(f"branch {name!r} already exists in {root.uri!r}")
    if reference is None:
        src_branch, version = ds.snapshot.branch, ds.version
    else:
        src_branch, version = resolve_reference(root, ds.snapshot.branch, reference)
    src = ds.checkout_version((src_branch, version))
    target = branch_store(root, name)
    v, _ = latest_version(target)
    if v:  # versions no record names: a creation that died before its record
        for sub in BRANCH_SUBDIRS:
            p = target.path(sub)
            if target.fs.exists(p):
                target.fs.rm(p, recursive=True)
    src_root = src.snapshot.store.uri_of("")
    if src.snapshot.store.local:
        src_root = os.path.abspath(src_root)
    m = branch_manifest(src.manifest, name, src_root)
    op = transaction_pb2.Transaction.Clone(is_shallow=True, ref_version=src.version,
                                           ref_path=str(src_root), branch_name=name)
    if src_branch is not None:
        op.ref_name = src_branch
    txn = Transaction(src.version, Op.CLONE, op)
    txn.restore_manifest = m
    txn.clone_version = src.version
    txn.create_only = True
    mf = commit(target, txn, v2_names=True, data_format=src.data_storage_version,
                writer_version=__version__, written=[])
    parent = branches.get(src_branch) if src_branch is not None else None
    rec = record_bytes(src_branch, src.version, src.snapshot.manifest.size,
                       new_identifier(parent, src.version))
    if not put_new_object(root, branch_file_rel(name), rec):
        raise InvalidInputError(f"branch {name!r} was created concurrently in {root.uri!r}")
    return type(ds)(target.uri, _store=target, _manifest=mf, session=ds.session(),
                    _root_store=root, _branch=name)


def check_exists(root_store, name: str) -> None:
    """``DatasetNotFoundError`` unless branch ``name`` exists."""
    if not root_store.exists(branch_file_rel(name)):
        raise DatasetNotFoundError(f"dataset {root_store.uri!r} has no branch {name!r}")


def shallow_clone(ds, target_path, reference=None, storage_options=None, **kwargs):
    """A new dataset at ``target_path`` whose first version is ``reference`` of ``ds``
    (pylance's ``shallow_clone``; ``version=`` is its older keyword): the source's
    manifest, its files named through a base path at the source's root, under the
    same version number, committed with a shallow ``Clone`` transaction. Only
    metadata is written; the source root is trusted for reads in this process."""
    from lancenb.table.bases import trust_bases

    if reference is None:
        reference = kwargs.pop("version", None)
    if kwargs:
        raise TypeError(f"shallow_clone got unexpected keyword(s) {sorted(kwargs)}")
    if reference is None:
        raise InvalidInputError("shallow_clone needs a reference: a version, a tag or "
                                "(branch, version)")
    src_branch, version = resolve_reference(ds.snapshot.root_store, ds.snapshot.branch, reference)
    src = ds.checkout_version((src_branch, version))
    opts = storage_options if storage_options is not None else ds.snapshot.store.storage_options
    target = open_store(os.fspath(target_path), opts, None, None)
    src_root = src.snapshot.store.uri_of("")
    if src.snapshot.store.local:
        src_root = os.path.abspath(src_root)
    m = branch_manifest(src.manifest, None, src_root)
    op = transaction_pb2.Transaction.Clone(is_shallow=True, ref_version=src.version,
                                           ref_path=str(src_root))
    if src_branch is not None:
        op.ref_name = src_branch
    txn = Transaction(src.version, Op.CLONE, op)
    txn.restore_manifest = m
    txn.clone_version = src.version
    txn.create_only = True  # never over an existing dataset
    trust_bases(target, [src_root])
    mf = commit(target, txn, v2_names=True, data_format=src.data_storage_version,
                writer_version=__version__, written=[])
    return type(ds)(target.uri, _store=target, _manifest=mf, session=ds.session())
