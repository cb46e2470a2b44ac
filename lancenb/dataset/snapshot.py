"""The snapshot contract: what the read and write modules need of one dataset version.

A :class:`~lancenb.dataset.LanceDataset` is pylance's user-facing object; the modules
that scan, take, write and evolve it work on its ``snapshot`` instead of its private
attributes: the store the version lives in, its manifest, its schema and the per-version
caches. A dataset that moves to another version (a commit, ``checkout_latest``) gets a
new snapshot; a snapshot never changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lancenb.io.store import ObjectStore

__all__ = ["Snapshot"]


@dataclass(frozen=True)
class Snapshot:
    """One version of a dataset, as the layers below the API see it.

    ``manifest`` is the loaded manifest (``.manifest``: the protobuf, ``.name``,
    ``.size``, ``index_section_bytes()``); ``schema`` the Arrow schema as stored (blob
    columns as their descriptions); ``top_fields`` the top-level field protobufs with
    their subtrees; ``cache`` per-version memo tables (fragment lists, deletion vectors,
    row-id sequences); ``open_file(path, legacy=False)`` the shared reader of a data
    file of this version; ``branch`` the branch it is on (None: main) and
    ``root_store`` the store of the dataset's root (``store`` itself on main).
    ``commit(txn, written=(), **retries)`` commits a
    :class:`~lancenb.table.transaction.Transaction` built on this version through the
    store's commit handler (``written``: the files it staged; ``retries``:
    ``max_retries``, ``retry_timeout``) and moves the dataset to the new version: the
    one way the write modules commit.
    """

    uri: str
    version: int
    store: ObjectStore
    manifest: Any
    schema: pa.Schema
    top_fields: Any
    cache: dict
    open_file: Callable[..., Any]
    branch: str | None = None
    root_store: ObjectStore | None = None
    commit: Callable[..., None] | None = None
