"""The compact profile: for each mini-block page, encode every candidate a 2.1/2.2
reader decodes and keep the smallest.

Selected with the writer option ``LanceFileWriter(..., compression="compact")`` or the
field metadata ``lancenb:profile=compact`` (see :mod:`lancenb.encodings.config`).
Candidates, each measured by the bytes its chunks take:

* fixed-width values: the default choice (Flat, InlineBitpacking or RLE),
  ``General{zstd}`` over it, over Flat and over ByteStreamSplit (32/64-bit), and for
  long runs RLE in chunks of up to 32768 values (the reference writes 4096);
* strings: Variable and FSST, bare and under ``General{zstd}``.

Under ``General`` the Flat, ByteStreamSplit and Variable candidates use larger chunks
(about ``GENERAL_CHUNK_BYTES`` of values instead of 4-8 KiB) so that zstd sees more
context; compressed they still fit the 32 KiB a 2.1 chunk may take (a chunk that
would not shrink is stored bare, which still fits). Dictionaries (decided before this
step, :func:`lancenb.encodings.strategy._dictionary_kind`) are also tried for numbers
and their items zstd-compressed where that pays. pylance 14 reads all of these
exactly (``tests/compat/test_encoding_interop.py``).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from lancenb.encodings import blocks
from lancenb.encodings.physical import bss, flat, fsst, general, rle, variable
from lancenb.kernels import stats as kstats
from lancenb.kernels import variable as kv

__all__ = ["choose", "ZSTD_LEVEL", "GENERAL_CHUNK_BYTES"]

ZSTD_LEVEL = 9
GENERAL_CHUNK_BYTES = 16 * 1024
_MAX_CHUNK_VALUES = 8192
RLE_CHUNK_VALUES = 32768  # long runs: fewer, larger RLE chunks (the chunk word allows 2**15)


class _Encoded:
    """A candidate already encoded: its chunk bounds and chunk buffers."""

    def __init__(self, bounds, result, label: str):
        self.bounds, self.result, self.label = bounds, result, label
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


def _fixed_bounds(block) -> np.ndarray:
    w = block.bits // 8
    k = 2
    while k * 2 <= _MAX_CHUNK_VALUES and k * 2 * w <= GENERAL_CHUNK_BYTES:
        k *= 2
    return np.append(np.arange(0, block.num_values, k, dtype=np.int64), block.num_values)


def _variable_bounds(block) -> np.ndarray:
    w = block.offset_bits // 8
    bounds = np.empty(block.num_values + 1, dtype=np.int64)
    nc = kv.plan_chunks(block.offsets, w, GENERAL_CHUNK_BYTES, variable.MAX_CHUNK_VALUE_BYTES,
                        _MAX_CHUNK_VALUES, bounds)
    return bounds[:nc + 1].copy() if nc >= 0 else variable.plan(block)


def _zstd(inner, level):
    return general.GeneralCodec(inner, general.ZSTD, level)


def choose(dtype, block, cfg, why: list[str], fixed_default):
    """The smallest candidate for ``block`` (see the module docstring)."""
    level = cfg.compression_level or ZSTD_LEVEL
    cands: list[_Encoded] = []
    if isinstance(block, blocks.Variable):
        if not block.num_values:
            return variable
        cands.append(_encode(variable, block, "variable"))
        cands.append(_encode(_zstd(_Replanned(variable, _variable_bounds(block)), level),
                             block, "zstd(variable)"))
        if fsst.worth_trying(block):
            codec = fsst.FsstCodec(block)
            cands.append(_encode(codec, block, "fsst"))
            cands.append(_encode(_zstd(_Replanned(codec, _variable_bounds(codec.codes)),
                                       level), block, "zstd(fsst)"))
    elif isinstance(block, blocks.FixedWidth) and block.num_values:
        base = fixed_default(dtype, block, dataclasses.replace(cfg, profile="default"), [])
        cands.append(_encode(base, block, "default"))
        if base is not flat:
            cands.append(_encode(_zstd(base, level), block, "zstd(default)"))
        if block.bits in (8, 16, 32, 64) and not isinstance(base, rle.RleCodec):
            runs = int(kstats.run_count(block.data[:block.num_values * block.bits // 8],
                                        block.bits // 8))
            if runs * 8 < block.num_values:
                cands.append(_encode(rle.RleCodec(block, RLE_CHUNK_VALUES), block, "rle"))
        if isinstance(base, rle.RleCodec):
            cands.append(_encode(rle.RleCodec(block, RLE_CHUNK_VALUES), block, "rle"))
        big = _fixed_bounds(block)
        cands.append(_encode(_zstd(_Replanned(flat, big), level), block, "zstd(flat)"))
        if block.bits in (32, 64) and cfg.bss != "off":
            cands.append(_encode(_zstd(_Replanned(bss.BssCodec(block), big), level), block,
                                 "zstd(bss)"))
    else:
        return flat
    best = min(cands, key=lambda c: c.nbytes)
    why.append("compact: " + ", ".join(f"{c.label} {c.nbytes} B" for c in cands)
               + f" -> {best.label}")
    return best
