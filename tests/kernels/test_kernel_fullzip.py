"""Full-zip variable-width items (``kernels/fullzip.py``) against pure-Python
references: ``zip_variable``, ``unzip_variable_size`` and ``unzip_variable_fill``.

Item layout: a control word of ``ctrl_width`` bytes (0, 1, 2 or 4) holding the
definition level, then, for valid items (``def == 0``), a ``len_width``-byte length and
the value's bytes.
"""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from lancenb.kernels import fullzip as kz

FILL = 0x5C
UNSET = -7


def _le(value: int, width: int) -> bytes:
    return bytes((value >> (8 * k)) & 0xFF for k in range(width))


def _from_le(raw: bytes) -> int:
    return sum(b << (8 * k) for k, b in enumerate(raw))


def _u8(raw: bytes) -> np.ndarray:
    """Writable bytes, like the other arguments of the call: mixing read-only and
    writable arrays in one call would compile one more numba specialisation."""
    return np.frombuffer(bytearray(raw), np.uint8)


# -- references ---------------------------------------------------------------------------

def ref_zip_variable(offsets, data: bytes, defs, ctrl_width, len_width):
    out, row_starts = bytearray(), []
    for i in range(len(offsets) - 1):
        row_starts.append(len(out))
        d = defs[i] if defs else 0
        if ctrl_width:
            out += _le(d, ctrl_width)
        if d == 0:
            out += _le(offsets[i + 1] - offsets[i], len_width)
            out += data[offsets[i]:offsets[i + 1]]
    row_starts.append(len(out))
    return bytes(out), row_starts


def ref_unzip_variable_size(data: bytes, num_items, ctrl_width, len_width, def_mask):
    """``(total value bytes, None)`` or ``(status, (item, byte position))``."""
    pos = total = 0
    for i in range(num_items):
        if pos + ctrl_width > len(data):
            return kz.TRUNCATED, (i, pos)
        d = 0
        if ctrl_width:
            d = _from_le(data[pos:pos + ctrl_width]) & def_mask
            pos += ctrl_width
        if d == 0:
            if pos + len_width > len(data):
                return kz.TRUNCATED, (i, pos)
            n = _from_le(data[pos:pos + len_width])
            if n > len(data) - pos - len_width:
                return kz.TRUNCATED, (i, pos)
            pos += len_width + n
            total += n
    if pos != len(data):
        return kz.TRAILING_BYTES, (num_items, pos)
    return total, None


def ref_unzip_variable_fill(data: bytes, num_items, ctrl_width, len_width, def_mask):
    offsets, out, defs, pos = [0], bytearray(), [], 0
    for _ in range(num_items):
        d = 0
        if ctrl_width:
            d = _from_le(data[pos:pos + ctrl_width]) & def_mask
            pos += ctrl_width
        defs.append(d)
        if d == 0:
            n = _from_le(data[pos:pos + len_width])
            out += data[pos + len_width:pos + len_width + n]
            pos += len_width + n
        offsets.append(len(out))
    return offsets, bytes(out), defs


# -- strategies ---------------------------------------------------------------------------

@st.composite
def zip_inputs(draw):
    values = draw(st.lists(st.binary(max_size=20), max_size=12))
    head = draw(st.binary(max_size=6))
    offsets = [len(head)]
    for v in values:
        offsets.append(offsets[-1] + len(v))
    data = head + b"".join(values) + draw(st.binary(max_size=4))
    ctrl_width = draw(st.sampled_from([0, 1, 2, 4]))
    len_width = draw(st.sampled_from([4, 8]))
    defs = []
    if ctrl_width and draw(st.booleans()):
        defs = [draw(st.sampled_from([0, 0, 1, 2, 3])) for _ in values]
    return values, offsets, data, defs, ctrl_width, len_width


def _run_unzip(as_input, guarded, data: bytes, num_items, ctrl_width, len_width, def_mask):
    err = guarded(2, np.int64, UNSET)
    src = as_input(np.frombuffer(data, np.uint8))
    got = kz.unzip_variable_size(src, num_items, ctrl_width, len_width, def_mask, err.out)
    want, where = ref_unzip_variable_size(data, num_items, ctrl_width, len_width, def_mask)
    assert got == want
    assert err.intact()
    if want < 0:
        assert tuple(err.out.tolist()) == where
        return None
    offs = guarded(num_items + 1, np.int64, UNSET)
    out = guarded(got, np.uint8, FILL)
    defs = guarded(num_items, np.int64, UNSET)
    assert kz.unzip_variable_fill(src, num_items, ctrl_width, len_width, def_mask, offs.out,
                                  out.out, defs.out) == kz.OK
    assert offs.intact() and out.intact() and defs.intact()
    want_offsets, want_data, want_defs = ref_unzip_variable_fill(data, num_items, ctrl_width,
                                                                 len_width, def_mask)
    assert offs.out.tolist() == want_offsets
    assert out.out.tobytes() == want_data
    assert defs.out.tolist() == want_defs
    return want_offsets, want_data, want_defs


# -- tests --------------------------------------------------------------------------------

@given(zip_inputs())
def test_zip_variable_matches_reference(as_input, guarded, case):
    values, offsets, data, defs, cw, lw = case
    want, want_rows = ref_zip_variable(offsets, data, defs, cw, lw)
    out = guarded(len(want), np.uint8, FILL)
    rows = guarded(len(values) + 1, np.int64, UNSET)
    status = kz.zip_variable(as_input(np.array(offsets, np.int64)),
                             as_input(np.frombuffer(data, np.uint8)),
                             as_input(np.array(defs, np.uint16)), cw, lw, out.out, rows.out)
    assert status == kz.OK
    assert out.out.tobytes() == want
    assert rows.out.tolist() == want_rows
    assert out.intact() and rows.intact()


@given(zip_inputs())
def test_zip_then_unzip_round_trips(as_input, guarded, case):
    values, offsets, data, defs, cw, lw = case
    zipped, _ = ref_zip_variable(offsets, data, defs, cw, lw)
    out = np.empty(len(zipped), np.uint8)
    rows = np.empty(len(values) + 1, np.int64)
    kz.zip_variable(np.array(offsets, np.int64), _u8(data),
                    np.array(defs, np.uint16), cw, lw, out, rows)
    got = _run_unzip(as_input, guarded, out.tobytes(), len(values), cw, lw, 0xFF)
    valid = [not defs or d == 0 for d in (defs or [0] * len(values))]
    want_offsets = [0]
    for v, ok in zip(values, valid, strict=True):
        want_offsets.append(want_offsets[-1] + (len(v) if ok else 0))
    kept = b"".join(v for v, ok in zip(values, valid, strict=True) if ok)
    assert got == (want_offsets, kept, (defs or [0] * len(values)) if cw else [0] * len(values))


@st.composite
def corrupted_zips(draw):
    values, offsets, data, defs, cw, lw = draw(zip_inputs())
    zipped = bytearray(ref_zip_variable(offsets, data, defs, cw, lw)[0])
    num_items = len(values)
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["byte", "truncate", "extend", "num_items"]))
        if kind == "byte" and zipped:
            zipped[draw(st.integers(0, len(zipped) - 1))] = draw(
                st.sampled_from([0, 1, 2, 0x7F, 0xFF, draw(st.integers(0, 255))]))
        elif kind == "truncate":
            del zipped[draw(st.integers(0, len(zipped))):]
        elif kind == "extend":
            zipped += draw(st.binary(min_size=1, max_size=6))
        elif kind == "num_items":
            num_items = draw(st.one_of(st.integers(0, num_items + 3),
                                       st.sampled_from([2**31, 2**40])))
    mask = draw(st.sampled_from([1, 3, 0xFF, 0xFFFF]))
    return bytes(zipped), num_items, cw, lw, mask


@given(corrupted_zips())
def test_unzip_corrupted(as_input, guarded, case):
    _run_unzip(as_input, guarded, *case)


def test_fullzip_docstring_example():
    # ["ab", None], 1-byte control word, u32 lengths: 00 02 00 00 00 61 62 | 01
    expected = bytes.fromhex("00" "02000000" "6162" "01")
    out, rows = np.full(8, FILL, np.uint8), np.full(3, UNSET, np.int64)
    assert kz.zip_variable(np.array([0, 2, 2], np.int64), _u8(b"ab"),
                           np.array([0, 1], np.uint16), 1, 4, out, rows) == kz.OK
    assert out.tobytes() == expected
    assert rows.tolist() == [0, 7, 8]
    src = _u8(expected)
    err = np.zeros(2, np.int64)
    assert kz.unzip_variable_size(src, 2, 1, 4, 1, err) == 2
    offsets, data, defs = np.empty(3, np.int64), np.empty(2, np.uint8), np.empty(2, np.int64)
    assert kz.unzip_variable_fill(src, 2, 1, 4, 1, offsets, data, defs) == kz.OK
    assert (offsets.tolist(), data.tobytes(), defs.tolist()) == ([0, 2, 2], b"ab", [0, 1])
    assert kz.unzip_variable_size(src[:7], 2, 1, 4, 1, err) == kz.TRUNCATED
    assert err.tolist() == [1, 7]
    assert kz.unzip_variable_size(src, 1, 1, 4, 1, err) == kz.TRAILING_BYTES
    assert err.tolist() == [1, 7]
    assert kz.unzip_variable_size(src[:6], 1, 1, 4, 1, err) == kz.TRUNCATED
    assert err.tolist() == [0, 1]
