"""Base paths: data of one version stored under other roots (branches, multi-base).

A manifest may list ``base_paths`` (``BasePath {id, name, is_dataset_root, path}``);
a data file or deletion file whose ``base_id`` is set lives under that base instead
of the dataset's own root: ``{path}/data/{name}`` when ``is_dataset_root`` (the
base is a dataset root, as the main root is for a branch), else ``{path}/{name}``.
A branch of pylance 14 is such a dataset: its first manifest is the source
version's, with the source root added as base 0 and every inherited file given
``base_id`` 0.

The paths come from a manifest. As pylance does, lancenb reads every base a manifest
lists (a dataset made elsewhere, a shallow clone, a branch), with these checks: a base
is a path (no NUL, no ``::``), on the store's own filesystem, and a file of a base is
one object name inside it (no ``/``, no ``..``), so a manifest cannot name anything but
the direct contents of its bases. A service that opens datasets it does not trust can
confine reads further with :func:`confine_bases` (or ``LANCENB_CONFINE_BASES=1``): then
a base is used only when it resolves to a root the caller allowed (the dataset's main
root, a branch under ``{root}/tree/``, a base this process wrote, or one named to
:func:`allow_bases`), and anything else is a :class:`~lancenb.errors.CorruptFileError`
naming the manifest and the path. Objects of other bases are read through the dataset's
store (``ObjectStore.redirects``) and never deleted through it.

Example: base 0 ``/data/ds`` (``is_dataset_root``) and a data file ``ab.lance`` with
``base_id`` 0 read ``/data/ds/data/ab.lance``; under :func:`confine_bases`, a base
``/etc`` nobody allowed is refused.
"""

from __future__ import annotations

import os
import posixpath

from lancenb.errors import CorruptFileError, NotSupportedError
from lancenb.io.paths import check_name
from lancenb.table.deletion import deletion_path

__all__ = ["BRANCH_DIR", "normalise_root", "allowed_root", "register_bases", "base_root_of",
           "trust_bases", "allow_bases", "confine_bases", "trusted_roots", "new_base_paths",
           "apply_bases", "build_stand_in"]

BRANCH_DIR = "tree"  # branches live under {root}/tree/{branch name}


def normalise_root(fs, path: str) -> str:
    """``path`` as a filesystem root for comparison (absolute, no trailing ``/``)."""
    from lancenb.io import resolve

    if "://" in path:
        other_fs, path = resolve(path)
        if _proto(other_fs) != _proto(fs):
            raise NotSupportedError(f"base path {path!r} is on another filesystem "
                                    f"({_proto(other_fs)}) than the dataset ({_proto(fs)})")
    if _proto(fs) in ("file", "local") or "local" in _proto(fs):
        path = os.path.abspath(path)
    else:
        path = posixpath.normpath(path) if path else path
    return path.rstrip("/") or "/"


def _proto(fs) -> str:
    p = getattr(fs, "protocol", "file")
    return p[0] if isinstance(p, (tuple, list)) else str(p)


def allowed_root(root: str, main_root: str, extra: set[str]) -> bool:
    """Whether ``root`` (normalised) is the main root, a branch directory under it, or
    one of the ``extra`` roots the user gave."""
    if root == main_root or root in extra:
        return True
    prefix = f"{main_root.rstrip('/')}/{BRANCH_DIR}/"
    if not root.startswith(prefix):
        return False
    rest = root[len(prefix):]
    return bool(rest) and all(s not in ("", ".", "..") for s in rest.split("/"))


def base_root_of(store, bp, source: str, main_root: str, extra: set[str]) -> str:
    """The confined filesystem root of base path ``bp`` (a ``BasePath`` message)."""
    if not bp.path or "\x00" in bp.path or "::" in bp.path:
        raise CorruptFileError(f"{source}: base path {bp.id} {bp.path!r} is not a path")
    root = normalise_root(store.fs, bp.path)
    if _confined() and not allowed_root(root, main_root, extra):
        raise CorruptFileError(
            f"{source}: base path {bp.id} {bp.path!r} is outside the dataset "
            f"{main_root!r} and its branches, and was not given as a base; with "
            f"confine_bases on, lancenb reads data only under roots it was given (trust "
            f"it with lancenb.table.bases.allow_bases([...]))")
    return root


_CONFINE: list[bool | None] = [None]  # None: as LANCENB_CONFINE_BASES says


def _confined() -> bool:
    if _CONFINE[0] is not None:
        return _CONFINE[0]
    return os.environ.get("LANCENB_CONFINE_BASES", "").strip().lower() not in (
        "", "0", "false", "no")


def confine_bases(on: bool | None = True) -> None:
    """Read base paths only under roots this process allowed (``on=True``), or every base
    a manifest lists, as pylance does (``False``, the default); ``None`` goes back to
    the ``LANCENB_CONFINE_BASES`` environment variable. For services that open datasets
    they do not trust: a manifest can then not make lancenb read outside the dataset,
    its branches and the bases named to :func:`allow_bases`.

    Examples
    --------
    >>> confine_bases(True)  # doctest: +SKIP
    >>> allow_bases(["/data/cold"])  # doctest: +SKIP
    """
    _CONFINE[0] = None if on is None else bool(on)


def register_bases(store, manifest, source: str, *, main_root: str | None = None,
                   extra: set[str] | frozenset = frozenset()) -> None:
    """Point ``store`` at the objects of ``manifest``'s files that live under other
    base paths (checked by :func:`base_root_of`)."""
    if not manifest.base_paths:
        return
    main_root = main_root or store.root
    extra = set(extra) | trusted_roots(store)
    roots = {}
    for bp in manifest.base_paths:
        roots[int(bp.id)] = (base_root_of(store, bp, source, main_root, set(extra)),
                             bool(bp.is_dataset_root))
    own = store.root.rstrip("/")
    for f in manifest.fragments:
        for d in f.files:
            if not d.HasField("base_id"):
                continue
            root, is_root = _lookup(roots, d.base_id, source)
            name = check_name(d.path, what="data file", source=source)
            target = f"{root}/data/{name}" if is_root else f"{root}/{name}"
            if root != own:
                store.redirects[f"data/{name}"] = target
        if f.HasField("deletion_file") and f.deletion_file.HasField("base_id"):
            root, _ = _lookup(roots, f.deletion_file.base_id, source)
            rel = deletion_path(int(f.id), f.deletion_file)
            if root != own:
                store.redirects[rel] = f"{root}/{rel}"


def _lookup(roots: dict, base_id: int, source: str):
    try:
        return roots[int(base_id)]
    except KeyError:
        raise CorruptFileError(f"{source}: a file names base path {base_id}, which the "
                               f"manifest does not list") from None


# -- bases the user gave ------------------------------------------------------------------

_TRUSTED: set[tuple[str, str]] = set()  # (filesystem protocol, normalised root)


def trust_bases(store, paths) -> None:
    """Allow the base roots ``paths`` for datasets on ``store``'s filesystem in this
    process: the bases a user named to ``write_dataset(initial_bases=)`` or
    ``add_bases``, or to :func:`lancenb.allow_bases` before opening a dataset whose
    manifest lists them."""
    for p in paths:
        _TRUSTED.add((_proto(store.fs), normalise_root(store.fs, p)))


def allow_bases(paths, storage_options=None) -> None:
    """Trust the base paths ``paths`` (URIs or local paths) for reads in this process:
    what a user of :func:`confine_bases` calls before opening a multi-base dataset whose
    bases another process registered.

    Examples
    --------
    >>> allow_bases(["/data/hot", "/data/cold"])  # doctest: +SKIP
    """
    from lancenb.io import resolve

    for p in paths:
        fs, _ = resolve(str(p), storage_options)
        _TRUSTED.add((_proto(fs), normalise_root(fs, str(p))))


def trusted_roots(store) -> set[str]:
    """The roots trusted (:func:`trust_bases`) on ``store``'s filesystem."""
    proto = _proto(store.fs)
    return {root for p, root in _TRUSTED if p == proto}


def new_base_paths(existing, given) -> list:
    """``BasePath`` messages for ``given`` (``DatasetBasePath``-like objects with
    ``path``, ``name``, ``is_dataset_root``, ``id``) next to the ``existing`` ones:
    ids from the largest existing + 1 unless given; a name or path already there, or
    twice in ``given``, is an ``InvalidInputError``."""
    from lancenb._proto import table_pb2
    from lancenb.errors import InvalidInputError

    names = {b.name for b in existing if b.HasField("name")}
    paths = {b.path for b in existing}
    ids = {int(b.id) for b in existing}
    nxt = max(ids, default=0) + 1
    out = []
    for g in given:
        path = str(getattr(g, "path", g))
        name = getattr(g, "name", None)
        if name is not None and name in names:
            raise InvalidInputError(f"base path name {name!r} already exists")
        if path in paths:
            raise InvalidInputError(f"base path {path!r} already exists")
        bid = getattr(g, "id", None)
        if bid is None or int(bid) in ids:
            bid = nxt
        nxt = max(nxt, int(bid)) + 1
        msg = table_pb2.BasePath(id=int(bid), path=path,
                                 is_dataset_root=bool(getattr(g, "is_dataset_root", False)))
        if name is not None:
            msg.name = name
        names.add(name)
        paths.add(path)
        ids.add(int(bid))
        out.append(msg)
    return out


def apply_bases(m, base, txn) -> None:
    """Base paths of the manifest ``m`` that ``txn`` built on ``base``: an overwrite
    keeps the base's and adds its ``initial_bases`` (pylance's rule), an
    ``UpdateBases`` adds its ``new_bases``; other operations copied the base's."""
    from lancenb.table.transaction import Op

    op = txn.op
    if op is Op.OVERWRITE:
        del m.base_paths[:]
        if base is not None:
            m.base_paths.extend(base.base_paths)
        m.base_paths.extend(new_base_paths(m.base_paths, txn.pb.overwrite.initial_bases))
    elif op is Op.UPDATE_BASES:
        m.base_paths.extend(new_base_paths(m.base_paths, txn.pb.update_bases.new_bases))
    else:
        return
    from lancenb.table.manifest import FLAG_BASE_PATHS

    if m.base_paths:
        m.reader_feature_flags |= FLAG_BASE_PATHS
        m.writer_feature_flags |= FLAG_BASE_PATHS


def build_stand_in(txn):
    """For ``UpdateBases``, which changes nothing but the base paths: a no-op
    ``UpdateConfig`` with the same read version and uuid, to build the manifest and
    carry the index section as for any metadata-only commit."""
    from lancenb.table.transaction import Op, Transaction

    if txn.op is not Op.UPDATE_BASES:
        return txn
    from lancenb._proto import transaction_pb2

    stand = Transaction(txn.read_version, Op.UPDATE_CONFIG,
                        transaction_pb2.Transaction.UpdateConfig())
    stand.pb.uuid = txn.pb.uuid
    return stand


def base_file_paths(store, manifest, main_root: str | None = None) -> set[str]:
    """Filesystem paths of the data and deletion files ``manifest`` holds on other
    base paths (outside ``store``'s root) whose base is confined (a base that is not
    is left out: nothing is ever deleted there)."""
    main_root = main_root or store.root
    extra = trusted_roots(store)
    own = store.root.rstrip("/")
    roots = {}
    for bp in manifest.base_paths:
        try:
            roots[int(bp.id)] = (base_root_of(store, bp, "cleanup", main_root, extra),
                                 bool(bp.is_dataset_root))
        except (CorruptFileError, NotSupportedError):
            continue
    out = set()
    for f in manifest.fragments:
        for d in f.files:
            if d.HasField("base_id") and int(d.base_id) in roots:
                root, is_root = roots[int(d.base_id)]
                if root != own and is_confined_name(d.path):
                    out.add(f"{root}/data/{d.path}" if is_root else f"{root}/{d.path}")
        df = f.deletion_file if f.HasField("deletion_file") else None
        if df is not None and df.HasField("base_id") and int(df.base_id) in roots:
            root, _ = roots[int(df.base_id)]
            if root != own:
                out.add(f"{root}/{deletion_path(int(f.id), df)}")
    return out


def is_confined_name(name) -> bool:
    from lancenb.io.paths import is_confined

    return is_confined(name, single=True)
