"""Utilities, as pylance's ``lance.util``: :func:`validate_vector_index`,
:func:`sanitize_ts` and :func:`td_to_micros`.

``KMeans`` is pylance's k-means model (:class:`lancenb.index.vector.kmeans.KMeans`);
``HNSW`` is pylance's HNSW graph builder (:class:`lancenb.index.vector.hnsw.HNSW`).
"""

from __future__ import annotations

import datetime as _dt
from datetime import timedelta

import numpy as np

from lancenb.errors import InvalidInputError
from lancenb.index.vector.hnsw import HNSW
from lancenb.index.vector.kmeans import KMeans

__all__ = ["validate_vector_index", "sanitize_ts", "td_to_micros", "KMeans", "HNSW"]


def sanitize_ts(ts) -> _dt.datetime:
    """A ``datetime`` from a datetime, a pandas ``Timestamp`` or a string
    (``"%Y-%m-%d %H:%M:%S"``, or anything pandas parses when it is installed)."""
    if isinstance(ts, str):
        try:
            import pandas as pd  # lazy: heavy, and optional
        except ImportError:
            try:
                return _dt.datetime.strptime(ts, "%Y-%m-%d %H:%M:%S")
            except ValueError:
                raise InvalidInputError(f"Failed to parse timestamp string {ts}. Try "
                                        f"installing Pandas.") from None
        return pd.to_datetime(ts).to_pydatetime()
    if hasattr(ts, "to_pydatetime"):
        return ts.to_pydatetime()
    if not isinstance(ts, _dt.datetime):
        raise TypeError(f"Unrecognized version timestamp {ts} of type {type(ts)}")
    return ts


def td_to_micros(td: timedelta) -> int:
    """A timedelta in whole microseconds.

    Examples
    --------
    >>> td_to_micros(timedelta(seconds=1, microseconds=5))
    1000005
    """
    return td // timedelta(microseconds=1)


def validate_vector_index(dataset, column: str, refine_factor: int = 5,
                          sample_size: int | None = None, pass_threshold: float = 1.0) -> None:
    """Check a vector index on its own rows: each vector (all of them, or
    ``sample_size`` sampled) searched with k=1 should find itself (distance ~0). Raises
    ValueError when fewer than ``pass_threshold`` of them do. Vectors holding NaN are
    skipped.

    Examples
    --------
    >>> validate_vector_index(ds, "vector", sample_size=100)  # doctest: +SKIP
    """
    data = dataset.to_table(columns=[column]) if sample_size is None \
        else dataset.sample(sample_size, columns=[column])
    vectors = data.column(column).to_numpy(zero_copy_only=False)
    passes = total = 0
    for vec in vectors:
        vec = np.asarray(vec, dtype=np.float32)
        if np.isnan(vec).any():
            continue
        total += 1
        hit = dataset.to_table(columns=[], nearest={
            "column": column, "q": vec, "k": 1, "nprobes": 1,
            "refine_factor": refine_factor})
        passes += abs(hit.column("_distance")[0].as_py()) < 1e-6
    if total and passes / total < pass_threshold:
        raise ValueError(f"Vector index failed sanity check, only {passes}/{total} passed")
