"""numpy dtypes of Arrow's fixed-width number types, without pandas.

``pyarrow.DataType.to_pandas_dtype()`` gives the same answer for these types, but some pyarrow
versions (16 among them) import pandas to ask its version first, so it fails where pandas
is not installed (pandas is no dependency of lancenb); this is the pandas-free equivalent.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["numpy_dtype"]


def numpy_dtype(t: pa.DataType) -> np.dtype:
    """The numpy dtype of an Arrow integer or floating-point type.

    Examples
    --------
    >>> numpy_dtype(pa.uint16())
    dtype('uint16')
    """
    if pa.types.is_integer(t):
        return np.dtype(f"{'i' if pa.types.is_signed_integer(t) else 'u'}{t.bit_width // 8}")
    if pa.types.is_floating(t):
        return np.dtype(f"f{t.bit_width // 8}")
    raise TypeError(f"{t} is not an integer or floating-point type")
