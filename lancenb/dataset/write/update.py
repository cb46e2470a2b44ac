"""``LanceDataset.update``: the matching rows are deleted where they are and written
again with the new values, in one ``Update`` transaction."""

from __future__ import annotations

import pyarrow as pa

from lancenb.dataset.write.changes import RowChanges
from lancenb.errors import InvalidInputError
from lancenb.expr import engine as sql
from lancenb.file import jsonb

__all__ = ["update", "evaluate_assignments"]


def evaluate_assignments(table: pa.Table, exprs: dict, schema: pa.Schema, updated=()) -> pa.Table:
    """``{column: SQL expression}`` evaluated by the engine over ``table``, cast to
    ``schema`` (the dataset's types). Updated JSON columns (``updated``) take text
    (checked and stored as JSONB, as pylance does) or a JSON column's value."""
    out = sql.evaluate(table, exprs, what="update")
    try:
        for c in updated:
            f = schema.field(c)
            if not jsonb.holds(f, jsonb.LANCE_JSON):
                continue
            col = out.column(c)
            if col.type == f.type:  # JSONB: only a JSON column's own
                from lancenb.expr.parse import bare_json_field  # lazy: sqlglot

                if bare_json_field(exprs[c], schema) is None:
                    raise InvalidInputError(f"update of {c!r}: JSON takes text or a JSON "
                                            f"column, not {exprs[c]!r} (bytes)")
                continue
            text = jsonb.text_field(f)
            out = out.set_column(out.schema.get_field_index(c), c,
                                 jsonb.jsonb_array(col.cast(text.type), text))
        return out.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise InvalidInputError(f"update: the new values do not fit the columns' types: "
                                f"{e}") from None


def update(ds, updates: dict, where=None, *, conflict_retries: int = 10,
           retry_timeout=None) -> dict:
    """Set ``updates`` (``{column: SQL expression}``) on the rows matching ``where``
    (all rows when None); returns ``{"num_rows_updated": n}``. The commit retries a
    lost race ``conflict_retries`` times, for at most ``retry_timeout`` (a timedelta or
    seconds; pylance's default: 30 s)."""
    from lancenb.expr.filters import check_expression  # lazy: it loads sqlglot

    if not isinstance(updates, dict) or not updates:
        raise InvalidInputError("update takes a non-empty dict {column: SQL expression}")
    if conflict_retries is None or int(conflict_retries) < 0:
        raise InvalidInputError(f"conflict_retries must be a non-negative integer, not "
                                f"{conflict_retries!r}")
    timeout = 30.0 if retry_timeout is None else getattr(
        retry_timeout, "total_seconds", lambda: float(retry_timeout))()
    schema = ds.snapshot.schema
    bad = [c for c in updates if c not in schema.names]
    if bad:
        raise InvalidInputError(f"update: no column(s) {bad} in the dataset")
    exprs = {}
    for c in schema.names:
        if c in updates:
            check_expression(str(updates[c]), schema, what=f"update of {c!r}", bare_json=True)
            exprs[c] = str(updates[c])
        else:
            exprs[c] = f"`{c.replace('`', '``')}`"
    sc = ds.scanner(columns=[], filter=where if where is not None else "TRUE")
    ch = RowChanges(ds)
    total = 0
    for frag in ds.get_fragments():
        live = frag.live_offsets()
        if frag.count_rows() == 0:
            continue
        hit = sc.expr_mask(sc.filter_table(frag, live))
        if not len(hit):
            continue
        phys = live[hit] if live is not None else hit
        old = frag.take_physical(schema.names, phys)
        new = evaluate_assignments(old, exprs, old.schema, updates)
        ch.delete(frag, phys)
        ids = created = None
        if ds.stable_row_ids:
            ids = frag.row_ids()[phys]
            created = frag.row_versions("created")[phys]
        ch.insert(new, ids, created)
        total += len(phys)
    ch.commit(max_retries=int(conflict_retries), retry_timeout=timeout)
    return {"num_rows_updated": total}
