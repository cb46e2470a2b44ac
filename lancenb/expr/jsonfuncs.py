"""pylance's JSON SQL functions, over JSON columns (JSONB, ``lance.json``).

Registered in the SQL engine (:func:`register`), so filters, ``columns={...}``
projections, ``update`` values and ``sql()`` queries can call them; each takes the
JSONB column (or another function's JSONB result) first. As pylance 14 computes them:

- ``json_get(j, key)``: the value under ``key`` of an object, or at position ``key``
  of an array when ``key`` is an unsigned integer (``'0'``), as JSONB (``large_binary``;
  a JSON ``null`` is a JSONB null, an absent key SQL NULL); so ``json_get`` nests.
- ``json_get_string/int/float/bool(j, key)``: that value converted: strings as they
  are, numbers as their JSON text, booleans as ``true``/``false`` (string); integers,
  floats rounded half away from zero and numeric strings (``'35'``, ``'2.5'``: Rust's
  number syntax) to int64 (float64 for ``_float``); booleans and the strings
  ``true``/``false`` in any case to bool. A JSON ``null`` or absent key gives NULL; a
  value that does not convert (an object, ``'abc'`` as a number, ``1`` as a bool, an
  integer outside int64) fails the whole query with pylance's "Failed to convert to
  integer: InvalidCast".
- ``json_extract(j, path)``: the JSON text of what the JSONPath
  (:mod:`lancenb.expr.jsonpath`) selects: one value as it is, several as a JSON array
  of them, none NULL. ``json_exists(j, path)``: whether it selects anything.
- ``json_array_length(j, path)``: the item count of the first value selected (0 when
  it is not an array; NULL when nothing is selected).
- ``json_array_contains(j, path, v)``: whether an array the path selects has an item
  whose JSON text is ``v`` or ``"v"`` (``'python'`` matches the string, ``'1'`` the
  number 1, ``'1.0'`` the number 1.0 only).

A NULL row or argument gives NULL (``json_exists`` too). The work is vectorised: the
kernels of :mod:`lancenb.kernels.json.jsonpath` walk every row's JSONB at once; a key or
path given per row (not a literal) is evaluated once per distinct value.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb.errors import InvalidInputError
from lancenb.expr import jsonpath as jp
from lancenb.kernels.json import jsonb as kj
from lancenb.kernels.json import jsonpath as kp

__all__ = ["FUNCTIONS", "register", "json_get", "json_get_string", "json_get_int",
           "json_get_float", "json_get_bool", "json_extract", "json_exists",
           "json_array_length", "json_array_contains"]

_WHAT = "a JSON column"
# Rust's f64 and i64 syntax (what pylance's conversions of strings accept)
_FLOAT_RE = r"^[+-]?(?:(?i:inf|infinity|nan)|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)$"
_INT_RE = r"^[+-]?[0-9]+$"
_TWO63 = 2.0 ** 63


class ConversionError(InvalidInputError):
    """A JSON value that does not convert to the type a ``json_get_*`` asked for."""


def _per_key(fn, arr: pa.Array, keys: pa.Array, out_type: pa.DataType, *more) -> pa.Array:
    """``fn(arr, key, *more_values)`` with each argument after the first constant: one
    call when every row has the same ones, else one per distinct combination."""
    n = len(arr)
    cols = [keys, *more]
    if n == 0:
        return pa.array([], out_type)
    firsts = [c[0].as_py() for c in cols]
    if all(pc.all(pc.equal(c, c[0])).as_py() and not c.null_count for c in cols) \
            or all(len(c) == 1 for c in cols):
        return fn(arr, *firsts)
    out = pa.nulls(n, out_type)
    valid = np.ones(n, bool)
    for c in cols:
        valid &= np.asarray(c.is_valid().to_numpy(zero_copy_only=False), bool)
    combos = pa.table({str(i): c for i, c in enumerate(cols)}).filter(pa.array(valid))
    rows = np.flatnonzero(valid)
    for combo in combos.group_by([str(i) for i in range(len(cols))]).aggregate([]).to_pylist():
        hit = np.ones(len(rows), bool)
        for i in range(len(cols)):
            hit &= np.asarray(pc.equal(combos.column(str(i)), combo[str(i)])
                              .to_numpy(zero_copy_only=False), bool)
        sel = rows[hit]
        got = fn(arr.take(pa.array(sel)), *[combo[str(i)] for i in range(len(cols))])
        mask = np.zeros(n, bool)
        mask[sel] = True
        out = pc.replace_with_mask(out, pa.array(mask), got.cast(out_type))
    return out


def _at_key(arr: pa.Array, key: str) -> jp.Locations:
    """Where ``key`` leads in each row: an object's member of that name; when the key is
    digits, in an array the item at that index (pylance reads ``'0'`` both ways)."""
    roots = jp.roots(arr, _WHAT)
    steps = jp.key_or_index(key)
    loc = jp.walk(roots, steps, _WHAT)
    if steps[0][0] == "key":
        return loc
    by_key = jp.walk(roots, [("key", key)], _WHAT)
    if not len(by_key):
        return loc
    # a row's root is an object or an array, so the two never hold the same row
    order = np.argsort(np.concatenate([loc.row, by_key.row]), kind="stable")
    return jp.Locations(loc.data, *(np.concatenate([a, b])[order] for a, b in (
        (loc.row, by_key.row), (loc.start, by_key.start), (loc.length, by_key.length),
        (loc.kind, by_key.kind))))


def _scatter(n: int, rows: np.ndarray, values: pa.Array, out_type: pa.DataType) -> pa.Array:
    """A length-``n`` array with ``values`` at ``rows`` (ascending), NULL elsewhere."""
    if len(rows) == n:
        return values.cast(out_type)
    idx = np.full(n, -1, np.int64)
    idx[rows] = np.arange(len(rows), dtype=np.int64)
    take = pa.array(idx, mask=idx < 0)
    return values.cast(out_type).take(take)


def json_get(arr: pa.Array, key: str | None) -> pa.Array:
    """``json_get(j, key)`` (see the module docstring)."""
    if key is None:
        return pa.nulls(len(arr), pa.large_binary())
    loc = _at_key(arr, key)
    return _scatter(len(arr), loc.row, jp.as_jsonb(loc), pa.large_binary())


def _fail(to: str) -> ConversionError:
    return ConversionError(f"Failed to convert to {to}: InvalidCast")


def _typed(arr: pa.Array, key: str | None, to: str) -> pa.Array:
    out_type = {"string": pa.string(), "integer": pa.int64(), "float": pa.float64(),
                "boolean": pa.bool_()}[to]
    n = len(arr)
    if key is None:
        return pa.nulls(n, out_type)
    loc = _at_key(arr, key)
    loc = loc.take(loc.kind != kj.E_NULL)
    if (loc.kind == kj.E_CONTAINER).any() or (loc.kind == kj.E_EXTENSION).any():
        raise _fail(to)
    parts = []  # (positions in loc, converted values) per kind
    strings = loc.kind == kj.E_STRING
    nums = loc.kind == kj.E_NUMBER
    bools = (loc.kind == kj.E_TRUE) | (loc.kind == kj.E_FALSE)
    if strings.any():
        parts.append((np.flatnonzero(strings), _from_strings(
            jp.string_payloads(loc.take(strings)), to)))
    if nums.any():
        parts.append((np.flatnonzero(nums), _from_numbers(loc.take(nums), to)))
    if bools.any():
        if to in ("integer", "float"):
            raise _fail(to)
        truth = pa.array(loc.kind[bools] == kj.E_TRUE)
        parts.append((np.flatnonzero(bools),
                      truth if to == "boolean" else pc.if_else(truth, "true", "false")))
    if not parts:
        return pa.nulls(n, out_type)
    order = np.concatenate([p[0] for p in parts])
    merged = pa.concat_arrays([p[1].cast(out_type) for p in parts])
    merged = merged.take(pa.array(np.argsort(order, kind="stable")))
    return _scatter(n, loc.row, merged, out_type)


def _round_to_int(f: np.ndarray, to: str) -> pa.Array:
    """Floats rounded half away from zero to int64 (Rust's ``f64::round``); a value
    outside int64 (or NaN, an infinity) does not convert."""
    if not np.all(np.isfinite(f)):
        raise _fail(to)
    t = np.trunc(f)
    r = t + np.where(np.abs(f - t) >= 0.5, np.sign(f), 0.0)
    if np.any((r < -_TWO63) | (r >= _TWO63)):
        raise _fail(to)
    return pa.array(r.astype(np.int64))


def _from_numbers(loc: jp.Locations, to: str) -> pa.Array:
    if to == "string":
        return jp.as_text(loc, _WHAT)
    if to == "boolean":
        raise _fail(to)
    ints, floats, cls = jp.numbers(loc, _WHAT)
    if to == "float":
        return pa.array(floats)
    if (cls == kp.BIG_UINT).any():
        raise _fail(to)
    is_float = cls == kp.FLOAT
    if not is_float.any():
        return pa.array(ints)
    out = ints.copy()
    out[is_float] = np.asarray(_round_to_int(floats[is_float], to))
    return pa.array(out)


def _from_strings(s: pa.Array, to: str) -> pa.Array:
    if to == "string":
        return s
    if to == "boolean":
        low = pc.utf8_lower(s)
        ok = pc.or_(pc.equal(low, "true"), pc.equal(low, "false"))
        if not pc.all(ok).as_py():
            raise _fail(to)
        return pc.equal(low, "true")
    if not pc.all(pc.match_substring_regex(s, _FLOAT_RE)).as_py():
        raise _fail(to)
    if to == "float":
        return pc.cast(s, pa.float64())
    # integers as integers (exactly, when they fit); the rest through float64, rounded
    is_int = np.asarray(pc.match_substring_regex(s, _INT_RE).to_numpy(zero_copy_only=False),
                        bool)
    out = np.zeros(len(s), np.int64)
    if is_int.any():
        digits = pc.replace_substring_regex(s.filter(pa.array(is_int)), r"^\+", "")
        try:
            out[is_int] = np.asarray(pc.cast(digits, pa.int64()))
        except pa.ArrowInvalid:
            raise _fail(to) from None  # (beyond int64: as a float it is too)
    if (~is_int).any():
        f = np.asarray(pc.cast(s.filter(pa.array(~is_int)), pa.float64()))
        out[~is_int] = np.asarray(_round_to_int(f, to))
    return pa.array(out)


def json_get_string(arr, key):
    """``json_get_string(j, key)``."""
    return _typed(arr, key, "string")


def json_get_int(arr, key):
    """``json_get_int(j, key)``."""
    return _typed(arr, key, "integer")


def json_get_float(arr, key):
    """``json_get_float(j, key)``."""
    return _typed(arr, key, "float")


def json_get_bool(arr, key):
    """``json_get_bool(j, key)``."""
    return _typed(arr, key, "boolean")


def _selected(arr: pa.Array, path: str) -> jp.Locations:
    return jp.walk(jp.roots(arr, _WHAT), jp.parse_path(path), _WHAT)


def _null_rows(arr: pa.Array) -> np.ndarray:
    return np.asarray(arr.is_null().to_numpy(zero_copy_only=False), bool)


def json_extract(arr: pa.Array, path: str | None) -> pa.Array:
    """``json_extract(j, path)``: one value's text, several as an array, none NULL."""
    n = len(arr)
    if path is None:
        return pa.nulls(n, pa.string())
    loc = _selected(arr, path)
    texts = jp.as_text(loc, _WHAT)
    counts = jp.rows_with(loc, n)
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(counts, out=offsets[1:])
    joined = pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), texts), ",")
    many = pa.array(counts > 1)
    if pc.any(many).as_py():
        joined = pc.if_else(many, pc.binary_join_element_wise("[", joined, "]", ""), joined)
    return jp.null_where(joined.cast(pa.string()), counts == 0)


def json_exists(arr: pa.Array, path: str | None) -> pa.Array:
    """``json_exists(j, path)``: NULL for a NULL row."""
    n = len(arr)
    if path is None:
        return pa.nulls(n, pa.bool_())
    counts = jp.rows_with(_selected(arr, path), n)
    return jp.null_where(pa.array(counts > 0), _null_rows(arr))


def json_array_length(arr: pa.Array, path: str | None) -> pa.Array:
    """``json_array_length(j, path)``: of the first value selected."""
    n = len(arr)
    if path is None:
        return pa.nulls(n, pa.int64())
    first = jp.first_per_row(_selected(arr, path))
    return _scatter(n, first.row, pa.array(jp.array_lengths(first, _WHAT)), pa.int64())


def json_array_contains(arr: pa.Array, path: str | None, value: str | None) -> pa.Array:
    """``json_array_contains(j, path, value)``."""
    n = len(arr)
    if path is None or value is None:
        return pa.nulls(n, pa.bool_())
    kids = jp.items(_selected(arr, path), kp.WANT_ARRAY, _WHAT)[0]
    texts = jp.as_text(kids, _WHAT)
    hit = pc.or_(pc.equal(texts, value), pc.equal(texts, f'"{value}"'))
    rows = kids.row[np.asarray(hit.to_numpy(zero_copy_only=False), bool)]
    found = np.zeros(n, bool)
    found[rows] = True
    return jp.null_where(pa.array(found), _null_rows(arr))


# name -> (function, argument types after the JSONB one, result type)
FUNCTIONS = {
    "json_get": (json_get, 1, pa.large_binary()),
    "json_get_string": (json_get_string, 1, pa.string()),
    "json_get_int": (json_get_int, 1, pa.int64()),
    "json_get_float": (json_get_float, 1, pa.float64()),
    "json_get_bool": (json_get_bool, 1, pa.bool_()),
    "json_extract": (json_extract, 1, pa.string()),
    "json_exists": (json_exists, 1, pa.bool_()),
    "json_array_length": (json_array_length, 1, pa.int64()),
    "json_array_contains": (json_array_contains, 2, pa.bool_()),
}


def _udf(name: str):
    fn, nargs, out_type = FUNCTIONS[name]

    def call(arr, *args):
        arr = arr.cast(pa.large_binary()) if not pa.types.is_large_binary(arr.type) else arr
        args = [a.cast(pa.string()) if not pa.types.is_string(a.type) else a for a in args]
        return _per_key(fn, arr, args[0], out_type, *args[1:])

    call.__name__ = name
    return call


def register(ctx) -> None:
    """Register the functions in a DataFusion ``SessionContext``."""
    from datafusion import udf  # lazy: the engine is imported on first use

    for name, (_fn, nargs, out_type) in FUNCTIONS.items():
        ctx.register_udf(udf(_udf(name), [pa.large_binary()] + [pa.string()] * nargs,
                             out_type, "immutable", name))


def is_json_function(name: str) -> bool:
    """Whether ``name`` (any case) is one of these functions."""
    return name.lower() in FUNCTIONS

