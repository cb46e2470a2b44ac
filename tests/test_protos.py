"""Checks for the protobuf definitions in ``protos/`` and the generated ``lancenb._proto``.

1. The committed generated modules must match a fresh run of ``scripts/gen_protos.py``.
2. Known bytes produced by the reference implementation (pylance 14) must decode, and
   our messages must encode the field numbers / wire types the reference uses.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from google.protobuf import any_pb2, empty_pb2

from lancenb._proto import encodings_v2_0_pb2 as enc20
from lancenb._proto import encodings_v2_1_pb2 as enc21
from lancenb._proto import file2_pb2, file_pb2, rowids_pb2, table_pb2, transaction_pb2

REPO_ROOT = Path(__file__).resolve().parent.parent
GENERATED_DIR = REPO_ROOT / "lancenb" / "_proto"
GEN_SCRIPT = REPO_ROOT / "scripts" / "gen_protos.py"


def _load_generator():
    spec = importlib.util.spec_from_file_location("_gen_protos", GEN_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _generated_files(directory: Path) -> dict[str, bytes]:
    names = [p for p in directory.iterdir() if p.suffix in (".py", ".pyi")]
    return {p.name: p.read_bytes() for p in sorted(names)}


# ---------------------------------------------------------------------------
# 1. generated code is up to date


def test_generated_modules_are_up_to_date(tmp_path: Path) -> None:
    gen = _load_generator()
    assert gen.main(["--out", str(tmp_path)]) == 0
    fresh = _generated_files(tmp_path)
    committed = _generated_files(GENERATED_DIR)
    hint = (
        "lancenb/_proto is stale: run `python scripts/gen_protos.py` "
        "(with the pinned grpcio-tools dev dependency) and commit the result"
    )
    assert sorted(committed) == sorted(fresh), hint
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"{hint}; differing files: {stale}"


def test_generation_is_deterministic(tmp_path: Path) -> None:
    gen = _load_generator()
    gen.write(tmp_path / "a")
    gen.write(tmp_path / "b")
    assert _generated_files(tmp_path / "a") == _generated_files(tmp_path / "b")


def test_generated_modules_use_package_imports() -> None:
    for name, data in _generated_files(GENERATED_DIR).items():
        for line in data.decode().splitlines():
            assert not (line.startswith("import ") and "_pb2" in line), (name, line)


# ---------------------------------------------------------------------------
# 2. wire compatibility


@pytest.mark.parametrize(
    ("message", "full_name"),
    [
        (enc21.PageLayout, "lance.encodings21.PageLayout"),
        (enc20.ColumnEncoding, "lance.encodings.ColumnEncoding"),
        (enc20.ArrayEncoding, "lance.encodings.ArrayEncoding"),
        (file2_pb2.ColumnMetadata, "lance.file.v2.ColumnMetadata"),
        (file_pb2.Field, "lance.file.Field"),
        (file_pb2.FileDescriptor, "lance.file.FileDescriptor"),
        (table_pb2.Manifest, "lance.table.Manifest"),
        (table_pb2.IndexSection, "lance.table.IndexSection"),
        (transaction_pb2.Transaction, "lance.table.Transaction"),
        (rowids_pb2.RowIdSequence, "lance.table.RowIdSequence"),
    ],
)
def test_full_names(message, full_name: str) -> None:
    # The full name is what goes into Any type URLs, so it must match exactly.
    assert message.DESCRIPTOR.full_name == full_name


def test_column_encoding_values_bytes() -> None:
    # Every plain column carries ColumnEncoding{values = Empty} = 0a 00.
    ce = enc20.ColumnEncoding(values=empty_pb2.Empty())
    assert ce.SerializeToString() == b"\x0a\x00"
    assert enc20.ColumnEncoding.FromString(b"\x0a\x00").WhichOneof("column_encoding") == "values"


def test_any_type_url_has_only_a_slash() -> None:
    layout = enc21.PageLayout(
        mini_block_layout=enc21.MiniBlockLayout(
            value_compression=enc21.CompressiveEncoding(flat=enc21.Flat(bits_per_value=32)),
            layers=[enc21.REPDEF_ALL_VALID_ITEM],
            num_buffers=1,
            num_items=3,
        )
    )
    packed = any_pb2.Any()
    packed.Pack(layout, type_url_prefix="/")
    assert packed.type_url == "/lance.encodings21.PageLayout"
    direct = file2_pb2.Encoding(
        direct=file2_pb2.DirectEncoding(encoding=packed.SerializeToString())
    )
    page = file2_pb2.ColumnMetadata.Page(length=3, encoding=direct, priority=0)
    back = file2_pb2.ColumnMetadata.Page.FromString(page.SerializeToString())
    inner = any_pb2.Any.FromString(back.encoding.direct.encoding)
    out = enc21.PageLayout()
    assert inner.Unpack(out)
    assert out == layout


def test_field_parent_id_minus_one_is_ten_byte_varint() -> None:
    data = file_pb2.Field(parent_id=-1).SerializeToString()
    # tag (4 << 3 | 0) then a 10-byte two's-complement varint
    assert data == b"\x20" + b"\xff" * 9 + b"\x01"
    assert file_pb2.Field.FromString(data).parent_id == -1


def test_field_numbers_of_field() -> None:
    numbers = {f.name: f.number for f in file_pb2.Field.DESCRIPTOR.fields}
    assert numbers == {
        "type": 1,
        "name": 2,
        "id": 3,
        "parent_id": 4,
        "logical_type": 5,
        "nullable": 6,
        "encoding": 7,
        "dictionary": 8,
        "extension_name": 9,
        "metadata": 10,
        "unenforced_primary_key": 12,
        "unenforced_primary_key_position": 13,
        "unenforced_clustering_key_position": 15,
    }
    assert dict(file_pb2.Encoding.items()) == {
        "NONE": 0,
        "PLAIN": 1,
        "VAR_BINARY": 2,
        "DICTIONARY": 3,
        "RLE": 4,
    }


def test_row_id_sequence_bytes() -> None:
    # Inline row ids of a fragment of 10000 rows, as written by pylance.
    data = bytes.fromhex("0a050a0310904e")
    seq = rowids_pb2.RowIdSequence.FromString(data)
    assert len(seq.segments) == 1
    seg = seq.segments[0]
    assert seg.WhichOneof("segment") == "range"
    assert (seg.range.start, seg.range.end) == (0, 10000)
    assert seq.SerializeToString() == data


def test_manifest_transaction_section_field_23() -> None:
    m = table_pb2.Manifest(version=1, transaction_section=148)
    data = m.SerializeToString()
    # field 23, varint: tag 0xb8 0x01, value 148 = 0x94 0x01
    assert b"\xb8\x01\x94\x01" in data
    back = table_pb2.Manifest.FromString(data)
    assert back.HasField("transaction_section") and back.transaction_section == 148
    assert not back.HasField("transaction_section_deprecated")

    # explicit presence: an offset of 0 is still written
    zero = table_pb2.Manifest(transaction_section=0).SerializeToString()
    assert zero == b"\xb8\x01\x00"

    # older manifests put the offset in field 21 (tag 0xa8 0x01)
    old = table_pb2.Manifest.FromString(b"\xa8\x01\x94\x01")
    assert old.HasField("transaction_section_deprecated")
    assert old.transaction_section_deprecated == 148
    assert not old.HasField("transaction_section")


def test_manifest_optional_presence() -> None:
    # max_fragment_id (11) and index_section (6) keep explicit presence
    m = table_pb2.Manifest(max_fragment_id=0, index_section=0)
    assert m.SerializeToString() == b"\x30\x00\x58\x00"
    assert not table_pb2.Manifest().HasField("max_fragment_id")


def test_manifest_field_numbers() -> None:
    numbers = {f.name: f.number for f in table_pb2.Manifest.DESCRIPTOR.fields}
    assert numbers == {
        "fields": 1,
        "fragments": 2,
        "version": 3,
        "version_aux_data": 4,
        "schema_metadata": 5,
        "index_section": 6,
        "timestamp": 7,
        "tag": 8,
        "reader_feature_flags": 9,
        "writer_feature_flags": 10,
        "max_fragment_id": 11,
        "transaction_file": 12,
        "writer_version": 13,
        "next_row_id": 14,
        "data_format": 15,
        "config": 16,
        "base_paths": 18,
        "table_metadata": 19,
        "branch": 20,
        "transaction_section_deprecated": 21,
        "transaction_section": 23,
    }


def test_data_file_packed_fields() -> None:
    df = table_pb2.DataFile(path="x.lance", fields=[0, 2], column_indices=[0, 1])
    data = df.SerializeToString()
    assert b"\x12\x02\x00\x02" in data  # fields = 2, packed
    assert b"\x1a\x02\x00\x01" in data  # column_indices = 3, packed
    frag = table_pb2.DataFragment(id=0, files=[df], physical_rows=3)
    assert table_pb2.DataFragment.FromString(frag.SerializeToString()) == frag


def test_index_metadata_files_field_10() -> None:
    # pylance 14 lists the index files in field 10 as {path = 1, size_bytes = 2}
    data = b"\x52\x15\x0a\x0fpage_data.lance\x10\x85\x89\x02"
    meta = table_pb2.IndexMetadata.FromString(data)
    assert [(f.path, f.size_bytes) for f in meta.files] == [("page_data.lance", 33925)]


def test_transaction_operation_numbers() -> None:
    oneof = transaction_pb2.Transaction.DESCRIPTOR.oneofs_by_name["operation"]
    assert {f.name: f.number for f in oneof.fields} == {
        "append": 100,
        "delete": 101,
        "overwrite": 102,
        "create_index": 103,
        "rewrite": 104,
        "merge": 105,
        "restore": 106,
        "reserve_fragments": 107,
        "update": 108,
        "project": 109,
        "update_config": 110,
        "data_replacement": 111,
        "update_mem_wal_state": 112,
        "clone": 113,
        "update_bases": 114,
    }
    txn = transaction_pb2.Transaction(
        read_version=0,
        uuid="00000000-0000-0000-0000-000000000000",
        overwrite=transaction_pb2.Transaction.Overwrite(schema=[file_pb2.Field(name="a")]),
    )
    data = txn.SerializeToString()
    assert b"\xb2\x06" in data  # tag of field 102, length-delimited
    assert transaction_pb2.Transaction.FromString(data).WhichOneof("operation") == "overwrite"


def test_mini_block_has_large_chunk_field_10() -> None:
    data = enc21.MiniBlockLayout(has_large_chunk=True).SerializeToString()
    assert data == b"\x50\x01"
    assert enc21.MiniBlockLayout.FromString(b"\x50\x01").has_large_chunk


def test_constant_layout_is_page_layout_member_2() -> None:
    # Bytes as written by pylance 14. 2.2 constant int32 page:
    # {layers: [ALL_VALID_ITEM], inline_value: 07000000}
    layout = enc21.PageLayout(
        constant_layout=enc21.ConstantLayout(
            layers=[enc21.REPDEF_ALL_VALID_ITEM], inline_value=b"\x07\x00\x00\x00"
        )
    )
    data = layout.SerializeToString()
    assert data == b"\x12\x09\x2a\x01\x01\x32\x04\x07\x00\x00\x00"
    # An all-null page (only layers = [NULLABLE_ITEM]; identical to 2.1's
    # AllNullLayout) decodes as a constant layout without a value.
    old = enc21.PageLayout.FromString(b"\x12\x03\x2a\x01\x03")
    assert old.WhichOneof("layout") == "constant_layout"
    assert list(old.constant_layout.layers) == [enc21.REPDEF_NULLABLE_ITEM]
    assert not old.constant_layout.HasField("inline_value")


def test_compressive_encoding_numbers() -> None:
    oneof = enc21.CompressiveEncoding.DESCRIPTOR.oneofs_by_name["compression"]
    assert [(f.name, f.number) for f in oneof.fields] == [
        ("flat", 1),
        ("variable", 2),
        ("constant", 3),
        ("out_of_line_bitpacking", 4),
        ("inline_bitpacking", 5),
        ("fsst", 6),
        ("dictionary", 7),
        ("rle", 8),
        ("byte_stream_split", 9),
        ("general", 10),
        ("fixed_size_list", 11),
        ("packed_struct", 12),
        ("variable_packed_struct", 13),
    ]
    layouts = enc21.PageLayout.DESCRIPTOR.oneofs_by_name["layout"]
    assert [(f.name, f.number) for f in layouts.fields] == [
        ("mini_block_layout", 1),
        ("constant_layout", 2),
        ("full_zip_layout", 3),
        ("blob_layout", 4),
    ]
    assert dict(enc21.RepDefLayer.items()) == {
        "REPDEF_UNSPECIFIED": 0,
        "REPDEF_ALL_VALID_ITEM": 1,
        "REPDEF_ALL_VALID_LIST": 2,
        "REPDEF_NULLABLE_ITEM": 3,
        "REPDEF_NULLABLE_LIST": 4,
        "REPDEF_EMPTYABLE_LIST": 5,
        "REPDEF_NULL_AND_EMPTY_LIST": 6,
    }


def test_array_encoding_v2_0_nullable_flat() -> None:
    # 2.0 int32 page without nulls, bytes as written by pylance 14:
    # nullable{no_nulls{values: flat{32, buffer{}}}}
    enc = enc20.ArrayEncoding(
        nullable=enc20.Nullable(
            no_nulls=enc20.Nullable.NoNull(
                values=enc20.ArrayEncoding(
                    flat=enc20.Flat(bits_per_value=32, buffer=enc20.Buffer())
                )
            )
        )
    )
    data = enc.SerializeToString()
    assert data == bytes.fromhex("120a0a080a060a0408201200")
    assert enc20.ArrayEncoding.FromString(data) == enc
