"""Full-text queries, as pylance's ``lance.query``: :class:`MatchQuery`,
:class:`PhraseQuery`, :class:`BoostQuery`, :class:`MultiMatchQuery` and
:class:`BooleanQuery`, combined with ``&`` / ``|`` as pylance combines them.

Each query is a plain description of what to search (its ``inner`` is that description
as a dict); the search itself is ``full_text_query=`` of a scan over an INVERTED index.

Examples
--------
>>> q = MatchQuery("puppy", "text") & PhraseQuery("lazy dog", "text")
>>> q.query_type()
<FullTextQueryType.BOOLEAN: 'boolean'>
>>> [occur.value for occur, _ in q.queries]
['MUST', 'MUST']
"""

from __future__ import annotations

import abc
from enum import Enum

__all__ = ["FullTextQueryType", "FullTextOperator", "Occur", "FullTextQuery", "MatchQuery",
           "PhraseQuery", "BoostQuery", "MultiMatchQuery", "BooleanQuery"]


class FullTextQueryType(Enum):
    """The kind of a full-text query."""

    MATCH = "match"
    MATCH_PHRASE = "match_phrase"
    BOOST = "boost"
    MULTI_MATCH = "multi_match"
    BOOLEAN = "boolean"


class FullTextOperator(Enum):
    """How the terms of one query combine: every term (``AND``) or any (``OR``)."""

    AND = "AND"
    OR = "OR"


class Occur(Enum):
    """How a clause of a :class:`BooleanQuery` counts."""

    SHOULD = "SHOULD"
    MUST = "MUST"
    MUST_NOT = "MUST_NOT"


class FullTextQuery(abc.ABC):
    """A full-text query: a description, combined with ``&`` (both must match) and
    ``|`` (either may)."""

    @property
    def inner(self) -> dict:
        """The query as a dict: ``{"type": ..., **its parameters}``, nested queries
        as their own dicts."""
        out: dict = {"type": self.query_type().value}
        for key, value in vars(self).items():
            if isinstance(value, FullTextQuery):
                value = value.inner
            elif isinstance(value, Enum):
                value = value.value
            elif key == "queries":
                value = [(occur.value, query.inner) for occur, query in value]
            out[key] = value
        return out

    @abc.abstractmethod
    def query_type(self) -> FullTextQueryType:
        """The kind of this query."""

    def __and__(self, other: FullTextQuery) -> FullTextQuery:
        return BooleanQuery([(Occur.MUST, self), (Occur.MUST, other)])

    def __or__(self, other: FullTextQuery) -> FullTextQuery:
        return BooleanQuery([(Occur.SHOULD, self), (Occur.SHOULD, other)])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.inner == self.inner

    __hash__ = None  # type: ignore[assignment]  (mutable: compared by value)


def _checked_operator(operator) -> FullTextOperator:
    if isinstance(operator, str):
        try:
            return FullTextOperator(operator.upper())
        except ValueError:
            pass
    if not isinstance(operator, FullTextOperator):
        raise ValueError(f"operator must be AND or OR, not {operator!r}")
    return operator


class MatchQuery(FullTextQuery):
    """Rows whose ``column`` holds the terms of ``query`` (any of them, or all with
    ``operator=AND``), optionally fuzzy: ``fuzziness`` edits per term (None: by term
    length), at most ``max_expansions`` terms per fuzzy term, the first
    ``prefix_length`` characters kept; scores multiplied by ``boost``."""

    def __init__(self, query: str, column: str, *, boost: float = 1.0, fuzziness: int | None = 0,
                 max_expansions: int = 50, operator=FullTextOperator.OR,
                 prefix_length: int = 0):
        self.query = query
        self.column = column
        self.boost = float(boost)
        self.fuzziness = fuzziness
        self.max_expansions = int(max_expansions)
        self.operator = _checked_operator(operator)
        self.prefix_length = int(prefix_length)

    def query_type(self) -> FullTextQueryType:
        """``MATCH``."""
        return FullTextQueryType.MATCH


class PhraseQuery(FullTextQuery):
    """Rows whose ``column`` holds the terms of ``query`` in order, at most ``slop``
    positions apart (the index must keep positions)."""

    def __init__(self, query: str, column: str, *, slop: int = 0):
        self.query = query
        self.column = column
        self.slop = int(slop)

    def query_type(self) -> FullTextQueryType:
        """``MATCH_PHRASE``."""
        return FullTextQueryType.MATCH_PHRASE


class BoostQuery(FullTextQuery):
    """The rows of ``positive``, those also matching ``negative`` scored
    ``negative_boost`` times lower."""

    def __init__(self, positive: FullTextQuery, negative: FullTextQuery, *,
                 negative_boost: float = 0.5):
        self.positive = positive
        self.negative = negative
        self.negative_boost = float(negative_boost)

    def query_type(self) -> FullTextQueryType:
        """``BOOST``."""
        return FullTextQueryType.BOOST


class MultiMatchQuery(FullTextQuery):
    """A :class:`MatchQuery` of ``query`` over each of ``columns`` (each column's
    scores multiplied by its entry of ``boosts``), rows matching any of them."""

    def __init__(self, query: str, columns: list[str], *, boosts: list[float] | None = None,
                 operator=FullTextOperator.OR):
        self.query = query
        self.columns = list(columns)
        if boosts is not None and len(boosts) != len(self.columns):
            raise ValueError(f"boosts has {len(boosts)} entries for {len(self.columns)} columns")
        self.boosts = None if boosts is None else [float(b) for b in boosts]
        self.operator = _checked_operator(operator)

    def query_type(self) -> FullTextQueryType:
        """``MULTI_MATCH``."""
        return FullTextQueryType.MULTI_MATCH


class BooleanQuery(FullTextQuery):
    """Clauses ``(Occur, query)``: every ``MUST`` clause matches, no ``MUST_NOT``
    clause does, and ``SHOULD`` clauses add to the score (at least one must match
    when there is no ``MUST``)."""

    def __init__(self, queries: list[tuple[Occur, FullTextQuery]]):
        checked = []
        for occur, query in queries:
            occur = Occur(occur) if isinstance(occur, str) else occur
            if not isinstance(occur, Occur) or not isinstance(query, FullTextQuery):
                raise ValueError(f"BooleanQuery takes (Occur, FullTextQuery) pairs, not "
                                 f"({occur!r}, {query!r})")
            checked.append((occur, query))
        self.queries = checked

    def query_type(self) -> FullTextQueryType:
        """``BOOLEAN``."""
        return FullTextQueryType.BOOLEAN
