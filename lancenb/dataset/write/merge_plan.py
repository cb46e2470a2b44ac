r"""``MergeInsertBuilder.explain_plan`` / ``analyze_plan``: the merge as a plan text.

lancenb has no query planner; the text describes what ``execute`` does, in the operator
names of pylance's DataFusion plan, so that what a caller can rely on holds: the first
line is the merge node with pylance's fields, each operator is a line indented two
spaces under its parent, and ``analyze_plan`` adds ``metrics=[...]`` with pylance's
write counters. Example (``merge_insert("id").when_matched_update_all()
.when_not_matched_insert_all()``, source columns ``id, v``)::

    MergeInsert: on=[id], when_matched=UpdateAll, when_not_matched=InsertAll, \
    when_not_matched_by_source=Keep
      HashJoinExec: mode=CollectLeft, join_type=Right, on=[(id, id)]
        LanceRead: uri=/data/ds, projection=[id], num_fragments=2, range_before=None, \
    range_after=None, row_id=false, row_addr=true, full_filter=--, refine_filter=--
        StreamingTableExec: partition_sizes=1, projection=[id, v]

(one line each where ``\`` ends a line here).

The merge node is ``MergeInsert`` (``DeleteOnlyMergeInsert`` when matched rows are only
deleted, as pylance names it, without ``when_not_matched_by_source``); ``when_matched``
is ``UpdateAll``, ``UpdateIf(MergeCondition)``, ``Delete``, ``Fail`` or ``DoNothing``;
``when_not_matched`` ``InsertAll`` or ``DoNothing``; ``when_not_matched_by_source``
``Keep``, ``Delete`` or ``DeleteIf``. The join keeps the source's unmatched rows when
they are inserted (``Right``), the target's when they may be deleted (``Left``), both
(``Full``) or neither (``Inner``). ``LanceRead`` lists the target columns read: the keys
for every row, the rest for the rows a condition or a partial source needs.

Differences from pylance's text (docs/parity.md): no ``CoalescePartitionsExec``,
``ProjectionExec`` or ``RepartitionExec`` lines (lancenb joins fragment by fragment in
one process), join keys without ``@index``, ``uri=`` the dataset's URI, and
``analyze_plan`` has no ``elapsed`` per operator (one for the whole merge) nor DataFusion's
batch and memory counters. As pylance's, ``analyze_plan`` runs the merge without
committing it: the dataset keeps its version, the data files it wrote stay unreferenced
(``cleanup_old_versions`` removes them).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pyarrow as pa

from lancenb.errors import InvalidInputError, SchemaError

__all__ = ["explain", "analyze", "header", "MergeClauses"]


@dataclass(frozen=True)
class MergeClauses:
    """What a ``merge_insert`` builder was told: the key columns, what happens to
    matched rows (None: kept, ``"update"``, ``"delete"``, ``"fail"``) and under which
    condition, whether unmatched source rows are inserted, and whether unmatched
    target rows are deleted (under which condition)."""

    on: tuple
    matched: str | None
    update_cond: str | None
    insert: bool
    delete_unmatched: bool
    delete_cond: str | None


def _when(b) -> tuple[str, str, str]:
    matched = {None: "DoNothing", "delete": "Delete", "fail": "Fail"}.get(b.clauses.matched)
    if b.clauses.matched == "update":
        matched = "UpdateAll" if b.clauses.update_cond is None else "UpdateIf(MergeCondition)"
    not_matched = "InsertAll" if b.clauses.insert else "DoNothing"
    by_source = "Keep" if not b.clauses.delete_unmatched else (
        "Delete" if b.clauses.delete_cond is None else "DeleteIf")
    return matched, not_matched, by_source


def header(b) -> str:
    """The merge node's line (without metrics)."""
    if b.clauses.matched is None and not b.clauses.insert and not b.clauses.delete_unmatched:
        raise InvalidInputError("merge_insert: the merge insert job is not configured to "
                                "change the data in any way")
    matched, not_matched, by_source = _when(b)
    on = ", ".join(b.clauses.on)
    if b.clauses.matched == "delete" and not b.clauses.insert and not b.clauses.delete_unmatched:
        return f"DeleteOnlyMergeInsert: on=[{on}], when_matched=Delete, when_not_matched=DoNothing"
    return (f"MergeInsert: on=[{on}], when_matched={matched}, when_not_matched={not_matched}, "
            f"when_not_matched_by_source={by_source}")


def _source_names(b, schema: pa.Schema | None) -> list[str]:
    """The source's columns (the dataset's when ``schema`` is None), checked as
    ``execute`` checks a source: the dataset's columns, with their types, keys included."""
    target = b.dataset.schema
    if schema is None:
        return list(target.names)
    extra = [f.name for f in schema if f.name not in target.names]
    keys = [k for k in b.clauses.on if k not in schema.names]
    if extra or keys:
        raise SchemaError(f"merge_insert explain_plan: the source schema has columns "
                          f"{schema.names}; they must be the dataset's {target.names} or a "
                          f"subset holding the key(s) {b.clauses.on}")
    wrong = [f"{f.name}: {f.type} (the dataset's is {target.field(f.name).type})"
             for f in schema if f.type != target.field(f.name).type]
    if wrong:
        raise SchemaError(f"merge_insert explain_plan: source types differ from the "
                          f"dataset's: {'; '.join(wrong)}")
    return list(schema.names)


def _join_type(b) -> str:
    if b.clauses.insert and b.clauses.delete_unmatched:
        return "Full"
    return "Right" if b.clauses.insert else ("Left" if b.clauses.delete_unmatched else "Inner")


def _read_columns(b, source: list[str]) -> list[str]:
    """The target columns the merge reads: the keys, then whole rows where needed."""
    names = list(b.dataset.schema.names)
    c = b.clauses
    whole = (c.matched == "update" and (c.update_cond is not None or len(source) < len(names))
             or c.delete_cond is not None)
    return names if whole else list(b.clauses.on)


def _lines(b, source: list[str], metrics: dict | None) -> list[str]:
    def m(key):
        if metrics is None or key not in metrics:
            return ""
        return ", metrics=[" + ", ".join(f"{k}={v}" for k, v in metrics[key].items()) + "]"

    on = ", ".join(f"({k}, {k})" for k in b.clauses.on)
    read = _read_columns(b, source)
    head = header(b)
    if metrics is not None:
        kind, rest = head.split(": ", 1)
        head = f"{kind}: elapsed={metrics['elapsed']}, {rest}"
    return [
        head + m("merge"),
        f"  HashJoinExec: mode=CollectLeft, join_type={_join_type(b)}, on=[{on}]" + m("join"),
        f"    LanceRead: uri={b.dataset.uri}, projection=[{', '.join(read)}], "
        f"num_fragments={len(b.dataset.get_fragments())}, range_before=None, range_after=None, "
        f"row_id=false, row_addr=true, full_filter=--, refine_filter=--" + m("read"),
        ("    DataSourceExec: partitions=1, partition_sizes=[1]" if metrics is not None else
         "    StreamingTableExec: partition_sizes=1") + f", projection=[{', '.join(source)}]"
        + m("source"),
    ]


def explain(b, schema: pa.Schema | None = None, verbose: bool = False) -> str:
    """The plan ``execute`` would run for a source of ``schema`` (the dataset's when
    None); writes nothing. ``verbose`` adds the conditions' full text."""
    source = _source_names(b, schema)
    lines = _lines(b, source, None)
    if verbose:
        lines.append(f"  -- conditions: when_matched={b.clauses.update_cond!r}, "
                     f"when_not_matched_by_source={b.clauses.delete_cond!r}")
    return "\n".join(lines) + "\n"


def analyze(b, data, schema: pa.Schema | None = None) -> str:
    """Run the merge on ``data`` without committing it and return the plan with its
    counters (``num_inserted_rows``, ``num_updated_rows``, ``num_deleted_rows``,
    ``num_files_written``, ``bytes_written``; rows and fragments read)."""
    header(b)  # (refuses an unconfigured merge before any work)
    start = time.perf_counter()
    txn, counts = b.execute_uncommitted(data, schema=schema)
    elapsed = time.perf_counter() - start
    new = list(getattr(txn.operation, "new_fragments", None) or [])
    files = [f for frag in new for f in frag.files]
    frags = [f for f in b.dataset.get_fragments() if f.count_rows() > 0]
    target_rows = sum(f.count_rows() for f in frags)
    metrics = {
        "elapsed": f"{elapsed * 1000:.3f}ms",
        "merge": {"output_rows": 0, "bytes_written": sum(f.file_size_bytes or 0 for f in files),
                  "num_deleted_rows": counts["num_deleted_rows"],
                  "num_files_written": len(files),
                  "num_inserted_rows": counts["num_inserted_rows"],
                  "num_skipped_duplicates": 0,
                  "num_updated_rows": counts["num_updated_rows"]},
        "join": {"build_input_rows": target_rows},
        "read": {"output_rows": target_rows, "fragments_scanned": len(frags),
                 "rows_scanned": target_rows},
    }
    names = list(data.column_names) if schema is None and hasattr(data, "column_names") \
        else _source_names(b, schema)
    return "\n".join(_lines(b, names, metrics)) + "\n"
