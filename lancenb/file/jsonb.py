"""JSON columns: Arrow's ``arrow.json`` text <-> pylance's ``lance.json`` JSONB.

pylance 14 stores a JSON column (``pa.json_()`` on input, at any depth) as
``large_binary`` JSONB (Databend's binary JSON; layout in :mod:`lancenb.kernels.json.jsonb`)
tagged ``ARROW:extension:name = lance.json``, logical type ``json`` in the schema, in
every file version; it returns the column as ``arrow.json`` text in serde_json's compact
form (``'{"a": 1}'`` is read back as ``'{"a":1}'``, object keys sorted). :func:`to_text`
and :func:`to_jsonb` do the same over whole arrays: the kernels do every per-value step
(:mod:`lancenb.kernels.json.jsonb`, ``.jsontape``, ``.jsonb_encode``); here buffers are laid
out, outputs sized, and faults named by column and row.

Text is checked against RFC 8259 on write: invalid JSON is an
:class:`~lancenb.errors.InvalidInputError` naming the column, the row and the byte,
never stored. pylance also takes some text that is not JSON (``NaN``, ``+1``, ``'a'``,
``[1,,2]``, empty text as ``null``, raw control characters in strings); lancenb refuses
those. JSONB that is not what the format allows is a
:class:`~lancenb.errors.CorruptFileError`.

Writing lays out groups of rows of at most ``TAPE_NODES`` values (the tape takes 48
bytes a value; a row of more is a group of its own); numbers of over 19 significant
digits that the kernels leave undecided (rare) are converted by Python's ``float``, one
by one. Reading guesses the text's size (about its JSONB's) and grows it if need be.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb.errors import CorruptFileError, InvalidInputError, NotSupportedError
from lancenb.kernels.json import jsonb as kj
from lancenb.kernels.json import jsonb_encode as ke
from lancenb.kernels.json import jsontape as kt

__all__ = ["to_text", "to_jsonb", "text_array", "jsonb_array", "text_field", "jsonb_field",
           "holds", "is_json", "LANCE_JSON", "ARROW_JSON", "TAPE_NODES", "MAX_TEXT_BYTES"]

EXT_NAME = b"ARROW:extension:name"
EXT_METADATA = b"ARROW:extension:metadata"
LANCE_JSON = b"lance.json"  # stored: large_binary JSONB
ARROW_JSON = b"arrow.json"  # Arrow's JSON text extension type (pa.json_())

# values (nodes) per group of rows on write: a 6 x int64 tape row each, 48 MiB a group
TAPE_NODES = 1 << 20
# an arrow.json array's text goes in a utf8 (int32 offsets) array, as pylance returns it
MAX_TEXT_BYTES = (1 << 31) - 1

_DECODE_FAULTS = {
    kj.TRUNCATED: "a header, entry or payload runs past the end of its container",
    kj.BAD_HEADER: "a container header of no known type",
    kj.BAD_ENTRY: "an entry of no known type (or a key that is not a string, or a "
                  "null/true/false with a payload)",
    kj.BAD_NUMBER: "a number of no known tag or of the wrong length",
    kj.BAD_LENGTH: "a container whose items do not fill it",
    kj.BAD_UTF8: "a string that is not UTF-8",
    kj.TOO_DEEP: f"containers nested deeper than {kj.MAX_DEPTH} levels",
    kj.BAD_OFFSETS: "offsets that decrease or point past the data",
}
_ENCODE_FAULTS = {
    kt.UNEXPECTED_END: "the text ends inside a value",
    kt.EXPECTED_VALUE: "a character that cannot start a value here",
    kt.UNEXPECTED_CHAR: "a character where ',', ':', ']', '}' or the end belongs",
    kt.BAD_NUMBER: "a number outside JSON's grammar",
    kt.BAD_ESCAPE: "a backslash escape JSON does not have",
    kt.CONTROL_CHARACTER: "a control character (U+0000..U+001F) not escaped in a string",
    kt.BAD_UTF8: "text that is not UTF-8",
    kt.TOO_DEEP: f"arrays and objects nested deeper than {kt.MAX_DEPTH} levels",
    kt.TOO_LARGE: "a string or nested container past JSONB's limits (2**28 bytes, "
                  "2**29 items)",
}


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False  # one kernel specialisation: inputs are read-only views
    return a


def _validity(arr: pa.Array) -> tuple[np.ndarray, pa.Buffer | None]:
    """``(uint8 per row, 1 = valid; a fresh bitmap at offset 0 or None)``."""
    if arr.null_count == 0:
        return _readonly(np.ones(len(arr), np.uint8)), None
    bits = pc.is_valid(arr)
    valid = np.asarray(bits.to_numpy(zero_copy_only=False), np.uint8)
    return _readonly(valid), bits.buffers()[1] if bits.offset == 0 else \
        pa.array(valid.astype(bool)).buffers()[1]


def _buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """int64 offsets (``len + 1``) and the bytes of a binary or string array."""
    bufs = arr.buffers()
    wide = pa.types.is_large_binary(arr.type) or pa.types.is_large_string(arr.type)
    dtype = np.int64 if wide else np.int32
    offsets = np.frombuffer(bufs[1], dtype, count=len(arr) + 1, offset=arr.offset *
                            np.dtype(dtype).itemsize) if bufs[1] is not None else \
        np.zeros(len(arr) + 1, dtype)
    if not wide:
        offsets = _readonly(offsets.astype(np.int64))
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return offsets, data


def to_text(arr: pa.Array, *, where: str) -> pa.ExtensionArray:
    """The ``arrow.json`` array of a ``large_binary`` JSONB array.

    ``where`` names the column for errors (e.g. ``"dataset 'x', column 'j'"``): corrupt
    JSONB is a :class:`CorruptFileError` naming it, the row and the byte; decimals and
    extension values (which pylance does not write from JSON) are a
    :class:`NotSupportedError`.
    """
    n = len(arr)
    offsets, data = _buffers(arr)
    valid, bitmap = _validity(arr)
    err = np.zeros(2, np.int64)
    out_offsets = np.zeros(n + 1, np.int64)
    # text is about as long as its JSONB: one call fills it, rarely two or three
    nbytes = int(offsets[-1] - offsets[0]) if n else 0
    out = np.empty(nbytes + nbytes // 4 + 64, np.uint8)
    row = 0
    while True:
        row = kj.text_fill(offsets, data, valid, row, out_offsets, out, err)
        if row < 0 or row == n:
            break
        done = int(out_offsets[row])
        grown = np.empty(2 * len(out), np.uint8)
        grown[:done] = out[:done]
        out = grown
    if row < 0:
        status, row, at = row, int(err[0]), int(err[1])
        if status == kj.UNSUPPORTED:
            raise NotSupportedError(f"{where}, row {row}: JSONB holds a decimal or an "
                                    f"extension value (a date, timestamp or binary), which "
                                    f"pylance does not write from JSON and lancenb cannot read")
        what = _DECODE_FAULTS.get(status, f"status {status}")
        raise CorruptFileError(f"{where}, row {row}: corrupt JSONB: {what} (at byte {at} of "
                               f"the value)")
    total = int(out_offsets[n])
    if total > MAX_TEXT_BYTES:
        raise NotSupportedError(f"{where}: over 2 GiB of JSON text in one batch; read "
                                f"fewer rows at a time (batch_size)")
    out = out[:total] if total * 2 > len(out) else out[:total].copy()  # (not 2x the memory)
    storage = pa.Array.from_buffers(pa.string(), n, [bitmap, pa.py_buffer(
        out_offsets.astype(np.int32)), pa.py_buffer(out)], arr.null_count)
    return pa.ExtensionArray.from_storage(pa.json_(), storage)


def _as_text_array(arr: pa.Array) -> pa.Array:
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    if pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.large_string())
    return arr


def _resolve(tape: np.ndarray, data: np.ndarray) -> None:
    """Numbers the kernels left undecided (over 19 significant digits): ``float``."""
    for i in np.flatnonzero(tape[:, kt.T_KIND] == kt.K_PENDING):
        s, ln = int(tape[i, kt.T_VAL]), int(tape[i, kt.T_AUX])
        bits = struct.unpack("<Q", struct.pack("<d", float(data[s:s + ln].tobytes())))[0]
        tape[i, kt.T_KIND] = kt.K_FLOAT
        tape[i, kt.T_VAL] = bits & 0xFFFFFFFF
        tape[i, kt.T_AUX] = bits >> 32


def _encode_fault(status: int, column: str, row: int, at: int | None, key: str = "") -> None:
    unit = "value" if "[]" in column else "row"  # (list items: their place in the values)
    if status == kt.DUPLICATE_KEY:
        raise InvalidInputError(f"column {column!r}, {unit} {row}: invalid JSON: an object "
                                f"has the key {key!r} twice (pylance refuses it too)")
    what = _ENCODE_FAULTS.get(status, f"status {status}")
    place = f" at byte {at}" if at is not None else ""
    raise InvalidInputError(f"column {column!r}, {unit} {row}: invalid JSON: {what}{place}")


def to_jsonb(arr: pa.Array, *, column: str, first_row: int = 0) -> pa.Array:
    """The ``large_binary`` JSONB array (as pylance writes it) of an ``arrow.json`` (or
    string) array; invalid JSON is an :class:`InvalidInputError` naming ``column`` and
    the row (``first_row`` + its position)."""
    arr = _as_text_array(arr)
    n = len(arr)
    offsets, data = _buffers(arr)
    valid, bitmap = _validity(arr)
    err = np.zeros(2, np.int64)
    nbytes = int(offsets[-1] - offsets[0])
    # strings unescaped are no longer than their text; a value takes a byte or more
    tape = np.empty((min(TAPE_NODES, nbytes // 4 + 64), kt.TAPE_COLS), np.int64)
    pool = np.empty(nbytes, np.uint8)
    first, pool_first = np.zeros(n + 1, np.int64), np.zeros(n + 1, np.int64)
    sizes = np.zeros(n, np.int64)
    parts, row = [np.zeros(0, np.uint8)], 0
    while row < n:  # a group of rows per tape full
        first[row] = pool_first[row] = 0
        stop = kt.fill_tape(offsets, data, valid, row, first, pool_first, tape, pool, err)
        if stop < 0:
            _encode_fault(stop, column, first_row + int(err[0]), int(err[1]))
        if stop == row:  # one row of more values than the tape holds
            tape = np.empty((2 * len(tape), kt.TAPE_COLS), np.int64)
            continue
        group, bounds = tape[:first[stop]], first[row:stop + 1]
        if (group[:, kt.T_KIND] == kt.K_PENDING).any():
            _resolve(group, data)
        members = np.empty(len(group) // 2 + 1, np.int64)
        status = ke.jsonb_sizes(group, pool, bounds, members, sizes[row:stop], err)
        if status != ke.OK:
            at = row + int(np.searchsorted(bounds, err[1], side="right")) - 1
            key = ""
            if status == kt.DUPLICATE_KEY:
                k = int(err[1])
                key = pool[group[k, kt.T_VAL]:group[k, kt.T_VAL] + group[k, kt.T_AUX]] \
                    .tobytes().decode("utf-8", "replace")
            _encode_fault(status, column, first_row + at, None, key)
        out_offsets = np.zeros(stop - row + 1, np.int64)
        np.cumsum(sizes[row:stop], out=out_offsets[1:])
        out = np.empty(int(out_offsets[-1]), np.uint8)
        status = ke.fill_jsonb(group, pool, bounds, members, out_offsets, out, err)
        if status != ke.OK:  # (the sizes were just computed: a bug, not the input)
            raise RuntimeError(f"JSONB layout failed with status {status}")
        parts.append(out)
        row = stop
    out = parts[-1] if len(parts) <= 2 else np.concatenate(parts)
    out_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=out_offsets[1:])
    return pa.Array.from_buffers(pa.large_binary(), n, [bitmap, pa.py_buffer(out_offsets),
                                                        pa.py_buffer(out)], arr.null_count)


# -- columns: JSON at any depth (struct children, list and map items) ----------------------

def is_json(f: pa.Field, name: bytes) -> bool:
    """Whether ``f`` itself is tagged with extension ``name`` (``b"lance.json"``) or, for
    ``b"arrow.json"``, has that extension type."""
    if name == ARROW_JSON:
        return isinstance(f.type, pa.BaseExtensionType) and \
            f.type.extension_name == ARROW_JSON.decode()
    return bool(f.metadata) and f.metadata.get(EXT_NAME) == name


def _children(t: pa.DataType) -> list[pa.Field]:
    if pa.types.is_struct(t):
        return [t.field(i) for i in range(t.num_fields)]
    if pa.types.is_map(t):
        return [t.field(0)]  # entries: struct<key, value>
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return [t.value_field]
    return []


def _with_children(t: pa.DataType, kids: list[pa.Field]) -> pa.DataType:
    if pa.types.is_struct(t):
        return pa.struct(kids)
    if pa.types.is_map(t):
        entries = kids[0].type
        return pa.map_(entries.field(0), entries.field(1), keys_sorted=t.keys_sorted)
    if pa.types.is_fixed_size_list(t):
        return pa.list_(kids[0], t.list_size)
    return (pa.large_list if pa.types.is_large_list(t) else pa.list_)(kids[0])


def holds(f: pa.Field, name: bytes) -> bool:
    """Whether ``f`` or a field nested in it is a JSON field (see :func:`is_json`)."""
    return is_json(f, name) or any(holds(c, name) for c in _children(f.type))


def _untagged(md) -> dict | None:
    md = {k: v for k, v in (md or {}).items() if k not in (EXT_NAME, EXT_METADATA)}
    return md or None


def text_field(f: pa.Field) -> pa.Field:
    """``f`` with every ``lance.json`` field in it as an ``arrow.json`` one (untagged)."""
    if is_json(f, LANCE_JSON):
        return pa.field(f.name, pa.json_(), f.nullable, _untagged(f.metadata))
    kids = _children(f.type)
    if not kids:
        return f
    return f.with_type(_with_children(f.type, [text_field(c) for c in kids]))


def jsonb_field(f: pa.Field) -> pa.Field:
    """``f`` with every ``arrow.json`` field in it as pylance stores it: ``large_binary``
    tagged ``lance.json``."""
    if is_json(f, ARROW_JSON):
        md = dict(f.metadata or {})
        md.update({EXT_NAME: LANCE_JSON, EXT_METADATA: b""})
        return pa.field(f.name, pa.large_binary(), f.nullable, md)
    kids = _children(f.type)
    if not kids:
        return f
    return f.with_type(_with_children(f.type, [jsonb_field(c) for c in kids]))


def _map_leaves(arr: pa.Array, f: pa.Field, name: bytes, leaf, path: str) -> pa.Array:
    """``arr`` (of field ``f``) with ``leaf(array, path, nested)`` applied to every JSON
    field's values; the other arrays are kept, nested ones rebuilt around new children
    (at offset 0, with their validity)."""
    if is_json(f, name):
        return leaf(arr, path)
    t = f.type
    kids = _children(t)
    if not any(holds(c, name) for c in kids):
        return arr
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([_map_leaves(c, f, name, leaf, path) for c in arr.chunks])
    n = len(arr)
    _, bitmap = _validity(arr)
    if pa.types.is_struct(t):
        # (flatten: a child's value under a null struct is null, not data: it is neither
        # checked as JSON nor converted; pylance stores such a struct with any text there)
        new = [_map_leaves(child, c, name, leaf, f"{path}.{c.name}")
               for child, c in zip(arr.flatten(), kids)]
        buffers = [bitmap]
    elif pa.types.is_fixed_size_list(t):
        values = arr.values.slice(arr.offset * t.list_size, n * t.list_size)
        new = [_map_leaves(values, kids[0], name, leaf, f"{path}[]")]
        buffers = [bitmap]
    else:  # list, large list, map: offsets from 0 over the values they reach
        offsets = np.asarray(arr.offsets)
        values = arr.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
        new = [_map_leaves(values, kids[0], name, leaf, f"{path}[]")]
        buffers = [bitmap, pa.py_buffer(offsets - offsets[0])]
    kinds = [c.with_type(v.type) for c, v in zip(kids, new)]
    return pa.Array.from_buffers(_with_children(t, kinds), n, buffers, arr.null_count,
                                 children=new)


def text_array(arr, f: pa.Field, *, where: str):
    """``arr`` (Array or ChunkedArray of stored field ``f``) with its JSONB values as
    ``arrow.json`` text (see :func:`text_field` for its type)."""
    def leaf(a, path):
        if isinstance(a, pa.ChunkedArray):
            return pa.chunked_array([leaf(c, path) for c in a.chunks], pa.json_())
        return to_text(a, where=f"{where}, column {path!r}")
    return _map_leaves(arr, f, LANCE_JSON, leaf, f.name)


def jsonb_array(arr, f: pa.Field, *, first_row: int = 0):
    """``arr`` (of input field ``f``) with its ``arrow.json`` values as JSONB; a fault
    names the column path and row (nested values: their position in the column's
    values)."""
    def leaf(a, path):
        if isinstance(a, pa.ChunkedArray):
            out, row = [], first_row
            for c in a.chunks:
                out.append(to_jsonb(c, column=path, first_row=row))
                row += len(c)
            return pa.chunked_array(out, pa.large_binary())
        # (a struct's children line up with its rows; a list's items do not)
        return to_jsonb(a, column=path, first_row=0 if "[]" in path else first_row)
    return _map_leaves(arr, f, ARROW_JSON, leaf, f.name)
