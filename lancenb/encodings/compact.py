"""The compact profile: for each mini-block page, encode every candidate a 2.1/2.2
reader decodes and keep the smallest.

Selected with the writer option ``LanceFileWriter(..., compression="compact")`` or the
field metadata ``lancenb:profile=compact`` (see :mod:`lancenb.encodings.config`).
Candidates, each measured by the bytes its chunks take:

* fixed-width values: the default choice (Flat, InlineBitpacking or RLE),
  ``General{zstd}`` over it, over Flat and over ByteStreamSplit (32/64-bit), and for
  long runs RLE in chunks of up to 32768 values (the reference writes 4096);
* strings: Variable and FSST, bare and under ``General{zstd}``;
* dictionary indices (at most 256 items): one byte each under ``General{zstd}``.

Under ``General`` the chunks grow as far as the format allows: pages without rep/def
levels start from 256 KiB of values (at most 2**15, the largest count a chunk word
names) and every chunk whose compressed form would not fit a 2.1 chunk (32 KiB) is
halved (:func:`_fitted`); pages with levels use about ``GENERAL_CHUNK_BYTES`` of
values. The winner is compressed again at a higher zstd level (``FINAL_LEVEL``; one
byte indices always are), which codes small alphabets much tighter. Dictionaries are
tried more eagerly than by default (:mod:`lancenb.encodings.strategy` encodes the
page with and without one and keeps the smaller) and their items zstd-compressed
where that pays. pylance 14 reads all of these exactly
(``tests/encodings/test_compact_chunks.py``, ``tests/compat/test_encoding_interop.py``).

Example: 1,000,000 sorted int32 of 100 distinct values become a dictionary whose
one-byte indices take 31 chunks of 32768 values, about 60 bytes each.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from lancenb.encodings import blocks, pb
from lancenb.encodings.physical import bss, flat, fsst, general, rle, variable
from lancenb.kernels import miniblock as km
from lancenb.kernels import stats as kstats
from lancenb.kernels import variable as kv

__all__ = ["choose", "ZSTD_LEVEL", "GENERAL_CHUNK_BYTES"]

ZSTD_LEVEL = 9
# The winner is encoded again at a higher level (better entropy coding of its chunks):
# FINAL_LEVEL for pages of at most FINAL_MAX_RAW_BYTES, else LARGE_FINAL_LEVEL (zstd
# 19 runs at about 0.5 MB/s, 15 at about 1.5 MB/s, and gains most on small alphabets)
FINAL_LEVEL = 19
LARGE_FINAL_LEVEL = 15
GENERAL_CHUNK_BYTES = 16 * 1024
_MAX_CHUNK_VALUES = 8192
RLE_CHUNK_VALUES = 32768  # long runs: fewer, larger RLE chunks (the chunk word allows 2**15)
# fitted zstd chunks: start from this many raw bytes (at most 2**15 values, the most a
# chunk word names) and halve the chunks whose compressed form does not fit
FIT_START_BYTES = 256 * 1024
FIT_MAX_VALUES = 1 << 15
FINAL_MAX_RAW_BYTES = 2 * 1024 * 1024


class _Encoded:
    """A candidate already encoded: its chunk bounds and chunk buffers. ``redo(level)``
    (if set) encodes the same candidate at another zstd level."""

    def __init__(self, bounds, result, label: str, redo=None):
        self.bounds, self.result, self.label, self.redo = bounds, result, label, redo
        self.nbytes = int(np.asarray(result[2]).sum())

    def plan(self, block):
        return self.bounds

    def encode_chunks(self, block, bounds):
        return self.result


class _Replanned:
    """A codec whose chunks are cut at ``bounds`` instead of its own plan."""

    def __init__(self, inner, bounds):
        self.inner, self.bounds = inner, bounds

    def plan(self, block):
        return self.bounds

    def encode_chunks(self, block, bounds):
        return self.inner.encode_chunks(block, bounds)


def _encode(codec, block, label: str) -> _Encoded:
    bounds = codec.plan(block)
    return _Encoded(bounds, codec.encode_chunks(block, bounds), label)


def _zencode(inner, block, level, label: str) -> _Encoded:
    """``General{zstd}`` over ``inner`` (a codec or a :class:`_Replanned` one)."""
    e = _encode(_zstd(inner, level), block, label)
    e.redo = lambda lv: _encode(_zstd(inner, lv), block, label)
    return e


def _fixed_bounds(block, chunk_bytes=GENERAL_CHUNK_BYTES,
                  max_values=_MAX_CHUNK_VALUES) -> np.ndarray:
    w = max(block.bits // 8, 1)
    k = 2
    while k * 2 <= max_values and k * 2 * w <= chunk_bytes:
        k *= 2
    return np.append(np.arange(0, block.num_values, k, dtype=np.int64), block.num_values)


def _variable_bounds(block, chunk_bytes=GENERAL_CHUNK_BYTES, max_values=_MAX_CHUNK_VALUES,
                     max_bytes=variable.MAX_CHUNK_VALUE_BYTES) -> np.ndarray:
    w = block.offset_bits // 8
    bounds = np.empty(block.num_values + 1, np.int64)
    nc = kv.plan_chunks(block.offsets, w, chunk_bytes, max_bytes, max_values, bounds)
    return bounds[:nc + 1].copy() if nc >= 0 else variable.plan(block)


def _zstd(inner, level):
    return general.GeneralCodec(inner, general.ZSTD, level)


def _split(bounds: np.ndarray, bad: np.ndarray) -> np.ndarray | None:
    """Cut each chunk flagged in ``bad`` in two, keeping every chunk but the last a
    power of two: a power-of-two chunk in halves, the last chunk after its largest
    power of two. None when a flagged chunk holds a single value."""
    counts = np.diff(bounds)
    if np.any(counts[bad] < 2):
        return None
    cuts = []
    for c in np.flatnonzero(bad).tolist():  # a few chunks per pass
        m = int(counts[c])
        half = m // 2 if m & (m - 1) == 0 else 1 << (m.bit_length() - 1)
        cuts.append(int(bounds[c]) + half)
    return np.unique(np.concatenate([bounds, np.array(cuts, np.int64)]))


def _fitted(inner, block, bounds, level, label: str, limit: int) -> _Encoded | None:
    """``General{zstd}`` over ``inner``'s chunks at ``bounds``, halving any chunk whose
    compressed form would not fit ``limit`` bytes (a 2.1 chunk: 32 KiB). Compressed
    chunks are kept between passes. None when zstd does not pay overall."""
    done: dict[tuple[int, int], bytes] = {}
    n = int(bounds[-1])
    k = int(bounds[1] - bounds[0]) if len(bounds) > 2 else 0
    while k > 2 and k & (k - 1) == 0:  # equal chunks: size them on the first one
        src, starts, sizes, _ = inner.encode_chunks(block, np.array([0, k, n], np.int64))
        part = general.compress(src[starts[0, 0]:starts[0, 0] + sizes[0, 0]], general.ZSTD,
                                level)
        one = sizes[:1].copy()
        one[0, 0] = len(part)
        if int(km.chunk_bytes(one, 0, 2)[0]) <= limit:
            done[(0, k)] = part
            bounds = np.append(np.arange(0, n, k, dtype=np.int64), n)
            break
        k //= 2
    for _ in range(24):
        src, starts, sizes, desc = inner.encode_chunks(block, bounds)
        raw = int(sizes[:, 0].sum())
        if raw < general.MIN_COMPRESS_BYTES:
            return None
        parts = []
        for c, (s, z) in enumerate(zip(starts[:, 0].tolist(), sizes[:, 0].tolist())):
            key = (int(bounds[c]), int(bounds[c + 1]))
            if key not in done:
                done[key] = general.compress(src[s:s + z], general.ZSTD, level)
            parts.append(done[key])
        lens = np.array([len(p) for p in parts], np.int64)
        if int(lens.sum()) >= raw:
            return None
        new_sizes = sizes.copy()
        new_sizes[:, 0] = lens
        bad = km.chunk_bytes(new_sizes, 0, 2) > limit
        if bad.any():
            bounds = _split(bounds, bad)
            if bounds is None:
                return None
            continue
        pos = np.zeros(len(parts), np.int64)
        np.cumsum(lens[:-1], out=pos[1:])
        head = np.frombuffer(b"".join(parts), np.uint8)
        starts = starts.copy()
        starts[:, 1:] += len(head)
        starts[:, 0] = pos
        wrapped = pb.e21.CompressiveEncoding(general=pb.e21.General(
            compression=pb.e21.BufferCompression(scheme=general.ZSTD, level=level),
            values=desc))
        return _Encoded(bounds, (np.concatenate([head, src]), starts, new_sizes, wrapped),
                        label, lambda lv, i=inner, b=bounds: _fitted(i, block, b, lv, label,
                                                                     limit))
    return None


def _add(cands: list, cand) -> None:
    if cand is not None:
        cands.append(cand)


def choose(dtype, block, cfg, why: list[str], fixed_default, *, chunk_limit: int | None = None,
           dictionary_items: int | None = None):
    """The smallest candidate for ``block`` (see the module docstring).

    ``chunk_limit`` (bytes; None when the page has rep/def levels, whose share of a
    chunk the candidates do not see) lets zstd'd chunks grow until their compressed
    form reaches it. ``dictionary_items``: ``block`` holds indices into a dictionary
    of that many items (u8 indices are then tried too).
    """
    level = cfg.compression_level or ZSTD_LEVEL
    cands: list[_Encoded] = []
    if isinstance(block, blocks.Variable):
        if not block.num_values:
            return variable.VARIABLE
        cands.append(_encode(variable.VARIABLE, block, "variable"))
        cands.append(_zencode(_Replanned(variable.VARIABLE, _variable_bounds(block)), block,
                              level, "zstd(variable)"))
        if chunk_limit:
            _add(cands, _fitted(variable.VARIABLE, block, _variable_bounds(
                block, FIT_START_BYTES, FIT_MAX_VALUES, FIT_START_BYTES), level,
                "zstd(variable) fitted", chunk_limit))
        if fsst.worth_trying(block):
            codec = fsst.FsstCodec(block)
            cands.append(_encode(codec, block, "fsst"))
            cands.append(_zencode(_Replanned(codec, _variable_bounds(codec.codes)), block,
                                  level, "zstd(fsst)"))
            if chunk_limit:
                _add(cands, _fitted(codec, block, _variable_bounds(
                    codec.codes, FIT_START_BYTES, FIT_MAX_VALUES, FIT_START_BYTES), level,
                    "zstd(fsst) fitted", chunk_limit))
    elif isinstance(block, blocks.FixedWidth) and block.num_values:
        base = fixed_default(dtype, block, dataclasses.replace(cfg, profile="default"), [])
        cands.append(_encode(base, block, "default"))
        if base is not flat.FLAT:
            cands.append(_zencode(base, block, level, "zstd(default)"))
        if block.bits in (8, 16, 32, 64) and not isinstance(base, rle.RleCodec):
            runs = int(kstats.run_count(block.data[:block.num_values * block.bits // 8],
                                        block.bits // 8))
            if runs * 8 < block.num_values:
                cands.append(_encode(rle.RleCodec(block, RLE_CHUNK_VALUES), block, "rle"))
        if isinstance(base, rle.RleCodec):
            cands.append(_encode(rle.RleCodec(block, RLE_CHUNK_VALUES), block, "rle"))
        use_bss = block.bits in (32, 64) and cfg.bss != "off"
        if chunk_limit and block.bits % 8 == 0:
            start = _fixed_bounds(block, FIT_START_BYTES, FIT_MAX_VALUES)
            _add(cands, _fitted(flat.FLAT, block, start, level, "zstd(flat) fitted", chunk_limit))
            if use_bss:
                _add(cands, _fitted(bss.BssCodec(block), block, start, level,
                                    "zstd(bss) fitted", chunk_limit))
        else:
            big = _fixed_bounds(block)
            cands.append(_zencode(_Replanned(flat.FLAT, big), block, level, "zstd(flat)"))
            if use_bss:
                cands.append(_zencode(_Replanned(bss.BssCodec(block), big), block, level,
                                      "zstd(bss)"))
        if dictionary_items is not None and dictionary_items <= 256 and block.bits == 32:
            small = blocks.FixedWidth(8, block.data.view(np.uint32)[:block.num_values]
                                      .astype(np.uint8), block.num_values)
            # one byte per value is cheap to compress at the final level, which codes
            # a small alphabet much tighter
            ilevel = max(level, FINAL_LEVEL) if cfg.compression_level is None else level
            if chunk_limit:
                _add(cands, _fitted(flat.FLAT, small, _fixed_bounds(small, FIT_START_BYTES,
                                                               FIT_MAX_VALUES),
                                    ilevel, "zstd(flat(8) indices) fitted", chunk_limit))
            else:
                cands.append(_zencode(_Replanned(flat.FLAT, _fixed_bounds(small)), small, ilevel,
                                      "zstd(flat(8) indices)"))
    else:
        return flat.FLAT
    best = min(cands, key=lambda c: c.nbytes)
    note = ""
    raw = len(block.data) if isinstance(block, blocks.Variable) else \
        block.num_values * block.bits // 8
    final = FINAL_LEVEL if raw <= FINAL_MAX_RAW_BYTES else LARGE_FINAL_LEVEL
    if best.redo is not None and cfg.compression_level is None and final > level:
        again = best.redo(final)
        if again is not None and again.nbytes < best.nbytes:
            note = f", at zstd level {final} {again.nbytes} B"
            best = again
    why.append("compact: " + ", ".join(f"{c.label} {c.nbytes} B" for c in cands)
               + f" -> {best.label}{note}")
    return best
