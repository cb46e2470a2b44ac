"""Writes to multi-base datasets: ``write_dataset(initial_bases=, target_bases=)``
and ``add_bases`` (pylance 14's API; the layout is :mod:`lancenb.table.bases`).

``initial_bases`` registers base paths when a write creates or overwrites the
dataset (an overwrite keeps the existing ones); ``target_bases`` (names or paths of
registered bases) says where the new data files go, one file per base in turn, as
pylance places them: ``{path}/{name}`` for a base that is not a dataset root,
``{path}/data/{name}`` for one that is. An entry naming the dataset's own root (its
URI) puts the primary storage in the rotation; ``target_all_bases`` rotates over every
registered base, after the primary storage unless it is ``False``. Without either, data
goes to the dataset's own ``data/``; deletion files always do. Every base the user
names here is trusted for reads in this process
(:func:`lancenb.table.bases.trust_bases`).
"""

from __future__ import annotations

import os

from lancenb._proto import table_pb2, transaction_pb2
from lancenb.errors import InvalidInputError
from lancenb.table.bases import new_base_paths, normalise_root, trust_bases
from lancenb.table.manifest import DATA_DIR

__all__ = ["BaseTargets", "PlacingStore", "base_path_pbs", "add_bases_txn", "placing"]


def base_path_pbs(existing, given) -> list:
    """``BasePath`` messages (ids assigned) for the ``DatasetBasePath`` list ``given``."""
    for g in given or ():
        if not hasattr(g, "path"):
            raise InvalidInputError(f"initial_bases/add_bases take DatasetBasePath objects, "
                                    f"not {type(g).__name__}")
    return new_base_paths(existing, list(given or ()))


class BaseTargets:
    """Where the data files of one write go: the registered base paths named by
    ``target_bases``, in turn. :meth:`place` is called with each new file's relative
    path (``data/{name}``) and points the store there; :meth:`mark` sets the
    ``base_id`` of the written ``DataFile`` messages."""

    def __init__(self, store, bases, target_bases=None, *, all_bases: bool | None = None):
        if target_bases and all_bases is not None:
            raise InvalidInputError("target_bases and target_all_bases cannot be combined")
        self._store = store
        by_name = {b.name: b for b in bases if b.HasField("name")}
        by_root = {normalise_root(store.fs, b.path): b for b in bases}
        own = normalise_root(store.fs, store.root)
        # a base message, or None for the dataset's own storage
        self._targets: list = []
        if all_bases is not None:
            self._targets = ([None] if all_bases else []) + sorted(bases, key=lambda b: b.id)
            if not self._targets:
                raise InvalidInputError("target_all_bases(include_primary=False): the "
                                        "dataset has no base paths")
        for t in target_bases or ():
            root = normalise_root(store.fs, str(t))
            b = by_name.get(t) or by_root.get(root)
            if b is None and root == own:
                self._targets.append(None)
                continue
            if b is None:
                known = sorted(by_name) or sorted(b.path for b in bases)
                raise InvalidInputError(f"target base {t!r} not found among the dataset's "
                                        f"base paths (it has {known})")
            self._targets.append(b)
        trust_bases(store, [b.path for b in self._targets if b is not None])
        self._next = 0
        self.placed: dict[str, int | None] = {}

    def place(self, name: str) -> None:
        """Send the data file ``name`` to the next target base."""
        b = self._targets[self._next % len(self._targets)]
        self._next += 1
        if b is None:  # the dataset's own data/
            self.placed[name] = None
            return
        root = normalise_root(self._store.fs, b.path)
        target = f"{root}/{DATA_DIR}/{name}" if b.is_dataset_root else f"{root}/{name}"
        if self._store.local:
            os.makedirs(os.path.dirname(target), exist_ok=True)
        self._store.redirects[f"{DATA_DIR}/{name}"] = target
        self._store.placed.add(f"{DATA_DIR}/{name}")  # (removed if the write fails)
        self.placed[name] = int(b.id)

    def mark(self, frags) -> None:
        """Set ``base_id`` on the written files that went to a base."""
        for f in frags:
            for d in f.files:
                if self.placed.get(d.path) is not None:
                    d.base_id = self.placed[d.path]


class PlacingStore:
    """The dataset's store, with each new data file's path sent to a target base the
    first time the writer asks for its URI (everything else is the store's)."""

    def __init__(self, store, targets: BaseTargets):
        self._store = store
        self._targets = targets

    def __getattr__(self, name):
        return getattr(self._store, name)

    def uri_of(self, rel: str) -> str:
        if rel.startswith(f"{DATA_DIR}/") and rel.endswith(".lance") and rel.count("/") == 1:
            name = rel.split("/", 1)[1]
            if name not in self._targets.placed:
                self._targets.place(name)
        return self._store.uri_of(rel)


def add_bases_txn(read_version: int, manifest, bases, properties=None):
    """The ``UpdateBases`` transaction adding ``bases`` (``DatasetBasePath`` objects)."""
    from lancenb.table.transaction import Op, Transaction

    if not bases:
        raise InvalidInputError("add_bases needs at least one DatasetBasePath")
    new = base_path_pbs(manifest.base_paths, bases)
    op = transaction_pb2.Transaction.UpdateBases()
    op.new_bases.extend(new)
    return Transaction(read_version, Op.UPDATE_BASES, op, properties=properties)


def initial_bases_pbs(base_manifest, initial_bases) -> list[table_pb2.BasePath]:
    """The ``BasePath`` messages of ``initial_bases`` next to the base manifest's."""
    existing = list(base_manifest.base_paths) if base_manifest is not None else []
    return base_path_pbs(existing, initial_bases)


def placing(store, bases, target_bases=None, all_bases: bool | None = None):
    """``(store to write new data files through, BaseTargets or None)`` for the base
    paths ``bases`` and the targets given (none: the store itself)."""
    if not target_bases and all_bases is None:
        return store, None
    targets = BaseTargets(store, list(bases), target_bases, all_bases=all_bases)
    return PlacingStore(store, targets), targets


def prepare(plan, mode: str, initial_bases, target_bases, target_all_bases=None):
    """``(store to write through, BaseTargets or None, initial BasePath messages)``
    for a write with ``initial_bases``/``target_bases``/``target_all_bases`` (``plan``:
    the write plan)."""
    base = plan.base.manifest if plan.base is not None else None
    init = []
    if initial_bases:
        if mode == "append" and base is not None:
            raise InvalidInputError("Cannot register new bases in Append mode: "
                                    "initial_bases is for mode='create' or 'overwrite'; use "
                                    "add_bases to register bases of an existing dataset")
        init = initial_bases_pbs(base if mode != "create" else None, initial_bases)
        trust_bases(plan.store, [b.path for b in init])
    known = (list(base.base_paths) if base is not None else []) + init
    store, targets = placing(plan.store, known, list(target_bases or ()), target_all_bases)
    return store, targets, init
