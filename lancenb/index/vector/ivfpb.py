"""The two protobuf messages of pylance's vector-index files, by hand.

``lance.index.pb.Tensor`` and ``lance.index.pb.Ivf`` (``protos/index.proto`` in the
reference) are the only messages an IVF index file holds in its global buffers: the
IVF model (partition centroids, each partition's first row and row count) and a PQ
codebook. Both are small and flat, so they are read and written here with the wire
format directly instead of a generated module.

Wire layout (proto3; fields absent when default)::

    Tensor: 1 data_type (varint enum: 0 bf16, 1 f16, 2 f32, 3 f64, 4 u8, 5 u16, 6 u32,
            7 u64), 2 shape (packed varint u32), 3 data (bytes, little-endian values)
    Ivf:    1 centroids (packed f32, deprecated), 2 offsets (packed varint u64),
            3 lengths (packed varint u32), 4 centroids_tensor (Tensor), 5 loss (f64)

Example: ``Tensor(f32, shape [1, 2], data 8 bytes)`` is
``08 02 12 02 01 02 1a 08 <8 bytes>``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from lancenb.errors import CorruptFileError

__all__ = ["Ivf", "decode_tensor", "encode_tensor", "decode_ivf", "encode_ivf"]

# Tensor.DataType -> numpy dtype (bf16 has no numpy type: refused when read)
_DTYPES = {1: np.dtype("<f2"), 2: np.dtype("<f4"), 3: np.dtype("<f8"), 4: np.dtype("u1"),
           5: np.dtype("<u2"), 6: np.dtype("<u4"), 7: np.dtype("<u8")}
_CODES = {v: k for k, v in _DTYPES.items()}


@dataclass
class Ivf:
    """The IVF model: centroids ``(num_partitions, dim)``, and per partition the first
    row of its entries in the storage file and how many there are."""

    centroids: np.ndarray | None
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    loss: float | None = None


def _varint(buf: bytes, pos: int, what: str) -> tuple[int, int]:
    out = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise CorruptFileError(f"{what}: truncated or overlong varint at byte {pos}")
        b = buf[pos]
        pos += 1
        out |= (b & 0x7F) << shift
        if b < 0x80:
            return out, pos
        shift += 7


def _fields(buf: bytes, what: str):
    """(field number, wire type, value) of each field; value is an int for varints and
    fixed-width numbers' raw bytes, or the bytes of a length-delimited field."""
    pos, n = 0, len(buf)
    while pos < n:
        key, pos = _varint(buf, pos, what)
        num, wt = key >> 3, key & 7
        if wt == 0:
            val, pos = _varint(buf, pos, what)
        elif wt == 2:
            size, pos = _varint(buf, pos, what)
            if pos + size > n:
                raise CorruptFileError(f"{what}: field {num} runs past the end "
                                       f"({pos + size} > {n} bytes)")
            val, pos = bytes(buf[pos:pos + size]), pos + size
        elif wt in (1, 5):
            width = 8 if wt == 1 else 4
            if pos + width > n:
                raise CorruptFileError(f"{what}: field {num} runs past the end")
            val, pos = bytes(buf[pos:pos + width]), pos + width
        else:
            raise CorruptFileError(f"{what}: unsupported wire type {wt} (field {num})")
        yield num, wt, val


def _packed_varints(val, wt: int, what: str) -> list[int]:
    if wt == 0:
        return [val]
    out, pos = [], 0
    while pos < len(val):
        v, pos = _varint(val, pos, what)
        out.append(v)
    return out


def _put_varint(out: bytearray, v: int) -> None:
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return


def _put_bytes(out: bytearray, num: int, data: bytes) -> None:
    _put_varint(out, (num << 3) | 2)
    _put_varint(out, len(data))
    out += data


def _put_packed(out: bytearray, num: int, values) -> None:
    if len(values) == 0:
        return
    body = bytearray()
    for v in values:
        _put_varint(body, int(v))
    _put_bytes(out, num, bytes(body))


def decode_tensor(buf: bytes, what: str = "index tensor") -> np.ndarray:
    """A ``Tensor`` message as a numpy array of its shape."""
    code, shape, data = 0, [], b""
    for num, wt, val in _fields(buf, what):
        if num == 1 and wt == 0:
            code = val
        elif num == 2:
            shape += _packed_varints(val, wt, what)
        elif num == 3 and wt == 2:
            data = val
    dtype = _DTYPES.get(code)
    if dtype is None:
        raise CorruptFileError(f"{what}: unsupported tensor data type {code}")
    count = int(np.prod(shape)) if shape else 0
    if count * dtype.itemsize != len(data):
        raise CorruptFileError(f"{what}: shape {shape} of {dtype} needs "
                               f"{count * dtype.itemsize} bytes, the tensor has {len(data)}")
    return np.frombuffer(data, dtype=dtype).reshape(shape)


def encode_tensor(arr: np.ndarray) -> bytes:
    """``arr`` as a ``Tensor`` message (its dtype must be one the message knows)."""
    arr = np.ascontiguousarray(arr)
    dt = arr.dtype.newbyteorder("<") if arr.dtype.itemsize > 1 else arr.dtype
    code = _CODES.get(np.dtype(dt))
    if code is None:
        raise CorruptFileError(f"a tensor of {arr.dtype} cannot be stored")
    out = bytearray()
    if code:
        _put_varint(out, 8)
        _put_varint(out, code)
    _put_packed(out, 2, arr.shape)
    _put_bytes(out, 3, arr.astype(dt, copy=False).tobytes())
    return bytes(out)


def decode_ivf(buf: bytes, what: str = "IVF model") -> Ivf:
    """An ``Ivf`` message; centroids from the tensor, or the deprecated float list."""
    flat, offsets, lengths, tensor, loss = [], [], [], None, None
    for num, wt, val in _fields(buf, what):
        if num == 1:
            if wt == 5:
                flat.append(struct.unpack("<f", val)[0])
            elif wt == 2:
                flat.extend(np.frombuffer(val, "<f4").tolist())
        elif num == 2:
            offsets += _packed_varints(val, wt, what)
        elif num == 3:
            lengths += _packed_varints(val, wt, what)
        elif num == 4 and wt == 2:
            tensor = decode_tensor(val, what + ": centroids")
        elif num == 5 and wt == 1:
            loss = struct.unpack("<d", val)[0]
    if tensor is None and flat:
        n = len(offsets) or 1
        tensor = np.asarray(flat, np.float32).reshape(n, -1)
    if len(offsets) != len(lengths):
        raise CorruptFileError(f"{what}: {len(offsets)} partition offsets but "
                               f"{len(lengths)} lengths")
    return Ivf(tensor, np.asarray(offsets, np.uint64), np.asarray(lengths, np.uint32), loss)


def encode_ivf(ivf: Ivf) -> bytes:
    """``ivf`` as an ``Ivf`` message (as pylance writes it: no deprecated float list)."""
    out = bytearray()
    _put_packed(out, 2, ivf.offsets)
    _put_packed(out, 3, ivf.lengths)
    if ivf.centroids is not None:
        _put_bytes(out, 4, encode_tensor(ivf.centroids))
    if ivf.loss is not None:
        _put_varint(out, (5 << 3) | 1)
        out += struct.pack("<d", float(ivf.loss))
    return bytes(out)
