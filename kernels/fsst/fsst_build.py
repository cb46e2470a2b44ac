"""FSST symbol tables built from a sample of the values (:func:`build_table`, over a
sample from :func:`sample_strings`), for :func:`lancenb.kernels.fsst.fsst.compress`.

The builder follows the FSST paper: compress the sample greedily with the current
table, count how often each symbol and each pair of consecutive symbols occurs, keep
the 255 candidates (symbols and concatenated pairs, at most 8 bytes) with the highest
``count * length``, and repeat for a few generations, keeping the table that saved
the most bytes. The table layout and the matching rules are :mod:`.fsst`'s.
"""

import numpy as np

from .._jit import kernel
from .fsst import (
    BAD_OFFSETS,
    BAD_SYMBOL,
    HASH_BITS,
    MASKS,
    MAX_SYMBOL_LEN,
    MAX_SYMBOLS,
    N_SYMBOLS,
    OK,
    SUFFIX_LIM,
    SWITCH,
    TERMINATOR,
    _bad_shapes,
    _bucket,
    _build_matcher,
    _check_offsets,
)

SAMPLE_LINE = 512         # longer values contribute one random 512-byte piece
# Bytes of sample a table is built from, and the builder's generations (a candidate
# needs a count of 5 * g // 128; the last generation only measures). The reference uses
# 16 KiB and (8, 38, 68, 98, 108, 128); twice the sample and 13 generations gave 2-4%
# better ratios on URL-like and English-like text and 17% on e-mail addresses, for a
# build time of 6-12 ms.
SAMPLE_TARGET = 1 << 15
GENERATIONS = np.arange(8, 129, 10)
CODE_SPACE = 512          # builder codes: 0..255 escaped bytes, 256.. symbols


def sample_strings(offsets: np.ndarray, data: np.ndarray, target: int = SAMPLE_TARGET,
                   seed: int = 0):
    """A seeded sample of about ``target`` bytes: ``(offsets, data)``.

    All values when they add up to at most ``target``; otherwise random non-empty
    values (with replacement), a random ``SAMPLE_LINE``-byte piece of long ones, until
    the sample reaches ``target`` (so it ends below ``target + SAMPLE_LINE``).
    ``offsets`` must be valid for ``data``.
    """
    offsets = np.asarray(offsets, np.int64)
    lengths = np.diff(offsets)
    if int(offsets[-1] - offsets[0]) <= target:
        return offsets - offsets[0], np.array(data[offsets[0]:offsets[-1]], np.uint8)
    nonempty = np.flatnonzero(lengths > 0)
    rng = np.random.default_rng(seed)
    per = max(1, min(int(lengths.sum()) // len(nonempty), SAMPLE_LINE))
    starts, sizes, got = [], [], 0
    while got < target:
        idx = nonempty[rng.integers(0, len(nonempty), target // per + 16)]
        pieces = (lengths[idx] - 1) // SAMPLE_LINE + 1
        piece = (rng.random(len(idx)) * pieces).astype(np.int64) * SAMPLE_LINE
        size = np.minimum(lengths[idx] - piece, SAMPLE_LINE)
        keep = int(np.searchsorted(np.cumsum(size), target - got)) + 1
        starts.append(offsets[idx][:keep] + piece[:keep])
        sizes.append(size[:keep])
        got += int(size[:keep].sum())
    starts, sizes = np.concatenate(starts), np.concatenate(sizes)
    out_offsets = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=out_offsets[1:])
    pos = np.repeat(starts - out_offsets[:-1], sizes) + np.arange(int(out_offsets[-1]))
    return out_offsets, np.asarray(data)[pos].astype(np.uint8)


@kernel
def _count(offsets, data, lens, byte_code, bstart, bval, bmask, binfo, count1, count2,
           pairs, with_pairs):
    """Compress the sample with symbols ``256..256+m-1``; count single codes and pairs
    of consecutive codes (``pairs`` lists each pair once). Returns ``(gain, n_pairs)``
    where gain is the bytes saved (escapes cost one byte more than they save)."""
    gain = np.int64(0)
    npairs = 0
    count1[:] = 0
    for s in range(offsets.shape[0] - 1):
        i = offsets[s]
        end = offsets[s + 1]
        prev = -1
        while i < end:
            rem = end - i
            w = np.uint64(0)
            for j in range(min(rem, 8)):
                w |= np.uint64(data[np.uint64(i + j)]) << np.uint64(8 * j)
            code = -1
            if rem >= 2:  # the longest multi-byte symbol (see _build_matcher)
                h = _bucket(w)
                for j in range(bstart[h], bstart[h + 1]):
                    if ((w & bmask[j]) == bval[j]) & ((binfo[j] >> 16) <= rem):
                        code = binfo[j] & 0xFFFF
                        break
            first = np.int64(w & np.uint64(0xFF))
            if code < 0:
                code = byte_code[first]
            ln = lens[code]
            gain += ln - 1 if code >= 256 else -1
            count1[code] += 1
            if ln > 1:
                count1[first] += 1  # the alternative: only the first byte
            if with_pairs and prev >= 0:
                k = prev * CODE_SPACE + code
                if count2[k] == 0:
                    pairs[npairs] = k
                    npairs += 1
                count2[k] += 1
                if ln > 1:  # the alternative: extend by the first byte only
                    k = prev * CODE_SPACE + first
                    if count2[k] == 0:
                        pairs[npairs] = k
                        npairs += 1
                    count2[k] += 1
            prev = code
            i += ln
    return gain, npairs


@kernel
def _argsort_stable(keys):
    """Indices that sort the int64 ``keys`` ascending, equal keys in index order (what
    ``np.argsort(keys, kind="mergesort")`` returns). A bottom-up merge sort of its own:
    numba's mergesort compiles once per key type, and that took longer to compile than
    the rest of the table builder."""
    n = keys.shape[0]
    idx = np.arange(n)
    tmp = np.empty(n, np.int64)
    run = 1
    while run < n:
        lo = 0
        while lo < n:
            mid = min(lo + run, n)
            hi = min(lo + 2 * run, n)
            i = lo
            j = mid
            k = lo
            while i < mid and j < hi:
                if keys[idx[j]] < keys[idx[i]]:  # strict: ties keep the left run first
                    tmp[k] = idx[j]
                    j += 1
                else:
                    tmp[k] = idx[i]
                    i += 1
                k += 1
            while i < mid:
                tmp[k] = idx[i]
                i += 1
                k += 1
            while j < hi:
                tmp[k] = idx[j]
                j += 1
                k += 1
            lo = hi
        idx, tmp = tmp, idx
        run *= 2
    return idx


@kernel
def _make_table(vals, lens, m, count1, count2, pairs, npairs, frac):
    """Replace symbols ``256..`` by the best candidates; returns the new count."""
    least = 5 * frac // 128
    cap = 256 + m + npairs
    cval = np.empty(cap, np.uint64)
    clen = np.empty(cap, np.int64)
    cgain = np.empty(cap, np.int64)
    nc = 0
    for c in range(256 + m):
        cnt = count1[c] * (8 if lens[c] == 1 else 1)  # favour single bytes (fewer escapes)
        if count1[c] > 0 and cnt >= least:
            cval[nc] = vals[c]
            clen[nc] = lens[c]
            cgain[nc] = cnt * lens[c]
            nc += 1
    for p in range(npairs):
        k = pairs[p]
        cnt = np.int64(count2[k])
        count2[k] = 0
        a = k // CODE_SPACE
        b = k % CODE_SPACE
        if cnt < least or lens[a] == MAX_SYMBOL_LEN:
            continue
        ln = min(lens[a] + lens[b], MAX_SYMBOL_LEN)
        cval[nc] = (vals[a] | (vals[b] << np.uint64(8 * lens[a]))) & MASKS[ln]
        clen[nc] = ln
        cgain[nc] = cnt * ln
        nc += 1
    # merge duplicates (same bytes and length), then rank by gain, ties by bytes
    # unsigned order as signed keys: flipping the top bit maps 0..2**64-1 onto int64 in order
    order = _argsort_stable((cval[:nc] ^ np.uint64(1 << 63)).view(np.int64))
    uval = np.empty(nc, np.uint64)
    ulen = np.empty(nc, np.int64)
    ugain = np.empty(nc, np.int64)
    nu = 0
    i = 0
    acc = np.zeros(MAX_SYMBOL_LEN + 1, np.int64)
    while i < nc:
        j = i
        v = cval[order[i]]
        while j < nc and cval[order[j]] == v:
            acc[clen[order[j]]] += cgain[order[j]]
            j += 1
        for ln in range(1, MAX_SYMBOL_LEN + 1):
            if acc[ln] > 0:
                uval[nu] = v
                ulen[nu] = ln
                ugain[nu] = acc[ln]
                nu += 1
                acc[ln] = 0
        i = j
    rank = _argsort_stable(-ugain[:nu])
    m = min(nu, MAX_SYMBOLS)
    for k in range(m):
        vals[256 + k] = uval[rank[k]]
        lens[256 + k] = ulen[rank[k]]
    return m


@kernel
def build_table(offsets, data, symbols, lens, info):
    """Build a table from a sample of values (``offsets``/``data``, e.g. from
    :func:`sample_strings`) into ``symbols``/``lens``/``info`` (switch 1).

    Returns the number of symbols (0 for an empty sample) or a negative status.
    Code order follows the reference: two-byte symbols that start a longer symbol
    (``suffix_lim`` of them), other two-byte symbols, then lengths 3..8, then 1.
    """
    err = np.zeros(2, np.int64)
    if _check_offsets(offsets, data.shape[0], err) != OK:
        return BAD_OFFSETS
    if _bad_shapes(symbols, lens, info):
        return BAD_SYMBOL
    histo = np.zeros(256, np.int64)
    for i in range(offsets[0], offsets[offsets.shape[0] - 1]):
        histo[data[i]] += 1
    terminator = np.argmin(histo)  # the rarest byte, as the reference picks it

    vals = np.zeros(CODE_SPACE, np.uint64)
    slens = np.zeros(CODE_SPACE, np.int64)
    for b in range(256):
        vals[b] = b
        slens[b] = 1
    count1 = np.zeros(CODE_SPACE, np.int64)
    count2 = np.zeros(CODE_SPACE * CODE_SPACE, np.int32)
    # distinct pairs: at most two per sample byte, and at most CODE_SPACE ** 2
    pairs = np.empty(min(2 * (offsets[offsets.shape[0] - 1] - offsets[0]) + 1,
                         CODE_SPACE * CODE_SPACE), np.int64)
    byte_code = np.empty(256, np.int64)
    bstart = np.zeros((1 << HASH_BITS) + 1, np.int64)
    bval = np.empty(MAX_SYMBOLS, np.uint64)
    bmask = np.empty(MAX_SYMBOLS, np.uint64)
    binfo = np.empty(MAX_SYMBOLS, np.int64)
    best_vals = np.zeros(MAX_SYMBOLS, np.uint64)
    best_lens = np.zeros(MAX_SYMBOLS, np.int64)
    best_m = 0
    best_gain = np.int64(-1) << 62
    m = 0
    for g in range(GENERATIONS.shape[0]):
        frac = GENERATIONS[g]
        for b in range(256):
            byte_code[b] = b
        _build_matcher(vals, slens, 256, 256 + m, 2, byte_code, bstart, bval, bmask,
                       binfo)
        gain, npairs = _count(offsets, data, slens, byte_code, bstart, bval, bmask, binfo,
                              count1, count2, pairs, frac < 128)
        if gain >= best_gain:
            best_gain = gain
            best_m = m
            best_vals[:m] = vals[256:256 + m]
            best_lens[:m] = slens[256:256 + m]
        if frac >= 128:
            break
        m = _make_table(vals, slens, m, count1, count2, pairs, npairs, frac)

    # renumber: [2-byte with a longer symbol sharing its first two bytes] [other 2-byte]
    # [3..8 bytes, by length] [1 byte]
    has_suffix = np.zeros(MAX_SYMBOLS, np.bool_)
    for a in range(best_m):
        if best_lens[a] == 2:
            for b in range(best_m):
                if best_lens[b] > 2 and (best_vals[b] & MASKS[2]) == best_vals[a]:
                    has_suffix[a] = True
                    break
    rank = np.empty(best_m, np.int64)  # sort key: the group, then the builder's order
    for a in range(best_m):
        ln = best_lens[a]
        rank[a] = (0 if has_suffix[a] else 1) if ln == 2 else (ln - 1 if ln > 2 else 8)
    order = _argsort_stable(rank)
    suffix_lim = 0
    for a in range(best_m):
        suffix_lim += rank[a] == 0
    symbols[:, :] = 0
    lens[:] = 0
    for c in range(best_m):
        a = order[c]
        lens[c] = best_lens[a]
        for j in range(best_lens[a]):
            symbols[c, j] = (best_vals[a] >> np.uint64(8 * j)) & np.uint64(0xFF)
    info[SWITCH] = 1
    info[SUFFIX_LIM] = suffix_lim
    info[TERMINATOR] = terminator
    info[N_SYMBOLS] = best_m
    return best_m
