"""``DirectoryNamespace``: tables and child namespaces under one directory (local or an
object store), laid out as pylance's ``DirectoryNamespace`` lays them out, so either
library lists and opens the other's tables.

Layout under ``root``:

- ``__manifest/``: a Lance dataset listing tables and namespaces (:mod:`._manifest`).
- ``<name>.lance/``: a table of the root namespace (when directory listing is on, the
  default); such directories are tables even when the manifest does not list them.
- ``<8 hex digits>_<ns1$ns2$name>/``: a table of a child namespace (or of the root with
  directory listing off); the hex prefix is random, so dropping a table and creating one
  of the same name never meets the old files.
- ``<table dir>/.lance-reserved``: an empty file marking a declared table that has no
  version yet.

Child namespaces exist only as manifest rows; they have no directory of their own.

Properties (strings, as ``lance_namespace.connect("dir", {...})`` passes them):
``root`` (required), ``manifest_enabled`` and ``dir_listing_enabled`` (``"true"``
/``"false"``, both on by default), ``storage.<option>`` (object-store options).
"""

from __future__ import annotations

import io
import json
import secrets

import pyarrow as pa
from lance_namespace import (
    CreateNamespaceResponse,
    CreateTableResponse,
    DeclareTableRequest,
    DeclareTableResponse,
    DeregisterTableResponse,
    DescribeNamespaceResponse,
    DescribeTableResponse,
    DropNamespaceResponse,
    DropTableResponse,
    LanceNamespace,
    ListNamespacesResponse,
    ListTablesResponse,
    NamespaceExistsResponse,
    RegisterTableResponse,
    TableExistsResponse,
)
from lance_namespace_urllib3_client.models import JsonArrowSchema

from lancenb.dataset import LanceDataset, write_dataset
from lancenb.errors import DatasetExistsError, DatasetNotFoundError
from lancenb.io.store import ObjectStore
from lancenb.namespace._manifest import DELIMITER, NAMESPACE, TABLE, ManifestTable
from lancenb.namespace.errors import (
    InvalidInputError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from lancenb.namespace.schema import schema_to_spec_json

__all__ = ["DirectoryNamespace"]

MANIFEST_DIR = "__manifest"
RESERVED_FILE = ".lance-reserved"
TABLE_SUFFIX = ".lance"


def _flag(props: dict, key: str, default: bool) -> bool:
    # pylance parses these with Rust's bool parser: only "true"/"false" count
    value = props.get(key)
    return {"true": True, "false": False}.get(value, default) if value is not None else default


def _check_id(object_id, *, what: str, allow_empty: bool) -> list[str]:
    if object_id is None:
        raise InvalidInputError(f"{what} ID is required")
    parts = list(object_id)
    if not parts and not allow_empty:
        raise InvalidInputError(f"{what} ID cannot be empty")
    for p in parts:
        if not isinstance(p, str) or not p or DELIMITER in p:
            raise InvalidInputError(f"{what} ID {parts!r}: every part must be a non-empty "
                                    f"string without {DELIMITER!r}")
    return parts


def _mode(mode, allowed: tuple[str, ...], what: str) -> str:
    """A request's mode in snake case (the spec accepts ``ExistOk`` and ``exist_ok``)."""
    norm = (mode or "create").replace("_", "").lower()
    names = {m.replace("_", ""): m for m in allowed}
    if norm not in names:
        raise UnsupportedOperationError(f"{what}(mode={mode!r}) is not supported "
                                        f"(supported: {', '.join(allowed)})")
    return names[norm]


def _paginate(names: list[str], page_token, limit) -> tuple[list[str], str | None]:
    """Sorted names after ``page_token`` (exclusive), at most ``limit``; the token of the
    next page when some are left."""
    names = sorted(set(names))
    if page_token:
        names = [n for n in names if n > page_token]
    if limit is not None and 0 <= limit < len(names):
        names = names[:limit]
        return names, names[-1] if names else None
    return names, None


class DirectoryNamespace(LanceNamespace):
    """A Lance namespace in a directory: pylance's ``lance.namespace.DirectoryNamespace``.

    Parameters
    ----------
    session, context_provider : optional
        Accepted as pylance accepts them (lancenb shares no object-store session and
        sends no per-call context).
    **properties : str
        ``root`` (required), ``manifest_enabled``, ``dir_listing_enabled``,
        ``storage.<option>``.

    Examples
    --------
    >>> ns = DirectoryNamespace(root="/tmp/catalog")  # doctest: +SKIP
    >>> ns.create_namespace(CreateNamespaceRequest(id=["team"]))  # doctest: +SKIP
    >>> lancenb.write_dataset(tbl, namespace_client=ns, table_id=["team", "t"])  # doctest: +SKIP
    """

    def __init__(self, session=None, context_provider=None, **properties):
        props = {str(k): str(v) for k, v in properties.items()}
        if "root" not in props:
            raise InvalidInputError("Missing required property 'root' for directory namespace")
        root = props["root"]
        self._root = root.rstrip("/") or root
        opts = {k[len("storage."):]: v for k, v in props.items() if k.startswith("storage.")}
        self._storage_options = opts or None
        self._dir_listing = _flag(props, "dir_listing_enabled", True)
        self._manifest = (ManifestTable(self._uri(MANIFEST_DIR), self._storage_options)
                          if _flag(props, "manifest_enabled", True) else None)
        self._store_cache: ObjectStore | None = None

    # -- helpers ---------------------------------------------------------------
    @property
    def _store(self) -> ObjectStore:
        # made on first use: storage options only a real object store understands must
        # not fail the constructor
        if self._store_cache is None:
            self._store_cache = ObjectStore(self._root, self._storage_options)
        return self._store_cache

    def _uri(self, location: str) -> str:
        """The URI of a location relative to the root (an absolute one is kept)."""
        if "://" in location or location.startswith("/"):
            return location
        return f"{self._root}/{location}"

    def _need_manifest(self, what: str) -> ManifestTable:
        if self._manifest is None:
            raise UnsupportedOperationError(
                f"{what} is only supported when manifest mode is enabled")
        return self._manifest

    def _dir_has_objects(self, location: str) -> bool:
        return bool(self._store.list(location))

    def _check_parents(self, parents: list[str]) -> None:
        if not parents:
            return
        manifest = self._need_manifest("Child namespaces")
        for i in range(1, len(parents) + 1):
            oid = DELIMITER.join(parents[:i])
            if manifest.find(oid, NAMESPACE) is None:
                raise NamespaceNotFoundError(f"Parent namespace '{oid}' does not exist")

    def _table_location(self, parts: list[str]) -> str | None:
        """The relative (or absolute) location of table ``parts``, None if absent."""
        if self._manifest is not None:
            row = self._manifest.find(DELIMITER.join(parts), TABLE)
            if row is not None:
                return row["location"]
        if self._dir_listing and len(parts) == 1:
            loc = parts[0] + TABLE_SUFFIX
            if self._dir_has_objects(loc):
                return loc
        return None

    def _new_location(self, parts: list[str]) -> str:
        if len(parts) == 1 and self._dir_listing:
            return parts[0] + TABLE_SUFFIX
        if self._manifest is None:
            raise UnsupportedOperationError(
                "Multi-level table IDs are only supported when manifest mode is enabled, "
                f"but got: {parts!r}")
        return f"{secrets.token_hex(4)}_{DELIMITER.join(parts)}"

    def _start_table(self, parts: list[str]) -> str:
        """Checks shared by create and declare: parents exist, the id is free; returns
        the new table's location."""
        self._check_parents(parts[:-1])
        if self._table_location(parts) is not None:
            raise TableAlreadyExistsError(f"Table '{DELIMITER.join(parts)}' already exists")
        return self._new_location(parts)

    def _register(self, parts: list[str], location: str, *, undo: str | None = None) -> None:
        if self._manifest is None:
            return
        if not self._manifest.insert(DELIMITER.join(parts), TABLE, location=location):
            if undo is not None:  # lost a race for the id: remove what we wrote
                LanceDataset.drop(self._uri(undo), self._storage_options, True)
            raise TableAlreadyExistsError(f"Table '{DELIMITER.join(parts)}' already exists")

    # -- identity --------------------------------------------------------------
    def namespace_id(self) -> str:
        """``DirectoryNamespace { root: "<root>" }`` (pylance's form)."""
        return f"DirectoryNamespace {{ root: {json.dumps(self._root)} }}"

    def __repr__(self) -> str:
        return f"DirectoryNamespace({self.namespace_id()})"

    # -- namespaces ------------------------------------------------------------
    def create_namespace(self, request):
        """Add a child namespace (its parents must exist); properties are kept
        (``mode="exist_ok"``: an existing one is kept, with its properties)."""
        parts = _check_id(request.id, what="Namespace", allow_empty=True)
        if not parts:
            raise NamespaceAlreadyExistsError("Root namespace already exists and cannot be created")
        manifest = self._need_manifest("Child namespaces")
        mode = _mode(request.mode, ("create", "exist_ok"), "create_namespace")
        self._check_parents(parts[:-1])
        props = request.properties or None
        oid = DELIMITER.join(parts)
        if not manifest.insert(oid, NAMESPACE, metadata=json.dumps(props) if props else None):
            if mode == "exist_ok":
                return CreateNamespaceResponse(properties=self._check_namespace(parts))
            raise NamespaceAlreadyExistsError(f"Namespace '{oid}' already exists")
        return CreateNamespaceResponse(properties=request.properties)

    def list_namespaces(self, request):
        """Names of the namespaces directly under ``request.id``, sorted."""
        parts = _check_id(request.id, what="Namespace", allow_empty=True)
        if self._manifest is None:
            names = []
        else:
            self._check_namespace(parts)
            names = self._manifest.children(parts, NAMESPACE)
        names, token = _paginate(names, request.page_token, request.limit)
        return ListNamespacesResponse(namespaces=names, page_token=token)

    def _check_namespace(self, parts: list[str]) -> dict:
        if not parts:
            return {}
        row = self._need_manifest("Child namespaces").find(DELIMITER.join(parts), NAMESPACE)
        if row is None:
            raise NamespaceNotFoundError(f"Namespace '{DELIMITER.join(parts)}' not found")
        return json.loads(row["metadata"]) if row["metadata"] else {}

    def describe_namespace(self, request):
        """The namespace's properties."""
        parts = _check_id(request.id, what="Namespace", allow_empty=True)
        return DescribeNamespaceResponse(properties=self._check_namespace(parts))

    def namespace_exists(self, request):
        """Returns if the namespace exists, else raises ``NamespaceNotFoundError``."""
        self._check_namespace(_check_id(request.id, what="Namespace", allow_empty=True))
        return NamespaceExistsResponse()

    def drop_namespace(self, request):
        """Remove an empty child namespace (``behavior="Cascade"`` is not supported)."""
        parts = _check_id(request.id, what="Namespace", allow_empty=True)
        if not parts:
            raise InvalidInputError("Root namespace cannot be dropped")
        if (request.behavior or "restrict").lower() == "cascade":
            raise UnsupportedOperationError("drop_namespace(behavior='Cascade') is not supported")
        oid = DELIMITER.join(parts)
        try:
            self._check_namespace(parts)
        except NamespaceNotFoundError:
            if (request.mode or "fail").lower() == "skip":
                return DropNamespaceResponse()
            raise
        n = self._manifest.descendants(parts)
        if n:
            raise NamespaceNotEmptyError(
                f"Namespace '{oid}' is not empty (contains {n} child objects)")
        self._manifest.delete(oid)
        return DropNamespaceResponse()

    # -- tables ----------------------------------------------------------------
    def list_tables(self, request):
        """Names of the tables directly in namespace ``request.id``, sorted (in the root
        namespace also ``<name>.lance`` directories the manifest does not list)."""
        parts = _check_id(request.id, what="Namespace", allow_empty=True)
        names: list[str] = []
        if self._manifest is not None:
            self._check_namespace(parts)
            names = self._manifest.children(parts, TABLE)
        elif parts:
            raise UnsupportedOperationError(
                "Child namespaces are only supported when manifest mode is enabled")
        if not parts and self._dir_listing:
            known = self._manifest.locations() if self._manifest is not None else set()
            for entry in self._store.list(""):
                entry = entry.rstrip("/")
                if entry.endswith(TABLE_SUFFIX) and entry not in known and \
                        self._uri(entry) not in known:
                    names.append(entry[:-len(TABLE_SUFFIX)])
        names, token = _paginate(names, request.page_token, request.limit)
        return ListTablesResponse(tables=names, page_token=token)

    def _located(self, request) -> tuple[list[str], str]:
        parts = _check_id(request.id, what="Table", allow_empty=False)
        loc = self._table_location(parts)
        if loc is None:
            raise TableNotFoundError(f"Table '{DELIMITER.join(parts)}' not found")
        return parts, loc

    def describe_table(self, request):
        """The table's location; with ``load_detailed_metadata`` (or a ``version``) also
        its version, schema (the spec's JSON form) and whether it is only declared."""
        parts, loc = self._located(request)
        uri = self._uri(loc)
        out = DescribeTableResponse(table=parts[-1], namespace=parts[:-1], location=uri,
                                    table_uri=uri, storage_options=self._storage_options)
        if request.version is None and not getattr(request, "load_detailed_metadata", None):
            return out
        try:
            ds = LanceDataset(uri, request.version, storage_options=self._storage_options)
        except DatasetNotFoundError:
            if request.version is not None or not self._store.exists(f"{loc}/{RESERVED_FILE}"):
                raise
            out.is_only_declared = True  # declared, no version written yet
            return out
        out.version = ds.version
        out.var_schema = JsonArrowSchema.from_dict(schema_to_spec_json(ds.schema))
        out.is_only_declared = False
        return out

    def table_exists(self, request):
        """Returns if the table exists, else raises ``TableNotFoundError``."""
        self._located(request)
        return TableExistsResponse()

    def create_table(self, request, request_data: bytes):
        """Write the Arrow IPC stream ``request_data`` as a new table (``mode``
        ``"exist_ok"`` keeps an existing one, ``"overwrite"`` writes a new version of it)."""
        parts = _check_id(request.id, what="Table", allow_empty=False)
        mode = _mode(request.mode, ("create", "exist_ok", "overwrite"), "create_table")
        if not request_data:
            raise InvalidInputError(
                "Request data (Arrow IPC stream) is required for create_table")
        try:
            data = pa.ipc.open_stream(io.BytesIO(request_data)).read_all()
        except (pa.ArrowInvalid, OSError) as e:
            raise InvalidInputError(f"Invalid Arrow IPC stream: {e}") from e
        existing = self._table_location(parts) if mode != "create" else None
        if existing is not None:  # exist_ok keeps the table, overwrite writes a new version
            uri = self._uri(existing)
            ds = (LanceDataset(uri, storage_options=self._storage_options) if mode == "exist_ok"
                  else write_dataset(data, uri, mode="overwrite",
                                     storage_options=self._storage_options))
            return CreateTableResponse(location=uri, version=ds.version,
                                       storage_options=self._storage_options)
        loc = self._start_table(parts)
        uri = self._uri(loc)
        try:
            ds = write_dataset(data, uri, mode="create", storage_options=self._storage_options)
        except DatasetExistsError as e:  # a racing create of the same root table won
            raise TableAlreadyExistsError(f"Table '{DELIMITER.join(parts)}' already exists") \
                from e
        self._register(parts, loc, undo=loc)
        return CreateTableResponse(location=uri, version=ds.version,
                                   storage_options=self._storage_options)

    def declare_table(self, request):
        """Reserve a table id and location (a ``.lance-reserved`` file there) for data
        written later, e.g. by ``write_dataset(..., namespace_client=..., table_id=...)``."""
        parts = _check_id(request.id, what="Table", allow_empty=False)
        loc = self._start_table(parts)
        uri = self._uri(loc)
        if request.location is not None and request.location.rstrip("/") != uri:
            raise InvalidInputError(f"Cannot create table {parts[-1]} at location "
                                    f"{request.location}, must be at location {uri}")
        self._store.write_bytes(f"{loc}/{RESERVED_FILE}", b"")
        self._register(parts, loc, undo=loc)
        return DeclareTableResponse(location=uri, storage_options=self._storage_options)

    def create_empty_table(self, request):
        """Deprecated in the spec for :meth:`declare_table`, which it calls (pylance 14
        refuses it; older pylance made it)."""
        resp = self.declare_table(DeclareTableRequest(id=request.id))
        return CreateTableResponse(location=resp.location,
                                   storage_options=resp.storage_options)

    def drop_table(self, request):
        """Remove the table from the namespace and delete its directory."""
        parts, loc = self._located(request)
        if self._manifest is not None:
            self._manifest.delete(DELIMITER.join(parts))
        LanceDataset.drop(self._uri(loc), self._storage_options, True)
        return DropTableResponse(id=parts, location=self._uri(loc))

    def register_table(self, request):
        """List an existing dataset, at a location relative to the root, under an id."""
        parts = _check_id(request.id, what="Table", allow_empty=False)
        manifest = self._need_manifest("register_table")
        loc = request.location or ""
        rule = ("Absolute URIs are not allowed" if "://" in loc else
                "Absolute paths are not allowed" if loc.startswith("/") else
                "Path traversal is not allowed" if ".." in loc else
                "An empty location is not allowed" if not loc.strip("/") else None)
        if rule is not None:
            raise InvalidInputError(f"{rule} for register_table. Location must be a relative "
                                    f"path within the root directory: {loc}")
        self._check_parents(parts[:-1])
        oid = DELIMITER.join(parts)
        if manifest.find(oid) is not None or not manifest.insert(oid, TABLE, location=loc):
            raise TableAlreadyExistsError(f"Table '{oid}' already exists")
        return RegisterTableResponse(location=loc)

    def deregister_table(self, request):
        """Remove the table from the manifest, keeping its data."""
        parts = _check_id(request.id, what="Table", allow_empty=False)
        manifest = self._need_manifest("deregister_table")
        oid = DELIMITER.join(parts)
        row = manifest.find(oid, TABLE)
        if row is None:
            raise TableNotFoundError(f"Table '{oid}' not found")
        manifest.delete(oid)
        return DeregisterTableResponse(id=parts, location=self._uri(row["location"]))
