"""BM25 over an opened INVERTED index, as pylance scores: per query token
``idf(n_t, N) * (K1 + 1) * f / (f + K1 * (1 - B + B * len / avgdl))`` with ``N``,
``avgdl`` and ``n_t`` over every partition, float32; and pylance's flat scoring of rows
no index covers (statistics over the index and those rows together).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lancenb.errors import InvalidInputError
from lancenb.index.fts import format as fmt
from lancenb.index.fts.fuzzy import query_terms
from lancenb.index.fts.tokenize import TokenizerParams, query_words, tokenize, tokenize_query
from lancenb.index.scalar.common import IndexFiles, note_parts
from lancenb.io.pools import module_lock

__all__ = ["OpenIndex", "open_inverted", "match", "match_topk", "prewarm", "phrase", "flat_match"]

K1, B = np.float32(fmt.K1), np.float32(fmt.B)
_CACHE: dict = {}
_SESSIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = module_lock(globals(), "_LOCK")  # (a fresh one in a forked child)


@dataclass
class OpenIndex:
    """An INVERTED index in memory: its tokenizer parameters and partitions."""

    uuid: str
    params: TokenizerParams
    parts: list
    fragment_ids: set
    has_positions: bool

    @property
    def num_docs(self) -> int:
        return sum(len(p.row_ids) for p in self.parts)

    @property
    def total_tokens(self) -> int:
        return sum(p.total_tokens for p in self.parts)

    def avgdl(self) -> np.float32:
        return np.float32(self.total_tokens) / np.float32(max(self.num_docs, 1))

    def token_docs(self, token: str) -> int:
        n = 0
        for p in self.parts:
            i = p.lookup().get(token)
            if i is not None:
                n += int(p.offsets[i + 1] - p.offsets[i])
        return n


def _cache_of(session) -> dict:
    """The open indices of ``session`` (a dataset's session; None: process-wide)."""
    if session is None:
        return _CACHE
    try:
        return _SESSIONS.setdefault(session, {})
    except TypeError:  # (a session object that takes no weak reference)
        return _CACHE


def open_inverted(files, fragment_ids, *, positions: bool = False,
                  session=None) -> OpenIndex:
    """Read (once per session, cached by uuid) the index in ``files``; each partition's
    three files read count as index parts (``ScanStatistics.parts_loaded``)."""
    key = files.store.uri_of(files.rel(""))
    with _LOCK:
        cache = _cache_of(session)
        got = cache.get((key, positions)) or (cache.get((key, True)) if not positions
                                               else None)
    if got is not None:
        return got
    if not files.exists("metadata.lance") and files.exists("tokens.lance"):
        params, legacy = fmt.read_legacy(files)
        parts = [legacy]
    else:
        params, pids, meta = fmt.read_metadata(files)
        parts = [fmt.read_partition(files, p, meta, positions) for p in pids]
    note_parts(3 * len(parts))
    has_pos = bool(params.with_position)
    idx = OpenIndex(files.uuid, params, parts, set(fragment_ids), has_pos)
    with _LOCK:
        if len(cache) > 32:
            cache.clear()
        cache[(key, positions)] = idx
    return idx


def prewarm(uri: str, entries: list, session=None) -> None:
    """Load the INVERTED index segments ``entries`` (``list_indices()`` dicts) into
    ``session``'s cache, with positions when stored (pylance's ``prewarm_index``)."""
    for e in entries:
        open_inverted(IndexFiles(uri, e["uuid"]), e.get("fragment_ids") or [],
                      positions=True, session=session)


def _norms(p, avgdl: np.float32) -> np.ndarray:
    """``K1 * (1 - B + B * len / avgdl)`` of each document (kept with the partition)."""
    got = p.norms
    if got is None or got[0] != avgdl:
        got = (avgdl, K1 * (np.float32(1) - B + B * p.num_tokens.astype(np.float32) / avgdl))
        p.norms = got
    return got[1]


def _doc_scores(idx: OpenIndex, tokens: list[str], boost: float):
    """Per partition ``(partition, score, distinct tokens held, any hit)`` of documents
    holding any of ``tokens`` (a token repeated in the query counts as often, as in
    pylance)."""
    repeats: dict = {}
    for t in tokens:
        repeats[t] = repeats.get(t, 0) + 1
    tokens = list(repeats)
    n_docs = idx.num_docs
    avgdl = idx.avgdl()
    weights = {t: fmt.idf(idx.token_docs(t), n_docs) for t in tokens}
    out = []
    for p in idx.parts:
        look = p.lookup()
        nd = len(p.row_ids)
        score = np.zeros(nd, np.float32)
        hits = np.zeros(nd, np.int32)
        any_hit = False
        norm = _norms(p, avgdl)
        for t in tokens:
            i = look.get(t)
            if i is None:
                continue
            lo, hi = int(p.offsets[i]), int(p.offsets[i + 1])
            d = p.doc_ids[lo:hi].astype(np.int64)
            f = p.freqs[lo:hi].astype(np.float32)
            s = weights[t] * ((K1 + np.float32(1)) * f / (f + norm[d]))
            score[d] += s.astype(np.float32) * np.float32(repeats[t])
            hits[d] += 1
            any_hit = True
        out.append((p, score * np.float32(boost), hits, any_hit))
    return out


def _block_max(p, avgdl: np.float32, tid: int, norm: np.ndarray) -> np.ndarray:
    """Per block of 128 postings of token ``tid``, its largest ``(K1 + 1) * f / (f +
    norm)`` (kept with the partition until the average document length changes)."""
    from lancenb.kernels.fts import topk as kt

    got = p.block_max
    if got is None or got[0] != avgdl:
        got = p.block_max = (avgdl, {})
    out = got[1].get(tid)
    if out is None:
        lo, hi = int(p.offsets[tid]), int(p.offsets[tid + 1])
        out = np.zeros((hi - lo + kt.BLOCK - 1) // kt.BLOCK, np.float32)
        kt.block_max(p.doc_ids, p.freqs, lo, hi, norm, K1 + np.float32(1), out)
        got[1][tid] = out
    return out


def match_topk(idx: OpenIndex, text: str, k: int, *, boost: float = 1.0, live=None):
    """``(row ids, scores, documents scored)``: the best ``k`` of an OR match query (score
    descending, then row id): :func:`match` then a top-k, without scoring most postings
    of frequent tokens (MaxScore, ``kernels/fts/topk.py``). ``live(partition)`` gives a
    uint8 mask of the partition's documents to keep (or None: all)."""
    from lancenb.kernels.fts import topk as kt

    toks = tokenize_text(idx.params, text)
    repeats: dict = {}
    for t in toks:
        repeats[t] = repeats.get(t, 0) + 1
    if not repeats or k <= 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.float32), 0
    n_docs = idx.num_docs
    avgdl = idx.avgdl()
    w = np.array([fmt.idf(idx.token_docs(t), n_docs) for t in repeats], np.float32)
    rep = np.array(list(repeats.values()), np.float32)
    hs, hr, size = np.zeros(k, np.float32), np.zeros(k, np.uint64), np.zeros(1, np.int64)
    none = np.zeros(0, np.uint8)
    scored = 0
    for p in idx.parts:
        look = p.lookup()
        tids = [look.get(t) for t in repeats]
        if all(i is None for i in tids):
            continue
        norm = _norms(p, avgdl)
        lo = np.array([0 if i is None else p.offsets[i] for i in tids], np.int64)
        hi = np.array([0 if i is None else p.offsets[i + 1] for i in tids], np.int64)
        bm = [none.view(np.float32) if i is None else _block_max(p, avgdl, i, norm)
              for i in tids]
        bstart = np.concatenate([[0], np.cumsum([len(b) for b in bm])]).astype(np.int64)
        mask = live(p) if live is not None else None
        scored += kt.maxscore_topk(p.doc_ids, p.freqs, lo, hi, w, rep, bstart, np.concatenate(bm),
                         norm, none if mask is None else mask, p.row_ids, np.float32(boost),
                         K1 + np.float32(1), hs, hr, size)
    n = int(size[0])
    return hr[:n].copy(), hs[:n].copy(), scored


def match(idx: OpenIndex, text: str, *, operator: str = "OR", boost: float = 1.0,
          fuzzy=None) -> tuple[np.ndarray, np.ndarray]:
    """``(row ids, scores)`` of a match query over the index."""
    if fuzzy is not None and idx.params.lance_tokenizer != "json":
        toks = fuzzy(idx, query_terms(text))
    else:
        toks = tokenize_text(idx.params, text)
        if fuzzy is not None:
            toks = fuzzy(idx, list(dict.fromkeys(toks)))
    if not toks:
        return np.zeros(0, np.uint64), np.zeros(0, np.float32)
    rows, scores = [], []
    for p, score, hits, any_hit in _doc_scores(idx, toks, boost):
        if not any_hit:
            continue
        keep = hits >= (len(set(toks)) if operator == "AND" else 1)
        rows.append(p.row_ids[keep])
        scores.append(score[keep])
    return _cat(rows, scores)


def _cat(rows, scores):
    if not rows:
        return np.zeros(0, np.uint64), np.zeros(0, np.float32)
    return np.concatenate(rows).astype(np.uint64), np.concatenate(scores).astype(np.float32)


def tokenize_text(params: TokenizerParams, text: str) -> list[str]:
    """The tokens of one query text."""
    return tokenize_query(params, text)


def _query_positions(params: TokenizerParams, text: str) -> tuple[list[str], list[int]]:
    if params.lance_tokenizer == "json":
        toks = tokenize_query(params, text)
        return toks, list(range(len(toks)))
    return query_words(params, text)


def phrase(idx: OpenIndex, text: str, slop: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(row ids, scores)`` of the documents holding the phrase (terms in order, gaps
    as in the query plus at most ``slop``)."""
    if not idx.has_positions:
        raise InvalidInputError("position is not found but required for phrase queries, "
                                "try recreating the index with position")
    toks, qpos = _query_positions(idx.params, text)
    if not toks:
        return np.zeros(0, np.uint64), np.zeros(0, np.float32)
    distinct = list(dict.fromkeys(toks))
    rows, scores = [], []
    for p, score, hits, any_hit in _doc_scores(idx, toks, 1.0):
        if not any_hit:
            continue
        if p.positions is None:
            raise InvalidInputError("position is not found but required for phrase queries, "
                                    "try recreating the index with position")
        cand = np.flatnonzero(hits >= len(distinct))
        look = p.lookup()
        ok = np.zeros(len(cand), bool)
        for k, d in enumerate(cand.tolist()):
            ok[k] = _has_phrase(p, look, toks, qpos, d, slop)
        rows.append(p.row_ids[cand[ok]])
        scores.append(score[cand[ok]])
    return _cat(rows, scores)


def _positions_of(p, tid: int, doc: int) -> np.ndarray:
    lo, hi = int(p.offsets[tid]), int(p.offsets[tid + 1])
    j = lo + int(np.searchsorted(p.doc_ids[lo:hi], doc))
    return p.positions[int(p.pos_offsets[j]):int(p.pos_offsets[j + 1])].astype(np.int64)


def _has_phrase(p, look, toks, qpos, doc, slop) -> bool:
    return _positions_hold_phrase([_positions_of(p, look[t], doc) for t in toks], qpos,
                                  slop)


def _positions_hold_phrase(lists, qpos, slop) -> bool:
    """Whether positions ``lists`` (one sorted array per query token, in query order)
    hold the phrase, as pylance decides it: with each position taken relative to its
    token's place in the query, some choice of one position per token is
    non-decreasing along the query with steps of at most ``slop``. Searched as pylance
    searches it: every token at its first relative position >= the furthest position
    a failed step asks for, until a choice fits or a token runs out."""
    rel = [np.asarray(x, np.int64) - int(q) for x, q in zip(lists, qpos)]
    at = [int(np.searchsorted(r, 0)) for r in rel]
    while True:
        target = None
        fits = True
        for i in range(1, len(rel)):
            if at[i - 1] >= len(rel[i - 1]) or at[i] >= len(rel[i]):
                return False
            last, nxt = int(rel[i - 1][at[i - 1]]), int(rel[i][at[i]])
            move = last if last > nxt else max(last + 1, nxt - slop)
            target = move if target is None else max(target, move)
            if not last <= nxt <= last + slop:
                fits = False
                break
        if fits:
            return True
        at = [int(np.searchsorted(r, target)) for r in rel]


def flat_match(params: TokenizerParams | None, idx: OpenIndex | None, text: str,
               texts: pa.Array, row_ids: np.ndarray, *, operator: str = "OR",
               slop: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """pylance's flat BM25 of ``texts`` (rows no index covers): documents holding any
    query token (``operator="OR"``), every one (``"AND"``), or the phrase (``slop`` not
    None: every token, in order, gaps as in the query plus at most ``slop``)."""
    if params is None:  # (no index: pylance splits like 'simple' and nothing else)
        params = TokenizerParams(lower_case=False, stem=False, remove_stop_words=False,
                                 ascii_folding=False, max_token_length=None)
    if slop is not None:
        qt, qpos = _query_positions(params, text)
    else:
        qt = tokenize_text(params, text)
    valid = np.asarray(texts.is_valid().to_numpy(zero_copy_only=False), bool)
    vocab: dict = {t: i for i, t in enumerate(dict.fromkeys(qt))}
    nq = len(vocab)
    tk = tokenize(params, texts, vocab=dict(vocab))
    n = len(texts)
    if nq == 0 or n == 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.float32)
    # pylance 14: one set of statistics over the index and every unindexed document
    # that has a token (a text without tokens is not a document), each document's
    # full length
    n_idx = idx.num_docs if idx is not None else 0
    t_idx = idx.total_tokens if idx is not None else 0
    nq_idx = np.array([idx.token_docs(t) if idx is not None else 0 for t in vocab], np.int64)
    inq = tk.token_ids < nq
    d, t = tk.doc[inq], tk.token_ids[inq]
    freq = np.zeros((n, nq), np.float32)
    np.add.at(freq, (d, t), 1)
    num_docs = max(n_idx + int((valid & (tk.num_tokens > 0)).sum()), 1)
    total = t_idx + int(tk.num_tokens.astype(np.int64)[valid].sum())
    avgdl = np.float32(total) / np.float32(num_docs)
    has = nq_idx + (freq > 0).sum(axis=0)
    doclen = tk.num_tokens.astype(np.float32)
    norm = K1 * (np.float32(1) - B + B * doclen / (avgdl if avgdl > 0 else np.float32(1)))
    w = fmt.idf(has, num_docs)
    rep = np.zeros(nq, np.float32)  # (a token repeated in the query counts as often)
    np.add.at(rep, [vocab[t] for t in qt], 1)
    s = (w[None, :] * (freq * (K1 + np.float32(1)) / (freq + norm[:, None])) * rep).sum(
        axis=1, dtype=np.float32)
    keep = (s > 0) & valid
    if operator == "AND" or slop is not None:
        keep &= (freq > 0).all(axis=1)
    if slop is not None and keep.any():
        keep[keep] = _flat_phrases(tk, np.flatnonzero(keep), [vocab[t] for t in qt], qpos,
                                   nq, slop)
    return np.asarray(row_ids, np.uint64)[keep], s[keep].astype(np.float32)


def _flat_phrases(tk, docs: np.ndarray, qids: list, qpos: list, nq: int,
                  slop: int) -> np.ndarray:
    """Whether each of ``docs`` (holding every query token) holds the phrase: the
    positions of its query tokens as one posting each, checked as :func:`phrase` does."""
    inq = tk.token_ids < nq
    d, t, pos = tk.doc[inq], tk.token_ids[inq], tk.position[inq].astype(np.int64)
    order = np.lexsort((pos, t, d))
    d, t, pos = d[order], t[order], pos[order]
    lo = np.searchsorted(d, docs, side="left")
    hi = np.searchsorted(d, docs, side="right")
    out = np.zeros(len(docs), bool)
    for k in range(len(docs)):
        dt, dp = t[lo[k]:hi[k]], pos[lo[k]:hi[k]]
        lists = [dp[dt == q] for q in qids]
        out[k] = _positions_hold_phrase(lists, qpos, slop)
    return out
