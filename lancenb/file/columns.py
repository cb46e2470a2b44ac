"""Which field owns each column of a data file: the one field-to-column mapping.

A Lance data file stores a schema's fields in columns; which fields own a column
depends on the file version and on the layout of each field:

* 2.1 and 2.2: the *leaves* own columns, in pre-order. Structs, lists, large lists,
  maps (``entries: struct<key, value>``) and fixed-size lists of structs (2.2) are layers
  that own no column; their children are walked. A field stored as one column whole is a
  leaf even though it has children: a packed struct (``lance-encoding:packed``) and a blob
  v2 struct (2.2: the dataset field with extension ``lance.blob.v2``, or the data file's
  struct marked ``lance-encoding:blob``).
* 2.0: *every* field owns a column, in pre-order (a struct its header, a list its
  offsets), except the children of a field stored whole: a packed struct and a
  fixed-size list (of structs) own one column and their children none.

Primitive types, fixed-size lists of primitives, dictionaries, blob v1 columns and
empty structs are leaves in every version.

The same mapping gives a dataset's ``DataFile.fields`` (field id per column) and
``column_indices`` (``0..n-1``), the file reader's first column of each top-level field
and the column names ``inspect`` prints. pylance 14 writes the same lists; for example
``a: int32, p: struct<x, y> (packed), z: int64`` has fields ``a=0, p=1, x=2, y=3, z=4``
and its 2.1 data files list the fields ``[0, 1, 4]`` in columns ``[0, 1, 2]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from lancenb.encodings.config import is_packed
from lancenb.file.schema import LanceField
from lancenb.io.pools import module_lock

__all__ = ["ColumnField", "data_file_columns", "columns_per_field", "stored_whole",
           "BLOB_V2_EXTENSION"]

#: The Arrow extension name pylance 14 gives a 2.2 blob column in a dataset's schema
#: (a struct of ``data: large_binary, uri: string`` stored as one column).
BLOB_V2_EXTENSION = b"lance.blob.v2"


@dataclass(frozen=True)
class ColumnField:
    """One column of a data file: the field that owns it.

    ``column`` counts from 0 in the file; ``field_id`` is the owning field's id;
    ``top`` the index of its top-level field; ``path`` its names from the top-level
    field joined by ``"."`` (``"s.x"``, ``"l.item"``).
    """

    column: int
    field_id: int
    top: int
    path: str


def stored_whole(lf: LanceField) -> bool:
    """Whether a field with children is stored as one column (packed or blob v2 struct)."""
    t = lf.arrow.type
    if not pa.types.is_struct(t) or t.num_fields == 0:
        return False
    md = lf.arrow.metadata or {}
    return (is_packed(lf.arrow) or md.get(b"ARROW:extension:name") == BLOB_V2_EXTENSION
            or b"lance-encoding:blob" in md)


def _is_v2_0(version) -> bool:
    return str(getattr(version, "label", version)) == "2.0"


def _walk(lf: LanceField, v20: bool, top: int, prefix: str, out: list) -> None:
    path = prefix + lf.name
    if not lf.children or stored_whole(lf):
        out.append(ColumnField(len(out), lf.id, top, path))
        return
    if v20:
        out.append(ColumnField(len(out), lf.id, top, path))
        if pa.types.is_fixed_size_list(lf.arrow.type):
            return  # one column for the whole list, its struct items included
    for c in lf.children:
        _walk(c, v20, top, path + ".", out)


def data_file_columns(tops: list[LanceField], version) -> list[ColumnField]:
    """The columns of a data file holding the fields ``tops`` (a schema's top-level
    fields, as :func:`~lancenb.file.schema.schema_to_fields` or
    :func:`~lancenb.file.schema.fields_to_schema` return them), in column order.

    ``version`` is a :class:`~lancenb.file.version.FileVersion` or its label.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from lancenb.file.schema import schema_to_fields
    >>> packed = {"lance-encoding:packed": "true"}
    >>> s = pa.schema([pa.field("a", pa.int32()),
    ...                pa.field("p", pa.struct([("x", pa.int8())]), metadata=packed),
    ...                pa.field("z", pa.int64())])
    >>> [c.field_id for c in data_file_columns(schema_to_fields(s)[1], "2.1")]
    [0, 1, 3]
    """
    v20 = _is_v2_0(version)
    out: list[ColumnField] = []
    for i, lf in enumerate(tops):
        _walk(lf, v20, i, "", out)
    return out


# columns_per_field of the field lists readers share (lancenb.file.metadata memoises
# parsed schemas): a wide file opened again and again walks its fields once
_PER_FIELD: dict = {}
_PER_FIELD_SIZE = 64
_PER_FIELD_LOCK = module_lock(globals(), "_PER_FIELD_LOCK")


def columns_per_field(tops: list[LanceField], version) -> list[int]:
    """How many columns each top-level field of ``tops`` owns (see
    :func:`data_file_columns`). Memoised by the identity of ``tops`` (field lists are
    not changed once built)."""
    v20 = _is_v2_0(version)
    k = (id(tops), v20)
    hit = _PER_FIELD.get(k)
    if hit is not None and hit[0] is tops:
        return list(hit[1])
    counts = []
    for lf in tops:
        if lf.children:
            out: list = []
            _walk(lf, v20, 0, "", out)
            counts.append(len(out))
        else:
            counts.append(1)
    with _PER_FIELD_LOCK:
        if len(_PER_FIELD) >= _PER_FIELD_SIZE:
            _PER_FIELD.pop(next(iter(_PER_FIELD)), None)
        _PER_FIELD[k] = (tops, tuple(counts))  # (holds ``tops``: its id stays its own)
    return counts
