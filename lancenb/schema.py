"""pylance's ``lance.schema``: :class:`LanceSchema` (a schema with Lance's field ids)
and the JSON form of Arrow schemas (:func:`schema_to_json`, :func:`json_to_schema`).

All three live in the dataset layer; this module gives them pylance's module name.

Examples
--------
>>> import pyarrow as pa
>>> json_to_schema(schema_to_json(pa.schema([("a", pa.int8())])))
a: int8
"""

from lancenb.dataset.descriptions import LanceSchema
from lancenb.file.schema_json import json_to_schema, schema_to_json

__all__ = ["LanceSchema", "schema_to_json", "json_to_schema"]
