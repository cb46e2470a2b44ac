"""Building an INVERTED index: tokenize a column chunk by chunk, sort each chunk's
(token, document, position) triples into posting runs (numpy, no per-row Python), merge
them into CSR posting lists (in memory, or spilled and merged token range by token
range when they outgrow the memory budget, :mod:`.spill`) and write the partition files
(:mod:`.format`) under ``_indices/<uuid>/``.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb.errors import InvalidInputError
from lancenb.index.fts import format as fmt
from lancenb.index.fts import spill
from lancenb.index.fts.bitpack import BLOCK
from lancenb.index.fts.tokenize import TokenizerParams, _split, analyze, tokenize
from lancenb.index.scalar.common import varint as _varint

__all__ = ["DETAILS_TYPE_URL", "text_column", "build_partition", "write_inverted",
           "details_bytes", "check_column_type"]

DETAILS_TYPE_URL = "/lance.table.InvertedIndexDetails"
# an index build's memory budget when LANCE_MEM_POOL_SIZE is not set
DEFAULT_BUDGET = 64 << 20


def check_column_type(t: pa.DataType, column: str) -> None:
    inner = t.value_type if (pa.types.is_list(t) or pa.types.is_large_list(t)) else t
    if not (pa.types.is_string(inner) or pa.types.is_large_string(inner)
            or pa.types.is_string_view(inner)):
        raise TypeError(f"INVERTED index column {column} must be string, large string or "
                        f"a list of strings, not {t}")


def text_column(values) -> pa.Array:
    """A column as one text per row: lists of strings joined by a space (a null list
    is a null text); a JSON column's text."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values.type, pa.BaseExtensionType):
        values = values.storage
    t = values.type
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        values = pc.binary_join(values.cast(pa.list_(pa.string())), " ")
    if not pa.types.is_string(values.type):
        values = values.cast(pa.string())
    return values


def build_partition(params: TokenizerParams, texts: pa.Array,
                    row_ids: np.ndarray) -> fmt.Partition:
    """A partition over ``texts`` (null texts are not documents) with ``row_ids``."""
    valid = np.asarray(texts.is_valid().to_numpy(zero_copy_only=False), bool)
    if not valid.all():
        texts = texts.filter(pa.array(valid))
        row_ids = row_ids[valid]
    tk = tokenize(params, texts)
    doc, nums, row_ids = _documents(tk.doc, tk.num_tokens, np.asarray(row_ids, np.uint64))
    tok, doc, freqs, pos = spill.chunk_postings(
        tk.token_ids, doc, tk.position if params.with_position else None, len(nums))
    return _partition(list(tk.vocab), row_ids, nums, tok, doc, freqs, pos)


def _documents(doc: np.ndarray, num_tokens: np.ndarray, row_ids: np.ndarray):
    """``(doc, num_tokens, row_ids)`` without the texts that have no token (empty, or
    stop words only): as in pylance, those are not documents, and would count in BM25's
    document count and average length."""
    has = num_tokens > 0
    if has.all():
        return doc, num_tokens, row_ids
    renumber = np.cumsum(has, dtype=np.int64) - 1
    return renumber[doc], num_tokens[has], row_ids[has]


def _partition(vocab: list, row_ids, num_tokens, tok, doc, freqs, pos) -> fmt.Partition:
    counts = np.bincount(tok, minlength=len(vocab))
    offsets = np.zeros(len(vocab) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    part = fmt.Partition(vocab, row_ids, num_tokens, offsets, doc, freqs)
    if pos is not None:
        part.pos_offsets = np.zeros(len(freqs) + 1, np.int64)
        np.cumsum(freqs, out=part.pos_offsets[1:])
        part.positions = pos
    return part


def memory_budget() -> int:
    """Bytes an index build may hold: ``LANCE_MEM_POOL_SIZE`` (pylance's memory pool
    setting) or :data:`DEFAULT_BUDGET`."""
    raw = os.environ.get("LANCE_MEM_POOL_SIZE")
    try:
        return int(raw) if raw else DEFAULT_BUDGET
    except ValueError:
        raise InvalidInputError(f"LANCE_MEM_POOL_SIZE={raw!r} is not a number of "
                                f"bytes") from None


class _Tokenizer:
    """Tokenizes chunks into one vocabulary, each distinct word analyzed (stemmed,
    folded, stop words dropped) once per build rather than once per chunk."""

    MAX_CACHED = 1 << 20

    def __init__(self, params: TokenizerParams):
        self.params = params
        self.vocab: dict = {}
        self.words: dict = {}  # word -> token id, -1 when the word is dropped

    def __call__(self, texts: pa.Array):
        """``(token ids, document, position, tokens per document)`` of ``texts``."""
        params = self.params
        if params.lance_tokenizer == "json":
            tk = tokenize(params, texts, self.vocab)
            return tk.token_ids, tk.doc, tk.position, tk.num_tokens
        words, parents, pos = _split(params, texts)
        ndocs = len(texts)
        if len(words) == 0:
            return (np.zeros(0, np.int64), parents, pos, np.zeros(ndocs, np.uint32))
        enc = pc.dictionary_encode(words)
        if isinstance(enc, pa.ChunkedArray):
            enc = enc.combine_chunks()
        distinct = enc.dictionary.to_pylist()
        codes = np.asarray(enc.indices.to_numpy(zero_copy_only=False), np.int64)
        cache = self.words
        if len(cache) > self.MAX_CACHED:
            cache.clear()
        ids = np.fromiter((cache.get(w, -2) for w in distinct), np.int64, len(distinct))
        new = np.flatnonzero(ids == -2)
        if len(new):
            fresh = [distinct[i] for i in new.tolist()]
            vocab = self.vocab
            for i, w, t in zip(new.tolist(), fresh, analyze(params, fresh)):
                if t is None:
                    got = -1
                else:
                    got = vocab.get(t)
                    if got is None:
                        got = vocab[t] = len(vocab)
                ids[i] = cache[w] = got
        tid = ids[codes]
        keep = tid >= 0
        doc = parents[keep]
        return tid[keep], doc, pos[keep], np.bincount(doc, minlength=ndocs).astype(np.uint32)


def _chunks(batches, chunk_bytes: int):
    """``(texts, row ids)`` of the non-null documents, about ``chunk_bytes`` of text
    at a time."""
    texts, ids, size = [], [], 0
    for values, keys in batches:
        arr = text_column(values)
        keys = np.asarray(keys, np.uint64)
        if arr.null_count:
            valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), bool)
            arr, keys = arr.filter(pa.array(valid)), keys[valid]
        texts.append(arr)
        ids.append(keys)
        size += arr.nbytes
        if size >= chunk_bytes:
            yield pa.concat_arrays(texts), np.concatenate(ids)
            texts, ids, size = [], [], 0
    if texts:
        yield pa.concat_arrays(texts), np.concatenate(ids)


def write_inverted(files, params: TokenizerParams, batches,
                   fragment_ids=None, budget: int | None = None) -> fmt.Partition | None:
    """Build over ``(values, row ids)`` batches and write the index; returns the
    partition when its posting lists fit the memory budget (``budget`` bytes, default
    :func:`memory_budget`), else None (they were spilled to disk and merged token
    range by token range). With ``fragment_ids`` (a distributed build), one partition
    numbered after the first fragment and its ``part_<id>_metadata.lance``, for
    :func:`merge_index_metadata` to gather."""
    budget = memory_budget() if budget is None else int(budget)
    pid = 0
    if fragment_ids is not None:
        pid = min(int(f) for f in fragment_ids) if len(fragment_ids) else 0
    tokenizer = _Tokenizer(params)
    # an eighth of the budget for the posting runs (merging them before a spill takes
    # about three times that), about a quarter for the tokenization of a chunk
    # (measured: 25-30 bytes per byte of text at its peak)
    runs = spill.Runs(budget // 8, params.with_position)
    row_ids, num_tokens, ndocs = [], [], 0
    try:
        for texts, keys in _chunks(batches, max(budget // 128, 1 << 16)):
            tid, doc, pos, num = tokenizer(texts)
            doc, num, keys = _documents(doc, num, keys)
            runs.add(*_shift(spill.chunk_postings(
                tid, doc, pos if params.with_position else None, len(num)), ndocs))
            row_ids.append(keys)
            num_tokens.append(num)
            ndocs += len(num)
        rows = np.concatenate(row_ids) if row_ids else np.zeros(0, np.uint64)
        nums = np.concatenate(num_tokens) if num_tokens else np.zeros(0, np.uint32)
        vocab = list(tokenizer.vocab)
        if len(runs.counts) < len(vocab):  # (tokens of chunks without postings)
            runs.counts = np.r_[runs.counts, np.zeros(len(vocab) - len(runs.counts), np.int64)]
        part = None
        if not runs.did_spill:
            part = _partition(vocab, rows, nums, *runs.merged())
            runs.close()
            fmt.write_partition(files, pid, part)
        else:
            # (~100 bytes per posting while a range is encoded: a quarter of the budget)
            fmt.write_partition_ranges(files, pid, vocab, rows, nums,
                                       runs.ranges(max(budget // 400, BLOCK)),
                                       params.with_position)
    finally:
        runs.close()
    if fragment_ids is None:
        fmt.write_metadata(files, params, [pid])
    else:
        fmt.write_metadata(files, params, [pid], name=f"part_{pid}_metadata.lance")
    return part


def _shift(postings, base: int):
    tok, doc, freqs, pos = postings
    return tok, doc + np.uint32(base), freqs, pos


def merge_index_metadata(files) -> None:
    """Gather the partitions of a distributed build (their ``part_<id>_metadata.lance``
    files) into the index's ``metadata.lance``."""
    pids, params = [], None
    for name in files.store.list(files.rel("").rstrip("/")):
        base = name.rstrip("/").rsplit("/", 1)[-1]
        if base.startswith("part_") and base.endswith("_metadata.lance"):
            p, ids, _ = fmt.read_metadata(files, base)
            params = params or p
            pids.extend(ids)
    if params is None:
        raise InvalidInputError(f"index {files.uuid}: no partition metadata to merge")
    fmt.write_metadata(files, params, sorted(set(pids)))


def details_bytes(params: TokenizerParams) -> bytes:
    """The manifest's ``InvertedIndexDetails`` message for ``params``."""
    def s(field: int, text: str) -> bytes:
        raw = text.encode()
        return _varint(field << 3 | 2) + _varint(len(raw)) + raw

    def v(field: int, value: int) -> bytes:
        return _varint(field << 3) + _varint(int(value)) if value else b""

    out = s(1, params.base_tokenizer) + s(2, f'"{params.language}"')
    out += v(3, params.with_position)
    if params.max_token_length is not None:
        out += _varint(4 << 3) + _varint(int(params.max_token_length))
    out += v(5, params.lower_case) + v(6, params.stem) + v(7, params.remove_stop_words)
    out += v(8, params.ascii_folding) + v(9, params.min_ngram_length)
    out += v(10, params.max_ngram_length) + v(11, params.prefix_only)
    return out


def params_from(kwargs: dict) -> TokenizerParams:
    try:
        return TokenizerParams.from_kwargs(kwargs)
    except TypeError as e:  # (a bad value type)
        raise InvalidInputError(str(e)) from e


def rebuild_inverted(uri: str, old_uuid: str, batches):
    """The INVERTED index ``old_uuid`` built again with its parameters over ``(values,
    row addresses)`` batches (a compaction moved the rows): ``(uuid, details type URL,
    details, index version, [(file, size)])``."""
    import uuid as uuidlib

    from lancenb.index.scalar.common import IndexFiles

    old = IndexFiles(uri, old_uuid)
    if old.exists("metadata.lance"):
        params = fmt.read_metadata(old)[0]
    else:
        params = fmt.read_legacy(old)[0]
    uid = str(uuidlib.uuid4())
    files = IndexFiles(uri, uid)
    write_inverted(files, params, batches)
    return uid, DETAILS_TYPE_URL, details_bytes(params), 0, \
        [(n, int(sz)) for n, sz in files.written]
