"""``leaf_ids`` (a data file's column field ids) takes a short cut for schemas without
nesting; it gives the ids the full rebuild (``fields_to_schema`` then
``data_file_columns``) gives, flat or nested, in every writable version."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lancenb.dataset.write.insert import leaf_ids
from lancenb.file.columns import data_file_columns
from lancenb.file.schema import fields_to_schema, schema_to_fields
from lancenb.file.version import FileVersion

SCHEMAS = [
    pa.schema([("a", pa.int64()), ("b", pa.string()), ("c", pa.float32())]),
    pa.schema([("d", pa.dictionary(pa.int32(), pa.string())),
               ("v", pa.list_(pa.float32(), 4)), ("t", pa.timestamp("us"))]),
    pa.schema([("a", pa.int64()), ("s", pa.struct([("x", pa.int32()), ("y", pa.string())])),
               ("l", pa.list_(pa.int32())), ("e", pa.struct([]))]),
    pa.schema([pa.field("p", pa.struct([("x", pa.int32()), ("y", pa.int32())]),
                        metadata={"lance-encoding:packed": "true"}), ("z", pa.int8())]),
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
@pytest.mark.parametrize("version", [FileVersion.V2_0, FileVersion.V2_1, FileVersion.V2_2])
def test_leaf_ids_match_the_full_rebuild(schema, version):
    fields, _ = schema_to_fields(schema)
    _, tops = fields_to_schema(fields)
    assert leaf_ids(fields, version) == [c.field_id for c in data_file_columns(tops, version)]
