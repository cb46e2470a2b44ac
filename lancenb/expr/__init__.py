"""Expressions: SQL filters and projections, evaluated on Arrow data.

- ``parse.py``: SQL text (sqlglot) -> expression nodes, with pylance's errors;
- ``nodes.py``: the expression node types;
- ``filters.py``: a compiled filter (``Filter``): evaluation on a table, the columns it
  needs, statistics pruning through ``pruning.py``;
- ``floatorder.py``: the total order of floats (NaN, -0.0) filters and sorts share;
- ``engine.py``: the SQL engine for projections, ``update``/``merge_insert`` expressions
  and ``sql()`` queries.

Used by the scanner, Spark pushdown and the indices.
"""
