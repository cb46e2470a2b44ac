"""A protobuf message as Rust prints it: the pretty ``Debug`` (``{:#?}``) of the struct
prost generates for it, which is what pylance gives as a page's ``encoding``.

The text follows from the message's descriptor alone (no per-message code):

- a message is ``Name {`` and one ``field: value,`` line per field, 4 spaces deeper,
  then ``}``; a message without fields is its bare name. Its fields come in
  declaration order, except that the real ``oneof`` groups follow all other fields
  (prost declares them last), each as ``Option`` of its ``Variant(value)``;
- a singular message field, and a proto3 ``optional`` scalar, is ``Some(...)`` or
  ``None``; a repeated field ``[ ... ]`` (``[]`` when empty); a bracketed item sits
  on its own line, 4 spaces deeper, with a trailing comma;
- an enum value is its variant: the value's name in UpperCamelCase, the enum's
  name stripped from its front as prost does (a number prost has no variant for
  prints as that number); bools ``true``/``false``, strings quoted with Rust's
  escapes, bytes as a byte string ``b"..."`` (prost's ``Bytes`` fields, which is
  how lance builds its encoding messages).

Examples
--------
>>> from lancenb.encodings import pb
>>> print(render(pb.flat(32)))
CompressiveEncoding {
    compression: Some(
        Flat(
            Flat {
                bits_per_value: 32,
                data: None,
            },
        ),
    ),
}
"""

from __future__ import annotations

import re

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FieldDescriptor as _FD

__all__ = ["render", "page_encoding", "upper_camel", "snake"]

_PAD = "    "
_INTS = frozenset({_FD.TYPE_INT32, _FD.TYPE_INT64, _FD.TYPE_UINT32, _FD.TYPE_UINT64,
                   _FD.TYPE_SINT32, _FD.TYPE_SINT64, _FD.TYPE_FIXED32, _FD.TYPE_FIXED64,
                   _FD.TYPE_SFIXED32, _FD.TYPE_SFIXED64})


def _words(name: str) -> list[str]:
    """``name`` cut into words as Rust's ``heck`` crate cuts them (prost names its
    types, fields and variants with it): at non-alphanumerics, before an upper-case
    letter that follows a lower-case one, and before the last capital of a run
    followed by a lower-case letter (``HTTPServer`` -> ``HTTP``, ``Server``)."""
    out = []
    for part in re.split(r"[^0-9A-Za-z]+", name):
        start, mode = 0, None
        for i, c in enumerate(part):
            nxt = part[i + 1] if i + 1 < len(part) else ""
            nmode = "l" if c.islower() else "u" if c.isupper() else mode
            if nxt and nmode == "l" and nxt.isupper():
                out.append(part[start:i + 1])
                start = i + 1
            elif nxt and mode == "u" and c.isupper() and nxt.islower():
                if i > start:
                    out.append(part[start:i])
                start = i
            mode = nmode
        if part[start:]:
            out.append(part[start:])
    return out


def upper_camel(name: str) -> str:
    """``heck``'s UpperCamelCase: ``REPDEF_ALL_VALID_ITEM`` -> ``RepdefAllValidItem``."""
    return "".join(w[:1].upper() + w[1:].lower() for w in _words(name))


def snake(name: str) -> str:
    """``heck``'s snake_case: ``bitsPerValue`` -> ``bits_per_value``."""
    return "_".join(w.lower() for w in _words(name))


def _variant(enum_name: str, value_name: str) -> str:
    """prost's variant name: the value in UpperCamelCase without the enum's
    UpperCamelCase name in front, when what is left starts with a capital."""
    enum_c, value_c = upper_camel(enum_name), upper_camel(value_name)
    rest = value_c[len(enum_c):] if value_c.startswith(enum_c) else ""
    return rest if rest[:1].isupper() else value_c


_PLANS: dict = {}


def _plan(desc):
    """``(struct name, [(rust field name, kind, field or oneof)])`` of a message type,
    in the order prost declares the struct's fields."""
    plan = _PLANS.get(desc)
    if plan is not None:
        return plan
    proto = descriptor_pb2.DescriptorProto()
    desc.CopyToProto(proto)
    optional = {f.name for f in proto.field if f.proto3_optional}
    fields, oneofs = [], []
    for f in desc.fields:
        if f.name in optional or f.containing_oneof is None:
            kind = "opt" if f.name in optional else "field"
            fields.append((snake(f.name), kind, f))
    for o in desc.oneofs:
        if not all(f.name in optional for f in o.fields):  # not a proto3 optional's own
            oneofs.append((snake(o.name), "oneof", o))
    plan = (upper_camel(desc.name), fields + oneofs)
    _PLANS[desc] = plan
    return plan


def _str(s: str) -> str:
    """Rust's Debug of a string: quoted, with ``\\``, ``"``, tab, CR, LF and NUL
    escaped and other control characters as ``\\u{..}``."""
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\0":
            out.append("\\0")
        elif ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0:
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


_BYTE_TEXT = {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x5C: "\\\\", 0x22: '\\"', 0x00: "\\0"}
_BYTES = [_BYTE_TEXT.get(b, chr(b) if 0x20 <= b < 0x7F else f"\\x{b:02x}") for b in range(256)]


def _bytes(b: bytes) -> str:
    """The ``bytes`` crate's Debug of ``Bytes``: ``b"..."`` with printable ASCII as
    itself, ``\\n \\r \\t \\\\ \\" \\0`` escaped and any other byte as ``\\xNN``."""
    return 'b"' + "".join([_BYTES[x] for x in b]) + '"'


def _float(x: float, f32: bool) -> str:
    """Rust's Debug of a float: the shortest digits that read back, ``.0`` on whole
    numbers, in exponent form below 1e-4 and from 1e16 on (``1e-5``, ``1.5e16``)."""
    import numpy as np  # lazy: no encoding message has a float field today

    v = np.float32(x) if f32 else np.float64(x)
    if np.isnan(v):
        return "NaN"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v != 0 and not 1e-4 <= abs(float(v)) < 1e16:
        m, e = np.format_float_scientific(v, unique=True, trim="-").split("e")
        return f"{m}e{int(e)}"
    return np.format_float_positional(v, unique=True, trim="0")


def _scalar(f, v) -> str:
    t = f.type
    if t in _INTS:
        return str(v)
    if t == _FD.TYPE_BOOL:
        return "true" if v else "false"
    if t == _FD.TYPE_ENUM:
        ev = f.enum_type.values_by_number.get(v)
        return _variant(f.enum_type.name, ev.name) if ev is not None else str(v)
    if t == _FD.TYPE_STRING:
        return _str(v)
    if t == _FD.TYPE_BYTES:
        return _bytes(v)
    if t in (_FD.TYPE_FLOAT, _FD.TYPE_DOUBLE):
        return _float(v, t == _FD.TYPE_FLOAT)
    raise TypeError(f"protobuf field {f.full_name}: no Rust Debug form for type {t}")


def _wrap(name: str, inner: str, ind: str) -> str:
    """A one-item tuple struct (``Some``, a oneof variant) around ``inner`` printed at
    indentation ``ind + 4``."""
    return f"{name}(\n{ind}{_PAD}{inner},\n{ind})"


def _value(f, v, ind: str) -> str:
    return _message(v, ind) if f.type in (_FD.TYPE_MESSAGE, _FD.TYPE_GROUP) else _scalar(f, v)


def _message(msg, ind: str) -> str:
    name, fields = _plan(msg.DESCRIPTOR)
    if not fields:
        return name
    inner = ind + _PAD
    out = [name, " {\n"]
    for rname, kind, f in fields:
        if kind == "oneof":
            which = msg.WhichOneof(f.name)
            if which is None:
                text = "None"
            else:
                vf = f.containing_type.fields_by_name[which]
                text = _wrap("Some", _wrap(upper_camel(which),
                                           _value(vf, getattr(msg, which), inner + 2 * _PAD),
                                           inner + _PAD), inner)
        elif f.message_type is not None and f.message_type.GetOptions().map_entry:
            text = _map(f, getattr(msg, f.name), inner)
        elif f.is_repeated:
            items = getattr(msg, f.name)
            if not len(items):
                text = "[]"
            else:
                deeper = inner + _PAD
                text = "[\n" + "".join([f"{deeper}{_value(f, x, deeper)},\n" for x in items]) \
                    + inner + "]"
        elif kind == "opt" or f.message_type is not None:
            text = (_wrap("Some", _value(f, getattr(msg, f.name), inner + _PAD), inner)
                    if msg.HasField(f.name) else "None")
        else:
            text = _scalar(f, getattr(msg, f.name))
        out.append(f"{inner}{rname}: {text},\n")
    out.append(ind + "}")
    return "".join(out)


def _map(f, m, ind: str) -> str:
    """A map field as Rust prints a map (``{ k: v, }``), keys in sorted order (prost's
    default ``HashMap`` has no fixed order: no encoding message has a map)."""
    if not len(m):
        return "{}"
    kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
    deeper = ind + _PAD
    rows = [f"{deeper}{_scalar(kf, k)}: {_value(vf, m[k], deeper)},\n" for k in sorted(m)]
    return "{\n" + "".join(rows) + ind + "}"


def render(msg) -> str:
    """``format!("{:#?}", msg)`` of the prost struct of protobuf message ``msg``."""
    return _message(msg, "")


def page_encoding(msg) -> str:
    """pylance's ``LancePageMetadata.encoding`` of a page whose decoded encoding
    message is ``msg`` (a 2.0 ``ArrayEncoding`` or a 2.1+ ``PageLayout``)."""
    return render(msg)
