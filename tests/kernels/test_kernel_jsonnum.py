"""JSON numbers (``kernels/json/jsonnum.py``) against Python's own conversions: ``repr`` (the
shortest round-trip digits, as Ryu finds them) laid out as serde_json prints an f64,
and ``float()`` (correctly rounded) for text to doubles.

The layout of serde_json 1.0.151 (what pylance returns) was read off pylance's output:
plain notation for a decimal exponent ``x`` in ``-5 <= x < 16`` (``.0`` after whole
numbers), else ``d.ddde+x`` / ``d.ddde-x``.
"""

import math

import numpy as np
import pytest
from _jsonref import bits_of, float_of, ref_double_text
from hypothesis import example, given
from hypothesis import strategies as st
from lancenb.kernels.json import jsonnum as kn


def ref_shortest(x: float) -> tuple[int, int]:
    """``(digits, exponent)`` of ``repr(abs(x))`` without trailing zeros."""
    mant, _, exp = repr(abs(x)).partition("e")
    whole, _, frac = mant.partition(".")
    d = int(whole + frac)
    e = int(exp or 0) - len(frac)
    while d % 10 == 0:
        d //= 10
        e += 1
    return d, e


# -- doubles to text ----------------------------------------------------------------------

def _text(bits: int) -> str:
    out = np.zeros(32, np.uint8)
    n = kn.double_text(np.uint64(bits), out, np.zeros(20, np.uint8))
    return out[:n].tobytes().decode()


# what pylance returned for these (tests/compat/test_json_interop.py checks more)
PYLANCE = {0.1: "0.1", 1e300: "1e+300", 1.5: "1.5", -0.0: "-0.0", 1.0: "1.0",
           1.2345678901234568e+22: "1.2345678901234568e+22", 300.0: "300.0",
           1e15: "1000000000000000.0", 1e16: "1e+16", 1e-5: "0.00001", 1e-6: "1e-6",
           5e-324: "5e-324", 1.7976931348623157e308: "1.7976931348623157e+308",
           -9.223372036854776e+18: "-9.223372036854776e+18", 0.0001: "0.0001",
           123456.789: "123456.789", 0.30000000000000004: "0.30000000000000004"}


@pytest.mark.parametrize("x", sorted(PYLANCE))
def test_double_text_as_pylance(x):
    assert _text(bits_of(x)) == PYLANCE[x] == ref_double_text(x)


def test_double_text_non_finite_is_null():
    for x in (math.inf, -math.inf, math.nan):
        assert _text(bits_of(x)) == "null"
    assert _text(0x7FF0000000000001) == "null"  # a NaN payload


@given(st.integers(0, 2**64 - 1))
@example(1)  # the least subnormal
@example(bits_of(2.2250738585072014e-308))
@example(bits_of(9007199254740993.0))
@example(0x7FEFFFFFFFFFFFFF)
@example(bits_of(2.0 ** -1074 * 3))
def test_double_text_any_bits(bits):
    x = float_of(bits)
    assert _text(bits) == ref_double_text(x)
    if math.isfinite(x) and x != 0:
        d, e = kn.shortest(np.uint64(bits))
        assert (int(d), int(e)) == ref_shortest(x)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_double_text_reads_back(x):
    assert float(_text(bits_of(x))) == x


@given(st.integers(-2**63, 2**63 - 1))
@example(-2**63)
def test_int_text(v):
    out = np.zeros(20, np.uint8)
    assert out[:kn.int_text(np.int64(v), out)].tobytes() == str(v).encode()
    if v >= 0:
        u = v * 2 + 1
        assert out[:kn.uint_text(np.uint64(u), out)].tobytes() == str(u).encode()


# -- text to doubles ----------------------------------------------------------------------

number_text = st.from_regex(r"\A-?(0|[1-9][0-9]{0,30})(\.[0-9]{1,30})?([eE][+-]?[0-9]{1,3})?\Z")


def _parse(text: str):
    data = np.frombuffer(text.encode(), np.uint8)
    ok, bits = kn.decimal_to_double(data, 0, len(data))
    return bool(ok), int(bits)


HARD = ["2.2250738585072011e-308", "2.2250738585072012e-308", "4.9406564584124654e-324",
        "2.4703282292062327e-324", "2.4703282292062328e-324", "1.7976931348623157e308",
        "1.7976931348623158e308", "1.7976931348623159e308", "9007199254740993",
        "9007199254740993.0000000000000001", "7.2057594037927933e16", "1e400", "-1e400",
        "1e-400", "-0.0", "0e10", "1" + "0" * 400, "0." + "0" * 400 + "1",
        "1.00000000000000011102230246251565404236316680908203125",
        "1.00000000000000011102230246251565404236316680908203124",
        "1.00000000000000011102230246251565404236316680908203126",
        "123456789012345678901234567890", "1e99999999999999999999", "0.1", "1e23",
        "8.98846567431158e307", "4.4501477170144023e-308", "3e-324", "2e-324"]


@pytest.mark.parametrize("text", HARD)
def test_decimal_to_double_hard_cases(text):
    ok, bits = _parse(text)
    if ok:  # undecided is allowed only past 19 significant digits
        assert bits == bits_of(float(text))
    else:
        assert len(text.replace(".", "").replace("-", "").lstrip("0")) > 19


@given(number_text)
@example("0.30000000000000004")
@example("179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497791")
def test_decimal_to_double(text):
    ok, bits = _parse(text)
    if ok:
        assert bits == bits_of(float(text))
    else:
        assert sum(c.isdigit() for c in text.partition("e")[0].lstrip("-0.")) > 19


@given(st.integers(1, 10**19 - 1), st.integers(-400, 400))
def test_compute_float(w, q):
    got = int(kn.compute_float(np.int64(q), np.uint64(w)))
    want = float(f"{w}e{q}")
    assert got == bits_of(want)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_repr_parses_back(x):
    assert _parse(repr(x)) == (True, bits_of(x))


@given(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
def test_mul128(a, b):
    hi, lo = kn.mul128(np.uint64(a), np.uint64(b))
    assert (int(hi) << 64) | int(lo) == a * b
