"""The Rust pretty-Debug renderer behind ``LancePageMetadata.encoding``
(:mod:`lancenb.encodings.rust_debug`) on hand-built messages: the rules prost's
generated ``Debug`` follows (tests/compat/test_page_encoding_interop.py checks the
whole text against pylance's)."""

import numpy as np
import pyarrow as pa
import pytest

from lancenb._proto import encodings_v2_0_pb2 as e20
from lancenb._proto import encodings_v2_1_pb2 as e21
from lancenb.encodings import pb
from lancenb.encodings.rust_debug import _bytes, _float, render, snake, upper_camel
from lancenb.file import LanceFileReader, LanceFileWriter


@pytest.mark.parametrize("name,camel,snake_", [
    ("REPDEF_ALL_VALID_ITEM", "RepdefAllValidItem", "repdef_all_valid_item"),
    ("COMPRESSION_ALGORITHM_LZ4", "CompressionAlgorithmLz4", "compression_algorithm_lz4"),
    ("page", "Page", "page"),
    ("inline_bitpacking", "InlineBitpacking", "inline_bitpacking"),
    ("HTTPServer", "HttpServer", "http_server"),
    ("bitsPerValue", "BitsPerValue", "bits_per_value"),
    ("FSST", "Fsst", "fsst"),
])
def test_names_as_heck_makes_them(name, camel, snake_):
    assert upper_camel(name) == camel and snake(name) == snake_


def test_message_oneof_and_nested_option():
    assert render(pb.flat(32)) == (
        "CompressiveEncoding {\n"
        "    compression: Some(\n"
        "        Flat(\n"
        "            Flat {\n"
        "                bits_per_value: 32,\n"
        "                data: None,\n"
        "            },\n"
        "        ),\n"
        "    ),\n"
        "}")


def test_empty_message_unset_oneof_enum_and_repeated():
    assert render(e20.SimpleStruct()) == "SimpleStruct"
    assert render(e21.CompressiveEncoding()) == "CompressiveEncoding {\n    compression: None,\n}"
    # an enum value prints as its variant (no enum-name prefix to strip here)...
    assert "scheme: CompressionAlgorithmZstd," in render(e21.BufferCompression(scheme=2))
    assert "buffer_type: File," in render(e20.Buffer(buffer_type=2))
    # ... and a number prost has no variant for as the number
    assert "scheme: 9," in render(e21.BufferCompression(scheme=9))
    m = e21.MiniBlockLayout(layers=[1, 3])
    text = render(m)
    assert "    layers: [\n        RepdefAllValidItem,\n        RepdefNullableItem,\n    ],\n" \
        in text
    assert "    rep_compression: None,\n" in text and "    has_large_chunk: false,\n" in text
    assert "layers: []," in render(e21.MiniBlockLayout())


def test_proto3_optional_is_an_option_in_declaration_order():
    text = render(e21.ConstantLayout(inline_value=b"ab"))
    assert text.startswith("ConstantLayout {\n    layers: [],\n    inline_value: Some(\n"
                           "        b\"ab\",\n    ),\n")
    assert "inline_value: None," in render(e21.ConstantLayout())
    assert "level: Some(\n        -3,\n    )," in render(e21.BufferCompression(level=-3))


def test_oneof_fields_come_after_the_others():
    text = render(e21.FullZipLayout(bits_rep=1, bits_per_value=8, num_items=3))
    names = [ln.strip().split(":")[0] for ln in text.splitlines()
             if ln.startswith("    ") and ln[4] != " " and ":" in ln]
    # declared: bits_rep, bits_def, {bits_per_value | bits_per_offset}, num_items, ...
    assert names == ["bits_rep", "bits_def", "num_items", "num_visible_items",
                     "value_compression", "layers", "details"]
    assert "details: Some(\n        BitsPerValue(\n            8,\n        ),\n    )," in text


def test_bytes_and_strings_escape_as_rust_does():
    assert _bytes(b'\x00a"\\\n\r\t\x7f\xff ~') == 'b"\\0a\\"\\\\\\n\\r\\t\\x7f\\xff ~"'
    assert 'scheme: "zs\\"td\\n",' in render(e20.Compression(scheme='zs"td\n'))


@pytest.mark.parametrize("x,f32,text", [
    (1.0, False, "1.0"), (0.5, False, "0.5"), (1e-5, False, "1e-5"), (1.5e16, False, "1.5e16"),
    (-0.0, False, "-0.0"), (1e15, False, "1000000000000000.0"), (0.1, True, "0.1"),
    (float("nan"), False, "NaN"), (float("-inf"), False, "-inf"),
])
def test_floats_as_rust_debug(x, f32, text):
    assert _float(x, f32) == text


def test_reader_keeps_both_forms(tmp_path):
    path = str(tmp_path / "f.lance")
    t = pa.table({"x": pa.array(np.arange(1000, dtype=np.int64))})
    with LanceFileWriter(path, t.schema, version="2.1") as w:
        w.write_batch(t)
    page = LanceFileReader(path).metadata().columns[0].pages[0]
    assert page.description.startswith("mini_block:")
    assert page.encoding == render(page.layout)
    assert page.encoding.startswith("PageLayout {\n    layout: Some(\n        MiniBlockLayout(")
