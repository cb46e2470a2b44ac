"""Why lancenb encodes data as it does: :func:`explain` on in-memory data, and the
per-page explanation :func:`lancenb.inspect.inspect` attaches to 2.1/2.2 file pages
(the strategy re-run on a page's values with a trace)."""

from __future__ import annotations

import pyarrow as pa

from lancenb.encodings import strategy
from lancenb.encodings.config import KEYS, config_for_field, is_blob, is_packed
from lancenb.encodings.page import describe_layout
from lancenb.encodings.structural import dictarray, repdef
from lancenb.errors import InvalidInputError
from lancenb.file.version import DEFAULT_WRITE_VERSION, FileVersion
from lancenb.file.writer import DEFAULT_COLUMN_BUDGET
from lancenb.inspect._format import (
    _md,
)


def _leaf_name(field: pa.Field, path: tuple) -> str:
    names, t = [field.name], field.type
    for step in path:
        if pa.types.is_struct(t):
            names.append(t.field(step).name)
            t = t.field(step).type
        else:
            names.append(t.value_field.name)
            t = t.value_type
    return ".".join(names)


def _explain_page(arr: pa.Array, field: pa.Field, path, version_minor: int) -> dict:
    """Run the strategy on one page's values with a trace: description and decisions."""
    if is_blob(field):
        return {"description": None, "layout": "blob", "uncompressed_bytes": arr.nbytes,
                "steps": ["lance-encoding:blob: values stored out of line (blob layout)"],
                "overrides": {"lance-encoding:blob": _md(field.metadata).get(
                    "lance-encoding:blob")}}
    levels = None
    if path is not None:
        levels, arr = repdef.shred(arr, path)
    trace = strategy.Trace()
    if dictarray.handles(arr.type):  # dictionary columns, empty structs: fixed layouts
        _, layout = dictarray.encode_page(arr, config_for_field(field),
                                          version_minor=version_minor, levels=levels,
                                          why=trace.steps)
    else:
        _, layout = strategy.encode_page(arr, config_for_field(field),
                                         version_minor=version_minor, levels=levels,
                                         trace=trace)
    out = {"description": describe_layout(layout), "uncompressed_bytes": arr.nbytes}
    out.update(trace.to_dict())
    return out


# -- explain (in-memory data) -----------------------------------------------------------
def explain(data, field: str | None = None, *, version: str | None = None,
            page_budget_bytes: int = DEFAULT_COLUMN_BUDGET) -> dict:
    """Why lancenb would encode ``data`` (a Table, RecordBatch or Array) as it does.

    ``version`` is the file version to explain (default: the one ``LanceFileWriter``
    and ``write_dataset`` write, 2.2).

    Pages are cut as ``LanceFileWriter`` cuts them (``page_budget_bytes`` of buffered
    arrays per column, over the table's batches). Returns ``{"version", "columns":
    [{"column", "field_metadata", "pages": [{"rows", "chosen", "stats",
    "thresholds", "overrides", "steps"}]}]}``; ``field`` limits it to one top-level field.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from lancenb.inspect import explain
    >>> page = explain(pa.table({"x": list(range(1000))}))["columns"][0]["pages"][0]
    >>> page["rows"], page["chosen"]
    (1000, 'mini_block:inline_bitpacking')
    """

    if version is None:
        version = DEFAULT_WRITE_VERSION.label
    minor = FileVersion.resolve(version).footer[1]
    if isinstance(data, (pa.Array, pa.ChunkedArray)):
        data = pa.table({field or "values": data})
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if not isinstance(data, pa.Table):
        raise TypeError(f"explain takes a pyarrow Table, RecordBatch or Array, not "
                        f"{type(data).__name__}")
    names = [field] if field is not None else data.schema.names
    out = {"version": FileVersion.resolve(version).label, "columns": []}
    for name in names:
        if name not in data.schema.names:
            raise InvalidInputError(f"no field {name!r}; the data has {data.schema.names}")
        f = data.schema.field(name)
        paths = ([None] if not repdef.is_nested(f.type) or is_packed(f)
                 else repdef.leaf_paths(f.type))
        chunks = [c for c in data.column(name).chunks if len(c)]
        for path_ in paths:
            pages, buf, nbytes, row = [], [], 0, 0
            for c in chunks + [None]:
                if c is not None:
                    buf.append(c)
                    nbytes += c.nbytes // len(paths)
                if buf and (c is None or nbytes >= page_budget_bytes):
                    arr = dictarray.page_array(buf)  # (as LanceFileWriter joins them)
                    e = _explain_page(arr, f, path_, minor)
                    pages.append({"first_row": row, "rows": len(arr),
                                  "chosen": e.pop("description"), **e})
                    row += len(arr)
                    buf, nbytes = [], 0
            out["columns"].append({
                "column": name if path_ is None else _leaf_name(f, path_),
                "field_metadata": {k: v for k, v in _md(f.metadata).items()
                                   if k in KEYS or k.startswith("lance-encoding:")},
                "pages": pages})
    return out
