"""pylance's order of floating point values, for filters and sorting.

pylance (DataFusion over arrow-rs) compares floats by IEEE 754 ``totalOrder``:

    -NaN (largest payload first) < ... < -NaN (0xfff8...) < -sNaN < -inf < ... < -0.0
    < +0.0 < ... < +inf < +sNaN < NaN (0x7ff8...) < ... < NaN (largest payload)

so ``x > 0`` is true of every NaN whose sign bit is clear and ``x < 0`` of every NaN
whose sign bit is set; two NaNs are equal only when their bits are. One exception,
measured against pylance 14: a comparison with a *literal* (``x < 0.0``, ``x * 2 =
-0.0``, ``x BETWEEN -0.0 AND 0.0``) holds ``-0.0`` and ``+0.0`` equal, while a
comparison of two columns (``x < y``) and ``order_by`` keep ``-0.0 < +0.0``. Values of
different widths compare after widening bit for bit (NaN payloads kept, the quiet bit
set); float16 values compare as float32 in filters but sort by their own bits.

The order is that of an integer key made from the value's bits: for ``float64`` with
bits ``b`` read as int64, ``b ^ ((b >> 63) & 0x7fff_ffff_ffff_ffff)`` (negative values
have their magnitude bits flipped, so larger magnitudes sort lower); ``float32`` and
``float16`` the same with their own widths, widened to int64. Example: ``-1.0`` is
``0xbff0...`` (int64 ``-4616189618054758400``), its key ``-4607182418800017409``, below
the key of ``-0.0`` (``-1``) and of ``+0.0`` (``0``); with zeros held equal ``-0.0`` keys
as ``0``.

:func:`order_key` is an Arrow compute function over arrays (registered once per process
under :data:`KEY_FUNCTION` names, so ``pyarrow.compute`` expressions and Acero plans
can call it); :func:`key_array` is its array form and :func:`key_scalar` its literal form.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancenb.io.pools import module_lock

__all__ = ["order_key", "key_array", "key_scalar", "KEY_FUNCTION"]

_INT = {16: np.int16, 32: np.int32, 64: np.int64}
#: registered compute function names: ``(bit width, compared as width, zeros equal)``
#: -> name
KEY_FUNCTION = {(w, a, z): f"lancenb_float{w}_as{a}_order_key{'_zeq' if z else ''}"
                for w in _INT for a in _INT if a >= w for z in (False, True)}
_LOCK = module_lock(globals(), "_LOCK")  # (a fresh one in a forked child)
_REGISTERED: set = set()


def _keys(bits: np.ndarray, width: int, zeros_equal: bool) -> np.ndarray:
    """int64 keys of float bit patterns (``bits``: signed integers of ``width`` bits)."""
    b = bits.astype(np.int64)  # (sign-extended: the same rule at every width)
    mask = np.int64((1 << (width - 1)) - 1)
    key = b ^ ((b >> 63) & mask)
    if zeros_equal:
        key[key == -1] = 0  # -0.0's key is -1 at every width
    return key


def _widen(bits: np.ndarray, width: int, to: int) -> np.ndarray:
    """Float bits of ``width`` as the bits of the same values at the wider ``to``, as
    pylance widens them (Rust's ``as`` and the ``half`` crate): NaNs keep their sign
    and payload, with the quiet bit set (Arrow C++'s float16 cast loses both)."""
    if width == to:
        return bits
    if width == 16:
        h = bits.view(np.uint16).astype(np.uint32)
        nan = ((h & 0x7C00) == 0x7C00) & ((h & 0x03FF) != 0)
        with np.errstate(invalid="ignore"):
            f = bits.view(np.float16).astype(np.float32).view(np.uint32)  # exact elsewhere
        f = np.where(nan, ((h & 0x8000) << 16) | 0x7FC00000 | ((h & 0x03FF) << 13), f)
        bits, width = f.astype(np.uint32).view(np.int32), 32
        if to == 32:
            return bits
    # float32 -> float64: the hardware conversion, as Rust's (payload kept, quieted)
    with np.errstate(invalid="ignore"):  # (a signalling NaN raises the flag)
        return bits.view(np.float32).astype(np.float64).view(np.int64)


def key_array(arr: pa.Array, zeros_equal: bool = False, as_width: int | None = None
              ) -> pa.Array:
    """The int64 order keys of a float16/32/64 array (its values widened to
    ``as_width`` bits first, when given); nulls stay null.

    Examples
    --------
    >>> key_array(pa.array([-0.0, 0.0, None])).to_pylist()
    [-1, 0, None]
    >>> key_array(pa.array([-0.0, 0.0]), zeros_equal=True).to_pylist()
    [0, 0]
    """
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([key_array(c, zeros_equal, as_width) for c in arr.chunks],
                                pa.int64())
    width = arr.type.bit_width
    to = as_width or width
    n = len(arr)
    buf = arr.buffers()[1]
    bits = (np.frombuffer(buf, _INT[width], count=n, offset=arr.offset * width // 8)
            if n else np.zeros(0, _INT[width]))
    key = _keys(_widen(bits, width, to), to, zeros_equal)
    mask = None if not arr.null_count else np.asarray(arr.is_null())
    return pa.array(key, pa.int64(), mask=mask)


def key_scalar(value: pa.Scalar, zeros_equal: bool = False, as_width: int | None = None
               ) -> pa.Scalar:
    """:func:`key_array` of one float scalar (a null scalar gives a null int64)."""
    if not value.is_valid:
        return pa.scalar(None, pa.int64())
    return key_array(pa.repeat(value, 1), zeros_equal, as_width)[0]  # (bits, not as_py)


def _register(width: int, as_width: int, zeros_equal: bool) -> str:
    name = KEY_FUNCTION[(width, as_width, zeros_equal)]
    if name in _REGISTERED:
        return name
    with _LOCK:
        if name not in _REGISTERED:
            typ = {16: pa.float16(), 32: pa.float32(), 64: pa.float64()}[width]

            def udf(ctx, x):
                if isinstance(x, pa.Scalar):
                    return key_scalar(x, zeros_equal, as_width)
                return key_array(x, zeros_equal, as_width)

            try:
                pc.register_scalar_function(
                    udf, name, {"summary": "total order key of floats",
                                "description": "see lancenb.expr.floatorder"},
                    {"x": typ}, pa.int64())
            except pa.ArrowKeyError:
                pass  # (registered already in this process, e.g. by a reload)
            _REGISTERED.add(name)
    return name


def order_key(expr: pc.Expression, typ: pa.DataType, zeros_equal: bool,
              as_type: pa.DataType | None = None) -> pc.Expression:
    """The expression of the int64 order keys of ``expr`` (of float type ``typ``),
    its values widened to the float type ``as_type`` first when given."""
    width = typ.bit_width
    as_width = as_type.bit_width if as_type is not None else width
    return pc.Expression._call(_register(width, as_width, zeros_equal), [expr])
