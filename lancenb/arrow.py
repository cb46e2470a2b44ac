"""Arrow extension types of pylance's ``lance.arrow``: bfloat16 and images.

**bfloat16** (extension ``lance.bfloat16`` over ``fixed_size_binary(2)``, the value's
two bytes little-endian: the upper half of a float32): :class:`BFloat16` (one value),
:class:`BFloat16Type`, :class:`BFloat16Array`, :func:`bfloat16_array`, :func:`cast`
(floats <-> bfloat16, also inside fixed-size lists) and, with pandas,
``PandasBFloat16Array`` (pandas dtype ``"lance.bfloat16"``). Floats are rounded as
pylance rounds them: to float32, then to the nearest bfloat16, ties to even. NumPy
interop (``to_numpy``/``from_numpy``) uses ``ml_dtypes``' ``bfloat16`` dtype when it is
installed.

**Images**: :class:`ImageURIType` (``lance.arrow.image_uri`` over strings),
:class:`EncodedImageType` (``lance.arrow.encoded_image`` over binary) and
:class:`FixedShapeImageTensorType` (``lance.arrow.fixed_shape_image_tensor``, a
fixed-size list with the shape in its metadata), and their arrays: URIs are read
(:meth:`ImageURIArray.read_uris`) through lancenb's I/O layer, decoded to tensors
(:meth:`EncodedImageArray.to_tensor`) and encoded back to PNG
(:meth:`FixedShapeImageTensorArray.to_encoded`) with Pillow unless a decoder/encoder is
given.

Examples
--------
>>> arr = bfloat16_array([1.1, None])
>>> arr.to_pylist()
[BFloat16(1.1015625), None]
>>> str(BFloat16(1.124565))
'1.125'
"""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb.errors import InvalidInputError

__all__ = ["BFloat16", "BFloat16Array", "BFloat16Type", "PandasBFloat16Array",
           "bfloat16_array", "cast", "EncodedImageType", "FixedShapeImageTensorType",
           "ImageArray", "ImageScalar", "ImageURIArray", "ImageURIType", "EncodedImageArray",
           "FixedShapeImageTensorArray"]


# -- bfloat16 bits ---------------------------------------------------------------------
def _to_bf16_bits(values: np.ndarray) -> np.ndarray:
    """Floats -> bfloat16 bit patterns (uint16): to float32, then to the nearest
    bfloat16, ties to even (pylance's rounding, bit for bit; a float64 exactly between
    two bfloat16 values only after its rounding to float32 goes to the even one)."""
    with np.errstate(over="ignore", invalid="ignore"):
        f = np.asarray(values, dtype=np.float64).astype(np.float32)
    bits = f.view(np.uint32)
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(f)
    rounded[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)  # a quiet NaN, sign kept
    return rounded


def _from_bf16_bits(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns -> float32 values (exact)."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def _float_text(v: float) -> str:
    # Rust's Display of the float32 value: shortest round-trip digits, no ".0"
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return np.format_float_positional(np.float32(v), unique=True, trim="-")


class BFloat16:
    """One bfloat16 value (pylance's ``lance.arrow.BFloat16``).

    Examples
    --------
    >>> BFloat16(1.1) > BFloat16(1.0), BFloat16(1.1).as_float()
    (True, 1.1015625)
    """

    __slots__ = ("_bits",)

    def __init__(self, value: float):
        self._bits = int(_to_bf16_bits(np.array([value]))[0])

    @classmethod
    def from_bytes(cls, data: bytes) -> "BFloat16":
        """The value of two little-endian bytes."""
        if len(data) != 2:
            raise InvalidInputError(f"a bfloat16 is 2 bytes, not {len(data)}")
        out = cls.__new__(cls)
        out._bits = int.from_bytes(data, "little")
        return out

    def to_bytes(self) -> bytes:
        """The value's two little-endian bytes."""
        return self._bits.to_bytes(2, "little")

    def as_float(self) -> float:
        """The value as a Python float (exact)."""
        return float(_from_bf16_bits(np.array([self._bits]))[0])

    def __float__(self) -> float:
        return self.as_float()

    def _other(self, other) -> float | None:
        if isinstance(other, BFloat16):
            return other.as_float()
        return None

    def __eq__(self, other) -> bool:
        o = self._other(other)
        return o is not None and self.as_float() == o

    def __ne__(self, other) -> bool:
        return not self == other

    def __lt__(self, other) -> bool:
        return self.as_float() < self._checked(other)

    def __le__(self, other) -> bool:
        return self.as_float() <= self._checked(other)

    def __gt__(self, other) -> bool:
        return self.as_float() > self._checked(other)

    def __ge__(self, other) -> bool:
        return self.as_float() >= self._checked(other)

    def _checked(self, other) -> float:
        o = self._other(other)
        if o is None:
            raise TypeError(f"cannot compare BFloat16 with {type(other).__name__}")
        return o

    def __hash__(self) -> int:
        return hash(self.as_float())

    def __str__(self) -> str:
        return _float_text(self.as_float())

    def __repr__(self) -> str:
        return f"BFloat16({self})"


def _ml_bfloat16():
    try:
        from ml_dtypes import bfloat16
    except ImportError as e:
        raise ImportError("bfloat16 NumPy arrays need ml_dtypes (pip install ml_dtypes)") \
            from e
    return bfloat16


class BFloat16Type(pa.ExtensionType):
    """The ``lance.bfloat16`` extension type (storage ``fixed_size_binary(2)``)."""

    def __init__(self):
        super().__init__(pa.binary(2), "lance.bfloat16")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized):
        return BFloat16Type()

    def __arrow_ext_class__(self):
        return BFloat16Array

    def __arrow_ext_scalar_class__(self):
        return BFloat16Scalar

    def to_pandas_dtype(self):
        if _PandasBFloat16Type is None:
            raise ImportError("pandas is not installed")
        return _PandasBFloat16Type()


class BFloat16Scalar(pa.ExtensionScalar):
    """One element of a :class:`BFloat16Array`."""

    def as_py(self, **kwargs) -> BFloat16 | None:
        return None if self.value is None else BFloat16.from_bytes(self.value.as_py())

    def __eq__(self, other) -> bool:
        mine = self.as_py()
        if isinstance(other, BFloat16Scalar):
            return mine == other.as_py()
        if isinstance(other, BFloat16):
            return mine == other
        if type(other).__name__ == "bfloat16":  # an ml_dtypes value
            return mine == BFloat16.from_bytes(other.tobytes())
        return False

    __hash__ = pa.ExtensionScalar.__hash__


class BFloat16Array(pa.ExtensionArray):
    """An array of bfloat16 values.

    Examples
    --------
    >>> print(bfloat16_array([1.0, 2.0]))
    [
      1,
      2
    ]
    """

    def __repr__(self) -> str:
        return f"<lance.arrow.BFloat16Array object at 0x{id(self):016x}>\n{self}"

    def __str__(self) -> str:
        items = [f"  {v}" for v in self]
        if len(items) >= 22:
            items = items[:10] + ["..."] + items[-10:]
        return "[\n" + ",\n".join(items) + "\n]"

    def _bits(self) -> np.ndarray:
        storage = self.storage
        data = storage.buffers()[1]
        return np.frombuffer(data, dtype="<u2", count=storage.offset + len(storage))[
            storage.offset:]

    def to_numpy(self, zero_copy_only: bool = False):
        """The values as an ``ml_dtypes.bfloat16`` NumPy array (no nulls allowed)."""
        if self.null_count:
            raise ValueError("Cannot convert null values to numpy")
        return self._bits().view(_ml_bfloat16())

    @classmethod
    def from_numpy(cls, array: np.ndarray) -> "BFloat16Array":
        """An array of a 1-D ``ml_dtypes.bfloat16`` NumPy array."""
        if array.dtype != _ml_bfloat16():
            raise ValueError("Cannot convert non-bfloat16 values to BFloat16Array")
        if array.ndim != 1:
            raise ValueError("Cannot convert multi-dimensional array to BFloat16Array")
        return _from_bits(np.ascontiguousarray(array).view(np.uint16), None)


def _from_bits(bits: np.ndarray, valid: np.ndarray | None) -> BFloat16Array:
    data = pa.py_buffer(np.ascontiguousarray(bits, dtype="<u2").tobytes())
    mask = None
    if valid is not None and not valid.all():
        mask = pa.array(valid, type=pa.bool_()).buffers()[1]
    storage = pa.Array.from_buffers(pa.binary(2), len(bits), [mask, data])
    return pa.ExtensionArray.from_storage(BFloat16Type(), storage)


def bfloat16_array(values: Iterable[float | None]) -> BFloat16Array:
    """A :class:`BFloat16Array` of floats (None for nulls), each rounded to the nearest
    bfloat16.

    Examples
    --------
    >>> bfloat16_array([0.5, None]).null_count
    1
    """
    values = list(values)
    valid = np.array([v is not None for v in values], dtype=bool)
    floats = np.array([0.0 if v is None else float(v) for v in values], dtype=np.float64)
    return _from_bits(_to_bf16_bits(floats), valid)


def cast(arr: pa.Array, target_type, *args, **kwargs) -> pa.Array:
    """``pyarrow.compute.cast`` that also casts floats to and from bfloat16
    (``"bfloat16"``, ``"bf16"`` or :class:`BFloat16Type`), including fixed-size lists
    of them (same list size).

    Examples
    --------
    >>> cast(pa.array([1.5]), "bfloat16")[0].as_py()
    BFloat16(1.5)
    """
    to_bf16 = isinstance(target_type, BFloat16Type) or target_type in ("bfloat16", "bf16")
    if isinstance(arr.type, BFloat16Type):
        if not pa.types.is_floating(target_type):
            raise ValueError(f"Only support casting bfloat16 array to floating array, got: "
                             f"{target_type}")
        floats = pa.array(_from_bf16_bits(arr._bits()),
                          mask=arr.is_null().to_numpy(zero_copy_only=False)
                          if arr.null_count else None)
        return pc.cast(floats, target_type)
    if to_bf16:
        if not pa.types.is_floating(arr.type):
            raise ValueError(f"Only support casting floating array to bfloat16 array, got: "
                             f"{arr.type}")
        floats = pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False)  # nulls: NaN
        valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None
        return _from_bits(_to_bf16_bits(floats), valid)
    if pa.types.is_fixed_size_list(arr.type) and pa.types.is_fixed_size_list(target_type):
        if arr.type.list_size != target_type.list_size:
            raise ValueError(f"Only support casting fixed size list to fixed size list with "
                             f"the same size, got: {arr.type} to {target_type}")
        values = cast(arr.values, target_type.value_type)
        return pa.FixedSizeListArray.from_arrays(values, target_type.list_size)
    return pc.cast(arr, target_type, *args, **kwargs)


# -- pandas ----------------------------------------------------------------------------
try:
    from pandas.api.extensions import ExtensionArray as _PdArray
    from pandas.api.extensions import ExtensionDtype as _PdDtype
    from pandas.api.extensions import register_extension_dtype as _register_pd
except ImportError:  # pragma: no cover - pandas is optional
    _PandasBFloat16Type = PandasBFloat16Array = None
else:
    class _PandasBFloat16Type(_PdDtype):
        """The pandas dtype ``"lance.bfloat16"``: values are :class:`BFloat16`."""

        kind = "f"
        na_value = None
        name = "lance.bfloat16"
        type = BFloat16
        _is_numeric = True

        def __from_arrow__(self, array):
            if isinstance(array, pa.ChunkedArray):
                array = pa.concat_arrays(array.chunks) if array.num_chunks else \
                    bfloat16_array([])
            return PandasBFloat16Array(array)

        @classmethod
        def construct_array_type(cls):
            return PandasBFloat16Array

        @classmethod
        def construct_from_string(cls, string):
            if string == "lance.bfloat16":
                return cls()
            raise TypeError(f"Cannot construct a '{cls.__name__}' from '{string}'")

    class PandasBFloat16Array(_PdArray):
        """A pandas extension array of bfloat16 values over a :class:`BFloat16Array`."""

        dtype = _PandasBFloat16Type()

        def __init__(self, data: BFloat16Array):
            self.data = data

        @classmethod
        def _from_sequence(cls, scalars, *, dtype=None, copy: bool = False):
            if isinstance(scalars, PandasBFloat16Array):
                return cls(scalars.data)
            return cls(bfloat16_array(None if s is None else float(s) for s in scalars))

        @classmethod
        def _from_factorized(cls, values, original):
            return cls._from_sequence(values)

        def __getitem__(self, item):
            if isinstance(item, (int, np.integer)):
                return self.data[int(item)].as_py()
            if isinstance(item, slice):
                return PandasBFloat16Array(self.data[item])
            idx = np.asarray(item)
            if idx.dtype == np.bool_:
                return PandasBFloat16Array(self.data.filter(pa.array(idx)))
            return PandasBFloat16Array(self.data.take(pa.array(idx)))

        def __len__(self) -> int:
            return len(self.data)

        def __eq__(self, other):
            other = other.data if isinstance(other, PandasBFloat16Array) else other
            return np.array([a == b for a, b in zip(self.data.to_pylist(), other)])

        @property
        def nbytes(self) -> int:
            return self.data.nbytes

        def isna(self):
            return self.data.is_null().to_numpy(zero_copy_only=False)

        def take(self, indices, allow_fill: bool = False, fill_value=None):
            idx = np.asarray(indices, dtype=np.int64)
            if allow_fill:
                mask = idx < 0
                taken = self.data.take(pa.array(np.where(mask, 0, idx), mask=mask))
                return PandasBFloat16Array(taken)
            return PandasBFloat16Array(self.data.take(pa.array(idx % max(1, len(self)))))

        def copy(self):
            return PandasBFloat16Array(self.data)

        @classmethod
        def _concat_same_type(cls, to_concat):
            return cls(pa.concat_arrays([a.data for a in to_concat]))

        def to_numpy(self, *args, **kwargs):
            return self.data.to_numpy()

        def __arrow_array__(self, type=None):
            return self.data

        @classmethod
        def from_numpy(cls, array: np.ndarray) -> "PandasBFloat16Array":
            """An array of a 1-D ``ml_dtypes.bfloat16`` NumPy array."""
            return cls(BFloat16Array.from_numpy(array))

    _register_pd(_PandasBFloat16Type)


# -- images ----------------------------------------------------------------------------
from lancenb._arrow.images import (  # noqa: E402 (the bfloat16 part first)
    EncodedImageArray,
    EncodedImageType,
    FixedShapeImageTensorArray,
    FixedShapeImageTensorType,
    ImageArray,
    ImageScalar,
    ImageURIArray,
    ImageURIType,
)


def _register(ext: pa.ExtensionType) -> None:
    try:
        pa.register_extension_type(ext)
    except pa.ArrowKeyError:  # already registered (by pylance, in the same process)
        pass


for _ext in (BFloat16Type(), ImageURIType(), EncodedImageType(),
             FixedShapeImageTensorType(pa.uint8(), (0,))):
    _register(_ext)
