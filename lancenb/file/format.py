"""The 2.x file container: footer, offset tables, and where everything sits.

Layout, in file order::

    data buffers       page buffers and user global buffers, each 64-byte aligned,
                       padded with 0x48 ('H') to the next multiple of 64
    global buffer 0    the FileDescriptor (schema + row count), not padded
    column metadata    one ColumnMetadata protobuf per column, back to back
    CMO table          per column: u64 position, u64 size
    GBO table          per global buffer: u64 position, u64 size (entry 0: schema)
    footer (40 bytes)  u64 column-metadata start, u64 CMO position, u64 GBO position,
                       u32 global buffer count, u32 column count,
                       u16 major, u16 minor, b"LANC"

Example: the footer of a one-column 2.1 file whose metadata starts at 0x9f:
``9f00000000000000 0c01000000000000 1c01000000000000 01000000 01000000 0200 0100 LANC``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from lancenb.errors import CorruptFileError

__all__ = ["Footer", "FOOTER_SIZE", "MAGIC", "PAGE_ALIGN", "PAD_BYTE", "parse_offset_table",
           "pack_offset_table"]

MAGIC = b"LANC"
FOOTER_SIZE = 40
PAGE_ALIGN = 64
PAD_BYTE = b"H"
_FOOTER = struct.Struct("<QQQIIHH4s")


@dataclass
class Footer:
    column_meta_start: int
    cmo_position: int
    gbo_position: int
    num_global_buffers: int
    num_columns: int
    major: int
    minor: int

    def pack(self) -> bytes:
        return _FOOTER.pack(self.column_meta_start, self.cmo_position, self.gbo_position,
                            self.num_global_buffers, self.num_columns, self.major, self.minor,
                            MAGIC)

    @classmethod
    def parse(cls, data: bytes, file_size: int, path: str) -> "Footer":
        if file_size < FOOTER_SIZE:
            raise CorruptFileError(f"file {path!r}: {file_size} bytes is too small to be a Lance "
                                   f"file (the footer alone is {FOOTER_SIZE})")
        (cm, cmo, gbo, ngb, ncol, major, minor, magic) = _FOOTER.unpack(bytes(data[-FOOTER_SIZE:]))
        if magic != MAGIC:
            raise CorruptFileError(f"file {path!r}: not a Lance file (magic {magic!r} at offset "
                                   f"{file_size - 4}, expected {MAGIC!r})")
        f = cls(cm, cmo, gbo, ngb, ncol, major, minor)
        end = file_size - FOOTER_SIZE
        if (major, minor) in ((0, 1), (0, 2), (0, 0)):
            return f  # legacy files have another footer; the caller reports them
        if f.num_global_buffers < 1:
            raise CorruptFileError(f"file {path!r}: footer says {ngb} global buffers (the schema "
                                   f"needs at least one)")
        if f.cmo_position + 16 * ncol != f.gbo_position and ncol:
            raise CorruptFileError(f"file {path!r}: column offset table at {cmo} with {ncol} "
                                   f"entries does not end at the global buffer table ({gbo})")
        if f.gbo_position + 16 * ngb != end:
            raise CorruptFileError(f"file {path!r}: global buffer table at {gbo} with {ngb} "
                                   f"entries does not end at the footer ({end})")
        if not (cm <= cmo <= gbo <= end):
            raise CorruptFileError(f"file {path!r}: footer positions out of order "
                                   f"(metadata {cm}, column table {cmo}, buffer table {gbo})")
        return f


def parse_offset_table(data: bytes, count: int, limit: int, what: str, path: str) -> np.ndarray:
    """``count`` (position, size) pairs, each checked to lie within ``[0, limit)``."""
    if len(data) != 16 * count:
        raise CorruptFileError(f"file {path!r}: {what} table has {len(data)} bytes, expected "
                               f"{16 * count}")
    t = np.frombuffer(data, dtype="<u8").reshape(count, 2).astype(np.int64)
    bad = np.flatnonzero((t[:, 0] < 0) | (t[:, 1] < 0) | (t[:, 0] + t[:, 1] > limit)
                         | (t[:, 0] + t[:, 1] < t[:, 0]))
    if bad.size:
        i = int(bad[0])
        raise CorruptFileError(f"file {path!r}: {what} {i} at offset {int(t[i, 0])} with size "
                               f"{int(t[i, 1])} lies outside the file region ({limit} bytes)")
    return t


def pack_offset_table(entries) -> bytes:
    return np.asarray(entries, dtype="<u8").reshape(-1, 2).tobytes()
