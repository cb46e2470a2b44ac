"""Pure-Python references shared by the JSON tests: a double's bits, and serde_json's
text for a double (what pylance returns for a JSON number stored as a double): the
shortest round-trip digits (``repr``'s) laid out in plain notation for a decimal
exponent ``x`` in ``-5 <= x < 16`` (``.0`` after whole numbers), else ``d.ddde+x`` /
``d.ddde-x``, and ``null`` for NaN and the infinities."""

import math
import struct


def bits_of(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def float_of(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def ref_double_text(x: float) -> str:
    """serde_json's text for ``x``: the digits of ``repr(x)`` re-laid out."""
    if math.isnan(x) or math.isinf(x):
        return "null"
    if x == 0:
        return "-0.0" if math.copysign(1, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    mant, _, exp = repr(abs(x)).partition("e")
    whole, _, frac = mant.partition(".")
    digits = (whole + frac).lstrip("0")
    x10 = len(whole) - 1 - (len(whole + frac) - len((whole + frac).lstrip("0"))) \
        + int(exp or 0)
    digits = digits.rstrip("0")
    n = len(digits)
    if -5 <= x10 < 16:
        if x10 >= n - 1:
            text = digits + "0" * (x10 - n + 1) + ".0"
        elif x10 >= 0:
            text = digits[:x10 + 1] + "." + digits[x10 + 1:]
        else:
            text = "0." + "0" * (-x10 - 1) + digits
    else:
        text = digits[0] + ("." + digits[1:] if n > 1 else "") + "e" \
            + ("-" if x10 < 0 else "+") + str(abs(x10))
    return sign + text
