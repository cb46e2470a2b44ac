"""Tokenizers of the INVERTED index, as pylance builds them on tantivy: a base tokenizer
(``simple``: runs of letters and digits; ``whitespace``; ``raw``: the whole text;
``ngram``; ``jieba/<model>``: Chinese words by dictionary, see
:mod:`lancenb.index.fts.jieba`), then, in this order, tokens of ``max_token_length``
bytes or more dropped, lower case, English Snowball stemming, stop words removed and ASCII folding.

A token's position is its place among the base tokenizer's tokens (dropped tokens keep
their places), as phrase queries need.

Splitting and lower-casing run in Arrow over whole columns; the filters run once per
distinct token (:func:`analyze`), so per-token work is proportional to the vocabulary.

Examples
--------
>>> p = TokenizerParams()
>>> toks = tokenize_query(p, "The lazy dogs were running")
>>> toks
['lazi', 'dog', 'run']
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import asdict, dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb.errors import InvalidInputError, LanceIOError, NotSupportedError
from lancenb.index.fts import jieba
from lancenb.index.fts.stem import stem

__all__ = ["TokenizerParams", "Tokenized", "tokenize", "tokenize_query", "ENGLISH_STOP_WORDS"]

# tantivy's English stop words (StopWordFilter for Language::English), measured on
# pylance 14 over the union of the Snowball, NLTK and Lucene English lists
ENGLISH_STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before
being below between both but by can did do does doing down during each few for from
further had has have having he her here hers herself him himself his how i if in into
is it its itself just me more most my myself now of off on once only or other our ours
ourselves out over own re same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we
were what when where which while who whom why will with you your yours yourself
yourselves""".split())

# letters that do not decompose into an ASCII letter and a mark
_FOLD = str.maketrans({"ß": "ss", "æ": "ae", "Æ": "AE", "ø": "o", "Ø": "O", "œ": "oe",
                       "Œ": "OE", "đ": "d", "Đ": "D", "ł": "l", "Ł": "L", "þ": "th",
                       "Þ": "TH", "ð": "d", "Ð": "D", "ı": "i", "ŀ": "l", "ĸ": "q",
                       "ŉ": "n", "ſ": "s", "ĳ": "ij", "Ĳ": "IJ"})

_BASES = ("simple", "whitespace", "raw", "ngram")
_SIMPLE_SPLIT = r"[^\p{L}\p{N}]+"
_SPACE_SPLIT = r"\s+"


@dataclass
class TokenizerParams:
    """pylance's tokenizer parameters (``InvertedIndexParams``), as JSON in the index's
    ``metadata.lance`` under ``params``."""

    lance_tokenizer: str = "text"
    base_tokenizer: str = "simple"
    language: str = "English"
    with_position: bool = False
    max_token_length: int | None = 40
    lower_case: bool = True
    stem: bool = True
    remove_stop_words: bool = True
    custom_stop_words: list | None = None
    ascii_folding: bool = True
    min_ngram_length: int = 3
    max_ngram_length: int = 3
    prefix_only: bool = False
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_kwargs(cls, kwargs: dict) -> "TokenizerParams":
        """From ``create_scalar_index`` keywords (unknown ones are an error)."""
        p = cls()
        names = set(vars(p)) - {"extra"}
        for k, v in kwargs.items():
            if k not in names:
                raise InvalidInputError(f"create_scalar_index: unknown option {k!r} for "
                                        f"INVERTED")
            setattr(p, k, v)
        p.check()
        return p

    def check(self) -> None:
        base = self.base_tokenizer
        if isinstance(base, str) and (base == "jieba" or base.startswith("jieba/")):
            jieba.load_model(base)  # a missing model or dictionary is an error now
            return
        if isinstance(base, str) and base.startswith("lindera/"):
            _check_lindera_model(base)
        if base not in _BASES:
            raise InvalidInputError(f"unknown base tokenizer {base}: lancenb has "
                                    f"{', '.join(_BASES)}")
        if self.language != "English" and (self.stem or (self.remove_stop_words
                                                         and self.custom_stop_words is None)):
            raise InvalidInputError(f"language {self.language}: lancenb stems and removes "
                                    f"stop words for English only")
        if base == "ngram" and not (0 < self.min_ngram_length <= self.max_ngram_length):
            raise InvalidInputError("ngram lengths must be 0 < min_ngram_length <= "
                                    "max_ngram_length")

    def to_dict(self) -> dict:
        """The parameters as pylance reports them (``index_stats``)."""
        return __import__("json").loads(self.to_json())

    def to_json(self) -> str:
        d = asdict(self)
        extra = d.pop("extra")
        d.update({"block_size": 128, "split_identifiers": False, "split_on_numerics": False,
                  "preserve_original": False, "index_operators": False})
        d.update(extra)
        return json.dumps(d, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> "TokenizerParams":
        p = cls()
        if not text:
            return p
        d = json.loads(text)
        names = set(vars(p)) - {"extra"}
        for k, v in d.items():
            if k in names:
                setattr(p, k, v)
            else:
                p.extra[k] = v
        return p

    def stop_words(self) -> frozenset:
        if not self.remove_stop_words:
            return frozenset()
        if self.custom_stop_words is not None:
            return frozenset(self.custom_stop_words)
        return ENGLISH_STOP_WORDS


def _fold(token: str) -> str:
    if token.isascii():
        return token
    t = unicodedata.normalize("NFKD", token.translate(_FOLD))
    return "".join(c for c in t if not unicodedata.combining(c))


def analyze(params: TokenizerParams, words: list[str]) -> list[str | None]:
    """The filters after the base tokenizer, on distinct ``words``: each one's token, or
    None when it is dropped (too long, or a stop word)."""
    limit = params.max_token_length
    stops = params.stop_words()
    out: list[str | None] = []
    for w in words:
        if limit is not None and len(w.encode()) >= limit:
            out.append(None)
            continue
        if params.lower_case:
            w = w.lower()
        if params.stem:
            w = stem(w)
        if w in stops:
            out.append(None)
            continue
        if params.ascii_folding:
            w = _fold(w)
        out.append(w)
    return out


@dataclass
class Tokenized:
    """The tokens of a column: token ``i`` of the flat arrays is ``vocab[token_ids[i]]``
    in document ``doc[i]`` at ``position[i]``; ``num_tokens`` per document."""

    vocab: list
    token_ids: np.ndarray
    doc: np.ndarray
    position: np.ndarray
    num_tokens: np.ndarray


def _ngrams(params: TokenizerParams, texts: pa.Array) -> tuple[list, np.ndarray, np.ndarray]:
    lo, hi = int(params.min_ngram_length), int(params.max_ngram_length)
    words, parents, positions = [], [], []
    for i, t in enumerate(texts.to_pylist()):
        if t is None:
            continue
        k = 0
        for start in range(len(t)):
            for n in range(lo, hi + 1):
                if start + n > len(t):
                    break
                words.append(t[start:start + n])
                parents.append(i)
                positions.append(k)
                k += 1
            if params.prefix_only:
                break
    return words, np.asarray(parents, np.int64), np.asarray(positions, np.int64)


def _split(params: TokenizerParams, texts: pa.Array):
    """The base tokenizer: ``(words array, parent document, position)``."""
    base = params.base_tokenizer
    if base == "jieba" or base.startswith("jieba/"):
        return _jieba_split(jieba.load_model(base), texts)
    if base == "ngram":
        words, parents, pos = _ngrams(params, texts)
        return pa.array(words, pa.string()), parents, pos
    if base == "raw":
        valid = np.flatnonzero(texts.is_valid().to_numpy(zero_copy_only=False))
        return texts.filter(texts.is_valid()), valid, np.zeros(len(valid), np.int64)
    pattern = _SIMPLE_SPLIT if base == "simple" else _SPACE_SPLIT
    lists = pc.split_pattern_regex(texts, pattern)
    flat = pc.list_flatten(lists)
    parents = np.asarray(pc.list_parent_indices(lists).to_numpy(), np.int64)
    keep = np.asarray(pc.not_equal(pc.binary_length(flat), 0).to_numpy(zero_copy_only=False))
    flat = flat.filter(pa.array(keep))
    parents = parents[keep]
    n = len(parents)
    if n == 0:
        return flat, parents, np.zeros(0, np.int64)
    starts = np.flatnonzero(np.r_[True, parents[1:] != parents[:-1]])
    first = np.repeat(starts, np.diff(np.r_[starts, n]))
    return flat, parents, np.arange(n, dtype=np.int64) - first


def _jieba_split(model, texts: pa.Array):
    """The jieba base tokenizer (search mode; positions are character offsets, as
    pylance's): one Python segmentation per document."""
    words, parents, positions = [], [], []
    for i, t in enumerate(texts.to_pylist()):
        if not t:
            continue
        for w, p in model.search_tokens(t):
            words.append(w)
            parents.append(i)
            positions.append(p)
    return (pa.array(words, pa.string()), np.asarray(parents, np.int64),
            np.asarray(positions, np.int64))


def _json_leaves(value, prefix: str, out: list) -> None:
    """``(path, type, value)`` of each leaf of a JSON value (objects' keys joined by
    ".", array items under their array's path), in document order."""
    if isinstance(value, dict):
        for k, v in value.items():
            _json_leaves(v, f"{prefix}.{k}" if prefix else k, out)
    elif isinstance(value, list):
        for v in value:
            _json_leaves(v, prefix, out)
    elif isinstance(value, str):
        out.append((prefix, "str", value))
    elif value is None:
        out.append((prefix, "null", "null"))
    elif isinstance(value, bool):
        out.append((prefix, "bool", "true" if value else "false"))
    else:
        out.append((prefix, "number", json.dumps(value)))


def _json_tokens(params: TokenizerParams, leaves) -> list[str]:
    """Tokens ``path,type,value`` (a string's words each through the text analyzer)."""
    out: list[str] = []
    for path, kind, value in leaves:
        if kind == "str":
            out.extend(f"{path},str,{w}" for w in query_words(params, value)[0])
        else:
            out.append(f"{path},{kind},{value}")
    return out


def json_query_tokens(params: TokenizerParams, text: str) -> list[str]:
    """A JSON index's query: ``path,type,value`` triples separated by ";"."""
    leaves = []
    for triple in text.split(";"):
        parts = triple.split(",", 2)
        if len(parts) != 3 or parts[1] not in ("str", "number", "bool", "null"):
            raise InvalidInputError(f"Invalid triple format: {triple}")
        leaves.append(tuple(parts))
    return _json_tokens(params, leaves)


def _tokenize_json(params: TokenizerParams, texts: pa.Array, vocab: dict) -> Tokenized:
    """JSON documents (one Python parse per document: JSON columns only)."""
    ids, docs, pos = [], [], []
    for d, text in enumerate(texts.to_pylist()):
        if text is None:
            continue
        leaves: list = []
        _json_leaves(json.loads(text), "", leaves)
        for k, tok in enumerate(_json_tokens(params, leaves)):
            got = vocab.get(tok)
            if got is None:
                got = vocab[tok] = len(vocab)
            ids.append(got)
            docs.append(d)
            pos.append(k)
    doc = np.asarray(docs, np.int64)
    return Tokenized(list(vocab), np.asarray(ids, np.int64), doc, np.asarray(pos, np.int64),
                     np.bincount(doc, minlength=len(texts)).astype(np.uint32))


def tokenize(params: TokenizerParams, texts, vocab: dict | None = None) -> Tokenized:
    """Tokenize a string column (nulls are documents without tokens). ``vocab``: a
    ``{token: id}`` to extend (ids of new tokens follow); default a new one."""
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if params.lance_tokenizer == "json":
        if isinstance(texts.type, pa.BaseExtensionType):
            texts = texts.storage
        return _tokenize_json(params, texts.cast(pa.string()), {} if vocab is None else vocab)
    if pa.types.is_large_string(texts.type) or pa.types.is_string_view(texts.type):
        texts = texts.cast(pa.string())
    words, parents, pos = _split(params, texts)
    ndocs = len(texts)
    vocab = {} if vocab is None else vocab
    if len(words) == 0:
        return Tokenized(list(vocab), np.zeros(0, np.int64), parents, pos,
                         np.zeros(ndocs, np.uint32))
    enc = pc.dictionary_encode(words).combine_chunks() if isinstance(words, pa.ChunkedArray) \
        else pc.dictionary_encode(words)
    distinct = enc.dictionary.to_pylist()
    codes = np.asarray(enc.indices.to_numpy(zero_copy_only=False), np.int64)
    mapped = analyze(params, distinct)
    ids = np.empty(len(distinct), np.int64)
    for i, tok in enumerate(mapped):
        if tok is None:
            ids[i] = -1
        else:
            got = vocab.get(tok)
            if got is None:
                got = vocab[tok] = len(vocab)
            ids[i] = got
    tid = ids[codes]
    keep = tid >= 0
    doc = parents[keep]
    num = np.bincount(doc, minlength=ndocs).astype(np.uint32)
    return Tokenized(list(vocab), tid[keep], doc, pos[keep], num)


_PY_SPLIT = {"simple": re.compile(r"[^\W_]+"), "whitespace": re.compile(r"\S+")}


def query_words(params: TokenizerParams, text: str) -> tuple[list[str], list[int]]:
    """The base tokenizer on one short text (a query) in Python: ``(words, positions)``
    (the column path, :func:`tokenize`, splits in Arrow)."""
    pat = _PY_SPLIT.get(params.base_tokenizer)
    if pat is None:
        t = tokenize(params, pa.array([text], pa.string()))
        return [t.vocab[i] for i in t.token_ids.tolist()], t.position.tolist()
    words = pat.findall(text)
    out, pos = [], []
    for i, tok in enumerate(analyze(params, words)):
        if tok is not None:
            out.append(tok)
            pos.append(i)
    return out, pos


def tokenize_query(params: TokenizerParams, text: str) -> list[str]:
    """The tokens of a query string, in order (repeats kept)."""
    if params.lance_tokenizer == "json":
        return json_query_tokens(params, text)
    return query_words(params, text)[0]


def _check_lindera_model(base: str) -> None:
    """A ``lindera/<name>`` model: the folder ``<name>`` under
    ``$LANCE_LANGUAGE_MODEL_HOME/lindera`` and its ``config.yml``, whose dictionary and
    user dictionary ``path`` entries (relative to the working directory) must exist: a
    missing file is an OSError, as pylance's; a complete model is refused (lancenb has
    no lindera segmenter)."""
    import os

    home = os.environ.get("LANCE_LANGUAGE_MODEL_HOME")
    folder = os.path.join(home, "lindera", base.split("/", 1)[1]) if home else None
    config = os.path.join(folder, "config.yml") if folder else None
    if config is None or not os.path.isfile(config):
        raise LanceIOError(f"base tokenizer {base}: no lindera config at {config} "
                           f"(LANCE_LANGUAGE_MODEL_HOME={home})")
    with open(config, encoding="utf-8") as f:
        paths = re.findall(r"^\s*path:\s*[\"']?([^\"'\n]+?)[\"']?\s*$", f.read(), re.M)
    for path in paths:
        if not os.path.exists(path):
            raise LanceIOError(f"base tokenizer {base}: {path} (named by {config}) not "
                               f"found")
    raise NotSupportedError(f"base tokenizer {base}: lancenb has no lindera segmenter")
