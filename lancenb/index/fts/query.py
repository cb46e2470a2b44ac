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
           "PhraseQuery", "BoostQuery", "MultiMatchQuery", "BooleanQuery", "FtsToken",
           "tokenize"]


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


class FtsToken:
    """One token of a text as an INVERTED index tokenizes it (:func:`tokenize`): its
    ``text`` and ``position`` (counted from the first kept token; tokens dropped by
    the filters keep their places)."""

    __slots__ = ("text", "position")

    def __init__(self, text: str, position: int):
        self.text, self.position = text, int(position)

    def __repr__(self) -> str:
        return f'FtsToken(text="{self.text}", position={self.position})'


_UNSET = object()
_CODE_FLAGS = ("split_identifiers", "split_on_numerics", "preserve_original",
               "index_operators")


def tokenize(query: str, *, analyzer=None, base_tokenizer=None, language=None,
             max_token_length=_UNSET, lower_case=None, stem=None, remove_stop_words=None,
             custom_stop_words=None, ascii_folding=None, min_ngram_length=None,
             max_ngram_length=None, prefix_only=None, split_identifiers=None,
             split_on_numerics=None, preserve_original=None,
             index_operators=None) -> list[FtsToken]:
    """The tokens of ``query`` under the tokenizer options of
    ``create_scalar_index(..., "INVERTED")`` (pylance's ``lance.tokenize``): None keeps
    an option's default, except ``max_token_length=None``, which lifts the length limit.

    Examples
    --------
    >>> [(t.text, t.position) for t in tokenize("the Cats and Dogs")]
    [('cat', 0), ('dog', 2)]
    """
    from lancenb.errors import NotSupportedError
    from lancenb.index.fts.tokenize import TokenizerParams, query_words, tokenize_query

    flags = dict(zip(_CODE_FLAGS, (split_identifiers, split_on_numerics,
                                   preserve_original, index_operators)))
    if analyzer not in (None, "default") or any(flags.values()):
        raise NotSupportedError("lancenb tokenizes with the default analyzer only (the "
                                "'code' analyzer and its flags are not supported)")
    opts = dict(base_tokenizer=base_tokenizer, language=language, lower_case=lower_case,
                stem=stem, remove_stop_words=remove_stop_words,
                custom_stop_words=custom_stop_words, ascii_folding=ascii_folding,
                min_ngram_length=min_ngram_length, max_ngram_length=max_ngram_length,
                prefix_only=prefix_only)
    opts = {k: v for k, v in opts.items() if v is not None}
    if max_token_length is not _UNSET:
        opts["max_token_length"] = max_token_length
    params = TokenizerParams.from_kwargs(opts)
    if params.base_tokenizer == "ngram":  # (n-grams all sit at position 0)
        return [FtsToken(t, 0) for t in tokenize_query(params, query)]
    words, positions = query_words(params, query)
    first = positions[0] if positions else 0
    return [FtsToken(w, p - first) for w, p in zip(words, positions)]
