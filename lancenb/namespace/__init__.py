"""Lance namespaces: catalogs of tables (pylance's ``lance.namespace``).

- :class:`DirectoryNamespace`: tables and child namespaces under one directory, in the
  layout pylance uses (:mod:`lancenb.namespace.directory`).
- :class:`RestNamespace`: a client of the Lance REST namespace API, and
  :class:`RestAdapter`: a small server exposing any namespace over that API
  (:mod:`lancenb.namespace.rest`).

The request and response models, and the ``LanceNamespace`` interface, are the spec's
(the ``lance-namespace`` package, which does not depend on pylance); they are
re-exported here as pylance re-exports them. ``lance_namespace.connect("dir", ...)``
names pylance's classes; :func:`connect` here names these.

Everything is imported on first use: the spec package costs about a second to import.

Examples
--------
>>> from lancenb.namespace import DirectoryNamespace, CreateNamespaceRequest  # doctest: +SKIP
>>> ns = DirectoryNamespace(root="/tmp/catalog")  # doctest: +SKIP
>>> ns.create_namespace(CreateNamespaceRequest(id=["team"]))  # doctest: +SKIP
>>> ds = lancenb.dataset(namespace_client=ns, table_id=["team", "events"])  # doctest: +SKIP
"""

import importlib as _importlib

__all__ = ["DirectoryNamespace", "RestNamespace", "RestAdapter", "DynamicContextProvider",
           "connect"]

_OWN = {
    "DirectoryNamespace": "lancenb.namespace.directory",
    "RestNamespace": "lancenb.namespace.rest",
    "RestAdapter": "lancenb.namespace.rest",
    "DynamicContextProvider": "lancenb.namespace.rest",
}

TYPE_CHECKING = False
if TYPE_CHECKING:
    from lancenb.namespace.directory import DirectoryNamespace as DirectoryNamespace
    from lancenb.namespace.rest import DynamicContextProvider as DynamicContextProvider
    from lancenb.namespace.rest import RestAdapter as RestAdapter
    from lancenb.namespace.rest import RestNamespace as RestNamespace


def connect(impl: str, properties: dict):
    """A namespace by implementation name: ``"dir"`` (:class:`DirectoryNamespace`),
    ``"rest"`` (:class:`RestNamespace`), or what ``lance_namespace.connect`` knows (a
    registered name or a full class path).

    Examples
    --------
    >>> ns = connect("dir", {"root": "/tmp/catalog"})  # doctest: +SKIP
    """
    if impl in ("dir", "rest"):
        cls = __getattr__("DirectoryNamespace" if impl == "dir" else "RestNamespace")
        return cls(**properties)
    return _import("lance_namespace").connect(impl, properties)


def _import(module: str):
    try:
        return _importlib.import_module(module)
    except ModuleNotFoundError as e:
        if (e.name or "").startswith("lance_namespace"):
            raise ImportError("lancenb.namespace needs the spec's models: "
                              "pip install lance-namespace") from e
        raise


def __getattr__(name: str):
    if name in _OWN:
        value = getattr(_import(_OWN[name]), name)
    elif name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    else:
        # the spec's models and interface, as pylance's lance.namespace re-exports them
        spec = _import("lance_namespace")
        if name not in spec.__all__:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(spec, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_OWN))
