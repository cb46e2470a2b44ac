"""``IndexConfig`` (pylance's ``lance.indices.IndexConfig``): an index type named by
string with its parameters, accepted wherever an index type is
(``create_scalar_index(column, IndexConfig("zonemap", {"rows_per_zone": 64}))``)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["IndexConfig"]


@dataclass
class IndexConfig:
    """An index type (``"btree"``, ``"zonemap"``, ``"json"``, ...) and its parameters.

    Examples
    --------
    >>> IndexConfig(index_type="zonemap", parameters={"rows_per_zone": 64}).index_type
    'zonemap'
    """

    index_type: str
    parameters: dict = field(default_factory=dict)
