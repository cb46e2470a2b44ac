"""JSONB kernels against pure-Python references written from their docstrings:
``kernels/json/jsonb.py`` (JSONB -> text: ``text_fill``), ``kernels/json/jsontape.py``
(text -> tape: ``fill_tape``) and ``kernels/json/jsonb_encode.py`` (tape -> JSONB:
``jsonb_sizes``, ``fill_jsonb``).

The references are recursive and check in the kernels' order, so valid input gives the
same bytes and bad input the same status (and, for text, the same row and byte). The
known answers in ``KNOWN`` are bytes pylance 14 wrote (tests/compat/test_json_interop.py
compares with pylance itself).
"""

import json
import math
import re
import struct
import sys

import numpy as np
import pytest
from _jsonref import bits_of, ref_double_text
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from lancenb.kernels.json import jsonb as kj
from lancenb.kernels.json import jsonb_encode as ke
from lancenb.kernels.json import jsontape as kt

FILL = 0x5C
UNSET = -7


class Bad(Exception):
    """A reference's fault: ``status`` (and for text, the byte ``at``)."""

    def __init__(self, status, at=0):
        super().__init__(status, at)
        self.status, self.at = status, at


# -- reference: JSONB -> text -------------------------------------------------------------

def _be32(b, p):
    return int.from_bytes(b[p:p + 4], "big")


def ref_string_text(raw: bytes) -> str:
    try:
        s = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Bad(kj.BAD_UTF8) from None
    short = {8: "b", 9: "t", 10: "n", 12: "f", 13: "r"}
    out = []
    for ch in s:
        o = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif o < 0x20:
            out.append("\\" + short[o] if o in short else f"\\u{o:04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def ref_number_text(b: bytes) -> str:
    if not b or b[0] & 0x0F:
        raise Bad(kj.BAD_NUMBER)
    tag, body = b[0], b[1:]
    if tag in (0x00, 0x10, 0x20, 0x30):
        if body:
            raise Bad(kj.BAD_NUMBER)
        return "0" if tag == 0 else "null"
    if tag in (0x40, 0x50):
        if len(body) not in (1, 2, 4, 8):
            raise Bad(kj.BAD_NUMBER)
        return str(int.from_bytes(body, "big", signed=tag == 0x40))
    if tag == 0x60:
        if len(body) != 8:
            raise Bad(kj.BAD_NUMBER)
        return ref_double_text(struct.unpack(">d", body)[0])
    raise Bad(kj.UNSUPPORTED if tag == 0x70 else kj.BAD_NUMBER)


def ref_container_text(b: bytes, p: int, end: int, depth: int) -> str:
    if end - p < 4:
        raise Bad(kj.TRUNCATED)
    h = _be32(b, p)
    kind, n = h & 0xE0000000, h & 0x1FFFFFFF
    if kind == kj.SCALAR and depth == 0:
        n = 1
    elif kind not in (kj.ARRAY, kj.OBJECT):
        raise Bad(kj.BAD_HEADER)
    obj = kind == kj.OBJECT
    table = 4 * n * (2 if obj else 1)
    if table > end - p - 4:
        raise Bad(kj.TRUNCATED)
    entries = [_be32(b, p + 4 + 4 * i) for i in range(table // 4)]
    cur = key = p + 4 + table
    if obj:
        if any(e >> 28 != kj.E_STRING for e in entries[:n]):
            raise Bad(kj.BAD_ENTRY)
        cur += sum(e & kj.LENGTH_MASK for e in entries[:n])
        if cur > end:
            raise Bad(kj.TRUNCATED)
    items = []
    for i in range(n):
        text = ""
        if obj:
            klen = entries[i] & kj.LENGTH_MASK
            text = ref_string_text(b[key:key + klen]) + ":"
            key += klen
        entry = entries[n + i if obj else i]
        typ, ln = entry >> 28, entry & kj.LENGTH_MASK
        if ln > end - cur:
            raise Bad(kj.TRUNCATED)
        raw = b[cur:cur + ln]
        if typ == kj.E_CONTAINER:
            if depth + 1 >= kj.MAX_DEPTH:
                raise Bad(kj.TOO_DEEP)
            text += ref_container_text(b, cur, cur + ln, depth + 1)
        elif typ == kj.E_STRING:
            text += ref_string_text(raw)
        elif typ == kj.E_NUMBER:
            text += ref_number_text(raw)
        elif typ in (kj.E_NULL, kj.E_TRUE, kj.E_FALSE):
            if ln:
                raise Bad(kj.BAD_ENTRY)
            text += {kj.E_NULL: "null", kj.E_TRUE: "true", kj.E_FALSE: "false"}[typ]
        else:
            raise Bad(kj.UNSUPPORTED if typ == kj.E_EXTENSION else kj.BAD_ENTRY)
        cur += ln
        items.append(text)
    if cur != end:
        raise Bad(kj.BAD_LENGTH)
    if kind == kj.SCALAR and depth == 0:
        return items[0]
    return ("{%s}" if obj else "[%s]") % ",".join(items)


def ref_text(values):
    """``(OK, texts)`` or ``(status, row)`` for JSONB values (``None``: null)."""
    out = []
    for r, v in enumerate(values):
        if v is None:
            out.append(None)
            continue
        try:
            out.append(ref_container_text(v, 0, len(v), 0))
        except Bad as e:
            return e.status, r
    return kj.OK, out


# -- reference: text -> JSONB -------------------------------------------------------------

WS = b" \t\n\r"
NUMBER = re.compile(rb"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
ESCAPES = {ord(k): v for k, v in zip('"\\/bfnrt', b'"\\/\b\f\n\r\t')}


class RefParser:
    """RFC 8259 JSON with pylance's choices (see kernels/json/jsontape.py). Nodes: ``None``,
    booleans, ``("s", bytes)``, ``("u", int)``, ``("i", int)``, ``("f", bits)``, lists,
    ``("o", [(key bytes, node), ...])``."""

    def __init__(self, text: bytes):
        self.t = text

    def ws(self, p):
        while p < len(self.t) and self.t[p] in WS:
            p += 1
        return p

    def parse(self):
        node, p = self.value(self.ws(0), 0)
        p = self.ws(p)
        if p != len(self.t):
            raise Bad(kt.UNEXPECTED_CHAR, p)
        return node

    def value(self, p, depth):
        t = self.t
        if p >= len(t):
            raise Bad(kt.UNEXPECTED_END, p)
        c = t[p]
        if c in b"{[":
            if depth >= kj.MAX_DEPTH:
                raise Bad(kt.TOO_DEEP, p)
            return self.container(p, depth)
        if c == ord('"'):
            return self.string(p)
        for word, node in ((b"true", True), (b"false", False), (b"null", None)):
            if c == word[0]:
                for k in range(len(word)):
                    if p + k >= len(t) or t[p + k] != word[k]:
                        raise Bad(kt.UNEXPECTED_END if p + k >= len(t) else kt.EXPECTED_VALUE,
                                  p + k)
                return node, p + len(word)
        if c == ord("-") or 48 <= c <= 57:
            return self.number(p)
        raise Bad(kt.EXPECTED_VALUE, p)

    def container(self, p, depth):
        t, obj = self.t, self.t[p] == ord("{")
        items = []
        p = self.ws(p + 1)
        if p < len(t) and t[p] == (ord("}") if obj else ord("]")):
            return (("o", items) if obj else items), p + 1
        while True:
            if obj:
                if p >= len(t):
                    raise Bad(kt.UNEXPECTED_END, p)
                if t[p] != ord('"'):
                    raise Bad(kt.EXPECTED_VALUE, p)
                (_, key), p = self.string(p)
                p = self.ws(p)
                if p >= len(t) or t[p] != ord(":"):
                    raise Bad(kt.UNEXPECTED_END if p >= len(t) else kt.UNEXPECTED_CHAR, p)
                node, p = self.value(self.ws(p + 1), depth + 1)
                items.append((key, node))
            else:
                node, p = self.value(p, depth + 1)
                items.append(node)
            p = self.ws(p)
            if p >= len(t):
                raise Bad(kt.UNEXPECTED_END, p)
            if t[p] == ord(","):
                p = self.ws(p + 1)
            elif t[p] == (ord("}") if obj else ord("]")):
                return (("o", items) if obj else items), p + 1
            else:
                raise Bad(kt.UNEXPECTED_CHAR, p)

    def hex4(self, p):
        h = self.t[p:p + 4]
        if len(h) < 4 or any(c not in b"0123456789abcdefABCDEF" for c in h):
            return -1
        return int(h, 16)

    def string(self, p):
        t, out = self.t, bytearray()
        p += 1
        while True:
            if p >= len(t):
                raise Bad(kt.UNEXPECTED_END, p)
            c = t[p]
            if c == ord('"'):
                return ("s", bytes(out)), p + 1
            if c == ord("\\"):
                if p + 1 >= len(t):
                    raise Bad(kt.UNEXPECTED_END, p)
                if t[p + 1] != ord("u"):
                    if t[p + 1] not in ESCAPES:
                        raise Bad(kt.BAD_ESCAPE, p)
                    out.append(ESCAPES[t[p + 1]])
                    p += 2
                    continue
                u = self.hex4(p + 2)
                if u < 0:
                    raise Bad(kt.BAD_ESCAPE, p)
                if 0xD800 <= u <= 0xDBFF and t[p + 6:p + 8] == b"\\u":
                    u2 = self.hex4(p + 8)
                    if u2 < 0:
                        raise Bad(kt.BAD_ESCAPE, p + 6)
                    if 0xDC00 <= u2 <= 0xDFFF:
                        out += chr(0x10000 + ((u - 0xD800) << 10) + u2 - 0xDC00).encode()
                    else:
                        out += t[p:p + 12]
                    p += 12
                elif 0xD800 <= u <= 0xDFFF:
                    out += t[p:p + 6]
                    p += 6
                else:
                    out += chr(u).encode()
                    p += 6
            elif c < 0x20:
                raise Bad(kt.CONTROL_CHARACTER, p)
            elif c < 0x80:
                out.append(c)
                p += 1
            else:
                for k in (2, 3, 4, 0):
                    try:
                        t[p:p + k].decode("utf-8")
                        break
                    except UnicodeDecodeError:
                        pass
                if k == 0:
                    raise Bad(kt.BAD_UTF8, p)
                out += t[p:p + k]
                p += k

    def number(self, p):
        m = NUMBER.match(self.t, p)
        if m is None:
            raise Bad(kt.BAD_NUMBER, p)
        end = m.end()
        nxt = self.t[end:end + 1]
        # a digit after 0, or a fraction or exponent begun and not finished
        if nxt.isdigit() or (nxt == b"." and not m.group(2) and not m.group(3)) or (
                nxt in (b"e", b"E") and not m.group(3)):
            raise Bad(kt.BAD_NUMBER, p)
        tok = self.t[p:end].decode()
        if m.group(2) is None and m.group(3) is None:
            v = int(tok)
            if 0 <= v < 2**64:
                return ("u", v), end
            if -2**63 <= v < 0:
                return ("i", v), end
        return ("f", bits_of(float(tok))), end


def ref_payload(node) -> tuple[int, bytes]:
    """``(entry type, payload)``."""
    if node is None or isinstance(node, bool):
        return {None: kj.E_NULL, True: kj.E_TRUE, False: kj.E_FALSE}[node], b""
    if isinstance(node, list):
        parts = [ref_payload(x) for x in node]
        head = struct.pack(">I", kj.ARRAY | len(parts))
        head += b"".join(struct.pack(">I", t << 28 | len(b)) for t, b in parts)
        return kj.E_CONTAINER, head + b"".join(b for _, b in parts)
    tag, v = node
    if tag == "s":
        return kj.E_STRING, v
    if tag == "o":
        items = sorted(v, key=lambda kv: kv[0])
        for a, b in zip(items, items[1:]):
            if a[0] == b[0]:
                raise Bad(kt.DUPLICATE_KEY)
        parts = [ref_payload(x) for _, x in items]
        head = struct.pack(">I", kj.OBJECT | len(items))
        head += b"".join(struct.pack(">I", kj.E_STRING << 28 | len(k)) for k, _ in items)
        head += b"".join(struct.pack(">I", t << 28 | len(b)) for t, b in parts)
        return kj.E_CONTAINER, head + b"".join(k for k, _ in items) + b"".join(
            b for _, b in parts)
    if tag == "u":
        if v == 0:
            return kj.E_NUMBER, b"\0"
        size = next(s for s in (1, 2, 4, 8) if v < 1 << (8 * s))
        return kj.E_NUMBER, bytes([kj.N_UINT]) + v.to_bytes(size, "big")
    if tag == "i":
        size = next(s for s in (1, 2, 4, 8) if v >= -(1 << (8 * s - 1)))
        return kj.E_NUMBER, bytes([kj.N_INT]) + v.to_bytes(size, "big", signed=True)
    x = struct.unpack("<d", struct.pack("<Q", v))[0]
    if math.isinf(x):
        return kj.E_NUMBER, bytes([kj.N_INF if x > 0 else kj.N_NEG_INF])
    return kj.E_NUMBER, bytes([kj.N_FLOAT]) + struct.pack(">d", x)


def ref_jsonb(values):
    """``(OK, jsonb values)``, ``(status, row, byte)`` for a grammar fault, or
    ``(DUPLICATE_KEY, row, None)`` (found after every row's grammar, as the kernels)."""
    trees = []
    for r, v in enumerate(values):
        if v is None:
            trees.append(None)
            continue
        try:
            trees.append(RefParser(v).parse())
        except Bad as e:
            return e.status, r, e.at
    out, dup = [], None
    for r, tree in enumerate(trees):
        if tree is None and values[r] is None:
            out.append(None)
            continue
        try:
            typ, payload = ref_payload(tree)
        except Bad:
            dup = r  # the kernels find the last row's first
            continue
        if typ == kj.E_CONTAINER:
            out.append(payload)
        else:
            out.append(struct.pack(">II", kj.SCALAR, typ << 28 | len(payload)) + payload)
    if dup is not None:
        return kt.DUPLICATE_KEY, dup, None
    return kj.OK, out


# -- kernel drivers -----------------------------------------------------------------------

def _arrays(values, as_input):
    data = b"".join(v or b"" for v in values)
    offsets = np.zeros(len(values) + 1, np.int64)
    offsets[1:] = np.cumsum([len(v or b"") for v in values])
    valid = np.array([v is not None for v in values], np.uint8)
    return as_input(offsets), as_input(np.frombuffer(data, np.uint8)), as_input(valid)


def kernel_text(values, as_input, guarded, room=5):
    """``text_fill`` from an output of ``room`` bytes, grown (doubled, the text so far
    kept) each time it stops at a row that does not fit."""
    offsets, data, valid = _arrays(values, as_input)
    n = len(values)
    out_offsets = guarded(n + 1, np.int64, UNSET)
    out_offsets.out[0] = 0
    err = np.zeros(2, np.int64)
    out, row, calls = guarded(room, np.uint8, FILL), 0, 0
    while True:
        row = kj.text_fill(offsets, data, valid, row, out_offsets.out, out.out, err)
        assert out.intact() and out_offsets.intact()
        calls += 1
        assert calls < 64
        if row < 0:
            return row, int(err[0])
        if row == n:
            break
        done = out_offsets.out[row]
        assert (out_offsets.out[1:row + 1] >= out_offsets.out[:row]).all()
        grown = guarded(2 * len(out.out), np.uint8, FILL)
        grown.out[:done] = out.out[:done]
        out = grown
    raw = out.out.tobytes()
    o = out_offsets.out
    return kj.OK, [raw[o[r]:o[r + 1]].decode() if values[r] is not None else None
                   for r in range(n)]


def kernel_jsonb(values, as_input, guarded, tape_rows=None):
    """The three passes, a group of rows per tape full (``tape_rows``: its size; by
    default room for every row, so one group, whose faults come in the reference's
    order); the tape doubles when one row does not fit."""
    offsets, data, valid = _arrays(values, as_input)
    n = len(values)
    err = np.zeros(2, np.int64)
    first, pool_first = guarded(n + 1, np.int64, UNSET), guarded(n + 1, np.int64, UNSET)
    pool = guarded(len(data), np.uint8, FILL)
    tape = guarded((tape_rows or len(data) + 1, kt.TAPE_COLS), np.int64, UNSET)
    text = np.asarray(data).tobytes()
    out, row = [None] * n, 0
    while row < n:
        first.out[row] = pool_first.out[row] = 0
        stop = kt.fill_tape(offsets, data, valid, row, first.out, pool_first.out, tape.out,
                            pool.out, err)
        assert tape.intact() and pool.intact() and first.intact() and pool_first.intact()
        if stop < 0:
            return stop, int(err[0]), int(err[1])
        if stop == row:
            tape = guarded((2 * len(tape.out), kt.TAPE_COLS), np.int64, UNSET)
            continue
        group, bounds = tape.out[:first.out[stop]], first.out[row:stop + 1]
        for i in np.flatnonzero(group[:, kt.T_KIND] == kt.K_PENDING):
            s, ln = group[i, kt.T_VAL], group[i, kt.T_AUX]
            bits = bits_of(float(text[s:s + ln]))
            group[i, kt.T_KIND:kt.T_AUX + 1] = kt.K_FLOAT, bits & 0xFFFFFFFF, bits >> 32
        members = guarded(len(group) // 2, np.int64, UNSET)
        sizes = guarded(stop - row, np.int64, UNSET)
        st_ = ke.jsonb_sizes(group, pool.out, bounds, members.out, sizes.out, err)
        assert members.intact() and sizes.intact()
        if st_ != ke.OK:
            return st_, row + int(np.searchsorted(bounds, err[1], side="right")) - 1, None
        out_offsets = np.concatenate([[0], np.cumsum(sizes.out)]).astype(np.int64)
        buf = guarded(int(out_offsets[-1]), np.uint8, FILL)
        assert ke.fill_jsonb(group, pool.out, bounds, members.out, out_offsets, buf.out,
                             err) == ke.OK
        assert buf.intact()
        raw = buf.out.tobytes()
        for r in range(row, stop):
            if values[r] is not None:
                out[r] = raw[out_offsets[r - row]:out_offsets[r - row + 1]]
        row = stop
    return kj.OK, out


# -- known answers (bytes pylance 14 wrote) -----------------------------------------------

KNOWN = {
    '{"a": 1}': ("400000011000000120000002615001", '{"a":1}'),
    "[1,2,3]": ("80000003200000022000000220000002500150025003", "[1,2,3]"),
    "1": ("20000000200000025001", "1"),
    "-5": ("200000002000000240fb", "-5"),
    "0": ("200000002000000100", "0"),
    "-0": ("200000002000000100", "0"),
    "0.1": ("2000000020000009603fb999999999999a", "0.1"),
    "-0.0": ("2000000020000009608000000000000000", "-0.0"),
    "1e309": ("200000002000000120", "null"),
    "18446744073709551615": ("200000002000000950ffffffffffffffff", "18446744073709551615"),
    "-129": ("200000002000000340ff7f", "-129"),
    "65536": ("20000000200000055000010000", "65536"),
    "-9223372036854775809": ("200000002000000960c3e0000000000000", "-9.223372036854776e+18"),
    '"x\\"y"': ("2000000010000003782279", '"x\\"y"'),
    "null": ("2000000000000000", "null"),
    "true": ("2000000040000000", "true"),
    "{}": ("40000000", "{}"),
    "[]": ("80000000", "[]"),
    '{"b":[1,{"c":null}],"a":"s"}': (
        "400000021000000110000001100000015000001b6162738000000220000002"
        "5000000d500140000001100000010000000063", '{"a":"s","b":[1,{"c":null}]}'),
    '"\\ud800"': ("20000000100000065c7564383030", '"\\\\ud800"'),
    '"\\ud83d\\u0041"': ("200000001000000c5c75643833645c7530303431", '"\\\\ud83d\\\\u0041"'),
    '"\\ud83d\\ude00"': ("2000000010000004f09f9880", '"\U0001F600"'),
    '"\\t\\r\\b\\f\\u0001"': ("2000000010000005090d080c01", '"\\t\\r\\b\\f\\u0001"'),
    '{"a\\u0000":1,"a":2}': ("400000021000000110000002200000022000000261610050025001",
                            '{"a":2,"a\\u0000":1}'),
}


@pytest.mark.parametrize("text", sorted(KNOWN))
def test_known_answers(text, as_input, guarded):
    jsonb, canonical = KNOWN[text]
    assert kernel_jsonb([text.encode()], as_input, guarded) == (kj.OK, [bytes.fromhex(jsonb)])
    assert ref_jsonb([text.encode()]) == (kj.OK, [bytes.fromhex(jsonb)])
    assert kernel_text([bytes.fromhex(jsonb)], as_input, guarded) == (kj.OK, [canonical])


# -- properties ---------------------------------------------------------------------------

# strings with lone surrogates too (written as \uXXXX escapes)
any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=8)
numbers = st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=False,
                                                          allow_infinity=False))
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), numbers, any_text),
    lambda kids: st.one_of(st.lists(kids, max_size=5),
                           st.dictionaries(any_text, kids, max_size=5)),
    max_leaves=25)
number_text = st.from_regex(r"\A-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,25})?([eE][+-]?[0-9]{1,3})?\Z")


@st.composite
def json_texts(draw):
    """JSON text of an arbitrary value, with arbitrary (valid) spacing and escaping."""
    value = draw(json_values)
    ascii_only = draw(st.booleans())
    indent = draw(st.sampled_from([None, 0, 2]))
    seps = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,\t", "\r\n: ")]))
    try:
        text = json.dumps(value, ensure_ascii=ascii_only, indent=indent, separators=seps)
        raw = text.encode()
    except UnicodeEncodeError:  # a lone surrogate: only as an escape
        raw = json.dumps(value, indent=indent, separators=seps).encode()
    if draw(st.booleans()):  # an edge number somewhere
        raw = b"[" + raw + b"," + draw(number_text).encode() + b"]"
    return raw


def _check_jsonb(values, as_input, guarded):
    want = ref_jsonb(values)
    got = kernel_jsonb(values, as_input, guarded)
    assert got == want
    if want[0] == kj.OK:  # the text of what was written: the reference's
        assert kernel_text(want[1], as_input, guarded) == ref_text(want[1])
    return want


@given(st.lists(st.one_of(st.none(), json_texts()), max_size=6))
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_encode_valid(as_input, guarded, values):
    want = _check_jsonb(values, as_input, guarded)
    assert want[0] == kj.OK
    # the text read back is what Python reads from the input (integers past u64 and
    # i64 are doubles, too large ones null; escaped lone surrogates stay text)
    _, texts = ref_text(want[1])
    for v, t in zip(values, texts):
        if v is not None and b"\\ud" not in v.lower():
            assert json.loads(t) == json.loads(v, parse_int=_int, parse_float=_double)


def _double(s: str):
    x = float(s)
    return None if math.isinf(x) else x  # read back as null


def _int(s: str):
    v = int(s)
    return v if -2**63 <= v < 2**64 else _double(s)


@given(st.lists(st.one_of(json_texts(), st.binary(max_size=12),
                          st.text(alphabet='{}[]":,\\ -0.1eEtrufalsn\t\x01é', max_size=14)
                          .map(str.encode)), min_size=1, max_size=4), st.data())
@settings(suppress_health_check=[HealthCheck.too_slow])
@example([b'{"a":1,"a":2}', b"[1]"], None)
@example([b'[1,2', b"{}"], None)
@example([b'"\\ud83d\\uzz"'], None)
@example([b'"\xed\xa0\x80"', b'"\xc0\xaf"', b'"\xf4\x90\x80\x80"'], None)
def test_encode_any_text(as_input, guarded, values, data):
    if data is not None:  # a text cut short, or a byte changed
        r = data.draw(st.integers(0, len(values) - 1))
        v = values[r]
        if v and data.draw(st.booleans()):
            k = data.draw(st.integers(0, len(v) - 1))
            v = v[:k] + bytes([data.draw(st.integers(0, 255))]) + v[k + 1:]
        elif v:
            v = v[:data.draw(st.integers(0, len(v) - 1))]
        values = values[:r] + [v] + values[r + 1:]
    _check_jsonb(values, as_input, guarded)


def _valid_jsonb(draw):
    text = draw(json_texts())
    status, values = ref_jsonb([text])
    assert status == kj.OK
    return bytearray(values[0])


@st.composite
def corrupted_jsonb(draw):
    """Valid JSONB with a byte changed, a u32 changed, bytes cut or added."""
    b = _valid_jsonb(draw)
    how = draw(st.sampled_from(["byte", "word", "cut", "add", "tag"]))
    if how == "byte" and b:
        b[draw(st.integers(0, len(b) - 1))] = draw(st.integers(0, 255))
    elif how == "word" and len(b) >= 4:
        p = draw(st.integers(0, (len(b) - 4) // 4)) * 4
        b[p:p + 4] = struct.pack(">I", draw(st.sampled_from(
            [0, 1, 0x0FFFFFFF, 0x1FFFFFFF, 0x5FFFFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
             0x60000001, 0x70000000, 0x20000001, 0x50000004])))
    elif how == "cut" and b:
        del b[draw(st.integers(0, len(b) - 1)):]
    elif how == "add":
        b += draw(st.binary(min_size=1, max_size=4))
    else:  # a number's tag
        for p in range(len(b)):
            if b[p] in (0x40, 0x50, 0x60):
                b[p] = draw(st.sampled_from([0x00, 0x10, 0x41, 0x70, 0x80, 0xF0]))
                break
    return bytes(b)


@given(st.lists(st.one_of(st.none(), corrupted_jsonb(), st.binary(max_size=24)), min_size=1,
                max_size=4))
@settings(suppress_health_check=[HealthCheck.too_slow])
@example([bytes.fromhex("2000000020000000")])   # a number of no bytes
@example([bytes.fromhex("20000000600000020000")])  # an extension value
@example([bytes.fromhex("200000002000000a700000000000000001")])  # a decimal
@example([bytes.fromhex("4000000120000001000000000000")])  # a number for a key
@example([bytes.fromhex("80000001000000010000")])  # a null with a payload
@example([bytes.fromhex("800000015000000420000000")])  # a nested scalar header
@example([bytes.fromhex("20000000100000021122")])  # not UTF-8
def test_decode_any_bytes(as_input, guarded, values):
    assert kernel_text(values, as_input, guarded) == ref_text(values)


def test_nesting_limit(as_input, guarded):
    assert kt.MAX_DEPTH == kj.MAX_DEPTH  # text and JSONB: the same limit
    depth = kj.MAX_DEPTH
    ok, deep = (b"[" * depth + b"]" * depth), (b"[" * (depth + 1) + b"]" * (depth + 1))
    status, values = kernel_jsonb([ok], as_input, guarded)
    assert status == kj.OK
    assert kernel_jsonb([b"1", deep], as_input, guarded) == (kt.TOO_DEEP, 1, depth)
    assert kernel_text(values, as_input, guarded) == (kj.OK, [ok.decode()])
    # JSONB one level deeper than the limit: [[...]] wrapped once more by hand
    inner = values[0]
    deeper = struct.pack(">II", kj.ARRAY | 1, kj.E_CONTAINER << 28 | len(inner)) + inner
    one = bytes.fromhex(KNOWN["1"][0])
    assert kernel_text([one, deeper], as_input, guarded) == (kj.TOO_DEEP, 1)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 10 * depth))
    try:
        assert ref_text([deeper]) == (kj.TOO_DEEP, 0)
    finally:
        sys.setrecursionlimit(old)


def test_duplicate_keys_anywhere(as_input, guarded):
    for text in (b'{"a":1,"a":2}', b'[{"x":{"b":1,"c":2,"b":3}}]', b'{"\\u0061":1,"a":2}'):
        assert kernel_jsonb([b"{}", text], as_input, guarded)[:2] == (kt.DUPLICATE_KEY, 1)


def test_unresolved_numbers_are_refused():
    text = b"1.00000000000000011102230246251565404236316680908203125"
    offsets, data = np.array([0, len(text)], np.int64), np.frombuffer(text, np.uint8)
    valid, err = np.ones(1, np.uint8), np.zeros(2, np.int64)
    first, pool_first = np.zeros(2, np.int64), np.zeros(2, np.int64)
    tape = np.zeros((1, kt.TAPE_COLS), np.int64)
    assert kt.fill_tape(offsets, data, valid, 0, first, pool_first, tape,
                        np.zeros(0, np.uint8), err) == 1
    assert tape[0, kt.T_KIND] == kt.K_PENDING
    assert ke.jsonb_sizes(tape, np.zeros(0, np.uint8), first, np.zeros(1, np.int64),
                          np.zeros(1, np.int64), err) == kt.UNRESOLVED


@given(st.lists(st.one_of(st.none(), json_texts()), min_size=1, max_size=8),
       st.integers(1, 12))
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_encode_in_groups(as_input, guarded, values, tape_rows):
    """A small tape: many groups of rows, a tape grown for a row of many values; the
    same JSONB as in one group."""
    want = ref_jsonb(values)
    assume(want[0] == kj.OK)
    assert kernel_jsonb(values, as_input, guarded, tape_rows=tape_rows) == want


def test_bad_arrays_are_refused():
    err = np.zeros(2, np.int64)
    data = np.frombuffer(b"[1]", np.uint8)
    one = np.ones(1, np.uint8)
    tape = np.full((4, kt.TAPE_COLS), UNSET, np.int64)
    for offsets in ([0, 4], [1, 0], [-1, 3]):
        assert kj.text_fill(np.array(offsets, np.int64), data, one, 0, np.zeros(2, np.int64),
                            np.zeros(8, np.uint8), err) == kj.BAD_OFFSETS
        assert kt.fill_tape(np.array(offsets, np.int64), data, one, 0, np.zeros(2, np.int64),
                            np.zeros(2, np.int64), tape, np.zeros(3, np.uint8),
                            err) == kt.BAD_OFFSETS
    offsets = np.array([0, 3], np.int64)
    for row, start, pool_start in ((2, 0, 0), (0, 5, 0), (0, 0, 4), (-1, 0, 0)):
        first = np.array([start, UNSET], np.int64)
        pool_first = np.array([pool_start, UNSET], np.int64)
        assert kt.fill_tape(offsets, data, one, row, first, pool_first, tape,
                            np.zeros(3, np.uint8), err) == kt.BAD_OFFSETS
    # a tape too small for the row: nothing past it written, the row returned
    first, pool_first = np.zeros(2, np.int64), np.zeros(2, np.int64)
    assert kt.fill_tape(offsets, data, one, 0, first, pool_first, tape[:1],
                        np.zeros(3, np.uint8), err) == 0
    assert (tape[1:] == UNSET).all()
    assert kt.fill_tape(offsets, data, one, 0, first, pool_first, tape[:2],
                        np.zeros(3, np.uint8), err) == 1
    assert list(first) == [0, 2] and list(tape[:2, kt.T_KIND]) == [kt.K_ARRAY, kt.K_UINT]
    # a start past the output, a row past the rows
    ok = np.frombuffer(bytes.fromhex("80000001200000025001"), np.uint8)
    offsets = np.array([0, 10], np.int64)
    for row, start in ((0, 6), (2, 0), (-1, 0)):
        out_offsets = np.array([start, UNSET], np.int64)
        assert kj.text_fill(offsets, ok, one, row, out_offsets, np.zeros(5, np.uint8),
                            err) == kj.BAD_OFFSETS
    # too little room: nothing written past it, the row returned
    out = np.full(8, FILL, np.uint8)
    out_offsets = np.array([0, UNSET], np.int64)
    assert kj.text_fill(offsets, ok, one, 0, out_offsets, out[:2], err) == 0
    assert (out[2:] == FILL).all() and out_offsets[1] == UNSET
    assert kj.text_fill(offsets, ok, one, 0, out_offsets, out[:3], err) == 1
    assert out[:3].tobytes() == b"[1]" and out_offsets[1] == 3
