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
from lancenb.kernels.vector import ivfscan as kscan
from lancenb.kernels.vector import pq as kpq

__all__ = ["CODE_COLUMN", "parse_codebook", "query_tables", "uses_residual"]

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


def query_tables(params: dict, q: np.ndarray, centroids: np.ndarray, parts: np.ndarray,
                 metric: str) -> np.ndarray:
    """The lookup tables ``(len(parts), m, K)`` of the probed partitions: of the residual
    ``q - centroid`` for l2/cosine (one per partition), of ``q`` itself for dot (the same
    table for each)."""
    cb = params["codebook"]
    m, kk, _ = cb.shape
    out = np.empty((len(parts), m, kk), np.float32)
    if not uses_residual(metric):
        if len(parts):
            out[:] = query_table(cb, q, metric)
        return out
    cbt = params.get("codebook_t")
    if cbt is None:  # (m, d/m, K): what the kernel's inner loop runs over
        cbt = params["codebook_t"] = np.ascontiguousarray(cb.transpose(0, 2, 1))
    status = kscan.pq_tables_l2(cbt, np.ascontiguousarray(q, np.float32), centroids,
                                np.ascontiguousarray(parts, np.int64), out)
    if status != kscan.OK:
        raise CorruptFileError(f"PQ codebook {cb.shape} does not fit a query of "
                               f"{q.shape[0]} dimensions and centroids {centroids.shape}")
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
