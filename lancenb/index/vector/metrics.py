"""Distances of vectors to one query, as pylance's metrics define them.

``l2``: squared Euclidean; ``cosine``: ``1 - x.q / (|x| |q|)``; ``dot``: ``1 - x.q``;
``hamming``: differing bits of uint8 vectors.
Computed in float32 from float32 inputs (float16 vectors are widened first), by
:mod:`lancenb.kernels.vector.distance` (NumPy for what it refuses).
"""

from __future__ import annotations

import numpy as np

from lancenb.kernels.vector import distance as kd

__all__ = ["exact_distances", "partition_distances"]


def exact_distances(x: np.ndarray, q: np.ndarray, metric: str) -> np.ndarray:
    """Distances of the rows of ``x`` (``(n, dim)``) to ``q`` (``(dim,)``)."""
    x = np.asarray(x)
    if metric == "hamming":  # uint8 bytes: differing bits
        x, q = np.ascontiguousarray(x, np.uint8), np.ascontiguousarray(q, np.uint8)
        out = np.empty(len(x), np.float32)
        if len(x) and kd.distances_to_query(x, q, kd.HAMMING, out) != kd.OK:
            raise ValueError(f"hamming: vectors {x.shape} and a query of {q.shape}")
        return out
    if x.dtype != np.float32 and x.dtype != np.float64:
        x = x.astype(np.float32)
    q = np.asarray(q, dtype=x.dtype)
    code = kd.METRICS.get(metric)
    if code is not None and code != kd.HAMMING and x.ndim == 2 and len(x):
        out = np.empty(len(x), np.float32)
        if kd.distances_to_query(np.ascontiguousarray(x), np.ascontiguousarray(q), code,
                                 out) == kd.OK:
            return out
    if metric == "l2":
        diff = x - q
        d = np.einsum("ij,ij->i", diff, diff)
    elif metric == "dot":
        d = 1.0 - x @ q
    elif metric == "cosine":
        xn = np.sqrt(np.einsum("ij,ij->i", x, x))
        qn = np.sqrt(np.dot(q, q))
        with np.errstate(divide="ignore", invalid="ignore"):
            d = 1.0 - (x @ q) / (xn * qn)
    else:
        raise ValueError(f"unknown metric {metric!r}")
    return np.asarray(d, dtype=np.float32)


def partition_distances(centroids: np.ndarray, q: np.ndarray, metric: str) -> np.ndarray:
    """Distances of the query to each IVF centroid (``metric`` is l2, dot or hamming
    here)."""
    return exact_distances(centroids, q, metric if metric in ("dot", "hamming") else "l2")
