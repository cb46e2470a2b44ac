"""Scalar-quantizer storage of an IVF_SQ index (see :mod:`.ivf` for the file layout).

One range ``[lo, hi]`` for every value of every vector (pylance's bounds); a value
becomes ``u8(trunc((v - lo) * 255 / (hi - lo)))``, clamped to 0..255 (all zeros when
``lo == hi``). The query is quantized the same way and compared code to code:
``sum((a - b)**2) * (hi - lo)**2 / 255**2`` for l2/cosine (in float32, as pylance).
For dot pylance dequantizes the rows (``lo + code * (hi - lo) / 255``) and reports
``1 - x.q`` with the float query.
"""

from __future__ import annotations

import numpy as np

from lancenb.errors import CorruptFileError
from lancenb.kernels.vector import pq as kpq

__all__ = ["CODE_COLUMN", "bounds_of", "quantize", "partition_distances", "scale_l2"]

CODE_COLUMN = "__sq_code"


def bounds_of(params: dict) -> tuple[float, float]:
    try:
        b = params["bounds"]
        return float(b["start"]), float(b["end"])
    except (KeyError, TypeError, ValueError) as e:
        raise CorruptFileError(f"SQ metadata {params} has no bounds ({e})") from None


QUANTIZE_BLOCK = 1 << 18  # values quantized at a time (float64 temporaries: 2 MB each)


def quantize(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """u8 codes of ``x`` (any shape) in the range ``[lo, hi]``.

    In blocks of values: a build's batch of 65536 x 128 floats would otherwise hold
    several float64 copies of itself (hundreds of MB) at once."""
    x = np.asarray(x)
    out = np.zeros(x.shape, np.uint8)
    if lo == hi or not x.size:
        return out
    flat, dst = x.reshape(-1), out.reshape(-1)
    for s in range(0, flat.size, QUANTIZE_BLOCK):
        v = flat[s:s + QUANTIZE_BLOCK].astype(np.float64)
        v -= lo
        v *= 255.0
        v /= hi - lo
        np.nan_to_num(v, copy=False, nan=0.0, posinf=255.0, neginf=0.0)
        np.trunc(v, out=v)
        np.clip(v, 0, 255, out=v)
        dst[s:s + QUANTIZE_BLOCK] = v
    return out


def partition_distances(params: dict, codes: np.ndarray, q: np.ndarray,
                        metric: str) -> np.ndarray:
    """Distances of a partition's rows (``codes``: ``(n, dim)`` u8) to query ``q``."""
    lo, hi = bounds_of(params)
    if metric == "dot":  # pylance dequantizes the rows and keeps the query as is
        deq = np.float32(lo) + codes.astype(np.float32) * np.float32((hi - lo) / 255.0)
        return (np.float32(1.0) - deq @ np.asarray(q, np.float32)).astype(np.float32)
    qc = quantize(q, lo, hi)
    raw = np.empty(len(codes), np.float32)
    status = kpq.sq_l2(np.ascontiguousarray(codes), qc, raw)
    if status != kpq.OK:
        raise CorruptFileError(f"SQ codes {codes.shape} do not fit a query of "
                               f"{len(qc)} dimensions")
    return scale_l2(raw, lo, hi)


def scale_l2(raw: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Squared code distances ``raw`` (float32) as squared L2 in the data's units, in
    place: ``raw * (hi - lo)**2 / 255**2`` (float32, as pylance)."""
    rng = np.float32(hi - lo)
    raw *= rng * rng
    raw /= np.float32(255.0 * 255.0)
    return raw
