"""VariablePackedStruct (2.2): a packed struct with variable-width children.

For a top-level struct field with ``lance-encoding:packed=true`` whose children are
whole-byte fixed-width values, vectors (fixed-size lists of those) and
strings/binaries, with at least one vector or string/binary, in 2.2 files only, as
pylance 14 writes it. Each row is one full-zip value holding its children one after
another: a fixed-width child or a vector as its raw bytes, a variable-width child as
a little-endian length (32 bits; 64 for large_string/large_binary) then its bytes.

Description: ``VariablePackedStruct{fields: [FieldEncoding{value: Flat(bits),
bits_per_value: bits} | FieldEncoding{value: FixedSizeList{dim, Flat(item bits)},
bits_per_value: dim * item bits} | FieldEncoding{value: Variable(Flat(len bits)),
bits_per_length: len bits}, ...]}`` as the full-zip ``value_compression``.

Example, ``struct<a: int32, s: string>`` row ``{a: 1, s: "x"}`` → the 9 bytes
``01 00 00 00 | 01 00 00 00 | 78``.

Rows and children cannot be null (pylance 14 refuses to write them).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb.encodings import pb
from lancenb.encodings.blocks import Variable, fixed_bits
from lancenb.encodings.physical import fsst
from lancenb.errors import CorruptFileError, NotSupportedError
from lancenb.kernels import slices

__all__ = ["is_variable_struct", "description", "check", "pack_rows", "unpack_rows"]


def _var_width(t: pa.DataType) -> int | None:
    """Length-prefix bytes of a variable-width child type, or None."""
    if pa.types.is_string(t) or pa.types.is_binary(t):
        return 4
    if pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        return 8
    return None


def _children(dt: pa.DataType) -> list[tuple[str, int]] | None:
    """``[("fixed", bytes) | ("vector", bytes) | ("var", length bytes)]`` per child,
    or None when the struct is not a variable packed struct (one with a
    variable-width or vector child; pylance packs the others as PackedStruct)."""
    if not pa.types.is_struct(dt) or dt.num_fields == 0:
        return None
    out = []
    for f in dt:
        lw = _var_width(f.type)
        if lw is not None:
            out.append(("var", lw))
            continue
        if pa.types.is_fixed_size_list(f.type):
            # a vector of whole-byte primitives (no nested lists, no booleans)
            item = f.type.value_type
            b = None if pa.types.is_nested(item) else fixed_bits(item)
            if b is None or b % 8 or f.type.list_size <= 0:
                return None
            out.append(("vector", f.type.list_size * b // 8))
            continue
        b = None if pa.types.is_struct(f.type) else fixed_bits(f.type)
        if b is None or b % 8:
            return None
        out.append(("fixed", b // 8))
    return out if any(k != "fixed" for k, _ in out) else None


def _vector_desc(t: pa.DataType):
    return pb.e21.CompressiveEncoding(fixed_size_list=pb.e21.FixedSizeList(
        items_per_value=t.list_size, values=pb.flat(fixed_bits(t.value_type))))


def is_variable_struct(dt: pa.DataType) -> bool:
    """A struct that packs as a VariablePackedStruct (some child variable-width)."""
    return _children(dt) is not None


def description(dt: pa.DataType):
    """The ``VariablePackedStruct`` description of struct type ``dt``."""
    vps = pb.e21.VariablePackedStruct()
    for f, (kind, w) in zip(dt, _children(dt)):
        fe = vps.fields.add()
        if kind == "vector":
            fe.value.CopyFrom(_vector_desc(f.type))
            fe.bits_per_value = 8 * w
        elif kind == "fixed":
            fe.value.CopyFrom(pb.flat(8 * w))
            fe.bits_per_value = 8 * w
        else:
            fe.value.CopyFrom(pb.variable(8 * w))
            fe.bits_per_length = 8 * w
    return pb.e21.CompressiveEncoding(variable_packed_struct=vps)


def check(vc, dt: pa.DataType, where: str) -> list:
    """Check the description ``vc`` against ``dt``; returns per child None or the
    :class:`~lancenb.encodings.physical.fsst.FsstValues` that expands its values
    (pylance may FSST-compress a string child's values inside the rows)."""
    kids = _children(dt)
    fields = list(vc.variable_packed_struct.fields)
    if kids is None or len(fields) != len(kids):
        raise CorruptFileError(f"{where}: variable packed struct of {len(fields)} children "
                               f"for a {dt} column")
    out = []
    for f, fe, (kind, w) in zip(dt, fields, kids):
        how = fe.value.WhichOneof("compression")
        if kind in ("fixed", "vector"):
            want = pb.flat(8 * w) if kind == "fixed" else _vector_desc(f.type)
            if fe.WhichOneof("layout") != "bits_per_value" or fe.bits_per_value != 8 * w or \
                    fe.value != want:
                raise CorruptFileError(f"{where}: child {f.name!r} described as "
                                       f"{pb.describe(fe.value)} ({fe.WhichOneof('layout')}), "
                                       f"not {8 * w}-bit values")
            out.append(None)
            continue
        if fe.WhichOneof("layout") != "bits_per_length" or fe.bits_per_length != 8 * w:
            raise CorruptFileError(f"{where}: child {f.name!r} needs {8 * w}-bit lengths")
        if fe.value == pb.variable(8 * w):
            out.append(None)
        elif how == "fsst":
            out.append(fsst.FsstValues(fe.value, f"{where}, child {f.name!r}"))
        else:
            raise NotSupportedError(f"{where}: child {f.name!r} values as "
                                    f"{pb.describe(fe.value)} are not supported")
    return out


def pack_rows(arr: pa.StructArray) -> Variable:
    """Each row's children back to back, as one variable-width block (32-bit
    offsets, as pylance's full-zip pages take)."""
    kids = _children(arr.type)
    if kids is None:
        raise NotSupportedError(f"{arr.type} is not a struct with variable-width children")
    if arr.null_count or any(arr.field(i).null_count for i in range(len(kids))):
        raise NotSupportedError("packed structs with variable-width children cannot hold "
                                "nulls (pylance 14 refuses to write them too)")
    n = len(arr)
    srcs, starts, lens = [], [], []
    base = 0
    for i, (kind, w) in enumerate(kids):
        child = arr.field(i)
        if kind in ("fixed", "vector"):
            if kind == "vector":
                if child.values.null_count:
                    raise NotSupportedError("packed struct vectors cannot hold null items")
                child = child.flatten()  # the items of these rows, offset included
                raw_w = w // arr.type.field(i).type.list_size
                raw = np.frombuffer(child.buffers()[1], np.uint8)[child.offset * raw_w:
                                                                  (child.offset + len(child))
                                                                  * raw_w]
            else:
                raw = np.frombuffer(child.buffers()[1], np.uint8)[child.offset * w:
                                                                  (child.offset + n) * w]
            srcs.append(raw)
            starts.append(base + np.arange(n, dtype=np.int64) * w)
            lens.append(np.full(n, w, np.int64))
            base += len(raw)
            continue
        odt = np.int32 if w == 4 else np.int64
        offs = np.frombuffer(child.buffers()[1], odt)[child.offset:child.offset + n + 1]
        offs = offs.astype(np.int64)
        sizes = np.diff(offs)
        prefix = sizes.astype("<u4" if w == 4 else "<u8").view(np.uint8)
        srcs.append(prefix)
        starts.append(base + np.arange(n, dtype=np.int64) * w)
        lens.append(np.full(n, w, np.int64))
        base += len(prefix)
        data = np.frombuffer(child.buffers()[2], np.uint8) if child.buffers()[2] is not None \
            else np.zeros(0, np.uint8)
        srcs.append(data)
        starts.append(base + offs[:-1])
        lens.append(sizes)
        base += len(data)
    src = np.concatenate(srcs) if srcs else np.zeros(0, np.uint8)
    st = np.stack(starts, axis=1).reshape(-1)
    ln = np.stack(lens, axis=1).reshape(-1)
    row_bytes = np.stack(lens, axis=1).sum(axis=1)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(row_bytes, out=offsets[1:])
    if offsets[-1] > np.iinfo(np.int32).max:
        raise NotSupportedError("a page of packed struct rows over 2 GiB")
    out = np.empty(int(offsets[-1]), np.uint8)
    if slices.concat_slices(src, st, ln, out) != slices.OK:
        raise CorruptFileError("packed struct children outside their buffers")  # unreachable
    return Variable(offsets, out, n, 32)


def _gather(data: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """``width`` bytes at each of ``starts`` (checked by the caller), row-major."""
    idx = starts[:, None] + np.arange(width, dtype=np.int64)
    return data[idx.reshape(-1)]


def unpack_rows(dt: pa.DataType, block: Variable, where: str,
                expanders: list | None = None) -> pa.StructArray:
    """The struct array of ``dt`` from a block of packed rows; every length is
    checked against its row before any byte is read. ``expanders`` (from
    :func:`check`) decompress children stored compressed."""
    kids = _children(dt)
    if kids is None:
        raise CorruptFileError(f"{where}: variable packed struct rows for a {dt} column")
    n = block.num_values
    data = block.data
    cursor = np.asarray(block.offsets[:-1], np.int64).copy()
    ends = np.asarray(block.offsets[1:], np.int64)
    arrays = []
    for f, (kind, w) in zip(dt, kids):
        if np.any(cursor + w > ends):
            raise CorruptFileError(f"{where}: a packed struct row ends inside child "
                                   f"{f.name!r}")
        raw = _gather(data, cursor, w)
        cursor += w
        if kind == "fixed":
            arrays.append(pa.Array.from_buffers(f.type, n, [None, pa.py_buffer(raw)]))
            continue
        if kind == "vector":
            d = f.type.list_size
            items = pa.Array.from_buffers(f.type.value_type, n * d, [None, pa.py_buffer(raw)])
            arrays.append(pa.FixedSizeListArray.from_arrays(items, type=f.type))
            continue
        sizes = raw.view("<u4" if w == 4 else "<u8").astype(np.int64)
        if np.any(sizes < 0) or np.any(sizes > ends - cursor):
            raise CorruptFileError(f"{where}: a length in child {f.name!r} runs past its row")
        offs = np.zeros(n + 1, np.int64)
        np.cumsum(sizes, out=offs[1:])
        out = np.empty(int(offs[-1]), np.uint8)
        if slices.concat_slices(data, cursor, sizes, out) != slices.OK:
            raise CorruptFileError(f"{where}: child {f.name!r} bytes outside the page")
        cursor += sizes
        expand = expanders[len(arrays)] if expanders else None
        if expand is not None:
            got = expand.expand(Variable(offs, out, n, 8 * w), f"{where}, child {f.name!r}")
            offs, out = np.asarray(got.offsets, np.int64), got.data
        if w == 4:
            if offs[-1] > np.iinfo(np.int32).max:
                raise NotSupportedError(f"{where}: child {f.name!r} holds over 2 GiB in one "
                                        f"page")
            offs = offs.astype(np.int32)
        arrays.append(pa.Array.from_buffers(f.type, n, [None, pa.py_buffer(offs),
                                                        pa.py_buffer(out)]))
    if np.any(cursor != ends):
        raise CorruptFileError(f"{where}: bytes left over after a packed struct row's "
                               f"children")
    return pa.StructArray.from_arrays(arrays, fields=list(dt))
