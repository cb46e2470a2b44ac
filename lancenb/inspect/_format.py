"""Plain-data helpers shared by :mod:`lancenb.inspect`: metadata maps, protobuf
trees and compact encoding names, and the version and flag tables reports use."""

from __future__ import annotations

import struct

from google.protobuf import json_format
from google.protobuf.message import Message

FEATURE_FLAGS = {1: "deletion_files", 2: "stable_row_ids", 4: "use_v2_format (deprecated)",
                 8: "table_config", 16: "base_paths", 32: "disable_transaction_file"}
# pylance 14 knows the flags above (bits 1..32) and reads these file versions
# (0.1 checked by writing data_storage_version="legacy" with it; 2.3 is its "next")
PYLANCE14_FLAGS = 63
PYLANCE14_FILE_VERSIONS = ("0.1", "2.0", "2.1", "2.2", "2.3")
LANCENB_FILE_VERSIONS = ("0.1", "2.0", "2.1", "2.2")
# pages whose buffers exceed this are not decoded again for an explanation
EXPLAIN_MAX_PAGE_BYTES = 64 << 20
_LEGACY_FOOTER = struct.Struct("<QHH4s")


def _md(metadata) -> dict:
    return {(k.decode() if isinstance(k, bytes) else k):
            (v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v))
            for k, v in (metadata or {}).items()}


def _tree(msg) -> dict:
    return json_format.MessageToDict(msg, preserving_proto_field_name=True)


def _describe_any(msg) -> str:
    """A compact name for any encoding message: each set oneof, children in brackets."""
    for o in msg.DESCRIPTOR.oneofs:
        which = msg.WhichOneof(o.name)
        if which is not None:
            inner = getattr(msg, which)
            if not hasattr(inner, "DESCRIPTOR"):
                return which
            kids = [_describe_any(v) for _, v in inner.ListFields() if isinstance(v, Message)]
            kids = [k for k in kids if k]
            return f"{which}({', '.join(kids)})" if kids else which
    kids = [_describe_any(v) for _, v in msg.ListFields() if isinstance(v, Message)]
    return ", ".join(k for k in kids if k)
