"""pylance 14's posting format 2: varint posting tails and the ``_impacts`` column
(block-max impacts its scorer uses to skip posting blocks), vectorised over a partition.

``_impacts`` holds, per token, one entry per posting block (level 0) followed by one
entry per group of 32 blocks (level 1). An entry is ``varint(last document id covered)``,
``varint(pair count)`` then the Pareto frontier of ``(frequency, norm)`` pairs of its
documents (no other document has a frequency as high with a norm as low), frequencies
and norms both strictly increasing. The norm is the document length quantized to a byte
(``quantize``: exact below 8, then 3 mantissa bits and an exponent; 16 and 17 -> 16,
60 -> 31); a reader scores a pair at the shortest length of its norm, so an entry's
score bounds its documents' scores. Each pair is ``varint((freq - prev_freq - 1) << 1 |
explicit)`` and, when ``explicit``, one byte ``norm - prev_norm`` (a delta of 1 is
implied), ``prev_*`` starting at 0. Example: documents ``(freq, length)`` ``(1, 10),
(4, 11), (2, 30)`` ending at document 137 -> ``89 01 02 01 0a 04``: 137, two pairs,
``(1, 10)`` (delta 10, explicit) and ``(4, 11)`` (freq delta 3, norm delta 1 implied).

A posting list's last, partial block in format 2 is its float32 block score then
LEB128 varints: the document ids (the first absolute, then deltas) then the
frequencies (``posting_tail_codec=varint_delta_v1``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["LEVEL1_BLOCKS", "quantize", "varint_encode", "impacts_column", "FORMAT2_META"]

LEVEL1_BLOCKS = 32
# schema metadata of the invert file (and metadata.lance) of a format 2 index
FORMAT2_META = {"format_version": "2", "posting_tail_codec": "varint_delta_v1",
                "posting_block_size": "128"}


def quantize(lengths: np.ndarray) -> np.ndarray:
    """Document lengths as pylance's one-byte norms (uint8)."""
    v = np.asarray(lengths, np.uint64)
    bits = np.frexp(v.astype(np.float64))[1].astype(np.int64)  # bit length (exact < 2**53)
    shift = np.maximum(bits - 4, 0)
    q = ((v >> shift.astype(np.uint64)) & np.uint64(7)) | ((shift + 1).astype(np.uint64) << 3)
    return np.where(v < 8, v, q).astype(np.uint8)


def varint_encode(values: np.ndarray, raw: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """LEB128 varints of ``values`` back to back (``raw`` marks values written as one
    plain byte instead): ``(uint8 bytes, byte offset of each value and the end)``."""
    v = np.asarray(values, np.uint64)
    n = np.ones(len(v), np.int64)
    top = int(v.max()) if len(v) else 0
    for k in range(1, 10):
        if top < 1 << (7 * k):
            break
        n += v >= (np.uint64(1) << np.uint64(7 * k))
    if raw is not None:
        n[raw] = 1
    at = np.zeros(len(v) + 1, np.int64)
    np.cumsum(n, out=at[1:])
    out = np.empty(int(at[-1]), np.uint8)
    for k in range(int(n.max()) if len(n) else 0):
        sel = np.flatnonzero(n > k)
        byte = (v[sel] >> np.uint64(7 * k)) & np.uint64(0x7F)
        more = n[sel] > k + 1
        out[at[sel] + k] = (byte | (more.astype(np.uint64) << np.uint64(7))).astype(np.uint8)
    if raw is not None and raw.any():
        out[at[:-1][raw]] = v[raw].astype(np.uint8)
    return out, at


def _binary(data: np.ndarray, offsets: np.ndarray) -> pa.Array:
    return pa.Array.from_buffers(pa.large_binary(), len(offsets) - 1,
                                 [None, pa.py_buffer(offsets.astype(np.int64)),
                                  pa.py_buffer(data)])


def _entries(group: np.ndarray, ngroups: int, freqs: np.ndarray, norms: np.ndarray,
             last_doc: np.ndarray) -> pa.Array:
    """One impact entry per group (postings' ``group`` ids ascending, every group
    non-empty): a large_binary array of ``ngroups`` values."""
    lo = int(norms.min()) if len(norms) else 0
    width = (int(norms.max()) - lo + 1) if len(norms) else 1
    table = np.zeros((ngroups, width), np.uint32)
    # (a flat index: ufunc.at's fast path)
    np.maximum.at(table.reshape(-1), group * width + (norms.astype(np.int64) - lo),
                  freqs.astype(np.uint32))
    best = np.maximum.accumulate(table, axis=1)
    # a frontier pair where the best frequency up to this norm rises
    step = np.empty_like(best, bool)
    step[:, 0] = best[:, 0] > 0
    step[:, 1:] = best[:, 1:] > best[:, :-1]
    g, j = np.nonzero(step)  # (row-major: per group, norms ascending)
    f = best[g, j].astype(np.int64)
    q = (j + lo).astype(np.int64)
    count = np.bincount(g, minlength=ngroups)
    first = np.r_[True, g[1:] != g[:-1]] if len(g) else np.zeros(0, bool)
    pf = np.where(first, 0, np.r_[0, f[:-1]])
    pq = np.where(first, 0, np.r_[0, q[:-1]])
    nd = q - pq
    explicit = nd != 1
    # per group: [last doc, count], then per pair [packed freq delta, (norm delta)]
    per_pair = 1 + explicit.astype(np.int64)
    items_per_group = 2 + np.bincount(g, weights=per_pair, minlength=ngroups).astype(np.int64)
    gstart = np.zeros(ngroups + 1, np.int64)
    np.cumsum(items_per_group, out=gstart[1:])
    vals = np.zeros(int(gstart[-1]), np.uint64)
    raw = np.zeros(len(vals), bool)
    vals[gstart[:-1]] = last_doc
    vals[gstart[:-1] + 1] = count
    within = np.cumsum(per_pair) - per_pair  # (item offset of the pair from the first)
    pair_base = within - np.repeat(within[first] if len(g) else within, count)
    at = gstart[g] + 2 + pair_base
    vals[at] = ((f - pf - 1) << 1) | explicit
    xa = at[explicit] + 1
    vals[xa] = nd[explicit]
    raw[xa] = True
    data, offs = varint_encode(vals, raw)
    return _binary(data, offs[gstart])


def impacts_column(offsets: np.ndarray, doc_ids: np.ndarray, freqs: np.ndarray,
                   num_tokens: np.ndarray, block: int = 128) -> pa.Array:
    """``_impacts`` (list<large_binary>, one list per token) of CSR posting lists."""
    lengths = np.diff(offsets).astype(np.int64)
    ntok = len(lengths)
    nb = (lengths + block - 1) // block
    n1 = (nb + LEVEL1_BLOCKS - 1) // LEVEL1_BLOCKS
    total = int(offsets[-1])
    tok = np.repeat(np.arange(ntok), lengths)
    within = np.arange(total) - np.repeat(offsets[:-1].astype(np.int64), lengths)
    fb = np.zeros(ntok + 1, np.int64)
    np.cumsum(nb, out=fb[1:])
    f1 = np.zeros(ntok + 1, np.int64)
    np.cumsum(n1, out=f1[1:])
    blk = fb[tok] + within // block
    grp = f1[tok] + within // (block * LEVEL1_BLOCKS)
    # (per document when there are fewer documents than postings: a token range of a
    # spilled build holds few of the partition's documents' postings)
    norms = quantize(num_tokens)[doc_ids] if len(num_tokens) <= total else \
        quantize(num_tokens[doc_ids])
    ends0 = np.minimum((np.arange(int(fb[-1])) - np.repeat(fb[:-1], nb) + 1) * block,
                       np.repeat(lengths, nb)) + np.repeat(offsets[:-1].astype(np.int64), nb)
    ends1 = np.minimum((np.arange(int(f1[-1])) - np.repeat(f1[:-1], n1) + 1)
                       * block * LEVEL1_BLOCKS, np.repeat(lengths, n1)) + \
        np.repeat(offsets[:-1].astype(np.int64), n1)
    e0 = _entries(blk, int(fb[-1]), freqs, norms, doc_ids[ends0 - 1])
    e1 = _entries(grp, int(f1[-1]), freqs, norms, doc_ids[ends1 - 1])
    # per token: its level 0 entries then its level 1 entries
    per = nb + n1
    start = np.zeros(ntok + 1, np.int64)
    np.cumsum(per, out=start[1:])
    dest0 = np.repeat(start[:-1], nb) + np.arange(int(fb[-1])) - np.repeat(fb[:-1], nb)
    dest1 = np.repeat(start[:-1] + nb, n1) + np.arange(int(f1[-1])) - np.repeat(f1[:-1], n1)
    order = np.empty(int(start[-1]), np.int64)
    order[dest0] = np.arange(int(fb[-1]))
    order[dest1] = int(fb[-1]) + np.arange(int(f1[-1]))
    both = pa.concat_arrays([e0, e1]).take(pa.array(order))
    return pa.ListArray.from_arrays(pa.array(start.astype(np.int32)), both)


def tails(starts: np.ndarray, counts: np.ndarray, scores: np.ndarray, doc_ids: np.ndarray,
          freqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Format 2 partial blocks, one per run of ``counts`` postings from ``starts``:
    ``(bytes, byte offset of each block and the end)``."""
    n = len(counts)
    if n == 0:
        return np.zeros(0, np.uint8), np.zeros(1, np.int64)
    total = int(counts.sum())
    run = np.repeat(np.arange(n), counts)
    cstart = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=cstart[1:])
    within = np.arange(total) - cstart[:-1][run]
    src = starts[run] + within
    d = doc_ids[src].astype(np.int64)
    deltas = np.where(within == 0, d, d - np.r_[0, d[:-1]])
    # per run: doc deltas then freqs
    vals = np.empty(2 * total, np.uint64)
    pos = 2 * cstart[:-1][run] + within
    vals[pos] = deltas
    vals[pos + counts[run]] = freqs[src]
    data, at = varint_encode(vals)
    run_bytes = at[2 * cstart[1:]] - at[2 * cstart[:-1]]
    out_at = np.zeros(n + 1, np.int64)
    np.cumsum(run_bytes + 4, out=out_at[1:])
    out = np.empty(int(out_at[-1]), np.uint8)
    head = out_at[:-1]
    sc = np.asarray(scores, "<f4").view(np.uint8).reshape(n, 4)
    for k in range(4):
        out[head + k] = sc[:, k]
    body_len = run_bytes
    brun = np.repeat(np.arange(n), body_len)
    bwithin = np.arange(int(body_len.sum())) - np.repeat(np.r_[0, np.cumsum(body_len)[:-1]],
                                                         body_len)
    out[head[brun] + 4 + bwithin] = data
    return out, out_at
