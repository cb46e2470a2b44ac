"""The text of ``LanceScanner.explain_plan`` and ``analyze_plan``.

lancenb has no query planner: a scan is the fixed pipeline of
:class:`~lancenb.dataset.read.scanner.LanceScanner`. The text describes that pipeline with
the operator names and fields of pylance's DataFusion plan, which is what callers
grep for: ``ProjectionExec: expr=[...]``, ``SortExec``, ``GlobalLimitExec``, a
``LanceRead: ..., projection=[...], source=stream(_rowid)`` for the columns read
after the filter (late materialisation) over the ``LanceRead: uri=...,
projection=[filter columns], num_fragments=N, range_before=..., row_id=...,
full_filter=...`` that scans. ``analyze_plan`` runs the scan and adds
``metrics=[output_rows=..., rows_scanned=..., bytes_read=..., iops=...,
requests=...]`` to each operator. Deliberate differences: docs/parity.md.

When scalar indices answer the filter (:mod:`lancenb.index.scalar.plan`), the scan
has a ``ScalarIndexQuery: query=[x = 5]@x_idx(BTree)`` child as pylance's; answered
whole, the scan reads the output columns directly (``refine_filter=--``), as
pylance's plan.

Example (a filter ``a < 50`` over ``a, b``, ``columns=["b"]``)::

    ProjectionExec: expr=[b@1 as b]
      LanceRead: uri=..., projection=[b], source=stream(_rowid)
        LanceRead: uri=..., projection=[a], num_fragments=1, ..., full_filter=a < 50, ...
"""

from __future__ import annotations

import time

from lancenb.dataset.read.nested import ROW_ADDR, ROW_ID
from lancenb.index.scalar.plan import describe

__all__ = ["explain", "analyze"]


def _nodes(sc) -> list[tuple[str, str]]:
    """The plan's operators, outermost first: ``(kind, text)``; kind names the node a
    metric belongs to (``project``, ``sort``, ``limit``, ``take``, ``scan``)."""
    proj = getattr(sc, "projection", None)  # columns={alias: SQL}
    out_names = [f.name for f in sc.stored_schema()]
    filt = sc.filter_text is not None
    indexed = _indexed(sc) if filt else None
    if indexed is not None and indexed[1]:
        return _answered(sc, indexed[0])
    filter_cols = [c for c in sc.filter_columns if c not in (ROW_ID, ROW_ADDR)]
    late = [c for c in sc.columns if c not in filter_cols] if filt else []
    scanned = list(filter_cols) if filt else list(sc.columns)
    # positions as the read produces them: scanned columns, late columns, then ids
    produced = scanned + late + [c for c in (ROW_ID, ROW_ADDR)
                                 if (c == ROW_ID and sc.with_row_id)
                                 or (c == ROW_ADDR and sc.with_row_address)]
    nodes = []
    if proj is not None or produced[:len(out_names)] != out_names:
        exprs = []
        for n in out_names:
            src = proj.get(n) if proj is not None else None
            if src is not None:
                exprs.append(f"{src} as {n}")
            else:
                i = produced.index(n) if n in produced else len(produced)
                exprs.append(f"{n}@{i} as {n}")
        nodes.append(("project", f"ProjectionExec: expr=[{', '.join(exprs)}]"))
    limited = sc.limit is not None or sc.offset
    if limited and (filt or sc.order_by):
        nodes.append(("limit", f"GlobalLimitExec: skip={sc.offset}, fetch={sc.limit}"))
    if sc.order_by:
        keys = ", ".join(f"{c}@{produced.index(c) if c in produced else 0} "
                         f"{'ASC' if a else 'DESC'} NULLS {'FIRST' if nf else 'LAST'}"
                         for c, a, nf in sc.order_by)
        nodes.append(("sort", f"SortExec: expr=[{keys}], preserve_partitioning=[false]"))
    uri = sc.dataset.uri
    if late:
        nodes.append(("take", f"LanceRead: uri={uri}, projection=[{', '.join(late)}], "
                              f"source=stream(_rowid)"))
    rng = "None"
    if limited and not filt and not sc.order_by:
        stop = "" if sc.limit is None else str(sc.offset + sc.limit)
        rng = f"Some({sc.offset}..{stop})"
    text = sc.filter_text if filt else "--"
    nodes.append(("scan", f"LanceRead: uri={uri}, projection=[{', '.join(scanned)}], "
                          f"num_fragments={len(sc.fragment_list())}, range_before={rng}, "
                          f"range_after=None, row_id={_bool(sc.with_row_id or bool(late))}, "
                          f"row_addr={_bool(sc.with_row_address)}, full_filter={text}, "
                          f"refine_filter={text}"))
    if indexed is not None:
        nodes.append(("index", f"ScalarIndexQuery: query={indexed[0]}"))
    return nodes


def _indexed(sc) -> tuple[str, bool] | None:
    """The index query text of the scan's filter and whether it is answered whole."""
    if sc.include_deleted_rows or not isinstance(sc.filter_text, str) or \
            not sc.use_scalar_index:
        return None
    ds = sc.dataset
    try:
        indices = ds.list_indices()
    except Exception:  # noqa: BLE001 - a plan text never fails on an index listing
        return None
    return describe(indices, ds.schema, sc.filter_text, ds.uri, ds.version)


def _answered(sc, query: str) -> list[tuple[str, str]]:
    """The plan of a scan whose filter the indices answer whole: the read of the
    output columns at the rows the index query gives."""
    nodes = []
    limited = sc.limit is not None or sc.offset
    if sc.order_by:
        if limited:
            nodes.append(("limit", f"GlobalLimitExec: skip={sc.offset}, fetch={sc.limit}"))
        names = list(sc.columns)
        keys = ", ".join(f"{c}@{names.index(c) if c in names else 0} "
                         f"{'ASC' if a else 'DESC'} NULLS {'FIRST' if nf else 'LAST'}"
                         for c, a, nf in sc.order_by)
        nodes.append(("sort", f"SortExec: expr=[{keys}], preserve_partitioning=[false]"))
    rng = "None"
    if limited and not sc.order_by:
        stop = "" if sc.limit is None else str(sc.offset + sc.limit)
        rng = f"Some({sc.offset}..{stop})"
    nodes.append(("scan", f"LanceRead: uri={sc.dataset.uri}, projection=[{', '.join(sc.columns)}], "
                          f"num_fragments={len(sc.fragment_list())}, range_before=None, "
                          f"range_after={rng}, row_id={_bool(sc.with_row_id)}, "
                          f"row_addr={_bool(sc.with_row_address)}, "
                          f"full_filter={sc.filter_text}, refine_filter=--"))
    nodes.append(("index", f"ScalarIndexQuery: query={query}"))
    return nodes


def _bool(v: bool) -> str:
    return "true" if v else "false"


def explain(sc, verbose: bool = False) -> str:
    """The plan of scanner ``sc`` as indented operator lines (``verbose`` adds the
    batch options on a last line)."""
    lines = [" " * (2 * i) + text for i, (_, text) in enumerate(_nodes(sc))]
    if verbose:
        lines.append(f"{' ' * (2 * len(lines))}batch_size={sc.batch_size}, "
                     f"strict_batch_size={sc.strict_batch_size}, "
                     f"late_materialization=filter columns first")
    return "\n".join(lines) + "\n"


def analyze(sc) -> str:
    """Run scanner ``sc`` and return its plan with each operator's metrics: the rows
    it put out; for the scan also the rows whose columns were read
    (``rows_scanned``), the fragments read, and the requests and bytes read through
    the dataset's store while the scan ran."""
    io = sc.dataset.snapshot.store.io_stats
    reads, nbytes = io.reads, io.bytes_read
    sc.rows_scanned = 0
    start = time.perf_counter()
    out = sum(t.num_rows for t in sc.tables())
    elapsed = time.perf_counter() - start
    scanned = sc.rows_scanned
    frags = sum(1 for f in sc.fragment_list() if f.count_rows())
    reads, nbytes = io.reads - reads, io.bytes_read - nbytes
    lines = [f"AnalyzeExec verbose=true, elapsed={_ms(elapsed)}, metrics=[]"]
    for i, (kind, text) in enumerate(_nodes(sc), start=1):
        if kind == "scan":
            metrics = (f"output_rows={out}, fragments_scanned={frags}, "
                       f"ranges_scanned={frags}, rows_scanned={scanned}, "
                       f"bytes_read={nbytes}, iops={reads}, requests={reads}, "
                       f"pages_skipped={sc.pages_skipped}")
        else:
            metrics = f"output_rows={out}"
        lines.append(f"{' ' * (2 * i)}{text}, metrics=[{metrics}]")
    return "\n".join(lines) + "\n"


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f}ms"
