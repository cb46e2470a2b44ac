"""Arrow batches to torch tensors, without copies where the layout allows.

A numeric column without nulls, or a fixed-size list (vector) or fixed-shape tensor of
numbers without nulls, becomes a tensor over the Arrow buffer itself
(``np.frombuffer`` + ``torch.from_numpy``): ``[n]`` for a column, ``[n, dim]`` for a
vector, ``[n, *shape]`` for a fixed-shape tensor. Booleans (bit-packed in Arrow),
columns with nulls (NaN for floats, as pylance) and bfloat16 vectors with nulls are
copied. ``uint64`` (row ids) is viewed as ``int64``. Binary and string columns (images,
blobs) come out as Python lists of ``bytes`` / ``str``; :class:`lancenb.BlobFile` values
are read into ``bytes``.

The buffers a scan returns are the batch's own (decoded for it), so writing into such
a tensor changes that batch only; Arrow marks them read-only, which torch would warn
about on every batch, so the warning is silenced here.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pyarrow as pa
import torch

from lancenb.encodings.nptypes import numpy_dtype
from lancenb.errors import InvalidInputError

__all__ = ["to_tensor", "array_to_tensor"]

BF16_EXTENSION = "lance.bfloat16"


def _from_numpy(arr: np.ndarray) -> torch.Tensor:
    if arr.flags.writeable:
        return torch.from_numpy(arr)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(arr)


def _is_bf16(t: pa.DataType) -> bool:
    return isinstance(t, pa.ExtensionType) and t.extension_name == BF16_EXTENSION


def _is_number(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t)


def _flat_values(arr: pa.Array, start: int, count: int, uint64_as_int64: bool
                 ) -> torch.Tensor:
    """``count`` values of the primitive ``arr`` from ``start`` (of its logical
    positions), as a 1-D tensor (zero-copy when there are no nulls)."""
    if _is_bf16(arr.type):
        storage = arr.storage
        bits = np.frombuffer(storage.buffers()[1], dtype=np.uint16, count=count,
                             offset=(storage.offset + start) * 2)
        if storage.null_count:
            bits = bits.copy()
            valid = storage.slice(start, count).is_valid().to_numpy(zero_copy_only=False)
            bits[~valid] = 0x7FC0  # bfloat16 NaN
        return _from_numpy(bits).view(torch.bfloat16)
    t = arr.type
    if pa.types.is_boolean(t) or arr.null_count:
        values = arr.slice(start, count).to_numpy(zero_copy_only=False)
        tensor = _from_numpy(np.ascontiguousarray(values))
    else:
        dtype = numpy_dtype(t)
        tensor = _from_numpy(np.frombuffer(arr.buffers()[1], dtype=dtype, count=count,
                                           offset=(arr.offset + start) * dtype.itemsize))
    if uint64_as_int64 and tensor.dtype == torch.uint64:
        tensor = tensor.view(torch.int64)
    return tensor


def array_to_tensor(arr, *, uint64_as_int64: bool = True, name: str = "column"):
    """One column (``pa.Array`` or ``pa.ChunkedArray``) as a tensor, or a list of
    ``bytes``/``str`` for binary and string columns.

    Examples
    --------
    >>> array_to_tensor(pa.array([1, 2, 3])).tolist()  # doctest: +SKIP
    [1, 2, 3]
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if isinstance(arr, list):
        return [_blob_bytes(v) for v in arr]
    t = arr.type
    shape: tuple[int, ...] = ()
    if isinstance(t, pa.FixedShapeTensorType):
        shape = tuple(t.shape)
        arr, t = arr.storage, arr.storage.type
    if pa.types.is_fixed_size_list(t) and (_is_number(t.value_type) or _is_bf16(t.value_type)
                                           or pa.types.is_boolean(t.value_type)):
        dim = t.list_size
        if arr.null_count:
            # null vectors: their slots in the values are undefined; NaN (floats) as pylance
            arr = _fill_null_vectors(arr)
        values = _flat_values(arr.values, arr.offset * dim, len(arr) * dim, uint64_as_int64)
        return values.reshape((len(arr),) + (shape or (dim,)))
    if _is_number(t) or pa.types.is_boolean(t) or _is_bf16(t):
        return _flat_values(arr, 0, len(arr), uint64_as_int64)
    if (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_string(t)
            or pa.types.is_large_string(t) or pa.types.is_fixed_size_binary(t)
            or pa.types.is_binary_view(t) or pa.types.is_string_view(t)):
        return arr.to_pylist()
    raise InvalidInputError(f"cannot make a tensor of column {name!r} of type {t}: numbers, "
                            f"bfloat16, booleans, fixed-size lists of those, fixed-shape "
                            f"tensors, binary and strings are supported (pass to_tensor_fn "
                            f"for others)")


def _fill_null_vectors(arr: pa.FixedSizeListArray) -> pa.FixedSizeListArray:
    dim = arr.type.list_size
    values = arr.flatten().to_numpy(zero_copy_only=False)  # flatten() drops null entries
    out = np.full((len(arr), dim), np.nan if pa.types.is_floating(arr.type.value_type) else 0,
                  dtype=values.dtype if values.dtype != object else np.float64)
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    out[valid] = values.reshape(-1, dim)
    return pa.FixedSizeListArray.from_arrays(pa.array(out.reshape(-1)), dim)


def _blob_bytes(value) -> Any:
    if value is None or isinstance(value, (bytes, str)):
        return value
    if hasattr(value, "readall"):
        return value.readall()
    if hasattr(value, "read"):
        return value.read()
    raise InvalidInputError(f"cannot read {type(value).__name__} values as bytes")


def to_tensor(batch, *, uint64_as_int64: bool = True, hf_converter=None,
              use_blob_api: bool = False, **kwargs):
    """A ``pa.RecordBatch`` (or a dict of column -> array / list of blobs) as a dict of
    tensors, or the one tensor when the batch has one column (pylance's ``_to_tensor``).

    Examples
    --------
    >>> to_tensor(pa.record_batch({"a": [1, 2]}))  # doctest: +SKIP
    tensor([1, 2])
    """
    if isinstance(batch, (pa.RecordBatch, pa.Table)):
        items = [(name, batch.column(i)) for i, name in enumerate(batch.column_names)]
    else:
        items = list(batch.items())
    out = {}
    for name, col in items:
        if hf_converter is not None and not isinstance(col, list):
            try:
                out[name] = array_to_tensor(col, uint64_as_int64=uint64_as_int64, name=name)
            except InvalidInputError:
                out[name] = hf_converter.to_pytorch(name, col)
            continue
        out[name] = array_to_tensor(col, uint64_as_int64=uint64_as_int64, name=name)
    if len(out) == 1:
        return next(iter(out.values()))
    return out
