"""The protobuf messages of pylance's vector-index files, by hand, and its legacy
single-file IVF_PQ layout (at the end of this module).

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

from lancenb.errors import CorruptFileError, NotSupportedError

__all__ = ["Ivf", "decode_tensor", "encode_tensor", "decode_ivf", "encode_ivf",
           "LegacyIndex", "is_legacy_footer", "legacy_file_bytes", "decode_legacy_file",
           "read_legacy_file", "write_legacy"]

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


# -- the legacy single-file IVF_PQ index (pylance's index_file_version="Legacy") ---------
#
# One file, ``index.idx``, no Lance file structure: each partition in turn as its
# row-major PQ codes (``n * m`` bytes, row ``i``'s ``m`` codes together) then its row
# ids (``n`` little-endian u64); then the ``lance.index.pb.Index`` message prefixed by
# its u32 length; then a 16-byte footer: the message's position (i64), major and minor
# version (i16 0 and 1) and ``LANC``. The message::
#
#     Index:            1 name, 2 columns (repeated string), 3 dataset_version (u64),
#                       4 index_type (VECTOR = 0), 5 vector_index (VectorIndex)
#     VectorIndex:      1 spec_version (1), 2 dimension, 3 stages (repeated
#                       VectorIndexStage), 4 metric_type (L2 0, Cosine 1, Dot 2, Hamming 3)
#     VectorIndexStage: 2 ivf (Ivf: offsets are byte positions of the partitions in the
#                       file, lengths their rows), 3 pq (Pq)
#     Pq:               1 num_bits, 2 num_sub_vectors, 3 dimension, 4 codebook (packed
#                       f32, deprecated), 5 codebook_tensor (Tensor (2**num_bits, dim)
#                       whose bytes are [m][2**num_bits][dim/m], as the v3 codebook)
#
# pylance writes it for IVF_PQ only (other types ignore the option) and reads 8-bit
# codes only (it fails on its own 4-bit legacy files), so lancenb writes 8 bits.

LEGACY_FOOTER = struct.Struct("<qhh4s")
LEGACY_VERSION = (0, 1)
_LEGACY_METRICS = ("l2", "cosine", "dot", "hamming")


@dataclass
class LegacyIndex:
    """What a legacy IVF_PQ file holds (codes row-major per partition; ``offsets`` in
    rows, as the storage of a v3 index)."""

    name: str
    column: str
    dataset_version: int
    metric: str
    ivf: Ivf
    num_bits: int
    num_sub_vectors: int
    dimension: int
    codebook: np.ndarray  # (m, 2**num_bits, dim/m) float32
    row_ids: np.ndarray  # (n,) uint64, grouped by partition
    codes: np.ndarray  # (n, m) uint8


def is_legacy_footer(tail: bytes) -> bool:
    """Whether the last 16 bytes of an index file are a legacy index file's footer."""
    if len(tail) < LEGACY_FOOTER.size:
        return False
    _, major, minor, magic = LEGACY_FOOTER.unpack(tail[-LEGACY_FOOTER.size:])
    return magic == b"LANC" and (major, minor) == LEGACY_VERSION


def encode_legacy_message(idx: LegacyIndex, ivf: Ivf) -> bytes:
    """The ``Index`` message of ``idx`` with ``ivf`` (byte offsets)."""
    pq = bytearray()
    for num, v in ((1, idx.num_bits), (2, idx.num_sub_vectors), (3, idx.dimension)):
        _put_varint(pq, num << 3)
        _put_varint(pq, v)
    kk = 1 << idx.num_bits
    _put_bytes(pq, 5, encode_tensor(np.ascontiguousarray(idx.codebook, np.float32)
                                    .reshape(kk, -1)))
    vec = bytearray()
    for num, v in ((1, 1), (2, idx.dimension)):
        _put_varint(vec, num << 3)
        _put_varint(vec, v)
    stage = bytearray()
    _put_bytes(stage, 2, encode_ivf(ivf))
    _put_bytes(vec, 3, bytes(stage))
    stage = bytearray()
    _put_bytes(stage, 3, bytes(pq))
    _put_bytes(vec, 3, bytes(stage))
    code = _LEGACY_METRICS.index(idx.metric)
    if code:
        _put_varint(vec, 4 << 3)
        _put_varint(vec, code)
    out = bytearray()
    _put_bytes(out, 1, idx.name.encode())
    _put_bytes(out, 2, idx.column.encode())
    _put_varint(out, 3 << 3)
    _put_varint(out, int(idx.dataset_version))
    _put_bytes(out, 5, bytes(vec))
    return bytes(out)


def legacy_file_bytes(idx: LegacyIndex) -> bytes:
    """The whole legacy file of ``idx`` (``idx.ivf``'s offsets and lengths in rows)."""
    starts = idx.ivf.offsets.astype(np.int64)
    lengths = idx.ivf.lengths.astype(np.int64)
    m = idx.codes.shape[1] if idx.codes.ndim == 2 else idx.num_sub_vectors
    body, byte_offsets, pos = [], [], 0
    for s, n in zip(starts.tolist(), lengths.tolist()):
        byte_offsets.append(pos)
        if n:
            body.append(np.ascontiguousarray(idx.codes[s:s + n], np.uint8).tobytes())
            body.append(np.ascontiguousarray(idx.row_ids[s:s + n], "<u8").tobytes())
            pos += n * (m + 8)
    ivf = Ivf(idx.ivf.centroids, np.asarray(byte_offsets, np.uint64),
              lengths.astype(np.uint32), idx.ivf.loss)
    msg = encode_legacy_message(idx, ivf)
    return b"".join(body) + struct.pack("<I", len(msg)) + msg + \
        LEGACY_FOOTER.pack(pos, *LEGACY_VERSION, b"LANC")


def _decode_pq(buf: bytes, what: str) -> tuple[int, int, int, np.ndarray | None]:
    nbits = m = dim = 0
    flat, tensor = [], None
    for num, wt, val in _fields(buf, what):
        if num == 1 and wt == 0:
            nbits = val
        elif num == 2 and wt == 0:
            m = val
        elif num == 3 and wt == 0:
            dim = val
        elif num == 4 and wt == 2:
            flat.extend(np.frombuffer(val, "<f4").tolist())
        elif num == 5 and wt == 2:
            tensor = decode_tensor(val, what + ": codebook")
    if tensor is None and flat:
        tensor = np.asarray(flat, np.float32)
    return nbits, m, dim, tensor


def decode_legacy_file(data: bytes, what: str = "legacy index") -> LegacyIndex:
    """A legacy IVF_PQ index file (its whole bytes)."""
    if not is_legacy_footer(data):
        raise CorruptFileError(f"{what}: not a legacy index file (no 0.1 LANC footer)")
    pos = LEGACY_FOOTER.unpack(data[-LEGACY_FOOTER.size:])[0]
    end = len(data) - LEGACY_FOOTER.size
    if pos < 0 or pos + 4 > end:
        raise CorruptFileError(f"{what}: metadata position {pos} past the file's end")
    size = struct.unpack("<I", data[pos:pos + 4])[0]
    if pos + 4 + size > end:
        raise CorruptFileError(f"{what}: metadata of {size} bytes runs past the footer")
    name = column = ""
    version, vec = 0, None
    for num, wt, val in _fields(data[pos + 4:pos + 4 + size], what):
        if num == 1 and wt == 2:
            name = val.decode("utf-8", "replace")
        elif num == 2 and wt == 2 and not column:
            column = val.decode("utf-8", "replace")
        elif num == 3 and wt == 0:
            version = val
        elif num == 5 and wt == 2:
            vec = val
    if vec is None:
        raise CorruptFileError(f"{what}: the metadata describes no vector index")
    dim, metric, ivf, pq = 0, 0, None, None
    for num, wt, val in _fields(vec, what):
        if num == 2 and wt == 0:
            dim = val
        elif num == 4 and wt == 0:
            metric = val
        elif num == 3 and wt == 2:
            for snum, swt, sval in _fields(val, what):
                if snum == 2 and swt == 2:
                    ivf = decode_ivf(sval, what + ": IVF model")
                elif snum == 3 and swt == 2:
                    pq = _decode_pq(sval, what + ": PQ")
                elif swt == 2:
                    raise NotSupportedError(f"{what}: stage {snum} (a transform or "
                                            "DiskANN) is not supported; lancenb reads "
                                            "IVF + PQ legacy indices")
    if ivf is None or pq is None or ivf.centroids is None:
        raise CorruptFileError(f"{what}: a legacy index needs an IVF stage with centroids "
                               "and a PQ stage")
    nbits, m, pdim, cb = pq
    if nbits != 8 or m <= 0 or pdim % m or cb is None or cb.size != 256 * pdim:
        raise NotSupportedError(f"{what}: PQ of {nbits} bits x {m} sub-vectors over {pdim} "
                                "dimensions: lancenb reads 8-bit legacy PQ indices")
    if metric >= len(_LEGACY_METRICS):
        raise CorruptFileError(f"{what}: unknown metric type {metric}")
    lengths = ivf.lengths.astype(np.int64)
    codes, ids = [], []
    for off, n in zip(ivf.offsets.tolist(), lengths.tolist()):
        if off + n * (m + 8) > pos:
            raise CorruptFileError(f"{what}: a partition of {n} rows at byte {off} runs "
                                   f"into the metadata at {pos}")
        codes.append(np.frombuffer(data, np.uint8, n * m, off).reshape(n, m))
        ids.append(np.frombuffer(data, "<u8", n, off + n * m))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.uint64)
    return LegacyIndex(
        name, column, int(version), _LEGACY_METRICS[metric],
        Ivf(ivf.centroids, starts, ivf.lengths, ivf.loss), nbits, m, pdim or dim,
        np.ascontiguousarray(cb.astype(np.float32).reshape(m, 256, pdim // m)),
        np.concatenate(ids + [np.zeros(0, "<u8")]).astype(np.uint64),
        np.concatenate(codes + [np.zeros((0, m), np.uint8)]))


def write_legacy(uri: str, storage_options, *, name: str, column: str,
                 dataset_version: int, metric: str, centroids: np.ndarray, loss,
                 row_ids: np.ndarray, labels: np.ndarray, codes: np.ndarray,
                 codebook: np.ndarray) -> int:
    """Write a legacy IVF_PQ index file at ``uri`` from each row's id, partition and
    row-major 8-bit ``codes`` (any order: grouped here, stable); its size in bytes."""
    from lancenb.io import open_writer  # (the protobuf helpers above need no I/O)

    nparts = len(centroids)
    order = np.argsort(labels, kind="stable")
    lengths = np.bincount(np.asarray(labels)[order], minlength=nparts).astype(np.uint32)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.uint64)
    codes = np.asarray(codes, np.uint8).reshape(len(order), -1)[order]
    m = codebook.shape[0]
    idx = LegacyIndex(name, column, int(dataset_version), metric,
                      Ivf(np.ascontiguousarray(centroids, np.float32), starts, lengths, loss),
                      8, m, m * codebook.shape[2], codebook,
                      np.asarray(row_ids, np.uint64)[order], codes)
    data = legacy_file_bytes(idx)
    w = open_writer(uri, storage_options)
    try:
        w.write(data)
    finally:
        w.close()
    return len(data)


def read_legacy_file(uri: str, storage_options) -> LegacyIndex | None:
    """The legacy index in the file at ``uri``; None when the file is not one (its
    last 16 bytes tell: a v3 index file is a Lance file, whose footer differs)."""
    from lancenb.io import open_reader

    r = open_reader(uri, storage_options)
    try:
        size = r.size()
        tail = bytes(r.read_ranges([(max(0, size - 16), min(16, size))])[0])
        if not is_legacy_footer(tail):
            return None
        data = bytes(r.read_ranges([(0, size)])[0])
    finally:
        r.close()
    return decode_legacy_file(data, uri)
