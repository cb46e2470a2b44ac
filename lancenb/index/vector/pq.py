"""Product-quantizer storage of an IVF_PQ index (see :mod:`.ivf` for the file layout).

The codebook tensor pylance stores has shape ``(2**nbits, dim)`` but its bytes are
``[m][2**nbits][dim/m]``; :func:`parse_codebook` returns it as ``(m, K, dim/m)``.
For l2 and cosine indices the codes encode the residual to the row's partition
centroid, so a query is compared as ``q - centroid``; dot indices encode the vectors
themselves and a row's distance is the sum of the ``1 - dot`` table minus ``m - 1``.
"""

from __future__ import annotations

import numpy as np

from lancenb.errors import CorruptFileError
from lancenb.kernels.vector import pq as kpq

__all__ = ["CODE_COLUMN", "parse_codebook", "partition_distances", "uses_residual"]

CODE_COLUMN = "__pq_code"


def uses_residual(metric: str) -> bool:
    """Whether PQ encodes residuals to the partition centroid (pylance: l2, cosine)."""
    return metric in ("l2", "cosine")


def parse_codebook(tensor: np.ndarray, params: dict, path: str) -> np.ndarray:
    """The stored codebook tensor as ``(m, K, dim/m)`` float32."""
    try:
        m, nbits, dim = int(params["num_sub_vectors"]), int(params["nbits"]), \
            int(params["dimension"])
    except (KeyError, TypeError, ValueError) as e:
        raise CorruptFileError(f"{path}: PQ metadata {params} lacks {e}") from None
    kk = 1 << nbits
    if nbits not in (4, 8) or m <= 0 or dim % m or tensor.size != kk * dim:
        raise CorruptFileError(f"{path}: PQ codebook of {tensor.size} values does not fit "
                               f"{m} sub-vectors x {kk} centroids x {dim} dimensions")
    return np.ascontiguousarray(tensor.astype(np.float32).reshape(m, kk, dim // m))


def query_table(codebook: np.ndarray, q: np.ndarray, metric: str) -> np.ndarray:
    """The ADC lookup table ``(m, K)`` of query (or residual) ``q``."""
    m, kk, _ = codebook.shape
    out = np.empty((m, kk), np.float32)
    fn = kpq.pq_table_dot if metric == "dot" else kpq.pq_table_l2
    status = fn(codebook, np.ascontiguousarray(q, np.float32), out)
    if status != kpq.OK:
        raise CorruptFileError(f"PQ codebook {codebook.shape} does not fit a query of "
                               f"{q.shape[0]} dimensions")
    return out


def partition_distances(params: dict, codes: np.ndarray, start: int, n: int, q, centroid,
                        metric: str) -> np.ndarray:
    """Distances of the ``n`` rows of one partition (rows ``start..`` of the file)."""
    cb = params["codebook"]
    m = cb.shape[0]
    nbits = int(params["nbits"])
    mb = m if nbits == 8 else m // 2
    block = codes[start * mb:(start + n) * mb]
    if not params.get("transposed", True):
        block = np.ascontiguousarray(block.reshape(n, mb).T).reshape(-1)
    key = q - centroid if uses_residual(metric) else q
    table = query_table(cb, key, metric)
    out = np.empty(n, np.float32)
    status = kpq.pq_adc(table, block, 0, n, nbits, out)
    if status != kpq.OK:
        raise CorruptFileError(f"PQ codes of a partition of {n} rows are malformed "
                               f"(status {status})")
    if metric == "dot":
        out -= np.float32(m - 1)
    return out


def encode(codebook: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Row-major codes ``(n, m)`` of vectors (or residuals) ``x``."""
    out = np.empty((len(x), codebook.shape[0]), np.uint8)
    status = kpq.pq_encode(codebook, np.ascontiguousarray(x, np.float32), out)
    if status != kpq.OK:
        raise CorruptFileError(f"PQ codebook {codebook.shape} does not fit vectors "
                               f"{x.shape}")
    return out


def transpose_codes(codes: np.ndarray) -> np.ndarray:
    """A partition's row-major codes ``(n, mb)`` in the stored (transposed) order."""
    return np.ascontiguousarray(codes.T).reshape(-1)
