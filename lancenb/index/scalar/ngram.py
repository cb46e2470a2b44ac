"""NGRAM index in pylance's on-disk format: which rows hold each trigram, to answer
``contains(column, 'text')`` with a superset of its rows (the scan rechecks).

Text is lower-cased and ASCII-folded (``é`` to ``e``), then cut into every run of
three consecutive characters that are all ASCII letters or digits. A trigram
``abc`` is the token ``37**2 * p(a) + 37 * p(b) + p(c)`` where ``p`` of ``0``..``9``
is 1..10 and of ``a``..``z`` is 11..36 (token 0 holds the rows whose text is null).

``_indices/<uuid>/ngram_postings.lance`` (index version 0)
    One row per token, ascending: ``tokens`` (``uint32``) and ``posting_list``
    (binary, not null): the rows holding it as a serialised 64-bit roaring treemap
    (``u64`` count, then per high half: ``u32`` high, portable roaring bitmap of
    the low halves). Rows are row ids (the row addresses without stable row ids).
    Details ``lance.table.NGramIndexDetails`` (empty).

A query string of fewer than three bytes tells nothing (the index is not used); one
with a trigram no row holds matches no row; otherwise the answer is the rows holding
all of its trigrams. Example: ``["hello", None]`` gives tokens ``0`` (row 1),
``ell``, ``hel`` and ``llo`` (row 0).
"""

from __future__ import annotations

import array
import functools
import struct
import threading
import unicodedata
from collections import OrderedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from pyroaring import BitMap, BitMap64
from sqlglot import exp

from lancenb.errors import CorruptFileError
from lancenb.index.scalar import rowmap
from lancenb.index.scalar.common import IndexFiles

__all__ = ["NGramIndex", "write_ngram", "contains_query", "trigram_tokens", "POSTINGS_FILE",
           "DETAILS_TYPE_URL", "like_runs", "like_regex"]

POSTINGS_FILE = "ngram_postings.lance"
DETAILS_TYPE_URL = "/lance.table.NGramIndexDetails"
# byte -> position in the alphabet (0: not an ASCII letter or digit)
_POS = np.zeros(256, np.uint32)
_POS[ord("0"):ord("9") + 1] = np.arange(1, 11)
_POS[ord("a"):ord("z") + 1] = np.arange(11, 37)


def _fold(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text)
                   if not unicodedata.combining(c))


def _prepared(values: pa.Array) -> pa.Array:
    """Lower-cased, ASCII-folded text (nulls kept)."""
    low = pc.utf8_lower(values.cast(pa.large_string()))
    if pc.all(pc.fill_null(pc.string_is_ascii(low), True)).as_py():
        return low
    return pa.array([None if s is None else (s if s.isascii() else _fold(s))
                     for s in low.to_pylist()], pa.large_string())


def trigram_tokens(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``(row positions, tokens)`` of every trigram occurrence in ``values`` (a
    string array), repeats included."""
    v = _prepared(values)
    bufs = v.buffers()
    offs = np.frombuffer(bufs[1], np.int64)[v.offset:v.offset + len(v) + 1]
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None and len(bufs[2]) \
        else np.zeros(0, np.uint8)
    if len(data) < 3 or not len(v):
        return np.zeros(0, np.int64), np.zeros(0, np.uint32)
    pos = _POS[data]
    ok = (pos[:-2] > 0) & (pos[1:-1] > 0) & (pos[2:] > 0)
    starts = np.flatnonzero(ok)
    rows = np.searchsorted(offs, starts, side="right") - 1
    keep = starts + 2 < offs[rows + 1]  # (the three bytes in one row)
    starts, rows = starts[keep], rows[keep]
    tokens = pos[starts] * 37 * 37 + pos[starts + 1] * 37 + pos[starts + 2]
    return rows.astype(np.int64), tokens.astype(np.uint32)


def _treemap(ids: np.ndarray) -> bytes:
    """The serialised 64-bit roaring treemap of ``ids`` (sorted, unique)."""
    highs = (ids >> np.uint64(32)).astype(np.uint32)
    lows = (ids & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    cuts = np.flatnonzero(np.diff(highs)) + 1
    bounds = [0, *cuts.tolist(), len(ids)]
    parts = [struct.pack("<I", int(highs[a])) +
             BitMap(array.array("I", lows[a:b].tobytes())).serialize()
             for a, b in zip(bounds[:-1], bounds[1:])]
    return struct.pack("<Q", len(parts)) + b"".join(parts)


def _portable_size(raw: bytes, pos: int) -> int:
    """The length of the portable roaring bitmap at ``raw[pos:]``."""
    (cookie,) = struct.unpack_from("<I", raw, pos)
    p = pos + 4
    if cookie & 0xFFFF == 12347:
        n = (cookie >> 16) + 1
        runs = raw[p:p + (n + 7) // 8]
        p += (n + 7) // 8
    elif cookie == 12346:
        (n,) = struct.unpack_from("<I", raw, p)
        p += 4
        runs = b""
    else:
        raise CorruptFileError(f"posting list: roaring cookie {cookie:#x}")
    cards = [struct.unpack_from("<HH", raw, p + 4 * i)[1] + 1 for i in range(n)]
    p += 4 * n
    if cookie == 12346 or n >= 4:
        p += 4 * n
    for i, card in enumerate(cards):
        if runs and runs[i // 8] >> (i % 8) & 1:
            (nruns,) = struct.unpack_from("<H", raw, p)
            p += 2 + 4 * nruns
        else:
            p += 8192 if card > 4096 else 2 * card
    return p - pos


def _read_treemap(raw: bytes) -> BitMap64:
    """A posting list (a portable 64-bit roaring treemap, as both libraries write
    it): pyroaring reads that format itself; the container walk below is the
    fallback for one it refuses."""
    raw = bytes(raw)
    try:
        return BitMap64.deserialize(raw)
    except (ValueError, OverflowError):
        pass
    return _walk_treemap(raw)


def _walk_treemap(raw: bytes) -> BitMap64:
    (count,) = struct.unpack_from("<Q", raw, 0)
    pos, out = 8, BitMap64()
    for _ in range(count):
        (high,) = struct.unpack_from("<I", raw, pos)
        pos += 4
        size = _portable_size(raw, pos)
        lows = np.frombuffer(BitMap.deserialize(raw[pos:pos + size]).to_array(), np.uint32)
        out |= rowmap.from_ids(lows.astype(np.uint64) | np.uint64(high << 32))
        pos += size
    return out


# the serialised size of the posting lists an open NGRAM index keeps decoded
_CACHE_BYTES = 64 << 20
# pending (token, row) pairs folded into the row sets per this many; the row sets
# are kept per 2**_CHUNK_BITS tokens, serialised a chunk at a time at the end
_FOLD_PAIRS = 1 << 22
_CHUNK_BITS = 10
_LOW = np.uint64(0xFFFFFFFF)


def write_ngram(files: IndexFiles, batches, value_type: pa.DataType) -> None:
    """Write an NGRAM index from ``(values, uint64 row ids)`` batches.

    The ``(token, row)`` pairs go, per high half of the row id and range of tokens,
    into a roaring bitmap of ``token << 32 | low half`` (compressed, repeats merged
    as they come), so the build never holds every pair as arrays; the posting lists
    are then cut out of those bitmaps a range of tokens at a time."""
    sets: dict[tuple[int, int], BitMap64] = {}
    toks, ids, held = [], [], 0

    def fold():
        tok = np.concatenate(toks)
        rid = np.concatenate(ids)
        highs = rid >> np.uint64(32)
        keys = (tok.astype(np.uint64) << np.uint64(32)) | (rid & _LOW)
        present = np.unique(highs).tolist()
        for h in present:
            part = np.sort(keys if len(present) == 1 else keys[highs == h])
            chunk = part >> np.uint64(32 + _CHUNK_BITS)
            cuts = np.flatnonzero(np.diff(chunk)) + 1
            for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), len(part)]):
                key = (int(chunk[a]), h)
                got = rowmap.from_ids(part[a:b])
                if key in sets:
                    sets[key] |= got
                else:
                    sets[key] = got
        toks.clear()
        ids.clear()

    for values, row_ids in batches:
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        rows, tokens = trigram_tokens(values)
        nulls = np.flatnonzero(~values.is_valid().to_numpy(zero_copy_only=False))
        toks += [tokens, np.zeros(len(nulls), np.uint32)]
        ids += [row_ids[rows], row_ids[nulls]]
        held += len(rows) + len(nulls)
        if held >= _FOLD_PAIRS:
            fold()
            held = 0
    if toks:
        fold()
    schema = pa.schema([pa.field("tokens", pa.uint32()),
                        pa.field("posting_list", pa.binary(), False)])
    files.write(POSTINGS_FILE, None, schema, _posting_batches(sets, schema))


def _posting_batches(sets: dict, schema: pa.Schema):
    """The ``(tokens, posting_list)`` batches of the row sets ``sets`` ((token range,
    high half) -> bitmap of ``token << 32 | low half``), in token order (each row
    set dropped once read)."""
    for chunk in sorted({c for c, _ in sets}):
        tok_parts, rid_parts = [], []
        for h in sorted(h for c, h in sets if c == chunk):
            keys = rowmap.to_ids(sets.pop((chunk, h)))
            if keys.size:
                tok_parts.append(keys >> np.uint64(32))
                rid_parts.append((keys & _LOW) | np.uint64(h << 32))
        if not tok_parts:
            continue
        tok = np.concatenate(tok_parts)
        rid = np.concatenate(rid_parts)
        if len(tok_parts) > 1:  # (each part sorted by token then row; highs ascending)
            order = np.argsort(tok, kind="stable")
            tok, rid = tok[order], rid[order]
        cuts = np.flatnonzero(np.diff(tok)) + 1
        starts = np.concatenate([[0], cuts])
        ends = np.concatenate([cuts, [tok.size]])
        yield pa.record_batch(
            [pa.array(tok[starts].astype(np.uint32), pa.uint32()),
             pa.array([_treemap(rid[a:b]) for a, b in zip(starts.tolist(), ends.tolist())],
                      pa.binary())], schema=schema)


@functools.lru_cache(maxsize=256)
def contains_query(sql: str) -> tuple[str, str] | None:
    """``(column, substring)`` of a ``contains(column, 'text')`` filter part, else None
    (kept for the last 256 texts: a scan asks on every execution, parsing costs ms)."""
    try:
        e = sqlglot.parse_one(sql, read="postgres")
    except sqlglot.errors.ParseError:
        return None
    args = None
    if isinstance(e, exp.Anonymous) and str(e.this).upper() == "CONTAINS":
        args = e.expressions
    elif type(e).__name__ == "Contains":
        args = [e.this, e.expression]
    if not args or len(args) != 2 or not isinstance(args[0], exp.Column) or \
            not isinstance(args[1], exp.Literal) or not args[1].is_string:
        return None
    return ".".join(p.name for p in args[0].parts), args[1].this


# the characters a regular expression escapes (Rust's regex::escape, which pylance's
# LIKE-to-regex conversion uses): they cut a pattern's literal runs
_REGEX_META = set("\\.+*?()|[]{}^$#&-~")


def like_regex(pattern: str) -> str:
    """The regular expression pylance 14 turns ``LIKE pattern`` into for an NGRAM
    index (its plan text): ``%`` is ``.*``, ``_`` is ``.``, the rest escaped."""
    return "".join(".*" if c == "%" else "." if c == "_" else
                   ("\\" + c if c in _REGEX_META else c) for c in pattern)


def like_runs(pattern: str) -> list[str] | None:
    """The literal runs of at least three characters an NGRAM index narrows
    ``LIKE pattern`` by (every matching text contains each), or None when pylance 14
    does not use the index for it: a pattern without wildcards (an equality), with
    an escape, or without such a run (runs are cut by wildcards and by characters a
    regular expression escapes, e.g. ``%1x.y%`` has none)."""
    if "\\" in pattern or ("%" not in pattern and "_" not in pattern):
        return None
    runs, cur = [], []
    for c in pattern + "%":
        if c in "%_" or c in _REGEX_META:
            if len(cur) >= 3:
                runs.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    return runs or None


@functools.lru_cache(maxsize=256)
def _query_tokens(substr: str) -> np.ndarray | None:
    """The distinct trigram tokens of a query string (None: fewer than three bytes, or
    no trigram), kept for the last 256 strings (a scan asks on every execution)."""
    if len(substr.encode()) < 3:
        return None
    _, tokens = trigram_tokens(pa.array([substr]))
    wanted = np.unique(tokens)
    wanted.flags.writeable = False
    return wanted if wanted.size else None


class NGramIndex:
    """An open NGRAM index: its token list in memory, posting lists read on demand."""

    def __init__(self, files: IndexFiles, full_rows=None):
        self.files = files
        self.reader = files.reader(POSTINGS_FILE)
        toks = self.reader.read_column("tokens").combine_chunks()
        self.tokens = np.asarray(toks.to_numpy(zero_copy_only=False), np.uint32)
        # decoded posting lists by token position, the most recently used last, up to
        # _CACHE_BYTES of their serialised size (pylance keeps what it loads in its
        # session's index cache too): a repeated query reads no index part
        self._lists: OrderedDict[int, BitMap64] = OrderedDict()
        self._sizes: dict[int, int] = {}
        self._held = 0
        self._lock = threading.Lock()

    def _postings(self, at: np.ndarray) -> list[BitMap64]:
        """The posting lists of the token positions ``at`` (from the cache, the others
        read in one request)."""
        with self._lock:
            got = {i: self._lists.get(i) for i in at.tolist()}
            for i, v in got.items():
                if v is not None:
                    self._lists.move_to_end(i)
        missing = [i for i, v in got.items() if v is None]
        if missing:
            lists = self.reader.read_column("posting_list",
                                            rows=np.array(missing, np.uint64))
            raws = lists.combine_chunks().to_pylist()
            with self._lock:
                for i, raw in zip(missing, raws):
                    got[i] = bm = _read_treemap(raw)
                    if i not in self._lists:
                        self._sizes[i] = len(raw)
                        self._held += len(raw)
                    self._lists[i] = bm
                while self._held > _CACHE_BYTES and len(self._lists) > 1:
                    old, _ = self._lists.popitem(last=False)
                    self._held -= self._sizes.pop(old)
        return [got[i] for i in at.tolist()]

    def search_contains(self, substr: str) -> BitMap64 | None:
        """A superset of the rows whose text contains ``substr`` (None: the index
        tells nothing about it)."""
        wanted = _query_tokens(substr)
        if wanted is None:
            return None
        at = np.searchsorted(self.tokens, wanted)
        if (at >= len(self.tokens)).any() or (self.tokens[np.minimum(
                at, len(self.tokens) - 1)] != wanted).any():
            return BitMap64()  # (a trigram no row holds)
        lists = sorted(self._postings(at), key=len)  # (smallest first: less to AND)
        out = lists[0].copy() if len(lists) == 1 else lists[0] & lists[1]
        for got in lists[2:]:
            out &= got
        return out

    def search_like(self, pattern: str) -> BitMap64 | None:
        """A superset of the rows whose text matches ``LIKE pattern``: those holding
        every trigram of each of its literal runs (None: the index tells nothing)."""
        out = None
        for run in like_runs(pattern) or ():
            got = self.search_contains(run)
            if got is not None:
                out = got if out is None else out & got
        return out
