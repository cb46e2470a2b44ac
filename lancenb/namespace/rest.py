"""The Lance REST namespace API: :class:`RestNamespace` (a client) and
:class:`RestAdapter` (a small HTTP server exposing a namespace, as pylance's is used in
tests and local setups).

Wire format (the spec's, as in the ``lance-namespace`` package's generated client):

- An id travels in the path, its parts joined by the delimiter (``"$"`` unless the
  ``delimiter`` property says otherwise), percent-encoded; the root namespace is the
  delimiter alone. Every request also sends ``?delimiter=...``.
- ``POST /v1/namespace/{id}/create|describe|drop|exists``,
  ``GET /v1/namespace/{id}/list`` and ``GET /v1/namespace/{id}/table/list``
  (``page_token``, ``limit`` in the query);
  ``POST /v1/table/{id}/describe|exists|drop|register|deregister|declare`` with the
  request model as a JSON body (its spec field names); ``POST /v1/table/{id}/create``
  with an Arrow IPC stream body (``application/vnd.apache.arrow.stream``, ``mode`` in the
  query). Responses are the response models as JSON.
- An error is the spec's ``ErrorResponse``: ``{"error": message, "code": n}`` with an HTTP
  status chosen by the code (404 not found, 409 already exists or not empty, 400 invalid
  input, 406 unsupported, 500 otherwise); the client raises the error class of the code.

Example: ``create_namespace(["a", "b"])`` is ``POST /v1/namespace/a%24b/create?delimiter=%24``
with body ``{"id": ["a", "b"]}``.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from abc import ABC, abstractmethod
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import lance_namespace as spec
from lance_namespace import LanceNamespace

from lancenb.namespace.errors import (
    InternalError,
    InvalidInputError,
    NamespaceAlreadyExistsError,
    NamespaceError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    UnsupportedOperationError,
    error_for_code,
)

__all__ = ["RestNamespace", "RestAdapter", "DynamicContextProvider"]

DEFAULT_DELIMITER = "$"
DEFAULT_PORT = 2333  # the spec's
ARROW_STREAM = "application/vnd.apache.arrow.stream"
_TIMEOUT_S = 300.0  # a create_table uploads a whole table


class DynamicContextProvider(ABC):
    """Supplies per-call context to a namespace client (pylance's interface): entries
    ``"headers.<Name>"`` (or ``"header.<Name>"``) become HTTP headers of the call."""

    @abstractmethod
    def provide_context(self, info: dict) -> dict:
        """Context for one call; ``info`` has ``operation`` and ``object_id``."""


def _headers_of(entries: dict | None) -> dict:
    out = {}
    for k, v in (entries or {}).items():
        for prefix in ("headers.", "header."):
            if k.startswith(prefix):
                out[k[len(prefix):]] = str(v)
    return out


# (HTTP status, code) of an error class; everything else is a 500
_STATUS = {0: 406, 1: 404, 2: 409, 3: 409, 4: 404, 5: 409, 6: 404, 7: 409, 8: 404, 9: 409,
           10: 404, 11: 404, 12: 404, 13: 400, 14: 409, 15: 403, 16: 401, 17: 503, 21: 429,
           22: 404, 23: 409}


# what a code means, put before a server's message that does not say it (pylance's
# server sends "table id 'a$b'" for a missing table)
_MEANING = {0: "Not supported", 1: "Namespace not found", 2: "Namespace already exists",
            3: "Namespace not empty", 4: "Table not found", 5: "Table already exists",
            13: "Invalid input", 14: "Concurrent modification", 18: "Internal error"}


def _error_from_response(status: int, raw: bytes) -> NamespaceError:
    try:
        body = json.loads(raw or b"null")
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("code"), int):
        msg = str(body.get("error") or body.get("detail") or f"HTTP {status}")
        meaning = _MEANING.get(body["code"])
        if meaning and meaning.lower() not in msg.lower():
            msg = f"{meaning}: {msg}"
        return error_for_code(body["code"], msg)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):  # older servers
        msg = str(body["error"].get("message", ""))
    else:
        msg = raw.decode("utf-8", "replace") if raw else f"HTTP {status}"
    table = "table" in msg.lower()
    if status == 404:
        return (TableNotFoundError if table else NamespaceNotFoundError)(msg)
    if status == 409 or "already exists" in msg:
        return (TableAlreadyExistsError if table else NamespaceAlreadyExistsError)(msg)
    if status == 400:
        return InvalidInputError(msg)
    if status in (406, 501):
        return UnsupportedOperationError(msg)
    return InternalError(f"HTTP {status}: {msg}")


class RestNamespace(LanceNamespace):
    """A client of a Lance REST namespace server: pylance's
    ``lance.namespace.RestNamespace``.

    Parameters
    ----------
    context_provider : DynamicContextProvider, optional
        Extra headers per call.
    **properties : str
        ``uri`` (required, e.g. ``"http://127.0.0.1:2333"``), ``delimiter`` (default
        ``"$"``), ``header.<Name>`` (HTTP headers sent with every call).

    Examples
    --------
    >>> ns = RestNamespace(uri="http://127.0.0.1:2333")  # doctest: +SKIP
    >>> ns.list_tables(ListTablesRequest(id=[])).tables  # doctest: +SKIP
    """

    def __init__(self, context_provider=None, **properties):
        props = {str(k): str(v) for k, v in properties.items()}
        if "uri" not in props:
            raise InvalidInputError("Missing required property 'uri' for REST namespace")
        self._uri = props["uri"].rstrip("/")
        self._delimiter = props.get("delimiter") or DEFAULT_DELIMITER
        self._headers = _headers_of(props)
        self._context_provider = context_provider

    def namespace_id(self) -> str:
        """``RestNamespace { endpoint: "<uri>", delimiter: "<d>" }`` (pylance's form)."""
        return (f"RestNamespace {{ endpoint: {json.dumps(self._uri)}, "
                f"delimiter: {json.dumps(self._delimiter)} }}")

    def __repr__(self) -> str:
        return f"RestNamespace({self.namespace_id()})"

    def _send(self, operation: str, path: str, request, *, method: str = "POST",
              body: bytes | None = None, content_type: str = "application/json",
              query: dict | None = None) -> dict:
        parts = list(request.id) if request.id is not None else None
        if parts is None:
            raise InvalidInputError(f"{operation}: an id is required")
        ident = self._delimiter.join(parts) if parts else self._delimiter
        q = {"delimiter": self._delimiter}
        q.update({k: v for k, v in (query or {}).items() if v is not None})
        url = (f"{self._uri}{path.format(id=urllib.parse.quote(ident, safe=''))}"
               f"?{urllib.parse.urlencode(q)}")
        headers = dict(self._headers)
        headers.update(_headers_of(getattr(request, "context", None)))
        if self._context_provider is not None:
            headers.update(_headers_of(self._context_provider.provide_context(
                {"operation": operation, "object_id": ident})))
        if method == "POST":
            if body is None:
                body = request.to_json().encode()
            headers["Content-Type"] = content_type
        headers["Accept"] = "application/json"
        req = urllib.request.Request(url, data=body if method == "POST" else None,
                                     method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=_TIMEOUT_S) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            with e:
                raw = e.read()
            raise _error_from_response(e.code, raw) from None
        except urllib.error.URLError as e:
            raise InternalError(f"{operation}: cannot reach {self._uri}: {e.reason}") from e
        return json.loads(raw) if raw.strip() else {}

    # -- namespaces ------------------------------------------------------------
    def create_namespace(self, request):
        d = self._send("create_namespace", "/v1/namespace/{id}/create", request)
        return spec.CreateNamespaceResponse.from_dict(d)

    def list_namespaces(self, request):
        d = self._send("list_namespaces", "/v1/namespace/{id}/list", request, method="GET",
                       query={"page_token": request.page_token, "limit": request.limit})
        return spec.ListNamespacesResponse.from_dict(d)

    def describe_namespace(self, request):
        d = self._send("describe_namespace", "/v1/namespace/{id}/describe", request)
        return spec.DescribeNamespaceResponse.from_dict(d)

    def drop_namespace(self, request):
        d = self._send("drop_namespace", "/v1/namespace/{id}/drop", request)
        return spec.DropNamespaceResponse.from_dict(d)

    def namespace_exists(self, request):
        self._send("namespace_exists", "/v1/namespace/{id}/exists", request)
        return spec.NamespaceExistsResponse()

    # -- tables ----------------------------------------------------------------
    def list_tables(self, request):
        d = self._send("list_tables", "/v1/namespace/{id}/table/list", request, method="GET",
                       query={"page_token": request.page_token, "limit": request.limit})
        return spec.ListTablesResponse.from_dict(d)

    def describe_table(self, request):
        d = self._send("describe_table", "/v1/table/{id}/describe", request)
        return spec.DescribeTableResponse.from_dict(d)

    def table_exists(self, request):
        self._send("table_exists", "/v1/table/{id}/exists", request)
        return spec.TableExistsResponse()

    def drop_table(self, request):
        d = self._send("drop_table", "/v1/table/{id}/drop", request)
        return spec.DropTableResponse.from_dict(d)

    def register_table(self, request):
        d = self._send("register_table", "/v1/table/{id}/register", request)
        return spec.RegisterTableResponse.from_dict(d)

    def deregister_table(self, request):
        d = self._send("deregister_table", "/v1/table/{id}/deregister", request)
        return spec.DeregisterTableResponse.from_dict(d)

    def create_table(self, request, request_data: bytes):
        d = self._send("create_table", "/v1/table/{id}/create", request,
                       body=bytes(request_data), content_type=ARROW_STREAM,
                       query={"mode": request.mode})
        return spec.CreateTableResponse.from_dict(d)

    def declare_table(self, request):
        d = self._send("declare_table", "/v1/table/{id}/declare", request)
        return spec.DeclareTableResponse.from_dict(d)

    def create_empty_table(self, request):
        """Deprecated in the spec: sent as :meth:`declare_table`."""
        resp = self.declare_table(spec.DeclareTableRequest(id=request.id))
        return spec.CreateTableResponse(location=resp.location,
                                        storage_options=resp.storage_options)


# -- the server --------------------------------------------------------------------
# (kind, action) -> (backend method, request model, HTTP method)
_ROUTES = {
    ("namespace", "create"): ("create_namespace", "CreateNamespaceRequest", "POST"),
    ("namespace", "list"): ("list_namespaces", "ListNamespacesRequest", "GET"),
    ("namespace", "describe"): ("describe_namespace", "DescribeNamespaceRequest", "POST"),
    ("namespace", "drop"): ("drop_namespace", "DropNamespaceRequest", "POST"),
    ("namespace", "exists"): ("namespace_exists", "NamespaceExistsRequest", "POST"),
    ("namespace", "table/list"): ("list_tables", "ListTablesRequest", "GET"),
    ("table", "describe"): ("describe_table", "DescribeTableRequest", "POST"),
    ("table", "exists"): ("table_exists", "TableExistsRequest", "POST"),
    ("table", "drop"): ("drop_table", "DropTableRequest", "POST"),
    ("table", "register"): ("register_table", "RegisterTableRequest", "POST"),
    ("table", "deregister"): ("deregister_table", "DeregisterTableRequest", "POST"),
    ("table", "declare"): ("declare_table", "DeclareTableRequest", "POST"),
    ("table", "create-empty"): ("create_empty_table", "CreateTableRequest", "POST"),
    ("table", "create"): ("create_table", "CreateTableRequest", "POST"),
}


def _parse_path(path: str) -> tuple[tuple[str, str], str] | None:
    parts = path.split("/", 4)  # "", "v1", kind, id, action
    if len(parts) != 5 or parts[0] or parts[1] != "v1":
        return None
    return (parts[2], parts[4]), urllib.parse.unquote(parts[3])


def _split_id(ident: str, delimiter: str) -> list[str]:
    if ident == delimiter:
        return []
    return [p for p in ident.split(delimiter) if p]


class _Handler(BaseHTTPRequestHandler):
    backend: LanceNamespace  # set on the subclass a RestAdapter makes
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - quiet, as a test server should be
        pass

    def _reply(self, status: int, payload: bytes = b"") -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _fail(self, code: int, message: str) -> None:
        body = json.dumps({"error": message, "code": code}).encode()
        self._reply(_STATUS.get(code, 500), body)

    def do_GET(self):  # noqa: N802 - http.server's name
        self._dispatch("GET")

    def do_POST(self):  # noqa: N802
        self._dispatch("POST")

    def _dispatch(self, http_method: str) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parsed = _parse_path(url.path)
        route = _ROUTES.get(parsed[0]) if parsed else None
        if route is None or route[2] != http_method:
            self._fail(0, f"no route {http_method} {url.path}")
            return
        method, model, _ = route
        ident = _split_id(parsed[1], query.get("delimiter") or DEFAULT_DELIMITER)
        try:
            response = self._invoke(method, getattr(spec, model), ident, query, body)
        except spec.LanceNamespaceError as e:
            self._fail(int(e.code), str(e))
        except (ValueError, TypeError) as e:  # a malformed request (JSON, model fields)
            self._fail(13, str(e))
        except Exception as e:  # noqa: BLE001 - any backend failure is the client's 500
            self._fail(18, f"{type(e).__name__}: {e}")
        else:
            self._reply(200, response.to_json().encode())

    def _invoke(self, method: str, model, ident: list[str], query: dict, body: bytes):
        fn = getattr(self.backend, method)
        if method == "create_table":
            request = model(id=ident, mode=query.get("mode"))
            return fn(request, body)
        if method in ("list_namespaces", "list_tables"):
            limit = query.get("limit")
            request = model(id=ident, page_token=query.get("page_token"),
                            limit=int(limit) if limit is not None else None)
            return fn(request)
        request = model.from_dict(json.loads(body) if body.strip() else {}) or model()
        request.id = ident
        return fn(request)


class RestAdapter:
    """An HTTP server exposing a namespace through the REST API, in a background thread
    (pylance's ``lance.namespace.RestAdapter``).

    Parameters
    ----------
    namespace_client_impl : str
        ``"dir"`` (a :class:`~lancenb.namespace.DirectoryNamespace`), ``"rest"`` (a
        :class:`RestNamespace`: a proxy), or a full class path for
        ``lance_namespace.connect``.
    namespace_client_properties : dict, optional
        The backend's properties (``{"root": ...}`` for ``"dir"``).
    session : optional
        Passed to a directory backend.
    host : str, optional
        Default ``"127.0.0.1"``.
    port : int, optional
        Default 2333; 0 lets the system choose (read :attr:`port` after :meth:`start`).

    Examples
    --------
    >>> with RestAdapter("dir", {"root": "/tmp/catalog"}, port=0) as server:  # doctest: +SKIP
    ...     client = RestNamespace(uri=f"http://127.0.0.1:{server.port}")
    """

    def __init__(self, namespace_client_impl: str, namespace_client_properties=None,
                 session=None, host: str | None = None, port: int | None = None):
        props = {str(k): str(v) for k, v in (namespace_client_properties or {}).items()}
        if namespace_client_impl == "dir":
            from lancenb.namespace.directory import DirectoryNamespace

            self.backend = DirectoryNamespace(session=session, **props)
        elif namespace_client_impl == "rest":
            self.backend = RestNamespace(**props)
        else:
            self.backend = spec.connect(namespace_client_impl, props)
        self.namespace_client_impl = namespace_client_impl
        self.host = host
        self._bind = (host or "127.0.0.1", DEFAULT_PORT if port is None else int(port))
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port listened on (0 before :meth:`start`)."""
        return self._server.server_address[1] if self._server is not None else 0

    def start(self) -> None:
        """Start serving in a background thread."""
        if self._server is not None:
            return
        handler = type("Handler", (_Handler,), {"backend": self.backend})
        server = ThreadingHTTPServer(self._bind, handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="lancenb-rest",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and release the port."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self.stop()
        return False

    def __repr__(self) -> str:
        return f"RestAdapter(host='{self._bind[0]}', port={self.port})"
