"""k-means for IVF partitions and PQ codebooks (Lloyd's algorithm, as pylance trains).

Random initial centroids (distinct sample rows, seeded), then assignment and mean
updates until ``max_iters`` or until the mean distance changes by less than
``tolerance`` (relative). An emptied cluster takes a random member of the largest
one, nudged, so all ``k`` centroids stay in use. ``metric`` is ``"l2"`` or ``"dot"``
(cosine callers normalise the data and use l2, as pylance does). Assignment goes
through BLAS (``x @ c.T``) in blocks, then :mod:`lancenb.kernels.vector.kmeans`.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lancenb.errors import InvalidInputError
from lancenb.kernels.vector import kmeans as kk

__all__ = ["train_kmeans", "assign", "KMeans"]

SMALL_DIM = 16  # up to this many dimensions a direct loop beats BLAS (PQ sub-vectors)
BLOCK_ROWS = 32768  # rows per BLAS block: bounds the (rows, k) matrix to ~32 MiB at k=256


def assign(x: np.ndarray, centroids: np.ndarray, metric: str = "l2"):
    """``(labels int32, distances float32)`` of each row's nearest centroid."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    c = np.ascontiguousarray(centroids, dtype=np.float32)
    n = len(x)
    labels = np.empty(n, np.int32)
    dists = np.empty(n, np.float32)
    if metric != "dot" and x.shape[1] <= SMALL_DIM:
        kk.assign_l2_small(x, np.ascontiguousarray(c.T), labels, dists,
                           np.empty(4 * len(c), np.float32))
        return labels, dists
    cnorm = np.einsum("ij,ij->i", c, c)
    code = kk.DOT if metric == "dot" else kk.L2
    for s in range(0, n, BLOCK_ROWS):
        xb = x[s:s + BLOCK_ROWS]
        dots = xb @ c.T
        xnorm = np.einsum("ij,ij->i", xb, xb)
        kk.assign_from_dots(dots, xnorm, cnorm, code, labels[s:s + BLOCK_ROWS],
                            dists[s:s + BLOCK_ROWS])
    return labels, dists


def train_kmeans(data: np.ndarray, k: int, *, metric: str = "l2", max_iters: int = 50,
                 tolerance: float = 1e-4, seed: int = 42, init: np.ndarray | None = None):
    """Centroids ``(k, dim)`` float32 and the final loss (sum of distances).

    Examples
    --------
    >>> x = np.r_[np.zeros((5, 2)), np.ones((5, 2)) * 10].astype(np.float32)
    >>> c, loss = train_kmeans(x, 2)
    >>> sorted(c[:, 0].tolist()), float(loss)
    ([0.0, 10.0], 0.0)
    """
    x = np.ascontiguousarray(data, dtype=np.float32)
    n = len(x)
    if k <= 0:
        raise InvalidInputError(f"k-means needs k >= 1, got {k}")
    if n < k and init is None:
        raise InvalidInputError(f"k-means needs at least k={k} rows, got {n}")
    rng = np.random.default_rng(seed)
    if init is not None:
        c = np.array(init, dtype=np.float32).reshape(k, -1)
    else:
        c = x[np.sort(rng.choice(n, k, replace=False))].copy()
    loss = np.inf
    prev = None
    for _ in range(max(1, int(max_iters))):
        labels, dists = assign(x, c, metric)
        loss = float(np.nansum(dists, dtype=np.float64))
        sums = np.zeros(c.shape, np.float64)
        counts = np.zeros(k, np.int64)
        kk.accumulate(x, labels, sums, counts)
        empty = np.nonzero(counts == 0)[0]
        nonzero = counts > 0
        c[nonzero] = (sums[nonzero] / counts[nonzero, None]).astype(np.float32)
        for j in empty:  # split the largest cluster
            big = int(np.argmax(counts))
            members = np.nonzero(labels == big)[0]
            pick = x[members[rng.integers(len(members))]] if len(members) else \
                x[rng.integers(n)]
            c[j] = pick + rng.standard_normal(c.shape[1]).astype(np.float32) * 1e-4
            counts[big] = max(1, counts[big] // 2)
        if prev is not None and abs(prev - loss) <= tolerance * max(abs(prev), 1e-30) \
                and not len(empty):
            break
        prev = loss
    return c, loss


def _normalize_metric(metric) -> str:
    m = str(metric).lower()
    if m == "euclidean":
        m = "l2"
    if m not in ("l2", "cosine", "dot"):
        raise ValueError(f"Metric {metric} not supported.")
    return m


def _fsl_matrix(data) -> np.ndarray:
    """pylance's accepted inputs of ``KMeans.fit``/``predict`` as a float32 matrix."""
    if isinstance(data, pa.ChunkedArray):
        data = data.combine_chunks()
    if isinstance(data, pa.FixedShapeTensorArray):
        if len(data.type.shape) != 1:
            raise ValueError(f"Fixed shape tensor array must be a 1-D array, got "
                             f"{len(data.type.shape)}-D")
        data = data.storage
    if isinstance(data, pa.FixedSizeListArray):
        if data.type.value_type != pa.float32():
            raise ValueError(f"Array must be float32 type, got: {data.type.value_type}")
        dim = data.type.list_size
        vals = data.flatten().to_numpy(zero_copy_only=False)
        return np.asarray(vals, np.float32).reshape(len(data), dim)
    if isinstance(data, np.ndarray):
        if data.ndim != 2:
            raise ValueError(f"Numpy array must be a 2-D array, got {data.ndim}-D")
        if data.dtype != np.float32:
            raise ValueError(f"Numpy array must be float32 type, got: {data.dtype}")
        return np.ascontiguousarray(data)
    raise ValueError("Data must be a FixedSizeListArray, Tensor or numpy array")


class KMeans:
    """pylance's ``lance.util.KMeans``: k-means on float32 vectors (l2, cosine, dot).

    Examples
    --------
    >>> data = np.random.default_rng(0).standard_normal((200, 8)).astype(np.float32)
    >>> km = KMeans(4)
    >>> km.fit(data)
    >>> len(km.predict(data)), len(km.centroids)
    (200, 4)
    """

    def __init__(self, k: int, metric_type: str = "l2", max_iters: int = 50,
                 centroids: pa.FixedSizeListArray | None = None):
        self.k = int(k)
        self._metric_type = _normalize_metric(metric_type)
        self._max_iters = int(max_iters)
        self._centroids = None if centroids is None else _fsl_matrix(centroids)

    def __repr__(self) -> str:
        return f"lance.KMeans(k={self.k}, metric_type={self._metric_type})"

    @property
    def centroids(self):
        """The centroids as a ``FixedShapeTensorArray`` (None before :meth:`fit`)."""
        if self._centroids is None:
            return None
        c = self._centroids
        storage = pa.FixedSizeListArray.from_arrays(pa.array(c.reshape(-1), pa.float32()),
                                                    c.shape[1])
        return pa.FixedShapeTensorArray.from_storage(
            pa.fixed_shape_tensor(pa.float32(), (c.shape[1],)), storage)

    def _prepared(self, x: np.ndarray) -> np.ndarray:
        if self._metric_type == "cosine":
            n = np.sqrt(np.einsum("ij,ij->i", x, x))
            n[n == 0] = 1
            x = (x / n[:, None]).astype(np.float32)
        return x

    def fit(self, data) -> None:
        """Train on ``data`` (a 2-D float32 array, fixed-size lists or 1-D tensors);
        a second call starts again."""
        x = self._prepared(_fsl_matrix(data))
        metric = "dot" if self._metric_type == "dot" else "l2"
        self._centroids, _ = train_kmeans(x, self.k, metric=metric,
                                          max_iters=self._max_iters)

    def predict(self, data) -> pa.UInt32Array:
        """The nearest centroid of each vector."""
        if self._centroids is None:
            raise ValueError("KMeans must be fitted (or given centroids) before predict")
        x = self._prepared(_fsl_matrix(data))
        labels, _ = assign(x, self._centroids, "dot" if self._metric_type == "dot" else "l2")
        return pa.array(labels.astype(np.uint32), pa.uint32())
