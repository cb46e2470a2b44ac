"""JSONPath and key lookups over JSONB columns, for the JSON SQL functions.

A JSONB array (``large_binary``, :mod:`lancenb.kernels.json.jsonb` layout) is walked by the
kernels of :mod:`lancenb.kernels.json.jsonpath` one step at a time over all its rows:
:class:`Locations` are the values a path reaches (several a row after a wildcard), in
row order. :func:`parse_path` reads the JSONPath dialect of pylance's ``jsonb`` crate:

- ``$`` (may be left out: ``a.b`` is ``$.a.b``; the empty path is the root);
- ``.name``, ``."quoted name"``, ``["name"]``: an object's value under a key;
- ``.*``: all values of an object; ``[*]``: all items of an array (lax: a value
  that is not an array stands for itself);
- ``[i]``, ``[last]``, ``[last - k]``, ``[i to j]``, ``[i, j, ...]``: items of an
  array by position (a position outside the array, or negative, selects nothing).

Example: ``$.user.tags[0 to 1]`` is ``[("key", "user"), ("key", "tags"), ("index",
((0, False), (1, False)))]``. Anything else (``$..a``, filters ``?(...)``) is an
:class:`~lancenb.errors.InvalidInputError` naming the path, as pylance refuses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb.errors import CorruptFileError, InvalidInputError
from lancenb.file import jsonb as fj
from lancenb.kernels.json import jsonb as kj
from lancenb.kernels.json import jsonpath as kp

__all__ = ["Locations", "parse_path", "roots", "walk", "key_step", "index_step",
           "first_per_row", "as_jsonb", "as_text", "string_payloads", "numbers",
           "array_lengths", "items"]

_I64 = np.int64


@dataclass(frozen=True)
class Locations:
    """Values inside one JSONB array's data buffer: the row each belongs to, and the
    kernels' ``start``/``length``/``kind`` (ascending rows)."""

    data: np.ndarray
    row: np.ndarray
    start: np.ndarray
    length: np.ndarray
    kind: np.ndarray

    def take(self, keep) -> "Locations":
        """The locations selected by ``keep`` (a mask or indices)."""
        return Locations(self.data, self.row[keep], self.start[keep], self.length[keep],
                         self.kind[keep])

    def __len__(self) -> int:
        return len(self.row)


def _check(status: int, err, what: str) -> None:
    if status < 0:
        reason = {kj.TRUNCATED: "a value runs past the end of its container",
                  kj.BAD_HEADER: "a container header of no known type",
                  kj.BAD_ENTRY: "an entry of no known type",
                  kj.BAD_NUMBER: "a number of no known tag or length",
                  kj.UNSUPPORTED: "a decimal or extension value, which JSON text has not",
                  kj.BAD_OFFSETS: "offsets that decrease or point past the data"}
        raise CorruptFileError(f"JSONB in {what}: {reason.get(status, status)} (at "
                               f"location {int(err[0])})")


def roots(arr: pa.Array, what: str) -> Locations:
    """Each non-null row's value (``arr``: ``large_binary`` or ``binary`` JSONB)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    n = len(arr)
    bufs = arr.buffers()
    wide = pa.types.is_large_binary(arr.type)
    dtype = np.int64 if wide else np.int32
    offsets = np.frombuffer(bufs[1], dtype, count=n + 1, offset=arr.offset *
                            np.dtype(dtype).itemsize).astype(np.int64) if bufs[1] is not None \
        else np.zeros(n + 1, np.int64)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), np.uint8) \
        if arr.null_count else np.ones(n, np.uint8)
    start, length, kind = np.empty(n, _I64), np.empty(n, _I64), np.empty(n, _I64)
    err = np.zeros(1, _I64)
    _check(kp.roots(offsets, data, valid, start, length, kind, err), err, what)
    keep = kind != kp.NONE
    return Locations(data, np.arange(n, dtype=_I64)[keep], start[keep], length[keep],
                     kind[keep])


def key_step(loc: Locations, key: str, what: str) -> Locations:
    """Each object's value under ``key``."""
    m = len(loc)
    start, length, kind = np.empty(m, _I64), np.empty(m, _I64), np.empty(m, _I64)
    err = np.zeros(1, _I64)
    k = np.frombuffer(key.encode("utf-8"), np.uint8)
    _check(kp.key_lookup(loc.data, loc.start, loc.length, loc.kind, k, start, length, kind,
                         err), err, what)
    keep = kind != kp.NONE
    return Locations(loc.data, loc.row[keep], start[keep], length[keep], kind[keep])


def items(loc: Locations, want: int, what: str) -> tuple[Locations, np.ndarray, np.ndarray]:
    """The items of each array (``want`` ``WANT_ARRAY``) or values of each object
    (``WANT_OBJECT``): the locations, each one's parent location index and position."""
    m = len(loc)
    counts = np.empty(m, _I64)
    err = np.zeros(1, _I64)
    _check(kp.child_counts(loc.data, loc.start, loc.length, loc.kind, want, counts, err),
           err, what)
    first = np.zeros(m, _I64)
    if m:
        np.cumsum(counts[:-1], out=first[1:])
    total = int(counts.sum())
    parent, pos = np.empty(total, _I64), np.empty(total, _I64)
    start, length, kind = np.empty(total, _I64), np.empty(total, _I64), np.empty(total, _I64)
    _check(kp.child_fill(loc.data, loc.start, loc.length, loc.kind, want, first, parent,
                         pos, start, length, kind, err), err, what)
    return (Locations(loc.data, loc.row[parent], start, length, kind), parent, pos)


def is_array(loc: Locations) -> np.ndarray:
    """Which locations are arrays."""
    ok = (loc.kind == kj.E_CONTAINER) & (loc.start < len(loc.data))
    head = loc.data[np.where(ok, loc.start, 0)] if len(loc.data) else np.zeros(len(loc), np.uint8)
    return ok & ((head & 0xE0) == 0x80)


def array_lengths(loc: Locations, what: str) -> np.ndarray:
    """Each location's item count when it is an array, else 0."""
    counts = np.empty(len(loc), _I64)
    err = np.zeros(1, _I64)
    _check(kp.child_counts(loc.data, loc.start, loc.length, loc.kind, kp.WANT_ARRAY,
                           counts, err), err, what)
    return counts


def index_step(loc: Locations, selectors, what: str) -> Locations:
    """Array items by position: ``selectors`` is a tuple of ``(lo, hi)`` pairs of
    ``(k, from_last)`` bounds (``None`` for ``*``), applied in order."""
    kids, parent, pos = items(loc, kp.WANT_ARRAY, what)
    if selectors is None:  # lax: a value that is not an array stands for itself
        alone = np.flatnonzero(~is_array(loc))
        if not len(alone):
            return kids
        both = Locations(loc.data, *(np.concatenate([getattr(kids, f), getattr(loc, f)[alone]])
                                     for f in ("row", "start", "length", "kind")))
        return both.take(np.argsort(np.concatenate([parent, alone]), kind="stable"))
    count = array_lengths(loc, what)[parent]
    picks, order = [], []
    for n, (lo, hi) in enumerate(selectors):
        a = count - 1 - lo[0] if lo[1] else np.full(len(pos), lo[0], _I64)
        b = count - 1 - hi[0] if hi[1] else np.full(len(pos), hi[0], _I64)
        hit = np.flatnonzero((pos >= a) & (pos <= b))
        picks.append(hit)
        order.append(np.full(len(hit), n, _I64))
    if len(picks) == 1:
        return kids.take(picks[0])
    idx = np.concatenate(picks)
    sel = np.concatenate(order)
    return kids.take(idx[np.lexsort((pos[idx], sel, parent[idx]))])


def walk(loc: Locations, steps, what: str) -> Locations:
    """The locations a parsed path (:func:`parse_path`) reaches from ``loc``."""
    for step in steps:
        if step[0] == "key":
            loc = key_step(loc, step[1], what)
        elif step[0] == "values":
            loc = items(loc, kp.WANT_OBJECT, what)[0]
        else:
            loc = index_step(loc, step[1], what)
    return loc


def first_per_row(loc: Locations) -> Locations:
    """The first location of each row that has any."""
    if not len(loc):
        return loc
    first = np.ones(len(loc), bool)
    first[1:] = loc.row[1:] != loc.row[:-1]
    return loc.take(first)


def as_jsonb(loc: Locations) -> pa.Array:
    """The locations as standalone JSONB values (``large_binary``, one per location)."""
    scalar = (loc.kind != kj.E_CONTAINER).astype(_I64)
    sizes = loc.length + 8 * scalar
    offsets = np.zeros(len(loc) + 1, _I64)
    np.cumsum(sizes, out=offsets[1:])
    out = np.empty(int(offsets[-1]), np.uint8)
    status = kp.fill_values(loc.data, loc.start, loc.length, loc.kind, offsets, out)
    _check(status, np.zeros(1, _I64), "a JSON value")
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(loc),
                                            [None, pa.py_buffer(offsets), pa.py_buffer(out)])


def as_text(loc: Locations, what: str) -> pa.Array:
    """The JSON text of each location (serde_json's compact form, as pylance prints)."""
    return fj.to_text(as_jsonb(loc), where=what).storage.cast(pa.string())


def string_payloads(loc: Locations) -> pa.Array:
    """The text of string locations (their UTF-8 payloads, unescaped)."""
    from lancenb.kernels import slices

    offsets = np.zeros(len(loc) + 1, _I64)
    np.cumsum(loc.length, out=offsets[1:])
    out = np.empty(int(offsets[-1]), np.uint8)
    if slices.concat_slices(loc.data, loc.start, loc.length, out) < 0:
        raise CorruptFileError("JSONB: a string runs past the end of its data")
    arr = pa.LargeStringArray.from_buffers(len(loc), pa.py_buffer(offsets), pa.py_buffer(out))
    try:
        arr.validate(full=True)
    except pa.ArrowInvalid:
        raise CorruptFileError("JSONB: a string that is not UTF-8") from None
    return arr.cast(pa.string())


def numbers(loc: Locations, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(int64 values, float64 values, class)`` of number locations (classes in
    :mod:`lancenb.kernels.json.jsonpath`)."""
    m = len(loc)
    ints, floats, cls = np.empty(m, _I64), np.empty(m, np.float64), np.empty(m, _I64)
    err = np.zeros(1, _I64)
    _check(kp.number_values(loc.data, loc.start, loc.length, ints, floats, cls, err), err,
           what)
    return ints, floats, cls


# --------------------------------------------------------------------- JSONPath text

_NAME = re.compile(r"[^.\[\]\s\"'*()?@,$]+")
_INDEX = re.compile(r"\s*(?:(last)\s*(?:-\s*(\d+))?|(-?\d+))\s*")


def _bad(path: str) -> InvalidInputError:
    return InvalidInputError(f"Invalid JSONPath {path!r}: InvalidJsonPath")


def _bound(path: str, text: str, p: int) -> tuple[tuple[int, bool], int]:
    m = _INDEX.match(text, p)
    if not m or m.end() == p:
        raise _bad(path)
    if m.group(1):
        return (int(m.group(2) or 0), True), m.end()
    return (int(m.group(3)), False), m.end()


def parse_path(path: str) -> list:
    """The steps of a JSONPath (see the module docstring)."""
    text = path.strip()
    p = 0
    if text.startswith("$"):
        p = 1
    elif text and not text.startswith((".", "[")):
        text = "." + text  # `a.b` is `$.a.b`
    steps = []
    while p < len(text):
        c = text[p]
        if c == ".":
            p += 1
            if text.startswith("*", p):
                steps.append(("values",))
                p += 1
                continue
            if text.startswith('"', p):
                end = text.find('"', p + 1)
                if end < 0:
                    raise _bad(path)
                steps.append(("key", text[p + 1:end]))
                p = end + 1
                continue
            m = _NAME.match(text, p)
            if not m:
                raise _bad(path)
            steps.append(("key", m.group(0)))
            p = m.end()
        elif c == "[":
            p += 1
            rest = text[p:].lstrip()
            if rest.startswith("*"):
                q = text.index("*", p) + 1
                if not text[q:].lstrip().startswith("]"):
                    raise _bad(path)
                steps.append(("index", None))
                p = text.index("]", q) + 1
                continue
            if rest.startswith('"'):
                q = text.index('"', p)
                end = text.find('"', q + 1)
                close = text.find("]", end + 1) if end >= 0 else -1
                if end < 0 or close < 0 or text[end + 1:close].strip():
                    raise _bad(path)
                steps.append(("key", text[q + 1:end]))
                p = close + 1
                continue
            sels = []
            while True:
                lo, p = _bound(path, text, p)
                hi = lo
                if text.startswith("to", p):
                    hi, p = _bound(path, text, p + 2)
                sels.append((lo, hi))
                if p < len(text) and text[p] == ",":
                    p += 1
                    continue
                if p < len(text) and text[p] == "]":
                    p += 1
                    break
                raise _bad(path)
            steps.append(("index", tuple(sels)))
        elif c.isspace():
            p += 1
        else:
            raise _bad(path)
    return steps


def key_or_index(key: str) -> list:
    """``json_get``'s key as a step: digits (an unsigned integer) select an array item,
    anything else an object's key."""
    if re.fullmatch(r"\+?[0-9]+", key) and int(key) < 2**64:
        i = int(key)
        return [("index", (((i, False), (i, False)),))]
    return [("key", key)]


def rows_with(loc: Locations, n: int) -> np.ndarray:
    """How many locations each of ``n`` rows has."""
    return np.bincount(loc.row, minlength=n).astype(_I64)


def null_where(arr: pa.Array, mask: np.ndarray) -> pa.Array:
    """``arr`` with nulls where ``mask`` is true."""
    if not mask.any():
        return arr
    return pc.if_else(pa.array(mask), pa.nulls(len(arr), arr.type), arr)
