"""Fuzzy match terms: each query token expanded to the index tokens within a
Levenshtein distance (``fuzziness``; None: by length as pylance, 0 up to 2
characters, 1 up to 5, else 2), sharing the first ``prefix_length`` characters, at most
``max_expansions`` of them (nearest first, then in token order)."""

from __future__ import annotations

__all__ = ["expander", "levenshtein"]


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


def _auto(token: str) -> int:
    n = len(token)
    return 0 if n <= 2 else (1 if n <= 5 else 2)


def expander(fuzziness, max_expansions: int, prefix_length: int):
    """A function ``(index, tokens) -> tokens`` doing the expansion."""
    def expand(idx, tokens):
        vocab = []
        for p in idx.parts:
            vocab.extend(p.tokens)
        vocab = sorted(set(vocab))
        out = []
        for t in tokens:
            k = _auto(t) if fuzziness is None else int(fuzziness)
            pre = t[:prefix_length]
            found = [(levenshtein(t, v, k), v) for v in vocab if v.startswith(pre)]
            found = sorted((d, v) for d, v in found if d <= k)[:max_expansions]
            out.extend(v for _, v in found)
        return list(dict.fromkeys(out))
    return expand
