"""Errors of the namespace layer: each is a :class:`lancenb.errors.LanceError` and also
the ``lance_namespace`` error of the same meaning (so ``except TableNotFoundError`` works
with either package's class), carrying the spec's numeric ``code``.

This module needs ``lance_namespace`` (the spec's models), as the whole package does.
"""

from __future__ import annotations

import lance_namespace.errors as _spec

from lancenb.errors import LanceError

__all__ = ["NamespaceError", "UnsupportedOperationError", "NamespaceNotFoundError",
           "NamespaceAlreadyExistsError", "NamespaceNotEmptyError", "TableNotFoundError",
           "TableAlreadyExistsError", "InvalidInputError", "InternalError",
           "error_for_code"]


class NamespaceError(LanceError, _spec.LanceNamespaceError):
    """Root of the namespace errors (the spec's ``InternalError`` code unless a
    subclass says otherwise)."""


class UnsupportedOperationError(NamespaceError, _spec.UnsupportedOperationError):
    """The operation is not implemented by this namespace (or by its mode: child
    namespaces and registration need the ``__manifest`` table)."""


class NamespaceNotFoundError(NamespaceError, _spec.NamespaceNotFoundError):
    """No namespace with this id (or a parent of the id is missing)."""


class NamespaceAlreadyExistsError(NamespaceError, _spec.NamespaceAlreadyExistsError):
    """A namespace with this id exists already."""


class NamespaceNotEmptyError(NamespaceError, _spec.NamespaceNotEmptyError):
    """The namespace still holds tables or child namespaces."""


class TableNotFoundError(NamespaceError, _spec.TableNotFoundError):
    """No table with this id."""


class TableAlreadyExistsError(NamespaceError, _spec.TableAlreadyExistsError):
    """A table with this id exists already."""


class InvalidInputError(NamespaceError, _spec.InvalidInputError, ValueError):
    """A malformed request: an empty or badly formed id, a location outside the root,
    missing or unreadable Arrow IPC data."""


class InternalError(NamespaceError, _spec.InternalError):
    """A failure of the backend (storage, a server error without a known code)."""


_BY_CODE = {cls.code: cls for cls in (
    UnsupportedOperationError, NamespaceNotFoundError, NamespaceAlreadyExistsError,
    NamespaceNotEmptyError, TableNotFoundError, TableAlreadyExistsError, InvalidInputError,
    InternalError)}


def error_for_code(code: int, message: str) -> NamespaceError:
    """The error for the spec's numeric ``code``; a code without a class of its own here
    gives a :class:`NamespaceError` whose ``code`` is that code."""
    cls = _BY_CODE.get(code)
    if cls is not None:
        return cls(message)
    err = NamespaceError(message)
    try:
        err.code = _spec.ErrorCode(code)
    except ValueError:
        pass
    return err
