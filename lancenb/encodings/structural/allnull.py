"""All-null pages (2.1 ``AllNullLayout``) and constant pages (2.2 ``ConstantLayout``).

2.1 and 2.2 share the message's field numbers: ``layers = 5``; 2.2 adds
``inline_value = 6`` (the one value of a constant fixed-width page, at most 32 bytes;
absent means every value is null) and compressed rep/def levels (fields 7..10).
A simple page (no list or struct levels) has **no buffers**.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb.encodings import pb
from lancenb.encodings.blocks import FixedWidth, fixed_bits, to_arrow
from lancenb.errors import CorruptFileError, NotSupportedError

__all__ = ["encode", "ConstantDecoder"]

L = pb.e21.RepDefLayer


def encode():
    """An all-null page of flat data: no buffers, one nullable-item layer."""
    layout = pb.e21.PageLayout()
    layout.constant_layout.layers.append(L.REPDEF_NULLABLE_ITEM)
    return [], layout


class ConstantDecoder:
    def __init__(self, layout, num_rows: int, buffer_sizes, dtype: pa.DataType, where: str):
        if (layout.HasField("rep_compression") or layout.HasField("def_compression")
                or len(buffer_sizes)):
            raise NotSupportedError(f"{where}: all-null/constant pages with rep/def levels "
                                    f"(nested data) are not supported yet")
        layers = list(layout.layers)
        if layers not in ([L.REPDEF_NULLABLE_ITEM], [L.REPDEF_ALL_VALID_ITEM]):
            raise NotSupportedError(f"{where}: constant page layers {layers} not supported yet")
        self.dtype = dtype
        self.num_rows = num_rows
        self.value = bytes(layout.inline_value) if layout.HasField("inline_value") else None
        if self.value is not None:
            bits = fixed_bits(dtype)
            if bits is None or bits % 8 or len(self.value) * 8 != bits:
                raise CorruptFileError(f"{where}: constant value of {len(self.value)} bytes for "
                                       f"a {dtype} column")

    def array(self, n: int) -> pa.Array:
        if self.value is None:
            return pa.nulls(n, self.dtype)
        data = np.tile(np.frombuffer(self.value, np.uint8), n)
        return to_arrow(self.dtype, FixedWidth(len(self.value) * 8, data, n), None)
