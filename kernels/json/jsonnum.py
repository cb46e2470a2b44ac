"""Numbers of JSON text, as pylance writes and reads them in JSON columns.

Doubles to text (:func:`double_text`): the shortest decimal that reads back as the
same double (Ryu: Ulf Adams, "Ryu: fast float-to-string conversion", PLDI 2018), laid
out as serde_json 1.0.151 prints an ``f64``: plain notation while the decimal exponent
``x`` of ``d.ddd * 10**x`` is in ``-5 <= x < 16``, with ``.0`` after a whole number;
scientific notation otherwise, with a sign on the exponent and no padding; ``null`` for
NaN and the infinities. Examples: ``1.0``, ``0.1``, ``-0.0``, ``123456.789``,
``1000000000000000.0``, ``1e+16``, ``1.5e+300``, ``0.00001``, ``1e-6``, ``5e-324``.

Text to doubles (:func:`decimal_to_double`): correctly rounded (round half to even),
by the Eisel-Lemire algorithm as fast_float implements it (Daniel Lemire, "Number
Parsing at a Gigabyte per Second", 2021; Mushtak and Lemire, "Fast Number Parsing
Without Fallback", 2023): the first 19 significant digits ``w`` and the exponent ``q``
of ``w * 10**q`` times a 128-bit approximation of ``5**q``. With more than 19 digits the
answers for ``w`` and ``w + 1`` are compared; when they differ the kernel cannot tell
and says so (``ok`` false), and the caller converts that number another way.

Integers print as they are (``-5``, ``18446744073709551615``).

Everything works on ``uint64`` bit patterns: a double's bits in, its bits out. Module
constants are ``np.uint64`` because numba turns ``uint64 op int64`` into a float, and
no operation overflows, so the kernels also run as plain Python (``NUMBA_DISABLE_JIT``)
without numpy's overflow warnings.
"""

import numpy as np

from .._jit import kernel

U0 = np.uint64(0)
U1 = np.uint64(1)
_U2 = np.uint64(2)
_U3 = np.uint64(3)
_U4 = np.uint64(4)
_U5 = np.uint64(5)
_U10 = np.uint64(10)
_U32 = np.uint64(32)
_U52 = np.uint64(52)
_U63 = np.uint64(63)
_U64 = np.uint64(64)
_U100 = np.uint64(100)
_M32 = np.uint64(0xFFFFFFFF)
_MAX = np.uint64(0xFFFFFFFFFFFFFFFF)
_X1FF = np.uint64(0x1FF)
_X7FF = np.uint64(0x7FF)
MANTISSA = np.uint64((1 << 52) - 1)
HIDDEN = np.uint64(1 << 52)
SIGN = np.uint64(1 << 63)
INF_BITS = np.uint64(0x7FF << 52)
_TWO_HIDDEN = np.uint64(2 << 52)
_NINETEEN = np.uint64(10 ** 18)  # the least 19-digit number
_HIGH32 = np.uint64(0xFFFFFFFF00000000)

# Ryu's tables: 5**i as its top 125 bits, and 2**(bits(5**i) - 1 + 125) // 5**i + 1
# (columns: low and high 64 bits)
POW5_BITS = 125
_POW5 = np.zeros((326, 2), np.uint64)
_POW5_INV = np.zeros((342, 2), np.uint64)
for _i in range(342):
    _p = 5 ** _i
    if _i < 326:
        _j = _p.bit_length() - POW5_BITS
        _v = _p >> _j if _j >= 0 else _p << -_j
        _POW5[_i] = (_v & 0xFFFFFFFFFFFFFFFF, _v >> 64)
    _v = (1 << (_p.bit_length() - 1 + POW5_BITS)) // _p + 1
    _POW5_INV[_i] = (_v & 0xFFFFFFFFFFFFFFFF, _v >> 64)

# Eisel-Lemire's table: 5**q for q in [-342, 308] normalised to 128 bits with the top
# bit set, truncated for q >= 0 and rounded up for q < 0 (fast_float's; columns: high
# and low 64 bits)
SMALLEST_POWER = -342
LARGEST_POWER = 308
_POW5_128 = np.zeros((LARGEST_POWER - SMALLEST_POWER + 1, 2), np.uint64)
for _q in range(SMALLEST_POWER, LARGEST_POWER + 1):
    if _q >= 0:
        _v = 5 ** _q
        _v = _v << (128 - _v.bit_length()) if _v.bit_length() < 128 else \
            _v >> (_v.bit_length() - 128)
    else:
        _p = 5 ** -_q
        _z = (_p - 1).bit_length()  # the least z with 2**z >= 5**-q
        if _q >= -27:
            _v = (1 << (_z + 127)) // _p + 1
        else:
            _v = (1 << (2 * _z + 128)) // _p + 1
            _v >>= max(0, _v.bit_length() - 128)
    _POW5_128[_q - SMALLEST_POWER] = (_v >> 64, _v & 0xFFFFFFFFFFFFFFFF)
del _i, _p, _j, _v, _q, _z


# -- 128-bit arithmetic ------------------------------------------------------------------

@kernel
def mul128(a, b):
    """``(high, low)``: the 128-bit product of two uint64."""
    a0 = a & _M32
    a1 = a >> _U32
    b0 = b & _M32
    b1 = b >> _U32
    p00 = a0 * b0
    p01 = a0 * b1
    p10 = a1 * b0
    mid = (p00 >> _U32) + (p01 & _M32) + (p10 & _M32)
    return (a1 * b1 + (p01 >> _U32) + (p10 >> _U32) + (mid >> _U32),
            (p00 & _M32) | ((mid & _M32) << _U32))


@kernel
def _mul_shift(m, lo, hi, j):
    """``(m * (hi:lo)) >> j`` for ``115 <= j < 128`` (the result fits 64 bits)."""
    h0, _ = mul128(m, lo)
    h2, l2 = mul128(m, hi)
    if l2 > _MAX - h0:  # carry
        l2 = h0 - (_MAX - l2) - U1
        h2 += U1
    else:
        l2 += h0
    s = np.uint64(j - 64)
    return (h2 << (_U64 - s)) | (l2 >> s)


@kernel
def _pow5bits(e):
    return ((e * 1217359) >> 19) + 1


@kernel
def _pow5_factor(v):
    n = 0
    while v % _U5 == U0:
        v //= _U5
        n += 1
    return n


# -- doubles to text ---------------------------------------------------------------------

@kernel
def shortest(bits):
    """``(digits, exponent)``: the shortest ``digits * 10**exponent`` that reads back
    as the finite, nonzero double with bit pattern ``bits`` (sign ignored), the one
    nearest to it when there are several (Ryu's ``d2d``)."""
    ieee_m = bits & MANTISSA
    ieee_e = np.int64((bits >> _U52) & _X7FF)
    if ieee_e == 0:
        e2 = 1 - 1023 - 52 - 2
        m2 = ieee_m
    else:
        e2 = ieee_e - 1023 - 52 - 2
        m2 = ieee_m | HIDDEN
    even = (m2 & U1) == U0
    mv = _U4 * m2
    mm_shift = U1 if (ieee_m != U0 or ieee_e <= 1) else U0
    vm_zeros = False
    vr_zeros = False
    if e2 >= 0:
        q = ((e2 * 78913) >> 18) - (1 if e2 > 3 else 0)  # log10(2**e2), less one
        e10 = q
        j = -e2 + q + POW5_BITS + _pow5bits(q) - 1
        lo = _POW5_INV[q, 0]
        hi = _POW5_INV[q, 1]
        vr = _mul_shift(mv, lo, hi, j)
        vp = _mul_shift(mv + _U2, lo, hi, j)
        vm = _mul_shift(mv - U1 - mm_shift, lo, hi, j)
        if q <= 21:  # may the exact values end in q zeros?
            if mv % _U5 == U0:
                vr_zeros = _pow5_factor(mv) >= q
            elif even:
                vm_zeros = _pow5_factor(mv - U1 - mm_shift) >= q
            elif _pow5_factor(mv + _U2) >= q:
                vp -= U1
    else:
        q = ((-e2 * 732923) >> 20) - (1 if -e2 > 1 else 0)  # log10(5**-e2), less one
        e10 = q + e2
        i = -e2 - q
        j = q - (_pow5bits(i) - POW5_BITS)
        lo = _POW5[i, 0]
        hi = _POW5[i, 1]
        vr = _mul_shift(mv, lo, hi, j)
        vp = _mul_shift(mv + _U2, lo, hi, j)
        vm = _mul_shift(mv - U1 - mm_shift, lo, hi, j)
        if q <= 1:
            vr_zeros = True
            if even:
                vm_zeros = mm_shift == U1
            else:
                vp -= U1
        elif q < 63:
            vr_zeros = (mv & ((U1 << np.uint64(q)) - U1)) == U0
    removed = 0
    last = U0
    if vm_zeros or vr_zeros:  # the general case: trailing zeros matter for rounding
        while vp // _U10 > vm // _U10:
            vm_zeros = vm_zeros and vm % _U10 == U0
            vr_zeros = vr_zeros and last == U0
            last = vr % _U10
            vr //= _U10
            vp //= _U10
            vm //= _U10
            removed += 1
        if vm_zeros:
            while vm % _U10 == U0:
                vr_zeros = vr_zeros and last == U0
                last = vr % _U10
                vr //= _U10
                vp //= _U10
                vm //= _U10
                removed += 1
        if vr_zeros and last == _U5 and vr % _U2 == U0:
            last = _U4  # exactly halfway: round to even
        up = (vr == vm and (not even or not vm_zeros)) or last >= _U5
    else:  # the common case
        up = False
        if vp // _U100 > vm // _U100:
            up = vr % _U100 >= np.uint64(50)
            vr //= _U100
            vp //= _U100
            vm //= _U100
            removed += 2
        while vp // _U10 > vm // _U10:
            up = vr % _U10 >= _U5
            vr //= _U10
            vp //= _U10
            vm //= _U10
            removed += 1
        up = up or vr == vm
    return vr + (U1 if up else U0), e10 + removed


_POW10 = np.array([10 ** k for k in range(20)], np.uint64)


@kernel(inline=True)
def _digits(v, out, p):
    """The decimal digits of uint64 ``v`` at ``out[p]``; returns their count."""
    n = 1
    while n < 20 and v >= _POW10[n]:
        n += 1
    for k in range(p + n - 1, p - 1, -1):
        q = v // _U10
        out[k] = np.uint8(48 + np.int64(v - q * _U10))
        v = q
    return n


@kernel(inline=True)
def _move(src, s, dst, d, n):
    """``dst[d:d+n] = src[s:s+n]``, a byte at a time (a few bytes: cheaper than a
    slice copy in numba)."""
    for k in range(n):
        dst[d + k] = src[s + k]


@kernel(inline=True)
def uint_text(v, out):
    """uint64 ``v`` in decimal into ``out`` (at least 20 bytes); returns the length."""
    return _digits(v, out, 0)


@kernel(inline=True)
def int_text(v, out):
    """int64 ``v`` in decimal into ``out`` (at least 20 bytes); returns the length."""
    if v >= 0:
        return _digits(np.uint64(v), out, 0)
    out[0] = 45  # '-'
    return _digits(np.uint64(-(v + 1)) + U1, out, 1) + 1  # (no overflow at -2**63)


@kernel
def double_text(bits, out, tmp):
    """serde_json's text for the double with bit pattern ``bits`` into ``out`` (at
    least 32 bytes; ``tmp``: 20 bytes of scratch); returns the length."""
    if (bits >> _U52) & _X7FF == _X7FF:  # NaN, infinities
        out[0] = 110
        out[1] = 117
        out[2] = 108
        out[3] = 108
        return 4
    p = 0
    if bits & SIGN != U0:
        out[0] = 45
        p = 1
    if bits & ~SIGN == U0:
        out[p] = 48
        out[p + 1] = 46
        out[p + 2] = 48
        return p + 3
    d, e = shortest(bits)
    n = _digits(d, tmp, 0)
    x = e + n - 1  # the exponent of d.ddd * 10**x
    if -5 <= x < 16:
        if e >= 0:  # a whole number: digits, zeros, ".0"
            _move(tmp, 0, out, p, n)
            p += n
            for _ in range(e):
                out[p] = 48
                p += 1
            out[p] = 46
            out[p + 1] = 48
            return p + 2
        if x >= 0:  # digits with the point inside
            _move(tmp, 0, out, p, x + 1)
            out[p + x + 1] = 46
            _move(tmp, x + 1, out, p + x + 2, n - x - 1)
            return p + n + 1
        out[p] = 48  # 0.000ddd
        out[p + 1] = 46
        p += 2
        for _ in range(-x - 1):
            out[p] = 48
            p += 1
        _move(tmp, 0, out, p, n)
        return p + n
    out[p] = tmp[0]
    p += 1
    if n > 1:
        out[p] = 46
        _move(tmp, 1, out, p + 1, n - 1)
        p += n
    out[p] = 101  # 'e'
    out[p + 1] = 45 if x < 0 else 43
    p += 2
    return p + _digits(np.uint64(-x if x < 0 else x), out, p)


# -- text to doubles ---------------------------------------------------------------------

@kernel
def _clz(x):
    """Leading zero bits of a nonzero uint64."""
    n = 0
    for width in (32, 16, 8, 4, 2, 1):
        w = np.uint64(width)
        if x >> (_U64 - w) == U0:
            n += width
            x <<= w
    return n


@kernel
def compute_float(q, w):
    """The bits of the double nearest ``w * 10**q`` (``w`` a uint64 of at most 19
    digits; ties to even; overflow to infinity, underflow to zero; sign not set)."""
    if w == U0 or q < SMALLEST_POWER:
        return U0
    if q > LARGEST_POWER:
        return INF_BITS
    lz = _clz(w)
    w <<= np.uint64(lz)
    hi, lo = mul128(w, _POW5_128[q - SMALLEST_POWER, 0])
    if hi & _X1FF == _X1FF:  # the low bits may carry: add the table's second word
        h2, _ = mul128(w, _POW5_128[q - SMALLEST_POWER, 1])
        if h2 > _MAX - lo:
            lo = h2 - (_MAX - lo) - U1
            hi += U1
        else:
            lo += h2
    upper = np.int64(hi >> _U63)
    shift = np.uint64(upper + 9)
    mant = hi >> shift
    power2 = ((217706 * q) >> 16) + 63 + upper - lz + 1023
    if power2 <= 0:  # subnormal (or zero)
        if -power2 + 1 >= 64:
            return U0
        mant >>= np.uint64(-power2 + 1)
        mant += mant & U1
        mant >>= U1
        return mant  # (rounding up may reach the least normal: 1 << 52, its bits)
    if lo <= U1 and -4 <= q <= 23 and mant & _U3 == U1 and (mant << shift) == hi:
        mant &= ~U1  # exactly halfway between two doubles: round to even (down)
    mant += mant & U1
    mant >>= U1
    if mant >= _TWO_HIDDEN:
        mant = HIDDEN
        power2 += 1
    if power2 >= 0x7FF:
        return INF_BITS
    return (np.uint64(power2) << _U52) | (mant & MANTISSA)


@kernel
def decimal_to_double(data, s, e):
    """``(ok, bits)`` for the JSON number ``data[s:e]`` (its grammar already checked):
    the nearest double, or ``ok`` false when it has over 19 significant digits and
    they leave the answer undecided."""
    p = s
    neg = data[p] == 45
    if neg:
        p += 1
    w = U0
    nd = 0  # significant digits in w
    exp10 = 0
    truncated = False
    while p < e and 48 <= data[p] <= 57:
        d = np.uint64(data[p] - 48)
        if nd < 19:
            if nd > 0 or d != U0:
                w = w * _U10 + d
                nd += 1
        else:
            exp10 += 1
            truncated = truncated or d != U0
        p += 1
    if p < e and data[p] == 46:  # '.'
        p += 1
        while p < e and 48 <= data[p] <= 57:
            d = np.uint64(data[p] - 48)
            if nd < 19:
                if nd > 0 or d != U0:
                    w = w * _U10 + d
                    nd += 1
                exp10 -= 1
            else:
                truncated = truncated or d != U0
            p += 1
    if p < e:  # 'e' / 'E'
        p += 1
        eneg = data[p] == 45
        if data[p] == 45 or data[p] == 43:
            p += 1
        x = 0
        while p < e:
            if x < 100000000:  # saturate: anything past this is zero or infinity
                x = x * 10 + np.int64(data[p] - 48)
            p += 1
        exp10 += -x if eneg else x
    sign = SIGN if neg else U0
    bits = compute_float(exp10, w)
    if truncated and compute_float(exp10, w + U1) != bits:
        return False, U0
    return True, bits | sign
