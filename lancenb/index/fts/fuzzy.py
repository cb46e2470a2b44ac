"""Fuzzy match terms, as pylance 14 runs them: a match query with ``fuzziness`` > 0 is
split into terms as typed (:func:`query_terms`), and each term is expanded to the index
tokens within ``fuzziness`` Levenshtein edits sharing its first ``prefix_length``
characters, in token order, ``max_expansions`` in all, shared by the terms in query
order (:func:`expander`). A query with
``fuzziness`` None or 0 is not fuzzy (pylance does not apply its length-based
fuzziness to None)."""

from __future__ import annotations

import re

__all__ = ["expander", "levenshtein", "query_terms", "is_fuzzy"]

_WORDS = re.compile(r"[^\W_]+")


def is_fuzzy(fuzziness) -> bool:
    """Whether a match query with this ``fuzziness`` expands its terms."""
    return fuzziness is not None and int(fuzziness) > 0


def levenshtein(a: str, b: str, cap: int) -> int:
    """Edit distance of ``a`` and ``b`` (any value above ``cap`` returned as ``cap + 1``)."""
    if abs(len(a) - len(b)) > cap:
        return cap + 1
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
        if min(cur) > cap:
            return cap + 1
        prev = cur
    return prev[-1]


def query_terms(text: str) -> list[str]:
    """The terms of a fuzzy query: runs of letters and digits, as typed (pylance splits
    a fuzzy query with tantivy's simple tokenizer alone: no lower case, stemming, stop
    words or folding), each once."""
    return list(dict.fromkeys(_WORDS.findall(text)))


def expander(fuzziness: int, max_expansions: int, prefix_length: int):
    """A function ``(index, terms) -> tokens`` doing the expansion: for each term in
    turn while fewer than ``max_expansions`` tokens are gathered, the index tokens within
    ``fuzziness`` edits that start with its first ``prefix_length`` characters, in token
    order, up to the room left."""
    k = int(fuzziness)

    def expand(idx, terms):
        vocab = sorted({t for p in idx.parts for t in p.tokens})
        out: list[str] = []
        seen: set = set()
        for i, t in enumerate(terms):
            room = max_expansions - len(out)
            if room <= 0:
                break
            pre = t[:prefix_length]
            found = []
            for v in vocab:
                if v.startswith(pre) and levenshtein(t, v, k) <= k:
                    found.append(v)
                    if len(found) >= room:
                        break
            for v in found:
                if (v, i) not in seen:
                    seen.add((v, i))
                    out.append(v)
        return list(dict.fromkeys(out))
    return expand
