"""The one place protobuf descriptions are built and unwrapped.

Encoders describe their output with these helpers; decoders are constructed from
the messages alone. ``Any`` wrappers use the reference's slash-only type URLs
(``/lance.encodings21.PageLayout``).
"""

from __future__ import annotations

from google.protobuf import any_pb2
from google.protobuf.message import DecodeError

from lancenb._proto import encodings_v2_0_pb2 as e20
from lancenb._proto import encodings_v2_1_pb2 as e21
from lancenb.errors import CorruptFileError, NotSupportedError

__all__ = ["e21", "e20", "flat", "variable", "pack_any", "unpack_any", "describe",
           "PAGE_LAYOUT_URL", "COLUMN_ENCODING_URL", "ARRAY_ENCODING_URL",
           "column_encoding_bytes"]

PAGE_LAYOUT_URL = "/" + e21.PageLayout.DESCRIPTOR.full_name
ARRAY_ENCODING_URL = "/" + e20.ArrayEncoding.DESCRIPTOR.full_name
COLUMN_ENCODING_URL = "/" + e20.ColumnEncoding.DESCRIPTOR.full_name


def flat(bits: int) -> e21.CompressiveEncoding:
    """A ``Flat`` description of ``bits``-bit values.

    Examples
    --------
    >>> flat(32).flat.bits_per_value
    32
    """
    return e21.CompressiveEncoding(flat=e21.Flat(bits_per_value=bits))


def variable(offset_bits: int) -> e21.CompressiveEncoding:
    """A ``Variable`` description whose offsets are ``Flat(offset_bits)``."""
    return e21.CompressiveEncoding(variable=e21.Variable(offsets=flat(offset_bits)))


def pack_any(msg) -> bytes:
    """Serialize ``msg`` inside a ``google.protobuf.Any`` with a slash-only URL."""
    return any_pb2.Any(type_url="/" + msg.DESCRIPTOR.full_name,
                       value=msg.SerializeToString()).SerializeToString()


def column_encoding_bytes() -> bytes:
    """The column-level encoding every normal 2.1 column carries (``values = {}``)."""
    ce = e20.ColumnEncoding()
    ce.values.SetInParent()
    return pack_any(ce)


def unpack_any(data: bytes, where: str) -> tuple[str, bytes]:
    """``(type name without slash or host, value bytes)`` of a serialized Any."""
    a = any_pb2.Any()
    try:
        a.ParseFromString(bytes(data))
    except DecodeError as e:
        raise CorruptFileError(f"{where}: encoding is not a valid protobuf Any: {e}") from e
    return a.type_url.rsplit("/", 1)[-1], a.value


def parse(cls, data: bytes, where: str):
    """Parse ``data`` as a ``cls`` message; malformed bytes raise ``CorruptFileError``
    naming ``where``.
    """
    msg = cls()
    try:
        msg.ParseFromString(bytes(data))
    except (DecodeError, RecursionError) as e:
        raise CorruptFileError(f"{where}: malformed {cls.DESCRIPTOR.name} protobuf: {e}") from e
    return msg


def check_page(page, file_size: int, where: str) -> None:
    """Check a ``ColumnMetadata.Page``: one size per buffer offset, every buffer inside
    the file, a direct (inline) encoding."""
    if len(page.buffer_offsets) != len(page.buffer_sizes):
        raise CorruptFileError(f"{where}: {len(page.buffer_offsets)} buffer offsets but "
                               f"{len(page.buffer_sizes)} sizes")
    for o, s in zip(page.buffer_offsets, page.buffer_sizes):
        if o + s > file_size:
            raise CorruptFileError(f"{where}: buffer at offset {o} with size {s} runs past "
                                   f"the end of the file ({file_size} bytes)")
    if page.encoding.WhichOneof("location") != "direct":
        raise NotSupportedError(f"{where}: only direct page encodings are supported")


def describe(enc) -> str:
    """A compact name for a CompressiveEncoding tree, e.g. ``fsst(variable(flat(32)))``."""
    if enc is None:
        return "none"
    kind = enc.WhichOneof("compression")
    if kind is None:
        return "unset"
    inner = getattr(enc, kind)
    if kind == "flat":
        return f"flat({inner.bits_per_value})"
    subs = [f.name for f, _ in inner.ListFields()
            if f.message_type is not None and f.message_type.name == "CompressiveEncoding"]
    parts = [describe(getattr(inner, s)) for s in subs]
    return f"{kind}({', '.join(parts)})" if parts else kind
