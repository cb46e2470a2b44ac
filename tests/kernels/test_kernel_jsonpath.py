"""``kernels/json/jsonpath.py`` against a pure-Python reference written from the JSONB layout
(``kernels/json/jsonb.py``'s docstring): roots, key lookups, items, standalone values and
numbers of arbitrary JSON, then truncated and flipped JSONB (a status, never a read
outside the data), with writable and read-only inputs."""

import json
import math
import struct

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lancenb.kernels.json import jsonb as kj
from lancenb.kernels.json import jsonpath as kp

from lancenb.file import jsonb as fj

I64 = np.int64


def _be32(b, p):
    return struct.unpack_from(">I", b, p)[0]


# -- reference ----------------------------------------------------------------------------

def ref_root(b: bytes, base: int):
    """(start, length, kind) of a row's value at ``base``."""
    h = _be32(b, base)
    if h & 0xE0000000 == kj.SCALAR:
        e = _be32(b, base + 4)
        return base + 8, e & kj.LENGTH_MASK, e >> 28
    return base, len(b) - base, kj.E_CONTAINER


def ref_items(b: bytes, loc):
    """[(key or None, (start, length, kind))] of the container at ``loc``."""
    s, _, kind = loc
    if kind != kj.E_CONTAINER:
        return None, []
    h = _be32(b, s)
    n = h & kj.COUNT_MASK
    obj = h & 0xE0000000 == kj.OBJECT
    entries = [_be32(b, s + 4 + 4 * i) for i in range(n * (2 if obj else 1))]
    cur = s + 4 + 4 * len(entries)
    keys = []
    if obj:
        for e in entries[:n]:
            keys.append(b[cur:cur + (e & kj.LENGTH_MASK)].decode())
            cur += e & kj.LENGTH_MASK
        entries = entries[n:]
    out = []
    for i, e in enumerate(entries):
        size = e & kj.LENGTH_MASK
        out.append((keys[i] if obj else None, (cur, size, e >> 28)))
        cur += size
    return ("object" if obj else "array"), out


def ref_value_bytes(b: bytes, loc) -> bytes:
    s, n, kind = loc
    if kind == kj.E_CONTAINER:
        return b[s:s + n]
    return struct.pack(">II", kj.SCALAR, kind << 28 | n) + b[s:s + n]


def ref_number(payload: bytes):
    tag = payload[0] & 0xF0
    if tag == kj.N_ZERO:
        return kp.INT, 0
    if tag in (kj.N_NAN, kj.N_INF, kj.N_NEG_INF):
        return kp.FLOAT, {kj.N_NAN: math.nan, kj.N_INF: math.inf}.get(tag, -math.inf)
    if tag == kj.N_FLOAT:
        return kp.FLOAT, struct.unpack(">d", payload[1:])[0]
    v = int.from_bytes(payload[1:], "big", signed=tag == kj.N_INT)
    return (kp.BIG_UINT, float(v)) if v >= 2**63 else (kp.INT, v)


# -- drivers ------------------------------------------------------------------------------

def _jsonb(texts):
    arr = fj.to_jsonb(pa.array(texts, pa.string()), column="j")
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], I64, count=len(arr) + 1).copy()
    data = bytes(bufs[2]) if bufs[2] is not None else b""
    return offsets, data


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**64, 2**64) | st.floats(allow_nan=False,
                                                                        allow_infinity=False)
    | st.text(max_size=5),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=3), kids,
                                                              max_size=4),
    max_leaves=12)


def _locations(n):
    return np.empty(n, I64), np.empty(n, I64), np.empty(n, I64)


@given(st.lists(st.one_of(st.none(), json_values), min_size=1, max_size=5), st.text(max_size=3))
@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_walk_matches_reference(as_input, values, key):
    texts = [None if v is None else json.dumps(v) for v in values]
    texts = [None if v is None and i % 2 else t for i, (v, t) in enumerate(zip(values, texts))]
    offsets, data = _jsonb(texts)
    buf = as_input(np.frombuffer(data, np.uint8)) if data else np.zeros(0, np.uint8)
    valid = as_input(np.array([t is not None for t in texts], np.uint8))
    n = len(texts)
    start, length, kind = _locations(n)
    err = np.zeros(1, I64)
    assert kp.roots(as_input(offsets), buf, valid, start, length, kind, err) == kp.OK
    want = [ref_root(data[:offsets[i + 1]], offsets[i]) if texts[i] is not None
            else (0, 0, kp.NONE) for i in range(n)]
    assert list(zip(start.tolist(), length.tolist(), kind.tolist())) == want

    # key lookup
    s2, l2, k2 = _locations(n)
    keyb = as_input(np.frombuffer(key.encode() or b"\0", np.uint8)[:len(key.encode())])
    assert kp.key_lookup(buf, as_input(start), as_input(length), as_input(kind), keyb,
                         s2, l2, k2, err) == kp.OK
    for i in range(n):
        typ, kids = ref_items(data, want[i]) if want[i][2] != kp.NONE else (None, [])
        hit = [loc for k, loc in kids if typ == "object" and k == key]
        assert (s2[i], l2[i], k2[i]) == (hit[0] if hit else (0, 0, kp.NONE))

    # items of arrays and of objects
    for which, name in ((kp.WANT_ARRAY, "array"), (kp.WANT_OBJECT, "object")):
        counts = np.empty(n, I64)
        assert kp.child_counts(buf, start, length, kind, which, counts, err) == kp.OK
        first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(I64)
        total = int(counts.sum())
        parent, pos = np.empty(total, I64), np.empty(total, I64)
        cs, cl, ck = _locations(total)
        assert kp.child_fill(buf, start, length, kind, which, first, parent, pos, cs, cl, ck,
                             err) == kp.OK
        ref = []
        for i in range(n):
            typ, kids = ref_items(data, want[i]) if want[i][2] != kp.NONE else (None, [])
            if typ == name:
                ref += [(i, p, loc) for p, (_, loc) in enumerate(kids)]
        assert [(a, b, (c, d, e)) for a, b, c, d, e in zip(parent, pos, cs, cl, ck)] == ref

        # standalone values of the items: the reference's bytes, and numbers
        sizes = cl + 8 * (ck != kj.E_CONTAINER)
        out_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(I64)
        out = np.empty(int(out_offsets[-1]), np.uint8)
        assert kp.fill_values(buf, cs, cl, ck, out_offsets, out) == kp.OK
        got = [out[out_offsets[j]:out_offsets[j + 1]].tobytes() for j in range(total)]
        assert got == [ref_value_bytes(data, loc) for _, _, loc in ref]
        num = ck == kj.E_NUMBER
        ints, floats, cls = np.empty(num.sum(), I64), np.empty(num.sum()), np.empty(num.sum(), I64)
        assert kp.number_values(buf, cs[num], cl[num], ints, floats, cls, err) == kp.OK
        for j, (s, ln) in enumerate(zip(cs[num], cl[num])):
            c, v = ref_number(data[s:s + ln])
            assert cls[j] == c
            assert (ints[j] == v) if c == kp.INT else (floats[j] == v or math.isnan(v))


@given(json_values, st.data())
@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_damaged_jsonb_is_a_status(as_input, value, data):
    offsets, raw = _jsonb([json.dumps({"a": value, "b": [value, 1]})])
    raw = bytearray(raw)
    cut = data.draw(st.integers(0, len(raw)))
    if data.draw(st.booleans()) and raw:
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] ^= data.draw(st.integers(1, 255))
    raw = bytes(raw[:cut])
    buf = as_input(np.frombuffer(raw, np.uint8)) if raw else np.zeros(0, np.uint8)
    start, length, kind = _locations(1)
    err = np.zeros(1, I64)
    status = kp.roots(np.array([0, len(raw)], I64), buf, np.ones(1, np.uint8), start, length,
                      kind, err)
    if status < 0:
        return
    s2, l2, k2 = _locations(1)
    kp.key_lookup(buf, start, length, kind, np.frombuffer(b"b", np.uint8), s2, l2, k2, err)
    counts = np.empty(1, I64)
    if kp.child_counts(buf, start, length, kind, 3, counts, err) < 0:
        return
    total = int(counts[0])
    parent, pos = np.empty(total, I64), np.empty(total, I64)
    cs, cl, ck = _locations(total)
    if kp.child_fill(buf, start, length, kind, 3, np.zeros(1, I64), parent, pos, cs, cl, ck,
                     err) < 0:
        return
    assert np.all(cs + cl <= len(raw))
    num = ck == kj.E_NUMBER
    m = int(num.sum())
    kp.number_values(buf, cs[num], cl[num], np.empty(m, I64), np.empty(m), np.empty(m, I64),
                     err)


def test_known_locations():
    # {"a":[1,"x"]}: the example of the module docstring
    offsets, data = _jsonb(['{"a":[1,"x"]}'])
    buf = np.frombuffer(data, np.uint8)
    start, length, kind = _locations(1)
    err = np.zeros(1, I64)
    assert kp.roots(offsets, buf, np.ones(1, np.uint8), start, length, kind, err) == kp.OK
    assert (start[0], length[0], kind[0]) == (0, 28, kj.E_CONTAINER)
    assert data == bytes.fromhex("40000001 10000001 5000000f 61 80000002 20000002 10000001 "
                                 "50 01 78".replace(" ", ""))
    s2, l2, k2 = _locations(1)
    kp.key_lookup(buf, start, length, kind, np.frombuffer(b"a", np.uint8), s2, l2, k2, err)
    assert (s2[0], l2[0], k2[0]) == (13, 15, kj.E_CONTAINER)
    counts = np.empty(1, I64)
    kp.child_counts(buf, s2, l2, k2, kp.WANT_ARRAY, counts, err)
    cs, cl, ck = _locations(2)
    parent, pos = np.empty(2, I64), np.empty(2, I64)
    assert kp.child_fill(buf, s2, l2, k2, kp.WANT_ARRAY, np.zeros(1, I64), parent, pos, cs,
                         cl, ck, err) == kp.OK
    assert list(zip(cs, cl, ck)) == [(25, 2, kj.E_NUMBER), (27, 1, kj.E_STRING)]
