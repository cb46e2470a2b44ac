"""Tables named through a catalog: ``dataset(namespace_client=..., table_id=...)`` and
``write_dataset(..., namespace_client=..., table_id=...)`` resolve the table to its
location and storage options through the namespace client (:mod:`lancenb.namespace`, or
any object with pylance's namespace methods) before anything is opened."""

from __future__ import annotations

from lancenb.errors import InvalidInputError

__all__ = ["namespace_table", "provided_options"]


def provided_options(storage_options, provider):
    """``storage_options`` with those of a ``storage_options_provider`` (an object with
    ``fetch_storage_options()``, as newer pylance and Ray Data pass one) over them."""
    if provider is None:
        return storage_options
    fetch = getattr(provider, "fetch_storage_options", None)
    if fetch is None:
        raise InvalidInputError("storage_options_provider needs a fetch_storage_options() "
                                "method")
    return {**(storage_options or {}), **(fetch() or {})}


def namespace_table(kwargs: dict, uri, storage_options, mode=None):
    """``(uri, storage_options)`` of a table named by ``namespace_client=`` (older pylance:
    ``namespace=``) and ``table_id=``, popped from ``kwargs``: a create declares it, anything
    else describes it; the namespace's storage options go over the caller's (pylance's)."""
    client = kwargs.pop("namespace_client", None) or kwargs.pop("namespace", None)
    table_id, own = kwargs.pop("table_id", None), not kwargs.pop(
        "ignore_namespace_table_storage_options", False)
    if (uri is None) == (client is None and table_id is None) or (client is None) != (
            table_id is None):
        raise InvalidInputError("Give either 'uri' or both 'namespace_client' and 'table_id'.")
    if client is None:
        return uri, storage_options
    import lance_namespace as spec  # the spec's models: only needed here, slow to import

    response = (client.declare_table(spec.DeclareTableRequest(id=list(table_id)))
                if mode == "create" else
                client.describe_table(spec.DescribeTableRequest(id=list(table_id))))
    if own and response.storage_options:
        storage_options = {**(storage_options or {}), **response.storage_options}
    return response.location, storage_options
