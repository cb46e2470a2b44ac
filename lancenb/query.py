"""Full-text queries, as pylance's ``lance.query`` (defined in
:mod:`lancenb.index.fts.query`, where the search that evaluates them lives).

Examples
--------
>>> q = MatchQuery("puppy", "text") & PhraseQuery("lazy dog", "text")
>>> q.query_type()
<FullTextQueryType.BOOLEAN: 'boolean'>
"""

from lancenb.index.fts.query import (
                                     BooleanQuery,
                                     BoostQuery,
                                     FullTextOperator,
                                     FullTextQuery,
                                     FullTextQueryType,
                                     MatchQuery,
                                     MultiMatchQuery,
                                     Occur,
                                     PhraseQuery,
)

__all__ = ["FullTextQueryType", "FullTextOperator", "Occur", "FullTextQuery", "MatchQuery",
           "PhraseQuery", "BoostQuery", "MultiMatchQuery", "BooleanQuery"]
