"""Which 2.0 fields are packed structs and blobs, as the 2.0 writer and reader decide.

A packed struct is one column of ``packed_struct`` pages; a blob field one column of
``(position: u64, size: u64)`` descriptions (:data:`BLOB_TYPE`) whose values sit out
of line. The column layout of a whole 2.0 file, and reading a field's rows out of its
columns, is file-layer work: :mod:`lancenb.file.formats.v2_0`.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["is_packed_2_0", "is_blob_2_0", "BLOB_TYPE"]

PACKED = "lance-encoding:packed"
PACKED_LEGACY = "packed"
BLOB = "lance-encoding:blob"
BLOB_TYPE = pa.struct([("position", pa.uint64()), ("size", pa.uint64())])


def _md(f: pa.Field) -> dict:
    return {(k.decode() if isinstance(k, bytes) else k): (v.decode("utf-8", "replace")
                                                          if isinstance(v, bytes) else str(v))
            for k, v in (f.metadata or {}).items()}


def is_packed_2_0(f: pa.Field) -> bool:
    """As the 2.0 writer decides: the legacy ``packed`` key if present, else the
    presence of ``lance-encoding:packed``."""
    if not pa.types.is_struct(f.type):
        return False
    md = _md(f)
    if PACKED_LEGACY in md:
        return md[PACKED_LEGACY] == "true"
    return PACKED in md


def is_blob_2_0(f: pa.Field) -> bool:
    return BLOB in _md(f) and (pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type))
